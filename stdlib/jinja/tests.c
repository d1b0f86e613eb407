/* Jinja2's builtin tests (jinja2/tests.py). Every test returns a bool value. */
#include "../builtins.h"
#include "../../runtime/host.h"

#include <math.h>
#include <string.h>

#define RET(b) do { *out = tpl_v_bool(b); return 0; } while (0)

int t_defined(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    RET(a[0].type != TPL_T_UNDEF && a[0].type != TPL_T_UNSET);
}

int t_undefined(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    RET(a[0].type == TPL_T_UNDEF || a[0].type == TPL_T_UNSET);
}

int t_none(tpl_vm *vm, tpl_value *a, tpl_value *out) { RET(a[0].type == TPL_T_NONE); }
int t_boolean(tpl_vm *vm, tpl_value *a, tpl_value *out) { RET(a[0].type == TPL_T_BOOL); }
int t_false(tpl_vm *vm, tpl_value *a, tpl_value *out) { RET(a[0].type == TPL_T_BOOL && !a[0].u.i); }
int t_true(tpl_vm *vm, tpl_value *a, tpl_value *out) { RET(a[0].type == TPL_T_BOOL && a[0].u.i); }
/* (a host object: as its type_of says, Python's int subclass, float subclass, numbers.Number) */
int t_integer(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    RET(a[0].type == TPL_T_INT || a[0].type == TPL_T_BIGINT || (tpl_hobj_numeric(a[0]) & TPL_HOST_INTEGER));
}
int t_float(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    RET(a[0].type == TPL_T_FLOAT || (tpl_hobj_numeric(a[0]) & TPL_HOST_FLOAT));
}
int t_number(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    RET(tpl_is_num(a[0]) || a[0].type == TPL_T_BIGINT || (tpl_hobj_numeric(a[0]) & TPL_HOST_NUMBER));
}
int t_string(tpl_vm *vm, tpl_value *a, tpl_value *out) { RET(a[0].type == TPL_T_STR); }
int t_escaped(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    RET(a[0].type == TPL_T_STR && (a[0].flags & TPL_F_SAFE));
}

/* The abstract types of a value's types.def row (TPL_TYF_*). */
static bool is_kind(const tpl_vm *vm, tpl_value v, unsigned flag)
{
    return (tpl_types[tpl_value_vtype(v, tpl_vm_strict_undef(vm, v))].flags & flag) != 0;
}

/* isinstance(value, abc.Mapping): dicts, not namespace() objects. */
int t_mapping(tpl_vm *vm, tpl_value *a, tpl_value *out) { RET(is_kind(vm, a[0], TPL_TYF_MAPPING)); }

/* len(value) and value.__getitem__ both work: not dict views (no __getitem__) nor iterators (no
 * len()). Jinja2's lenient Undefined has both (len 0); StrictUndefined fails len(), so the test is
 * false. */
int t_sequence(tpl_vm *vm, tpl_value *a, tpl_value *out) { RET(is_kind(vm, a[0], TPL_TYF_SEQUENCE)); }

/* iter(value) works. StrictUndefined's __iter__ raises UndefinedError (not TypeError). */
int t_iterable(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (tpl_vm_strict_undef(vm, a[0]))
        return tpl_undefined_error(vm, a[0]);
    RET(is_kind(vm, a[0], TPL_TYF_ITERABLE));
}

/* callable(value): functions, macros, bound methods; Undefined and the loop object define
 * __call__ too; a host object when its class says so (TPL_HOST_CALLABLE). */
int t_callable(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    RET(is_kind(vm, a[0], TPL_TYF_CALLABLE) || (tpl_hobj_numeric(a[0]) & TPL_HOST_CALLABLE));
}

/* A str of one character below U+0100: CPython's shared one-character strings. */
static bool latin1_char(tpl_value x)
{
    return (x.len == 1 && (unsigned char)x.u.s[0] < 0x80) || (x.len == 2 && ((unsigned char)x.u.s[0] & 0xFE) == 0xC2);
}

/* `value is other`. None/True/False are singletons; CPython caches the ints -5..256 (other ints
 * and floats are distinct objects, but equal constants of the template are one: TPL_F_LIT); strings and containers compare by storage identity, and
 * equal one-character Latin-1 strings of the state (json made them, or indexing, slicing,
 * strip, split of one: CPython's shared single-character objects) are the same object, while
 * template literals and strings made by ~, lower, upper, format, replace are new objects. tpl
 * tells them apart by where the bytes are: the state's values (and views into them) or not. */
int t_sameas(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value x = a[0], y = a[1];
    if (x.type != y.type)
        RET(false);
    switch (x.type) {
    case TPL_T_NONE: case TPL_T_UNSET: RET(true);
    case TPL_T_BOOL: RET(x.u.i == y.u.i);
    case TPL_T_INT:
    case TPL_T_BIGINT:
    case TPL_T_FLOAT:
        /* equal ints outside -5..256 and equal floats are one object or two depending on where
         * CPython made them (one variable read twice, literals the compiler merged: the same;
         * two state keys, two results: not), which tpl does not follow */
        if (x.type == TPL_T_INT && (x.u.i != y.u.i || (x.u.i >= -5 && x.u.i <= 256))) RET(x.u.i == y.u.i);
        /* (two NaNs are one object or two, as equal floats are; 0.0 and -0.0 never one) */
        if (x.type == TPL_T_BIGINT ? x.len != y.len || memcmp(x.u.s, y.u.s, x.len) != 0
                                   : x.type == TPL_T_FLOAT && (isnan(x.u.f) != isnan(y.u.f) ||
                                                               (!isnan(x.u.f) && (!(x.u.f == y.u.f) || signbit(x.u.f) != signbit(y.u.f)))))
            RET(false);
        /* two constants of the template's code: one object (CPython merges a module's equal
         * constants). A number made at render time may be one Jinja2's optimizer would have
         * made a constant (`'300'|int`, `1 / 3`), so a constant and another number stay unknown */
        if ((x.flags & TPL_F_LIT) && (y.flags & TPL_F_LIT))
            RET(true);
        return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported: `is sameas` of two equal %s (CPython's answer depends on "
                            "where each object was made, which tpl does not follow)",
                            x.type == TPL_T_FLOAT ? "floats" : "ints outside -5..256");
    case TPL_T_STR: /* a Markup object is never the str it was made from */
        if ((x.flags & TPL_F_SAFE) != (y.flags & TPL_F_SAFE) || x.len != y.len) RET(false);
        if (x.u.s == y.u.s || x.len == 0) RET(true);
        RET(!(x.flags & TPL_F_SAFE) && latin1_char(x) && memcmp(x.u.s, y.u.s, x.len) == 0 &&
            tpl_vm_state_owns(vm, x.u.s) && tpl_vm_state_owns(vm, y.u.s));
    case TPL_T_UNDEF: /* one Undefined object: a variable assigned from another (its name copied where it was made) */
        RET(x.u.s == y.u.s && x.len == y.len && x.aux == y.aux && x.flags == y.flags && x.len &&
            tpl_arena_owns(tpl_vm_arena(vm), x.u.s));
    default: RET(x.u.p == y.u.p && x.aux == y.aux);
    }
}

/* str(value).islower() / isupper(). */
static int case_test(tpl_vm *vm, tpl_value v, bool want_lower, tpl_value *out)
{
    tpl_value s;
    if (tpl_to_str(vm, v, &s) < 0)
        return -1;
    bool cased = false;
    size_t i = 0;
    while (i < s.len) {
        uint32_t c = tpl_utf8_next(s.u.s, s.len, &i);
        bool up = tpl_uc_isupper(c), lo = tpl_uc_islower(c), ti = tpl_uc_istitle(c);
        if (want_lower) {
            if (up || ti) RET(false);
            if (lo) cased = true;
        } else {
            if (lo || ti) RET(false);
            if (up) cased = true;
        }
    }
    RET(cased);
}

int t_lower(tpl_vm *vm, tpl_value *a, tpl_value *out) { return case_test(vm, a[0], true, out); }
int t_upper(tpl_vm *vm, tpl_value *a, tpl_value *out) { return case_test(vm, a[0], false, out); }

/* value % num for the numeric tests, with Python's floor modulo. r is an int or a float. */
static int py_mod(tpl_vm *vm, tpl_value x, tpl_value y, tpl_value *r)
{
    if (x.type == TPL_T_UNDEF)
        return tpl_undefined_error(vm, x);
    if (x.type == TPL_T_STR) /* (str % y formats: 'abc' % [1] is 'abc', a list is a mapping) */
        return tpl_str_mod(vm, x, y, r);
    if (y.type == TPL_T_UNDEF)
        return tpl_undefined_error(vm, y);
    if ((x.type == TPL_T_BIGINT || y.type == TPL_T_BIGINT) && (tpl_is_num(x) || x.type == TPL_T_BIGINT) &&
        (tpl_is_num(y) || y.type == TPL_T_BIGINT))
        return tpl_big_binop(vm, TPL_OP_MOD, x, y, r);
    if (!tpl_is_num(x) || !tpl_is_num(y)) {
        int h = tpl_hobj_arith(vm, "%", x, y, r); /* the host's own numbers (a Decimal) */
        if (h <= 0)
            return h;
        return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported operand type(s) for %%: '%s' and '%s'",
                            tpl_type_name(vm, x), tpl_type_name(vm, y));
    }
    if (x.type != TPL_T_FLOAT && y.type != TPL_T_FLOAT) {
        if (y.u.i == 0)
            return tpl_vm_fail(vm, TPL_EK_ZERO_DIVISION, "integer modulo by zero");
        if (y.u.i == -1) {
            *r = tpl_v_int(0);
            return 0;
        }
        int64_t m = x.u.i % y.u.i;
        if (m != 0 && ((m < 0) != (y.u.i < 0)))
            m += y.u.i;
        *r = tpl_v_int(m);
        return 0;
    }
    double fx = x.type == TPL_T_FLOAT ? x.u.f : (double)x.u.i;
    double fy = y.type == TPL_T_FLOAT ? y.u.f : (double)y.u.i;
    if (fy == 0)
        return tpl_vm_fail(vm, TPL_EK_ZERO_DIVISION, "float modulo");
    double m = fmod(fx, fy);
    if (m != 0) {
        if ((fy < 0) != (m < 0))
            m += fy;
    } else {
        m = copysign(0.0, fy);
    }
    *r = tpl_v_float(m);
    return 0;
}

static bool num_is(tpl_value r, int64_t want)
{
    if (r.type == TPL_T_STR) return false; /* (a formatted str is no number) */
    return r.type == TPL_T_FLOAT ? r.u.f == (double)want : r.u.i == want;
}

/* value % num == k (r: value % num): a host number's remainder (a Decimal) compared by the host */
static int mod_is(tpl_vm *vm, tpl_value r, int64_t k, tpl_value *out)
{
    if (r.type == TPL_T_HOST) {
        bool eq = false;
        if (tpl_vm_equal(vm, r, tpl_v_int(k), &eq) < 0)
            return -1;
        RET(eq);
    }
    RET(num_is(r, k));
}

int t_odd(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value r = { 0 };
    if (py_mod(vm, a[0], tpl_v_int(2), &r) < 0)
        return -1;
    return mod_is(vm, r, 1, out);
}

int t_even(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value r = { 0 };
    if (py_mod(vm, a[0], tpl_v_int(2), &r) < 0)
        return -1;
    return mod_is(vm, r, 0, out);
}

int t_divisibleby(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value r = { 0 };
    if (py_mod(vm, a[0], a[1], &r) < 0)
        return -1;
    return mod_is(vm, r, 0, out);
}

/* ---- comparisons (operator.eq & co.) */

/* The StrictUndefined operand's error (x's if both are; an inline if's undefined is lenient). */
static int undef_operand(tpl_vm *vm, tpl_value x, tpl_value y)
{
    return tpl_undefined_error(vm, tpl_vm_strict_undef(vm, x) ? x : y);
}

/* Jinja2's comparison tests are operator.eq & co.: with a host object on either side, the host's
 * own result of a op b (Python's rich comparison: a numpy-like __eq__'s array, printed as itself,
 * its truth for select/if), 0 with *out; 1 when the host does not answer (no arith hook, an
 * undefined operand). */
static int host_test(tpl_vm *vm, const char *op, tpl_value *a, tpl_value *out)
{
    if (__builtin_expect(a[0].type != TPL_T_HOST && a[1].type != TPL_T_HOST, 1))
        return 1;
    return tpl_hobj_richcompare(vm, op, a[0], a[1], out);
}

int t_eq(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (tpl_vm_strict_undef(vm, a[0]) || tpl_vm_strict_undef(vm, a[1]))
        return undef_operand(vm, a[0], a[1]);
    int h = host_test(vm, "==", a, out);
    if (h <= 0)
        return h;
    bool eq = false;
    if (tpl_vm_equal(vm, a[0], a[1], &eq) < 0)
        return -1;
    RET(eq);
}

int t_ne(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (tpl_vm_strict_undef(vm, a[0]) || tpl_vm_strict_undef(vm, a[1]))
        return undef_operand(vm, a[0], a[1]);
    int h = host_test(vm, "!=", a, out);
    if (h <= 0)
        return h;
    bool eq = false;
    if (tpl_vm_equal(vm, a[0], a[1], &eq) < 0)
        return -1;
    RET(!eq);
}

/* NaN compares false both ways: tpl_compare can't say "unordered", so check floats here. */
static bool has_nan(tpl_value x, tpl_value y)
{
    return (x.type == TPL_T_FLOAT && isnan(x.u.f)) || (y.type == TPL_T_FLOAT && isnan(y.u.f));
}

int t_lt(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    int c, h = host_test(vm, "<", a, out);
    if (h <= 0)
        return h;
    if (tpl_compare_op(vm, a[0], a[1], "<", &c) < 0) return -1;
    RET(!has_nan(a[0], a[1]) && c < 0);
}

int t_le(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    int c, h = host_test(vm, "<=", a, out);
    if (h <= 0)
        return h;
    if (tpl_compare_op(vm, a[0], a[1], "<=", &c) < 0) return -1;
    RET(!has_nan(a[0], a[1]) && c <= 0);
}

int t_gt(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    int c, h = host_test(vm, ">", a, out);
    if (h <= 0)
        return h;
    if (tpl_compare_op(vm, a[0], a[1], ">", &c) < 0) return -1;
    RET(!has_nan(a[0], a[1]) && c > 0);
}

int t_ge(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    int c, h = host_test(vm, ">=", a, out);
    if (h <= 0)
        return h;
    if (tpl_compare_op(vm, a[0], a[1], ">=", &c) < 0) return -1;
    RET(!has_nan(a[0], a[1]) && c >= 0);
}

int tpl_contains(tpl_vm *vm, tpl_value item, tpl_value seq, bool *res)
{
    /* (str.__contains__ takes only a str: an Undefined, strict too, is its TypeError) */
    if (tpl_vm_strict_undef(vm, item) && seq.type != TPL_T_UNDEF && seq.type != TPL_T_STR)
        return tpl_undefined_error(vm, item);
    switch (seq.type) {
    case TPL_T_STR:
        if (item.type != TPL_T_STR)
            return tpl_vm_error(vm, TPL_ERR_TYPE, "'in <string>' requires string as left operand, not %s",
                                tpl_type_name(vm, item));
        *res = tpl_bytes_contain(seq.u.s, seq.len, item.u.s, item.len);
        return 0;
    case TPL_T_LIST:
        if (seq.flags & TPL_F_RANGE_BIG) { /* a range held without its items: arithmetic */
            mpz_t at;
            mpz_init(at);
            *res = tpl_range_find(seq, item, at);
            mpz_clear(at);
            return 0;
        }
        for (uint32_t i = 0; i < seq.u.list->len; i++) {
            bool eq = false;
            if (tpl_vm_item_equal(vm, seq.u.list->items[i], item, &eq) < 0)
                return -1;
            if (eq) {
                *res = true;
                return 0;
            }
        }
        *res = false;
        return 0;
    case TPL_T_MAP:
        if (tpl_vm_check_hashable(vm, item) < 0)
            return -1;
        tpl_value *hit;
        if (tpl_vm_map_get(vm, seq.u.map, item, &hit) < 0)
            return -1;
        *res = hit != NULL;
        return 0;
    case TPL_T_UNDEF:
        if (tpl_vm_strict_undef(vm, seq))
            return tpl_undefined_error(vm, seq);
        *res = false;
        return 0;
    default:
        return tpl_vm_error(vm, TPL_ERR_TYPE, "argument of type '%s' is not iterable",
                            tpl_type_name(vm, seq));
    }
}

int t_in(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    bool r = false;
    if (tpl_is_iter(a[1])) { /* Python's `in`: the iterator is taken from up to the first equal item */
        if (tpl_vm_contains(vm, a[0], a[1], &r) < 0)
            return -1;
        RET(r);
    }
    if (tpl_contains(vm, a[0], a[1], &r) < 0)
        return -1;
    RET(r);
}

/* ---- tests not in builtins.def yet (see builtins.h) */

static int name_test(tpl_vm *vm, tpl_value v, tpl_builtin_kind kind, tpl_value *out)
{
    if (tpl_vm_check_hashable(vm, v) < 0)
        return -1;
    int id = v.type == TPL_T_STR ? tpl_builtin_find(kind, v.u.s, v.len) : -1;
    if (id >= 0 && kind == TPL_BK_FILTER) id = tpl_builtin_filter_variant(id, false, false); /* not "join (autoescape)" */
    RET(id >= 0);
}

/* `value in env.filters` / `value in env.tests` (the builtin tables). */
int t_filter(tpl_vm *vm, tpl_value *a, tpl_value *out) { return name_test(vm, a[0], TPL_BK_FILTER, out); }
int t_test(tpl_vm *vm, tpl_value *a, tpl_value *out) { return name_test(vm, a[0], TPL_BK_TEST, out); }
