/* The render context (struct tpl_vm) — private to runtime/. */
#ifndef TPL_VM_IMPL_H
#define TPL_VM_IMPL_H

#include "vm.h"
#include "program.h"
#include "library.h"

/* Operand stack values and local slots (all frames) a render context starts with. tpl_vm_run
 * grows both before a render to what the program needs (its template level plus room for nested
 * calls: this much or 4 frames of its largest macro, whichever is more), within the memory
 * limit; nested calls beyond that end with "maximum call depth reached (out of stack)". */
#define TPL_VM_STACK 16384
#define TPL_VM_SLOTS 16384
#define TPL_VM_CAPTURES 256  /* nested captures (set blocks, macro bodies) */
#define TPL_VM_OUT_PIECE 4096 /* a streaming render's output buffer at its start (tpl_render_set_output) */
#define TPL_DICT_DEL_LOG 32   /* dict deletions a loop over a dict replays (tpl_vm.dict_del) */
#define TPL_DICT_HOLES 16     /* dicts known to hold deleted entries (tpl_vm.dict_hole) */
#define TPL_VM_NAME_HITS 128 /* the names of a rendered program whose state lookups a render keeps */
/* Nested runs of the VM (macro calls, blocks yielded to, templates included or imported at
 * render time) recurse on the C stack, a few KiB a level: whatever limits.max_depth allows, a
 * render nests at most this deep ("maximum call depth reached (nested calls)"); a raised
 * max_depth overflowed the stack (SIGSEGV) from about 4,000 levels. */
#define TPL_VM_NEST_MAX 1000
#define TPL_VM_CSTACK_CHECK 64               /* nested runs past which run() checks the C stack */
#define TPL_VM_CSTACK_MARGIN (256u * 1024u)  /* C stack kept free below the deepest run */

/* A macro value: the macro and the frame it was defined in (its closure). */
typedef struct tpl_closure {
    const tpl_macro_desc *d;
    uint32_t outer_base;    /* slot base of the defining frame */
    tpl_value name;         /* the macro's name (its repr: <Macro 'name'>) */
    const tpl_program *prog;/* the program it is code of (a template loaded at render time has its own) */
    uint32_t root_base;     /* slot base of that program's template level */
    tpl_value state;        /* the names it reads from the context: the state where it was made (a
                             * template loaded at render time: its context, or none) */
    /* Closing (as Lua's upvalues): a closure made in a frame that is not the main template level
     * is open (on the render's list of open closures) while that frame runs; when the frame ends
     * its slots are copied to the arena and the closure reads that copy (closed: a call copies it
     * back above the slot top), so a macro kept in a namespace, dict or list and called after
     * the call that made it returned reads that call's variables, not the slots' next user. */
    struct tpl_closure *next_open; /* the next older open closure */
    const tpl_value *closed;  /* NULL: open; else the copy of slots [closed_lo, closed_lo + nclosed) */
    uint32_t closed_lo, nclosed;
    /* a copy of only the slots it reads (tpl_program.cl_need): closed[i] is slot closed_lo +
     * closed_idx[i] (ascending), for i < nidx, the others unset; NULL: closed holds them all */
    const uint32_t *closed_idx;
    uint32_t nidx;
    /* Upvalue chains (LOAD_UP): the closure whose call was running when this one was made (its
     * defining frame is that call's frame), NULL at a template level; a macro reads a variable
     * of the macro h levels out through h such links, each frame open or closed as above. */
    const struct tpl_closure *up;
    uint32_t seq;             /* the render's count of closures made before it (CL_MARK, CL_CLOSE) */
} tpl_closure;

/* The state of a for loop (the `loop` variable). */
typedef struct tpl_loop {
    tpl_list *items;        /* the items (of a loop over an iterator: those pulled from src so far) */
    tpl_list *src;          /* a Jinja2 iterator the loop pulls from one item at a time, or NULL */
    uint32_t i;             /* items yielded so far (loop.index) */
    uint32_t len1;          /* loop.length + 1 once read (Jinja2 takes len() once: a list the body
                             * changes keeps the length first read), 0 before */
    uint32_t depth;         /* loop.depth (1 for a plain loop) */
    uint32_t cycle_pos;
    tpl_value last_changed; /* loop.changed() memory */
    bool has_changed;
    tpl_value rec;          /* a recursive loop's function (LOOP_DEPTH), which calling the loop value
                             * runs one level deeper (`{% set l = loop %}` ... `l(children)`); else 0 */
    tpl_map *dict;          /* Jinja: the dict a loop over its keys iterates (src: the keys), whose
                             * size Python's dict iterator checks at each step; NULL: none, or
                             * exhausted */
    uint32_t dict_len;      /* its size when the loop started */
    uint32_t dict_pos;      /* forwards: the dict's entries before the iterator's place (those passed and
                             * not deleted since); reversed: the entries not passed yet */
    uint32_t dict_left;     /* forwards: what it may yield yet (its size at the start, less those yielded) */
    uint64_t dict_seen;     /* vm->dict_del_n at the last step (dict_replay) */
    uint8_t dict_what;      /* what each step yields: 0 the key, 1 (key, value), 2 the value */
    bool dict_rev;          /* a reversed() iterator: from the last entry back, never the added ones */
} tpl_loop;

enum { BIND_UNKNOWN = 0xFF }; /* bind_lo of a builtin not called yet */

/* Where a JSON integer too long for Python's str()/int() conversion starts (digits 0: none). */
/* What reading the state noticed that only some syntaxes accept: an integer past Python's 4,300
 * digits (digits, where), and NaN/Infinity/-Infinity, which Python's json reads and Ruby's JSON
 * refuses (nonfinite, where). */
typedef struct tpl_long_int {
    size_t digits;
    uint32_t line, column;
    bool nonfinite;
    uint32_t nf_line, nf_column;
    size_t huge_digits;         /* the first integer past TPL_STATE_INT_MAX_DIGITS (bigint.h) */
    uint32_t huge_line, huge_column;
} tpl_long_int;

struct tpl_vm {
    const tpl_program *p;
    tpl_allocator alloc;    /* where the context's own blocks come from (tpl_render_new_with) */
    tpl_limits limits;
    tpl_arena arena;        /* per render, reset at the start of each render */
    tpl_arena state_arena;  /* state values; reset when the state is replaced */
    tpl_value state;        /* a map (or none before any state is set) */
    tpl_value globals;      /* a map (or none): the names below the state, seen by every template of
                             * the render, a template loaded without context too (tpl_render_set_globals_val) */
    tpl_value rb_self;      /* ERB: the self host object (tpl_render_set_self_val), or none */
    bool rb_ivars_state;    /* ERB with a self: @x still reads the state's x (the host read self's
                             * @ivars into it and nothing changed them yet), not send "@x"
                             * (tpl_render_set_self_ivars_in_state) */
    /* The state JSON's first integer of more than 4,300 digits (digits 0: none), where it starts:
     * Python's json refuses it (ValueError) while loading the state, so the Jinja and
     * format-string references fail before rendering; Ruby's JSON reads it (ERB renders). */
    tpl_long_int state_long_int;
    const tpl_host_func *host_funcs; /* tpl_render_set_host_funcs (borrowed) */
    size_t nhost_funcs;
    void *ext;              /* the library's per-render data (tpl_vm_ext; tpl_stdlib.ext_new/ext_free) */

    char *out;              /* output buffer (heap, reused) */
    size_t out_len, out_cap;
    tpl_write_fn out_write; /* tpl_render_set_output: where the output goes in pieces (NULL: none) */
    void *out_data;
    bool out_stream;        /* this render streams (out_write set, the program does not tidy) */
    uint64_t out_flushed;   /* the bytes this render handed to out_write so far */
    size_t captures[TPL_VM_CAPTURES];
    int ncaptures;
    tpl_value import_out; /* the output the last IMPORT_MOD / IMPORT_DYN dropped (MODULE prints it) */

    tpl_value *stack;       /* stack_cap values (heap; grown by tpl_vm_run, never while running) */
    tpl_value *slots;       /* slots_cap values */
    uint32_t stack_cap, slots_cap;
    uint32_t slot_top;      /* first free slot */
    tpl_closure *open_cl;   /* the closures of frames still running, newest first (tpl_closure) */
    const tpl_closure *cur_cl; /* the closure whose call is running (NULL: a template level) */
    uint32_t cl_seq;        /* closures made so far (tpl_closure.seq) */
    uint32_t inc_open;      /* inlined includes running (CL_MARK .. CL_CLOSE): closures made at a
                             * template level are open there too */
    uint32_t root_base;     /* slot base of the running program's template level (0, or a template
                             * loaded at render time: INCLUDE_DYN) */
    /* the render's template loader (tpl_render_set_loader; issue 14) and the compiler it
     * compiles what it loads with (NULL: none) */
    tpl_loader_fn loader;
    void *loader_data;
    tpl_compile_fn compile;
    uint32_t stack_top;     /* first operand-stack value of the running call level */
    uint32_t depth;         /* macro call depth */
    uintptr_t cstack_guard; /* lowest frame address a nested run may have (0: not looked up this render; 1: unknown) */
    uint64_t fuel;
    tpl_eq_host eq_host;    /* tpl_vm_eq_host: the equality's questions about host objects */
    uint32_t pc;            /* instruction of the last located error */
    bool err_unlocated;     /* err is set but not located yet (run() locates it as it unwinds) */

    /* Positional-only calls of builtin i with bind_lo[i] <= npos <= bind_hi[i] bind by copying
     * (no keyword, *args or **kwargs handling, no signature parsing); filled from the signature
     * on the builtin's first call in a render context (BIND_UNKNOWN before; bind_lo > bind_hi:
     * always the general binder). */
    uint8_t bind_lo[TPL_BUILTINS_MAX], bind_hi[TPL_BUILTINS_MAX];

    tpl_rb_block rb_block;  /* ERB: the block of the Ruby method being called */
    /* ERB method lookups of this render (tpl_vm_method_find): direct-mapped by the name's
     * address, which is stable for a render; entries of earlier renders (other gen) are stale */
    struct tpl_method_memo { const char *name; uint32_t gen; uint16_t len; uint8_t kind; int16_t id; } method_memo[64];
    /* ERB call sites (CALL_METHOD_RB without a block or keywords): direct-mapped by the
     * instruction's address; the builtin tpl_rb_plain_method gave for a receiver of `type` and the
     * method name (-1: the general tpl_rb_send), not for the hash `except`. An entry of this render
     * (gen) is right for its site; one of an earlier render is kept for the site while its name (up
     * to sizeof name bytes, copied: the answer depends on nothing else), type and number of arguments
     * are the same and
     * the receiver is not a hash (`except`, the render's call object, is this render's) */
    struct tpl_rb_site {
        const uint32_t *site; const void *except; uint32_t gen; uint8_t type; uint8_t len; int16_t id;
        char name[16]; uint8_t npos, direct; /* (rb_site_method's, for the site's npos arguments) */
    } rb_sites[64];
    uint32_t gen;           /* renders run on this context (tpl_vm_run counts) */
    /* Name lookups (LOAD_NAME's state, GETATTR's dict, CALL_NAME's shadow check): the entry
     * index where the name at this address was last found, direct-mapped by the tpl_name's address
     * (vm.c, map_find_name). A guess only: the entry is compared before it is used, so any map,
     * program or render may share a line */
    uint32_t key_hint[128];
    /* LOAD_NAME's and CALL_NAME's lookups of name i of the rendered program (name_hit_prog, when
     * it has at most TPL_VM_NAME_HITS names) in the render's state (name_hit_state): the value's entry, vm.c's name_absent
     * when the state has no such key, NULL when not looked up yet; cleared when a render starts
     * unless kept (below).
     * The state does not change while a render runs (a host cannot set it then; templates
     * cannot assign into it), so an entry stays right for the render (as the native code's S<a>
     * and C<a>); vm.c's interp uses them in the frames that run that program over that state. */
    const tpl_value *name_hit[TPL_VM_NAME_HITS];
    const tpl_program *name_hit_prog;
    const tpl_map *name_hit_state;
    /* The lookups are kept from one render to the next (issue 21) while they stay right: the
     * same root state map and globals, unchanged since (state_stamp is name_hit_stamp), and a
     * program whose names are those they were found for (their hashes and lengths summed into
     * name_hit_sig: tpl_program.names_sig); name_hit_kept false: cleared at the next render */
    uint64_t name_hit_stamp, name_hit_sig;
    bool name_hit_kept;
    /* remembers() answers of ASCII phrases of 1 to 16 bytes kept with the lookups above (emptied
     * with them: the facts and the memory store bump state_stamp), direct-mapped by the phrase's
     * length, first and last byte and compared by its bytes: kept as tpl_native_remembers_kept
     * gives it (1 | found << 1 | the fuel its fact scan charges << 2; 0: an empty entry) */
    struct tpl_rkept { uint64_t kept; uint32_t n; char s[16]; } rkept[8];
    /* name.key of a state dict (LOAD_NAME_ATTR and its kin) kept with the lookups above: the
     * value's entry for names a and b of the program, tagged name_hit_gen << 32 | a << 16 | b
     * (a, b < TPL_VM_NAME_HITS), direct-mapped by a and b; name_hit_gen is bumped when the
     * lookups are emptied (never 0, so a zeroed entry matches no tag) */
    struct tpl_attr_hit { uint64_t tag; const tpl_value *v; } attr_hit[64];
    uint32_t name_hit_gen;
    /* tpl_render_set_state_reads: the state map it built (reads_map) from program reads_prog's
     * reads, its entry k the value of name reads_name[k] (reads_n entries; none kept for a
     * program of more than TPL_VM_NAME_HITS names): tpl_vm_run fills name_hit from them when it
     * renders that program over that map as it was made, so that no name the host gave is looked up. Dropped
     * with the state (tpl_render_state_reset). */
    const tpl_program *reads_prog;
    const tpl_map *reads_map;
    const void *reads_e;        /* (its entries then: a map the host added to since is not used) */
    uint32_t reads_n;
    uint16_t reads_name[TPL_VM_NAME_HITS];
    /* A native program rendered: its name_hit are cleared when the interpreter first runs a
     * function of it without a step (tpl_native_run_vm; the native code and its steps use none),
     * not when the render starts; NULL once cleared, or when the program is not native */
    const tpl_program *name_hit_lazy;
    /* The native code's lookups (tpl_native_frame's hints, TPL_NHINTS): where the key of the
     * site's name was last found, by the name's index; a guess only, as key_hint */
    uint32_t native_hint[256];
    /* The native code's state memo (tpl_native_frame's memo, TPL_NMEMO): the values of the root
     * state's names and attribute chains of the native program memo_fn, found over the root state
     * memo_state as it was at state_stamp memo_stamp; emptied at a render's start when any of the
     * three differs (tpl_vm_run). state_stamp: bumped by every state setter and host value
     * mutator (runtime/api.c, host.c), so a state changed between renders is seen */
    const tpl_value *native_memo[256];
    uint64_t native_kept[32];
    int (*memo_fn)(struct tpl_native_frame *f, uint32_t entry, uint32_t npre);
    const tpl_map *memo_state;
    uint64_t memo_stamp, state_stamp;
    tpl_value rb_break;     /* ERB: the value of a block's `break` */
    tpl_value rb_match;     /* ERB: $~, the last MatchData of this render (nil at its start) */
    /* ERB: $~ is a method frame's own (a def's call starts with nil, its caller's comes back after
     * it); a block sees its home frame's. rb_match is the frame at slot base rb_match_base's; each
     * def call running keeps its caller's on the C stack (call_macro), newest first. */
    uint32_t rb_match_base;
    struct tpl_rb_mframe { struct tpl_rb_mframe *prev; tpl_value m; uint32_t base; } *rb_mframes;
    bool rb_broke;          /* ERB: the last block ended with `break` */
    /* ERB: a break out of a block a template method yielded to (tpl_vm_def_break): on its way out to the
     * call the block literal was given to (call_macro, whose caller's frame is the block's), as an error */
    struct { bool on; tpl_value blk, val; uint32_t base; } rb_brk;
    uint32_t rb_call_base;  /* ERB: the slot base of the frame running the last CALL (call_macro's caller) */
    /* ERB: the blocks running (tpl_rb_yield_kw), newest first: a block called again from inside itself (a Hash's
     * default block indexing its Hash) keeps its own slots across that call, as each Ruby call has its own */
    struct tpl_rb_active { struct tpl_rb_active *prev; uint32_t pc, base; } *rb_active;
    /* the most recently used concatenation results, each with its chunk and the chunk's end
     * after it: while its block is still the chunk's newest, `~` or `+` onto it appends in
     * place (vm.c, cat_begin) */
    struct tpl_concat { const char *p; uint32_t len; tpl_chunk *chunk; size_t end; uint64_t tick, born; } cat[4];
    /* the most recent list concatenation results with room past their length: `+` or push
     * onto one of them writes the new items in place (vm.c, tpl_vm_concat_list) */
    struct tpl_lconcat { const tpl_value *items; uint32_t len, cap; uint64_t tick; } lcat[4];
    uint64_t cat_tick;
    /* A host mark's snapshot (host.c) records cat_tick as cat_fence: a string made by then (its
     * entry's born, the tick its block was taken) that grows in place after it reaches past the
     * snapshot's mark with only its length changed — cat_crossed, a tick, says when one last did */
    uint64_t cat_fence, cat_crossed;
    /* tpl_host_error: the message and payload of the last failing host-object callback
     * (runtime/host.c); the payload is reset when a render starts */
    void *host_payload;
    uint64_t host_runs;    /* host callbacks that ran the host's code (tpl_vm_host_ran): ERB's held locals */
    bool has_host;          /* a host object was built on this context: builtins resolve them */
    char host_msg[1024];   /* (an ERB host's rescuable exception: its ancestors, message and class) */
    /* Python's mutating methods (list.append, dict.update, ...; issue 14): the item and entry arrays
     * this render made for lists and dicts it changes in place, open-addressed by address (own_cap a
     * power of two, 0: none yet; render arena, emptied when a render starts). hwm: the most items a
     * list has held in the array; a write below it could be seen by another list sharing the array
     * (`|list`, slices), so there the array is copied first (vm.c tpl_vm_list_room) */
    struct tpl_own { const void *arr; uint32_t hwm; } *own;
    uint32_t own_cap, own_n;
    bool host_containers; /* vm->own holds TPL_OWN_HOST marks (tpl_vm_mark_host_container) */
    /* The state's (or the globals') lists and dicts this render changed, as they were: put back
     * when the render ends, so the next render sees the state it was given (render arena; the
     * headers are also in vm->own, marked by hwm TPL_OWN_HEADER) */
    struct tpl_undo { void *hdr; bool map; union { tpl_list l; tpl_map m; } was; } *undo;
    uint32_t undo_n, undo_cap;
    /* The last dict deletions by Jinja's dict methods (pop, popitem, clear): n entries from index at
     * of dict m (n UINT32_MAX: cleared), entry k of the log at k % TPL_DICT_DEL_LOG; dict_del_n counts
     * them all. A loop or reversed() iterator over a dict replays those since its last step on its
     * place in the dict, as CPython's dict iterator's index into its entries (vm.c dict_replay). */
    struct tpl_dict_del { const tpl_map *m; uint32_t at, n; uint64_t hole; } dict_del[TPL_DICT_DEL_LOG];
    uint64_t dict_del_n;
    /* The dicts of this render (gen) that may hold a deleted entry in CPython's table: since the
     * deletion dict_del_n counted then (the log's hole: m's then; vm.c tpl_vm_dict_holed). Past
     * TPL_DICT_HOLES dicts, any dict may (hole_all_gen). */
    struct tpl_dict_hole { const tpl_map *m; uint64_t at; uint32_t gen; } dict_hole[TPL_DICT_HOLES];
    uint32_t dict_hole_n, dict_hole_all_gen;
    uint64_t changes;       /* in-place changes of lists and dicts by their methods (tpl_vm_list_room,
                             * tpl_vm_list_fresh, tpl_vm_map_own count each, before it): tpl_render_changes */
    uint64_t dict_changes;  /* changes of dicts by their methods (tpl_vm_map_owned): a view is fresh while
                             * this is its stamp's (tpl_vm_view_sync) */
    bool state_host;        /* the state or globals came from a host's values (tpl_render_set_state_val,
                             * _globals_val): a Python list passed in, which tpl does not change */
    struct tpl_rescue_snap *rescue; /* the last failed tpl_render_call's snapshot, for tpl_render_rescue
                             * (runtime/host.c; vm->alloc; NULL: none) */
    struct tpl_mark_node *marks; /* the host's marks (tpl_render_mark), newest first (vm->alloc) */
    struct tpl_rescue_snap *standing; /* a batch's snapshot, for marks over TPL_RESCUE_COPY_MAX (host.c:
                             * tpl_render_release; vm->alloc; NULL: none) */
    uint32_t standing_epoch; /* changes when `standing` is dropped or taken anew */
    size_t standing_next;   /* the arena's used bytes before which no new `standing` is taken */
    tpl_error err;          /* last error; strings point into the buffers below */
    char err_msg[512];
    char err_line[512];
    char *err_line_big;     /* a longer source line (vm->alloc; freed with the render) */
    size_t err_line_big_cap;
};

/* Frees vm->rescue (runtime/host.c): when a render ends, with the render context. */
void tpl_vm_rescue_free(tpl_vm *vm);
/* Frees vm->marks (runtime/host.c): when a render ends, with the render context. */
void tpl_vm_marks_free(tpl_vm *vm);

/* Fills the fast argument-binding table (bind_lo/bind_hi) from the builtin signatures. */
void tpl_vm_init_builtins(tpl_vm *vm);

/* Resizes a block of the render context (the output buffer) through its allocator. */
void *tpl_vm_mem_realloc(tpl_vm *vm, void *ptr, size_t old_size, size_t new_size);

/* HOST_FILTER / HOST_CALL: calls the host function named `name` of kind `kind` bound in this
 * render context with JSON-encoded arguments (runtime/api.c). 0, or -1 with a located error. */
int tpl_vm_host_call(tpl_vm *vm, int kind, tpl_value name, const tpl_value *pos, int npos, const tpl_value *kwn,
                     const tpl_value *kwv, int nkw, tpl_value *out);

/* Renders vm->p from the start into vm->out. 0, or -1 with vm->err set. */
int tpl_vm_run(tpl_vm *vm);
/* tpl_vm_run of a native program whose flags have TPL_NATIVE_DIRECT (tpl_native.h): the lean entry,
 * its frame on the C stack (runtime/vm.c). */
int tpl_vm_run_direct(tpl_vm *vm);

/* The number of decimal digits of u (1 to 20). */
static inline __attribute__((always_inline)) size_t decimal_len(uint64_t u)
{
    static const uint64_t p10[20] = { 1u, 10u, 100u, 1000u, 10000u, 100000u, 1000000u, 10000000u, 100000000u,
                                      1000000000u, 10000000000u, 100000000000u, 1000000000000u, 10000000000000u,
                                      100000000000000u, 1000000000000000u, 10000000000000000u,
                                      100000000000000000u, 1000000000000000000u, 10000000000000000000u };
    /* log10 from the bit length (1233/4096 ~ log10(2)), then one comparison */
    unsigned t = ((unsigned)(64 - __builtin_clzll(u | 1)) * 1233) >> 12;
    size_t nd = t + (u >= p10[t]);
    return nd ? nd : 1;
}

/* |i| as unsigned (INT64_MIN included). */
static inline uint64_t abs_u64(int64_t i) { return i < 0 ? 0 - (uint64_t)i : (uint64_t)i; }

/* The decimal digits of u written at o (room for 20 bytes), two at a time; returns their count. */
static inline __attribute__((always_inline)) size_t put_decimal(char *o, uint64_t u)
{
    static const char pairs[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                                "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                                "8081828384858687888990919293949596979899";
    size_t nd = decimal_len(u);
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

#endif
