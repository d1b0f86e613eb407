/* tpl — native programs: a template's bytecode turned into C (`tplc compile --emit c --native`).
 *
 * A native file defines the same `const struct tpl_static_program SYMBOL` as `--emit c` (the
 * bytecode twin: constants, names, spans, macros; reads, dependencies, disassembly and error
 * locations come from it) plus one C function that *is* the render: each instruction of the
 * bytecode becomes a few lines of C (constant text as literals, jumps as gotos, local slots
 * through a pointer, common operations inline), and every instruction the emitter does not
 * specialise calls tpl_native_step, which runs that one instruction exactly as the VM does. So
 * there is no unsupported subset: bytes, limits (fuel counted per instruction and charged at the
 * VM's points, depth, output, memory) and located errors are the VM's.
 *
 * A host loads the symbol with tpl_program_load_static whether the file is native or not (the
 * `native` member is the only difference), so switching is a build flag, not code.
 *
 * Everything here is used by generated code only; hosts need tpl.h. The layouts mirror the
 * runtime's (the library checks them with static assertions) and are an ABI of this version:
 * regenerate native files when tpl is upgraded (tpl_program_load_static checks the version). */
#ifndef TPL_NATIVE_H
#define TPL_NATIVE_H

#include <string.h>
#include "tpl_static.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A value: the runtime's 16-byte tpl_value (type, flags, aux, len, payload). */
typedef struct tpl_nvalue {
    uint8_t type, flags;
    uint16_t aux;
    uint32_t len;
    union {
        int64_t i;
        double f;
        const char *s;
        void *p;
    } u;
} tpl_nvalue;

/* A dict (a TPL_NT_MAP value's u.p): the leading members of the runtime's tpl_map and its
 * entries, which generated code scans for a string key (tpl_native_find). Read only. */
typedef struct tpl_nentry {
    tpl_nvalue key, val;
    uint64_t hash;              /* the key's hash (the names table's hash for a string key) */
} tpl_nentry;
typedef struct tpl_nmap {
    uint32_t len, cap;
    uint32_t idx_cap;           /* 0: no index (scan e[0..len)); else a power of two */
    bool eql;
    tpl_nentry *e;
    uint32_t *idx;              /* open addressing: entry index + 1, 0 = empty */
} tpl_nmap;

/* A list (a TPL_NT_LIST value's u.p): the runtime's tpl_list. Read only. A list value whose aux
 * is TPL_NLAZY_ITER or more is an iterator (the runtime's TPL_LAZY_GENERATOR and later). */
typedef struct tpl_nlist {
    uint32_t len, cap;
    tpl_nvalue *items;
} tpl_nlist;
enum { TPL_NLAZY_ITER = 5 };

/* A for loop's state (a TPL_NT_LOOP value's u.p): the leading members of the runtime's tpl_loop.
 * Generated code steps a loop over a list (src NULL) itself (tpl_native_for_step). */
typedef struct tpl_nloop {
    tpl_nlist *items;           /* the items */
    tpl_nlist *src;             /* an iterator the loop pulls from, or NULL */
    uint32_t i;                 /* items yielded so far */
    uint32_t len1;              /* loop.length + 1 once read, 0 before (the runtime sets it too) */
} tpl_nloop;

/* The value types generated code tests (the runtime's tpl_type). */
enum { TPL_NT_UNDEF = 0, TPL_NT_NONE = 1, TPL_NT_BOOL = 2, TPL_NT_INT = 3, TPL_NT_FLOAT = 4, TPL_NT_STR = 5,
       TPL_NT_LIST = 6, TPL_NT_MAP = 7, TPL_NT_LOOP = 10, TPL_NT_UNSET = 11 };

/* The string flags generated code tests (the runtime's TPL_F_*). */
enum { TPL_NF_SAFE = 1, TPL_NF_SYMBOL = 8, TPL_NF_RANGE_BIG = 8 /* on a list */,
       TPL_NF_REGEX_RB = 64, TPL_NF_CLASS_RB = 128 /* a Ruby Regexp / class: no String of its bytes */ };

/* The `loop` attributes tpl_native_loop_attr reads. */
enum { TPL_NLOOP_INDEX, TPL_NLOOP_INDEX0, TPL_NLOOP_FIRST, TPL_NLOOP_LAST, TPL_NLOOP_LENGTH };

/* One running call level of a native program (a template render, a macro call or a Ruby block):
 * built by the runtime for each entry into the native function, read and written by generated
 * code and the tpl_native_* helpers. Pointers borrow the render context's buffers; none may be
 * kept past the call. */
typedef struct tpl_native_frame {
    void *vm;                   /* the render context (runtime/vm_impl.h struct tpl_vm) */
    tpl_nvalue *stack;          /* this level's operand stack (its first value) */
    tpl_nvalue *slots;          /* this level's local slots */
    char **out;                 /* the render's output buffer, its length and capacity */
    size_t *out_len, *out_cap;
    uint64_t *fuel;             /* fuel left (charged with `ticks` at the VM's charge points) */
    tpl_nvalue *result;         /* where RETURN / RET_RB / HALT put the level's value */
    uint64_t ticks;             /* tpl_native_step: instructions run and not yet charged (in/out) */
    uint32_t pc, sp;            /* tpl_native_step: the next instruction and the stack depth there (out) */
    uint32_t slot_base, outer_base; /* the runtime's slot bases of this frame and its closure's */
    const tpl_nvalue *state;    /* the render's state (LOAD_NAME looks names up in it first) */
    uint32_t *hints;            /* TPL_NHINTS hints of tpl_native_find, the render context's: kept
                                 * across renders and call levels (a guess, compared before use) */
    /* TPL_NMEMO values found in the render's state, kept across renders while the state does not
     * change (the render context's; NULL when this level's state is not the one the host set):
     * [a] the state's key name a (LOAD_NAME), [nnames + k] what the k-th chain of attributes
     * from it (state.x.y: a GETATTR whose object came from LOAD_NAME or such a GETATTR) found.
     * An entry is NULL until found; every state setter and host value mutator (tpl.h) bumps the
     * context's state stamp, which empties them before the next render (runtime/vm.c). */
    const tpl_nvalue **memo;
    /* TPL_NKEPT answers of remembers("an ASCII constant") at the k-th such call, kept with the
     * memo (NULL when it is; the facts and the host's memory store are part of the stamp): 0
     * not known, else 1 | found << 1 | the fuel its fact scan charges << 2 (tpl_native_remembers_kept);
     * from the end down, the k-th name a CALL_NAME calls: whether the state has a key of that name
     * (1 | has << 1), so a call of a builtin skips that scan of the state too */
    uint64_t *kept;
} tpl_native_frame;

/* The number of hints a frame's `hints` holds: generated code uses hint (2 * name + kind) modulo
 * this (kind 0: the state, 1: another dict). */
enum { TPL_NHINTS = 256 };
/* The number of entries a frame's `memo` holds (generated code uses those below it only). */
enum { TPL_NMEMO = 256, TPL_NKEPT = 32 };

/* What a native render needs of the runtime (tpl_static_program's native_flags, decided by the
 * emitter; a file without them gets the full set-up):
 * - TPL_NATIVE_DIRECT: the code from entry 0 never runs an instruction through the VM (no
 *   tpl_native_step, no macro, no include: no call level but its own), so the runtime enters it
 *   straight from tpl_render_run with its frame on the C stack, without the interpreter's set-up
 *   of call levels (the limits, the output and the errors are the same);
 * - TPL_NATIVE_FRESH_SLOTS: it reads no local slot it did not store first in this render (every
 *   LOAD_SLOT stored on every path to it; loops in C locals), so the slots need no reset to unset. */
enum { TPL_NATIVE_DIRECT = 1, TPL_NATIVE_FRESH_SLOTS = 2 };

/* The function a native file defines: runs the program from instruction `entry` (0, a macro's
 * entry or a Ruby block's) with npre values already on the frame's stack. 0, or -1 with the
 * render's error set and located. */
typedef int (*tpl_native_fn)(tpl_native_frame *f, uint32_t entry, uint32_t npre);

/* Runs the instruction at pc with the VM's semantics (the VM may take a few following
 * instructions with it, as its fused paths do), with sp values on the stack and f->ticks
 * instructions not yet charged. Returns 1 with f->pc, f->sp and f->ticks set to where to go on;
 * 0 when the instruction ended the level (RETURN, RET_RB, HALT: *f->result set); -1 on an error
 * (set and located). f NULL or pc outside the code: -1 without an error (generated code never
 * does this). */
TPL_API int tpl_native_step(tpl_native_frame *f, uint32_t pc, uint32_t sp);
/* Runs the level from `entry` in the VM (the fallback for a function the emitter left to the
 * VM), after charging f->ticks (instructions the native code ran and did not charge; set it to
 * 0 at a function's start). Returns as tpl_native_fn. */
TPL_API int tpl_native_run_vm(tpl_native_frame *f, uint32_t entry, uint32_t npre);
/* Appends n bytes (s may be NULL when n is 0) to the output when the buffer must grow: the
 * output limit and out-of-memory errors are the VM's. 0, or -1 with an unlocated error (the
 * caller passes it to tpl_native_fail). */
TPL_API int tpl_native_put_slow(tpl_native_frame *f, const char *s, size_t n);
/* Locates the pending error at instruction pc (as the VM locates errors) and returns -1. */
TPL_API int tpl_native_fail(tpl_native_frame *f, uint32_t pc);
/* The fuel ran out at instruction pc: sets the VM's fuel error there and returns -1. */
TPL_API int tpl_native_out_of_fuel(tpl_native_frame *f, uint32_t pc);
/* LOAD_NAME of name index `name` (the state, then the builtin globals, else an undefined value)
 * into *out. 0, or -1 with an unlocated error. */
TPL_API int tpl_native_load_name(tpl_native_frame *f, uint32_t name, tpl_nvalue *out);
/* Python truthiness of *v: 1, 0, or -1 with an unlocated error (a strict undefined). */
TPL_API int tpl_native_truthy_py(tpl_native_frame *f, const tpl_nvalue *v);
/* EQ of *x and *y (the VM's `==`; NE negates it): 1, 0, or -1 with an unlocated error (a strict
 * undefined operand, a host object's comparison failing). */
TPL_API int tpl_native_equal(tpl_native_frame *f, const tpl_nvalue *x, const tpl_nvalue *y);
/* FOR_NEXT of the loop in slot `slot` of this level: 1 with the next item in *out, 0 when the
 * loop is done, -1 with an unlocated error (the slot holds no loop). */
TPL_API int tpl_native_for_next(tpl_native_frame *f, uint32_t slot, tpl_nvalue *out);
/* The value of key `name` (name index; its hash precomputed) in the dict *obj (a TPL_NT_MAP
 * value), or NULL when the key is missing (the caller then runs the instruction with
 * tpl_native_step, which makes the VM's undefined value or error). */
TPL_API const tpl_nvalue *tpl_native_map_get(tpl_native_frame *f, const tpl_nvalue *obj, uint32_t name);

/* The instructions generated code runs with the VM's own code for them, without a step (each
 * returns -1 with an unlocated error, which the caller passes to tpl_native_fail):
 * - tpl_native_filter: the FILTER, FILTER_PRINT or TEST at pc (its argument word not a spread
 *   one) on its arguments from `args` on (popped by the caller). 0 with the result in args[0];
 *   1 when a FILTER_PRINT printed the result itself (the PRINT_PY after it is then done too).
 * - tpl_native_getattr / tpl_native_getitem_str: obj.name / obj['name'] (name index) of *v, in
 *   place. 0.
 * - tpl_native_print_py / tpl_native_print_rb: PRINT_PY / PRINT_RB of *v (popped by the caller). 0.
 * - tpl_native_adds: the ADDS, PRINT_ADDS, ADDS_RB or PRINT_ADDS_RB at pc on its operands from
 *   `args` on (popped by the caller). 1 with the sum in args[0] (ADDS, ADDS_RB), 0 when printed.
 * - tpl_native_for_init: FOR_INIT of *v (popped by the caller) into slot `slot` of this level. 0.
 * - tpl_native_call_name: the CALL_NAME at pc (its argument word not a spread one; the fuel
 *   charged by the caller, as the VM charges at calls) on its arguments from `args` on (popped
 *   by the caller). 0 with the result in args[0]. */
TPL_API int tpl_native_filter(tpl_native_frame *f, uint32_t pc, tpl_nvalue *args);
TPL_API int tpl_native_getattr(tpl_native_frame *f, uint32_t name, tpl_nvalue *v);
TPL_API int tpl_native_getitem_str(tpl_native_frame *f, uint32_t name, tpl_nvalue *v);
TPL_API int tpl_native_print_py(tpl_native_frame *f, const tpl_nvalue *v);
TPL_API int tpl_native_print_rb(tpl_native_frame *f, const tpl_nvalue *v);
TPL_API int tpl_native_adds(tpl_native_frame *f, uint32_t pc, tpl_nvalue *args);
TPL_API int tpl_native_for_init(tpl_native_frame *f, uint32_t slot, const tpl_nvalue *v);
TPL_API int tpl_native_call_name(tpl_native_frame *f, uint32_t pc, tpl_nvalue *args);
/* tpl_native_call_name when the caller found that the render's state has no value of the name
 * (generated code looks once per call level: the state does not change during a render): the
 * builtin, without looking the name up. */
TPL_API int tpl_native_call_builtin(tpl_native_frame *f, uint32_t pc, tpl_nvalue *args);
/* tpl_native_call_builtin of `remembers(s)` when s is a string constant of n ASCII bytes (no NFC
 * form to make): the builtin's answer (a bool) in *out, without binding arguments. 0, or -1 with
 * an unlocated error (the fuel its fact scan charges ran out). */
TPL_API int tpl_native_remembers(tpl_native_frame *f, const char *s, uint32_t n, tpl_nvalue *out);
/* tpl_native_remembers, and when the answer holds until the facts or the memory store change
 * (no host memory store answered it), sets *kept (kept may be NULL) as tpl_native_frame's kept
 * says: generated code answers the call from it in later renders, charging the same fuel. */
TPL_API int tpl_native_remembers_kept(tpl_native_frame *f, const char *s, uint32_t n, tpl_nvalue *out, uint64_t *kept);
/* loop.index, loop.index0, loop.first, loop.last or loop.length (which: TPL_NLOOP_*) of the loop
 * value *v (type TPL_NT_LOOP), in place, as GETATTR computes it. 0, or -1 with an unlocated error
 * (*v no loop). */
TPL_API int tpl_native_loop_attr(tpl_native_frame *f, uint32_t which, tpl_nvalue *v);

/* Every function above given a NULL frame (or a NULL value pointer) returns -1 (NULL for
 * tpl_native_map_get) and does nothing else. */

/* Appends n bytes of s to the output (the fast path inline). 0 or -1 (unlocated error). */
static inline int tpl_native_put(tpl_native_frame *f, const char *s, size_t n)
{
    size_t len = *f->out_len;
    if (__builtin_expect(len + n < *f->out_cap, 1)) {
        if (n) memcpy(*f->out + len, s, n);
        *f->out_len = len + n;
        return 0;
    }
    return tpl_native_put_slow(f, s, n);
}

/* *d = *s as two 8-byte moves (the header: type, flags, aux, length; then the payload), never as
 * one 16-byte move: code reads a value's members right after copying it (a loop's item stored to
 * its slot, then its type and dict tested), and a CPU forwards a store to a later load that reads
 * part of it only when the load lies within one store (on some, within one 8-byte store): a copy
 * by one 16-byte store made each such read wait for the store to reach the cache. (The empty asm
 * keeps the C compiler from merging the two moves back into one.) */
static inline __attribute__((always_inline)) void tpl_native_set(tpl_nvalue *d, const tpl_nvalue *s)
{
    uint64_t h, u;
    memcpy(&h, s, 8);
    memcpy(&u, (const char *)s + 8, 8);
    __asm__("" : "+r"(h), "+r"(u));
    memcpy(d, &h, 8);
    memcpy((char *)d + 8, &u, 8);
}
/* D = S for two tpl_nvalue lvalues (generated code's copies), by tpl_native_set */
#define TPL_N_COPY(D, S) tpl_native_set(&(D), &(S))

/* Copies the n bytes at s to o (s may be NULL when n is 0; no overlap): up to 32 bytes inline
 * as overlapping loads and stores, as the VM's out_copy (a template's values are mostly short),
 * longer ones with memcpy. */
static inline __attribute__((always_inline)) void tpl_native_copy(char *o, const char *s, size_t n)
{
    if (n <= 16) {
        if (n >= 8) {
            uint64_t a, b;
            memcpy(&a, s, 8); memcpy(&b, s + n - 8, 8);
            memcpy(o, &a, 8); memcpy(o + n - 8, &b, 8);
        } else if (n >= 4) {
            uint32_t a, b;
            memcpy(&a, s, 4); memcpy(&b, s + n - 4, 4);
            memcpy(o, &a, 4); memcpy(o + n - 4, &b, 4);
        } else if (n) {
            char a = s[0], b = s[n / 2], c = s[n - 1];
            o[0] = a; o[n / 2] = b; o[n - 1] = c;
        }
    } else if (n <= 32) {
        uint64_t a, b, c, d;
        memcpy(&a, s, 8); memcpy(&b, s + 8, 8); memcpy(&c, s + n - 16, 8); memcpy(&d, s + n - 8, 8);
        memcpy(o, &a, 8); memcpy(o + 8, &b, 8); memcpy(o + n - 16, &c, 8); memcpy(o + n - 8, &d, 8);
    } else memcpy(o, s, n);
}

/* Whether the n bytes at a and b are equal (n a constant in generated code: the branches fold;
 * 4 to 16 bytes compare as two overlapping loads, as the runtime's tpl_mem_eq). */
static inline __attribute__((always_inline)) int tpl_native_eq(const char *a, const char *b, uint32_t n)
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
    if (n < 4) /* the first, middle and last byte cover 0 to 3 (`day`, `dob`: no memcmp call) */
        return n == 0 || (a[0] == b[0] && a[n >> 1] == b[n >> 1] && a[n - 1] == b[n - 1]);
    return memcmp(a, b, n) == 0;
}

/* Whether entry e has the string key s (n bytes, hash h). */
#define TPL_N_KEY(e, s, n, h) \
    ((e)->hash == (h) && (e)->key.type == TPL_NT_STR && (e)->key.len == (n) && tpl_native_eq((e)->key.u.s, (s), (n)))

/* The value of the string key s (n bytes, hash h: the names table's) in the dict *m (a
 * TPL_NT_MAP value), or NULL when it has no such key: the runtime's tpl_map_find_str, inline.
 * *hint (hint may be NULL) is where the key was last found (any value: a guess): tried first, and
 * set to where it is found (keys are distinct: an entry with the key is the one); *keep (keep may
 * be NULL) is set too when the hint missed (a copy of the hint that outlives the caller). */
static inline __attribute__((always_inline)) const tpl_nvalue *tpl_native_find(const tpl_nvalue *m, const char *s,
                                                                              uint32_t n, uint64_t h, uint32_t *hint,
                                                                              uint32_t *keep)
{
    const tpl_nmap *map = (const tpl_nmap *)m->u.p;
    const tpl_nentry *e;
    if (hint && *hint < map->len) { /* (a short key: its bytes compared without the hash first; a
                                      * Ruby class or Regexp key is no String of its name, as the
                                      * VM's map_find_name says: Hash[Array]'s entry is not h["Array"]) */
        e = &map->e[*hint];
        /* the key's type, flags, aux and length as one 8-byte compare (n a constant: with an
         * immediate): a plain string of n bytes; a key with flags (Markup) is left to the probe */
        const tpl_nvalue kh = { TPL_NT_STR, 0, 0, n, { 0 } };
        uint64_t ka, kb;
        memcpy(&ka, &e->key, sizeof ka);
        memcpy(&kb, &kh, sizeof kb);
        if ((n <= 16 || e->hash == h) && ka == kb && e->key.len == n && tpl_native_eq(e->key.u.s, s, n))
            return &e->val; /* (the length again: for the compiler's bounds analysis) */
    }
    if (!map->idx_cap) {
        if (!map->len) return NULL; /* e may be NULL */
        for (e = map->e; e < map->e + map->len; e++)
            if (TPL_N_KEY(e, s, n, h)) {
                if (hint) *hint = (uint32_t)(e - map->e);
                if (keep) *keep = (uint32_t)(e - map->e);
                return &e->val;
            }
        return NULL;
    }
    uint32_t mask = map->idx_cap - 1;
    for (uint32_t i = (uint32_t)h & mask;; i = (i + 1) & mask) {
        uint32_t slot = map->idx[i];
        if (!slot) return NULL;
        e = &map->e[slot - 1];
        if (TPL_N_KEY(e, s, n, h)) {
            if (hint) *hint = slot - 1;
            if (keep) *keep = slot - 1;
            return &e->val;
        }
    }
}

/* The decimal digits of u written at o (room for 20 bytes), two at a time from the right, as
 * the VM prints a non-negative int. Returns their number. */
static inline size_t tpl_native_decimal(char *o, uint64_t u)
{
    static const char pairs[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                                "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                                "8081828384858687888990919293949596979899";
    size_t nd = 1;
    if (u >= 10000) for (uint64_t t = u; t >= 10; t /= 10) nd++;
    else nd = u < 10 ? 1 : u < 100 ? 2 : u < 1000 ? 3 : 4;
    char *p = o + nd;
    while (u >= 100) {
        uint64_t r = u % 100;
        u /= 100;
        p -= 2;
        memcpy(p, pairs + 2 * r, 2);
    }
    if (u >= 10) memcpy(p - 2, pairs + 2 * u, 2);
    else p[-1] = (char)('0' + u);
    return nd;
}

/* Python's white space below 0x80 (str.isspace: \t..\r, \x1c..\x1f, ' '), by byte: 1 or 0. */
static const char tpl_native_ws[256] = "\0\0\0\0\0\0\0\0\0\1\1\1\1\1\0\0\0\0\0\0\0\0\0\0\0\0\0\0\1\1\1\1\1";

/* The `trim` filter's fast path on the string *v (no arguments), in place: when its ends are
 * ASCII, the white space Python's str.strip() removes taken off both ends. 1, or 0 (*v untouched)
 * when a byte at an end is not ASCII (it may start Unicode white space: the caller runs the
 * filter). The VM's own code for it (runtime/vm.c trim_ascii). */
static inline __attribute__((always_inline)) int tpl_native_trim(tpl_nvalue *v)
{
    const unsigned char *s0 = (const unsigned char *)v->u.s;
    size_t lo = 0, hi = v->len;
/* ' ', \t..\r and \x1c..\x1f: one load of the table a byte (fewer instructions a byte than a
 * range compare and a bit of a mask: w4's trims scan a few bytes at each end) */
#define TPL_N_WS_(b) (tpl_native_ws[(b)])
    while (hi > 0 && TPL_N_WS_(s0[hi - 1])) hi--;
    if (hi) {
        /* s0[hi - 1] is no white space: the scan from the start stops there at the latest */
        while (TPL_N_WS_(s0[lo])) lo++;
        if ((s0[lo] | s0[hi - 1]) >= 0x80) return 0;
    }
#undef TPL_N_WS_
    v->u.s += lo;
    v->len = (uint32_t)(hi - lo);
    v->flags &= TPL_NF_SAFE;
    return 1;
}

/* Python's upper() (or lower()) of the ASCII and Latin-1 letters of s[0..n) written at o (room
 * for n bytes), up to the first code point that needs the Unicode tables (or n): returns where it
 * stopped (o[0..that) written; n when all of s was). ASCII goes eight bytes a step. The VM's own
 * code for it (runtime/vm.h tpl_case_latin1: the filters upper / lower into the output, Ruby's
 * upcase / downcase), so `{{ s | upper }}` of a Latin-1 string goes straight into the output. */
static inline size_t tpl_native_case_latin1(char *o, const unsigned char *s, size_t n, bool upper)
{
    const uint64_t ones = 0x0101010101010101u, high = 0x8080808080808080u;
    const unsigned char lo = upper ? 'a' : 'A';
    size_t i = 0;
    for (;;) {
        for (; i + 8 <= n; i += 8) {
            uint64_t x;
            memcpy(&x, s + i, 8);
            if (x & high) break;
            /* high bit of each byte: at least lo, and above lo + 25 (no carry: bytes are < 0x80) */
            uint64_t in = (x + (0x80u - lo) * ones) & ~(x + (0x80u - lo - 26) * ones) & high;
            x = upper ? x - (in >> 2) : x + (in >> 2);
            memcpy(o + i, &x, 8);
        }
        if (i < n && i + 8 > n && n >= 8) {
            /* the last 1-7 bytes as the word of the last 8 (those before i mapped again from s:
             * the same bytes), when that word is ASCII */
            uint64_t x;
            memcpy(&x, s + n - 8, 8);
            if (!(x & high)) {
                uint64_t in = (x + (0x80u - lo) * ones) & ~(x + (0x80u - lo - 26) * ones) & high;
                x = upper ? x - (in >> 2) : x + (in >> 2);
                memcpy(o + n - 8, &x, 8);
                return n;
            }
        }
        for (; i < n && s[i] < 0x80; i++)
            o[i] = (char)(s[i] >= lo && s[i] <= lo + 25 ? (upper ? s[i] - 32 : s[i] + 32) : s[i]);
        if (i + 1 >= n || s[i] != 0xC3) return i;
        /* U+00C0..U+00FF (C3 80..C3 BF): the letters map by 0x20 within the lead byte; the signs
         * (C3 97, C3 B7) stay; U+00DF (sharp s) and U+00FF (y diaeresis) leave Latin-1 upper */
        unsigned char t = s[i + 1];
        if (t < 0x80 || t > 0xBF || (upper && (t == 0x9F || t == 0xBF))) return i;
        bool map = upper ? t >= 0xA0 && t <= 0xBE && t != 0xB7 : t >= 0x80 && t <= 0x9E && t != 0x97;
        o[i] = (char)0xC3;
        o[i + 1] = (char)(map ? (upper ? t - 0x20 : t + 0x20) : t);
        i += 2;
    }
}

/* `{{ xs | join(sep) }}` of a list of strings (*l a TPL_NT_LIST value, no iterator; sep dl bytes)
 * written at o when it fits in room bytes, as the VM's: the bytes written, or (size_t)-1 when it
 * does not apply (an item no string, no room: the caller runs the filter). */
static inline size_t tpl_native_join_put(char *o, size_t room, const tpl_nvalue *l, const char *sep, size_t dl)
{
    const tpl_nlist *list = (const tpl_nlist *)l->u.p;
    if ((l->flags & TPL_NF_RANGE_BIG) || l->aux) return (size_t)-1; /* a range held without its items, a dict view (live: the VM syncs it) */
    size_t total = list->len ? dl * (list->len - 1) : 0;
    for (uint32_t i = 0; i < list->len; i++) {
        if (list->items[i].type != TPL_NT_STR) return (size_t)-1;
        total += list->items[i].len;
    }
    if (total >= room) return (size_t)-1;
    char *p = o;
    for (uint32_t i = 0; i < list->len; i++) {
        if (i && dl) { memcpy(p, sep, dl); p += dl; }
        if (list->items[i].len) { memcpy(p, list->items[i].u.s, list->items[i].len); p += list->items[i].len; }
    }
    return total;
}

/* FOR_NEXT of the loop value *lv when it loops over a list: 1 with the next item in *out, 0 when
 * the loop is done, -1 when it does not apply (no loop value, an iterator's loop: the caller
 * calls tpl_native_for_next). */
static inline __attribute__((always_inline)) int tpl_native_for_step(tpl_nvalue *lv, tpl_nvalue *out)
{
    if (lv->type != TPL_NT_LOOP) return -1;
    tpl_nloop *l = (tpl_nloop *)lv->u.p;
    if (l->src) return -1;
    if (l->i >= l->items->len) return 0;
    tpl_native_set(out, &l->items->items[l->i++]);
    return 1;
}

/* tpl_native_for_step without the copy: 1 with *out pointing at the next item (in the list: valid
 * until something changes the list), 0 when the loop is done, -1 when it does not apply. */
static inline __attribute__((always_inline)) int tpl_native_for_ref(tpl_nvalue *lv, const tpl_nvalue **out)
{
    if (lv->type != TPL_NT_LOOP) return -1;
    tpl_nloop *l = (tpl_nloop *)lv->u.p;
    if (l->src) return -1;
    if (l->i >= l->items->len) return 0;
    *out = &l->items->items[l->i++];
    return 1;
}

/* A string that prints as its bytes in a `+` chain (no Markup, no Ruby symbol). */
#define TPL_N_PLAIN(v) ((v).type == TPL_NT_STR && !((v).flags & (TPL_NF_SAFE | TPL_NF_SYMBOL)))

/* Python truthiness of *v for the types whose answer is in the value (none, bool, int, string,
 * list, dict), as the VM's tpl_truthy_py: 1 or 0; -1 when the VM must answer (tpl_native_truthy_py:
 * an undefined value, which may be strict, a float, a big int, a host object...). */
static inline __attribute__((always_inline)) int tpl_native_truthy(const tpl_nvalue *v)
{
    /* (tests, not a switch: a jump table costs more than the bool test most conditions need) */
    if (v->type == TPL_NT_BOOL || v->type == TPL_NT_INT) return v->u.i != 0;
    if (v->type == TPL_NT_STR) return v->len != 0;
    if (v->type == TPL_NT_MAP) return ((const tpl_nmap *)v->u.p)->len != 0;
    if (v->type == TPL_NT_LIST) /* an iterator, a big range: true; a dict view or a range: the VM's answer (a view is live) */
        return v->aux >= TPL_NLAZY_ITER || (v->flags & TPL_NF_RANGE_BIG) ? 1 : v->aux ? -1 : ((const tpl_nlist *)v->u.p)->len != 0;
    return v->type == TPL_NT_NONE ? 0 : -1;
}

/* Ruby truthiness: only nil and false (and an undefined value) are false. */
static inline __attribute__((always_inline)) int tpl_native_truthy_rb(const tpl_nvalue *v)
{
    return !(v->type == TPL_NT_NONE || (v->type == TPL_NT_BOOL && !v->u.i) || v->type == TPL_NT_UNDEF);
}

/* A value of type `type` with payload i (flags, aux and length 0). Every member is set (the
 * struct has no padding), so the C compiler builds it in registers: a memset of a copy on the
 * stack and byte stores into it made the 16-byte reload of that copy wait (a failed store-to-load
 * forward, in every EQ, remembers() and loop attribute result). */
static inline tpl_nvalue tpl_native_v(uint8_t type, int64_t i)
{
    tpl_nvalue v = { type, 0, 0, 0, { i } };
    return v;
}

/* Generated code's vocabulary: each function keeps `f` (the frame), `sp` (next free stack
 * value), `T` (instructions not yet charged), `pc` (for the dispatch switch), `rc`, and the
 * output in locals: `ob` (the buffer), `ol` (its length: the frame's *f->out_len is stale while
 * the code runs) and `oc` (its capacity). The length is written back before every call that can
 * print or fail and before every return, and the three are read again after such a call. */
#define TPL_N_OUT_SAVE() (*f->out_len = ol)
#define TPL_N_OUT_LOAD() (ob = *f->out, ol = *f->out_len, oc = *f->out_cap)
/* the call X (an int), with the output written back before it and read again after it */
#define TPL_N_C(X) (TPL_N_OUT_SAVE(), rc = (X), TPL_N_OUT_LOAD(), rc)
#define TPL_N_FAIL(PC) return (TPL_N_OUT_SAVE(), tpl_native_fail(f, (PC)))
/* charges the instructions run so far to the fuel (the VM's backward jumps, calls, ends) */
#define TPL_N_CHARGE(PC) do { \
        if (__builtin_expect(T > *f->fuel, 0)) return (TPL_N_OUT_SAVE(), tpl_native_out_of_fuel(f, (PC))); \
        *f->fuel -= T; T = 0; } while (0)
/* the instruction at PC through the VM; falls through when it went on at NEXT */
#define TPL_N_STEP(PC, NEXT) do { \
        f->ticks = T; \
        TPL_N_OUT_SAVE(); \
        rc = tpl_native_step(f, (PC), (uint32_t)(sp - f->stack)); \
        if (rc <= 0) return rc; \
        TPL_N_OUT_LOAD(); \
        T = f->ticks; sp = f->stack + f->sp; \
        if (f->pc != (NEXT)) { pc = f->pc; goto dispatch; } } while (0)
/* appends the N bytes at S (N a constant > 0: the copy inlines) */
#define TPL_N_TEXT(PC, S, N) do { \
        if (__builtin_expect(ol + (N) < oc, 1)) { memcpy(ob + ol, (S), (N)); ol += (N); } \
        else if (TPL_N_C(tpl_native_put_slow(f, (S), (N))) < 0) TPL_N_FAIL(PC); } while (0)
/* appends the N bytes at S (any N; S may be NULL when N is 0) */
#define TPL_N_PUT(PC, S, N) do { \
        size_t n_ = (N); \
        if (__builtin_expect(ol + n_ < oc, 1)) { tpl_native_copy(ob + ol, (S), n_); ol += n_; } \
        else if (TPL_N_C(tpl_native_put_slow(f, (S), n_)) < 0) TPL_N_FAIL(PC); } while (0)

#ifdef __cplusplus
}
#endif
#endif
