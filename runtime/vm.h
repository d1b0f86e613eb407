/* Internal interface between the VM, the builtins (stdlib/) and value printing.
 * Nothing here is public: hosts use include/tpl.h. */
#ifndef TPL_VM_H
#define TPL_VM_H

#include "value.h"
#include "../include/tpl.h"
#include "../include/tpl_native.h" /* tpl_native_case_latin1 */

typedef struct tpl_vm tpl_vm;

/* Syntax whose semantics apply (truthiness, printing, division). */
typedef enum { TPL_SYN_JINJA = 0, TPL_SYN_ERB = 1, TPL_SYN_FMT = 2 } tpl_syntax_id;

/* Records a runtime error at the current instruction's span and returns -1 (so builtins can
 * `return tpl_vm_error(...)`). code is a TPL_ERR_* status. The message is printf-formatted. */
int tpl_vm_error(tpl_vm *vm, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* As tpl_vm_error with a finer kind (include/tpl_errors.def; the status is the kind's), e.g.
 * TPL_EK_ZERO_DIVISION, TPL_EK_OVERFLOW, TPL_EK_DEPTH. tpl_vm_error's kind is its status's
 * default (tpl_status_kind). */
int tpl_vm_fail(tpl_vm *vm, tpl_error_kind kind, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A limit of `kind` (TPL_EK_FUEL, TPL_EK_OUTPUT_LIMIT, TPL_EK_MEMORY_LIMIT) reached, with the
 * kind's one message naming the limit's value. Returns -1. */
int tpl_vm_limit(tpl_vm *vm, tpl_error_kind kind, unsigned long long limit);
/* The render's output limit in bytes (tpl_limits.max_output): a builtin asked to make more than
 * this (a format width) ends with tpl_vm_limit(vm, TPL_EK_OUTPUT_LIMIT, ...) before making it. */
uint64_t tpl_vm_max_output(const tpl_vm *vm);
/* Writes code point cp (0..0x10FFFF) to b, or reports that it is a surrogate (U+D800..U+DFFF)
 * and returns -1: tpl strings are UTF-8, which cannot hold one. Python makes such a string and
 * fails when the output is written ("'utf-8' codec can't encode character '\ud800' ...:
 * surrogates not allowed", a ValueError); tpl fails where it would be made. ERB: Ruby's
 * "invalid codepoint 0xD800 in UTF-8 (RangeError)". */
int tpl_vm_put_cp(tpl_vm *vm, tpl_sb *b, uint32_t cp);
/* Reports why an allocation or a walk over a value failed and returns -1: the fuel (a walk
 * exhausted it: "fuel exhausted ..."), the memory limit ("memory limit reached (N bytes)"),
 * both TPL_ERR_LIMIT, else TPL_ERR_NOMEM "out of memory" (the heap itself). Every "out of memory"
 * of a render goes through here, so a limit is always named. */
int tpl_vm_nomem(tpl_vm *vm);
/* Python `==` (tpl_equal) in a render: charges the render's fuel per container element
 * compared (two independent lists of shared structure can hold 2^60 elements). 0 with *eq set,
 * or -1 with the fuel error set. */
int tpl_vm_equal(tpl_vm *vm, tpl_value a, tpl_value b, bool *eq);
/* Either operand is a float NaN: an ordered comparison (< <= > >=) of them is false. */
static inline bool tpl_is_nan_pair(tpl_value x, tpl_value y)
{
    return (x.type == TPL_T_FLOAT && x.u.f != x.u.f) || (y.type == TPL_T_FLOAT && y.u.f != y.u.f);
}
/* tpl_vm_equal with the identity shortcut of Python's item comparisons (tpl_item_equal_metered). */
int tpl_vm_item_equal(tpl_vm *vm, tpl_value a, tpl_value b, bool *eq);
/* Both ask the host about host objects wherever they are in the values compared (a Decimal or
 * an object with __eq__ in a list or dict): the render's tpl_eq_host (value.h), also for a
 * builtin comparing with tpl_equal_host_metered itself. */
const tpl_eq_host *tpl_vm_eq_host(tpl_vm *vm);
/* m's value for key as Python's dict finds it (*out NULL: none): by tpl's hash, then, when that
 * misses and key is a host object or a tuple holding one, or m has such a key, asking the host (hash(Decimal(1)) ==
 * hash(1): `Decimal(1) in {1: x}`). 0, or -1 with the host's error. */
int tpl_vm_map_get_host(tpl_vm *vm, const tpl_map *m, tpl_value key, tpl_value **out);
static inline int tpl_vm_map_get(tpl_vm *vm, const tpl_map *m, tpl_value key, tpl_value **out)
{
    *out = tpl_map_get(m, key);
    if (__builtin_expect(!*out && (key.type == TPL_T_HOST || key.type == TPL_T_LIST || m->host_keys), 0))
        return tpl_vm_map_get_host(vm, m, key, out);
    return 0;
}
/* m[key] = val as Python's dict assigns it (tpl_vm_map_get finds the key: the first key object
 * stays, its value replaced). 0, or -1 with the host's error or out of memory. */
int tpl_vm_map_put(tpl_vm *vm, tpl_map *m, tpl_value key, tpl_value val);
/* The value Python hashes v as, for a set or dict of keys tpl makes (|unique) and a dict lookup:
 * a host number equal to an int or float is that number (the host's arith "key": Decimal(1) is
 * 1), anything else itself. 0, or -1 with the host's error. (tpl_vm_check_hashable asks the
 * host whether any host object is hashable: Python's TypeError "unhashable type".) */
int tpl_vm_key_of(tpl_vm *vm, tpl_value v, tpl_value *key);
/* The render's arena: everything a builtin returns must live here (or be borrowed from args). */
tpl_arena *tpl_vm_arena(tpl_vm *vm);
/* Profile/option queries builtins need. */
bool tpl_vm_strict(const tpl_vm *vm);
/* Environment(undefined=DebugUndefined) / ChainableUndefined renders (tpl_options; never under
 * strict). */
bool tpl_vm_debug_undefined(const tpl_vm *vm);
bool tpl_vm_chainable_undefined(const tpl_vm *vm);
/* True for the hf profile (Hugging Face chat templates: transformers tojson, sandbox limits). */
bool tpl_vm_hf(const tpl_vm *vm);
/* True for a Jinja program compiled with Environment(autoescape=True) (--autoescape). */
bool tpl_vm_autoescape(const tpl_vm *vm);
int tpl_vm_syntax(const tpl_vm *vm);
/* The program's bound language (tpl_options.lang, `tplc compile --lang`), or NULL. */
const char *tpl_vm_bound_lang(const tpl_vm *vm);
/* The library's per-render data: what tpl_stdlib.ext_new made for this render context (freed
 * by ext_free with it). The VM never looks inside: stdlib/prompt/ keeps the facts, the remembers
 * callback, `call` and the translation state there. */
void *tpl_vm_ext(const tpl_vm *vm);
/* Something a render reads outside the program changed (the facts, the host's memory store):
 * what native code kept from earlier renders is dropped before the next (vm_impl.h state_stamp). */
void tpl_vm_state_changed(tpl_vm *vm);
/* The render context's allocator (tpl_render_new_with; lives as long as the context): blocks of
 * the library's per-render data come from it. */
const tpl_allocator *tpl_vm_allocator(const tpl_vm *vm);

/* The types.def row of a value (strict: a Jinja2 StrictUndefined render, tpl_vm_strict; a global
 * that is a class in Jinja2, tpl_value_class: TYPE). */
tpl_vtype tpl_value_vtype(tpl_value v, bool strict);
/* Whether using undefined value v raises, as Jinja2's StrictUndefined: v is undefined in a strict
 * render and not an inline if's without else (cond_expr_undefined: the plain Undefined, always). */
bool tpl_vm_strict_undef(const tpl_vm *vm, tpl_value v);
/* Python's mutating list and dict methods (issue 14; stdlib/py/methods.c) change a container in
 * place, so every name holding it sees the change, as Python's references do. Each call below makes
 * the container of v changeable by this render, or fails (-1, a located error naming `what`, e.g.
 * "list.append") when the render did not make it: the state's, a global's or a constant of the
 * program, which tpl shares between renders and hosts.
 * tpl_vm_list_room: room for `extra` items past the list's length in an array no other list reads
 *   at those indexes (the caller writes them and raises len).
 * tpl_vm_list_fresh: the list's items copied into a new array of its own with room for `extra`
 *   more, to rearrange in place (sort, reverse, insert, remove, pop(i)).
 * tpl_vm_map_own: the dict's entries in arrays of its own, which tpl_map_set and tpl_map_del may
 *   then change; tpl_vm_map_owned after them (the arrays may have grown). */
int tpl_vm_list_room(tpl_vm *vm, tpl_value v, uint32_t extra, const char *what);
int tpl_vm_list_fresh(tpl_vm *vm, tpl_value v, uint32_t extra, const char *what);
int tpl_vm_map_own(tpl_vm *vm, tpl_value v, const char *what);
void tpl_vm_map_owned(tpl_vm *vm, tpl_value v);
/* dict.items(), .keys(), .values() (what 0, 1, 2): *out a view of dict (a TPL_T_MAP), its items
 * made now (value.h tpl_is_view). Python's views are live: tpl_vm_view_sync(vm, v) makes view v's
 * items again, in a new array (a list made from the old items keeps them), when its dict changed
 * since they were made; what reads a view's items (a builtin's arguments, tpl_to_list, the VM's
 * operators) calls it first. No change: one compare, nothing made. */
int tpl_vm_view_new(tpl_vm *vm, tpl_value dict, int what, tpl_value *out);
int tpl_vm_view_sync(tpl_vm *vm, tpl_value v);
/* Jinja's dict methods tell the VM of each deletion, before it is made: n entries from index at of
 * dict m (n UINT32_MAX: m is cleared), which dict loops and reversed() iterators over m replay. */
void tpl_vm_dict_deleted(tpl_vm *vm, const tpl_map *m, uint32_t at, uint32_t n);
/* dict.pop and dict.copy tell the VM that dict m may hold a deleted entry in CPython's table (pop
 * leaves one; copy may clone the table of `from`, a dict that may): a dict iterator's index then
 * counts it, which a change of the dict while it iterates may make wrong (vm.c dict_replay). */
void tpl_vm_dict_holed(tpl_vm *vm, const tpl_map *m, const tpl_map *from);
/* reversed(d) and reversed(d.keys()...) (a TPL_F_VIEW_DICT iterator: its items, then the dict, then
 * a stamp from tpl_vm_dict_stamp): tpl_vm_dict_iter_sync makes its items those CPython's reverse
 * dict iterator yields from the dict as it is now (RuntimeError when the dict changed size). */
tpl_value tpl_vm_dict_stamp(const tpl_vm *vm, const tpl_map *m);
int tpl_vm_dict_iter_sync(tpl_vm *vm, tpl_value v);
/* Whether p points into the render's state values (the state arena). */
bool tpl_vm_state_owns(const tpl_vm *vm, const void *p);
/* Marks the list or dict header p as a host object's own (a Python object's attribute or item,
 * converted for this render): a mutating method on it is refused (own_header), as the object
 * would not change as under Jinja2. Out of memory: not marked. */
void tpl_vm_mark_host_container(tpl_vm *vm, const void *p);
/* The container an undefined attribute or item was missing from (Jinja2 names its type in the
 * undefined's messages: object_type_repr), as an undefined value keeps it in its flags: the
 * obj's tpl_vtype + 1 (a cycler's or joiner's state: CYCLER, JOINER); 0 (unknown, a host
 * object) is named a dict. stdlib/builtins.c names it. */
uint8_t tpl_undef_container(tpl_value obj);
/* The class a builtin global is in Jinja2 (range, dict, cycler, joiner, namespace: the row its
 * instances have, or the class-only CYCLER/JOINER row); TPL_VT__COUNT for any other value. */
tpl_vtype tpl_value_class(tpl_value v);
/* The Python type name that makes v unhashable (hash(v) raises "unhashable type: 'NAME'": a list,
 * a dict, dict_keys, dict_items, or such an item of a tuple), NULL when it hashes; namespaces,
 * ranges, functions and iterators hash (by identity, ranges by value: tpl_hash_value). */
const char *tpl_unhashable(tpl_value v);
/* Python's hash(k) before k is a dict or set key: TPL_ERR_TYPE "unhashable type: 'NAME'"
 * (tpl_unhashable), a StrictUndefined's undefined error, else 0. */
int tpl_vm_check_hashable(tpl_vm *vm, tpl_value k);
/* type(v).__name__ as Python/Jinja2 print it ("int", "str", "Markup", "NoneType", "dict_items",
 * a host object's class name, ...), for error messages and filters that name a type; vm may be
 * NULL (lenient Undefined). The one Python type-name function. */
const char *tpl_type_name(const tpl_vm *vm, tpl_value v);
/* v.class as Ruby prints it ("NilClass", "Integer", "String", "Symbol", "Range", ...). */
const char *tpl_rb_class_name(tpl_value v);
/* The Ruby class name of a types.def row, for "no implicit conversion of X into Integer". */
static inline const char *tpl_rb_type_name(tpl_vtype t) { return tpl_types[t].rb; }

/* Python truthiness (Jinja); errors (-1) only on strict undefined. */
int tpl_truthy_py(tpl_vm *vm, tpl_value v);
/* Ruby truthiness: only nil and false are false. */
static inline bool tpl_truthy_rb(tpl_value v) { return !(v.type == TPL_T_NONE || (v.type == TPL_T_BOOL && !v.u.i) || v.type == TPL_T_UNDEF); }

/* Jinja2 getattr / getitem (attribute-then-item for `.`, item-then-attribute for `[]`).
 * Never fails for a missing key: the result is an undefined value naming what was missing. */
int tpl_getattr(tpl_vm *vm, tpl_value obj, const char *name, size_t n, tpl_value *out);
int tpl_getitem(tpl_vm *vm, tpl_value obj, tpl_value key, tpl_value *out);
/* Jinja2's environment.getattr on a dotted path ("a.b.0") as used by map(attribute=...). */
int tpl_getpath(tpl_vm *vm, tpl_value obj, tpl_value path, tpl_value *out);

/* Calls a filter or test by name (map('upper'), select('odd')); args[0] is the subject. */
int tpl_call_filter_named(tpl_vm *vm, tpl_value name, tpl_value *args, int nargs, tpl_value *out);
int tpl_call_test_named(tpl_vm *vm, tpl_value name, tpl_value *args, int nargs, tpl_value *out);
/* Calls any callable value (macro, builtin function, bound method) with positional arguments. */
int tpl_call_value(tpl_vm *vm, tpl_value fn, tpl_value *args, int nargs, tpl_value *out);
/* The same with keyword arguments (kwn[i] strings): a host's call (tpl_render_call). */
int tpl_call_value_kw(tpl_vm *vm, tpl_value fn, tpl_value *args, int nargs, const tpl_value *kwn, tpl_value *kwv,
                      int nkw, tpl_value *out);

/* Python ordering for sort/min/max (`<`); returns -1 and sets an error when the types don't
 * compare. case_sensitive=false lowercases strings first, as Jinja2's sort filters do. */
int tpl_compare(tpl_vm *vm, tpl_value a, tpl_value b, bool case_sensitive, int *cmp);

/* Iteration helper: converts any iterable (list, tuple, map keys, string characters) to a list.
 * Errors with a TypeError-like message on non-iterables (strict undefined errors too). */
int tpl_to_list(tpl_vm *vm, tpl_value v, tpl_list **out);

/* ------------------------------------------------------------------ Ruby blocks (ERB) */

/* A Ruby block passed to a method (CALL_METHOD_RB): its code runs in the frame that created it
 * (same slots), so it sees and assigns the enclosing locals, and its output goes to the
 * template's output. */
typedef struct tpl_rb_block {
    uint32_t pc;          /* entry; 0 = no block given */
    uint32_t nparams;     /* declared parameters (the block code stores them) */
    uint32_t slot_base;   /* the creating frame's slots */
} tpl_rb_block;

/* A block word's parameter byte (tpl_rb_block.nparams) with this bit: the block binds its own parameters
 * (*rest, defaults, keywords, **opts, &blk; compiler/lower_erb.c block_sub): the VM pushes the arguments as
 * given, an Array of them and the keywords (a Hash, or nil), and the block's code binds them by its
 * descriptor (stdlib/ruby/ruby.c bind_block). */
#define TPL_RB_BIND_RAW 0x80u
/* The values the VM pushes for a block of parameter byte np. */
static inline uint32_t tpl_rb_block_pushes(uint32_t np) { return np & TPL_RB_BIND_RAW ? 2u : np; }

/* The block given to the Ruby method being called (pc 0 when none). Builtins copy it before
 * yielding (a yield may call other methods). */
tpl_rb_block tpl_vm_block(const tpl_vm *vm);
/* Sets the block the next builtin sees (a call without one: pc 0); returns the one it replaces, for
 * the caller to put back. */
tpl_rb_block tpl_vm_set_block(tpl_vm *vm, tpl_rb_block b);
/* ERB: `break val` out of the block blk (of the frame at slot base `base`) a template method yielded to: -1,
 * the error that unwinds to the method call the block was given to, whose value val then is (a rescue on
 * the way refuses it instead) */
int tpl_vm_def_break(tpl_vm *vm, tpl_value blk, uint32_t base, tpl_value val);
/* Calls block b with args bound as a Ruby proc binds them (one array argument is splatted over
 * two or more parameters; missing ones are nil). Returns 0 with *out = the block's value, 1 when
 * the block ran `break` (*out = the break value: the method returns it at once), -1 on error. */
int tpl_rb_yield(tpl_vm *vm, const tpl_rb_block *b, const tpl_value *args, int nargs, tpl_value *out);
/* tpl_rb_yield with keyword arguments kw (a Hash, or nil: none): a block of TPL_RB_BIND_RAW binds them to its
 * keyword parameters; any other block takes a Hash as one more positional argument. */
int tpl_rb_yield_kw(tpl_vm *vm, const tpl_rb_block *b, const tpl_value *args, int nargs, tpl_value kw, tpl_value *out);
/* tpl_rb_yield of a block from inside itself (a Proc calling itself): the slots keep[0..nkeep) of its frame
 * (its parameters and locals) are put back after the call, as each Ruby call of a block has its own. */
int tpl_rb_yield_keep(tpl_vm *vm, const tpl_rb_block *b, const tpl_value *args, int nargs, tpl_value *out,
                      const uint32_t *keep, uint32_t nkeep);
/* ERB rescue: after a failed yield, takes the pending error when Ruby's rescue could catch it (not
 * a tpl limit: fuel, depth, output, memory, out of memory): copies its message into msg (cap bytes)
 * and clears it, so the render goes on. false (the error stays) otherwise. */
bool tpl_vm_rescue(tpl_vm *vm, char *msg, size_t cap);
/* tpl_vm_rescue that also takes a host's own exception when the host marked it rescuable (its
 * tpl_host_error message "\x01ANCESTORS\x02MESSAGE (Class)": the Ruby gem, for an exception a
 * method of self or of a host object raised); *payload is then the host's payload (else NULL),
 * msg the marked text without its \x01. tpl_vm_rethrow puts such an error back (no clause matched). */
bool tpl_vm_rescue_host(tpl_vm *vm, char *msg, size_t cap, void **payload, uint32_t *where);
/* (where: tpl_vm_rescue_host's, the line << 16 | column the error was located at, or 0) */
int tpl_vm_rethrow(tpl_vm *vm, void *payload, const char *marked, size_t len, uint32_t where);
/* ERB's $~: the MatchData (TPL_F_MATCH_RB) of the render's last regex match by =~, !~, match or
 * ===, or nil (none yet, or the last one failed). The whole template is one Ruby frame, so blocks
 * share it, as in Ruby. Set by the Ruby library (stdlib/ruby/ruby.c); nil when a render starts. */
tpl_value tpl_vm_rb_match(const tpl_vm *vm);
void tpl_vm_set_rb_match(tpl_vm *vm, tpl_value m);
/* The render's state (a map, or TPL_T_NONE before any state is set). */
/* A streaming render's output so far to its write callback (tpl_render_set_output); 0 or -1. */
int tpl_vm_out_flush(tpl_vm *vm);
/* ERB#result's nil (the last statement's value, when a comment after the template's last `end` hides
 * ERB's `; _erbout`: an if no branch of which ran): the output so far is dropped, as Ruby prints nil's
 * "". 0, or -1 with tpl's refusal when some of it is no longer held (a streaming render flushed it, or
 * a capture is open). */
int tpl_vm_out_discard(tpl_vm *vm);
tpl_value tpl_vm_state(const tpl_vm *vm);
/* Whether string s holds bytes of a state read from JSON (tpl_render_set_state_json/file: the state
 * arena's, not a host's values): JSON's strings are UTF-8, so are Ruby's Strings made from them and
 * their substrings (ERB's String#encoding). */
bool tpl_vm_json_state_str(const tpl_vm *vm, tpl_value s);
/* ERB: the self object (tpl_render_set_self_val; none without one), and whether self's @ivars
 * are the state's for now (tpl_render_set_self_ivars_in_state). */
tpl_value tpl_vm_self(const tpl_vm *vm);
bool tpl_vm_ivars_in_state(const tpl_vm *vm);
/* A host callback ran the host's code (a method, [], each, to_s, remembers; not an @ivar's read):
 * counted, so that an ERB local holding a copy of the host's object knows whether code ran since it
 * was assigned (stdlib/ruby r_k_held) */
void tpl_vm_host_ran(tpl_vm *vm);
uint64_t tpl_vm_host_runs(const tpl_vm *vm);

/* ------------------------------------------------------------------ the render API (runtime/api.c) */

/* For the library's own public functions on a render context (stdlib/prompt/state.c): the
 * render context around a VM and back, the busy mark (set while a call may run host callbacks:
 * a callback calling back into the context gets TPL_ERR_USAGE), and the context's error record. */
tpl_vm *tpl_render_vm(tpl_render *r);
bool tpl_render_busy(const tpl_render *r);
/* Empties the state's arena for a new state (tpl_render_reset_state): kept for reuse, or freed
 * when it held more than an eighth of the memory limit. */
void tpl_render_state_reset(tpl_render *r);
void tpl_render_set_busy(tpl_render *r, bool busy);
/* tpl_render_set_loader (compiler/program.c, which gives its compiler): the loader and the
 * compile function a render uses for template names computed when it runs (issue 14). */
void tpl_render_loader_hook(tpl_render *r, tpl_loader_fn loader, void *data,
                            tpl_status (*compile)(const char *name, const char *src, size_t len,
                                                  const tpl_options *opts, const char *ext_parent,
                                                  size_t ext_parent_len, tpl_program **out, tpl_error *err));
/* Clears the render's error record (TPL_OK). */
void tpl_render_clear_error(tpl_render *r);
/* Sets the render's unlocated error of `kind` with message msg (copied) and returns its status;
 * line/col (0: none) locate it inside the host's text (a catalog's JSON). */
tpl_status tpl_render_fail(tpl_render *r, tpl_error_kind kind, const char *msg, uint32_t line, uint32_t col);
/* TPL_ERR_USAGE "FN: WHAT is NULL" in r's error record. */
tpl_status tpl_render_null_arg(tpl_render *r, const char *fn, const char *what);
/* TPL_OK, or TPL_ERR_VALUE "WHAT is not valid UTF-8 (byte 0xHH at offset N)" in r's error record
 * when s[0..n) is not UTF-8 (text from the host must be). */
tpl_status tpl_render_check_utf8(tpl_render *r, const char *what, const char *s, size_t n);

/* Converts parsed JSON (a jansson json_t) into values in arena a: objects become insertion-ordered
 * maps, arrays lists, strings are copied. False on arena exhaustion or nesting deeper than 512.
 * (runtime/api.c; used for the state, host-function values and catalogs.) */
struct json_t;
bool tpl_value_from_json(tpl_arena *a, struct json_t *j, tpl_value *out, int depth);

/* Python's range(start, stop, step) of count items (the caller computed it, <= 10,000,000): a list
 * tagged TPL_LAZY_RANGE that keeps its parameters for printing (tpl_range_params). */
int tpl_make_range(tpl_vm *vm, int64_t start, int64_t stop, int64_t step, uint64_t count, tpl_value *out);
/* tpl_make_range of integer values (TPL_T_INT or TPL_T_BIGINT: Python's range takes unbounded
 * ints), count items (<= 10,000,000) computed by the caller; the items past int64 are big ints. */
int tpl_make_range_v(tpl_vm *vm, tpl_value start, tpl_value stop, tpl_value step, uint64_t count, tpl_value *out);
/* A range held without its items (TPL_F_RANGE_BIG) asked for all of them: the limit error "range
 * too large". Returns -1. */
int tpl_range_too_large(tpl_vm *vm);
/* A big range (TPL_F_RANGE_BIG) given to a filter Jinja2 runs list(), sorted() or len() in (|list,
 * |sort, |slice, |random): as Python, OverflowError "Python int too large to convert to C ssize_t" when
 * its length is 2**63 or more; otherwise tpl's limit error "range too large". Returns -1. */
int tpl_range_items_needed(tpl_vm *vm, tpl_value r);
/* Item `index` (an integer, Python's: negative counts from the end) of range r (any range value):
 * *found false (and *out untouched) when it is out of range. 0, or -1 on arena exhaustion. */
int tpl_range_item(tpl_vm *vm, tpl_value r, tpl_value index, bool *found, tpl_value *out);
/* Jinja2's lazy iterators (issue 14): the generators map, select, reject, selectattr, rejectattr
 * and batch return, and reversed(range) of a range held without its items, produce their items
 * only as a consumer takes them (first, `in`, a for loop item by item, unpacking, a filter that
 * takes all), as Python's generators do: `range(10**12)|map('string')|first` takes one item, and
 * a generator made from a generator takes from it only what it yields. Such a value is an
 * iterator (tpl_is_iter) whose list is a tpl_pending (cap TPL_PEND_MARK): its items are those
 * produced and not yet taken. */
typedef int (*tpl_pend_fn)(tpl_vm *vm, tpl_value *a, tpl_value *out);
enum { TPL_PEND_MARK = UINT32_MAX };
typedef struct tpl_pending {
    tpl_list l;         /* produced, not yet taken; l.cap is TPL_PEND_MARK */
    uint32_t bcap;      /* room at l.items */
    bool done, rev;
    bool each;          /* the stage takes one source item at a time, draining too (it runs
                         * template code that may append to a list it iterates: LOOP_FILTER) */
    bool whole;         /* the stage runs once, on the whole source, at the first use, even on
                         * no items (slice, items: Python's generator body runs on the first next) */
    uint32_t per;       /* a stage: source items per item it yields (map 1, batch n); 0: one source
                         * item per call, any number of items (select); UINT32_MAX: all */
    tpl_value src;      /* an iterator (taken from), or a sequence read from pos on */
    uint64_t pos;
    tpl_pend_fn fn;     /* the stage, run on a plain list of source items (NULL: the items of src) */
    tpl_value a[4];     /* its arguments (a[0] is the chunk) */
    bool dict_started;  /* src a dict view (iter(d) of a generator filter): Python's dict iterator, made
                         * at the first pull, which checks the dict's size then (dict_len) at each */
    uint32_t dict_len;
    uint64_t dict_seen; /* (vm.c dict_replay) */
    bool ahead;         /* the stage's generator pulls one source item past each item it yields (Jinja2's
                         * batch: `for item in value: if len(tmp) == n: yield tmp ...`), held here */
    bool has_held;
    tpl_value held;
} tpl_pending;
static inline tpl_pending *tpl_pend_of(tpl_value v)
{
    return tpl_is_iter(v) && v.u.list->cap == TPL_PEND_MARK ? (tpl_pending *)(void *)v.u.list : NULL;
}
/* A lazy stage over src: fn(a) with a[0] the next source items, per as tpl_pending.per; *out an
 * iterator of type aux (TPL_LAZY_GENERATOR). na <= 4. */
int tpl_pend_stage(tpl_vm *vm, tpl_value src, tpl_pend_fn fn, const tpl_value *a, int na, uint32_t per, uint16_t aux,
                   tpl_value *out);
/* A lazy stage that runs once on all of src at the first use (tpl_pending.whole). */
int tpl_pend_whole(tpl_vm *vm, tpl_value src, tpl_pend_fn fn, const tpl_value *a, int na, tpl_value *out);
/* An iterator over the items of range r (any range), reversed when rev (a range_iterator). */
int tpl_pend_range(tpl_vm *vm, tpl_value r, bool rev, tpl_value *out);
/* reversed(l) of a list l: Python's list_reverseiterator over the live list (its index starts at
 * len(l) - 1 now; a change of l by the time it is read is seen; it ends when the index is past
 * the list's end). */
int tpl_pend_revlist(tpl_vm *vm, tpl_value l, tpl_value *out);
/* Takes up to n items (UINT32_MAX: all) of iterator *v: *v becomes a list of them (a plain
 * iterator list, not pending), the iterator keeps the rest. */
int tpl_take_iter(tpl_vm *vm, tpl_value *v, uint32_t n);
/* `item in seq` as the `in` operator computes it (an iterator is taken from up to the match). */
int tpl_vm_contains(tpl_vm *vm, tpl_value item, tpl_value seq, bool *res);
/* The error for printing an iterator (tpl_is_iter): Python would print its memory address. */
int tpl_print_iter_error(tpl_vm *vm, tpl_value v);
/* The error for printing a value whose Python text holds a memory address (tpl_sb.address: a
 * function, a method, a cycler or joiner object, an iterator inside a container). */
int tpl_print_address_error(tpl_vm *vm, const char *what);
/* Python's RecursionError for a value nested more than TPL_NEST_MAX deep: "maximum recursion depth
 * exceeded " + while_ ("in comparison", "while getting the repr of an object", ...). */
int tpl_vm_nest_error(tpl_vm *vm, const char *while_);
/* The error of a failed or marked printing builder (b->failed or b->address): too deep
 * (tpl_nest_limit: tpl_vm_nest_error with while_), out of memory or fuel, or an address. */
int tpl_vm_sb_error(tpl_vm *vm, const tpl_sb *b, const char *while_);

/* ------------------------------------------------------------------ printing (runtime/print.c) */

/* Python str(v) as Jinja2 prints it: None, True, shortest round-trip floats (1e+16, 0.1),
 * containers as repr. Undefined prints "" (the caller checks strictness before). */
void tpl_py_str(tpl_sb *b, tpl_value v);
/* Python repr(v): strings quoted with Python's quote choice and escapes. */
void tpl_py_repr(tpl_sb *b, tpl_value v);
/* Python ascii(v): repr(v) with every non-ASCII code point escaped (\xNN, \uNNNN, \UNNNNNNNN),
 * as str.format's !a conversion and %a print it. */
void tpl_py_ascii(tpl_sb *b, tpl_value v);
/* Python float repr (shortest round-trip, 'r' format). */
void tpl_py_float(tpl_sb *b, double d);
/* Ruby to_s / inspect (ERB printing): nil → "", 1.0e+16, {"a"=>1}. */
/* *out = x OP y for two floats (TPL_OP_ADD ... TPL_OP_POW), with the syntax's rules: Python's
 * floor division and modulo (CPython's float_divmod: a zero remainder takes the divisor's sign),
 * Ruby's fmod, an error for a complex result, Python's OverflowError for an overflowing pow.
 * The one place float arithmetic is defined: the VM's operators and bigint.c's int-float mixes. */
int tpl_vm_float_binop(tpl_vm *vm, int op, double x, double y, tpl_value *out);
/* *out = the plain string a followed by b (both strings), appended in place when a is a recent
 * concatenation result that still ends its arena block (see vm.c, cat_begin). */
int tpl_vm_concat(tpl_vm *vm, tpl_value a, tpl_value b, tpl_value *out);
/* *out = a new list: the items of a, then the nb items at b (b may be NULL when nb is 0); its
 * flags are 0. When a is a recent result of this function that still owns the room past its
 * length, the items are written there and the result shares a's array (see vm.c). Returns -1
 * (error set) when out of memory or over 2^32-1 items. */
int tpl_vm_concat_list(tpl_vm *vm, const tpl_list *a, const tpl_value *b, uint32_t nb, tpl_value *out);
void tpl_rb_to_s(tpl_sb *b, tpl_value v);
/* Appends a host object's str (repr false) or repr (runtime/host.c); on a failing callback the
 * render's error is set and b fails. */
void tpl_hobj_print(tpl_sb *b, tpl_value v, bool repr);
void tpl_rb_inspect(tpl_sb *b, tpl_value v);
/* The class name of an exception `rescue => e` bound (a string flagged TPL_F_EXC_RB). */
tpl_value tpl_rb_exc_class(tpl_value v);
/* Ruby's String#inspect (dump false) or String#dump (dump true) of UTF-8 text s[0, n], quotes included
 * (runtime/print.c). */
void tpl_rb_str_escape(tpl_sb *b, const char *s, size_t n, bool dump);
/* Ruby's JSON.generate (pretty: JSON.pretty_generate) of v, json 2.6 as in Ruby 3.1 (runtime/print.c).
 * Returns 0; 1 for a NaN or infinite Float (*bad: it; JSON::GeneratorError), 2 for nesting past 100 levels
 * (JSON::NestingError), 3 when a host object's printing failed (the render's error is set). */
int tpl_rb_json(tpl_sb *b, tpl_value v, bool pretty, double *bad);
/* A json 2.6 generator State: the strings written around items (nil: not given; an object_nl or array_nl
 * given, even empty, puts the indent before the closing bracket), allow_nan, max_nesting
 * (0: none). tpl_rb_json_defaults fills JSON.generate's (pretty: JSON.pretty_generate's). */
typedef struct tpl_rb_json_opts {
    tpl_value indent, space, space_before, object_nl, array_nl;
    bool allow_nan;
    int64_t max_nesting;
} tpl_rb_json_opts;
/* Containers nested deeper than this are refused whatever max_nesting allows (tpl_rb_json_with's 4: the
 * writer recurses on the C stack). */
#define TPL_RB_JSON_DEPTH 1000
void tpl_rb_json_defaults(tpl_rb_json_opts *jo, bool pretty);
/* tpl_rb_json with a State; also 4 for nesting past TPL_RB_JSON_DEPTH. */
int tpl_rb_json_with(tpl_sb *b, tpl_value v, const tpl_rb_json_opts *jo, double *bad);
/* json.dumps(v, ensure_ascii, indent (<0 = None), separators (NULL = default), sort_keys).
 * Returns false (and sets nothing) when a value can't be serialised (undefined, callable). */
bool tpl_json_dumps(tpl_sb *b, tpl_value v, bool ensure_ascii, int indent, const char *item_sep,
                    const char *key_sep, bool sort_keys);
/* Jinja2's own tojson filter: htmlsafe_json_dumps (sorted keys, <>&' escaped as \u00XX). */
bool tpl_json_dumps_htmlsafe(tpl_sb *b, tpl_value v, int indent);
/* The same with json.dumps' indent as a string (an int indent n is n spaces): ind NULL for
 * indent=None, else each nesting level's line starts with ind (ind_n bytes) repeated. */
/* Why they returned false (fail may be NULL): the first value json.dumps raises on, in its order. */
typedef struct tpl_json_fail {
    enum { TPL_JSON_OK, TPL_JSON_TYPE, TPL_JSON_CIRCULAR, TPL_JSON_KEY } why; /* KEY: bad is a dict key */
    tpl_value bad; /* TPL_JSON_TYPE: the value (or key) not serialisable, a dict whose keys don't sort */
} tpl_json_fail;
bool tpl_json_dumps_s(tpl_sb *b, tpl_value v, bool ensure_ascii, const char *ind, size_t ind_n, const char *item_sep,
                      const char *key_sep, bool sort_keys, tpl_json_fail *fail);
bool tpl_json_dumps_htmlsafe_s(tpl_sb *b, tpl_value v, const char *ind, size_t ind_n, tpl_json_fail *fail);

/* ------------------------------------------------------------------ unicode (runtime/unicode.c) */

/* Decodes one code point at s[*i] (advancing *i); invalid bytes decode as U+FFFD, one byte. */
uint32_t tpl_utf8_next(const char *s, size_t n, size_t *i);
/* Whether s is valid UTF-8 (as Python's decoder: no overlongs, surrogates or code points past
 * U+10FFFF); when not, *bad is the offset of the first byte that does not decode. */
bool tpl_utf8_valid(const char *s, size_t n, size_t *bad);
/* tpl_utf8_valid that also tells whether s is all ASCII (*ascii; set when s is valid). */
bool tpl_utf8_check(const char *s, size_t n, size_t *bad, bool *ascii);
/* Number of code points in s. */
size_t tpl_utf8_len(const char *s, size_t n);
/* Byte offset of code point index cp (clamped to n). */
size_t tpl_utf8_offset(const char *s, size_t n, size_t cp);
/* Python str.isspace() for one code point. */
bool tpl_py_isspace(uint32_t cp);
/* Python str.isprintable() for one code point (what repr() shows as it is). */
bool tpl_py_isprintable(uint32_t cp);
/* Python repr()'s escape of a code point it does not print as is: \xhh, \uhhhh or \Uhhhhhhhh
 * into buf (NUL-terminated); returns its length. */
int tpl_py_escape_cp(char buf[11], uint32_t cp);
/* A character of Jinja2's name pattern: Python's \w (str.isalnum() or '_') or XID_Continue. */
bool tpl_py_isnamechar(uint32_t cp);
/* Python str.isidentifier() of n bytes of UTF-8: XID_Start or '_', then XID_Continue. */
bool tpl_py_isidentifier(const char *s, size_t n);
/* Python strip family: which = 1 left, 2 right, 3 both; chars NULL = whitespace. */
tpl_value tpl_py_strip(tpl_value s, int which, const char *chars, size_t nchars);
/* Python's upper() (or lower()) of the ASCII and Latin-1 letters of s[0..n) written at o, up to
 * the first code point that needs the Unicode tables (or n): returns where it stopped. ASCII goes
 * eight bytes a step. (The filters upper/lower into the output, vm.c; Ruby's upcase/downcase.)
 * The native views' code (include/tpl_native.h), so both write the same bytes. */
static inline size_t tpl_case_latin1(char *o, const unsigned char *s, size_t n, bool upper)
{
    return tpl_native_case_latin1(o, s, n, upper);
}

/* Python str.upper/lower/title/capitalize with full case mapping (into the builder). */
void tpl_py_upper(tpl_sb *b, const char *s, size_t n);
/* Python's upper() (or lower()) of s[i..n) appended to b; s[0..i) is context (lower's final sigma). */
void tpl_py_case_from(tpl_sb *b, const char *s, size_t n, size_t i, bool upper);
void tpl_py_lower(tpl_sb *b, const char *s, size_t n);
/* Python's lower() of the code point at s[at..end) in the context of s[0..n): Σ becomes ς at the
 * end of a word (CPython's final-sigma rule), as str.swapcase does ("ΣΑΣ".swapcase() == "σας"). */
void tpl_py_lower_at(tpl_sb *b, const char *s, size_t n, size_t at, size_t end);
void tpl_py_title(tpl_sb *b, const char *s, size_t n);
void tpl_py_capitalize(tpl_sb *b, const char *s, size_t n);
/* Python str.casefold (full case folding) of n bytes of UTF-8, into the builder. */
void tpl_py_casefold(tpl_sb *b, const char *s, size_t n);
/* NFC normalisation into the arena (for remembers). */
tpl_value tpl_nfc(tpl_arena *a, tpl_value s);
/* String#unicode_normalize: form 0 NFC, 1 NFD, 2 NFKC, 3 NFKD (runtime/unicode.c); TPL_T_NONE when out of memory. */
tpl_value tpl_unicode_normalize(tpl_arena *a, tpl_value s, int form);
/* 14 or 15 when cp was first assigned in Unicode 14.0 / 15.0, else 0. utf8proc knows these code
 * points, but the reference engines do not (CPython 3.11 has Unicode 14, Ruby 3.1 Unicode 13). */
unsigned tpl_unicode_age_after13(uint32_t cp);
/* The code point Python 3.11's `\N{NAME}` escape gives name[0..n) (a character name or alias,
 * case-insensitive; a Hangul syllable or CJK unified ideograph name) in *cp; false when it has
 * none (runtime/unicode_names.c). */
bool tpl_unicode_lookup_name(const char *name, size_t n, uint32_t *cp);

#endif
