/* tpl — the prompt features of the public API: what a render knows about the call it renders
 * for (the facts that remembers() consults, or a host memory store; the `call` object with its
 * channel, medium and claimed code) and the translation catalogs tr() and format-string prompts
 * use (DESIGN.md §3). These are per-render data of the standard library's prompt part
 * (stdlib/prompt/state.c), kept in the render context's extension slot: the VM itself knows
 * nothing of them. include/tpl.h includes this header, so hosts need not name it.
 * Thread safety and ownership follow tpl.h's render contexts (one tpl_render per thread; every
 * string argument borrowed and copied). */
#ifndef TPL_PROMPT_H
#define TPL_PROMPT_H

#include "tpl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- facts, remembers() and `call` (DESIGN.md §3) ---- */

/* Adds a fact that memory told this call (borrowed; copied). remembers(words) is true when some
 * fact contains words (both NFC-normalised, case-sensitive). TPL_ERR_VALUE when the fact is not
 * UTF-8; TPL_ERR_USAGE when r or fact is NULL. */
TPL_API tpl_status tpl_render_add_fact(tpl_render *r, const char *fact, size_t len);
/* Forgets every fact (NULL r: nothing). */
TPL_API void tpl_render_clear_facts(tpl_render *r);

/* A host's own memory store for remembers(words) (Jinja global; ERB remembers? / remembers).
 * `words` is the template's argument converted to a string and NFC-normalised: `len` bytes of
 * UTF-8, not NUL-terminated, borrowed for the duration of the call only. Return 1 when the
 * store remembers the words, 0 when it does not, and -1 on failure: the render then stops with
 * TPL_ERR_RAISED and an error located at the remembers() call naming the host function
 * ("host function 'remembers' failed"). Calls back into r get TPL_ERR_USAGE ("render context
 * busy"; it may use other render contexts). Nothing unwinds through the callback: tpl never
 * longjmps. */
typedef int (*tpl_remembers_fn)(void *data, const char *words, size_t len);
/* Sets (fn != NULL) or removes (fn == NULL) the host remembers callback of r. While it is set,
 * remembers() asks fn instead of the facts list (tpl_render_add_fact); `data` is passed to fn
 * as is (borrowed: it must stay valid while the callback is set). Persists across renders.
 * NULL r: nothing. */
TPL_API void tpl_render_set_remembers(tpl_render *r, tpl_remembers_fn fn, void *data);
/* Sets the `call` builtin: channel (phone|web|whatsapp; NULL = phone) and medium (voice|text;
 * NULL = whatsapp → text, otherwise voice). Strings NUL-terminated, borrowed; copied.
 * TPL_ERR_VALUE when one is not UTF-8, TPL_ERR_USAGE when one is 32 bytes or longer or r is
 * NULL; the previous values are kept on failure. */
TPL_API tpl_status tpl_render_set_call(tpl_render *r, const char *channel, const char *medium);
/* Sets call.claimed (DESIGN.md §3): the code the caller claimed (NUL-terminated UTF-8, at most
 * 63 bytes, borrowed; copied), or NULL for None/nil (the default). Persists across renders and
 * across tpl_render_set_call. TPL_ERR_USAGE when too long or r is NULL, TPL_ERR_VALUE when
 * not UTF-8. */
TPL_API tpl_status tpl_render_set_call_claimed(tpl_render *r, const char *claimed);
/* ---- translation: tr(text, lang=?) and format-string prompts (DESIGN.md §3) ----
 * A catalog is a JSON object {"main_lang": "en", "LANG": {"source": "target", ...}, ...}; keys
 * may hold {placeholder}s (pattern rows). The first catalog added is the prompt's own, the
 * others are a fallback chain tried in order. Settings persist across renders until changed. */

/* Appends a catalog parsed from JSON text (borrowed; copied). Returns TPL_ERR_STATE with the
 * JSON's line and column in the render's error on invalid JSON (including invalid UTF-8) or a
 * non-object top level, TPL_ERR_NOMEM on allocation failure, TPL_ERR_USAGE when r or json is
 * NULL; the catalogs already added are kept either way. */
TPL_API tpl_status tpl_render_add_catalog_json(tpl_render *r, const char *json, size_t len);
/* A catalog built row by row, for hosts that keep translations in their own store (the prompt
 * store does): no JSON text is written or parsed, and a finished catalog is immutable, so one
 * is shared by any number of render contexts and threads. Build it with tpl_catalog_new and
 * tpl_catalog_add / tpl_catalog_add_forms (the rows of a JSON catalog; a pattern row is one
 * whose source holds {placeholder}s; the gettext header row, source "", holds Plural-Forms),
 * then tpl_catalog_finish (which splits the pattern rows once), then tpl_render_add_catalog.
 * Its main language is "en" (a JSON catalog without "main_lang"). */
typedef struct tpl_catalog tpl_catalog;
/* An empty catalog (NULL on allocation failure); freed with tpl_catalog_free. */
TPL_API tpl_catalog *tpl_catalog_new(void);
/* Adds the row source -> target of language lang (lang NUL-terminated; all UTF-8, borrowed,
 * copied); a second row of the same language and source replaces the first. TPL_ERR_VALUE when
 * a text is not UTF-8, TPL_ERR_USAGE when a pointer is NULL or c is finished, TPL_ERR_NOMEM. */
TPL_API tpl_status tpl_catalog_add(tpl_catalog *c, const char *lang, const char *source, size_t source_len,
                                   const char *target, size_t target_len);
/* Adds a plural row: its target is the list of forms[0..nforms) (ngettext picks one by the
 * language's Plural-Forms; tr() and gettext take the first). Errors as tpl_catalog_add. */
TPL_API tpl_status tpl_catalog_add_forms(tpl_catalog *c, const char *lang, const char *source, size_t source_len,
                                         const char *const *forms, const size_t *form_lens, size_t nforms);
/* Prepares the pattern rows and makes c immutable (later adds are TPL_ERR_USAGE; finishing again
 * does nothing). TPL_ERR_USAGE when c is NULL, TPL_ERR_NOMEM. */
TPL_API tpl_status tpl_catalog_finish(tpl_catalog *c);
/* The catalog as JSON text {"LANG": {"source": "target" or [forms]}, ...} (*json malloc'd,
 * NUL-terminated, freed by the caller; *len its length). TPL_ERR_USAGE when a pointer is NULL,
 * TPL_ERR_NOMEM. */
TPL_API tpl_status tpl_catalog_json(const tpl_catalog *c, char **json, size_t *len);
/* Frees c (NULL: nothing). No render context may still hold it (tpl_render_clear_catalogs or
 * tpl_render_free first). */
TPL_API void tpl_catalog_free(tpl_catalog *c);
/* Appends finished catalog c to r's catalogs (borrowed, not copied: c must outlive its use by r,
 * until tpl_render_clear_catalogs or tpl_render_free). TPL_ERR_USAGE when r or c is NULL or c is
 * not finished, TPL_ERR_NOMEM. */
TPL_API tpl_status tpl_render_add_catalog(tpl_render *r, const tpl_catalog *c);
/* Drops every catalog of this render context (NULL r: nothing). */
TPL_API void tpl_render_clear_catalogs(tpl_render *r);
/* Sets the render language (NUL-terminated, borrowed; copied). NULL or "" means none: tr()
 * without an explicit lang then returns its text, and fmt templates are not translated.
 * TPL_ERR_VALUE when lang is not UTF-8; TPL_ERR_USAGE when r is NULL. */
TPL_API tpl_status tpl_render_set_lang(tpl_render *r, const char *lang);
/* Adds a tr_keys field (borrowed; copied): in a fmt prompt, state[name] (when present) is
 * replaced by tr(str(state[name])) before the template string is translated and formatted.
 * TPL_ERR_VALUE when name is not UTF-8; TPL_ERR_USAGE when r or name is NULL. */
TPL_API tpl_status tpl_render_add_tr_key(tpl_render *r, const char *name, size_t len);
/* Forgets every tr_keys field (NULL r: nothing). */
TPL_API void tpl_render_clear_tr_keys(tpl_render *r);

/* A tr() call of a compiled program (for linting and catalog extraction). Jinja's gettext calls
 * count too (`_`, `gettext`, `ngettext`, `pgettext`, `npgettext`, and the {% trans %} blocks that
 * compile to them, with jinja2.ext.i18n's newstyle messages: `Hello %(user)s!`). */
typedef struct tpl_tr_call {
    const char *text;       /* the literal text, msgid (owned by the program), or NULL: not a literal
                             * (for ngettext/pgettext: also when the plural or context is not one) */
    size_t len;
    uint32_t line, column;  /* where the call is (1-based; column in code points) */
    const char *function;   /* "tr", "gettext", "_", "ngettext", "pgettext" or "npgettext" (static) */
    const char *plural;     /* ngettext/npgettext: the plural literal (msgid_plural), else NULL */
    size_t plural_len;
    const char *context;    /* pgettext/npgettext: the context literal (msgctxt), else NULL */
    size_t context_len;
} tpl_tr_call;
/* Fills out[0..max) with the program's tr() and gettext calls in source order (a fmt prompt
 * counts as one tr() call on its whole template string) and returns how many there are (may
 * exceed max). NULL p: 0; NULL out: only counts. */
TPL_API size_t tpl_program_tr_calls(const tpl_program *p, tpl_tr_call *out, size_t max);

#ifdef __cplusplus
}
#endif

#endif
