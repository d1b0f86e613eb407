/* The bytecode verifier: run on every program loaded from bytes or static data before its first
 * instruction (DESIGN.md §5). Private to the library. */
#ifndef TPL_VERIFY_H
#define TPL_VERIFY_H

#include <stddef.h>
#include "program.h"

/* Checks that running p cannot read or write out of bounds: every opcode is known, instructions
 * and their operand words lie inside the code, jump targets and macro entries are instruction
 * starts, constant/name/macro/builtin indexes are in range and of the kind the instruction needs,
 * slot indexes are below the slots of the function the instruction belongs to, the operand stack
 * never underflows or exceeds the function's declared max_stack on any path (abstract
 * interpretation over the control-flow graph, from the pops/pushes columns of opcodes.def),
 * captures balance, and no path falls off the end of the code.
 * Returns TPL_EK_NONE, or TPL_EK_CORRUPT (the program is bad) or TPL_EK_NOMEM with a message in
 * msg (NUL-terminated, truncated to msgsz). */
tpl_error_kind tpl_verify(const tpl_program *p, char *msg, size_t msgsz);

/* The reads-set: indexes of the names the program can read from the state (LOAD_NAME operands and
 * CALL_NAME names, which the state may shadow), ascending and unique. Writes up to cap indexes
 * into out (may be NULL when cap is 0) and returns how many there are. The code must be verified
 * (or compiled) first. */
size_t tpl_program_reads_idx(const tpl_program *p, uint32_t *out, size_t cap);
/* The same reads-set, computed once per program and kept with it (p->reads_cache): *idx its n
 * name indexes, valid while p is. False when out of memory. */
bool tpl_program_reads_cached(const tpl_program *p, const uint32_t **idx, size_t *n);

/* The instructions behind the reads-set: sets at[pc] (an array of p->ncode bytes, zeroed by the
 * caller) for every LOAD_NAME, CALL_NAME, LOAD_NAME_RB, LOAD_IVAR_RB and FMT_FIELD and every
 * LOAD_SLOT, LOAD_ROOT or LOAD_OUTER that may fall back to the state, by the analysis
 * tpl_program_reads_idx uses. False when out of memory. */
bool tpl_program_read_pcs(const tpl_program *p, uint8_t *at);

/* Which slots each macro's closure reads from the frame it was made in, so that a frame ending
 * copies only those for its closures (vm.c close_frame): sets p->cl_need_off and p->cl_need
 * (in p's arena), or leaves them NULL (then a closure keeps a copy of the whole frame, as when
 * the code has something the analysis does not follow, or memory runs out). The code must be
 * verified (or compiled) first. */
void tpl_program_closure_needs(tpl_program *p);

#endif
