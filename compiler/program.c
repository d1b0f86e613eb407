/* Programs: compilation entry point, opcode info table, spans, disassembly, diagnostics. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <xxhash.h>
#include "../runtime/program.h"
#include "compile.h"
#include "../grammar/parse_ctx.h"
#include "../grammar/erb.h"
#include "../runtime/vm.h"
#include "../runtime/error.h"
#include "../stdlib/builtins.h"


/* XXH64 (seed 0, xxHash's canonical value) of the source, as tpl_program_source_hash documents:
 * the xxHash library's, which reads eight bytes per step in four independent lanes. */
uint64_t tpl_source_hash(const char *src, size_t n)
{
    return (uint64_t)XXH64(src, n, 0);
}

static char *dupstr(const char *s)
{
    size_t n = strlen(s);
    char *d = malloc(n + 1);
    if (d) memcpy(d, s, n + 1);
    return d;
}

/* Sets p's bound language (tpl_options.lang) to a copy in p's arena: NULL or "" is none. False
 * when it is not UTF-8 or out of memory (then p->opts.lang is NULL). */
bool tpl_program_bind_lang(tpl_program *p, const char *lang)
{
    p->opts.lang = NULL;
    if (!lang || !*lang) return true;
    size_t n = strlen(lang), bad;
    if (!tpl_utf8_valid(lang, n, &bad)) return false;
    char *c = tpl_arena_alloc(&p->arena, n + 1);
    if (!c) return false;
    memcpy(c, lang, n + 1);
    p->opts.lang = c;
    return true;
}


tpl_status tpl_options_profile(tpl_options *o, tpl_syntax syntax, const char *profile)
{
    if (!o) return TPL_ERR_USAGE;
    tpl_options base = { 0 };
    base.syntax = syntax;
    if (!profile || strcmp(profile, "jinja2") == 0) {
        if (syntax != TPL_SYNTAX_JINJA && profile) return TPL_ERR_USAGE;
    } else if (strcmp(profile, "pinecall") == 0) {
        base.tidy = true;
        if (syntax == TPL_SYNTAX_JINJA) {
            base.trim_blocks = base.lstrip_blocks = base.keep_trailing_newline = true;
            base.strict = true;
        }
    } else if (strcmp(profile, "hf") == 0) {
        if (syntax != TPL_SYNTAX_JINJA) return TPL_ERR_USAGE;
        base.trim_blocks = base.lstrip_blocks = true;
        base.hf = true;
    } else {
        return TPL_ERR_USAGE;
    }
    base.loader = o->loader;
    base.loader_data = o->loader_data;
    base.max_compile_memory = o->max_compile_memory;
    *o = base;
    return TPL_OK;
}

static tpl_status tpl_compile_fmt(const char *name, const char *src, size_t len, const tpl_options *o,
                                  tpl_budget *budget, tpl_program **out, tpl_error *err);

struct ext_parent { const char *name; size_t len; };
static tpl_status compile_impl(const char *name, const char *src, size_t len, const tpl_options *opts,
                               tpl_program **out, tpl_error *err, bool exports, const struct ext_parent *ep);

tpl_status tpl_compile(const char *name, const char *src, size_t len, const tpl_options *opts, tpl_program **out,
                       tpl_error *err)
{
    return compile_impl(name, src, len, opts, out, err, false, NULL);
}

/* tpl_compile for a template a render loads (issue 14): its template-level names are recorded
 * for a computed import (tpl_program.exports); ext_parent (not NULL): a template's EXTENDS_RUN
 * program, compiled with that parent. */
static tpl_status compile_loaded(const char *name, const char *src, size_t len, const tpl_options *opts,
                                 const char *ext_parent, size_t ext_parent_len, tpl_program **out, tpl_error *err)
{
    struct ext_parent ep = { ext_parent, ext_parent_len };
    return compile_impl(name, src, len, opts, out, err, true, ext_parent ? &ep : NULL);
}

static tpl_status compile_impl(const char *name, const char *src, size_t len, const tpl_options *opts,
                               tpl_program **out, tpl_error *err, bool exports, const struct ext_parent *ep)
{
    if (!out) return tpl_error_usage(err, name, "tpl_compile: out is NULL");
    *out = NULL;
    if (!src) return tpl_error_usage(err, name, "tpl_compile: src is NULL");
    tpl_options o = { 0 };
    if (opts) o = *opts;
    size_t bad;
    bool ascii;
    if (!tpl_utf8_check(src, len, &bad, &ascii)) { /* as Python reading the template: UnicodeDecodeError */
        char msg[64];
        snprintf(msg, sizeof msg, "invalid UTF-8 (byte 0x%02X)", (unsigned char)src[bad]);
        tpl_error_set_at(err, TPL_EK_SYNTAX, name, src, len, (uint32_t)bad, msg);
        return TPL_ERR_SYNTAX;
    }
    tpl_budget budget = { 0, (size_t)(o.max_compile_memory ? o.max_compile_memory : TPL_DEFAULT_COMPILE_MEMORY), false };
    if (o.syntax == TPL_SYNTAX_FMT) return tpl_compile_fmt(name, src, len, &o, &budget, out, err);
    if (o.syntax != TPL_SYNTAX_JINJA && o.syntax != TPL_SYNTAX_ERB) {
        tpl_error_set_at(err, TPL_EK_USAGE, name, NULL, 0, 0, "unknown syntax");
        return TPL_ERR_USAGE;
    }
    tpl_program *p = calloc(1, sizeof *p);
    if (!p) return tpl_error_nomem(err, name ? name : "<template>");
    tpl_arena_init(&p->arena, 0);
    p->budget = p->arena.budget = &budget;
    p->opts = o;
    p->want_exports = exports;
    if (ep) {
        p->ext_parent = ep->name;
        p->ext_parent_len = ep->len;
    }
    if (!tpl_program_bind_lang(p, o.lang)) {
        tpl_error_set_at(err, TPL_EK_USAGE, name, NULL, 0, 0, "the bound language is not UTF-8");
        tpl_program_free(p);
        return TPL_ERR_USAGE;
    }
    p->name = dupstr(name ? name : "<template>");
    if (o.syntax == TPL_SYNTAX_ERB) {
        /* ERB keeps the source as it is (CRLF included, as Ruby does) */
        p->source = malloc(len + 1);
        if (p->source) { memcpy(p->source, src, len); p->source[len] = 0; p->source_len = len; }
    } else {
        p->source = tpl_jinja_normalize(src, len, o.keep_trailing_newline, &p->source_len);
    }
    if (!p->name || !p->source) { tpl_program_free(p); return tpl_error_nomem(err, name ? name : "<template>"); }
    p->source_hash = tpl_source_hash(src, len);
    p->source_ascii = ascii; /* (normalising keeps it so) */

    tpl_status st = o.syntax == TPL_SYNTAX_ERB ? tpl_compile_erb(p, p->source, p->source_len, err)
                                               : tpl_compile_jinja(p, p->source, p->source_len, err);
    p->budget = p->arena.budget = NULL; /* the program outlives the compile */
    p->ext_parent = NULL;
    p->ext_parent_len = 0;
    if (st != TPL_OK) { tpl_program_free(p); return st; }
    p->opts.host_funcs = NULL;   /* borrowed for compilation only */
    p->opts.nhost_funcs = 0;
    if (p->opts.finalize && o.syntax == TPL_SYNTAX_JINJA) {
        /* kept for the templates it loads at render time (Jinja2's finalize is the Environment's) */
        p->finalize = tpl_arena_strdup(&p->arena, p->opts.finalize, strlen(p->opts.finalize));
        if (!p->finalize) { tpl_program_free(p); return tpl_error_nomem(err, name ? name : "<template>"); }
    }
    p->opts.finalize = NULL;
    *out = p;
    return TPL_OK;
}

/* A located compile error of `kind` (TPL_EK_SYNTAX, TPL_EK_NOMEM) with msg, or
 * TPL_EK_COMPILE_MEMORY_LIMIT when the compile ran past its memory limit (whatever failed then,
 * out of memory, reports the limit). */
static tpl_status compile_error(tpl_program *p, tpl_error *err, const char *src, size_t n, uint32_t off,
                                tpl_error_kind kind, const char *msg)
{
    if (p->budget && p->budget->over) {
        char m[96];
        snprintf(m, sizeof m, tpl_error_kind_format(TPL_EK_COMPILE_MEMORY_LIMIT), (unsigned long long)p->budget->limit);
        return tpl_error_set_at(err, TPL_EK_COMPILE_MEMORY_LIMIT, p->name, src, n, off, m);
    }
    return tpl_error_set_at(err, kind, p->name, src, n, off, msg);
}

/* The common tail of the parsing front ends: reports a parse error, or lowers the AST with
 * `lower` into p (code and tables moved into the program) and reports the first compile error. */
static tpl_status lower_ast(tpl_program *p, tpl_pctx *pc, bool parsed, bool (*lower)(tpl_comp *, tpl_node *),
                            tpl_error *err)
{
    if (!parsed)
        return compile_error(p, err, pc->src, pc->n, pc->err_off, tpl_pctx_kind(pc),
                             pc->failed ? pc->msg : "syntax error");
    tpl_comp *c = tpl_comp_new(p, pc->arena, pc->src, pc->n);
    if (!c) return compile_error(p, err, pc->src, pc->n, 0, TPL_EK_NOMEM, tpl_error_kind_format(TPL_EK_NOMEM));
    lower(c, pc->root);
    tpl_comp_finish(c);
    uint32_t off;
    const char *msg;
    tpl_error_kind kind;
    if (tpl_comp_error(c, &off, &msg, &kind)) return compile_error(p, err, pc->src, pc->n, off, kind, msg);
    return TPL_OK;
}

/* A parse context over src[0..n) with scratch arena tmp under p's compile budget. */
static void pctx_init(tpl_pctx *pc, tpl_arena *tmp, tpl_program *p, const char *src, size_t n)
{
    tpl_arena_init(tmp, 0);
    tmp->budget = p->budget;
    memset(pc, 0, sizeof *pc);
    pc->arena = tmp;
    pc->src = src;
    pc->n = n;
    pc->no_loop_controls = !p->opts.hf && !p->opts.loop_controls;
    pc->no_generation = !p->opts.hf;
    pc->no_do = !p->opts.do_statement;
}

static void pctx_init_arena(tpl_pctx *pc, tpl_arena *a, const char *src, size_t n)
{
    memset(pc, 0, sizeof *pc);
    pc->arena = a;
    pc->src = src;
    pc->n = n;
}

/* After a statement's tree: its arena emptied for the next one. A large one is given back to
 * the system (glibc keeps freed chunks past its raised mmap threshold: the trees of a few large
 * statements were resident side by side, issue 13 §1). */
static void stmt_arena_done(tpl_arena *a)
{
    if (a->total < ((size_t)1 << 20)) { tpl_arena_reset(a); return; }
    tpl_arena_free(a);
#ifdef __GLIBC__
    malloc_trim(0);
#endif
}

/* A streaming compile's state: the compiler, and the first depth error (a statement nested too
 * deeply: reported only when the parse succeeds, as tpl_jinja_parse's whole-tree check would). */
typedef struct stream_state {
    tpl_comp *c;
    tpl_pctx *pc;
    bool erb, frozen;     /* an ERB template (frozen: string literals are frozen) */
    bool deep;
    uint32_t deep_off;
    char deep_msg[320];
    bool deep_nomem;
    tpl_pctx dp;          /* the depth check's context (set up once: touched only by an error) */
    tpl_node root;        /* a TEMPLATE node: the statement at the depth it has under the root */
} stream_state;

static void stream_init(stream_state *st, tpl_pctx *pc)
{
    memset(st, 0, sizeof *st);
    st->pc = pc;
    st->dp.src = pc->src;
    st->dp.n = pc->n;
    st->root.kind = TPL_N_TEMPLATE;
}

/* tpl_pctx.top: checks and compiles one top-level statement, then frees its tree. */
static void stream_top(void *data, tpl_node *node)
{
    stream_state *st = data;
    if (!st->deep) {
        st->root.b = node;
        if (!tpl_p_depth_ok(&st->dp, st->pc->arena, &st->root)) {
            st->deep = true;
            st->deep_off = st->dp.err_off;
            st->deep_nomem = st->dp.nomem;
            memcpy(st->deep_msg, st->dp.msg, sizeof st->deep_msg);
        } else if (!tpl_c_failed(st->c)) {
            if (st->erb && st->pc->erb_last_comment) tpl_erb_last_value(st->c, node, st->pc->erb_last_comment - 1);
            if (st->erb) tpl_erb_lower_stmt(st->c, node, st->frozen);
            else tpl_comp_stream_stmt(st->c, node);
        }
    }
    stmt_arena_done(st->pc->arena);
}

/* The end of a streaming compile whose parse returned `parsed`: errors in the order the
 * whole-tree compile gives them: a parse error anywhere, else the first statement nested too
 * deeply, else the first compile error. */
static tpl_status stream_finish(tpl_program *p, stream_state *st, bool parsed, tpl_error *err)
{
    tpl_pctx *pc = st->pc;
    tpl_status rc = TPL_OK;
    if (!parsed) {
        rc = compile_error(p, err, pc->src, pc->n, pc->err_off, tpl_pctx_kind(pc),
                           pc->failed ? pc->msg : "syntax error");
        tpl_comp_finish(st->c);
    } else if (st->deep) {
        rc = compile_error(p, err, pc->src, pc->n, st->deep_off, st->deep_nomem ? TPL_EK_NOMEM : TPL_EK_SYNTAX,
                           st->deep_msg);
        tpl_comp_finish(st->c);
    } else {
        if (st->erb) tpl_erb_lower_end(st->c);
        else tpl_comp_stream_end(st->c);
        tpl_comp_finish(st->c);
        uint32_t off;
        const char *msg;
        tpl_error_kind kind;
        if (tpl_comp_error(st->c, &off, &msg, &kind)) rc = compile_error(p, err, pc->src, pc->n, off, kind, msg);
    }
    return rc;
}

/* tpl_pctx.top of a two-pass compile's first pass: checks one top-level statement and gathers
 * its facts, then frees its tree. */
static void facts_top(void *data, tpl_node *node)
{
    stream_state *st = data;
    if (!st->deep) {
        st->root.b = node;
        if (!tpl_p_depth_ok(&st->dp, st->pc->arena, &st->root)) {
            st->deep = true;
            st->deep_off = st->dp.err_off;
            st->deep_nomem = st->dp.nomem;
            memcpy(st->deep_msg, st->dp.msg, sizeof st->deep_msg);
        } else {
            tpl_comp_facts_stmt(st->c, node);
        }
    }
    stmt_arena_done(st->pc->arena);
}

/* ... and of its second pass: compiles the statement parsed again. */
static void facts_compile_top(void *data, tpl_node *node)
{
    stream_state *st = data;
    if (!tpl_c_failed(st->c)) tpl_comp_facts_compile(st->c, node);
    stmt_arena_done(st->pc->arena);
}

/* tpl_comp_set_reparse's parser: a block's tokens, from its `{%` to its endblock's `%}`,
 * parsed again as a template of that one statement (a two-pass compile's second pass frees each
 * statement's tree; self.NAME() in another statement compiles the block there). */
typedef struct reparse_state {
    tpl_program *p;
    const char *src;
    size_t n;
    const tpl_jtok_vec *toks;
} reparse_state;

static tpl_node *reparse_block(void *data, uint32_t off, tpl_arena *a)
{
    reparse_state *rs = data;
    tpl_pctx pc;
    pctx_init_arena(&pc, a, rs->src, rs->n);
    return tpl_jinja_parse_block(&pc, rs->toks, off);
}

/* tpl_comp_set_reparse's streaming parser: the body of the block at off parsed again, each
 * statement to each(arg, node) and its tree freed after it (a block compiled where the base
 * template places it holds one statement's tree, not the block's: issue 13 §1). */
typedef struct restream_state {
    void (*each)(void *arg, tpl_node *n);
    void *arg;
    tpl_arena *a;
} restream_state;

static void restream_top(void *data, tpl_node *node)
{
    restream_state *st = data;
    st->each(st->arg, node);
    stmt_arena_done(st->a);
}

static int restream_block(void *data, uint32_t off, size_t min, void (*each)(void *arg, tpl_node *n), void *arg)
{
    reparse_state *rs = data;
    tpl_arena a;
    tpl_pctx pc;
    pctx_init(&pc, &a, rs->p, rs->src, rs->n);
    restream_state st = { each, arg, &a };
    pc.top = restream_top;
    pc.top_data = &st;
    int r = tpl_jinja_parse_block_body(&pc, rs->toks, off, min);
    tpl_arena_free(&a);
    return r;
}

/* Jinja one top-level statement at a time: the tree of one statement is in memory at a time,
 * not the template's (issue 13 §1). Without two_pass (tpl_jinja_streamable templates) each
 * statement is compiled as it is parsed. With two_pass (a large template tpl_jinja_two_pass
 * accepts) a first pass gathers what compiling needs from the whole template and a second
 * compiles (the whole tree of a template of sets, macros, with or block statements was 15-35x its
 * size). Errors come as the whole-tree compile gives them: a parse error, a statement nested too
 * deeply, then compile errors. */
static tpl_status compile_jinja_stmts(tpl_program *p, const char *src, size_t n, tpl_jtok_vec *toks,
                                      bool two_pass, bool loops, bool extends, tpl_error *err)
{
    tpl_arena tmp, ctmp, spare;
    tpl_pctx pc;
    pctx_init(&pc, &tmp, p, src, n);
    tpl_arena_init(&ctmp, 0);
    ctmp.budget = p->budget;
    tpl_arena_init(&spare, 0); /* (the blocks self.NAME() parses again: tpl_comp_set_reparse) */
    spare.budget = p->budget;
    stream_state st;
    stream_init(&st, &pc);
    tpl_status rc = TPL_OK;
    st.c = tpl_comp_new(p, &ctmp, src, n);
    if (!st.c) {
        tpl_jtok_free(toks);
        rc = compile_error(p, err, src, n, 0, TPL_EK_NOMEM, tpl_error_kind_format(TPL_EK_NOMEM));
    } else {
        if (two_pass)
            tpl_comp_facts_begin(st.c, loops, extends);
        else
            tpl_comp_stream_begin(st.c);
        pc.top = two_pass ? facts_top : stream_top;
        pc.top_data = &st;
        bool ok = tpl_jinja_parse(&pc, toks);
        reparse_state rs = { p, src, n, toks };
        if (two_pass && ok && !st.deep && tpl_comp_facts_end(st.c)) {
            tpl_arena_free(&tmp);
            pctx_init(&pc, &tmp, p, src, n);
            pc.top = facts_compile_top;
            pc.top_data = &st;
            tpl_comp_set_reparse(st.c, reparse_block, &rs, &spare);
            tpl_comp_set_restream(st.c, restream_block);
            ok = tpl_jinja_parse(&pc, toks);
        }
        /* (a base template places its child's blocks at the end, parsed again from the tokens) */
        if (!extends) tpl_jtok_free(toks);
        rc = stream_finish(p, &st, ok, err);
        if (extends) tpl_jtok_free(toks);
    }
    tpl_arena_free(&tmp);
    tpl_arena_free(&ctmp);
    tpl_arena_free(&spare);
    return rc;
}

/* Templates smaller than this are compiled from their whole tree (one parse; their tree is
 * small next to the process). */
#ifndef TPL_TWO_PASS_MIN
#define TPL_TWO_PASS_MIN 65536
#endif

tpl_status tpl_compile_jinja(tpl_program *p, const char *src, size_t n, tpl_error *err)
{
    tpl_jtok_vec toks = { 0 };
    tpl_lex_opts lo = { p->opts.trim_blocks, p->opts.lstrip_blocks };
    tpl_lex_result lr = tpl_jinja_lex(src, n, &lo, &toks);
    if (!lr.ok && !lr.nomem) { /* the parser's error in the tokens before the scanner's comes first */
        tpl_arena tmp;
        tpl_pctx pc;
        pctx_init(&pc, &tmp, p, src, n);
        bool ok = tpl_jinja_parse_lex_failed(&pc, &toks, &lr);
        tpl_jtok_free(&toks);
        tpl_status st = lower_ast(p, &pc, ok, tpl_comp_template, err);
        tpl_arena_free(&tmp);
        return st;
    }
    if (!lr.ok) {
        tpl_jtok_free(&toks);
        return tpl_error_set_at(err, TPL_EK_NOMEM, p->name, src, n, lr.err_off, lr.msg);
    }
    if (n >= TPL_TWO_PASS_MIN && toks.n && toks.cap - toks.n > toks.n / 8) {
        /* the tokens are kept while the template is compiled: no doubling's slack */
        tpl_jtok *v = realloc(toks.v, toks.n * sizeof *toks.v);
        if (v) { toks.v = v; toks.cap = toks.n; }
    }
    if (tpl_jinja_streamable(&toks)) return compile_jinja_stmts(p, src, n, &toks, false, false, false, err);
    bool loops, extends;
    tpl_jinja_two_pass(&toks, &loops, &extends);
    if (n >= TPL_TWO_PASS_MIN && (!extends || tpl_jinja_extends_static(&toks)))
        return compile_jinja_stmts(p, src, n, &toks, true, loops, extends, err);
    tpl_arena tmp;
    tpl_pctx pc;
    pctx_init(&pc, &tmp, p, src, n);
    bool ok = tpl_jinja_parse(&pc, &toks);
    tpl_jtok_free(&toks);
    tpl_status st = lower_ast(p, &pc, ok, tpl_comp_template, err);
    tpl_arena_free(&tmp);
    return st;
}

/* Format strings: the source is used verbatim (str.format sees the file's exact text). */
static tpl_status tpl_compile_fmt(const char *name, const char *src, size_t len, const tpl_options *o,
                                  tpl_budget *budget, tpl_program **out, tpl_error *err)
{
    tpl_program *p = calloc(1, sizeof *p);
    if (!p) return tpl_error_nomem(err, name ? name : "<template>");
    tpl_arena_init(&p->arena, 0);
    p->budget = p->arena.budget = budget;
    p->opts = *o;
    if (!tpl_program_bind_lang(p, o->lang)) {
        tpl_error_set_at(err, TPL_EK_USAGE, name, NULL, 0, 0, "the bound language is not UTF-8");
        tpl_program_free(p);
        return TPL_ERR_USAGE;
    }
    p->name = dupstr(name ? name : "<template>");
    p->source = malloc(len + 1);
    if (!p->name || !p->source) { tpl_program_free(p); return tpl_error_nomem(err, name ? name : "<template>"); }
    memcpy(p->source, src, len);
    p->source[len] = 0;
    p->source_len = len;
    p->source_hash = tpl_source_hash(src, len);
    tpl_arena tmp;
    tpl_arena_init(&tmp, 0);
    tmp.budget = budget;
    tpl_status st = TPL_OK;
    tpl_comp *c = tpl_comp_new(p, &tmp, p->source, len);
    if (!c) {
        st = compile_error(p, err, p->source, len, 0, TPL_EK_NOMEM, tpl_error_kind_format(TPL_EK_NOMEM));
    } else {
        tpl_lower_fmt(c, p->source, len);
        tpl_comp_finish(c);
        uint32_t off;
        const char *msg;
        tpl_error_kind kind;
        /* str.format has no compile step: a format string it refuses is the ValueError it raises */
        if (tpl_comp_error(c, &off, &msg, &kind))
            st = compile_error(p, err, p->source, len, off, kind == TPL_EK_SYNTAX ? TPL_EK_FORMAT : kind, msg);
    }
    tpl_arena_free(&tmp);
    p->budget = p->arena.budget = NULL; /* the program outlives the compile */
    if (st != TPL_OK) { tpl_program_free(p); return st; }
    p->opts.host_funcs = NULL;
    p->opts.nhost_funcs = 0;
    p->opts.finalize = NULL;
    *out = p;
    return TPL_OK;
}

/* The (kind, name) of a host-call instruction at pc, or false when pc is no host call. */
static bool host_op(const tpl_program *p, size_t pc, tpl_host_kind *kind, const tpl_value **name)
{
    uint32_t op = TPL_INSN_OP(p->code[pc]);
    if (op != TPL_OP_HOST_FILTER && op != TPL_OP_HOST_CALL && op != TPL_OP_HOST_TEST) return false;
    *kind = op == TPL_OP_HOST_FILTER ? TPL_HOST_FILTER : op == TPL_OP_HOST_TEST ? TPL_HOST_TEST : TPL_HOST_GLOBAL;
    *name = &p->consts[TPL_INSN_A(p->code[pc])];
    return true;
}

size_t tpl_program_host_functions(const tpl_program *p, tpl_host_func *out, size_t cap)
{
    if (!p) return 0;
    if (!out) cap = 0;
    size_t n = 0;
    for (size_t pc = 0; pc < p->ncode; pc += 1 + tpl_opinfo_table[TPL_INSN_OP(p->code[pc])].extra) {
        tpl_host_kind kind, k2;
        const tpl_value *name, *n2;
        if (!host_op(p, pc, &kind, &name)) continue;
        bool seen = false;
        for (size_t q = 0; q < pc && !seen; q += 1 + tpl_opinfo_table[TPL_INSN_OP(p->code[q])].extra)
            seen = host_op(p, q, &k2, &n2) && k2 == kind && tpl_equal(*n2, *name);
        if (seen) continue;
        if (n < cap) out[n] = (tpl_host_func){ name->u.s, kind, NULL, NULL };
        n++;
    }
    return n;
}

size_t tpl_program_dependencies(const tpl_program *p, const char **names, size_t *lens, size_t cap)
{
    if (!p) return 0;
    size_t n = p->deps ? p->deps->len : 0;
    for (size_t i = 0; i < n && i < cap; i++) {
        if (names) names[i] = p->deps->items[i].u.s;
        if (lens) lens[i] = p->deps->items[i].len;
    }
    return n;
}

size_t tpl_program_tr_calls(const tpl_program *p, tpl_tr_call *out, size_t max)
{
    if (!p) return 0;
    if (!out) max = 0;
    for (size_t i = 0; i < p->ntrcalls && i < max; i++) {
        const tpl_trcall *t = &p->trcalls[i];
        static const char *const fns[] = { "tr", "gettext", "_", "ngettext", "pgettext", "npgettext" };
        tpl_tr_call r = { NULL, 0, 0, 0, fns[t->fn < 6 ? t->fn : 0], NULL, 0, NULL, 0 };
        if (t->k >= 0 && (size_t)t->k < p->nconsts) {
            r.text = p->consts[t->k].u.s;
            r.len = p->consts[t->k].len;
        }
        if (t->plural >= 0 && (size_t)t->plural < p->nconsts) {
            r.plural = p->consts[t->plural].u.s;
            r.plural_len = p->consts[t->plural].len;
        }
        if (t->ctx >= 0 && (size_t)t->ctx < p->nconsts) {
            r.context = p->consts[t->ctx].u.s;
            r.context_len = p->consts[t->ctx].len;
        }
        tpl_offset_to_linecol(p->source, p->source_len, t->off, &r.line, &r.column);
        out[i] = r;
    }
    return p->ntrcalls;
}

/* ERB, one top-level statement at a time (every ERB template: its lowering needs nothing from
 * the statements after one; issue 13 §1): the tokenizer feeds the parser, each statement is
 * compiled and its tree freed as soon as it is parsed; the script and its texts stay (pc.keep,
 * the compiler's arena). */
tpl_status tpl_compile_erb(tpl_program *p, const char *src, size_t n, tpl_error *err)
{
    tpl_arena tmp, ctmp;
    tpl_pctx pc;
    pctx_init(&pc, &tmp, p, src, n);
    tpl_arena_init(&ctmp, 0);
    ctmp.budget = p->budget;
    stream_state st;
    stream_init(&st, &pc);
    st.erb = true;
    st.frozen = tpl_erb_frozen(src, n) == 1;
    tpl_status rc = TPL_OK;
    st.c = tpl_comp_new(p, &ctmp, src, n);
    if (!st.c) {
        rc = compile_error(p, err, src, n, 0, TPL_EK_NOMEM, tpl_error_kind_format(TPL_EK_NOMEM));
    } else {
        pc.top = stream_top;
        pc.top_data = &st;
        pc.keep = &ctmp;
        bool ok = tpl_erb_parse(&pc);
        rc = stream_finish(p, &st, ok, err);
    }
    tpl_arena_free(&tmp);
    tpl_arena_free(&ctmp);
    return rc;
}

/* ------------------------------------------------------------------ disassembly */

static void dis_operand(tpl_sb *b, const tpl_program *p, char f, uint32_t v)
{
    switch (f) {
    case 'k':
        tpl_sb_printf(b, " k%u", v);
        if (v < p->nconsts) {
            tpl_sb_puts(b, " ");
            tpl_sb tmp;
            tpl_sb_init(&tmp, NULL);
            tpl_py_repr(&tmp, p->consts[v]);
            if (tmp.len > 40) { tpl_sb_put(b, tmp.p, 37); tpl_sb_puts(b, "..."); }
            else tpl_sb_put(b, tmp.p, tmp.len);
            tpl_sb_free(&tmp);
        }
        break;
    case 'n':
        if (v < p->nnames) tpl_sb_printf(b, " %.*s", (int)p->names[v].s.len, p->names[v].s.u.s);
        else tpl_sb_printf(b, " n%u", v);
        break;
    case 's': tpl_sb_printf(b, " s%u", v); break;
    case 'j': tpl_sb_printf(b, " ->%u", v); break;
    case 'i': tpl_sb_printf(b, " %d", (int32_t)(v << 8) >> 8); break;
    case 'c': tpl_sb_printf(b, " %u", v); break;
    case 'm': tpl_sb_printf(b, " macro%u", v); break;
    case 'b': {
        const tpl_builtin_info *bi = tpl_builtin((int)v);
        tpl_sb_printf(b, " %s", bi ? bi->name : "?");
        break;
    }
    case 'B':
        if (v) tpl_sb_printf(b, " block->%u/%u", v & 0xFFFFFFu, v >> 24);
        break;
    case 'a':
        if (TPL_ARGW_K(v) == TPL_ARGW_DYN) { tpl_sb_puts(b, " args=*,**"); break; }
        tpl_sb_printf(b, " args=%u", TPL_ARGW_NPOS(v));
        if (TPL_ARGW_NKW(v)) tpl_sb_printf(b, " kw=%u", TPL_ARGW_NKW(v));
        break;
    default: break;
    }
}

char *tpl_disassemble(const tpl_program *p)
{
    if (!p) return NULL;
    tpl_sb b;
    tpl_sb_init(&b, NULL);
    tpl_sb_printf(&b, "; %s: %zu words, %zu constants, %zu names, %u slots, %zu macros\n", p->name, p->ncode,
                  p->nconsts, p->nnames, p->nslots, p->nmacros);
    uint32_t last_line = 0, last_file = 0;
    for (size_t pc = 0; pc < p->ncode;) {
        uint32_t w = p->code[pc];
        uint32_t op = TPL_INSN_OP(w);
        if (op >= TPL_OP__COUNT) { tpl_sb_printf(&b, "%5zu  ??? %u\n", pc, op); pc++; continue; }
        const tpl_opinfo *oi = &tpl_opinfo_table[op];
        uint32_t line, col, file;
        size_t srclen;
        tpl_program_span(p, (uint32_t)pc, &line, &col, &file);
        size_t start = b.len;
        tpl_sb_printf(&b, "%5zu  %-12s", pc, oi->name);
        const char *f = oi->fmt;
        if (op == TPL_OP_LOAD_UP) /* A: the slot (as the other slot opcodes') and how many closures out */
            tpl_sb_printf(&b, " s%u up%u", TPL_INSN_A(w) & 0xFFFFu, TPL_INSN_A(w) >> 16);
        else if (f[0] && f[0] != '-') dis_operand(&b, p, f[0], TPL_INSN_A(w));
        for (int i = 0; i < oi->extra; i++) {
            uint32_t x = pc + 1 + (size_t)i < p->ncode ? p->code[pc + 1 + i] : 0;
            char fx = f[0] ? f[1 + i] : 0;
            dis_operand(&b, p, fx ? fx : 'c', x);
        }
        if (line && (line != last_line || file != last_file)) {
            size_t width = b.len - start;
            for (; width < 48; width++) tpl_sb_putc(&b, ' ');
            /* find the line text (in the template the code came from: an included one's is named) */
            const char *src, *fname = tpl_program_file(p, file, &src, &srclen);
            size_t ls = 0;
            uint32_t l = 1;
            if (!src) srclen = 0;
            for (size_t i = 0; i < srclen && l < line; i++)
                if (src[i] == '\n') { l++; ls = i + 1; }
            size_t le = ls;
            while (le < srclen && src[le] != '\n') le++;
            size_t show = le - ls > 60 ? 60 : le - ls;
            if (file) tpl_sb_printf(&b, "; %s:%u: %.*s", fname, line, (int)show, src + ls);
            else tpl_sb_printf(&b, "; %u: %.*s", line, (int)show, src + ls);
            last_line = line;
            last_file = file;
        }
        tpl_sb_putc(&b, '\n');
        pc += 1 + (size_t)oi->extra;
    }
    if (b.failed) { tpl_sb_free(&b); return NULL; }
    tpl_sb_putc(&b, 0);
    return b.p;
}


/* The render context's loader of templates named at render time (issue 14), with this layer's
 * compiler: the runtime may not call tpl_compile itself (docs/architecture.md, layers). */
void tpl_render_set_loader(tpl_render *r, tpl_loader_fn loader, void *data)
{
    tpl_render_loader_hook(r, loader, data, compile_loaded);
}
