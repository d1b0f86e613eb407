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

/* The superinstructions, in table order (the order rows of one base are tried in). */
static const uint8_t fused_ops[] = {
#define TPL_OP(name, extra, fmt, pops, pushes, flags, doc)
#define TPL_FUSED(name, base, doc, ...) TPL_OP_##name,
#include "../runtime/opcodes.def"
#undef TPL_OP
#undef TPL_FUSED
};

/* Fuses the instruction at pc (opcode op, of base `base`): the first TPL_FUSED row of that base,
 * in table order, whose successors follow. Returns the opcode it has then. */
static uint32_t fuse_at(uint32_t *code, size_t n, size_t pc, uint32_t op, uint32_t base)
{
    for (size_t i = 0; i < sizeof fused_ops; i++) {
        uint32_t f = fused_ops[i];
        if (tpl_opinfo_table[f].base != base) continue;
        if (f == op) break; /* already the best row that matched */
        code[pc] = TPL_INSN(f, TPL_INSN_A(code[pc]));
        if (tpl_op_successors_match(f, code, n, pc)) return f;
        code[pc] = TPL_INSN(op, TPL_INSN_A(code[pc]));
    }
    return op;
}

enum { REVISIT = 256 };

void tpl_peephole(uint32_t *code, size_t n)
{
    bool fusable[TPL_OP__COUNT] = { false }, first_row[TPL_OP__COUNT] = { false };
    for (size_t i = 0; i < sizeof fused_ops; i++) {
        uint32_t b = tpl_opinfo_table[fused_ops[i]].base;
        if (!fusable[b]) first_row[fused_ops[i]] = true;
        fusable[b] = true;
    }
    /* One pass in code order. A row whose successors include a superinstruction (LOAD_SLOT_ITEM_CMP
     * after a fused EQ_JF) can only match once that successor is fused, later in the pass; such a
     * row comes before a shorter row of its base that matches in the first pass (LOAD_SLOT_ITEM),
     * so the instructions that took a row other than their base's first are tried again. */
    uint32_t again[REVISIT];
    size_t nagain = 0;
    bool overflow = false;
    for (size_t pc = 0; pc < n;) {
        uint32_t op = TPL_INSN_OP(code[pc]);
        if (op >= TPL_OP__COUNT) return;
        const tpl_opinfo *oi = &tpl_opinfo_table[op];
        if (fusable[oi->base]) {
            uint32_t f = fuse_at(code, n, pc, op, oi->base);
            if (f != op && !first_row[f]) {
                if (nagain < REVISIT) again[nagain++] = (uint32_t)pc;
                else overflow = true;
            }
        }
        pc += 1 + (size_t)oi->extra;
    }
    for (size_t k = 0; k < nagain; k++) {
        uint32_t op = TPL_INSN_OP(code[again[k]]);
        fuse_at(code, n, again[k], op, tpl_op_base(op));
    }
    if (overflow) /* many: one more pass over everything */
        for (size_t pc = 0; pc < n;) {
            uint32_t op = TPL_INSN_OP(code[pc]);
            const tpl_opinfo *oi = &tpl_opinfo_table[op];
            if (fusable[oi->base]) fuse_at(code, n, pc, op, oi->base);
            pc += 1 + (size_t)oi->extra;
        }
}
