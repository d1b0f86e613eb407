/* The value types a template can see (types.def) and the functions that name them. */
#include "types.h"
#include "host.h"
#include "vm_impl.h"

#include <string.h>

const tpl_type_info tpl_types[TPL_VT__COUNT] = {
#define TPL_TYPE(id, py, rb, flags, pymod) [TPL_VT_##id] = { py, rb, flags, "<class '" pymod py "'>", pymod py " object" },
#include "types.def"
#undef TPL_TYPE
};

_Static_assert(TPL_VT_RANGE - 1 + TPL_LAZY_DICT_REVVALUES == TPL_VT_DICT_REVVALUES,
               "types.def's lazy rows follow TPL_LAZY_*");

tpl_vtype tpl_value_class(tpl_value v)
{
    /* the globals Jinja2 has as classes (jinja2.defaults.DEFAULT_NAMESPACE) */
    static const struct { const char *name; tpl_vtype vt; } classes[] = {
        { "range", TPL_VT_RANGE }, { "dict", TPL_VT_DICT }, { "cycler", TPL_VT_CYCLER },
        { "joiner", TPL_VT_JOINER }, { "namespace", TPL_VT_NAMESPACE },
    };
    if (tpl_is_pytype(v)) return (tpl_vtype)(v.aux - TPL_FN_TYPE); /* `x.__class__` (value.h) */
    const tpl_builtin_info *bi = v.type == TPL_T_FUNC && !v.u.p ? tpl_lib_builtin(v.aux) : NULL;
    for (size_t i = 0; bi && bi->kind == TPL_BK_GLOBAL && i < sizeof classes / sizeof *classes; i++)
        if (strcmp(bi->name, classes[i].name) == 0)
            return classes[i].vt;
    return TPL_VT__COUNT;
}

tpl_vtype tpl_value_vtype(tpl_value v, bool strict)
{
    switch ((tpl_type)v.type) {
    case TPL_T_UNDEF: return strict ? TPL_VT_STRICT_UNDEFINED : TPL_VT_UNDEFINED;
    case TPL_T_NONE: return TPL_VT_NONE;
    case TPL_T_BOOL: return v.u.i ? TPL_VT_TRUE : TPL_VT_FALSE;
    case TPL_T_INT: case TPL_T_BIGINT: return TPL_VT_INT;
    case TPL_T_FLOAT: return TPL_VT_FLOAT;
    case TPL_T_STR:
        if (v.flags & TPL_F_SYMBOL) return TPL_VT_SYMBOL;
        if (v.flags & TPL_F_REGEX_RB) return TPL_VT_REGEXP;
        if (tpl_is_gemv_rb(v)) return TPL_VT_GEM_VERSION;
        if (v.flags & TPL_F_CLASS_RB) return TPL_VT_CLASS;
        return v.flags & TPL_F_SAFE ? TPL_VT_MARKUP : TPL_VT_STR;
    case TPL_T_LIST:
        if (v.aux && TPL_VT_RANGE - 1 + v.aux <= TPL_VT_DICT_REVVALUES) return (tpl_vtype)(TPL_VT_RANGE - 1 + v.aux);
        if (v.flags & TPL_F_ENUM_RB) return tpl_is_aseq_rb(v) ? TPL_VT_ARITH_SEQ : TPL_VT_ENUMERATOR;
        if (v.flags & TPL_F_RANGE_RB) return TPL_VT_RUBY_RANGE;
        if (v.flags & TPL_F_MATCH_RB) return TPL_VT_MATCHDATA;
        if (v.flags & TPL_F_GROUP) return TPL_VT_GROUP_TUPLE;
        return v.flags & TPL_F_TUPLE ? TPL_VT_TUPLE : TPL_VT_LIST;
    case TPL_T_MAP: return !(v.flags & TPL_F_NS) ? TPL_VT_DICT : v.u.map->module ? TPL_VT_TEMPLATE_MODULE : TPL_VT_NAMESPACE;
    case TPL_T_FUNC:
        if (v.u.p && v.aux >= TPL_FN_ALIAS) return v.aux == TPL_FN_ALIAS ? TPL_VT_GENERIC_ALIAS : v.aux == TPL_FN_DESCR ? TPL_VT_METHOD_DESCR : TPL_VT_MEMBER_DESCR;
        return v.u.p ? TPL_VT_BUILTIN : tpl_value_class(v) != TPL_VT__COUNT ? TPL_VT_TYPE : TPL_VT_FUNCTION;
    case TPL_T_MACRO: return TPL_VT_MACRO;
    case TPL_T_LOOP: return TPL_VT_LOOP;
    case TPL_T_UNSET: return TPL_VT_UNSET;
    case TPL_T_HOST: return TPL_VT_HOST;
    case TPL_T_RATIONAL: return TPL_VT_RATIONAL;
    }
    return TPL_VT_HOST;
}

/* Whether v is the bound builtin method NAME (a cycler's or joiner's: stdlib/jinja/globals.c). */
static bool is_bound(tpl_value v, const char *name)
{
    const tpl_builtin_info *bi = v.type == TPL_T_FUNC && v.u.p && v.aux < TPL_FN_ALIAS ? tpl_lib_builtin(v.u.bound->method) : NULL;
    return bi && strcmp(bi->name, name) == 0;
}

_Static_assert(TPL_VT__COUNT < 255, "an undefined's flags hold a tpl_vtype + 1");

uint8_t tpl_undef_container(tpl_value obj)
{
    if (obj.type == TPL_T_HOST) return 0; /* (its class is the host's: not a row) */
    if (obj.type == TPL_T_MAP && (obj.flags & TPL_F_NS)) { /* a cycler is a namespace whose .next is its own */
        const tpl_value *nx = tpl_map_get_str(obj.u.map, "next", 4, tpl_hash_str("next", 4));
        if (nx && is_bound(*nx, "cycler.next") && nx->u.bound->self.type == TPL_T_MAP &&
            nx->u.bound->self.u.map == obj.u.map)
            return TPL_VT_CYCLER + 1;
    }
    if (is_bound(obj, "joiner.__call__")) return TPL_VT_JOINER + 1;
    return (uint8_t)(tpl_value_vtype(obj, false) + 1);
}

/* Python's hash(): lists, dicts and the dict_keys/dict_items views have no hash; a tuple has one
 * when its items do (nested tuples to a depth of 100, deeper ones taken as hashable); everything
 * else does (a namespace, a function, an iterator by identity; a range by value). */
static const char *unhashable_rec(tpl_value v, int depth)
{
    tpl_vtype t = tpl_value_vtype(v, false);
    switch (t) {
    case TPL_VT_LIST: case TPL_VT_DICT: case TPL_VT_DICT_KEYS: case TPL_VT_DICT_ITEMS:
        return tpl_types[t].py;
    case TPL_VT_TUPLE: case TPL_VT_GROUP_TUPLE:
        for (uint32_t i = 0; depth < 100 && i < v.u.list->len; i++) {
            const char *r = unhashable_rec(v.u.list->items[i], depth + 1);
            if (r) return r;
        }
        return NULL;
    default:
        return NULL;
    }
}

const char *tpl_unhashable(tpl_value v) { return unhashable_rec(v, 0); }

/* The host objects in k (k itself, the items of a tuple k at any depth) asked whether they are
 * hashable (the host's "key": Python's hash(k), an unhashable one's TypeError). */
static int check_host_hashable(tpl_vm *vm, tpl_value k, int depth)
{
    tpl_value key;
    if (k.type == TPL_T_HOST)
        return tpl_hobj_key(vm, k, &key) < 0 ? -1 : 0;
    if (k.type != TPL_T_LIST || !(k.flags & TPL_F_TUPLE) || depth >= TPL_NEST_MAX)
        return 0;
    for (uint32_t i = 0; i < k.u.list->len; i++)
        if (check_host_hashable(vm, k.u.list->items[i], depth + 1) < 0)
            return -1;
    return 0;
}

int tpl_vm_check_hashable(tpl_vm *vm, tpl_value k)
{
    const char *t = tpl_unhashable(k);
    if (t) return tpl_vm_error(vm, TPL_ERR_TYPE, "unhashable type: '%s'", t);
    if (tpl_vm_strict_undef(vm, k)) return tpl_stdlib.undefined_error(vm, k);
    if ((k.type == TPL_T_HOST || k.type == TPL_T_LIST) && check_host_hashable(vm, k, 0) < 0) return -1;
    return 0;
}

const char *tpl_type_name(const tpl_vm *vm, tpl_value v)
{
    if (v.type == TPL_T_HOST) {
        const tpl_hobj *h = v.u.p;
        unsigned numeric = 0;
        const char *own = h->cls->type_of ? h->cls->type_of(h->obj, &numeric) : NULL;
        if (own) return own;
        if (h->cls->name) return h->cls->name;
    }
    if (v.type == TPL_T_MAP || v.type == TPL_T_FUNC) { /* a cycler (a namespace) or a joiner (a bound method) */
        uint8_t k = tpl_undef_container(v);
        if (k == TPL_VT_CYCLER + 1 || k == TPL_VT_JOINER + 1) return tpl_types[k - 1].py;
    }
    return tpl_types[tpl_value_vtype(v, vm && tpl_vm_strict_undef(vm, v))].py;
}

const char *tpl_rb_class_name(tpl_value v)
{
    if (v.type == TPL_T_HOST) { /* the host's class (a Ruby object's, through the gem) */
        const tpl_hobj *h = v.u.p;
        if (h->cls->name) return h->cls->name;
    }
    tpl_vtype t = tpl_value_vtype(v, false);
    if (t == TPL_VT_CLASS) { /* the modules among the constants (Comparable.class is Module) */
        static const char *const modules[] = { "Comparable", "Enumerable", "Kernel", "Math", "JSON", "ERB::Util", NULL };
        for (int i = 0; modules[i]; i++)
            if (strlen(modules[i]) == v.len && memcmp(modules[i], v.u.s, v.len) == 0) return "Module";
    }
    return tpl_types[t].rb;
}
