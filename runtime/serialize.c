/* Precompiled programs: the .tplb format (write and read), C emission and static loading.
 *
 * .tplb layout (every integer little-endian, whatever the host's byte order):
 *
 *   header (32 bytes)
 *     0  8  magic "TPLB\r\n\x1a\n"
 *     8  4  format version (TPL_TPLB_VERSION)
 *    12  4  flags: bit 0 = the normalised source is included; bit 1 = each name is followed by
 *           its u8 value flags (0 or TPL_F_SYMBOL: ERB's h[:k]; set only when a name has one)
 *    16  8  payload length in bytes (the file is exactly 32 + this)
 *    24  4  CRC-32 (IEEE 802.3, as zlib) of the payload
 *    28  4  reserved, 0
 *   payload
 *     u8 syntax, u8 option bits (trim, lstrip, keep_nl, strict, tidy, hf, erb_self), u16 0
 *     str name                       (str = u32 byte length + bytes)
 *     u64 source hash
 *     str bound language             (format 4: tpl_options.lang; empty: none)
 *     str source                     (only with flag bit 0)
 *     u32 nslots, u32 max_stack      (template level)
 *     u32 nbuiltins, nbuiltins × (u8 kind, str name)
 *                                    (format 4: the builtins the code calls; a builtin operand
 *                                     of the code is an index of this table, resolved by name
 *                                     when loading: an unknown name is a load error)
 *     u32 ncode, ncode × u32 words
 *     u32 nconsts, values            (value = u8 type, u8 flags, payload: int i64, float
 *                                     IEEE bits u64, bool u8, str str, tuple u32 n + n values)
 *     u32 nnames, nnames × str       (flag bit 1: nnames × (str, u8 flags))
 *     u32 nspans, nspans × (u32 pc, u32 line, u32 col, u32 file)
 *                                    (format 5: file, an index of the file names below)
 *     u32 nmacros, nmacros × (u32 entry, u32 name, u32 params, u16 nparams, u16 nslots,
 *                             u16 max_stack, i16 varargs, i16 kwargs, i16 caller)
 *     u32 nreads, nreads × u32 name index   (the reads-set, ascending; checked on load)
 *     u32 nfiles, nfiles × str       (format 3: the template and the templates it loaded)
 *     (nfiles - 1) × str             (format 5, only with flag bit 0: the loaded templates'
 *                                     normalised sources, for their lines under diagnostics)
 *     u32 nreadlocs, nreadlocs × (u32 pc, u32 file, u32 line, u32 col)
 *                                    (format 3: where each read instruction is, ascending pc;
 *                                     tpl_program_reads_located)
 *
 * The source is kept by default so runtime errors of a loaded program print the same
 * diagnostics (with the source line) as the source would; TPL_SAVE_STRIP_SOURCE drops it.
 * Loading copies everything into the program's arena and then runs the verifier. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "error.h"
#include "crc32.h"
#include "program.h"
#include "../include/tpl_static.h"
#include "../include/tpl_native.h" /* TPL_NATIVE_* */
#include "verify.h"
#include "library.h"

static const unsigned char MAGIC[8] = { 'T', 'P', 'L', 'B', '\r', '\n', 0x1a, '\n' };
#define HEADER 32
#define MAX_NEST 8

/* The static mirror structs must match the runtime's tables exactly. */
_Static_assert(sizeof(tpl_static_value) == sizeof(tpl_value), "tpl_static_value layout");
_Static_assert(offsetof(tpl_static_value, len) == offsetof(tpl_value, len), "tpl_static_value.len");
_Static_assert(offsetof(tpl_static_value, u) == offsetof(tpl_value, u), "tpl_static_value.u");
_Static_assert(sizeof(tpl_static_list) == sizeof(tpl_list), "tpl_static_list layout");
_Static_assert(offsetof(tpl_static_list, items) == offsetof(tpl_list, items), "tpl_static_list.items");
_Static_assert(sizeof(tpl_static_name) == sizeof(tpl_name), "tpl_static_name layout");
_Static_assert(offsetof(tpl_static_name, hash) == offsetof(tpl_name, hash), "tpl_static_name.hash");
_Static_assert(offsetof(tpl_static_name, resolved) == offsetof(tpl_name, resolved), "tpl_static_name.resolved");
_Static_assert(sizeof(tpl_static_span) == sizeof(tpl_span), "tpl_static_span layout");
_Static_assert(sizeof(tpl_static_macro) == sizeof(tpl_macro_desc), "tpl_static_macro layout");
_Static_assert(offsetof(tpl_static_macro, nparams) == offsetof(tpl_macro_desc, nparams), "macro.nparams");
_Static_assert(offsetof(tpl_static_macro, varargs_slot) == offsetof(tpl_macro_desc, varargs_slot), "macro.varargs");
_Static_assert(offsetof(tpl_static_macro, caller_slot) == offsetof(tpl_macro_desc, caller_slot), "macro.caller");

static unsigned opt_bits(const tpl_options *o)
{
    return (unsigned)o->trim_blocks | (unsigned)o->lstrip_blocks << 1 | (unsigned)o->keep_trailing_newline << 2 |
           (unsigned)o->strict << 3 | (unsigned)o->tidy << 4 | (unsigned)o->hf << 5 |
           (unsigned)o->erb_self << 6;
}

static void set_opt_bits(tpl_options *o, unsigned b)
{
    o->trim_blocks = b & 1;
    o->lstrip_blocks = b >> 1 & 1;
    o->keep_trailing_newline = b >> 2 & 1;
    o->strict = b >> 3 & 1;
    o->tidy = b >> 4 & 1;
    o->hf = b >> 5 & 1;
    o->erb_self = b >> 6 & 1;
}

/* ------------------------------------------------------------------ writing */

/* The writer behind tpl_program_write and tpl_program_save: bytes gather in a small buffer that
 * goes to the sink when full. Counting (sink NULL) sums the payload's length and CRC only, so a
 * save is two passes over the program and never holds the file (issue 13 §1: a large template's
 * .tplb in memory beside its program doubled the compile's peak). */
typedef struct wr {
    tpl_write_fn sink;    /* NULL: count only */
    void *data;
    uint64_t len;         /* bytes put so far */
    uint32_t crc;         /* running CRC state of the bytes past the header (counting only) */
    bool failed;          /* the sink refused bytes */
    size_t n;
    unsigned char buf[16384];
} wr;

static void wr_flush(wr *w)
{
    if (!w->n) return;
    if (!w->sink) {
        /* the header's 32 bytes are not part of the payload's CRC */
        size_t skip = w->len - w->n < HEADER ? (size_t)(HEADER - (w->len - w->n)) : 0;
        if (skip < w->n) w->crc = tpl_crc32_update(w->crc, w->buf + skip, w->n - skip);
    } else if (!w->failed && w->sink(w->data, w->buf, w->n) != 0) {
        w->failed = true;
    }
    w->n = 0;
}

static void put_bytes(wr *w, const void *s, size_t n)
{
    const unsigned char *p = s;
    while (n) {
        if (w->n == sizeof w->buf) wr_flush(w);
        size_t k = sizeof w->buf - w->n < n ? sizeof w->buf - w->n : n;
        memcpy(w->buf + w->n, p, k);
        w->n += k;
        w->len += k; /* (wr_flush reads the buffer's offset from len) */
        p += k;
        n -= k;
    }
}

static void put_u8(wr *w, unsigned v)
{
    if (w->n == sizeof w->buf) wr_flush(w);
    w->buf[w->n++] = (unsigned char)v;
    w->len++;
}
static void put_u16(wr *w, unsigned v) { put_u8(w, v & 0xFF); put_u8(w, v >> 8 & 0xFF); }
static void put_u32(wr *w, uint32_t v) { put_u16(w, v & 0xFFFF); put_u16(w, v >> 16); }
static void put_u64(wr *w, uint64_t v) { put_u32(w, (uint32_t)v); put_u32(w, (uint32_t)(v >> 32)); }
static void put_str(wr *w, const char *s, size_t n) { put_u32(w, (uint32_t)n); put_bytes(w, s, n); }

static void put_value(wr *b, const tpl_value *v)
{
    put_u8(b, v->type);
    put_u8(b, v->flags);
    switch (v->type) {
    case TPL_T_BOOL: put_u8(b, v->u.i != 0); break;
    case TPL_T_INT: put_u64(b, (uint64_t)v->u.i); break;
    case TPL_T_FLOAT: {
        uint64_t bits;
        memcpy(&bits, &v->u.f, sizeof bits);
        put_u64(b, bits);
        break;
    }
    case TPL_T_STR: case TPL_T_BIGINT: put_str(b, v->u.s, v->len); break;
    case TPL_T_LIST:
        put_u32(b, v->u.list->len);
        for (uint32_t i = 0; i < v->u.list->len; i++) put_value(b, &v->u.list->items[i]);
        break;
    default: break;
    }
}

/* Calls f(p, word index, operand value) for every builtin operand ('b' in opcodes.def) of the
 * code; stops at an unknown opcode or a truncated instruction (the verifier rejects those). */
static void each_builtin_operand(uint32_t *code, size_t ncode, void (*f)(void *data, uint32_t *word, bool in_a),
                                 void *data)
{
    for (size_t pc = 0; pc < ncode;) {
        uint32_t op = TPL_INSN_OP(code[pc]);
        if (op >= TPL_OP__COUNT) return;
        const tpl_opinfo *oi = &tpl_opinfo_table[op];
        if (pc + oi->extra >= ncode) return;
        for (size_t k = 0; oi->fmt[k] && k <= oi->extra; k++)
            if (oi->fmt[k] == 'b') f(data, &code[pc + k], k == 0);
        pc += 1 + (size_t)oi->extra;
    }
}

/* Saving: builtin ids -> indexes of the file's builtins table (first-use order). */
typedef struct bt_save {
    int32_t *slot;      /* per builtin id: its index in the table, or -1 */
    uint16_t *ids;      /* the table: builtin ids */
    uint32_t n;
} bt_save;

/* Saving: the table index of the builtin in *word (the code is not changed: each word is
 * mapped again as it is written). */
static uint32_t bt_map(bt_save *t, uint32_t word, bool in_a)
{
    uint32_t id = in_a ? TPL_INSN_A(word) : word;
    if (id >= tpl_stdlib.nbuiltins) return word;
    if (t->slot[id] < 0) { t->slot[id] = (int32_t)t->n; t->ids[t->n++] = (uint16_t)id; }
    uint32_t k = (uint32_t)t->slot[id];
    return in_a ? (TPL_INSN_OP(word) | k << 8) : k;
}

/* Loading: table indexes -> this library's builtin ids (an index out of range stays out of range
 * for the verifier to reject). */
typedef struct bt_load {
    const int16_t *ids;
    uint32_t n;
} bt_load;

static void bt_resolve(void *data, uint32_t *word, bool in_a)
{
    const bt_load *t = data;
    uint32_t k = in_a ? TPL_INSN_A(*word) : *word;
    uint32_t id = k < t->n ? (uint32_t)t->ids[k] : 0xFFFFFF;
    *word = in_a ? (TPL_INSN_OP(*word) | id << 8) : id;
}

static const char *const builtin_kind_names[] = { "filter", "test", "global function", "str method", "dict method",
                                                  "list method", "Kernel function", "method", "String method",
                                                  "Numeric method", "Array method", "Hash method", "Range method",
                                                  "MatchData method", "int or float method" };

/* Saving (--emit c): the builtin operand in *word replaced by its index in t. */
static void bt_assign(void *data, uint32_t *word, bool in_a) { *word = bt_map(data, *word, in_a); }

/* Loading: this library's id of builtin `kind` named s[0..n), or -1 with why (of cap bytes)
 * saying which is unknown. find() also answers a test's operator alias ("==" for eq): only the
 * exact name counts. */
static int builtin_named(unsigned kind, const char *s, size_t n, char *why, size_t cap)
{
    bool known_kind = kind < sizeof builtin_kind_names / sizeof builtin_kind_names[0];
    int id = known_kind ? tpl_stdlib.find((tpl_builtin_kind)kind, s, n) : -1;
    const tpl_builtin_info *bi = tpl_lib_builtin(id);
    if (bi && bi->namelen == n && memcmp(bi->name, s, n) == 0) return id;
    snprintf(why, cap, "unknown builtin %s '%.*s' (this tpl has no such builtin)",
             known_kind ? builtin_kind_names[kind] : "kind", (int)(n > 64 ? 64 : n), s);
    return -1;
}

/* The code with its builtin operands mapped by t (put = false: only fills t). */
static void put_code(wr *w, const tpl_program *p, bt_save *t, bool put)
{
    size_t pc = 0;
    for (; pc < p->ncode;) {
        uint32_t op = TPL_INSN_OP(p->code[pc]);
        if (op >= TPL_OP__COUNT) break;
        const tpl_opinfo *oi = &tpl_opinfo_table[op];
        if (pc + oi->extra >= p->ncode) break;
        bool fmt_end = false;
        for (size_t k = 0; k <= oi->extra; k++) {
            uint32_t word = p->code[pc + k];
            fmt_end = fmt_end || !oi->fmt[k];
            if (!fmt_end && oi->fmt[k] == 'b') word = bt_map(t, word, k == 0);
            if (put) put_u32(w, word);
        }
        pc += 1 + (size_t)oi->extra;
    }
    if (put)
        for (; pc < p->ncode; pc++) put_u32(w, p->code[pc]);
}

/* Whether a name carries a value flag (a Symbol index), which the names section then stores. */
static bool names_flagged(const tpl_program *p)
{
    for (size_t i = 0; i < p->nnames; i++)
        if (p->names[i].s.flags) return true;
    return false;
}

/* One pass of a save: the header (length and CRC as given) and the payload into w. */
static bool put_program(wr *w, const tpl_program *p, bool with_source, uint64_t plen, uint32_t crc)
{
    put_bytes(w, MAGIC, sizeof MAGIC);
    put_u32(w, TPL_TPLB_VERSION);
    put_u32(w, (with_source ? 1u : 0u) | (names_flagged(p) ? 2u : 0u));
    put_u64(w, plen);
    put_u32(w, crc);
    put_u32(w, 0);
    put_u8(w, (unsigned)p->opts.syntax);
    put_u8(w, opt_bits(&p->opts));
    put_u16(w, 0);
    put_str(w, p->name ? p->name : "", p->name ? strlen(p->name) : 0);
    put_u64(w, p->source_hash);
    put_str(w, p->opts.lang ? p->opts.lang : "", p->opts.lang ? strlen(p->opts.lang) : 0);
    if (with_source) put_str(w, p->source, p->source_len);
    put_u32(w, p->nslots);
    put_u32(w, p->max_stack);
    /* the builtins table, and the code with its builtin operands as indexes of it */
    bt_save bt = { malloc(tpl_stdlib.nbuiltins * sizeof *bt.slot), malloc(tpl_stdlib.nbuiltins * sizeof *bt.ids), 0 };
    if (!bt.slot || !bt.ids) { free(bt.slot); free(bt.ids); return false; }
    for (uint32_t i = 0; i < tpl_stdlib.nbuiltins; i++) bt.slot[i] = -1;
    put_code(w, p, &bt, false);
    put_u32(w, bt.n);
    for (uint32_t i = 0; i < bt.n; i++) {
        const tpl_builtin_info *bi = tpl_lib_builtin(bt.ids[i]);
        put_u8(w, bi->kind);
        put_str(w, bi->name, bi->namelen);
    }
    put_u32(w, (uint32_t)p->ncode);
    put_code(w, p, &bt, true);
    free(bt.slot);
    free(bt.ids);
    put_u32(w, (uint32_t)p->nconsts);
    for (size_t i = 0; i < p->nconsts; i++) put_value(w, &p->consts[i]);
    put_u32(w, (uint32_t)p->nnames);
    bool nflags = names_flagged(p);
    for (size_t i = 0; i < p->nnames; i++) {
        put_str(w, p->names[i].s.u.s, p->names[i].s.len);
        if (nflags) put_u8(w, p->names[i].s.flags);
    }
    put_u32(w, (uint32_t)p->nspans);
    tpl_loc_it it;
    tpl_loc_it_init(&it, p);
    for (tpl_span sp; tpl_span_next(&it, &sp);) {
        put_u32(w, sp.pc);
        put_u32(w, sp.line);
        put_u32(w, sp.col);
        put_u32(w, sp.file);
    }
    put_u32(w, (uint32_t)p->nmacros);
    for (size_t i = 0; i < p->nmacros; i++) {
        const tpl_macro_desc *d = &p->macros[i];
        put_u32(w, d->entry);
        put_u32(w, d->name);
        put_u32(w, d->params);
        put_u16(w, d->nparams);
        put_u16(w, d->nslots);
        put_u16(w, d->max_stack);
        put_u16(w, (uint16_t)d->varargs_slot);
        put_u16(w, (uint16_t)d->kwargs_slot);
        put_u16(w, (uint16_t)d->caller_slot);
    }
    size_t nreads = tpl_program_reads_idx(p, NULL, 0);
    uint32_t *reads = malloc((nreads ? nreads : 1) * sizeof *reads);
    if (!reads) return false;
    tpl_program_reads_idx(p, reads, nreads);
    put_u32(w, (uint32_t)nreads);
    for (size_t i = 0; i < nreads; i++) put_u32(w, reads[i]);
    free(reads);
    put_u32(w, (uint32_t)p->nfiles);
    for (size_t i = 0; i < p->nfiles; i++) put_str(w, p->files[i].u.s, p->files[i].len);
    if (with_source)
        for (size_t i = 1; i < p->nfiles; i++) {
            const char *fs = p->file_srcs ? p->file_srcs[i].u.s : NULL;
            put_str(w, fs ? fs : "", fs ? p->file_srcs[i].len : 0);
        }
    put_u32(w, (uint32_t)p->nreadlocs);
    tpl_loc_it_init(&it, p);
    for (tpl_readloc l; tpl_readloc_next(&it, &l);) {
        put_u32(w, l.pc);
        put_u32(w, l.file);
        put_u32(w, l.line);
        put_u32(w, l.col);
    }
    wr_flush(w);
    return true;
}

/* The payload's length and CRC (a counting pass); false when out of memory. */
static bool count_program(const tpl_program *p, bool with_source, uint64_t *plen, uint32_t *crc)
{
    wr *w = malloc(sizeof *w);
    if (!w) return false;
    *w = (wr){ .crc = 0xFFFFFFFFu };
    bool ok = put_program(w, p, with_source, 0, 0);
    *plen = w->len - HEADER;
    *crc = ~w->crc;
    free(w);
    return ok;
}

/* The writing pass. */
static tpl_status emit_program(const tpl_program *p, bool with_source, uint64_t plen, uint32_t crc, tpl_write_fn write,
                               void *data)
{
    wr *w = malloc(sizeof *w);
    if (!w) return TPL_ERR_NOMEM;
    *w = (wr){ .sink = write, .data = data };
    bool ok = put_program(w, p, with_source, plen, crc);
    tpl_status st = !ok ? TPL_ERR_NOMEM : w->failed ? TPL_ERR_IO : TPL_OK;
    free(w);
    return st;
}

tpl_status tpl_program_write(const tpl_program *p, unsigned flags, tpl_write_fn write, void *data)
{
    if (!p || !write) return TPL_ERR_USAGE;
    bool with_source = !(flags & TPL_SAVE_STRIP_SOURCE) && p->source;
    uint64_t plen;
    uint32_t crc;
    if (!count_program(p, with_source, &plen, &crc)) return TPL_ERR_NOMEM;
    return emit_program(p, with_source, plen, crc, write, data);
}

/* tpl_program_save's sink: into an exactly-sized buffer. */
typedef struct membuf { char *p; size_t len, cap; } membuf;
static int mem_sink(void *data, const void *bytes, size_t n)
{
    membuf *m = data;
    if (n > m->cap - m->len) return 1;
    memcpy(m->p + m->len, bytes, n);
    m->len += n;
    return 0;
}

tpl_status tpl_program_save(const tpl_program *p, unsigned flags, void **out, size_t *len)
{
    if (out) *out = NULL;
    if (len) *len = 0;
    if (!p || !out || !len) return TPL_ERR_USAGE;
    bool with_source = !(flags & TPL_SAVE_STRIP_SOURCE) && p->source;
    /* the size first, then the bytes into a buffer of exactly that size */
    uint64_t plen;
    uint32_t crc;
    if (!count_program(p, with_source, &plen, &crc) || plen > SIZE_MAX - HEADER - 1) return TPL_ERR_NOMEM;
    membuf m = { malloc(HEADER + plen), 0, HEADER + plen };
    if (!m.p) return TPL_ERR_NOMEM;
    tpl_status st = emit_program(p, with_source, plen, crc, mem_sink, &m);
    if (st != TPL_OK || m.len != m.cap) { free(m.p); return TPL_ERR_NOMEM; }
    *out = m.p;
    *len = m.len;
    return TPL_OK;
}

/* ------------------------------------------------------------------ reading */

typedef struct rd {
    const unsigned char *p;
    size_t n, off;
    bool bad;
} rd;

static bool need(rd *r, size_t k)
{
    if (r->bad || r->n - r->off < k) { r->bad = true; return false; }
    return true;
}
static unsigned get_u8(rd *r) { return need(r, 1) ? r->p[r->off++] : 0; }
static unsigned get_u16(rd *r) { unsigned lo = get_u8(r); return lo | get_u8(r) << 8; }
static uint32_t get_u32(rd *r) { uint32_t lo = get_u16(r); return lo | (uint32_t)get_u16(r) << 16; }
static uint64_t get_u64(rd *r) { uint64_t lo = get_u32(r); return lo | (uint64_t)get_u32(r) << 32; }

/* A count of elements of at least `each` bytes: never more than the bytes left. */
static uint32_t get_count(rd *r, size_t each)
{
    uint32_t n = get_u32(r);
    if (!r->bad && (size_t)n > (r->n - r->off) / each) { r->bad = true; return 0; }
    return r->bad ? 0 : n;
}

/* A string copied into the arena (NUL-terminated). */
static const char *get_str(rd *r, tpl_arena *a, uint32_t *len)
{
    uint32_t n = get_u32(r);
    *len = 0;
    if (!need(r, n)) return NULL;
    char *s = tpl_arena_strdup(a, (const char *)r->p + r->off, n);
    if (!s) { r->bad = true; return NULL; }
    r->off += n;
    *len = n;
    return s;
}

static bool get_value(rd *r, tpl_arena *a, tpl_value *v, int nest)
{
    memset(v, 0, sizeof *v);
    v->type = (uint8_t)get_u8(r);
    v->flags = (uint8_t)get_u8(r);
    if (r->bad) return false;
    switch (v->type) {
    case TPL_T_NONE: return true;
    case TPL_T_BOOL: v->u.i = get_u8(r) != 0; return !r->bad;
    case TPL_T_INT: v->u.i = (int64_t)get_u64(r); return !r->bad;
    case TPL_T_FLOAT: {
        uint64_t bits = get_u64(r);
        memcpy(&v->u.f, &bits, sizeof bits);
        return !r->bad;
    }
    case TPL_T_STR: v->u.s = get_str(r, a, &v->len); return !r->bad;
    case TPL_T_BIGINT: v->u.s = get_str(r, a, &v->len); return !r->bad; /* the verifier checks its text */
    case TPL_T_LIST: {
        if (nest >= MAX_NEST) return false;
        uint32_t n = get_count(r, 2);
        if (r->bad) return false;
        tpl_list *l = tpl_list_new(a, n);
        if (!l) return false;
        for (uint32_t i = 0; i < n; i++)
            if (!get_value(r, a, &l->items[i], nest + 1)) return false;
        l->len = n;
        v->u.list = l;
        return true;
    }
    default: return false;
    }
}

static void fill_error(tpl_error *err, tpl_error_kind kind, const char *name, const char *msg)
{
    tpl_error_set(err, kind, name ? name : "<tplb>", msg);
}

bool tpl_is_tplb(const void *data, size_t len)
{
    return data && len >= sizeof MAGIC && memcmp(data, MAGIC, sizeof MAGIC) == 0;
}

/* Loading ran out of memory: frees p, the one out-of-memory report. */
static tpl_status load_nomem(tpl_program *p, tpl_error *err, const char *name)
{
    tpl_program_free(p);
    return tpl_error_nomem(err, name ? name : "<tplb>");
}

static tpl_status corrupt(tpl_program *p, tpl_error *err, const char *name, const char *why)
{
    tpl_program_free(p);
    char msg[300];
    snprintf(msg, sizeof msg, "not a valid .tplb file: %s", why);
    fill_error(err, TPL_EK_CORRUPT, name, msg);
    return TPL_ERR_CORRUPT;
}

tpl_status tpl_program_load(const char *name, const void *data, size_t len, tpl_program **out, tpl_error *err)
{
    if (out) *out = NULL;
    if (!out || !data) {
        fill_error(err, TPL_EK_USAGE, name, out ? "tpl_program_load: data is NULL" : "tpl_program_load: out is NULL");
        return TPL_ERR_USAGE;
    }
    *out = NULL;
    if (!data || len < HEADER || !tpl_is_tplb(data, len)) return corrupt(NULL, err, name, "bad magic or too short");
    rd r = { data, len, sizeof MAGIC, false };
    uint32_t version = get_u32(&r), flags = get_u32(&r);
    uint64_t plen = get_u64(&r);
    uint32_t crc = get_u32(&r);
    uint32_t reserved = get_u32(&r);
    if (version != TPL_TPLB_VERSION) {
        char msg[100];
        snprintf(msg, sizeof msg, "format version %u (this tpl reads version %u)", version, TPL_TPLB_VERSION);
        return corrupt(NULL, err, name, msg);
    }
    if (flags & ~3u) return corrupt(NULL, err, name, "unknown flags");
    if (reserved) return corrupt(NULL, err, name, "reserved header bytes are not 0");
    if (plen != len - HEADER) return corrupt(NULL, err, name, "length mismatch (truncated?)");
    if (tpl_crc32(r.p + HEADER, len - HEADER) != crc) return corrupt(NULL, err, name, "checksum mismatch");

    tpl_program *p = calloc(1, sizeof *p);
    if (!p) return load_nomem(NULL, err, name);
    tpl_arena_init(&p->arena, 0);
    tpl_arena *a = &p->arena;
    unsigned syntax = get_u8(&r), ob = get_u8(&r), pad = get_u16(&r);
    if (syntax > TPL_SYNTAX_FMT || ob > 127 || pad) return corrupt(p, err, name, "bad options");
    p->opts.syntax = (tpl_syntax)syntax;
    set_opt_bits(&p->opts, ob);
    uint32_t n;
    const char *s = get_str(&r, a, &n);
    if (r.bad) return corrupt(p, err, name, "truncated name");
    p->name = malloc((size_t)n + 1);
    if (!p->name) return load_nomem(p, err, name);
    memcpy(p->name, s, n);
    p->name[n] = 0;
    p->source_hash = get_u64(&r);
    s = get_str(&r, a, &n);
    if (r.bad) return corrupt(p, err, name, "truncated language");
    if (n) {
        char *l = tpl_arena_alloc(a, (size_t)n + 1);
        if (!l) return load_nomem(p, err, name);
        memcpy(l, s, n);
        l[n] = 0;
        if (strlen(l) != n || !tpl_utf8_valid(l, n, &(size_t){ 0 })) return corrupt(p, err, name, "bad language");
        p->opts.lang = l;
    }
    if (flags & 1) {
        s = get_str(&r, a, &n);
        if (r.bad) return corrupt(p, err, name, "truncated source");
        p->source = malloc((size_t)n + 1);
        if (!p->source) return load_nomem(p, err, name);
        memcpy(p->source, s, n);
        p->source[n] = 0;
        p->source_len = n;
    }
    if (!p->source && !(p->source = calloc(1, 1))) return load_nomem(p, err, name);
    p->nslots = get_u32(&r);
    p->max_stack = get_u32(&r);
    uint32_t nbt = get_count(&r, 5);
    int16_t *bt_ids = tpl_arena_alloc(a, (size_t)nbt * sizeof *bt_ids + 1);
    if (r.bad || !bt_ids) return corrupt(p, err, name, "truncated builtins table");
    for (uint32_t i = 0; i < nbt; i++) {
        unsigned kind = get_u8(&r);
        s = get_str(&r, a, &n);
        if (r.bad) return corrupt(p, err, name, "truncated builtins table");
        char why[200];
        int id = builtin_named(kind, s, n, why, sizeof why);
        if (id < 0) return corrupt(p, err, name, why);
        bt_ids[i] = (int16_t)id;
    }
    p->ncode = get_count(&r, 4);
    p->code = tpl_arena_alloc(a, p->ncode * sizeof *p->code + 1);
    if (!p->code) return corrupt(p, err, name, "truncated code");
    for (size_t i = 0; i < p->ncode; i++) p->code[i] = get_u32(&r);
    if (r.bad) return corrupt(p, err, name, "truncated code");
    each_builtin_operand(p->code, p->ncode, bt_resolve, &(bt_load){ bt_ids, nbt });
    p->nconsts = get_count(&r, 2);
    p->consts = tpl_arena_alloc(a, p->nconsts * sizeof *p->consts + 1);
    if (r.bad || !p->consts) return corrupt(p, err, name, "truncated constants");
    for (size_t i = 0; i < p->nconsts; i++)
        if (!get_value(&r, a, &p->consts[i], 0)) return corrupt(p, err, name, "bad constant");
    p->nnames = get_count(&r, 4);
    p->names = tpl_arena_alloc(a, p->nnames * sizeof *p->names + 1);
    if (r.bad || !p->names) return corrupt(p, err, name, "truncated names");
    for (size_t i = 0; i < p->nnames; i++) {
        s = get_str(&r, a, &n);
        if (r.bad) return corrupt(p, err, name, "truncated names");
        p->names[i].s = tpl_v_str(s, n);
        if (flags & 2) {
            unsigned nf = get_u8(&r);
            if (r.bad) return corrupt(p, err, name, "truncated names");
            if (nf & ~(unsigned)TPL_F_SYMBOL) return corrupt(p, err, name, "bad name flags");
            p->names[i].s.flags = (uint8_t)nf;
        }
        tpl_name_resolve(&p->names[i]);
    }
    tpl_program_sign_names(p);
    size_t nspans = get_count(&r, 16);
    if (r.bad) return corrupt(p, err, name, "truncated spans");
    tpl_locw sw = { 0 };
    uint32_t span_files = 0; /* the highest file index a span names + 1 (checked against nfiles below) */
    for (size_t i = 0, last = 0; i < nspans; i++) {
        uint32_t pc = get_u32(&r), line = get_u32(&r), col = get_u32(&r), file = get_u32(&r);
        if (pc > p->ncode || pc < last) { tpl_locw_free(&sw); return corrupt(p, err, name, "span table out of order"); }
        last = pc;
        if (!r.bad && file >= span_files) span_files = file + 1;
        tpl_locw_add(&sw, pc, file, line, col);
    }
    if (!tpl_locw_finish(&sw, p)) return load_nomem(p, err, name);
    p->nmacros = get_count(&r, 24);
    p->macros = tpl_arena_alloc(a, p->nmacros * sizeof *p->macros + 1);
    if (r.bad || !p->macros) return corrupt(p, err, name, "truncated macros");
    for (size_t i = 0; i < p->nmacros; i++) {
        tpl_macro_desc *d = &p->macros[i];
        d->entry = get_u32(&r);
        d->name = get_u32(&r);
        d->params = get_u32(&r);
        d->nparams = (uint16_t)get_u16(&r);
        d->nslots = (uint16_t)get_u16(&r);
        d->max_stack = (uint16_t)get_u16(&r);
        d->varargs_slot = (int16_t)get_u16(&r);
        d->kwargs_slot = (int16_t)get_u16(&r);
        d->caller_slot = (int16_t)get_u16(&r);
    }
    uint32_t nreads = get_count(&r, 4);
    if (r.bad) return corrupt(p, err, name, "truncated reads-set");
    uint32_t *reads = malloc(((size_t)nreads + 1) * sizeof *reads);
    if (!reads) return load_nomem(p, err, name);
    for (uint32_t i = 0; i < nreads; i++) reads[i] = get_u32(&r);
    p->nfiles = get_count(&r, 4);
    p->files = tpl_arena_alloc(a, p->nfiles * sizeof *p->files + 1);
    if (r.bad || !p->files) { free(reads); return corrupt(p, err, name, "truncated file names"); }
    for (size_t i = 0; i < p->nfiles; i++) {
        s = get_str(&r, a, &n);
        if (r.bad) { free(reads); return corrupt(p, err, name, "truncated file names"); }
        p->files[i] = tpl_v_str(s, n);
    }
    if (span_files > 1 && span_files > p->nfiles) { free(reads); return corrupt(p, err, name, "bad span file"); }
    if (flags & 1 && p->nfiles > 1) {
        p->file_srcs = tpl_arena_alloc(a, p->nfiles * sizeof *p->file_srcs);
        if (!p->file_srcs) { free(reads); return load_nomem(p, err, name); }
        p->file_srcs[0] = tpl_v_str("", 0);
        for (size_t i = 1; i < p->nfiles; i++) {
            s = get_str(&r, a, &n);
            if (r.bad) { free(reads); return corrupt(p, err, name, "truncated file sources"); }
            p->file_srcs[i] = tpl_v_str(s, n);
        }
    }
    size_t nreadlocs = get_count(&r, 16);
    if (r.bad) { free(reads); return corrupt(p, err, name, "truncated read locations"); }
    tpl_locw rw = { .reads = true };
    for (size_t i = 0, last = 0; i < nreadlocs; i++) {
        uint32_t pc = get_u32(&r), file = get_u32(&r), line = get_u32(&r), col = get_u32(&r);
        if (!r.bad && (pc >= p->ncode || file >= p->nfiles || (i && pc <= last))) {
            free(reads);
            tpl_locw_free(&rw);
            return corrupt(p, err, name, "bad read location");
        }
        last = pc;
        tpl_locw_add(&rw, pc, file, line, col);
    }
    if (!tpl_locw_finish(&rw, p)) { free(reads); return load_nomem(p, err, name); }
    if (r.bad || r.off != r.n) { free(reads); return corrupt(p, err, name, "trailing or missing bytes"); }

    char msg[256];
    tpl_error_kind vk = tpl_verify(p, msg, sizeof msg);
    if (vk == TPL_EK_NOMEM) { free(reads); return load_nomem(p, err, name); }
    if (vk != TPL_EK_NONE) { free(reads); return corrupt(p, err, name, msg); }
    tpl_program_closure_needs(p);
    /* the stored reads-set must be the one the code implies */
    size_t want = tpl_program_reads_idx(p, NULL, 0);
    bool same = want == nreads;
    if (same) {
        uint32_t *calc = malloc((want + 1) * sizeof *calc);
        if (!calc) { free(reads); return load_nomem(p, err, name); }
        tpl_program_reads_idx(p, calc, want);
        same = want == 0 || memcmp(calc, reads, want * sizeof *calc) == 0;
        free(calc);
    }
    free(reads);
    if (!same) return corrupt(p, err, name, "reads-set does not match the code");
    *out = p;
    return TPL_OK;
}

/* ------------------------------------------------------------------ static programs */

tpl_status tpl_program_load_static(const tpl_static_program *sp, tpl_program **out, tpl_error *err)
{
    if (out) *out = NULL;
    if (!out || !sp) {
        fill_error(err, TPL_EK_USAGE, NULL,
                   out ? "tpl_program_load_static: the program is NULL" : "tpl_program_load_static: out is NULL");
        return TPL_ERR_USAGE;
    }
    *out = NULL;
    /* (a file generated before builtins were named has no builtins table: regenerate it) */
    if (!sp || sp->magic != TPL_STATIC_MAGIC || sp->version != TPL_TPLB_VERSION || sp->syntax > TPL_SYNTAX_FMT ||
        sp->options > 127 || !sp->builtins || (!sp->code && sp->ncode)) {
        fill_error(err, TPL_EK_CORRUPT, sp && sp->name ? sp->name : NULL,
                   "not a tpl static program of this version (regenerate it with this tplc)");
        return TPL_ERR_CORRUPT;
    }
    tpl_program *p = calloc(1, sizeof *p);
    if (!p) return load_nomem(NULL, err, sp->name);
    tpl_arena_init(&p->arena, 0);
    p->static_data = true;
    p->opts.syntax = (tpl_syntax)sp->syntax;
    set_opt_bits(&p->opts, sp->options);
    /* the program never writes through these pointers (DESIGN.md §5: programs are immutable) */
    p->name = (char *)(sp->name ? sp->name : "<static>");
    p->source = (char *)(sp->source ? sp->source : "");
    p->source_len = sp->source ? sp->source_len : 0;
    p->source_hash = sp->source_hash;
    p->opts.lang = sp->lang && *sp->lang ? sp->lang : NULL;
    p->nslots = sp->nslots;
    p->max_stack = sp->max_stack;
    /* the code's builtin operands index sp->builtins: a copy with this library's ids */
    int16_t *bt_ids = tpl_arena_alloc(&p->arena, (sp->nbuiltins + 1) * sizeof *bt_ids);
    p->code = sp->ncode <= SIZE_MAX / sizeof *p->code - 1 ? tpl_arena_alloc(&p->arena, (sp->ncode + 1) * sizeof *p->code)
                                                          : NULL;
    if (!bt_ids || !p->code) return load_nomem(p, err, sp->name);
    for (size_t i = 0; i < sp->nbuiltins; i++) {
        const tpl_static_builtin *sb = &sp->builtins[i];
        char why[200], full[300];
        int id = sb->name ? builtin_named(sb->kind, sb->name, sb->len, why, sizeof why) : -1;
        if (id < 0) {
            snprintf(full, sizeof full, "invalid static program: %s", sb->name ? why : "a builtin without a name");
            fill_error(err, TPL_EK_CORRUPT, p->name, full);
            tpl_program_free(p);
            return TPL_ERR_CORRUPT;
        }
        bt_ids[i] = (int16_t)id;
    }
    if (sp->ncode) memcpy(p->code, sp->code, sp->ncode * sizeof *p->code);
    p->ncode = sp->ncode;
    each_builtin_operand(p->code, p->ncode, bt_resolve,
                         &(bt_load){ bt_ids, sp->nbuiltins > UINT32_MAX ? UINT32_MAX : (uint32_t)sp->nbuiltins });
    p->consts = (tpl_value *)(const void *)sp->consts;
    p->nconsts = sp->nconsts;
    /* the names: a copy with this library's builtin ids resolved (the generated table leaves them
     * 0), so GETATTR and LOAD_NAME never search the builtin table by string at render time */
    if (sp->nnames && !sp->names) return corrupt(p, err, p->name, "invalid static program: names missing");
    tpl_name *nms = sp->nnames <= SIZE_MAX / sizeof *nms ? tpl_arena_alloc(&p->arena, (sp->nnames + 1) * sizeof *nms) : NULL;
    if (!nms) return load_nomem(p, err, sp->name);
    for (size_t i = 0; i < sp->nnames; i++) {
        memcpy(&nms[i], &sp->names[i], sizeof nms[i]);
        if (nms[i].s.type == TPL_T_STR) tpl_name_resolve_hashed(&nms[i], nms[i].hash);
    }
    p->names = nms;
    p->nnames = sp->nnames;
    tpl_program_sign_names(p);
    p->spans = (tpl_span *)(const void *)sp->spans;
    p->nspans = sp->nspans;
    if (sp->nfiles) { /* the file names and sources (tpl_value strings over the generated text) */
        if (!sp->files || sp->nfiles > UINT32_MAX) return corrupt(p, err, p->name, "invalid static program: files missing");
        p->files = tpl_arena_alloc(&p->arena, sp->nfiles * sizeof *p->files);
        p->file_srcs = tpl_arena_alloc(&p->arena, sp->nfiles * sizeof *p->file_srcs);
        if (!p->files || !p->file_srcs) return load_nomem(p, err, sp->name);
        for (size_t i = 0; i < sp->nfiles; i++) {
            const tpl_static_file *f = &sp->files[i];
            if (!f->name || f->source_len > UINT32_MAX) return corrupt(p, err, p->name, "invalid static program: bad file");
            p->files[i] = tpl_v_str(f->name, strlen(f->name));
            p->file_srcs[i] = tpl_v_str(f->source ? f->source : "", f->source ? (uint32_t)f->source_len : 0);
        }
        p->nfiles = sp->nfiles;
    }
    for (size_t i = 0; i < p->nspans; i++)
        if (p->spans[i].file && p->spans[i].file >= p->nfiles)
            return corrupt(p, err, p->name, "invalid static program: bad span file");
    p->macros = (tpl_macro_desc *)(const void *)sp->macros;
    p->nmacros = sp->nmacros;
    p->native = sp->native;
    p->native_flags = sp->native ? sp->native_flags : 0;
    char msg[256];
    tpl_error_kind vk = tpl_verify(p, msg, sizeof msg);
    if (vk == TPL_EK_NOMEM) return load_nomem(p, err, sp->name);
    if (vk != TPL_EK_NONE) {
        char full[300];
        snprintf(full, sizeof full, "invalid static program: %s", msg);
        fill_error(err, TPL_EK_CORRUPT, p->name, full);
        tpl_program_free(p);
        return TPL_ERR_CORRUPT;
    }
    tpl_program_closure_needs(p);
    *out = p;
    return TPL_OK;
}

/* ------------------------------------------------------------------ C emission */

static void c_string(tpl_sb *b, const char *s, size_t n)
{
    tpl_sb_putc(b, '"');
    size_t col = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (col > 100) { tpl_sb_puts(b, "\"\n    \""); col = 0; }
        if (c == '"' || c == '\\') { tpl_sb_putc(b, '\\'); tpl_sb_putc(b, (char)c); col += 2; }
        else if (c == '\n') { tpl_sb_puts(b, "\\n"); col += 2; }
        else if (c >= 0x20 && c < 0x7f && c != '?') { tpl_sb_putc(b, (char)c); col++; }
        else { tpl_sb_printf(b, "\\%03o", c); col += 4; } /* octal: never swallows a following digit */
    }
    tpl_sb_putc(b, '"');
}

/* s inside a C block comment: a control byte (a newline, so no line splice either) becomes '_', and
 * so does a slash after a star (a template path holding star-slash must not end the comment). */
static void c_comment_text(tpl_sb *b, const char *s)
{
    for (char prev = 0; *s; prev = *s++) {
        unsigned char c = (unsigned char)*s;
        tpl_sb_putc(b, c < 0x20 || c == 0x7f || (c == '/' && prev == '*') ? '_' : (char)c);
    }
}

static void c_value(tpl_sb *b, const char *sym, const tpl_value *v, unsigned *id);

/* Defines the list of v as <sym>_lN and returns N. */
static unsigned c_list_def(tpl_sb *b, const char *sym, const tpl_value *v, unsigned *id)
{
    const tpl_list *l = v->u.list;
    /* nested lists first */
    unsigned *sub = calloc(l->len ? l->len : 1, sizeof *sub);
    for (uint32_t i = 0; sub && i < l->len; i++)
        if (l->items[i].type == TPL_T_LIST) sub[i] = c_list_def(b, sym, &l->items[i], id);
    unsigned me = (*id)++;
    tpl_sb_printf(b, "static const tpl_static_value %s_i%u[%u] = {\n", sym, me, l->len ? l->len : 1);
    for (uint32_t i = 0; i < l->len; i++) {
        tpl_sb_puts(b, "    ");
        if (l->items[i].type == TPL_T_LIST)
            tpl_sb_printf(b, "{ %u, %u, 0, %u, { .list = &%s_l%u } },\n", l->items[i].type, l->items[i].flags,
                          l->items[i].len, sym, sub ? sub[i] : 0);
        else {
            c_value(b, sym, &l->items[i], id);
            tpl_sb_puts(b, ",\n");
        }
    }
    if (!l->len) tpl_sb_puts(b, "    { 0 }\n");
    tpl_sb_puts(b, "};\n");
    tpl_sb_printf(b, "static const tpl_static_list %s_l%u = { %u, %u, %s_i%u };\n", sym, me, l->len, l->len, sym, me);
    free(sub);
    return me;
}

/* A string constant's text and index, ordered by text, then index. */
typedef struct const_text {
    const char *s;
    size_t len, i;
} const_text;

static int const_text_cmp(const void *x, const void *y)
{
    const const_text *a = x, *c = y;
    size_t n = a->len < c->len ? a->len : c->len;
    int r = n ? memcmp(a->s, c->s, n) : 0;
    if (r) return r;
    if (a->len != c->len) return a->len < c->len ? -1 : 1;
    return a->i < c->i ? -1 : a->i > c->i;
}

/* A scalar constant initializer. */
static void c_value(tpl_sb *b, const char *sym, const tpl_value *v, unsigned *id)
{
    (void)sym;
    (void)id;
    switch (v->type) {
    case TPL_T_STR:
    case TPL_T_BIGINT:
        tpl_sb_printf(b, "{ %u, %u, 0, %u, { .s = ", v->type, v->flags, v->len);
        c_string(b, v->u.s, v->len);
        tpl_sb_puts(b, " } }");
        break;
    case TPL_T_FLOAT: {
        uint64_t bits;
        memcpy(&bits, &v->u.f, sizeof bits);
        tpl_sb_printf(b, "{ %u, %u, 0, 0, { .i = (int64_t)0x%016llxull } }", v->type, v->flags, (unsigned long long)bits);
        break;
    }
    default:
        if (v->u.i == INT64_MIN) /* -9223372036854775808ll is the negation of a constant too large for long long */
            tpl_sb_printf(b, "{ %u, %u, 0, 0, { .i = (-9223372036854775807ll - 1) } }", v->type, v->flags);
        else
            tpl_sb_printf(b, "{ %u, %u, 0, 0, { .i = %lldll } }", v->type, v->flags, (long long)v->u.i);
        break;
    }
}

/* Whether s starts with prefix and ends with one of the suffixes. */
static bool pre_suf(const char *s, const char *prefix, const char *const *suf, size_t nsuf)
{
    size_t pl = strlen(prefix), n = strlen(s);
    if (strncmp(s, prefix, pl) != 0) return false;
    for (size_t i = 0; i < nsuf; i++) {
        size_t sl = strlen(suf[i]);
        if (n >= pl + sl && strcmp(s + n - sl, suf[i]) == 0) return true;
    }
    return false;
}

/* A symbol the generated file can define, so that it compiles and links (gcc and clang, -std=c11 or
 * the default gnu mode): a C identifier that is not a keyword (C11, C23 and GNU's asm/typeof), not
 * `main`, not reserved to the implementation (a leading `_`), not a macro or
 * type of the headers the file includes (stdio.h, stddef.h, stdint.h, stdbool.h, string.h) and not
 * in tpl's namespace (`tpl_`, `TPL_`; `tpl_view_`, the default symbols' prefix, is the host's).
 * The library's own functions and libc's are refused by `tplc compile`, which can look them up. */
static bool c_ident(const char *s)
{
    static const char *const keywords[] = {
        "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum",
        "extern", "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return",
        "short", "signed", "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void",
        "volatile", "while", "_Alignas", "_Alignof", "_Atomic", "_Bool", "_Complex", "_Generic", "_Imaginary",
        "_Noreturn", "_Static_assert", "_Thread_local",
        /* C23 and GNU C */
        "alignas", "alignof", "bool", "constexpr", "false", "nullptr", "static_assert", "thread_local", "true",
        "typeof", "typeof_unqual", "asm",
        /* not keywords, but taken: the program's entry, the included headers' macros and types, and
         * the system names gcc and clang predefine in gnu mode */
        "main", "FILE", "va_list", "NULL", "EOF", "BUFSIZ", "FILENAME_MAX", "FOPEN_MAX", "L_ctermid",
        "L_tmpnam", "P_tmpdir", "SEEK_CUR", "SEEK_END", "SEEK_SET", "SEEK_DATA", "SEEK_HOLE", "TMP_MAX",
        "offsetof", "stderr", "stdin", "stdout", "errno", "linux", "unix", "i386", "SIZE_MAX",
        "RENAME_NOREPLACE", "RENAME_EXCHANGE", "RENAME_WHITEOUT", "size_t", "ssize_t", "off_t", "off64_t",
        "fpos_t", "fpos64_t", "ptrdiff_t", "wchar_t", "wint_t", "max_align_t", "locale_t", "mbstate_t",
    };
    static const char *const limit_suffixes[] = { "_MAX", "_MIN", "_C", "_WIDTH" };
    if (!s || !*s || (*s >= '0' && *s <= '9') || *s == '_') return false;
    size_t n = 0;
    for (const char *c = s; *c; c++, n++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_'))
            return false;
    for (size_t i = 0; i < sizeof keywords / sizeof *keywords; i++)
        if (strcmp(s, keywords[i]) == 0) return false;
    static const char *const t_suffix[] = { "_t" };
    if (pre_suf(s, "int", t_suffix, 1) || pre_suf(s, "uint", t_suffix, 1)) return false; /* int8_t, uintptr_t, ... */
    if ((strncmp(s, "tpl_", 4) == 0 && strncmp(s, "tpl_view_", 9) != 0) || strncmp(s, "TPL_", 4) == 0) return false;
    /* stdint.h's and stddef.h's limit macros: INT8_MAX, UINT64_C, PTRDIFF_MIN, WCHAR_MAX, ... */
    static const char *const limit_prefixes[] = { "INT", "UINT", "PTRDIFF_", "SIG_ATOMIC_", "SIZE_", "WCHAR_", "WINT_" };
    for (size_t i = 0; i < sizeof limit_prefixes / sizeof *limit_prefixes; i++)
        if (pre_suf(s, limit_prefixes[i], limit_suffixes, sizeof limit_suffixes / sizeof *limit_suffixes)) return false;
    return true;
}

tpl_status tpl_program_emit_c(const tpl_program *p, const char *symbol, unsigned flags, char **out, size_t *len)
{
    if (out) *out = NULL;
    if (len) *len = 0;
    if (!p || !out || !len || !symbol) return TPL_ERR_USAGE;
    if (!c_ident(symbol)) return TPL_ERR_USAGE;
    const char *sym = symbol;
    bool with_source = !(flags & TPL_SAVE_STRIP_SOURCE) && p->source;
    tpl_sb b;
    tpl_sb_init(&b, NULL);
    bool native = flags & TPL_EMIT_NATIVE;
    tpl_sb_printf(&b, "/* Generated by tplc %s from ", TPL_VERSION_STRING);
    c_comment_text(&b, p->name ? p->name : "");
    tpl_sb_puts(&b, ": do not edit. */\n");
    if (native) {
        /* self-describing: what it came from and how (the header comment is deterministic) */
        static const char *const syn[] = { "jinja", "erb", "fmt" };
        tpl_sb_printf(&b, "/* native render (tpl_native.h) of source hash 0x%016llx, syntax %s, options",
                      (unsigned long long)p->source_hash, (unsigned)p->opts.syntax < 3 ? syn[p->opts.syntax] : "?");
        static const char *const bits[] = { "trim_blocks", "lstrip_blocks", "keep_trailing_newline", "strict", "tidy",
                                            "hf", "erb_self" };
        unsigned ob = opt_bits(&p->opts);
        bool any = false;
        for (unsigned i = 0; i < 7; i++)
            if (ob & (1u << i)) { tpl_sb_printf(&b, "%s%s", any ? ", " : " ", bits[i]); any = true; }
        if (!any) tpl_sb_puts(&b, " none");
        if (p->opts.lang) tpl_sb_printf(&b, ", lang %s", p->opts.lang);
        tpl_sb_printf(&b, "%s.\n * Build: cc -std=c11 -I<tpl include dir> -c; link with libtpl. */\n",
                      flags & TPL_SAVE_STRIP_SOURCE ? ", source stripped" : "");
        tpl_sb_puts(&b, "#include <tpl_native.h>\n\n");
    } else {
        tpl_sb_puts(&b, "#include <tpl_static.h>\n\n");
    }
    /* the builtins the code calls, by name, and the code with its builtin operands as indexes of
     * that table (as a .tplb: the loading library resolves the names, so builtins.def may change) */
    bt_save bt = { malloc(tpl_stdlib.nbuiltins * sizeof *bt.slot + 1), malloc(tpl_stdlib.nbuiltins * sizeof *bt.ids + 1), 0 };
    uint32_t *code = malloc(p->ncode * sizeof *code + 1);
    if (!bt.slot || !bt.ids || !code) { free(bt.slot); free(bt.ids); free(code); tpl_sb_free(&b); return TPL_ERR_NOMEM; }
    for (uint32_t i = 0; i < tpl_stdlib.nbuiltins; i++) bt.slot[i] = -1;
    if (p->ncode) memcpy(code, p->code, p->ncode * sizeof *code);
    each_builtin_operand(code, p->ncode, bt_assign, &bt);
    tpl_sb_printf(&b, "static const tpl_static_builtin %s_builtins[%u] = {\n", sym, bt.n ? bt.n : 1);
    for (uint32_t i = 0; i < bt.n; i++) {
        const tpl_builtin_info *bi = tpl_lib_builtin(bt.ids[i]);
        tpl_sb_printf(&b, "    { %u, %u, ", (unsigned)bi->kind, (unsigned)bi->namelen);
        c_string(&b, bi->name, bi->namelen);
        tpl_sb_printf(&b, " }, /* %s */\n", builtin_kind_names[bi->kind]);
    }
    if (!bt.n) tpl_sb_puts(&b, "    { 0, 0, 0 }\n");
    tpl_sb_puts(&b, "};\n");
    tpl_sb_printf(&b, "static const uint32_t %s_code[%zu] = {", sym, p->ncode ? p->ncode : 1);
    for (size_t i = 0; i < p->ncode; i++) tpl_sb_printf(&b, "%s0x%08x,", i % 8 ? " " : "\n    ", code[i]);
    tpl_sb_puts(&b, "\n};\n");
    uint32_t nbt = bt.n;
    free(bt.slot);
    free(bt.ids);
    free(code);
    unsigned id = 0;
    unsigned *lid = calloc(p->nconsts ? p->nconsts : 1, sizeof *lid);
    if (!lid) { tpl_sb_free(&b); return TPL_ERR_NOMEM; }
    for (size_t i = 0; i < p->nconsts; i++)
        if (p->consts[i].type == TPL_T_LIST) lid[i] = c_list_def(&b, sym, &p->consts[i], &id);
    /* a string constant with the text of an earlier one is another object in the program (the
     * compiler keeps a literal apart where Python's identity shows: 'ab'.upper == 'ab'.upper):
     * an array of its own, which the C compiler does not merge as it may merge string literals */
    bool *own = calloc(p->nconsts ? p->nconsts : 1, sizeof *own);
    const_text *ord = calloc(p->nconsts ? p->nconsts : 1, sizeof *ord);
    if (!own || !ord) { free(own); free(ord); free(lid); tpl_sb_free(&b); return TPL_ERR_NOMEM; }
    size_t nstr = 0;
    for (size_t i = 0; i < p->nconsts; i++)
        if (p->consts[i].type == TPL_T_STR) ord[nstr++] = (const_text){ p->consts[i].u.s, p->consts[i].len, i };
    if (nstr > 1) qsort(ord, nstr, sizeof *ord, const_text_cmp);
    for (size_t k = 1; k < nstr; k++) /* (the first of equal texts keeps the literal) */
        if (ord[k - 1].len == ord[k].len && (!ord[k].len || memcmp(ord[k - 1].s, ord[k].s, ord[k].len) == 0)) own[ord[k].i] = true;
    free(ord);
    for (size_t i = 0; i < p->nconsts; i++)
        if (own[i]) {
            tpl_sb_printf(&b, "static const char %s_s%zu[%u] = ", sym, i, p->consts[i].len + 1);
            c_string(&b, p->consts[i].u.s, p->consts[i].len);
            tpl_sb_puts(&b, ";\n");
        }
    tpl_sb_printf(&b, "static const tpl_static_value %s_consts[%zu] = {\n", sym, p->nconsts ? p->nconsts : 1);
    for (size_t i = 0; i < p->nconsts; i++) {
        tpl_sb_puts(&b, "    ");
        if (p->consts[i].type == TPL_T_LIST)
            tpl_sb_printf(&b, "{ %u, %u, 0, 0, { .list = &%s_l%u } }", p->consts[i].type, p->consts[i].flags, sym, lid[i]);
        else if (own[i])
            tpl_sb_printf(&b, "{ %u, %u, 0, %u, { .s = %s_s%zu } }", p->consts[i].type, p->consts[i].flags, p->consts[i].len,
                          sym, i);
        else
            c_value(&b, sym, &p->consts[i], &id);
        tpl_sb_puts(&b, ",\n");
    }
    if (!p->nconsts) tpl_sb_puts(&b, "    { 0 }\n");
    tpl_sb_puts(&b, "};\n");
    free(lid);
    free(own);
    tpl_sb_printf(&b, "static const tpl_static_name %s_names[%zu] = {\n", sym, p->nnames ? p->nnames : 1);
    for (size_t i = 0; i < p->nnames; i++) {
        tpl_sb_puts(&b, "    { ");
        c_value(&b, sym, &p->names[i].s, &id);
        tpl_sb_printf(&b, ", 0x%016llxull, { 0, 0, 0, 0 }, 0 },\n", (unsigned long long)p->names[i].hash);
    }
    if (!p->nnames) tpl_sb_puts(&b, "    { { 0 }, 0, { 0, 0, 0, 0 }, 0 }\n");
    tpl_sb_puts(&b, "};\n");
    tpl_sb_printf(&b, "static const tpl_static_span %s_spans[%zu] = {", sym, p->nspans ? p->nspans : 1);
    tpl_loc_it it;
    tpl_loc_it_init(&it, p);
    for (size_t i = 0; i < p->nspans; i++) {
        tpl_span sp = { 0, 0, 0, 0 };
        tpl_span_next(&it, &sp);
        tpl_sb_printf(&b, "%s{ %u, %u, %u, %u },", i % 4 ? " " : "\n    ", sp.pc, sp.line, sp.col, sp.file);
    }
    if (!p->nspans) tpl_sb_puts(&b, " { 0, 0, 0, 0 }");
    tpl_sb_puts(&b, "\n};\n");
    tpl_sb_printf(&b, "static const tpl_static_macro %s_macros[%zu] = {\n", sym, p->nmacros ? p->nmacros : 1);
    for (size_t i = 0; i < p->nmacros; i++) {
        const tpl_macro_desc *d = &p->macros[i];
        tpl_sb_printf(&b, "    { %u, %u, %u, %u, %u, %u, %d, %d, %d },\n", d->entry, d->name, d->params, d->nparams,
                      d->nslots, d->max_stack, d->varargs_slot, d->kwargs_slot, d->caller_slot);
    }
    if (!p->nmacros) tpl_sb_puts(&b, "    { 0, 0, 0, 0, 0, 0, 0, 0, 0 }\n");
    tpl_sb_puts(&b, "};\n");
    size_t nspecial = 0, nstep = 0;
    uint32_t nflags = 0;
    if (native && !tpl_emit_native(&b, p, sym, &nspecial, &nstep, &nflags)) { tpl_sb_free(&b); return TPL_ERR_NOMEM; }
    if (with_source) {
        tpl_sb_printf(&b, "static const char %s_source[] =\n    ", sym);
        c_string(&b, p->source, p->source_len);
        tpl_sb_puts(&b, ";\n");
    }
    if (p->nfiles > 1) { /* the templates its code came from (the spans' files) */
        tpl_sb_printf(&b, "static const tpl_static_file %s_files[%zu] = {\n    { ", sym, p->nfiles);
        c_string(&b, p->name, strlen(p->name));
        tpl_sb_puts(&b, ", 0, 0 },\n");
        for (size_t i = 1; i < p->nfiles; i++) {
            tpl_sb_puts(&b, "    { ");
            c_string(&b, p->files[i].u.s, p->files[i].len);
            if (with_source && p->file_srcs) {
                tpl_sb_puts(&b, ",\n      ");
                c_string(&b, p->file_srcs[i].u.s, p->file_srcs[i].len);
                tpl_sb_printf(&b, ", %u },\n", p->file_srcs[i].len);
            } else {
                tpl_sb_puts(&b, ", 0, 0 },\n");
            }
        }
        tpl_sb_puts(&b, "};\n");
    }
    tpl_sb_printf(&b, "\nconst struct tpl_static_program %s = {\n", sym);
    tpl_sb_printf(&b, "    TPL_STATIC_MAGIC, %u, %u, %u,\n    ", TPL_TPLB_VERSION, (unsigned)p->opts.syntax, opt_bits(&p->opts));
    c_string(&b, p->name, strlen(p->name));
    if (with_source) tpl_sb_printf(&b, ",\n    %s_source, %zu,\n", sym, p->source_len);
    else tpl_sb_puts(&b, ",\n    0, 0,\n");
    tpl_sb_printf(&b, "    0x%016llxull, %u, %u,\n", (unsigned long long)p->source_hash, p->nslots, p->max_stack);
    tpl_sb_printf(&b, "    %s_code, %zu, %s_consts, %zu, %s_names, %zu,\n", sym, p->ncode, sym, p->nconsts, sym, p->nnames);
    tpl_sb_printf(&b, "    %s_spans, %zu, %s_macros, %zu,\n    ", sym, p->nspans, sym, p->nmacros);
    if (p->opts.lang) c_string(&b, p->opts.lang, strlen(p->opts.lang));
    else tpl_sb_puts(&b, "0");
    if (native) tpl_sb_printf(&b, ",\n    %s_native,\n", sym);
    else tpl_sb_puts(&b, ",\n    0,\n");
    tpl_sb_printf(&b, "    %s_builtins, %u,\n", sym, nbt);
    /* (TPL_NATIVE_*: what the render needs of the runtime; written always: -Wextra warns of a
     * member left out of a positional initializer) */
    tpl_sb_printf(&b, "    0x%x, /* native_flags%s%s%s */\n", nflags, nflags ? ":" : "", nflags & TPL_NATIVE_DIRECT ? " direct" : "",
                  nflags & TPL_NATIVE_FRESH_SLOTS ? " fresh-slots" : "");
    if (p->nfiles > 1) tpl_sb_printf(&b, "    %s_files, %zu,\n", sym, p->nfiles);
    else tpl_sb_puts(&b, "    0, 0,\n");
    tpl_sb_puts(&b, "};\n");
    if (native)
        tpl_sb_printf(&b, "/* %zu instructions: %zu as C above, %zu through tpl_native_step */\n", nspecial + nstep,
                      nspecial, nstep);
    if (b.failed) { tpl_sb_free(&b); return TPL_ERR_NOMEM; }
    tpl_sb_putc(&b, 0);
    *out = b.p;
    *len = b.len - 1;
    return TPL_OK;
}

/* ------------------------------------------------------------------ queries */

size_t tpl_program_reads(const tpl_program *p, const char **names, size_t *lens, size_t cap)
{
    if (!p) return 0;
    size_t n = tpl_program_reads_idx(p, NULL, 0);
    uint32_t *idx = malloc((n + 1) * sizeof *idx);
    if (!idx) return 0;
    tpl_program_reads_idx(p, idx, n);
    for (size_t i = 0; i < n && i < cap; i++) {
        if (names) names[i] = p->names[idx[i]].s.u.s;
        if (lens) lens[i] = p->names[idx[i]].s.len;
    }
    free(idx);
    return n;
}

static bool name_is(const tpl_value *v, const char *s)
{
    size_t n = strlen(s);
    return v->type == TPL_T_STR && v->len == n && memcmp(v->u.s, s, n) == 0;
}

/* The attribute of `call` the instruction after pc reads (call.NAME, call['NAME'], call[:NAME],
 * Ruby call.NAME without arguments), or NULL: call is used some other way. */
static const tpl_value *call_attr(const tpl_program *p, size_t pc)
{
    size_t next = pc + 1 + (size_t)tpl_opinfo_table[TPL_INSN_OP(p->code[pc])].extra;
    if (next >= p->ncode) return NULL;
    uint32_t op = TPL_INSN_OP(p->code[next]), a = TPL_INSN_A(p->code[next]);
    if (op >= TPL_OP__COUNT || a >= p->nnames) return NULL;
    op = tpl_op_base(op);
    switch (op) {
    case TPL_OP_GETATTR: case TPL_OP_GETITEM_STR: case TPL_OP_GETITEM_STR_RB:
        return &p->names[a].s;
    case TPL_OP_CALL_METHOD_RB:
        if (next + 2 < p->ncode && p->code[next + 1] == TPL_ARGW(0, 0, TPL_NO_KW) && p->code[next + 2] == 0)
            return &p->names[a].s;
        return NULL;
    default:
        return NULL;
    }
}

size_t tpl_program_reads_located(const tpl_program *p, tpl_read *out, size_t cap)
{
    if (!p) return 0;
    if (!out) cap = 0;
    uint8_t *at = calloc(p->ncode + 1, 1);
    if (!at || !tpl_program_read_pcs(p, at)) { free(at); return 0; }
    size_t k = 0;
    tpl_loc_it it;
    tpl_loc_it_init(&it, p);
    tpl_readloc rl;
    bool more = tpl_readloc_next(&it, &rl);
    for (size_t pc = 0; pc < p->ncode;) {
        uint32_t op = TPL_INSN_OP(p->code[pc]), a = TPL_INSN_A(p->code[pc]);
        if (op >= TPL_OP__COUNT) break;
        size_t len = 1 + (size_t)tpl_opinfo_table[op].extra;
        op = tpl_op_base(op); /* a superinstruction reads what its base does */
        const tpl_value *name = NULL;
        tpl_read rd = { 0 };
        switch (op) {
        case TPL_OP_LOAD_NAME: case TPL_OP_LOAD_NAME_RB: case TPL_OP_LOAD_IVAR_RB: case TPL_OP_FMT_FIELD:
        case TPL_OP_CALL_NAME:
            if (at[pc] && a < p->nnames) name = &p->names[a].s;
            rd.kind = op == TPL_OP_CALL_NAME ? TPL_READ_FUNC : TPL_READ_STATE;
            break;
        case TPL_OP_LOAD_SLOT: case TPL_OP_LOAD_ROOT: case TPL_OP_LOAD_OUTER: case TPL_OP_LOAD_UP:
            if (at[pc] && pc + 1 < p->ncode && p->code[pc + 1] < p->nnames) name = &p->names[p->code[pc + 1]].s;
            rd.kind = TPL_READ_STATE;
            break;
        case TPL_OP_LOAD_GLOBAL: /* without context (imported macros): a builtin global or `call`, never the state */
            if (a < p->nnames) name = &p->names[a].s;
            rd.kind = name && name_is(name, "call") ? TPL_READ_CALL : TPL_READ_FUNC;
            break;
        case TPL_OP_HOST_CALL: case TPL_OP_HOST_FILTER: case TPL_OP_HOST_TEST:
            if (a < p->nconsts && p->consts[a].type == TPL_T_STR) name = &p->consts[a];
            rd.kind = TPL_READ_HOST;
            break;
        case TPL_OP_CALL_SELF_RB: /* (not in the reads-set: located by the span table) */
            if (a < p->nnames) name = &p->names[a].s;
            rd.kind = TPL_READ_SELF;
            break;
        default: break;
        }
        if (name) {
            rd.ivar = op == TPL_OP_LOAD_IVAR_RB;
            rd.fallback = op == TPL_OP_LOAD_SLOT || op == TPL_OP_LOAD_ROOT || op == TPL_OP_LOAD_OUTER || op == TPL_OP_LOAD_UP;
            rd.builtin = tpl_stdlib.find(TPL_BK_GLOBAL, name->u.s, name->len) >= 0;
            if (op != TPL_OP_LOAD_IVAR_RB && op != TPL_OP_FMT_FIELD && rd.kind == TPL_READ_STATE && name_is(name, "call"))
                rd.kind = TPL_READ_CALL;
            if (rd.kind == TPL_READ_CALL) {
                const tpl_value *attr = call_attr(p, pc);
                if (attr) { rd.attr = attr->u.s; rd.attr_len = attr->len; }
            }
            rd.name = name->u.s;
            rd.len = name->len;
            while (more && rl.pc < pc) more = tpl_readloc_next(&it, &rl);
            if (more && rl.pc == pc && rl.file < p->nfiles) {
                rd.file = p->files[rl.file].u.s;
                rd.line = rl.line;
                rd.column = rl.col;
            } else {
                uint32_t f;
                const char *fs;
                size_t fn;
                tpl_program_span(p, (uint32_t)pc, &rd.line, &rd.column, &f);
                rd.file = tpl_program_file(p, f, &fs, &fn);
            }
            if (k < cap) out[k] = rd;
            k++;
        }
        pc += len;
    }
    free(at);
    return k;
}

size_t tpl_program_deferred_errors(const tpl_program *p, tpl_diagnostic *out, size_t cap)
{
    if (!p) return 0;
    if (!out) cap = 0;
    size_t k = 0;
    for (size_t pc = 0; pc < p->ncode;) {
        uint32_t op = TPL_INSN_OP(p->code[pc]), a = TPL_INSN_A(p->code[pc]);
        if (op >= TPL_OP__COUNT) break;
        if (op == TPL_OP_FAIL && a < p->nconsts && p->consts[a].type == TPL_T_STR) {
            if (k < cap) {
                tpl_diagnostic *d = &out[k];
                *d = (tpl_diagnostic){ .severity = TPL_SEVERITY_ERROR, .file = p->name,
                                       .message = p->consts[a].u.s, .message_len = p->consts[a].len };
                d->status = tpl_error_kind_status(
                    tpl_fail_kind((tpl_syntax)p->opts.syntax, p->consts[a].u.s, p->consts[a].len));
                uint32_t f;
                const char *fs;
                size_t fn;
                tpl_program_span(p, (uint32_t)pc, &d->line, &d->column, &f);
                d->file = tpl_program_file(p, f, &fs, &fn);
            }
            k++;
        }
        pc += 1 + (size_t)tpl_opinfo_table[op].extra;
    }
    return k;
}

const tpl_options *tpl_program_options(const tpl_program *p) { return p ? &p->opts : NULL; }

uint64_t tpl_program_source_hash(const tpl_program *p) { return p ? p->source_hash : 0; }

const char *tpl_program_name(const tpl_program *p) { return p ? p->name : NULL; }
