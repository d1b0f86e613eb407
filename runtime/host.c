/* Host values (include/tpl.h, issue 17): constructors and readers of tpl_val handles, host
 * objects (an opaque pointer + tpl_host_class callbacks) and the VM's calls into them. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include "vm_impl.h"
#include "host.h"
#include "bigint.h"
#include "verify.h" /* tpl_program_reads_cached */

static_assert(sizeof(tpl_val) == sizeof(tpl_value), "tpl_val is a tpl_value");

static inline tpl_value from_val(tpl_val v) { tpl_value x; memcpy(&x, &v, sizeof x); return x; }
static inline tpl_val to_val(tpl_value x) { tpl_val v; memcpy(&v, &x, sizeof v); return v; }

/* Where values built on r go now: the running render's arena from a callback, else the state's. */
static tpl_arena *val_arena(tpl_render *r)
{
    tpl_vm *vm = tpl_render_vm(r);
    return tpl_render_busy(r) ? &vm->arena : &vm->state_arena;
}

static tpl_status arena_fail(const tpl_arena *a) { return a->over_limit ? TPL_ERR_LIMIT : TPL_ERR_NOMEM; }

/* A value the state may hold changes (a list or dict the host fills, or the state itself): the
 * native code's state memo is emptied before the next render (vm_impl.h state_stamp). */
static void state_changed(tpl_render *r) { tpl_render_vm(r)->state_stamp++; }

/* ------------------------------------------------------------------ constructors */

tpl_val tpl_val_none(void) { return to_val(tpl_v_none()); }
tpl_val tpl_val_bool(bool b) { return to_val(tpl_v_bool(b)); }
tpl_val tpl_val_int(int64_t i) { return to_val(tpl_v_int(i)); }
tpl_val tpl_val_float(double d) { return to_val(tpl_v_float(d)); }
tpl_val tpl_val_undefined(void) { return to_val(tpl_v_undef()); }

tpl_status tpl_val_int_text(tpl_render *r, const char *s, size_t len, int base, tpl_val *out)
{
    if (!r || !out || (!s && len) || base < 2 || base > 36) return TPL_ERR_USAGE;
    size_t d = len && (s[0] == '-' || s[0] == '+');
    if (len == d) return TPL_ERR_VALUE;
    for (size_t i = d; i < len; i++) {
        char c = s[i];
        int k = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'z' ? c - 'a' + 10 : c >= 'A' && c <= 'Z' ? c - 'A' + 10 : 99;
        if (k >= base) return TPL_ERR_VALUE;
    }
    tpl_arena *a = val_arena(r);
    tpl_value v;
    if (!tpl_big_parse(a, s, len, base, &v)) return TPL_ERR_LIMIT; /* too large (or no memory) */
    *out = to_val(v);
    return TPL_OK;
}

tpl_status tpl_val_rational_text(tpl_render *r, const char *s, size_t len, tpl_val *out)
{
    if (!r || !out || (!s && len)) return TPL_ERR_USAGE;
    size_t i = len && s[0] == '-', slash = 0, nd = 0;
    for (; i < len; i++) {
        if (s[i] == '/' && !slash && nd) { slash = i; nd = 0; continue; }
        if (s[i] < '0' || s[i] > '9') return TPL_ERR_VALUE;
        nd++;
    }
    if (!nd) return TPL_ERR_VALUE;
    if (len > (size_t)TPL_BIG_MAX_BITS) return TPL_ERR_LIMIT; /* (more digits than bits: past the limit) */
    char *t = malloc(len + 1);
    if (!t) return TPL_ERR_LIMIT;
    memcpy(t, s, len);
    t[len] = 0;
    mpq_t q;
    mpq_init(q);
    int bad = mpq_set_str(q, t, 10);
    free(t);
    if (bad || mpz_sgn(mpq_denref(q)) == 0) { mpq_clear(q); return TPL_ERR_VALUE; }
    mpq_canonicalize(q);
    tpl_value v;
    bool ok = tpl_rat_value(val_arena(r), q, &v);
    mpq_clear(q);
    if (!ok) return TPL_ERR_LIMIT;
    *out = to_val(v);
    return TPL_OK;
}

/* Not UTF-8 (out of line: the hot borrowed path keeps no stack slot for *bad). */
static bool __attribute__((noinline)) utf8_bad(const char *s, size_t len)
{
    size_t bad;
    return !tpl_utf8_valid(s, len, &bad);
}

/* The string value of tpl_val_str (r and s checked by the caller). */
static tpl_status str_value(tpl_render *r, const char *s, size_t len, unsigned flags, tpl_value *out)
{
    if (len > UINT32_MAX - 1) return TPL_ERR_VALUE;
    if (len && !(flags & TPL_VAL_UTF8_VALID) && utf8_bad(s, len)) return TPL_ERR_VALUE;
    const char *c = len ? s : "";
    if (!(flags & TPL_VAL_BORROW)) { /* (the arena is found only when copying: the borrowed path is hot) */
        tpl_arena *a = val_arena(r);
        if (!(c = tpl_arena_strdup(a, c, len))) return arena_fail(a);
    }
    *out = tpl_v_str(c, len);
    if (flags & (TPL_VAL_MARKUP | TPL_VAL_SYMBOL | TPL_VAL_FROZEN))
        out->flags |= (flags & TPL_VAL_MARKUP ? TPL_F_SAFE : 0) | (flags & TPL_VAL_SYMBOL ? TPL_F_SYMBOL : 0) |
                      (flags & TPL_VAL_FROZEN ? TPL_F_FROZEN_RB : 0);
    return TPL_OK;
}

tpl_status tpl_val_str(tpl_render *r, const char *s, size_t len, unsigned flags, tpl_val *out)
{
    if (!r || !out || (!s && len)) return TPL_ERR_USAGE;
    tpl_value v;
    tpl_status st = str_value(r, s, len, flags, &v);
    if (st == TPL_OK) *out = to_val(v);
    return st;
}

tpl_status tpl_val_undefined_text(tpl_render *r, const char *text, size_t len, bool hint, tpl_val *out)
{
    if (!r || !out || (!text && len)) return TPL_ERR_USAGE;
    tpl_value v;
    tpl_status st = str_value(r, text, len, 0, &v);
    if (st != TPL_OK) return st;
    tpl_value u = tpl_v_undef();
    u.aux = hint ? TPL_UNDEF_PLAIN : TPL_UNDEF_NAME;
    u.u.s = v.u.s;
    u.len = v.len;
    *out = to_val(u);
    return TPL_OK;
}

tpl_status tpl_val_undefined_missing(tpl_render *r, const char *owner, size_t owner_len, const char *name,
                                     size_t name_len, bool item, tpl_val *out)
{
    if (!r || !out || (!owner && owner_len) || (!name && name_len)) return TPL_ERR_USAGE;
    if (name_len > UINT32_MAX - 1 || owner_len > UINT32_MAX - 1 - name_len - 2) return TPL_ERR_VALUE;
    if ((owner_len && utf8_bad(owner, owner_len)) || (name_len && utf8_bad(name, name_len))) return TPL_ERR_VALUE;
    /* NAME NUL OWNER NUL: the undefined's text is the name (len), the owner's repr follows it */
    tpl_arena *a = val_arena(r);
    char *t = tpl_arena_alloc(a, name_len + owner_len + 2);
    if (!t) return arena_fail(a);
    if (name_len) memcpy(t, name, name_len);
    t[name_len] = 0;
    if (owner_len) memcpy(t + name_len + 1, owner, owner_len);
    t[name_len + 1 + owner_len] = 0;
    tpl_value u = tpl_v_undef();
    u.aux = item ? TPL_UNDEF_ITEM : TPL_UNDEF_ATTR;
    u.flags = TPL_UNDEF_OWNER_TEXT;
    u.u.s = t;
    u.len = (uint32_t)name_len;
    *out = to_val(u);
    return TPL_OK;
}

tpl_status tpl_val_str_borrow(const char *s, size_t len, tpl_val *out)
{
    if (!out || (!s && len)) return TPL_ERR_USAGE;
    if (len > UINT32_MAX - 1) return TPL_ERR_VALUE;
    *out = to_val(tpl_v_str(len ? s : "", len));
    return TPL_OK;
}

tpl_status tpl_val_list(tpl_render *r, size_t cap, unsigned flags, tpl_val *out)
{
    if (!r || !out) return TPL_ERR_USAGE;
    if (cap > UINT32_MAX / 2) return TPL_ERR_LIMIT;
    tpl_arena *a = val_arena(r);
    tpl_list *l = tpl_list_new(a, (uint32_t)cap);
    if (!l) return arena_fail(a);
    tpl_value v = tpl_v_list(l);
    if (flags & TPL_VAL_AS_TUPLE) v.flags |= TPL_F_TUPLE;
    *out = to_val(v);
    return TPL_OK;
}

tpl_status tpl_val_list_push(tpl_render *r, tpl_val list, tpl_val item)
{
    tpl_value l = from_val(list);
    if (!r || l.type != TPL_T_LIST) return TPL_ERR_USAGE;
    if (l.u.list->len == UINT32_MAX - 1) return TPL_ERR_LIMIT;
    state_changed(r);
    tpl_arena *a = val_arena(r);
    return tpl_list_push(a, l.u.list, from_val(item)) ? TPL_OK : arena_fail(a);
}

tpl_status tpl_val_range(tpl_render *r, tpl_val begin, tpl_val end, bool exclusive, tpl_val *out)
{
    if (!r || !out) return TPL_ERR_USAGE;
    tpl_value b = from_val(begin), e = from_val(end);
    bool num_b = b.type == TPL_T_INT || b.type == TPL_T_FLOAT, num_e = e.type == TPL_T_INT || e.type == TPL_T_FLOAT;
    bool plain_b = b.type != TPL_T_STR || !(b.flags & ~TPL_F_FROZEN_RB), plain_e = e.type != TPL_T_STR || !(e.flags & ~TPL_F_FROZEN_RB);
    if (!plain_b || !plain_e || !((num_b && (num_e || e.type == TPL_T_NONE)) ||
                                  (b.type == TPL_T_STR && (e.type == TPL_T_STR || e.type == TPL_T_NONE))))
        return TPL_ERR_TYPE;
    tpl_arena *a = val_arena(r);
    tpl_list *l = tpl_list_new(a, 3);
    if (!l) return arena_fail(a);
    l->items[0] = b;
    l->items[1] = e;
    l->items[2] = tpl_v_bool(exclusive);
    l->len = 3;
    tpl_value v = tpl_v_list(l);
    v.flags |= TPL_F_RANGE_RB;
    *out = to_val(v);
    return TPL_OK;
}

tpl_status tpl_val_map(tpl_render *r, size_t cap, tpl_val *out)
{
    if (!r || !out) return TPL_ERR_USAGE;
    if (cap > UINT32_MAX / 4) return TPL_ERR_LIMIT;
    tpl_arena *a = val_arena(r);
    tpl_map *m = tpl_map_new(a, (uint32_t)cap);
    if (!m) return arena_fail(a);
    *out = to_val(tpl_v_map(m));
    return TPL_OK;
}

/* A key a host may set (tpl_val_map_set): a string, number, bool or None, or a tuple of such keys
 * (Python's hashable tuples: {(1, 2): x}), nested at most TPL_NEST_MAX deep. A host object, in a
 * tuple or not, is not (its equality would need the render running: tpl_hobj_key_equal). */
static bool host_key_ok(tpl_value k, int depth)
{
    switch (k.type) {
    case TPL_T_STR: case TPL_T_INT: case TPL_T_BIGINT: case TPL_T_FLOAT: case TPL_T_BOOL: case TPL_T_NONE:
        return true;
    case TPL_T_LIST:
        if (!(k.flags & TPL_F_TUPLE) || (k.flags & TPL_F_RANGE_BIG) || depth >= TPL_NEST_MAX) return false;
        for (uint32_t i = 0; i < k.u.list->len; i++)
            if (!host_key_ok(k.u.list->items[i], depth + 1)) return false;
        return true;
    default:
        return false;
    }
}

tpl_status tpl_val_map_set(tpl_render *r, tpl_val map, tpl_val key, tpl_val val)
{
    tpl_value m = from_val(map), k = from_val(key);
    if (!r || m.type != TPL_T_MAP) return TPL_ERR_USAGE;
    if (!host_key_ok(k, 0)) return TPL_ERR_TYPE;
    if (m.u.map->len == UINT32_MAX / 4) return TPL_ERR_LIMIT;
    state_changed(r);
    tpl_arena *a = val_arena(r);
    return tpl_map_set(a, m.u.map, k, from_val(val)) ? TPL_OK : arena_fail(a);
}

uint64_t tpl_val_key_hash(const char *s, size_t len) { return s || !len ? tpl_hash_str(s, len) : 0; }

tpl_status tpl_val_map_add_str(tpl_render *r, tpl_val map, const char *key, size_t len, uint64_t hash,
                               unsigned flags, tpl_val val)
{
    tpl_value m = from_val(map), k;
    if (!r || m.type != TPL_T_MAP || (!key && len)) return TPL_ERR_USAGE;
    if (m.u.map->len == UINT32_MAX / 4) return TPL_ERR_LIMIT;
    tpl_status st = str_value(r, key, len, flags, &k);
    if (st != TPL_OK) return st;
    state_changed(r);
    tpl_arena *a = val_arena(r);
    return tpl_map_append(a, m.u.map, k, hash, from_val(val)) ? TPL_OK : arena_fail(a);
}

/* A map a host builds at once (tpl_val_map_of_str, _of_strs, list_of_str_maps) gets an index
 * only past this many entries, not past TPL_MAP_LINEAR_MAX: such a map is mostly a render's state
 * or a record, whose names the VM finds by its hints (the entry each name was found at before)
 * without an index, and every lookup of a map without one scans its entries (value.c, vm.c,
 * tpl_native.h: idx_cap 0), which for 16 is no slower than a probe. Building the index of a
 * ten-name state cost ~300 instructions a render. */
enum { HOST_MAP_LINEAR_MAX = 16 };

/* A map of n entries (all n in use, to be written by the caller at *d) and its entry array in one
 * block of a (entries are never freed on their own: a map that grows past its capacity takes a
 * new array). NULL when a refuses the block. */
static tpl_map *map_block(tpl_arena *a, size_t n, tpl_entry **d)
{
    enum { HEAD = (sizeof(tpl_map) + 15) & ~15 };
    tpl_map *m = tpl_arena_alloc(a, HEAD + n * sizeof(tpl_entry));
    if (!m) return NULL;
    *d = (tpl_entry *)(void *)((char *)m + HEAD);
    *m = (tpl_map){ .len = (uint32_t)n, .cap = (uint32_t)n, .e = n ? *d : NULL };
    return m;
}

tpl_status tpl_val_map_of_str(tpl_render *r, const tpl_str_entry *e, size_t n, unsigned flags, tpl_val *out)
{
    if (!r || !out || (!e && n)) return TPL_ERR_USAGE;
    if (n > UINT32_MAX / 4) return TPL_ERR_LIMIT;
    tpl_arena *a = val_arena(r);
    tpl_entry *d;
    tpl_map *m = map_block(a, n, &d);
    if (!m) return arena_fail(a);
    if ((flags & (TPL_VAL_BORROW | TPL_VAL_UTF8_VALID | TPL_VAL_MARKUP | TPL_VAL_SYMBOL)) ==
        (TPL_VAL_BORROW | TPL_VAL_UTF8_VALID)) {
        /* a Python dict's keys, taken as they are: each entry written in one go (the hot path of
         * a host converting a list of small dicts, issue 17) */
        for (size_t i = 0; i < n; i++, e++, d++) {
            const char *k = e->key;
            size_t len = e->len;
            if (!k) {
                if (len) return TPL_ERR_USAGE;
                k = "";
            }
            if (len > UINT32_MAX - 1) return TPL_ERR_VALUE;
            d->key = tpl_v_str(k, len);
            d->val = from_val(e->val);
            d->hash = e->hash;
        }
    } else {
        for (size_t i = 0; i < n; i++) {
            if (!e[i].key && e[i].len) return TPL_ERR_USAGE;
            tpl_value k;
            tpl_status st = str_value(r, e[i].key, e[i].len, flags, &k);
            if (st != TPL_OK) return st;
            d[i] = (tpl_entry){ k, from_val(e[i].val), e[i].hash };
        }
    }
    if (n > HOST_MAP_LINEAR_MAX && !tpl_map_reindex(a, m)) return arena_fail(a);
    *out = to_val(tpl_v_map(m));
    return TPL_OK;
}

tpl_status tpl_val_map_of_strs(tpl_render *r, const tpl_str_str *e, size_t n, tpl_val *out)
{
    if (!r || !out || (!e && n)) return TPL_ERR_USAGE;
    if (n > UINT32_MAX / 4) return TPL_ERR_LIMIT;
    tpl_arena *a = val_arena(r);
    tpl_entry *d;
    tpl_map *m = map_block(a, n, &d);
    if (!m) return arena_fail(a);
    for (size_t i = 0; i < n; i++, e++, d++) { /* index loop: e may be NULL when n == 0 */
        if ((!e->key && e->len) || (!e->s && e->slen) || e->len == UINT32_MAX || e->slen == UINT32_MAX)
            return TPL_ERR_USAGE;
        d->key = tpl_v_str(e->len ? e->key : "", e->len);
        d->val = tpl_v_str(e->slen ? e->s : "", e->slen);
        d->hash = e->hash;
    }
    if (n > HOST_MAP_LINEAR_MAX && !tpl_map_reindex(a, m)) return arena_fail(a);
    *out = to_val(tpl_v_map(m));
    return TPL_OK;
}

tpl_status tpl_val_list_of_str_maps(tpl_render *r, const tpl_str_str *e, const uint32_t *counts, size_t n,
                                    unsigned flags, tpl_val *out)
{
    enum { HEAD = (sizeof(tpl_map) + 15) & ~15, LHEAD = (sizeof(tpl_list) + 15) & ~15 };
    if (!r || !out || (!counts && n)) return TPL_ERR_USAGE;
    if (n > UINT32_MAX / 2) return TPL_ERR_LIMIT;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (counts[i] > UINT32_MAX / 4) return TPL_ERR_LIMIT;
        total += counts[i];
    }
    if (!e && total) return TPL_ERR_USAGE;
    if (total > (SIZE_MAX / 2 - LHEAD) / (sizeof(tpl_entry) + HEAD)) return TPL_ERR_LIMIT;
    /* one block: the list, its n items, then each map's head and entries */
    tpl_arena *a = val_arena(r);
    char *p = tpl_arena_alloc(a, LHEAD + n * (sizeof(tpl_value) + HEAD) + total * sizeof(tpl_entry));
    if (!p) return arena_fail(a);
    tpl_list *l = (tpl_list *)(void *)p;
    tpl_value *items = (tpl_value *)(void *)(p + LHEAD);
    *l = (tpl_list){ .len = (uint32_t)n, .cap = (uint32_t)n, .items = n ? items : NULL };
    p += LHEAD + n * sizeof(tpl_value);
    for (size_t i = 0; i < n; i++) {
        size_t k = counts[i];
        tpl_map *m = (tpl_map *)(void *)p;
        tpl_entry *d = (tpl_entry *)(void *)(p + HEAD);
        p += HEAD + k * sizeof(tpl_entry);
        *m = (tpl_map){ .len = (uint32_t)k, .cap = (uint32_t)k, .e = k ? d : NULL };
        for (size_t j = 0; j < k; j++, e++, d++) {
            if ((!e->key && e->len) || (!e->s && e->slen) || e->len == UINT32_MAX || e->slen == UINT32_MAX)
                return TPL_ERR_USAGE;
            d->key = tpl_v_str(e->len ? e->key : "", e->len);
            d->val = tpl_v_str(e->slen ? e->s : "", e->slen);
            d->hash = e->hash;
        }
        if (k > HOST_MAP_LINEAR_MAX && !tpl_map_reindex(a, m)) return arena_fail(a);
        items[i] = tpl_v_map(m);
    }
    tpl_value v = tpl_v_list(l);
    if (flags & TPL_VAL_AS_TUPLE) v.flags |= TPL_F_TUPLE;
    *out = to_val(v);
    return TPL_OK;
}

tpl_status tpl_val_list_of(tpl_render *r, const tpl_val *items, size_t n, unsigned flags, tpl_val *out)
{
    if (!r || !out || (!items && n)) return TPL_ERR_USAGE;
    if (n > UINT32_MAX / 2) return TPL_ERR_LIMIT;
    tpl_arena *a = val_arena(r);
    tpl_list *l = tpl_list_new(a, (uint32_t)n);
    if (!l) return arena_fail(a);
    if (n) memcpy(l->items, items, n * sizeof *l->items);
    l->len = (uint32_t)n;
    tpl_value v = tpl_v_list(l);
    if (flags & TPL_VAL_AS_TUPLE) v.flags |= TPL_F_TUPLE;
    *out = to_val(v);
    return TPL_OK;
}

unsigned tpl_val_str_flags(tpl_val v)
{
    tpl_value x = from_val(v);
    if (x.type != TPL_T_STR || (x.flags & (TPL_F_CLASS_RB | TPL_F_REGEX_RB | TPL_F_EXC_RB))) return 0;
    return (x.flags & TPL_F_SAFE ? TPL_VAL_MARKUP : 0) | (x.flags & TPL_F_SYMBOL ? TPL_VAL_SYMBOL : 0) |
           (x.flags & TPL_F_FROZEN_RB ? TPL_VAL_FROZEN : 0);
}

tpl_status tpl_val_freeze(tpl_val *v)
{
    if (!v) return TPL_ERR_USAGE;
    tpl_value x = from_val(*v);
    if (x.type == TPL_T_STR) x.flags |= TPL_F_FROZEN_RB;
    else if ((x.type == TPL_T_LIST && !(x.flags & ~(TPL_F_FROZEN_CT_RB | TPL_F_MUT_RB))) || (x.type == TPL_T_MAP && !(x.flags & TPL_F_NS)))
        x.flags |= TPL_F_FROZEN_CT_RB;   /* (a plain list: no tuple, range, enumerator, match) */
    else return TPL_ERR_TYPE;
    *v = to_val(x);
    return TPL_OK;
}

tpl_status tpl_val_host(tpl_render *r, const tpl_host_class *cls, void *obj, tpl_val *out)
{
    if (!r || !cls || !out) return TPL_ERR_USAGE;
    tpl_arena *a = val_arena(r);
    tpl_hobj *h = tpl_arena_alloc(a, sizeof *h);
    if (!h) return arena_fail(a);
    h->cls = cls;
    h->obj = obj;
    h->r = r;
    h->has_it = false;
    h->it = tpl_v_none();
    tpl_render_vm(r)->has_host = true;
    tpl_value v = { 0 };
    v.type = TPL_T_HOST;
    v.u.p = h;
    *out = to_val(v);
    return TPL_OK;
}

/* ------------------------------------------------------------------ readers */

tpl_val_kind tpl_val_kind_of(tpl_val v)
{
    tpl_value x = from_val(v);
    switch (x.type) {
    case TPL_T_UNDEF: case TPL_T_UNSET: return TPL_VAL_UNDEFINED;
    case TPL_T_NONE: return TPL_VAL_NONE;
    case TPL_T_BOOL: return TPL_VAL_BOOL;
    case TPL_T_INT: return TPL_VAL_INT;
    case TPL_T_FLOAT: return TPL_VAL_FLOAT;
    case TPL_T_STR: return TPL_VAL_STR;
    case TPL_T_LIST: return x.flags & TPL_F_TUPLE ? TPL_VAL_TUPLE : TPL_VAL_LIST;
    case TPL_T_MAP: return TPL_VAL_MAP;
    case TPL_T_HOST: return TPL_VAL_HOST;
    case TPL_T_BIGINT: return TPL_VAL_BIGINT;
    case TPL_T_RATIONAL: return TPL_VAL_RATIONAL;
    default: return TPL_VAL_OTHER;
    }
}

bool tpl_val_as_bool(tpl_val v) { tpl_value x = from_val(v); return x.type == TPL_T_BOOL && x.u.i; }
int64_t tpl_val_as_int(tpl_val v)
{
    tpl_value x = from_val(v);
    return x.type == TPL_T_INT || x.type == TPL_T_BOOL ? x.u.i : 0;
}
double tpl_val_as_float(tpl_val v)
{
    tpl_value x = from_val(v);
    if (x.type == TPL_T_FLOAT) return x.u.f;
    return x.type == TPL_T_INT || x.type == TPL_T_BOOL ? (double)x.u.i : 0.0;
}
const char *tpl_val_as_str(tpl_val v, size_t *len)
{
    tpl_value x = from_val(v);
    bool s = x.type == TPL_T_STR || x.type == TPL_T_UNDEF || x.type == TPL_T_BIGINT || x.type == TPL_T_RATIONAL;
    if (len) *len = s ? x.len : 0;
    return s ? (x.u.s ? x.u.s : "") : NULL;
}
bool tpl_val_is_markup(tpl_val v) { tpl_value x = from_val(v); return x.type == TPL_T_STR && (x.flags & TPL_F_SAFE); }
size_t tpl_val_len(tpl_val v)
{
    tpl_value x = from_val(v);
    if (x.type == TPL_T_LIST) return x.u.list->len;
    if (x.type == TPL_T_MAP) return x.u.map->len;
    return 0;
}
tpl_val tpl_val_item(tpl_val v, size_t i)
{
    tpl_value x = from_val(v);
    return to_val(x.type == TPL_T_LIST && i < x.u.list->len ? x.u.list->items[i] : tpl_v_undef());
}
tpl_val tpl_val_map_key(tpl_val v, size_t i)
{
    tpl_value x = from_val(v);
    return to_val(x.type == TPL_T_MAP && i < x.u.map->len ? x.u.map->e[i].key : tpl_v_undef());
}
tpl_val tpl_val_map_value(tpl_val v, size_t i)
{
    tpl_value x = from_val(v);
    return to_val(x.type == TPL_T_MAP && i < x.u.map->len ? x.u.map->e[i].val : tpl_v_undef());
}
void *tpl_val_host_object(tpl_val v)
{
    tpl_value x = from_val(v);
    return x.type == TPL_T_HOST ? ((tpl_hobj *)x.u.p)->obj : NULL;
}
const tpl_host_class *tpl_val_host_class(tpl_val v)
{
    tpl_value x = from_val(v);
    return x.type == TPL_T_HOST ? ((tpl_hobj *)x.u.p)->cls : NULL;
}

const char *tpl_val_type_name(tpl_val v)
{
    tpl_value x = from_val(v);
    if (x.type == TPL_T_HOST) return NULL;
    return tpl_types[tpl_undef_container(x) - 1].py; /* (the row, cyclers and joiners told apart) */
}
bool tpl_val_range_params(tpl_val v, tpl_val *out)
{
    tpl_value x = from_val(v);
    if (!out || x.type != TPL_T_LIST || x.aux != TPL_LAZY_RANGE) return false;
    const tpl_value *p = tpl_range_params(x);
    for (int i = 0; i < 3; i++) out[i] = to_val(p[i]);
    return true;
}
tpl_val tpl_val_view_dict(tpl_val v)
{
    tpl_value x = from_val(v);
    tpl_map *m = tpl_is_view(x) ? tpl_view_dict(x) : NULL;
    return to_val(m ? tpl_v_map(m) : tpl_v_undef());
}

/* ------------------------------------------------------------------ state and errors */

tpl_status tpl_render_reset_state(tpl_render *r)
{
    if (!r || tpl_render_busy(r)) return TPL_ERR_USAGE;
    tpl_vm *vm = tpl_render_vm(r);
    tpl_render_state_reset(r);
    vm->state = tpl_v_none();
    vm->globals = tpl_v_none();
    vm->rb_self = tpl_v_none();
    vm->rb_ivars_state = false;
    vm->state_stamp++;
    return TPL_OK;
}

tpl_status tpl_render_set_state_val(tpl_render *r, tpl_val map)
{
    if (!r || tpl_render_busy(r)) return TPL_ERR_USAGE;
    tpl_value m = from_val(map);
    if (m.type != TPL_T_MAP) return TPL_ERR_USAGE;
    tpl_render_vm(r)->state = m;
    tpl_render_vm(r)->state_host = true; /* (a Python dict's lists: issue 14, vm.c own_header) */
    state_changed(r);
    return TPL_OK;
}

tpl_status tpl_render_set_state_reads(tpl_render *r, const tpl_program *p, const uint32_t *which, const tpl_val *vals,
                                      size_t n)
{
    if (!r || !p || tpl_render_busy(r) || (n && (!which || !vals))) return TPL_ERR_USAGE;
    const uint32_t *idx;
    size_t nreads;
    if (!tpl_program_reads_cached(p, &idx, &nreads)) return TPL_ERR_NOMEM;
    if (n > UINT32_MAX / 4) return TPL_ERR_LIMIT;
    tpl_vm *vm = tpl_render_vm(r);
    vm->reads_prog = NULL;
    tpl_arena *a = &vm->state_arena;
    tpl_entry *d;
    tpl_map *m = map_block(a, n, &d);
    if (!m) return arena_fail(a);
    /* the keys are p's names (tpl_program_reads' strings: UTF-8, hashed when p was made); which
     * name each entry holds kept for tpl_vm_run's lookups (vm_impl.h reads_prog) */
    bool keep = p->nnames <= TPL_VM_NAME_HITS && n <= TPL_VM_NAME_HITS;
    const tpl_name *names = p->names;
    for (size_t k = 0; k < n; k++) {
        uint32_t w = which[k];
        if (w >= nreads) return TPL_ERR_USAGE; /* (the map left in the state arena: reset drops it) */
        uint32_t ni = idx[w];
        const tpl_name *nm = &names[ni];
        d[k].key = tpl_v_str(nm->s.u.s, nm->s.len);
        d[k].val = from_val(vals[k]);
        d[k].hash = nm->resolved ? nm->hash : tpl_hash_str(nm->s.u.s, nm->s.len);
        if (keep) vm->reads_name[k] = (uint16_t)ni;
    }
    if (n > HOST_MAP_LINEAR_MAX && !tpl_map_reindex(a, m)) return arena_fail(a);
    vm->state = tpl_v_map(m);
    vm->state_host = true; /* (as tpl_render_set_state_val's) */
    state_changed(r);
    if (keep) {
        vm->reads_n = (uint32_t)n;
        vm->reads_map = m;
        vm->reads_e = m->e;
        vm->reads_prog = p;
    }
    return TPL_OK;
}

void tpl_render_set_output(tpl_render *r, tpl_write_fn write, void *data)
{
    if (!r || tpl_render_busy(r)) return;
    tpl_vm *vm = tpl_render_vm(r);
    vm->out_write = write;
    vm->out_data = write ? data : NULL;
}

tpl_status tpl_render_set_globals_val(tpl_render *r, tpl_val map)
{
    if (!r || tpl_render_busy(r)) return TPL_ERR_USAGE;
    tpl_value m = from_val(map);
    if (m.type != TPL_T_MAP && m.type != TPL_T_NONE) return TPL_ERR_USAGE;
    tpl_render_vm(r)->globals = m;
    if (m.type == TPL_T_MAP) tpl_render_vm(r)->state_host = true;
    state_changed(r); /* (a native program keeps the names it found, globals' too) */
    return TPL_OK;
}

tpl_status tpl_render_set_self_val(tpl_render *r, tpl_val self)
{
    if (!r || tpl_render_busy(r)) return TPL_ERR_USAGE;
    tpl_value v = from_val(self);
    if (v.type != TPL_T_HOST && v.type != TPL_T_NONE) return TPL_ERR_USAGE;
    tpl_render_vm(r)->rb_self = v;
    tpl_render_vm(r)->rb_ivars_state = false;
    state_changed(r);
    return TPL_OK;
}

tpl_status tpl_render_set_self_ivars_in_state(tpl_render *r, bool in_state)
{
    if (!r || (in_state && tpl_render_busy(r))) return TPL_ERR_USAGE;
    tpl_render_vm(r)->rb_ivars_state = in_state;
    return TPL_OK;
}

void tpl_host_error(tpl_render *r, const char *msg, void *payload)
{
    if (!r) return;
    tpl_vm *vm = tpl_render_vm(r);
    snprintf(vm->host_msg, sizeof vm->host_msg, "%s", msg ? msg : "");
    vm->host_payload = payload;
}

tpl_status tpl_render_charge(tpl_render *r, uint64_t units)
{
    if (!r || !tpl_render_busy(r)) return TPL_ERR_USAGE;
    tpl_vm *vm = tpl_render_vm(r);
    if (vm->err.status != TPL_OK) return vm->err.status;
    if (tpl_fuel_charge(&vm->fuel, units)) return TPL_OK;
    tpl_vm_limit(vm, TPL_EK_FUEL, vm->limits.fuel);
    return TPL_ERR_LIMIT;
}

void *tpl_render_error_payload(const tpl_render *r)
{
    return r ? tpl_render_vm((tpl_render *)r)->host_payload : NULL;
}

/* ---- what a failed tpl_render_call allocated, given back when the host rescues its error
 *
 * A call's snapshot: the arena's mark, a copy of what the arena and the slots held before it
 * and the VM's fields that point into the arena. When the call fails and the host takes its
 * error back (tpl_render_rescue) with all of it unchanged — nothing made before the call was
 * written, no host callback ran (the host may keep what it was given), no list or dict changed
 * in place — nothing older can point into what the call allocated: the arena is rewound to the
 * mark, so a host catching a failing macro's error in a loop runs in bounded memory (probe35:
 * 50,000 catches of a macro that builds 10 KB then fails reached the memory limit; Jinja2's
 * garbage is collected). Taken only while the arena and slots hold at most
 * TPL_RESCUE_COPY_MAX bytes (its cost, a copy, per call), for Jinja programs. */
#define TPL_RESCUE_COPY_MAX (64u * 1024u)

typedef struct rescue_fields { /* (compared with memcmp: zeroed first) */
    const void *own, *undo, *open_cl, *cur_cl, *p, *import_out;
    uint64_t changes, dict_changes, dict_del_n, host_runs;
    uint32_t own_n, own_cap, undo_n, dict_hole_n, slot_top, depth, inc_open, root_base, stack_top, import_out_len;
    int ncaptures;
} rescue_fields;

struct tpl_rescue_snap {
    tpl_arena_mark mark;
    rescue_fields f;
    /* the arena when the call failed: the host's rescue rewinds only if it is still so */
    tpl_chunk *fail_head;
    size_t fail_used, fail_total, bytes;
    uint64_t cat_tick; /* vm->cat_tick when taken (vm->cat_fence: rescue_unchanged_w) */
    unsigned char copy[]; /* the marked chunks' used bytes, then slots [0, slot_top) */
};

static void rescue_fields_of(const tpl_vm *vm, rescue_fields *f)
{
    memset(f, 0, sizeof *f);
    f->own = vm->own;
    f->undo = vm->undo;
    f->open_cl = vm->open_cl;
    f->cur_cl = vm->cur_cl;
    f->p = vm->p;
    f->import_out = vm->import_out.u.p;
    f->import_out_len = vm->import_out.len;
    f->changes = vm->changes;
    f->dict_changes = vm->dict_changes;
    f->dict_del_n = vm->dict_del_n;
    f->host_runs = vm->host_runs;
    f->own_n = vm->own_n;
    f->own_cap = vm->own_cap;
    f->undo_n = vm->undo_n;
    f->dict_hole_n = vm->dict_hole_n;
    f->slot_top = vm->slot_top;
    f->depth = vm->depth;
    f->inc_open = vm->inc_open;
    f->root_base = vm->root_base;
    f->stack_top = vm->stack_top;
    f->ncaptures = vm->ncaptures;
}

static void rescue_drop(tpl_vm *vm, struct tpl_rescue_snap *sn)
{
    if (sn) vm->alloc.free(vm->alloc.data, sn, sizeof *sn + sn->bytes);
}

/* The snapshot before a call (NULL: none taken). Not inlined: its mark (260 bytes) stays off
 * tpl_render_call's frame, which nested calls stack. */
static __attribute__((noinline)) struct tpl_rescue_snap *rescue_take_max(tpl_vm *vm, size_t max)
{
    if (tpl_vm_syntax(vm) != TPL_SYNTAX_JINJA) return NULL;
    tpl_arena_mark m;
    if (!tpl_arena_mark_take(&vm->arena, &m)) return NULL;
    size_t bytes = (size_t)vm->slot_top * sizeof *vm->slots;
    for (uint32_t i = 0; i < m.n; i++) {
        bytes += m.ch[i].used;
        if (bytes > max) return NULL;
    }
    if (bytes > max) return NULL;
    struct tpl_rescue_snap *sn = vm->alloc.alloc(vm->alloc.data, sizeof *sn + bytes);
    if (!sn) return NULL;
    sn->mark = m;
    sn->bytes = bytes;
    sn->cat_tick = vm->cat_fence = vm->cat_tick;
    rescue_fields_of(vm, &sn->f);
    unsigned char *o = sn->copy;
    for (uint32_t i = 0; i < m.n; i++) {
        if (m.ch[i].used) memcpy(o, m.ch[i].c->data, m.ch[i].used);
        o += m.ch[i].used;
    }
    if (vm->slot_top) memcpy(o, vm->slots, (size_t)vm->slot_top * sizeof *vm->slots);
    return sn;
}

static struct tpl_rescue_snap *rescue_take(tpl_vm *vm)
{
    return rescue_take_max(vm, TPL_RESCUE_COPY_MAX);
}

/* Whether p points into what a rewind to sn gives back: a marked chunk past its marked use, or a
 * chunk taken since (each chunk's end counted in: conservative). */
static bool in_given_back(const tpl_vm *vm, const struct tpl_rescue_snap *sn, uintptr_t p)
{
    for (const tpl_chunk *x = vm->arena.head; x; x = x->next) {
        uintptr_t lo = (uintptr_t)x->data, hi = lo + x->size;
        if (p < lo || p > hi) continue;
        for (uint32_t i = 0; i < sn->mark.n; i++)
            if (sn->mark.ch[i].c == x) return p >= lo + sn->mark.ch[i].used;
        return true;
    }
    return false;
}

/* Whether the n bytes at cur may stay as they are now though they differ from was (n a multiple of
 * 8 or not, cur 8-aligned): with writes (a release), no aligned word that changed holds an address
 * in what a rewind to sn gives back — a pointer field is an aligned word, so nothing older can
 * point there; its other changes (a namespace's counter, a list's length or an item that is no
 * pointer into that memory) are the template's and stay. Without writes, unchanged. *changed is
 * set when they differ. */
static bool rescue_same(const tpl_vm *vm, const struct tpl_rescue_snap *sn, const unsigned char *was,
                        const unsigned char *cur, size_t n, bool writes, bool *changed)
{
    enum { BLOCK = 4096 };
    for (size_t at = 0; at < n; at += BLOCK) {
        size_t k = n - at < BLOCK ? n - at : BLOCK;
        if (memcmp(was + at, cur + at, k) == 0) continue;
        *changed = true;
        if (!writes) return false;
        for (size_t i = at; i + 8 <= at + k; i += 8) {
            uint64_t a, b;
            memcpy(&a, was + i, 8);
            memcpy(&b, cur + i, 8);
            if (a != b && in_given_back(vm, sn, (uintptr_t)b)) return false;
        }
    }
    return true;
}

/* Whether nothing the snapshot saw changed (the arena as it was when the call failed) — with
 * writes, whether a rewind to it leaves nothing older pointing into what it gives back: the
 * arena's and slots' bytes may differ (rescue_same), the VM's fields may differ only in their
 * change counters. *changed (NULL: not wanted): whether the arena's or slots' bytes differ. */
static bool rescue_unchanged_w(const tpl_vm *vm, const struct tpl_rescue_snap *sn, bool writes, bool *changed)
{
    bool dummy = false;
    if (!changed) changed = &dummy;
    *changed = false;
    const tpl_chunk *h = vm->arena.head;
    if (h != sn->fail_head || (h && h->used != sn->fail_used) || vm->arena.total != sn->fail_total) return false;
    rescue_fields f;
    rescue_fields_of(vm, &f);
    /* (a string made before the snapshot that grew in place since reaches past its mark with only its
     * length changed: no pointer to find) */
    if (writes && vm->cat_crossed > sn->cat_tick) return false;
    if (writes) { /* (counters of in-place changes: the template's changes stay, so do their counts) */
        f.changes = sn->f.changes;
        f.dict_changes = sn->f.dict_changes;
    }
    if (memcmp(&f, &sn->f, sizeof f) != 0) return false;
    const unsigned char *o = sn->copy;
    for (uint32_t i = 0; i < sn->mark.n; i++) {
        const tpl_chunk *c = NULL; /* (still one of the arena's) */
        for (const tpl_chunk *x = vm->arena.head; x && !c; x = x->next)
            if (x == sn->mark.ch[i].c) c = x;
        if (!c || c->used < sn->mark.ch[i].used) return false;
        if (!rescue_same(vm, sn, o, c->data, sn->mark.ch[i].used, writes, changed)) return false;
        o += sn->mark.ch[i].used;
    }
    return vm->slot_top == 0 ||
           rescue_same(vm, sn, o, (const unsigned char *)vm->slots, (size_t)vm->slot_top * sizeof *vm->slots, writes,
                       changed);
}

static bool rescue_unchanged(const tpl_vm *vm, const struct tpl_rescue_snap *sn)
{
    return rescue_unchanged_w(vm, sn, false, NULL);
}

/* After a rewind to sn that kept writes: sn's copy and fields made what the memory holds now. */
static void rescue_retake(const tpl_vm *vm, struct tpl_rescue_snap *sn)
{
    rescue_fields_of(vm, &sn->f);
    unsigned char *o = sn->copy;
    for (uint32_t i = 0; i < sn->mark.n; i++) {
        if (sn->mark.ch[i].used) memcpy(o, sn->mark.ch[i].c->data, sn->mark.ch[i].used);
        o += sn->mark.ch[i].used;
    }
    if (vm->slot_top) memcpy(o, vm->slots, (size_t)vm->slot_top * sizeof *vm->slots);
}

void tpl_vm_rescue_free(tpl_vm *vm)
{
    rescue_drop(vm, vm->rescue);
    vm->rescue = NULL;
}

tpl_status tpl_render_call(tpl_render *r, tpl_val fn, const tpl_val *args, size_t nargs, const tpl_val *kwnames,
                           const tpl_val *kwvals, size_t nkw, tpl_val *out)
{
    if (out) *out = to_val(tpl_v_none());
    if (!r || !out || (!args && nargs) || ((!kwnames || !kwvals) && nkw) || !tpl_render_busy(r) || nargs > 0xFFFF ||
        nkw > 0xFFFF)
        return TPL_ERR_USAGE;
    tpl_vm *vm = tpl_render_vm(r);
    if (vm->err.status != TPL_OK) return vm->err.status;
    for (size_t i = 0; i < nkw; i++)
        if (from_val(kwnames[i]).type != TPL_T_STR) return TPL_ERR_USAGE;
    tpl_vm_rescue_free(vm); /* (an older failed call's, not rescued) */
    struct tpl_rescue_snap *sn = rescue_take(vm);
    /* (the VM's calls take their arguments as scratch: copies) */
    tpl_value *a = tpl_arena_alloc(&vm->arena, (nargs + 2 * nkw + 1) * sizeof *a);
    if (!a) { rescue_drop(vm, sn); tpl_vm_nomem(vm); return vm->err.status; }
    for (size_t i = 0; i < nargs; i++) a[i] = from_val(args[i]);
    for (size_t i = 0; i < nkw; i++) {
        a[nargs + i] = from_val(kwnames[i]);
        a[nargs + nkw + i] = from_val(kwvals[i]);
    }
    tpl_value res;
    size_t out0 = vm->out_len;
    uint32_t inc0 = vm->inc_open;
    if (tpl_call_value_kw(vm, from_val(fn), a, (int)nargs, a + nargs, a + nargs + nkw, (int)nkw, &res) < 0) {
        /* (what the failed call printed is dropped, as Jinja2's macro drops its buffer: the render
         * may go on when the host rescues the error, tpl_render_rescue, which also gives back
         * what it allocated when it can) */
        if (vm->out_len > out0) vm->out_len = out0;
        vm->inc_open = inc0;
        if (sn) {
            sn->fail_head = vm->arena.head;
            sn->fail_used = vm->arena.head ? vm->arena.head->used : 0;
            sn->fail_total = vm->arena.total;
            tpl_vm_rescue_free(vm); /* (a failed call inside it that was not rescued) */
            vm->rescue = sn;
        }
        return vm->err.status != TPL_OK ? vm->err.status : TPL_ERR_TYPE;
    }
    rescue_drop(vm, sn);
    *out = to_val(res);
    return TPL_OK;
}

tpl_status tpl_render_rescue(tpl_render *r, tpl_error *taken)
{
    if (taken) memset(taken, 0, sizeof *taken);
    if (!r || !tpl_render_busy(r)) return TPL_ERR_USAGE;
    tpl_vm *vm = tpl_render_vm(r);
    tpl_status st = vm->err.status;
    if (st == TPL_OK || st == TPL_ERR_LIMIT || st == TPL_ERR_NOMEM || vm->fuel == 0 || vm->arena.over_limit) return st;
    if (taken) *taken = vm->err; /* (its strings are the render's buffers: left as they are) */
    vm->host_payload = NULL; /* (the host's now: it took it with tpl_render_error_payload) */
    vm->host_msg[0] = 0;
    memset(&vm->err, 0, sizeof vm->err);
    vm->err_unlocated = false;
    struct tpl_rescue_snap *sn = vm->rescue;
    if (sn && rescue_unchanged(vm, sn)) {
        /* nothing older points into what the failed call allocated: given back (the in-place
         * concatenation caches may name that memory: forgotten) */
        tpl_arena_rewind(&vm->arena, &sn->mark);
        memset(vm->cat, 0, sizeof vm->cat);
        memset(vm->lcat, 0, sizeof vm->lcat);
    }
    tpl_vm_rescue_free(vm);
    return TPL_OK;
}

/* ---- a host's mark: what a successful call allocated, given back when the host is done with it
 *
 * The snapshot a failed call's rescue takes (rescue_take), taken when the host asks, before it
 * converts a call's arguments (tpl_render_mark), and compared when it has read the result
 * (tpl_render_release): unchanged, the arena is rewound to it, so a host calling a macro in a
 * loop (tpl.jinja2's Template.module, 100,000 calls: 93 MB kept until the render ended) runs in
 * bounded memory. */
struct tpl_mark_node {
    struct tpl_mark_node *prev;
    struct tpl_rescue_snap *sn; /* (NULL: none taken — not Jinja, or more than TPL_RESCUE_COPY_MAX) */
    bool batched;               /* sn NULL, and vm->standing (of epoch) stands for it */
    uint32_t epoch;
};

/* A render's memory over TPL_RESCUE_COPY_MAX (a module whose top level made 70 KB): a snapshot
 * per call would copy and compare all of it for each call, so none was taken and every call's
 * memory stayed (~110 bytes a call of a small macro, until the render ended). Such marks share
 * one snapshot, vm->standing (up to TPL_BATCH_COPY_MAX), taken at the first: each release that
 * may give back leaves the call's memory in place until what the calls since the snapshot
 * allocated reaches the snapshot's size (at least TPL_RESCUE_COPY_MAX); then the memory is
 * compared once, as a single call's would be, and, unchanged, rewound to the snapshot, giving
 * back all those calls at once (the snapshot stays: the memory is again what it saw). Copy and
 * compare cost about one byte per byte given back, and the render's memory stays within about
 * twice what it held. A release that may not give back (the host keeps a value of the call), or
 * a compare that finds an older word pointing into the batch's memory (rescue_same; other writes,
 * a namespace's counter, stay and the snapshot takes them), drops the snapshot (no later release
 * rewinds past that call). */
#define TPL_BATCH_COPY_MAX (16u * 1024u * 1024u)

/* The bytes the arena's chunks hand out now. */
static size_t arena_used(const tpl_vm *vm)
{
    size_t n = 0;
    for (const tpl_chunk *x = vm->arena.head; x; x = x->next) n += x->used;
    return n;
}

/* Drops vm->standing; no new one is taken before the memory grew by as much again (a host
 * alternating calls that may and may not give back would copy it all on every call). */
static void standing_drop(tpl_vm *vm)
{
    if (!vm->standing) return;
    size_t due = vm->standing->bytes > TPL_RESCUE_COPY_MAX ? vm->standing->bytes : TPL_RESCUE_COPY_MAX;
    vm->standing_next = arena_used(vm) + due;
    rescue_drop(vm, vm->standing);
    vm->standing = NULL;
    vm->standing_epoch++;
}

void tpl_vm_marks_free(tpl_vm *vm)
{
    while (vm->marks) {
        struct tpl_mark_node *m = vm->marks;
        vm->marks = m->prev;
        rescue_drop(vm, m->sn);
        vm->alloc.free(vm->alloc.data, m, sizeof *m);
    }
    standing_drop(vm);
    vm->standing_next = 0;
}

tpl_status tpl_render_mark(tpl_render *r)
{
    if (!r || !tpl_render_busy(r)) return TPL_ERR_USAGE;
    tpl_vm *vm = tpl_render_vm(r);
    struct tpl_mark_node *m = vm->alloc.alloc(vm->alloc.data, sizeof *m);
    if (!m) return TPL_ERR_NOMEM;
    m->sn = vm->err.status == TPL_OK ? rescue_take(vm) : NULL;
    m->batched = false;
    if (!m->sn && vm->err.status == TPL_OK && tpl_vm_syntax(vm) == TPL_SYNTAX_JINJA) {
        if (!vm->standing && arena_used(vm) >= vm->standing_next &&
            (vm->standing = rescue_take_max(vm, TPL_BATCH_COPY_MAX)) != NULL)
            vm->standing_epoch++;
        m->batched = vm->standing != NULL;
        m->epoch = vm->standing_epoch;
    }
    m->prev = vm->marks;
    vm->marks = m;
    return TPL_OK;
}

/* The bytes the arena's chunks hand out now beyond the snapshot's mark (sn's chunks still the
 * arena's oldest, or SIZE_MAX). */
static size_t used_since(const tpl_vm *vm, const struct tpl_rescue_snap *sn)
{
    size_t n = 0;
    for (const tpl_chunk *x = vm->arena.head; x; x = x->next) {
        uint32_t i = 0;
        while (i < sn->mark.n && sn->mark.ch[i].c != x) i++;
        if (i == sn->mark.n) n += x->used;
        else if (x->used >= sn->mark.ch[i].used) n += x->used - sn->mark.ch[i].used;
        else return SIZE_MAX; /* (rewound below the mark since: compared, it fails) */
    }
    return n;
}

/* The release of a batched mark (see TPL_BATCH_COPY_MAX). */
static bool release_batched(tpl_vm *vm, const struct tpl_mark_node *m, bool give_back)
{
    struct tpl_rescue_snap *sn = vm->standing;
    if (!sn || m->epoch != vm->standing_epoch) return false;
    if (!give_back || vm->err.status != TPL_OK || vm->rescue) {
        standing_drop(vm);
        return false;
    }
    size_t due = sn->bytes > TPL_RESCUE_COPY_MAX ? sn->bytes : TPL_RESCUE_COPY_MAX;
    if (used_since(vm, sn) < due) return false; /* (later, with the next calls') */
    sn->fail_head = vm->arena.head;
    sn->fail_used = vm->arena.head ? vm->arena.head->used : 0;
    sn->fail_total = vm->arena.total;
    bool changed;
    if (!rescue_unchanged_w(vm, sn, true, &changed)) {
        standing_drop(vm);
        return false;
    }
    tpl_arena_rewind(&vm->arena, &sn->mark);
    memset(vm->cat, 0, sizeof vm->cat);
    memset(vm->lcat, 0, sizeof vm->lcat);
    if (changed) rescue_retake(vm, sn); /* (what the calls wrote stays: the next batch compares with it) */
    return true;
}

bool tpl_render_release(tpl_render *r, bool give_back)
{
    if (!r || !tpl_render_busy(r)) return false;
    tpl_vm *vm = tpl_render_vm(r);
    struct tpl_mark_node *m = vm->marks;
    if (!m) return false;
    vm->marks = m->prev;
    struct tpl_rescue_snap *sn = m->sn;
    if (m->batched) {
        bool back = release_batched(vm, m, give_back);
        vm->alloc.free(vm->alloc.data, m, sizeof *m);
        return back;
    }
    vm->alloc.free(vm->alloc.data, m, sizeof *m);
    bool back = false;
    if (sn && give_back && vm->err.status == TPL_OK && !vm->rescue) {
        /* (rescue_unchanged compares the arena's end with the one recorded: now) */
        sn->fail_head = vm->arena.head;
        sn->fail_used = vm->arena.head ? vm->arena.head->used : 0;
        sn->fail_total = vm->arena.total;
        if (rescue_unchanged_w(vm, sn, true, NULL)) {
            tpl_arena_rewind(&vm->arena, &sn->mark);
            memset(vm->cat, 0, sizeof vm->cat);
            memset(vm->lcat, 0, sizeof vm->lcat);
            back = true;
        }
    }
    rescue_drop(vm, sn);
    return back;
}

tpl_status tpl_render_getattr(tpl_render *r, tpl_val v, const char *name, size_t len, tpl_val *out)
{
    if (out) *out = to_val(tpl_v_none());
    if (!r || !out || (!name && len) || !tpl_render_busy(r) || len > UINT32_MAX - 1) return TPL_ERR_USAGE;
    tpl_vm *vm = tpl_render_vm(r);
    if (vm->err.status != TPL_OK) return vm->err.status;
    tpl_value res;
    if (tpl_getattr(vm, from_val(v), len ? name : "", len, &res) < 0)
        return vm->err.status != TPL_OK ? vm->err.status : TPL_ERR_TYPE;
    *out = to_val(res);
    return TPL_OK;
}

uint64_t tpl_render_changes(const tpl_render *r)
{
    return r ? tpl_render_vm((tpl_render *)r)->changes : 0;
}

tpl_status tpl_render_assign(tpl_render *r, tpl_val dst, tpl_val src)
{
    if (!r || !tpl_render_busy(r)) return TPL_ERR_USAGE;
    tpl_vm *vm = tpl_render_vm(r);
    tpl_value d = from_val(dst), s = from_val(src);
    /* (a Jinja list's flags: only a tuple, a view, a big range or a Ruby range are other things) */
    const unsigned odd = TPL_F_TUPLE | TPL_F_VIEW_DICT | TPL_F_RANGE_BIG | TPL_F_RANGE_RB;
    bool lists = d.type == TPL_T_LIST && s.type == TPL_T_LIST && d.aux == TPL_LAZY_NONE && s.aux == TPL_LAZY_NONE &&
                 !(d.flags & odd) && !(s.flags & odd);
    bool maps = d.type == TPL_T_MAP && s.type == TPL_T_MAP && !(d.flags & TPL_F_NS) && !(s.flags & TPL_F_NS) &&
                !d.u.map->eql && !s.u.map->eql;
    if ((!lists && !maps) || !tpl_arena_owns(&vm->arena, d.u.p)) return TPL_ERR_TYPE;
    vm->changes++;
    if (lists) { /* (the items array is src's now: the template's next change copies it, tpl_vm_list_room) */
        *d.u.list = *s.u.list;
        return TPL_OK;
    }
    uint16_t gen = d.u.map->gen;
    *d.u.map = *s.u.map;
    d.u.map->gen = (uint16_t)(gen + 1); /* (a view of it is stale) */
    vm->dict_changes++;
    return TPL_OK;
}

tpl_status tpl_render_lookup(tpl_render *r, const char *name, size_t len, tpl_val *out)
{
    if (out) *out = to_val(tpl_v_none());
    if (!r || !out || (!name && len) || !tpl_render_busy(r)) return TPL_ERR_USAGE;
    tpl_vm *vm = tpl_render_vm(r);
    const tpl_program *p = vm->p;
    if (!p || !p->exports) return TPL_ERR_USAGE;
    for (uint32_t i = 0; i < p->nexports; i++) {
        const tpl_value *k = &p->exports[i];
        if (k->len != len || (len && memcmp(k->u.s, name, len) != 0)) continue;
        uint32_t slot = vm->root_base + p->export_slots[i];
        if (slot >= vm->slot_top) return TPL_ERR_UNDEFINED;
        tpl_value v = vm->slots[slot];
        if (v.type == TPL_T_UNSET) return TPL_ERR_UNDEFINED;
        /* not assigned yet either: the undefined the template level starts a variable with that a
         * macro reads (UNDEF_MSG "'NAME' is undefined": Jinja2's l_0_NAME = missing) */
        if (v.type == TPL_T_UNDEF && v.aux == TPL_UNDEF_PLAIN && v.u.s && v.len == len + 15 && v.u.s[0] == '\'' &&
            memcmp(v.u.s + 1, name, len) == 0 && memcmp(v.u.s + 1 + len, "' is undefined", 14) == 0)
            return TPL_ERR_UNDEFINED;
        *out = to_val(v);
        return TPL_OK;
    }
    return TPL_ERR_UNDEFINED;
}

/* ------------------------------------------------------------------ the VM's side */

static const char *cls_name(const tpl_hobj *h) { return h->cls->name ? h->cls->name : "object"; }

/* A callback failed (TPL_HOST_ERROR): the located TPL_ERR_RAISED error. */
static int failed(tpl_vm *vm, const tpl_hobj *h, const char *what, const char *name, size_t n)
{
    const char *msg = vm->host_msg[0] ? vm->host_msg : "error";
    if (name)
        return tpl_vm_error(vm, TPL_ERR_RAISED, "%s.%s '%.*s' failed: %s", cls_name(h), what, (int)n, name, msg);
    return tpl_vm_error(vm, TPL_ERR_RAISED, "%s.%s failed: %s", cls_name(h), what, msg);
}

/* A result from the host: a tpl_value built for r (OK) or the status mapped (-1 error, 1 missing). */
static int result(tpl_vm *vm, const tpl_hobj *h, tpl_host_result rc, const char *what, const char *name, size_t n)
{
    if (!(name && n > 1 && name[0] == '@' && strcmp(what, "send") == 0)) tpl_vm_host_ran(vm);   /* (an @ivar's read runs no code) */
    if (vm->err.status != TPL_OK) return -1; /* a tpl_render_call of the callback failed: the render ends */
    if (rc == TPL_HOST_OK) return 0;
    if (rc == TPL_HOST_MISSING) return 1;
    return failed(vm, h, what, name, n);
}

/* A Python object's attribute or item value v (Jinja): its lists and dicts, nested ones too, are
 * marked as the host's (tpl_vm_mark_host_container), not the template's to change in place. */
static void mark_host(tpl_vm *vm, tpl_value v, int depth)
{
    if (depth > TPL_NEST_MAX) return;
    if (v.type == TPL_T_LIST && v.aux == TPL_LAZY_NONE && !(v.flags & TPL_F_TUPLE)) {
        tpl_vm_mark_host_container(vm, v.u.list);
        for (uint32_t i = 0; i < v.u.list->len; i++) mark_host(vm, v.u.list->items[i], depth + 1);
    } else if (v.type == TPL_T_LIST && v.aux == TPL_LAZY_NONE) {
        for (uint32_t i = 0; i < v.u.list->len; i++) mark_host(vm, v.u.list->items[i], depth + 1);
    } else if (v.type == TPL_T_MAP && !(v.flags & TPL_F_NS)) {
        tpl_vm_mark_host_container(vm, v.u.map);
        for (uint32_t i = 0; i < v.u.map->len; i++) mark_host(vm, v.u.map->e[i].val, depth + 1);
    }
}

int tpl_hobj_attr(tpl_vm *vm, tpl_value obj, const char *name, size_t n, tpl_value *out)
{
    tpl_hobj *h = obj.u.p;
    tpl_val o;
    if (!h->cls->getattr) return 1;
    int rc = result(vm, h, h->cls->getattr(h->obj, h->r, name, n, &o), "getattr", name, n);
    if (!rc) {
        *out = from_val(o);
        if ((out->type == TPL_T_LIST || out->type == TPL_T_MAP) && tpl_vm_syntax(vm) == TPL_SYNTAX_JINJA) mark_host(vm, *out, 0);
    }
    return rc;
}

int tpl_hobj_item(tpl_vm *vm, tpl_value obj, tpl_value key, tpl_value *out)
{
    tpl_hobj *h = obj.u.p;
    tpl_val o;
    if (!h->cls->getitem) return 1;
    const char *kn = key.type == TPL_T_STR ? key.u.s : "";
    size_t kl = key.type == TPL_T_STR ? key.len : 0;
    int rc = result(vm, h, h->cls->getitem(h->obj, h->r, to_val(key), &o), "getitem", kn, kl);
    if (!rc) {
        *out = from_val(o);
        if ((out->type == TPL_T_LIST || out->type == TPL_T_MAP) && tpl_vm_syntax(vm) == TPL_SYNTAX_JINJA) mark_host(vm, *out, 0);
    }
    return rc;
}

/* An undefined a host's getattr/getitem made for its miss (tpl_val_undefined_missing): a miss
 * that names the host's class, kept when the other lookup misses too. */
static bool owner_miss(tpl_value v) { return v.type == TPL_T_UNDEF && v.flags == TPL_UNDEF_OWNER_TEXT; }

/* One lookup of tpl_hobj_getattr/getitem: -1 error, 0 found (*out), 1 missed (*miss set to the
 * host's own miss when it gave one and *miss is not set yet). */
static int lookup_step(tpl_vm *vm, tpl_hobj *h, tpl_host_result hr, tpl_val o, const char *what, const char *name,
                       size_t n, tpl_value *out, tpl_value *miss)
{
    int rc = result(vm, h, hr, what, name, n);
    if (rc) return rc;
    tpl_value v = from_val(o);
    if (!owner_miss(v)) {
        if ((v.type == TPL_T_LIST || v.type == TPL_T_MAP) && tpl_vm_syntax(vm) == TPL_SYNTAX_JINJA) mark_host(vm, v, 0);
        *out = v;
        return 0;
    }
    if (miss->type != TPL_T_UNDEF) *miss = v;
    return 1;
}

int tpl_hobj_getattr(tpl_vm *vm, tpl_value obj, const char *name, size_t n, tpl_value *out)
{
    tpl_hobj *h = obj.u.p;
    tpl_val o;
    tpl_value miss = tpl_v_none();
    if (h->cls->getattr) {
        int rc = lookup_step(vm, h, h->cls->getattr(h->obj, h->r, name, n, &o), o, "getattr", name, n, out, &miss);
        if (rc <= 0) return rc;
    }
    if (h->cls->getitem) {
        int rc = lookup_step(vm, h, h->cls->getitem(h->obj, h->r, to_val(tpl_v_str(name, n)), &o), o, "getitem", name, n,
                             out, &miss);
        if (rc <= 0) return rc;
    }
    if (miss.type == TPL_T_UNDEF) { *out = miss; return 0; }
    return 1;
}

int tpl_hobj_getitem(tpl_vm *vm, tpl_value obj, tpl_value key, tpl_value *out)
{
    tpl_hobj *h = obj.u.p;
    tpl_val o;
    tpl_value miss = tpl_v_none();
    if (h->cls->getitem) {
        const char *kn = key.type == TPL_T_STR ? key.u.s : "";
        size_t kl = key.type == TPL_T_STR ? key.len : 0;
        int rc = lookup_step(vm, h, h->cls->getitem(h->obj, h->r, to_val(key), &o), o, "getitem", kn, kl, out, &miss);
        if (rc <= 0) return rc;
    }
    if (key.type == TPL_T_STR && h->cls->getattr) {
        int rc = lookup_step(vm, h, h->cls->getattr(h->obj, h->r, key.u.s, key.len, &o), o, "getattr", key.u.s, key.len,
                             out, &miss);
        if (rc <= 0) return rc;
    }
    if (miss.type == TPL_T_UNDEF) { *out = miss; return 0; }
    return 1;
}

int tpl_hobj_iter(tpl_vm *vm, tpl_value obj, tpl_list **out)
{
    tpl_hobj *h = obj.u.p;
    tpl_val o;
    int rc = h->cls->iter ? result(vm, h, h->cls->iter(h->obj, h->r, &o), "iter", NULL, 0) : 1;
    if (rc < 0) return -1;
    tpl_value l = rc == 0 ? from_val(o) : tpl_v_none();
    if (l.type != TPL_T_LIST)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "'%s' object is not iterable", cls_name(h));
    *out = l.u.list;
    return 0;
}

int tpl_hobj_as_iter(tpl_vm *vm, tpl_value *v)
{
    if (v->type != TPL_T_HOST || !(tpl_hobj_numeric(*v) & TPL_HOST_ITERATOR)) return 0;
    tpl_hobj *h = v->u.p;
    if (!h->has_it) { /* a lazy iterator whose source is the object (tpl_hobj_next) */
        if (tpl_pend_stage(vm, *v, NULL, NULL, 0, 0, TPL_LAZY_GENERATOR, &h->it) < 0) return -1;
        h->has_it = true;
    }
    *v = h->it;
    return 0;
}


int tpl_hobj_next(tpl_vm *vm, tpl_value obj, tpl_value *out)
{
    tpl_hobj *h = obj.u.p;
    tpl_val o;
    if (!tpl_fuel_charge(&vm->fuel, TPL_HOST_ITEM_FUEL)) return tpl_vm_limit(vm, TPL_EK_FUEL, vm->limits.fuel);
    int rc = h->cls->iter ? result(vm, h, h->cls->iter(h->obj, h->r, &o), "iter", NULL, 0) : 1;
    if (rc == 0) *out = from_val(o);
    return rc;
}

/* The arguments args[0..n) as a host gets them: a lazy Jinja2 iterator (the generator of a map or
 * select filter, pending in the VM) with its items, pulled now as the host's code pulls them from
 * Jinja2's generator (the template's iterator has none left afterwards, as Jinja2's once read
 * through). *args becomes a copy in the arena when one is pulled. */
static int host_args(tpl_vm *vm, const tpl_value **args, int n)
{
    tpl_value *c = NULL;
    for (int i = 0; i < n; i++) {
        if ((*args)[i].type == TPL_T_HOST && ((tpl_hobj *)(*args)[i].u.p)->has_it &&
            ((tpl_hobj *)(*args)[i].u.p)->it.u.list->len)
            /* (items read from Python's iterator that the template has not taken yet would be
             * lost to the callable, which Jinja2 hands the iterator with them; otherwise the
             * callable gets the iterator itself, the items not taken still in it, as in Jinja2) */
            return tpl_vm_fail(vm, TPL_EK_RUNTIME,
                               "unsupported: a Python iterator handed to a callable after the template took "
                               "only some of its items (|first, `in`): tpl read all of them; pass a list");
        if (!tpl_pend_of((*args)[i])) continue;
        if (!c) {
            if (!(c = tpl_arena_alloc(&vm->arena, (size_t)n * sizeof *c))) return tpl_vm_nomem(vm);
            memcpy(c, *args, (size_t)n * sizeof *c);
        }
        if (tpl_take_iter(vm, &c[i], UINT32_MAX) < 0) return -1;
    }
    if (c) *args = c;
    return 0;
}

int tpl_hobj_call(tpl_vm *vm, tpl_value fn, const tpl_value *pos, int npos, const tpl_value *kwn,
                  const tpl_value *kwv, int nkw, tpl_value *out)
{
    tpl_hobj *h = fn.u.p;
    if (!h->cls->call) return tpl_vm_error(vm, TPL_ERR_TYPE, "'%s' object is not callable", cls_name(h));
    if (host_args(vm, &pos, npos) < 0 || host_args(vm, &kwv, nkw) < 0) return -1;
    tpl_val o;
    /* tpl_val and tpl_value share their layout (static_assert above) */
    int rc = result(vm, h, h->cls->call(h->obj, h->r, (const tpl_val *)(const void *)pos, (size_t)npos,
                                        (const tpl_val *)(const void *)kwn, (const tpl_val *)(const void *)kwv,
                                        (size_t)nkw, &o), "call", NULL, 0);
    if (rc < 0) return -1;
    if (rc > 0) return tpl_vm_error(vm, TPL_ERR_TYPE, "'%s' object is not callable", cls_name(h));
    *out = from_val(o);
    return 0;
}

int tpl_hobj_call_func(tpl_vm *vm, tpl_render *r, const tpl_host_class *cls, void *obj, const tpl_value *pos,
                       int npos, const tpl_value *kwn, const tpl_value *kwv, int nkw, tpl_value *out)
{
    tpl_hobj *h = tpl_arena_alloc(&vm->arena, sizeof *h);
    if (!h) return tpl_vm_nomem(vm);
    h->cls = cls;
    h->obj = obj;
    h->r = r;
    h->has_it = false;
    h->it = tpl_v_none();
    vm->has_host = true;
    tpl_value fn = { 0 };
    fn.type = TPL_T_HOST;
    fn.u.p = h;
    return tpl_hobj_call(vm, fn, pos, npos, kwn, kwv, nkw, out);
}

int tpl_hobj_send(tpl_vm *vm, tpl_value obj, const char *name, size_t n, const tpl_value *pos, int npos,
                  const tpl_value *kwn, const tpl_value *kwv, int nkw, tpl_value *out)
{
    tpl_hobj *h = obj.u.p;
    if (!h->cls->send) return 1;
    tpl_val o;
    int rc = result(vm, h, h->cls->send(h->obj, h->r, name, n, (const tpl_val *)(const void *)pos, (size_t)npos,
                                        (const tpl_val *)(const void *)kwn, (const tpl_val *)(const void *)kwv,
                                        (size_t)nkw, &o), "send", name, n);
    if (!rc) *out = from_val(o);
    return rc;
}

int tpl_hobj_resolve(tpl_vm *vm, tpl_value obj, tpl_value *out)
{
    tpl_hobj *h = obj.u.p;
    tpl_val o;
    if (!h->cls->resolve) return 1;
    int rc = result(vm, h, h->cls->resolve(h->obj, h->r, &o), "resolve", NULL, 0);
    if (!rc) *out = from_val(o);
    return rc;
}

int tpl_hobj_html(tpl_vm *vm, tpl_value v, tpl_value *out)
{
    if (v.type != TPL_T_HOST) return 1;
    tpl_hobj *h = v.u.p;
    if (!h->cls->html) return 1;
    tpl_val o;
    int rc = result(vm, h, h->cls->html(h->obj, h->r, &o), "__html__", NULL, 0);
    if (rc) return rc;
    *out = from_val(o);
    if (out->type != TPL_T_STR) return tpl_vm_error(vm, TPL_ERR_TYPE, "%s.__html__ did not give a str", tpl_type_name(vm, v));
    out->flags = TPL_F_SAFE;
    return 0;
}

int tpl_hobj_number(tpl_vm *vm, tpl_value v, bool as_float, tpl_value *out)
{
    tpl_hobj *h = v.u.p;
    if (!h->cls->number) return 1;
    tpl_val o;
    int rc = result(vm, h, h->cls->number(h->obj, h->r, as_float, &o), as_float ? "float" : "int", NULL, 0);
    if (rc) return rc;
    *out = from_val(o);
    return out->type == TPL_T_INT || out->type == TPL_T_BIGINT || out->type == TPL_T_FLOAT ? 0 : 1;
}

int tpl_hobj_len(tpl_vm *vm, tpl_value v, int64_t *out)
{
    tpl_hobj *h = v.u.p;
    if (!h->cls->len) return 1;
    return result(vm, h, h->cls->len(h->obj, h->r, out), "len", NULL, 0);
}

int tpl_hobj_eq(tpl_vm *vm, tpl_value obj, tpl_value other, bool *out)
{
    tpl_hobj *h = obj.u.p;
    bool b = false;
    if (!h->cls->eq) return 1;
    int rc = result(vm, h, h->cls->eq(h->obj, h->r, to_val(other), &b), "eq", NULL, 0);
    if (rc == 0) *out = b;
    return rc;
}

int tpl_hobj_truth(tpl_vm *vm, tpl_value v)
{
    tpl_hobj *h = v.u.p;
    bool b = true;
    if (!h->cls->truth) return 1;
    int rc = result(vm, h, h->cls->truth(h->obj, h->r, &b), "truth", NULL, 0);
    if (rc < 0) return -1;
    return rc > 0 ? 1 : b;
}

void tpl_hobj_print(tpl_sb *b, tpl_value v, bool repr)
{
    tpl_hobj *h = v.u.p;
    tpl_vm *vm = tpl_render_vm(h->r);
    tpl_val o;
    int rc = h->cls->str ? result(vm, h, h->cls->str(h->obj, h->r, repr, &o), repr ? "repr" : "str", NULL, 0) : 1;
    if (rc < 0) { b->failed = true; return; }
    tpl_value s = rc == 0 ? from_val(o) : tpl_v_none();
    if (s.type == TPL_T_STR) tpl_sb_put(b, s.u.s, s.len);
    else tpl_sb_printf(b, "<%s object>", cls_name(h));
}

int tpl_hobj_resolve_args(tpl_vm *vm, tpl_value *args, int n)
{
    for (int i = 0; i < n; i++) {
        if (args[i].type != TPL_T_HOST) continue;
        tpl_hobj *h = args[i].u.p;
        if (!h->cls->resolve) continue;
        tpl_val o;
        int rc = result(vm, h, h->cls->resolve(h->obj, h->r, &o), "resolve", NULL, 0);
        if (rc < 0) return -1;
        if (rc == 0) args[i] = from_val(o);
    }
    return 0;
}

unsigned tpl_hobj_numeric(tpl_value v)
{
    if (v.type != TPL_T_HOST) return 0;
    const tpl_hobj *h = v.u.p;
    unsigned numeric = 0;
    if (h->cls->type_of) h->cls->type_of(h->obj, &numeric);
    return numeric;
}

/* The host number of a or b whose class has arith (a's first), or NULL. */
static const tpl_hobj *arith_host(tpl_value a, tpl_value b)
{
    if (a.type == TPL_T_HOST && ((const tpl_hobj *)a.u.p)->cls->arith && (tpl_hobj_numeric(a) & TPL_HOST_NUMBER))
        return a.u.p;
    if (b.type == TPL_T_HOST && ((const tpl_hobj *)b.u.p)->cls->arith && (tpl_hobj_numeric(b) & TPL_HOST_NUMBER))
        return b.u.p;
    return NULL;
}

/* The host class's arith hook of h on a op b (1: not the host's to answer: no host, an
 * undefined operand); tpl_hobj_arith's and tpl_hobj_richcompare's common end. */
static int host_arith_call(tpl_vm *vm, const tpl_hobj *h, const char *op, tpl_value a, tpl_value b, tpl_value *out)
{
    if (!h || a.type == TPL_T_UNDEF || b.type == TPL_T_UNDEF || a.type == TPL_T_UNSET || b.type == TPL_T_UNSET)
        return 1;
    tpl_val o;
    int rc = result(vm, h, h->cls->arith(h->obj, h->r, op, to_val(a), to_val(b), &o), op, NULL, 0);
    if (!rc) *out = from_val(o);
    return rc;
}

int tpl_hobj_arith(tpl_vm *vm, const char *op, tpl_value a, tpl_value b, tpl_value *out)
{
    if (a.type != TPL_T_HOST && b.type != TPL_T_HOST) return 1;
    const tpl_hobj *h = arith_host(a, b);
    /* (the other operand may be any value but an undefined one: Python's operator decides, e.g.
     * Decimal < str is its TypeError) */
    return host_arith_call(vm, h, op, a, b, out);
}

int tpl_hobj_richcompare(tpl_vm *vm, const char *op, tpl_value a, tpl_value b, tpl_value *out)
{
    const tpl_hobj *h = a.type == TPL_T_HOST && ((const tpl_hobj *)a.u.p)->cls->arith ? a.u.p
                      : b.type == TPL_T_HOST && ((const tpl_hobj *)b.u.p)->cls->arith ? b.u.p : NULL;
    return host_arith_call(vm, h, op, a, b, out);
}

int tpl_hobj_key(tpl_vm *vm, tpl_value v, tpl_value *out)
{
    if (v.type != TPL_T_HOST) return 1;
    const tpl_hobj *h = v.u.p;
    if (!h->cls->arith) return 1;
    tpl_val o;
    int rc = result(vm, h, h->cls->arith(h->obj, h->r, "key", to_val(v), to_val(tpl_v_none()), &o), "key", NULL, 0);
    if (!rc) *out = from_val(o);
    return rc;
}

/* A host object of a class with arith in v: v itself or an item of a tuple v, at any depth. */
static const tpl_hobj *key_host(tpl_value v, int depth)
{
    if (v.type == TPL_T_HOST)
        return ((const tpl_hobj *)v.u.p)->cls->arith ? v.u.p : NULL;
    if (v.type != TPL_T_LIST || !(v.flags & TPL_F_TUPLE) || depth >= TPL_NEST_MAX)
        return NULL;
    for (uint32_t i = 0; i < v.u.list->len; i++) {
        const tpl_hobj *h = key_host(v.u.list->items[i], depth + 1);
        if (h) return h;
    }
    return NULL;
}

int tpl_hobj_key_equal(tpl_vm *vm, tpl_value stored, tpl_value key, bool *eq)
{
    const tpl_hobj *h = key_host(stored, 0);
    if (!h) h = key_host(key, 0);
    if (!h) return 1;
    tpl_val o;
    int rc = result(vm, h, h->cls->arith(h->obj, h->r, "key==", to_val(stored), to_val(key), &o), "key==", NULL, 0);
    if (rc) return rc;
    tpl_value v = from_val(o);
    if (v.type == TPL_T_BOOL) { *eq = v.u.i != 0; return 0; }
    int t = tpl_truthy_py(vm, v);
    if (t < 0) return -1;
    *eq = t;
    return 0;
}

int tpl_hobj_key_find(tpl_vm *vm, const tpl_map *m, tpl_value key, int64_t *at)
{
    const tpl_hobj *h = key_host(key, 0);
    if (!h) return 1;
    tpl_val o;
    tpl_value mv = tpl_v_map((tpl_map *)m); /* (read only: the host reads its keys) */
    int rc = result(vm, h, h->cls->arith(h->obj, h->r, "find", to_val(key), to_val(mv), &o), "find", NULL, 0);
    if (rc) return rc;
    tpl_value v = from_val(o);
    if (v.type != TPL_T_INT || v.u.i < -1 || v.u.i >= (int64_t)m->len)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "the host's \"find\" gave no index of the dict's keys");
    *at = v.u.i;
    return 0;
}

int tpl_hobj_compare(tpl_vm *vm, const char *op, tpl_value a, tpl_value b, bool *res)
{
    tpl_value v;
    int rc = tpl_hobj_arith(vm, op, a, b, &v);
    if (rc) return rc;
    if (v.type == TPL_T_BOOL) { *res = v.u.i != 0; return 0; }
    int t = tpl_truthy_py(vm, v);
    if (t < 0) return -1;
    *res = t;
    return 0;
}
