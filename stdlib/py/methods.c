/* Python methods on str, dict and list values (Python's string formatting: stdlib/fmt/). */
#include "../builtins.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OOM() tpl_vm_nomem(vm)

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
    if (tpl_given(a[1]) && a[1].type != TPL_T_INT && a[1].type != TPL_T_BOOL && a[1].type != TPL_T_BIGINT &&
        a[1].type != TPL_T_HOST) /* keepends: bool(accept={int}) */
        return tpl_vm_error(vm, TPL_ERR_TYPE, "'%s' object cannot be interpreted as an integer", tpl_type_name(vm, a[1]));
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
    return tpl_str_format(vm, a[0], a[1].u.list->items, (int)a[1].u.list->len, a[2].u.map,
                          (a[0].flags & TPL_F_SAFE) != 0, out);
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
    /* (on Markup, tpl_markup_method makes the result Markup: MarkupSafe 3.0 wraps casefold) */
    int rc = case_method(vm, a, out, tpl_py_casefold, "casefold");
    if (rc == 0) out->flags &= (uint8_t)~TPL_F_SAFE;
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
        /* (tabsize is a C int in Python: past it, OverflowError) */
        if (a[1].type == TPL_T_BIGINT || (a[1].type == TPL_T_INT && (a[1].u.i < INT32_MIN || a[1].u.i > INT32_MAX)))
            return tpl_vm_fail(vm, TPL_EK_OVERFLOW, "Python int too large to convert to C int");
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
                tpl_sb_put_fill(&b, ' ', pad); /* (at once: a tabsize past the memory limit fails here) */
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
    return tpl_str_format(vm, a[0], NULL, 0, a[1].u.map, (a[0].flags & TPL_F_SAFE) != 0, out);
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
        if (r.type == TPL_T_INT && r.u.i >= 0 && r.u.i <= 0x10FFFF) {
            if (tpl_vm_put_cp(vm, &b, (uint32_t)r.u.i) < 0)
                return -1;
            continue;
        }
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
    return tpl_vm_view_new(vm, self, what, out); /* (live: tpl_vm_view_sync) */
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

/* dict.copy(): a new dict with the same entries in the same order (a shallow copy, as Python's;
 * transformers' immutable sandbox allows it: it does not change the receiver). */
int m_map_copy(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (need_map(vm, a[0], "copy") < 0) return -1;
    const tpl_map *m = a[0].u.map;
    tpl_map *c = tpl_map_new(AR(vm), m->len);
    if (!c)
        return OOM();
    c->eql = m->eql;
    for (uint32_t i = 0; i < m->len; i++)
        if (!tpl_map_append(AR(vm), c, m->e[i].key, m->e[i].hash, m->e[i].val))
            return OOM();
    tpl_vm_dict_holed(vm, c, m); /* (PyDict_Copy may clone the table, deleted entries too) */
    *out = tpl_v_map(c);
    return 0;
}

static int hashable(tpl_vm *vm, tpl_value k) { return tpl_vm_check_hashable(vm, k); }

int m_map_get(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (need_map(vm, a[0], "get") < 0 || hashable(vm, a[1]) < 0)
        return -1;
    tpl_value *v;
    if (tpl_vm_map_get(vm, a[0].u.map, a[1], &v) < 0)
        return -1;
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

/* A start or stop of list.index / tuple.index: Python's slice index (an int; None too is a
 * TypeError there), clamped to [0, len] after a negative one counts from the end. */
static int seq_bound(tpl_vm *vm, tpl_value v, int64_t len, int64_t dflt, int64_t *out)
{
    int64_t i;
    if (!tpl_given(v))
        i = dflt;
    else if (v.type == TPL_T_INT || v.type == TPL_T_BOOL)
        i = v.u.i;
    else if (v.type == TPL_T_BIGINT)
        i = v.u.s[0] == '-' ? INT64_MIN / 2 : INT64_MAX / 2;
    else
        return tpl_vm_error(vm, TPL_ERR_TYPE, "slice indices must be integers or have an __index__ method");
    if (i < 0 && (i += len) < 0)
        i = 0;
    *out = i > len ? len : i;
    return 0;
}

int m_list_index(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (need_list(vm, a[0], "index") < 0)
        return -1;
    int64_t from = 0, to = a[0].u.list->len;
    if (a[0].aux == TPL_LAZY_RANGE && (tpl_given(a[2]) || tpl_given(a[3])))
        return tpl_vm_error(vm, TPL_ERR_TYPE, "index() takes exactly one argument (%d given)", tpl_given(a[3]) ? 3 : 2);
    if (seq_bound(vm, a[2], to, 0, &from) < 0 || seq_bound(vm, a[3], to, to, &to) < 0)
        return -1;
    if (a[0].flags & TPL_F_RANGE_BIG) { /* range.index of a range held without its items */
        mpz_t at;
        mpz_init(at);
        bool found = tpl_range_find(a[0], a[1], at);
        int rc = found ? tpl_big_result(vm, at, out) : 0;
        if (!found)
            mpz_clear(at);
        if (found)
            return rc;
    }
    const tpl_list *l = a[0].u.list;
    for (int64_t i = from; i < to; i++) {
        bool eq = false;
        if (tpl_vm_item_equal(vm, l->items[i], a[1], &eq) < 0)
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
    return tpl_vm_error(vm, TPL_ERR_VALUE, "%.*s is not in %s", (int)b.len, b.p ? b.p : "",
                        a[0].aux == TPL_LAZY_RANGE ? "range" : "list");
}

/* list.copy(): a new list holding the same items (shallow, as Python's). */
int m_list_copy(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (need_list(vm, a[0], "copy") < 0)
        return -1;
    const tpl_list *l = a[0].u.list;
    tpl_list *c = tpl_list_new(AR(vm), l->len);
    if (!c)
        return OOM();
    if (l->len)
        memcpy(c->items, l->items, l->len * sizeof *c->items);
    c->len = l->len;
    *out = tpl_v_list(c);
    return 0;
}

/* g._asdict() of a groupby result (a (grouper, list) namedtuple, TPL_F_GROUP; method_gate offers it
 * on nothing else): the dict {'grouper': ..., 'list': ...}, as Python's namedtuple. */
int m_list_asdict(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    const tpl_list *l = a[0].u.list;
    tpl_map *m = a[0].type == TPL_T_LIST && l->len == 2 ? tpl_map_new(AR(vm), 2) : NULL;
    if (!m)
        return a[0].type == TPL_T_LIST && l->len == 2 ? OOM() : tpl_vm_error(vm, TPL_ERR_TYPE, "_asdict() needs a groupby result");
    if (!tpl_map_append(AR(vm), m, tpl_v_str("grouper", 7), tpl_hash_str("grouper", 7), l->items[0]) ||
        !tpl_map_append(AR(vm), m, tpl_v_str("list", 4), tpl_hash_str("list", 4), l->items[1]))
        return OOM();
    *out = tpl_v_map(m);
    return 0;
}

int m_list_count(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (need_list(vm, a[0], "count") < 0)
        return -1;
    if (a[0].flags & TPL_F_RANGE_BIG) { /* range.count: an item is in a range once */
        mpz_t at;
        mpz_init(at);
        *out = tpl_v_int(tpl_range_find(a[0], a[1], at));
        mpz_clear(at);
        return 0;
    }
    const tpl_list *l = a[0].u.list;
    int64_t c = 0;
    for (uint32_t i = 0; i < l->len; i++) {
        bool eq = false;
        if (tpl_vm_item_equal(vm, l->items[i], a[1], &eq) < 0)
            return -1;
        c += eq;
    }
    *out = tpl_v_int(c);
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
    if ((uint64_t)width > tpl_vm_max_output(vm)) /* Python pads: past the output limit anyway */
        return tpl_vm_limit(vm, TPL_EK_OUTPUT_LIMIT, tpl_vm_max_output(vm));
    int64_t marg = width - len, left;
    if (which == 0) left = 0;
    else if (which == 1) left = marg;
    else left = marg / 2 + (marg & width & 1);
    tpl_sb b;
    tpl_sb_init(&b, AR(vm));
    tpl_sb_put_fill(&b, fill, left);
    tpl_sb_put(&b, s.u.s, s.len);
    tpl_sb_put_fill(&b, fill, marg - left);
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
    if ((uint64_t)width > tpl_vm_max_output(vm)) /* Python pads: past the output limit anyway */
        return tpl_vm_limit(vm, TPL_EK_OUTPUT_LIMIT, tpl_vm_max_output(vm));
    tpl_sb b;
    tpl_sb_init(&b, AR(vm));
    size_t sign = s.len && (s.u.s[0] == '+' || s.u.s[0] == '-');
    tpl_sb_put(&b, s.u.s, sign);
    tpl_sb_put_fill(&b, '0', width - len);
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

/* ------------------------------------------------------------------ mutating methods (issue 14) */

/* Python's mutating list and dict methods, outside the hf profile (whose sandbox refuses them:
 * runtime/vm.c tpl_getattr). The list or dict changes in place, so every name holding it sees the
 * change (runtime/vm.c tpl_vm_list_room & co.: a container the render did not make is a located
 * error); each answers None as Python's, except pop, popitem and setdefault. */

/* self is a list (not a tuple, range, view or iterator: method_gate offers these on nothing else) */
static int need_plain_list(tpl_vm *vm, tpl_value self, const char *name)
{
    if (need_list(vm, self, name) < 0)
        return -1;
    if ((self.flags & TPL_F_TUPLE) || self.aux != TPL_LAZY_NONE)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "descriptor '%s' for 'list' objects doesn't apply to a '%s' object",
                            name, tpl_type_name(vm, self));
    return 0;
}

/* An index argument (insert, pop): an int or bool as Python's __index__; 1 when it is past int64
 * (*big_neg says its sign), 0 with *i, -1 with Python's TypeError. */
static int index_arg(tpl_vm *vm, tpl_value v, int64_t *i, bool *big_neg)
{
    if (v.type == TPL_T_INT || v.type == TPL_T_BOOL) {
        *i = v.u.i;
        return 0;
    }
    if (v.type == TPL_T_BIGINT) {
        *big_neg = v.u.s[0] == '-';
        return 1;
    }
    if (v.type == TPL_T_UNDEF && tpl_vm_strict_undef(vm, v))
        return tpl_undefined_error(vm, v);
    return tpl_vm_error(vm, TPL_ERR_TYPE, "'%s' object cannot be interpreted as an integer", tpl_type_name(vm, v));
}

int m_list_append(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (need_plain_list(vm, a[0], "append") < 0 || tpl_vm_list_room(vm, a[0], 1, "list.append") < 0)
        return -1;
    tpl_list *l = a[0].u.list;
    l->items[l->len++] = a[1];
    *out = tpl_v_none();
    return 0;
}

int m_list_extend(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (need_plain_list(vm, a[0], "extend") < 0)
        return -1;
    tpl_list *src;
    if (a[1].type == TPL_T_UNDEF ? tpl_iter_list(vm, a[1], &src) < 0 : tpl_to_list(vm, a[1], &src) < 0)
        return -1;
    /* (the source's items as they are now: `xs.extend(xs)` doubles xs once, as Python's) */
    const tpl_value *items = src->items;
    uint32_t n = src->len;
    if (n && tpl_vm_list_room(vm, a[0], n, "list.extend") < 0)
        return -1;
    tpl_list *l = a[0].u.list;
    if (n) {
        memmove(l->items + l->len, items, (size_t)n * sizeof *items);
        l->len += n;
    }
    *out = tpl_v_none();
    return 0;
}

int m_list_insert(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (need_plain_list(vm, a[0], "insert") < 0)
        return -1;
    int64_t i = 0;
    bool neg = false;
    int r = index_arg(vm, a[1], &i, &neg);
    if (r < 0)
        return -1;
    if (r == 1) /* (list.insert's index is a Py_ssize_t: 10**30 is no clamp, as a slice's is) */
        return tpl_vm_fail(vm, TPL_EK_OVERFLOW, "Python int too large to convert to C ssize_t");
    tpl_list *l = a[0].u.list;
    int64_t len = l->len;
    if (i < 0 && (i += len) < 0)
        i = 0;
    if (i > len)
        i = len;
    if (tpl_vm_list_fresh(vm, a[0], 1, "list.insert") < 0)
        return -1;
    memmove(l->items + i + 1, l->items + i, (size_t)(len - i) * sizeof *l->items);
    l->items[i] = a[2];
    l->len++;
    *out = tpl_v_none();
    return 0;
}

int m_list_pop(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (need_plain_list(vm, a[0], "pop") < 0)
        return -1;
    tpl_list *l = a[0].u.list;
    int64_t i = -1, len = l->len;
    bool neg = false;
    if (tpl_given(a[1])) {
        int r = index_arg(vm, a[1], &i, &neg);
        if (r < 0)
            return -1;
        if (r == 1) /* (a Py_ssize_t argument, as insert's) */
            return tpl_vm_fail(vm, TPL_EK_OVERFLOW, "Python int too large to convert to C ssize_t");
    }
    if (len == 0)
        return tpl_vm_fail(vm, TPL_EK_INDEX, "pop from empty list");
    if (i < 0)
        i += len;
    if (i < 0 || i >= len)
        return tpl_vm_fail(vm, TPL_EK_INDEX, "pop index out of range");
    *out = l->items[i];
    if (i == len - 1) { /* (no write: the array may stay shared) */
        if (tpl_vm_list_room(vm, a[0], 0, "list.pop") < 0)
            return -1;
        l->len--;
        return 0;
    }
    if (tpl_vm_list_fresh(vm, a[0], 0, "list.pop") < 0)
        return -1;
    memmove(l->items + i, l->items + i + 1, (size_t)(len - i - 1) * sizeof *l->items);
    l->len--;
    return 0;
}

int m_list_remove(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (need_plain_list(vm, a[0], "remove") < 0)
        return -1;
    tpl_list *l = a[0].u.list;
    for (uint32_t i = 0; i < l->len; i++) {
        bool eq = false;
        if (tpl_vm_item_equal(vm, l->items[i], a[1], &eq) < 0)
            return -1;
        if (!eq)
            continue;
        /* (a comparison cannot change the list: it runs no template code) */
        if (tpl_vm_list_fresh(vm, a[0], 0, "list.remove") < 0)
            return -1;
        memmove(l->items + i, l->items + i + 1, (size_t)(l->len - i - 1) * sizeof *l->items);
        l->len--;
        *out = tpl_v_none();
        return 0;
    }
    return tpl_vm_error(vm, TPL_ERR_VALUE, "list.remove(x): x not in list");
}

int m_list_clear(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (need_plain_list(vm, a[0], "clear") < 0 || tpl_vm_list_room(vm, a[0], 0, "list.clear") < 0)
        return -1;
    a[0].u.list->len = 0;
    *out = tpl_v_none();
    return 0;
}

int m_list_reverse(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (need_plain_list(vm, a[0], "reverse") < 0 || tpl_vm_list_fresh(vm, a[0], 0, "list.reverse") < 0)
        return -1;
    tpl_list *l = a[0].u.list;
    for (uint32_t i = 0, j = l->len; i + 1 < j; i++, j--) {
        tpl_value t = l->items[i];
        l->items[i] = l->items[j - 1];
        l->items[j - 1] = t;
    }
    *out = tpl_v_none();
    return 0;
}

/* list.sort(*, key=None, reverse=False): Python's stable sort by `<` (the sort filter's, case
 * sensitive); key: any callable (a macro, a bound method...), called once per item. */
int m_list_sort(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (need_plain_list(vm, a[0], "sort") < 0)
        return -1;
    uint32_t given = a[1].u.list->len + tpl_given(a[2]) + tpl_given(a[3]);
    if (given > 2) /* (Python counts positional and keyword arguments first) */
        return tpl_vm_error(vm, TPL_ERR_TYPE, "sort() takes at most 2 arguments (%u given)", given);
    if (a[1].u.list->len)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "sort() takes no positional arguments");
    if (tpl_given(a[2]) && a[2].type != TPL_T_NONE) {
        int rev = 0;
        if (tpl_given(a[3])) {
            if ((a[3].type == TPL_T_INT || a[3].type == TPL_T_BOOL) && a[3].u.i >= INT32_MIN && a[3].u.i <= INT32_MAX)
                rev = a[3].u.i != 0;
            else if (a[3].type == TPL_T_INT || a[3].type == TPL_T_BIGINT)
                return tpl_vm_fail(vm, TPL_EK_OVERFLOW, "Python int too large to convert to C int");
            else
                return tpl_vm_error(vm, TPL_ERR_TYPE, "'%s' object cannot be interpreted as an integer", tpl_type_name(vm, a[3]));
        }
        if (tpl_vm_list_fresh(vm, a[0], 0, "list.sort") < 0)
            return -1;
        /* CPython empties the list while it sorts: the key function sees it empty, and a change
         * it makes is "list modified during sort" */
        tpl_list *l = a[0].u.list, saved = *l;
        l->len = l->cap = 0;
        tpl_value sorted;
        int rc = tpl_sort_keyed(vm, &saved, a[2], rev != 0, &sorted);
        bool changed = l->len != 0 || l->items != saved.items;
        *l = saved;
        if (rc < 0)
            return -1;
        if (changed)
            return tpl_vm_fail(vm, TPL_EK_VALUE, "list modified during sort");
        if (l->len)
            memcpy(l->items, sorted.u.list->items, (size_t)l->len * sizeof *l->items);
        *out = tpl_v_none();
        return 0;
    }
    tpl_value fa[TPL_MAX_PARAMS];
    for (int i = 0; i < TPL_MAX_PARAMS; i++)
        fa[i] = tpl_v_unset();
    fa[0] = a[0];
    fa[1] = a[3];
    fa[2] = tpl_v_bool(true);
    tpl_value sorted;
    if (f_sort(vm, fa, &sorted) < 0)
        return -1;
    tpl_list *l = a[0].u.list;
    if (sorted.type != TPL_T_LIST || sorted.u.list->len != l->len)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "list modified during sort");
    if (tpl_vm_list_fresh(vm, a[0], 0, "list.sort") < 0)
        return -1;
    if (l->len)
        memcpy(l->items, sorted.u.list->items, (size_t)l->len * sizeof *l->items);
    *out = tpl_v_none();
    return 0;
}

/* self is a dict (not a namespace: no methods there) */
static int need_dict(tpl_vm *vm, tpl_value self, const char *name)
{
    return need_map(vm, self, name);
}

/* The fuel a key comparison of tpl_map_set may have used up. */
static int map_set_checked(tpl_vm *vm, tpl_map *m, tpl_value k, tpl_value v)
{
    if (tpl_vm_check_hashable(vm, k) < 0)
        return -1;
    if (tpl_vm_map_put(vm, m, k, v) < 0) /* (a host key: Python's hash and ==) */
        return -1;
    if (AR(vm)->fuel && *AR(vm)->fuel == 0)
        return OOM();
    return 0;
}

int m_map_update(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (need_dict(vm, a[0], "update") < 0)
        return -1;
    if (a[1].u.list->len > 1)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "update expected at most 1 argument, got %u", a[1].u.list->len);
    tpl_value add; /* dict(*args, **kwargs): the same rules for the mapping or pairs */
    if (g_dict(vm, a + 1, &add) < 0 || tpl_vm_map_own(vm, a[0], "dict.update") < 0)
        return -1;
    tpl_map *m = a[0].u.map;
    const tpl_map *s = add.u.map;
    for (uint32_t i = 0; i < s->len; i++)
        if (map_set_checked(vm, m, s->e[i].key, s->e[i].val) < 0)
            return -1;
    tpl_vm_map_owned(vm, a[0]);
    *out = tpl_v_none();
    return 0;
}

static int key_error(tpl_vm *vm, tpl_value k)
{
    tpl_sb b;
    tpl_sb_init(&b, AR(vm));
    tpl_py_repr(&b, k);
    return tpl_vm_fail(vm, TPL_EK_KEY, "%.*s", (int)(b.len > 200 ? 200 : b.len), b.p ? b.p : "");
}

int m_map_pop(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (need_dict(vm, a[0], "pop") < 0 || hashable(vm, a[1]) < 0)
        return -1;
    tpl_value *v;
    if (tpl_vm_map_get(vm, a[0].u.map, a[1], &v) < 0)
        return -1;
    if (!v) {
        if (tpl_given(a[2])) {
            *out = a[2];
            return 0;
        }
        return key_error(vm, a[1]);
    }
    *out = *v;
    const tpl_entry *e = (const tpl_entry *)(const void *)((const char *)v - offsetof(tpl_entry, val));
    tpl_value key = e->key; /* (the dict's own key) */
    uint32_t at = (uint32_t)(e - a[0].u.map->e);
    if (tpl_vm_map_own(vm, a[0], "dict.pop") < 0)
        return -1;
    tpl_vm_dict_holed(vm, a[0].u.map, NULL);
    tpl_vm_dict_deleted(vm, a[0].u.map, at, 1);
    tpl_map_del(a[0].u.map, key);
    tpl_vm_map_owned(vm, a[0]);
    return 0;
}

int m_map_popitem(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (need_dict(vm, a[0], "popitem") < 0)
        return -1;
    tpl_map *m = a[0].u.map;
    if (m->len == 0)
        return tpl_vm_fail(vm, TPL_EK_KEY, "'popitem(): dictionary is empty'");
    tpl_list *t = tpl_list_new(AR(vm), 2);
    if (!t)
        return OOM();
    t->items[0] = m->e[m->len - 1].key;
    t->items[1] = m->e[m->len - 1].val;
    t->len = 2;
    if (tpl_vm_map_own(vm, a[0], "dict.popitem") < 0)
        return -1;
    tpl_vm_dict_deleted(vm, m, m->len - 1, 1);
    tpl_map_del(m, t->items[0]);
    tpl_vm_map_owned(vm, a[0]);
    *out = tpl_v_list(t);
    out->flags = TPL_F_TUPLE;
    return 0;
}

int m_map_setdefault(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (need_dict(vm, a[0], "setdefault") < 0 || hashable(vm, a[1]) < 0)
        return -1;
    tpl_value *v;
    if (tpl_vm_map_get(vm, a[0].u.map, a[1], &v) < 0)
        return -1;
    if (v) {
        *out = *v;
        return 0;
    }
    *out = tpl_given(a[2]) ? a[2] : tpl_v_none();
    if (tpl_vm_map_own(vm, a[0], "dict.setdefault") < 0 || map_set_checked(vm, a[0].u.map, a[1], *out) < 0)
        return -1;
    tpl_vm_map_owned(vm, a[0]);
    return 0;
}

int m_map_clear(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (need_dict(vm, a[0], "clear") < 0 || tpl_vm_map_own(vm, a[0], "dict.clear") < 0)
        return -1;
    tpl_map *m = a[0].u.map;
    tpl_vm_dict_deleted(vm, m, 0, UINT32_MAX);
    m->len = 0;
    if (m->idx_cap)
        memset(m->idx, 0, (size_t)m->idx_cap * sizeof *m->idx);
    tpl_vm_map_owned(vm, a[0]);
    *out = tpl_v_none();
    return 0;
}

/* ------------------------------------------------------------------ int and float (PYNUM) */

/* float.is_integer(): finite and integral */
int m_num_is_integer(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    (void)vm;
    double d = a[0].u.f;
    *out = tpl_v_bool(isfinite(d) && d == floor(d));
    return 0;
}

/* float.hex(): CPython's float_hex: [-]0x1.<13 hex digits>p<exp>, subnormals 0x0.<...>p-1022,
 * zero 0x0.0p+0, and inf / nan as repr prints them */
int m_num_hex(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    double d = a[0].u.f;
    char buf[48];
    if (isnan(d)) snprintf(buf, sizeof buf, "nan");
    else if (isinf(d)) snprintf(buf, sizeof buf, "%sinf", d < 0 ? "-" : "");
    else if (d == 0) snprintf(buf, sizeof buf, "%s0x0.0p+0", signbit(d) ? "-" : "");
    else {
        int e;
        double m = frexp(fabs(d), &e); /* m in [0.5, 1) */
        int lead = 1;
        uint64_t frac;
        if (e - 1 < -1022) { /* subnormal: 0x0.<frac>p-1022 */
            lead = 0;
            frac = (uint64_t)ldexp(fabs(d), 1074);
            e = -1021;
        } else {
            frac = (uint64_t)ldexp(m, 53) - ((uint64_t)1 << 52);
        }
        snprintf(buf, sizeof buf, "%s0x%d.%013llxp%+d", signbit(d) ? "-" : "", lead, (unsigned long long)frac, e - 1);
    }
    size_t n = strlen(buf);
    char *s = tpl_arena_strdup(AR(vm), buf, n);
    if (!s) return OOM();
    *out = tpl_v_str(s, n);
    return 0;
}

/* |self| of an int, bool or big int as an mpz (cleared by the caller) */
static void abs_mpz(mpz_t z, tpl_value v)
{
    if (v.type == TPL_T_BIGINT) tpl_big_get(z, v);
    else mpz_init_set_si(z, (long)v.u.i);
    mpz_abs(z, z);
}

/* int.bit_length(): the bits of |self| (0 for 0) */
int m_num_bit_length(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    (void)vm;
    mpz_t z;
    abs_mpz(z, a[0]);
    *out = tpl_v_int(mpz_sgn(z) ? (int64_t)mpz_sizeinbase(z, 2) : 0);
    mpz_clear(z);
    return 0;
}

/* int.bit_count(): the one bits of |self| */
int m_num_bit_count(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    (void)vm;
    mpz_t z;
    abs_mpz(z, a[0]);
    *out = tpl_v_int((int64_t)mpz_popcount(z));
    mpz_clear(z);
    return 0;
}

/* conjugate(): a float itself, an int itself (a bool's is its int, as int.conjugate gives) */
int m_num_conjugate(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    (void)vm;
    *out = a[0].type == TPL_T_BOOL ? tpl_v_int(a[0].u.i) : a[0];
    out->flags = 0;
    return 0;
}

/* as_integer_ratio(): (self, 1) of an int (a bool's as ints); of a float the exact fraction in
 * lowest terms, the OverflowError of an infinity and the ValueError of a NaN as CPython's */
int m_num_as_integer_ratio(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *l = tpl_list_new(AR(vm), 2);
    if (!l) return OOM();
    if (a[0].type != TPL_T_FLOAT) {
        l->items[0] = a[0].type == TPL_T_BOOL ? tpl_v_int(a[0].u.i) : a[0];
        l->items[0].flags = 0;
        l->items[1] = tpl_v_int(1);
    } else {
        double d = a[0].u.f;
        if (isinf(d)) return tpl_vm_fail(vm, TPL_EK_OVERFLOW, "cannot convert Infinity to integer ratio");
        if (isnan(d)) return tpl_vm_fail(vm, TPL_EK_VALUE, "cannot convert NaN to integer ratio");
        mpq_t q;
        mpq_init(q);
        mpq_set_d(q, d); /* exact and canonical */
        mpz_t num, den;
        mpz_init_set(num, mpq_numref(q));
        mpz_init_set(den, mpq_denref(q));
        mpq_clear(q);
        if (tpl_big_result(vm, num, &l->items[0]) < 0) { mpz_clear(den); return -1; }
        if (tpl_big_result(vm, den, &l->items[1]) < 0) return -1;
    }
    l->len = 2;
    *out = tpl_v_list(l);
    out->flags = TPL_F_TUPLE;
    return 0;
}

/* dict.fromkeys(iterable, value=None): a new dict of the iterable's items as keys, each with the one
 * value (the same object); an unhashable key is Python's TypeError. */
int m_map_fromkeys(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *src;
    if (a[1].type == TPL_T_UNDEF ? tpl_iter_list(vm, a[1], &src) < 0 : tpl_to_list(vm, a[1], &src) < 0)
        return -1;
    tpl_value v = a[2].type == TPL_T_UNSET ? tpl_v_none() : a[2];
    tpl_map *m = tpl_map_new(AR(vm), src->len);
    if (!m) return OOM();
    for (uint32_t i = 0; i < src->len; i++) {
        tpl_value k = src->items[i];
        if ((k.type == TPL_T_LIST || k.type == TPL_T_MAP || k.type == TPL_T_UNDEF || k.type == TPL_T_HOST) &&
            tpl_vm_check_hashable(vm, k) < 0)
            return -1;
        if (tpl_vm_map_put(vm, m, k, v) < 0)
            return -1;
    }
    *out = tpl_v_map(m);
    return 0;
}
