/* Builtin filters, tests, globals and methods: generated from builtins.def. */
#ifndef TPL_BUILTINS_H
#define TPL_BUILTINS_H

#include "../runtime/vm.h"

typedef enum tpl_builtin_kind {
    TPL_BK_FILTER, TPL_BK_TEST, TPL_BK_GLOBAL, TPL_BK_STR, TPL_BK_MAP, TPL_BK_LIST,
} tpl_builtin_kind;

/* Every builtin has one id in this enum; TPL_B__COUNT is the number of builtins. */
typedef enum tpl_builtin_id {
#define TPL_BUILTIN(kind, id, name, fn, params) TPL_B_##kind##_##id,
#include "builtins.def"
#undef TPL_BUILTIN
    TPL_B__COUNT
} tpl_builtin_id;

/* A builtin's C function. `a` holds one bound argument per declared parameter, in order:
 * a missing optional parameter is TPL_T_UNSET, `*args` a list value, `**kwargs` a map value.
 * The result goes to *out (allocated in tpl_vm_arena(vm) or borrowed from the arguments).
 * Returns 0, or -1 after tpl_vm_error(). */
typedef int (*tpl_builtin_fn)(tpl_vm *vm, tpl_value *a, tpl_value *out);

#define TPL_MAX_PARAMS 8

typedef struct tpl_builtin_info {
    uint8_t kind;                 /* tpl_builtin_kind */
    uint8_t nparams;              /* entries in `a` */
    uint8_t nrequired;            /* leading required parameters */
    int8_t varargs;               /* index of the *args parameter or -1 */
    int8_t varkw;                 /* index of the **kwargs parameter or -1 */
    const char *name;
    const char *params;           /* the spec string from builtins.def */
    tpl_builtin_fn fn;
    const char *pnames[TPL_MAX_PARAMS]; /* parameter names (no markers) */
    uint8_t pnamelen[TPL_MAX_PARAMS];
} tpl_builtin_info;

/* The table, indexed by tpl_builtin_id (parsed from the spec strings once, at first use). */
const tpl_builtin_info *tpl_builtin(int id);
/* Finds a builtin by kind and name; -1 when there is none. */
int tpl_builtin_find(tpl_builtin_kind kind, const char *name, size_t n);
/* The closest builtin name of that kind by edit distance (for "did you mean"), or NULL. */
const char *tpl_builtin_suggest(tpl_builtin_kind kind, const char *name, size_t n);

/* Binds positional values pos[0..npos) and keyword pairs (kwnames[i], kwvals[i]) to the
 * builtin's parameters into a[TPL_MAX_PARAMS], as Python binds a call. Errors (-1) on a missing
 * required argument, too many arguments, or an unknown or repeated keyword. */
int tpl_builtin_bind(tpl_vm *vm, int id, const tpl_value *pos, int npos, const tpl_value *kwnames,
                     const tpl_value *kwvals, int nkw, tpl_value *a);

/* Prototypes of every builtin's C function. */
#define TPL_BUILTIN(kind, id, name, fn, params) int fn(tpl_vm *vm, tpl_value *a, tpl_value *out);
#include "builtins.def"
#undef TPL_BUILTIN

#endif
