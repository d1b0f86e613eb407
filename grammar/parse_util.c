/* Helpers for grammar actions (all syntaxes) and the Jinja parser driver. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <math.h>
#include "parse_ctx.h"
#include "../runtime/error.h"
#include "jinja_parse.h"

void tpl_pctx_error(tpl_pctx *c, uint32_t off, const char *fmt, ...)
{
    if (c->failed) return;
    c->failed = true;
    c->err_off = off;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->msg, sizeof c->msg, fmt, ap);
    va_end(ap);
}

void tpl_pctx_nomem(tpl_pctx *c, uint32_t off)
{
    if (c->failed) return;
    tpl_pctx_error(c, off, "%s", tpl_error_kind_format(TPL_EK_NOMEM));
    c->nomem = true;
}

/* ---- tpl_smap */

static uint32_t smap_hash(const char *s, size_t n)
{
    uint64_t h = 0x9e3779b97f4a7c15u ^ n;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdu;
        h ^= h >> 32;
    }
    uint64_t t = 0;
    for (; i < n; i++) t = t << 8 | (unsigned char)s[i];
    h = (h ^ t) * 0xc4ceb9fe1a85ec53u;
    h ^= h >> 29;
    return (uint32_t)(h ^ (h >> 32));
}

static tpl_smap_ent *smap_find(tpl_smap_ent *e, uint32_t cap, const char *s, size_t n, uint32_t h)
{
    uint32_t mask = cap - 1;
    for (uint32_t i = h & mask;; i = (i + 1) & mask)
        if (!e[i].s || (e[i].len == n && memcmp(e[i].s, s, n) == 0)) return &e[i];
}

bool tpl_smap_get(const tpl_smap *m, const char *s, size_t n, uint32_t *val)
{
    if (!m->n) return false;
    tpl_smap_ent *x = smap_find(m->e, m->cap, s, n, smap_hash(s, n));
    if (!x->s) return false;
    *val = x->val;
    return true;
}

bool tpl_smap_put(tpl_smap *m, const char *s, size_t n, uint32_t val)
{
    if (n > UINT32_MAX) return false;
    if (!s) s = "";
    if ((m->n + 1) * 2 > m->cap) {
        uint32_t cap = m->cap ? m->cap * 2 : 16;
        if (cap < m->cap) return false;
        tpl_smap_ent *e = tpl_arena_alloc(m->arena, (size_t)cap * sizeof *e);
        if (!e) return false;
        memset(e, 0, (size_t)cap * sizeof *e);
        for (uint32_t i = 0; i < m->cap; i++)
            if (m->e[i].s) *smap_find(e, cap, m->e[i].s, m->e[i].len, smap_hash(m->e[i].s, m->e[i].len)) = m->e[i];
        m->e = e;
        m->cap = cap;
    }
    tpl_smap_ent *x = smap_find(m->e, m->cap, s, n, smap_hash(s, n));
    if (!x->s) m->n++;
    *x = (tpl_smap_ent){ s, (uint32_t)n, val };
    return true;
}

tpl_node *tpl_p_node(tpl_pctx *c, int kind, uint32_t off, tpl_node *a, tpl_node *b)
{
    tpl_node *n = tpl_node_new(c->arena, kind, off);
    if (!n) {
        /* Out of memory: keep parsing on a throwaway node; the error stops compilation. */
        tpl_pctx_nomem(c, off);
        n = &c->dummy;
        memset(n, 0, sizeof *n);
    }
    n->a = a;
    n->b = b;
    return n;
}

tpl_node *tpl_p_elif(tpl_node *chain, tpl_node *elif)
{
    if (!chain) {
        elif->tail = elif;
        return elif;
    }
    chain->tail->c = elif;
    chain->tail = elif;
    return chain;
}

tpl_node *tpl_p_elif_end(tpl_node *chain, tpl_node *else_body)
{
    if (!chain) return else_body;
    chain->tail->c = else_body;
    chain->tail = NULL;
    return chain;
}

tpl_value tpl_p_tokstr(tpl_pctx *c, tpl_token t)
{
    return tpl_v_str(c->src + t.off, t.len);
}

tpl_node *tpl_p_name(tpl_pctx *c, tpl_token t)
{
    tpl_node *n = tpl_p_node(c, TPL_N_NAME, t.off, NULL, NULL);
    n->val = tpl_p_tokstr(c, t);
    return n;
}

static tpl_value unquote(tpl_pctx *c, tpl_token t)
{
    const char *body = c->src + t.off + 1;
    size_t n = t.len - 2;
    if (!memchr(body, '\\', n)) return tpl_v_str(body, n);
    char *out = tpl_arena_alloc(c->arena, n + 1);
    if (!out) { tpl_pctx_nomem(c, t.off); return tpl_v_str("", 0); }
    size_t bad = 0;
    long len = tpl_py_unescape(body, n, out, &bad);
    if (len == -2) {
        tpl_pctx_error(c, t.off + 1 + (uint32_t)bad, "\\N{...} escapes are not supported (write the character itself)");
        return tpl_v_str("", 0);
    }
    if (len < 0) {
        tpl_pctx_error(c, t.off + 1 + (uint32_t)bad, "invalid escape sequence in string literal");
        return tpl_v_str("", 0);
    }
    return tpl_v_str(out, (size_t)len);
}

tpl_node *tpl_p_string(tpl_pctx *c, tpl_token t)
{
    tpl_node *n = tpl_p_node(c, TPL_N_CONST, t.off, NULL, NULL);
    n->val = unquote(c, t);
    return n;
}

tpl_node *tpl_p_string_cat(tpl_pctx *c, tpl_node *a, tpl_token t)
{
    tpl_value b = unquote(c, t);
    size_t n = (size_t)a->val.len + b.len;
    char *s = tpl_arena_alloc(c->arena, n + 1);
    if (!s) { tpl_pctx_nomem(c, t.off); return a; }
    memcpy(s, a->val.u.s, a->val.len);
    memcpy(s + a->val.len, b.u.s, b.len);
    a->val = tpl_v_str(s, n);
    return a;
}

/* Copies a numeric literal without underscores into buf; false when it does not fit. */
static bool strip_underscores(const char *s, size_t n, char *buf, size_t cap)
{
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '_') continue;
        if (j + 1 >= cap) return false;
        buf[j++] = s[i];
    }
    buf[j] = 0;
    return true;
}

tpl_node *tpl_p_integer(tpl_pctx *c, tpl_token t)
{
    tpl_node *n = tpl_p_node(c, TPL_N_CONST, t.off, NULL, NULL);
    char buf[128];
    if (!strip_underscores(c->src + t.off, t.len, buf, sizeof buf)) {
        tpl_pctx_error(c, t.off, "integer literal too large (tpl integers are 64-bit)");
        return n;
    }
    int base = 10;
    const char *digits = buf;
    if (buf[0] == '0' && (buf[1] == 'x' || buf[1] == 'X')) base = 16, digits = buf + 2;
    else if (buf[0] == '0' && (buf[1] == 'o' || buf[1] == 'O')) base = 8, digits = buf + 2;
    else if (buf[0] == '0' && (buf[1] == 'b' || buf[1] == 'B')) base = 2, digits = buf + 2;
    errno = 0;
    char *end;
    long long v = strtoll(digits, &end, base);
    if (errno == ERANGE) {
        tpl_pctx_error(c, t.off, "integer literal too large (tpl integers are 64-bit)");
        return n;
    }
    n->val = tpl_v_int(v);
    return n;
}

tpl_node *tpl_p_float(tpl_pctx *c, tpl_token t)
{
    tpl_node *n = tpl_p_node(c, TPL_N_CONST, t.off, NULL, NULL);
    char buf[512];
    if (!strip_underscores(c->src + t.off, t.len, buf, sizeof buf)) {
        tpl_pctx_error(c, t.off, "float literal too long");
        return n;
    }
    n->val = tpl_v_float(strtod(buf, NULL));
    return n;
}

/* Lemon's generated interface. */
void *JinjaParseAlloc(void *(*mallocProc)(size_t));
void JinjaParseFree(void *p, void (*freeProc)(void *));
void JinjaParse(void *p, int major, tpl_token minor, tpl_pctx *ctx);

/* Block tags that need an end tag: the opening keyword and its end keyword. */
static const char *block_end_of(int kind)
{
    switch (kind) {
    case TK_IF: return "endif";
    case TK_FOR: return "endfor";
    case TK_MACRO: return "endmacro";
    case TK_CALL: return "endcall";
    case TK_FILTER: return "endfilter";
    case TK_SET: return "endset";
    case TK_WITH: return "endwith";
    case TK_BLOCK: return "endblock";
    case TK_AUTOESCAPE: return "endautoescape";
    case TK_GENERATION: return "endgeneration";
    default: return NULL;
    }
}

static bool is_end_tag(int kind)
{
    switch (kind) {
    case TK_ENDIF: case TK_ENDFOR: case TK_ENDMACRO: case TK_ENDCALL: case TK_ENDFILTER: case TK_ENDSET:
    case TK_ENDWITH: case TK_ENDBLOCK: case TK_ENDAUTOESCAPE: case TK_ENDGENERATION:
        return true;
    default:
        return false;
    }
}

/* The tags Jinja2 looks for inside an open block (its parse_statements end tokens), quoted and
 * joined with " or ", and the block's own name. */
static const char *block_looking_for(int kind)
{
    switch (kind) {
    case TK_IF: return "'elif' or 'else' or 'endif'";
    case TK_FOR: return "'endfor' or 'else'";
    case TK_MACRO: return "'endmacro'";
    case TK_CALL: return "'endcall'";
    case TK_FILTER: return "'endfilter'";
    case TK_SET: return "'endset'";
    case TK_WITH: return "'endwith'";
    case TK_BLOCK: return "'endblock'";
    case TK_AUTOESCAPE: return "'endautoescape'";
    case TK_GENERATION: return "'endgeneration'";
    default: return NULL;
    }
}

/* After "Encountered unknown tag 'NAME'." at a tag name, appends Jinja2's hint (its
 * _fail_ut_eof): what the innermost open block is looking for (or, when NAME ends some open
 * block, that this is probably a nesting mistake) and which block needs to be closed. */
static void unknown_tag_hint(tpl_pctx *c, const tpl_token *t, const int *open_kinds, size_t nopen)
{
    if (!nopen || strncmp(c->msg, "Encountered unknown tag '", 25) != 0 || strchr(c->msg, '(')) return;
    int inner = open_kinds[nopen - 1];
    const char *looking = block_looking_for(inner);
    if (!looking) return;
    const char *name = c->src + t->off;
    size_t len = t->len;
    char needle[40];
    bool expected = false;
    if (len + 3 <= sizeof needle) {
        snprintf(needle, sizeof needle, "'%.*s'", (int)len, name);
        for (size_t i = 0; i < nopen && !expected; i++) {
            const char *l = block_looking_for(open_kinds[i]);
            expected = l && strstr(l, needle);
        }
    }
    size_t used = strlen(c->msg);
    snprintf(c->msg + used, sizeof c->msg - used,
             expected ? " You probably made a nesting mistake. Jinja is expecting this tag, but currently looking for %s."
                        " The innermost block that needs to be closed is '%.*s'."
                      : " Jinja was looking for the following tags: %s. The innermost block that needs to be closed is '%.*s'.",
             looking, (int)(strlen(block_end_of(inner)) - 3), block_end_of(inner) + 3);
}

bool tpl_jinja_parse(tpl_pctx *c, const tpl_token *toks, size_t n)
{
    void *parser = JinjaParseAlloc(malloc);
    if (!parser) { tpl_pctx_nomem(c, 0); return false; }
    c->tokens = toks;
    c->ntokens = n;
    bool first_in_block = false;
    /* open block tags, to say which one an unexpected end of template left unclosed */
    struct open_tag { int kind; uint32_t off; } open[64];
    size_t nopen = 0, deep = 0;
    for (size_t i = 0; i < n && !c->failed; i++) {
        tpl_token t = toks[i];
        if (t.kind == TK_BLOCK_BEGIN) { first_in_block = true; continue; }
        if (first_in_block) {
            t.flag |= 0x80;
            first_in_block = false;
            if (t.kind == TK_BLOCK_END) { tpl_pctx_error(c, t.off, "tag name expected"); break; }
            size_t nopen_before = nopen;
            bool opens = block_end_of(t.kind) != NULL;
            if (t.kind == TK_SET) /* only `{% set x %}` (no `=`) is a block */
                for (size_t k = i + 1; k < n && toks[k].kind != TK_BLOCK_END; k++)
                    if (toks[k].kind == TK_ASSIGN) { opens = false; break; }
            if (opens) {
                if (nopen < 64) open[nopen++] = (struct open_tag){ t.kind, toks[i - 1].off };
                else deep++;
            } else if (is_end_tag(t.kind)) {
                if (deep) deep--;
                else if (nopen) nopen--;
            }
            if (!opens && !deep) { /* an unknown or misplaced tag: Jinja2's hint needs the open blocks */
                int kinds[64];
                size_t nk = nopen_before < 64 ? nopen_before : 64; /* before an end tag popped */
                for (size_t k = 0; k < nk; k++) kinds[k] = open[k].kind;
                c->cur_off = t.off;
                JinjaParse(parser, t.kind, t, c);
                if (c->failed && c->err_off == t.off) unknown_tag_hint(c, &t, kinds, nk);
                continue;
            }
        }
        c->cur_off = t.off;
        JinjaParse(parser, t.kind, t, c);
    }
    if (!c->failed) {
        tpl_token eof = { 0, (uint32_t)c->n, 0, 0 };
        JinjaParse(parser, 0, eof, c);
        if (c->failed && c->err_off == (uint32_t)c->n && nopen) {
            const char *end = block_end_of(open[nopen - 1].kind);
            c->err_off = open[nopen - 1].off;
            snprintf(c->msg, sizeof c->msg,
                     "Unexpected end of template: this block is never closed (Jinja was looking for '%s')", end);
        }
    }
    JinjaParseFree(parser, free);
    return !c->failed && c->root && tpl_p_check_depth(c, c->root);
}

bool tpl_p_check_depth(tpl_pctx *c, const tpl_node *root)
{
    /* an explicit stack: the check itself must not recurse as deep as the tree */
    struct item { const tpl_node *n; uint32_t depth; } *stack = NULL;
    size_t len = 0, cap = 0;
    bool ok = true;
    if (root) {
        stack = malloc(64 * sizeof *stack);
        if (!stack) { tpl_pctx_nomem(c, 0); return false; }
        cap = 64;
        stack[len++] = (struct item){ root, 1 };
    }
    while (len && ok) {
        struct item it = stack[--len];
        for (const tpl_node *n = it.n; n; n = n->next) { /* siblings share a depth */
            if (it.depth > TPL_MAX_AST_DEPTH) {
                tpl_pctx_error(c, n->off, "nested too deeply (more than %d levels of expressions and statements)",
                               TPL_MAX_AST_DEPTH);
                ok = false;
                break;
            }
            const tpl_node *kids[5] = { n->a, n->b, n->c, n->d, n->e };
            for (int i = 0; i < 5; i++) {
                if (!kids[i]) continue;
                if (len == cap) {
                    struct item *ns = realloc(stack, cap * 2 * sizeof *stack);
                    if (!ns) { tpl_pctx_nomem(c, n->off); ok = false; break; }
                    stack = ns;
                    cap *= 2;
                }
                /* an elif chain (an IF whose else part is one IF) is a list, not nesting */
                bool elif = i == 2 && n->kind == TPL_N_IF && kids[i]->kind == TPL_N_IF && !kids[i]->next;
                stack[len++] = (struct item){ kids[i], elif ? it.depth : it.depth + 1 };
            }
            if (!ok) break;
        }
    }
    free(stack);
    return ok;
}
