/* Builtin filters, tests, globals and methods: generated from builtins.def. */
#ifndef TPL_BUILTINS_H
#define TPL_BUILTINS_H

#include "../runtime/library.h"
#include "../runtime/bigint.h"

/* Every builtin has one id in this enum; TPL_B__COUNT is the number of builtins. */
typedef enum tpl_builtin_id {
#define TPL_BUILTIN(kind, id, name, fn, params) TPL_B_##kind##_##id,
#include "builtins.def"
#undef TPL_BUILTIN
    TPL_B__COUNT
} tpl_builtin_id;

/* The builtin table, indexed by id (stdlib/builtins.c). */
extern const tpl_builtin_info tpl_builtin_table[TPL_B__COUNT];
/* The table row of a builtin id (NULL when out of range). */
const tpl_builtin_info *tpl_builtin(int id);
/* Parses the parameter list of builtin `id` into *sig; false when id is out of range. */
bool tpl_builtin_signature(int id, tpl_builtin_sig *sig);
/* Finds a builtin by kind and name; -1 when there is none. For TPL_BK_TEST the operator
 * aliases Jinja2 registers ("==", "!=", "<", "<=", ">", ">=") are found too. */
int tpl_builtin_find(tpl_builtin_kind kind, const char *name, size_t n);
/* The filter that filter `id` (as tpl_builtin_find names it) is in an environment with Jinja2's
 * autoescape on (join, replace, xmlattr, urlize: their Markup-aware variants) and in the hf
 * profile (tojson: transformers' argument order): the one rule for a filter applied in the
 * template (`x|join`) and one applied by name when the render runs (`map('join')`). A variant's
 * own id (a table name with a " (...)" tag or a space, which no template can spell) is -1. */
int tpl_builtin_filter_variant(int id, bool autoescape, bool hf);
/* The builtin ids a name can mean, in one pass over the table (first entry of each kind wins, as in
 * tpl_builtin_find): global[0] = GLOBAL, bk[0..2] = STR, MAP, LIST methods; -1 = none. */
void tpl_builtin_ids_for(const char *name, size_t n, int16_t *global, int16_t bk[3]);

/* Binds positional values pos[0..npos) and keyword pairs (kwnames[i], kwvals[i]) to the
 * builtin's parameters into a[TPL_MAX_PARAMS], as Python binds a call. Errors (-1) on a missing
 * required argument, too many arguments, or an unknown or repeated keyword. */
int tpl_builtin_bind(tpl_vm *vm, int id, const tpl_value *pos, int npos, const tpl_value *kwnames,
                     const tpl_value *kwvals, int nkw, tpl_value *a);

/* Prototypes of every builtin's C function. */
#define TPL_BUILTIN(kind, id, name, fn, params) int fn(tpl_vm *vm, tpl_value *a, tpl_value *out);
#include "builtins.def"
#undef TPL_BUILTIN

int m_str_swapcase(tpl_vm *vm, tpl_value *a, tpl_value *out);
int m_str_rfind(tpl_vm *vm, tpl_value *a, tpl_value *out);
int m_str_index(tpl_vm *vm, tpl_value *a, tpl_value *out);
int m_str_rindex(tpl_vm *vm, tpl_value *a, tpl_value *out);
int m_str_ljust(tpl_vm *vm, tpl_value *a, tpl_value *out);
int m_str_rjust(tpl_vm *vm, tpl_value *a, tpl_value *out);
int m_str_center(tpl_vm *vm, tpl_value *a, tpl_value *out);
int m_str_zfill(tpl_vm *vm, tpl_value *a, tpl_value *out);
int m_str_partition(tpl_vm *vm, tpl_value *a, tpl_value *out);
int m_str_rpartition(tpl_vm *vm, tpl_value *a, tpl_value *out);
int m_str_removeprefix(tpl_vm *vm, tpl_value *a, tpl_value *out);
int m_str_removesuffix(tpl_vm *vm, tpl_value *a, tpl_value *out);
int m_str_isnumeric(tpl_vm *vm, tpl_value *a, tpl_value *out);
int m_str_isdecimal(tpl_vm *vm, tpl_value *a, tpl_value *out);
int m_str_istitle(tpl_vm *vm, tpl_value *a, tpl_value *out);
int f_random(tpl_vm *vm, tpl_value *a, tpl_value *out);
int f_urlize(tpl_vm *vm, tpl_value *a, tpl_value *out);
int t_filter(tpl_vm *vm, tpl_value *a, tpl_value *out);
int t_test(tpl_vm *vm, tpl_value *a, tpl_value *out);
int g_cycler_next(tpl_vm *vm, tpl_value *a, tpl_value *out);
int g_cycler_reset(tpl_vm *vm, tpl_value *a, tpl_value *out);
int g_joiner_call(tpl_vm *vm, tpl_value *a, tpl_value *out);
/* Python's list.sort(key=fn, reverse=rev) of items: *out a new list of them in order, fn called
 * once per item in order (a macro, a bound method, any callable), keys compared by `<`. */
int tpl_sort_keyed(tpl_vm *vm, const tpl_list *items, tpl_value fn, bool rev, tpl_value *out);

/* ------------------------------------------------------------------ shared with the VM */


/* Records Jinja2's UndefinedError for using undefined value v and returns -1:
 * "'name' is undefined" (TPL_UNDEF_NAME), "'dict object' has no attribute 'x'" (ATTR; the
 * container's tpl_type is taken from v.flags: 'None', 'list object', ...), "list object has no
 * element 5" (ITEM; the name is the key's repr), or the hint text stored in the value
 * (TPL_UNDEF_PLAIN, e.g. "No first item, sequence was empty."). Code TPL_ERR_UNDEFINED. */
int tpl_undefined_error(tpl_vm *vm, tpl_value v);
/* Jinja2's DebugUndefined.__str__ of v (an undefined value), appended to b:
 * "{{ name }}", "{{ no such element: dict object['key'] }}" or, for a hint (TPL_UNDEF_PLAIN with
 * text), "{{ undefined value printed: HINT }}". */
void tpl_undefined_debug_str(tpl_sb *b, tpl_value v);

/* Python's `item in seq` (substring, list item, dict key) with Jinja2's undefined rules. */
int tpl_contains(tpl_vm *vm, tpl_value item, tpl_value seq, bool *res);
/* Python's `fmt % args` (printf-style formatting, as the `%` operator and the format filter):
 * args is a tuple (TPL_F_TUPLE list: its items are the arguments), or any other single value (a
 * map also serves %(name)s keys). A markup-safe fmt escapes its string arguments and gives a
 * safe result, as Markup.__mod__ does. */
int tpl_str_mod(tpl_vm *vm, tpl_value fmt, tpl_value args, tpl_value *out);
/* A str method (builtin id of kind STR) called on a Markup string, a[0], with its bound arguments a:
 * MarkupSafe 3's Markup methods (runtime/library.h markup_method). */
int tpl_markup_method(tpl_vm *vm, int id, tpl_value *a, tpl_value *out);
/* Python's str.format(*args, **kwargs) (kwargs may be NULL); with escape, Markup.format's
 * (markupsafe's EscapeFormatter: each field formatted, then escaped unless it is Markup). */
int tpl_str_format(tpl_vm *vm, tpl_value fmt, const tpl_value *args, int nargs,
                   const tpl_map *kwargs, bool escape, tpl_value *out);
/* Python's format(v, spec): the format-spec mini-language for str, int, float and bool; other
 * types accept only an empty spec (str(v)). Appends to b. */
int tpl_format_value(tpl_vm *vm, tpl_sb *b, tpl_value v, const char *spec, size_t n);

/* ------------------------------------------------------------------ stdlib internals */

/* MarkupSafe's escape of s[0..n) appended to b: & < > " ' as &amp; &lt; &gt; &#34; &#39; (the
 * escape filter, autoescape, Markup's % and format, xmlattr). */
void tpl_html_escape(tpl_sb *b, const char *s, size_t n);
/* Python's str.splitlines(keepends) and str.replace(old, new, count) (count < 0 = all). */
int tpl_splitlines(tpl_vm *vm, tpl_value s, bool keepends, tpl_list **out);
int tpl_str_replace(tpl_vm *vm, tpl_value s, tpl_value old, tpl_value new_, int64_t count, tpl_value *out);

/* Jinja2's soft_str: a string stays as it is (flags kept); undefined is "" (an error when
 * strict); anything else becomes str(v) in the arena. */
int tpl_to_str(tpl_vm *vm, tpl_value v, tpl_value *out);
/* Iterates v into a list like tpl_to_list, but an undefined value is empty (an error when
 * strict). */
int tpl_iter_list(tpl_vm *vm, tpl_value v, tpl_list **out);
/* Python operator.index() into a C Py_ssize_t: ints and bools; a big int is Python's
 * OverflowError "Python int too large to convert to C ssize_t"; anything else "'T' object cannot
 * be interpreted as an integer". */
int tpl_arg_index(tpl_vm *vm, tpl_value v, int64_t *out);
/* tpl_arg_index for an argument Python code only compares or clamps (Jinja2's truncate length,
 * batch count, a slice bound): a big int saturates to INT64_MAX / INT64_MIN, which every such
 * caller treats as "past any length" exactly as Python treats the big int. */
int tpl_arg_index_sat(tpl_vm *vm, tpl_value v, int64_t *out);
/* tpl_compare (case-sensitive) that reports Python's message for operator op ("<", ">=", ...)
 * when the operands are of types that don't order. */
int tpl_compare_op(tpl_vm *vm, tpl_value a, tpl_value b, const char *op, int *cmp);
/* Truthiness of an optional argument: dflt when missing (TPL_T_UNSET). -1 on error. */
int tpl_arg_truthy(tpl_vm *vm, tpl_value v, bool dflt);
static inline bool tpl_given(tpl_value v) { return v.type != TPL_T_UNSET; }
/* Lower-cases a string (ASCII fast path; full Unicode mapping otherwise) into the arena. */
tpl_value tpl_str_lower(tpl_vm *vm, tpl_value s);
/* True when the n bytes at s are all ASCII. */
bool tpl_is_ascii(const char *s, size_t n);
/* Unicode classification with Python's rules (str.isalpha, isdecimal, isdigit, isnumeric,
 * re's \w), from utf8proc's tables. */
bool tpl_uc_isalpha(uint32_t cp);
bool tpl_uc_isdecimal(uint32_t cp);
/* The value 0..9 of a decimal digit (any script's, category Nd, as Python's int() and float()
 * read them), -1 for any other code point. */
int tpl_uc_decimal_value(uint32_t cp);
bool tpl_uc_isdigit(uint32_t cp);
bool tpl_uc_isnumeric(uint32_t cp);
bool tpl_uc_isword(uint32_t cp);
bool tpl_uc_isupper(uint32_t cp);
bool tpl_uc_islower(uint32_t cp);
bool tpl_uc_istitle(uint32_t cp);
/* Jinja2's make_attrgetter: looks a dotted path ("a.b.0": digit parts are ints) or a single
 * non-string key up with environment.getitem. A `dflt` other than None/unset replaces an
 * undefined result after each part. attr unset or None returns item itself. */
int tpl_attr_get(tpl_vm *vm, tpl_value item, tpl_value attr, tpl_value dflt, tpl_value *out);
/* The key one part of an attribute path or a str.format "[key]" names: all digits (at most 18) an
 * int, as Jinja2's make_attrgetter and Python's str.format read it; else the text as a str. */
tpl_value tpl_path_key(const char *s, size_t n);
/* Calls a filter / test by name with positional arguments (args[0] is the subject) and
 * optional keyword arguments (kwargs may be NULL or empty). */
int tpl_filter_by_name(tpl_vm *vm, tpl_value name, tpl_value *args, int nargs,
                       const tpl_map *kwargs, tpl_value *out);
int tpl_test_by_name(tpl_vm *vm, tpl_value name, tpl_value *args, int nargs,
                     const tpl_map *kwargs, bool *out);

/* ------------------------------------------------------------------ prompt features (stdlib/prompt/state.c) */

/* The prompt features' per-render data in the render context's extension slot (tpl_vm_ext):
 * facts, the host remembers callback, `call`, the translation state (include/tpl_prompt.h). */
typedef struct tpl_prompt_state tpl_prompt_state;
/* tpl_stdlib.ext_new / ext_free / ext_global: the state of a new render context (call = phone,
 * voice, claimed None; blocks from tpl_vm_allocator), NULL when out of memory; its release; and
 * the globals it answers (`call`: 1 with *out, else 0). */
void *tpl_prompt_new(tpl_vm *vm);
void tpl_prompt_free(tpl_vm *vm, void *ext);
int tpl_prompt_global(tpl_vm *vm, const char *name, size_t n, tpl_value *out);
/* remembers() of an ASCII string (the library's remembers_ascii: native code's constant argument) */
int tpl_prompt_remembers_ascii(tpl_vm *vm, const char *s, size_t n, tpl_value *out);
/* The same, with the answer native code may keep (the library's remembers_kept) */
int tpl_prompt_remembers_kept(tpl_vm *vm, const char *s, size_t n, tpl_value *out, uint64_t *kept);
/* The `call` object of this render (a map: channel, medium, claimed, history); ERB answers its
 * keys as methods (call.channel). */
tpl_value tpl_prompt_call(const tpl_vm *vm);

#endif
