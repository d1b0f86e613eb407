/* `tplc compile --emit c --native` (tpl_program_emit_c with TPL_EMIT_NATIVE): the render as C.
 *
 * One C function per program, one label per instruction (L<pc>), in code order, so the C reads
 * as the disassembly does. Instructions whose VM semantics are a few lines become those lines
 * (text as string literals, constants, local slots, jumps as gotos, truthiness tests, the loop
 * step, printing a string or an int, dict lookups by name with the key's hash and length as
 * constants (tpl_native_find), `trim`, `default`, printing a `+` chain of plain strings); other
 * filters and tests (with their fast paths: `upper` / `join` straight
 * into the output), attribute and item lookups (`loop.index` & co.), printing other values,
 * `+` chains and FOR_INIT call the VM's code for that one instruction directly (tpl_native_filter
 * & co.); every other instruction calls tpl_native_step, which runs it with the VM's own code,
 * and goes on at the label the VM says (a `dispatch` switch over every instruction start). Fuel: each instruction counts one tick
 * (T; added once per straight run of instructions), charged at the points where the VM charges
 * (backward jumps, calls, the end), so a fuel error names the same instruction. The function is entered at 0 (the template), at a macro's
 * entry or at a Ruby block's entry, through the same switch. The output's buffer, length and
 * capacity live in C locals (written back around calls, TPL_N_C); names found in the state are
 * kept per call level (the state does not change during a render); dict lookups start at the
 * render context's hint for the name (where it was found last, this render or an earlier one);
 * a lookup repeated with nothing between that could change a dict reads the last one's result
 * back (MM / MV); `remembers("ASCII")` goes straight to the facts; constants the code pushed
 * are known in straight-line code (kstack), so a `+` chain prints them as literals. Between
 * labels the top of the operand stack is not in memory: locals point at the values where they
 * are (vstack: a dict's entry is printed or tested in place), written to the stack only where
 * the VM's code or another path could see it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "program.h"
#include "library.h"
#include "../include/tpl_native.h" /* TPL_NMEMO */

/* Code larger than this (words) is left to the VM: one C function with a label per
 * instruction would take the C compiler minutes. */
#define NATIVE_MAX_CODE 200000

/* A C string literal of s (octal escapes: never swallows a following digit), split every
 * ~70 columns. */
static void lit(tpl_sb *b, const char *s, size_t n)
{
    tpl_sb_putc(b, '"');
    size_t col = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (col > 70) { tpl_sb_puts(b, "\"\n        \""); col = 0; }
        if (c == '"' || c == '\\') { tpl_sb_putc(b, '\\'); tpl_sb_putc(b, (char)c); col += 2; }
        else if (c == '\n') { tpl_sb_puts(b, "\\n"); col += 2; }
        else if (c >= 0x20 && c < 0x7f && c != '?') { tpl_sb_putc(b, (char)c); col++; }
        else { tpl_sb_printf(b, "\\%03o", c); col += 4; }
    }
    tpl_sb_putc(b, '"');
}

/* A name for a comment: printable ASCII, at most 40 bytes, no comment terminators. */
static void comment_name(tpl_sb *b, const tpl_value *s)
{
    if (s->type != TPL_T_STR) return;
    size_t n = s->len < 40 ? s->len : 40;
    for (size_t i = 0; i < n; i++) {
        char c = s->u.s[i];
        bool ok = c >= 0x20 && c < 0x7f && c != '*' && c != '/' && c != '\\' && c != '?';
        tpl_sb_putc(b, ok ? c : '_');
    }
    if (s->len > n) tpl_sb_puts(b, "...");
}

/* `(e = tpl_native_find(V, "name", len, hash, hint, keep))`: the lookup of name index a in the
 * dict V, as tpl_map_find_str does it (the key's hash from the names table), with the render
 * context's hint H[2a + kind] (kind 0: the state, 1: another dict; -1: no hint, for a name that
 * is usually missing); local: through the call level's copy of it, HA<a> (a lookup in a loop or
 * at several places: a local the C compiler keeps in a register), written back when it moves. */
static void find(tpl_sb *b, const tpl_program *p, const char *v, uint32_t a, int kind, bool local)
{
    const tpl_name *nm = &p->names[a];
    uint32_t h = (2 * a + (uint32_t)kind) % 256u;
    tpl_sb_printf(b, "(e = tpl_native_find(%s, ", v);
    lit(b, nm->s.u.s, nm->s.len);
    tpl_sb_printf(b, ", %u, 0x%016llxull, ", nm->s.len, (unsigned long long)nm->hash);
    if (kind < 0) tpl_sb_puts(b, "NULL, NULL))");
    else if (local) tpl_sb_printf(b, "&HA%u, &H[%u]))", a, h);
    else tpl_sb_printf(b, "&H[%u], NULL))", h);
}

/* Whether the GETATTR / GETITEM_STR at pc looks its name up in a dict inline (GETATTR: not for a
 * name that is a dict method, which GETATTR finds first, nor for loop.index & co.). */
static bool attr_inline(const tpl_program *p, uint32_t pc)
{
    uint32_t op = tpl_op_base(TPL_INSN_OP(p->code[pc]));
    const tpl_value *nm = &p->names[TPL_INSN_A(p->code[pc])].s;
    if (op == TPL_OP_GETITEM_STR) return true;
    if (op != TPL_OP_GETATTR) return false;
    /* (next and reset: a cycler()'s methods, a new bound method at each access in the VM's code:
     * `c.next is sameas c.next` is false, as in Python) */
    static const char *const loop_names[] = { "index", "index0", "first", "last", "length", "next", "reset" };
    for (int i = 0; i < 7; i++)
        if (nm->len == strlen(loop_names[i]) && memcmp(nm->u.s, loop_names[i], nm->len) == 0) return false;
    return tpl_stdlib.find(TPL_BK_MAP, nm->u.s, nm->len) < 0;
}

/* Whether the string value v is ASCII. */
static bool ascii(const tpl_value *v)
{
    for (uint32_t i = 0; i < v->len; i++)
        if ((unsigned char)v->u.s[i] >= 0x80) return false;
    return true;
}

/* The jump to label t from instruction pc: backward jumps charge the fuel (the VM's JUMP_TO). */
static void jump(tpl_sb *b, uint32_t pc, uint32_t t, const char *indent)
{
    if (t <= pc) tpl_sb_printf(b, "%sTPL_N_CHARGE(%u);\n", indent, pc);
    tpl_sb_printf(b, "%sgoto L%u;\n", indent, t);
}

/* Whether the emitter writes the instruction at pc as C, or as C that calls the VM's code for it
 * (tpl_native_filter & co.), never going through tpl_native_step (else: a step). EQ / NE are
 * written as C for two strings and step otherwise. */
static bool specialised(const tpl_program *p, size_t pc)
{
    uint32_t op = tpl_op_base(TPL_INSN_OP(p->code[pc]));
    switch (op) {
    case TPL_OP_TEXT: case TPL_OP_CONST: case TPL_OP_INT: case TPL_OP_NONE: case TPL_OP_TRUE: case TPL_OP_FALSE:
    case TPL_OP_POP: case TPL_OP_DUP: case TPL_OP_LOAD_SLOT: case TPL_OP_STORE_SLOT: case TPL_OP_UNSET_SLOT:
    case TPL_OP_JUMP: case TPL_OP_JF_PY: case TPL_OP_JT_PY: case TPL_OP_JF_PY_KEEP: case TPL_OP_JT_PY_KEEP:
    case TPL_OP_JF_RB: case TPL_OP_JT_RB: case TPL_OP_JF_RB_KEEP: case TPL_OP_JT_RB_KEEP:
    case TPL_OP_FOR_NEXT: case TPL_OP_GETITEM_STR: case TPL_OP_HALT: case TPL_OP_LOAD_NAME:
    case TPL_OP_GETATTR: case TPL_OP_PRINT_PY: case TPL_OP_PRINT_RB: case TPL_OP_FOR_INIT:
    case TPL_OP_ADDS: case TPL_OP_PRINT_ADDS: case TPL_OP_ADDS_RB: case TPL_OP_PRINT_ADDS_RB: case TPL_OP_PRINT_ADDS_K:
    case TPL_OP_EQ: case TPL_OP_NE:
        return true;
    case TPL_OP_FILTER: case TPL_OP_TEST: /* not with a spread argument list (*args, **kwargs) */
        return TPL_ARGW_K(p->code[pc + 1]) != TPL_ARGW_DYN;
    case TPL_OP_CALL_NAME:
        return TPL_ARGW_K(p->code[pc + 2]) != TPL_ARGW_DYN;
    case TPL_OP_SWITCH_STR: { /* a tuple of strings (as the compiler makes them) */
        const tpl_value *k = &p->consts[TPL_INSN_A(p->code[pc])];
        if (k->type != TPL_T_LIST) return false;
        for (uint32_t i = 0; i < k->u.list->len; i++)
            if (k->u.list->items[i].type != TPL_T_STR) return false;
        return true;
    }
    default:
        return false;
    }
}

/* Whether the instruction at pc, as the emitter writes it, never changes a dict on any of its
 * paths (it calls nothing that can run a template's code, a Ruby method or a host's: the values
 * it reads and prints stay as they are), so a dict's entry found before it is still the one after. */
static bool keeps_dicts(const tpl_program *p, uint32_t pc)
{
    switch (tpl_op_base(TPL_INSN_OP(p->code[pc]))) {
    case TPL_OP_TEXT: case TPL_OP_CONST: case TPL_OP_INT: case TPL_OP_NONE: case TPL_OP_TRUE: case TPL_OP_FALSE:
    case TPL_OP_POP: case TPL_OP_DUP: case TPL_OP_LOAD_SLOT: case TPL_OP_STORE_SLOT: case TPL_OP_UNSET_SLOT:
    case TPL_OP_JUMP: case TPL_OP_GETATTR: case TPL_OP_GETITEM_STR: case TPL_OP_LOAD_NAME:
    case TPL_OP_PRINT_PY: case TPL_OP_PRINT_RB:
        return true;
    case TPL_OP_SWITCH_STR:
        return specialised(p, pc);
    default:
        return false;
    }
}

/* What the emitter knows of the operand stack's top values in straight-line code: ks[0..kd)
 * from the bottom up, each a constant index whose value is a plain string (-1: anything);
 * the values below them are unknown. Forgotten where paths join and after instructions whose
 * stack effect it does not model. */
#define KS_MAX 64
typedef struct { int32_t ks[KS_MAX]; uint32_t kd; } kstack;
static void ks_pop(kstack *k, uint32_t n) { k->kd = k->kd > n ? k->kd - n : 0; }
static void ks_push(kstack *k, int32_t c)
{
    if (k->kd == KS_MAX) { memmove(k->ks, k->ks + 1, (KS_MAX - 1) * sizeof k->ks[0]); k->kd--; }
    k->ks[k->kd++] = c;
}
/* the constant index of the value i places below the top (0: the top), or -1 */
static int32_t ks_at(const kstack *k, uint32_t i) { return i < k->kd ? k->ks[k->kd - 1 - i] : -1; }

/* The stack effect of the instruction at pc (one the emitter writes as C, not a step) on k, when
 * it goes on at the next instruction (a JUMP never does). */
static void ks_apply(kstack *k, const tpl_program *p, uint32_t pc)
{
    uint32_t w = p->code[pc], op = tpl_op_base(TPL_INSN_OP(w)), a = TPL_INSN_A(w);
    switch (op) {
    case TPL_OP_TEXT: case TPL_OP_UNSET_SLOT: case TPL_OP_JF_PY_KEEP: case TPL_OP_JT_PY_KEEP:
    case TPL_OP_JF_RB_KEEP: case TPL_OP_JT_RB_KEEP:
        break; /* (a _KEEP jump that goes on keeps its value: popped after it) */
    case TPL_OP_CONST: {
        const tpl_value *c = &p->consts[a];
        ks_push(k, c->type == TPL_T_STR && !(c->flags & (TPL_F_SAFE | TPL_F_SYMBOL)) ? (int32_t)a : -1);
        break;
    }
    case TPL_OP_INT: case TPL_OP_NONE: case TPL_OP_TRUE: case TPL_OP_FALSE: case TPL_OP_LOAD_SLOT: case TPL_OP_LOAD_NAME:
        ks_push(k, -1);
        break;
    case TPL_OP_DUP: ks_push(k, ks_at(k, 0)); break;
    case TPL_OP_POP: case TPL_OP_STORE_SLOT: case TPL_OP_PRINT_PY: case TPL_OP_PRINT_RB: case TPL_OP_JF_PY: case TPL_OP_JT_PY:
    case TPL_OP_JF_RB: case TPL_OP_JT_RB:
        ks_pop(k, 1);
        break;
    case TPL_OP_GETATTR: case TPL_OP_GETITEM_STR: ks_pop(k, 1); ks_push(k, -1); break;
    case TPL_OP_EQ: case TPL_OP_NE: ks_pop(k, 2); ks_push(k, -1); break;
    case TPL_OP_FILTER: case TPL_OP_TEST:
        ks_pop(k, TPL_ARGW_NPOS(p->code[pc + 1]) + TPL_ARGW_NKW(p->code[pc + 1]));
        ks_push(k, -1);
        break;
    case TPL_OP_ADDS: case TPL_OP_ADDS_RB: ks_pop(k, a); ks_push(k, -1); break;
    case TPL_OP_PRINT_ADDS: case TPL_OP_PRINT_ADDS_RB: case TPL_OP_PRINT_ADDS_K: ks_pop(k, a); break;
    default: k->kd = 0; break;
    }
}

/* The instruction after the one at pc. */
static uint32_t after(const tpl_program *p, uint32_t pc)
{
    return pc + 1 + tpl_opinfo_table[tpl_op_base(TPL_INSN_OP(p->code[pc]))].extra;
}

/* Whether the GETATTR at pc finds a missing key's undefined value only for the `default` filter
 * right after it (its optional argument a CONST between them, no label between) to replace: then
 * which undefined it is (its name, its container, for an error message) cannot show, and generated
 * code makes a plain one for a dict without the key. The VM's GETATTR of a missing key of a dict
 * (attr_inline: a name that is no dict method) is an undefined value unless the name is a mutating
 * method's (the sandbox's error) or starts with '_' (tpl_getattr's dunder rules). */
static bool miss_defaulted(const tpl_program *p, uint32_t pc, const uint8_t *resume)
{
    if (tpl_op_base(TPL_INSN_OP(p->code[pc])) != TPL_OP_GETATTR || !attr_inline(p, pc)) return false;
    const tpl_value *nm = &p->names[TPL_INSN_A(p->code[pc])].s;
    static const char *const mut[] = { "clear", "pop", "popitem", "setdefault", "update" };
    if (!nm->len || nm->u.s[0] == '_') return false;
    for (int i = 0; i < 5; i++)
        if (nm->len == strlen(mut[i]) && memcmp(nm->u.s, mut[i], nm->len) == 0) return false;
    uint32_t q = after(p, pc), npos = 1;
    if (q < p->ncode && !resume[q] && tpl_op_base(TPL_INSN_OP(p->code[q])) == TPL_OP_CONST) {
        q = after(p, q);
        npos = 2;
    }
    if (q + 1 >= p->ncode || resume[q] || tpl_op_base(TPL_INSN_OP(p->code[q])) != TPL_OP_FILTER) return false;
    uint32_t w = p->code[q], aw = p->code[q + 1];
    return TPL_INSN_A(w) == (uint32_t)tpl_stdlib.id_default && TPL_ARGW_K(aw) != TPL_ARGW_DYN && TPL_ARGW_NKW(aw) == 0 &&
           TPL_ARGW_NPOS(aw) == npos;
}

/* The instructions the `dispatch` switch must reach (at[pc] != 0): entries (0, macros, Ruby
 * blocks) and every jump target (at[pc] & 2: where paths join), and the instructions a step may
 * go on at besides the next one (at[pc] & 1): a VM fused path takes at most a few instructions
 * after it (a compare and its jump, a filter and its print), so the starts up to 6 instructions
 * past a stepped one. The VM reaches those in code order from the step, so the values the
 * instructions between them pushed are the ones the code shows. */
static void resume_points(const tpl_program *p, uint8_t *at)
{
    at[0] = 2;
    for (size_t m = 0; m < p->nmacros; m++)
        if (p->macros[m].entry < p->ncode) at[p->macros[m].entry] = 2;
    int more = 0; /* instructions still to mark after a stepped one */
    for (size_t pc = 0; pc < p->ncode;) {
        uint32_t w = p->code[pc], op = tpl_op_base(TPL_INSN_OP(w)), a = TPL_INSN_A(w);
        const tpl_opinfo *oi = &tpl_opinfo_table[op];
        if (more > 0) { at[pc] |= 1; more--; }
        for (int i = 0; oi->fmt[i] && i <= oi->extra; i++) {
            uint32_t x = i == 0 ? a : p->code[pc + (size_t)i];
            if (oi->fmt[i] == 'j' && x < p->ncode) at[x] = 2;
        }
        if (op == TPL_OP_CALL_METHOD_RB && (p->code[pc + 2] & 0xFFFFFFu) && (p->code[pc + 2] & 0xFFFFFFu) < p->ncode)
            at[p->code[pc + 2] & 0xFFFFFFu] = 2; /* a block body */
        if (op == TPL_OP_SWITCH_STR) { /* (written as C: it goes to the targets, not its JUMPs) */
            if (!specialised(p, pc)) more = 6 + (int)p->consts[a].u.list->len;
            if (pc + 2 + p->consts[a].u.list->len < p->ncode) at[pc + 2 + p->consts[a].u.list->len] = 2; /* not a string */
        }
        if (!specialised(p, pc)) more = more > 6 ? more : 6;
        if (TPL_INSN_OP(w) == TPL_OP_FILTER_PRINT && specialised(p, pc) && after(p, (uint32_t)pc) < p->ncode)
            at[after(p, after(p, (uint32_t)pc))] = 2; /* where a FILTER_PRINT that printed goes on */
        pc += 1 + (size_t)oi->extra;
    }
}

/* Whether the instruction at pc (written as C) keeps the slots of its call level that hold a
 * value set: it runs no code of this level (a Ruby block runs in its defining level's slots, and a
 * loop over an iterator may pull from one: FOR_INIT, FOR_NEXT; a step may run anything), so a
 * slot stored before it is still set after it. (UNSET_SLOT unsets its own slot: slots_set.) */
static bool keeps_slots(const tpl_program *p, uint32_t pc)
{
    if (!specialised(p, pc)) return false;
    switch (tpl_op_base(TPL_INSN_OP(p->code[pc]))) {
    case TPL_OP_TEXT: case TPL_OP_CONST: case TPL_OP_INT: case TPL_OP_NONE: case TPL_OP_TRUE: case TPL_OP_FALSE:
    case TPL_OP_POP: case TPL_OP_DUP: case TPL_OP_LOAD_SLOT: case TPL_OP_STORE_SLOT: case TPL_OP_UNSET_SLOT:
    case TPL_OP_JUMP: case TPL_OP_JF_PY: case TPL_OP_JT_PY: case TPL_OP_JF_PY_KEEP: case TPL_OP_JT_PY_KEEP:
    case TPL_OP_JF_RB: case TPL_OP_JT_RB: case TPL_OP_JF_RB_KEEP: case TPL_OP_JT_RB_KEEP:
    case TPL_OP_PRINT_PY: case TPL_OP_PRINT_RB: case TPL_OP_GETATTR: case TPL_OP_GETITEM_STR: case TPL_OP_LOAD_NAME:
    case TPL_OP_EQ: case TPL_OP_NE: case TPL_OP_SWITCH_STR: case TPL_OP_HALT:
        return true;
    case TPL_OP_FILTER: case TPL_OP_TEST: case TPL_OP_ADDS: case TPL_OP_PRINT_ADDS: case TPL_OP_PRINT_ADDS_K:
        /* (Jinja's: a filter or a `+` runs no template code of this level; Ruby's ADDS_RB may call a method) */
        return p->opts.syntax == TPL_SYNTAX_JINJA;
    default:
        return false;
    }
}

/* slots_set's step: `out` flows into instruction t (an entry keeps its empty set). */
static void flow_to(uint64_t *set, uint8_t *reached, const uint8_t *entry, size_t ncode, uint32_t t, uint64_t out,
                    bool *changed)
{
    if (t >= ncode || entry[t]) return;
    uint64_t v = reached[t] ? set[t] & out : out;
    if (!reached[t] || v != set[t]) {
        set[t] = v;
        reached[t] = 1;
        *changed = true;
    }
}

/* set[pc]: the slots 0..63 of its call level that hold a value on every path to the instruction
 * at pc (a forward must-analysis over the jumps: a slot stored before a join on every path into
 * it is set after it), so LOAD_SLOT of such a slot needs no unset check. Entries (the template,
 * macros) start with none set; with steps, so does every label (the dispatch may go there). */
static uint64_t *slots_set(const tpl_program *p, const uint8_t *resume, bool steps)
{
    uint64_t *set = calloc(p->ncode + 1, sizeof *set);
    uint8_t *reached = calloc(p->ncode + 1, 1);
    if (!set || !reached) { free(set); free(reached); return NULL; }
    reached[0] = 1;
    for (size_t m = 0; m < p->nmacros; m++)
        if (p->macros[m].entry < p->ncode) reached[p->macros[m].entry] = 1;
    for (size_t pc = 0; steps && pc < p->ncode; pc++)
        if (resume[pc]) reached[pc] = 1;
    uint8_t *entry = malloc(p->ncode + 1);
    if (!entry) { free(set); free(reached); return NULL; }
    memcpy(entry, reached, p->ncode + 1); /* (their set stays empty) */
    for (bool changed = true; changed;) {
        changed = false;
        for (uint32_t pc = 0; pc < p->ncode; pc = after(p, pc)) {
            if (!reached[pc]) continue;
            uint32_t w = p->code[pc], op = tpl_op_base(TPL_INSN_OP(w)), a = TPL_INSN_A(w), next = after(p, pc);
            uint64_t out = keeps_slots(p, pc) ? set[pc] : 0;
            if (op == TPL_OP_STORE_SLOT && a < 64) out |= (uint64_t)1 << a;
            if (op == TPL_OP_UNSET_SLOT && a < 64) out &= ~((uint64_t)1 << a);
            if (!specialised(p, pc)) flow_to(set, reached, entry, p->ncode, next, out, &changed); /* (a step's other ends: labels, entries with steps) */
            else if (op == TPL_OP_JUMP) flow_to(set, reached, entry, p->ncode, a, out, &changed);
            else if (op == TPL_OP_SWITCH_STR) { /* (its JUMPs' targets: the C goes there) */
                uint32_t n = p->consts[a].u.list->len;
                for (uint32_t i = 0; i <= n; i++) flow_to(set, reached, entry, p->ncode, TPL_INSN_A(p->code[pc + 1 + i]), out, &changed);
                flow_to(set, reached, entry, p->ncode, pc + 2 + n, out, &changed);
            } else if (op != TPL_OP_HALT) {
                flow_to(set, reached, entry, p->ncode, next, out, &changed);
                if (op == TPL_OP_JF_PY || op == TPL_OP_JT_PY || op == TPL_OP_JF_PY_KEEP || op == TPL_OP_JT_PY_KEEP ||
                    op == TPL_OP_JF_RB || op == TPL_OP_JT_RB || op == TPL_OP_JF_RB_KEEP || op == TPL_OP_JT_RB_KEEP)
                    flow_to(set, reached, entry, p->ncode, a, out, &changed);
                else if (op == TPL_OP_FOR_NEXT) flow_to(set, reached, entry, p->ncode, p->code[pc + 1], out, &changed);
                else if (TPL_INSN_OP(w) == TPL_OP_FILTER_PRINT && next < p->ncode)
                    flow_to(set, reached, entry, p->ncode, after(p, next), out, &changed);
            }
        }
    }
    free(reached);
    free(entry);
    return set;
}

/* The operand stack in straight-line code. The emitter knows the stack's shape between labels:
 * the top vk values are not on the stack but referred to by the C locals P0..P<vk-1> (P0 the
 * deepest): each points at where the value is (a constant, a local slot, a dict's or the state's
 * entry, a list's item, or its home sp[i], where the VM would hold it), so a value found in a
 * dict is printed or tested where it is, without a copy. The values below them are in memory
 * under sp. The locals are flushed (each value copied home, sp moved past them: vk = 0) at every
 * label (every path into one has the same shape: all in memory), before a jump, a branch's jump
 * and a step, and before an instruction not written with them. The slow paths of the others (a
 * call into the VM's code: a filter, a lookup's miss, printing another type) copy them home
 * first (spill: sp unmoved; each P<i> then points home) and pass the homes, so every call sees
 * the stack as the VM does and nothing a call changes is read through a stale pointer; an
 * instruction that changes a value in place (trim, default) works on its home copy; STORE_SLOT
 * copies home first the values that point at that slot. VMAX bounds the locals (a push past it
 * flushes first). */
#define VMAX 8
typedef struct {
    uint32_t vk, max;
    bool home[VMAX];    /* P<i> is known to point at sp[i] on every path here */
    int32_t slot[VMAX]; /* P<i> may point at L[slot] (-1: at no slot) */
    uint64_t set;       /* slots 0..63 known to hold a value (stored since the last label) */
} vstack;

/* The value i places below the top (0: the top): `acc` the prefix of its members ("P1->",
 * "sp[-1]."), `ptr` its address, `home` where it is in memory (a local's home). */
static void v_ref(const vstack *v, uint32_t i, char *acc, char *ptr, char *home)
{
    if (i < v->vk) {
        uint32_t j = v->vk - 1 - i;
        if (acc) snprintf(acc, 24, "P%u->", j);
        if (ptr) snprintf(ptr, 24, "P%u", j);
        if (home) snprintf(home, 24, "sp[%u]", j);
    } else {
        if (acc) snprintf(acc, 24, "sp[-%u].", i - v->vk + 1);
        if (ptr) snprintf(ptr, 24, "&sp[-%u]", i - v->vk + 1);
        if (home) snprintf(home, 24, "sp[-%u]", i - v->vk + 1);
    }
}
/* Copies the k deepest values home (sp unmoved); `repoint`: and points their locals there. */
static void v_spill(tpl_sb *b, const vstack *v, uint32_t k, bool repoint, const char *ind)
{
    for (uint32_t i = 0; i < k; i++)
        if (!v->home[i]) tpl_sb_printf(b, repoint ? "%sTPL_N_COPY(sp[%u], *P%u);\n%sP%u = &sp[%u];\n" : "%sTPL_N_COPY(sp[%u], *P%u);\n",
                                       ind, i, i, ind, i, i);
}
/* The code that flushes the k deepest values: home, and sp past them. */
static void v_flush_code(tpl_sb *b, const vstack *v, uint32_t k, const char *ind)
{
    v_spill(b, v, k, false, ind);
    if (k) tpl_sb_printf(b, "%ssp += %u;\n", ind, k);
}
static void v_flush(tpl_sb *b, vstack *v, const char *ind)
{
    v_flush_code(b, v, v->vk, ind);
    v->vk = 0;
}
/* Copies home (for good) the n deepest values that may point at slot s (before s changes). */
static void v_unslot(tpl_sb *b, vstack *v, uint32_t s, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (v->slot[i] == (int32_t)s) {
            if (!v->home[i]) tpl_sb_printf(b, "    TPL_N_COPY(sp[%u], *P%u);\n    P%u = &sp[%u];\n", i, i, i, i);
            v->home[i] = true;
            v->slot[i] = -1;
        }
}
/* All the values home for good (after a call the hot path makes with them spilled). */
static void v_all_home(vstack *v)
{
    for (uint32_t i = 0; i < v->vk; i++) { v->home[i] = true; v->slot[i] = -1; }
}
/* Pops n values (locals first, then memory). */
static void v_pop(tpl_sb *b, vstack *v, uint32_t n)
{
    uint32_t m = n < v->vk ? n : v->vk;
    v->vk -= m;
    if (n > m) tpl_sb_printf(b, "    sp -= %u;\n", n - m);
}
/* A value pushed to local P<vk> (the caller wrote it): at its home or not, at a slot or not. */
static void v_pushed(vstack *v, bool home, int32_t slot)
{
    v->home[v->vk] = home;
    v->slot[v->vk] = slot;
    v->vk++;
    if (v->vk > v->max) v->max = v->vk;
}
/* `CALL` (an int expression; < 0: an error) on a slow path, after "else " or "if (...) ": the
 * values spilled first (and their locals pointed home), `after` (code, or NULL) after; one line
 * when there is nothing else to write. */
static void v_call_in(tpl_sb *b, const vstack *v, const char *call, uint32_t pc, const char *after, const char *ind)
{
    bool spill = false;
    for (uint32_t i = 0; i < v->vk; i++) spill |= !v->home[i];
    if (!spill && !after) {
        tpl_sb_printf(b, "if (%s < 0) TPL_N_FAIL(%u);\n", call, pc);
        return;
    }
    char in[24];
    snprintf(in, sizeof in, "%s    ", ind);
    tpl_sb_puts(b, "{\n");
    v_spill(b, v, v->vk, true, in);
    tpl_sb_printf(b, "%sif (%s < 0) TPL_N_FAIL(%u);\n", in, call, pc);
    if (after) tpl_sb_printf(b, "%s%s\n", in, after);
    tpl_sb_printf(b, "%s}\n", ind);
}
/* v_call_in at the function's first level */
static void v_call(tpl_sb *b, const vstack *v, const char *call, uint32_t pc, const char *after)
{
    v_call_in(b, v, call, pc, after, "    ");
}

/* Whether the instruction at pc is written with the operand stack's locals (the others find
 * every value in memory: vk = 0), given vk values in locals before it. */
static bool v_ok(const tpl_program *p, uint32_t pc, uint32_t vk)
{
    uint32_t w = p->code[pc], op = tpl_op_base(TPL_INSN_OP(w)), a = TPL_INSN_A(w);
    if (!specialised(p, pc)) return false;
    uint32_t nargs = 0, push = 0;
    switch (op) {
    case TPL_OP_TEXT: case TPL_OP_POP: case TPL_OP_STORE_SLOT: case TPL_OP_UNSET_SLOT: case TPL_OP_JUMP:
    case TPL_OP_JF_PY: case TPL_OP_JT_PY: case TPL_OP_JF_PY_KEEP: case TPL_OP_JT_PY_KEEP:
    case TPL_OP_JF_RB: case TPL_OP_JT_RB: case TPL_OP_JF_RB_KEEP: case TPL_OP_JT_RB_KEEP:
    case TPL_OP_PRINT_PY: case TPL_OP_PRINT_RB: case TPL_OP_SWITCH_STR: case TPL_OP_FOR_INIT:
    case TPL_OP_GETATTR: case TPL_OP_GETITEM_STR:
        return true;
    case TPL_OP_CONST: case TPL_OP_INT: case TPL_OP_NONE: case TPL_OP_TRUE: case TPL_OP_FALSE: case TPL_OP_DUP:
    case TPL_OP_LOAD_SLOT: case TPL_OP_LOAD_NAME:
        push = 1;
        break;
    case TPL_OP_FOR_NEXT: /* a loop's head: entered from its back jump, so nothing is in locals */
        return vk == 0;
    case TPL_OP_EQ: case TPL_OP_NE: nargs = 2; push = 1; break;
    case TPL_OP_FILTER: case TPL_OP_TEST:
        nargs = TPL_ARGW_NPOS(p->code[pc + 1]) + TPL_ARGW_NKW(p->code[pc + 1]);
        push = 1;
        break;
    case TPL_OP_ADDS: case TPL_OP_ADDS_RB: nargs = a; push = 1; break;
    case TPL_OP_PRINT_ADDS: case TPL_OP_PRINT_ADDS_RB: nargs = a; break;
    case TPL_OP_PRINT_ADDS_K: /* (its operands all in memory when there are more than 16) */
        if (a > 16) return vk == 0;
        nargs = a;
        break;
    case TPL_OP_CALL_NAME:
        nargs = TPL_ARGW_NPOS(p->code[pc + 2]) + TPL_ARGW_NKW(p->code[pc + 2]);
        push = 1;
        break;
    default:
        return false;
    }
    /* an instruction's arguments all in locals or all in memory; room for what it pushes */
    if (nargs && vk && vk < nargs) return false;
    return vk - (vk >= nargs ? nargs : 0) + push <= VMAX;
}

/* A printed `+` chain of n operands (PRINT_ADDS, PRINT_ADDS_RB, PRINT_ADDS_K): operand i is the
 * plain-string constant kv[i], or (kv[i] NULL) the next of the instruction's stack operands, whose
 * members and address are acc[j] and ptr[j] (a local's or memory's). Plain strings are printed
 * one after the other (the VM's adds_op) with one capacity check; anything else (or no room) is
 * the VM's code, `call`, with the values home. */
static void print_adds(tpl_sb *b, const vstack *vs, uint32_t pc, uint32_t n, const tpl_value *const *kv,
                       char (*acc)[24], char (*ptr)[24], const char *call)
{
    uint32_t klen = 0, ndyn = 0;
    for (uint32_t i = 0; i < n; i++)
        if (kv[i]) klen += kv[i]->len;
    tpl_sb_puts(b, "    if (");
    for (uint32_t i = 0, j = 0; i < n; i++)
        if (!kv[i]) tpl_sb_printf(b, "%sTPL_N_PLAIN(*%s)", ndyn++ ? " && " : "", ptr[j++]);
    if (!ndyn) tpl_sb_puts(b, "1");
    /* the operands' lengths and bytes read into locals before the first copy (stores into the
     * output may alias them: read after one, each would be loaded again), the output written
     * through a cursor and its length moved once */
    tpl_sb_puts(b, ") {\n");
    for (uint32_t i = 0, j = 0; i < n; i++)
        if (!kv[i]) {
            tpl_sb_printf(b, "        const char *s%u_ = %su.s;\n        size_t l%u_ = %slen;\n", j, acc[j], j, acc[j]);
            j++;
        }
    tpl_sb_printf(b, "        size_t n_ = %u", klen);
    for (uint32_t j = 0; j < ndyn; j++) tpl_sb_printf(b, " + l%u_", j);
    tpl_sb_printf(b, ";\n        if (__builtin_expect(ol + n_ < oc, 1)) {\n            char *o_ = ob + ol;\n%s",
                  ndyn || klen ? "" : "            (void)o_;\n");
    for (uint32_t i = 0, j = 0; i < n; i++) {
        bool last = true;
        for (uint32_t k = i + 1; k < n; k++) if (!kv[k] || kv[k]->len) last = false;
        if (kv[i] && kv[i]->len) {
            tpl_sb_puts(b, "            memcpy(o_, ");
            lit(b, kv[i]->u.s, kv[i]->len);
            tpl_sb_printf(b, ", %u);\n", kv[i]->len);
            if (!last) tpl_sb_printf(b, "            o_ += %u;\n", kv[i]->len);
        } else if (!kv[i]) {
            tpl_sb_printf(b, "            tpl_native_copy(o_, s%u_, l%u_);\n", j, j);
            if (!last) tpl_sb_printf(b, "            o_ += l%u_;\n", j);
            j++;
        }
    }
    tpl_sb_puts(b, "            ol += n_;\n");
    tpl_sb_puts(b, "            rc = 0;\n        } else ");
    v_call_in(b, vs, call, pc, NULL, "        ");
    tpl_sb_puts(b, "    } else ");
    v_call(b, vs, call, pc, NULL);
}

/* The slots whose loop may live in C locals (lloop[s] != 0; NULL when out of memory): no
 * instruction but FOR_INIT / FOR_NEXT names slot s, the function has no steps (steps: the VM
 * would see the slot) and the program no macros (a macro's or a caller's code reads its
 * defining frame's slots); not for ERB (a Ruby block runs in its definer's slots). */
static uint8_t *local_loops(const tpl_program *p, bool steps)
{
    uint8_t *l = calloc((size_t)p->nslots + 1, 1);
    if (!l || steps || p->nmacros || p->opts.syntax == TPL_SYNTAX_ERB) return l;
    for (size_t pc = 0; pc < p->ncode; pc = after(p, (uint32_t)pc)) /* the loops' slots */
        if (tpl_op_base(TPL_INSN_OP(p->code[pc])) == TPL_OP_FOR_INIT && TPL_INSN_A(p->code[pc]) < p->nslots)
            l[TPL_INSN_A(p->code[pc])] = 1;
    for (size_t pc = 0; pc < p->ncode; pc = after(p, (uint32_t)pc)) { /* less those another instruction names */
        uint32_t w = p->code[pc], op = tpl_op_base(TPL_INSN_OP(w));
        const tpl_opinfo *oi = &tpl_opinfo_table[TPL_INSN_OP(w)];
        if (op == TPL_OP_FOR_INIT || op == TPL_OP_FOR_NEXT) continue;
        for (size_t i = 0; oi->fmt[i] && i <= oi->extra; i++) {
            if (oi->fmt[i] != 's') continue;
            uint32_t s = i ? p->code[pc + i] : TPL_INSN_A(w);
            if (oi->flags & TPL_OPF_SLOT16) s &= 0xFFFF;
            if (s < p->nslots) l[s] = 0;
        }
    }
    return l;
}

/* What the code needs of the runtime (TPL_NATIVE_*, tpl_native.h), given whether it steps, its
 * local loops and the slots set at each instruction. */
static uint32_t native_flags(const tpl_program *p, bool steps, const uint8_t *lloop, const uint64_t *setin)
{
    /* direct: no step, no macro (so no other entry, no caller's frame), not ERB (a Ruby block's
     * entry); the instructions written as C call no template code of another level */
    if (steps || p->nmacros || p->opts.syntax == TPL_SYNTAX_ERB) return 0;
    uint32_t fl = TPL_NATIVE_DIRECT;
    if (!setin) return fl;
    for (size_t pc = 0; pc < p->ncode; pc = after(p, (uint32_t)pc)) { /* every slot a read names: stored first */
        uint32_t w = p->code[pc], op = tpl_op_base(TPL_INSN_OP(w)), a = TPL_INSN_A(w);
        const tpl_opinfo *oi = &tpl_opinfo_table[TPL_INSN_OP(w)];
        if (op == TPL_OP_STORE_SLOT || op == TPL_OP_UNSET_SLOT) continue;
        if (op == TPL_OP_LOAD_SLOT) {
            if (a >= 64 || !(setin[pc] >> a & 1)) return fl;
            continue;
        }
        for (size_t i = 0; oi->fmt[i] && i <= oi->extra; i++) {
            if (oi->fmt[i] != 's') continue;
            uint32_t sl = i ? p->code[pc + i] : a;
            if (oi->flags & TPL_OPF_SLOT16) sl &= 0xFFFF;
            /* (a loop in C locals: its FOR_INIT and FOR_NEXT never touch the slot) */
            if (!((op == TPL_OP_FOR_INIT || op == TPL_OP_FOR_NEXT) && sl < p->nslots && lloop[sl])) return fl;
        }
    }
    return fl | TPL_NATIVE_FRESH_SLOTS;
}

bool tpl_emit_native(tpl_sb *b, const tpl_program *p, const char *sym, size_t *nspecial, size_t *nstep, uint32_t *flags)
{
    *nspecial = *nstep = 0;
    *flags = 0;
    tpl_sb_printf(b, "\n/* The render as C: one label per instruction (L<pc>: the instruction as `tplc dump` shows it). */\n");
    tpl_sb_printf(b, "static int %s_native(tpl_native_frame *f, uint32_t entry, uint32_t npre)\n{\n", sym);
    if (p->ncode > NATIVE_MAX_CODE) {
        tpl_sb_printf(b, "    /* note: %zu code words (more than %u): the VM runs this program */\n", p->ncode,
                      NATIVE_MAX_CODE);
        tpl_sb_puts(b, "    return tpl_native_run_vm(f, entry, npre);\n}\n");
        return !b->failed;
    }
    tpl_sb_printf(b, "    const tpl_nvalue *const K = (const tpl_nvalue *)(const void *)%s_consts;\n", sym);
    tpl_sb_puts(b, "    tpl_nvalue *const L = f->slots;\n"
                   "    tpl_nvalue *sp = f->stack + npre;\n"
                   "    uint64_t T = 0; /* instructions run and not yet charged to the fuel */\n"
                   "    uint32_t pc = entry;\n"
                   "    int rc;\n"
                   "    const tpl_nvalue *e; /* a dict's value found by tpl_native_find */\n"
                   "    char *ob = *f->out; /* the output: buffer, length, capacity (TPL_N_OUT_SAVE / LOAD) */\n"
                   "    size_t ol = *f->out_len, oc = *f->out_cap;\n"
                   "    size_t nw; /* the bytes a fast path wrote */\n"
                   "    uint32_t *const H = f->hints; /* where lookups last found their keys (tpl_native_find) */\n"
                   "    const tpl_nvalue **const M = f->memo; /* the state's values found by earlier renders, or NULL */\n"
                   "    uint64_t *const A = f->kept; /* remembers() answers of earlier renders, or NULL */\n"
                   "    (void)K; (void)L; (void)rc; (void)e; (void)ob; (void)oc; (void)nw; (void)H; (void)M; (void)A;\n");
    /* The state does not change during a render (a host cannot set it while a render runs):
     * a name LOAD_NAME finds in it at several places keeps where it is (S<a>: found once per
     * call level), and a name CALL_NAME calls keeps whether the state shadows its builtin
     * (C<a>: -1 not known yet, 0 no, 1 yes). */
    uint8_t *hints = calloc(3 * (size_t)p->nnames + 3, 1); /* uses of name a: [3a] LOAD_NAME, [3a+1] attributes, [3a+2] CALL_NAME */
    if (!hints) return false;
    for (size_t pc = 0; pc < p->ncode; pc = after(p, (uint32_t)pc)) {
        uint32_t op = tpl_op_base(TPL_INSN_OP(p->code[pc])), a = TPL_INSN_A(p->code[pc]);
        uint8_t *u = a >= p->nnames ? NULL : op == TPL_OP_LOAD_NAME ? &hints[3 * a]
                   : op == TPL_OP_CALL_NAME ? (specialised(p, pc) ? &hints[3 * a + 2] : NULL)
                   : attr_inline(p, (uint32_t)pc) ? &hints[3 * a + 1] : NULL;
        if (u && *u < 2) ++*u;
    }
    /* an attribute looked up inside a loop (between a backward jump and its target) keeps its
     * hint in a local (HA<a>, from the render context's at the start) */
    for (size_t pc = 0; pc < p->ncode; pc = after(p, (uint32_t)pc)) {
        uint32_t op = tpl_op_base(TPL_INSN_OP(p->code[pc])), t = TPL_INSN_A(p->code[pc]);
        if (op == TPL_OP_JUMP && t <= pc)
            for (size_t q = t; q < pc; q = after(p, (uint32_t)q)) {
                uint32_t a = TPL_INSN_A(p->code[q]);
                if (a < p->nnames && attr_inline(p, (uint32_t)q)) hints[3 * a + 1] = 2;
            }
    }
    /* A name whose dict lookup follows another of the same name with only instructions that
     * keep dicts as they are between them (in code order: `message['role']` tested, then
     * printed) keeps what it found last in locals (MM<a> the dict, MV<a> its value): the next
     * lookup of the name in the same dict reads it back. Every instruction that may change a
     * dict forgets them (MM<a> = NULL before it), so they are right on every path that reaches a lookup,
     * a join or a step's dispatch included. */
    uint8_t *memo = calloc((size_t)p->nnames + 1, 1);
    uint32_t *seen = calloc((size_t)p->nnames + 1, sizeof *seen);
    if (!memo || !seen) { free(memo); free(seen); free(hints); return false; }
    for (size_t pc = 0, epoch = 1; pc < p->ncode; pc = after(p, (uint32_t)pc)) {
        uint32_t a = TPL_INSN_A(p->code[pc]);
        if (!keeps_dicts(p, (uint32_t)pc)) epoch++;
        else if (a < p->nnames && attr_inline(p, (uint32_t)pc)) {
            if (seen[a] == epoch) memo[a] = 1;
            seen[a] = (uint32_t)epoch;
        }
    }
    free(seen);
    /* whether the state shadows a builtin CALL_NAME calls (C<a>) is kept with the state memo too
     * (tpl_native_frame's kept, from its end: A[k] = 1 | shadowed << 1), for up to TPL_NKEPT / 4 names */
    uint32_t *ck = calloc((size_t)p->nnames + 1, sizeof *ck), nck = 0;
    if (!ck) { free(memo); free(hints); return false; }
    for (size_t a = 0; a < p->nnames; a++) {
        if (memo[a]) tpl_sb_printf(b, "    const void *MM%zu = NULL; /* the dict name %zu was found in last, and its value */\n"
                                      "    const tpl_nvalue *MV%zu = NULL;\n", a, a, a);
        if (hints[3 * a] > 1) tpl_sb_printf(b, "    const tpl_nvalue *S%zu = NULL;\n", a);
        if (hints[3 * a + 1] > 1) tpl_sb_printf(b, "    uint32_t HA%zu = H[%zu];\n", a, (2 * a + 1) % 256);
        if (hints[3 * a + 2] && nck < TPL_NKEPT / 4) { /* (what an earlier render over this state found) */
            ck[a] = TPL_NKEPT - 1 - nck++;
            tpl_sb_printf(b, "    int C%zu = A && (A[%u] & 1) ? (int)(A[%u] >> 1) : -1;\n", a, ck[a], ck[a]);
        } else if (hints[3 * a + 2]) tpl_sb_printf(b, "    int C%zu = -1;\n", a);
    }
    bool steps = false; /* does any instruction go through tpl_native_step (which may dispatch)? */
    for (size_t pc = 0; pc < p->ncode;) {
        steps |= !specialised(p, pc);
        pc = after(p, (uint32_t)pc);
    }
    /* A loop whose slot no instruction but its FOR_INIT and FOR_NEXT names, in a function with
     * no steps and no macros (nothing else can see the slot: the VM never runs a part of it),
     * keeps its state in C locals when it loops over a list: FL<s> the list (NULL: the loop is
     * the runtime's, in the slot), FI<s> the items given so far; no tpl_loop is made. */
    uint8_t *lloop = local_loops(p, steps);
    if (!lloop) { free(memo); free(hints); free(ck); return false; }
    for (uint32_t s = 0; s < p->nslots; s++)
        if (lloop[s]) tpl_sb_printf(b, "    const tpl_nlist *FL%u = NULL; /* loop %u: its list and position, in locals */\n"
                                       "    uint32_t FI%u = 0;\n    (void)FL%u; (void)FI%u;\n", s, s, s, s, s);
    size_t decl_at = b->len; /* where the locals R0.. are declared (their number known at the end) */
    tpl_sb_printf(b, "%s    switch (pc) {\n", steps ? "dispatch:\n" : "");
    uint8_t *resume = calloc(p->ncode + 8, 1);
    if (!resume) { free(memo); free(hints); free(ck); free(lloop); return false; }
    resume_points(p, resume);
    uint64_t *setin = slots_set(p, resume, steps); /* slots surely set at each instruction (NULL: none known) */
    *flags = native_flags(p, steps, lloop, setin);
    /* Fuel per straight run: the instructions of a run the emitter writes as C (each counted one
     * tick, the VM's count) are added to T once, at the run's first instruction (T += k). A run
     * starts at a label and ends after an instruction that can leave it (a jump, a branch, a
     * loop step, a printed FILTER_PRINT) or charges T (a call, HALT), and before one that steps
     * (tpl_native_step takes T as it is there), so T is the VM's count wherever it is read:
     * charges, steps, and the ends of runs. run[pc]: 0 outside a run, 1 in one, k + 1 at the
     * start of a run of k. */
    uint32_t *run = calloc(p->ncode + 1, sizeof *run);
    if (!run) { free(memo); free(hints); free(resume); free(setin); free(ck); free(lloop); return false; }
    for (size_t pc = 0, cur = SIZE_MAX; pc < p->ncode; pc = after(p, (uint32_t)pc)) {
        uint32_t w = p->code[pc], op = tpl_op_base(TPL_INSN_OP(w));
        if (!specialised(p, pc)) { cur = SIZE_MAX; continue; }
        if (cur == SIZE_MAX || resume[pc]) { cur = pc; run[pc] = 1; }
        else run[pc] = 1;
        run[cur]++;
        bool ends = op == TPL_OP_JUMP || op == TPL_OP_JF_PY || op == TPL_OP_JT_PY || op == TPL_OP_JF_PY_KEEP ||
                    op == TPL_OP_JT_PY_KEEP || op == TPL_OP_JF_RB || op == TPL_OP_JT_RB || op == TPL_OP_JF_RB_KEEP ||
                    op == TPL_OP_JT_RB_KEEP || op == TPL_OP_SWITCH_STR || op == TPL_OP_FOR_NEXT ||
                    op == TPL_OP_CALL_NAME || op == TPL_OP_HALT || TPL_INSN_OP(w) == TPL_OP_FILTER_PRINT;
        if (ends) cur = SIZE_MAX;
    }
    for (size_t pc = 0; pc < p->ncode; pc++)
        if (resume[pc]) tpl_sb_printf(b, "    case %zu: goto L%zu;\n", pc, pc);
    /* an instruction start the switch does not list (a VM fused path ending somewhere new):
     * the VM runs the rest of this level */
    tpl_sb_puts(b, "    default:\n        f->ticks = T;\n        TPL_N_OUT_SAVE();\n"
                   "        return tpl_native_run_vm(f, pc, (uint32_t)(sp - f->stack));\n    }\n");
    kstack ks = { .kd = 0 };
    vstack vs = { .vk = 0 };
    /* The state memo (tpl_native_frame's memo): LOAD_NAME of name a < TPL_NMEMO keeps what it
     * found in the state at M[a]; a chain of attributes from it (each GETATTR / GETITEM_STR right
     * after the LOAD_NAME or the chain's last lookup, not a jump target) at M[nnames + k]. Its
     * object came from the state when it is not at its home sp[t] (a slow path leaves it there). */
    int chain = -1; /* the local holding a value of a chain from the state (the last instruction's push) */
    uint32_t nchain = 0;
    uint32_t nkept = 0; /* remembers("an ASCII constant") calls given a kept answer (A[k]) */
    uint32_t chain_end = UINT32_MAX; /* the last lookup of the chain being written: label LC<pc> after it */
    char c0[24], p0[24], h0[24], call[160], then[64]; /* a value's members, address and home; code */
    for (size_t pcz = 0; pcz < p->ncode;) {
        uint32_t pc = (uint32_t)pcz;
        uint32_t w = p->code[pc], op = tpl_op_base(TPL_INSN_OP(w)), a = TPL_INSN_A(w);
        const tpl_opinfo *oi = &tpl_opinfo_table[op];
        uint32_t next = pc + 1 + oi->extra;
        uint32_t x1 = oi->extra >= 1 ? p->code[pc + 1] : 0;
        uint32_t line = 0, col = 0;
        tpl_program_span(p, pc, &line, &col, NULL);
        /* every path into a label finds the stack in memory; so do steps and the instructions
         * written without the locals */
        if (resume[pc] || !v_ok(p, pc, vs.vk)) v_flush(b, &vs, "    ");
        vs.set = setin ? setin[pc] : 0; /* (slots_set: stored on every path here, nothing since unset them) */
        /* a label where something jumps or the dispatch may go (the others would be unused) */
        if (resume[pc]) tpl_sb_printf(b, "L%u: /* %u:%u %s", pc, line, col, oi->name);
        else tpl_sb_printf(b, "    /* %u: %u:%u %s", pc, line, col, oi->name);
        if (strchr(oi->fmt, 'n') == oi->fmt && a < p->nnames) { tpl_sb_putc(b, ' '); comment_name(b, &p->names[a].s); }
        else if (oi->fmt[0] == 'k' && a < p->nconsts && op != TPL_OP_TEXT) { tpl_sb_putc(b, ' '); comment_name(b, &p->consts[a]); }
        else if (oi->fmt[0] == 'b' && tpl_lib_builtin((int)a)) { /* by name: ids are not in the generated file */
            const tpl_builtin_info *bi = tpl_lib_builtin((int)a);
            tpl_value nm = tpl_v_str(bi->name, bi->namelen);
            tpl_sb_putc(b, ' ');
            comment_name(b, &nm);
        } else if (oi->fmt[0] != '-' && oi->fmt[0]) tpl_sb_printf(b, " %u", a);
        tpl_sb_puts(b, " */\n");
        if (resume[pc] & 2) ks.kd = 0; /* paths join here */
        bool special = true;
        if (!keeps_dicts(p, pc)) /* (before the tick: a run's tick stays first) */
            for (size_t m = 0; m < p->nnames; m++)
                if (memo[m]) tpl_sb_printf(b, "    MM%zu = NULL;\n", m);
        size_t mark = b->len; /* where this instruction's code starts (its tick: "    T++;\n") */
        /* An instruction with n arguments (FILTER, ADDS, EQ, CALL_NAME...) finds them all in
         * locals (P<base>.., homes sp[base]..; its result goes to P<base>) or all in memory
         * (sp moved down past them first: sp[0].., its result pushed in memory). */
        uint32_t nargs = 0;
        switch (op) {
        case TPL_OP_EQ: case TPL_OP_NE: nargs = 2; break;
        case TPL_OP_FILTER: case TPL_OP_TEST: nargs = TPL_ARGW_NPOS(x1) + TPL_ARGW_NKW(x1); break;
        case TPL_OP_ADDS: case TPL_OP_PRINT_ADDS: case TPL_OP_ADDS_RB: case TPL_OP_PRINT_ADDS_RB: case TPL_OP_PRINT_ADDS_K:
            nargs = a;
            break;
        case TPL_OP_CALL_NAME: nargs = TPL_ARGW_NPOS(p->code[pc + 2]) + TPL_ARGW_NKW(p->code[pc + 2]); break;
        default: break;
        }
        bool inmem = vs.vk == 0; /* the arguments are in memory */
        uint32_t base = inmem ? 0 : vs.vk - nargs;
        char arga[16][24], argp[16][24]; /* the first 16 arguments' members and addresses */
        for (uint32_t i = 0; i < nargs && i < 16; i++) {
            if (inmem) { snprintf(arga[i], 24, "sp[%u].", i); snprintf(argp[i], 24, "&sp[%u]", i); }
            else { snprintf(arga[i], 24, "P%u->", base + i); snprintf(argp[i], 24, "P%u", base + i); }
        }
        uint32_t j = vs.vk; /* the local a push goes to */
        int chained = !resume[pc] && vs.vk && chain == (int)vs.vk - 1 ? chain : -1;
        chain = -1;
        switch (op) {
        case TPL_OP_TEXT:
            tpl_sb_printf(b, "    T++;\n    TPL_N_TEXT(%u, ", pc);
            lit(b, p->consts[a].u.s, p->consts[a].len);
            tpl_sb_printf(b, ", %u);\n", p->consts[a].len);
            break;
        case TPL_OP_CONST:
            tpl_sb_printf(b, "    T++;\n    P%u = &K[%u];\n", j, a);
            v_pushed(&vs, false, -1);
            break;
        case TPL_OP_INT:
            tpl_sb_printf(b, "    T++;\n    sp[%u] = tpl_native_v(TPL_NT_INT, %d);\n    P%u = &sp[%u];\n", j,
                          (int32_t)(a << 8) >> 8, j, j);
            v_pushed(&vs, true, -1);
            break;
        case TPL_OP_NONE: case TPL_OP_TRUE: case TPL_OP_FALSE:
            tpl_sb_printf(b, "    T++;\n    sp[%u] = tpl_native_v(%s);\n    P%u = &sp[%u];\n", j,
                          op == TPL_OP_NONE ? "TPL_NT_NONE, 0" : op == TPL_OP_TRUE ? "TPL_NT_BOOL, 1" : "TPL_NT_BOOL, 0", j, j);
            v_pushed(&vs, true, -1);
            break;
        case TPL_OP_POP:
            tpl_sb_puts(b, "    T++;\n");
            v_pop(b, &vs, 1);
            break;
        case TPL_OP_DUP: { /* (the copy points where the value is) */
            int32_t s = vs.vk ? vs.slot[vs.vk - 1] : -1;
            v_ref(&vs, 0, NULL, p0, NULL);
            tpl_sb_printf(b, "    T++;\n    P%u = %s;\n", j, p0);
            v_pushed(&vs, false, s);
            break;
        }
        case TPL_OP_LOAD_SLOT:
            if (a < 64 && (vs.set >> a & 1)) { /* stored above: set */
                tpl_sb_printf(b, "    T++;\n    P%u = &L[%u];\n", j, a);
                v_pushed(&vs, false, (int32_t)a);
                break;
            }
            tpl_sb_printf(b, "    T++;\n    if (L[%u].type != TPL_NT_UNSET) P%u = &L[%u];\n    else ", a, j, a);
            snprintf(call, sizeof call, "tpl_native_load_name(f, %u, &sp[%u])", x1, j);
            snprintf(then, sizeof then, "P%u = &sp[%u];", j, j);
            v_call(b, &vs, call, pc, then);
            v_pushed(&vs, false, (int32_t)a);
            break;
        case TPL_OP_STORE_SLOT:
            tpl_sb_puts(b, "    T++;\n");
            v_unslot(b, &vs, a, vs.vk ? vs.vk - 1 : 0);
            v_ref(&vs, 0, NULL, p0, NULL);
            tpl_sb_printf(b, "    TPL_N_COPY(L[%u], *%s);\n", a, p0);
            v_pop(b, &vs, 1);
            if (a < 64) vs.set |= (uint64_t)1 << a; /* (a value on the stack is never unset) */
            break;
        case TPL_OP_UNSET_SLOT:
            tpl_sb_puts(b, "    T++;\n");
            v_unslot(b, &vs, a, vs.vk);
            tpl_sb_printf(b, "    L[%u] = tpl_native_v(TPL_NT_UNSET, 0);\n", a);
            if (a < 64) vs.set &= ~((uint64_t)1 << a);
            break;
        case TPL_OP_JUMP:
            tpl_sb_puts(b, "    T++;\n");
            v_flush(b, &vs, "    ");
            jump(b, pc, a, "    ");
            break;
        case TPL_OP_JF_PY: case TPL_OP_JT_PY: case TPL_OP_JF_PY_KEEP: case TPL_OP_JT_PY_KEEP:
        case TPL_OP_JF_RB: case TPL_OP_JT_RB: case TPL_OP_JF_RB_KEEP: case TPL_OP_JT_RB_KEEP: {
            /* the test on the top value; then the rest flushed (and, for _KEEP, the value too: the
             * target finds it on the stack) and the jump */
            bool keep = op == TPL_OP_JF_PY_KEEP || op == TPL_OP_JT_PY_KEEP || op == TPL_OP_JF_RB_KEEP ||
                        op == TPL_OP_JT_RB_KEEP;
            bool onfalse = op == TPL_OP_JF_PY || op == TPL_OP_JF_PY_KEEP || op == TPL_OP_JF_RB || op == TPL_OP_JF_RB_KEEP;
            bool py = op == TPL_OP_JF_PY || op == TPL_OP_JT_PY || op == TPL_OP_JF_PY_KEEP || op == TPL_OP_JT_PY_KEEP;
            v_ref(&vs, 0, NULL, p0, h0);
            tpl_sb_puts(b, "    T++;\n");
            if (py) {
                tpl_sb_printf(b, "    if ((rc = tpl_native_truthy(%s)) < 0) ", p0);
                snprintf(call, sizeof call, "(rc = tpl_native_truthy_py(f, &%s))", h0);
                v_call(b, &vs, call, pc, NULL);
            } else tpl_sb_printf(b, "    rc = tpl_native_truthy_rb(%s);\n", p0);
            if (keep) v_flush(b, &vs, "    ");
            else if (vs.vk) { /* the tested value is a local: the ones below it go home */
                v_flush_code(b, &vs, vs.vk - 1, "    ");
                vs.vk = 0;
            } else tpl_sb_puts(b, "    sp--;\n");
            tpl_sb_printf(b, "    if (%src) {\n", onfalse ? "!" : "");
            jump(b, pc, a, "        ");
            tpl_sb_puts(b, "    }\n");
            if (keep) tpl_sb_puts(b, "    sp--;\n");
            break;
        }
        case TPL_OP_PRINT_PY: case TPL_OP_PRINT_RB:
            v_ref(&vs, 0, c0, NULL, h0);
            tpl_sb_printf(b, "    T++;\n    if (%stype == TPL_NT_STR) TPL_N_PUT(%u, %su.s, %slen);\n", c0, pc, c0, c0);
            if (op == TPL_OP_PRINT_PY) /* a non-negative int: its digits in place, as the VM's PRINT_PY */
                tpl_sb_printf(b, "    else if (%stype == TPL_NT_INT && %su.i >= 0 && ol + 20 < oc)\n"
                                 "        ol += tpl_native_decimal(ob + ol, (uint64_t)%su.i);\n", c0, c0, c0);
            tpl_sb_puts(b, "    else ");
            snprintf(call, sizeof call, "TPL_N_C(tpl_native_print_%s(f, &%s))", op == TPL_OP_PRINT_PY ? "py" : "rb", h0);
            v_call(b, &vs, call, pc, NULL);
            v_pop(b, &vs, 1);
            break;
        case TPL_OP_FILTER: case TPL_OP_TEST: { /* the builtin called with the VM's code (its fast paths) */
            if (!specialised(p, pc)) { special = false; break; }
            tpl_sb_puts(b, "    T++;\n");
            if (inmem) tpl_sb_printf(b, "    sp -= %u;\n", nargs);
            bool plainf = op == TPL_OP_FILTER && TPL_ARGW_NKW(x1) == 0;
            bool fprint = TPL_INSN_OP(w) == TPL_OP_FILTER_PRINT;
            bool trim = plainf && a == (uint32_t)tpl_stdlib.id_trim && TPL_ARGW_NPOS(x1) == 1;
            bool dflt = plainf && a == (uint32_t)tpl_stdlib.id_default && TPL_ARGW_NPOS(x1) <= 2;
            if ((trim || dflt) && !inmem && !vs.home[base]) { /* changed in place: on its home copy */
                tpl_sb_printf(b, "    TPL_N_COPY(sp[%u], *P%u);\n    P%u = &sp[%u];\n", base, base, base, base);
                vs.home[base] = true;
            }
            if (trim || dflt) snprintf(arga[0], 24, "sp[%u].", base);
            const char *s0 = arga[0], *s1 = nargs > 1 ? arga[1] : "";
            if (trim) /* the VM's fast path, inline */
                tpl_sb_printf(b, "    if (sp[%u].type == TPL_NT_STR && tpl_native_trim(&sp[%u])) rc = 0;\n    else ", base, base);
            else if (plainf && fprint && (a == (uint32_t)tpl_stdlib.id_upper || a == (uint32_t)tpl_stdlib.id_lower) &&
                     TPL_ARGW_NPOS(x1) == 1) /* ASCII and Latin-1: into the output, as the VM's fast path */
                tpl_sb_printf(b, "    if (%stype == TPL_NT_STR && ol + %slen < oc &&\n"
                                 "        tpl_native_case_latin1(ob + ol, (const unsigned char *)%su.s, %slen, %d) == %slen) {\n"
                                 "        ol += %slen;\n        rc = 1;\n    } else ", s0, s0, s0, s0,
                              a == (uint32_t)tpl_stdlib.id_upper, s0, s0);
            else if (plainf && fprint && a == (uint32_t)tpl_stdlib.id_join && TPL_ARGW_NPOS(x1) <= 2) { /* strings: into the output */
                bool sep = TPL_ARGW_NPOS(x1) == 2;
                tpl_sb_printf(b, "    if (%stype == TPL_NT_LIST && %saux < TPL_NLAZY_ITER", s0, s0);
                if (sep) tpl_sb_printf(b, " && %stype == TPL_NT_STR", s1);
                tpl_sb_printf(b, " &&\n        (nw = tpl_native_join_put(ob + ol, oc - ol, %s, ", argp[0]);
                if (sep) tpl_sb_printf(b, "%su.s, %slen", s1, s1);
                else tpl_sb_puts(b, "\"\", 0");
                tpl_sb_puts(b, ")) != (size_t)-1) {\n        ol += nw;\n        rc = 1;\n    } else ");
            } else if (dflt) {
                /* default(x) (boolean false): an undefined value replaced, anything else kept */
                tpl_sb_printf(b, "    rc = 0;\n    if (%stype == TPL_NT_UNDEF || %stype == TPL_NT_UNSET) {\n", s0, s0);
                if (TPL_ARGW_NPOS(x1) == 2) tpl_sb_printf(b, "        TPL_N_COPY(sp[%u], *%s);\n", base, argp[1]);
                else tpl_sb_printf(b, "        sp[%u] = tpl_native_v(TPL_NT_STR, 0);\n        sp[%u].u.s = \"\";\n", base, base);
                tpl_sb_puts(b, "    }\n");
            } else tpl_sb_puts(b, "    ");
            if (!dflt) {
                snprintf(call, sizeof call, "TPL_N_C(tpl_native_filter(f, %u, &sp[%u]))", pc, base);
                v_call(b, &vs, call, pc, NULL);
            }
            if (fprint) { /* printed: the PRINT_PY after it done too (the values below go home) */
                tpl_sb_puts(b, "    if (rc) {\n        T++;\n");
                v_flush_code(b, &vs, base, "        ");
                tpl_sb_printf(b, "        goto L%u;\n    }\n", after(p, next));
            }
            if (inmem) tpl_sb_puts(b, "    sp++;\n");
            else { /* the result at its home (the slow path pointed P<base> there) */
                vs.vk = base + 1;
                vs.home[base] = true;
                vs.slot[base] = -1;
            }
            break;
        }
        case TPL_OP_ADDS: case TPL_OP_PRINT_ADDS: case TPL_OP_ADDS_RB: case TPL_OP_PRINT_ADDS_RB: {
            bool prints = op == TPL_OP_PRINT_ADDS || op == TPL_OP_PRINT_ADDS_RB;
            tpl_sb_puts(b, "    T++;\n");
            if (inmem) tpl_sb_printf(b, "    sp -= %u;\n", a);
            snprintf(call, sizeof call, "TPL_N_C(tpl_native_adds(f, %u, &sp[%u]))", pc, base);
            if (prints && a <= 16) { /* the operands the code pushed as constants are literals here */
                const tpl_value *kv[16];
                char dacc[16][24], dptr[16][24];
                uint32_t nd = 0;
                for (uint32_t i = 0; i < a; i++) {
                    int32_t c = ks_at(&ks, a - 1 - i);
                    kv[i] = c >= 0 ? &p->consts[c] : NULL;
                    if (c < 0) { memcpy(dacc[nd], arga[i], 24); memcpy(dptr[nd], argp[i], 24); nd++; }
                }
                print_adds(b, &vs, pc, a, kv, dacc, dptr, call);
            } else {
                tpl_sb_puts(b, "    ");
                v_call(b, &vs, call, pc, NULL);
            }
            /* (1 with the sum in the first operand's place for ADDS, 0 when printed) */
            if (inmem) { if (!prints) tpl_sb_puts(b, "    sp++;\n"); }
            else if (prints) vs.vk = base;
            else { /* the sum at its home (the slow path pointed P<base> there) */
                vs.vk = base + 1;
                vs.home[base] = true;
                vs.slot[base] = -1;
            }
            break;
        }
        case TPL_OP_PRINT_ADDS_K: { /* its literals from its tuple (the verifier's: plain strings) */
            const tpl_list *l = p->consts[p->code[pc + 1]].u.list;
            const tpl_value *kv[TPL_ADDS_K_MAX];
            char dacc[TPL_ADDS_K_MAX][24], dptr[TPL_ADDS_K_MAX][24];
            uint32_t j = 0;
            for (uint32_t i = 0; i < l->len && i < TPL_ADDS_K_MAX; i++) {
                kv[i] = l->items[i].type == TPL_T_STR ? &l->items[i] : NULL;
                if (kv[i]) continue;
                if (inmem || j >= 16) { /* (v_ok: more than 16 operands are in memory) */
                    snprintf(dacc[j], 24, "sp[%u].", j);
                    snprintf(dptr[j], 24, "&sp[%u]", j);
                } else {
                    memcpy(dacc[j], arga[j], 24);
                    memcpy(dptr[j], argp[j], 24);
                }
                j++;
            }
            tpl_sb_puts(b, "    T++;\n");
            if (inmem) tpl_sb_printf(b, "    sp -= %u;\n", a);
            snprintf(call, sizeof call, "TPL_N_C(tpl_native_adds(f, %u, &sp[%u]))", pc, base);
            print_adds(b, &vs, pc, l->len, kv, dacc, dptr, call);
            if (!inmem) vs.vk = base;
            break;
        }
        case TPL_OP_CALL_NAME: { /* the fuel charged as the VM charges at calls */
            if (!specialised(p, pc)) { special = false; break; }
            tpl_sb_puts(b, "    T++;\n");
            v_spill(b, &vs, vs.vk, true, "    ");
            v_all_home(&vs);
            tpl_sb_printf(b, "    TPL_N_CHARGE(%u);\n", pc);
            if (inmem) tpl_sb_printf(b, "    sp -= %u;\n", nargs);
            snprintf(h0, sizeof h0, "sp[%u]", base);
            int32_t karg = TPL_ARGW_NPOS(p->code[pc + 2]) == 1 && nargs == 1 ? ks_at(&ks, 0) : -1;
            if (karg >= 0 && (x1 != tpl_stdlib.id_remembers || !ascii(&p->consts[karg]))) karg = -1;
            if (a < p->nnames) { /* the builtin straight away when the state does not shadow it */
                tpl_sb_printf(b, "    if (C%u < 0) {\n        C%u = f->state->type == TPL_NT_MAP && ", a, a);
                find(b, p, "f->state", a, -1, false);
                tpl_sb_puts(b, " != NULL;\n");
                if (ck[a]) tpl_sb_printf(b, "        if (A) A[%u] = 1 | (uint64_t)C%u << 1;\n", ck[a], a);
                tpl_sb_puts(b, "    }\n");
                if (karg >= 0 && nkept < TPL_NKEPT - nck) { /* an answer kept by an earlier render, its fuel charged here */
                    uint32_t k = nkept++;
                    tpl_sb_printf(b, "    if (!C%u && A && (A[%u] & 1) && (A[%u] >> 2) < *f->fuel) {\n"
                                     "        *f->fuel -= A[%u] >> 2;\n"
                                     "        %s = tpl_native_v(TPL_NT_BOOL, (int64_t)(A[%u] >> 1 & 1));\n    } else ",
                                  a, k, k, k, h0, k);
                    tpl_sb_printf(b, "if (TPL_N_C(C%u ? tpl_native_call_name(f, %u, &%s) : tpl_native_remembers_kept(f, ", a, pc, h0);
                    lit(b, p->consts[karg].u.s, p->consts[karg].len);
                    tpl_sb_printf(b, ", %u, &%s, A ? &A[%u] : NULL)", p->consts[karg].len, h0, k);
                } else if (karg >= 0) { /* remembers("an ASCII constant"): no binding, no NFC */
                    tpl_sb_printf(b, "    if (TPL_N_C(C%u ? tpl_native_call_name(f, %u, &%s) : ", a, pc, h0);
                    tpl_sb_puts(b, "tpl_native_remembers(f, ");
                    lit(b, p->consts[karg].u.s, p->consts[karg].len);
                    tpl_sb_printf(b, ", %u, &%s)", p->consts[karg].len, h0);
                } else {
                    tpl_sb_printf(b, "    if (TPL_N_C(C%u ? tpl_native_call_name(f, %u, &%s) : ", a, pc, h0);
                    tpl_sb_printf(b, "tpl_native_call_builtin(f, %u, &%s)", pc, h0);
                }
                tpl_sb_printf(b, ") < 0) TPL_N_FAIL(%u);\n", pc);
            } else tpl_sb_printf(b, "    if (TPL_N_C(tpl_native_call_name(f, %u, &%s)) < 0) TPL_N_FAIL(%u);\n", pc, h0, pc);
            if (inmem) tpl_sb_puts(b, "    sp++;\n");
            else {
                if (!nargs) tpl_sb_printf(b, "    P%u = &sp[%u];\n", base, base);
                vs.vk = base;
                v_pushed(&vs, true, -1);
            }
            break;
        }
        case TPL_OP_SWITCH_STR: { /* a string equal to item i: the target of the JUMP at pc+2+i */
            if (!specialised(p, pc)) { special = false; break; }
            const tpl_list *l = p->consts[a].u.list;
            tpl_sb_puts(b, "    T++;\n");
            if (vs.vk) { /* the value a local, the ones below it home */
                snprintf(c0, sizeof c0, "P%u->", vs.vk - 1);
                v_flush_code(b, &vs, vs.vk - 1, "    ");
                vs.vk = 0;
            } else {
                tpl_sb_puts(b, "    sp--;\n");
                snprintf(c0, sizeof c0, "sp[0].");
            }
            tpl_sb_printf(b, "    if (%stype == TPL_NT_STR) {\n        switch (%slen) {\n", c0, c0);
            /* by length, then the bytes (the first equal item wins, as the VM's scan in order) */
            for (uint32_t i = 0; i < l->len; i++) {
                bool first = true;
                for (uint32_t k = 0; k < i; k++) first &= l->items[k].len != l->items[i].len;
                if (!first) continue;
                tpl_sb_printf(b, "        case %u:\n", l->items[i].len);
                for (uint32_t k = i; k < l->len; k++) {
                    if (l->items[k].len != l->items[i].len) continue;
                    if (l->items[k].len == 0) tpl_sb_puts(b, "            {\n");
                    else {
                        tpl_sb_printf(b, "            if (tpl_native_eq(%su.s, ", c0);
                        lit(b, l->items[k].u.s, l->items[k].len);
                        tpl_sb_printf(b, ", %u)) {\n", l->items[k].len);
                    }
                    jump(b, pc, TPL_INSN_A(p->code[pc + 2 + k]), "                ");
                    tpl_sb_puts(b, "            }\n");
                }
                tpl_sb_puts(b, "            break;\n");
            }
            tpl_sb_puts(b, "        }\n");
            jump(b, pc, TPL_INSN_A(p->code[pc + 1]), "        ");
            tpl_sb_printf(b, "    }\n    goto L%u;\n", pc + 2 + l->len);
            break;
        }
        case TPL_OP_FOR_INIT:
            v_ref(&vs, 0, NULL, NULL, h0);
            tpl_sb_puts(b, "    T++;\n");
            v_spill(b, &vs, vs.vk, true, "    ");
            v_all_home(&vs);
            if (a < p->nslots && lloop[a]) /* a list (no iterator, no big range): as for_init_op's */
                tpl_sb_printf(b, "    if (%s.type == TPL_NT_LIST && !(%s.flags & TPL_NF_RANGE_BIG) && %s.aux < TPL_NLAZY_ITER) {\n"
                                 "        FL%u = (const tpl_nlist *)%s.u.p;\n        FI%u = 0;\n"
                                 "    } else {\n        FL%u = NULL;\n"
                                 "        if (TPL_N_C(tpl_native_for_init(f, %u, &%s)) < 0) TPL_N_FAIL(%u);\n    }\n",
                              h0, h0, h0, a, h0, a, a, a, h0, pc);
            else tpl_sb_printf(b, "    if (TPL_N_C(tpl_native_for_init(f, %u, &%s)) < 0) TPL_N_FAIL(%u);\n", a, h0, pc);
            v_pop(b, &vs, 1);
            break;
        case TPL_OP_FOR_NEXT: /* (nothing in locals: v_ok) the item pointed at where it is; a pull
                               * from an iterator may run template code (a loop filter): the output
                               * locals are written back around it */
            if (a < p->nslots && lloop[a])
                tpl_sb_printf(b, "    T++;\n    if (FL%u) rc = FI%u < FL%u->len ? (P0 = &FL%u->items[FI%u++], 1) : 0;\n"
                                 "    else if ((rc = tpl_native_for_ref(&L[%u], &P0)) < 0) {\n"
                                 "        if (TPL_N_C(tpl_native_for_next(f, %u, &sp[0])) < 0) TPL_N_FAIL(%u);\n"
                                 "        P0 = &sp[0];\n    }\n    if (!rc) {\n", a, a, a, a, a, a, a, pc);
            else
                tpl_sb_printf(b, "    T++;\n    if ((rc = tpl_native_for_ref(&L[%u], &P0)) < 0) {\n"
                                 "        if (TPL_N_C(tpl_native_for_next(f, %u, &sp[0])) < 0) TPL_N_FAIL(%u);\n"
                                 "        P0 = &sp[0];\n    }\n    if (!rc) {\n", a, a, pc);
            jump(b, pc, x1, "        ");
            tpl_sb_puts(b, "    }\n");
            v_pushed(&vs, false, -1);
            break;
        case TPL_OP_GETATTR: case TPL_OP_GETITEM_STR: {
            /* loop.index & co.: read from the loop state without a name lookup */
            static const char *const loop_names[] = { "index", "index0", "first", "last", "length" };
            const tpl_value *nm = &p->names[a].s;
            int which = -1;
            for (int i = 0; op == TPL_OP_GETATTR && i < 5; i++)
                if (nm->len == strlen(loop_names[i]) && memcmp(nm->u.s, loop_names[i], nm->len) == 0) which = i;
            tpl_sb_puts(b, "    T++;\n");
            if (!vs.vk) { /* the value taken from memory into P0 (the result points where it is found) */
                tpl_sb_puts(b, "    sp--;\n    P0 = &sp[0];\n");
                v_pushed(&vs, true, -1);
            }
            uint32_t t = vs.vk - 1;
            snprintf(c0, sizeof c0, "P%u->", t);
            snprintf(p0, sizeof p0, "P%u", t);
            snprintf(h0, sizeof h0, "sp[%u]", t);
            snprintf(call, sizeof call, "TPL_N_C(tpl_native_%s(f, %u, &%s))", op == TPL_OP_GETATTR ? "getattr" : "getitem_str",
                     a, h0);
            if (which >= 0) {
                /* a loop's index, index0 and first (and, over a list, last and length) read from
                 * its state at its home, as tpl_native_loop_attr computes them; anything else (an
                 * iterator's last / length pull from it) through the VM's code */
                static const char *const val[] = {
                    "TPL_NT_INT, (int64_t)((const tpl_nloop *)%su.p)->i",
                    "TPL_NT_INT, (int64_t)((const tpl_nloop *)%su.p)->i - 1",
                    "TPL_NT_BOOL, ((const tpl_nloop *)%su.p)->i == 1",
                    "TPL_NT_BOOL, ((const tpl_nloop *)%su.p)->i == ((const tpl_nloop *)%su.p)->items->len",
                    /* (len() once, as loop_attr) */
                    ("TPL_NT_INT, (int64_t)(((tpl_nloop *)%su.p)->len1 ? ((tpl_nloop *)%su.p)->len1 : "
                     "(((tpl_nloop *)%su.p)->len1 = ((tpl_nloop *)%su.p)->items->len + 1)) - 1"),
                };
                char expr[400];
                snprintf(expr, sizeof expr, val[which], c0, c0, c0, c0);
                /* (loop.last at the end: tpl_native_loop_attr, which ends the list's iterator; a
                 * pull from an iterator may run template code: the output locals written back) */
                char endq[120] = "";
                if (which == 3)
                    snprintf(endq, sizeof endq, " && ((const tpl_nloop *)%su.p)->i != ((const tpl_nloop *)%su.p)->items->len", c0, c0);
                tpl_sb_printf(b, "    if (%stype == TPL_NT_LOOP%s%s%s%s) %s = tpl_native_v(%s);\n    else ", c0,
                              which >= 3 ? " && !((const tpl_nloop *)" : "", which >= 3 ? c0 : "",
                              which >= 3 ? "u.p)->src" : "", endq, h0, expr);
                char lcall[400];
                snprintf(lcall, sizeof lcall, "(%stype == TPL_NT_LOOP ? TPL_N_C(tpl_native_loop_attr(f, %d, &%s)) : %s)", c0, which,
                         h0, call);
                v_call(b, &vs, lcall, pc, NULL);
                tpl_sb_printf(b, "    %s = &%s;\n", p0, h0);
                vs.home[t] = true; /* (the value at its home on both paths) */
            } else {
                /* a dict's key found here (for obj.name: a name that is no dict method, which
                 * GETATTR would find first), else the VM's code (a missing key, other types) */
                if (attr_inline(p, pc) && memo[a]) {
                    tpl_sb_printf(b, "    if (%stype == TPL_NT_MAP && %su.p == MM%u) %s = MV%u;\n"
                                     "    else if (%stype == TPL_NT_MAP && ", c0, c0, a, p0, a, c0);
                    find(b, p, p0, a, 1, hints[3 * a + 1] > 1);
                    tpl_sb_printf(b, ") {\n        MM%u = %su.p;\n        MV%u = e;\n        %s = e;\n    } else ", a, c0, a, p0);
                } else if (attr_inline(p, pc) && chained == (int)t && p->nnames + nchain < TPL_NMEMO) {
                    uint32_t k = (uint32_t)p->nnames + nchain++;
                    tpl_sb_printf(b, "    if (M && %s != &%s && (e = M[%u])) %s = e;\n"
                                     "    else if (%stype == TPL_NT_MAP && ", p0, h0, k, p0, c0);
                    find(b, p, p0, a, 1, hints[3 * a + 1] > 1);
                    tpl_sb_printf(b, ") {\n        if (M && %s != &%s) M[%u] = e;\n        %s = e;\n    } else ",
                                  p0, h0, k, p0);
                    chain = (int)t;
                } else if (attr_inline(p, pc)) {
                    tpl_sb_printf(b, "    if (%stype == TPL_NT_MAP && ", c0);
                    find(b, p, p0, a, 1, hints[3 * a + 1] > 1);
                    tpl_sb_printf(b, ") %s = e;\n    else ", p0);
                } else tpl_sb_puts(b, "    ");
                if (miss_defaulted(p, pc, resume)) /* a missing key's undefined, replaced by `default` next */
                    tpl_sb_printf(b, "if (%stype == TPL_NT_MAP) {\n        %s = tpl_native_v(TPL_NT_UNDEF, 0);\n"
                                     "        %s = &%s;\n    } else ", c0, h0, p0, h0);
                v_call(b, &vs, call, pc, NULL);
                vs.home[t] = false; /* (found: where it is) */
            }
            vs.slot[t] = -1;
            break;
        }
        case TPL_OP_LOAD_NAME: { /* the state, `call`, a builtin global, else undefined: never fails */
            const char *tick1 = "    T++;\n"; /* (first, once: a run's tick) */
            if (a < TPL_NMEMO) { /* a chain of lookups from it whose end an earlier render kept: its value at once */
                uint32_t last = UINT32_MAX, k = nchain;
                for (uint32_t q = next; q < p->ncode && !resume[q] && p->nnames + k < TPL_NMEMO; q = after(p, q), k++) {
                    uint32_t qo = tpl_op_base(TPL_INSN_OP(p->code[q]));
                    if ((qo != TPL_OP_GETATTR && qo != TPL_OP_GETITEM_STR) || !attr_inline(p, q) ||
                        memo[TPL_INSN_A(p->code[q])] || !v_ok(p, q, j + 1))
                        break;
                    last = q;
                }
                if (last != UINT32_MAX) { /* (the lookups below give it the same M index) */
                    tpl_sb_printf(b, "    T++;\n    if (M && (P%u = M[%u])) goto LC%u;\n", j, (uint32_t)p->nnames + k - 1, last);
                    chain_end = last;
                    tick1 = "";
                }
            }
            /* a key of the state found here (pointed at), else the VM's code (globals, undefined) */
            if (hints[3 * a] > 1 && a < TPL_NMEMO) {
                tpl_sb_printf(b, "%s    if (S%u || (M && (S%u = M[%u])) || (f->state->type == TPL_NT_MAP && (S%u = ",
                              tick1, a, a, a, a);
                find(b, p, "f->state", a, 0, false);
                tpl_sb_printf(b, ") && (!M || (M[%u] = e)))) P%u = S%u;\n", a, j, a);
                chain = (int)j;
            } else if (a < TPL_NMEMO) {
                tpl_sb_printf(b, "%s    if ((M && (e = M[%u])) || (f->state->type == TPL_NT_MAP && ", tick1, a);
                find(b, p, "f->state", a, 0, false);
                tpl_sb_printf(b, " && (!M || (M[%u] = e)))) P%u = e;\n", a, j);
                chain = (int)j;
            } else if (hints[3 * a] > 1) {
                tpl_sb_printf(b, "    T++;\n    if (S%u || (f->state->type == TPL_NT_MAP && (S%u = ", a, a);
                find(b, p, "f->state", a, 0, false);
                tpl_sb_printf(b, "))) P%u = S%u;\n", j, a);
            } else {
                tpl_sb_puts(b, "    T++;\n    if (f->state->type == TPL_NT_MAP && ");
                find(b, p, "f->state", a, 0, false);
                tpl_sb_printf(b, ") P%u = e;\n", j);
            }
            tpl_sb_puts(b, "    else ");
            snprintf(call, sizeof call, "tpl_native_load_name(f, %u, &sp[%u])", a, j);
            snprintf(then, sizeof then, "P%u = &sp[%u];", j, j);
            v_call(b, &vs, call, pc, then);
            v_pushed(&vs, false, -1);
            break;
        }
        case TPL_OP_EQ: case TPL_OP_NE: /* two strings here, anything else (and a strict undefined) in the VM */
            tpl_sb_puts(b, "    T++;\n");
            if (inmem) tpl_sb_puts(b, "    sp -= 2;\n");
            tpl_sb_printf(b, "    if (%stype == TPL_NT_STR && %stype == TPL_NT_STR)\n"
                             "        rc = %slen == %slen && (%slen == 0 || memcmp(%su.s, %su.s, %slen) == 0);\n    else ",
                          arga[0], arga[1], arga[0], arga[1], arga[1], arga[0], arga[1], arga[1]);
            snprintf(call, sizeof call, "TPL_N_C(tpl_native_equal(f, &sp[%u], &sp[%u]))", base, base + 1);
            v_call(b, &vs, call, pc, NULL);
            tpl_sb_printf(b, "    sp[%u] = tpl_native_v(TPL_NT_BOOL, %src);\n", base, op == TPL_OP_NE ? "!" : "");
            if (inmem) tpl_sb_puts(b, "    sp++;\n");
            else {
                tpl_sb_printf(b, "    P%u = &sp[%u];\n", base, base);
                vs.vk = base;
                v_pushed(&vs, true, -1);
            }
            break;
        case TPL_OP_HALT:
            tpl_sb_printf(b, "    T++;\n    TPL_N_CHARGE(%u);\n    *f->result = tpl_native_v(TPL_NT_NONE, 0);\n    TPL_N_OUT_SAVE();\n    return 0;\n", pc);
            break;
        default: special = false; break;
        }
        static const char tick[] = "    T++;\n";
        if (special && run[pc] && !b->failed && b->len - mark >= sizeof tick - 1 &&
            memcmp(b->p + mark, tick, sizeof tick - 1) == 0 && run[pc] != 2) { /* a run's tick: at its start */
            char ticks[32];
            int nt = run[pc] > 2 ? snprintf(ticks, sizeof ticks, "    T += %u;\n", run[pc] - 1) : 0;
            size_t rest = b->len - mark - (sizeof tick - 1);
            char *body = malloc(rest + 1);
            if (!body) { free(memo); free(run); free(resume); free(setin); free(hints); free(ck); free(lloop); return false; }
            memcpy(body, b->p + mark + sizeof tick - 1, rest);
            b->len = mark;
            tpl_sb_put(b, ticks, (size_t)nt);
            tpl_sb_put(b, body, rest);
            free(body);
        }
        if (special) {
            (*nspecial)++;
            ks_apply(&ks, p, pc);
        } else {
            (*nstep)++;
            tpl_sb_printf(b, "    TPL_N_STEP(%u, %u);\n", pc, next);
            ks.kd = 0;
        }
        if (pc == chain_end) tpl_sb_printf(b, "LC%u: ;\n", pc); /* (where a kept chain's value goes on) */
        pcz = next;
    }
    free(memo);
    free(run);
    free(resume);
    free(setin);
    free(hints);
    free(ck); free(lloop);
    /* the code never falls off its end (the verifier checks it); the VM's answer if it did */
    v_flush(b, &vs, "    ");
    if (vs.max && !b->failed) { /* the locals, declared before the dispatch */
        tpl_sb d;
        tpl_sb_init(&d, NULL);
        tpl_sb_puts(&d, "    const tpl_nvalue");
        for (uint32_t i = 0; i < vs.max; i++) tpl_sb_printf(&d, "%s *P%u", i ? "," : "", i);
        tpl_sb_puts(&d, "; /* the operand stack's top values in straight-line code: where they are */\n   ");
        for (uint32_t i = 0; i < vs.max; i++) tpl_sb_printf(&d, " (void)P%u;", i); /* (some may be set only) */
        tpl_sb_putc(&d, '\n');
        if (d.failed) { tpl_sb_free(&d); return false; }
        size_t old = b->len;
        tpl_sb_put(b, d.p, d.len); /* room, then moved into place */
        if (!b->failed) {
            memmove(b->p + decl_at + d.len, b->p + decl_at, old - decl_at);
            memcpy(b->p + decl_at, d.p, d.len);
        }
        tpl_sb_free(&d);
    }
    tpl_sb_puts(b, "    f->ticks = T;\n    TPL_N_OUT_SAVE();\n    return tpl_native_run_vm(f, pc, (uint32_t)(sp - f->stack));\n}\n");
    return !b->failed;
}
