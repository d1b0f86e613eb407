/* tpl pages: a prompt as blocks, static then dynamic, with a compile-time cache guarantee and
 * per-block change tracking (DESIGN.md §8, issue 18). A layer above the engine: it uses only
 * the public API of tpl.h.
 *
 * A page is a list of blocks in send order: static blocks (identity, knowledge, tools: the
 * provider caches them for the whole call) then dynamic ones (the view: re-rendered on every
 * state change); the history sits between the two regions. Each block is a template (Jinja,
 * ERB or format string, by the file extension) or a literal text.
 *
 * The guarantee: a static block may read only call.channel and call.medium, which are constant
 * for a call. Any other read — a state name (also a nested one: `patient.name` reads
 * `patient`), call.claimed or call itself, `resumed`, remembers(...), a host function — on any
 * branch, in the block or in a template it includes or imports (macros too), makes loading the
 * page fail with a compile error located at the read:
 *   identity.jinja:3:9: error: static block 'identity' reads 'stage'; a static block may read
 *   only call.channel and call.medium
 * It is proved from the compiled program (tpl_program_reads_located), not by rendering.
 *
 * Scope of every block: the page's `defaults` overlaid by the state, `call` (channel, medium,
 * claimed), `resumed` (false unless set) and remembers(words). These framework names win over
 * state fields of the same name (a state field `call` or `resumed` is dropped).
 *
 * Conventions as in tpl.h: status codes, borrowed/owned stated per function; errors fill a
 * tpl_error whose strings are released with tpl_error_clear (load) or are owned by the call
 * object (render). A tpl_page is immutable after loading and may be shared by threads; a
 * tpl_page_call belongs to one thread, as its tpl_render does.
 * NULL as in tpl.h: a NULL page, call or output pointer gives TPL_ERR_USAGE (with a message in
 * err or the call's error where there is one), queries answer 0/NULL and void functions do
 * nothing (tests/test_page.c, NULL-argument section).
 */
#ifndef TPL_PAGE_H
#define TPL_PAGE_H

#include "tpl.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tpl_page tpl_page;
typedef struct tpl_page_call tpl_page_call;

typedef enum tpl_page_region { TPL_PAGE_STATIC = 0, TPL_PAGE_DYNAMIC = 1 } tpl_page_region;

/* A block given in memory (tpl_page_new). Every pointer is borrowed for the call only. */
typedef struct tpl_page_block_def {
    const char *name;           /* NUL-terminated; unique in the page */
    tpl_page_region region;     /* every static block precedes every dynamic one */
    const char *template_name;  /* NUL-terminated file name (diagnostics; the syntax comes from its
                                 * extension: .jinja/.j2, .erb, .fmt/.txt), or NULL: a text block */
    const char *src;            /* the template source, or the literal text of a text block */
    size_t len;
    const tpl_program *program; /* or an already compiled program (tpl_compile, a .tplb, a static
                                 * program): borrowed, it must outlive the page; src and len are
                                 * then ignored (template_name, optional, names the block's
                                 * template in messages). NULL: compile src. */
} tpl_page_block_def;

/* Loads the page folder `dir` (NUL-terminated, borrowed): DIR/page.json (DESIGN.md §8:
 * `profile`, `blocks` with `name`, `region`, `template` or `text`, `defaults`; unknown keys are
 * errors) and every block template, paths relative to the folder; includes and imports resolve
 * beside each template and never leave the folder (no absolute paths, no `..` segment). File
 * names in diagnostics are relative to the folder ("page.json", "views/front-desk.jinja").
 * Every file read must be a regular file (a FIFO or a device, also through a symlink, is
 * unreadable: refused unread, as is a file past 256 MiB).
 * On TPL_OK *out is a new page the caller frees with tpl_page_free. Errors: TPL_ERR_IO when
 * page.json cannot be read (or dir is "", which would name /page.json: nothing is read); TPL_ERR_SYNTAX for a bad page.json (invalid JSON, unknown key,
 * wrong type, duplicate block name, static after dynamic, missing or unreadable template,
 * unknown extension: located in page.json), a template that does not compile, or a static
 * block that reads more than call.channel and call.medium (located at the read); TPL_ERR_NOMEM.
 * err (may be NULL) is filled on failure; release it with tpl_error_clear. */
TPL_API tpl_status tpl_page_load_dir(const char *dir, tpl_page **out, tpl_error *err);

/* Builds a page from blocks in memory. profile: NULL means "pinecall". defaults_json: a JSON
 * object (NULL/0: none), borrowed. loader/loader_data resolve include/import/extends of every
 * template as in tpl_options (NULL: none). Errors as tpl_page_load_dir (not located when they
 * concern the block list itself). */
TPL_API tpl_status tpl_page_new(const tpl_page_block_def *blocks, size_t n, const char *profile,
                        const char *defaults_json, size_t defaults_len, tpl_loader_fn loader,
                        void *loader_data, tpl_page **out, tpl_error *err);

TPL_API void tpl_page_free(tpl_page *pg);

/* The blocks, in send order. Strings are owned by pg. */
TPL_API size_t tpl_page_block_count(const tpl_page *pg);
TPL_API const char *tpl_page_block_name(const tpl_page *pg, size_t i);
TPL_API tpl_page_region tpl_page_block_region(const tpl_page *pg, size_t i);
/* What block i reads, as paths: state names ("stage"), call fields ("call.channel", "call" when
 * used whole), "remembers"; each once, in code order. Stores up to cap NUL-terminated strings
 * (owned by pg) into paths and returns the total. A text block reads nothing. */
TPL_API size_t tpl_page_block_reads(const tpl_page *pg, size_t i, const char **paths, size_t cap);

/* ---- rendering a call ---- */

/* A call of page pg rendered with render context r (both borrowed: they must outlive the call
 * object; r's limits, language, catalogs and host functions apply). The call object sets r's
 * `call`, facts and state itself: change them only through the functions below while it is in
 * use. NULL when out of memory. */
TPL_API tpl_page_call *tpl_page_call_new(const tpl_page *pg, tpl_render *r);
TPL_API void tpl_page_call_free(tpl_page_call *c);
/* Starts a new call: the next render is step 1 (every block rendered, every non-empty block
 * changed). The channel, medium, claimed, resumed and facts stay as set. */
TPL_API void tpl_page_call_reset(tpl_page_call *c);
/* call.channel and call.medium (as tpl_render_set_call: NULL channel = phone, NULL medium =
 * text on whatsapp, else voice). Strings borrowed. TPL_ERR_USAGE when too long. */
TPL_API tpl_status tpl_page_call_set_channel(tpl_page_call *c, const char *channel, const char *medium);
/* call.claimed: NUL-terminated code (borrowed) or NULL for None/nil. */
TPL_API tpl_status tpl_page_call_set_claimed(tpl_page_call *c, const char *claimed);
/* `resumed` (false until set). */
TPL_API void tpl_page_call_set_resumed(tpl_page_call *c, bool resumed);
/* The facts memory told this call (remembers(words)); n strings of lens[i] bytes, borrowed and
 * copied. Blocks that use remembers are re-rendered only when the list differs from the last. */
TPL_API tpl_status tpl_page_call_set_facts(tpl_page_call *c, const char *const *facts, const size_t *lens, size_t n);

/* Tells c that the host's own remembers store (tpl_render_set_remembers on its render context)
 * changed: blocks that use remembers are rendered again at the next step. */
TPL_API void tpl_page_call_facts_changed(tpl_page_call *c);

/* Renders one step: the state is a JSON object (borrowed), laid over the page's defaults.
 * Static blocks are rendered on step 1 and when the channel or medium changed; a dynamic block
 * is rendered when some value it reads changed since its last render (the state names it
 * reads, compared as JSON text; call fields; the facts when it uses remembers), else its text
 * is kept. On failure (TPL_ERR_STATE for invalid JSON, a template error of a block) the error
 * is tpl_page_call_error's and the next step renders every block again. */
TPL_API tpl_status tpl_page_call_render(tpl_page_call *c, const char *state_json, size_t len);
/* The error of the last failing call on c (its strings owned by c or its render context; valid
 * until the next call on c). */
TPL_API const tpl_error *tpl_page_call_error(const tpl_page_call *c);

/* Block i after the last successful render. */
typedef struct tpl_page_block_result {
    const char *name;           /* owned by the page */
    tpl_page_region region;
    const char *text;           /* owned by c, valid until the next render or reset; NUL-terminated */
    size_t len;
    bool changed;               /* text differs from the previous step's (step 1: it is non-empty):
                                 * a framework sends it */
    bool rendered;              /* re-rendered this step (false: nothing it reads changed) */
} tpl_page_block_result;
/* Fills *out for block i (TPL_ERR_USAGE when i is out of range or nothing rendered yet). */
TPL_API tpl_status tpl_page_call_block(const tpl_page_call *c, size_t i, tpl_page_block_result *out);

/* The whole page as text (DESIGN.md §8, as `pinecall prompt` prints it): "── NAME (static) ──"
 * and the text of each static block, "── history ──", "── NAME (dynamic) ──" and the text of
 * each dynamic block; each section's trailing whitespace removed, sections joined by one blank
 * line, one final newline. *out is malloc'd (NUL-terminated, *len bytes), freed by the caller.
 * TPL_ERR_USAGE before the first render, TPL_ERR_NOMEM. */
TPL_API tpl_status tpl_page_call_text(const tpl_page_call *c, char **out, size_t *len);

#ifdef __cplusplus
}
#endif
#endif
