/* The value types a template can see (runtime/types.def) and their names. */
#ifndef TPL_TYPES_H
#define TPL_TYPES_H

#include <stddef.h>
#include <stdint.h>

/* Abstract-type flags of a row (see types.def). */
enum { TPL_TYF_MAPPING = 1, TPL_TYF_SEQUENCE = 2, TPL_TYF_ITERABLE = 4, TPL_TYF_CALLABLE = 8 };

typedef enum {
#define TPL_TYPE(id, py, rb, flags, pymod) TPL_VT_##id,
#include "types.def"
#undef TPL_TYPE
    TPL_VT__COUNT
} tpl_vtype;

/* One row of types.def. */
typedef struct tpl_type_info {
    const char *py;     /* type(x).__name__ in Python / Jinja2 */
    const char *rb;     /* x.class in Ruby */
    uint8_t flags;      /* TPL_TYF_* */
    const char *pyclass; /* str(type(x)) in Python: "<class 'int'>", "<class 'markupsafe.Markup'>" */
    const char *objrepr; /* Jinja2's object_type_repr(x): "int object", "markupsafe.Markup object" */
} tpl_type_info;

/* The table, indexed by tpl_vtype (runtime/types.c). */
extern const tpl_type_info tpl_types[TPL_VT__COUNT];

/* Python's type name of a tagged list value (aux = TPL_LAZY_*, runtime/value.h); "list" for a plain
 * list or tuple (aux 0) or an aux out of the table, so the result is never NULL (it goes into %s). */
static inline const char *tpl_lazy_name(unsigned aux)
{
    return aux && TPL_VT_RANGE - 1 + aux <= TPL_VT_DICT_REVVALUES ? tpl_types[TPL_VT_RANGE - 1 + aux].py : "list";
}

#endif
