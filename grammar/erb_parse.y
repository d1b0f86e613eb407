/* ERB grammar (Lemon): the Ruby subset views use, over the script ERB generates (see erb.h).
 * Statements are separated by TERM (line breaks and `;`, collapsed by the tokenizer); text
 * is a PUT statement and `<%= %>` an INS_OPEN compstmt INS_CLOSE statement, so control flow
 * may span tags exactly as in the Ruby ERB generates. Operator precedence follows Ruby's
 * (parse.y): modifiers < and/or < not < = < ?: < .. < || < && < == <=> =~ < comparisons < <<
 * < + - < * / % < unary - < ** < ! unary +. The tokenizer decides what Ruby's lexer states
 * decide: command calls without parentheses (CMD), call vs grouping parentheses (LPCALL),
 * index vs array brackets (LBRACK_IDX), block vs hash braces (LBRACE_BLK), modifier if. */

%name ErbParse
%token_prefix TK_
%token_type {tpl_token}
%default_type {tpl_node *}
%extra_argument {tpl_pctx *ctx}
%stack_size 1000

%include {
#pragma GCC diagnostic ignored "-Wunused-variable"
/* Lemon's table-consistency asserts and trace hooks cost ~a third of parsing; the tables are
 * generated, so they are compiled out (the grammar's own actions use no assert). */
#ifndef NDEBUG
#define NDEBUG 1
#endif
#include <assert.h>
#include <string.h>
#include "erb.h"
#define N(kind, off) tpl_p_node(ctx, TPL_N_##kind, (off), NULL, NULL)
#define NODE(kind, off, a, b) tpl_p_node(ctx, TPL_N_##kind, (off), (a), (b))
static tpl_node *binop(tpl_pctx *ctx, int op, tpl_node *a, tpl_node *b, uint32_t off) {
    tpl_node *n = tpl_p_node(ctx, TPL_N_BINOP, off, a, b);
    n->op = (uint16_t)op;
    return n;
}
static tpl_node *cmp(tpl_pctx *ctx, int op, tpl_node *a, tpl_node *b, uint32_t off) {
    tpl_node *o = tpl_p_node(ctx, TPL_N_CMPOP, off, b, NULL);
    o->op = (uint16_t)op;
    return tpl_p_node(ctx, TPL_N_COMPARE, off, a, o);
}
/* "a" 'b' "c#{x}": adjacent string literals are one literal (Ruby's string concatenation at parse time).
 * Constant ones wait in l->a and are copied once (tpl_p_string_join): where an interpolation
 * follows, or where the literal ends (primary ::= strlit). */
static tpl_node *str_adjacent(tpl_pctx *ctx, tpl_node *l, tpl_node *r) {
    if (l->kind == TPL_N_CONST && r->kind == TPL_N_CONST && l->val.type == TPL_T_STR && r->val.type == TPL_T_STR &&
        !(l->val.flags & TPL_F_SYMBOL) && !(r->val.flags & TPL_F_SYMBOL)) {
        if (r != &ctx->dummy) l->a = tpl_node_append(l->a, r);
        return l;
    }
    l = tpl_p_string_join(ctx, l, true);
    tpl_node *lp = l->kind == TPL_N_INTERP ? l->a : l, *rp = r->kind == TPL_N_INTERP ? r->a : r;
    if (lp != l->a) { lp->next = NULL; lp->tail = NULL; }
    if (rp != r->a) { rp->next = NULL; rp->tail = NULL; }
    tpl_node *parts = tpl_node_append(lp, rp);
    if (l->kind == TPL_N_INTERP) { l->a = parts; return l; }
    return tpl_p_node(ctx, TPL_N_INTERP, l->off, parts, NULL);
}

/* `stmt rescue value`: in `x = y rescue z` the rescue is the assignment's value's (Ruby's arg_rhs) */
static tpl_node *rescue_mod(tpl_pctx *ctx, tpl_node *s, tpl_token t, tpl_node *r) {
    tpl_node *res = tpl_p_node(ctx, TPL_N_RRESCUE, t.off, NULL, r);
    if (s->kind == TPL_N_SET) { s->b = tpl_p_node(ctx, TPL_N_RBEGIN, t.off, s->b, res); return s; }
    s->next = NULL;
    return tpl_p_node(ctx, TPL_N_RBEGIN, t.off, s, res);
}

static tpl_node *not_(tpl_pctx *ctx, tpl_node *a, uint32_t off) {
    tpl_node *n = tpl_p_node(ctx, TPL_N_UNOP, off, a, NULL);
    n->op = TPL_AOP_NOT;
    return n;
}
/* A brace-less hash argument (`h.update("y" => 2)`, `f(x, "k" => v, a: 1)`): from its first `=>` pair,
 * the trailing pairs and labels are one Hash, the last positional argument (as Ruby passes it to a
 * method without keywords). Labels alone stay keyword arguments (the method decides). */
static tpl_node *hash_args(tpl_pctx *ctx, tpl_node *args) {
    tpl_node **pp = &args;
    while (*pp && (*pp)->kind != TPL_N_PAIR) pp = &(*pp)->next;
    if (!*pp) return args;
    /* labels just before the first pair belong to the same hash */
    tpl_node **st = &args, **first = pp;
    for (tpl_node **q = &args; q != first; q = &(*q)->next)
        if ((*q)->kind != TPL_N_KWARG) st = &(*q)->next;
    tpl_node *pairs = NULL, *last = NULL;
    for (tpl_node *x = *st, *nx; x; x = nx) {
        nx = x->next;
        x->next = NULL;
        tpl_node *pr = x;
        if (x->kind == TPL_N_KWARG) {
            tpl_node *k = tpl_p_node(ctx, TPL_N_CONST, x->off, NULL, NULL);
            k->val = x->val;
            k->val.flags |= TPL_F_SYMBOL;
            pr = tpl_p_node(ctx, TPL_N_PAIR, x->off, k, x->a);
        } else if (x->kind != TPL_N_PAIR) {
            tpl_pctx_error(ctx, x->off, "syntax error, unexpected argument after a hash argument");
            return args;
        }
        if (last) last->next = pr; else pairs = pr;
        last = pr;
    }
    tpl_node *d = tpl_p_node(ctx, TPL_N_DICT, pairs->off, pairs, NULL);
    d->op = 1;   /* brace-less: keywords to a method, block or Proc that takes them (compiler/lower_erb.c bare_hash) */
    *st = tpl_p_node(ctx, TPL_N_ARG, d->off, d, NULL);
    if (args) {
        tpl_node *t = args;
        while (t->next) t = t->next;
        args->tail = t;
    }
    return args;
}
/* numbered_max: the highest numbered block parameter (_1.._9, Ruby 2.7+) the block body n uses,
 * outside nested blocks and defs (they have their own). */
static int numbered_max(const tpl_node *n) {
    int m = 0;
    for (; n; n = n->next) {
        if (n->kind == TPL_N_RBLOCK || n->kind == TPL_N_RDEF) continue;
        if (n->kind == TPL_N_NAME && n->val.type == TPL_T_STR && n->val.len == 2 && n->val.u.s[0] == '_' &&
            n->val.u.s[1] >= '1' && n->val.u.s[1] <= '9' && n->val.u.s[1] - '0' > m)
            m = n->val.u.s[1] - '0';
        const tpl_node *kids[5] = { n->a, n->b, n->c, tpl_node_d(n), tpl_node_e(n) };
        for (int i = 0; i < 5; i++) { int k = numbered_max(kids[i]); if (k > m) m = k; }
    }
    return m;
}
/* A block: without |params|, the numbered parameters its body uses are its parameters
 * (_1 alone is |_1| as Ruby's, the whole yielded value; _2 makes it |_1, _2|). */
static tpl_node *block_node(tpl_pctx *ctx, uint32_t off, tpl_node *params, tpl_node *body) {
    static const char *const names[] = { "_1", "_2", "_3", "_4", "_5", "_6", "_7", "_8", "_9" };
    int m = params ? 0 : numbered_max(body);
    for (int i = 0; i < m; i++) {
        tpl_node *p = tpl_p_node(ctx, TPL_N_NAME, off, NULL, NULL);
        p->val = tpl_v_str(names[i], 2);
        params = params ? tpl_node_append(params, p) : p;
    }
    return tpl_p_node(ctx, TPL_N_RBLOCK, off, params, body);
}

/* &:name (a BLOCKARG token): the block { |it| it.name } */
static tpl_node *sym_block(tpl_pctx *ctx, tpl_token t)
{
    tpl_node *p = tpl_p_node(ctx, TPL_N_NAME, t.off, NULL, NULL);
    p->val = tpl_v_str("(it)", 4);
    tpl_node *r = tpl_p_node(ctx, TPL_N_NAME, t.off, NULL, NULL);
    r->val = p->val;
    tpl_node *m = tpl_p_node(ctx, TPL_N_RMETHOD, t.off, r, NULL);
    m->val = tpl_v_str(ctx->src + t.off + 2, t.len - 2);
    return tpl_p_node(ctx, TPL_N_RBLOCK, t.off, p, m);
}
/* r.send(:m, args), r.public_send(:m, args), r.__send__(:m, args) with a plain Symbol literal: the call
 * r.m(args) itself, so a method that changes its receiver (<<, push, []=, upcase!, ...) changes it, or is
 * refused, exactly as the direct call (a name only known at run time: stdlib/ruby/ruby.c r_any_send).
 * Kernel's private methods (send reaches them, a call with a receiver does not) keep the send. */
static tpl_node *send_literal(tpl_pctx *ctx, tpl_node *n) {
    (void)ctx;
    tpl_value m = n->val;
    if (!((m.len == 4 && memcmp(m.u.s, "send", 4) == 0) || (m.len == 11 && memcmp(m.u.s, "public_send", 11) == 0) ||
          (m.len == 8 && memcmp(m.u.s, "__send__", 8) == 0)))
        return n;
    tpl_node *a = n->b;
    if (!a || a->kind != TPL_N_ARG || !a->a || a->a->kind != TPL_N_CONST || !(a->a->val.flags & TPL_F_SYMBOL)) return n;
    tpl_value s = a->a->val;
    if (s.len == 0 || ctx->src[a->a->off] != ':' || ctx->src[a->a->off + 1] == '"' || s.u.s[0] == '$' || s.u.s[0] == '@' ||
        s.u.s[0] == '(')
        return n;
    static const char *const priv[] = { "puts", "print", "p", "pp", "format", "sprintf", "printf", "putc", "Integer",
        "Float", "String", "Array", "Hash", "Rational", "Complex", "raise", "fail", "lambda", "proc", "rand", "srand",
        "loop", "require", "require_relative", "load", "sleep", "gets", "binding", "block_given?", "caller", "catch",
        "throw", "exit", "exit!", "abort", "at_exit", "system", "open", "warn", "`", "eval", "method_missing",
        "respond_to_missing?", "initialize", "initialize_copy", "local_variables", "global_variables", "__method__",
        "__dir__", "__callee__", "select", "trap", "fork", "exec", "spawn", "readline", "readlines", "autoload",
        "autoload?", "set_trace_func", "trace_var", "untrace_var", "iterator?", "test", "syscall", "srand", NULL };
    for (int i = 0; priv[i]; i++)
        if (s.len == strlen(priv[i]) && memcmp(s.u.s, priv[i], s.len) == 0) return n;
    tpl_node *rest = a->next;
    if (rest) {
        tpl_node *t = rest;
        while (t->next) t = t->next;
        rest->tail = t;
    }
    n->val = tpl_v_str(s.u.s, s.len);
    n->b = rest;
    return n;
}
static tpl_node *method(tpl_pctx *ctx, tpl_node *recv, tpl_token name, tpl_node *args, uint32_t off) {
    args = hash_args(ctx, args);
    bool self = recv && recv->kind == TPL_N_NAME && recv->val.len == 6 && memcmp(recv->val.u.s, "(self)", 6) == 0;
    if (self) {
        /* self.name(args): a receiver-less call (Ruby calls self's private methods so too), never a local */
        tpl_node *n = tpl_p_node(ctx, TPL_N_RMETHOD, off, NULL, args);
        n->val = tpl_p_tokstr(ctx, name);
        n->op = 2;   /* (self.: defined?(self.name) is nil for a private method) */
        return n;
    }
    tpl_node *n = tpl_p_node(ctx, TPL_N_RMETHOD, off, recv, args);
    n->val = tpl_p_tokstr(ctx, name);
    return recv ? send_literal(ctx, n) : n;
}
static tpl_node *method_s(tpl_pctx *ctx, tpl_node *recv, const char *name, tpl_node *args, uint32_t off) {
    args = hash_args(ctx, args);
    tpl_node *n = tpl_p_node(ctx, TPL_N_RMETHOD, off, recv, args);
    n->val = tpl_v_str(name, strlen(name));
    return n;
}
static tpl_node *safe_recv(tpl_pctx *ctx, tpl_token t) {
    tpl_node *r = tpl_p_node(ctx, TPL_N_NAME, t.off, NULL, NULL);
    r->val = tpl_v_str("(safe)", 6);
    return r;
}
static tpl_node *safe(tpl_pctx *ctx, tpl_node *recv, tpl_node *call) { return tpl_p_node(ctx, TPL_N_RSAFE, call->off, recv, call); }
static tpl_node *arg1(tpl_pctx *ctx, tpl_node *e) { return tpl_p_node(ctx, TPL_N_ARG, e->off, e, NULL); }
/* A Hash literal's assocs l (PAIR, and STARKW for **h): {a: 1, **h, b: 2} is {a: 1}.merge(h).merge({b: 2})
 * (Ruby's **h copies h's pairs in order, a later key's value replacing an earlier one's where it stands;
 * h no Hash is merge's TypeError, "no implicit conversion of nil into Hash" as **nil's). */
static tpl_node *dict_lit(tpl_pctx *ctx, tpl_node *l, uint32_t off) {
    bool splat = false;
    for (tpl_node *x = l; x; x = x->next) splat = splat || x->kind == TPL_N_STARKW;
    if (!splat) return tpl_p_node(ctx, TPL_N_DICT, off, l, NULL);
    tpl_node *acc = NULL, *seg = NULL;
    for (tpl_node *x = l, *next; x; x = next) {
        next = x->next;
        x->next = NULL;
        if (x->kind != TPL_N_STARKW) { seg = seg ? tpl_node_append(seg, x) : x; continue; }
        if (!acc) acc = tpl_p_node(ctx, TPL_N_DICT, off, seg, NULL);
        else if (seg) acc = method_s(ctx, acc, "merge", arg1(ctx, tpl_p_node(ctx, TPL_N_DICT, seg->off, seg, NULL)), seg->off);
        seg = NULL;
        acc = method_s(ctx, acc, "merge", arg1(ctx, x->a), x->off);
    }
    if (seg) acc = method_s(ctx, acc, "merge", arg1(ctx, tpl_p_node(ctx, TPL_N_DICT, seg->off, seg, NULL)), seg->off);
    return acc;
}
/* [x, y, k: 1, **h]: the brace-less Hash of the assocs h after the items (NULL: none) is the last item;
 * Ruby 3.1 leaves it out when it has only **splats and is empty ([1, **{}] is [1]: [x, y] + ([H] - [{}])), but not
 * after a *splat ([*a, **{}] is [{}]). */
static tpl_node *list_kw(tpl_pctx *ctx, tpl_node *items, tpl_node *h, uint32_t off) {
    bool pairs = false;
    for (tpl_node *x = h; x; x = x->next) pairs = pairs || x->kind != TPL_N_STARKW;
    for (tpl_node *x = items; x; x = x->next) pairs = pairs || x->kind == TPL_N_STARARG;   /* ([*a, **{}] keeps it: [{}]) */
    tpl_node *d = dict_lit(ctx, h, off);
    if (pairs) return tpl_p_node(ctx, TPL_N_LIST, off, items ? tpl_node_append(items, d) : d, NULL);
    tpl_node *tail = binop(ctx, TPL_AOP_SUB, tpl_p_node(ctx, TPL_N_LIST, off, d, NULL),
                           tpl_p_node(ctx, TPL_N_LIST, off, tpl_p_node(ctx, TPL_N_DICT, off, NULL, NULL), NULL), off);
    return items ? binop(ctx, TPL_AOP_ADD, tpl_p_node(ctx, TPL_N_LIST, off, items, NULL), tail, off) : tail;
}
static tpl_node *ivar_name(tpl_pctx *ctx, tpl_token t) {
    tpl_node *n = tpl_p_node(ctx, TPL_N_NAME, t.off, NULL, NULL);
    n->val = tpl_v_str(ctx->src + t.off, t.len);   /* "@name": its own variable; reads state key "name" */
    return n;
}
static tpl_node *konst(tpl_pctx *ctx, tpl_value v, uint32_t off) {
    tpl_node *n = tpl_p_node(ctx, TPL_N_CONST, off, NULL, NULL);
    n->val = v;
    return n;
}
/* x = ... x ...: Ruby's parser makes x a local at the assignment's left side, so the right side's bare x reads it
 * (nil, or the binding's local of a state key): those NAMEs get op 1, as op_assign's (also in a block's body;
 * not in a def of the right side, a scope of its own) */
static void self_ref(tpl_node *n, tpl_value name, int depth) {
    for (; n && depth < 200; n = n->next) {
        if (n->kind == TPL_N_RDEF) continue;
        if (n->kind == TPL_N_RBLOCK) { self_ref(n->b, name, depth + 1); continue; }   /* (its body: not its parameters) */
        if (n->kind == TPL_N_NAME && !n->op && !n->a && n->val.len == name.len && memcmp(n->val.u.s, name.u.s, name.len) == 0) n->op = 1;
        if (tpl_node_has_de(n->kind)) continue;
        self_ref(n->a, name, depth + 1);
        self_ref(n->b, name, depth + 1);
        self_ref(n->c, name, depth + 1);
    }
}
static tpl_node *target(tpl_pctx *ctx, tpl_node *lhs, tpl_token op);
static tpl_node *assign(tpl_pctx *ctx, tpl_node *l, tpl_token t, tpl_node *r) {
    tpl_node *lhs = target(ctx, l, t);
    if (lhs && lhs->kind == TPL_N_NAME && r) {
        tpl_node *keep = r->next;   /* (r alone) */
        r->next = NULL;
        self_ref(r, lhs->val, 0);
        r->next = keep;
    }
    return tpl_p_node(ctx, TPL_N_SET, t.off, lhs, r);
}
/* Whether s is a begin ... end (the begin keyword's RBEGIN: it starts at the keyword; `x rescue y`'s at rescue). */
static bool begin_kw(tpl_pctx *ctx, const tpl_node *s) {
    return s->kind == TPL_N_RBEGIN && strncmp(ctx->src + s->off, "begin", 5) == 0;   /* (src: NUL-terminated) */
}
/* The key of {"a b": 1}: the string's Symbol (a constant one flagged, an interpolated one's to_sym). */
static tpl_node *str_label(tpl_pctx *ctx, tpl_node *k, uint32_t off) {
    if (!k) return k;
    if (k->kind == TPL_N_CONST) { k->val.flags |= TPL_F_SYMBOL; return k; }
    return method_s(ctx, k, "to_sym", NULL, off);
}
/* The keyword of f("a": 1): the constant string (an interpolated one is tpl's refusal). */
static tpl_value str_kw(tpl_pctx *ctx, tpl_node *k, uint32_t off) {
    if (k && k->kind == TPL_N_CONST) return k->val;
    tpl_pctx_error(ctx, off, "unsupported Ruby construct: an interpolated keyword argument (\"#{...}\": value)");
    return tpl_v_str("", 0);
}
/* An assignment target: a local, an @ivar or an index `r[k]`, `r[i, n]` (index assignment: the lowering stores
 * the changed array or hash back into the variable at the root of r); anything else is refused. */
static tpl_node *target(tpl_pctx *ctx, tpl_node *lhs, tpl_token op) {
    if (lhs->kind == TPL_N_RIVAR && lhs->val.len && lhs->val.u.s[0] == '$')
        tpl_pctx_error(ctx, lhs->off, "Can't set variable %.*s", (int)lhs->val.len, lhs->val.u.s);
    if (lhs->kind == TPL_N_NAME || lhs->kind == TPL_N_RIVAR) return lhs;
    if (lhs->kind == TPL_N_GETITEM) return lhs;
    /* r[i, n] = v, r[range] = v: a call of []= with every index (as GETITEM for one) */
    if (lhs->kind == TPL_N_RMETHOD && lhs->a && !lhs->c && lhs->val.len == 2 && memcmp(lhs->val.u.s, "[]", 2) == 0) {
        for (tpl_node *x = lhs->b; x; x = x->next)
            if (x->kind != TPL_N_ARG) { tpl_pctx_error(ctx, x->off, "syntax error, unexpected argument in an index assignment"); break; }
        return lhs;
    }
    if (lhs->kind == TPL_N_RMETHOD && lhs->a && !lhs->b && !lhs->c && !lhs->op)
        tpl_pctx_error(ctx, op.off, "unsupported Ruby construct: attribute assignment (%.*s=)", (int)lhs->val.len, lhs->val.u.s);
    else
        tpl_pctx_error(ctx, op.off, "syntax error, unexpected '='");
    return lhs;
}
/* Multiple assignment `a, b = v` (v's items when v is an Array, else v as the first) and `a, b = x, y`: a hidden
 * local takes the right side, each target its item (nil past the end); the statement's value is the right
 * side's array, as Ruby's. A target is a variable, an index, a splat `*rest` (at most one: the items between
 * the ones before and after it, a new Array, empty when there are too few) or a nested `(a, b)` (its item
 * destructured the same way); `a, = v` takes v's first item. */
static tpl_node *masgn_tmp(tpl_pctx *ctx, const char *nm, size_t len, uint32_t off) {
    tpl_node *t = tpl_p_node(ctx, TPL_N_NAME, off, NULL, NULL);
    t->val = tpl_v_str(nm, len);
    return t;
}
static tpl_node *masgn_bind(tpl_pctx *ctx, tpl_node *lhs, tpl_token op, tpl_node *one, tpl_node *many, uint32_t at, int depth) {
    char buf[40];
    int len = snprintf(buf, sizeof buf, "(masgn %u)", (unsigned)at);
    char *nm = tpl_arena_strdup(ctx->keep ? ctx->keep : ctx->arena, buf, (size_t)len);
    if (!nm) { tpl_pctx_error(ctx, op.off, "out of memory"); return lhs; }
    if (depth > 32) { tpl_pctx_error(ctx, at, "multiple assignment nested too deep"); return lhs; }
#define TMP() masgn_tmp(ctx, nm, (size_t)len, op.off)
#define INT(i) konst(ctx, tpl_v_int(i), op.off)
    tpl_node *seq;
    if (many) {
        seq = NODE(SET, op.off, TMP(), NODE(LIST, op.off, many, NULL));
    } else {
        /* tmp = v; tmp = tmp.is_a?(Array) ? tmp : [tmp] */
        seq = NODE(SET, op.off, TMP(), one);
        tpl_node *cls = N(RCONSTNAME, op.off);
        cls->val = tpl_v_str("Array", 5);
        tpl_node *c = NODE(CONDEXPR, op.off, method_s(ctx, TMP(), "is_a?", arg1(ctx, cls), op.off), TMP());
        c->c = NODE(LIST, op.off, TMP(), NULL);
        seq = tpl_node_append(seq, NODE(SET, op.off, TMP(), c));
    }
    int64_t pre = 0, post = 0;
    const tpl_node *star = NULL;
    for (tpl_node *t = lhs; t; t = t->next) {
        if (t->kind != TPL_N_STARARG) { if (star) post++; else pre++; continue; }
        if (star) { tpl_pctx_error(ctx, t->off, "syntax error, unexpected '*' (a second splat in a multiple assignment)"); return lhs; }
        star = t;
    }
    int64_t i = 0;
    bool after = false;
    for (tpl_node *t = lhs, *nx; t; t = nx, i++) {
        nx = t->next;
        t->next = NULL;
        t->tail = NULL;
        tpl_node *item;
        if (t->kind == TPL_N_STARARG) {
            /* *rest = tmp[pre, tmp.size - pre - post] || [] */
            after = true;
            tpl_node *n = method_s(ctx, TMP(), "size", NULL, op.off);
            tpl_node *cnt = binop(ctx, TPL_AOP_SUB, n, INT(pre + post), op.off);
            tpl_node *sl = method_s(ctx, TMP(), "[]", tpl_node_append(arg1(ctx, INT(pre)), arg1(ctx, cnt)), op.off);
            item = tpl_p_node(ctx, TPL_N_OR, op.off, sl, N(LIST, op.off));
            if (!t->a) { seq = tpl_node_append(seq, item); continue; }   /* `a, * = v` */
            t = t->a;
        } else if (after) {
            /* the j-th after the splat: tmp[j - post] when tmp has pre + post items, else tmp[pre + j] (nil) */
            int64_t j = i - pre - 1;
            tpl_node *full = cmp(ctx, TPL_AOP_GE, method_s(ctx, TMP(), "size", NULL, op.off), INT(pre + post), op.off);
            item = NODE(CONDEXPR, op.off, full, NODE(GETITEM, op.off, TMP(), INT(j - post)));
            item->c = NODE(GETITEM, op.off, TMP(), INT(pre + j));
        } else {
            item = NODE(GETITEM, op.off, TMP(), INT(i));
        }
        if (t->kind == TPL_N_LIST) {   /* (a, b): its item destructured */
            seq = tpl_node_append(seq, masgn_bind(ctx, t->a, op, item, NULL, t->off, depth + 1));
            continue;
        }
        seq = tpl_node_append(seq, NODE(SET, op.off, target(ctx, t, op), item));
    }
    seq = tpl_node_append(seq, TMP());
#undef INT
#undef TMP
    return NODE(RSTMTS, op.off, NULL, seq);
}
static tpl_node *masgn(tpl_pctx *ctx, tpl_node *lhs, tpl_token op, tpl_node *one, tpl_node *many) {
    return masgn_bind(ctx, lhs, op, one, many, op.off, 0);
}
/* `/re/ =~ x` with a regex literal on the left: re's named groups become local variables, each $~[name] (nil
 * when nothing matched): tmp = /re/ =~ x; name = $~ && $~["name"] ...; tmp. */
static tpl_node *named_match(tpl_pctx *ctx, tpl_node *lhs, tpl_node *rhs, tpl_token op) {
    tpl_node *m = method_s(ctx, lhs, "=~", arg1(ctx, rhs), op.off);
    if (lhs->kind != TPL_N_RREGEX || lhs->val.type != TPL_T_STR) return m;
    const char *re = lhs->val.u.s;
    size_t len = lhs->val.len, pos = 0, b, nl;
    if (!tpl_erb_regex_name(re, len, &pos, &b, &nl)) return m;
    char buf[40];
    int tl = snprintf(buf, sizeof buf, "(nmatch %u)", (unsigned)op.off);
    char *nm = tpl_arena_strdup(ctx->keep ? ctx->keep : ctx->arena, buf, (size_t)tl);
    if (!nm) { tpl_pctx_error(ctx, op.off, "out of memory"); return m; }
    tpl_node *seq = NODE(SET, op.off, masgn_tmp(ctx, nm, (size_t)tl, op.off), m);
    pos = 0;
    while (tpl_erb_regex_name(re, len, &pos, &b, &nl)) {
        bool again = false;   /* a name twice: one local, its last group's value ($~[name]) */
        for (size_t p = 0, b2, n2; !again && tpl_erb_regex_name(re, b - 3, &p, &b2, &n2);)
            again = n2 == nl && memcmp(re + b2, re + b, nl) == 0;
        if (again) continue;
        tpl_node *md = tpl_p_node(ctx, TPL_N_RIVAR, op.off, NULL, NULL);
        md->val = tpl_v_str("$~", 2);
        tpl_node *md2 = tpl_p_node(ctx, TPL_N_RIVAR, op.off, NULL, NULL);
        md2->val = md->val;
        tpl_node *v = tpl_p_node(ctx, TPL_N_AND, op.off, md, NODE(GETITEM, op.off, md2, konst(ctx, tpl_v_str(re + b, nl), op.off)));
        seq = tpl_node_append(seq, NODE(SET, op.off, masgn_tmp(ctx, re + b, nl, op.off), v));
    }
    seq = tpl_node_append(seq, masgn_tmp(ctx, nm, (size_t)tl, op.off));
    return NODE(RSTMTS, op.off, NULL, seq);
}
/* x op= y: x = x op y (||= and &&= keep their short-circuit). */
static tpl_node *op_assign(tpl_pctx *ctx, tpl_node *lhs, tpl_token op, tpl_node *rhs) {
    lhs = target(ctx, lhs, op);
    tpl_node *cur = tpl_p_node(ctx, lhs->kind, lhs->off, lhs->a, lhs->b);
    cur->val = lhs->val;
    if (lhs->kind == TPL_N_NAME) cur->op = 1;   /* the assignment declares the local: nil (not a NameError) when it has no value yet */
    if (lhs->kind == TPL_N_NAME && rhs && !rhs->next) self_ref(rhs, lhs->val, 0);   /* (and the right side's x: w ||= defined?(w)) */
    const char *s = ctx->src + op.off;
    tpl_node *v;
    switch (s[0]) {
    case '+': v = binop(ctx, TPL_AOP_ADD, cur, rhs, op.off); break;
    case '-': v = binop(ctx, TPL_AOP_SUB, cur, rhs, op.off); break;
    case '*': v = binop(ctx, s[1] == '*' ? TPL_AOP_POW : TPL_AOP_MUL, cur, rhs, op.off); break;
    case '/': v = binop(ctx, TPL_AOP_DIV, cur, rhs, op.off); break;
    case '%': v = binop(ctx, TPL_AOP_MOD, cur, rhs, op.off); break;
    case '|': v = s[1] == '|' ? tpl_p_node(ctx, TPL_N_OR, op.off, cur, rhs) : method_s(ctx, cur, "|", arg1(ctx, rhs), op.off); break;
    case '&': v = s[1] == '&' ? tpl_p_node(ctx, TPL_N_AND, op.off, cur, rhs) : method_s(ctx, cur, "&", arg1(ctx, rhs), op.off); break;
    case '^': v = method_s(ctx, cur, "^", arg1(ctx, rhs), op.off); break;
    case '<': v = method_s(ctx, cur, "<<", arg1(ctx, rhs), op.off); break;
    default: v = method_s(ctx, cur, ">>", arg1(ctx, rhs), op.off); break;
    }
    return tpl_p_node(ctx, TPL_N_SET, op.off, lhs, v);
}
}

%syntax_error {
    if (!ctx->failed) {
        if (yymajor == 0) {
            tpl_pctx_error(ctx, (uint32_t)ctx->n, "syntax error, unexpected end of template (missing 'end'?)");
        } else if (TOKEN.kind == TK_TERM) {
            tpl_pctx_error(ctx, TOKEN.off, "syntax error, unexpected end of statement");
        } else if (TOKEN.kind == TK_INS_CLOSE) {
            tpl_pctx_error(ctx, TOKEN.off, "syntax error, unexpected end of <%%= tag");
        } else if (TOKEN.kind == TK_PUT || TOKEN.kind == TK_INS_OPEN) {
            tpl_pctx_error(ctx, TOKEN.off, "syntax error, unexpected template text");
        } else if (TOKEN.kind == TK_ASSOC) {
            /* (42 => x, h => {name:}: Ruby 3's rightward assignment, a pattern match) */
            tpl_pctx_error(ctx, TOKEN.off, "unsupported Ruby construct: rightward assignment / pattern matching (expr => pattern)");
        } else if (TOKEN.kind == TK_IN) {
            /* (case x in [a, b], x in Integer: Ruby 3's pattern matching) */
            tpl_pctx_error(ctx, TOKEN.off, "unsupported Ruby construct: pattern matching (case/in, expr in pattern)");
        } else {
            tpl_pctx_error(ctx, TOKEN.off, "syntax error, unexpected '%.*s'", (int)(TOKEN.len > 40 ? 40 : TOKEN.len), ctx->src + TOKEN.off);
        }
    }
}
%stack_overflow {
    tpl_pctx_error(ctx, 0, "template nesting too deep");
}

%token PUT INS_OPEN INS_CLOSE TERM CMD LABEL SLABEL DLABEL SSTRING DSTRING SYMBOL REGEX SELF BLOCKARG WORDS LAMBDA BLOCKAMP.

%nonassoc IF_MOD UNLESS_MOD WHILE_MOD UNTIL_MOD.
%left OR AND.
%right NOT.
%nonassoc DEFINED.
%left RESCUE_MOD.
%right ASSIGN OP_ASGN.
%right QMARK COLON.
%nonassoc DOT2 DOT3.
%left OROR.
%left ANDAND.
%nonassoc CMP EQ EQQ NE MATCH NMATCH.
%left GT GE LT LE.
%left PIPE CARET.
%left AMP.
%left LSHIFT RSHIFT.
%left PLUS MINUS.
%left STAR SLASH PERCENT.
%right UMINUS.
%right POW.
%right BANG UPLUS.
%left DOT ANDDOT LBRACK_IDX.

/* The template's top level: a streaming compile (ctx->top) takes each statement as soon as it is
 * parsed (tpl_p_top; the tree then never holds more than one), else a list. A #{} body parsed
 * on its own (tpl_erb_dstring) is a template's top level too: its parse has no ctx->top. */
program ::= top_stmts(B) opt_terms. { ctx->root = NODE(RSTMTS, 0, NULL, B); }
top_stmts(A) ::= . { A = NULL; }
top_stmts(A) ::= stmt(S). { A = tpl_p_top(ctx, NULL, S); }
top_stmts(A) ::= top_stmts(L) TERM stmt(S). { A = tpl_p_top(ctx, L, S); }

compstmt(A) ::= stmts(S) opt_terms. { A = S; }
stmts(A) ::= . { A = NULL; }
stmts(A) ::= stmt(S). { A = S; }
stmts(A) ::= stmts(L) TERM stmt(S). { A = tpl_node_append(L, S); }
opt_terms ::= .
opt_terms ::= TERM.

stmt(A) ::= PUT(T). { A = tpl_erb_text(ctx, T); }
stmt(A) ::= INS_OPEN(T) compstmt(B) INS_CLOSE. { A = NODE(OUTPUT, T.off, NODE(RSTMTS, T.off, NULL, B), NULL); }
stmt(A) ::= stmt(S) IF_MOD(T) expr(C). { A = NODE(IF, T.off, C, S); S->next = NULL; }
stmt(A) ::= stmt(S) UNLESS_MOD(T) expr(C). { A = NODE(IF, T.off, not_(ctx, C, T.off), S); }
/* `stmt while cond` / `stmt until cond`: the condition is tested first (a loop of one statement); but
 * `begin ... end while cond` (a begin keyword's, not `(begin ... end)` nor `x rescue y`) runs its body
 * first, as Ruby's do-while (op bit 2) */
stmt(A) ::= stmt(S) WHILE_MOD(T) expr(C).
    { A = NODE(RWHILE, T.off, C, S); if (begin_kw(ctx, S)) A->op = 2; S->next = NULL; }
stmt(A) ::= stmt(S) UNTIL_MOD(T) expr(C).
    { A = NODE(RWHILE, T.off, C, S); A->op = begin_kw(ctx, S) ? 3 : 1; S->next = NULL; }
/* `stmt rescue value`: a StandardError raised by stmt gives value; in `x = y rescue z` the rescue
 * is the assignment's value's (Ruby's arg_rhs) */
stmt(A) ::= stmt(S) RESCUE_MOD(T) expr(R). { A = rescue_mod(ctx, S, T, R); }
/* `v = e.next rescue break` (also next, retry, return): the jump is the rescue clause */
stmt(A) ::= stmt(S) RESCUE_MOD(T) jump(R). { A = rescue_mod(ctx, S, T, R); }
jump(A) ::= NEXT(T). { A = N(RNEXT, T.off); }
jump(A) ::= NEXT(T) arg(E). { A = NODE(RNEXT, T.off, E, NULL); }
jump(A) ::= BREAK(T). { A = N(RBREAK, T.off); }
jump(A) ::= BREAK(T) arg(E). { A = NODE(RBREAK, T.off, E, NULL); }
jump(A) ::= RETURN(T). { A = N(RRETURN, T.off); }
jump(A) ::= RETURN(T) arg(E). { A = NODE(RRETURN, T.off, E, NULL); }
jump(A) ::= RETRY(T). { A = N(RRETRY, T.off); }
stmt(A) ::= expr(E). { A = E; }
/* multiple assignment (masgn above) */
stmt(A) ::= mlhs(L) ASSIGN(T) arg(R). { A = masgn(ctx, L, T, R, NULL); }
stmt(A) ::= mlhs(L) ASSIGN(T) mrhs(R). { A = masgn(ctx, L, T, NULL, R); }
stmt(A) ::= mlhs(L) ASSIGN(T) STAR(S) arg(R). { A = masgn(ctx, L, T, NULL, NODE(STARARG, S.off, R, NULL)); }
/* `(a, b) = v`: a nested target alone */
stmt(A) ::= LPAREN(P) mlhs(L) RPAREN ASSIGN(T) arg(R). { (void)P; A = masgn(ctx, L, T, R, NULL); }
stmt(A) ::= LPAREN(P) mlhs(L) RPAREN ASSIGN(T) mrhs(R). { (void)P; A = masgn(ctx, L, T, NULL, R); }
/* `*a = v` (a lone splat target: Array(v)'s items) */
stmt(A) ::= STAR(S) primary(L) ASSIGN(T) arg(R). { A = masgn(ctx, NODE(STARARG, S.off, L, NULL), T, R, NULL); }
stmt(A) ::= STAR(S) primary(L) ASSIGN(T) mrhs(R). { A = masgn(ctx, NODE(STARARG, S.off, L, NULL), T, NULL, R); }
mlhs(A) ::= mlhs_item(X) COMMA. { A = X; }
mlhs(A) ::= mlhs(L) COMMA. { A = L; }
mlhs(A) ::= mlhs_item(X) COMMA mlhs_item(Y). { A = tpl_node_append(X, Y); }
mlhs(A) ::= mlhs(L) COMMA mlhs_item(Y). { A = tpl_node_append(L, Y); }
mlhs_item(A) ::= primary(X). { A = X; }
mlhs_item(A) ::= STAR(T) primary(X). { A = NODE(STARARG, T.off, X, NULL); }
mlhs_item(A) ::= STAR(T). { A = N(STARARG, T.off); }
mlhs_item(A) ::= LPAREN(T) mlhs(L) RPAREN. { A = NODE(LIST, T.off, L, NULL); }
mrhs(A) ::= mrhs_item(X) COMMA mrhs_item(Y). { A = tpl_node_append(X, Y); }
mrhs(A) ::= mrhs(L) COMMA mrhs_item(Y). { A = tpl_node_append(L, Y); }
mrhs_item(A) ::= arg(E). { A = E; }
mrhs_item(A) ::= STAR(T) arg(E). { A = NODE(STARARG, T.off, E, NULL); }
stmt(A) ::= jump(J). { A = J; }

expr(A) ::= command(C). { A = C; }
expr(A) ::= primary(L) ASSIGN(T) command(C). { A = assign(ctx, L, T, C); }
expr(A) ::= arg(E). { A = E; }
expr(A) ::= expr(L) AND(T) expr(R). { A = NODE(AND, T.off, L, R); }
expr(A) ::= expr(L) OR(T) expr(R). { A = NODE(OR, T.off, L, R); }
expr(A) ::= NOT(T) expr(E). { A = not_(ctx, E, T.off); }
/* `! x.include? y`: Ruby's expr '!' command_call */
expr(A) ::= BANG(T) command(C). { A = not_(ctx, C, T.off); }

command(A) ::= CMD(T) call_args(L). { A = method(ctx, NULL, T, L, T.off); }
command(A) ::= primary(R) DOT CMD(T) call_args(L). { A = method(ctx, R, T, L, T.off); }
/* `x.each_slice 2 do |p| ... end`, `inject 0 do ... end`: a command's do-block (DO_BLOCK: the lexer's
 * keyword_do_block; `{ }` there binds to the last argument, as in Ruby) */
command(A) ::= CMD(T) call_args(L) DO_BLOCK(D) block_params(P) bodystmt(B) END. { A = method(ctx, NULL, T, L, T.off); A->c = block_node(ctx, D.off, P, B); }
command(A) ::= primary(R) DOT CMD(T) call_args(L) DO_BLOCK(D) block_params(P) bodystmt(B) END. { A = method(ctx, R, T, L, T.off); A->c = block_node(ctx, D.off, P, B); }

arg(A) ::= primary(L) ASSIGN(T) arg(R). { A = assign(ctx, L, T, R); }
arg(A) ::= primary(L) OP_ASGN(T) arg(R). { A = op_assign(ctx, L, T, R); }
arg(A) ::= arg(L) PLUS(T) arg(R). { A = binop(ctx, TPL_AOP_ADD, L, R, T.off); }
arg(A) ::= arg(L) MINUS(T) arg(R). { A = binop(ctx, TPL_AOP_SUB, L, R, T.off); }
arg(A) ::= arg(L) STAR(T) arg(R). { A = binop(ctx, TPL_AOP_MUL, L, R, T.off); }
arg(A) ::= arg(L) SLASH(T) arg(R). {
    A = binop(ctx, TPL_AOP_DIV, L, R, T.off);
    /* `size /2` after a name no local has: Ruby reads a regex argument unless the name is a binding's local
     * (a state key); the lowering (compiler/lower_erb.c ambdiv) divides only then */
    if (T.flag == 'r' && L->kind == TPL_N_NAME) A = method_s(ctx, NULL, "(ambdiv)", arg1(ctx, A), T.off);
}
arg(A) ::= arg(L) PERCENT(T) arg(R). { A = binop(ctx, TPL_AOP_MOD, L, R, T.off); }
arg(A) ::= arg(L) POW(T) arg(R). {
    /* -2 ** 2 is -(2 ** 2) in Ruby: a numeric literal's minus binds looser than ** (not in (-2) ** 2) */
    uint32_t b = T.off;
    while (b > 0 && (ctx->src[b - 1] == ' ' || ctx->src[b - 1] == '\t')) b--;
    /* (and of a Rational literal, -3r ** 2: tpl_erb_number's Rational("-3") call) */
    bool rat = L->kind == TPL_N_RMETHOD && !L->a && L->b && L->b->a && L->b->a->kind == TPL_N_CONST &&
               L->val.len == 8 && memcmp(L->val.u.s, "Rational", 8) == 0 && L->b->a->off == L->off;
    if ((L->kind == TPL_N_CONST || rat) && ctx->src[L->off] == '-' && b > 0 && ctx->src[b - 1] != ')' &&
        (rat || L->val.type == TPL_T_INT || L->val.type == TPL_T_FLOAT || L->val.type == TPL_T_BIGINT)) {
        tpl_node *pos = NODE(UNOP, L->off, L, NULL);
        pos->op = TPL_AOP_NEG;
        A = NODE(UNOP, L->off, binop(ctx, TPL_AOP_POW, pos, R, T.off), NULL);
        A->op = TPL_AOP_NEG;
    } else A = binop(ctx, TPL_AOP_POW, L, R, T.off);
}
arg(A) ::= UMINUS(T) arg(E). { A = NODE(UNOP, T.off, E, NULL); A->op = TPL_AOP_NEG; }
arg(A) ::= UPLUS(T) arg(E). { A = NODE(UNOP, T.off, E, NULL); A->op = TPL_AOP_POS; }
arg(A) ::= BANG(T) arg(E). { A = not_(ctx, E, T.off); }
arg(A) ::= DEFINED(T) arg(E). { A = NODE(RDEFINED, T.off, E, NULL); }
arg(A) ::= arg(L) EQ(T) arg(R). { A = cmp(ctx, TPL_AOP_EQ, L, R, T.off); }
arg(A) ::= arg(L) NE(T) arg(R). { A = cmp(ctx, TPL_AOP_NE, L, R, T.off); }
arg(A) ::= arg(L) LT(T) arg(R). { A = cmp(ctx, TPL_AOP_LT, L, R, T.off); }
arg(A) ::= arg(L) LE(T) arg(R). { A = cmp(ctx, TPL_AOP_LE, L, R, T.off); }
arg(A) ::= arg(L) GT(T) arg(R). { A = cmp(ctx, TPL_AOP_GT, L, R, T.off); }
arg(A) ::= arg(L) GE(T) arg(R). { A = cmp(ctx, TPL_AOP_GE, L, R, T.off); }
arg(A) ::= arg(L) CMP(T) arg(R). { A = method_s(ctx, L, "<=>", arg1(ctx, R), T.off); }
arg(A) ::= arg(L) EQQ(T) arg(R). { A = method_s(ctx, L, "===", arg1(ctx, R), T.off); }
arg(A) ::= arg(L) MATCH(T) arg(R). { A = named_match(ctx, L, R, T); }
arg(A) ::= arg(L) NMATCH(T) arg(R). { A = not_(ctx, method_s(ctx, L, "=~", arg1(ctx, R), T.off), T.off); }
arg(A) ::= arg(L) LSHIFT(T) arg(R). { A = method_s(ctx, L, "<<", arg1(ctx, R), T.off); }
arg(A) ::= arg(L) RSHIFT(T) arg(R). { A = method_s(ctx, L, ">>", arg1(ctx, R), T.off); }
/* Ruby's binary & | ^ are methods (Array intersection/union, Integer bits, true & x) */
arg(A) ::= arg(L) AMP(T) arg(R). { A = method_s(ctx, L, "&", arg1(ctx, R), T.off); }
arg(A) ::= arg(L) PIPE(T) arg(R). { A = method_s(ctx, L, "|", arg1(ctx, R), T.off); }
arg(A) ::= arg(L) CARET(T) arg(R). { A = method_s(ctx, L, "^", arg1(ctx, R), T.off); }
arg(A) ::= arg(L) ANDAND(T) arg(R). { A = NODE(AND, T.off, L, R); }
arg(A) ::= arg(L) OROR(T) arg(R). { A = NODE(OR, T.off, L, R); }
arg(A) ::= arg(L) DOT2(T) arg(R). { A = NODE(RRANGE, T.off, L, R); }
arg(A) ::= arg(L) DOT3(T) arg(R). { A = NODE(RRANGE, T.off, L, R); A->op = 1; }
arg(A) ::= arg(L) DOT2(T). { A = NODE(RRANGE, T.off, L, NULL); }
arg(A) ::= arg(L) DOT3(T). { A = NODE(RRANGE, T.off, L, NULL); A->op = 1; }
/* beginless ranges (..5, ...5): a NULL begin, lowered as nil */
arg(A) ::= DOT2(T) arg(R). { A = NODE(RRANGE, T.off, NULL, R); }
arg(A) ::= DOT3(T) arg(R). { A = NODE(RRANGE, T.off, NULL, R); A->op = 1; }
arg(A) ::= arg(C) QMARK(T) arg(Y) COLON arg(Z). { A = NODE(CONDEXPR, T.off, C, Y); A->c = Z; }
arg(A) ::= primary(P). { A = P; }

primary(A) ::= INTEGER(T). { A = tpl_erb_number(ctx, T, false); }
primary(A) ::= FLOAT(T). { A = tpl_erb_number(ctx, T, true); }
primary(A) ::= strlit(S). { A = tpl_p_string_join(ctx, S, true); }
strlit(A) ::= SSTRING(T). { A = tpl_erb_sstring(ctx, T); }
strlit(A) ::= DSTRING(T). { A = tpl_erb_dstring(ctx, T); }
strlit(A) ::= strlit(L) SSTRING(T). { A = str_adjacent(ctx, L, tpl_erb_sstring(ctx, T)); }
strlit(A) ::= strlit(L) DSTRING(T). { A = str_adjacent(ctx, L, tpl_erb_dstring(ctx, T)); }
primary(A) ::= SYMBOL(T). { A = tpl_erb_symbol(ctx, T); }
primary(A) ::= REGEX(T). { A = tpl_erb_regex(ctx, T); }
primary(A) ::= WORDS(T). { A = tpl_erb_words(ctx, T); }
/* (flag 'b': the nil a block-local variable starts with, grammar/erb_lex.re; the token spells its name) */
primary(A) ::= NIL(T). { A = T.flag == 'b' ? method_s(ctx, NULL, "(blocal)", arg1(ctx, tpl_p_name(ctx, T)), T.off) : konst(ctx, tpl_v_none(), T.off); }
primary(A) ::= LINE(T). { A = konst(ctx, tpl_v_int(tpl_erb_line(ctx, T)), T.off); }
/* __ENCODING__: the script's encoding, UTF-8, which is a string literal's: `"".encoding` (tpl has no
 * Encoding objects: the lowering's enc_walk lets it be printed, compared or named, nothing else) */
primary(A) ::= ENCODING(T). { A = method_s(ctx, konst(ctx, tpl_v_str("", 0), T.off), "encoding", NULL, T.off); }
primary(A) ::= TRUE(T). { A = konst(ctx, tpl_v_bool(true), T.off); }
primary(A) ::= FALSE(T). { A = konst(ctx, tpl_v_bool(false), T.off); }
/* self: `self.name(args)` is a receiver-less call (method); self as a value is refused by the lowering */
primary(A) ::= SELF(T). { A = N(NAME, T.off); A->val = tpl_v_str("(self)", 6); }
primary(A) ::= IDENT(T). { A = tpl_p_name(ctx, T); }
primary(A) ::= IVAR(T). { A = ivar_name(ctx, T); A->kind = TPL_N_RIVAR; }
primary(A) ::= CONST(T). { A = N(RCONSTNAME, T.off); A->val = tpl_p_tokstr(ctx, T); }
primary(A) ::= LPAREN(T) compstmt(B) RPAREN. { A = NODE(RSTMTS, T.off, NULL, B); }
primary(A) ::= DEFINED_P(T) LPAREN(P) compstmt(B) RPAREN. { A = NODE(RDEFINED, T.off, NODE(RSTMTS, P.off, NULL, B), NULL); }
primary(A) ::= LBRACK(T) RBRACK. { A = N(LIST, T.off); }
primary(A) ::= LBRACK(T) items(L) RBRACK. { A = NODE(LIST, T.off, L, NULL); }
primary(A) ::= LBRACK(T) items(L) COMMA RBRACK. { A = NODE(LIST, T.off, L, NULL); }
primary(A) ::= LBRACE(T) RBRACE. { A = N(DICT, T.off); }
primary(A) ::= LBRACE(T) assocs(L) RBRACE. { A = dict_lit(ctx, L, T.off); }
primary(A) ::= LBRACE(T) assocs(L) COMMA RBRACE. { A = dict_lit(ctx, L, T.off); }
/* [k: 1], [x, "k" => v, **h]: a brace-less Hash as the last item (list_kw) */
primary(A) ::= LBRACK(T) assocs(H) RBRACK. { A = list_kw(ctx, NULL, H, T.off); }
primary(A) ::= LBRACK(T) assocs(H) COMMA RBRACK. { A = list_kw(ctx, NULL, H, T.off); }
primary(A) ::= LBRACK(T) items(L) COMMA assocs(H) RBRACK. { A = list_kw(ctx, L, H, T.off); }
primary(A) ::= LBRACK(T) items(L) COMMA assocs(H) COMMA RBRACK. { A = list_kw(ctx, L, H, T.off); }
primary(A) ::= primary(R) LBRACK_IDX(T) call_args(L) RBRACK.
    { if (L && !L->next && L->kind == TPL_N_ARG) A = NODE(GETITEM, T.off, R, L->a); else A = method_s(ctx, R, "[]", L, T.off); }
primary(A) ::= primary(R) LBRACK_IDX(T) RBRACK. { A = method_s(ctx, R, "[]", NULL, T.off); }
primary(A) ::= call(C). { A = C; }
primary(A) ::= call(C) block(B). { A = C; A->c = B; }
primary(A) ::= IDENT(T) block(B). { A = method(ctx, NULL, T, NULL, T.off); A->op = 1; A->c = B; }
/* ->(x, y = 1) { } and -> do ... end: the call `lambda` with that block (its parameters may have defaults) */
primary(A) ::= LAMBDA(T) lambda_params(P) LBRACE_BLK compstmt(B) RBRACE.
    { A = method_s(ctx, NULL, "lambda", NULL, T.off); A->op = 1; A->c = tpl_p_node(ctx, TPL_N_RBLOCK, T.off, P, B); }
primary(A) ::= LAMBDA(T) lambda_params(P) DO bodystmt(B) END.
    { A = method_s(ctx, NULL, "lambda", NULL, T.off); A->op = 1; A->c = tpl_p_node(ctx, TPL_N_RBLOCK, T.off, P, B); }
lambda_params(A) ::= . { A = NULL; }
lambda_params(A) ::= LPAREN RPAREN. { A = NULL; }
lambda_params(A) ::= LPAREN fparams(P) opt_comma RPAREN. { A = P; }
primary(A) ::= IF(T) expr(C) then compstmt(B) elsifs(E) opt_else(L) END.
    { A = NODE(IF, T.off, C, B); A->c = tpl_p_elif_end(E, L); }
primary(A) ::= UNLESS(T) expr(C) then compstmt(B) opt_else(E) END. { A = NODE(IF, T.off, not_(ctx, C, T.off), B); A->c = E; }
primary(A) ::= CASE(T) opt_expr(S) opt_terms whens(W) opt_else(E) END. { A = NODE(RCASE, T.off, S, W); A->c = E; }
primary(A) ::= FOR(T) params(V) IN expr(E) do_cond compstmt(B) END. { A = NODE(RFOR, T.off, E, B); A->c = V; }
primary(A) ::= WHILE(T) expr(C) do_cond compstmt(B) END. { A = NODE(RWHILE, T.off, C, B); }
primary(A) ::= UNTIL(T) expr(C) do_cond compstmt(B) END. { A = NODE(RWHILE, T.off, C, B); A->op = 1; }
primary(A) ::= BEGIN(T) compstmt(B) rescues(R) opt_else(E) opt_ensure(Z) END.
    { if (E) { tpl_node *e = NODE(RRESCUE, T.off, NULL, E); e->op = 1; R = tpl_node_append(R, e); }
      A = NODE(RBEGIN, T.off, B ? B : N(RSTMTS, T.off), R); A->c = Z; }
/* def NAME(params) body end: a method of the template (compiler/lower_erb.c def_) */
primary(A) ::= DEF(T) IDENT(N) def_params(P) bodystmt(B) END. { A = NODE(RDEF, T.off, P, B); A->val = tpl_p_tokstr(ctx, N); }
/* a def's or do-block's body: rescue/else/ensure clauses without `begin` make it a begin (Ruby's bodystmt) */
bodystmt(A) ::= compstmt(B). { A = B; }
bodystmt(A) ::= compstmt(B) rescues_1(R) opt_else(E) opt_ensure(Z).
    { if (E) { tpl_node *e = NODE(RRESCUE, R->off, NULL, E); e->op = 1; R = tpl_node_append(R, e); }
      A = NODE(RBEGIN, R->off, B ? B : N(RSTMTS, R->off), R); A->c = Z; }
bodystmt(A) ::= compstmt(B) ENSURE(T) compstmt(Z).
    { A = NODE(RBEGIN, T.off, B ? B : N(RSTMTS, T.off), NULL); A->c = Z ? Z : N(RSTMTS, T.off); }
rescues_1(A) ::= RESCUE(T) exc_list(X) exc_var(V) then compstmt(B). { A = NODE(RRESCUE, T.off, X, B); A->c = V; }
rescues_1(A) ::= rescues_1(L) RESCUE(T) exc_list(X) exc_var(V) then compstmt(B). { tpl_node *r = NODE(RRESCUE, T.off, X, B); r->c = V; A = tpl_node_append(L, r); }
/* def NAME(params) = arg (Ruby 3's endless def; `rescue` after it is the body's): a method of one expression */
arg(A) ::= DEF(T) IDENT(N) def_eparams(P) ASSIGN arg(E). [DEFINED] { A = NODE(RDEF, T.off, P, E); A->val = tpl_p_tokstr(ctx, N); }
arg(A) ::= DEF(T) IDENT(N) def_eparams(P) ASSIGN arg(E) RESCUE_MOD(R) arg(X). [DEFINED]
    { A = NODE(RDEF, T.off, P, rescue_mod(ctx, E, R, X)); A->val = tpl_p_tokstr(ctx, N); }
def_eparams(A) ::= . { A = NULL; }
def_eparams(A) ::= LPCALL RPAREN. { A = NULL; }
def_eparams(A) ::= LPCALL fparams(P) opt_comma RPAREN. { A = P; }
def_params(A) ::= TERM. { A = NULL; }
def_params(A) ::= LPCALL RPAREN. { A = NULL; }
def_params(A) ::= LPCALL fparams(P) opt_comma RPAREN. { A = P; }
fparams(A) ::= fparam(P). { A = P; }
fparams(A) ::= fparams(L) COMMA fparam(P). { A = tpl_node_append(L, P); }
fparam(A) ::= IDENT(T). { A = tpl_p_name(ctx, T); }
fparam(A) ::= IDENT(T) ASSIGN arg(E). { A = NODE(KWARG, T.off, E, NULL); A->val = tpl_p_tokstr(ctx, T); }
/* def m(a, *rest, **opts): the rest Array (op 10) and the keywords Hash (op 11; compiler/lower_erb.c def_) */
fparam(A) ::= STAR IDENT(N). { A = tpl_p_name(ctx, N); A->op = 10; }
/* def m(x, &blk): the method's block as a variable (op 9; compiler/lower_erb.c def_) */
fparam(A) ::= BLOCKAMP IDENT(N). { A = tpl_p_name(ctx, N); A->op = 9; }
fparam(A) ::= POW IDENT(N). { A = tpl_p_name(ctx, N); A->op = 11; }
/* def m(*), def m(**), def m(&): anonymous parameters (no name reads them; the block one forwards as g(&)) */
fparam(A) ::= STAR(T). { A = N(NAME, T.off); A->val = tpl_v_str("*", 1); A->op = 10; }
fparam(A) ::= POW(T). { A = N(NAME, T.off); A->val = tpl_v_str("**", 2); A->op = 11; }
fparam(A) ::= BLOCKAMP(T). { A = N(NAME, T.off); A->val = tpl_v_str("&", 1); A->op = 9; }
/* def f(...) / def f(a, ...): argument forwarding, as *(fwdrest), **(fwdkw), & (the anonymous block); a call's (...)
 * passes them on */
fparam(A) ::= DOT3(T).
    { tpl_node *r = N(NAME, T.off), *k = N(NAME, T.off), *b = N(NAME, T.off);
      r->val = tpl_v_str("(fwdrest)", 9); r->op = 10; k->val = tpl_v_str("(fwdkw)", 7); k->op = 11; b->val = tpl_v_str("&", 1); b->op = 9;
      A = tpl_node_append(tpl_node_append(r, k), b); }
fparam(A) ::= LABEL(T). { A = N(KWARG, T.off); A->val = tpl_p_tokstr(ctx, T); A->op = 1; }
fparam(A) ::= LABEL(T) arg(E). { A = NODE(KWARG, T.off, E, NULL); A->val = tpl_p_tokstr(ctx, T); A->op = 1; }
rescues(A) ::= . { A = NULL; }
rescues(A) ::= rescues(L) RESCUE(T) exc_list(X) exc_var(V) then compstmt(B). { tpl_node *r = NODE(RRESCUE, T.off, X, B); r->c = V; A = tpl_node_append(L, r); }
exc_list(A) ::= . { A = NULL; }
exc_list(A) ::= items(L). { A = L; }
exc_var(A) ::= . { A = NULL; }
exc_var(A) ::= ASSOC IDENT(T). { A = tpl_p_name(ctx, T); }
opt_ensure(A) ::= . { A = NULL; }
opt_ensure(A) ::= ENSURE(T) compstmt(B). { A = B ? B : N(RSTMTS, T.off); }
do_cond ::= TERM.
do_cond ::= DO_COND.
do_cond ::= TERM DO_COND.

call(A) ::= IDENT(T) LPCALL RPAREN. { A = method(ctx, NULL, T, NULL, T.off); A->op = 1; }
call(A) ::= IDENT(T) LPCALL call_args(L) opt_comma RPAREN. { A = method(ctx, NULL, T, L, T.off); A->op = 1; }
call(A) ::= CONST(T) LPCALL call_args(L) RPAREN. { A = method(ctx, NULL, T, L, T.off); A->op = 1; }
call(A) ::= primary(R) DOT IDENT(T). { A = method(ctx, R, T, NULL, T.off); }
/* r&.m(args): nil when r is nil (RSAFE: a = r, b = the call on the receiver "(safe)") */
call(A) ::= primary(R) ANDDOT IDENT(T). { A = safe(ctx, R, method(ctx, safe_recv(ctx, T), T, NULL, T.off)); }
call(A) ::= primary(R) ANDDOT IDENT(T) LPCALL RPAREN. { A = safe(ctx, R, method(ctx, safe_recv(ctx, T), T, NULL, T.off)); A->b->op = 1; }
call(A) ::= primary(R) ANDDOT IDENT(T) LPCALL call_args(L) opt_comma RPAREN. { A = safe(ctx, R, method(ctx, safe_recv(ctx, T), T, L, T.off)); A->b->op = 1; }
/* p.(args): p.call(args) */
call(A) ::= primary(R) DOT(T) LPAREN RPAREN. { A = method_s(ctx, R, "call", NULL, T.off); A->op = 1; }
call(A) ::= primary(R) DOT(T) LPAREN call_args(L) opt_comma RPAREN. { A = method_s(ctx, R, "call", L, T.off); A->op = 1; }
call(A) ::= primary(R) DOT IDENT(T) LPCALL RPAREN. { A = method(ctx, R, T, NULL, T.off); A->op = 1; }
call(A) ::= primary(R) DOT IDENT(T) LPCALL call_args(L) opt_comma RPAREN. { A = method(ctx, R, T, L, T.off); A->op = 1; }

opt_comma ::= .
opt_comma ::= COMMA.

block(A) ::= LBRACE_BLK(T) block_params(P) compstmt(B) RBRACE. { A = block_node(ctx, T.off, P, B); }
block(A) ::= DO(T) block_params(P) bodystmt(B) END. { A = block_node(ctx, T.off, P, B); }
block_params(A) ::= . { A = NULL; }
block_params(A) ::= BAR BAR. { A = NULL; }
block_params(A) ::= BAR params(P) BAR. { A = P; }
params(A) ::= param(P). { A = P; }
params(A) ::= params(L) COMMA param(P). { A = tpl_node_append(L, P); }
param(A) ::= IDENT(T). { A = tpl_p_name(ctx, T); }
/* |a, *r|, |a, b = 1|, |a, k:|, |a, k: 1|, |a, **o|, |a, &b|: as a def's (fparam; a default is a primary: `|`
 * ends it); a block of them binds its own parameters (compiler/lower_erb.c block_sub). */
param(A) ::= STAR IDENT(N). { A = tpl_p_name(ctx, N); A->op = 10; }
param(A) ::= STAR(T). { A = N(NAME, T.off); A->val = tpl_v_str("*", 1); A->op = 10; }
param(A) ::= IDENT(T) ASSIGN primary(E). { A = NODE(KWARG, T.off, E, NULL); A->val = tpl_p_tokstr(ctx, T); }
param(A) ::= LABEL(T). { A = N(KWARG, T.off); A->val = tpl_p_tokstr(ctx, T); A->op = 1; }
param(A) ::= LABEL(T) primary(E). { A = NODE(KWARG, T.off, E, NULL); A->val = tpl_p_tokstr(ctx, T); A->op = 1; }
param(A) ::= POW IDENT(N). { A = tpl_p_name(ctx, N); A->op = 11; }
param(A) ::= BLOCKAMP IDENT(N). { A = tpl_p_name(ctx, N); A->op = 9; }
/* |(k, v), acc|: a destructured parameter (a LIST of names) */
param(A) ::= LPAREN(T) params(L) RPAREN. { A = NODE(LIST, T.off, L, NULL); }

call_args(A) ::= call_arg(X). { A = X; }
call_args(A) ::= call_args(L) COMMA call_arg(X). { A = tpl_node_append(L, X); }
call_arg(A) ::= arg(E). { A = arg1(ctx, E); }
call_arg(A) ::= BLOCKARG(T). {
    /* &:name is the block { |it| it.name } */
    A = sym_block(ctx, T);
}
/* &:name.to_proc: the same block (Symbol#to_proc) */
call_arg(A) ::= BLOCKARG(T) DOT IDENT(M). {
    if (M.len != 7 || memcmp(ctx->src + M.off, "to_proc", 7) != 0)
        tpl_pctx_error(ctx, M.off, "unsupported Ruby construct: &:name.%.*s (a Symbol's to_proc is the block)", (int)M.len, ctx->src + M.off);
    A = sym_block(ctx, T);
}
/* &blk, &method(:name), &->(x) { }: the call's block (RBLOCK op 7 holding the expression; compiler/lower_erb.c) */
call_arg(A) ::= BLOCKAMP(T) arg(E). { A = NODE(RBLOCK, T.off, NULL, E); A->op = 7; }
/* g(&): the anonymous block parameter of the def (Ruby 3.1) */
call_arg(A) ::= BLOCKAMP(T). { tpl_node *e = N(NAME, T.off); e->val = tpl_v_str("&", 1); A = NODE(RBLOCK, T.off, NULL, e); A->op = 7; }
/* f(*a) and f(**h): splats at a call (compiler/lower_erb.c args_dyn) */
call_arg(A) ::= STAR(T) arg(E). { A = NODE(STARARG, T.off, E, NULL); }
call_arg(A) ::= DOT3(T).
    { tpl_node *r = N(NAME, T.off), *k = N(NAME, T.off), *b = N(NAME, T.off);
      r->val = tpl_v_str("(fwdrest)", 9); k->val = tpl_v_str("(fwdkw)", 7); b->val = tpl_v_str("&", 1);
      tpl_node *bl = NODE(RBLOCK, T.off, NULL, b); bl->op = 7;
      A = tpl_node_append(tpl_node_append(NODE(STARARG, T.off, r, NULL), NODE(STARKW, T.off, k, NULL)), bl); }
call_arg(A) ::= POW(T) arg(E). { A = NODE(STARKW, T.off, E, NULL); }
call_arg(A) ::= LABEL(T) arg(E). { A = NODE(KWARG, T.off, E, NULL); A->val = tpl_p_tokstr(ctx, T); }
call_arg(A) ::= SLABEL(T) arg(E). { A = NODE(KWARG, T.off, E, NULL); A->val = str_kw(ctx, tpl_erb_sstring(ctx, T), T.off); }
call_arg(A) ::= DLABEL(T) arg(E). { A = NODE(KWARG, T.off, E, NULL); A->val = str_kw(ctx, tpl_erb_dstring(ctx, T), T.off); }
/* `"k" => v` among the arguments: part of a brace-less hash (hash_args) */
call_arg(A) ::= arg(K) ASSOC(T) arg(V). { A = NODE(PAIR, T.off, K, V); }

items(A) ::= arg(E). { A = E; }
items(A) ::= items(L) COMMA arg(E). { A = tpl_node_append(L, E); }
/* [a, *b]: a splat (STARARG; the lowering takes Array(b)'s items; elsewhere a located error) */
items(A) ::= STAR(T) arg(E). [DEFINED] { A = NODE(STARARG, T.off, E, NULL); }
items(A) ::= items(L) COMMA STAR(T) arg(E). [DEFINED] { A = tpl_node_append(L, NODE(STARARG, T.off, E, NULL)); }
assocs(A) ::= assoc(P). { A = P; }
assocs(A) ::= assocs(L) COMMA assoc(P). { A = tpl_node_append(L, P); }
assoc(A) ::= arg(K) ASSOC(T) arg(V). { A = NODE(PAIR, T.off, K, V); }
/* {**h}: h's pairs (dict_lit) */
assoc(A) ::= POW(T) arg(E). { A = NODE(STARKW, T.off, E, NULL); }
assoc(A) ::= LABEL(T) arg(V). { tpl_node *k = konst(ctx, tpl_p_tokstr(ctx, T), T.off); k->val.flags |= TPL_F_SYMBOL; A = NODE(PAIR, T.off, k, V); }
/* {"a b": 1}, {'k': 1}: a Symbol key ({"#{x}": 1}: the String's to_sym) */
assoc(A) ::= SLABEL(T) arg(V). { A = NODE(PAIR, T.off, str_label(ctx, tpl_erb_sstring(ctx, T), T.off), V); }
assoc(A) ::= DLABEL(T) arg(V). { A = NODE(PAIR, T.off, str_label(ctx, tpl_erb_dstring(ctx, T), T.off), V); }

then ::= TERM.
then ::= THEN.
then ::= TERM THEN.
/* an elsif chain is a list, not nesting (as Jinja's elifs: tpl_p_elif) */
elsifs(A) ::= . { A = NULL; }
elsifs(A) ::= elsifs(L) ELSIF(T) expr(C) then compstmt(B). { A = tpl_p_elif(L, NODE(IF, T.off, C, B)); }
opt_else(A) ::= . { A = NULL; }
opt_else(A) ::= ELSE compstmt(B). { A = B ? B : N(RSTMTS, 0); }

opt_expr(A) ::= . { A = NULL; }
opt_expr(A) ::= expr(E). { A = E; }
whens(A) ::= when(W). { A = W; }
whens(A) ::= whens(L) when(W). { A = tpl_node_append(L, W); }
when(A) ::= WHEN(T) items(L) then compstmt(B). { A = NODE(RWHEN, T.off, L, B); }
