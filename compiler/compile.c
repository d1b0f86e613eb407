/* The compiler: lowers the shared AST to bytecode.
 *
 * Names are resolved at compile time to slots of the current function (template level or a
 * macro), to template-level slots read from a macro, or to state/global lookups by a pre-hashed
 * name. Syntax semantics become explicit opcodes (Jinja: PRINT_PY, JF_PY, DIV_PY). Adjacent text
 * is merged into one TEXT; constant expressions are folded. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "compile.h"
#include "../stdlib/builtins.h"
#include "../runtime/vm.h"

/* ------------------------------------------------------------------ scopes */

typedef struct scope_var {
    tpl_value name;
    uint32_t slot;
} scope_var;

typedef struct scope {
    struct scope *parent;
    bool func_boundary;      /* the outermost scope of a function */
    scope_var *vars;
    uint32_t nvars, cap;
} scope;

typedef struct loopctx {
    struct loopctx *parent;
    uint32_t top;            /* continue target */
    uint32_t *breaks;        /* jumps to patch with the loop's exit */
    size_t nbreaks, cap;
} loopctx;

typedef struct func {
    struct func *parent;
    bool is_macro;
    uint32_t nslots;
    int depth, max_depth;    /* operand stack */
    scope *scope;
    loopctx *loop;
} func;

struct tpl_comp {
    tpl_program *p;
    tpl_arena *tmp;          /* compile-time allocations (freed after compilation) */
    const char *src;
    size_t srclen;
    uint32_t *code;
    size_t n, cap;
    tpl_value *consts;
    size_t nconsts, kcap;
    tpl_map *kindex;         /* string constant -> index */
    tpl_name *names;
    size_t nnames, ncap;
    tpl_map *nindex;         /* name -> index */
    tpl_span *spans;
    size_t nspans, scap;
    tpl_macro_desc *macros;
    size_t nmacros, mcap;
    uint32_t cur_off;        /* source offset of the node being compiled */
    tpl_sb pending;          /* text not emitted yet (merged with following text) */
    uint32_t pending_off;
    func *fn;
    func root;
    int syn;                 /* tpl_syntax_id: picks the syntax's opcodes (truthiness, printing) */
    bool failed;
    uint32_t err_off;
    char msg[256];
};

/* The syntax's opcode for a Jinja (Python-semantics) opcode. */
static int sop(const tpl_comp *c, int op)
{
    if (c->syn != TPL_SYN_ERB) return op;
    switch (op) {
    case TPL_OP_JF_PY: return TPL_OP_JF_RB;
    case TPL_OP_JT_PY: return TPL_OP_JT_RB;
    case TPL_OP_JF_PY_KEEP: return TPL_OP_JF_RB_KEEP;
    case TPL_OP_JT_PY_KEEP: return TPL_OP_JT_RB_KEEP;
    case TPL_OP_NOT_PY: return TPL_OP_NOT_RB;
    case TPL_OP_PRINT_PY: return TPL_OP_PRINT_RB;
    case TPL_OP_DIV_PY: return TPL_OP_DIV_RB;
    case TPL_OP_CONCAT: return TPL_OP_CONCAT_RB;
    case TPL_OP_TIDY_PY: return TPL_OP_TIDY_RB;
    default: return op;
    }
}

/* ------------------------------------------------------------------ errors */

static void cerror(tpl_comp *c, uint32_t off, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void cerror(tpl_comp *c, uint32_t off, const char *fmt, ...)
{
    if (c->failed) return;
    c->failed = true;
    c->err_off = off;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->msg, sizeof c->msg, fmt, ap);
    va_end(ap);
}

/* ------------------------------------------------------------------ growable arrays */

static bool grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return true;
    size_t nc = *cap ? *cap * 2 : 64;
    while (nc < need) nc *= 2;
    void *np = realloc(*p, nc * elem);
    if (!np) return false;
    *p = np;
    *cap = nc;
    return true;
}

/* ------------------------------------------------------------------ constants and names */

static uint32_t add_const(tpl_comp *c, tpl_value v)
{
    if (c->failed) return 0;
    if (v.type == TPL_T_STR) {
        tpl_value *hit = tpl_map_get(c->kindex, v);
        if (hit && c->consts[hit->u.i].flags == v.flags) return (uint32_t)hit->u.i;
        char *s = tpl_arena_strdup(&c->p->arena, v.u.s, v.len);
        if (!s) { cerror(c, c->cur_off, "out of memory"); return 0; }
        v.u.s = s;
    }
    if (!grow((void **)&c->consts, &c->kcap, c->nconsts + 1, sizeof *c->consts)) {
        cerror(c, c->cur_off, "out of memory");
        return 0;
    }
    if (c->nconsts >= 0xFFFFFF) { cerror(c, c->cur_off, "too many constants"); return 0; }
    uint32_t k = (uint32_t)c->nconsts++;
    c->consts[k] = v;
    if (v.type == TPL_T_STR && !tpl_map_set(c->tmp, c->kindex, v, tpl_v_int(k))) cerror(c, c->cur_off, "out of memory");
    return k;
}

static uint32_t add_name(tpl_comp *c, tpl_value s)
{
    if (c->failed) return 0;
    tpl_value *hit = tpl_map_get(c->nindex, s);
    if (hit) return (uint32_t)hit->u.i;
    char *copy = tpl_arena_strdup(&c->p->arena, s.u.s, s.len);
    if (!copy || !grow((void **)&c->names, &c->ncap, c->nnames + 1, sizeof *c->names)) {
        cerror(c, c->cur_off, "out of memory");
        return 0;
    }
    if (c->nnames >= 0xFFFFFF) { cerror(c, c->cur_off, "too many names"); return 0; }
    uint32_t k = (uint32_t)c->nnames++;
    c->names[k].s = tpl_v_str(copy, s.len);
    c->names[k].hash = tpl_hash_str(copy, s.len);
    if (!tpl_map_set(c->tmp, c->nindex, c->names[k].s, tpl_v_int(k))) cerror(c, c->cur_off, "out of memory");
    return k;
}

/* ------------------------------------------------------------------ emission */

static void stack_effect(tpl_comp *c, int delta)
{
    func *f = c->fn;
    f->depth += delta;
    if (f->depth > f->max_depth) f->max_depth = f->depth;
}

static uint32_t emit_raw(tpl_comp *c, uint32_t word)
{
    if (c->failed) return 0;
    if (!grow((void **)&c->code, &c->cap, c->n + 1, sizeof *c->code)) {
        cerror(c, c->cur_off, "out of memory");
        return 0;
    }
    if (c->n >= 0xFFFFFF) { cerror(c, c->cur_off, "template too large"); return 0; }
    c->code[c->n] = word;
    return (uint32_t)c->n++;
}

static void add_span(tpl_comp *c, uint32_t pc)
{
    uint32_t line, col;
    tpl_offset_to_linecol(c->src, c->srclen, c->cur_off, &line, &col);
    if (c->nspans && c->spans[c->nspans - 1].line == line && c->spans[c->nspans - 1].col == col) return;
    if (c->nspans && c->spans[c->nspans - 1].pc == pc) {
        c->spans[c->nspans - 1].line = line;
        c->spans[c->nspans - 1].col = col;
        return;
    }
    if (!grow((void **)&c->spans, &c->scap, c->nspans + 1, sizeof *c->spans)) {
        cerror(c, c->cur_off, "out of memory");
        return;
    }
    c->spans[c->nspans++] = (tpl_span){ pc, line, col };
}

static void flush_text(tpl_comp *c);

/* Emits an instruction; `delta` is its stack effect. Returns its code offset. */
static uint32_t emit(tpl_comp *c, int op, uint32_t a, int delta)
{
    flush_text(c);
    if (a > 0xFFFFFF) { cerror(c, c->cur_off, "operand out of range"); return 0; }
    uint32_t pc = (uint32_t)c->n;
    add_span(c, pc);
    emit_raw(c, TPL_INSN(op, a));
    stack_effect(c, delta);
    return pc;
}

static void flush_text(tpl_comp *c)
{
    if (c->pending.len == 0) return;
    tpl_value s = tpl_sb_value(&c->pending);
    uint32_t save = c->cur_off;
    c->cur_off = c->pending_off;
    uint32_t k = add_const(c, s);
    c->pending.len = 0;
    emit(c, TPL_OP_TEXT, k, 0);
    c->cur_off = save;
}

static void emit_text(tpl_comp *c, const char *s, size_t n)
{
    if (n == 0) return;
    if (c->pending.len == 0) c->pending_off = c->cur_off;
    tpl_sb_put(&c->pending, s, n);
    if (c->pending.failed) cerror(c, c->cur_off, "out of memory");
}

/* Binds a label here: pending text is flushed so no TEXT merges across a jump target. */
static uint32_t here(tpl_comp *c)
{
    flush_text(c);
    return (uint32_t)c->n;
}

static void patch_a(tpl_comp *c, uint32_t pc, uint32_t target)
{
    if (c->failed) return;
    c->code[pc] = TPL_INSN(TPL_INSN_OP(c->code[pc]), target);
}

static void patch_word(tpl_comp *c, uint32_t pos, uint32_t target)
{
    if (c->failed) return;
    c->code[pos] = target;
}

/* ------------------------------------------------------------------ scopes */

static scope *push_scope(tpl_comp *c, bool boundary)
{
    scope *s = tpl_arena_alloc(c->tmp, sizeof *s);
    if (!s) { cerror(c, c->cur_off, "out of memory"); return NULL; }
    memset(s, 0, sizeof *s);
    s->parent = c->fn->scope;
    s->func_boundary = boundary;
    c->fn->scope = s;
    return s;
}

static void pop_scope(tpl_comp *c)
{
    if (c->fn->scope) c->fn->scope = c->fn->scope->parent;
}

static uint32_t new_slot(tpl_comp *c)
{
    if (c->fn->nslots >= 0xFFFF) { cerror(c, c->cur_off, "too many variables"); return 0; }
    return c->fn->nslots++;
}

static bool name_eq(tpl_value a, const char *s, size_t n)
{
    return a.len == n && memcmp(a.u.s, s, n) == 0;
}

static int scope_find(scope *s, tpl_value name)
{
    for (uint32_t i = s->nvars; i > 0; i--)
        if (name_eq(s->vars[i - 1].name, name.u.s, name.len)) return (int)s->vars[i - 1].slot;
    return -1;
}

/* Declares name in the innermost scope of the current function (reusing an existing slot). */
static uint32_t declare(tpl_comp *c, tpl_value name)
{
    scope *s = c->fn->scope;
    int slot = scope_find(s, name);
    if (slot >= 0) return (uint32_t)slot;
    if (s->nvars == s->cap) {
        uint32_t nc = s->cap ? s->cap * 2 : 8;
        scope_var *nv = tpl_arena_alloc(c->tmp, nc * sizeof *nv);
        if (!nv) { cerror(c, c->cur_off, "out of memory"); return 0; }
        if (s->nvars) memcpy(nv, s->vars, s->nvars * sizeof *nv);
        s->vars = nv;
        s->cap = nc;
    }
    uint32_t sl = new_slot(c);
    s->vars[s->nvars++] = (scope_var){ name, sl };
    return sl;
}

typedef enum { R_GLOBAL, R_LOCAL, R_ROOT } res_kind;

/* Resolves a name: a slot of the current function, a template-level slot (from a macro), or a
 * global (state, then builtin globals). */
static res_kind resolve(tpl_comp *c, tpl_value name, uint32_t *slot)
{
    for (scope *s = c->fn->scope; s; s = s->parent) {
        int sl = scope_find(s, name);
        if (sl >= 0) { *slot = (uint32_t)sl; return R_LOCAL; }
        if (s->func_boundary) break;
    }
    if (c->fn->is_macro) {
        /* template-level variables (not loop-local ones) are visible inside macros */
        scope *rs = c->root.scope;
        while (rs && !rs->func_boundary) rs = rs->parent;
        if (rs) {
            int sl = scope_find(rs, name);
            if (sl >= 0) { *slot = (uint32_t)sl; return R_ROOT; }
        }
    }
    return R_GLOBAL;
}

/* ------------------------------------------------------------------ expressions */

static void expr(tpl_comp *c, tpl_node *n);
static void body(tpl_comp *c, tpl_node *n);

static void load_name(tpl_comp *c, tpl_value name)
{
    uint32_t slot;
    res_kind r = resolve(c, name, &slot);
    uint32_t k = add_name(c, name);
    if (r == R_GLOBAL) {
        emit(c, TPL_OP_LOAD_NAME, k, 1);
    } else {
        emit(c, r == R_LOCAL ? TPL_OP_LOAD_SLOT : TPL_OP_LOAD_ROOT, slot, 1);
        emit_raw(c, k);
    }
}

static void store_target(tpl_comp *c, tpl_node *t)
{
    if (t->kind == TPL_N_NAME) {
        uint32_t slot = declare(c, t->val);
        c->cur_off = t->off;
        emit(c, TPL_OP_STORE_SLOT, slot, -1);
        return;
    }
    if (t->kind == TPL_N_TUPLE) {
        uint32_t cnt = 0;
        for (tpl_node *x = t->a; x; x = x->next) cnt++;
        emit(c, TPL_OP_UNPACK, cnt, (int)cnt - 1);
        /* UNPACK pushes first..last: store last first */
        tpl_node *items[256];
        if (cnt > 256) { cerror(c, t->off, "too many names to unpack"); return; }
        uint32_t i = 0;
        for (tpl_node *x = t->a; x; x = x->next) items[i++] = x;
        while (i > 0) store_target(c, items[--i]);
        return;
    }
    cerror(c, t->off, "can't assign to %s", tpl_node_kind_name(t->kind));
}

/* Pushes call arguments; returns the call-argument word. `extra_pos` positional values are
 * already on the stack (the filter subject). */
static uint32_t call_args(tpl_comp *c, tpl_node *args, int extra_pos)
{
    uint32_t npos = (uint32_t)extra_pos, nkw = 0;
    tpl_value kwn[64];
    for (tpl_node *a = args; a; a = a->next) {
        if (a->kind == TPL_N_STARARG || a->kind == TPL_N_STARKW) {
            cerror(c, a->off, "*args and **kwargs in calls are not supported yet");
            return 0;
        }
        if (a->kind == TPL_N_ARG) {
            if (nkw) { cerror(c, a->off, "positional argument follows keyword argument"); return 0; }
            expr(c, a->a);
            npos++;
        } else {
            if (nkw >= 64) { cerror(c, a->off, "too many keyword arguments"); return 0; }
            for (uint32_t i = 0; i < nkw; i++)
                if (kwn[i].len == a->val.len && memcmp(kwn[i].u.s, a->val.u.s, a->val.len) == 0) {
                    cerror(c, a->off, "keyword argument repeated");
                    return 0;
                }
            expr(c, a->a);
            kwn[nkw++] = a->val;
        }
    }
    if (npos > 255) { cerror(c, c->cur_off, "too many arguments"); return 0; }
    uint32_t k = TPL_NO_KW;
    if (nkw) {
        tpl_list *l = tpl_list_new(&c->p->arena, nkw);
        if (!l) { cerror(c, c->cur_off, "out of memory"); return 0; }
        for (uint32_t i = 0; i < nkw; i++) {
            char *s = tpl_arena_strdup(&c->p->arena, kwn[i].u.s, kwn[i].len);
            if (!s || !tpl_list_push(&c->p->arena, l, tpl_v_str(s, kwn[i].len))) { cerror(c, c->cur_off, "out of memory"); return 0; }
        }
        tpl_value lv = tpl_v_list(l);
        lv.flags = TPL_F_TUPLE;
        k = add_const(c, lv);
        if (k >= TPL_NO_KW) { cerror(c, c->cur_off, "too many constants"); return 0; }
    }
    return TPL_ARGW(npos, nkw, k);
}

static int argw_count(uint32_t w) { return (int)(TPL_ARGW_NPOS(w) + TPL_ARGW_NKW(w)); }

static bool const_truthy(tpl_value v, bool *t)
{
    switch (v.type) {
    case TPL_T_NONE: *t = false; return true;
    case TPL_T_BOOL: case TPL_T_INT: *t = v.u.i != 0; return true;
    case TPL_T_FLOAT: *t = v.u.f != 0.0; return true;
    case TPL_T_STR: *t = v.len != 0; return true;
    default: return false;
    }
}

static void push_const(tpl_comp *c, tpl_value v)
{
    switch (v.type) {
    case TPL_T_NONE: emit(c, TPL_OP_NONE, 0, 1); return;
    case TPL_T_BOOL: emit(c, v.u.i ? TPL_OP_TRUE : TPL_OP_FALSE, 0, 1); return;
    case TPL_T_INT:
        if (v.u.i >= -(1 << 22) && v.u.i < (1 << 22)) { emit(c, TPL_OP_INT, (uint32_t)(v.u.i & 0xFFFFFF), 1); return; }
        break;
    default: break;
    }
    emit(c, TPL_OP_CONST, add_const(c, v), 1);
}

/* Folds int/str arithmetic on constants; false when it can't (or must not) fold. */
static bool fold_binop(int op, tpl_value a, tpl_value b, tpl_value *out) /* op: TPL_AOP_* */
{
    if (a.type == TPL_T_INT && b.type == TPL_T_INT) {
        int64_t r;
        switch (op) {
        case TPL_AOP_ADD: if (__builtin_add_overflow(a.u.i, b.u.i, &r)) return false; break;
        case TPL_AOP_SUB: if (__builtin_sub_overflow(a.u.i, b.u.i, &r)) return false; break;
        case TPL_AOP_MUL: if (__builtin_mul_overflow(a.u.i, b.u.i, &r)) return false; break;
        default: return false;
        }
        *out = tpl_v_int(r);
        return true;
    }
    return false;
}

static void compare(tpl_comp *c, tpl_node *n)
{
    expr(c, n->a);
    uint32_t exits[64];
    int nexit = 0;
    uint32_t tmp = 0;
    bool chain = n->b && n->b->next;
    if (chain) tmp = new_slot(c);
    for (tpl_node *o = n->b; o; o = o->next) {
        expr(c, o->a);
        if (o->next) {
            emit(c, TPL_OP_DUP, 0, 1);
            emit(c, TPL_OP_STORE_SLOT, tmp, -1);
        }
        c->cur_off = o->off;
        switch (o->op) {
        case TPL_AOP_EQ: emit(c, TPL_OP_EQ, 0, -1); break;
        case TPL_AOP_NE: emit(c, TPL_OP_NE, 0, -1); break;
        case TPL_AOP_LT: emit(c, TPL_OP_LT, 0, -1); break;
        case TPL_AOP_LE: emit(c, TPL_OP_LE, 0, -1); break;
        case TPL_AOP_GT: emit(c, TPL_OP_GT, 0, -1); break;
        case TPL_AOP_GE: emit(c, TPL_OP_GE, 0, -1); break;
        case TPL_AOP_IN: emit(c, TPL_OP_IN, 0, -1); break;
        case TPL_AOP_NOTIN: emit(c, TPL_OP_IN, 0, -1); emit(c, sop(c, TPL_OP_NOT_PY), 0, 0); break;
        default: cerror(c, o->off, "bad comparison"); return;
        }
        if (o->next) {
            if (nexit >= 64) { cerror(c, o->off, "comparison chain too long"); return; }
            exits[nexit++] = emit(c, sop(c, TPL_OP_JF_PY_KEEP), 0, -1);
            emit(c, TPL_OP_LOAD_SLOT, tmp, 1);
            emit_raw(c, add_name(c, tpl_v_str("(comparison)", 12)));
        }
    }
    uint32_t end = here(c);
    for (int i = 0; i < nexit; i++) patch_a(c, exits[i], end);
}

static void expr(tpl_comp *c, tpl_node *n)
{
    if (c->failed || !n) return;
    c->cur_off = n->off;
    switch (n->kind) {
    case TPL_N_CONST:
        push_const(c, n->val);
        return;
    case TPL_N_NAME:
        load_name(c, n->val);
        return;
    case TPL_N_GETATTR:
        expr(c, n->a);
        c->cur_off = n->off;
        emit(c, TPL_OP_GETATTR, add_name(c, n->val), 0);
        return;
    case TPL_N_GETITEM:
        expr(c, n->a);
        expr(c, n->b);
        c->cur_off = n->off;
        emit(c, TPL_OP_GETITEM, 0, -1);
        return;
    case TPL_N_SLICE: {
        expr(c, n->a);
        uint32_t mask = 0;
        tpl_node *parts[3] = { n->b, n->c, n->d };
        for (int i = 0; i < 3; i++) {
            if (parts[i]) { expr(c, parts[i]); mask |= 1u << i; }
            else emit(c, TPL_OP_NONE, 0, 1);
        }
        c->cur_off = n->off;
        emit(c, TPL_OP_SLICE, mask, -3);
        return;
    }
    case TPL_N_CALL: {
        tpl_node *fn = n->a;
        uint32_t slot;
        if (fn->kind == TPL_N_NAME && resolve(c, fn->val, &slot) == R_GLOBAL) {
            int b = tpl_builtin_find(TPL_BK_GLOBAL, fn->val.u.s, fn->val.len);
            if (b >= 0) {
                uint32_t w = call_args(c, n->b, 0);
                c->cur_off = n->off;
                emit(c, TPL_OP_CALL_NAME, add_name(c, fn->val), 1 - argw_count(w));
                emit_raw(c, (uint32_t)b);
                emit_raw(c, w);
                return;
            }
        }
        if (fn->kind == TPL_N_GETATTR) {
            expr(c, fn->a);
            uint32_t w = call_args(c, n->b, 0);
            c->cur_off = n->off;
            emit(c, TPL_OP_CALL_METHOD, add_name(c, fn->val), -argw_count(w));
            emit_raw(c, w);
            return;
        }
        expr(c, fn);
        uint32_t w = call_args(c, n->b, 0);
        c->cur_off = n->off;
        emit(c, TPL_OP_CALL, 0, -argw_count(w));
        emit_raw(c, w);
        return;
    }
    case TPL_N_FILTER: {
        int b = tpl_builtin_find(TPL_BK_FILTER, n->val.u.s, n->val.len);
        if (b < 0) {
            const char *sug = tpl_builtin_suggest(TPL_BK_FILTER, n->val.u.s, n->val.len);
            if (sug) cerror(c, n->off, "No filter named '%.*s'. Did you mean '%s'?", (int)n->val.len, n->val.u.s, sug);
            else cerror(c, n->off, "No filter named '%.*s'.", (int)n->val.len, n->val.u.s);
            return;
        }
        if (n->a) expr(c, n->a);
        uint32_t w = call_args(c, n->b, 1);
        c->cur_off = n->off;
        emit(c, TPL_OP_FILTER, (uint32_t)b, 1 - argw_count(w));
        emit_raw(c, w);
        return;
    }
    case TPL_N_TEST: {
        int b = tpl_builtin_find(TPL_BK_TEST, n->val.u.s, n->val.len);
        if (b < 0) {
            const char *sug = tpl_builtin_suggest(TPL_BK_TEST, n->val.u.s, n->val.len);
            if (sug) cerror(c, n->off, "No test named '%.*s'. Did you mean '%s'?", (int)n->val.len, n->val.u.s, sug);
            else cerror(c, n->off, "No test named '%.*s'.", (int)n->val.len, n->val.u.s);
            return;
        }
        expr(c, n->a);
        uint32_t w = call_args(c, n->b, 1);
        c->cur_off = n->off;
        emit(c, TPL_OP_TEST, (uint32_t)b, 1 - argw_count(w));
        emit_raw(c, w);
        if (n->op) emit(c, sop(c, TPL_OP_NOT_PY), 0, 0);
        return;
    }
    case TPL_N_BINOP: {
        tpl_value folded;
        if (n->a->kind == TPL_N_CONST && n->b->kind == TPL_N_CONST && fold_binop(n->op, n->a->val, n->b->val, &folded)) {
            push_const(c, folded);
            return;
        }
        expr(c, n->a);
        expr(c, n->b);
        c->cur_off = n->off;
        int op;
        switch (n->op) {
        case TPL_AOP_ADD: op = TPL_OP_ADD; break;
        case TPL_AOP_SUB: op = TPL_OP_SUB; break;
        case TPL_AOP_MUL: op = TPL_OP_MUL; break;
        case TPL_AOP_DIV: op = sop(c, TPL_OP_DIV_PY); break;
        case TPL_AOP_FLOORDIV: op = TPL_OP_FLOORDIV; break;
        case TPL_AOP_MOD: op = TPL_OP_MOD; break;
        case TPL_AOP_POW: op = TPL_OP_POW; break;
        default: cerror(c, n->off, "bad operator"); return;
        }
        emit(c, op, 0, -1);
        return;
    }
    case TPL_N_UNOP:
        if (n->op == TPL_AOP_NEG && n->a->kind == TPL_N_CONST && n->a->val.type == TPL_T_INT && n->a->val.u.i != INT64_MIN) {
            push_const(c, tpl_v_int(-n->a->val.u.i));
            return;
        }
        if (n->op == TPL_AOP_NEG && n->a->kind == TPL_N_CONST && n->a->val.type == TPL_T_FLOAT) {
            push_const(c, tpl_v_float(-n->a->val.u.f));
            return;
        }
        expr(c, n->a);
        c->cur_off = n->off;
        emit(c, n->op == TPL_AOP_NEG ? TPL_OP_NEG : n->op == TPL_AOP_POS ? TPL_OP_POS : sop(c, TPL_OP_NOT_PY), 0, 0);
        return;
    case TPL_N_AND:
    case TPL_N_OR: {
        expr(c, n->a);
        c->cur_off = n->off;
        uint32_t j = emit(c, sop(c, n->kind == TPL_N_AND ? TPL_OP_JF_PY_KEEP : TPL_OP_JT_PY_KEEP), 0, -1);
        expr(c, n->b);
        patch_a(c, j, here(c));
        return;
    }
    case TPL_N_COMPARE:
        compare(c, n);
        return;
    case TPL_N_CONDEXPR: {
        /* a = test, b = then, c = else */
        expr(c, n->a);
        uint32_t jf = emit(c, sop(c, TPL_OP_JF_PY), 0, -1);
        expr(c, n->b);
        uint32_t jend = emit(c, TPL_OP_JUMP, 0, -1);
        patch_a(c, jf, here(c));
        if (n->c) expr(c, n->c);
        else emit(c, TPL_OP_UNDEF, 0, 1);
        patch_a(c, jend, here(c));
        return;
    }
    case TPL_N_CONCAT: {
        uint32_t cnt = 0;
        for (tpl_node *x = n->a; x; x = x->next) { expr(c, x); cnt++; }
        c->cur_off = n->off;
        emit(c, sop(c, TPL_OP_CONCAT), cnt, 1 - (int)cnt);
        return;
    }
    case TPL_N_LIST:
    case TPL_N_TUPLE: {
        uint32_t cnt = 0;
        for (tpl_node *x = n->a; x; x = x->next) { expr(c, x); cnt++; }
        c->cur_off = n->off;
        emit(c, n->kind == TPL_N_LIST ? TPL_OP_BUILD_LIST : TPL_OP_BUILD_TUPLE, cnt, 1 - (int)cnt);
        return;
    }
    case TPL_N_DICT: {
        uint32_t cnt = 0;
        for (tpl_node *x = n->a; x; x = x->next) { expr(c, x->a); expr(c, x->b); cnt++; }
        c->cur_off = n->off;
        emit(c, TPL_OP_BUILD_MAP, cnt, 1 - 2 * (int)cnt);
        return;
    }
    default:
        cerror(c, n->off, "unexpected %s in expression", tpl_node_kind_name(n->kind));
    }
}

/* ------------------------------------------------------------------ statements */

static void apply_filters(tpl_comp *c, tpl_node *f)
{
    for (; f && !c->failed; f = f->next) {
        tpl_node *save = f->a;
        f->a = NULL; /* subject already on the stack */
        tpl_node *next = f->next;
        f->next = NULL;
        expr(c, f);
        f->next = next;
        f->a = save;
    }
}

static void stmt_for(tpl_comp *c, tpl_node *n)
{
    if (n->op) { cerror(c, n->off, "recursive loops are not supported yet"); return; }
    expr(c, n->b);
    if (n->e) {
        /* `for x in xs if test`: filter first, so loop.index/length count kept items (Jinja2) */
        push_scope(c, false);
        uint32_t acc = new_slot(c), it = new_slot(c), item = new_slot(c);
        emit(c, TPL_OP_FOR_INIT, it, -1);
        emit(c, TPL_OP_BUILD_LIST, 0, 1);
        emit(c, TPL_OP_STORE_SLOT, acc, -1);
        uint32_t top = here(c);
        uint32_t fn = emit(c, TPL_OP_FOR_NEXT, it, 1);
        uint32_t exit_pos = emit_raw(c, 0);
        emit(c, TPL_OP_DUP, 0, 1);
        emit(c, TPL_OP_STORE_SLOT, item, -1);
        store_target(c, n->a);
        expr(c, n->e);
        uint32_t skip = emit(c, sop(c, TPL_OP_JF_PY), 0, -1);
        /* acc = acc + [item] */
        emit(c, TPL_OP_LOAD_SLOT, acc, 1);
        emit_raw(c, add_name(c, tpl_v_str("(loop filter)", 13)));
        emit(c, TPL_OP_LOAD_SLOT, item, 1);
        emit_raw(c, add_name(c, tpl_v_str("(loop filter)", 13)));
        emit(c, TPL_OP_BUILD_LIST, 1, 0);
        emit(c, TPL_OP_ADD, 0, -1);
        emit(c, TPL_OP_STORE_SLOT, acc, -1);
        patch_a(c, skip, here(c));
        emit(c, TPL_OP_JUMP, top, 0);
        patch_word(c, exit_pos, here(c));
        (void)fn;
        emit(c, TPL_OP_LOAD_SLOT, acc, 1);
        emit_raw(c, add_name(c, tpl_v_str("(loop filter)", 13)));
        pop_scope(c);
    }
    push_scope(c, false);
    uint32_t loop_slot = declare(c, tpl_v_str("loop", 4));
    c->cur_off = n->off;
    emit(c, TPL_OP_FOR_INIT, loop_slot, -1);
    loopctx lc = { 0 };
    lc.parent = c->fn->loop;
    lc.top = here(c);
    c->fn->loop = &lc;
    emit(c, TPL_OP_FOR_NEXT, loop_slot, 1);
    uint32_t exit_pos = emit_raw(c, 0);
    store_target(c, n->a);
    body(c, n->c);
    emit(c, TPL_OP_JUMP, lc.top, 0);
    patch_word(c, exit_pos, here(c));
    c->fn->loop = lc.parent;
    pop_scope(c);
    if (n->d) {
        c->cur_off = n->off;
        emit(c, TPL_OP_FOR_ITERATED, loop_slot, 0);
        uint32_t pos = emit_raw(c, 0);
        body(c, n->d);
        patch_word(c, pos, here(c));
    }
    uint32_t end = here(c);
    for (size_t i = 0; i < lc.nbreaks; i++) patch_a(c, lc.breaks[i], end);
    free(lc.breaks);
}

static void stmt_macro(tpl_comp *c, tpl_node *n)
{
    uint32_t skip = emit(c, TPL_OP_JUMP, 0, 0);
    func f = { 0 };
    f.parent = c->fn;
    f.is_macro = true;
    c->fn = &f;
    push_scope(c, true);
    uint32_t nparams = 0;
    tpl_list *pl = tpl_list_new(&c->p->arena, 4);
    for (tpl_node *p = n->a; p; p = p->next) {
        tpl_value pname = p->val;
        char *s = tpl_arena_strdup(&c->p->arena, pname.u.s, pname.len);
        if (!pl || !s || !tpl_list_push(&c->p->arena, pl, tpl_v_str(s, pname.len))) { cerror(c, p->off, "out of memory"); break; }
        declare(c, pname);
        nparams++;
    }
    tpl_macro_desc d = { 0 };
    d.entry = here(c);
    d.nparams = (uint16_t)nparams;
    d.varargs_slot = (int16_t)declare(c, tpl_v_str("varargs", 7));
    d.kwargs_slot = (int16_t)declare(c, tpl_v_str("kwargs", 6));
    d.caller_slot = (int16_t)declare(c, tpl_v_str("caller", 6));
    /* defaults: evaluated at call time when the argument is missing */
    uint32_t i = 0;
    for (tpl_node *p = n->a; p; p = p->next, i++) {
        if (p->kind != TPL_N_KWARG) continue;
        c->cur_off = p->off;
        emit(c, TPL_OP_JSET, i, 0);
        uint32_t pos = emit_raw(c, 0);
        expr(c, p->a);
        emit(c, TPL_OP_STORE_SLOT, i, -1);
        patch_word(c, pos, here(c));
    }
    body(c, n->b);
    emit(c, TPL_OP_RETURN, 0, 0);
    d.nslots = (uint16_t)f.nslots;
    d.max_stack = (uint16_t)(f.max_depth + 4);
    pop_scope(c);
    c->fn = f.parent;
    patch_a(c, skip, here(c));
    if (c->failed) return;
    tpl_value lv = tpl_v_list(pl);
    lv.flags = TPL_F_TUPLE;
    d.params = add_const(c, lv);
    d.name = add_name(c, n->val);
    if (!grow((void **)&c->macros, &c->mcap, c->nmacros + 1, sizeof *c->macros)) { cerror(c, n->off, "out of memory"); return; }
    c->macros[c->nmacros] = d;
    c->cur_off = n->off;
    emit(c, TPL_OP_MACRO, (uint32_t)c->nmacros, 1);
    c->nmacros++;
    tpl_node nm = { 0 };
    nm.kind = TPL_N_NAME;
    nm.off = n->off;
    nm.val = n->val;
    store_target(c, &nm);
}

static void stmt(tpl_comp *c, tpl_node *n)
{
    if (c->failed) return;
    c->cur_off = n->off;
    switch (n->kind) {
    case TPL_N_TEXT:
        emit_text(c, n->val.u.s, n->val.len);
        return;
    case TPL_N_OUTPUT:
        if (n->a->kind == TPL_N_CONST && n->a->val.type != TPL_T_UNDEF) {
            tpl_sb b;
            tpl_sb_init(&b, c->tmp);
            tpl_py_str(&b, n->a->val);
            emit_text(c, b.p, b.len);
            return;
        }
        expr(c, n->a);
        c->cur_off = n->off;
        emit(c, sop(c, TPL_OP_PRINT_PY), 0, -1);
        return;
    case TPL_N_IF: {
        bool t;
        if (n->a->kind == TPL_N_CONST && const_truthy(n->a->val, &t)) {
            body(c, t ? n->b : n->c);
            return;
        }
        expr(c, n->a);
        uint32_t jf = emit(c, sop(c, TPL_OP_JF_PY), 0, -1);
        body(c, n->b);
        if (n->c) {
            uint32_t jend = emit(c, TPL_OP_JUMP, 0, 0);
            patch_a(c, jf, here(c));
            body(c, n->c);
            patch_a(c, jend, here(c));
        } else {
            patch_a(c, jf, here(c));
        }
        return;
    }
    case TPL_N_FOR:
        stmt_for(c, n);
        return;
    case TPL_N_SET:
        expr(c, n->b);
        store_target(c, n->a);
        return;
    case TPL_N_NSSET:
        expr(c, n->a);
        expr(c, n->b);
        c->cur_off = n->off;
        emit(c, TPL_OP_NS_SET, add_name(c, n->val), -2);
        return;
    case TPL_N_SETBLOCK:
        emit(c, TPL_OP_CAPTURE, 0, 0);
        body(c, n->b);
        c->cur_off = n->off;
        emit(c, TPL_OP_END_CAPTURE, 0, 1);
        apply_filters(c, n->c);
        store_target(c, n->a);
        return;
    case TPL_N_FILTERBLOCK:
        emit(c, TPL_OP_CAPTURE, 0, 0);
        body(c, n->b);
        c->cur_off = n->off;
        emit(c, TPL_OP_END_CAPTURE, 0, 1);
        apply_filters(c, n->a);
        emit(c, sop(c, TPL_OP_PRINT_PY), 0, -1);
        return;
    case TPL_N_WITH: {
        /* values are evaluated in the enclosing scope, then bound in a new one */
        uint32_t cnt = 0;
        for (tpl_node *s = n->a; s; s = s->next) { expr(c, s->b); cnt++; }
        push_scope(c, false);
        tpl_node *items[64];
        uint32_t i = 0;
        for (tpl_node *s = n->a; s && i < 64; s = s->next) items[i++] = s;
        if (cnt > 64) { cerror(c, n->off, "too many with-assignments"); return; }
        while (i > 0) store_target(c, items[--i]->a);
        body(c, n->b);
        pop_scope(c);
        return;
    }
    case TPL_N_BREAK:
    case TPL_N_CONTINUE: {
        const char *what = n->kind == TPL_N_BREAK ? "break" : "continue";
        if (!c->p->opts.hf) { cerror(c, n->off, "Encountered unknown tag '%s'. (loop controls are enabled in the hf profile)", what); return; }
        loopctx *lc = c->fn->loop;
        if (!lc) { cerror(c, n->off, "'%s' outside of a loop", what); return; }
        if (n->kind == TPL_N_CONTINUE) { emit(c, TPL_OP_JUMP, lc->top, 0); return; }
        uint32_t j = emit(c, TPL_OP_JUMP, 0, 0);
        if (!grow((void **)&lc->breaks, &lc->cap, lc->nbreaks + 1, sizeof *lc->breaks)) { cerror(c, n->off, "out of memory"); return; }
        lc->breaks[lc->nbreaks++] = j;
        return;
    }
    case TPL_N_MACRO:
        stmt_macro(c, n);
        return;
    case TPL_N_GENERATION:
        if (!c->p->opts.hf) { cerror(c, n->off, "Encountered unknown tag 'generation'."); return; }
        body(c, n->b);
        return;
    case TPL_N_DO:
        cerror(c, n->off, "Encountered unknown tag 'do'. (the do extension is not enabled)");
        return;
    case TPL_N_CALLBLOCK: cerror(c, n->off, "call blocks are not supported yet"); return;
    case TPL_N_INCLUDE: cerror(c, n->off, "include is not supported yet"); return;
    case TPL_N_IMPORT:
    case TPL_N_FROMIMPORT: cerror(c, n->off, "import is not supported yet"); return;
    case TPL_N_EXTENDS: cerror(c, n->off, "extends is not supported yet"); return;
    case TPL_N_BLOCK: cerror(c, n->off, "blocks are not supported yet"); return;
    case TPL_N_AUTOESCAPE: cerror(c, n->off, "autoescape blocks are not supported yet"); return;
    default:
        cerror(c, n->off, "unexpected %s statement", tpl_node_kind_name(n->kind));
    }
}

static void body(tpl_comp *c, tpl_node *n)
{
    for (; n && !c->failed; n = n->next) stmt(c, n);
}

/* ------------------------------------------------------------------ driver */

tpl_comp *tpl_comp_new(tpl_program *p, tpl_arena *tmp, const char *src, size_t n)
{
    tpl_comp *c = tpl_arena_alloc(tmp, sizeof *c);
    if (!c) return NULL;
    memset(c, 0, sizeof *c);
    c->p = p;
    c->tmp = tmp;
    c->src = src;
    c->srclen = n;
    c->kindex = tpl_map_new(tmp, 16);
    c->nindex = tpl_map_new(tmp, 16);
    tpl_sb_init(&c->pending, tmp);
    c->fn = &c->root;
    c->syn = p->opts.syntax == TPL_SYNTAX_ERB ? TPL_SYN_ERB : p->opts.syntax == TPL_SYNTAX_FMT ? TPL_SYN_FMT : TPL_SYN_JINJA;
    if (!c->kindex || !c->nindex) return NULL;
    push_scope(c, true);
    return c;
}

bool tpl_comp_template(tpl_comp *c, tpl_node *root)
{
    body(c, root->b);
    c->cur_off = (uint32_t)c->srclen;
    if (c->p->opts.tidy) emit(c, sop(c, TPL_OP_TIDY_PY), 0, 0);
    emit(c, TPL_OP_HALT, 0, 0);
    return !c->failed;
}

bool tpl_comp_finish(tpl_comp *c)
{
    tpl_program *p = c->p;
    if (c->failed) goto done;
    tpl_arena *a = &p->arena;
    p->code = tpl_arena_alloc(a, c->n * sizeof *p->code + 1);
    p->consts = tpl_arena_alloc(a, c->nconsts * sizeof *p->consts + 1);
    p->names = tpl_arena_alloc(a, c->nnames * sizeof *p->names + 1);
    p->spans = tpl_arena_alloc(a, c->nspans * sizeof *p->spans + 1);
    p->macros = tpl_arena_alloc(a, c->nmacros * sizeof *p->macros + 1);
    if (!p->code || !p->consts || !p->names || !p->spans || !p->macros) { cerror(c, 0, "out of memory"); goto done; }
    if (c->n) memcpy(p->code, c->code, c->n * sizeof *p->code);
    if (c->nconsts) memcpy(p->consts, c->consts, c->nconsts * sizeof *p->consts);
    if (c->nnames) memcpy(p->names, c->names, c->nnames * sizeof *p->names);
    if (c->nspans) memcpy(p->spans, c->spans, c->nspans * sizeof *p->spans);
    if (c->nmacros) memcpy(p->macros, c->macros, c->nmacros * sizeof *p->macros);
    p->ncode = c->n;
    p->nconsts = c->nconsts;
    p->nnames = c->nnames;
    p->nspans = c->nspans;
    p->nmacros = c->nmacros;
    p->nslots = c->root.nslots;
    p->max_stack = (uint32_t)c->root.max_depth + 4;
done:
    free(c->code);
    free(c->consts);
    free(c->names);
    free(c->spans);
    free(c->macros);
    c->code = NULL;
    c->consts = NULL;
    c->names = NULL;
    c->spans = NULL;
    c->macros = NULL;
    return !c->failed;
}

bool tpl_comp_error(const tpl_comp *c, uint32_t *off, const char **msg)
{
    if (!c->failed) return false;
    *off = c->err_off;
    *msg = c->msg;
    return true;
}

/* ------------------------------------------------------------------ interface for other lowerings */

uint32_t tpl_c_emit(tpl_comp *c, int op, uint32_t a, int delta) { return emit(c, sop(c, op), a, delta); }
uint32_t tpl_c_word(tpl_comp *c, uint32_t w) { return emit_raw(c, w); }
uint32_t tpl_c_here(tpl_comp *c) { return here(c); }
void tpl_c_patch(tpl_comp *c, uint32_t pc, uint32_t target) { patch_a(c, pc, target); }
void tpl_c_patch_word(tpl_comp *c, uint32_t pos, uint32_t target) { patch_word(c, pos, target); }
uint32_t tpl_c_const(tpl_comp *c, tpl_value v) { return add_const(c, v); }
uint32_t tpl_c_name(tpl_comp *c, tpl_value s) { return add_name(c, s); }
void tpl_c_expr(tpl_comp *c, tpl_node *n) { expr(c, n); }
void tpl_c_body(tpl_comp *c, tpl_node *n) { body(c, n); }
void tpl_c_text(tpl_comp *c, const char *s, size_t n) { emit_text(c, s, n); }
uint32_t tpl_c_declare(tpl_comp *c, tpl_value name) { return declare(c, name); }
uint32_t tpl_c_slot(tpl_comp *c) { return new_slot(c); }
void tpl_c_push_scope(tpl_comp *c) { push_scope(c, false); }
void tpl_c_pop_scope(tpl_comp *c) { pop_scope(c); }
void tpl_c_store(tpl_comp *c, tpl_node *target) { store_target(c, target); }
void tpl_c_load(tpl_comp *c, tpl_value name) { load_name(c, name); }
int tpl_c_syntax(const tpl_comp *c) { return c->syn; }
void tpl_c_at(tpl_comp *c, uint32_t off) { c->cur_off = off; }
tpl_arena *tpl_c_arena(tpl_comp *c) { return c->tmp; }
const tpl_options *tpl_c_options(const tpl_comp *c) { return &c->p->opts; }
bool tpl_c_failed(const tpl_comp *c) { return c->failed; }
void tpl_c_error(tpl_comp *c, uint32_t off, const char *fmt, ...)
{
    if (c->failed) return;
    va_list ap;
    va_start(ap, fmt);
    char buf[256];
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    cerror(c, off, "%s", buf);
}

bool tpl_c_lookup(tpl_comp *c, tpl_value name, uint32_t *slot) { return resolve(c, name, slot) == R_LOCAL; }
tpl_arena *tpl_c_program_arena(tpl_comp *c) { return &c->p->arena; }
