/* The builtin library seen from the runtime: the types of the builtin table and the one table of
 * entry points (tpl_library) through which the VM, the printer and the verifier reach the
 * builtins. runtime/ declares it; stdlib/ defines it (stdlib/library.c: `tpl_stdlib`). Nothing in
 * runtime/ includes a stdlib/ header: the layers go runtime/ <- stdlib/ <- grammar/ <- compiler/
 * (docs/architecture.md; tests/include_check.py checks the #include lines). */
#ifndef TPL_LIBRARY_H
#define TPL_LIBRARY_H

#include "vm.h"

typedef enum tpl_builtin_kind {
    TPL_BK_FILTER, TPL_BK_TEST, TPL_BK_GLOBAL, TPL_BK_STR, TPL_BK_MAP, TPL_BK_LIST,
    /* Ruby (ERB): Kernel functions, methods of every object, String, Integer/Float, Array
     * (and Enumerable), Hash, Range, MatchData */
    TPL_BK_RKERNEL, TPL_BK_RANY, TPL_BK_RSTR, TPL_BK_RNUM, TPL_BK_RARR, TPL_BK_RHASH, TPL_BK_RRANGE, TPL_BK_RMATCH,
    /* Python's methods of int and float (after the Ruby kinds: TPL_FIND_KEY keeps kinds below 16) */
    TPL_BK_PYNUM,
} tpl_builtin_kind;

/* A builtin's C function. `a` holds one bound argument per declared parameter, in order:
 * a missing optional parameter is TPL_T_UNSET, `*args` a list value, `**kwargs` a map value.
 * The result goes to *out (allocated in tpl_vm_arena(vm) or borrowed from the arguments).
 * Returns 0, or -1 after tpl_vm_error(). */
typedef int (*tpl_builtin_fn)(tpl_vm *vm, tpl_value *a, tpl_value *out);

#define TPL_MAX_PARAMS 10 /* example_block has 10 */
/* Upper bound of the number of builtins (the VM's per-builtin binding cache is sized by it;
 * stdlib/library.c asserts that the table fits). */
#define TPL_BUILTINS_MAX 1024

/* One row of the builtin table: everything known at compile time. The table is `static const`
 * (no mutable global state); the parameter list is parsed from `params` on demand by
 * tpl_builtin_signature (a few dozen bytes of work). */
typedef struct tpl_builtin_info {
    uint8_t kind;                 /* tpl_builtin_kind */
    uint8_t namelen;              /* strlen(name) */
    const char *name;
    const char *params;           /* the spec string from builtins.def */
    tpl_builtin_fn fn;
} tpl_builtin_info;

/* A builtin's parsed parameter list. */
typedef struct tpl_builtin_sig {
    uint8_t nparams;              /* entries in `a` */
    uint8_t nrequired;            /* leading required parameters */
    uint8_t npositional;          /* parameters that can be bound by position (before *args) */
    uint8_t nposonly;             /* leading parameters that only bind by position (before `/`) */
    int8_t varargs;               /* index of the *args parameter or -1 */
    int8_t varkw;                 /* index of the **kwargs parameter or -1 */
    uint8_t optional[TPL_MAX_PARAMS]; /* 1 when the parameter is `name?` */
    const char *pnames[TPL_MAX_PARAMS]; /* parameter names (no markers), point into params */
    uint8_t pnamelen[TPL_MAX_PARAMS];
} tpl_builtin_sig;

/* The library's entry points the runtime calls, and the ids of the builtins the VM names itself
 * (its fast paths and the hf-only globals). Each function is documented where stdlib/ declares
 * it (stdlib/builtins.h, stdlib/ruby/ruby.h, stdlib/prompt/tr.h). */
typedef struct tpl_library {
    const tpl_builtin_info *table; /* the builtins by id (stdlib/builtins.def order) */
    uint32_t nbuiltins;
    bool (*signature)(int id, tpl_builtin_sig *sig);
    int (*find)(tpl_builtin_kind kind, const char *name, size_t n);
    int (*filter_variant)(int id, bool autoescape, bool hf);
    /* the global id and the per-kind ids a name resolves to (tpl_name_resolve) */
    void (*ids_for)(const char *name, size_t n, int16_t *global, int16_t bk[3]);
    int (*bind)(tpl_vm *vm, int id, const tpl_value *pos, int npos, const tpl_value *kwnames,
                const tpl_value *kwvals, int nkw, tpl_value *a);
    int (*undefined_error)(tpl_vm *vm, tpl_value v);
    /* Jinja2's DebugUndefined.__str__ of an undefined value, appended to b */
    void (*undefined_debug_str)(tpl_sb *b, tpl_value v);
    int (*format_value)(tpl_vm *vm, tpl_sb *b, tpl_value v, const char *spec, size_t n);
    int (*str_mod)(tpl_vm *vm, tpl_value fmt, tpl_value args, tpl_value *out); /* Python's `str % args` */
    /* a str method `id` called on Markup: MarkupSafe's override (a: the bound arguments) */
    int (*markup_method)(tpl_vm *vm, int id, tpl_value *a, tpl_value *out);
    /* format strings (stdlib/prompt/tr.h) */
    int (*fmt_begin)(tpl_vm *vm, tpl_value source, tpl_value *fields, tpl_value *translated);
    int (*fmt_item)(tpl_vm *vm, tpl_value obj, tpl_value key, tpl_value *out);
    int (*fmt_attr)(tpl_vm *vm, tpl_value obj, tpl_value name, tpl_value *out);
    int (*fmt_conv)(tpl_vm *vm, tpl_value v, int conv, tpl_value *out);
    /* Ruby semantics (stdlib/ruby/ruby.h) */
    int (*rb_send)(tpl_vm *vm, tpl_value self, const char *name, size_t n, tpl_value *args, int npos,
                   const tpl_value *kwn, tpl_value *kwv, int nkw, tpl_value *out);
    int (*rb_equal)(tpl_vm *vm, tpl_value a, tpl_value b, bool *eq);
    int (*rb_getitem)(tpl_vm *vm, tpl_value obj, tpl_value key, tpl_value *out);
    int (*rb_range)(tpl_vm *vm, tpl_value b, tpl_value e, bool exclusive, tpl_value *out);
    int (*rb_each_list)(tpl_vm *vm, tpl_value v, int mode, tpl_list **out);
    int (*rb_plain_method)(tpl_vm *vm, tpl_value self, const char *name, size_t n, const void **except);
    int (*rb_arith)(tpl_vm *vm, int op, tpl_value a, tpl_value b, tpl_value *out);
    int (*rb_compare_check)(tpl_vm *vm, const char *op, tpl_value a, tpl_value b, tpl_value *out);
    /* the library's per-render data (tpl_vm_ext; stdlib/prompt/state.c: facts, remembers, `call`,
     * translation): made when a render context is created (NULL: out of memory), freed with it;
     * ext_global answers the global names it owns (`call`): 1 with *out set, 0 for other names */
    void *(*ext_new)(tpl_vm *vm);
    void (*ext_free)(tpl_vm *vm, void *ext);
    int (*ext_global)(tpl_vm *vm, const char *name, size_t n, tpl_value *out);
    /* remembers(s) of the n bytes at s, a string known to be ASCII (no NFC form to make): what
     * the builtin id_remembers returns for it, into *out. 0, or -1 with an unlocated error */
    int (*remembers_ascii)(tpl_vm *vm, const char *s, size_t n, tpl_value *out);
    /* remembers_ascii, setting *kept as tpl_native.h's tpl_native_remembers_kept says */
    int (*remembers_kept)(tpl_vm *vm, const char *s, size_t n, tpl_value *out, uint64_t *kept);
    /* builtin ids the VM refers to */
    uint16_t id_escape, id_default, id_length, id_upper, id_lower, id_join, id_trim;
    uint16_t id_first, id_last; /* (a dict view's first or last item read from its dict) */
    uint16_t id_raise_exception, id_strftime_now, id_remembers;
    /* a list's or dict's mutating method (tpl_getattr): bound to its "access ... is unsafe."
     * message, it raises that when called */
    uint16_t id_unsafe_method;
    /* Python's mutating list and dict methods (append ... dict.clear, contiguous ids): the hf
     * profile's sandbox refuses them (tpl_getattr: id_unsafe_method) */
    uint16_t id_mut_lo, id_mut_hi;
    uint16_t id_e, id_forceescape, id_string; /* with id_escape: the filters that take str(value) */
    /* range, and what the global `range` is under the hf profile (the sandbox's safe_range: a
     * function, not the class: 'function object' in messages) */
    uint16_t id_range, id_range_hf;
    /* ERB's remembers / remembers? (Kernel methods: a String's remembers(s), a Symbol or another
     * value refused as Ruby refuses it) */
    uint16_t id_remembers_rb, id_remembers_p_rb;
} tpl_library;

/* The standard library: defined by stdlib/library.c. */
extern const tpl_library tpl_stdlib;

/* The table row of builtin id, or NULL when out of range. */
static inline const tpl_builtin_info *tpl_lib_builtin(int id)
{
    return (unsigned)id < tpl_stdlib.nbuiltins ? &tpl_stdlib.table[id] : NULL;
}

/* tpl_stdlib.find, remembered for the rest of the render (runtime/vm.c): ERB method calls look
 * their method up by name on each call (the receiver's kind is known only then). name must stay
 * valid and unchanged for the render (program names and arena strings do). */
int tpl_vm_method_find(tpl_vm *vm, tpl_builtin_kind kind, const char *name, size_t n);
/* Calls builtin id with positional arguments pos (npos) and keyword arguments (nkw names kwn,
 * values kwv) into *out, binding them as the VM's FILTER/CALL do (positional-only calls without
 * parsing the signature). Returns 0 or -1 with the render's error set. (runtime/vm.c) */
int tpl_vm_call_builtin(tpl_vm *vm, int id, tpl_value *pos, int npos, const tpl_value *kwn, tpl_value *kwv, int nkw,
                        tpl_value *out);

#endif
