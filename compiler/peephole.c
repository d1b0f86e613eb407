/* The peephole pass (issue 16): superinstructions chosen at compile time, and jump threading,
 * in one walk over the code.
 *
 * A superinstruction (a TPL_FUSED row of runtime/opcodes.def) is its base instruction known to
 * be followed by certain instructions: `message['role'] == 'user'` in an if is LOAD_SLOT,
 * GETITEM_STR, CONST, EQ, JF_PY, and LOAD_SLOT_ITEM_CMP runs all five in one dispatch when the
 * values allow it. This pass rewrites the base's opcode where the table's successors follow;
 * fusing changes nothing else (the successors' words, the code's length, jump targets and spans
 * stay; jump threading, below, rewrites only jump operands),
 * so the VM's slow paths run the original instructions and a jump into a fused sequence still
 * lands on a real instruction. The VM itself never looks at the next instruction to decide. */
#include "compile.h"

/* The superinstructions, in table order (among rows of one base and length, the first that matches
 * is chosen). */
static const uint8_t fused_ops[] = {
#define TPL_OP(name, extra, fmt, pops, pushes, flags, doc)
#define TPL_FUSED(name, base, doc, ...) TPL_OP_##name,
#include "../runtime/opcodes.def"
#undef TPL_OP
#undef TPL_FUSED
};
/* Their successor positions (an OR alternative is no position of its own). */
#define SUM_(a, b, c, d, e, f, g, h, ...) ((a) + (b) + (c) + (d) + (e) + (f) + (g) + (h))
#define SUM(...) SUM_(__VA_ARGS__, 0, 0, 0, 0, 0, 0, 0, 0)
static const uint8_t fused_len[] = {
#define TPL_OP(name, extra, fmt, pops, pushes, flags, doc)
#define TPL_FUSED(name, base, doc, ...) SUM(__VA_ARGS__),
#define OP(x) 1
#define OR(x) 0
#define SAME(x) 1
#include "../runtime/opcodes.def"
#undef OP
#undef OR
#undef SAME
#undef TPL_OP
#undef TPL_FUSED
};
#undef SUM
#undef SUM_
_Static_assert(sizeof fused_len == sizeof fused_ops, "a length for every superinstruction");
typedef uint64_t rowset; /* a set of fused_ops indexes */
_Static_assert(sizeof fused_ops <= 8 * sizeof(rowset), "a rowset holds every superinstruction");

/* A successor chain longer than this is matched as it stands (its successors not fused first). */
enum { MAX_CHAIN = 8 };

static uint32_t choose(uint32_t *code, size_t n, size_t pc, const rowset *rows, const rowset *first, int depth);

/* Whether the successors of superinstruction f follow the instruction at pc (as
 * tpl_op_successors_match), a successor that must be a superinstruction being fused first: a
 * row that requires a superinstruction after it (LOAD_SLOT_ITEM_CMP: EQ_JF) then matches in this
 * one walk, with no second pass. The choice made for a successor is the one its own turn would
 * make (the longest row of its base whose successors follow), so fusing it early changes
 * nothing; a successor wanted as a base opcode (or of another base) matches or not whatever it
 * would be fused to, and is left for its own turn. */
static inline __attribute__((always_inline)) bool matches(uint32_t f, uint32_t *code, size_t n, size_t pc, const rowset *rows, const rowset *first, int depth)
{
    const tpl_opinfo *oi = &tpl_opinfo_table[f];
    uint32_t a = TPL_INSN_A(code[pc]);
    size_t at = pc + 1 + oi->extra;
    for (const uint16_t *s = oi->succ; *s != TPL_SUCC_END;) {
        if (at >= n) return false;
        uint32_t got = TPL_INSN_OP(code[at]);
        if (got >= TPL_OP__COUNT) return false;
        uint32_t gb = tpl_op_base(got);
        bool hit = false;
        do {
            uint32_t want = *s & 0xFF;
            if (!hit && tpl_op_base(want) == gb && (!(*s & TPL_SUCC_SAME) || TPL_INSN_A(code[at]) == a)) {
                /* a superinstruction wanted: the successor's own choice, made now (once) */
                if (want != gb && got == gb && rows[got] && depth < MAX_CHAIN)
                    got = choose(code, n, at, rows, first, depth + 1);
                hit = want == gb || got == want;
            }
            s++;
        } while (*s != TPL_SUCC_END && (*s & TPL_SUCC_OR));
        if (!hit) return false;
        at += 1 + tpl_opinfo_table[got].extra;
    }
    return true;
}

/* Fuses the instruction at pc when one of its base's rows matches (the longest pattern, the
 * first in table order among rows of one length), and returns its opcode then. first[b]: the rows
 * whose first successor can be an instruction of base b (a successor matches only an instruction
 * of its own base, or a superinstruction over it), and the rows with alternatives there. */
static inline __attribute__((always_inline)) uint32_t choose_at(uint32_t *code, size_t n, size_t pc, const rowset *rows,
                                                                 const rowset *first, int depth)
{
    uint32_t op = TPL_INSN_OP(code[pc]);
    size_t at = pc + 1 + tpl_opinfo_table[op].extra;
    if (at >= n || TPL_INSN_OP(code[at]) >= TPL_OP__COUNT) return op;
    uint32_t nb = tpl_op_base(TPL_INSN_OP(code[at])); /* the next instruction's base */
    uint32_t best = op;
    int best_len = 0;
    for (rowset m = rows[op] & first[nb]; m; m &= m - 1) {
        int i = __builtin_ctzll(m);
        uint32_t f = fused_ops[i];
        if (fused_len[i] <= best_len)
            continue; /* a longer row matched */
        if (matches(f, code, n, pc, rows, first, depth)) {
            best = f;
            best_len = fused_len[i];
        }
    }
    if (best != op) code[pc] = TPL_INSN(best, TPL_INSN_A(code[pc]));
    return best;
}

static __attribute__((noinline)) uint32_t choose(uint32_t *code, size_t n, size_t pc, const rowset *rows, const rowset *first, int depth)
{
    return choose_at(code, n, pc, rows, first, depth);
}

/* Jump threading, for the instruction at pc (opcode op): a jump whose target is an unconditional
 * JUMP goes straight to that JUMP's target (an if/elif branch ending inside a loop body jumps to
 * the loop head in one step). JUMP leaves the stack alone, so every edge keeps its depth. */
static void thread(uint32_t *code, size_t n, size_t pc, uint32_t op, const tpl_opinfo *oi)
{
    for (int i = 0; oi->fmt[i] && i <= oi->extra; i++) {
        if (oi->fmt[i] != 'j') continue;
        uint32_t t = i == 0 ? TPL_INSN_A(code[pc]) : code[pc + (size_t)i];
        for (int hops = 0; hops < 8 && t < n && TPL_INSN_OP(code[t]) == TPL_OP_JUMP; hops++)
            t = TPL_INSN_A(code[t]);
        if (i == 0) code[pc] = TPL_INSN(op, t);
        else code[pc + (size_t)i] = t;
    }
}

void tpl_peephole(uint32_t *code, size_t n)
{
    rowset rows[TPL_OP__COUNT] = { 0 }; /* each base opcode's rows (a superinstruction has none) */
    rowset first[TPL_OP__COUNT] = { 0 }; /* choose's first */
    for (size_t i = 0; i < sizeof fused_ops; i++) {
        rows[tpl_op_base(fused_ops[i])] |= (rowset)1 << i;
        const uint16_t *s = tpl_opinfo_table[fused_ops[i]].succ;
        if (s[1] != TPL_SUCC_END && (s[1] & TPL_SUCC_OR)) {
            for (size_t b = 0; b < TPL_OP__COUNT; b++) first[b] |= (rowset)1 << i;
        } else {
            first[tpl_op_base(s[0] & 0xFF)] |= (rowset)1 << i;
        }
    }
    /* One walk in code order does both rewrites: they are independent (fusing reads opcodes and
     * a SAME successor's slot operand and never changes a JUMP, a superinstruction has its base's
     * operands, threading reads only whether a target is a JUMP and rewrites jump operands), so
     * the result is the one of threading every jump first. A successor is fused when its
     * predecessor asks, before its turn. */
    for (size_t pc = 0; pc < n;) {
        uint32_t op = TPL_INSN_OP(code[pc]);
        if (op >= TPL_OP__COUNT) return;
        if (rows[op]) op = choose_at(code, n, pc, rows, first, 0);
        const tpl_opinfo *oi = &tpl_opinfo_table[op];
        /* most instructions are one word without a jump operand */
        if (oi->extra != 0 || oi->fmt[0] == 'j') thread(code, n, pc, op, oi);
        pc += 1 + (size_t)oi->extra;
    }
}
