/* tpl/tpl_ext: the Ruby binding of libtpl (issue 20), written against include/tpl.h and Ruby's
 * C API only. lib/tpl.rb defines the module, the error classes and Tpl::ERB on top of it.
 *
 * Ruby values cross natively (tpl_val constructors): String (UTF-8; other encodings are
 * converted, invalid bytes refused), Symbol (a string flagged as a symbol), Integer (int64;
 * larger is a RangeError), Float, true/false/nil, Hash (insertion order; String and Symbol keys,
 * both found by name), Array, Range. Any other object is a host object the VM reads lazily
 * through respond_to? + public_send (ERB method calls, Jinja attributes: a method without parameters is called, others are Methods to call), [] (items), each/to_a
 * (iteration), to_s/inspect (printing), call (Procs and Methods).
 *
 * Template#_render(state, self, opts, remembers): state is a Hash (only the names of the
 * program's reads-set are looked up, as Symbol then String) or a Binding (its local variables),
 * self the ERB self object or nil. When neither host objects nor a remembers block take part,
 * the GVL is released while the VM runs; otherwise callbacks run Ruby code and the GVL stays
 * held (a render is then one Ruby call). A Template is immutable: many threads render it at
 * once, each render with a render context from the Template's pool (guarded by the GVL).
 *
 * A Ruby exception raised in a callback (rb_protect) ends the render and is re-raised as itself,
 * its message followed by " (tpl: raised while rendering FILE, line L, column C)". */
#include <ruby.h>
#include <ruby/encoding.h>
#include <ruby/ractor.h>
#include <ruby/thread.h>
#include <ruby/version.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include "tpl.h"
#include "tpl_page.h"
#include "tpl_store.h"

#ifndef TPL_GC_TELL
#define TPL_GC_TELL 1 /* tell Ruby's GC a Template's memory as it grows (tmpl_tell_gc) */
#endif
#define MAX_DEPTH 500   /* nesting of hashes/arrays converted from Ruby */
#define POOL_MAX 8      /* idle render contexts kept per Template */
#define IVCACHE 32      /* instance variables converted once per render */
#define IDC_SIZE 128    /* method/ivar name IDs cached per render context (a power of two) */
#define IDC_PROBE 8     /* slots probed per name */
#define IDC_NAME 40
#define GVL_VALS 512    /* a state this big (strings and containers) renders without the GVL */
#define GVL_OUT 16384   /* and so does a render context whose last output was this long */
#define GC_NUDGE (1024 * 1024) /* results returned between two GCs before a minor GC is asked for */
#define GC_NUDGE_SLOT 8 /* ... and at least this many bytes per live object slot (gc_nudge) */
#define GC_NUDGE_LEN 4096 /* results shorter than this count GC_NUDGE_SMALL times less (gc_nudge) */
#define GC_NUDGE_SMALL 4

/* The render options set on a render context (facts, catalogs, tr keys, lang, call), each with
 * the bytes it was set from: a render with the same options as the context's last one (an agent
 * re-rendering with its facts and language) sets nothing again — clearing and re-setting them
 * cost ~15 µs per render, more than a small template's whole render. */
enum { S_FACTS, S_CATS, S_KEYS, S_LANG, S_CALL, NSET };
typedef struct settings {
    unsigned dirty;         /* bit k: option k is set on the context (clear it when not wanted) */
    unsigned valid;         /* bit k: sig[k] is what option k was set from */
    char *sig[NSET];        /* malloc'd */
    size_t siglen[NSET];
} settings;

static void settings_free(settings *st)
{
    for (int k = 0; k < NSET; k++) free(st->sig[k]);
    memset(st, 0, sizeof *st);
}

/* A render context's scratch stacks, kept with it in the pool (malloc'd, grown on demand): the
 * converted entries of the Hashes being converted (tpl_val_map_of_str: one call, no per-key
 * lookup), the items of the Arrays being converted (tpl_val_list_of), and the state's values
 * found per read name. Nested containers use the stacks above their parents'. */
typedef struct idc_ent { const char *ptr; size_t len; char name[IDC_NAME]; ID id; } idc_ent;

typedef struct scratch {
    /* the IDs of the method and @ivar names the program sends (ERB calls, Jinja attributes),
     * by the address of the name in the program's constants (its bytes compared too): interning
     * a name costs ~500 instructions per call otherwise (IDC_SIZE entries, made on first use;
     * the context's own, so no lock) */
    idc_ent *idc;
    tpl_str_entry *ents;
    size_t nents, capents;
    tpl_val *items;
    size_t nitems, capitems;
    unsigned char *fkind;   /* per read: 0 none, 1 under a String key, 2 under a Symbol key (the
                             * values found are render_body's pinned array) */
    uint32_t *rwhich;       /* the state's reads found, and their values converted */
    tpl_val *rvals;         /* (tpl_render_set_state_reads' which and vals), capfound each */
    size_t capfound;
    tpl_str_str *ss;        /* an Array of Hashes of Strings: their entries (strmaps_val) */
    size_t nss, capss;
    uint32_t *cnt;          /* ... and each Hash's count */
    size_t capcnt;
    /* copies of the state's Strings for a render that cannot borrow them (scratch_copy): the
     * current block, and the blocks filled before it this render (freed when the next starts) */
    char *cb;
    size_t cbused, cbcap, cbtotal;
    char **cbold;
    size_t ncbold, capcbold;
} scratch;

static void scratch_free(scratch *sc)
{
    free(sc->idc);
    free(sc->ents);
    free(sc->items);
    free(sc->fkind);
    free(sc->rwhich);
    free(sc->rvals);
    free(sc->ss);
    free(sc->cnt);
    free(sc->cb);
    for (size_t i = 0; i < sc->ncbold; i++) free(sc->cbold[i]);
    free(sc->cbold);
    memset(sc, 0, sizeof *sc);
}

/* A render context with what it keeps between renders. */
typedef struct pooled {
    tpl_render *r;
    settings set;           /* the render options set on r */
    scratch sc;
    VALUE kc;               /* its key cache (Qnil until made) */
    size_t last_out;        /* the length of r's last output (the GVL rule, tmpl_render) */
    size_t last_nvals;      /* the strings and containers its last render's state had */
} pooled_ctx;

typedef struct tmpl {
    tpl_program *p;
    VALUE reads;            /* frozen Array of frozen Strings: the reads-set */
    VALUE read_syms;        /* Array of Symbols, same order */
    /* the read names' bytes (malloc'd copies: the state map borrows them), their
     * tpl_val_key_hash, and an open-addressing table of read indexes by that hash (rmask + 1
     * slots, -1 empty): the state Hash's keys are matched to the reads in one pass over it */
    char **read_ptr;
    size_t *read_len;
    uint64_t *read_hash;
    int32_t *rtab;
    size_t rmask, nreads;
    bool remembers;         /* the program may call remembers/remembers? (a read of either name, or
                             * templates loaded at render time): only then does Tpl::ERB#result
                             * ask the binding's self whether it answers them */
    /* the program sends nothing to an ERB self but @ivar reads (tpl_read.ivar; its other reads
     * are function calls: no TPL_READ_SELF call, no bare-name read, which falls back to self's
     * methods, no `call`, no name read both as @name and otherwise): Tpl::ERB#result then
     * reads self's @ivars before the run (ivar_id[i]: the ID of "@name" of read i, 0 for a
     * read that is not an @ivar) into the state, as a Hash's values, and sets no self: no
     * callback per @ivar, and Strings borrowed as from a Hash */
    bool ivars_only;
    /* a Tpl::ERB template in another encoding than UTF-8 (compile option erb_encoding): its
     * encoding index + 1 (0: UTF-8). Its non-ASCII text was compiled tagged (erb_tag) and
     * every result is untagged into it (erb_result) */
    int erb_enc;
    bool erb_tagged;        /* ... and its text holds tags */
    ID *ivar_id;
    size_t nivar;           /* the reads with an ivar_id */
    /* fn_id[i]: the ID of read i when the program reads that name only as a receiver-less call
     * (TPL_READ_FUNC: format(...), Integer(...), tr(...)), else 0; nfn: how many. With an ERB
     * self, Ruby resolves such a call through self: self's own method of that name (its class's,
     * a module's, a singleton's, an override of Kernel's) runs, not Kernel's — so when self
     * has one (self_fn), the state holds that Method under the name, which the VM's call of the
     * builtin calls instead (CALL_NAME: the state shadows a builtin), and a binding's local or a
     * result_with_hash key of that name is never the call's (Ruby's call with arguments is
     * always a method call) */
    ID *fn_id;
    size_t nfn;
    /* ivar_early[i]: @ivar read i was read before Ruby code first ran in a render that reads
     * self's @ivars into the state until then (render_body's ivar_first): only those are read
     * up front (the others are sent to self when read; marked by rb_send_cb when that happens
     * before Ruby code ran). Bytes written with relaxed atomics (Ractors share a Template). */
    unsigned char *ivar_early;
    /* idle render contexts; a frozen Template is shared by Ractors, which run at once (no GVL
     * between them), so the pool has its own lock: a spin lock (pool_lock), as what it guards is
     * a few stores — a pthread mutex's lock and unlock, three pairs per render, cost ~200
     * instructions (bench/RESULTS.md, session 31) */
    int lock;
    pooled_ctx pool[POOL_MAX];
    int npool;
    /* the bytes of the results returned since Ruby's GC last ran (gc_seen: rb_gc_count() then):
     * gc_nudge; under the lock */
    size_t gc_seen, gc_bytes;
    /* the memory Ruby's GC is told the Template holds beyond its struct (rb_gc_adjust_memory_usage,
     * so that many Templates made and dropped — Template.new/load in a loop — let GC run as their
     * malloc'd memory grows, as Ruby's own xmalloc'd objects do): prog_bytes (the program, its
     * .tplb size, and the reads tables) and ctx_bytes (its render contexts' blocks, counted by
     * their allocator, ctx_alloc: atomically, as it runs without the GVL); gc_told is the most the GC
     * was told (tmpl_tell_gc: growth only) */
    size_t prog_bytes, ctx_bytes, gc_told;
} tmpl;

struct rctx;

/* The pool's lock (tmpl.lock): held for a few loads and stores, never across a call into Ruby or
 * tpl, so a waiter spins a little and then yields its CPU (a holder preempted mid-section).
 * Taken only once Ractors other than the main one have been made: until then every section it
 * guards runs in the main Ractor's threads holding its GVL (they call nothing that could release
 * it), which already serializes them, and the lock's atomic exchange — a full barrier, paid after
 * the render's stores — was ~4% of w1's CPU time (bench/RESULTS.md, session 38).
 * ruby_single_main_ractor (vm_core.h; exported by libruby, not in its public headers: a link check
 * at build time, TPL_HAVE_RUBY_SINGLE_MAIN_RACTOR, else the lock is always taken) is the main
 * Ractor while it is the only one, and NULL for good from the moment a second is made — by a
 * thread of the main Ractor holding its GVL, so not while one of these sections runs. Returns
 * whether it was taken (pool_unlock's argument). */
#ifdef TPL_HAVE_RUBY_SINGLE_MAIN_RACTOR
struct rb_ractor_struct;
extern struct rb_ractor_struct *ruby_single_main_ractor;
#endif

static inline bool pool_lock(tmpl *t)
{
#ifdef TPL_HAVE_RUBY_SINGLE_MAIN_RACTOR
    if (__atomic_load_n(&ruby_single_main_ractor, __ATOMIC_RELAXED)) return false;
#endif
    for (unsigned spins = 0; __atomic_exchange_n(&t->lock, 1, __ATOMIC_ACQUIRE);)
        if (++spins % 64 == 0) sched_yield();
    return true;
}

static inline void pool_unlock(tmpl *t, bool locked)
{
    if (locked) __atomic_store_n(&t->lock, 0, __ATOMIC_RELEASE);
}

/* A host object: the Ruby object and its render (blocks live in chunks owned by the render). */
typedef struct rbobj {
    VALUE o;
    struct rctx *c;
    bool self;              /* the ERB self: private methods too (a receiver-less call in Ruby) */
} rbobj;

typedef struct objchunk {
    struct objchunk *next;
    int n;
    rbobj o[64];
} objchunk;

typedef struct rctx {
    tpl_render *r;
    VALUE keep;             /* Tpl::Keep (made on first use: keep): objects met during the render (host
                             * objects, whose rbobj holds their address), alive and pinned until it
                             * ends; rctx lives on the C stack, which the GC scans */
    settings set;           /* the render options set on r */
    scratch sc;
    VALUE kc;               /* the key cache (a Tpl::KeyCache object; on the C stack, so marked) */
    size_t last_out, last_nvals;
    size_t nvals;           /* strings and containers converted for this render */
    uint64_t max_items;     /* the most bytes an Enumerable is drained to (drain_cost; 0: the
                             * default limits' 256 MiB) */
    /* Strings borrowed, not copied (render_body): set while converting the state of a render
     * that will run with the GVL held and without callbacks — no Ruby code runs until it ends,
     * so no String changes, moves or goes — and only for a String whose bytes are not inside
     * the object (not embedded: GC compaction moves objects, not their heap buffers) — or
     * embedded too while borrow_emb (render_body: the state is made again, copying them, when
     * a GC ran while it was converted, as only a GC moves them) */
    bool borrow, borrowed, borrow_emb, borrowed_emb;
    /* copy: the state's Strings (up to COPY_MAX bytes) are copied into the context's scratch
     * blocks and borrowed from there (scratch_copy), where they are not borrowed themselves
     * (Ruby code runs during the render: a remembers block or self, host objects); copy_ok: the
     * context is pooled (a render with its own limits copies into its arena, counted) */
    bool copy, copy_ok;
    int enc_utf8, enc_ascii, enc_bin; /* encoding indexes */
    VALUE stack[MAX_DEPTH]; /* containers being converted (cycle check) */
    int depth;
    VALUE remembers;        /* callable or Qnil */
    VALUE remembers_self;   /* an ERB self whose remembers?/remembers answers, or Qnil */
    ID remembers_id;
    VALUE exc;              /* the Ruby exception that ended the render, or Qnil */
    objchunk *chunks;
    bool has_host;
    bool erb;               /* the program is ERB: Ruby semantics for [] */
    bool erb_api;           /* rendered for Tpl::ERB (an ERB self given): erb_foreign */
    bool tagged;            /* a String was tagged this render (erb_tag): the result is untagged */
    uint64_t tagset[4];     /* the encoding indexes tagged this render (a code point of another
                             * index in the output is a UTF-8 value's own character) */
    struct tmpl *t;         /* the Template rendered (its ID cache) */
    rbobj self_obj;         /* the ERB self's host object (render_body) */
    bool ivars_in_state;    /* self's @ivars are read from the state (render_body's ivar_first)
                             * until Ruby code runs (ivc_stale) */
    /* @ivars read this render; after Ruby code ran (ivc_stale) only those whose value is a
     * special constant (true, false, a Fixnum, a flonum: its VALUE is the value, nothing can
     * change it in place) are kept, stale: read again with rb_ivar_get, the converted value
     * reused when the VALUE is the same */
    struct { char name[40]; size_t len; tpl_val v; VALUE iv; ID id; bool stale; } ivc[IVCACHE];
    int nivc;
    ID refused;             /* self's method whose call a callback refused (self_kernel_refused), or 0 */
    bool fuel_out;          /* a callback ran out of the render's fuel (drain_i) */
    /* a callback's Ruby code left by a jump that is not an exception — a throw past the render
     * (Timeout.timeout's, catch/throw), Thread#kill, exit's — : its tag (host_exception), the
     * jump done again once the render has ended (render_given), rb_errinfo kept for it */
    int jump;
} rctx;

/* Ruby code runs (a method, [], each, to_s, remembers?...): it may change self's @ivars, which
 * Ruby's template reads changed. The @ivars read so far are read again after it; a special
 * constant's entry is kept, stale (rb_send_cb compares the VALUE read again). */
static void ivc_stale(rctx *c)
{
    if (c->ivars_in_state) { /* (read up front: from now on from self, live) */
        c->ivars_in_state = false;
        tpl_render_set_self_ivars_in_state(c->r, false);
    }
    int n = 0;
    for (int i = 0; i < c->nivc; i++)
        if (c->ivc[i].iv) {
            if (n != i) c->ivc[n] = c->ivc[i];
            c->ivc[n++].stale = true;
        }
    c->nivc = n;
}

static int to_val(rctx *c, VALUE o, tpl_val *out);
static const tpl_host_class rb_class;

/* What a render keeps alive until it ends (rctx.keep): a hidden Tpl::Keep object whose mark
 * function marks each with rb_gc_mark, which also pins it. Not an Array: an Array marks its items
 * movable, and GC compaction (GC.auto_compact, GC.compact) during a callback's Ruby code moved a
 * kept host object while its rbobj (malloc'd chunks, which the GC does not see) still held the
 * old address: a later callback sent to a T_MOVED/T_NONE slot ("[BUG] try to mark T_NONE
 * object"). Pinned, a kept object stays where the render's C memory points. */
typedef struct keepbuf { VALUE *v; size_t n, cap; } keepbuf;

static void keepbuf_mark(void *ptr)
{
    keepbuf *k = ptr;
    for (size_t i = 0; i < k->n; i++) rb_gc_mark(k->v[i]);
}

static void keepbuf_free(void *ptr)
{
    keepbuf *k = ptr;
    ruby_xfree(k->v);
    ruby_xfree(k);
}

static size_t keepbuf_size(const void *ptr) { return sizeof(keepbuf) + ((const keepbuf *)ptr)->cap * sizeof(VALUE); }

static const rb_data_type_t keep_type = {
    .wrap_struct_name = "Tpl::Keep",
    .function = { .dmark = keepbuf_mark, .dfree = keepbuf_free, .dsize = keepbuf_size },
    .flags = RUBY_TYPED_FREE_IMMEDIATELY,
};

static void keep(rctx *c, VALUE o)
{
    keepbuf *k;
    if (NIL_P(c->keep)) c->keep = TypedData_Make_Struct(0, keepbuf, &keep_type, k);
    else k = RTYPEDDATA_DATA(c->keep);
    if (k->n == k->cap) {
        /* (a GC the allocation runs marks the old buffer, still k->v; o is the caller's, on its stack) */
        size_t cap = k->cap ? k->cap * 2 : 16;
        k->v = ruby_xrealloc2(k->v, cap, sizeof(VALUE));
        k->cap = cap;
    }
    k->v[k->n++] = o;
    RB_GC_GUARD(o);
}

/* ------------------------------------------------------------------ helpers */

static VALUE mod_tpl(void) { return rb_const_get(rb_cObject, rb_intern("Tpl")); }

static tpl_status checkst(tpl_status st)
{
    if (st == TPL_OK) return st;
    if (st == TPL_ERR_LIMIT) rb_raise(rb_eNoMemError, "tpl: render memory limit reached");
    if (st == TPL_ERR_VALUE) rb_raise(rb_eEncodingError, "tpl: invalid UTF-8 string");
    if (st == TPL_ERR_TYPE) rb_raise(rb_eTypeError, "tpl: bad hash key or range");
    rb_raise(rb_eNoMemError, "tpl: out of memory");
    return st;
}

/* Raises the Tpl::Error subclass for e (Tpl::Error.from_tpl in lib/tpl.rb). */
static void raise_tpl(const tpl_error *e)
{
    char *f = tpl_error_format(e);
    VALUE args[8] = {
        INT2NUM((int)e->status), rb_utf8_str_new_cstr(e->message ? e->message : ""),
        e->file ? rb_utf8_str_new_cstr(e->file) : Qnil, UINT2NUM(e->line), UINT2NUM(e->column),
        e->source_line ? rb_utf8_str_new_cstr(e->source_line) : Qnil, rb_utf8_str_new_cstr(f ? f : ""),
        rb_utf8_str_new_cstr(tpl_error_exception(e->kind ? e->kind : tpl_status_kind(e->status), TPL_SYNTAX_ERB)),
    };
    free(f);
    VALUE ecls = rb_const_get(mod_tpl(), rb_intern("Error"));
    VALUE exc = rb_funcallv(ecls, rb_intern("from_tpl"), 8, args);
    rb_exc_raise(exc);
}

/* A UTF-8 view of a Ruby string (converted when its encoding is another one). */
static VALUE utf8_str(VALUE s)
{
    rb_encoding *enc = rb_enc_get(s);
    if (enc == rb_utf8_encoding() || enc == rb_usascii_encoding() || enc == rb_ascii8bit_encoding()) return s;
    return rb_str_export_to_enc(s, rb_utf8_encoding());
}

/* Tpl::ERB's text in other encodings than UTF-8 (ERB appends each String to its buffer as it
 * is: a result in the encoding of the non-ASCII text appended, or Encoding::CompatibilityError
 * when two encodings meet with non-ASCII text in both, as String#<< raises). tpl's text is
 * UTF-8, so such text is *tagged*: every byte of a non-ASCII character of encoding index E
 * becomes the code point TAG_BASE + (E << 8) + byte (Supplementary Private Use Area-A, 4 UTF-8
 * bytes), which prints, compares and hashes as the same bytes in the same encoding would; the
 * result is untagged (erb_result), replaying String#<<'s encoding rule over its runs of
 * non-ASCII text. Tagged: a non-UTF-8 template's non-ASCII text (lib/tpl.rb, Tpl._erb_tag) and
 * what is printed of a value String in such an encoding (its to_s), a Hash key or a Symbol. A
 * value String itself stays a host object, so its methods (bytesize, upcase, ==) are Ruby's. */
#define TAG_BASE 0xF0000u
#define TAG_MAXENC 254

/* A String in another ASCII-compatible encoding than UTF-8/US-ASCII with non-ASCII bytes, met
 * by a Tpl::ERB render (true: tagged or kept as a host object), or in an encoding that is not
 * ASCII-compatible (UTF-16, UTF-32: true, a host object, whose methods are Ruby's; printed, or
 * a key, it is refused: erb_unprintable). Tpl::Template#render converts instead, as documented. */
static bool erb_foreign(rctx *c, VALUE s)
{
    int ei = RB_ENCODING_GET(s);
    if (!c->erb_api || ei == c->enc_utf8 || ei == c->enc_ascii) return false;
    rb_encoding *enc = rb_enc_from_index(ei);
    if (!rb_enc_asciicompat(enc)) return true;
    if (rb_enc_str_coderange(s) == RUBY_ENC_CODERANGE_7BIT) return false;
    if (ei <= TAG_MAXENC) return true;
    rb_raise(rb_eEncCompatError, "Tpl::ERB: String in %s with non-ASCII characters (%+" PRIsVALUE "): not supported",
             rb_enc_name(enc), s);
    return false;
}

/* Printing (or keying by) a String whose encoding is not ASCII-compatible: ERB's buffer refuses
 * it once it holds text, with this error, Ruby's (and gives a result in that encoding when it is
 * the first text: tpl's result is UTF-8, so that is refused too, with the same error). */
static void erb_unprintable(rctx *c, VALUE s)
{
    const char *te = c->t && c->t->erb_enc ? rb_enc_name(rb_enc_from_index(c->t->erb_enc - 1)) : "UTF-8";
    rb_raise(rb_eEncCompatError, "incompatible character encodings: %s and %s", te, rb_enc_name(rb_enc_get(s)));
}

/* s's bytes, read as characters of encoding index ei, with every byte of a non-ASCII
 * character tagged (a new UTF-8 String). */
static VALUE erb_tag(VALUE s, int ei)
{
    rb_encoding *enc = rb_enc_from_index(ei);
    const char *p = RSTRING_PTR(s), *e = p + RSTRING_LEN(s);
    VALUE out = rb_str_buf_new(RSTRING_LEN(s) * 2);
    while (p < e) {
        const char *q = p;
        while (q < e && (unsigned char)*q < 0x80) q++;
        if (q > p) { rb_str_buf_cat(out, p, q - p); p = q; continue; }
        int m = rb_enc_precise_mbclen(p, e, enc);
        long len = MBCLEN_CHARFOUND_P(m) ? MBCLEN_CHARFOUND_LEN(m) : 1;
        for (long i = 0; i < len; i++) {
            unsigned b = (unsigned char)p[i], cp = TAG_BASE | ((unsigned)ei << 8) | b;
            char u[4] = { (char)0xF3, (char)(0x80 | ((cp >> 12) & 0x3F)), (char)(0x80 | ((cp >> 6) & 0x3F)),
                          (char)(0x80 | (cp & 0x3F)) };
            rb_str_buf_cat(out, u, 4);
        }
        p += len;
    }
    rb_enc_associate_index(out, rb_utf8_encindex());
    /* (s on the stack until here, so the GC pins it: p points into it — inside the object when s
     * is embedded — and rb_str_buf_new/rb_str_buf_cat allocate, where a compacting GC moved an
     * unpinned s and p read its old slot) */
    RB_GC_GUARD(s);
    return out;
}

/* Tpl._erb_tag(str, encoding): str's text tagged as characters of encoding (lib/tpl.rb: a
 * non-UTF-8 Tpl::ERB template) */
static VALUE mod_erb_tag(VALUE mod, VALUE s, VALUE enc)
{
    StringValue(s);
    int ei = rb_to_encoding_index(enc);
    if (ei < 0 || ei > TAG_MAXENC || !rb_enc_asciicompat(rb_enc_from_index(ei)))
        rb_raise(rb_eArgError, "Tpl::ERB: cannot render a template in %" PRIsVALUE, rb_inspect(enc));
    return erb_tag(s, ei);
}

/* The result of a Tpl::ERB render from tpl's UTF-8 output: tags back to their bytes, and the
 * encoding ERB's buffer ends in — it starts in the template's (tenc) and, as String#<< does,
 * takes the encoding of the first non-ASCII text appended while it holds ASCII only; non-ASCII
 * text of another encoding after that is Encoding::CompatibilityError, with Ruby's message. */
static VALUE erb_result(rctx *c, const char *p, size_t n, int tenc)
{
    VALUE out = rb_str_buf_new((long)n);
    char *o = RSTRING_PTR(out);
    size_t j = 0;
    int b = tenc;
    bool ascii = true;
    for (size_t i = 0; i < n;) {
        unsigned char u = (unsigned char)p[i];
        if (u < 0x80) { o[j++] = (char)u; i++; continue; }
        int x = -1;
        if (u == 0xF3 && i + 3 < n && ((unsigned char)p[i + 1] & 0xF0) == 0xB0) {
            unsigned cp = (3u << 18) | (((unsigned char)p[i + 1] & 0x3Fu) << 12) | (((unsigned char)p[i + 2] & 0x3Fu) << 6) |
                          ((unsigned char)p[i + 3] & 0x3Fu);
            x = (int)((cp >> 8) & 0xFF);
            /* (a code point of an encoding not tagged in this render — the template's, or a
             * value's — is a UTF-8 value's own character) */
            if (!(c->tagset[x >> 6] >> (x & 63) & 1)) x = -1;
            else {
                o[j++] = (char)(cp & 0xFF);
                i += 4;
            }
        }
        if (x < 0) {
            size_t l = u >= 0xF0 ? 4 : u >= 0xE0 ? 3 : 2;
            if (l > n - i) l = n - i;
            memcpy(o + j, p + i, l);
            j += l;
            i += l;
            x = c->enc_utf8;
        }
        if (x != b) {
            if (!ascii)
                rb_raise(rb_eEncCompatError, "incompatible character encodings: %s and %s", rb_enc_name(rb_enc_from_index(b)),
                         rb_enc_name(rb_enc_from_index(x)));
            b = x;
        }
        ascii = false;
    }
    rb_str_set_len(out, (long)j);
    rb_enc_associate_index(out, b);
    return out;
}

/* str_val's flag (above tpl's own): tag a foreign String (erb_foreign) instead of keeping it
 * as a host object — a Hash key, a Symbol, what a host object prints */
#define SV_TAG 0x10000u

static int host_val(rctx *c, VALUE o, tpl_val *out);

/* Room for `more` on a scratch stack (ruby_xrealloc: NoMemoryError when it fails). */
#define GROW(ptr, n, cap, more)                                                                   \
    do {                                                                                          \
        if ((n) + (more) > (cap)) {                                                               \
            size_t ncap_ = (cap) ? (cap) * 2 : 64;                                                \
            while (ncap_ < (n) + (more)) ncap_ *= 2;                                              \
            void *np_ = realloc((ptr), ncap_ * sizeof *(ptr));                                    \
            if (!np_) rb_raise(rb_eNoMemError, "tpl: out of memory");                             \
            (ptr) = np_;                                                                          \
            (cap) = ncap_;                                                                        \
        }                                                                                         \
    } while (0)

/* A copy of the n bytes at p in the render context's scratch blocks, valid until the next render
 * starts (scratch_copy_reset); NULL (the caller copies otherwise, into the render's memory,
 * counted against its limit) past COPY_TOTAL bytes a render, or out of memory. Never raises. */
#define COPY_MAX 4096
#define COPY_TOTAL (256 * 1024)
static char *scratch_copy(rctx *c, const char *p, size_t n)
{
    scratch *sc = &c->sc;
    if (n > COPY_TOTAL - sc->cbtotal) return NULL;
    sc->cbtotal += n;
    if (sc->cbcap - sc->cbused < n) {
        size_t cap = sc->cbcap ? sc->cbcap * 2 : 16384;
        while (cap < n) cap *= 2;
        if (sc->cb && sc->ncbold == sc->capcbold) { /* (no raise: ivar_plain runs unprotected) */
            size_t ncap = sc->capcbold ? sc->capcbold * 2 : 8;
            char **ob = realloc(sc->cbold, ncap * sizeof *ob);
            if (!ob) return NULL;
            sc->cbold = ob;
            sc->capcbold = ncap;
        }
        char *nb = malloc(cap);
        if (!nb) return NULL;
        if (sc->cb) sc->cbold[sc->ncbold++] = sc->cb;
        sc->cb = nb;
        sc->cbcap = cap;
        sc->cbused = 0;
    }
    char *d = sc->cb + sc->cbused;
    memcpy(d, p, n);
    sc->cbused += n;
    return d;
}

static void scratch_copy_reset(scratch *sc)
{
    for (size_t i = 0; i < sc->ncbold; i++) free(sc->cbold[i]);
    sc->ncbold = 0;
    sc->cbused = sc->cbtotal = 0;
}

/* str_val's common case inline (a state's Strings, a Hash's values): a UTF-8 or US-ASCII String
 * Ruby knows valid, borrowed (c->borrow) or copied to the scratch blocks (c->copy); false:
 * str_val decides. */
static inline bool str_borrow_fast(rctx *c, VALUE s, tpl_val *out)
{
    if (!c->borrow && !c->copy) return false;
    if (c->erb && RB_OBJ_FROZEN_RAW(s)) return false; /* (ERB: str_val marks it frozen) */
    int ei = RB_ENCODING_GET_INLINED(s), cr = RB_ENC_CODERANGE(s);
    if (!(cr == RUBY_ENC_CODERANGE_7BIT && (ei == c->enc_utf8 || ei == c->enc_ascii)) &&
        !(cr == RUBY_ENC_CODERANGE_VALID && ei == c->enc_utf8))
        return false;
    const char *p = RSTRING_PTR(s);
    size_t n = (size_t)RSTRING_LEN(s);
    if (c->borrow) {
        bool emb = !RB_FL_TEST_RAW(s, RSTRING_NOEMBED);
        if (emb && !c->borrow_emb) return false;
        c->borrowed = true;
        c->borrowed_emb |= emb;
    } else if (n > COPY_MAX || !(p = scratch_copy(c, p, n))) {
        return false;
    }
    c->nvals++;
    checkst(tpl_val_str_borrow(p, n, out));
    return true;
}

static int str_val(rctx *c, VALUE s, unsigned flags, tpl_val *out)
{
    /* ERB: a frozen value String stays frozen (frozen? true; `<<` on it Ruby's FrozenError) */
    unsigned fz = c->erb && flags == 0 && RB_OBJ_FROZEN_RAW(s) ? TPL_VAL_FROZEN : 0;
    if ((c->borrow || c->copy) && flags == 0 && str_borrow_fast(c, s, out)) return 0;
    if (erb_foreign(c, s)) {
        if (!(flags & (SV_TAG | TPL_VAL_SYMBOL))) return host_val(c, s, out);
        int ei = RB_ENCODING_GET(s);
        if (!rb_enc_asciicompat(rb_enc_from_index(ei))) erb_unprintable(c, s);
        VALUE u = erb_tag(s, ei);
        c->tagged = true;
        c->tagset[ei >> 6] |= UINT64_C(1) << (ei & 63);
        c->nvals++;
        checkst(tpl_val_str(c->r, RSTRING_PTR(u), (size_t)RSTRING_LEN(u), (flags & ~SV_TAG) | TPL_VAL_UTF8_VALID, out));
        RB_GC_GUARD(u);
        return 0;
    }
    bool printed = (flags & (SV_TAG | TPL_VAL_SYMBOL)) != 0;
    flags &= ~SV_TAG;
    int ei = RB_ENCODING_GET(s);
    bool own = true; /* s is the caller's String (alive as long as the state), not a conversion */
    if (ei != c->enc_utf8 && ei != c->enc_ascii && ei != c->enc_bin) {
        s = rb_str_export_to_enc(s, rb_utf8_encoding());
        ei = c->enc_utf8;
        own = false;
    }
    /* Ruby knows (and caches in the string) whether its bytes are valid: tpl need not check
     * again (an ASCII-8BIT string is checked by tpl, as its code range says nothing of UTF-8) */
    int cr = RB_ENC_CODERANGE(s);
    if (cr == RUBY_ENC_CODERANGE_UNKNOWN) cr = rb_enc_str_coderange(s);
    if (cr == RUBY_ENC_CODERANGE_7BIT || (cr == RUBY_ENC_CODERANGE_VALID && ei == c->enc_utf8)) {
        if (c->borrow && own && flags == 0 && (c->borrow_emb || RB_FL_TEST_RAW(s, RSTRING_NOEMBED))) {
            c->nvals++;
            c->borrowed = true;
            c->borrowed_emb |= !RB_FL_TEST_RAW(s, RSTRING_NOEMBED);
            if (fz) checkst(tpl_val_str(c->r, RSTRING_PTR(s), (size_t)RSTRING_LEN(s), TPL_VAL_BORROW | TPL_VAL_UTF8_VALID | fz, out));
            else checkst(tpl_val_str_borrow(RSTRING_PTR(s), (size_t)RSTRING_LEN(s), out));
            return 0;
        }
        flags |= TPL_VAL_UTF8_VALID;
    }
    tpl_status st = tpl_val_str(c->r, RSTRING_PTR(s), (size_t)RSTRING_LEN(s), flags | fz, out);
    /* Tpl::ERB: a UTF-8 String with invalid bytes stays a Ruby String, whose methods
     * (valid_encoding?, scrub, bytesize) are Ruby's; printing it is refused */
    if (st == TPL_ERR_VALUE && c->erb_api && !printed && own && ei == c->enc_utf8) return host_val(c, s, out);
    c->nvals++;
    if (st == TPL_ERR_VALUE) rb_raise(rb_eEncodingError, "tpl: string is not valid UTF-8: %+" PRIsVALUE, s);
    checkst(st);
    return 0;
}

static void enter(rctx *c, VALUE o)
{
    for (int i = 0; i < c->depth; i++)
        if (c->stack[i] == o) rb_raise(rb_eArgError, "tpl: cyclic %s in the render state", rb_obj_classname(o));
    if (c->depth == MAX_DEPTH) rb_raise(rb_eArgError, "tpl: render state nested deeper than %d levels", MAX_DEPTH);
    c->stack[c->depth++] = o;
}

static void key_val(rctx *c, VALUE k, tpl_val *out)
{
    if (RB_TYPE_P(k, T_STRING)) str_val(c, k, SV_TAG, out);
    else if (SYMBOL_P(k)) str_val(c, rb_sym2str(k), TPL_VAL_SYMBOL, out);
    else if (NIL_P(k) || k == Qtrue || k == Qfalse || RB_INTEGER_TYPE_P(k) || RB_FLOAT_TYPE_P(k)) to_val(c, k, out);
    else rb_raise(rb_eTypeError, "tpl: hash keys must be String, Symbol, Integer, Float, true, false or nil, not %s",
                  rb_obj_classname(k));
}


/* The key cache of a render context: the Hash keys (frozen Strings, Symbols) converted by its
 * renders, by object, with a copy of their bytes and their tpl_val_key_hash, so that the keys
 * met render after render (a chat's "role" and "content", a list of records' field names) are
 * checked, copied and hashed once, not on every render. A Ruby object (Tpl::KeyCache, never seen
 * by Ruby code) so that the GC marks — and pins — the keys it holds: a key's address is not
 * reused by another object while it is here. A copy replaced during a render may still be
 * borrowed by that render's values: it is freed when the next render starts. */
#define KEYC 256
/* It also keeps the arguments of remembers("...") calls into Ruby (REMC frozen Strings,
 * direct-mapped by length and end bytes, compared by their bytes, their code range known): each
 * call passes a fresh unfrozen copy (rb_str_dup, as a literal in ERB's code makes one), without
 * rb_utf8_str_new's encoding set-up and the code range scan of the callee's comparisons. */
#define REMC 8
#define REM_MAX 64      /* (longer arguments are made each call) */
/* ridx: the read of the context's Template whose name the key is (state_i: a state Hash's key
 * matched once, not probed and compared on every render; a context renders one Template, whose
 * reads never change), -1 none, KEY_RIDX_UNSET not matched yet */
#define KEY_RIDX_UNSET (-2)
typedef struct keyent { VALUE k; char *u8; uint32_t len; int32_t ridx; uint64_t hash; } keyent;
typedef struct keycache {
    keyent e[KEYC];
    char **dead;
    size_t ndead, capdead;
    VALUE rem[REMC];
} keycache;

static void keycache_mark(void *ptr)
{
    keycache *kc = ptr;
    for (int i = 0; i < KEYC; i++)
        if (kc->e[i].k) rb_gc_mark(kc->e[i].k);
    for (int i = 0; i < REMC; i++)
        if (kc->rem[i]) rb_gc_mark(kc->rem[i]);
}

static void keycache_drop_dead(keycache *kc)
{
    for (size_t i = 0; i < kc->ndead; i++) free(kc->dead[i]);
    kc->ndead = 0;
}

static void keycache_free(void *ptr)
{
    keycache *kc = ptr;
    for (int i = 0; i < KEYC; i++) free(kc->e[i].u8);
    keycache_drop_dead(kc);
    free(kc->dead);
    free(kc);
}

static size_t keycache_size(const void *ptr) { (void)ptr; return sizeof(keycache); }
/* Frozen and Ractor-shareable: a Template marks its pooled contexts' key caches (tmpl_mark), and
 * Ractor.shareable? follows what a frozen Template marks — a key cache that was not shareable
 * made a Template rendered once unshareable, and Ractor.new(t) then deep-copied it into an
 * uninitialized one ("tpl: uninitialized Template" in the Ractor). What it holds is shareable
 * (Symbols, frozen Strings: the only keys it takes), and one render at a time uses it (the pool
 * hands each context to one render). */
static const rb_data_type_t keycache_type = {
    .wrap_struct_name = "Tpl::KeyCache",
    .function = { .dmark = keycache_mark, .dfree = keycache_free, .dsize = keycache_size },
    .flags = RUBY_TYPED_FREE_IMMEDIATELY | RUBY_TYPED_FROZEN_SHAREABLE,
};

static VALUE keycache_new(void)
{
    keycache *kc = calloc(1, sizeof *kc);
    if (!kc) rb_raise(rb_eNoMemError, "tpl: out of memory");
    return rb_obj_freeze(TypedData_Wrap_Struct(0, &keycache_type, kc));
}

/* Whether ks (a key's String) is UTF-8 with valid bytes, or US-ASCII. */
static bool key_ok(rctx *c, VALUE ks)
{
    int ei = RB_ENCODING_GET(ks), cr = RB_ENC_CODERANGE(ks);
    if (cr == RUBY_ENC_CODERANGE_UNKNOWN) cr = rb_enc_str_coderange(ks);
    return (ei == c->enc_utf8 && (cr == RUBY_ENC_CODERANGE_7BIT || cr == RUBY_ENC_CODERANGE_VALID)) ||
           (ei == c->enc_ascii && cr == RUBY_ENC_CODERANGE_7BIT);
}

/* The cache entry of key k (a frozen String or a Symbol; ks its String, key_ok): found, or
 * made now in k's slot. NULL when memory runs out (the caller copies the key itself). */
static keyent *key_fill(rctx *c, keyent *e, VALUE k, VALUE ks)
{
    keycache *kc = DATA_PTR(c->kc);
    size_t n = (size_t)RSTRING_LEN(ks);
    /* (only a shareable key — not a frozen String whose @ivars hold mutable objects: the key
     * cache must stay Ractor-shareable, keycache_type) */
    if (n > UINT32_MAX - 1 || !rb_ractor_shareable_p(k)) return NULL;
    if (e->u8 && kc->ndead == kc->capdead) {
        size_t cap = kc->capdead ? kc->capdead * 2 : 16;
        char **d = realloc(kc->dead, cap * sizeof *d);
        if (!d) return NULL;
        kc->dead = d;
        kc->capdead = cap;
    }
    char *u = malloc(n + 1);
    if (!u) return NULL;
    memcpy(u, RSTRING_PTR(ks), n);
    u[n] = 0;
    if (e->u8) kc->dead[kc->ndead++] = e->u8;
    e->k = k;
    e->u8 = u;
    e->len = (uint32_t)n;
    e->hash = tpl_val_key_hash(u, n);
    e->ridx = KEY_RIDX_UNSET;
    return e;
}

/* Walks a Hash's entries, calling fn(key, value, arg) for each. Where libruby exports it (a
 * build-time check: TPL_HAVE_RB_HASH_STLIKE_FOREACH), rb_hash_stlike_foreach walks the table
 * directly: rb_hash_foreach also raises the Hash's iteration level and undoes it through
 * rb_ensure, ~270 instructions per Hash (a chat's 20 message Hashes, w2's 1,000 records). Safe
 * for the conversion's callbacks: they run no Ruby code (no method is called: a Bignum goes
 * through rb_big2str, another encoding through rb_str_export_to_enc), so nothing can change the
 * Hash while it is walked, and an exception they raise leaves no iteration level behind. */
#ifdef TPL_HAVE_RB_HASH_STLIKE_FOREACH
int rb_hash_stlike_foreach(VALUE hash, st_foreach_callback_func *func, st_data_t arg); /* (hash.c) */
#define HASH_EACH(h, fn, arg) rb_hash_stlike_foreach((h), fn##_st, (st_data_t)(arg))
#define HASH_EACH_FN(fn) \
    static int fn##_st(st_data_t k, st_data_t v, st_data_t a) { return fn((VALUE)k, (VALUE)v, (VALUE)a); }
#else
#define HASH_EACH(h, fn, arg) rb_hash_foreach((h), fn, (VALUE)(arg))
#define HASH_EACH_FN(fn)
#endif

/* A Hash: while its keys are all Strings (or all Symbols) in UTF-8/US-ASCII with valid bytes —
 * distinct, as a Ruby Hash's keys of one kind and encoding are — its entries are gathered on the
 * scratch stack and the map is made at once (tpl_val_map_of_str, the keys borrowed from the key
 * cache or from a copy in the render's memory); from the first other key on, entry by entry
 * (tpl_val_map_set, which compares keys as tpl does). */
enum { HK_STR = 0, HK_SYM = 1, HK_SET = 2, HK_NONE = 3 };
struct hash_iter { rctx *c; tpl_val map; size_t base; int mode; };

static void hash_flush(struct hash_iter *h)
{
    rctx *c = h->c;
    scratch *sc = &c->sc;
    checkst(tpl_val_map_of_str(c->r, sc->ents ? sc->ents + h->base : NULL, sc->nents - h->base,
                               TPL_VAL_BORROW | TPL_VAL_UTF8_VALID | (h->mode == HK_SYM ? TPL_VAL_SYMBOL : 0), &h->map));
    sc->nents = h->base;
}

static int hash_i(VALUE k, VALUE v, VALUE arg)
{
    struct hash_iter *h = (struct hash_iter *)arg;
    rctx *c = h->c;
    if (h->mode != HK_SET) {
        int kind = RB_TYPE_P(k, T_STRING) ? HK_STR : SYMBOL_P(k) ? HK_SYM : HK_SET;
        const keyent *ke = NULL;
        VALUE ks = Qnil;
        if (kind != HK_SET) {
            keyent *slot = &((keycache *)DATA_PTR(c->kc))->e[((uintptr_t)k * UINT64_C(0x9E3779B97F4A7C15)) >> 56 & (KEYC - 1)];
            if (slot->k == k) ke = slot;
            else {
                ks = kind == HK_SYM ? rb_sym2str(k) : k;
                if (!key_ok(c, ks)) kind = HK_SET;
                else if (kind == HK_SYM || OBJ_FROZEN(k)) ke = key_fill(c, slot, k, ks);
            }
        }
        if (h->mode == HK_NONE && kind != HK_SET) h->mode = kind;
        if (kind == h->mode) {
            const char *kp;
            size_t kn;
            uint64_t kh;
            if (ke) {
                kp = ke->u8, kn = ke->len, kh = ke->hash;
            } else { /* a key the cache does not hold (not frozen: a compare_by_identity Hash's) */
                tpl_val kv;
                checkst(tpl_val_str(c->r, RSTRING_PTR(ks), (size_t)RSTRING_LEN(ks), TPL_VAL_UTF8_VALID, &kv));
                kp = tpl_val_as_str(kv, &kn);
                kh = tpl_val_key_hash(kp, kn);
            }
            /* (a String value borrowed inline; anything else converted by to_val, which uses the
             * stacks above ours, and pops them); the entry written in place */
            tpl_val vv;
            if (!((c->borrow || c->copy) && RB_TYPE_P(v, T_STRING) && str_borrow_fast(c, v, &vv))) to_val(c, v, &vv);
            scratch *sc = &c->sc;
            GROW(sc->ents, sc->nents, sc->capents, 1);
            tpl_str_entry *e = &sc->ents[sc->nents++];
            e->key = kp;
            e->len = kn;
            e->hash = kh;
            e->val = vv;
            return ST_CONTINUE;
        }
        if (h->mode == HK_NONE) h->mode = HK_STR;
        hash_flush(h);
        h->mode = HK_SET;
    }
    tpl_val kv, vv;
    key_val(c, k, &kv);
    to_val(c, v, &vv);
    /* two keys Ruby keeps apart that tpl's map takes as one (a Symbol and a String of one name,
     * 1 and 1.0): the second replaced the first, silently — refused instead */
    size_t had = tpl_val_len(h->map);
    checkst(tpl_val_map_set(c->r, h->map, kv, vv));
    if (tpl_val_len(h->map) == had)
        rb_raise(rb_eArgError, "tpl: a Hash in the render state has keys tpl takes as one, %+" PRIsVALUE
                 " and another (a Symbol and a String of one name, one text in two encodings, or equal numbers): Ruby keeps them apart", k);
    return ST_CONTINUE;
}

HASH_EACH_FN(hash_i)

/* Whether Hash h converts to a map: it has no default (Hash.new(0), Hash.new { |h, k| ... }: its
 * [] of a missing key is Ruby's) and does not compare by identity; any other Hash is a host
 * object, its methods Ruby's. The default is read from Ruby 3.1-3.3's struct RHash
 * (internal/hash.h: after the table pointer; no API reads it without a method call), else with
 * Hash#default and #default_proc. (rb_hash_compare_by_id_p: exported, not in the headers.) */
VALUE rb_hash_compare_by_id_p(VALUE hash);
static bool hash_plain(VALUE h)
{
#if RUBY_API_VERSION_MAJOR == 3 && RUBY_API_VERSION_MINOR >= 1 && RUBY_API_VERSION_MINOR <= 3
    struct rhash_head { struct RBasic basic; void *as; VALUE ifnone; };
    if (((const struct rhash_head *)h)->ifnone != Qnil) return false;
#else
    if (!NIL_P(rb_funcall(h, rb_intern("default"), 0)) || !NIL_P(rb_funcall(h, rb_intern("default_proc"), 0))) return false;
#endif
    return !RTEST(rb_hash_compare_by_id_p(h));
}

static int hash_val(rctx *c, VALUE h, tpl_val *out)
{
    enter(c, h);
    c->nvals++;
    struct hash_iter it = { c, { { 0, 0 } }, c->sc.nents, HK_NONE };
    HASH_EACH(h, hash_i, &it);
    if (it.mode != HK_SET) {
        if (it.mode == HK_NONE) it.mode = HK_STR;
        hash_flush(&it);
    }
    *out = it.map;
    if (RB_OBJ_FROZEN_RAW(h)) tpl_val_freeze(out);   /* frozen?, and FrozenError for a change */
    c->depth--;
    return 0;
}

/* An Array of Hashes whose keys and values are all Strings (a chat's messages, a list of
 * records of text), on a render that borrows its Strings or copies them to its scratch blocks
 * (scratch_copy): the list and its maps made at once by
 * tpl_val_list_of_str_maps (one allocation; no map, tpl_val per value or entry copy per Hash).
 * strmap_i gathers one Hash's entries as str_borrow_fast and hash_i would take them — a frozen
 * String key of the key cache, a value borrowed as str_borrow_fast borrows it — and stops at the
 * first that is not such: the Array is then converted item by item (ary_val). */
struct strmaps_iter { rctx *c; bool ok; };

static int strmap_i(VALUE k, VALUE v, VALUE arg)
{
    struct strmaps_iter *it = (struct strmaps_iter *)arg;
    rctx *c = it->c;
    if (!RB_TYPE_P(k, T_STRING) || !RB_TYPE_P(v, T_STRING)) goto no;
    if (c->erb && RB_OBJ_FROZEN_RAW(v)) goto no; /* (ERB: str_val marks it frozen) */
    keyent *slot = &((keycache *)DATA_PTR(c->kc))->e[((uintptr_t)k * UINT64_C(0x9E3779B97F4A7C15)) >> 56 & (KEYC - 1)];
    const keyent *ke = slot;
    if (slot->k != k && !(OBJ_FROZEN(k) && key_ok(c, k) && (ke = key_fill(c, slot, k, k)))) goto no;
    int ei = RB_ENCODING_GET_INLINED(v), cr = RB_ENC_CODERANGE(v);
    if (!(cr == RUBY_ENC_CODERANGE_7BIT && (ei == c->enc_utf8 || ei == c->enc_ascii)) &&
        !(cr == RUBY_ENC_CODERANGE_VALID && ei == c->enc_utf8))
        goto no;
    const char *p = RSTRING_PTR(v);
    long n = RSTRING_LEN(v);
    if (c->borrow) {
        bool emb = !RB_FL_TEST_RAW(v, RSTRING_NOEMBED);
        if ((emb && !c->borrow_emb) || (unsigned long)n >= UINT32_MAX) goto no;
        c->borrowed_emb |= emb;
    } else if (n > COPY_MAX || !(p = scratch_copy(c, p, (size_t)n))) {
        goto no;
    }
    scratch *sc = &c->sc;
    GROW(sc->ss, sc->nss, sc->capss, 1);
    sc->ss[sc->nss++] = (tpl_str_str){ ke->u8, p, ke->len, (uint32_t)n, ke->hash };
    return ST_CONTINUE;
no:
    it->ok = false;
    return ST_STOP;
}

HASH_EACH_FN(strmap_i)

static bool strmaps_val(rctx *c, VALUE a, long n, tpl_val *out)
{
    /* (each item checked as it comes: a list of records whose first has a number, w2's, is
     * given up after one item, not after a check of every item) */
    scratch *sc = &c->sc;
    size_t zero = 0;
    GROW(sc->cnt, zero, sc->capcnt, (size_t)n);
    bool emb = c->borrowed_emb;
    size_t nv = 0;
    sc->nss = 0;
    struct strmaps_iter it = { c, true };
    for (long i = 0; i < n; i++) {
        size_t before = sc->nss;
        VALUE o = RARRAY_AREF(a, i);
        if (!RB_TYPE_P(o, T_HASH) || RBASIC_CLASS(o) != rb_cHash || !hash_plain(o)) it.ok = false;
        else HASH_EACH(o, strmap_i, &it);
        if (!it.ok) {
            sc->nss = 0;
            c->borrowed_emb = emb;
            return false;
        }
        sc->cnt[i] = (uint32_t)(sc->nss - before);
        nv += 1 + sc->cnt[i];
    }
    checkst(tpl_val_list_of_str_maps(c->r, sc->ss, sc->cnt, (size_t)n, 0, out));
    if (RB_OBJ_FROZEN_RAW(a)) tpl_val_freeze(out);
    c->nvals += nv;
    c->borrowed |= c->borrow && sc->nss > 0;
    sc->nss = 0;
    return true;
}

/* An Array: its items gathered on the scratch stack, the list made at once (tpl_val_list_of). */
static int ary_val(rctx *c, VALUE a, tpl_val *out)
{
    enter(c, a);
    c->nvals++;
    /* (its Hashes are one level deeper: the depth limit as enter() would check it) */
    if ((c->borrow || c->copy) && c->depth < MAX_DEPTH && RARRAY_LEN(a) > 0 && strmaps_val(c, a, RARRAY_LEN(a), out)) {
        c->depth--;
        return 0;
    }
    scratch *sc = &c->sc;
    size_t base = sc->nitems;
    long n = RARRAY_LEN(a);
    GROW(sc->items, sc->nitems, sc->capitems, (size_t)n);
    for (long i = 0; i < n && i < RARRAY_LEN(a); i++) {
        /* (a String item borrowed inline, as a Hash's values are; anything else converted by
         * to_val, which uses the stack above these items, and pops it) */
        VALUE o = RARRAY_AREF(a, i);
        tpl_val v;
        if (!((c->borrow || c->copy) && RB_TYPE_P(o, T_STRING) && str_borrow_fast(c, o, &v))) to_val(c, o, &v);
        sc->items[sc->nitems++] = v;
    }
    checkst(tpl_val_list_of(c->r, sc->items ? sc->items + base : NULL, sc->nitems - base, 0, out));
    if (RB_OBJ_FROZEN_RAW(a)) tpl_val_freeze(out);
    sc->nitems = base;
    c->depth--;
    return 0;
}

static rbobj *new_obj(rctx *c, VALUE o)
{
    if (!c->chunks || c->chunks->n == 64) {
        objchunk *k = ruby_xmalloc(sizeof *k);
        k->next = c->chunks;
        k->n = 0;
        c->chunks = k;
    }
    rbobj *h = &c->chunks->o[c->chunks->n++];
    h->o = o;
    h->c = c;
    h->self = false;
    keep(c, o);
    return h;
}

static int host_val(rctx *c, VALUE o, tpl_val *out)
{
    rbobj *h = new_obj(c, o);
    checkst(tpl_val_host(c->r, &rb_class, h, out));
    c->has_host = true;
    return 0;
}

/* Ruby -> tpl_val: natively for the plain types, a host object otherwise. Raises on failure. */
static int to_val(rctx *c, VALUE o, tpl_val *out)
{
    switch (rb_type(o)) {
    case T_NIL: *out = tpl_val_none(); return 0;
    case T_TRUE: *out = tpl_val_bool(true); return 0;
    case T_FALSE: *out = tpl_val_bool(false); return 0;
    case T_FIXNUM: *out = tpl_val_int(FIX2LONG(o)); return 0;
    case T_BIGNUM: { /* past int64: exactly, from its hex text */
        VALUE h = rb_big2str(o, 16); /* (not Integer#to_s: no Ruby code runs while a Hash is walked) */
        checkst(tpl_val_int_text(c->r, RSTRING_PTR(h), (size_t)RSTRING_LEN(h), 16, out));
        RB_GC_GUARD(h);
        return 0;
    }
    case T_FLOAT: *out = tpl_val_float(RFLOAT_VALUE(o)); return 0;
    case T_RATIONAL: { /* "NUM/DEN", its parts' decimal text (no Ruby code runs) */
        VALUE num = rb_rational_num(o), den = rb_rational_den(o);
        VALUE t = FIXNUM_P(num) ? rb_fix2str(num, 10) : rb_big2str(num, 10);
        rb_str_cat(t, "/", 1);
        rb_str_append(t, FIXNUM_P(den) ? rb_fix2str(den, 10) : rb_big2str(den, 10));
        checkst(tpl_val_rational_text(c->r, RSTRING_PTR(t), (size_t)RSTRING_LEN(t), out));
        RB_GC_GUARD(t);
        return 0;
    }
    case T_STRING: return str_val(c, o, 0, out);
    case T_SYMBOL: return str_val(c, rb_sym2str(o), TPL_VAL_SYMBOL, out);
    /* (the class pointer itself: rb_obj_class skips singleton classes, a call per container) */
    case T_HASH: if ((RBASIC_CLASS(o) == rb_cHash || rb_obj_class(o) == rb_cHash) && hash_plain(o)) return hash_val(c, o, out); break;
    case T_ARRAY: if (RBASIC_CLASS(o) == rb_cArray || rb_obj_class(o) == rb_cArray) return ary_val(c, o, out); break;
    default: break;
    }
    if (rb_obj_is_kind_of(o, rb_cRange)) {
        VALUE b, e;
        int excl;
        if (rb_range_values(o, &b, &e, &excl)) {
            tpl_val bv, ev;
            to_val(c, b, &bv);
            to_val(c, e, &ev);
            if (tpl_val_range(c->r, bv, ev, excl != 0, out) == TPL_OK) return 0;
        }
    }
    if (RB_TYPE_P(o, T_STRING)) return str_val(c, o, 0, out);   /* String subclasses */
    if (RB_TYPE_P(o, T_HASH) && hash_plain(o)) return hash_val(c, o, out);   /* Hash subclasses */
    if (RB_TYPE_P(o, T_ARRAY)) return ary_val(c, o, out);
    return host_val(c, o, out);
}

/* tpl_val -> Ruby. */
static VALUE from_val(tpl_val v)
{
    size_t n;
    const char *s;
    switch (tpl_val_kind_of(v)) {
    case TPL_VAL_NONE: case TPL_VAL_UNDEFINED: case TPL_VAL_OTHER: return Qnil;
    case TPL_VAL_BOOL: return tpl_val_as_bool(v) ? Qtrue : Qfalse;
    case TPL_VAL_INT: return LL2NUM(tpl_val_as_int(v));
    case TPL_VAL_BIGINT:
        s = tpl_val_as_str(v, &n);
        return rb_str_to_inum(rb_utf8_str_new(s, (long)n), 10, 0);
    case TPL_VAL_FLOAT: return DBL2NUM(tpl_val_as_float(v));
    case TPL_VAL_RATIONAL: { /* Rational(NUM, DEN) from "NUM/DEN" */
        s = tpl_val_as_str(v, &n);
        const char *sl = memchr(s, '/', n);
        size_t k = sl ? (size_t)(sl - s) : n;
        VALUE num = rb_str_to_inum(rb_utf8_str_new(s, (long)k), 10, 0);
        VALUE den = sl ? rb_str_to_inum(rb_utf8_str_new(sl + 1, (long)(n - k - 1)), 10, 0) : INT2FIX(1);
        return rb_rational_new(num, den);
    }
    case TPL_VAL_STR:
        s = tpl_val_as_str(v, &n);
        /* an ERB :symbol is Ruby's Symbol (a method's argument, a Hash's key), as Ruby passes it */
        if (tpl_val_str_flags(v) & TPL_VAL_SYMBOL) return ID2SYM(rb_intern3(s, (long)n, rb_utf8_encoding()));
        return rb_utf8_str_new(s, (long)n);
    case TPL_VAL_LIST: case TPL_VAL_TUPLE: {
        n = tpl_val_len(v);
        VALUE a = rb_ary_new_capa((long)n);
        for (size_t i = 0; i < n; i++) rb_ary_push(a, from_val(tpl_val_item(v, i)));
        return a;
    }
    case TPL_VAL_MAP: {
        VALUE h = rb_hash_new();
        n = tpl_val_len(v);
        for (size_t i = 0; i < n; i++) rb_hash_aset(h, from_val(tpl_val_map_key(v, i)), from_val(tpl_val_map_value(v, i)));
        return h;
    }
    case TPL_VAL_HOST: {
        rbobj *h = tpl_val_host_object(v);
        return tpl_val_host_class(v) == &rb_class && h ? h->o : Qnil;
    }
    }
    return Qnil;
}

/* ------------------------------------------------------------------ callbacks */

/* Every callback body runs under rb_protect: a Ruby exception never unwinds through the VM. */
typedef struct cb {
    rbobj *h;
    tpl_render *r;
    const char *name;
    size_t len;
    const tpl_val *args, *kwn, *kwv;
    size_t nargs, nkw;
    tpl_val key;
    bool repr;
    tpl_val *out;
    int64_t *nout;
    tpl_host_result rc;
    VALUE iv;               /* an @ivar's value already read (rb_send_cb), or 0 (Qfalse: never read
                             * here, as ivar_plain converts false itself) */
} cb;

#define RB_TAG_RAISE 6 /* (vm_core.h's TAG_RAISE: the state rb_protect reports for a raised exception) */

/* Whether s's bytes are all letters, digits or ':' (a class's name as tpl's exceptions print it:
 * tpl_rb_exc_class), with underscores too when under is true (a name a rescue clause may give). */
static bool class_text(VALUE s, bool under)
{
    const char *p = RSTRING_PTR(s);
    long n = RSTRING_LEN(s);
    if (n == 0 || !(p[0] >= 'A' && p[0] <= 'Z')) return false;
    for (long i = 0; i < n; i++)
        if (!((p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z') || (p[i] >= '0' && p[i] <= '9') || p[i] == ':' ||
              (under && p[i] == '_')))
            return false;
    return true;
}

/* The exception a callback's Ruby code raised (rb_protect's state): kept for the render to
 * re-raise, and handed to the VM as the host's error. One raised (not a throw or a thread's kill)
 * that fits is marked rescuable: "\x01ANCESTORS\x02MESSAGE (Class)" (tpl_vm_rescue_host), so a
 * begin/rescue in the template takes it as Ruby's would — by its class's and ancestors' names
 * (rescue ArgumentError, rescue MyError, a bare rescue: StandardError) — and e.message is its
 * message; otherwise "Class: message", which no rescue takes. */
static void host_exception(rctx *c, int state)
{
    if (state != RB_TAG_RAISE) {
        /* (rb_errinfo is then no exception — a throw's data, a kill's signal —: left as it is for
         * rb_jump_tag; the render ends on its fuel error, which no rescue in the template takes,
         * and render_given jumps on) */
        c->jump = state;
        tpl_render_charge(c->r, UINT64_MAX);
        tpl_host_error(c->r, "interrupted", NULL);
        return;
    }
    VALUE e = rb_errinfo();
    rb_set_errinfo(Qnil);
    c->exc = e;
    keep(c, e);
    int st = 0;
    VALUE m = rb_protect(rb_obj_as_string, e, &st);
    if (st || !RB_TYPE_P(m, T_STRING)) { rb_set_errinfo(Qnil); m = rb_str_new_cstr("?"); }
    char buf[1024];
    VALUE cls = rb_class_path(rb_obj_class(e));
    bool mark = state == RB_TAG_RAISE && rb_obj_is_kind_of(e, rb_eException) && class_text(cls, false) &&
                !memchr(RSTRING_PTR(m), 0, (size_t)RSTRING_LEN(m));
    if (mark) {
        VALUE t = rb_str_new_cstr("\x01");
        VALUE anc = rb_mod_ancestors(rb_obj_class(e));
        for (long i = 0; i < RARRAY_LEN(anc); i++) {
            VALUE k = RARRAY_AREF(anc, i), name = rb_class_path(k);
            if (!class_text(name, true)) continue; /* (an anonymous class or module: no rescue names it) */
            if (RSTRING_LEN(t) > 1) rb_str_cat(t, " ", 1);
            rb_str_append(t, name);
        }
        rb_str_cat(t, "\x02", 1);
        rb_str_append(t, m);
        rb_str_cat(t, " (", 2);
        rb_str_append(t, cls);
        rb_str_cat(t, ")", 1);
        mark = (size_t)RSTRING_LEN(t) < sizeof buf;
        if (mark) { memcpy(buf, RSTRING_PTR(t), (size_t)RSTRING_LEN(t)); buf[RSTRING_LEN(t)] = 0; }
        RB_GC_GUARD(t);
    }
    if (!mark) snprintf(buf, sizeof buf, "%s: %.*s", rb_obj_classname(e), (int)RSTRING_LEN(m), RSTRING_PTR(m));
    RB_GC_GUARD(m);
    tpl_host_error(c->r, buf, (void *)e);
}

static tpl_host_result protect(VALUE (*fn)(VALUE), cb *a)
{
    int state = 0;
    a->rc = TPL_HOST_OK;
    /* Ruby code may run (a method, [], each, to_s...) and change self's @ivars, which Ruby's
     * template reads changed: the @ivars read so far are read again (not an @ivar's own read) */
    if (!(a->name && a->len > 1 && a->name[0] == '@' && a->nargs == 0 && a->nkw == 0)) ivc_stale(a->h->c);
    rb_protect(fn, (VALUE)a, &state);
    if (!state) return a->rc;
    if (a->h->c->fuel_out) { /* (tpl_render_charge set the render's fuel error: it ends with that) */
        rb_set_errinfo(Qnil);
        tpl_host_error(a->r, "fuel exhausted", NULL);
        return TPL_HOST_ERROR;
    }
    host_exception(a->h->c, state);
    return TPL_HOST_ERROR;
}

static VALUE name_sym(const char *name, size_t len) { return ID2SYM(rb_intern3(name, (long)len, rb_utf8_encoding())); }

/* The ID of a name the program sends (scratch.idc; IDs made by rb_intern3 are never freed). */
static ID name_id(rctx *c, const char *name, size_t len)
{
    idc_ent *e = NULL;
    if (len <= IDC_NAME && (c->sc.idc || (c->sc.idc = calloc(IDC_SIZE, sizeof *c->sc.idc)))) {
        /* (a multiplicative hash of the whole address: names of one length packed in the
         * constants share their address >> 3; probed over IDC_PROBE slots, a new name taking
         * the first free one, or the first when none is free) */
        size_t h = (size_t)((((uintptr_t)name ^ len) * UINT64_C(0x9E3779B97F4A7C15)) >> 57);
        idc_ent *free_e = NULL;
        for (size_t i = 0; i < IDC_PROBE; i++) {
            idc_ent *x = &c->sc.idc[(h + i) & (IDC_SIZE - 1)];
            if (!x->ptr) { free_e = x; break; }
            if (x->ptr == name && x->len == len && memcmp(x->name, name, len) == 0) return x->id;
        }
        e = free_e ? free_e : &c->sc.idc[h & (IDC_SIZE - 1)];
    }
    ID id = rb_intern3(name, (long)len, rb_utf8_encoding());
    if (e) {
        e->ptr = name;
        e->len = len;
        memcpy(e->name, name, len);
        e->id = id;
    }
    return id;
}

static bool responds(VALUE o, VALUE sym, bool priv) { return rb_obj_respond_to(o, SYM2ID(sym), priv ? 1 : 0) != 0; }

/* responds(), for an ERB call o.name: Ruby's ERB calls the method without asking respond_to?, so a
 * respond_to? (or respond_to_missing?) that raises is not heard: false, and the caller calls the
 * method as Ruby does (its NoMethodError for this name: no such method). */
struct responds_arg { VALUE o, sym; bool priv; };
static VALUE responds_body(VALUE arg)
{
    struct responds_arg *x = (struct responds_arg *)arg;
    return responds(x->o, x->sym, x->priv) ? Qtrue : Qfalse;
}
static bool responds_safe(VALUE o, VALUE sym, bool priv)
{
    struct responds_arg x = { o, sym, priv };
    int state = 0;
    VALUE r = rb_protect(responds_body, (VALUE)&x, &state);
    if (!state) return RTEST(r);
    VALUE e = rb_errinfo();
    if (!rb_obj_is_kind_of(e, rb_eStandardError)) rb_jump_tag(state);   /* Interrupt, throw: theirs */
    rb_set_errinfo(Qnil);
    return false;
}

/* An argument the template passes to a Ruby method: from_val, with a string's tagged text
 * (erb_tag: a non-UTF-8 template's literal, a foreign String printed into it) as its bytes in
 * its encoding, as ERB's Ruby would pass them (erb_result: its encoding rules); an untagged
 * string is UTF-8, or the template's encoding when that is not UTF-8 and it is ASCII. */
static VALUE arg_val(rctx *c, tpl_val v)
{
    size_t n;
    const char *s;
    int te = c->t ? c->t->erb_enc : 0;
    if (tpl_val_kind_of(v) == TPL_VAL_STR && (c->tagged || te) && (s = tpl_val_as_str(v, &n)) && (te || memchr(s, 0xF3, n)))
        return erb_result(c, s, n, te ? te - 1 : c->enc_utf8);
    return from_val(v);
}

static VALUE call_args(cb *a, VALUE *kw)
{
    rctx *c = a->h->c;
    VALUE argv = rb_ary_new_capa((long)a->nargs);
    for (size_t i = 0; i < a->nargs; i++) rb_ary_push(argv, arg_val(c, a->args[i]));
    *kw = Qnil;
    if (a->nkw) {
        *kw = rb_hash_new();
        for (size_t i = 0; i < a->nkw; i++) {
            size_t n;
            const char *k = tpl_val_as_str(a->kwn[i], &n);
            rb_hash_aset(*kw, name_sym(k ? k : "", k ? n : 0), from_val(a->kwv[i]));
        }
    }
    return argv;
}

static VALUE invoke(VALUE recv, ID mid, cb *a, bool priv)
{
    VALUE kw, argv = call_args(a, &kw);
    if (!NIL_P(kw)) rb_ary_push(argv, kw);
    int kws = NIL_P(kw) ? RB_NO_KEYWORDS : RB_PASS_KEYWORDS;
    /* The arguments in C memory the GC scans as it scans the machine stack (ALLOCV_N: the stack,
     * or a buffer marked the same way), which keeps and pins them for the whole call: a C
     * method (String#encode) is handed this pointer as its argv and reads it after it has
     * allocated. The Array's own storage was handed before: nothing held the Array during the
     * call, so a GC in the callee freed it (or compaction moved it) and the callee read a dead
     * slot ("[BUG] Segmentation fault" in rb_to_encoding_index under GC.stress with compaction;
     * test_gc.rb). */
    long n = RARRAY_LEN(argv);
    VALUE tmp = 0;
    VALUE *args = ALLOCV_N(VALUE, tmp, n);
    MEMCPY(args, RARRAY_CONST_PTR(argv), VALUE, n);
    VALUE res = priv ? rb_funcallv_kw(recv, mid, (int)n, args, kws) : rb_funcallv_public_kw(recv, mid, (int)n, args, kws);
    ALLOCV_END(tmp);
    RB_GC_GUARD(argv);
    return res;
}

static VALUE rb_name_err_receiver_safe(VALUE exc) { return rb_funcall(exc, rb_intern("receiver"), 0); }
static VALUE invoke(VALUE recv, ID mid, cb *a, bool priv);
struct send_arg { VALUE o; ID mid; cb *a; };
static VALUE send_call(VALUE arg)
{
    struct send_arg *x = (struct send_arg *)arg;
    return invoke(x->o, x->mid, x->a, x->a->h->self);
}
static VALUE send_missing(VALUE arg, VALUE exc)
{
    struct send_arg *x = (struct send_arg *)arg;
    VALUE name = rb_funcall(exc, rb_intern("name"), 0);
    VALUE recv = rb_rescue2(rb_name_err_receiver_safe, exc, NULL, Qnil, rb_eArgError, (VALUE)0);
    if (SYMBOL_P(name) && SYM2ID(name) == x->mid && recv == x->o) return Qundef;
    rb_exc_raise(exc);
    return Qnil;
}

/* Remembers an @ivar's value for the rest of the render (rb_send_cb); iv: its VALUE when that
 * is a special constant (kept, stale, after Ruby code ran: ivc_stale), else 0. */
static void ivc_add(rctx *c, const char *name, size_t len, tpl_val v, VALUE iv, ID id)
{
    if (c->nivc < IVCACHE && len <= sizeof c->ivc[0].name) {
        memcpy(c->ivc[c->nivc].name, name, len);
        c->ivc[c->nivc].len = len;
        c->ivc[c->nivc].iv = iv;
        c->ivc[c->nivc].id = id;
        c->ivc[c->nivc].stale = false;
        c->ivc[c->nivc++].v = v;
    }
}

/* An @ivar of self whose value is a scalar (nil, true, false, a Fixnum, a Float, or a String
 * whose bytes Ruby already knows to be ASCII or valid UTF-8), converted without rb_protect:
 * nothing here calls Ruby code or raises (rb_intern3 of the program's UTF-8 names, rb_ivar_get,
 * rb_ivar_defined, tpl's constructors). 0: not such an ivar (send_body, under rb_protect, then
 * converts anything else: *got is the value read); 1: *out set; -1: not set (missing). */
static int ivar_plain(rctx *c, VALUE o, const char *name, size_t len, tpl_val *out, VALUE *got)
{
    ID id = name_id(c, name, len);
    VALUE v = *got = rb_ivar_get(o, id);
    switch (rb_type(v)) {
    case T_NIL:
        if (!rb_ivar_defined(o, id)) return -1;
        *out = tpl_val_none();
        break;
    case T_TRUE: *out = tpl_val_bool(true); break;
    case T_FALSE: *out = tpl_val_bool(false); break;
    case T_FIXNUM: *out = tpl_val_int(FIX2LONG(v)); break;
    case T_FLOAT: *out = tpl_val_float(RFLOAT_VALUE(v)); break;
    case T_STRING: {
        if (rb_obj_class(v) != rb_cString) return 0;
        int ei = RB_ENCODING_GET(v), cr = RB_ENC_CODERANGE(v);
        if (!(cr == RUBY_ENC_CODERANGE_7BIT && (ei == c->enc_utf8 || ei == c->enc_ascii || ei == c->enc_bin)) &&
            !(cr == RUBY_ENC_CODERANGE_VALID && ei == c->enc_utf8))
            return 0;
        /* (copied to the scratch blocks when the render can: str_borrow_fast) */
        const char *p = RSTRING_PTR(v);
        size_t n = (size_t)RSTRING_LEN(v);
        unsigned fz = RB_OBJ_FROZEN_RAW(v) ? TPL_VAL_FROZEN : 0;
        const char *cp = c->copy && n <= COPY_MAX ? scratch_copy(c, p, n) : NULL;
        tpl_status st = !cp ? tpl_val_str(c->r, p, n, TPL_VAL_UTF8_VALID | fz, out)
                        : fz ? tpl_val_str(c->r, cp, n, TPL_VAL_BORROW | TPL_VAL_UTF8_VALID | fz, out)
                             : tpl_val_str_borrow(cp, n, out);
        if (st != TPL_OK) return 0;
        c->nvals++;
        break;
    }
    default: return 0;
    }
    ivc_add(c, name, len, *out, RB_SPECIAL_CONST_P(v) && !NIL_P(v) ? v : 0, id);
    return 1;
}

/* ERB obj.name(args), bare names and @ivars of self */
static VALUE send_body(VALUE arg)
{
    cb *a = (cb *)arg;
    rctx *c = a->h->c;
    VALUE o = a->h->o;
    if (a->len > 1 && a->name[0] == '@' && a->nargs == 0 && a->nkw == 0) {
        VALUE v = a->iv;
        if (!v) {
            ID id = name_id(c, a->name, a->len);
            v = rb_ivar_get(o, id); /* (nil when not set: only then is it asked which) */
            if (NIL_P(v) && !rb_ivar_defined(o, id)) { a->rc = TPL_HOST_MISSING; return Qnil; }
        }
        to_val(c, v, a->out);
        ivc_add(c, a->name, a->len, *a->out, 0, 0);
        return Qnil;
    }
    if (a->len == 4 && memcmp(a->name, "(r+)", 4) == 0 && a->nargs == 1 && a->nkw == 0) {
        /* "str" + o (tpl.h's send): Ruby's String#+ (o a String in another encoding, an object
         * with to_str; else Ruby's TypeError) */
        to_val(c, rb_str_plus(arg_val(c, a->args[0]), rb_str_to_str(o)), a->out);
        return Qnil;
    }
    VALUE sym = ID2SYM(name_id(c, a->name, a->len));
    VALUE res;
    if (responds_safe(o, sym, a->h->self)) res = invoke(o, SYM2ID(sym), a, a->h->self);
    else {
        /* method_missing without respond_to_missing? (Pinecall's context objects answer unknown
         * names that way): call it; its own NoMethodError for this name means no such method */
        struct send_arg x = { o, SYM2ID(sym), a };
        res = rb_rescue2(send_call, (VALUE)&x, send_missing, (VALUE)&x, rb_eNoMethodError, (VALUE)0);
        if (res == Qundef) { a->rc = TPL_HOST_MISSING; return Qnil; }
    }
    to_val(c, res, a->out);
    return Qnil;
}

/* An @ivar the state did not hold, read before Ruby code ran (the VM sent it to self): read up
 * front in the Template's next renders (ivar_early). */
static void ivar_early_mark(rctx *c, const char *name, size_t len)
{
    tmpl *t = c->t;
    for (size_t i = 0; t->ivar_early && i < t->nreads; i++)
        if (t->ivar_id[i] && t->read_len[i] == len - 1 && memcmp(t->read_ptr[i], name + 1, len - 1) == 0) {
            __atomic_store_n(&t->ivar_early[i], 1, __ATOMIC_RELAXED);
            return;
        }
}

static tpl_host_result rb_send_cb(void *obj, tpl_render *r, const char *name, size_t len, const tpl_val *args,
                                  size_t nargs, const tpl_val *kwn, const tpl_val *kwv, size_t nkw, tpl_val *out)
{
    rbobj *h = obj;
    if (h->c->ivars_in_state && len > 1 && name[0] == '@' && h->self && nargs == 0 && nkw == 0) ivar_early_mark(h->c, name, len);
    if (len > 1 && name[0] == '@' && h->self) /* an instance variable read before in this render */
        for (int i = 0; i < h->c->nivc; i++) {
            rctx *c = h->c;
            if (c->ivc[i].len != len || memcmp(c->ivc[i].name, name, len) != 0) continue;
            /* (stale: Ruby code ran since; the same special constant is the same value, else
             * the entry goes and the @ivar is read again below) */
            if (c->ivc[i].stale) {
                if (rb_ivar_get(h->o, c->ivc[i].id) != c->ivc[i].iv) {
                    c->ivc[i] = c->ivc[--c->nivc];
                    break;
                }
                c->ivc[i].stale = false;
            }
            *out = c->ivc[i].v;
            return TPL_HOST_OK;
        }
    VALUE iv = 0;
    if (len > 1 && name[0] == '@' && h->self && nargs == 0 && nkw == 0) {
        int k = ivar_plain(h->c, h->o, name, len, out, &iv);
        if (k) return k > 0 ? TPL_HOST_OK : TPL_HOST_MISSING;
        RB_GC_GUARD(iv);
    }
    cb a = { .h = obj, .r = r, .name = name, .len = len, .args = args, .nargs = nargs, .kwn = kwn, .kwv = kwv,
             .nkw = nkw, .out = out, .iv = iv };
    return protect(send_body, &a);
}

/* Jinja obj.name: a method without required arguments is called; one with arguments is
 * returned as a Method (callable); no such method: missing (then obj[name]). */
static VALUE getattr_body(VALUE arg)
{
    cb *a = (cb *)arg;
    rctx *c = a->h->c;
    VALUE o = a->h->o;
    VALUE sym = ID2SYM(name_id(c, a->name, a->len));
    if (!responds(o, sym, false)) { a->rc = TPL_HOST_MISSING; return Qnil; }
    VALUE m = rb_obj_method(o, sym);
    int arity = NUM2INT(rb_funcall(m, rb_intern("arity"), 0)); /* respond_to_missing? methods too */
    if (arity == 0) to_val(c, rb_funcallv_public(o, SYM2ID(sym), 0, NULL), a->out);
    else host_val(c, m, a->out);
    return Qnil;
}

static tpl_host_result rb_getattr_cb(void *obj, tpl_render *r, const char *name, size_t len, tpl_val *out)
{
    cb a = { .h = obj, .r = r, .name = name, .len = len, .out = out };
    return protect(getattr_body, &a);
}

/* obj[key]; a String key that finds nil is tried as a Symbol (tpl's ERB reads h[:k] and h["k"]
 * the same). Jinja: nil is missing (undefined); ERB: nil. */
struct index_arg { VALUE o, k; };
static VALUE index_call(VALUE arg)
{
    struct index_arg *x = (struct index_arg *)arg;
    return rb_funcall(x->o, rb_intern("[]"), 1, x->k);
}
static VALUE index_missing(VALUE arg, VALUE exc) { (void)arg; (void)exc; return Qundef; }

/* o[k]; in Jinja, IndexError/KeyError/NameError/TypeError mean missing (Qundef), as Jinja2
 * treats Python's LookupError and TypeError; in ERB they propagate, as in Ruby. */
static VALUE item_of(rctx *c, VALUE o, VALUE k)
{
    struct index_arg x = { o, k };
    if (c->erb) return index_call((VALUE)&x);
    return rb_rescue2(index_call, (VALUE)&x, index_missing, Qnil, rb_eIndexError, rb_eNameError, rb_eTypeError, (VALUE)0);
}

static VALUE getitem_body(VALUE arg)
{
    cb *a = (cb *)arg;
    rctx *c = a->h->c;
    VALUE o = a->h->o;
    if (!rb_respond_to(o, rb_intern("[]"))) { a->rc = TPL_HOST_MISSING; return Qnil; }
    VALUE k = from_val(a->key);
    VALUE res = item_of(c, o, k);
    if (NIL_P(res) && RB_TYPE_P(k, T_STRING)) res = item_of(c, o, rb_str_intern(k));
    if (res == Qundef) { a->rc = TPL_HOST_MISSING; return Qnil; }
    if (NIL_P(res) && !c->erb) { a->rc = TPL_HOST_MISSING; return Qnil; }
    to_val(c, res, a->out);
    return Qnil;
}

static tpl_host_result rb_getitem_cb(void *obj, tpl_render *r, tpl_val key, tpl_val *out)
{
    cb a = { .h = obj, .r = r, .key = key, .out = out };
    return protect(getitem_body, &a);
}

struct drain { VALUE items; uint64_t max, cost; rctx *c; };

/* What one drained item costs at least: its Array slot (8 bytes), its value in the render's arena
 * (16), the object's slot in Ruby's heap (40) unless it is an immediate, a String's bytes (the
 * render copies them), an Array's slots. An object yielded again is counted again. */
static uint64_t drain_cost(VALUE x)
{
    uint64_t n = 8 + 16;
    if (RB_SPECIAL_CONST_P(x)) return n;
    n += 40;
    if (RB_TYPE_P(x, T_STRING)) n += (uint64_t)RSTRING_LEN(x);
    else if (RB_TYPE_P(x, T_ARRAY)) n += 8 * (uint64_t)RARRAY_LEN(x);
    return n;
}

/* each's block for iter_body: one item (several yielded values as one Array, as to_a), while the
 * items' cost stays within the memory limit (counting items, 16 bytes each, an endless each of
 * Strings grew the process by 1 GB in 10 s of CPU). */
static VALUE drain_i(RB_BLOCK_CALL_FUNC_ARGLIST(x, data))
{
    struct drain *d = (struct drain *)data;
    uint64_t max = d->max ? d->max : TPL_DEFAULT_MAX_MEMORY;
    VALUE item = argc > 1 ? rb_ary_new_from_values(argc, argv) : x;
    /* TPL_HOST_ITEM_FUEL of the render's fuel an item, as tpl charges a host iterator's: an
     * endless each ends on the fuel too (protect reports the render's fuel error) */
    if (tpl_render_charge(d->c->r, TPL_HOST_ITEM_FUEL) != TPL_OK) {
        d->c->fuel_out = true;
        rb_raise(rb_eRuntimeError, "tpl: fuel exhausted");
    }
    d->cost += drain_cost(item);
    if (d->cost > max)
        rb_raise(rb_const_get(mod_tpl(), rb_intern("LimitError")),
                 "tpl: an Enumerable past the render's memory limit (%llu bytes) at item %ld", (unsigned long long)max,
                 (long)RARRAY_LEN(d->items) + 1);
    rb_ary_push(d->items, item);
    return Qnil;
}

/* An Enumerable's items as a new Array (kept for the render), through each as to_a does. */
static VALUE drain(rctx *c, VALUE o)
{
    struct drain d = { rb_ary_new(), c->max_items, 0, c };
    keep(c, d.items);
    rb_block_call(o, rb_intern("each"), 0, NULL, drain_i, (VALUE)&d);
    return d.items;
}

/* The items: a mapping's keys (Jinja iterates a dict's keys), an Enumerable's to_a. */
static VALUE iter_body(VALUE arg)
{
    cb *a = (cb *)arg;
    rctx *c = a->h->c;
    VALUE o = a->h->o, l;
    if (rb_respond_to(o, rb_intern("to_hash"))) l = rb_funcall(rb_funcall(o, rb_intern("to_hash"), 0), rb_intern("keys"), 0);
    else if (rb_obj_is_kind_of(o, rb_mEnumerable)) {
        /* each, item by item (what Enumerable#to_a does), so that an endless each stops at
         * the memory limit (drain_cost) with a Tpl::LimitError instead of filling the process */
        l = drain(c, o);
    } else if (rb_respond_to(o, rb_intern("each")) && rb_respond_to(o, rb_intern("to_a"))) l = rb_funcall(o, rb_intern("to_a"), 0);
    else { a->rc = TPL_HOST_MISSING; return Qnil; }
    if (!RB_TYPE_P(l, T_ARRAY)) rb_raise(rb_eTypeError, "tpl: to_a did not return an Array");
    keep(c, l);
    ary_val(c, l, a->out);
    return Qnil;
}

static tpl_host_result rb_iter_cb(void *obj, tpl_render *r, tpl_val *out)
{
    cb a = { .h = obj, .r = r, .out = out };
    return protect(iter_body, &a);
}

static VALUE len_body(VALUE arg)
{
    cb *a = (cb *)arg;
    VALUE o = a->h->o;
    ID size = rb_intern("size");
    if (!rb_respond_to(o, size)) { a->rc = TPL_HOST_MISSING; return Qnil; }
    *a->nout = NUM2LL(rb_funcall(o, size, 0));
    return Qnil;
}

static tpl_host_result rb_len_cb(void *obj, tpl_render *r, int64_t *out)
{
    cb a = { .h = obj, .r = r, .nout = out };
    return protect(len_body, &a);
}

static VALUE call_body(VALUE arg)
{
    cb *a = (cb *)arg;
    VALUE o = a->h->o;
    ID call = rb_intern("call");
    if (!rb_respond_to(o, call)) { a->rc = TPL_HOST_MISSING; return Qnil; }
    to_val(a->h->c, invoke(o, call, a, false), a->out);
    return Qnil;
}

/* lower_erb.c's self_kernel_guard: a Kernel method tpl runs itself (loop, block_given?, raise
 * without arguments) called where self has its own (self_fns shadowed the name with
 * self's Method, called with this marker): Ruby would run self's, tpl cannot (a template block
 * to a Ruby method) — a located refusal (render_body raises it as a SyntaxError) */
#define SELF_KERNEL_MARK "\001tpl:self-kernel"

static bool self_kernel_refused(rbobj *h, tpl_render *r, const tpl_val *args, size_t nargs, size_t nkw)
{
    size_t n;
    const char *s;
    if (nargs != 1 || nkw || tpl_val_kind_of(args[0]) != TPL_VAL_STR || !(s = tpl_val_as_str(args[0], &n)) ||
        n != sizeof SELF_KERNEL_MARK - 1 || memcmp(s, SELF_KERNEL_MARK, n) != 0 || !rb_obj_is_method(h->o))
        return false;
    VALUE name = rb_funcall(h->o, rb_intern("name"), 0);
    h->c->refused = SYMBOL_P(name) ? SYM2ID(name) : rb_intern("?");
    tpl_host_error(r, "refused", NULL);
    return true;
}

/* Raises the refusal self_kernel_refused made, located where the render stopped (its own frame:
 * the message buffer stays off render_body's) */
static __attribute__((noinline)) void self_kernel_raise(const tpl_error *e, ID id)
{
    char msg[200];
    VALUE name = rb_id2str(id);
    int n = name ? (int)(RSTRING_LEN(name) > 60 ? 60 : RSTRING_LEN(name)) : 1;
    const char *p = name ? RSTRING_PTR(name) : "?";
    snprintf(msg, sizeof msg, "unsupported Ruby construct: `%.*s' is self's own method here (Ruby calls it; tpl runs Kernel#%.*s)",
             n, p, n, p);
    tpl_error re = *e;
    re.status = TPL_ERR_SYNTAX;
    re.kind = TPL_EK_SYNTAX;
    re.message = msg;
    raise_tpl(&re);
}

static tpl_host_result rb_call_cb(void *obj, tpl_render *r, const tpl_val *args, size_t nargs, const tpl_val *kwn,
                                  const tpl_val *kwv, size_t nkw, tpl_val *out)
{
    if (self_kernel_refused(obj, r, args, nargs, nkw)) return TPL_HOST_ERROR;
    cb a = { .h = obj, .r = r, .args = args, .nargs = nargs, .kwn = kwn, .kwv = kwv, .nkw = nkw, .out = out };
    return protect(call_body, &a);
}

static VALUE str_body(VALUE arg)
{
    cb *a = (cb *)arg;
    VALUE s = a->repr ? rb_inspect(a->h->o) : rb_obj_as_string(a->h->o);
    str_val(a->h->c, s, SV_TAG, a->out); /* (printed: a foreign String tagged, not a host again) */
    return Qnil;
}

static tpl_host_result rb_str_cb(void *obj, tpl_render *r, bool repr, tpl_val *out)
{
    cb a = { .h = obj, .r = r, .repr = repr, .out = out };
    return protect(str_body, &a);
}

/* Plain data for builtins and Enumerable methods: to_hash as a Hash, an Enumerable's to_a. */
static VALUE resolve_body(VALUE arg)
{
    cb *a = (cb *)arg;
    rctx *c = a->h->c;
    VALUE o = a->h->o, d;
    if (rb_respond_to(o, rb_intern("to_hash"))) d = rb_funcall(o, rb_intern("to_hash"), 0);
    else if (rb_respond_to(o, rb_intern("to_ary"))) d = rb_funcall(o, rb_intern("to_ary"), 0);
    else if (rb_obj_is_kind_of(o, rb_mEnumerable)) d = drain(c, o); /* bounded (iter_body) */
    else { a->rc = TPL_HOST_MISSING; return Qnil; }
    if (!RB_TYPE_P(d, T_HASH) && !RB_TYPE_P(d, T_ARRAY)) { a->rc = TPL_HOST_MISSING; return Qnil; }
    keep(c, d);
    if (RB_TYPE_P(d, T_HASH)) hash_val(c, d, a->out);
    else ary_val(c, d, a->out);
    return Qnil;
}

static tpl_host_result rb_resolve_cb(void *obj, tpl_render *r, tpl_val *out)
{
    cb a = { .h = obj, .r = r, .out = out };
    return protect(resolve_body, &a);
}

/* the object's class by name (Ruby's "comparison of Foo with Foo failed"): a named class's path, kept
 * by the class (rb_mod_name allocates nothing for it); an anonymous class: NULL ("Object") */
static const char *rb_type_of_cb(void *obj, unsigned *numeric)
{
    (void)numeric;
    VALUE n = rb_mod_name(rb_obj_class(((rbobj *)obj)->o));
    return RB_TYPE_P(n, T_STRING) && OBJ_FROZEN(n) ? RSTRING_PTR(n) : NULL;
}

static const tpl_host_class rb_class = { "Object", rb_getattr_cb, rb_getitem_cb, rb_iter_cb, rb_len_cb, rb_call_cb,
                                         NULL, rb_str_cb, rb_resolve_cb, rb_send_cb, NULL, rb_type_of_cb, NULL, NULL, NULL };

/* remembers(words): the block given to render, or the ERB self's remembers?/remembers. */
typedef struct rem_arg { rctx *c; const char *w; size_t n; } rem_arg;

/* A fresh String of remembers' argument (UTF-8): a copy of the key cache's frozen one. */
static VALUE remembers_arg(rctx *c, const char *w, size_t n)
{
    if (n == 0 || n > REM_MAX || NIL_P(c->kc)) return rb_utf8_str_new(w, (long)n);
    keycache *kc = DATA_PTR(c->kc);
    VALUE *slot = &kc->rem[(n + (unsigned char)w[0] * 3u + (unsigned char)w[n - 1] * 5u) % REMC];
    VALUE m = *slot;
    if (!m || (size_t)RSTRING_LEN(m) != n || memcmp(RSTRING_PTR(m), w, n) != 0) {
        m = rb_utf8_str_new(w, (long)n);
        rb_enc_str_coderange(m);
        *slot = rb_obj_freeze(m);
    }
    return rb_str_dup(m);
}

static VALUE remembers_body(VALUE arg)
{
    rem_arg *a = (rem_arg *)arg;
    VALUE w = remembers_arg(a->c, a->w, a->n);
    VALUE res = !NIL_P(a->c->remembers) ? rb_funcall(a->c->remembers, rb_intern("call"), 1, w)
                                        : rb_funcallv(a->c->remembers_self, a->c->remembers_id, 1, &w);
    return RTEST(res) ? Qtrue : Qfalse;
}

static int rb_remembers_cb(void *data, const char *words, size_t len)
{
    rctx *c = data;
    rem_arg a = { c, words, len };
    int state = 0;
    ivc_stale(c); /* (Ruby code runs: self's @ivars are read again after it, as protect does) */
    VALUE res = rb_protect(remembers_body, (VALUE)&a, &state);
    if (!state) return res == Qtrue;
    host_exception(c, state);
    return -1;
}

/* One wrapped C struct's Ruby data type: PREFIX##_type (named RBNAME, marked by MARK or NULL,
 * freed by FREE) and its dsize PREFIX##_size (sizeof(T): what the struct itself holds). */
#define RB_WRAP_TYPE(PREFIX, T, RBNAME, MARK, FREE, FLAGS)                                        \
    static size_t PREFIX##_size(const void *ptr) { (void)ptr; return sizeof(T); }                 \
    static const rb_data_type_t PREFIX##_type = {                                                 \
        .wrap_struct_name = RBNAME,                                                               \
        .function = { .dmark = MARK, .dfree = FREE, .dsize = PREFIX##_size },                     \
        .flags = FLAGS,                                                                           \
    }

/* ------------------------------------------------------------------ Template */

static void tmpl_free(void *ptr)
{
    tmpl *t = ptr;
    tpl_program_free(t->p);
    for (int i = 0; i < t->npool; i++) {
        tpl_render_free(t->pool[i].r);
        settings_free(&t->pool[i].set);
        scratch_free(&t->pool[i].sc);
    }
    for (size_t i = 0; t->read_ptr && i < t->nreads; i++) free(t->read_ptr[i]);
    free(t->read_ptr);
    free(t->read_len);
    free(t->read_hash);
    free(t->rtab);
    free(t->ivar_id);
    free(t->ivar_early);
    free(t->fn_id);
    ruby_xfree(t);
}

static void tmpl_mark(void *ptr)
{
    tmpl *t = ptr;
    rb_gc_mark(t->reads);
    rb_gc_mark(t->read_syms);
    for (int i = 0; i < t->npool; i++) rb_gc_mark(t->pool[i].kc);
}

/* a frozen Template (lib/tpl.rb freezes each) is Ractor-shareable: its program is immutable and
 * its pool locked */
static size_t tmpl_size(const void *ptr)
{
    const tmpl *t = ptr;
    return sizeof *t + t->prog_bytes + __atomic_load_n(&t->ctx_bytes, __ATOMIC_RELAXED);
}

static const rb_data_type_t tmpl_type = {
    .wrap_struct_name = "Tpl::Template",
    .function = { .dmark = tmpl_mark, .dfree = tmpl_free, .dsize = tmpl_size },
    .flags = RUBY_TYPED_FREE_IMMEDIATELY | RUBY_TYPED_FROZEN_SHAREABLE,
};

/* Tells Ruby's GC the Template's memory as it grows: the growth past the most it was told
 * (gc_told, a high-water mark), as Ruby's own xmalloc counts an allocation, so that Templates made
 * and dropped in a loop (Template.new/load) let the GC run as their malloc'd memory grows
 * (RSS flat: a few MB over 100,000 Template.new/load + render, where it grows ~130 MB per 40,000
 * untold). Never a decrease: Ruby's malloc counter restarts at every GC, and a Template's memory
 * is freed by the sweep just after (tmpl_free).
 * rb_gc_adjust_memory_usage only adds to Ruby's malloc_increase and oldmalloc_increase counters
 * (libruby 3.1.2: it runs no GC itself; the next allocation's check does). It was off until
 * session 37 (TPL_GC_TELL 0): the changed GC timing made the suite abort under GC.stress with
 * auto-compaction ("[BUG] try to mark T_NONE object", the main Ractor's object moved), which
 * was Ruby 3.1.2's bug with GC.auto_compact turned on during an incremental marking, hit by the
 * tests' helper (ruby/test/helper.rb), not the gem's. -DTPL_GC_TELL=0 builds it untold (RSS then
 * grows ~120 MB over 100,000 Template.new + render: test_gc.rb's limit fails).
 * ObjectSpace.memsize_of (tmpl_size) counts the memory either way. */
static void tmpl_tell_gc(tmpl *t)
{
    size_t now = t->prog_bytes + __atomic_load_n(&t->ctx_bytes, __ATOMIC_RELAXED);
    size_t was = __atomic_load_n(&t->gc_told, __ATOMIC_RELAXED);
    while (now > was && !__atomic_compare_exchange_n(&t->gc_told, &was, now, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
    if (TPL_GC_TELL && now > was) rb_gc_adjust_memory_usage((ssize_t)(now - was));
}

/* The allocator of a Template's render contexts: malloc, counted in the Template's ctx_bytes */
static void *ctx_alloc(void *data, size_t size)
{
    void *p = malloc(size);
    if (p) __atomic_add_fetch(&((tmpl *)data)->ctx_bytes, size, __ATOMIC_RELAXED);
    return p;
}

static void *ctx_realloc(void *data, void *ptr, size_t old_size, size_t new_size)
{
    void *p = realloc(ptr, new_size);
    if (p) {
        __atomic_add_fetch(&((tmpl *)data)->ctx_bytes, new_size, __ATOMIC_RELAXED);
        __atomic_sub_fetch(&((tmpl *)data)->ctx_bytes, old_size, __ATOMIC_RELAXED);
    }
    return p;
}

static void ctx_free(void *data, void *ptr, size_t size)
{
    free(ptr);
    __atomic_sub_fetch(&((tmpl *)data)->ctx_bytes, size, __ATOMIC_RELAXED);
}

/* A render context of Template t (its allocator counts its memory: tmpl_tell_gc) */
static tpl_render *tmpl_render_new(tmpl *t, const tpl_limits *lim)
{
    tpl_allocator a = { ctx_alloc, ctx_realloc, ctx_free, t };
    return tpl_render_new_with(lim, &a);
}

static VALUE tmpl_alloc(VALUE klass)
{
    tmpl *t = ruby_xmalloc(sizeof *t);
    memset(t, 0, sizeof *t);
    t->reads = Qnil;
    t->read_syms = Qnil;
    return TypedData_Wrap_Struct(klass, &tmpl_type, t);
}

static tmpl *get_tmpl(VALUE self)
{
    tmpl *t;
    TypedData_Get_Struct(self, tmpl, &tmpl_type, t);
    if (!t->p) rb_raise(rb_eRuntimeError, "tpl: uninitialized Template");
    return t;
}

/* The Template self takes program p; bytes: p's size (its .tplb's, or an estimate: the public API
 * has no measure, and writing the program to a counter costs a third of a compile), what Ruby's
 * GC is told it holds (tmpl_tell_gc) with its reads tables */
static void set_program(VALUE self, tpl_program *p, size_t bytes)
{
    tmpl *t;
    TypedData_Get_Struct(self, tmpl, &tmpl_type, t);
    if (t->p) { tpl_program_free(p); rb_raise(rb_eRuntimeError, "tpl: Template already initialized"); }
    t->p = p;
    t->remembers = tpl_program_needs_loader(p);
    size_t nl = tpl_program_reads_located(p, NULL, 0);
    tpl_read *rl = nl ? calloc(nl, sizeof *rl) : NULL;
    if (nl && !rl) rb_raise(rb_eNoMemError, "tpl: out of memory");
    nl = tpl_program_reads_located(p, rl, nl);
    bool ivars_only = !tpl_program_needs_loader(p);
    for (size_t i = 0; i < nl; i++) {
        if ((rl[i].len == 9 || (rl[i].len == 10 && rl[i].name[9] == '?')) && !memcmp(rl[i].name, "remembers", 9))
            t->remembers = true;
        /* @ivars and function calls only: a bare name (a local, or self's method), `call` (a
         * local may be named so) or a call of self's method keeps self */
        if (!(rl[i].kind == TPL_READ_STATE && rl[i].ivar) && rl[i].kind != TPL_READ_FUNC) ivars_only = false;
    }
    size_t n = tpl_program_reads(p, NULL, NULL, 0);
    const char **names = calloc(n + 1, sizeof *names);
    size_t *lens = calloc(n + 1, sizeof *lens);
    if (!names || !lens) { free(rl); free(names); free(lens); rb_raise(rb_eNoMemError, "tpl: out of memory"); }
    tpl_program_reads(p, names, lens, n);
    /* the @ivar reads' IDs (ivars_only); a name also read another way (remembers, call: a
     * function the state shadows) would be shadowed by the @ivar's value: such a program keeps self */
    if (ivars_only && n) {
        size_t most = 0;
        for (size_t i = 0; i < n; i++) most = lens[i] > most ? lens[i] : most;
        t->ivar_id = calloc(n, sizeof *t->ivar_id);
        t->ivar_early = calloc(n, 1);
        char *iv = t->ivar_id && t->ivar_early ? malloc(most + 1) : NULL;
        if (!iv) { free(rl); free(names); free(lens); rb_raise(rb_eNoMemError, "tpl: out of memory"); }
        for (size_t i = 0; i < n && ivars_only; i++) {
            bool as_ivar = false, other = false;
            for (size_t k = 0; k < nl; k++)
                if (rl[k].len == lens[i] && !memcmp(rl[k].name, names[i], lens[i])) {
                    if (rl[k].kind == TPL_READ_STATE && rl[k].ivar) as_ivar = true;
                    else other = true;
                }
            if (as_ivar == other) ivars_only = false; /* both; or neither: reads_located failed */
            else if (as_ivar) {
                iv[0] = '@';
                memcpy(iv + 1, names[i], lens[i]);
                t->ivar_id[i] = rb_intern3(iv, (long)lens[i] + 1, rb_utf8_encoding());
                t->nivar++;
            }
        }
        free(iv);
    }
    t->ivars_only = ivars_only;
    /* the names read only as receiver-less calls (fn_id); remembers and remembers? are asked of
     * self by rb_remembers_cb, and tpl's internal names ("(defined)", "$~") are no Ruby method */
    if (n && !(t->fn_id = calloc(n, sizeof *t->fn_id))) {
        free(rl); free(names); free(lens);
        rb_raise(rb_eNoMemError, "tpl: out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        bool fn = false, other = false;
        for (size_t k = 0; k < nl; k++)
            if (rl[k].len == lens[i] && !memcmp(rl[k].name, names[i], lens[i])) {
                if (rl[k].kind == TPL_READ_FUNC) fn = true;
                else other = true;
            }
        if (!fn || other || !lens[i] || names[i][0] == '(' || names[i][0] == '$' ||
            ((lens[i] == 9 || (lens[i] == 10 && names[i][9] == '?')) && !memcmp(names[i], "remembers", 9)))
            continue;
        t->fn_id[i] = rb_intern3(names[i], (long)lens[i], rb_utf8_encoding());
        t->nfn++;
    }
    free(rl);
    VALUE reads = rb_ary_new_capa((long)n), syms = rb_ary_new_capa((long)n);
    size_t slots = 8;
    while (slots < 2 * n) slots *= 2;
    t->read_ptr = calloc(n + 1, sizeof *t->read_ptr);
    t->read_len = calloc(n + 1, sizeof *t->read_len);
    t->read_hash = calloc(n + 1, sizeof *t->read_hash);
    t->rtab = malloc(slots * sizeof *t->rtab);
    if (!t->read_ptr || !t->read_len || !t->read_hash || !t->rtab) {
        free(names);
        free(lens);
        rb_raise(rb_eNoMemError, "tpl: out of memory");
    }
    t->rmask = slots - 1;
    t->nreads = n;
    for (size_t i = 0; i < slots; i++) t->rtab[i] = -1;
    for (size_t i = 0; i < n; i++) {
        if (!(t->read_ptr[i] = malloc(lens[i] + 1))) {
            free(names);
            free(lens);
            rb_raise(rb_eNoMemError, "tpl: out of memory");
        }
        memcpy(t->read_ptr[i], names[i], lens[i]);
        t->read_ptr[i][lens[i]] = 0;
        t->read_len[i] = lens[i];
        t->read_hash[i] = tpl_val_key_hash(names[i], lens[i]);
        size_t j = t->read_hash[i] & t->rmask;
        while (t->rtab[j] >= 0) j = (j + 1) & t->rmask;
        t->rtab[j] = (int32_t)i;
        VALUE s = rb_utf8_str_new(names[i], (long)lens[i]);
        rb_obj_freeze(s);
        rb_ary_push(reads, s);
        rb_ary_push(syms, rb_str_intern(s));
    }
    free(names);
    free(lens);
    rb_obj_freeze(reads);
    rb_obj_freeze(syms);
    RB_OBJ_WRITE(self, &t->reads, reads);
    t->prog_bytes = bytes + slots * sizeof *t->rtab + n * (sizeof *t->read_ptr + sizeof *t->read_len + sizeof *t->read_hash + 16) +
                    t->nivar * (sizeof *t->ivar_id + 1) + (t->fn_id ? n * sizeof *t->fn_id : 0);
    tmpl_tell_gc(t);
    RB_OBJ_WRITE(self, &t->read_syms, syms);
}

/* The compile-time loader: a callable loader.call(name) -> String or nil. */
typedef struct load_ctx { VALUE fn; VALUE exc; } load_ctx;
typedef struct load_arg { load_ctx *l; const char *name; size_t n; } load_arg;

static VALUE loader_body(VALUE arg)
{
    load_arg *a = (load_arg *)arg;
    VALUE res = rb_funcall(a->l->fn, rb_intern("call"), 1, rb_utf8_str_new(a->name, (long)a->n));
    if (NIL_P(res)) return Qnil;
    return utf8_str(StringValue(res));
}

static char *rb_loader(void *data, const char *name, size_t name_len, size_t *len)
{
    load_ctx *l = data;
    if (!NIL_P(l->exc)) return NULL;
    load_arg a = { l, name, name_len };
    int state = 0;
    VALUE s = rb_protect(loader_body, (VALUE)&a, &state);
    if (state) {
        l->exc = rb_errinfo();
        rb_set_errinfo(Qnil);
        return NULL;
    }
    if (NIL_P(s)) return NULL;
    char *buf = malloc((size_t)RSTRING_LEN(s) + 1);
    if (!buf) return NULL;
    memcpy(buf, RSTRING_PTR(s), (size_t)RSTRING_LEN(s));
    buf[RSTRING_LEN(s)] = 0;
    *len = (size_t)RSTRING_LEN(s);
    RB_GC_GUARD(s);
    return buf;
}

static bool opt_true(VALUE opts, const char *key)
{
    if (NIL_P(opts)) return false;
    VALUE v = rb_hash_lookup2(opts, ID2SYM(rb_intern(key)), Qundef);
    return v != Qundef && RTEST(v);
}

/* _compile(src, name, syntax 0|1|2, profile String|nil, opts Hash|nil, loader|nil) */
static VALUE tmpl_compile(VALUE self, VALUE src, VALUE name, VALUE syntax, VALUE profile, VALUE opts, VALUE loader)
{
    src = utf8_str(StringValue(src));
    int syn = NUM2INT(syntax);
    if (syn < 0 || syn > 2) rb_raise(rb_eArgError, "tpl: bad syntax %d", syn);
    tpl_options o = { 0 };
    const char *prof = NIL_P(profile) ? NULL : StringValueCStr(profile);
    if (tpl_options_profile(&o, (tpl_syntax)syn, prof) != TPL_OK)
        rb_raise(rb_eArgError, "tpl: unknown profile %" PRIsVALUE " for this syntax", rb_inspect(profile));
    if (!NIL_P(opts)) Check_Type(opts, T_HASH);
    if (opt_true(opts, "trim_blocks")) o.trim_blocks = true;
    if (opt_true(opts, "lstrip_blocks")) o.lstrip_blocks = true;
    if (opt_true(opts, "keep_trailing_newline")) o.keep_trailing_newline = true;
    if (opt_true(opts, "strict")) o.strict = true;
    if (opt_true(opts, "tidy")) o.tidy = true;
    if (opt_true(opts, "erb_self")) o.erb_self = true;
    VALUE lang = NIL_P(opts) ? Qnil : rb_hash_lookup(opts, ID2SYM(rb_intern("lang")));
    if (!NIL_P(lang)) o.lang = StringValueCStr(lang);
    load_ctx l = { loader, Qnil };
    if (!NIL_P(loader)) {
        o.loader = rb_loader;
        o.loader_data = &l;
    }
    const char *nm = NIL_P(name) ? NULL : StringValueCStr(name);
    tpl_program *p = NULL;
    tpl_error err = { 0 };
    tpl_status st = tpl_compile(nm, RSTRING_PTR(src), (size_t)RSTRING_LEN(src), &o, &p, &err);
    RB_GC_GUARD(src);
    RB_GC_GUARD(lang);
    if (!NIL_P(l.exc)) {
        tpl_error_clear(&err);
        tpl_program_free(p);
        rb_exc_raise(l.exc);
    }
    if (st != TPL_OK) {
        tpl_error e = err;
        /* raise_tpl copies the strings before the record is cleared */
        char *f = tpl_error_format(&e);
        VALUE args[8] = {
            INT2NUM((int)e.status), rb_utf8_str_new_cstr(e.message ? e.message : ""),
            e.file ? rb_utf8_str_new_cstr(e.file) : Qnil, UINT2NUM(e.line), UINT2NUM(e.column),
            e.source_line ? rb_utf8_str_new_cstr(e.source_line) : Qnil, rb_utf8_str_new_cstr(f ? f : ""),
            rb_utf8_str_new_cstr(tpl_error_exception(e.kind ? e.kind : tpl_status_kind(e.status), TPL_SYNTAX_ERB)),
        };
        free(f);
        tpl_error_clear(&err);
        VALUE exc = rb_funcallv(rb_const_get(mod_tpl(), rb_intern("Error")), rb_intern("from_tpl"), 8, args);
        rb_exc_raise(exc);
    }
    /* (the .tplb of the bench workloads' ERB templates is 2-6 times their source; 3 times the
     * source and 1 KiB is the estimate) */
    set_program(self, p, 3 * (size_t)RSTRING_LEN(src) + 1024);
    /* Tpl::ERB: the encoding of a template that is not UTF-8 (its text tagged: erb_tag) */
    VALUE ee = NIL_P(opts) ? Qnil : rb_hash_lookup(opts, ID2SYM(rb_intern("erb_encoding")));
    if (!NIL_P(ee)) {
        int ei = rb_to_encoding_index(ee);
        if (ei < 0 || ei > TAG_MAXENC) rb_raise(rb_eArgError, "tpl: erb_encoding: %" PRIsVALUE, rb_inspect(ee));
        if (ei != rb_utf8_encindex()) {
            get_tmpl(self)->erb_enc = ei + 1;
            get_tmpl(self)->erb_tagged = memchr(RSTRING_PTR(src), 0xF3, (size_t)RSTRING_LEN(src)) != NULL;
        }
    }
    return self;
}

/* _load(bytes, name) */
static VALUE tmpl_load(VALUE self, VALUE data, VALUE name)
{
    StringValue(data);
    const char *nm = NIL_P(name) ? NULL : StringValueCStr(name);
    tpl_program *p = NULL;
    tpl_error err = { 0 };
    tpl_status st = tpl_program_load(nm, RSTRING_PTR(data), (size_t)RSTRING_LEN(data), &p, &err);
    RB_GC_GUARD(data);
    size_t bytes = (size_t)RSTRING_LEN(data);
    if (st != TPL_OK) {
        char *f = tpl_error_format(&err);
        VALUE args[8] = {
            INT2NUM((int)err.status), rb_utf8_str_new_cstr(err.message ? err.message : ""),
            err.file ? rb_utf8_str_new_cstr(err.file) : Qnil, UINT2NUM(err.line), UINT2NUM(err.column),
            err.source_line ? rb_utf8_str_new_cstr(err.source_line) : Qnil, rb_utf8_str_new_cstr(f ? f : ""),
            rb_utf8_str_new_cstr(tpl_error_exception(err.kind ? err.kind : tpl_status_kind(err.status), TPL_SYNTAX_ERB)),
        };
        free(f);
        tpl_error_clear(&err);
        rb_exc_raise(rb_funcallv(rb_const_get(mod_tpl(), rb_intern("Error")), rb_intern("from_tpl"), 8, args));
    }
    set_program(self, p, bytes);
    return self;
}

/* save(strip_source = false) -> binary String (.tplb) */
static VALUE tmpl_save(int argc, VALUE *argv, VALUE self)
{
    VALUE strip = Qfalse;
    rb_scan_args(argc, argv, "01", &strip);
    tmpl *t = get_tmpl(self);
    void *buf = NULL;
    size_t len = 0;
    if (tpl_program_save(t->p, RTEST(strip) ? TPL_SAVE_STRIP_SOURCE : 0, &buf, &len) != TPL_OK)
        rb_raise(rb_eNoMemError, "tpl: out of memory");
    VALUE s = rb_str_new(buf, (long)len);
    free(buf);
    return s;
}

static VALUE tmpl_reads(VALUE self) { return get_tmpl(self)->reads; }

static VALUE tmpl_dump(VALUE self)
{
    char *s = tpl_disassemble(get_tmpl(self)->p);
    if (!s) rb_raise(rb_eNoMemError, "tpl: out of memory");
    VALUE r = rb_utf8_str_new_cstr(s);
    free(s);
    return r;
}

static VALUE tmpl_syntax(VALUE self)
{
    const tpl_options *o = tpl_program_options(get_tmpl(self)->p);
    static const char *const names[] = { "jinja", "erb", "fmt" };
    return ID2SYM(rb_intern(names[o ? o->syntax : 0]));
}

/* ---- render */

typedef struct run_arg { tpl_render *r; const tpl_program *p; const char *out; size_t n; tpl_status st; } run_arg;

static void *run_nogvl(void *data)
{
    run_arg *a = data;
    a->st = tpl_render_run(a->r, a->p, &a->out, &a->n);
    return NULL;
}

/* opts[:key]. A macro, so that rb_intern gets the literal: Ruby's headers then cache the ID at
 * the call site instead of hashing the name on every render (that cost ~7,600 instructions per
 * render with options). */
#define opt(opts, key) (NIL_P(opts) ? Qnil : rb_hash_lookup((opts), ID2SYM(rb_intern(key))))

static const char *opt_cstr(VALUE v) { return NIL_P(v) ? NULL : StringValueCStr(v); }

/* The signature of an option's value: its strings, each length-prefixed (a Ruby String built
 * per render; compared with the bytes the context's option was set from). */
static void sig_add(VALUE b, const char *p, size_t n)
{
    uint64_t len = n;
    rb_str_cat(b, (const char *)&len, sizeof len);
    rb_str_cat(b, p, (long)n);
}

static void sig_add_str(VALUE b, VALUE v)
{
    if (NIL_P(v)) { rb_str_cat(b, "\xff", 1); return; }
    sig_add(b, RSTRING_PTR(v), (size_t)RSTRING_LEN(v));
}

/* Whether option k is already set from sig; else clears it when set (and marks it unknown). */
static bool sig_same(rctx *c, int k, VALUE sig)
{
    settings *st = &c->set;
    unsigned bit = 1u << k;
    if ((st->valid & bit) && st->siglen[k] == (size_t)RSTRING_LEN(sig) && memcmp(st->sig[k], RSTRING_PTR(sig), st->siglen[k]) == 0)
        return true;
    st->valid &= ~bit;
    st->dirty |= bit; /* set from here on (a failure part way leaves it to clear next time) */
    return false;
}

static void sig_keep(rctx *c, int k, VALUE sig)
{
    settings *st = &c->set;
    size_t n = (size_t)RSTRING_LEN(sig);
    char *m = realloc(st->sig[k], n + 1);
    if (!m) return; /* stays unknown: set again next time */
    memcpy(m, RSTRING_PTR(sig), n);
    st->sig[k] = m;
    st->siglen[k] = n;
    st->valid |= 1u << k;
}

static void clear_option(tpl_render *r, int k)
{
    switch (k) {
    case S_FACTS: tpl_render_clear_facts(r); break;
    case S_CATS: tpl_render_clear_catalogs(r); break;
    case S_KEYS: tpl_render_clear_tr_keys(r); break;
    case S_LANG: tpl_render_set_lang(r, NULL); break;
    default: tpl_render_set_call(r, NULL, NULL); tpl_render_set_call_claimed(r, NULL); break;
    }
}

/* Whether facts (an Array of UTF-8 or US-ASCII Strings) are what the facts option was set from:
 * compared with the kept signature in place, without building one. */
static bool facts_same(rctx *c, VALUE facts, int enc_utf8, int enc_ascii)
{
    settings *st = &c->set;
    if (!RB_TYPE_P(facts, T_ARRAY) || !(st->valid & (1u << S_FACTS))) return false;
    const char *sig = st->sig[S_FACTS];
    size_t pos = 0, end = st->siglen[S_FACTS];
    for (long i = 0; i < RARRAY_LEN(facts); i++) {
        VALUE f = RARRAY_AREF(facts, i);
        if (!RB_TYPE_P(f, T_STRING)) return false;
        int ei = RB_ENCODING_GET(f);
        if (ei != enc_utf8 && ei != enc_ascii) return false;
        uint64_t len;
        if (end - pos < sizeof len) return false;
        memcpy(&len, sig + pos, sizeof len);
        pos += sizeof len;
        if (len != (uint64_t)RSTRING_LEN(f) || end - pos < len || memcmp(sig + pos, RSTRING_PTR(f), (size_t)len) != 0)
            return false;
        pos += (size_t)len;
    }
    return pos == end;
}

static void apply_settings(rctx *c, const VALUE *given)
{
    tpl_render *r = c->r;
    tpl_render_set_remembers(r, !NIL_P(c->remembers) || !NIL_P(c->remembers_self) ? rb_remembers_cb : NULL, c);
    for (int k = 0; k < NSET; k++) {
        if (NIL_P(given[k]) && (c->set.dirty & (1u << k))) { /* set before, not wanted now */
            clear_option(r, k);
            c->set.dirty &= ~(1u << k);
            c->set.valid &= ~(1u << k);
        }
    }
    VALUE facts = given[S_FACTS];
    if (!NIL_P(facts) && !facts_same(c, facts, c->enc_utf8, c->enc_ascii)) {
        facts = rb_Array(facts);
        long n = RARRAY_LEN(facts);
        VALUE strs = rb_ary_new_capa(n), sig = rb_str_buf_new(16 * n + 8);
        for (long i = 0; i < n; i++) {
            VALUE f = utf8_str(rb_obj_as_string(RARRAY_AREF(facts, i)));
            rb_ary_push(strs, f);
            sig_add_str(sig, f);
        }
        if (!sig_same(c, S_FACTS, sig)) {
            tpl_render_clear_facts(r);
            for (long i = 0; i < n; i++) {
                VALUE f = RARRAY_AREF(strs, i);
                if (tpl_render_add_fact(r, RSTRING_PTR(f), (size_t)RSTRING_LEN(f)) != TPL_OK)
                    rb_raise(rb_eArgError, "tpl: bad fact: %s", tpl_render_error(r)->message);
            }
            sig_keep(c, S_FACTS, sig);
        }
    }
    VALUE call = given[S_CALL];
    if (!NIL_P(call)) {
        Check_Type(call, T_HASH);
        VALUE ch = opt(call, "channel"), me = opt(call, "medium"), cl = opt(call, "claimed");
        if (SYMBOL_P(ch)) ch = rb_sym2str(ch);
        if (SYMBOL_P(me)) me = rb_sym2str(me);
        if (!NIL_P(ch)) StringValue(ch);
        if (!NIL_P(me)) StringValue(me);
        if (!NIL_P(cl)) StringValue(cl);
        VALUE sig = rb_str_buf_new(32);
        sig_add_str(sig, ch);
        sig_add_str(sig, me);
        sig_add_str(sig, cl);
        if (!sig_same(c, S_CALL, sig)) {
            if (tpl_render_set_call(r, opt_cstr(ch), opt_cstr(me)) != TPL_OK ||
                tpl_render_set_call_claimed(r, opt_cstr(cl)) != TPL_OK)
                rb_raise(rb_eArgError, "tpl: bad call: %s", tpl_render_error(r)->message);
            sig_keep(c, S_CALL, sig);
        }
    }
    VALUE lang = given[S_LANG];
    if (!NIL_P(lang)) {
        if (SYMBOL_P(lang)) lang = rb_sym2str(lang);
        StringValue(lang);
        if (!sig_same(c, S_LANG, lang)) {
            if (tpl_render_set_lang(r, StringValueCStr(lang)) != TPL_OK) rb_raise(rb_eArgError, "tpl: bad lang");
            sig_keep(c, S_LANG, lang);
        }
    }
    VALUE cats = given[S_CATS];
    if (!NIL_P(cats)) {
        /* one catalog (a Hash or a JSON String) or an Array of them: rb_Array would make a Hash's pairs */
        cats = RB_TYPE_P(cats, T_HASH) || RB_TYPE_P(cats, T_STRING) ? rb_ary_new_from_values(1, &cats) : rb_Array(cats);
        long n = RARRAY_LEN(cats);
        VALUE strs = rb_ary_new_capa(n), sig = rb_str_buf_new(64);
        for (long i = 0; i < n; i++) {
            VALUE j = RARRAY_AREF(cats, i);
            if (RB_TYPE_P(j, T_HASH)) { /* a catalog as a Hash: its JSON text (json loaded on first use) */
                rb_require("json");
                j = rb_funcall(rb_const_get(rb_cObject, rb_intern("JSON")), rb_intern("generate"), 1, j);
            } else if (!RB_TYPE_P(j, T_STRING)) {
                rb_raise(rb_eTypeError, "a catalog must be a JSON String or a Hash, not %" PRIsVALUE, rb_obj_class(j));
            }
            j = utf8_str(j);
            rb_ary_push(strs, j);
            sig_add_str(sig, j);
        }
        if (!sig_same(c, S_CATS, sig)) {
            tpl_render_clear_catalogs(r);
            for (long i = 0; i < n; i++) {
                VALUE j = RARRAY_AREF(strs, i);
                if (tpl_render_add_catalog_json(r, RSTRING_PTR(j), (size_t)RSTRING_LEN(j)) != TPL_OK)
                    rb_raise(rb_eArgError, "tpl: bad catalog: %s", tpl_render_error(r)->message);
            }
            sig_keep(c, S_CATS, sig);
        }
    }
    VALUE keys2 = given[S_KEYS];
    if (!NIL_P(keys2)) {
        keys2 = rb_Array(keys2);
        long n = RARRAY_LEN(keys2);
        VALUE strs = rb_ary_new_capa(n), sig = rb_str_buf_new(32);
        for (long i = 0; i < n; i++) {
            VALUE k = RARRAY_AREF(keys2, i);
            if (SYMBOL_P(k)) k = rb_sym2str(k);
            StringValue(k);
            rb_ary_push(strs, k);
            sig_add_str(sig, k);
        }
        if (!sig_same(c, S_KEYS, sig)) {
            tpl_render_clear_tr_keys(r);
            for (long i = 0; i < n; i++) {
                VALUE k = RARRAY_AREF(strs, i);
                if (tpl_render_add_tr_key(r, RSTRING_PTR(k), (size_t)RSTRING_LEN(k)) != TPL_OK)
                    rb_raise(rb_eArgError, "tpl: bad tr key");
            }
            sig_keep(c, S_KEYS, sig);
        }
    }
}

typedef struct render_arg {
    VALUE tself;
    tmpl *t;
    rctx *c;
    VALUE state, erb_self;
    const VALUE *given;     /* the render options by S_*, Qnil when not given */
    VALUE result;
} render_arg;

/* A name Binding#local_variable_get accepts (the reads-set also holds remembers? and friends). */
static bool local_name(VALUE s)
{
    const unsigned char *p = (const unsigned char *)RSTRING_PTR(s);
    long n = RSTRING_LEN(s);
    if (n == 0 || !(p[0] == '_' || (p[0] >= 'a' && p[0] <= 'z') || p[0] >= 0x80)) return false;
    for (long i = 1; i < n; i++)
        if (!(p[i] == '_' || (p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z') || (p[i] >= '0' && p[i] <= '9') ||
              p[i] >= 0x80))
            return false;
    return true;
}

/* A state Hash's entry: its key matched to a read name by tpl_val_key_hash (Template.rtab) and
 * its bytes; under both a Symbol and a String key, the Symbol's value (as Hash lookups by
 * Symbol then String found) — but for Tpl::ERB#result_with_hash (c->erb_api) the later entry's,
 * as ERB sets a local variable per entry in order. A key in an encoding other than UTF-8 matches only when it is
 * ASCII (as a Hash lookup by a UTF-8 String finds it). */
struct state_iter { rctx *c; tmpl *t; VALUE *found; };

static int state_i(VALUE k, VALUE v, VALUE arg)
{
    struct state_iter *si = (struct state_iter *)arg;
    rctx *c = si->c;
    tmpl *t = si->t;
    unsigned char kind;
    VALUE ks;
    if (RB_TYPE_P(k, T_STRING)) { kind = 1; ks = k; }
    else if (SYMBOL_P(k)) { kind = 2; ks = k; }
    else return ST_CONTINUE;
    /* a key seen before (a Symbol, or a frozen String: the same objects render after render)
     * is in the key cache with its hash */
    keyent *slot = &((keycache *)DATA_PTR(c->kc))->e[((uintptr_t)k * UINT64_C(0x9E3779B97F4A7C15)) >> 56 & (KEYC - 1)];
    const char *p;
    size_t n;
    uint64_t hv;
    keyent *ke = NULL;
    if (slot->k == k) {
        ke = slot;
        if (ke->ridx != KEY_RIDX_UNSET) { /* matched by an earlier render */
            int32_t i = ke->ridx;
            if (i >= 0 && (kind > c->sc.fkind[i] || c->erb_api)) {
                si->found[i] = v;
                c->sc.fkind[i] = kind;
            }
            return ST_CONTINUE;
        }
        p = slot->u8;
        n = slot->len;
        hv = slot->hash;
    } else {
        if (kind == 2) ks = rb_sym2str(k);
        int ei = RB_ENCODING_GET(ks);
        if (ei != c->enc_utf8 &&
            (!rb_enc_asciicompat(rb_enc_from_index(ei)) || rb_enc_str_coderange(ks) != RUBY_ENC_CODERANGE_7BIT))
            return ST_CONTINUE;
        p = RSTRING_PTR(ks);
        n = (size_t)RSTRING_LEN(ks);
        ke = (kind == 2 || OBJ_FROZEN(k)) && key_ok(c, ks) ? key_fill(c, slot, k, ks) : NULL;
        hv = ke ? ke->hash : tpl_val_key_hash(p, n);
    }
    int32_t hit = -1;
    for (size_t j = hv & t->rmask; t->rtab[j] >= 0; j = (j + 1) & t->rmask) {
        int32_t i = t->rtab[j];
        if (t->read_hash[i] == hv && t->read_len[i] == n && memcmp(t->read_ptr[i], p, n) == 0) {
            if (kind > c->sc.fkind[i] || c->erb_api) {
                si->found[i] = v;
                c->sc.fkind[i] = kind;
            }
            hit = i;
            break;
        }
    }
    if (ke) ke->ridx = hit;
    return ST_CONTINUE;
}

HASH_EACH_FN(state_i)

/* self's @ivars read by an ivars-only program (render_body): found[i] for ids[i] (0 for a read
 * that is not an @ivar: no ID is 0) */
struct ivar_iter { const ID *ids; size_t n; VALUE *found; size_t left; };
#define IVAR_WALK 32 /* the most reads render_body's walk of self's early @ivars takes */

static int ivar_i(ID id, VALUE v, st_data_t arg)
{
    struct ivar_iter *it = (struct ivar_iter *)arg;
    for (size_t i = 0; i < it->n; i++)
        if (it->ids[i] == id) {
            it->found[i] = v;
            return --it->left ? ST_CONTINUE : ST_STOP;
        }
    return ST_CONTINUE;
}

/* o.respond_to?(id, true), as Ruby answers it; asked on every render of a Tpl::ERB with a self
 * (self's remembers?/remembers, render_given; self's own functions, self_fns): self's methods may
 * change between renders, so Ruby's own answer each time, nothing kept here. rb_obj_respond_to
 * cost ~420 instructions a name (w1: ~830 a render, callgrind). When o's class has Kernel's own
 * respond_to? and respond_to_missing? (rb_method_basic_definition_p), respond_to?(id, true) is
 * whether the class has a method id, of any visibility, that is not a not-implemented stub:
 * rb_method_boundp with no flags (public API; its flags beyond 0 are not used), and for a name
 * not bound, respond_to_missing?'s false. Each is a lookup in Ruby's method cache, which Ruby
 * invalidates when a method is defined, removed or undefined, or a module included or prepended:
 * ~100 instructions. Else (either redefined) rb_obj_respond_to, which calls them. */
static bool self_responds(VALUE o, ID id)
{
    VALUE klass = rb_class_of(o);
    if (rb_method_basic_definition_p(klass, rb_intern("respond_to?"))) {
        if (rb_method_boundp(klass, id, 0)) return true;
        if (rb_method_basic_definition_p(klass, rb_intern("respond_to_missing?"))) return false;
    }
    return rb_obj_respond_to(o, id, 1) != 0;
}

/* The receiver-less calls of the program's builtins (tmpl.fn_id) that Ruby sends to self's own
 * method: found[i] is that Method (a host object: the VM calls it with the call's arguments),
 * or Qundef — the builtin, which is Kernel's method or tpl's own (a local or a state key of the
 * name is not the call's). self's own: one it answers (private too, as a call without a
 * receiver; respond_to_missing? too) that is not the method Ruby defined at boot
 * (rb_method_basic_definition_p: Kernel#format untouched; not found for a name Kernel lacks). */
static void self_fns(const tmpl *t, VALUE es, VALUE *found)
{
    VALUE klass = rb_class_of(es);
    for (size_t i = 0; i < t->nreads; i++) {
        ID id = t->fn_id[i];
        if (!id) continue;
        found[i] = Qundef;
        if (self_responds(es, id) && !rb_method_basic_definition_p(klass, id))
            found[i] = rb_obj_method(es, ID2SYM(id));
    }
}

/* The body of a render (may raise: render_ensure returns the context to the pool). */
static VALUE render_body(VALUE arg)
{
    render_arg *ra = (render_arg *)arg;
    tmpl *t = ra->t;
    rctx *c = ra->c;
    tpl_render *r = c->r;
    apply_settings(c, ra->given);
    tpl_render_reset_state(r);
    scratch *sc = &c->sc;
    sc->nents = sc->nitems = 0;
    scratch_copy_reset(sc); /* (the last render's values are gone with its state) */
    if (NIL_P(c->kc)) c->kc = keycache_new();
    keycache_drop_dead(DATA_PTR(c->kc)); /* (the last render's values are gone with its state) */
    size_t nreads = t->nreads;
    if (nreads > sc->capfound) {
        unsigned char *fk = realloc(sc->fkind, nreads);
        if (fk) sc->fkind = fk;
        uint32_t *rw = fk ? realloc(sc->rwhich, nreads * sizeof *rw) : NULL;
        if (rw) sc->rwhich = rw;
        tpl_val *rv = rw ? realloc(sc->rvals, nreads * sizeof *rv) : NULL;
        if (!rv) rb_raise(rb_eNoMemError, "tpl: out of memory");
        sc->rvals = rv;
        sc->capfound = nreads;
    }
    /* the values found for the reads, where the GC sees them — on the machine stack, or a
     * buffer it scans the same way — which pins them: converting the state allocates (Strings
     * in other encodings, host objects; a Binding's locals are read by Ruby calls), and a GC
     * then, under GC.auto_compact, could move what only a Hash or the Binding still holds */
    VALUE pinv = 0;
    VALUE *found = nreads ? ALLOCV_N(VALUE, pinv, nreads) : NULL;
    for (size_t i = 0; i < nreads; i++) {
        found[i] = Qundef;
        sc->fkind[i] = 0;
    }
    VALUE state = ra->state;
    bool binding = !NIL_P(state) && !RB_TYPE_P(state, T_HASH) && rb_obj_is_kind_of(state, rb_cBinding);
    if (!binding && !NIL_P(state)) Check_Type(state, T_HASH);
    VALUE locals = Qnil;
    /* an ERB self the program only reads @ivars of (tmpl.ivars_only): they are the state, read
     * below, and no self is set; a Binding's locals are not asked (no name the program reads
     * is a local: its other reads are functions, which a Ruby local never shadows) */
    /* — only while no Ruby code can run during the render (no remembers block or method of self;
     * no host object among the values, checked after converting them): a method could change
     * an @ivar, which Ruby's template sees changed */
    bool ivar_state = !NIL_P(ra->erb_self) && t->ivars_only && NIL_P(c->remembers) && NIL_P(c->remembers_self);
    /* — else (Ruby code may run: a remembers call) they are read up front all the same, copied,
     * and the program reads them from the state until Ruby code first runs (ivc_stale: then
     * from self, live; tpl_render_set_self_ivars_in_state), where each read before was a send
     * to self */
    bool ivar_first = !NIL_P(ra->erb_self) && t->ivars_only && !ivar_state;
reread:
    /* (an @ivars-only program reads no local: the Binding is not asked, also when its @ivars are
     * read live below) */
    if (binding && nreads && !t->ivars_only) {
        /* a Binding's local variables: asked once (Binding#local_variables), not per name */
        ID get = rb_intern("local_variable_get");
        locals = rb_funcall(state, rb_intern("local_variables"), 0);
        Check_Type(locals, T_ARRAY);
        for (size_t i = 0; i < nreads; i++) {
            VALUE sym = RARRAY_AREF(t->read_syms, (long)i);
            bool local = false;
            for (long k = 0; k < RARRAY_LEN(locals) && !local; k++) local = RARRAY_AREF(locals, k) == sym;
            if (!local || !local_name(RARRAY_AREF(t->reads, (long)i))) continue;
            found[i] = rb_funcall(state, get, 1, sym);
        }
    } else if (!binding && !NIL_P(state) && nreads) {
        if (RHASH_SIZE(state) <= 2 * nreads + 16) { /* one pass over the Hash, no Ruby hashing */
            struct state_iter si = { c, t, found };
            HASH_EACH(state, state_i, &si);
        } else { /* a big Hash: look the names up (as a Symbol, then as a String) */
            for (size_t i = 0; i < nreads; i++) {
                VALUE v = rb_hash_lookup2(state, RARRAY_AREF(t->read_syms, (long)i), Qundef);
                if (v == Qundef) v = rb_hash_lookup2(state, RARRAY_AREF(t->reads, (long)i), Qundef);
                found[i] = v;
            }
        }
    }
    RB_GC_GUARD(locals);
    /* (rb_ivar_get calls no Ruby code; an unset @ivar is left out: nil when read, as in Ruby, and
     * defined?(@x) nil, whatever a Hash state holds under that name) */
    /* (an object's @ivar slots bound its count: ROBJECT_NUMIV, where rb_ivar_count walks them) */
    VALUE es = ra->erb_self;
    if (ivar_first) {
        /* the @ivars read before Ruby code ran in the renders so far (ivar_early), not the
         * others: they would be converted for nothing, as reads after Ruby code ran are sends.
         * Up to IVAR_WALK of them on an object with a few @ivars: one walk over self's @ivars
         * (ivar_i, as below), stopped once all are found (w1: the first five of eight,
         * ~400 instructions under five rb_ivar_get) */
        ID early[IVAR_WALK];
        size_t nearly = 0;
        for (size_t i = 0; i < nreads; i++) {
            bool e = t->ivar_id[i] && __atomic_load_n(&t->ivar_early[i], __ATOMIC_RELAXED);
            if (nreads <= IVAR_WALK) early[i] = e ? t->ivar_id[i] : 0;
            nearly += e;
        }
        if (nearly && nreads <= IVAR_WALK && RB_TYPE_P(es, T_OBJECT) &&
            (size_t)ROBJECT_NUMIV(es) <= 2 * nearly + 8) {
            struct ivar_iter it = { early, nreads, found, nearly };
            rb_ivar_foreach(es, ivar_i, (st_data_t)&it);
        } else {
            for (size_t i = 0; nearly && i < nreads; i++)
                if (t->ivar_id[i] && __atomic_load_n(&t->ivar_early[i], __ATOMIC_RELAXED)) {
                    found[i] = rb_ivar_get(es, t->ivar_id[i]);
                    if (NIL_P(found[i]) && !rb_ivar_defined(es, t->ivar_id[i])) found[i] = Qundef;
                }
        }
    } else if (ivar_state && t->nivar &&
        (RB_TYPE_P(es, T_OBJECT) ? (size_t)ROBJECT_NUMIV(es) : (size_t)rb_ivar_count(es)) <= 2 * (size_t)t->nivar + 8) {
        /* one walk over self's @ivars (a few, as a view's are): ~60 instructions per @ivar,
         * where rb_ivar_get hashes each name in the class's index table (~170, and
         * rb_ivar_defined again for nil); an @ivar not set is not walked (Qundef) */
        struct ivar_iter it = { t->ivar_id, nreads, found, t->nivar };
        rb_ivar_foreach(ra->erb_self, ivar_i, (st_data_t)&it);
    } else {
        for (size_t i = 0; ivar_state && i < nreads; i++)
            if (t->ivar_id[i]) {
                found[i] = rb_ivar_get(ra->erb_self, t->ivar_id[i]);
                if (NIL_P(found[i]) && !rb_ivar_defined(ra->erb_self, t->ivar_id[i])) found[i] = Qundef;
            }
    }
    if (t->nfn && !NIL_P(es)) self_fns(t, es, found);
    /* Strings are borrowed when the render will hold the GVL and call no Ruby code: no remembers
     * block or self, and the context's last render small (GVL_VALS, GVL_OUT); when converting
     * finds a host object after all (callbacks will run Ruby code), the state is made again,
     * copying them. */
    /* A Ruby thread alone in its Ractor keeps the GVL for a long render too: no other thread
     * could run Ruby code meanwhile (another Ractor runs anyway, under its own lock, and
     * touches none of this state), so releasing it would only cost its Strings' copies. */
    bool alone = rb_thread_alone() != 0;
    c->borrow = NIL_P(c->remembers) && NIL_P(c->remembers_self) && (NIL_P(ra->erb_self) || ivar_state) &&
                (alone || (c->last_out < GVL_OUT && c->last_nvals < GVL_VALS));
    /* embedded Strings (short ones: a chat's roles) too, unless a GC runs while the state is
     * converted (host objects and other encodings allocate Ruby objects): it may have compacted
     * the heap, moving them, so the state is then made again, copying them */
    c->borrow_emb = c->borrow;
again:
    /* a render that does not borrow its Strings copies them to its scratch blocks: one memcpy
     * each, no tpl_val_str (pooled contexts: a render with its own limits counts them) */
    c->copy = !c->borrow && c->copy_ok;
    scratch_copy_reset(sc);
    c->borrowed = c->borrowed_emb = false;
    size_t gcs = rb_gc_count();
    /* the state as the values of the program's reads (tpl_render_set_state_reads: its names are
     * the program's, and the VM finds each at once, where from a map it looked each up) */
    size_t nw = 0;
    for (size_t i = 0; i < nreads; i++) {
        if (found[i] == Qundef) continue;
        /* (a String borrowed or copied inline, as a Hash's values are: w5's ten) */
        VALUE v = found[i];
        tpl_val *out = &sc->rvals[nw];
        if (!((c->borrow || c->copy) && RB_TYPE_P(v, T_STRING) && str_borrow_fast(c, v, out))) to_val(c, v, out);
        sc->rwhich[nw++] = (uint32_t)i;
    }
    if ((ivar_state || ivar_first) && c->has_host) {
        /* a host object among self's @ivars: its methods may change the others, read live */
        tpl_render_reset_state(r);
        sc->nents = sc->nitems = 0;
        c->nvals = 0;
        c->borrow = c->borrow_emb = false;
        ivar_state = ivar_first = false;
        for (size_t i = 0; i < nreads; i++) found[i] = Qundef;
        goto reread;
    }
    if ((c->borrowed && c->has_host) || (c->borrowed_emb && rb_gc_count() != gcs)) {
        tpl_render_reset_state(r);
        sc->nents = sc->nitems = 0;
        c->nvals = 0;
        c->borrow = c->borrow && !c->has_host;
        c->borrow_emb = false;
        goto again;
    }
    /* (callbacks convert what Ruby code returns and self's @ivars read live: copied, to the
     * scratch blocks as the state's are when the context is pooled — the copies are the
     * render's own, valid until the next render starts — else to the render's memory) */
    c->borrow = c->borrow_emb = false;
    c->copy = c->copy_ok;
    RB_GC_GUARD(pinv);
    ALLOCV_END(pinv);
    checkst(tpl_render_set_state_reads(r, t->p, sc->rwhich, sc->rvals, nw));
    sc->nents = 0;
    if (!NIL_P(ra->erb_self) && !ivar_state) {
        /* (self's handle in the context, not a chunk: render_given holds self for the render) */
        rbobj *h = &c->self_obj;
        *h = (rbobj){ ra->erb_self, c, true };
        tpl_val sv;
        checkst(tpl_val_host(r, &rb_class, h, &sv));
        c->has_host = true;
        tpl_render_set_self_val(r, sv);
        if (ivar_first) c->ivars_in_state = tpl_render_set_self_ivars_in_state(r, true) == TPL_OK;
    }
    run_arg a = { r, t->p, NULL, 0, TPL_OK };
    /* The GVL: kept when callbacks may run Ruby code (host objects, a remembers block or self);
     * else released only for a render that is likely long — a state of GVL_VALS strings and
     * containers or more, or a context whose last render wrote GVL_OUT bytes or more — as
     * releasing and re-taking it costs about a microsecond, more than a short render. */
    c->last_nvals = c->nvals;
    if (c->has_host || !NIL_P(c->remembers) || !NIL_P(c->remembers_self) || c->borrowed || alone ||
        (c->nvals < GVL_VALS && c->last_out < GVL_OUT))
        run_nogvl(&a);
    else
        rb_thread_call_without_gvl(run_nogvl, &a, NULL, NULL);
    if (a.st == TPL_OK) {
        c->last_out = a.n;
        if (t->erb_tagged) c->tagset[(t->erb_enc - 1) >> 6] |= UINT64_C(1) << ((t->erb_enc - 1) & 63);
        if (t->erb_enc || c->tagged) {
            ra->result = erb_result(c, a.out, a.n, t->erb_enc ? t->erb_enc - 1 : c->enc_utf8);
        } else {
            /* a fresh String's encoding set in its flags (rb_utf8_str_new's rb_enc_associate_index
             * checks and clears what a new String has not: ~170 instructions a render) */
            ra->result = rb_str_new(a.out, (long)a.n);
            RB_ENCODING_SET_INLINED(ra->result, c->enc_utf8);
        }
        return Qnil;
    }
    if (c->jump) return Qnil; /* (render_given jumps on) */
    const tpl_error *e = tpl_render_error(r);
    if (c->refused) self_kernel_raise(e, c->refused);
    /* (the host's payload: an exception a rescue in the template took, and so c->exc, is no
     * longer the render's error) */
    void *payload = tpl_render_error_payload(r);
    if (payload) {
        VALUE exc = (VALUE)payload;
        VALUE where = rb_sprintf(" (tpl: raised while rendering %s, line %u, column %u)", e->file ? e->file : "<template>",
                                 e->line, e->column);
        VALUE msg = rb_str_plus(rb_obj_as_string(exc), where);
        VALUE nexc = rb_funcall(exc, rb_intern("exception"), 1, msg);
        rb_exc_raise(nexc);
    }
    raise_tpl(e);
    return Qnil;
}

static VALUE render_ensure(VALUE arg)
{
    render_arg *ra = (render_arg *)arg;
    tmpl *t = ra->t;
    rctx *c = ra->c;
    tpl_render_reset_state(c->r); /* no handle to a Ruby object outlives the render */
    tpl_render_set_remembers(c->r, NULL, NULL);
    while (c->chunks) {
        objchunk *k = c->chunks;
        c->chunks = k->next;
        ruby_xfree(k);
    }
    bool locked = pool_lock(t);
    bool kept = t->npool < POOL_MAX;
    if (kept) t->pool[t->npool++] = (pooled_ctx){ c->r, c->set, c->sc, c->kc, c->last_out, c->last_nvals };
    pool_unlock(t, locked);
    if (!kept) { tpl_render_free(c->r); settings_free(&c->set); scratch_free(&c->sc); }
    c->r = NULL;
    return Qnil;
}

/* A render allocates one Ruby object, its result String, whose buffer is fresh heap: Ruby's GC
 * runs when 16-32 MB of such buffers have been malloc'd (malloc_limit), frees them all at once,
 * and glibc gives the freed top of the heap back to the kernel (M_TRIM_THRESHOLD), so the next
 * renders' results fault in fresh pages again — one minor page fault per 4 KiB of output, more
 * than the render itself on w2 (bench/RESULTS.md, sessions 22-23). A program that allocates
 * objects as it renders (Erubi's code; most of an application) has its GC run often enough that
 * freed buffers are reused before they are trimmed. So when the results a Template has returned
 * since the last GC pass GC_NUDGE bytes — and GC_NUDGE_SLOT per live object slot, so that a big
 * heap, whose every GC sweeps more, is asked less often — the render asks for a minor GC
 * (GC.start(full_mark: false, immediate_sweep: false): young objects marked, the heap swept as
 * Ruby allocates); a GC that ran for any other reason restarts the count, and none is asked
 * for while the application has GC.disable'd. Results shorter than a page (GC_NUDGE_LEN) count
 * a quarter of their size (GC_NUDGE_SMALL): a render that allocates nothing else (w5 from
 * Tpl::ERB, 1.3 KB results) let Ruby's GC run every ~10,000 renders and faulted 0.14 times per
 * render, ~60% of its CPU time; counted so, 0.086 (a GC every ~3,200 renders, ~275
 * instructions per render), and a render whose callbacks allocate (w1: 8 GCs per 20,000 renders
 * anyway) is not asked more often. Counted whole (a GC every 1 MiB), w5 faulted 0.023 times
 * but paid ~1,100 instructions per render, and w1 ran 2.6 times as many GCs for no fewer faults
 * (bench/RESULTS.md, session 29).
 * The size trades the GC's work (a minor GC here ~460,000 instructions, mostly sweeping) for
 * faults (~25 us each on this paravirtualised machine, ~1 us on bare metal): at 256 KiB w4
 * (4.4 KB results) paid ~7,900 instructions per render and w2 (50 KB) faulted 0.07 times per
 * render; at 1 MiB w4 ~2,000 and 0.02 faults, w2 1.1 faults (12 before). */
static void gc_nudge(tmpl *t, size_t n)
{
    size_t gcs = rb_gc_count(), bytes;
    bool locked = pool_lock(t);
    if (t->gc_seen != gcs) { t->gc_seen = gcs; t->gc_bytes = 0; }
    bytes = t->gc_bytes += n;
    pool_unlock(t, locked);
    if (bytes < GC_NUDGE || bytes / GC_NUDGE_SLOT < rb_gc_stat(ID2SYM(rb_intern("heap_live_slots")))) return;
    if (rb_gc_disable() == Qtrue) return; /* (GC.disable'd by the application: left so; GC.start would run anyway) */
    rb_gc_enable();
    VALUE kw = rb_hash_new();
    rb_hash_aset(kw, ID2SYM(rb_intern("full_mark")), Qfalse);
    rb_hash_aset(kw, ID2SYM(rb_intern("immediate_sweep")), Qfalse);
    rb_funcallv_kw(rb_mGC, rb_intern("start"), 1, &kw, RB_PASS_KEYWORDS);
    locked = pool_lock(t); /* (counted again from here: GC.disable makes it a no-op) */
    t->gc_seen = rb_gc_count();
    t->gc_bytes = 0;
    pool_unlock(t, locked);
}

/* Tpl::ERB#result's and #result_with_hash's render: a Ruby exception that ends it is located as
 * ERB's (tpl.rb Tpl::ERB#located: the template's frame in its backtrace, tpl's errors as the
 * classes ERB raises) before it leaves the method */
typedef struct erb_site { VALUE erb, binding; } erb_site;

/* _render(state Hash|Binding|nil, self|nil, opts Hash|nil, remembers callable|nil, limits Array|nil) */
static VALUE render_given(VALUE self, VALUE state, VALUE erb_self, const VALUE *given, VALUE remembers, VALUE limits,
                          const erb_site *loc);

static VALUE tmpl_render(VALUE self, VALUE state, VALUE erb_self, VALUE opts, VALUE remembers, VALUE limits)
{
    if (!NIL_P(opts)) Check_Type(opts, T_HASH);
    VALUE given[NSET];
    given[S_FACTS] = opt(opts, "facts");
    given[S_CATS] = opt(opts, "catalogs");
    given[S_KEYS] = opt(opts, "tr_keys");
    given[S_LANG] = opt(opts, "lang");
    given[S_CALL] = opt(opts, "call");
    VALUE res = render_given(self, state, erb_self, given, remembers, limits, NULL);
    RB_GC_GUARD(opts);
    return res;
}

static VALUE render_given(VALUE self, VALUE state, VALUE erb_self, const VALUE *given, VALUE remembers, VALUE limits,
                          const erb_site *loc)
{
    tmpl *t = get_tmpl(self);
    rctx cs; /* on the C stack: the GC sees the VALUEs it holds */
    rctx *c = &cs;
    c->depth = 0;
    c->keep = Qnil;
    c->remembers = remembers;
    c->remembers_self = Qnil;
    c->remembers_id = 0;
    c->exc = Qnil;
    c->chunks = NULL;
    c->has_host = false;
    c->tagged = false;
    memset(c->tagset, 0, sizeof c->tagset);
    c->refused = 0;
    c->fuel_out = false;
    c->jump = 0;
    c->nivc = 0;
    c->ivars_in_state = false;
    memset(&c->set, 0, sizeof c->set);
    memset(&c->sc, 0, sizeof c->sc);
    c->kc = Qnil;
    c->last_out = c->last_nvals = 0;
    c->nvals = 0;
    c->borrow = c->borrowed = c->borrow_emb = c->borrowed_emb = c->copy = false;
    c->enc_utf8 = rb_utf8_encindex();
    c->enc_ascii = rb_usascii_encindex();
    c->enc_bin = rb_ascii8bit_encindex();
    bool pooled = NIL_P(limits);
    c->copy_ok = pooled;
    c->r = NULL;
    c->max_items = 0;
    if (pooled) {
        bool locked = pool_lock(t);
        if (t->npool > 0) {
            pooled_ctx *pc = &t->pool[--t->npool];
            c->r = pc->r;
            c->set = pc->set;
            c->sc = pc->sc;
            c->kc = pc->kc;
            c->last_out = pc->last_out;
            c->last_nvals = pc->last_nvals;
        }
        pool_unlock(t, locked);
    }
    if (!c->r) {
        tpl_limits lim = { 0 };
        if (!pooled) {
            Check_Type(limits, T_ARRAY);
            if (RARRAY_LEN(limits) != 4) rb_raise(rb_eArgError, "tpl: limits: [fuel, max_depth, max_output, max_memory]");
            lim.fuel = NUM2ULL(RARRAY_AREF(limits, 0));
            lim.max_depth = NUM2UINT(RARRAY_AREF(limits, 1));
            lim.max_output = NUM2ULL(RARRAY_AREF(limits, 2));
            lim.max_memory = NUM2ULL(RARRAY_AREF(limits, 3));
            c->max_items = lim.max_memory;
        }
        c->r = tmpl_render_new(t, &lim);
        if (!c->r) rb_raise(rb_eNoMemError, "tpl: out of memory");
    }
    const tpl_options *po = tpl_program_options(t->p);
    c->erb = po && po->syntax == TPL_SYNTAX_ERB;
    c->erb_api = !NIL_P(erb_self);
    c->t = t;
    if (NIL_P(remembers) && !NIL_P(erb_self) && t->remembers) {
        ID q = rb_intern("remembers?"), p = rb_intern("remembers");
        if (self_responds(erb_self, q)) { c->remembers_self = erb_self; c->remembers_id = q; }
        else if (self_responds(erb_self, p)) { c->remembers_self = erb_self; c->remembers_id = p; }
    }
    render_arg ra = { self, t, c, state, erb_self, given, Qnil };
    int jump = 0;
    rb_protect(render_body, (VALUE)&ra, &jump);
    if (pooled) {
        render_ensure((VALUE)&ra);
    } else { /* a context with its own limits is not pooled */
        tpl_render_reset_state(c->r);
        tpl_render_set_remembers(c->r, NULL, NULL);
        while (c->chunks) { objchunk *k = c->chunks; c->chunks = k->next; ruby_xfree(k); }
        tpl_render_free(c->r);
        settings_free(&c->set);
        scratch_free(&c->sc);
    }
    RB_GC_GUARD(c->keep);
    RB_GC_GUARD(c->kc);
    RB_GC_GUARD(state);
    RB_GC_GUARD(erb_self);
    tmpl_tell_gc(t);
    if (!jump) jump = c->jump;
    if (jump) {
        VALUE exc;
        /* (errinfo stays the exception: it is the located one's cause, as a raise in a rescue) */
        if (loc && jump == RB_TAG_RAISE && RB_TYPE_P(exc = rb_errinfo(), T_OBJECT))
            rb_exc_raise(rb_funcall(loc->erb, rb_intern("located"), 2, exc, loc->binding));
        rb_jump_tag(jump);
    }
    if (RB_TYPE_P(ra.result, T_STRING)) {
        size_t n = (size_t)RSTRING_LEN(ra.result);
        gc_nudge(t, n >= GC_NUDGE_LEN ? n : n / GC_NUDGE_SMALL);
    }
    return ra.result;
}

/* render(state = nil, **options_or_state, &remembers): the keywords are render options when they
 * all are (facts, call, lang, catalogs, tr_keys, limits), else the state itself. */
static VALUE tmpl_render_pub(int argc, VALUE *argv, VALUE self)
{
    /* rb_scan_args(argc, argv, "01:&", ...) without its copy of the keywords' Hash (rb_hash_dup:
     * an object and its table per render, ~300 instructions; the Hash is only read here, and as
     * the state only for this render) */
    VALUE kw = Qnil;
    if (argc > 0 && rb_keyword_given_p() && RB_TYPE_P(argv[argc - 1], T_HASH)) kw = argv[--argc];
    rb_check_arity(argc, 0, 1);
    VALUE state = argc ? argv[0] : Qnil, blk = rb_block_given_p() ? rb_block_proc() : Qnil;
    VALUE limits = Qnil, given[NSET] = { Qnil, Qnil, Qnil, Qnil, Qnil };
    if (!NIL_P(kw)) {
        /* each option looked up once (the literal rb_intern: IDs cached at the call site), the
         * usual ones first, none once every keyword is accounted for (render(ctx, facts: m)
         * looks up one) */
        VALUE got[NSET + 1];
        for (int k = 0; k <= NSET; k++) got[k] = Qundef;
        long known = 0, size = (long)RHASH_SIZE(kw);
#define LOOK(k, name) \
        if (known < size && (got[k] = rb_hash_lookup2(kw, ID2SYM(rb_intern(name)), Qundef)) != Qundef) known++
        LOOK(S_FACTS, "facts");
        LOOK(S_CALL, "call");
        LOOK(S_LANG, "lang");
        LOOK(S_CATS, "catalogs");
        LOOK(S_KEYS, "tr_keys");
        LOOK(NSET, "limits");
#undef LOOK
        if (known < (long)RHASH_SIZE(kw)) { /* render(name: value, ...): the state as keywords */
            if (!NIL_P(state)) rb_raise(rb_eArgError, "tpl: pass the state as a Hash or as keywords, not both");
            state = kw;
        } else {
            for (int k = 0; k < NSET; k++) given[k] = got[k] == Qundef ? Qnil : got[k];
            if (got[NSET] != Qundef && !NIL_P(got[NSET]))
                limits = rb_funcall(rb_const_get(mod_tpl(), rb_intern("Limits")), rb_intern("coerce"), 1, got[NSET]);
        }
    }
    VALUE res = render_given(self, state, Qnil, given, blk, limits, NULL);
    RB_GC_GUARD(kw);
    return res;
}

/* render_facts(state, facts = nil, &remembers): render(state, facts: facts) without the keyword
 * Hash Ruby makes for each call of a C method given keywords and the option lookups in it (~800
 * instructions of a w5 render: bench/RESULTS.md, session 41); facts nil is render(state). */
static VALUE tmpl_render_facts(int argc, VALUE *argv, VALUE self)
{
    rb_check_arity(argc, 1, 2);
    VALUE given[NSET];
    for (int k = 0; k < NSET; k++) given[k] = Qnil;
    given[S_FACTS] = argc > 1 ? argv[1] : Qnil;
    VALUE blk = rb_block_given_p() ? rb_block_proc() : Qnil;
    return render_given(self, argv[0], Qnil, given, blk, Qnil, NULL);
}

/* ------------------------------------------------------------------ Tpl::ERB#result */

/* Tpl::ERB's program (@template), or ERB's "not initialized" */
static VALUE erb_template(VALUE self)
{
    VALUE t = rb_ivar_get(self, rb_intern("@template"));
    if (NIL_P(t)) rb_raise(rb_eArgError, "not initialized");
    return t;
}

/* Renders Tpl::ERB self's template t with ctx (a Binding or result_with_hash's Hash) as its names and
 * binding b's receiver as self; errors located at self's call (erb_site). */
static VALUE erb_render_in(VALUE self, VALUE t, VALUE ctx, VALUE b)
{
    VALUE recv = rb_funcall(b, rb_intern("receiver"), 0);
    const VALUE given[NSET] = { Qnil, Qnil, Qnil, Qnil, Qnil };
    erb_site loc = { self, b };
    VALUE res = render_given(t, ctx, recv, given, Qnil, Qnil, &loc);
    RB_GC_GUARD(recv);
    return res;
}

/* Tpl::ERB#result(b = TOPLEVEL_BINDING): b's local variables, its receiver as self. Here rather
 * than in tpl.rb: a Ruby method's frame, its checks and the __send__ to _render cost ~840
 * instructions per render (bench/RESULTS.md, session 29). */
static VALUE erb_result_m(int argc, VALUE *argv, VALUE self)
{
    rb_check_arity(argc, 0, 1);
    VALUE b = argc ? argv[0] : rb_const_get(rb_cObject, rb_intern("TOPLEVEL_BINDING"));
    VALUE t = erb_template(self);
    if (!rb_obj_is_kind_of(b, rb_cBinding))
        rb_raise(rb_eTypeError, "wrong argument type %" PRIsVALUE " (expected binding)", rb_obj_class(b));
    return erb_render_in(self, t, b, b);
}

/* A key of result_with_hash's Hash checked as Binding#local_variable_set checks it (ERB sets
 * them so): a Symbol spelled as a local variable ([a-z_][A-Za-z0-9_]*, keywords too) passes
 * without asking; anything else is asked (local_variable_defined?: its TypeError or NameError). */
static int erb_key_i(VALUE k, VALUE v, VALUE top)
{
    (void)v;
    if (SYMBOL_P(k)) {
        VALUE s = rb_sym2str(k);
        const unsigned char *p = (const unsigned char *)RSTRING_PTR(s);
        long n = RSTRING_LEN(s), i = 0;
        if (n > 0 && (p[0] == '_' || (p[0] >= 'a' && p[0] <= 'z')))
            for (i = 1; i < n && (p[i] == '_' || (p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z') ||
                                  (p[i] >= '0' && p[i] <= '9'));
                 i++) {}
        if (n > 0 && i == n) return ST_CONTINUE;
    }
    rb_funcall(top, rb_intern("local_variable_defined?"), 1, k);
    return ST_CONTINUE;
}

static VALUE erb_key_blk(RB_BLOCK_CALL_FUNC_ARGLIST(k, top))
{
    (void)argc; (void)argv; (void)blockarg;
    erb_key_i(k, Qnil, top);
    return Qnil;
}

/* Tpl::ERB#result_with_hash(hash): hash's keys as the local variables, the top-level object as
 * self (a Hash that is not one: its each_key, then _render's TypeError) */
static VALUE erb_result_with_hash_m(VALUE self, VALUE hash)
{
    VALUE t = erb_template(self);
    VALUE top = rb_const_get(rb_cObject, rb_intern("TOPLEVEL_BINDING"));
    if (RB_TYPE_P(hash, T_HASH) && RBASIC_CLASS(hash) == rb_cHash)
        rb_hash_foreach(hash, erb_key_i, top);
    else
        rb_block_call(hash, rb_intern("each_key"), 0, NULL, erb_key_blk, top);
    return erb_render_in(self, t, hash, top);
}

/* ------------------------------------------------------------------ Tpl::Store */

/* A handle on a prompt store (include/tpl_store.h): one per thread (or Ractor), as the C API
 * says; never shared (not frozen, not shareable). */
typedef struct rstore { tpl_store *s; } rstore;

static void rstore_free(void *ptr)
{
    rstore *x = ptr;
    tpl_store_close(x->s);
    ruby_xfree(x);
}

RB_WRAP_TYPE(rstore, rstore, "Tpl::Store", NULL, rstore_free, RUBY_TYPED_FREE_IMMEDIATELY);

static VALUE rstore_alloc(VALUE klass)
{
    rstore *x = ruby_xmalloc(sizeof *x);
    x->s = NULL;
    return TypedData_Wrap_Struct(klass, &rstore_type, x);
}

static tpl_store *get_store(VALUE self)
{
    rstore *x;
    TypedData_Get_Struct(self, rstore, &rstore_type, x);
    if (!x->s) rb_raise(rb_eIOError, "tpl: the store is closed");
    return x->s;
}

/* Raises Tpl::Store::NotFound (TPL_STORE_NOT_FOUND), ArgumentError (TPL_STORE_INVALID),
 * NoMemoryError or Tpl::Store::Error (I/O) with the store's message. */
static void store_raise(tpl_store *s, tpl_store_status st)
{
    const char *m = tpl_store_errmsg(s);
    VALUE k = rb_const_get(mod_tpl(), rb_intern("Store"));
    if (st == TPL_STORE_NOT_FOUND) rb_raise(rb_const_get(k, rb_intern("NotFound")), "%s", m);
    if (st == TPL_STORE_INVALID) rb_raise(rb_eArgError, "%s", m);
    if (st == TPL_STORE_NOMEM) rb_raise(rb_eNoMemError, "tpl: out of memory");
    rb_raise(rb_const_get(k, rb_intern("Error")), "%s", m);
}

static void store_check(tpl_store *s, tpl_store_status st)
{
    if (st != TPL_STORE_OK) store_raise(s, st);
}

static VALUE str_or_nil(const char *p) { return p ? rb_utf8_str_new_cstr(p) : Qnil; }

static VALUE str_list(char *const *v, size_t n)
{
    VALUE a = rb_ary_new_capa((long)n);
    for (size_t i = 0; i < n; i++) rb_ary_push(a, rb_utf8_str_new_cstr(v[i]));
    return a;
}

#define HSET(h, k, v) rb_hash_aset(h, ID2SYM(rb_intern(k)), v)

/* A prompt row as a Hash (the keys of `tplc prompt show --json`, as Symbols). */
static VALUE row_hash(const tpl_store_prompt *p)
{
    static const char *const syn[] = { "jinja", "erb", "fmt" };
    VALUE h = rb_hash_new();
    HSET(h, "id", LL2NUM(p->id));
    HSET(h, "name", rb_utf8_str_new_cstr(p->name));
    HSET(h, "version", LL2NUM(p->version));
    HSET(h, "syntax", ID2SYM(rb_intern(syn[p->syntax <= TPL_SYNTAX_FMT ? p->syntax : 0])));
    HSET(h, "source", rb_utf8_str_new(p->source, (long)p->source_len));
    HSET(h, "profile", str_or_nil(p->profile));
    HSET(h, "tr_keys", str_list(p->tr_keys, p->ntr_keys));
    HSET(h, "lang", str_or_nil(p->lang));
    HSET(h, "dicts", str_list(p->dicts, p->ndicts));
    HSET(h, "created_at", rb_utf8_str_new_cstr(p->created_at));
    HSET(h, "removed", p->removed ? Qtrue : Qfalse);
    HSET(h, "tplb_format", INT2NUM(p->tplb_format));
    return h;
}

static VALUE rows_ary(tpl_store_prompt *v, size_t n)
{
    VALUE a = rb_ary_new_capa((long)n);
    for (size_t i = 0; i < n; i++) rb_ary_push(a, row_hash(&v[i]));
    tpl_store_prompts_free(v, n);
    return a;
}

static const char *cstr_or_null(VALUE v)
{
    if (NIL_P(v)) return NULL;
    if (SYMBOL_P(v)) v = rb_sym2str(v);
    return StringValueCStr(v);
}

/* _open(where) */
static VALUE rstore_open(VALUE self, VALUE where)
{
    rstore *x;
    TypedData_Get_Struct(self, rstore, &rstore_type, x);
    if (x->s) rb_raise(rb_eRuntimeError, "tpl: Store already open");
    tpl_store *s = NULL;
    tpl_store_status st = tpl_store_open(StringValueCStr(where), &s);
    if (st != TPL_STORE_OK) {
        VALUE msg = rb_utf8_str_new_cstr(s ? tpl_store_errmsg(s) : "out of memory");
        tpl_store_close(s);
        VALUE k = rb_const_get(mod_tpl(), rb_intern("Store"));
        rb_exc_raise(rb_exc_new_str(st == TPL_STORE_INVALID ? rb_eArgError : rb_const_get(k, rb_intern("Error")), msg));
    }
    x->s = s;
    return self;
}

static VALUE rstore_close(VALUE self)
{
    rstore *x;
    TypedData_Get_Struct(self, rstore, &rstore_type, x);
    tpl_store_close(x->s);
    x->s = NULL;
    return Qnil;
}

static VALUE rstore_closed(VALUE self)
{
    rstore *x;
    TypedData_Get_Struct(self, rstore, &rstore_type, x);
    return x->s ? Qfalse : Qtrue;
}

static VALUE rstore_backend(VALUE self) { return ID2SYM(rb_intern(tpl_store_backend(get_store(self)))); }
static VALUE rstore_round_trips(VALUE self) { return ULL2NUM(tpl_store_round_trips(get_store(self))); }

/* Raises the compile error of a create or load (TPL_STORE_TEMPLATE with a record). */
static void store_template_error(tpl_store *s, tpl_store_status st, tpl_error *err)
{
    if (st == TPL_STORE_TEMPLATE && err->message) {
        tpl_error e = *err;
        char *f = tpl_error_format(&e);
        VALUE args[8] = {
            INT2NUM((int)e.status), rb_utf8_str_new_cstr(e.message ? e.message : ""),
            e.file ? rb_utf8_str_new_cstr(e.file) : Qnil, UINT2NUM(e.line), UINT2NUM(e.column),
            e.source_line ? rb_utf8_str_new_cstr(e.source_line) : Qnil, rb_utf8_str_new_cstr(f ? f : ""),
            rb_utf8_str_new_cstr(tpl_error_exception(e.kind ? e.kind : tpl_status_kind(e.status), TPL_SYNTAX_ERB)),
        };
        free(f);
        tpl_error_clear(err);
        rb_exc_raise(rb_funcallv(rb_const_get(mod_tpl(), rb_intern("Error")), rb_intern("from_tpl"), 8, args));
    }
    tpl_error_clear(err);
    store_raise(s, st);
}

/* C strings of Ruby Strings held only by an Array (its items are movable: GC compaction may move an
 * embedded String, its bytes with it): each String is checked and NUL-terminated first
 * (strs_check: StringValueCStr, which may allocate, so a GC may run), then, once the caller has
 * made every other allocation of the call too, their pointers are read with nothing allocated
 * until the C call that uses them returns (strs_ptrs). The caller's other Strings are its
 * arguments or locals (on the VM or machine stack: pinned, never moved). */
static void strs_check(VALUE ary)
{
    for (long i = 0; i < RARRAY_LEN(ary); i++) {
        VALUE x = RARRAY_AREF(ary, i);
        StringValueCStr(x);
    }
}

static void strs_ptrs(VALUE ary, const char **out)
{
    for (long i = 0; i < RARRAY_LEN(ary); i++) out[i] = RSTRING_PTR(RARRAY_AREF(ary, i));
}

/* _create(name, src, syntax 0|1|2, profile, tr_keys Array, lang) -> row Hash */
static VALUE rstore_create(VALUE self, VALUE name, VALUE src, VALUE syntax, VALUE profile, VALUE keys, VALUE lang)
{
    tpl_store *s = get_store(self);
    src = utf8_str(StringValue(src));
    keys = rb_Array(keys);
    long nk = RARRAY_LEN(keys);
    VALUE kstr = rb_ary_new_capa(nk);
    for (long i = 0; i < nk; i++) {
        VALUE k = RARRAY_AREF(keys, i);
        rb_ary_push(kstr, SYMBOL_P(k) ? rb_sym2str(k) : rb_String(k));
    }
    nk = RARRAY_LEN(kstr);
    VALUE kvbuf = 0;
    const char **kv = ALLOCV_N(const char *, kvbuf, (size_t)nk + 1);
    strs_check(kstr);
    tpl_store_new nw = { 0 };
    nw.name = StringValueCStr(name);
    nw.syntax = (tpl_syntax)NUM2INT(syntax);
    nw.profile = cstr_or_null(profile);
    nw.lang = cstr_or_null(lang);
    /* (nothing allocates from here until tpl_store_create returns: kstr's Strings stay put) */
    strs_ptrs(kstr, kv);
    kv[nk] = NULL;
    nw.source = RSTRING_PTR(src);
    nw.source_len = (size_t)RSTRING_LEN(src);
    nw.tr_keys = kv;
    nw.ntr_keys = (size_t)nk;
    tpl_store_prompt *p = NULL;
    tpl_error err = { 0 };
    tpl_store_status st = tpl_store_create(s, &nw, &p, &err);
    ALLOCV_END(kvbuf);
    RB_GC_GUARD(kstr);
    RB_GC_GUARD(src);
    RB_GC_GUARD(name);
    RB_GC_GUARD(profile);
    RB_GC_GUARD(lang);
    if (st != TPL_STORE_OK) store_template_error(s, st, &err);
    VALUE h = row_hash(p);
    tpl_store_prompt_free(p);
    return h;
}

static VALUE rstore_get(VALUE self, VALUE ref)
{
    tpl_store *s = get_store(self);
    tpl_store_prompt *p = NULL;
    store_check(s, tpl_store_get(s, StringValueCStr(ref), &p));
    VALUE h = row_hash(p);
    tpl_store_prompt_free(p);
    return h;
}

static VALUE rstore_list(VALUE self, VALUE prefix)
{
    tpl_store *s = get_store(self);
    tpl_store_prompt *v = NULL;
    size_t n = 0;
    store_check(s, tpl_store_list(s, cstr_or_null(prefix), &v, &n));
    return rows_ary(v, n);
}

static VALUE rstore_versions(VALUE self, VALUE name, VALUE all)
{
    tpl_store *s = get_store(self);
    tpl_store_prompt *v = NULL;
    size_t n = 0;
    store_check(s, tpl_store_versions(s, StringValueCStr(name), RTEST(all), &v, &n));
    return rows_ary(v, n);
}

static VALUE rstore_remove(VALUE self, VALUE ref)
{
    tpl_store *s = get_store(self);
    store_check(s, tpl_store_remove(s, StringValueCStr(ref)));
    return Qnil;
}

/* _tr_set(dict, lang, source, target, plural, forms Array|nil) */
static VALUE rstore_tr_set(VALUE self, VALUE dict, VALUE lang, VALUE source, VALUE target, VALUE plural, VALUE forms)
{
    tpl_store *s = get_store(self);
    long nf = NIL_P(forms) ? 0 : RARRAY_LEN(forms = rb_Array(forms));
    for (long i = 0; i < nf; i++)
        if (!RB_TYPE_P(RARRAY_AREF(forms, i), T_STRING)) rb_raise(rb_eTypeError, "tpl: plural forms are Strings");
    VALUE fvbuf = 0;
    const char **fv = ALLOCV_N(const char *, fvbuf, (size_t)nf + 1);
    if (nf) strs_check(forms);
    const char *d = cstr_or_null(dict), *l = cstr_or_null(lang), *src = StringValueCStr(source),
               *tgt = StringValueCStr(target), *pl = cstr_or_null(plural);
    if (nf) strs_ptrs(forms, fv); /* (nothing allocates from here until the call returns) */
    fv[nf] = NULL;
    tpl_store_status st = tpl_store_tr_set(s, d, l, src, tgt, pl, fv, (size_t)nf);
    ALLOCV_END(fvbuf);
    RB_GC_GUARD(forms);
    store_check(s, st);
    return Qnil;
}

static VALUE rstore_prompt_tr_set(VALUE self, VALUE name, VALUE dict, VALUE lang, VALUE source, VALUE target)
{
    tpl_store *s = get_store(self);
    store_check(s, tpl_store_prompt_tr_set(s, StringValueCStr(name), cstr_or_null(dict), cstr_or_null(lang),
                                           StringValueCStr(source), StringValueCStr(target)));
    return Qnil;
}

static VALUE rstore_tr_delete(VALUE self, VALUE dict, VALUE lang, VALUE source)
{
    tpl_store *s = get_store(self);
    store_check(s, tpl_store_tr_delete(s, cstr_or_null(dict), cstr_or_null(lang), StringValueCStr(source)));
    return Qnil;
}

/* _tr_list(dicts Array, lang|nil) -> [{dict:, lang:, source:, target:, (plural:, forms:)}] */
static VALUE rstore_tr_list(VALUE self, VALUE dicts, VALUE lang)
{
    tpl_store *s = get_store(self);
    dicts = rb_Array(dicts);
    long nd = RARRAY_LEN(dicts);
    for (long i = 0; i < nd; i++)
        if (!RB_TYPE_P(RARRAY_AREF(dicts, i), T_STRING)) rb_raise(rb_eTypeError, "tpl: dictionary names are Strings");
    VALUE dvbuf = 0;
    const char **dv = ALLOCV_N(const char *, dvbuf, (size_t)nd + 1);
    strs_check(dicts);
    tpl_store_tr *v = NULL;
    size_t n = 0;
    const char *l = cstr_or_null(lang);
    strs_ptrs(dicts, dv); /* (nothing allocates from here until the call returns) */
    dv[nd] = NULL;
    tpl_store_status st = tpl_store_tr_list(s, dv, (size_t)nd, l, &v, &n);
    ALLOCV_END(dvbuf);
    RB_GC_GUARD(dicts);
    store_check(s, st);
    VALUE a = rb_ary_new_capa((long)n);
    for (size_t i = 0; i < n; i++) {
        VALUE h = rb_hash_new();
        HSET(h, "dict", rb_utf8_str_new_cstr(v[i].dict));
        HSET(h, "lang", rb_utf8_str_new_cstr(v[i].lang));
        HSET(h, "source", rb_utf8_str_new_cstr(v[i].source));
        HSET(h, "target", rb_utf8_str_new_cstr(v[i].target));
        if (v[i].plural) {
            HSET(h, "plural", rb_utf8_str_new_cstr(v[i].plural));
            HSET(h, "forms", str_list(v[i].forms, v[i].nforms));
        }
        rb_ary_push(a, h);
    }
    tpl_store_trs_free(v, n);
    return a;
}

static VALUE rstore_bind(VALUE self, VALUE name, VALUE dict)
{
    tpl_store *s = get_store(self);
    store_check(s, tpl_store_bind(s, StringValueCStr(name), StringValueCStr(dict)));
    return Qnil;
}

static VALUE rstore_unbind(VALUE self, VALUE name, VALUE dict)
{
    tpl_store *s = get_store(self);
    store_check(s, tpl_store_unbind(s, StringValueCStr(name), StringValueCStr(dict)));
    return Qnil;
}

static VALUE rstore_po_import(VALUE self, VALUE path, VALUE dict)
{
    tpl_store *s = get_store(self);
    size_t n = 0;
    tpl_store_status st = tpl_store_po_import(s, StringValueCStr(path), cstr_or_null(dict), &n);
    if (st == TPL_STORE_INVALID) rb_raise(rb_const_get(mod_tpl(), rb_intern("SyntaxError")), "%s", tpl_store_errmsg(s));
    store_check(s, st);
    return SIZET2NUM(n);
}

static VALUE rstore_po_export(VALUE self, VALUE dicts, VALUE lang, VALUE path)
{
    tpl_store *s = get_store(self);
    dicts = rb_Array(dicts);
    long nd = RARRAY_LEN(dicts);
    for (long i = 0; i < nd; i++)
        if (!RB_TYPE_P(RARRAY_AREF(dicts, i), T_STRING)) rb_raise(rb_eTypeError, "tpl: dictionary names are Strings");
    VALUE dvbuf = 0;
    const char **dv = ALLOCV_N(const char *, dvbuf, (size_t)nd + 1);
    strs_check(dicts);
    size_t n = 0;
    const char *l = StringValueCStr(lang), *pa = StringValueCStr(path);
    strs_ptrs(dicts, dv); /* (nothing allocates from here until the call returns) */
    dv[nd] = NULL;
    tpl_store_status st = tpl_store_po_export(s, dv, (size_t)nd, l, pa, &n);
    ALLOCV_END(dvbuf);
    RB_GC_GUARD(dicts);
    store_check(s, st);
    return SIZET2NUM(n);
}

/* _load(ref, template_class) -> [Template (frozen, owning the program), catalogs [JSON String],
 * row Hash]: tpl_store_load's program moves into the Template. */
static VALUE rstore_load(VALUE self, VALUE ref, VALUE tclass)
{
    tpl_store *s = get_store(self);
    tpl_store_loaded *l = NULL;
    tpl_error err = { 0 };
    tpl_store_status st = tpl_store_load(s, StringValueCStr(ref), &l, &err);
    if (st != TPL_STORE_OK) store_template_error(s, st, &err);
    if (tpl_store_loaded_json(l) != TPL_STORE_OK) { tpl_store_loaded_free(l); rb_memerror(); }
    VALUE cats = rb_ary_new_capa((long)l->ncatalogs);
    for (size_t i = 0; i < l->ncatalogs; i++) rb_ary_push(cats, rb_obj_freeze(rb_utf8_str_new(l->catalogs[i], (long)l->catalog_lens[i])));
    VALUE row = row_hash(&l->prompt);
    tpl_program *p = l->program;
    l->program = NULL;
    tpl_store_loaded_free(l);
    VALUE t = tmpl_alloc(tclass);
    set_program(t, p, 4096); /* (an estimate: the store's .tplb is not at hand) */
    rb_obj_freeze(t);
    return rb_ary_new_from_args(3, t, rb_obj_freeze(cats), row);
}

/* ------------------------------------------------------------------ Tpl::Page */

/* A loaded page folder (include/tpl_page.h): immutable, so a frozen Page is Ractor-shareable.
 * Reference-counted: each Page::Call holds the page too, since at exit Ruby frees objects in any
 * order and a call's tpl_page_call_free reads its page. */
typedef struct rpage { tpl_page *pg; int refs; } rpage;

static void rpage_release(rpage *x)
{
    if (__atomic_sub_fetch(&x->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
    tpl_page_free(x->pg);
    free(x);
}

static void rpage_free(void *ptr) { rpage_release(ptr); }

RB_WRAP_TYPE(rpage, rpage, "Tpl::Page", NULL, rpage_free, RUBY_TYPED_FREE_IMMEDIATELY | RUBY_TYPED_FROZEN_SHAREABLE);

static VALUE rpage_alloc(VALUE klass)
{
    rpage *x = malloc(sizeof *x); /* plain malloc: it may outlive the Ruby VM's heap teardown order */
    if (!x) rb_raise(rb_eNoMemError, "tpl: out of memory");
    x->pg = NULL;
    x->refs = 1;
    return TypedData_Wrap_Struct(klass, &rpage_type, x);
}

static tpl_page *get_page(VALUE self)
{
    rpage *x;
    TypedData_Get_Struct(self, rpage, &rpage_type, x);
    if (!x->pg) rb_raise(rb_eRuntimeError, "tpl: uninitialized Page");
    return x->pg;
}

static void raise_err_record(tpl_error *e, bool clear)
{
    char *f = tpl_error_format(e);
    VALUE args[8] = {
        INT2NUM((int)e->status), rb_utf8_str_new_cstr(e->message ? e->message : ""),
        e->file ? rb_utf8_str_new_cstr(e->file) : Qnil, UINT2NUM(e->line), UINT2NUM(e->column),
        e->source_line ? rb_utf8_str_new_cstr(e->source_line) : Qnil, rb_utf8_str_new_cstr(f ? f : ""),
        rb_utf8_str_new_cstr(tpl_error_exception(e->kind ? e->kind : tpl_status_kind(e->status), TPL_SYNTAX_ERB)),
    };
    free(f);
    if (clear) tpl_error_clear(e);
    rb_exc_raise(rb_funcallv(rb_const_get(mod_tpl(), rb_intern("Error")), rb_intern("from_tpl"), 8, args));
}

/* _load_dir(dir) */
static VALUE rpage_load_dir(VALUE self, VALUE dir)
{
    rpage *x;
    TypedData_Get_Struct(self, rpage, &rpage_type, x);
    if (x->pg) rb_raise(rb_eRuntimeError, "tpl: Page already loaded");
    tpl_error err = { 0 };
    if (tpl_page_load_dir(StringValueCStr(dir), &x->pg, &err) != TPL_OK) raise_err_record(&err, true);
    return self;
}

/* blocks -> [{name:, region: :static|:dynamic, reads: [String]}] */
static VALUE rpage_blocks(VALUE self)
{
    tpl_page *pg = get_page(self);
    size_t n = tpl_page_block_count(pg);
    VALUE a = rb_ary_new_capa((long)n);
    for (size_t i = 0; i < n; i++) {
        VALUE h = rb_hash_new();
        HSET(h, "name", rb_utf8_str_new_cstr(tpl_page_block_name(pg, i)));
        HSET(h, "region", ID2SYM(rb_intern(tpl_page_block_region(pg, i) == TPL_PAGE_STATIC ? "static" : "dynamic")));
        size_t nr = tpl_page_block_reads(pg, i, NULL, 0);
        const char **paths = ruby_xcalloc(nr + 1, sizeof *paths);
        tpl_page_block_reads(pg, i, paths, nr);
        VALUE r = rb_ary_new_capa((long)nr);
        for (size_t k = 0; k < nr; k++) rb_ary_push(r, rb_utf8_str_new_cstr(paths[k]));
        ruby_xfree(paths);
        HSET(h, "reads", r);
        rb_ary_push(a, h);
    }
    return a;
}

/* A call of a page (one conversation): owns its render context; belongs to one thread. */
typedef struct rcall { VALUE page; rpage *held; tpl_render *r; tpl_page_call *c; } rcall;

static void rcall_mark(void *ptr) { rb_gc_mark(((rcall *)ptr)->page); }

static void rcall_free(void *ptr)
{
    rcall *x = ptr;
    tpl_page_call_free(x->c);
    tpl_render_free(x->r);
    if (x->held) rpage_release(x->held);
    ruby_xfree(x);
}

RB_WRAP_TYPE(rcall, rcall, "Tpl::Page::Call", rcall_mark, rcall_free, RUBY_TYPED_FREE_IMMEDIATELY);

static VALUE rcall_alloc(VALUE klass)
{
    rcall *x = ruby_xmalloc(sizeof *x);
    x->page = Qnil;
    x->held = NULL;
    x->r = NULL;
    x->c = NULL;
    return TypedData_Wrap_Struct(klass, &rcall_type, x);
}

static rcall *get_call(VALUE self)
{
    rcall *x;
    TypedData_Get_Struct(self, rcall, &rcall_type, x);
    if (!x->c) rb_raise(rb_eRuntimeError, "tpl: uninitialized Page::Call");
    return x;
}

/* _start(page, limits Array|nil) */
static VALUE rcall_start(VALUE self, VALUE page, VALUE limits)
{
    rcall *x;
    TypedData_Get_Struct(self, rcall, &rcall_type, x);
    if (x->c) rb_raise(rb_eRuntimeError, "tpl: Page::Call already started");
    tpl_page *pg = get_page(page);
    tpl_limits lim = { 0 };
    if (!NIL_P(limits)) {
        Check_Type(limits, T_ARRAY);
        if (RARRAY_LEN(limits) != 4) rb_raise(rb_eArgError, "tpl: limits: [fuel, max_depth, max_output, max_memory]");
        lim.fuel = NUM2ULL(RARRAY_AREF(limits, 0));
        lim.max_depth = NUM2UINT(RARRAY_AREF(limits, 1));
        lim.max_output = NUM2ULL(RARRAY_AREF(limits, 2));
        lim.max_memory = NUM2ULL(RARRAY_AREF(limits, 3));
    }
    RB_OBJ_WRITE(self, &x->page, page);
    rpage *pp;
    TypedData_Get_Struct(page, rpage, &rpage_type, pp);
    __atomic_add_fetch(&pp->refs, 1, __ATOMIC_ACQ_REL);
    x->held = pp;
    if (!(x->r = tpl_render_new(&lim)) || !(x->c = tpl_page_call_new(pg, x->r))) rb_raise(rb_eNoMemError, "tpl: out of memory");
    return self;
}

static void call_check(rcall *x, tpl_status st)
{
    if (st == TPL_OK) return;
    const tpl_error *e = tpl_page_call_error(x->c);
    if (e && e->message) {
        tpl_error copy = *e;
        raise_err_record(&copy, false);
    }
    rb_raise(rb_eArgError, "tpl: page call failed (status %d)", (int)st);
}

/* _set(channel, medium, claimed, resumed) */
static VALUE rcall_set(VALUE self, VALUE channel, VALUE medium, VALUE claimed, VALUE resumed)
{
    rcall *x = get_call(self);
    call_check(x, tpl_page_call_set_channel(x->c, cstr_or_null(channel), cstr_or_null(medium)));
    call_check(x, tpl_page_call_set_claimed(x->c, cstr_or_null(claimed)));
    tpl_page_call_set_resumed(x->c, RTEST(resumed));
    return self;
}

/* _facts(facts Array) */
static VALUE rcall_facts(VALUE self, VALUE facts)
{
    rcall *x = get_call(self);
    {
        facts = rb_Array(facts);
        long n = RARRAY_LEN(facts);
        VALUE strs = rb_ary_new_capa(n);
        for (long i = 0; i < n; i++) rb_ary_push(strs, utf8_str(rb_obj_as_string(RARRAY_AREF(facts, i))));
        const char **fv = ruby_xcalloc((size_t)n + 1, sizeof *fv);
        size_t *lv = ruby_xcalloc((size_t)n + 1, sizeof *lv);
        for (long i = 0; i < n; i++) {
            fv[i] = RSTRING_PTR(RARRAY_AREF(strs, i));
            lv[i] = (size_t)RSTRING_LEN(RARRAY_AREF(strs, i));
        }
        tpl_status st = tpl_page_call_set_facts(x->c, fv, lv, (size_t)n);
        ruby_xfree(fv);
        ruby_xfree(lv);
        RB_GC_GUARD(strs);
        call_check(x, st);
    }
    return self;
}

/* _render(state_json String) */
static VALUE rcall_render(VALUE self, VALUE json)
{
    rcall *x = get_call(self);
    json = utf8_str(StringValue(json));
    tpl_status st = tpl_page_call_render(x->c, RSTRING_PTR(json), (size_t)RSTRING_LEN(json));
    RB_GC_GUARD(json);
    call_check(x, st);
    return self;
}

static VALUE rcall_reset(VALUE self)
{
    tpl_page_call_reset(get_call(self)->c);
    return self;
}

/* blocks -> [{name:, region:, text:, changed:, rendered:}] of the last render */
static VALUE rcall_blocks(VALUE self)
{
    rcall *x = get_call(self);
    size_t n = tpl_page_block_count(get_page(x->page));
    VALUE a = rb_ary_new_capa((long)n);
    for (size_t i = 0; i < n; i++) {
        tpl_page_block_result b;
        if (tpl_page_call_block(x->c, i, &b) != TPL_OK) rb_raise(rb_eRuntimeError, "tpl: the call has not rendered yet");
        VALUE h = rb_hash_new();
        HSET(h, "name", rb_utf8_str_new_cstr(b.name));
        HSET(h, "region", ID2SYM(rb_intern(b.region == TPL_PAGE_STATIC ? "static" : "dynamic")));
        HSET(h, "text", rb_utf8_str_new(b.text, (long)b.len));
        HSET(h, "changed", b.changed ? Qtrue : Qfalse);
        HSET(h, "rendered", b.rendered ? Qtrue : Qfalse);
        rb_ary_push(a, h);
    }
    return a;
}

static VALUE rcall_text(VALUE self)
{
    rcall *x = get_call(self);
    char *out = NULL;
    size_t n = 0;
    if (tpl_page_call_text(x->c, &out, &n) != TPL_OK) rb_raise(rb_eRuntimeError, "tpl: the call has not rendered yet");
    VALUE s = rb_utf8_str_new(out, (long)n);
    free(out);
    return s;
}

RUBY_FUNC_EXPORTED void Init_tpl_ext(void)
{
#ifdef HAVE_RB_EXT_RACTOR_SAFE
    rb_ext_ractor_safe(true); /* no global state: every Template/Page carries its own */
    /* Ruby 3.1 fills GC.stat's table of key Symbols on its first call, unlocked: two Ractors
     * asking first at once (gc_nudge) could see a half-filled one ("unknown key:
     * heap_live_slots", ArgumentError). Asked once here, in the main Ractor. */
    (void)rb_gc_stat(ID2SYM(rb_intern("heap_live_slots")));
#endif
    VALUE mTpl = rb_define_module("Tpl");
    VALUE cTemplate = rb_define_class_under(mTpl, "Template", rb_cObject);
    rb_define_alloc_func(cTemplate, tmpl_alloc);
    rb_define_module_function(mTpl, "_erb_tag", mod_erb_tag, 2);
    rb_define_private_method(cTemplate, "_compile", tmpl_compile, 6);
    rb_define_private_method(cTemplate, "_load", tmpl_load, 2);
    rb_define_private_method(cTemplate, "_render", tmpl_render, 5);
    rb_define_method(cTemplate, "render", tmpl_render_pub, -1);
    rb_define_method(cTemplate, "render_facts", tmpl_render_facts, -1);
    rb_define_method(cTemplate, "save", tmpl_save, -1);
    rb_define_method(cTemplate, "reads", tmpl_reads, 0);
    rb_define_method(cTemplate, "dump", tmpl_dump, 0);
    rb_define_method(cTemplate, "syntax", tmpl_syntax, 0);
    rb_define_const(mTpl, "LIBTPL_VERSION", rb_str_freeze(rb_utf8_str_new_cstr(TPL_VERSION_STRING)));

    VALUE cERB = rb_define_class_under(mTpl, "ERB", rb_cObject);
    rb_define_method(cERB, "result", erb_result_m, -1);
    rb_define_method(cERB, "result_with_hash", erb_result_with_hash_m, 1);

    VALUE cStore = rb_define_class_under(mTpl, "Store", rb_cObject);
    rb_define_alloc_func(cStore, rstore_alloc);
    rb_define_private_method(cStore, "_open", rstore_open, 1);
    rb_define_method(cStore, "close", rstore_close, 0);
    rb_define_method(cStore, "closed?", rstore_closed, 0);
    rb_define_method(cStore, "backend", rstore_backend, 0);
    rb_define_method(cStore, "round_trips", rstore_round_trips, 0);
    rb_define_private_method(cStore, "_create", rstore_create, 6);
    rb_define_method(cStore, "get", rstore_get, 1);
    rb_define_private_method(cStore, "_list", rstore_list, 1);
    rb_define_private_method(cStore, "_versions", rstore_versions, 2);
    rb_define_method(cStore, "remove", rstore_remove, 1);
    rb_define_private_method(cStore, "_tr_set", rstore_tr_set, 6);
    rb_define_private_method(cStore, "_prompt_tr_set", rstore_prompt_tr_set, 5);
    rb_define_method(cStore, "tr_delete", rstore_tr_delete, 3);
    rb_define_private_method(cStore, "_tr_list", rstore_tr_list, 2);
    rb_define_method(cStore, "bind", rstore_bind, 2);
    rb_define_method(cStore, "unbind", rstore_unbind, 2);
    rb_define_private_method(cStore, "_po_import", rstore_po_import, 2);
    rb_define_private_method(cStore, "_po_export", rstore_po_export, 3);
    rb_define_private_method(cStore, "_load", rstore_load, 2);

    VALUE cPage = rb_define_class_under(mTpl, "Page", rb_cObject);
    rb_define_alloc_func(cPage, rpage_alloc);
    rb_define_private_method(cPage, "_load_dir", rpage_load_dir, 1);
    rb_define_method(cPage, "blocks", rpage_blocks, 0);
    VALUE cCall = rb_define_class_under(cPage, "Call", rb_cObject);
    rb_define_alloc_func(cCall, rcall_alloc);
    rb_define_private_method(cCall, "_start", rcall_start, 2);
    rb_define_private_method(cCall, "_set", rcall_set, 4);
    rb_define_private_method(cCall, "_facts", rcall_facts, 1);
    rb_define_private_method(cCall, "_render", rcall_render, 1);
    rb_define_method(cCall, "reset", rcall_reset, 0);
    rb_define_method(cCall, "blocks", rcall_blocks, 0);
    rb_define_method(cCall, "text", rcall_text, 0);
}
