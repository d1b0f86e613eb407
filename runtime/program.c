/* The program representation's own functions, which the loader (serialize.c), the verifier and
 * the VM use: the opcode table, name resolution against the library, spans, freeing. (Compiling
 * is compiler/program.c's.) */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "program.h"
#include "library.h"

/* Each base row's columns as constants, so a superinstruction's row can take its base's. */
enum {
#define TPL_OP(name, extra, fmt, pops, pushes, flags, doc) \
    OPX_EXTRA_##name = extra, OPX_POPS_##name = pops, OPX_PUSHES_##name = pushes, OPX_FLAGS_##name = flags,
#define TPL_FUSED(name, base, doc, ...)
#include "opcodes.def"
#undef TPL_OP
#undef TPL_FUSED
};
#define TPL_OP(name, extra, fmt, pops, pushes, flags, doc) static const char opx_fmt_##name[] = fmt;
#define TPL_FUSED(name, base, doc, ...) static const uint16_t opx_succ_##name[] = { __VA_ARGS__, TPL_SUCC_END };
#define OP(x) TPL_OP_##x
#define OR(x) (TPL_OP_##x | TPL_SUCC_OR)
#define SAME(x) (TPL_OP_##x | TPL_SUCC_SAME)
#include "opcodes.def"
#undef OP
#undef OR
#undef SAME
#undef TPL_OP
#undef TPL_FUSED

const tpl_opinfo tpl_opinfo_table[TPL_OP__COUNT] = {
#define TPL_OP(name, extra, fmt, pops, pushes, flags, doc) \
    { #name, extra, opx_fmt_##name, pops, pushes, flags, TPL_OP_##name, NULL, NULL, doc },
#define TPL_FUSED(name, base, doc, ...) \
    { #name, OPX_EXTRA_##base, opx_fmt_##base, OPX_POPS_##base, OPX_PUSHES_##base, \
      OPX_FLAGS_##base | TPL_OPF_FUSED, TPL_OP_##base, opx_succ_##name, #__VA_ARGS__, doc },
#include "opcodes.def"
#undef TPL_OP
#undef TPL_FUSED
};

bool tpl_op_successors_match(uint32_t op, const uint32_t *code, size_t n, size_t pc)
{
    return tpl_op_successors_walk(op, code, n, pc, NULL, NULL);
}

void tpl_name_resolve_hashed(tpl_name *nm, uint64_t hash)
{
    nm->hash = hash;
    tpl_stdlib.ids_for(nm->s.u.s, nm->s.len, &nm->global, nm->bk);
    nm->resolved = true;
}

void tpl_name_resolve(tpl_name *nm)
{
    tpl_name_resolve_hashed(nm, tpl_hash_str(nm->s.u.s, nm->s.len));
}

void tpl_program_sign_names(tpl_program *p)
{
    uint64_t s = 0xCBF29CE484222325u ^ p->nnames;
    for (size_t i = 0; i < p->nnames; i++) {
        const tpl_name *nm = &p->names[i];
        uint64_t h = nm->resolved ? nm->hash : tpl_hash_str(nm->s.u.s, nm->s.len);
        s = (s ^ h ^ (uint64_t)nm->s.len << 32 ^ (uint64_t)nm->s.flags << 56) * 0x100000001B3u;
    }
    p->names_sig = s | 1;
}

/* ---- compact span runs and read locations (program.h) ---- */

static inline bool locw_reserve(tpl_locw *w, size_t k)
{
    if (w->n + k <= w->cap) return true;
    size_t nc = w->cap ? w->cap * 2 : 256;
    while (nc < w->n + k) nc *= 2;
    tpl_budget *bu = w->budget;
    if (bu && (nc - w->cap > bu->limit || bu->used > bu->limit - (nc - w->cap))) {
        bu->over = true;
        w->failed = true;
        return false;
    }
    uint8_t *nb = realloc(w->b, nc);
    if (!nb) { w->failed = true; return false; }
    if (bu) bu->used += nc - w->cap;
    w->b = nb;
    w->cap = nc;
    return true;
}

/* Writes v as a varint at b; returns the byte after it. */
static inline uint8_t *put_varint(uint8_t *b, uint64_t v)
{
    while (v >= 0x80) { *b++ = (uint8_t)(v | 0x80); v >>= 7; }
    *b++ = (uint8_t)v;
    return b;
}

static uint64_t zigzag(int64_t d) { return d < 0 ? ((uint64_t)(-(d + 1)) << 1) | 1 : (uint64_t)d << 1; }
static int64_t unzigzag(uint64_t z) { return z & 1 ? -(int64_t)(z >> 1) - 1 : (int64_t)(z >> 1); }

/* Records the entry just written as a mark (every TPL_SPAN_MARK-th span run); false when out
 * of memory. */
static bool locw_mark(tpl_locw *w)
{
    const tpl_readloc *e = &w->prev;
    if (w->nmarks == w->mcap) {
        size_t nc = w->mcap ? w->mcap * 2 : 16;
        tpl_span_mark *nm = realloc(w->marks, nc * sizeof *nm);
        if (!nm) { w->failed = true; return false; }
        w->marks = nm;
        w->mcap = nc;
    }
    w->marks[w->nmarks++] = (tpl_span_mark){ e->pc, e->line, e->col, (uint32_t)w->n, e->file };
    return true;
}

/* The entry written: it becomes the previous one (and a mark when its turn comes). */
static inline void locw_written(tpl_locw *w)
{
    w->prev = w->pend;
    w->has_pend = false;
    if (!w->reads && w->count % TPL_SPAN_MARK == 0 && !w->failed && !locw_mark(w)) return;
    w->count++;
}

/* tpl_locw_flush's general case (any size of varint, a file change). */
static __attribute__((noinline)) void locw_flush_slow(tpl_locw *w)
{
    const tpl_readloc *e = &w->pend, *pr = &w->prev;
    bool fch = e->file != pr->file, lch = e->line != pr->line;
    if (!locw_reserve(w, 40)) return; /* four varints of at most 10 bytes */
    uint8_t *b = w->b + w->n;
    b = put_varint(b, (uint64_t)(e->pc - pr->pc) << 2 | (uint64_t)fch << 1 | (uint64_t)lch);
    if (fch) b = put_varint(b, e->file);
    if (lch) b = put_varint(b, zigzag((int64_t)e->line - (int64_t)pr->line));
    b = put_varint(b, lch ? e->col : zigzag((int64_t)e->col - (int64_t)pr->col));
    w->n = (size_t)(b - w->b);
    locw_written(w);
}

/* Writes the pending entry: varint (pc increase << 2 | file changed << 1 | line changed), then
 * the file index when it changed, the line's change (zigzag) when it
 * changed, and the column (itself after a line change, else its change, zigzag). Most entries
 * are two or three one-byte varints, written here directly (issue 21, compile time). */
void tpl_locw_flush(tpl_locw *w)
{
    if (!w->has_pend || w->failed) return;
    const tpl_readloc *e = &w->pend, *pr = &w->prev;
    uint32_t dpc = e->pc - pr->pc;
    if (dpc < 32 && e->file == pr->file && w->n + 3 <= w->cap) {
        uint8_t *b = w->b + w->n;
        if (e->line == pr->line) {
            uint64_t z = zigzag((int64_t)e->col - (int64_t)pr->col);
            if (z < 0x80) {
                b[0] = (uint8_t)(dpc << 2);
                b[1] = (uint8_t)z;
                w->n += 2;
                locw_written(w);
                return;
            }
        } else {
            uint64_t z = zigzag((int64_t)e->line - (int64_t)pr->line);
            if (z < 0x80 && e->col < 0x80) {
                b[0] = (uint8_t)(dpc << 2 | 1);
                b[1] = (uint8_t)z;
                b[2] = (uint8_t)e->col;
                w->n += 3;
                locw_written(w);
                return;
            }
        }
    }
    locw_flush_slow(w);
}

void tpl_locw_free(tpl_locw *w)
{
    if (w->budget && w->b) w->budget->used -= w->cap; /* (bytes handed to the program stay charged) */
    free(w->b);
    free(w->marks);
    w->b = NULL;
    w->marks = NULL;
    w->n = w->cap = w->nmarks = w->mcap = 0;
}

bool tpl_locw_finish(tpl_locw *w, tpl_program *p)
{
    tpl_locw_flush(w);
    if (w->n >= UINT32_MAX) w->failed = true;
    /* the bytes go to the program as they are (shrunk, not copied); the marks into its arena */
    uint8_t *b = w->failed ? NULL : realloc(w->b, w->n + 1);
    if (b) w->b = NULL;
    tpl_span_mark *m = b && !w->reads ? tpl_arena_alloc(&p->arena, w->nmarks * sizeof *m + 1) : NULL;
    bool ok = b && (w->reads || m);
    if (ok) {
        if (w->reads) {
            free(p->readb);
            p->readb = b;
            p->nreadb = w->n;
            p->nreadlocs = w->count;
        } else {
            if (w->nmarks) memcpy(m, w->marks, w->nmarks * sizeof *m);
            free(p->spanb);
            p->spans = NULL;
            p->spanb = b;
            p->nspanb = w->n;
            p->spanm = m;
            p->nspanm = w->nmarks;
            p->nspans = w->count;
        }
    } else {
        free(b);
    }
    tpl_locw_free(w);
    return ok;
}

void tpl_loc_it_init(tpl_loc_it *it, const tpl_program *p)
{
    it->p = p;
    it->off = it->i = 0;
    it->cur = (tpl_readloc){ 0, 0, 0, 0 };
}

static uint64_t get_varint(const uint8_t *b, size_t n, size_t *off)
{
    uint64_t v = 0;
    for (int sh = 0; *off < n && sh < 64; sh += 7) {
        uint8_t x = b[(*off)++];
        v |= (uint64_t)(x & 0x7F) << sh;
        if (!(x & 0x80)) break;
    }
    return v;
}

/* Decodes the entry at it->off of b[0..n) into it->cur (tpl_locw's format). */
static void loc_decode(tpl_loc_it *it, const uint8_t *b, size_t n)
{
    tpl_readloc *c = &it->cur;
    uint64_t head = get_varint(b, n, &it->off);
    c->pc += (uint32_t)(head >> 2);
    if (head & 2) c->file = (uint32_t)get_varint(b, n, &it->off);
    int64_t dl = head & 1 ? unzigzag(get_varint(b, n, &it->off)) : 0;
    uint64_t cv = get_varint(b, n, &it->off);
    c->line = (uint32_t)((int64_t)c->line + dl);
    c->col = head & 1 ? (uint32_t)cv : (uint32_t)((int64_t)c->col + unzigzag(cv));
    it->i++;
}

bool tpl_span_next(tpl_loc_it *it, tpl_span *out)
{
    const tpl_program *p = it->p;
    if (it->i >= p->nspans) return false;
    if (!p->spanb) {
        if (!p->spans) return false;
        *out = p->spans[it->i++];
        return true;
    }
    if (it->off >= p->nspanb) return false;
    loc_decode(it, p->spanb, p->nspanb);
    *out = (tpl_span){ it->cur.pc, it->cur.line, it->cur.col, it->cur.file };
    return true;
}

bool tpl_readloc_next(tpl_loc_it *it, tpl_readloc *out)
{
    const tpl_program *p = it->p;
    if (it->i >= p->nreadlocs || !p->readb || it->off >= p->nreadb) return false;
    loc_decode(it, p->readb, p->nreadb);
    *out = it->cur;
    return true;
}

void tpl_program_span(const tpl_program *p, uint32_t pc, uint32_t *line, uint32_t *col, uint32_t *file)
{
    uint32_t f = 0;
    *line = *col = 0;
    if (!p->spanb) {
        size_t lo = 0, hi = p->spans ? p->nspans : 0;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (p->spans[mid].pc <= pc) lo = mid + 1;
            else hi = mid;
        }
        if (lo > 0) {
            *line = p->spans[lo - 1].line;
            *col = p->spans[lo - 1].col;
            f = p->spans[lo - 1].file;
        }
    } else {
        /* the last mark at or before pc, then the runs after it */
        size_t lo = 0, hi = p->nspanm;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (p->spanm[mid].pc <= pc) lo = mid + 1;
            else hi = mid;
        }
        if (lo > 0) { /* (else the first run is a mark: pc is before it) */
            const tpl_span_mark *m = &p->spanm[lo - 1];
            tpl_loc_it it = { p, m->off, (lo - 1) * TPL_SPAN_MARK + 1, { m->pc, m->file, m->line, m->col } };
            *line = m->line;
            *col = m->col;
            f = m->file;
            tpl_span s;
            while (tpl_span_next(&it, &s) && s.pc <= pc) {
                *line = s.line;
                *col = s.col;
                f = s.file;
            }
        }
    }
    if (f >= p->nfiles) f = 0; /* (a file index the loader did not check: the template's) */
    if (file) *file = f;
}

const char *tpl_program_file(const tpl_program *p, uint32_t f, const char **src, size_t *srclen)
{
    if (f == 0 || f >= p->nfiles) {
        *src = p->source;
        *srclen = p->source_len;
        return p->name;
    }
    *src = p->file_srcs ? p->file_srcs[f].u.s : NULL;
    *srclen = p->file_srcs ? p->file_srcs[f].len : 0;
    return p->files[f].u.s;
}

/* ---- templates loaded at render time (issue 14) ---- */

struct tpl_subentry {
    tpl_loader_fn fn;
    void *data;
    char *name;
    size_t len;
    tpl_program *p;
};

struct tpl_subcache {
    pthread_mutex_t mu;
    struct tpl_subentry *e;
    size_t n, cap;
};

/* p's cache, made on first use (two threads may race: one's is kept, the other's freed). */
static struct tpl_subcache *subcache(const tpl_program *p)
{
    struct tpl_subcache **slot = &((tpl_program *)p)->subs; /* (the one field a render writes) */
    struct tpl_subcache *c = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (c) return c;
    struct tpl_subcache *nc = calloc(1, sizeof *nc);
    if (!nc) return NULL;
    if (pthread_mutex_init(&nc->mu, NULL) != 0) { free(nc); return NULL; }
    struct tpl_subcache *expected = NULL;
    if (__atomic_compare_exchange_n(slot, &expected, nc, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return nc;
    pthread_mutex_destroy(&nc->mu);
    free(nc);
    return expected;
}

static tpl_program *sub_find(struct tpl_subcache *c, tpl_loader_fn fn, void *data, const char *name, size_t len)
{
    for (size_t i = 0; i < c->n; i++) {
        const struct tpl_subentry *e = &c->e[i];
        if (e->fn == fn && e->data == data && e->len == len && memcmp(e->name, name, len) == 0) return e->p;
    }
    return NULL;
}

tpl_program *tpl_program_sub_get(const tpl_program *p, tpl_loader_fn fn, void *data, const char *name, size_t len)
{
    struct tpl_subcache *c = __atomic_load_n(&((tpl_program *)p)->subs, __ATOMIC_ACQUIRE);
    if (!c) return NULL;
    pthread_mutex_lock(&c->mu);
    tpl_program *r = sub_find(c, fn, data, name, len);
    pthread_mutex_unlock(&c->mu);
    return r;
}

tpl_program *tpl_program_sub_put(const tpl_program *p, tpl_loader_fn fn, void *data, const char *name, size_t len,
                                 tpl_program *sub, bool *full)
{
    *full = false;
    struct tpl_subcache *c = subcache(p);
    if (!c) { tpl_program_free(sub); return NULL; }
    pthread_mutex_lock(&c->mu);
    tpl_program *r = sub_find(c, fn, data, name, len);
    if (r) {
        tpl_program_free(sub);
    } else if (c->n >= TPL_MAX_LOADED) {
        *full = true;
        tpl_program_free(sub);
    } else {
        if (c->n == c->cap) {
            size_t nc = c->cap ? c->cap * 2 : 8;
            struct tpl_subentry *ne = realloc(c->e, nc * sizeof *ne);
            if (ne) { c->e = ne; c->cap = nc; }
        }
        char *nm = c->n < c->cap ? malloc(len + 1) : NULL;
        if (!nm) {
            tpl_program_free(sub);
        } else {
            memcpy(nm, name, len);
            nm[len] = 0;
            c->e[c->n++] = (struct tpl_subentry){ fn, data, nm, len, sub };
            r = sub;
        }
    }
    pthread_mutex_unlock(&c->mu);
    return r;
}

bool tpl_program_needs_loader(const tpl_program *p)
{
    if (!p) return false;
    for (size_t pc = 0; pc < p->ncode;) {
        uint32_t op = TPL_INSN_OP(p->code[pc]);
        if (op >= TPL_OP__COUNT) return false;
        if (op == TPL_OP_INCLUDE_DYN || op == TPL_OP_IMPORT_DYN || op == TPL_OP_EXTENDS_DYN) return true;
        pc += 1 + tpl_opinfo_table[op].extra;
    }
    return false;
}

void tpl_program_free(tpl_program *p)
{
    if (!p) return;
    if (p->subs) {
        for (size_t i = 0; i < p->subs->n; i++) {
            free(p->subs->e[i].name);
            tpl_program_free(p->subs->e[i].p);
        }
        free(p->subs->e);
        pthread_mutex_destroy(&p->subs->mu);
        free(p->subs);
    }
    if (p->code_heap) free(p->code);
    free(p->spanb);
    free(p->readb);
    free(p->reads_cache);
    tpl_arena_free(&p->arena);
    if (!p->static_data) {
        free(p->name);
        free(p->source);
    }
    free(p);
}
