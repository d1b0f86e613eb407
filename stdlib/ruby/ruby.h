/* Ruby semantics for ERB views (stdlib/ruby/ruby.c): method dispatch on values, `[]`, `==`, ranges,
 * iteration, regular expressions (Oniguruma, Ruby syntax). The methods themselves are builtins
 * of the kinds RKERNEL/RANY/RSTR/RNUM/RARR/RHASH/RRANGE/RMATCH in builtins.def. */
#ifndef TPL_RUBY_H
#define TPL_RUBY_H

#include "../../runtime/vm.h"

/* Modes of FOR_INIT_RB (A >> 16). TPL_RB_EACH_INDEXED: each_with_index whose block takes |x, i|:
 * the items as each's (the index comes from LOOP_INDEX_RB), NoMethodError as each_with_index's. */
enum { TPL_RB_EACH = 0, TPL_RB_EACH_WITH_INDEX = 1, TPL_RB_TIMES = 2, TPL_RB_EACH_INDEXED = 3 };

/* Calls Ruby method `name` on self with positional args[0..npos) and keyword arguments
 * (kwn[i] = kwv[i]); the block, if any, is tpl_vm_block(vm). NoMethodError for an unknown
 * method. Returns 0 or -1 after tpl_vm_error. */
int tpl_rb_send(tpl_vm *vm, tpl_value self, const char *name, size_t n, tpl_value *args, int npos,
                const tpl_value *kwn, tpl_value *kwv, int nkw, tpl_value *out);
/* For the VM's call-site cache of CALL_METHOD_RB (no block, no keywords): the builtin id that
 * tpl_rb_send calls with self itself as the receiver for method `name`, for every receiver of
 * self's type with no flags and every positional arguments that are no bignum and no array or hash
 * the render may change; -1 when such a call takes another path (operators, host objects, Hash
 * methods run on the items, NoMethodError). *except: a hash the answer does not hold for (the
 * `call` object, whose fields are its methods), or NULL. */
int tpl_rb_plain_method(tpl_vm *vm, tpl_value self, const char *name, size_t n, const void **except);
/* Ruby obj[key]: hash lookup (nil when missing), array/string index, range or start+length. */
int tpl_rb_getitem(tpl_vm *vm, tpl_value obj, tpl_value key, tpl_value *out);
/* Ruby ==: numbers by value, true/false only equal themselves, symbols equal strings. */
bool tpl_rb_equal(tpl_value a, tpl_value b);
/* tpl_rb_equal in a render: charges the render's fuel per container element compared; 0 with
 * *eq set, or -1 with the fuel error set (tpl_vm_nomem). */
int tpl_vm_rb_equal(tpl_vm *vm, tpl_value a, tpl_value b, bool *eq);
/* Builds a range value (integers, strings or an endless range). */
int tpl_rb_range(tpl_vm *vm, tpl_value b, tpl_value e, bool exclusive, tpl_value *out);
/* The items an each-style loop visits (mode TPL_RB_*): array items, hash [key, value] pairs,
 * range members, [item, index] pairs (EACH_WITH_INDEX; EACH_INDEXED: the items alone), 0...n
 * for times. */
int tpl_rb_each_list(tpl_vm *vm, tpl_value v, int mode, tpl_list **out);
/* Ruby's rules for a binary operator op ('+', '-', '*', '/', '%', 'p' for **) on a and b:
 * returns 1 with *out when it computed the result itself, 0 when the shared arithmetic op
 * gives Ruby's result, -1 after a Ruby-style error (TypeError, NoMethodError). */
int tpl_rb_arith(tpl_vm *vm, int op, tpl_value a, tpl_value b, tpl_value *out);
/* Ruby's rules for < <= > >= (op names the operator): 0 when the shared comparison applies. */
int tpl_rb_compare_check(tpl_vm *vm, const char *op, tpl_value a, tpl_value b, tpl_value *out);
/* Before a Ruby method's ArgumentError for its argument count: Ruby looks the method up first, so on a
 * receiver whose class has no such method (1.5.bit_length(1), :a.to_a(1), false.to_i(2)) the error is
 * NoMethodError. -1 with that error set, 0 when self's class has the method (or self is no core value). */
int tpl_rb_arity_no_method(tpl_vm *vm, tpl_value self, const char *name);
/* did_you_mean's "\nDid you mean?  X" lines for Ruby's NameError "uninitialized constant PATH" (path[0, n]: NAME
 * or SCOPE::NAME), over the constants Ruby 3.1 has (stdlib/ruby/dym_methods.h), at out (NUL-terminated, at most
 * cap bytes): its length (0: none), -1 out of memory, -2 when it does not fit. Work memory from ar, given back. */
int tpl_rb_dym_const(tpl_arena *ar, const char *path, size_t n, char *out, size_t cap);
/* Checks a regex pattern at compile time; false with a message in msg on a syntax error. */
bool tpl_rb_regex_check(const char *pat, size_t n, char *msg, size_t cap);

#endif
