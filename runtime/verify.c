/* The bytecode verifier (see verify.h). Operand kinds and stack effects come from the opcode
 * table (opcodes.def via tpl_opinfo_table); only control-flow facts the table cannot express are
 * listed here, in flow(). Everything is checked before any instruction runs, so the VM's
 * unchecked indexing (slots, constants, names, the operand stack) stays in bounds. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "error.h"
#include "verify.h"
#include "vm_impl.h"

typedef struct ver {
    const tpl_program *p;
    char *msg;
    size_t msgsz;
    uint8_t *start;       /* 1 at each instruction start */
    uint32_t *gen;        /* function generation that reached this pc (0 = none yet) */
    int32_t *depth;       /* operand stack depth before the instruction */
    uint16_t *capd;       /* open captures before the instruction */
    uint32_t *work;       /* worklist of pcs */
    uint32_t *outer_need; /* per macro: slots its LOAD_OUTER reads (max index + 1) */
    uint32_t *outer_have; /* per macro: fewest slots of a function that creates its closure */
    struct blk { uint32_t entry, np, nslots; } *blocks; /* Ruby block bodies still to check */
    size_t nblocks, capblocks;
    bool nomem;           /* the failure is out of memory, not the program */
} ver;

static bool bad(ver *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool nomem(ver *v);
static bool bad(ver *v, const char *fmt, ...)
{
    if (v->msg && v->msgsz) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(v->msg, v->msgsz, fmt, ap);
        va_end(ap);
    }
    return false;
}

static bool nomem(ver *v)
{
    v->nomem = true;
    return bad(v, "%s", tpl_error_kind_format(TPL_EK_NOMEM));
}

/* Constants: only plain data (none, bool, int, float, str, tuples of those), nesting bounded. */
static bool check_value(ver *v, const tpl_value *x, int nest)
{
    switch (x->type) {
    case TPL_T_NONE: case TPL_T_BOOL: case TPL_T_INT: case TPL_T_FLOAT: return true;
    case TPL_T_STR: return x->u.s != NULL || bad(v, "constant string without data");
    case TPL_T_BIGINT: { /* canonical decimal text past int64, as tpl_big_value writes it */
        const char *s = x->u.s;
        uint32_t n = x->len, neg = n && s && s[0] == '-';
        bool ok = s && n > neg + 18 && n - neg <= 400000 && s[neg] >= '1' && s[neg] <= '9';
        for (uint32_t i = neg; ok && i < n; i++) ok = s[i] >= '0' && s[i] <= '9';
        if (ok && n - neg == 19) /* 19 digits: past int64 only above 9223372036854775807 (or below -...808) */
            ok = memcmp(s + neg, neg ? "9223372036854775808" : "9223372036854775807", 19) > 0;
        return ok || bad(v, "malformed big integer constant");
    }
    case TPL_T_LIST: {
        const tpl_list *l = x->u.list;
        if (nest >= 8) return bad(v, "constants nested too deeply");
        if (!l || (l->len && !l->items) || l->cap < l->len) return bad(v, "malformed constant tuple");
        for (uint32_t i = 0; i < l->len; i++)
            if (!check_value(v, &l->items[i], nest + 1)) return false;
        return true;
    }
    default: return bad(v, "constant of type %u is not allowed", x->type);
    }
}

/* A constant that must be a tuple of n strings (keyword names, macro parameters). */
static bool str_tuple(const tpl_program *p, uint32_t k, uint32_t n)
{
    if (k >= p->nconsts || p->consts[k].type != TPL_T_LIST) return false;
    const tpl_list *l = p->consts[k].u.list;
    if (l->len != n) return false;
    for (uint32_t i = 0; i < n; i++)
        if (l->items[i].type != TPL_T_STR) return false;
    return true;
}

/* The operand word that format letter at position i of fmt reads (0 = A, i = extra word i). */
static uint32_t operand(const tpl_program *p, size_t pc, int i)
{
    return i == 0 ? TPL_INSN_A(p->code[pc]) : p->code[pc + (size_t)i];
}

/* Static operand checks (everything but slots and stack depth). */
static bool check_operands(ver *v, size_t pc)
{
    const tpl_program *p = v->p;
    const tpl_opinfo *oi = &tpl_opinfo_table[TPL_INSN_OP(p->code[pc])];
    uint32_t op = oi->base; /* a superinstruction has its base's operands */
    /* a superinstruction's fast path reads its successors' words: they must be there */
    if ((oi->flags & TPL_OPF_FUSED) && !tpl_op_successors_match(TPL_INSN_OP(p->code[pc]), p->code, p->ncode, pc))
        return bad(v, "pc %zu: %s: not followed by %s", pc, oi->name, oi->next);
    for (int i = 0; oi->fmt[i] && i <= oi->extra; i++) {
        uint32_t x = operand(p, pc, i);
        switch (oi->fmt[i]) {
        case 'k':
            if (x >= p->nconsts) return bad(v, "pc %zu: %s: constant %u out of range", pc, oi->name, x);
            /* TEXT, FAIL and the host calls read the constant as a string */
            if ((op == TPL_OP_TEXT || op == TPL_OP_FAIL || op == TPL_OP_FAIL_KIND || op == TPL_OP_HOST_FILTER || op == TPL_OP_HOST_CALL ||
                 op == TPL_OP_HOST_TEST || op == TPL_OP_UNDEF_MSG || op == TPL_OP_MISSING_IS) &&
                p->consts[x].type != TPL_T_STR)
                return bad(v, "pc %zu: %s: constant %u is not a string", pc, oi->name, x);
            break;
        case 'n':
            if (x >= p->nnames) return bad(v, "pc %zu: %s: name %u out of range", pc, oi->name, x);
            break;
        case 'm':
            if (x >= p->nmacros) return bad(v, "pc %zu: %s: macro %u out of range", pc, oi->name, x);
            break;
        case 'b': {
            const tpl_builtin_info *bi = tpl_lib_builtin((int)x);
            /* methods assume the type of their receiver: only filters, tests and globals
             * (Jinja's, and Ruby's Kernel functions) */
            if (!bi || x >= tpl_stdlib.nbuiltins || (bi->kind != TPL_BK_FILTER && bi->kind != TPL_BK_TEST &&
                                             bi->kind != TPL_BK_GLOBAL && bi->kind != TPL_BK_RKERNEL))
                return bad(v, "pc %zu: %s: builtin %u out of range", pc, oi->name, x);
            break;
        }
        case 'a':
            if (TPL_ARGW_K(x) == TPL_ARGW_DYN && (TPL_ARGW_NPOS(x) != 2 || TPL_ARGW_NKW(x) != 0))
                return bad(v, "pc %zu: %s: bad *args call word", pc, oi->name);
            if (TPL_ARGW_NKW(x) && !str_tuple(p, TPL_ARGW_K(x), TPL_ARGW_NKW(x)))
                return bad(v, "pc %zu: %s: bad keyword-name constant", pc, oi->name);
            break;
        case 'j':
            if (x >= p->ncode) return bad(v, "pc %zu: %s: jump target %u out of range", pc, oi->name, x);
            break;
        default: break; /* s: per function; i, c, -: any value */
        }
        if (op == TPL_OP_FAIL_KIND && i == 1 && (x == TPL_EK_NONE || x >= TPL_EK__COUNT))
            return bad(v, "pc %zu: %s: error kind %u out of range", pc, oi->name, x);
        if (op == TPL_OP_PRINT_ADDS_K && i == 1) {
            /* 2 to TPL_ADDS_K_MAX operands: plain-string literals, and a None for each of the A
             * values it pops (the VM copies the literals unchecked) */
            const tpl_list *l = x < p->nconsts && p->consts[x].type == TPL_T_LIST ? p->consts[x].u.list : NULL;
            uint32_t nv = 0;
            uint64_t klen = 0;
            bool ok = l && l->len >= 2 && l->len <= TPL_ADDS_K_MAX;
            for (uint32_t j = 0; ok && j < l->len; j++) {
                const tpl_value *it = &l->items[j];
                nv += it->type == TPL_T_NONE;
                klen += it->type == TPL_T_STR ? it->len : 0;
                ok = it->type == TPL_T_NONE || (it->type == TPL_T_STR && !(it->flags & (TPL_F_SAFE | TPL_F_SYMBOL)));
            }
            if (!ok || nv != TPL_INSN_A(p->code[pc]))
                return bad(v, "pc %zu: PRINT_ADDS_K: constant %u is not its operands' tuple", pc, x);
            if (l->items[1].type == TPL_T_NONE && (l->items[1].flags & TPL_F_ADDS_ALT)) {
                /* the VM copies the items in pairs: literal, value, ..., literal */
                bool alt = l->len == 2 * nv + 1;
                for (uint32_t j = 0; alt && j < l->len; j++) alt = (l->items[j].type == TPL_T_STR) == !(j & 1);
                if (!alt) return bad(v, "pc %zu: PRINT_ADDS_K: constant %u is marked alternating and is not", pc, x);
            }
            /* the VM checks the output's room with this length */
            if (klen != p->code[pc + 2]) return bad(v, "pc %zu: PRINT_ADDS_K: the literals' length is not %llu", pc, (unsigned long long)klen);
        }
        if (op == TPL_OP_SWITCH_STR && i == 0) {
            /* a tuple of n strings, then n + 1 JUMPs the VM reads its targets from */
            uint32_t n = x < p->nconsts && p->consts[x].type == TPL_T_LIST ? p->consts[x].u.list->len : 0;
            if (!n || !str_tuple(p, x, n)) return bad(v, "pc %zu: SWITCH_STR: constant %u is not a tuple of strings", pc, x);
            if (pc + 2 + n >= p->ncode) return bad(v, "pc %zu: SWITCH_STR: truncated jump table", pc);
            for (uint32_t j = 0; j <= n; j++)
                if (TPL_INSN_OP(p->code[pc + 1 + j]) != TPL_OP_JUMP)
                    return bad(v, "pc %zu: SWITCH_STR: jump table entry %u is not a JUMP", pc, j);
        }
    }
    return true;
}

/* The variable count an effect of -1/-2/-3 is computed from: the 'c' or 'a' operand. */
static int64_t var_count(const tpl_program *p, size_t pc, const tpl_opinfo *oi)
{
    for (int i = 0; oi->fmt[i] && i <= oi->extra; i++) {
        uint32_t x = operand(p, pc, i);
        if (oi->fmt[i] == 'c') return x;
        if (oi->fmt[i] == 'a') return (int64_t)TPL_ARGW_NPOS(x) + TPL_ARGW_NKW(x);
    }
    return 0;
}

static int64_t effect(int8_t e, int64_t n)
{
    switch (e) {
    case -1: return n;
    case -2: return 2 * n;
    case -3: return n + 1;
    default: return e < 0 ? 0 : e;
    }
}

/* Where a slot operand points: the running frame, the template level, or the closure's frame. */
enum { SLOTS_LOCAL, SLOTS_ROOT, SLOTS_OUTER };

/* Control-flow facts, from the flags column of the opcode table. */
typedef struct flow {
    bool falls;        /* continues at the next instruction */
    int slots;         /* SLOTS_* for 's' operands */
    int taken_delta;   /* stack depth on the jump edge relative to the fall-through edge */
} flow;

static flow flow_of(const tpl_opinfo *oi)
{
    flow f = { true, SLOTS_LOCAL, 0 };
    f.falls = !(oi->flags & (TPL_OPF_GOTO | TPL_OPF_END));
    if (oi->flags & TPL_OPF_KEEP) f.taken_delta = 1;  /* the value stays when the jump is taken */
    if (oi->flags & TPL_OPF_LOOP) f.taken_delta = -1; /* no item when the loop ends */
    if (oi->flags & TPL_OPF_ROOT) f.slots = SLOTS_ROOT;
    if (oi->flags & TPL_OPF_OUTER) f.slots = SLOTS_OUTER;
    return f;
}

/* One function's code: everything reachable from entry. */
typedef struct fn {
    uint32_t entry, nslots, max_stack;
    int macro;         /* macro index, or -1 for the template level and Ruby blocks */
    uint32_t block_np; /* a Ruby block body (run by tpl_rb_yield): its parameter count + 1; else 0 */
} fn;

/* Queues the body of the Ruby block a CALL_METHOD_RB in f passes (block word bw), once per
 * (entry, parameters, frame size): block bodies are jumped over, so no function reaches them,
 * yet tpl_rb_yield runs them in the frame that created them (tpl_rb_block.slot_base: f's, whose
 * size the VM checked when it pushed it) with np values on the stack. So a block in an ERB def
 * has the def's slots (its locals, the hidden ones of a begin/rescue body run as a block). */
static bool add_block(ver *v, const fn *f, uint32_t bw)
{
    uint32_t entry = bw & 0xFFFFFFu, np = bw >> 24;
    uint32_t nslots = f->nslots;
    if (!entry) return true;
    for (size_t i = 0; i < v->nblocks; i++)
        if (v->blocks[i].entry == entry && v->blocks[i].np == np && v->blocks[i].nslots == nslots) return true;
    if (v->nblocks >= 65536) return bad(v, "too many Ruby blocks");
    if (v->nblocks == v->capblocks) {
        size_t nc = v->capblocks ? v->capblocks * 2 : 16;
        struct blk *nb = realloc(v->blocks, nc * sizeof *nb);
        if (!nb) return nomem(v);
        v->blocks = nb;
        v->capblocks = nc;
    }
    v->blocks[v->nblocks++] = (struct blk){ entry, np, nslots };
    return true;
}

static bool reach(ver *v, uint32_t gen, size_t *nwork, uint32_t pc, int64_t d, int64_t c, const fn *f)
{
    if (pc >= v->p->ncode || !v->start[pc]) return bad(v, "pc %u is not an instruction start", pc);
    if (d < 0) return bad(v, "stack underflow reaching pc %u", pc);
    if (d > f->max_stack) return bad(v, "stack depth %lld exceeds max_stack %u at pc %u", (long long)d, f->max_stack, pc);
    if (c < 0 || c > TPL_VM_CAPTURES) return bad(v, "unbalanced captures at pc %u", pc);
    if (v->gen[pc] == gen) {
        if (v->depth[pc] != d || v->capd[pc] != c)
            return bad(v, "inconsistent stack depth at pc %u (%d vs %lld)", pc, v->depth[pc], (long long)d);
        return true;
    }
    v->gen[pc] = gen;
    v->depth[pc] = (int32_t)d;
    v->capd[pc] = (uint16_t)c;
    v->work[(*nwork)++] = pc;
    return true;
}

static bool check_fn(ver *v, const fn *f, uint32_t gen)
{
    const tpl_program *p = v->p;
    size_t nwork = 0;
    if (!reach(v, gen, &nwork, f->entry, f->block_np ? f->block_np - 1 : 0, 0, f)) return false;
    while (nwork) {
        uint32_t pc = v->work[--nwork];
        uint32_t w = p->code[pc], op = TPL_INSN_OP(w);
        const tpl_opinfo *oi = &tpl_opinfo_table[op];
        flow fl = flow_of(oi);
        int64_t d = v->depth[pc], c = v->capd[pc];
        int64_t n = var_count(p, pc, oi);
        int64_t pops = effect(oi->pops, n), pushes = effect(oi->pushes, n);
        if (d < pops) return bad(v, "pc %u: %s: stack underflow", pc, oi->name);
        int64_t nd = d - pops + pushes;
        uint32_t target = UINT32_MAX;
        for (int i = 0; oi->fmt[i] && i <= oi->extra; i++) {
            uint32_t x = operand(p, pc, i);
            if (oi->fmt[i] == 'j') target = x;
            if (oi->fmt[i] != 's') continue;
            if (oi->flags & TPL_OPF_SLOT16) x &= 0xFFFFu; /* the mode is in A >> 16 */
            if (fl.slots == SLOTS_ROOT) {
                if (x >= p->nslots) return bad(v, "pc %u: %s: template slot %u out of range", pc, oi->name, x);
            } else if (fl.slots == SLOTS_OUTER && f->macro >= 0) {
                if (x + 1 > v->outer_need[f->macro]) v->outer_need[f->macro] = x + 1;
            } else if (x >= f->nslots) {
                return bad(v, "pc %u: %s: slot %u out of range (%u slots)", pc, oi->name, x, f->nslots);
            }
        }
        switch (oi->base) {
        case TPL_OP_CAPTURE: c++; break;
        case TPL_OP_OUT_INSERT:
            if (TPL_INSN_A(w) < 1 || TPL_INSN_A(w) > c) return bad(v, "pc %u: OUT_INSERT below the open captures", pc);
            break;
        case TPL_OP_END_CAPTURE:
            if (c < 1) return bad(v, "pc %u: END_CAPTURE without CAPTURE", pc);
            c--;
            break;
        case TPL_OP_TIDY_PY: case TPL_OP_TIDY_RB:
            if (f->macro >= 0 || f->block_np || c) return bad(v, "pc %u: %s inside a capture", pc, oi->name);
            break;
        case TPL_OP_RETURN:
            if (f->macro < 0) return bad(v, "pc %u: RETURN outside a macro", pc);
            /* fallthrough */
        case TPL_OP_HALT:
            if (f->block_np) return bad(v, "pc %u: %s inside a Ruby block", pc, oi->name);
            if (c) return bad(v, "pc %u: %s with open captures", pc, oi->name);
            break;
        case TPL_OP_RET_RB:
            if (!f->block_np && f->macro < 0) return bad(v, "pc %u: RET_RB outside a Ruby block or an ERB def", pc);
            if (c) return bad(v, "pc %u: %s with open captures", pc, oi->name);
            break;
        case TPL_OP_CALL_METHOD_RB:
            if (!add_block(v, f, p->code[pc + 2])) return false;
            break;
        case TPL_OP_SWITCH_STR: /* every JUMP of the table (the first is the fall-through) and past it */
            for (uint32_t j = 1, n = p->consts[TPL_INSN_A(w)].u.list->len; j <= n + 1; j++)
                if (!reach(v, gen, &nwork, pc + 1 + j, nd, c, f)) return false;
            break;
        case TPL_OP_IMPORT_MOD: { /* (A checked in range with the static operands) */
            const tpl_macro_desc *d = &p->macros[TPL_INSN_A(w)];
            if (!d->nslots || (uint64_t)p->code[pc + 1] + d->nslots > p->nslots)
                return bad(v, "pc %u: IMPORT_MOD: frame out of the template's slots", pc);
            break;
        }
        case TPL_OP_MACRO: {
            uint32_t m = TPL_INSN_A(w);
            if (f->nslots < v->outer_have[m]) v->outer_have[m] = f->nslots;
            break;
        }
        default: break;
        }
        if (fl.falls && !reach(v, gen, &nwork, pc + 1 + oi->extra, nd, c, f)) return false;
        if (target != UINT32_MAX && !reach(v, gen, &nwork, target, nd + fl.taken_delta, c, f)) return false;
    }
    return true;
}

static bool verify(ver *v)
{
    const tpl_program *p = v->p;
    if (p->ncode == 0 || !p->code) return bad(v, "no code");
    if (p->ncode > 0x1000000) return bad(v, "code too large");
    if ((p->nconsts && !p->consts) || (p->nnames && !p->names) || (p->nspans && !p->spans && !p->spanb) ||
        (p->nmacros && !p->macros))
        return bad(v, "missing tables");
    for (size_t i = 0; i < p->nconsts; i++)
        if (!check_value(v, &p->consts[i], 0)) return false;
    for (size_t i = 0; i < p->nnames; i++) {
        const tpl_name *nm = &p->names[i];
        if (nm->s.type != TPL_T_STR || !nm->s.u.s) return bad(v, "name %zu is not a string", i);
        if (nm->hash != tpl_hash_str(nm->s.u.s, nm->s.len)) return bad(v, "name %zu: wrong hash", i);
    }
    for (size_t i = 0; i < p->nspans && !p->spanb; i++)
        if (p->spans[i].pc > p->ncode || (i && p->spans[i].pc < p->spans[i - 1].pc))
            return bad(v, "span table out of order");
    /* instruction boundaries and static operands */
    for (size_t pc = 0; pc < p->ncode;) {
        uint32_t op = TPL_INSN_OP(p->code[pc]);
        if (op >= TPL_OP__COUNT) return bad(v, "pc %zu: invalid opcode %u", pc, op);
        const tpl_opinfo *oi = &tpl_opinfo_table[op];
        if (pc + oi->extra >= p->ncode) return bad(v, "pc %zu: %s: truncated operands", pc, oi->name);
        v->start[pc] = 1;
        if (!check_operands(v, pc)) return false;
        pc += 1 + (size_t)oi->extra;
    }
    for (size_t m = 0; m < p->nmacros; m++) {
        const tpl_macro_desc *d = &p->macros[m];
        if (d->entry >= p->ncode || !v->start[d->entry]) return bad(v, "macro %zu: bad entry", m);
        if (d->name >= p->nnames) return bad(v, "macro %zu: name out of range", m);
        if (d->nparams > d->nslots || !str_tuple(p, d->params, d->nparams)) return bad(v, "macro %zu: bad parameters", m);
        if (d->varargs_slot < -1 || d->varargs_slot >= (int)d->nslots || d->kwargs_slot < -1 ||
            d->kwargs_slot >= (int)d->nslots || d->caller_slot < -1 || d->caller_slot >= (int)d->nslots)
            return bad(v, "macro %zu: special slot out of range", m);
        v->outer_have[m] = UINT32_MAX;
    }
    /* per function: slots, stack depth, captures, no falling off the end */
    fn root = { 0, p->nslots, p->max_stack, -1, 0 };
    if (!check_fn(v, &root, 1)) return false;
    for (size_t m = 0; m < p->nmacros; m++) {
        const tpl_macro_desc *d = &p->macros[m];
        fn f = { d->entry, d->nslots, d->max_stack, (int)m, 0 };
        if (!check_fn(v, &f, (uint32_t)m + 2)) return false;
    }
    /* Ruby block bodies, in the frame of the function that passes them (the list grows while
     * nested blocks are found) */
    for (size_t i = 0; i < v->nblocks; i++) {
        fn f = { v->blocks[i].entry, v->blocks[i].nslots, p->max_stack, -1, tpl_rb_block_pushes(v->blocks[i].np) + 1 };
        if (!check_fn(v, &f, (uint32_t)(p->nmacros + 2 + i))) return false;
    }
    for (size_t m = 0; m < p->nmacros; m++)
        if (v->outer_need[m] && v->outer_have[m] != UINT32_MAX && v->outer_need[m] > v->outer_have[m])
            return bad(v, "macro %zu reads slot %u of a frame with %u slots", m, v->outer_need[m] - 1, v->outer_have[m]);
    /* the template level's LOAD_OUTER reads its own frame */
    return true;
}

tpl_error_kind tpl_verify(const tpl_program *p, char *msg, size_t msgsz)
{
    ver v = { 0 };
    v.p = p;
    v.msg = msg;
    v.msgsz = msgsz;
    if (msg && msgsz) msg[0] = 0;
    size_t n = p->ncode ? p->ncode : 1, nm = p->nmacros ? p->nmacros : 1;
    if (p->ncode > 0x1000000) { bad(&v, "code too large"); return TPL_EK_CORRUPT; }
    v.start = calloc(n, 1);
    v.gen = calloc(n, sizeof *v.gen);
    v.depth = calloc(n, sizeof *v.depth);
    v.capd = calloc(n, sizeof *v.capd);
    v.work = calloc(n, sizeof *v.work);
    v.outer_need = calloc(nm, sizeof *v.outer_need);
    v.outer_have = calloc(nm, sizeof *v.outer_have);
    bool ok;
    if (!v.start || !v.gen || !v.depth || !v.capd || !v.work || !v.outer_need || !v.outer_have)
        ok = nomem(&v);
    else
        ok = verify(&v);
    free(v.start);
    free(v.gen);
    free(v.depth);
    free(v.capd);
    free(v.work);
    free(v.outer_need);
    free(v.outer_have);
    free(v.blocks);
    return ok ? TPL_EK_NONE : v.nomem ? TPL_EK_NOMEM : TPL_EK_CORRUPT;
}

/* The reads-set. A name is read by LOAD_NAME, CALL_NAME (the state may shadow a global),
 * LOAD_NAME_RB, LOAD_IVAR_RB and FMT_FIELD, and by the fallback of a LOAD_SLOT, LOAD_ROOT or
 * LOAD_OUTER whose slot may be unset there. A LOAD_SLOT at L reads nothing when a store S of its
 * slot dominates it: S comes before L and nothing enters (S, L] from before S — no jump from
 * there, no function starting in it (macro or Ruby block bodies are entered from elsewhere) —
 * and no UNSET_SLOT of that slot exists. Stores: STORE_SLOT, and the loop and format-field
 * state FOR_INIT(_RB), FOR_NEXT and FMT_BEGIN keep in their slot. Parameters are stored by every macro's prologue. When unsure
 * (slot numbers past 4096, stores far away) the name counts as read: the set may name a local
 * variable too, but never misses a state variable. */
enum { READS_SLOTS = 4096, READS_STORES = 4, READS_SPAN = 8192 };

/* A jump target and the lowest pc a jump into it comes from (-1: entered from anywhere: a
 * block or macro entry). reads_scan keeps them sorted by target, one per target: a table per
 * jump, not per code word (issue 13 §1: a word-indexed table was 4-8 bytes per word of a large
 * template's code when it is saved). */
typedef struct jt { uint32_t t; int32_t src; } jt;

static int jt_cmp(const void *x, const void *y)
{
    const jt *a = x, *b = y;
    if (a->t != b->t) return a->t < b->t ? -1 : 1;
    return a->src < b->src ? -1 : a->src > b->src;
}

/* A macro entry and its parameter count + 1. */
typedef struct me { uint32_t entry, params; } me;

static int me_cmp(const void *x, const void *y)
{
    const me *a = x, *b = y;
    return a->entry < b->entry ? -1 : a->entry > b->entry;
}

static bool jt_add(jt **v, size_t *n, size_t *cap, uint32_t t, int32_t src)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        jt *nv = realloc(*v, nc * sizeof *nv);
        if (!nv) return false;
        *v = nv;
        *cap = nc;
    }
    (*v)[(*n)++] = (jt){ t, src };
    return true;
}

/* Whether some jump into (st, pc] comes from before st (jl: sorted, one entry per target). */
static bool jumped_into(const jt *jl, size_t nj, size_t st, size_t pc)
{
    size_t lo = 0, hi = nj;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (jl[mid].t <= st) lo = mid + 1;
        else hi = mid;
    }
    for (size_t i = lo; i < nj && jl[i].t <= pc; i++)
        if (jl[i].src < (int32_t)st) return true;
    return false;
}

/* The scan behind tpl_program_reads_idx and tpl_program_read_pcs: marks seen[name] for every
 * name read and, when at is not NULL, at[pc] for every instruction that reads one. */
static bool reads_scan(const tpl_program *p, uint8_t *seen, uint8_t *at)
{
    size_t n = p->ncode;
    if (n >= INT32_MAX) return false;
    /* the slot tables cover the slots the code stores, clears or a macro's prologue fills (a
     * slot beyond them is never dominated); sized by them, not READS_SLOTS: clearing 64 KiB
     * per scan was most of a small template's compile time */
    uint32_t nslots = 0;
    for (size_t pc = 0; pc < n;) {
        uint32_t op = TPL_INSN_OP(p->code[pc]), a = TPL_INSN_A(p->code[pc]);
        if (op >= TPL_OP__COUNT) break;
        uint32_t fl = tpl_opinfo_table[op].flags;
        if (fl & TPL_OPF_SLOT16) a &= 0xFFFF;
        if (((fl & TPL_OPF_STORE) || tpl_opinfo_table[op].base == TPL_OP_UNSET_SLOT) && a >= nslots)
            nslots = a + 1;
        pc += 1 + (size_t)tpl_opinfo_table[op].extra;
    }
    for (size_t m = 0; m < p->nmacros; m++)
        if (p->macros[m].nparams > nslots) nslots = p->macros[m].nparams;
    if (nslots > READS_SLOTS) nslots = READS_SLOTS;
    jt *jl = NULL;      /* the jumps: (target, lowest pc a jump into it comes from) */
    size_t nj = 0, jcap = 0;
    uint32_t (*stores)[READS_STORES] = calloc(nslots ? nslots : 1, sizeof *stores); /* last stores + 1, newest first */
    uint8_t *unset = calloc(nslots ? nslots : 1, 1); /* slots some UNSET_SLOT clears (never dominated) */
    me *ms = p->nmacros ? malloc(p->nmacros * sizeof *ms) : NULL;
    bool ok = stores && unset && (!p->nmacros || ms);
    for (size_t pc = 0; pc < n && ok;) {
        uint32_t op = TPL_INSN_OP(p->code[pc]);
        if (op >= TPL_OP__COUNT) break;
        const tpl_opinfo *oi = &tpl_opinfo_table[op];
        for (int i = 0; oi->fmt[i] && i <= oi->extra && ok; i++) {
            uint32_t x = i == 0 ? TPL_INSN_A(p->code[pc]) : pc + (size_t)i < n ? p->code[pc + (size_t)i] : 0;
            if (oi->fmt[i] == 'j' && x < n) ok = jt_add(&jl, &nj, &jcap, x, (int32_t)pc);
            if (oi->fmt[i] == 'B' && (x & 0xFFFFFF) && (x & 0xFFFFFF) < n) ok = jt_add(&jl, &nj, &jcap, x & 0xFFFFFF, -1);
        }
        if (oi->base == TPL_OP_UNSET_SLOT && TPL_INSN_A(p->code[pc]) < nslots) unset[TPL_INSN_A(p->code[pc])] = 1;
        pc += 1 + (size_t)oi->extra;
    }
    /* the parameters (+ 1) of the macros entered at each pc, in entry order */
    size_t nm = 0;
    for (size_t m = 0; m < p->nmacros && ok; m++)
        if (p->macros[m].entry < n) {
            ok = jt_add(&jl, &nj, &jcap, p->macros[m].entry, -1);
            ms[nm++] = (me){ p->macros[m].entry, p->macros[m].nparams + 1u };
        }
    if (!ok) { free(jl); free(stores); free(unset); free(ms); return false; }
    if (nj) qsort(jl, nj, sizeof *jl, jt_cmp);
    size_t k = 0;
    for (size_t i = 0; i < nj; i++)
        if (!k || jl[k - 1].t != jl[i].t) jl[k++] = jl[i]; /* the first of a target has its lowest pc */
    nj = k;
    if (nm) qsort(ms, nm, sizeof *ms, me_cmp);
    size_t mi = 0;
    for (size_t pc = 0; pc < n;) {
        uint32_t op = TPL_INSN_OP(p->code[pc]), a = TPL_INSN_A(p->code[pc]);
        if (op >= TPL_OP__COUNT) break;
        uint32_t np = 0; /* the most parameters of a macro entered here, + 1 */
        while (mi < nm && ms[mi].entry < pc) mi++;
        for (; mi < nm && ms[mi].entry == pc; mi++) np = ms[mi].params > np ? ms[mi].params : np;
        if (np) /* a macro's prologue stores every parameter first */
            for (uint32_t i = 0; i < np - 1 && i < nslots; i++) {
                memmove(&stores[i][1], &stores[i][0], (READS_STORES - 1) * sizeof stores[i][0]);
                stores[i][0] = (uint32_t)pc + 1;
            }
        uint32_t extra = pc + 1 < n ? p->code[pc + 1] : 0, fl = tpl_opinfo_table[op].flags;
        bool dominated = false;
        if ((fl & TPL_OPF_READ) && a < p->nnames) { seen[a] = 1; if (at) at[pc] = 1; }
        if ((fl & TPL_OPF_READ_UNSET) && !(fl & (TPL_OPF_ROOT | TPL_OPF_OUTER))) {
            /* a local slot: read unless a store dominates it */
            for (int k = 0; a < nslots && k < READS_STORES && stores[a][k] && !dominated; k++) {
                size_t st = stores[a][k] - 1; /* a macro's parameters: its entry, which stores before it */
                if (pc - st > READS_SPAN || unset[a]) break;
                dominated = !jumped_into(jl, nj, st, pc);
            }
            if (!dominated && extra < p->nnames) { seen[extra] = 1; if (at) at[pc] = 1; }
        } else if ((fl & TPL_OPF_READ_UNSET) && extra < p->nnames) {
            seen[extra] = 1;
            if (at) at[pc] = 1;
        }
        if (fl & TPL_OPF_STORE) {
            if (fl & TPL_OPF_SLOT16) a &= 0xFFFF;
            if (a < nslots) {
                memmove(&stores[a][1], &stores[a][0], (READS_STORES - 1) * sizeof stores[a][0]);
                stores[a][0] = (uint32_t)pc + 1;
            }
        }
        pc += 1 + (size_t)tpl_opinfo_table[op].extra;
    }
    free(jl);
    free(stores);
    free(unset);
    free(ms);
    return true;
}

size_t tpl_program_reads_idx(const tpl_program *p, uint32_t *out, size_t cap)
{
    uint8_t *seen = calloc(p->nnames ? p->nnames : 1, 1);
    if (!seen || !reads_scan(p, seen, NULL)) { free(seen); return 0; }
    size_t k = 0;
    for (size_t i = 0; i < p->nnames; i++)
        if (seen[i]) {
            if (k < cap) out[k] = (uint32_t)i;
            k++;
        }
    free(seen);
    return k;
}

bool tpl_program_reads_cached(const tpl_program *p, const uint32_t **idx, size_t *n)
{
    uint32_t **slot = &((tpl_program *)p)->reads_cache; /* (the program's one lazily made field) */
    uint32_t *c = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (!c) {
        size_t k = tpl_program_reads_idx(p, NULL, 0);
        uint32_t *nc = k < UINT32_MAX ? malloc((k + 1) * sizeof *nc) : NULL;
        if (!nc) return false;
        nc[0] = (uint32_t)k;
        if (k && tpl_program_reads_idx(p, nc + 1, k) != k) { /* (its scan out of memory) */
            free(nc);
            return false;
        }
        uint32_t *expected = NULL;
        if (__atomic_compare_exchange_n(slot, &expected, nc, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            c = nc;
        } else { /* (another thread's, made meanwhile) */
            free(nc);
            c = expected;
        }
    }
    *idx = c + 1;
    *n = c[0];
    return true;
}

bool tpl_program_read_pcs(const tpl_program *p, uint8_t *at)
{
    uint8_t *seen = calloc(p->nnames ? p->nnames : 1, 1);
    bool ok = seen && reads_scan(p, seen, at);
    free(seen);
    return ok;
}

/* ------------------------------------------------------------------ closure captures */

/* One read a function makes of a frame out of it: LOAD_OUTER (hops 0), LOAD_UP (hops h) or
 * LOAD_ROOT (root). */
typedef struct cap_read { int32_t fn; uint32_t hops, slot; bool root; } cap_read;

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Walks function f (entry; -1: the template level) over its reachable code, gen-stamped in
 * seen; notes the reads out of its frame, the closures it makes (parent) and the imports it runs.
 * False: something this analysis does not follow (the caller then keeps whole-frame copies). */
static bool cap_walk(const tpl_program *p, int32_t f, uint32_t entry, uint32_t gen, uint32_t *seen, uint32_t *work,
                     int32_t *parent, uint8_t *imp, cap_read **reads, size_t *nreads, size_t *capreads)
{
    size_t nwork = 0;
    if (entry >= p->ncode) return false;
    seen[entry] = gen;
    work[nwork++] = entry;
    while (nwork) {
        uint32_t pc = work[--nwork];
        uint32_t w = p->code[pc], op = TPL_INSN_OP(w);
        if (op >= TPL_OP__COUNT) return false;
        const tpl_opinfo *oi = &tpl_opinfo_table[op];
        if (pc + oi->extra >= p->ncode) return false;
        uint32_t a = TPL_INSN_A(w);
        bool rd = false, root = false;
        uint32_t hops = 0, slot = 0;
        switch (oi->base) {
        case TPL_OP_MACRO:
            if (a >= p->nmacros || (parent[a] != INT32_MIN && parent[a] != f)) return false;
            parent[a] = f;
            break;
        case TPL_OP_IMPORT_MOD:
            if (a >= p->nmacros || f >= 0) return false; /* (only at the template level) */
            imp[a] = 1;
            break;
        case TPL_OP_CALL_METHOD_RB: case TPL_OP_STORE_ROOT: return false;
        case TPL_OP_LOAD_OUTER: rd = f >= 0; slot = a; break;
        case TPL_OP_LOAD_ROOT: rd = f >= 0; root = true; slot = a; break;
        case TPL_OP_LOAD_UP: rd = true; hops = a >> 16; slot = a & 0xFFFFu; if (f < 0 || !hops) return false; break;
        default:
            if (oi->flags & (TPL_OPF_ROOT | TPL_OPF_OUTER)) return false;
            break;
        }
        if (rd) {
            if (*nreads == *capreads) {
                size_t nc = *capreads ? *capreads * 2 : 64;
                cap_read *nr = realloc(*reads, nc * sizeof *nr);
                if (!nr) return false;
                *reads = nr;
                *capreads = nc;
            }
            (*reads)[(*nreads)++] = (cap_read){ f, hops, slot, root };
        }
        uint32_t next[2] = { UINT32_MAX, UINT32_MAX };
        if (!(oi->flags & (TPL_OPF_GOTO | TPL_OPF_END))) next[0] = pc + 1 + oi->extra;
        for (int i = 0; oi->fmt[i] && i <= oi->extra; i++)
            if (oi->fmt[i] == 'j') next[1] = operand(p, pc, i);
        if (oi->base == TPL_OP_SWITCH_STR) {
            if (a >= p->nconsts || p->consts[a].type != TPL_T_LIST) return false;
            for (uint32_t j = 1, n = p->consts[a].u.list->len; j <= n + 1; j++) {
                uint32_t t = pc + 1 + j;
                if (t >= p->ncode) return false;
                if (seen[t] != gen) { seen[t] = gen; work[nwork++] = t; }
            }
        }
        for (int i = 0; i < 2; i++) {
            uint32_t t = next[i];
            if (t == UINT32_MAX) continue;
            if (t >= p->ncode) return false;
            if (seen[t] != gen) { seen[t] = gen; work[nwork++] = t; }
        }
    }
    return true;
}

void tpl_program_closure_needs(tpl_program *p)
{
    p->cl_need_off = NULL;
    p->cl_need = NULL;
    if (p->opts.syntax != TPL_SYNTAX_JINJA || !p->nmacros || !p->ncode || p->nmacros > 0x100000) return;
    size_t nm = p->nmacros, nreads = 0, capreads = 0;
    uint32_t *seen = calloc(p->ncode, sizeof *seen), *work = malloc(p->ncode * 2 * sizeof *work);
    int32_t *parent = malloc(nm * sizeof *parent);
    uint8_t *imp = calloc(nm, 1);
    uint32_t *cnt = calloc(nm + 1, sizeof *cnt), *need = NULL;
    cap_read *reads = NULL;
    bool ok = seen && work && parent && imp && cnt;
    for (size_t m = 0; ok && m < nm; m++) parent[m] = INT32_MIN;
    /* (every pc is queued at most once per function: seen before it is pushed) */
    if (ok) ok = cap_walk(p, -1, 0, 1, seen, work, parent, imp, &reads, &nreads, &capreads);
    for (size_t m = 0; ok && m < nm; m++)
        ok = cap_walk(p, (int32_t)m, p->macros[m].entry, (uint32_t)m + 2, seen, work, parent, imp, &reads, &nreads,
                      &capreads);
    for (size_t m = 0; ok && m < nm; m++)
        if (imp[m] && parent[m] != INT32_MIN) ok = false; /* (an import's code is no closure) */
    /* each read, to the closures whose copies must hold it: LOAD_OUTER its own, LOAD_UP the
     * closure h links out (the chain of closures that made it: lexically, the functions around),
     * LOAD_ROOT its own and every enclosing closure's (a closed closure called puts its template
     * level back above the slot top when that level was in its copy) */
    size_t total = 0;
    for (int pass = 0; ok && pass < 2; pass++) {
        for (size_t i = 0; ok && i < nreads; i++) {
            const cap_read *r = &reads[i];
            int32_t y = r->fn;
            for (uint32_t h = 0; ok && h < r->hops; h++) {
                y = parent[y];
                if (y < 0 || parent[y] == INT32_MIN) ok = false; /* (past the closures: not followed) */
            }
            /* (an import's code, or code no MACRO makes, is no closure: nothing closes over it) */
            while (ok && y >= 0 && parent[y] != INT32_MIN) {
                if (pass == 0) cnt[y]++;
                else need[cnt[y]++] = r->root ? r->slot | 0x80000000u : r->slot;
                if (!r->root) break;
                y = parent[y];
            }
        }
        if (!ok) break;
        if (pass == 0) {
            for (size_t m = 0; m < nm; m++) {
                uint32_t c = cnt[m];
                cnt[m] = (uint32_t)total;
                total += c;
            }
            cnt[nm] = (uint32_t)total;
            if (total > UINT32_MAX / 2 || !(need = malloc((total ? total : 1) * sizeof *need))) ok = false;
        }
    }
    /* (cnt[m] is now macro m's end: its start is cnt[m - 1]) */
    uint32_t *off = ok ? tpl_arena_alloc(&p->arena, (nm + 1) * sizeof *off) : NULL;
    uint32_t *out = ok ? tpl_arena_alloc(&p->arena, (total ? total : 1) * sizeof *out) : NULL;
    if (off && out) {
        uint32_t k = 0;
        for (size_t m = 0; m < nm; m++) {
            uint32_t lo = m ? cnt[m - 1] : 0, hi = cnt[m];
            off[m] = k;
            qsort(need + lo, hi - lo, sizeof *need, cmp_u32);
            for (uint32_t i = lo; i < hi; i++)
                if (i == lo || need[i] != need[i - 1]) out[k++] = need[i];
        }
        off[nm] = k;
        p->cl_need_off = off;
        p->cl_need = out;
    }
    free(seen);
    free(work);
    free(parent);
    free(imp);
    free(cnt);
    free(need);
    free(reads);
}
