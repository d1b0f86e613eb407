/* Programs: compilation entry point, opcode info table, spans, disassembly, diagnostics. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>
#include "../runtime/program.h"
#include "compile.h"
#include "../grammar/parse_ctx.h"
#include "../grammar/erb.h"
#include "../runtime/vm.h"
#include "../stdlib/builtins.h"

const tpl_opinfo tpl_opinfo_table[TPL_OP__COUNT] = {
#define TPL_OP(name, extra, fmt, pops, pushes, doc) { #name, extra, fmt, pops, pushes, doc },
#include "../runtime/opcodes.def"
#undef TPL_OP
};

void tpl_name_resolve_hashed(tpl_name *nm, uint64_t hash)
{
    nm->hash = hash;
    tpl_builtin_ids_for(nm->s.u.s, nm->s.len, &nm->global, nm->bk);
    nm->resolved = true;
}

void tpl_name_resolve(tpl_name *nm)
{
    tpl_name_resolve_hashed(nm, tpl_hash_str(nm->s.u.s, nm->s.len));
}

void tpl_offset_to_linecol(const char *src, size_t n, uint32_t off, uint32_t *line, uint32_t *col)
{
    if (off > n) off = (uint32_t)n;
    uint32_t l = 1;
    size_t bol = 0;
    for (size_t i = 0; i < off; i++)
        if (src[i] == '\n') { l++; bol = i + 1; }
    *line = l;
    *col = (uint32_t)tpl_utf8_len(src + bol, off - bol) + 1;
}

void tpl_program_span(const tpl_program *p, uint32_t pc, uint32_t *line, uint32_t *col)
{
    *line = *col = 0;
    size_t lo = 0, hi = p->nspans;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (p->spans[mid].pc <= pc) lo = mid + 1;
        else hi = mid;
    }
    if (lo == 0) return;
    *line = p->spans[lo - 1].line;
    *col = p->spans[lo - 1].col;
}

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

/* Copies the source line around byte offset off (malloc'd). */
static char *source_line(const char *src, size_t n, uint32_t off)
{
    if (!src) return NULL;
    if (off > n) off = (uint32_t)n;
    size_t b = off, e = off;
    while (b > 0 && src[b - 1] != '\n') b--;
    while (e < n && src[e] != '\n') e++;
    char *s = malloc(e - b + 1);
    if (!s) return NULL;
    memcpy(s, src + b, e - b);
    s[e - b] = 0;
    return s;
}

void tpl_error_clear(tpl_error *err)
{
    if (!err) return;
    free((char *)err->message);
    free((char *)err->file);
    free((char *)err->source_line);
    memset(err, 0, sizeof *err);
}

/* Fills err with a located error (strings malloc'd; released by tpl_error_clear). */
static void set_error(tpl_error *err, tpl_status st, const char *name, const char *src, size_t n, uint32_t off,
                      const char *msg)
{
    if (!err) return;
    tpl_error_clear(err);
    err->status = st;
    err->message = dupstr(msg);
    err->file = dupstr(name ? name : "<template>");
    tpl_offset_to_linecol(src, n, off, &err->line, &err->column);
    err->source_line = source_line(src, n, off);
}

/* Fills err with an unlocated TPL_ERR_USAGE error (a NULL argument) and returns the status. */
static tpl_status usage_error(tpl_error *err, const char *name, const char *msg)
{
    if (err) {
        tpl_error_clear(err);
        err->status = TPL_ERR_USAGE;
        err->message = dupstr(msg);
        err->file = dupstr(name ? name : "<template>");
    }
    return TPL_ERR_USAGE;
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

tpl_status tpl_compile(const char *name, const char *src, size_t len, const tpl_options *opts, tpl_program **out,
                       tpl_error *err)
{
    if (!out) return usage_error(err, name, "tpl_compile: out is NULL");
    *out = NULL;
    if (!src) return usage_error(err, name, "tpl_compile: src is NULL");
    tpl_options o = { 0 };
    if (opts) o = *opts;
    size_t bad;
    if (!tpl_utf8_valid(src, len, &bad)) { /* as Python reading the template: UnicodeDecodeError */
        char msg[64];
        snprintf(msg, sizeof msg, "invalid UTF-8 (byte 0x%02X)", (unsigned char)src[bad]);
        set_error(err, TPL_ERR_SYNTAX, name, src, len, (uint32_t)bad, msg);
        return TPL_ERR_SYNTAX;
    }
    tpl_budget budget = { 0, (size_t)(o.max_compile_memory ? o.max_compile_memory : TPL_DEFAULT_COMPILE_MEMORY), false };
    if (o.syntax == TPL_SYNTAX_FMT) return tpl_compile_fmt(name, src, len, &o, &budget, out, err);
    if (o.syntax != TPL_SYNTAX_JINJA && o.syntax != TPL_SYNTAX_ERB) {
        set_error(err, TPL_ERR_USAGE, name, NULL, 0, 0, "unknown syntax");
        return TPL_ERR_USAGE;
    }
    tpl_program *p = calloc(1, sizeof *p);
    if (!p) return TPL_ERR_NOMEM;
    tpl_arena_init(&p->arena, 0);
    p->budget = p->arena.budget = &budget;
    p->opts = o;
    if (!tpl_program_bind_lang(p, o.lang)) {
        set_error(err, TPL_ERR_USAGE, name, NULL, 0, 0, "the bound language is not UTF-8");
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
    if (!p->name || !p->source) { tpl_program_free(p); return TPL_ERR_NOMEM; }
    p->source_hash = tpl_source_hash(src, len);

    tpl_status st = o.syntax == TPL_SYNTAX_ERB ? tpl_compile_erb(p, p->source, p->source_len, err)
                                               : tpl_compile_jinja(p, p->source, p->source_len, err);
    p->budget = p->arena.budget = NULL; /* the program outlives the compile */
    if (st != TPL_OK) { tpl_program_free(p); return st; }
    p->opts.host_funcs = NULL;   /* borrowed for compilation only */
    p->opts.nhost_funcs = 0;
    *out = p;
    return TPL_OK;
}

/* A located compile error: TPL_ERR_SYNTAX with msg, or TPL_ERR_LIMIT when the compile ran past
 * its memory limit (whatever failed then, out of memory, reports the limit). */
static tpl_status compile_error(tpl_program *p, tpl_error *err, const char *src, size_t n, uint32_t off,
                                const char *msg)
{
    if (p->budget && p->budget->over) {
        char m[96];
        snprintf(m, sizeof m, "compile memory limit reached (%zu bytes)", p->budget->limit);
        set_error(err, TPL_ERR_LIMIT, p->name, src, n, off, m);
        return TPL_ERR_LIMIT;
    }
    set_error(err, TPL_ERR_SYNTAX, p->name, src, n, off, msg);
    return TPL_ERR_SYNTAX;
}

/* The common tail of the parsing front ends: reports a parse error, or lowers the AST with
 * `lower` into p (code and tables moved into the program) and reports the first compile error. */
static tpl_status lower_ast(tpl_program *p, tpl_pctx *pc, bool parsed, bool (*lower)(tpl_comp *, tpl_node *),
                            tpl_error *err)
{
    if (!parsed)
        return compile_error(p, err, pc->src, pc->n, pc->err_off, pc->failed ? pc->msg : "syntax error");
    tpl_comp *c = tpl_comp_new(p, pc->arena, pc->src, pc->n);
    if (!c) return p->budget && p->budget->over ? compile_error(p, err, pc->src, pc->n, 0, "") : TPL_ERR_NOMEM;
    lower(c, pc->root);
    tpl_comp_finish(c);
    uint32_t off;
    const char *msg;
    if (tpl_comp_error(c, &off, &msg)) return compile_error(p, err, pc->src, pc->n, off, msg);
    return TPL_OK;
}

tpl_status tpl_compile_jinja(tpl_program *p, const char *src, size_t n, tpl_error *err)
{
    tpl_token_vec toks = { 0 };
    tpl_lex_opts lo = { p->opts.trim_blocks, p->opts.lstrip_blocks };
    tpl_lex_result lr = tpl_jinja_lex(src, n, &lo, &toks);
    if (!lr.ok) {
        free(toks.v);
        set_error(err, TPL_ERR_SYNTAX, p->name, src, n, lr.err_off, lr.msg);
        return TPL_ERR_SYNTAX;
    }
    tpl_arena tmp;
    tpl_arena_init(&tmp, 0);
    tmp.budget = p->budget;
    tpl_pctx pc = { 0 };
    pc.arena = &tmp;
    pc.src = src;
    pc.n = n;
    bool ok = tpl_jinja_parse(&pc, toks.v, toks.n);
    free(toks.v);
    tpl_status st = lower_ast(p, &pc, ok, tpl_comp_template, err);
    tpl_arena_free(&tmp);
    return st;
}

/* Format strings: the source is used verbatim (str.format sees the file's exact text). */
static tpl_status tpl_compile_fmt(const char *name, const char *src, size_t len, const tpl_options *o,
                                  tpl_budget *budget, tpl_program **out, tpl_error *err)
{
    tpl_program *p = calloc(1, sizeof *p);
    if (!p) return TPL_ERR_NOMEM;
    tpl_arena_init(&p->arena, 0);
    p->budget = p->arena.budget = budget;
    p->opts = *o;
    if (!tpl_program_bind_lang(p, o->lang)) {
        set_error(err, TPL_ERR_USAGE, name, NULL, 0, 0, "the bound language is not UTF-8");
        tpl_program_free(p);
        return TPL_ERR_USAGE;
    }
    p->name = dupstr(name ? name : "<template>");
    p->source = malloc(len + 1);
    if (!p->name || !p->source) { tpl_program_free(p); return TPL_ERR_NOMEM; }
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
        st = budget->over ? compile_error(p, err, p->source, len, 0, "") : TPL_ERR_NOMEM;
    } else {
        tpl_lower_fmt(c, p->source, len);
        tpl_comp_finish(c);
        uint32_t off;
        const char *msg;
        if (tpl_comp_error(c, &off, &msg)) st = compile_error(p, err, p->source, len, off, msg);
    }
    tpl_arena_free(&tmp);
    p->budget = p->arena.budget = NULL; /* the program outlives the compile */
    if (st != TPL_OK) { tpl_program_free(p); return st; }
    p->opts.host_funcs = NULL;
    p->opts.nhost_funcs = 0;
    *out = p;
    return TPL_OK;
}

/* The (kind, name) of a host-call instruction at pc, or false when pc is no host call. */
static bool host_op(const tpl_program *p, size_t pc, tpl_host_kind *kind, const tpl_value **name)
{
    uint32_t op = TPL_INSN_OP(p->code[pc]);
    if (op != TPL_OP_HOST_FILTER && op != TPL_OP_HOST_CALL) return false;
    *kind = op == TPL_OP_HOST_FILTER ? TPL_HOST_FILTER : TPL_HOST_GLOBAL;
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
        tpl_tr_call r = { NULL, 0, 0, 0 };
        if (t->k >= 0 && (size_t)t->k < p->nconsts) {
            r.text = p->consts[t->k].u.s;
            r.len = p->consts[t->k].len;
        }
        tpl_offset_to_linecol(p->source, p->source_len, t->off, &r.line, &r.column);
        out[i] = r;
    }
    return p->ntrcalls;
}

tpl_status tpl_compile_erb(tpl_program *p, const char *src, size_t n, tpl_error *err)
{
    tpl_arena tmp;
    tpl_arena_init(&tmp, 0);
    tmp.budget = p->budget;
    tpl_pctx pc = { 0 };
    pc.arena = &tmp;
    pc.src = src;
    pc.n = n;
    bool ok = tpl_erb_parse(&pc);
    tpl_status st = lower_ast(p, &pc, ok, tpl_erb_lower, err);
    tpl_arena_free(&tmp);
    return st;
}

void tpl_program_free(tpl_program *p)
{
    if (!p) return;
    tpl_arena_free(&p->arena);
    if (!p->static_data) {
        free(p->name);
        free(p->source);
    }
    free(p);
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
    uint32_t last_line = 0;
    for (size_t pc = 0; pc < p->ncode;) {
        uint32_t w = p->code[pc];
        uint32_t op = TPL_INSN_OP(w);
        if (op >= TPL_OP__COUNT) { tpl_sb_printf(&b, "%5zu  ??? %u\n", pc, op); pc++; continue; }
        const tpl_opinfo *oi = &tpl_opinfo_table[op];
        uint32_t line, col;
        tpl_program_span(p, (uint32_t)pc, &line, &col);
        size_t start = b.len;
        tpl_sb_printf(&b, "%5zu  %-12s", pc, oi->name);
        const char *f = oi->fmt;
        if (f[0] && f[0] != '-') dis_operand(&b, p, f[0], TPL_INSN_A(w));
        for (int i = 0; i < oi->extra; i++) {
            uint32_t x = pc + 1 + (size_t)i < p->ncode ? p->code[pc + 1 + i] : 0;
            char fx = f[0] ? f[1 + i] : 0;
            dis_operand(&b, p, fx ? fx : 'c', x);
        }
        if (line && line != last_line) {
            size_t width = b.len - start;
            for (; width < 48; width++) tpl_sb_putc(&b, ' ');
            char *sl = NULL;
            /* find the line text */
            size_t ls = 0;
            uint32_t l = 1;
            for (size_t i = 0; i < p->source_len && l < line; i++)
                if (p->source[i] == '\n') { l++; ls = i + 1; }
            size_t le = ls;
            while (le < p->source_len && p->source[le] != '\n') le++;
            (void)sl;
            size_t show = le - ls > 60 ? 60 : le - ls;
            tpl_sb_printf(&b, "; %u: %.*s", line, (int)show, p->source + ls);
            last_line = line;
        }
        tpl_sb_putc(&b, '\n');
        pc += 1 + (size_t)oi->extra;
    }
    if (b.failed) { tpl_sb_free(&b); return NULL; }
    tpl_sb_putc(&b, 0);
    return b.p;
}

/* ---- the echoed source line of a diagnostic (issue 13 §3) ----
 * The line is shown as units, one per code point (the error's column counts code points):
 * printable characters as they are, a tab as a tab (so the caret line, which repeats it, lines
 * up), and what a terminal would not show faithfully escaped as Python's backslashreplace and
 * repr write it: an invalid byte \xe9, a C0/C1 control or DEL \x1b, a bidirectional or
 * zero-width format character \u202e (it could reorder what the reader sees). A line wider than
 * DIAG_CUT columns is cut to a window of DIAG_WIDTH columns around the caret (DIAG_LEFT of them
 * before it when the line goes on), "..." marking each cut; the caret stays under its
 * character. A trailing CR (CRLF source) is not shown. */
enum { DIAG_CUT = 120, DIAG_WIDTH = 100, DIAG_LEFT = 60 };

/* Whether cp is a format character that can hide or reorder text (shown escaped). */
static bool diag_invisible(uint32_t cp)
{
    return cp == 0x200B || cp == 0x200C || cp == 0x200D || cp == 0x200E || cp == 0x200F || cp == 0x2028 ||
           cp == 0x2029 || (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2060 && cp <= 0x2069) || cp == 0xFEFF;
}

/* Display width of the unit at s[i..i+len) (code point cp): 1, or the length of its escape. */
static unsigned diag_unit_width(uint32_t cp, size_t len)
{
    if (cp == 0xFFFD && len == 1) return 4;                          /* invalid byte: \xe9 */
    if ((cp < 0x20 && cp != '\t') || (cp >= 0x7F && cp < 0xA0)) return 4; /* \x1b */
    if (diag_invisible(cp)) return 6;                                 /* \u202e */
    return 1;
}

static void diag_put_unit(tpl_sb *b, const char *s, size_t i, size_t len, uint32_t cp, unsigned w)
{
    if (w == 1) tpl_sb_put(b, s + i, len);
    else if (w == 4) tpl_sb_printf(b, "\\x%02x", len == 1 && cp == 0xFFFD ? (unsigned char)s[i] : (unsigned)cp);
    else tpl_sb_printf(b, "\\u%04x", (unsigned)cp);
}

/* Appends "  LINE\n  CARET^\n" for source line s[0..n) and 1-based code-point column `column`. */
static void diag_source_line(tpl_sb *b, const char *s, size_t n, uint32_t column)
{
    if (n && s[n - 1] == '\r') n--;
    /* units: byte offset and width of each code point */
    size_t nu = 0;
    for (size_t i = 0; i < n; nu++) tpl_utf8_next(s, n, &i);
    size_t *off = malloc((nu + 1) * sizeof *off);
    unsigned char *w = malloc(nu + 1);
    if (!off || !w) { free(off); free(w); b->failed = true; return; }
    size_t total = 0, u = 0;
    for (size_t i = 0; i < n; u++) {
        off[u] = i;
        uint32_t cp = tpl_utf8_next(s, n, &i);
        w[u] = (unsigned char)diag_unit_width(cp, i - off[u]);
        total += w[u];
    }
    off[nu] = n;
    size_t c = column > 0 ? column - 1 : 0; /* the caret's unit (nu: just past the end) */
    if (c > nu) c = nu;
    size_t lo = 0, hi = nu;
    if (total > DIAG_CUT) { /* a window: up to DIAG_LEFT columns before the caret, the rest after */
        size_t used = 0;
        lo = c;
        while (lo > 0 && used + w[lo - 1] <= DIAG_LEFT) used += w[--lo];
        hi = c;
        while (hi < nu && used + w[hi] <= DIAG_WIDTH) used += w[hi++];
        while (lo > 0 && used + w[lo - 1] <= DIAG_WIDTH) used += w[--lo]; /* the line ends early: more before */
    }
    tpl_sb_puts(b, "  ");
    if (lo > 0) tpl_sb_puts(b, "...");
    for (size_t k = lo; k < hi; k++) {
        size_t i = off[k];
        uint32_t cp = tpl_utf8_next(s, n, &i);
        diag_put_unit(b, s, off[k], off[k + 1] - off[k], cp, w[k]);
    }
    if (hi < nu) tpl_sb_puts(b, "...");
    tpl_sb_puts(b, "\n  ");
    if (lo > 0) tpl_sb_puts(b, "   ");
    for (size_t k = lo; k < c; k++) {
        if (w[k] == 1 && s[off[k]] == '\t') tpl_sb_putc(b, '\t');
        else for (unsigned x = 0; x < w[k]; x++) tpl_sb_putc(b, ' ');
    }
    tpl_sb_puts(b, "^\n");
    free(off);
    free(w);
}

char *tpl_error_format(const tpl_error *err)
{
    if (!err) return NULL;
    tpl_sb b;
    tpl_sb_init(&b, NULL);
    if (err->line) {
        tpl_sb_printf(&b, "%s:%u:%u: error: %s\n", err->file ? err->file : "<template>", err->line, err->column,
                      err->message ? err->message : "error");
        if (err->source_line) diag_source_line(&b, err->source_line, strlen(err->source_line), err->column);
    } else {
        tpl_sb_printf(&b, "%s: error: %s\n", err->file ? err->file : "<template>", err->message ? err->message : "error");
    }
    if (b.failed) { tpl_sb_free(&b); return NULL; }
    tpl_sb_putc(&b, 0);
    return b.p;
}
