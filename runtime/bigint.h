/* Unbounded integers (issue 14): Python's and Ruby's int past int64.
 *
 * A TPL_T_BIGINT value holds an integer that does NOT fit in int64 (every result that fits is
 * normalised back to TPL_T_INT, so the int64 fast paths never see one and equality, hashing and
 * dict keys need no cross-kind rule): u.s is its canonical decimal text (an optional '-', no
 * leading zero), len its bytes. The text lives in an arena like a string's, so the constant pool,
 * .tplb files and --emit c carry it as they carry strings, and printing is a copy. Arithmetic
 * converts to GMP's mpz_t (Debian's libgmp), computes, and converts back; every step charges the
 * render's fuel in proportion to the limbs it touches, and a result past TPL_BIG_MAX_BITS is a
 * located TPL_EK_MEMORY_LIMIT error decided BEFORE the work (2**10**9 fails at once). */
#ifndef TPL_BIGINT_H
#define TPL_BIGINT_H

#include <gmp.h>
#include "vm.h"
#include "program.h" /* TPL_OP_* of tpl_big_binop */

/* The largest integer a render or the compiler builds: 2**20 bits (315,653 decimal digits). */
enum { TPL_BIG_MAX_BITS = 1 << 20 };
/* Python 3.11's sys.get_int_max_str_digits() default: str() of an int with more digits, and
 * int() of a text with more, raise ValueError (Ruby has no such limit). */
enum { TPL_PY_INT_MAX_STR_DIGITS = 4300 };
/* The most digits of a state JSON integer tpl reads: every integer of 315,652 digits is below
 * 10^315652 < 2^TPL_BIG_MAX_BITS. One longer is never parsed: Jinja and format strings fail with
 * Python's TPL_PY_INT_MAX_STR_DIGITS error, ERB with a limit error naming its digits. */
enum { TPL_STATE_INT_MAX_DIGITS = 315652 };

/* tpl_sb.address marker set by Python printing (tpl_py_str/tpl_py_repr) for an int past
 * TPL_PY_INT_MAX_STR_DIGITS; tpl_print_address_error turns it into Python's ValueError. */
extern const char tpl_big_str_limit[];

/* An integer value: TPL_T_INT, TPL_T_BOOL or TPL_T_BIGINT. */
static inline bool tpl_is_intlike(tpl_value v)
{
    return v.type == TPL_T_INT || v.type == TPL_T_BOOL || v.type == TPL_T_BIGINT;
}
/* Digits of a big int's decimal text (without its sign). */
static inline size_t tpl_big_ndigits(tpl_value v) { return v.len - (v.len && v.u.s[0] == '-'); }

/* Initialises z to the integer v (tpl_is_intlike); the caller mpz_clear()s it. */
void tpl_big_get(mpz_t z, tpl_value v);
/* z as a value in arena a: TPL_T_INT when it fits in int64, else TPL_T_BIGINT (its text in a).
 * False when a is exhausted or z has more than TPL_BIG_MAX_BITS bits. z is left as it was. */
bool tpl_big_value(tpl_arena *a, const mpz_t z, tpl_value *out);
/* The integer the text s[0..n) spells in base (2..36; no prefix, no '_', an optional sign), as a
 * value in a (tpl_big_value); false when the text is not such a number or is too large. */
bool tpl_big_parse(tpl_arena *a, const char *s, size_t n, int base, tpl_value *out);
/* The double nearest to v (tpl_is_intlike; ties to even, as Python's float(int)); false when it is
 * past DBL_MAX (Python: OverflowError "int too large to convert to float"; *d is then +-inf). */
bool tpl_big_to_double(tpl_value v, double *d);
/* Exact comparison of two numbers (int, bool, float, big int), at least one a big int: -1, 0, 1,
 * or 2 when a float is NaN (unordered). */
int tpl_big_cmp(tpl_value a, tpl_value b);
/* The hash tpl_hash_value gives a big int: a float's when it equals one, else its text's. */
uint64_t tpl_big_hash(tpl_value v, uint64_t (*float_hash)(double));

/* Initialises z to the length of Python's range(p[0], p[1], p[2]) (tpl_range_params: integers, the
 * step not 0); the caller mpz_clear()s it. */
void tpl_range_len(mpz_t z, const tpl_value *p);
/* Whether x equals an item of range r (Python's `x in r`: an int, bool or integral float; no other
 * value equals an int); when it does, its index is stored in at (initialised by the caller). */
bool tpl_range_find(tpl_value r, tpl_value x, mpz_t at);

/* In a render: z as a value (tpl_big_value in the render's arena), charging fuel by its size;
 * the memory-limit error when it is too large. Clears z. 0 or -1 (error set). */
int tpl_big_result(tpl_vm *vm, mpz_t z, tpl_value *out);
/* A binary operator (TPL_OP_ADD, SUB, MUL, DIV_PY, DIV_RB, FLOORDIV, MOD, POW) on two numbers
 * at least one of which is a big int, or two int64s whose result overflowed: Python's int
 * semantics (floor division and modulo, true division correctly rounded, ** of a negative
 * exponent a float). 0 with *out set, -1 with the error set. */
int tpl_big_binop(tpl_vm *vm, int op, tpl_value a, tpl_value b, tpl_value *out);
/* Python's int(d) of a finite double (truncated toward zero): 0 or -1. */
int tpl_big_from_double(tpl_vm *vm, double d, tpl_value *out);
/* -v and abs(v) of an integer (tpl_is_intlike): 0 or -1. */
int tpl_big_neg(tpl_vm *vm, tpl_value v, tpl_value *out);
int tpl_big_abs(tpl_vm *vm, tpl_value v, tpl_value *out);
/* The Python error for str() of a big int past TPL_PY_INT_MAX_STR_DIGITS (ValueError). */
int tpl_big_str_error(tpl_vm *vm);
/* The fuel of a GMP operation on n limbs (n log n, at least 1): what tpl_big_* charge. */
uint64_t tpl_big_cost(size_t limbs);

/* Rationals (TPL_T_RATIONAL: Ruby's Rational, ERB only). The value is its canonical text "NUM/DEN"
 * (reduced, DEN > 0) in an arena, as a big int's: equality and hashing read the text, and each
 * operation converts to GMP's mpq_t, computes, and converts back, charging fuel as tpl_big_*. */
static inline bool tpl_is_rat(tpl_value v) { return v.type == TPL_T_RATIONAL; }
/* Initialises q to v (a rational or tpl_is_intlike); the caller mpq_clear()s it. */
void tpl_rat_get(mpq_t q, tpl_value v);
/* q (canonical) as a TPL_T_RATIONAL in arena a; false when a is exhausted or a part is past
 * TPL_BIG_MAX_BITS. q is left as it was. */
bool tpl_rat_value(tpl_arena *a, const mpq_t q, tpl_value *out);
/* In a render: q canonicalised, as a value (tpl_rat_value), charging fuel; the memory-limit error when
 * too large. Clears q. 0 or -1 (error set). */
int tpl_rat_result(tpl_vm *vm, mpq_t q, tpl_value *out);
/* The double nearest to q (ties to even; +-inf past DBL_MAX), as Ruby's Rational#to_f. */
double tpl_rat_double(const mpq_t q);
/* The double nearest to v (a rational). */
double tpl_rat_to_double(tpl_value v);
/* Whether v's denominator is 1 and it is negative / zero, from its text. */
static inline bool tpl_rat_neg(tpl_value v) { return v.len && v.u.s[0] == '-'; }
static inline bool tpl_rat_zero(tpl_value v) { return v.len >= 1 && v.u.s[0] == '0'; }

#endif
