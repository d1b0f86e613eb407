/* Unbounded integers over GMP (bigint.h). */
#include <limits.h>
#include <math.h>
#include <stdlib.h>

#include "bigint.h"

_Static_assert(sizeof(long) == 8, "GMP's si functions take int64 (LP64)");

const char tpl_big_str_limit[] = "int";

void tpl_big_get(mpz_t z, tpl_value v)
{
    if (v.type == TPL_T_BIGINT) {
        /* the text is canonical decimal; mpz_set_str needs it NUL-terminated */
        char buf[64], *p = v.len < sizeof buf ? buf : malloc((size_t)v.len + 1);
        mpz_init(z);
        if (!p) return; /* heap exhausted: 0 (the arena's copy is the one that counts) */
        memcpy(p, v.u.s, v.len);
        p[v.len] = 0;
        mpz_set_str(z, p, 10);
        if (p != buf) free(p);
        return;
    }
    mpz_init_set_si(z, (long)v.u.i);
}

void tpl_range_len(mpz_t z, const tpl_value *p)
{
    /* ceil((stop - start) / step) when that is positive, else 0 */
    mpz_t d;
    tpl_big_get(z, p[1]);
    tpl_big_get(d, p[0]);
    mpz_sub(z, z, d);
    mpz_clear(d);
    tpl_big_get(d, p[2]);
    if (mpz_sgn(z) != 0 && mpz_sgn(z) == mpz_sgn(d)) {
        mpz_abs(z, z);
        mpz_abs(d, d);
        mpz_cdiv_q(z, z, d);
    } else {
        mpz_set_ui(z, 0);
    }
    mpz_clear(d);
}

bool tpl_range_find(tpl_value r, tpl_value x, mpz_t at)
{
    mpz_t z, d;
    if (tpl_is_intlike(x)) tpl_big_get(z, x);
    else if (x.type == TPL_T_FLOAT && isfinite(x.u.f) && x.u.f == floor(x.u.f)) mpz_init_set_d(z, x.u.f);
    else return false; /* Python compares each item: no float with a fraction, no other type equals an int */
    const tpl_value *p = tpl_range_params(r);
    tpl_big_get(d, p[0]);
    mpz_sub(z, z, d); /* x - start */
    mpz_clear(d);
    tpl_big_get(d, p[2]);
    bool ok = mpz_divisible_p(z, d);
    if (ok) {
        mpz_divexact(z, z, d); /* its index, when it is below the length */
        mpz_t n;
        tpl_range_len(n, p);
        ok = mpz_sgn(z) >= 0 && mpz_cmp(z, n) < 0;
        mpz_clear(n);
        if (ok) mpz_set(at, z);
    }
    mpz_clear(z);
    mpz_clear(d);
    return ok;
}

bool tpl_big_value(tpl_arena *a, const mpz_t z, tpl_value *out)
{
    if (mpz_fits_slong_p(z)) {
        *out = tpl_v_int((int64_t)mpz_get_si(z));
        return true;
    }
    if (mpz_sizeinbase(z, 2) > TPL_BIG_MAX_BITS) return false;
    size_t cap = mpz_sizeinbase(z, 10) + 2;
    char *p = tpl_arena_alloc(a, cap);
    if (!p) return false;
    mpz_get_str(p, 10, z);
    tpl_value v = {0};
    v.type = TPL_T_BIGINT;
    v.len = (uint32_t)strlen(p);
    v.u.s = p;
    *out = v;
    return true;
}

bool tpl_big_parse(tpl_arena *a, const char *s, size_t n, int base, tpl_value *out)
{
    if (n == 0 || n > (size_t)TPL_BIG_MAX_BITS || base < 2 || base > 36) return false;
    char *p = malloc(n + 1);
    if (!p) return false;
    memcpy(p, s, n);
    p[n] = 0;
    const char *d = p + (p[0] == '-' || p[0] == '+');
    bool ok = *d != 0;
    for (const char *c = d; ok && *c; c++) {
        int k = *c >= '0' && *c <= '9' ? *c - '0' : *c >= 'a' && *c <= 'z' ? *c - 'a' + 10
              : *c >= 'A' && *c <= 'Z' ? *c - 'A' + 10 : 99;
        ok = k < base;
    }
    mpz_t z;
    mpz_init(z);
    ok = ok && mpz_set_str(z, d, base) == 0;
    if (ok && p[0] == '-') mpz_neg(z, z);
    free(p);
    ok = ok && tpl_big_value(a, z, out);
    mpz_clear(z);
    return ok;
}

/* z's nearest double, ties to even: the top 64 bits with a sticky bit for the rest, converted by
 * the hardware's rounding, then scaled (mpz_get_d truncates). */
static bool mpz_to_double(const mpz_t z, double *d)
{
    size_t n = mpz_sizeinbase(z, 2);
    double r;
    if (mpz_sgn(z) == 0) r = 0.0;
    else if (n <= 64) {
        mpz_t t;
        mpz_init(t);
        mpz_abs(t, z);
        r = (double)(uint64_t)mpz_getlimbn(t, 0);
        mpz_clear(t);
    } else {
        mpz_t t;
        mpz_init(t);
        mpz_abs(t, z);
        bool sticky = mpz_scan1(t, 0) < n - 64;
        mpz_tdiv_q_2exp(t, t, n - 64);
        uint64_t top = (uint64_t)mpz_getlimbn(t, 0) | (sticky ? 1u : 0u);
        mpz_clear(t);
        r = n - 64 > 2000 ? HUGE_VAL : ldexp((double)top, (int)(n - 64));
    }
    if (mpz_sgn(z) < 0) r = -r;
    *d = r;
    return isfinite(r);
}

bool tpl_big_to_double(tpl_value v, double *d)
{
    if (v.type != TPL_T_BIGINT) { *d = (double)v.u.i; return true; }
    mpz_t z;
    tpl_big_get(z, v);
    bool ok = mpz_to_double(z, d);
    mpz_clear(z);
    return ok;
}

int tpl_big_cmp(tpl_value a, tpl_value b)
{
    if (a.type == TPL_T_FLOAT && isnan(a.u.f)) return 2;
    if (b.type == TPL_T_FLOAT && isnan(b.u.f)) return 2;
    if (a.type == TPL_T_BIGINT && b.type == TPL_T_BIGINT) {
        bool na = a.u.s[0] == '-', nb = b.u.s[0] == '-';
        if (na != nb) return na ? -1 : 1;
        int c = a.len != b.len ? (a.len < b.len ? -1 : 1) : memcmp(a.u.s, b.u.s, a.len);
        c = c < 0 ? -1 : c > 0;
        return na ? -c : c;
    }
    if (b.type == TPL_T_BIGINT) {
        int c = tpl_big_cmp(b, a);
        return c == 2 ? 2 : -c;
    }
    /* a is big, b an int64 or a float */
    if (b.type != TPL_T_FLOAT) return a.u.s[0] == '-' ? -1 : 1;
    mpz_t z;
    tpl_big_get(z, a);
    int c = mpz_cmp_d(z, b.u.f);
    mpz_clear(z);
    return c < 0 ? -1 : c > 0;
}

uint64_t tpl_big_hash(tpl_value v, uint64_t (*float_hash)(double))
{
    double d;
    mpz_t z;
    tpl_big_get(z, v);
    bool same = mpz_to_double(z, &d) && mpz_cmp_d(z, d) == 0;
    mpz_clear(z);
    return same ? float_hash(d) : tpl_hash_str(v.u.s, v.len) ^ 0x6269676eu;
}

uint64_t tpl_big_cost(size_t limbs)
{
    uint64_t c = 1;
    for (size_t n = limbs; n > 1; n >>= 1) c++;
    return (uint64_t)limbs * c * 4 + 1;
}

static bool charge(tpl_vm *vm, size_t limbs)
{
    return tpl_fuel_charge(tpl_vm_arena(vm)->fuel, tpl_big_cost(limbs));
}

static int too_large(tpl_vm *vm)
{
    return tpl_vm_fail(vm, TPL_EK_MEMORY_LIMIT, "integer too large (more than %d bits)", TPL_BIG_MAX_BITS);
}

int tpl_big_result(tpl_vm *vm, mpz_t z, tpl_value *out)
{
    size_t bits = mpz_sizeinbase(z, 2);
    if (bits > TPL_BIG_MAX_BITS) { mpz_clear(z); return too_large(vm); }
    if (!charge(vm, mpz_size(z))) { mpz_clear(z); return tpl_vm_nomem(vm); }
    bool ok = tpl_big_value(tpl_vm_arena(vm), z, out);
    mpz_clear(z);
    return ok ? 0 : tpl_vm_nomem(vm);
}

int tpl_big_str_error(tpl_vm *vm)
{
    return tpl_vm_fail(vm, TPL_EK_VALUE, "Exceeds the limit (%d digits) for integer string conversion; "
                       "use sys.set_int_max_str_digits() to increase the limit", TPL_PY_INT_MAX_STR_DIGITS);
}

static int float_of(tpl_vm *vm, tpl_value v, double *d)
{
    if (v.type == TPL_T_FLOAT) { *d = v.u.f; return 0; }
    if (tpl_big_to_double(v, d)) return 0;
    return tpl_vm_fail(vm, TPL_EK_OVERFLOW, "int too large to convert to float");
}

/* |x| / |y| rounded once to a double: q = |x| * 2^shift / |y| (shift chosen so q has 55..57 bits),
 * its last bit sticky for a nonzero remainder, then scaled back by 2^-shift (CPython's true_divide
 * and Ruby's Rational#to_f round so). */
static double scaled_quotient(const mpz_t x, const mpz_t y, long shift)
{
    mpz_t a, b, q, r;
    mpz_inits(a, b, q, r, NULL);
    mpz_abs(a, x);
    mpz_abs(b, y);
    if (shift > 0) mpz_mul_2exp(a, a, (mp_bitcnt_t)shift);
    else if (shift < 0) mpz_mul_2exp(b, b, (mp_bitcnt_t)-shift);
    mpz_tdiv_qr(q, r, a, b);
    uint64_t top = (uint64_t)mpz_getlimbn(q, 0) | (mpz_sgn(r) ? 1u : 0u);
    mpz_clears(a, b, q, r, NULL);
    return ldexp((double)top, (int)-shift);
}

/* Python's int / int: the quotient correctly rounded (ties to even), as Python computes it. */
static int true_div(tpl_vm *vm, const mpz_t x, const mpz_t y, tpl_value *out)
{
    if (mpz_sgn(y) == 0) return tpl_vm_fail(vm, TPL_EK_ZERO_DIVISION, "division by zero");
    if (mpz_sgn(x) == 0) { *out = tpl_v_float(mpz_sgn(y) < 0 ? -0.0 : 0.0); return 0; }
    long na = (long)mpz_sizeinbase(x, 2), nb = (long)mpz_sizeinbase(y, 2);
    if (na - nb > 1030) return tpl_vm_fail(vm, TPL_EK_OVERFLOW, "integer division result too large for a float");
    if (nb - na > 1130) { *out = tpl_v_float((mpz_sgn(x) < 0) != (mpz_sgn(y) < 0) ? -0.0 : 0.0); return 0; }
    double d = scaled_quotient(x, y, 56 - (na - nb));
    if (!isfinite(d)) return tpl_vm_fail(vm, TPL_EK_OVERFLOW, "integer division result too large for a float");
    if ((mpz_sgn(x) < 0) != (mpz_sgn(y) < 0)) d = -d;
    *out = tpl_v_float(d);
    return 0;
}

int tpl_big_binop(tpl_vm *vm, int op, tpl_value a, tpl_value b, tpl_value *out)
{
    if (a.type == TPL_T_FLOAT || b.type == TPL_T_FLOAT) {
        /* mixed with a float: Python converts the int (OverflowError past DBL_MAX) */
        double x, y;
        if (float_of(vm, a, &x) < 0 || float_of(vm, b, &y) < 0) return -1;
        return tpl_vm_float_binop(vm, op, x, y, out);
    }
    mpz_t x, y, r;
    tpl_big_get(x, a);
    tpl_big_get(y, b);
    mpz_init(r);
    int rc = 0;
    size_t work = mpz_size(x) + mpz_size(y);
    switch (op) {
    case TPL_OP_ADD: mpz_add(r, x, y); break;
    case TPL_OP_SUB: mpz_sub(r, x, y); break;
    case TPL_OP_MUL:
        if (mpz_sizeinbase(x, 2) + mpz_sizeinbase(y, 2) > TPL_BIG_MAX_BITS + 1) { rc = too_large(vm); break; }
        mpz_mul(r, x, y);
        break;
    case TPL_OP_DIV_PY:
        rc = true_div(vm, x, y, out);
        mpz_clears(x, y, r, NULL);
        return rc < 0 || charge(vm, work) ? rc : tpl_vm_nomem(vm);
    case TPL_OP_DIV_RB: case TPL_OP_FLOORDIV:
        if (mpz_sgn(y) == 0) {
            rc = tpl_vm_fail(vm, TPL_EK_ZERO_DIVISION, op == TPL_OP_DIV_RB ? "divided by 0" : "integer division or modulo by zero");
            break;
        }
        mpz_fdiv_q(r, x, y);
        break;
    case TPL_OP_MOD:
        if (mpz_sgn(y) == 0) { rc = tpl_vm_fail(vm, TPL_EK_ZERO_DIVISION, "integer modulo by zero"); break; }
        mpz_fdiv_r(r, x, y);
        break;
    case TPL_OP_POW: {
        if (mpz_sgn(y) < 0) { /* a float, as Python */
            double fx, fy;
            mpz_clears(x, y, r, NULL);
            if (float_of(vm, a, &fx) < 0 || float_of(vm, b, &fy) < 0) return -1;
            if (fx == 0.0) return tpl_vm_fail(vm, TPL_EK_ZERO_DIVISION, "0.0 cannot be raised to a negative power");
            *out = tpl_v_float(pow(fx, fy));
            return 0;
        }
        if (mpz_cmpabs_ui(x, 1) <= 0) { /* 0, 1, -1: any exponent */
            if (mpz_sgn(x) == 0) mpz_set_ui(r, mpz_sgn(y) == 0);
            else if (mpz_sgn(x) > 0 || mpz_even_p(y)) mpz_set_ui(r, 1);
            else mpz_set_si(r, -1);
            break;
        }
        /* |x| >= 2: the result has more than (bits(x) - 1) * y bits; refuse before the work */
        if (!mpz_fits_ulong_p(y) || (double)(mpz_sizeinbase(x, 2) - 1) * mpz_get_d(y) > TPL_BIG_MAX_BITS) {
            rc = too_large(vm);
            break;
        }
        unsigned long e = mpz_get_ui(y);
        work += mpz_sizeinbase(x, 2) * e / 64;
        mpz_pow_ui(r, x, e);
        break;
    }
    default:
        rc = tpl_vm_error(vm, TPL_ERR_TYPE, "bad operator");
        break;
    }
    mpz_clears(x, y, NULL);
    if (rc < 0) { mpz_clear(r); return rc; }
    if (!charge(vm, work)) { mpz_clear(r); return tpl_vm_nomem(vm); }
    return tpl_big_result(vm, r, out);
}

int tpl_big_from_double(tpl_vm *vm, double d, tpl_value *out)
{
    if (!isfinite(d)) return tpl_vm_fail(vm, TPL_EK_OVERFLOW, "cannot convert float infinity to integer");
    mpz_t z;
    mpz_init_set_d(z, d);
    return tpl_big_result(vm, z, out);
}

int tpl_big_neg(tpl_vm *vm, tpl_value v, tpl_value *out)
{
    mpz_t z;
    tpl_big_get(z, v);
    mpz_neg(z, z);
    return tpl_big_result(vm, z, out);
}

int tpl_big_abs(tpl_vm *vm, tpl_value v, tpl_value *out)
{
    mpz_t z;
    tpl_big_get(z, v);
    mpz_abs(z, z);
    return tpl_big_result(vm, z, out);
}

/* ------------------------------------------------------------------ rationals */

void tpl_rat_get(mpq_t q, tpl_value v)
{
    mpq_init(q);
    if (v.type != TPL_T_RATIONAL) {
        mpz_t z;
        tpl_big_get(z, v);
        mpq_set_z(q, z);
        mpz_clear(z);
        return;
    }
    char buf[64], *p = v.len < sizeof buf ? buf : malloc((size_t)v.len + 1);
    if (!p) return; /* heap exhausted: 0 */
    memcpy(p, v.u.s, v.len);
    p[v.len] = 0;
    if (mpq_set_str(q, p, 10) != 0) mpq_set_ui(q, 0, 1);
    if (p != buf) free(p);
}

bool tpl_rat_value(tpl_arena *a, const mpq_t q, tpl_value *out)
{
    mpz_srcptr num = mpq_numref(q), den = mpq_denref(q);
    if (mpz_sizeinbase(num, 2) > TPL_BIG_MAX_BITS || mpz_sizeinbase(den, 2) > TPL_BIG_MAX_BITS) return false;
    size_t cap = mpz_sizeinbase(num, 10) + mpz_sizeinbase(den, 10) + 4;
    char *p = tpl_arena_alloc(a, cap);
    if (!p) return false;
    mpz_get_str(p, 10, num);
    size_t n = strlen(p);
    p[n++] = '/';
    mpz_get_str(p + n, 10, den);
    tpl_value v = {0};
    v.type = TPL_T_RATIONAL;
    v.len = (uint32_t)(n + strlen(p + n));
    v.u.s = p;
    *out = v;
    return true;
}

int tpl_rat_result(tpl_vm *vm, mpq_t q, tpl_value *out)
{
    mpq_canonicalize(q);
    if (mpz_sizeinbase(mpq_numref(q), 2) > TPL_BIG_MAX_BITS || mpz_sizeinbase(mpq_denref(q), 2) > TPL_BIG_MAX_BITS) {
        mpq_clear(q);
        return too_large(vm);
    }
    if (!charge(vm, mpz_size(mpq_numref(q)) + mpz_size(mpq_denref(q)))) { mpq_clear(q); return tpl_vm_nomem(vm); }
    bool ok = tpl_rat_value(tpl_vm_arena(vm), q, out);
    mpq_clear(q);
    return ok ? 0 : tpl_vm_nomem(vm);
}

double tpl_rat_double(const mpq_t q)
{
    mpz_srcptr x = mpq_numref(q), y = mpq_denref(q);
    if (mpz_sgn(x) == 0) return 0.0;
    long na = (long)mpz_sizeinbase(x, 2), nb = (long)mpz_sizeinbase(y, 2);
    bool neg = mpz_sgn(x) < 0;
    if (na - nb > 1030) return neg ? -HUGE_VAL : HUGE_VAL;
    if (nb - na > 1130) return neg ? -0.0 : 0.0;
    if (na <= 53 && nb <= 53) return mpz_get_d(x) / mpz_get_d(y); /* both exact: one rounding */
    /* as true_div: |x| * 2^shift / |y| with 55..57 bits, the last one sticky */
    double d = scaled_quotient(x, y, 56 - (na - nb));
    return neg ? -d : d;
}

double tpl_rat_to_double(tpl_value v)
{
    mpq_t q;
    tpl_rat_get(q, v);
    double d = tpl_rat_double(q);
    mpq_clear(q);
    return d;
}
