/* Helpers for grammar actions (all syntaxes) and the Jinja parser driver. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <ctype.h>
#include <string.h>
#include <errno.h>
#include <math.h>
#include <limits.h>
#include "parse_ctx.h"
#include "../runtime/error.h"
#include "jinja_parse.h"
#include "../runtime/vm.h"
#include "../runtime/bigint.h"

/* The parser's first error wins: later ones are dropped. */
static void pctx_fail(tpl_pctx *c, uint32_t off, bool assertion, const char *fmt, va_list ap)
{
    if (c->failed) return;
    c->failed = true;
    c->assertion = assertion;
    c->err_off = off;
    vsnprintf(c->msg, sizeof c->msg, fmt, ap);
}

void tpl_pctx_error(tpl_pctx *c, uint32_t off, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pctx_fail(c, off, false, fmt, ap);
    va_end(ap);
}

void tpl_pctx_assert(tpl_pctx *c, uint32_t off, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pctx_fail(c, off, true, fmt, ap);
    va_end(ap);
}

tpl_error_kind tpl_pctx_kind(const tpl_pctx *c)
{
    return c->nomem ? TPL_EK_NOMEM : c->assertion ? TPL_EK_ASSERTION : TPL_EK_SYNTAX;
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
        /* a large table takes a chunk of its own and gives the old one back (kept in the arena,
         * the copies of a table of 60,000 names were as large as the table: issue 13 §1) */
        size_t bytes = (size_t)cap * sizeof *m->e;
        tpl_smap_ent *e = tpl_arena_table(m->arena, bytes);
        if (!e) return false;
        memset(e, 0, bytes);
        for (uint32_t i = 0; i < m->cap; i++)
            if (m->e[i].s) *smap_find(e, cap, m->e[i].s, m->e[i].len, smap_hash(m->e[i].s, m->e[i].len)) = m->e[i];
        if (m->e) tpl_arena_table_free(m->arena, m->e, (size_t)m->cap * sizeof *m->e);
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

/* ---- {% trans %} (jinja2.ext.i18n's InternationalizationExtension.parse, newstyle gettext) ---- */

/* A growing string in the parse arena. */
typedef struct pbuf { char *p; size_t len, cap; bool failed; } pbuf;

static void pb_put(tpl_pctx *c, pbuf *b, const char *s, size_t n)
{
    if (b->failed) return;
    if (b->len + n + 1 > b->cap) {
        size_t nc = (b->cap ? b->cap * 2 : 64);
        while (nc < b->len + n + 1) nc *= 2;
        char *np = tpl_arena_alloc(c->arena, nc);
        if (!np) { b->failed = true; tpl_pctx_nomem(c, 0); return; }
        if (b->len) memcpy(np, b->p, b->len);
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
}

/* The gettext message of a trans body: text with % doubled, {{ name }} as %(name)s; the names
 * referenced are appended (in order, repeats kept) to refs[0..*nrefs) (at most cap). */
static tpl_value trans_message(tpl_pctx *c, const tpl_node *body, const tpl_node **refs, size_t *nrefs, size_t cap)
{
    pbuf b = { 0 };
    for (const tpl_node *n = body; n; n = n->next) {
        if (n->kind == TPL_N_TEXT) {
            const char *s = n->val.u.s;
            size_t len = n->val.len, pos = 0;
            for (size_t i = 0; i < len; i++)
                if (s[i] == '%') { pb_put(c, &b, s + pos, i + 1 - pos); pb_put(c, &b, "%", 1); pos = i + 1; }
            pb_put(c, &b, s + pos, len - pos);
        } else {
            pb_put(c, &b, "%(", 2);
            pb_put(c, &b, n->val.u.s, n->val.len);
            pb_put(c, &b, ")s", 2);
            if (*nrefs < cap) refs[(*nrefs)++] = n;
        }
    }
    return tpl_v_str(b.p ? b.p : "", b.len);
}

/* The length of the Python whitespace (str.isspace) run at s[i..n). */
static size_t py_ws(const char *s, size_t n, size_t i)
{
    size_t j = i;
    while (j < n) {
        size_t k = j;
        uint32_t cp = tpl_utf8_next(s, n, &k);
        if (!tpl_py_isspace(cp)) break;
        j = k;
    }
    return j - i;
}

/* trimmed: re.sub(r"\s*\n\s*", " ", s.strip()). */
static tpl_value trans_trim(tpl_pctx *c, tpl_value v)
{
    const char *s = v.u.s;
    size_t n = v.len, start = py_ws(s, n, 0), end = n;
    while (end > start) { /* rstrip */
        size_t k = end - 1;
        while (k > start && ((unsigned char)s[k] & 0xC0) == 0x80) k--;
        size_t i = k;
        if (!tpl_py_isspace(tpl_utf8_next(s, end, &i))) break;
        end = k;
    }
    pbuf b = { 0 };
    size_t i = start;
    while (i < end) {
        size_t w = py_ws(s, end, i);
        if (w) {
            /* a whitespace run holding a newline becomes one space; others stay as they are */
            if (memchr(s + i, '\n', w)) pb_put(c, &b, " ", 1);
            else pb_put(c, &b, s + i, w);
            i += w;
        } else {
            size_t k = i;
            tpl_utf8_next(s, end, &k);
            pb_put(c, &b, s + i, k - i);
            i = k;
        }
    }
    return tpl_v_str(b.p ? b.p : "", b.len);
}

static tpl_node *syn_name(tpl_pctx *c, uint32_t off, const char *name)
{
    tpl_node *n = tpl_p_node(c, TPL_N_NAME, off, NULL, NULL);
    n->val = tpl_v_str(name, strlen(name));
    return n;
}

static tpl_node *syn_arg(tpl_pctx *c, uint32_t off, tpl_node *e)
{
    return tpl_p_node(c, TPL_N_ARG, off, e, NULL);
}

static bool val_eq(tpl_value v, const char *s)
{
    size_t n = strlen(s);
    return v.len == n && memcmp(v.u.s, s, n) == 0;
}

#define TRANS_MAX_VARS 256

tpl_node *tpl_p_trans(tpl_pctx *c, uint32_t off, tpl_node *context, tpl_node *head, tpl_node *singular_body,
                      tpl_node *plural_part)
{
    if (c->failed) return &c->dummy;
    /* the head: variables (name -> expression) in order; trimmed/notrimmed */
    const char *vname[TRANS_MAX_VARS];
    size_t vlen[TRANS_MAX_VARS];
    tpl_node *vexpr[TRANS_MAX_VARS];
    size_t nv = 0;
    int trimmed = -1;
    tpl_node *plural_expr = NULL, *assign = NULL;
    bool num_called_num = false;
    for (tpl_node *h = head, *next; h; h = next) {
        next = h->next;
        h->next = NULL;
        h->tail = NULL;
        bool comma = h->op & 1, has_expr = h->op & 2;
        if (nv && !comma) { tpl_pctx_error(c, h->off, "expected token ',', got '%.*s'", (int)h->val.len, h->val.u.s); return &c->dummy; }
        if (!nv && comma) { tpl_pctx_error(c, h->off, "expected token 'name', got ','"); return &c->dummy; }
        for (size_t i = 0; i < nv; i++)
            if (vlen[i] == h->val.len && memcmp(vname[i], h->val.u.s, vlen[i]) == 0) {
                tpl_pctx_assert(c, h->off, "translatable variable '%.*s' defined twice.", (int)h->val.len, h->val.u.s);
                return &c->dummy;
            }
        tpl_node *var;
        if (has_expr) var = h->a;
        else if (trimmed < 0 && (val_eq(h->val, "trimmed") || val_eq(h->val, "notrimmed"))) {
            trimmed = val_eq(h->val, "trimmed");
            continue;
        } else {
            var = syn_name(c, h->off, "");
            var->val = h->val;
        }
        if (nv == TRANS_MAX_VARS) { tpl_pctx_error(c, h->off, "too many translatable variables"); return &c->dummy; }
        if (!plural_expr) {
            if (var->kind == TPL_N_CALL) { /* evaluated once, into _trans */
                assign = tpl_p_node(c, TPL_N_SET, h->off, syn_name(c, h->off, "_trans"), var);
                var = syn_name(c, h->off, "_trans");
            }
            plural_expr = var;
            num_called_num = val_eq(h->val, "num");
        }
        vname[nv] = h->val.u.s;
        vlen[nv] = h->val.len;
        vexpr[nv++] = var;
    }
    const tpl_node *refs[TRANS_MAX_VARS];
    size_t nrefs = 0;
    tpl_value singular = trans_message(c, singular_body, refs, &nrefs, TRANS_MAX_VARS);
    if (nrefs && !plural_expr) {
        plural_expr = syn_name(c, refs[0]->off, "");
        plural_expr->val = refs[0]->val;
        num_called_num = val_eq(refs[0]->val, "num");
    }
    tpl_value plural = tpl_v_none();
    if (plural_part) {
        if (plural_part->a) {
            tpl_value pn = plural_part->a->val;
            size_t i = 0;
            while (i < nv && !(vlen[i] == pn.len && memcmp(vname[i], pn.u.s, pn.len) == 0)) i++;
            if (i == nv) {
                tpl_pctx_assert(c, plural_part->a->off, "unknown variable '%.*s' for pluralization", (int)pn.len, pn.u.s);
                return &c->dummy;
            }
            plural_expr = vexpr[i];
            num_called_num = val_eq(pn, "num");
        }
        plural = trans_message(c, plural_part->b, refs, &nrefs, TRANS_MAX_VARS);
        if (!plural_expr) { tpl_pctx_error(c, off, "pluralize without variables"); return &c->dummy; }
    }
    /* names referenced in the bodies but not in the head are plain name loads */
    for (size_t r = 0; r < nrefs; r++) {
        size_t i = 0;
        while (i < nv && !(vlen[i] == refs[r]->val.len && memcmp(vname[i], refs[r]->val.u.s, vlen[i]) == 0)) i++;
        if (i < nv) continue;
        if (nv == TRANS_MAX_VARS) { tpl_pctx_error(c, refs[r]->off, "too many translatable variables"); return &c->dummy; }
        tpl_node *var = syn_name(c, refs[r]->off, "");
        var->val = refs[r]->val;
        vname[nv] = refs[r]->val.u.s;
        vlen[nv] = refs[r]->val.len;
        vexpr[nv++] = var;
    }
    if (trimmed > 0) { /* the environment's ext.i18n.trimmed policy is False */
        singular = trans_trim(c, singular);
        if (plural.type == TPL_T_STR) plural = trans_trim(c, plural);
    }
    /* gettext / ngettext / pgettext / npgettext (singular[, plural, n], **variables) */
    const char *fn = context ? (plural_part ? "npgettext" : "pgettext") : (plural_part ? "ngettext" : "gettext");
    tpl_node *args = NULL;
    if (context) args = syn_arg(c, context->off, context);
    tpl_node *k = tpl_p_node(c, TPL_N_CONST, off, NULL, NULL);
    k->val = singular;
    args = tpl_node_append(args, syn_arg(c, off, k));
    if (plural_part) {
        tpl_node *pk = tpl_p_node(c, TPL_N_CONST, off, NULL, NULL);
        pk->val = plural;
        args = tpl_node_append(args, syn_arg(c, off, pk));
        args = tpl_node_append(args, syn_arg(c, off, plural_expr));
    }
    for (size_t i = 0; i < nv; i++) {
        if (num_called_num && plural_part && vlen[i] == 3 && memcmp(vname[i], "num", 3) == 0) continue;
        tpl_node *kw = tpl_p_node(c, TPL_N_KWARG, vexpr[i]->off, vexpr[i], NULL);
        kw->val = tpl_v_str(vname[i], vlen[i]);
        args = tpl_node_append(args, kw);
    }
    tpl_node *call = tpl_p_node(c, TPL_N_CALL, off, syn_name(c, off, fn), args);
    tpl_node *out = tpl_p_node(c, TPL_N_OUTPUT, off, call, NULL);
    return assign ? tpl_node_append(assign, out) : out;
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

tpl_node *tpl_p_dotted(tpl_pctx *c, tpl_node *name, tpl_token t)
{
    size_t n = (size_t)name->val.len + 1 + t.len;
    char *s = tpl_arena_alloc(c->arena, n + 1);
    if (!s) { tpl_pctx_nomem(c, t.off); return name; }
    memcpy(s, name->val.u.s, name->val.len);
    s[name->val.len] = '.';
    memcpy(s + name->val.len + 1, c->src + t.off, t.len);
    name->val = tpl_v_str(s, n);
    return name;
}

void tpl_p_bad_target(tpl_pctx *c, tpl_token open, const char *what)
{
    /* Jinja2 checks the whole target: a list or dict in a tuple makes it "can't assign to 'tuple'" */
    bool tuple = c->toks && c->ti < c->toks->n && tpl_jtok_kind(c->toks, c->ti) == TK_COMMA;
    for (size_t k = c->toks ? c->ti : 0; k > 0 && !tuple; k--)
        if (c->toks->v[k].off == open.off) { tuple = tpl_jtok_kind(c->toks, k - 1) == TK_COMMA; break; }
    tpl_pctx_error(c, open.off, "can't assign to '%s'", tuple ? "tuple" : what);
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
    /* Jinja2 reports the string token's line: the error points at the escape when it is on that line */
    uint32_t at = memchr(body, '\n', bad) ? t.off : t.off + 1 + (uint32_t)bad;
    if (len == -2 || len == -4) { /* Python's unicode-escape codec on `\\N{NAME}` */
        tpl_pctx_error(c, at, len == -2 ? "malformed \\N character escape" : "unknown Unicode character name");
        return tpl_v_str("", 0);
    }
    if (len == -3) { /* a surrogate: Python makes the string and fails when the output is written */
        unsigned cp = 0;
        for (size_t k = bad + 2, e = k + (body[bad + 1] == 'u' ? 4 : 8); k < e; k++)
            cp = cp * 16 + (unsigned)(body[k] <= '9' ? body[k] - '0' : (body[k] | 0x20) - 'a' + 10);
        tpl_pctx_error(c, t.off + 1 + (uint32_t)bad,
                       "'utf-8' codec can't encode character '\\u%04x': surrogates not allowed", cp);
        return tpl_v_str("", 0);
    }
    if (len < 0) { /* \\x, \\u or \\U: too few hex digits, or past U+10FFFF (the codec's texts) */
        char e = body[bad + 1];
        size_t want = e == 'x' ? 2 : e == 'u' ? 4 : 8, k = 0;
        while (k < want && bad + 2 + k < n && isxdigit((unsigned char)body[bad + 2 + k])) k++;
        if (k == want) tpl_pctx_error(c, at, "illegal Unicode character");
        else tpl_pctx_error(c, at, "truncated \\%c%s escape", e, e == 'x' ? "XX" : e == 'u' ? "XXXX" : "XXXXXXXX");
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
    tpl_node *b = tpl_p_string(c, t);
    if (b != &c->dummy) a->a = tpl_node_append(a->a, b); /* (joined by tpl_p_string_join) */
    return a;
}

tpl_node *tpl_p_string_join(tpl_pctx *c, tpl_node *a, bool keep_flags)
{
    if (!a || a->kind != TPL_N_CONST || !a->a) return a;
    size_t n = a->val.len;
    for (const tpl_node *p = a->a; p; p = p->next) n += p->val.len;
    char *s = tpl_arena_alloc(c->arena, n + 1);
    if (!s) { tpl_pctx_nomem(c, a->off); a->a = NULL; return a; }
    size_t k = a->val.len;
    if (k) memcpy(s, a->val.u.s, k);
    for (const tpl_node *p = a->a; p; p = p->next) {
        if (p->val.len) memcpy(s + k, p->val.u.s, p->val.len);
        k += p->val.len;
    }
    s[n] = 0;
    uint16_t fl = a->val.flags;
    a->val = tpl_v_str(s, n);
    if (keep_flags) a->val.flags = fl;
    a->a = NULL;
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
    char local[128], *buf = local;
    if (t.len >= sizeof local && !(buf = malloc((size_t)t.len + 1))) {
        tpl_pctx_nomem(c, t.off);
        return n;
    }
    strip_underscores(c->src + t.off, t.len, buf, (size_t)t.len + 1 > sizeof local ? (size_t)t.len + 1 : sizeof local);
    int base = 10;
    const char *digits = buf;
    if (buf[0] == '0' && (buf[1] == 'x' || buf[1] == 'X')) base = 16, digits = buf + 2;
    else if (buf[0] == '0' && (buf[1] == 'o' || buf[1] == 'O')) base = 8, digits = buf + 2;
    else if (buf[0] == '0' && (buf[1] == 'b' || buf[1] == 'B')) base = 2, digits = buf + 2;
    errno = 0;
    char *end;
    long long v = strtoll(digits, &end, base);
    if (errno == ERANGE) {
        /* past int64: a big int (Python's ints are unbounded); 2**63 negated is int64's smallest,
         * which the unary minus folds to an int (tpl_p_negate) */
        if (v == LLONG_MAX && strtoull(digits, &end, base) == (unsigned long long)LLONG_MAX + 1)
            n->op = TPL_CONST_INT_2_63;
        if (!tpl_big_parse(c->arena, digits, strlen(digits), base, &n->val))
            tpl_pctx_error(c, t.off, "integer literal too large (more than %d bits)", TPL_BIG_MAX_BITS);
    } else {
        n->val = tpl_v_int(v);
    }
    if (buf != local) free(buf);
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
/* An open if or for past its `else` (Jinja2 then looks for its end tag only). */
#define AFTER_ELSE 0x10000

static const char *block_end_of(int kind)
{
    switch (kind & ~AFTER_ELSE) {
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
    case TK_TRANS: return "endtrans";
    default: return NULL;
    }
}

static bool is_end_tag(int kind)
{
    switch (kind) {
    case TK_ENDIF: case TK_ENDFOR: case TK_ENDMACRO: case TK_ENDCALL: case TK_ENDFILTER: case TK_ENDSET:
    case TK_ENDWITH: case TK_ENDBLOCK: case TK_ENDAUTOESCAPE: case TK_ENDGENERATION:
    case TK_ENDTRANS:
        return true;
    default:
        return false;
    }
}

/* The tags Jinja2 looks for inside an open block (its parse_statements end tokens), quoted and
 * joined with " or ", and the block's own name. */
static const char *block_looking_for(int kind)
{
    if (kind == (TK_IF | AFTER_ELSE)) return "'endif'";
    if (kind == (TK_FOR | AFTER_ELSE)) return "'endfor'";
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
    case TK_TRANS: return "'endtrans'";
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

tpl_node *tpl_p_top(tpl_pctx *ctx, tpl_node *list, tpl_node *node)
{
    if (!ctx->top) return tpl_node_append(list, node);
    if (node && !ctx->failed && node != &ctx->dummy) ctx->top(ctx->top_data, node);
    return list;
}

bool tpl_jinja_streamable(const tpl_jtok_vec *toks)
{
    return toks->nonstream == 0; /* (the lexer looked at each block tag's first token) */
}

/* Whether every extends of the template is one the two-pass compile takes: a string constant at
 * the top level (not inside an if). Another picks its parent at render time, which only the
 * whole-tree compile does (tpl_comp_template). */
bool tpl_jinja_extends_static(const tpl_jtok_vec *t)
{
    long ifs = 0;
    for (size_t i = 1; i < t->n; i++) {
        if (tpl_jtok_kind(t, i - 1) != TK_BLOCK_BEGIN) continue;
        int k = tpl_jtok_kind(t, i);
        if (k == TK_IF) ifs++;
        else if (k == TK_ENDIF) ifs--;
        else if (k == TK_EXTENDS &&
                 (ifs != 0 || i + 2 >= t->n || tpl_jtok_kind(t, i + 1) != TK_STRING || tpl_jtok_kind(t, i + 2) != TK_BLOCK_END))
            return false;
    }
    return true;
}

void tpl_jinja_two_pass(const tpl_jtok_vec *toks, bool *loops, bool *extends)
{
    *loops = *extends = false;
    for (size_t i = 0; i < toks->n; i++) {
        int k = tpl_jtok_kind(toks, i);
        if (k == TK_EXTENDS) *extends = true;
        if (k == TK_FOR) *loops = true;
    }
}

tpl_node *tpl_jinja_parse_block(tpl_pctx *c, const tpl_jtok_vec *t, uint32_t off)
{
    tpl_arena *a = c->arena;
    size_t lo = 0, hi = t->n;
    while (lo < hi) { /* the first token at off or after */
        size_t mid = lo + (hi - lo) / 2;
        if (t->v[mid].off < off) lo = mid + 1;
        else hi = mid;
    }
    while (lo < t->n && t->v[lo].off == off && tpl_jtok_kind(t, lo) != TK_BLOCK) lo++;
    if (lo == 0 || lo >= t->n || tpl_jtok_kind(t, lo) != TK_BLOCK || tpl_jtok_kind(t, lo - 1) != TK_BLOCK_BEGIN) return NULL;
    size_t begin = lo - 1, end = lo + 1, depth = 1;
    for (; end < t->n && depth; end++) {
        if (tpl_jtok_kind(t, end - 1) != TK_BLOCK_BEGIN) continue;
        int k = tpl_jtok_kind(t, end);
        if (k == TK_BLOCK) depth++;
        else if (k == TK_ENDBLOCK) depth--;
    }
    while (end < t->n && tpl_jtok_kind(t, end) != TK_BLOCK_END) end++;
    if (end >= t->n) return NULL;
    end++;
    /* the tokens begin..end as a vector of their own (long tokens' indexes shifted) */
    tpl_jtok_vec sub = { 0 };
    sub.n = sub.cap = end - begin;
    sub.v = tpl_arena_alloc(a, sub.n * sizeof *sub.v);
    if (!sub.v) return NULL;
    memcpy(sub.v, t->v + begin, sub.n * sizeof *sub.v);
    for (size_t i = 0; i < t->nlongs; i++)
        if (t->longs[i].i >= begin && t->longs[i].i < end) {
            if (!sub.nlongs) sub.longs = &t->longs[i]; /* (contiguous: ascending by index) */
            sub.nlongs++;
        }
    tpl_jlong *longs = NULL;
    if (sub.nlongs) {
        longs = tpl_arena_alloc(a, sub.nlongs * sizeof *longs);
        if (!longs) return NULL;
        for (size_t i = 0; i < sub.nlongs; i++) longs[i] = (tpl_jlong){ (uint32_t)(sub.longs[i].i - begin), sub.longs[i].len };
        sub.longs = longs;
        sub.lcap = sub.nlongs;
    }
    if (!tpl_jinja_parse(c, &sub) || !c->root || !c->root->b) return NULL;
    return c->root->b;
}

int tpl_jinja_parse_block_body(tpl_pctx *c, const tpl_jtok_vec *t, uint32_t off, size_t min)
{
    size_t lo = 0, hi = t->n;
    while (lo < hi) { /* the first token at off or after */
        size_t mid = lo + (hi - lo) / 2;
        if (t->v[mid].off < off) lo = mid + 1;
        else hi = mid;
    }
    while (lo < t->n && t->v[lo].off == off && tpl_jtok_kind(t, lo) != TK_BLOCK) lo++;
    if (lo == 0 || lo >= t->n || tpl_jtok_kind(t, lo) != TK_BLOCK || tpl_jtok_kind(t, lo - 1) != TK_BLOCK_BEGIN) return -1;
    size_t begin = lo + 1, end = lo + 1, depth = 1;
    while (begin < t->n && tpl_jtok_kind(t, begin) != TK_BLOCK_END) begin++;
    begin++; /* past the tag */
    for (; end < t->n && depth; end++) {
        if (tpl_jtok_kind(t, end - 1) != TK_BLOCK_BEGIN) continue;
        int k = tpl_jtok_kind(t, end);
        if (k == TK_BLOCK) depth++;
        else if (k == TK_ENDBLOCK) depth--;
    }
    if (depth || end < 2 || end - 2 < begin) return -1;
    end -= 2; /* the endblock's `{%` */
    if (t->v[end].off - t->v[begin - 1].off < min) return 0; /* (from the tag's `%}`: comments have no tokens) */
    /* the tokens begin..end as a vector of their own (a view; long tokens' indexes shifted) */
    tpl_jtok_vec sub = { 0 };
    sub.v = t->v + begin;
    sub.n = sub.cap = end - begin;
    size_t first = 0;
    for (size_t i = 0; i < t->nlongs; i++)
        if (t->longs[i].i >= begin && t->longs[i].i < end) {
            if (!sub.nlongs) first = i; /* (contiguous: ascending by index) */
            sub.nlongs++;
        }
    tpl_jlong *longs = NULL;
    if (sub.nlongs) {
        if (!(longs = malloc(sub.nlongs * sizeof *longs))) { tpl_pctx_nomem(c, off); return -1; }
        for (size_t i = 0; i < sub.nlongs; i++)
            longs[i] = (tpl_jlong){ (uint32_t)(t->longs[first + i].i - begin), t->longs[first + i].len };
        sub.longs = longs;
        sub.lcap = sub.nlongs;
    }
    bool ok = tpl_jinja_parse(c, &sub);
    free(longs);
    return ok ? 1 : -1;
}

/* Jinja2's describe_token: a name (keywords are names) as itself, a literal by its type, the
 * tag ends by their names, an operator as itself. */
static void describe_token(const tpl_pctx *c, const tpl_token *t, char *out, size_t cap)
{
    const char *what = NULL;
    switch (t->kind) {
    case 0: what = "end of template"; break;
    case TK_VAR_END: what = "end of print statement"; break;
    case TK_BLOCK_END: what = "end of statement block"; break;
    case TK_VAR_BEGIN: what = "begin of print statement"; break;
    case TK_TEXT: what = "template data / text"; break;
    case TK_STRING: what = "string"; break;
    case TK_INTEGER: what = "integer"; break;
    case TK_FLOAT: what = "float"; break;
    default: break;
    }
    if (what) snprintf(out, cap, "%s", what);
    else snprintf(out, cap, "%.*s", (int)(t->len > 40 ? 40 : t->len), c->src + t->off);
}

/* Whether a token of kind k ends an operand (Jinja2's parser then looks for what follows an
 * expression rather than for an expression). */
static bool ends_operand(const tpl_pctx *c, int k, uint8_t flag)
{
    switch (k) {
    case TK_STRING: case TK_INTEGER: case TK_FLOAT: case TK_RPAREN: case TK_RBRACKET: case TK_RBRACE:
    case TK_NONE: case TK_TRUE: case TK_FALSE: case TK_NAME:
        return !(flag & 0x80);
    case TK_AND: case TK_OR: case TK_NOT: case TK_IN: case TK_IS: case TK_IF: case TK_ELSE:
        return false;
    default: /* keywords that stand as names (`loop.cycle`, `x.set`) */
        return k < TK_OR && k > TK_SEMICOLON && !(flag & 0x80);
    }
    (void)c;
}

/* Jinja2's TokenStream.expect(want) failing at token t: at the end of the template its own
 * wording. */
static void expect_fail(tpl_pctx *c, const tpl_token *t, const char *want, const char *got)
{
    if (t->kind == 0) tpl_pctx_error(c, t->off, "unexpected end of template, expected '%s'.", want);
    else tpl_pctx_error(c, t->off, "expected token '%s', got '%s'", want, got);
}

void tpl_jinja_syntax_error(tpl_pctx *c, const tpl_token *at)
{
    char got[64];
    tpl_token eof;
    const tpl_token *t = at;
    if (at->kind == 0) {
        /* the end of the template inside a tag: Jinja2's EOF token has the last token's line;
         * the error points just past that token (at its start when it spans lines) */
        eof = *at;
        eof.off = c->last_off + c->last_len;
        for (uint32_t i = c->last_off; i < c->last_off + c->last_len && i < c->n; i++)
            if (c->src[i] == '\n') { eof.off = c->last_off; break; }
        t = &eof;
    }
    describe_token(c, t, got, sizeof got);
    int prev = c->prev_kind;
    bool stmt_kw = (c->prev_flag & 0x80) != 0; /* the token before is the tag's name */
    bool tuple_end = t->kind == TK_VAR_END || t->kind == TK_BLOCK_END;
    int nk = !c->nest ? 0 : c->nest <= sizeof c->nest_kind ? c->nest_kind[c->nest - 1] : TPL_NK_LIST;
    if (c->tag == TK_BLOCK && t->kind == TK_SUB && !c->nest && !(stmt_kw && prev == TK_BLOCK)) { /* parse_block */
        tpl_pctx_error(c, t->off, "Block names in Jinja have to be valid Python identifiers and may not contain hyphens,"
                                  " use an underscore instead.");
        return;
    }
    if (c->tag == TK_FROM && (prev == TK_IMPORT || (prev == TK_COMMA && (c->tag_seen & 4)))) { /* the names imported */
        expect_fail(c, t, "name", got);
        return;
    }
    if ((prev == TK_WITH || prev == TK_WITHOUT) && !c->nest && t->kind != TK_CONTEXT &&
        (c->tag == TK_INCLUDE || c->tag == TK_IMPORT || c->tag == TK_FROM)) {
        /* parse_import_context takes `with`/`without` only before `context`; the statement then ends there */
        tpl_pctx_error(c, c->last_off, "expected token 'end of statement block', got '%.*s'", (int)c->last_len, c->src + c->last_off);
        return;
    }
    if (prev == TK_IGNORE && c->tag == TK_INCLUDE && !c->nest) {
        /* parse_include skips `ignore` only when `missing` follows; the statement then ends there */
        tpl_pctx_error(c, c->last_off, "expected token 'end of statement block', got '%.*s'", (int)c->last_len, c->src + c->last_off);
        return;
    }
    if ((nk & 0xF) == TPL_NK_CALL && (nk & TPL_NK_KW) &&
        (prev == TK_COMMA || (t->kind == 0 && prev == TK_NAME && c->prev2_kind == TK_COMMA))) {
        /* parse_call_args: an argument that is not `name=` after a keyword argument (at the end
         * of the template, a name is not followed by its `=`) */
        tpl_pctx_error(c, c->nest_off[c->nest - 1], "invalid syntax for function call expression"); /* (at its `(`) */
        return;
    }
    if ((nk & 0xF) == TPL_NK_SIG && (prev == TK_LPAREN || prev == TK_COMMA)) { /* parse_signature's names */
        expect_fail(c, t, "name", got);
        return;
    }
    if (stmt_kw && (prev == TK_ELSE || prev == TK_BREAK || prev == TK_CONTINUE || prev == TK_GENERATION ||
                    (prev != TK_ENDTRANS && is_end_tag(prev)))) { /* tags with nothing after their name */
        expect_fail(c, t, "end of statement block", got);
        return;
    }
    if (c->tag == TK_CALL && !c->nest && prev != TK_COLON) {
        /* parse_call_block: the expression after `call` (and its parameters) must be a call; a
         * complete call followed by what cannot continue an expression ends the statement */
        bool start = (stmt_kw && prev == TK_CALL) || (prev == TK_RPAREN && (c->tag_seen & 64));
        bool cont = false;
        switch (t->kind) {
        case TK_ADD: case TK_SUB: case TK_MUL: case TK_DIV: case TK_FLOORDIV: case TK_MOD: case TK_POW:
        case TK_TILDE: case TK_PIPE: case TK_IS: case TK_IF: case TK_AND: case TK_OR: case TK_NOT: case TK_IN:
        case TK_EQ: case TK_NE: case TK_LT: case TK_GT: case TK_LTEQ: case TK_GTEQ: case TK_DOT:
        case TK_LBRACKET: case TK_LPAREN:
            cont = true;
            break;
        default:
            break;
        }
        if (start ? t->kind != TK_BLOCK_END && t->kind != 0 && t->kind != TK_COLON && t->kind != TK_COMMA
                  : ends_operand(c, prev, c->prev_flag) && (cont || prev != TK_RPAREN)) {
            tpl_pctx_error(c, c->tag_off, "expected call");
            return;
        }
        if (start) { /* (parse_primary: nothing that starts an expression) */
            tpl_pctx_error(c, t->off, "unexpected '%s'", got);
            return;
        }
    }
    if (prev == TK_COLON && !c->nest && c->tag != TK_VAR_BEGIN) { /* parse_statements' optional `:` */
        expect_fail(c, t, "end of statement block", got);
        return;
    }
    if (prev == TK_AS && !c->nest && (c->tag == TK_IMPORT || (c->tag == TK_FROM && c->prev2_kind == TK_NAME))) {
        expect_fail(c, t, "name", got); /* the alias after `as`: `{% import "a" as %}` */
        return;
    }
    if (ends_operand(c, prev, c->prev_flag)) {
        const char *want = NULL;
        if (c->nest) want = (nk & 0xF) == TPL_NK_GROUP ? ")" : (nk & 0xF) == TPL_NK_DICT && !(nk & TPL_NK_COLON) ? ":" : ",";
        else if (c->tag == TK_WITH) want = c->tag_seen & 16 ? "," : "=";
        else if (c->tag == TK_VAR_BEGIN) want = "end of print statement";
        else if (c->tag == TK_FOR && !(c->tag_seen & 1)) want = "in";
        else if (c->tag == TK_IMPORT && !(c->tag_seen & 2)) want = "as";
        else if (c->tag == TK_FROM && !(c->tag_seen & 4)) want = "import";
        else if (c->tag == TK_MACRO && !(c->tag_seen & 8)) want = "("; /* parse_signature */
        else want = "end of statement block";
        expect_fail(c, t, want, got);
        return;
    }
    if (prev == TK_PIPE || prev == TK_IS || (prev == TK_NOT && c->prev2_kind == TK_IS)
        || (prev == TK_DOT && c->tag == TK_SET && !c->nest && !(c->tag_seen & 16)) || (stmt_kw && (prev == TK_BLOCK || prev == TK_MACRO || prev == TK_FILTER))
        || (prev == TK_IMPORT && c->tag == TK_FROM) || (prev == TK_DOT && c->in_fname)) {
        expect_fail(c, t, "name", got);
        return;
    }
    if (prev == TK_DOT) { tpl_pctx_error(c, t->off, "expected name or number"); return; }
    bool with_target = c->tag == TK_WITH && !c->nest && ((stmt_kw && prev == TK_WITH) || prev == TK_COMMA);
    bool in_target = with_target || (!c->nest && ((stmt_kw && (prev == TK_SET || prev == TK_FOR)) ||
        (prev == TK_COMMA && ((c->tag == TK_FOR && !(c->tag_seen & 1)) || (c->tag == TK_SET && !(c->tag_seen & 16))))));
    if (in_target && (t->kind == TK_STRING || t->kind == TK_INTEGER || t->kind == TK_FLOAT || t->kind == TK_TRUE ||
                      t->kind == TK_FALSE || t->kind == TK_NONE)) {
        /* parse_assign_target: a literal (true, none... too) in the target's tuple of primaries */
        bool tuple = prev == TK_COMMA && (c->tag != TK_WITH || (c->tag_seen & 32));
        if (!tuple && c->toks && at->kind) {
            size_t k = c->ti + 1;
            while (t->kind == TK_STRING && k < c->toks->n && tpl_jtok_kind(c->toks, k) == TK_STRING) k++;
            tuple = k < c->toks->n && tpl_jtok_kind(c->toks, k) == TK_COMMA;
        }
        tpl_pctx_error(c, t->off, "can't assign to '%s'", tuple ? "tuple" : "const");
        return;
    }
    if (prev == TK_COMMA && tuple_end && c->tag == TK_FOR && !c->nest && !(c->tag_seen & 1)) {
        expect_fail(c, t, "in", got); /* parse_tuple ends the target's tuple at the tag's end */
        return;
    }
    if (with_target && prev == TK_COMMA && tuple_end && (c->tag_seen & 32)) {
        expect_fail(c, t, "=", got);
        return;
    }
    /* parse_tuple with nothing before its end: the print statement, if/elif, for's target and
     * iterable, set's target and value */
    if (tuple_end && (prev == TK_VAR_BEGIN || (stmt_kw && (prev == TK_IF || prev == TK_ELIF || prev == TK_FOR || prev == TK_SET))
                      || (prev == TK_IN && c->tag == TK_FOR && !c->nest) || (prev == TK_ASSIGN && c->tag == TK_SET)
                      || (with_target && prev == TK_COMMA && !(c->tag_seen & 32)))) {
        tpl_pctx_error(c, t->off, "Expected an expression, got '%s'", got);
        return;
    }
    tpl_pctx_error(c, t->off, "unexpected '%s'", got);
}

/* note_token's record of a tag's start, a bracket or a separator (the tokens is_structural
 * names, or a tag's first token). */
static __attribute__((noinline)) void note_structure(tpl_pctx *c, const tpl_token *t)
{
    if (t->kind == TK_VAR_BEGIN) { c->tag = TK_VAR_BEGIN; c->tag_off = t->off; c->nest = 0; c->tag_seen = 0; }
    else if (t->flag & 0x80) { c->tag = t->kind; c->tag_off = t->off; c->nest = 0; c->tag_seen = 0; }
    else if (t->kind == TK_LPAREN || t->kind == TK_LBRACKET || t->kind == TK_LBRACE) {
        int k = t->kind == TK_LBRACE ? TPL_NK_DICT : t->kind == TK_LBRACKET ? TPL_NK_LIST
              : (c->tag == TK_MACRO && !c->nest && !(c->tag_seen & 8))
                || (c->tag == TK_CALL && c->prev_kind == TK_CALL && (c->prev_flag & 0x80)) ? TPL_NK_SIG
              : ends_operand(c, c->prev_kind, c->prev_flag) ? TPL_NK_CALL : TPL_NK_GROUP;
        if (c->nest < sizeof c->nest_kind) { c->nest_kind[c->nest] = (uint8_t)k; c->nest_off[c->nest] = t->off; }
        if (!c->nest) c->tag_seen |= 8;
        c->nest++;
    }
    else if ((t->kind == TK_RPAREN || t->kind == TK_RBRACKET || t->kind == TK_RBRACE) && c->nest) {
        c->tag_seen = (uint8_t)(c->nest == 1 && c->nest_kind[0] == TPL_NK_SIG ? c->tag_seen | 64 : c->tag_seen & ~64);
        c->nest--;
    }
    else if (c->nest && c->nest <= sizeof c->nest_kind && (t->kind == TK_ASSIGN || t->kind == TK_COLON || t->kind == TK_COMMA)) {
        uint8_t *k = &c->nest_kind[c->nest - 1];
        if (t->kind == TK_ASSIGN && (*k & 0xF) == TPL_NK_CALL) *k |= TPL_NK_KW;
        else if (t->kind == TK_COLON && (*k & 0xF) == TPL_NK_DICT) *k |= TPL_NK_COLON;
        else if (t->kind == TK_COMMA && (*k & 0xF) == TPL_NK_DICT) *k &= (uint8_t)~TPL_NK_COLON;
    }
    else if (t->kind == TK_ASSIGN && !c->nest) c->tag_seen |= 16;
    else if (t->kind == TK_COMMA && !c->nest && c->tag == TK_WITH)
        c->tag_seen = (uint8_t)(c->tag_seen & 16 ? c->tag_seen & ~(16 | 32) : c->tag_seen | 32);
    else if (t->kind == TK_IN && !c->nest) c->tag_seen |= 1;
    else if (t->kind == TK_AS && !c->nest) c->tag_seen |= 2;
    else if (t->kind == TK_IMPORT && !c->nest && ends_operand(c, c->prev_kind, c->prev_flag)) c->tag_seen |= 4;
}

/* The kinds note_structure acts on besides a tag's first token (any other kind passes through
 * its chain of tests unchanged). */
static inline bool is_structural(int kind)
{
    switch (kind) {
    case TK_VAR_BEGIN: case TK_LPAREN: case TK_LBRACKET: case TK_LBRACE: case TK_RPAREN: case TK_RBRACKET:
    case TK_RBRACE: case TK_ASSIGN: case TK_COLON: case TK_COMMA: case TK_IN: case TK_AS: case TK_IMPORT:
        return true;
    default:
        return false;
    }
}

/* The driver's record of token t for tpl_jinja_syntax_error (after t was parsed): most tokens
 * (names, operators, literals, a tag's end, text) only move the previous kinds along (issue 21,
 * compile time: the chain of tests ran for every token). */
static void note_token(tpl_pctx *c, const tpl_token *t)
{
    if ((t->flag & 0x80) || is_structural(t->kind)) note_structure(c, t);
    /* parse_filter / parse_test: `name(.name)*` after `|`, `is` (`is not`) or the filter tag */
    if (t->kind != TK_DOT)
        c->in_fname = (t->kind == TK_NAME || (t->kind > TK_SEMICOLON && t->kind < TK_OR))
                      && (c->prev_kind == TK_PIPE || c->prev_kind == TK_IS || (c->prev_kind == TK_NOT && c->prev2_kind == TK_IS)
                          || (c->prev_kind == TK_FILTER && (c->prev_flag & 0x80)) || (c->in_fname && c->prev_kind == TK_DOT));
    int kind = t->kind;
    if (kind > TK_SEMICOLON && kind < TK_OR && !(t->flag & 0x80) && c->prev_kind >= TK_OR && !ends_operand(c, c->prev_kind, c->prev_flag))
        kind = TK_NAME; /* a keyword after an operator is a name (`{% from "a" and import %}`) */
    c->prev2_kind = c->prev_kind;
    c->prev_kind = kind;
    c->prev_flag = t->flag;
    /* (one bit test: a token that ends a tag or is text) */
    _Static_assert(TK_VAR_END < 32 && TK_BLOCK_END < 32 && TK_TEXT < 32, "tag-ending kinds fit a 32-bit mask");
    c->in_tag = (unsigned)t->kind >= 32 || !((1u << TK_VAR_END | 1u << TK_BLOCK_END | 1u << TK_TEXT) >> t->kind & 1);
    c->last_off = t->off;
    c->last_len = t->len;
}

bool tpl_jinja_parse(tpl_pctx *c, const tpl_jtok_vec *toks)
{
    size_t n = toks->n;
    void *parser = JinjaParseAlloc(malloc);
    if (!parser) { tpl_pctx_nomem(c, 0); return false; }
    c->toks = toks;
    bool first_in_block = false;
    /* open block tags, to say which one an unexpected end of template left unclosed */
    struct open_tag { int kind; uint32_t off; } open[64];
    size_t nopen = 0, deep = 0;
    for (size_t i = 0; i < n && !c->failed; i++) {
        tpl_token t = tpl_jtok_get(toks, i);
        if (t.kind == TK_BLOCK_BEGIN) { first_in_block = true; continue; }
        if (first_in_block) {
            t.flag |= 0x80;
            first_in_block = false;
            if (t.kind == TK_STRING && memchr(c->src + t.off, '\\', t.len)) {
                unquote(c, t); /* (the lexer decodes a string before the parser sees the tag) */
                if (c->failed) break;
            }
            if (t.kind == TK_BLOCK_END || !(t.len && ((unsigned)((c->src[t.off] | 0x20) - 'a') < 26u || c->src[t.off] == '_'
                                                      || (unsigned char)c->src[t.off] >= 0x80))) {
                tpl_pctx_error(c, t.off, "tag name expected"); /* (Jinja2: a tag's first token must be a name) */
                break;
            }
            if (nopen && open[nopen - 1].kind == TK_TRANS && t.kind != TK_ENDTRANS && t.kind != TK_PLURALIZE) {
                /* jinja2.ext.i18n's _parse_block */
                if (t.kind == TK_TRANS) tpl_pctx_error(c, t.off, "trans blocks can't be nested; did you mean `endtrans`?");
                else tpl_pctx_error(c, t.off, "control structures in translatable sections are not allowed; saw `%.*s`",
                                    (int)(t.len > 40 ? 40 : t.len), c->src + t.off);
                break;
            }
            size_t nopen_before = nopen;
            if (t.kind == TK_GENERATION && c->no_generation) { /* (the hf profile's extension) */
                int kinds[64];
                size_t nk = nopen < 64 ? nopen : 64;
                for (size_t k = 0; k < nk; k++) kinds[k] = open[k].kind;
                tpl_pctx_error(c, t.off, "Encountered unknown tag '%.*s'.", (int)t.len, c->src + t.off);
                unknown_tag_hint(c, &t, kinds, nk);
                break;
            }
            bool opens = block_end_of(t.kind) != NULL;
            if (t.kind == TK_SET) /* only `{% set x %}` (no `=`) is a block */
                for (size_t k = i + 1; k < n && tpl_jtok_kind(toks, k) != TK_BLOCK_END; k++)
                    if (tpl_jtok_kind(toks, k) == TK_ASSIGN) { opens = false; break; }
            if (opens) {
                if (nopen < 64) open[nopen++] = (struct open_tag){ t.kind, toks->v[i - 1].off };
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
                if (((t.kind == TK_BREAK || t.kind == TK_CONTINUE) && c->no_loop_controls) || (t.kind == TK_DO && c->no_do))
                    tpl_pctx_error(c, t.off, "Encountered unknown tag '%.*s'.", (int)t.len, c->src + t.off);
                else {
                    c->ti = i;
                    JinjaParse(parser, t.kind, t, c);
                }
                if (c->failed && c->err_off == t.off) unknown_tag_hint(c, &t, kinds, nk);
                if (t.kind == TK_ELSE && nopen && (open[nopen - 1].kind == TK_IF || open[nopen - 1].kind == TK_FOR))
                    open[nopen - 1].kind |= AFTER_ELSE;
                note_token(c, &t);
                continue;
            }
        }
        c->cur_off = t.off;
        if (c->lex_failed && i + 1 == n && c->prev_kind == TK_DOT && !c->in_fname)
            break; /* parse_subscript takes the token after `.` before it looks at it: the scanner's error comes first */
        if (c->prev_kind == TK_COMMA && c->nest && c->nest <= sizeof c->nest_kind &&
            c->nest_kind[c->nest - 1] == (TPL_NK_CALL | TPL_NK_KW) && t.kind != TK_RPAREN && t.kind != TK_MUL &&
            t.kind != TK_POW && !((t.kind == TK_NAME || (t.kind < TK_OR && t.kind > TK_SEMICOLON)) && i + 1 < n &&
                                  tpl_jtok_kind(toks, i + 1) == TK_ASSIGN)) {
            /* parse_call_args: after a keyword argument only `name=`, `*args` or `**kwargs` */
            tpl_pctx_error(c, c->nest_off[c->nest - 1], "invalid syntax for function call expression");
            break;
        }
        if (t.kind == TK_STRING && memchr(c->src + t.off, '\\', t.len)) {
            /* Jinja2's lexer decodes a string's escapes as it makes the token, before its parser
             * looks at it: `{{ x 'a\\x' }}` is "truncated \\xXX escape" */
            unquote(c, t);
            if (c->failed) break;
        }
        if (t.kind == TK_NOT && ends_operand(c, c->prev_kind, c->prev_flag) &&
            (i + 1 < n ? tpl_jtok_kind(toks, i + 1) != TK_IN : !c->lex_failed)) {
            /* parse_compare takes `not` after an operand only before `in`; the expression then
             * ends at the `not` (`{{ a not b }}`: "expected token 'end of print statement'") */
            tpl_jinja_syntax_error(c, &t);
            break;
        }
        c->ti = i;
        JinjaParse(parser, t.kind, t, c);
        note_token(c, &t);
    }
    if (!c->failed && !c->lex_failed) {
        tpl_token eof = { .off = (uint32_t)c->n };
        JinjaParse(parser, 0, eof, c);
        if (c->failed && !c->in_tag && c->err_off == (uint32_t)c->n && nopen) {
            /* Jinja2's _fail_ut_eof, on the line of its EOF token: the last token's */
            int inner = open[nopen - 1].kind;
            const char *end = block_end_of(inner);
            c->err_off = n ? toks->v[n - 1].off : open[nopen - 1].off;
            snprintf(c->msg, sizeof c->msg,
                     "Unexpected end of template. Jinja was looking for the following tags: %s."
                     " The innermost block that needs to be closed is '%s'.", block_looking_for(inner), end + 3);
        }
    }
    JinjaParseFree(parser, free);
    return !c->failed && c->root && tpl_p_depth_ok(c, c->arena, c->root);
}

bool tpl_jinja_parse_lex_failed(tpl_pctx *c, const tpl_jtok_vec *toks, const tpl_lex_result *lr)
{
    c->lex_failed = true;
    tpl_jinja_parse(c, toks);
    if (!c->failed) {
        c->failed = true;
        c->err_off = lr->err_off;
        snprintf(c->msg, sizeof c->msg, "%s", lr->msg);
    }
    return false;
}

bool tpl_p_depth_ok(tpl_pctx *c, const tpl_arena *a, const tpl_node *root)
{
    size_t used = 0;
    for (const tpl_chunk *k = a ? a->head : NULL; k; k = k->next) used += k->used;
    if (a && used / sizeof(tpl_node) + 1 <= TPL_MAX_AST_DEPTH) return true;
    return tpl_p_check_depth(c, root);
}

bool tpl_p_check_depth(tpl_pctx *c, const tpl_node *root)
{
    /* an explicit stack: the check itself must not recurse as deep as the tree */
    struct item { const tpl_node *n; uint32_t depth; } local[64], *stack = local;
    size_t len = 0, cap = 64;
    bool ok = true;
    if (root) stack[len++] = (struct item){ root, 1 };
    while (len && ok) {
        struct item it = stack[--len];
        for (const tpl_node *n = it.n; n; n = n->next) { /* siblings share a depth */
            if (it.depth > TPL_MAX_AST_DEPTH) {
                tpl_pctx_error(c, n->off, "nested too deeply (more than %d levels of expressions and statements)",
                               TPL_MAX_AST_DEPTH);
                ok = false;
                break;
            }
            const tpl_node *kids[5] = { n->a, n->b, n->c, tpl_node_d(n), tpl_node_e(n) };
            for (int i = 0; i < 5; i++) {
                if (!kids[i]) continue;
                if (len == cap) { /* past the 64 on the C stack: the heap */
                    struct item *ns = stack == local ? malloc(cap * 2 * sizeof *stack)
                                                     : realloc(stack, cap * 2 * sizeof *stack);
                    if (!ns) { tpl_pctx_nomem(c, n->off); ok = false; break; }
                    if (stack == local) memcpy(ns, local, sizeof local);
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
    if (stack != local) free(stack);
    return ok;
}

bool tpl_p_blank_body(const tpl_node *body)
{
    for (const tpl_node *n = body; n; n = n->next) {
        if (n->kind != TPL_N_TEXT) return false;
        for (size_t i = 0; i < n->val.len;)
            if (!tpl_py_isspace(tpl_utf8_next(n->val.u.s, n->val.len, &i))) return false;
    }
    return true;
}

tpl_node *tpl_p_negate(tpl_pctx *c, uint32_t off, tpl_node *e)
{
    if (e && e->kind == TPL_N_CONST && e->op == TPL_CONST_INT_2_63 && !e->next) {
        e->op = 0;
        e->val = tpl_v_int(INT64_MIN);
        e->off = off;
        return e;
    }
    tpl_node *n = tpl_p_node(c, TPL_N_UNOP, off, e, NULL);
    if (n) n->op = TPL_AOP_NEG;
    return n;
}
