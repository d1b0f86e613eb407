/* Host objects inside the VM (runtime/host.c; the public side is in include/tpl.h). */
#ifndef TPL_HOST_H
#define TPL_HOST_H

#include "vm.h"

/* The block a TPL_T_HOST value points at (u.p), in the arena it was built in. */
typedef struct tpl_hobj {
    const tpl_host_class *cls;
    void *obj;
    tpl_render *r;      /* the render context it was built for (callbacks get it) */
    bool has_it;        /* a one-shot iterator (TPL_HOST_ITERATOR) read into it: */
    tpl_value it;       /* the VM's iterator of its items (tpl_hobj_as_iter) */
} tpl_hobj;

/* A one-shot host iterator (type_of: TPL_HOST_ITERATOR) *v as the VM's iterator of its items
 * (a lazy one, tpl_pending, whose source is the object: its items are asked of the host as they
 * are taken, tpl_hobj_next; the same iterator at every call: what was taken from it stays
 * taken); any other value is left alone. 0, or -1 with an error. */
int tpl_hobj_as_iter(tpl_vm *vm, tpl_value *v);
/* The next item of a one-shot host iterator obj (its iter callback): 0 with *out, 1 when it is
 * exhausted, -1 with an error. */
int tpl_hobj_next(tpl_vm *vm, tpl_value obj, tpl_value *out);


/* obj.name / obj[key] of a host object, Jinja2's order (getattr then getitem for `.`, the
 * reverse for `[]`): 0 with *out set, 1 missing (the caller makes the undefined value), -1 with
 * a located error. */
int tpl_hobj_getattr(tpl_vm *vm, tpl_value obj, const char *name, size_t n, tpl_value *out);
int tpl_hobj_getitem(tpl_vm *vm, tpl_value obj, tpl_value key, tpl_value *out);
/* The getattr callback alone (str.format's `.`) / the getitem callback alone (its `[]`): as
 * above, without the fallback. */
int tpl_hobj_attr(tpl_vm *vm, tpl_value obj, const char *name, size_t n, tpl_value *out);
int tpl_hobj_item(tpl_vm *vm, tpl_value obj, tpl_value key, tpl_value *out);
/* The items of a host object (its iter callback): 0, or -1 with an error (not iterable). */
int tpl_hobj_iter(tpl_vm *vm, tpl_value obj, tpl_list **out);
/* Calls a host object: 0 with *out, or -1 with an error. */
int tpl_hobj_call(tpl_vm *vm, tpl_value fn, const tpl_value *pos, int npos, const tpl_value *kwn,
                  const tpl_value *kwv, int nkw, tpl_value *out);
/* Calls the host object (cls, obj) of a host-function entry without fn (tpl_host_func): 0
 * with *out, or -1 with an error. r is the render context around vm. */
int tpl_hobj_call_func(tpl_vm *vm, tpl_render *r, const tpl_host_class *cls, void *obj, const tpl_value *pos,
                       int npos, const tpl_value *kwn, const tpl_value *kwv, int nkw, tpl_value *out);
/* Ruby obj.name(args) (the class's send callback): 0 with *out, 1 when the class has no send or
 * no such method, -1 with a located error. */
int tpl_hobj_send(tpl_vm *vm, tpl_value obj, const char *name, size_t n, const tpl_value *pos, int npos,
                  const tpl_value *kwn, const tpl_value *kwv, int nkw, tpl_value *out);
/* The object's plain data (resolve callback): 0 with *out, 1 when it has none, -1 with an error. */
int tpl_hobj_resolve(tpl_vm *vm, tpl_value obj, tpl_value *out);
/* Jinja's |int (as_float false) and |float of the object (number callback): 0 with *out an int,
 * big int or float, 1 when the class has none or the object is not a number, -1 with an error. */
int tpl_hobj_number(tpl_vm *vm, tpl_value v, bool as_float, tpl_value *out);
/* len(): 0 with *out, 1 when the class has no len, -1 with an error. */
int tpl_hobj_len(tpl_vm *vm, tpl_value v, int64_t *out);
/* obj == other by the class's eq callback: 0 with *out, 1 when it has none (or declines), -1
 * with an error. */
int tpl_hobj_eq(tpl_vm *vm, tpl_value obj, tpl_value other, bool *out);
/* Truthiness: 1, 0, or -1 with an error. */
int tpl_hobj_truth(tpl_vm *vm, tpl_value v);
/* Replaces each host object among args by its resolve() value (plain data) where the class
 * gives one: 0, or -1 with an error. */
int tpl_hobj_resolve_args(tpl_vm *vm, tpl_value *args, int n);

/* a op b (or the unary op of a, b none) by the class's arith callback when a or b is a host number
 * whose class has one and neither is undefined (tpl_host_class.arith): 0 with *out, 1 when it does
 * not apply or the host declines, -1 with an error. tpl_hobj_compare: a comparison ("==", "<"),
 * *res its result's truthiness. */
int tpl_hobj_arith(tpl_vm *vm, const char *op, tpl_value a, tpl_value b, tpl_value *out);
int tpl_hobj_compare(tpl_vm *vm, const char *op, tpl_value a, tpl_value b, bool *res);
/* The host object v as a dict key (tpl_host_class.arith's "key", asked of any object of a class
 * with arith): 0 with *out, 1 when the class has no arith or declines, -1 with the host's error
 * (Python: an unhashable object's TypeError). */
int tpl_hobj_key(tpl_vm *vm, tpl_value v, tpl_value *out);
/* Python's a == b (op "==") or a != b ("!=") where a or b is a host object of a class with arith,
 * neither undefined: the host's own result (*out: Python's rich comparison, without the identity
 * shortcut of an item comparison; not always a bool). 0, 1 when not asked or declined, -1 with
 * the host's error. */
int tpl_hobj_richcompare(tpl_vm *vm, const char *op, tpl_value a, tpl_value b, tpl_value *out);
/* Python's dict-key match of stored (a key of a dict) and key, where either is a host object or
 * a tuple holding one (tpl_host_class.arith's "key==": hash(stored) == hash(key) and stored ==
 * key, identity first): 0 with *eq, 1 when no class of theirs has arith or it declines, -1 with
 * the host's error (an unhashable item, an __eq__ that raised). */
int tpl_hobj_key_equal(tpl_vm *vm, tpl_value stored, tpl_value key, bool *eq);
/* Python's dict lookup of key (a host object or a tuple holding one) among m's keys in one call
 * (tpl_host_class.arith's "find": hash(key) once, then == only for keys of an equal hash): 0
 * with *at the index of the key that matches or -1, 1 when the class declines (then ask
 * tpl_hobj_key_equal per key), -1 with the host's error (an __eq__ that raised). */
int tpl_hobj_key_find(tpl_vm *vm, const tpl_map *m, tpl_value key, int64_t *at);

/* A host object's numeric kinds (tpl_host_class.type_of: TPL_HOST_NUMBER...), 0 for another value. */
unsigned tpl_hobj_numeric(tpl_value v);

/* The object's own HTML (html callback, markupsafe's __html__) as a markup string: 0 with *out, 1 when
 * it has none (or v is no host object), -1 with an error. */
int tpl_hobj_html(tpl_vm *vm, tpl_value v, tpl_value *out);

#endif
