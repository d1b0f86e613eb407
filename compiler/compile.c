/* The compiler: lowers the shared AST to bytecode.
 *
 * Names are resolved at compile time to slots of the current function (template level or a
 * macro), to template-level slots read from a macro, or to state/global lookups by a pre-hashed
 * name. Syntax semantics become explicit opcodes (Jinja: PRINT_PY, JF_PY, DIV_PY). Adjacent text
 * is merged into one TEXT; constant expressions are folded. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "compile.h"
#ifdef __GLIBC__
#include <malloc.h>
#endif
/* A block's tree parsed again from this size is given back to the system once compiled. */
#define TPL_TRIM_MIN ((size_t)1 << 20)
#include "../grammar/parse_ctx.h"
#include "../stdlib/builtins.h"
#include "../runtime/vm.h"
#include "../runtime/bigint.h"
#include "../runtime/verify.h"
#include "../runtime/error.h"

/* ------------------------------------------------------------------ scopes */

typedef struct scope_var {
    tpl_value name;
    uint32_t slot;
    bool missing;            /* may hold Jinja2's `missing` (an undefined value, see frame_init) */
    bool noexport;           /* at a template's top level, last bound by an import (Jinja2 discards
                              * an import's names from the module's exported names) */
    bool reset_param;        /* a parameter of a loop or with block that makes a macro: `missing`
                              * once the block ends (reset_frame), which a macro's read checks */
    bool shared;             /* its slot is an ended frame's that made a closure (func.shared) */
    bool shared_param;       /* ... where it was a parameter (its readers there check `missing`) */
    bool ctx_hidden;         /* not one of Jinja2's stores of its frame: a loop's `loop` when the loop
                              * is not extended, a macro's varargs, kwargs or caller its body does not
                              * read (macro_body's find_undeclared): an included or imported template
                              * or a scoped block (dump_local_context) does not see it */
    bool ctx_skip;           /* passed over while load_name reads the context around a `missing`
                              * local (load_past_missing) */
    bool set_done;           /* `super` of a block that reads the block's super first: a set of its
                              * frame's own statements (no branch) assigned it (is_block_super) */
    bool stored;             /* ... a store of it was compiled (maybe assigned from there on) */
} scope_var;

typedef struct scope {
    struct scope *parent;
    bool func_boundary;      /* the outermost scope of a function */
    bool ctx_top;            /* the top of a template that reads its names through a context (an
                              * included or imported template, a block): Jinja2 gives it no
                              * enclosing frame, and a name that is `missing` around it reads the
                              * state instead (Context.new_context skips missing locals) */
    tpl_smap loads;          /* the names this frame reads at its own level (Jinja2's refs that
                              * are not assignments), for the frames inside it */
    scope_var *vars;
    uint32_t nvars, cap;
    tpl_smap idx;            /* name -> index in vars, once the scope has SCOPE_INDEXED names */
    bool soft_saved;         /* the compiler's `soft` when the scope was pushed (a frame entered
                              * in it clears `soft`, as Jinja2's Frame.inner(); popping restores it) */
    int cond_base;           /* the compiler's cond_depth when the scope was pushed */
} scope;

#define SCOPE_INDEXED 8

typedef struct loopctx {
    struct loopctx *parent;
    uint32_t top;            /* continue target */
    uint32_t *breaks;        /* jumps to patch with the loop's exit */
    size_t nbreaks, cap;
} loopctx;

#define TPL_MAX_INHERIT 16

/* A definition of a block: its BLOCK node, the chain index of its template (0 = the main
 * template), the next (less derived) definition of the block (an index of tpl_comp.bdefs). */
typedef struct tpl_block_def {
    tpl_node *def;                   /* NULL: not in memory (a two-pass compile: parsed again where compiled) */
    uint32_t tpl, next;
    uint32_t off;                    /* the BLOCK node's offset (tpl_comp.reparse finds its tokens by it) */
    bool active;                     /* being compiled now: a cycle through super() */
} tpl_block_def;

/* A block name with its definitions along the extends chain, most derived first (a list in
 * tpl_comp.bdefs: a block of a template that extends nothing has one, and a fixed array of
 * TPL_MAX_INHERIT was 230 bytes a block, 6x a template of small blocks: issue 13 §1). */
typedef struct tpl_block {
    tpl_value name;
    uint32_t first, last, ndefs;
} tpl_block;

typedef struct func {
    struct func *parent;     /* the function this one is defined in (closures read its slots) */
    bool is_macro;
    int save_buffered;       /* the compile's `buffered` where the function began (func_end restores it) */
    bool save_gen_fn;        /* ... and its gen_fn, import_out */
    bool save_import_out;
    bool is_test;            /* a loop's filter function (loop_test_function): no varargs of its own */
    uint32_t nslots;
    int depth, max_depth;    /* operand stack */
    scope *scope;
    loopctx *loop;
    tpl_smap shared;         /* "DEPTH:name" -> the slot of a name of a loop or with frame that made a
                              * closure and ended (reset_frame): a later frame at that depth
                              * declaring the name takes it (Jinja2's identifier l_DEPTH_name is one
                              * Python variable of the function, which the closure reads) */
    int32_t rec_self;        /* recursive loop function: slots of itself, its depth and its loop; else -1 */
    int32_t rec_depth, rec_loop;
} func;

/* An imported template compiled once (tpl_comp.mods): its function, its template-level names
 * (from-import's check) and where each template level that imports it keeps its frame. */
typedef struct tpl_cmod {
    tpl_value name;
    uint32_t macro;          /* its descriptor; UINT32_MAX while it is being compiled */
    uint32_t nslots;
    tpl_smap vars;           /* its template-level names (from-import's check) */
    struct tpl_cmod_frame { uint32_t root_id, off; } *frames;
    uint32_t nframes;
    size_t fcap;
} tpl_cmod;

struct tpl_comp {
    tpl_program *p;
    tpl_arena *tmp;          /* compile-time allocations (freed after compilation) */
    const char *src;
    size_t srclen;
    uint32_t *code;
    size_t n, cap;
    tpl_value *consts;
    size_t nconsts, kcap;
    uint32_t *kidx;          /* string constant dedupe: open addressing, const index + 1 (0 = empty) */
    uint32_t kidx_cap, kidx_used;
    tpl_name *names;
    size_t nnames, ncap;
    uint32_t *nidx;          /* name dedupe: open addressing by the name's hash, index + 1 (0 = empty) */
    uint32_t nidx_cap;
    tpl_locw spanw;          /* the span table, built as instructions are emitted (add_span) */
    uint32_t *ls;            /* line_starts of src (NULL: span_linecol alone) */
    size_t nls, li;          /* its length and add_span's cursor in it */
    size_t rli;              /* and note_read's */
    tpl_locw readw;          /* the read locations, built as reads are noted (note_read) */
    struct tpl_rcur { uint32_t off, line, col; } *rcur; /* note_read's cursor per file */
    size_t nrcur;
    /* add_span's table of line starts per loaded source (as ls; index cur_src, made on first use) */
    struct tpl_fls { uint32_t *ls; size_t nls, li; } *fls;
    size_t nfls;
    size_t nspans;
    uint32_t span_last;      /* offset of the last add_span call */
    int span_last_src;       /* and its source (cur_src) */
    uint32_t lc_off, lc_line, lc_bol; /* add_span's cursor: offset, its line, its line start */
    uint32_t lc_col;         /* code points from lc_bol to lc_off */
    tpl_macro_desc *macros;
    size_t nmacros, mcap;
    uint32_t cur_off;        /* source offset of the node being compiled */
    tpl_sb pending;          /* text not emitted yet (merged with following text) */
    const char *pending_ref; /* or that text borrowed, while it is one piece (emit_text_ref) */
    size_t pending_ref_len;
    uint32_t pending_off;
    bool pending_locked;     /* the pending text began with the span locked (at pending_off) */
    int pending_src;         /* the source the pending text began in (cur_src) */
    uint32_t pending_at;     /* and its offset there */
    func *fn;
    func root;
    void *ext;               /* a lowering's own data for the whole compile (ERB: the template's defs) */
    int syn;                 /* tpl_syntax_id: picks the syntax's opcodes (truthiness, printing) */
    bool soft;               /* inside an if/condexpr: unknown filters fail at run time (Jinja2) */
    bool print_bare;         /* the name load_name reads next is printed as it is ({{ name }}) */
    bool own_str_attr;       /* a comparison Jinja2 folds: each str literal whose method it takes is
                              * its own object (folded_methods) */
    bool autoescape;         /* inside {% autoescape true %} */
    /* inside {% autoescape EXPR %} with a value known at run time only (Jinja2's volatile eval
     * context): the body is compiled twice, autoescape on and off, and the value's truthiness
     * picks one; ae_compile is the autoescape Jinja2's code generator still holds there (the
     * enclosing one), which decides how constant outputs print; `~` is str_join */
    bool ae_volatile, ae_compile;
    /* names an `{% import ... as NAME %}` bound (up to 16): under autoescape, NAME.macro(...) is
     * Markup, as Jinja2's Macro.__call__ makes it with the caller's eval context */
    tpl_value import_names[16];
    uint32_t nimport_names;
    tpl_value finalize;      /* tpl_options.finalize: the host filter every output goes through (a string), or undefined */
    bool no_context;         /* compiling an include without context: names are globals only */
    /* > 0: output here is collected into a buffer Jinja2 keeps in the same Python function as
     * the nearest template top level, block or included template (a filter or set block), or it
     * is a function's (a macro, a call block's caller, a recursive loop's body): an include
     * without context here writes its text below those buffers (stmt_include_without) */
    int buffered;
    bool import_out;         /* compiling what becomes an imported template's module output (its top
                              * level, blocks and includes, not its macros or set blocks) */
    bool gen_fn;             /* the Jinja2 function compiled here is a macro, a call block's caller or a
                              * recursive loop's body (an include without context makes it a generator) */
    bool self_stored;        /* a variable named self was declared before (then Jinja2's
                              * find_undeclared leaves the root's `self` undefined: reads_self refuses) */
    bool ctx_read;           /* loading a name for a dynamic include's context (push_context_map):
                              * read as through a context's top (scope_var.ctx_hidden, `missing`) */
    int include_depth;
    scope *inc_top;          /* the top-level scope of the included or imported template being compiled */
    tpl_node *inc_root;      /* and its statements (where its own blocks are, for self.BLOCK()) */
    scope *free_scopes;      /* popped scopes, reused by push_scope with their variable arrays (a
                              * scope per loop or with block kept for the whole compile was ~10x
                              * a template of small loops: issue 13 §1); linked through parent */
    func *inc_fn;            /* and the function it is compiled in */
    bool span_locked;        /* included source: keep the include statement's location */
    uint32_t span_off;
    struct tpl_csource { char *src; size_t n; tpl_value name; } *sources; /* loaded templates (freed after compilation) */
    size_t nsources, srccap;
    tpl_smap source_idx;     /* a loaded template's name -> its latest index in sources: a template
                              * loaded again with the same text is the same source (one file of the
                              * program, one copy of its text and line table: 60,000 includes of one
                              * partial are one file, not 60,000) */
    int cur_src;             /* the source being compiled: an index of sources, -1 the main one */
    int ctx_src1;            /* the template whose context the code runs in (Jinja2's context.name,
                              * `self`): an included or imported template's source index + 1, 0 the
                              * template compiled (its extends chain too) */
    int chain_src[TPL_MAX_INHERIT]; /* the source of each template of the extends chain */
    tpl_block *blocks;       /* blocks of the extends chain */
    size_t nblocks, bcap;
    tpl_smap block_idx;      /* block name -> index in blocks */
    tpl_block_def *bdefs;    /* their definitions */
    size_t nbdefs, bdcap;
    uint32_t *chain_ends;    /* jumps to the end of the if/elif chains being compiled (a stack) */
    size_t nchain_ends, chain_ends_cap;
    tpl_block *cur_block;    /* the block being compiled (super()) */
    uint32_t cur_block_pos;
    /* copies compiled in place (an include's body, a block's body where super() or self.NAME()
     * calls it) running now, and the code the ones nested in another took (inline_enter) */
    uint32_t inline_depth;
    size_t inline_words, inline_start;
    unsigned cur_block_super; /* SUP_* of the current block's body (super_scan) */
    scope *cur_block_base;   /* the scope the current block's body started from (super() sees it) */
    func *cur_block_fn;      /* and the function it is compiled in */
    loopctx *cur_block_loop; /* and the loop around it (none unless scoped) */
    const tpl_node *slice_undef; /* an output's child: Jinja2's code generator folds it at once (fold_val) */
    const tpl_node *out_folded;  /* the node expr compiles now, when it is that output child (fold_check) */
    int inf_hidden; /* > 0 inside a fold whose value Jinja2 writes without its float literals (expr) */
    const tpl_node *undef_slices[8]; /* failing slices of literals a fold makes an Undefined (fold_mark) */
    size_t nundef_slices;
    scope *blk_ctx;          /* a scoped block's call site, while its body compiles: the context it
                              * got (Jinja2's context.derived(locals())), which a block placed in
                              * it that is not scoped gets too (NULL: the template's own) */
    func *blk_ctx_fn;        /* and the function it is compiled in */
    loopctx *blk_ctx_loop;   /* and the loop around it */
    tpl_trcall *trcalls;     /* tr() calls (lint, tr-extract) */
    size_t ntrcalls, trcap;
    uint32_t read_at;        /* offset + 1 of the next read's own location when not cur_off (a call's name) */
    tpl_node *main_body;     /* the template's statements when it extends nothing (set_then_print) */
    int closed;              /* main_body has no include/import/extends/block: 1 yes, 0 no, -1 unknown */
    uint32_t set_print_scans;/* whole-template scans set_then_print made (bounded: each is O(template)) */
    struct tpl_facts *facts; /* a two-pass compile's whole-template facts (tpl_comp_facts_begin), or NULL */
    /* extends that picks the parent when it runs (issue 14): inside an if, or of a name that is
     * not a string constant. The template then compiles on its own (ext_dyn): EXTENDS_DYN
     * stores the parent's name in the hidden slot ext_slot, output after the first such extends
     * is guarded by it (Jinja2's `if parent_template is None:`), and at the end EXTENDS_RUN renders
     * the template compiled again with that parent (p->ext_parent: its blocks over the parent's,
     * its top level skipped: the parent gets its template-level names as a context). */
    bool ext_dyn_ok;         /* check_extends may make extends dynamic (the main template only) */
    bool ext_dyn;            /* the template has such an extends */
    uint32_t ext_dyn_off;    /* the first one */
    bool ext_guard;          /* compiling after it: output in the root function is guarded */
    int ext_skip;            /* after a top-level extends known at compile time: that output is not compiled */
    int cond_depth;          /* compiling code that may not run (an if's branch, a loop's body, a macro) */
    int ext_noguard;         /* inside a set block or a block's body: never guarded (Jinja2) */
    uint32_t ext_slot;
    /* a two-pass compile: parses the block at offset off again into arena a (its BLOCK node,
     * or NULL with the error recorded) for a block compiled where its statement is not in
     * memory (self.NAME() elsewhere: tpl_comp_set_reparse) */
    tpl_node *(*reparse)(void *data, uint32_t off, tpl_arena *a);
    void *reparse_data;
    tpl_arena *reparse_spare;  /* (tpl_comp_set_reparse's spare; busy: a reparsed tree is in it) */
    bool reparse_spare_busy;
    int (*restream)(void *data, uint32_t off, size_t min, void (*each)(void *arg, tpl_node *n), void *arg);
    /* templates imported without context by a constant name, each compiled once as a function
     * every import of it runs (IMPORT_MOD; issue 13 §1: compiled again at each import, 20,000
     * imports were 13.6x the template and took slots of their own each) */
    struct tpl_cmod *mods;
    size_t nmods, modcap;
    tpl_smap mod_idx;        /* template name -> index in mods */
    uint32_t root_id;        /* which template level c->root is now: 0 the main one, else a module's */
    uint32_t nroot_ids;
    bool failed;
    bool nomem;             /* the error is out of memory (c_nomem) */
    tpl_error_kind err_kind; /* the error's kind (TPL_EK_SYNTAX, or cfail's: TPL_EK_ASSERTION, ...) */
    uint32_t err_off;
    char msg[256];
};

/* The syntax's opcode for a Jinja (Python-semantics) opcode. */
static int sop(const tpl_comp *c, int op)
{
    if (c->syn != TPL_SYN_ERB) return op;
    switch (op) {
    case TPL_OP_JF_PY: return TPL_OP_JF_RB;
    case TPL_OP_JT_PY: return TPL_OP_JT_RB;
    case TPL_OP_JF_PY_KEEP: return TPL_OP_JF_RB_KEEP;
    case TPL_OP_JT_PY_KEEP: return TPL_OP_JT_RB_KEEP;
    case TPL_OP_NOT_PY: return TPL_OP_NOT_RB;
    case TPL_OP_PRINT_PY: return TPL_OP_PRINT_RB;
    case TPL_OP_DIV_PY: return TPL_OP_DIV_RB;
    case TPL_OP_CONCAT: return TPL_OP_CONCAT_RB;
    case TPL_OP_TIDY_PY: return TPL_OP_TIDY_RB;
    case TPL_OP_ADDS: return TPL_OP_ADDS_RB;
    case TPL_OP_PRINT_ADDS: return TPL_OP_PRINT_ADDS_RB;
    default: return op;
    }
}

/* ------------------------------------------------------------------ errors */

static void vcerror(tpl_comp *c, tpl_error_kind kind, uint32_t off, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));
static void vcerror(tpl_comp *c, tpl_error_kind kind, uint32_t off, const char *fmt, va_list ap)
{
    if (c->failed) return;
    c->failed = true;
    c->err_kind = kind;
    c->err_off = c->span_locked ? c->span_off : off;
    /* located at the include (or extends) statement: the message names where in the loaded
     * template, as a parse error there does */
    size_t at = 0;
    if (c->span_locked && c->cur_src >= 0 && (size_t)c->cur_src < c->nsources) {
        const struct tpl_csource *f = &c->sources[c->cur_src];
        uint32_t line, col;
        tpl_offset_to_linecol(f->src, f->n, off, &line, &col);
        int k = snprintf(c->msg, sizeof c->msg, "in '%.*s' at %u:%u: ", (int)f->name.len, f->name.u.s, line, col);
        at = k > 0 && (size_t)k < sizeof c->msg ? (size_t)k : 0;
    }
    vsnprintf(c->msg + at, sizeof c->msg - at, fmt, ap);
}

/* A compile error: Jinja2's parser's TemplateSyntaxError (TPL_EK_SYNTAX), or a tpl restriction. */
static void cerror(tpl_comp *c, uint32_t off, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void cerror(tpl_comp *c, uint32_t off, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vcerror(c, TPL_EK_SYNTAX, off, fmt, ap);
    va_end(ap);
}

/* A compile error of a finer kind: TPL_EK_ASSERTION where Jinja2's code generator (or its parser
 * with exc=TemplateAssertionError) refuses the template, TPL_EK_TEMPLATE_NOT_FOUND for a missing
 * template. */
static void cfail(tpl_comp *c, tpl_error_kind kind, uint32_t off, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void cfail(tpl_comp *c, tpl_error_kind kind, uint32_t off, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vcerror(c, kind, off, fmt, ap);
    va_end(ap);
}

/* The compiler's one out-of-memory report (the error model's message, located at off). */
static void c_nomem(tpl_comp *c, uint32_t off)
{
    if (c->failed) return;
    cerror(c, off, "%s", tpl_error_kind_format(TPL_EK_NOMEM));
    c->nomem = true;
}

/* ------------------------------------------------------------------ growable arrays */

static bool grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return true;
    size_t nc = *cap ? *cap * 2 : 64;
    while (nc < need) nc *= 2;
    void *np = realloc(*p, nc * elem);
    if (!np) return false;
    *p = np;
    *cap = nc;
    return true;
}

/* grow() for the compiler's arrays that grow with the template (code, spans, constants, names,
 * reads): the bytes it adds are charged to the compile's memory budget as its arenas' chunks are
 * (issue 13 §1), and cfree gives them back. */
static bool cgrow(tpl_comp *c, void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return true;
    size_t nc = *cap ? *cap * 2 : 64;
    while (nc < need) nc *= 2;
    tpl_budget *b = c->p->budget;
    size_t add = (nc - *cap) * elem;
    if (b && (add > b->limit || b->used > b->limit - add)) {
        b->over = true;
        return false;
    }
    void *np = realloc(*p, nc * elem);
    if (!np) return false;
    *p = np;
    *cap = nc;
    if (b) b->used += add;
    return true;
}

static void cfree(tpl_comp *c, void **p, size_t *cap, size_t elem)
{
    if (c->p->budget) c->p->budget->used -= *cap * elem;
    free(*p);
    *p = NULL;
    *cap = 0;
}

/* ------------------------------------------------------------------ constants and names */

/* Hash for the compiler's string-constant dedupe index only (never stored in a program): eight
 * bytes per step instead of FNV's one. */
static uint64_t kload(const char *s)
{
    uint64_t w;
    memcpy(&w, s, 8);
    return w;
}

static uint64_t khash(const char *s, size_t n)
{
    uint64_t a = 0x9e3779b97f4a7c15u ^ n, b = 0x2545f4914f6cdd1du;
    size_t i = 0;
    /* two independent lanes of eight bytes (the multiplies of one lane do not wait on the other) */
    for (; i + 16 <= n; i += 16) {
        a = (a ^ kload(s + i)) * 0xff51afd7ed558ccdu;
        b = (b ^ kload(s + i + 8)) * 0xc4ceb9fe1a85ec53u;
        a ^= a >> 32;
        b ^= b >> 29;
    }
    /* the last 1..15 bytes: one or two (overlapping) words, or a few bytes of a short string */
    uint64_t t = 0, u = 0;
    size_t r = n - i;
    if (r > 8) { t = kload(s + i); u = kload(s + n - 8); }
    else if (r == 8) t = kload(s + i);
    else if (n >= 8) t = kload(s + n - 8);
    else if (r >= 4) { uint32_t x, y; memcpy(&x, s + i, 4); memcpy(&y, s + n - 4, 4); t = (uint64_t)x << 32 | y; }
    else if (r > 0) t = (uint64_t)(unsigned char)s[i] << 16 | (uint64_t)(unsigned char)s[i + r / 2] << 8 | (unsigned char)s[n - 1];
    a = (a ^ t) * 0xc4ceb9fe1a85ec53u;
    b = (b ^ u) * 0xff51afd7ed558ccdu;
    uint64_t h = a ^ (b >> 31) ^ (a >> 29);
    return h ^ (h >> 32);
}

/* The dedupe slot of string s: the one holding an equal string, else the empty one to fill. */
static uint32_t *kidx_slot(tpl_comp *c, const char *s, size_t n, uint64_t h)
{
    uint32_t mask = c->kidx_cap - 1;
    for (uint32_t i = (uint32_t)h & mask;; i = (i + 1) & mask) {
        uint32_t *slot = &c->kidx[i];
        if (!*slot) return slot;
        const tpl_value *k = &c->consts[*slot - 1];
        if (k->len == n && tpl_mem_eq(k->u.s, s, n)) return slot;
    }
}

static bool kidx_grow(tpl_comp *c)
{
    uint32_t cap = c->kidx_cap ? c->kidx_cap * 2 : 128;
    uint32_t *old = c->kidx, ocap = c->kidx_cap;
    /* (a chunk of its own when large, its old copy given back once rehashed) */
    c->kidx = tpl_arena_table(c->tmp, (size_t)cap * sizeof *c->kidx);
    if (!c->kidx) return false;
    memset(c->kidx, 0, (size_t)cap * sizeof *c->kidx);
    c->kidx_cap = cap;
    for (uint32_t i = 0; i < ocap; i++)
        if (old[i]) {
            const tpl_value *k = &c->consts[old[i] - 1];
            *kidx_slot(c, k->u.s, k->len, khash(k->u.s, k->len)) = old[i];
        }
    if (old) tpl_arena_table_free(c->tmp, old, (size_t)ocap * sizeof *c->kidx);
    return true;
}

/* Appends v to the constant pool: its index (0 with c->failed set when the pool cannot grow). */
static uint32_t const_push(tpl_comp *c, tpl_value v)
{
    if (!cgrow(c, (void **)&c->consts, &c->kcap, c->nconsts + 1, sizeof *c->consts)) {
        c_nomem(c, c->cur_off);
        return 0;
    }
    if (c->nconsts >= 0xFFFFFF) { cerror(c, c->cur_off, "too many constants"); return 0; }
    uint32_t k = (uint32_t)c->nconsts++;
    c->consts[k] = v;
    return k;
}

/* Marks the numbers of a Jinja constant (and of a constant tuple's items) as the compiled
 * template's literals (TPL_F_LIT). */
static void mark_lit(tpl_value *v, int depth)
{
    if (v->type == TPL_T_INT || v->type == TPL_T_FLOAT || v->type == TPL_T_BIGINT) v->flags |= TPL_F_LIT;
    else if (v->type == TPL_T_LIST && v->aux == TPL_LAZY_NONE && depth < 50)
        for (uint32_t i = 0; i < v->u.list->len; i++) mark_lit(&v->u.list->items[i], depth + 1);
}

static uint32_t add_const(tpl_comp *c, tpl_value v)
{
    if (c->failed) return 0;
    if (c->syn == TPL_SYN_JINJA) mark_lit(&v, 0);
    uint32_t *slot = NULL;
    if (v.type == TPL_T_STR) {
        if (c->kidx_used * 2 >= c->kidx_cap && !kidx_grow(c)) { c_nomem(c, c->cur_off); return 0; }
        slot = kidx_slot(c, v.u.s, v.len, khash(v.u.s, v.len));
        /* an equal string with other flags (safe) is replaced as the one later constants share */
        if (*slot && c->consts[*slot - 1].flags == v.flags) return *slot - 1;
        /* a string that ends the program's own source (a format string's whole template, a
         * template's last text) is used where it is: the program owns the source, NUL-terminated
         * there, and frees it with its constants (issue 13 §1: not one more copy of it) */
        const tpl_program *p = c->p;
        uintptr_t sb = (uintptr_t)p->source, x = (uintptr_t)v.u.s;
        bool in_source = p->source && !p->static_data && x >= sb && x + v.len == sb + p->source_len;
        if (!in_source) {
            char *s = tpl_arena_strdup(&c->p->arena, v.u.s, v.len);
            if (!s) { c_nomem(c, c->cur_off); return 0; }
            v.u.s = s;
        }
    } else if (v.type == TPL_T_BIGINT) { /* its text, owned by the program */
        char *s = tpl_arena_strdup(&c->p->arena, v.u.s, v.len);
        if (!s) { c_nomem(c, c->cur_off); return 0; }
        v.u.s = s;
    }
    uint32_t k = const_push(c, v);
    if (c->failed) return 0;
    if (slot) {
        if (!*slot) c->kidx_used++;
        *slot = k + 1;
    }
    return k;
}

/* A string constant of its own (not shared with an equal literal): `'ab'.upper == 'ab'.upper`. */
static uint32_t add_const_own(tpl_comp *c, tpl_value v)
{
    if (c->failed) return 0;
    char *s = tpl_arena_strdup(&c->p->arena, v.u.s, v.len);
    if (!s) { c_nomem(c, c->cur_off); return 0; }
    v.u.s = s;
    return const_push(c, v);
}

/* The name index slot of string s with hash h (its tpl_hash_str): the one holding an equal
 * name, else the empty one to fill. */
static uint32_t *nidx_slot(tpl_comp *c, const char *s, size_t n, uint64_t h, uint8_t flags)
{
    uint32_t mask = c->nidx_cap - 1;
    for (uint32_t i = (uint32_t)(h ^ (h >> 32)) & mask;; i = (i + 1) & mask) {
        uint32_t *slot = &c->nidx[i];
        if (!*slot) return slot;
        const tpl_name *nm = &c->names[*slot - 1];
        if (nm->hash == h && nm->s.len == n && nm->s.flags == flags && tpl_mem_eq(nm->s.u.s, s, n)) return slot;
    }
}

static bool nidx_grow(tpl_comp *c)
{
    uint32_t cap = c->nidx_cap ? c->nidx_cap * 2 : 64;
    uint32_t *old = c->nidx, ocap = c->nidx_cap;
    /* (a chunk of its own when large, its old copy given back once rehashed) */
    c->nidx = tpl_arena_table(c->tmp, (size_t)cap * sizeof *c->nidx);
    if (!c->nidx) return false;
    memset(c->nidx, 0, (size_t)cap * sizeof *c->nidx);
    c->nidx_cap = cap;
    for (uint32_t i = 0; i < ocap; i++)
        if (old[i]) {
            const tpl_name *nm = &c->names[old[i] - 1];
            *nidx_slot(c, nm->s.u.s, nm->s.len, nm->hash, nm->s.flags) = old[i];
        }
    if (old) tpl_arena_table_free(c->tmp, old, (size_t)ocap * sizeof *c->nidx);
    return true;
}

/* A name's index. `flags` is 0 or TPL_F_SYMBOL (ERB's h[:k]: the key keeps its class where the
 * receiver is not a Hash, "sda"[:smart] is Ruby's TypeError); a name with and without it are two
 * names. */
static uint32_t add_name_flags(tpl_comp *c, tpl_value s, uint8_t flags)
{
    if (c->failed) return 0;
    if (c->nnames * 2 >= c->nidx_cap && !nidx_grow(c)) { c_nomem(c, c->cur_off); return 0; }
    uint64_t h = tpl_hash_str(s.u.s, s.len);
    uint32_t *slot = nidx_slot(c, s.u.s, s.len, h, flags);
    if (*slot) return *slot - 1;
    char *copy = tpl_arena_strdup(&c->p->arena, s.u.s, s.len);
    if (!copy || !cgrow(c, (void **)&c->names, &c->ncap, c->nnames + 1, sizeof *c->names)) {
        c_nomem(c, c->cur_off);
        return 0;
    }
    if (c->nnames >= 0xFFFFFF) { cerror(c, c->cur_off, "too many names"); return 0; }
    uint32_t k = (uint32_t)c->nnames++;
    memset(&c->names[k], 0, sizeof c->names[k]);
    c->names[k].s = tpl_v_str(copy, s.len);
    c->names[k].s.flags = flags;
    tpl_name_resolve_hashed(&c->names[k], h);
    *slot = k + 1;
    return k;
}

static uint32_t add_name(tpl_comp *c, tpl_value s) { return add_name_flags(c, s, 0); }

/* ------------------------------------------------------------------ emission */

static void stack_effect(tpl_comp *c, int delta)
{
    func *f = c->fn;
    f->depth += delta;
    if (f->depth > f->max_depth) f->max_depth = f->depth;
}

static __attribute__((noinline)) uint32_t emit_raw_slow(tpl_comp *c, uint32_t word)
{
    if (c->failed) return 0;
    if (!cgrow(c, (void **)&c->code, &c->cap, c->n + 1, sizeof *c->code)) {
        c_nomem(c, c->cur_off);
        return 0;
    }
    if (c->n >= 0xFFFFFF) { cerror(c, c->cur_off, "template too large"); return 0; }
    c->code[c->n] = word;
    return (uint32_t)c->n++;
}

/* Appends a code word (inline: every instruction; the growth and the checks out of line). */
static inline uint32_t emit_raw(tpl_comp *c, uint32_t word)
{
    if (__builtin_expect(c->failed || c->n >= c->cap || c->n >= 0xFFFFFF, 0)) return emit_raw_slow(c, word);
    c->code[c->n] = word;
    return (uint32_t)c->n++;
}

/* Line and column of source offset off, as tpl_offset_to_linecol, but resuming from the last
 * offset asked for: instructions are emitted mostly in source order, so the span table costs
 * O(source) in all instead of O(source) per instruction. */
static void span_linecol(tpl_comp *c, uint32_t off, uint32_t *line, uint32_t *col)
{
    if (off > c->srclen) off = (uint32_t)c->srclen;
    const char *s = c->src;
    if (c->lc_line == 0) { c->lc_off = 0; c->lc_line = 1; c->lc_bol = 0; c->lc_col = 0; }
    if (off == c->lc_off) { *line = c->lc_line; *col = c->lc_col + 1; return; }
    bool incremental = false;
    if (off < c->lc_off) {
        /* step back: uncount the line ends in between, then find the start of off's line */
        for (uint32_t i = off; i < c->lc_off; i++)
            if (s[i] == '\n') c->lc_line--;
        uint32_t b = off;
        while (b > 0 && s[b - 1] != '\n') b--;
        c->lc_bol = b;
    } else {
        /* forward: count line ends; on the same line the column grows by the code points passed
         * (when the cursor sits on a code point boundary, as token offsets do) */
        const char *nl = NULL;
        for (const char *q = s + c->lc_off, *e = s + off; (q = memchr(q, '\n', (size_t)(e - q))) != NULL; q++) {
            c->lc_line++;
            nl = q;
        }
        if (nl) c->lc_bol = (uint32_t)(nl - s) + 1;
        else incremental = c->lc_off >= c->lc_bol && ((unsigned char)s[c->lc_off] & 0xC0) != 0x80;
    }
    if (incremental) c->lc_col += (uint32_t)tpl_utf8_len(s + c->lc_off, off - c->lc_off);
    else c->lc_col = (uint32_t)tpl_utf8_len(s + c->lc_bol, off - c->lc_bol);
    c->lc_off = off;
    *line = c->lc_line;
    *col = c->lc_col + 1;
}

/* Records where the instruction at pc comes from: its source offset now, its line and column
 * in resolve_spans (tpl_comp_finish). A call at the offset of the previous call records nothing:
 * resolve_spans would drop it anyway (its line and column are the last span's). */
static void span_resolve(tpl_comp *c, uint32_t pc, uint32_t off);
static void span_resolve_src(tpl_comp *c, uint32_t pc, int src, uint32_t off);
/* (An instruction compiled from a loaded template, an included, imported or extended one, is
 * located in that template: a runtime error there names its file and line, as Jinja2's
 * traceback's innermost template frame does; a compile error is still reported at the statement
 * that loaded it, span_locked.) */
static void add_span(tpl_comp *c, uint32_t pc)
{
    uint32_t off = c->cur_off;
    int src = c->cur_src >= 0 && (size_t)c->cur_src < c->nsources ? c->cur_src : -1;
    if (c->nspans && off == c->span_last && src == c->span_last_src) return;
    c->nspans++;
    c->span_last = off;
    c->span_last_src = src;
    if (src < 0) span_resolve(c, pc, off);
    else span_resolve_src(c, pc, src, off);
    if (c->spanw.failed) c_nomem(c, c->cur_off);
}

/* True when s[0..n) is all ASCII (a loop compilers vectorise). */
static bool all_ascii(const char *s, size_t n)
{
    unsigned char acc = 0;
    for (size_t i = 0; i < n; i++) acc |= (unsigned char)s[i];
    return acc < 0x80;
}

#define LS_WIDE 0x80000000u  /* line_starts: the line is not all ASCII */

/* The start of every line of s[0..n), each flagged LS_WIDE when its line holds a non-ASCII byte
 * (malloc'd; NULL when out of memory or too large to flag); ascii: s is known to be all ASCII. */
static uint32_t *line_starts(const char *s, size_t n, size_t *count, bool ascii)
{
    if (n >= LS_WIDE) return NULL;
    ascii = ascii || all_ascii(s, n);
    size_t nls = 0, cap = 0;
    uint32_t *ls = NULL;
    for (size_t b = 0;;) {
        const char *nl = memchr(s + b, '\n', n - b);
        size_t e = nl ? (size_t)(nl - s) : n;
        if (!grow((void **)&ls, &cap, nls + 1, sizeof *ls)) { free(ls); return NULL; }
        ls[nls++] = (uint32_t)b | (ascii || all_ascii(s + b, e - b) ? 0 : LS_WIDE);
        if (!nl) break;
        b = e + 1;
    }
    *count = nls;
    return ls;
}

/* Turns the recorded (pc, offset) pairs into the span table, in place: each offset becomes its
 * line and column; a span with the line and column of the one before is dropped, and of two
 * spans at one pc the later wins. Lines are found in a table of line starts; on an all-ASCII
 * line the column is the byte distance, else span_linecol counts code points (the table keeps
 * its cursor where span_linecol would have left it, so both give what it alone would). */
/* The line (0-based index into ls[0..nls)) holding offset off, from the line li: a few steps
 * from it (spans and reads come mostly in source order), else a binary search (a block compiled
 * where self.NAME() calls it jumps across the template: stepping was O(lines) a jump). */
static size_t ls_find(const uint32_t *ls, size_t nls, size_t li, uint32_t off)
{
    for (int k = 0; k < 16; k++) {
        if (li + 1 < nls && (ls[li + 1] & ~LS_WIDE) <= off) li++;
        else if (li > 0 && (ls[li] & ~LS_WIDE) > off) li--;
        else return li;
    }
    size_t lo = 0, hi = nls; /* the last line starting at or before off: ls[lo] <= off < ls[hi] */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if ((ls[mid] & ~LS_WIDE) <= off) lo = mid;
        else hi = mid;
    }
    return lo;
}

static void span_resolve(tpl_comp *c, uint32_t pc, uint32_t off)
{
    size_t n = c->srclen;
    const uint32_t *ls = c->ls;
    size_t nls = c->nls, li = c->li;
    uint32_t line, col;
    if (off > n) off = (uint32_t)n;
    if (ls) c->li = li = ls_find(ls, nls, li, off);
    if (ls && !(ls[li] & LS_WIDE)) {
        line = (uint32_t)li + 1;
        col = off - ls[li] + 1;
        c->lc_off = off;
        c->lc_line = line;
        c->lc_bol = ls[li];
        c->lc_col = col - 1;
    } else {
        span_linecol(c, off, &line, &col);
    }
    tpl_locw_add(&c->spanw, pc, 0, line, col);
}

/* span_resolve in loaded source src (an index of c->sources): its line found in its table of
 * line starts (made on first use), its column the code points before off on that line. */
static void span_resolve_src(tpl_comp *c, uint32_t pc, int src, uint32_t off)
{
    const struct tpl_csource *f = &c->sources[src];
    if ((size_t)src >= c->nfls) {
        size_t nn = (size_t)src + 8;
        struct tpl_fls *nf = realloc(c->fls, nn * sizeof *nf);
        if (!nf) { c_nomem(c, c->cur_off); return; }
        for (size_t i = c->nfls; i < nn; i++) nf[i] = (struct tpl_fls){ NULL, 0, 0 };
        c->fls = nf;
        c->nfls = nn;
    }
    struct tpl_fls *t = &c->fls[src];
    if (!t->ls && !(t->ls = line_starts(f->src, f->n, &t->nls, false))) { c_nomem(c, c->cur_off); return; }
    if (off > f->n) off = (uint32_t)f->n;
    size_t li = t->li = ls_find(t->ls, t->nls, t->li, off);
    uint32_t bol = t->ls[li] & ~LS_WIDE, col = off - bol + 1;
    if (t->ls[li] & LS_WIDE) col = (uint32_t)tpl_utf8_len(f->src + bol, off - bol) + 1;
    tpl_locw_add(&c->spanw, pc, (uint32_t)src + 1, (uint32_t)li + 1, col);
}

static void flush_text_now(tpl_comp *c);
/* Emits the pending text as a TEXT; out of line, so that emit's own path, which calls this
 * first, saves no registers for it when there is no text (most instructions). */
static inline void flush_text(tpl_comp *c)
{
    if (c->pending_ref || c->pending.len) flush_text_now(c);
}

/* The instructions that can read the render's scope (state names, `call`, global functions the
 * state may shadow, host functions): tpl_program_reads_located reports them with the location
 * recorded here, which is the read's own (inside an included template too), not the span
 * table's (which keeps the include statement's location). */
static bool is_read_op(int op)
{
    switch (op) {
    case TPL_OP_LOAD_NAME: case TPL_OP_LOAD_SLOT: case TPL_OP_LOAD_ROOT: case TPL_OP_LOAD_OUTER:
    case TPL_OP_LOAD_GLOBAL: case TPL_OP_CALL_NAME: case TPL_OP_LOAD_NAME_RB: case TPL_OP_LOAD_IVAR_RB:
    case TPL_OP_FMT_FIELD: case TPL_OP_HOST_CALL: case TPL_OP_HOST_FILTER: case TPL_OP_HOST_TEST:
        return true;
    default:
        return false;
    }
}

static void note_read(tpl_comp *c, uint32_t pc)
{
    if (c->failed) return;
    uint32_t off = c->read_at ? c->read_at - 1 : c->cur_off;
    c->read_at = 0;
    /* its file (0: the template itself, k: the k-th template loaded) and line and column there;
     * a cursor per file resumes from the last offset asked for (reads come mostly in source order) */
    int src = c->cur_src;
    uint32_t f = src >= 0 && (size_t)src < c->nsources ? (uint32_t)src + 1 : 0;
    if (f >= c->nrcur) {
        size_t nn = f + 8;
        struct tpl_rcur *nc = realloc(c->rcur, nn * sizeof *nc);
        if (!nc) { c_nomem(c, c->cur_off); return; }
        for (size_t i = c->nrcur; i < nn; i++) nc[i] = (struct tpl_rcur){ 0, 1, 1 };
        c->rcur = nc;
        c->nrcur = nn;
    }
    struct tpl_rcur *cur = &c->rcur[f];
    const char *s = f ? c->sources[f - 1].src : c->src;
    size_t n = f ? c->sources[f - 1].n : c->srclen;
    if (off > n) off = (uint32_t)n;
    if (!f && c->ls) {
        /* the template itself: its line found in the table of line starts (the last start at
         * or before off; ls[0] is 0), its column the code points before off on that line */
        const uint32_t *ls = c->ls;
        size_t li = c->rli = ls_find(ls, c->nls, c->rli, off);
        uint32_t bol = ls[li] & ~LS_WIDE, col = off - bol + 1;
        if (ls[li] & LS_WIDE) { /* counted from the cursor when it is on this line before off */
            uint32_t from = bol;
            col = 1;
            if (cur->line == li + 1 && cur->off >= bol && cur->off <= off) {
                from = cur->off;
                col = cur->col;
            }
            for (uint32_t o = from; o < off; o++) col += ((unsigned char)s[o] & 0xC0) != 0x80;
        }
        *cur = (struct tpl_rcur){ off, (uint32_t)li + 1, col };
        tpl_locw_add(&c->readw, pc, f, cur->line, cur->col);
        if (c->readw.failed) c_nomem(c, c->cur_off);
        return;
    }
    if (off < cur->off) *cur = (struct tpl_rcur){ 0, 1, 1 };
    for (uint32_t o = cur->off; o < off; o++) {
        unsigned char ch = (unsigned char)s[o];
        if (ch == '\n') { cur->line++; cur->col = 1; }
        else if ((ch & 0xC0) != 0x80) cur->col++;
    }
    cur->off = off;
    tpl_locw_add(&c->readw, pc, f, cur->line, cur->col); /* two notes at one pc: the later wins */
    if (c->readw.failed) c_nomem(c, c->cur_off);
}

/* Emits an instruction; `delta` is its stack effect. Returns its code offset. */
static uint32_t emit(tpl_comp *c, int op, uint32_t a, int delta)
{
    flush_text(c);
    if (a > 0xFFFFFF) { cerror(c, c->cur_off, "operand out of range"); return 0; }
    uint32_t pc = (uint32_t)c->n;
    add_span(c, pc);
    if (is_read_op(op)) note_read(c, pc);
    emit_raw(c, TPL_INSN(op, a));
    stack_effect(c, delta);
    return pc;
}

static __attribute__((noinline)) void flush_text_now(tpl_comp *c)
{
    tpl_value s;
    if (c->pending_ref) s = tpl_v_str(c->pending_ref, c->pending_ref_len);
    else if (c->pending.len) s = tpl_sb_value(&c->pending);
    else return;
    uint32_t save = c->cur_off, save_span = c->span_off;
    bool save_lock = c->span_locked;
    int save_src = c->cur_src;
    /* located where the text began: a template of the extends chain or an included one keeps
     * the location it had then (its offsets are not the main template's), whatever the
     * compile has locked or unlocked since */
    c->cur_off = c->pending_at;
    c->cur_src = c->pending_src;
    c->span_locked = c->pending_locked;
    c->span_off = c->pending_off;
    uint32_t k = add_const(c, s);
    c->pending.len = 0;
    c->pending_ref = NULL;
    emit(c, TPL_OP_TEXT, k, 0);
    c->cur_off = save;
    c->cur_src = save_src;
    c->span_locked = save_lock;
    c->span_off = save_span;
}

/* Where pending text begins: the offset its TEXT's location comes from. */
static void pending_begin(tpl_comp *c)
{
    c->pending_locked = c->span_locked;
    c->pending_off = c->span_locked ? c->span_off : c->cur_off;
    c->pending_src = c->cur_src;
    c->pending_at = c->cur_off;
}

static void emit_text(tpl_comp *c, const char *s, size_t n)
{
    if (n == 0) return;
    if (c->pending_ref) {
        /* a second piece: the borrowed first one is copied to be merged with it */
        tpl_sb_put(&c->pending, c->pending_ref, c->pending_ref_len);
        c->pending_ref = NULL;
    } else if (c->pending.len == 0) {
        pending_begin(c);
    }
    tpl_sb_put(&c->pending, s, n);
    if (c->pending.failed) c_nomem(c, c->cur_off);
}

/* emit_text for text that stays put until compilation ends (the source, the tmp arena): a
 * piece that is not merged with another is not copied before it becomes a constant. */
static void emit_text_ref(tpl_comp *c, const char *s, size_t n)
{
    if (n == 0) return;
    if (c->pending_ref || c->pending.len) { emit_text(c, s, n); return; }
    pending_begin(c);
    c->pending_ref = s;
    c->pending_ref_len = n;
}

/* Binds a label here: pending text is flushed so no TEXT merges across a jump target. */
static uint32_t here(tpl_comp *c)
{
    flush_text(c);
    return (uint32_t)c->n;
}

static void patch_a(tpl_comp *c, uint32_t pc, uint32_t target)
{
    if (c->failed) return;
    c->code[pc] = TPL_INSN(TPL_INSN_OP(c->code[pc]), target);
}

static void patch_word(tpl_comp *c, uint32_t pos, uint32_t target)
{
    if (c->failed) return;
    c->code[pos] = target;
}

/* ------------------------------------------------------------------ scopes */

/* Empties a popped scope's map m for its next use; false when it is too large to keep. */
static bool smap_reuse(tpl_smap *m)
{
    if (!m->e || m->cap > 256) return false;
    if (m->n) memset(m->e, 0, m->cap * sizeof *m->e);
    m->n = 0;
    return true;
}

static scope *push_scope(tpl_comp *c, bool boundary)
{
    scope *s = c->free_scopes;
    if (s) {
        c->free_scopes = s->parent;
        scope_var *vars = s->vars;
        uint32_t cap = s->cap;
        tpl_smap loads = s->loads, idx = s->idx;
        memset(s, 0, sizeof *s);
        s->vars = vars;
        s->cap = cap;
        /* and its maps' tables, emptied (a table per macro or loop frame kept for the whole
         * compile was ~4x a template of small macros); a large one is left (emptying it at
         * each reuse would cost its size) */
        if (smap_reuse(&loads)) s->loads = loads;
        if (smap_reuse(&idx)) s->idx = idx;
    } else {
        s = tpl_arena_alloc(c->tmp, sizeof *s);
        if (!s) { c_nomem(c, c->cur_off); return NULL; }
        memset(s, 0, sizeof *s);
    }
    s->parent = c->fn->scope;
    s->func_boundary = boundary;
    s->soft_saved = c->soft;
    s->cond_base = c->cond_depth;
    c->fn->scope = s;
    return s;
}

static void pop_scope(tpl_comp *c)
{
    scope *s = c->fn->scope;
    if (!s) return;
    c->fn->scope = s->parent;
    c->soft = s->soft_saved;
    /* nothing refers to a popped scope (saved scopes are its ancestors); after a failure a
     * pop may not match its push, so nothing is reused then */
    if (!c->failed && s != c->inc_top && s != c->root.scope) {
        s->parent = c->free_scopes;
        c->free_scopes = s;
    }
}

static uint32_t new_slot(tpl_comp *c)
{
    if (c->fn->nslots >= 0xFFFF) { cerror(c, c->cur_off, "too many variables"); return 0; }
    return c->fn->nslots++;
}

static bool name_eq(tpl_value a, const char *s, size_t n)
{
    return a.len == n && memcmp(a.u.s, s, n) == 0;
}

/* The variable of name in scope s, or NULL (names are unique in a scope: declare reuses them). */
static scope_var *scope_var_of(scope *s, tpl_value name)
{
    if (s->idx.n) {
        uint32_t i;
        return tpl_smap_get(&s->idx, name.u.s, name.len, &i) ? &s->vars[i] : NULL;
    }
    for (uint32_t i = s->nvars; i > 0; i--)
        if (name_eq(s->vars[i - 1].name, name.u.s, name.len)) return &s->vars[i - 1];
    return NULL;
}

/* The slot of name in scope s, or -1. */
static int scope_find(scope *s, tpl_value name)
{
    scope_var *v = scope_var_of(s, name);
    return v ? (int)v->slot : -1;
}

/* The key of name in scope s for func.shared ("DEPTH:name", DEPTH: the scopes from the function's
 * boundary, Jinja2's frame level there) in buf, or 0 when s lies in an included template's or a
 * block's top (a context: a function of its own in Jinja2) or the name is hidden or long. */
static size_t shared_key(const scope *s, tpl_value name, char *buf, size_t cap)
{
    unsigned depth = 0;
    for (; s && !s->func_boundary; s = s->parent) {
        if (s->ctx_top) return 0;
        depth++;
    }
    if (!s || s->ctx_top || !name.len || name.u.s[0] == '(' || name.len > 200) return 0;
    int k = snprintf(buf, cap, "%u:%.*s", depth, (int)name.len, name.u.s);
    return k > 0 && (size_t)k < cap ? (size_t)k : 0;
}

/* Whether func.shared has name of scope s: *v its entry. (Not inlined: its key buffer stays off
 * the compiler's recursive paths.) */
static __attribute__((noinline)) bool shared_slot(tpl_comp *c, const scope *s, tpl_value name, uint32_t *v)
{
    char key[256];
    size_t kn = shared_key(s, name, key, sizeof key);
    return kn && tpl_smap_get(&c->fn->shared, key, kn, v);
}

/* Declares name in the innermost scope of the current function (reusing an existing slot). */
static uint32_t declare(tpl_comp *c, tpl_value name)
{
    scope *s = c->fn->scope;
    int slot = scope_find(s, name);
    if (slot >= 0) return (uint32_t)slot;
    if (c->syn == TPL_SYN_JINJA && name_eq(name, "self", 4)) c->self_stored = true;
    uint32_t shared = 0; /* (the slot | 1 << 31 where a parameter) */
    bool found = c->fn->shared.n && c->include_depth == 0 && shared_slot(c, s, name, &shared);
    if (s->nvars == s->cap) {
        uint32_t nc = s->cap ? s->cap * 2 : 8;
        /* a large array takes a chunk of its own and gives the old one back (the root scope of
         * 60,000 sets kept every copy: issue 13 §1) */
        size_t bytes = nc * sizeof *s->vars;
        scope_var *nv = tpl_arena_table(c->tmp, bytes);
        if (!nv) { c_nomem(c, c->cur_off); return 0; }
        if (s->nvars) memcpy(nv, s->vars, s->nvars * sizeof *nv);
        if (s->vars) tpl_arena_table_free(c->tmp, s->vars, s->cap * sizeof *nv);
        s->vars = nv;
        s->cap = nc;
    }
    uint32_t sl = found ? shared & 0x7FFFFFFFu : new_slot(c);
    s->vars[s->nvars++] = (scope_var){ name, sl, false, false, false, found, found && shared >> 31, false, false, false, false };
    if (s->nvars >= SCOPE_INDEXED) {
        s->idx.arena = c->tmp;
        for (uint32_t i = s->idx.n ? s->nvars - 1 : 0; i < s->nvars; i++)
            if (!tpl_smap_put(&s->idx, s->vars[i].name.u.s, s->vars[i].name.len, i)) {
                c_nomem(c, c->cur_off);
                return 0;
            }
    }
    return sl;
}

/* R_UP: a slot of a macro two or more levels out (LOAD_UP): *slot is the slot | the number of
 * links out past the defining frame << 16 */
typedef enum { R_GLOBAL, R_LOCAL, R_ROOT, R_OUTER, R_BUILTIN, R_UP } res_kind;

/* The variable of name in f's scopes (innermost first, to the function's boundary), or NULL;
 * *crossed becomes true when the search passed the top of an included template or block. */
static scope_var *find_in_func(func *f, tpl_value name, bool *crossed)
{
    for (scope *s = f->scope; s; s = s->parent) {
        scope_var *v = scope_var_of(s, name);
        /* (read through a context: a name Jinja2 does not pass it is looked up further out) */
        if (v && !v->ctx_skip && !(v->ctx_hidden && *crossed)) return v;
        if (s->ctx_top) *crossed = true;
        if (s->func_boundary) break;
    }
    return NULL;
}

/* Resolves a name: a slot of the current function, a slot of the function it is defined in
 * (closures: macros, call-block callers, recursive loops), a template-level slot, or a global
 * (state, then builtin globals). *var (may be NULL) receives the variable found; *crossed is
 * true when a context's top lies between the read and the variable. */
static res_kind resolve_var(tpl_comp *c, tpl_value name, uint32_t *slot, scope_var **var, bool *crossed)
{
    bool cr = c->ctx_read;
    scope_var *v = find_in_func(c->fn, name, &cr);
    res_kind r = c->no_context ? R_BUILTIN : R_GLOBAL;
    if (v) r = R_LOCAL;
    func *outer = c->fn->parent;
    uint32_t hops = 0;
    if (!v && outer) {
        v = find_in_func(outer, name, &cr);
        if (v) r = outer == &c->root ? R_ROOT : R_OUTER;
        /* a variable of a function further out (Jinja2: a Python closure over it, read when the
         * macro runs): the template level's slots (LOAD_ROOT), or a macro's frame reached through
         * the chain of closures that made this one (LOAD_UP, as Lua's upvalues) */
        for (func *g = outer->parent; !v && g && !c->failed; g = g->parent) {
            hops++;
            v = find_in_func(g, name, &cr);
            /* (a template-level variable of an inlined include or import: the include's run, that
             * the outermost macro closed over at its end, through the chain too) */
            if (v) r = g != &c->root || c->include_depth > 0 ? R_UP : R_ROOT;
        }
        if (v && r == R_UP && hops > 0xFF) {
            cerror(c, c->cur_off, "unsupported: reading '%.*s', a variable of a macro more than 255 levels out",
                   (int)name.len, name.u.s);
            v = NULL;
        }
    }
    if (v) *slot = r == R_UP ? v->slot | hops << 16 : v->slot;
    if (var) *var = v;
    if (crossed) *crossed = cr;
    return v ? r : (c->no_context ? R_BUILTIN : R_GLOBAL);
}

static res_kind resolve(tpl_comp *c, tpl_value name, uint32_t *slot)
{
    return resolve_var(c, name, slot, NULL, NULL);
}

/* ------------------------------------------------------------------ expressions */

static void expr(tpl_comp *c, tpl_node *n);
static void body(tpl_comp *c, tpl_node *n);
static bool block_call(tpl_comp *c, tpl_node *n);

/* MISSING_FAIL for a macro's read of name (not inlined: its buffer stays off expr's recursion). */
static __attribute__((noinline)) void emit_missing_fail(tpl_comp *c, tpl_value name)
{
    char msg[200];
    int m = snprintf(msg, sizeof msg, "unsupported: '%.*s' is Jinja2's `missing` object here (a variable of a "
                     "loop or with block that ended, read by a macro made in it); only printing it is supported",
                     (int)(name.len > 40 ? 40 : name.len), name.u.s);
    if (m < 0 || (size_t)m >= sizeof msg) m = 0;
    emit(c, TPL_OP_MISSING_FAIL, add_const(c, tpl_v_str(msg, (size_t)m)), 0);
}

/* Whether n reads Jinja2's `self` (TemplateReference(context)): the name, not assigned here. */
static bool reads_self(tpl_comp *c, const tpl_node *n)
{
    if (c->syn != TPL_SYN_JINJA || !n || n->kind != TPL_N_NAME || !name_eq(n->val, "self", 4)) return false;
    uint32_t slot;
    res_kind r = resolve(c, n->val, &slot);
    if (r != R_GLOBAL && r != R_BUILTIN) return false;
    if (c->self_stored) {
        cerror(c, n->off, "unsupported: reading `self` after an assignment of a variable named self "
               "(Jinja2's `self` is then undefined)");
        return false;
    }
    return true;
}

/* Jinja2's repr of `self` in b: "<TemplateReference NAME>", NAME the Python repr of the context's
 * template name (None for the template compiled, as Environment.from_string names it; an
 * included or imported one's name as the statement spells it). False when tpl cannot tell it (a
 * template loaded to extend a computed parent) or its repr needs escapes. */
static bool self_repr(tpl_comp *c, tpl_sb *b)
{
    const char *nm = NULL;
    size_t nn = 0;
    if (c->ctx_src1 > 0 && (size_t)(c->ctx_src1 - 1) < c->nsources) {
        nm = c->sources[c->ctx_src1 - 1].name.u.s;
        nn = c->sources[c->ctx_src1 - 1].name.len;
    } else if (c->p->ext_parent) {
        return false;
    } else if (c->p->want_exports && c->p->name) {
        nm = c->p->name;
        nn = strlen(nm);
    }
    tpl_sb_puts(b, "<TemplateReference ");
    if (!nm) {
        tpl_sb_puts(b, "None");
    } else {
        bool sq = false, dq = false;
        for (size_t i = 0; i < nn; i++) {
            unsigned char ch = (unsigned char)nm[i];
            if (ch < 0x20 || ch >= 0x7F || ch == '\\') return false;
            if (ch == '\'') sq = true;
            if (ch == '"') dq = true;
        }
        if (sq && dq) return false;
        char q = sq ? '"' : '\'';
        tpl_sb_putc(b, q);
        tpl_sb_put(b, nm, nn);
        tpl_sb_putc(b, q);
    }
    tpl_sb_putc(b, '>');
    return !b->failed;
}

static void push_const(tpl_comp *c, tpl_value v);

/* `{{ self }}`: the TemplateReference's repr, escaped under autoescape (not inlined: its buffer
 * stays off the statement compiler's recursion). */
static __attribute__((noinline)) void print_self(tpl_comp *c, const tpl_node *e, bool ae)
{
    tpl_sb b;
    tpl_sb_init(&b, c->tmp);
    if (!self_repr(c, &b)) {
        cerror(c, e->off, "unsupported: printing `self` here (Jinja2's TemplateReference of a template "
               "loaded at run time to extend a computed parent, or a name whose repr needs escapes)");
        return;
    }
    push_const(c, tpl_v_str(b.p, b.len));
    c->cur_off = e->off;
    if (ae) emit(c, TPL_OP_ESCAPE, 0, 0);
    emit(c, sop(c, TPL_OP_PRINT_PY), 0, -1);
}

static void load_past_missing(tpl_comp *c, tpl_value name, scope_var *var);

static void load_name(tpl_comp *c, tpl_value name)
{
    uint32_t slot;
    scope_var *var;
    bool crossed;
    res_kind r = resolve_var(c, name, &slot, &var, &crossed);
    uint32_t k = add_name(c, name);
    if ((r == R_GLOBAL || r == R_BUILTIN) && c->syn == TPL_SYN_JINJA && name_eq(name, "self", 4)) {
        /* Jinja2's TemplateReference (printed with the template's loader name, compared by identity) */
        cerror(c, c->cur_off, "unsupported: `self` other than `self.BLOCK()` of a block of this template, "
               "`{{ self }}` or `self is defined` (Jinja2's TemplateReference)");
        return;
    }
    switch (r) {
    case R_GLOBAL: emit(c, TPL_OP_LOAD_NAME, k, 1); return;
    case R_BUILTIN: emit(c, TPL_OP_LOAD_GLOBAL, k, 1); return;
    case R_LOCAL: emit(c, TPL_OP_LOAD_SLOT, slot, 1); break;
    case R_ROOT: emit(c, TPL_OP_LOAD_ROOT, slot, 1); break;
    case R_OUTER: emit(c, TPL_OP_LOAD_OUTER, slot, 1); break;
    case R_UP: emit(c, TPL_OP_LOAD_UP, slot, 1); break;
    }
    emit_raw(c, k);
    bool print_bare = c->print_bare;
    c->print_bare = false;
    if (var && var->reset_param && r != R_LOCAL) {
        /* a macro reading a parameter of a loop or with block it was made in: Jinja2's `missing`
         * once the block ended (reset_frame), printed as its text; any other use is refused */
        if (print_bare) emit(c, TPL_OP_MISSING_STR, 0, 0);
        else emit_missing_fail(c, name);
    }
    if (var && var->missing && crossed) {
        /* read through a context (an included template, a block): a variable still `missing`
         * is skipped there (Jinja2's Context.new_context), so what the context of its frame's
         * function holds shows: the names around the block or include that made that context
         * (a block's: the template's top-level names it exported so far), else the state. Only
         * `missing` itself (UNDEF_MSG of frame_enter's text) is skipped, not an undefined value
         * a `set` stored (the context holds that one). */
        char msg[160];
        int m = snprintf(msg, sizeof msg, "'%.*s' is undefined", (int)name.len, name.u.s);
        if (m < 0 || (size_t)m >= sizeof msg) m = snprintf(msg, sizeof msg, "a variable is undefined");
        emit(c, TPL_OP_DUP, 0, 1);
        emit(c, TPL_OP_MISSING_IS, add_const(c, tpl_v_str(msg, (size_t)m)), 0);
        uint32_t j = emit(c, sop(c, TPL_OP_JF_PY), 0, -1);
        emit(c, TPL_OP_POP, 0, -1);
        load_past_missing(c, name, var);
        patch_a(c, j, here(c));
    }
}

/* Loads name as the context around var's frame has it: var and the variables of its name up
 * to the top of the context its frame reads through (the block or include whose function var's
 * frame is in) passed over, the read resolved again from there (a `missing` found there is
 * checked in turn); with no such top, the state's value (LOAD_NAME). */
static void load_past_missing(tpl_comp *c, tpl_value name, scope_var *var)
{
    scope *found = NULL, *top = NULL;
    for (func *g = c->fn; g && !top; g = g->parent) {
        for (scope *s = g->scope; s; s = s->parent) {
            if (!found && scope_var_of(s, name) == var) found = s;
            if (found && s->ctx_top) { top = s; break; }
            if (s->func_boundary) break;
        }
    }
    if (!top) {
        emit(c, c->no_context ? TPL_OP_LOAD_GLOBAL : TPL_OP_LOAD_NAME, add_name(c, name), 1);
        return;
    }
    /* (the recursion through load_name passes a context's top each time: as deep as blocks and
     * includes nest) */
    scope_var *marked[64];
    uint32_t nm = 0;
    bool in = false, done = false;
    for (func *g = c->fn; g && !done; g = g->parent) {
        for (scope *s = g->scope; s; s = s->parent) {
            if (s == found) in = true;
            scope_var *v = in ? scope_var_of(s, name) : NULL;
            if (v && !v->ctx_skip && nm < 64) { v->ctx_skip = true; marked[nm++] = v; }
            if (s == top) { done = true; break; }
            if (s->func_boundary) break;
        }
    }
    load_name(c, name);
    for (uint32_t i = 0; i < nm; i++) marked[i]->ctx_skip = false;
}

/* Under autoescape, what a macro or caller returns and what a set or filter block captures is
 * Markup (Jinja2: Macro.__call__ with the caller's eval context, AssignBlock, FilterBlock):
 * `safe` marks the value on the stack. */
static void emit_markup(tpl_comp *c)
{
    emit(c, TPL_OP_FILTER, (uint32_t)TPL_B_FILTER_safe, 0);
    emit_raw(c, TPL_ARGW(1, 0, TPL_NO_KW));
}

/* Whether an assignment target's names repeat (anywhere in it) or it has a namespace attribute. */
static void target_names(const tpl_node *t, tpl_value *names, uint32_t *n, bool *ns)
{
    if (t->kind == TPL_N_NAME) {
        if (*n < 256) names[(*n)++] = t->val;
        else *ns = true; /* (too many to compare: the ordered path) */
    } else if (t->kind == TPL_N_NSREF) {
        *ns = true;
    } else if (t->kind == TPL_N_TUPLE) {
        for (const tpl_node *x = t->a; x; x = x->next) target_names(x, names, n, ns);
    }
}

static bool target_needs_order(const tpl_node *t)
{
    tpl_value names[256];
    uint32_t n = 0;
    bool ns = false;
    target_names(t, names, &n, &ns);
    if (ns) return true;
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t j = i + 1; j < n; j++)
            if (names[i].len == names[j].len && memcmp(names[i].u.s, names[j].u.s, names[i].len) == 0) return true;
    return false;
}

/* How a block's body names `super`, as Jinja2's find_undeclared(block.body, ("super",)) sees it:
 * UndeclaredNameVisitor walks the body's nodes in field order (no nested block's body) and decides
 * at the first Name node `super`: a load makes the block function's `super` a parameter bound to
 * context.super(name, block) before the body runs; a store or parameter first makes it an ordinary
 * name of the frame (the context's `super`, then what the body assigns). */
enum {
    SUP_SEEN = 1,        /* the first Name node `super` found */
    SUP_FIRST_LOAD = 2,  /* ... and it is a load */
    SUP_STORE = 4,       /* the body assigns `super` somewhere (a set, macro, import alias: after a first
                          * load, Jinja2's frames alias the block's parameter there) */
    SUP_STORE_OTHER = 8, /* ... by a macro or an import alias (not a set: is_block_super refuses reads
                          * that may come after it) */
};

/* A store of `super` in a block that reads its super first (is_block_super): its variable of the
 * innermost scope is stored, and assigned for sure when the store is not in a branch of its frame. */
static void super_stored(tpl_comp *c)
{
    scope_var *v = c->fn->scope ? scope_var_of(c->fn->scope, tpl_v_str("super", 5)) : NULL;
    if (!v) return;
    v->stored = true;
    if (c->fn->scope->cond_base == c->cond_depth) v->set_done = true;
}

static void store_target(tpl_comp *c, tpl_node *t)
{
    if (t->kind == TPL_N_NAME) {
        uint32_t slot = declare(c, t->val);
        c->cur_off = t->off;
        emit(c, TPL_OP_STORE_SLOT, slot, -1);
        if ((c->cur_block_super & SUP_STORE) && name_eq(t->val, "super", 5)) super_stored(c);
        return;
    }
    if (t->kind == TPL_N_TUPLE) {
        uint32_t cnt = 0;
        for (tpl_node *x = t->a; x; x = x->next) cnt++;
        emit(c, TPL_OP_UNPACK, cnt, (int)cnt - 1);
        /* UNPACK pushes first..last: store last first */
        tpl_node *items[256];
        if (cnt > 256) { cerror(c, t->off, "too many names to unpack"); return; }
        uint32_t i = 0;
        for (tpl_node *x = t->a; x; x = x->next) items[i++] = x;
        if (!target_needs_order(t)) {
            while (i > 0) store_target(c, items[--i]);
            return;
        }
        /* a name twice (`a, a = 1, 2`) or a namespace attribute: Python assigns left to right
         * (the last value wins, the first failing namespace raises first), through temporaries */
        uint32_t tmp[256];
        while (i > 0) {
            tmp[--i] = new_slot(c);
            emit(c, TPL_OP_STORE_SLOT, tmp[i], -1);
        }
        for (i = 0; i < cnt; i++) {
            emit(c, TPL_OP_LOAD_SLOT, tmp[i], 1);
            emit_raw(c, add_name(c, tpl_v_str("(unpack)", 8)));
            store_target(c, items[i]);
        }
        return;
    }
    if (t->kind == TPL_N_NSREF) { /* (only a set statement's target has one: the grammar) */
        /* `set ns.a, b = ...`: Jinja2's NSRef assignment, the value from the stack */
        uint32_t tmp = new_slot(c);
        emit(c, TPL_OP_STORE_SLOT, tmp, -1);
        expr(c, t->a);
        emit(c, TPL_OP_LOAD_SLOT, tmp, 1);
        emit_raw(c, add_name(c, tpl_v_str("(unpack)", 8)));
        c->cur_off = t->off;
        emit(c, TPL_OP_NS_SET, add_name(c, t->val), -2);
        return;
    }
    cerror(c, t->off, "can't assign to %s", tpl_node_kind_name(t->kind));
}

/* A call with *x or **y (Jinja2's Call.dyn_args / dyn_kwargs): pushes the positional arguments as
 * one list (`extra_pos` values already on the stack first, then the arguments, then x's items:
 * ARGS_STAR) and the keyword arguments as one dict (then y's items: ARGS_DSTAR), Python's order of
 * evaluation for f(a, k=v, *x, **y); returns TPL_ARGW(2, 0, TPL_ARGW_DYN). The order Jinja2's
 * parser accepts: one *x, one **y after it, no positional argument after *x, a keyword or **y,
 * no keyword after **y. */
static void push_const(tpl_comp *c, tpl_value v);
static void compare_ops(tpl_comp *c, tpl_node *n);
static bool folds_const(const tpl_node *n);
static bool holds_filter(const tpl_node *n, int depth);
static bool folds_const_path(const tpl_node *n);

static uint32_t call_args_dyn(tpl_comp *c, tpl_node *args, int extra_pos)
{
    tpl_node *star = NULL, *dstar = NULL;
    bool kw = false;
    uint32_t npos = (uint32_t)extra_pos, nkw = 0;
    for (tpl_node *a = args; a; a = a->next) {
        bool ok = true;
        switch (a->kind) {
        case TPL_N_STARARG: ok = !star && !dstar; star = a; break;
        case TPL_N_STARKW: ok = !dstar; dstar = a; break;
        case TPL_N_KWARG:
            /* (a call block's caller= comes last: Jinja2 passes it with the keywords) */
            ok = !dstar || (a->a && a->a->kind == TPL_N_NAME && name_eq(a->a->val, "(caller)", 8));
            kw = true;
            nkw++;
            for (tpl_node *b = args; b != a; b = b->next)
                if (b->kind == TPL_N_KWARG && b->val.len == a->val.len && memcmp(b->val.u.s, a->val.u.s, a->val.len) == 0) {
                    cerror(c, a->off, "keyword argument repeated");
                    return 0;
                }
            break;
        default: ok = !star && !dstar && !kw; npos++; break;
        }
        if (!ok) { cerror(c, a->off, "invalid syntax for function call expression"); return 0; }
    }
    if (npos > 255 || nkw > 255) { cerror(c, c->cur_off, "too many arguments"); return 0; }
    for (tpl_node *a = args; a; a = a->next)
        if (a->kind == TPL_N_ARG) expr(c, a->a);
    emit(c, TPL_OP_BUILD_TUPLE, npos, 1 - (int)npos);
    if (star) {
        expr(c, star->a);
        c->cur_off = star->off;
        emit(c, TPL_OP_ARGS_STAR, 0, -1);
    }
    for (tpl_node *a = args; a; a = a->next)
        if (a->kind == TPL_N_KWARG) {
            push_const(c, a->val);
            expr(c, a->a);
        }
    emit(c, TPL_OP_BUILD_MAP, nkw, 1 - 2 * (int)nkw);
    if (dstar) {
        expr(c, dstar->a);
        c->cur_off = dstar->off;
        emit(c, TPL_OP_ARGS_DSTAR, 0, -1);
    }
    return TPL_ARGW(2, 0, TPL_ARGW_DYN);
}

/* Pushes call arguments; returns the call-argument word. `extra_pos` positional values are
 * already on the stack (the filter subject). */
static uint32_t call_args(tpl_comp *c, tpl_node *args, int extra_pos)
{
    uint32_t npos = (uint32_t)extra_pos, nkw = 0;
    tpl_value kwn[64];
    for (tpl_node *a = args; a; a = a->next)
        if (a->kind == TPL_N_STARARG || a->kind == TPL_N_STARKW) return call_args_dyn(c, args, extra_pos);
    for (tpl_node *a = args; a; a = a->next) {
        if (a->kind == TPL_N_ARG) {
            if (nkw) { cerror(c, a->off, "invalid syntax for function call expression"); return 0; }
            expr(c, a->a);
            npos++;
        } else {
            if (nkw >= 64) { cerror(c, a->off, "too many keyword arguments"); return 0; }
            for (uint32_t i = 0; i < nkw; i++)
                if (kwn[i].len == a->val.len && memcmp(kwn[i].u.s, a->val.u.s, a->val.len) == 0) {
                    cerror(c, a->off, "keyword argument repeated");
                    return 0;
                }
            expr(c, a->a);
            kwn[nkw++] = a->val;
        }
    }
    if (npos > 255) { cerror(c, c->cur_off, "too many arguments"); return 0; }
    uint32_t k = TPL_NO_KW;
    if (nkw) {
        tpl_list *l = tpl_list_new(&c->p->arena, nkw);
        if (!l) { c_nomem(c, c->cur_off); return 0; }
        for (uint32_t i = 0; i < nkw; i++) {
            char *s = tpl_arena_strdup(&c->p->arena, kwn[i].u.s, kwn[i].len);
            if (!s || !tpl_list_push(&c->p->arena, l, tpl_v_str(s, kwn[i].len))) { c_nomem(c, c->cur_off); return 0; }
        }
        tpl_value lv = tpl_v_list(l);
        lv.flags = TPL_F_TUPLE;
        k = add_const(c, lv);
        if (k >= TPL_NO_KW) { cerror(c, c->cur_off, "too many constants"); return 0; }
    }
    return TPL_ARGW(npos, nkw, k);
}

static int argw_count(uint32_t w) { return (int)(TPL_ARGW_NPOS(w) + TPL_ARGW_NKW(w)); }

static bool const_truthy(tpl_value v, bool *t)
{
    switch (v.type) {
    case TPL_T_NONE: *t = false; return true;
    case TPL_T_BOOL: case TPL_T_INT: *t = v.u.i != 0; return true;
    case TPL_T_FLOAT: *t = v.u.f != 0.0; return isfinite(v.u.f); /* (inf: Jinja2's `if inf:` is a NameError) */
    case TPL_T_STR: *t = v.len != 0; return true;
    default: return false;
    }
}

static void push_const(tpl_comp *c, tpl_value v)
{
    switch (v.type) {
    case TPL_T_NONE: emit(c, TPL_OP_NONE, 0, 1); return;
    case TPL_T_BOOL: emit(c, v.u.i ? TPL_OP_TRUE : TPL_OP_FALSE, 0, 1); return;
    case TPL_T_INT: /* (a Jinja int CPython does not cache is a constant: TPL_F_LIT) */
        if (v.u.i >= -(1 << 22) && v.u.i < (1 << 22) && (c->syn != TPL_SYN_JINJA || (v.u.i >= -5 && v.u.i <= 256))) {
            emit(c, TPL_OP_INT, (uint32_t)(v.u.i & 0xFFFFFF), 1);
            return;
        }
        break;
    default: break;
    }
    emit(c, TPL_OP_CONST, add_const(c, v), 1);
}

/* Folds int/str arithmetic on constants; false when it can't (or must not) fold. */
static bool fold_binop(int op, tpl_value a, tpl_value b, tpl_value *out) /* op: TPL_AOP_* */
{
    if (a.type == TPL_T_INT && b.type == TPL_T_INT) {
        int64_t r;
        switch (op) {
        case TPL_AOP_ADD: if (__builtin_add_overflow(a.u.i, b.u.i, &r)) return false; break;
        case TPL_AOP_SUB: if (__builtin_sub_overflow(a.u.i, b.u.i, &r)) return false; break;
        case TPL_AOP_MUL: if (__builtin_mul_overflow(a.u.i, b.u.i, &r)) return false; break;
        default: return false;
        }
        *out = tpl_v_int(r);
        return true;
    }
    return false;
}

/* *v = the number a constant subtree folds to as Jinja2's optimizer folds it (int, float, bool
 * as int; -, + and folding int arithmetic); false when it is not such a subtree. */
static bool num_const(const tpl_node *n, tpl_value *v, int depth)
{
    if (!n || depth > 50) return false;
    if (n->kind == TPL_N_CONST) {
        if (n->val.type != TPL_T_INT && n->val.type != TPL_T_FLOAT && n->val.type != TPL_T_BOOL) return false;
        *v = n->val.type == TPL_T_BOOL ? tpl_v_int(n->val.u.i != 0) : n->val;
        return true;
    }
    if (n->kind == TPL_N_UNOP && (n->op == TPL_AOP_NEG || n->op == TPL_AOP_POS)) {
        if (!num_const(n->a, v, depth + 1)) return false;
        if (n->op == TPL_AOP_POS) return true;
        if (v->type == TPL_T_INT) {
            if (v->u.i == INT64_MIN) return false;
            v->u.i = -v->u.i;
        } else v->u.f = -v->u.f;
        return true;
    }
    tpl_value a, b;
    return n->kind == TPL_N_BINOP && num_const(n->a, &a, depth + 1) && num_const(n->b, &b, depth + 1) &&
           fold_binop(n->op, a, b, v);
}

/* The double a constant subtree of float arithmetic folds to as Jinja2's optimizer folds it
 * (Python's IEEE +, -, *, / and //, an int operand converted; *fl: a float), where tpl needs to
 * know whether it is inf or nan: false where Python raises (a division by zero) or tpl does not
 * follow (**, %, a big int). */
static bool float_const(const tpl_node *n, double *d, bool *fl, int depth)
{
    tpl_value v;
    if (!n || depth > 50) return false;
    if (num_const(n, &v, depth)) {
        *fl = v.type == TPL_T_FLOAT;
        *d = *fl ? v.u.f : (double)v.u.i;
        return true;
    }
    if (n->kind == TPL_N_UNOP && (n->op == TPL_AOP_NEG || n->op == TPL_AOP_POS)) {
        if (!float_const(n->a, d, fl, depth + 1) || !*fl) return false;
        if (n->op == TPL_AOP_NEG) *d = -*d;
        return true;
    }
    double a, b;
    bool fa, fb;
    if (n->kind != TPL_N_BINOP || !float_const(n->a, &a, &fa, depth + 1) || !float_const(n->b, &b, &fb, depth + 1) ||
        !(fa || fb))
        return false;
    *fl = true;
    switch (n->op) {
    case TPL_AOP_ADD: *d = a + b; return true;
    case TPL_AOP_SUB: *d = a - b; return true;
    case TPL_AOP_MUL: *d = a * b; return true;
    case TPL_AOP_DIV: if (b == 0) return false; *d = a / b; return true;
    case TPL_AOP_FLOORDIV: { /* float_floor_div (Objects/floatobject.c _float_div_mod) */
        if (b == 0) return false;
        double mod = fmod(a, b), div = (a - mod) / b;
        if (mod && ((b < 0) != (mod < 0))) div -= 1.0;
        if (div) {
            double f = floor(div);
            if (div - f > 0.5) f += 1.0;
            div = f;
        } else div = copysign(0.0, a / b);
        *d = div;
        return true;
    }
    default: return false;
    }
}

/* A str literal CPython does not share between two lexer tokens: not '' nor one Latin-1 character. */
static bool own_str_literal(const tpl_node *n)
{
    if (!n || n->kind != TPL_N_CONST || n->val.type != TPL_T_STR || (n->val.flags & TPL_F_SAFE)) return false;
    tpl_value x = n->val;
    bool latin1_char = (x.len == 1 && (unsigned char)x.u.s[0] < 0x80) || (x.len == 2 && ((unsigned char)x.u.s[0] & 0xFE) == 0xC2);
    return x.len > 0 && !latin1_char;
}

/* An operand Jinja2's optimizer folds in a comparison, counting the methods of str literals it
 * binds (*meth): constants, attributes of them, lists and tuples of them. */
static bool folds_with_methods(const tpl_node *n, int *meth)
{
    if (!n) return false;
    if (n->kind == TPL_N_GETATTR && own_str_literal(n->a)) { ++*meth; return true; }
    if (n->kind == TPL_N_LIST || n->kind == TPL_N_TUPLE) {
        for (const tpl_node *x = n->a; x; x = x->next)
            if (!folds_with_methods(x, meth)) return false;
        return true;
    }
    return folds_const(n);
}

static void compare(tpl_comp *c, tpl_node *n)
{
    /* 'ab'.upper == 'ab'.upper: Jinja2 folds the comparison on the objects its lexer made, two
     * strs, so two methods bound to different objects (False); tpl merges equal literals into one
     * constant, so such a comparison takes each literal as its own */
    int meth = 0;
    bool folded = folds_with_methods(n->a, &meth);
    for (const tpl_node *o = n->b; o && folded; o = o->next) folded = folds_with_methods(o->a, &meth);
    bool own = c->own_str_attr;
    c->own_str_attr = folded && meth > 0;
    compare_ops(c, n);
    c->own_str_attr = own;
}

static void compare_ops(tpl_comp *c, tpl_node *n)
{
    expr(c, n->a);
    size_t mark = tpl_c_chain_begin(c); /* the exits of a chain (a < b < c ...: any length, as Jinja2) */
    uint32_t tmp = 0;
    bool chain = n->b && n->b->next;
    if (chain) tmp = new_slot(c);
    for (tpl_node *o = n->b; o; o = o->next) {
        expr(c, o->a);
        if (o->next) {
            emit(c, TPL_OP_DUP, 0, 1);
            emit(c, TPL_OP_STORE_SLOT, tmp, -1);
        }
        c->cur_off = o->off;
        switch (o->op) {
        case TPL_AOP_EQ: emit(c, TPL_OP_EQ, 0, -1); break;
        case TPL_AOP_NE: emit(c, TPL_OP_NE, 0, -1); break;
        case TPL_AOP_LT: emit(c, TPL_OP_LT, 0, -1); break;
        case TPL_AOP_LE: emit(c, TPL_OP_LE, 0, -1); break;
        case TPL_AOP_GT: emit(c, TPL_OP_GT, 0, -1); break;
        case TPL_AOP_GE: emit(c, TPL_OP_GE, 0, -1); break;
        case TPL_AOP_IN: emit(c, TPL_OP_IN, 0, -1); break;
        case TPL_AOP_NOTIN: emit(c, TPL_OP_IN, 0, -1); emit(c, sop(c, TPL_OP_NOT_PY), 0, 0); break;
        default: cerror(c, o->off, "bad comparison"); return;
        }
        if (o->next) {
            tpl_c_chain_jump(c, emit(c, sop(c, TPL_OP_JF_PY_KEEP), 0, -1));
            emit(c, TPL_OP_LOAD_SLOT, tmp, 1);
            emit_raw(c, add_name(c, tpl_v_str("(comparison)", 12)));
        }
    }
    tpl_c_chain_end(c, mark);
}

/* True when the compile options name a host function `name` of that kind (tpl_options.host_funcs). */
static bool host_func(const tpl_comp *c, tpl_value name, tpl_host_kind kind)
{
    const tpl_options *o = &c->p->opts;
    for (size_t i = 0; o->host_funcs && i < o->nhost_funcs; i++) {
        const tpl_host_func *h = &o->host_funcs[i];
        if (h->kind == kind && h->name && strlen(h->name) == name.len && memcmp(h->name, name.u.s, name.len) == 0)
            return true;
    }
    return false;
}

bool tpl_c_host_func(const tpl_comp *c, tpl_value name, int kind)
{
    return host_func(c, name, (tpl_host_kind)kind);
}

/* An unknown filter or test: a compile error, except inside an if or inline-if, where Jinja2
 * compiles it and fails only when that code runs. */
static bool env_autoescape(const tpl_comp *c);

static void unknown_callable(tpl_comp *c, tpl_node *n, const char *what)
{
    /* Jinja2's texts exactly (no "Did you mean": tpl's message is Jinja2's) */
    char msg[200];
    snprintf(msg, sizeof msg, "No %s named '%.*s'.", what, (int)n->val.len, n->val.u.s);
    if (!c->soft) { cfail(c, TPL_EK_ASSERTION, n->off, "%s", msg); return; }
    /* Jinja2's run-time text (its pull_dependencies stub) */
    snprintf(msg, sizeof msg, "No %s named '%.*s' found.", what, (int)n->val.len, n->val.u.s);
    c->cur_off = n->off;
    emit(c, TPL_OP_FAIL, add_const(c, tpl_v_str(msg, strlen(msg))), 1);
}

/* Records a tr() call whose text is node `text` (NULL: unknown, not a literal). */
static void note_tr(tpl_comp *c, uint32_t off, const tpl_node *text)
{
    if (c->failed) return;
    if (!grow((void **)&c->trcalls, &c->trcap, c->ntrcalls + 1, sizeof *c->trcalls)) {
        c_nomem(c, off);
        return;
    }
    int32_t k = -1;
    if (text && text->kind == TPL_N_CONST && text->val.type == TPL_T_STR) k = (int32_t)add_const(c, text->val);
    c->trcalls[c->ntrcalls++] = (tpl_trcall){ off, k, -1, -1, TPL_TRFN_TR };
}

/* The i-th positional argument of a call (NULL: fewer). */
static const tpl_node *pos_arg(const tpl_node *args, int i)
{
    for (const tpl_node *a = args; a; a = a->next)
        if (a->kind == TPL_N_ARG && i-- == 0) return a->a;
    return NULL;
}

static int32_t lit_const(tpl_comp *c, const tpl_node *n)
{
    return n && n->kind == TPL_N_CONST && n->val.type == TPL_T_STR ? (int32_t)add_const(c, n->val) : -1;
}

/* A gettext-family call (builtin b) for tr-extract, as Babel's Jinja extractor reads it: the
 * message (and plural, context) literals by position. */
static void note_gettext(tpl_comp *c, uint32_t off, int b, const tpl_node *args)
{
    if (c->failed) return;
    uint8_t fn = b == TPL_B_GLOBAL_gettext ? TPL_TRFN_GETTEXT : b == TPL_B_GLOBAL_underscore ? TPL_TRFN_UNDERSCORE
               : b == TPL_B_GLOBAL_ngettext ? TPL_TRFN_NGETTEXT : b == TPL_B_GLOBAL_pgettext ? TPL_TRFN_PGETTEXT
               : TPL_TRFN_NPGETTEXT;
    int first = fn == TPL_TRFN_PGETTEXT || fn == TPL_TRFN_NPGETTEXT;
    bool plural = fn == TPL_TRFN_NGETTEXT || fn == TPL_TRFN_NPGETTEXT;
    if (!grow((void **)&c->trcalls, &c->trcap, c->ntrcalls + 1, sizeof *c->trcalls)) {
        c_nomem(c, off);
        return;
    }
    tpl_trcall t = { off, lit_const(c, pos_arg(args, first)), plural ? lit_const(c, pos_arg(args, first + 1)) : -1,
                     first ? lit_const(c, pos_arg(args, 0)) : -1, fn };
    if (plural && t.plural < 0) t.k = -1; /* not extractable without its plural literal */
    if (first && t.ctx < 0) t.k = -1;
    c->trcalls[c->ntrcalls++] = t;
}

/* The text argument of a tr(...) call: the first positional argument or text=... */
static const tpl_node *tr_text_arg(const tpl_node *args)
{
    for (const tpl_node *a = args; a; a = a->next) {
        if (a->kind == TPL_N_ARG) return a->a;
        if (a->kind == TPL_N_KWARG && a->val.len == 4 && memcmp(a->val.u.s, "text", 4) == 0) return a->a;
    }
    return NULL;
}

/* `a + b + c ...` (a left-leaning chain of +, not foldable): counts the operands, and with
 * emit compiles them left to right, for one ADDS / PRINT_ADDS instead of a chain of ADDs. */
static bool fold_check(tpl_comp *c, const tpl_node *n);

static bool name_in(tpl_value name, const char *const *list);

static bool add_link(const tpl_node *n)
{
    return n->kind == TPL_N_BINOP && n->op == TPL_AOP_ADD && !(n->a->kind == TPL_N_CONST && n->b->kind == TPL_N_CONST);
}

/* The name x reads an item or attribute of by a constant key (m['role'], m.role), else NULL. */
static const tpl_node *item_root(const tpl_node *x)
{
    if ((x->kind == TPL_N_GETATTR || (x->kind == TPL_N_GETITEM && x->b->kind == TPL_N_CONST)) && x->a->kind == TPL_N_NAME)
        return x->a;
    return NULL;
}

/* Whether evaluating operand x of a + chain cannot raise once the operands before it (the chain
 * prev) were evaluated: a literal, a name, an item or attribute of a name that an earlier operand
 * already read one of (that name is no undefined value then: m['role'] + ... + m['content']), and
 * outside strict mode a filter that only stringifies such an operand (|trim, |string, ...). */
static bool add_operand_safe(const tpl_comp *c, const tpl_node *x, const tpl_node *prev)
{
    if (x->kind == TPL_N_CONST || x->kind == TPL_N_NAME) return true;
    const tpl_node *r = item_root(x);
    if (r) {
        for (int i = 0; i < 16 && prev; i++) {
            const tpl_node *y = add_link(prev) ? prev->b : prev, *yr;
            while (y->kind == TPL_N_FILTER && y->a) y = y->a;
            if ((yr = item_root(y)) && yr->val.len == r->val.len && memcmp(yr->val.u.s, r->val.u.s, r->val.len) == 0)
                return true;
            prev = add_link(prev) ? prev->a : NULL;
        }
        return false;
    }
    if (x->kind == TPL_N_FILTER && x->a && !c->p->opts.strict) {
        static const char *const str_only[] = { "trim", "string", "lower", "upper", "e", "escape", "title",
                                                "capitalize", NULL };
        if (!x->b && name_in(x->val, str_only)) return add_operand_safe(c, x->a, prev);
    }
    return false;
}

static void add_chain_emit(tpl_comp *c, tpl_node *s, const tpl_node *stop)
{
    if (s == stop) return;
    add_chain_emit(c, s->a, stop);
    expr(c, s->b);
}

/* Jinja2 adds left to right, so an operand after the second is evaluated after the additions
 * before it: where it may raise (add_operand_safe), the chain before it is one operand (its own
 * chain, compiled first), so that `s + n + undef.x` fails on the addition, as Jinja2 does. */
uint32_t tpl_add_chain_cut(tpl_node *n, bool (*link)(const tpl_node *x),
                           bool (*safe)(void *ctx, const tpl_node *x, const tpl_node *prev), void *ctx,
                           tpl_node **cut)
{
    *cut = n;
    if (!link(n)) return 1;
    uint32_t m = 0;
    tpl_node *s = n;
    for (; link(s); s = s->a) m++;
    tpl_node *leaf = s;
    *cut = leaf;
    uint32_t i = 0;
    for (s = n; m - i >= 2; s = s->a, i++)
        if (!safe(ctx, s->b, s->a)) { *cut = s->a; break; }
    return *cut == leaf ? m + 1 : i + 2;
}

static bool add_operand_safe_cb(void *c, const tpl_node *x, const tpl_node *prev)
{
    return add_operand_safe(c, x, prev);
}

static uint32_t add_chain(tpl_comp *c, tpl_node *n, bool emit_operands)
{
    tpl_node *cut;
    uint32_t nadd = tpl_add_chain_cut(n, add_link, add_operand_safe_cb, c, &cut);
    if (emit_operands) {
        expr(c, cut);
        if (nadd > 1) add_chain_emit(c, n, cut);
    }
    return nadd;
}

/* Prints the `+` chain n of nadd >= 2 operands (add_chain), an error in it located at off: its
 * string literals, when it has any (and at most TPL_ADDS_K_MAX operands), are items of
 * PRINT_ADDS_K's constant tuple instead of pushed values ('<|start_header_id|>' + m['role'] +
 * '<|end_header_id|>': one instruction where the CONSTs were three more); else PRINT_ADDS. */
static void print_adds_inner(tpl_comp *c, tpl_node *n, uint32_t nadd, uint32_t off)
{
    tpl_node *ops[TPL_ADDS_K_MAX];
    uint32_t nk = 0;
    uint64_t klen = 0;
    if (nadd <= TPL_ADDS_K_MAX) { /* the operands, as add_chain walks them */
        tpl_node *x = n;
        for (uint32_t i = nadd; i > 1; x = x->a) ops[--i] = x->b;
        ops[0] = x;
        for (uint32_t i = 0; i < nadd; i++)
            if (ops[i]->kind == TPL_N_CONST && ops[i]->val.type == TPL_T_STR && !ops[i]->val.flags) {
                nk++;
                klen += ops[i]->val.len;
            }
    }
    if (!nk || klen > 0xFFFFFF) { /* (the literals' length is an operand word) */
        add_chain(c, n, true);
        c->cur_off = off;
        emit(c, TPL_OP_PRINT_ADDS, nadd, -(int)nadd);
        return;
    }
    tpl_list *l = tpl_list_new(&c->p->arena, nadd);
    if (!l) { c_nomem(c, c->cur_off); return; }
    for (uint32_t i = 0; i < nadd; i++) {
        tpl_value item = tpl_v_none(); /* None: the next value on the stack */
        if (ops[i]->kind == TPL_N_CONST && ops[i]->val.type == TPL_T_STR && !ops[i]->val.flags) {
            item = ops[i]->val;
            if (!(item.u.s = tpl_arena_strdup(&c->p->arena, item.u.s, item.len))) { c_nomem(c, c->cur_off); return; }
        } else {
            expr(c, ops[i]);
        }
        if (!tpl_list_push(&c->p->arena, l, item)) { c_nomem(c, c->cur_off); return; }
    }
    bool alt = nadd == 2 * (nadd - nk) + 1; /* literal, value, literal, ..., literal? */
    for (uint32_t i = 0; alt && i < nadd; i++) alt = (l->items[i].type == TPL_T_STR) == !(i & 1);
    if (alt) l->items[1].flags |= TPL_F_ADDS_ALT;
    tpl_value lv = tpl_v_list(l);
    lv.flags = TPL_F_TUPLE;
    uint32_t k = add_const(c, lv);
    c->cur_off = off;
    emit(c, TPL_OP_PRINT_ADDS_K, nadd - nk, -(int)(nadd - nk));
    emit_raw(c, k);
    emit_raw(c, (uint32_t)klen);
}

static void print_adds(tpl_comp *c, tpl_node *n, uint32_t nadd, uint32_t off)
{
    bool hide = fold_check(c, n); /* ([1[:1]] + [2] printed: [Undefined, 2]) */
    c->inf_hidden += hide;
    print_adds_inner(c, n, nadd, off);
    c->inf_hidden -= hide;
}

static bool const_literal(const tpl_node *n)
{
    if (!n) return true;
    if (n->kind == TPL_N_CONST) return n->val.type != TPL_T_UNDEF;
    if (n->kind == TPL_N_LIST || n->kind == TPL_N_TUPLE || n->kind == TPL_N_DICT || n->kind == TPL_N_PAIR) {
        if (n->kind == TPL_N_PAIR) return const_literal(n->a) && const_literal(n->b);
        for (const tpl_node *x = n->a; x; x = x->next)
            if (!const_literal(x)) return false;
        return true;
    }
    return false;
}

static bool name_in(tpl_value name, const char *const *list)
{
    for (; *list; list++)
        if (strlen(*list) == name.len && memcmp(*list, name.u.s, name.len) == 0) return true;
    return false;
}

/* How Jinja2's optimizer folds filter name over a folded Undefined (nodes.Filter.as_const: a
 * filter of Jinja2's that takes no context): 1 its value has a safe repr (kept wherever it is
 * used), 2 maybe not (kept where a filter or test that folds takes it or it is printed), 3 a lazy
 * value (kept where a filter or test takes it: printed, its repr has an address); 0 not folded
 * (checked against the oracle: tests/cases/jinja-scope7 fold-*). */
static int fold_filter_kind(tpl_value name)
{
    static const char *const safe[] = { "capitalize", "center", "count", "d", "default", "e", "escape", "forceescape",
                                        "format", "join", "length", "list", "lower", "pprint", "safe", "sort", "string",
                                        "striptags", "sum", "title", "trim", "upper", "urlencode", "wordcount", "urlize", "replace",
                                        NULL };
    static const char *const any[] = { "first", "last", "max", "min", "truncate", NULL };
    static const char *const lazy[] = { "reverse", "unique", "items", "batch", "slice", NULL };
    return name_in(name, safe) ? 1 : name_in(name, any) ? 2 : name_in(name, lazy) ? 3 : 0;
}

/* Whether Jinja2's test name folds over a folded Undefined (nodes.Test.as_const) as tpl's test of
 * an undefined value answers (checked against the oracle). */
static bool fold_test(tpl_value name)
{
    static const char *const tests[] = { "defined", "undefined", "none", "string", "number", "integer", "float",
                                         "mapping", "iterable", "sequence", "boolean", "false", "true", "lower",
                                         "upper", "eq", "ne", "==", "!=", "equalto", "in", "callable", "escaped", "filter", "test",
                                         NULL };
    return name_in(name, tests);
}

/* Jinja2's constant folding of an expression that holds a failing slice of literals (Getitem.as_const
 * through Environment.getitem: an Undefined). The optimizer keeps a folded node where its value has
 * a safe repr (nodes.Const.from_untrusted), and the code generator folds the child of an output at
 * once (_output_child_to_const); a failing slice folded neither way is sliced at run time (Python's
 * TypeError). fold_val computes what Node.as_const gives: F_NO (Impossible), F_SAFE (a safe repr),
 * F_UNDEF (the Undefined itself), F_UNSAFE (holds one, or maybe is one), F_LAZY (an iterator, its
 * repr has an address); truth is bool() of the value (-1 unknown). Anything not modelled is F_NO: the
 * slice raises, as Jinja2's does where it is not folded (checked against the oracle:
 * tests/cases/jinja-scope10 fold-*). */
enum { F_NO, F_SAFE, F_UNDEF, F_UNSAFE, F_LAZY };
/* ty: the Python type of a folded value, where tpl knows it (TY_UNK not) */
enum { TY_UNK, TY_NONE, TY_BOOL, TY_INT, TY_FLOAT, TY_STR, TY_LIST, TY_TUPLE, TY_DICT };
typedef struct { int8_t k, truth, ty; } fold_v;

static fold_v fold_val(const tpl_comp *c, const tpl_node *n, int depth);

static fold_v fv_make(int k, int truth) { fold_v v = { (int8_t)k, (int8_t)truth, TY_UNK }; return v; }
static fold_v fv_typed(int k, int truth, int ty) { fold_v v = { (int8_t)k, (int8_t)truth, (int8_t)ty }; return v; }
static bool ty_num(int ty) { return ty == TY_BOOL || ty == TY_INT || ty == TY_FLOAT; }
static bool ty_index(int ty) { return ty == TY_BOOL || ty == TY_INT; }

/* the value a list, tuple or dict holding items of these kinds has */
static int fv_holding(int worst, int k)
{
    if (k == F_UNDEF) k = F_UNSAFE;
    return k > worst ? k : worst;
}

static int folded_int(const tpl_node *n, int64_t *v, bool *big, int depth);

/* The int value of an index-typed folded node: 1 with *v, 2 an int past int64, 0 unknown. */
static int fold_index(const tpl_node *n, int64_t *v)
{
    tpl_value x;
    if (num_const(n, &x, 0) && x.type == TPL_T_INT) { *v = x.u.i; return 1; }
    bool big = false;
    if (folded_int(n, v, &big, 0)) return big ? 2 : 1;
    return 0;
}

/* Whether attr may be an attribute of a value of type ty (Python 3.11 and later; dunders always):
 * where it is not, Environment.getattr falls back to an item and then makes an Undefined. */
static bool ty_has_attr(int ty, tpl_value attr)
{
    static const char *const num[] = { "as_integer_ratio", "bit_count", "bit_length", "conjugate", "denominator",
                                       "from_bytes", "imag", "numerator", "real", "to_bytes", "is_integer",
                                       "fromhex", "hex", NULL };
    static const char *const str[] = { "capitalize", "casefold", "center", "count", "encode", "endswith", "expandtabs",
                                       "find", "format", "format_map", "index", "isalnum", "isalpha", "isascii",
                                       "isdecimal", "isdigit", "isidentifier", "islower", "isnumeric", "isprintable",
                                       "isspace", "istitle", "isupper", "join", "ljust", "lower", "lstrip", "maketrans",
                                       "partition", "removeprefix", "removesuffix", "replace", "rfind", "rindex", "rjust",
                                       "rpartition", "rsplit", "rstrip", "split", "splitlines", "startswith", "strip",
                                       "swapcase", "title", "translate", "upper", "zfill", NULL };
    static const char *const seq[] = { "append", "clear", "copy", "count", "extend", "index", "insert", "pop",
                                       "remove", "reverse", "sort", NULL };
    static const char *const dict[] = { "clear", "copy", "fromkeys", "get", "items", "keys", "pop", "popitem",
                                        "setdefault", "update", "values", NULL };
    if (attr.len == 0 || attr.u.s[0] == '_') return true;
    switch (ty) {
    case TY_NONE: return false;
    case TY_BOOL: case TY_INT: case TY_FLOAT: return name_in(attr, num);
    case TY_STR: return name_in(attr, str);
    case TY_LIST: case TY_TUPLE: return name_in(attr, seq);
    case TY_DICT: return name_in(attr, dict);
    default: return true;
    }
}

/* The value of a dict display's item by a constant key (the last pair of an equal key, as the dict
 * keeps it): 1 found (*v its fold), 0 no such key, -1 tpl cannot tell (a key not a None, bool,
 * int or str literal). */
static int dict_lookup(const tpl_comp *c, const tpl_node *d, const tpl_node *key, int depth, fold_v *v)
{
    tpl_value k;
    if (key->kind == TPL_N_CONST) k = key->val;
    else if (!num_const(key, &k, 0)) return -1;
    if (k.type == TPL_T_BOOL) k = tpl_v_int(k.u.i != 0);
    if (k.type != TPL_T_NONE && k.type != TPL_T_INT && k.type != TPL_T_STR) return -1;
    const tpl_node *hit = NULL;
    for (const tpl_node *x = d->a; x; x = x->next) {
        if (x->kind != TPL_N_PAIR || x->a->kind != TPL_N_CONST) return -1;
        tpl_value y = x->a->val;
        if (y.type == TPL_T_BOOL) y = tpl_v_int(y.u.i != 0);
        if (y.type != TPL_T_NONE && y.type != TPL_T_INT && y.type != TPL_T_STR) return -1;
        if (y.type != k.type) continue;
        if ((y.type == TPL_T_INT && y.u.i == k.u.i) || y.type == TPL_T_NONE ||
            (y.type == TPL_T_STR && y.len == k.len && memcmp(y.u.s, k.u.s, k.len) == 0))
            hit = x->b;
    }
    if (!hit) return 0;
    *v = fold_val(c, hit, depth + 1);
    return 1;
}

/* The length of a list or tuple display or a str literal: false when it is none of them. */
static bool display_len(const tpl_node *a, int64_t *len)
{
    *len = 0;
    if (a->kind == TPL_N_LIST || a->kind == TPL_N_TUPLE) {
        for (const tpl_node *x = a->a; x; x = x->next) ++*len;
        return true;
    }
    if (a->kind == TPL_N_CONST && a->val.type == TPL_T_STR) {
        for (uint32_t b = 0; b < a->val.len; b++) *len += ((unsigned char)a->val.u.s[b] & 0xC0) != 0x80;
        return true;
    }
    return false;
}

/* bool() of a folding slice n of a display or literal by int or None bounds (Python's
 * PySlice_AdjustIndices: a non-empty slice is true), -1 when tpl cannot tell. */
static int slice_truth(const tpl_node *n)
{
    int64_t len, b[3] = { 0, 0, 1 };
    bool given[3] = { false, false, false };
    const tpl_node *parts[3] = { n->b, n->c, n->d };
    if (!display_len(n->a, &len)) return -1;
    for (int i = 0; i < 3; i++) {
        if (!parts[i] || (parts[i]->kind == TPL_N_CONST && parts[i]->val.type == TPL_T_NONE)) continue;
        if (fold_index(parts[i], &b[i]) != 1) return -1;
        if (b[i] < -(INT64_C(1) << 40) || b[i] > (INT64_C(1) << 40)) return -1;
        given[i] = true;
    }
    int64_t step = b[2];
    if (step == 0) return -1;
    int64_t start = given[0] ? b[0] : step < 0 ? len - 1 : 0;
    int64_t stop = given[1] ? b[1] : step < 0 ? -1 - len : len; /* (a default stop is past the end) */
    if (given[0]) {
        if (start < 0) start += len;
        if (start < 0) start = step < 0 ? -1 : 0;
        else if (start >= len) start = step < 0 ? len - 1 : len;
    }
    if (given[1]) {
        if (stop < 0) stop += len;
        if (stop < 0) stop = step < 0 ? -1 : 0;
        else if (stop >= len) stop = step < 0 ? len - 1 : len;
    } else if (step < 0) stop = -1;
    return step > 0 ? start < stop : stop < start;
}

/* Jinja2's fold of a slice (nodes.Getitem.as_const through Environment.getitem): 1 it fails with
 * a TypeError or LookupError (an Undefined: `1[:1]`, `(1, 2)[0][:1]`, `'ab'[:1.5]`, `'ab'[:1[0]]`),
 * 0 it slices (*v the value), -1 it is not folded (an operand tpl does not fold, an Undefined
 * sliced, step 0: raised, so sliced at run time). */
static int fold_slice(const tpl_comp *c, const tpl_node *n, int depth, fold_v *v)
{
    fold_v o = fold_val(c, n->a, depth + 1);
    if ((o.k != F_SAFE && o.k != F_UNSAFE) || o.ty == TY_UNK) return -1;
    bool seq = o.ty == TY_STR || o.ty == TY_LIST || o.ty == TY_TUPLE;
    const tpl_node *parts[3] = { n->d, n->b, n->c }; /* step first, as PySlice_Unpack */
    int fails = 0;
    for (int i = 0; i < 3; i++) {
        if (!parts[i]) continue;
        fold_v p = fold_val(c, parts[i], depth + 1);
        if (p.k == F_NO || p.k == F_LAZY || (p.k == F_SAFE && p.ty == TY_UNK)) return -1;
        if (fails) continue;
        if (p.k == F_SAFE && (ty_index(p.ty) || p.ty == TY_NONE)) {
            int64_t step;
            if (i == 0 && p.ty != TY_NONE && seq) {
                int r = fold_index(parts[0], &step);
                if (!r || (r == 1 && step == 0)) return -1; /* (step 0: Python's ValueError, raised) */
            }
            continue;
        }
        fails = 1; /* (a float, str, list, Undefined ... as an index: TypeError) */
    }
    if (!seq) return 1; /* an int, float, bool or None: not subscriptable; a dict: no such key */
    if (fails) return 1;
    *v = fv_typed(o.k, slice_truth(n), o.ty);
    return 0;
}

/* Jinja2's fold of an item (nodes.Getitem.as_const: Environment.getitem, a failure is an
 * Undefined; a str key falls back to an attribute, which tpl follows for no type). */
static fold_v fold_getitem(const tpl_comp *c, const tpl_node *n, int depth)
{
    fold_v o = fold_val(c, n->a, depth + 1);
    if ((o.k != F_SAFE && o.k != F_UNSAFE) || o.ty == TY_UNK) return fv_make(F_NO, -1);
    fold_v k = fold_val(c, n->b, depth + 1);
    if (k.k == F_NO || k.k == F_LAZY || (k.k == F_SAFE && k.ty == TY_UNK)) return fv_make(F_NO, -1);
    bool idx = k.k == F_SAFE && ty_index(k.ty);
    if (k.k == F_SAFE && k.ty == TY_STR && o.ty != TY_DICT) return fv_make(F_NO, -1);
    int64_t i = 0;
    int r;
    switch (o.ty) {
    case TY_NONE: case TY_BOOL: case TY_INT: case TY_FLOAT: return fv_make(F_UNDEF, 0); /* (not subscriptable) */
    case TY_LIST: case TY_TUPLE: case TY_STR: {
        if (!idx) return fv_make(F_UNDEF, 0); /* (indices must be integers) */
        if (!(r = fold_index(n->b, &i))) return fv_make(F_NO, -1);
        if (r == 2) return fv_make(F_UNDEF, 0); /* (IndexError: cannot fit an int past int64) */
        int64_t len = 0;
        const tpl_node *a = n->a;
        if (a->kind == TPL_N_LIST || a->kind == TPL_N_TUPLE) {
            for (const tpl_node *x = a->a; x; x = x->next) len++;
        } else if (a->kind == TPL_N_CONST && a->val.type == TPL_T_STR) {
            for (uint32_t b = 0; b < a->val.len; b++) len += ((unsigned char)a->val.u.s[b] & 0xC0) != 0x80;
        } else return fv_make(F_NO, -1);
        if (i < 0) i += len;
        if (i < 0 || i >= len) return fv_make(F_UNDEF, 0);
        if (a->kind == TPL_N_CONST) return fv_typed(F_SAFE, 1, TY_STR);
        const tpl_node *x = a->a;
        while (i-- > 0) x = x->next;
        return fold_val(c, x, depth + 1);
    }
    case TY_DICT: {
        if (n->a->kind != TPL_N_DICT) return fv_make(F_NO, -1);
        if (c->p->opts.strict && k.k != F_SAFE) return fv_make(F_NO, -1); /* (hash(StrictUndefined) raises) */
        if (k.k == F_UNDEF || (k.k == F_SAFE && (k.ty == TY_LIST || k.ty == TY_DICT))) {
            /* (an Undefined matches no key but an Undefined; a list or dict is unhashable) */
            for (const tpl_node *x = n->a->a; x; x = x->next)
                if (x->kind != TPL_N_PAIR || fold_val(c, x->a, depth + 1).k != F_SAFE) return fv_make(F_NO, -1);
            return fv_make(F_UNDEF, 0);
        }
        fold_v v;
        r = dict_lookup(c, n->a, n->b, depth, &v);
        return r < 0 ? fv_make(F_NO, -1) : r ? v : fv_make(F_UNDEF, 0);
    }
    default: return fv_make(F_NO, -1);
    }
}

/* Jinja2's fold of an attribute (nodes.Getattr.as_const: Environment.getattr, then an item, then an
 * Undefined): tpl folds where the type has no such attribute. */
static fold_v fold_getattr(const tpl_comp *c, const tpl_node *n, int depth)
{
    fold_v o = fold_val(c, n->a, depth + 1);
    if ((o.k != F_SAFE && o.k != F_UNSAFE) || o.ty == TY_UNK || ty_has_attr(o.ty, n->val)) return fv_make(F_NO, -1);
    if (o.ty != TY_DICT) return fv_make(F_UNDEF, 0);
    if (n->a->kind != TPL_N_DICT) return fv_make(F_NO, -1);
    tpl_node key = { .kind = TPL_N_CONST, .val = n->val };
    fold_v v;
    int r = dict_lookup(c, n->a, &key, depth, &v);
    return r < 0 ? fv_make(F_NO, -1) : r ? v : fv_make(F_UNDEF, 0);
}

/* The type of a binary operation on two values of known types: TY_UNK unknown, -1 Python raises
 * (a TypeError, a division by zero). */
static int binop_ty(int op, fold_v a, fold_v b, const tpl_node *an, const tpl_node *bn)
{
    if (a.ty == TY_UNK || b.ty == TY_UNK) return TY_UNK;
    if (op == TPL_AOP_POW && ty_index(a.ty) && ty_index(b.ty)) {
        int64_t x, y;
        int r = fold_index(bn, &y);
        if (r != 1) return TY_UNK;
        if (y >= 0) return TY_INT;
        if (fold_index(an, &x) == 1 && x == 0) return -1; /* (0 ** -1: ZeroDivisionError) */
        return TY_FLOAT;
    }
    if (ty_num(a.ty) && ty_num(b.ty)) {
        tpl_value z;
        bool zero = num_const(bn, &z, 0) && (z.type == TPL_T_INT ? z.u.i == 0 : z.u.f == 0);
        if ((op == TPL_AOP_DIV || op == TPL_AOP_FLOORDIV || op == TPL_AOP_MOD) && zero) return -1;
        if (op == TPL_AOP_DIV || a.ty == TY_FLOAT || b.ty == TY_FLOAT) return op == TPL_AOP_POW ? TY_UNK : TY_FLOAT;
        if (op == TPL_AOP_POW) return TY_UNK;
        return TY_INT;
    }
    switch (op) {
    case TPL_AOP_ADD:
        return a.ty == b.ty && (a.ty == TY_STR || a.ty == TY_LIST || a.ty == TY_TUPLE) ? a.ty : -1;
    case TPL_AOP_MUL:
        if ((a.ty == TY_STR || a.ty == TY_LIST || a.ty == TY_TUPLE) && ty_index(b.ty)) return a.ty;
        if ((b.ty == TY_STR || b.ty == TY_LIST || b.ty == TY_TUPLE) && ty_index(a.ty)) return b.ty;
        return -1;
    case TPL_AOP_MOD: return a.ty == TY_STR ? TY_STR : -1;
    default: return -1;
    }
}

/* Whether a filter or test call of builtin `kind` with the subject and the positional arguments
 * args binds to its signature (else Python's TypeError: the fold is Impossible). */
static bool fold_binds(tpl_builtin_kind kind, tpl_value name, const tpl_node *args)
{
    tpl_builtin_sig sg;
    int b = tpl_builtin_find(kind, name.u.s, name.len);
    if (b < 0 || !tpl_builtin_signature(b, &sg)) return false;
    int np = 1;
    for (const tpl_node *x = args; x; x = x->next) {
        if (x->kind != TPL_N_ARG) return false;
        np++;
    }
    return np >= sg.nrequired && (sg.varargs >= 0 || np <= sg.npositional);
}

static fold_v fold_filter_val(const tpl_comp *c, const tpl_node *n, int depth)
{
    int fk = c->ae_volatile ? 0 : fold_filter_kind(n->val);
    if (!fk || !n->a || !fold_binds(TPL_BK_FILTER, n->val, n->b)) return fv_make(F_NO, -1); /* (`1|first(1)`) */
    fold_v s = fold_val(c, n->a, depth + 1);
    if (s.k == F_NO) return s;
    if (c->p->opts.strict && s.k != F_SAFE) { /* (what StrictUndefined lets through: an isinstance test, a repr) */
        static const char *const st_safe[] = { "default", "d", "length", "count", "list", "first", "last", NULL };
        if (!name_in(n->val, st_safe) || (s.k == F_UNDEF && !name_eq(n->val, "default", 7) && !name_eq(n->val, "d", 1)))
            return fv_make(F_NO, -1);
    }
    fold_v arg0 = fv_make(F_NO, -1);
    for (const tpl_node *x = n->b; x; x = x->next) {
        if (x->kind != TPL_N_ARG) return fv_make(F_NO, -1);
        fold_v a = fold_val(c, x->a, depth + 1);
        if (a.k == F_NO || a.k == F_LAZY) return fv_make(F_NO, -1);
        if (x == n->b) arg0 = a;
    }
    if (name_eq(n->val, "default", 7) || name_eq(n->val, "d", 1)) {
        /* an Undefined takes the default; with boolean=true a false value too */
        const tpl_node *bn = n->b ? n->b->next : NULL;
        fold_v b = bn ? fold_val(c, bn->a, depth + 1) : fv_make(F_SAFE, 0);
        if (b.truth < 0 || (b.truth && s.truth < 0)) return fv_make(F_NO, -1);
        bool take = s.k == F_UNDEF || (b.truth && !s.truth);
        return take ? (n->b ? arg0 : fv_make(F_SAFE, 0)) : s;
    }
    if (name_eq(n->val, "list", 4) || name_eq(n->val, "sort", 4)) /* list(Undefined) is [] */
        return s.k == F_UNDEF ? fv_make(F_SAFE, 0) : s.k == F_SAFE ? fv_make(F_SAFE, -1) : fv_make(F_UNSAFE, -1);
    if (name_eq(n->val, "sum", 3)) /* (an Undefined item fails the addition) */
        return s.k == F_UNDEF || s.k == F_SAFE ? fv_make(F_SAFE, -1) : fv_make(F_NO, -1);
    if (name_eq(n->val, "max", 3) || name_eq(n->val, "min", 3)) /* (an Undefined item fails the comparison) */
        return s.k == F_SAFE ? fv_make(F_SAFE, -1) : s.k == F_UNDEF ? s : fv_make(F_NO, -1);
    if (name_eq(n->val, "first", 5) || name_eq(n->val, "last", 4)) { /* (of nothing: an Undefined) */
        if (s.k == F_UNDEF) return s;
        if (n->a->kind == TPL_N_LIST || n->a->kind == TPL_N_TUPLE) {
            const tpl_node *x = n->a->a;
            if (!x) return fv_make(F_UNDEF, 0);
            if (n->val.len == 4) while (x->next) x = x->next;
            return fold_val(c, x, depth + 1);
        }
    }
    if (fk == 1) {
        static const char *const ints[] = { "length", "count", "wordcount", NULL };
        static const char *const strs[] = { "capitalize", "center", "format", "join", "lower", "pprint", "string", "striptags",
                                            "title", "trim", "upper", "urlencode", "urlize", "replace", NULL };
        return fv_typed(F_SAFE, -1, name_in(n->val, ints) ? TY_INT : name_in(n->val, strs) ? TY_STR : TY_UNK);
    }
    if (fk == 2) return fv_make(F_UNSAFE, -1);
    return fv_make(F_LAZY, 1);
}

/* Whether `'...' % v` formats a value holding an Undefined (v a failing fold, or a display holding
 * one) without raising: a str literal whose conversions are all %s, %r or %a (str() and repr() of an
 * Undefined are '' and 'Undefined'; %d raises), one per item of a tuple display, else one or none.
 * no_str: str() of the value raises (a StrictUndefined's): %r and %a only. */
static bool mod_str_folds(const tpl_node *fmt, const tpl_node *v, bool no_str)
{
    if (fmt->kind != TPL_N_CONST || fmt->val.type != TPL_T_STR) return false;
    size_t nconv = 0, nargs = 1;
    const char *p = fmt->val.u.s, *e = p + fmt->val.len;
    while (p < e) {
        if (*p++ != '%') continue;
        while (p < e && strchr("#0- +.123456789", *p)) p++;
        if (p < e && *p == '%') { p++; continue; }
        if (p >= e || !strchr(no_str ? "ra" : "sra", *p)) return false; /* (a mapping key, a '*' width, a number) */
        p++;
        nconv++;
    }
    if (v->kind == TPL_N_TUPLE) {
        nargs = 0;
        for (const tpl_node *x = v->a; x; x = x->next) nargs++;
    }
    return nconv == nargs || (v->kind != TPL_N_TUPLE && nconv == 0); /* ('x' % u: an Undefined, a list or a
                                                                        dict has __getitem__, a mapping) */
}

/* Python's `a OP b` of two number literals (int, bool, float; no big int): 1 true, 0 false, -1 not
 * decided here. */
static int const_cmp(const tpl_node *a, int op, const tpl_node *b)
{
    if (a->kind != TPL_N_CONST || b->kind != TPL_N_CONST) return -1;
    tpl_value x = a->val, y = b->val;
    bool xi = x.type == TPL_T_INT || x.type == TPL_T_BOOL, yi = y.type == TPL_T_INT || y.type == TPL_T_BOOL;
    if ((!xi && x.type != TPL_T_FLOAT) || (!yi && y.type != TPL_T_FLOAT)) return -1;
    int c;
    if (xi && yi) {
        c = x.u.i < y.u.i ? -1 : x.u.i > y.u.i;
    } else {
        if ((xi && (x.u.i > (1LL << 53) || x.u.i < -(1LL << 53))) || (yi && (y.u.i > (1LL << 53) || y.u.i < -(1LL << 53))))
            return -1; /* (an exact int-float comparison) */
        double p = xi ? (double)x.u.i : x.u.f, q = yi ? (double)y.u.i : y.u.f;
        if (isnan(p) || isnan(q)) return op == TPL_AOP_NE;
        c = p < q ? -1 : p > q;
    }
    switch (op) {
    case TPL_AOP_EQ: return c == 0;
    case TPL_AOP_NE: return c != 0;
    case TPL_AOP_LT: return c < 0;
    case TPL_AOP_LE: return c <= 0;
    case TPL_AOP_GT: return c > 0;
    case TPL_AOP_GE: return c >= 0;
    default: return -1;
    }
}

/* Python's comparison of two list (or two tuple) displays, where it is decided without a TypeError:
 * item by item, the first pair that is not equal is ordered (two numbers, two strs, two displays of
 * one kind again), equal up to the shorter one the lengths are (`[1] < [2]`, `(1, 'a') < (1, 'b')`,
 * `[] < [1]`). -1, 0, 1 as a is less, equal, greater; SEQ_UNDECIDED where tpl does not decide (not
 * folded: compared at run time). */
enum { SEQ_UNDECIDED = 2 };
static int seq_order(const tpl_node *a, const tpl_node *b, int depth)
{
    if (!a || !b || a->kind != b->kind || (a->kind != TPL_N_LIST && a->kind != TPL_N_TUPLE) || depth > 50)
        return SEQ_UNDECIDED;
    const tpl_node *x = a->a, *y = b->a;
    for (; x && y; x = x->next, y = y->next) {
        if (x->kind == TPL_N_LIST || x->kind == TPL_N_TUPLE) {
            int r = seq_order(x, y, depth + 1);
            if (r) return r;
            continue;
        }
        if (x->kind != TPL_N_CONST || y->kind != TPL_N_CONST) return SEQ_UNDECIDED;
        tpl_value p = x->val, q = y->val;
        if (p.type == TPL_T_STR && q.type == TPL_T_STR) { /* (UTF-8 bytes order as code points) */
            int r = memcmp(p.u.s, q.u.s, p.len < q.len ? p.len : q.len);
            if (!r && p.len == q.len) continue;
            return r < 0 || (!r && p.len < q.len) ? -1 : 1;
        }
        int eq = const_cmp(x, TPL_AOP_EQ, y);
        if (eq < 0) return SEQ_UNDECIDED; /* (a str and a number: not equal, then not ordered) */
        if (!eq) {
            int lt = const_cmp(x, TPL_AOP_LT, y), gt = const_cmp(x, TPL_AOP_GT, y);
            return lt == 1 ? -1 : gt == 1 ? 1 : SEQ_UNDECIDED; /* (nan) */
        }
    }
    return x ? 1 : y ? -1 : 0;
}

static fold_v fold_val(const tpl_comp *c, const tpl_node *n, int depth)
{
    if (!n || depth > 50 || c->syn != TPL_SYN_JINJA) return fv_make(F_NO, -1);
    /* strict: StrictUndefined's __str__, __bool__, __eq__, __hash__, __len__, __iter__ raise, so a fold
     * that calls one on the Undefined is not made (the slice raises at run time) */
    bool st = c->p->opts.strict;
    switch (n->kind) {
    case TPL_N_CONST:
        switch (n->val.type) {
        case TPL_T_NONE: return fv_typed(F_SAFE, 0, TY_NONE);
        case TPL_T_BOOL: return fv_typed(F_SAFE, n->val.u.i != 0, TY_BOOL);
        case TPL_T_INT: return fv_typed(F_SAFE, n->val.u.i != 0, TY_INT);
        case TPL_T_FLOAT: return fv_typed(F_SAFE, n->val.u.f != 0, TY_FLOAT);
        case TPL_T_STR: return fv_typed(F_SAFE, n->val.len != 0, (n->val.flags & TPL_F_SAFE) ? TY_UNK : TY_STR);
        case TPL_T_BIGINT: return fv_typed(F_SAFE, 1, TY_INT);
        default: return fv_make(F_NO, -1);
        }
    case TPL_N_SLICE: {
        fold_v v;
        int r = fold_slice(c, n, depth, &v);
        return r > 0 ? fv_make(F_UNDEF, 0) : r == 0 ? v : fv_make(F_NO, -1);
    }
    case TPL_N_GETITEM: return fold_getitem(c, n, depth);
    case TPL_N_GETATTR: return fold_getattr(c, n, depth);
    case TPL_N_LIST: case TPL_N_TUPLE: case TPL_N_DICT: {
        int worst = F_SAFE;
        for (const tpl_node *x = n->a; x; x = x->next) {
            if (n->kind == TPL_N_DICT) {
                if (x->kind != TPL_N_PAIR) return fv_make(F_NO, -1);
                fold_v k = fold_val(c, x->a, depth + 1);
                if (k.k == F_NO || k.k == F_LAZY || (st && k.k != F_SAFE)) return fv_make(F_NO, -1); /* (hash(StrictUndefined) raises) */
                worst = fv_holding(worst, k.k);
                k = fold_val(c, x->b, depth + 1);
                if (k.k == F_NO) return k;
                worst = fv_holding(worst, k.k);
            } else {
                fold_v k = fold_val(c, x, depth + 1);
                if (k.k == F_NO) return k;
                worst = fv_holding(worst, k.k);
            }
        }
        return fv_typed(worst, n->a != NULL, n->kind == TPL_N_LIST ? TY_LIST : n->kind == TPL_N_TUPLE ? TY_TUPLE : TY_DICT);
    }
    case TPL_N_UNOP: {
        fold_v a = fold_val(c, n->a, depth + 1);
        if (n->op == TPL_AOP_NOT)
            return a.k == F_NO || (st && a.k == F_UNDEF) ? fv_make(F_NO, -1) : fv_typed(F_SAFE, a.truth < 0 ? -1 : !a.truth, TY_BOOL);
        if (a.k != F_SAFE || (a.ty != TY_UNK && !ty_num(a.ty))) return fv_make(F_NO, -1); /* (-'a': a TypeError) */
        return fv_typed(F_SAFE, a.ty == TY_UNK ? -1 : a.truth, a.ty == TY_BOOL ? TY_INT : a.ty);
    }
    case TPL_N_BINOP: {
        fold_v a = fold_val(c, n->a, depth + 1), b = fold_val(c, n->b, depth + 1);
        if (a.k == F_NO || a.k == F_LAZY || b.k == F_NO || b.k == F_LAZY) return fv_make(F_NO, -1);
        if (n->op == TPL_AOP_MOD && a.k == F_SAFE && a.ty == TY_STR && b.k != F_SAFE)
            return mod_str_folds(n->a, n->b, st && (b.k == F_UNDEF || n->b->kind == TPL_N_TUPLE)) ?
                   fv_typed(F_SAFE, -1, TY_STR) : fv_make(F_NO, -1);
        if (a.k == F_SAFE && b.k == F_SAFE) {
            int ty = binop_ty(n->op, a, b, n->a, n->b);
            return ty < 0 ? fv_make(F_NO, -1) : fv_typed(F_SAFE, -1, ty);
        }
        if (a.k == F_UNDEF || b.k == F_UNDEF) return fv_make(F_NO, -1); /* (Undefined + 1: UndefinedError) */
        /* a list or tuple holding an Undefined: [u] + [1], (u,) * 2 */
        int ty = binop_ty(n->op, a, b, n->a, n->b);
        if ((ty != TY_LIST && ty != TY_TUPLE) || n->op == TPL_AOP_MOD) return fv_make(F_NO, -1);
        return fv_typed(F_UNSAFE, -1, ty);
    }
    case TPL_N_CONCAT:
        for (const tpl_node *x = n->a; x; x = x->next) {
            fold_v k = fold_val(c, x, depth + 1);
            if (k.k == F_NO || k.k == F_LAZY || (st && k.k == F_UNDEF)) return fv_make(F_NO, -1);
        }
        return fv_typed(F_SAFE, -1, TY_STR);
    case TPL_N_AND: case TPL_N_OR: {
        fold_v a = fold_val(c, n->a, depth + 1);
        if (a.k == F_NO || a.truth < 0 || (st && a.k == F_UNDEF)) return fv_make(F_NO, -1);
        if ((n->kind == TPL_N_AND) == (a.truth == 0)) return a;
        return fold_val(c, n->b, depth + 1);
    }
    case TPL_N_CONDEXPR: {
        fold_v t = fold_val(c, n->a, depth + 1);
        if (t.k == F_NO || t.truth < 0 || (st && t.k == F_UNDEF)) return fv_make(F_NO, -1);
        if (t.truth) return fold_val(c, n->b, depth + 1);
        return n->c ? fold_val(c, n->c, depth + 1) : fv_make(F_NO, -1);
    }
    case TPL_N_COMPARE: {
        fold_v l = fold_val(c, n->a, depth + 1);
        if (l.k == F_NO || (st && l.k != F_SAFE)) return fv_make(F_NO, -1);
        const tpl_node *ln = n->a;
        int truth = 1;
        for (const tpl_node *o = n->b; o; o = o->next) {
            fold_v r = fold_val(c, o->a, depth + 1);
            if (r.k == F_NO || (st && r.k != F_SAFE)) return fv_make(F_NO, -1);
            bool clean = l.k == F_SAFE && r.k == F_SAFE;
            switch (o->op) {
            case TPL_AOP_EQ: case TPL_AOP_NE: break;
            case TPL_AOP_IN: case TPL_AOP_NOTIN:
                /* (`x in Undefined` iterates nothing; an Undefined in a list display compares
                 * equal or not; in a str it is a TypeError) */
                if (!clean && r.k != F_UNDEF && o->a->kind != TPL_N_LIST && o->a->kind != TPL_N_TUPLE)
                    return fv_make(F_NO, -1);
                /* (Python raises where the container is not one or the item cannot be in it:
                 * `1 in 'a'`, `'a' in 1`, `[] in {}`; the fold raises, so it is made at run time) */
                if (clean && !(r.ty == TY_LIST || r.ty == TY_TUPLE || (r.ty == TY_STR && l.ty == TY_STR) ||
                               (r.ty == TY_DICT && l.ty != TY_UNK && l.ty != TY_LIST && l.ty != TY_DICT)))
                    return fv_make(F_NO, -1);
                break;
            default:
                if (!clean) return fv_make(F_NO, -1);
                /* (an order of other types is a TypeError: `1 > {}`, `'a' < 1`; of lists or
                 * tuples maybe, item by item) */
                if (!(ty_num(l.ty) && ty_num(r.ty)) && !(l.ty == TY_STR && r.ty == TY_STR) &&
                    !(l.ty == r.ty && (l.ty == TY_LIST || l.ty == TY_TUPLE) && seq_order(ln, o->a, depth) != SEQ_UNDECIDED))
                    return fv_make(F_NO, -1);
            }
            /* Compare.as_const stops at the first false comparison (`1 < 0 < {}` is False, the
             * `0 < {}` never made): decided here for two number literals */
            int t = const_cmp(ln, o->op, o->a), so = t < 0 ? seq_order(ln, o->a, depth) : SEQ_UNDECIDED;
            if (so != SEQ_UNDECIDED) {
                switch (o->op) {
                case TPL_AOP_EQ: t = so == 0; break;
                case TPL_AOP_NE: t = so != 0; break;
                case TPL_AOP_LT: t = so < 0; break;
                case TPL_AOP_LE: t = so <= 0; break;
                case TPL_AOP_GT: t = so > 0; break;
                case TPL_AOP_GE: t = so >= 0; break;
                default: break;
                }
            }
            if (t == 0) return fv_typed(F_SAFE, 0, TY_BOOL);
            if (t < 0) truth = -1;
            l = r;
            ln = o->a;
        }
        return fv_typed(F_SAFE, truth, TY_BOOL);
    }
    case TPL_N_FILTER: return fold_filter_val(c, n, depth);
    case TPL_N_TEST: {
        if (c->ae_volatile || !fold_test(n->val) || !fold_binds(TPL_BK_TEST, n->val, n->b)) return fv_make(F_NO, -1);
        fold_v s = fold_val(c, n->a, depth + 1);
        if (s.k == F_NO) return s;
        static const char *const st_safe[] = { "defined", "undefined", "none", "string", "number", "integer", "float",
                                               "mapping", "iterable", "sequence", "boolean", "false", "true",
                                               "callable", "escaped", NULL };
        if (st && s.k != F_SAFE && !name_in(n->val, st_safe)) return fv_make(F_NO, -1);
        for (const tpl_node *x = n->b; x; x = x->next)
            if (x->kind != TPL_N_ARG || !const_literal(x->a)) return fv_make(F_NO, -1);
        return fv_typed(F_SAFE, -1, TY_BOOL);
    }
    default: return fv_make(F_NO, -1);
    }
}

/* Marks the failing slices the folding of n (whose fold_val is not F_NO) evaluates: each compiles
 * to an Undefined (tpl_comp.undef_slices). */
static void fold_mark(tpl_comp *c, const tpl_node *n, int depth)
{
    if (!n || depth > 50) return;
    switch (n->kind) {
    case TPL_N_SLICE: {
        fold_v v;
        int r = fold_slice(c, n, depth, &v);
        if (r >= 0) { /* (it slices or fails: a failing slice inside it is an Undefined, its operands
                       * still run for their errors) */
            fold_mark(c, n->a, depth + 1);
            fold_mark(c, n->b, depth + 1);
            fold_mark(c, n->c, depth + 1);
            fold_mark(c, n->d, depth + 1);
        }
        if (r != 1) return;
        for (size_t i = 0; i < c->nundef_slices; i++)
            if (c->undef_slices[i] == n) return;
        if (c->nundef_slices < sizeof c->undef_slices / sizeof *c->undef_slices) c->undef_slices[c->nundef_slices++] = n;
        return;
    }
    case TPL_N_LIST: case TPL_N_TUPLE: case TPL_N_DICT: case TPL_N_CONCAT:
        for (const tpl_node *x = n->a; x; x = x->next) fold_mark(c, x, depth + 1);
        return;
    case TPL_N_PAIR: case TPL_N_BINOP: case TPL_N_GETITEM: fold_mark(c, n->a, depth + 1); fold_mark(c, n->b, depth + 1); return;
    case TPL_N_UNOP: case TPL_N_ARG: case TPL_N_GETATTR: fold_mark(c, n->a, depth + 1); return;
    case TPL_N_AND: case TPL_N_OR: {
        fold_mark(c, n->a, depth + 1);
        fold_v a = fold_val(c, n->a, depth + 1);
        if ((n->kind == TPL_N_AND) != (a.truth == 0)) fold_mark(c, n->b, depth + 1);
        return;
    }
    case TPL_N_CONDEXPR: {
        fold_mark(c, n->a, depth + 1);
        fold_mark(c, fold_val(c, n->a, depth + 1).truth ? n->b : n->c, depth + 1);
        return;
    }
    case TPL_N_COMPARE:
        fold_mark(c, n->a, depth + 1);
        for (const tpl_node *o = n->b; o; o = o->next) fold_mark(c, o->a, depth + 1);
        return;
    case TPL_N_FILTER: case TPL_N_TEST:
        fold_mark(c, n->a, depth + 1);
        for (const tpl_node *x = n->b; x; x = x->next) fold_mark(c, x, depth + 1);
        return;
    default: return;
    }
}

/* Whether a failing slice was marked by fold_mark (the mark is taken). */
static bool take_undef_slice(tpl_comp *c, const tpl_node *n)
{
    for (size_t i = 0; i < c->nundef_slices; i++)
        if (c->undef_slices[i] == n) {
            c->undef_slices[i] = c->undef_slices[--c->nundef_slices];
            return true;
        }
    return false;
}

/* Jinja2 folds a `~` whose operands are all constant expressions (literals, operators on them,
 * and filters that take no context: `"<"|safe`, `x|xmlattr` of a literal) into one plain str
 * (nodes.Concat.as_const), so even under autoescape no operand counts as Markup there. */
/* Whether n folds (folds_const), or is an attribute or constant item of what folds (Jinja2 folds
 * Getattr and Getitem too). */
static bool folds_const_path(const tpl_node *n)
{
    while (n && (n->kind == TPL_N_GETATTR || (n->kind == TPL_N_GETITEM && folds_const(n->b)))) n = n->a;
    return n && folds_const(n);
}

/* Whether the subtree n holds a filter call. */
static bool holds_filter(const tpl_node *n, int depth)
{
    if (!n || depth > 64) return depth > 64;
    if (n->kind == TPL_N_FILTER) return true;
    const tpl_node *kids[] = { n->a, n->b, n->c, tpl_node_d(n), tpl_node_e(n) };
    for (size_t i = 0; i < sizeof kids / sizeof *kids; i++)
        for (const tpl_node *x = kids[i]; x; x = x->next)
            if (holds_filter(x, depth + 1)) return true;
    return false;
}

static bool folds_const(const tpl_node *n)
{
    if (!n) return true;
    switch (n->kind) {
    case TPL_N_CONST: return true;
    case TPL_N_ARG: case TPL_N_KWARG: case TPL_N_UNOP: return folds_const(n->a);
    case TPL_N_BINOP: case TPL_N_GETITEM: case TPL_N_PAIR: return folds_const(n->a) && folds_const(n->b);
    case TPL_N_SLICE: return folds_const(n->a) && folds_const(n->b) && folds_const(n->c) && folds_const(n->d);
    case TPL_N_CONCAT: case TPL_N_LIST: case TPL_N_TUPLE: case TPL_N_DICT:
        for (const tpl_node *x = n->a; x; x = x->next)
            if (!folds_const(x)) return false;
        return true;
    case TPL_N_AND: case TPL_N_OR: return folds_const(n->a) && folds_const(n->b);
    case TPL_N_CONDEXPR: return n->c && folds_const(n->a) && folds_const(n->b) && folds_const(n->c);
    case TPL_N_COMPARE: /* (`(1 == 1) ~ "<x>"|safe`: a plain str, escaped) */
        if (!folds_const(n->a)) return false;
        for (const tpl_node *o = n->b; o; o = o->next)
            if (!folds_const(o->a)) return false;
        return true;
    case TPL_N_TEST:
        if (!n->a || tpl_builtin_find(TPL_BK_TEST, n->val.u.s, n->val.len) < 0) return false;
        for (const tpl_node *x = n->b; x; x = x->next)
            if (!folds_const(x)) return false;
        return folds_const(n->a);
    case TPL_N_FILTER: {
        /* the filters that take the context (map, select, ...) do not fold */
        static const char *const ctx_filters[] = { "map", "select", "reject", "selectattr", "rejectattr", "random", "tr" };
        if (!n->a) return false;
        for (size_t i = 0; i < sizeof ctx_filters / sizeof *ctx_filters; i++)
            if (n->val.len == strlen(ctx_filters[i]) && memcmp(n->val.u.s, ctx_filters[i], n->val.len) == 0) return false;
        if (tpl_builtin_find(TPL_BK_FILTER, n->val.u.s, n->val.len) < 0) return false;
        for (const tpl_node *x = n->b; x; x = x->next)
            if (!folds_const(x)) return false;
        return folds_const(n->a);
    }
    default: return false;
    }
}

/* Whether an expression applies a filter anywhere (Jinja2's Filter.as_const refuses to fold in a
 * volatile eval context). */
static bool has_filter(const tpl_node *n)
{
    for (; n; n = n->next) {
        if (n->kind == TPL_N_FILTER) return true;
        if (has_filter(n->a) || has_filter(n->b) || has_filter(n->c) || has_filter(tpl_node_d(n)) ||
            has_filter(tpl_node_e(n)))
            return true;
    }
    return false;
}

static bool concat_folds(const tpl_node *n)
{
    for (const tpl_node *x = n->a; x; x = x->next)
        if (!folds_const(x)) return false;
    return true;
}

/* `x is sameas y` with one positional argument: 2 when both are literals, 1 when both are other
 * constant expressions (Jinja2's optimizer folds the test on objects it makes), else 0. */
static int sameas_consts(const tpl_node *n)
{
    const tpl_node *arg = n->b;
    if (!n->a || !arg || arg->kind != TPL_N_ARG || arg->next || !arg->a) return 0;
    if (n->a->kind == TPL_N_CONST && arg->a->kind == TPL_N_CONST && !(n->a->val.flags & TPL_F_SAFE) &&
        !(arg->a->val.flags & TPL_F_SAFE) && n->a->val.type != TPL_T_LIST && n->a->val.type != TPL_T_MAP)
        return 2;
    return folds_const(n->a) && folds_const(arg->a) ? 1 : 0;
}

/* The int a constant expression of int literals and + - * ** folds to: 1 with *v (big: past int64), 0 when
 * it is no such expression (or Python would raise). */
static int folded_int(const tpl_node *n, int64_t *v, bool *big, int depth)
{
    if (depth > 50 || !n) return 0;
    if (n->kind == TPL_N_CONST) {
        if (n->val.type == TPL_T_INT) { *v = n->val.u.i; *big = false; return 1; }
        if (n->val.type == TPL_T_BIGINT) { *big = true; return 1; }
        return 0;
    }
    if (n->kind == TPL_N_UNOP && n->op == TPL_AOP_NEG) { /* (-300: a new int the optimizer made) */
        if (!folded_int(n->a, v, big, depth + 1)) return 0;
        if (!*big && *v == INT64_MIN) *big = true;
        else if (!*big) *v = -*v;
        return 1;
    }
    if (n->kind != TPL_N_BINOP || (n->op != TPL_AOP_ADD && n->op != TPL_AOP_SUB && n->op != TPL_AOP_MUL && n->op != TPL_AOP_POW))
        return 0;
    int64_t x, y;
    bool bx, by;
    if (!folded_int(n->a, &x, &bx, depth + 1) || !folded_int(n->b, &y, &by, depth + 1)) return 0;
    if (n->op == TPL_AOP_POW && (by ? true : y < 0)) return 0; /* (a float, or too large to guess) */
    if (bx || by) return 0; /* (a big operand: the result may be small) */
    tpl_value out;
    if (fold_binop(n->op, tpl_v_int(x), tpl_v_int(y), &out) && out.type == TPL_T_INT) { *v = out.u.i; *big = false; return 1; }
    if (n->op == TPL_AOP_POW || n->op == TPL_AOP_MUL || n->op == TPL_AOP_ADD || n->op == TPL_AOP_SUB) { *big = true; return 1; }
    return 0;
}

/* Whether a constant expression Jinja2 folds gives a float: a float literal, a sign on one, `/`,
 * or an operator with a float operand (each folded expression makes its own float object). */
static bool folds_float(const tpl_node *n)
{
    if (n->kind == TPL_N_CONST) return n->val.type == TPL_T_FLOAT;
    if (n->kind == TPL_N_UNOP) return n->op != TPL_AOP_NOT && n->a && folds_float(n->a);
    if (n->kind == TPL_N_BINOP) return n->op == TPL_AOP_DIV || (n->a && folds_float(n->a)) || (n->b && folds_float(n->b));
    return false;
}

/* A list, tuple or dict display (or the constant it folded to): 2 the empty tuple (CPython's one
 * object), 1 another (a new object at each evaluation), 0 no display. */
static int display_kind(const tpl_node *n)
{
    if (n->kind == TPL_N_CONST && n->val.type == TPL_T_LIST && !n->val.aux)
        return (n->val.flags & TPL_F_TUPLE) && n->val.u.list->len == 0 ? 2 : 1;
    if (n->kind == TPL_N_CONST) return n->val.type == TPL_T_MAP;
    if (n->kind == TPL_N_TUPLE) return n->a ? 1 : 2;
    return n->kind == TPL_N_LIST || n->kind == TPL_N_DICT;
}

/* Whether two literals are one object in Jinja2 (each literal is an object its lexer made):
 * distinct unless CPython shares them: None, True, False, the ints -5..256, '' and a single Latin-1
 * character. */
static bool literals_same(tpl_value x, tpl_value y)
{
    if (x.type != y.type) return false;
    if (x.type == TPL_T_STR) {
        bool latin1_char = (x.len == 1 && (unsigned char)x.u.s[0] < 0x80) ||
                           (x.len == 2 && ((unsigned char)x.u.s[0] & 0xFE) == 0xC2);
        return x.len == y.len && memcmp(x.u.s, y.u.s, x.len) == 0 && (x.len == 0 || latin1_char);
    }
    if (x.type == TPL_T_NONE) return true;
    if (x.type == TPL_T_BOOL) return x.u.i == y.u.i;
    if (x.type == TPL_T_INT) return x.u.i == y.u.i && x.u.i >= -5 && x.u.i <= 256;
    return false;
}

/* The item `[...]|first` / `|last` (no arguments) picks from a list or tuple display or the
 * constant it folded to, through any number of them (`[[1]]|first|first`): Jinja2 folds the
 * filters, so the item is the object the display's lexer or as_const made. The picked item's node
 * (an item of a constant: in *tmp), or n itself when n picks nothing tpl can name. */
static const tpl_node *picked_node(const tpl_node *n, tpl_node *tmp, int depth)
{
    if (depth > 50 || n->kind != TPL_N_FILTER || n->b || !n->a) return n;
    bool first = n->val.len == 5 && memcmp(n->val.u.s, "first", 5) == 0;
    if (!first && !(n->val.len == 4 && memcmp(n->val.u.s, "last", 4) == 0)) return n;
    const tpl_node *d = picked_node(n->a, tmp, depth + 1);
    if (d->kind == TPL_N_CONST && d->val.type == TPL_T_LIST && !d->val.aux && d->val.u.list->len) {
        const tpl_list *l = d->val.u.list;
        tpl_value item = first ? l->items[0] : l->items[l->len - 1];
        *tmp = (tpl_node){ .kind = TPL_N_CONST, .val = item };
        return tmp;
    }
    if ((d->kind != TPL_N_LIST && d->kind != TPL_N_TUPLE) || !d->a) return n;
    const tpl_node *it = d->a;
    if (!first)
        while (it->next) it = it->next;
    return picked_node(it, tmp, depth + 1);
}

/* A scalar literal (or an int the optimizer made, [1 + 1]|first): *v its value. */
static bool scalar_literal(const tpl_node *n, tpl_value *v)
{
    if (n->kind == TPL_N_CONST) {
        if (n->val.type != TPL_T_NONE && n->val.type != TPL_T_BOOL && n->val.type != TPL_T_INT &&
            n->val.type != TPL_T_STR && n->val.type != TPL_T_FLOAT) return false;
        if (n->val.type == TPL_T_STR && (n->val.flags & TPL_F_SAFE)) return false;
        *v = n->val;
        return true;
    }
    int64_t i;
    bool big = false;
    if (!folds_float(n) && folded_int(n, &i, &big, 0)) {
        *v = tpl_v_int(big ? 257 : i); /* (a big one: never shared, as 257) */
        return true;
    }
    return false;
}

/* `x is sameas y` of two constant expressions Jinja2 folds (not both literals): 1 the same object,
 * 0 not, -1 unknown to tpl. */
static int sameas_folded(const tpl_node *x, const tpl_node *y)
{
    tpl_node tx, ty;
    x = picked_node(x, &tx, 0); /* ([1]|first is sameas 1, [[1]]|first|first is sameas 1: the items) */
    y = picked_node(y, &ty, 0);
    tpl_value px, py;
    if (scalar_literal(x, &px) && scalar_literal(y, &py))
        return literals_same(px, py);
    /* [1, 2] is sameas [1, 2], {} is sameas {}, (1,) is sameas (1,): nodes.List/Tuple/Dict.as_const
     * make a new object each (False), but for () */
    int dx = display_kind(x), dy = display_kind(y);
    if ((dx == 1 || dy == 1) || (dx == 2 && dy == 2)) return dx == 2 && dy == 2;
    if (folds_float(x) || folds_float(y)) return 0; /* (0.0 is sameas -0.0, 1.5 is sameas +1.5: two floats) */
    int64_t a, b;
    bool ba = false, bb = false;
    int fa = folded_int(x, &a, &ba, 0), fb = folded_int(y, &b, &bb, 0);
    if (fa && fb) {
        if ((ba && x->kind != TPL_N_CONST) || (bb && y->kind != TPL_N_CONST)) return 0; /* a new big int */
        if (ba || bb) return ba && bb ? -1 : 0;
        return a == b && a >= -5 && a <= 256;
    }
    /* a str literal against a Markup made by |safe / |e: never one object */
    static const char *const markup_f[] = { "safe", "e", "escape", "forceescape" };
    for (int side = 0; side < 2; side++) {
        const tpl_node *s = side ? y : x, *m = side ? x : y;
        if (s->kind != TPL_N_CONST || s->val.type != TPL_T_STR || (s->val.flags & TPL_F_SAFE) || m->kind != TPL_N_FILTER) continue;
        for (size_t i = 0; i < sizeof markup_f / sizeof *markup_f; i++)
            if (m->val.len == strlen(markup_f[i]) && memcmp(m->val.u.s, markup_f[i], m->val.len) == 0) return 0;
    }
    return -1;
}

/* Before n is compiled: when the optimizer folds n (a safe repr), or n is an output's child (the
 * code generator folds it at once), the failing slices of literals its fold evaluates are
 * Undefined (fold_mark). */
/* The int a constant expression of int and bool literals and + - * ** folds to, exactly (Jinja2's
 * optimizer computes it with Python's ints): false when n is no such expression, Python would raise
 * or give a float (a negative exponent), or the value would pass TPL_BIG_MAX_BITS. */
static bool const_mpz(const tpl_node *n, mpz_t z, int depth)
{
    if (!n || depth > 50) return false;
    if (n->kind == TPL_N_CONST) {
        if (n->val.type == TPL_T_INT || n->val.type == TPL_T_BOOL) { mpz_set_si(z, (long)n->val.u.i); return true; }
        if (n->val.type == TPL_T_BIGINT) { tpl_big_get(z, n->val); return true; }
        return false;
    }
    if (n->kind == TPL_N_UNOP && (n->op == TPL_AOP_NEG || n->op == TPL_AOP_POS)) {
        if (!const_mpz(n->a, z, depth + 1)) return false;
        if (n->op == TPL_AOP_NEG) mpz_neg(z, z);
        return true;
    }
    if (n->kind != TPL_N_BINOP || (n->op != TPL_AOP_ADD && n->op != TPL_AOP_SUB && n->op != TPL_AOP_MUL && n->op != TPL_AOP_POW))
        return false;
    mpz_t b;
    mpz_init(b);
    bool ok = const_mpz(n->a, z, depth + 1) && const_mpz(n->b, b, depth + 1);
    if (ok) {
        switch (n->op) {
        case TPL_AOP_ADD: mpz_add(z, z, b); break;
        case TPL_AOP_SUB: mpz_sub(z, z, b); break;
        case TPL_AOP_MUL:
            ok = mpz_sizeinbase(z, 2) + mpz_sizeinbase(b, 2) <= TPL_BIG_MAX_BITS;
            if (ok) mpz_mul(z, z, b);
            break;
        default: /* POW */
            if (mpz_sgn(b) < 0 || !mpz_fits_ulong_p(b)) { ok = mpz_cmpabs_ui(z, 1) <= 0 && mpz_sgn(b) >= 0; if (!ok) break; }
            if (mpz_cmpabs_ui(z, 1) <= 0) { /* 0, 1, -1 to any power */
                if (mpz_sgn(z) < 0 && mpz_even_p(b)) mpz_neg(z, z);
                else if (mpz_sgn(z) == 0 && mpz_sgn(b) == 0) mpz_set_ui(z, 1);
                break;
            }
            ok = (double)mpz_get_ui(b) * (double)mpz_sizeinbase(z, 2) <= TPL_BIG_MAX_BITS;
            if (ok) mpz_pow_ui(z, z, mpz_get_ui(b));
            break;
        }
    }
    mpz_clear(b);
    return ok;
}

/* A constant base Jinja2 folds to a negative number (an int of any size, or a float): *abs its
 * magnitude as a constant of the program. */
static bool neg_base(tpl_comp *c, const tpl_node *n, tpl_value *abs)
{
    tpl_value v;
    if (num_const(n, &v, 0) && v.type == TPL_T_FLOAT) {
        if (!signbit(v.u.f)) return false;
        *abs = tpl_v_float(-v.u.f);
        return true;
    }
    mpz_t z;
    mpz_init(z);
    bool ok = const_mpz(n, z, 0) && mpz_sgn(z) < 0;
    if (ok) {
        mpz_neg(z, z);
        ok = tpl_big_value(c->tmp, z, abs);
    }
    mpz_clear(z);
    return ok;
}

/* Whether n reads nothing but literals (operators, displays, builtin filters and tests on them):
 * printed, Jinja2's code generator folds it (as_const) and prints the value. */
static bool literal_tree(const tpl_node *n, int depth)
{
    if (!n) return true;
    if (depth > 50) return false;
    switch (n->kind) {
    case TPL_N_CONST: return true;
    case TPL_N_LIST: case TPL_N_TUPLE: case TPL_N_DICT: case TPL_N_CONCAT:
        for (const tpl_node *x = n->a; x; x = x->next)
            if (!literal_tree(x, depth + 1)) return false;
        return true;
    case TPL_N_PAIR: case TPL_N_BINOP: case TPL_N_AND: case TPL_N_OR:
        return literal_tree(n->a, depth + 1) && literal_tree(n->b, depth + 1);
    case TPL_N_UNOP: case TPL_N_ARG: case TPL_N_KWARG: return literal_tree(n->a, depth + 1);
    case TPL_N_CONDEXPR: return n->c && literal_tree(n->a, depth + 1) && literal_tree(n->b, depth + 1) && literal_tree(n->c, depth + 1);
    case TPL_N_COMPARE:
        if (!literal_tree(n->a, depth + 1)) return false;
        for (const tpl_node *o = n->b; o; o = o->next)
            if (!literal_tree(o->a, depth + 1)) return false;
        return true;
    case TPL_N_FILTER: case TPL_N_TEST: {
        static const char *const ctx[] = { "random", "tr", "attr", "map", "select", "reject", "selectattr", "rejectattr",
                                           "groupby", "sum", "sort", "unique", "min", "max", "dictsort", "join",
                                           "xmlattr", "wordwrap", "truncate", "urlize", "tojson", "indent", NULL };
        if (name_in(n->val, ctx) || tpl_builtin_find(n->kind == TPL_N_FILTER ? TPL_BK_FILTER : TPL_BK_TEST, n->val.u.s, n->val.len) < 0)
            return false;
        if (!literal_tree(n->a, depth + 1)) return false;
        for (const tpl_node *x = n->b; x; x = x->next)
            if (!literal_tree(x, depth + 1)) return false;
        return true;
    }
    default: return false;
    }
}

static bool fold_check(tpl_comp *c, const tpl_node *n)
{
    bool out_child = c->slice_undef == n; /* (set by an output for this very node, then cleared) */
    c->slice_undef = NULL;
    c->out_folded = out_child ? n : NULL;
    if (c->syn != TPL_SYN_JINJA) return false;
    if (n->kind == TPL_N_CONST) return out_child;
    fold_v v = fold_val(c, n, 0);
    switch (n->kind) {
    case TPL_N_SLICE: case TPL_N_GETITEM: case TPL_N_GETATTR: case TPL_N_LIST: case TPL_N_TUPLE: case TPL_N_DICT: case TPL_N_UNOP: case TPL_N_BINOP:
    case TPL_N_CONCAT: case TPL_N_AND: case TPL_N_OR: case TPL_N_CONDEXPR: case TPL_N_COMPARE: case TPL_N_FILTER:
    case TPL_N_TEST:
        if (v.k == F_SAFE || (out_child && (v.k == F_UNDEF || v.k == F_UNSAFE))) fold_mark(c, n, 0);
        break;
    default: break;
    }
    /* whether the float literals in n are never written into the Python Jinja2 generates: n is
     * printed folded, or folded to a str, bool, int or None (1e400|string is 'inf') */
    return (out_child && (v.k != F_NO || literal_tree(n, 0))) ||
           (v.k == F_SAFE && (v.ty == TY_STR || v.ty == TY_BOOL || v.ty == TY_INT || v.ty == TY_NONE));
}

static void expr_inner(tpl_comp *c, tpl_node *n);

/* super_scan: how a block's body names `super` (SUP_*, defined above store_target). */

static void super_scan(const tpl_node *n, unsigned *st, int depth);

/* A target: bind is SUP_STORE for a set's (an assignment in a frame that may read `super` first),
 * 0 for a loop's or with's (a frame's own new name, as a parameter). */
static void super_target(const tpl_node *t, unsigned *st, unsigned bind, int depth)
{
    if (!t) return;
    if (depth > 200) { *st = SUP_SEEN | SUP_FIRST_LOAD | SUP_STORE; return; }
    if (t->kind == TPL_N_NAME) {
        if (name_eq(t->val, "super", 5)) *st |= SUP_SEEN | bind;
    } else if (t->kind == TPL_N_TUPLE || t->kind == TPL_N_LIST) {
        for (const tpl_node *e = t->a; e; e = e->next) super_target(e, st, bind, depth + 1);
    } else if (t->kind != TPL_N_NSREF) {
        super_scan(t, st, depth + 1);
    }
}

/* Params: NAME, or KWARG (val = name, a = default); Jinja2 visits every parameter, then the defaults.
 * A parameter is a new name of the macro's frame (shadows the block's `super` as tpl's scopes do). */
static void super_params(const tpl_node *p, unsigned *st, int depth)
{
    for (const tpl_node *q = p; q; q = q->next)
        if ((q->kind == TPL_N_NAME || q->kind == TPL_N_KWARG) && name_eq(q->val, "super", 5)) *st |= SUP_SEEN;
    for (const tpl_node *q = p; q; q = q->next)
        if (q->kind == TPL_N_KWARG) super_scan(q->a, st, depth + 1);
}

static void super_scan(const tpl_node *n, unsigned *st, int depth)
{
    if (depth > 200) { *st = SUP_SEEN | SUP_FIRST_LOAD | SUP_STORE; return; }
    for (; n; n = n->next) {
        switch (n->kind) {
        case TPL_N_BLOCK: case TPL_N_NSREF: case TPL_N_TEXT: case TPL_N_CONST:
            continue;
        case TPL_N_NAME:
            if (name_eq(n->val, "super", 5) && !(*st & SUP_SEEN)) *st |= SUP_SEEN | SUP_FIRST_LOAD;
            continue;
        case TPL_N_SET:
            super_target(n->a, st, SUP_STORE, depth + 1);
            super_scan(n->b, st, depth + 1);
            continue;
        case TPL_N_NSSET: /* (Jinja2's NSRef holds the namespace's name as a string) */
            super_scan(n->b, st, depth + 1);
            continue;
        case TPL_N_SETBLOCK:
            super_target(n->a, st, SUP_STORE, depth + 1);
            super_scan(n->c, st, depth + 1);
            super_scan(n->b, st, depth + 1);
            continue;
        case TPL_N_FILTERBLOCK:
            super_scan(n->b, st, depth + 1);
            super_scan(n->a, st, depth + 1);
            continue;
        case TPL_N_FOR:
            super_target(n->a, st, 0, depth + 1);
            super_scan(n->b, st, depth + 1);
            super_scan(n->c, st, depth + 1);
            super_scan(n->d, st, depth + 1);
            super_scan(n->e, st, depth + 1);
            continue;
        case TPL_N_WITH:
            for (const tpl_node *w = n->a; w; w = w->next) super_target(w->kind == TPL_N_SET ? w->a : NULL, st, 0, depth + 1);
            for (const tpl_node *w = n->a; w; w = w->next) super_scan(w->kind == TPL_N_SET ? w->b : w, st, depth + 1);
            super_scan(n->b, st, depth + 1);
            continue;
        case TPL_N_MACRO:
            if (name_eq(n->val, "super", 5)) *st |= SUP_STORE | SUP_STORE_OTHER; /* (a string in Jinja2's Macro node) */
            super_params(n->a, st, depth + 1);
            super_scan(n->b, st, depth + 1);
            continue;
        case TPL_N_CALLBLOCK:
            super_scan(n->a, st, depth + 1);
            super_params(n->b, st, depth + 1);
            super_scan(n->c, st, depth + 1);
            continue;
        case TPL_N_IMPORT:
            super_scan(n->a, st, depth + 1);
            if (name_eq(n->val, "super", 5)) *st |= SUP_STORE | SUP_STORE_OTHER;
            continue;
        case TPL_N_FROMIMPORT:
            super_scan(n->a, st, depth + 1);
            for (const tpl_node *m = n->b; m; m = m->next) {
                const tpl_node *bound = m->a ? m->a : m;
                if (bound->kind == TPL_N_NAME && name_eq(bound->val, "super", 5)) *st |= SUP_STORE | SUP_STORE_OTHER;
            }
            continue;
        default:
            super_scan(n->a, st, depth + 1);
            super_scan(n->b, st, depth + 1);
            super_scan(n->c, st, depth + 1);
            super_scan(tpl_node_d(n), st, depth + 1);
            super_scan(tpl_node_e(n), st, depth + 1);
            continue;
        }
    }
}

/* Whether `super` read here is a variable of the current block's own (a set, loop variable, with
 * name or macro parameter inside the block), not one of the template level around it (a top-level
 * set, a loop the block stands in: Jinja2's block function does not see them). *in_block: the read
 * is inside the block's function at all. */
static scope_var *block_binds_super(tpl_comp *c, bool *in_block)
{
    tpl_value sup = tpl_v_str("super", 5);
    *in_block = false;
    for (func *f = c->fn; f; f = f->parent) {
        for (scope *s = f->scope; s; s = s->parent) {
            if (f == c->cur_block_fn && s == c->cur_block_base) break;
            scope_var *v = scope_var_of(s, sup);
            if (v) {
                /* (a function inside the block's, or the block's own scopes) */
                for (func *g = f; g; g = g->parent)
                    if (g == c->cur_block_fn) *in_block = true;
                return v;
            }
            if (s->func_boundary) break;
        }
        if (f == c->cur_block_fn) {
            *in_block = true;
            return NULL;
        }
    }
    return NULL;
}

/* For a read of `super` in the current block's function (is_block_super): 0 when no store of the
 * block's variables named super was compiled in the frames from here out to the block's (Jinja2's
 * parameter, context.super), 1 when the innermost one stored is assigned for sure (set_done), 2
 * when it may be (a store in a branch, or not in the block's function). */
static int super_assigned(tpl_comp *c)
{
    if (c->fn != c->cur_block_fn) return 2;
    tpl_value sup = tpl_v_str("super", 5);
    for (scope *s = c->fn->scope; s; s = s->parent) {
        if (s == c->cur_block_base) return 0;
        scope_var *v = scope_var_of(s, sup);
        if (v && v->set_done) return 1;
        if (v && v->stored) return 2;
        if (s->func_boundary) return 2;
    }
    return 2;
}

/* Whether `super` read (or called) here is the current block's context.super (Jinja2's block
 * parameter): a block whose body reads `super` before any store of it. A block that also binds it
 * (its parameter then takes the assigned values) is refused. */
static bool is_block_super(tpl_comp *c, tpl_value name, uint32_t off)
{
    bool in_block;
    if (!name_eq(name, "super", 5) || !c->cur_block || c->syn != TPL_SYN_JINJA ||
        !(c->cur_block_super & SUP_FIRST_LOAD))
        return false;
    scope_var *var = block_binds_super(c, &in_block);
    if (!in_block) return false;
    if ((c->cur_block_super & SUP_STORE) && var && !var->set_done) {
        /* a variable of the block that may not be assigned yet here: Jinja2's frame aliases the
         * block's parameter (context.super) until then, tpl's would read the context. Read
         * before any store of it was compiled (in this frame, or in the frames around it in the
         * block before this one began: a loop frame takes the value around it each iteration),
         * it is that parameter; after a frame's own set (set_done), the value set */
        int st = c->cur_block_super & SUP_STORE_OTHER ? 2 : super_assigned(c);
        if (st == 0) return true;
        if (st == 1) return false;
        cerror(c, off, "unsupported: `super` read in block '%.*s' where the block's assignment of it may or may "
               "not have run (a set in a branch, a macro or import named super, a read in a macro; Jinja2's "
               "block parameter super, context.super(), until it runs)",
               (int)(c->cur_block->name.len > 100 ? 100 : c->cur_block->name.len), c->cur_block->name.u.s);
        return false;
    }
    return !var;
}

/* After `{% set super = ... %}` in a block that reads its super first: the variable is assigned
 * from here on when the set is one of its frame's own statements (not in a branch or loop of it). */
static void super_set_done(tpl_comp *c, tpl_value name)
{
    if (!name_eq(name, "super", 5)) return;
    for (scope *s = c->fn->scope; s; s = s->parent) {
        scope_var *v = scope_var_of(s, name);
        if (v) {
            if (s->cond_base == c->cond_depth) v->set_done = true;
            return;
        }
        if (s->func_boundary) return;
    }
}

/* Whether name node n is the current block's context.super (is_block_super). 1: the extends chain
 * has a parent block (a BlockReference), -1: it has none (an undefined value), 0: not so. */
static int block_super(tpl_comp *c, const tpl_node *n)
{
    if (!n || n->kind != TPL_N_NAME || !is_block_super(c, n->val, n->off)) return 0;
    return c->cur_block_pos + 1 < c->cur_block->ndefs ? 1 : -1;
}

static tpl_block *find_block(tpl_comp *c, tpl_value name);
static tpl_node *find_own_block(tpl_node *n, tpl_value name);
static bool has_extends(const tpl_node *n, int depth);

static bool self_block_defined(tpl_comp *c, tpl_node *n);

/* `super is callable`, `self.NAME is callable`, `self is callable` (test node n) in Jinja2: a
 * BlockReference has __call__, and so has the Undefined of a missing block (True either way); a
 * TemplateReference has none (False). Returns whether it compiled the test. */
static bool self_or_super_callable(tpl_comp *c, tpl_node *n)
{
    const tpl_node *a = n->a;
    tpl_value bname = a->kind == TPL_N_GETATTR ? a->val :
                      a->kind == TPL_N_GETITEM && a->b && a->b->kind == TPL_N_CONST && a->b->val.type == TPL_T_STR ? a->b->val
                                                                                                          : tpl_v_none();
    bool yes;
    if (block_super(c, a)) yes = true;
    else if (bname.type == TPL_T_STR && !(bname.len >= 2 && bname.u.s[0] == '_' && bname.u.s[1] == '_') &&
             !name_eq(bname, "_TemplateReference__context", 27) && a->a && a->a->kind == TPL_N_NAME &&
             name_eq(a->a->val, "self", 4) && reads_self(c, a->a)) yes = true;
    else if (reads_self(c, a)) yes = false;
    else return c->failed;
    c->cur_off = n->off;
    emit(c, yes != ((n->op & 1) != 0) ? TPL_OP_TRUE : TPL_OP_FALSE, 0, 1);
    return true;
}

/* `self.NAME is defined` / `is undefined` (test node n): Jinja2's TemplateReference looks NAME up in
 * the context's blocks (an Undefined when there is none): a block of the template's extends chain,
 * or of the included or imported template it is read in. In a template whose extends picks the
 * parent at render time, compiled on its own, a name none of its own blocks has is False while no
 * parent is set, and refused where it runs after the extends. Returns whether it compiled the test
 * (names starting with `_` may be Python attributes of the object: not here). */
static bool self_block_defined(tpl_comp *c, tpl_node *n)
{
    tpl_node *a = n->a;
    if (!a || c->syn != TPL_SYN_JINJA) return false;
    tpl_value bname = a->kind == TPL_N_GETATTR ? a->val :
                      a->kind == TPL_N_GETITEM && a->b && a->b->kind == TPL_N_CONST && a->b->val.type == TPL_T_STR ? a->b->val
                                                                                                          : tpl_v_none();
    /* (a name of a Python attribute of the TemplateReference, a dunder or its private
     * _TemplateReference__context, is not looked up in the blocks; `_x` is) */
    if (bname.type != TPL_T_STR || (bname.len >= 2 && bname.u.s[0] == '_' && bname.u.s[1] == '_') ||
        name_eq(bname, "_TemplateReference__context", 27))
        return false;
    if (!a->a || a->a->kind != TPL_N_NAME || !name_eq(a->a->val, "self", 4)) return false;
    bool found;
    if (c->include_depth > 0) {
        if (!c->inc_root || has_extends(c->inc_root, 0)) return false;
        found = find_own_block(c->inc_root, bname) != NULL;
    } else {
        found = c->nblocks && find_block(c, bname);
    }
    if (!reads_self(c, a->a)) return c->failed;
    bool neg = (n->op & 1) != 0, want = n->val.len == 7; /* (defined, else undefined) */
    c->cur_off = n->off;
    bool dyn = !found && c->include_depth == 0 && c->ext_dyn && !c->p->ext_parent;
    uint32_t pos = 0;
    if (dyn && c->fn == &c->root) {
        emit(c, TPL_OP_JSET, c->ext_slot, 0);
        pos = emit_raw(c, 0);
    }
    if (!dyn || c->fn == &c->root) emit(c, (found == want) != neg ? TPL_OP_TRUE : TPL_OP_FALSE, 0, 1);
    if (!dyn) return true;
    uint32_t done = pos ? emit(c, TPL_OP_JUMP, 0, 0) : 0;
    if (pos) patch_word(c, pos, here(c));
    static const char msg[] = "unsupported: `self.NAME is defined` of a name that is no block of this template, "
                              "once its extends picked the parent at render time (a block tpl does not know here)";
    emit(c, TPL_OP_FAIL, add_const(c, tpl_v_str(msg, sizeof msg - 1)), 1);
    if (done) {
        patch_a(c, done, here(c));
        c->fn->depth--; /* (one value on either path) */
    }
    return true;
}

/* A chain super.super... of the current block's super (block_super): its length k (1 for `super`),
 * 0 when n is no such chain. Jinja2's BlockReference.super is the block k levels up the extends
 * chain (a BlockReference) where there is one, else an undefined value. */
static int super_level(tpl_comp *c, const tpl_node *n, int depth)
{
    if (!n || depth > 50) return 0;
    if (n->kind == TPL_N_NAME) return block_super(c, n) ? 1 : 0;
    if (n->kind != TPL_N_GETATTR || !name_eq(n->val, "super", 5)) return 0;
    int k = super_level(c, n->a, depth + 1);
    return k ? k + 1 : 0;
}

/* Whether the block k levels up from the current block's definition exists (super_level). */
static bool super_defined(const tpl_comp *c, int k)
{
    return c->cur_block_pos + (size_t)k < c->cur_block->ndefs;
}

/* The undefined value of a missing parent block (BlockReference.super, context.super) */
static void emit_no_parent_block(tpl_comp *c, uint32_t off)
{
    char msg[160];
    int k = snprintf(msg, sizeof msg, "there is no parent block called '%.*s'.",
                     (int)(c->cur_block->name.len > 100 ? 100 : c->cur_block->name.len), c->cur_block->name.u.s);
    c->cur_off = off;
    emit(c, TPL_OP_UNDEF_MSG, add_const(c, tpl_v_str(msg, (size_t)k)), 1);
}

static void expr(tpl_comp *c, tpl_node *n)
{
    if (c->failed || !n) return;
    bool hide = fold_check(c, n);
    c->inf_hidden += hide;
    expr_inner(c, n);
    c->inf_hidden -= hide;
}

/* A float literal past the double range (1e400, -1e400) where Jinja2 writes it into the Python it
 * generates: str(inf) is the name inf, which that code does not define (NameError when it runs). */
static bool inf_literal(tpl_comp *c, tpl_value v)
{
    if (c->syn != TPL_SYN_JINJA || v.type != TPL_T_FLOAT || isfinite(v.u.f) || c->inf_hidden > 0) return false;
    static const char msg[] = "name 'inf' is not defined", nmsg[] = "name 'nan' is not defined";
    emit(c, TPL_OP_FAIL_KIND, isnan(v.u.f) ? add_const(c, tpl_v_str(nmsg, sizeof nmsg - 1)) :
                                              add_const(c, tpl_v_str(msg, sizeof msg - 1)), 1);
    emit_raw(c, TPL_EK_NAME);
    return true;
}

static void expr_inner(tpl_comp *c, tpl_node *n)
{
    c->cur_off = n->off;
    switch (n->kind) {
    case TPL_N_CONST:
        if (inf_literal(c, n->val)) return;
        push_const(c, n->val);
        return;
    case TPL_N_NAME: {
        int sup = block_super(c, n);
        if (sup > 0) {
            /* Jinja2's BlockReference as a value prints its address: not reproducible */
            cerror(c, n->off, "unsupported: super used other than called or tested with `is defined` "
                              "(Jinja2's BlockReference object)");
            return;
        }
        if (sup < 0) {
            char msg[160];
            int k = snprintf(msg, sizeof msg, "there is no parent block called '%.*s'.",
                             (int)(c->cur_block->name.len > 100 ? 100 : c->cur_block->name.len), c->cur_block->name.u.s);
            emit(c, TPL_OP_UNDEF_MSG, add_const(c, tpl_v_str(msg, (size_t)k)), 1);
            return;
        }
        load_name(c, n->val);
        return;
    }
    case TPL_N_GETATTR: {
        int lv = super_level(c, n, 0);
        if (lv >= 2) {
            if (super_defined(c, lv)) {
                cerror(c, n->off, "unsupported: super used other than called or tested with `is defined` "
                                  "(Jinja2's BlockReference object)");
                return;
            }
            /* no block that far up: an undefined value; where the chain is undefined before, the
             * attribute of that undefined value (an UndefinedError, unless chainable) */
            int first = 1;
            while (super_defined(c, first)) first++;
            emit_no_parent_block(c, n->off);
            for (int i = first; i < lv; i++) {
                c->cur_off = n->off;
                emit(c, TPL_OP_GETATTR, add_name(c, n->val), 0);
            }
            return;
        }
    }
        if (c->own_str_attr && own_str_literal(n->a)) emit(c, TPL_OP_CONST, add_const_own(c, n->a->val), 1);
        else expr(c, n->a);
        c->cur_off = n->off;
        emit(c, TPL_OP_GETATTR, add_name(c, n->val), 0);
        return;
    case TPL_N_GETITEM:
        expr(c, n->a);
        c->cur_off = n->off;
        if (n->b->kind == TPL_N_CONST && n->b->val.type == TPL_T_STR) {
            emit(c, TPL_OP_GETITEM_STR, add_name(c, n->b->val), 0);
            return;
        }
        expr(c, n->b);
        c->cur_off = n->off;
        emit(c, TPL_OP_GETITEM, 0, -1);
        return;
    case TPL_N_SLICE: {
        if (c->nundef_slices && take_undef_slice(c, n)) {
            /* the operands still run, left to right, for their errors: where one raises (`1|length`,
             * `'a'|sum` under a test), Jinja2's fold is Impossible and its slice at run time raises
             * that first; where none does, each folds too and the slice is the Undefined */
            tpl_node *ops[4] = { n->a, n->b, n->c, n->d };
            for (int i = 0; i < 4; i++)
                if (ops[i]) { expr(c, ops[i]); emit(c, TPL_OP_POP, 0, -1); }
            c->cur_off = n->off;
            static const char msg[] = "slice of a constant failed (Jinja2's folded Undefined)";
            emit(c, TPL_OP_UNDEF_MSG, add_const(c, tpl_v_str(msg, sizeof msg - 1)), 1);
            return;
        }
        expr(c, n->a);
        uint32_t mask = 0;
        tpl_node *parts[3] = { n->b, n->c, n->d };
        for (int i = 0; i < 3; i++) {
            if (parts[i]) { expr(c, parts[i]); mask |= 1u << i; }
            else emit(c, TPL_OP_NONE, 0, 1);
        }
        c->cur_off = n->off;
        emit(c, TPL_OP_SLICE, mask, -3);
        return;
    }
    case TPL_N_CALL: {
        tpl_node *fn = n->a;
        uint32_t slot;
        if (block_call(c, n)) return;
        if (fn->kind == TPL_N_NAME && name_eq(fn->val, "loop", 4) && c->fn->rec_self >= 0 &&
            resolve(c, fn->val, &slot) == R_LOCAL && (int32_t)slot == c->fn->rec_loop && n->b && !n->b->next &&
            n->b->kind == TPL_N_ARG) {
            /* loop(children) in a recursive loop: call the loop function one level deeper (any other
             * call of the loop value, `loop(iterable=x)` or a stored `l(x)`, is call_any's) */
            uint32_t k = add_name(c, tpl_v_str("loop", 4));
            emit(c, TPL_OP_LOAD_SLOT, (uint32_t)c->fn->rec_self, 1);
            emit_raw(c, k);
            expr(c, n->b->a);
            emit(c, TPL_OP_LOAD_SLOT, (uint32_t)c->fn->rec_depth, 1);
            emit_raw(c, k);
            emit(c, TPL_OP_INT, 1, 1);
            emit(c, TPL_OP_ADD, 0, -1);
            emit(c, TPL_OP_LOAD_SLOT, (uint32_t)c->fn->rec_self, 1);
            emit_raw(c, k);
            c->cur_off = n->off;
            emit(c, TPL_OP_CALL, 0, -3);
            emit_raw(c, TPL_ARGW(3, 0, TPL_NO_KW));
            return;
        }
        if (fn->kind == TPL_N_NAME && resolve(c, fn->val, &slot) == R_GLOBAL) {
            if (host_func(c, fn->val, TPL_HOST_GLOBAL)) {
                uint32_t w = call_args(c, n->b, 0);
                c->cur_off = n->off;
                c->read_at = fn->off + 1;
                emit(c, TPL_OP_HOST_CALL, add_const(c, fn->val), 1 - argw_count(w));
                emit_raw(c, w);
                return;
            }
            int b = tpl_builtin_find(TPL_BK_GLOBAL, fn->val.u.s, fn->val.len);
            if (b >= 0) {
                if (b == TPL_B_GLOBAL_tr) note_tr(c, fn->off, tr_text_arg(n->b));
                else if (b == TPL_B_GLOBAL_gettext || b == TPL_B_GLOBAL_underscore || b == TPL_B_GLOBAL_ngettext ||
                         b == TPL_B_GLOBAL_pgettext || b == TPL_B_GLOBAL_npgettext)
                    note_gettext(c, fn->off, b, n->b);
                uint32_t w = call_args(c, n->b, 0);
                c->cur_off = n->off;
                c->read_at = fn->off + 1;
                emit(c, TPL_OP_CALL_NAME, add_name(c, fn->val), 1 - argw_count(w));
                emit_raw(c, (uint32_t)b);
                emit_raw(c, w);
                return;
            }
        }
        if (fn->kind == TPL_N_GETATTR) {
            expr(c, fn->a);
            if (c->syn == TPL_SYN_JINJA && !c->ae_volatile && tpl_builtin_find(TPL_BK_PYNUM, fn->val.u.s, fn->val.len) >= 0 &&
                folds_const_path(fn->a) && holds_filter(fn->a, 0)) {
                /* ('inf'|float).hex(): Jinja2's optimizer folds the receiver (the call it does not) and its
                 * code generator writes the float's repr into the Python, where inf and nan are undefined
                 * names: a NameError when it runs */
                c->cur_off = fn->a->off;
                emit(c, TPL_OP_FILTER, (uint32_t)TPL_B_FILTER_folded_number, 0);
                emit_raw(c, TPL_ARGW(1, 0, TPL_NO_KW));
            }
            uint32_t w = call_args(c, n->b, 0);
            c->cur_off = n->off;
            emit(c, TPL_OP_CALL_METHOD, add_name(c, fn->val), -argw_count(w));
            emit_raw(c, w);
            if (c->autoescape && fn->a->kind == TPL_N_NAME && resolve(c, fn->a->val, &slot) != R_GLOBAL)
                for (uint32_t i = 0; i < c->nimport_names; i++)
                    if (c->import_names[i].len == fn->a->val.len && memcmp(c->import_names[i].u.s, fn->a->val.u.s, fn->a->val.len) == 0) { emit_markup(c); break; } /* module.macro() */
            return;
        }
        expr(c, fn);
        uint32_t w = call_args(c, n->b, 0);
        c->cur_off = n->off;
        emit(c, TPL_OP_CALL, 0, -argw_count(w));
        emit_raw(c, w);
        /* a template variable called: a macro or caller (state holds no callables) */
        if (c->autoescape && fn->kind == TPL_N_NAME && resolve(c, fn->val, &slot) != R_GLOBAL) emit_markup(c);
        return;
    }
    case TPL_N_FILTER: {
        if (host_func(c, n->val, TPL_HOST_FILTER)) {
            if (n->a) expr(c, n->a);
            uint32_t w = call_args(c, n->b, 1);
            c->cur_off = n->off;
            emit(c, TPL_OP_HOST_FILTER, add_const(c, n->val), 1 - argw_count(w));
            emit_raw(c, w);
            return;
        }
        int b = tpl_builtin_find(TPL_BK_FILTER, n->val.u.s, n->val.len);
        if (b < 0) {
            unknown_callable(c, n, "filter");
            return;
        }
        if (b == TPL_B_FILTER_tr) note_tr(c, n->off, n->a);
        b = tpl_builtin_filter_variant(b, c->autoescape, c->p->opts.hf); /* join under autoescape, hf's tojson ... */
        if (b == TPL_B_FILTER_map && c->autoescape != env_autoescape(c)) {
            /* map('join') runs the filter the environment's autoescape picks (the VM knows no
             * {% autoescape %} block): refused where the block's choice would differ */
            const tpl_node *fname = pos_arg(n->b, 0);
            bool differs = true;
            if (fname && fname->kind == TPL_N_CONST && fname->val.type == TPL_T_STR) {
                int fb = tpl_builtin_find(TPL_BK_FILTER, fname->val.u.s, fname->val.len);
                differs = fb >= 0 && tpl_builtin_filter_variant(fb, true, false) != tpl_builtin_filter_variant(fb, false, false);
            } else if (!fname) { /* map(attribute=...), unless a * or ** argument may name a filter */
                differs = false;
                for (const tpl_node *a = n->b; a; a = a->next)
                    if (a->kind == TPL_N_STARARG || a->kind == TPL_N_STARKW) differs = true;
            }
            if (differs) {
                cerror(c, n->off, "map() of a filter whose result depends on autoescape (join, replace, xmlattr, urlize, "
                       "or a filter named at run time) inside an {%% autoescape %%} block that changes the "
                       "environment's setting is not supported");
                return;
            }
        }
        if (b < 0) {
            unknown_callable(c, n, "filter");
            return;
        }
        if (n->a) expr(c, n->a);
        uint32_t w = call_args(c, n->b, 1);
        c->cur_off = n->off;
        emit(c, TPL_OP_FILTER, (uint32_t)b, 1 - argw_count(w));
        emit_raw(c, w);
        return;
    }
    case TPL_N_TEST: {
        if (host_func(c, n->val, TPL_HOST_TEST)) {
            expr(c, n->a);
            uint32_t w = call_args(c, n->b, 1);
            c->cur_off = n->off;
            emit(c, TPL_OP_HOST_TEST, add_const(c, n->val), 1 - argw_count(w));
            emit_raw(c, w);
            if (n->op & 1) emit(c, sop(c, TPL_OP_NOT_PY), 0, 0);
            return;
        }
        int b = tpl_builtin_find(TPL_BK_TEST, n->val.u.s, n->val.len);
        if (b < 0) {
            unknown_callable(c, n, "test");
            return;
        }
        int sup = (b == TPL_B_TEST_defined || b == TPL_B_TEST_undefined) && !n->b ? block_super(c, n->a) : 0;
        int lv = (b == TPL_B_TEST_defined || b == TPL_B_TEST_undefined) && !n->b ? super_level(c, n->a, 0) : 0;
        if (lv >= 2 && super_defined(c, lv - 1)) sup = super_defined(c, lv) ? 1 : -1; /* (`super.super is defined`) */
        if (sup && (lv < 2 || super_defined(c, lv - 1))) {
            /* `super is defined` in a block: Jinja2's context.super() is a BlockReference when
             * the extends chain has a parent block, else an undefined value */
            c->cur_off = n->off;
            emit(c, ((sup > 0) == (b == TPL_B_TEST_defined)) != ((n->op & 1) != 0) ? TPL_OP_TRUE : TPL_OP_FALSE, 0, 1);
            return;
        }
        if ((b == TPL_B_TEST_defined || b == TPL_B_TEST_undefined) && !n->b && reads_self(c, n->a)) {
            /* `self is defined`: a TemplateReference, always (Jinja2 declares it wherever read) */
            c->cur_off = n->off;
            emit(c, (b == TPL_B_TEST_defined) != ((n->op & 1) != 0) ? TPL_OP_TRUE : TPL_OP_FALSE, 0, 1);
            return;
        }
        if ((b == TPL_B_TEST_defined || b == TPL_B_TEST_undefined) && !n->b && self_block_defined(c, n)) return;
        if (b == TPL_B_TEST_callable && !n->b && n->a && self_or_super_callable(c, n)) return;
        if (b == TPL_B_TEST_sameas && n->a && n->a->kind == TPL_N_NAME && n->b && n->b->kind == TPL_N_ARG &&
            !n->b->next && n->b->a && n->b->a->kind == TPL_N_NAME && n->b->a->val.len == n->a->val.len &&
            memcmp(n->b->a->val.u.s, n->a->val.u.s, n->a->val.len) == 0) {
            /* `x is sameas x`: one variable holds one object, whatever it is (a float, a NaN, an int
             * past 256: Python's True); a missing name is a new Undefined at each lookup (False).
             * A variable of the frame that holds an undefined value (`set u = missing`, a macro's
             * argument left out) holds one object too: True unless its slot is unset (read from the
             * context) */
            uint32_t vslot;
            scope_var *var = NULL;
            uint32_t jset = 0;
            bool local = resolve_var(c, n->a->val, &vslot, &var, NULL) == R_LOCAL && var && !var->missing;
            if (local) {
                jset = emit(c, TPL_OP_JSET, vslot, 0);
                emit_raw(c, 0);
            }
            expr(c, n->a);
            c->cur_off = n->off;
            emit(c, TPL_OP_TEST, (uint32_t)TPL_B_TEST_defined, 0);
            emit_raw(c, TPL_ARGW(1, 0, TPL_NO_KW));
            if (local) {
                uint32_t end = emit(c, TPL_OP_JUMP, 0, 0);
                patch_word(c, jset + 1, here(c));
                emit(c, TPL_OP_TRUE, 0, 1);
                c->fn->depth--; /* (one value on either path) */
                patch_a(c, end, here(c));
            }
            if (n->op & 1) emit(c, sop(c, TPL_OP_NOT_PY), 0, 0);
            return;
        }
        int sc = b == TPL_B_TEST_sameas ? sameas_consts(n) : 0;
        if (sc == 2) {
            /* 'ab' is sameas 'ab', 1000 is sameas 1000: Jinja2 folds the test on the two objects its
             * lexer made (nodes.Test.as_const), distinct unless CPython shares them: None, True,
             * False, the ints -5..256, '' and a single Latin-1 character (the runtime test would
             * see one shared constant) */
            bool same = literals_same(n->a->val, n->b->a->val);
            push_const(c, tpl_v_bool(same != (n->op & 1)));
            return;
        }
        if (sc == 1) {
            /* (500 + 500) is sameas 1000, "ab"|string is sameas "ab": folded on the objects the
             * optimizer made. Known: ints (an int the optimizer makes is a new object unless in
             * -5..256; one past int64 always is) and a str against Markup; else tpl does not follow */
            int r = sameas_folded(n->a, n->b->a);
            /* an Undefined a fold made (1[:1], none.x) is an object of its own */
            if (r < 0 && (fold_val(c, n->a, 0).k == F_UNDEF || fold_val(c, n->b->a, 0).k == F_UNDEF)) r = 0;
            if (r < 0) {
                cerror(c, n->off, "unsupported: `is sameas` of two constant expressions (Jinja2 decides it at compile time on "
                                  "Python objects whose identity tpl does not follow)");
                return;
            }
            push_const(c, tpl_v_bool((r == 1) != (n->op & 1)));
            return;
        }
        expr(c, n->a);
        uint32_t w = call_args(c, n->b, 1);
        c->cur_off = n->off;
        emit(c, TPL_OP_TEST, (uint32_t)b, 1 - argw_count(w));
        emit_raw(c, w);
        if (n->op & 1) emit(c, sop(c, TPL_OP_NOT_PY), 0, 0);
        return;
    }
    case TPL_N_BINOP: {
        tpl_value folded;
        /* arithmetic the optimizer folds to inf or nan (1e308 * 10, 1e308 // 1e-7): Const(inf),
         * written into the generated Python as a name, as a literal past the range is */
        double fd;
        bool ffl;
        if (c->syn == TPL_SYN_JINJA && float_const(n, &fd, &ffl, 0) && ffl && inf_literal(c, tpl_v_float(fd))) return;
        uint32_t nadd = add_chain(c, n, false);
        if (nadd >= 3) {
            add_chain(c, n, true);
            c->cur_off = n->off;
            emit(c, TPL_OP_ADDS, nadd, 1 - (int)nadd);
            return;
        }
        if (n->a->kind == TPL_N_CONST && n->b->kind == TPL_N_CONST && fold_binop(n->op, n->a->val, n->b->val, &folded)) {
            push_const(c, folded);
            return;
        }
        tpl_value base;
        if (n->op == TPL_AOP_POW && !c->ae_volatile && fold_val(c, n->b, 0).k == F_NO && !folds_const(n->b) &&
            neg_base(c, n->a, &base)) {
            /* Jinja2 writes a folded negative base as its repr into the Python it generates,
             * (-2 ** l_x), which Python reads as -(2 ** x): -2 ** x is -4 for x = 2, -(2 ** 64) ** x
             * is -(18446744073709551616 ** x). An exponent the optimizer folds too folds the power
             * itself, by Python's rules: -2 ** (1 + 1) is 4, -2 ** 64|round is 2.0 ** 64 (a filter
             * that takes no context folds). In a volatile {% autoescape %} block the optimizer does
             * not run: the base is written as (-2), ((-2) ** l_x) */
            push_const(c, base);
            expr(c, n->b);
            c->cur_off = n->off;
            emit(c, TPL_OP_POW, 0, -1);
            emit(c, TPL_OP_NEG, 0, 0);
            return;
        }
        expr(c, n->a);
        expr(c, n->b);
        c->cur_off = n->off;
        int op;
        switch (n->op) {
        case TPL_AOP_ADD: op = TPL_OP_ADD; break;
        case TPL_AOP_SUB: op = TPL_OP_SUB; break;
        case TPL_AOP_MUL: op = TPL_OP_MUL; break;
        case TPL_AOP_DIV: op = sop(c, TPL_OP_DIV_PY); break;
        case TPL_AOP_FLOORDIV: op = TPL_OP_FLOORDIV; break;
        case TPL_AOP_MOD: op = TPL_OP_MOD; break;
        case TPL_AOP_POW: op = TPL_OP_POW; break;
        default: cerror(c, n->off, "bad operator"); return;
        }
        emit(c, op, 0, -1);
        return;
    }
    case TPL_N_UNOP:
        if (n->op == TPL_AOP_NEG && n->a->kind == TPL_N_CONST && n->a->val.type == TPL_T_INT && n->a->val.u.i != INT64_MIN) {
            push_const(c, tpl_v_int(-n->a->val.u.i));
            return;
        }
        if (n->op == TPL_AOP_NEG && n->a->kind == TPL_N_CONST && n->a->val.type == TPL_T_FLOAT) {
            if (inf_literal(c, n->a->val)) return;
            push_const(c, tpl_v_float(-n->a->val.u.f));
            return;
        }
        expr(c, n->a);
        c->cur_off = n->off;
        emit(c, n->op == TPL_AOP_NEG ? TPL_OP_NEG : n->op == TPL_AOP_POS ? TPL_OP_POS : sop(c, TPL_OP_NOT_PY), 0, 0);
        return;
    case TPL_N_AND:
    case TPL_N_OR: {
        bool out_child = c->out_folded == n;
        expr(c, n->a);
        c->cur_off = n->off;
        uint32_t j = emit(c, sop(c, n->kind == TPL_N_AND ? TPL_OP_JF_PY_KEEP : TPL_OP_JT_PY_KEEP), 0, -1);
        /* a constant left operand that decides (`0 and x|f`, `1 or x|f`): Jinja2's optimizer folds
         * the whole node to it (nodes.And.as_const), so the code generator never sees the right
         * operand: an unknown filter or test there is no compile error (tpl compiles it as in an if) */
        fold_v l = fold_val(c, n->a, 0);
        bool soft = c->soft;
        if (l.k == F_SAFE && l.truth >= 0 && (n->kind == TPL_N_AND) == (l.truth == 0))
            c->soft = true;
        /* an Undefined that decides (`1[:1] and x|f`): the optimizer keeps the node (no safe repr),
         * but an output's child is folded by the code generator (_output_child_to_const), which then
         * never visits the right operand either */
        if (out_child && (l.k == F_UNDEF || l.k == F_UNSAFE) && l.truth >= 0 &&
            (n->kind == TPL_N_AND) == (l.truth == 0) && fold_val(c, n, 0).k != F_NO)
            c->soft = true;
        expr(c, n->b);
        c->soft = soft;
        patch_a(c, j, here(c));
        return;
    }
    case TPL_N_COMPARE:
        compare(c, n);
        return;
    case TPL_N_CONDEXPR: {
        /* a = test, b = then, c = else */
        bool soft = c->soft;
        c->soft = true;
        expr(c, n->a);
        uint32_t jf = emit(c, sop(c, TPL_OP_JF_PY), 0, -1);
        expr(c, n->b);
        uint32_t jend = emit(c, TPL_OP_JUMP, 0, -1);
        patch_a(c, jf, here(c));
        if (n->c) expr(c, n->c);
        else {
            uint32_t line, col;
            span_linecol(c, n->off, &line, &col);
            emit(c, TPL_OP_UNDEF, line < 0xFFFFFF ? line : 0, 1);
        }
        patch_a(c, jend, here(c));
        c->soft = soft;
        return;
    }
    case TPL_N_CONCAT: {
        uint32_t cnt = 0;
        /* (Concat.as_const folds when every operand does, str() of a folded Undefined included:
         * `1[:-1] ~ "a"` is "a": fold_val) */
        for (tpl_node *x = n->a; x; x = x->next) {
            expr(c, x);
            cnt++;
        }
        c->cur_off = n->off;
        emit(c, c->autoescape && !c->ae_volatile && !concat_folds(n) ? TPL_OP_CONCAT_AE : sop(c, TPL_OP_CONCAT), cnt,
             1 - (int)cnt);
        return;
    }
    case TPL_N_LIST:
    case TPL_N_TUPLE: {
        uint32_t cnt = 0;
        for (tpl_node *x = n->a; x; x = x->next) { expr(c, x); cnt++; }
        c->cur_off = n->off;
        emit(c, n->kind == TPL_N_LIST ? TPL_OP_BUILD_LIST : TPL_OP_BUILD_TUPLE, cnt, 1 - (int)cnt);
        return;
    }
    case TPL_N_DICT: {
        uint32_t cnt = 0;
        for (tpl_node *x = n->a; x; x = x->next) { expr(c, x->a); expr(c, x->b); cnt++; }
        c->cur_off = n->off;
        emit(c, TPL_OP_BUILD_MAP, cnt, 1 - 2 * (int)cnt);
        return;
    }
    default:
        cerror(c, n->off, "unexpected %s in expression", tpl_node_kind_name(n->kind));
    }
}

/* ------------------------------------------------------------------ statements */

/* Jinja2 compiles a filter chain from its last filter inward, each one's name before its subject:
 * of `{% filter a | b %}` with both unknown, b is the error. */
static void check_chain_names(tpl_comp *c, tpl_node *f, int depth)
{
    if (!f || c->failed || depth > 400) return;
    check_chain_names(c, f->next, depth + 1);
    if (c->failed || f->kind != TPL_N_FILTER || f->val.type != TPL_T_STR || host_func(c, f->val, TPL_HOST_FILTER)) return;
    if (tpl_builtin_find(TPL_BK_FILTER, f->val.u.s, f->val.len) < 0) unknown_callable(c, f, "filter");
}

static void apply_filters(tpl_comp *c, tpl_node *f)
{
    if (!c->soft && f && f->next) check_chain_names(c, f, 0);
    for (; f && !c->failed; f = f->next) {
        tpl_node *save = f->a;
        f->a = NULL; /* subject already on the stack */
        tpl_node *next = f->next;
        f->next = NULL;
        expr(c, f);
        f->next = next;
        f->a = save;
    }
}

/* ------------------------------------------------------------------ template loading */

/* Records a loaded template's name in the program's dependency list (once per name). */
static void note_dependency(tpl_comp *c, tpl_value name, uint32_t off)
{
    tpl_program *p = c->p;
    if (p->deps) {
        for (uint32_t i = 0; i < p->deps->len; i++)
            if (tpl_equal(p->deps->items[i], name)) return;
    } else if (!(p->deps = tpl_list_new(&p->arena, 4))) {
        c_nomem(c, off);
        return;
    }
    char *s = tpl_arena_strdup(&p->arena, name.u.s, name.len);
    if (!s || !tpl_list_push(&p->arena, p->deps, tpl_v_str(s, name.len))) c_nomem(c, off);
}

/* A template loaded for include/import/extends: its parsed body, in arena a (an include's or an
 * import's own, freed once that statement is compiled: kept for the whole compile, the trees of
 * 60,000 includes were 23x the template; issue 13 §1). The source and its name stay alive until
 * the compiler is finished (AST strings point into it). missing_ok: a template the loader does
 * not find, or one that does not parse (invalid UTF-8, a syntax error: *broken set, if broken is
 * not NULL), gives NULL without an error (the caller loads it when the statement runs, as Jinja2
 * does: an error before the statement, or a compile error of the template itself, comes first). */
static tpl_node *load_template_ex(tpl_comp *c, tpl_arena *a, tpl_value name, uint32_t off, bool missing_ok,
                                  int *src_index, bool *broken)
{
    const tpl_options *o = &c->p->opts;
    if (!o->loader) {
        if (!missing_ok) cerror(c, off, "cannot load '%.*s': no template loader", (int)name.len, name.u.s);
        return NULL;
    }
    size_t len = 0;
    char *raw = o->loader(o->loader_data, name.u.s, name.len, &len);
    if (!raw) {
        if (!missing_ok) cfail(c, TPL_EK_TEMPLATE_NOT_FOUND, off, "template '%.*s' not found", (int)name.len, name.u.s);
        return NULL;
    }
    note_dependency(c, name, off);
    size_t n, bad;
    if (!tpl_utf8_valid(raw, len, &bad)) {
        if (missing_ok) {
            free(raw);
            if (broken) *broken = true;
            return NULL;
        }
        uint32_t line, col;
        tpl_offset_to_linecol(raw, len, (uint32_t)bad, &line, &col);
        cerror(c, off, "in '%.*s' at %u:%u: invalid UTF-8 (byte 0x%02X)", (int)name.len, name.u.s, line, col,
               (unsigned char)raw[bad]);
        free(raw);
        return NULL;
    }
    char *src = tpl_jinja_normalize(raw, len, o->keep_trailing_newline, &n);
    free(raw);
    if (!src) {
        c_nomem(c, off);
        return NULL;
    }
    uint32_t seen;
    if (tpl_smap_get(&c->source_idx, name.u.s, name.len, &seen) && c->sources[seen].n == n &&
        tpl_mem_eq(c->sources[seen].src, src, n)) {
        free(src); /* the same template as loaded before: its source (kept to the end) again */
        src = c->sources[seen].src;
        *src_index = (int)seen;
    } else {
        /* (the name may be a string of the loading statement's tree, which does not live as long) */
        char *kept = tpl_arena_strdup(c->tmp, name.u.s, name.len);
        if (!kept || !grow((void **)&c->sources, &c->srccap, c->nsources + 1, sizeof *c->sources)) {
            free(src);
            c_nomem(c, off);
            return NULL;
        }
        name.u.s = kept;
        c->source_idx.arena = c->tmp;
        if (!tpl_smap_put(&c->source_idx, kept, name.len, (uint32_t)c->nsources)) {
            free(src);
            c_nomem(c, off);
            return NULL;
        }
        *src_index = (int)c->nsources;
        c->sources[c->nsources++] = (struct tpl_csource){ src, n, name };
    }
    tpl_jtok_vec toks = { 0 };
    tpl_lex_opts lo = { o->trim_blocks, o->lstrip_blocks };
    tpl_lex_result lr = tpl_jinja_lex(src, n, &lo, &toks);
    uint32_t line, col;
    if (!lr.ok && lr.nomem) {
        tpl_jtok_free(&toks);
        c_nomem(c, off);
        return NULL;
    }
    tpl_pctx pc = { 0 };
    pc.arena = a;
    pc.src = src;
    pc.n = n;
    pc.no_loop_controls = !c->p->opts.hf && !c->p->opts.loop_controls;
    pc.no_generation = !c->p->opts.hf;
    pc.no_do = !c->p->opts.do_statement;
    /* (a scanner's error: the parser's in the tokens before it comes first) */
    bool ok = lr.ok ? tpl_jinja_parse(&pc, &toks) : tpl_jinja_parse_lex_failed(&pc, &toks, &lr);
    tpl_jtok_free(&toks);
    if (!ok) {
        if (pc.nomem) { c_nomem(c, off); return NULL; }
        if (missing_ok) {
            if (broken) *broken = true;
            return NULL;
        }
        tpl_offset_to_linecol(src, n, pc.err_off, &line, &col);
        cfail(c, tpl_pctx_kind(&pc), off, "in '%.*s' at %u:%u: %s", (int)name.len, name.u.s, line, col, pc.failed ? pc.msg : "syntax error");
        return NULL;
    }
    return pc.root;
}

static tpl_node *load_template(tpl_comp *c, tpl_arena *a, tpl_value name, uint32_t off, bool missing_ok,
                               int *src_index)
{
    return load_template_ex(c, a, name, off, missing_ok, src_index, NULL);
}

/* The constant template name(s) of an include/import/extends. */
static bool template_names(tpl_comp *c, tpl_node *e, tpl_node **first)
{
    if (e->kind == TPL_N_CONST && e->val.type == TPL_T_STR) { *first = e; e->next = NULL; return true; }
    if ((e->kind == TPL_N_LIST || e->kind == TPL_N_TUPLE) && e->a) {
        for (tpl_node *x = e->a; x; x = x->next)
            if (x->kind != TPL_N_CONST || x->val.type != TPL_T_STR) goto bad;
        *first = e->a;
        return true;
    }
bad:
    cerror(c, e->off, "template names must be string constants (tpl resolves templates at compile time)");
    return false;
}

/* ------------------------------------------------------------------ statements */

/* Whether target t (a name or a tuple of them) names `name`. */
static bool target_has_name(const tpl_node *t, tpl_value name, int depth)
{
    if (!t || depth > TPL_MAX_AST_DEPTH) return false;
    if (t->kind == TPL_N_NAME) return t->val.len == name.len && memcmp(t->val.u.s, name.u.s, name.len) == 0;
    if (t->kind == TPL_N_TUPLE)
        for (const tpl_node *x = t->a; x; x = x->next)
            if (target_has_name(x, name, depth + 1)) return true;
    return false;
}

/* Whether a name of a with-assignment's target (t, its tuple items) is stored again by a later one. */
static bool target_repeats(const tpl_node *t, const tpl_node *later, int depth)
{
    if (!t || depth > TPL_MAX_AST_DEPTH) return false;
    if (t->kind == TPL_N_NAME) {
        for (const tpl_node *s = later; s; s = s->next)
            if (target_has_name(s->a, t->val, 0)) return true;
        return false;
    }
    if (t->kind == TPL_N_TUPLE)
        for (const tpl_node *x = t->a; x; x = x->next)
            if (target_repeats(x, later, depth + 1)) return true;
    return false;
}

/* Whether `{% with %}`'s assignments (s->a targets) store a name twice. */
static bool with_targets_repeat(const tpl_node *s)
{
    for (; s; s = s->next)
        if (target_repeats(s->a, s->next, 0)) return true;
    return false;
}

static void stmt(tpl_comp *c, tpl_node *n);

/* An elif (ERB: elsif) of a chain: the else part that is one IF. */
static bool is_elif(const tpl_node *n) { return n && n->kind == TPL_N_IF && !n->next; }

/* Declares the names a template or an if-branch assigns at its own level, so that macros
 * defined earlier can read them (Jinja2 resolves them in the context at call time). */
static void predeclare_export(tpl_comp *c, tpl_value name, bool exported)
{
    declare(c, name);
    scope_var *v = c->failed ? NULL : scope_var_of(c->fn->scope, name);
    if (v) v->noexport = !exported; /* (the statement last in the source decides, as Jinja2's
                                     * exported_vars.add/discard in source order) */
}

static void predeclare_target(tpl_comp *c, const tpl_node *t)
{
    if (t->kind == TPL_N_NAME) predeclare_export(c, t->val, true);
    else if (t->kind == TPL_N_TUPLE)
        for (const tpl_node *x = t->a; x; x = x->next) predeclare_target(c, x);
}

static void predeclare(tpl_comp *c, tpl_node *n)
{
    for (; n && !c->failed; n = n->next) {
        c->cur_off = n->off; /* (a limit error, "too many variables", points at the statement) */
        switch (n->kind) {
        case TPL_N_SET:
        case TPL_N_SETBLOCK:
            predeclare_target(c, n->a);
            break;
        case TPL_N_MACRO: predeclare_export(c, n->val, true); break;
        case TPL_N_IMPORT: predeclare_export(c, n->val, false); break;
        case TPL_N_FROMIMPORT:
            for (tpl_node *x = n->b; x; x = x->next) predeclare_export(c, x->a ? x->a->val : x->val, false);
            break;
        case TPL_N_IF: {
            const tpl_node *x = n;
            for (; is_elif(x->c); x = x->c) predeclare(c, x->b); /* an elif chain: a loop */
            predeclare(c, x->b);
            predeclare(c, x->c);
            break;
        }
        case TPL_N_GENERATION: predeclare(c, n->b); break;
        default: break;
        }
    }
}

/* ---- frames: Jinja2's scoping (jinja2/idtracking.py) */

#define TPL_FRAME_MAX 64

typedef struct frame_names {
    tpl_value name[TPL_FRAME_MAX];
    uint32_t n;
    bool overflow;                   /* more names than fit: those past the first are declared where assigned */
    uint64_t need;                   /* names that may be read before this frame assigns them */
    uint64_t all;                    /* a bit for every name */
    /* a frame whose statements come one at a time (tpl_comp_facts_stmt): `all` has the names
     * met so far; the names the walk reads that are not (yet) names of the frame go to
     * `unseen`, and `rest` says that every name added later may be read before it is assigned */
    tpl_smap *unseen;
    bool rest;
} frame_names;

static int frame_index(const frame_names *f, tpl_value v)
{
    for (uint32_t i = 0; i < f->n; i++)
        if (f->name[i].len == v.len && memcmp(f->name[i].u.s, v.u.s, v.len) == 0) return (int)i;
    return -1;
}

static void frame_add(frame_names *f, tpl_value name)
{
    if (frame_index(f, name) >= 0) return;
    if (f->n == TPL_FRAME_MAX) { f->overflow = true; return; }
    f->name[f->n++] = name;
}

static void frame_target(frame_names *f, const tpl_node *t)
{
    if (t->kind == TPL_N_NAME) frame_add(f, t->val);
    else if (t->kind == TPL_N_TUPLE)
        for (const tpl_node *x = t->a; x; x = x->next) frame_target(f, x);
}

/* The names a frame's statements assign at its own level (FrameSymbolVisitor: if branches are
 * part of the frame; for/with/macro/call/filter/set-block/autoescape bodies and blocks are not). */
static void frame_stores(frame_names *f, const tpl_node *n)
{
    for (; n; n = n->next) {
        switch (n->kind) {
        case TPL_N_SET: case TPL_N_SETBLOCK: frame_target(f, n->a); break;
        case TPL_N_MACRO: case TPL_N_IMPORT: frame_add(f, n->val); break;
        case TPL_N_FROMIMPORT:
            for (const tpl_node *x = n->b; x; x = x->next) frame_add(f, x->a ? x->a->val : x->val);
            break;
        case TPL_N_IF: {
            const tpl_node *x = n;
            for (; is_elif(x->c); x = x->c) frame_stores(f, x->b); /* an elif chain: a loop */
            frame_stores(f, x->b);
            frame_stores(f, x->c);
            break;
        }
        default: break;
        }
    }
}

static uint64_t frame_bit(const frame_names *f, tpl_value v)
{
    int i = frame_index(f, v);
    return i < 0 ? 0 : (uint64_t)1 << i;
}

static uint64_t frame_target_bits(const frame_names *f, const tpl_node *t)
{
    if (t->kind == TPL_N_NAME) return frame_bit(f, t->val);
    uint64_t m = 0;
    if (t->kind == TPL_N_TUPLE)
        for (const tpl_node *x = t->a; x; x = x->next) m |= frame_target_bits(f, x);
    return m;
}

/* Every name of the frame that the trees n (siblings included) mention while not assigned. */
static void frame_reads(frame_names *f, const tpl_node *n, uint64_t assigned, int depth);

/* The namespaces a set's target reads (`set ns.a, b = ...`). */
static void frame_target_reads(frame_names *f, const tpl_node *t, uint64_t assigned)
{
    if (t->kind == TPL_N_NSREF) frame_reads(f, t->a, assigned, 1);
    else if (t->kind == TPL_N_TUPLE)
        for (const tpl_node *x = t->a; x; x = x->next) frame_target_reads(f, x, assigned);
}

static void frame_reads(frame_names *f, const tpl_node *n, uint64_t assigned, int depth)
{
    if (!f->unseen && (assigned | f->need) == f->all) return; /* nothing left to find */
    if (depth > 200) { f->need = f->all; f->rest = true; return; }
    for (; n; n = n->next) {
        if (n->kind == TPL_N_NAME && n->val.type == TPL_T_STR) {
            uint32_t i = 0;
            for (; i < f->n; i++)
                if (f->name[i].len == n->val.len && f->name[i].u.s[0] == n->val.u.s[0] &&
                    memcmp(f->name[i].u.s, n->val.u.s, n->val.len) == 0) {
                    f->need |= ((uint64_t)1 << i) & ~assigned;
                    break;
                }
            if (i == f->n && f->unseen && !f->rest && f->n < TPL_FRAME_MAX &&
                !tpl_smap_put(f->unseen, n->val.u.s, n->val.len, 1))
                f->rest = true; /* (out of memory: every later name counts as read, which is safe) */
            continue;
        }
        if (n->a) frame_reads(f, n->a, assigned, depth + 1);
        if (n->b) frame_reads(f, n->b, assigned, depth + 1);
        if (n->c) frame_reads(f, n->c, assigned, depth + 1);
        if (tpl_node_d(n)) frame_reads(f, n->d, assigned, depth + 1);
        if (tpl_node_e(n)) frame_reads(f, n->e, assigned, depth + 1);
    }
}

static void frame_reads_kids(frame_names *f, const tpl_node *n, uint64_t assigned)
{
    if (n->a) frame_reads(f, n->a, assigned, 1);
    if (n->b) frame_reads(f, n->b, assigned, 1);
    if (n->c) frame_reads(f, n->c, assigned, 1);
    if (tpl_node_d(n)) frame_reads(f, n->d, assigned, 1);
    if (tpl_node_e(n)) frame_reads(f, n->e, assigned, 1);
}

/* Every name of the frame not assigned yet may be read (a nested frame, an import, ...). */
static void need_rest(frame_names *f, uint64_t assigned)
{
    f->need |= f->all & ~assigned;
    f->rest = true;
}

/* Walks a frame's statements in order, noting the names that may be read before they are
 * assigned on that path; returns the names assigned on every path through n. Only the frame's
 * own statements and expressions are walked (linear in the template over all frames): a nested
 * frame (loop, with, macro, call, filter or set block, autoescape, block, include) counts as
 * reading every name not assigned yet. */
static uint64_t frame_flow(frame_names *f, const tpl_node *n, uint64_t assigned)
{
    for (; n; n = n->next) {
        switch (n->kind) {
        case TPL_N_TEXT: break;
        case TPL_N_SET:
            frame_reads(f, n->b, assigned, 1);
            frame_target_reads(f, n->a, assigned);
            assigned |= frame_target_bits(f, n->a);
            break;
        case TPL_N_IF: {
            /* the names every branch assigns; an elif chain is walked in a loop */
            uint64_t all = ~(uint64_t)0;
            const tpl_node *x = n;
            for (;; x = x->c) {
                frame_reads(f, x->a, assigned, 1);
                all &= frame_flow(f, x->b, assigned);
                if (!is_elif(x->c)) break;
            }
            assigned = all & frame_flow(f, x->c, assigned);
            break;
        }
        case TPL_N_OUTPUT: case TPL_N_NSSET: case TPL_N_DO: case TPL_N_BREAK: case TPL_N_CONTINUE:
            frame_reads_kids(f, n, assigned);
            break;
        case TPL_N_IMPORT:
            need_rest(f, assigned); /* (with context, the imported template reads this frame) */
            assigned |= frame_bit(f, n->val);
            break;
        case TPL_N_FROMIMPORT:
            need_rest(f, assigned);
            for (const tpl_node *x = n->b; x; x = x->next) assigned |= frame_bit(f, x->a ? x->a->val : x->val);
            break;
        case TPL_N_MACRO: case TPL_N_SETBLOCK:
            need_rest(f, assigned);
            assigned |= n->kind == TPL_N_MACRO ? frame_bit(f, n->val) : frame_target_bits(f, n->a);
            break;
        default:
            need_rest(f, assigned);
            break;
        }
    }
    return assigned;
}

/* ---- Jinja2's symbol table of a frame (FrameSymbolVisitor in jinja2/idtracking.py) */

/* Whether a frame enclosing the one whose scope is `own` has a reference of name: a variable
 * (an assignment or a parameter) or a read at its level. An included or imported template and
 * a block have no enclosing frame (they read a context). */
static bool outer_has_ref(tpl_comp *c, const scope *own, tpl_value name)
{
    if (own->ctx_top) return false;
    uint32_t v;
    for (func *f = c->fn; f; f = f->parent) {
        for (const scope *s = f == c->fn ? own->parent : f->scope; s; s = s->parent) {
            if (scope_find((scope *)s, name) >= 0) return true;
            if (s->loads.n && tpl_smap_get(&s->loads, name.u.s, name.len, &v)) return true;
            if (s->ctx_top) return false;
            if (s->func_boundary) break;
        }
    }
    return false;
}

typedef struct jsyms {
    tpl_comp *c;
    frame_names *f;
    scope *s;
    uint64_t ref;      /* the frame's names with a reference of the frame's own */
    uint64_t undef;    /* ... that starts undefined (VAR_LOAD_UNDEFINED) */
    bool branch;       /* inside an if: a first assignment there resolves (branch_update) */
    bool gave_up;      /* too deep: no name starts undefined */
    tpl_smap *stage;   /* the frame's statements one at a time (tpl_comp_facts_stmt): the names
                        * read while not names of the frame, moved to s->loads at the end */
} jsyms;

/* The whole-template facts of a two-pass compile (tpl_comp_facts_begin): what
 * tpl_comp_template's collect_blocks, predeclare, frame_init_at and set_then_print's name_refs
 * learn from the whole tree, gathered one top-level statement at a time. */
typedef struct tpl_facts {
    frame_names f;           /* the template's frame, its names met so far (frame_init_at) */
    jsyms j;
    uint64_t assigned;       /* frame_flow's names assigned on every path so far */
    tpl_smap unseen;         /* f.unseen */
    tpl_smap stage;          /* j.stage */
    tpl_smap refs;           /* name -> NAME nodes of the template (set_then_print) */
    bool open;               /* name_refs' *open for the template */
    bool loops;              /* the template has loops (else set_then_print never asks: no refs) */
    bool blk_failed, blk_nomem; /* the first collect_blocks error */
    tpl_error_kind blk_kind;
    uint32_t blk_off;
    char blk_msg[256];
    /* a template that extends another: check_extends over its statements (its first error
     * comes before any other), its first top-level extends (the parent's name, copied), the
     * extends chain loaded at facts_end (chain[0], the template itself, NULL: its statements
     * come one at a time), and the second pass's place in the template */
    bool extends;
    bool ext_known, ext_known2;      /* check_extends' *known in each pass */
    struct saved_err *ext_err;       /* check_extends' error (NULL: none) */
    bool ext_seen;                   /* the first top-level extends */
    uint32_t ext_off, ext_bad_off;   /* its offset; its name's when not a string constant (+ 1) */
    tpl_value ext_name;
    tpl_node *chain[TPL_MAX_INHERIT];
    uint32_t nchain;
    bool capturing, main_done;       /* after the first top-level extends; after a second */
} tpl_facts;

/* A compile error set aside (a check whose errors come before others'). */
typedef struct saved_err {
    bool failed, nomem;
    tpl_error_kind kind;
    uint32_t off;
    char msg[256];
} saved_err;

static void err_save(tpl_comp *c, saved_err *e)
{
    e->failed = c->failed;
    e->nomem = c->nomem;
    e->kind = c->err_kind;
    e->off = c->err_off;
    if (c->failed) memcpy(e->msg, c->msg, sizeof e->msg);
    c->failed = c->nomem = false;
}

static void err_restore(tpl_comp *c, const saved_err *e)
{
    c->failed = e->failed;
    c->nomem = e->nomem;
    c->err_kind = e->kind;
    c->err_off = e->off;
    if (e->failed) memcpy(c->msg, e->msg, sizeof c->msg);
}

static void js_load(jsyms *j, tpl_value name)
{
    int i = frame_index(j->f, name);
    if (i >= 0) {
        uint64_t bit = (uint64_t)1 << i;
        /* Symbols.load: a reference of its own (resolve) unless an enclosing frame has one */
        if (!(j->ref & bit) && !outer_has_ref(j->c, j->s, name)) j->ref |= bit;
        return;
    }
    uint32_t v;
    /* (a frame that is full takes no more names: its loads are final) */
    tpl_smap *m = j->stage && j->f->n < TPL_FRAME_MAX ? j->stage : &j->s->loads;
    if (m->n && tpl_smap_get(m, name.u.s, name.len, &v)) return;
    /* a variable of the frame's scope is a reference there already (outer_has_ref looks at the
     * scope's variables first; they are never removed): not noted twice */
    if (scope_find(j->s, name) >= 0) return;
    m->arena = j->c->tmp;
    if (!tpl_smap_put(m, name.u.s, name.len, 1)) c_nomem(j->c, j->c->cur_off);
}

static void js_store(jsyms *j, tpl_value name)
{
    int i = frame_index(j->f, name);
    if (i < 0) return;
    uint64_t bit = (uint64_t)1 << i;
    if (j->ref & bit) return;
    j->ref |= bit;
    /* Symbols.store: an alias of the enclosing frame's reference, else undefined; an
     * assignment first seen in an if branch resolves instead (Symbols.branch_update) */
    if (!j->branch && !outer_has_ref(j->c, j->s, name)) j->undef |= bit;
}

static void js_expr(jsyms *j, const tpl_node *n, int depth)
{
    if (depth > 200) { j->gave_up = true; return; }
    for (; n && !j->gave_up; n = n->next) {
        if (n->kind == TPL_N_NAME && n->val.type == TPL_T_STR) { js_load(j, n->val); continue; }
        if (n->a) js_expr(j, n->a, depth + 1);
        if (n->b) js_expr(j, n->b, depth + 1);
        if (n->c) js_expr(j, n->c, depth + 1);
        if (tpl_node_d(n)) js_expr(j, n->d, depth + 1);
        if (tpl_node_e(n)) js_expr(j, n->e, depth + 1);
    }
}

static void js_expr(jsyms *j, const tpl_node *n, int depth);

static void js_target(jsyms *j, const tpl_node *t)
{
    if (t->kind == TPL_N_NSREF) js_expr(j, t->a, 1);
    else if (t->kind == TPL_N_NAME) js_store(j, t->val);
    else if (t->kind == TPL_N_TUPLE)
        for (const tpl_node *x = t->a; x; x = x->next) js_target(j, x);
}

static void js_stmts(jsyms *j, const tpl_node *n, int depth)
{
    if (depth > 200) { j->gave_up = true; return; }
    for (; n && !j->gave_up; n = n->next) {
        switch (n->kind) {
        case TPL_N_OUTPUT: case TPL_N_DO: case TPL_N_CALLBLOCK: case TPL_N_FILTERBLOCK:
        case TPL_N_INCLUDE: case TPL_N_EXTENDS:
            js_expr(j, n->a, 1);
            break;
        case TPL_N_FOR: js_expr(j, n->b, 1); break;
        case TPL_N_SET: js_expr(j, n->b, 1); js_target(j, n->a); break;
        case TPL_N_NSSET: js_expr(j, n->b, 1); js_expr(j, n->a, 1); break;
        case TPL_N_SETBLOCK: js_target(j, n->a); break;
        case TPL_N_MACRO: js_store(j, n->val); break;
        case TPL_N_WITH:
            for (const tpl_node *x = n->a; x; x = x->next) js_expr(j, x->b, 1);
            break;
        case TPL_N_IMPORT: js_expr(j, n->a, 1); js_store(j, n->val); break;
        case TPL_N_FROMIMPORT:
            js_expr(j, n->a, 1);
            for (const tpl_node *x = n->b; x; x = x->next) js_store(j, x->a ? x->a->val : x->val);
            break;
        case TPL_N_IF: {
            bool save = j->branch;
            const tpl_node *x = n;
            for (;; x = x->c) {
                js_expr(j, x->a, 1);
                j->branch = true;
                js_stmts(j, x->b, depth + 1);
                j->branch = save;
                if (!is_elif(x->c)) break;
                j->branch = true; /* the elif tests are inside a branch too */
            }
            j->branch = true;
            js_stmts(j, x->c, depth + 1);
            j->branch = save;
            break;
        }
        case TPL_N_GENERATION: js_stmts(j, n->b, depth + 1); break;
        default: break; /* text, blocks, autoescape (a Scope), break, continue */
        }
    }
}

/* Enters a Jinja2 frame (a loop body, each iteration; with, set-block, filter-block and autoescape
 * bodies; a macro or caller; an included template; the template itself) whose scope was just
 * pushed: declares the names its statements assign and gives each its value at the frame's
 * start, as Jinja2's enter_frame does: the enclosing frames' variable of that name when there is
 * one (an `if` that assigns it may not run), else Jinja2's `missing` when the frame assigns it
 * before reading it (VAR_LOAD_UNDEFINED: a macro or loop inside that reads it before the
 * assignment runs gets an undefined value, not the state's), else unset (read from the
 * context). Names the frame assigns before anything could read them are only declared. */
static void frame_init_at(tpl_comp *c, tpl_node *fbody, bool root, tpl_node *const *others, uint32_t nothers);

static void frame_init(tpl_comp *c, tpl_node *fbody) { frame_init_at(c, fbody, false, NULL, 0); }
static void frame_enter(tpl_comp *c, const frame_names *f, uint64_t undef, bool root, tpl_node *const *others,
                        uint32_t nothers);

/* root: the top level of a template of the extends chain, whose names predeclare() declared
 * (unset); its variables are shared with the other templates of the chain (others), so a name
 * that one of them assigns keeps its value (Jinja2 has a variable per template there, which
 * the blocks read through the context). */
static void frame_init_at(tpl_comp *c, tpl_node *fbody, bool root, tpl_node *const *others, uint32_t nothers)
{
    /* Frame.inner() is never a soft frame: an unknown filter or test in a loop, with, macro,
     * call, filter or set block, or autoescape body is Jinja2's compile-time error even inside an
     * `if` (pop_scope restores the enclosing frame's softness) */
    c->soft = false;
    if (c->syn != TPL_SYN_JINJA || c->failed) return;
    /* the frame's names live while it is entered only (1 KiB a frame in the compile's arena
     * was ~20x a template of small macros, loops or with blocks: issue 13 §1) */
    frame_names *f = malloc(sizeof *f);
    if (!f) { c_nomem(c, c->cur_off); return; }
    f->n = 0;
    f->overflow = false;
    f->need = 0;
    f->unseen = NULL;
    f->rest = false;
    frame_stores(f, fbody);
    jsyms j = { 0 };
    j.c = c;
    j.f = f;
    j.s = c->fn->scope;
    js_stmts(&j, fbody, 0);
    if (j.gave_up) j.undef = 0;
    if (f->n == 0) { free(f); return; }
    f->all = f->n >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << f->n) - 1;
    if (f->overflow) f->need = f->all;
    else frame_flow(f, fbody, 0);
    frame_enter(c, f, j.undef, root, others, nothers);
    free(f);
}

/* frame_init_at's second half: the frame's names f (need computed), undef those that start
 * undefined: declares each and gives it its value at the frame's start. */
static void frame_enter(tpl_comp *c, const frame_names *f, uint64_t undef, bool root, tpl_node *const *others,
                        uint32_t nothers)
{
    frame_names *o = NULL;
    for (uint32_t i = 0; i < f->n && !c->failed; i++) {
        tpl_value name = f->name[i];
        if (root) {
            if (!(f->need >> i & 1) || !(undef >> i & 1)) continue;
            bool shared = false;
            for (uint32_t t = 0; t < nothers && !shared; t++) {
                if (!others[t]) { /* the main template of a two-pass compile: its frame's names */
                    const frame_names *m = &c->facts->f;
                    shared = m->overflow || frame_index(m, name) >= 0;
                    continue;
                }
                if (!o && !(o = malloc(sizeof *o))) { c_nomem(c, c->cur_off); break; }
                o->n = 0;
                o->overflow = false;
                o->unseen = NULL;
                frame_stores(o, others[t]);
                shared = o->overflow || frame_index(o, name) >= 0;
            }
            if (c->failed) break;
            if (shared) continue;
        } else {
            if (scope_find(c->fn->scope, name) >= 0) continue; /* a parameter of the frame */
            if (!(f->need >> i & 1)) { declare(c, name); continue; }
        }
        uint32_t slot;
        scope_var *var;
        res_kind r = resolve_var(c, name, &slot, &var, NULL);
        if (undef >> i & 1) {
            char msg[160];
            int k = snprintf(msg, sizeof msg, "'%.*s' is undefined", (int)name.len, name.u.s);
            if (k < 0 || (size_t)k >= sizeof msg) k = snprintf(msg, sizeof msg, "a variable is undefined");
            emit(c, TPL_OP_UNDEF_MSG, add_const(c, tpl_v_str(msg, (size_t)k)), 1);
            uint32_t sl = declare(c, name);
            emit(c, TPL_OP_STORE_SLOT, sl, -1);
            scope_var *nv = find_in_func(c->fn, name, &(bool){ false });
            if (nv) nv->missing = true;
        } else if (r == R_LOCAL || r == R_ROOT || r == R_OUTER || r == R_UP) {
            bool missing = var && var->missing;
            load_name(c, name);
            emit(c, TPL_OP_STORE_SLOT, declare(c, name), -1);
            scope_var *nv = find_in_func(c->fn, name, &(bool){ false });
            if (nv && missing) nv->missing = true;
        } else {
            emit(c, TPL_OP_UNSET_SLOT, declare(c, name), 0);
        }
    }
    free(o);
}

static void func_begin(tpl_comp *c, func *f)
{
    memset(f, 0, sizeof *f);
    f->parent = c->fn;
    f->is_macro = true;
    f->rec_self = f->rec_depth = f->rec_loop = -1;
    f->save_buffered = c->buffered;
    f->save_gen_fn = c->gen_fn;
    f->save_import_out = c->import_out;
    c->buffered = 1;
    c->gen_fn = true;
    c->import_out = false;
    c->fn = f;
    push_scope(c, true);
}

/* Ends a nested function started after the JUMP at `skip`; registers its descriptor and pushes
 * its closure (MACRO). */
static void func_end(tpl_comp *c, func *f, tpl_macro_desc *d, tpl_value name, tpl_list *params, uint32_t skip,
                     uint32_t off)
{
    emit(c, TPL_OP_RETURN, 0, 0);
    d->nslots = (uint16_t)f->nslots;
    d->max_stack = (uint16_t)(f->max_depth + 4);
    pop_scope(c);
    c->fn = f->parent;
    c->buffered = f->save_buffered;
    c->gen_fn = f->save_gen_fn;
    c->import_out = f->save_import_out;
    patch_a(c, skip, here(c));
    if (c->failed) return;
    if (f->nslots > 0xFFFF || f->max_depth > 0xFFF0) { cerror(c, off, "function too large"); return; }
    tpl_value lv = tpl_v_list(params);
    lv.flags = TPL_F_TUPLE;
    d->params = add_const(c, lv);
    d->name = add_name(c, name);
    if (!cgrow(c, (void **)&c->macros, &c->mcap, c->nmacros + 1, sizeof *c->macros)) { c_nomem(c, off); return; }
    c->macros[c->nmacros] = *d;
    c->cur_off = off;
    emit(c, TPL_OP_MACRO, (uint32_t)c->nmacros, 1);
    c->nmacros++;
}

static tpl_list *param_list(tpl_comp *c, uint32_t cap)
{
    tpl_list *l = tpl_list_new(&c->p->arena, cap);
    if (!l) c_nomem(c, c->cur_off);
    return l;
}

static void param_push(tpl_comp *c, tpl_list *l, tpl_value name)
{
    char *s = tpl_arena_strdup(&c->p->arena, name.u.s, name.len);
    if (!l || !s || !tpl_list_push(&c->p->arena, l, tpl_v_str(s, name.len))) c_nomem(c, c->cur_off);
}

/* Whether the list at n loads the name `caller` outside blocks (Jinja2's find_undeclared over a
 * macro's body: only then must a `caller` parameter have a default). */
/* Jinja2's find_undeclared of one name over a macro's or call block's body (UndeclaredNameVisitor):
 * the FIRST Name node with the name in the visitor's order decides: a load (1) makes the macro
 * catch varargs, kwargs or caller; a store or a nested macro's parameter (2) makes it the frame's
 * own name for good; 0 none. Blocks are not visited; import aliases, macro names and a namespace
 * store's name are strings there, no Name node. Fields in Jinja2's order: For target, iter, body,
 * else, test; Macro and CallBlock params before their defaults; With targets before values;
 * AssignBlock target, filter, body; FilterBlock body before its filter. */
static int target_occ(const tpl_node *t, const char *name, size_t len, int depth)
{
    if (!t || depth > 200) return 0;
    if (t->kind == TPL_N_NAME) return name_eq(t->val, name, len) ? 2 : 0;
    if (t->kind == TPL_N_TUPLE || t->kind == TPL_N_LIST)
        for (const tpl_node *x = t->a; x; x = x->next) {
            int r = target_occ(x, name, len, depth + 1);
            if (r) return r;
        }
    return 0;
}

static int first_occ(const tpl_node *n, const char *name, size_t len, int depth)
{
    if (depth > 200) return 1;
#define OCC(x) do { int r_ = first_occ((x), name, len, depth + 1); if (r_) return r_; } while (0)
    for (; n; n = n->next) {
        switch (n->kind) {
        case TPL_N_BLOCK: continue;
        case TPL_N_NAME:
            if (name_eq(n->val, name, len)) return 1;
            continue;
        case TPL_N_SET: {
            int r = target_occ(n->a, name, len, depth + 1);
            if (r) return r;
            OCC(n->b);
            continue;
        }
        case TPL_N_SETBLOCK: {
            int r = target_occ(n->a, name, len, depth + 1);
            if (r) return r;
            OCC(n->c);
            OCC(n->b);
            continue;
        }
        case TPL_N_NSSET: OCC(n->b); continue;
        case TPL_N_FOR: {
            int r = target_occ(n->a, name, len, depth + 1);
            if (r) return r;
            OCC(n->b); OCC(n->c); OCC(n->d); OCC(n->e);
            continue;
        }
        case TPL_N_MACRO: case TPL_N_CALLBLOCK: {
            const tpl_node *params = n->kind == TPL_N_MACRO ? n->a : n->b;
            if (n->kind == TPL_N_CALLBLOCK) OCC(n->a);
            for (const tpl_node *p = params; p; p = p->next)
                if (name_eq(p->val, name, len)) return 2;
            for (const tpl_node *p = params; p; p = p->next)
                if (p->kind == TPL_N_KWARG) OCC(p->a);
            OCC(n->kind == TPL_N_MACRO ? n->b : n->c);
            continue;
        }
        case TPL_N_WITH:
            for (const tpl_node *x = n->a; x; x = x->next) {
                int r = x->kind == TPL_N_SET ? target_occ(x->a, name, len, depth + 1) : 0;
                if (r) return r;
            }
            for (const tpl_node *x = n->a; x; x = x->next) OCC(x->kind == TPL_N_SET ? x->b : x);
            OCC(n->b);
            continue;
        case TPL_N_FILTERBLOCK: OCC(n->b); OCC(n->a); continue;
        case TPL_N_IMPORT: case TPL_N_FROMIMPORT: case TPL_N_INCLUDE: case TPL_N_EXTENDS: OCC(n->a); continue;
        case TPL_N_IF: {
            const tpl_node *x = n;
            for (; is_elif(x->c); x = x->c) { OCC(x->a); OCC(x->b); } /* an elif chain: a loop */
            OCC(x->a); OCC(x->b); OCC(x->c);
            continue;
        }
        default:
            OCC(n->a); OCC(n->b); OCC(n->c); OCC(tpl_node_d(n)); OCC(tpl_node_e(n));
        }
    }
#undef OCC
    return 0;
}

/* Whether the tree at n (a list) reads name outside blocks, as Jinja2's find_undeclared sees it
 * (UndeclaredNameVisitor: no block's body; a nested macro's or loop's body counts). Targets and
 * parameters are not reads. An absent child is not visited (a call each was most of the walk's
 * cost: issue 21, compile time); every kind but NAME and BLOCK visits one child whatever it is,
 * so such a node at the depth limit gives true, as the visit of that child would. */
static bool reads_name(const tpl_node *n, const char *name, size_t len, int depth)
{
    if (depth > 200) return true;
#define RN(x) do { const tpl_node *x_ = (x); if (x_ && reads_name(x_, name, len, depth + 1)) return true; } while (0)
    for (; n; n = n->next) {
        switch (n->kind) {
        case TPL_N_BLOCK: continue;
        case TPL_N_NAME:
            if (name_eq(n->val, name, len)) return true;
            continue;
        default: break;
        }
        if (depth >= 200) return true;
        switch (n->kind) {
        case TPL_N_SET: case TPL_N_SETBLOCK:
            RN(n->b); RN(n->c);
            continue;
        case TPL_N_MACRO:
            for (const tpl_node *p = n->a; p; p = p->next)
                if (p->kind == TPL_N_KWARG) RN(p->a);
            RN(n->b);
            continue;
        case TPL_N_CALLBLOCK:
            for (const tpl_node *p = n->b; p; p = p->next)
                if (p->kind == TPL_N_KWARG) RN(p->a);
            RN(n->a); RN(n->c);
            continue;
        case TPL_N_FOR:
            RN(n->b); RN(n->c); RN(n->d); RN(n->e);
            continue;
        default:
            RN(n->a); RN(n->b); RN(n->c); RN(tpl_node_d(n)); RN(tpl_node_e(n));
        }
    }
#undef RN
    return false;
}

/* Whether the tree at n (a list) has a scoped block anywhere (Jinja2's node.find_all(Block)). An
 * absent child is not visited; a node with children to look at, at the depth limit, gives true,
 * as the visit of its first child would. */
static bool has_scoped_block(const tpl_node *n, int depth)
{
    if (depth > 200) return true;
    for (; n; n = n->next) {
        if (n->kind == TPL_N_BLOCK && (n->op & 1)) return true;
        if (n->kind == TPL_N_CONST || n->kind == TPL_N_NAME || n->kind == TPL_N_TEXT) continue;
        if (depth >= 200) return true;
        const tpl_node *kids[5] = { n->a, n->b, n->c, tpl_node_d(n), tpl_node_e(n) };
        for (int i = 0; i < 5; i++)
            if (kids[i] && has_scoped_block(kids[i], depth + 1)) return true;
    }
    return false;
}

/* Whether the statements at n (a list) store name at their own level, as predeclare sees them
 * (a set or set block target, a macro, an import's name, in if-branches too): Jinja2's frame then
 * has the name as a store of its own, which an included template sees. */
static bool stores_name(const tpl_node *n, const char *name, size_t len, int depth)
{
    if (depth > 200) return true;
    for (; n; n = n->next) {
        switch (n->kind) {
        case TPL_N_SET: case TPL_N_SETBLOCK:
            if (n->a && n->a->kind == TPL_N_NAME && name_eq(n->a->val, name, len)) return true;
            if (n->a && n->a->kind == TPL_N_TUPLE)
                for (const tpl_node *x = n->a->a; x; x = x->next)
                    if (x->kind == TPL_N_NAME && name_eq(x->val, name, len)) return true;
            break;
        case TPL_N_MACRO: case TPL_N_IMPORT:
            if (name_eq(n->val, name, len)) return true;
            break;
        case TPL_N_FROMIMPORT:
            for (const tpl_node *x = n->b; x; x = x->next)
                if (name_eq(x->a ? x->a->val : x->val, name, len)) return true;
            break;
        case TPL_N_IF: {
            const tpl_node *x = n;
            for (; is_elif(x->c); x = x->c)
                if (stores_name(x->b, name, len, depth + 1)) return true;
            if (stores_name(x->b, name, len, depth + 1) || stores_name(x->c, name, len, depth + 1)) return true;
            break;
        }
        case TPL_N_GENERATION:
            if (stores_name(n->b, name, len, depth + 1)) return true;
            break;
        default: break;
        }
    }
    return false;
}

/* Hides a name of the innermost scope from included templates (scope_var.ctx_hidden). */
static void hide_from_ctx(tpl_comp *c, const char *name, size_t len)
{
    scope_var *v = c->fn->scope ? scope_var_of(c->fn->scope, tpl_v_str(name, len)) : NULL;
    if (v) v->ctx_hidden = true;
}

/* Whether the last of a filter block's filters (a chain) is a builtin that gives a str whatever
 * its subject (or fails): its result needs no check that it is one (stmt: FILTERBLOCK). */
static bool filter_gives_str(tpl_comp *c, const tpl_node *f)
{
    static const char *const str_filters[] = { "upper", "lower", "trim", "title", "capitalize", "center", "indent",
                                               "replace", "e", "escape", "forceescape", "safe", "string",
                                               "striptags", "format", "truncate", "wordwrap", "urlize",
                                               "urlencode", "tojson", "join" };
    while (f && f->next) f = f->next;
    if (!f || f->kind != TPL_N_FILTER || host_func(c, f->val, TPL_HOST_FILTER)) return false;
    for (size_t i = 0; i < sizeof str_filters / sizeof *str_filters; i++)
        if (f->val.len == strlen(str_filters[i]) && memcmp(f->val.u.s, str_filters[i], f->val.len) == 0) return true;
    return false;
}

/* tpl's refusal of an include without context where Jinja2 3.1's `yield from` makes a function a
 * generator (refuse_generator_function, stmt_include_without) */
static const char include_without_msg[] =
    "include without context inside a macro, call block or recursive loop is not supported (Jinja2 3.1's "
    "`yield from` makes that function a generator: its call gives <generator object ...>)";

/* The first `{% include ... without context %}` among statements n of one Jinja2 function (a
 * macro's or caller's body, a recursive loop's body and else), outside the functions nested in
 * them (macros, call blocks' callers, recursive loops, blocks): Jinja2 3.1 compiles it to `yield
 * from`, which makes that whole Python function a generator whether or not the include runs (a
 * macro's call gives `<generator object ...>`, a recursive loop a TypeError). NULL when none. */
static const tpl_node *generator_include(const tpl_node *n, int depth)
{
    if (depth > TPL_MAX_AST_DEPTH) return NULL;
    for (; n; n = n->next) {
        switch (n->kind) {
        case TPL_N_INCLUDE:
            if (n->op & 2) return n;
            continue;
        case TPL_N_MACRO: case TPL_N_CALLBLOCK: case TPL_N_BLOCK: continue;
        case TPL_N_FOR:
            if (n->op & 1) continue;
            break;
        default: break;
        }
        const tpl_node *kids[5] = { n->a, n->b, n->c, tpl_node_d(n), tpl_node_e(n) };
        for (int i = 0; i < 5; i++) {
            const tpl_node *r = generator_include(kids[i], depth + 1);
            if (r) return r;
        }
    }
    return NULL;
}

/* At the entry of a function whose body holds an include without context (generator_include):
 * fails when it is called, as tpl cannot print Jinja2's generator object. */
static void refuse_generator_function(tpl_comp *c, const tpl_node *fbody)
{
    const tpl_node *inc = c->syn == TPL_SYN_JINJA ? generator_include(fbody, 0) : NULL;
    if (!inc) return;
    uint32_t off = c->cur_off;
    c->cur_off = inc->off;
    emit(c, TPL_OP_FAIL, add_const(c, tpl_v_str(include_without_msg, sizeof include_without_msg - 1)), 1);
    emit(c, TPL_OP_POP, 0, -1);
    c->cur_off = off;
}

/* Compiles a macro (or a call block's caller) and pushes its closure. params: NAME or KWARG
 * (with a default) nodes. */
static void compile_function(tpl_comp *c, tpl_value name, tpl_node *params, tpl_node *fbody, uint32_t off)
{
    bool soft = c->soft;
    c->soft = false;
    uint32_t skip = emit(c, TPL_OP_JUMP, 0, 0);
    func f;
    func_begin(c, &f);
    tpl_list *pl = param_list(c, 4);
    uint32_t nparams = 0;
    bool defaulted = false;
    for (tpl_node *p = params; p && !c->failed; p = p->next) {
        /* Jinja2's parse_signature and macro_body */
        if (p->kind == TPL_N_KWARG) defaulted = true;
        else if (defaulted) { cerror(c, p->off, "non-default argument follows default argument"); break; }
        else if (name_eq(p->val, "caller", 6) && first_occ(fbody, "caller", 6, 0) == 1) {
            cfail(c, TPL_EK_ASSERTION, p->off, "When defining macros or call blocks the special \"caller\" argument must be omitted or be given a default.");
            break;
        }
        /* (a call passes at most 255 arguments; the check for duplicates is linear per name) */
        if (nparams == 255) { cerror(c, p->off, "too many parameters (more than 255)"); break; }
        param_push(c, pl, p->val);
        if (scope_find(c->fn->scope, p->val) >= 0) { cerror(c, p->off, "duplicate argument '%.*s' in macro", (int)p->val.len, p->val.u.s); break; }
        declare(c, p->val);
        nparams++;
    }
    /* (Jinja2's skip_special_params: a parameter named varargs or kwargs is an ordinary one) */
    bool pv = false, pk = false, pc = false;
    for (tpl_node *p = params; p; p = p->next) {
        pv = pv || name_eq(p->val, "varargs", 7);
        pk = pk || name_eq(p->val, "kwargs", 6);
        pc = pc || name_eq(p->val, "caller", 6);
    }
    /* the macro catches what its body reads before any store of the name (find_undeclared); a
     * name it does not catch is not declared here: stored, it is the frame's, else the context's */
    bool cv = first_occ(fbody, "varargs", 7, 0) == 1 && !pv;
    bool ck = first_occ(fbody, "kwargs", 6, 0) == 1 && !pk;
    bool cc = first_occ(fbody, "caller", 6, 0) == 1;
    uint32_t vs = cv ? declare(c, tpl_v_str("varargs", 7)) : 0;
    uint32_t ks = ck ? declare(c, tpl_v_str("kwargs", 6)) : 0;
    uint32_t cs = cc || pc ? declare(c, tpl_v_str("caller", 6)) : 0;
    /* (only the implicit ones: a parameter or a store of the body with the name is the frame's) */
    static const struct { const char *s; size_t n; } implicit[3] = { { "varargs", 7 }, { "kwargs", 6 }, { "caller", 6 } };
    for (int k = 0; k < 3; k++) {
        bool own = stores_name(fbody, implicit[k].s, implicit[k].n, 0);
        for (tpl_node *p = params; p && !own; p = p->next) own = name_eq(p->val, implicit[k].s, implicit[k].n);
        if (!own && !reads_name(fbody, implicit[k].s, implicit[k].n, 0)) hide_from_ctx(c, implicit[k].s, implicit[k].n);
    }
    tpl_macro_desc d = { 0 };
    d.entry = here(c);
    d.nparams = (uint16_t)nparams;
    refuse_generator_function(c, fbody);
    uint32_t i = 0;
    for (tpl_node *p = params; p && !c->failed; p = p->next, i++) {
        /* a parameter the call does not pass: its default, else Jinja2's undefined (never the
         * state's value of that name) */
        c->cur_off = p->off;
        emit(c, TPL_OP_JSET, i, 0);
        uint32_t pos = emit_raw(c, 0);
        if (p->kind == TPL_N_KWARG) {
            expr(c, p->a);
        } else {
            char msg[160];
            int k = snprintf(msg, sizeof msg, "parameter '%.*s' was not provided", (int)p->val.len, p->val.u.s);
            if (k < 0 || (size_t)k >= sizeof msg) k = snprintf(msg, sizeof msg, "a parameter was not provided");
            emit(c, TPL_OP_UNDEF_MSG, add_const(c, tpl_v_str(msg, (size_t)k)), 1);
        }
        emit(c, TPL_OP_STORE_SLOT, i, -1);
        patch_word(c, pos, here(c));
    }
    frame_init(c, fbody);
    body(c, fbody);
    d.varargs_slot = (int16_t)(cv ? (int)vs : -1);
    d.kwargs_slot = (int16_t)(ck ? (int)ks : -1);
    d.caller_slot = (int16_t)(cc ? (int)cs : -1);
    func_end(c, &f, &d, name, pl, skip, off);
    c->soft = soft;
}

/* The body of a for loop; the iterable is on the stack. depth_slot >= 0 in a recursive loop's
 * function (its depth argument). */
/* Whether a loop body reads `loop` only as loop.index, index0, first, depth, depth0, previtem,
 * cycle(...) or changed(...): nothing that looks ahead (last, nextitem, length, revindex) or takes
 * the loop object whole (and no include, which would see it). Conservative: any `loop` counts,
 * also an inner loop's. */
static bool loop_reads_no_lookahead(const tpl_node *n, int depth)
{
    static const char *const safe[] = { "index", "index0", "first", "depth", "depth0", "previtem", "cycle", "changed" };
    if (depth > 200) return false;
    for (; n; n = n->next) {
        if (n->kind == TPL_N_INCLUDE) return false;
        if (n->kind == TPL_N_NAME && name_eq(n->val, "loop", 4)) return false;
        if (n->kind == TPL_N_GETATTR && n->a && n->a->kind == TPL_N_NAME && name_eq(n->a->val, "loop", 4)) {
            bool ok = false;
            for (size_t i = 0; i < sizeof safe / sizeof *safe; i++)
                if (name_eq(n->val, safe[i], strlen(safe[i]))) ok = true;
            if (!ok) return false;
        } else if (!loop_reads_no_lookahead(n->a, depth + 1)) {
            return false;
        }
        if (!loop_reads_no_lookahead(n->b, depth + 1) || !loop_reads_no_lookahead(n->c, depth + 1) ||
            !loop_reads_no_lookahead(tpl_node_d(n), depth + 1) || !loop_reads_no_lookahead(tpl_node_e(n), depth + 1))
            return false;
    }
    return true;
}

/* Whether a tree names `loop` anywhere. */
static bool names_loop(const tpl_node *n, int depth)
{
    if (depth > 200) return true;
    for (; n; n = n->next) {
        if (n->kind == TPL_N_NAME && name_eq(n->val, "loop", 4)) return true;
        if (names_loop(n->a, depth + 1) || names_loop(n->b, depth + 1) || names_loop(n->c, depth + 1) ||
            names_loop(tpl_node_d(n), depth + 1) || names_loop(tpl_node_e(n), depth + 1))
            return true;
    }
    return false;
}

/* The test of `for x in xs if test` as a function of one item (Jinja2's loop filter function:
 * the loop's targets are its own variables, every other name the enclosing frame's); pushes its
 * closure. Its result is its output: "1" for a kept item, "" for a dropped one (LOOP_FILTER). */
static void loop_test_function(tpl_comp *c, tpl_node *n)
{
    bool soft = c->soft;
    c->soft = false; /* the loop's test frame is an inner one (never soft) */
    uint32_t skip = emit(c, TPL_OP_JUMP, 0, 0);
    func f;
    func_begin(c, &f);
    f.is_test = true;
    tpl_value pname = tpl_v_str("(item)", 6);
    tpl_list *pl = param_list(c, 1);
    param_push(c, pl, pname);
    uint32_t ps = declare(c, pname);
    tpl_macro_desc d = { 0 };
    d.entry = here(c);
    d.nparams = 1;
    d.varargs_slot = d.kwargs_slot = d.caller_slot = -1;
    c->cur_off = n->off;
    emit(c, TPL_OP_LOAD_SLOT, ps, 1);
    emit_raw(c, add_name(c, pname));
    store_target(c, n->a);
    expr(c, n->e);
    uint32_t drop = emit(c, sop(c, TPL_OP_JF_PY), 0, -1);
    emit_text(c, "1", 1);
    patch_a(c, drop, here(c));
    func_end(c, &f, &d, tpl_v_str("(loop filter)", 13), pl, skip, n->off);
    c->soft = soft;
}

static bool makes_closure(const tpl_node *n, int depth);

/* The variables of the current scope so far are the parameters of a loop or with block that
 * makes a closure (its targets, `loop`): reset_frame gives them `missing`. */
static void mark_params(tpl_comp *c)
{
    scope *s = c->fn->scope;
    for (uint32_t i = 0; s && i < s->nvars; i++) s->vars[i].reset_param = true;
}

/* A loop or with block that makes a closure ends (Jinja2's CodeGenerator.leave_frame: each name
 * of the frame becomes `missing`, which a macro made there and called after reads): a parameter
 * holds `missing` (MISSING_SLOT; a macro's read prints it as its text, refuses other uses), any
 * other name an undefined value (Jinja2's `undefined(name=...) if l_1_x is missing`). */
static bool scope_has_shared(const scope *s)
{
    for (uint32_t i = 0; s && i < s->nvars; i++)
        if (s->vars[i].shared) return true;
    return false;
}

/* (all: the frame made a closure, every name is reset; else only those sharing a slot) */
static __attribute__((noinline)) void reset_frame(tpl_comp *c, bool all)
{
    scope *s = c->fn->scope;
    for (uint32_t i = 0; s && i < s->nvars && !c->failed; i++) {
        scope_var *v = &s->vars[i];
        if (v->name.len && v->name.u.s[0] == '(') continue; /* (hidden: no name of Jinja2's) */
        if (!all && !v->shared) continue;
        bool param = v->reset_param || v->shared_param;
        if (c->include_depth == 0) { /* (a later frame at this depth declaring it shares the slot) */
            char key[256];
            size_t kn = shared_key(s, v->name, key, sizeof key);
            char *k = kn ? tpl_arena_alloc(c->tmp, kn) : NULL;
            if (k) {
                memcpy(k, key, kn);
                c->fn->shared.arena = c->tmp;
                if (!tpl_smap_put(&c->fn->shared, k, (uint32_t)kn, v->slot | (uint32_t)param << 31)) {
                    c_nomem(c, c->cur_off);
                    return;
                }
            }
        }
        if (param) {
            emit(c, TPL_OP_MISSING_SLOT, v->slot, 0);
            continue;
        }
        char msg[160];
        int k = snprintf(msg, sizeof msg, "'%.*s' is undefined", (int)v->name.len, v->name.u.s);
        if (k < 0 || (size_t)k >= sizeof msg) k = snprintf(msg, sizeof msg, "a variable is undefined");
        emit(c, TPL_OP_UNDEF_MSG, add_const(c, tpl_v_str(msg, (size_t)k)), 1);
        emit(c, TPL_OP_STORE_SLOT, v->slot, -1);
    }
}

/* Whether a name `name` is read inside a macro or call block among the statements at n (inside:
 * n lies in one). */
static bool closure_reads(const tpl_node *n, tpl_value name, bool inside, int depth)
{
    for (; n; n = n->next) {
        if (depth > 200) return true;
        if (inside && n->kind == TPL_N_NAME && name_eq(n->val, name.u.s, name.len)) return true;
        bool in = inside || n->kind == TPL_N_MACRO || n->kind == TPL_N_CALLBLOCK;
        if (closure_reads(n->a, name, in, depth + 1) || closure_reads(n->b, name, in, depth + 1) ||
            closure_reads(n->c, name, in, depth + 1) || closure_reads(tpl_node_d(n), name, in, depth + 1) ||
            closure_reads(tpl_node_e(n), name, in, depth + 1))
            return true;
    }
    return false;
}

/* A loop or with block that makes a closure: the names its frame reads from the context at its
 * own level (no enclosing frame has them) that a closure made in it reads too are Jinja2's
 * references of that frame (l_1_x = resolve('x') at its start, `missing` after leave_frame):
 * declared in it, unset (read from the context as before), so reset_frame makes them undefined
 * for a macro called after the block. A builtin global's name is left to the context. */
static __attribute__((noinline)) void declare_frame_loads(tpl_comp *c, const tpl_node *fbody)
{
    scope *s = c->fn->scope;
    if (!s || !s->loads.n || !s->loads.e || c->no_context || c->failed) return;
    for (uint32_t i = 0; i < s->loads.cap && !c->failed; i++) {
        const tpl_smap_ent *e = &s->loads.e[i];
        if (!e->s || !e->len) continue;
        tpl_value name = tpl_v_str(e->s, e->len);
        if (e->s[0] == '(' || name_eq(name, "loop", 4) || name_eq(name, "caller", 6) || name_eq(name, "varargs", 7) ||
            name_eq(name, "kwargs", 6) || name_eq(name, "self", 4) || name_eq(name, "super", 5))
            continue;
        if (scope_find(s, name) >= 0 || outer_has_ref(c, s, name) || !closure_reads(fbody, name, false, 0)) continue;
        uint32_t slot;
        res_kind r = resolve(c, name, &slot);
        if (r == R_GLOBAL || r == R_BUILTIN) {
            emit(c, TPL_OP_UNSET_SLOT, declare(c, name), 0);
            continue;
        }
        /* a name of the context a block reads through (the template's top-level names it
         * exported: a frame in a block): resolve('x') gives the context's value at the frame's start */
        load_name(c, name);
        emit(c, TPL_OP_STORE_SLOT, declare(c, name), -1);
    }
}

static void for_loop(tpl_comp *c, tpl_node *n, int32_t depth_slot)
{
    tpl_value lname = tpl_v_str("(loop)", 6);
    /* `for x in xs if test`: Jinja2 tests each item as the loop takes it, so the body's effects
     * (a namespace flag) reach the test of later items; loop.index and the rest count kept items.
     * When the body looks ahead (loop.last, length, ...) the items are filtered first instead. */
    /* (`loop` in the test is the one around the for, or undefined, as in Jinja2: the test is
     * compiled before this loop's `loop` exists) */
    bool lazy = n->e && depth_slot < 0 && loop_reads_no_lookahead(n->c, 0) && !names_loop(n->e, 0) &&
                loop_reads_no_lookahead(n->d, 0);
    if (n->e && !lazy) {
        /* `for x in xs if test` whose body looks ahead: Jinja2's LoopContext over the generator
         * of the kept items, which runs the test as items are taken (loop.last and nextitem take
         * one more, length and revindex all of them), so the test sees what the body did before */
        loop_test_function(c, n);
        c->cur_off = n->off;
        emit(c, TPL_OP_LOOP_FILTER, 0, -1);
    }
    push_scope(c, false);
    uint32_t loop_slot = declare(c, tpl_v_str("loop", 4));
    /* Jinja2's extended_loop: only then is `loop` a variable of the loop's frame that an included
     * template or a scoped block sees */
    if (!(n->op & 1) && !reads_name(n->c, "loop", 4, 0) && !has_scoped_block(n->c, 0) && !has_scoped_block(n->d, 0))
        hide_from_ctx(c, "loop", 4);
    if (depth_slot >= 0) c->fn->rec_loop = (int32_t)loop_slot;
    /* Jinja2's for-else runs unless some iteration reached the end of the body */
    uint32_t done = 0;
    if (n->d) {
        done = new_slot(c);
        emit(c, TPL_OP_FALSE, 0, 1);
        emit(c, TPL_OP_STORE_SLOT, done, -1);
    }
    c->cur_off = n->off;
    emit(c, TPL_OP_FOR_INIT, loop_slot, -1);
    if (depth_slot >= 0) { /* (depth, the loop's function): calling the loop value runs it (call_any) */
        emit(c, TPL_OP_LOAD_SLOT, (uint32_t)depth_slot, 1);
        emit_raw(c, add_name(c, lname));
        emit(c, TPL_OP_LOAD_SLOT, (uint32_t)c->fn->rec_self, 1);
        emit_raw(c, add_name(c, lname));
        emit(c, TPL_OP_BUILD_TUPLE, 2, -1);
        emit(c, TPL_OP_LOOP_DEPTH, loop_slot, -1);
    }
    loopctx lc = { 0 };
    lc.parent = c->fn->loop;
    lc.top = here(c);
    c->fn->loop = &lc;
    emit(c, TPL_OP_FOR_NEXT, loop_slot, 1);
    uint32_t exit_pos = emit_raw(c, 0);
    store_target(c, n->a);
    /* (a recursive loop without else is a Python function of its own in Jinja2: no reset) */
    bool reset = c->syn == TPL_SYN_JINJA && (depth_slot < 0 || n->d) && makes_closure(n->c, 0);
    if (reset) mark_params(c);
    if (lazy) {
        bool soft = c->soft;
        c->soft = false;
        expr(c, n->e);
        c->soft = soft;
        uint32_t keep = emit(c, sop(c, TPL_OP_JT_PY), 0, -1);
        emit(c, TPL_OP_LOOP_SKIP, loop_slot, 0);
        emit(c, TPL_OP_JUMP, lc.top, 0);
        patch_a(c, keep, here(c));
    }
    frame_init(c, n->c);
    if (reset) declare_frame_loads(c, n->c);
    body(c, n->c);
    if (n->d) {
        emit(c, TPL_OP_TRUE, 0, 1);
        emit(c, TPL_OP_STORE_SLOT, done, -1);
    }
    emit(c, TPL_OP_JUMP, lc.top, 0);
    patch_word(c, exit_pos, here(c));
    c->fn->loop = lc.parent;
    uint32_t end = here(c);
    for (size_t i = 0; i < lc.nbreaks; i++) patch_a(c, lc.breaks[i], end);
    free(lc.breaks);
    if (reset || scope_has_shared(c->fn->scope)) reset_frame(c, reset);
    if (n->d) {
        emit(c, TPL_OP_LOAD_SLOT, done, 1);
        emit_raw(c, add_name(c, lname));
        pop_scope(c);
        uint32_t skip = emit(c, sop(c, TPL_OP_JT_PY), 0, -1);
        push_scope(c, false); /* the else body is a frame of its own */
        frame_init(c, n->d);
        body(c, n->d);
        if (scope_has_shared(c->fn->scope)) reset_frame(c, false);
        pop_scope(c);
        patch_a(c, skip, here(c));
    } else {
        pop_scope(c);
    }
}

/* ---- if/elif chains on one string: SWITCH_STR */

/* A lookup with no effects, so evaluating it once more changes nothing: a name, or attribute or
 * constant-key item access on one. */
static bool pure_lookup(const tpl_node *n, int depth)
{
    if (depth > 8) return false;
    switch (n->kind) {
    case TPL_N_NAME: case TPL_N_RIVAR: return true;
    case TPL_N_GETATTR: return pure_lookup(n->a, depth + 1);
    case TPL_N_GETITEM:
        return n->b && n->b->kind == TPL_N_CONST && (n->b->val.type == TPL_T_STR || n->b->val.type == TPL_T_INT) &&
               pure_lookup(n->a, depth + 1);
    default: return false;
    }
}

static bool same_lookup(const tpl_node *x, const tpl_node *y)
{
    if (x->kind != y->kind) return false;
    switch (x->kind) {
    case TPL_N_NAME: case TPL_N_RIVAR: return x->val.len == y->val.len && memcmp(x->val.u.s, y->val.u.s, x->val.len) == 0;
    case TPL_N_GETATTR:
        return x->val.len == y->val.len && memcmp(x->val.u.s, y->val.u.s, x->val.len) == 0 && same_lookup(x->a, y->a);
    case TPL_N_GETITEM:
        return x->b->val.type == y->b->val.type && tpl_equal(x->b->val, y->b->val) && same_lookup(x->a, y->a);
    default: return false;
    }
}

/* Whether cond is `E == 'lit'` (either side), or an `or` of such, all on the lookup *subj (set by
 * the first one seen); each literal is passed to add (NULL: only check). */
static bool str_cases(tpl_comp *c, const tpl_node *cond, const tpl_node **subj, tpl_list *lits, uint8_t *owner,
                      uint8_t branch)
{
    if (cond->kind == TPL_N_OR)
        return str_cases(c, cond->a, subj, lits, owner, branch) && str_cases(c, cond->b, subj, lits, owner, branch);
    if (cond->kind != TPL_N_COMPARE || !cond->b || cond->b->next || cond->b->op != TPL_AOP_EQ) return false;
    const tpl_node *l = cond->a, *r = cond->b->a, *e, *k;
    if (r->kind == TPL_N_CONST && r->val.type == TPL_T_STR) { e = l; k = r; }
    else if (l->kind == TPL_N_CONST && l->val.type == TPL_T_STR) { e = r; k = l; }
    else return false;
    if (*subj ? !same_lookup(*subj, e) : !pure_lookup(e, 0)) return false;
    if (!*subj) *subj = e;
    if (!lits) return true;
    for (uint32_t i = 0; i < lits->len; i++) /* the first branch naming a string takes it */
        if (lits->items[i].len == k->val.len && memcmp(lits->items[i].u.s, k->val.u.s, k->val.len) == 0) return true;
    if (lits->len >= 64) return false;
    char *s = tpl_arena_strdup(&c->p->arena, k->val.u.s, k->val.len);
    if (!s || !tpl_list_push(&c->p->arena, lits, tpl_v_str(s, k->val.len))) { c_nomem(c, c->cur_off); return false; }
    owner[lits->len - 1] = branch;
    return true;
}

/* `{% if E == 'a' %}…{% elif E == 'b' or E == 'c' %}…{% else %}…{% endif %}` (two branches or
 * more, E a pure lookup; ERB's `if e == "a"` … `elsif` alike): E, then SWITCH_STR over the
 * strings, straight into the body of the first branch naming E's string. The chain itself follows
 * the jump table, unchanged: a value that is not a string (undefined, nil, a number, Markup) runs
 * it, with its exact semantics and errors. The syntax's front end compiles expressions and bodies
 * (cond, body, with ctx). Emits nothing and returns false when n starts no such chain. */
size_t tpl_c_chain_begin(tpl_comp *c) { return c->nchain_ends; }

void tpl_c_chain_jump(tpl_comp *c, uint32_t pc)
{
    if (c->failed) return;
    if (!grow((void **)&c->chain_ends, &c->chain_ends_cap, c->nchain_ends + 1, sizeof *c->chain_ends)) {
        c_nomem(c, c->cur_off);
        return;
    }
    c->chain_ends[c->nchain_ends++] = pc;
}

void tpl_c_chain_end(tpl_comp *c, size_t mark)
{
    uint32_t end = here(c);
    for (size_t i = mark; i < c->nchain_ends; i++) patch_a(c, c->chain_ends[i], end);
    if (mark <= c->nchain_ends) c->nchain_ends = mark;
}

bool tpl_c_if_switch(tpl_comp *c, tpl_node *n, tpl_c_fn cond, tpl_c_fn body_fn, void *ctx, tpl_node **rest)
{
    *rest = NULL;
    enum { MAX_BRANCHES = 32 };
    tpl_node *ifs[MAX_BRANCHES];
    int nif = 0;
    const tpl_node *subj = NULL;
    for (tpl_node *cur = n; cur && nif < MAX_BRANCHES;) {
        if (!str_cases(c, cur->a, &subj, NULL, NULL, 0)) break;
        ifs[nif++] = cur;
        cur = cur->c && cur->c->kind == TPL_N_IF && !cur->c->next ? cur->c : NULL; /* an elif */
    }
    if (nif < 2) return false;
    tpl_list *lits = tpl_list_new(&c->p->arena, 8);
    uint8_t owner[64];
    if (!lits) { c_nomem(c, c->cur_off); return true; }
    int nsw = 0; /* branches whose strings fit the table */
    for (; nsw < nif; nsw++) {
        uint32_t before = lits->len;
        if (!str_cases(c, ifs[nsw]->a, &subj, lits, owner, (uint8_t)nsw)) { lits->len = before; break; }
    }
    if (c->failed) return true;
    if (nsw < 2) return false;
    tpl_value lv = tpl_v_list(lits);
    lv.flags = TPL_F_TUPLE;
    cond(ctx, (tpl_node *)subj);
    c->cur_off = subj->off;
    emit(c, TPL_OP_SWITCH_STR, add_const(c, lv), -1);
    uint32_t table = here(c);
    for (uint32_t i = 0; i <= lits->len; i++) emit(c, TPL_OP_JUMP, 0, 0);
    uint32_t at[MAX_BRANCHES];
    for (int i = 0; i < nsw; i++) {
        cond(ctx, ifs[i]->a);
        c->cur_off = ifs[i]->off;
        uint32_t jf = emit(c, sop(c, TPL_OP_JF_PY), 0, -1);
        at[i] = here(c);
        body_fn(ctx, ifs[i]->b);
        if (i < nsw - 1 || ifs[i]->c) tpl_c_chain_jump(c, emit(c, TPL_OP_JUMP, 0, 0));
        patch_a(c, jf, here(c));
    }
    uint32_t deflt = here(c);
    *rest = ifs[nsw - 1]->c; /* else, or the elifs the table left out: the caller's */
    patch_a(c, table, deflt);
    for (uint32_t i = 0; i < lits->len; i++) patch_a(c, table + 1 + i, at[owner[i]]);
    return true;
}

static void switch_expr(void *c, tpl_node *n) { expr(c, n); }
static void switch_body(void *c, tpl_node *n) { body(c, n); }

/* Whether statements define a macro (at any depth). */
static bool block_or_macro_in(const tpl_node *n, int depth)
{
    if (depth > 400) return true;
    for (; n; n = n->next) {
        if (n->kind == TPL_N_MACRO) return true;
        if (n->kind == TPL_N_CONST || n->kind == TPL_N_TEXT) continue;
        if (block_or_macro_in(n->a, depth + 1) || block_or_macro_in(n->b, depth + 1) || block_or_macro_in(n->c, depth + 1) ||
            block_or_macro_in(tpl_node_d(n), depth + 1) || block_or_macro_in(tpl_node_e(n), depth + 1))
            return true;
    }
    return false;
}

/* A branch a constant condition never runs is still compiled by Jinja2: an unknown filter or
 * test in it is a compile-time error where the frame is not soft (a loop, with, macro, call,
 * filter or set block, autoescape or block body), as when it runs. Walks the skipped tree with
 * Jinja2's frame softness and fails on the first such name. */
static void dead_check(tpl_comp *c, const tpl_node *n, bool soft, int depth)
{
    if (depth > 400) return;
    for (; n && !c->failed; n = n->next) {
        bool inner = soft;
        switch (n->kind) {
        case TPL_N_FILTER: case TPL_N_TEST:
            if (!soft && n->val.type == TPL_T_STR &&
                !host_func(c, n->val, n->kind == TPL_N_FILTER ? TPL_HOST_FILTER : TPL_HOST_TEST)) {
                int kind = n->kind == TPL_N_FILTER ? TPL_BK_FILTER : TPL_BK_TEST;
                int b = tpl_builtin_find(kind, n->val.u.s, n->val.len);
                if (b >= 0 && kind == TPL_BK_FILTER) b = tpl_builtin_filter_variant(b, c->autoescape, c->p->opts.hf);
                if (b < 0) {
                    bool save = c->soft;
                    c->soft = false;
                    unknown_callable(c, (tpl_node *)n, n->kind == TPL_N_FILTER ? "filter" : "test");
                    c->soft = save;
                    return;
                }
            }
            dead_check(c, n->a, soft, depth + 1);
            dead_check(c, n->b, soft, depth + 1);
            continue;
        case TPL_N_IF: case TPL_N_CONDEXPR:
            dead_check(c, n->a, true, depth + 1);
            dead_check(c, n->b, true, depth + 1);
            dead_check(c, n->c, true, depth + 1);
            continue;
        case TPL_N_FOR:
            dead_check(c, n->a, false, depth + 1);
            dead_check(c, n->b, soft, depth + 1);
            dead_check(c, n->c, false, depth + 1);
            dead_check(c, n->d, false, depth + 1);
            dead_check(c, n->e, false, depth + 1);
            continue;
        case TPL_N_CALLBLOCK:
            dead_check(c, n->a, soft, depth + 1);
            dead_check(c, n->b, false, depth + 1);
            dead_check(c, n->c, false, depth + 1);
            continue;
        case TPL_N_WITH: /* the values in the enclosing frame, the body in its own */
            for (const tpl_node *set = n->a; set && !c->failed; set = set->next)
                dead_check(c, set->kind == TPL_N_SET ? set->b : set, soft, depth + 1);
            dead_check(c, n->b, false, depth + 1);
            continue;
        case TPL_N_MACRO: case TPL_N_FILTERBLOCK: case TPL_N_SETBLOCK: case TPL_N_AUTOESCAPE: case TPL_N_BLOCK:
            inner = false;
            break;
        default: break;
        }
        dead_check(c, n->a, inner, depth + 1);
        dead_check(c, n->b, inner, depth + 1);
        dead_check(c, n->c, inner, depth + 1);
        if (tpl_node_has_de(n->kind)) {
            dead_check(c, n->d, inner, depth + 1);
            dead_check(c, n->e, inner, depth + 1);
        }
    }
}

/* An if/elif/else chain, compiled in a loop (a chain of 10,000 elifs is not nesting): each
 * branch's end jumps to the chain's end; a constant condition keeps only its branch; runs of
 * string comparisons on one lookup become SWITCH_STR tables (tpl_c_if_switch). Conditions and
 * bodies are soft (an unknown filter fails when it runs, as in Jinja2). */
static void stmt_if(tpl_comp *c, tpl_node *n)
{
    bool soft = c->soft;
    c->soft = true; /* Jinja2's visit_If: the whole chain, a constant condition's too */
    size_t mark = tpl_c_chain_begin(c);
    for (tpl_node *cur = n; cur && !c->failed;) {
        c->cur_off = cur->off;
        tpl_node *next = NULL;
        bool t;
        if (cur->a->kind == TPL_N_CONST && const_truthy(cur->a->val, &t)) {
            if (t) { body(c, cur->b); dead_check(c, cur->c, true, 0); break; }
            dead_check(c, cur->b, true, 0);
            next = cur->c;
        } else {
            if (!tpl_c_if_switch(c, cur, switch_expr, switch_body, c, &next)) {
                expr(c, cur->a);
                uint32_t jf = emit(c, sop(c, TPL_OP_JF_PY), 0, -1);
                body(c, cur->b);
                if (cur->c) tpl_c_chain_jump(c, emit(c, TPL_OP_JUMP, 0, 0));
                patch_a(c, jf, here(c));
                next = cur->c;
            }
        }
        if (is_elif(next)) { cur = next; continue; }
        body(c, next);
        break;
    }
    tpl_c_chain_end(c, mark);
    c->soft = soft;
}

/* The first name `loop` a target stores to (NULL: none). */
static const tpl_node *target_loop_name(const tpl_node *t)
{
    if (t->kind == TPL_N_NAME) return name_eq(t->val, "loop", 4) ? t : NULL;
    if (t->kind == TPL_N_TUPLE)
        for (const tpl_node *x = t->a; x; x = x->next) {
            const tpl_node *hit = target_loop_name(x);
            if (hit) return hit;
        }
    return NULL;
}

/* A `loop` stored anywhere in a for statement (its target, or a set or for target inside it;
 * with's targets and parameters are not stores): Jinja2's visit_For refuses the template. */
static const tpl_node *for_stores_loop(const tpl_node *n, int depth)
{
    for (; n && depth < 200; n = n->next) {
        const tpl_node *hit = NULL;
        if ((n->kind == TPL_N_SET || n->kind == TPL_N_SETBLOCK || n->kind == TPL_N_FOR) && n->a)
            hit = target_loop_name(n->a);
        if (hit) return hit;
        if (n->kind == TPL_N_WITH) {
            for (const tpl_node *w = n->a; w; w = w->next)
                if (w->b && (hit = for_stores_loop(w->b, depth + 1))) return hit;
        } else if (n->a && n->kind != TPL_N_SET && n->kind != TPL_N_SETBLOCK && n->kind != TPL_N_FOR &&
                   (hit = for_stores_loop(n->a, depth + 1))) return hit;
        if (n->b && (hit = for_stores_loop(n->b, depth + 1))) return hit;
        if (n->c && (hit = for_stores_loop(n->c, depth + 1))) return hit;
        const tpl_node *d = tpl_node_d(n), *e = tpl_node_e(n); /* (FOR and SLICE only) */
        if (d && (hit = for_stores_loop(d, depth + 1))) return hit;
        if (e && (hit = for_stores_loop(e, depth + 1))) return hit;
    }
    return NULL;
}

static void stmt_for(tpl_comp *c, tpl_node *n)
{
    const tpl_node *lp = target_loop_name(n->a);
    if (!lp) {
        /* (the statement alone, not its siblings) */
        tpl_node *next = n->next;
        n->next = NULL;
        lp = for_stores_loop(n, 0);
        n->next = next;
    }
    if (lp) { cfail(c, TPL_EK_ASSERTION, lp->off, "Can't assign to special loop variable in for-loop target"); return; }
    if (!n->op) {
        expr(c, n->b);
        for_loop(c, n, -1);
        return;
    }
    /* recursive: the loop is a function (iterable, depth, itself); loop(x) calls it again */
    bool soft = c->soft;
    c->soft = false;
    uint32_t skip = emit(c, TPL_OP_JUMP, 0, 0);
    func f;
    func_begin(c, &f);
    tpl_list *pl = param_list(c, 3);
    const char *pn[3] = { "(iterable)", "(depth)", "(self)" };
    uint32_t ps[3];
    for (int i = 0; i < 3; i++) {
        param_push(c, pl, tpl_v_str(pn[i], strlen(pn[i])));
        ps[i] = declare(c, tpl_v_str(pn[i], strlen(pn[i])));
    }
    f.rec_depth = (int32_t)ps[1];
    f.rec_self = (int32_t)ps[2];
    tpl_macro_desc d = { 0 };
    d.entry = here(c);
    d.nparams = 3;
    d.varargs_slot = d.kwargs_slot = d.caller_slot = -1;
    refuse_generator_function(c, n->c);
    refuse_generator_function(c, n->d);
    emit(c, TPL_OP_LOAD_SLOT, ps[0], 1);
    emit_raw(c, add_name(c, tpl_v_str("loop", 4)));
    for_loop(c, n, (int32_t)ps[1]);
    func_end(c, &f, &d, tpl_v_str("loop", 4), pl, skip, n->off);
    c->soft = soft;
    uint32_t tmp = new_slot(c);
    emit(c, TPL_OP_DUP, 0, 1);
    emit(c, TPL_OP_STORE_SLOT, tmp, -1);
    expr(c, n->b);
    emit(c, TPL_OP_INT, 1, 1);
    emit(c, TPL_OP_LOAD_SLOT, tmp, 1);
    emit_raw(c, add_name(c, tpl_v_str("loop", 4)));
    c->cur_off = n->off;
    emit(c, TPL_OP_CALL, 0, -3);
    emit_raw(c, TPL_ARGW(3, 0, TPL_NO_KW));
    emit(c, sop(c, TPL_OP_PRINT_PY), 0, -1);
}

/* ---- blocks and template inheritance ---- */

/* Compiles a block body from template `tpl_index` of the inheritance chain. */
static void compile_block(tpl_comp *c, tpl_value name, uint32_t pos, uint32_t off, int see);

/* The environment's autoescape (Environment(autoescape=True): tpl_options.autoescape). */
static bool env_autoescape(const tpl_comp *c)
{
    return c->syn == TPL_SYN_JINJA && c->p->opts.autoescape;
}

static tpl_block *find_block(tpl_comp *c, tpl_value name)
{
    uint32_t i;
    return tpl_smap_get(&c->block_idx, name.u.s, name.len, &i) ? &c->blocks[i] : NULL;
}

/* The definition at pos (< b->ndefs) of block b. */
static tpl_block_def *block_def(tpl_comp *c, const tpl_block *b, uint32_t pos)
{
    uint32_t i = b->first;
    while (pos--) i = c->bdefs[i].next;
    return &c->bdefs[i];
}

/* Records the BLOCK nodes of a template (most-derived templates are collected first). rebind:
 * the blocks of a statement parsed again (a two-pass compile, tpl_comp_facts_stmt: a template
 * that extends nothing, its blocks collected by the first pass) take their new nodes
 * (BLOCKS_BIND), or forget them before their tree is freed (BLOCKS_UNBIND). */
enum { BLOCKS_COLLECT, BLOCKS_BIND, BLOCKS_UNBIND };
static void collect_blocks(tpl_comp *c, tpl_node *n, uint32_t tpl_index, int rebind)
{
    for (; n && !c->failed; n = n->next) {
        if (n->kind == TPL_N_BLOCK && rebind) {
            tpl_block *b = find_block(c, n->val);
            if (b && b->ndefs) c->bdefs[b->first].def = rebind == BLOCKS_BIND ? n : NULL;
        } else if (n->kind == TPL_N_BLOCK) {
            tpl_block *b = find_block(c, n->val);
            if (!b) {
                if (!grow((void **)&c->blocks, &c->bcap, c->nblocks + 1, sizeof *c->blocks)) { c_nomem(c, n->off); return; }
                c->block_idx.arena = c->tmp;
                if (!tpl_smap_put(&c->block_idx, n->val.u.s, n->val.len, (uint32_t)c->nblocks)) { c_nomem(c, n->off); return; }
                b = &c->blocks[c->nblocks++];
                memset(b, 0, sizeof *b);
                b->name = n->val;
            } else if (b->ndefs && c->bdefs[b->last].tpl == tpl_index) {
                /* as Jinja2's parser: a template names each block once */
                cfail(c, TPL_EK_ASSERTION, n->off, "block '%.*s' defined twice", (int)n->val.len, n->val.u.s);
                return;
            }
            if (b->ndefs < TPL_MAX_INHERIT) {
                if (!grow((void **)&c->bdefs, &c->bdcap, c->nbdefs + 1, sizeof *c->bdefs)) { c_nomem(c, n->off); return; }
                uint32_t d = (uint32_t)c->nbdefs++;
                c->bdefs[d] = (tpl_block_def){ n, tpl_index, 0, n->off, false };
                if (b->ndefs) c->bdefs[b->last].next = d;
                else b->first = d;
                b->last = d;
                b->ndefs++;
            }
        }
        /* Jinja2 finds blocks anywhere in a template's statements (loops, macros, with, ...) */
        switch (n->kind) {
        case TPL_N_FOR: collect_blocks(c, n->c, tpl_index, rebind); collect_blocks(c, n->d, tpl_index, rebind); break;
        case TPL_N_IF: {
            tpl_node *x = n;
            for (; is_elif(x->c); x = x->c) collect_blocks(c, x->b, tpl_index, rebind); /* an elif chain: a loop */
            collect_blocks(c, x->b, tpl_index, rebind);
            collect_blocks(c, x->c, tpl_index, rebind);
            break;
        }
        case TPL_N_CALLBLOCK: collect_blocks(c, n->c, tpl_index, rebind); break;
        case TPL_N_MACRO: case TPL_N_SETBLOCK: case TPL_N_FILTERBLOCK: case TPL_N_WITH: case TPL_N_AUTOESCAPE:
        case TPL_N_GENERATION: case TPL_N_BLOCK:
            collect_blocks(c, n->b, tpl_index, rebind);
            break;
        default: break;
        }
    }
}

/* see: BLOCK_SEE_TOP for a block statement (Jinja2 renders a block with the template's context:
 * the state and top-level variables, never the loop, with or macro variables around it),
 * BLOCK_SEE_ALL for a `scoped` one, BLOCK_SEE_SAME for super() inside a block. */
enum { BLOCK_SEE_SAME, BLOCK_SEE_TOP, BLOCK_SEE_ALL };

/* A block whose body's source is this large or more is compiled a statement at a time when its
 * tree is not in memory (tpl_comp.restream). */
#ifndef TPL_BLOCK_STREAM_MIN
#define TPL_BLOCK_STREAM_MIN 65536
#endif

/* A block's body that comes a statement at a time (tpl_comp.restream): frame_init_at's walks
 * over it, in two parses (the names it stores, then what reads them), and its compile. */
typedef struct block_stream {
    tpl_comp *c;
    frame_names *f;
    jsyms j;
    uint64_t assigned;
    unsigned super;          /* SUP_* of the body (super_scan, a statement at a time) */
} block_stream;

static bool block_stream_names(block_stream *bs, uint32_t off)
{
    if (bs->f) return true;
    if (!(bs->f = malloc(sizeof *bs->f))) { c_nomem(bs->c, off); return false; }
    bs->f->n = 0;
    bs->f->overflow = false;
    bs->f->need = 0;
    bs->f->unseen = NULL;
    bs->f->rest = false;
    return true;
}

static void block_stores(void *arg, tpl_node *n)
{
    block_stream *bs = arg;
    if (bs->c->failed) return;
    tpl_node *next = n->next;
    n->next = NULL; /* (the statement alone: its list is the body, streamed) */
    super_scan(n, &bs->super, 0);
    n->next = next;
    if (block_stream_names(bs, n->off)) frame_stores(bs->f, n);
}

static void block_flow(void *arg, tpl_node *n)
{
    block_stream *bs = arg;
    if (bs->c->failed) return;
    js_stmts(&bs->j, n, 0);
    if (bs->f->n && !bs->f->overflow) bs->assigned = frame_flow(bs->f, n, bs->assigned);
}

static void block_stmt(void *arg, tpl_node *n)
{
    tpl_comp *c = arg;
    if (c->failed) return;
    if (c->nblocks) collect_blocks(c, n, 0, BLOCKS_BIND); /* (the blocks inside it) */
    body(c, n);
    if (c->nblocks) collect_blocks(c, n, 0, BLOCKS_UNBIND); /* (its tree is freed next) */
}

/* The second parse of a streamed block (its scope pushed) and the frame entered, as
 * frame_init_at does with the whole body. 1, or what restream returned. */
static int block_stream_flow(block_stream *bs, uint32_t off)
{
    tpl_comp *c = bs->c;
    if (!block_stream_names(bs, off)) return -1;
    frame_names *f = bs->f;
    f->all = f->n >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << f->n) - 1;
    bs->j.c = c;
    bs->j.f = f;
    bs->j.s = c->fn->scope;
    int r = c->restream(c->reparse_data, off, 0, block_flow, bs);
    if (r <= 0 || c->failed) return r;
    if (bs->j.gave_up) bs->j.undef = 0;
    if (f->n == 0) return 1;
    if (f->overflow) f->need = f->all;
    frame_enter(c, f, bs->j.undef, false, NULL, 0);
    return 1;
}


/* After a block parsed again (block_call): its tree's arena emptied -- the spare reset for the
 * next (a chunk kept), or freed when it is the spare's stand-in or grew large. */
static void reparse_done(tpl_comp *c, tpl_arena *ra)
{
    size_t big = ra->total;
    if (ra == c->reparse_spare && big < TPL_TRIM_MIN) {
        tpl_arena_reset(ra);
    } else {
        tpl_arena_free(ra);
    }
    if (ra == c->reparse_spare) c->reparse_spare_busy = false;
#ifdef __GLIBC__
    /* (a large tree's chunks go back to the system: glibc keeps freed chunks past its
     * raised mmap threshold, and the next large block would be resident next to them) */
    if (big >= TPL_TRIM_MIN) malloc_trim(0);
#endif
}
static void compile_block(tpl_comp *c, tpl_value name, uint32_t pos, uint32_t off, int see)
{
    tpl_block *b = find_block(c, name);
    if (!b || pos >= b->ndefs) { cerror(c, off, "no parent block '%.*s' for super()", (int)name.len, name.u.s); return; }
    tpl_block_def *bd = block_def(c, b, pos);
    if (bd->active) {
        /* Jinja2 recurses until Python's RecursionError; blocks are inlined here, so it is a compile error */
        cerror(c, off, "block '%.*s' contains itself (through super() or a parent's block)", (int)name.len, name.u.s);
        return;
    }
    tpl_node *def = bd->def;
    tpl_arena own_ra, *ra = &own_ra;
    bool reparsed = false, streamed = false;
    block_stream bs = { c, NULL, { 0 }, 0, 0 };
    if (!def && c->restream) {
        /* a large block: its body a statement at a time (its whole tree was 11x the template);
         * this first parse gathers the names it stores */
        int r = c->restream(c->reparse_data, bd->off, TPL_BLOCK_STREAM_MIN, block_stores, &bs);
        if (r < 0 || c->failed) { free(bs.f); c_nomem(c, off); return; }
        streamed = r > 0;
    }
    if (!def && !streamed) {
        /* a two-pass compile: the block's statement is not in memory (self.NAME() in another
         * statement): its tree parsed again for this compile, then freed (issue 13 §1) */
        if (!c->reparse) { cerror(c, off, "block '%.*s' is not available here", (int)name.len, name.u.s); return; }
        if (c->reparse_spare && !c->reparse_spare_busy) {
            ra = c->reparse_spare;
            c->reparse_spare_busy = true;
        } else {
            tpl_arena_init(ra, 0);
            ra->budget = c->p->budget;
        }
        def = c->reparse(c->reparse_data, bd->off, ra);
        if (!def || def->kind != TPL_N_BLOCK) {
            reparse_done(c, ra);
            c_nomem(c, off);
            return;
        }
        collect_blocks(c, def, 0, BLOCKS_BIND); /* (it and the blocks inside it) */
        reparsed = true;
    }
    uint32_t def_tpl = bd->tpl;
    tpl_block *save_b = c->cur_block;
    uint32_t save_pos = c->cur_block_pos;
    bool save_lock = c->span_locked;
    uint32_t save_off = c->span_off;
    int save_src = c->cur_src;
    c->cur_src = c->chain_src[def_tpl];
    if (def_tpl != 0 || c->include_depth > 0) {
        if (!c->span_locked) { c->span_locked = true; c->span_off = off; }
    } else {
        c->span_locked = false;
    }
    unsigned save_sup = c->cur_block_super;
    c->cur_block = b;
    c->cur_block_pos = pos;
    if (!streamed) {
        c->cur_block_super = 0;
        super_scan(def->b, &c->cur_block_super, 0);
    } else {
        c->cur_block_super = bs.super;
    }
    scope *save_scope = c->fn->scope, *save_root = c->root.scope;
    loopctx *save_loop = c->fn->loop;
    scope *save_bctx = c->blk_ctx;
    func *save_bctx_fn = c->blk_ctx_fn;
    loopctx *save_bctx_loop = c->blk_ctx_loop;
    /* a function between the block and the scoped block it is placed in (a call block's caller, a
     * macro defined in the scoped block): its names hidden while the block compiles */
    func *bctx_fn = NULL;
    scope **hidden = NULL, *base_extra = NULL;
    size_t nhidden = 0;
    if (see == BLOCK_SEE_TOP && c->blk_ctx && c->include_depth == 0)
        for (func *g = c->fn; g && !bctx_fn; g = g->parent) {
            if (g == c->blk_ctx_fn) bctx_fn = g;
            else if (g != c->fn) nhidden++;
        }
    if (bctx_fn && bctx_fn != c->fn && !(hidden = tpl_arena_alloc(c->tmp, (nhidden + 1) * sizeof *hidden))) {
        c_nomem(c, off);
        bctx_fn = NULL;
    }
    if (hidden) {
        /* such a block in a caller or macro inside the scoped block: Jinja2's `context` there is the
         * enclosing block function's too (a closure), the scoped block's derived one */
        size_t k = 0;
        for (func *g = c->fn->parent; g != bctx_fn; g = g->parent) {
            hidden[k++] = g->scope;
            g->scope = NULL;
        }
        hidden[k] = bctx_fn->scope;
        bctx_fn->scope = c->blk_ctx;
        c->fn->loop = NULL;
        base_extra = push_scope(c, true);
        push_scope(c, false);
    } else if (see == BLOCK_SEE_TOP && bctx_fn) {
        /* a block that is not scoped, placed in a scoped one: the context that one got (Jinja2
         * renders it with the enclosing block function's `context`: the scoped block's derived
         * one, with the loop variables and names of where that block stands; not what its body
         * set) -- nbconvert's in_prompt in codecell scoped in any_cell scoped in `for cell` */
        c->fn->scope = c->blk_ctx;
        c->fn->loop = c->blk_ctx_loop;
        push_scope(c, false);
    } else if (see == BLOCK_SEE_TOP) {
        /* only the template's top-level names stay visible: the function's outermost scope at
         * template level; in a macro, a scope of its own (the macro's names hidden) */
        scope *top = c->root.scope;
        while (top && !top->func_boundary) top = top->parent;
        c->root.scope = top;
        c->fn->loop = NULL;
        if (c->fn == &c->root) {
            push_scope(c, false);
        } else {
            /* a macro in a macro: the names of the ones around it hidden too */
            size_t n = 0;
            func *g = c->fn->parent;
            for (; g && g != &c->root; g = g->parent) n++;
            if (n && g && c->include_depth == 0) {
                if (!(hidden = tpl_arena_alloc(c->tmp, (n + 1) * sizeof *hidden))) {
                    c_nomem(c, off);
                } else {
                    size_t k = 0;
                    for (g = c->fn->parent; g != &c->root; g = g->parent) {
                        hidden[k++] = g->scope;
                        g->scope = NULL;
                    }
                    hidden[k] = c->root.scope;
                    bctx_fn = &c->root;
                }
            }
            /* (an empty scope of its own under the block's: what super() in it sees of the
             * function, nothing -- the parent's block gets the context too, not the macro's names) */
            base_extra = push_scope(c, true);
            push_scope(c, false);
        }
    } else {
        if (see == BLOCK_SEE_ALL) {
            c->blk_ctx = c->fn->scope;
            c->blk_ctx_fn = c->fn;
            c->blk_ctx_loop = c->fn->loop;
        }
        push_scope(c, false);
    }
    scope *save_base = c->cur_block_base;
    func *save_bfn = c->cur_block_fn;
    loopctx *save_bloop = c->cur_block_loop;
    c->cur_block_base = c->fn->scope ? c->fn->scope->parent : NULL;
    c->cur_block_fn = c->fn;
    c->cur_block_loop = c->fn->loop;
    if (c->fn->scope) c->fn->scope->ctx_top = true;
    /* a block's function is compiled with the environment's autoescape (Jinja2's visit_Template),
     * whatever {% autoescape %} is around where it is placed */
    bool save_ae = c->autoescape;
    c->autoescape = env_autoescape(c);
    bool save_vol = c->ae_volatile;
    c->ae_volatile = false;
    scope *own = c->fn->scope;
    block_def(c, b, pos)->active = true;
    c->ext_noguard++;
    int save_buffered = c->buffered;
    c->buffered = 0; /* (Jinja2: a block's own generator function) */
    bool save_gen = c->gen_fn;
    c->gen_fn = false;
    if (streamed) {
        /* the frame's names (what the body reads, and where, in a second parse), then the body
         * compiled in a third */
        c->cur_off = bd->off;
        int r = block_stream_flow(&bs, bd->off);
        free(bs.f);
        if (r > 0 && !c->failed) r = c->restream(c->reparse_data, bd->off, 0, block_stmt, c);
        if (r <= 0) c_nomem(c, off);
    } else {
        c->cur_off = bd->off; /* (the frame's UNDEF_MSGs: located at the block, in both compiles) */
        frame_init(c, def->b);
        body(c, def->b);
    }
    c->ext_noguard--;
    c->buffered = save_buffered;
    c->gen_fn = save_gen;
    block_def(c, b, pos)->active = false;
    c->autoescape = save_ae;
    c->ae_volatile = save_vol;
    c->cur_block_base = save_base;
    c->cur_block_fn = save_bfn;
    c->cur_block_loop = save_bloop;
    c->blk_ctx = save_bctx;
    c->blk_ctx_fn = save_bctx_fn;
    c->blk_ctx_loop = save_bctx_loop;
    if (own && c->fn->scope == own) pop_scope(c); /* (its scope reused: a scope per block was ~7x a template of blocks) */
    if (base_extra && c->fn->scope == base_extra) pop_scope(c);
    if (hidden) { /* (the functions between it and the scoped block: their scopes back) */
        size_t k = 0;
        for (func *g = c->fn->parent; g != bctx_fn; g = g->parent) g->scope = hidden[k++];
        bctx_fn->scope = hidden[k];
    }
    c->fn->scope = save_scope;
    c->root.scope = save_root;
    c->fn->loop = save_loop;
    c->cur_block = save_b;
    c->cur_block_pos = save_pos;
    c->cur_block_super = save_sup;
    c->cur_src = save_src;
    c->span_locked = save_lock;
    c->span_off = save_off;
    c->cur_off = off; /* (what follows is located where the block was placed or called, not
                       * at whatever its body or a pass over it saw last) */
    if (reparsed) {
        collect_blocks(c, def, 0, BLOCKS_UNBIND);
        reparse_done(c, ra);
    }
}

/* super() and self.NAME() inside blocks: the block's output as a value. */
/* The block named name among an included template's statements n (Jinja2 finds blocks anywhere
 * in a template: loops, ifs, macros, with, call and filter blocks), or NULL. */
static tpl_node *find_own_block(tpl_node *n, tpl_value name)
{
    for (; n; n = n->next) {
        if (n->kind == TPL_N_BLOCK && n->val.len == name.len && !memcmp(n->val.u.s, name.u.s, name.len)) return n;
        tpl_node *r = NULL;
        switch (n->kind) {
        case TPL_N_FOR:
            if (!(r = find_own_block(n->c, name))) r = find_own_block(n->d, name);
            break;
        case TPL_N_IF: {
            tpl_node *x = n;
            for (; !r && is_elif(x->c); x = x->c) r = find_own_block(x->b, name);
            if (!r) r = find_own_block(x->b, name);
            if (!r) r = find_own_block(x->c, name);
            break;
        }
        case TPL_N_CALLBLOCK: r = find_own_block(n->c, name); break;
        case TPL_N_MACRO: case TPL_N_SETBLOCK: case TPL_N_FILTERBLOCK: case TPL_N_WITH: case TPL_N_AUTOESCAPE:
        case TPL_N_GENERATION: case TPL_N_BLOCK:
            r = find_own_block(n->b, name);
            break;
        default: break;
        }
        if (r) return r;
    }
    return NULL;
}

/* The body of block n of an included or imported template, rendered where it stands or by
 * self.NAME() there: it sees that template's top level, not the loops around it (scoped: all). */
static void inc_block_body(tpl_comp *c, tpl_node *n, bool scoped)
{
    tpl_block *save_b = c->cur_block;
    scope *save_scope = c->fn->scope;
    loopctx *save_loop = c->fn->loop;
    c->cur_block = NULL;
    /* in a macro: the names of the macros around it hidden too (a macro in a macro), the
     * template's top level seen (Jinja2 renders the block with the template's context) */
    scope **hidden = NULL;
    size_t nhidden = 0;
    func *g = c->fn;
    if (!scoped) {
        if (c->inc_fn == c->fn && c->inc_top) c->fn->scope = c->inc_top;
        c->fn->loop = NULL;
        if (c->inc_fn != c->fn) {
            for (g = c->fn->parent; g && g != c->inc_fn; g = g->parent) nhidden++;
            if (g && !(hidden = tpl_arena_alloc(c->tmp, (nhidden + 1) * sizeof *hidden))) c_nomem(c, n->off);
        }
    }
    if (hidden) {
        size_t k = 0;
        for (g = c->fn->parent; g != c->inc_fn; g = g->parent) {
            hidden[k++] = g->scope;
            g->scope = NULL;
        }
        hidden[k] = g->scope;
        if (c->inc_top) g->scope = c->inc_top;
    }
    push_scope(c, c->inc_fn != c->fn && !scoped);
    frame_init(c, n->b);
    body(c, n->b);
    if (hidden) {
        size_t k = 0;
        for (g = c->fn->parent; g != c->inc_fn; g = g->parent) g->scope = hidden[k++];
        g->scope = hidden[k];
    }
    c->fn->scope = save_scope;
    c->fn->loop = save_loop;
    c->cur_block = save_b;
}

static bool has_extends(const tpl_node *n, int depth);

/* `self.NAME(...)` where NAME is no block of the template: Jinja2's TemplateReference has no such
 * attribute, an Undefined that raises when called (only where it runs). In a template whose extends
 * picks the parent at render time, compiled on its own (EXTENDS_RUN compiles its blocks again with
 * the parent), NAME may be a block of that parent once its extends ran: that is refused where it
 * runs (a statement after the extends, or a macro that such code or the parent's blocks call). */
static __attribute__((noinline)) void self_no_block(tpl_comp *c, tpl_node *n, tpl_value bname)
{
    char msg[200];
    int k = snprintf(msg, sizeof msg, "'jinja2.runtime.TemplateReference object' has no attribute '%.*s'",
                     (int)(bname.len > 100 ? 100 : bname.len), bname.u.s);
    if (k < 0 || (size_t)k >= sizeof msg) k = 0;
    c->cur_off = n->off;
    uint32_t pos = 0;
    bool dyn = c->include_depth == 0 && c->ext_dyn && !c->p->ext_parent;
    if (dyn && c->fn == &c->root) {
        emit(c, TPL_OP_JSET, c->ext_slot, 0);
        pos = emit_raw(c, 0);
    }
    if (!dyn || c->fn == &c->root) {
        emit(c, TPL_OP_UNDEF_MSG, add_const(c, tpl_v_str(msg, (size_t)k)), 1);
        emit(c, TPL_OP_CALL, 0, 0);
        emit_raw(c, TPL_ARGW(0, 0, TPL_NO_KW));
    }
    if (!dyn) return;
    uint32_t done = pos ? emit(c, TPL_OP_JUMP, 0, 0) : 0;
    if (pos) patch_word(c, pos, here(c));
    k = snprintf(msg, sizeof msg, "unsupported: self.%.*s() outside the blocks of a template whose extends picks "
                 "its parent at render time (a block tpl does not know here)", (int)(bname.len > 100 ? 100 : bname.len),
                 bname.u.s);
    if (k < 0 || (size_t)k >= sizeof msg) k = 0;
    emit(c, TPL_OP_FAIL, add_const(c, tpl_v_str(msg, (size_t)k)), 1);
    if (done) {
        patch_a(c, done, here(c));
        c->fn->depth--; /* (one value on either path) */
    }
}

/* Copies compiled in place (an include's body; a block's body where super(), super.super() or
 * self.NAME() calls it) inside another such copy: each level may copy the next several times, so
 * their code grows exponentially with the nesting (15 extends levels whose block calls super()
 * twice: 65,534 copies; 12 levels of partials including the next twice: 4,096 copies of the
 * last), and the compile spent seconds (9 s for 22 blocks each calling the one before twice
 * through self) reaching the program's size limit ("template too large") or its memory limit.
 * Their code, and 16 words a copy for its fixed work, is bounded by TPL_NESTED_COPY_MAX words:
 * past it, a located error at the copy that crosses it. A copy that is not inside another (a
 * template's include of a partial, a block's first super()) is not counted: its code is its
 * source's. */
#define TPL_NESTED_COPY_MAX (1u << 18)

static bool inline_enter(tpl_comp *c, uint32_t off)
{
    if (c->failed) return false;
    if (c->inline_depth >= 1) {
        size_t cur = c->inline_words + (c->inline_depth >= 2 ? c->n - c->inline_start : 0) + 16;
        if (cur > TPL_NESTED_COPY_MAX) {
            cerror(c, off, "unsupported: the includes, super() and self.NAME() calls nested here compile more "
                   "than %u words of copies (each is compiled in place, and each level copies the next again)",
                   TPL_NESTED_COPY_MAX);
            return false;
        }
        c->inline_words += 16;
        if (c->inline_depth == 1) c->inline_start = c->n;
    }
    c->inline_depth++;
    return true;
}

static void inline_leave(tpl_comp *c)
{
    if (--c->inline_depth == 1) c->inline_words += c->n - c->inline_start;
}

/* A call of the current block's definition pos (super() / super.super()): its body compiled in
 * place, in the block's own scope and loop, captured as one value (BlockReference.__call__: Markup
 * under autoescape). */
static void parent_block_call(tpl_comp *c, size_t pos, uint32_t off)
{
    scope *save_scope = c->fn->scope;
    loopctx *save_loop = c->fn->loop;
    c->fn->scope = c->cur_block_base;
    c->fn->loop = c->cur_block_loop;
    emit(c, TPL_OP_CAPTURE, 0, 0);
    if (inline_enter(c, off)) {
        compile_block(c, c->cur_block->name, (uint32_t)pos, off, BLOCK_SEE_SAME);
        inline_leave(c);
    }
    emit(c, TPL_OP_END_CAPTURE, 0, 1);
    if (c->autoescape) emit_markup(c);
    c->fn->scope = save_scope;
    c->fn->loop = save_loop;
}

static bool block_call(tpl_comp *c, tpl_node *n)
{
    tpl_node *fn = n->a;
    uint32_t slot;
    res_kind sr;
    if (fn->kind == TPL_N_NAME && !n->b && is_block_super(c, fn->val, fn->off)) {
        /* the parent's block gets the context this block got (Jinja2's BlockReference): not
         * the names this block set, nor the loops inside it */
        if (c->cur_block_pos + 1 >= c->cur_block->ndefs) {
            /* a block with no parent block (a template that extends nothing, or at render time,
             * rendering its own block): Jinja2's super() is an undefined value then, an error
             * when called, so only where it runs */
            char msg[160];
            int k = snprintf(msg, sizeof msg, "there is no parent block called '%.*s'.",
                             (int)(c->cur_block->name.len > 100 ? 100 : c->cur_block->name.len), c->cur_block->name.u.s);
            c->cur_off = n->off;
            emit(c, TPL_OP_UNDEF_MSG, add_const(c, tpl_v_str(msg, (size_t)k)), 1);
            emit(c, TPL_OP_CALL, 0, 0);
            emit_raw(c, TPL_ARGW(0, 0, TPL_NO_KW));
            return true;
        }
        if (c->fn != c->cur_block_fn) {
            /* from a macro or call block (or a recursive loop) inside the block: Jinja2's macro
             * closes over the block's super (a BlockReference rendering the parent's block with
             * the block's context). It is compiled in place here, in this function, in a scope of
             * its own that sees none of this function's names nor those of the functions between
             * it and the block's; the block's function sees only what the block's base sees. */
            func *bf = c->fn->parent;
            while (bf && bf != c->cur_block_fn) bf = bf->parent;
            if (!bf) {
                cerror(c, n->off, "unsupported: super() inside a macro or call block in a block");
                return true;
            }
            enum { SUPER_MAX_FN = 64 };
            scope *saved[SUPER_MAX_FN];
            int nf = 0;
            for (func *f = c->fn->parent; f != bf; f = f->parent) {
                if (nf == SUPER_MAX_FN) {
                    cerror(c, n->off, "unsupported: super() inside macros nested more than %d deep in a block",
                           SUPER_MAX_FN);
                    nf = 0;
                    for (func *g = c->fn->parent; g != f; g = g->parent) g->scope = saved[nf++];
                    return true;
                }
                saved[nf++] = f->scope;
                f->scope = NULL;
            }
            scope *save_bscope = bf->scope, *save_scope = c->fn->scope;
            loopctx *save_loop = c->fn->loop;
            bf->scope = c->cur_block_base;
            c->fn->loop = NULL;
            scope *own = push_scope(c, true);
            if (own) own->ctx_top = true;
            emit(c, TPL_OP_CAPTURE, 0, 0);
            if (inline_enter(c, n->off)) {
                compile_block(c, c->cur_block->name, c->cur_block_pos + 1, n->off, BLOCK_SEE_SAME);
                inline_leave(c);
            }
            emit(c, TPL_OP_END_CAPTURE, 0, 1);
            if (c->autoescape) emit_markup(c);
            if (own && c->fn->scope == own) pop_scope(c);
            c->fn->scope = save_scope;
            c->fn->loop = save_loop;
            bf->scope = save_bscope;
            nf = 0;
            for (func *f = c->fn->parent; f != bf; f = f->parent) f->scope = saved[nf++];
            return true;
        }
        parent_block_call(c, c->cur_block_pos + 1, n->off);
        return true;
    }
    int lv = fn->kind == TPL_N_GETATTR && !n->b ? super_level(c, fn, 0) : 0;
    if (lv >= 2) {
        /* super.super(): the block lv levels up (BlockReference.super, then __call__) */
        if (!super_defined(c, lv)) {
            expr(c, fn); /* (an undefined value, called: its UndefinedError) */
            c->cur_off = n->off;
            emit(c, TPL_OP_CALL, 0, 0);
            emit_raw(c, TPL_ARGW(0, 0, TPL_NO_KW));
            return true;
        }
        if (c->fn != c->cur_block_fn) {
            cerror(c, n->off, "unsupported: super.super() inside a macro or call block in a block");
            return true;
        }
        parent_block_call(c, c->cur_block_pos + (size_t)lv, n->off);
        return true;
    }
    tpl_value bname = fn->kind == TPL_N_GETATTR ? fn->val : /* self.name() or self["name"]() */
                      fn->kind == TPL_N_GETITEM && fn->b->kind == TPL_N_CONST && fn->b->val.type == TPL_T_STR ? fn->b->val
                                                                                                              : tpl_v_none();
    if (bname.type == TPL_T_STR && fn->a->kind == TPL_N_NAME && name_eq(fn->a->val, "self", 4) && !n->b &&
        c->include_depth > 0 && c->inc_root && find_own_block(c->inc_root, bname)) {
        /* in an included or imported template: its own block (Jinja2's TemplateReference of that
         * template's context), rendered as it renders in place there; never the main template's */
        tpl_node *bn = find_own_block(c->inc_root, bname);
        res_kind r = resolve(c, fn->a->val, &slot);
        if (r != R_GLOBAL && r != R_BUILTIN) return false;
        if (c->self_stored) {
            cerror(c, fn->a->off, "unsupported: reading `self` after an assignment of a variable named self "
                   "(Jinja2's `self` is then undefined)");
            return true;
        }
        emit(c, TPL_OP_CAPTURE, 0, 0);
        if (inline_enter(c, n->off)) {
            inc_block_body(c, bn, false);
            inline_leave(c);
        }
        emit(c, TPL_OP_END_CAPTURE, 0, 1);
        if (c->autoescape) emit_markup(c);
        return true;
    }
    if (bname.type == TPL_T_STR && fn->a->kind == TPL_N_NAME && name_eq(fn->a->val, "self", 4) && !n->b &&
        c->include_depth == 0 && c->nblocks && resolve(c, fn->a->val, &slot) == R_GLOBAL && find_block(c, bname)) {
        if (c->self_stored) {
            cerror(c, fn->a->off, "unsupported: reading `self` after an assignment of a variable named self "
                   "(Jinja2's `self` is then undefined)");
            return true;
        }
        emit(c, TPL_OP_CAPTURE, 0, 0);
        if (inline_enter(c, n->off)) {
            compile_block(c, bname, 0, n->off, BLOCK_SEE_TOP);
            inline_leave(c);
        }
        emit(c, TPL_OP_END_CAPTURE, 0, 1);
        if (c->autoescape) emit_markup(c);
        return true;
    }
    if (bname.type == TPL_T_STR && fn->a->kind == TPL_N_NAME && name_eq(fn->a->val, "self", 4) &&
        c->syn == TPL_SYN_JINJA && !c->self_stored &&
        ((sr = resolve(c, fn->a->val, &slot)) == R_GLOBAL || sr == R_BUILTIN) &&
        (c->include_depth > 0 ? c->inc_root && !has_extends(c->inc_root, 0) && !find_own_block(c->inc_root, bname)
                              : !c->nblocks || !find_block(c, bname))) {
        self_no_block(c, n, bname);
        return true;
    }
    return false;
}

/* ---- include and import ---- */

/* Whether e names its template(s) by string constants (resolved at compile time). */
static bool const_template_names(const tpl_node *e)
{
    if (e->kind == TPL_N_CONST && e->val.type == TPL_T_STR) return true;
    if ((e->kind == TPL_N_LIST || e->kind == TPL_N_TUPLE) && e->a) {
        for (const tpl_node *x = e->a; x; x = x->next)
            if (x->kind != TPL_N_CONST || x->val.type != TPL_T_STR) return false;
        return true;
    }
    return false;
}

/* Pushes a dict of the variables visible here (the names of the current function's scopes, of
 * the functions it is defined in, and of the template level), each loaded as a read of it would
 * be: what Jinja2 passes an included template (context.get_all() with the local frame's stores,
 * dump_local_context: no `loop` of a loop that is not extended, no varargs, kwargs or caller a
 * macro's body does not read). A name not set yet reads as the state would (the VM leaves
 * undefined ones out). */
static void push_context_map(tpl_comp *c)
{
    tpl_smap seen = { 0 };
    seen.arena = c->tmp;
    uint32_t cnt = 0, k;
    for (func *f = c->fn; f && !c->failed; f = f->parent)
        for (scope *s = f->scope; s && !c->failed; s = s->parent) {
            for (uint32_t i = 0; i < s->nvars && !c->failed; i++) {
                tpl_value nm = s->vars[i].name;
                if (s->vars[i].ctx_hidden) continue;
                if (tpl_smap_get(&seen, nm.u.s, nm.len, &k)) continue;
                if (!tpl_smap_put(&seen, nm.u.s, nm.len, 1)) { c_nomem(c, c->cur_off); return; }
                push_const(c, nm);
                c->ctx_read = true;
                load_name(c, nm);
                c->ctx_read = false;
                cnt++;
            }
            if (s->func_boundary && f->parent) break;
        }
    emit(c, TPL_OP_BUILD_MAP, cnt, 1 - 2 * (int)cnt);
}

static void stmt_include_dyn(tpl_comp *c, tpl_node *n);
static void stmt_include(tpl_comp *c, tpl_node *n);

/* {% include ... without context %} where output is buffered (c->buffered): Jinja2 3.1 compiles
 * it to `yield from template._get_default_module()._body_stream`, which ignores the frame's
 * buffer -- in a filter or set block the included text goes to the output of the function the
 * block is in (the template's top level, a block, an included or imported template) when the
 * include runs: ahead of the text the open blocks hold so far and outside their filters (or
 * variable), even when the set block is never printed. tpl renders the include into a capture of
 * its own and inserts the text below the `buffered` captures open there (OUT_INSERT). In a macro,
 * call block or recursive loop body the `yield` makes that Python function a generator, printed as
 * `<generator object ...>`: tpl does not copy that: the include fails when it runs, and a function
 * holding one fails when it is called even where the include is not reached
 * (refuse_generator_function; a macro that is never called still renders). Returns whether it
 * was compiled here. */
static bool stmt_include_without(tpl_comp *c, tpl_node *n)
{
    if (!(n->op & 2) || c->buffered <= 0 || c->syn != TPL_SYN_JINJA) return false;
    c->cur_off = n->off;
    if (!c->gen_fn) {
        int depth = c->buffered;
        emit(c, TPL_OP_CAPTURE, 0, 0);
        c->buffered = 0;
        if (const_template_names(n->a)) stmt_include(c, n);
        else stmt_include_dyn(c, n);
        c->buffered = depth;
        c->cur_off = n->off;
        emit(c, TPL_OP_END_CAPTURE, 0, 1);
        emit(c, TPL_OP_OUT_INSERT, (uint32_t)depth, -1);
        return true;
    }
    emit(c, TPL_OP_FAIL, add_const(c, tpl_v_str(include_without_msg, sizeof include_without_msg - 1)), 1);
    emit(c, TPL_OP_POP, 0, -1);
    return true;
}

/* {% include EXPR %} with a name computed when the template runs (issue 14): the name(s) and
 * the context go to INCLUDE_DYN, which loads, compiles (once per program) and renders it. */
static void stmt_include_dyn(tpl_comp *c, tpl_node *n)
{
    if (stmt_include_without(c, n)) return;
    expr(c, n->a);
    if (n->op & 2) emit(c, TPL_OP_NONE, 0, 1); /* without context */
    else push_context_map(c);
    c->cur_off = n->off;
    emit(c, TPL_OP_INCLUDE_DYN, (n->op & 1) ? 1 : 0, -2);
}

/* Stores the module on the stack into the alias of `{% import ... as m %}` (n), which autoescape
 * treats as an imported module (import_names: its macros' results are markup). */
static void store_import_alias(tpl_comp *c, tpl_node *n)
{
    tpl_node t = { 0 };
    t.kind = TPL_N_NAME;
    t.off = n->off;
    t.val = n->val;
    store_target(c, &t);
    if (c->nimport_names < 16) c->import_names[c->nimport_names++] = n->val;
}

/* {% import EXPR as m %} / {% from EXPR import a, b as c %} with a name computed when the
 * template runs (issue 14): IMPORT_DYN pushes the dict of the names the template exports; import
 * makes it the module (a namespace, as the constant-name import), from-import stores its items. */
static void stmt_import_dyn(tpl_comp *c, tpl_node *n)
{
    expr(c, n->a);
    if (n->kind == TPL_N_IMPORT) emit(c, TPL_OP_DUP, 0, 1); /* (the module's name) */
    if (n->op & 4) push_context_map(c); /* with context */
    else emit(c, TPL_OP_NONE, 0, 1);
    c->cur_off = n->off;
    emit(c, TPL_OP_IMPORT_DYN, 0, -1);
    if (n->kind == TPL_N_IMPORT) {
        emit(c, TPL_OP_MODULE, 2, -1); /* Jinja2's TemplateModule: prints as the template's output */
        store_import_alias(c, n);
        return;
    }
    for (tpl_node *x = n->b; x && !c->failed; x = x->next) {
        emit(c, TPL_OP_DUP, 0, 1);
        c->cur_off = x->off;
        emit(c, TPL_OP_GETITEM_STR, add_name(c, x->val), 0);
        tpl_node t = { 0 };
        t.kind = TPL_N_NAME;
        t.off = x->off;
        t.val = x->a ? x->a->val : x->val;
        store_target(c, &t);
    }
    emit(c, TPL_OP_POP, 0, -1);
}

/* Whether statements n make a closure (a macro, a call block's caller, a recursive loop, a loop
 * filter's test) that may outlive them: an included template's then close over its run
 * (CL_MARK / CL_CLOSE). An include nested in n closes its own. */
static bool makes_closure(const tpl_node *n, int depth)
{
    if (depth > TPL_MAX_AST_DEPTH) return true;
    for (; n; n = n->next) {
        switch (n->kind) {
        case TPL_N_MACRO: case TPL_N_CALLBLOCK: return true;
        case TPL_N_FOR:
            if ((n->op & 1) || n->e) return true;
            if (makes_closure(n->c, depth + 1) || makes_closure(n->d, depth + 1)) return true;
            break;
        case TPL_N_IF:
            if (makes_closure(n->b, depth + 1) || makes_closure(n->c, depth + 1)) return true;
            break;
        case TPL_N_SETBLOCK: case TPL_N_FILTERBLOCK: case TPL_N_WITH: case TPL_N_AUTOESCAPE: case TPL_N_BLOCK:
        case TPL_N_GENERATION:
            if (makes_closure(n->b, depth + 1)) return true;
            break;
        default: break;
        }
    }
    return false;
}

/* Starts (mark: the hidden slot) and ends an inlined template that makes closures: each run of
 * it is a fresh template (Jinja2 renders an include with a new context, an import too), so the
 * closures it made read that run's variables after it, not the slots' later values. */
static uint32_t closure_mark(tpl_comp *c, const tpl_node *body)
{
    if (!makes_closure(body, 0)) return UINT32_MAX;
    uint32_t sl = new_slot(c);
    emit(c, TPL_OP_CL_MARK, sl, 0);
    return sl;
}

static void closure_close(tpl_comp *c, uint32_t mark)
{
    if (mark != UINT32_MAX) emit(c, TPL_OP_CL_CLOSE, mark, 0);
}

/* Whether a loaded template has an extends where Jinja2 runs one (its top level, inside ifs):
 * included or imported by a constant name, it is then loaded when it runs as one named by a
 * computed name (it renders on its own with its parent; tpl inlines included templates). */
static bool has_extends(const tpl_node *n, int depth)
{
    if (depth > TPL_MAX_AST_DEPTH) return false;
    for (; n; n = n->next) {
        if (n->kind == TPL_N_EXTENDS) return true;
        if (n->kind == TPL_N_IF && (has_extends(n->b, depth + 1) || has_extends(n->c, depth + 1))) return true;
        if (n->kind == TPL_N_AUTOESCAPE && has_extends(n->b, depth + 1)) return true;
    }
    return false;
}

static void stmt_include(tpl_comp *c, tpl_node *n)
{
    tpl_node *names, *root = NULL;
    int src = -1;
    if (stmt_include_without(c, n)) return;
    if (!const_template_names(n->a)) { stmt_include_dyn(c, n); return; }
    if (!template_names(c, n->a, &names)) return;
    tpl_arena ta; /* the included template's tree, freed once it is compiled here */
    tpl_arena_init(&ta, 0);
    ta.budget = c->p->budget;
    bool broken = false;
    tpl_node *x = names;
    for (; x && !root && !c->failed; x = x->next) {
        root = load_template_ex(c, &ta, x->val, n->off, true, &src, &broken);
        if (broken) break;
    }
    if (c->failed || !root) {
        tpl_arena_free(&ta);
        if (c->failed || ((n->op & 1) && !broken)) return; /* (ignore missing) */
        if (c->cond_depth > 0 || c->p->opts.defer_missing) {
            /* in code that may not run (or tpl_options.defer_missing): missing or not parsing,
             * loaded when it runs (Jinja2 loads it only then: an optional partial a deployment
             * lacks, or a broken one, behind an if or in a loop that does not run renders) */
            stmt_include_dyn(c, n);
            return;
        }
        if (broken) { /* (its error, reported as load_template reports it) */
            tpl_arena_init(&ta, 0);
            ta.budget = c->p->budget;
            load_template(c, &ta, x->val, n->off, false, &src);
            tpl_arena_free(&ta);
            return;
        }
        if (names->next) { /* Jinja2's select_template: TemplatesNotFound naming them all (as INCLUDE_DYN) */
            char msg[400];
            size_t k = (size_t)snprintf(msg, sizeof msg, "none of the templates given were found: ");
            for (tpl_node *y = names; y && k < sizeof msg; y = y->next)
                k += (size_t)snprintf(msg + k, sizeof msg - k, "%s%.*s", y == names ? "" : ", ",
                                      (int)(y->val.len > 150 ? 150 : y->val.len), y->val.u.s);
            cfail(c, TPL_EK_TEMPLATES_NOT_FOUND, n->off, "%s", msg);
            return;
        }
        cfail(c, TPL_EK_TEMPLATE_NOT_FOUND, n->off, "template '%.*s' not found", (int)names->val.len, names->val.u.s);
        return;
    }
    if (c->include_depth >= 16 && c->cond_depth == 0) {
        /* (Jinja2: a RecursionError when it renders) */
        tpl_arena_free(&ta);
        cerror(c, n->off, "include/import nesting too deep (16)");
        return;
    }
    if (c->include_depth >= 16 || has_extends(root->b, 0)) {
        /* past 16 nested includes in code that may not run (a partial that includes itself for
         * a tree's children, under an if or a loop), or one that extends: loaded when it runs,
         * as Jinja2 does, so the recursion ends where the data ends */
        tpl_arena_free(&ta);
        stmt_include_dyn(c, n);
        return;
    }
    if (!inline_enter(c, n->off)) {
        tpl_arena_free(&ta);
        return;
    }
    bool without = (n->op & 2) != 0;
    bool save_nc = c->no_context, save_lock = c->span_locked;
    uint32_t save_off = c->span_off;
    int save_src = c->cur_src;
    bool save_ae = c->autoescape;
    c->include_depth++;
    c->autoescape = env_autoescape(c);
    bool save_vol = c->ae_volatile;
    c->ae_volatile = false; /* a loaded template: the environment's, not the {% autoescape %} around it */
    if (!c->span_locked) { c->span_locked = true; c->span_off = n->off; }
    if (without) c->no_context = true;
    c->cur_src = src;
    int save_ctx = c->ctx_src1;
    c->ctx_src1 = src + 1;
    scope *save_top = c->inc_top;
    func *save_fn = c->inc_fn;
    tpl_block *save_b = c->cur_block;
    c->cur_block = NULL;
    c->inc_top = push_scope(c, without);
    if (c->inc_top) c->inc_top->ctx_top = true;
    c->inc_fn = c->fn;
    tpl_node *save_iroot = c->inc_root;
    c->inc_root = root->b;
    uint32_t mark = closure_mark(c, root->b);
    frame_init(c, root->b);
    int save_buffered = c->buffered;
    c->buffered = 0; /* (Jinja2: the included template's own root_render_func) */
    bool save_gen = c->gen_fn;
    c->gen_fn = false;
    body(c, root->b);
    c->buffered = save_buffered;
    c->gen_fn = save_gen;
    closure_close(c, mark);
    tpl_arena_free(&ta);
    c->inc_top = save_top; /* (first: pop_scope keeps the scope for reuse unless it is inc_top) */
    c->inc_root = save_iroot;
    pop_scope(c);
    c->inc_fn = save_fn;
    c->cur_block = save_b;
    c->cur_src = save_src;
    c->ctx_src1 = save_ctx;
    c->no_context = save_nc;
    c->span_locked = save_lock;
    c->span_off = save_off;
    c->include_depth--;
    c->autoescape = save_ae;
    c->ae_volatile = save_vol;
    inline_leave(c);
}

/* Pushes what from-import n binds for x, a name the template `name` does not have: Jinja2's
 * undefined value whose message names the import's line (in the source being compiled). */
static void import_missing(tpl_comp *c, tpl_node *n, tpl_value name, tpl_node *x)
{
    uint32_t line, col;
    if (c->cur_src >= 0 && (size_t)c->cur_src < c->nsources)
        tpl_offset_to_linecol(c->sources[c->cur_src].src, c->sources[c->cur_src].n, n->off, &line, &col);
    else
        tpl_offset_to_linecol(c->src, c->srclen, n->off, &line, &col);
    char msg[400];
    int k = snprintf(msg, sizeof msg,
                     "the template '%.*s' (imported on line %u) does not export the requested name '%.*s'",
                     (int)(name.len > 150 ? 150 : name.len), name.u.s, line,
                     (int)(x->val.len > 150 ? 150 : x->val.len), x->val.u.s);
    if (k < 0 || (size_t)k >= sizeof msg) k = snprintf(msg, sizeof msg, "a name is not exported");
    emit(c, TPL_OP_UNDEF_MSG, add_const(c, tpl_v_str(msg, (size_t)k)), 1);
}

/* Compiles the template `name` imported by n once as a function (JUMPed over where it stands):
 * its own template level (c->root while it is compiled, its macros closures over its slots),
 * ending with the dict of its exported names in its slot 0. The index in c->mods, or -1 (failed,
 * or the template is being compiled already: an import cycle, compiled where it stands). */
static int compile_module(tpl_comp *c, tpl_node *n, tpl_value name)
{
    uint32_t k;
    if (tpl_smap_get(&c->mod_idx, name.u.s, name.len, &k)) return c->mods[k].macro == UINT32_MAX ? -1 : (int)k;
    int src = -1;
    tpl_arena ta; /* the imported template's tree, freed once it is compiled */
    tpl_arena_init(&ta, 0);
    ta.budget = c->p->budget;
    tpl_node *root = load_template(c, &ta, name, n->off, c->p->opts.defer_missing || c->cond_depth > 0, &src);
    if (!root || c->include_depth >= 16) { /* (not found or not parsing, deferred: stmt_import defers it) */
        tpl_arena_free(&ta);
        if (root) cerror(c, n->off, "include/import nesting too deep (16)");
        return -1;
    }
    if (has_extends(root->b, 0)) { /* loaded when it runs (stmt_import: IMPORT_DYN) */
        tpl_arena_free(&ta);
        return -1;
    }
    char *kept = tpl_arena_strdup(c->tmp, name.u.s, name.len);
    if (!kept || !grow((void **)&c->mods, &c->modcap, c->nmods + 1, sizeof *c->mods)) {
        tpl_arena_free(&ta);
        c_nomem(c, n->off);
        return -1;
    }
    size_t mi = c->nmods++;
    memset(&c->mods[mi], 0, sizeof c->mods[mi]);
    c->mods[mi].name = tpl_v_str(kept, name.len);
    c->mods[mi].macro = UINT32_MAX;
    c->mod_idx.arena = c->tmp;
    if (!tpl_smap_put(&c->mod_idx, kept, name.len, (uint32_t)mi)) {
        tpl_arena_free(&ta);
        c_nomem(c, n->off);
        return -1;
    }
    uint32_t skip = emit(c, TPL_OP_JUMP, 0, 0);
    /* the importer's state, as stmt_import saves it, and its template level */
    bool save_nc = c->no_context, save_lock = c->span_locked, save_ae = c->autoescape, save_soft = c->soft;
    uint32_t save_off = c->span_off, save_id = c->root_id, save_nimp = c->nimport_names;
    int save_src = c->cur_src;
    scope *save_top = c->inc_top;
    func *save_fn = c->fn, *save_ifn = c->inc_fn;
    tpl_block *save_b = c->cur_block;
    func save_root = c->root;
    c->include_depth++;
    c->autoescape = env_autoescape(c);
    bool save_vol = c->ae_volatile;
    c->ae_volatile = false;
    c->soft = false;
    if (!c->span_locked) { c->span_locked = true; c->span_off = n->off; }
    c->no_context = true;
    c->cur_src = src;
    int save_ctx = c->ctx_src1;
    c->ctx_src1 = src + 1;
    c->cur_block = NULL;
    c->nimport_names = 0;
    memset(&c->root, 0, sizeof c->root);
    c->root.rec_self = c->root.rec_depth = c->root.rec_loop = -1;
    c->fn = &c->root;
    c->root_id = ++c->nroot_ids;
    int save_buffered = c->buffered;
    c->buffered = 0; /* (Jinja2: the imported template's own root_render_func) */
    bool save_gen = c->gen_fn, save_imp = c->import_out;
    c->gen_fn = false;
    c->import_out = true;
    uint32_t entry = here(c);
    scope *s = push_scope(c, true);
    if (s) s->ctx_top = true;
    c->inc_top = s;
    c->inc_fn = c->fn;
    tpl_node *save_iroot = c->inc_root;
    c->inc_root = root->b;
    new_slot(c); /* slot 0: the exports */
    predeclare(c, root->b);
    body(c, root->b);
    uint32_t nvals = 0, nv = s ? s->nvars : 0;
    tpl_smap vars = { 0 };
    vars.arena = c->tmp;
    for (uint32_t i = 0; i < nv && !c->failed; i++) {
        tpl_value v = s->vars[i].name;
        char *vs = tpl_arena_strdup(c->tmp, v.u.s, v.len);
        if (!vs || !tpl_smap_put(&vars, vs, v.len, i)) { c_nomem(c, n->off); break; }
        if ((v.len && v.u.s[0] == '_') || s->vars[i].noexport) continue; /* not exported */
        push_const(c, v);
        emit(c, TPL_OP_LOAD_SLOT, s->vars[i].slot, 1);
        emit_raw(c, add_name(c, v));
        nvals++;
    }
    emit(c, TPL_OP_BUILD_MAP, nvals, 1 - 2 * (int)nvals);
    emit(c, TPL_OP_STORE_SLOT, 0, -1);
    emit(c, TPL_OP_HALT, 0, 0);
    tpl_arena_free(&ta);
    c->inc_top = save_top; /* (first: pop_scope keeps the scope for reuse unless it is inc_top) */
    c->inc_root = save_iroot;
    pop_scope(c);
    func mod = c->root;
    c->root = save_root;
    c->fn = save_fn;
    c->buffered = save_buffered;
    c->gen_fn = save_gen;
    c->import_out = save_imp;
    c->root_id = save_id;
    c->inc_fn = save_ifn;
    c->cur_block = save_b;
    c->cur_src = save_src;
    c->ctx_src1 = save_ctx;
    c->no_context = save_nc;
    c->span_locked = save_lock;
    c->span_off = save_off;
    c->include_depth--;
    c->autoescape = save_ae;
    c->ae_volatile = save_vol;
    c->soft = save_soft;
    c->nimport_names = save_nimp;
    patch_a(c, skip, here(c));
    if (c->failed) return -1;
    if (mod.nslots > 0xFFFF || mod.max_depth > 0xFFF0) { cerror(c, n->off, "imported template too large"); return -1; }
    tpl_macro_desc d = { 0 };
    d.entry = entry;
    d.nslots = (uint16_t)mod.nslots;
    d.max_stack = (uint16_t)(mod.max_depth + 4);
    d.varargs_slot = d.kwargs_slot = d.caller_slot = -1;
    tpl_list *pl = param_list(c, 0);
    if (!pl) return -1;
    tpl_value lv = tpl_v_list(pl);
    lv.flags = TPL_F_TUPLE;
    d.params = add_const(c, lv);
    d.name = add_name(c, c->mods[mi].name);
    if (!cgrow(c, (void **)&c->macros, &c->mcap, c->nmacros + 1, sizeof *c->macros)) { c_nomem(c, n->off); return -1; }
    c->macros[c->nmacros] = d;
    c->mods[mi].macro = (uint32_t)c->nmacros++;
    c->mods[mi].nslots = mod.nslots;
    c->mods[mi].vars = vars;
    return (int)mi;
}

/* import / from-import of a template compiled once (compile_module): IMPORT_MOD runs it in its
 * frame among the current template level's slots (one per template level that imports it: each
 * import runs it again there, as Jinja2 evaluates the module at the import; a macro of an earlier
 * import reads the same values). False: not compiled so (the caller compiles it in place). */
static bool stmt_import_module(tpl_comp *c, tpl_node *n, tpl_value name)
{
    int mi = compile_module(c, n, name);
    if (c->failed) return true;
    if (mi < 0) return false;
    tpl_cmod *m = &c->mods[mi];
    uint32_t off = UINT32_MAX;
    for (uint32_t i = 0; i < m->nframes; i++)
        if (m->frames[i].root_id == c->root_id) off = m->frames[i].off;
    if (off == UINT32_MAX) {
        if (c->root.nslots + m->nslots > 0xFFFF) { cerror(c, n->off, "too many variables"); return true; }
        if (!grow((void **)&m->frames, &m->fcap, m->nframes + 1, sizeof *m->frames)) {
            c_nomem(c, n->off);
            return true;
        }
        off = c->root.nslots;
        c->root.nslots += m->nslots;
        m->frames[m->nframes++] = (struct tpl_cmod_frame){ c->root_id, off };
    }
    c->cur_off = n->off;
    if (n->kind == TPL_N_IMPORT) push_const(c, name); /* (the module's name) */
    c->cur_off = n->off;
    emit(c, TPL_OP_IMPORT_MOD, m->macro, 1);
    emit_raw(c, off);
    if (n->kind == TPL_N_IMPORT) {
        emit(c, TPL_OP_MODULE, 2, -1); /* Jinja2's TemplateModule: prints as the template's output */
        store_import_alias(c, n);
        return true;
    }
    for (tpl_node *x = n->b; x && !c->failed; x = x->next) {
        uint32_t k;
        c->cur_off = x->off;
        if (tpl_smap_get(&m->vars, x->val.u.s, x->val.len, &k)) {
            emit(c, TPL_OP_DUP, 0, 1);
            emit(c, TPL_OP_GETITEM_STR, add_name(c, x->val), 0);
        } else {
            import_missing(c, n, name, x);
        }
        tpl_node t = { 0 };
        t.kind = TPL_N_NAME;
        t.off = x->off;
        t.val = x->a ? x->a->val : x->val;
        store_target(c, &t);
    }
    emit(c, TPL_OP_POP, 0, -1);
    return true;
}

/* import / from-import: runs the template (output discarded, without context) and collects
 * its template-level names. */
static void stmt_import(tpl_comp *c, tpl_node *n)
{
    tpl_node *names;
    if (n->kind != TPL_N_IMPORT)
        for (tpl_node *x = n->b; x; x = x->next)
            if (x->val.len && x->val.u.s[0] == '_') { /* Jinja2's parser refuses them */
                cfail(c, TPL_EK_ASSERTION, x->off, "names starting with an underline can not be imported");
                return;
            }
    if (!const_template_names(n->a)) { stmt_import_dyn(c, n); return; }
    if (!template_names(c, n->a, &names)) return;
    if (!(n->op & 4) && stmt_import_module(c, n, names->val)) return; /* without context */
    int src = -1, save_src = c->cur_src;
    tpl_arena ta; /* the imported template's tree, freed once it is compiled here */
    tpl_arena_init(&ta, 0);
    ta.budget = c->p->budget;
    tpl_node *root = load_template(c, &ta, names->val, n->off, c->p->opts.defer_missing || c->cond_depth > 0, &src);
    if (!root && !c->failed) { /* not found or not parsing where it may not run: loaded when it runs (as stmt_include) */
        tpl_arena_free(&ta);
        stmt_import_dyn(c, n);
        return;
    }
    if (!root || c->include_depth >= 16) {
        tpl_arena_free(&ta);
        if (root) cerror(c, n->off, "include/import nesting too deep (16)");
        return;
    }
    if (has_extends(root->b, 0)) {
        tpl_arena_free(&ta);
        stmt_import_dyn(c, n);
        return;
    }
    bool save_nc = c->no_context, save_lock = c->span_locked;
    uint32_t save_off = c->span_off;
    bool save_ae = c->autoescape;
    c->include_depth++;
    c->autoescape = env_autoescape(c);
    bool save_vol = c->ae_volatile;
    c->ae_volatile = false; /* a loaded template: the environment's, not the {% autoescape %} around it */
    if (!c->span_locked) { c->span_locked = true; c->span_off = n->off; }
    /* with context: the template sees the importer's names, as an include does (Jinja2) */
    bool with_ctx = (n->op & 4) != 0;
    if (!with_ctx) c->no_context = true;
    c->cur_src = src;
    int save_ctx = c->ctx_src1;
    c->ctx_src1 = src + 1;
    scope *s = push_scope(c, !with_ctx);
    if (s) s->ctx_top = true;
    scope *save_top = c->inc_top;
    func *save_fn = c->inc_fn;
    tpl_block *save_b = c->cur_block;
    c->cur_block = NULL;
    c->inc_top = s;
    c->inc_fn = c->fn;
    tpl_node *save_iroot = c->inc_root;
    c->inc_root = root->b;
    predeclare(c, root->b);
    uint32_t mark = closure_mark(c, root->b);
    emit(c, TPL_OP_CAPTURE, 0, 0);
    int save_buffered = c->buffered;
    c->buffered = 0; /* (Jinja2: the imported template's own root_render_func) */
    bool save_gen = c->gen_fn, save_imp = c->import_out;
    c->gen_fn = false;
    c->import_out = true;
    body(c, root->b);
    c->buffered = save_buffered;
    c->gen_fn = save_gen;
    c->import_out = save_imp;
    emit(c, TPL_OP_END_CAPTURE, 0, 1);
    closure_close(c, mark);
    if (n->kind == TPL_N_IMPORT) push_const(c, names->val); /* the output and the name: the module's */
    else emit(c, TPL_OP_POP, 0, -1);
    uint32_t nvals = 0;
    if (n->kind == TPL_N_IMPORT) {
        for (uint32_t i = 0; s && i < s->nvars; i++) {
            if ((s->vars[i].name.len && s->vars[i].name.u.s[0] == '_') || s->vars[i].noexport) continue; /* not exported */
            push_const(c, s->vars[i].name);
            emit(c, TPL_OP_LOAD_SLOT, s->vars[i].slot, 1);
            emit_raw(c, add_name(c, s->vars[i].name));
            nvals++;
        }
        emit(c, TPL_OP_BUILD_MAP, nvals, 1 - 2 * (int)nvals);
        c->cur_off = n->off;
        emit(c, TPL_OP_MODULE, 3, -2); /* Jinja2's TemplateModule: prints as the template's output */
    } else {
        for (tpl_node *x = n->b; x && !c->failed; x = x->next) {
            int sl = s ? scope_find(s, x->val) : -1;
            if (sl < 0) {
                c->cur_src = save_src;
                import_missing(c, n, names->val, x);
                c->cur_src = src;
                nvals++;
                continue;
            }
            emit(c, TPL_OP_LOAD_SLOT, (uint32_t)sl, 1);
            emit_raw(c, add_name(c, x->val));
            nvals++;
        }
    }
    tpl_arena_free(&ta);
    c->inc_top = save_top; /* (first: pop_scope keeps the scope for reuse unless it is inc_top) */
    c->inc_root = save_iroot;
    pop_scope(c);
    c->inc_fn = save_fn;
    c->cur_block = save_b;
    c->cur_src = save_src;
    c->ctx_src1 = save_ctx;
    c->no_context = save_nc;
    c->span_locked = save_lock;
    c->span_off = save_off;
    c->include_depth--;
    c->autoescape = save_ae;
    c->ae_volatile = save_vol;
    if (c->failed) return;
    c->cur_off = n->off;
    if (n->kind == TPL_N_IMPORT) {
        store_import_alias(c, n);
        return;
    }
    /* from-import: store the values (pushed first to last) into their names */
    tpl_node *items[64];
    uint32_t k = 0;
    for (tpl_node *x = n->b; x && k < 64; x = x->next) items[k++] = x;
    if (k != nvals) { cerror(c, n->off, "too many names in from-import"); return; }
    while (k > 0) {
        tpl_node *x = items[--k];
        tpl_node t = { 0 };
        t.kind = TPL_N_NAME;
        t.off = x->off;
        t.val = x->a ? x->a->val : x->val;
        store_target(c, &t);
    }
}

static void stmt_inner(tpl_comp *c, tpl_node *n);

/* A statement of a template that extends at render time: after its first extends, output at
 * its top level (not in set blocks, blocks' bodies or macros) and the blocks placed there
 * (Jinja2's frame.toplevel ones) run only while no parent is set, as Jinja2's
 * `if parent_template is None:` around them; include, call and filter blocks' results print
 * (Jinja2 writes them unguarded). */
static void stmt(tpl_comp *c, tpl_node *n)
{
    if (c->failed) return;
    if ((!c->ext_guard && !c->ext_skip) || c->ext_noguard || c->include_depth > 0 || c->fn != &c->root ||
        !(n->kind == TPL_N_TEXT || n->kind == TPL_N_OUTPUT || (n->kind == TPL_N_BLOCK && (n->op & 16)))) {
        stmt_inner(c, n);
        return;
    }
    if (c->ext_skip) return; /* (Jinja2's has_known_extends: not even evaluated) */
    c->cur_off = n->off;
    emit(c, TPL_OP_JSET, c->ext_slot, 0);
    uint32_t pos = emit_raw(c, 0);
    stmt_inner(c, n);
    patch_word(c, pos, here(c));
}

static void stmt_inner(tpl_comp *c, tpl_node *n)
{
    if (c->failed) return;
    c->cur_off = n->off;
    switch (n->kind) {
    case TPL_N_TEXT:
        emit_text_ref(c, n->val.u.s, n->val.len);
        return;
    case TPL_N_OUTPUT: {
        c->slice_undef = n->a; /* (Jinja2's _output_child_to_const: a folded Undefined prints) */
        /* in a volatile autoescape block a constant output (as_const, where no filter folds) is
         * escaped as the code generator's autoescape says, any other as the run-time value */
        bool ae = c->autoescape;
        if (c->ae_volatile) ae = folds_const(n->a) && !has_filter(n->a) ? c->ae_compile : c->autoescape;
        if (c->finalize.type != TPL_T_STR && !c->ae_volatile && reads_self(c, n->a)) {
            print_self(c, n->a, ae);
            return;
        }
        if (c->finalize.type == TPL_T_STR) { /* Environment(finalize=f): f(value), then as always */
            if (!host_func(c, c->finalize, TPL_HOST_FILTER)) {
                cerror(c, n->off, "finalize: no host filter named '%.*s'", (int)c->finalize.len, c->finalize.u.s);
                return;
            }
            /* a constant expression is escaped before finalize and printed as finalize returns
             * it (Jinja2's _output_child_to_const); any other is finalized, then escaped */
            bool konst = ae && folds_const(n->a);
            expr(c, n->a);
            if (konst) emit(c, TPL_OP_ESCAPE, 0, 0);
            uint32_t w = call_args(c, NULL, 1);
            c->cur_off = n->a->off;
            emit(c, TPL_OP_HOST_FILTER, add_const(c, c->finalize), 1 - argw_count(w));
            emit_raw(c, w);
            if (ae && !konst) emit(c, TPL_OP_ESCAPE, 0, 0);
            emit(c, sop(c, TPL_OP_PRINT_PY), 0, -1);
            return;
        }
        if (n->a->kind == TPL_N_CONST && n->a->val.type != TPL_T_UNDEF && !ae) {
            tpl_sb b;
            tpl_sb_init(&b, c->tmp);
            tpl_py_str(&b, n->a->val);
            emit_text_ref(c, b.p, b.len);
            return;
        }
        if (!ae && c->syn == TPL_SYN_JINJA) {
            uint32_t nadd = add_chain(c, n->a, false);
            if (nadd >= 2) {
                print_adds(c, n->a, nadd, n->a->off);
                return;
            }
        }
        c->print_bare = n->a->kind == TPL_N_NAME;
        expr(c, n->a);
        c->print_bare = false;
        c->cur_off = n->a->off; /* a print error (strict undefined) points at the expression */
        if (ae) emit(c, TPL_OP_ESCAPE, 0, 0);
        emit(c, sop(c, TPL_OP_PRINT_PY), 0, -1);
        return;
    }
    case TPL_N_IF:
        c->cond_depth++;
        stmt_if(c, n);
        c->cond_depth--;
        return;
    case TPL_N_FOR:
        /* (the iterable is compiled in the enclosing frame, soft inside an if, as Jinja2's
         * visit_For; the test, body and else make their own frames, never soft) */
        c->cond_depth++;
        stmt_for(c, n);
        c->cond_depth--;
        return;
    case TPL_N_SET:
        expr(c, n->b);
        store_target(c, n->a);
        if ((c->cur_block_super & SUP_STORE) && n->a->kind == TPL_N_NAME) super_set_done(c, n->a->val);
        return;
    case TPL_N_NSSET:
        expr(c, n->a);
        expr(c, n->b);
        c->cur_off = n->off;
        emit(c, TPL_OP_NS_SET, add_name(c, n->val), -2);
        return;
    case TPL_N_SETBLOCK:
    case TPL_N_FILTERBLOCK: {
        /* Jinja2's AssignBlock and FilterBlock: an inner frame (frame.inner()) whose filters run
         * in it (they read what the body set), left as a loop's or with's frame is (leave_frame) */
        bool setb = n->kind == TPL_N_SETBLOCK;
        tpl_node *fbody = n->b, *filters = setb ? n->c : n->a;
        emit(c, TPL_OP_CAPTURE, 0, 0);
        push_scope(c, false);
        bool reset = c->syn == TPL_SYN_JINJA && makes_closure(fbody, 0);
        /* (the frame's names as read by its body and then its filters: a DO of the filters
         * appended to the body while frame_init looks) */
        tpl_node *fr = filters ? tpl_node_new(c->tmp, TPL_N_DO, n->off) : NULL, *tail = NULL, *scan = fbody;
        if (filters && !fr) { c_nomem(c, n->off); return; }
        if (fr) {
            fr->a = filters;
            if (fbody) {
                for (tail = fbody; tail->next; tail = tail->next) {}
                tail->next = fr;
            } else {
                scan = fr;
            }
        }
        frame_init(c, scan);
        if (tail) tail->next = NULL;
        if (reset) declare_frame_loads(c, fbody);
        if (setb) c->ext_noguard++;
        c->buffered++;
        body(c, fbody);
        c->buffered--;
        if (setb) c->ext_noguard--;
        c->cur_off = n->off;
        emit(c, TPL_OP_END_CAPTURE, 0, 1);
        if (c->autoescape) emit_markup(c);
        if (filters) {
            bool soft = c->soft;
            c->soft = false; /* the filters run in the block's frame (never soft) */
            apply_filters(c, filters);
            c->soft = soft;
            if (setb && c->autoescape) emit_markup(c);
        }
        if (reset || scope_has_shared(c->fn->scope)) reset_frame(c, reset);
        pop_scope(c);
        if (setb) {
            store_target(c, n->a);
            return;
        }
        if (filters && c->syn == TPL_SYN_JINJA && !filter_gives_str(c, filters)) {
            /* Jinja2 3.1 writes a filter block's result as it is (`yield` or `_buffer.append`,
             * no str()), and joins the output at the end: a filter that gives something other
             * than a str (length, list, first of "" ...) fails there with a TypeError */
            static const char msg[] = "a filter block's filters gave a value that is not a string (Jinja2 joins the "
                                      "output: expected str instance)";
            /* in what becomes an imported template's module, Jinja2 keeps the value in the module's
             * output (TemplateModule._body_stream) and raises only if the module is printed: tpl
             * refuses it where it runs */
            static const char imsg[] = "unsupported: a filter block whose filters gave a value that is not a string, in "
                                       "an imported template's output (Jinja2 keeps it in the module and raises "
                                       "TypeError only if the module is printed)";
            bool imp = c->import_out && c->buffered == 0;
            emit(c, TPL_OP_DUP, 0, 1);
            emit(c, TPL_OP_TEST, (uint32_t)TPL_B_TEST_string, 0);
            emit_raw(c, TPL_ARGW(1, 0, TPL_NO_KW));
            uint32_t ok = emit(c, TPL_OP_JT_PY, 0, -1);
            if (imp) {
                emit(c, TPL_OP_FAIL, add_const(c, tpl_v_str(imsg, sizeof imsg - 1)), 1);
                emit(c, TPL_OP_POP, 0, -1);
            } else {
                emit(c, TPL_OP_FAIL_KIND, add_const(c, tpl_v_str(msg, sizeof msg - 1)), 0);
                emit_raw(c, TPL_EK_TYPE);
            }
            patch_a(c, ok, here(c));
        }
        emit(c, sop(c, TPL_OP_PRINT_PY), 0, -1);
        return;
    }
    case TPL_N_WITH: {
        /* values are evaluated in the enclosing scope, then bound in a new one */
        uint32_t cnt = 0;
        for (tpl_node *s = n->a; s; s = s->next) { expr(c, s->b); cnt++; }
        if (cnt > 64) { cerror(c, n->off, "too many with-assignments"); return; }
        push_scope(c, false);
        tpl_node *items[64];
        uint32_t i = 0;
        for (tpl_node *s = n->a; s && i < 64; s = s->next) items[i++] = s;
        if (with_targets_repeat(n->a)) {
            /* Jinja2 assigns the targets left to right: of a name given twice the last value wins */
            uint32_t tmp[64];
            for (uint32_t k = cnt; k > 0; k--) {
                tmp[k - 1] = new_slot(c);
                emit(c, TPL_OP_STORE_SLOT, tmp[k - 1], -1);
            }
            for (uint32_t k = 0; k < cnt; k++) {
                emit(c, TPL_OP_LOAD_SLOT, tmp[k], 1);
                emit_raw(c, add_name(c, tpl_v_str("(with)", 6)));
                store_target(c, items[k]->a);
            }
        } else {
            while (i > 0) store_target(c, items[--i]->a);
        }
        bool reset = c->syn == TPL_SYN_JINJA && makes_closure(n->b, 0);
        if (reset) mark_params(c);
        frame_init(c, n->b);
        if (reset) declare_frame_loads(c, n->b);
        body(c, n->b);
        if (reset || scope_has_shared(c->fn->scope)) reset_frame(c, reset);
        pop_scope(c);
        return;
    }
    case TPL_N_BREAK:
    case TPL_N_CONTINUE: {
        const char *what = n->kind == TPL_N_BREAK ? "break" : "continue";
        if (!c->p->opts.hf && !c->p->opts.loop_controls) { cerror(c, n->off, "Encountered unknown tag '%s'. (loop controls are enabled in the hf profile)", what); return; }
        loopctx *lc = c->fn->loop;
        if (!lc) { cerror(c, n->off, "'%s' outside of a loop", what); return; }
        if (n->kind == TPL_N_CONTINUE) { emit(c, TPL_OP_JUMP, lc->top, 0); return; }
        uint32_t j = emit(c, TPL_OP_JUMP, 0, 0);
        if (!grow((void **)&lc->breaks, &lc->cap, lc->nbreaks + 1, sizeof *lc->breaks)) { c_nomem(c, n->off); return; }
        lc->breaks[lc->nbreaks++] = j;
        return;
    }
    case TPL_N_MACRO: {
        uint32_t slot = declare(c, n->val);
        c->cond_depth++;
        compile_function(c, n->val, n->a, n->b, n->off);
        c->cond_depth--;
        c->cur_off = n->off;
        emit(c, TPL_OP_STORE_SLOT, slot, -1);
        return;
    }
    case TPL_N_CALLBLOCK: {
        tpl_node *call = n->a;
        if (call->kind != TPL_N_CALL) { cerror(c, call->off, "expected a call in the call block"); return; }
        tpl_value hidden = tpl_v_str("(caller)", 8);
        c->cond_depth++;
        compile_function(c, tpl_v_str("", 0), n->b, n->c, n->off); /* (Jinja2: the caller's name is None) */
        c->cond_depth--;
        uint32_t slot = declare(c, hidden);
        emit(c, TPL_OP_STORE_SLOT, slot, -1);
        tpl_node *kw = tpl_node_new(c->tmp, TPL_N_KWARG, n->off);
        tpl_node *ref = tpl_node_new(c->tmp, TPL_N_NAME, n->off);
        if (!kw || !ref) { c_nomem(c, n->off); return; }
        ref->val = hidden;
        kw->val = tpl_v_str("caller", 6);
        kw->a = ref;
        /* (for this compile only: a block's body is compiled again where self.NAME() or a child's
         * super() renders it) */
        tpl_node *last = call->b, *tail = call->b ? call->b->tail : NULL;
        while (last && last->next) last = last->next;
        call->b = tpl_node_append(call->b, kw);
        expr(c, call);
        if (last) {
            last->next = NULL;
            call->b->tail = tail;
        } else {
            call->b = NULL;
        }
        c->cur_off = n->off;
        /* Jinja2 writes the result as it is: never escaped, a str or an error */
        emit(c, TPL_OP_FILTER, (uint32_t)TPL_B_FILTER_call_result, 0);
        emit_raw(c, TPL_ARGW(1, 0, TPL_NO_KW));
        emit(c, sop(c, TPL_OP_PRINT_PY), 0, -1);
        return;
    }
    case TPL_N_GENERATION:
        if (!c->p->opts.hf) { cerror(c, n->off, "Encountered unknown tag 'generation'."); return; }
        body(c, n->b);
        return;
    case TPL_N_AUTOESCAPE: {
        bool t;
        bool save = c->autoescape, save_vol = c->ae_volatile, save_ct = c->ae_compile;
        if (n->a->kind != TPL_N_CONST || !const_truthy(n->a->val, &t)) {
            /* a value known at run time: Jinja2 sets context.eval_ctx.autoescape to it and
             * compiles the body volatile; here the body twice, its truthiness picks one */
            if (!c->ae_volatile) c->ae_compile = c->autoescape;
            c->ae_volatile = true;
            if (block_or_macro_in(n->b, 0)) {
                cerror(c, n->a->off, "a macro inside {%% autoescape %%} with a value known only at run time "
                       "is not supported (Jinja2 decides its escaping where it is called)");
                return;
            }
            bool soft = c->soft;
            c->soft = false; /* the value is in the Scope's inner frame */
            expr(c, n->a);
            c->soft = soft;
            c->cur_off = n->off;
            bool tested = false; /* Jinja2 tests the value where the body first prints: not in a body of sets */
            for (const tpl_node *x = n->b; x && !tested; x = x->next)
                tested = x->kind != TPL_N_SET && x->kind != TPL_N_NSSET;
            if (!tested) {
                emit(c, TPL_OP_POP, 0, -1);
                c->autoescape = false;
                push_scope(c, false);
                frame_init(c, n->b);
                body(c, n->b);
                pop_scope(c);
                c->autoescape = save;
                c->ae_volatile = save_vol;
                c->ae_compile = save_ct;
                return;
            }
            uint32_t jf = emit(c, sop(c, TPL_OP_JF_PY), 0, -1);
            for (int pass = 0; pass < 2 && !c->failed; pass++) {
                c->autoescape = pass == 0;
                push_scope(c, false);
                frame_init(c, n->b);
                body(c, n->b);
                pop_scope(c);
                if (pass == 0) {
                    uint32_t done = emit(c, TPL_OP_JUMP, 0, 0);
                    patch_a(c, jf, here(c));
                    jf = done;
                }
            }
            patch_a(c, jf, here(c));
        } else {
            c->autoescape = t;
            if (c->ae_volatile) c->ae_compile = t; /* as_const works: set on the volatile context */
            push_scope(c, false); /* a Scope node in Jinja2: its assignments stay inside */
            frame_init(c, n->b);
            body(c, n->b);
            pop_scope(c);
        }
        c->autoescape = save;
        c->ae_volatile = save_vol;
        c->ae_compile = save_ct;
        return;
    }
    case TPL_N_DO:
        if (!c->p->opts.do_statement) {
            cerror(c, n->off, "Encountered unknown tag 'do'."); /* (Jinja2's text: --extension jinja2.ext.do) */
            return;
        }
        expr(c, n->a);
        emit(c, TPL_OP_POP, 0, -1);
        return;
    case TPL_N_INCLUDE: stmt_include(c, n); return;
    case TPL_N_IMPORT:
    case TPL_N_FROMIMPORT: stmt_import(c, n); return;
    case TPL_N_EXTENDS:
        if ((n->op & 4) && c->ext_dyn && !c->p->ext_parent && c->fn == &c->root) {
            /* Jinja2: a parent set already raises; else the parent is loaded now */
            emit(c, TPL_OP_JSET, c->ext_slot, 0);
            uint32_t pos = emit_raw(c, 0);
            expr(c, n->a);
            c->cur_off = n->off;
            emit(c, TPL_OP_EXTENDS_DYN, 0, 0);
            emit(c, TPL_OP_STORE_SLOT, c->ext_slot, -1);
            uint32_t done = emit(c, TPL_OP_JUMP, 0, 0);
            patch_word(c, pos, here(c));
            emit(c, TPL_OP_FAIL, add_const(c, tpl_v_str("extended multiple times", 23)), 1);
            emit(c, TPL_OP_POP, 0, -1);
            patch_a(c, done, here(c));
            c->ext_guard = true;
            return;
        }
        if (n->op & 1) {
            /* after the template's top-level extends (check_extends) */
            c->cur_off = n->off;
            emit(c, TPL_OP_FAIL, add_const(c, tpl_v_str("extended multiple times", 24)), 1);
            emit(c, TPL_OP_POP, 0, -1);
            return;
        }
        cerror(c, n->off, "extends is supported only at a template's top level (or inside if there)");
        return;
    case TPL_N_BLOCK:
        if ((n->op & 2) && (c->include_depth > 0 || !find_block(c, n->val) || find_block(c, n->val)->ndefs <= 1)) {
            /* Jinja2's visit_Block: a required block placed here and defined nowhere else in the
             * extends chain (an included template's blocks are its own) fails when it runs */
            char msg[160];
            snprintf(msg, sizeof msg, "Required block '%.*s' not found", (int)(n->val.len > 100 ? 100 : n->val.len), n->val.u.s);
            c->cur_off = n->off;
            emit(c, TPL_OP_FAIL, add_const(c, tpl_v_str(msg, strlen(msg))), 1);
            emit(c, TPL_OP_POP, 0, -1);
            return;
        }
        if (c->include_depth > 0) {
            /* a block of an included or imported template: that template's own block, rendered
             * in place (the main template's inheritance does not reach it) */
            inc_block_body(c, n, (n->op & 1) != 0);
            return;
        }
        compile_block(c, n->val, 0, n->off, n->op & 1 ? BLOCK_SEE_ALL : BLOCK_SEE_TOP);
        return;
    default:
        cerror(c, n->off, "unexpected %s statement", tpl_node_kind_name(n->kind));
    }
}

/* How many NAME nodes named name the tree n holds (siblings included); *open is set when it has
 * a statement through which another template could read this one's variables. */
static uint32_t name_refs(const tpl_node *n, tpl_value name, bool *open, int depth)
{
    uint32_t k = 0;
    if (depth > 200) { *open = true; return 0; }
    for (; n; n = n->next) {
        switch (n->kind) {
        case TPL_N_INCLUDE: case TPL_N_IMPORT: case TPL_N_FROMIMPORT: case TPL_N_EXTENDS: case TPL_N_BLOCK:
            *open = true;
            break;
        case TPL_N_NAME:
            k += n->val.len == name.len && memcmp(n->val.u.s, name.u.s, name.len) == 0;
            break;
        default: break;
        }
        const tpl_node *kids[5] = { n->a, n->b, n->c, tpl_node_d(n), tpl_node_e(n) };
        for (int i = 0; i < 5; i++)
            if (kids[i]) k += name_refs(kids[i], name, open, depth + 1);
    }
    return k;
}

/* `{% set x = v %}{{ x }}` in a loop body, x read nowhere else, no other template able to see it
 * (and x not exported: loop bodies are scopes): the OUTPUT that prints v, else NULL. */
static tpl_node *set_then_print(tpl_comp *c, tpl_node *set)
{
    if (set->a->kind != TPL_N_NAME || !c->fn->loop || c->autoescape || c->syn != TPL_SYN_JINJA || c->ext_dyn || c->ext_skip ||
        c->include_depth || c->cur_block || (!c->main_body && !c->facts) || c->closed == 0 ||
        c->set_print_scans >= 64)
        return NULL;
    tpl_node *out = set->next;
    while (out && out->kind == TPL_N_TEXT && out->val.len == 0) out = out->next;
    if (!out || out->kind != TPL_N_OUTPUT || out->a->kind != TPL_N_NAME || out->a->val.len != set->a->val.len ||
        memcmp(out->a->val.u.s, set->a->val.u.s, set->a->val.len) != 0)
        return NULL;
    bool open = false;
    c->set_print_scans++;
    uint32_t refs = 0;
    if (c->main_body) refs = name_refs(c->main_body, set->a->val, &open, 0);
    else {
        open = c->facts->open;
        tpl_smap_get(&c->facts->refs, set->a->val.u.s, set->a->val.len, &refs);
    }
    c->closed = !open;
    return !open && refs == 2 ? out : NULL; /* the target and the output */
}

static void body(tpl_comp *c, tpl_node *n)
{
    for (; n && !c->failed; n = n->next) {
        tpl_node *out = n->kind == TPL_N_SET && c->finalize.type != TPL_T_STR ? set_then_print(c, n) : NULL;
        if (!out) { stmt(c, n); continue; }
        /* printed as it is computed: a concatenation goes straight to the output */
        tpl_node *v = n->b;
        c->cur_off = n->off;
        uint32_t nadd = add_chain(c, v, false);
        if (nadd >= 2) {
            print_adds(c, v, nadd, v->off); /* (the sum of two values or more is never undefined) */
        } else {
            expr(c, v);
            c->cur_off = out->a->off; /* a print error (strict undefined) points at the output */
            emit(c, sop(c, TPL_OP_PRINT_PY), 0, -1);
        }
        n = out;
    }
}

/* ------------------------------------------------------------------ driver */

tpl_comp *tpl_comp_new(tpl_program *p, tpl_arena *tmp, const char *src, size_t n)
{
    tpl_comp *c = tpl_arena_alloc(tmp, sizeof *c);
    if (!c) return NULL;
    memset(c, 0, sizeof *c);
    c->p = p;
    c->tmp = tmp;
    c->src = src;
    c->srclen = n;
    tpl_sb_init(&c->pending, tmp);
    c->cur_src = c->chain_src[0] = -1;
    c->fn = &c->root;
    c->root.rec_self = c->root.rec_depth = c->root.rec_loop = -1;
    c->syn = p->opts.syntax == TPL_SYNTAX_ERB ? TPL_SYN_ERB : p->opts.syntax == TPL_SYNTAX_FMT ? TPL_SYN_FMT : TPL_SYN_JINJA;
    c->autoescape = c->syn == TPL_SYN_JINJA && p->opts.autoescape; /* Environment(autoescape=True) */
    if (c->syn == TPL_SYN_JINJA && p->opts.finalize) /* checked against host_funcs before the first output */
        c->finalize = tpl_v_str(p->opts.finalize, strlen(p->opts.finalize));
    /* sized from the source (templates run at about a code word per 8 bytes and a span per 32),
     * so a typical template grows neither array; a failure here just leaves them to grow() */
    size_t ncode = n / 8 < 0x100000 ? 64 + n / 8 : 0x100000;
    cgrow(c, (void **)&c->code, &c->cap, ncode, sizeof *c->code);
    c->ls = line_starts(src, n, &c->nls, p->source_ascii && src == p->source && n == p->source_len);
    c->readw.reads = true;
    c->spanw.budget = c->readw.budget = p->budget;
    push_scope(c, true);
    return c;
}

/* Jinja2's placement rules for extends (CodeGenerator.visit_Extends), over one template of the
 * chain: an extends inside a for, with, macro, block, call, filter or set block or an autoescape
 * block is its compile error; one inside an if after the template's first top-level extends (*known)
 * raises "extended multiple times" when it runs (op bit 1); one inside an if before it would pick
 * the parent at render time, which tpl does not do (a located compile error). */
static void check_extends(tpl_comp *c, tpl_node *n, bool toplevel, bool *known, int depth)
{
    if (depth > TPL_MAX_AST_DEPTH) return;
    for (; n && !c->failed; n = n->next) {
        switch (n->kind) {
        case TPL_N_EXTENDS:
            if (!toplevel) { cfail(c, TPL_EK_ASSERTION, n->off, "cannot use extend from a non top-level scope"); return; }
            if (!*known && c->ext_dyn_ok &&
                (depth > 0 || c->ext_dyn || n->a->kind != TPL_N_CONST || n->a->val.type != TPL_T_STR)) {
                /* the parent is picked when it runs (a constant name at the top level after one
                 * of these too: the template then is compiled on its own) */
                if (!c->ext_dyn) c->ext_dyn_off = n->off;
                c->ext_dyn = true;
                n->op |= 4;
                if (depth == 0) *known = true;
                break;
            }
            if (depth == 0 && !*known) { *known = true; break; }
            if (!*known) {
                cerror(c, n->off, "extends inside if is not supported in a template that another extends (tpl resolves the parent template at compile time there)");
                return;
            }
            n->op |= 1;
            break;
        case TPL_N_IF:
            check_extends(c, n->b, toplevel, known, depth + 1);
            check_extends(c, n->c, toplevel, known, depth + 1);
            break;
        case TPL_N_AUTOESCAPE: /* (a Scope node: Jinja2's frame.inner(), not top-level) */
            check_extends(c, n->b, false, known, depth + 1);
            break;
        case TPL_N_FOR:
            check_extends(c, n->c, false, known, depth + 1);
            check_extends(c, tpl_node_d(n), false, known, depth + 1);
            break;
        case TPL_N_CALLBLOCK: check_extends(c, n->c, false, known, depth + 1); break;
        case TPL_N_SETBLOCK: case TPL_N_MACRO: case TPL_N_FILTERBLOCK: case TPL_N_WITH: case TPL_N_BLOCK:
        case TPL_N_GENERATION:
            check_extends(c, n->b, false, known, depth + 1);
            break;
        default: break;
        }
    }
}

/* The start of template i's top level in an extends chain of n templates (frame_init_at). */
static void chain_root_init(tpl_comp *c, tpl_node **chain, uint32_t n, uint32_t i)
{
    tpl_node *others[TPL_MAX_INHERIT];
    uint32_t no = 0;
    for (uint32_t t = 0; t < n; t++)
        if (t != i) others[no++] = chain[t] ? chain[t]->b : NULL; /* (NULL: tpl_facts.chain[0]) */
    frame_init_at(c, chain[i]->b, true, others, no);
}

static void compile_chain(tpl_comp *c, tpl_node **chain, uint32_t nchain, uint32_t ext_off, uint32_t from);

/* Loads the parents of the extends chain's last template (chain[*nchain - 1], whose extends
 * gave ext_off the first time), as far as the base. */
static void load_chain(tpl_comp *c, tpl_node **chain, uint32_t *pn, uint32_t *ext_off)
{
    uint32_t nchain = *pn;
    while (!c->failed) {
        tpl_node *ext = NULL, *names;
        bool known = false;
        c->cur_src = c->chain_src[nchain - 1];
        c->ext_dyn_ok = nchain == 1 && c->syn == TPL_SYN_JINJA;
        check_extends(c, chain[nchain - 1]->b, true, &known, 0);
        c->ext_dyn_ok = false;
        if (c->failed) break;
        if (nchain == 1 && c->ext_dyn) {
            /* compiled on its own, or (p->ext_parent: its EXTENDS_RUN) with the parent that
             * EXTENDS_DYN named, its blocks over the parent's */
            if (!c->p->ext_parent) break;
            *ext_off = c->ext_dyn_off;
            c->span_locked = true;
            c->span_off = *ext_off;
            tpl_value pn = tpl_v_str(c->p->ext_parent, c->p->ext_parent_len);
            tpl_node *parent = load_template(c, c->tmp, pn, *ext_off, false, &c->chain_src[nchain]);
            if (!parent) break;
            chain[nchain++] = parent;
            continue;
        }
        for (tpl_node *s = chain[nchain - 1]->b; s; s = s->next)
            if (s->kind == TPL_N_EXTENDS) { ext = s; break; }
        if (!ext) break;
        if (nchain == 1) *ext_off = ext->off;
        if (nchain >= TPL_MAX_INHERIT) { cerror(c, *ext_off, "extends chain too long"); break; }
        if (!template_names(c, ext->a, &names)) break;
        if (nchain > 1 && !c->span_locked) { c->span_locked = true; c->span_off = *ext_off; }
        c->cur_src = c->chain_src[nchain - 1];
        tpl_node *parent = load_template(c, c->tmp, names->val, *ext_off, false, &c->chain_src[nchain]);
        if (!parent) break;
        chain[nchain++] = parent;
    }
    *pn = nchain;
}

/* Jinja2's frame.toplevel blocks of a template that extends at render time (the top level and
 * inside ifs): they render in place only while no parent is set (op bit 16). */
static void mark_toplevel_blocks(tpl_node *n, int depth)
{
    if (depth > TPL_MAX_AST_DEPTH) return;
    for (; n; n = n->next) {
        if (n->kind == TPL_N_BLOCK) n->op |= 16;
        else if (n->kind == TPL_N_IF) {
            mark_toplevel_blocks(n->b, depth + 1);
            mark_toplevel_blocks(n->c, depth + 1);
        }
    }
}

/* Whether a statement after a template's top-level extends writes output Jinja2 still writes
 * then: an include, a call or filter block's result, a block that is not at the top level
 * (inside a for or with: Jinja2 renders it in place), a set block holding an include without
 * context. */
static bool ext_prints(const tpl_node *n, bool top, int depth)
{
    if (depth > TPL_MAX_AST_DEPTH) return true;
    for (; n; n = n->next) {
        switch (n->kind) {
        case TPL_N_INCLUDE: case TPL_N_CALLBLOCK: case TPL_N_FILTERBLOCK: return true;
        case TPL_N_BLOCK: if (!top) return true; break;
        case TPL_N_SETBLOCK: /* (an include without context in it writes past its buffer) */
            if (generator_include(n->b, depth + 1)) return true;
            break;
        case TPL_N_IF:
            if (ext_prints(n->b, top, depth + 1) || ext_prints(n->c, top, depth + 1)) return true;
            break;
        case TPL_N_FOR:
            if (ext_prints(n->c, false, depth + 1) || ext_prints(tpl_node_d(n), false, depth + 1)) return true;
            break;
        case TPL_N_WITH: case TPL_N_AUTOESCAPE:
            if (ext_prints(n->b, false, depth + 1)) return true;
            break;
        default: break;
        }
    }
    return false;
}

/* A statement (s->next NULL) after a child template's top-level extends, inside the capture
 * whose text is dropped: as Jinja2 compiles it once the extends is known, its output and its
 * top-level blocks are left out (not evaluated), and what Jinja2 still writes (ext_prints) is
 * written: such a statement goes between two captures. */
static void ext_after_stmt(tpl_comp *c, tpl_node *s)
{
    mark_toplevel_blocks(s, 0);
    c->ext_skip++;
    if (ext_prints(s, true, 0)) {
        emit(c, TPL_OP_END_CAPTURE, 0, 1);
        emit(c, TPL_OP_POP, 0, -1);
        stmt(c, s);
        emit(c, TPL_OP_CAPTURE, 0, 0);
    } else {
        stmt(c, s);
    }
    c->ext_skip--;
}

/* The end of a template that extends at render time: when an extends ran, the template compiled
 * with that parent renders, its context the template-level names (Jinja2's
 * `yield from parent_template.root_render_func(context)`). */
static void ext_run(tpl_comp *c)
{
    c->cur_off = c->ext_dyn_off;
    c->ext_guard = false;
    emit(c, TPL_OP_JSET, c->ext_slot, 0);
    uint32_t pos = emit_raw(c, 0);
    uint32_t skip = emit(c, TPL_OP_JUMP, 0, 0);
    patch_word(c, pos, here(c));
    push_context_map(c);
    c->cur_off = c->ext_dyn_off;
    emit(c, TPL_OP_EXTENDS_RUN, c->ext_slot, -1);
    patch_a(c, skip, here(c));
}

bool tpl_comp_template(tpl_comp *c, tpl_node *root)
{
    /* the extends chain: main template first, the base (no extends) last */
    tpl_node *chain[TPL_MAX_INHERIT];
    uint32_t nchain = 0, ext_off = 0;
    chain[nchain++] = root;
    load_chain(c, chain, &nchain, &ext_off);
    c->span_locked = false;
    for (uint32_t i = 0; i < nchain; i++) {
        c->cur_src = c->chain_src[i];
        if (i > 0) { c->span_locked = true; c->span_off = ext_off; }
        collect_blocks(c, chain[i]->b, i, BLOCKS_COLLECT);
    }
    c->span_locked = false;
    c->cur_src = -1;
    for (uint32_t i = 0; i < nchain; i++) predeclare(c, chain[i]->b);
    if (c->ext_dyn && nchain > 1) {
        /* EXTENDS_RUN's program: the template's own top level ran already */
        compile_chain(c, chain, nchain, ext_off, 1);
    } else if (nchain == 1) {
        frame_init_at(c, root->b, true, NULL, 0);
        c->main_body = root->b;
        c->closed = -1;
        if (c->ext_dyn) {
            c->ext_slot = new_slot(c);
            mark_toplevel_blocks(root->b, 0);
        }
        body(c, root->b);
        if (c->ext_dyn) ext_run(c);
    } else {
        compile_chain(c, chain, nchain, ext_off, 0);
    }
    c->cur_off = (uint32_t)c->srclen;
    if (c->p->opts.tidy) emit(c, sop(c, TPL_OP_TIDY_PY), 0, 0);
    emit(c, TPL_OP_HALT, 0, 0);
    return !c->failed;
}

/* The templates of an extends chain from chain[from] on: the children's code outside blocks
 * runs first; what comes before their extends prints, the output of the rest is discarded
 * (Jinja2); then the base template. */
static void compile_chain(tpl_comp *c, tpl_node **chain, uint32_t nchain, uint32_t ext_off, uint32_t from)
{
    for (uint32_t i = from; i + 1 < nchain && !c->failed; i++) {
        if (i > 0) { c->span_locked = true; c->span_off = ext_off; }
        c->cur_src = c->chain_src[i];
        tpl_node *s = chain[i]->b;
        if (i == 0) c->cur_off = 0; /* (the frame's UNDEF_MSGs: the template's start, as tpl_comp_facts_end) */
        chain_root_init(c, chain, nchain, i);
        for (; s && !c->failed && s->kind != TPL_N_EXTENDS; s = s->next) {
            tpl_node *next = s->next;
            s->next = NULL;
            stmt(c, s);
            s->next = next;
        }
        if (s) c->cur_off = s->off; /* (located at the extends, as tpl_comp_facts_compile) */
        emit(c, TPL_OP_CAPTURE, 0, 0);
        tpl_node *first_ext = s;
        for (; s && !c->failed; s = s->next) {
            if (s->kind == TPL_N_EXTENDS && s != first_ext) {
                /* a second top-level extends: Jinja2 raises there and compiles nothing after */
                s->op |= 1;
                stmt(c, s);
                break;
            }
            if (s->kind == TPL_N_BLOCK || s->kind == TPL_N_EXTENDS || s->kind == TPL_N_TEXT || s->kind == TPL_N_OUTPUT) continue;
            tpl_node *next = s->next;
            s->next = NULL;
            ext_after_stmt(c, s);
            s->next = next;
        }
        emit(c, TPL_OP_END_CAPTURE, 0, 1);
        emit(c, TPL_OP_POP, 0, -1);
    }
    c->span_locked = true;
    c->span_off = ext_off;
    c->cur_src = c->chain_src[nchain - 1];
    chain_root_init(c, chain, nchain, nchain - 1);
    body(c, chain[nchain - 1]->b);
    c->span_locked = false;
    c->cur_src = -1;
}

/* A streaming compile (tpl_compile_jinja, for templates tpl_jinja_streamable accepts: nothing
 * to collect or predeclare over the whole template): the template's statements one at a time,
 * as tpl_comp_template's body() would take them, each freed once compiled (issue 13 §1). */
void tpl_comp_stream_begin(tpl_comp *c)
{
    c->cur_src = -1;
    c->main_body = NULL;
    c->closed = -1;
}

void tpl_comp_stream_stmt(tpl_comp *c, tpl_node *n)
{
    n->next = NULL;
    body(c, n);
}

static void facts_chain_end(tpl_comp *c);

bool tpl_comp_stream_end(tpl_comp *c)
{
    if (c->facts && c->facts->extends && !c->failed) facts_chain_end(c);
    c->cur_off = (uint32_t)c->srclen;
    if (c->p->opts.tidy) emit(c, sop(c, TPL_OP_TIDY_PY), 0, 0);
    emit(c, TPL_OP_HALT, 0, 0);
    return !c->failed;
}

/* ---- a two-pass compile (tpl_compile_jinja, for a large template that extends nothing and
 * never says `self`): the first pass gathers the facts (tpl_facts) one statement at a time, the
 * second compiles the statements as tpl_comp_template's body() would, one at a time. */

/* name_refs over one top-level statement, every name at once. */
static void facts_refs(tpl_comp *c, tpl_facts *x, const tpl_node *n, int depth)
{
    if (depth > 200) { x->open = true; return; }
    uint32_t k;
    for (; n; n = n->next) {
        switch (n->kind) {
        case TPL_N_INCLUDE: case TPL_N_IMPORT: case TPL_N_FROMIMPORT: case TPL_N_EXTENDS: case TPL_N_BLOCK:
            x->open = true;
            break;
        case TPL_N_NAME:
            if (!x->open) {
                if (!tpl_smap_get(&x->refs, n->val.u.s, n->val.len, &k)) k = 0;
                if (!tpl_smap_put(&x->refs, n->val.u.s, n->val.len, k + 1)) x->open = true; /* (no set-then-print) */
            }
            break;
        default: break;
        }
        const tpl_node *kids[5] = { n->a, n->b, n->c, tpl_node_d(n), tpl_node_e(n) };
        for (int i = 0; i < 5; i++)
            if (kids[i]) facts_refs(c, x, kids[i], depth + 1);
    }
}

void tpl_comp_facts_begin(tpl_comp *c, bool loops, bool extends)
{
    tpl_comp_stream_begin(c);
    tpl_facts *x = tpl_arena_alloc(c->tmp, sizeof *x);
    if (!x) { c_nomem(c, 0); return; }
    memset(x, 0, sizeof *x);
    x->unseen.arena = x->stage.arena = x->refs.arena = c->tmp;
    x->f.unseen = &x->unseen;
    x->j.c = c;
    x->j.f = &x->f;
    x->j.s = c->fn->scope;
    x->j.stage = &x->stage;
    x->loops = loops;
    x->extends = extends;
    c->facts = x;
}

/* The first pass over a statement of a template that extends another: check_extends (its
 * error kept apart: it comes first) and the first top-level extends. */
static void facts_extends_stmt(tpl_comp *c, tpl_facts *x, tpl_node *n)
{
    if (x->ext_err) return;
    saved_err before;
    err_save(c, &before);
    check_extends(c, n, true, &x->ext_known, 0);
    if (c->failed) {
        saved_err *e = tpl_arena_alloc(c->tmp, sizeof *e);
        if (!e) { err_restore(c, &before); c_nomem(c, n->off); return; }
        err_save(c, e);
        x->ext_err = e;
    }
    err_restore(c, &before);
    for (const tpl_node *e = n; e && !x->ext_seen; e = e->next) {
        if (e->kind != TPL_N_EXTENDS) continue;
        x->ext_seen = true;
        x->ext_off = e->off;
        const tpl_node *name = e->a;
        if ((name->kind == TPL_N_LIST || name->kind == TPL_N_TUPLE) && name->a) {
            for (const tpl_node *y = name->a; y; y = y->next)
                if (y->kind != TPL_N_CONST || y->val.type != TPL_T_STR) { x->ext_bad_off = name->off + 1; break; }
            name = name->a;
        } else if (name->kind != TPL_N_CONST || name->val.type != TPL_T_STR) {
            x->ext_bad_off = name->off + 1;
        }
        if (!x->ext_bad_off) {
            char *k = tpl_arena_strdup(c->tmp, name->val.u.s, name->val.len);
            if (!k) { c_nomem(c, e->off); return; }
            x->ext_name = tpl_v_str(k, name->val.len);
        }
    }
}

/* n: a top-level statement (a {% trans %} is a list of them). */
void tpl_comp_facts_stmt(tpl_comp *c, tpl_node *n)
{
    tpl_facts *x = c->facts;
    if (!x) return;
    if (x->extends) facts_extends_stmt(c, x, n);
    /* collect_blocks (its error, which comes before any other, kept apart) */
    if (!x->blk_failed) {
        bool failed = c->failed, nomem = c->nomem;
        tpl_error_kind kind = c->err_kind;
        uint32_t off = c->err_off;
        char msg[sizeof c->msg];
        if (failed) memcpy(msg, c->msg, sizeof msg);
        c->failed = c->nomem = false;
        collect_blocks(c, n, 0, BLOCKS_COLLECT);
        if (c->failed) {
            x->blk_failed = true;
            x->blk_nomem = c->nomem;
            x->blk_kind = c->err_kind;
            x->blk_off = c->err_off;
            memcpy(x->blk_msg, c->msg, sizeof x->blk_msg);
        }
        c->failed = failed;
        c->nomem = nomem;
        c->err_kind = kind;
        c->err_off = off;
        if (failed) memcpy(c->msg, msg, sizeof msg);
    }
    if (c->failed || x->blk_failed) return;
    predeclare(c, n);
    /* frame_init_at(root): names this statement adds to the frame are read before it when an
     * earlier statement read them or nested a frame, referenced when one loaded them */
    frame_names *f = &x->f;
    uint32_t n0 = f->n;
    uint32_t v;
    frame_stores(f, n);
    for (uint32_t i = n0; i < f->n; i++) {
        tpl_value name = f->name[i];
        if (f->rest || (x->unseen.n && tpl_smap_get(&x->unseen, name.u.s, name.len, &v))) f->need |= (uint64_t)1 << i;
        if (x->stage.n && tpl_smap_get(&x->stage, name.u.s, name.len, &v)) x->j.ref |= (uint64_t)1 << i;
    }
    f->all = f->n >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << f->n) - 1;
    js_stmts(&x->j, n, 0);
    if (!f->overflow) x->assigned = frame_flow(f, n, x->assigned);
    if (x->loops) facts_refs(c, x, n, 0);
}

bool tpl_comp_facts_end(tpl_comp *c)
{
    tpl_facts *x = c->facts;
    if (!x) return false;
    /* the first pass's trees are freed: each block is bound again where its statement is parsed
     * again, or parsed again where it is compiled (compile_block) */
    for (size_t i = 0; i < c->nbdefs; i++) c->bdefs[i].def = NULL;
    uint32_t ext_off = 0;
    if (x->extends) {
        /* tpl_comp_template's order: check_extends, the chain loaded, collect_blocks, the rest */
        if (x->ext_err) { err_restore(c, x->ext_err); return false; }
        saved_err rest;
        err_save(c, &rest);
        x->chain[0] = NULL;
        x->nchain = 1;
        if (x->ext_seen) {
            ext_off = x->ext_off;
            if (x->ext_bad_off) {
                cerror(c, x->ext_bad_off - 1, "template names must be string constants (tpl resolves templates at compile time)");
            } else {
                c->cur_src = -1;
                tpl_node *parent = load_template(c, c->tmp, x->ext_name, ext_off, false, &c->chain_src[1]);
                if (parent) {
                    x->chain[x->nchain++] = parent;
                    load_chain(c, x->chain, &x->nchain, &ext_off);
                }
            }
        }
        c->span_locked = false;
        c->cur_src = -1;
        if (c->failed) return false;
        err_restore(c, &rest);
    }
    if (x->blk_failed) {
        c->failed = true;
        c->nomem = x->blk_nomem;
        c->err_kind = x->blk_kind;
        c->err_off = x->blk_off;
        memcpy(c->msg, x->blk_msg, sizeof c->msg);
        return false;
    }
    if (x->nchain > 1) {
        saved_err rest;
        err_save(c, &rest);
        for (uint32_t i = 1; i < x->nchain; i++) {
            c->cur_src = c->chain_src[i];
            c->span_locked = true;
            c->span_off = ext_off;
            collect_blocks(c, x->chain[i]->b, i, BLOCKS_COLLECT);
        }
        c->span_locked = false;
        c->cur_src = -1;
        if (c->failed) return false;
        err_restore(c, &rest);
        if (c->failed) return false;
        for (uint32_t i = 1; i < x->nchain; i++) predeclare(c, x->chain[i]->b);
        x->ext_off = ext_off;
    }
    if (c->failed) return false;
    /* the names read while not the frame's are the template's loads (js_load) */
    scope *s = c->fn->scope;
    s->loads.arena = c->tmp;
    for (uint32_t i = 0; i < x->stage.cap; i++) {
        const tpl_smap_ent *e = &x->stage.e[i];
        if (e->s && frame_index(&x->f, tpl_v_str(e->s, e->len)) < 0 && !tpl_smap_put(&s->loads, e->s, e->len, 1)) {
            c_nomem(c, c->cur_off);
            return false;
        }
    }
    frame_names *f = &x->f;
    if (x->j.gave_up) x->j.undef = 0;
    if (f->n) {
        if (f->overflow) f->need = f->all;
        tpl_node *others[TPL_MAX_INHERIT];
        uint32_t no = 0;
        for (uint32_t i = 1; i < x->nchain; i++) others[no++] = x->chain[i]->b;
        if (x->nchain > 1) c->cur_off = 0; /* (located at the template's start, as compile_chain) */
        frame_enter(c, f, x->j.undef, true, others, no);
    }
    c->closed = x->nchain > 1 ? 0 : -1; /* (set_then_print: a chain's templates see each other's names) */
    return !c->failed;
}

void tpl_comp_facts_compile(tpl_comp *c, tpl_node *n)
{
    tpl_facts *x = c->facts;
    if (c->nblocks) collect_blocks(c, n, 0, BLOCKS_BIND);
    if (x && x->nchain > 1) {
        /* tpl_comp_template's first template of the chain (compile_chain), a statement at a time */
        check_extends(c, n, true, &x->ext_known2, 0); /* (the op bits of this tree) */
        for (tpl_node *s = n; s && !c->failed && !x->main_done;) {
            tpl_node *next = s->next;
            s->next = NULL;
            if (!x->capturing) {
                if (s->kind == TPL_N_EXTENDS) {
                    c->cur_off = s->off; /* (located at the extends, as compile_chain) */
                    emit(c, TPL_OP_CAPTURE, 0, 0);
                    x->capturing = true;
                } else {
                    stmt(c, s);
                }
            } else if (s->kind == TPL_N_EXTENDS) {
                /* a second top-level extends: Jinja2 raises there and compiles nothing after */
                s->op |= 1;
                stmt(c, s);
                x->main_done = true;
            } else if (s->kind != TPL_N_BLOCK && s->kind != TPL_N_TEXT && s->kind != TPL_N_OUTPUT) {
                ext_after_stmt(c, s);
            }
            s->next = next;
            s = next;
        }
    } else {
        body(c, n);
    }
    if (c->nblocks) collect_blocks(c, n, 0, BLOCKS_UNBIND); /* (its tree is freed next) */
}

/* The end of a two-pass compile of a template that extends another: the rest of the chain. */
static void facts_chain_end(tpl_comp *c)
{
    tpl_facts *x = c->facts;
    if (x->nchain < 2) return;
    emit(c, TPL_OP_END_CAPTURE, 0, 1);
    emit(c, TPL_OP_POP, 0, -1);
    compile_chain(c, x->chain, x->nchain, x->ext_off, 1);
}

void tpl_comp_set_restream(tpl_comp *c, int (*fn)(void *data, uint32_t off, size_t min,
                                                  void (*each)(void *arg, tpl_node *n), void *arg))
{
    c->restream = fn;
}

void tpl_comp_set_reparse(tpl_comp *c, tpl_node *(*fn)(void *data, uint32_t off, tpl_arena *a), void *data,
                          tpl_arena *spare)
{
    c->reparse = fn;
    c->reparse_data = data;
    c->reparse_spare = spare;
}

/* The read locations (tpl_program_reads_located): each recorded read's file (0: the template
 * itself, k: the k-th template loaded) and line and column in that file. A cursor per file
 * resumes from the last offset asked for (reads come mostly in source order). */
static bool finish_reads(tpl_comp *c)
{
    tpl_program *p = c->p;
    tpl_arena *a = &p->arena;
    p->nfiles = 1 + c->nsources;
    p->files = tpl_arena_alloc(a, p->nfiles * sizeof *p->files);
    if (!p->files) return false;
    p->files[0] = tpl_v_str(p->name ? p->name : "", p->name ? strlen(p->name) : 0);
    for (size_t i = 0; i < c->nsources; i++) {
        char *s = tpl_arena_strdup(a, c->sources[i].name.u.s, c->sources[i].name.len);
        if (!s) return false;
        p->files[i + 1] = tpl_v_str(s, c->sources[i].name.len);
    }
    if (c->nsources) { /* their sources: the lines under a diagnostic located in one */
        p->file_srcs = tpl_arena_alloc(a, p->nfiles * sizeof *p->file_srcs);
        if (!p->file_srcs) return false;
        p->file_srcs[0] = tpl_v_str("", 0);
        for (size_t i = 0; i < c->nsources; i++) {
            char *s = tpl_arena_strdup(a, c->sources[i].src, c->sources[i].n);
            if (!s) return false;
            p->file_srcs[i + 1] = tpl_v_str(s, c->sources[i].n);
        }
    }
    return tpl_locw_finish(&c->readw, p);
}

bool tpl_comp_finish(tpl_comp *c)
{
    if (!c->failed) {
        tpl_peephole(c->code, c->n); /* (jump threading too) */
    }
    tpl_program *p = c->p;
    if (c->failed) goto done;
    if (!tpl_locw_finish(&c->spanw, p)) { c_nomem(c, 0); goto done; }
    if (!finish_reads(c)) { c_nomem(c, 0); goto done; }
    tpl_arena *a = &p->arena;
    /* the code goes to the program as it is (shrunk to its size, not copied: issue 13 §1) */
    if (c->p->budget) c->p->budget->used -= c->cap * sizeof *c->code;
    p->code = c->n ? realloc(c->code, c->n * sizeof *c->code) : NULL;
    if (!p->code) p->code = c->code; /* (shrinking failed: keep the larger block) */
    p->code_heap = true;
    c->code = NULL;
    c->cap = 0;
    if (!c->n) { free(p->code); p->code = tpl_arena_alloc(a, sizeof *p->code); p->code_heap = false; }
    if (!p->code) { c_nomem(c, 0); goto done; }
    /* each array moves into the program and is freed at once, so the compile never holds two
     * copies of more than one of them */
#define TPL_MOVE(dst, src, cnt, cap)                                                   \
    do {                                                                               \
        dst = tpl_arena_alloc(a, (cnt) * sizeof *(dst) + 1);                           \
        if (!(dst)) { c_nomem(c, 0); goto done; }                      \
        if (cnt) memcpy(dst, src, (cnt) * sizeof *(dst));                              \
        cfree(c, (void **)&(src), &(cap), sizeof *(dst));                              \
    } while (0)
    TPL_MOVE(p->consts, c->consts, c->nconsts, c->kcap);
    TPL_MOVE(p->names, c->names, c->nnames, c->ncap);
    TPL_MOVE(p->macros, c->macros, c->nmacros, c->mcap);
#undef TPL_MOVE
    { /* its template-level names (a template loaded by a computed import: what it exports;
       * tpl_render_lookup: what a callback reads) */
        scope *rs = c->root.scope;
        while (rs && !rs->func_boundary) rs = rs->parent;
        uint32_t nv = rs ? rs->nvars : 0;
        p->exports = tpl_arena_alloc(a, nv * sizeof *p->exports + 1);
        p->export_slots = tpl_arena_alloc(a, nv * sizeof *p->export_slots + 1);
        if (!p->exports || !p->export_slots) { c_nomem(c, 0); goto done; }
        uint32_t ne = 0;
        for (uint32_t i = 0; i < nv; i++) {
            if (rs->vars[i].noexport) continue; /* (an import's name) */
            char *s = tpl_arena_strdup(a, rs->vars[i].name.u.s, rs->vars[i].name.len);
            if (!s) { c_nomem(c, 0); goto done; }
            p->exports[ne] = tpl_v_str(s, rs->vars[i].name.len);
            p->export_slots[ne++] = rs->vars[i].slot;
        }
        p->nexports = ne;
    }
    p->ncode = c->n;
    p->nconsts = c->nconsts;
    p->nnames = c->nnames;
    tpl_program_sign_names(p);
    p->nmacros = c->nmacros;
    if (c->ntrcalls) {
        p->trcalls = tpl_arena_alloc(a, c->ntrcalls * sizeof *p->trcalls);
        if (!p->trcalls) { c_nomem(c, 0); goto done; }
        memcpy(p->trcalls, c->trcalls, c->ntrcalls * sizeof *p->trcalls);
        p->ntrcalls = c->ntrcalls;
    }
    p->nslots = c->root.nslots;
    p->max_stack = (uint32_t)c->root.max_depth + 4;
    tpl_program_closure_needs(p);
done:
    for (size_t i = 0; i < c->nsources; i++) free(c->sources[i].src);
    free(c->sources);
    free(c->blocks);
    free(c->bdefs);
    c->sources = NULL;
    c->blocks = NULL;
    c->bdefs = NULL;
    cfree(c, (void **)&c->code, &c->cap, sizeof *c->code);
    cfree(c, (void **)&c->consts, &c->kcap, sizeof *c->consts);
    cfree(c, (void **)&c->names, &c->ncap, sizeof *c->names);
    tpl_locw_free(&c->spanw);
    tpl_locw_free(&c->readw);
    free(c->ls);
    free(c->rcur);
    c->ls = NULL;
    c->rcur = NULL;
    for (size_t i = 0; i < c->nfls; i++) free(c->fls[i].ls);
    free(c->fls);
    c->fls = NULL;
    c->nfls = 0;
    cfree(c, (void **)&c->macros, &c->mcap, sizeof *c->macros);
    free(c->trcalls);
    c->trcalls = NULL;
    free(c->chain_ends);
    c->chain_ends = NULL;
    for (size_t i = 0; i < c->nmods; i++) free(c->mods[i].frames);
    free(c->mods);
    c->mods = NULL;
    c->nmods = 0;
    c->code = NULL;
    c->consts = NULL;
    c->names = NULL;
    c->macros = NULL;
    return !c->failed;
}

bool tpl_comp_error(const tpl_comp *c, uint32_t *off, const char **msg, tpl_error_kind *kind)
{
    if (!c->failed) return false;
    *off = c->err_off;
    *msg = c->msg;
    *kind = c->nomem ? TPL_EK_NOMEM : c->err_kind;
    return true;
}

/* ------------------------------------------------------------------ interface for other lowerings */

uint32_t tpl_c_emit(tpl_comp *c, int op, uint32_t a, int delta) { return emit(c, sop(c, op), a, delta); }
uint32_t tpl_c_word(tpl_comp *c, uint32_t w) { return emit_raw(c, w); }
uint32_t tpl_c_here(tpl_comp *c) { return here(c); }
void tpl_c_patch(tpl_comp *c, uint32_t pc, uint32_t target) { patch_a(c, pc, target); }
void tpl_c_patch_word(tpl_comp *c, uint32_t pos, uint32_t target) { patch_word(c, pos, target); }
uint32_t tpl_c_const(tpl_comp *c, tpl_value v) { return add_const(c, v); }
uint32_t tpl_c_name(tpl_comp *c, tpl_value s) { return add_name(c, s); }
uint32_t tpl_c_name_sym(tpl_comp *c, tpl_value s) { return add_name_flags(c, s, s.flags & TPL_F_SYMBOL); }
void tpl_c_expr(tpl_comp *c, tpl_node *n) { expr(c, n); }
void tpl_c_body(tpl_comp *c, tpl_node *n) { body(c, n); }
void tpl_c_text(tpl_comp *c, const char *s, size_t n) { emit_text(c, s, n); }
uint32_t tpl_c_declare(tpl_comp *c, tpl_value name) { return declare(c, name); }
uint32_t tpl_c_slot(tpl_comp *c) { return new_slot(c); }
uint32_t tpl_c_nslots(const tpl_comp *c) { return c->fn->nslots; }
void tpl_c_push_scope(tpl_comp *c) { push_scope(c, false); }
void tpl_c_pop_scope(tpl_comp *c) { pop_scope(c); }
void tpl_c_store(tpl_comp *c, tpl_node *target) { store_target(c, target); }
void tpl_c_load(tpl_comp *c, tpl_value name) { load_name(c, name); }
int tpl_c_syntax(const tpl_comp *c) { return c->syn; }
void tpl_c_at(tpl_comp *c, uint32_t off) { c->cur_off = off; }
tpl_arena *tpl_c_arena(tpl_comp *c) { return c->tmp; }
const tpl_options *tpl_c_options(const tpl_comp *c) { return &c->p->opts; }
const char *tpl_c_template_name(const tpl_comp *c) { return c->p->name ? c->p->name : ""; }
bool tpl_c_failed(const tpl_comp *c) { return c->failed; }
void tpl_c_note_tr(tpl_comp *c, uint32_t off, const tpl_node *text) { note_tr(c, off, text); }
void tpl_c_nomem(tpl_comp *c, uint32_t off) { c_nomem(c, off); }

void tpl_c_error(tpl_comp *c, uint32_t off, const char *fmt, ...)
{
    if (c->failed) return;
    va_list ap;
    va_start(ap, fmt);
    char buf[256];
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    cerror(c, off, "%s", buf);
}

void tpl_c_fail(tpl_comp *c, tpl_error_kind kind, uint32_t off, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vcerror(c, kind, off, fmt, ap);
    va_end(ap);
}

bool tpl_c_lookup(tpl_comp *c, tpl_value name, uint32_t *slot) { return resolve(c, name, slot) == R_LOCAL; }
void **tpl_c_ext(tpl_comp *c) { return &c->ext; }

bool tpl_c_lookup_root(tpl_comp *c, tpl_value name, uint32_t *slot)
{
    bool cr = false;
    scope_var *v = find_in_func(&c->root, name, &cr);
    if (v) *slot = v->slot;
    return v != NULL;
}

uint32_t tpl_c_declare_root(tpl_comp *c, tpl_value name)
{
    scope *s = c->root.scope, *inner = s;
    while (s && !s->func_boundary) s = s->parent;
    if (!s) { cerror(c, c->cur_off, "no template scope"); return 0; }
    func *save = c->fn;
    c->fn = &c->root;
    c->root.scope = s;
    uint32_t sl = declare(c, name);
    c->root.scope = inner;
    c->fn = save;
    return sl;
}

struct tpl_c_func {
    func f;
    uint32_t skip;
};

tpl_c_func *tpl_c_func_begin(tpl_comp *c)
{
    tpl_c_func *h = tpl_arena_alloc(c->tmp, sizeof *h);
    if (!h) { c_nomem(c, c->cur_off); return NULL; }
    h->skip = emit(c, TPL_OP_JUMP, 0, 0);
    func_begin(c, &h->f);
    return h;
}

void tpl_c_func_end(tpl_comp *c, tpl_c_func *h, tpl_value name, const tpl_value *params, uint32_t nparams, uint32_t entry,
                    uint32_t off, int kwargs_slot)
{
    tpl_list *pl = param_list(c, nparams ? nparams : 1);
    for (uint32_t i = 0; i < nparams; i++) param_push(c, pl, params[i]);
    tpl_macro_desc d = { 0 };
    d.entry = entry;
    d.nparams = (uint16_t)nparams;
    d.varargs_slot = d.caller_slot = -1;
    d.kwargs_slot = (int16_t)kwargs_slot;
    func_end(c, &h->f, &d, name, pl, h->skip, off);
}
tpl_arena *tpl_c_program_arena(tpl_comp *c) { return &c->p->arena; }
