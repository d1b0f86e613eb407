/* tpl._tpl: the CPython binding of libtpl (issue 17), written against include/tpl.h only.
 *
 * Python values cross natively (tpl_val constructors): str, int (64-bit), float, bool, None,
 * dict (insertion order), list, tuple; Markup-like strings (an __html__ method) are markup-safe.
 * Any other object is a host object (tpl_host_class below) that the VM reads lazily: getattr,
 * items, iteration, len, calls with args/kwargs, truthiness, str/repr. Only the top-level names
 * in the program's reads-set are converted, so a render touches only what it can read.
 *
 * Strings are not copied: the VM reads each str's own UTF-8 buffer (PyUnicode_AsUTF8AndSize,
 * TPL_VAL_BORROW | TPL_VAL_UTF8_VALID), and the render holds a reference to every str it
 * borrows until it ends — except a render that keeps the GIL and can run no Python code, whose
 * caller's mapping keeps them (render: nokeep).
 *
 * A render context remembers the plain dicts, lists and tuples it converted as state values and
 * reuses their tpl values while CPython says they did not change (the converted-value cache,
 * below): the references of those values are the cache's then, not the render's.
 *
 * The GIL is released while the VM runs and re-acquired in each callback (the render's saved
 * thread state), except for a render likely to be short (its render context's last output
 * below GIL_OUT bytes), which keeps it: releasing and re-taking it costs more than such a render. A Program is immutable and renders from many threads; each render takes a
 * `slot` (a render context with its binding state) from the Program's pool (guarded by the GIL)
 * or makes one. A Program's default render settings (facts, remembers, call, lang, catalogs,
 * tr_keys, limits: Program.configure) are applied to a pooled context once, not on every
 * render. A Python exception raised in a callback ends the render and is re-raised as itself,
 * with a note naming the template location.
 *
 * Template errors are not raised here: render/compile/load return an error tuple
 * (status, message, file, line, column, source_line, formatted) that tpl/__init__.py turns into
 * its exception classes (so this module keeps no global state). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "tpl.h"

#define MAX_DEPTH 500   /* nesting of dicts/lists converted from Python */
#define POOL_MAX 8      /* idle render contexts kept per Program */

#define CHUNK 64        /* host-object blocks per allocation */
#define KEYS 256        /* str keys remembered per render context (a power of two) */
#define CACHE 32        /* converted state values remembered per render context (a power of two) */
#define GIL_OUT 16384   /* a render context whose last output was shorter keeps the GIL (render) */
#define SPARE 4096      /* state-memory units (maps, lists, their entries) kept before a reset */
#define SMALL_DICT 8    /* a dict of str values of up to this many entries is built in one call */
_Static_assert((SMALL_DICT & (SMALL_DICT - 1)) == 0, "SMALL_DICT: a power of two (str_dicts_val's key slots)");

/* The converted-value cache (below) needs CPython's dict version tag (ma_version_tag: a new
 * value from a global counter on every change of a dict), public and not deprecated up to 3.11. */
#if PY_VERSION_HEX < 0x030C0000
#define HAVE_CACHE 1
#define DICT_VERSION(d) (((PyDictObject *)(d))->ma_version_tag)
#else
#define HAVE_CACHE 0
#define DICT_VERSION(d) ((uint64_t)0)
#endif

/* Render settings (Program.configure, or one render's options). Every object owned or NULL. */
typedef struct settings {
    PyObject *facts;        /* tuple of str */
    PyObject *remembers;    /* callable, or a list/tuple/set/frozenset of str (remembers as data) */
    PyObject *call;         /* (channel, medium, claimed), each str or None */
    PyObject *lang;         /* str */
    PyObject *catalogs;     /* tuple of JSON str */
    PyObject *tr_keys;      /* tuple of str */
    PyObject *markup;       /* class: markup-safe strings passed to Python become markup(s) */
    PyObject *undefined;    /* class: undefined values passed to Python become undefined(name=...) */
    PyObject *funcs;        /* tuple of (name, kind, callable): host filters/tests/globals */
    tpl_limits lim;
    bool has_lim;
} settings;

struct render_ctx;

/* A str of remembers given as data: an owned reference and its UTF-8 (kept by the str). */
typedef struct mem_item {
    PyObject *o;
    const char *u8;
    size_t len;
    uint64_t hash;
} mem_item;
#define MEM_LINEAR 16   /* remembers data of up to this many strs is scanned, not hashed */

/* A host object's block: the Python object (borrowed: a reference is in its render's keep
 * array) and the render it belongs to. */
typedef struct pyobj {
    PyObject *o;
    struct render_ctx *c;
    unsigned numeric;   /* TPL_HOST_NUMBER... (py_type_of): found while the GIL is held */
    tpl_val hv;         /* with TPL_HOST_ITERATOR: its host value (host_val) */
    uint64_t cost;      /* with TPL_HOST_ITERATOR: the cost of the items taken so far (iter_next) */
    Py_ssize_t taken;   /* and their count */
} pyobj;

typedef struct chunk {
    struct chunk *next;
    pyobj o[CHUNK];
} chunk;

/* A str key seen by a render context: its UTF-8 and tpl_val_key_hash, so that the keys of the
 * dicts converted render after render (a chat's "role" and "content") are hashed once, not on
 * every render. k is an owned reference (so its address is not reused by another str while it
 * is here); an entry replaced during a render moves that reference to the render's keep array,
 * as the render may still borrow the UTF-8. */
typedef struct key {
    PyObject *k;            /* an exact str, or NULL */
    const char *u8;         /* its UTF-8 (kept by the str) */
    uint64_t hash;
    uint32_t len;
} key;

/* A slot of a Program's table of its reads-set by name (read_find): the name's bytes as two
 * words (key_words: for a name of up to 16 bytes they are all its bytes), its length and its
 * index + 1 (0: an empty slot). */
typedef struct rkey {
    uint64_t a, b;
    uint32_t len, idx1;
} rkey;

/* One object a cached value depends on, an owned reference: a dict with its version tag, a list
 * with LIST_DEP | its length (its items follow, tag 0, compared by identity), a tuple with
 * TUPLE_DEP (immutable: only owned). */
typedef struct dep {
    PyObject *o;
    uint64_t tag;
} dep;
#define LIST_DEP (UINT64_C(1) << 63)
#define TUPLE_DEP (UINT64_C(1) << 62)

/* A state value converted by an earlier render on the same context: a dict, list or tuple whose
 * every container is an exact dict/list/tuple and whose every other item an exact str, int,
 * float, bool or None (no host object, no str subclass). It is reused while every dict in it
 * has the version it had and every list the same items (deps); it owns those containers (so no
 * other object takes their addresses) and the strs whose UTF-8 its value borrows. Its value
 * lives in the render context's state memory, which is not dropped between renders while the
 * cache holds values (see cache_clear). */
typedef struct centry {
    PyObject *o;            /* the container (deps[0].o), NULL: an empty entry */
    tpl_val val;
    dep *deps;
    size_t ndeps;
    PyObject **strs;
    size_t nstrs;
    size_t units;           /* the state memory its value took, in units (see built) */
    uint32_t uses;          /* the state's entry: the entries of its values (they outlive it) */
} centry;

/* Deps and strs being recorded (owned references), growable. */
typedef struct refs {
    dep *d;
    size_t nd, capd;
    PyObject **s;
    size_t ns, caps;
} refs;

/* A render context with its binding state (a pool entry): reachable from the callbacks through
 * each host object's block and the remembers data pointer, so its address is stable. */
typedef struct render_ctx {
    tpl_render *r;
    long gen;               /* the Program's settings generation applied (-1: none, or dirty) */
    long lim_gen;           /* made under that generation's limits (-1: not poolable) */
    uint64_t max_iter_bytes; /* the most bytes an iterable is drained to (its limits' max_memory:
                              * item_cost) */
    uint64_t max_iter_items; /* and the most items (its limits' fuel: ITEM_FUEL each) */
    PyThreadState *ts;      /* the rendering thread's state while the GIL is released */
    unsigned long run_tid;  /* the thread running the render (lookup's check) */
    bool gil;               /* this render keeps the GIL (a short one: GIL_OUT); callbacks then
                             * run without re-taking it */
    bool nokeep;            /* this render's state is converted without holding the strs it
                             * borrows: no Python code can run until the render ends (see
                             * render), so the caller's mapping keeps them alive */
    bool impure;            /* this render's state holds an object whose methods are Python's */
    bool nokeep_off;        /* set by a conversion that met what could run Python code: the state
                             * is converted again, holding its strs */
    size_t last_out;        /* the length of this context's last output (SIZE_MAX: none yet) */
    bool out_ascii;         /* and whether it was ASCII (output_str then tries the one-pass copy) */
    bool fastdict;          /* dict_entries reads this interpreter's dicts (checked when c was made) */
    PyObject **keep;        /* owned references held until the render ends */
    Py_ssize_t nkeep, capkeep;
    chunk *chunks, *cur;    /* host-object blocks, reused render after render */
    int used;
    PyObject *remembers;    /* owned: the callable remembers() asks, or its data (mem), or NULL */
    bool rem_data;          /* remembers is data: answered in C from mem, without the GIL */
    bool mem_ok;            /* mem is what remembers held when it was last read (mem_sync) */
    struct mem_item *mem;   /* its strs (owned references) with their UTF-8 */
    Py_ssize_t nmem, capmem;
    uint32_t *mem_tab;      /* for more than MEM_LINEAR strs: indexes + 1 by hash, or NULL */
    uint32_t mem_mask;
    PyObject *markup, *undefined; /* owned or NULL: what markup and undefined values become */
    PyObject *dispatch;     /* borrowed during a render or NULL: a Python callable the render calls
                             * (not one of tpl.jinja2's own) is called as dispatch(f, args, kwargs)
                             * (tpl.jinja2: a module's macros called from another thread run their
                             * callables in the calling thread, as Jinja2's) */
    bool dispatching;       /* the render waits in dispatch (lookup may come from another thread) */
    PyObject *calls;        /* owned or NULL: this render's handle for the template callables it
                             * handed Python (TemplateCallable; its context c while it runs) */
    int cb_depth;           /* callbacks running (gil_in .. gil_out) */
    unsigned long cb_tid;   /* the thread of the latest */
    bool call_failed;       /* a TemplateCallable's call failed: the render ends with its error */
    PyObject *watch;        /* owned or NULL: while watch_on (converting a Python callable's
                             * arguments), the list (plain_from_val: made at the first) of (list or
                             * dict made, snapshot of its items) that py_call checks after the call
                             * (watch_changed) */
    bool watch_on;
    bool no_reuse;          /* building a fresh copy to compare with a kept one (kept_reuse) */
    PyObject *memo;         /* owned or NULL: while watch_on, the Python list or dict made for each
                             * template list or dict (key: the tpl_val's bytes), so that one
                             * converted twice in a call (f(l, l), f([l, l])) is one object, as
                             * Jinja2's (`a is b`) */
    PyObject *kept;         /* owned or NULL: the render's watch entries of earlier calls whose
                             * list or dict Python kept (a reference besides ours), and the lists
                             * and dicts of callables' results that Python holds (track): checked
                             * after every later call, as a callable may change it then (issue 17) */
    PyObject *tracked;      /* owned or NULL: the entries of callables' results (track), newest last */
    uint64_t seen_changes;  /* tpl_render_changes when kept_sync last looked */
    int track_left;         /* track: the entries a result may still add (TRACKED_MAX at each) */
    bool raw;               /* converting the arguments of one of tpl.jinja2's own functions (a
                             * function with _tpl_raw set): template-only values become None */
    PyObject *funcs;        /* owned or NULL: settings.funcs, bound as host functions */
    tpl_host_func *hfuncs;  /* its table (names borrowed from funcs), and the objects */
    tpl_host_object *hobjs;
    pyobj *hblocks;
    PyObject *loader;       /* borrowed from the Program during a render, or NULL */
    PyObject *loader_exc;   /* owned or NULL: what the loader raised during this render */
    PyObject *write;        /* borrowed during a streaming render (_render_stream), or NULL */
    unsigned char wtail[4]; /* the bytes of a UTF-8 sequence the last piece cut (wtail_n of them) */
    int wtail_n;
    key keys[KEYS];         /* direct-mapped by the str's address */
    key ckeys[KEYS];        /* hashes by the str's characters (CPython's hash): key_miss */
    tpl_str_entry *ents;    /* scratch stacks of dict_val / seq_val (owned) */
    size_t nents, capents;
    tpl_val *items;
    size_t nitems, capitems;
    tpl_str_str *ss;        /* scratch of str_dicts_val (owned): the entries of a list's dicts */
    size_t capss;
    uint32_t *cnt;          /* and their counts */
    size_t capcnt;
    key lastk[SMALL_DICT];  /* str_dicts_val: the key entries it last looked up, by slot (k owned):
                             * json.loads makes new key strs for every context, equal to these */
    int depth;
    PyObject *stack[MAX_DEPTH]; /* containers being converted (cycle check) */
    const char *what;       /* what is being converted, for its errors (NULL: the render state) */
    centry cache[CACHE];    /* direct-mapped by the container's address */
    uint32_t filled, hit, prev; /* bit masks of the entries: in use; used by this render, the last */
    bool rec, rec_ok;       /* recording the deps of a value being converted for the cache; cacheable */
    refs rr;                /* the deps and strs recorded for a value being cached */
    centry top;             /* the last state: for the same dict, unchanged, the same map */
    refs tr;                /* the deps and strs recorded for the state being built */
    uint32_t tuses;         /* and the entries of its values */
    bool tbroken;           /* one of them was replaced while it was built */
    bool bypass;            /* this render converts without recording (see cached_val) */
    unsigned streak;        /* renders in a row that found nothing in the cache */
    unsigned nrender;
    bool found;             /* this render found a value in the cache */
    size_t built, live;     /* state-memory units built since the state was dropped, of them cached */
    bool has_globals;       /* this render set globals (slot_put resets them) */
    bool has_empty;         /* empty: an empty map in the state memory (the state between renders) */
    tpl_val empty;
    struct sdep *sd;        /* the render arguments' lists and dicts as the render converted them, */
    size_t nsd, capsd;      /* checked after each Python call (state_snap, state_moved) */
    PyObject **si;          /* their items recorded (borrowed: the keep array holds them) */
    size_t nsi, capsi;
} render_ctx;

typedef struct {
    PyObject_HEAD
    tpl_program *p;
    PyObject *reads;        /* tuple of str: the reads-set (top-level names converted) */
    const char **read_u8;   /* their UTF-8 (owned by the interned strs of reads), lengths and */
    size_t *read_len;       /* tpl_val_key_hash */
    uint64_t *read_hash;
    rkey *read_tab;         /* the reads by name: a state key is found by its bytes, not by a
                             * dict lookup (json.loads makes new key strs for every state) */
    uint32_t read_mask;     /* its size - 1 */
    settings defaults;      /* Program.configure */
    long gen;               /* bumped by every configure */
    PyObject *loader;       /* owned or NULL: loader(name) -> str | None for the template names the
                             * program computes when it runs (tpl_program_needs_loader) */
    bool all_state;         /* such a program: a template it loads may read any state variable,
                             * so the whole state crosses, not only the reads-set (reads_ready) */
    render_ctx *pool[POOL_MAX];
    int npool;
} ProgramObject;

static int to_val(render_ctx *c, PyObject *o, tpl_val *out);
static int check(tpl_status st);
static void cache_clear(render_ctx *c);
static void cache_age(render_ctx *c);
static int py_remembers(void *data, const char *words, size_t len);

/* ------------------------------------------------------------------ errors */

/* (status, message, file, line, column, source_line, formatted, exception): exception is the
 * Python exception Jinja2 raises for the error's kind (tpl_error_exception: "TypeError",
 * "ZeroDivisionError", ...; "" for tpl's own errors). */
static PyObject *error_tuple(const tpl_error *e)
{
    char *f = tpl_error_format(e);
    PyObject *t = Py_BuildValue("(isziizss)", (int)e->status, e->message ? e->message : "", e->file,
                                (int)e->line, (int)e->column, e->source_line, f ? f : "",
                                tpl_error_exception(e->kind, TPL_SYNTAX_JINJA));
    free(f);
    return t;
}

/* A failing callback: the pending Python exception becomes the render's payload (owned). */
static void fail_with_exception(render_ctx *c)
{
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    PyErr_NormalizeException(&t, &v, &tb);
    if (tb && v) PyException_SetTraceback(v, tb);
    char msg[200] = "error";
    if (v) {
        PyObject *s = PyObject_Str(v);
        const char *u = s ? PyUnicode_AsUTF8(s) : NULL;
        if (!u) PyErr_Clear();
        snprintf(msg, sizeof msg, "%s: %s", t ? ((PyTypeObject *)t)->tp_name : "Exception", u ? u : "");
        Py_XDECREF(s);
    }
    Py_XDECREF(t);
    Py_XDECREF(tb);
    if (c->call_failed) { /* (the render's error is the template callable's, or its callback's payload) */
        Py_XDECREF(v);
        return;
    }
    PyObject *old = tpl_render_error_payload(c->r);
    Py_XDECREF(old);
    tpl_host_error(c->r, msg, v); /* v's reference moves to the payload */
}

/* ------------------------------------------------------------------ host objects */

static const tpl_host_class py_class;

/* A callback takes the GIL back (the render released it) and gives it up again. */
static inline void gil_in(render_ctx *c)
{
    if (!c->gil) PyEval_RestoreThread(c->ts);
    if (c->cb_depth++ == 0) c->cb_tid = PyThread_get_thread_ident();
}
static inline void gil_out(render_ctx *c)
{
    c->cb_depth--;
    if (!c->gil) c->ts = PyEval_SaveThread();
}

/* A callback that runs Python code which may read a list or dict Python holds from the render
 * (kept_sync, below) first makes it show what the template did to it: returns from the callback
 * with the failure when that fails. */
static int kept_sync(struct render_ctx *c);
#define SYNC_IN(h)                                                                                   \
    do {                                                                                             \
        if (((h)->c->kept || (h)->c->tracked) && kept_sync((h)->c) < 0) {                            \
            fail_with_exception((h)->c);                                                             \
            gil_out((h)->c);                                                                         \
            return TPL_HOST_ERROR;                                                                   \
        }                                                                                            \
    } while (0)

/* Room for one more reference in c's keep array. */
static int keep_room(render_ctx *c)
{
    if (c->nkeep == c->capkeep) {
        Py_ssize_t cap = c->capkeep ? c->capkeep * 2 : 64;
        PyObject **k = PyMem_Realloc(c->keep, (size_t)cap * sizeof *k);
        if (!k) { PyErr_NoMemory(); return -1; }
        c->keep = k;
        c->capkeep = cap;
    }
    return 0;
}

/* Holds a new reference to o until the render ends. */
static inline int keep(render_ctx *c, PyObject *o)
{
    if (c->nkeep == c->capkeep && keep_room(c) < 0) return -1;
    Py_INCREF(o);
    c->keep[c->nkeep++] = o;
    return 0;
}

/* Records o (a new reference) as a dep in f. */
static int refs_dep(refs *f, PyObject *o, uint64_t tag)
{
    if (f->nd == f->capd) {
        size_t cap = f->capd ? f->capd * 2 : 64;
        dep *d = PyMem_Realloc(f->d, cap * sizeof *d);
        if (!d) { PyErr_NoMemory(); return -1; }
        f->d = d;
        f->capd = cap;
    }
    Py_INCREF(o);
    f->d[f->nd++] = (dep){ o, tag };
    return 0;
}

/* Records a new reference to the str s in f. */
static int refs_str(refs *f, PyObject *s)
{
    if (f->ns == f->caps) {
        size_t cap = f->caps ? f->caps * 2 : 64;
        PyObject **d = PyMem_Realloc(f->s, cap * sizeof *d);
        if (!d) { PyErr_NoMemory(); return -1; }
        f->s = d;
        f->caps = cap;
    }
    Py_INCREF(s);
    f->s[f->ns++] = s;
    return 0;
}

static inline int rec_dep(render_ctx *c, PyObject *o, uint64_t tag) { return refs_dep(&c->rr, o, tag); }

/* Holds a new reference to s (a str whose UTF-8 a value borrows): for the value being cached
 * when recording, else until the render ends. */
static inline __attribute__((always_inline)) int hold_str(render_ctx *c, PyObject *s)
{
    return c->rec ? refs_str(&c->rr, s) : c->nokeep ? 0 : keep(c, s);
}

/* A conversion without holding strs (c->nokeep) met an object whose conversion may run Python
 * code (a subclass, a host object, an Undefined: its methods are called, or later its
 * callbacks), which could free a str converted before: it fails without an exception set, and
 * state_val converts the state again, holding every str. */
static int nokeep_stop(render_ctx *c)
{
    c->nokeep = false;
    c->nokeep_off = true;
    return -1;
}

/* The usual state string: an exact str, compact ASCII (its characters are its UTF-8). */
#define ASCII_STR(o) (Py_TYPE(o) == &PyUnicode_Type && PyUnicode_IS_COMPACT_ASCII(o))

/* An ASCII_STR, borrowed, inline (str_val without its dispatch). */
static inline __attribute__((always_inline)) int ascii_val(render_ctx *c, PyObject *s, tpl_val *out)
{
    if (hold_str(c, s) < 0) return -1;
    return check(tpl_val_str_borrow((const char *)PyUnicode_DATA(s), (size_t)PyUnicode_GET_LENGTH(s), out));
}

/* The key entry of k (an exact str): remembered, or made now in k's slot. NULL with an
 * exception when k has no UTF-8 (lone surrogates) or memory runs out. */
static key *key_miss(render_ctx *c, key *e, PyObject *k)
{
    Py_ssize_t n;
    const char *u;
    if (PyUnicode_IS_COMPACT_ASCII(k)) {
        u = (const char *)PyUnicode_DATA(k);
        n = PyUnicode_GET_LENGTH(k);
    } else if (!(u = PyUnicode_AsUTF8AndSize(k, &n))) {
        return NULL;
    }
    if ((size_t)n > UINT32_MAX - 1) {
        PyErr_SetString(PyExc_ValueError, "tpl: a dict key of 4 GiB or more");
        return NULL;
    }
    if (e->k) { /* the old key's reference moves to the render (its UTF-8 may be borrowed) */
        if (keep_room(c) < 0) return NULL;
        c->keep[c->nkeep++] = e->k;
    }
    /* the hash of a str with the same characters, when c->ckeys has one (json.loads makes new
     * key strs for every context: "name" again), else computed and remembered there (by
     * CPython's hash of the str, which a dict's key has; ckeys lends no UTF-8: its strs can go) */
    Py_hash_t ph = ((PyASCIIObject *)k)->hash;
    key *ck = ph != -1 ? &c->ckeys[(size_t)ph & (KEYS - 1)] : NULL;
    uint64_t hash;
    if (ck && ck->k && ck->len == (uint32_t)n && ((PyASCIIObject *)ck->k)->hash == ph && !memcmp(ck->u8, u, (size_t)n)) {
        hash = ck->hash;
    } else {
        hash = tpl_val_key_hash(u, (size_t)n);
        if (ck) {
            Py_XDECREF(ck->k);
            Py_INCREF(k);
            *ck = (key){ k, u, hash, (uint32_t)n };
        }
    }
    Py_INCREF(k);
    e->k = k;
    e->u8 = u;
    e->len = (uint32_t)n;
    e->hash = hash;
    return e;
}

static inline key *key_of(render_ctx *c, PyObject *k)
{
    key *e = &c->keys[((uintptr_t)k * 0x9E3779B97F4A7C15u) >> 56 & (KEYS - 1)];
    return e->k == k ? e : key_miss(c, e, k);
}

/* map[k] = v for an exact str k, distinct from the keys already in map (a dict's). The entry
 * is copied before v is converted: converting can replace it. */
static int add_str_key(render_ctx *c, tpl_val map, PyObject *k, PyObject *v)
{
    key *e = key_of(c, k);
    if (!e) return -1;
    key ke = *e;
    tpl_val x;
    if ((c->rec && hold_str(c, k) < 0) || to_val(c, v, &x) < 0) return -1;
    return check(tpl_val_map_add_str(c->r, map, ke.u8, ke.len, ke.hash, TPL_VAL_BORROW | TPL_VAL_UTF8_VALID, x));
}

static pyobj *new_block(render_ctx *c)
{
    if (!c->cur || c->used == CHUNK) {
        chunk *next = c->cur ? c->cur->next : c->chunks;
        if (!next) {
            if (!(next = PyMem_Malloc(sizeof *next))) { PyErr_NoMemory(); return NULL; }
            next->next = NULL;
            if (c->cur) c->cur->next = next;
            else c->chunks = next;
        }
        c->cur = next;
        c->used = 0;
    }
    return &c->cur->o[c->used++];
}

/* o's numeric kinds for Jinja's tests number, integer and float (tpl_host_class.type_of): an int
 * or float subclass, complex, and what else is a numbers.Number (Decimal, Fraction: asked only
 * of a type with __float__ or __index__, so that other objects cost no isinstance call). */
static unsigned numeric_of(PyObject *o)
{
    if (PyLong_Check(o)) return TPL_HOST_NUMBER | TPL_HOST_INTEGER;
    if (PyFloat_Check(o)) return TPL_HOST_NUMBER | TPL_HOST_FLOAT;
    if (PyComplex_Check(o)) return TPL_HOST_NUMBER;
    PyNumberMethods *nb = Py_TYPE(o)->tp_as_number;
    if (!nb || (!nb->nb_float && !nb->nb_index) || PyType_Check(o)) return 0;
    PyObject *numbers = PyImport_ImportModule("numbers"), *number = numbers ? PyObject_GetAttrString(numbers, "Number") : NULL;
    int is = number ? PyObject_IsInstance(o, number) : -1;
    Py_XDECREF(numbers);
    Py_XDECREF(number);
    if (is < 0) PyErr_Clear();
    return is > 0 ? TPL_HOST_NUMBER : 0;
}

/* Whether o is a one-shot iterator (a generator, map(), zip(), iter(list)): iter(o) is o. */
static bool one_shot(PyObject *o)
{
    return Py_TYPE(o)->tp_iter == PyObject_SelfIter && PyIter_Check(o);
}

static int host_val(render_ctx *c, PyObject *o, tpl_val *out)
{
    bool it = c->undefined && one_shot(o);
    if (it) /* tpl.jinja2: one host value per iterator in a render (TPL_HOST_ITERATOR: the VM takes its
             * items from that value's iterator, so what one use took is gone for the next, as in
             * Python), wherever it is read from (the state, an attribute, a callable's result) */
        for (chunk *k = c->cur ? c->chunks : NULL; k; k = k->next) {
            for (int i = 0, n = k == c->cur ? c->used : CHUNK; i < n; i++)
                if (k->o[i].o == o && (k->o[i].numeric & TPL_HOST_ITERATOR)) { *out = k->o[i].hv; return 0; }
            if (k == c->cur) break;
        }
    pyobj *h = new_block(c);
    if (!h || keep(c, o) < 0) return -1;
    c->rec_ok = false; /* (a host object belongs to this render) */
    c->built++;
    h->o = o;
    h->c = c;
    h->numeric = numeric_of(o) | (PyCallable_Check(o) ? TPL_HOST_CALLABLE : 0) | (it ? TPL_HOST_ITERATOR : 0);
    if (tpl_val_host(c->r, &py_class, h, out) != TPL_OK) { PyErr_NoMemory(); return -1; }
    h->hv = *out;
    h->cost = 0;
    h->taken = 0;
    return 0;
}

static int check(tpl_status st)
{
    if (st == TPL_OK) return 0;
    if (st == TPL_ERR_LIMIT) PyErr_SetString(PyExc_MemoryError, "tpl: render memory limit reached");
    else if (st == TPL_ERR_VALUE) PyErr_SetString(PyExc_ValueError, "tpl: invalid string");
    else if (st == TPL_ERR_TYPE)
        PyErr_SetString(PyExc_TypeError, "tpl: dict keys must be str, int, float, bool, None or a tuple of them");
    else PyErr_NoMemory();
    return -1;
}

/* A str, borrowed: the VM reads its UTF-8 buffer, which CPython keeps with the str (valid
 * UTF-8: a str with lone surrogates has none and is a UnicodeEncodeError here). */
#define LATIN1_COPY 256 /* a Latin-1 str of up to this many characters is encoded here (narrow_val) */

/* A short compact str of Latin-1 (1-byte kind, not ASCII: a name with an accent) or UCS-2
 * characters (an en dash, a curly quote), up to LATIN1_COPY, as a string value copied into the
 * render's memory, encoded to UTF-8 here: CPython's UTF-8 for it (PyUnicode_AsUTF8AndSize) is made
 * by its encoder into a new buffer (malloc'd) on every fresh str, which costs several times this
 * loop and a copy. 1 when it holds a surrogate (no UTF-8: PyUnicode_AsUTF8AndSize's error). One
 * loop for both kinds, inlined into str_val with kind a constant (a copy per kind, as fast as two
 * written out: a 1-byte character is never 0x800 or more, nor a surrogate). */
static inline __attribute__((always_inline)) int narrow_val(render_ctx *c, PyObject *s, unsigned flags,
                                                            tpl_val *out, int kind)
{
    unsigned char buf[3 * LATIN1_COPY];
    const void *p = PyUnicode_DATA(s);
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    size_t k = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 ch = kind == PyUnicode_1BYTE_KIND ? ((const Py_UCS1 *)p)[i] : ((const Py_UCS2 *)p)[i];
        if (ch < 0x80) {
            buf[k++] = (unsigned char)ch;
        } else if (ch < 0x800) {
            buf[k++] = (unsigned char)(0xC0 | ch >> 6);
            buf[k++] = (unsigned char)(0x80 | (ch & 0x3F));
        } else if (ch >= 0xD800 && ch <= 0xDFFF) {
            return 1;
        } else {
            buf[k++] = (unsigned char)(0xE0 | ch >> 12);
            buf[k++] = (unsigned char)(0x80 | (ch >> 6 & 0x3F));
            buf[k++] = (unsigned char)(0x80 | (ch & 0x3F));
        }
    }
    c->built += 1 + k / 16;
    return check(tpl_val_str(c->r, (const char *)buf, k, flags | TPL_VAL_UTF8_VALID, out));
}

static int str_val(render_ctx *c, PyObject *s, unsigned flags, tpl_val *out)
{
    Py_ssize_t n;
    const char *u;
    if (PyUnicode_IS_COMPACT_ASCII(s)) { /* its characters are its UTF-8 */
        u = (const char *)PyUnicode_DATA(s);
        n = PyUnicode_GET_LENGTH(s);
    } else if (PyUnicode_IS_COMPACT(s) && PyUnicode_KIND(s) == PyUnicode_1BYTE_KIND &&
               PyUnicode_GET_LENGTH(s) <= LATIN1_COPY) {
        return narrow_val(c, s, flags, out, PyUnicode_1BYTE_KIND); /* (never 1: no surrogate) */
    } else if (PyUnicode_IS_COMPACT(s) && PyUnicode_KIND(s) == PyUnicode_2BYTE_KIND &&
               PyUnicode_GET_LENGTH(s) <= LATIN1_COPY && !((PyCompactUnicodeObject *)s)->utf8) {
        int rc = narrow_val(c, s, flags, out, PyUnicode_2BYTE_KIND); /* (a str whose UTF-8 CPython has is borrowed as it is) */
        if (rc <= 0) return rc;
        if (!(u = PyUnicode_AsUTF8AndSize(s, &n))) return -1;
    } else if (!(u = PyUnicode_AsUTF8AndSize(s, &n))) {
        return -1;
    }
    if (hold_str(c, s) < 0) return -1;
    if (!flags) return check(tpl_val_str_borrow(u, (size_t)n, out)); /* (no render context: cheaper) */
    return check(tpl_val_str(c->r, u, (size_t)n, flags | TPL_VAL_BORROW | TPL_VAL_UTF8_VALID, out));
}

static int enter(render_ctx *c, PyObject *o)
{
    for (int i = 0; i < c->depth; i++)
        if (c->stack[i] == o) {
            PyErr_Format(PyExc_ValueError, "tpl: cyclic %s in %s", Py_TYPE(o)->tp_name,
                         c->what ? c->what : "the render state");
            return -1;
        }
    if (c->depth == MAX_DEPTH) {
        PyErr_Format(PyExc_ValueError, "tpl: %s nested deeper than %d levels", c->what ? c->what : "render state",
                     MAX_DEPTH);
        return -1;
    }
    c->stack[c->depth++] = o;
    return 0;
}

static int items_grow(render_ctx *c);

/* A dict's key: a str, int, float, bool or None, or a tuple of such keys (Python's tuple keys,
 * {(1, 2): x}: a tuple value, which tpl's maps hash and compare as Python does). */
static int key_val(render_ctx *c, PyObject *k, tpl_val *out)
{
    if (PyUnicode_Check(k)) return str_val(c, k, 0, out);
    if (k == Py_None || PyBool_Check(k) || PyLong_Check(k) || PyFloat_Check(k)) return to_val(c, k, out);
    if (PyTuple_CheckExact(k)) {
        if (enter(c, k) < 0) return -1; /* (the nesting limit) */
        Py_ssize_t n = PyTuple_GET_SIZE(k);
        size_t base = c->nitems;
        int rc = -1;
        c->built += (size_t)n + 1;
        for (Py_ssize_t i = 0; i < n; i++) {
            tpl_val v;
            if (key_val(c, PyTuple_GET_ITEM(k, i), &v) < 0) goto done;
            if (c->nitems == c->capitems && items_grow(c) < 0) goto done;
            c->items[c->nitems++] = v;
        }
        if (check(tpl_val_list_of(c->r, c->items + base, c->nitems - base, TPL_VAL_AS_TUPLE, out)) < 0) goto done;
        c->depth--;
        rc = 0;
    done:
        c->nitems = base;
        return rc;
    }
    PyErr_Format(PyExc_TypeError, "tpl: dict keys must be str, int, float, bool, None or a tuple of them, not %s",
                 Py_TYPE(k)->tp_name);
    return -1;
}

/* Room for one more entry on c's scratch stack of map entries (tpl_val_map_of_str) / list items
 * (tpl_val_list_of): the converted items of the dicts and lists being converted, nested ones
 * above their parents'. */
static int ents_grow(render_ctx *c)
{
    size_t cap = c->capents ? c->capents * 2 : 64;
    tpl_str_entry *e = PyMem_Realloc(c->ents, cap * sizeof *e);
    if (!e) { PyErr_NoMemory(); return -1; }
    c->ents = e;
    c->capents = cap;
    return 0;
}

static int items_grow(render_ctx *c)
{
    size_t cap = c->capitems ? c->capitems * 2 : 64;
    tpl_val *v = PyMem_Realloc(c->items, cap * sizeof *v);
    if (!v) { PyErr_NoMemory(); return -1; }
    c->items = v;
    c->capitems = cap;
    return 0;
}

static int ents_reserve(render_ctx *c, size_t n)
{
    while (c->capents - c->nents < n)
        if (ents_grow(c) < 0) return -1;
    return 0;
}

/* A message dict's entries read in place, without a PyDict_Next call per entry (about 39
 * instructions each: 40 per w4 render): CPython 3.11's combined table of str keys holds them in
 * order after its index table (Include/internal/pycore_dict.h: PyDictKeysObject with
 * DICT_KEYS_UNICODE, DK_UNICODE_ENTRIES). Only for exactly 3.11 (another version keeps
 * PyDict_Next), a dict without split values and without deleted entries (dk_nentries ==
 * ma_used: the entries are its items in order, as PyDict_Next gives them), and only after
 * dict_entries_work found it right on a dict of its own (render_ctx.fastdict). NULL: use PyDict_Next. */
typedef struct dict_entry { PyObject *k, *v; } dict_entry;
#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000 && !defined(Py_LIMITED_API)
typedef struct dict_keys311 { /* struct _dictkeysobject of CPython 3.11 */
    Py_ssize_t dk_refcnt;
    uint8_t dk_log2_size, dk_log2_index_bytes, dk_kind;
    uint32_t dk_version;
    Py_ssize_t dk_usable, dk_nentries;
    char dk_indices[];
} dict_keys311;
static inline const dict_entry *dict_entries(PyObject *d, Py_ssize_t n)
{
    const PyDictObject *o = (const PyDictObject *)d;
    const dict_keys311 *k = (const dict_keys311 *)(const void *)o->ma_keys;
    if (o->ma_values || !k || k->dk_kind != 1 /* DICT_KEYS_UNICODE */ || k->dk_nentries != n) return NULL;
    return (const dict_entry *)(const void *)(k->dk_indices + ((size_t)1 << k->dk_log2_index_bytes));
}
#else
static inline const dict_entry *dict_entries(PyObject *d, Py_ssize_t n)
{
    (void)d;
    (void)n;
    return NULL;
}
#endif

/* Whether dict_entries reads what PyDict_Next gives, on dicts made here (str keys, as json.loads
 * makes them; one with a deleted entry refused). */
static bool dict_entries_work(void)
{
    bool ok = false;
    PyObject *d = Py_BuildValue("{s:s,s:s,s:i}", "role", "user", "content", "hi", "n", 1);
    if (d && PyDict_GET_SIZE(d) == 3) {
        const dict_entry *e = dict_entries(d, 3);
        Py_ssize_t pos = 0;
        PyObject *k, *v;
        ok = e != NULL;
        for (int i = 0; ok && i < 3; i++)
            ok = PyDict_Next(d, &pos, &k, &v) && e[i].k == k && e[i].v == v && pos == i + 1;
        ok = ok && PyDict_DelItemString(d, "content") == 0 && dict_entries(d, PyDict_GET_SIZE(d)) == NULL;
    }
    Py_XDECREF(d);
    PyErr_Clear();
    return ok;
}

/* The next item of dict d: from its entry array (dict_entries: *de, up to dend) while its version
 * is still ver (converting a value can run Python code that changes d: then PyDict_Next's, from
 * the same position); false at the end. */
static inline __attribute__((always_inline)) bool dict_next(PyObject *d, const dict_entry **de, const dict_entry *dend,
                                                            uint64_t ver, Py_ssize_t *pos, PyObject **k, PyObject **v)
{
    if (*de && HAVE_CACHE && DICT_VERSION(d) == ver) {
        if (*de == dend) return false;
        *k = (*de)->k;
        *v = (*de)++->v;
        ++*pos;
        return true;
    }
    return PyDict_Next(d, pos, k, v);
}

/* A dict as a map: its exact str keys (distinct) with their remembered hashes, built at once
 * (tpl_val_map_of_str); from the first key of another type on, entry by entry. The cycle check
 * (enter) comes before the first value converted by recursion: a dict of strs (a chat message,
 * a record) holds nothing that can lead back to it, and a cycle through d is still found when
 * d is met again below itself. */
static int dict_val(render_ctx *c, PyObject *d, tpl_val *out)
{
    bool entered = false;
#define ENTER_D() (!entered && (entered = true, enter(c, d) < 0))
    if (c->rec && rec_dep(c, d, DICT_VERSION(d)) < 0) return -1;
    size_t base = c->nents;
    Py_ssize_t pos = 0, left = PyDict_GET_SIZE(d);
    c->built += (size_t)left + 1;
    PyObject *k, *v;
    bool mixed = false;
    int rc = -1;
    /* (its entries read in place on CPython 3.11: dict_next) */
    uint64_t ver = DICT_VERSION(d);
    const dict_entry *de0 = c->fastdict ? dict_entries(d, left) : NULL, *de = de0, *dend = de0 ? de0 + left : NULL;
    bool pending = false; /* (k, v: the entry the walk goes on from) */
    if (left <= SMALL_DICT) { /* str keys with ASCII str values (a chat message): one call */
        tpl_str_str ss[SMALL_DICT];
        Py_ssize_t i = 0;
        bool other = false;
        for (; i < left && dict_next(d, &de, dend, ver, &pos, &k, &v); i++) {
            if (!PyUnicode_CheckExact(k) || !ASCII_STR(v) || PyUnicode_GET_LENGTH(v) >= UINT32_MAX) {
                other = true;
                break;
            }
            key *e = key_of(c, k);
            if (!e || (c->rec && hold_str(c, k) < 0) || hold_str(c, v) < 0) return -1;
            ss[i] = (tpl_str_str){ e->u8, (const char *)PyUnicode_DATA(v), e->len, (uint32_t)PyUnicode_GET_LENGTH(v),
                                   e->hash };
        }
        if (i == left) return check(tpl_val_map_of_strs(c->r, ss, (size_t)i, out));
        if (other && PyUnicode_CheckExact(k)) {
            /* another value (a number, a dict, a str not ASCII): the entries before it as the walk
             * below makes them (their strs held), and the walk goes on from it */
            if (c->capents - c->nents < (size_t)left && ents_reserve(c, (size_t)left) < 0) return -1;
            for (Py_ssize_t j = 0; j < i; j++) {
                tpl_str_entry *x = &c->ents[c->nents++];
                x->key = ss[j].key;
                x->len = ss[j].len;
                x->hash = ss[j].hash;
                if (check(tpl_val_str_borrow(ss[j].s, ss[j].slen, &x->val)) < 0) goto done;
            }
            left -= i;
            pending = true;
        } else {
            pos = 0; /* (another key: the walk again, entry by entry; what was held stays held) */
            de = de0;
        }
    }
    if (c->capents - c->nents < (size_t)left && ents_reserve(c, (size_t)left) < 0) return -1;
    while (left > 0 && (pending || dict_next(d, &de, dend, ver, &pos, &k, &v))) { /* (left: no call to find the end) */
        pending = false;
        left--;
        if (!PyUnicode_CheckExact(k)) {
            mixed = true;
            break;
        }
        key *e = key_of(c, k);
        if (!e || (c->rec && hold_str(c, k) < 0)) goto done;
        if (ASCII_STR(v)) { /* the usual value: written in place */
            if (c->nents == c->capents && ents_grow(c) < 0) goto done;
            tpl_str_entry *x = &c->ents[c->nents];
            x->key = e->u8;
            x->len = e->len;
            x->hash = e->hash;
            if (ascii_val(c, v, &x->val) < 0) goto done;
            c->nents++;
            continue;
        }
        tpl_str_entry x = { e->u8, e->len, e->hash, { { 0, 0 } } };
        if (ENTER_D() || to_val(c, v, &x.val) < 0) goto done; /* (may use the stack above base: it is popped) */
        if (c->nents == c->capents && ents_grow(c) < 0) goto done;
        c->ents[c->nents++] = x;
    }
    if (check(tpl_val_map_of_str(c->r, c->ents + base, c->nents - base, TPL_VAL_BORROW | TPL_VAL_UTF8_VALID, out)) < 0)
        goto done;
    if (mixed && ENTER_D()) goto done;
    if (mixed) /* k, v: the entry the walk stopped at */
        do {
            if (PyUnicode_CheckExact(k)) {
                if (add_str_key(c, *out, k, v) < 0) goto done;
                continue;
            }
            tpl_val kv, vv;
            if (key_val(c, k, &kv) < 0 || to_val(c, v, &vv) < 0 || check(tpl_val_map_set(c->r, *out, kv, vv)) < 0)
                goto done;
        } while (dict_next(d, &de, dend, ver, &pos, &k, &v));
    if (entered) c->depth--;
    rc = 0;
done:
    c->nents = base;
    return rc;
#undef ENTER_D
}

/* Room for n more entries in c->ss / n counts in c->cnt (a list's dicts: str_dicts_val). */
static int ss_reserve(render_ctx *c, size_t n)
{
    size_t cap = c->capss ? c->capss * 2 : 256;
    while (cap < n) cap *= 2;
    tpl_str_str *e = PyMem_Realloc(c->ss, cap * sizeof *e);
    if (!e) { PyErr_NoMemory(); return -1; }
    c->ss = e;
    c->capss = cap;
    return 0;
}

static int cnt_reserve(render_ctx *c, size_t n)
{
    size_t cap = c->capcnt ? c->capcnt * 2 : 64;
    while (cap < n) cap *= 2;
    uint32_t *e = PyMem_Realloc(c->cnt, cap * sizeof *e);
    if (!e) { PyErr_NoMemory(); return -1; }
    c->cnt = e;
    c->capcnt = cap;
    return 0;
}

/* The n items of a list or tuple when each is a dict of up to SMALL_DICT entries with exact str
 * keys and ASCII str values (a chat's messages): the list and its maps in one call
 * (tpl_val_list_of_str_maps), with no call per dict. 1: done; 0: an item is something else
 * (nothing built; what was held and recorded stays so: seq_val converts the items one by one);
 * -1: an error. Nothing here converts by recursion, so the scratch (c->ss, c->cnt) is used by
 * one call at a time. */
static int str_dicts_val(render_ctx *c, PyObject *const *items, Py_ssize_t n, unsigned flags, tpl_val *out)
{
    if (c->capcnt < (size_t)n && cnt_reserve(c, (size_t)n) < 0) return -1;
    bool rec = c->rec, hold = rec || !c->nokeep;
    /* the key at each position of the dict before, with its entry: json.loads gives the dicts of
     * one list the same key strs, so a key is looked up in c->keys once per list (the slot is
     * the dict's position - 1, which is the entry's index when nothing was deleted: any slot is
     * right, the key object decides) */
    PyObject *pk[SMALL_DICT] = { NULL };
    key pke[SMALL_DICT];
    size_t ns = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *d = items[i];
        if (Py_TYPE(d) != &PyDict_Type) return 0;
        Py_ssize_t left = PyDict_GET_SIZE(d);
        if (left > SMALL_DICT) return 0;
        if (c->capss - ns < SMALL_DICT && ss_reserve(c, ns + SMALL_DICT) < 0) return -1;
        if (rec && rec_dep(c, d, DICT_VERSION(d)) < 0) return -1;
        c->cnt[i] = (uint32_t)left;
        Py_ssize_t pos = 0;
        PyObject *k, *v;
        tpl_str_str *e = c->ss + ns;
        ns += (size_t)left;
        const dict_entry *de = c->fastdict ? dict_entries(d, left) : NULL;
        for (tpl_str_str *end = e + left; e < end; e++) {
            if (de) { /* (no NULL key or value: dk_nentries == ma_used, no entry deleted) */
                k = de->k;
                v = de++->v;
                pos++;
            } else if (!PyDict_Next(d, &pos, &k, &v))
                return 0;
            if (Py_TYPE(v) != &PyUnicode_Type || !PyUnicode_IS_COMPACT_ASCII(v) || PyUnicode_GET_LENGTH(v) >= UINT32_MAX)
                return 0;
            size_t slot = (size_t)(pos - 1) & (SMALL_DICT - 1);
            if (k != pk[slot]) {
                if (!PyUnicode_CheckExact(k)) return 0;
                key *lk = &c->lastk[slot];
                if (!rec && lk->k && PyUnicode_IS_COMPACT_ASCII(k) && (size_t)PyUnicode_GET_LENGTH(k) == lk->len &&
                    !memcmp(lk->u8, (PyASCIIObject *)k + 1, lk->len)) {
                    /* the same key as the last list's (another str): its entry, without a key table
                     * miss (its str is lastk's, then the render's: not for a cached value, which
                     * holds the strs it borrows) */
                    pke[slot] = *lk;
                } else {
                    key *ke = key_of(c, k);
                    if (!ke) return -1;
                    pke[slot] = *ke; /* (its str lives until the render ends: c->keys or the keep array holds it) */
                    if (!rec && ke->k != lk->k) { /* remembered (the one it replaces: the render's now) */
                        if (lk->k && keep_room(c) < 0) return -1;
                        if (lk->k) c->keep[c->nkeep++] = lk->k;
                        Py_INCREF(ke->k);
                        *lk = *ke;
                    }
                }
                pk[slot] = k;
            }
            if (hold && ((rec && hold_str(c, k) < 0) || hold_str(c, v) < 0)) return -1;
            /* (a compact ASCII str's characters follow its PyASCIIObject) */
            const key *ke = &pke[slot];
            *e = (tpl_str_str){ ke->u8, (const char *)((PyASCIIObject *)v + 1), ke->len, (uint32_t)PyUnicode_GET_LENGTH(v),
                                ke->hash };
        }
    }
    if (check(tpl_val_list_of_str_maps(c->r, c->ss, c->cnt, (size_t)n, flags, out)) < 0) return -1;
    c->built += ns + (size_t)n;
    return 1;
}

/* A list or tuple as a list value, built at once (tpl_val_list_of). */
static int seq_val(render_ctx *c, PyObject *s, unsigned flags, tpl_val *out)
{
    if (enter(c, s) < 0) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(s);
    PyObject **items = PySequence_Fast_ITEMS(s);
    size_t base = c->nitems;
    int rc = -1;
    c->built += (size_t)n + 1;
    if (c->rec) { /* a list's items are compared by identity: it owns them (their addresses stay theirs) */
        if (rec_dep(c, s, flags & TPL_VAL_AS_TUPLE ? TUPLE_DEP : LIST_DEP | (uint64_t)n) < 0) return -1;
        for (Py_ssize_t i = 0; !(flags & TPL_VAL_AS_TUPLE) && i < n; i++)
            if (rec_dep(c, items[i], 0) < 0) return -1;
    }
    if (n > 0 && Py_TYPE(items[0]) == &PyDict_Type) { /* (a list of messages: at once) */
        int k = str_dicts_val(c, items, n, flags, out);
        if (k < 0) return -1;
        if (k > 0) {
            c->depth--;
            return 0;
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        tpl_val v;
        PyObject *it = items[i];
        if ((ASCII_STR(it) ? ascii_val(c, it, &v)
             : Py_TYPE(it) == &PyDict_Type ? dict_val(c, it, &v) /* (a list of records: no dispatch) */
             : to_val(c, it, &v)) < 0)
            goto done;
        if (c->nitems == c->capitems && items_grow(c) < 0) goto done;
        c->items[c->nitems++] = v;
    }
    if (check(tpl_val_list_of(c->r, c->items + base, c->nitems - base, flags, out)) < 0) goto done;
    c->depth--;
    rc = 0;
done:
    c->nitems = base;
    return rc;
}

/* An int past int64, exactly: its hex text (str() refuses more than 4,300 digits, hex does not). */
static int big_val(render_ctx *c, PyObject *o, tpl_val *out)
{
    PyObject *h = PyNumber_ToBase(o, 16); /* '0x1f' or '-0x1f' */
    if (!h) return -1;
    Py_ssize_t n;
    const char *u = PyUnicode_AsUTF8AndSize(h, &n);
    int rc = -1;
    if (u) {
        bool neg = u[0] == '-';
        char *t = PyMem_Malloc((size_t)n);
        if (!t) PyErr_NoMemory();
        else {
            size_t k = 0;
            if (neg) t[k++] = '-';
            memcpy(t + k, u + neg + 2, (size_t)n - neg - 2);
            k += (size_t)n - neg - 2;
            rc = check(tpl_val_int_text(c->r, t, k, 16, out));
            c->built += 1 + k / 16;
            PyMem_Free(t);
        }
    }
    Py_DECREF(h);
    return rc;
}

/* A TPL_VAL_BIGINT as a Python int: int(text) refuses more than 4,300 digits (Python 3.11's
 * limit), so it is built from pieces of at most 4,000 digits. */
static PyObject *big_from_val(tpl_val v)
{
    size_t n;
    const char *s = tpl_val_as_str(v, &n);
    if (!s || !n) return PyLong_FromLong(0);
    bool neg = s[0] == '-';
    s += neg;
    n -= neg;
    char buf[4001];
    PyObject *acc = PyLong_FromLong(0);
    for (size_t i = 0; acc && i < n;) {
        size_t k = n - i < 4000 ? n - i : 4000;
        memcpy(buf, s + i, k);
        buf[k] = 0;
        i += k;
        PyObject *part = PyLong_FromString(buf, NULL, 10), *ten = PyLong_FromLong(10), *ek = PyLong_FromSize_t(k);
        PyObject *scale = ten && ek ? PyNumber_Power(ten, ek, Py_None) : NULL;
        PyObject *m = scale ? PyNumber_Multiply(acc, scale) : NULL;
        PyObject *sum = m && part ? PyNumber_Add(m, part) : NULL;
        Py_XDECREF(part); Py_XDECREF(ten); Py_XDECREF(ek); Py_XDECREF(scale); Py_XDECREF(m);
        Py_DECREF(acc);
        acc = sum;
    }
    if (acc && neg) {
        PyObject *x = PyNumber_Negative(acc);
        Py_DECREF(acc);
        acc = x;
    }
    return acc;
}

/* o is an instance of exactly the render's undefined class (tpl.jinja2: the Environment's
 * Undefined, StrictUndefined...), which behaves as the template's own undefined values. An
 * instance of another undefined class stays a Python object, so that its own methods decide
 * (a StrictUndefined a filter returns under the default Undefined still raises when printed). */
static bool is_undefined(const render_ctx *c, PyObject *o)
{
    return (PyObject *)Py_TYPE(o) == c->undefined;
}

/* An undefined value with text (a name, or a hint: Jinja2's message), or a plain one (text NULL). */
static int undefined_text_val(render_ctx *c, const char *text, Py_ssize_t n, bool hint, tpl_val *out)
{
    if (!text) {
        *out = tpl_val_undefined();
        return 0;
    }
    return check(tpl_val_undefined_text(c->r, text, (size_t)n, hint, out));
}

/* tpl.jinja2's Undefined instance o as the template's undefined value: its name or hint from
 * o._tpl_undefined() (None, or (text, is_hint)). */
static int undefined_val(render_ctx *c, PyObject *o, tpl_val *out)
{
    c->rec_ok = false;
    PyObject *d = PyObject_CallMethod(o, "_tpl_undefined", NULL);
    if (!d) return -1;
    int rc = -1;
    if (d == Py_None) rc = undefined_text_val(c, NULL, 0, false, out);
    else if (!PyTuple_Check(d) || PyTuple_GET_SIZE(d) != 2 || !PyUnicode_Check(PyTuple_GET_ITEM(d, 0)))
        PyErr_SetString(PyExc_TypeError, "_tpl_undefined() must return None or (str, bool)");
    else {
        Py_ssize_t n;
        const char *u = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(d, 0), &n);
        if (u) rc = undefined_text_val(c, u, n, PyObject_IsTrue(PyTuple_GET_ITEM(d, 1)) == 1, out);
    }
    Py_DECREF(d);
    return rc;
}

/* Python -> tpl_val: natively for the plain types, a host object otherwise. */
/* Whether o, of a subclass of int or float, behaves as its int or float does in a template: its
 * classes up to int/float define nothing but their own bookkeeping (no method, no operator, no
 * __str__: else it stays a Python object) and the instance has no attributes of its own. */
static bool plain_number(PyObject *o)
{
    static const char *const own[] = { "__module__", "__qualname__", "__doc__", "__dict__", "__weakref__", "__slots__",
                                       "__annotations__", "__firstlineno__", "__static_attributes__", NULL };
    PyObject *mro = Py_TYPE(o)->tp_mro;
    if (!mro || !PyTuple_Check(mro)) return false;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mro); i++) {
        PyTypeObject *t = (PyTypeObject *)PyTuple_GET_ITEM(mro, i);
        if (t == &PyLong_Type || t == &PyFloat_Type) break;
        if (!(t->tp_flags & Py_TPFLAGS_HEAPTYPE) || !t->tp_dict) return false;
        Py_ssize_t pos = 0;
        PyObject *k, *v;
        while (PyDict_Next(t->tp_dict, &pos, &k, &v)) {
            const char *n = PyUnicode_Check(k) ? PyUnicode_AsUTF8(k) : NULL;
            if (!n) { PyErr_Clear(); return false; }
            int j = 0;
            while (own[j] && strcmp(own[j], n) != 0) j++;
            if (!own[j]) return false;
        }
    }
    if (Py_TYPE(o)->tp_dictoffset) {
        PyObject *d = PyObject_GenericGetDict(o, NULL);
        bool empty = d && PyDict_Check(d) && PyDict_GET_SIZE(d) == 0;
        if (!d) PyErr_Clear();
        Py_XDECREF(d);
        return empty;
    }
    return true;
}

static int to_val(render_ctx *c, PyObject *o, tpl_val *out)
{
    PyTypeObject *t = Py_TYPE(o);
    if (t == &PyUnicode_Type) return PyUnicode_IS_COMPACT_ASCII(o) ? ascii_val(c, o, out) : str_val(c, o, 0, out);
    if (o == Py_None) { *out = tpl_val_none(); return 0; }
    if (t == &PyBool_Type) { *out = tpl_val_bool(o == Py_True); return 0; }
    if (t == &PyLong_Type) {
        int ovf = 0;
        long long i = PyLong_AsLongLongAndOverflow(o, &ovf);
        if (ovf) return big_val(c, o, out);
        if (i == -1 && PyErr_Occurred()) return -1;
        *out = tpl_val_int(i);
        return 0;
    }
    if (t == &PyFloat_Type) { *out = tpl_val_float(PyFloat_AS_DOUBLE(o)); return 0; }
    if (t == &PyDict_Type) return dict_val(c, o, out);
    if (t == &PyList_Type) return seq_val(c, o, 0, out);
    if (t == &PyTuple_Type) return seq_val(c, o, TPL_VAL_AS_TUPLE, out);
    c->impure = true;
    if (c->nokeep) return nokeep_stop(c);
    if (PyUnicode_Check(o)) { /* str subclasses: Markup and friends are markup-safe */
        c->rec_ok = false;
        int has = PyObject_HasAttrString(o, "__html__");
        return str_val(c, o, has ? TPL_VAL_MARKUP : 0, out);
    }
    /* (another object with __html__ stays a Python object: printed, concatenated and |string as
     * str(obj), escaped (|e, autoescape, |safe) as obj.__html__(): py_html) */
    if (c->undefined && is_undefined(c, o)) return undefined_val(c, o, out);
    if ((PyLong_Check(o) || PyFloat_Check(o)) && plain_number(o)) { /* as its int or float */
        if (PyFloat_Check(o)) { *out = tpl_val_float(PyFloat_AS_DOUBLE(o)); return 0; }
        PyObject *i = PyNumber_Index(o);
        int rc = i ? to_val(c, i, out) : -1;
        Py_XDECREF(i);
        return rc;
    }
    return host_val(c, o, out);
}

static PyObject *from_val(render_ctx *c, tpl_val v);
static PyObject *plain_from_val(render_ctx *c, tpl_val v);

static const char call_capsule[] = "tpl render call";

/* A template's macro (or a call block's caller) handed to Python: tpl.TemplateCallable(handle,
 * value), which calls it back in this render (mod_call) while the render runs. */
static PyObject *template_callable(render_ctx *c, tpl_val v)
{
    static const char marker = 0;
    if (!c->calls) {
        if (!(c->calls = PyCapsule_New((void *)&marker, call_capsule, NULL))) return NULL;
        if (PyCapsule_SetContext(c->calls, c) < 0) { Py_CLEAR(c->calls); return NULL; }
    }
    /* what Jinja2's Macro shows Python, read now (its attributes outlive the render) */
    static const char *const attrs[] = { "name", "arguments", "catch_kwargs", "catch_varargs", "caller",
                                         "explicit_caller" };
    PyObject *info = PyDict_New();
    for (size_t i = 0; info && i < sizeof attrs / sizeof *attrs; i++) {
        tpl_val a;
        tpl_status st = tpl_render_getattr(c->r, v, attrs[i], strlen(attrs[i]), &a);
        PyObject *x = st == TPL_OK ? from_val(c, a) : NULL;
        if (st != TPL_OK) PyErr_Format(PyExc_RuntimeError, "tpl: a macro's %s could not be read (status %d)", attrs[i],
                                       (int)st);
        if (!x || PyDict_SetItemString(info, attrs[i], x) < 0) Py_CLEAR(info);
        Py_XDECREF(x);
    }
    PyObject *mod = info ? PyImport_ImportModule("tpl") : NULL;
    PyObject *r = mod ? PyObject_CallMethod(mod, "TemplateCallable", "Oy#O", c->calls, (const char *)&v,
                                            (Py_ssize_t)sizeof v, info) : NULL;
    Py_XDECREF(mod);
    Py_XDECREF(info);
    return r;
}

/* What Jinja2 hands a Python callable for a template value that is no plain list or dict
 * (tpl_val_type_name: Jinja2's class), new reference; NULL with *done false for a plain one.
 * A range is Python's range, a dict view the view of the dict (Python's views are live: its
 * entries now), an iterator (a generator of map/select, reversed()) an iterator over its items,
 * a namespace under tpl.jinja2 its Namespace (a copy: what Python sets on it is refused), a
 * template module the dict of its names (as before). A
 * template-only value (a loop, a macro, a cycler, a joiner, a builtin function) is
 * refused, naming its class: not None, which would differ silently (issue 17). */
static PyObject *special_from_val(render_ctx *c, tpl_val v, const char *type, bool *done)
{
    *done = true;
    tpl_val rp[3];
    if (tpl_val_range_params(v, rp)) {
        PyObject *a = from_val(c, rp[0]), *b = a ? from_val(c, rp[1]) : NULL, *st = b ? from_val(c, rp[2]) : NULL;
        PyObject *r = st ? PyObject_CallFunctionObjArgs((PyObject *)&PyRange_Type, a, b, st, NULL) : NULL;
        Py_XDECREF(a);
        Py_XDECREF(b);
        Py_XDECREF(st);
        return r;
    }
    if (strncmp(type, "dict_", 5) == 0 && tpl_val_kind_of(tpl_val_view_dict(v)) == TPL_VAL_MAP) {
        PyObject *d = from_val(c, tpl_val_view_dict(v));
        PyObject *r = d ? PyObject_CallMethod(d, type + 5, NULL) : NULL; /* keys, items, values */
        Py_XDECREF(d);
        return r;
    }
    if (tpl_val_kind_of(v) == TPL_VAL_LIST && strcmp(type, "list") != 0) { /* an iterator */
        PyObject *l = plain_from_val(c, v);
        PyObject *it = l ? PyObject_GetIter(l) : NULL;
        Py_XDECREF(l);
        return it;
    }
    if (strcmp(type, "Namespace") == 0) {
        if (!c || !c->undefined) { *done = false; return NULL; } /* (tpl.Template: a dict) */
        PyObject *d = plain_from_val(c, v);
        PyObject *mod = d ? PyImport_ImportModule("tpl.jinja2") : NULL;
        PyObject *r = mod ? PyObject_CallMethod(mod, "_namespace_copy", "O", d) : NULL;
        Py_XDECREF(mod);
        Py_XDECREF(d);
        return r;
    }
    if (tpl_val_kind_of(v) == TPL_VAL_MAP && strcmp(type, "Cycler") != 0) { /* (a module: its names, a dict) */
        *done = false;
        return NULL;
    }
    if (tpl_val_kind_of(v) != TPL_VAL_MAP && tpl_val_kind_of(v) != TPL_VAL_OTHER) { *done = false; return NULL; }
    if (c && !c->raw && (strcmp(type, "Macro") == 0)) return template_callable(c, v);
    if (c && c->raw) { /* (tpl.jinja2's own: a module's macros, say, are told by name) */
        if (tpl_val_kind_of(v) == TPL_VAL_MAP) { *done = false; return NULL; }
        Py_RETURN_NONE;
    }
    return PyErr_Format(PyExc_NotImplementedError,
                        "tpl: a template's %s cannot be handed to Python (a callable's argument, a Context "
                        "variable): it is tpl's VM's own", type);
}

/* tpl_val -> Python (new reference). Markup-safe strings become c->markup(s) and undefined
 * values c->undefined(name=...) when the render has them (tpl.jinja2: Markup, Undefined, as
 * Jinja2 passes them to Python callables), else str and None; ranges, dict views, iterators and
 * namespaces as special_from_val. */
static PyObject *from_val(render_ctx *c, tpl_val v)
{
    tpl_val_kind k = tpl_val_kind_of(v);
    if (k == TPL_VAL_LIST || k == TPL_VAL_MAP || k == TPL_VAL_OTHER) {
        const char *type = tpl_val_type_name(v);
        if (type && strcmp(type, "list") != 0 && strcmp(type, "dict") != 0) {
            bool done;
            PyObject *r = special_from_val(c, v, type, &done);
            if (done) return r;
        }
    }
    return plain_from_val(c, v);
}

/* A template's list or dict o handed to a Python callable (a copy: tpl's values are not Python
 * objects) and snap (new reference or NULL), the snapshot of its items: recorded in c->watch so
 * that a callable that changes it is refused (watch_changed), where Jinja2's template would see
 * the change (issue 17). */
static int watch_add(render_ctx *c, PyObject *o, PyObject *snap, PyObject *key)
{
    PyObject *t = snap ? PyTuple_Pack(3, o, snap, key ? key : Py_None) : NULL;
    Py_XDECREF(snap);
    if (t && !c->watch && !(c->watch = PyList_New(0))) Py_CLEAR(t);
    int rc = t ? PyList_Append(c->watch, t) : -1;
    Py_XDECREF(t);
    return rc;
}

#define LONG_LIST 1024 /* entry_changed: a list of more items is checked by LONG_PROBES of them */
#define LONG_PROBES 64

/* Whether the list or dict of watch entry e (watch_add) changed since its snapshot. */
static bool entry_changed(PyObject *e)
{
    PyObject *o = PyTuple_GET_ITEM(e, 0), *snap = PyTuple_GET_ITEM(e, 1);
    Py_ssize_t n = PyList_GET_SIZE(snap);
    if (PyList_Check(o)) {
        if (PyList_GET_SIZE(o) != n) return true;
        /* (every item while the list is short; a long one, checked after every Python call, by
         * its first and last items and LONG_PROBES spread between: a callable that replaces an
         * item elsewhere in a list of more than LONG_LIST items Python holds goes unseen) */
        Py_ssize_t step = n > LONG_LIST ? n / LONG_PROBES : 1;
        for (Py_ssize_t j = 0; j < n; j += step)
            if (PyList_GET_ITEM(o, j) != PyList_GET_ITEM(snap, j)) return true;
        return n && PyList_GET_ITEM(o, n - 1) != PyList_GET_ITEM(snap, n - 1);
    }
    if (PyDict_GET_SIZE(o) != n) return true;
    Py_ssize_t pos = 0, j = 0;
    PyObject *k, *x;
    while (PyDict_Next(o, &pos, &k, &x)) {
        PyObject *p = PyList_GET_ITEM(snap, j++);
        if (PyTuple_GET_ITEM(p, 0) != k || PyTuple_GET_ITEM(p, 1) != x) return true;
    }
    return false;
}

/* The Python list or dict already made for the template's list or dict v in this call (new
 * reference), else NULL with *key (new reference) v's key in c->memo (made here at the first
 * use; *key NULL on failure). */
static PyObject *memo_get(render_ctx *c, tpl_val v, PyObject **key)
{
    if (!c->memo && !(c->memo = PyDict_New())) { *key = NULL; return NULL; }
    *key = PyBytes_FromStringAndSize((const char *)&v, (Py_ssize_t)sizeof v);
    PyObject *o = *key ? PyDict_GetItemWithError(c->memo, *key) : NULL;
    if (o) { Py_CLEAR(*key); Py_INCREF(o); return o; }
    if (PyErr_Occurred()) Py_CLEAR(*key);
    return NULL;
}

/* Moves the entries of watch (a call's, new reference or NULL) to c->kept and drops those of
 * c->kept whose list or dict no one but the entry holds (Python kept no reference: nothing can
 * change it later). Newest first, so a list's inner lists go with it. */
static void watch_keep(render_ctx *c, PyObject *watch)
{
    if (watch && !c->kept) c->kept = watch;
    else if (watch) {
        if (PyList_SetSlice(c->kept, PY_SSIZE_T_MAX, PY_SSIZE_T_MAX, watch) < 0) PyErr_Clear();
        Py_DECREF(watch);
    }
    if (!c->kept) return;
    for (Py_ssize_t i = PyList_GET_SIZE(c->kept) - 1; i >= 0; i--)
        if (Py_REFCNT(PyTuple_GET_ITEM(PyList_GET_ITEM(c->kept, i), 0)) == 1 &&
            PyList_SetSlice(c->kept, i, i + 1, NULL) < 0)
            PyErr_Clear();
}

static PyObject *plain_from_val(render_ctx *c, tpl_val v);

/* A new Python object made from the template's value v with its own memo and watch (dropped after),
 * never one already made: what v holds now, to compare with an object Python kept. New reference, or
 * NULL with an exception. */
static PyObject *fresh_copy(render_ctx *c, tpl_val v)
{
    PyObject *memo = c->memo, *watch = c->watch;
    c->memo = NULL;
    c->watch = NULL;
    c->no_reuse = true;
    PyObject *fresh = plain_from_val(c, v);
    c->no_reuse = false;
    Py_XDECREF(c->memo);
    Py_XDECREF(c->watch);
    c->memo = memo;
    c->watch = watch;
    return fresh;
}

/* The entries of callables' results a Python call checks for Python's changes (back_sync): the
 * newest TRACKED_MAX (a result adds at most that many, its own list or dict first), so that a loop
 * of calls returning lists Python holds stays linear. An older one still gets the template's
 * changes (kept_sync), but a change Python makes to it later is not the template's. */
#define TRACKED_MAX 16
#define KEPT_SCAN 64 /* kept_entry: the newest entries looked at for an object returned again */

/* The list or dict an earlier call of the render was given for the template's list or dict v
 * (key: memo_get's) and Python kept (c->kept), when it equals what v holds now (new reference,
 * also put in this call's memo): Jinja2 hands every call the same object, which a callable that
 * kept it can tell (`x is kept`). NULL otherwise (a new copy is made: v changed since, or
 * nothing kept it), or with an exception. */
static PyObject *kept_reuse(render_ctx *c, tpl_val v, PyObject *key)
{
    if ((!c->kept && !c->tracked) || c->no_reuse) return NULL;
    PyObject *o = NULL;
    for (int l = 0; l < 2 && !o; l++) {
        PyObject *list = l ? c->kept : c->tracked;
        Py_ssize_t n = list ? PyList_GET_SIZE(list) : 0;
        for (Py_ssize_t i = n - 1; i >= 0 && !o && (l || i >= n - KEPT_SCAN); i--) {
            PyObject *e = PyList_GET_ITEM(list, i), *k = PyTuple_GET_ITEM(e, 2);
            if (PyBytes_Check(k) && PyBytes_GET_SIZE(k) == PyBytes_GET_SIZE(key) &&
                memcmp(PyBytes_AS_STRING(k), PyBytes_AS_STRING(key), (size_t)PyBytes_GET_SIZE(key)) == 0 &&
                Py_REFCNT(PyTuple_GET_ITEM(e, 0)) > 1)
                o = PyTuple_GET_ITEM(e, 0);
        }
    }
    if (!o) return NULL;
    /* a fresh copy, compared with the kept object */
    PyObject *fresh = fresh_copy(c, v);
    if (!fresh) return NULL;
    int eq = Py_TYPE(fresh) == Py_TYPE(o) ? PyObject_RichCompareBool(o, fresh, Py_EQ) : 0;
    Py_DECREF(fresh);
    if (eq <= 0) {
        if (eq < 0) PyErr_Clear();
        return NULL;
    }
    if (PyDict_SetItem(c->memo, key, o) < 0) return NULL;
    Py_INCREF(o);
    return o;
}

/* A new snapshot entry (o, its items now, key) for the kept entry e (new reference or NULL). */
static PyObject *entry_renewed(PyObject *e)
{
    PyObject *o = PyTuple_GET_ITEM(e, 0);
    PyObject *snap = PyList_Check(o) ? PyList_GetSlice(o, 0, PY_SSIZE_T_MAX) : PyDict_Items(o);
    PyObject *t = !snap ? NULL : PyTuple_GET_SIZE(e) == 4 ? PyTuple_Pack(4, o, snap, PyTuple_GET_ITEM(e, 2), Py_True)
                                                         : PyTuple_Pack(3, o, snap, PyTuple_GET_ITEM(e, 2));
    Py_XDECREF(snap);
    return t;
}

/* The template value an entry (watch_add's, or track's) was made from or for: 1 and *v, else 0. */
static int entry_val(PyObject *e, tpl_val *v)
{
    PyObject *key = PyTuple_GET_ITEM(e, 2);
    if (!PyBytes_Check(key) || PyBytes_GET_SIZE(key) != (Py_ssize_t)sizeof(tpl_val)) return 0;
    memcpy(v, PyBytes_AS_STRING(key), sizeof *v);
    return 1;
}

/* o (a kept list or dict, e its entry) made to hold the items of the template's v, where the lists
 * and dicts inside v that Python holds (c->memo: every kept entry's) are those objects, not new
 * copies (their own entries make them equal to the template's). -1 with an exception. */
static int refill(render_ctx *c, PyObject *o, tpl_val v)
{
    size_t n = tpl_val_len(v);
    if (PyList_Check(o)) {
        PyObject *items = PyList_New((Py_ssize_t)n);
        for (size_t i = 0; items && i < n; i++) {
            PyObject *x = from_val(c, tpl_val_item(v, i));
            if (!x) Py_CLEAR(items);
            else PyList_SET_ITEM(items, (Py_ssize_t)i, x);
        }
        int rc = items ? PyList_SetSlice(o, 0, PY_SSIZE_T_MAX, items) : -1;
        Py_XDECREF(items);
        return rc;
    }
    PyObject *d = PyDict_New();
    for (size_t i = 0; d && i < n; i++) {
        PyObject *k = from_val(c, tpl_val_map_key(v, i)), *x = k ? from_val(c, tpl_val_map_value(v, i)) : NULL;
        if (!x || PyDict_SetItem(d, k, x) < 0) Py_CLEAR(d);
        Py_XDECREF(k);
        Py_XDECREF(x);
    }
    if (!d) return -1;
    PyDict_Clear(o);
    int rc = PyDict_Update(o, d);
    Py_DECREF(d);
    return rc;
}

static void watch_keep(render_ctx *c, PyObject *watch);

/* The lists and dicts Python holds (c->kept: ones the template handed a callable that kept them,
 * ones a callable returned) made equal again to the template's lists and dicts they stand for,
 * where the template changed one since (`{% do l.append(2) %}`, `d.update`): Jinja2's Python code
 * holds the template's own object and sees the change. Before each Python call and when the
 * render ends, only when the template changed a list or dict since the last time
 * (tpl_render_changes). A list inside one that Python holds stays that object (refill). One that
 * Python changed since its snapshot is left as it is (back_sync takes it). -1 with an exception. */
static int kept_sync(render_ctx *c)
{
    uint64_t now = tpl_render_changes(c->r);
    if ((!c->kept && !c->tracked) || now == c->seen_changes) return 0;
    c->seen_changes = now;
    /* (the entries of both lists in one: kept's first) */
    Py_ssize_t nk = c->kept ? PyList_GET_SIZE(c->kept) : 0;
    PyObject *kept = c->kept ? PyList_GetSlice(c->kept, 0, nk) : PyList_New(0);
    if (!kept || (c->tracked && PyList_SetSlice(kept, nk, nk, c->tracked) < 0)) {
        Py_XDECREF(kept);
        return -1;
    }
    PyObject *dirty = NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(kept); i++) {
        PyObject *e = PyList_GET_ITEM(kept, i), *o = PyTuple_GET_ITEM(e, 0);
        tpl_val v;
        if (!entry_val(e, &v) || Py_REFCNT(o) == 1 || entry_changed(e)) continue;
        PyObject *fresh = fresh_copy(c, v);
        if (!fresh) { Py_XDECREF(dirty); Py_DECREF(kept); return -1; }
        int eq = Py_TYPE(fresh) == Py_TYPE(o) ? PyObject_RichCompareBool(o, fresh, Py_EQ) : 1;
        Py_DECREF(fresh);
        if (eq < 0) PyErr_Clear();
        if (eq != 0) continue;
        PyObject *at = PyLong_FromSsize_t(i);
        if (!at || ((!dirty && !(dirty = PyList_New(0))) || PyList_Append(dirty, at) < 0)) {
            Py_XDECREF(at);
            Py_XDECREF(dirty);
            Py_DECREF(kept);
            return -1;
        }
        Py_DECREF(at);
    }
    if (!dirty) { Py_DECREF(kept); return 0; }
    /* the kept objects by their template values, for refill's conversions (new lists and dicts
     * it makes go to its own watch, kept after) */
    PyObject *memo = c->memo, *watch = c->watch;
    bool on = c->watch_on;
    int rc = -1;
    c->memo = PyDict_New();
    c->watch = NULL;
    c->watch_on = true;
    for (Py_ssize_t i = 0; c->memo && i < PyList_GET_SIZE(kept); i++) {
        PyObject *e = PyList_GET_ITEM(kept, i);
        if (PyBytes_Check(PyTuple_GET_ITEM(e, 2)) && PyDict_SetItem(c->memo, PyTuple_GET_ITEM(e, 2), PyTuple_GET_ITEM(e, 0)) < 0)
            goto done;
    }
    for (Py_ssize_t j = 0; c->memo && j < PyList_GET_SIZE(dirty); j++) {
        Py_ssize_t i = PyLong_AsSsize_t(PyList_GET_ITEM(dirty, j));
        PyObject *e = PyList_GET_ITEM(kept, i);
        tpl_val v;
        if (!entry_val(e, &v)) continue;   /* (a dirty entry has its value: the scan above took only those) */
        if (refill(c, PyTuple_GET_ITEM(e, 0), v) < 0) goto done;
    }
    for (Py_ssize_t j = 0; c->memo && j < PyList_GET_SIZE(dirty); j++) {
        Py_ssize_t i = PyLong_AsSsize_t(PyList_GET_ITEM(dirty, j));
        PyObject *t = entry_renewed(PyList_GET_ITEM(kept, i));
        if (!t || PyList_SetItem(i < nk ? c->kept : c->tracked, i < nk ? i : i - nk, t) < 0) goto done;
    }
    rc = c->memo ? 0 : -1;
done:
    Py_XDECREF(c->memo);
    PyObject *made = c->watch;
    c->memo = memo;
    c->watch = watch;
    c->watch_on = on;
    Py_DECREF(dirty);
    Py_DECREF(kept);
    if (rc == 0) watch_keep(c, made);
    else Py_XDECREF(made);
    return rc;
}


/* The lists and dicts of entries (a watch or c->kept) that Python changed since their snapshots
 * (a callable appended to a list the template handed it, or to one it returned earlier) made the
 * template's too: the template's list or dict holds the items Python's holds now, in place
 * (tpl_render_assign), so each of its holders sees them, as Jinja2's one object. One the render
 * did not make (the state's: a list the host passed in) stays refused: -1 with a
 * NotImplementedError naming it; -1 with an exception on other failures. */
static int back_sync(render_ctx *c, PyObject *entries, Py_ssize_t limit, PyObject *who)
{
    Py_ssize_t n = PyList_GET_SIZE(entries);
    for (Py_ssize_t i = n - 1; i >= 0 && i >= n - limit; i--) {
        PyObject *e = PyList_GET_ITEM(entries, i), *o = PyTuple_GET_ITEM(e, 0);
        tpl_val v, now;
        if (!entry_changed(e)) continue;
        const char *save = c->what;
        c->what = "a list or dict a Python callable changed";
        int rc = entry_val(e, &v) ? to_val(c, o, &now) : 1;
        c->what = save;
        if (rc < 0) return -1;
        if (rc > 0 || tpl_render_assign(c->r, v, now) != TPL_OK) {
            PyObject *shown = PyObject_Repr(o);
            /* (the callable named by its __qualname__ when it has one: the filter or global) */
            PyObject *name = who ? PyObject_GetAttrString(who, "__qualname__") : NULL;
            if (!name || !PyUnicode_Check(name)) {
                PyErr_Clear();
                Py_XDECREF(name);
                name = who ? PyObject_Repr(who) : NULL;
            }
            if (!name) PyErr_Clear();
            PyErr_Format(PyExc_NotImplementedError,
                         "tpl: a Python callable changed a %s the template holds (%S; now %.200U): tpl hands callables "
                         "a copy of the state's lists and dicts, so the template would not see the change (Jinja2's "
                         "would)", PyList_Check(o) ? "list" : "dict", name ? name : Py_None, shown ? shown : Py_None);
            Py_XDECREF(name);
            Py_XDECREF(shown);
            return -1;
        }
        PyObject *t = entry_renewed(e);
        if (!t || PyList_SetItem(entries, i, t) < 0) return -1;
    }
    return 0;
}


/* The newest entry of c->tracked (its newest KEPT_SCAN) or c->kept for the Python object o
 * (borrowed), or NULL. */
static PyObject *kept_entry(const render_ctx *c, PyObject *o)
{
    Py_ssize_t n = c->tracked ? PyList_GET_SIZE(c->tracked) : 0;
    for (Py_ssize_t i = n - 1; i >= 0 && i >= n - KEPT_SCAN; i--)
        if (PyTuple_GET_ITEM(PyList_GET_ITEM(c->tracked, i), 0) == o) return PyList_GET_ITEM(c->tracked, i);
    n = c->kept ? PyList_GET_SIZE(c->kept) : 0;
    for (Py_ssize_t i = n - 1; i >= 0; i--)
        if (PyTuple_GET_ITEM(PyList_GET_ITEM(c->kept, i), 0) == o) return PyList_GET_ITEM(c->kept, i);
    return NULL;
}

/* A Python callable's result o, converted to the template's v: each list or dict in it that
 * Python holds elsewhere (shared: o itself when its count shows a reference besides the
 * caller's; inside, one with a reference besides its container's, or any inside a shared one)
 * recorded in c->kept, so that what the template does to it reaches Python's object (kept_sync),
 * what Python does to it later reaches the template's (back_sync), and the template handing it
 * back hands that object (kept_reuse), as Jinja2's template holds Python's object itself. */
static int track(render_ctx *c, PyObject *o, tpl_val v, bool shared, int depth)
{
    bool list = PyList_CheckExact(o), dict = PyDict_CheckExact(o), tup = PyTuple_CheckExact(o);
    if ((!list && !dict && !tup) || depth > 64 || c->track_left <= 0) return 0;
    tpl_val_kind k = tpl_val_kind_of(v);
    if (k != (list ? TPL_VAL_LIST : dict ? TPL_VAL_MAP : TPL_VAL_TUPLE)) return 0;
    Py_ssize_t n = dict ? PyDict_GET_SIZE(o) : PySequence_Fast_GET_SIZE(o);
    if ((size_t)n != tpl_val_len(v)) return 0;
    if (shared && !tup && !kept_entry(c, o)) {
        PyObject *key = PyBytes_FromStringAndSize((const char *)&v, (Py_ssize_t)sizeof v);
        PyObject *snap = !key ? NULL : list ? PyList_GetSlice(o, 0, PY_SSIZE_T_MAX) : PyDict_Items(o);
        PyObject *t = snap ? PyTuple_Pack(4, o, snap, key, Py_True) : NULL; /* (4: a result's) */
        Py_XDECREF(key);
        Py_XDECREF(snap);
        if (!t || ((!c->tracked && !(c->tracked = PyList_New(0))) || PyList_Append(c->tracked, t) < 0)) {
            Py_XDECREF(t);
            return -1;
        }
        Py_DECREF(t);
        if (--c->track_left <= 0) return 0;
    }
    if (!dict) {
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *x = PySequence_Fast_ITEMS(o)[i];
            if ((PyList_CheckExact(x) || PyDict_CheckExact(x) || PyTuple_CheckExact(x)) &&
                track(c, x, tpl_val_item(v, (size_t)i), shared || Py_REFCNT(x) > 1, depth + 1) < 0)
                return -1;
            if (c->track_left <= 0) return 0;
        }
        return 0;
    }
    Py_ssize_t pos = 0, i = 0;
    PyObject *kk, *x;
    while (PyDict_Next(o, &pos, &kk, &x)) {
        if ((PyList_CheckExact(x) || PyDict_CheckExact(x) || PyTuple_CheckExact(x)) &&
            track(c, x, tpl_val_map_value(v, (size_t)i), shared || Py_REFCNT(x) > 1, depth + 1) < 0)
            return -1;
        if (c->track_left <= 0) return 0;
        i++;
    }
    return 0;
}

/* from_val for a value of its kind alone (a list's items, a map's entries through from_val). */
static PyObject *plain_from_val(render_ctx *c, tpl_val v)
{
    size_t n;
    const char *s;
    switch (tpl_val_kind_of(v)) {
    case TPL_VAL_UNDEFINED:
        if (c && c->undefined) {
            s = tpl_val_as_str(v, &n);
            PyObject *kw = Py_BuildValue("{s:s#}", "name", s ? s : "", (Py_ssize_t)(s ? n : 0)), *a = PyTuple_New(0);
            PyObject *u = kw && a ? PyObject_Call(c->undefined, a, kw) : NULL;
            Py_XDECREF(kw);
            Py_XDECREF(a);
            return u;
        }
        Py_RETURN_NONE;
    case TPL_VAL_NONE: case TPL_VAL_OTHER: Py_RETURN_NONE;
    case TPL_VAL_BOOL: return PyBool_FromLong(tpl_val_as_bool(v));
    case TPL_VAL_INT: return PyLong_FromLongLong(tpl_val_as_int(v));
    case TPL_VAL_BIGINT: return big_from_val(v);
    case TPL_VAL_RATIONAL: { /* (an ERB Rational) fractions.Fraction("NUM/DEN") */
        s = tpl_val_as_str(v, &n);
        PyObject *mod = PyImport_ImportModule("fractions");
        PyObject *f = mod ? PyObject_CallMethod(mod, "Fraction", "s#", s, (Py_ssize_t)n) : NULL;
        Py_XDECREF(mod);
        return f;
    }
    case TPL_VAL_FLOAT: return PyFloat_FromDouble(tpl_val_as_float(v));
    case TPL_VAL_STR:
        s = tpl_val_as_str(v, &n);
        if (c && c->markup && tpl_val_is_markup(v)) {
            PyObject *str = PyUnicode_DecodeUTF8(s, (Py_ssize_t)n, "strict");
            PyObject *m = str ? PyObject_CallOneArg(c->markup, str) : NULL;
            Py_XDECREF(str);
            return m;
        }
        return PyUnicode_DecodeUTF8(s, (Py_ssize_t)n, "strict");
    case TPL_VAL_LIST: case TPL_VAL_TUPLE: {
        n = tpl_val_len(v);
        bool tup = tpl_val_kind_of(v) == TPL_VAL_TUPLE;
        PyObject *key = NULL;
        if (!tup && c && c->watch_on) {
            PyObject *l = memo_get(c, v, &key);
            if (l || !key) return l;
        }
        PyObject *l = tup ? PyTuple_New((Py_ssize_t)n) : PyList_New((Py_ssize_t)n);
        if (!l) { Py_XDECREF(key); return NULL; }
        if (key) { /* (before its items: a list holding itself is itself) */
            PyObject *k = kept_reuse(c, v, key);
            if (k || PyErr_Occurred()) { Py_DECREF(l); Py_DECREF(key); return k; }
            for (size_t i = 0; i < n; i++) { Py_INCREF(Py_None); PyList_SET_ITEM(l, (Py_ssize_t)i, Py_None); }
            if (PyDict_SetItem(c->memo, key, l) < 0) { Py_DECREF(l); Py_DECREF(key); return NULL; }
        }
        for (size_t i = 0; i < n; i++) {
            PyObject *x = from_val(c, tpl_val_item(v, i));
            if (!x) { Py_DECREF(l); Py_XDECREF(key); return NULL; }
            if (tup) PyTuple_SET_ITEM(l, (Py_ssize_t)i, x);
            else PyList_SetItem(l, (Py_ssize_t)i, x);
        }
        if (!tup && c && c->watch_on && watch_add(c, l, PyList_GetSlice(l, 0, (Py_ssize_t)n), key) < 0) Py_CLEAR(l);
        Py_XDECREF(key);
        return l;
    }
    case TPL_VAL_MAP: {
        PyObject *key = NULL;
        if (c && c->watch_on) {
            PyObject *d = memo_get(c, v, &key);
            if (d || !key) return d;
        }
        if (key) {
            PyObject *k = kept_reuse(c, v, key);
            if (k || PyErr_Occurred()) { Py_DECREF(key); return k; }
        }
        PyObject *d = PyDict_New();
        if (d && key && PyDict_SetItem(c->memo, key, d) < 0) Py_CLEAR(d);
        n = tpl_val_len(v);
        for (size_t i = 0; d && i < n; i++) {
            PyObject *k = from_val(c, tpl_val_map_key(v, i)), *x = from_val(c, tpl_val_map_value(v, i));
            if (!k || !x || PyDict_SetItem(d, k, x) < 0) Py_CLEAR(d);
            Py_XDECREF(k);
            Py_XDECREF(x);
        }
        if (d && c && c->watch_on && watch_add(c, d, PyDict_Items(d), key) < 0) Py_CLEAR(d);
        Py_XDECREF(key);
        return d;
    }
    case TPL_VAL_HOST: {
        pyobj *h = tpl_val_host_object(v);
        if (tpl_val_host_class(v) != &py_class || !h) Py_RETURN_NONE;
        Py_INCREF(h->o);
        return h->o;
    }
    }
    Py_RETURN_NONE;
}

/* The result of a callback that produced r (new reference) or failed (NULL); what names it in
 * conversion errors ("a Python callable's result"). */
static tpl_host_result deliver(render_ctx *c, PyObject *res, tpl_val *out, const char *what)
{
    if (!res) { fail_with_exception(c); return TPL_HOST_ERROR; }
    const char *save = c->what;
    c->what = what;
    int rc = to_val(c, res, out);
    c->what = save;
    Py_DECREF(res);
    if (rc < 0) { fail_with_exception(c); return TPL_HOST_ERROR; }
    return TPL_HOST_OK;
}

/* deliver for a Python callable's result res (new reference): a list or dict Python holds from
 * earlier (c->kept, unchanged since its snapshot: back_sync made the template's equal) is the
 * template's same value again (`get() is get()`, a change through one seen through the other);
 * else converted, and its lists and dicts that Python holds tracked (track). */
static tpl_host_result deliver_result(render_ctx *c, PyObject *res, tpl_val *out)
{
    if (!res) return deliver(c, res, out, "a Python callable's result"); /* (it raised) */
    PyObject *e = (PyList_CheckExact(res) || PyDict_CheckExact(res)) ? kept_entry(c, res) : NULL;
    if (e && !entry_changed(e) && entry_val(e, out)) {
        Py_DECREF(res);
        return TPL_HOST_OK;
    }
    bool shared = Py_REFCNT(res) > 1; /* (besides the reference the call returned) */
    Py_INCREF(res);
    tpl_host_result rc = deliver(c, res, out, "a Python callable's result");
    c->track_left = TRACKED_MAX;
    if (rc == TPL_HOST_OK && track(c, res, *out, shared, 0) < 0) {
        fail_with_exception(c);
        rc = TPL_HOST_ERROR;
    }
    Py_DECREF(res);
    return rc;
}

/* Missing on the given exception kinds (Jinja2's getattr/getitem fall through), else failure. */
static tpl_host_result missing_or_fail(render_ctx *c, PyObject *kind1, PyObject *kind2)
{
    if (PyErr_ExceptionMatches(kind1) || (kind2 && PyErr_ExceptionMatches(kind2))) {
        PyErr_Clear();
        return TPL_HOST_MISSING;
    }
    fail_with_exception(c);
    return TPL_HOST_ERROR;
}

/* tpl.jinja2 (c->undefined): the undefined value Jinja2's Environment.getattr/getitem make for a
 * missing attribute or item of o (key: the name, or the item's key), naming o's class as
 * Jinja2's object_type_repr does ("'__main__.Foo object' has no attribute 'x'"), in place of the
 * VM's own miss (which cannot name a Python class). The exception of the miss is cleared. */
static tpl_host_result py_missing(render_ctx *c, PyObject *o, PyObject *key, tpl_val *out)
{
    PyErr_Clear();
    PyObject *mod = PyImport_ImportModule("tpl.jinja2");
    PyObject *owner = mod ? PyObject_CallMethod(mod, "object_type_repr", "O", o) : NULL;
    bool item = !PyUnicode_Check(key);
    PyObject *name = item ? PyObject_Repr(key) : (Py_INCREF(key), key);
    Py_XDECREF(mod);
    Py_ssize_t on, nn;
    const char *ou = owner && PyUnicode_Check(owner) ? PyUnicode_AsUTF8AndSize(owner, &on) : NULL;
    const char *nu = ou && name ? PyUnicode_AsUTF8AndSize(name, &nn) : NULL;
    tpl_host_result rc = TPL_HOST_OK;
    if (!nu || check(tpl_val_undefined_missing(c->r, ou, (size_t)on, nu, (size_t)nn, item, out)) < 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "object_type_repr() must return a str");
        fail_with_exception(c);
        rc = TPL_HOST_ERROR;
    }
    Py_XDECREF(owner);
    Py_XDECREF(name);
    return rc;
}

/* getattr; a miss (AttributeError) is, under tpl.jinja2, the undefined naming the class
 * (py_missing: the VM then tries the item, as Jinja2's Environment.getattr, and keeps this
 * undefined when that misses too; the attr filter keeps it at once), else TPL_HOST_MISSING. */
static tpl_host_result py_getattr(void *obj, tpl_render *r, const char *name, size_t len, tpl_val *out)
{
    pyobj *h = obj;
    (void)r;
    gil_in(h->c);
    SYNC_IN(h);
    tpl_host_result rc;
    PyObject *n = PyUnicode_DecodeUTF8(name, (Py_ssize_t)len, "strict");
    PyObject *res = n ? PyObject_GetAttr(h->o, n) : NULL;
    if (!res && n && h->c->undefined && PyErr_ExceptionMatches(PyExc_AttributeError))
        rc = py_missing(h->c, h->o, n, out);
    else if (!res) rc = missing_or_fail(h->c, PyExc_AttributeError, NULL);
    else rc = deliver(h->c, res, out, "an attribute's value");
    Py_XDECREF(n);
    gil_out(h->c);
    return rc;
}

/* the item; a miss (LookupError, TypeError; under tpl.jinja2 AttributeError too, as Jinja2's
 * Environment.getitem) is, under tpl.jinja2, the undefined naming the class (py_missing: the VM
 * then tries the attribute of a str key), else TPL_HOST_MISSING. */
static tpl_host_result py_getitem(void *obj, tpl_render *r, tpl_val key, tpl_val *out)
{
    pyobj *h = obj;
    (void)r;
    gil_in(h->c);
    SYNC_IN(h);
    tpl_host_result rc;
    PyObject *k = from_val(h->c, key);
    PyObject *res = k ? PyObject_GetItem(h->o, k) : NULL;
    if (!res && k && h->c->undefined &&
        (PyErr_ExceptionMatches(PyExc_TypeError) || PyErr_ExceptionMatches(PyExc_LookupError) ||
         PyErr_ExceptionMatches(PyExc_AttributeError)))
        rc = py_missing(h->c, h->o, k, out);
    else if (!res) rc = missing_or_fail(h->c, PyExc_LookupError, PyExc_TypeError);
    else rc = deliver(h->c, res, out, "an item's value");
    Py_XDECREF(k);
    gil_out(h->c);
    return rc;
}

/* The most bytes an iterable is drained to under these limits (NULL or 0: the default 256 MiB):
 * the render's memory limit (iter_list counts each item's cost against it). */
/* The fuel an item of a Python iterator costs (runtime/host.c's HOST_ITEM_FUEL: the VM charges it
 * for each item of a one-shot iterator it takes; an iterable drained whole here counts its items
 * against the same budget, max_iter_items). */
#define ITEM_FUEL 100
#define DEFAULT_FUEL 20000000ull

/* The exception of an iterable drained past max_iter_items (n items), set: tpl's LimitError, under
 * tpl.jinja2 (c->undefined) its TemplateRuntimeError (what the VM's fuel error becomes there). */
static void limit_error(const render_ctx *c, Py_ssize_t n, uint64_t max)
{
    PyObject *mod = PyImport_ImportModule(c->undefined ? "tpl.jinja2" : "tpl");
    PyObject *cls = mod ? PyObject_GetAttrString(mod, c->undefined ? "TemplateRuntimeError" : "LimitError") : NULL;
    Py_XDECREF(mod);
    if (!cls) return;
    PyObject *msg = PyUnicode_FromFormat("fuel exhausted (more than %llu instructions): an iterable's items cost %d "
                                         "each, and it had more than %llu (item %zd)",
                                         (unsigned long long)(max * ITEM_FUEL), ITEM_FUEL, (unsigned long long)max, n);
    if (msg) PyErr_SetObject(cls, msg);
    Py_XDECREF(msg);
    Py_DECREF(cls);
}

static uint64_t max_iter_bytes(const tpl_limits *lim)
{
    return lim && lim->max_memory ? lim->max_memory : TPL_DEFAULT_MAX_MEMORY;
}

/* What one drained item costs at least: its slot in the list (8 bytes), its value in the render's
 * arena (16), the object itself (its type's size, and a str's or bytes' characters, which the
 * render copies). An object yielded again is counted again: an estimate from above. */
static uint64_t item_cost(PyObject *o)
{
    PyTypeObject *t = Py_TYPE(o);
    uint64_t n = 8 + 16 + (uint64_t)t->tp_basicsize;
    if (t->tp_itemsize) {
        Py_ssize_t k = Py_SIZE(o);
        n += (uint64_t)(k < 0 ? -k : k) * (uint64_t)t->tp_itemsize;
    }
    if (PyUnicode_Check(o)) n += (uint64_t)PyUnicode_GET_LENGTH(o);
    return n;
}

static uint64_t max_iter_items(const tpl_limits *lim)
{
    return (lim && lim->fuel ? lim->fuel : DEFAULT_FUEL) / ITEM_FUEL;
}

/* The items of an iterable as a list value (MISSING when o is not iterable). */
static tpl_host_result iter_list(render_ctx *c, PyObject *o, tpl_val *out)
{
    PyObject *it = PyObject_GetIter(o);
    if (!it) return missing_or_fail(c, PyExc_TypeError, NULL);
    /* Drained item by item, not with PySequence_List: an endless iterator (iter(int, 1), a
     * generator that never returns) stops when its items' cost (item_cost: the list, the values
     * the render makes, the objects) passes the render's memory limit, with a MemoryError,
     * instead of filling the process (counting items, 16 bytes each, it took 650 MB and 19 s); and
     * when their number passes what the render's fuel pays for (max_iter_items: 200,000 items
     * under the default fuel, a fraction of a second, where the memory limit took millions and
     * seconds), with tpl's LimitError. */
    PyObject *l = PyList_New(0), *item;
    uint64_t cost = 0;
    while (l && (item = PyIter_Next(it))) {
        cost += item_cost(item);
        int bad = PyList_Append(l, item);
        Py_DECREF(item);
        if (bad < 0) Py_CLEAR(l);
        else if (cost > c->max_iter_bytes) {
            PyErr_Format(PyExc_MemoryError,
                         "tpl: an iterable past the render's memory limit (%llu bytes) at item %zd",
                         (unsigned long long)c->max_iter_bytes, PyList_GET_SIZE(l));
            Py_CLEAR(l);
        } else if ((uint64_t)PyList_GET_SIZE(l) > c->max_iter_items) {
            limit_error(c, PyList_GET_SIZE(l), c->max_iter_items);
            Py_CLEAR(l);
        }
    }
    Py_DECREF(it);
    if (l && PyErr_Occurred()) Py_CLEAR(l);
    if (!l) { fail_with_exception(c); return TPL_HOST_ERROR; }
    int kept = keep(c, l);
    Py_DECREF(l);
    if (kept < 0) { fail_with_exception(c); return TPL_HOST_ERROR; }
    const char *save = c->what;
    c->what = "an iterated object's items";
    int rc = seq_val(c, l, 0, out);
    c->what = save;
    if (rc < 0) { fail_with_exception(c); return TPL_HOST_ERROR; }
    return TPL_HOST_OK;
}

/* tpl.jinja2's one-shot iterator (TPL_HOST_ITERATOR: a generator, map(), iter(list)): its next
 * item (MISSING: exhausted). The VM asks for each item it takes, when it takes it (a loop's next
 * item as the loop reaches it, |first one), as Jinja2's template pulls from the generator: a
 * generator whose items depend on what the loop body did sees it done. The items taken stay
 * within the render's memory limit as iter_list's do (an endless generator read whole,
 * `gen|list`, is a MemoryError). */
static tpl_host_result iter_next(pyobj *h, tpl_val *out)
{
    render_ctx *c = h->c;
    PyObject *item = PyIter_Next(h->o);
    if (!item) {
        if (!PyErr_Occurred()) return TPL_HOST_MISSING;
        fail_with_exception(c);
        return TPL_HOST_ERROR;
    }
    h->cost += item_cost(item);
    h->taken++;
    int rc = 0;
    if (h->cost > c->max_iter_bytes) {
        PyErr_Format(PyExc_MemoryError, "tpl: an iterable past the render's memory limit (%llu bytes) at item %zd",
                     (unsigned long long)c->max_iter_bytes, h->taken);
        rc = -1;
    } else if (!PyLong_CheckExact(item) && !PyFloat_CheckExact(item) && item != Py_None && !PyBool_Check(item)) {
        rc = keep(c, item); /* (its value may borrow from it until the render ends) */
    }
    if (rc == 0) {
        const char *save = c->what;
        c->what = "an iterated object's items";
        rc = to_val(c, item, out);
        c->what = save;
    }
    Py_DECREF(item);
    if (rc < 0) { fail_with_exception(c); return TPL_HOST_ERROR; }
    return TPL_HOST_OK;
}

static tpl_host_result py_iter(void *obj, tpl_render *r, tpl_val *out)
{
    pyobj *h = obj;
    (void)r;
    gil_in(h->c);
    SYNC_IN(h);
    tpl_host_result rc = h->numeric & TPL_HOST_ITERATOR ? iter_next(h, out) : iter_list(h->c, h->o, out);
    gil_out(h->c);
    return rc;
}

static tpl_host_result py_len(void *obj, tpl_render *r, int64_t *out)
{
    pyobj *h = obj;
    (void)r;
    gil_in(h->c);
    SYNC_IN(h);
    tpl_host_result rc = TPL_HOST_OK;
    Py_ssize_t n = PyObject_Length(h->o);
    if (n < 0 && h->c->undefined && one_shot(h->o) &&
        PyErr_ExceptionMatches(PyExc_TypeError)) {
        /* tpl.jinja2: a one-shot iterator (a generator, map(), iter(list)) has no len(): Jinja2's
         * |length is Python's TypeError, not a count that drains it */
        fail_with_exception(h->c);
        rc = TPL_HOST_ERROR;
    } else if (n < 0) rc = missing_or_fail(h->c, PyExc_TypeError, NULL);
    else *out = n;
    gil_out(h->c);
    return rc;
}

/* ---- the render arguments' lists and dicts, watched while Python code runs
 *
 * The render converted its arguments when it started (a copy): a Python callable that changes
 * one of their lists or dicts in place (a global or filter closing over the dict given to
 * render, `d["items"].append(x)`) changes what Jinja2's template would read next, not what tpl's
 * reads. So a render that can call Python records them (state_snap: each list's length and items,
 * a long one's ends and 64 of them; each dict's version tag on CPython 3.11, else its items; the
 * containers inside, up to SNAP_ITEMS items in all) and checks them after each call
 * (state_moved): a change is a NotImplementedError naming the callable and the argument. */
#define SNAP_ITEMS 4096
#define SNAP_LONG 1024 /* a longer list or tuple is recorded by its ends and SNAP_SAMPLE items */
#define SNAP_SAMPLE 64

typedef struct sdep {
    PyObject *o, *name;     /* a list or dict (borrowed: held by the keep array); the argument's name */
    Py_ssize_t n, step;     /* its length then; the recorded positions' step (1: all) */
    uint64_t tag;           /* a dict's version tag (CPython 3.11) */
    size_t at, m;           /* its m recorded items in c->si from at (a dict's: key, value pairs) */
} sdep;

static int snap_room(render_ctx *c, size_t items)
{
    if (c->nsd == c->capsd) {
        size_t cap = c->capsd ? 2 * c->capsd : 16;
        sdep *d = PyMem_Realloc(c->sd, cap * sizeof *d);
        if (!d) return -1;
        c->sd = d;
        c->capsd = cap;
    }
    if (c->capsi - c->nsi < items) {
        size_t cap = c->nsi + items + 64;
        PyObject **x = PyMem_Realloc(c->si, cap * sizeof *x);
        if (!x) return -1;
        c->si = x;
        c->capsi = cap;
    }
    return 0;
}

/* Records o (a state value, or one inside it) and what it holds: 0, or -1 with an exception. */
static int snap_walk(render_ctx *c, PyObject *o, PyObject *name, int depth)
{
    PyTypeObject *t = Py_TYPE(o);
    if ((t != &PyList_Type && t != &PyDict_Type && t != &PyTuple_Type) || depth > 64 || c->nsi >= SNAP_ITEMS)
        return 0;
    if (t == &PyDict_Type) {
        Py_ssize_t n = PyDict_GET_SIZE(o), pos = 0;
        size_t m = HAVE_CACHE ? 0 : 2 * (size_t)n;
        if (snap_room(c, m) < 0 || keep(c, o) < 0) return PyErr_NoMemory(), -1;
        c->sd[c->nsd++] = (sdep){ o, name, n, 1, DICT_VERSION(o), c->nsi, m };
        PyObject *k, *v;
        while (PyDict_Next(o, &pos, &k, &v)) {
            if (!HAVE_CACHE) {
                c->si[c->nsi++] = k;
                c->si[c->nsi++] = v;
                if (keep(c, k) < 0 || keep(c, v) < 0) return PyErr_NoMemory(), -1;
            }
            if (snap_walk(c, v, name, depth + 1) < 0) return -1;
        }
        return 0;
    }
    Py_ssize_t n = Py_SIZE(o), step = n > SNAP_LONG ? n / SNAP_SAMPLE : 1;
    PyObject **items = PySequence_Fast_ITEMS(o);
    if (t == &PyList_Type) { /* (a tuple's items cannot change: only what they hold is recorded) */
        size_t m = (size_t)((n + step - 1) / step) + 1;
        if (snap_room(c, m) < 0 || keep(c, o) < 0) return PyErr_NoMemory(), -1;
        size_t at = c->nsi;
        for (Py_ssize_t i = 0; i < n; i += step) c->si[c->nsi++] = items[i];
        c->si[c->nsi++] = n ? items[n - 1] : NULL;
        for (size_t i = at; i < c->nsi; i++)
            if (c->si[i] && keep(c, c->si[i]) < 0) return PyErr_NoMemory(), -1;
        c->sd[c->nsd++] = (sdep){ o, name, n, step, 0, at, c->nsi - at };
    }
    for (Py_ssize_t i = 0; i < n; i += step)
        if (snap_walk(c, items[i], name, depth + 1) < 0) return -1;
    return 0;
}

/* Records the render arguments' lists and dicts (state: the render's mapping, a dict). */
static int state_snap(ProgramObject *self, render_ctx *c, PyObject *state)
{
    c->nsd = c->nsi = 0;
    if (self->all_state) {
        Py_ssize_t pos = 0;
        PyObject *k, *v;
        while (PyDict_Next(state, &pos, &k, &v))
            if (snap_walk(c, v, k, 0) < 0) return -1;
        return 0;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(self->reads); i++) {
        PyObject *name = PyTuple_GET_ITEM(self->reads, i), *v = PyDict_GetItemWithError(state, name);
        if (!v) {
            if (PyErr_Occurred()) return -1;
            continue;
        }
        if (snap_walk(c, v, name, 0) < 0) return -1;
    }
    return 0;
}

/* The recorded list or dict that changed since state_snap, or NULL. */
static const sdep *state_moved(const render_ctx *c)
{
    for (size_t i = 0; i < c->nsd; i++) {
        const sdep *d = &c->sd[i];
        PyObject *const *was = c->si + d->at;
        if (PyDict_CheckExact(d->o)) {
            if (PyDict_GET_SIZE(d->o) != d->n) return d;
            if (HAVE_CACHE) {
                if (DICT_VERSION(d->o) != d->tag) return d;
                continue;
            }
            Py_ssize_t pos = 0, j = 0;
            PyObject *k, *v;
            while (PyDict_Next(d->o, &pos, &k, &v)) {
                if (was[j] != k || was[j + 1] != v) return d;
                j += 2;
            }
            continue;
        }
        Py_ssize_t n = PyList_GET_SIZE(d->o);
        if (n != d->n) return d;
        PyObject **items = ((PyListObject *)d->o)->ob_item;
        size_t j = 0;
        for (Py_ssize_t k = 0; k < n; k += d->step)
            if (items[k] != was[j++]) return d;
        if ((n ? items[n - 1] : NULL) != was[j]) return d;
    }
    return NULL;
}

/* NotImplementedError naming the callable who and the argument d is in; who NULL: the template
 * changed it, through a list or dict a callable returned (kept_sync made Python's the same). */
static void state_moved_error(const sdep *d, PyObject *who)
{
    if (!who) {
        PyObject *shown = PyObject_Repr(d->o);
        if (!shown) PyErr_Clear();
        PyErr_Format(PyExc_NotImplementedError,
                     "tpl: the template changed a %s of the render argument %R (now %.200U) through what a Python "
                     "callable returned: the template reads a copy of the arguments made when the render started, so "
                     "it would not see the change under that name (Jinja2's would)",
                     PyDict_CheckExact(d->o) ? "dict" : "list", d->name, shown ? shown : Py_None);
        Py_XDECREF(shown);
        return;
    }
    PyObject *name = who ? PyObject_GetAttrString(who, "__qualname__") : NULL;
    if (!name || !PyUnicode_Check(name)) {
        PyErr_Clear();
        Py_XDECREF(name);
        name = who ? PyObject_Repr(who) : NULL;
    }
    if (!name) PyErr_Clear();
    PyObject *shown = PyObject_Repr(d->o);
    if (!shown) PyErr_Clear();
    PyErr_Format(PyExc_NotImplementedError,
                 "tpl: the Python callable %S changed a %s of the render argument %R (now %.200U): the template "
                 "reads a copy of the arguments made when the render started, so it would not see the change "
                 "(Jinja2's would); change a value the template made ({%% set %%}), an object's attribute, or "
                 "pass the result back instead", name ? name : Py_None, PyDict_CheckExact(d->o) ? "dict" : "list",
                 d->name, shown ? shown : Py_None);
    Py_XDECREF(name);
    Py_XDECREF(shown);
}

static tpl_host_result py_call(void *obj, tpl_render *r, const tpl_val *args, size_t nargs, const tpl_val *kwn,
                               const tpl_val *kwv, size_t nkw, tpl_val *out)
{
    pyobj *h = obj;
    (void)r;
    gil_in(h->c);
    tpl_host_result rc = TPL_HOST_ERROR;
    PyObject *a = PyTuple_New((Py_ssize_t)nargs), *kw = nkw ? PyDict_New() : NULL;
    bool ok = a && (!nkw || kw), raw = h->c->raw, own = false;
    if (ok && (h->c->kept || h->c->tracked) && kept_sync(h->c) < 0) ok = false;
    const sdep *moved = ok && h->c->nsd && (h->c->kept || h->c->tracked) ? state_moved(h->c) : NULL;
    if (moved) {
        state_moved_error(moved, NULL);
        ok = false;
    }
    if (PyFunction_Check(h->o)) { /* one of tpl.jinja2's own functions (f._tpl_raw = True) */
        PyObject *fd = ((PyFunctionObject *)h->o)->func_dict;
        own = h->c->raw = fd && PyDict_Check(fd) && PyDict_GetItemString(fd, "_tpl_raw");
    }
    PyObject *saved_watch = h->c->watch, *watch, *saved_memo = h->c->memo;
    bool saved_on = h->c->watch_on;
    h->c->watch = NULL;
    h->c->watch_on = !own && !raw;
    h->c->memo = NULL; /* (made at the first list or dict: memo_get) */
    for (size_t i = 0; ok && i < nargs; i++) {
        PyObject *x = from_val(h->c, args[i]);
        if (!x) ok = false;
        else PyTuple_SET_ITEM(a, (Py_ssize_t)i, x);
    }
    for (size_t i = 0; ok && i < nkw; i++) {
        PyObject *k = from_val(h->c, kwn[i]), *x = from_val(h->c, kwv[i]);
        if (!k || !x || PyDict_SetItem(kw, k, x) < 0) ok = false;
        Py_XDECREF(k);
        Py_XDECREF(x);
    }
    h->c->raw = raw;
    watch = h->c->watch;
    h->c->watch = saved_watch;
    h->c->watch_on = saved_on;
    Py_XDECREF(h->c->memo);
    h->c->memo = saved_memo;
    PyObject *res = NULL;
    if (ok && h->c->dispatch && !own) {
        bool was = h->c->dispatching;
        h->c->dispatching = true;
        res = PyObject_CallFunctionObjArgs(h->c->dispatch, h->o, a, kw ? kw : Py_None, NULL);
        h->c->dispatching = was;
    } else if (ok) res = PyObject_Call(h->o, a, kw);
    moved = res && h->c->nsd ? state_moved(h->c) : NULL;
    if (moved) { /* (a render argument's list or dict, changed in place) */
        state_moved_error(moved, h->o);
        Py_CLEAR(res);
        ok = false;
    }
    /* what the callable did to the lists and dicts it was handed, or holds from earlier calls */
    if (res && ((watch && back_sync(h->c, watch, PY_SSIZE_T_MAX, h->o) < 0) ||
                (h->c->kept && back_sync(h->c, h->c->kept, PY_SSIZE_T_MAX, h->o) < 0) ||
                (h->c->tracked && back_sync(h->c, h->c->tracked, TRACKED_MAX, h->o) < 0))) {
        Py_CLEAR(res);
        ok = false;
    }
    if (ok && !res && h->c->undefined && PyErr_ExceptionMatches(PyExc_StopIteration)) {
        /* tpl.jinja2: Jinja2's Context.call makes the value of a call that raised StopIteration
         * undefined ("value was undefined because a callable raised a StopIteration exception") */
        static const char hint[] = "value was undefined because a callable raised a StopIteration exception";
        PyErr_Clear();
        rc = undefined_text_val(h->c, hint, (Py_ssize_t)sizeof hint - 1, true, out) < 0
             ? (fail_with_exception(h->c), TPL_HOST_ERROR) : TPL_HOST_OK;
    } else if (ok) rc = deliver_result(h->c, res, out);
    else fail_with_exception(h->c);
    Py_XDECREF(a);
    Py_XDECREF(kw);
    watch_keep(h->c, watch);
    gil_out(h->c);
    return rc;
}

static tpl_host_result py_truth(void *obj, tpl_render *r, bool *out)
{
    pyobj *h = obj;
    (void)r;
    gil_in(h->c);
    SYNC_IN(h);
    tpl_host_result rc = TPL_HOST_OK;
    int t = PyObject_IsTrue(h->o);
    if (t < 0) { fail_with_exception(h->c); rc = TPL_HOST_ERROR; }
    else *out = t;
    gil_out(h->c);
    return rc;
}

/* obj == other: Python's == (obj.__eq__, then the other side's reflected one), its truth; an
 * exception either raises is the render's (Jinja2 raises it; tpl said False). */
static tpl_host_result py_eq(void *obj, tpl_render *r, tpl_val other, bool *out)
{
    pyobj *h = obj;
    (void)r;
    gil_in(h->c);
    tpl_host_result rc = TPL_HOST_OK;
    PyObject *o = from_val(h->c, other);
    int t = o ? PyObject_RichCompareBool(h->o, o, Py_EQ) : -1;
    Py_XDECREF(o);
    if (t < 0) { fail_with_exception(h->c); rc = TPL_HOST_ERROR; }
    else *out = t;
    gil_out(h->c);
    return rc;
}

static tpl_host_result py_str(void *obj, tpl_render *r, bool repr, tpl_val *out)
{
    pyobj *h = obj;
    (void)r;
    gil_in(h->c);
    SYNC_IN(h);
    tpl_host_result rc;
    PyObject *s = repr ? PyObject_Repr(h->o) : PyObject_Str(h->o);
    if (!s) { fail_with_exception(h->c); rc = TPL_HOST_ERROR; }
    else {
        rc = str_val(h->c, s, 0, out) < 0 ? (fail_with_exception(h->c), TPL_HOST_ERROR) : TPL_HOST_OK;
        Py_DECREF(s);
    }
    gil_out(h->c);
    return rc;
}

/* A finite decimal.Decimal whose integer part has more digits than tpl's integers hold (2^20
 * bits: 315,652 digits): int(obj) would build it digit by digit (Decimal('1e999999999'): hours of
 * CPU, in Jinja2 too) only for tpl to refuse it, so it is refused before (as a Python int that
 * size is: tpl's memory limit). -1 with an exception set when asking it raised. */
static int huge_decimal(PyObject *o)
{
    if (PyLong_Check(o) || PyFloat_Check(o)) return 0;
    PyObject *name = PyUnicode_FromString("decimal");
    PyObject *mod = name ? PyImport_GetModule(name) : NULL; /* not imported: o is no Decimal */
    Py_XDECREF(name);
    if (!mod) return PyErr_Occurred() ? -1 : 0;
    PyObject *cls = PyObject_GetAttrString(mod, "Decimal");
    Py_DECREF(mod);
    if (!cls) return -1;
    int is = PyObject_IsInstance(o, cls);
    Py_DECREF(cls);
    if (is <= 0) return is;
    PyObject *fin = PyObject_CallMethod(o, "is_finite", NULL);
    int f = fin ? PyObject_IsTrue(fin) : -1;
    Py_XDECREF(fin);
    if (f <= 0) return f;
    PyObject *adj = PyObject_CallMethod(o, "adjusted", NULL); /* the exponent of its first digit */
    if (!adj) return -1;
    long long a = PyLong_AsLongLong(adj);
    Py_DECREF(adj);
    if (a == -1 && PyErr_Occurred()) return -1;
    return a >= 315652;
}

/* Jinja2's do_int/do_float of an object: int(obj), else int(float(obj)); float(obj). The
 * exceptions they catch (TypeError, ValueError) make the filter's default; others (an
 * OverflowError: int(Decimal('inf'))) propagate. */
static tpl_host_result py_number(void *obj, tpl_render *r, bool as_float, tpl_val *out)
{
    pyobj *h = obj;
    (void)r;
    gil_in(h->c);
    int huge = as_float ? 0 : huge_decimal(h->o);
    if (huge) {
        if (huge > 0) check(TPL_ERR_LIMIT);
        fail_with_exception(h->c);
        gil_out(h->c);
        return TPL_HOST_ERROR;
    }
    PyObject *n = as_float ? PyNumber_Float(h->o) : PyNumber_Long(h->o);
    if (!n && !as_float && (PyErr_ExceptionMatches(PyExc_TypeError) || PyErr_ExceptionMatches(PyExc_ValueError))) {
        PyErr_Clear();
        PyObject *f = PyNumber_Float(h->o);
        n = f ? PyNumber_Long(f) : NULL;
        Py_XDECREF(f);
    }
    tpl_host_result rc;
    if (!n) {
        bool caught = PyErr_ExceptionMatches(PyExc_TypeError) || PyErr_ExceptionMatches(PyExc_ValueError);
        rc = caught ? (PyErr_Clear(), TPL_HOST_MISSING) : (fail_with_exception(h->c), TPL_HOST_ERROR);
    } else {
        rc = deliver(h->c, n, out, "a number");
    }
    gil_out(h->c);
    return rc;
}

/* Plain data for builtin filters: a mapping (has keys()) as a dict, an iterable as a list. */
static tpl_host_result py_resolve(void *obj, tpl_render *r, tpl_val *out)
{
    pyobj *h = obj;
    (void)r;
    gil_in(h->c);
    tpl_host_result rc = TPL_HOST_MISSING;
    if (PyCallable_Check(h->o) && !PyObject_HasAttrString(h->o, "__iter__")) {
        rc = TPL_HOST_MISSING;
    } else if (PyMapping_Check(h->o) && PyObject_HasAttrString(h->o, "keys")) {
        PyObject *d = PyDict_New();
        if (d && PyDict_Merge(d, h->o, 1) == 0 && keep(h->c, d) == 0) {
            rc = dict_val(h->c, d, out) < 0 ? (fail_with_exception(h->c), TPL_HOST_ERROR) : TPL_HOST_OK;
        } else {
            fail_with_exception(h->c);
            rc = TPL_HOST_ERROR;
        }
        Py_XDECREF(d);
    } else if (PyObject_HasAttrString(h->o, "__iter__")) {
        rc = iter_list(h->c, h->o, out);
    }
    gil_out(h->c);
    return rc;
}

/* Python's operators on its own numbers (Decimal, Fraction, an int/float subclass with methods:
 * tpl_host_class.arith), as Jinja2 computes them: the operator, round(a, b), and do_round's
 * math.ceil/floor(a * 10**b) / 10**b. What Python raises (a TypeError for Decimal + float, a
 * ZeroDivisionError) propagates as itself. */
/* op "key": the int or float Python hashes number a as (hash(Decimal(1)) == hash(1), and equal
 * numbers hash alike): an int or float equal to a (int(a), else float(a), when a equals it;
 * complex(1, 0) is 1.0), else NotImplemented (a equals no int or float: Decimal('0.1'), 1/3; an
 * object that is not a number: compared by "key==" below). An object Python cannot hash raises as hash(a)
 * does (a class with __eq__ and no __hash__, Decimal('sNaN'): a TypeError, as Jinja2's dict
 * lookup or |unique). */
static PyObject *py_number_key(PyObject *a)
{
    if (PyObject_Hash(a) == -1 && PyErr_Occurred()) return NULL;
    if (!PyNumber_Check(a) && !PyComplex_Check(a)) Py_RETURN_NOTIMPLEMENTED;
    if (PyLong_Check(a)) return PyNumber_Long(a);
    if (PyFloat_Check(a)) return PyFloat_FromDouble(PyFloat_AS_DOUBLE(a));
    if (PyComplex_Check(a)) {
        if (PyComplex_ImagAsDouble(a) != 0.0) Py_RETURN_NOTIMPLEMENTED;
        return PyFloat_FromDouble(PyComplex_RealAsDouble(a));
    }
    for (int i = 0; i < 2; i++) {
        PyObject *n = i == 0 ? PyNumber_Long(a) : PyNumber_Float(a); /* (int(Decimal('inf')) raises: no int) */
        int eq = n ? PyObject_RichCompareBool(a, n, Py_EQ) : -1;
        if (eq == 1) return n;
        Py_XDECREF(n);
        if (eq < 0) PyErr_Clear();
    }
    Py_RETURN_NOTIMPLEMENTED;
}

/* op "key==": a (a dict's key) matches the key b as a dict finds it: hash(a) == hash(b), then
 * a == b (identity first, then __eq__ and its truth: PyObject_RichCompareBool, as CPython's dict
 * lookup); what __eq__ raises propagates. A key that cannot be hashed (a TypeError) matches
 * nothing: tpl asked "key" of it first where Python raises (x in d, d.get(x), {x: 1}, |unique),
 * and Jinja2's d[x] catches the TypeError (undefined). */
static PyObject *py_key_equal(PyObject *a, PyObject *b)
{
    Py_hash_t x = PyObject_Hash(a), y = x == -1 && PyErr_Occurred() ? -1 : PyObject_Hash(b);
    if (y == -1 && PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_TypeError)) return NULL;
        PyErr_Clear();
        Py_RETURN_FALSE;
    }
    if (x != y) Py_RETURN_FALSE;
    int eq = PyObject_RichCompareBool(a, b, Py_EQ);
    return eq < 0 ? NULL : PyBool_FromLong(eq);
}

/* op "find": key a looked up among the keys of the tpl dict m as CPython's dict lookup does:
 * hash(a) once, then for each key k (in order) k is a, or hash(k) == hash(a) and k == a (k's
 * __eq__ first, PyObject_RichCompareBool). *at: the first such key's index, -1 for none (also
 * when a cannot be hashed: tpl asked "key" first where Python raises). -1 with the exception
 * of an __eq__ (or a hash other than a TypeError) that raised. Only the keys are converted. */
static int py_key_find(render_ctx *c, PyObject *a, tpl_val m, int64_t *at)
{
    *at = -1;
    Py_hash_t ha = PyObject_Hash(a);
    if (ha == -1 && PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_TypeError)) return -1;
        PyErr_Clear();
        return 0;
    }
    size_t n = tpl_val_len(m);
    for (size_t i = 0; i < n; i++) {
        PyObject *k = from_val(c, tpl_val_map_key(m, i));
        if (!k) return -1;
        int eq = k == a;
        if (!eq) {
            Py_hash_t hk = PyObject_Hash(k);
            if (hk == -1 && PyErr_Occurred()) {
                if (!PyErr_ExceptionMatches(PyExc_TypeError)) { Py_DECREF(k); return -1; }
                PyErr_Clear();
            } else if (hk == ha) {
                eq = PyObject_RichCompareBool(k, a, Py_EQ);
            }
        }
        Py_DECREF(k);
        if (eq < 0) return -1;
        if (eq) { *at = (int64_t)i; return 0; }
    }
    return 0;
}

static PyObject *py_arith_op(const char *op, PyObject *a, PyObject *b)
{
    switch (op[0]) {
    case 'k': return op[3] == '=' ? py_key_equal(a, b) : py_number_key(a);
    case '+': return PyNumber_Add(a, b);
    case '-': return PyNumber_Subtract(a, b);
    case '*': return op[1] ? PyNumber_Power(a, b, Py_None) : PyNumber_Multiply(a, b);
    case '/': return op[1] ? PyNumber_FloorDivide(a, b) : PyNumber_TrueDivide(a, b);
    case '%': return PyNumber_Remainder(a, b);
    case '=': return PyObject_RichCompare(a, b, Py_EQ);
    case '!': return PyObject_RichCompare(a, b, Py_NE);
    case '<': return PyObject_RichCompare(a, b, op[1] ? Py_LE : Py_LT);
    case '>': return PyObject_RichCompare(a, b, op[1] ? Py_GE : Py_GT);
    case 'n': return PyNumber_Negative(a);
    case 'p': return PyNumber_Positive(a);
    case 'a': return PyNumber_Absolute(a);
    case 'r': { /* round(a, b) */
        PyObject *round = PyDict_GetItemString(PyEval_GetBuiltins(), "round"); /* (borrowed) */
        if (!round) { PyErr_SetString(PyExc_RuntimeError, "tpl: no builtin round"); return NULL; }
        return PyObject_CallFunctionObjArgs(round, a, b, NULL);
    }
    case 'c': case 'f': { /* math.ceil / math.floor (a * 10**b) / 10**b */
        PyObject *ten = PyLong_FromLong(10), *scale = ten ? PyNumber_Power(ten, b, Py_None) : NULL;
        PyObject *m = scale ? PyNumber_Multiply(a, scale) : NULL, *math = m ? PyImport_ImportModule("math") : NULL;
        PyObject *r = math ? PyObject_CallMethod(math, op[0] == 'c' ? "ceil" : "floor", "O", m) : NULL;
        PyObject *res = r ? PyNumber_TrueDivide(r, scale) : NULL;
        Py_XDECREF(ten);
        Py_XDECREF(scale);
        Py_XDECREF(m);
        Py_XDECREF(math);
        Py_XDECREF(r);
        return res;
    }
    }
    Py_RETURN_NOTIMPLEMENTED;
}

static tpl_host_result py_arith(void *obj, tpl_render *r, const char *op, tpl_val a, tpl_val b, tpl_val *out)
{
    pyobj *h = obj;
    (void)r;
    gil_in(h->c);
    tpl_host_result rc = TPL_HOST_MISSING;
    if (strcmp(op, "find") == 0) { /* (b: the dict, whose keys only are read) */
        int64_t at = -1;
        PyObject *k = from_val(h->c, a);
        if (!k || py_key_find(h->c, k, b, &at) < 0) {
            fail_with_exception(h->c);
            rc = TPL_HOST_ERROR;
        } else {
            *out = tpl_val_int(at);
            rc = TPL_HOST_OK;
        }
        Py_XDECREF(k);
        gil_out(h->c);
        return rc;
    }
    PyObject *x = from_val(h->c, a), *y = x ? from_val(h->c, b) : NULL;
    PyObject *res = y ? py_arith_op(op, x, y) : NULL;
    Py_XDECREF(x);
    Py_XDECREF(y);
    if (res == Py_NotImplemented) Py_DECREF(res);
    else rc = deliver(h->c, res, out, "a number");
    gil_out(h->c);
    return rc;
}

/* the object's Python type: its name (as Python's TypeErrors name it) and numeric kinds */
static const char *py_type_of(void *obj, unsigned *numeric)
{
    pyobj *h = obj;
    *numeric = h->numeric;
    return Py_TYPE(h->o)->tp_name;
}

/* markupsafe's __html__ of the object, when it has one (escaping it gives that, as markupsafe.escape) */
static tpl_host_result py_html(void *obj, tpl_render *r, tpl_val *out)
{
    pyobj *h = obj;
    (void)r;
    gil_in(h->c);
    tpl_host_result rc = TPL_HOST_MISSING;
    PyObject *m = PyType_Check(h->o) ? NULL : PyObject_GetAttrString(h->o, "__html__");
    if (!m) PyErr_Clear();
    else {
        PyObject *s = PyObject_CallNoArgs(m);
        Py_DECREF(m);
        if (!s || !PyUnicode_Check(s)) {
            if (s) PyErr_SetString(PyExc_TypeError, "__html__ must return a str");
            fail_with_exception(h->c);
            rc = TPL_HOST_ERROR;
        } else {
            /* (held until the render ends: the VM borrows its UTF-8) */
            rc = keep(h->c, s) < 0 || str_val(h->c, s, TPL_VAL_MARKUP, out) < 0 ? (fail_with_exception(h->c), TPL_HOST_ERROR)
                                                                                : TPL_HOST_OK;
        }
        Py_XDECREF(s);
    }
    gil_out(h->c);
    return rc;
}

static const tpl_host_class py_class = { "object", py_getattr, py_getitem, py_iter, py_len, py_call, py_truth, py_str,
                                         py_resolve, NULL, py_number, py_type_of, py_html, py_eq, py_arith };

/* loader(name) -> str or None (the GIL held): the text as a malloc'd copy (*len set), NULL when
 * it gave no str; what it raised (normalised, with its traceback) into *exc. */
static char *call_loader(PyObject *fn, const char *name, size_t name_len, size_t *len, PyObject **exc)
{
    PyObject *res = PyObject_CallFunction(fn, "s#", name, (Py_ssize_t)name_len);
    if (!res) {
        PyObject *t, *v, *tb;
        PyErr_Fetch(&t, &v, &tb);
        PyErr_NormalizeException(&t, &v, &tb);
        if (tb && v) PyException_SetTraceback(v, tb);
        Py_XDECREF(t);
        Py_XDECREF(tb);
        *exc = v;
        return NULL;
    }
    char *buf = NULL;
    if (PyUnicode_Check(res)) {
        Py_ssize_t n;
        const char *u = PyUnicode_AsUTF8AndSize(res, &n);
        if (u && (buf = malloc((size_t)n + 1))) { memcpy(buf, u, (size_t)n); buf[n] = 0; *len = (size_t)n; }
        if (!u) PyErr_Clear();
    }
    Py_DECREF(res);
    return buf;
}

/* remembers(words) from a Python callable. */
static int py_remembers(void *data, const char *words, size_t len)
{
    render_ctx *c = data;
    gil_in(c);
    int rc = -1;
    PyObject *w = PyUnicode_DecodeUTF8(words, (Py_ssize_t)len, "strict");
    PyObject *res = w ? PyObject_CallOneArg(c->remembers, w) : NULL;
    Py_XDECREF(w);
    if (res) {
        int t = PyObject_IsTrue(res);
        Py_DECREF(res);
        if (t >= 0) rc = t;
    }
    if (rc < 0) fail_with_exception(c);
    gil_out(c);
    return rc;
}

/* ------------------------------------------------------------------ remembers as data
 *
 * remembers given as a list, tuple, set or frozenset of str answers remembers(words) as
 * `words in data` does (equality with one of its strs; words are NFC-normalised by the VM as
 * they are for a callable) in C, without re-taking the GIL. The strs are read when a render
 * starts (the GIL held): a tuple or frozenset once per render context, a list again when its
 * items changed, a set on every render; the render context holds references to them. */

static uint64_t mem_hash(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325u;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 0x100000001b3u;
    return h;
}

static void mem_clear(render_ctx *c)
{
    for (Py_ssize_t i = 0; i < c->nmem; i++) Py_DECREF(c->mem[i].o);
    c->nmem = 0;
    c->mem_ok = false;
    PyMem_Free(c->mem_tab);
    c->mem_tab = NULL;
}

static int mem_add(render_ctx *c, PyObject *s)
{
    if (!PyUnicode_Check(s)) {
        PyErr_Format(PyExc_TypeError, "remembers data must hold str, not %.100s", Py_TYPE(s)->tp_name);
        return -1;
    }
    Py_ssize_t n;
    const char *u = PyUnicode_AsUTF8AndSize(s, &n);
    if (!u) return -1;
    if (c->nmem == c->capmem) {
        Py_ssize_t cap = c->capmem ? 2 * c->capmem : 8;
        mem_item *m = PyMem_Realloc(c->mem, (size_t)cap * sizeof *m);
        if (!m) { PyErr_NoMemory(); return -1; }
        c->mem = m;
        c->capmem = cap;
    }
    Py_INCREF(s);
    c->mem[c->nmem++] = (mem_item){ s, u, (size_t)n, mem_hash(u, (size_t)n) };
    return 0;
}

/* Reads c->remembers (data) into c->mem unless it is known unchanged (the GIL held). */
static int mem_sync(render_ctx *c)
{
    PyObject *o = c->remembers;
    if (c->mem_ok) {
        if (PyTuple_CheckExact(o) || PyFrozenSet_CheckExact(o)) return 0;
        if (PyList_CheckExact(o) && PyList_GET_SIZE(o) == c->nmem) {
            Py_ssize_t i = 0;
            while (i < c->nmem && PyList_GET_ITEM(o, i) == c->mem[i].o) i++;
            if (i == c->nmem) return 0;
        }
    }
    mem_clear(c);
    if (PyList_Check(o) || PyTuple_Check(o)) {
        PyObject *f = PySequence_Fast(o, "remembers");
        if (!f) return -1;
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(f); i++)
            if (mem_add(c, PySequence_Fast_GET_ITEM(f, i)) < 0) { Py_DECREF(f); goto fail; }
        Py_DECREF(f);
    } else {
        PyObject *it = PyObject_GetIter(o), *x;
        if (!it) goto fail;
        while ((x = PyIter_Next(it))) {
            int rc = mem_add(c, x);
            Py_DECREF(x);
            if (rc < 0) { Py_DECREF(it); goto fail; }
        }
        Py_DECREF(it);
        if (PyErr_Occurred()) goto fail;
    }
    if (c->nmem > MEM_LINEAR) {
        size_t tab = 16;
        while (tab < 2 * (size_t)c->nmem) tab *= 2;
        if (!(c->mem_tab = PyMem_Calloc(tab, sizeof *c->mem_tab))) { PyErr_NoMemory(); goto fail; }
        c->mem_mask = (uint32_t)tab - 1;
        for (Py_ssize_t i = 0; i < c->nmem; i++) {
            uint32_t j = (uint32_t)c->mem[i].hash;
            while (c->mem_tab[j & c->mem_mask]) j++;
            c->mem_tab[j & c->mem_mask] = (uint32_t)i + 1;
        }
    }
    c->mem_ok = true;
    return 0;
fail:
    mem_clear(c);
    return -1;
}

/* remembers(words) from the data read by mem_sync: no Python call, the GIL not taken. */
static int mem_remembers(void *data, const char *words, size_t len)
{
    const render_ctx *c = data;
    if (!c->mem_tab) {
        for (Py_ssize_t i = 0; i < c->nmem; i++)
            if (c->mem[i].len == len && !memcmp(c->mem[i].u8, words, len)) return 1;
        return 0;
    }
    uint64_t h = mem_hash(words, len);
    for (uint32_t j = (uint32_t)h;; j++) {
        uint32_t k = c->mem_tab[j & c->mem_mask];
        if (!k) return 0;
        const mem_item *m = &c->mem[k - 1];
        if (m->hash == h && m->len == len && !memcmp(m->u8, words, len)) return 1;
    }
}

/* The render-time loader (tpl_render_set_loader): the Program's loader(name) -> str or None,
 * called with the GIL re-taken; what it raises ends the render and is raised as itself. */
static char *py_render_loader(void *data, const char *name, size_t name_len, size_t *len)
{
    render_ctx *c = data;
    gil_in(c);
    char *buf = c->loader_exc ? NULL : call_loader(c->loader, name, name_len, len, &c->loader_exc);
    gil_out(c);
    return buf;
}

/* tpl_render_set_output's callback of a streaming render: the piece as a str (a UTF-8 sequence
 * the cut split is kept for the next piece) to c->write; stops the render when it returns False
 * or raises (the exception then is the render's: its payload). */
static int py_out_write(void *data, const void *bytes, size_t len)
{
    render_ctx *c = data;
    gil_in(c);
    const char *b = bytes;
    char *joined = NULL;
    if (c->wtail_n) { /* the sequence the last piece cut, then this piece */
        if (!(joined = PyMem_Malloc(len + 4))) {
            PyErr_NoMemory();
            fail_with_exception(c);
            gil_out(c);
            return 1;
        }
        memcpy(joined, c->wtail, (size_t)c->wtail_n);
        memcpy(joined + c->wtail_n, bytes, len);
        b = joined;
        len += (size_t)c->wtail_n;
        c->wtail_n = 0;
    }
    Py_ssize_t used = 0;
    PyObject *str = PyUnicode_DecodeUTF8Stateful(b, (Py_ssize_t)len, "strict", &used);
    int rc = 1;
    if (str) {
        c->wtail_n = (int)((Py_ssize_t)len - used); /* (at most 3: the render's output is UTF-8) */
        if (c->wtail_n > 0 && c->wtail_n <= 3) memcpy(c->wtail, b + used, (size_t)c->wtail_n);
        else c->wtail_n = 0;
        PyObject *r = PyUnicode_GET_LENGTH(str) ? PyObject_CallOneArg(c->write, str) : (Py_INCREF(Py_True), Py_True);
        Py_DECREF(str);
        if (r) rc = r == Py_False ? 1 : 0;
        Py_XDECREF(r);
    }
    if (PyErr_Occurred()) fail_with_exception(c);
    PyMem_Free(joined);
    gil_out(c);
    return rc;
}

/* ------------------------------------------------------------------ settings and slots */

static void settings_clear(settings *s)
{
    Py_CLEAR(s->facts);
    Py_CLEAR(s->remembers);
    Py_CLEAR(s->call);
    Py_CLEAR(s->lang);
    Py_CLEAR(s->catalogs);
    Py_CLEAR(s->tr_keys);
    Py_CLEAR(s->markup);
    Py_CLEAR(s->undefined);
    Py_CLEAR(s->funcs);
    s->has_lim = false;
    memset(&s->lim, 0, sizeof s->lim);
}

/* A tuple of str from a sequence (None: NULL). */
static int str_tuple(PyObject *o, const char *what, PyObject **out)
{
    *out = NULL;
    if (o == Py_None) return 0;
    PyObject *t = PySequence_Tuple(o);
    if (!t) return -1;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(t); i++)
        if (!PyUnicode_Check(PyTuple_GET_ITEM(t, i))) {
            Py_DECREF(t);
            PyErr_Format(PyExc_TypeError, "%s must be a sequence of str", what);
            return -1;
        }
    *out = t;
    return 0;
}

/* Settings from the keyword arguments of render/configure (see Program_render). */
static int settings_parse(settings *s, PyObject *facts, PyObject *remembers, PyObject *call, PyObject *lang,
                          PyObject *catalogs, PyObject *tr_keys, PyObject *limits, PyObject *markup,
                          PyObject *undefined, PyObject *funcs)
{
    memset(s, 0, sizeof *s);
    if (markup != Py_None) { Py_INCREF(markup); s->markup = markup; }
    if (undefined != Py_None) { Py_INCREF(undefined); s->undefined = undefined; }
    if (funcs != Py_None) {
        if (!(s->funcs = PySequence_Tuple(funcs))) goto fail;
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(s->funcs); i++) {
            PyObject *e = PyTuple_GET_ITEM(s->funcs, i);
            if (!PyTuple_Check(e) || PyTuple_GET_SIZE(e) != 3 || !PyUnicode_Check(PyTuple_GET_ITEM(e, 0)) ||
                !PyLong_Check(PyTuple_GET_ITEM(e, 1)) || !PyCallable_Check(PyTuple_GET_ITEM(e, 2))) {
                PyErr_SetString(PyExc_TypeError, "funcs must be (name, kind, callable) tuples");
                goto fail;
            }
        }
    }
    if (str_tuple(facts, "facts", &s->facts) < 0 || str_tuple(catalogs, "catalogs", &s->catalogs) < 0 ||
        str_tuple(tr_keys, "tr_keys", &s->tr_keys) < 0)
        goto fail;
    if (remembers != Py_None) {
        if (!PyCallable_Check(remembers) && !PyList_Check(remembers) && !PyTuple_Check(remembers) &&
            !PyAnySet_Check(remembers)) {
            PyErr_SetString(PyExc_TypeError, "remembers must be callable or a list, tuple, set or frozenset of str");
            goto fail;
        }
        Py_INCREF(remembers);
        s->remembers = remembers;
    }
    if (call != Py_None) {
        const char *ch = NULL, *me = NULL, *cl = NULL;
        if (!PyArg_ParseTuple(call, "zzz", &ch, &me, &cl)) goto fail;
        Py_INCREF(call);
        s->call = call;
    }
    if (lang != Py_None) {
        if (!PyUnicode_Check(lang)) {
            PyErr_SetString(PyExc_TypeError, "lang must be a str");
            goto fail;
        }
        Py_INCREF(lang);
        s->lang = lang;
    }
    if (limits != Py_None) {
        unsigned long long fuel, depth, out, mem;
        if (!PyArg_ParseTuple(limits, "KKKK", &fuel, &depth, &out, &mem)) goto fail;
        s->lim.fuel = fuel;
        s->lim.max_depth = (uint32_t)depth;
        s->lim.max_output = out;
        s->lim.max_memory = mem;
        s->has_lim = true;
    }
    return 0;
fail:
    settings_clear(s);
    return -1;
}

/* Binds the Python callables of funcs ((name, kind, callable) tuples, or NULL: none) as c's
 * host functions: each a host object of py_class called with values (tpl_host_value_fn). */
static int bind_funcs(render_ctx *c, PyObject *funcs)
{
    tpl_render_set_host_funcs(c->r, NULL, 0);
    PyMem_Free(c->hfuncs);
    PyMem_Free(c->hobjs);
    PyMem_Free(c->hblocks);
    c->hfuncs = NULL;
    c->hobjs = NULL;
    c->hblocks = NULL;
    Py_CLEAR(c->funcs);
    if (!funcs || PyTuple_GET_SIZE(funcs) == 0) return 0;
    Py_ssize_t n = PyTuple_GET_SIZE(funcs);
    c->hfuncs = PyMem_Calloc((size_t)n, sizeof *c->hfuncs);
    c->hobjs = PyMem_Calloc((size_t)n, sizeof *c->hobjs);
    c->hblocks = PyMem_Calloc((size_t)n, sizeof *c->hblocks);
    if (!c->hfuncs || !c->hobjs || !c->hblocks) { PyErr_NoMemory(); return -1; }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *e = PyTuple_GET_ITEM(funcs, i);
        const char *name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(e, 0));
        long kind = PyLong_AsLong(PyTuple_GET_ITEM(e, 1));
        if (!name || (kind == -1 && PyErr_Occurred())) return -1;
        c->hblocks[i].o = PyTuple_GET_ITEM(e, 2);
        c->hblocks[i].c = c;
        c->hblocks[i].numeric = 0;
        c->hobjs[i].cls = &py_class;
        c->hobjs[i].obj = &c->hblocks[i];
        c->hfuncs[i].name = name;
        c->hfuncs[i].kind = (tpl_host_kind)kind;
        c->hfuncs[i].fn = tpl_host_value_fn;
        c->hfuncs[i].data = &c->hobjs[i];
    }
    Py_INCREF(funcs);
    c->funcs = funcs;
    tpl_render_set_host_funcs(c->r, c->hfuncs, (size_t)n);
    return 0;
}

/* Applies settings to c's render context (the GIL held, the context idle). */
static int apply(render_ctx *c, const settings *s)
{
    tpl_render *r = c->r;
    tpl_render_clear_facts(r);
    tpl_render_clear_catalogs(r);
    tpl_render_clear_tr_keys(r);
    tpl_render_set_lang(r, NULL);
    tpl_render_set_call_claimed(r, NULL);
    tpl_render_set_call(r, NULL, NULL);
    PyObject *old = c->remembers;
    c->remembers = s->remembers;
    Py_XINCREF(c->remembers);
    Py_XDECREF(old);
    mem_clear(c);
    c->rem_data = c->remembers && !PyCallable_Check(c->remembers);
    tpl_render_set_remembers(r, !c->remembers ? NULL : c->rem_data ? mem_remembers : py_remembers, c);
    Py_XINCREF(s->markup);
    Py_XSETREF(c->markup, s->markup);
    Py_XINCREF(s->undefined);
    Py_XSETREF(c->undefined, s->undefined);
    if (bind_funcs(c, s->funcs) < 0) return -1;
    for (Py_ssize_t i = 0; s->facts && i < PyTuple_GET_SIZE(s->facts); i++) {
        Py_ssize_t n;
        const char *u = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(s->facts, i), &n);
        if (!u) return -1;
        if (tpl_render_add_fact(r, u, (size_t)n) != TPL_OK) {
            PyErr_SetString(PyExc_ValueError, "bad fact");
            return -1;
        }
    }
    if (s->call) {
        const char *ch = NULL, *me = NULL, *cl = NULL;
        if (!PyArg_ParseTuple(s->call, "zzz", &ch, &me, &cl)) return -1;
        if (tpl_render_set_call(r, ch, me) != TPL_OK || tpl_render_set_call_claimed(r, cl) != TPL_OK) {
            PyErr_Format(PyExc_ValueError, "bad call: %s", tpl_render_error(r)->message);
            return -1;
        }
    }
    if (s->lang) {
        const char *l = PyUnicode_AsUTF8(s->lang);
        if (!l) return -1;
        tpl_render_set_lang(r, l);
    }
    for (Py_ssize_t i = 0; s->catalogs && i < PyTuple_GET_SIZE(s->catalogs); i++) {
        Py_ssize_t n;
        const char *u = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(s->catalogs, i), &n);
        if (!u) return -1;
        if (tpl_render_add_catalog_json(r, u, (size_t)n) != TPL_OK) {
            PyErr_Format(PyExc_ValueError, "bad catalog: %s", tpl_render_error(r)->message);
            return -1;
        }
    }
    for (Py_ssize_t i = 0; s->tr_keys && i < PyTuple_GET_SIZE(s->tr_keys); i++) {
        Py_ssize_t n;
        const char *u = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(s->tr_keys, i), &n);
        if (!u) return -1;
        if (tpl_render_add_tr_key(r, u, (size_t)n) != TPL_OK) {
            PyErr_SetString(PyExc_ValueError, "bad tr key");
            return -1;
        }
    }
    return 0;
}

static void slot_free(render_ctx *c)
{
    if (!c) return;
    cache_clear(c);
    bind_funcs(c, NULL); /* (before the context goes: it unbinds them from it) */
    tpl_render_free(c->r);
    mem_clear(c);
    PyMem_Free(c->mem);
    Py_XDECREF(c->remembers);
    Py_XDECREF(c->markup);
    Py_XDECREF(c->undefined);
    Py_XDECREF(c->loader_exc);
    for (int i = 0; i < KEYS; i++) Py_XDECREF(c->keys[i].k);
    for (int i = 0; i < KEYS; i++) Py_XDECREF(c->ckeys[i].k);
    for (int i = 0; i < SMALL_DICT; i++) Py_XDECREF(c->lastk[i].k);
    for (chunk *k = c->chunks, *next; k; k = next) {
        next = k->next;
        PyMem_Free(k);
    }
    PyMem_Free(c->keep);
    PyMem_Free(c->sd);
    PyMem_Free(c->si);
    PyMem_Free(c->ents);
    PyMem_Free(c->items);
    PyMem_Free(c->ss);
    PyMem_Free(c->cnt);
    PyMem_Free(c->rr.d);
    PyMem_Free(c->rr.s);
    PyMem_Free(c->tr.d);
    PyMem_Free(c->tr.s);
    PyMem_Free(c);
}

/* An idle slot for a render with settings s (the defaults when s is &self->defaults). */
static render_ctx *slot_get(ProgramObject *self, const settings *s)
{
    bool dflt = s == &self->defaults;
    render_ctx *c = NULL;
    if (dflt || !s->has_lim) /* a pooled context has the defaults' limits */
        while (self->npool > 0) {
            c = self->pool[--self->npool];
            if (c->lim_gen == self->gen) break;
            slot_free(c);
            c = NULL;
        }
    if (!c) {
        c = PyMem_Calloc(1, sizeof *c);
        const settings *ls = dflt || !s->has_lim ? &self->defaults : s;
        if (!c || !(c->r = tpl_render_new(ls->has_lim ? &ls->lim : NULL))) {
            PyMem_Free(c);
            PyErr_NoMemory();
            return NULL;
        }
        c->max_iter_bytes = max_iter_bytes(ls->has_lim ? &ls->lim : NULL);
        c->max_iter_items = max_iter_items(ls->has_lim ? &ls->lim : NULL);
        c->gen = -1;
        c->lim_gen = ls == &self->defaults ? self->gen : -1;
        c->last_out = SIZE_MAX; /* (its first render releases the GIL) */
        c->out_ascii = true;
        c->fastdict = dict_entries_work();
    }
    if (dflt ? c->gen != self->gen : true) {
        c->gen = -1;
        if (apply(c, s) < 0) {
            slot_free(c);
            return NULL;
        }
        c->gen = dflt ? self->gen : -1;
    }
    return c;
}

/* Ends a render on c: drops the state (no handle to a Python object outlives the render) and
 * the references held, and pools c. */
static void slot_put(ProgramObject *self, render_ctx *c)
{
    c->streak = c->found ? 0 : c->streak + 1;
    c->bypass = c->found = false;
    cache_age(c);
    if (!c->filled && !c->top.o && c->built) {
        /* nothing cached (contexts made anew for every render): the state memory is taken back
         * now, so the next render converts into the memory this one warmed (it grew by a render's
         * state each time, up to SPARE units, through memory no longer in the CPU's caches) */
        tpl_render_reset_state(c->r);
        c->built = 0;
        c->has_empty = false;
    } else if (c->built > 4 * c->live + SPARE || !c->has_empty) {
        cache_clear(c);
    } else {
        tpl_render_set_state_val(c->r, c->empty);
    }
    if (c->has_globals) { /* (this render set them) */
        tpl_render_set_globals_val(c->r, tpl_val_none());
        c->has_globals = false;
    }
    for (Py_ssize_t i = 0; i < c->nkeep; i++) Py_DECREF(c->keep[i]);
    c->nkeep = 0;
    c->nsd = c->nsi = 0; /* (what state_snap recorded: the keep array held it) */
    c->cur = NULL;
    c->used = 0;
    c->depth = 0;
    c->nents = c->nitems = 0;
    if (c->lim_gen == self->gen && self->npool < POOL_MAX) self->pool[self->npool++] = c;
    else slot_free(c);
}

/* ------------------------------------------------------------------ Program */

static void Program_dealloc(ProgramObject *self)
{
    tpl_program_free(self->p);
    for (int i = 0; i < self->npool; i++) slot_free(self->pool[i]);
    settings_clear(&self->defaults);
    Py_XDECREF(self->reads);
    PyMem_Free(self->read_u8);
    PyMem_Free(self->read_len);
    PyMem_Free(self->read_hash);
    PyMem_Free(self->read_tab);
    Py_XDECREF(self->loader);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject ProgramType;
static int compiled(ProgramObject *self);

/* Program() (and a subclass's, tpl.Template's, __new__): an empty program, which _adopt fills. */
static PyObject *Program_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    (void)args;
    (void)kw;
    return type->tp_alloc(type, 0); /* zeroed: p NULL, no reads, no pool */
}

/* _adopt(program): self (empty) takes over program's compiled code, reads-set, settings and
 * pool; program is left empty. tpl.Template is a Program subclass that adopts what
 * compile()/load() made, so that Template.render is this type's C method. */
static PyObject *Program_adopt(ProgramObject *self, PyObject *arg)
{
    if (!PyObject_TypeCheck(arg, &ProgramType)) return PyErr_Format(PyExc_TypeError, "_adopt needs a Program");
    ProgramObject *o = (ProgramObject *)arg;
    if (self->p || !o->p) return PyErr_Format(PyExc_ValueError, "_adopt: self must be empty and the program not");
    self->p = o->p;
    self->reads = o->reads;
    self->read_u8 = o->read_u8;
    self->read_len = o->read_len;
    self->read_hash = o->read_hash;
    self->read_tab = o->read_tab;
    self->read_mask = o->read_mask;
    self->defaults = o->defaults;
    self->gen = o->gen;
    self->loader = o->loader;
    o->loader = NULL;
    memcpy(self->pool, o->pool, sizeof self->pool);
    self->npool = o->npool;
    o->p = NULL;
    o->reads = NULL;
    o->read_u8 = NULL;
    o->read_len = NULL;
    o->read_hash = NULL;
    o->read_tab = NULL;
    memset(&o->defaults, 0, sizeof o->defaults);
    o->npool = 0;
    Py_RETURN_NONE;
}

static PyObject *wrap_program(tpl_program *p)
{
    ProgramObject *o = PyObject_New(ProgramObject, &ProgramType);
    if (!o) { tpl_program_free(p); return NULL; }
    o->p = p;
    o->npool = 0;
    o->gen = 0;
    o->loader = NULL;
    memset(&o->defaults, 0, sizeof o->defaults);
    o->reads = NULL;
    o->read_u8 = NULL;
    o->read_len = NULL;
    o->read_hash = NULL;
    o->read_tab = NULL;
    return (PyObject *)o; /* the reads-set: at the first render (reads_ready), not per compile */
}

static void reads_clear(ProgramObject *o)
{
    Py_CLEAR(o->reads);
    PyMem_Free(o->read_u8);
    PyMem_Free(o->read_len);
    PyMem_Free(o->read_hash);
    PyMem_Free(o->read_tab);
    o->read_u8 = NULL;
    o->read_len = NULL;
    o->read_hash = NULL;
    o->read_tab = NULL;
}

/* The bytes of a name as two words: for n <= 16 they cover every byte (the first and last 8,
 * 4, or the first, middle and last), so two names of one length <= 16 are equal when their
 * words are; longer names compare their bytes too. */
static inline void key_words(const char *s, size_t n, uint64_t *a, uint64_t *b)
{
    if (n >= 8) {
        memcpy(a, s, 8);
        memcpy(b, s + (n > 16 ? 8 : n - 8), 8);
    } else if (n >= 4) {
        uint32_t x, y;
        memcpy(&x, s, 4);
        memcpy(&y, s + n - 4, 4);
        *a = x;
        *b = y;
    } else {
        *a = n ? (uint64_t)(unsigned char)s[0] | (uint64_t)(unsigned char)s[n / 2] << 8 |
                 (uint64_t)(unsigned char)s[n - 1] << 16
               : 0;
        *b = 0;
    }
}

static inline uint32_t rkey_slot(uint64_t a, uint64_t b, size_t n)
{
    return (uint32_t)(((a ^ (b * 0xC2B2AE3D27D4EB4Fu) ^ n) * 0x9E3779B97F4A7C15u) >> 40);
}

/* The index in o's reads of the name s (UTF-8, n bytes), or -1. */
static inline int32_t read_find(const ProgramObject *o, const char *s, size_t n)
{
    uint64_t a, b;
    key_words(s, n, &a, &b);
    for (uint32_t i = rkey_slot(a, b, n);; i++) {
        const rkey *e = &o->read_tab[i & o->read_mask];
        if (!e->idx1) return -1;
        if (e->len == n && e->a == a && e->b == b && (n <= 16 || !memcmp(o->read_u8[e->idx1 - 1], s, n)))
            return (int32_t)e->idx1 - 1;
    }
}

/* Makes o's reads-set (its names as interned strs, their UTF-8, hashes and indexes) the first
 * time a render or .reads needs it: a walk over the code that tpl.Template() does not pay. */
static int reads_build(ProgramObject *o);

/* The Program's reads-set tables, made on first use. */
static inline int reads_ready(ProgramObject *o) { return o->reads ? 0 : reads_build(o); }

static int reads_build(ProgramObject *o)
{
    if (o->reads) return 0;
    if (compiled(o) < 0) return -1;
    o->all_state = tpl_program_needs_loader(o->p);
    /* one scan for the usual few names */
    enum { FEW = 64 };
    const char *few[FEW];
    size_t fewlen[FEW];
    size_t n = tpl_program_reads(o->p, few, fewlen, FEW);
    o->read_u8 = PyMem_Calloc(n + 1, sizeof *o->read_u8);
    o->read_len = PyMem_Calloc(n + 1, sizeof *o->read_len);
    o->read_hash = PyMem_Calloc(n + 1, sizeof *o->read_hash);
    size_t tab = 8;
    while (tab < 2 * n) tab *= 2;
    if (n > UINT32_MAX / 4) tab = 0; /* (refused below) */
    o->read_tab = tab ? PyMem_Calloc(tab, sizeof *o->read_tab) : NULL;
    o->read_mask = (uint32_t)tab - 1;
    PyObject *reads = PyTuple_New((Py_ssize_t)n);
    if (!o->read_u8 || !o->read_len || !o->read_hash || !reads || !o->read_tab) {
        Py_XDECREF(reads);
        reads_clear(o);
        PyErr_NoMemory();
        return -1;
    }
    if (n > FEW) tpl_program_reads(o->p, o->read_u8, o->read_len, n);
    else {
        memcpy(o->read_u8, few, n * sizeof *few);
        memcpy(o->read_len, fewlen, n * sizeof *fewlen);
    }
    for (size_t i = 0; i < n; i++) {
        PyObject *s = PyUnicode_DecodeUTF8(o->read_u8[i], (Py_ssize_t)o->read_len[i], "strict");
        if (!s) goto fail;
        PyUnicode_InternInPlace(&s);
        PyTuple_SET_ITEM(reads, (Py_ssize_t)i, s);
        /* from now on the str's own UTF-8 (the program's names stay valid too, but the str is
         * what the state map's keys borrow) */
        Py_ssize_t kn;
        const char *ku = PyUnicode_AsUTF8AndSize(s, &kn);
        if (!ku) goto fail;
        o->read_u8[i] = ku;
        o->read_len[i] = (size_t)kn;
        o->read_hash[i] = tpl_val_key_hash(ku, (size_t)kn);
        if (read_find(o, ku, (size_t)kn) >= 0) continue; /* (a name twice: the first) */
        rkey k = { 0, 0, (uint32_t)kn, (uint32_t)i + 1 };
        key_words(ku, (size_t)kn, &k.a, &k.b);
        uint32_t j = rkey_slot(k.a, k.b, (size_t)kn);
        while (o->read_tab[j & o->read_mask].idx1) j++;
        o->read_tab[j & o->read_mask] = k;
    }
    o->reads = reads;
    return 0;
fail:
    Py_DECREF(reads);
    reads_clear(o);
    return -1;
}

/* The compile-time loader: loader(name) -> str or None. */
typedef struct load_ctx { PyObject *fn; PyObject *exc; } load_ctx;

static char *py_loader(void *data, const char *name, size_t name_len, size_t *len)
{
    load_ctx *l = data;
    return l->exc ? NULL : call_loader(l->fn, name, name_len, len, &l->exc);
}

/* The options dict of compile(): its boolean options into *o (None: the profile's), and its
 * host_funcs and finalize (borrowed, NULL when absent); other keys are ignored. One walk over
 * the (few) keys given, not a lookup per option known. */
static int compile_options(PyObject *d, tpl_options *o, PyObject **hf, PyObject **fin)
{
    static const struct { const char *name; size_t off; } bools[] = {
        { "trim_blocks", offsetof(tpl_options, trim_blocks) },
        { "lstrip_blocks", offsetof(tpl_options, lstrip_blocks) },
        { "keep_trailing_newline", offsetof(tpl_options, keep_trailing_newline) },
        { "strict", offsetof(tpl_options, strict) },
        { "tidy", offsetof(tpl_options, tidy) },
        { "hf", offsetof(tpl_options, hf) },
        { "autoescape", offsetof(tpl_options, autoescape) },
        { "loop_controls", offsetof(tpl_options, loop_controls) },
        { "do_statement", offsetof(tpl_options, do_statement) },
        { "defer_missing", offsetof(tpl_options, defer_missing) },
        { "chainable_undefined", offsetof(tpl_options, chainable_undefined) },
        { "debug_undefined", offsetof(tpl_options, debug_undefined) },
    };
    *hf = *fin = NULL;
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (d && PyDict_Next(d, &pos, &k, &v)) {
        const char *ks = PyUnicode_Check(k) ? PyUnicode_AsUTF8(k) : NULL;
        if (!ks) {
            if (PyErr_Occurred()) return -1;
            continue;
        }
        if (!strcmp(ks, "host_funcs")) *hf = v;
        else if (!strcmp(ks, "finalize")) *fin = v;
        else
            for (size_t i = 0; i < sizeof bools / sizeof bools[0]; i++)
                if (!strcmp(ks, bools[i].name)) {
                    if (v == Py_None) break;
                    int t = PyObject_IsTrue(v);
                    if (t < 0) return -1;
                    *(bool *)((char *)o + bools[i].off) = t;
                    break;
                }
    }
    return 0;
}

/* compile(source, name, syntax, profile, options, loader) -> Program | error tuple */
static PyObject *mod_compile(PyObject *mod, PyObject *args)
{
    (void)mod;
    const char *src, *name, *profile;
    Py_ssize_t n;
    int syntax;
    PyObject *opts, *loader;
    if (!PyArg_ParseTuple(args, "s#sizOO", &src, &n, &name, &syntax, &profile, &opts, &loader)) return NULL;
    if (syntax < 0 || syntax > 2) return PyErr_Format(PyExc_ValueError, "bad syntax %d", syntax);
    tpl_options o = { 0 };
    if (tpl_options_profile(&o, (tpl_syntax)syntax, profile) != TPL_OK)
        return PyErr_Format(PyExc_ValueError, "unknown profile %R for this syntax", PyTuple_GET_ITEM(args, 3));
    if (opts != Py_None && !PyDict_Check(opts)) return PyErr_Format(PyExc_TypeError, "options must be a dict");
    PyObject *d = opts == Py_None ? NULL : opts, *hf, *fin;
    if (compile_options(d, &o, &hf, &fin) < 0) return NULL;
    /* host_funcs: (name, kind) pairs the template may call (tpl_options.host_funcs) */
    PyObject *hfs = NULL;
    tpl_host_func *table = NULL;
    if (hf && hf != Py_None) {
        if (!(hfs = PySequence_Fast(hf, "host_funcs must be a sequence of (name, kind)"))) return NULL;
        Py_ssize_t nh = PySequence_Fast_GET_SIZE(hfs);
        table = PyMem_Calloc((size_t)nh + 1, sizeof *table);
        if (!table) { Py_DECREF(hfs); return PyErr_NoMemory(); }
        for (Py_ssize_t i = 0; i < nh; i++) {
            const char *hn;
            int kind;
            if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(hfs, i), "si", &hn, &kind)) {
                PyMem_Free(table);
                Py_DECREF(hfs);
                return NULL;
            }
            table[i].name = hn;
            table[i].kind = (tpl_host_kind)kind;
        }
        o.host_funcs = table;
        o.nhost_funcs = (size_t)nh;
    }
    /* finalize: the name of the host filter (among host_funcs) every output goes through */
    if (fin && fin != Py_None) {
        if (!PyUnicode_Check(fin) || !(o.finalize = PyUnicode_AsUTF8(fin))) {
            PyMem_Free(table);
            Py_XDECREF(hfs);
            return PyErr_Occurred() ? NULL : PyErr_Format(PyExc_TypeError, "finalize must be a str (a host filter's name)");
        }
    }
    load_ctx l = { loader, NULL };
    if (loader != Py_None) {
        o.loader = py_loader;
        o.loader_data = &l;
    }
    tpl_program *p = NULL;
    tpl_error err = { 0 };
    tpl_status st = tpl_compile(name, src, (size_t)n, &o, &p, &err);
    PyMem_Free(table);
    Py_XDECREF(hfs);
    if (l.exc) { /* the loader raised: that exception, as itself */
        tpl_error_clear(&err);
        tpl_program_free(p);
        PyErr_SetObject((PyObject *)Py_TYPE(l.exc), l.exc);
        Py_DECREF(l.exc);
        return NULL;
    }
    if (st != TPL_OK) {
        PyObject *t = error_tuple(&err);
        tpl_error_clear(&err);
        return t;
    }
    PyObject *w = wrap_program(p);
    if (w && loader != Py_None && tpl_program_needs_loader(p)) { /* names computed at render time */
        Py_INCREF(loader);
        ((ProgramObject *)w)->loader = loader;
    }
    return w;
}

/* load(data, name) -> Program | error tuple */
static PyObject *mod_load(PyObject *mod, PyObject *args)
{
    (void)mod;
    Py_buffer b;
    const char *name;
    if (!PyArg_ParseTuple(args, "y*z", &b, &name)) return NULL;
    tpl_program *p = NULL;
    tpl_error err = { 0 };
    tpl_status st = tpl_program_load(name, b.buf, (size_t)b.len, &p, &err);
    PyBuffer_Release(&b);
    if (st != TPL_OK) {
        PyObject *t = error_tuple(&err);
        tpl_error_clear(&err);
        return t;
    }
    return wrap_program(p);
}

/* A method's check that self holds a program (a bare Program() or Template.__new__ does not). */
static int compiled(ProgramObject *self)
{
    if (self->p) return 0;
    PyErr_SetString(PyExc_ValueError, "tpl: this template was never compiled or loaded");
    return -1;
}

static PyObject *Program_save(ProgramObject *self, PyObject *args)
{
    int strip = 0;
    if (!PyArg_ParseTuple(args, "|p", &strip) || compiled(self) < 0) return NULL;
    void *buf = NULL;
    size_t len = 0;
    if (tpl_program_save(self->p, strip ? TPL_SAVE_STRIP_SOURCE : 0, &buf, &len) != TPL_OK) return PyErr_NoMemory();
    PyObject *r = PyBytes_FromStringAndSize(buf, (Py_ssize_t)len);
    free(buf);
    return r;
}

static PyObject *Program_dump(ProgramObject *self, PyObject *unused)
{
    (void)unused;
    if (compiled(self) < 0) return NULL;
    char *s = tpl_disassemble(self->p);
    if (!s) return PyErr_NoMemory();
    PyObject *r = PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace");
    free(s);
    return r;
}

static PyObject *Program_reads(ProgramObject *self, void *unused)
{
    (void)unused;
    if (!self->p) return PyTuple_New(0);
    if (reads_ready(self) < 0) return NULL;
    Py_INCREF(self->reads);
    return self->reads;
}

static PyObject *Program_syntax(ProgramObject *self, void *unused)
{
    (void)unused;
    const tpl_options *o = tpl_program_options(self->p);
    return PyLong_FromLong(o ? (long)o->syntax : 0);
}

/* The UTF-8 sequence at s[i] (a byte >= 0x80; n the end): its code point and length, 0 when it
 * is not a well-formed sequence (RFC 3629: no overlongs, no surrogates, nothing past U+10FFFF). */
static int utf8_seq(const unsigned char *s, size_t i, size_t n, uint32_t *cp)
{
    unsigned char b = s[i];
    int len;
    uint32_t c, lo = 0x80, hi = 0xBF; /* the bounds of the second byte */
    if (b >= 0xC2 && b <= 0xDF) { len = 2; c = b & 0x1F; }
    else if (b >= 0xE0 && b <= 0xEF) {
        len = 3;
        c = b & 0x0F;
        if (b == 0xE0) lo = 0xA0;
        else if (b == 0xED) hi = 0x9F;
    } else if (b >= 0xF0 && b <= 0xF4) {
        len = 4;
        c = b & 0x07;
        if (b == 0xF0) lo = 0x90;
        else if (b == 0xF4) hi = 0x8F;
    } else return 0;
    if (n - i < (size_t)len || s[i + 1] < lo || s[i + 1] > hi) return 0;
    for (int k = 1; k < len; k++) {
        if ((s[i + k] & 0xC0) != 0x80) return 0;
        c = c << 6 | (s[i + k] & 0x3F);
    }
    *cp = c;
    return len;
}

/* The rendered text's three passes (find the first non-ASCII byte, count the characters and
 * find the widest lead byte, widen into UCS2) go 16 bytes at a time with SSE2 (every x86-64 has
 * it): per 64 ASCII bytes four loads, three ORs and one movemask instead of a loop per byte or
 * per word; elsewhere 8 bytes at a time. */
#if defined(__SSE2__)
#include <emmintrin.h>
#define VEC 16
static inline __m128i vload(const unsigned char *s) { return _mm_loadu_si128((const __m128i *)(const void *)s); }
/* Whether the 64 bytes at s are all ASCII. */
static inline bool ascii64(const unsigned char *s)
{
    __m128i x = _mm_or_si128(_mm_or_si128(vload(s), vload(s + 16)), _mm_or_si128(vload(s + 32), vload(s + 48)));
    return _mm_movemask_epi8(x) == 0;
}
/* The bit mask of the non-ASCII bytes among the VEC at s. */
static inline unsigned high_mask(const unsigned char *s) { return (unsigned)_mm_movemask_epi8(vload(s)); }
/* The number of continuation bytes (0x80..0xBF: below -64 as signed bytes) among the VEC at s. */
static inline int cont_count(const unsigned char *s)
{
    return __builtin_popcount((unsigned)_mm_movemask_epi8(_mm_cmplt_epi8(vload(s), _mm_set1_epi8(-64))));
}
/* The VEC ASCII bytes at s widened into d. */
static inline void widen2(Py_UCS2 *d, const unsigned char *s)
{
    __m128i v = vload(s), z = _mm_setzero_si128();
    _mm_storeu_si128((__m128i *)(void *)d, _mm_unpacklo_epi8(v, z));
    _mm_storeu_si128((__m128i *)(void *)(d + 8), _mm_unpackhi_epi8(v, z));
}
#else
#define VEC 8
static inline uint64_t wload(const unsigned char *s)
{
    uint64_t w;
    memcpy(&w, s, sizeof w);
    return w;
}
static inline bool ascii64(const unsigned char *s)
{
    uint64_t x = 0;
    for (int k = 0; k < 64; k += 8) x |= wload(s + k);
    return !(x & 0x8080808080808080u);
}
static inline unsigned high_mask(const unsigned char *s) { return (wload(s) & 0x8080808080808080u) != 0; }
static inline int cont_count(const unsigned char *s)
{
    int n = 0;
    for (int k = 0; k < VEC; k++) n += (s[k] & 0xC0) == 0x80;
    return n;
}
static inline void widen2(Py_UCS2 *d, const unsigned char *s)
{
    for (int k = 0; k < VEC; k++) d[k] = s[k];
}
#endif

/* The end of the ASCII run from s[i] (n the end). */
static inline size_t ascii_run(const unsigned char *s, size_t i, size_t n)
{
    while (i + 64 <= n && ascii64(s + i)) i += 64;
    while (i + VEC <= n && !high_mask(s + i)) i += VEC;
    while (i < n && s[i] < 0x80) i++;
    return i;
}

/* Copies s[0..n) (n >= 64) to d while it is ASCII, 64 bytes a step (the last step the final 64
 * bytes, which may overlap the one before): returns n when every byte was ASCII and copied, else
 * the length of a prefix that is ASCII (copied). One pass instead of a scan and a memcpy: an ASCII
 * output (a chat prompt) is checked while it is copied into its str. With AVX2 where the CPU has
 * it (asked at run time: the build targets plain x86-64), else SSE2. */
#if defined(__SSE2__)
static size_t ascii_copy_sse2(unsigned char *d, const unsigned char *s, size_t n)
{
    for (size_t i = 0;; i += 64) {
        if (i + 64 > n) i = n - 64;
        __m128i a = vload(s + i), b = vload(s + i + 16), e = vload(s + i + 32), f = vload(s + i + 48);
        if (_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(a, b), _mm_or_si128(e, f)))) return i;
        _mm_storeu_si128((__m128i *)(void *)(d + i), a);
        _mm_storeu_si128((__m128i *)(void *)(d + i + 16), b);
        _mm_storeu_si128((__m128i *)(void *)(d + i + 32), e);
        _mm_storeu_si128((__m128i *)(void *)(d + i + 48), f);
        if (i + 64 == n) return n;
    }
}
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HAVE_AVX2_COPY 1
/* (256 bytes a step when n >= 256: a 5 KB chat prompt in 18 steps; else 128 or 64) */
__attribute__((target("avx2"))) static size_t ascii_copy_avx2(unsigned char *d, const unsigned char *s, size_t n)
{
#define LD(o) _mm256_loadu_si256((const __m256i *)(const void *)(s + i + (o)))
#define ST(o, x) _mm256_storeu_si256((__m256i *)(void *)(d + i + (o)), x)
#define OR(x, y) _mm256_or_si256(x, y)
    if (n >= 256)
        for (size_t i = 0;; i += 256) {
            if (i + 256 > n) i = n - 256;
            __m256i a = LD(0), b = LD(32), e = LD(64), f = LD(96), g = LD(128), h = LD(160), j = LD(192), k = LD(224);
            if (_mm256_movemask_epi8(OR(OR(OR(a, b), OR(e, f)), OR(OR(g, h), OR(j, k))))) return i;
            ST(0, a);
            ST(32, b);
            ST(64, e);
            ST(96, f);
            ST(128, g);
            ST(160, h);
            ST(192, j);
            ST(224, k);
            if (i + 256 == n) return n;
        }
    if (n >= 128)
        for (size_t i = 0;; i += 128) {
            if (i + 128 > n) i = n - 128;
            __m256i a = LD(0), b = LD(32), e = LD(64), f = LD(96);
            if (_mm256_movemask_epi8(_mm256_or_si256(_mm256_or_si256(a, b), _mm256_or_si256(e, f)))) return i;
            ST(0, a);
            ST(32, b);
            ST(64, e);
            ST(96, f);
            if (i + 128 == n) return n;
        }
    for (size_t i = 0;; i += 64) {
        if (i + 64 > n) i = n - 64;
        __m256i a = LD(0), b = LD(32);
        if (_mm256_movemask_epi8(_mm256_or_si256(a, b))) return i;
        ST(0, a);
        ST(32, b);
        if (i + 64 == n) return n;
    }
#undef LD
#undef ST
#undef OR
}
#endif
static inline size_t ascii_copy(unsigned char *d, const unsigned char *s, size_t n)
{
#ifdef HAVE_AVX2_COPY
    if (__builtin_cpu_supports("avx2")) return ascii_copy_avx2(d, s, n);
#endif
    return ascii_copy_sse2(d, s, n);
}
#endif

/* The rendered text (UTF-8) as a str, built directly in its kind (UCS1/2/4) instead of through
 * PyUnicode_DecodeUTF8 (which decodes a UCS2 text, a prompt with one dash, a byte at a time):
 * one pass counts the characters (the bytes that are not continuation bytes) and finds the
 * widest lead byte, the second copies (widens) the ASCII runs and decodes the rest, checking
 * each sequence. Bytes that are not UTF-8 (a render does not produce them) go through
 * PyUnicode_DecodeUTF8, which raises. */
static PyObject *output_str(const char *out, size_t n, bool *ascii)
{
    const unsigned char *s = (const unsigned char *)out;
    size_t start = 0;
#if defined(__SSE2__)
    if (n >= 64 && *ascii) { /* ASCII as the last output was (a chat prompt): checked while copied */
        PyObject *a = PyUnicode_New((Py_ssize_t)n, 0x7F);
        if (!a) return NULL;
        if ((start = ascii_copy(PyUnicode_1BYTE_DATA(a), s, n)) == n) return a;
        Py_DECREF(a);
    }
#endif
    size_t first = ascii_run(s, start, n), chars = n, i = first;
    unsigned char top = 0;
    for (; i + 64 <= n; i += 64) /* (most of a prompt with a few non-ASCII characters is ASCII) */
        if (!ascii64(s + i))
            for (int b = 0; b < 64; b += VEC)
                if (high_mask(s + i + b)) {
                    chars -= (size_t)cont_count(s + i + b);
                    for (int k = 0; k < VEC; k++)
                        if (s[i + b + k] > top) top = s[i + b + k];
                }
    for (; i + VEC <= n; i += VEC)
        if (high_mask(s + i)) {
            chars -= (size_t)cont_count(s + i);
            for (int k = 0; k < VEC; k++)
                if (s[i + k] > top) top = s[i + k];
        }
    for (; i < n; i++) {
        chars -= (s[i] & 0xC0) == 0x80;
        if (s[i] > top) top = s[i];
    }
    /* well-formed, a lead byte below 0xC4 is U+0080..U+00FF, below 0xF0 at most U+FFFF (and any
     * lead from 0xC4 encodes at least U+0100, from 0xF0 at least U+10000) */
    *ascii = top < 0x80;
    PyObject *str = PyUnicode_New((Py_ssize_t)chars, top < 0x80 ? 0x7F : top < 0xC4 ? 0xFF : top < 0xF0 ? 0xFFFF : 0x10FFFF);
    if (!str || top < 0x80) {
        if (str) memcpy(PyUnicode_1BYTE_DATA(str), s, n);
        return str;
    }
    int kind = PyUnicode_KIND(str);
    void *data = PyUnicode_DATA(str);
    size_t o = 0; /* <= chars: each character written consumes a byte that is not a continuation */
    for (i = 0; i < n;) {
        size_t j = i ? ascii_run(s, i, n) : first;
        if (kind == PyUnicode_1BYTE_KIND) {
            memcpy((Py_UCS1 *)data + o, s + i, j - i);
            o += j - i;
        } else if (kind == PyUnicode_2BYTE_KIND) {
            Py_UCS2 *d = (Py_UCS2 *)data + o;
            size_t k = 0;
            for (; k + VEC <= j - i; k += VEC) widen2(d + k, s + i + k); /* (o + j - i <= chars) */
            for (; k < j - i; k++) d[k] = s[i + k];
            o += j - i;
        } else {
            Py_UCS4 *d = (Py_UCS4 *)data + o;
            for (size_t k = 0; k < j - i; k++) d[k] = s[i + k];
            o += j - i;
        }
        if (j == n) break;
        uint32_t cp;
        int len = utf8_seq(s, j, n, &cp);
        if (!len) {
            Py_DECREF(str);
            return PyUnicode_DecodeUTF8(out, (Py_ssize_t)n, "strict");
        }
        PyUnicode_WRITE(kind, data, o, cp);
        o++;
        i = j + (size_t)len;
    }
    return str;
}

/* ------------------------------------------------------------------ the converted-value cache
 *
 * A render context remembers the dicts, lists and tuples it converted as state values (the
 * top-level values of the render's mapping) when they hold only plain data, and gives the same
 * tpl value again while CPython says none of their containers changed: every dict has the
 * version tag it had (CPython 3.11 gives a dict a new one from a global counter on every change,
 * so a dict at a reused address cannot match either) and every list the same items. A chat
 * template rendered again with the same messages converts nothing. The cache is per render
 * context, which one render uses at a time (the pool, under the GIL): no locking. Values built
 * in the state memory stay there until cache_clear, which drops them all when what was built
 * since the last clear exceeds four times what the cache still uses plus SPARE (so replaced
 * values cost memory for a while, not forever); a state that hits the memory limit is built
 * again after a clear. The values are as immutable as any state value: the VM never changes
 * the state (Jinja refuses list/dict mutators, ERB copies before changing, tpl.h). */

/* Room for n more references in c's keep array (no exception set). */
static int keep_reserve(render_ctx *c, size_t n)
{
    if ((size_t)(c->capkeep - c->nkeep) >= n) return 0;
    size_t cap = (size_t)c->nkeep + n + 64;
    PyObject **k = PyMem_Realloc(c->keep, cap * sizeof *k);
    if (!k) return -1;
    c->keep = k;
    c->capkeep = (Py_ssize_t)cap;
    return 0;
}

#if HAVE_CACHE
/* Moves an entry's references to the render (its value may be in use by this render's state)
 * and empties it. */
static int entry_drop(render_ctx *c, centry *e)
{
    if (keep_reserve(c, e->ndeps + e->nstrs) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t i = 0; i < e->ndeps; i++) c->keep[c->nkeep++] = e->deps[i].o;
    for (size_t i = 0; i < e->nstrs; i++) c->keep[c->nkeep++] = e->strs[i];
    PyMem_Free(e->deps);
    PyMem_Free(e->strs);
    c->live -= e->units;
    *e = (centry){ 0 };
    if (e != &c->top) {
        uint32_t bit = 1u << (e - c->cache);
        c->filled &= ~bit;
        if (c->tuses & bit) c->tbroken = true; /* (the state being built has a value of it) */
        if ((c->top.uses & bit) && entry_drop(c, &c->top) < 0) return -1;
    }
    return 0;
}
#endif

/* Empties an entry between renders. */
static void entry_free(render_ctx *c, centry *e)
{
    for (size_t k = 0; k < e->ndeps; k++) Py_DECREF(e->deps[k].o);
    for (size_t k = 0; k < e->nstrs; k++) Py_DECREF(e->strs[k]);
    PyMem_Free(e->deps);
    PyMem_Free(e->strs);
    c->live -= e->units;
    *e = (centry){ 0 };
    if (e != &c->top) {
        uint32_t bit = 1u << (e - c->cache);
        c->filled &= ~bit;
        if (c->top.uses & bit) entry_free(c, &c->top); /* (it has a value of e's) */
    }
}

/* After a render: the entries neither it nor the one before used are dropped (the cache holds
 * what recent renders read, not every context it ever saw: it keeps their objects alive). */
static void cache_age(render_ctx *c)
{
    for (uint32_t stale = c->filled & ~(c->hit | c->prev); stale; stale &= stale - 1)
        entry_free(c, &c->cache[__builtin_ctz(stale)]);
    c->prev = c->hit;
    c->hit = 0;
}

/* Drops every entry and the state memory (no render uses its values: between renders). */
static void cache_clear(render_ctx *c)
{
    for (int i = 0; i < CACHE; i++)
        if (c->cache[i].o) entry_free(c, &c->cache[i]);
    if (c->top.o) entry_free(c, &c->top);
    c->hit = c->prev = 0;
    tpl_render_reset_state(c->r);
    c->built = c->live = 0;
    c->has_empty = false;
}

#if HAVE_CACHE
/* Whether nothing the deps name changed. */
static bool deps_valid(const dep *d, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t t = d[i].tag;
        if (t == TUPLE_DEP) continue;
        if (t & LIST_DEP) {
            size_t m = (size_t)(t & ~LIST_DEP);
            if ((size_t)PyList_GET_SIZE(d[i].o) != m) return false;
            PyObject **items = ((PyListObject *)d[i].o)->ob_item;
            for (size_t k = 0; k < m; k++)
                if (items[k] != d[i + 1 + k].o) return false;
            i += m;
        } else if (DICT_VERSION(d[i].o) != t) {
            return false;
        }
    }
    return true;
}
#endif

/* Moves what f recorded to the render (the values built may be in use). Out of memory: drops
 * them and fails (the render fails, nothing borrows them then). */
static int refs_release(render_ctx *c, refs *f)
{
    if (!f->nd && !f->ns) return 0;
    int rc = 0;
    if (keep_reserve(c, f->nd + f->ns) < 0) {
        for (size_t i = 0; i < f->nd; i++) Py_DECREF(f->d[i].o);
        for (size_t i = 0; i < f->ns; i++) Py_DECREF(f->s[i]);
        PyErr_NoMemory();
        rc = -1;
    } else {
        for (size_t i = 0; i < f->nd; i++) c->keep[c->nkeep++] = f->d[i].o;
        for (size_t i = 0; i < f->ns; i++) c->keep[c->nkeep++] = f->s[i];
    }
    f->nd = f->ns = 0;
    return rc;
}

/* Makes e (empty) the entry of o's value val from what f recorded (moved into it); false when
 * out of memory (f unchanged). */
static bool entry_set(render_ctx *c, centry *e, PyObject *o, tpl_val val, refs *f, size_t units)
{
    dep *d = PyMem_Malloc(f->nd * sizeof *d);
    PyObject **st = PyMem_Malloc((f->ns ? f->ns : 1) * sizeof *st);
    if (!d || !st) {
        PyMem_Free(d);
        PyMem_Free(st);
        return false;
    }
    memcpy(d, f->d, f->nd * sizeof *d);
    memcpy(st, f->s, f->ns * sizeof *st);
    *e = (centry){ o, val, d, f->nd, st, f->ns, units, 0 };
    f->nd = f->ns = 0;
    c->live += units;
    return true;
}

/* A state value o (an exact dict, list or tuple) converted, from the cache when it has it;
 * *used: the entry that has it now, or NULL. */
static int cached_val(render_ctx *c, PyObject *o, tpl_val *out, centry **used)
{
    *used = NULL;
#if HAVE_CACHE
    /* two ways: the slot of o's address and its neighbour */
    size_t h = ((uintptr_t)o * 0x9E3779B97F4A7C15u) >> 56 & (CACHE - 1);
    centry *e = &c->cache[h], *f = &c->cache[h ^ 1];
    if (f->o == o || (e->o != o && (!f->o || (e->o && !(c->hit & (1u << (h ^ 1))) && (c->hit & (1u << h)))))) {
        centry *t = e; /* f holds o, or is the better place for it: empty, or not used by this render */
        e = f;
        f = t;
    }
    uint32_t bit = 1u << (e - c->cache);
    if (e->o == o && deps_valid(e->deps, e->ndeps)) {
        *out = e->val;
        c->hit |= bit;
        c->found = true;
        *used = e;
        return 0;
    }
    if (e->o && entry_drop(c, e) < 0) return -1;
    if (c->bypass) { /* (converting a str subclass may run Python code: o is held) */
        if (!c->nokeep && keep(c, o) < 0) return -1;
        return to_val(c, o, out);
    }
    c->rec = c->rec_ok = true;
    size_t built = c->built;
    int rc = to_val(c, o, out);
    c->rec = false;
    if (rc == 0 && c->rec_ok && c->rr.nd > 0 && c->rr.d[0].o == o && entry_set(c, e, o, *out, &c->rr, c->built - built)) {
        c->filled |= bit;
        c->hit |= bit;
        *used = e;
        return 0;
    }
    /* not cached: the render holds what was recorded */
    if (refs_release(c, &c->rr) < 0) return -1;
    return rc;
#else
    return to_val(c, o, out);
#endif
}

/* A state value (borrowed from the mapping) converted. When *top (the state can be cached),
 * what its value depends on and borrows is recorded in c->tr; a value that cannot be cached
 * clears *top. */
static inline __attribute__((always_inline)) int state_item(render_ctx *c, PyObject *v, tpl_val *out, bool *top)
{
    PyTypeObject *t = Py_TYPE(v);
    if (t == &PyUnicode_Type)
        return (PyUnicode_IS_COMPACT_ASCII(v) ? ascii_val(c, v, out) : str_val(c, v, 0, out)) < 0 ||
               (*top && refs_str(&c->tr, v) < 0) ? -1 : 0;
    if (t == &PyDict_Type || t == &PyList_Type || t == &PyTuple_Type) {
        centry *e;
        if (cached_val(c, v, out, &e) < 0) return -1;
        if (!e) *top = false;
        else c->tuses |= 1u << (e - c->cache); /* (the state's entry goes when e goes) */
        return 0;
    }
    if (t != &PyLong_Type && t != &PyFloat_Type && t != &PyBool_Type && v != Py_None) {
        *top = false;
        c->impure = true;
        if (c->nokeep) return nokeep_stop(c);
    }
    if (!c->nokeep && keep(c, v) < 0) return -1; /* (converting a str subclass may run Python code) */
    return to_val(c, v, out);
}

/* The state of a render (the GIL held): the names the program reads, with their values in
 * the mapping. A dict not much bigger than the reads-set is walked (its str keys are mostly the
 * same objects render after render: their slots in c->keys say which read each is, without a
 * dict lookup); otherwise each name is looked up. */
static int state_build(ProgramObject *self, render_ctx *c, PyObject *state, bool isdict, tpl_val *st)
{
    tpl_render *r = c->r;
    Py_ssize_t nreads = PyTuple_GET_SIZE(self->reads);
    if (!c->has_empty) {
        if (check(tpl_val_map(r, 0, &c->empty)) < 0) return -1;
        c->has_empty = true;
    }
    bool all = self->all_state;
    if (isdict && (all || PyDict_GET_SIZE(state) <= 4 * nreads + 8)) {
#if HAVE_CACHE
        if (c->top.o == state && DICT_VERSION(state) == c->top.deps[0].tag) {
            bool valid = true;
            for (uint32_t u = c->top.uses; u && valid; u &= u - 1) {
                centry *e = &c->cache[__builtin_ctz(u)];
                valid = deps_valid(e->deps, e->ndeps);
            }
            if (valid) {
                *st = c->top.val;
                c->hit |= c->top.uses;
                c->found = true;
                return 0;
            }
        }
        if (c->top.o && entry_drop(c, &c->top) < 0) return -1;
        /* contexts made anew for every render (nothing found in the cache 4 renders in a row)
         * are converted without recording, but for one render in 8 (in 64 after 64 such renders) */
        c->bypass = c->streak >= 4 && (++c->nrender & (c->streak >= 64 ? 63 : 7));
        bool top = !c->bypass;
        c->tuses = 0;
        c->tbroken = false;
        if (top && refs_dep(&c->tr, state, DICT_VERSION(state)) < 0) return -1;
#else
        bool top = false;
#endif
        c->built += (size_t)nreads + 1;
        size_t base = c->nents;
        Py_ssize_t pos = 0;
        PyObject *k, *v;
        /* its entries read in place (dict_entries) while the dict is unchanged (converting a value
         * can run Python code: a change of the dict makes the rest PyDict_Next's, from the same place) */
        uint64_t ver = DICT_VERSION(state);
        const dict_entry *de = c->fastdict ? dict_entries(state, PyDict_GET_SIZE(state)) : NULL;
        const dict_entry *dend = de ? de + PyDict_GET_SIZE(state) : NULL;
        while (de && HAVE_CACHE && DICT_VERSION(state) == ver ? de < dend && (k = de->k, v = de->v, de++, pos++, 1)
                                                         : PyDict_Next(state, &pos, &k, &v)) {
            if (!PyUnicode_CheckExact(k)) { /* (a str subclass may compare as it likes) */
                if (all) continue; /* (render() made such a state a plain dict of strs) */
                c->nents = base;
                if (refs_release(c, &c->tr) < 0) return -1;
                goto lookup;
            }
            Py_ssize_t kn;
            const char *ku;
            if (PyUnicode_IS_COMPACT_ASCII(k)) {
                ku = (const char *)PyUnicode_DATA(k);
                kn = PyUnicode_GET_LENGTH(k);
            } else if (!(ku = PyUnicode_AsUTF8AndSize(k, &kn))) {
                goto fail;
            }
            /* a name the program reads: found by its bytes, and the map's key is the Program's
             * str of it (it outlives the render and the cache) */
            int32_t ri = read_find(self, ku, (size_t)kn);
            tpl_str_entry x;
            if (ri >= 0) {
                x = (tpl_str_entry){ self->read_u8[ri], self->read_len[ri], self->read_hash[ri], { { 0, 0 } } };
            } else {
                if (!all) continue;
                key *e = key_of(c, k);
                if (!e) goto fail;
                x = (tpl_str_entry){ e->u8, e->len, e->hash, { { 0, 0 } } };
                /* (a cached state borrows its keys' UTF-8: it holds them, the key table may not) */
                if (top && refs_str(&c->tr, k) < 0) goto fail;
            }
            if (state_item(c, v, &x.val, &top) < 0) goto fail;
            if (c->nents == c->capents && ents_grow(c) < 0) goto fail;
            c->ents[c->nents++] = x;
        }
        tpl_status rs = tpl_val_map_of_str(r, c->ents + base, c->nents - base, TPL_VAL_BORROW | TPL_VAL_UTF8_VALID, st);
        c->nents = base;
        if (check(rs) < 0) goto fail;
        if (!top || c->tbroken || !entry_set(c, &c->top, state, *st, &c->tr, (size_t)nreads + 1))
            return refs_release(c, &c->tr);
        c->top.uses = c->tuses;
        return 0;
    fail:
        c->nents = base;
        refs_release(c, &c->tr);
        return -1;
    }
    c->built += (size_t)nreads + 1;
lookup:
    if (c->nokeep) return nokeep_stop(c); /* (a key's __eq__ may run in the lookups) */
    if (check(tpl_val_map(r, (size_t)nreads, st)) < 0) return -1;
    for (Py_ssize_t i = 0; i < nreads; i++) {
        PyObject *name = PyTuple_GET_ITEM(self->reads, i), *v;
        if (isdict) {
            v = PyDict_GetItemWithError(state, name);
            if (!v) { if (PyErr_Occurred()) return -1; continue; }
        } else {
            v = PyObject_GetItem(state, name);
            if (!v) {
                if (!PyErr_ExceptionMatches(PyExc_KeyError)) return -1;
                PyErr_Clear();
                continue;
            }
            int kept = keep(c, v);
            Py_DECREF(v);
            if (kept < 0) return -1;
        }
        /* the name is one of self->reads, which outlive the render: borrowed without a reference */
        tpl_val x;
        bool top = false;
        if (state_item(c, v, &x, &top) < 0 ||
            check(tpl_val_map_add_str(r, *st, self->read_u8[i], self->read_len[i], self->read_hash[i],
                                      TPL_VAL_BORROW | TPL_VAL_UTF8_VALID, x)) < 0)
            return -1;
    }
    return 0;
}

/* Whether state is a dict whose keys are all exact strs. */
static bool dict_of_strs(PyObject *state, bool isdict)
{
    if (!isdict) return false;
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (PyDict_Next(state, &pos, &k, &v))
        if (!PyUnicode_CheckExact(k)) return false;
    return true;
}

/* A new dict of state's items with str keys (as exact strs; other keys dropped: no template
 * name can read them), or NULL with an exception. */
static PyObject *plain_state(PyObject *state)
{
    PyObject *d = PyDict_New(), *items = d ? PyMapping_Items(state) : NULL;
    if (!items) { Py_XDECREF(d); return NULL; }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items); i++) {
        PyObject *kv = PyList_GET_ITEM(items, i), *k, *v;
        if (!PyTuple_Check(kv) || PyTuple_GET_SIZE(kv) != 2) continue;
        k = PyTuple_GET_ITEM(kv, 0);
        v = PyTuple_GET_ITEM(kv, 1);
        if (!PyUnicode_Check(k)) continue;
        PyObject *ks = PyUnicode_CheckExact(k) ? (Py_INCREF(k), k) : PyUnicode_FromObject(k);
        int rc = ks ? PyDict_SetItem(d, ks, v) : -1;
        Py_XDECREF(ks);
        if (rc < 0) { Py_DECREF(items); Py_DECREF(d); return NULL; }
    }
    Py_DECREF(items);
    return d;
}

/* The state of a render; built again after a cache_clear when it hit the memory limit with
 * values of earlier renders in the state memory. */
static int state_val(ProgramObject *self, render_ctx *c, PyObject *state, bool isdict, tpl_val *st)
{
    if (reads_ready(self) < 0) return -1;
    bool fresh = c->built == 0, cleared = false;
    for (;;) {
        if (state_build(self, c, state, isdict, st) == 0) return 0;
        c->depth = 0;
        c->nents = c->nitems = 0;
        if (c->nokeep_off) { /* (no exception set: see nokeep_stop; once, c->nokeep is off now) */
            c->nokeep_off = false;
            continue;
        }
        if (fresh || cleared || !PyErr_ExceptionMatches(PyExc_MemoryError)) return -1;
        PyErr_Clear();
        cache_clear(c);
        cleared = true;
    }
}

/* The render's globals (tpl_render_set_globals_val) from dict g: every exact-str key (a template
 * it imports without context reads names outside the reads-set, which lists the state's), each
 * value held until the render ends (a callback may change g while it runs). */
static int globals_build(ProgramObject *self, render_ctx *c, PyObject *g, tpl_val *out)
{
    tpl_render *r = c->r;
    if (check(tpl_val_map(r, (size_t)PyDict_GET_SIZE(g), out)) < 0) return -1;
    c->built += (size_t)PyDict_GET_SIZE(g) + 1;
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (PyDict_Next(g, &pos, &k, &v)) {
        if (!PyUnicode_CheckExact(k)) continue;
        Py_ssize_t kn;
        const char *ku = PyUnicode_AsUTF8AndSize(k, &kn);
        if (!ku) return -1;
        int32_t ri = read_find(self, ku, (size_t)kn);
        tpl_val x;
        bool top = false;
        if (keep(c, v) < 0 || state_item(c, v, &x, &top) < 0) return -1;
        /* a name of the reads-set borrowed (it outlives the render), another copied */
        tpl_status rs = ri >= 0
            ? tpl_val_map_add_str(r, *out, self->read_u8[ri], self->read_len[ri], self->read_hash[ri],
                                  TPL_VAL_BORROW | TPL_VAL_UTF8_VALID, x)
            : tpl_val_map_add_str(r, *out, ku, (size_t)kn, tpl_val_key_hash(ku, (size_t)kn), TPL_VAL_UTF8_VALID, x);
        if (check(rs) < 0) return -1;
    }
    return 0;
}

/* One render of self with settings s (the GIL held); globals: a dict of names below the state
 * (tpl_render_set_globals_val: seen by the templates it imports or includes without context), or NULL. */
/* lookup(handle, name): from a callback of the render that handle stands for (a capsule
 * _render_globals/_render_stream appended to their cell list), the value of the template-level
 * variable name of the template it runs (tpl_render_lookup: Jinja2's Context.vars); KeyError
 * when it has none (or not yet); RuntimeError when the render is not running in this thread or
 * its program keeps no names. */
static const char lookup_capsule[] = "tpl render lookup";
static PyObject *mod_lookup(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *cap, *name;
    if (!PyArg_ParseTuple(args, "OU", &cap, &name)) return NULL;
    if (!PyCapsule_IsValid(cap, lookup_capsule))
        return PyErr_Format(PyExc_TypeError, "lookup() wants a render handle");
    render_ctx *c = PyCapsule_GetContext(cap);
    if (!c || (c->run_tid != PyThread_get_thread_ident() && !c->dispatching))
        return PyErr_Format(PyExc_RuntimeError, "lookup(): the render is not running in this thread");
    Py_ssize_t n;
    const char *u = PyUnicode_AsUTF8AndSize(name, &n);
    if (!u) return NULL;
    tpl_val v;
    tpl_status st = tpl_render_lookup(c->r, u, (size_t)n, &v);
    if (st == TPL_ERR_UNDEFINED) {
        PyErr_SetObject(PyExc_KeyError, name);
        return NULL;
    }
    if (st != TPL_OK) return PyErr_Format(PyExc_RuntimeError, "lookup(): the render keeps no names (status %d)", (int)st);
    return from_val(c, v);
}

/* A failed tpl_render_call of c's render: the exception Python gets for it — the Python exception
 * a callback inside raised, as itself; else tpl's error as tpl.Template raises it, under
 * tpl.jinja2 as Jinja2's (tpl._macro_error) — with the render's error taken back
 * (tpl_render_rescue), new reference. NULL without an exception when it cannot be taken back (a
 * limit: the render ends with it), or with one when the exception could not be made. */
static PyObject *macro_failed(render_ctx *c)
{
    PyObject *payload = tpl_render_error_payload(c->r);
    tpl_error e;
    if (tpl_render_rescue(c->r, &e) != TPL_OK) return NULL;
    if (payload) return payload; /* (the render's reference: ours now) */
    PyObject *err = error_tuple(&e);
    if (!err) return NULL;
    PyObject *mod = PyImport_ImportModule("tpl");
    PyObject *exc = mod ? PyObject_CallMethod(mod, "_macro_error", "OO", err, c->undefined ? Py_True : Py_False) : NULL;
    Py_XDECREF(mod);
    Py_DECREF(err);
    if (exc && !PyExceptionInstance_Check(exc)) {
        Py_CLEAR(exc);
        PyErr_SetString(PyExc_TypeError, "tpl._macro_error() must return an exception");
    }
    return exc;
}

/* Whether o is an argument whose conversion nothing but the call holds: an exact str, int,
 * float, bool or None. */
static bool plain_scalar(PyObject *o)
{
    PyTypeObject *t = Py_TYPE(o);
    return t == &PyUnicode_Type || t == &PyLong_Type || t == &PyFloat_Type || t == &PyBool_Type || o == Py_None;
}

/* The newest mark taken back (tpl_render_release), what the call allocated given back when it
 * may be; given back, the strs its arguments borrowed (kept since nkeep0) are let go too. */
static void release_call(render_ctx *c, bool give_back, Py_ssize_t nkeep0)
{
    if (!tpl_render_release(c->r, give_back) || c->nkeep < nkeep0) return;
    while (c->nkeep > nkeep0) Py_DECREF(c->keep[--c->nkeep]);
}

/* A str argument of a macro called from Python (mod_call): copied into the render's memory, not
 * borrowed, so that nothing of it stays in c->keep when the call's memory is given back later
 * than its release (a render over 64 KiB gives back its calls' memory in batches:
 * tpl_render_release in runtime/host.c); other values as to_val. */
static int call_arg_val(render_ctx *c, PyObject *o, tpl_val *out)
{
    if (!PyUnicode_CheckExact(o)) return to_val(c, o, out);
    Py_ssize_t n;
    const char *u = PyUnicode_AsUTF8AndSize(o, &n);
    if (!u) return -1;
    return check(tpl_val_str(c->r, u, (size_t)n, TPL_VAL_UTF8_VALID, out));
}

/* call(handle, value, args, kwargs): a template callable (TemplateCallable) called by Python
 * code a callback of its render runs: its result (a macro's output). */
static PyObject *mod_call(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *cap, *a, *kw;
    const char *fb;
    Py_ssize_t fl;
    if (!PyArg_ParseTuple(args, "Oy#O!O", &cap, &fb, &fl, &PyTuple_Type, &a, &kw)) return NULL;
    if (!PyCapsule_IsValid(cap, call_capsule) || fl != (Py_ssize_t)sizeof(tpl_val))
        return PyErr_Format(PyExc_TypeError, "call() wants a render handle and a value");
    render_ctx *c = PyCapsule_GetContext(cap);
    if (!c)
        return PyErr_Format(PyExc_RuntimeError, "tpl: a template's macro called after its render ended");
    if (c->cb_depth <= 0 || (c->cb_tid != PyThread_get_thread_ident() && !c->dispatching))
        return PyErr_Format(PyExc_RuntimeError, "tpl: a template's macro called from another thread than its render's");
    if (kw != Py_None && !PyDict_Check(kw)) return PyErr_Format(PyExc_TypeError, "kwargs must be a dict");
    tpl_val fn;
    memcpy(&fn, fb, sizeof fn);
    Py_ssize_t na = PyTuple_GET_SIZE(a), nk = kw == Py_None ? 0 : PyDict_GET_SIZE(kw);
    tpl_val *v = PyMem_Calloc((size_t)(na + 2 * nk + 1), sizeof *v);
    if (!v) return PyErr_NoMemory();
    PyObject *res = NULL;
    /* what the call allocates, its arguments' conversions first, is given back when Python has
     * its result (a str) and nothing else holds it (tpl_render_release): the arguments plain
     * (str, int, float, bool, None: no list or dict Python could see the template change; strs
     * copied, call_arg_val), what other values borrowed let go then too — so a macro called in a
     * Python loop (a module's) runs in flat memory */
    bool marked = tpl_render_mark(c->r) == TPL_OK, plain = true;
    Py_ssize_t nkeep0 = c->nkeep;
    for (Py_ssize_t i = 0; i < na; i++) {
        plain = plain && plain_scalar(PyTuple_GET_ITEM(a, i));
        if (call_arg_val(c, PyTuple_GET_ITEM(a, i), &v[i]) < 0) goto done;
    }
    Py_ssize_t pos = 0, i = 0;
    PyObject *k, *x;
    while (nk && PyDict_Next(kw, &pos, &k, &x)) {
        if (!PyUnicode_Check(k)) { PyErr_SetString(PyExc_TypeError, "keywords must be strings"); goto done; }
        plain = plain && PyUnicode_CheckExact(k) && plain_scalar(x);
        if (call_arg_val(c, k, &v[na + i]) < 0 || call_arg_val(c, x, &v[na + nk + i]) < 0) goto done;
        i++;
    }
    tpl_val out;
    tpl_status st;
    if (!c->gil) {
        c->ts = PyEval_SaveThread();
        st = tpl_render_call(c->r, fn, v, (size_t)na, v + na, v + na + nk, (size_t)nk, &out);
        PyEval_RestoreThread(c->ts);
    } else {
        st = tpl_render_call(c->r, fn, v, (size_t)na, v + na, v + na + nk, (size_t)nk, &out);
    }
    if (st != TPL_OK && st != TPL_ERR_LIMIT && st != TPL_ERR_NOMEM) {
        /* the macro's exception, for Python to catch (the render goes on: Jinja2's does) or let
         * through (the callback then fails with it, and the render ends with it) */
        PyObject *exc = macro_failed(c);
        if (exc) {
            if (marked) release_call(c, plain, nkeep0), marked = false;
            PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
            Py_DECREF(exc);
            goto done;
        }
        if (PyErr_Occurred()) goto done;
    }
    if (st != TPL_OK) {
        c->call_failed = true; /* (the render ends with the call's error when the callback returns) */
        PyErr_Format(PyExc_RuntimeError, "tpl: a template's macro called from Python failed (status %d): the "
                     "render ends with its error", (int)st);
        goto done;
    }
    res = from_val(c, out);
    if (marked && res) release_call(c, plain && tpl_val_kind_of(out) == TPL_VAL_STR, nkeep0), marked = false;
done:
    if (marked) tpl_render_release(c->r, false);
    PyMem_Free(v);
    return res;
}

static PyObject *render(ProgramObject *self, PyObject *state, const settings *s, PyObject *globals, PyObject *write,
                        PyObject *cell, PyObject *dispatch)
{
    if (compiled(self) < 0) return NULL;
    bool isdict = PyDict_Check(state);
    /* a mapping as dict() takes one: with keys() (a str, bytes, list or tuple has __getitem__ too) */
    if (!isdict && (!PyMapping_Check(state) || !PyObject_HasAttrString(state, "keys")))
        return PyErr_Format(PyExc_TypeError, "render state must be a mapping, not %s", Py_TYPE(state)->tp_name);
    if (reads_ready(self) < 0) return NULL;
    PyObject *plain = NULL; /* a program that loads templates at render time takes the whole state:
                             * another mapping, or str-subclass keys, as a plain dict of strs */
    if (self->all_state && !dict_of_strs(state, isdict)) {
        if (!(plain = plain_state(state))) return NULL;
        state = plain;
        isdict = true;
    }
    render_ctx *c = slot_get(self, s);
    if (!c) { Py_XDECREF(plain); return NULL; }
    tpl_render *r = c->r;
    PyObject *result = NULL;

    tpl_val st;
    if (c->rem_data && mem_sync(c) < 0) goto done;
    /* The strs the state borrows need no reference of the render's when no Python code can run
     * before it ends: the GIL kept (a short render), no callable it can call (remembers, host
     * functions, a loader, a writer), no globals, and a state of plain data only (nokeep_stop). */
    c->nokeep = c->last_out < GIL_OUT && isdict && !write && !self->loader && !c->funcs &&
                (!c->remembers || c->rem_data) && (!globals || !PyDict_GET_SIZE(globals));
    c->impure = false;
    int sv = state_val(self, c, state, isdict, &st);
    c->nokeep = false;
    if (sv < 0) goto done;
    /* a render that can call Python code watches the arguments' lists and dicts (state_snap) */
    if (isdict && (c->impure || write || self->loader || c->funcs || (c->remembers && !c->rem_data) ||
                   (globals && PyDict_GET_SIZE(globals))) &&
        state_snap(self, c, state) < 0)
        goto done;
    tpl_render_set_state_val(r, st);
    if (globals && PyDict_GET_SIZE(globals)) {
        tpl_val gv;
        if (globals_build(self, c, globals, &gv) < 0) goto done;
        tpl_render_set_globals_val(r, gv);
        c->has_globals = true;
    }

    const char *out = NULL;
    size_t n = 0;
    if (c->loader != self->loader) {
        c->loader = self->loader;
        tpl_render_set_loader(r, self->loader ? py_render_loader : NULL, self->loader ? c : NULL);
    }
    /* The GIL: released while the VM runs unless the render is likely short — this context's
     * last output below GIL_OUT bytes — where giving it up and taking it back (and again in
     * each callback) costs more than the render; a long render after short ones holds it once. */
    tpl_status rs;
    PyObject *handle = NULL;
    if (cell) { /* (lookup: the render's handle, valid while it runs) */
        static const char marker = 0;
        if (!(handle = PyCapsule_New((void *)&marker, lookup_capsule, NULL)) || PyCapsule_SetContext(handle, c) < 0 ||
            PyList_Append(cell, handle) < 0) {
            Py_XDECREF(handle);
            goto done;
        }
        c->run_tid = PyThread_get_thread_ident();
    }
    c->dispatch = dispatch;
    if (write) {
        c->write = write;
        c->wtail_n = 0;
        tpl_render_set_output(r, py_out_write, c);
    }
    if ((c->gil = c->last_out < GIL_OUT)) {
        rs = tpl_render_run(r, self->p, &out, &n);
    } else {
        c->ts = PyEval_SaveThread();
        rs = tpl_render_run(r, self->p, &out, &n);
        PyEval_RestoreThread(c->ts);
    }
    c->gil = false;
    if (handle) {
        PyCapsule_SetContext(handle, NULL);
        Py_ssize_t k = PyList_GET_SIZE(cell);
        if (k && PyList_GET_ITEM(cell, k - 1) == handle) PyList_SetSlice(cell, k - 1, k, NULL);
        Py_DECREF(handle);
        c->run_tid = 0;
    }
    c->dispatch = NULL;
    c->call_failed = false;
    if (c->calls) { /* (a TemplateCallable kept past the render is refused) */
        PyCapsule_SetContext(c->calls, NULL);
        Py_CLEAR(c->calls);
    }
    bool synced = (c->kept || c->tracked) && rs == TPL_OK;
    if (synced && kept_sync(c) < 0) PyErr_Clear(); /* (what the template did last) */
    const sdep *moved = synced && c->nsd ? state_moved(c) : NULL;
    Py_CLEAR(c->kept);
    Py_CLEAR(c->tracked);
    if (write) {
        tpl_render_set_output(r, NULL, NULL);
        c->write = NULL;
    }
    c->last_out = rs == TPL_OK ? n : SIZE_MAX;
    PyObject *exc = tpl_render_error_payload(r);
    if (c->loader_exc) { /* the loader raised (Jinja2 lets it through, even ignore missing): as itself */
        Py_XDECREF(exc);
        exc = c->loader_exc;
        c->loader_exc = NULL;
        PyObject *tb = PyException_GetTraceback(exc), *type = (PyObject *)Py_TYPE(exc);
        Py_INCREF(type);
        PyErr_Restore(type, exc, tb); /* steals type, exc and tb */
        goto done;
    }
    if (moved) { /* (the template changed an argument's list or dict through a callable's result) */
        Py_XDECREF(exc);
        state_moved_error(moved, NULL);
    } else if (rs == TPL_OK) {
        Py_XDECREF(exc);
        result = output_str(out, n, &c->out_ascii);
    } else if (exc) {
        /* the callback's exception, as itself, annotated with the template location */
        const tpl_error *e = tpl_render_error(r);
        PyObject *note = PyUnicode_FromFormat("tpl: raised while rendering %s, line %u, column %u",
                                              e->file ? e->file : "<template>", e->line, e->column);
        if (note) {
            PyObject *rv = PyObject_CallMethod(exc, "add_note", "O", note);
            Py_XDECREF(rv);
            if (!rv) PyErr_Clear();
            Py_DECREF(note);
        }
        PyObject *tb = PyException_GetTraceback(exc), *type = (PyObject *)Py_TYPE(exc);
        Py_INCREF(type);
        PyErr_Restore(type, exc, tb); /* steals type, exc and tb */
    } else {
        result = error_tuple(tpl_render_error(r));
    }
done:
    slot_put(self, c);
    Py_XDECREF(plain);
    return result;
}

/* render(state) -> str | error tuple, with the Program's settings (configure); or
 * render(state, facts=None, remembers=None, call=None, lang=None, catalogs=None, tr_keys=None,
 * limits=None) with these settings for this render only. state: a dict or any mapping (only the
 * names the program reads are looked up). call: (channel, medium, claimed); limits: (fuel,
 * max_depth, max_output, max_memory), 0 for a default. */
static PyObject *Program_render(ProgramObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    if (nargs == 1 && !kwnames) return render(self, args[0], &self->defaults, NULL, NULL, NULL, NULL);
    static char *kwlist[] = { "state", "facts", "remembers", "call", "lang", "catalogs", "tr_keys", "limits",
                              "markup", "undefined", "funcs", NULL };
    PyObject *t = PyTuple_New(nargs), *kw = kwnames ? PyDict_New() : NULL;
    if (!t || (kwnames && !kw)) goto fail;
    for (Py_ssize_t i = 0; i < nargs; i++) {
        Py_INCREF(args[i]);
        PyTuple_SET_ITEM(t, i, args[i]);
    }
    for (Py_ssize_t i = 0; kwnames && i < PyTuple_GET_SIZE(kwnames); i++)
        if (PyDict_SetItem(kw, PyTuple_GET_ITEM(kwnames, i), args[nargs + i]) < 0) goto fail;
    PyObject *state, *facts = Py_None, *remembers = Py_None, *call = Py_None, *lang = Py_None, *catalogs = Py_None,
             *tr_keys = Py_None, *limits = Py_None, *markup = Py_None, *undefined = Py_None, *funcs = Py_None;
    if (!PyArg_ParseTupleAndKeywords(t, kw, "O|OOOOOOOOOO", kwlist, &state, &facts, &remembers, &call, &lang,
                                     &catalogs, &tr_keys, &limits, &markup, &undefined, &funcs))
        goto fail;
    settings s;
    if (settings_parse(&s, facts, remembers, call, lang, catalogs, tr_keys, limits, markup, undefined, funcs) < 0)
        goto fail;
    PyObject *res = render(self, state, &s, NULL, NULL, NULL, NULL);
    settings_clear(&s);
    Py_DECREF(t);
    Py_XDECREF(kw);
    return res;
fail:
    Py_XDECREF(t);
    Py_XDECREF(kw);
    return NULL;
}

/* _render_globals(state, globals, cell=None, dispatch=None) -> str | error tuple: render(state)
 * with the Program's settings and the names of the dict globals below the state's, seen by every
 * template it imports or includes, without context too (tpl_render_set_globals_val; Jinja2's
 * Environment.globals); the render's handle goes in the list cell while it runs (lookup); the
 * Python callables it calls are called as dispatch(f, args, kwargs) when dispatch is given. */
static PyObject *Program_render_globals(ProgramObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 2 || nargs > 4)
        return PyErr_Format(PyExc_TypeError, "_render_globals() takes 2 to 4 arguments (%zd given)", nargs);
    if (nargs == 4 && args[3] != Py_None && !PyCallable_Check(args[3]))
        return PyErr_Format(PyExc_TypeError, "dispatch must be callable");
    if (!PyDict_Check(args[1]))
        return PyErr_Format(PyExc_TypeError, "globals must be a dict, not %s", Py_TYPE(args[1])->tp_name);
    if (nargs == 3 && args[2] != Py_None && !PyList_Check(args[2]))
        return PyErr_Format(PyExc_TypeError, "cell must be a list, not %s", Py_TYPE(args[2])->tp_name);
    return render(self, args[0], &self->defaults, args[1], NULL, nargs >= 3 && args[2] != Py_None ? args[2] : NULL,
                  nargs == 4 && args[3] != Py_None ? args[3] : NULL);
}

/* _render_stream(state, globals, write, cell=None, dispatch=None) -> str | error tuple:
 * _render_globals(state, globals, cell, dispatch)
 * (globals None: none) with the output given to write(str) in pieces as the render produces it
 * (tpl_render_set_output); "" when it ends. write returning False stops the render (an error
 * tuple of status TPL_ERR_IO); what it raises is raised. */
static PyObject *Program_render_stream(ProgramObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 3 || nargs > 5)
        return PyErr_Format(PyExc_TypeError, "_render_stream() takes 3 to 5 arguments (%zd given)", nargs);
    if (nargs == 5 && args[4] != Py_None && !PyCallable_Check(args[4]))
        return PyErr_Format(PyExc_TypeError, "dispatch must be callable");
    if (args[1] != Py_None && !PyDict_Check(args[1]))
        return PyErr_Format(PyExc_TypeError, "globals must be a dict, not %s", Py_TYPE(args[1])->tp_name);
    if (!PyCallable_Check(args[2])) return PyErr_Format(PyExc_TypeError, "write must be callable");
    if (nargs >= 4 && args[3] != Py_None && !PyList_Check(args[3]))
        return PyErr_Format(PyExc_TypeError, "cell must be a list, not %s", Py_TYPE(args[3])->tp_name);
    return render(self, args[0], &self->defaults, args[1] == Py_None ? NULL : args[1], args[2],
                  nargs >= 4 && args[3] != Py_None ? args[3] : NULL, nargs == 5 && args[4] != Py_None ? args[4] : NULL);
}

/* render(mapping=None, /, **kwargs) -> str: tpl.Template.render (the variables of a mapping
 * and/or keyword arguments, merged as dict(...) merges them), with the Program's settings; a
 * template error is raised by type(self)._raise_error(error tuple) (tpl/__init__.py's _raise;
 * without it the error tuple is returned). */
static PyObject *Program_render_public(ProgramObject *self, PyObject *const *args, Py_ssize_t nargs,
                                       PyObject *kwnames)
{
    PyObject *state, *res;
    if (nargs == 1 && !kwnames) {
        res = render(self, args[0], &self->defaults, NULL, NULL, NULL, NULL);
    } else {
        state = nargs == 0 && !kwnames ? PyDict_New() : PyObject_Vectorcall((PyObject *)&PyDict_Type, args, (size_t)nargs, kwnames);
        if (!state) return NULL;
        res = render(self, state, &self->defaults, NULL, NULL, NULL, NULL);
        Py_DECREF(state);
    }
    if (res && PyTuple_CheckExact(res)) {
        PyObject *raiser = PyObject_GetAttrString((PyObject *)self, "_raise_error");
        if (!raiser) {
            PyErr_Clear();
            return res;
        }
        PyObject *r2 = PyObject_CallOneArg(raiser, res);
        Py_DECREF(raiser);
        Py_DECREF(res);
        return r2;
    }
    return res;
}

/* configure(facts=None, remembers=None, call=None, lang=None, catalogs=None, tr_keys=None,
 * limits=None): the settings of every render(state) from now on (as render's options). */
static PyObject *Program_configure(ProgramObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "facts", "remembers", "call", "lang", "catalogs", "tr_keys", "limits", "markup",
                              "undefined", "funcs", NULL };
    PyObject *facts = Py_None, *remembers = Py_None, *call = Py_None, *lang = Py_None, *catalogs = Py_None,
             *tr_keys = Py_None, *limits = Py_None, *markup = Py_None, *undefined = Py_None, *funcs = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|OOOOOOOOOO", kwlist, &facts, &remembers, &call, &lang, &catalogs,
                                     &tr_keys, &limits, &markup, &undefined, &funcs))
        return NULL;
    settings s;
    if (settings_parse(&s, facts, remembers, call, lang, catalogs, tr_keys, limits, markup, undefined, funcs) < 0)
        return NULL;
    /* check them on a context of their own before they become the defaults */
    render_ctx *c = PyMem_Calloc(1, sizeof *c);
    if (!c || !(c->r = tpl_render_new(s.has_lim ? &s.lim : NULL))) {
        PyMem_Free(c);
        settings_clear(&s);
        return PyErr_NoMemory();
    }
    c->max_iter_bytes = max_iter_bytes(s.has_lim ? &s.lim : NULL);
    c->max_iter_items = max_iter_items(s.has_lim ? &s.lim : NULL);
    int rc = apply(c, &s);
    slot_free(c);
    if (rc < 0) {
        settings_clear(&s);
        return NULL;
    }
    settings_clear(&self->defaults);
    self->defaults = s;
    self->gen++;
    while (self->npool > 0) slot_free(self->pool[--self->npool]);
    Py_RETURN_NONE;
}

static PyMethodDef Program_methods[] = {
    { "render", (PyCFunction)(void (*)(void))Program_render_public, METH_FASTCALL | METH_KEYWORDS,
      "render(mapping=None, /, **kwargs) -> str\n\nRenders with the variables of a mapping and/or keyword arguments (as "
      "dict(...) merges them). Python exceptions raised by the values' methods propagate as themselves; template "
      "errors raise tpl.TemplateError subclasses." },
    { "_render", (PyCFunction)(void (*)(void))Program_render, METH_FASTCALL | METH_KEYWORDS,
      "_render(state, facts=None, remembers=None, call=None, lang=None, catalogs=None, tr_keys=None, limits=None) "
      "-> str | error tuple" },
    { "_render_globals", (PyCFunction)(void (*)(void))Program_render_globals, METH_FASTCALL,
      "_render_globals(state, globals) -> str | error tuple: _render(state), the dict globals below it "
      "(seen by the templates it imports or includes without context too)" },
    { "_render_stream", (PyCFunction)(void (*)(void))Program_render_stream, METH_FASTCALL,
      "_render_stream(state, globals, write) -> str | error tuple: the output to write(str) in pieces "
      "as the render produces it; write returning False stops it" },
    { "_adopt", (PyCFunction)(void (*)(void))Program_adopt, METH_O, "_adopt(program): take over program's code" },
    { "configure", (PyCFunction)(void (*)(void))Program_configure, METH_VARARGS | METH_KEYWORDS,
      "configure(facts=None, remembers=None, call=None, lang=None, catalogs=None, tr_keys=None, limits=None)" },
    { "save", (PyCFunction)(void (*)(void))Program_save, METH_VARARGS, "save(strip_source=False) -> bytes (.tplb)" },
    { "dump", (PyCFunction)(void (*)(void))Program_dump, METH_NOARGS, "dump() -> str (disassembly)" },
    { NULL, NULL, 0, NULL },
};

static PyGetSetDef Program_getset[] = {
    { "reads", (getter)Program_reads, NULL, "the state names the program can read", NULL },
    { "syntax", (getter)Program_syntax, NULL, "0 jinja, 1 erb, 2 fmt", NULL },
    { NULL, NULL, NULL, NULL, NULL },
};

static PyTypeObject ProgramType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tpl._tpl.Program",
    .tp_basicsize = sizeof(ProgramObject),
    .tp_dealloc = (destructor)Program_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_new = Program_new,
    .tp_doc = "A compiled template (immutable; renders from many threads).",
    .tp_methods = Program_methods,
    .tp_getset = Program_getset,
};

static PyMethodDef mod_methods[] = {
    { "compile", mod_compile, METH_VARARGS, "compile(source, name, syntax, profile, options, loader)" },
    { "load", mod_load, METH_VARARGS, "load(data, name) -> Program | error tuple" },
    { "lookup", mod_lookup, METH_VARARGS, "lookup(handle, name): a template-level variable of a running render" },
    { "call", mod_call, METH_VARARGS, "call(handle, value, args, kwargs): a template callable of a running render" },
    { NULL, NULL, 0, NULL },
};

static struct PyModuleDef tpl_module = {
    PyModuleDef_HEAD_INIT, "_tpl", "libtpl binding (see tpl/__init__.py)", -1, mod_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__tpl(void)
{
    if (PyType_Ready(&ProgramType) < 0) return NULL;
    PyObject *m = PyModule_Create(&tpl_module);
    if (!m) return NULL;
    Py_INCREF(&ProgramType);
    if (PyModule_AddObject(m, "Program", (PyObject *)&ProgramType) < 0 ||
        PyModule_AddStringConstant(m, "version", TPL_VERSION_STRING) < 0) {
        Py_DECREF(&ProgramType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
