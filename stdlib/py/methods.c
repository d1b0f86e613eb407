/* Python methods on str, dict and list values, and Python's string formatting: str.format with
 * the format-spec mini-language, and printf-style `%` formatting. */
#include "../builtins.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OOM() tpl_vm_nomem(vm)
/* The most digits after the point a float is formatted with ({:.Nf}, %.Nf): beyond is a limit
 * error (Python goes on; a prompt never needs it). */
#define TPL_MAX_FLOAT_PREC 1000

/* ------------------------------------------------------------------ helpers */

static tpl_arena *AR(tpl_vm *vm) { return tpl_vm_arena(vm); }

static int need_str(tpl_vm *vm, tpl_value self, const char *meth)
{
    if (self.type == TPL_T_STR)
        return 0;
    if (self.type == TPL_T_UNDEF)
        return tpl_undefined_error(vm, self);
    return tpl_vm_error(vm, TPL_ERR_TYPE, "descriptor '%s' for 'str' objects doesn't apply to a '%s' object",
                        meth, tpl_type_name(vm, self));
}

static int push(tpl_vm *vm, tpl_list *l, tpl_value v)
{
    return tpl_list_push(AR(vm), l, v) ? 0 : OOM();
}

/* The code point before byte offset end (start of that code point in *at). */
static uint32_t utf8_prev(const char *s, size_t end, size_t *at)
{
    size_t i = end - 1;
    while (i > 0 && ((unsigned char)s[i] & 0xC0) == 0x80 && end - i < 4)
        i--;
    size_t j = i;
    uint32_t c = tpl_utf8_next(s, end, &j);
    if (j != end) { /* invalid sequence: one byte */
        i = end - 1;
        c = 0xFFFD;
    }
    *at = i;
    return c;
}

/* Number of code points in s (ASCII fast path). */
static size_t cplen(tpl_value s)
{
    return tpl_utf8_len(s.u.s, s.len);
}

/* Python's slice index adjustment (start/end may be unset or None), in code points, then
 * converted to byte offsets. Returns false when start > len (empty, "out of range"). */
typedef struct { size_t bstart, bend; int64_t cstart, cend, clen; } span_t;

static int adjust_span(tpl_vm *vm, tpl_value s, tpl_value vs, tpl_value ve, span_t *sp)
{
    int64_t len = (int64_t)cplen(s);
    int64_t start = 0, end = len;
    if (tpl_given(vs) && vs.type != TPL_T_NONE) {
        if (vs.type != TPL_T_INT && vs.type != TPL_T_BOOL)
            return tpl_vm_error(vm, TPL_ERR_TYPE, "slice indices must be integers or None or have an __index__ method");
        start = vs.u.i;
    }
    if (tpl_given(ve) && ve.type != TPL_T_NONE) {
        if (ve.type != TPL_T_INT && ve.type != TPL_T_BOOL)
            return tpl_vm_error(vm, TPL_ERR_TYPE, "slice indices must be integers or None or have an __index__ method");
        end = ve.u.i;
    }
    if (end > len) end = len;
    else if (end < 0) { end += len; if (end < 0) end = 0; }
    if (start < 0) { start += len; if (start < 0) start = 0; }
    sp->cstart = start;
    sp->cend = end;
    sp->clen = len;
    bool ascii = (int64_t)s.len == len;
    size_t bs = start >= len ? s.len : (ascii ? (size_t)start : tpl_utf8_offset(s.u.s, s.len, (size_t)start));
    size_t be = end >= len ? s.len : (ascii ? (size_t)end : tpl_utf8_offset(s.u.s, s.len, (size_t)end));
    sp->bstart = bs;
    sp->bend = be;
    return 0;
}

/* Linear-time substring search (runtime/value.h). */
#define memmem_ tpl_memmem
#define memrmem_ tpl_memrmem

static tpl_value substr(tpl_value s, size_t from, size_t to)
{
    return tpl_v_str(s.u.s + from, to - from);
}

/* ------------------------------------------------------------------ str methods */

static int strip_common(tpl_vm *vm, tpl_value *a, tpl_value *out, int which, const char *name)
{
    if (need_str(vm, a[0], name) < 0)
        return -1;
    tpl_value c = a[1];
    if (!tpl_given(c) || c.type == TPL_T_NONE) {
        *out = tpl_py_strip(a[0], which, NULL, 0);
    } else if (c.type == TPL_T_STR) {
        *out = tpl_py_strip(a[0], which, c.u.s, c.len);
    } else {
        return tpl_vm_error(vm, TPL_ERR_TYPE, "%s arg must be None or str", name);
    }
    out->flags = a[0].flags & TPL_F_SAFE;
    return 0;
}

int m_str_strip(tpl_vm *vm, tpl_value *a, tpl_value *out) { return strip_common(vm, a, out, 3, "strip"); }
int m_str_lstrip(tpl_vm *vm, tpl_value *a, tpl_value *out) { return strip_common(vm, a, out, 1, "lstrip"); }
int m_str_rstrip(tpl_vm *vm, tpl_value *a, tpl_value *out) { return strip_common(vm, a, out, 2, "rstrip"); }

static int split_args(tpl_vm *vm, tpl_value *a, const char *name, tpl_value *sep, int64_t *maxsplit)
{
    if (need_str(vm, a[0], name) < 0)
        return -1;
    *sep = a[1];
    if (sep->type == TPL_T_UNSET)
        sep->type = TPL_T_NONE;
    if (sep->type != TPL_T_NONE) {
        if (sep->type != TPL_T_STR)
            return tpl_vm_error(vm, TPL_ERR_TYPE, "must be str or None, not %s", tpl_type_name(vm, *sep));
        if (sep->len == 0)
            return tpl_vm_error(vm, TPL_ERR_VALUE, "empty separator");
    }
    *maxsplit = -1;
    if (tpl_given(a[2]) && tpl_arg_index(vm, a[2], maxsplit) < 0)
        return -1;
    if (*maxsplit < 0)
        *maxsplit = INT64_MAX;
    return 0;
}

static bool ws_at(const char *s, size_t n, size_t i, size_t *next)
{
    unsigned char c = (unsigned char)s[i];
    if (c < 0x80) {
        *next = i + 1;
        return c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F);
    }
    size_t j = i;
    uint32_t cp = tpl_utf8_next(s, n, &j);
    *next = j;
    return tpl_py_isspace(cp);
}

int m_str_split(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value sep;
    int64_t maxc;
    if (split_args(vm, a, "split", &sep, &maxc) < 0)
        return -1;
    tpl_value s = a[0];
    tpl_list *l = tpl_list_new(AR(vm), 4);
    if (!l)
        return OOM();
    const char *p = s.u.s;
    size_t n = s.len;
    if (sep.type == TPL_T_NONE) {
        size_t i = 0, nx;
        while (maxc-- > 0) {
            while (i < n && ws_at(p, n, i, &nx)) i = nx;
            if (i == n) break;
            size_t j = i;
            while (i < n && !ws_at(p, n, i, &nx)) i = nx;
            if (push(vm, l, substr(s, j, i)) < 0) return -1;
        }
        if (i < n) {
            while (i < n && ws_at(p, n, i, &nx)) i = nx;
            if (i != n && push(vm, l, substr(s, i, n)) < 0) return -1;
        }
    } else {
        size_t i = 0;
        while (maxc-- > 0) {
            const char *q = memmem_(p + i, n - i, sep.u.s, sep.len);
            if (!q) break;
            size_t at = (size_t)(q - p);
            if (push(vm, l, substr(s, i, at)) < 0) return -1;
            i = at + sep.len;
        }
        if (push(vm, l, substr(s, i, n)) < 0) return -1;
    }
    *out = tpl_v_list(l);
    return 0;
}

static bool ws_before(const char *s, size_t end, size_t *at)
{
    unsigned char c = (unsigned char)s[end - 1];
    if (c < 0x80) {
        *at = end - 1;
        return c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F);
    }
    uint32_t cp = utf8_prev(s, end, at);
    return tpl_py_isspace(cp);
}

static void reverse_list(tpl_list *l)
{
    for (uint32_t i = 0, j = l->len ? l->len - 1 : 0; i < j; i++, j--) {
        tpl_value t = l->items[i];
        l->items[i] = l->items[j];
        l->items[j] = t;
    }
}

int m_str_rsplit(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value sep;
    int64_t maxc;
    if (split_args(vm, a, "rsplit", &sep, &maxc) < 0)
        return -1;
    tpl_value s = a[0];
    tpl_list *l = tpl_list_new(AR(vm), 4);
    if (!l)
        return OOM();
    const char *p = s.u.s;
    size_t n = s.len;
    if (sep.type == TPL_T_NONE) {
        size_t i = n, at; /* i = end of the unprocessed prefix */
        while (maxc-- > 0) {
            while (i > 0 && ws_before(p, i, &at)) i = at;
            if (i == 0) break;
            size_t j = i;
            while (i > 0 && !ws_before(p, i, &at)) i = at;
            if (push(vm, l, substr(s, i, j)) < 0) return -1;
        }
        if (i > 0) {
            while (i > 0 && ws_before(p, i, &at)) i = at;
            if (i > 0 && push(vm, l, substr(s, 0, i)) < 0) return -1;
        }
    } else {
        size_t end = n;
        while (maxc-- > 0) {
            const char *q = memrmem_(p, end, sep.u.s, sep.len);
            if (!q) break;
            size_t at = (size_t)(q - p);
            if (push(vm, l, substr(s, at + sep.len, end)) < 0) return -1;
            end = at;
        }
        if (push(vm, l, substr(s, 0, end)) < 0) return -1;
    }
    reverse_list(l);
    *out = tpl_v_list(l);
    return 0;
}

/* Python's line boundaries; returns the boundary's length in bytes at s[i] (0 if none). */
static size_t line_break_at(const char *s, size_t n, size_t i)
{
    unsigned char c = (unsigned char)s[i];
    if (c == '\r')
        return (i + 1 < n && s[i + 1] == '\n') ? 2 : 1;
    if (c == '\n' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E)
        return 1;
    if (c == 0xC2 && i + 1 < n && (unsigned char)s[i + 1] == 0x85)
        return 2;
    if (c == 0xE2 && i + 2 < n && (unsigned char)s[i + 1] == 0x80 &&
        ((unsigned char)s[i + 2] == 0xA8 || (unsigned char)s[i + 2] == 0xA9))
        return 3;
    return 0;
}

int tpl_splitlines(tpl_vm *vm, tpl_value s, bool keepends, tpl_list **out)
{
    tpl_list *l = tpl_list_new(AR(vm), 4);
    if (!l)
        return OOM();
    size_t i = 0, start = 0, n = s.len;
    while (i < n) {
        size_t k = line_break_at(s.u.s, n, i);
        if (k) {
            tpl_value line = substr(s, start, keepends ? i + k : i);
            line.flags = s.flags & TPL_F_SAFE;
            if (push(vm, l, line) < 0) return -1;
            i += k;
            start = i;
        } else {
            i++;
        }
    }
    if (start < n) {
        tpl_value line = substr(s, start, n);
        line.flags = s.flags & TPL_F_SAFE;
        if (push(vm, l, line) < 0) return -1;
    }
    *out = l;
    return 0;
}

int m_str_splitlines(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (need_str(vm, a[0], "splitlines") < 0)
        return -1;
    int keep = tpl_arg_truthy(vm, a[1], false);
    if (keep < 0)
        return -1;
    tpl_list *l;
    if (tpl_splitlines(vm, a[0], keep, &l) < 0)
        return -1;
    *out = tpl_v_list(l);
    return 0;
}

static int tailmatch(tpl_vm *vm, tpl_value *a, tpl_value *out, bool at_end, const char *name)
{
    if (need_str(vm, a[0], name) < 0)
        return -1;
    span_t sp = {0};
    if (adjust_span(vm, a[0], a[2], a[3], &sp) < 0)
        return -1;
    tpl_value pre = a[1];
    const tpl_value *cands = &pre;
    uint32_t ncand = 1;
    if (pre.type == TPL_T_LIST && (pre.flags & TPL_F_TUPLE)) {
        cands = pre.u.list->items;
        ncand = pre.u.list->len;
    }
    for (uint32_t k = 0; k < ncand; k++) {
        tpl_value p = cands[k];
        if (p.type != TPL_T_STR) {
            if (pre.type == TPL_T_LIST && (pre.flags & TPL_F_TUPLE))
                return tpl_vm_error(vm, TPL_ERR_TYPE, "tuple for %s must only contain str, not %s",
                                    name, tpl_type_name(vm, p));
            return tpl_vm_error(vm, TPL_ERR_TYPE, "%s first arg must be str or a tuple of str, not %s",
                                name, tpl_type_name(vm, p));
        }
        int64_t plen = (int64_t)cplen(p);
        if (sp.cend - plen < sp.cstart)
            continue;
        if (sp.cstart > sp.clen)
            continue;
        size_t bs = sp.bstart, be = sp.bend;
        if (be - bs < p.len)
            continue;
        bool ok = at_end ? memcmp(a[0].u.s + be - p.len, p.u.s, p.len) == 0
                         : memcmp(a[0].u.s + bs, p.u.s, p.len) == 0;
        if (ok) {
            *out = tpl_v_bool(true);
            return 0;
        }
    }
    *out = tpl_v_bool(false);
    return 0;
}

int m_str_startswith(tpl_vm *vm, tpl_value *a, tpl_value *out) { return tailmatch(vm, a, out, false, "startswith"); }
int m_str_endswith(tpl_vm *vm, tpl_value *a, tpl_value *out) { return tailmatch(vm, a, out, true, "endswith"); }

typedef void (*case_fn)(tpl_sb *, const char *, size_t);

static int case_method(tpl_vm *vm, tpl_value *a, tpl_value *out, case_fn fn, const char *name)
{
    if (need_str(vm, a[0], name) < 0)
        return -1;
    tpl_sb b;
    tpl_sb_init(&b, AR(vm));
    fn(&b, a[0].u.s, a[0].len);
    if (b.failed)
        return OOM();
    *out = tpl_sb_value(&b);
    out->flags = a[0].flags & TPL_F_SAFE;
    return 0;
}

int m_str_upper(tpl_vm *vm, tpl_value *a, tpl_value *out) { return case_method(vm, a, out, tpl_py_upper, "upper"); }
int m_str_lower(tpl_vm *vm, tpl_value *a, tpl_value *out) { return case_method(vm, a, out, tpl_py_lower, "lower"); }
int m_str_title(tpl_vm *vm, tpl_value *a, tpl_value *out) { return case_method(vm, a, out, tpl_py_title, "title"); }
int m_str_capitalize(tpl_vm *vm, tpl_value *a, tpl_value *out) { return case_method(vm, a, out, tpl_py_capitalize, "capitalize"); }

/* str.replace(old, new, count): Python semantics, including an empty `old`. */
int tpl_str_replace(tpl_vm *vm, tpl_value s, tpl_value old, tpl_value new_, int64_t count, tpl_value *out)
{
    if (count < 0)
        count = INT64_MAX;
    if (count == 0 || (old.len > s.len)) {
        *out = tpl_v_str(s.u.s, s.len);
        return 0;
    }
    tpl_sb b;
    tpl_sb_init(&b, AR(vm));
    if (old.len == 0) {
        size_t i = 0;
        while (count > 0) {
            tpl_sb_put(&b, new_.u.s, new_.len);
            count--;
            if (i >= s.len)
                break;
            size_t j = i;
            tpl_utf8_next(s.u.s, s.len, &j);
            tpl_sb_put(&b, s.u.s + i, j - i);
            i = j;
        }
        if (i < s.len)
            tpl_sb_put(&b, s.u.s + i, s.len - i);
    } else {
        size_t i = 0;
        bool any = false;
        while (count > 0) {
            const char *q = memmem_(s.u.s + i, s.len - i, old.u.s, old.len);
            if (!q)
                break;
            size_t at = (size_t)(q - s.u.s);
            tpl_sb_put(&b, s.u.s + i, at - i);
            tpl_sb_put(&b, new_.u.s, new_.len);
            i = at + old.len;
            count--;
            any = true;
        }
        if (!any) {
            *out = tpl_v_str(s.u.s, s.len);
            return 0;
        }
        tpl_sb_put(&b, s.u.s + i, s.len - i);
    }
    if (b.failed)
        return OOM();
    *out = tpl_sb_value(&b);
    return 0;
}

int m_str_replace(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (need_str(vm, a[0], "replace") < 0)
        return -1;
    for (int k = 1; k <= 2; k++)
        if (a[k].type != TPL_T_STR)
            return tpl_vm_error(vm, TPL_ERR_TYPE, "replace() argument %d must be str, not %s", k,
                                tpl_type_name(vm, a[k]));
    int64_t count = -1;
    if (tpl_given(a[3]) && tpl_arg_index(vm, a[3], &count) < 0)
        return -1;
    if (tpl_str_replace(vm, a[0], a[1], a[2], count, out) < 0)
        return -1;
    out->flags = a[0].flags & TPL_F_SAFE;
    return 0;
}

static int sub_arg(tpl_vm *vm, tpl_value sub, const char *name)
{
    if (sub.type == TPL_T_STR)
        return 0;
    return tpl_vm_error(vm, TPL_ERR_TYPE, "must be str, not %s", tpl_type_name(vm, sub));
}

int m_str_find(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (need_str(vm, a[0], "find") < 0 || sub_arg(vm, a[1], "find") < 0)
        return -1;
    span_t sp = {0};
    if (adjust_span(vm, a[0], a[2], a[3], &sp) < 0)
        return -1;
    if (sp.cstart > sp.clen || sp.cend < sp.cstart) {
        *out = tpl_v_int(-1);
        return 0;
    }
    const char *q = memmem_(a[0].u.s + sp.bstart, sp.bend - sp.bstart, a[1].u.s, a[1].len);
    if (!q) {
        *out = tpl_v_int(-1);
        return 0;
    }
    size_t boff = (size_t)(q - a[0].u.s);
    *out = tpl_v_int(sp.cstart + (int64_t)tpl_utf8_len(a[0].u.s + sp.bstart, boff - sp.bstart));
    return 0;
}

int m_str_count(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (need_str(vm, a[0], "count") < 0 || sub_arg(vm, a[1], "count") < 0)
        return -1;
    span_t sp = {0};
    if (adjust_span(vm, a[0], a[2], a[3], &sp) < 0)
        return -1;
    if (sp.cstart > sp.clen || sp.cend < sp.cstart) {
        *out = tpl_v_int(0);
        return 0;
    }
    if (a[1].len == 0) {
        *out = tpl_v_int(sp.cend - sp.cstart + 1);
        return 0;
    }
    int64_t c = 0;
    size_t i = sp.bstart;
    while (i < sp.bend) {
        const char *q = memmem_(a[0].u.s + i, sp.bend - i, a[1].u.s, a[1].len);
        if (!q)
            break;
        c++;
        i = (size_t)(q - a[0].u.s) + a[1].len;
    }
    *out = tpl_v_int(c);
    return 0;
}

int m_str_format(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (need_str(vm, a[0], "format") < 0)
        return -1;
    return tpl_str_format(vm, a[0], a[1].u.list->items, (int)a[1].u.list->len, a[2].u.map, out);
}

int m_str_join(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (need_str(vm, a[0], "join") < 0)
        return -1;
    tpl_list *items;
    if (a[1].type != TPL_T_LIST && a[1].type != TPL_T_STR && a[1].type != TPL_T_MAP &&
        a[1].type != TPL_T_UNDEF && a[1].type != TPL_T_LOOP)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "can only join an iterable");
    if (tpl_iter_list(vm, a[1], &items) < 0)
        return -1;
    tpl_sb b;
    tpl_sb_init(&b, AR(vm));
    for (uint32_t i = 0; i < items->len; i++) {
        tpl_value it = items->items[i];
        if (it.type != TPL_T_STR)
            return tpl_vm_error(vm, TPL_ERR_TYPE, "sequence item %u: expected str instance, %s found", i,
                                tpl_type_name(vm, it));
        if (i)
            tpl_sb_put(&b, a[0].u.s, a[0].len);
        tpl_sb_put(&b, it.u.s, it.len);
    }
    if (b.failed)
        return OOM();
    *out = tpl_sb_value(&b);
    return 0;
}

typedef bool (*cp_pred)(uint32_t);

static int all_cp(tpl_vm *vm, tpl_value *a, tpl_value *out, cp_pred pred, const char *name)
{
    if (need_str(vm, a[0], name) < 0)
        return -1;
    tpl_value s = a[0];
    if (s.len == 0) {
        *out = tpl_v_bool(false);
        return 0;
    }
    size_t i = 0;
    while (i < s.len) {
        uint32_t c = tpl_utf8_next(s.u.s, s.len, &i);
        if (!pred(c)) {
            *out = tpl_v_bool(false);
            return 0;
        }
    }
    *out = tpl_v_bool(true);
    return 0;
}

static bool is_alnum_cp(uint32_t c)
{
    return tpl_uc_isalpha(c) || tpl_uc_isdecimal(c) || tpl_uc_isdigit(c) || tpl_uc_isnumeric(c);
}

int m_str_isdigit(tpl_vm *vm, tpl_value *a, tpl_value *out) { return all_cp(vm, a, out, tpl_uc_isdigit, "isdigit"); }
int m_str_isalpha(tpl_vm *vm, tpl_value *a, tpl_value *out) { return all_cp(vm, a, out, tpl_uc_isalpha, "isalpha"); }
int m_str_isalnum(tpl_vm *vm, tpl_value *a, tpl_value *out) { return all_cp(vm, a, out, is_alnum_cp, "isalnum"); }
int m_str_isspace(tpl_vm *vm, tpl_value *a, tpl_value *out) { return all_cp(vm, a, out, tpl_py_isspace, "isspace"); }

static int cased_method(tpl_vm *vm, tpl_value *a, tpl_value *out, bool lower, const char *name)
{
    if (need_str(vm, a[0], name) < 0)
        return -1;
    tpl_value s = a[0];
    bool cased = false;
    size_t i = 0;
    while (i < s.len) {
        uint32_t c = tpl_utf8_next(s.u.s, s.len, &i);
        bool up = tpl_uc_isupper(c), lo = tpl_uc_islower(c), ti = tpl_uc_istitle(c);
        if (lower ? (up || ti) : (lo || ti)) {
            *out = tpl_v_bool(false);
            return 0;
        }
        if (lower ? lo : up)
            cased = true;
    }
    *out = tpl_v_bool(cased);
    return 0;
}

int m_str_isupper(tpl_vm *vm, tpl_value *a, tpl_value *out) { return cased_method(vm, a, out, false, "isupper"); }
int m_str_islower(tpl_vm *vm, tpl_value *a, tpl_value *out) { return cased_method(vm, a, out, true, "islower"); }

int m_str_casefold(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    int rc = case_method(vm, a, out, tpl_py_casefold, "casefold");
    if (rc == 0) out->flags &= (uint8_t)~TPL_F_SAFE; /* (MarkupSafe does not wrap casefold) */
    return rc;
}

/* str.expandtabs(tabsize=8): a tab becomes spaces up to the next multiple of tabsize (none when
 * tabsize <= 0); the column counts code points and restarts after \n and \r. */
int m_str_expandtabs(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (need_str(vm, a[0], "expandtabs") < 0)
        return -1;
    int64_t ts = 8;
    if (a[1].type != TPL_T_UNSET) {
        if (a[1].type != TPL_T_INT && a[1].type != TPL_T_BOOL)
            return tpl_vm_error(vm, TPL_ERR_TYPE, "'%s' object cannot be interpreted as an integer", tpl_type_name(vm, a[1]));
        ts = a[1].u.i;
    }
    tpl_sb b;
    tpl_sb_init(&b, AR(vm));
    int64_t col = 0;
    for (size_t i = 0; i < a[0].len && !b.failed;) {
        unsigned char ch = (unsigned char)a[0].u.s[i];
        if (ch == '\t') {
            if (ts > 0) {
                int64_t pad = ts - col % ts;
                for (int64_t k = 0; k < pad; k++) tpl_sb_putc(&b, ' ');
                col += pad;
            }
            i++;
            continue;
        }
        size_t j = i;
        tpl_utf8_next(a[0].u.s, a[0].len, &j);
        tpl_sb_put(&b, a[0].u.s + i, j - i);
        col = ch == '\n' || ch == '\r' ? 0 : col + 1;
        i = j;
    }
    if (b.failed)
        return OOM();
    *out = tpl_sb_value(&b);
    out->flags = a[0].flags & TPL_F_SAFE;
    return 0;
}

int m_str_isprintable(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (need_str(vm, a[0], "isprintable") < 0)
        return -1;
    size_t i = 0;
    bool ok = true;
    while (ok && i < a[0].len) ok = tpl_py_isprintable(tpl_utf8_next(a[0].u.s, a[0].len, &i));
    *out = tpl_v_bool(ok); /* (true for "") */
    return 0;
}

int m_str_isascii(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (need_str(vm, a[0], "isascii") < 0)
        return -1;
    bool ok = true;
    for (size_t i = 0; ok && i < a[0].len; i++) ok = (unsigned char)a[0].u.s[i] < 0x80;
    *out = tpl_v_bool(ok);
    return 0;
}

int m_str_isidentifier(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (need_str(vm, a[0], "isidentifier") < 0)
        return -1;
    *out = tpl_v_bool(tpl_py_isidentifier(a[0].u.s, a[0].len));
    return 0;
}

/* str.format_map(mapping): str.format with the mapping's items as the keyword arguments. */
int m_str_format_map(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (need_str(vm, a[0], "format_map") < 0)
        return -1;
    if (a[1].type == TPL_T_UNDEF)
        return tpl_undefined_error(vm, a[1]);
    if (a[1].type != TPL_T_MAP)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "'%s' object is not subscriptable", tpl_type_name(vm, a[1]));
    return tpl_str_format(vm, a[0], NULL, 0, a[1].u.map, out);
}

/* str.translate(table): each code point looked up in the mapping (int keys): a str replaces it,
 * an int is a code point, None deletes it, a missing key keeps it. */
int m_str_translate(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (need_str(vm, a[0], "translate") < 0)
        return -1;
    if (a[1].type == TPL_T_UNDEF)
        return tpl_undefined_error(vm, a[1]);
    if (a[1].type != TPL_T_MAP && a[1].type != TPL_T_LIST)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "'%s' object is not subscriptable", tpl_type_name(vm, a[1]));
    tpl_sb b;
    tpl_sb_init(&b, AR(vm));
    for (size_t i = 0; i < a[0].len && !b.failed;) {
        size_t at = i;
        uint32_t c = tpl_utf8_next(a[0].u.s, a[0].len, &i);
        tpl_value r;
        bool hit;
        if (a[1].type == TPL_T_MAP) {
            const tpl_value *v = tpl_map_get(a[1].u.map, tpl_v_int(c));
            hit = v != NULL;
            if (hit) r = *v;
        } else {
            hit = c < a[1].u.list->len;
            if (hit) r = a[1].u.list->items[c];
        }
        if (!hit) { tpl_sb_put(&b, a[0].u.s + at, i - at); continue; }
        if (r.type == TPL_T_NONE) continue;
        if (r.type == TPL_T_STR) { tpl_sb_put(&b, r.u.s, r.len); continue; }
        if (r.type == TPL_T_INT && r.u.i >= 0 && r.u.i <= 0x10FFFF) { tpl_sb_put_cp(&b, (uint32_t)r.u.i); continue; }
        if (r.type == TPL_T_INT)
            return tpl_vm_error(vm, TPL_ERR_VALUE, "character mapping must be in range(0x110000)");
        return tpl_vm_error(vm, TPL_ERR_TYPE, "character mapping must return integer, None or str");
    }
    if (b.failed)
        return OOM();
    *out = tpl_sb_value(&b);
    return 0;
}

/* str.maketrans(x[, y[, z]]) (called on a str, as Jinja templates can): a dict from code points
 * to code points (x, y of equal length), None (z's characters), or x's own values (x a dict). */
int m_str_maketrans(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (need_str(vm, a[0], "maketrans") < 0)
        return -1;
    tpl_map *m = tpl_map_new(AR(vm), 8);
    if (!m) return OOM();
    if (a[2].type == TPL_T_UNSET) {
        if (a[1].type != TPL_T_MAP)
            return tpl_vm_error(vm, TPL_ERR_TYPE, "if you give only one argument to maketrans it must be a dict");
        for (uint32_t i = 0; i < a[1].u.map->len; i++) {
            tpl_value k = a[1].u.map->e[i].key;
            if (k.type == TPL_T_STR) {
                size_t j = 0;
                uint32_t c = tpl_utf8_next(k.u.s, k.len, &j);
                if (k.len == 0 || j != k.len)
                    return tpl_vm_error(vm, TPL_ERR_VALUE, "string keys in translate table must be of length 1");
                k = tpl_v_int(c);
            } else if (k.type != TPL_T_INT)
                return tpl_vm_error(vm, TPL_ERR_TYPE, "keys in translate table must be strings or integers");
            if (!tpl_map_set(AR(vm), m, k, a[1].u.map->e[i].val)) return OOM();
        }
    } else {
        if (a[1].type != TPL_T_STR || a[2].type != TPL_T_STR)
            return tpl_vm_error(vm, TPL_ERR_TYPE, "maketrans() argument %d must be str, not %s", a[1].type != TPL_T_STR ? 1 : 2,
                                tpl_type_name(vm, a[1].type != TPL_T_STR ? a[1] : a[2]));
        if (cplen(a[1]) != cplen(a[2]))
            return tpl_vm_error(vm, TPL_ERR_VALUE, "the first two maketrans arguments must have equal length");
        size_t i = 0, j = 0;
        while (i < a[1].len) {
            uint32_t x = tpl_utf8_next(a[1].u.s, a[1].len, &i), y = tpl_utf8_next(a[2].u.s, a[2].len, &j);
            if (!tpl_map_set(AR(vm), m, tpl_v_int(x), tpl_v_int(y))) return OOM();
        }
        if (a[3].type != TPL_T_UNSET) {
            if (a[3].type != TPL_T_STR)
                return tpl_vm_error(vm, TPL_ERR_TYPE, "maketrans() argument 3 must be str, not %s", tpl_type_name(vm, a[3]));
            for (i = 0; i < a[3].len;)
                if (!tpl_map_set(AR(vm), m, tpl_v_int(tpl_utf8_next(a[3].u.s, a[3].len, &i)), tpl_v_none())) return OOM();
        }
    }
    *out = tpl_v_map(m);
    return 0;
}

/* ------------------------------------------------------------------ dict and list methods */

static int need_map(tpl_vm *vm, tpl_value self, const char *name)
{
    if (self.type == TPL_T_MAP)
        return 0;
    if (self.type == TPL_T_UNDEF)
        return tpl_undefined_error(vm, self);
    return tpl_vm_error(vm, TPL_ERR_TYPE, "descriptor '%s' for 'dict' objects doesn't apply to a '%s' object",
                        name, tpl_type_name(vm, self));
}

static int map_list(tpl_vm *vm, tpl_value self, int what, tpl_value *out)
{
    const tpl_map *m = self.u.map;
    tpl_arena *ar = AR(vm);
    tpl_list *l = tpl_list_new(ar, m->len);
    if (!l)
        return OOM();
    for (uint32_t i = 0; i < m->len; i++) {
        tpl_value v;
        if (what == 0) {
            tpl_list *pair = tpl_list_new(ar, 2);
            if (!pair)
                return OOM();
            pair->items[0] = m->e[i].key;
            pair->items[1] = m->e[i].val;
            pair->len = 2;
            v = tpl_v_list(pair);
            v.flags = TPL_F_TUPLE;
        } else {
            v = what == 1 ? m->e[i].key : m->e[i].val;
        }
        l->items[i] = v;
    }
    l->len = m->len;
    *out = tpl_v_list(l);
    out->aux = (uint16_t)(TPL_LAZY_DICT_ITEMS + what); /* dict_items, dict_keys, dict_values */
    return 0;
}

int m_map_items(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (need_map(vm, a[0], "items") < 0) return -1;
    return map_list(vm, a[0], 0, out);
}

int m_map_keys(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (need_map(vm, a[0], "keys") < 0) return -1;
    return map_list(vm, a[0], 1, out);
}

int m_map_values(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (need_map(vm, a[0], "values") < 0) return -1;
    return map_list(vm, a[0], 2, out);
}

static int hashable(tpl_vm *vm, tpl_value k)
{
    if ((k.type == TPL_T_LIST && !(k.flags & TPL_F_TUPLE)) || k.type == TPL_T_MAP)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "unhashable type: '%s'", tpl_type_name(vm, k));
    if (k.type == TPL_T_UNDEF && tpl_vm_strict(vm))
        return tpl_undefined_error(vm, k);
    return 0;
}

int m_map_get(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (need_map(vm, a[0], "get") < 0 || hashable(vm, a[1]) < 0)
        return -1;
    tpl_value *v = tpl_map_get(a[0].u.map, a[1]);
    if (v)
        *out = *v;
    else
        *out = tpl_given(a[2]) ? a[2] : tpl_v_none();
    return 0;
}

static int need_list(tpl_vm *vm, tpl_value self, const char *name)
{
    if (self.type == TPL_T_LIST)
        return 0;
    if (self.type == TPL_T_UNDEF)
        return tpl_undefined_error(vm, self);
    return tpl_vm_error(vm, TPL_ERR_TYPE, "descriptor '%s' for 'list' objects doesn't apply to a '%s' object",
                        name, tpl_type_name(vm, self));
}

int m_list_index(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (need_list(vm, a[0], "index") < 0)
        return -1;
    const tpl_list *l = a[0].u.list;
    for (uint32_t i = 0; i < l->len; i++) {
        bool eq = false;
        if (tpl_vm_equal(vm, l->items[i], a[1], &eq) < 0)
            return -1;
        if (eq) {
            *out = tpl_v_int(i);
            return 0;
        }
    }
    if (a[0].flags & TPL_F_TUPLE)
        return tpl_vm_error(vm, TPL_ERR_VALUE, "tuple.index(x): x not in tuple");
    tpl_sb b;
    tpl_sb_init(&b, AR(vm));
    tpl_py_repr(&b, a[1]);
    return tpl_vm_error(vm, TPL_ERR_VALUE, "%.*s is not in list", (int)b.len, b.p ? b.p : "");
}

int m_list_count(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (need_list(vm, a[0], "count") < 0)
        return -1;
    const tpl_list *l = a[0].u.list;
    int64_t c = 0;
    for (uint32_t i = 0; i < l->len; i++) {
        bool eq = false;
        if (tpl_vm_equal(vm, l->items[i], a[1], &eq) < 0)
            return -1;
        c += eq;
    }
    *out = tpl_v_int(c);
    return 0;
}

/* ------------------------------------------------------------------ format(value, spec) */

typedef struct {
    uint32_t fill;
    char align;     /* 0, '<', '>', '=', '^' */
    char sign;      /* 0, '+', '-', ' ' */
    bool z, alt, zero;
    int64_t width;  /* -1 = none */
    char grouping;  /* 0, ',', '_' */
    int64_t prec;   /* -1 = none */
    char type;      /* 0 = none */
    bool fill_given;
} fspec;

static int parse_spec(tpl_vm *vm, const char *s, size_t n, fspec *f, const char *tyname)
{
    memset(f, 0, sizeof *f);
    f->fill = ' ';
    f->width = f->prec = -1;
    size_t i = 0;
    /* [[fill]align] */
    if (n > 0) {
        size_t j = 0;
        uint32_t c = tpl_utf8_next(s, n, &j);
        if (j < n && (s[j] == '<' || s[j] == '>' || s[j] == '=' || s[j] == '^')) {
            f->fill = c;
            f->fill_given = true;
            f->align = s[j];
            i = j + 1;
        } else if (s[0] == '<' || s[0] == '>' || s[0] == '=' || s[0] == '^') {
            f->align = s[0];
            i = 1;
        }
    }
    if (i < n && (s[i] == '+' || s[i] == '-' || s[i] == ' '))
        f->sign = s[i++];
    if (i < n && s[i] == 'z') { f->z = true; i++; }
    if (i < n && s[i] == '#') { f->alt = true; i++; }
    if (i < n && s[i] == '0') {
        f->zero = true;
        if (!f->fill_given) {
            f->fill = '0';
            f->fill_given = true;
        }
        if (!f->align)
            f->align = 'Z'; /* '=' for numbers, '<' for strings (Python 3.10+) */
        i++;
    }
    if (i < n && s[i] >= '0' && s[i] <= '9') {
        int64_t w = 0;
        while (i < n && s[i] >= '0' && s[i] <= '9') {
            w = w * 10 + (s[i++] - '0');
            if (w > 100000000)
                return tpl_vm_error(vm, TPL_ERR_VALUE, "Too many decimal digits in format string");
        }
        f->width = w;
    }
    if (i < n && (s[i] == ',' || s[i] == '_')) {
        f->grouping = s[i++];
        if (i < n && (s[i] == ',' || s[i] == '_'))
            return s[i] == f->grouping
                ? tpl_vm_error(vm, TPL_ERR_VALUE, "Cannot specify '%c' with '%c'.", s[i], s[i])
                : tpl_vm_error(vm, TPL_ERR_VALUE, "Cannot specify both ',' and '_'.");
    }
    if (i < n && s[i] == '.') {
        i++;
        if (i >= n || s[i] < '0' || s[i] > '9')
            return tpl_vm_error(vm, TPL_ERR_VALUE, "Format specifier missing precision");
        int64_t p = 0;
        while (i < n && s[i] >= '0' && s[i] <= '9') {
            p = p * 10 + (s[i++] - '0');
            if (p > 100000000)
                return tpl_vm_error(vm, TPL_ERR_VALUE, "Too many decimal digits in format string");
        }
        f->prec = p;
    }
    if (i < n) {
        if (n - i > 1 || (unsigned char)s[i] >= 0x80)
            return tpl_vm_error(vm, TPL_ERR_VALUE, "Invalid format specifier '%.*s' for object of type '%s'",
                                (int)n, s, tyname);
        f->type = s[i];
    }
    return 0;
}

static void put_fill(tpl_sb *b, uint32_t fill, int64_t n)
{
    if (n <= 0)
        return;
    if (fill < 0x80) {
        if (!tpl_sb_reserve(b, (size_t)n))
            return;
        memset(b->p + b->len, (int)fill, (size_t)n);
        b->len += (size_t)n;
        return;
    }
    /* one encoded copy, then all the room at once (a width past the memory limit fails here,
     * not after millions of writes), filled by doubling copies */
    size_t start = b->len;
    tpl_sb_put_cp(b, fill);
    size_t w = b->len - start;
    if (b->failed || w == 0)
        return;
    if ((uint64_t)n > SIZE_MAX / w) {
        b->failed = true;
        return;
    }
    size_t want = (size_t)n * w, have = w;
    if (!tpl_sb_reserve(b, want - w))
        return;
    while (have < want) {
        size_t k = have < want - have ? have : want - have;
        memcpy(b->p + start + have, b->p + start, k);
        have += k;
    }
    b->len = start + want;
}

/* Pads text (of ncp code points) per align/width. */
static void pad_out(tpl_sb *b, const fspec *f, char dflt_align, const char *text, size_t nbytes, int64_t ncp)
{
    int64_t pad = f->width > ncp ? f->width - ncp : 0;
    char al = f->align ? f->align : dflt_align;
    if (al == 'Z')
        al = dflt_align;
    int64_t left = 0, right = 0;
    if (al == '>')
        left = pad;
    else if (al == '^') {
        left = pad / 2;
        right = pad - left;
    } else
        right = pad;
    put_fill(b, f->fill, left);
    tpl_sb_put(b, text, nbytes);
    put_fill(b, f->fill, right);
}

static int format_str(tpl_vm *vm, tpl_sb *b, tpl_value s, const fspec *f)
{
    if (f->type && f->type != 's')
        return tpl_vm_error(vm, TPL_ERR_VALUE, "Unknown format code '%c' for object of type 'str'", f->type);
    if (f->sign)
        return tpl_vm_error(vm, TPL_ERR_VALUE, f->sign == ' ' ? "Space not allowed in string format specifier"
                                                               : "Sign not allowed in string format specifier");
    if (f->alt)
        return tpl_vm_error(vm, TPL_ERR_VALUE, "Alternate form (#) not allowed in string format specifier");
    if (f->z)
        return tpl_vm_error(vm, TPL_ERR_VALUE, "Negative zero coercion (z) not allowed in format specifier");
    if (f->align == '=')
        return tpl_vm_error(vm, TPL_ERR_VALUE, "'=' alignment not allowed in string format specifier");
    if (f->grouping)
        return tpl_vm_error(vm, TPL_ERR_VALUE, "Cannot specify '%c' with 's'.", f->grouping);
    size_t nbytes = s.len;
    int64_t ncp = (int64_t)cplen(s);
    if (f->prec >= 0 && ncp > f->prec) {
        nbytes = tpl_utf8_offset(s.u.s, s.len, (size_t)f->prec);
        ncp = f->prec;
    }
    pad_out(b, f, '<', s.u.s, nbytes, ncp);
    return 0;
}

/* Inserts grouping separators into the digit run digits[0..n) every `every` digits, zero-padding
 * on the left until the grouped run is at least min_len characters long. */
static void put_grouped(tpl_sb *b, const char *digits, size_t n, char sep, int every, int64_t min_len)
{
    int64_t d = (int64_t)n;
    if (sep) {
        while (d + (d - 1) / every < min_len)
            d++;
    } else if (d < min_len) {
        d = min_len;
    }
    int64_t zeros = d - (int64_t)n;
    for (int64_t k = 0; k < d; k++) {
        int64_t from_right = d - k; /* digits remaining including this one */
        char c = k < zeros ? '0' : digits[k - zeros];
        tpl_sb_putc(b, c);
        if (sep && from_right > 1 && (from_right - 1) % every == 0)
            tpl_sb_putc(b, sep);
    }
}

/* Assembles sign + prefix + number body (integer digits, then the rest) with padding. */
static void emit_number(tpl_sb *b, const fspec *f, const char *sign, const char *prefix,
                        const char *intdigits, size_t nint, const char *rest, size_t nrest, int every)
{
    size_t ls = strlen(sign), lp = strlen(prefix);
    int64_t grouped = (int64_t)nint + (f->grouping && nint ? ((int64_t)nint - 1) / every : 0);
    int64_t total = (int64_t)(ls + lp) + grouped + (int64_t)nrest;
    char al = f->align ? f->align : '>';
    if (al == 'Z')
        al = '=';
    if (al == '=') {
        int64_t min_len = 0;
        if (f->width > total)
            min_len = f->width - (int64_t)(ls + lp) - (int64_t)nrest;
        tpl_sb_puts(b, sign);
        tpl_sb_puts(b, prefix);
        if (f->fill == '0') {
            put_grouped(b, intdigits, nint, f->grouping, every, min_len);
        } else {
            int64_t pad = min_len > grouped ? min_len - grouped : 0;
            put_fill(b, f->fill, pad);
            put_grouped(b, intdigits, nint, f->grouping, every, 0);
        }
        tpl_sb_put(b, rest, nrest);
        return;
    }
    int64_t pad = f->width > total ? f->width - total : 0;
    int64_t left = 0, right = 0;
    if (al == '<') right = pad;
    else if (al == '^') { left = pad / 2; right = pad - left; }
    else left = pad;
    put_fill(b, f->fill, left);
    tpl_sb_puts(b, sign);
    tpl_sb_puts(b, prefix);
    put_grouped(b, intdigits, nint, f->grouping, every, 0);
    tpl_sb_put(b, rest, nrest);
    put_fill(b, f->fill, right);
}

static int format_float(tpl_vm *vm, tpl_sb *b, double x, const fspec *f, const char *tname);

/* format(v, spec) of an int (v: TPL_T_INT, TPL_T_BOOL or a big int, bigint.h). */
static int format_int(tpl_vm *vm, tpl_sb *b, tpl_value iv, const fspec *f, const char *tname)
{
    char t = f->type;
    bool big = iv.type == TPL_T_BIGINT;
    int64_t v = big ? (iv.u.s[0] == '-' ? -1 : 1) : iv.u.i; /* a big int: only its sign */
    switch (t) {
    case 'e': case 'E': case 'f': case 'F': case 'g': case 'G': case '%': {
        double d;
        if (!tpl_big_to_double(iv, &d))
            return tpl_vm_fail(vm, TPL_EK_OVERFLOW, "int too large to convert to float");
        return format_float(vm, b, d, f, tname);
    }
    case 0: case 'd': case 'n': case 'b': case 'o': case 'x': case 'X': case 'c':
        break;
    default:
        return tpl_vm_error(vm, TPL_ERR_VALUE, "Unknown format code '%c' for object of type '%s'", t, tname);
    }
    if (f->prec >= 0)
        return tpl_vm_error(vm, TPL_ERR_VALUE, "Precision not allowed in integer format specifier");
    if (f->z)
        return tpl_vm_error(vm, TPL_ERR_VALUE, "Negative zero coercion (z) not allowed in integer format specifier");
    if (t == 'c') {
        if (f->sign)
            return tpl_vm_error(vm, TPL_ERR_VALUE, "Sign not allowed with integer format specifier 'c'");
        if (f->alt)
            return tpl_vm_error(vm, TPL_ERR_VALUE, "Alternate form (#) not allowed with integer format specifier 'c'");
        if (big)
            return tpl_vm_fail(vm, TPL_EK_OVERFLOW, "Python int too large to convert to C long");
        if (v < 0 || v > 0x10FFFF)
            return tpl_vm_error(vm, TPL_ERR_VALUE, "%%c arg not in range(0x110000)");
        tpl_sb tmp;
        tpl_sb_init(&tmp, AR(vm));
        tpl_sb_put_cp(&tmp, (uint32_t)v);
        fspec g = *f;
        pad_out(b, &g, '>', tmp.p, tmp.len, 1);
        return 0;
    }
    if (f->grouping == ',' && (t == 'b' || t == 'o' || t == 'x' || t == 'X'))
        return tpl_vm_error(vm, TPL_ERR_VALUE, "Cannot specify ',' with '%c'.", t);
    if (f->grouping && t == 'n')
        return tpl_vm_error(vm, TPL_ERR_VALUE, "Cannot specify '%c' with 'n'.", f->grouping);
    uint64_t mag = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    char digits[80];
    size_t nd = 0;
    int base = 10, every = 3;
    const char *prefix = "";
    if (t == 'b') { base = 2; every = 4; prefix = f->alt ? "0b" : ""; }
    else if (t == 'o') { base = 8; every = 4; prefix = f->alt ? "0o" : ""; }
    else if (t == 'x') { base = 16; every = 4; prefix = f->alt ? "0x" : ""; }
    else if (t == 'X') { base = 16; every = 4; prefix = f->alt ? "0X" : ""; }
    const char *dig = t == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
    const char *sign = v < 0 ? "-" : f->sign == '+' ? "+" : f->sign == ' ' ? " " : "";
    if (big) { /* its digits in base from GMP; decimal past 4,300 digits is Python's ValueError */
        if (base == 10 && tpl_big_ndigits(iv) > TPL_PY_INT_MAX_STR_DIGITS)
            return tpl_big_str_error(vm);
        mpz_t z;
        tpl_big_get(z, iv);
        mpz_abs(z, z);
        char *p = tpl_arena_alloc(AR(vm), mpz_sizeinbase(z, base) + 2);
        if (!p) { mpz_clear(z); return OOM(); }
        mpz_get_str(p, t == 'X' ? -16 : base, z);
        mpz_clear(z);
        emit_number(b, f, sign, prefix, p, strlen(p), "", 0, every);
        return 0;
    }
    char tmp[80];
    do {
        tmp[nd++] = dig[mag % (uint64_t)base];
        mag /= (uint64_t)base;
    } while (mag);
    for (size_t k = 0; k < nd; k++)
        digits[k] = tmp[nd - 1 - k];
    emit_number(b, f, sign, prefix, digits, nd, "", 0, every);
    return 0;
}

static int format_float(tpl_vm *vm, tpl_sb *b, double x, const fspec *f, const char *tname)
{
    char t = f->type;
    switch (t) {
    case 0: case 'e': case 'E': case 'f': case 'F': case 'g': case 'G': case 'n': case '%':
        break;
    default:
        return tpl_vm_error(vm, TPL_ERR_VALUE, "Unknown format code '%c' for object of type '%s'", t, tname);
    }
    if (t == 'n' && f->grouping)
        return tpl_vm_error(vm, TPL_ERR_VALUE, "Cannot specify '%c' with 'n'.", f->grouping);
    bool neg = signbit(x) && !isnan(x);
    double ax = fabs(x);
    char body[512];
    char *big = NULL;
    const char *txt = body;
    size_t ntxt;
    bool upper = t == 'E' || t == 'F' || t == 'G';
    if (isinf(ax) || isnan(ax)) {
        snprintf(body, sizeof body, "%s%s", isnan(ax) ? (upper ? "NAN" : "nan") : (upper ? "INF" : "inf"),
                 t == '%' ? "%" : "");
        ntxt = strlen(body);
    } else {
        if (t == '%')
            ax *= 100;
        if (f->prec > TPL_MAX_FLOAT_PREC)
            return tpl_vm_error(vm, TPL_ERR_LIMIT, "precision too large (tpl formats at most %d digits)", TPL_MAX_FLOAT_PREC);
        int prec = f->prec >= 0 ? (int)f->prec : 6;
        char cfmt[16];
        char conv = t;
        if (t == 0) {
            if (f->prec < 0) {
                tpl_sb tb;
                tpl_sb_init(&tb, AR(vm));
                tpl_py_float(&tb, ax);
                ntxt = tb.len < sizeof body - 1 ? tb.len : sizeof body - 1;
                memcpy(body, tb.p, ntxt);
                body[ntxt] = 0;
                goto assembled;
            }
            /* CPython's format_float_internal: no type with a precision is 'g' with
             * Py_DTSF_ADD_DOT_0, which also moves the switch to exponent notation one digit
             * earlier (decpt > precision - 1) and keeps a ".0" on fixed results. */
            conv = 'g';
            if (prec == 0)
                prec = 1;
            char eb[64];
            snprintf(eb, sizeof eb, "%.*e", prec - 1 < 40 ? prec - 1 : 40, ax);
            const char *ep = strchr(eb, 'e');
            long x10 = ep ? strtol(ep + 1, NULL, 10) : 0;
            if (x10 >= prec - 1) {
                int need = snprintf(body, sizeof body, f->alt ? "%#.*e" : "%.*e", prec - 1, ax);
                if (need < 0 || (size_t)need >= sizeof body)
                    return tpl_vm_error(vm, TPL_ERR_LIMIT, "precision too large for exponent notation");
                char *e = strchr(body, 'e');
                size_t mant = (size_t)(e - body);
                if (!f->alt && memchr(body, '.', mant)) {
                    size_t keep = mant;
                    while (body[keep - 1] == '0') keep--;
                    if (body[keep - 1] == '.') keep--;
                    memmove(body + keep, e, strlen(e) + 1);
                }
                ntxt = strlen(body);
                goto assembled;
            }
        } else if (t == 'n') {
            conv = 'g';
        } else if (t == '%') {
            conv = 'f';
        }
        snprintf(cfmt, sizeof cfmt, "%%%s.*%c", f->alt ? "#" : "", conv);
        int need = snprintf(body, sizeof body, cfmt, prec, ax);
        if (need < 0)
            return tpl_vm_error(vm, TPL_ERR_VALUE, "format failed");
        if ((size_t)need >= sizeof body) {
            big = tpl_arena_alloc(AR(vm), (size_t)need + 1);
            if (!big)
                return OOM();
            snprintf(big, (size_t)need + 1, cfmt, prec, ax);
            txt = big;
        }
        ntxt = (size_t)need;
        if (t == 0 && !memchr(txt, '.', ntxt) && !memchr(txt, 'e', ntxt) && ntxt + 2 < sizeof body && !big) {
            memcpy(body + ntxt, ".0", 3);
            ntxt += 2;
        }
        if (t == '%') {
            if (big) {
                char *nb = tpl_arena_alloc(AR(vm), ntxt + 2);
                if (!nb)
                    return OOM();
                memcpy(nb, big, ntxt);
                nb[ntxt] = '%';
                nb[ntxt + 1] = 0;
                txt = nb;
                ntxt++;
            } else if (ntxt + 1 < sizeof body) {
                body[ntxt++] = '%';
                body[ntxt] = 0;
            }
        }
    }
assembled:
    if (f->z && neg) {
        /* Negative zero coercion: a value that rounds to zero loses its sign. */
        bool allzero = true;
        for (size_t k = 0; k < ntxt; k++)
            if (txt[k] >= '1' && txt[k] <= '9') { allzero = false; break; }
        if (allzero)
            neg = false;
    }
    size_t nint = 0;
    while (nint < ntxt && txt[nint] >= '0' && txt[nint] <= '9')
        nint++;
    const char *sign = neg ? "-" : f->sign == '+' ? "+" : f->sign == ' ' ? " " : "";
    emit_number(b, f, sign, "", txt, nint, txt + nint, ntxt - nint, 3);
    return 0;
}

int tpl_format_value(tpl_vm *vm, tpl_sb *b, tpl_value v, const char *spec, size_t n)
{
    if (n == 0 || v.type == TPL_T_UNDEF || v.type == TPL_T_NONE || v.type == TPL_T_LIST ||
        v.type == TPL_T_MAP || v.type == TPL_T_FUNC || v.type == TPL_T_MACRO || v.type == TPL_T_LOOP ||
        v.type == TPL_T_UNSET) {
        if (n != 0)
            return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported format string passed to %s.__format__",
                                tpl_type_name(vm, v));
        if (v.type == TPL_T_UNDEF && tpl_vm_strict(vm))
            return tpl_undefined_error(vm, v);
        tpl_py_str(b, v);
        return 0;
    }
    fspec f;
    if (parse_spec(vm, spec, n, &f, tpl_type_name(vm, v)) < 0)
        return -1;
    switch (v.type) {
    case TPL_T_STR:
        return format_str(vm, b, v, &f);
    case TPL_T_BOOL:
    case TPL_T_INT:
    case TPL_T_BIGINT:
        return format_int(vm, b, v, &f, v.type == TPL_T_BOOL ? "bool" : "int");
    case TPL_T_FLOAT:
        return format_float(vm, b, v.u.f, &f, "float");
    default:
        return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported format string passed to %s.__format__",
                            tpl_type_name(vm, v));
    }
}

/* ------------------------------------------------------------------ str.format */

/* ascii(): repr with non-ASCII code points escaped. */
static void py_ascii(tpl_vm *vm, tpl_sb *b, tpl_value v)
{
    tpl_sb r;
    tpl_sb_init(&r, AR(vm));
    tpl_py_repr(&r, v);
    size_t i = 0;
    while (i < r.len) {
        unsigned char c = (unsigned char)r.p[i];
        if (c < 0x80) {
            tpl_sb_putc(b, (char)c);
            i++;
            continue;
        }
        uint32_t cp = tpl_utf8_next(r.p, r.len, &i);
        if (cp < 0x100) tpl_sb_printf(b, "\\x%02x", cp);
        else if (cp < 0x10000) tpl_sb_printf(b, "\\u%04x", cp);
        else tpl_sb_printf(b, "\\U%08x", cp);
    }
}

typedef struct {
    const tpl_value *args;
    int nargs;
    const tpl_map *kwargs;
    int auto_idx;   /* -1 = manual numbering used, >= 0 next automatic index */
    bool manual;
} fmt_state;

static int resolve_field(tpl_vm *vm, fmt_state *st, const char *s, size_t n, tpl_value *out)
{
    size_t i = 0;
    while (i < n && s[i] != '.' && s[i] != '[')
        i++;
    tpl_value obj;
    if (i == 0) {
        if (st->manual)
            return tpl_vm_error(vm, TPL_ERR_VALUE,
                                "cannot switch from manual field specification to automatic field numbering");
        int idx = st->auto_idx++;
        if (idx >= st->nargs)
            return tpl_vm_error(vm, TPL_ERR_VALUE, "Replacement index %d out of range for positional args tuple", idx);
        obj = st->args[idx];
    } else {
        bool digits = true;
        for (size_t k = 0; k < i; k++)
            if (s[k] < '0' || s[k] > '9') { digits = false; break; }
        if (digits) {
            if (st->auto_idx > 0)
                return tpl_vm_error(vm, TPL_ERR_VALUE,
                                    "cannot switch from automatic field numbering to manual field specification");
            st->manual = true;
            int64_t idx = 0;
            for (size_t k = 0; k < i && idx < 100000000; k++)
                idx = idx * 10 + (s[k] - '0');
            if (idx >= st->nargs)
                return tpl_vm_error(vm, TPL_ERR_VALUE, "Replacement index %lld out of range for positional args tuple",
                                    (long long)idx);
            obj = st->args[idx];
        } else {
            tpl_value *v = st->kwargs ? tpl_map_get(st->kwargs, tpl_v_str(s, i)) : NULL;
            if (!v)
                return tpl_vm_error(vm, TPL_ERR_VALUE, "'%.*s'", (int)i, s);
            obj = *v;
        }
    }
    while (i < n) {
        if (s[i] == '.') {
            size_t j = ++i;
            while (i < n && s[i] != '.' && s[i] != '[')
                i++;
            if (i == j)
                return tpl_vm_error(vm, TPL_ERR_VALUE, "Empty attribute in format string");
            if (obj.type == TPL_T_UNDEF)
                return tpl_undefined_error(vm, obj);
            tpl_value prev = obj;
            if (tpl_getattr(vm, obj, s + j, i - j, &obj) < 0)
                return -1;
            /* Plain Python getattr outside the sandbox: no item fallback. */
            if (!tpl_vm_hf(vm) && (obj.type == TPL_T_UNDEF ||
                                   (prev.type == TPL_T_MAP && !(prev.flags & TPL_F_NS) && obj.type != TPL_T_FUNC)))
                return tpl_vm_error(vm, TPL_ERR_TYPE, "'%s' object has no attribute '%.*s'",
                                    tpl_type_name(vm, prev), (int)(i - j), s + j);
        } else if (s[i] == '[') {
            size_t j = ++i;
            while (i < n && s[i] != ']')
                i++;
            if (i >= n)
                return tpl_vm_error(vm, TPL_ERR_VALUE, "Missing ']' in format string");
            if (i == j)
                return tpl_vm_error(vm, TPL_ERR_VALUE, "Empty attribute in format string");
            bool digits = true;
            for (size_t k = j; k < i; k++)
                if (s[k] < '0' || s[k] > '9') { digits = false; break; }
            tpl_value key;
            if (digits && i - j <= 18) {
                int64_t k = 0;
                for (size_t t = j; t < i; t++)
                    k = k * 10 + (s[t] - '0');
                key = tpl_v_int(k);
            } else {
                key = tpl_v_str(s + j, i - j);
            }
            i++;
            if (i < n && s[i] != '.' && s[i] != '[')
                return tpl_vm_error(vm, TPL_ERR_VALUE, "Only '.' or '[' may follow ']' in format field specifier");
            if (obj.type == TPL_T_UNDEF)
                return tpl_undefined_error(vm, obj);
            tpl_value prev = obj;
            if (tpl_getitem(vm, obj, key, &obj) < 0)
                return -1;
            /* Plain Python obj[key] outside the sandbox: a missing key is an error. */
            if (!tpl_vm_hf(vm) && obj.type == TPL_T_UNDEF) {
                if (prev.type == TPL_T_MAP) {
                    tpl_sb kb;
                    tpl_sb_init(&kb, AR(vm));
                    tpl_py_repr(&kb, key);
                    return tpl_vm_error(vm, TPL_ERR_VALUE, "%.*s", (int)kb.len, kb.p ? kb.p : "");
                }
                if (prev.type == TPL_T_LIST || prev.type == TPL_T_STR)
                    return tpl_vm_error(vm, TPL_ERR_VALUE, key.type == TPL_T_STR
                                        ? "%s indices must be integers or slices, not str" : "%s index out of range",
                                        prev.type == TPL_T_STR ? "string" : tpl_type_name(vm, prev));
                return tpl_vm_error(vm, TPL_ERR_TYPE, "'%s' object is not subscriptable", tpl_type_name(vm, prev));
            }
        } else {
            return tpl_vm_error(vm, TPL_ERR_VALUE, "Only '.' or '[' may follow ']' in format field specifier");
        }
    }
    *out = obj;
    return 0;
}

static int vformat(tpl_vm *vm, fmt_state *st, tpl_sb *b, const char *s, size_t n, int depth)
{
    if (depth > 2)
        return tpl_vm_error(vm, TPL_ERR_VALUE, "Max string recursion exceeded");
    size_t i = 0;
    while (i < n) {
        char c = s[i];
        if (c == '}') {
            if (i + 1 < n && s[i + 1] == '}') {
                tpl_sb_putc(b, '}');
                i += 2;
                continue;
            }
            return tpl_vm_error(vm, TPL_ERR_VALUE, "Single '}' encountered in format string");
        }
        if (c != '{') {
            size_t j = i;
            while (j < n && s[j] != '{' && s[j] != '}')
                j++;
            tpl_sb_put(b, s + i, j - i);
            i = j;
            continue;
        }
        if (i + 1 < n && s[i + 1] == '{') {
            tpl_sb_putc(b, '{');
            i += 2;
            continue;
        }
        /* A replacement field: find its end, honouring nested braces. */
        size_t start = ++i;
        int nest = 1;
        size_t end = start;
        while (end < n) {
            if (s[end] == '{') nest++;
            else if (s[end] == '}' && --nest == 0) break;
            end++;
        }
        if (end >= n) {
            if (nest > 1 || end > start)
                return tpl_vm_error(vm, TPL_ERR_VALUE, "expected '}' before end of string");
            return tpl_vm_error(vm, TPL_ERR_VALUE, "Single '{' encountered in format string");
        }
        i = end + 1;
        /* field_name [! conv] [: spec] */
        size_t k = start;
        int bracket = 0;
        while (k < end) {
            if (s[k] == '[') bracket++;
            else if (s[k] == ']') bracket--;
            else if (bracket == 0 && (s[k] == '!' || s[k] == ':')) break;
            k++;
        }
        size_t name_end = k;
        char conv = 0;
        if (k < end && s[k] == '!') {
            if (k + 1 >= end)
                return tpl_vm_error(vm, TPL_ERR_VALUE, "end of string while looking for conversion specifier");
            conv = s[k + 1];
            k += 2;
            if (k < end && s[k] != ':')
                return tpl_vm_error(vm, TPL_ERR_VALUE, "expected ':' after conversion specifier");
        }
        const char *spec = "";
        size_t nspec = 0;
        if (k < end && s[k] == ':') {
            spec = s + k + 1;
            nspec = end - k - 1;
        }
        tpl_value v;
        if (resolve_field(vm, st, s + start, name_end - start, &v) < 0)
            return -1;
        if (conv) {
            tpl_sb cb;
            tpl_sb_init(&cb, AR(vm));
            if (v.type == TPL_T_UNDEF && tpl_vm_strict(vm))
                return tpl_undefined_error(vm, v);
            if (conv == 'r') tpl_py_repr(&cb, v);
            else if (conv == 's') tpl_py_str(&cb, v);
            else if (conv == 'a') py_ascii(vm, &cb, v);
            else
                return tpl_vm_error(vm, TPL_ERR_VALUE, "Unknown conversion specifier %c", conv);
            v = tpl_sb_value(&cb);
        }
        if (memchr(spec, '{', nspec)) {
            tpl_sb sb2;
            tpl_sb_init(&sb2, AR(vm));
            if (vformat(vm, st, &sb2, spec, nspec, depth + 1) < 0)
                return -1;
            spec = sb2.p ? sb2.p : "";
            nspec = sb2.len;
        }
        if (tpl_format_value(vm, b, v, spec, nspec) < 0)
            return -1;
    }
    return 0;
}

int tpl_str_format(tpl_vm *vm, tpl_value fmt, const tpl_value *args, int nargs,
                   const tpl_map *kwargs, tpl_value *out)
{
    fmt_state st = { args, nargs, kwargs, 0, false };
    tpl_sb b;
    tpl_sb_init(&b, AR(vm));
    if (vformat(vm, &st, &b, fmt.u.s, fmt.len, 0) < 0)
        return -1;
    if (b.failed)
        return OOM();
    *out = tpl_sb_value(&b);
    return 0;
}

/* ------------------------------------------------------------------ printf-style % */

/* Pads s (ncp code points) to width with spaces (left unless '-'), or zeros after the sign. */
static void pct_pad(tpl_sb *b, const char *s, size_t n, int64_t ncp, int64_t width, bool left, bool zero,
                    size_t signlen)
{
    int64_t pad = width > ncp ? width - ncp : 0;
    if (left) {
        tpl_sb_put(b, s, n);
        put_fill(b, ' ', pad);
    } else if (zero) {
        tpl_sb_put(b, s, signlen);
        put_fill(b, '0', pad);
        tpl_sb_put(b, s + signlen, n - signlen);
    } else {
        put_fill(b, ' ', pad);
        tpl_sb_put(b, s, n);
    }
}

int tpl_str_mod(tpl_vm *vm, tpl_value fmt, tpl_value args, tpl_value *out)
{
    if (fmt.type != TPL_T_STR)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "format string must be str");
    bool safe = (fmt.flags & TPL_F_SAFE) != 0;
    /* ERB's String#% is Ruby's format: %s is to_s (nil prints nothing), %p inspect, %b binary,
     * %{name} and %<name> read a hash, extra arguments are ignored */
    bool rb = tpl_vm_syntax(vm) == TPL_SYNTAX_ERB;
    const tpl_value *items = &args;
    int64_t nitems = 1, argi = 0;
    bool tuple = args.type == TPL_T_LIST && (args.flags & TPL_F_TUPLE);
    if (tuple) {
        items = args.u.list->items;
        nitems = args.u.list->len;
    }
    /* Python treats any non-tuple, non-str object with __getitem__ as a mapping for %(key)s. */
    bool mapping = !tuple && (args.type == TPL_T_MAP || args.type == TPL_T_LIST);
    const char *s = fmt.u.s;
    size_t n = fmt.len, i = 0;
    tpl_sb b;
    tpl_sb_init(&b, AR(vm));
    while (i < n) {
        const char *pct = memchr(s + i, '%', n - i);
        if (!pct) {
            tpl_sb_put(&b, s + i, n - i);
            break;
        }
        size_t at = (size_t)(pct - s);
        tpl_sb_put(&b, s + i, at - i);
        i = at + 1;
        if (i >= n)
            return tpl_vm_error(vm, TPL_ERR_VALUE, "incomplete format");
        tpl_value arg = tpl_v_unset();
        bool have_key = false;
        if (rb && (s[i] == '{' || s[i] == '<')) {
            char close = s[i] == '{' ? '}' : '>';
            size_t ks = ++i;
            while (i < n && s[i] != close) i++;
            if (i >= n)
                return tpl_vm_error(vm, TPL_ERR_VALUE, "malformed name - unmatched parenthesis (ArgumentError)");
            tpl_value key = tpl_v_str(s + ks, i - ks);
            i++;
            if (args.type != TPL_T_MAP)
                return tpl_vm_error(vm, TPL_ERR_VALUE, "one hash required (ArgumentError)");
            tpl_value *v = tpl_map_get(args.u.map, key);
            if (!v)
                return tpl_vm_error(vm, TPL_ERR_VALUE, "key<%.*s> not found (KeyError)", (int)key.len, key.u.s);
            if (close == '}') { /* %{name}: the value's to_s, as it is */
                tpl_rb_to_s(&b, *v);
                continue;
            }
            arg = *v;
            have_key = true;
        } else if (s[i] == '(') {
            if (!mapping)
                return tpl_vm_error(vm, TPL_ERR_TYPE, "format requires a mapping");
            int depth = 1;
            size_t ks = ++i;
            while (i < n && depth > 0) {
                if (s[i] == '(') depth++;
                else if (s[i] == ')') depth--;
                i++;
            }
            if (depth > 0)
                return tpl_vm_error(vm, TPL_ERR_VALUE, "incomplete format key");
            tpl_value key = tpl_v_str(s + ks, i - 1 - ks);
            if (args.type == TPL_T_LIST)
                return tpl_vm_error(vm, TPL_ERR_TYPE, "list indices must be integers or slices, not str");
            tpl_value *v = tpl_map_get(args.u.map, key);
            if (!v)
                return tpl_vm_error(vm, TPL_ERR_VALUE, "'%.*s'", (int)key.len, key.u.s);
            arg = *v;
            have_key = true;
        }
        bool left = false, plus = false, space = false, alt = false, zero = false;
        for (; i < n; i++) {
            char c = s[i];
            if (c == '-') left = true;
            else if (c == '+') plus = true;
            else if (c == ' ') space = true;
            else if (c == '#') alt = true;
            else if (c == '0') zero = true;
            else break;
        }
        int64_t width = -1, prec = -1;
        if (i < n && s[i] == '*') {
            i++;
            if (argi >= nitems)
                return tpl_vm_error(vm, TPL_ERR_TYPE, "not enough arguments for format string");
            tpl_value w = items[argi++];
            if (w.type != TPL_T_INT && w.type != TPL_T_BOOL)
                return tpl_vm_error(vm, TPL_ERR_TYPE, "* wants int");
            width = w.u.i;
            if (width < 0) { left = true; width = width < -100000000 ? 100000000 : -width; }
            if (width > 100000000)
                return tpl_vm_error(vm, TPL_ERR_VALUE, "width too big");
        } else {
            while (i < n && s[i] >= '0' && s[i] <= '9') {
                width = (width < 0 ? 0 : width) * 10 + (s[i++] - '0');
                if (width > 100000000)
                    return tpl_vm_error(vm, TPL_ERR_VALUE, "width too big");
            }
        }
        if (i < n && s[i] == '.') {
            i++;
            prec = 0;
            if (i < n && s[i] == '*') {
                i++;
                if (argi >= nitems)
                    return tpl_vm_error(vm, TPL_ERR_TYPE, "not enough arguments for format string");
                tpl_value p = items[argi++];
                if (p.type != TPL_T_INT && p.type != TPL_T_BOOL)
                    return tpl_vm_error(vm, TPL_ERR_TYPE, "* wants int");
                prec = p.u.i < 0 ? 0 : p.u.i;
                if (prec > 100000000)
                    return tpl_vm_error(vm, TPL_ERR_VALUE, "precision too big");
            } else {
                while (i < n && s[i] >= '0' && s[i] <= '9') {
                    prec = prec * 10 + (s[i++] - '0');
                    if (prec > 100000000)
                        return tpl_vm_error(vm, TPL_ERR_VALUE, "precision too big");
                }
            }
        }
        while (i < n && (s[i] == 'h' || s[i] == 'l' || s[i] == 'L'))
            i++;
        if (i >= n)
            return tpl_vm_error(vm, TPL_ERR_VALUE, "incomplete format");
        char conv = s[i++];
        if (conv == '%') {
            tpl_sb_putc(&b, '%');
            continue;
        }
        if (!have_key) {
            if (argi >= nitems)
                return tpl_vm_error(vm, TPL_ERR_TYPE, rb ? "too few arguments (ArgumentError)"
                                                         : "not enough arguments for format string");
            arg = items[argi++];
        }
        if (rb && conv == 'p') conv = 'r';
        else if (rb && conv == 'r') conv = '?'; /* not a Ruby conversion */
        if (arg.type == TPL_T_UNDEF && (tpl_vm_strict(vm) || (conv != 's' && conv != 'r' && conv != 'a')))
            return tpl_undefined_error(vm, arg);
        tpl_sb tb;
        tpl_sb_init(&tb, AR(vm));
        switch (conv) {
        case 's': case 'r': case 'a': {
            if (conv == 's') (rb ? tpl_rb_to_s : tpl_py_str)(&tb, arg);
            else if (conv == 'r') (rb ? tpl_rb_inspect : tpl_py_repr)(&tb, arg);
            else py_ascii(vm, &tb, arg);
            tpl_value t = tpl_sb_value(&tb);
            if (safe && !(arg.type == TPL_T_STR && (arg.flags & TPL_F_SAFE) && conv == 's')) {
                tpl_sb eb;
                tpl_sb_init(&eb, AR(vm));
                tpl_html_escape(&eb, t.u.s, t.len);
                t = tpl_sb_value(&eb);
            }
            size_t nb = t.len;
            int64_t ncp = (int64_t)tpl_utf8_len(t.u.s, t.len);
            if (prec >= 0 && ncp > prec) {
                nb = tpl_utf8_offset(t.u.s, t.len, (size_t)prec);
                ncp = prec;
            }
            pct_pad(&b, t.u.s, nb, ncp, width, left, false, 0);
            break;
        }
        case 'b': case 'B':
            if (!rb) goto unsupported;
            /* fallthrough */
        case 'd': case 'i': case 'u': case 'o': case 'x': case 'X': {
            int64_t v;
            if (rb && arg.type != TPL_T_INT) { /* Ruby converts with Integer(): "12", 3.9 -> 3 */
                tpl_value cv[2] = { arg, tpl_v_unset() };
                if (r_k_Integer(vm, cv, &arg) < 0) return -1;
            }
            tpl_value bigv = tpl_v_none(); /* a big int argument (bigint.h) */
            if (arg.type == TPL_T_INT || arg.type == TPL_T_BOOL) {
                v = arg.u.i;
            } else if (arg.type == TPL_T_BIGINT) {
                bigv = arg;
                v = arg.u.s[0] == '-' ? -1 : 1;
            } else if (arg.type == TPL_T_FLOAT && (conv == 'd' || conv == 'i' || conv == 'u')) {
                double d = arg.u.f;
                if (isnan(d))
                    return tpl_vm_error(vm, TPL_ERR_VALUE, "cannot convert float NaN to integer");
                if (isinf(d))
                    return tpl_vm_fail(vm, TPL_EK_OVERFLOW, "cannot convert float infinity to integer");
                if (!(d > -9.2e18 && d < 9.2e18)) {
                    if (tpl_big_from_double(vm, d, &bigv) < 0) return -1;
                    v = d < 0 ? -1 : 1;
                } else {
                    v = (int64_t)d;
                }
            } else if (conv == 'd' || conv == 'i' || conv == 'u') {
                return tpl_vm_error(vm, TPL_ERR_TYPE, "%%%c format: a real number is required, not %s", conv,
                                    tpl_type_name(vm, arg));
            } else {
                return tpl_vm_error(vm, TPL_ERR_TYPE, "%%%c format: an integer is required, not %s", conv,
                                    tpl_type_name(vm, arg));
            }
            uint64_t mag = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
            char dgbuf[72], *dg = dgbuf;
            int64_t nd = 0;
            int base = (conv == 'o') ? 8 : (conv == 'x' || conv == 'X') ? 16 : (conv == 'b' || conv == 'B') ? 2 : 10;
            const char *digs = conv == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
            if (bigv.type == TPL_T_BIGINT) {
                if (!rb && base == 10 && tpl_big_ndigits(bigv) > TPL_PY_INT_MAX_STR_DIGITS)
                    return tpl_big_str_error(vm);
                mpz_t z;
                tpl_big_get(z, bigv);
                mpz_abs(z, z);
                dg = tpl_arena_alloc(AR(vm), mpz_sizeinbase(z, base) + 2);
                if (!dg) { mpz_clear(z); return OOM(); }
                mpz_get_str(dg, conv == 'X' ? -16 : base, z);
                mpz_clear(z);
                nd = (int64_t)strlen(dg);
            } else {
                char tmp[72];
                do { tmp[nd++] = digs[mag % (uint64_t)base]; mag /= (uint64_t)base; } while (mag);
                for (int64_t k = 0; k < nd; k++) dg[k] = tmp[nd - 1 - k];
            }
            tpl_sb_put(&tb, v < 0 ? "-" : plus ? "+" : space ? " " : "", (v < 0 || plus || space) ? 1 : 0);
            if (alt && conv == 'o') tpl_sb_puts(&tb, rb ? "0" : "0o");
            if (alt && conv == 'b') tpl_sb_puts(&tb, "0b");
            if (alt && conv == 'B') tpl_sb_puts(&tb, "0B");
            if (alt && conv == 'x') tpl_sb_puts(&tb, "0x");
            if (alt && conv == 'X') tpl_sb_puts(&tb, "0X");
            size_t signlen = tb.len;
            if (prec > nd) put_fill(&tb, '0', prec - nd);
            tpl_sb_put(&tb, dg, (size_t)nd);
            pct_pad(&b, tb.p, tb.len, (int64_t)tb.len, width, left, zero && !left, signlen);
            break;
        }
        case 'e': case 'E': case 'f': case 'F': case 'g': case 'G': {
            double d;
            if (rb && arg.type != TPL_T_FLOAT && arg.type != TPL_T_INT) { /* Ruby's Float(): "1.5" */
                tpl_value cv[1] = { arg };
                if (r_k_Float(vm, cv, &arg) < 0) return -1;
            }
            if (arg.type == TPL_T_FLOAT) d = arg.u.f;
            else if (arg.type == TPL_T_INT || arg.type == TPL_T_BOOL) d = (double)arg.u.i;
            else if (arg.type == TPL_T_BIGINT) {
                if (!tpl_big_to_double(arg, &d))
                    return tpl_vm_fail(vm, TPL_EK_OVERFLOW, "int too large to convert to float");
            } else
                return tpl_vm_error(vm, TPL_ERR_TYPE, "must be real number, not %s", tpl_type_name(vm, arg));
            bool neg = signbit(d) && !isnan(d);
            tpl_sb_put(&tb, neg ? "-" : plus ? "+" : space ? " " : "", (neg || plus || space) ? 1 : 0);
            size_t signlen = tb.len;
            double ad = fabs(d);
            if (isnan(ad) || isinf(ad)) {
                bool up = conv == 'E' || conv == 'F' || conv == 'G';
                tpl_sb_puts(&tb, isnan(ad) ? (up ? "NAN" : "nan") : (up ? "INF" : "inf"));
            } else {
                char cf[16];
                if (prec > TPL_MAX_FLOAT_PREC)
                    return tpl_vm_error(vm, TPL_ERR_LIMIT, "precision too large (tpl formats at most %d digits)",
                                        TPL_MAX_FLOAT_PREC);
                int p = prec < 0 ? 6 : (int)prec;
                snprintf(cf, sizeof cf, "%%%s.*%c", alt ? "#" : "", conv);
                int need = snprintf(NULL, 0, cf, p, ad);
                if (need < 0 || !tpl_sb_reserve(&tb, (size_t)need + 1))
                    return OOM();
                snprintf(tb.p + tb.len, (size_t)need + 1, cf, p, ad);
                tb.len += (size_t)need;
            }
            pct_pad(&b, tb.p, tb.len, (int64_t)tb.len, width, left, zero && !left, signlen);
            break;
        }
        case 'c': {
            uint32_t cp;
            if (arg.type == TPL_T_INT || arg.type == TPL_T_BOOL) {
                if (arg.u.i < 0 || arg.u.i > 0x10FFFF)
                    return tpl_vm_error(vm, TPL_ERR_VALUE, "%%c arg not in range(0x110000)");
                cp = (uint32_t)arg.u.i;
            } else if (arg.type == TPL_T_STR && tpl_utf8_len(arg.u.s, arg.len) == 1) {
                size_t k = 0;
                cp = tpl_utf8_next(arg.u.s, arg.len, &k);
            } else {
                return tpl_vm_error(vm, TPL_ERR_TYPE, "%%c requires int or char");
            }
            tpl_sb_put_cp(&tb, cp);
            pct_pad(&b, tb.p, tb.len, 1, width, left, false, 0);
            break;
        }
        default:
        unsupported:
            if (rb)
                return tpl_vm_error(vm, TPL_ERR_VALUE, "malformed format string - %%%c (ArgumentError)", conv);
            if ((unsigned char)conv < 0x80)
                return tpl_vm_error(vm, TPL_ERR_VALUE, "unsupported format character '%c' (0x%x) at index %zu",
                                    conv, (unsigned)conv, i - 1);
            return tpl_vm_error(vm, TPL_ERR_VALUE, "unsupported format character at index %zu", i - 1);
        }
    }
    if (argi < nitems && !mapping && !rb)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "not all arguments converted during string formatting");
    if (b.failed)
        return OOM();
    *out = tpl_sb_value(&b);
    if (safe)
        out->flags = TPL_F_SAFE;
    return 0;
}

/* ------------------------------------------------------------------ more str methods
 * Not in builtins.def yet: each needs a line there (see the declarations in builtins.h). */

int m_str_swapcase(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (need_str(vm, a[0], "swapcase") < 0)
        return -1;
    tpl_value s = a[0];
    tpl_sb b;
    tpl_sb_init(&b, AR(vm));
    size_t i = 0;
    while (i < s.len) {
        size_t j = i;
        uint32_t c = tpl_utf8_next(s.u.s, s.len, &j);
        if (tpl_uc_isupper(c))
            tpl_py_lower_at(&b, s.u.s, s.len, i, j); /* in context: the final sigma */
        else if (tpl_uc_islower(c))
            tpl_py_upper(&b, s.u.s + i, j - i);
        else
            tpl_sb_put(&b, s.u.s + i, j - i);
        i = j;
    }
    if (b.failed)
        return OOM();
    *out = tpl_sb_value(&b);
    return 0;
}

static int find_common(tpl_vm *vm, tpl_value *a, bool rev, const char *name, int64_t *pos)
{
    if (need_str(vm, a[0], name) < 0 || sub_arg(vm, a[1], name) < 0)
        return -1;
    span_t sp = {0};
    if (adjust_span(vm, a[0], a[2], a[3], &sp) < 0)
        return -1;
    *pos = -1;
    if (sp.cstart > sp.clen || sp.cend < sp.cstart)
        return 0;
    const char *base = a[0].u.s + sp.bstart;
    size_t n = sp.bend - sp.bstart;
    const char *q = rev ? memrmem_(base, n, a[1].u.s, a[1].len) : memmem_(base, n, a[1].u.s, a[1].len);
    if (q)
        *pos = sp.cstart + (int64_t)tpl_utf8_len(base, (size_t)(q - base));
    return 0;
}

int m_str_rfind(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    int64_t p;
    if (find_common(vm, a, true, "rfind", &p) < 0)
        return -1;
    *out = tpl_v_int(p);
    return 0;
}

int m_str_index(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    int64_t p;
    if (find_common(vm, a, false, "index", &p) < 0)
        return -1;
    if (p < 0)
        return tpl_vm_error(vm, TPL_ERR_VALUE, "substring not found");
    *out = tpl_v_int(p);
    return 0;
}

int m_str_rindex(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    int64_t p;
    if (find_common(vm, a, true, "rindex", &p) < 0)
        return -1;
    if (p < 0)
        return tpl_vm_error(vm, TPL_ERR_VALUE, "substring not found");
    *out = tpl_v_int(p);
    return 0;
}

/* ljust / rjust / center with an optional one-character fill. which: 0 ljust, 1 rjust, 2 center */
static int justify(tpl_vm *vm, tpl_value *a, tpl_value *out, int which, const char *name)
{
    if (need_str(vm, a[0], name) < 0)
        return -1;
    int64_t width;
    if (tpl_arg_index(vm, a[1], &width) < 0)
        return -1;
    uint32_t fill = ' ';
    if (tpl_given(a[2])) {
        tpl_value f = a[2];
        if (f.type != TPL_T_STR || tpl_utf8_len(f.u.s, f.len) != 1)
            return tpl_vm_error(vm, TPL_ERR_TYPE, "The fill character must be exactly one character long");
        size_t k = 0;
        fill = tpl_utf8_next(f.u.s, f.len, &k);
    }
    tpl_value s = a[0];
    int64_t len = (int64_t)cplen(s);
    if (width <= len) {
        *out = s;
        return 0;
    }
    if (width > 100000000)
        return tpl_vm_error(vm, TPL_ERR_LIMIT, "width too large");
    int64_t marg = width - len, left;
    if (which == 0) left = 0;
    else if (which == 1) left = marg;
    else left = marg / 2 + (marg & width & 1);
    tpl_sb b;
    tpl_sb_init(&b, AR(vm));
    put_fill(&b, fill, left);
    tpl_sb_put(&b, s.u.s, s.len);
    put_fill(&b, fill, marg - left);
    if (b.failed)
        return OOM();
    *out = tpl_sb_value(&b);
    return 0;
}

int m_str_ljust(tpl_vm *vm, tpl_value *a, tpl_value *out) { return justify(vm, a, out, 0, "ljust"); }
int m_str_rjust(tpl_vm *vm, tpl_value *a, tpl_value *out) { return justify(vm, a, out, 1, "rjust"); }
int m_str_center(tpl_vm *vm, tpl_value *a, tpl_value *out) { return justify(vm, a, out, 2, "center"); }

int m_str_zfill(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (need_str(vm, a[0], "zfill") < 0)
        return -1;
    int64_t width;
    if (tpl_arg_index(vm, a[1], &width) < 0)
        return -1;
    tpl_value s = a[0];
    int64_t len = (int64_t)cplen(s);
    if (width <= len) {
        *out = s;
        return 0;
    }
    if (width > 100000000)
        return tpl_vm_error(vm, TPL_ERR_LIMIT, "width too large");
    tpl_sb b;
    tpl_sb_init(&b, AR(vm));
    size_t sign = s.len && (s.u.s[0] == '+' || s.u.s[0] == '-');
    tpl_sb_put(&b, s.u.s, sign);
    put_fill(&b, '0', width - len);
    tpl_sb_put(&b, s.u.s + sign, s.len - sign);
    if (b.failed)
        return OOM();
    *out = tpl_sb_value(&b);
    return 0;
}

static int partition(tpl_vm *vm, tpl_value *a, tpl_value *out, bool rev, const char *name)
{
    if (need_str(vm, a[0], name) < 0)
        return -1;
    tpl_value s = a[0], sep = a[1];
    if (sep.type != TPL_T_STR)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "must be str, not %s", tpl_type_name(vm, sep));
    if (sep.len == 0)
        return tpl_vm_error(vm, TPL_ERR_VALUE, "empty separator");
    tpl_list *l = tpl_list_new(AR(vm), 3);
    if (!l)
        return OOM();
    const char *q = rev ? memrmem_(s.u.s, s.len, sep.u.s, sep.len) : memmem_(s.u.s, s.len, sep.u.s, sep.len);
    if (!q) {
        tpl_value e = tpl_v_str("", 0);
        l->items[0] = rev ? e : s;
        l->items[1] = e;
        l->items[2] = rev ? s : e;
    } else {
        size_t at = (size_t)(q - s.u.s);
        l->items[0] = substr(s, 0, at);
        l->items[1] = substr(s, at, at + sep.len);
        l->items[2] = substr(s, at + sep.len, s.len);
    }
    l->len = 3;
    *out = tpl_v_list(l);
    out->flags = TPL_F_TUPLE;
    return 0;
}

int m_str_partition(tpl_vm *vm, tpl_value *a, tpl_value *out) { return partition(vm, a, out, false, "partition"); }
int m_str_rpartition(tpl_vm *vm, tpl_value *a, tpl_value *out) { return partition(vm, a, out, true, "rpartition"); }

static int remove_affix(tpl_vm *vm, tpl_value *a, tpl_value *out, bool suffix, const char *name)
{
    if (need_str(vm, a[0], name) < 0)
        return -1;
    tpl_value s = a[0], p = a[1];
    if (p.type != TPL_T_STR)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "%s() argument must be str, not %s", name, tpl_type_name(vm, p));
    *out = s;
    if (p.len <= s.len) {
        if (!suffix && memcmp(s.u.s, p.u.s, p.len) == 0)
            *out = substr(s, p.len, s.len);
        else if (suffix && memcmp(s.u.s + s.len - p.len, p.u.s, p.len) == 0 && p.len)
            *out = substr(s, 0, s.len - p.len);
    }
    return 0;
}

int m_str_removeprefix(tpl_vm *vm, tpl_value *a, tpl_value *out) { return remove_affix(vm, a, out, false, "removeprefix"); }
int m_str_removesuffix(tpl_vm *vm, tpl_value *a, tpl_value *out) { return remove_affix(vm, a, out, true, "removesuffix"); }

int m_str_isnumeric(tpl_vm *vm, tpl_value *a, tpl_value *out) { return all_cp(vm, a, out, tpl_uc_isnumeric, "isnumeric"); }
int m_str_isdecimal(tpl_vm *vm, tpl_value *a, tpl_value *out) { return all_cp(vm, a, out, tpl_uc_isdecimal, "isdecimal"); }

int m_str_istitle(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (need_str(vm, a[0], "istitle") < 0)
        return -1;
    tpl_value s = a[0];
    bool cased = false, prev_cased = false;
    size_t i = 0;
    while (i < s.len) {
        uint32_t c = tpl_utf8_next(s.u.s, s.len, &i);
        if (tpl_uc_isupper(c) || tpl_uc_istitle(c)) {
            if (prev_cased) {
                *out = tpl_v_bool(false);
                return 0;
            }
            prev_cased = cased = true;
        } else if (tpl_uc_islower(c)) {
            if (!prev_cased) {
                *out = tpl_v_bool(false);
                return 0;
            }
            prev_cased = cased = true;
        } else {
            prev_cased = false;
        }
    }
    *out = tpl_v_bool(cased);
    return 0;
}
