/* The render context (struct tpl_vm) — private to runtime/. */
#ifndef TPL_VM_IMPL_H
#define TPL_VM_IMPL_H

#include "vm.h"
#include "../compiler/program.h"

#define TPL_VM_STACK 16384   /* operand stack values (all frames) */
#define TPL_VM_SLOTS 16384   /* local slots (all frames) */
#define TPL_VM_CAPTURES 256  /* nested captures (set blocks, macro bodies) */

/* The state of a for loop (the `loop` variable). */
typedef struct tpl_loop {
    tpl_list *items;
    uint32_t i;             /* items yielded so far (loop.index) */
    uint32_t depth;         /* loop.depth (1 for a plain loop) */
    uint32_t cycle_pos;
    tpl_value last_changed; /* loop.changed() memory */
    bool has_changed;
} tpl_loop;

struct tpl_vm {
    const tpl_program *p;
    tpl_limits limits;
    tpl_arena arena;        /* per render, reset at the start of each render */
    tpl_arena state_arena;  /* state values; reset when the state is replaced */
    tpl_arena fact_arena;   /* facts and the `call` object */
    tpl_value state;        /* a map (or none before any state is set) */
    tpl_list *facts;        /* NFC-normalised facts */
    tpl_value call;         /* the `call` builtin value */
    char channel[32], medium[32];

    char *out;              /* output buffer (heap, reused) */
    size_t out_len, out_cap;
    size_t captures[TPL_VM_CAPTURES];
    int ncaptures;

    tpl_value *stack;       /* TPL_VM_STACK values (heap, allocated once) */
    tpl_value *slots;       /* TPL_VM_SLOTS values */
    uint32_t slot_top;      /* first free slot */
    uint32_t stack_top;     /* first operand-stack value of the running call level */
    uint32_t depth;         /* macro call depth */
    uint64_t fuel;
    uint32_t pc;            /* current instruction (for error locations) */

    tpl_rb_block rb_block;  /* ERB: the block of the Ruby method being called */
    tpl_value rb_break;     /* ERB: the value of a block's `break` */
    bool rb_broke;          /* ERB: the last block ended with `break` */
    tpl_error err;          /* last error; strings point into the buffers below */
    char err_msg[512];
    char err_line[512];
};

/* Renders vm->p from the start into vm->out. 0, or -1 with vm->err set. */
int tpl_vm_run(tpl_vm *vm);

#endif
