/* Values: the arena, lists, maps (insertion-ordered, Python dict semantics), hashing, Python
 * equality and the string builder. See value.h for the contracts. */
#include "value.h"
#include "../include/tpl.h"
#include "bigint.h"
#include "library.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ arena */

enum {
    ARENA_MIN = 16 * 1024,          /* first chunk */
    ARENA_MAX = 16 * 1024 * 1024,   /* growth stops doubling here */
};

static size_t round16(size_t n) { return (n + 15) & ~(size_t)15; }

void tpl_arena_init(tpl_arena *a, size_t limit)
{
    a->head = NULL;
    a->total = 0;
    a->limit = limit;
    a->over_limit = false;
    a->alloc = NULL;
    a->fuel = NULL;
    a->budget = NULL;
    a->zero_chunks = false;
}

void tpl_arena_set_allocator(tpl_arena *a, const struct tpl_allocator *alloc)
{
    a->alloc = alloc;
}

/* A chunk with `size` bytes of data, from the arena's allocator (tpl_render_new_with). */
static tpl_chunk *chunk_new(tpl_arena *a, size_t size)
{
    size_t bytes = sizeof(tpl_chunk) + size;
    if (a->budget && (bytes > a->budget->limit || a->budget->used > a->budget->limit - bytes)) {
        a->budget->over = true;
        return NULL;
    }
    tpl_chunk *c;
    if (!a->alloc && !a->zero_chunks) {
        c = aligned_alloc(16, (bytes + 15) & ~(size_t)15);
    } else if (!a->alloc) {
        /* zeroed: tpl_render_rescue compares the bytes a render context's arena handed out,
         * padding and unused list room included, which are then defined. Only there: calloc
         * clears memory malloc reuses (a compile's arenas zeroed ~50,000 instructions of chunks) */
        c = calloc(1, (bytes + 15) & ~(size_t)15);
        if (c && ((uintptr_t)c & 15)) {
            free(c);
            c = aligned_alloc(16, (bytes + 15) & ~(size_t)15);
            if (c) memset(c, 0, bytes);
        }
    } else {
        c = a->alloc->alloc(a->alloc->data, bytes);
        if (c && ((uintptr_t)c & 15)) {
            a->alloc->free(a->alloc->data, c, bytes);
            c = NULL;
        }
    }
    if (c && a->budget) a->budget->used += bytes;
    return c;
}

static void chunk_free(tpl_arena *a, tpl_chunk *c)
{
    if (a->budget) a->budget->used -= sizeof(tpl_chunk) + c->size;
    if (!a->alloc) free(c);
    else a->alloc->free(a->alloc->data, c, sizeof(tpl_chunk) + c->size);
}

/* Slow path: a new chunk. Chunk sizes double with the arena's total, so a render needs
 * O(log n) mallocs (and after a reset, none). An allocation larger than a quarter of the
 * would-be chunk gets a chunk of its own, linked behind the head so the head's free space
 * stays in use. */
static void *arena_grow_as(tpl_arena *a, size_t need, bool alone);

static void *arena_grow(tpl_arena *a, size_t need) { return arena_grow_as(a, need, false); }

void *tpl_arena_alloc_alone(tpl_arena *a, size_t n)
{
    if (n > SIZE_MAX - 32)
        return NULL;
    return arena_grow_as(a, round16(n ? n : 1), true);
}

void tpl_arena_free_alone(tpl_arena *a, void *p)
{
    if (!p)
        return;
    for (tpl_chunk **link = &a->head; *link; link = &(*link)->next) {
        tpl_chunk *c = *link;
        if ((void *)c->data != p)
            continue;
        *link = c->next;
        a->total -= c->size;
        chunk_free(a, c);
        return;
    }
}

static void *arena_grow_as(tpl_arena *a, size_t need, bool alone)
{
    if (!alone && a->head && a->head->used == 0 && !a->head->next) {
        /* The chunk kept by a reset is too small: replace it rather than stack a new one on it
         * (so it neither wastes memory nor counts against the limit). */
        a->total -= a->head->size;
        chunk_free(a, a->head);
        a->head = NULL;
    }
    size_t size = a->total < ARENA_MIN ? ARENA_MIN : a->total;
    if (size > ARENA_MAX)
        size = ARENA_MAX;
    bool dedicated = a->head && (alone || need > size / 4);
    if (dedicated || size < need)
        size = need;
    if (a->limit) {
        if (a->total > a->limit || need > a->limit - a->total) {
            a->over_limit = true;
            return NULL;
        }
        if (size > a->limit - a->total)
            size = (a->limit - a->total) & ~(size_t)15; /* still >= need (need is rounded) */
    }
    if (size > SIZE_MAX - sizeof(tpl_chunk))
        return NULL;
    tpl_chunk *c = chunk_new(a, size);
    if (!c)
        return NULL;
    c->size = size;
    c->used = need;
    a->total += size;
    if (dedicated) {
        c->next = a->head->next;
        a->head->next = c;
    } else {
        c->next = a->head;
        a->head = c;
    }
    return c->data;
}

void *tpl_arena_alloc_grow(tpl_arena *a, size_t n)
{
    if (n > SIZE_MAX - 32)
        return NULL;
    size_t need = round16(n ? n : 1);
    tpl_chunk *c = a->head;
    if (c && c->size - c->used >= need) {
        void *p = c->data + c->used;
        c->used += need;
        return p;
    }
    return arena_grow(a, need);
}

char *tpl_arena_strdup(tpl_arena *a, const char *s, size_t n)
{
    if (n == SIZE_MAX)
        return NULL;
    char *p = tpl_arena_alloc(a, n + 1);
    if (!p)
        return NULL;
    if (n)
        memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

/* tpl_arena_reset of an arena with several chunks (value.h) */
void tpl_arena_reset_chunks(tpl_arena *a)
{
    a->over_limit = false;
    if (!a->head)
        return;
    if (!a->head->next) {
        a->head->used = 0;
        return;
    }
    size_t sum = a->total;
    tpl_arena_free(a);
    tpl_chunk *c = chunk_new(a, sum);
    if (!c)
        return;
    c->next = NULL;
    c->size = sum;
    c->used = 0;
    a->head = c;
    a->total = sum;
}

void tpl_arena_free(tpl_arena *a)
{
    for (tpl_chunk *c = a->head, *next; c; c = next) {
        next = c->next;
        chunk_free(a, c);
    }
    a->head = NULL;
    a->total = 0;
    a->over_limit = false;
}

/* ------------------------------------------------------------------ lists */

tpl_list *tpl_list_new(tpl_arena *a, uint32_t cap)
{
    tpl_list *l = tpl_arena_alloc(a, sizeof *l);
    if (!l)
        return NULL;
    l->len = 0;
    l->cap = cap;
    l->items = NULL;
    if (cap && !(l->items = tpl_arena_alloc(a, (size_t)cap * sizeof(tpl_value))))
        return NULL;
    return l;
}

bool tpl_list_push(tpl_arena *a, tpl_list *l, tpl_value v)
{
    if (l->len == l->cap) {
        if (l->cap >= UINT32_MAX / 2)
            return false;
        uint32_t cap = l->cap < 4 ? 8 : l->cap * 2;
        tpl_value *items = tpl_arena_alloc(a, (size_t)cap * sizeof(tpl_value));
        if (!items)
            return false;
        if (l->len)
            memcpy(items, l->items, (size_t)l->len * sizeof(tpl_value));
        l->items = items;
        l->cap = cap;
    }
    l->items[l->len++] = v;
    return true;
}

/* ------------------------------------------------------------------ hashing */

/* FNV-1a, 64-bit. */
uint64_t tpl_hash_str(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325u;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3u;
    }
    return h;
}

/* splitmix64 finaliser: spreads integer keys over all bits. */
static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9u;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebu;
    x ^= x >> 31;
    return x;
}

/* True when d is integral and representable as int64 (then *out is it). */
static bool float_as_int(double d, int64_t *out)
{
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0) || d != floor(d))
        return false;
    *out = (int64_t)d;
    return true;
}

static uint64_t float_bits_hash(double d)
{
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    return mix64(bits);
}

/* Python's rule: values that compare equal hash equal, so 1, 1.0 and True share a hash.
 * Containers hash shallowly (nested containers contribute their size), so a list that contains
 * itself cannot recurse forever. */
static uint64_t hash_rec(tpl_value v, bool nested)
{
    int64_t i;
    switch (v.type) {
    case TPL_T_STR: /* a Ruby class or Regexp is no String (eql?): its own hash, so a lookup by a
                     * name's hash (tpl_map_get_str, the VM's fast paths) never finds it */
        return v.flags & (TPL_F_CLASS_RB | TPL_F_REGEX_RB) ? mix64(tpl_hash_str(v.u.s, v.len) ^ 0x636c6173u)
                                                           : tpl_hash_str(v.u.s, v.len);
    case TPL_T_INT:
    case TPL_T_BOOL:
        return mix64((uint64_t)v.u.i);
    case TPL_T_FLOAT: {
        if (float_as_int(v.u.f, &i))
            return mix64((uint64_t)i);
        uint64_t bits;
        memcpy(&bits, &v.u.f, sizeof bits);
        return mix64(bits);
    }
    case TPL_T_BIGINT:
        return tpl_big_hash(v, float_bits_hash);
    case TPL_T_RATIONAL: /* its canonical text (Ruby: 1r.eql?(1) is false, so not an Integer's hash) */
        return mix64(tpl_hash_str(v.u.s, v.len) ^ 0x7261746cu);
    case TPL_T_NONE:
        return 0x6e6f6e65u;
    case TPL_T_UNDEF:
        return 0x756e6466u;
    case TPL_T_LIST: {
        if (v.flags & TPL_F_RANGE_BIG) /* equal ones have the same first item (past TPL_RANGE_ITEMS_MAX items) */
            return mix64(0x72616e67u ^ hash_rec(tpl_range_params(v)[0], true));
        uint64_t h = mix64((v.flags & TPL_F_TUPLE ? 0x7475706cu : 0x6c697374u) + v.u.list->len);
        for (uint32_t k = 0; !nested && k < v.u.list->len; k++)
            h = mix64(h ^ hash_rec(v.u.list->items[k], true));
        return h;
    }
    case TPL_T_MAP:   /* equality ignores order: hash only the size; a namespace is itself (it changes) */
        if (v.flags & TPL_F_NS) return mix64((uint64_t)(uintptr_t)v.u.map);
        return mix64(0x6d6170u + v.u.map->len);
    default:
        return mix64((uint64_t)(uintptr_t)v.u.p ^ v.aux);
    }
}

uint64_t tpl_hash_value(tpl_value v) { return hash_rec(v, false); }

/* ------------------------------------------------------------------ substring search */

const char *tpl_memmem(const char *h, size_t hn, const char *n, size_t nn)
{
    if (nn == 0)
        return h;
    if (nn > hn)
        return NULL;
    return memmem(h, hn, n, nn);
}

enum { RMEM_DIRECT = 32 }; /* needles up to this long are compared directly: <= 32 byte compares per position */

const char *tpl_memrmem(const char *h, size_t hn, const char *n, size_t nn)
{
    if (nn > hn)
        return NULL;
    if (nn == 0)
        return h + hn;
    uint32_t *fail = nn > RMEM_DIRECT && nn < UINT32_MAX ? malloc(nn * sizeof *fail) : NULL;
    if (!fail) {
        for (size_t i = hn - nn + 1; i-- > 0;)
            if (h[i] == n[0] && memcmp(h + i, n, nn) == 0)
                return h + i;
        return NULL;
    }
    /* KMP on the reversed needle p[k] = n[nn-1-k] over the reversed haystack t[j] = h[hn-1-j] */
#define P(k) n[nn - 1 - (k)]
    fail[0] = 0;
    for (size_t k = 1, m = 0; k < nn; k++) {
        while (m && P(k) != P(m))
            m = fail[m - 1];
        if (P(k) == P(m))
            m++;
        fail[k] = (uint32_t)m;
    }
    const char *hit = NULL;
    for (size_t j = 0, m = 0; j < hn; j++) {
        char c = h[hn - 1 - j];
        while (m && c != P(m))
            m = fail[m - 1];
        if (c == P(m))
            m++;
        if (m == nn) {
            hit = h + (hn - 1 - j);
            break;
        }
    }
#undef P
    free(fail);
    return hit;
}

/* ------------------------------------------------------------------ equality */

int tpl_cmp_int_float(int64_t i, double f)
{
    if (f >= 9223372036854775808.0) return -1; /* +inf too */
    if (f < -9223372036854775808.0) return 1;  /* -inf too */
    double t = trunc(f);                          /* exact, and in int64's range */
    int64_t fi = (int64_t)t;
    if (i != fi) return i < fi ? -1 : 1;
    return f > t ? -1 : f < t ? 1 : 0;            /* the fraction decides */
}

/* Exact Python comparison of an int with a float (no rounding through double). */
static bool int_eq_float(int64_t i, double f)
{
    int64_t fi;
    return float_as_int(f, &fi) && fi == i;
}

static bool map_lookup(const tpl_map *m, tpl_value key, uint64_t h, uint32_t *at, uint64_t *fuel);


/* Python compares the items of a container (list ==, `in`, index(), dict keys: PyObject_RichCompareBool)
 * with an identity shortcut, so a NaN equals itself there though `nan == nan` is false; Ruby's
 * rb_equal and eql? do the same. tpl's floats carry no identity: a NaN is "the same object" as a NaN
 * with the same bits (the same variable compared with itself, the usual case; two NaNs computed
 * apart are distinct objects in Python, equal here). */
static bool same_nan(double x, double y)
{
    return isnan(x) && isnan(y) && memcmp(&x, &y, sizeof x) == 0;
}

/* 1 equal, 0 not, -1 fuel exhausted (tpl_fuel_charge: one unit per element of a container), -2
 * nested deeper than TPL_NEST_MAX (Python: RecursionError "maximum recursion depth exceeded in
 * comparison"). */
static int equal_rec(tpl_value a, tpl_value b, int depth, uint64_t *fuel, unsigned eql, const tpl_eq_host *host);

/* Python's range == range (at least one held without its items): the same items, so the same
 * length and, when that is not 0, the same start and, when it is past 1, the same step. */
static bool range_equal(tpl_value a, tpl_value b)
{
    const tpl_value *p = tpl_range_params(a), *q = tpl_range_params(b);
    mpz_t n, m;
    tpl_range_len(n, p);
    tpl_range_len(m, q);
    bool eq = mpz_cmp(n, m) == 0;
    if (eq && mpz_sgn(n) > 0) eq = equal_rec(p[0], q[0], 1, NULL, false, NULL) == 1;
    if (eq && mpz_cmp_ui(n, 1) > 0) eq = equal_rec(p[2], q[2], 1, NULL, false, NULL) == 1;
    mpz_clear(n);
    mpz_clear(m);
    return eq;
}

static int equal_rec(tpl_value a, tpl_value b, int depth, uint64_t *fuel, unsigned eql, const tpl_eq_host *host);

static bool is_set_view(tpl_value v)
{
    return v.type == TPL_T_LIST && (v.aux == TPL_LAZY_DICT_KEYS || v.aux == TPL_LAZY_DICT_ITEMS);
}

/* An index of a view's items by tpl_hash_value (consistent with equal_rec's ==), so that a
 * lookup compares only items of the same hash: slot k holds an item's position + 1, or 0. */
typedef struct view_index {
    uint32_t *slot;
    uint64_t *hash; /* of each item of the view */
    uint32_t mask;
} view_index;

static bool view_index_build(view_index *ix, const tpl_list *y)
{
    uint32_t cap = 16;
    while (cap < 2u * y->len && cap < (1u << 31)) cap <<= 1;
    ix->slot = calloc(cap, sizeof *ix->slot);
    ix->hash = malloc((size_t)y->len * sizeof *ix->hash);
    if (!ix->slot || !ix->hash) {
        free(ix->slot);
        free(ix->hash);
        return false;
    }
    ix->mask = cap - 1;
    for (uint32_t j = 0; j < y->len; j++) {
        uint64_t h = ix->hash[j] = tpl_hash_value(y->items[j]);
        uint32_t k = (uint32_t)h & ix->mask;
        while (ix->slot[k]) k = (k + 1) & ix->mask;
        ix->slot[k] = j + 1;
    }
    return true;
}

/* Every item of view a is an item of view b (CPython's all_contained_in: `x in b` for each x of
 * a, with the identity shortcut of a lookup). The items are usually in the same order (two dicts
 * built alike), so each is tried at its own position first; else it is looked up in a hash index
 * of b (built at the first miss; a scan of b when there is no memory for it), one unit of fuel
 * per item compared. 1 yes, 0 no, -1 fuel exhausted, -2 too deep. */
static int view_contained(tpl_value a, tpl_value b, int depth, uint64_t *fuel, const tpl_eq_host *host)
{
    const tpl_list *x = a.u.list, *y = b.u.list;
    if (!tpl_fuel_charge(fuel, x->len))
        return -1;
    view_index ix = { NULL, NULL, 0 };
    bool indexed = false, tried = false;
    int res = 1;
    for (uint32_t i = 0; i < x->len && res == 1; i++) {
        int r = i < y->len ? equal_rec(x->items[i], y->items[i], depth + 1, fuel, false, host) : 0;
        if (r < 0) { res = r; break; }
        if (r)
            continue;
        if (!tried) {
            tried = true;
            indexed = y->len > 8 && view_index_build(&ix, y);
        }
        if (indexed) {
            uint64_t h = tpl_hash_value(x->items[i]);
            for (uint32_t k = (uint32_t)h & ix.mask; ix.slot[k] && !r; k = (k + 1) & ix.mask) {
                uint32_t j = ix.slot[k] - 1;
                if (j == i || ix.hash[j] != h)
                    continue;
                if (!tpl_fuel_charge(fuel, 1)) { r = -1; break; }
                r = equal_rec(x->items[i], y->items[j], depth + 1, fuel, false, host);
            }
        } else {
            if (!tpl_fuel_charge(fuel, y->len)) { res = -1; break; }
            for (uint32_t j = 0; j < y->len && !r; j++)
                if (j != i)
                    r = equal_rec(x->items[i], y->items[j], depth + 1, fuel, false, host);
        }
        if (r <= 0)
            res = r;
    }
    free(ix.slot);
    free(ix.hash);
    return res;
}

/* view_contained of two live dict views (value.h tpl_is_view), read from their dicts as they are
 * now (a view's items are those of its last read, tpl_vm_view_sync): each of a's in b, a keys
 * view's by a lookup of the key, an items view's (key, value) by its key's value. */
static int view_live_contained(tpl_value a, tpl_value b, int depth, uint64_t *fuel, const tpl_eq_host *host)
{
    const tpl_map *ma = tpl_view_dict(a), *mb = tpl_view_dict(b);
    if (!tpl_fuel_charge(fuel, ma->len))
        return -1;
    for (uint32_t i = 0; i < ma->len; i++) {
        tpl_value pv[2] = { ma->e[i].key, ma->e[i].val };
        tpl_list pl = { .len = 2, .cap = 2, .items = pv };
        tpl_value x = pv[0];
        if (a.aux == TPL_LAZY_DICT_ITEMS) {
            x = tpl_v_list(&pl);
            x.flags = TPL_F_TUPLE;
        }
        if (b.aux == TPL_LAZY_DICT_KEYS) {
            if (!tpl_map_get_metered(mb, x, fuel))
                return fuel && !*fuel ? -1 : 0;
            continue;
        }
        if (!(x.type == TPL_T_LIST && (x.flags & TPL_F_TUPLE) && !x.aux && x.u.list->len == 2))
            return 0;
        const tpl_value *hit = tpl_map_get_metered(mb, x.u.list->items[0], fuel);
        if (!hit)
            return fuel && !*fuel ? -1 : 0;
        int r = equal_rec(x.u.list->items[1], *hit, depth + 1, fuel, false, host);
        if (r != 1)
            return r;
    }
    return 1;
}

int tpl_view_contained_metered(tpl_value a, tpl_value b, uint64_t *fuel)
{
    if (!is_set_view(a) || !is_set_view(b))
        return 0;
    return view_contained(a, b, 0, fuel, NULL);
}

/* eql: bit 1 Ruby's eql? (types must match), bit 2 (EQ_STRICT) a strict render's ==: an item
 * of a container compared with a strict undefined is -3 (StrictUndefined.__eq__ raises). */
enum { EQ_EQL = 1, EQ_STRICT = 2 };
/* `x is y` for the receiver of a bound method, as far as tpl's values tell (a bound method equals
 * another of the same function whose __self__ is the same object: CPython 3.8+): None, booleans
 * and the cached ints -5..256 by value, strings by storage (one variable or literal read twice:
 * the same; two strings made apart: not), containers and the rest by identity. */
static bool same_object(tpl_value x, tpl_value y)
{
    if (x.type != y.type) return false;
    switch (x.type) {
    case TPL_T_NONE: case TPL_T_UNSET: return true;
    case TPL_T_BOOL: return x.u.i == y.u.i;
    case TPL_T_INT: return x.u.i == y.u.i && x.u.i >= -5 && x.u.i <= 256;
    case TPL_T_STR:
        return (x.flags & TPL_F_SAFE) == (y.flags & TPL_F_SAFE) && x.len == y.len && (x.u.s == y.u.s || x.len == 0);
    default: return x.u.p == y.u.p && x.aux == y.aux;
    }
}

/* The pairs of containers an eql? walk is inside (Ruby's rb_exec_recursive_paired): a pair met
 * again is eql (Ruby's recursive_eql answers true there), so `a = [1]; a << a` is eql? to
 * `b = [1]; b << b` as in Ruby rather than a walk to the depth limit. */
typedef struct eq_pair { const void *x, *y; const struct eq_pair *up; } eq_pair;

static bool eq_pair_seen(const eq_pair *p, const void *x, const void *y)
{
    for (; p; p = p->up)
        if (p->x == x && p->y == y) return true;
    return false;
}

static int equal_up(tpl_value a, tpl_value b, int depth, uint64_t *fuel, unsigned eql, const tpl_eq_host *host, const eq_pair *up);
static int equal_rec(tpl_value a, tpl_value b, int depth, uint64_t *fuel, unsigned eql, const tpl_eq_host *host)
{
    return equal_up(a, b, depth, fuel, eql, host, NULL);
}

static int equal_up(tpl_value a, tpl_value b, int depth, uint64_t *fuel, unsigned eql, const tpl_eq_host *host, const eq_pair *up)
{
    if ((eql & EQ_STRICT) && depth > 0 &&
        ((a.type == TPL_T_UNDEF && a.aux != TPL_UNDEF_COND) || (b.type == TPL_T_UNDEF && b.aux != TPL_UNDEF_COND)))
        return -3;
    eql &= EQ_EQL | EQ_STRICT;
    if ((eql & EQ_EQL) && a.type != b.type && !(a.type == TPL_T_UNDEF && b.type == TPL_T_NONE) && !(a.type == TPL_T_NONE && b.type == TPL_T_UNDEF))
        return false;
    if (tpl_is_num(a) && tpl_is_num(b)) {
        if (a.type != TPL_T_FLOAT && b.type != TPL_T_FLOAT)
            return a.u.i == b.u.i;
        if (a.type == TPL_T_FLOAT && b.type == TPL_T_FLOAT)
            return a.u.f == b.u.f || (depth > 0 && same_nan(a.u.f, b.u.f));
        return a.type == TPL_T_FLOAT ? int_eq_float(b.u.i, a.u.f) : int_eq_float(a.u.i, b.u.f);
    }
    if ((a.type == TPL_T_BIGINT && b.type == TPL_T_FLOAT) || (a.type == TPL_T_FLOAT && b.type == TPL_T_BIGINT))
        return tpl_big_cmp(a, b) == 0;
    if (a.type != b.type) {
        if (host && (a.type == TPL_T_HOST || b.type == TPL_T_HOST))
            return host->eq(host->ctx, a, b); /* (a Decimal item == 1: Python's __eq__) */
        return false;
    }
    if (depth >= TPL_NEST_MAX && (a.type == TPL_T_LIST || a.type == TPL_T_MAP))
        return -2;
    switch (a.type) {
    case TPL_T_UNDEF:   /* Jinja2: Undefined.__eq__ is `type(self) is type(other)` */
    case TPL_T_NONE:
    case TPL_T_UNSET:
        return true;
    case TPL_T_STR:
        /* Ruby's eql? (a Hash's keys, uniq): a class or module is not the String of its name, a Regexp not its
         * text, a Symbol not its name's String */
        if ((eql & EQ_EQL) && ((a.flags ^ b.flags) & (TPL_F_CLASS_RB | TPL_F_REGEX_RB | TPL_F_SYMBOL)))
            return false;
        return a.len == b.len && tpl_mem_eq(a.u.s, b.u.s, a.len);
    case TPL_T_BIGINT: /* canonical text */
    case TPL_T_RATIONAL:
        return a.len == b.len && tpl_mem_eq(a.u.s, b.u.s, a.len);
    case TPL_T_LIST: {
        /* A list never equals a tuple in Python, nor a range, dict view or iterator; ranges compare
         * as sequences, dict_keys and dict_items as sets (either with the other), dict_values and
         * iterators by identity. */
        if (is_set_view(a) && is_set_view(b) && tpl_is_view(a) && tpl_is_view(b)) {
            if (tpl_view_dict(a)->len != tpl_view_dict(b)->len)
                return false;
            return a.u.list == b.u.list && a.aux == b.aux ? true : view_live_contained(a, b, depth, fuel, host);
        }
        if (is_set_view(a) && is_set_view(b)) {
            if (a.u.list->len != b.u.list->len)
                return false;
            return a.u.list == b.u.list && a.aux == b.aux ? true : view_contained(a, b, depth, fuel, host);
        }
        if ((a.flags & TPL_F_TUPLE) != (b.flags & TPL_F_TUPLE) || a.aux != b.aux)
            return false;
        const tpl_list *x = a.u.list, *y = b.u.list;
        if (x == y)
            return true;
        if (a.aux >= TPL_LAZY_DICT_VALUES)
            return false;
        if ((a.flags | b.flags) & TPL_F_RANGE_BIG) /* a range held without its items */
            return range_equal(a, b);
        if (x->len != y->len)
            return false;
        if ((eql & EQ_EQL) && eq_pair_seen(up, x, y))
            return true;
        if (!tpl_fuel_charge(fuel, x->len))
            return -1;
        eq_pair here = {x, y, up};
        for (uint32_t i = 0; i < x->len; i++) {
            int r = equal_up(x->items[i], y->items[i], depth + 1, fuel, eql, host, &here);
            if (r != 1)
                return r;
        }
        return true;
    }
    case TPL_T_MAP: {
        const tpl_map *x = a.u.map, *y = b.u.map;
        if (x == y)
            return true;
        /* A namespace() object compares by identity. */
        if ((a.flags & TPL_F_NS) || (b.flags & TPL_F_NS) || x->len != y->len)
            return false;
        if ((eql & EQ_EQL) && eq_pair_seen(up, x, y))
            return true;
        if (!tpl_fuel_charge(fuel, x->len))
            return -1;
        eq_pair here = {x, y, up};
        for (uint32_t i = 0; i < x->len; i++) {
            uint32_t at;
            if (!map_lookup(y, x->e[i].key, x->e[i].hash, &at, fuel)) {
                if (!host || (x->e[i].key.type != TPL_T_HOST && !y->host_keys && !tpl_value_has_host(x->e[i].key)))
                    return false;
                int f = host->find(host->ctx, y, x->e[i].key, &at); /* ({Decimal(1): v} == {1: v}) */
                if (f != 1)
                    return f;
            }
            int r = equal_up(x->e[i].val, y->e[at].val, depth + 1, fuel, eql, host, &here);
            if (r != 1)
                return r;
        }
        return true;
    }
    case TPL_T_FUNC:
        if (a.u.p && b.u.p && a.aux >= TPL_FN_ALIAS && a.aux == b.aux) { /* dict[...] (GenericAlias.__eq__: the arguments), dict.get */
            const tpl_bound *x = a.u.bound, *y = b.u.bound;
            if (x->method != y->method) return false;
            return a.aux == TPL_FN_ALIAS ? equal_rec(x->self, y->self, depth + 1, fuel, eql, host)
                                         : x->self.len == y->self.len && tpl_mem_eq(x->self.u.s, y->self.u.s, x->self.len);
        }
        if (a.u.p && b.u.p && a.aux < TPL_FN_ALIAS && b.aux < TPL_FN_ALIAS) { /* bound methods: Python's meth_richcompare */
            const tpl_bound *x = a.u.bound, *y = b.u.bound;
            if (x != y && x->method == y->method && x->method == tpl_stdlib.id_unsafe_method && x->self.type == TPL_T_STR &&
                y->self.type == TPL_T_STR) { /* a refused list/dict method: its receiver is kept past the message (vm.c) */
                tpl_value rx, ry;
                if (x->self.len != y->self.len || !tpl_mem_eq(x->self.u.s, y->self.u.s, x->self.len)) return false;
                memcpy(&rx, x->self.u.s + x->self.len + 1, sizeof rx);
                memcpy(&ry, y->self.u.s + y->self.len + 1, sizeof ry);
                return same_object(rx, ry);
            }
            return x == y || (x->method == y->method && same_object(x->self, y->self));
        }
        return a.u.p == b.u.p && a.aux == b.aux;
    case TPL_T_HOST:
        if (host && a.u.p != b.u.p)
            return host->eq(host->ctx, a, b);
        return a.u.p == b.u.p;
    default:   /* functions, macros, loops: identity */
        return a.u.p == b.u.p && a.aux == b.aux;
    }
}

bool tpl_equal(tpl_value a, tpl_value b) { return equal_rec(a, b, 0, NULL, false, NULL) == 1; }
int tpl_equal_metered(tpl_value a, tpl_value b, uint64_t *fuel) { return equal_rec(a, b, 0, fuel, false, NULL); }
int tpl_item_equal_metered(tpl_value a, tpl_value b, uint64_t *fuel) { return equal_rec(a, b, 1, fuel, false, NULL); }
int tpl_equal_strict_metered(tpl_value a, tpl_value b, int depth, uint64_t *fuel)
{
    return equal_rec(a, b, depth, fuel, EQ_STRICT, NULL);
}
int tpl_equal_host_metered(tpl_value a, tpl_value b, int depth, bool strict, uint64_t *fuel, const tpl_eq_host *host)
{
    return equal_rec(a, b, depth, fuel, strict ? EQ_STRICT : 0, host);
}
bool tpl_eql(tpl_value a, tpl_value b) { return equal_rec(a, b, 0, NULL, EQ_EQL, NULL) == 1; }
int tpl_eql_metered(tpl_value a, tpl_value b, uint64_t *fuel) { return equal_rec(a, b, 0, fuel, EQ_EQL, NULL); }

/* ------------------------------------------------------------------ maps */

static bool has_host_rec(tpl_value v, int depth)
{
    if (v.type == TPL_T_HOST)
        return true;
    if (v.type != TPL_T_LIST || !(v.flags & TPL_F_TUPLE) || depth >= TPL_NEST_MAX)
        return false;
    for (uint32_t i = 0; i < v.u.list->len; i++)
        if (has_host_rec(v.u.list->items[i], depth + 1))
            return true;
    return false;
}

bool tpl_value_has_host(tpl_value v) { return has_host_rec(v, 0); }

enum { MAP_LINEAR_MAX = TPL_MAP_LINEAR_MAX };

/* Finds key (with hash h); sets *at to its entry index. Key comparisons charge fuel (NULL:
 * unmetered); when it runs out the key is not found and *fuel is 0. */
static bool keys_equal(const tpl_map *m, tpl_value a, tpl_value b, uint64_t *fuel)
{
    return equal_rec(a, b, 1, fuel, m->eql, NULL) == 1; /* depth 1: the identity shortcut of a key lookup */
}

static bool map_lookup(const tpl_map *m, tpl_value key, uint64_t h, uint32_t *at, uint64_t *fuel)
{
    if (m->idx_cap) {
        uint32_t mask = m->idx_cap - 1;
        for (uint32_t s = (uint32_t)h & mask;; s = (s + 1) & mask) {
            uint32_t slot = m->idx[s];
            if (!slot)
                return false;
            const tpl_entry *e = &m->e[slot - 1];
            if (e->hash == h && keys_equal(m, e->key, key, fuel)) {
                *at = slot - 1;
                return true;
            }
        }
    }
    for (uint32_t i = 0; i < m->len; i++)
        if (m->e[i].hash == h && keys_equal(m, m->e[i].key, key, fuel)) {
            *at = i;
            return true;
        }
    return false;
}

static void idx_insert(tpl_map *m, uint32_t i)
{
    uint32_t mask = m->idx_cap - 1;
    uint32_t s = (uint32_t)m->e[i].hash & mask;
    while (m->idx[s])
        s = (s + 1) & mask;
    m->idx[s] = i + 1;
}

/* (Re)builds the open-addressing index at load factor <= 1/2. Without an arena (tpl_map_del)
 * the existing index storage is reused, which is always big enough after a deletion. */
static bool idx_rebuild(tpl_arena *a, tpl_map *m)
{
    if (m->len <= MAP_LINEAR_MAX && a) {
        m->idx_cap = 0;
        m->idx = NULL;
        return true;
    }
    uint32_t cap = m->idx_cap;
    if (a) {
        cap = 32;
        while (cap < m->len * 2u)
            cap *= 2;
        uint32_t *idx = tpl_arena_alloc(a, (size_t)cap * sizeof *idx);
        if (!idx)
            return false;
        m->idx = idx;
        m->idx_cap = cap;
    }
    memset(m->idx, 0, (size_t)cap * sizeof *m->idx);
    for (uint32_t i = 0; i < m->len; i++)
        idx_insert(m, i);
    return true;
}

bool tpl_map_reindex(tpl_arena *a, tpl_map *m) { return m->len <= MAP_LINEAR_MAX || idx_rebuild(a, m); }

tpl_map *tpl_map_new(tpl_arena *a, uint32_t cap)
{
    tpl_map *m = tpl_arena_alloc(a, sizeof *m);
    if (!m)
        return NULL;
    memset(m, 0, sizeof *m);
    if (cap && !(m->e = tpl_arena_alloc(a, (size_t)cap * sizeof(tpl_entry))))
        return NULL;
    m->cap = cap;
    return m;
}

/* Python dict assignment: an existing key keeps its position (and its original key object). */
bool tpl_map_set(tpl_arena *a, tpl_map *m, tpl_value key, tpl_value val)
{
    uint64_t h = tpl_hash_value(key);
    uint32_t at;
    if (map_lookup(m, key, h, &at, a ? a->fuel : NULL)) {
        m->e[at].val = val;
        return true;
    }
    return tpl_map_append(a, m, key, h, val);
}

bool tpl_map_append(tpl_arena *a, tpl_map *m, tpl_value key, uint64_t h, tpl_value val)
{
    if (m->len == m->cap) {
        if (m->cap >= UINT32_MAX / 4)
            return false;
        uint32_t cap = m->cap < 4 ? 8 : m->cap * 2;
        tpl_entry *e = tpl_arena_alloc(a, (size_t)cap * sizeof *e);
        if (!e)
            return false;
        if (m->len)
            memcpy(e, m->e, (size_t)m->len * sizeof *e);
        m->e = e;
        m->cap = cap;
    }
    m->e[m->len] = (tpl_entry){key, val, h};
    m->len++;
    if (key.type == TPL_T_HOST || (key.type == TPL_T_LIST && tpl_value_has_host(key)))
        m->host_keys = true;
    if (m->idx_cap && m->len * 2u <= m->idx_cap) {
        idx_insert(m, m->len - 1);
        return true;
    }
    if (m->len <= MAP_LINEAR_MAX && !m->idx_cap)
        return true;
    if (!idx_rebuild(a, m)) {
        m->len--;
        return false;
    }
    return true;
}

tpl_value *tpl_map_get(const tpl_map *m, tpl_value key)
{
    if (key.type == TPL_T_STR && !m->idx_cap) {
        /* a string key in a map without an index (a record: Ruby's h.fetch("k"), h["k"]): the
         * entries compared by length and bytes, without hashing the key first (equal keys have
         * equal hashes, so the hash only filters; a string equals only a string, a Symbol's
         * bytes included, and in a Ruby Hash a class only a class, as keys_equal says) */
        for (uint32_t i = 0; i < m->len; i++) { /* by index: an empty map's e may be NULL */
            tpl_entry *e = &m->e[i];
            if (e->key.type == TPL_T_STR && e->key.len == key.len && tpl_mem_eq(e->key.u.s, key.u.s, key.len) &&
                !(m->eql && ((e->key.flags ^ key.flags) & (TPL_F_CLASS_RB | TPL_F_REGEX_RB | TPL_F_SYMBOL))))
                return &e->val;
        }
        return NULL;
    }
    uint32_t at;
    return map_lookup(m, key, tpl_hash_value(key), &at, NULL) ? &m->e[at].val : NULL;
}

tpl_value *tpl_map_get_metered(const tpl_map *m, tpl_value key, uint64_t *fuel)
{
    uint32_t at;
    return map_lookup(m, key, tpl_hash_value(key), &at, fuel) ? &m->e[at].val : NULL;
}

tpl_value *tpl_map_get_str(const tpl_map *m, const char *s, size_t n, uint64_t hash)
{
    if (m->idx_cap) {
        uint32_t mask = m->idx_cap - 1;
        for (uint32_t i = (uint32_t)hash & mask;; i = (i + 1) & mask) {
            uint32_t slot = m->idx[i];
            if (!slot)
                return NULL;
            tpl_entry *e = &m->e[slot - 1];
            if (e->hash == hash && e->key.type == TPL_T_STR && e->key.len == n && tpl_mem_eq(e->key.u.s, s, n))
                return &e->val;
        }
    }
    for (uint32_t i = 0; i < m->len; i++) {
        tpl_entry *e = &m->e[i];
        if (e->hash == hash && e->key.type == TPL_T_STR && e->key.len == n && tpl_mem_eq(e->key.u.s, s, n))
            return &e->val;
    }
    return NULL;
}

/* Python `del d[k]`: later entries keep their relative order. */
bool tpl_map_del(tpl_map *m, tpl_value key)
{
    uint32_t at;
    if (!map_lookup(m, key, tpl_hash_value(key), &at, NULL))
        return false;
    memmove(&m->e[at], &m->e[at + 1], (size_t)(m->len - at - 1) * sizeof *m->e);
    m->len--;
    if (m->idx_cap)
        idx_rebuild(NULL, m);
    return true;
}

/* ------------------------------------------------------------------ string builder */

void tpl_sb_init(tpl_sb *b, tpl_arena *arena)
{
    b->arena = arena;
    b->p = NULL;
    b->len = b->cap = 0;
    b->failed = false;
    b->address = NULL;
}

bool tpl_sb_reserve(tpl_sb *b, size_t extra)
{
    if (b->failed)
        return false;
    if (extra <= b->cap - b->len)
        return true;
    if (extra > UINT32_MAX - b->len) {   /* values hold 32-bit lengths */
        b->failed = true;
        return false;
    }
    size_t want = b->len + extra;
    size_t cap = b->cap < 64 ? 64 : b->cap * 2;
    while (cap < want)
        cap *= 2;
    if (!b->arena) {
        char *p = realloc(b->p, cap);
        if (!p) {
            b->failed = true;
            return false;
        }
        b->p = p;
        b->cap = cap;
        return true;
    }
    cap = round16(cap);
    /* Our buffer is the newest allocation of the head chunk: grow it in place. */
    tpl_chunk *c = b->arena->head;
    if (b->p && c && b->p + b->cap == (char *)c->data + c->used &&
        c->size - c->used >= cap - b->cap) {
        c->used += cap - b->cap;
        b->cap = cap;
        return true;
    }
    char *p = tpl_arena_alloc(b->arena, cap);
    if (!p) {
        b->failed = true;
        return false;
    }
    if (b->len)
        memcpy(p, b->p, b->len);
    b->p = p;
    b->cap = cap;
    return true;
}

void tpl_sb_put(tpl_sb *b, const char *s, size_t n)
{
    if (n == 0 || !tpl_sb_reserve(b, n))
        return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
}

void tpl_sb_putc(tpl_sb *b, char c)
{
    if ((b->len < b->cap && !b->failed) || tpl_sb_reserve(b, 1))
        b->p[b->len++] = c;
}

void tpl_sb_puts(tpl_sb *b, const char *s) { tpl_sb_put(b, s, strlen(s)); }

void tpl_sb_printf(tpl_sb *b, const char *fmt, ...)
{
    if (b->failed)
        return;
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    size_t avail = b->cap - b->len;
    int n = vsnprintf(avail ? b->p + b->len : NULL, avail, fmt, ap);
    if (n >= 0 && (size_t)n >= avail) {   /* did not fit (room for the NUL is needed too) */
        if (tpl_sb_reserve(b, (size_t)n + 1))
            vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap2);
        else
            n = -1;
    }
    if (n > 0)
        b->len += (size_t)n;
    va_end(ap2);
    va_end(ap);
}

void tpl_sb_put_cp(tpl_sb *b, uint32_t cp)
{
    char u[4];
    if (cp < 0x80) {
        tpl_sb_putc(b, (char)cp);
        return;
    }
    if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
        cp = 0xFFFD;   /* not encodable in UTF-8 */
    size_t n;
    if (cp < 0x800) {
        u[0] = (char)(0xC0 | (cp >> 6));
        u[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xE0 | (cp >> 12));
        u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        u[0] = (char)(0xF0 | (cp >> 18));
        u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    tpl_sb_put(b, u, n);
}

void tpl_sb_put_fill(tpl_sb *b, uint32_t fill, int64_t n)
{
    if (n <= 0)
        return;
    if (fill < 0x80) {
        if (!tpl_sb_reserve(b, (size_t)n))
            return;
        memset(b->p + b->len, (int)fill, (size_t)n);
        b->len += (size_t)n;
        return;
    }
    /* one encoded copy, then all the room at once (a width past the memory limit fails here,
     * not after millions of writes), filled by doubling copies */
    size_t start = b->len;
    tpl_sb_put_cp(b, fill);
    size_t w = b->len - start;
    if (b->failed || w == 0)
        return;
    if ((uint64_t)n > SIZE_MAX / w) {
        b->failed = true;
        return;
    }
    size_t want = (size_t)n * w, have = w;
    if (!tpl_sb_reserve(b, want - w))
        return;
    while (have < want) {
        size_t k = have < want - have ? have : want - have;
        memcpy(b->p + start + have, b->p + start, k);
        have += k;
    }
    b->len = start + want;
}

void tpl_sb_free(tpl_sb *b)
{
    if (!b->arena)
        free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

bool tpl_arena_owns(const tpl_arena *a, const void *p)
{
    for (const tpl_chunk *c = a->head; c; c = c->next)
        if ((const unsigned char *)p >= c->data && (const unsigned char *)p < c->data + c->size)
            return true;
    return false;
}

bool tpl_arena_mark_take(const tpl_arena *a, tpl_arena_mark *m)
{
    m->n = 0;
    for (tpl_chunk *c = a->head; c; c = c->next) {
        if (m->n == TPL_ARENA_MARK_CHUNKS) return false;
        m->ch[m->n].c = c;
        m->ch[m->n].used = c->used;
        m->n++;
    }
    return true;
}

void tpl_arena_rewind(tpl_arena *a, const tpl_arena_mark *m)
{
    /* (new chunks go in front of the head or right behind it: the marked ones keep their order) */
    for (tpl_chunk **link = &a->head; *link;) {
        tpl_chunk *c = *link;
        uint32_t i = 0;
        while (i < m->n && m->ch[i].c != c) i++;
        if (i < m->n) {
            if (c->used > m->ch[i].used) c->used = m->ch[i].used;
            link = &c->next;
            continue;
        }
        *link = c->next;
        a->total -= c->size;
        chunk_free(a, c);
    }
}
