/* Jinja2 3.1's builtin filters (jinja2/filters.py), byte-compatible.
 *
 * Conventions: every filter receives its bound arguments in a[] (unset optional arguments are
 * TPL_T_UNSET), returns 0 with *out set, or -1 after tpl_vm_error(). Results live in the render
 * arena or are borrowed from the arguments. Undefined values follow Jinja2: lenient Undefined
 * iterates empty and prints "", StrictUndefined fails as soon as its content is used. */
#include "../builtins.h"
#include "../../runtime/host.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <errno.h>
#include <float.h>

#define OOM() tpl_vm_nomem(vm)

static tpl_arena *AR(tpl_vm *vm) { return tpl_vm_arena(vm); }

static tpl_value undef_hint(const char *hint)
{
    tpl_value v = tpl_v_undef();
    v.u.s = hint;
    v.len = (uint32_t)strlen(hint);
    return v;
}

static tpl_value undef_attr(tpl_value name, int container)
{
    tpl_value v = tpl_v_undef();
    v.aux = TPL_UNDEF_ATTR;
    v.flags = (uint8_t)container;
    if (name.type == TPL_T_STR) {
        v.u.s = name.u.s;
        v.len = name.len;
    }
    return v;
}

static tpl_value mk_tuple(tpl_vm *vm, tpl_value x, tpl_value y)
{
    tpl_list *l = tpl_list_new(AR(vm), 2);
    if (!l)
        return tpl_v_none();
    l->items[0] = x;
    l->items[1] = y;
    l->len = 2;
    tpl_value v = tpl_v_list(l);
    v.flags = TPL_F_TUPLE;
    return v;
}

static int sb_done(tpl_vm *vm, tpl_sb *b, tpl_value *out)
{
    if (b->failed)
        return tpl_vm_sb_error(vm, b, "while getting the repr of an object");
    *out = tpl_sb_value(b);
    return 0;
}

/* Code point count, ASCII fast path. */
static size_t ulen(tpl_value s) { return tpl_utf8_len(s.u.s, s.len); }

static void put_spaces(tpl_sb *b, int64_t n)
{
    if (n <= 0)
        return;
    if (!tpl_sb_reserve(b, (size_t)n))
        return;
    memset(b->p + b->len, ' ', (size_t)n);
    b->len += (size_t)n;
}

/* Jinja2's filters map, select, reject, selectattr, rejectattr, batch, slice, unique and items
 * are generators: the list they built is tagged so (see TPL_LAZY_*). */
static bool is_markup(tpl_value v) { return v.type == TPL_T_STR && (v.flags & TPL_F_SAFE); }

static int generator(int r, tpl_value *out)
{
    if (r == 0 && out->type == TPL_T_LIST)
        out->aux = TPL_LAZY_GENERATOR;
    return r;
}

/* A source that a generator filter takes only when the generator is first iterated (pend_src: list()). */
static bool lazy_scalar(tpl_value v)
{
    return v.type == TPL_T_STR || v.type == TPL_T_INT || v.type == TPL_T_BOOL || v.type == TPL_T_FLOAT ||
           v.type == TPL_T_BIGINT || v.type == TPL_T_NONE;
}

/* A generator filter (stage: its eager list form) of a list, a range or an iterator: lazy, as
 * Jinja2's (tpl_pend_stage; per: source items per item yielded, 0: any number); of anything else
 * (a string, a dict, undefined): run now. */
static int lazy_generator(tpl_vm *vm, tpl_pend_fn stage, uint32_t per, bool guard, tpl_value *a, tpl_value *out)
{
    if (a[0].type == TPL_T_LIST)
        return tpl_pend_stage(vm, a[0], stage, a, 3, per, TPL_LAZY_GENERATOR, out);
    if (a[0].type == TPL_T_MAP && !(a[0].flags & TPL_F_NS)) { /* iter(d): its keys, live (vm.c pend_src) */
        tpl_value keys;
        if (tpl_vm_view_new(vm, a[0], 1, &keys) < 0)
            return -1;
        return tpl_pend_stage(vm, keys, stage, a, 3, per, TPL_LAZY_GENERATOR, out);
    }
    if (lazy_scalar(a[0])) {
        /* a string, number or None: Jinja2's generator runs at its first use, so an error of the
         * stage (a number is not iterable, a strict undefined attribute) is not raised when the
         * generator is only tested (`if x|select(...)`, always true) or given to a filter that
         * does not iterate it (`|float(d)`): pulled from here, it raises then. guard: the
         * generator's body starts with `if value:` (map, select and friends), so a false one
         * yields nothing (the stage runs now: empty) */
        int t = guard ? tpl_truthy_py(vm, a[0]) : 1;
        if (t < 0)
            return -1;
        if (t)
            return tpl_pend_stage(vm, a[0], stage, a, 3, per, TPL_LAZY_GENERATOR, out);
    }
    if (tpl_vm_strict_undef(vm, a[0])) /* (StrictUndefined's bool() or iter() raises at the first use) */
        return tpl_pend_stage(vm, a[0], stage, a, 3, per, TPL_LAZY_GENERATOR, out);
    return generator(stage(vm, a, out), out);
}

/* ------------------------------------------------------------------ sorting */

typedef struct sort_ctx {
    tpl_vm *vm;
    const tpl_value *keys;
    int nparts;        /* 0: keys are single values; >0: keys are lists of nparts values */
    bool reverse;
} sort_ctx;

/* sorted()'s reverse= (list.sort's `bool(accept={int})`: _PyLong_AsInt): an int that fits a C int,
 * else Python's TypeError / OverflowError (dictsort and sort pass theirs through). */
static int reverse_arg(tpl_vm *vm, tpl_value v, int *rev)
{
    if (v.type == TPL_T_UNSET) { *rev = 0; return 0; }
    if ((v.type == TPL_T_INT || v.type == TPL_T_BOOL) && v.u.i >= INT32_MIN && v.u.i <= INT32_MAX) {
        *rev = v.u.i != 0;
        return 0;
    }
    if (v.type == TPL_T_INT || v.type == TPL_T_BIGINT)
        return tpl_vm_fail(vm, TPL_EK_OVERFLOW, "Python int too large to convert to C int");
    if (v.type == TPL_T_HOST)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported: a host object as sort's reverse= (tpl takes an int)");
    return tpl_vm_error(vm, TPL_ERR_TYPE, "'%s' object cannot be interpreted as an integer", tpl_type_name(vm, v));
}

/* Compares keys[x] and keys[y] as Python's `<` does (lists element-wise, == first). */
static int key_cmp(const sort_ctx *c, uint32_t x, uint32_t y, int *res)
{
    tpl_value a = c->keys[x], b = c->keys[y];
    if (c->nparts == 0)
        return tpl_compare(c->vm, a, b, true, res);
    for (int i = 0; i < c->nparts; i++) {
        tpl_value p = a.u.list->items[i], q = b.u.list->items[i];
        if (tpl_vm_strict_undef(c->vm, p) || tpl_vm_strict_undef(c->vm, q))
            return tpl_undefined_error(c->vm, tpl_vm_strict_undef(c->vm, p) ? p : q); /* StrictUndefined.__eq__ */
        bool eq = false;
        if (tpl_vm_item_equal(c->vm, p, q, &eq) < 0)
            return -1;
        if (eq)
            continue;
        return tpl_compare(c->vm, p, q, true, res);
    }
    *res = 0;
    return 0;
}

/* Stable bottom-up merge sort of idx[0..n) (Python's sorted(): equal keys keep their order, also
 * when reversed). */
static int merge_sort(const sort_ctx *c, uint32_t *idx, uint32_t n)
{
    if (n < 2)
        return 0;
    /* Insertion sort small runs, then merge. */
    const uint32_t RUN = 16;
    for (uint32_t lo = 0; lo < n; lo += RUN) {
        uint32_t hi = lo + RUN < n ? lo + RUN : n;
        for (uint32_t i = lo + 1; i < hi; i++) {
            uint32_t v = idx[i];
            uint32_t j = i;
            while (j > lo) {
                int r;
                if (key_cmp(c, v, idx[j - 1], &r) < 0)
                    return -1;
                if (c->reverse) r = -r;
                if (r >= 0)
                    break;
                idx[j] = idx[j - 1];
                j--;
            }
            idx[j] = v;
        }
    }
    uint32_t *tmp = tpl_arena_alloc(tpl_vm_arena(c->vm), (size_t)n * sizeof *tmp);
    if (!tmp)
        return tpl_vm_nomem(c->vm);
    for (uint32_t width = RUN; width < n; width *= 2) {
        for (uint32_t lo = 0; lo < n; lo += 2 * width) {
            uint32_t mid = lo + width < n ? lo + width : n;
            uint32_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            uint32_t i = lo, j = mid, k = lo;
            if (mid >= hi) {
                memcpy(tmp + lo, idx + lo, (size_t)(hi - lo) * sizeof *tmp);
                continue;
            }
            while (i < mid && j < hi) {
                int r;
                if (key_cmp(c, idx[j], idx[i], &r) < 0)
                    return -1;
                if (c->reverse) r = -r;
                tmp[k++] = r < 0 ? idx[j++] : idx[i++];
            }
            while (i < mid) tmp[k++] = idx[i++];
            while (j < hi) tmp[k++] = idx[j++];
        }
        memcpy(idx, tmp, (size_t)n * sizeof *idx);
    }
    return 0;
}

/* ignore_case: lower-cases string keys (other values unchanged). */
static tpl_value fold(tpl_vm *vm, tpl_value v, bool case_sensitive)
{
    if (case_sensitive || v.type != TPL_T_STR)
        return v;
    return tpl_str_lower(vm, v);
}

/* Number of comma-separated attributes in a sort attribute (1 for none / non-strings). */
static int attr_parts(tpl_value attr, tpl_value *parts, int max)
{
    if (attr.type != TPL_T_STR) {
        parts[0] = attr;
        return 1;
    }
    int n = 0;
    size_t i = 0;
    for (;;) {
        size_t j = i;
        while (j < attr.len && attr.u.s[j] != ',')
            j++;
        if (n < max)
            parts[n++] = tpl_v_str(attr.u.s + i, j - i);
        if (j >= attr.len)
            break;
        i = j + 1;
    }
    return n;
}

/* ------------------------------------------------------------------ simple filters */

int f_abs(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value x = a[0];
    switch (x.type) {
    case TPL_T_INT:
    case TPL_T_BOOL:
        if (x.u.i == INT64_MIN)
            return tpl_big_abs(vm, x, out);
        *out = tpl_v_int(x.u.i < 0 ? -x.u.i : x.u.i);
        return 0;
    case TPL_T_BIGINT:
        return tpl_big_abs(vm, x, out);
    case TPL_T_FLOAT:
        *out = tpl_v_float(fabs(x.u.f));
        return 0;
    default: {
        int h = tpl_hobj_arith(vm, "abs", x, tpl_v_none(), out); /* the host's own numbers (a Decimal) */
        if (h <= 0)
            return h;
        return tpl_vm_error(vm, TPL_ERR_TYPE, "bad operand type for abs(): '%s'", tpl_type_name(vm, x));
    }
    }
}

int f_attr(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value obj = a[0], name = a[1];
    /* inspect.getattr_static(obj, name) comes first: a name that is no str, an Undefined too, is its
     * TypeError whatever obj is (a StrictUndefined's hash raises before it) */
    if (name.type == TPL_T_UNDEF && tpl_vm_strict_undef(vm, name))
        return tpl_undefined_error(vm, name);
    if (name.type != TPL_T_STR)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "attribute name must be string, not '%s'",
                            name.type == TPL_T_UNDEF && tpl_vm_chainable_undefined(vm) ? "ChainableUndefined" :
                            tpl_type_name(vm, name));
    if (obj.type == TPL_T_UNDEF && tpl_vm_chainable_undefined(vm)) {
        *out = obj; /* ChainableUndefined.__getattr__ */
        return 0;
    }
    if (obj.type == TPL_T_UNDEF)
        return tpl_undefined_error(vm, obj);
    if (tpl_is_dunder(name.u.s, name.len) && !tpl_vm_hf(vm) && obj.type != TPL_T_HOST && /* as vm.c's tpl_getattr */
        !(obj.type == TPL_T_STR && tpl_builtin_find(TPL_BK_STR, name.u.s, name.len) >= 0) && !(obj.type == TPL_T_MAP && (obj.flags & TPL_F_NS)))
        return tpl_getattr(vm, obj, name.u.s, name.len, out); /* (__class__, a class's __name__; else its located refusal) */
    tpl_builtin_kind kind;
    switch (obj.type) {
    case TPL_T_MAP:
        if (obj.flags & TPL_F_NS)
            return tpl_getattr(vm, obj, name.u.s, name.len, out);
        kind = TPL_BK_MAP;
        break;
    case TPL_T_STR: kind = TPL_BK_STR; break;
    case TPL_T_LIST:
        if ((obj.flags & TPL_F_GROUP) && ((name.len == 7 && memcmp(name.u.s, "grouper", 7) == 0) ||
                                          (name.len == 4 && memcmp(name.u.s, "list", 4) == 0))) {
            *out = obj.u.list->items[name.len == 7 ? 0 : 1];
            return 0;
        }
        if (obj.aux != TPL_LAZY_NONE) /* a range (start, stop, step), an iterator, a dict view */
            return tpl_getattr(vm, obj, name.u.s, name.len, out);
        kind = TPL_BK_LIST;
        break;
    case TPL_T_LOOP:
    case TPL_T_MACRO:
    case TPL_T_INT: case TPL_T_BOOL: case TPL_T_BIGINT: case TPL_T_FLOAT:
        /* (a number's attributes real, imag, numerator, denominator, its refused methods; its
         * item fallback fails the same: an Undefined) */
        return tpl_getattr(vm, obj, name.u.s, name.len, out);
    case TPL_T_HOST: { /* its getattr alone (Jinja2's attr() never tries the item) */
        int rc = tpl_hobj_attr(vm, obj, name.u.s, name.len, out);
        if (rc <= 0) return rc;
        *out = undef_attr(name, tpl_undef_container(obj));
        return 0;
    }
    default:
        *out = undef_attr(name, tpl_undef_container(obj));
        return 0;
    }
    /* Only real attributes (methods): Jinja2's attr() never falls back to item lookup. A list's
     * or dict's mutating method: tpl_getattr's unsafe method (or hf's undefined) */
    if (kind != TPL_BK_STR && tpl_builtin_find(kind, name.u.s, name.len) < 0) {
        tpl_value probe;
        if (tpl_getattr(vm, obj, name.u.s, name.len, &probe) < 0)
            return -1;
        if ((probe.type == TPL_T_FUNC && probe.u.bound->method == TPL_B_GLOBAL_unsafe_method) ||
            (probe.type == TPL_T_UNDEF && probe.aux == TPL_UNDEF_PLAIN)) {
            *out = probe;
            return 0;
        }
    }
    if (tpl_builtin_find(kind, name.u.s, name.len) < 0) {
        *out = undef_attr(name, tpl_undef_container(obj));
        return 0;
    }
    return tpl_getattr(vm, obj, name.u.s, name.len, out);
}

static int f_batch_list(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    int64_t count = -1; /* (-1: equal to no length) */
    tpl_list *items;
    if (tpl_iter_list(vm, a[0], &items) < 0)
        return -1;
    /* do_batch only compares linecount with a length (len(tmp) == linecount, then < before a fill):
     * 2.0 batches by 2, 2.5, 'x', None, [] never equal a length: one batch */
    tpl_value lc = a[1];
    bool numeric = lc.type == TPL_T_INT || lc.type == TPL_T_BOOL || lc.type == TPL_T_BIGINT;
    if (numeric) {
        if (tpl_arg_index_sat(vm, lc, &count) < 0)
            return -1;
    } else if (lc.type == TPL_T_FLOAT) {
        if (isfinite(lc.u.f) && lc.u.f == floor(lc.u.f) && fabs(lc.u.f) < 9e18)
            count = (int64_t)lc.u.f;
    } else if (items->len && tpl_vm_strict_undef(vm, lc)) {
        return tpl_undefined_error(vm, lc); /* (StrictUndefined.__eq__) */
    }
    bool fill = tpl_given(a[2]) && a[2].type != TPL_T_NONE;
    tpl_arena *ar = AR(vm);
    tpl_list *res = tpl_list_new(ar, 4);
    tpl_list *tmp = tpl_list_new(ar, count > 0 && count < 1024 ? (uint32_t)count : 4);
    if (!res || !tmp)
        return OOM();
    for (uint32_t i = 0; i < items->len; i++) {
        if ((int64_t)tmp->len == count) {
            if (!tpl_list_push(ar, res, tpl_v_list(tmp)))
                return OOM();
            tmp = tpl_list_new(ar, count > 0 && count < 1024 ? (uint32_t)count : 4);
            if (!tmp)
                return OOM();
        }
        if (!tpl_list_push(ar, tmp, items->items[i]))
            return OOM();
    }
    if (tmp->len && fill && !numeric) { /* len(tmp) < linecount, then [fill_with] * (linecount - len(tmp)) */
        if (lc.type == TPL_T_FLOAT) {
            if ((double)tmp->len < lc.u.f)
                return tpl_vm_error(vm, TPL_ERR_TYPE, "can't multiply sequence by non-int of type 'float'");
        } else if (lc.type == TPL_T_UNDEF) {
            return tpl_undefined_error(vm, lc);
        } else {
            return tpl_vm_error(vm, TPL_ERR_TYPE, "'<' not supported between instances of 'int' and '%s'", tpl_type_name(vm, lc));
        }
    }
    if (tmp->len) {
        if (fill && numeric && (int64_t)tmp->len < count) {
            if (a[1].type == TPL_T_BIGINT) /* [fill_with] * (linecount - len(tmp)) */
                return tpl_vm_fail(vm, TPL_EK_OVERFLOW, "cannot fit 'int' into an index-sized integer");
            if (count > 10000000)
                return tpl_vm_error(vm, TPL_ERR_LIMIT, "batch too large");
            while ((int64_t)tmp->len < count)
                if (!tpl_list_push(ar, tmp, a[2]))
                    return OOM();
        }
        if (!tpl_list_push(ar, res, tpl_v_list(tmp)))
            return OOM();
    }
    *out = tpl_v_list(res);
    return 0;
}

int f_batch(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    /* a batch takes linecount source items (all of them when that is not a small positive int) */
    double lc = a[1].type == TPL_T_INT || a[1].type == TPL_T_BOOL ? (double)a[1].u.i : a[1].type == TPL_T_FLOAT ? a[1].u.f : 0;
    uint32_t per = lc >= 1 && lc < 1000000 && lc == floor(lc) ? (uint32_t)lc : UINT32_MAX;
    if (lazy_generator(vm, f_batch_list, per, false, a, out) < 0)
        return -1;
    tpl_pending *p = tpl_pend_of(*out);
    if (p) /* a batch is yielded when the item after it is taken */
        p->ahead = true;
    return 0;
}

static int f_slice_list(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    int64_t slices;
    tpl_list *seq;
    if (tpl_iter_list(vm, a[0], &seq) < 0 || tpl_arg_index_sat(vm, a[1], &slices) < 0)
        return -1;
    if (slices == 0)
        return tpl_vm_fail(vm, TPL_EK_ZERO_DIVISION, "integer division or modulo by zero");
    if (slices < 0 || slices > 10000000) {
        if (slices < 0) {
            *out = tpl_v_list(tpl_list_new(AR(vm), 0));
            return 0;
        }
        return tpl_vm_error(vm, TPL_ERR_LIMIT, "slice count too large");
    }
    bool fill = tpl_given(a[2]) && a[2].type != TPL_T_NONE;
    int64_t length = seq->len;
    int64_t per = length / slices, extra = length % slices, offset = 0;
    tpl_arena *ar = AR(vm);
    tpl_list *res = tpl_list_new(ar, (uint32_t)slices);
    if (!res)
        return OOM();
    for (int64_t k = 0; k < slices; k++) {
        int64_t start = offset + k * per;
        if (k < extra)
            offset++;
        int64_t end = offset + (k + 1) * per;
        if (start > length) start = length;
        if (end > length) end = length;
        if (end < start) end = start;
        tpl_list *t = tpl_list_new(ar, (uint32_t)(end - start + 1));
        if (!t)
            return OOM();
        for (int64_t i = start; i < end; i++)
            t->items[t->len++] = seq->items[i];
        if (fill && k >= extra)
            t->items[t->len++] = a[2];
        if (!tpl_list_push(ar, res, tpl_v_list(t)))
            return OOM();
    }
    *out = tpl_v_list(res);
    return 0;
}

/* Jinja2's slice is a generator whose body takes list(value) first: of a list, a range or an
 * iterator, the whole source at the first use (an iterator the template reads meanwhile gives it
 * what is left), and its errors then. */
int f_slice(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (a[0].type == TPL_T_LIST || lazy_scalar(a[0]) || tpl_vm_strict_undef(vm, a[0]))
        return tpl_pend_whole(vm, a[0], f_slice_list, a, 3, out);
    return generator(f_slice_list(vm, a, out), out);
}

typedef void (*case_fn)(tpl_sb *, const char *, size_t);

static int case_filter(tpl_vm *vm, tpl_value v, case_fn fn, tpl_value *out)
{
    tpl_value s;
    if (tpl_to_str(vm, v, &s) < 0)
        return -1;
    tpl_sb b;
    tpl_sb_init(&b, AR(vm));
    fn(&b, s.u.s, s.len);
    if (sb_done(vm, &b, out) < 0)
        return -1;
    out->flags = s.flags & TPL_F_SAFE;
    return 0;
}

int f_capitalize(tpl_vm *vm, tpl_value *a, tpl_value *out) { return case_filter(vm, a[0], tpl_py_capitalize, out); }
int f_upper(tpl_vm *vm, tpl_value *a, tpl_value *out) { return case_filter(vm, a[0], tpl_py_upper, out); }
int f_lower(tpl_vm *vm, tpl_value *a, tpl_value *out) { return case_filter(vm, a[0], tpl_py_lower, out); }

/* Jinja2's title: split on runs of [-\s({\[<], upper-case each piece's first character and
 * lower-case the rest (not str.title()). */
static bool title_sep(uint32_t c)
{
    return c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || tpl_py_isspace(c);
}

int f_title(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value s;
    if (tpl_to_str(vm, a[0], &s) < 0)
        return -1;
    tpl_sb b;
    tpl_sb_init(&b, AR(vm));
    size_t i = 0, n = s.len;
    while (i < n) {
        size_t j = i;
        uint32_t c = tpl_utf8_next(s.u.s, n, &j);
        if (title_sep(c)) {
            size_t k = j;
            while (k < n) {
                size_t m = k;
                uint32_t d = tpl_utf8_next(s.u.s, n, &m);
                if (!title_sep(d))
                    break;
                k = m;
            }
            /* a separator piece: its first char upper-cased, rest lower-cased (no-ops) */
            tpl_sb_put(&b, s.u.s + i, k - i);
            i = k;
            continue;
        }
        size_t k = j;
        while (k < n) {
            size_t m = k;
            uint32_t d = tpl_utf8_next(s.u.s, n, &m);
            if (title_sep(d))
                break;
            k = m;
        }
        tpl_py_upper(&b, s.u.s + i, j - i);
        tpl_py_lower(&b, s.u.s + j, k - j);
        i = k;
    }
    return sb_done(vm, &b, out);
}

int f_center(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value s;
    int64_t width = 80;
    if (tpl_to_str(vm, a[0], &s) < 0)
        return -1;
    if (tpl_given(a[1]) && tpl_arg_index(vm, a[1], &width) < 0)
        return -1;
    int64_t len = (int64_t)ulen(s);
    if (width <= len) {
        *out = s;
        return 0;
    }
    if ((uint64_t)width > tpl_vm_max_output(vm)) /* Python pads: past the output limit anyway */
        return tpl_vm_limit(vm, TPL_EK_OUTPUT_LIMIT, tpl_vm_max_output(vm));
    int64_t marg = width - len;
    int64_t left = marg / 2 + (marg & width & 1);
    tpl_sb b;
    tpl_sb_init(&b, AR(vm));
    put_spaces(&b, left);
    tpl_sb_put(&b, s.u.s, s.len);
    put_spaces(&b, marg - left);
    if (sb_done(vm, &b, out) < 0)
        return -1;
    out->flags = s.flags & TPL_F_SAFE;
    return 0;
}

int f_length(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value v = a[0];
    switch (v.type) {
    case TPL_T_STR: *out = tpl_v_int((int64_t)ulen(v)); return 0;
    case TPL_T_LIST:
        if (tpl_is_iter(v))
            return tpl_vm_error(vm, TPL_ERR_TYPE, "object of type '%s' has no len()", tpl_lazy_name(v.aux));
        if (v.flags & TPL_F_RANGE_BIG) { /* len() of a range held without its items */
            mpz_t n;
            tpl_range_len(n, tpl_range_params(v));
            bool fits = mpz_fits_slong_p(n) && sizeof(long) == sizeof(int64_t);
            if (fits)
                *out = tpl_v_int((int64_t)mpz_get_si(n));
            mpz_clear(n);
            if (!fits)
                return tpl_vm_fail(vm, TPL_EK_OVERFLOW, "Python int too large to convert to C ssize_t");
            return 0;
        }
        *out = tpl_v_int(v.u.list->len);
        return 0;
    case TPL_T_MAP:
        if (!(v.flags & TPL_F_NS)) {
            *out = tpl_v_int(v.u.map->len);
            return 0;
        }
        break;
    case TPL_T_UNDEF:
        if (tpl_vm_strict_undef(vm, v))
            return tpl_undefined_error(vm, v);
        *out = tpl_v_int(0);
        return 0;
    case TPL_T_LOOP: {
        tpl_value n;
        if (tpl_getattr(vm, v, "length", 6, &n) < 0)
            return -1;
        *out = n;
        return 0;
    }
    default:
        break;
    }
    return tpl_vm_error(vm, TPL_ERR_TYPE, "object of type '%s' has no len()", tpl_type_name(vm, v));
}

int f_default(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value v = a[0];
    tpl_value dflt = tpl_given(a[1]) ? a[1] : tpl_v_str("", 0);
    if (v.type == TPL_T_UNDEF || v.type == TPL_T_UNSET) {
        *out = dflt;
        return 0;
    }
    int boolean = tpl_arg_truthy(vm, a[2], false);
    if (boolean < 0)
        return -1;
    if (boolean) {
        int t = tpl_truthy_py(vm, v);
        if (t < 0)
            return -1;
        if (!t) {
            *out = dflt;
            return 0;
        }
    }
    *out = v;
    return 0;
}

static int dict_items(tpl_vm *vm, tpl_value v, tpl_list **out)
{
    const tpl_map *m = v.u.map;
    tpl_list *l = tpl_list_new(AR(vm), m->len);
    if (!l)
        return OOM();
    for (uint32_t i = 0; i < m->len; i++) {
        l->items[i] = mk_tuple(vm, m->e[i].key, m->e[i].val);
        if (l->items[i].type != TPL_T_LIST)
            return OOM();
    }
    l->len = m->len;
    *out = l;
    return 0;
}

int f_dictsort(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value v = a[0];
    /* Jinja2's order: `by` is checked, value.items() taken, sorted() reads reverse=, then the
     * sort folds case (`not case_sensitive`) */
    int pos = 0;
    if (tpl_given(a[2])) {
        tpl_value by = a[2];
        if (tpl_vm_strict_undef(vm, by)) /* (StrictUndefined.__eq__) */
            return tpl_undefined_error(vm, by);
        if (by.type == TPL_T_STR && by.len == 3 && memcmp(by.u.s, "key", 3) == 0) pos = 0;
        else if (by.type == TPL_T_STR && by.len == 5 && memcmp(by.u.s, "value", 5) == 0) pos = 1;
        else return tpl_vm_fail(vm, TPL_EK_FILTER_ARGUMENT, "You can only sort by either \"key\" or \"value\"");
    }
    if (v.type == TPL_T_UNDEF)
        return tpl_undefined_error(vm, v);
    if (v.type != TPL_T_MAP || (v.flags & TPL_F_NS))
        return tpl_vm_fail(vm, TPL_EK_ATTRIBUTE, "'%s' object has no attribute 'items'", tpl_type_name(vm, v));
    int rev;
    if (reverse_arg(vm, a[3], &rev) < 0)
        return -1;
    int cs = v.u.map->len ? tpl_arg_truthy(vm, a[1], false) : 0; /* (read per item: none, never) */
    if (cs < 0)
        return -1;
    const tpl_map *m = v.u.map;
    uint32_t n = m->len;
    tpl_value *keys = tpl_arena_alloc(AR(vm), (size_t)(n ? n : 1) * sizeof *keys);
    uint32_t *idx = tpl_arena_alloc(AR(vm), (size_t)(n ? n : 1) * sizeof *idx);
    tpl_list *res = tpl_list_new(AR(vm), n);
    if (!keys || !idx || !res)
        return OOM();
    for (uint32_t i = 0; i < n; i++) {
        keys[i] = fold(vm, pos ? m->e[i].val : m->e[i].key, cs);
        idx[i] = i;
    }
    sort_ctx c = { vm, keys, 0, rev };
    if (merge_sort(&c, idx, n) < 0)
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        res->items[i] = mk_tuple(vm, m->e[idx[i]].key, m->e[idx[i]].val);
        if (res->items[i].type != TPL_T_LIST)
            return OOM();
    }
    res->len = n;
    *out = tpl_v_list(res);
    return 0;
}

/* obj.__html__() of a host object or an imported template's module (TemplateModule: Markup of its
 * output) into *s: 0; 1 when v has none; -1 on error. */
static int html_of(tpl_vm *vm, tpl_value v, tpl_value *s)
{
    if (v.type == TPL_T_HOST) return tpl_hobj_html(vm, v, s);
    if (v.type == TPL_T_MAP && (v.flags & TPL_F_NS) && v.u.map->module) {
        *s = v.u.map->module[0];
        s->flags = TPL_F_SAFE;
        return 0;
    }
    return 1;
}

/* markupsafe.escape of a plain string into b. */
static int escape_value(tpl_vm *vm, tpl_value v, bool force, tpl_value *out)
{
    if (!force && v.type == TPL_T_STR && (v.flags & TPL_F_SAFE)) {
        *out = v;
        return 0;
    }
    tpl_value s;
    int h = html_of(vm, v, &s); /* (markupsafe.escape: __html__ first) */
    if (h < 0)
        return -1;
    if (h == 0 && !force) {
        *out = s;
        return 0;
    }
    if (h != 0 && tpl_to_str(vm, v, &s) < 0)
        return -1;
    size_t k = 0;
    while (k < s.len && s.u.s[k] != '&' && s.u.s[k] != '<' && s.u.s[k] != '>' && s.u.s[k] != '"' &&
           s.u.s[k] != '\'')
        k++;
    if (k == s.len) {
        *out = tpl_v_str(s.u.s, s.len);
    } else {
        tpl_sb b;
        tpl_sb_init(&b, AR(vm));
        tpl_html_escape(&b, s.u.s, s.len);
        if (sb_done(vm, &b, out) < 0)
            return -1;
    }
    out->flags = TPL_F_SAFE;
    return 0;
}

int f_escape(tpl_vm *vm, tpl_value *a, tpl_value *out) { return escape_value(vm, a[0], false, out); }
int f_forceescape(tpl_vm *vm, tpl_value *a, tpl_value *out) { return escape_value(vm, a[0], true, out); }

int f_safe(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value s;
    int h = html_of(vm, a[0], &s); /* (Markup(obj): __html__ first) */
    if (h < 0 || (h != 0 && tpl_to_str(vm, a[0], &s) < 0))
        return -1;
    *out = s;
    out->flags = TPL_F_SAFE;
    return 0;
}

int f_string(tpl_vm *vm, tpl_value *a, tpl_value *out) { return tpl_to_str(vm, a[0], out); }

/* ------------------------------------------------------------------ number parsing */

static bool is_ws_cp(const char *s, size_t n, size_t i, size_t *next)
{
    size_t j = i;
    uint32_t c = tpl_utf8_next(s, n, &j);
    *next = j;
    return tpl_py_isspace(c);
}

/* Python's strip() of whitespace, returning [*b, *e). */
static void ws_trim(const char *s, size_t n, size_t *b, size_t *e)
{
    size_t i = 0, nx;
    while (i < n && is_ws_cp(s, n, i, &nx))
        i = nx;
    size_t j = n;
    while (j > i) {
        size_t k = j - 1;
        while (k > i && ((unsigned char)s[k] & 0xC0) == 0x80)
            k--;
        if (!is_ws_cp(s, j, k, &nx))
            break;
        j = k;
    }
    *b = i;
    *e = j;
}

/* The text Python's int() and float() read (_PyUnicode_TransformDecimalAndSpaceToASCII): Unicode
 * whitespace becomes a space, a decimal digit of any script its ASCII digit ("١٢" is 12), any
 * other non-ASCII character '?' (which no literal holds). ASCII text is v itself. -1: no memory. */
static int number_text(tpl_vm *vm, tpl_value *v)
{
    if (tpl_is_ascii(v->u.s, v->len))
        return 0;
    tpl_sb b;
    tpl_sb_init(&b, AR(vm));
    for (size_t i = 0; i < v->len;) {
        uint32_t c = tpl_utf8_next(v->u.s, v->len, &i);
        int d = tpl_uc_decimal_value(c);
        tpl_sb_putc(&b, c < 128 ? (char)c : d >= 0 ? (char)('0' + d) : tpl_py_isspace(c) ? ' ' : '?');
    }
    if (b.failed)
        return OOM();
    *v = tpl_sb_value(&b);
    return 0;
}

/* parse_py_float's work on the trimmed text s[0..n), n > 0, with buf of n + 1 bytes for strtod */
static bool py_float_literal(const char *s, size_t n, char *buf, double *out)
{
    size_t k = 0, i = 0;
    if (s[i] == '+' || s[i] == '-')
        buf[k++] = s[i++];
    /* inf / infinity / nan, any case */
    size_t rest = n - i;
    const char *r = s + i;
    if ((rest == 3 && strncasecmp(r, "inf", 3) == 0) || (rest == 8 && strncasecmp(r, "infinity", 8) == 0)) {
        *out = (k && buf[0] == '-') ? -INFINITY : INFINITY;
        return true;
    }
    if (rest == 3 && strncasecmp(r, "nan", 3) == 0) {
        *out = NAN;
        return true;
    }
    bool digits = false, prev_digit = false;
    /* mantissa: digits [. digits], underscores only between digits */
    while (i < n) {
        char c = s[i];
        if (c >= '0' && c <= '9') { buf[k++] = c; digits = true; prev_digit = true; i++; continue; }
        if (c == '_' && prev_digit && i + 1 < n && s[i + 1] >= '0' && s[i + 1] <= '9') { i++; prev_digit = false; continue; }
        break;
    }
    if (i < n && s[i] == '.') {
        buf[k++] = '.';
        i++;
        prev_digit = false;
        bool first = true;
        while (i < n) {
            char c = s[i];
            if (c >= '0' && c <= '9') { buf[k++] = c; digits = true; prev_digit = true; first = false; i++; continue; }
            if (c == '_' && prev_digit && !first && i + 1 < n && s[i + 1] >= '0' && s[i + 1] <= '9') { i++; prev_digit = false; continue; }
            break;
        }
    }
    if (!digits)
        return false;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        buf[k++] = 'e';
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            buf[k++] = s[i++];
        bool ed = false;
        prev_digit = false;
        while (i < n) {
            char c = s[i];
            if (c >= '0' && c <= '9') { buf[k++] = c; ed = true; prev_digit = true; i++; continue; }
            if (c == '_' && prev_digit && i + 1 < n && s[i + 1] >= '0' && s[i + 1] <= '9') { i++; prev_digit = false; continue; }
            break;
        }
        if (!ed)
            return false;
    }
    if (i != n)
        return false;
    buf[k] = 0;
    errno = 0;
    *out = strtod(buf, NULL);
    return true;
}

/* Python float(str), of any length as Python's ("9" * 100000 is inf). Returns false when the text
 * is not a float literal (or, past 4 KiB, when its copy cannot be allocated). */
static bool parse_py_float(const char *s, size_t n, double *out)
{
    size_t b, e;
    ws_trim(s, n, &b, &e);
    s += b;
    n = e - b;
    if (n == 0)
        return false;
    char small[4096];
    char *buf = n < sizeof small ? small : malloc(n + 1);
    if (!buf)
        return false;
    bool ok = py_float_literal(s, n, buf, out);
    if (buf != small)
        free(buf);
    return ok;
}

/* Python int(str, base). 0 ok, 1 not a valid literal (ValueError), 2 too large for int64. */
static int parse_py_int(const char *s, size_t n, int64_t base, int64_t *out)
{
    if (base != 0 && (base < 2 || base > 36))
        return 1;
    size_t b, e;
    ws_trim(s, n, &b, &e);
    s += b;
    n = e - b;
    size_t i = 0;
    bool neg = false;
    if (i < n && (s[i] == '+' || s[i] == '-'))
        neg = s[i++] == '-';
    int bs = (int)base;
    bool prefixed = false;
    if (i + 1 < n && s[i] == '0') {
        char p = (char)(s[i + 1] | 32);
        int pb = p == 'x' ? 16 : p == 'o' ? 8 : p == 'b' ? 2 : 0;
        if (pb && (bs == 0 || bs == pb)) {
            bs = pb;
            i += 2;
            prefixed = true;
        }
    }
    bool base0_decimal = false;
    if (bs == 0) {
        bs = 10;
        base0_decimal = true;
    }
    if (i >= n)
        return 1;
    uint64_t v = 0;
    bool any = false, overflow = false, prev_digit = prefixed, nonzero = false, leading_zero = false;
    size_t first = i;
    for (; i < n; i++) {
        char c = s[i];
        int d;
        if (c == '_') {
            if (!prev_digit || i + 1 >= n)
                return 1;
            prev_digit = false;
            continue;
        }
        if (c >= '0' && c <= '9') d = c - '0';
        else if ((c | 32) >= 'a' && (c | 32) <= 'z') d = (c | 32) - 'a' + 10;
        else return 1;
        if (d >= bs)
            return 1;
        if (i == first && d == 0)
            leading_zero = true;
        if (d)
            nonzero = true;
        if (v > (UINT64_MAX - (uint64_t)d) / (uint64_t)bs)
            overflow = true;
        else
            v = v * (uint64_t)bs + (uint64_t)d;
        any = true;
        prev_digit = true;
    }
    if (!any || !prev_digit)
        return 1;
    if (base0_decimal && leading_zero && nonzero)
        return 1; /* "010" is invalid with base 0 */
    if (overflow || v > (uint64_t)INT64_MAX + (neg ? 1u : 0u))
        return 2;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return 0;
}

/* Python's int(d): NaN is not ok (ValueError), infinity Python's OverflowError, a value past
 * int64 a big int. */
static int float_to_int(tpl_vm *vm, double d, tpl_value *out, bool *ok)
{
    *ok = false;
    if (isnan(d))
        return 0;
    if (isinf(d))
        return tpl_vm_fail(vm, TPL_EK_OVERFLOW, "cannot convert float infinity to integer");
    double t = trunc(d);
    *ok = true;
    if (!(t >= -9223372036854775808.0 && t < 9223372036854775808.0))
        return tpl_big_from_double(vm, t, out);
    *out = tpl_v_int((int64_t)t);
    return 0;
}

/* Python's int(s, base) of a text parse_py_int accepted but found past int64: the digits without
 * blanks, sign, prefix and '_' as a big int. A decimal (not power-of-two base) text of more than
 * 4,300 digits is Python's ValueError: *ok false, so the caller falls back as Jinja2 does. */
static int parse_big_int(tpl_vm *vm, const char *s, size_t n, int64_t base, tpl_value *out, bool *ok)
{
    *ok = false;
    size_t i = 0;
    while (i < n && (s[i] == ' ' || (s[i] >= '\t' && s[i] <= '\r'))) i++;
    while (n > i && (s[n - 1] == ' ' || (s[n - 1] >= '\t' && s[n - 1] <= '\r'))) n--;
    bool neg = false;
    if (i < n && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
    if (i + 1 < n && s[i] == '0') {
        char p = (char)(s[i + 1] | 32);
        int pb = p == 'x' ? 16 : p == 'o' ? 8 : p == 'b' ? 2 : 0;
        if (pb && (base == 0 || base == pb)) { base = pb; i += 2; }
    }
    if (base == 0) base = 10;
    tpl_sb b;
    tpl_sb_init(&b, AR(vm));
    if (neg) tpl_sb_putc(&b, '-');
    size_t digits = 0;
    for (; i < n; i++)
        if (s[i] != '_') { tpl_sb_putc(&b, s[i]); digits++; }
    if (b.failed) return OOM();
    if ((base & (base - 1)) != 0 && digits > TPL_PY_INT_MAX_STR_DIGITS) return 0;
    if (!tpl_big_parse(AR(vm), b.p, b.len, (int)base, out))
        return tpl_vm_fail(vm, TPL_EK_MEMORY_LIMIT, "integer too large (more than %d bits)", TPL_BIG_MAX_BITS);
    *ok = true;
    return 0;
}

int f_int(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value v = a[0];
    tpl_value dflt = tpl_given(a[1]) ? a[1] : tpl_v_int(0);
    if (v.type == TPL_T_UNDEF)
        return tpl_undefined_error(vm, v);
    if (v.type == TPL_T_HOST) { /* Jinja2: int(value), else int(float(value)); the host's number */
        int rc = tpl_hobj_number(vm, v, false, &v);
        if (rc < 0)
            return -1;
        if (rc > 0) {
            *out = dflt;
            return 0;
        }
    }
    switch (v.type) {
    case TPL_T_INT: /* int(x) of an int is x itself (a constant stays one: `is sameas`) */
        *out = v;
        return 0;
    case TPL_T_BOOL:
        *out = tpl_v_int(v.u.i);
        return 0;
    case TPL_T_BIGINT:
        *out = v;
        return 0;
    case TPL_T_FLOAT: {
        bool ok;
        if (float_to_int(vm, v.u.f, out, &ok) < 0)
            return -1;
        if (!ok) *out = dflt;
        return 0;
    }
    case TPL_T_STR: {
        int64_t base = 10;
        bool base_ok = true;
        if (number_text(vm, &v) < 0)
            return -1;
        if (tpl_given(a[2])) {
            if (a[2].type == TPL_T_INT || a[2].type == TPL_T_BOOL)
                base = a[2].u.i;
            else
                base_ok = false; /* TypeError: falls back to int(float(value)) */
        }
        if (base_ok) {
            int64_t r;
            int rc = parse_py_int(v.u.s, v.len, base, &r);
            if (rc == 0) {
                *out = tpl_v_int(r);
                return 0;
            }
            if (rc == 2) {
                bool ok;
                if (parse_big_int(vm, v.u.s, v.len, base, out, &ok) < 0)
                    return -1;
                if (ok)
                    return 0;
            }
        }
        double d;
        if (parse_py_float(v.u.s, v.len, &d)) {
            bool ok;
            if (isinf(d)) { /* int(float("inf")): the OverflowError Jinja2 catches here */
                *out = dflt;
                return 0;
            }
            if (float_to_int(vm, d, out, &ok) < 0)
                return -1;
            if (!ok) *out = dflt;
            return 0;
        }
        *out = dflt;
        return 0;
    }
    default:
        *out = dflt;
        return 0;
    }
}

int f_float(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value v = a[0];
    tpl_value dflt = tpl_given(a[1]) ? a[1] : tpl_v_float(0.0);
    double d;
    if (v.type == TPL_T_HOST) { /* Jinja2: float(value); the host's number */
        int rc = tpl_hobj_number(vm, v, true, &v);
        if (rc < 0)
            return -1;
        if (rc > 0) {
            *out = dflt;
            return 0;
        }
    }
    switch (v.type) {
    case TPL_T_UNDEF:
        return tpl_undefined_error(vm, v);
    case TPL_T_INT:
    case TPL_T_BOOL:
        *out = tpl_v_float((double)v.u.i);
        return 0;
    case TPL_T_BIGINT:
        if (!tpl_big_to_double(v, &d))
            return tpl_vm_fail(vm, TPL_EK_OVERFLOW, "int too large to convert to float");
        *out = tpl_v_float(d);
        return 0;
    case TPL_T_FLOAT:
        *out = v;
        out->flags = 0;
        return 0;
    case TPL_T_STR:
        if (number_text(vm, &v) < 0)
            return -1;
        *out = parse_py_float(v.u.s, v.len, &d) ? tpl_v_float(d) : dflt;
        return 0;
    default:
        *out = dflt;
        return 0;
    }
}

/* Python float(value) for filesizeformat: errors like Python. */
static int to_float_strict(tpl_vm *vm, tpl_value v, double *d)
{
    switch (v.type) {
    case TPL_T_UNDEF: return tpl_undefined_error(vm, v);
    case TPL_T_INT: case TPL_T_BOOL: *d = (double)v.u.i; return 0;
    case TPL_T_BIGINT:
        if (tpl_big_to_double(v, d)) return 0;
        return tpl_vm_fail(vm, TPL_EK_OVERFLOW, "int too large to convert to float");
    case TPL_T_FLOAT: *d = v.u.f; return 0;
    case TPL_T_STR: {
        tpl_value t = v;
        if (number_text(vm, &t) < 0)
            return -1;
        if (parse_py_float(t.u.s, t.len, d))
            return 0;
        tpl_sb b;
        tpl_sb_init(&b, AR(vm));
        tpl_py_repr(&b, v);
        return tpl_vm_error(vm, TPL_ERR_VALUE, "could not convert string to float: %.*s", (int)b.len,
                            b.p ? b.p : "");
    }
    default:
        if (v.type == TPL_T_HOST) { /* float(obj): a Decimal's __float__ */
            tpl_value f;
            int h = tpl_hobj_number(vm, v, true, &f);
            if (h < 0)
                return -1;
            if (h == 0 && f.type != TPL_T_HOST)
                return to_float_strict(vm, f, d);
        }
        return tpl_vm_error(vm, TPL_ERR_TYPE, "float() argument must be a string or a real number, not '%s'",
                            tpl_type_name(vm, v));
    }
}

int f_filesizeformat(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    double bytes;
    if (to_float_strict(vm, a[0], &bytes) < 0)
        return -1;
    int binary = tpl_arg_truthy(vm, a[1], false);
    if (binary < 0)
        return -1;
    double base = binary ? 1024.0 : 1000.0;
    static const char *const dec[] = {"kB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB"};
    static const char *const bin[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"};
    char buf[400];
    if (bytes == 1) {
        snprintf(buf, sizeof buf, "1 Byte");
    } else if (bytes < base) {
        if (isnan(bytes))
            return tpl_vm_error(vm, TPL_ERR_VALUE, "cannot convert float NaN to integer");
        double t = trunc(bytes);
        if (isinf(t))
            return tpl_vm_fail(vm, TPL_EK_OVERFLOW, "cannot convert float infinity to integer");
        if (!(t > -9.2e18)) { /* int(bytes): Python's exact integer of the float */
            tpl_value big;
            if (tpl_big_from_double(vm, t, &big) < 0)
                return -1;
            tpl_sb b;
            tpl_sb_init(&b, AR(vm));
            tpl_py_str(&b, big);
            tpl_sb_puts(&b, " Bytes");
            return sb_done(vm, &b, out);
        }
        snprintf(buf, sizeof buf, "%lld Bytes", (long long)t);
    } else {
        double unit = base * base;
        int i = 0;
        for (; i < 8; i++) {
            if (bytes < unit)
                break;
            if (i < 7)
                unit *= base;
        }
        if (i == 8)
            i = 7;
        snprintf(buf, sizeof buf, "%.1f %s", base * bytes / unit, binary ? bin[i] : dec[i]);
    }
    char *p = tpl_arena_strdup(AR(vm), buf, strlen(buf));
    if (!p)
        return OOM();
    *out = tpl_v_str(p, strlen(buf));
    return 0;
}

/* ------------------------------------------------------------------ sequences */

int f_first(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value v = a[0];
    switch (v.type) {
    case TPL_T_UNDEF:
        if (tpl_vm_strict_undef(vm, v))
            return tpl_undefined_error(vm, v);
        *out = undef_hint("No first item, sequence was empty.");
        return 0;
    case TPL_T_STR: {
        if (v.len == 0)
            break;
        size_t i = 0;
        tpl_utf8_next(v.u.s, v.len, &i);
        *out = tpl_v_str(v.u.s, i);
        return 0;
    }
    case TPL_T_LIST:
        if (v.flags & TPL_F_RANGE_BIG) {
            bool found;
            return tpl_range_item(vm, v, tpl_v_int(0), &found, out);
        }
        if (v.u.list->len == 0)
            break;
        *out = v.u.list->items[0];
        return 0;
    case TPL_T_MAP:
        if (v.flags & TPL_F_NS)
            return tpl_vm_error(vm, TPL_ERR_TYPE, "'Namespace' object is not iterable");
        if (v.u.map->len == 0)
            break;
        *out = v.u.map->e[0].key;
        return 0;
    default: {
        tpl_list *l;
        if (tpl_to_list(vm, v, &l) < 0)
            return -1;
        if (l->len == 0)
            break;
        *out = l->items[0];
        return 0;
    }
    }
    *out = undef_hint("No first item, sequence was empty.");
    return 0;
}

int f_last(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value v = a[0];
    if (tpl_is_iter(v)) /* Jinja2's last() is next(iter(reversed(seq))) */
        return tpl_vm_error(vm, TPL_ERR_TYPE, "'%s' object is not reversible", tpl_lazy_name(v.aux));
    switch (v.type) {
    case TPL_T_UNDEF:
        if (tpl_vm_strict_undef(vm, v))
            return tpl_undefined_error(vm, v);
        break;
    case TPL_T_STR: {
        if (v.len == 0)
            break;
        size_t i = v.len - 1;
        while (i > 0 && ((unsigned char)v.u.s[i] & 0xC0) == 0x80 && v.len - i < 4)
            i--;
        size_t j = i;
        tpl_utf8_next(v.u.s, v.len, &j);
        if (j != v.len)
            i = v.len - 1;
        *out = tpl_v_str(v.u.s + i, v.len - i);
        return 0;
    }
    case TPL_T_LIST:
        if (v.flags & TPL_F_RANGE_BIG) {
            bool found;
            return tpl_range_item(vm, v, tpl_v_int(-1), &found, out);
        }
        if (v.u.list->len == 0)
            break;
        *out = v.u.list->items[v.u.list->len - 1];
        return 0;
    case TPL_T_MAP:
        if (v.flags & TPL_F_NS)
            return tpl_vm_error(vm, TPL_ERR_TYPE, "'Namespace' object is not reversible");
        if (v.u.map->len == 0)
            break;
        *out = v.u.map->e[v.u.map->len - 1].key;
        return 0;
    default:
        return tpl_vm_error(vm, TPL_ERR_TYPE, "'%s' object is not reversible", tpl_type_name(vm, v));
    }
    *out = undef_hint("No last item, sequence was empty.");
    return 0;
}

int f_list(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *l;
    if (tpl_iter_list(vm, a[0], &l) < 0)
        return -1;
    /* list() always makes a new list (never the tuple or the same object: `is sameas` tells).
     * Values are immutable, so the new list shares the items: range(10_000_000)|list takes no
     * second 160 MB. cap == len: a push onto it copies first, never writing into the shared
     * array. */
    tpl_list *c = tpl_list_new(AR(vm), 0);
    if (!c)
        return OOM();
    c->items = l->items;
    c->len = c->cap = l->len;
    *out = tpl_v_list(c);
    return 0;
}

static int f_items_list(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value v = a[0];
    tpl_list *l = NULL;
    if (v.type == TPL_T_UNDEF) {
        l = tpl_list_new(AR(vm), 0);
        if (!l)
            return OOM();
    } else if (v.type != TPL_T_MAP || (v.flags & TPL_F_NS)) {
        return tpl_vm_error(vm, TPL_ERR_TYPE, "Can only get item pairs from a mapping.");
    } else if (dict_items(vm, v, &l) < 0) {
        return -1;
    }
    *out = tpl_v_list(l);
    return 0;
}

/* items' stage: its source is the one-item list [value] */
static int f_items_stage(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value b[1] = { a[0].u.list->len ? a[0].u.list->items[0] : tpl_v_undef() };
    return f_items_list(vm, b, out);
}

/* Jinja2's items is a generator: the mapping's items (or its TypeError) when first used. */
int f_items(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (a[0].type == TPL_T_MAP && !(a[0].flags & TPL_F_NS)) { /* `yield from value.items()`: live, from the first pull */
        tpl_value view;
        if (tpl_vm_view_new(vm, a[0], 0, &view) < 0)
            return -1;
        return tpl_pend_stage(vm, view, NULL, NULL, 0, 1, TPL_LAZY_GENERATOR, out);
    }
    tpl_list *one = tpl_list_new(AR(vm), 1);
    if (!one || !tpl_list_push(AR(vm), one, a[0]))
        return OOM();
    return tpl_pend_whole(vm, tpl_v_list(one), f_items_stage, a, 1, out);
}

int f_reverse(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value v = a[0];
    if (v.type == TPL_T_STR) {
        char *p = tpl_arena_alloc(AR(vm), v.len + 1);
        if (!p)
            return OOM();
        size_t i = 0, n = v.len;
        while (i < n) {
            size_t j = i;
            tpl_utf8_next(v.u.s, n, &j);
            memcpy(p + (n - j), v.u.s + i, j - i);
            i = j;
        }
        p[n] = 0;
        *out = tpl_v_str(p, n);
        out->flags = v.flags & TPL_F_SAFE;
        return 0;
    }
    tpl_list *l;
    if (tpl_is_big_range(v)) /* reversed(range): a range_iterator, lazy */
        return tpl_pend_range(vm, v, true, out);
    if (v.type != TPL_T_LIST && v.type != TPL_T_MAP && v.type != TPL_T_UNDEF && v.type != TPL_T_LOOP)
        return tpl_vm_fail(vm, TPL_EK_FILTER_ARGUMENT, "argument must be iterable"); /* (do_reverse's own) */
    if (v.type == TPL_T_LIST && !v.aux && !(v.flags & TPL_F_TUPLE)) /* reversed(list): over the live list */
        return tpl_pend_revlist(vm, v, out);
    if (tpl_iter_list(vm, v, &l) < 0)
        return -1;
    tpl_list *r = tpl_list_new(AR(vm), l->len + 2);
    if (!r)
        return OOM();
    for (uint32_t i = 0; i < l->len; i++)
        r->items[i] = l->items[l->len - 1 - i];
    r->len = l->len;
    *out = tpl_v_list(r);
    const tpl_map *dict = v.type == TPL_T_MAP && !(v.flags & TPL_F_NS) ? v.u.map : tpl_view_dict(v);
    if (dict) { /* reversed(d), reversed(d.items()): the iterator knows its dict (TPL_F_VIEW_DICT) */
        r->cap = r->len;
        r->items[r->len] = tpl_v_map((tpl_map *)dict);
        r->items[r->len + 1] = tpl_vm_dict_stamp(vm, dict); /* (tpl_vm_dict_iter_sync) */
        out->flags = TPL_F_VIEW_DICT;
    }
    /* reversed(value) is an iterator; a generator is not reversible, so Jinja2 reverses list(value) */
    if (v.type == TPL_T_MAP || v.aux == TPL_LAZY_DICT_KEYS)
        out->aux = TPL_LAZY_DICT_REVITER;
    else if (v.aux == TPL_LAZY_RANGE)
        out->aux = TPL_LAZY_RANGE_ITER;
    else if (v.type == TPL_T_LIST && !v.aux)
        out->aux = (v.flags & TPL_F_TUPLE) ? TPL_LAZY_REVERSED : TPL_LAZY_LIST_REVITER;
    else if (v.type == TPL_T_UNDEF) /* reversed(Undefined): it has __len__ and __getitem__ */
        out->aux = TPL_LAZY_REVERSED;
    else if (v.type == TPL_T_LIST && v.aux < TPL_LAZY_GENERATOR)
        out->aux = (uint16_t)(TPL_LAZY_DICT_REVITEMS + (v.aux - TPL_LAZY_DICT_ITEMS));
    return 0;
}

int f_join(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *l;
    if (tpl_iter_list(vm, a[0], &l) < 0)
        return -1;
    tpl_value d = tpl_v_str("", 0);
    if (tpl_given(a[1]) && tpl_to_str(vm, a[1], &d) < 0)
        return -1;
    bool attr = tpl_given(a[2]) && a[2].type != TPL_T_NONE;
    tpl_sb b;
    tpl_sb_init(&b, AR(vm));
    for (uint32_t i = 0; i < l->len; i++) {
        if (!tpl_sb_charge(&b, 1))
            break; /* memory or fuel: sb_done reports it */
        tpl_value it = l->items[i];
        if (attr && tpl_attr_get(vm, it, a[2], tpl_v_unset(), &it) < 0)
            return -1;
        if (i)
            tpl_sb_put(&b, d.u.s, d.len);
        if (it.type == TPL_T_STR) {
            tpl_sb_put(&b, it.u.s, it.len);
        } else if (it.type == TPL_T_UNDEF) {
            if (tpl_vm_strict_undef(vm, it))
                return tpl_undefined_error(vm, it);
        } else {
            tpl_py_str(&b, it);
        }
    }
    return sb_done(vm, &b, out);
}

/* Jinja2's do_join under autoescape: when the separator or an item is Markup, every other item
 * and the separator are escaped and the result is Markup; otherwise a plain join. */
int f_join_ae(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *l;
    if (tpl_iter_list(vm, a[0], &l) < 0)
        return -1;
    bool attr = tpl_given(a[2]) && a[2].type != TPL_T_NONE;
    tpl_list *items = tpl_list_new(AR(vm), l->len);
    if (!items)
        return OOM();
    bool markup = tpl_given(a[1]) && is_markup(a[1]);
    for (uint32_t i = 0; i < l->len; i++) {
        tpl_value it = l->items[i];
        if (attr && tpl_attr_get(vm, it, a[2], tpl_v_unset(), &it) < 0)
            return -1;
        if (it.type == TPL_T_HOST) { /* an object with __html__ is markup here (its own HTML) */
            tpl_value h;
            int rc = tpl_hobj_html(vm, it, &h);
            if (rc < 0)
                return -1;
            if (rc == 0)
                it = h;
        }
        markup |= is_markup(it);
        items->items[i] = it;
    }
    items->len = l->len;
    tpl_value b[3] = { tpl_v_list(items), a[1], tpl_v_unset() };
    if (!markup)
        return f_join(vm, b, out);
    for (uint32_t i = 0; i < items->len; i++)
        if (!is_markup(items->items[i]) && escape_value(vm, items->items[i], false, &items->items[i]) < 0)
            return -1;
    if (tpl_given(b[1]) && !is_markup(b[1]) && escape_value(vm, b[1], false, &b[1]) < 0)
        return -1;
    if (f_join(vm, b, out) < 0)
        return -1;
    out->flags = TPL_F_SAFE;
    return 0;
}

/* ------------------------------------------------------------------ map / select */

static int f_map_list(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value v = a[0];
    const tpl_list *args = a[1].u.list;
    tpl_map *kw = a[2].u.map;
    tpl_arena *ar = AR(vm);
    int t = tpl_truthy_py(vm, v);
    if (t < 0)
        return -1;
    tpl_list *res = tpl_list_new(ar, 0);
    if (!res)
        return OOM();
    *out = tpl_v_list(res);
    if (!t)
        return 0;
    tpl_list *items;
    if (tpl_iter_list(vm, v, &items) < 0)
        return -1;
    res = tpl_list_new(ar, items->len);
    if (!res)
        return OOM();
    tpl_value *attr = args->len == 0 ? tpl_map_get_str(kw, "attribute", 9, tpl_hash_str("attribute", 9)) : NULL;
    if (attr) {
        tpl_value *dp = tpl_map_get_str(kw, "default", 7, tpl_hash_str("default", 7));
        tpl_value dflt = dp ? *dp : tpl_v_unset();
        for (uint32_t i = 0; i < kw->len; i++) {
            tpl_value k = kw->e[i].key;
            if (!(k.len == 9 && memcmp(k.u.s, "attribute", 9) == 0) && !(k.len == 7 && memcmp(k.u.s, "default", 7) == 0))
                return tpl_vm_error(vm, TPL_ERR_TYPE, "Unexpected keyword argument '%.*s'", (int)k.len, k.u.s);
        }
        for (uint32_t i = 0; i < items->len; i++)
            if (tpl_attr_get(vm, items->items[i], *attr, dflt, &res->items[i]) < 0)
                return -1;
        res->len = items->len;
        *out = tpl_v_list(res);
        return 0;
    }
    if (args->len == 0)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "map requires a filter argument");
    tpl_value name = args->items[0];
    int nargs = (int)args->len;   /* subject + the filter's own arguments */
    tpl_value *fa = tpl_arena_alloc(ar, (size_t)nargs * sizeof *fa);
    if (!fa)
        return OOM();
    for (uint32_t i = 0; i < items->len; i++) {
        fa[0] = items->items[i];
        for (int k = 1; k < nargs; k++)
            fa[k] = args->items[k];
        if (tpl_filter_by_name(vm, name, fa, nargs, kw, &res->items[i]) < 0)
            return -1;
    }
    res->len = items->len;
    *out = tpl_v_list(res);
    return 0;
}

int f_map(tpl_vm *vm, tpl_value *a, tpl_value *out) { return lazy_generator(vm, f_map_list, 1, true, a, out); }

static int select_common(tpl_vm *vm, tpl_value *a, tpl_value *out, bool want, bool lookup_attr)
{
    tpl_value v = a[0];
    const tpl_list *args = a[1].u.list;
    tpl_map *kw = a[2].u.map;
    tpl_arena *ar = AR(vm);
    int t = tpl_truthy_py(vm, v);
    if (t < 0)
        return -1;
    tpl_list *res = tpl_list_new(ar, 0);
    if (!res)
        return OOM();
    *out = tpl_v_list(res);
    if (!t)
        return 0;
    uint32_t off = 0;
    tpl_value attr = tpl_v_unset();
    if (lookup_attr) {
        if (args->len == 0)
            return tpl_vm_error(vm, TPL_ERR_TYPE, "Missing parameter for attribute name");
        attr = args->items[0];
        off = 1;
    }
    bool has_test = args->len > off;
    tpl_value name = has_test ? args->items[off] : tpl_v_none();
    int ntest = has_test ? (int)(args->len - off) : 0; /* subject + test args */
    tpl_value *ta = tpl_arena_alloc(ar, (size_t)(ntest ? ntest : 1) * sizeof *ta);
    tpl_list *items;
    if (!ta)
        return OOM();
    if (tpl_iter_list(vm, v, &items) < 0)
        return -1;
    res = tpl_list_new(ar, items->len);
    if (!res)
        return OOM();
    for (uint32_t i = 0; i < items->len; i++) {
        tpl_value it = items->items[i], x = it;
        if (lookup_attr && tpl_attr_get(vm, it, attr, tpl_v_unset(), &x) < 0)
            return -1;
        bool r;
        if (has_test) {
            ta[0] = x;
            for (int k = 1; k < ntest; k++)
                ta[k] = args->items[off + (uint32_t)k];
            if (tpl_test_by_name(vm, name, ta, ntest, kw, &r) < 0)
                return -1;
        } else {
            int tr = tpl_truthy_py(vm, x);
            if (tr < 0)
                return -1;
            r = tr;
        }
        if (r == want)
            res->items[res->len++] = it;
    }
    *out = tpl_v_list(res);
    return 0;
}

static int select_list(tpl_vm *vm, tpl_value *a, tpl_value *out) { return select_common(vm, a, out, true, false); }
static int reject_list(tpl_vm *vm, tpl_value *a, tpl_value *out) { return select_common(vm, a, out, false, false); }
static int selectattr_list(tpl_vm *vm, tpl_value *a, tpl_value *out) { return select_common(vm, a, out, true, true); }
static int rejectattr_list(tpl_vm *vm, tpl_value *a, tpl_value *out) { return select_common(vm, a, out, false, true); }
int f_select(tpl_vm *vm, tpl_value *a, tpl_value *out) { return lazy_generator(vm, select_list, 0, true, a, out); }
int f_reject(tpl_vm *vm, tpl_value *a, tpl_value *out) { return lazy_generator(vm, reject_list, 0, true, a, out); }
int f_selectattr(tpl_vm *vm, tpl_value *a, tpl_value *out) { return lazy_generator(vm, selectattr_list, 0, true, a, out); }
int f_rejectattr(tpl_vm *vm, tpl_value *a, tpl_value *out) { return lazy_generator(vm, rejectattr_list, 0, true, a, out); }

/* ------------------------------------------------------------------ sort, unique, min, max, groupby */

/* The sort filter's and list.sort(key=)'s scratch: a key per item, the index order merge_sort
 * permutes, the result list (arena memory). */
static int sort_scratch(tpl_vm *vm, uint32_t n, tpl_value **keys, uint32_t **idx, tpl_list **res)
{
    tpl_arena *ar = AR(vm);
    *keys = tpl_arena_alloc(ar, (size_t)(n ? n : 1) * sizeof **keys);
    *idx = tpl_arena_alloc(ar, (size_t)(n ? n : 1) * sizeof **idx);
    *res = tpl_list_new(ar, n);
    return *keys && *idx && *res ? 0 : OOM();
}

/* Sorts idx by keys (stable; np key parts, 0 = one plain key each) and gives items in that order. */
static int sort_finish(tpl_vm *vm, const tpl_list *items, tpl_value *keys, uint32_t *idx, tpl_list *res,
                       int np, bool rev, tpl_value *out)
{
    uint32_t n = items->len;
    sort_ctx c = { vm, keys, np, rev };
    if (merge_sort(&c, idx, n) < 0)
        return -1;
    for (uint32_t i = 0; i < n; i++)
        res->items[i] = items->items[idx[i]];
    res->len = n;
    *out = tpl_v_list(res);
    return 0;
}

int f_sort(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *items;
    if (tpl_iter_list(vm, a[0], &items) < 0)
        return -1;
    int rev;
    if (reverse_arg(vm, a[1], &rev) < 0)
        return -1;
    int cs = tpl_arg_truthy(vm, a[2], false);
    if (cs < 0)
        return -1;
    tpl_value attr = tpl_given(a[3]) ? a[3] : tpl_v_none();
    tpl_value parts[TPL_MAX_PARAMS * 4];
    int np = attr_parts(attr, parts, (int)(sizeof parts / sizeof parts[0]));
    uint32_t n = items->len;
    tpl_value *keys;
    uint32_t *idx;
    tpl_list *res;
    if (sort_scratch(vm, n, &keys, &idx, &res) < 0)
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        idx[i] = i;
        tpl_list *k = tpl_list_new(AR(vm), (uint32_t)np);
        if (!k)
            return OOM();
        for (int p = 0; p < np; p++) {
            tpl_value kv;
            if (tpl_attr_get(vm, items->items[i], parts[p], tpl_v_unset(), &kv) < 0)
                return -1;
            k->items[p] = fold(vm, kv, cs);
        }
        k->len = (uint32_t)np;
        keys[i] = tpl_v_list(k);
    }
    return sort_finish(vm, items, keys, idx, res, np, rev, out);
}

int tpl_sort_keyed(tpl_vm *vm, const tpl_list *items, tpl_value fn, bool rev, tpl_value *out)
{
    uint32_t n = items->len;
    tpl_value *keys;
    uint32_t *idx;
    tpl_list *res;
    if (sort_scratch(vm, n, &keys, &idx, &res) < 0)
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        idx[i] = i;
        tpl_value arg = items->items[i];
        if (tpl_call_value(vm, fn, &arg, 1, &keys[i]) < 0)
            return -1;
    }
    return sort_finish(vm, items, keys, idx, res, 0, rev, out);
}

static int unhashable_check(tpl_vm *vm, tpl_value k) { return tpl_vm_check_hashable(vm, k); }

static int f_unique_list(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *items;
    if (tpl_iter_list(vm, a[0], &items) < 0)
        return -1;
    int cs = tpl_arg_truthy(vm, a[1], false);
    if (cs < 0)
        return -1;
    tpl_value attr = tpl_given(a[2]) ? a[2] : tpl_v_none();
    tpl_arena *ar = AR(vm);
    /* (a lazy unique's stages share the keys seen: a[3]) */
    tpl_map *seen = a[3].type == TPL_T_MAP ? a[3].u.map : tpl_map_new(ar, items->len);
    tpl_list *res = tpl_list_new(ar, items->len);
    if (!seen || !res)
        return OOM();
    for (uint32_t i = 0; i < items->len; i++) {
        tpl_value k;
        if (tpl_attr_get(vm, items->items[i], attr, tpl_v_unset(), &k) < 0)
            return -1;
        k = fold(vm, k, cs);
        if (unhashable_check(vm, k) < 0 || tpl_vm_key_of(vm, k, &k) < 0) /* (Decimal(1) is the key 1) */
            return -1;
        tpl_value *hit;
        if (tpl_vm_map_get(vm, seen, k, &hit) < 0)
            return -1;
        if (hit)
            continue;
        if (!tpl_map_set(ar, seen, k, tpl_v_none()))
            return OOM();
        res->items[res->len++] = items->items[i];
    }
    *out = tpl_v_list(res);
    return 0;
}

/* Lazy, as Jinja2's generator, of a list, a range or an iterator: a source item is taken (its key
 * made, its hashability checked) only when the consumer wants the next unique item. */
int f_unique(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value b[4] = { a[0], a[1], a[2], tpl_v_unset() };
    bool dict = a[0].type == TPL_T_MAP && !(a[0].flags & TPL_F_NS);
    if (a[0].type == TPL_T_LIST || dict || lazy_scalar(a[0]) || tpl_vm_strict_undef(vm, a[0])) {
        tpl_map *seen = tpl_map_new(AR(vm), 8);
        if (!seen)
            return OOM();
        b[3] = tpl_v_map(seen);
        tpl_value src = a[0];
        if (dict && tpl_vm_view_new(vm, a[0], 1, &src) < 0) /* iter(d): its keys, live (vm.c pend_src) */
            return -1;
        return tpl_pend_stage(vm, src, f_unique_list, b, 4, 0, TPL_LAZY_GENERATOR, out);
    }
    return generator(f_unique_list(vm, b, out), out);
}

static int min_max(tpl_vm *vm, tpl_value *a, tpl_value *out, bool want_max)
{
    tpl_list *items;
    if (tpl_iter_list(vm, a[0], &items) < 0)
        return -1;
    int cs = tpl_arg_truthy(vm, a[1], false);
    if (cs < 0)
        return -1;
    if (items->len == 0) {
        *out = undef_hint("No aggregated item, sequence was empty.");
        return 0;
    }
    tpl_value attr = tpl_given(a[2]) ? a[2] : tpl_v_none();
    tpl_value best = items->items[0], bestk;
    if (tpl_attr_get(vm, best, attr, tpl_v_unset(), &bestk) < 0)
        return -1;
    bestk = fold(vm, bestk, cs);
    for (uint32_t i = 1; i < items->len; i++) {
        tpl_value k;
        if (tpl_attr_get(vm, items->items[i], attr, tpl_v_unset(), &k) < 0)
            return -1;
        k = fold(vm, k, cs);
        int c;
        /* max: replace when k > best; min: when k < best (Python compares the new item first) */
        if (tpl_compare_op(vm, k, bestk, want_max ? ">" : "<", &c) < 0)
            return -1;
        if ((want_max ? c > 0 : c < 0) && !((k.type == TPL_T_FLOAT && isnan(k.u.f)) || (bestk.type == TPL_T_FLOAT && isnan(bestk.u.f)))) {
            best = items->items[i];
            bestk = k;
        }
    }
    *out = best;
    return 0;
}

int f_max(tpl_vm *vm, tpl_value *a, tpl_value *out) { return min_max(vm, a, out, true); }
int f_min(tpl_vm *vm, tpl_value *a, tpl_value *out) { return min_max(vm, a, out, false); }

int f_groupby(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *items;
    if (tpl_iter_list(vm, a[0], &items) < 0)
        return -1;
    tpl_value attr = a[1];
    tpl_value dflt = tpl_given(a[2]) ? a[2] : tpl_v_none();
    int cs = tpl_arg_truthy(vm, a[3], false);
    if (cs < 0)
        return -1;
    uint32_t n = items->len;
    tpl_arena *ar = AR(vm);
    tpl_value *keys = tpl_arena_alloc(ar, (size_t)(n ? n : 1) * sizeof *keys);
    tpl_value *raw = tpl_arena_alloc(ar, (size_t)(n ? n : 1) * sizeof *raw);
    uint32_t *idx = tpl_arena_alloc(ar, (size_t)(n ? n : 1) * sizeof *idx);
    tpl_list *res = tpl_list_new(ar, 4);
    if (!keys || !raw || !idx || !res)
        return OOM();
    for (uint32_t i = 0; i < n; i++) {
        idx[i] = i;
        if (tpl_attr_get(vm, items->items[i], attr, dflt, &raw[i]) < 0)
            return -1;
        keys[i] = fold(vm, raw[i], cs);
    }
    sort_ctx c = { vm, keys, 0, false };
    if (merge_sort(&c, idx, n) < 0)
        return -1;
    uint32_t i = 0;
    while (i < n) {
        uint32_t j = i + 1;
        for (bool eq = true; j < n; j++) {
            if (tpl_vm_item_equal(vm, keys[idx[j]], keys[idx[i]], &eq) < 0)
                return -1;
            if (!eq)
                break;
        }
        tpl_list *grp = tpl_list_new(ar, j - i);
        if (!grp)
            return OOM();
        for (uint32_t k = i; k < j; k++)
            grp->items[grp->len++] = items->items[idx[k]];
        tpl_value t = mk_tuple(vm, raw[idx[i]], tpl_v_list(grp));
        if (t.type != TPL_T_LIST)
            return OOM();
        t.flags = TPL_F_TUPLE | TPL_F_GROUP;
        if (!tpl_list_push(ar, res, t))
            return OOM();
        i = j;
    }
    *out = tpl_v_list(res);
    return 0;
}

/* ------------------------------------------------------------------ sum, round */

static int add_values(tpl_vm *vm, tpl_value x, tpl_value y, tpl_value *r)
{
    if (x.type == TPL_T_UNDEF)
        return tpl_undefined_error(vm, x);
    if (y.type == TPL_T_UNDEF)
        return tpl_undefined_error(vm, y);
    if ((x.type == TPL_T_BIGINT || y.type == TPL_T_BIGINT) && (tpl_is_num(x) || x.type == TPL_T_BIGINT) &&
        (tpl_is_num(y) || y.type == TPL_T_BIGINT))
        return tpl_big_binop(vm, TPL_OP_ADD, x, y, r);
    if (tpl_is_num(x) && tpl_is_num(y)) {
        if (x.type != TPL_T_FLOAT && y.type != TPL_T_FLOAT) {
            int64_t s;
            if (__builtin_add_overflow(x.u.i, y.u.i, &s))
                return tpl_big_binop(vm, TPL_OP_ADD, x, y, r);
            *r = tpl_v_int(s);
            return 0;
        }
        double fx = x.type == TPL_T_FLOAT ? x.u.f : (double)x.u.i;
        double fy = y.type == TPL_T_FLOAT ? y.u.f : (double)y.u.i;
        *r = tpl_v_float(fx + fy);
        return 0;
    }
    if (x.type == TPL_T_LIST && y.type == TPL_T_LIST &&
        (x.flags & TPL_F_TUPLE) == (y.flags & TPL_F_TUPLE)) {
        tpl_list *l = tpl_list_new(AR(vm), x.u.list->len + y.u.list->len);
        if (!l)
            return OOM();
        for (uint32_t i = 0; i < x.u.list->len; i++) l->items[l->len++] = x.u.list->items[i];
        for (uint32_t i = 0; i < y.u.list->len; i++) l->items[l->len++] = y.u.list->items[i];
        *r = tpl_v_list(l);
        r->flags = x.flags & TPL_F_TUPLE;
        return 0;
    }
    if (x.type == TPL_T_LIST && y.type == TPL_T_LIST)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "can only concatenate %s (not \"%s\") to %s",
                            tpl_type_name(vm, x), tpl_type_name(vm, y), tpl_type_name(vm, x));
    int h = tpl_hobj_arith(vm, "+", x, y, r); /* the host's own numbers (a Decimal) */
    if (h <= 0)
        return h;
    return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported operand type(s) for +: '%s' and '%s'",
                        tpl_type_name(vm, x), tpl_type_name(vm, y));
}

int f_sum(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *items;
    if (tpl_iter_list(vm, a[0], &items) < 0)
        return -1;
    tpl_value attr = tpl_given(a[1]) ? a[1] : tpl_v_none();
    tpl_value acc = tpl_given(a[2]) ? a[2] : tpl_v_int(0);
    if (acc.type == TPL_T_STR)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "sum() can't sum strings [use ''.join(seq) instead]");
    /* Fast path for numbers: no per-item allocation. */
    for (uint32_t i = 0; i < items->len; i++) {
        tpl_value it = items->items[i];
        if (attr.type != TPL_T_NONE && tpl_attr_get(vm, it, attr, tpl_v_unset(), &it) < 0)
            return -1;
        if (add_values(vm, acc, it, &acc) < 0)
            return -1;
    }
    *out = acc;
    return 0;
}

/* Python's round(x, ndigits) for floats: correctly rounded through the decimal representation
 * (ties to even on the exact binary value), like CPython's double_round. */
static double py_round_float(double x, int64_t nd)
{
    if (!isfinite(x) || x == 0)
        return x;
    if (nd > 323)
        return x;
    if (nd < -308)
        return 0.0 * x;
    char buf[720]; /* 309 integer digits + '.' + 323 decimals + sign */
    if (nd >= 0) {
        snprintf(buf, sizeof buf, "%.*f", (int)nd, x);
        return strtod(buf, NULL);
    }
    /* Negative ndigits: round to (exponent + 1 + nd) significant digits. */
    snprintf(buf, sizeof buf, "%.17e", x);
    const char *e = strchr(buf, 'e');
    int exp10 = e ? atoi(e + 1) : 0;
    int64_t sig = exp10 + 1 + nd;
    if (sig <= 0) {
        /* |x| < 10^-nd: the result is 0 or +-10^-nd (ties to even, i.e. to 0). */
        double p = pow(10.0, (double)-nd);
        double ax = fabs(x);
        if (sig == 0 && ax > p / 2)
            return copysign(p, x);
        return copysign(0.0, x);
    }
    snprintf(buf, sizeof buf, "%.*e", (int)(sig - 1), x);
    return strtod(buf, NULL);
}

/* Python's round(int, ndigits) for negative ndigits: ties to even. */
static int round_int(tpl_vm *vm, int64_t v, int64_t nd, int64_t *out)
{
    if (nd >= 0) {
        *out = v;
        return 0;
    }
    if (nd < -18) {
        *out = 0;
        return 0;
    }
    int64_t p = 1;
    for (int64_t k = 0; k < -nd; k++)
        p *= 10;
    int64_t q = v / p, r = v % p;
    if (r < 0) { r += p; q -= 1; } /* floor division */
    int64_t twice = r * 2; /* r < p <= 1e18, fits */
    if (r > p - r || (twice == p && (q & 1)))
        q += 1;
    int64_t res;
    if (__builtin_mul_overflow(q, p, &res))
        return tpl_vm_error(vm, TPL_ERR_TYPE, "integer overflow");
    *out = res;
    return 0;
}

int f_round(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value v = a[0];
    int64_t prec = 0;
    int method = 0; /* 0 common, 1 ceil, 2 floor */
    if (tpl_given(a[2])) {
        tpl_value m = a[2];
        if (m.type == TPL_T_STR && m.len == 6 && memcmp(m.u.s, "common", 6) == 0) method = 0;
        else if (m.type == TPL_T_STR && m.len == 4 && memcmp(m.u.s, "ceil", 4) == 0) method = 1;
        else if (m.type == TPL_T_STR && m.len == 5 && memcmp(m.u.s, "floor", 5) == 0) method = 2;
        else return tpl_vm_fail(vm, TPL_EK_FILTER_ARGUMENT, "method must be common, ceil or floor");
    }
    if (v.type == TPL_T_HOST && (tpl_hobj_numeric(v) & TPL_HOST_NUMBER)) {
        /* the host's own numbers (a Decimal): round(value, precision), or math.ceil/floor(value *
         * 10**precision) / 10**precision, by the host (Jinja2's do_round) */
        tpl_value p = tpl_given(a[1]) ? a[1] : tpl_v_int(0);
        if (method && p.type != TPL_T_INT && p.type != TPL_T_BOOL && tpl_arg_index_sat(vm, p, &prec) < 0)
            return -1;
        int h = tpl_hobj_arith(vm, method == 0 ? "round" : method == 1 ? "ceil" : "floor", v, p, out);
        if (h <= 0)
            return h;
    }
    if (method == 0 && a[1].type == TPL_T_NONE && (tpl_is_num(v) || v.type == TPL_T_BIGINT)) {
        /* round(value, None) is Python's round(value): an int (ties to even) */
        if (v.type != TPL_T_FLOAT) { *out = v.type == TPL_T_BOOL ? tpl_v_int(v.u.i) : v; return 0; }
        if (isnan(v.u.f)) return tpl_vm_error(vm, TPL_ERR_VALUE, "cannot convert float NaN to integer");
        bool ok;
        return float_to_int(vm, py_round_float(v.u.f, 0), out, &ok);
    }
    if (method != 0 && tpl_given(a[1]) && a[1].type == TPL_T_FLOAT && (tpl_is_num(v) || v.type == TPL_T_UNDEF)) {
        /* ceil/floor with a float precision: 10 ** precision is a float power (Python's math error
         * where it overflows), then math.ceil/floor(value * it) / it */
        double scale = pow(10.0, a[1].u.f);
        if (isinf(scale))
            return tpl_vm_fail(vm, TPL_EK_OVERFLOW, "(34, 'Numerical result out of range')");
        if (v.type == TPL_T_UNDEF)
            return tpl_undefined_error(vm, v);
        double y = (v.type == TPL_T_FLOAT ? v.u.f : (double)v.u.i) * scale;
        if (isnan(y))
            return tpl_vm_error(vm, TPL_ERR_VALUE, "cannot convert float NaN to integer");
        if (isinf(y))
            return tpl_vm_fail(vm, TPL_EK_OVERFLOW, "cannot convert float infinity to integer");
        double r = (method == 1 ? ceil(y) : floor(y)) + 0.0;
        if (scale == 0)
            return tpl_vm_fail(vm, TPL_EK_ZERO_DIVISION, "float division by zero");
        *out = tpl_v_float(r / scale);
        return 0;
    }
    if (tpl_given(a[1]) && tpl_arg_index_sat(vm, a[1], &prec) < 0)
        return -1;
    if (v.type == TPL_T_BIGINT || (v.type == TPL_T_INT && method == 0 && prec < 0 && prec >= -18 &&
                                   (v.u.i > INT64_MAX / 2 || v.u.i < INT64_MIN / 2))) {
        if (method == 0) { /* Python's round(int, n): exact, ties to even */
            if (prec >= 0) { *out = v.type == TPL_T_BOOL ? tpl_v_int(v.u.i) : v; return 0; }
            mpz_t z, p, q, r;
            tpl_big_get(z, v);
            mpz_inits(p, q, r, NULL);
            mpz_ui_pow_ui(p, 10, prec < -400000 ? 400000 : (unsigned long)-prec);
            mpz_fdiv_qr(q, r, z, p);
            mpz_mul_2exp(r, r, 1);
            int c = mpz_cmp(r, p);
            if (c > 0 || (c == 0 && mpz_odd_p(q))) mpz_add_ui(q, q, 1);
            mpz_mul(z, q, p);
            mpz_clears(p, q, r, NULL);
            return tpl_big_result(vm, z, out);
        }
        double d;
        if (!tpl_big_to_double(v, &d))
            return tpl_vm_fail(vm, TPL_EK_OVERFLOW, "int too large to convert to float");
        v = tpl_v_float(d);
    }
    if (!tpl_is_num(v) && method != 0 && v.type == TPL_T_UNDEF)
        return tpl_undefined_error(vm, v); /* (math.ceil(value * 10 ** precision): Undefined.__mul__ raises) */
    if (!tpl_is_num(v))
        return tpl_vm_error(vm, TPL_ERR_TYPE, method == 0 ? "type %s doesn't define __round__ method"
                                                           : "must be real number, not %s",
                            tpl_type_name(vm, v));
    if (method == 0) {
        if (v.type == TPL_T_FLOAT) {
            *out = tpl_v_float(py_round_float(v.u.f, prec));
            return 0;
        }
        int64_t r = 0;
        if (round_int(vm, v.u.i, prec, &r) < 0)
            return -1;
        *out = tpl_v_int(r);
        return 0;
    }
    /* math.ceil/floor(value * 10**precision) / 10**precision: always a float. */
    double x = v.type == TPL_T_FLOAT ? v.u.f : (double)v.u.i;
    double scale;
    if (prec >= 0) {
        char buf[32];
        snprintf(buf, sizeof buf, "1e%lld", (long long)(prec > 400 ? 400 : prec));
        scale = strtod(buf, NULL);
    } else {
        scale = pow(10.0, (double)prec);
    }
    double y = x * scale;
    if (isnan(y))
        return tpl_vm_error(vm, TPL_ERR_VALUE, "cannot convert float NaN to integer");
    if (isinf(y)) /* (math.ceil/floor of an infinity: OverflowError) */
        return tpl_vm_fail(vm, TPL_EK_OVERFLOW, "cannot convert float infinity to integer");
    double r = (method == 1 ? ceil(y) : floor(y)) + 0.0; /* math.ceil gives an int: no -0.0 */
    *out = tpl_v_float(r / scale);
    return 0;
}

/* ------------------------------------------------------------------ string filters */

int f_format(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    const tpl_list *args = a[1].u.list;
    const tpl_map *kw = a[2].u.map;
    if (args->len && kw->len)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "can't handle positional and keyword arguments at the same time");
    tpl_value fmt;
    if (tpl_to_str(vm, a[0], &fmt) < 0)
        return -1;
    tpl_value av = kw->len ? a[2] : a[1];
    if (!kw->len)
        av.flags = TPL_F_TUPLE;
    return tpl_str_mod(vm, fmt, av, out);
}

/* Jinja2's do_replace under autoescape: s is escaped when old is Markup (or new is and s is not);
 * then Markup's replace escapes new and returns Markup; a plain s is replaced as str. */
int f_replace_ae(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value b[4] = { a[0], a[1], a[2], a[3] };
    if (is_markup(b[1]) || (is_markup(b[2]) && !is_markup(b[0])))
        if (escape_value(vm, b[0], false, &b[0]) < 0)
            return -1;
    if (!is_markup(b[0]))
        return f_replace(vm, b, out);
    if (b[2].type == TPL_T_STR && !is_markup(b[2]) && escape_value(vm, b[2], false, &b[2]) < 0)
        return -1; /* MarkupSafe 3's replace escapes only the new string */
    if (f_replace(vm, b, out) < 0)
        return -1;
    out->flags = TPL_F_SAFE;
    return 0;
}

/* markupsafe's escape() of a string argument (other values pass: Markup's methods escape only
 * str arguments); a markup string stays as it is. */
static int markup_arg(tpl_vm *vm, tpl_value *v)
{
    if (v->type != TPL_T_STR || (v->flags & TPL_F_SAFE)) return 0;
    return escape_value(vm, *v, false, v);
}

/* A str method called on Markup (Jinja2's markupsafe.Markup, MarkupSafe 3.0): the methods Markup
 * overrides return Markup (split, rsplit, splitlines, partition, rpartition: a list/tuple of
 * Markup); replace escapes its new string, center/ljust/rjust their fill character, join every
 * item, format and format_map every field's text (m_str_format); the rest (find, startswith,
 * isdigit, ...) are str's own. a holds the bound arguments. */
int tpl_markup_method(tpl_vm *vm, int id, tpl_value *a, tpl_value *out)
{
    const tpl_builtin_info *bi = tpl_builtin(id);
    switch (id) {
    case TPL_B_STR_split: case TPL_B_STR_rsplit: case TPL_B_STR_splitlines: case TPL_B_STR_partition:
    case TPL_B_STR_rpartition: case TPL_B_STR_strip: case TPL_B_STR_lstrip: case TPL_B_STR_rstrip:
    case TPL_B_STR_upper: case TPL_B_STR_lower: case TPL_B_STR_title: case TPL_B_STR_capitalize:
    case TPL_B_STR_swapcase: case TPL_B_STR_zfill: case TPL_B_STR_removeprefix: case TPL_B_STR_removesuffix:
    case TPL_B_STR_casefold: case TPL_B_STR_translate:
        break;
    case TPL_B_STR_replace: case TPL_B_STR_ljust: case TPL_B_STR_rjust: case TPL_B_STR_center:
        if (markup_arg(vm, &a[2]) < 0) return -1;
        break;
    case TPL_B_STR_join: {
        tpl_list *src, *l;
        if (tpl_to_list(vm, a[1], &src) < 0) return -1;
        if (!(l = tpl_list_new(AR(vm), src->len))) return OOM();
        for (uint32_t i = 0; i < src->len; i++) { /* escape(item): any value becomes a string */
            l->items[i] = src->items[i];
            if (!is_markup(l->items[i]) && escape_value(vm, l->items[i], false, &l->items[i]) < 0)
                return -1;
        }
        l->len = src->len;
        a[1] = tpl_v_list(l);
        break;
    }
    case TPL_B_STR_format: case TPL_B_STR_format_map: /* EscapeFormatter (m_str_format) */
        break;
    default:
        return bi->fn(vm, a, out);
    }
    if (bi->fn(vm, a, out) < 0) return -1;
    if (out->type == TPL_T_STR) {
        out->flags |= TPL_F_SAFE;
    } else if (out->type == TPL_T_LIST) { /* a new list: its strings become Markup */
        tpl_list *l = out->u.list;
        for (uint32_t i = 0; i < l->len; i++)
            if (l->items[i].type == TPL_T_STR) l->items[i].flags |= TPL_F_SAFE;
    }
    return 0;
}

/* Jinja2's do_xmlattr returns Markup under autoescape (its keys and values are escaped already). */
int f_xmlattr_ae(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (f_xmlattr(vm, a, out) < 0)
        return -1;
    out->flags = TPL_F_SAFE;
    return 0;
}

/* Jinja2's do_urlize returns Markup under autoescape (it escapes the text itself). */
int f_urlize_ae(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (f_urlize(vm, a, out) < 0)
        return -1;
    out->flags = TPL_F_SAFE;
    return 0;
}

int f_replace(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value s, old, nw;
    if (tpl_to_str(vm, a[0], &s) < 0 || tpl_to_str(vm, a[1], &old) < 0 || tpl_to_str(vm, a[2], &nw) < 0)
        return -1;
    int64_t count = -1;
    if (tpl_given(a[3]) && a[3].type != TPL_T_NONE && tpl_arg_index(vm, a[3], &count) < 0)
        return -1;
    if (tpl_str_replace(vm, s, old, nw, count, out) < 0)
        return -1;
    out->flags = 0;
    return 0;
}

int f_trim(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value s;
    if (tpl_to_str(vm, a[0], &s) < 0)
        return -1;
    tpl_value c = a[1];
    if (!tpl_given(c) || c.type == TPL_T_NONE)
        *out = tpl_py_strip(s, 3, NULL, 0);
    else if (c.type == TPL_T_STR)
        *out = tpl_py_strip(s, 3, c.u.s, c.len);
    else
        return tpl_vm_error(vm, TPL_ERR_TYPE, "strip arg must be None or str");
    out->flags = s.flags & TPL_F_SAFE;
    return 0;
}

int f_wordcount(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value s;
    if (tpl_to_str(vm, a[0], &s) < 0)
        return -1;
    int64_t n = 0;
    bool in = false;
    size_t i = 0;
    while (i < s.len) {
        uint32_t c;
        unsigned char ch = (unsigned char)s.u.s[i];
        if (ch < 0x80) { c = ch; i++; }
        else c = tpl_utf8_next(s.u.s, s.len, &i);
        bool w = tpl_uc_isword(c);
        if (w && !in)
            n++;
        in = w;
    }
    *out = tpl_v_int(n);
    return 0;
}

int f_indent(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value s = a[0];
    if (s.type == TPL_T_UNDEF)
        return tpl_undefined_error(vm, s);
    tpl_value ind;
    tpl_value w = tpl_given(a[1]) ? a[1] : tpl_v_int(4);
    if (w.type == TPL_T_STR) {
        ind = w;
    } else if (w.type == TPL_T_BIGINT) { /* " " * width */
        return tpl_vm_fail(vm, TPL_EK_OVERFLOW, "cannot fit 'int' into an index-sized integer");
    } else if (w.type == TPL_T_INT || w.type == TPL_T_BOOL) {
        int64_t k = w.u.i < 0 ? 0 : w.u.i;
        if (k > 100000000)
            return tpl_vm_error(vm, TPL_ERR_LIMIT, "indent width too large");
        char *p = tpl_arena_alloc(AR(vm), (size_t)k + 1);
        if (!p)
            return OOM();
        memset(p, ' ', (size_t)k);
        p[k] = 0;
        ind = tpl_v_str(p, (size_t)k);
    } else if (w.type == TPL_T_UNDEF) {
        return tpl_undefined_error(vm, w); /* (" " * Undefined: Undefined.__rmul__ raises) */
    } else {
        return tpl_vm_error(vm, TPL_ERR_TYPE, "can't multiply sequence by non-int of type '%s'",
                            tpl_type_name(vm, w));
    }
    /* (do_indent makes the indention first, then `s += "\n"`: a list extends, and has no
     * splitlines; a tuple or another value cannot add a str) */
    if (s.type == TPL_T_LIST && !s.aux && !(s.flags & TPL_F_TUPLE))
        return tpl_vm_fail(vm, TPL_EK_ATTRIBUTE, "'list' object has no attribute 'splitlines'");
    if (s.type == TPL_T_LIST && !s.aux)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "can only concatenate tuple (not \"str\") to tuple");
    if (s.type != TPL_T_STR)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported operand type(s) for +=: '%s' and 'str'",
                            tpl_type_name(vm, s));
    int first = tpl_arg_truthy(vm, a[2], false);
    if (first < 0)
        return -1;
    int blank = tpl_arg_truthy(vm, a[3], false);
    if (blank < 0)
        return -1;
    /* s += "\n"; lines = s.splitlines() */
    tpl_arena *ar = AR(vm);
    char *t = tpl_arena_alloc(ar, (size_t)s.len + 2);
    if (!t)
        return OOM();
    memcpy(t, s.u.s, s.len);
    t[s.len] = '\n';
    t[s.len + 1] = 0;
    tpl_list *lines;
    if (tpl_splitlines(vm, tpl_v_str(t, (size_t)s.len + 1), false, &lines) < 0)
        return -1;
    tpl_sb b;
    tpl_sb_init(&b, ar);
    if (first)
        tpl_sb_put(&b, ind.u.s, ind.len);
    for (uint32_t i = 0; i < lines->len; i++) {
        tpl_value line = lines->items[i];
        if (i) {
            tpl_sb_putc(&b, '\n');
            if (blank || line.len)
                tpl_sb_put(&b, ind.u.s, ind.len);
        }
        tpl_sb_put(&b, line.u.s, line.len);
    }
    if (sb_done(vm, &b, out) < 0)
        return -1;
    out->flags = s.flags & TPL_F_SAFE;
    return 0;
}

/* do_truncate's assertion on a float: "expected WANT, got 1.5" (Python's repr of the float). */
static int truncate_float_error(tpl_vm *vm, const char *want, double d)
{
    tpl_sb b;
    tpl_sb_init(&b, AR(vm));
    tpl_py_float(&b, d);
    return tpl_vm_fail(vm, TPL_EK_ASSERT, "expected %s, got %.*s", want, (int)b.len, b.p ? b.p : "");
}

int f_truncate(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value s = a[0];
    int64_t length = 255, leeway = 5;
    /* do_truncate compares length and leeway with lengths only until it cuts: floats pass there
     * (truncate(50.5), leeway=2.5), and a float length fails the cut (s[:length - len(end)]) */
    double lf = 255, lw = 5;
    bool length_float = tpl_given(a[1]) && a[1].type == TPL_T_FLOAT;
    if (length_float) {
        lf = a[1].u.f;
        length = isfinite(lf) && fabs(lf) < 9e18 ? (int64_t)lf : 0;
    } else if (tpl_given(a[1])) {
        if (tpl_arg_index_sat(vm, a[1], &length) < 0)
            return -1;
        lf = (double)length;
    }
    int kill = tpl_arg_truthy(vm, a[2], false);
    if (kill < 0)
        return -1;
    tpl_value end = tpl_v_str("...", 3);
    int64_t elen = 3;
    if (tpl_given(a[3])) {
        end = a[3];
        if (end.type == TPL_T_STR) elen = (int64_t)ulen(end);
        else if (end.type == TPL_T_LIST && !tpl_is_iter(end)) elen = end.u.list->len; /* (len() of a list: it fails */
        else if (end.type == TPL_T_MAP && !(end.flags & TPL_F_NS)) elen = end.u.map->len; /* only at the cut) */
        else return tpl_vm_error(vm, TPL_ERR_TYPE, "object of type '%s' has no len()", tpl_type_name(vm, end));
    }
    if (tpl_given(a[4]) && a[4].type == TPL_T_FLOAT) {
        lw = a[4].u.f;
        if (!(lw >= 0)) return truncate_float_error(vm, "leeway >= 0", lw);
    } else if (tpl_given(a[4]) && a[4].type != TPL_T_NONE) {
        if (tpl_arg_index_sat(vm, a[4], &leeway) < 0)
            return -1;
        lw = (double)leeway;
    }
    if (length_float ? !(lf >= (double)elen) : length < elen) {
        if (length_float)
        {
            char want[40];
            snprintf(want, sizeof want, "length >= %lld", (long long)elen);
            return truncate_float_error(vm, want, lf);
        }
        return tpl_vm_fail(vm, TPL_EK_ASSERT, "expected length >= %lld, got %lld", (long long)elen, (long long)length);
    }
    if (lw < 0)
        return tpl_vm_fail(vm, TPL_EK_ASSERT, "expected leeway >= 0, got %lld", (long long)leeway);
    if (s.type == TPL_T_UNDEF) {
        if (tpl_vm_strict_undef(vm, s))
            return tpl_undefined_error(vm, s);
        *out = s;
        return 0;
    }
    if (s.type != TPL_T_STR) {
        /* Jinja2 only needs len(s) to decide that s is short enough to return as it is. */
        int64_t n = -1;
        if (s.type == TPL_T_LIST && !tpl_is_iter(s)) n = s.u.list->len; /* (an iterator has no len()) */
        else if (s.type == TPL_T_MAP && !(s.flags & TPL_F_NS)) n = s.u.map->len;
        if (n < 0)
            return tpl_vm_error(vm, TPL_ERR_TYPE, "object of type '%s' has no len()", tpl_type_name(vm, s));
        if ((double)n <= lf + lw) {
            *out = s;
            return 0;
        }
        if (length_float)
            return tpl_vm_error(vm, TPL_ERR_TYPE, "slice indices must be integers or None or have an __index__ method");
        return tpl_vm_error(vm, TPL_ERR_TYPE, "can only concatenate %s (not \"str\") to %s",
                            tpl_type_name(vm, s), tpl_type_name(vm, s));
    }
    int64_t slen = (int64_t)ulen(s);
    if ((double)slen <= lf + lw) {
        *out = s;
        return 0;
    }
    if (length_float)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "slice indices must be integers or None or have an __index__ method");
    if (end.type != TPL_T_STR)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "can only concatenate str (not \"%s\") to str", tpl_type_name(vm, end));
    size_t cut = tpl_utf8_offset(s.u.s, s.len, (size_t)(length - elen));
    size_t keep = cut;
    if (!kill) {
        /* s[:cut].rsplit(" ", 1)[0] */
        const char *sp = NULL;
        for (size_t i = cut; i-- > 0;)
            if (s.u.s[i] == ' ') { sp = s.u.s + i; break; }
        if (sp)
            keep = (size_t)(sp - s.u.s);
    }
    tpl_sb b;
    tpl_sb_init(&b, AR(vm));
    tpl_sb_put(&b, s.u.s, keep);
    tpl_sb_put(&b, end.u.s, end.len);
    if (sb_done(vm, &b, out) < 0)
        return -1;
    out->flags = s.flags & TPL_F_SAFE;
    return 0;
}

/* urllib.parse.quote: unreserved characters stay, the rest is %XX-escaped (UTF-8 bytes). */
static void url_quote(tpl_sb *b, const char *s, size_t n, bool for_qs)
{
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
            c == '.' || c == '-' || c == '~' || (c == '/' && !for_qs)) {
            tpl_sb_putc(b, (char)c);
        } else if (c == ' ' && for_qs) {
            tpl_sb_putc(b, '+');
        } else {
            char e[3] = { '%', hex[c >> 4], hex[c & 15] };
            tpl_sb_put(b, e, 3);
        }
    }
}

static int url_quote_value(tpl_vm *vm, tpl_sb *b, tpl_value v, bool for_qs)
{
    tpl_value s;
    if (tpl_to_str(vm, v, &s) < 0)
        return -1;
    url_quote(b, s.u.s, s.len, for_qs);
    return 0;
}

int f_urlencode(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value v = a[0];
    tpl_sb b;
    tpl_sb_init(&b, AR(vm));
    if (v.type == TPL_T_STR || !(v.type == TPL_T_LIST || v.type == TPL_T_MAP || v.type == TPL_T_UNDEF ||
                                 v.type == TPL_T_LOOP)) {
        if (url_quote_value(vm, &b, v, false) < 0)
            return -1;
        return sb_done(vm, &b, out);
    }
    if (v.type == TPL_T_MAP && !(v.flags & TPL_F_NS)) {
        for (uint32_t i = 0; i < v.u.map->len; i++) {
            if (i)
                tpl_sb_putc(&b, '&');
            if (url_quote_value(vm, &b, v.u.map->e[i].key, true) < 0)
                return -1;
            tpl_sb_putc(&b, '=');
            if (url_quote_value(vm, &b, v.u.map->e[i].val, true) < 0)
                return -1;
        }
        return sb_done(vm, &b, out);
    }
    tpl_list *items;
    if (tpl_iter_list(vm, v, &items) < 0)
        return -1;
    for (uint32_t i = 0; i < items->len; i++) {
        tpl_value it = items->items[i];
        tpl_list *pair;
        if (it.type == TPL_T_LIST) {
            pair = it.u.list;
        } else if (it.type == TPL_T_STR || it.type == TPL_T_MAP) {
            if (tpl_to_list(vm, it, &pair) < 0)
                return -1;
        } else {
            return tpl_vm_error(vm, TPL_ERR_TYPE, "cannot unpack non-iterable %s object", tpl_type_name(vm, it));
        }
        if (pair->len != 2)
            return tpl_vm_error(vm, TPL_ERR_VALUE, pair->len < 2 ? "not enough values to unpack (expected 2, got %u)"
                                                                  : "too many values to unpack (expected 2, got %u)",
                                pair->len);
        if (i)
            tpl_sb_putc(&b, '&');
        if (url_quote_value(vm, &b, pair->items[0], true) < 0)
            return -1;
        tpl_sb_putc(&b, '=');
        if (url_quote_value(vm, &b, pair->items[1], true) < 0)
            return -1;
    }
    return sb_done(vm, &b, out);
}

int f_xmlattr(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value d = a[0];
    if (d.type == TPL_T_UNDEF)
        return tpl_undefined_error(vm, d);
    if (d.type != TPL_T_MAP || (d.flags & TPL_F_NS))
        return tpl_vm_fail(vm, TPL_EK_ATTRIBUTE, "'%s' object has no attribute 'items'", tpl_type_name(vm, d));
    int autospace = tpl_arg_truthy(vm, a[1], true);
    if (autospace < 0)
        return -1;
    tpl_sb b;
    tpl_sb_init(&b, AR(vm));
    bool any = false;
    for (uint32_t i = 0; i < d.u.map->len; i++) {
        tpl_value k = d.u.map->e[i].key, v = d.u.map->e[i].val;
        if (v.type == TPL_T_NONE || v.type == TPL_T_UNDEF)
            continue;
        if (k.type != TPL_T_STR)
            return tpl_vm_error(vm, TPL_ERR_TYPE, "expected string or bytes-like object, got '%s'",
                                tpl_type_name(vm, k));
        for (uint32_t j = 0; j < k.len; j++) {
            char c = k.u.s[j];
            if (c == ' ' || (c >= '\t' && c <= '\r') || c == '/' || c == '>' || c == '=') {
                tpl_sb rb;
                tpl_sb_init(&rb, AR(vm));
                tpl_py_repr(&rb, k);
                return tpl_vm_error(vm, TPL_ERR_VALUE, "Invalid character in attribute name: %.*s", (int)rb.len,
                                    rb.p ? rb.p : "");
            }
        }
        tpl_value ek, ev;
        if (escape_value(vm, k, false, &ek) < 0 || escape_value(vm, v, false, &ev) < 0)
            return -1;
        if (any || autospace)
            tpl_sb_putc(&b, ' ');
        any = true;
        tpl_sb_put(&b, ek.u.s, ek.len);
        tpl_sb_put(&b, "=\"", 2);
        tpl_sb_put(&b, ev.u.s, ev.len);
        tpl_sb_putc(&b, '"');
    }
    return sb_done(vm, &b, out);
}

/* ------------------------------------------------------------------ striptags */

static const struct { const char *name; const char *text; } html_entities[] = {
    {"AElig", "\xc3\x86"},
    {"AElig;", "\xc3\x86"},
    {"Aacute", "\xc3\x81"},
    {"Aacute;", "\xc3\x81"},
    {"Acirc", "\xc3\x82"},
    {"Acirc;", "\xc3\x82"},
    {"Agrave", "\xc3\x80"},
    {"Agrave;", "\xc3\x80"},
    {"Alpha;", "\xce\x91"},
    {"Aring", "\xc3\x85"},
    {"Aring;", "\xc3\x85"},
    {"Atilde", "\xc3\x83"},
    {"Atilde;", "\xc3\x83"},
    {"Auml", "\xc3\x84"},
    {"Auml;", "\xc3\x84"},
    {"Beta;", "\xce\x92"},
    {"Ccedil", "\xc3\x87"},
    {"Ccedil;", "\xc3\x87"},
    {"Chi;", "\xce\xa7"},
    {"Dagger;", "\xe2\x80\xa1"},
    {"Delta;", "\xce\x94"},
    {"ETH", "\xc3\x90"},
    {"ETH;", "\xc3\x90"},
    {"Eacute", "\xc3\x89"},
    {"Eacute;", "\xc3\x89"},
    {"Ecirc", "\xc3\x8a"},
    {"Ecirc;", "\xc3\x8a"},
    {"Egrave", "\xc3\x88"},
    {"Egrave;", "\xc3\x88"},
    {"Epsilon;", "\xce\x95"},
    {"Eta;", "\xce\x97"},
    {"Euml", "\xc3\x8b"},
    {"Euml;", "\xc3\x8b"},
    {"Gamma;", "\xce\x93"},
    {"Iacute", "\xc3\x8d"},
    {"Iacute;", "\xc3\x8d"},
    {"Icirc", "\xc3\x8e"},
    {"Icirc;", "\xc3\x8e"},
    {"Igrave", "\xc3\x8c"},
    {"Igrave;", "\xc3\x8c"},
    {"Iota;", "\xce\x99"},
    {"Iuml", "\xc3\x8f"},
    {"Iuml;", "\xc3\x8f"},
    {"Kappa;", "\xce\x9a"},
    {"Lambda;", "\xce\x9b"},
    {"Mu;", "\xce\x9c"},
    {"Ntilde", "\xc3\x91"},
    {"Ntilde;", "\xc3\x91"},
    {"Nu;", "\xce\x9d"},
    {"OElig;", "\xc5\x92"},
    {"Oacute", "\xc3\x93"},
    {"Oacute;", "\xc3\x93"},
    {"Ocirc", "\xc3\x94"},
    {"Ocirc;", "\xc3\x94"},
    {"Ograve", "\xc3\x92"},
    {"Ograve;", "\xc3\x92"},
    {"Omega;", "\xce\xa9"},
    {"Omicron;", "\xce\x9f"},
    {"Oslash", "\xc3\x98"},
    {"Oslash;", "\xc3\x98"},
    {"Otilde", "\xc3\x95"},
    {"Otilde;", "\xc3\x95"},
    {"Ouml", "\xc3\x96"},
    {"Ouml;", "\xc3\x96"},
    {"Phi;", "\xce\xa6"},
    {"Pi;", "\xce\xa0"},
    {"Prime;", "\xe2\x80\xb3"},
    {"Psi;", "\xce\xa8"},
    {"Rho;", "\xce\xa1"},
    {"Scaron;", "\xc5\xa0"},
    {"Sigma;", "\xce\xa3"},
    {"THORN", "\xc3\x9e"},
    {"THORN;", "\xc3\x9e"},
    {"Tau;", "\xce\xa4"},
    {"Theta;", "\xce\x98"},
    {"Uacute", "\xc3\x9a"},
    {"Uacute;", "\xc3\x9a"},
    {"Ucirc", "\xc3\x9b"},
    {"Ucirc;", "\xc3\x9b"},
    {"Ugrave", "\xc3\x99"},
    {"Ugrave;", "\xc3\x99"},
    {"Upsilon;", "\xce\xa5"},
    {"Uuml", "\xc3\x9c"},
    {"Uuml;", "\xc3\x9c"},
    {"Xi;", "\xce\x9e"},
    {"Yacute", "\xc3\x9d"},
    {"Yacute;", "\xc3\x9d"},
    {"Yuml;", "\xc5\xb8"},
    {"Zeta;", "\xce\x96"},
    {"aacute", "\xc3\xa1"},
    {"aacute;", "\xc3\xa1"},
    {"acirc", "\xc3\xa2"},
    {"acirc;", "\xc3\xa2"},
    {"acute", "\xc2\xb4"},
    {"acute;", "\xc2\xb4"},
    {"aelig", "\xc3\xa6"},
    {"aelig;", "\xc3\xa6"},
    {"agrave", "\xc3\xa0"},
    {"agrave;", "\xc3\xa0"},
    {"alefsym;", "\xe2\x84\xb5"},
    {"alpha;", "\xce\xb1"},
    {"amp", "\x26"},
    {"amp;", "\x26"},
    {"and;", "\xe2\x88\xa7"},
    {"ang;", "\xe2\x88\xa0"},
    {"apos;", "\x27"},
    {"aring", "\xc3\xa5"},
    {"aring;", "\xc3\xa5"},
    {"asymp;", "\xe2\x89\x88"},
    {"atilde", "\xc3\xa3"},
    {"atilde;", "\xc3\xa3"},
    {"auml", "\xc3\xa4"},
    {"auml;", "\xc3\xa4"},
    {"bdquo;", "\xe2\x80\x9e"},
    {"beta;", "\xce\xb2"},
    {"brvbar", "\xc2\xa6"},
    {"brvbar;", "\xc2\xa6"},
    {"bull;", "\xe2\x80\xa2"},
    {"cap;", "\xe2\x88\xa9"},
    {"ccedil", "\xc3\xa7"},
    {"ccedil;", "\xc3\xa7"},
    {"cedil", "\xc2\xb8"},
    {"cedil;", "\xc2\xb8"},
    {"cent", "\xc2\xa2"},
    {"cent;", "\xc2\xa2"},
    {"chi;", "\xcf\x87"},
    {"circ;", "\xcb\x86"},
    {"clubs;", "\xe2\x99\xa3"},
    {"cong;", "\xe2\x89\x85"},
    {"copy", "\xc2\xa9"},
    {"copy;", "\xc2\xa9"},
    {"crarr;", "\xe2\x86\xb5"},
    {"cup;", "\xe2\x88\xaa"},
    {"curren", "\xc2\xa4"},
    {"curren;", "\xc2\xa4"},
    {"dArr;", "\xe2\x87\x93"},
    {"dagger;", "\xe2\x80\xa0"},
    {"darr;", "\xe2\x86\x93"},
    {"deg", "\xc2\xb0"},
    {"deg;", "\xc2\xb0"},
    {"delta;", "\xce\xb4"},
    {"diams;", "\xe2\x99\xa6"},
    {"divide", "\xc3\xb7"},
    {"divide;", "\xc3\xb7"},
    {"eacute", "\xc3\xa9"},
    {"eacute;", "\xc3\xa9"},
    {"ecirc", "\xc3\xaa"},
    {"ecirc;", "\xc3\xaa"},
    {"egrave", "\xc3\xa8"},
    {"egrave;", "\xc3\xa8"},
    {"empty;", "\xe2\x88\x85"},
    {"emsp;", "\xe2\x80\x83"},
    {"ensp;", "\xe2\x80\x82"},
    {"epsilon;", "\xce\xb5"},
    {"equiv;", "\xe2\x89\xa1"},
    {"eta;", "\xce\xb7"},
    {"eth", "\xc3\xb0"},
    {"eth;", "\xc3\xb0"},
    {"euml", "\xc3\xab"},
    {"euml;", "\xc3\xab"},
    {"euro;", "\xe2\x82\xac"},
    {"exist;", "\xe2\x88\x83"},
    {"fnof;", "\xc6\x92"},
    {"forall;", "\xe2\x88\x80"},
    {"frac12", "\xc2\xbd"},
    {"frac12;", "\xc2\xbd"},
    {"frac14", "\xc2\xbc"},
    {"frac14;", "\xc2\xbc"},
    {"frac34", "\xc2\xbe"},
    {"frac34;", "\xc2\xbe"},
    {"frasl;", "\xe2\x81\x84"},
    {"gamma;", "\xce\xb3"},
    {"ge;", "\xe2\x89\xa5"},
    {"gt", "\x3e"},
    {"gt;", "\x3e"},
    {"hArr;", "\xe2\x87\x94"},
    {"harr;", "\xe2\x86\x94"},
    {"hearts;", "\xe2\x99\xa5"},
    {"hellip;", "\xe2\x80\xa6"},
    {"iacute", "\xc3\xad"},
    {"iacute;", "\xc3\xad"},
    {"icirc", "\xc3\xae"},
    {"icirc;", "\xc3\xae"},
    {"iexcl", "\xc2\xa1"},
    {"iexcl;", "\xc2\xa1"},
    {"igrave", "\xc3\xac"},
    {"igrave;", "\xc3\xac"},
    {"image;", "\xe2\x84\x91"},
    {"infin;", "\xe2\x88\x9e"},
    {"int;", "\xe2\x88\xab"},
    {"iota;", "\xce\xb9"},
    {"iquest", "\xc2\xbf"},
    {"iquest;", "\xc2\xbf"},
    {"isin;", "\xe2\x88\x88"},
    {"iuml", "\xc3\xaf"},
    {"iuml;", "\xc3\xaf"},
    {"kappa;", "\xce\xba"},
    {"lArr;", "\xe2\x87\x90"},
    {"lambda;", "\xce\xbb"},
    {"lang;", "\xe2\x9f\xa8"},
    {"laquo", "\xc2\xab"},
    {"laquo;", "\xc2\xab"},
    {"larr;", "\xe2\x86\x90"},
    {"lceil;", "\xe2\x8c\x88"},
    {"ldquo;", "\xe2\x80\x9c"},
    {"le;", "\xe2\x89\xa4"},
    {"lfloor;", "\xe2\x8c\x8a"},
    {"lowast;", "\xe2\x88\x97"},
    {"loz;", "\xe2\x97\x8a"},
    {"lrm;", "\xe2\x80\x8e"},
    {"lsaquo;", "\xe2\x80\xb9"},
    {"lsquo;", "\xe2\x80\x98"},
    {"lt", "\x3c"},
    {"lt;", "\x3c"},
    {"macr", "\xc2\xaf"},
    {"macr;", "\xc2\xaf"},
    {"mdash;", "\xe2\x80\x94"},
    {"micro", "\xc2\xb5"},
    {"micro;", "\xc2\xb5"},
    {"middot", "\xc2\xb7"},
    {"middot;", "\xc2\xb7"},
    {"minus;", "\xe2\x88\x92"},
    {"mu;", "\xce\xbc"},
    {"nabla;", "\xe2\x88\x87"},
    {"nbsp", "\xc2\xa0"},
    {"nbsp;", "\xc2\xa0"},
    {"ndash;", "\xe2\x80\x93"},
    {"ne;", "\xe2\x89\xa0"},
    {"ni;", "\xe2\x88\x8b"},
    {"not", "\xc2\xac"},
    {"not;", "\xc2\xac"},
    {"notin;", "\xe2\x88\x89"},
    {"nsub;", "\xe2\x8a\x84"},
    {"ntilde", "\xc3\xb1"},
    {"ntilde;", "\xc3\xb1"},
    {"nu;", "\xce\xbd"},
    {"oacute", "\xc3\xb3"},
    {"oacute;", "\xc3\xb3"},
    {"ocirc", "\xc3\xb4"},
    {"ocirc;", "\xc3\xb4"},
    {"oelig;", "\xc5\x93"},
    {"ograve", "\xc3\xb2"},
    {"ograve;", "\xc3\xb2"},
    {"oline;", "\xe2\x80\xbe"},
    {"omega;", "\xcf\x89"},
    {"omicron;", "\xce\xbf"},
    {"oplus;", "\xe2\x8a\x95"},
    {"or;", "\xe2\x88\xa8"},
    {"ordf", "\xc2\xaa"},
    {"ordf;", "\xc2\xaa"},
    {"ordm", "\xc2\xba"},
    {"ordm;", "\xc2\xba"},
    {"oslash", "\xc3\xb8"},
    {"oslash;", "\xc3\xb8"},
    {"otilde", "\xc3\xb5"},
    {"otilde;", "\xc3\xb5"},
    {"otimes;", "\xe2\x8a\x97"},
    {"ouml", "\xc3\xb6"},
    {"ouml;", "\xc3\xb6"},
    {"para", "\xc2\xb6"},
    {"para;", "\xc2\xb6"},
    {"part;", "\xe2\x88\x82"},
    {"permil;", "\xe2\x80\xb0"},
    {"perp;", "\xe2\x8a\xa5"},
    {"phi;", "\xcf\x86"},
    {"pi;", "\xcf\x80"},
    {"piv;", "\xcf\x96"},
    {"plusmn", "\xc2\xb1"},
    {"plusmn;", "\xc2\xb1"},
    {"pound", "\xc2\xa3"},
    {"pound;", "\xc2\xa3"},
    {"prime;", "\xe2\x80\xb2"},
    {"prod;", "\xe2\x88\x8f"},
    {"prop;", "\xe2\x88\x9d"},
    {"psi;", "\xcf\x88"},
    {"quot", "\x22"},
    {"quot;", "\x22"},
    {"rArr;", "\xe2\x87\x92"},
    {"radic;", "\xe2\x88\x9a"},
    {"rang;", "\xe2\x9f\xa9"},
    {"raquo", "\xc2\xbb"},
    {"raquo;", "\xc2\xbb"},
    {"rarr;", "\xe2\x86\x92"},
    {"rceil;", "\xe2\x8c\x89"},
    {"rdquo;", "\xe2\x80\x9d"},
    {"real;", "\xe2\x84\x9c"},
    {"reg", "\xc2\xae"},
    {"reg;", "\xc2\xae"},
    {"rfloor;", "\xe2\x8c\x8b"},
    {"rho;", "\xcf\x81"},
    {"rlm;", "\xe2\x80\x8f"},
    {"rsaquo;", "\xe2\x80\xba"},
    {"rsquo;", "\xe2\x80\x99"},
    {"sbquo;", "\xe2\x80\x9a"},
    {"scaron;", "\xc5\xa1"},
    {"sdot;", "\xe2\x8b\x85"},
    {"sect", "\xc2\xa7"},
    {"sect;", "\xc2\xa7"},
    {"shy", "\xc2\xad"},
    {"shy;", "\xc2\xad"},
    {"sigma;", "\xcf\x83"},
    {"sigmaf;", "\xcf\x82"},
    {"sim;", "\xe2\x88\xbc"},
    {"spades;", "\xe2\x99\xa0"},
    {"sub;", "\xe2\x8a\x82"},
    {"sube;", "\xe2\x8a\x86"},
    {"sum;", "\xe2\x88\x91"},
    {"sup1", "\xc2\xb9"},
    {"sup1;", "\xc2\xb9"},
    {"sup2", "\xc2\xb2"},
    {"sup2;", "\xc2\xb2"},
    {"sup3", "\xc2\xb3"},
    {"sup3;", "\xc2\xb3"},
    {"sup;", "\xe2\x8a\x83"},
    {"supe;", "\xe2\x8a\x87"},
    {"szlig", "\xc3\x9f"},
    {"szlig;", "\xc3\x9f"},
    {"tau;", "\xcf\x84"},
    {"there4;", "\xe2\x88\xb4"},
    {"theta;", "\xce\xb8"},
    {"thetasym;", "\xcf\x91"},
    {"thinsp;", "\xe2\x80\x89"},
    {"thorn", "\xc3\xbe"},
    {"thorn;", "\xc3\xbe"},
    {"tilde;", "\xcb\x9c"},
    {"times", "\xc3\x97"},
    {"times;", "\xc3\x97"},
    {"trade;", "\xe2\x84\xa2"},
    {"uArr;", "\xe2\x87\x91"},
    {"uacute", "\xc3\xba"},
    {"uacute;", "\xc3\xba"},
    {"uarr;", "\xe2\x86\x91"},
    {"ucirc", "\xc3\xbb"},
    {"ucirc;", "\xc3\xbb"},
    {"ugrave", "\xc3\xb9"},
    {"ugrave;", "\xc3\xb9"},
    {"uml", "\xc2\xa8"},
    {"uml;", "\xc2\xa8"},
    {"upsih;", "\xcf\x92"},
    {"upsilon;", "\xcf\x85"},
    {"uuml", "\xc3\xbc"},
    {"uuml;", "\xc3\xbc"},
    {"weierp;", "\xe2\x84\x98"},
    {"xi;", "\xce\xbe"},
    {"yacute", "\xc3\xbd"},
    {"yacute;", "\xc3\xbd"},
    {"yen", "\xc2\xa5"},
    {"yen;", "\xc2\xa5"},
    {"yuml", "\xc3\xbf"},
    {"yuml;", "\xc3\xbf"},
    {"zeta;", "\xce\xb6"},
    {"zwj;", "\xe2\x80\x8d"},
    {"zwnj;", "\xe2\x80\x8c"}
};

static const char *entity_lookup(const char *name, size_t n)
{
    size_t lo = 0, hi = sizeof html_entities / sizeof html_entities[0];
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const char *e = html_entities[mid].name;
        size_t el = strlen(e);
        size_t m = el < n ? el : n;
        int c = memcmp(e, name, m);
        if (c == 0)
            c = el < n ? -1 : el > n ? 1 : 0;
        if (c == 0)
            return html_entities[mid].text;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static bool invalid_codepoint(uint32_t c)
{
    return (c >= 0x1 && c <= 0x8) || c == 0xB || (c >= 0xE && c <= 0x1F) || (c >= 0x7F && c <= 0x9F) ||
           (c >= 0xFDD0 && c <= 0xFDEF) || (c & 0xFFFE) == 0xFFFE;
}

/* html.unescape (Python): numeric references with the HTML5 replacement rules, and named
 * references from the HTML 4 set (with and without ';', longest prefix match). */
static void html_unescape(tpl_sb *b, const char *s, size_t n)
{
    static const uint16_t cp1252[32] = {
        0x20AC, 0x81, 0x201A, 0x192, 0x201E, 0x2026, 0x2020, 0x2021, 0x2C6, 0x2030, 0x160, 0x2039,
        0x152, 0x8D, 0x17D, 0x8F, 0x90, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014,
        0x2DC, 0x2122, 0x161, 0x203A, 0x153, 0x9D, 0x17E, 0x178,
    };
    size_t i = 0, run = 0;
    while (i < n) {
        const char *amp = memchr(s + i, '&', n - i);
        if (!amp)
            break;
        size_t at = (size_t)(amp - s), j = at + 1;
        if (j < n && s[j] == '#') {
            size_t k = j + 1;
            bool hex = k < n && (s[k] == 'x' || s[k] == 'X');
            if (hex) k++;
            size_t ds = k;
            uint64_t num = 0;
            while (k < n && (hex ? ((s[k] >= '0' && s[k] <= '9') || ((s[k] | 32) >= 'a' && (s[k] | 32) <= 'f'))
                                 : (s[k] >= '0' && s[k] <= '9'))) {
                int d = s[k] <= '9' ? s[k] - '0' : (s[k] | 32) - 'a' + 10;
                if (num < 0x1000000)
                    num = num * (hex ? 16 : 10) + (uint64_t)d;
                k++;
            }
            if (k == ds) {
                i = at + 1;
                continue;
            }
            if (k < n && s[k] == ';')
                k++;
            tpl_sb_put(b, s + run, at - run);
            if (num == 0) tpl_sb_put_cp(b, 0xFFFD);
            else if (num == 0x0D) tpl_sb_putc(b, '\r');
            else if (num >= 0x80 && num <= 0x9F) tpl_sb_put_cp(b, cp1252[num - 0x80]);
            else if ((num >= 0xD800 && num <= 0xDFFF) || num > 0x10FFFF) tpl_sb_put_cp(b, 0xFFFD);
            else if (!invalid_codepoint((uint32_t)num)) tpl_sb_put_cp(b, (uint32_t)num);
            i = run = k;
            continue;
        }
        /* [^\t\n\f <&#;]{1,32};? */
        size_t k = j;
        while (k < n && k - j < 32 && s[k] != '\t' && s[k] != '\n' && s[k] != '\f' && s[k] != ' ' &&
               s[k] != '<' && s[k] != '&' && s[k] != '#' && s[k] != ';')
            k++;
        if (k == j) {
            i = at + 1;
            continue;
        }
        if (k < n && s[k] == ';')
            k++;
        const char *rep = entity_lookup(s + j, k - j);
        size_t used = k - j;
        if (!rep) {
            for (size_t x = k - j - 1; x > 1; x--) {
                rep = entity_lookup(s + j, x);
                if (rep) {
                    used = x;
                    break;
                }
            }
        }
        if (rep) {
            tpl_sb_put(b, s + run, at - run);
            tpl_sb_puts(b, rep);
            run = j + used;
        }
        i = k;
    }
    tpl_sb_put(b, s + run, n - run);
}

int f_striptags(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value v;
    if (tpl_to_str(vm, a[0], &v) < 0)
        return -1;
    const char *s = v.u.s;
    size_t n = v.len;
    tpl_arena *ar = AR(vm);
    /* 1. remove comments: each "<!--" up to the next "-->" after it (stop at an unclosed one) */
    tpl_sb c1;
    tpl_sb_init(&c1, ar);
    size_t i = 0;
    for (;;) {
        const char *st = NULL;
        for (size_t k = i; k + 4 <= n; k++)
            if (s[k] == '<' && memcmp(s + k, "<!--", 4) == 0) { st = s + k; break; }
        if (!st)
            break;
        size_t at = (size_t)(st - s);
        const char *en = NULL;
        for (size_t k = at; k + 3 <= n; k++)
            if (s[k] == '-' && memcmp(s + k, "-->", 3) == 0) { en = s + k; break; }
        if (!en)
            break;
        tpl_sb_put(&c1, s + i, at - i);
        i = (size_t)(en - s) + 3;
    }
    tpl_sb_put(&c1, s + i, n - i);
    s = c1.p ? c1.p : "";
    n = c1.len;
    /* 2. remove tags: each "<" up to the next ">" (stop at an unclosed one) */
    tpl_sb c2;
    tpl_sb_init(&c2, ar);
    i = 0;
    for (;;) {
        const char *lt = memchr(s + i, '<', n - i);
        if (!lt)
            break;
        const char *gt = memchr(lt, '>', n - (size_t)(lt - s));
        if (!gt)
            break;
        tpl_sb_put(&c2, s + i, (size_t)(lt - s) - i);
        i = (size_t)(gt - s) + 1;
    }
    tpl_sb_put(&c2, s + i, n - i);
    s = c2.p ? c2.p : "";
    n = c2.len;
    /* 3. " ".join(value.split()) */
    tpl_sb c3;
    tpl_sb_init(&c3, ar);
    i = 0;
    bool first = true;
    while (i < n) {
        size_t nx;
        if (is_ws_cp(s, n, i, &nx)) {
            i = nx;
            continue;
        }
        size_t j = i;
        while (j < n && !is_ws_cp(s, n, j, &nx))
            j = nx;
        if (!first)
            tpl_sb_putc(&c3, ' ');
        tpl_sb_put(&c3, s + i, j - i);
        first = false;
        i = j;
    }
    /* 4. unescape */
    tpl_sb b;
    tpl_sb_init(&b, ar);
    html_unescape(&b, c3.p ? c3.p : "", c3.len);
    return sb_done(vm, &b, out);
}

/* Markup.unescape(): html.unescape of the markup, a plain str (MarkupSafe 3). */
int m_markup_unescape(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_sb b;
    tpl_sb_init(&b, AR(vm));
    html_unescape(&b, a[0].u.s, a[0].len);
    return sb_done(vm, &b, out);
}

/* Markup.striptags(): what the striptags filter does (it calls this), a plain str. */
int m_markup_striptags(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value s = a[0];
    s.flags &= (uint8_t)~TPL_F_SAFE;
    return f_striptags(vm, &s, out);
}

/* A {% call %} block's output: the callee's result as it is when it is a str (or Markup), else
 * the TypeError of Jinja2's "".join over the render's pieces ("sequence item N: expected str
 * instance, dict found"; the piece index N is not tracked, the message says the rest). */
int f_call_result(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_vtype t = tpl_value_vtype(a[0], tpl_vm_strict_undef(vm, a[0]));
    if (t != TPL_VT_STR && t != TPL_VT_MARKUP)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "expected str instance, %s found", tpl_type_name(vm, a[0]));
    *out = a[0];
    return 0;
}

/* The receiver of a number method that Jinja2 folds from a filter: a float that is not finite is the
 * NameError of its repr in the Python Jinja2 generates (`inf`, `nan`); anything else passes. */
int f_folded_number(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (a[0].type == TPL_T_FLOAT && !isfinite(a[0].u.f))
        return tpl_vm_fail(vm, TPL_EK_NAME, "name '%s' is not defined", isnan(a[0].u.f) ? "nan" : "inf");
    *out = a[0];
    return 0;
}

/* Markup.__html__(): the markup itself. */
int m_markup_html(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    (void)vm;
    *out = a[0];
    return 0;
}

/* Markup.escape(s) (a classmethod): markupsafe.escape(s) as Markup, whatever the receiver. */
int m_markup_escape(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    return escape_value(vm, a[1], false, out);
}

/* ------------------------------------------------------------------ wordwrap (textwrap) */

typedef struct { uint32_t s, e; } chunk_t;

static bool tw_ws(uint32_t c) { return c == ' ' || c == '\t' || c == '\n' || c == 0x0B || c == 0x0C || c == '\r'; }
static bool tw_wp(uint32_t c)
{
    return tpl_uc_isword(c) || c == '!' || c == '"' || c == '\'' || c == '&' || c == '.' || c == ',' || c == '?';
}
static bool tw_lt(uint32_t c) { return tpl_uc_isword(c) && !tpl_uc_isdecimal(c); }

/* -{2,} followed by a word character, starting at k. dash_end[k] is the end of the run of
 * '-' starting at k (k itself when c[k] is not '-'), so the check is O(1). */
static bool dash_run_then_word(const uint32_t *c, const uint32_t *dash_end, size_t n, size_t k)
{
    if (k >= n)
        return false;
    size_t m = dash_end[k];
    return m - k >= 2 && m < n && tpl_uc_isword(c[m]);
}

/* TextWrapper.wordsep_re (break_on_hyphens) or wordsep_simple_re, as re.split() chunks. */
static int tw_split(tpl_vm *vm, const uint32_t *c, size_t n, bool hyphens, chunk_t **out, size_t *nout)
{
    chunk_t *ch = tpl_arena_alloc(AR(vm), (n + 1) * sizeof *ch);
    uint32_t *dash_end = tpl_arena_alloc(AR(vm), (n + 1) * sizeof *dash_end);
    if (!ch || !dash_end)
        return OOM();
    dash_end[n] = (uint32_t)n;
    for (size_t k = n; k-- > 0;)
        dash_end[k] = c[k] == '-' ? dash_end[k + 1] : (uint32_t)k;
    size_t nc = 0, i = 0;
    while (i < n) {
        size_t j;
        if (tw_ws(c[i])) {
            j = i;
            while (j < n && tw_ws(c[j]))
                j++;
        } else if (!hyphens) {
            j = i;
            while (j < n && !tw_ws(c[j]))
                j++;
        } else if (c[i] == '-' && i > 0 && tw_wp(c[i - 1]) && dash_run_then_word(c, dash_end, n, i)) {
            j = dash_end[i];
        } else {
            j = i + 1;
            for (;; j++) {
                /* A: hyphenated word */
                if (j < n && c[j] == '-' &&
                    ((j >= 2 && tw_lt(c[j - 2]) && tw_lt(c[j - 1])) ||
                     (j >= 3 && tw_lt(c[j - 3]) && c[j - 2] == '-' && tw_lt(c[j - 1]))) &&
                    j + 1 < n && tw_lt(c[j + 1]) &&
                    ((j + 2 < n && tw_lt(c[j + 2])) || (j + 3 < n && c[j + 2] == '-' && tw_lt(c[j + 3])))) {
                    j++;
                    break;
                }
                /* B: end of word */
                if (j >= n || tw_ws(c[j]))
                    break;
                /* C: em-dash follows */
                if (tw_wp(c[j - 1]) && dash_run_then_word(c, dash_end, n, j))
                    break;
            }
        }
        ch[nc].s = (uint32_t)i;
        ch[nc].e = (uint32_t)j;
        nc++;
        i = j;
    }
    *out = ch;
    *nout = nc;
    return 0;
}

static bool chunk_blank(const uint32_t *c, chunk_t k)
{
    for (uint32_t i = k.s; i < k.e; i++)
        if (!tpl_py_isspace(c[i]))
            return false;
    return true;
}

/* textwrap.wrap(line, width, expand_tabs=False, replace_whitespace=False, ...) joined with
 * wrapstring, appended to b. offs maps code point index -> byte offset in line. */
static int tw_wrap_line(tpl_vm *vm, tpl_sb *b, const char *line, const uint32_t *c, const size_t *offs, size_t n,
                        int64_t width, const double *fwidth, bool long_words, bool hyphens, tpl_value wrapstring)
{
    chunk_t *ch = NULL;
    size_t nc = 0;
    if (tw_split(vm, c, n, hyphens, &ch, &nc) < 0)
        return -1;
    /* a float width (fwidth) is compared as a number; breaking a long word slices by it
     * (width - cur_len: Python's TypeError) unless it is below 1 (space_left 1) */
    double fw = fwidth ? *fwidth : 0;
#define TW_FITS(x) (fwidth ? (double)(x) <= fw : (x) <= width)
    if (fwidth && !(fw > 0)) {
        if (isnan(fw)) /* (every comparison is false: textwrap loops for ever) */
            return tpl_vm_error(vm, TPL_ERR_VALUE, "unsupported: wordwrap width nan (Python's textwrap never ends)");
        tpl_sb m;
        tpl_sb_init(&m, AR(vm));
        tpl_py_repr(&m, tpl_v_float(fw));
        return tpl_vm_error(vm, TPL_ERR_VALUE, "invalid width %.*s (must be > 0)", (int)m.len, m.p ? m.p : "");
    }
    if (!fwidth && width <= 0)
        return tpl_vm_error(vm, TPL_ERR_VALUE, "invalid width %lld (must be > 0)", (long long)width);
    /* chunks are consumed from ch[pos]; a partially consumed long word shrinks ch[pos].s */
    size_t pos = 0;
    bool any_line = false;
    chunk_t *cur = tpl_arena_alloc(AR(vm), (nc + 1) * sizeof *cur);
    if (!cur)
        return OOM();
    while (pos < nc) {
        size_t ncur = 0;
        int64_t cur_len = 0;
        if (any_line && chunk_blank(c, ch[pos]))
            pos++;
        while (pos < nc) {
            int64_t l = ch[pos].e - ch[pos].s;
            if (TW_FITS(cur_len + l)) {
                cur[ncur++] = ch[pos++];
                cur_len += l;
            } else {
                break;
            }
        }
        if (pos < nc && !TW_FITS((int64_t)(ch[pos].e - ch[pos].s))) {
            int64_t space_left = fwidth ? 1 : width < 1 ? 1 : width - cur_len;
            if (long_words && fwidth && !(fw < 1))
                return tpl_vm_error(vm, TPL_ERR_TYPE, "slice indices must be integers or None or have an __index__ method");
            if (long_words) {
                chunk_t k = ch[pos];
                int64_t end = space_left;
                if (hyphens && (int64_t)(k.e - k.s) > space_left) {
                    int64_t hy = -1;
                    for (int64_t x = space_left - 1; x >= 0; x--)
                        if (c[k.s + x] == '-') { hy = x; break; }
                    if (hy > 0) {
                        bool nondash = false;
                        for (int64_t x = 0; x < hy; x++)
                            if (c[k.s + x] != '-') { nondash = true; break; }
                        if (nondash)
                            end = hy + 1;
                    }
                }
                if (end > (int64_t)(k.e - k.s))
                    end = k.e - k.s;
                cur[ncur].s = k.s;
                cur[ncur].e = k.s + (uint32_t)end;
                ncur++;
                ch[pos].s = k.s + (uint32_t)end;
                if (ch[pos].s == ch[pos].e)
                    pos++;
            } else if (ncur == 0) {
                cur[ncur++] = ch[pos++];
            }
        }
        if (ncur && chunk_blank(c, cur[ncur - 1]))
            ncur--;
        if (ncur) {
            if (any_line)
                tpl_sb_put(b, wrapstring.u.s, wrapstring.len);
            size_t bs = offs[cur[0].s], be = offs[cur[ncur - 1].e];
            /* chunks of one line are contiguous in the text */
            if (wrapstring.flags & TPL_F_SAFE)
                tpl_html_escape(b, line + bs, be - bs); /* (Markup.join escapes textwrap's plain strs) */
            else
                tpl_sb_put(b, line + bs, be - bs);
            any_line = true;
        }
    }
#undef TW_FITS
    return 0;
}

int f_wordwrap(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value s = a[0];
    /* `wrapstring.join` is looked up before its argument (the wrapped lines of s.splitlines()) is
     * made: a wrapstring that is no str fails first, whatever s and width are */
    if (tpl_given(a[3]) && a[3].type == TPL_T_UNDEF)
        return tpl_undefined_error(vm, a[3]);
    if (tpl_given(a[3]) && a[3].type != TPL_T_NONE && a[3].type != TPL_T_STR)
        return tpl_vm_fail(vm, TPL_EK_ATTRIBUTE, "'%s' object has no attribute 'join'", tpl_type_name(vm, a[3]));
    if (s.type == TPL_T_UNDEF)
        return tpl_undefined_error(vm, s);
    if (s.type != TPL_T_STR)
        return tpl_vm_fail(vm, TPL_EK_ATTRIBUTE, "'%s' object has no attribute 'splitlines'", tpl_type_name(vm, s));
    if (s.len == 0 && (!tpl_given(a[3]) || a[3].type == TPL_T_NONE || a[3].type == TPL_T_STR)) {
        *out = tpl_v_str("", 0); /* (no lines: textwrap never sees width) */
        return 0;
    }
    int64_t width = 79;
    double fwidth = 0; /* (a float width: textwrap compares it as a number) */
    bool fl = tpl_given(a[1]) && a[1].type == TPL_T_FLOAT;
    if (tpl_given(a[1]) && a[1].type == TPL_T_UNDEF) /* (textwrap's `width <= 0` on it) */
        return tpl_undefined_error(vm, a[1]);
    if (fl)
        fwidth = a[1].u.f;
    else if (tpl_given(a[1]) && tpl_arg_index_sat(vm, a[1], &width) < 0)
        return -1;
    int long_words = tpl_arg_truthy(vm, a[2], true);
    if (long_words < 0)
        return -1;
    tpl_value ws = tpl_v_str("\n", 1);
    if (tpl_given(a[3]) && a[3].type != TPL_T_NONE)
        ws = a[3]; /* (a str: checked first) */
    int hyphens = tpl_arg_truthy(vm, a[4], true);
    if (hyphens < 0)
        return -1;
    tpl_list *lines;
    if (tpl_splitlines(vm, s, false, &lines) < 0)
        return -1;
    tpl_arena *ar = AR(vm);
    tpl_sb b;
    tpl_sb_init(&b, ar);
    for (uint32_t li = 0; li < lines->len; li++) {
        tpl_value line = lines->items[li];
        if (li)
            tpl_sb_put(&b, ws.u.s, ws.len);
        size_t n = 0, i = 0;
        uint32_t *cps = tpl_arena_alloc(ar, ((size_t)line.len + 1) * sizeof *cps);
        size_t *offs = tpl_arena_alloc(ar, ((size_t)line.len + 1) * sizeof *offs);
        if (!cps || !offs)
            return OOM();
        while (i < line.len) {
            offs[n] = i;
            cps[n++] = tpl_utf8_next(line.u.s, line.len, &i);
        }
        offs[n] = line.len;
        if (tw_wrap_line(vm, &b, line.u.s, cps, offs, n, width, fl ? &fwidth : NULL, long_words, hyphens, ws) < 0)
            return -1;
    }
    if (sb_done(vm, &b, out) < 0)
        return -1;
    if (ws.flags & TPL_F_SAFE)
        out->flags |= TPL_F_SAFE; /* (Markup.join gives a Markup) */
    return 0;
}

/* ------------------------------------------------------------------ pprint */

typedef struct {
    tpl_vm *vm;
    const tpl_map *m;
} pp_ctx;

/* pprint's _safe_key ordering: natural order for numbers and for strings; otherwise by
 * str(type(x)) (never an error), from runtime/types.def. */
static const char *pp_tname(tpl_value v)
{
    return tpl_types[tpl_value_vtype(v, false)].pyclass;
}

static int pp_key_cmp(tpl_value a, tpl_value b)
{
    if ((a.type == TPL_T_BIGINT || b.type == TPL_T_BIGINT) && (tpl_is_num(a) || a.type == TPL_T_BIGINT) &&
        (tpl_is_num(b) || b.type == TPL_T_BIGINT)) {
        int c = tpl_big_cmp(a, b);
        return c == 2 ? 0 : c;
    }
    if (tpl_is_num(a) && tpl_is_num(b)) {
        double x = a.type == TPL_T_FLOAT ? a.u.f : (double)a.u.i;
        double y = b.type == TPL_T_FLOAT ? b.u.f : (double)b.u.i;
        if (a.type != TPL_T_FLOAT && b.type != TPL_T_FLOAT)
            return a.u.i < b.u.i ? -1 : a.u.i > b.u.i;
        return x < y ? -1 : x > y;
    }
    if (a.type == TPL_T_STR && b.type == TPL_T_STR) {
        size_t m = a.len < b.len ? a.len : b.len;
        int c = memcmp(a.u.s, b.u.s, m);
        if (c)
            return c < 0 ? -1 : 1;
        return a.len < b.len ? -1 : a.len > b.len;
    }
    int c = strcmp(pp_tname(a), pp_tname(b));
    return c < 0 ? -1 : c > 0;
}

static uint32_t *pp_sorted(tpl_vm *vm, const tpl_map *m)
{
    uint32_t n = m->len;
    uint32_t *idx = tpl_arena_alloc(AR(vm), (size_t)(n ? n : 1) * sizeof *idx);
    uint32_t *tmp = tpl_arena_alloc(AR(vm), (size_t)(n ? n : 1) * sizeof *tmp);
    if (!idx || !tmp)
        return NULL;
    for (uint32_t i = 0; i < n; i++)
        idx[i] = i;
    for (uint32_t w = 1; w < n; w *= 2) {
        for (uint32_t lo = 0; lo < n; lo += 2 * w) {
            uint32_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            uint32_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                tmp[k++] = pp_key_cmp(m->e[idx[j]].key, m->e[idx[i]].key) < 0 ? idx[j++] : idx[i++];
            while (i < mid) tmp[k++] = idx[i++];
            while (j < hi) tmp[k++] = idx[j++];
        }
        memcpy(idx, tmp, (size_t)n * sizeof *idx);
    }
    return idx;
}

/* pprint's safe repr: repr() with dict keys sorted, recursively. */
static void pp_repr(tpl_vm *vm, tpl_sb *b, tpl_value v, int depth)
{
    if (!tpl_sb_charge(b, 1))
        return;
    if (depth > 200) {
        tpl_sb_puts(b, "...");
        return;
    }
    if (v.type == TPL_T_MAP && !(v.flags & TPL_F_NS)) {
        const tpl_map *m = v.u.map;
        uint32_t *idx = pp_sorted(vm, m);
        if (!idx) {
            b->failed = true;
            return;
        }
        tpl_sb_putc(b, '{');
        for (uint32_t i = 0; i < m->len && !b->failed; i++) {
            if (i)
                tpl_sb_puts(b, ", ");
            pp_repr(vm, b, m->e[idx[i]].key, depth + 1);
            tpl_sb_puts(b, ": ");
            pp_repr(vm, b, m->e[idx[i]].val, depth + 1);
        }
        tpl_sb_putc(b, '}');
        return;
    }
    if (v.type == TPL_T_LIST && !v.aux) {
        bool tuple = v.flags & TPL_F_TUPLE;
        const tpl_list *l = v.u.list;
        tpl_sb_putc(b, tuple ? '(' : '[');
        for (uint32_t i = 0; i < l->len && !b->failed; i++) {
            if (i)
                tpl_sb_puts(b, ", ");
            pp_repr(vm, b, l->items[i], depth + 1);
        }
        if (tuple && l->len == 1)
            tpl_sb_putc(b, ',');
        tpl_sb_putc(b, tuple ? ')' : ']');
        return;
    }
    if (v.type == TPL_T_UNDEF) {
        tpl_sb_puts(b, "Undefined"); /* StrictUndefined's repr too */
        return;
    }
    tpl_py_repr(b, v);
}

/* The repr of v in *tmp and its length in code points; a failure or mark of *tmp (an int past
 * 4,300 digits, a function: tpl_sb_mark) is carried to b, so it is never printed partly. */
static size_t pp_len(tpl_vm *vm, tpl_value v, tpl_sb *tmp, tpl_sb *b)
{
    tpl_sb_init(tmp, AR(vm));
    pp_repr(vm, tmp, v, 0);
    if (tmp->failed) {
        if (tmp->address) tpl_sb_mark(b, tmp->address);
        else b->failed = true;
    }
    return tpl_utf8_len(tmp->p ? tmp->p : "", tmp->len);
}

enum { PP_WIDTH = 80 };

static void pp_format(tpl_vm *vm, tpl_sb *b, tpl_value v, int64_t indent, int64_t allowance, int level);

static void pp_items(tpl_vm *vm, tpl_sb *b, const tpl_value *items, uint32_t n, int64_t indent, int64_t allowance,
                     int level)
{
    indent += 1;
    for (uint32_t i = 0; i < n && !b->failed; i++) {
        bool last = i + 1 == n;
        if (i) {
            tpl_sb_puts(b, ",\n");
            put_spaces(b, indent);
        }
        pp_format(vm, b, items[i], indent, last ? allowance : 1, level);
    }
}

static void pp_str(tpl_vm *vm, tpl_sb *b, tpl_value s, int64_t indent, int64_t allowance, int level)
{
    tpl_list *lines;
    if (s.len == 0 || tpl_splitlines(vm, s, true, &lines) < 0) {
        tpl_py_repr(b, s);
        return;
    }
    tpl_arena *ar = AR(vm);
    tpl_list *chunks = tpl_list_new(ar, 4);
    if (!chunks) {
        b->failed = true;
        return;
    }
    if (level == 1) {
        indent += 1;
        allowance += 1;
    }
    int64_t max_width1 = PP_WIDTH - indent, max_width = PP_WIDTH - indent;
    tpl_sb rep;
    bool lost = false;
    for (uint32_t i = 0; i < lines->len; i++) {
        tpl_value line = lines->items[i];
        line.flags = 0;
        tpl_sb_init(&rep, ar);
        tpl_py_repr(&rep, line);
        if (i + 1 == lines->len)
            max_width1 -= allowance;
        if ((int64_t)tpl_utf8_len(rep.p ? rep.p : "", rep.len) <= max_width1) {
            if (rep.failed || !tpl_list_push(ar, chunks, tpl_sb_value(&rep))) lost = true;
            continue;
        }
        /* re.findall(r'\S*\s*', line) minus the final empty match */
        int64_t max_width2 = max_width;
        size_t p = 0, cur_s = 0, cur_e = 0;
        bool have_cur = false;
        while (p < line.len) {
            size_t q = p, nx;
            while (q < line.len && !is_ws_cp(line.u.s, line.len, q, &nx)) q = nx;
            while (q < line.len && is_ws_cp(line.u.s, line.len, q, &nx)) q = nx;
            bool last_part = q >= line.len;
            if (last_part && i + 1 == lines->len)
                max_width2 -= allowance;
            size_t cand_s = have_cur ? cur_s : p;
            tpl_sb cr;
            tpl_sb_init(&cr, ar);
            tpl_py_repr(&cr, tpl_v_str(line.u.s + cand_s, q - cand_s));
            if ((int64_t)tpl_utf8_len(cr.p ? cr.p : "", cr.len) > max_width2) {
                if (have_cur && cur_e > cur_s) {
                    tpl_sb r2;
                    tpl_sb_init(&r2, ar);
                    tpl_py_repr(&r2, tpl_v_str(line.u.s + cur_s, cur_e - cur_s));
                    if (r2.failed || !tpl_list_push(ar, chunks, tpl_sb_value(&r2))) lost = true;
                }
                cur_s = p;
                cur_e = q;
                have_cur = true;
            } else {
                cur_s = cand_s;
                cur_e = q;
                have_cur = true;
            }
            p = q;
        }
        if (have_cur && cur_e > cur_s) {
            tpl_sb r2;
            tpl_sb_init(&r2, ar);
            tpl_py_repr(&r2, tpl_v_str(line.u.s + cur_s, cur_e - cur_s));
            if (r2.failed || !tpl_list_push(ar, chunks, tpl_sb_value(&r2))) lost = true;
        }
    }
    if (lost) {   /* a piece that could not be kept (the memory limit): a failed result, never a shorter one */
        b->failed = true;
        return;
    }
    if (chunks->len == 1) {
        tpl_sb_put(b, rep.p ? rep.p : "", rep.len);
        return;
    }
    if (level == 1)
        tpl_sb_putc(b, '(');
    for (uint32_t i = 0; i < chunks->len; i++) {
        if (i) {
            tpl_sb_putc(b, '\n');
            put_spaces(b, indent);
        }
        tpl_sb_put(b, chunks->items[i].u.s, chunks->items[i].len);
    }
    if (level == 1)
        tpl_sb_putc(b, ')');
}

static void pp_format(tpl_vm *vm, tpl_sb *b, tpl_value v, int64_t indent, int64_t allowance, int level)
{
    tpl_sb rep;
    size_t len = pp_len(vm, v, &rep, b);
    if (rep.failed) { /* memory or fuel: stop walking */
        b->failed = true;
        return;
    }
    int64_t max_width = PP_WIDTH - indent - allowance;
    if ((int64_t)len > max_width && level < 100) {
        if (v.type == TPL_T_MAP && !(v.flags & TPL_F_NS)) {
            const tpl_map *m = v.u.map;
            tpl_sb_putc(b, '{');
            if (m->len) {
                uint32_t *idx = pp_sorted(vm, m);
                if (!idx) {
                    b->failed = true;
                    return;
                }
                int64_t ind = indent + 1;
                for (uint32_t i = 0; i < m->len && !b->failed; i++) {
                    bool last = i + 1 == m->len;
                    tpl_sb kr;
                    size_t kl = pp_len(vm, m->e[idx[i]].key, &kr, b);
                    tpl_sb_put(b, kr.p ? kr.p : "", kr.len);
                    tpl_sb_puts(b, ": ");
                    pp_format(vm, b, m->e[idx[i]].val, ind + (int64_t)kl + 2, last ? allowance + 1 : 1, level + 1);
                    if (!last) {
                        tpl_sb_puts(b, ",\n");
                        put_spaces(b, ind);
                    }
                }
            }
            tpl_sb_putc(b, '}');
            return;
        }
        if (v.type == TPL_T_LIST && !(v.flags & TPL_F_GROUP) && !v.aux) {
            bool tuple = v.flags & TPL_F_TUPLE;
            const tpl_list *l = v.u.list;
            if (tuple) {
                const char *endc = l->len == 1 ? ",)" : ")";
                tpl_sb_putc(b, '(');
                pp_items(vm, b, l->items, l->len, indent, allowance + (int64_t)strlen(endc), level + 1);
                tpl_sb_puts(b, endc);
            } else {
                tpl_sb_putc(b, '[');
                pp_items(vm, b, l->items, l->len, indent, allowance + 1, level + 1);
                tpl_sb_putc(b, ']');
            }
            return;
        }
        if (v.type == TPL_T_STR && !(v.flags & TPL_F_SAFE)) {
            pp_str(vm, b, v, indent, allowance, level + 1);
            return;
        }
    }
    tpl_sb_put(b, rep.p ? rep.p : "", rep.len);
}

int f_pprint(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_sb b;
    tpl_sb_init(&b, AR(vm));
    pp_format(vm, &b, a[0], 0, 0, 0);
    return sb_done(vm, &b, out);
}

/* ------------------------------------------------------------------ tojson */

/* json.dumps' indent: None (*ind NULL), an int n (n spaces) or a str used as it is. */
static int json_indent(tpl_vm *vm, tpl_value v, const char **ind, size_t *ind_n)
{
    *ind = NULL;
    *ind_n = 0;
    if (!tpl_given(v) || v.type == TPL_T_NONE)
        return 0;
    if (v.type == TPL_T_UNDEF)
        return tpl_undefined_error(vm, v);
    if (v.type == TPL_T_INT || v.type == TPL_T_BOOL) {
        if (v.u.i > 1000)
            return tpl_vm_error(vm, TPL_ERR_LIMIT, "indent too large");
        size_t n = v.u.i < 0 ? 0 : (size_t)v.u.i;
        char *s = tpl_arena_alloc(AR(vm), n + 1);
        if (!s)
            return OOM();
        memset(s, ' ', n);
        *ind = s;
        *ind_n = n;
        return 0;
    }
    if (v.type == TPL_T_STR) {
        if (v.len > 1000) /* (as an int indent: the output is the indent times the nesting) */
            return tpl_vm_error(vm, TPL_ERR_LIMIT, "indent too large");
        *ind = v.len ? v.u.s : "";
        *ind_n = v.len;
        return 0;
    }
    return tpl_vm_error(vm, TPL_ERR_TYPE, "can't multiply sequence by non-int of type '%s'", tpl_type_name(vm, v));
}

/* The hf profile's tojson (transformers' chat-template filter): `tojson(x, ensure_ascii=False,
 * indent=None, separators=None, sort_keys=False)`, json.dumps with those; the compiler calls it
 * for `tojson` in that profile (its positional order differs from Jinja2's do_tojson(value,
 * indent)). It takes f_tojson's argument order. */
int f_tojson_hf(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value b[5] = {a[0], a[2], a[1], a[3], a[4]};
    return f_tojson(vm, b, out);
}

int f_tojson(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    const char *ind = NULL;
    size_t ind_n = 0;
    /* (JSONEncoder.encode returns a str's JSON before it reads indent: 'a'|tojson(2.5) is "a") */
    if (a[0].type != TPL_T_STR && json_indent(vm, a[1], &ind, &ind_n) < 0)
        return -1;
    tpl_sb b;
    tpl_sb_init(&b, AR(vm));
    bool ok;
    tpl_json_fail fail = { TPL_JSON_OK, tpl_v_unset() };
    if (tpl_vm_hf(vm)) {
        int ensure_ascii = tpl_arg_truthy(vm, a[2], false);
        if (ensure_ascii < 0)
            return -1;
        int sort_keys = tpl_arg_truthy(vm, a[4], false);
        if (sort_keys < 0)
            return -1;
        const char *item_sep = NULL, *key_sep = NULL;
        tpl_value sp = a[3];
        if (tpl_given(sp) && sp.type != TPL_T_NONE) {
            if (sp.type != TPL_T_LIST || sp.u.list->len != 2)
                return tpl_vm_error(vm, TPL_ERR_VALUE, "separators must be a (item_separator, key_separator) pair");
            tpl_value x = sp.u.list->items[0], y = sp.u.list->items[1];
            if (x.type != TPL_T_STR || y.type != TPL_T_STR)
                return tpl_vm_error(vm, TPL_ERR_TYPE, "separators must be strings");
            item_sep = tpl_arena_strdup(AR(vm), x.u.s, x.len);
            key_sep = tpl_arena_strdup(AR(vm), y.u.s, y.len);
            if (!item_sep || !key_sep)
                return OOM();
        }
        ok = tpl_json_dumps_s(&b, a[0], ensure_ascii, ind, ind_n, item_sep, key_sep, sort_keys, &fail);
    } else {
        static const char *const extra[] = {"ensure_ascii", "separators", "sort_keys"};
        for (int k = 0; k < 3; k++)
            if (tpl_given(a[2 + k]))
                return tpl_vm_error(vm, TPL_ERR_TYPE, "do_tojson() got an unexpected keyword argument '%s'", extra[k]);
        ok = tpl_json_dumps_htmlsafe_s(&b, a[0], ind, ind_n, &fail);
    }
    if (!ok && b.address == tpl_nest_limit)
        return tpl_vm_nest_error(vm, "while encoding a JSON object");
    if (!ok && fail.why == TPL_JSON_CIRCULAR) /* json.dumps' check_circular (was a TypeError, and a walk
                                                  * of every path through a self-containing value) */
        return tpl_vm_error(vm, TPL_ERR_VALUE, "Circular reference detected");
    if (!ok && fail.why == TPL_JSON_KEY) /* json.dumps' message for a key (a tuple: {(1, 2): x}) */
        return tpl_vm_error(vm, TPL_ERR_TYPE, "keys must be str, int, float, bool or None, not %s",
                            tpl_vm_strict_undef(vm, fail.bad) ? "StrictUndefined"
                            : fail.bad.type == TPL_T_UNDEF ? "Undefined" : tpl_type_name(vm, fail.bad));
    if (!ok) {
        tpl_value bad = fail.why == TPL_JSON_TYPE ? fail.bad : a[0];
        if (tpl_vm_strict_undef(vm, bad))
            return tpl_vm_error(vm, TPL_ERR_TYPE, "Object of type StrictUndefined is not JSON serializable");
        if (bad.type == TPL_T_UNDEF)
            return tpl_vm_error(vm, TPL_ERR_TYPE, "Object of type Undefined is not JSON serializable");
        return tpl_vm_error(vm, TPL_ERR_TYPE, "Object of type %s is not JSON serializable", tpl_type_name(vm, bad));
    }
    if (sb_done(vm, &b, out) < 0)
        return -1;
    if (!tpl_vm_hf(vm))
        out->flags = TPL_F_SAFE;
    return 0;
}

/* ------------------------------------------------------------------ random, urlize
 * Not in builtins.def yet (see the declarations in builtins.h). */

/* random.choice(seq). The pick comes from the clock (there is no RNG state to keep); a one-item
 * sequence is deterministic. */
int f_random(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value v = a[0];
    if (v.type == TPL_T_MAP && !(v.flags & TPL_F_NS))
        return tpl_vm_error(vm, TPL_ERR_VALUE, "0");   /* random.choice(dict) looks up dict[i] */
    tpl_list *l;
    if (v.type != TPL_T_STR && v.type != TPL_T_LIST && v.type != TPL_T_UNDEF)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "object of type '%s' has no len()", tpl_type_name(vm, v));
    if (tpl_is_iter(v)) /* random.choice of a generator or reversed(): len() fails */
        return tpl_vm_error(vm, TPL_ERR_TYPE, "object of type '%s' has no len()", tpl_type_name(vm, v));
    if (tpl_is_lazy(v) && v.aux != TPL_LAZY_RANGE && v.u.list->len) /* a dict view: seq[i] fails */
        return tpl_vm_error(vm, TPL_ERR_TYPE, "'%s' object is not subscriptable", tpl_type_name(vm, v));
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    uint64_t x = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)ts.tv_sec;
    x ^= x >> 29;
    if (tpl_is_big_range(v)) { /* random.choice(range): range[randbelow(len)] */
        mpz_t n, r;
        tpl_range_len(n, tpl_range_params(v));
        mpz_init_set_ui(r, x);
        mpz_mul_2exp(r, r, 64);
        mpz_add_ui(r, r, x * 0xbf58476d1ce4e5b9ull ^ (x >> 31));
        mpz_mod(r, r, n);
        mpz_clear(n);
        tpl_value i;
        bool found = false;
        int rc = tpl_big_value(AR(vm), r, &i) ? tpl_range_item(vm, v, i, &found, out) : OOM();
        mpz_clear(r);
        return rc;
    }
    if (tpl_iter_list(vm, v, &l) < 0)
        return -1;
    if (l->len == 0) {
        *out = undef_hint("No random item, sequence was empty.");
        return 0;
    }
    *out = l->items[x % l->len];
    return 0;
}

/* re's \w for the code point at s[i] (advancing *i). */
static bool word_at(const char *s, size_t n, size_t *i)
{
    uint32_t c = tpl_utf8_next(s, n, i);
    return tpl_uc_isword(c);
}

static bool is_hex(char c) { return (c >= '0' && c <= '9') || ((c | 32) >= 'a' && (c | 32) <= 'f'); }

/* (?::\d{1,5})?(?:[/?#]\S*)?$ on s[i..n) (the word has no whitespace). */
static bool port_path(const char *s, size_t n, size_t i)
{
    if (i < n && s[i] == ':') {
        size_t j = ++i;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
        if (i == j || i - j > 5)
            return false;
    }
    return i == n || s[i] == '/' || s[i] == '?' || s[i] == '#';
}

static bool host_char(const char *s, size_t n, size_t i, size_t *next)
{
    unsigned char c = (unsigned char)s[i];
    if (c == '.' || c == '%' || c == '-') {
        *next = i + 1;
        return true;
    }
    return word_at(s, n, (*next = i, next));
}

/* Jinja2's _http_re (re.IGNORECASE). */
static bool http_match(const char *s, size_t n)
{
    size_t pre = 0;
    if (n >= 8 && strncasecmp(s, "https://", 8) == 0) pre = 8;
    else if (n >= 7 && strncasecmp(s, "http://", 7) == 0) pre = 7;
    else if (n >= 4 && strncasecmp(s, "www.", 4) == 0) pre = 4;
    /* host: the maximal run of [\w%.-] */
    for (int alt = 1; alt <= 2; alt++) {
        size_t start = alt == 1 ? pre : 0;
        if (alt == 1 && !pre)
            continue;
        size_t i = start, nx;
        while (i < n && host_char(s, n, i, &nx))
            i = nx;
        size_t hend = i;
        if (hend == start || s[hend - 1] == '.' || !port_path(s, n, hend))
            continue;
        /* split into labels */
        size_t ls = start;
        bool ok = true;
        size_t last_s = start;
        for (size_t k = start; k <= hend; k++) {
            if (k == hend || s[k] == '.') {
                size_t len = tpl_utf8_len(s + ls, k - ls);
                if (len == 0 || (alt == 2 && k < hend && (len < 2 || len > 63))) {
                    ok = false;
                    break;
                }
                last_s = ls;
                ls = k + 1;
            }
        }
        if (!ok)
            continue;
        const char *tld = s + last_s;
        size_t tl = hend - last_s;
        if (alt == 2) {
            if (last_s == start)
                continue; /* needs at least one label before the tld */
            static const char *const tlds[] = {"com", "net", "int", "edu", "gov", "org", "info", "mil"};
            for (size_t t = 0; t < sizeof tlds / sizeof tlds[0]; t++)
                if (strlen(tlds[t]) == tl && strncasecmp(tld, tlds[t], tl) == 0)
                    return true;
            continue;
        }
        bool letters = tl >= 2 && tl <= 63;
        for (size_t k = 0; letters && k < tl; k++)
            letters = (tld[k] | 32) >= 'a' && (tld[k] | 32) <= 'z';
        if (letters)
            return true;
        if (tl >= 4 && strncasecmp(tld, "xn--", 4) == 0) {
            size_t cnt = 0, k = 4;
            bool idna = true;
            while (k < tl) {
                if (tld[k] == '%') { k++; cnt++; continue; }
                if (!word_at(tld, tl, &k)) { idna = false; break; }
                cnt++;
            }
            if (idna && cnt >= 2 && cnt <= 59)
                return true;
        }
    }
    if (pre < 7)
        return false;
    /* scheme + IPv4 / IPv6 */
    size_t i = pre;
    if (i < n && s[i] == '[') {
        i++;
        for (int g = 0; g < 2; g++) {
            size_t j = i;
            while (i < n && is_hex(s[i]) && i - j < 4)
                i++;
            if (i >= n || s[i] != ':')
                return false;
            i++;
        }
        /* ([\da-f]{0,4}:?){1,6} then ']': count the pieces needed */
        int pieces = 0;
        while (i < n && s[i] != ']') {
            size_t j = i;
            while (i < n && is_hex(s[i]))
                i++;
            size_t run = i - j;
            if (i < n && s[i] != ':' && s[i] != ']')
                return false;
            int need = run ? (int)((run + 3) / 4) : 1;
            if (i < n && s[i] == ':')
                i++;
            else if (!run)
                need = 0;
            pieces += need;
        }
        if (pieces == 0)
            pieces = 1;
        if (i >= n || pieces > 6)
            return false;
        return port_path(s, n, i + 1);
    }
    for (int g = 0; g < 4; g++) {
        if (g) {
            if (i >= n || s[i] != '.')
                return false;
            i++;
        }
        size_t j = i;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
        if (i == j || i - j > 3)
            return false;
    }
    return port_path(s, n, i);
}

/* Jinja2's _email_re: ^\S+@\w[\w.-]*\.\w+$ */
static bool email_match(const char *s, size_t n)
{
    const char *at = NULL;
    for (size_t i = n; i-- > 0;)
        if (s[i] == '@') { at = s + i; break; }
    if (!at || at == s)
        return false;
    const char *d = at + 1;
    size_t dn = n - (size_t)(d - s), i = 0;
    if (dn == 0 || !word_at(d, dn, &i))
        return false;
    size_t last_dot = 0;
    bool dash_after = false;
    while (i < dn) {
        if (d[i] == '.') { last_dot = i; dash_after = false; i++; continue; }
        if (d[i] == '-') { dash_after = true; i++; continue; }
        if (!word_at(d, dn, &i))
            return false;
    }
    return last_dot >= 1 && last_dot + 1 < dn && !dash_after;
}

static size_t count_sub(const char *s, size_t n, const char *t)
{
    size_t k = strlen(t), c = 0;
    for (size_t i = 0; i + k <= n;)
        if (memcmp(s + i, t, k) == 0) { c++; i += k; } else i++;
    return c;
}

/* Python's order of two str (UTF-8 bytes compare as code points) */
static int rel_word_cmp(const void *x, const void *y)
{
    const tpl_value *p = x, *q = y;
    size_t m = p->len < q->len ? p->len : q->len;
    int c = memcmp(p->u.s, q->u.s, m);
    return c ? c : (p->len > q->len) - (p->len < q->len);
}

int f_urlize(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_arena *ar = AR(vm);
    tpl_value text;
    if (escape_value(vm, a[0], false, &text) < 0)
        return -1;
    /* trim_url_limit is read only where an http URL is linked (utils.urlize's trim_url):
     * len(url) > limit, then url[:limit] */
    tpl_value lim = tpl_given(a[1]) ? a[1] : tpl_v_none();
    int nofollow = tpl_arg_truthy(vm, a[2], false);
    if (nofollow < 0)
        return -1;
    /* rel: sorted set of the words of `(rel or "").split()`, "nofollow", and the policy's
     * "noopener" (a truthy rel other than a str has no split: AttributeError) */
    tpl_value relv = tpl_v_str("", 0), targetv = tpl_v_none();
    if (tpl_given(a[4])) {
        int t = tpl_arg_truthy(vm, a[4], false);
        if (t < 0)
            return -1;
        if (t && a[4].type != TPL_T_STR)
            return tpl_vm_fail(vm, TPL_EK_ATTRIBUTE, "'%s' object has no attribute 'split'", tpl_type_name(vm, a[4]));
        if (t)
            relv = a[4];
    }
    if (tpl_given(a[3]) && a[3].type != TPL_T_NONE)
        targetv = a[3];
    size_t maxp = relv.len / 2 + 3; /* words of rel (each with a separator but the last), and two */
    tpl_value *parts = tpl_arena_alloc(ar, maxp * sizeof *parts);
    if (!parts)
        return OOM();
    int np = 0;
    for (size_t i = 0; i < relv.len;) {
        size_t nx;
        if (is_ws_cp(relv.u.s, relv.len, i, &nx)) { i = nx; continue; }
        size_t j = i;
        while (j < relv.len && !is_ws_cp(relv.u.s, relv.len, j, &nx))
            j = nx;
        parts[np++] = tpl_v_str(relv.u.s + i, j - i);
        i = j;
    }
    if (nofollow)
        parts[np++] = tpl_v_str("nofollow", 8);
    parts[np++] = tpl_v_str("noopener", 8);
    qsort(parts, (size_t)np, sizeof *parts, rel_word_cmp); /* then drop duplicates */
    tpl_sb attrs;
    tpl_sb_init(&attrs, ar);
    tpl_sb_puts(&attrs, " rel=\"");
    tpl_sb rel;
    tpl_sb_init(&rel, ar);
    for (int x = 0; x < np; x++) {
        if (x && parts[x].len == parts[x - 1].len && memcmp(parts[x].u.s, parts[x - 1].u.s, parts[x].len) == 0)
            continue;
        if (rel.len)
            tpl_sb_putc(&rel, ' ');
        tpl_sb_put(&rel, parts[x].u.s, parts[x].len);
    }
    tpl_html_escape(&attrs, rel.p ? rel.p : "", rel.len);
    tpl_sb_putc(&attrs, '"');
    int target_set = tpl_arg_truthy(vm, targetv, false); /* (utils.urlize: `if target`: 0, [] and {} add none) */
    if (target_set < 0)
        return -1;
    if (target_set) {
        tpl_value t;
        if (tpl_to_str(vm, targetv, &t) < 0)
            return -1;
        if (t.len) {
            tpl_sb_puts(&attrs, " target=\"");
            tpl_html_escape(&attrs, t.u.s, t.len);
            tpl_sb_putc(&attrs, '"');
        }
    }
    tpl_list *schemes = NULL;
    if (tpl_given(a[5]) && a[5].type != TPL_T_NONE) {
        if (tpl_iter_list(vm, a[5], &schemes) < 0)
            return -1;
        for (uint32_t k = 0; k < schemes->len; k++) {
            tpl_value sc = schemes->items[k];
            if (sc.type != TPL_T_STR) /* (_uri_scheme_re.fullmatch of it) */
                return tpl_vm_error(vm, TPL_ERR_TYPE, "expected string or bytes-like object, got '%s'", tpl_type_name(vm, sc));
            bool ok = true;
            size_t i = 0, cnt = 0;
            while (ok && i < sc.len && sc.u.s[i] != ':') {
                size_t j = i;
                if (sc.u.s[i] == '.' || sc.u.s[i] == '+' || sc.u.s[i] == '-') j++;
                else if (!word_at(sc.u.s, sc.len, &j)) ok = false;
                i = j;
                cnt++;
            }
            if (ok) {
                ok = cnt >= 2 && i < sc.len;
                i++;
                size_t slashes = 0;
                while (ok && i < sc.len && sc.u.s[i] == '/') { i++; slashes++; }
                ok = ok && i == sc.len && slashes <= 2;
            }
            if (!ok) {
                tpl_sb rb;
                tpl_sb_init(&rb, ar);
                tpl_py_repr(&rb, sc);
                return tpl_vm_fail(vm, TPL_EK_FILTER_ARGUMENT, "%.*s is not a valid URI scheme prefix.", (int)rb.len,
                                   rb.p ? rb.p : "");
            }
        }
    }
    const char *s = text.u.s;
    size_t n = text.len, i = 0;
    tpl_sb b;
    tpl_sb_init(&b, ar);
    while (i < n) {
        size_t nx, j = i;
        if (is_ws_cp(s, n, i, &nx)) {
            while (j < n && is_ws_cp(s, n, j, &nx))
                j = nx;
            tpl_sb_put(&b, s + i, j - i);
            i = j;
            continue;
        }
        while (j < n && !is_ws_cp(s, n, j, &nx))
            j = nx;
        const char *w = s + i;
        size_t wn = j - i;
        i = j;
        /* head: ^([(<]|&lt;)+ */
        size_t h = 0;
        for (;;) {
            if (h < wn && (w[h] == '(' || w[h] == '<')) h++;
            else if (wn - h >= 4 && memcmp(w + h, "&lt;", 4) == 0) h += 4;
            else break;
        }
        /* tail: ([)>.,\n]|&gt;)+$ */
        size_t t = wn;
        while (t > h) {
            char c = w[t - 1];
            if (c == ')' || c == '>' || c == '.' || c == ',' || c == '\n') t--;
            else if (t - h >= 4 && memcmp(w + t - 4, "&gt;", 4) == 0) t -= 4;
            else break;
        }
        /* middle = w[h..m), tail = w[m..wn); balance brackets by moving tail text back */
        size_t m = t;
        static const char *const pairs[3][2] = {{"(", ")"}, {"<", ">"}, {"&lt;", "&gt;"}};
        for (int p = 0; p < 3; p++) {
            size_t sc = count_sub(w + h, m - h, pairs[p][0]);
            if (sc <= count_sub(w + h, m - h, pairs[p][1]))
                continue;
            size_t moves = count_sub(w + m, wn - m, pairs[p][1]);
            if (moves > sc)
                moves = sc;
            const char *ec = pairs[p][1];
            size_t el = strlen(ec);
            for (size_t k = 0; k < moves; k++) {
                const char *q = NULL;
                for (size_t x = m; x + el <= wn; x++)
                    if (memcmp(w + x, ec, el) == 0) { q = w + x; break; }
                if (!q)
                    break;
                m = (size_t)(q - w) + el;
            }
        }
        const char *mid = w + h;
        size_t mn = m - h;
        tpl_sb_put(&b, w, h);
        bool linked = true;
        if (http_match(mid, mn)) {
            bool has_scheme = (mn >= 8 && memcmp(mid, "https://", 8) == 0) || (mn >= 7 && memcmp(mid, "http://", 7) == 0);
            tpl_sb_puts(&b, has_scheme ? "<a href=\"" : "<a href=\"https://");
            tpl_sb_put(&b, mid, mn);
            tpl_sb_putc(&b, '"');
            tpl_sb_put(&b, attrs.p, attrs.len);
            tpl_sb_putc(&b, '>');
            int64_t ml = (int64_t)tpl_utf8_len(mid, mn), limit = 0;
            bool trim = false;
            if (lim.type == TPL_T_FLOAT) {
                if ((double)ml > lim.u.f)
                    return tpl_vm_error(vm, TPL_ERR_TYPE, "slice indices must be integers or None or have an __index__ method");
            } else if (lim.type == TPL_T_INT || lim.type == TPL_T_BOOL || lim.type == TPL_T_BIGINT) {
                if (tpl_arg_index_sat(vm, lim, &limit) < 0)
                    return -1;
                trim = ml > limit;
            } else if (lim.type == TPL_T_UNDEF) {
                return tpl_undefined_error(vm, lim);
            } else if (lim.type != TPL_T_NONE) {
                return tpl_vm_error(vm, TPL_ERR_TYPE, "'>' not supported between instances of 'int' and '%s'", tpl_type_name(vm, lim));
            }
            if (trim) { /* (x[:limit]: a negative limit counts from the end) */
                int64_t keep = limit < 0 ? (ml + limit > 0 ? ml + limit : 0) : limit;
                tpl_sb_put(&b, mid, tpl_utf8_offset(mid, mn, (size_t)keep));
                tpl_sb_puts(&b, "...");
            } else {
                tpl_sb_put(&b, mid, mn);
            }
            tpl_sb_puts(&b, "</a>");
        } else if (mn > 7 && memcmp(mid, "mailto:", 7) == 0 && email_match(mid + 7, mn - 7)) {
            tpl_sb_puts(&b, "<a href=\"");
            tpl_sb_put(&b, mid, mn);
            tpl_sb_puts(&b, "\">");
            tpl_sb_put(&b, mid + 7, mn - 7);
            tpl_sb_puts(&b, "</a>");
        } else if (memchr(mid, '@', mn) && !(mn >= 4 && memcmp(mid, "www.", 4) == 0) && mid[0] != '@' &&
                   !memchr(mid, ':', mn) && email_match(mid, mn)) {
            tpl_sb_puts(&b, "<a href=\"mailto:");
            tpl_sb_put(&b, mid, mn);
            tpl_sb_puts(&b, "\">");
            tpl_sb_put(&b, mid, mn);
            tpl_sb_puts(&b, "</a>");
        } else {
            linked = false;
            if (schemes) {
                for (uint32_t k = 0; k < schemes->len; k++) {
                    tpl_value sc = schemes->items[k];
                    if (mn > sc.len && memcmp(mid, sc.u.s, sc.len) == 0) {
                        tpl_sb_puts(&b, "<a href=\"");
                        tpl_sb_put(&b, mid, mn);
                        tpl_sb_putc(&b, '"');
                        tpl_sb_put(&b, attrs.p, attrs.len);
                        tpl_sb_putc(&b, '>');
                        tpl_sb_put(&b, mid, mn);
                        tpl_sb_puts(&b, "</a>");
                        linked = true;
                        break;
                    }
                }
            }
        }
        if (!linked)
            tpl_sb_put(&b, mid, mn);
        tpl_sb_put(&b, w + m, wn - m);
    }
    return sb_done(vm, &b, out);
}
