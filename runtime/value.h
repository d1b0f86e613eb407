/* Values, the per-render arena, lists, maps and string builders.
 *
 * A value is 16 bytes and never owns memory: strings, lists and maps point into an arena (the
 * render's, the state's or the program's constant pool), and an arena frees everything at once.
 * The compiled program is immutable; a render never writes to memory it did not allocate. */
#ifndef TPL_VALUE_H
#define TPL_VALUE_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <string.h>

#include "types.h"

/* ------------------------------------------------------------------ arena */

/* One chunk of an arena; chunks form a singly linked list, newest first. */
typedef struct tpl_chunk {
    struct tpl_chunk *next;
    size_t size, used;
    _Alignas(16) unsigned char data[];
} tpl_chunk;

/* A byte budget several arenas share (the compiler's: syntax tree, scratch, program): chunk
 * allocations past `limit` fail and set `over`. */
typedef struct tpl_budget {
    size_t used, limit;
    bool over;
} tpl_budget;

/* A bump allocator. `limit` (bytes, 0 = none) caps the total size of all chunks; an allocation
 * past it returns NULL and sets `over_limit`. `budget` (NULL: none) is charged for every chunk. Reset keeps one chunk (as large as all the chunks
 * together) for reuse, so a steady-state render performs no heap allocation. */
typedef struct tpl_arena {
    tpl_chunk *head;
    size_t total, limit;
    bool over_limit;
    const struct tpl_allocator *alloc; /* chunk allocator (NULL: aligned_alloc/free) */
    uint64_t *fuel;     /* the render's fuel, charged by walks over values built here (see
                         * tpl_fuel_charge; NULL: unmetered) */
    tpl_budget *budget; /* charged for chunks (borrowed; NULL: none) */
    bool zero_chunks;   /* chunks from the C library come zeroed (a render context's arenas: see
                         * chunk_new); false after tpl_arena_init */
} tpl_arena;

void tpl_arena_init(tpl_arena *a, size_t limit);
/* Whether p points into one of a's chunks. */
bool tpl_arena_owns(const tpl_arena *a, const void *p);
/* A mark of an arena: its chunks then and how much of each was in use (tpl_arena_mark_take), to
 * give back what was allocated after it (tpl_arena_rewind: tpl_render_rescue drops what a failed
 * call a host caught allocated, when nothing made before it was written). */
#define TPL_ARENA_MARK_CHUNKS 16
typedef struct tpl_arena_mark {
    uint32_t n;
    struct { tpl_chunk *c; size_t used; } ch[TPL_ARENA_MARK_CHUNKS];
} tpl_arena_mark;
/* Fills *m; false when a has more chunks than a mark keeps. */
bool tpl_arena_mark_take(const tpl_arena *a, tpl_arena_mark *m);
/* Frees the chunks a took after m and gives back what its older chunks handed out since (every
 * pointer into that memory dies). m must be a mark of a taken since its last reset. */
void tpl_arena_rewind(tpl_arena *a, const tpl_arena_mark *m);
/* Makes an empty arena take its chunks from alloc (borrowed: must outlive the arena). */
void tpl_arena_set_allocator(tpl_arena *a, const struct tpl_allocator *alloc);
/* tpl_arena_alloc's slow path: a new chunk (or a size too large to round). */
void *tpl_arena_alloc_grow(tpl_arena *a, size_t n);
/* Returns 16-byte aligned memory valid until reset/free, or NULL (out of memory or limit).
 * Inline: the common case is a bump of the head chunk. */
static inline void *tpl_arena_alloc(tpl_arena *a, size_t n)
{
    tpl_chunk *c = a->head;
    size_t need = (n + 15) & ~(size_t)15;
    if (c && n - 1 < SIZE_MAX - 32 && c->size - c->used >= need) {
        void *p = c->data + c->used;
        c->used += need;
        return p;
    }
    return tpl_arena_alloc_grow(a, n);
}
/* n bytes in a chunk of their own (linked behind the head, counted against the limit), so a
 * block that will grow in place is not followed by other allocations; NULL on failure. */
void *tpl_arena_alloc_alone(tpl_arena *a, size_t n);
/* Gives back p, a block tpl_arena_alloc_alone returned from a (not reset or freed since): its
 * chunk is freed at once instead of with the arena, so a table that grows by doubling in an
 * arena does not keep its old copies (issue 13 §1). NULL or a block not found: nothing. */
void tpl_arena_free_alone(tpl_arena *a, void *p);
/* The size from which a table growing in an arena (tpl_smap, the compiler's scopes) takes a
 * chunk of its own and gives the old one back (tpl_arena_free_alone): smaller tables stay in
 * the arena's chunks, where a freed copy is a few bytes. */
#define TPL_ARENA_ALONE_MIN 4096
/* A growing table's array of `bytes` in a: a chunk of its own from TPL_ARENA_ALONE_MIN bytes,
 * else the arena's (NULL when out of memory or past the budget). */
static inline void *tpl_arena_table(tpl_arena *a, size_t bytes)
{
    return bytes >= TPL_ARENA_ALONE_MIN ? tpl_arena_alloc_alone(a, bytes) : tpl_arena_alloc(a, bytes);
}
/* Gives back an array tpl_arena_table(a, bytes) returned, once the table has moved on (a small
 * one stays in the arena until it is reset or freed). */
static inline void tpl_arena_table_free(tpl_arena *a, void *p, size_t bytes)
{
    if (bytes >= TPL_ARENA_ALONE_MIN) tpl_arena_free_alone(a, p);
}
/* Copies n bytes into the arena (plus a NUL terminator); NULL on failure. */
char *tpl_arena_strdup(tpl_arena *a, const char *s, size_t n);
/* Makes a's memory free again (tpl_arena_reset): the several chunks a render needed replaced
 * by one as large as all of them (the rest of tpl_arena_reset, out of its way). */
void tpl_arena_reset_chunks(tpl_arena *a);
/* Keeps one chunk for reuse. When the render needed several chunks they are replaced by a
 * single one as large as all of them together, so the next render of the same size performs
 * no allocation at all. (Inline: every render starts with it, and almost always on one chunk.) */
static inline void tpl_arena_reset(tpl_arena *a)
{
    a->over_limit = false;
    if (a->head && !a->head->next) a->head->used = 0;
    else if (a->head) tpl_arena_reset_chunks(a);
}
void tpl_arena_free(tpl_arena *a);

/* ------------------------------------------------------------------ walk metering */

/* One mechanism bounds every walk over a value (printing, serialising, comparing, hashing,
 * flattening, sorting, joining): the walk charges n units of the render's fuel (the same budget
 * as instructions, tpl_limits.fuel) per element it visits. Values may share structure (a list
 * holding one list twice, 60 levels deep, is 2^60 elements in 60 instructions), so a walk is
 * bounded by the fuel, not by the memory the value takes. fuel NULL: unmetered (values outside
 * a render: the state, the compiler). False, with *fuel left 0, when the fuel is exhausted; the
 * caller ends the render with the fuel error (tpl_vm_nomem reports it). */
static inline bool tpl_fuel_charge(uint64_t *fuel, uint64_t n)
{
    if (!fuel) return true;
    if (n >= *fuel) { *fuel = 0; return false; }
    *fuel -= n;
    return true;
}

/* ------------------------------------------------------------------ values */

typedef enum tpl_type {
    TPL_T_UNDEF = 0, /* Jinja2's Undefined: u.s/len name what was missing (see aux) */
    TPL_T_NONE,      /* None / nil / JSON null */
    TPL_T_BOOL,      /* u.i is 0 or 1 */
    TPL_T_INT,       /* u.i, int64; a result past int64 is a TPL_T_BIGINT */
    TPL_T_FLOAT,     /* u.f */
    TPL_T_STR,       /* u.s (UTF-8, not NUL-terminated in general), len bytes */
    TPL_T_LIST,      /* u.list; flag TPL_F_TUPLE prints as a tuple */
    TPL_T_MAP,       /* u.map, insertion-ordered */
    TPL_T_FUNC,      /* builtin global function (aux = builtin id) or bound method (u.bound) */
    TPL_T_MACRO,     /* u.macro */
    TPL_T_LOOP,      /* u.loop, the `loop` variable of a for loop */
    TPL_T_UNSET,     /* internal: a local slot not assigned yet, or a missing argument */
    TPL_T_HOST,      /* a host object (include/tpl.h tpl_val_host): u.p is a tpl_hobj (runtime/host.h) */
    TPL_T_BIGINT,    /* an integer past int64 (Python's and Ruby's are unbounded): u.s its canonical
                      * decimal text, len bytes; never one that fits in int64 (runtime/bigint.h) */
    TPL_T_RATIONAL,  /* a Ruby Rational (ERB only: 3r, Rational(1, 3), 2 ** -2): u.s its canonical text
                      * "NUM/DEN" (reduced, DEN > 0, "3/1" for an integer one), len bytes; unbounded as
                      * a big int's, kept in an arena as its text is (runtime/bigint.h tpl_rat_*) */
} tpl_type;

enum {
    TPL_F_SAFE = 1,      /* string: markup-safe (Jinja2 Markup) */
    TPL_F_TUPLE = 2,     /* list: a Python tuple */
    TPL_F_NS = 4,        /* map: a Jinja2 namespace() object (attribute assignment allowed) */
    TPL_F_SYMBOL = 8,    /* string: came from an ERB :symbol literal (prints the same) */
};

/* List flag: a groupby() result item, a 2-tuple (grouper, list) that also has the attributes
 * `.grouper` (item 0) and `.list` (item 1), like Jinja2's _GroupTuple. Always set together with
 * TPL_F_TUPLE; tpl_getattr should honour it. */
#define TPL_F_GROUP 16
/* List flag: a Ruby range, stored as the 3 items [begin, end (nil: endless), exclusive]. */
#define TPL_F_RANGE_RB 32
/* Number flag (int, big int, float; Jinja): a constant of the compiled template's code. CPython
 * merges the equal constants of one compiled module into one object, so two of them are
 * `sameas` (`{% set a = 300 %}{% set b = 300 %}`), while a number computed at render time or read
 * from the state is a new object (stdlib/jinja/tests.c t_sameas). The bit is TPL_F_RANGE_RB's,
 * which only lists use. */
#define TPL_F_LIT 32
/* List flag: a Jinja range() of more than TPL_RANGE_ITEMS_MAX items, held without them (Python's
 * range never materialises): its list has len 0 and only (start, stop, step) (tpl_range_params).
 * Truth, length, `in`, indexing, slicing, first, last, index/count, printing and comparison work
 * from those (runtime/vm.c tpl_range_*); whatever needs every item (tpl_to_list, a for loop, a filter
 * that takes all of them) is the limit error "range too large". The bit is TPL_F_SYMBOL's, which
 * only strings use. */
#define TPL_F_RANGE_BIG 8
enum { TPL_RANGE_ITEMS_MAX = 10000000 }; /* a range of more items is a TPL_F_RANGE_BIG one */
/* List flag: a Ruby MatchData (String#match, =~, $~), stored as the items [subject string, regexp,
 * group names (a list: a name or nil per group 1..n), then begin and end byte offsets of each group
 * 0..n (-1 for a group that did not take part)]. The bit is TPL_F_REGEX_RB's, which only strings use. */
#define TPL_F_MATCH_RB 64
/* String flag: a regular expression (the pattern, with (?imx) options folded in). */
#define TPL_F_REGEX_RB 64
/* String flag: a class constant (Array, Hash, String, ...), for is_a? and friends. */
#define TPL_F_CLASS_RB 128
/* String flag, always with TPL_F_CLASS_RB (so String's checks, which exclude classes, exclude it): a
 * Gem::Version, held as its normalised version text (@version: stripped, "-" as ".pre."): to_s and
 * printing are the text; <=>, ==, sort, inspect and its methods are RubyGems' (stdlib/ruby/ruby.c
 * gem_*). The bit is TPL_F_GROUP's, which only lists use. */
#define TPL_F_GEMV_RB 16
/* String flag: the exception a `rescue => e` bound, held as its message: the bytes after the message
 * are " (Class)" (stdlib/ruby/ruby.c r_any_begin; none: StandardError); class, is_a? and inspect read
 * it. The bit is TPL_F_NS's, which only maps use. */
#define TPL_F_EXC_RB 4
/* String flag: a frozen string (a literal under the `frozen_string_literal: true` magic comment, or
 * .freeze): <<, concat and prepend raise FrozenError. The bit is TPL_F_TUPLE's, which only lists use. */
#define TPL_F_FROZEN_RB 2

/* List and map flag: an ERB Array or Hash this render built (a literal, or the copy made to change one
 * that is not: the state's, the program's, a method's result). Ruby's objects are references, so
 * `[]=`, `<<`, push, store, delete, merge! ... change a flagged one in place and every variable that
 * holds it sees the change; an unflagged one is copied first (stdlib/ruby/ruby.c rb_own). Values
 * never carry it out of a render (constants, the state, .tplb). The bit is TPL_F_CLASS_RB's, which
 * only strings use. */
#define TPL_F_MUT_RB 128
/* List flag: a Ruby Enumerator (a blockless each, each_slice(n), times, map, ...: stdlib/ruby/ruby.c
 * enum_wrap): its items are the values it yields, so Enumerable's methods read them as an Array's;
 * past them (cap == len + TPL_ENUM_EXTRA) its receiver, method name (a string), arguments (a list)
 * and the position of next/peek (an int). The bit is TPL_F_NS's, which only maps use. */
#define TPL_F_ENUM_RB 4
enum { TPL_ENUM_EXTRA = 4 };
/* List and map flag: a frozen Ruby Array or Hash (.freeze): a change raises FrozenError. The bit is
 * TPL_F_SAFE's, which only strings use. */
#define TPL_F_FROZEN_CT_RB 1

/* aux of a list value: the Python type it stands for when that is neither list nor tuple. Jinja2's
 * lazy values (range(), dict views, the generators its filters return) are materialised as
 * lists, so iterating, indexing and filtering them need nothing special; the tag makes them print,
 * compare, serialise and answer `is sequence` as Python's objects do. The tag lives in the value
 * (not the list), so `|list` of one is a plain list sharing the items. A range's list also holds
 * (start, stop, step) as three ints just past its items (cap == len, so a push never overwrites
 * them): see tpl_range_params. Iterators (TPL_LAZY_GENERATOR and later) cannot be printed (Python
 * shows a memory address), have no len() and are not sequences. */
enum { TPL_LAZY_NONE = 0, TPL_LAZY_RANGE, TPL_LAZY_DICT_ITEMS, TPL_LAZY_DICT_KEYS, TPL_LAZY_DICT_VALUES,
       TPL_LAZY_GENERATOR, TPL_LAZY_LIST_REVITER, TPL_LAZY_RANGE_ITER, TPL_LAZY_DICT_REVITER, TPL_LAZY_REVERSED,
       TPL_LAZY_DICT_REVITEMS, TPL_LAZY_DICT_REVKEYS, TPL_LAZY_DICT_REVVALUES };

/* List flag (Jinja): a dict view (d.keys(), d.items(), d.values()) or a reversed() iterator of a
 * dict or view that knows its dict: the dict is the map value just past its items (cap == len,
 * so a push never overwrites it; tpl_view_dict). A for loop over one iterates the dict as Python's
 * live view does (runtime/vm.c dict_next). The bit is TPL_F_MATCH_RB's, which only ERB lists use. */
#define TPL_F_VIEW_DICT 64

/* aux of an undefined value: what was missing. */
enum { TPL_UNDEF_NAME = 0, TPL_UNDEF_ATTR = 1, TPL_UNDEF_ITEM = 2, TPL_UNDEF_PLAIN = 3,
       TPL_UNDEF_COND = 4 /* an inline if without else: always lenient (Jinja2's cond_expr_undefined) */ };
/* flags of a TPL_UNDEF_ATTR/ITEM undefined made by a host (tpl_val_undefined_missing): its
 * container's repr (Jinja2's object_type_repr) is text, NUL-terminated at u.s + len + 1 (in
 * place of a tpl_vtype + 1: tpl_undef_container). */
#define TPL_UNDEF_OWNER_TEXT 0xFF

struct tpl_list;
struct tpl_map;
struct tpl_bound;
struct tpl_macro;
struct tpl_loop;

typedef struct tpl_value {
    uint8_t type;   /* tpl_type */
    uint8_t flags;  /* TPL_F_* */
    uint16_t aux;   /* func: builtin id; undef: TPL_UNDEF_* */
    uint32_t len;   /* str: bytes; undef: bytes of the missing name */
    union {
        int64_t i;
        double f;
        const char *s;
        struct tpl_list *list;
        struct tpl_map *map;
        struct tpl_bound *bound;
        struct tpl_macro *macro;
        struct tpl_loop *loop;
        void *p;
    } u;
} tpl_value;

typedef struct tpl_list {
    uint32_t len, cap;
    tpl_value *items;
} tpl_list;

typedef struct tpl_entry {
    tpl_value key, val;
    uint64_t hash;
} tpl_entry;

typedef struct tpl_map {
    uint32_t len, cap;
    uint32_t idx_cap;   /* 0 = no index (linear scan); else power of two */
    bool eql : 1;       /* a Ruby Hash: keys compare by Ruby's eql? (tpl_eql: 1, 1.0 and true are three
                         * keys, a Symbol is no String of its name), not Python's == (tpl_equal); the
                         * hash is the same either way */
    bool host_keys : 1; /* some key is a host object (TPL_T_HOST, hashed by identity) or a tuple
                         * holding one (tpl_value_has_host): a lookup that misses asks the host
                         * about those keys (tpl_vm_map_get) */
    bool rb_state : 1;  /* (with eql) a Ruby Hash copied from a Hash of the render state (its change, dup,
                         * clone, merge: the same class in Ruby): as the state's own Hashes (not eql),
                         * [], key?, fetch and dig read a Symbol key as its String (the reference's
                         * StateHash); other methods and plain Hashes keep :k and "k" apart */
    uint16_t gen;       /* Jinja: changes of the dict by its methods (update, pop, ...: tpl_vm_map_owned),
                         * modulo 2^16, by which a view made of it knows it is stale (tpl_vm_view_sync) */
    tpl_entry *e;
    uint32_t *idx;      /* open addressing; slot holds entry index + 1, 0 = empty */
    /* For undefined-attribute messages: the container was a "dict object" (jinja) */
    union {
        void *rb_default;   /* a Ruby Hash's default, Hash.new(v) / Hash.new { |h, k| ... } (stdlib/ruby/ruby.c's
                             * record; NULL: nil) */
        const tpl_value *module; /* Jinja: an imported template's module (Jinja2's TemplateModule, a
                                  * TPL_F_NS map: MODULE), or the dict of exports an import made:
                                  * [0] the template's output (str(module) prints it), [1] its name */
    };
} tpl_map;

/* A method bound to its receiver: `s.upper` before it is called. */
typedef struct tpl_bound {
    tpl_value self;
    uint16_t method;    /* builtin id */
} tpl_bound;

/* aux of a TPL_T_FUNC holding a tpl_bound (0: a bound method, self.method): what Jinja2 finds on a
 * global that is a class. TPL_FN_ALIAS: dict[self] (types.GenericAlias; method is the dict global's
 * id); TPL_FN_DESCR: the unbound method self (a string) of the class `method` (dict.get:
 * <method 'get' of 'dict' objects>); TPL_FN_MEMBER: the data member self of the class `method`
 * (range.start). */
enum { TPL_FN_ALIAS = 0xFFFD, TPL_FN_DESCR = 0xFFFE, TPL_FN_MEMBER = 0xFFFF }; /* (a bound method's aux may
                                                                            * hold its builtin id: below these) */
/* aux of a TPL_T_FUNC without a tpl_bound, from TPL_FN_TYPE on (builtin ids are below it): a
 * Python class that is no Jinja2 global, what `x.__class__` gives (str, int, Undefined, Markup,
 * LoopContext...: runtime/vm.c class_of): its types.def row is aux - TPL_FN_TYPE. It prints as
 * the class, compares, hashes and is `sameas` by that row; calling it is a located refusal. */
enum { TPL_FN_TYPE = 0xFE00 };
static inline bool tpl_is_pytype(tpl_value v) { return v.type == TPL_T_FUNC && !v.u.p && v.aux >= TPL_FN_TYPE; }

/* A Python special ("dunder") name: `__x__`, at least one character between the underscores. */
static inline bool tpl_is_dunder(const char *s, size_t n)
{
    return n >= 5 && s[0] == '_' && s[1] == '_' && s[n - 1] == '_' && s[n - 2] == '_';
}
static inline tpl_value tpl_v_undef(void) { tpl_value v = {0}; v.type = TPL_T_UNDEF; v.aux = TPL_UNDEF_PLAIN; return v; }
static inline tpl_value tpl_v_unset(void) { tpl_value v = {0}; v.type = TPL_T_UNSET; return v; }
static inline tpl_value tpl_v_none(void) { tpl_value v = {0}; v.type = TPL_T_NONE; return v; }
static inline tpl_value tpl_v_bool(bool b) { tpl_value v = {0}; v.type = TPL_T_BOOL; v.u.i = b; return v; }
static inline tpl_value tpl_v_int(int64_t i) { tpl_value v = {0}; v.type = TPL_T_INT; v.u.i = i; return v; }
static inline tpl_value tpl_v_float(double f) { tpl_value v = {0}; v.type = TPL_T_FLOAT; v.u.f = f; return v; }
static inline tpl_value tpl_v_str(const char *s, size_t n) { tpl_value v = {0}; v.type = TPL_T_STR; v.len = (uint32_t)n; v.u.s = s; return v; }
static inline tpl_value tpl_v_list(tpl_list *l) { tpl_value v = {0}; v.type = TPL_T_LIST; v.u.list = l; return v; }
/* A list value tagged as a Jinja2 lazy value (TPL_LAZY_*); a plain list/tuple for TPL_LAZY_NONE. */
static inline bool tpl_is_lazy(tpl_value v) { return v.type == TPL_T_LIST && v.aux != TPL_LAZY_NONE; }
/* An iterator (generator, reverse iterator): one Python prints as an address and has no len(). */
static inline bool tpl_is_iter(tpl_value v) { return v.type == TPL_T_LIST && v.aux >= TPL_LAZY_GENERATOR; }
/* range(start, stop, step) of a TPL_LAZY_RANGE value (stored past its items): three integer
 * values, each a TPL_T_INT or (past int64) a TPL_T_BIGINT. */
static inline const tpl_value *tpl_range_params(tpl_value v)
{
    return v.u.list->items + v.u.list->len;
}
/* A Ruby Enumerator (TPL_F_ENUM_RB). */
static inline bool tpl_is_enum_rb(tpl_value v) { return v.type == TPL_T_LIST && (v.flags & TPL_F_ENUM_RB); }
/* An Enumerator::ArithmeticSequence: a blockless step of a number, or of a Range that begins with one
 * (1.step(5, 2), (1..9).step(3)): inspect prints the call, == compares begin, end, step, exclude_end?. */
static inline bool tpl_is_aseq_rb(tpl_value v)
{
    if (!tpl_is_enum_rb(v)) return false;
    const tpl_value *x = v.u.list->items + v.u.list->len;
    if (!(x[1].len == 4 && memcmp(x[1].u.s, "step", 4) == 0)) return false;
    tpl_value r = x[0];
    if (r.type == TPL_T_LIST && (r.flags & TPL_F_RANGE_RB) && r.u.list->len == 3) r = r.u.list->items[0];
    return r.type == TPL_T_INT || r.type == TPL_T_FLOAT || r.type == TPL_T_BIGINT;
}
/* A Gem::Version (TPL_F_GEMV_RB). */
static inline bool tpl_is_gemv_rb(tpl_value v) { return v.type == TPL_T_STR && (v.flags & TPL_F_GEMV_RB) && (v.flags & TPL_F_CLASS_RB); }
/* A dict view (d.keys(), d.items(), d.values()): its items were made from the dict when it was
 * last read (stdlib/py/methods.c, tpl_vm_view_sync), the dict just past them, then a stamp (an int
 * value: the render's count of dict changes then, aux the dict's gen). Python's views are live:
 * what reads the items syncs the view first (tpl_vm_view_sync), what prints or compares it reads
 * the dict itself. */
static inline bool tpl_is_view(tpl_value v)
{
    return v.type == TPL_T_LIST && (v.flags & TPL_F_VIEW_DICT) && v.aux >= TPL_LAZY_DICT_ITEMS && v.aux <= TPL_LAZY_DICT_VALUES;
}
/* A view whose dict changed since its items were made (by the dict's gen alone: what the VM's
 * tpl_vm_view_sync also checks against the render's count of changes). */
static inline bool tpl_view_stale(tpl_value v)
{
    const tpl_list *l = v.u.list;
    return l->items[l->len].u.map->gen != l->items[l->len + 1].aux;
}
/* The dict of a view or reversed() iterator that knows it (TPL_F_VIEW_DICT), else NULL. */
static inline struct tpl_map *tpl_view_dict(tpl_value v)
{
    return v.type == TPL_T_LIST && (v.flags & TPL_F_VIEW_DICT) && v.aux ? v.u.list->items[v.u.list->len].u.map : NULL;
}
/* A range() held without its items (TPL_F_RANGE_BIG). */
static inline bool tpl_is_big_range(tpl_value v) { return v.type == TPL_T_LIST && (v.flags & TPL_F_RANGE_BIG); }
static inline bool tpl_has_big_range(const tpl_value *v, int n)
{
    for (int i = 0; i < n; i++)
        if (tpl_is_big_range(v[i])) return true;
    return false;
}
static inline tpl_value tpl_v_map(tpl_map *m) { tpl_value v = {0}; v.type = TPL_T_MAP; v.u.map = m; return v; }

/* Lists and maps allocated in an arena. Functions returning bool fail only on arena exhaustion. */
tpl_list *tpl_list_new(tpl_arena *a, uint32_t cap);
bool tpl_list_push(tpl_arena *a, tpl_list *l, tpl_value v);
tpl_map *tpl_map_new(tpl_arena *a, uint32_t cap);
/* Sets key to val (replacing in place, keeping the first insertion position). Comparing keys
 * charges a->fuel (a render's arena): when it runs out the key is added as new and *a->fuel is 0,
 * which the caller must check (tpl_vm_nomem reports the fuel error). */
bool tpl_map_set(tpl_arena *a, tpl_map *m, tpl_value key, tpl_value val);
/* Appends key (its tpl_hash_value h) -> val without looking key up: the caller knows it is not
 * in m (a host dict's distinct keys). False on arena exhaustion. */
bool tpl_map_append(tpl_arena *a, tpl_map *m, tpl_value key, uint64_t h, tpl_value val);
enum { TPL_MAP_LINEAR_MAX = 8 }; /* maps up to this size have no index: they are scanned linearly */
/* After m->e[0..len) were written directly (distinct keys, their hashes): builds the index a
 * map of that size has (none up to TPL_MAP_LINEAR_MAX entries). False on arena exhaustion. */
bool tpl_map_reindex(tpl_arena *a, tpl_map *m);
/* Looks a key up; NULL when absent. Keys compare with Python equality (1 == 1.0 == True). */
tpl_value *tpl_map_get(const tpl_map *m, tpl_value key);
/* tpl_map_get charging *fuel for comparing container keys (NULL: unmetered); when it runs out the
 * key is not found and *fuel is 0 (the caller ends the render: tpl_vm_nomem). */
tpl_value *tpl_map_get_metered(const tpl_map *m, tpl_value key, uint64_t *fuel);
/* Fast path for string keys with a precomputed tpl_hash_str hash. */
tpl_value *tpl_map_get_str(const tpl_map *m, const char *s, size_t n, uint64_t hash);
bool tpl_map_del(tpl_map *m, tpl_value key);

uint64_t tpl_hash_str(const char *s, size_t n);
/* Hash consistent with tpl_equal for hashable values (str, int, float, bool, none). */
uint64_t tpl_hash_value(tpl_value v);

/* Python `==`: numbers by value (True == 1), strings by bytes, containers element-wise. */
/* Order of an integer and a finite or infinite float, exactly as Python's float_richcompare and
 * Ruby's Integer#<=> compare them (no rounding of i to double: 2**53 + 1 > 2.0**53): -1 when
 * i < f, 0 equal, 1 greater. f must not be NaN (callers treat NaN as unordered first). */
int tpl_cmp_int_float(int64_t i, double f);
bool tpl_equal(tpl_value a, tpl_value b);
/* Ruby's eql? (the Hash key and Array#uniq/&/|/- test): tpl_equal without crossing types, so 1,
 * 1.0 and true differ; arrays and hashes element-wise by eql?. */
bool tpl_eql(tpl_value a, tpl_value b);
/* tpl_eql charging *fuel as tpl_equal_metered does: 1 eql, 0 not, -1 fuel exhausted, -2 too deep. */
int tpl_eql_metered(tpl_value a, tpl_value b, uint64_t *fuel);
/* tpl_equal charging one unit of *fuel per container element compared (tpl_fuel_charge): 1
 * equal, 0 not, -1 fuel exhausted, -2 containers nested more than TPL_NEST_MAX deep (Python's
 * RecursionError; tpl_equal and tpl_eql answer false there). Renders compare values through
 * tpl_vm_equal (vm.h). */
int tpl_equal_metered(tpl_value a, tpl_value b, uint64_t *fuel);
/* tpl_equal_metered as Python's PyObject_RichCompareBool compares a container's items (`x in xs`,
 * index(), count(), list < list, sort keys): with its identity shortcut, so a NaN equals the
 * same NaN (value.c same_nan). */
int tpl_item_equal_metered(tpl_value a, tpl_value b, uint64_t *fuel);
/* tpl_equal_metered (depth 0) or tpl_item_equal_metered (depth 1) in a strict render: -3 when an
 * item of a container meets a strict undefined (not an inline if's), which Jinja2 raises on. */
int tpl_equal_strict_metered(tpl_value a, tpl_value b, int depth, uint64_t *fuel);
/* How the equality below asks about host objects (TPL_T_HOST), which value.c cannot compare:
 * the VM passes its host-aware answers in (value.c does not call up into the VM, DESIGN.md §1).
 * eq: a == b where a or b is a host object (1 equal, 0 not, TPL_EQ_HOST_ERROR with the VM's
 * error set); find: the entry of map m whose key equals key, after m's hash lookup missed and
 * key is a host object or m has host keys (1 with *at set, 0 none, TPL_EQ_HOST_ERROR). */
enum { TPL_EQ_HOST_ERROR = -4 };
typedef struct tpl_eq_host {
    int (*eq)(void *ctx, tpl_value a, tpl_value b);
    int (*find)(void *ctx, const tpl_map *m, tpl_value key, uint32_t *at);
    void *ctx;
} tpl_eq_host;
/* tpl_equal_metered (depth 0: `==`) or tpl_item_equal_metered (depth 1: a container's items),
 * strict as tpl_equal_strict_metered when strict, asking host about host objects wherever they
 * are met (items of lists, values and keys of dicts): Python's list == list calls an item's
 * __eq__. TPL_EQ_HOST_ERROR when host did. host NULL: tpl's own equality (an object equals
 * only itself). */
int tpl_equal_host_metered(tpl_value a, tpl_value b, int depth, bool strict, uint64_t *fuel, const tpl_eq_host *host);
/* v is a host object (TPL_T_HOST) or a tuple holding one, at any depth: a dict key Python hashes
 * and compares by the host's rules (tpl hashes a host object by its identity). */
bool tpl_value_has_host(tpl_value v);
/* a and b are dict_keys or dict_items views (either kind) and every item of a is in b: Python's
 * subset test behind `<=` of two views (and `==` of two of equal size). 1 yes, 0 no (or not two
 * such views), -1 fuel exhausted, -2 too deep. */
int tpl_view_contained_metered(tpl_value a, tpl_value b, uint64_t *fuel);

/* n bytes of a and b are equal: short keys and tokens compare with a few loads, no libc call. */
static inline bool tpl_mem_eq(const char *a, const char *b, size_t n)
{
    if (n >= 8 && n <= 16) {
        uint64_t a0, b0, a1, b1;
        memcpy(&a0, a, 8); memcpy(&b0, b, 8); memcpy(&a1, a + n - 8, 8); memcpy(&b1, b + n - 8, 8);
        return ((a0 ^ b0) | (a1 ^ b1)) == 0;
    }
    if (n >= 4 && n < 8) {
        uint32_t a0, b0, a1, b1;
        memcpy(&a0, a, 4); memcpy(&b0, b, 4); memcpy(&a1, a + n - 4, 4); memcpy(&b1, b + n - 4, 4);
        return ((a0 ^ b0) | (a1 ^ b1)) == 0;
    }
    if (n < 4) {
        for (size_t i = 0; i < n; i++)
            if (a[i] != b[i]) return false;
        return true;
    }
    return memcmp(a, b, n) == 0;
}
/* Substring search, linear in hn + nn however hostile the bytes (issue 13: every find, index,
 * count, replace, split, partition and ERB include?/sub/gsub/scan/split goes through these).
 * tpl_memmem: the first occurrence of n in h, or NULL; the empty needle is found at h (glibc's
 * memmem: the two-way algorithm). tpl_memrmem: the last occurrence, or NULL; the empty needle is
 * found at h + hn (short needles scan backward directly, long ones run KMP over the reversed
 * strings with a table from malloc; a failed malloc falls back to the direct scan). */
const char *tpl_memmem(const char *h, size_t hn, const char *n, size_t nn);
const char *tpl_memrmem(const char *h, size_t hn, const char *n, size_t nn);
/* Whether needle occurs in haystack (bytes; the empty needle always does): Python's `in` on str. */
static inline bool tpl_bytes_contain(const char *h, size_t hn, const char *n, size_t nn)
{
    if (nn == 0) return true;
    if (nn > hn) return false;
    if (hn <= 64) { /* short: compared in place (memmem's setup costs more than the search) */
        for (size_t i = 0; i + nn <= hn; i++)
            if (h[i] == n[0] && tpl_mem_eq(h + i, n, nn)) return true;
        return false;
    }
    return memmem(h, hn, n, nn) != NULL;
}
/* tpl_map_get_str with the small-map (linear, unindexed) scan inlined: the VM's key lookups. */
static inline tpl_value *tpl_map_find_str(const tpl_map *m, const char *s, size_t n, uint64_t hash)
{
    if (m->idx_cap) return tpl_map_get_str(m, s, n, hash);
    if (!m->len) return NULL; /* e may be NULL */
    for (tpl_entry *e = m->e, *end = m->e + m->len; e < end; e++)
        if (e->hash == hash && e->key.type == TPL_T_STR && e->key.len == n && tpl_mem_eq(e->key.u.s, s, n))
            return &e->val;
    return NULL;
}
/* tpl_map_get_str for a big (indexed) map, inlined: the VM's name lookups in the state. */
static inline tpl_value *tpl_map_probe_str(const tpl_map *m, const char *s, size_t n, uint64_t hash)
{
    if (!m->idx_cap) return tpl_map_find_str(m, s, n, hash);
    uint32_t mask = m->idx_cap - 1;
    for (uint32_t i = (uint32_t)hash & mask;; i = (i + 1) & mask) {
        uint32_t slot = m->idx[i];
        if (!slot) return NULL;
        tpl_entry *e = &m->e[slot - 1];
        if (e->hash == hash && e->key.type == TPL_T_STR && e->key.len == n && tpl_mem_eq(e->key.u.s, s, n))
            return &e->val;
    }
}
/* tpl_map_probe_str in a Ruby Hash (m->eql): the String key of those bytes (sym 0) or the Symbol
 * (sym TPL_F_SYMBOL), never the other (Ruby's eql?: {k: 1}["k"] is nil). */
static inline tpl_value *tpl_map_probe_rb(const tpl_map *m, const char *s, size_t n, uint64_t hash, unsigned sym)
{
    if (!m->idx_cap) {
        for (uint32_t i = 0; i < m->len; i++) {
            tpl_entry *e = &m->e[i];
            if (e->hash == hash && e->key.type == TPL_T_STR && (e->key.flags & TPL_F_SYMBOL) == sym && e->key.len == n &&
                tpl_mem_eq(e->key.u.s, s, n))
                return &e->val;
        }
        return NULL;
    }
    uint32_t mask = m->idx_cap - 1;
    for (uint32_t i = (uint32_t)hash & mask;; i = (i + 1) & mask) {
        uint32_t slot = m->idx[i];
        if (!slot) return NULL;
        tpl_entry *e = &m->e[slot - 1];
        if (e->hash == hash && e->key.type == TPL_T_STR && (e->key.flags & TPL_F_SYMBOL) == sym && e->key.len == n &&
            tpl_mem_eq(e->key.u.s, s, n))
            return &e->val;
    }
}
static inline bool tpl_is_str(tpl_value v) { return v.type == TPL_T_STR; }
static inline bool tpl_is_num(tpl_value v) { return v.type == TPL_T_INT || v.type == TPL_T_FLOAT || v.type == TPL_T_BOOL; }

/* ------------------------------------------------------------------ string builder */

/* A growable byte buffer in an arena (or on the heap when arena is NULL). */
typedef struct tpl_sb {
    tpl_arena *arena;
    char *p;
    size_t len, cap;
    bool failed;       /* allocation failed; contents are truncated */
    const char *address; /* Python printing: what was written that Python prints with its memory
                          * address ("function", "generator"; runtime/print.c), else NULL */
} tpl_sb;

/* tpl_sb.address marker (with failed set) of a walk over a value nested deeper than
 * TPL_NEST_MAX containers (runtime/print.c): Python raises RecursionError there. */
extern const char tpl_nest_limit[];
/* Marks b with what Python would print with its memory address (or cannot print: an int past
 * 4,300 digits, tpl_big_str_limit): the builder fails, so nothing more is written and no caller
 * can print the partial text; tpl_vm_sb_error reports the first mark. */
static inline void tpl_sb_mark(tpl_sb *b, const char *what)
{
    if (!b->address) b->address = what;
    b->failed = true;
}
/* The deepest nesting of containers tpl prints, serialises or compares (tpl_equal_metered): 900,
 * below Python's recursion limit of 1000 less the frames of a render at a template's top level
 * (Jinja2 3.1 on CPython 3.11 prints and compares 993 levels, tojson 987): deeper is
 * RecursionError, never a different value. */
enum { TPL_NEST_MAX = 900 };

void tpl_sb_init(tpl_sb *b, tpl_arena *arena);
bool tpl_sb_reserve(tpl_sb *b, size_t extra);
void tpl_sb_put(tpl_sb *b, const char *s, size_t n);
void tpl_sb_putc(tpl_sb *b, char c);
void tpl_sb_puts(tpl_sb *b, const char *s);
void tpl_sb_printf(tpl_sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends the UTF-8 encoding of code point cp. */
void tpl_sb_put_cp(tpl_sb *b, uint32_t cp);
/* Appends code point cp n times (nothing when n <= 0): padding, as Python's format specs, str.ljust
 * and printf-style % pad. The room is reserved at once, so a width past the memory limit fails
 * (b->failed) before any copy. */
void tpl_sb_put_fill(tpl_sb *b, uint32_t cp, int64_t n);
/* The built string as a value (points into the builder's storage). */
static inline tpl_value tpl_sb_value(const tpl_sb *b) { return tpl_v_str(b->p ? b->p : "", b->len); }
/* Frees heap storage (arena == NULL only). */
void tpl_sb_free(tpl_sb *b);
/* A walk that builds a string charges n units of fuel before it visits an element: the fuel of
 * the builder's arena (tpl_fuel_charge). False when the builder has failed (memory or output
 * limit, or now the fuel): the walk stops at once instead of walking on. */
static inline bool tpl_sb_charge(tpl_sb *b, uint64_t n)
{
    if (b->failed) return false;
    if (b->arena && !tpl_fuel_charge(b->arena->fuel, n)) { b->failed = true; return false; }
    return true;
}

#endif
