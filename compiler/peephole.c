/* The peephole pass (issue 16): superinstructions chosen at compile time.
 *
 * A superinstruction (a TPL_FUSED row of runtime/opcodes.def) is its base instruction known to
 * be followed by certain instructions: `message['role'] == 'user'` in an if is LOAD_SLOT,
 * GETITEM_STR, CONST, EQ, JF_PY, and LOAD_SLOT_ITEM_CMP runs all five in one dispatch when the
 * values allow it. This pass rewrites the base's opcode where the table's successors follow;
 * nothing else changes (the successors' words, the code's length, jump targets and spans stay),
 * so the VM's slow paths run the original instructions and a jump into a fused sequence still
 * lands on a real instruction. The VM itself never looks at the next instruction to decide. */
#include "compile.h"

/* One pass over code[0..n): each instruction whose opcode (or a superinstruction's base) is the
 * base of a TPL_FUSED row takes the first row, in table order, whose successors follow. */
static void fuse_pass(uint32_t *code, size_t n)
{
    for (size_t pc = 0; pc < n;) {
        uint32_t op = TPL_INSN_OP(code[pc]);
        if (op >= TPL_OP__COUNT) return;
        uint32_t base = tpl_op_base(op);
        for (uint32_t f = 0; f < TPL_OP__COUNT; f++) {
            const tpl_opinfo *fi = &tpl_opinfo_table[f];
            if (!(fi->flags & TPL_OPF_FUSED) || fi->base != base) continue;
            if (f == op) break; /* already the best row that matched */
            code[pc] = TPL_INSN(f, TPL_INSN_A(code[pc]));
            if (tpl_op_successors_match(f, code, n, pc)) break;
            code[pc] = TPL_INSN(op, TPL_INSN_A(code[pc]));
        }
        pc += 1 + (size_t)tpl_opinfo_table[op].extra;
    }
}

void tpl_peephole(uint32_t *code, size_t n)
{
    /* the second pass sees the first's superinstructions as successors (LOAD_SLOT_ITEM_CMP
     * follows a fused EQ_JF) */
    fuse_pass(code, n);
    fuse_pass(code, n);
}
