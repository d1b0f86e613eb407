/* `tplc dump --tokens` and `--ast` (tpl_dump_tokens, tpl_dump_ast): the scanners' tokens and the
 * parsers' tree as text, from the same scanners and parsers tpl_compile runs (no second parser).
 *
 * Tokens: one per line, `SPAN KIND TEXT [flag=-|+]`: SPAN is LINE:COL-LINE:COL, the first byte's
 * position and the position just past the last byte (lines from 1, columns from 1 in code
 * points, as error locations count); KIND is the grammar's token name (TK_ without the prefix,
 * generated from jinja_parse.y and erb_parse.y; a format string's are TEXT, FIELD, FIELD_NAME,
 * CONVERSION, FORMAT_SPEC); TEXT the token's bytes as a double-quoted string (\\ \" \n \r \t
 * and \xHH for other control bytes). Jinja's TEXT is the text after whitespace control; ERB's
 * tokens are those of the Ruby script ERB generates (PUT: the text it puts), mapped back to the
 * source. Jinja positions are in the newline-normalised source, as Jinja2 counts them.
 *
 * AST: one node per line, indented two spaces a level, `[FIELD: ]KIND LINE:COL [op=OP] [VALUE]`:
 * FIELD names the parent's child (a..e as grammar/ast.h documents them per kind; the items of a
 * list each carry their field), LINE:COL the node's first byte (nodes record only where they
 * start), OP the operator (BINOP, UNOP, CMPOP) or the kind's flag bits, VALUE a CONST's repr
 * (Python's; Ruby's inspect in ERB) or the node's name or text as a quoted string. An elif chain
 * prints its links at one level, as the compiler walks it. Format strings have no AST: --ast
 * prints the scanner's pieces as a tree (TEMPLATE; TEXT; FIELD with name=, conv=, spec=, and a
 * spec's nested fields as its `spec:` children). */
#include <stdlib.h>
#include <string.h>
#include "compile.h"
#include "../grammar/parse_ctx.h"
#include "../grammar/erb.h"
#include "../grammar/fmt_lex.h"
#include "../runtime/error.h"
#include "../runtime/vm.h"

/* Line/column of byte offsets, counted forward from the last position asked (tokens and nodes
 * come mostly in source order: linear overall), restarting from a line start when asked back. */
typedef struct dump_pos {
    const char *src;
    size_t n;
    uint32_t off, line, col, bol; /* the last position: offset, line, column, its line's start */
} dump_pos;

static void pos_at(dump_pos *p, uint32_t off, uint32_t *line, uint32_t *col)
{
    if (off > p->n) off = (uint32_t)p->n;
    if (off < p->off) {
        if (off >= p->bol) {     /* back on the same line */
            p->off = p->bol;
            p->col = 1;
        } else {
            p->off = p->bol = 0;
            p->line = p->col = 1;
        }
    }
    for (uint32_t i = p->off; i < off; i++) {
        unsigned char ch = (unsigned char)p->src[i];
        if (ch == '\n') { p->line++; p->col = 1; p->bol = i + 1; }
        else if ((ch & 0xC0) != 0x80) p->col++;
    }
    p->off = off;
    *line = p->line;
    *col = p->col;
}

static void put_quoted(tpl_sb *b, const char *s, size_t n)
{
    tpl_sb_putc(b, '"');
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        switch (ch) {
        case '\\': tpl_sb_puts(b, "\\\\"); break;
        case '"': tpl_sb_puts(b, "\\\""); break;
        case '\n': tpl_sb_puts(b, "\\n"); break;
        case '\r': tpl_sb_puts(b, "\\r"); break;
        case '\t': tpl_sb_puts(b, "\\t"); break;
        default:
            if (ch < 0x20 || ch == 0x7f) tpl_sb_printf(b, "\\x%02x", ch);
            else tpl_sb_putc(b, (char)ch);
        }
    }
    tpl_sb_putc(b, '"');
}

typedef struct dumper {
    tpl_sb out;
    dump_pos pos;
    bool ruby;      /* ERB: constants print with Ruby's inspect */
} dumper;

static void put_token(dumper *d, const char *kind, uint32_t off, uint32_t end, const char *text, size_t len,
                      char flag)
{
    uint32_t l1, c1, l2, c2;
    pos_at(&d->pos, off, &l1, &c1);
    pos_at(&d->pos, end, &l2, &c2);
    size_t start = d->out.len;
    tpl_sb_printf(&d->out, "%u:%u-%u:%u", l1, c1, l2, c2);
    for (size_t w = d->out.len - start; w < 16; w++) tpl_sb_putc(&d->out, ' ');
    tpl_sb_printf(&d->out, " %-14s ", kind ? kind : "?");
    put_quoted(&d->out, text, len);
    if (flag) tpl_sb_printf(&d->out, " flag=%c", flag);
    tpl_sb_putc(&d->out, '\n');
}

static void erb_token(void *data, int kind, uint32_t off, uint32_t end, const char *text, size_t len)
{
    put_token(data, tpl_erb_token_name(kind), off, end, text, len, 0);
}

/* A format string's pieces as tokens (depth 0) or as a tree under indent `ind` (ast). False on
 * a scanner error (*eoff, *emsg set). */
static bool fmt_pieces(dumper *d, const char *s, size_t n, uint32_t base, bool ast, int ind, const char *field,
                       int depth, uint32_t *eoff, const char **emsg)
{
    size_t pos = 0;
    tpl_fmt_piece p;
    for (;;) {
        size_t at = pos;
        int k = tpl_fmt_next(s, n, &pos, &p);
        if (k == TPL_FMTP_END) return true;
        if (k == TPL_FMTP_ERROR) { *eoff = base + p.err_off; *emsg = p.msg; return false; }
        if (!ast) {
            put_token(d, k == TPL_FMTP_TEXT ? "TEXT" : "FIELD", base + (uint32_t)at, base + (uint32_t)pos, s + p.off,
                      k == TPL_FMTP_TEXT ? p.len : (size_t)(pos - at), 0);
            if (k == TPL_FMTP_TEXT) continue;
            put_token(d, "FIELD_NAME", base + p.name_off, base + p.name_off + p.name_len, s + p.name_off, p.name_len, 0);
            if (p.conv) {
                uint32_t co = p.name_off + p.name_len + 1; /* after the '!' */
                put_token(d, "CONVERSION", base + co, base + co + 1, s + co, 1, 0);
            }
            if (p.spec_len || (p.spec_off && s[p.spec_off - 1] == ':'))
                put_token(d, "FORMAT_SPEC", base + p.spec_off, base + p.spec_off + p.spec_len, s + p.spec_off,
                          p.spec_len, 0);
            continue;
        }
        uint32_t line, col;
        pos_at(&d->pos, base + (uint32_t)at, &line, &col);
        tpl_sb_printf(&d->out, "%*s%s: %s %u:%u ", ind, "", field, k == TPL_FMTP_TEXT ? "TEXT" : "FIELD", line, col);
        if (k == TPL_FMTP_TEXT) {
            put_quoted(&d->out, s + p.off, p.len);
            tpl_sb_putc(&d->out, '\n');
            continue;
        }
        tpl_sb_puts(&d->out, "name=");
        put_quoted(&d->out, s + p.name_off, p.name_len);
        if (p.conv) {
            tpl_sb_puts(&d->out, " conv=");
            char cv = (char)p.conv;
            put_quoted(&d->out, &cv, 1);
        }
        if (p.spec_len) {
            tpl_sb_puts(&d->out, " spec=");
            put_quoted(&d->out, s + p.spec_off, p.spec_len);
        }
        tpl_sb_putc(&d->out, '\n');
        /* str.format expands a spec's fields one level deep (deeper: "Max string recursion
         * exceeded", the compiler's error) */
        if (p.spec_nested && depth < 2 &&
            !fmt_pieces(d, s + p.spec_off, p.spec_len, base + p.spec_off, true, ind + 2, "spec", depth + 1, eoff, emsg))
            return false;
    }
}

static void put_node(dumper *d, const tpl_node *n, int ind, const char *field);

/* A child list: each item with its field label. */
static void put_list(dumper *d, const tpl_node *n, int ind, const char *field)
{
    for (; n; n = n->next) put_node(d, n, ind, field);
}

static bool has_val(const tpl_node *n)
{
    return !tpl_node_has_de(n->kind) && (n->kind == TPL_N_CONST || n->val.type != TPL_T_UNDEF);
}

static void put_node(dumper *d, const tpl_node *n, int ind, const char *field)
{
    for (;;) {
        uint32_t line, col;
        pos_at(&d->pos, n->off, &line, &col);
        tpl_sb_printf(&d->out, "%*s", ind, "");
        if (field) tpl_sb_printf(&d->out, "%s: ", field);
        tpl_sb_printf(&d->out, "%s %u:%u", tpl_node_kind_name(n->kind), line, col);
        if (n->kind == TPL_N_BINOP || n->kind == TPL_N_UNOP || n->kind == TPL_N_CMPOP)
            tpl_sb_printf(&d->out, " op=\"%s\"", tpl_operator_name(n->op));
        else if (n->op)
            tpl_sb_printf(&d->out, " op=%u", n->op);
        if (has_val(n)) {
            tpl_sb_putc(&d->out, ' ');
            if (n->kind != TPL_N_CONST && n->val.type == TPL_T_STR) put_quoted(&d->out, n->val.u.s, n->val.len);
            else if (d->ruby) tpl_rb_inspect(&d->out, n->val);
            else tpl_py_repr(&d->out, n->val);
        }
        tpl_sb_putc(&d->out, '\n');
        /* an elif chain (an IF whose else part is one IF) prints its links at this level */
        bool elif = n->kind == TPL_N_IF && n->c && n->c->kind == TPL_N_IF && !n->c->next;
        put_list(d, n->a, ind + 2, "a");
        put_list(d, n->b, ind + 2, "b");
        if (!elif) put_list(d, n->c, ind + 2, "c");
        put_list(d, tpl_node_d(n), ind + 2, "d");
        put_list(d, tpl_node_e(n), ind + 2, "e");
        if (!elif || d->out.failed) return;
        n = n->c;
        field = "elif";
    }
}

static tpl_status dump_source(const char *name, const char *src, size_t len, const tpl_options *opts, bool ast,
                              char **out, tpl_error *err)
{
    if (!out) return tpl_error_usage(err, name, "tpl_dump: out is NULL");
    *out = NULL;
    if (!src) return tpl_error_usage(err, name, "tpl_dump: src is NULL");
    if (!name) name = "<template>";
    tpl_options o = { 0 };
    if (opts) o = *opts;
    size_t bad;
    if (!tpl_utf8_valid(src, len, &bad)) { /* as tpl_compile */
        char msg[64];
        snprintf(msg, sizeof msg, "invalid UTF-8 (byte 0x%02X)", (unsigned char)src[bad]);
        return tpl_error_set_at(err, TPL_EK_SYNTAX, name, src, len, (uint32_t)bad, msg);
    }
    if (o.syntax != TPL_SYNTAX_JINJA && o.syntax != TPL_SYNTAX_ERB && o.syntax != TPL_SYNTAX_FMT)
        return tpl_error_set_at(err, TPL_EK_USAGE, name, NULL, 0, 0, "unknown syntax");
    /* the source as the compiler sees it: Jinja's newline-normalised, ERB's and fmt's verbatim */
    size_t n = len;
    char *text = o.syntax == TPL_SYNTAX_JINJA ? tpl_jinja_normalize(src, len, o.keep_trailing_newline, &n) : malloc(len + 1);
    if (!text) return tpl_error_nomem(err, name);
    if (o.syntax != TPL_SYNTAX_JINJA) { memcpy(text, src, len); text[len] = 0; }
    tpl_budget budget = { 0, (size_t)(o.max_compile_memory ? o.max_compile_memory : TPL_DEFAULT_COMPILE_MEMORY), false };
    tpl_arena arena;
    tpl_arena_init(&arena, 0);
    arena.budget = &budget;
    dumper d = { .pos = { text, n, 0, 1, 1, 0 }, .ruby = o.syntax == TPL_SYNTAX_ERB };
    tpl_sb_init(&d.out, NULL);
    tpl_pctx pc;
    memset(&pc, 0, sizeof pc);
    pc.arena = &arena;
    pc.src = text;
    pc.n = n;
    bool ok = true;
    uint32_t eoff = 0;
    const char *emsg = NULL;
    if (o.syntax == TPL_SYNTAX_FMT) {
        if (ast) tpl_sb_puts(&d.out, "TEMPLATE 1:1\n");
        ok = fmt_pieces(&d, text, n, 0, ast, 2, "b", 0, &eoff, &emsg);
    } else if (o.syntax == TPL_SYNTAX_ERB && !ast) {
        ok = tpl_erb_tokens(&pc, erb_token, &d);
    } else if (o.syntax == TPL_SYNTAX_ERB) {
        ok = tpl_erb_parse(&pc);
    } else {
        tpl_jtok_vec toks = { 0 };
        tpl_lex_opts lo = { o.trim_blocks, o.lstrip_blocks };
        tpl_lex_result lr = tpl_jinja_lex(text, n, &lo, &toks);
        if (!lr.ok && ast && !lr.nomem) {
            ok = tpl_jinja_parse_lex_failed(&pc, &toks, &lr); /* (a parse error before the scanner's first) */
        } else if (!lr.ok) {
            ok = false;
            pc.failed = true;
            pc.nomem = lr.nomem;
            pc.err_off = lr.err_off;
            snprintf(pc.msg, sizeof pc.msg, "%s", lr.msg);
        } else if (!ast) {
            for (size_t i = 0; i < toks.n && !d.out.failed; i++) {
                tpl_token t = tpl_jtok_get(&toks, i);
                put_token(&d, tpl_jinja_token_name(t.kind), t.off, t.off + t.len, text + t.off, t.len, (char)t.flag);
            }
        } else {
            ok = tpl_jinja_parse(&pc, &toks);   /* pc.top NULL: the whole tree */
        }
        tpl_jtok_free(&toks);
    }
    if (ok && ast && o.syntax != TPL_SYNTAX_FMT && pc.root) put_node(&d, pc.root, 0, NULL);
    tpl_status st = TPL_OK;
    if (!ok) {
        if (budget.over) {
            char m[96];
            snprintf(m, sizeof m, tpl_error_kind_format(TPL_EK_COMPILE_MEMORY_LIMIT), (unsigned long long)budget.limit);
            st = tpl_error_set_at(err, TPL_EK_COMPILE_MEMORY_LIMIT, name, text, n, pc.err_off, m);
        } else if (emsg) {
            st = tpl_error_set_at(err, TPL_EK_SYNTAX, name, text, n, eoff, emsg);
        } else {
            st = tpl_error_set_at(err, tpl_pctx_kind(&pc), name, text, n, pc.err_off,
                                  pc.failed ? pc.msg : "syntax error");
        }
    } else if (d.out.failed) {
        st = tpl_error_nomem(err, name);
    } else {
        tpl_sb_putc(&d.out, 0);
        if (d.out.failed) st = tpl_error_nomem(err, name);
        else { *out = d.out.p; d.out.p = NULL; }
    }
    tpl_sb_free(&d.out);
    tpl_arena_free(&arena);
    free(text);
    return st;
}

tpl_status tpl_dump_tokens(const char *name, const char *src, size_t len, const tpl_options *opts, char **out,
                           tpl_error *err)
{
    return dump_source(name, src, len, opts, false, out, err);
}

tpl_status tpl_dump_ast(const char *name, const char *src, size_t len, const tpl_options *opts, char **out,
                        tpl_error *err)
{
    return dump_source(name, src, len, opts, true, out, err);
}
