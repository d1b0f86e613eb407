/* The compiled program: immutable after compilation, shareable across threads. */
#ifndef TPL_PROGRAM_H
#define TPL_PROGRAM_H

#include "value.h"
#include "../include/tpl.h"

struct tpl_native_frame;
struct tpl_subcache;
/* tpl_compile's signature: how a render compiles a template it loads by a name computed when it
 * runs (issue 14: {% include name %}); the runtime calls it through a pointer (it may not call
 * the compiler, a layer above it). */
typedef tpl_status (*tpl_compile_fn)(const char *name, const char *src, size_t len, const tpl_options *opts,
                                     const char *ext_parent, size_t ext_parent_len, tpl_program **out, tpl_error *err);
/* Facts about an opcode (the flags column of opcodes.def, which explains each). */
enum {
    TPL_OPF_GOTO = 1 << 0,       /* always jumps */
    TPL_OPF_END = 1 << 1,        /* ends its function */
    TPL_OPF_KEEP = 1 << 2,       /* the taken jump keeps the tested value */
    TPL_OPF_LOOP = 1 << 3,       /* the taken jump pushes no item */
    TPL_OPF_ROOT = 1 << 4,       /* slot operands: the template level's */
    TPL_OPF_OUTER = 1 << 5,      /* slot operands: the closure's defining frame's */
    TPL_OPF_READ = 1 << 6,       /* reads state name A */
    TPL_OPF_READ_UNSET = 1 << 7, /* reads the name in word 1 when slot A is unset */
    TPL_OPF_STORE = 1 << 8,      /* stores slot A */
    TPL_OPF_SLOT16 = 1 << 9,     /* the slot is A & 0xFFFF */
    TPL_OPF_FUSED = 1 << 10,     /* a superinstruction (TPL_FUSED row): base + successors */
};

typedef enum tpl_opcode {
#define TPL_OP(name, extra, fmt, pops, pushes, flags, doc) TPL_OP_##name,
#define TPL_FUSED(name, base, doc, ...) TPL_OP_##name,
#include "opcodes.def"
#undef TPL_OP
#undef TPL_FUSED
    TPL_OP__COUNT
} tpl_opcode;

typedef struct tpl_opinfo {
    const char *name;
    uint8_t extra;        /* operand words after the instruction word */
    const char *fmt;
    int8_t pops, pushes;  /* -1: depends on the operand */
    uint16_t flags;       /* TPL_OPF_* */
    uint8_t base;         /* the opcode whose semantics it has (itself, or a superinstruction's base) */
    const uint16_t *succ; /* a superinstruction's successors (TPL_SUCC_*-tagged opcodes, ending
                           * with TPL_SUCC_END), else NULL */
    const char *next;     /* the same, as written in opcodes.def (messages), else NULL */
    const char *doc;
} tpl_opinfo;

extern const tpl_opinfo tpl_opinfo_table[TPL_OP__COUNT];

/* A superinstruction's successor entry: an opcode, TPL_SUCC_OR (an alternative at the same
 * position as the entry before), TPL_SUCC_SAME (with the fused instruction's A operand). */
enum { TPL_SUCC_OR = 0x100, TPL_SUCC_SAME = 0x200, TPL_SUCC_END = 0xFFFF };

/* The opcode whose semantics op has: op itself, or a superinstruction's base. Analyses that ask
 * what an instruction does (reads, stores, captures) switch on this, never on a fused opcode. */
static inline uint32_t tpl_op_base(uint32_t op) { return tpl_opinfo_table[op].base; }
/* Whether the instructions after pc (code[0..n)) are the successors superinstruction `op`
 * requires (its opinfo's `next`; a successor may itself be fused over the opcode named), A being
 * the fused instruction's operand. (runtime/program.c; the verifier checks by it; the
 * peephole pass, compiler/peephole.c, matches the same way, fusing successors first.) */
bool tpl_op_successors_match(uint32_t op, const uint32_t *code, size_t n, size_t pc);
/* A successor of a superinstruction about to be matched at code[at] (opcode op): the opcode to
 * match there, after fusing it into a superinstruction when the caller does (the peephole pass). */
typedef uint32_t (*tpl_succ_fuse)(void *ctx, size_t at, uint32_t op);

#define TPL_INSN(op, a) ((uint32_t)(op) | ((uint32_t)(a) << 8))
#define TPL_INSN_OP(w) ((w) & 0xFF)
#define TPL_INSN_A(w) ((w) >> 8)
/* The walk behind tpl_op_successors_match: fuse (NULL: none) is called on each successor before
 * it is compared; a position's alternatives match the opcode named or a superinstruction over
 * it, with the fused instruction's operand where TPL_SUCC_SAME. */
static inline bool tpl_op_successors_walk(uint32_t op, const uint32_t *code, size_t n, size_t pc,
                                          tpl_succ_fuse fuse, void *ctx)
{
    const tpl_opinfo *oi = &tpl_opinfo_table[op];
    if (!oi->succ) return false;
    uint32_t a = TPL_INSN_A(code[pc]);
    size_t at = pc + 1 + oi->extra;
    for (const uint16_t *s = oi->succ; *s != TPL_SUCC_END;) {
        if (at >= n) return false;
        uint32_t got = TPL_INSN_OP(code[at]);
        if (got >= TPL_OP__COUNT) return false;
        if (fuse) got = fuse(ctx, at, got);
        uint32_t gb = tpl_op_base(got);
        bool hit = false;
        do {
            uint32_t want = *s & 0xFF;
            hit = hit || ((got == want || gb == want) && (!(*s & TPL_SUCC_SAME) || TPL_INSN_A(code[at]) == a));
            s++;
        } while (*s != TPL_SUCC_END && (*s & TPL_SUCC_OR));
        if (!hit) return false;
        at += 1 + tpl_opinfo_table[got].extra;
    }
    return true;
}
/* Call-argument word: positional count, keyword count, kwnames constant (0xFFFF = none). */
#define TPL_ARGW(npos, nkw, k) ((uint32_t)(npos) | ((uint32_t)(nkw) << 8) | ((uint32_t)(k) << 16))
#define TPL_ARGW_NPOS(w) ((w) & 0xFF)
#define TPL_ARGW_NKW(w) (((w) >> 8) & 0xFF)
#define TPL_ARGW_K(w) ((w) >> 16)
#define TPL_NO_KW 0xFFFF
/* kwnames TPL_ARGW_DYN (with npos 2, nkw 0): a call with *args / **kwargs; the two values are the
 * positional list and the keyword dict ARGS_STAR / ARGS_DSTAR built, spread into the call's
 * arguments when it runs */
#define TPL_ARGW_DYN 0xFFFE
/* The most operands a PRINT_ADDS_K chain has (its constant tuple's length; the VM gathers them
 * on the C stack when they are not all plain strings). */
#define TPL_ADDS_K_MAX 32
/* Flag of a PRINT_ADDS_K tuple's item 1, a None (no meaning for None elsewhere): the items
 * alternate literal, value, literal, ..., literal (2A + 1 of them), so the VM copies them in
 * pairs without testing each item's kind (the compiler's; the verifier checks it). */
#define TPL_F_ADDS_ALT 1

/* A name with its precomputed hash (state lookups and attribute access) and the builtins it
 * names, resolved once at compile time so the VM never searches the builtin table by string:
 * bk[0..2] = the str / dict / list method of that name, global = the global function, each a
 * builtin id or -1. Valid only when `resolved` (tpl_name_resolve); a zero-initialised name
 * falls back to tpl_builtin_find. */
typedef struct tpl_name {
    tpl_value s;
    uint64_t hash;
    int16_t bk[3];
    int16_t global;
    bool resolved;
} tpl_name;

/* Fills the hash and the builtin ids of a name whose string `s` is set. */
void tpl_name_resolve(tpl_name *nm);
/* The same with the hash already known (tpl_hash_str of the string). */
void tpl_name_resolve_hashed(tpl_name *nm, uint64_t hash);
/* Sets p->names_sig from its names (each set and resolved): programs whose names are the same
 * strings in the same order get the same signature. */
struct tpl_program;
void tpl_program_sign_names(struct tpl_program *p);

/* One run of the span table: instructions from pc on come from line:col of file (an index of
 * tpl_program.files: 0 the template itself, k the k-th template its compile loaded, whose code
 * an include, import or extends put in this program). */
typedef struct tpl_span {
    uint32_t pc, line, col, file;
} tpl_span;

/* A macro: entry point, parameter names (constant index of a tuple), slots. */
typedef struct tpl_macro_desc {
    uint32_t entry;        /* code offset of the first instruction */
    uint32_t name;         /* name index */
    uint32_t params;       /* constant index: tuple of parameter names */
    uint16_t nparams;
    uint16_t nslots;       /* slots of the macro's frame (params first) */
    uint16_t max_stack;
    int16_t varargs_slot;  /* slot of `varargs` or -1 */
    int16_t kwargs_slot;   /* slot of `kwargs` or -1 */
    int16_t caller_slot;   /* slot of `caller` or -1 */
} tpl_macro_desc;

/* A tr() call found at compile time (tplc lint, tplc tr-extract): its source offset and the
 * constant index of its literal text, or -1 when the text is not a literal. Jinja's gettext
 * calls ({% trans %} blocks compile to them) are recorded too: fn says which function
 * (TPL_TRFN_*), plural and ctx are constant indexes of the msgid_plural and msgctxt literals
 * (-1: none, or not a literal). */
enum { TPL_TRFN_TR = 0, TPL_TRFN_GETTEXT, TPL_TRFN_UNDERSCORE, TPL_TRFN_NGETTEXT, TPL_TRFN_PGETTEXT,
       TPL_TRFN_NPGETTEXT };
typedef struct tpl_trcall {
    uint32_t off;
    int32_t k;
    int32_t plural, ctx;
    uint8_t fn;
} tpl_trcall;

/* Where a read instruction is (tpl_program_reads_located): its code offset, the file it comes
 * from (an index of tpl_program.files) and its 1-based line and column (code points) there. */
typedef struct tpl_readloc {
    uint32_t pc, file, line, col;
} tpl_readloc;

/* The span table and the read locations of a compiled or loaded program are kept compact
 * (issue 13 §1: at 12 bytes a run and 16 a read location they were most of a tag-heavy
 * template's program): a byte string of entries (malloc'd, freed with the program), each
 * relative to the one before it, in unsigned LEB128 varints: the pc's increase with two flags
 * (the file changed, the line changed), the file index when it changed,
 * the line's change (zigzag) when it changed, and the column (the column itself after a line
 * change, else its change, zigzag): two bytes for most entries. Every TPL_SPAN_MARK-th span run is a mark too (its values and the byte offset after
 * it), so tpl_program_span decodes at most TPL_SPAN_MARK runs. tpl_locw builds either table;
 * tpl_span_it and tpl_readloc_it read them back. Static programs keep the span table as the
 * array tpl_static_program gives (tpl_program.spans; spanb is NULL then). */
#define TPL_SPAN_MARK 32
typedef struct tpl_span_mark {
    uint32_t pc, line, col, off, file;
} tpl_span_mark;

/* A builder of a compact table (reads = false: span runs; true: read locations). Add entries
 * in pc order with tpl_locw_add (an entry at the pc of the one before replaces it; a span run
 * with the line and column of the one before is dropped), then tpl_locw_finish moves the table
 * into p's arena (false when out of memory; the builder is freed either way). */
typedef struct tpl_locw {
    tpl_budget *budget;      /* charged for the bytes (a compile's memory limit; NULL: none) */
    bool reads, failed, has_pend;
    uint8_t *b;
    size_t n, cap;
    tpl_span_mark *marks;
    size_t nmarks, mcap, count;
    tpl_readloc prev, pend;  /* the last entry written; the one not yet written */
} tpl_locw;
/* Writes the pending entry (tpl_locw_add's slow path). */
void tpl_locw_flush(tpl_locw *w);
/* Inline: the compiler adds an entry for most instructions it emits (issue 21, compile time). */
static inline void tpl_locw_add(tpl_locw *w, uint32_t pc, uint32_t file, uint32_t line, uint32_t col)
{
    if (w->failed) return;
    if (w->has_pend) {
        if (!w->reads && w->pend.line == line && w->pend.col == col && w->pend.file == file) return;
        if (w->pend.pc == pc) {
            w->pend.file = file;
            w->pend.line = line;
            w->pend.col = col;
            return;
        }
        tpl_locw_flush(w);
    } else if (!w->reads && w->count && w->prev.line == line && w->prev.col == col && w->prev.file == file) {
        return;
    }
    w->pend = (tpl_readloc){ pc, file, line, col };
    w->has_pend = true;
}
bool tpl_locw_finish(tpl_locw *w, tpl_program *p);
void tpl_locw_free(tpl_locw *w);

/* Iterates a program's span runs (tpl_span_next) or read locations (tpl_readloc_next) in pc
 * order. */
typedef struct tpl_loc_it {
    const tpl_program *p;
    size_t off, i;
    tpl_readloc cur;
} tpl_loc_it;
void tpl_loc_it_init(tpl_loc_it *it, const tpl_program *p);
bool tpl_span_next(tpl_loc_it *it, tpl_span *out);
bool tpl_readloc_next(tpl_loc_it *it, tpl_readloc *out);

struct tpl_program {
    tpl_options opts;
    char *name;            /* file name for diagnostics */
    char *source;          /* normalised source (for source lines in diagnostics) */
    size_t source_len;
    bool source_ascii;     /* tpl_compile: the source is all ASCII (spares the compiler a scan) */
    uint32_t *code;        /* in the arena, or malloc'd (code_heap: tpl_compile hands its buffer over) */
    size_t ncode;
    bool code_heap;
    tpl_value *consts;
    size_t nconsts;
    tpl_name *names;
    size_t nnames;
    uint64_t names_sig;    /* the names' strings summed (tpl_program_sign_names; never 0), or 0: not
                            * signed (a render context keeps no lookups of its names from one
                            * render to the next: vm_impl.h name_hit_sig) */
    tpl_span *spans;       /* static programs only: the span runs as an array */
    size_t nspans;         /* span runs */
    uint8_t *spanb;        /* compiled and loaded programs: the span runs, compact */
    size_t nspanb;
    tpl_span_mark *spanm;  /* and their marks */
    size_t nspanm;
    tpl_macro_desc *macros;
    size_t nmacros;
    /* Per macro, the slots its closure (or a macro made while it runs) reads from the frame the
     * closure was made in (verify.h tpl_program_closure_needs): macro m's are cl_need[cl_need_off[m]
     * .. cl_need_off[m + 1]), ascending, each a slot of the defining frame or, | 0x80000000, of its
     * template level; NULL: not known (a closure keeps its whole frame). */
    const uint32_t *cl_need_off;
    const uint32_t *cl_need;
    uint32_t nslots;       /* template-level slots */
    uint32_t max_stack;    /* operand stack needed by the template level */
    uint64_t source_hash;
    tpl_budget *budget;    /* tpl_compile only: the compile memory limit its arenas share */
    tpl_trcall *trcalls;   /* tr() calls in source order (issue 5) */
    size_t ntrcalls;
    tpl_list *deps;        /* names of the templates loaded while compiling (include, import,
                            * extends), first-load order, no duplicates; NULL when none or not
                            * compiled from source (issue 6: tplc compile --depfile) */
    uint8_t *readb;        /* read instructions with their own location, ascending pc (issue 18), */
    size_t nreadb;         /* compact (tpl_loc_it); none for static programs (the span table */
    size_t nreadlocs;      /* locates their reads then) */
    tpl_value *files;      /* file names spans and readlocs refer to: [0] the template, then loaded ones */
    tpl_value *file_srcs;  /* their normalised sources, for the source line under a diagnostic
                            * ([0] unused: the template's is `source`; a stripped program's are
                            * empty; NULL: none kept) */
    size_t nfiles;
    tpl_arena arena;       /* owns constant strings, lists and the arrays above */
    bool static_data;      /* tpl_program_load_static: name, source and arrays borrow const data */
    /* a native program's render (tpl_native.h tpl_native_fn; `tplc compile --emit c --native`),
     * or NULL: the VM interprets the code (runtime/vm.c run) */
    int (*native)(struct tpl_native_frame *f, uint32_t entry, uint32_t npre);
    uint32_t native_flags; /* tpl_native.h TPL_NATIVE_* (0 without native) */
    /* Templates loaded while it renders (INCLUDE_DYN, issue 14): compiled once per loader and name
     * and kept until the program is freed (tpl_program_sub_get/put; made on first use, read and
     * filled under its own mutex: a program renders from several threads at once). */
    struct tpl_subcache *subs;
    /* A template compiled to be imported at render time (IMPORT_DYN; want_exports set before its
     * compile): its template-level names and their slots, in the arena (not kept by .tplb). */
    bool want_exports;
    tpl_value *exports;
    uint32_t *export_slots;
    uint32_t nexports;
    /* tpl_options.finalize as the program was compiled with it (a copy in the arena; NULL: none,
     * not kept by .tplb): the templates it loads at render time are compiled with it too. */
    char *finalize;
    /* tpl_compile for EXTENDS_RUN only (issue 14; borrowed, NULL otherwise): the parent's name
     * the template's render-time extends gave; the template is compiled with that parent. */
    const char *ext_parent;
    size_t ext_parent_len;
    /* The reads-set (tpl_program_reads_idx) as tpl_program_reads_cached keeps it: [0] its count,
     * then the names' indexes; made on first use and installed atomically (a program renders from
     * several threads at once), freed with the program; NULL until then. */
    uint32_t *reads_cache;
};

/* Render-time loading (issue 14). The program compiled from the loader's text for name (the
 * loader fn with its data), as kept with p, or NULL. */
tpl_program *tpl_program_sub_get(const tpl_program *p, tpl_loader_fn fn, void *data, const char *name, size_t len);
/* Keeps sub (compiled from fn's text for name) with p and returns the program kept: sub, or the
 * one another thread kept meanwhile (sub is then freed). NULL when p already keeps
 * TPL_MAX_LOADED programs or out of memory (*full tells which); sub is freed then too. */
#define TPL_MAX_LOADED 256
tpl_program *tpl_program_sub_put(const tpl_program *p, tpl_loader_fn fn, void *data, const char *name, size_t len,
                                 tpl_program *sub, bool *full);

/* Writes the native render of p (runtime/native_emit.c): a function `static int SYM_native`
 * (tpl_native.h tpl_native_fn) that refers to SYM_consts. Counts the instructions it wrote as C
 * (*nspecial) and through tpl_native_step (*nstep), and what it needs of the runtime (*flags:
 * tpl_native.h TPL_NATIVE_*). False when b failed (out of memory). */
bool tpl_emit_native(struct tpl_sb *b, const tpl_program *p, const char *sym, size_t *nspecial, size_t *nstep,
                     uint32_t *flags);

/* Maps a code offset to its source line and column (1-based; 0 when unknown) and the file they
 * are in (*file, unless file is NULL: an index of p->files, 0 the template itself; always below
 * p->nfiles when nfiles is not 0). */
void tpl_program_span(const tpl_program *p, uint32_t pc, uint32_t *line, uint32_t *col, uint32_t *file);
/* File f's name and normalised source (*src NULL when not kept), for a location of p's. */
const char *tpl_program_file(const tpl_program *p, uint32_t f, const char **src, size_t *srclen);
/* XXH64 (seed 0) of src: tpl_program_source_hash. */
uint64_t tpl_source_hash(const char *src, size_t n);
/* Sets p's bound language (opts.lang) to a copy in p's arena (NULL or "": none); false when it
 * is not UTF-8 or out of memory. */
bool tpl_program_bind_lang(tpl_program *p, const char *lang);
/* Line and column (code points) of byte offset `off` in src. */
void tpl_offset_to_linecol(const char *src, size_t n, uint32_t off, uint32_t *line, uint32_t *col);


#endif
