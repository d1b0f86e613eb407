/* ERB lowering: the Ruby subset's AST (grammar/erb_parse.y) to the shared bytecode.
 *
 * Ruby semantics become explicit opcodes through tpl_c_emit (JF_RB: only nil and false are
 * falsy, PRINT_RB: to_s, DIV_RB: integer division floors, CONCAT_RB: interpolation) and the
 * *_RB ops (NameError for unknown names, Ruby `[]`, `==`, method calls with blocks).
 * Iteration blocks whose value is not used (`items.each do |i| ... end`, also map/select/
 * times/each_with_index as statements) become the VM's FOR_INIT/FOR_NEXT loops, like a Jinja
 * for; value blocks (map/select/sort_by/sum ...) become block subroutines run by the method
 * (CALL_METHOD_RB yields to them), in the same frame so they see the enclosing locals. */
#include <float.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "compile.h"
#include "../grammar/erb.h"
#include "../runtime/vm.h"
#include "../stdlib/builtins.h"
#include "../stdlib/ruby/ruby.h"

typedef struct erb_loop {
    struct erb_loop *parent;
    bool sub;               /* a block subroutine (next/break return from it) */
    bool try_;              /* a begin body (run as a block by the rescue machinery) */
    bool lambda_;           /* a block subroutine that is a lambda's body (return returns from it) */
    uint32_t top;           /* loop: the FOR_NEXT to continue at */
    uint32_t breaks[64];    /* loop: jumps to patch with the exit */
    int nbreaks;
    uint32_t val_slot;      /* a while/until/loop used as a value: the slot its break's value goes to + 1 */
} erb_loop;

/* A method the template defines (`def`), or one a def's body calls before any def of it was seen:
 * its closure lives in a hidden template-level slot, stored when the def runs (a call before that
 * is Ruby's NoMethodError). The signature is the def's (one per name: a second def must agree). */
typedef struct erb_def {
    tpl_value name;
    uint32_t slot;
    bool sig;               /* a def of it was seen (the fields below hold) */
    bool early;             /* a call was compiled before its def (its arguments were not checked) */
    bool blk_early;         /* a call before its def gave it a block */
    bool blk;               /* it takes a block (yield, block_given? or a &name parameter): the hidden keyword (blk) */
    tpl_value blkname;      /* its &name parameter (len 0: none) */
    int nreq, nopt, nkw;    /* required and optional positional parameters, keyword parameters */
    tpl_value kw[16];
    bool kwreq[16];
    bool rest, kwrest;      /* a *rest parameter (the call passes its Array as the hidden keyword (rest)), a **opts one */
} erb_def;

/* A local variable assigned a Proc literal (`f = lambda { |x| ... }`, `->(x) { }`, `proc { }`, `Proc.new { }`):
 * the block is a subroutine of the frame (it sees and assigns the enclosing locals), the variable holds its
 * entry (runtime: the hidden method (call), stdlib/ruby/ruby.c proc_call). Only calls of it (`f.call`, `f.()`,
 * `f[]`, `f.yield`, `f === x`), `f.arity`, `f.lambda?` and `&f` read it; any other use, or another assignment
 * of the variable, is a compile error naming it. */
typedef struct erb_proc {
    tpl_value name;
    uint32_t scope, slot;
    uint32_t word;          /* the block word (entry | nparams << 24); 0 while its body is lowered */
    int nreq, nopt;
    bool neg;               /* its arity is -(nreq + 1) (proc_value) */
    bool lambda;
    bool multi;             /* assigned more than one Proc: its value tells which (&f refused) */
    bool method;            /* method(:name): a Method (a lambda here; no lambda?) */
    /* a Proc calling itself (fact.(n - 1) in its own block): the calls lowered before its block's word was
     * known, patched after it (the CONST of the slots its calls keep, the block word) */
    bool rec;
    int nsites;
    uint32_t site_const[16], site_word[16];
} erb_proc;

typedef struct erb_defs {
    erb_proc procs[64];
    int nprocs;
    erb_def *v;
    uint32_t n, cap;
    uint32_t *vidx;         /* open addressing over v by name: entry index + 1, 0 empty */
    uint32_t vidx_cap;      /* 0 or a power of two, at least twice n */
    /* block-local names (declared before their block) not assigned yet in the source's order:
     * defined?(w) is nil there, as Ruby's parser decides */
    tpl_value pend[32];
    int npend;
    /* what the statements so far did with each variable (shared receivers, below) */
    struct own_var *ov;
    uint32_t nov, capov;
    uint32_t *ovidx;        /* open addressing over ov by (name, scope): entry index + 1, 0 empty */
    uint32_t ovidx_cap;     /* 0 or a power of two, at least twice nov */
    uint32_t (*links)[2];   /* pairs of ov entries that may hold one object (`x = @y || {}`) */
    bool yaml;              /* `require 'yaml'` ran before (in the source's order): Object#to_yaml exists */
    bool shellwords;        /* `require 'shellwords'` ran before: Shellwords, String#shellescape/shellsplit, Array#shelljoin */
    uint32_t nlinks, caplinks;
    /* (erb_self) locals that may hold an object of self's or the binding's (`x = @h['a']`, a binding
     * local passed to self's method), in the source's order: held_stale once Ruby code may have run
     * after (a method of self, a name that may be one, remembers), which may have changed the object
     * in place where tpl holds its copy: a read then checks the value (held_guard) */
    tpl_value held[32];
    bool held_stale[32];
    int nheld;
    /* the template's locals declared by predeclare_end before the template assigned them (a binding's local,
     * the state key, that a change through an alias writes back into): a read of one reads the state key while
     * the slot is unset, and is Ruby's NameError when the state has no such key (load_bound) */
    tpl_value bound[32];
    int nbound;
    /* the variables (scope, slot) read inside a block body while they held no Proc (compiled before a Proc
     * assignment to them, they may run after it: their generic read would see proc_value's hidden Integer):
     * proc_assign refuses a Proc into one of them; past 128, into any variable declared before */
    uint32_t rdb[128][2];
    int nrdb;
    bool rdb_full;
} erb_defs;

typedef struct erb_low {
    tpl_comp *c;
    erb_loop *loop;
    bool frozen;            /* `# frozen_string_literal: true`: string literals are frozen */
    int in_def;             /* inside a def's body */
    tpl_value def_name;     /* that def's name (__method__) */
    erb_defs *defs;         /* (kept across the top-level statements, with pend) */
    uint32_t scope;         /* the variables' scope: 0 the template's, a def's offset + 1 in its body */
    /* the blocks whose body is being lowered, innermost last: the call and its block (shared receivers) */
    const tpl_node *bcall[32], *bblk[32];
    uint32_t bslot[32];     /* an each loop over a variable's array whose items it may write back: its slot + 1 */
    int nblk;
    const tpl_node *pending_call; /* the call whose block block_sub lowers next */
    tpl_value pre[16];      /* @ivars to declare after a statement's scan (predeclare) */
    int npre;
    tpl_value preloc[16];   /* and the template's locals they are twins of (predeclare) */
    int npreloc;
    uint32_t exc_slot;      /* in a rescue clause's body: the slot of its caught [ok, value, e, class, message] + 1 */
    uint32_t retry_to;      /* in a rescue clause's body: where its begin starts again (retry) + 1 */
    erb_loop *retry_loop;   /* the loop context of that clause (retry inside a block or loop of it is refused) */
    tpl_node *loop_stop;    /* the `loop` call lowered inside its own StopIteration rescue (loop_)
                             * now: not wrapped again */
    bool sub_lambda;        /* the block block_sub lowers next is a lambda's */
    bool proc_storing;      /* storing a Proc variable (store_var allows it) */
    const tpl_node *method_lit; /* the lambda method_ref made of the last method(:name) */
    uint32_t def_blk;       /* in a def that takes a block: the slot of its hidden (blk) + 1 */
    tpl_value def_blkname;  /* that def's &name parameter (len 0: none) */
    uint32_t def_blkslot;   /* its slot */
    uint32_t def_ret;       /* a def whose begin/rescue/ensure has a return: its slot (retv) + 1; (retf) the next */
    int own_lam;            /* own_scan: inside a Proc literal's body (its `return` leaves the Proc, not the def) */
    tpl_value bound_msg;    /* own_site's refusal of a change in place of the binding's object (own_check mode 4) */
    bool site_bound;        /* index_site's check was mode 4 */
    bool bound_store;       /* lowering the stores back after a change that passed mode 4 (a frozen receiver, whose
                             * method raised FrozenError, or freeze of a frozen one): unreachable or no change, so a
                             * binding @ivar's store is dropped (store_var), not refused */
} erb_low;

static bool pend_has(const erb_low *L, tpl_value name)
{
    const erb_defs *d = L->defs;
    for (int i = 0; i < d->npend; i++)
        if (d->pend[i].len == name.len && memcmp(d->pend[i].u.s, name.u.s, name.len) == 0) return true;
    return false;
}

static void pend_set(erb_low *L, tpl_value name, bool on)
{
    erb_defs *d = L->defs;
    for (int i = 0; i < d->npend; i++)
        if (d->pend[i].len == name.len && memcmp(d->pend[i].u.s, name.u.s, name.len) == 0) {
            if (!on) d->pend[i] = d->pend[--d->npend];
            return;
        }
    if (on && d->npend < 32) d->pend[d->npend++] = name;
}

static void expr(erb_low *L, tpl_node *n);
static void stmt(erb_low *L, tpl_node *n);
static void body(erb_low *L, tpl_node *n);
static void value_body(erb_low *L, tpl_node *n);
static void begin_(erb_low *L, tpl_node *n, bool used);
static void exc_push(erb_low *L, uint32_t off);
static void reraise(erb_low *L, uint32_t off);
static bool ruby_kernel_method(tpl_value name);
static void defined_(erb_low *L, tpl_node *e, int depth);
static void defs_scan(erb_low *L, tpl_node *n, int depth);
struct erb_def;
static struct erb_def *def_find(erb_low *L, tpl_value name, bool create);
static void def_call(erb_low *L, struct erb_def *d, tpl_node *n, tpl_node *argl, bool bare, bool used);
static void def_(erb_low *L, tpl_node *n, bool used);
static void fail_msg(erb_low *L, uint32_t off, int delta, const char *fmt, const tpl_value *name);
static bool self_method(tpl_value name);
struct own_group;
static bool ov_owned(erb_low *L, const tpl_node *r, bool items, bool *twin, struct own_group *g);
static const tpl_node *item_root(const tpl_node *r);

#define C (L->c)
#define S(lit) tpl_v_str(lit, sizeof(lit) - 1)
#define KW_MISSING_MAX 8   /* (a def's required keywords kw_missing names, 2^n leaves: 256 at most) */

/* From a call's first **hash on, in the call's order: each **h's pairs and each keyword (its name a
 * Symbol when sym) merged into the keyword Hash by ARGS_DSTAR, a later value replacing an earlier one's
 * in its place (Ruby's keyword Hash, as a literal's {**a, b: 1, **c}). */
static void dstar_args(erb_low *L, tpl_node *dstar, bool sym)
{
    for (tpl_node *x = dstar; x && !tpl_c_failed(C); x = x->next) {
        if (x->kind == TPL_N_STARKW) {
            expr(L, x->a);
        } else if (x->kind == TPL_N_KWARG) {
            tpl_value kn = x->val;
            if (sym) kn.flags |= TPL_F_SYMBOL;
            tpl_c_emit(C, TPL_OP_CONST, tpl_c_const(C, kn), 1);
            expr(L, x->a);
            tpl_c_emit(C, TPL_OP_BUILD_MAP, 1, -1);
        } else {
            continue;
        }
        tpl_c_at(C, x->off);
        tpl_c_emit(C, TPL_OP_ARGS_DSTAR, 0, -1);
    }
}

static bool name_is(tpl_value v, const char *s) { return v.len == strlen(s) && memcmp(v.u.s, s, v.len) == 0; }

/* An index assignment's target: `r[k]` (GETITEM) or `r[i, n]` / `r[range]` with its indexes as call
 * arguments (an RMETHOD "[]" with a receiver: grammar/erb_parse.y target()). */
static bool is_index(const tpl_node *n)
{
    return n && (n->kind == TPL_N_GETITEM || (n->kind == TPL_N_RMETHOD && n->a && name_is(n->val, "[]")));
}

static void load_local(erb_low *L, uint32_t slot, tpl_value name)
{
    tpl_c_emit(C, TPL_OP_LOAD_SLOT, slot, 1);
    tpl_c_word(C, tpl_c_name(C, name));
}

/* Stores the top of the stack into variable `name` (declared in the innermost scope when new). */
static erb_proc *proc_named(erb_low *L, tpl_value name);
static void proc_forget(erb_low *L, tpl_value name);

static void store_var(erb_low *L, tpl_value name, uint32_t off)
{
    uint32_t slot;
    if (L->def_blkname.len && name.len == L->def_blkname.len && memcmp(name.u.s, L->def_blkname.u.s, name.len) == 0 &&
        tpl_c_lookup(C, name, &slot) && slot == L->def_blkslot) {
        tpl_c_error(C, off, "unsupported Ruby construct: the block parameter `%.*s' assigned", (int)name.len, name.u.s);
        return;
    }
    if (!L->proc_storing && proc_named(L, name)) {
        tpl_c_error(C, off, "unsupported Ruby construct: `%.*s' assigned again after a Proc (a variable holding a Proc is assigned once)",
                    (int)name.len, name.u.s);
        return;
    }
    if (L->defs->npend) pend_set(L, name, false);
    if (L->defs->nbound && !L->nblk && !L->in_def) {
        /* the template assigns a binding's local predeclare_end declared (outside a block): a local of Ruby's
         * parser from here on */
        for (int i = 0; i < L->defs->nbound; i++)
            if (L->defs->bound[i].len == name.len && memcmp(L->defs->bound[i].u.s, name.u.s, name.len) == 0)
                L->defs->bound[i--] = L->defs->bound[--L->defs->nbound];
    }
    if (tpl_c_options(C)->erb_self && name.len > 1 && name.u.s[0] == '@' && L->bound_store) {
        tpl_c_emit(C, TPL_OP_POP, 0, -1);
        return;
    }
    if (tpl_c_options(C)->erb_self && name.len > 1 && name.u.s[0] == '@') {
        /* a binding's @ivar is self's: Ruby's ERB sets it for self's methods and the caller, tpl has no way to */
        tpl_c_error(C, off, "unsupported Ruby construct: `%.*s' assigned: an instance variable of the binding's self, which "
                    "Ruby's ERB sets for self's methods and the caller too; tpl would set its own copy", (int)name.len, name.u.s);
        return;
    }
    if (L->in_def && name.len > 1 && name.u.s[0] == '@') { /* a def sets the template's @x */
        if (!tpl_c_lookup_root(C, name, &slot)) slot = tpl_c_declare_root(C, name);
        tpl_c_at(C, off);
        tpl_c_emit(C, TPL_OP_STORE_ROOT, slot, -1);
        return;
    }
    /* an @ivar is the template's wherever it is set (a block's scope ends, the ivar stays) */
    if (!tpl_c_lookup(C, name, &slot))
        slot = name.len > 1 && name.u.s[0] == '@' ? tpl_c_declare_root(C, name) : tpl_c_declare(C, name);
    tpl_c_at(C, off);
    tpl_c_emit(C, TPL_OP_STORE_SLOT, slot, -1);
}

/* tpl's refusal of what reads the machine (File.exist?, ENV, system, `cmd`): the render is a function of its state */
#define RB_NO_IO "(a tpl template reads no files, environment or processes: pass what it needs in the state)"

static const char *const known_classes[] = { "ERB::Util", "Array", "Hash", "String", "Integer", "Float", "Numeric", "NilClass",
    "TrueClass", "FalseClass", "Symbol", "Range", "Regexp", "Object", "BasicObject", "Comparable", "Enumerable", "File", "JSON",
    /* exception classes (rescue, raise) */
    "Exception", "StandardError", "RuntimeError", "ArgumentError", "TypeError", "NameError", "NoMethodError",
    "ZeroDivisionError", "KeyError", "IndexError", "RangeError", "FrozenError", "StopIteration", "FloatDomainError",
    "LocalJumpError", "RegexpError", "EncodingError", "IOError", "JSON::JSONError", "JSON::GeneratorError",
    "JSON::NestingError", "JSON::ParserError", "Gem::Version", "Enumerator", "Class", "Module", "Rational", "Complex", "Math", "Kernel", "Proc", "Math::DomainError", NULL };

/* ------------------------------------------------------------------ held copies (erb_self) */

static int held_find(const erb_low *L, tpl_value name)
{
    for (int i = 0; i < L->defs->nheld; i++)
        if (L->defs->held[i].len == name.len && memcmp(L->defs->held[i].u.s, name.u.s, name.len) == 0) return i;
    return -1;
}

static void held_add(erb_low *L, tpl_value name, bool stale)
{
    int i = held_find(L, name);
    if (i < 0 && L->defs->nheld < 32) { i = L->defs->nheld++; L->defs->held[i] = name; L->defs->held_stale[i] = false; }
    if (i >= 0) L->defs->held_stale[i] = L->defs->held_stale[i] || stale;
}

static void held_drop(erb_low *L, tpl_value name)
{
    int i = held_find(L, name);
    if (i >= 0) { L->defs->held[i] = L->defs->held[L->defs->nheld - 1]; L->defs->held_stale[i] = L->defs->held_stale[L->defs->nheld - 1]; L->defs->nheld--; }
}

/* Ruby code may run here (erb_self): the objects the held locals hold may have changed in place */
static void held_ruby_ran(erb_low *L)
{
    for (int i = 0; i < L->defs->nheld; i++) L->defs->held_stale[i] = true;
}

/* Methods whose value may be their receiver, a part of it, or a collection holding its parts (Ruby
 * returns those objects, not copies): `@h.fetch(k)`, `@a.first`, `@h.values`, `@a.dup` (its items),
 * `@s.to_s`, `@a.select { }`, `@a.map(&:itself)`. */
static bool held_method(tpl_value m)
{
    static const char *const names[] = {
        "fetch", "dig", "first", "last", "at", "values_at", "values", "fetch_values", "min", "max", "minmax", "min_by",
        "max_by", "find", "detect", "sample", "to_a", "to_h", "to_ary", "to_hash", "to_s", "to_str", "entries", "itself",
        "tap", "then", "yield_self", "freeze", "dup", "clone", "each", "each_with_index", "each_pair", "each_value",
        "reverse_each", "select", "filter", "reject", "find_all", "filter_map", "grep", "grep_v", "partition", "group_by",
        "chunk_while", "slice_when", "each_slice", "each_cons", "sort", "sort_by", "reverse", "rotate", "shuffle",
        "compact", "flatten", "uniq", "take", "drop", "take_while", "drop_while", "slice", "zip", "product", "map",
        "collect", "flat_map", "collect_concat", "inject", "reduce", "sum", "merge", "except", "compare_by_identity",
        "lazy", "force", "cycle", "to_enum", "each_entry", "assoc", "rassoc", "sort!", "select!", "reject!", "uniq!",
        "compact!", "flatten!", "reverse!", "shuffle!", "rotate!", "map!", "collect!", "filter!", "keep_if",
        "delete_if", "merge!", "update", "transform_keys", "transform_keys!", "delete", "shift", "pop", NULL };
    for (int i = 0; names[i]; i++)
        if (name_is(m, names[i])) return true;
    return false;
}

/* Whether v's value may be an object of self's or the binding's, or hold one (`@h`, `@h['a']`,
 * `@rows[0][:x]`, `q`, `q[1]`, and what held_method answers of them, `@h['a'] || d`, `c ? @h['a'] : d`,
 * `(@h['a'])`, `@h['a']&.itself`): the local it is assigned to is then held. */
static bool held_rhs_(const erb_low *L, const tpl_node *v, int depth)
{
    for (; v && depth < 64; depth++) {
        if (v->kind == TPL_N_GETITEM) v = v->a;
        else if (v->kind == TPL_N_RMETHOD && v->a && held_method(v->val)) v = v->a;
        else if (v->kind == TPL_N_RSAFE && v->b && v->b->kind == TPL_N_RMETHOD && held_method(v->b->val)) v = v->a;
        else if (v->kind == TPL_N_RSTMTS && v->b) v = v->b->tail ? v->b->tail : v->b;
        else if (v->kind == TPL_N_OR || v->kind == TPL_N_AND) return held_rhs_(L, v->a, depth + 1) || held_rhs_(L, v->b, depth + 1);
        else if (v->kind == TPL_N_CONDEXPR) return held_rhs_(L, v->b, depth + 1) || held_rhs_(L, v->c, depth + 1);
        else if (v->kind == TPL_N_LIST || v->kind == TPL_N_TUPLE || v->kind == TPL_N_DICT) {
            /* [@h['a'], x], {k: @h['a']}, [*@a]: a new Array or Hash holding the objects */
            int k = 0;
            for (const tpl_node *x = v->a; x && k < 256; x = x->next, k++) {
                const tpl_node *e = x->kind == TPL_N_PAIR ? x->b : x->kind == TPL_N_STARARG || x->kind == TPL_N_ARG ? x->a : x;
                if (held_rhs_(L, e, depth + 1)) return true;
            }
            return false;
        } else break;
    }
    if (!v || depth >= 64) return !!v;
    if (v->kind == TPL_N_RIVAR) return true;
    uint32_t slot;
    if (v->kind == TPL_N_NAME && v->val.len && v->val.u.s[0] == '@') return true;
    if (v->kind == TPL_N_NAME && !name_is(v->val, "(self)")) return !tpl_c_lookup(C, v->val, &slot) || held_find(L, v->val) >= 0;
    return false;
}

static bool held_rhs(const erb_low *L, const tpl_node *v) { return held_rhs_(L, v, 0); }

/* "(held)name": the hidden root slot of held local name's (host_runs) at its assignment; len 0 after a
 * compile error */
static tpl_value held_slot_name(erb_low *L, tpl_value name, uint32_t off)
{
    char *b = tpl_arena_alloc(tpl_c_arena(C), name.len + 7);
    if (!b) { tpl_c_nomem(C, off); return tpl_v_str("", 0); }
    memcpy(b, "(held)", 6);
    memcpy(b + 6, name.u.s, name.len);
    b[name.len + 6] = 0;
    return tpl_v_str(b, name.len + 6);
}

/* An assignment `name = v` lowered (erb_self): name holds self's or the binding's object when v is one */
static void held_set(erb_low *L, const tpl_node *n)
{
    if (!tpl_c_options(C)->erb_self || L->in_def || !n || n->kind != TPL_N_SET || !n->a || n->a->kind != TPL_N_NAME || n->op ||
        n->a->val.len == 0 || n->a->val.u.s[0] == '@')
        return;
    bool h = held_rhs(L, n->b);
    held_drop(L, n->a->val);
    if (!h) return;
    held_add(L, n->a->val, false);
    /* the count of host code runs now, in the hidden root slot "(held)name": a read finds whether Ruby
     * code ran since (a bare name may be the binding's local or a method of self: known when it runs) */
    uint32_t slot;
    tpl_value hn = held_slot_name(L, n->a->val, n->off);
    if (!hn.len) return;
    if (!tpl_c_lookup_root(C, hn, &slot)) slot = tpl_c_declare_root(C, hn);
    tpl_c_at(C, n->off);
    tpl_c_emit(C, TPL_OP_CALL_NAME, tpl_c_name(C, S("(host_runs)")), 1);
    tpl_c_word(C, (uint32_t)TPL_B_RKERNEL_host_runs);
    tpl_c_word(C, TPL_ARGW(0, 0, TPL_NO_KW));
    tpl_c_emit(C, TPL_OP_STORE_ROOT, slot, -1);
}

/* After the value of a read of name is pushed: when name may hold an object Ruby code ran after, a
 * String, Array or Hash there is tpl's refusal (Ruby's ERB reads the object as that code left it) */
static void held_guard(erb_low *L, tpl_value name, uint32_t off)
{
    int i = held_find(L, name);
    if (i < 0 || !L->defs->held_stale[i]) return;
    tpl_c_emit(C, TPL_OP_CONST, tpl_c_const(C, name), 1);
    /* since: the (host_runs) at its assignment, when it had one (unset: the state's "(held)name", none) */
    uint32_t slot;
    tpl_value hn = held_slot_name(L, name, off);
    if (!hn.len) return;
    if (tpl_c_lookup_root(C, hn, &slot)) {
        tpl_c_emit(C, TPL_OP_LOAD_ROOT, slot, 1);
        tpl_c_word(C, tpl_c_name(C, hn));
    } else {
        tpl_c_emit(C, TPL_OP_NONE, 0, 1);
    }
    tpl_c_at(C, off);
    tpl_c_emit(C, TPL_OP_CALL_NAME, tpl_c_name(C, S("(held)")), -2);
    tpl_c_word(C, (uint32_t)TPL_B_RKERNEL_held);
    tpl_c_word(C, TPL_ARGW(3, 0, TPL_NO_KW));
}

/* local_variables with a binding's self (Tpl::ERB#result): Ruby's answer is ERB's _erbout and the
 * template's locals (all its top-level assignments, also those after the call, as Ruby's parser
 * sees them), then the binding's; tpl lowers a template a statement at a time: a located refusal
 * when it runs, not another list. */
static bool local_variables_refused(erb_low *L, tpl_value name, uint32_t off)
{
    if (!tpl_c_options(C)->erb_self || !name_is(name, "local_variables")) return false;
    const char *msg = "unsupported Ruby construct: local_variables with a binding (Ruby's list holds ERB's _erbout and "
                      "every local the template assigns, also after this point, which tpl does not know here)";
    tpl_c_at(C, off);
    tpl_c_emit(C, TPL_OP_FAIL, tpl_c_const(C, tpl_v_str(msg, strlen(msg))), 1);
    return true;
}

/* ------------------------------------------------------------------ blocks */

/* Block-local variables: a local first assigned inside a block (not before it, not a block parameter)
 * is new in each call of the block in Ruby, and gone after it. Unless the state has that key (then
 * it is a local of the binding, the outer variable): its slot is declared in the enclosing scope and
 * UNSET_SLOT_RB clears it at the start of every iteration and after the block. */
typedef struct erb_blocals {
    uint32_t slot[32];
    tpl_value name[32];
    int n;
} erb_blocals;

static bool param_named(const tpl_node *params, tpl_value name)
{
    for (const tpl_node *p = params; p; p = p->next) {
        if (p->kind == TPL_N_LIST) { if (param_named(p->a, name)) return true; continue; }
        if (p->val.len == name.len && memcmp(p->val.u.s, name.u.s, name.len) == 0) return true;
    }
    return false;
}

static const tpl_node *shovel_root(const tpl_node *n);
static void index_store(erb_low *L, tpl_node *g, uint32_t off, bool assign);
static bool changes_receiver(const tpl_node *n);
static void own_receiver(erb_low *L, tpl_node *r, uint32_t off);

static void blocal_add_in(erb_low *L, erb_blocals *bl, const tpl_node *const *ps, int nps, tpl_value name)
{
    uint32_t slot;
    if (name.len == 0 || name.u.s[0] == '@' || bl->n >= 32) return;
    for (int i = 0; i < nps; i++)
        if (param_named(ps[i], name)) return;
    bool known = tpl_c_lookup(C, name, &slot);
    /* a name an earlier block declared is still no local of the enclosing scope (pending): block-local again */
    if (known && !(L->defs->npend && pend_has(L, name))) return;
    for (int i = 0; i < bl->n; i++)
        if (bl->name[i].len == name.len && memcmp(bl->name[i].u.s, name.u.s, name.len) == 0) return;
    /* (at the template's level, in its outermost scope: when the state has the name, it is the binding's
     * local, which a block inside another block assigns for all that follows, not for the outer block) */
    bl->slot[bl->n] = known ? slot : L->in_def ? tpl_c_declare(C, name) : tpl_c_declare_root(C, name);
    bl->name[bl->n++] = name;
}

static void blocal_add(erb_low *L, erb_blocals *bl, const tpl_node *params, tpl_value name)
{
    blocal_add_in(L, bl, &params, 1, name);
}

/* The names a block's body assigns (ps: the parameters of that block and of the blocks on the way in,
 * which are no such names). At the template's level a block nested in it counts too: a name it assigns
 * is the outer block's as well when the state has it (the binding's local: the outer block's reads
 * before the inner block see what the inner block stored in an earlier turn), and block-local to
 * the inner block when not (the outer block's start clears it as the inner block's does). */
static void blocal_scan_in(erb_low *L, erb_blocals *bl, const tpl_node **ps, int nps, const tpl_node *n, int depth)
{
    for (; n && depth < 200; n = n->next) {
        if (n->kind == TPL_N_RDEF) continue;   /* a def has its own locals */
        if (n->kind == TPL_N_RBLOCK) {
            if (!L->in_def && nps < 16) {
                ps[nps] = n->a;
                blocal_scan_in(L, bl, ps, nps + 1, n->b, depth + 1);
            }
            continue;
        }
        if (n->kind == TPL_N_SET && n->a && n->a->kind == TPL_N_NAME) blocal_add_in(L, bl, ps, nps, n->a->val);
        if (n->kind == TPL_N_SET && is_index(n->a)) { /* h[k] = v stores h back */
            const tpl_node *r = n->a->a;
            while (r->kind == TPL_N_GETITEM) r = r->a;
            if (r->kind == TPL_N_NAME) blocal_add_in(L, bl, ps, nps, r->val);
        }
        if (n->kind == TPL_N_RMETHOD) {
            const tpl_node *r = shovel_root(n);
            if (r && r->kind == TPL_N_NAME) blocal_add_in(L, bl, ps, nps, r->val);
            if (changes_receiver(n) && n->a->kind == TPL_N_NAME) blocal_add_in(L, bl, ps, nps, n->a->val);
            if (changes_receiver(n) && n->a->kind == TPL_N_GETITEM) { /* h[k].strip! stores h back */
                const tpl_node *r = n->a;
                while (r->kind == TPL_N_GETITEM) r = r->a;
                if (r->kind == TPL_N_NAME) blocal_add_in(L, bl, ps, nps, r->val);
            }
        }
        blocal_scan_in(L, bl, ps, nps, n->a, depth + 1);
        blocal_scan_in(L, bl, ps, nps, n->b, depth + 1);
        blocal_scan_in(L, bl, ps, nps, n->c, depth + 1);
        blocal_scan_in(L, bl, ps, nps, tpl_node_d(n), depth + 1);
        blocal_scan_in(L, bl, ps, nps, tpl_node_e(n), depth + 1);
    }
}

static void blocal_scan(erb_low *L, erb_blocals *bl, const tpl_node *params, const tpl_node *n, int depth)
{
    const tpl_node *ps[17];
    ps[0] = params;
    blocal_scan_in(L, bl, ps, 1, n, depth);
}

static void blocal_unset(erb_low *L, const erb_blocals *bl)
{
    for (int i = 0; i < bl->n; i++) {
        pend_set(L, bl->name[i], true);   /* (at the block's start and after it) */
        tpl_c_emit(C, TPL_OP_UNSET_SLOT_RB, bl->slot[i], 0);
        tpl_c_word(C, tpl_c_name(C, bl->name[i]));
    }
}

/* Stores the value on the stack into block parameter p: a name (declared in the innermost scope) or
 * a destructured `(a, b)` (the value's items, nil-padded, as Ruby's proc binding). */
static void store_param(erb_low *L, tpl_node *p, int depth)
{
    if (p->kind == TPL_N_LIST) {
        tpl_node *ps[64];
        int k = 0;
        for (tpl_node *q = p->a; q && k < 64; q = q->next) ps[k++] = q;
        if (depth > 32 || k == 0) { tpl_c_error(C, p->off, "unsupported block parameters"); return; }
        tpl_c_at(C, p->off);
        int lead = 0, rest = 0, post = 0;
        for (int i = 0; i < k; i++) {
            if (ps[i]->kind == TPL_N_NAME && ps[i]->op == 10) rest++;
            else if (rest) post++;
            else lead++;
        }
        if (rest) {
            /* (a, *b, c): the value's items (an Array's, else the value alone) bound as a proc's |a, *b, c|
             * binds one Array argument (bind_block: the rest an Array of what the others leave) */
            char d[64];
            int dl = snprintf(d, sizeof d, "%d 0 1 %d 0 0 0", lead, post);
            char *keep = tpl_arena_alloc(tpl_c_arena(C), (size_t)dl + 1);
            if (!keep) { tpl_c_nomem(C, p->off); return; }
            memcpy(keep, d, (size_t)dl + 1);
            tpl_c_emit(C, TPL_OP_BUILD_LIST, 1, 0);
            tpl_c_emit(C, TPL_OP_NONE, 0, 1);
            tpl_c_emit(C, TPL_OP_CONST, tpl_c_const(C, tpl_v_str(keep, (size_t)dl)), 1);
            tpl_c_emit(C, TPL_OP_CALL_METHOD_RB, tpl_c_name(C, S("(bind)")), -2);
            tpl_c_word(C, TPL_ARGW(2, 0, TPL_NO_KW));
            tpl_c_word(C, 0);
        }
        tpl_c_emit(C, TPL_OP_UNPACK_RB, (uint32_t)k, k - 1);
        for (int i = k - 1; i >= 0; i--) store_param(L, ps[i], depth + 1);
        return;
    }
    uint32_t slot = tpl_c_declare(C, p->val);
    tpl_c_at(C, p->off);
    tpl_c_emit(C, TPL_OP_STORE_SLOT, slot, -1);
}

/* Binds the block parameters from the value(s) on the stack: `count` values pushed. */
static void bind_params(erb_low *L, tpl_node *params, int pushed)
{
    tpl_node *ps[64];
    int np = 0;
    for (tpl_node *p = params; p && np < 64; p = p->next) ps[np++] = p;
    if (pushed == 1 && np >= 2) {
        tpl_c_emit(C, TPL_OP_UNPACK_RB, (uint32_t)np, np - 1);
        pushed = np;
    }
    /* pushed values: first..last; drop extras, store last parameter first */
    for (int i = pushed - 1; i >= 0; i--) {
        if (i >= np) { tpl_c_emit(C, TPL_OP_POP, 0, -1); continue; }
        store_param(L, ps[i], 0);
    }
}

static int count_params(tpl_node *p)
{
    int n = 0;
    for (; p; p = p->next) n++;
    return n;
}

/* Emits a block subroutine (jumped over); returns its CALL_METHOD_RB block word. */
static void blk_push(erb_low *L, const tpl_node *call, const tpl_node *blk, uint32_t wbslot)
{
    if (L->nblk < 32) { L->bcall[L->nblk] = call; L->bblk[L->nblk] = blk; L->bslot[L->nblk] = wbslot; }
    L->nblk++;
}

static void blk_pop(erb_low *L) { L->nblk--; }

/* A destructured block parameter's list tpl binds (store_param): names, lists of them and at most one *rest
 * name with a name or list beside it (`(a, *b)`; `(*b)` alone, which splats an Array as bind_block does not, is
 * refused). */
static bool dlist_simple(const tpl_node *p)
{
    int rest = 0, other = 0;
    for (; p; p = p->next) {
        if (p->kind == TPL_N_LIST) { if (!dlist_simple(p->a)) return false; other++; continue; }
        if (p->kind == TPL_N_NAME && p->op == 10 && p->val.len) { rest++; continue; }
        if (p->kind != TPL_N_NAME || p->op) return false;
        other++;
    }
    return rest == 0 || (rest == 1 && other > 0);
}

/* Block parameters tpl binds as they come (names and destructured lists of names, a list's *rest too): no
 * *rest, default, keyword, **opts or &blk one, which make the block bind its own (block_sub's descriptor). */
static bool params_simple(const tpl_node *p)
{
    for (; p; p = p->next) {
        if (p->kind == TPL_N_LIST) { if (!dlist_simple(p->a)) return false; continue; }
        if (p->kind != TPL_N_NAME || p->op) return false;
    }
    return true;
}

/* A Proc's or block's own binding (stdlib/ruby/ruby.c bind_block): the descriptor of params, "lead opt rest
 * post lambda kwrest blk" then each keyword's name (`!` after a required one), in the order Ruby allows
 * (else a located syntax error); *count the values it binds, *nreq / *nopt its arity's required parameters
 * and optional ones (a *rest counting as one), *neg whether Proc#arity is -(nreq + 1) (proc.c rb_proc_arity:
 * a lambda's when its most arguments (unlimited with *rest; keywords or **opts one more) are not its least,
 * a proc's with *rest only). Returns the descriptor's constant, UINT32_MAX on an error. */
static uint32_t bind_desc(erb_low *L, const tpl_node *params, bool lam, int *count, int *nreq, int *nopt, bool *neg)
{
    int lead = 0, opt = 0, rest = 0, post = 0, kwrest = 0, blk = 0, nkw = 0, kwreq = 0, stage = 0;
    char names[1600];
    size_t nl = 0;
    for (const tpl_node *p = params; p; p = p->next) {
        int st;   /* 0 lead, 1 opt, 2 rest, 3 post, 4 keyword, 5 **, 6 & */
        if (p->kind == TPL_N_LIST) {
            if (!dlist_simple(p->a)) { tpl_c_error(C, p->off, "unsupported Ruby construct: a default, keyword or lone *rest parameter inside a destructured block parameter"); return UINT32_MAX; }
            st = stage <= 0 ? 0 : 3;
        } else if (p->kind == TPL_N_KWARG) st = p->op ? 4 : 1;
        else if (p->op == 10) st = 2;
        else if (p->op == 11) st = 5;
        else if (p->op == 9) st = 6;
        else st = stage <= 0 ? 0 : 3;
        if (st == 1 && stage > 1) st = -1;
        if (st == 3 && stage > 3) st = -1;
        if (st == 2 && stage > 1) st = -1;
        if (st >= 0 && st < stage && !(st == 4 && stage == 4)) st = -1;
        if (st < 0) { tpl_c_error(C, p->off, "syntax error, unexpected parameter order in a block's parameters"); return UINT32_MAX; }
        if (st != 4 && st == stage && (st == 2 || st == 5 || st == 6)) { tpl_c_error(C, p->off, "syntax error, unexpected parameter order in a block's parameters"); return UINT32_MAX; }
        stage = st;
        switch (st) {
        case 0: lead++; break;
        case 1: opt++; break;
        case 2: rest++; break;
        case 3: post++; break;
        case 4:
            if (p->val.len == 0 || p->val.len > 64 || nl + p->val.len + 3 > sizeof names || memchr(p->val.u.s, ' ', p->val.len) || memchr(p->val.u.s, '!', p->val.len)) {
                tpl_c_error(C, p->off, "unsupported Ruby construct: this keyword parameter of a block");
                return UINT32_MAX;
            }
            names[nl++] = ' ';
            memcpy(names + nl, p->val.u.s, p->val.len);
            nl += p->val.len;
            if (!p->a) { names[nl++] = '!'; kwreq++; }
            nkw++;
            break;
        case 5: kwrest++; break;
        default: blk++; break;
        }
    }
    if (lead + opt + rest + post + nkw + kwrest + blk > 64) { tpl_c_error(C, params ? params->off : 0, "too many block parameters"); return UINT32_MAX; }
    char d[1700];
    int k = snprintf(d, sizeof d, "%d %d %d %d %d %d %d%.*s", lead, opt, rest, post, lam ? 1 : 0, kwrest, blk, (int)nl, names);
    *count = lead + opt + rest + post + nkw + kwrest + blk;
    *nreq = lead + post + (kwreq ? 1 : 0);
    *nopt = opt + rest;
    *neg = lam ? rest || opt || ((nkw || kwrest) && !kwreq) : rest;
    char *keep = tpl_arena_alloc(tpl_c_arena(C), (size_t)k + 1);
    if (!keep) { tpl_c_nomem(C, params ? params->off : 0); return UINT32_MAX; }
    memcpy(keep, d, (size_t)k + 1);
    return tpl_c_const(C, tpl_v_str(keep, (size_t)k));
}

/* A proc's parameters binding its own that do not splat one Array argument (bind_block: no required
 * parameter, at most one optional one, keywords or not; or |a, &b|): Ruby's map over an Enumerator yielding two
 * values gives them such a block as two values where tpl's gives one pair. */
static bool raw_nosplat(const tpl_node *p)
{
    int req = 0, opt = 0, kw = 0, other = 0, seen_rest = 0;
    for (; p; p = p->next) {
        if (p->kind == TPL_N_KWARG) { if (p->op) kw++; else opt++; }
        else if (p->kind == TPL_N_NAME && p->op == 10) { seen_rest = 1; other++; }
        else if (p->kind == TPL_N_NAME && p->op == 11) kw++;
        else if (p->kind == TPL_N_NAME && p->op == 9) ;
        else req++;
    }
    if (req == 1 && !opt && !kw && !other) return true;   /* |a, &b| */
    (void)seen_rest;
    return req == 0 && opt <= 1;
}

/* Whether a lambda's parameters are ones the VM binds (names, then defaults): else its block binds them. */
static bool lambda_positional(const tpl_node *p)
{
    bool opt = false;
    for (; p; p = p->next) {
        if (p->kind == TPL_N_KWARG && !p->op) { opt = true; continue; }
        if (p->kind != TPL_N_NAME || p->op || opt) return false;
    }
    return true;
}

/* A lambda's parameter tpl binds as a positional one: refuses (located, naming it) *rest, **opts, &blk and
 * keyword parameters (tpl's blocks take positional parameters and defaults only); false: refused. */
static bool params_plain(erb_low *L, const tpl_node *p)
{
    if (p->kind == TPL_N_NAME && p->op == 10) tpl_c_error(C, p->off, "unsupported Ruby construct: a *rest parameter of a lambda or block");
    else if (p->kind == TPL_N_NAME && p->op == 11) tpl_c_error(C, p->off, "unsupported Ruby construct: a **opts parameter of a lambda or block");
    else if (p->kind == TPL_N_NAME && p->op == 9) tpl_c_error(C, p->off, "unsupported Ruby construct: a &block parameter of a lambda or block");
    else if (p->kind == TPL_N_KWARG && p->op) tpl_c_error(C, p->off, "unsupported Ruby construct: keyword parameters of a lambda");
    else return true;
    return false;
}

/* Whether the code n (a loop's or block's body: it runs again after itself) may run Ruby code (erb_self):
 * a receiver-less call of no builtin or template method, remembers, or a name that is no local here
 * (not a parameter in params or of a block inside: a method of self); then the held locals are stale
 * from the body's start (a read in it comes after that code on the next iteration). */
static bool held_body_ruby(erb_low *L, const tpl_node *n, const tpl_node *const *params, int np, int depth)
{
    for (; n && depth < 200; n = n->next) {
        uint32_t slot;
        if (n->kind == TPL_N_RDEF) continue;
        if (n->kind == TPL_N_RMETHOD && !n->a && (tpl_builtin_find(TPL_BK_RKERNEL, n->val.u.s, n->val.len) < 0 ||
                                                  name_is(n->val, "remembers") || name_is(n->val, "remembers?")) &&
            !def_find(L, n->val, false))
            return true;
        if (n->kind == TPL_N_NAME && n->val.len && n->val.u.s[0] != '@' && n->val.u.s[0] != '$' && n->val.u.s[0] != '(' &&
            !tpl_c_lookup(C, n->val, &slot) && !def_find(L, n->val, false)) {
            bool par = false;
            for (int i = 0; i < np && !par; i++) par = param_named(params[i], n->val);
            if (!par) return true;
        }
        const tpl_node *ps[16];
        int k = np < 15 ? np : 15;
        for (int i = 0; i < k; i++) ps[i] = params[i];
        if (n->kind == TPL_N_RBLOCK && k < 16) ps[k++] = n->a;
        if (n->kind == TPL_N_RFOR && k < 16) ps[k++] = n->c;
        if (held_body_ruby(L, n->a, ps, k, depth + 1) || held_body_ruby(L, n->b, ps, k, depth + 1) ||
            held_body_ruby(L, n->c, ps, k, depth + 1) || held_body_ruby(L, tpl_node_d(n), ps, k, depth + 1) ||
            held_body_ruby(L, tpl_node_e(n), ps, k, depth + 1))
            return true;
    }
    return false;
}

static void held_loop(erb_low *L, const tpl_node *body, const tpl_node *params)
{
    bool fresh = false;
    for (int i = 0; i < L->defs->nheld; i++) fresh = fresh || !L->defs->held_stale[i];
    if (fresh && !L->in_def && held_body_ruby(L, body, &params, params ? 1 : 0, 0)) held_ruby_ran(L);
}

/* The constant of the CONST at own (block_sub): the slots s0..s1 - 1 and the block-local variables of bl below
 * s0, as "s0-s1,a,b" (runtime/vm.c own_slots reads it). */
static bool own_slots(erb_low *L, uint32_t own, uint32_t s0, uint32_t s1, const erb_blocals *bl, uint32_t off)
{
    char buf[32 * 12 + 32];
    size_t len = 0;
    if (s1 > s0) len += (size_t)snprintf(buf, sizeof buf, "%u-%u", s0, s1);
    for (int i = 0; i < bl->n; i++)
        if (bl->slot[i] < s0) len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%u", len ? "," : "", bl->slot[i]);
    char *k = tpl_arena_alloc(tpl_c_arena(C), len + 1);
    if (!k) { tpl_c_nomem(C, off); return false; }
    memcpy(k, buf, len + 1);
    tpl_c_patch(C, own, tpl_c_const(C, tpl_v_str(k, len)));
    return true;
}

static uint32_t block_sub(erb_low *L, tpl_node *blk, erb_blocals *bl)
{
    const tpl_node *bcall = L->pending_call;
    L->pending_call = NULL;
    int np = count_params(blk->a);
    if (np > 64) { tpl_c_error(C, blk->off, "too many block parameters"); return 0; }
    /* *rest, defaults of a block, keywords, **opts, &blk: the block binds its own (TPL_RB_BIND_RAW) */
    bool raw = L->sub_lambda ? !lambda_positional(blk->a) : !params_simple(blk->a);
    uint32_t desc = 0;
    int nbound = np, dreq, dopt;
    bool dneg;
    if (raw && (desc = bind_desc(L, blk->a, L->sub_lambda, &nbound, &dreq, &dopt, &dneg)) == UINT32_MAX) return 0;
    uint32_t s0 = tpl_c_nslots(C);
    blocal_scan(L, bl, blk->a, blk->b, 0);
    held_loop(L, blk->b, blk->a);
    tpl_c_at(C, blk->off);
    uint32_t skip = tpl_c_emit(C, TPL_OP_JUMP, 0, raw ? 2 : np);
    /* the block's own slots (its parameters and locals, its blocks'; its block-local variables): a CONST never
     * run, right before the entry, naming them for a call of the block from inside itself (runtime/vm.c
     * tpl_rb_yield_kw: a Hash's default block indexing its Hash, a block a method yields to recursively) */
    uint32_t own = tpl_c_emit(C, TPL_OP_CONST, 0, 0);
    uint32_t entry = tpl_c_here(C);
    tpl_c_push_scope(C);
    tpl_node *ps[64];
    int k = 0;
    for (tpl_node *p = blk->a; p; p = p->next) ps[k++] = p;
    if (raw) {
        /* the VM pushes the arguments as given and the keywords: args.(bind)(kw, desc) binds them */
        tpl_c_emit(C, TPL_OP_CONST, desc, 1);
        tpl_c_emit(C, TPL_OP_CALL_METHOD_RB, tpl_c_name(C, S("(bind)")), -2);
        tpl_c_word(C, TPL_ARGW(2, 0, TPL_NO_KW));
        tpl_c_word(C, 0);
        tpl_c_emit(C, TPL_OP_UNPACK_RB, (uint32_t)nbound, nbound - 1);
        for (int i = np - 1; i >= 0; i--) {
            if (ps[i]->kind == TPL_N_LIST) { store_param(L, ps[i], 0); continue; }
            uint32_t slot = tpl_c_declare(C, ps[i]->val);
            tpl_c_at(C, ps[i]->off);
            tpl_c_emit(C, TPL_OP_STORE_SLOT, slot, -1);
        }
    } else {
        /* the VM pushes exactly np values (Ruby proc binding) */
        for (int i = np - 1; i >= 0; i--) store_param(L, ps[i], 0);
    }
    /* ->(x, y = 1): a parameter the call did not give (unset) takes its default */
    for (int i = 0; i < np && !tpl_c_failed(C); i++) {
        if (ps[i]->kind != TPL_N_KWARG || !ps[i]->a) continue;
        uint32_t ps_slot = 0;
        tpl_c_lookup(C, ps[i]->val, &ps_slot);
        tpl_c_at(C, ps[i]->off);
        tpl_c_emit(C, TPL_OP_JSET, ps_slot, 0);
        uint32_t pos = tpl_c_word(C, 0);
        expr(L, ps[i]->a);
        tpl_c_emit(C, TPL_OP_STORE_SLOT, ps_slot, -1);
        tpl_c_patch_word(C, pos, tpl_c_here(C));
    }
    blocal_unset(L, bl);
    erb_loop lc = { 0 };
    lc.parent = L->loop;
    lc.sub = true;
    lc.lambda_ = L->sub_lambda;
    L->sub_lambda = false;
    L->loop = &lc;
    blk_push(L, bcall, blk, 0);
    value_body(L, blk->b);
    blk_pop(L);
    L->loop = lc.parent;
    tpl_c_emit(C, TPL_OP_RET_RB, 0, -1);
    tpl_c_pop_scope(C);
    tpl_c_patch(C, skip, tpl_c_here(C));
    if (!own_slots(L, own, s0, tpl_c_nslots(C), bl, blk->off)) return 0;
    return entry | (raw ? TPL_RB_BIND_RAW : (uint32_t)np) << 24;
}

/* Methods whose block, as a statement, is just a loop over the receiver's items. */
static int loop_mode(tpl_value name)
{
    static const char *const each_like[] = { "each", "each_pair", "map", "collect", "select", "filter", "reject",
                                             "flat_map", NULL };
    for (int i = 0; each_like[i]; i++)
        if (name_is(name, each_like[i])) return TPL_RB_EACH;
    if (name_is(name, "each_with_index")) return TPL_RB_EACH_WITH_INDEX;
    if (name_is(name, "times")) return TPL_RB_TIMES;
    return -1;
}

/* The head of an each-style loop over the iterable on the stack: FOR_INIT_RB in `mode` at `off`, lc
 * made the innermost loop (its top the FOR_NEXT), then FOR_NEXT. Returns the position of FOR_NEXT's
 * exit word, which the loop's end patches; *slot is the iterator's slot. */
static uint32_t loop_head(erb_low *L, erb_loop *lc, uint32_t off, int mode, uint32_t *slot)
{
    *slot = tpl_c_slot(C);
    tpl_c_at(C, off);
    tpl_c_emit(C, TPL_OP_FOR_INIT_RB, *slot | (uint32_t)mode << 16, -1);
    lc->parent = L->loop;
    lc->top = tpl_c_here(C);
    L->loop = lc;
    tpl_c_emit(C, TPL_OP_FOR_NEXT, *slot, 1);
    return tpl_c_word(C, 0);
}

/* The end of a loop loop_head began: the jump back to FOR_NEXT, then the loop's exit and its
 * breaks patched to land here. */
static void loop_tail(erb_low *L, erb_loop *lc, uint32_t exit_pos)
{
    tpl_c_emit(C, TPL_OP_JUMP, lc->top, 0);
    uint32_t end = tpl_c_here(C);
    tpl_c_patch_word(C, exit_pos, end);
    for (int i = 0; i < lc->nbreaks; i++) tpl_c_patch(C, lc->breaks[i], end);
    L->loop = lc->parent;
}

static bool changes_param(const tpl_node *n, tpl_value name, int depth);

/* `recv.each do |x| ... end` as a statement: FOR_INIT_RB / FOR_NEXT. */
static void loop_block(erb_low *L, tpl_node *n, int mode)
{
    tpl_node *blk = n->c;
    expr(L, n->a);
    erb_blocals bl = { .n = 0 };
    blocal_scan(L, &bl, blk->a, blk->b, 0);
    held_loop(L, blk->b, blk->a);
    const tpl_node *root = item_root(n->a);
    bool wbc = blk->a && !blk->a->next && blk->a->kind == TPL_N_NAME && root && changes_param(blk->b, blk->a->val, 0);
    if (wbc && root->kind == TPL_N_NAME) blocal_add(L, &bl, blk->a, root->val);   /* (item_write_back stores it) */
    tpl_c_push_scope(C);
    int np = count_params(blk->a);
    tpl_node *x = blk->a, *ix = x ? x->next : NULL;
    /* each_with_index |x, i| (two distinct names): the item and the loop's position straight into
     * the two slots, no [item, index] pair */
    bool indexed = mode == TPL_RB_EACH_WITH_INDEX && np == 2 && x->kind != TPL_N_LIST && ix->kind != TPL_N_LIST &&
                   !(x->val.len == ix->val.len && memcmp(x->val.u.s, ix->val.u.s, x->val.len) == 0);
    erb_loop lc = { 0 };
    uint32_t slot, exit_pos = loop_head(L, &lc, n->off, indexed ? TPL_RB_EACH_INDEXED : mode, &slot);
    if (indexed) {
        store_param(L, x, 0);
        tpl_c_emit(C, TPL_OP_LOOP_INDEX_RB, slot, 1);
        store_param(L, ix, 0);
    } else if (mode == TPL_RB_EACH_WITH_INDEX && np <= 1) {
        tpl_c_emit(C, TPL_OP_UNPACK_RB, 2, 1);
        bind_params(L, blk->a, 2);
    } else if (np == 0) {
        tpl_c_emit(C, TPL_OP_POP, 0, -1);
    } else {
        bind_params(L, blk->a, 1);
    }
    blocal_unset(L, &bl);
    /* `names.each { |n| n.strip! }`: the item changed through n is written back into names (own_site) */
    uint32_t wb = 0;
    bool tw;
    if (wbc && mode == TPL_RB_EACH && !indexed && np == 1 && x->kind == TPL_N_NAME && !name_is(root->val, "(safe)") &&
        ov_owned(L, root, true, &tw, NULL) && !(tw && tpl_c_options(C)->erb_self))
        wb = slot + 1;
    blk_push(L, n, blk, wb);
    body(L, blk->b);
    blk_pop(L);
    loop_tail(L, &lc, exit_pos);
    tpl_c_pop_scope(C);
    blocal_unset(L, &bl);
}

/* `for a, b in expr ... end`: the iterable's items (FOR_INIT_RB, as each), assigned to the variables
 * in the enclosing scope (a for loop has no scope of its own: they and the body's locals stay). */
static void for_loop(erb_low *L, tpl_node *n)
{
    int np = count_params(n->c);
    if (np > 64) { tpl_c_error(C, n->off, "too many loop variables"); return; }
    for (const tpl_node *p = n->c; p; p = p->next)
        if ((p->kind == TPL_N_NAME && p->op) || p->kind == TPL_N_KWARG) {
            tpl_c_error(C, p->off, "unsupported Ruby construct: a *rest, default, keyword or &block for variable");
            return;
        }
    expr(L, n->a);
    erb_loop lc = { 0 };
    uint32_t slot, exit_pos = loop_head(L, &lc, n->off, TPL_RB_EACH, &slot);
    tpl_node *ps[64];
    int k = 0;
    for (tpl_node *p = n->c; p; p = p->next) ps[k++] = p;
    if (np >= 2) tpl_c_emit(C, TPL_OP_UNPACK_RB, (uint32_t)np, np - 1);
    for (int i = np - 1; i >= 0; i--) {
        if (ps[i]->kind == TPL_N_LIST) { tpl_c_error(C, ps[i]->off, "unsupported Ruby construct: a destructured for variable"); return; }
        store_var(L, ps[i]->val, ps[i]->off);
    }
    held_loop(L, n->b, NULL);
    body(L, n->b);
    loop_tail(L, &lc, exit_pos);
}

/* `while c ... end` / `until c ... end` (cond NULL: Kernel#loop, whose block is `blk`, a scope with
 * block-local variables). The fuel limit bounds a loop that never ends. */
/* post: `begin ... end while cond`, the body runs before the first test (Ruby's do-while; `next` goes to the test) */
static void while_loop(erb_low *L, tpl_node *cond, bool until, tpl_node *blk, tpl_node *stmts, uint32_t off, bool used,
                       bool post)
{
    erb_blocals bl = { .n = 0 };
    erb_loop lc = { 0 };
    if (used) {
        /* its value: nil when the condition ends it, a break's value (Ruby's while/loop value) */
        lc.val_slot = tpl_c_slot(C) + 1;
        tpl_c_emit(C, TPL_OP_NONE, 0, 1);
        tpl_c_emit(C, TPL_OP_STORE_SLOT, lc.val_slot - 1, -1);
    }
    if (blk) {
        blocal_scan(L, &bl, NULL, blk->b, 0);
        tpl_c_push_scope(C);
    }
    lc.parent = L->loop;
    lc.top = tpl_c_here(C);
    L->loop = &lc;
    uint32_t jexit = 0;
    held_loop(L, stmts, NULL);
    held_loop(L, cond, NULL);
    if (cond && post) {
        /* JUMP body; top: JUMP test (next's target); body; test: cond, out when it ends the loop; JUMP body. The body
         * is compiled before the condition, as Ruby reads it (a local it assigns is one in the condition). A begin
         * without rescue or ensure clauses is just its body, so next and break in it are the loop's. */
        if (stmts && stmts->kind == TPL_N_RBEGIN && !stmts->b && !stmts->c) stmts = stmts->a;
        tpl_c_at(C, off);
        uint32_t jbody = tpl_c_emit(C, TPL_OP_JUMP, 0, 0);
        lc.top = tpl_c_here(C);
        uint32_t jtest = tpl_c_emit(C, TPL_OP_JUMP, 0, 0), bpos = tpl_c_here(C);
        tpl_c_patch(C, jbody, bpos);
        blocal_unset(L, &bl);
        body(L, stmts);
        tpl_c_patch(C, jtest, tpl_c_here(C));
        expr(L, cond);
        tpl_c_at(C, off);
        jexit = tpl_c_emit(C, until ? TPL_OP_JT_PY : TPL_OP_JF_PY, 0, -1);
        tpl_c_emit(C, TPL_OP_JUMP, bpos, 0);
    } else {
        if (cond) {
            expr(L, cond);
            tpl_c_at(C, off);
            jexit = tpl_c_emit(C, until ? TPL_OP_JT_PY : TPL_OP_JF_PY, 0, -1);
        }
        blocal_unset(L, &bl);
        body(L, stmts);
        tpl_c_at(C, off);
        tpl_c_emit(C, TPL_OP_JUMP, lc.top, 0);
    }
    uint32_t end = tpl_c_here(C);
    if (cond) tpl_c_patch(C, jexit, end);
    for (int i = 0; i < lc.nbreaks; i++) tpl_c_patch(C, lc.breaks[i], end);
    L->loop = lc.parent;
    if (blk) {
        tpl_c_pop_scope(C);
        blocal_unset(L, &bl);
    }
    if (used) {
        tpl_c_emit(C, TPL_OP_LOAD_SLOT, lc.val_slot - 1, 1);
        tpl_c_word(C, tpl_c_name(C, S("(while)")));
    }
}

/* `recv.each_with_object(memo) { |x, acc| ... }`: a loop whose `acc` is a variable, so the body's
 * `acc << x` / `acc[k] = v` (which store the new value back, values being immutable) carry to the
 * next item; the value is acc at the end. */
static bool fresh(const tpl_node *e);
static __attribute__((noinline)) bool each_with_object(erb_low *L, tpl_node *n, bool used)
{
    tpl_node *blk = n->c;
    if (!n->b || n->b->next || n->b->kind != TPL_N_ARG || !params_simple(blk->a)) return false;
    /* { |x| ... } of a new memo (no name holds it, so the body cannot change it): the memo is the value */
    bool one = count_params(blk->a) == 1 && blk->a->kind == TPL_N_NAME && fresh(n->b->a);
    if (!one && (count_params(blk->a) != 2 || blk->a->next->kind != TPL_N_NAME)) return false;
    tpl_value accn = one ? tpl_v_str("(each_with_object)", 18) : blk->a->next->val;
    erb_blocals bl = { .n = 0 };
    blocal_scan(L, &bl, blk->a, blk->b, 0);
    held_loop(L, blk->b, blk->a);
    tpl_c_push_scope(C);
    uint32_t acc = tpl_c_declare(C, accn);
    expr(L, n->b->a);
    tpl_c_emit(C, TPL_OP_STORE_SLOT, acc, -1);
    expr(L, n->a);
    erb_loop lc = { .val_slot = acc + 1 };   /* a break's value replaces the memo: the call's value */
    uint32_t slot, exit_pos = loop_head(L, &lc, n->off, TPL_RB_EACH, &slot);
    store_param(L, blk->a, 0);
    blocal_unset(L, &bl);
    blk_push(L, n, blk, 0);
    body(L, blk->b);
    blk_pop(L);
    loop_tail(L, &lc, exit_pos);
    if (used) load_local(L, acc, accn);
    tpl_c_pop_scope(C);
    blocal_unset(L, &bl);
    return true;
}

/* `recv.tap { |x| ... }` on a new object (no other name holds it: Hash.new(0), {}, []): each_with_object's
 * loop, over one nil, with x its memo, so the body's `x[k] += 1` / `x << v` reach the value tap returns
 * (break's value, when one runs, as Ruby's tap). */
static bool fresh(const tpl_node *e);
static __attribute__((noinline)) bool tap_fresh(erb_low *L, tpl_node *n, bool used)
{
    tpl_node *blk = n->c;
    if (n->b || !n->a || !fresh(n->a) || !blk->a || count_params(blk->a) != 1 || !params_simple(blk->a) || blk->a->kind != TPL_N_NAME)
        return false;
    erb_blocals bl = { .n = 0 };
    blocal_scan(L, &bl, blk->a, blk->b, 0);
    held_loop(L, blk->b, blk->a);
    tpl_c_push_scope(C);
    uint32_t acc = tpl_c_declare(C, blk->a->val);
    expr(L, n->a);
    tpl_c_emit(C, TPL_OP_STORE_SLOT, acc, -1);
    tpl_c_emit(C, TPL_OP_NONE, 0, 1);
    tpl_c_emit(C, TPL_OP_BUILD_LIST, 1, 0);
    erb_loop lc = { .val_slot = acc + 1 };   /* a break's value replaces the memo: the call's value */
    uint32_t slot, exit_pos = loop_head(L, &lc, n->off, TPL_RB_EACH, &slot);
    tpl_c_emit(C, TPL_OP_POP, 0, -1);
    blocal_unset(L, &bl);
    blk_push(L, n, blk, 0);
    body(L, blk->b);
    blk_pop(L);
    loop_tail(L, &lc, exit_pos);
    if (used) load_local(L, acc, blk->a->val);
    tpl_c_pop_scope(C);
    blocal_unset(L, &bl);
    return true;
}

/* ------------------------------------------------------------------ calls */

static bool has_splat(const tpl_node *a)
{
    for (; a; a = a->next)
        if (a->kind == TPL_N_STARARG || a->kind == TPL_N_STARKW) return true;
    return false;
}

/* Arguments with splats, f(a, *b, c, k: v, **h): the positional ones as one Array (a splat takes
 * Array(b)'s items, as Ruby's to_a) and the keywords as one dict (**h adds h's pairs); returns the
 * TPL_ARGW_DYN word CALL and CALL_NAME spread. */
static uint32_t args_dyn(erb_low *L, tpl_node *a, const erb_def *arity)
{
    uint32_t cnt = 0, nkw = 0;
    bool have = false;
    tpl_c_at(C, a ? a->off : 0);
    for (tpl_node *x = a; x && !tpl_c_failed(C); x = x->next) {
        if (x->kind == TPL_N_KWARG || x->kind == TPL_N_STARKW) continue;
        if (x->kind == TPL_N_ARG) { expr(L, x->a); cnt++; continue; }
        if (cnt || !have) {
            tpl_c_emit(C, TPL_OP_BUILD_LIST, cnt, 1 - (int)cnt);
            if (have) tpl_c_emit(C, TPL_OP_ADD_RB, 0, -1);
            have = true;
            cnt = 0;
        }
        expr(L, x->a);
        tpl_c_at(C, x->off);
        tpl_c_emit(C, TPL_OP_CALL_NAME, tpl_c_name(C, S("(splat)")), 0);   /* (Kernel#Array under a name no state or self shadows: Ruby splats with to_a) */
        tpl_c_word(C, (uint32_t)TPL_B_RKERNEL_Array);
        tpl_c_word(C, TPL_ARGW(1, 0, TPL_NO_KW));
        tpl_c_emit(C, TPL_OP_ADD_RB, 0, -1);
    }
    if (cnt || !have) {
        tpl_c_emit(C, TPL_OP_BUILD_LIST, cnt, 1 - (int)cnt);
        if (have) tpl_c_emit(C, TPL_OP_ADD_RB, 0, -1);
    }
    if (arity) {   /* a template method's positional parameters: Ruby's ArgumentError when the count is off */
        tpl_c_emit(C, TPL_OP_CONST, tpl_c_const(C, tpl_v_int(arity->nreq)), 1);
        tpl_c_emit(C, TPL_OP_CONST, tpl_c_const(C, tpl_v_int(arity->nreq + arity->nopt)), 1);
        if (arity->rest) {
            /* [the positional ones, "(rest)", the rest Array]: the first keyword argument is the rest */
            tpl_c_emit(C, TPL_OP_CONST, tpl_c_const(C, tpl_v_bool(true)), 1);
            tpl_c_emit(C, TPL_OP_CALL_NAME, tpl_c_name(C, S("(arity)")), -3);
            tpl_c_word(C, (uint32_t)TPL_B_RKERNEL_arity);
            tpl_c_word(C, TPL_ARGW(4, 0, TPL_NO_KW));
            tpl_c_emit(C, TPL_OP_UNPACK, 3, 2);
            nkw = 1;
        } else {
            tpl_c_emit(C, TPL_OP_CALL_NAME, tpl_c_name(C, S("(arity)")), -2);
            tpl_c_word(C, (uint32_t)TPL_B_RKERNEL_arity);
            tpl_c_word(C, TPL_ARGW(3, 0, TPL_NO_KW));
        }
    }
    tpl_node *dstar = NULL;
    for (tpl_node *x = a; x; x = x->next) {
        if (x->kind == TPL_N_STARKW && !dstar) dstar = x;
        if (x->kind != TPL_N_KWARG || dstar) continue;
        tpl_value kn = x->val;
        if (arity) kn.flags |= TPL_F_SYMBOL;   /* (a key of a **opts parameter's Hash) */
        tpl_c_emit(C, TPL_OP_CONST, tpl_c_const(C, kn), 1);
        expr(L, x->a);
        nkw++;
    }
    if (nkw > 50) { tpl_c_error(C, 0, "too many arguments"); return 0; }
    tpl_c_emit(C, TPL_OP_BUILD_MAP, nkw, 1 - 2 * (int)nkw);
    /* from the first **hash on, in the call's order: each **h's pairs, each keyword, a later one's value
     * replacing an earlier one's in its place (Ruby's keyword Hash, as a literal's {**a, b: 1, **c}) */
    dstar_args(L, dstar, arity != NULL);
    return TPL_ARGW(2, 0, TPL_ARGW_DYN);
}

/* Pushes the arguments; returns the call-argument word. sym: the keyword names are Symbols (a call of
 * a template method: runtime/vm.c call_macro binds a keyword parameter from a Symbol key only). */
static uint32_t args_kw(erb_low *L, tpl_node *a, bool sym);
static uint32_t args(erb_low *L, tpl_node *a) { return args_kw(L, a, false); }
static uint32_t args_kw(erb_low *L, tpl_node *a, bool sym)
{
    if (has_splat(a)) return args_dyn(L, a, NULL);
    uint32_t npos = 0, nkw = 0;
    tpl_list *names = NULL;
    for (; a; a = a->next) {
        if (a->kind == TPL_N_KWARG) {
            tpl_arena *pa = tpl_c_program_arena(C);
            if (!names) names = tpl_list_new(pa, 4);
            char *kn = tpl_arena_strdup(pa, a->val.u.s, a->val.len);
            tpl_value kv = tpl_v_str(kn, a->val.len);
            if (sym) kv.flags |= TPL_F_SYMBOL;
            if (!names || !kn || !tpl_list_push(pa, names, kv)) { tpl_c_nomem(C, a->off); return 0; }
            expr(L, a->a);
            nkw++;
        } else {
            if (nkw) { tpl_c_error(C, a->off, "positional argument after a keyword argument is not supported"); return 0; }
            expr(L, a->a);
            npos++;
        }
    }
    if (npos > 200 || nkw > 50) { tpl_c_error(C, 0, "too many arguments"); return 0; }
    uint32_t k = TPL_NO_KW;
    if (nkw) {
        tpl_value lv = tpl_v_list(names);
        lv.flags = TPL_F_TUPLE;
        k = tpl_c_const(C, lv);
    }
    return TPL_ARGW(npos, nkw, k);
}

static int argw_count(uint32_t w) { return (int)(TPL_ARGW_NPOS(w) + TPL_ARGW_NKW(w)); }

/* The arguments of a call of a template method with a *rest or **opts parameter (its signature checked):
 * the positional ones its positional parameters take, then those past them as one Array, the hidden keyword
 * argument (rest) its def binds to the *rest parameter; keyword names are symbols (a **opts Hash's keys). */
/* The hidden keyword a def's *rest parameter binds (a Symbol, as every keyword name of a def's call: runtime/vm.c call_macro) */
static tpl_value rest_kw(void)
{
    tpl_value v = tpl_v_str("(rest)", 6);
    v.flags |= TPL_F_SYMBOL;
    return v;
}

static uint32_t args_def(erb_low *L, tpl_node *a, const erb_def *d)
{
    uint32_t npos = 0, nkw = 0, nrest = 0, nmax = (uint32_t)(d->nreq + d->nopt);
    tpl_arena *pa = tpl_c_program_arena(C);
    tpl_list *names = tpl_list_new(pa, 4);
    if (!names) { tpl_c_nomem(C, a ? a->off : 0); return 0; }
    for (; a; a = a->next) {
        if (a->kind == TPL_N_KWARG) {
            if (d->rest && !nkw) {
                tpl_c_emit(C, TPL_OP_BUILD_LIST, nrest, 1 - (int)nrest);
                if (!tpl_list_push(pa, names, rest_kw())) { tpl_c_nomem(C, a->off); return 0; }
                nkw++;
            }
            char *kn = tpl_arena_strdup(pa, a->val.u.s, a->val.len);
            tpl_value kv = tpl_v_str(kn, a->val.len);
            kv.flags = TPL_F_SYMBOL;
            if (!kn || !tpl_list_push(pa, names, kv)) { tpl_c_nomem(C, a->off); return 0; }
            expr(L, a->a);
            nkw++;
        } else {
            if (nkw) { tpl_c_error(C, a->off, "positional argument after a keyword argument is not supported"); return 0; }
            expr(L, a->a);
            if (npos < nmax) npos++;
            else nrest++;
        }
    }
    if (d->rest && !nkw) {
        tpl_c_emit(C, TPL_OP_BUILD_LIST, nrest, 1 - (int)nrest);
        if (!tpl_list_push(pa, names, rest_kw())) { tpl_c_nomem(C, 0); return 0; }
        nkw++;
    }
    if (npos > 200 || nkw > 50 || nrest > 200) { tpl_c_error(C, 0, "too many arguments"); return 0; }
    tpl_value lv = tpl_v_list(names);
    lv.flags = TPL_F_TUPLE;
    return TPL_ARGW(npos, nkw, nkw ? tpl_c_const(C, lv) : TPL_NO_KW);
}

/* The variable a mutating call (push, <<, append, concat, unshift, prepend, insert, clear, replace) changes: its receiver's,
 * through a chain of such calls; NULL when the receiver is no variable. */
static bool mutates_receiver(const tpl_node *n)
{
    return n->kind == TPL_N_RMETHOD && n->a && (name_is(n->val, "push") || name_is(n->val, "<<") ||
                                                name_is(n->val, "append") || name_is(n->val, "concat") ||
                                                name_is(n->val, "unshift") || name_is(n->val, "prepend") ||
                                                name_is(n->val, "insert") || name_is(n->val, "merge!") ||
                                                name_is(n->val, "update") || name_is(n->val, "clear") || name_is(n->val, "replace") ||
                                                name_is(n->val, "freeze"));
}

/* A call that changes its receiver in place and answers something else (store, delete, pop, ...):
 * the receiver, when it is a variable or an item of one, is made one this render may change (the
 * (own) builtin copies the state's or a method's array or hash) and stored back first. */
/* A bang method (sort!, strip!, gsub!, ...; stdlib/ruby/ruby.c bang) or delete_if/keep_if: an array or hash
 * changes in place, a string's new value (when not nil) is stored back into the receiver's variable. */
static bool bang_method(const tpl_node *n)
{
    return n->kind == TPL_N_RMETHOD && n->a && !mutates_receiver(n) &&
           ((n->val.len > 1 && n->val.u.s[n->val.len - 1] == '!' && !name_is(n->val, "!=")) ||
            name_is(n->val, "delete_if") || name_is(n->val, "keep_if"));
}

static bool changes_receiver(const tpl_node *n)
{
    return bang_method(n) || (n->kind == TPL_N_RMETHOD && n->a && (name_is(n->val, "store") || name_is(n->val, "delete") ||
                                                name_is(n->val, "delete_at") || name_is(n->val, "pop") ||
                                                name_is(n->val, "shift")));
}

static const tpl_node *shovel_root(const tpl_node *n)
{
    if (!mutates_receiver(n)) return NULL;
    const tpl_node *r = n->a;
    while (mutates_receiver(r)) r = r->a;
    /* h[k] << x: stored back as h[k] = (h[k] << x), when h[k] is an item of a variable */
    const tpl_node *v = r;
    while (v->kind == TPL_N_GETITEM) v = v->a;
    return v->kind == TPL_N_NAME || v->kind == TPL_N_RIVAR ? r : NULL;
}

/* ------------------------------------------------------------------ shared receivers (issue 15)
 *
 * Ruby's Strings, Arrays and Hashes are objects: a change in place (`s << x`, `s.strip!`, `a << x`,
 * `h[k] = v`) is seen through every name that holds the object. tpl's strings are values (the change
 * is stored back into the receiver's variable, or the item of one), and an array or hash the render
 * did not build (the state's, a method's result) is copied at its first change. So a change is
 * right only when no other name holds the receiver: the statements are scanned in source order
 * (each top-level statement whole before it is lowered, so a loop's later iterations count) for what
 * they do with each variable: assigned a value no other name holds (a literal, `+`, `strip` ...),
 * assigned one that may be held elsewhere (another variable, an item, a parameter), escaped (stored
 * into another variable or container, passed as an argument, a block's value), or items that escape
 * or come from elsewhere. A change through a variable that may share its receiver is a located
 * compile error for String-only methods (strip!, gsub!, ...) and a located check when the call runs
 * otherwise (`<<` on a String, or on the state's array, is an error naming the construct; on an
 * array or hash this render built, Ruby's reference semantics hold and it runs). */
enum { OV_ASSIGNED = 1, OV_NONFRESH = 2, OV_ESCAPED = 4, OV_ITEMS = 8, OV_PARAM = 16, OV_DERIVED = 32, OV_STRLIT = 64,
       OV_BPARAM = 128 /* a block's parameter of that name (only aliases look at it) */ };
#define OV_IVARS UINT32_MAX   /* the scope of @ivars: one for the template and its defs */

typedef struct own_var {
    const char *s;
    uint32_t len, scope;
    uint8_t flags;
    uint64_t hash;
} own_var;

static bool in_set(tpl_value v, const char *const *set)
{
    for (; *set; set++)
        if (name_is(v, *set)) return true;
    return false;
}

/* r.hash, a receiver's and no arguments or block (a.hash == b.hash: TPL_N_COMPARE) */
static bool hash_call(const tpl_node *n)
{
    return n->kind == TPL_N_RMETHOD && n->a && !n->b && !n->c && name_is(n->val, "hash");
}

/* methods whose result may be their receiver itself */
static const char *const self_methods[] = { "<<", "concat", "prepend", "insert", "replace", "clear", "push", "append",
    "unshift", "merge!", "update", "tap", "itself", "then", "yield_self", "to_s", "to_str", "to_a", "to_ary", "to_h",
    "to_hash", "freeze", "each", "each_with_index", "each_pair", "each_key", "each_value", "reverse_each", "cycle",
    "presence", "fill", "delete_if", "keep_if", "send", "public_send", "(safe)", NULL };
/* methods whose result holds nothing of the receiver (a new string, a number, a truth value, new strings) */
static const char *const fresh_methods[] = { "length", "size", "count", "empty?", "nil?", "include?", "key?", "has_key?",
    "member?", "start_with?", "end_with?", "==", "!=", "strip", "lstrip", "rstrip", "chomp", "chop", "upcase", "downcase",
    "capitalize", "swapcase", "gsub", "sub", "tr", "tr_s", "squeeze", "center", "ljust", "rjust", "succ", "next", "join",
    "inspect", "to_i", "to_f", "to_json", "to_sym", "split", "chars", "lines", "bytes", "scan", "index", "rindex", "=~",
    "match?", "any?", "all?", "none?", "one?", "is_a?", "kind_of?", "instance_of?", "respond_to?", "class", "hash",
    "format", "ord", "chr", "abs", "round", "floor", "ceil", "even?", "odd?", "zero?", "between?", "frozen?", "equal?",
    "eql?", "encoding", "unpack", "unpack1", "pack", "keys", "+@", "-@", "downcase", "delete_prefix",
    "delete_suffix", "unicode_normalize", "encode", "object_id", "sprintf", "each_char", "each_line", "dump", NULL };
/* methods whose result may be one of the receiver's items (or an argument) */
static const char *const item_methods[] = { "first", "last", "[]", "at", "fetch", "dig", "min", "max", "min_by", "max_by",
    "find", "detect", "sample", "shift", "pop", "delete", "delete_at", "slice", "inject", "reduce", "each_with_object",
    "sum", "default", "store", "values_at", "fetch_values", NULL };
/* methods that do not keep their block's value */
static const char *const void_blocks[] = { "each", "each_with_index", "each_pair", "each_key", "each_value", "times",
    "upto", "downto", "step", "each_char", "each_line", "reverse_each", "each_slice", "each_cons", "loop", "tap",
    "each_with_object", "cycle", NULL };
/* methods that store their arguments into the receiver */
static const char *const store_methods[] = { "<<", "push", "append", "unshift", "prepend", "insert", "concat", "store",
    "[]=", "merge!", "update", "replace", "fill", NULL };
/* String methods that change the receiver (Array and Hash have none of these names) */
static const char *const str_changers[] = { "strip!", "lstrip!", "rstrip!", "chomp!", "chop!", "upcase!", "downcase!",
    "capitalize!", "swapcase!", "gsub!", "sub!", "tr!", "tr_s!", "squeeze!", "delete!", "succ!", "next!",
    "delete_prefix!", "delete_suffix!", "unicode_normalize!", "scrub!", "encode!", NULL };
/* methods that change a String or an Array/Hash receiver */
static const char *const any_changers[] = { "<<", "concat", "prepend", "insert", "replace", "clear", "reverse!", "slice!",
    "[]=", "freeze", NULL };
/* methods that change an Array or Hash receiver (String has them too but makes a new string) */
static const char *const ct_changers[] = { "push", "append", "unshift", "pop", "shift", "store", "delete", "delete_at",
    "delete_if", "keep_if", "merge!", "update", "fill", NULL };

/* Whether body n calls a String-only changing method (strip!, ...) or freeze on the variable `name`. */
static bool changes_param(const tpl_node *n, tpl_value name, int depth)
{
    for (; n && depth < 200; n = n->next) {
        if (n->kind == TPL_N_RMETHOD && n->a && n->a->kind == TPL_N_NAME && n->a->val.len == name.len &&
            memcmp(n->a->val.u.s, name.u.s, name.len) == 0 && (in_set(n->val, str_changers) || name_is(n->val, "freeze")))
            return true;
        if (n->kind == TPL_N_RDEF) continue;
        if (changes_param(n->a, name, depth + 1) || changes_param(n->b, name, depth + 1) ||
            changes_param(n->c, name, depth + 1))
            return true;
    }
    return false;
}

static own_var *ov_find(erb_low *L, uint32_t scope, tpl_value name, bool create)
{
    erb_defs *d = L->defs;
    tpl_arena *a = tpl_c_arena(C);
    uint64_t h = tpl_hash_str(name.u.s, name.len) ^ ((uint64_t)scope * 0x9E3779B97F4A7C15u);
    uint32_t mask = d->ovidx_cap - 1, at = 0;
    if (d->ovidx_cap) {
        for (at = (uint32_t)h & mask; d->ovidx[at]; at = (at + 1) & mask) {
            own_var *v = &d->ov[d->ovidx[at] - 1];
            if (v->hash == h && v->scope == scope && v->len == name.len && memcmp(v->s, name.u.s, name.len) == 0) return v;
        }
    }
    if (!create) return NULL;
    if (d->nov == d->capov) {
        uint32_t cap = d->capov ? d->capov * 2 : 32;
        own_var *v = tpl_arena_table(a, cap * sizeof *v);
        if (!v) { tpl_c_nomem(C, 0); return NULL; }
        if (d->nov) memcpy(v, d->ov, d->nov * sizeof *v);
        if (d->capov) tpl_arena_table_free(a, d->ov, d->capov * sizeof *v);
        d->ov = v;
        d->capov = cap;
    }
    if ((uint64_t)(d->nov + 1) * 2 > d->ovidx_cap) {   /* a new index, twice as large */
        uint32_t cap = d->ovidx_cap ? d->ovidx_cap * 2 : 64;
        uint32_t *idx = tpl_arena_table(a, cap * sizeof *idx);
        if (!idx) { tpl_c_nomem(C, 0); return NULL; }
        memset(idx, 0, cap * sizeof *idx);
        for (uint32_t i = 0; i < d->nov; i++) {
            uint32_t k = (uint32_t)d->ov[i].hash & (cap - 1);
            while (idx[k]) k = (k + 1) & (cap - 1);
            idx[k] = i + 1;
        }
        if (d->ovidx_cap) tpl_arena_table_free(a, d->ovidx, d->ovidx_cap * sizeof *idx);
        d->ovidx = idx;
        d->ovidx_cap = cap;
        mask = cap - 1;
        for (at = (uint32_t)h & mask; d->ovidx[at]; at = (at + 1) & mask) {}
    }
    char *s = tpl_arena_strdup(a, name.u.s, name.len);
    if (!s) { tpl_c_nomem(C, 0); return NULL; }
    own_var *v = &d->ov[d->nov];
    *v = (own_var){ .s = s, .len = name.len, .scope = scope, .flags = 0, .hash = h };
    d->ovidx[at] = ++d->nov;
    return v;
}

static uint32_t var_scope(const erb_low *L, const tpl_node *n)
{
    return n->kind == TPL_N_RIVAR ? OV_IVARS : L->scope;
}

static void ov_mark(erb_low *L, uint32_t scope, const tpl_node *n, uint8_t flags)
{
    own_var *v = ov_find(L, n->kind == TPL_N_RIVAR ? OV_IVARS : scope, n->val, true);
    if (v) v->flags |= flags;
}

/* The variable at the root of r's chain of items (`h[a][b]`), or NULL. */
static const tpl_node *item_root(const tpl_node *r)
{
    while (r && (r->kind == TPL_N_GETITEM || (r->kind == TPL_N_RMETHOD && r->a && name_is(r->val, "[]")))) r = r->a;
    return r && (r->kind == TPL_N_NAME || r->kind == TPL_N_RIVAR) ? r : NULL;
}

static bool same_var(const tpl_node *a, const tpl_node *b)
{
    return a && b && a->kind == b->kind && (a->kind == TPL_N_NAME || a->kind == TPL_N_RIVAR) && a->val.len == b->val.len &&
           memcmp(a->val.u.s, b->val.u.s, a->val.len) == 0;
}

/* Aliases. `x = @y || {}`, `line = @name.to_s`, `a = b`: x may hold y's very object (the Puppet/Chef habit of
 * aliasing `@foo` into a local). Such an assignment links the two variables (instead of marking y escaped and
 * x as holding an object from elsewhere). A change through a member of a group of linked variables is made,
 * then its new value is stored into each other member that held the same object just before the change
 * (Object#equal?: tpl's strings, arrays and hashes have an identity, their storage), and into that member's
 * twin while the twin still reads their state key: every name Ruby's shared object shows through sees the
 * change. A group where a member may hold a look-alike (a result sharing tpl's storage without being the
 * same Ruby object: dup, strip, string literals) or an object held elsewhere (escaped, a parameter) keeps
 * the checks below. */
/* An @ivar that reads its state key until assigned (of v, an @ivar or a local whose twin it is): its slot
 * declared after the scan of the statement that may change or alias it (predeclare_end), so that every
 * read in the statement (a loop's earlier reads run again after a change) reads the slot the change's
 * write-back fills, not the state. (A local is left alone: an undeclared one is a NameError when the
 * state has no such key.) */
static void predeclare(erb_low *L, const tpl_node *v, uint32_t scope)
{
    if (tpl_c_options(C)->erb_self) return;   /* (a binding: its locals and self's @ivars are not twins) */
    if (scope || !v || (v->kind != TPL_N_NAME && v->kind != TPL_N_RIVAR) || name_is(v->val, "(safe)") ||
        v->val.len > 250 || L->npre >= 16)
        return;
    uint32_t slot;
    if (v->kind == TPL_N_NAME && !L->in_def && L->npreloc < 16 && !tpl_c_lookup(C, v->val, &slot) && v->val.u.s[0] != '(' &&
        v->val.u.s[0] != '$')
        L->preloc[L->npreloc++] = v->val;
    char *cp = tpl_arena_alloc(tpl_c_arena(C), v->val.len + 1);
    if (!cp) { tpl_c_nomem(C, v->off); return; }
    uint32_t len = v->val.len;
    if (v->kind == TPL_N_RIVAR) memcpy(cp, v->val.u.s, len);
    else {
        cp[0] = '@';
        memcpy(cp + 1, v->val.u.s, len++);
    }
    L->pre[L->npre++] = tpl_v_str(cp, len);
}

static void predeclare_end(erb_low *L)
{
    for (int i = 0; i < L->npre; i++) {
        uint32_t slot;
        own_var *v = ov_find(L, OV_IVARS, L->pre[i], false);
        if (v && (v->flags & OV_ASSIGNED)) continue;
        if (tpl_c_lookup(C, L->pre[i], &slot) || tpl_c_lookup_root(C, L->pre[i], &slot)) continue;
        tpl_c_declare_root(C, L->pre[i]);
    }
    L->npre = 0;
    /* the local too (a binding's local the statement may change through an alias, `2.times { t = s; t << "!" }`):
     * every read of it in the statement, also one a loop runs again after the change, reads the slot the
     * write-back fills */
    for (int i = 0; i < L->npreloc; i++) {
        uint32_t slot;
        if (tpl_c_lookup(C, L->preloc[i], &slot) || L->defs->nbound >= 32) continue;
        own_var *v = ov_find(L, 0, L->preloc[i], false);
        if (v && (v->flags & OV_ASSIGNED)) continue;
        tpl_c_declare(C, L->preloc[i]);
        L->defs->bound[L->defs->nbound++] = L->preloc[i];
    }
    L->npreloc = 0;
}

static bool bound_local(const erb_low *L, tpl_value name)
{
    for (int i = 0; i < L->defs->nbound; i++)
        if (L->defs->bound[i].len == name.len && memcmp(L->defs->bound[i].u.s, name.u.s, name.len) == 0) return true;
    return false;
}

static const char *const link_methods[] = { "to_s", "to_str", "to_a", "to_ary", "to_h", "to_hash", "itself", NULL };

/* The variables e's value may be (through ||, &&, ?: and methods answering their receiver), into out; false
 * when it may be something else than them, a new array or hash, or an immutable value. *lit: a string
 * literal may be the value. */
static bool link_leaves(const tpl_node *e, const tpl_node **out, int *n, bool *lit, int depth)
{
    if (!e) return true;
    if (depth > 20) return false;
    switch (e->kind) {
    case TPL_N_NAME: case TPL_N_RIVAR:
        if (name_is(e->val, "(safe)") || *n >= 8) return false;
        out[(*n)++] = e;
        return true;
    case TPL_N_CONST:
        if (e->val.type == TPL_T_STR) *lit = true;
        return true;
    case TPL_N_LIST: case TPL_N_DICT:
        return true;
    case TPL_N_AND: case TPL_N_OR:
        return link_leaves(e->a, out, n, lit, depth + 1) && link_leaves(e->b, out, n, lit, depth + 1);
    case TPL_N_CONDEXPR:
        return link_leaves(e->b, out, n, lit, depth + 1) && link_leaves(e->c, out, n, lit, depth + 1);
    case TPL_N_RMETHOD:
        /* Array(x) is x itself when x is an Array (Kernel#Array: puppetlabs-apache's
         * `@dest_a = Array(@dest); @dest_a[i] ||= ...`), else a new array */
        if (!e->a && name_is(e->val, "Array") && e->b && e->b->kind == TPL_N_ARG && !e->b->next && !e->c)
            return link_leaves(e->b->a, out, n, lit, depth + 1);
        return e->a && !e->b && !e->c && in_set(e->val, link_methods) && link_leaves(e->a, out, n, lit, depth + 1);
    default:
        return false;
    }
}

static void own_scan(erb_low *L, const tpl_node *n, uint32_t scope, int mode, int depth);
static int blk_param(const erb_low *L, tpl_value name);
static bool is_proc_lit(const tpl_node *n);
static int method_ref(erb_low *L, tpl_node *n);
static tpl_node *new_node(erb_low *L, tpl_node_kind kind, uint32_t off, tpl_node *a, tpl_node *b);

/* own_scan of a value link_leaves accepted: its variables' items may be held by the target too. */
static void link_scan(erb_low *L, const tpl_node *e, uint32_t scope, int depth)
{
    if (!e || depth > 20) return;
    switch (e->kind) {
    case TPL_N_NAME: case TPL_N_RIVAR:
        ov_mark(L, scope, e, OV_ITEMS);
        return;
    case TPL_N_AND: case TPL_N_OR:
        link_scan(L, e->a, scope, depth + 1);
        link_scan(L, e->b, scope, depth + 1);
        return;
    case TPL_N_CONDEXPR:
        own_scan(L, e->a, scope, 0, depth + 1);
        link_scan(L, e->b, scope, depth + 1);
        link_scan(L, e->c, scope, depth + 1);
        return;
    case TPL_N_RMETHOD:
        link_scan(L, e->a ? e->a : e->b->a, scope, depth + 1);
        return;
    default:
        own_scan(L, e, scope, 2, depth + 1);
        return;
    }
}

static void link_add(erb_low *L, const own_var *x, const own_var *y)
{
    erb_defs *d = L->defs;
    uint32_t i = (uint32_t)(x - d->ov), j = (uint32_t)(y - d->ov);
    if (i == j) return;
    for (uint32_t k = 0; k < d->nlinks; k++)
        if ((d->links[k][0] == i && d->links[k][1] == j) || (d->links[k][0] == j && d->links[k][1] == i)) return;
    if (d->nlinks == d->caplinks) {
        uint32_t cap = d->caplinks ? d->caplinks * 2 : 16;
        uint32_t (*v)[2] = tpl_arena_table(tpl_c_arena(C), cap * sizeof *v);
        if (!v) { tpl_c_nomem(C, 0); return; }
        if (d->nlinks) memcpy(v, d->links, d->nlinks * sizeof *v);
        if (d->caplinks) tpl_arena_table_free(tpl_c_arena(C), d->links, d->caplinks * sizeof *v);
        d->links = v;
        d->caplinks = cap;
    }
    d->links[d->nlinks][0] = i;
    d->links[d->nlinks][1] = j;
    d->nlinks++;
}

/* x no longer holds what it held (a template-level assignment): its links go, its neighbours stay linked
 * to each other (they may still share the object). */
static void link_drop(erb_low *L, const own_var *x)
{
    erb_defs *d = L->defs;
    uint32_t i = (uint32_t)(x - d->ov), prev = UINT32_MAX;
    for (uint32_t k = 0; k < d->nlinks;) {
        if (d->links[k][0] != i && d->links[k][1] != i) { k++; continue; }
        uint32_t o = d->links[k][0] == i ? d->links[k][1] : d->links[k][0];
        d->links[k][0] = d->links[d->nlinks - 1][0];
        d->links[k][1] = d->links[d->nlinks - 1][1];
        d->nlinks--;
        if (prev != UINT32_MAX) link_add(L, &d->ov[prev], &d->ov[o]);
        prev = o;
    }
}

/* The hidden local of a multiple assignment (grammar/erb_parse.y masgn_bind). */
static bool is_masgn_tmp(const tpl_node *e)
{
    return e && e->kind == TPL_N_NAME && e->val.len > 7 && memcmp(e->val.u.s, "(masgn ", 7) == 0;
}

/* e's value is an object no other name holds (or one that cannot change: numbers, nil, symbols). */
static bool fresh(const tpl_node *e)
{
    if (!e) return true;
    switch (e->kind) {
    case TPL_N_CONST: case TPL_N_INTERP: case TPL_N_LIST: case TPL_N_DICT: case TPL_N_RRANGE: case TPL_N_RREGEX:
    case TPL_N_BINOP: case TPL_N_UNOP: case TPL_N_COMPARE: case TPL_N_RDEFINED: case TPL_N_RCONSTNAME:
        return true;
    case TPL_N_AND: case TPL_N_OR:
        return fresh(e->a) && fresh(e->b);
    case TPL_N_CONDEXPR:
        return fresh(e->b) && fresh(e->c);
    case TPL_N_RSTMTS: {
        const tpl_node *t = e->b;
        while (t && t->next) t = t->next;
        return fresh(t);
    }
    case TPL_N_RMETHOD:
        if (!e->a) return name_is(e->val, "format") || name_is(e->val, "sprintf");
        if (name_is(e->val, "dup") || name_is(e->val, "clone")) return true;
        if (e->val.len > 1 && e->val.u.s[e->val.len - 1] == '!') return false;
        if (in_set(e->val, self_methods)) return !name_is(e->val, "(safe)") && fresh(e->a);
        return !in_set(e->val, item_methods);
    default:
        return false;
    }
}

/* fresh, and so are the items it holds. */
static bool deep_fresh(const tpl_node *e)
{
    if (!e) return true;
    switch (e->kind) {
    case TPL_N_CONST: case TPL_N_INTERP: case TPL_N_RRANGE: case TPL_N_RREGEX: case TPL_N_UNOP: case TPL_N_COMPARE:
    case TPL_N_RDEFINED: case TPL_N_RCONSTNAME:
        return true;
    case TPL_N_LIST:
        for (const tpl_node *i = e->a; i; i = i->next)
            if (!deep_fresh(i)) return false;
        return true;
    case TPL_N_DICT:
        for (const tpl_node *p = e->a; p; p = p->next)
            if (p->kind != TPL_N_PAIR || !deep_fresh(p->b)) return false;
        return true;
    case TPL_N_BINOP:
        /* "x" + s, "%s" % [s], "-" * n: a new string */
        if (e->a && (e->a->kind == TPL_N_INTERP || (e->a->kind == TPL_N_CONST && e->a->val.type == TPL_T_STR))) return true;
        if (e->b && (e->b->kind == TPL_N_INTERP || (e->b->kind == TPL_N_CONST && e->b->val.type == TPL_T_STR))) return true;
        return deep_fresh(e->a) && deep_fresh(e->b);
    case TPL_N_AND: case TPL_N_OR:
        return deep_fresh(e->a) && deep_fresh(e->b);
    case TPL_N_CONDEXPR:
        return deep_fresh(e->b) && deep_fresh(e->c);
    case TPL_N_RSTMTS: {
        const tpl_node *t = e->b;
        while (t && t->next) t = t->next;
        return deep_fresh(t);
    }
    case TPL_N_RMETHOD:
        if (!e->a) return name_is(e->val, "format") || name_is(e->val, "sprintf");
        return in_set(e->val, fresh_methods) && !name_is(e->val, "dup");
    default:
        return false;
    }
}

/* A body (statements): the last one's value is used when `mode` says so. */
static void own_body(erb_low *L, const tpl_node *n, uint32_t scope, int mode, int depth)
{
    for (; n; n = n->next) own_scan(L, n, scope, n->next ? 0 : mode, depth);
}

static void own_params(erb_low *L, const tpl_node *p, uint32_t scope, int depth, uint8_t flag)
{
    for (; p && depth < 200; p = p->next) {
        if (p->kind == TPL_N_NAME || p->kind == TPL_N_KWARG) ov_mark(L, scope, p, flag);
        if (p->kind == TPL_N_KWARG && p->a) own_scan(L, p->a, scope, 2, depth + 1);
        else if (p->kind != TPL_N_NAME) own_params(L, p->a, scope, depth + 1, flag);
    }
}

/* Whether a block parameter (its name's facts in the enclosing scope) escaped or had its items escape. */
static bool own_params_escape(erb_low *L, const tpl_node *p, uint32_t scope, int depth)
{
    for (; p && depth < 50; p = p->next) {
        if (p->kind == TPL_N_NAME || p->kind == TPL_N_KWARG) {
            own_var *v = ov_find(L, scope, p->val, false);
            if (v && (v->flags & (OV_ESCAPED | OV_ITEMS))) return true;
        } else if (own_params_escape(L, p->a, scope, depth + 1)) return true;
    }
    return false;
}

static void own_args(erb_low *L, const tpl_node *a, uint32_t scope, int mode, int depth)
{
    for (; a; a = a->next) own_scan(L, a->kind == TPL_N_ARG || a->kind == TPL_N_KWARG || a->kind == TPL_N_STARARG ||
                                          a->kind == TPL_N_STARKW ? a->a : a, scope, mode, depth);
}

/* mode: 0 n's value is not kept; 1 its items may be (`x = a[0]`, `a.map { ... }`); 2 it may be itself
 * (`x = a`, `f(a)`, `[a]`). */
static void own_scan(erb_low *L, const tpl_node *n, uint32_t scope, int mode, int depth)
{
    if (!n || depth > 200 || tpl_c_failed(C)) return;
    depth++;
    switch (n->kind) {
    case TPL_N_NAME: case TPL_N_RIVAR:
        if (mode == 3) {
            /* a def's result: a local of the def, assigned there, dies as the def returns: its object goes to
             * the caller, which no change in the def can reach after (`s = ""; xs.each { |x| s << x }; s`) */
            own_var *v = n->kind == TPL_N_NAME && scope && scope != OV_IVARS ? ov_find(L, scope, n->val, false) : NULL;
            if (v && (v->flags & OV_ASSIGNED) && !(v->flags & (OV_PARAM | OV_BPARAM)) && !blk_param(L, n->val)) return;
            mode = 2;
        }
        if (mode) ov_mark(L, scope, n, mode == 2 ? OV_ESCAPED | OV_ITEMS : OV_ITEMS);
        return;
    case TPL_N_CONST: case TPL_N_TEXT: case TPL_N_RREGEX: case TPL_N_RCONSTNAME: case TPL_N_RDEFINED:
        return;
    case TPL_N_SET: {
        const tpl_node *t = n->a, *v = n->b, *val = v;
        bool self = false;
        /* a multiple assignment's hidden local: `tmp = tmp.is_a?(Array) ? tmp : [tmp]` keeps what tmp holds (its
         * items are the right side's), and `x = tmp[i]` holds an object no other name holds when tmp's items are
         * fresh (`k, v = s.split(":")`: k.strip! changes only k) */
        if (is_masgn_tmp(t) && v && v->kind == TPL_N_CONDEXPR && same_var(v->b, t)) return;
        if (t && t->kind == TPL_N_NAME && v && v->kind == TPL_N_GETITEM && is_masgn_tmp(v->a)) {
            own_var *tv = ov_find(L, scope, v->a->val, false);
            if (tv && (tv->flags & OV_ASSIGNED) && !(tv->flags & (OV_ITEMS | OV_ESCAPED))) {
                ov_mark(L, scope, t, OV_ASSIGNED);
                return;
            }
        }
        if (v && (v->kind == TPL_N_OR || v->kind == TPL_N_AND || v->kind == TPL_N_BINOP) &&
            (same_var(v->a, t) || (is_index(t) && v->a && is_index(v->a)))) {
            val = v->b;   /* x ||= v, x += v, h[k] ||= v: the old value stays only in x */
            self = true;
        }
        const tpl_node *lv[8];
        int nlv = 0;
        bool lit = false;
        bool link = t && (t->kind == TPL_N_NAME || t->kind == TPL_N_RIVAR) && !self && !name_is(t->val, "(safe)") &&
                    link_leaves(val, lv, &nlv, &lit, 0);
        for (int i = 0; i < nlv && link; i++) {
            /* a bare name that may be a method call (the template's, self's, a host function) is no alias */
            if (lv[i]->kind != TPL_N_NAME) continue;
            own_var *lvv = ov_find(L, scope, lv[i]->val, false);
            if (lvv && (lvv->flags & OV_ASSIGNED)) continue;
            if (def_find(L, lv[i]->val, false) || tpl_c_options(C)->erb_self ||
                tpl_c_host_func(C, lv[i]->val, TPL_HOST_GLOBAL))
                link = false;
        }
        if (link) {
            /* x = y, x = @y || {}: linked (aliases, above) */
            ov_mark(L, scope, t, OV_ASSIGNED | (lit ? OV_STRLIT : 0) | (deep_fresh(val) ? 0 : OV_ITEMS));
            own_var *tv = ov_find(L, var_scope(L, t) == OV_IVARS ? OV_IVARS : scope, t->val, false);
            for (int i = 0; i < nlv && tv; i++) {
                own_var *lvv = ov_find(L, lv[i]->kind == TPL_N_RIVAR ? OV_IVARS : scope, lv[i]->val, true);
                if (!lvv) return;
                tv = ov_find(L, var_scope(L, t) == OV_IVARS ? OV_IVARS : scope, t->val, false);   /* (moved) */
                if (tv) link_add(L, tv, lvv);
            }
            link_scan(L, val, scope, depth);
            for (int i = 0; i < nlv; i++) predeclare(L, lv[i], scope);
            return;
        }
        if (t && (t->kind == TPL_N_NAME || t->kind == TPL_N_RIVAR)) {
            bool f = self && v->kind == TPL_N_BINOP ? true : fresh(val);
            /* a fresh value that may share tpl's storage with another (a literal, dup, strip ...) */
            bool derived = f && val && val->kind != TPL_N_LIST && val->kind != TPL_N_DICT && val->kind != TPL_N_RRANGE &&
                           !(val->kind == TPL_N_CONST && val->val.type != TPL_T_STR);
            ov_mark(L, scope, t, OV_ASSIGNED | (f ? 0 : OV_NONFRESH) | (deep_fresh(val) ? 0 : OV_ITEMS) |
                                 (derived ? OV_DERIVED : 0));
        } else if (is_index(t)) {
            const tpl_node *root = item_root(t);
            predeclare(L, root, scope);
            if (root && !deep_fresh(val)) ov_mark(L, scope, root, OV_ITEMS);
            own_scan(L, t->a, scope, 0, depth);
            if (t->kind == TPL_N_GETITEM) own_scan(L, t->b, scope, 2, depth);
            else own_args(L, t->b, scope, 2, depth);
        }
        if (self) own_scan(L, v->a->kind == TPL_N_NAME || v->a->kind == TPL_N_RIVAR ? NULL : v->a, scope, 0, depth);
        own_scan(L, val, scope, 2, depth);
        return;
    }
    case TPL_N_RMETHOD: {
        if (n->a && (in_set(n->val, str_changers) || in_set(n->val, any_changers) || in_set(n->val, ct_changers) ||
                     (n->val.len > 1 && n->val.u.s[n->val.len - 1] == '!'))) {
            const tpl_node *r = n->a;
            while (mutates_receiver(r)) r = r->a;
            predeclare(L, item_root(r), scope);
        }
        if (n->c) {
            bool lam = is_proc_lit(n);
            L->own_lam += lam;
            own_scan(L, n->c, scope, in_set(n->val, void_blocks) ? 0 : 2, depth);
            L->own_lam -= lam;
        }
        if (n->a) {
            int rm = in_set(n->val, self_methods) || (n->val.len > 1 && n->val.u.s[n->val.len - 1] == '!') ? mode
                   : in_set(n->val, fresh_methods) ? 0 : (mode ? 1 : 0);
            /* a block's parameters hold its items: they escape when a parameter does */
            if (n->c && n->c->kind == TPL_N_RBLOCK && rm < 1 && own_params_escape(L, n->c->a, scope, 0)) rm = 1;
            own_scan(L, n->a, scope, rm, depth);
            if (in_set(n->val, store_methods)) {
                const tpl_node *root = item_root(n->a);
                for (const tpl_node *a = n->b; a && root; a = a->next)
                    if (!deep_fresh(a->a ? a->a : a)) { ov_mark(L, scope, root, OV_ITEMS); break; }
            }
        }
        own_args(L, n->b, scope, n->a && in_set(n->val, fresh_methods) ? 0 : 2, depth);
        return;
    }
    case TPL_N_RBLOCK:   /* its parameters are its own variables (blk_param) */
        own_params(L, n->a, scope, depth, OV_BPARAM);
        own_body(L, n->b, scope, mode, depth);
        return;
    case TPL_N_LIST:
        own_args(L, n->a, scope, 2, depth);
        return;
    case TPL_N_DICT:
        for (const tpl_node *p = n->a; p; p = p->next) {
            own_scan(L, p->a, scope, 2, depth);
            own_scan(L, p->b, scope, 2, depth);
        }
        return;
    case TPL_N_INTERP:
        own_body(L, n->a, scope, 0, depth);
        return;
    case TPL_N_BINOP: case TPL_N_GETITEM:
        own_scan(L, n->a, scope, mode ? 1 : 0, depth);
        own_scan(L, n->b, scope, n->kind == TPL_N_GETITEM ? 0 : mode ? 1 : 0, depth);
        return;
    case TPL_N_AND: case TPL_N_OR:
        own_scan(L, n->a, scope, mode, depth);
        own_scan(L, n->b, scope, mode, depth);
        return;
    case TPL_N_CONDEXPR:
        own_scan(L, n->a, scope, 0, depth);
        own_scan(L, n->b, scope, mode, depth);
        own_scan(L, n->c, scope, mode, depth);
        return;
    case TPL_N_IF:
        own_scan(L, n->a, scope, 0, depth);
        own_body(L, n->b, scope, mode, depth);
        own_body(L, n->c, scope, mode, depth);
        return;
    case TPL_N_RCASE:
        own_scan(L, n->a, scope, 0, depth);
        for (const tpl_node *w = n->b; w; w = w->next) {
            own_body(L, w->a, scope, 0, depth);
            own_body(L, w->b, scope, mode, depth);
        }
        own_body(L, n->c, scope, mode, depth);
        return;
    case TPL_N_RSTMTS:
        own_body(L, n->b, scope, mode, depth);
        return;
    case TPL_N_RWHILE:
        own_scan(L, n->a, scope, 0, depth);
        own_body(L, n->b, scope, 0, depth);
        return;
    case TPL_N_RFOR:
        own_params(L, n->c, scope, depth, OV_PARAM);
        own_scan(L, n->a, scope, 1, depth);
        own_body(L, n->b, scope, 0, depth);
        return;
    case TPL_N_RBEGIN:
        own_body(L, n->a, scope, mode, depth);
        for (const tpl_node *r = n->b; r; r = r->next) {
            if (r->c) ov_mark(L, scope, r->c, OV_ASSIGNED);
            own_body(L, r->b, scope, mode, depth);
        }
        own_body(L, n->c, scope, 0, depth);
        return;
    case TPL_N_RDEF:
        own_params(L, n->a, n->off + 1, depth, OV_PARAM);
        for (const tpl_node *p = n->a; p; p = p->next)
            if (p->kind == TPL_N_NAME && (p->op == 10 || p->op == 11)) {
                /* *rest and **opts: an Array and a Hash Ruby builds for each call (their items the caller's) */
                own_var *v = ov_find(L, n->off + 1, p->val, true);
                if (v) v->flags = OV_ASSIGNED | OV_ITEMS;
            }
        own_body(L, n->b, n->off + 1, 3, depth);
        return;
    case TPL_N_RRETURN: case TPL_N_RNEXT: case TPL_N_RBREAK: case TPL_N_RRANGE:
        own_scan(L, n->a, scope, n->kind == TPL_N_RRETURN && !L->own_lam && scope && scope != OV_IVARS ? 3 : 2, depth);
        own_scan(L, n->b, scope, 2, depth);
        return;
    case TPL_N_OUTPUT: case TPL_N_COMPARE: case TPL_N_UNOP:
        own_body(L, n->a, scope, 0, depth);
        own_body(L, n->b, scope, 0, depth);
        return;
    case TPL_N_RSAFE: {
        const tpl_node *m = n->b;
        int rm = m && m->kind == TPL_N_RMETHOD && in_set(m->val, fresh_methods) ? 0 : mode ? 2 : 0;
        if (n->c) rm = 2;
        own_scan(L, n->a, scope, rm, depth);
        if (m && m->kind == TPL_N_RMETHOD) own_args(L, m->b, scope, 2, depth);
        if (m && m->c) own_scan(L, m->c, scope, 2, depth);
        if (n->c) own_scan(L, n->c, scope, 2, depth);
        return;
    }
    default:
        own_body(L, n->a, scope, 2, depth);
        own_body(L, n->b, scope, 2, depth);
        own_body(L, n->c, scope, 2, depth);
        return;
    }
}

static bool params_have(const tpl_node *p, tpl_value name, int depth)
{
    for (; p && depth < 50; p = p->next) {
        if ((p->kind == TPL_N_NAME || p->kind == TPL_N_KWARG) && p->val.len == name.len && memcmp(p->val.u.s, name.u.s, name.len) == 0)
            return true;
        if (p->kind != TPL_N_NAME && p->kind != TPL_N_KWARG && params_have(p->a, name, depth + 1)) return true;
    }
    return false;
}

/* name as a parameter of a block being lowered (the innermost that has it): 1 the memo of inject/reduce/
 * each_with_object given a new object (`inject("") { |s, x| s << x }`: no other name holds it), 2 + i the
 * item of block i's each loop, which a String-only change writes back (blk_push's wbslot), -1 another
 * parameter (an item of the receiver, held by it too), 0 none. */
static int blk_param(const erb_low *L, tpl_value name)
{
    for (int i = (L->nblk > 32 ? 32 : L->nblk) - 1; i >= 0; i--) {
        const tpl_node *blk = L->bblk[i], *call = L->bcall[i];
        if (!blk || !params_have(blk->a, name, 0)) continue;
        const tpl_node *memo = NULL;
        if (call && call->kind == TPL_N_RMETHOD && call->b && !call->b->next && call->b->kind == TPL_N_ARG) {
            if (name_is(call->val, "inject") || name_is(call->val, "reduce")) memo = blk->a;
            else if (name_is(call->val, "each_with_object") && blk->a) memo = blk->a->next;
            if (memo && (memo->kind != TPL_N_NAME || !fresh(call->b->a))) memo = NULL;
        }
        if (call && call->kind == TPL_N_RMETHOD && !call->b && call->a && name_is(call->val, "tap") && blk->a && !blk->a->next &&
            blk->a->kind == TPL_N_NAME && fresh(call->a))
            memo = blk->a;   /* (tap_fresh) */
        if (memo) return memo->val.len == name.len && memcmp(memo->val.u.s, name.u.s, name.len) == 0 ? 1 : -1;
        return i < 32 && L->bslot[i] ? 2 + i : -1;
    }
    return 0;
}

/* The variables linked to v (aliases, above), transitively, and the twins of those that read their state
 * key, into g (v not among them); false when one of them may hold the object otherwise than through the
 * links (escaped, a parameter, ...) or may hold a look-alike (then the change keeps the checks). */
typedef struct own_group {
    int n;
    uint32_t m[8];             /* the members' own_var entries */
    uint32_t slot[8];          /* own_site: whether m[i] held the object before the change */
    const tpl_node *root;      /* own_site: the variable changed */
} own_group;

static bool ov_group(erb_low *L, uint32_t vi, bool items, bool links_ok, own_group *g)
{
    erb_defs *d = L->defs;
    uint32_t q[9];
    int nq = 1, lits = (d->ov[vi].flags & (OV_STRLIT | OV_DERIVED)) ? 1 : 0;
    q[0] = vi;
    g->n = 0;
    for (int h = 0; h < nq; h++) {
        uint32_t ti = UINT32_MAX;
        /* (an @ivar assigned since keeps its twin: `x = @name; @name = "o"; x << "!"` changes `name`'s object) */
        if (!tpl_c_options(C)->erb_self &&
            (!(d->ov[q[h]].flags & OV_ASSIGNED) || d->ov[q[h]].scope == OV_IVARS) &&
            (d->ov[q[h]].scope == 0 || d->ov[q[h]].scope == OV_IVARS) &&
            !L->scope && d->ov[q[h]].len < 250) {
            /* its twin, while that reads the state key too */
            char buf[256];
            const own_var *x = &d->ov[q[h]];
            tpl_value tn;
            if (x->scope == OV_IVARS) tn = tpl_v_str(x->s + 1, x->len - 1);
            else {
                buf[0] = '@';
                memcpy(buf + 1, x->s, x->len);
                tn = tpl_v_str(buf, x->len + 1);
            }
            bool bare = x->scope == OV_IVARS;
            if (!(bare && def_find(L, tn, false))) {
                own_var *t = ov_find(L, bare ? 0 : OV_IVARS, tn, true);
                if (!t) return false;
                if (!(t->flags & OV_ASSIGNED) && (!(d->ov[q[h]].flags & OV_ASSIGNED) || !(t->flags & (OV_ESCAPED | OV_ITEMS))))
                    ti = (uint32_t)(t - d->ov);
            }
        }
        for (uint32_t k = 0; k <= d->nlinks; k++) {
            uint32_t o;
            bool twin = k == d->nlinks;
            if (twin) {
                if (ti == UINT32_MAX) break;
                o = ti;
            } else if (d->links[k][0] == q[h]) o = d->links[k][1];
            else if (d->links[k][1] == q[h]) o = d->links[k][0];
            else continue;
            bool seen = false;
            for (int i = 0; i < nq; i++) seen |= q[i] == o;
            if (seen) continue;
            const own_var *m = &d->ov[o];
            if (m->scope != OV_IVARS && m->scope != L->scope) {
                if (L->scope) return false;   /* a template local, out of a def's reach */
                continue;                     /* a def's local: gone when the def returned */
            }
            if (twin) {
                if ((m->flags & OV_ESCAPED) || (items && (m->flags & OV_ITEMS))) return false;
            } else {
                if (!links_ok) return false;
                if (m->flags & (OV_PARAM | OV_BPARAM | OV_ESCAPED | OV_NONFRESH | OV_DERIVED)) return false;
                if (L->scope && !(m->flags & OV_ASSIGNED)) return false;   /* its twin is out of a def's reach */
                if ((m->flags & OV_STRLIT) && ++lits > 1) return false;
            }
            if (nq == 9) return false;
            q[nq++] = o;
            g->m[g->n++] = o;
        }
    }
    if (g->n > 1 && (d->ov[vi].flags & OV_DERIVED)) return false;
    return true;
}

/* Whether variable r (NAME or RIVAR) holds, at a change through it, an object no other name holds
 * (or, with links, one only its linked variables hold: *g, written back after the change); *twin: it
 * still reads its state key (never assigned), which its twin (`@x` of `x`) reads too. */
static bool ov_owned(erb_low *L, const tpl_node *r, bool items, bool *twin, own_group *g)
{
    *twin = false;
    if (g) g->n = 0;
    int bp = r->kind == TPL_N_NAME ? blk_param(L, r->val) : 0;
    if (bp) return bp == 1;
    own_var *v = ov_find(L, var_scope(L, r), r->val, false);
    uint8_t f = v ? v->flags : 0;
    if (f & (OV_PARAM | OV_ESCAPED | OV_NONFRESH)) return false;
    if (items && (f & OV_ITEMS)) return false;
    if (g && !v) v = ov_find(L, var_scope(L, r), r->val, true);
    if (v) {
        own_group tmp;
        uint32_t vi = (uint32_t)(v - L->defs->ov);
        if (!ov_group(L, vi, items, g != NULL, g ? g : &tmp)) return false;
        v = &L->defs->ov[vi];   /* (ov may have moved) */
    }
    if (f & OV_ASSIGNED) return true;
    /* the state's value: in a def an @ivar's twin is out of reach */
    if (L->scope) return r->kind != TPL_N_RIVAR;
    char buf[256];
    tpl_value tn;
    if (r->kind == TPL_N_RIVAR) tn = tpl_v_str(r->val.u.s + 1, r->val.len - 1);
    else {
        if (r->val.len + 1 > sizeof buf) return false;
        buf[0] = '@';
        memcpy(buf + 1, r->val.u.s, r->val.len);
        tn = tpl_v_str(buf, r->val.len + 1);
    }
    own_var *t = ov_find(L, r->kind == TPL_N_RIVAR ? 0 : OV_IVARS, tn, false);
    if (t && ((t->flags & OV_ESCAPED) || (items && (t->flags & OV_ITEMS) && !(t->flags & OV_ASSIGNED)))) return false;
    *twin = !t || !(t->flags & OV_ASSIGNED);
    return true;
}

/* After a change through r's root variable that still reads its state key: its twin (`@x` for `x`,
 * `x` for `@x`), when that still reads the key too, holds the changed value as well (the state's
 * value is one object for both in Ruby). */
static void twin_sync(erb_low *L, const tpl_node *root)
{
    if (L->bound_store) return;   /* (after a change own_check mode 4 let pass: unreachable, or no change) */
    tpl_value tn;
    char *buf = NULL;
    if (root->kind == TPL_N_RIVAR) tn = tpl_v_str(root->val.u.s + 1, root->val.len - 1);
    else {
        buf = tpl_arena_alloc(tpl_c_arena(C), root->val.len + 1);
        if (!buf) { tpl_c_nomem(C, root->off); return; }
        buf[0] = '@';
        memcpy(buf + 1, root->val.u.s, root->val.len);
        tn = tpl_v_str(buf, root->val.len + 1);
    }
    uint32_t slot;
    if (!tpl_c_lookup(C, tn, &slot)) {
        if (!tpl_c_lookup_root(C, tn, &slot)) slot = tpl_c_declare_root(C, tn);
    }
    tpl_c_emit(C, TPL_OP_JSET, slot, 0);
    uint32_t pos = tpl_c_word(C, 0);
    expr(L, (tpl_node *)root);
    tpl_c_emit(C, TPL_OP_STORE_SLOT, slot, -1);
    tpl_c_patch_word(C, pos, tpl_c_here(C));
}

/* The check before a change `r.m(...)` (or `r[k] = v`, m "[]="): true when nothing is to be done; else
 * a located compile error (a String-only method), or *check is set to the (unshared) mode the call
 * must run on its receiver first. *twin: the root variable's twin is synced after the change. */
/* A synthesized variable node for own_var v. */
static tpl_node *ov_node(erb_low *L, const own_var *v, uint32_t off)
{
    tpl_node *n = tpl_node_new(tpl_c_arena(C), v->scope == OV_IVARS ? TPL_N_RIVAR : TPL_N_NAME, off);
    if (!n) { tpl_c_nomem(C, off); return NULL; }
    n->val = tpl_v_str(v->s, v->len);
    return n;
}

/* Before a change through g->root: whether each linked variable holds the same object, into a slot. */
static void group_before(erb_low *L, own_group *g, uint32_t off)
{
    for (int i = 0; i < g->n; i++) {
        char nm[24];
        snprintf(nm, sizeof nm, "(same %d)", i);
        tpl_value sv = tpl_v_str(tpl_arena_strdup(tpl_c_arena(C), nm, strlen(nm)), (uint32_t)strlen(nm));
        if (!sv.u.s) { tpl_c_nomem(C, off); return; }
        const own_var *m = &L->defs->ov[g->m[i]];
        tpl_node *mn = ov_node(L, m, off);
        if (!mn) return;
        uint32_t ms;
        if (!L->in_def && !(m->flags & OV_ASSIGNED) && !tpl_c_lookup(C, mn->val, &ms) && !tpl_c_lookup_root(C, mn->val, &ms))
            tpl_c_declare_root(C, mn->val);   /* (read from the state until the write-back fills it, also in a loop's next turn) */
        if (!tpl_c_lookup(C, sv, &g->slot[i])) g->slot[i] = tpl_c_declare(C, sv);
        if (L->in_def && !tpl_c_lookup(C, mn->val, &ms)) {
            /* a def's local assigned only further on (`o.merge!(x); y = o`): it holds nothing yet */
            tpl_c_emit(C, TPL_OP_FALSE, 0, 1);
            tpl_c_emit(C, TPL_OP_STORE_SLOT, g->slot[i], -1);
            continue;
        }
        expr(L, (tpl_node *)g->root);
        if (mn->kind == TPL_N_NAME && L->defs->npend && pend_has(L, mn->val) && tpl_c_lookup(C, mn->val, &ms))
            load_local(L, ms, mn->val);   /* a block-local assigned further on: what its slot holds (not Ruby's NameError of a read) */
        else
            expr(L, mn);
        tpl_c_at(C, off);
        tpl_c_emit(C, TPL_OP_CALL_METHOD_RB, tpl_c_name(C, S("equal?")), -1);
        tpl_c_word(C, TPL_ARGW(1, 0, TPL_NO_KW));
        tpl_c_word(C, 0);
        tpl_c_emit(C, TPL_OP_STORE_SLOT, g->slot[i], -1);
    }
}

/* After the change: the root's value into each linked variable that held the same object (and into its
 * twin while that reads their state key). */
static void group_after(erb_low *L, const own_group *g, uint32_t off)
{
    if (L->bound_store) return;   /* (after a change own_check mode 4 let pass: unreachable, or no change) */
    for (int i = 0; i < g->n; i++) {
        const own_var *m = &L->defs->ov[g->m[i]];
        tpl_node *mn = ov_node(L, m, off);
        if (!mn) return;
        tpl_value name = tpl_v_str(m->s, m->len);
        uint32_t slot = 0;
        if (!L->in_def && !tpl_c_lookup(C, name, &slot) && !tpl_c_lookup_root(C, name, &slot)) {
            if (m->flags & OV_ASSIGNED) continue;   /* a block's local, out of scope here */
            slot = tpl_c_declare_root(C, name);
        }
        if (L->in_def && !tpl_c_lookup(C, name, &slot)) continue;   /* (a def's local not assigned yet) */
        load_local(L, g->slot[i], S("(same)"));
        uint32_t skip = tpl_c_emit(C, TPL_OP_JF_RB, 0, -1);
        expr(L, (tpl_node *)g->root);
        if (L->in_def) store_var(L, name, off);
        else {
            tpl_c_at(C, off);
            tpl_c_emit(C, TPL_OP_STORE_SLOT, slot, -1);
        }
        tpl_c_patch(C, skip, tpl_c_here(C));
    }
}

/* own_site's refusal text for a change m of the binding's object bound, into L->bound_msg; false on
 * allocation failure. (Its own frame, never inlined: the lowering is recursive.) */
static __attribute__((noinline)) bool bound_refusal(erb_low *L, tpl_value m, const tpl_node *bound, uint32_t off)
{
    bool iv = bound->kind == TPL_N_RIVAR;
    char buf[400];
    int k = snprintf(buf, sizeof buf, "unsupported Ruby construct: `%.*s' changes `%.*s' in place, the binding's object (%s), "
                     "which Ruby's ERB changes for the caller too; tpl would change a copy", (int)(m.len > 60 ? 60 : m.len), m.u.s,
                     (int)(bound->val.len > 60 ? 60 : bound->val.len), bound->val.u.s,
                     iv ? "an instance variable of self" : "a local variable of the binding");
    char *keep = tpl_arena_strdup(tpl_c_arena(C), buf, k > 0 && (size_t)k < sizeof buf ? (size_t)k : sizeof buf - 1);
    if (!keep) { tpl_c_nomem(C, off); return false; }
    L->bound_msg = tpl_v_str(keep, strlen(keep));
    return true;
}

/* Whether statement s (a block body's, whole) assigns `name` an object no other name holds: `v = v.strip`, or a
 * multiple assignment's `k, v = v.split(":")` (its hidden local's fresh items). */
static bool rebinds_fresh(erb_low *L, const tpl_node *s, tpl_value name, int depth)
{
    if (!s || depth > 4) return false;
    if (s->kind == TPL_N_RSTMTS) {
        for (const tpl_node *t = s->b; t; t = t->next)
            if (rebinds_fresh(L, t, name, depth + 1)) return true;
        return false;
    }
    if (s->kind != TPL_N_SET || !s->a || s->a->kind != TPL_N_NAME || s->a->val.len != name.len ||
        memcmp(s->a->val.u.s, name.u.s, name.len) != 0)
        return false;
    const tpl_node *v = s->b;
    if (v && v->kind == TPL_N_GETITEM && is_masgn_tmp(v->a)) {
        own_var *tv = ov_find(L, L->scope, v->a->val, false);
        return tv && (tv->flags & OV_ASSIGNED) && !(tv->flags & (OV_ITEMS | OV_ESCAPED));
    }
    /* (a string literal may be frozen: frozen_string_literal) */
    return v && fresh(v) && v->kind != TPL_N_OR && v->kind != TPL_N_AND && v->kind != TPL_N_CONST;
}

/* A block's parameter that a whole statement of that block's body, before the one changing it, assigned an
 * object no other name holds (mongodb's `[@p].flatten.each do |v| k, v = v.split(c); v.strip!`): the change is
 * Ruby's on that new object, the item stays as it was. The variable must never escape nor take a value held
 * elsewhere anywhere in the template (the scan is by name, not by flow). */
static bool param_rebound(erb_low *L, tpl_value name, uint32_t off)
{
    int i = (L->nblk > 32 ? 32 : L->nblk) - 1;
    for (; i >= 0; i--)
        if (L->bblk[i] && params_have(L->bblk[i]->a, name, 0)) break;
    if (i < 0) return false;
    own_var *v = ov_find(L, L->scope, name, false);
    if (!v || !(v->flags & OV_ASSIGNED) || (v->flags & (OV_NONFRESH | OV_ESCAPED | OV_ITEMS | OV_PARAM))) return false;
    for (const tpl_node *s = L->bblk[i]->b; s && s->next && s->next->off <= off; s = s->next)
        if (rebinds_fresh(L, s, name, 0)) return true;
    return false;
}

/* A change statement `x.m!(c...)` (a whole statement: its receiver a variable, its arguments constants). */
static bool bare_change(const tpl_node *s)
{
    if (!s || s->kind != TPL_N_RMETHOD || !s->a || s->a->kind != TPL_N_NAME || s->c) return false;
    if (!(s->val.len > 1 && s->val.u.s[s->val.len - 1] == '!') && !in_set(s->val, any_changers)) return false;
    for (const tpl_node *g = s->b; g; g = g->next)
        if (g->kind != TPL_N_ARG || !g->a || g->a->kind != TPL_N_CONST) return false;
    return true;
}

/* A condition that only reads: comparisons, truth tests and reading methods of variables and constants. */
static bool plain_cond(const tpl_node *n, int depth)
{
    if (!n || depth > 8) return false;
    switch (n->kind) {
    case TPL_N_NAME: case TPL_N_CONST: case TPL_N_RIVAR:
        return true;
    case TPL_N_AND: case TPL_N_OR:
        return plain_cond(n->a, depth + 1) && plain_cond(n->b, depth + 1);
    case TPL_N_COMPARE:
        for (const tpl_node *o = n->b; o; o = o->next)
            if (!plain_cond(o->a, depth + 1)) return false;
        return plain_cond(n->a, depth + 1);
    case TPL_N_RMETHOD:
        if (n->c || !n->a || !in_set(n->val, fresh_methods)) return false;
        for (const tpl_node *g = n->b; g; g = g->next)
            if (g->kind != TPL_N_ARG || !plain_cond(g->a, depth + 1)) return false;
        return plain_cond(n->a, depth + 1);
    default:
        return false;
    }
}

/* A change statement, bare or `x.m! if cond` (a reading condition, no else); *recv its receiver. */
static bool change_stmt(const tpl_node *s, const tpl_node **recv)
{
    if (s && s->kind == TPL_N_IF && !s->c && s->b && !s->b->next && plain_cond(s->a, 0)) s = s->b;
    if (!bare_change(s)) return false;
    *recv = s->a;
    return true;
}

/* The statement list (its first node) holding the statement whose receiver node is r, searched under n (a
 * bounded walk: *budget nodes); NULL when none. */
static const tpl_node *list_of_change(const tpl_node *n, const tpl_node *r, int depth, int *budget)
{
    for (const tpl_node *head = n, *s = n; s; s = s->next) {
        if (--*budget < 0 || depth > 40) return NULL;
        if (s->kind == TPL_N_RMETHOD && s->a == r) return head;
        if (s->kind == TPL_N_IF && s->b && s->b->kind == TPL_N_RMETHOD && s->b->a == r && !s->b->next) return head;
        if (s->kind == TPL_N_RDEF) continue;
        const tpl_node *kids[3] = { s->a, s->b, s->c };
        for (int k = 0; k < 3; k++) {
            const tpl_node *h = kids[k] ? list_of_change(kids[k], r, depth + 1, budget) : NULL;
            if (h) return h;
        }
    }
    return NULL;
}

/* A change `x.strip!` as a whole statement of a block's body (or of a branch in it) right after a whole statement
 * that assigned x an object no other name holds (mongodb's `[@p].flatten.each do |v| k, v = v.split(c)` then
 * `k.strip!` and `v.strip!`), with only text and other such changes between: Ruby changes that new object,
 * which nothing else holds yet (what x held before, a parameter's item, stays as it was), whatever x does
 * further on. */
static bool rebound_before(erb_low *L, const tpl_node *r)
{
    if (!L->nblk || !r || r->kind != TPL_N_NAME) return false;
    const tpl_node *blk = L->bblk[(L->nblk > 32 ? 32 : L->nblk) - 1];
    int budget = 20000;
    const tpl_node *head = blk ? list_of_change(blk->b, r, 0, &budget) : NULL;
    bool rebound = false;
    for (const tpl_node *s = head; s; s = s->next) {
        const tpl_node *recv = NULL;
        bool ch = change_stmt(s, &recv);
        if (recv == r) return rebound;
        if ((s->kind == TPL_N_RMETHOD && s->a == r) || (s->kind == TPL_N_IF && s->b && s->b->a == r)) return false;
        if (rebinds_fresh(L, s, r->val, 0)) rebound = true;
        else if (s->kind != TPL_N_TEXT && !ch) rebound = false;
    }
    return false;
}

static bool own_site(erb_low *L, const tpl_node *r, tpl_value m, uint32_t off, int *check, const tpl_node **twin,
                     int *wbframe, const tpl_node **chknode, own_group *grp)
{
    *check = 0;
    *twin = NULL;
    grp->n = 0;
    if (wbframe) *wbframe = -1;
    if (chknode) *chknode = r;
    int kind = in_set(m, str_changers) ? 1 : in_set(m, any_changers) ? 3 : in_set(m, ct_changers) ? 2
             : (m.len > 1 && m.u.s[m.len - 1] == '!' && !name_is(m, "!=")) ? 2 : 0;
    if (!kind || !r) return true;
    while (mutates_receiver(r)) r = r->a;   /* buf << a << b: buf's */
    const tpl_node *root = item_root(r);
    bool tw = false, ok;
    if (root && (root->kind == TPL_N_NAME || root->kind == TPL_N_RIVAR) && !name_is(root->val, "(safe)"))
        ok = ov_owned(L, root, root != r, &tw, grp);
    else
        ok = fresh(r);
    if (ok && tpl_c_options(C)->erb_self) {
        /* a binding (Tpl::ERB#result, result_with_hash): a local or @ivar the template did not assign holds the
         * caller's very object, which Ruby's ERB changes in place (the caller and self's methods see it); tpl
         * changes its own copy: refused, never silently different */
        const tpl_node *bound = tw ? root : NULL;
        for (int i = 0; !bound && i < grp->n; i++) {
            const own_var *m = &L->defs->ov[grp->m[i]];
            if (!(m->flags & OV_ASSIGNED) && (m->scope == 0 || m->scope == OV_IVARS)) bound = ov_node(L, m, off);
        }
        if (bound) {
            /* refused when it runs (own_check mode 4), unless the object is frozen: then the method raises
             * Ruby's FrozenError, which a rescue takes, as in Ruby (`@list << 1` of a frozen @list) */
            if (!bound_refusal(L, m, bound, off)) return false;
            *check = 4;
        }
    }
    if (ok && *check == 4) {   /* (nothing to write back: the change raises FrozenError or is refused) */
        grp->n = 0;
        return true;
    }
    if (ok) {
        if (tw) *twin = root;
        if (grp->n) {
            grp->root = root;
            group_before(L, grp, off);
        }
        return true;
    }
    grp->n = 0;
    if (rebound_before(L, r) || (r->kind == TPL_N_NAME && param_rebound(L, r->val, off))) return true;
    if ((kind == 1 || name_is(m, "freeze")) && wbframe && r->kind == TPL_N_NAME) {
        /* the item of an each loop over a variable's array (no other name holds it: the loop's param did
         * not escape): written back after the change */
        int bp = blk_param(L, r->val);
        own_var *pv = ov_find(L, L->scope, r->val, false);
        if (bp >= 2 && !(pv && (pv->flags & (OV_ESCAPED | OV_ASSIGNED)))) { *wbframe = bp - 2; return true; }
    }
    if (kind == 1) {
        const char *what = r->kind == TPL_N_NAME || r->kind == TPL_N_RIVAR ? "" : "an item or result that";
        tpl_c_error(C, off, "unsupported Ruby construct: String#%.*s on %s%.*s%s another name may hold (a block or def "
                    "parameter, or a variable assigned from or stored into another): tpl strings are values, the other "
                    "name would not see the change", (int)m.len, m.u.s, *what ? what : "`",
                    *what ? 0 : (int)r->val.len, *what ? "" : r->val.u.s, *what ? "" : "', which");
        return false;
    }
    *check = kind;
    return true;
}

/* Emits the (unshared) check on the value on top of the stack (kept). */
static void own_check(erb_low *L, int check, tpl_value m, uint32_t off)
{
    tpl_c_emit(C, TPL_OP_DUP, 0, 1);
    tpl_c_emit(C, TPL_OP_CONST, tpl_c_const(C, tpl_v_int(check)), 1);
    tpl_c_emit(C, TPL_OP_CONST, tpl_c_const(C, check == 4 ? L->bound_msg : m), 1);   /* (mode 4: the refusal's text) */
    tpl_c_at(C, off);
    tpl_c_emit(C, TPL_OP_CALL_METHOD_RB, tpl_c_name(C, S("(unshared)")), -2);
    tpl_c_word(C, TPL_ARGW(2, 0, TPL_NO_KW));
    tpl_c_word(C, 0);
    tpl_c_emit(C, TPL_OP_POP, 0, -1);
}

/* After a String-only change of the item n of block frame i's each loop: recv[index] = n, the
 * receiver's item changed as Ruby's shared String is (`names.each { |n| n.strip! }`). */
static void item_write_back(erb_low *L, int i, const tpl_node *n, uint32_t off)
{
    tpl_arena *a = tpl_c_arena(C);
    tpl_node *g = tpl_node_new(a, TPL_N_GETITEM, off), *ix = tpl_node_new(a, TPL_N_NAME, off);
    if (!g || !ix) { tpl_c_nomem(C, off); return; }
    tpl_value iv = S("(item index)");
    uint32_t tmp;
    if (!tpl_c_lookup(C, iv, &tmp)) tmp = tpl_c_declare(C, iv);
    tpl_c_at(C, off);
    tpl_c_emit(C, TPL_OP_LOOP_INDEX_RB, L->bslot[i] - 1, 1);
    tpl_c_emit(C, TPL_OP_STORE_SLOT, tmp, -1);
    ix->val = iv;
    g->a = (tpl_node *)L->bcall[i]->a;
    g->b = ix;
    expr(L, (tpl_node *)n);
    index_store(L, g, off, true);
    const tpl_node *root = item_root(g->a);
    bool tw;
    if (root && ov_owned(L, root, true, &tw, NULL) && tw) twin_sync(L, root);
}

/* `r[k] = v` (n a SET): own_site's check of r, emitted; false after a compile error. */
static bool index_site(erb_low *L, tpl_node *n, const tpl_node **twin, own_group *g)
{
    int chk;
    if (!own_site(L, n->a->a, S("[]="), n->off, &chk, twin, NULL, NULL, g)) return false;
    L->site_bound = chk == 4;
    if (chk) {
        expr(L, n->a->a);
        own_check(L, chk, S("[]="), n->off);
        tpl_c_emit(C, TPL_OP_POP, 0, -1);
    }
    return true;
}


/* Whether Ruby's m, called without a block, returns an Enumerator (Enumerable, Array, Hash,
 * Integer and String methods that yield): m.with_index { } then runs on that Enumerator. Any
 * other method returns its value (first(3), sort, keys: an Array), whose own each_with_index runs. */
static bool blockless_enumerator(tpl_value m)
{
    static const char *const names[] = {
        "select", "filter", "filter_map", "reject", "find", "detect", "find_index", "find_all", "partition",
        "group_by", "chunk_while", "slice_when", "sort_by", "min_by", "max_by", "minmax_by", "flat_map",
        "collect_concat", "take_while", "drop_while", "chunk", "each_char", "each_byte", "each_line",
        "each_key", "each_value", "each_with_object", "upto", "downto", "step", "cycle", "map!", "collect!",
        "select!", "filter!", "reject!", "keep_if", "delete_if", "each_index", "transform_values",
        "transform_keys", "each_codepoint", "each_grapheme_cluster",
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (name_is(m, names[i])) return true;
    return false;
}

/* The m of m.with_index { } whose Enumerator runs m on the block's values (ruby.c enum_blockful, and
 * filter_map): no arguments, each_with_object one. */
static bool enum_by_index(tpl_value m, const tpl_node *args)
{
    static const char *const names[] = { "select", "filter", "find_all", "reject", "find", "detect", "find_index",
        "partition", "group_by", "sort_by", "min_by", "max_by", "flat_map", "collect_concat", "filter_map" };
    if (name_is(m, "each_with_object")) return args && !args->next && args->kind != TPL_N_KWARG;
    if (args) return false;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (name_is(m, names[i])) return true;
    return false;
}

/* ------------------------------------------------------------------ Procs */

static erb_proc *proc_named(erb_low *L, tpl_value name)
{
    erb_defs *d = L->defs;
    uint32_t slot;
    if (!d->nprocs || !tpl_c_lookup(C, name, &slot)) return NULL;
    for (int i = 0; i < d->nprocs; i++) {
        erb_proc *p = &d->procs[i];
        if (p->scope == L->scope && p->slot == slot && p->name.len == name.len && memcmp(p->name.u.s, name.u.s, name.len) == 0) return p;
    }
    return NULL;
}

static void proc_forget(erb_low *L, tpl_value name)
{
    erb_defs *d = L->defs;
    for (int i = 0; i < d->nprocs; i++) {
        erb_proc *p = &d->procs[i];
        if (p->scope == L->scope && p->name.len == name.len && memcmp(p->name.u.s, name.u.s, name.len) == 0) d->procs[i--] = d->procs[--d->nprocs];
    }
}

/* The variable of a Proc (not a block or def parameter of the same name: another slot). */
static erb_proc *proc_var(erb_low *L, const tpl_node *n)
{
    return n && n->kind == TPL_N_NAME ? proc_named(L, n->val) : NULL;
}

/* lambda { }, proc { }, Proc.new { }, ->(x) { }: a Proc literal. */
static bool is_proc_lit(const tpl_node *n)
{
    if (!n || n->kind != TPL_N_RMETHOD || !n->c || n->c->kind != TPL_N_RBLOCK || n->c->op == 7 || n->c->op == 8 || n->b) return false;
    if (!n->a) return name_is(n->val, "lambda") || name_is(n->val, "proc");
    return n->a->kind == TPL_N_RCONSTNAME && name_is(n->a->val, "Proc") && name_is(n->val, "new");
}

/* A receiver-less call of a Kernel method tpl runs itself (loop, block_given?, raise without
 * arguments) in a program compiled for a self (erb_self): Ruby runs self's own method of that
 * name when self has one, which tpl cannot (a template block given to a Ruby method). The guard is a
 * call of the name the state may shadow (the builtin String of a marker, popped): the Ruby gem
 * shadows the name when self has its own method (ruby/ext/tpl/tpl_ext.c, self_fns), and its call
 * with the marker is the gem's located refusal. */
#define SELF_KERNEL_MARK "\001tpl:self-kernel"
static void self_kernel_guard(erb_low *L, tpl_value name, uint32_t off)
{
    if (!tpl_c_options(C)->erb_self || def_find(L, name, false)) return;
    tpl_c_emit(C, TPL_OP_CONST, tpl_c_const(C, tpl_v_str(SELF_KERNEL_MARK, sizeof SELF_KERNEL_MARK - 1)), 1);
    tpl_c_at(C, off);
    tpl_c_emit(C, TPL_OP_CALL_NAME, tpl_c_name(C, name), 0);
    tpl_c_word(C, (uint32_t)TPL_B_RKERNEL_String);
    tpl_c_word(C, TPL_ARGW(1, 0, TPL_NO_KW));
    tpl_c_emit(C, TPL_OP_POP, 0, -1);
}

/* lambda { } / proc { } without a receiver (not ->() { }, which is the syntax's own lambda, its
 * block at the arrow): Ruby calls self's own lambda/proc when self has one — the guard's located
 * refusal then, as for loop */
static void proc_kernel_guard(erb_low *L, const tpl_node *lit)
{
    if (!lit->a && lit->c && lit->c->off != lit->off) self_kernel_guard(L, lit->val, lit->off);
}

/* The required and optional parameters of a Proc literal's block (false: refused, with the error). */
static bool proc_sig(erb_low *L, const tpl_node *lit, int *nreq, int *nopt, bool *neg)
{
    const tpl_node *blk = lit->c;
    *nreq = *nopt = 0;
    *neg = false;
    bool lam = name_is(lit->val, "lambda");
    if (lam ? !lambda_positional(blk->a) : !params_simple(blk->a)) {   /* the block binds its own (block_sub) */
        int cnt;
        return bind_desc(L, blk->a, lam, &cnt, nreq, nopt, neg) != UINT32_MAX;
    }
    for (const tpl_node *p = blk->a; p; p = p->next) {
        if (!params_plain(L, p)) return false;
        if (p->kind == TPL_N_KWARG && p->op) {
            tpl_c_error(C, p->off, "unsupported Ruby construct: keyword parameters of a lambda");
            return false;
        }
        if (p->kind == TPL_N_KWARG) { (*nopt)++; continue; }
        if (*nopt) { tpl_c_error(C, p->off, "unsupported Ruby construct: a required parameter after optional ones"); return false; }
        (*nreq)++;
    }
    if (*nreq + *nopt > 64) { tpl_c_error(C, blk->off, "too many block parameters"); return false; }
    *neg = *nopt > 0;   /* (a lambda's optional parameters: a proc binding its own has none) */
    return true;
}

/* Lowers a Proc literal's block as a block subroutine (jumped over); its block word, 0 on an error. */
static uint32_t proc_block_bl(erb_low *L, tpl_node *lit, bool *lam, int *nreq, int *nopt, bool *neg, erb_blocals *bl)
{
    *lam = name_is(lit->val, "lambda");
    if (!proc_sig(L, lit, nreq, nopt, neg)) return 0;
    proc_kernel_guard(L, lit);
    L->pending_call = NULL;
    L->sub_lambda = *lam;
    uint32_t w = block_sub(L, lit->c, bl);
    blocal_unset(L, bl);
    return w;
}

static uint32_t proc_block(erb_low *L, tpl_node *lit, bool *lam, int *nreq, int *nopt, bool *neg)
{
    erb_blocals bl = { .n = 0 };
    return proc_block_bl(L, lit, lam, nreq, nopt, neg, &bl);
}

/* Whether the tree n uses the name (a Proc's block that calls the Proc). */
static bool mentions(const tpl_node *n, tpl_value name, int depth)
{
    for (; n && depth < 200; n = n->next) {
        if (n->kind == TPL_N_NAME && n->val.len == name.len && memcmp(n->val.u.s, name.u.s, name.len) == 0) return true;
        if (mentions(n->a, name, depth + 1) || mentions(n->b, name, depth + 1) || mentions(n->c, name, depth + 1) ||
            mentions(tpl_node_d(n), name, depth + 1) || mentions(tpl_node_e(n), name, depth + 1))
            return true;
    }
    return false;
}

/* A Proc's value: nil.(proc)(sig) with its block (stdlib/ruby/ruby.c proc_value; neg: its arity is -(nreq + 1)). */
static void proc_value(erb_low *L, uint32_t w, int nreq, int nopt, bool lam, bool neg)
{
    tpl_c_emit(C, TPL_OP_NONE, 0, 1);
    tpl_c_emit(C, TPL_OP_CONST, tpl_c_const(C, tpl_v_int((int64_t)nreq | (int64_t)nopt << 8 | (int64_t)lam << 16 | (int64_t)neg << 17)), 1);
    tpl_c_emit(C, TPL_OP_CALL_METHOD_RB, tpl_c_name(C, S("(proc)")), -1);
    tpl_c_word(C, TPL_ARGW(1, 0, TPL_NO_KW));
    tpl_c_word(C, w);
}

/* f = <Proc literal>: the block subroutine, then its entry into f. */
static void read_in_block(erb_low *L, uint32_t slot)
{
    erb_defs *d = L->defs;
    for (int i = 0; i < d->nrdb; i++)
        if (d->rdb[i][0] == L->scope && d->rdb[i][1] == slot) return;
    if (d->nrdb == 128) { d->rdb_full = true; return; }
    d->rdb[d->nrdb][0] = L->scope;
    d->rdb[d->nrdb++][1] = slot;
}

static bool read_in_block_before(erb_low *L, uint32_t slot)
{
    erb_defs *d = L->defs;
    if (d->rdb_full) return true;
    for (int i = 0; i < d->nrdb; i++)
        if (d->rdb[i][0] == L->scope && d->rdb[i][1] == slot) return true;
    return false;
}

static void proc_assign(erb_low *L, tpl_node *n)
{
    tpl_value name = n->a->val;
    erb_defs *d = L->defs;
    bool rec = mentions(n->b->c->b, name, 0) || mentions(n->b->c->a, name, 0);
    erb_proc *p = proc_named(L, name);
    uint32_t slot;
    if (p) {
        /* another Proc into the variable: the variable's value is the Proc (proc_value), so a call runs the one
         * it holds when it runs; what reads the Proc's signature at compile time (&f, a call from its own
         * block) takes this one's and refuses a variable assigned two Procs (multi) */
        if (rec || p->rec) {
            tpl_c_error(C, n->off, "unsupported Ruby construct: a second Proc assigned to `%.*s' where one of them calls `%.*s'",
                        (int)name.len, name.u.s, (int)name.len, name.u.s);
            return;
        }
        slot = p->slot;
        memset(p, 0, sizeof *p);
        p->multi = true;
    } else {
        if (d->nprocs >= 64) { tpl_c_error(C, n->off, "unsupported Ruby construct: more than 64 Proc variables"); return; }
        if (!tpl_c_lookup(C, name, &slot)) slot = tpl_c_declare(C, name);
        else if (read_in_block_before(L, slot)) {
            /* (`od = nil; ev = ->(n) { od.(n) }; od = ->(n) { n }`: ev's read of od was compiled as any value's) */
            tpl_c_error(C, n->off, "unsupported Ruby construct: a Proc assigned to `%.*s' after a block that reads `%.*s' "
                        "(assign the Proc first)", (int)name.len, name.u.s, (int)name.len, name.u.s);
            return;
        }
        for (int i = 0; i < d->nprocs; i++)   /* a Proc of an outer scope's variable: it holds this one after the block */
            if (d->procs[i].slot == slot && d->procs[i].name.len == name.len && memcmp(d->procs[i].name.u.s, name.u.s, name.len) == 0) {
                if (rec || d->procs[i].rec) {
                    tpl_c_error(C, n->off, "unsupported Ruby construct: a second Proc assigned to `%.*s' where one of them calls `%.*s'",
                                (int)name.len, name.u.s, (int)name.len, name.u.s);
                    return;
                }
                d->procs[i].multi = true;
            }
        p = &d->procs[d->nprocs++];
        memset(p, 0, sizeof *p);
    }
    p->name = name;
    p->scope = L->scope;
    p->slot = slot;
    bool lam;
    /* a Proc calling itself: each call has its own parameters and block-local variables, as each Ruby call of
     * the block has, so a call from inside it keeps them: the slots its block declares (between two markers)
     * and its block-local variables (stdlib/ruby/ruby.c proc_call, runtime/vm.c tpl_rb_yield_keep) */
    p->rec = rec;
    p->method = n->b == L->method_lit;
    p->lambda = name_is(n->b->val, "lambda");
    uint32_t s0 = p->rec ? tpl_c_slot(C) : 0;
    erb_blocals bl = { .n = 0 };
    uint32_t w = proc_block_bl(L, n->b, &lam, &p->nreq, &p->nopt, &p->neg, &bl);
    if (!w) return;
    p->word = w;
    p->lambda = lam;
    if (p->rec && p->nsites) {
        uint32_t s1 = tpl_c_slot(C);
        size_t cap = (size_t)(s1 - s0) * 6 + (size_t)bl.n * 6 + 1, len = 0;
        char *keep = tpl_arena_alloc(tpl_c_arena(C), cap);
        if (!keep) { tpl_c_nomem(C, n->off); return; }
        for (uint32_t sl = s0 + 1; sl < s1; sl++) len += (size_t)snprintf(keep + len, cap - len, "%s%u", len ? "," : "", sl);
        for (int i = 0; i < bl.n; i++)
            if (bl.slot[i] < s0) len += (size_t)snprintf(keep + len, cap - len, "%s%u", len ? "," : "", bl.slot[i]);
        uint32_t kc = tpl_c_const(C, tpl_v_str(keep, len));
        for (int i = 0; i < p->nsites; i++) {
            tpl_c_patch(C, p->site_const[i], kc);
            tpl_c_patch_word(C, p->site_word[i], w);
        }
    }
    tpl_c_at(C, n->off);
    proc_value(L, w, p->nreq, p->nopt, p->lambda, p->neg);
    L->proc_storing = true;
    store_var(L, name, n->off);
    L->proc_storing = false;
}

enum { PROC_CALL = 0, PROC_ARITY = 1 << 25, PROC_LAMBDA_P = 1 << 26, PROC_KEEP = 1 << 27, PROC_KW = 1 << 28 };

/* recv.call(args) (and .(), [], yield, ===), recv.arity, recv.lambda? of a Proc variable or literal:
 * recv.(call)(meta, args...) with the Proc's block (stdlib/ruby/ruby.c proc_call). */
/* Pushes the NKW keyword arguments of ARGL (TPL_N_KWARG nodes) as one Hash of Symbol keys, in
 * their order: proc calls' and yield's last argument when they pass keywords. */
static void kw_hash(erb_low *L, tpl_node *argl, int nkw)
{
    tpl_c_emit(C, TPL_OP_NONE, 0, 1);
    int n = 0;
    tpl_node *dstar = NULL;
    for (tpl_node *a = argl; a; a = a->next) {
        if (a->kind == TPL_N_STARKW && !dstar) dstar = a;
        if (a->kind != TPL_N_KWARG || dstar) continue;
        tpl_value kn = a->val;
        kn.flags |= TPL_F_SYMBOL;
        tpl_c_emit(C, TPL_OP_CONST, tpl_c_const(C, kn), 1);
        expr(L, a->a);
        n++;
    }
    (void)nkw;
    tpl_c_emit(C, TPL_OP_BUILD_LIST, (uint32_t)(2 * n), 1 - 2 * n);
    tpl_c_emit(C, TPL_OP_CALL_METHOD_RB, tpl_c_name(C, S("(hash)")), -1);
    tpl_c_word(C, TPL_ARGW(1, 0, TPL_NO_KW));
    tpl_c_word(C, 0);
    /* from the first **hash on, in the call's order (args_dyn): each **h's pairs, each keyword */
    dstar_args(L, dstar, true);
}

/* The last argument of ARGL when it is a brace-less Hash (`f(1, "k" => 2)`, parse's hash_args): Ruby
 * passes it as keywords (non-Symbol keys too, since 2.7) to what takes keywords, else as a Hash. */
static const tpl_node *bare_hash(const tpl_node *argl)
{
    const tpl_node *a = argl;
    while (a && a->next) a = a->next;
    return a && a->kind == TPL_N_ARG && a->a && a->a->kind == TPL_N_DICT && a->a->op == 1 ? a : NULL;
}

static void proc_op(erb_low *L, tpl_node *recv, tpl_node *argl, int what, uint32_t off, bool used)
{
    uint32_t w;
    bool lam;
    int nreq, nopt;
    erb_proc *pv = proc_var(L, recv);
    int nkw = 0;
    for (const tpl_node *a = argl; a; a = a->next) {
        if (a->kind == TPL_N_KWARG || a->kind == TPL_N_STARKW) { nkw++; continue; }   /* (**h: its pairs among the keywords, kw_hash) */
        if (a->kind != TPL_N_ARG || nkw) { tpl_c_error(C, a->off, "unsupported Ruby construct: a splat or block argument in a call of a Proc"); return; }
    }
    if (nkw && what != PROC_CALL) { tpl_c_error(C, off, "wrong number of arguments (given 1, expected 0) (ArgumentError)"); return; }
    const tpl_node *bare = !nkw && what == PROC_CALL ? bare_hash(argl) : NULL;
    int k = count_params(argl) - nkw + (nkw ? 1 : 0);
    if (k > 200) { tpl_c_error(C, off, "too many arguments"); return; }
    bool inside = pv && !pv->word;   /* a call of the Proc from its own block: word and kept slots patched (proc_assign) */
    if (inside && (!pv->rec || pv->nsites >= 16)) {
        tpl_c_error(C, recv->off, "unsupported Ruby construct: a Proc calling itself in more than 16 places (`%.*s' inside its own block)",
                    (int)pv->name.len, pv->name.u.s);
        return;
    }
    if (pv) {
        w = pv->word;
        lam = pv->lambda;
        nreq = pv->nreq;
        nopt = pv->nopt;
        load_local(L, pv->slot, pv->name);
    } else {
        bool neg;
        w = proc_block(L, recv, &lam, &nreq, &nopt, &neg);
        if (!w) return;
        proc_value(L, w, nreq, nopt, lam, neg);
    }
    uint32_t meta = (uint32_t)k | (uint32_t)nreq << 8 | (uint32_t)nopt << 16 | (lam ? 1u << 24 : 0) | (uint32_t)what | (inside ? PROC_KEEP : 0) |
                    (nkw || bare ? PROC_KW : 0);
    tpl_c_emit(C, TPL_OP_CONST, tpl_c_const(C, tpl_v_int(meta)), 1);
    int site = inside ? pv->nsites++ : -1;
    if (inside) pv->site_const[site] = tpl_c_emit(C, TPL_OP_CONST, tpl_c_const(C, tpl_v_str("", 0)), 1);
    for (tpl_node *a = argl; a; a = a->next)
        if (a->kind == TPL_N_ARG) expr(L, a->a);   /* (a brace-less Hash last: the keywords) */
    /* the keywords: a Hash of Symbol keys, the last argument (bit 28: keywords to a block binding its own) */
    if (nkw) kw_hash(L, argl, nkw);
    tpl_c_at(C, off);
    tpl_c_emit(C, TPL_OP_CALL_METHOD_RB, tpl_c_name(C, S("(call)")), -(k + 1 + (inside ? 1 : 0)));
    tpl_c_word(C, TPL_ARGW((uint32_t)k + 1 + (inside ? 1u : 0u), 0, TPL_NO_KW));
    uint32_t wpos = tpl_c_word(C, w);
    if (inside) pv->site_word[site] = wpos;
    if (!used) tpl_c_emit(C, TPL_OP_POP, 0, -1);
}

/* f.curry[a][b]..., f.curry.(a).(b, c), f.curry.call(a, b, c): the call that gives the curried Proc its
 * arity's arguments (f's required parameters, f of no optional ones) is f.call of all the arguments given
 * along the chain: that node is rewritten in place (the calls after it are on its value). A chain that never
 * gets there (a curried Proc as a value) is left as it is: Proc#curry's refusal. 1: a node rewritten. */
static int curry_chain(erb_low *L, tpl_node *n)
{
    tpl_node *steps[16];
    int ns = 0;
    tpl_node *x = n;
    for (;;) {
        if (!x || ns == 16) return 0;
        if (x->kind == TPL_N_GETITEM) { steps[ns++] = x; x = x->a; continue; }
        if (x->kind != TPL_N_RMETHOD || !x->a || x->c) return 0;
        if (name_is(x->val, "curry") && !x->b) break;
        if (!(name_is(x->val, "call") || name_is(x->val, "[]") || name_is(x->val, "yield") || name_is(x->val, "==="))) return 0;
        for (const tpl_node *a = x->b; a; a = a->next)
            if (a->kind != TPL_N_ARG) return 0;
        steps[ns++] = x;
        x = x->a;
    }
    tpl_node *f = x->a;
    erb_proc *pv = proc_var(L, f);
    int nreq, nopt;
    if (pv) {
        if (!pv->word || pv->multi) return 0;
        nreq = pv->nreq;
        nopt = pv->nopt;
    } else if (is_proc_lit(f)) {
        nreq = 0;
        nopt = 0;
        for (const tpl_node *p = f->c->a; p; p = p->next) {
            if (p->kind == TPL_N_KWARG) nopt++;
            else if (p->kind == TPL_N_NAME) nreq++;
            else return 0;
        }
    } else {
        return 0;
    }
    if (nopt || nreq == 0) return 0;
    int total = 0, j = -1;
    for (int i = ns - 1; i >= 0; i--) {
        total += steps[i]->kind == TPL_N_GETITEM ? 1 : count_params(steps[i]->b);
        if (total >= nreq) { j = i; break; }
    }
    if (j < 0) return 0;
    tpl_node *head = NULL, *tail = NULL;
    for (int i = ns - 1; i >= j; i--) {
        if (steps[i]->kind == TPL_N_GETITEM) {
            tpl_node *a = new_node(L, TPL_N_ARG, steps[i]->b->off, steps[i]->b, NULL);
            if (!a) return -1;
            if (tail) tail->next = a; else head = a;
            tail = a;
            continue;
        }
        for (tpl_node *b = steps[i]->b; b; b = b->next) {
            tpl_node *a = new_node(L, TPL_N_ARG, b->off, b->a, NULL);
            if (!a) return -1;
            if (tail) tail->next = a; else head = a;
            tail = a;
        }
    }
    tpl_node *t = steps[j];
    t->kind = TPL_N_RMETHOD;
    t->val = S("call");
    t->a = f;
    t->b = head;
    t->c = NULL;
    t->op = 1;
    return 1;
}

/* A method called on a Proc variable or literal: true when handled (or refused with an error). */
static bool proc_method(erb_low *L, tpl_node *n, bool used)
{
    if (curry_chain(L, n) < 0) return true;
    if (n->a && !(name_is(n->val, "arity") && !n->b) && method_ref(L, n->a) < 0) return true;   /* (method(:m).arity: method_arity) */
    /* f.to_proc.m: f.m (a Proc's to_proc is itself; a Method's the lambda it is here) */
    if (n->a && n->a->kind == TPL_N_RMETHOD && name_is(n->a->val, "to_proc") && !n->a->b && !n->a->c && n->a->a &&
        method_ref(L, n->a->a) >= 0 && (proc_var(L, n->a->a) || is_proc_lit(n->a->a)))
        n->a = n->a->a;
    else if (n->a && name_is(n->val, "lambda?") && (n->a == L->method_lit || (proc_var(L, n->a) && proc_var(L, n->a)->method))) {
        tpl_c_error(C, n->off, "unsupported Ruby construct: Method#lambda? (a Method has none: Ruby's NoMethodError)");
        return true;
    }
    if (!n->a || !(proc_var(L, n->a) || is_proc_lit(n->a))) return false;
    if (n->c) { tpl_c_error(C, n->c->off, "unsupported Ruby construct: a block for Proc#%.*s", (int)n->val.len, n->val.u.s); return true; }
    if (name_is(n->val, "call") || name_is(n->val, "yield") || name_is(n->val, "[]") || name_is(n->val, "===")) {
        proc_op(L, n->a, n->b, PROC_CALL, n->off, used);
        return true;
    }
    if ((name_is(n->val, "arity") || name_is(n->val, "lambda?")) && !n->b) {
        proc_op(L, n->a, NULL, name_is(n->val, "arity") ? PROC_ARITY : PROC_LAMBDA_P, n->off, used);
        return true;
    }
    if (name_is(n->val, "inspect") || name_is(n->val, "to_s"))
        tpl_c_error(C, n->off, "unsupported Ruby construct: Proc#%.*s (Ruby prints the Proc's address)", (int)n->val.len, n->val.u.s);
    else
        tpl_c_error(C, n->off, "unsupported Ruby construct: Proc#%.*s (tpl calls a Proc: call, (), [], yield, ===, arity, lambda?, &)",
                    (int)n->val.len, n->val.u.s);
    return true;
}

/* The &name parameter of the def being lowered (not a block parameter of the same name: another slot). */
static bool blk_var(erb_low *L, const tpl_node *n)
{
    uint32_t slot;
    return n && n->kind == TPL_N_NAME && L->def_blkname.len &&
           n->val.len == L->def_blkname.len && memcmp(n->val.u.s, L->def_blkname.u.s, n->val.len) == 0 &&
           tpl_c_lookup(C, n->val, &slot) && slot == L->def_blkslot;
}

/* yield(args) / block_given? in a def (its hidden (blk), or the &name variable `from`): (blk).(yield)(args),
 * !!(blk). At the template's top level, block_given? is false and yield refused (ERB's script has no block). */
static void yield_(erb_low *L, bool given, const tpl_node *from, tpl_value via, tpl_node *argl, tpl_node *blk, uint32_t off, bool used)
{
    if (blk) { tpl_c_error(C, blk->off, "unsupported Ruby construct: a block for yield"); return; }
    if (!L->def_blk) {
        if (given && !argl) { if (used) tpl_c_emit(C, TPL_OP_FALSE, 0, 1); return; }
        tpl_c_error(C, off, "unsupported Ruby construct: yield outside a def (no block given: LocalJumpError)");
        return;
    }
    int nkw = 0;
    for (const tpl_node *a = argl; a; a = a->next) {
        /* keywords (`yield a, k: 1`): a Hash last, which a block of keyword parameters binds as keywords */
        if (((a->kind == TPL_N_KWARG && a->val.len) || a->kind == TPL_N_STARKW) && !via.len && !given) { nkw++; continue; }
        if (a->kind != TPL_N_ARG || nkw) { tpl_c_error(C, a->off, "unsupported Ruby construct: a splat, keyword or block argument of %s", via.len ? "a block's call" : "yield"); return; }
    }
    bool bare = !nkw && !via.len && !given && bare_hash(argl);   /* yield 1, "k" => 2: the keywords */
    int k = count_params(argl) - nkw + (nkw ? 1 : 0);
    if (k > 200) { tpl_c_error(C, off, "too many arguments"); return; }
    tpl_c_at(C, off);
    if (from) load_local(L, L->def_blkslot, L->def_blkname);
    else load_local(L, L->def_blk - 1, S("(blk)"));
    if (given) {
        if (argl) { tpl_c_error(C, off, "wrong number of arguments (given %d, expected 0) (ArgumentError)", k); return; }
        tpl_c_emit(C, TPL_OP_NOT_RB, 0, 0);
        tpl_c_emit(C, TPL_OP_NOT_RB, 0, 0);
        if (!used) tpl_c_emit(C, TPL_OP_POP, 0, -1);
        return;
    }
    if (via.len) {   /* blk.call(args) of a nil blk: Ruby's NoMethodError for that method (stdlib/ruby/ruby.c "(bcall)") */
        via.flags = 0;
        tpl_c_emit(C, TPL_OP_CONST, tpl_c_const(C, via), 1);
    }
    for (tpl_node *a = argl; a; a = a->next)
        if (a->kind == TPL_N_ARG) expr(L, a->a);
    if (nkw) kw_hash(L, argl, nkw);   /* the keywords, the last argument of (yieldkw) (as proc_op's) */
    tpl_c_at(C, off);
    int kk = k + (via.len ? 1 : 0);
    tpl_c_emit(C, TPL_OP_CALL_METHOD_RB, tpl_c_name(C, via.len ? S("(bcall)") : nkw || bare ? S("(yieldkw)") : S("(yield)")), -kk);
    tpl_c_word(C, TPL_ARGW((uint32_t)kk, 0, TPL_NO_KW));
    tpl_c_word(C, 0);
    if (!used) tpl_c_emit(C, TPL_OP_POP, 0, -1);
}

/* A method called on the def's &name variable: true when handled (or refused). */
static bool blk_method(erb_low *L, tpl_node *n, bool used)
{
    if (!n->a || !blk_var(L, n->a)) return false;
    if (name_is(n->val, "call") || name_is(n->val, "yield") || name_is(n->val, "[]") || name_is(n->val, "===")) {
        yield_(L, false, n->a, name_is(n->val, "===") ? (tpl_value){ 0 } : n->val, n->b, n->c, n->off, used);
        return true;
    }
    if (name_is(n->val, "nil?") && !n->b && !n->c) {
        load_local(L, L->def_blkslot, L->def_blkname);
        tpl_c_emit(C, TPL_OP_NOT_RB, 0, 0);
        if (!used) tpl_c_emit(C, TPL_OP_POP, 0, -1);
        return true;
    }
    tpl_c_error(C, n->off, "unsupported Ruby construct: %.*s.%.*s of a method's block (tpl calls it: call, (), [], yield, nil?, &%.*s)",
                (int)n->a->val.len, n->a->val.u.s, (int)n->val.len, n->val.u.s, (int)n->a->val.len, n->a->val.u.s);
    return true;
}

/* &lambda: Ruby checks a lambda's arity against what the method yields (one value or several), which a
 * block of tpl does not; a lambda of one parameter is passed to the methods that yield one value to it
 * whatever the receiver (an Array's, a Range's or a Hash's [key, value] pair), anything else refused. */
static bool yields_one(tpl_value m)
{
    static const char *const one[] = { "map", "collect", "flat_map", "collect_concat", "each", "sort_by", "group_by",
                                       "min_by", "max_by", "sum", "find", "detect", "count", "partition", "each_slice",
                                       "each_cons", "times", "upto", "downto", "filter_map", "each_entry", "tap", "then",
                                       "yield_self", "uniq", "chunk_while", "slice_when", NULL };
    for (int i = 0; one[i]; i++)
        if (name_is(m, one[i])) return true;
    return false;
}

/* The methods that yield two values to their block whatever the receiver (a lambda of two parameters takes them):
 * inject's (memo, item), a comparator's (a, b), each_with_index's (item, index), each_with_object's (item, memo). */
static bool yields_two(tpl_value m)
{
    static const char *const two[] = { "inject", "reduce", "sort", "sort!", "max", "min", "minmax", "each_with_index",
                                       "each_with_object", NULL };
    for (int i = 0; two[i]; i++)
        if (name_is(m, two[i])) return true;
    return false;
}

static bool lambda_blockarg_ok(erb_low *L, const tpl_node *n, const tpl_node *e, int nreq, int nopt)
{
    if (nreq == 1 && nopt == 0 && yields_one(n->val)) return true;
    if (nreq == 2 && nopt == 0 && yields_two(n->val)) return true;
    tpl_c_error(C, e->off, "unsupported Ruby construct: a lambda of %d parameter%s as the block of %.*s (Ruby checks its arity against each yield)",
                nreq + nopt, nreq + nopt == 1 ? "" : "s", (int)n->val.len, n->val.u.s);
    return false;
}

/* Makes blk the block { |p| callee(p) } (p a hidden parameter name: "(y0)", "(m0)"): how
 * &blk of a def's block (callee yield) and &method(:name) are passed on. */
static bool forward_block(erb_low *L, tpl_node *blk, uint32_t off, tpl_value pname, tpl_value callee)
{
    tpl_arena *a = tpl_c_arena(C);
    tpl_node *prm = tpl_arena_alloc(a, sizeof *prm), *arg = tpl_arena_alloc(a, sizeof *arg), *ref = tpl_arena_alloc(a, sizeof *ref),
             *cl = tpl_arena_alloc(a, sizeof *cl);
    if (!prm || !arg || !ref || !cl) { tpl_c_nomem(C, off); return false; }
    memset(prm, 0, sizeof *prm);
    prm->kind = TPL_N_NAME;
    prm->off = off;
    prm->val = pname;
    *ref = *prm;
    memset(arg, 0, sizeof *arg);
    arg->kind = TPL_N_ARG;
    arg->off = off;
    arg->a = ref;
    memset(cl, 0, sizeof *cl);
    cl->kind = TPL_N_RMETHOD;
    cl->off = off;
    cl->op = 1;
    cl->b = arg;
    cl->val = callee;
    blk->op = 0;
    blk->a = prm;
    blk->b = cl;
    return true;
}

/* The template method a receiver-less call n names (in a def: one it may define later, unless Kernel's), or NULL. */
static erb_def *def_target(erb_low *L, const tpl_node *n)
{
    if (n->a) return NULL;
    erb_def *d = def_find(L, n->val, false);
    if (!d && L->in_def && name_is(n->val, "respond_to?")) return NULL;   /* Object's (self_respond_to) */
    if (!d && L->in_def && name_is(n->val, "loop") && !n->b && n->c && n->c->kind == TPL_N_RBLOCK && n->c->op != 8)
        return NULL;   /* Kernel#loop with a block (lowered as a loop) */
    if (!d && L->in_def && tpl_builtin_find(TPL_BK_RKERNEL, n->val.u.s, n->val.len) < 0 && !tpl_c_host_func(C, n->val, TPL_HOST_GLOBAL))
        d = def_find(L, n->val, true);
    return d;
}

/* A call's `&expr` block argument (RBLOCK op 7): a Proc variable's block (op 8, its word in val), a Proc
 * literal's block, or method(:name)'s (a block calling the template method); anything else refused. */
static bool block_arg(erb_low *L, tpl_node *n)
{
    tpl_node *blk = n->c, *e = blk->b;
    if (e && e->kind == TPL_N_NAME && name_is(e->val, "&") && !blk_var(L, e)) {   /* g(&) outside a def(&) */
        tpl_c_error(C, blk->off, "no anonymous block parameter (SyntaxError)");
        return false;
    }
    erb_proc *pv = proc_var(L, e);
    if (e && e->kind == TPL_N_RMETHOD && name_is(e->val, "to_proc") && !e->b && !e->c && (proc_var(L, e->a) || is_proc_lit(e->a))) {
        e = e->a;   /* &f.to_proc: f */
        pv = proc_var(L, e);
    }
    if (pv) {
        if (!pv->word) { tpl_c_error(C, e->off, "unsupported Ruby construct: a Proc calling itself (`%.*s' inside its own block)", (int)pv->name.len, pv->name.u.s); return false; }
        if (pv->multi) { tpl_c_error(C, e->off, "unsupported Ruby construct: &%.*s of a variable assigned more than one Proc", (int)pv->name.len, pv->name.u.s); return false; }
        if (pv->nopt && !pv->lambda) { tpl_c_error(C, e->off, "unsupported Ruby construct: &%.*s of a Proc with optional parameters", (int)pv->name.len, pv->name.u.s); return false; }
        bool to_def = !n->a && def_find(L, n->val, false);
        if (pv->lambda && !to_def && !lambda_blockarg_ok(L, n, e, pv->nreq, pv->nopt)) return false;
        blk->op = 8;
        blk->a = NULL;
        blk->b = NULL;
        blk->val = tpl_v_int(pv->word);
        /* a lambda given to a template method: its arity (def_call, stdlib/ruby/ruby.c block_yield checks it) */
        if (pv->lambda) blk->val.len = 1u | (uint32_t)pv->nreq << 8 | (uint32_t)pv->nopt << 16;
        return true;
    }
    if (blk_var(L, e)) {
        /* &blk of a def's block to a template method: the block itself, its hidden keyword (blk) */
        erb_def *d = def_target(L, n);
        if (!d) { tpl_c_error(C, e->off, "internal error: &%.*s", (int)e->val.len, e->val.u.s); return false; }
        n->c = NULL;
        if (!d->sig) d->blk_early = d->blk = true;
        if (!d->blk) return true;   /* a method that never yields: Ruby never runs the block */
        tpl_arena *a = tpl_c_arena(C);
        tpl_node *kw = tpl_arena_alloc(a, sizeof *kw), *v = tpl_arena_alloc(a, sizeof *v);
        if (!kw || !v) { tpl_c_nomem(C, e->off); return false; }
        memset(v, 0, sizeof *v);
        v->kind = TPL_N_NAME;
        v->off = e->off;
        v->val = S("(blk)");
        memset(kw, 0, sizeof *kw);
        kw->kind = TPL_N_KWARG;
        kw->off = e->off;
        kw->a = v;
        kw->val = S("(blk)");
        if (!n->b) n->b = kw;
        else {
            tpl_node *last = n->b;
            while (last->next) last = last->next;
            last->next = kw;
        }
        return true;
    }
    if (is_proc_lit(e)) {
        int nreq, nopt;
        bool neg;
        if (!proc_sig(L, e, &nreq, &nopt, &neg)) return false;
        proc_kernel_guard(L, e);
        bool to_def = !n->a && def_find(L, n->val, false);
        if (name_is(e->val, "lambda") && !to_def && !lambda_blockarg_ok(L, n, e, nreq, nopt)) return false;
        if (nopt && !(to_def && name_is(e->val, "lambda"))) { tpl_c_error(C, e->off, "unsupported Ruby construct: &proc with optional parameters"); return false; }
        n->c = e->c;
        if (to_def && name_is(e->val, "lambda")) {
            n->c->val = tpl_v_int(0);
            n->c->val.len = 1u | (uint32_t)nreq << 8 | (uint32_t)nopt << 16;
        }
        return true;
    }
    if (e && e->kind == TPL_N_RMETHOD && !e->a && !e->c && name_is(e->val, "method") && e->b && !e->b->next && e->b->kind == TPL_N_ARG &&
        e->b->a->kind == TPL_N_CONST && e->b->a->val.type == TPL_T_STR) {
        /* &method(:name): { |x| name(x) } for a template method of one required parameter */
        tpl_value mn = e->b->a->val;
        erb_def *d = def_find(L, mn, false);
        if (!d || !d->sig || d->nreq != 1 || d->nkw) {
            tpl_c_error(C, e->off, "unsupported Ruby construct: &method(:%.*s) (a template method defined before, of one parameter)", (int)mn.len, mn.u.s);
            return false;
        }
        tpl_value callee = mn;
        callee.flags = 0;
        return forward_block(L, blk, e->off, tpl_v_str("(m0)", 4), callee);
    }
    tpl_c_error(C, blk->off, "unsupported Ruby construct: a &block argument other than a Proc variable, a lambda or proc literal, method(:name) or &:name");
    return false;
}

/* method(:name).arity of a template method: Ruby's arity of its parameters (-(required + 1) with optional
 * ones; keywords count as one more parameter, required when one of them is), once its def ran (before:
 * Ruby's NameError). */
/* NameError when the template method's def has not run (its closure's slot holds no method). */
static void def_ran_check(erb_low *L, erb_def *d, uint32_t off, tpl_value mn)
{
    tpl_c_at(C, off);
    if (L->in_def) tpl_c_emit(C, TPL_OP_LOAD_ROOT, d->slot, 1);
    else tpl_c_emit(C, TPL_OP_LOAD_SLOT, d->slot, 1);
    tpl_c_word(C, tpl_c_name(C, S("(def)")));
    uint32_t ok = tpl_c_emit(C, TPL_OP_JT_RB_KEEP, 0, -1);
    fail_msg(L, off, 1, "undefined method `%.*s' for class `Object' (NameError)", &mn);
    tpl_c_patch(C, ok, tpl_c_here(C));
    tpl_c_emit(C, TPL_OP_POP, 0, -1);
}

static tpl_node *new_node(erb_low *L, tpl_node_kind kind, uint32_t off, tpl_node *a, tpl_node *b)
{
    tpl_node *x = tpl_arena_alloc(tpl_c_arena(C), sizeof *x);
    if (!x) { tpl_c_nomem(C, off); return NULL; }
    memset(x, 0, sizeof *x);
    x->kind = kind;
    x->off = off;
    x->a = a;
    x->b = b;
    return x;
}

/* Whether Ruby 3.1's main object (the oracle's view: Object with Kernel, json's j/jj/JSON/to_json) has the
 * method, public or private. */
static bool self_method(tpl_value name)
{
    static const char *const m[] = {
        "!", "!=", "!~", "<=>", "==", "===", "=~", "Array", "Complex", "Float", "Hash", "Integer", "Rational", "String",
        "__callee__", "__dir__", "__id__", "__method__", "__send__", "`", "abort", "at_exit", "autoload", "autoload?",
        "binding", "block_given?", "caller", "caller_locations", "catch", "class", "clone", "define_singleton_method",
        "display", "dup", "enum_for", "eql?", "equal?", "eval", "exec", "exit", "exit!", "extend", "fail", "fork",
        "format", "freeze", "frozen?", "gem", "gem_original_require", "gets", "global_variables", "hash", "initialize",
        "initialize_clone", "initialize_copy", "initialize_dup", "inspect", "instance_eval", "instance_exec",
        "instance_of?", "instance_variable_defined?", "instance_variable_get", "instance_variable_set",
        "instance_variables", "is_a?", "iterator?", "itself", "kind_of?", "lambda", "load", "local_variables", "loop",
        "method", "method_missing", "methods", "nil?", "object_id", "open", "p", "pp", "print", "printf",
        "private_methods", "proc", "protected_methods", "public_method", "public_methods", "public_send", "putc", "puts",
        "raise", "rand", "readline", "readlines", "remove_instance_variable", "require", "require_relative",
        "respond_to?", "respond_to_missing?", "select", "send", "set_trace_func", "singleton_class", "singleton_method",
        "singleton_method_added", "singleton_method_removed", "singleton_method_undefined", "singleton_methods", "sleep",
        "spawn", "sprintf", "srand", "syscall", "system", "taint", "tainted?", "tap", "test", "then", "throw", "to_enum",
        "to_s", "trace_var", "trap", "trust", "untaint", "untrace_var", "untrust", "untrusted?", "warn", "yield_self",
        "j", "jj", "JSON", "to_json", "to_yaml", "pretty_inspect", NULL };
    for (int i = 0; m[i]; i++)
        if (name_is(name, m[i])) return true;
    return false;
}

/* Receiver-less respond_to?(:name) / respond_to?("name", include_all) without a self object (erb_self: self's own
 * respond_to? when it runs): Ruby asks the view object, whose methods are Object's and Kernel's (self_method) and
 * the template's defs; a state key is a local, no method. A template method answers true once its def ran; a name
 * neither Ruby's main object, tpl's own functions nor a host function has answers false. Others (Object's and
 * Kernel's methods, whose answer depends on their visibility, tpl's and the host's functions, a name that is not a
 * literal) are left to the refusal (false returned). */
static bool self_respond_to(erb_low *L, const tpl_node *n, bool used)
{
    const tpl_node *a1 = n->b, *a2 = a1 ? a1->next : NULL;
    if (n->c || !a1 || a1->kind != TPL_N_ARG || !a1->a || a1->a->kind != TPL_N_CONST || a1->a->val.type != TPL_T_STR)
        return false;
    if (a2 && (a2->kind != TPL_N_ARG || a2->next || !a2->a || a2->a->kind != TPL_N_CONST ||
               (a2->a->val.type != TPL_T_BOOL && a2->a->val.type != TPL_T_NONE)))
        return false;
    tpl_value name = a1->a->val;
    if (!name.len || self_method(name) || ruby_kernel_method(name) || (name.len >= 2 && name.u.s[0] == '_' && name.u.s[1] == '_') ||
        tpl_builtin_find(TPL_BK_RKERNEL, name.u.s, name.len) >= 0 || tpl_c_host_func(C, name, TPL_HOST_GLOBAL))
        return false;
    /* (a def further on, or one a def runs later: its slot, which holds the method once the def ran) */
    erb_def *d = def_find(L, name, true);
    if (d) {
        tpl_c_at(C, n->off);
        tpl_c_emit(C, L->in_def ? TPL_OP_LOAD_ROOT : TPL_OP_LOAD_SLOT, d->slot, 1);
        tpl_c_word(C, tpl_c_name(C, S("(def)")));
        tpl_c_emit(C, TPL_OP_NOT_RB, 0, 0);
        tpl_c_emit(C, TPL_OP_NOT_RB, 0, 0);
    } else
        tpl_c_emit(C, TPL_OP_FALSE, 0, 1);
    if (!used) tpl_c_emit(C, TPL_OP_POP, 0, -1);
    return true;
}

/* method(:name) of a template method defined before, of required parameters only, as a value: the node
 * rewritten in place as lambda { |(m1), ...| name((m1), ...) } (a Method calls, answers arity, to_proc and
 * & as that lambda), after the check that the def ran (Ruby's NameError at method(:name)). 0: no such
 * method(...), 1: rewritten, -1: refused (the error given). */
static int method_ref(erb_low *L, tpl_node *n)
{
    if (!n || n->kind != TPL_N_RMETHOD || n->a || n->c || !name_is(n->val, "method") || !n->b || n->b->next || n->b->kind != TPL_N_ARG ||
        n->b->a->kind != TPL_N_CONST || n->b->a->val.type != TPL_T_STR || def_find(L, n->val, false) ||
        tpl_c_host_func(C, n->val, TPL_HOST_GLOBAL) || tpl_c_options(C)->erb_self)
        return 0;
    tpl_value mn = n->b->a->val;
    erb_def *d = def_find(L, mn, false);
    if (!d && !self_method(mn) && tpl_builtin_find(TPL_BK_RKERNEL, mn.u.s, mn.len) < 0 && !tpl_c_host_func(C, mn, TPL_HOST_GLOBAL)) {
        /* a name the template never defines and Ruby's main object lacks: Ruby's NameError when it runs,
         * as raise(NameError, "...") in its place */
        char msg[220];
        snprintf(msg, sizeof msg, "undefined method `%.*s' for class `Object'", mn.len > 100 ? 100 : (int)mn.len, mn.u.s);
        tpl_node *cls = new_node(L, TPL_N_RCONSTNAME, n->off, NULL, NULL), *m = new_node(L, TPL_N_CONST, n->off, NULL, NULL);
        tpl_node *a1 = new_node(L, TPL_N_ARG, n->off, cls, NULL), *a2 = new_node(L, TPL_N_ARG, n->off, m, NULL);
        size_t ml = strlen(msg);
        char *keep = tpl_arena_alloc(tpl_c_arena(C), ml + 1);
        if (!cls || !m || !a1 || !a2 || !keep) { tpl_c_nomem(C, n->off); return -1; }
        memcpy(keep, msg, ml + 1);
        tpl_value t = tpl_v_str(keep, ml);
        cls->val = S("NameError");
        m->val = t;
        a1->next = a2;
        n->val = S("raise");
        n->b = a1;
        return 0;
    }
    if (!d || !d->sig || d->nopt || d->nkw || d->rest || d->kwrest || d->blk || d->nreq > 9) {
        tpl_c_error(C, n->off, "unsupported Ruby construct: method(:%.*s) as a value (a template method defined before, of required "
                    "parameters only, without a block)", (int)mn.len, mn.u.s);
        return -1;
    }
    static const char *const pn[] = { "(m1)", "(m2)", "(m3)", "(m4)", "(m5)", "(m6)", "(m7)", "(m8)", "(m9)" };
    tpl_node *params = NULL, *ptail = NULL, *args = NULL, *atail = NULL;
    for (int i = 0; i < d->nreq; i++) {
        tpl_node *p = new_node(L, TPL_N_NAME, n->off, NULL, NULL), *v = new_node(L, TPL_N_NAME, n->off, NULL, NULL);
        if (!p || !v) return -1;
        p->val = v->val = tpl_v_str(pn[i], 4);
        tpl_node *a = new_node(L, TPL_N_ARG, n->off, v, NULL);
        if (!a) return -1;
        if (ptail) ptail->next = p; else params = p;
        ptail = p;
        if (atail) atail->next = a; else args = a;
        atail = a;
    }
    tpl_node *call = new_node(L, TPL_N_RMETHOD, n->off, NULL, args);
    tpl_node *blk = new_node(L, TPL_N_RBLOCK, n->off, params, call);
    if (!call || !blk) return -1;
    call->val = mn;
    call->op = 1;
    def_ran_check(L, d, n->off, mn);
    L->method_lit = n;
    n->val = S("lambda");
    n->b = NULL;
    n->c = blk;
    n->op = 1;
    return 1;
}

static void method_arity(erb_low *L, tpl_node *n, bool used)
{
    tpl_value mn = n->a->b->a->val;
    erb_def *d = def_find(L, mn, false);
    if (!d || !d->sig) {
        tpl_c_error(C, n->a->off, "unsupported Ruby construct: method(:%.*s) (a template method defined before)", (int)mn.len, mn.u.s);
        return;
    }
    bool kwreq = false;
    for (int i = 0; i < d->nkw; i++) kwreq = kwreq || d->kwreq[i];
    int req = d->nreq + (kwreq ? 1 : 0);
    bool opt = d->nopt > 0 || d->rest || ((d->nkw > 0 || d->kwrest) && !kwreq);
    tpl_c_at(C, n->a->off);
    if (L->in_def) tpl_c_emit(C, TPL_OP_LOAD_ROOT, d->slot, 1);
    else tpl_c_emit(C, TPL_OP_LOAD_SLOT, d->slot, 1);
    tpl_c_word(C, tpl_c_name(C, S("(def)")));
    uint32_t ok = tpl_c_emit(C, TPL_OP_JT_RB_KEEP, 0, -1);
    fail_msg(L, n->a->off, 1, "undefined method `%.*s' for class `Object' (NameError)", &mn);
    tpl_c_patch(C, ok, tpl_c_here(C));
    tpl_c_emit(C, TPL_OP_POP, 0, -1);
    if (used) tpl_c_emit(C, TPL_OP_CONST, tpl_c_const(C, tpl_v_int(opt ? -(req + 1) : req)), 1);
}

/* recv.m(args, &blk) where blk is the def's &block: the block as it was given (every value m yields reaches
 * it, nil passes none), blk.(fwd)(recv, "m", flags, args...) (stdlib/ruby/ruby.c block_forward; flags bit 0:
 * m yields one value, so a lambda of one parameter may take it). */
static void fwd_call(erb_low *L, tpl_node *n, bool used)
{
    tpl_node *e = n->c->b;
    if (!n->a) {
        tpl_c_error(C, e->off, "unsupported Ruby construct: &%.*s given to %.*s (tpl passes a method's block on to a template method or "
                    "a method with a receiver)", (int)e->val.len, e->val.u.s, (int)n->val.len, n->val.u.s);
        return;
    }
    if (changes_receiver(n)) {
        tpl_c_error(C, e->off, "unsupported Ruby construct: &%.*s given to %.*s, which changes its receiver", (int)e->val.len, e->val.u.s,
                    (int)n->val.len, n->val.u.s);
        return;
    }
    for (const tpl_node *a = n->b; a; a = a->next)
        if (a->kind != TPL_N_ARG) { tpl_c_error(C, a->off, "unsupported Ruby construct: a splat or keyword argument with &%.*s", (int)e->val.len, e->val.u.s); return; }
    int k = count_params(n->b);
    if (k > 200) { tpl_c_error(C, n->off, "too many arguments"); return; }
    tpl_c_at(C, n->off);
    load_local(L, L->def_blk - 1, S("(blk)"));
    expr(L, n->a);
    tpl_value m = n->val;
    m.flags = 0;
    tpl_c_emit(C, TPL_OP_CONST, tpl_c_const(C, m), 1);
    tpl_c_emit(C, TPL_OP_CONST, tpl_c_const(C, tpl_v_int(yields_one(n->val) ? 1 : 0)), 1);
    for (tpl_node *a = n->b; a; a = a->next) expr(L, a->a);
    tpl_c_at(C, n->off);
    tpl_c_emit(C, TPL_OP_CALL_METHOD_RB, tpl_c_name(C, S("(fwd)")), -(k + 3));
    tpl_c_word(C, TPL_ARGW((uint32_t)k + 3, 0, TPL_NO_KW));
    tpl_c_word(C, 0);
    if (!used) tpl_c_emit(C, TPL_OP_POP, 0, -1);
}

/* Whether the state has the key `key` (a local of ERB's binding), at run time: the jump to patch,
 * taken when it has not (Kernel's (defined) of the state, as `defined?(name)` reads it). */
static uint32_t jump_unless_state_has(erb_low *L, tpl_value key, uint32_t off)
{
    tpl_c_emit(C, TPL_OP_CONST, tpl_c_const(C, key), 1);
    tpl_c_emit(C, TPL_OP_TRUE, 0, 1);
    tpl_c_emit(C, TPL_OP_FALSE, 0, 1);
    tpl_c_at(C, off);
    tpl_c_emit(C, TPL_OP_CALL_NAME, tpl_c_name(C, S("(defined)")), -2);
    tpl_c_word(C, (uint32_t)TPL_B_RKERNEL_defined_state);
    tpl_c_word(C, TPL_ARGW(3, 0, TPL_NO_KW));
    return tpl_c_emit(C, TPL_OP_JF_RB, 0, -1);
}

/* The local in slot when the state has key (a binding's local, the state key while unset), else
 * Ruby's name lookup (LOAD_NAME_RB: a method call, NameError). */
static void local_or_name(erb_low *L, uint32_t slot, tpl_value key, uint32_t off)
{
    uint32_t no = jump_unless_state_has(L, key, off);
    load_local(L, slot, key);
    uint32_t end = tpl_c_emit(C, TPL_OP_JUMP, 0, -1);
    tpl_c_patch(C, no, tpl_c_here(C));
    tpl_c_at(C, off);
    tpl_c_emit(C, TPL_OP_LOAD_NAME_RB, tpl_c_name(C, key), 1);
    tpl_c_patch(C, end, tpl_c_here(C));
}

/* `name /x` where the lexer knew no local `name` (grammar/erb_parse.y): Ruby reads `/x.../` as a regex
 * argument of a method call unless name is a local of the binding, a key of the state; tpl divides then, and
 * refuses otherwise (Ruby's SyntaxError, or a regex it reads to some later `/`). */
static void ambdiv(erb_low *L, tpl_node *n, bool used)
{
    tpl_node *d = n->b->a;
    tpl_value nm = d->a->val;
    uint32_t slot;
    char msg[300];
    snprintf(msg, sizeof msg, "unsupported Ruby construct: `%.*s /' where %.*s is no local variable (Ruby reads a regex "
             "literal argument of a method call there)", nm.len > 100 ? 100 : (int)nm.len, nm.u.s, nm.len > 100 ? 100 : (int)nm.len, nm.u.s);
    if (tpl_c_lookup(C, nm, &slot)) {
        expr(L, d);
    } else if (L->in_def) {
        tpl_c_error(C, d->off, "%s", msg);
        return;
    } else {
        uint32_t no = jump_unless_state_has(L, nm, n->off);
        expr(L, d);
        uint32_t end = tpl_c_emit(C, TPL_OP_JUMP, 0, -1);
        tpl_c_patch(C, no, tpl_c_here(C));
        tpl_c_at(C, n->off);
        tpl_c_emit(C, TPL_OP_FAIL, tpl_c_const(C, tpl_v_str(msg, strlen(msg))), 1);
        tpl_c_patch(C, end, tpl_c_here(C));
    }
    if (!used) tpl_c_emit(C, TPL_OP_POP, 0, -1);
}

/* A bare name of a Kernel method tpl lacks (binding, hash, test ...): the binding's local when the state
 * has the key, else a refusal no rescue catches (Ruby calls the method). Its own frame: the message buffer
 * stays off expr's recursive one. */
static __attribute__((noinline)) void kernel_name(erb_low *L, tpl_value key, uint32_t off)
{
    char msg[220];
    snprintf(msg, sizeof msg, "unsupported Ruby construct: Kernel#%.*s called without a receiver",
             key.len > 100 ? 100 : (int)key.len, key.u.s);
    uint32_t no = jump_unless_state_has(L, key, off);
    tpl_c_at(C, off);
    tpl_c_emit(C, TPL_OP_LOAD_NAME_RB, tpl_c_name(C, key), 1);
    uint32_t end = tpl_c_emit(C, TPL_OP_JUMP, 0, -1);
    tpl_c_patch(C, no, tpl_c_here(C));
    tpl_c_at(C, off);
    tpl_c_emit(C, TPL_OP_FAIL, tpl_c_const(C, tpl_v_str(msg, strlen(msg))), 0);
    tpl_c_patch(C, end, tpl_c_here(C));
}

/* The nil a block-local variable (|a; b|) starts with: a located refusal when the state has its name (a
 * local of the binding, which Ruby's block-local shadows and tpl's block would assign). */
static void blocal_nil(erb_low *L, tpl_node *n, bool used)
{
    tpl_value key = n->b->a->val;
    tpl_c_emit(C, TPL_OP_LOAD_NAME, tpl_c_name(C, key), 1);   /* (among the program's reads: a binding's local is passed) */
    tpl_c_emit(C, TPL_OP_POP, 0, -1);
    tpl_c_emit(C, TPL_OP_CONST, tpl_c_const(C, key), 1);
    tpl_c_emit(C, TPL_OP_TRUE, 0, 1);
    tpl_c_emit(C, TPL_OP_NONE, 0, 1);
    tpl_c_at(C, n->off);
    tpl_c_emit(C, TPL_OP_CALL_NAME, tpl_c_name(C, S("(defined)")), -2);
    tpl_c_word(C, (uint32_t)TPL_B_RKERNEL_defined_state);
    tpl_c_word(C, TPL_ARGW(3, 0, TPL_NO_KW));
    uint32_t j = tpl_c_emit(C, TPL_OP_JF_RB, 0, -1);
    fail_msg(L, n->off, 0, "unsupported Ruby construct: a block-local variable `%.*s' naming a local of the binding (a key of the state)", &key);
    tpl_c_patch(C, j, tpl_c_here(C));
    if (used) tpl_c_emit(C, TPL_OP_NONE, 0, 1);
}

/* A method call; `used` false when its value is dropped (a statement). */
/* ---- Enumerator::Lazy chains (issue 15) ----
 * SRC.lazy.STAGE...TERMINAL, and an endless SRC.cycle with first/take/find/include?, as one loop over SRC with
 * early exit: what Ruby's Lazy does (each element through every stage before the next is pulled; an endless
 * source ends at the terminal's count, else the fuel limit). Lowered to the template's own Ruby: each stage's
 * block a proc in a hidden local, called per element (a proc: |k, v| splats an Array, next gives the value). */
typedef struct { tpl_arena *a; uint32_t off; bool nomem; } lz_b;
enum { LZ_MAP, LZ_SELECT, LZ_REJECT, LZ_FMAP, LZ_TWHILE, LZ_DWHILE, LZ_TAKE, LZ_DROP, LZ_WINDEX, LZ_COMPACT, LZ_UNIQ, LZ_ZIP };
enum { LZ_FIRST, LZ_FIRSTN, LZ_ALL, LZ_FIND, LZ_INCLUDE };

static tpl_node *lz_node(lz_b *b, int kind, tpl_node *x, tpl_node *y)
{
    tpl_node *n = tpl_node_new(b->a, kind, b->off);
    if (!n) { b->nomem = true; return NULL; }
    n->a = x;
    n->b = y;
    return n;
}
/* the hidden local "(lzOFF_what)" (OFF: the chain's offset, so a chain inside a stage's block has its own) */
static tpl_node *lz_var(lz_b *b, const char *what, int k)
{
    char buf[48];
    int len = snprintf(buf, sizeof buf, "(lz%u_%s%d)", (unsigned)b->off, what, k);
    char *s = tpl_arena_strdup(b->a, buf, (size_t)len);
    tpl_node *n = lz_node(b, TPL_N_NAME, NULL, NULL);
    if (!s || !n) { b->nomem = true; return n; }
    n->val = tpl_v_str(s, (size_t)len);
    return n;
}
static tpl_node *lz_const(lz_b *b, tpl_value v)
{
    tpl_node *n = lz_node(b, TPL_N_CONST, NULL, NULL);
    if (n) n->val = v;
    return n;
}
static tpl_node *lz_arg(lz_b *b, tpl_node *v) { return lz_node(b, TPL_N_ARG, v, NULL); }
static tpl_node *lz_call(lz_b *b, tpl_node *recv, const char *m, tpl_node *arg)
{
    tpl_node *n = lz_node(b, TPL_N_RMETHOD, recv, arg ? lz_arg(b, arg) : NULL);
    if (n) { n->val = tpl_v_str(m, strlen(m)); n->op = arg ? 1 : 0; }
    return n;
}
static tpl_node *lz_set(lz_b *b, const char *what, int k, tpl_node *v) { return lz_node(b, TPL_N_SET, lz_var(b, what, k), v); }
/* `body if cond` (neg: unless) */
static tpl_node *lz_if(lz_b *b, tpl_node *cond, tpl_node *body, bool neg)
{
    if (neg) {
        cond = lz_node(b, TPL_N_UNOP, cond, NULL);
        if (cond) cond->op = TPL_AOP_NOT;
    }
    return lz_node(b, TPL_N_IF, cond, body);
}
static tpl_node *lz_ge(lz_b *b, tpl_node *x, tpl_node *y)
{
    tpl_node *c = lz_node(b, TPL_N_CMPOP, y, NULL);
    if (c) c->op = TPL_AOP_GE;
    return lz_node(b, TPL_N_COMPARE, x, c);
}
static tpl_node *lz_stmts(tpl_node *first, ...)
{
    /* (a NULL-terminated list of statements, linked by next; NULL when one is NULL: out of memory) */
    va_list ap;
    va_start(ap, first);
    tpl_node *head = first, *t = first;
    bool ok = first != NULL;
    for (tpl_node *x; (x = va_arg(ap, tpl_node *)) != (tpl_node *)1;) {
        if (!x || !t) { ok = false; continue; }
        t->next = x;
        t = x;
    }
    va_end(ap);
    if (head && ok) head->tail = t;
    return ok ? head : NULL;
}
#define LZ_END ((tpl_node *)1)

/* A stage's block: its RBLOCK (a block, or a trailing &:name argument), NULL when it has none or other arguments. */
static tpl_node *lz_block(const tpl_node *m)
{
    if (m->c && !m->b && m->c->op != 7) return m->c;
    if (!m->c && m->b && !m->b->next && m->b->kind == TPL_N_RBLOCK && m->b->op != 7) return m->b;   /* (&:name) */
    return NULL;
}
/* An Integer literal argument >= 0 of m (its only argument), else -1. */
static int64_t lz_count(const tpl_node *m)
{
    if (m->c || !m->b || m->b->next || m->b->kind != TPL_N_ARG || !m->b->a || m->b->a->kind != TPL_N_CONST ||
        m->b->a->val.type != TPL_T_INT || m->b->a->val.u.i < 0)
        return -1;
    return m->b->a->val.u.i;
}

static bool lazy_chain(erb_low *L, tpl_node *n, bool used)
{
    int term;
    if (!n->a || n->a->kind != TPL_N_RMETHOD) return false;
    int64_t cnt = -1;
    if (name_is(n->val, "first") && !n->c && !n->b) term = LZ_FIRST;
    else if ((name_is(n->val, "first") || name_is(n->val, "take")) && (cnt = lz_count(n)) >= 0) term = LZ_FIRSTN;
    else if ((name_is(n->val, "to_a") || name_is(n->val, "force")) && !n->b && !n->c) term = LZ_ALL;
    else if ((name_is(n->val, "find") || name_is(n->val, "detect")) && lz_block(n)) term = LZ_FIND;
    else if ((name_is(n->val, "include?") || name_is(n->val, "member?")) && !n->c && n->b && !n->b->next && n->b->kind == TPL_N_ARG)
        term = LZ_INCLUDE;
    else return false;
    /* the stages, terminal-side first */
    tpl_node *st[16];
    int ns = 0;
    tpl_node *m = n->a, *src = NULL;
    bool lazy = false;
    for (; m && m->kind == TPL_N_RMETHOD && m->a; m = m->a) {
        if (name_is(m->val, "lazy") && !m->b && !m->c) { lazy = true; src = m->a; break; }
        if (name_is(m->val, "cycle") && !m->b && !m->c) { src = m; break; }
        if (ns == 16) return false;
        st[ns++] = m;
    }
    if (!src) return false;
    /* an endless cycle without lazy: Enumerator#first/take/find/include? only (take(n): the eager one, an Array) */
    if (!lazy && ns) return false;
    if (!lazy && term == LZ_ALL) return false;
    if (lazy && term == LZ_FIRSTN && name_is(n->val, "take")) return false;   /* (lazy.take(n) is a Lazy: its to_a is) */
    int kinds[16];
    for (int i = 0; i < ns; i++) {
        tpl_node *s = st[i];
        tpl_value v = s->val;
        bool blk = lz_block(s) != NULL;
        if (blk && (name_is(v, "map") || name_is(v, "collect"))) kinds[i] = LZ_MAP;
        else if (blk && (name_is(v, "select") || name_is(v, "filter"))) kinds[i] = LZ_SELECT;
        else if (blk && name_is(v, "reject")) kinds[i] = LZ_REJECT;
        else if (blk && name_is(v, "filter_map")) kinds[i] = LZ_FMAP;
        else if (blk && name_is(v, "take_while")) kinds[i] = LZ_TWHILE;
        else if (blk && name_is(v, "drop_while")) kinds[i] = LZ_DWHILE;
        else if (name_is(v, "take") && lz_count(s) >= 0) kinds[i] = LZ_TAKE;
        else if (name_is(v, "drop") && lz_count(s) >= 0) kinds[i] = LZ_DROP;
        else if ((name_is(v, "with_index") || name_is(v, "each_with_index")) && !s->b && !s->c) kinds[i] = LZ_WINDEX;
        else if (name_is(v, "compact") && !s->b && !s->c) kinds[i] = LZ_COMPACT;
        else if (name_is(v, "uniq") && !s->b && !s->c) kinds[i] = LZ_UNIQ;
        else if (name_is(v, "zip") && !s->c && s->b && !s->b->next && s->b->kind == TPL_N_ARG) kinds[i] = LZ_ZIP;
        else return false;   /* (not a chain tpl lowers: its parts' own answers, Lazy's refusal) */
    }
    lz_b b = { .a = tpl_c_arena(C), .off = n->off };
    /* before the loop: the procs, counters, the result; in it: the element through each stage, then the terminal */
    tpl_node *pre = NULL, *loop = NULL;
#define PRE(x) (pre = tpl_node_append(pre, (x)))
#define LOOP(x) (loop = tpl_node_append(loop, (x)))
    bool stop = false;
    PRE(lz_set(&b, "stop", 0, lz_const(&b, tpl_v_bool(false))));
    LOOP(lz_if(&b, lz_var(&b, "stop", 0), lz_node(&b, TPL_N_RBREAK, NULL, NULL), false));
    LOOP(lz_set(&b, "v", 0, lz_var(&b, "x", 0)));
    for (int j = ns - 1; j >= 0; j--) {
        tpl_node *s = st[j];
        int k = kinds[j];
        tpl_node *v = lz_var(&b, "v", 0);
        if (k <= LZ_DWHILE) {
            tpl_node *p = lz_node(&b, TPL_N_RMETHOD, NULL, NULL);
            if (p) { p->val = tpl_v_str("proc", 4); p->op = 1; p->c = lz_block(s); }
            PRE(lz_set(&b, "f", j, p));
        }
        tpl_node *fv = k <= LZ_DWHILE ? lz_call(&b, lz_var(&b, "f", j), "call", v) : NULL;
        tpl_node *next = lz_node(&b, TPL_N_RNEXT, NULL, NULL), *brk = lz_node(&b, TPL_N_RBREAK, NULL, NULL);
        switch (k) {
        case LZ_MAP: LOOP(lz_set(&b, "v", 0, fv)); break;
        case LZ_SELECT: LOOP(lz_if(&b, fv, next, true)); break;
        case LZ_REJECT: LOOP(lz_if(&b, fv, next, false)); break;
        case LZ_FMAP:
            LOOP(lz_set(&b, "v", 0, fv));
            LOOP(lz_if(&b, lz_var(&b, "v", 0), next, true));
            break;
        case LZ_TWHILE: LOOP(lz_if(&b, fv, brk, true)); break;
        case LZ_DWHILE:
            /* dropping while the block is true: (dK) from true to false once */
            PRE(lz_set(&b, "d", j, lz_const(&b, tpl_v_bool(true))));
            LOOP(lz_if(&b, lz_node(&b, TPL_N_AND, lz_var(&b, "d", j), fv), next, false));
            LOOP(lz_set(&b, "d", j, lz_const(&b, tpl_v_bool(false))));
            break;
        case LZ_TAKE: {
            /* take(n): the n-th element goes on, then the loop ends before the next is pulled through the stages */
            int64_t c = lz_count(s);
            if (c == 0) PRE(lz_set(&b, "stop", 0, lz_const(&b, tpl_v_bool(true))));
            PRE(lz_set(&b, "t", j, lz_const(&b, tpl_v_int(0))));
            tpl_node *inc = lz_node(&b, TPL_N_BINOP, lz_var(&b, "t", j), lz_const(&b, tpl_v_int(1)));
            if (inc) inc->op = TPL_AOP_ADD;
            LOOP(lz_set(&b, "t", j, inc));
            LOOP(lz_if(&b, lz_ge(&b, lz_var(&b, "t", j), lz_const(&b, tpl_v_int(c))),
                       lz_set(&b, "stop", 0, lz_const(&b, tpl_v_bool(true))), false));
            stop = true;
            break;
        }
        case LZ_DROP: {
            int64_t c = lz_count(s);
            PRE(lz_set(&b, "t", j, lz_const(&b, tpl_v_int(0))));
            tpl_node *inc = lz_node(&b, TPL_N_BINOP, lz_var(&b, "t", j), lz_const(&b, tpl_v_int(1)));
            if (inc) inc->op = TPL_AOP_ADD;
            LOOP(lz_set(&b, "t", j, inc));
            LOOP(lz_if(&b, lz_ge(&b, lz_const(&b, tpl_v_int(c)), lz_var(&b, "t", j)), next, false));
            break;
        }
        case LZ_WINDEX:
        case LZ_ZIP: {
            /* [v, i] (zip: [v, a[i]], a evaluated once, before the loop) */
            PRE(lz_set(&b, "t", j, lz_const(&b, tpl_v_int(0))));
            if (k == LZ_ZIP) PRE(lz_set(&b, "z", j, s->b->a));
            tpl_node *second = k == LZ_ZIP ? lz_node(&b, TPL_N_GETITEM, lz_var(&b, "z", j), lz_var(&b, "t", j)) : lz_var(&b, "t", j);
            tpl_node *pair = lz_node(&b, TPL_N_LIST, lz_stmts(v, second, LZ_END), NULL);
            LOOP(lz_set(&b, "v", 0, pair));
            tpl_node *inc = lz_node(&b, TPL_N_BINOP, lz_var(&b, "t", j), lz_const(&b, tpl_v_int(1)));
            if (inc) inc->op = TPL_AOP_ADD;
            LOOP(lz_set(&b, "t", j, inc));
            break;
        }
        case LZ_COMPACT: LOOP(lz_if(&b, lz_call(&b, v, "nil?", NULL), next, false)); break;
        case LZ_UNIQ:
        {
            /* (a Hash of the values seen: uniq's hash/eql?, :a and "a" two) */
            PRE(lz_set(&b, "u", j, lz_node(&b, TPL_N_DICT, NULL, NULL)));
            LOOP(lz_if(&b, lz_call(&b, lz_var(&b, "u", j), "key?", v), next, false));
            tpl_node *st2 = lz_call(&b, lz_var(&b, "u", j), "store", lz_var(&b, "v", 0));
            if (st2 && st2->b) st2->b->next = lz_arg(&b, lz_const(&b, tpl_v_bool(true)));
            LOOP(st2);
            break;
        }
        }
    }
    (void)stop;
    tpl_node *v = lz_var(&b, "v", 0), *brk = lz_node(&b, TPL_N_RBREAK, NULL, NULL);
    switch (term) {
    case LZ_FIRST:
        PRE(lz_set(&b, "r", 0, lz_const(&b, tpl_v_none())));
        LOOP(lz_set(&b, "r", 0, v));
        LOOP(brk);
        break;
    case LZ_FIRSTN:
    case LZ_ALL:
        if (term == LZ_FIRSTN && cnt == 0) PRE(lz_set(&b, "stop", 0, lz_const(&b, tpl_v_bool(true))));
        PRE(lz_set(&b, "r", 0, lz_node(&b, TPL_N_LIST, NULL, NULL)));
        LOOP(lz_call(&b, lz_var(&b, "r", 0), "<<", v));
        if (term == LZ_FIRSTN)
            LOOP(lz_if(&b, lz_ge(&b, lz_call(&b, lz_var(&b, "r", 0), "size", NULL), lz_const(&b, tpl_v_int(cnt))), brk, false));
        break;
    case LZ_FIND: {
        tpl_node *p = lz_node(&b, TPL_N_RMETHOD, NULL, NULL);
        if (p) { p->val = tpl_v_str("proc", 4); p->op = 1; p->c = lz_block(n); }
        PRE(lz_set(&b, "g", 0, p));
        PRE(lz_set(&b, "r", 0, lz_const(&b, tpl_v_none())));
        LOOP(lz_if(&b, lz_call(&b, lz_var(&b, "g", 0), "call", v),
                   lz_stmts(lz_set(&b, "r", 0, lz_var(&b, "v", 0)), brk, LZ_END), false));
        break;
    }
    case LZ_INCLUDE:
        PRE(lz_set(&b, "i", 0, n->b->a));
        PRE(lz_set(&b, "r", 0, lz_const(&b, tpl_v_bool(false))));
        {
            tpl_node *c = lz_node(&b, TPL_N_CMPOP, lz_var(&b, "i", 0), NULL);
            if (c) c->op = TPL_AOP_EQ;
            LOOP(lz_if(&b, lz_node(&b, TPL_N_COMPARE, v, c),
                       lz_stmts(lz_set(&b, "r", 0, lz_const(&b, tpl_v_bool(true))), brk, LZ_END), false));
        }
        break;
    }
    /* the source: SRC.each { |x| ... } (an Range to Float::INFINITY: endless), SRC.cycle { |x| ... } */
    tpl_node *each = lz_node(&b, TPL_N_RMETHOD, NULL, NULL), *blk = lz_node(&b, TPL_N_RBLOCK, lz_var(&b, "x", 0), loop);
    if (each) {
        bool cyc = !lazy || (src->kind == TPL_N_RMETHOD && name_is(src->val, "cycle") && src->a && !src->b && !src->c);
        tpl_node *r = cyc ? src->a : src;
        if (r && r->kind == TPL_N_RSTMTS && r->b && !r->b->next && r->b->kind == TPL_N_RRANGE && r->b->b &&
            r->b->b->kind == TPL_N_RCONSTNAME && name_is(r->b->b->val, "Float::INFINITY")) {
            tpl_node *rr = lz_node(&b, TPL_N_RRANGE, r->b->a, NULL);
            if (rr) { rr->op = r->b->op; rr->off = r->b->off; }
            r = lz_node(&b, TPL_N_RSTMTS, NULL, rr);
        }
        each->a = r;
        each->val = cyc ? tpl_v_str("cycle", 5) : tpl_v_str("each", 4);
        each->c = blk;
    }
    PRE(each);
    PRE(lz_var(&b, "r", 0));
#undef PRE
#undef LOOP
    if (b.nomem || !pre || !loop) { tpl_c_nomem(C, n->off); return true; }
    tpl_node *all = lz_node(&b, TPL_N_RSTMTS, NULL, pre);
    if (!all) { tpl_c_nomem(C, n->off); return true; }
    expr(L, all);
    if (!used) tpl_c_emit(C, TPL_OP_POP, 0, -1);
    return true;
}

static void call(erb_low *L, tpl_node *n, bool used)
{
    if (lazy_chain(L, n, used)) return;
    if (!n->a && name_is(n->val, "(blocal)") && n->b && n->b->kind == TPL_N_ARG && n->b->a->kind == TPL_N_NAME) {
        blocal_nil(L, n, used);
        return;
    }
    if (!n->a && name_is(n->val, "(ambdiv)") && n->b && n->b->kind == TPL_N_ARG && n->b->a->kind == TPL_N_BINOP) {
        ambdiv(L, n, used);
        return;
    }
    /* a trailing &:name argument is the call's block */
    if (n->b) {
        tpl_node **pp = &n->b;
        while (*pp && (*pp)->next) pp = &(*pp)->next;
        if ((*pp)->kind == TPL_N_RBLOCK) {
            if (n->c) { tpl_c_error(C, (*pp)->off, "both a block argument and a block given (SyntaxError)"); return; }
            n->c = *pp;
            *pp = NULL;
            if (n->b) {
                tpl_node *t = n->b;
                while (t->next) t = t->next;
                n->b->tail = t;
            }
        }
    }
    if (n->c && n->c->kind == TPL_N_RBLOCK && n->c->op == 7 && blk_var(L, n->c->b) && !def_target(L, n)) {
        fwd_call(L, n, used);
        return;
    }
    if (n->c && n->c->kind == TPL_N_RBLOCK && n->c->op == 7 && !block_arg(L, n)) return;
    if (proc_method(L, n, used)) return;
    if (blk_method(L, n, used)) return;
    if (!n->a && (name_is(n->val, "yield") || name_is(n->val, "block_given?")) && !def_find(L, n->val, false)) {
        if (name_is(n->val, "block_given?")) self_kernel_guard(L, n->val, n->off);
        yield_(L, name_is(n->val, "block_given?"), NULL, (tpl_value){ 0 }, n->b, n->c, n->off, used);
        return;
    }
    if (n->a && n->a->kind == TPL_N_RMETHOD && !n->a->a && !n->a->c && name_is(n->a->val, "method") && !n->b && !n->c &&
        name_is(n->val, "arity") && n->a->b && !n->a->b->next && n->a->b->kind == TPL_N_ARG && n->a->b->a->kind == TPL_N_CONST &&
        n->a->b->a->val.type == TPL_T_STR && !def_find(L, n->a->val, false) && !tpl_c_options(C)->erb_self &&
        (def_find(L, n->a->b->a->val, false) || method_ref(L, n->a) != 0 || !name_is(n->a->val, "raise"))) {
        method_arity(L, n, used);
        return;
    }
    if (!n->a && name_is(n->val, "method") && !def_find(L, n->val, false) && !tpl_c_host_func(C, n->val, TPL_HOST_GLOBAL) &&
        !tpl_c_options(C)->erb_self && (method_ref(L, n) != 0 || name_is(n->val, "method"))) {
        if (tpl_c_failed(C)) return;
        tpl_c_error(C, n->off, "unsupported Ruby construct: method(...) as a value (tpl passes &method(:name) of a template method)");
        return;
    }
    if (!n->a && name_is(n->val, "define_method")) {
        tpl_c_error(C, n->off, "unsupported Ruby construct: define_method (write a def)");
        return;
    }
    if (is_proc_lit(n)) {
        tpl_c_error(C, n->off, "unsupported Ruby construct: a Proc (%.*s) used as a value (tpl assigns it to a variable, calls it or passes it as &block)",
                    (int)n->val.len, n->val.u.s);
        return;
    }
    /* a.cycle.first(k) / a.cycle.take(k): the first k items of the endless Enumerator (the builtin's
     * name); a.cycle.first is a.first */
    if (n->a && !n->c && n->a->kind == TPL_N_RMETHOD && n->a->a && !n->a->b && !n->a->c && name_is(n->a->val, "cycle") &&
        (name_is(n->val, "first") || name_is(n->val, "take"))) {
        if (!n->b && name_is(n->val, "first")) n->a = n->a->a;
        else if (n->b && n->b->kind == TPL_N_ARG && !n->b->next) {
            n->a = n->a->a;
            n->val = name_is(n->val, "first") ? tpl_v_str("(cycle_first)", 13) : tpl_v_str("(cycle_take)", 12);
        }
    }
    /* [a, "b"].min / .max: Ruby's opt_newarray_min/max (a literal with an item that is not a static
     * literal: a string, a call, a variable, a range, an array), which compares each item with the best
     * so far; Array#min/max (a static literal is duparray's, a variable's) compares the best with the item */
    if (n->a && n->a->kind == TPL_N_LIST && !n->b && !n->c && (name_is(n->val, "min") || name_is(n->val, "max"))) {
        bool dyn = false, splat = false;
        for (const tpl_node *it = n->a->a; it; it = it->next) {
            if (it->kind == TPL_N_STARARG || it->kind == TPL_N_STARKW || it->kind == TPL_N_PAIR) splat = true;
            else if (!(it->kind == TPL_N_CONST && (it->val.type != TPL_T_STR || (it->val.flags & TPL_F_SYMBOL)))) dyn = true;
        }
        if (dyn && !splat) n->val = name_is(n->val, "min") ? tpl_v_str("(newarray_min)", 14) : tpl_v_str("(newarray_max)", 14);
    }
    /* x.to_yaml: Psych's once `require 'yaml'` ran (the builtin's name); before it Ruby's NoMethodError */
    if (n->a && L->defs->shellwords && !(n->a->kind == TPL_N_RCONSTNAME && name_is(n->a->val, "Shellwords"))) {
        /* String#shellescape/shellsplit and Array#shelljoin, which shellwords.rb adds */
        if (name_is(n->val, "shellescape")) n->val = tpl_v_str("(shellescape)", 13);
        else if (name_is(n->val, "shellsplit")) n->val = tpl_v_str("(shellsplit)", 12);
        else if (name_is(n->val, "shelljoin")) n->val = tpl_v_str("(shelljoin)", 11);
    }
    if (n->a && name_is(n->val, "to_yaml") && L->defs->yaml) {
        if (n->b) { tpl_c_error(C, n->b->off, "unsupported Ruby construct: to_yaml with options (tpl writes Psych's defaults)"); return; }
        n->val = tpl_v_str("(to_yaml)", 9);
    }
    if ((n->a && (name_is(n->val, "sample") || name_is(n->val, "shuffle") || name_is(n->val, "shuffle!"))) ||
        (!n->a && (name_is(n->val, "rand") || name_is(n->val, "srand")) && !def_find(L, n->val, false) &&
         !tpl_c_host_func(C, n->val, TPL_HOST_GLOBAL))) {
        tpl_c_error(C, n->off, "unsupported Ruby construct: %s%.*s (random: a tpl render is a function of its state; "
                    "pass the choice in the state)", n->a ? "Array#" : "Kernel#", (int)n->val.len, n->val.u.s);
        return;
    }
    if (n->a && n->a->kind == TPL_N_RCONSTNAME && name_is(n->a->val, "JSON") &&
        name_is(n->val, "dump") && n->b && n->b->next) {
        tpl_c_error(C, n->b->next->off,
                    "unsupported Ruby construct: JSON.%.*s with generator options (tpl writes json's defaults)",
                    (int)n->val.len, n->val.u.s);
        return;
    }
    /* require/require_relative: a library beyond Ruby's core (tpl has its core and JSON, already loaded) */
    if (!n->a && (name_is(n->val, "require") || name_is(n->val, "require_relative") || name_is(n->val, "load")) &&
        !def_find(L, n->val, false) && !tpl_c_host_func(C, n->val, TPL_HOST_GLOBAL)) {
        const tpl_node *lib = n->b && n->b->kind == TPL_N_ARG && !n->b->next ? n->b->a : NULL;
        if (name_is(n->val, "require") && !n->c && lib && lib->kind == TPL_N_CONST && lib->val.type == TPL_T_STR &&
            (name_is(lib->val, "yaml") || name_is(lib->val, "psych"))) {
            /* Psych: loaded by the first require (true), then already there (false); to_yaml exists after it */
            if (used) tpl_c_emit(C, TPL_OP_CONST, tpl_c_const(C, tpl_v_bool(!L->defs->yaml)), 1);
            L->defs->yaml = true;
            return;
        }
        if (name_is(n->val, "require") && !n->c && lib && lib->kind == TPL_N_CONST && lib->val.type == TPL_T_STR &&
            name_is(lib->val, "shellwords")) {
            if (used) tpl_c_emit(C, TPL_OP_CONST, tpl_c_const(C, tpl_v_bool(!L->defs->shellwords)), 1);
            L->defs->shellwords = true;
            return;
        }
        if (name_is(n->val, "require") && !n->c && lib && lib->kind == TPL_N_CONST && lib->val.type == TPL_T_STR &&
            (name_is(lib->val, "json") || name_is(lib->val, "erb"))) {
            if (used) tpl_c_emit(C, TPL_OP_CONST, tpl_c_const(C, tpl_v_bool(false)), 1);   /* already loaded */
            return;
        }
        tpl_c_error(C, n->off, "unsupported Ruby construct: %.*s (libraries beyond Ruby's core: tpl has the core, JSON, YAML and Shellwords)",
                    (int)n->val.len, n->val.u.s);
        return;
    }
    if (n->a && !n->b && !n->c && name_is(n->val, "cycle")) {
        tpl_c_error(C, n->off, "unsupported Ruby construct: cycle without a block or a count (an endless Enumerator)");
        return;
    }
    if (!n->a) {
        /* a method the template defines (in a def: one it may define later, unless Kernel's) */
        erb_def *d = def_target(L, n);
        if (d) { def_call(L, d, n, n->b, false, used); return; }
    }
    if (!n->a && !n->c && tpl_c_host_func(C, n->val, TPL_HOST_GLOBAL)) {
        /* a host global function (tpl_options.host_funcs) */
        uint32_t w = args(L, n->b);
        tpl_c_at(C, n->off);
        tpl_c_emit(C, TPL_OP_HOST_CALL, tpl_c_const(C, n->val), 1 - argw_count(w));
        tpl_c_word(C, w);
        if (!used) tpl_c_emit(C, TPL_OP_POP, 0, -1);
        return;
    }
    if (!n->a && name_is(n->val, "(loopstop)")) {
        tpl_c_at(C, n->off);
        static const char msg[] = "unsupported Ruby construct: the value of a loop that StopIteration ended (Ruby's is the "
                                  "Enumerator's result)";
        tpl_c_emit(C, TPL_OP_FAIL, tpl_c_const(C, tpl_v_str(msg, sizeof msg - 1)), used ? 1 : 0);
        return;
    }
    if (!n->a && n->c && !n->b && n->c->kind == TPL_N_RBLOCK && n->c->op != 8 && name_is(n->val, "loop") && L->loop_stop != n) {
        self_kernel_guard(L, n->val, n->off);
        /* Kernel#loop rescues StopIteration (an Enumerator's next past its end) and ends: as a
         * statement, `begin; loop do ... end; rescue StopIteration; end` (as a value its result
         * would be the exception's result: refused then, a break's value is the loop's) */
        tpl_node *stmts = tpl_node_new(tpl_c_arena(C), TPL_N_RSTMTS, n->off);
        tpl_node *cls = tpl_node_new(tpl_c_arena(C), TPL_N_RCONSTNAME, n->off);
        tpl_node *res = tpl_node_new(tpl_c_arena(C), TPL_N_RRESCUE, n->off);
        tpl_node *beg = tpl_node_new(tpl_c_arena(C), TPL_N_RBEGIN, n->off);
        if (!stmts || !cls || !res || !beg) { tpl_c_nomem(C, n->off); return; }
        stmts->b = n;
        cls->val = tpl_v_str("StopIteration", 13);
        res->a = cls;
        if (used) {
            tpl_node *stop = tpl_node_new(tpl_c_arena(C), TPL_N_RMETHOD, n->off);
            if (!stop) { tpl_c_nomem(C, n->off); return; }
            stop->val = S("(loopstop)");
            res->b = stop;
        }
        beg->a = stmts;
        beg->b = res;
        tpl_node *save = L->loop_stop, *save_next = n->next;
        L->loop_stop = n;
        n->next = NULL;
        begin_(L, beg, used);
        n->next = save_next;
        L->loop_stop = save;
        return;
    }
    if (!n->a && n->c && !n->b && n->c->kind == TPL_N_RBLOCK && n->c->op != 8 && name_is(n->val, "loop")) {
        /* Kernel#loop: until a break (its value: the break's) */
        while_loop(L, NULL, false, n->c, n->c->b, n->off, used, false);
        return;
    }
    if (!n->a && !n->b && !n->c && (name_is(n->val, "raise") || name_is(n->val, "fail"))) {
        self_kernel_guard(L, n->val, n->off);
        reraise(L, n->off);   /* raise(): the rescue clause's exception again */
        if (!used) tpl_c_emit(C, TPL_OP_POP, 0, -1);
        return;
    }
    if (!n->a) {
        int id = tpl_builtin_find(TPL_BK_RKERNEL, n->val.u.s, n->val.len);
        if (id < 0 && tpl_c_options(C)->erb_self) {
            /* self's method when the call runs (tpl_render_set_self_val), else NoMethodError */
            if (n->c) { tpl_c_error(C, n->c->off, "a block for `%.*s' is not supported", (int)n->val.len, n->val.u.s); return; }
            if (has_splat(n->b)) { tpl_c_error(C, n->off, "unsupported Ruby construct: a splat (* or **) in a call of self's method `%.*s'", (int)n->val.len, n->val.u.s); return; }
            if (!n->b && local_variables_refused(L, n->val, n->off)) {
                if (!used) tpl_c_emit(C, TPL_OP_POP, 0, -1);
                return;
            }
            uint32_t w = args(L, n->b);
            tpl_c_at(C, n->off);
            tpl_c_emit(C, TPL_OP_CALL_SELF_RB, tpl_c_name(C, n->val), 1 - argw_count(w));
            tpl_c_word(C, w);
            held_ruby_ran(L);
            /* a binding's local passed to it: the method may change its object in place */
            for (const tpl_node *a = n->b; a && !L->in_def; a = a->next) {
                const tpl_node *x = a->kind == TPL_N_ARG ? a->a : a;
                uint32_t sl;
                if (x && x->kind == TPL_N_NAME && x->val.len && x->val.u.s[0] != '@' && !name_is(x->val, "(self)") &&
                    !tpl_c_lookup(C, x->val, &sl))
                    held_add(L, x->val, true);
            }
            if (!used) tpl_c_emit(C, TPL_OP_POP, 0, -1);
            return;
        }
        if (id < 0 && name_is(n->val, "respond_to?") && self_respond_to(L, n, used)) return;
        if (id < 0) {
            /* NoMethodError when the call runs, as in Ruby (a branch that never runs renders; lint reports it) */
            /* a Kernel method Ruby has and tpl does not (Rational, Complex, ...): tpl's refusal, no rescue takes it */
            static const char *const io_kernel[] = { "system", "exec", "spawn", "open", "gets", "readline", "readlines",
                                                     "fork", "test", "select", "syscall", "`", NULL };
            bool io = false;
            for (int i = 0; io_kernel[i]; i++) io = io || name_is(n->val, io_kernel[i]);
            char msg[260];
            snprintf(msg, sizeof msg, io ? "unsupported Ruby construct: Kernel#%.*s " RB_NO_IO
                                    : ruby_kernel_method(n->val) || self_method(n->val) ? "unsupported Ruby construct: Kernel#%.*s is not implemented by tpl"
                                                                : "undefined method `%.*s' for main:Object (NoMethodError)",
                     n->val.len > 100 ? 100 : (int)n->val.len, n->val.u.s);
            tpl_c_at(C, n->off);
            tpl_c_emit(C, TPL_OP_FAIL, tpl_c_const(C, tpl_v_str(msg, strlen(msg))), used ? 0 : -1);
            return;
        }
        if (n->c) { tpl_c_error(C, n->c->off, "a block for `%.*s' is not supported", (int)n->val.len, n->val.u.s); return; }
        if (id == TPL_B_RKERNEL_tr) {
            /* recorded for tr-extract and lint, as Jinja's tr(): the text argument, positional or text: */
            const tpl_node *text = NULL;
            for (const tpl_node *a = n->b; a && !text; a = a->next)
                if (a->kind != TPL_N_KWARG || (a->val.len == 4 && memcmp(a->val.u.s, "text", 4) == 0)) text = a->a;
            tpl_c_note_tr(C, n->off, text);
        }
        uint32_t w = args(L, n->b);
        tpl_c_at(C, n->off);
        tpl_c_emit(C, TPL_OP_CALL_NAME, tpl_c_name(C, n->val), 1 - argw_count(w));
        tpl_c_word(C, (uint32_t)id);
        tpl_c_word(C, w);
        if (!used) tpl_c_emit(C, TPL_OP_POP, 0, -1);
        return;
    }
    if (n->c && n->a && n->a->kind == TPL_N_RMETHOD && !n->a->c && n->a->a &&
        (name_is(n->val, "with_index") || name_is(n->val, "each_with_index"))) {
        /* recv.m.with_index { } on Ruby's Enumerator of m: tpl's blockless m answers the array of what it
         * would yield (README Deviations), and with_index the block's values. That is m's result for
         * map/collect (map.each_with_index is map.with_index), and each's when the value is unused;
         * any other m (select, filter_map, ...) is refused, never a different result. */
        tpl_value m = n->a->val;
        if (name_is(m, "map") || name_is(m, "collect")) {
            if (name_is(n->val, "each_with_index")) {
                if (n->b) { tpl_c_error(C, n->off, "wrong number of arguments (given 1, expected 0) (ArgumentError)"); return; }
                n->val = tpl_v_str("with_index", 10);
            }
        } else if (name_is(m, "each") || name_is(m, "each_with_index") || name_is(m, "each_entry") ||
                   name_is(m, "each_slice") || name_is(m, "each_cons") || name_is(m, "times") ||
                   name_is(m, "reverse_each") || name_is(m, "each_pair")) {
            if (used) {
                tpl_c_error(C, n->off, "unsupported Ruby construct: the value of %.*s.%.*s (an Enumerator's; use it as a statement)",
                            (int)m.len, m.u.s, (int)n->val.len, n->val.u.s);
                return;
            }
        } else if (enum_by_index(m, n->a->b)) {
            /* select.with_index { }, group_by.each_with_index { }, ...: the runtime's Enumerator of m runs m
             * on the block's values (stdlib/ruby/ruby.c enum_by_index) */
            if (name_is(n->val, "each_with_index")) {
                if (n->b) { tpl_c_error(C, n->off, "wrong number of arguments (given 1, expected 0) (ArgumentError)"); return; }
                n->val = tpl_v_str("with_index", 10);
            }
        } else if (blockless_enumerator(m)) {
            tpl_c_error(C, n->off, "unsupported Ruby construct: %.*s.%.*s (an Enumerator of %.*s)",
                        (int)m.len, m.u.s, (int)n->val.len, n->val.u.s, (int)m.len, m.u.s);
            return;
        } /* (any other m returns a value, an Array as first(3) or sort does: its own method runs) */
    }
    if (!used && n->c && !n->b && n->c->kind == TPL_N_RBLOCK && n->c->op != 8) {
        int mode = loop_mode(n->val);
        if (mode >= 0 && params_simple(n->c->a)) { loop_block(L, n, mode); return; }
    }
    if (n->c && n->c->kind == TPL_N_RBLOCK && n->c->op != 8 && name_is(n->val, "each_with_object") && each_with_object(L, n, used)) return;
    if (n->c && n->c->kind == TPL_N_RBLOCK && n->c->op != 8 && name_is(n->val, "tap") && tap_fresh(L, n, used)) return;
    int chk, wbf;
    const tpl_node *twin, *chkn;
    own_group g;
    if (!own_site(L, n->a, n->val, n->off, &chk, &twin, &wbf, &chkn, &g)) return;
    bool varroot = item_root(n->a) != NULL;
    if (chk && varroot) {
        expr(L, (tpl_node *)chkn);
        own_check(L, chk, n->val, n->off);
        tpl_c_emit(C, TPL_OP_POP, 0, -1);
    }
    bool bs_was = L->bound_store;
    if (changes_receiver(n)) {
        L->bound_store = bs_was || chk == 4;
        own_receiver(L, n->a, n->off);
        L->bound_store = bs_was;
    }
    if (n->c && n->c->kind == TPL_N_RBLOCK && n->c->op != 8 && !params_simple(n->c->a) && raw_nosplat(n->c->a) && n->a &&
        n->a->kind == TPL_N_RMETHOD && !n->a->c &&
        (name_is(n->a->val, "each_with_index") || name_is(n->a->val, "with_index") || name_is(n->a->val, "each_with_object") ||
         name_is(n->a->val, "with_object") || name_is(n->a->val, "each_entry"))) {
        tpl_c_error(C, n->c->off, "unsupported Ruby construct: a block of these parameters to %.*s on an Enumerator of %.*s (Ruby passes it each yield's two values)",
                    (int)n->val.len, n->val.u.s, (int)n->a->val.len, n->a->val.u.s);
        return;
    }
    if (name_is(n->val, "encode") && bare_hash(n->b)) {
        /* s.encode(:xml => :attr): a brace-less Hash is String#encode's keywords (Ruby 3.1), as **{...} */
        tpl_node *bh = (tpl_node *)bare_hash(n->b);
        bh->kind = TPL_N_STARKW;
    }
    erb_blocals bl = { .n = 0 };
    L->pending_call = n;
    uint32_t bw = n->c ? (n->c->op == 8 ? (uint32_t)n->c->val.u.i : block_sub(L, n->c, &bl)) : 0;
    expr(L, n->a);
    if (chk && !varroot) own_check(L, chk, n->val, n->off);
    if (has_splat(n->b)) {
        /* r.m(*a, **h): r.(apply)(name, args, keywords) spreads them (CALL_METHOD_RB's arguments are fixed) */
        tpl_c_emit(C, TPL_OP_CONST, tpl_c_const(C, n->val), 1);
        args_dyn(L, n->b, NULL);
        tpl_c_at(C, n->off);
        tpl_c_emit(C, TPL_OP_CALL_METHOD_RB, tpl_c_name(C, S("(apply)")), -3);
        tpl_c_word(C, TPL_ARGW(3, 0, TPL_NO_KW));
    } else {
        uint32_t w = args(L, n->b);
        tpl_c_at(C, n->off);
        tpl_c_emit(C, TPL_OP_CALL_METHOD_RB, tpl_c_name(C, n->val), -argw_count(w));
        tpl_c_word(C, w);
    }
    tpl_c_word(C, bw);
    blocal_unset(L, &bl);
    L->bound_store = bs_was || chk == 4;
    /* push / << / append / concat / unshift / prepend return a new array or string: store it back into the
     * variable at the root of the chain (`buf << a << b`), as values are immutable */
    const tpl_node *root = shovel_root(n);
    if (bang_method(n)) {
        /* a string's new value, unless nil, back into the variable (or item of one) it came from */
        const tpl_node *v = n->a;
        while (v->kind == TPL_N_GETITEM) v = v->a;
        if (v->kind == TPL_N_NAME || v->kind == TPL_N_RIVAR) {
            tpl_c_emit(C, TPL_OP_DUP, 0, 1);
            uint32_t skip = tpl_c_emit(C, TPL_OP_JF_RB, 0, -1);
            tpl_c_emit(C, TPL_OP_DUP, 0, 1);
            if (n->a->kind == TPL_N_GETITEM) index_store(L, n->a, n->off, false);
            else store_var(L, n->a->val, n->off);
            tpl_c_patch(C, skip, tpl_c_here(C));
        }
        if (wbf >= 0) item_write_back(L, wbf, n->a, n->off);
    }
    if (root) {
        /* `x << v` on an Integer shifts: x keeps its value (the result is stored back unless a number) */
        uint32_t jnum = 0;
        if (name_is(n->val, "<<")) {
            tpl_c_emit(C, TPL_OP_DUP, 0, 1);
            tpl_c_emit(C, TPL_OP_CALL_METHOD_RB, tpl_c_name(C, S("(numeric)")), 0);
            tpl_c_word(C, TPL_ARGW(0, 0, TPL_NO_KW));
            tpl_c_word(C, 0);
            jnum = tpl_c_emit(C, TPL_OP_JT_RB, 0, -1);
        }
        tpl_c_emit(C, TPL_OP_DUP, 0, 1);
        if (root->kind == TPL_N_GETITEM) index_store(L, (tpl_node *)root, n->off, false);
        else store_var(L, root->val, n->off);
        if (jnum) tpl_c_patch(C, jnum, tpl_c_here(C));
        if (!used) tpl_c_emit(C, TPL_OP_POP, 0, -1);
        if (wbf >= 0) item_write_back(L, wbf, n->a, n->off);   /* names.each { |n| n.freeze } */
        if (twin) twin_sync(L, twin);
        group_after(L, &g, n->off);
        L->bound_store = bs_was;
        return;
    }
    if (twin) twin_sync(L, twin);
    group_after(L, &g, n->off);
    L->bound_store = bs_was;
    if (!used) tpl_c_emit(C, TPL_OP_POP, 0, -1);
}

/* Before a call that changes receiver r (changes_receiver): r, a variable or an item of one, stored
 * back as (own) answers it (itself, or a copy this render may change in place). */
static void own_receiver(erb_low *L, tpl_node *r, uint32_t off)
{
    const tpl_node *v = r;
    while (v->kind == TPL_N_GETITEM) v = v->a;
    if (v->kind != TPL_N_NAME && v->kind != TPL_N_RIVAR) return;
    if (r->kind == TPL_N_GETITEM) own_receiver(L, r->a, off);
    expr(L, r);
    tpl_c_at(C, off);
    tpl_c_emit(C, TPL_OP_CALL_METHOD_RB, tpl_c_name(C, S("(own)")), 0);
    tpl_c_word(C, TPL_ARGW(0, 0, TPL_NO_KW));
    tpl_c_word(C, 0);
    if (r->kind == TPL_N_GETITEM) index_store(L, r, off, false);
    else store_var(L, r->val, off);
}

/* `r[k] = v` with v on the stack: r's new array or hash (the `[]=` builtin copies it with the item
 * set) is stored back into the variable at the root of r (`h[a][b] = v` sets h[a] too), as values
 * are immutable (README: deviations). */
static void index_store(erb_low *L, tpl_node *g, uint32_t off, bool assign)
{
    tpl_node *r = g->a;
    /* on any other value (`h.fetch(:a)[:b] = v`), []= changes it in place when this render built it */
    bool store = r->kind == TPL_N_NAME || r->kind == TPL_N_RIVAR || r->kind == TPL_N_GETITEM;
    uint32_t tmp = tpl_c_slot(C);
    tpl_c_at(C, off);
    tpl_c_emit(C, TPL_OP_STORE_SLOT, tmp, -1);
    expr(L, r);
    uint32_t nidx = 1;
    if (g->kind == TPL_N_GETITEM) {
        expr(L, g->b);
    } else {   /* r[i, n] = v, r[range] = v */
        nidx = 0;
        for (tpl_node *x = g->b; x; x = x->next, nidx++) expr(L, x->a);
    }
    load_local(L, tmp, S("(value)"));
    tpl_c_at(C, off);
    /* a store-back (`h[k] << x`, the h[a] of `h[a][b] = v`) sets only a key h already has: an item
     * that came from a Hash's default (Hash.new([])) is not stored, as Ruby never assigns it */
    tpl_c_emit(C, TPL_OP_CALL_METHOD_RB, tpl_c_name(C, assign ? S("[]=") : S("(store_back)")), -(int)(nidx + 1));
    tpl_c_word(C, TPL_ARGW(nidx + 1, 0, TPL_NO_KW));
    tpl_c_word(C, 0);
    if (!store) tpl_c_emit(C, TPL_OP_POP, 0, -1);
    else if (r->kind == TPL_N_GETITEM) index_store(L, r, off, false);
    else store_var(L, r->val, off);
}

/* ------------------------------------------------------------------ case / if */

static void case_(erb_low *L, tpl_node *n, bool value)
{
    uint32_t subj = 0;
    tpl_value sname = S("(case)");
    if (n->a) {
        expr(L, n->a);
        subj = tpl_c_slot(C);
        tpl_c_emit(C, TPL_OP_STORE_SLOT, subj, -1);
    }
    uint32_t ends[256];
    int nends = 0;
    for (tpl_node *w = n->b; w && !tpl_c_failed(C); w = w->next) {
        uint32_t hits[64];
        int nh = 0;
        for (tpl_node *v = w->a; v; v = v->next) {
            tpl_c_at(C, v->off);
            if (v->kind == TPL_N_STARARG) {   /* when *list: Array(list), then some item === the subject */
                expr(L, v->a);
                tpl_c_at(C, v->off);
                tpl_c_emit(C, TPL_OP_CALL_NAME, tpl_c_name(C, S("(splat)")), 0);   /* (Kernel#Array under a name no state or self shadows: Ruby splats with to_a) */
                tpl_c_word(C, (uint32_t)TPL_B_RKERNEL_Array);
                tpl_c_word(C, TPL_ARGW(1, 0, TPL_NO_KW));
                if (n->a) load_local(L, subj, sname);
                else tpl_c_emit(C, TPL_OP_NONE, 0, 1);
                tpl_c_emit(C, n->a ? TPL_OP_TRUE : TPL_OP_FALSE, 0, 1);
                tpl_c_at(C, v->off);
                tpl_c_emit(C, TPL_OP_CALL_NAME, tpl_c_name(C, S("(when_splat)")), -2);
                tpl_c_word(C, (uint32_t)TPL_B_RKERNEL_when_splat);
                tpl_c_word(C, TPL_ARGW(3, 0, TPL_NO_KW));
            } else if (!n->a) {
                expr(L, v);
            } else if (v->kind == TPL_N_CONST) {
                load_local(L, subj, sname);
                expr(L, v);
                tpl_c_emit(C, TPL_OP_EQ_RB, 0, -1);
            } else {
                expr(L, v);
                load_local(L, subj, sname);
                tpl_c_at(C, v->off);
                tpl_c_emit(C, TPL_OP_CALL_METHOD_RB, tpl_c_name(C, S("===")), -1);
                tpl_c_word(C, TPL_ARGW(1, 0, TPL_NO_KW));
                tpl_c_word(C, 0);
            }
            if (nh >= 64) { tpl_c_error(C, v->off, "too many values in one when"); return; }
            hits[nh++] = tpl_c_emit(C, TPL_OP_JT_PY, 0, -1);
        }
        uint32_t next = tpl_c_emit(C, TPL_OP_JUMP, 0, 0);
        uint32_t here = tpl_c_here(C);
        for (int i = 0; i < nh; i++) tpl_c_patch(C, hits[i], here);
        if (value) value_body(L, w->b);
        else body(L, w->b);
        if (nends >= 256) { tpl_c_error(C, w->off, "too many when clauses"); return; }
        ends[nends++] = tpl_c_emit(C, TPL_OP_JUMP, 0, value ? -1 : 0);
        tpl_c_patch(C, next, tpl_c_here(C));
    }
    if (value) {
        if (n->c) value_body(L, n->c);
        else tpl_c_emit(C, TPL_OP_NONE, 0, 1);
    } else {
        body(L, n->c);
    }
    uint32_t end = tpl_c_here(C);
    for (int i = 0; i < nends; i++) tpl_c_patch(C, ends[i], end);
}

static bool add_link(const tpl_node *n) { return n->kind == TPL_N_BINOP && n->op == TPL_AOP_ADD; }

/* The variable whose value e's evaluation reads first (x of x, x["k"], x.m(...), x&.m, x[i].m), else NULL. */
static const tpl_node *spine_root(const tpl_node *e)
{
    for (int d = 0; e && d < 64; d++) {
        switch (e->kind) {
        case TPL_N_NAME: return e;
        case TPL_N_GETITEM: case TPL_N_RSAFE: e = e->a; break;
        case TPL_N_RMETHOD: if (!e->a) return NULL; e = e->a; break;
        default: return NULL;
        }
    }
    return NULL;
}

/* Whether evaluating operand x of a + chain can neither raise nor change anything once the operands
 * before it (the chain prev) were evaluated: a literal, an ivar (nil when unset), or a plain variable
 * (no def, no Kernel method) that an earlier operand already read (a local, or the state's key: it was
 * there then). An item read is not (a Hash's default proc runs Ruby code), nor a method call (nil.strip). */
static bool add_operand_safe(erb_low *L, const tpl_node *x, const tpl_node *prev)
{
    if (x->kind == TPL_N_CONST) return true;
    if (x->kind != TPL_N_NAME || !x->val.len) return false;
    const char *s = x->val.u.s;
    if (s[0] == '@') return x->val.len > 1 && s[1] != '@';
    if (!(s[0] == '_' || (s[0] >= 'a' && s[0] <= 'z')) || s[x->val.len - 1] == '?' || s[x->val.len - 1] == '!') return false;
    uint32_t slot;
    if (!tpl_c_lookup(C, x->val, &slot)) {
        if (L->in_def || def_find(L, x->val, false) || self_method(x->val) || name_is(x->val, "yield") ||
            name_is(x->val, "raise") || name_is(x->val, "fail") || name_is(x->val, "_erbout") || name_is(x->val, "__method__") ||
            tpl_builtin_find(TPL_BK_RKERNEL, x->val.u.s, x->val.len) >= 0 || tpl_c_host_func(C, x->val, TPL_HOST_GLOBAL))
            return false;
    }
    for (int i = 0; i < 16 && prev; i++) {
        const tpl_node *r = spine_root(add_link(prev) ? prev->b : prev);
        if (r && r->val.len == x->val.len && memcmp(r->val.u.s, s, x->val.len) == 0) return true;
        prev = add_link(prev) ? prev->a : NULL;
    }
    return false;
}

static void add_chain_emit(erb_low *L, tpl_node *s, const tpl_node *stop)
{
    if (s == stop) return;
    add_chain_emit(L, s->a, stop);
    expr(L, s->b);
}

/* The operands of a left-leaning chain of + (a + b + c) one ADDS adds: how many; compiled when emit is
 * set. Ruby adds left to right, so an operand after the second is evaluated after the additions before
 * it: from the last operand that may raise or act (add_operand_safe) on, the chain before it is one
 * operand (its own chain, compiled first): `'a' + 1 + [].fetch(3)` is the TypeError of the first +. */
static bool add_operand_safe_cb(void *L, const tpl_node *x, const tpl_node *prev)
{
    return add_operand_safe(L, x, prev);
}

static uint32_t add_chain(erb_low *L, tpl_node *n, bool emit)
{
    tpl_node *cut;
    uint32_t nadd = tpl_add_chain_cut(n, add_link, add_operand_safe_cb, L, &cut);
    if (emit) {
        expr(L, cut);
        if (nadd > 1) add_chain_emit(L, n, cut);
    }
    return nadd;
}

static void switch_expr(void *L, tpl_node *n) { expr(L, n); }
static void switch_body(void *L, tpl_node *n) { body(L, n); }

/* An if/elsif/else chain (a statement, or an expression with the taken branch's value),
 * compiled in a loop: a chain of 10,000 elsifs is not nesting. */
static void if_(erb_low *L, tpl_node *n, bool value)
{
    size_t mark = tpl_c_chain_begin(C);
    for (tpl_node *cur = n; cur && !tpl_c_failed(C);) {
        tpl_c_at(C, cur->off);
        tpl_node *next = NULL;
        /* if x == "a" … elsif x == "b" || x == "c" … as a SWITCH_STR jump table (statements only) */
        if (value || !tpl_c_if_switch(C, cur, switch_expr, switch_body, L, &next)) {
            tpl_node *cond = cur->a;
            while (cond->kind == TPL_N_UNOP && cond->op == TPL_AOP_NOT) cond = cond->a;
            if (cond->kind == TPL_N_RREGEX) {
                /* Ruby matches a bare regex condition against $_ (a warning); tpl refuses it */
                tpl_c_error(C, cond->off, "a regex literal as a condition is not supported (use =~ or match?)");
                break;
            }
            expr(L, cur->a);
            tpl_c_at(C, cur->off);
            uint32_t jf = tpl_c_emit(C, TPL_OP_JF_PY, 0, -1);
            if (value) value_body(L, cur->b);
            else body(L, cur->b);
            if (!value && !cur->c) {
                tpl_c_patch(C, jf, tpl_c_here(C));
                break;
            }
            tpl_c_chain_jump(C, tpl_c_emit(C, TPL_OP_JUMP, 0, value ? -1 : 0));
            tpl_c_patch(C, jf, tpl_c_here(C));
            next = cur->c;
        }
        if (next && next->kind == TPL_N_IF && !next->next) { cur = next; continue; } /* elsif */
        if (value) {
            if (next) value_body(L, next);
            else tpl_c_emit(C, TPL_OP_NONE, 0, 1);
        } else {
            body(L, next);
        }
        break;
    }
    tpl_c_chain_end(C, mark);
}

/* ------------------------------------------------------------------ expressions */

static void expr_(erb_low *L, tpl_node *n);

/* Ruby's NameError text for the uninitialized constant name, with did_you_mean's suggestions over
 * Ruby's constants after the class, as Ruby prints them; false after an out-of-memory error. */
static bool const_name_error(erb_low *L, tpl_value name, char *msg, size_t cap)
{
    char sugg[256];
    int k = tpl_rb_dym_const(tpl_c_arena(C), name.u.s, name.len > 100 ? 100 : name.len, sugg, sizeof sugg);
    if (k == -1) { tpl_c_nomem(C, 0); return false; }
    snprintf(msg, cap, "uninitialized constant %.*s (NameError)%s", name.len > 100 ? 100 : (int)name.len, name.u.s,
             k > 0 ? sugg : "");
    return true;
}

static void expr(erb_low *L, tpl_node *n)
{
    expr_(L, n);
    if (n && n->kind == TPL_N_SET) held_set(L, n);
}

static void expr_(erb_low *L, tpl_node *n)
{
    if (tpl_c_failed(C) || !n) return;
    if (n->kind == TPL_N_SET && n->a && n->a->kind == TPL_N_NAME && L->defs->npend) {
        if (pend_has(L, n->a->val)) proc_forget(L, n->a->val);   /* a block-local again: a new variable (no Proc yet) */
        pend_set(L, n->a->val, false);
    }
    tpl_c_at(C, n->off);
    uint32_t slot;
    switch (n->kind) {
    case TPL_N_CONST:
        switch (n->val.type) {
        case TPL_T_NONE: tpl_c_emit(C, TPL_OP_NONE, 0, 1); return;
        case TPL_T_BOOL: tpl_c_emit(C, n->val.u.i ? TPL_OP_TRUE : TPL_OP_FALSE, 0, 1); return;
        case TPL_T_INT:
            if (n->val.u.i >= -(1 << 22) && n->val.u.i < (1 << 22)) { tpl_c_emit(C, TPL_OP_INT, (uint32_t)(n->val.u.i & 0xFFFFFF), 1); return; }
            break;
        default: break;
        }
        if (L->frozen && n->val.type == TPL_T_STR && !(n->val.flags & (TPL_F_SYMBOL | TPL_F_REGEX_RB | TPL_F_CLASS_RB))) {
            tpl_value v = n->val;
            v.flags |= TPL_F_FROZEN_RB;
            tpl_c_emit(C, TPL_OP_CONST, tpl_c_const(C, v), 1);
            return;
        }
        tpl_c_emit(C, TPL_OP_CONST, tpl_c_const(C, n->val), 1);
        return;
    case TPL_N_NAME:
    case TPL_N_RIVAR: {
        /* `@x` (val "@x") is a variable of its own, distinct from the local `x`; both read the state key
         * "x" until assigned. A missing key: NameError for a local (a method call in Ruby), nil for an
         * ivar and for a local being declared by its own `x ||= v` (n->op set by op_assign) */
        if (n->kind == TPL_N_NAME && name_is(n->val, "__FILE__")) {
            /* the script's file name: ERB#filename, which the reference harness (and Rails, Puppet)
             * set to the template's file name; tpl's is the name it compiled, less its folders */
            const char *nm = tpl_c_template_name(C), *slash = strrchr(nm, '/');
            const char *base = slash ? slash + 1 : nm;
            tpl_value v = tpl_v_str(base, strlen(base));
            if (L->frozen) v.flags |= TPL_F_FROZEN_RB;
            tpl_c_emit(C, TPL_OP_CONST, tpl_c_const(C, v), 1);
            return;
        }
        if (n->kind == TPL_N_NAME && name_is(n->val, "__method__")) {
            /* the def's name as a Symbol; at the top it would be the method that called ERB#result */
            if (!L->in_def) { tpl_c_error(C, n->off, "unsupported Ruby construct '__method__' outside a def"); return; }
            tpl_value v = L->def_name;
            v.flags |= TPL_F_SYMBOL;
            tpl_c_emit(C, TPL_OP_CONST, tpl_c_const(C, v), 1);
            return;
        }
        if (n->val.len == 2 && n->val.u.s[0] == '$' && n->val.u.s[1] == '!') {   /* $!: the exception a rescue clause runs for */
            exc_push(L, n->off);
            return;
        }
        if (n->kind == TPL_N_NAME && (name_is(n->val, "raise") || name_is(n->val, "fail")) && !tpl_c_lookup(C, n->val, &slot)) {
            reraise(L, n->off);   /* a bare raise: the clause's exception again, else RuntimeError */
            return;
        }
        if (n->val.len > 1 && n->val.u.s[0] == '$') {   /* $~, $&, $`, $' and $1..$9: the frame's last match */
            bool md = n->val.u.s[1] == '~';
            if (!md) {
                int64_t g = 0;
                char c1 = n->val.u.s[1];
                if (c1 == '`' || c1 == '\'') g = c1 == '`' ? 100001 : 100002;   /* (stdlib/ruby/ruby.c r_k_nth_match) */
                else
                    for (uint32_t i = 1; i < n->val.len && c1 != '&'; i++) g = g * 10 + (n->val.u.s[i] - '0');
                tpl_c_emit(C, TPL_OP_INT, (uint32_t)g, 1);
            }
            tpl_value fn = md ? S("$~") : S("(nth_match)");
            tpl_c_at(C, n->off);
            tpl_c_emit(C, TPL_OP_CALL_NAME, tpl_c_name(C, fn), md ? 1 : 0);
            tpl_c_word(C, (uint32_t)(md ? TPL_B_RKERNEL_last_match : TPL_B_RKERNEL_nth_match));
            tpl_c_word(C, TPL_ARGW(md ? 0 : 1, 0, TPL_NO_KW));
            return;
        }
        if (name_is(n->val, "(self)")) {
            tpl_c_error(C, n->off, "unsupported Ruby construct 'self' (as a value: self.name(args) calls self's method)");
            return;
        }
        bool ivar = n->val.len > 1 && n->val.u.s[0] == '@';
        tpl_value key = ivar ? tpl_v_str(n->val.u.s + 1, n->val.len - 1) : n->val;
        if (!ivar && !tpl_c_lookup(C, n->val, &slot) && (name_is(n->val, "yield") || name_is(n->val, "block_given?")) &&
            !def_find(L, n->val, false)) {
            if (name_is(n->val, "block_given?")) self_kernel_guard(L, n->val, n->off);
            yield_(L, name_is(n->val, "block_given?"), NULL, (tpl_value){ 0 }, NULL, NULL, n->off, true);
            return;
        }
        if (!ivar && blk_var(L, n)) {
            tpl_c_error(C, n->off, "unsupported Ruby construct: the block `%.*s' used as a value (tpl calls it: %.*s.call, yield, "
                        "block_given?, &%.*s)", (int)n->val.len, n->val.u.s, (int)n->val.len, n->val.u.s, (int)n->val.len, n->val.u.s);
            return;
        }
        if (!ivar && proc_var(L, n)) {
            tpl_c_error(C, n->off, "unsupported Ruby construct: the Proc `%.*s' used as a value (tpl calls it: %.*s.call, .(), [], "
                        "yield, arity, lambda?, &%.*s)", (int)n->val.len, n->val.u.s, (int)n->val.len, n->val.u.s, (int)n->val.len, n->val.u.s);
            return;
        }
        if (tpl_c_lookup(C, n->val, &slot)) {
            if (!ivar && !n->op && !L->in_def && L->defs->nbound && bound_local(L, n->val) && !blk_param(L, n->val)) {
                /* a binding's local predeclare_end declared: the slot (the state key while unset) when the state
                 * has the key, else Ruby's NameError (no such local) */
                local_or_name(L, slot, key, n->off);
                if (L->nblk) read_in_block(L, slot);
                return;
            }
            if (!ivar && !n->op && L->defs->npend && pend_has(L, n->val) && !blk_param(L, n->val)) {   /* (a parameter of a block being lowered is its own) */
                /* a block-local name read where Ruby's parser has no such local (after its block, or in it
                 * before its assignment): the binding's local when the state has the key (the outer
                 * variable the block assigned), else a method call: NameError */
                local_or_name(L, slot, key, n->off);
                return;
            }
            load_local(L, slot, key);
            if (!ivar && L->nblk) read_in_block(L, slot);
            if (!ivar && !n->op && !L->in_def) held_guard(L, key, n->off);
            return;
        }
        /* the template's @x (its root slot declared at the first read: a def's `@a = (@a || 0) + 1` reads what the
         * def's last call set, not the state key again) */
        if (ivar && L->in_def && (tpl_c_lookup_root(C, n->val, &slot) || (slot = tpl_c_declare_root(C, n->val), true))) {
            tpl_c_emit(C, TPL_OP_LOAD_ROOT, slot, 1);
            tpl_c_word(C, tpl_c_name(C, key));
            return;
        }
        if (!ivar) {
            /* a method of the template called without arguments (in a def: any name that is no local) */
            erb_def *d = n->op ? NULL : def_find(L, n->val, false);
            if (!d && L->in_def && !n->op && tpl_builtin_find(TPL_BK_RKERNEL, n->val.u.s, n->val.len) < 0) d = def_find(L, n->val, true);
            if (d && !L->in_def) {
                /* the binding's local of that name (a state key, even nil or false) first, as Ruby reads it */
                tpl_c_emit(C, TPL_OP_CONST, tpl_c_const(C, key), 1);
                tpl_c_emit(C, TPL_OP_TRUE, 0, 1);
                tpl_c_emit(C, TPL_OP_FALSE, 0, 1);
                tpl_c_emit(C, TPL_OP_CALL_NAME, tpl_c_name(C, S("(defined)")), -2);
                tpl_c_word(C, (uint32_t)TPL_B_RKERNEL_defined_state);
                tpl_c_word(C, TPL_ARGW(3, 0, TPL_NO_KW));
                uint32_t no = tpl_c_emit(C, TPL_OP_JF_RB, 0, -1);
                tpl_c_emit(C, TPL_OP_LOAD_IVAR_RB, tpl_c_name(C, key), 1);
                uint32_t end = tpl_c_emit(C, TPL_OP_JUMP, 0, -1);
                tpl_c_patch(C, no, tpl_c_here(C));
                def_call(L, d, n, NULL, true, true);
                tpl_c_patch(C, end, tpl_c_here(C));
                return;
            }
            if (d) { def_call(L, d, n, NULL, true, true); return; }
            if (L->in_def && n->op) { tpl_c_emit(C, TPL_OP_NONE, 0, 1); return; } /* x ||= v: a new local of the method */
        }
        if (!ivar && !n->op && local_variables_refused(L, key, n->off)) return;
        if (!ivar && !n->op && !L->in_def && !tpl_c_options(C)->erb_self && name_is(n->val, "_erbout")) {
            /* ERB's own output buffer (a local of its script), whatever the state holds */
            tpl_c_error(C, n->off, "unsupported Ruby construct: _erbout (ERB's output buffer)");
            return;
        }
        if (!ivar && !n->op && !L->in_def && !tpl_c_options(C)->erb_self && self_method(n->val)) {
            /* a Kernel method of Ruby's main object tpl does not have (binding, hash, test ...): the
             * binding's local when the state has the key, else a refusal no rescue catches (Ruby calls
             * the method: a NameError here would be a different answer) */
            kernel_name(L, key, n->off);
            return;
        }
        tpl_c_emit(C, ivar || n->op ? TPL_OP_LOAD_IVAR_RB : TPL_OP_LOAD_NAME_RB, tpl_c_name(C, key), 1);
        if (!ivar && !n->op && tpl_c_options(C)->erb_self && !L->in_def) {
            /* a binding's local, or a call of self's method (Ruby code) */
            held_guard(L, key, n->off);
            held_ruby_ran(L);
        }
        return;
    }
    case TPL_N_RDEF:
        def_(L, n, true);
        return;
    case TPL_N_RRETURN:
        stmt(L, n);
        tpl_c_emit(C, TPL_OP_NONE, 0, 1);
        return;
    case TPL_N_RCONSTNAME: {
        bool known = false;
        for (int i = 0; known_classes[i]; i++) known = known || name_is(n->val, known_classes[i]);
        known = known || (name_is(n->val, "Shellwords") && L->defs->shellwords);   /* after require 'shellwords' */
        if (name_is(n->val, "Time") || name_is(n->val, "Random") || name_is(n->val, "Process")) {
            /* Ruby's core has them; a render is a function of its state (no clock, no randomness) */
            tpl_c_error(C, n->off, "unsupported Ruby construct: %.*s (the clock and randomness: a tpl render is a "
                        "function of its state; pass the time or the choice in the state)", (int)n->val.len, n->val.u.s);
            return;
        }
        static const struct { const char *name; double v; } num_consts[] = {
            { "Float::INFINITY", HUGE_VAL }, { "Float::NAN", NAN }, { "Float::EPSILON", DBL_EPSILON },
            { "Float::MAX", DBL_MAX }, { "Float::MIN", DBL_MIN }, { "Math::PI", 3.141592653589793 },
            { "Math::E", 2.718281828459045 } };
        for (size_t i = 0; i < sizeof num_consts / sizeof num_consts[0]; i++)
            if (name_is(n->val, num_consts[i].name)) {
                tpl_c_emit(C, TPL_OP_CONST, tpl_c_const(C, tpl_v_float(num_consts[i].v)), 1);
                return;
            }
        static const struct { const char *name; int v; } int_consts[] = {
            { "Float::DIG", DBL_DIG }, { "Float::MANT_DIG", DBL_MANT_DIG }, { "Float::MAX_10_EXP", DBL_MAX_10_EXP },
            { "Float::MAX_EXP", DBL_MAX_EXP }, { "Float::MIN_10_EXP", DBL_MIN_10_EXP }, { "Float::MIN_EXP", DBL_MIN_EXP },
            { "Float::RADIX", FLT_RADIX } };
        for (size_t i = 0; i < sizeof int_consts / sizeof int_consts[0]; i++)
            if (name_is(n->val, int_consts[i].name)) {
                tpl_c_emit(C, TPL_OP_CONST, tpl_c_const(C, tpl_v_int(int_consts[i].v)), 1);
                return;
            }
        static const char *const io_consts[] = { "ENV", "IO", "Dir", "FileTest", "STDIN", "STDOUT", "STDERR", "ARGV",
                                                 "ARGF", "ObjectSpace", NULL };
        for (int i = 0; io_consts[i]; i++)
            if (name_is(n->val, io_consts[i])) {   /* when it runs (a branch that never runs renders); no rescue takes it */
                char msg[200];
                snprintf(msg, sizeof msg, "unsupported Ruby construct: %s " RB_NO_IO, io_consts[i]);
                tpl_c_at(C, n->off);
                tpl_c_emit(C, TPL_OP_FAIL, tpl_c_const(C, tpl_v_str(msg, strlen(msg))), 1);
                return;
            }
        static const char *const core_heads[] = { "Integer", "Float", "String", "Array", "Hash", "Symbol", "NilClass",
                                                  "TrueClass", "FalseClass", "Range", "Regexp", "Numeric", "Rational",
                                                  "Complex", "Math", "Kernel", "Comparable", "Enumerable", "Proc", NULL };
        for (int i = 0; core_heads[i] && !known; i++) {   /* Integer::MAX: Ruby's NameError when it runs (tpl knows those classes' constants) */
            size_t k = strlen(core_heads[i]);
            if (n->val.len > k + 2 && memcmp(n->val.u.s, core_heads[i], k) == 0 && n->val.u.s[k] == ':' && n->val.u.s[k + 1] == ':' &&
                !memchr(n->val.u.s + k + 2, ':', n->val.len - k - 2)) {
                char msg[512];
                if (!const_name_error(L, n->val, msg, sizeof msg)) return;
                tpl_c_at(C, n->off);
                tpl_c_emit(C, TPL_OP_FAIL, tpl_c_const(C, tpl_v_str(msg, strlen(msg))), 1);
                return;
            }
        }
        if (!known && memchr(n->val.u.s, ':', n->val.len)) {   /* Puppet::Error: tpl's refusal when it runs */
            char msg[200];
            snprintf(msg, sizeof msg, "unsupported Ruby construct '%.*s' (constant paths)",
                     n->val.len > 100 ? 100 : (int)n->val.len, n->val.u.s);
            tpl_c_at(C, n->off);
            tpl_c_emit(C, TPL_OP_FAIL, tpl_c_const(C, tpl_v_str(msg, strlen(msg))), 1);
            return;
        }
        static const char *const ruby_consts[] = { "RUBY_VERSION", "RUBY_PLATFORM", "RUBY_RELEASE_DATE", "RUBY_PATCHLEVEL",
                                                   "RUBY_ENGINE", "RUBY_ENGINE_VERSION", "RUBY_REVISION", "RUBY_COPYRIGHT",
                                                   "RUBY_DESCRIPTION", "Gem", "RbConfig", NULL };
        for (int i = 0; ruby_consts[i]; i++)
            if (name_is(n->val, ruby_consts[i])) {   /* when it runs, as ENV */
                char msg[200];
                snprintf(msg, sizeof msg, "unsupported Ruby construct: %s (the Ruby that would run the template: "
                         "pass what it needs in the state)", ruby_consts[i]);
                tpl_c_at(C, n->off);
                tpl_c_emit(C, TPL_OP_FAIL, tpl_c_const(C, tpl_v_str(msg, strlen(msg))), 1);
                return;
            }
        if (!known && tpl_c_options(C)->erb_self) {
            /* with a binding's self (Tpl::ERB#result) the constant may be the caller's (a Struct,
             * a class), which Ruby's ERB finds: tpl's refusal when it runs, not a NameError a
             * rescue would take */
            char msg[300];
            snprintf(msg, sizeof msg, "unsupported Ruby construct: the constant %.*s (a constant of the binding's "
                     "program, which tpl does not read: pass what it needs as a local or @ivar)",
                     n->val.len > 100 ? 100 : (int)n->val.len, n->val.u.s);
            tpl_c_at(C, n->off);
            tpl_c_emit(C, TPL_OP_FAIL, tpl_c_const(C, tpl_v_str(msg, strlen(msg))), 1);
            return;
        }
        if (!known) {   /* NameError when it runs, as in Ruby */
            char msg[512];
            if (!const_name_error(L, n->val, msg, sizeof msg)) return;
            tpl_c_emit(C, TPL_OP_FAIL, tpl_c_const(C, tpl_v_str(msg, strlen(msg))), 1);
            return;
        }
        tpl_value v = n->val;
        v.flags = TPL_F_CLASS_RB;
        tpl_c_emit(C, TPL_OP_CONST, tpl_c_const(C, v), 1);
        return;
    }
    case TPL_N_RREGEX: {
        char msg[200];
        tpl_sb b;
        tpl_sb_init(&b, tpl_c_arena(C));
        /* kept as Ruby's Regexp#to_s, "(?mi-x:src)": Oniguruma reads it as the same regex */
        static const struct { int bit; char c; } fl[] = { { TPL_RX_M, 'm' }, { TPL_RX_I, 'i' }, { TPL_RX_X, 'x' } };
        tpl_sb_puts(&b, "(?");
        for (int i = 0; i < 3; i++) if (n->op & fl[i].bit) tpl_sb_putc(&b, fl[i].c);
        if ((n->op & 7) != 7) tpl_sb_putc(&b, '-');
        for (int i = 0; i < 3; i++) if (!(n->op & fl[i].bit)) tpl_sb_putc(&b, fl[i].c);
        tpl_sb_putc(&b, ':');
        tpl_sb_put(&b, n->val.u.s, n->val.len);
        tpl_sb_putc(&b, ')');
        if (b.failed) { tpl_c_nomem(C, n->off); return; }
        if (!tpl_rb_regex_check(b.p, b.len, msg, sizeof msg)) { tpl_c_error(C, n->off, "%s", msg); return; }
        tpl_value v = tpl_sb_value(&b);
        v.flags = TPL_F_REGEX_RB;
        tpl_c_emit(C, TPL_OP_CONST, tpl_c_const(C, v), 1);
        return;
    }
    case TPL_N_GETITEM:
        if (curry_chain(L, n) != 0) {   /* (a node of f.curry[a][b] rewritten as f.call(a, b), or an error given) */
            if (!tpl_c_failed(C)) expr(L, n);
            return;
        }
        if (proc_var(L, n->a) || is_proc_lit(n->a) || blk_var(L, n->a)) {   /* f[x]: f.call(x) */
            tpl_node *arg = tpl_arena_alloc(tpl_c_arena(C), sizeof *arg);
            if (!arg) { tpl_c_nomem(C, n->off); return; }
            memset(arg, 0, sizeof *arg);
            arg->kind = TPL_N_ARG;
            arg->off = n->b->off;
            arg->a = n->b;
            if (blk_var(L, n->a)) yield_(L, false, n->a, S("[]"), arg, NULL, n->off, true);
            else proc_op(L, n->a, arg, PROC_CALL, n->off, true);
            return;
        }
        expr(L, n->a);
        if (n->b->kind == TPL_N_CONST && n->b->val.type == TPL_T_STR) {
            /* h[:k] / h["k"]: the key's hash is computed once, at compile time; a Symbol's name
             * keeps its flag for a receiver that is not a Hash ("sda"[:smart] is a TypeError) */
            tpl_c_at(C, n->off);
            tpl_c_emit(C, TPL_OP_GETITEM_STR_RB, tpl_c_name_sym(C, n->b->val), 0);
            return;
        }
        expr(L, n->b);
        tpl_c_at(C, n->off);
        tpl_c_emit(C, TPL_OP_GETITEM_RB, 0, -1);
        return;
    case TPL_N_RMETHOD:
        call(L, n, true);
        return;
    case TPL_N_BINOP: {
        uint32_t nadd = add_chain(L, n, false);
        if (nadd >= 3) {
            /* a + b + c ...: one ADDS_RB (plain strings joined in one step, else + pairwise; an
             * error is located at the last +) */
            add_chain(L, n, true);
            tpl_c_at(C, n->off);
            tpl_c_emit(C, TPL_OP_ADDS, nadd, 1 - (int)nadd);
            return;
        }
        expr(L, n->a);
        expr(L, n->b);
        tpl_c_at(C, n->off);
        int op;
        switch (n->op) {
        case TPL_AOP_ADD: op = TPL_OP_ADD_RB; break;
        case TPL_AOP_SUB: op = TPL_OP_SUB_RB; break;
        case TPL_AOP_MUL: op = TPL_OP_MUL_RB; break;
        case TPL_AOP_DIV: op = TPL_OP_DIV_PY; break;
        case TPL_AOP_MOD: op = TPL_OP_MOD_RB; break;
        default: op = TPL_OP_POW_RB; break;
        }
        tpl_c_emit(C, op, 0, -1);
        return;
    }
    case TPL_N_UNOP:
        if (n->op == TPL_AOP_NOT && n->a->kind == TPL_N_RREGEX) {
            tpl_c_error(C, n->a->off, "a regex literal as a condition is not supported (use =~ or match?)");
            return;
        }
        expr(L, n->a);
        tpl_c_at(C, n->off);
        if (n->op == TPL_AOP_POS) {   /* +x: Integer/Float#+@, String#+@ (an unfrozen copy) */
            tpl_c_emit(C, TPL_OP_CALL_METHOD_RB, tpl_c_name(C, S("+@")), 0);
            tpl_c_word(C, TPL_ARGW(0, 0, TPL_NO_KW));
            tpl_c_word(C, 0);
            return;
        }
        tpl_c_emit(C, n->op == TPL_AOP_NEG ? TPL_OP_NEG_RB : TPL_OP_NOT_PY, 0, 0);
        return;
    case TPL_N_AND:
    case TPL_N_OR: {
        expr(L, n->a);
        tpl_c_at(C, n->off);
        uint32_t j = tpl_c_emit(C, n->kind == TPL_N_AND ? TPL_OP_JF_PY_KEEP : TPL_OP_JT_PY_KEEP, 0, -1);
        expr(L, n->b);
        tpl_c_patch(C, j, tpl_c_here(C));
        return;
    }
    case TPL_N_COMPARE: {
        tpl_node *o = n->b;
        if ((o->op == TPL_AOP_EQ || o->op == TPL_AOP_NE) && hash_call(n->a) && hash_call(o->a)) {
            /* a.hash == b.hash: Ruby's hash values are seeded per process (no print of one can match), their
             * equality is not: "(hash_eq)" answers it for the values whose hash is eql? (stdlib/ruby/ruby.c) */
            expr(L, n->a->a);
            expr(L, o->a->a);
            tpl_c_at(C, n->off);
            tpl_c_emit(C, TPL_OP_CALL_METHOD_RB, tpl_c_name(C, S("(hash_eq)")), -1);
            tpl_c_word(C, TPL_ARGW(1, 0, TPL_NO_KW));
            tpl_c_word(C, 0);
            if (o->op == TPL_AOP_NE) tpl_c_emit(C, TPL_OP_NOT_RB, 0, 0);
            return;
        }
        expr(L, n->a);
        expr(L, o->a);
        tpl_c_at(C, n->off);
        int op;
        switch (o->op) {
        case TPL_AOP_EQ: op = TPL_OP_EQ_RB; break;
        case TPL_AOP_NE: op = TPL_OP_NE_RB; break;
        case TPL_AOP_LT: op = TPL_OP_LT_RB; break;
        case TPL_AOP_LE: op = TPL_OP_LE_RB; break;
        case TPL_AOP_GT: op = TPL_OP_GT_RB; break;
        default: op = TPL_OP_GE_RB; break;
        }
        tpl_c_emit(C, op, 0, -1);
        return;
    }
    case TPL_N_CONDEXPR: {
        expr(L, n->a);
        tpl_c_at(C, n->off);
        uint32_t jf = tpl_c_emit(C, TPL_OP_JF_PY, 0, -1);
        expr(L, n->b);
        uint32_t jend = tpl_c_emit(C, TPL_OP_JUMP, 0, -1);
        tpl_c_patch(C, jf, tpl_c_here(C));
        expr(L, n->c);
        tpl_c_patch(C, jend, tpl_c_here(C));
        return;
    }
    case TPL_N_LIST: {
        uint32_t cnt = 0;
        bool splat = false;
        for (tpl_node *x = n->a; x; x = x->next) splat = splat || x->kind == TPL_N_STARARG;
        if (splat) { /* [a, *b, c]: [a] + Array(b) + [c] */
            bool have = false;
            for (tpl_node *x = n->a; x && !tpl_c_failed(C); x = x->next) {
                if (x->kind != TPL_N_STARARG) { expr(L, x); cnt++; continue; }
                if (cnt || !have) {
                    tpl_c_emit(C, TPL_OP_BUILD_LIST, cnt, 1 - (int)cnt);
                    if (have) tpl_c_emit(C, TPL_OP_ADD_RB, 0, -1);
                    have = true;
                    cnt = 0;
                }
                expr(L, x->a);
                tpl_c_at(C, x->off);
                tpl_c_emit(C, TPL_OP_CALL_NAME, tpl_c_name(C, S("(splat)")), 0);   /* (Kernel#Array under a name no state or self shadows: Ruby splats with to_a) */
                tpl_c_word(C, (uint32_t)TPL_B_RKERNEL_Array);
                tpl_c_word(C, TPL_ARGW(1, 0, TPL_NO_KW));
                tpl_c_emit(C, TPL_OP_ADD_RB, 0, -1);
            }
            if (cnt) {
                tpl_c_emit(C, TPL_OP_BUILD_LIST, cnt, 1 - (int)cnt);
                tpl_c_emit(C, TPL_OP_ADD_RB, 0, -1);
            }
            return;
        }
        for (tpl_node *x = n->a; x; x = x->next) { expr(L, x); cnt++; }
        tpl_c_at(C, n->off);
        tpl_c_emit(C, TPL_OP_BUILD_LIST, cnt, 1 - (int)cnt);
        return;
    }
    case TPL_N_DICT: {
        /* nil.(hash)([k1, v1, ...]): a Ruby Hash, keys by eql? (1 and 1.0 are two keys; arrays may be
         * keys), which BUILD_MAP (Python's dict) is not */
        uint32_t cnt = 0;
        tpl_c_emit(C, TPL_OP_NONE, 0, 1);
        for (tpl_node *x = n->a; x; x = x->next) { expr(L, x->a); expr(L, x->b); cnt += 2; }
        tpl_c_at(C, n->off);
        tpl_c_emit(C, TPL_OP_BUILD_LIST, cnt, 1 - (int)cnt);
        tpl_c_emit(C, TPL_OP_CALL_METHOD_RB, tpl_c_name(C, S("(hash)")), -1);
        tpl_c_word(C, TPL_ARGW(1, 0, TPL_NO_KW));
        tpl_c_word(C, 0);
        return;
    }
    case TPL_N_INTERP: {
        uint32_t cnt = 0;
        for (tpl_node *x = n->a; x; x = x->next) {
            if (x->kind == TPL_N_RSTMTS) value_body(L, x->b);
            else expr(L, x);
            cnt++;
        }
        tpl_c_at(C, n->off);
        tpl_c_emit(C, TPL_OP_CONCAT, cnt, 1 - (int)cnt);
        return;
    }
    case TPL_N_RRANGE:
        if (n->a) expr(L, n->a);
        else tpl_c_emit(C, TPL_OP_NONE, 0, 1);
        if (n->b) expr(L, n->b);
        else tpl_c_emit(C, TPL_OP_NONE, 0, 1);
        tpl_c_at(C, n->off);
        tpl_c_emit(C, TPL_OP_RANGE_RB, n->op, -1);
        return;
    case TPL_N_RSTMTS:
        value_body(L, n->b);
        return;
    case TPL_N_IF:
        if_(L, n, true);
        return;
    case TPL_N_RCASE:
        case_(L, n, true);
        return;
    case TPL_N_SET: {
        if (n->a && n->a->kind == TPL_N_NAME && is_proc_lit(n->b)) {
            tpl_c_error(C, n->off, "unsupported Ruby construct: the value of an assignment of a Proc");
            return;
        }
        const tpl_node *twin = NULL;
        own_group g = { .n = 0 };
        L->site_bound = false;
        if (is_index(n->a) && !index_site(L, n, &twin, &g)) return;
        bool sb = L->site_bound, was = L->bound_store;
        expr(L, n->b);
        tpl_c_emit(C, TPL_OP_DUP, 0, 1);
        L->bound_store = was || sb;
        if (is_index(n->a)) index_store(L, n->a, n->off, true);
        else store_var(L, n->a->val, n->off);
        if (twin) twin_sync(L, twin);
        group_after(L, &g, n->off);
        L->bound_store = was;
        return;
    }
    case TPL_N_TEXT:
    case TPL_N_OUTPUT:
        /* the value of text in Ruby's ERB is the output buffer itself; tpl gives nil */
        stmt(L, n);
        tpl_c_emit(C, TPL_OP_NONE, 0, 1);
        return;
    case TPL_N_RNEXT:
    case TPL_N_RBREAK:
    case TPL_N_RRETRY:
        tpl_c_error(C, n->off, "'%s' is not supported inside an expression",
                    n->kind == TPL_N_RNEXT ? "next" : n->kind == TPL_N_RBREAK ? "break" : "retry");
        return;
    case TPL_N_RWHILE:   /* nil, or a break's value */
        while_loop(L, n->a, n->op & 1, NULL, n->b, n->off, true, n->op & 2);
        return;
    case TPL_N_RBEGIN:
        begin_(L, n, true);
        return;
    case TPL_N_RFOR:
        tpl_c_error(C, n->off, "unsupported Ruby construct: a for loop used as a value");
        return;
    case TPL_N_RDEFINED:
        defined_(L, n->a, 0);
        return;
    case TPL_N_RSAFE: { /* nil when the receiver is nil, else the call on it */
        expr(L, n->a);
        tpl_value sv = S("(safe)");
        uint32_t tmp;
        if (!tpl_c_lookup(C, sv, &tmp)) tmp = tpl_c_declare(C, sv);
        tpl_c_emit(C, TPL_OP_STORE_SLOT, tmp, -1);
        load_local(L, tmp, sv);
        tpl_c_emit(C, TPL_OP_NONE, 0, 1);
        tpl_c_emit(C, TPL_OP_EQ_RB, 0, -1);
        uint32_t isnil = tpl_c_emit(C, TPL_OP_JT_RB, 0, -1);
        if (n->c && !n->b->c) n->b->c = n->c;
        call(L, n->b, true);
        uint32_t end = tpl_c_emit(C, TPL_OP_JUMP, 0, -1);
        tpl_c_patch(C, isnil, tpl_c_here(C));
        tpl_c_emit(C, TPL_OP_NONE, 0, 1);
        tpl_c_patch(C, end, tpl_c_here(C));
        return;
    }
    case TPL_N_STARARG:
        tpl_c_error(C, n->off, "unsupported Ruby construct: a splat (*) outside an array literal");
        return;
    default:
        tpl_c_error(C, n->off, "unsupported Ruby construct (%s)", tpl_node_kind_name(n->kind));
    }
}

/* ------------------------------------------------------------------ defined? */

/* Kernel and Object methods Ruby answers "method" for without a receiver (beyond tpl's own). */
static bool ruby_kernel_method(tpl_value name)
{
    static const char *const names[] = { "puts", "print", "p", "pp", "require", "require_relative", "load", "raise",
        "fail", "format", "sprintf", "printf", "putc", "loop", "lambda", "proc", "rand", "srand", "sleep", "gets",
        "binding", "block_given?", "caller", "catch", "throw", "exit", "abort", "at_exit", "system", "open", "warn",
        "Integer", "Float", "String", "Array", "Hash", "Rational", "Complex", "to_s", "inspect", "class", "freeze",
        "frozen?", "dup", "clone", "hash", "object_id", "send", "public_send", "respond_to?", "is_a?", "kind_of?",
        "instance_of?", "nil?", "tap", "then", "itself", "method", "methods", "instance_variables",
        "instance_variable_get", "instance_variable_set", "instance_variable_defined?", "define_singleton_method",
        "extend", "display", "eql?", "equal?", "__method__", "local_variables", "global_variables", "sprintf", NULL };
    for (int i = 0; names[i]; i++)
        if (name_is(name, names[i])) return true;
    return tpl_builtin_find(TPL_BK_RKERNEL, name.u.s, name.len) >= 0 && name.len && name.u.s[0] != '(' && name.u.s[0] != '$';
}

static void push_str(erb_low *L, const char *s)
{
    if (!s) { tpl_c_emit(C, TPL_OP_NONE, 0, 1); return; }
    tpl_c_emit(C, TPL_OP_CONST, tpl_c_const(C, tpl_v_str(s, strlen(s))), 1);
}

/* Pushes what Ruby's defined?(e) answers without evaluating e: "local-variable" for a local (assigned
 * before, or a key of the state: the binding's locals), "instance-variable" for a set @ivar,
 * "method" for a method that exists (a call with a receiver: the receiver is defined and responds
 * to it; an operator or [] on defined operands), "constant", "assignment", "expression" for other
 * expressions (an array literal when its items are defined), "nil"/"true"/"false", else nil. */
static void defined_(erb_low *L, tpl_node *e, int depth);

/* Pushes `what` when every node of the list `parts` (NULL ends early: none) is defined, else nil. */
static void defined_all(erb_low *L, tpl_node **parts, int n, const char *what, int depth)
{
    uint32_t fails[64];
    int nf = 0;
    for (int i = 0; i < n && nf < 64; i++) {
        defined_(L, parts[i], depth + 1);
        fails[nf++] = tpl_c_emit(C, TPL_OP_JF_PY, 0, -1);
    }
    push_str(L, what);
    uint32_t end = tpl_c_emit(C, TPL_OP_JUMP, 0, -1);
    uint32_t here = tpl_c_here(C);
    for (int i = 0; i < nf; i++) tpl_c_patch(C, fails[i], here);
    tpl_c_emit(C, TPL_OP_NONE, 0, 1);
    tpl_c_patch(C, end, tpl_c_here(C));
}

/* defined?'s answer from the value on the stack: "method" when it is truthy (Ruby's), else nil. */
static void method_or_nil(erb_low *L)
{
    uint32_t no = tpl_c_emit(C, TPL_OP_JF_RB, 0, -1);
    push_str(L, "method");
    uint32_t end = tpl_c_emit(C, TPL_OP_JUMP, 0, -1);
    tpl_c_patch(C, no, tpl_c_here(C));
    push_str(L, NULL);
    tpl_c_patch(C, end, tpl_c_here(C));
}

/* defined? of a receiver-less method name with a self (erb_self): "method" when self answers
 * respond_to?(name, true) when it runs (private methods too, as Ruby's defined?), else nil;
 * respond_to?(name, false) for defined?(self.name) (public only: Ruby's answer is nil for a
 * private one) */
static void self_method_what(erb_low *L, tpl_value name, uint32_t off, bool priv)
{
    tpl_c_emit(C, TPL_OP_CONST, tpl_c_const(C, name), 1);
    tpl_c_emit(C, TPL_OP_CONST, tpl_c_const(C, tpl_v_bool(priv)), 1);
    tpl_c_at(C, off);
    tpl_c_emit(C, TPL_OP_CALL_SELF_RB, tpl_c_name(C, S("respond_to?")), -1);
    tpl_c_word(C, TPL_ARGW(2, 0, TPL_NO_KW));
    method_or_nil(L);
}

static void defined_(erb_low *L, tpl_node *e, int depth)
{
    if (!e || tpl_c_failed(C)) { push_str(L, "expression"); return; }
    if (depth > 100) { tpl_c_error(C, e->off, "defined? nested too deeply"); return; }
    tpl_node *parts[64];
    int n = 0;
    uint32_t slot;
    tpl_c_at(C, e->off);
    switch (e->kind) {
    case TPL_N_RSTMTS:
        if (e->b && !e->b->next) { defined_(L, e->b, depth + 1); return; }
        push_str(L, e->b ? "expression" : "nil");   /* defined?(()) is "nil" */
        return;
    case TPL_N_CONST:
        if (e->val.type == TPL_T_NONE) push_str(L, "nil");
        else if (e->val.type == TPL_T_BOOL) push_str(L, e->val.u.i ? "true" : "false");
        else push_str(L, "expression");
        return;
    case TPL_N_NAME:
        if (name_is(e->val, "(self)")) { push_str(L, "self"); return; }
        /* fallthrough */
    case TPL_N_RIVAR: {
        if (e->val.len > 1 && e->val.u.s[0] == '$') { push_str(L, "global-variable"); return; }
        bool ivar = e->val.len > 1 && e->val.u.s[0] == '@';
        const char *what = ivar ? "instance-variable" : "local-variable";
        /* x = defined?(x): the assignment's left side made x a local (grammar/erb_parse.y assign) */
        if (!ivar && e->kind == TPL_N_NAME && e->op == 1) { push_str(L, what); return; }
        if (tpl_c_lookup(C, e->val, &slot) && !(L->defs->npend && pend_has(L, e->val) && !blk_param(L, e->val)) &&
            (ivar || L->in_def || !bound_local(L, e->val) || blk_param(L, e->val))) { push_str(L, what); return; }
        erb_def *d = ivar ? NULL : def_find(L, e->val, false);
        if (d && (L->in_def || !tpl_c_lookup(C, e->val, &slot))) {
            /* a method of the template: "local-variable" when the state has the key (outside a def: the
             * binding's local), else "method" once its def ran, else nil */
            if (!L->in_def) {
                tpl_c_emit(C, TPL_OP_CONST, tpl_c_const(C, e->val), 1);
                push_str(L, what);
            }
            tpl_c_emit(C, L->in_def ? TPL_OP_LOAD_ROOT : TPL_OP_LOAD_SLOT, d->slot, 1);
            tpl_c_word(C, tpl_c_name(C, S("(def)")));
            method_or_nil(L);
            if (!L->in_def) {
                tpl_c_at(C, e->off);
                tpl_c_emit(C, TPL_OP_CALL_NAME, tpl_c_name(C, S("(defined)")), -2);
                tpl_c_word(C, (uint32_t)TPL_B_RKERNEL_defined_state);
                tpl_c_word(C, TPL_ARGW(3, 0, TPL_NO_KW));
            }
            return;
        }
        /* a key of the state when it runs; else a method's name, or nil */
        tpl_value key = ivar ? tpl_v_str(e->val.u.s + 1, e->val.len - 1) : e->val;
        if (ivar) {
            /* the @ivar is among the program's reads (a host that fills the state from its object's @ivars,
             * Tpl::ERB#result, then supplies it) */
            tpl_c_emit(C, TPL_OP_LOAD_IVAR_RB, tpl_c_name(C, key), 1);
            tpl_c_emit(C, TPL_OP_POP, 0, -1);
        }
        else {
            /* the name is among the program's reads (a host that passes only the names read, as
             * Tpl::ERB#result does a Binding's locals, passes it: "local-variable" for a local
             * only defined? names) */
            tpl_c_emit(C, TPL_OP_LOAD_NAME, tpl_c_name(C, key), 1);
            tpl_c_emit(C, TPL_OP_POP, 0, -1);
        }
        tpl_c_emit(C, TPL_OP_CONST, tpl_c_const(C, key), 1);
        push_str(L, what);
        if (!ivar && !ruby_kernel_method(e->val) && tpl_c_options(C)->erb_self) self_method_what(L, e->val, e->off, true);
        else push_str(L, !ivar && ruby_kernel_method(e->val) ? "method" : NULL);
        tpl_c_at(C, e->off);
        tpl_c_emit(C, TPL_OP_CALL_NAME, tpl_c_name(C, S("(defined)")), -2);
        tpl_c_word(C, (uint32_t)TPL_B_RKERNEL_defined_state);
        tpl_c_word(C, TPL_ARGW(3, 0, TPL_NO_KW));
        return;
    }
    case TPL_N_RCONSTNAME: {
        bool known = false;
        for (int i = 0; known_classes[i]; i++) known = known || name_is(e->val, known_classes[i]);
        push_str(L, known ? "constant" : NULL);
        return;
    }
    case TPL_N_SET:   /* `a[i] = v` is a call of []= (its receiver and index defined) */
        if (e->a && e->a->kind == TPL_N_GETITEM) {
            parts[n++] = e->a->a;
            parts[n++] = e->a->b;
            defined_all(L, parts, n, "method", depth);
            return;
        }
        if (is_index(e->a)) {
            parts[n++] = e->a->a;
            for (tpl_node *x = e->a->b; x && n < 64; x = x->next) parts[n++] = x->a;
            defined_all(L, parts, n, "method", depth);
            return;
        }
        push_str(L, "assignment");
        return;
    case TPL_N_LIST:
        for (tpl_node *x = e->a; x && n < 64; x = x->next) parts[n++] = x;
        defined_all(L, parts, n, "expression", depth);
        return;
    case TPL_N_BINOP:
        parts[n++] = e->a;
        parts[n++] = e->b;
        defined_all(L, parts, n, "method", depth);
        return;
    case TPL_N_UNOP:
        parts[n++] = e->a;
        defined_all(L, parts, n, "method", depth);
        return;
    case TPL_N_COMPARE:
        parts[n++] = e->a;
        for (tpl_node *x = e->b; x && n < 64; x = x->next) parts[n++] = x->a;
        defined_all(L, parts, n, "method", depth);
        return;
    case TPL_N_GETITEM:
        parts[n++] = e->a;
        parts[n++] = e->b;
        defined_all(L, parts, n, "method", depth);
        return;
    case TPL_N_RMETHOD: {
        if (e->b)
            for (tpl_node *x = e->b; x && n < 63; x = x->next) parts[n++] = x->kind == TPL_N_KWARG || x->a ? x->a : x;
        if (!e->a && !ruby_kernel_method(e->val) && tpl_c_options(C)->erb_self && !def_find(L, e->val, false)) {
            /* self's method when it runs: its arguments defined, then self.respond_to?(name, true) */
            uint32_t fails[64];
            int nf = 0;
            for (int i = 0; i < n && nf < 64; i++) {
                defined_(L, parts[i], depth + 1);
                fails[nf++] = tpl_c_emit(C, TPL_OP_JF_PY, 0, -1);
            }
            self_method_what(L, e->val, e->off, e->op != 2);
            uint32_t end = tpl_c_emit(C, TPL_OP_JUMP, 0, -1);
            uint32_t here = tpl_c_here(C);
            for (int i = 0; i < nf; i++) tpl_c_patch(C, fails[i], here);
            tpl_c_emit(C, TPL_OP_NONE, 0, 1);
            tpl_c_patch(C, end, tpl_c_here(C));
            return;
        }
        if (!e->a) {   /* a function: Kernel's, or none */
            defined_all(L, parts, n, ruby_kernel_method(e->val) ? "method" : NULL, depth);
            return;
        }
        if (e->a->kind == TPL_N_RCONSTNAME) {   /* a class's methods (String.new, Regexp.escape) */
            bool known = false;
            for (int i = 0; known_classes[i]; i++) known = known || name_is(e->a->val, known_classes[i]);
            bool m = name_is(e->val, "new") || name_is(e->val, "name") || name_is(e->val, "to_s") ||
                     name_is(e->val, "inspect") || name_is(e->val, "class") || name_is(e->val, "===") ||
                     name_is(e->val, "==") || name_is(e->val, "ancestors") || name_is(e->val, "superclass") ||
                     (name_is(e->a->val, "Regexp") && (name_is(e->val, "escape") || name_is(e->val, "quote") ||
                                                        name_is(e->val, "union") || name_is(e->val, "last_match")));
            defined_all(L, parts, n, known && m ? "method" : NULL, depth);
            return;
        }
        /* the receiver and the arguments defined, then receiver.respond_to?(name) when it runs */
        parts[n++] = e->a;
        uint32_t fails[64];
        int nf = 0;
        for (int i = 0; i < n && nf < 63; i++) {
            defined_(L, parts[i], depth + 1);
            fails[nf++] = tpl_c_emit(C, TPL_OP_JF_PY, 0, -1);
        }
        expr(L, e->a);
        tpl_c_emit(C, TPL_OP_CONST, tpl_c_const(C, e->val), 1);
        tpl_c_at(C, e->off);
        tpl_c_emit(C, TPL_OP_CALL_METHOD_RB, tpl_c_name(C, S("respond_to?")), -1);
        tpl_c_word(C, TPL_ARGW(1, 0, TPL_NO_KW));
        tpl_c_word(C, 0);
        fails[nf++] = tpl_c_emit(C, TPL_OP_JF_PY, 0, -1);
        push_str(L, "method");
        uint32_t end = tpl_c_emit(C, TPL_OP_JUMP, 0, -1);
        uint32_t here = tpl_c_here(C);
        for (int i = 0; i < nf; i++) tpl_c_patch(C, fails[i], here);
        tpl_c_emit(C, TPL_OP_NONE, 0, 1);
        tpl_c_patch(C, end, tpl_c_here(C));
        return;
    }
    case TPL_N_RDEFINED:
        push_str(L, "expression");
        return;
    default:
        push_str(L, "expression");
        return;
    }
}

/* ------------------------------------------------------------------ begin/rescue/ensure */

static void const_push(erb_low *L, tpl_value v) { tpl_c_emit(C, TPL_OP_CONST, tpl_c_const(C, v), 1); }

/* nil.NAME(args on the stack) with block word bw: the rescue machinery's methods (their names are
 * no Ruby identifiers, so no template can call them). */
static void rescue_call(erb_low *L, const char *name, uint32_t nargs, uint32_t bw)
{
    tpl_c_emit(C, TPL_OP_CALL_METHOD_RB, tpl_c_name(C, tpl_v_str(name, strlen(name))), -(int)nargs);
    tpl_c_word(C, TPL_ARGW(nargs, 0, TPL_NO_KW));
    tpl_c_word(C, bw);
}

/* exc_slot in an ensure clause's body ($! there is the error in flight, if any, else the enclosing one): refused */
#define ENSURE_EXC UINT32_MAX

/* Pushes $!: in a rescue clause's body its exception, else nil. */
static void exc_push(erb_low *L, uint32_t off)
{
    if (!L->exc_slot) { tpl_c_emit(C, TPL_OP_NONE, 0, 1); return; }
    if (L->exc_slot == ENSURE_EXC) { tpl_c_error(C, off, "unsupported Ruby construct: $! in an ensure clause"); return; }
    tpl_c_at(C, off);
    tpl_c_emit(C, TPL_OP_LOAD_SLOT, L->exc_slot - 1, 1);
    tpl_c_word(C, tpl_c_name(C, S("(begin)")));
    const_push(L, tpl_v_int(2));
    tpl_c_emit(C, TPL_OP_GETITEM_RB, 0, -1);
}

/* raise without arguments: in a rescue clause's body its exception again, else Ruby's RuntimeError
 * "unhandled exception" (pushes the call's value, which never comes). */
static void reraise(erb_low *L, uint32_t off)
{
    tpl_c_at(C, off);
    if (L->exc_slot == ENSURE_EXC) { tpl_c_error(C, off, "unsupported Ruby construct: a bare raise in an ensure clause"); return; }
    if (!L->exc_slot) {
        tpl_c_emit(C, TPL_OP_FAIL, tpl_c_const(C, tpl_v_str("unhandled exception (RuntimeError)", 34)), 1);
        return;
    }
    tpl_c_emit(C, TPL_OP_LOAD_SLOT, L->exc_slot - 1, 1);
    tpl_c_word(C, tpl_c_name(C, S("(begin)")));
    rescue_call(L, "(raise)", 0, 0);
}

/* begin BODY [rescue [Classes] [=> e] ...]* [else ...] [ensure ...] end, also `stmt rescue value`:
 * the body runs as a block of the same frame (its locals are the enclosing ones) under
 * nil.(begin), which answers [ok, value, message, class]; a failed body's error, when Ruby could
 * rescue it (never a tpl limit), goes to the first clause whose classes match (`(rescue?)`), else it
 * is raised again (`(raise)`); an ensure clause wraps all of it (begin_). */
static void begin_core(erb_low *L, tpl_node *n, bool used);
static void return_check(erb_low *L, uint32_t off);
static void return_reset(erb_low *L);

/* With an ensure clause: begin/rescue/else as the body of one more nil.(begin), then the ensure
 * clause, then the error that left them (raised in the body and no clause took it, or raised in a
 * clause or in else) raised again, as Ruby runs ensure on every way out: exactly once, after the
 * clauses. A break/next/return out of the body or a clause is refused (the enclosing try refuses it);
 * one in the ensure clause itself leaves as in Ruby, dropping the error in flight. */
/* Opens the sub-function a `begin` body runs in under (begin): a jump over it (*skip, patched by
 * the caller after its RET_RB), a scope, and *lc as the loop context of a rescue body (sub, try_),
 * restored by the caller; returns the entry the rescue call targets. */
static uint32_t try_open(erb_low *L, tpl_node *n, erb_loop *lc, uint32_t *skip)
{
    tpl_c_at(C, n->off);
    *skip = tpl_c_emit(C, TPL_OP_JUMP, 0, 0);
    uint32_t entry = tpl_c_here(C);
    tpl_c_push_scope(C);
    *lc = (erb_loop){ 0 };
    lc->parent = L->loop;
    lc->sub = true;
    lc->try_ = true;
    L->loop = lc;
    return entry;
}

static void begin_(erb_low *L, tpl_node *n, bool used)
{
    if (!n->c) { begin_core(L, n, used); return; }
    erb_blocals bl = { .n = 0 };
    blocal_scan(L, &bl, NULL, n->a, 0);   /* names the body, the clauses and else assign are the enclosing scope's */
    blocal_scan(L, &bl, NULL, n->b, 0);
    for (tpl_node *r = n->b; r; r = r->next)
        if (r->op != 1 && r->c) blocal_add(L, &bl, NULL, r->c->val);
    erb_loop lc;
    uint32_t skip, entry = try_open(L, n, &lc, &skip);
    tpl_node inner = *n;
    inner.c = NULL;
    begin_core(L, &inner, true);
    L->loop = lc.parent;
    tpl_c_emit(C, TPL_OP_RET_RB, 0, -1);
    tpl_c_pop_scope(C);
    tpl_c_patch(C, skip, tpl_c_here(C));
    if (tpl_c_failed(C)) return;
    uint32_t tmp = tpl_c_slot(C);
    return_reset(L);
    tpl_c_at(C, n->off);
    tpl_c_emit(C, TPL_OP_NONE, 0, 1);
    rescue_call(L, "(begin)", 0, entry);
    tpl_c_emit(C, TPL_OP_STORE_SLOT, tmp, -1);
    uint32_t save_exc = L->exc_slot;
    L->exc_slot = ENSURE_EXC;
    uint32_t ret = 0;
    if (L->def_ret && L->in_def) {   /* (a return in the body or a clause: retf kept across the ensure clause) */
        ret = tpl_c_slot(C);
        tpl_c_emit(C, TPL_OP_LOAD_SLOT, L->def_ret, 1);
        tpl_c_word(C, tpl_c_name(C, S("(retf)")));
        tpl_c_emit(C, TPL_OP_STORE_SLOT, ret, -1);
        return_reset(L);
    }
    body(L, n->c->kind == TPL_N_RSTMTS ? n->c->b : n->c);
    if (ret) {
        tpl_c_emit(C, TPL_OP_LOAD_SLOT, ret, 1);
        tpl_c_word(C, tpl_c_name(C, S("(retf)")));
        tpl_c_emit(C, TPL_OP_STORE_SLOT, L->def_ret, -1);
        return_check(L, n->off);
    }
    L->exc_slot = save_exc;
    tpl_c_at(C, n->off);
    tpl_c_emit(C, TPL_OP_LOAD_SLOT, tmp, 1);
    tpl_c_word(C, tpl_c_name(C, S("(begin)")));
    const_push(L, tpl_v_int(0));
    tpl_c_emit(C, TPL_OP_GETITEM_RB, 0, -1);
    uint32_t failed = tpl_c_emit(C, TPL_OP_JF_RB, 0, -1);
    if (used) {
        tpl_c_emit(C, TPL_OP_LOAD_SLOT, tmp, 1);
        tpl_c_word(C, tpl_c_name(C, S("(begin)")));
        const_push(L, tpl_v_int(1));
        tpl_c_emit(C, TPL_OP_GETITEM_RB, 0, -1);
    }
    uint32_t done = tpl_c_emit(C, TPL_OP_JUMP, 0, used ? -1 : 0);
    tpl_c_patch(C, failed, tpl_c_here(C));
    tpl_c_emit(C, TPL_OP_LOAD_SLOT, tmp, 1);
    tpl_c_word(C, tpl_c_name(C, S("(begin)")));
    rescue_call(L, "(raise)", 0, 0);
    if (!used) tpl_c_emit(C, TPL_OP_POP, 0, -1);
    tpl_c_patch(C, done, tpl_c_here(C));
}

static void begin_core(erb_low *L, tpl_node *n, bool used)
{
    erb_blocals bl = { .n = 0 };
    blocal_scan(L, &bl, NULL, n->a, 0);   /* names the body assigns are the enclosing scope's */
    erb_loop lc;
    uint32_t skip, entry = try_open(L, n, &lc, &skip);
    if (n->a && n->a->kind == TPL_N_RSTMTS) value_body(L, n->a->b);
    else value_body(L, n->a);
    L->loop = lc.parent;
    tpl_c_emit(C, TPL_OP_RET_RB, 0, -1);
    tpl_c_pop_scope(C);
    tpl_c_patch(C, skip, tpl_c_here(C));
    uint32_t tmp = tpl_c_slot(C);
    uint32_t restart = tpl_c_here(C);   /* retry in a clause comes back here */
    return_reset(L);
    tpl_c_at(C, n->off);
    tpl_c_emit(C, TPL_OP_NONE, 0, 1);
    rescue_call(L, "(begin)", 0, entry);
    tpl_c_emit(C, TPL_OP_STORE_SLOT, tmp, -1);
    return_check(L, n->off);   /* (a return in the body: no else clause) */
    /* success: the body's value, or the else clause's */
    tpl_c_emit(C, TPL_OP_LOAD_SLOT, tmp, 1);
    tpl_c_word(C, tpl_c_name(C, S("(begin)")));
    const_push(L, tpl_v_int(0));
    tpl_c_emit(C, TPL_OP_GETITEM_RB, 0, -1);
    uint32_t to_rescue = tpl_c_emit(C, TPL_OP_JF_RB, 0, -1);
    tpl_node *els = NULL;
    for (tpl_node *r = n->b; r; r = r->next) if (r->op == 1) els = r;
    if (els) {
        if (used) value_body(L, els->b); else body(L, els->b);
    } else if (used) {
        tpl_c_emit(C, TPL_OP_LOAD_SLOT, tmp, 1);
        tpl_c_word(C, tpl_c_name(C, S("(begin)")));
        const_push(L, tpl_v_int(1));
        tpl_c_emit(C, TPL_OP_GETITEM_RB, 0, -1);
    }
    uint32_t ends[64];
    int nends = 0;
    ends[nends++] = tpl_c_emit(C, TPL_OP_JUMP, 0, used ? -1 : 0);
    tpl_c_patch(C, to_rescue, tpl_c_here(C));
    for (tpl_node *r = n->b; r && !tpl_c_failed(C); r = r->next) {
        if (r->op == 1) continue;
        if (nends >= 63) { tpl_c_error(C, r->off, "too many rescue clauses"); return; }
        /* the clause's classes, by name (a class tpl does not know is compared by its name too) */
        tpl_list *names = tpl_list_new(tpl_c_program_arena(C), 4);
        if (!names) { tpl_c_nomem(C, r->off); return; }
        for (tpl_node *k = r->a; k; k = k->next) {
            if (k->kind != TPL_N_RCONSTNAME) { tpl_c_error(C, k->off, "unsupported Ruby construct: a rescue class that is not a constant"); return; }
            char *s = tpl_arena_strdup(tpl_c_program_arena(C), k->val.u.s, k->val.len);
            if (!s || !tpl_list_push(tpl_c_program_arena(C), names, tpl_v_str(s, k->val.len))) { tpl_c_nomem(C, k->off); return; }
        }
        tpl_c_at(C, r->off);
        tpl_c_emit(C, TPL_OP_LOAD_SLOT, tmp, 1);
        tpl_c_word(C, tpl_c_name(C, S("(begin)")));
        const_push(L, tpl_v_list(names));
        rescue_call(L, "(rescue?)", 1, 0);
        uint32_t next = tpl_c_emit(C, TPL_OP_JF_RB, 0, -1);
        if (r->c) {
            tpl_c_emit(C, TPL_OP_LOAD_SLOT, tmp, 1);
            tpl_c_word(C, tpl_c_name(C, S("(begin)")));
            const_push(L, tpl_v_int(2));
            tpl_c_emit(C, TPL_OP_GETITEM_RB, 0, -1);
            store_var(L, r->c->val, r->c->off);
        }
        uint32_t save_exc = L->exc_slot, save_retry = L->retry_to;
        erb_loop *save_rloop = L->retry_loop;
        L->exc_slot = tmp + 1;   /* $! and a bare raise in the clause */
        L->retry_to = restart + 1;
        L->retry_loop = L->loop;
        if (used) value_body(L, r->b); else body(L, r->b);
        L->exc_slot = save_exc;
        L->retry_to = save_retry;
        L->retry_loop = save_rloop;
        ends[nends++] = tpl_c_emit(C, TPL_OP_JUMP, 0, used ? -1 : 0);
        tpl_c_patch(C, next, tpl_c_here(C));
    }
    /* no clause took it: raised again */
    tpl_c_at(C, n->off);
    tpl_c_emit(C, TPL_OP_LOAD_SLOT, tmp, 1);
    tpl_c_word(C, tpl_c_name(C, S("(begin)")));
    rescue_call(L, "(raise)", 0, 0);
    if (!used) tpl_c_emit(C, TPL_OP_POP, 0, -1);
    for (int i = 0; i < nends; i++) tpl_c_patch(C, ends[i], tpl_c_here(C));
}

/* A statement list as a value: the last statement's value (nil when empty). */
static void value_body(erb_low *L, tpl_node *n)
{
    if (!n) { tpl_c_emit(C, TPL_OP_NONE, 0, 1); return; }
    for (; n && !tpl_c_failed(C); n = n->next) {
        if (n->next) { stmt(L, n); continue; }
        if (n->kind == TPL_N_RNEXT || n->kind == TPL_N_RBREAK || n->kind == TPL_N_RRETURN || n->kind == TPL_N_RRETRY) { stmt(L, n); tpl_c_emit(C, TPL_OP_NONE, 0, 1); return; }
        expr(L, n);
    }
}


/* ------------------------------------------------------------------ def */

static erb_def *def_find(erb_low *L, tpl_value name, bool create)
{
    erb_defs *ds = L->defs;
    tpl_arena *a = tpl_c_arena(C);
    /* a hash index, not a scan: a template of tens of thousands of defs compiled in quadratic time */
    uint64_t h = tpl_hash_str(name.u.s, name.len);
    uint32_t mask = ds->vidx_cap - 1, at = 0;
    if (ds->vidx_cap) {
        for (at = (uint32_t)h & mask; ds->vidx[at]; at = (at + 1) & mask) {
            erb_def *d = &ds->v[ds->vidx[at] - 1];
            if (d->name.len == name.len && memcmp(d->name.u.s, name.u.s, name.len) == 0) return d;
        }
    }
    if (!create) return NULL;
    if (ds->n == ds->cap) {
        uint32_t nc = ds->cap ? ds->cap * 2 : 8;
        erb_def *nv = tpl_arena_alloc(a, nc * sizeof *nv);
        if (!nv) { tpl_c_nomem(C, 0); return NULL; }
        if (ds->n) memcpy(nv, ds->v, ds->n * sizeof *nv);
        ds->v = nv;
        ds->cap = nc;
    }
    if ((uint64_t)(ds->n + 1) * 2 > ds->vidx_cap) {   /* a new index, twice as large */
        uint32_t cap = ds->vidx_cap ? ds->vidx_cap * 2 : 32;
        uint32_t *idx = tpl_arena_table(a, cap * sizeof *idx);
        if (!idx) { tpl_c_nomem(C, 0); return NULL; }
        memset(idx, 0, cap * sizeof *idx);
        for (uint32_t i = 0; i < ds->n; i++) {
            uint32_t k = (uint32_t)tpl_hash_str(ds->v[i].name.u.s, ds->v[i].name.len) & (cap - 1);
            while (idx[k]) k = (k + 1) & (cap - 1);
            idx[k] = i + 1;
        }
        if (ds->vidx_cap) tpl_arena_table_free(a, ds->vidx, ds->vidx_cap * sizeof *idx);
        ds->vidx = idx;
        ds->vidx_cap = cap;
        mask = cap - 1;
        for (at = (uint32_t)h & mask; ds->vidx[at]; at = (at + 1) & mask) {}
    }
    char *s = tpl_arena_strdup(a, name.u.s, name.len);
    /* the hidden slot's name is the whole method name: two long names with a common prefix are
     * two methods (the name cut at 100 bytes made them share one slot: the later def won) */
    char *hs = tpl_arena_alloc(a, name.len + 6);
    if (!s || !hs) { tpl_c_nomem(C, 0); return NULL; }
    memcpy(hs, "(def)", 5);
    memcpy(hs + 5, name.u.s, name.len);
    hs[name.len + 5] = 0;
    erb_def *d = &ds->v[ds->n];
    memset(d, 0, sizeof *d);
    d->name = tpl_v_str(s, name.len);
    d->slot = tpl_c_declare_root(C, tpl_v_str(hs, name.len + 5));
    ds->vidx[at] = ++ds->n;
    return d;
}

/* Whether a def's body yields (yield, block_given?), outside nested defs. */
static bool uses_yield(const tpl_node *n, int depth)
{
    for (; n && depth < 200; n = n->next) {
        if (n->kind == TPL_N_RDEF) continue;
        if ((n->kind == TPL_N_NAME || (n->kind == TPL_N_RMETHOD && !n->a)) && (name_is(n->val, "yield") || name_is(n->val, "block_given?")))
            return true;
        if (uses_yield(n->a, depth + 1) || uses_yield(n->b, depth + 1) || uses_yield(n->c, depth + 1) ||
            uses_yield(tpl_node_d(n), depth + 1) || uses_yield(tpl_node_e(n), depth + 1))
            return true;
    }
    return false;
}

/* Notes the signature of def n (before any statement is compiled: a def's body may call a method
 * defined after it in the same statement). */
static void def_sig(erb_low *L, tpl_node *n)
{
    erb_def *d = def_find(L, n->val, true);
    if (!d) return;
    int nreq = 0, nopt = 0, nkw = 0;
    tpl_value kw[16];
    bool kwreq[16];
    tpl_value blkname = { 0 };
    bool rest = false, kwrest = false;
    for (tpl_node *p = n->a; p; p = p->next) {
        if (p->kind == TPL_N_NAME && p->op == 9) {
            if (p->next) { tpl_c_error(C, p->off, "syntax error, unexpected parameter after the &block parameter"); return; }
            blkname = p->val;
            continue;
        }
        if (kwrest) { tpl_c_error(C, p->off, "syntax error, unexpected parameter after the **keywords parameter"); return; }
        if (p->kind == TPL_N_NAME && p->op == 10) {
            if (rest || nkw) { tpl_c_error(C, p->off, "syntax error, unexpected *rest parameter"); return; }
            rest = true;
        } else if (p->kind == TPL_N_NAME && p->op == 11) {
            kwrest = true;
        } else if (p->kind == TPL_N_NAME) {
            if (rest) { tpl_c_error(C, p->off, "unsupported Ruby construct: a required parameter after a *rest parameter"); return; }
            if (nopt || nkw) { tpl_c_error(C, p->off, "unsupported Ruby construct: a required parameter after optional ones"); return; }
            nreq++;
        } else if (p->op == 0) {
            if (nkw || rest) { tpl_c_error(C, p->off, "syntax error, unexpected optional parameter after *rest or keyword parameters"); return; }
            nopt++;
        } else {
            if (nkw >= 16) { tpl_c_error(C, p->off, "too many keyword parameters"); return; }
            kw[nkw] = p->val;
            kwreq[nkw++] = p->a == NULL;
        }
    }
    bool same = d->nreq == nreq && d->nopt == nopt && d->nkw == nkw && d->rest == rest && d->kwrest == kwrest;
    for (int i = 0; same && i < nkw; i++)
        same = d->kw[i].len == kw[i].len && memcmp(d->kw[i].u.s, kw[i].u.s, kw[i].len) == 0 && d->kwreq[i] == kwreq[i];
    if (d->sig && !same) {
        tpl_c_error(C, n->off, "unsupported Ruby construct: `def %.*s' again with other parameters", (int)n->val.len, n->val.u.s);
        return;
    }
    if (d->early && (nkw || rest || kwrest)) {
        tpl_c_error(C, n->off, "unsupported Ruby construct: `%.*s' has keyword or *rest parameters and is called before its def", (int)n->val.len, n->val.u.s);
        return;
    }
    d->sig = true;
    d->blk = d->blk_early || blkname.len || uses_yield(n->b, 0);
    d->blkname = blkname;
    d->nreq = nreq;
    d->nopt = nopt;
    d->nkw = nkw;
    d->rest = rest;
    d->kwrest = kwrest;
    for (int i = 0; i < nkw; i++) { d->kw[i] = kw[i]; d->kwreq[i] = kwreq[i]; }
}

static void defs_scan(erb_low *L, tpl_node *n, int depth)
{
    for (; n && depth <= 200 && !tpl_c_failed(C); n = n->next) {
        if (n->kind == TPL_N_RDEF) def_sig(L, n);
        defs_scan(L, n->a, depth + 1);
        defs_scan(L, n->b, depth + 1);
        defs_scan(L, n->c, depth + 1);
    }
}

static void fail_msg(erb_low *L, uint32_t off, int delta, const char *fmt, const tpl_value *name)
{
    char msg[220];
    snprintf(msg, sizeof msg, fmt, name->len > 100 ? 100 : (int)name->len, name->u.s);
    tpl_c_at(C, off);
    tpl_c_emit(C, TPL_OP_FAIL, tpl_c_const(C, tpl_v_str(msg, strlen(msg))), delta);
}

/* f(a, k: 1) of a template method without keyword parameters: the keywords are one Hash, its last positional
 * argument (as Ruby passes them); the hidden (blk) keyword stays last. */
static tpl_node *kw_to_hash(erb_low *L, tpl_node *argl)
{
    tpl_node *head = NULL, *tail = NULL, *pairs = NULL, *plast = NULL, *blk = NULL;
    tpl_arena *a = tpl_c_arena(C);
    for (tpl_node *x = argl, *nx; x; x = nx) {
        nx = x->next;
        x->next = NULL;
        if (x->kind == TPL_N_KWARG && name_is(x->val, "(blk)")) { blk = x; continue; }
        if (x->kind != TPL_N_KWARG) {
            if (tail) tail->next = x; else head = x;
            tail = x;
            continue;
        }
        tpl_node *k = tpl_arena_alloc(a, sizeof *k), *pr = tpl_arena_alloc(a, sizeof *pr);
        if (!k || !pr) { tpl_c_nomem(C, x->off); return NULL; }
        memset(k, 0, sizeof *k);
        k->kind = TPL_N_CONST;
        k->off = x->off;
        k->val = x->val;
        k->val.flags |= TPL_F_SYMBOL;
        memset(pr, 0, sizeof *pr);
        pr->kind = TPL_N_PAIR;
        pr->off = x->off;
        pr->a = k;
        pr->b = x->a;
        if (plast) plast->next = pr; else pairs = pr;
        plast = pr;
    }
    if (pairs) {
        tpl_node *d = tpl_arena_alloc(a, sizeof *d), *arg = tpl_arena_alloc(a, sizeof *arg);
        if (!d || !arg) { tpl_c_nomem(C, pairs->off); return NULL; }
        memset(d, 0, sizeof *d);
        d->kind = TPL_N_DICT;
        d->off = pairs->off;
        d->a = pairs;
        memset(arg, 0, sizeof *arg);
        arg->kind = TPL_N_ARG;
        arg->off = pairs->off;
        arg->a = d;
        if (tail) tail->next = arg; else head = arg;
        tail = arg;
    }
    if (blk) {
        if (tail) tail->next = blk; else head = blk;
    }
    return head;
}

/* A call of a template method: its closure (NoMethodError, or NameError for a bare name, before its def
 * ran), the arguments (checked against the def's signature when it is known), CALL. */
static void def_call(erb_low *L, erb_def *d, tpl_node *n, tpl_node *argl, bool bare, bool used)
{
    if (n->kind == TPL_N_RMETHOD && n->c) {
        /* m(args) { block }: the block (a subroutine of this frame) as the method's hidden keyword (blk) */
        if (!d->sig) d->blk_early = d->blk = true;   /* (its def takes the hidden keyword then, whether it yields or not) */
        if (has_splat(argl)) { tpl_c_error(C, n->c->off, "unsupported Ruby construct: a splat and a block in a call of the template method `%.*s'", (int)n->val.len, n->val.u.s); return; }
        if (d->blk) {
            tpl_arena *a = tpl_c_arena(C);
            tpl_node *kw = tpl_arena_alloc(a, sizeof *kw), *m = tpl_arena_alloc(a, sizeof *m), *nil = tpl_arena_alloc(a, sizeof *nil);
            if (!kw || !m || !nil) { tpl_c_nomem(C, n->off); return; }
            memset(nil, 0, sizeof *nil);
            nil->kind = TPL_N_CONST;
            nil->off = n->c->off;
            nil->val = tpl_v_none();
            memset(m, 0, sizeof *m);
            m->kind = TPL_N_RMETHOD;
            m->off = n->c->off;
            m->a = nil;
            m->c = n->c;
            m->op = 1;
            m->val = S("(block)");
            if (n->c->val.type == TPL_T_INT && n->c->val.len) {   /* a lambda: its arity, for (yield) */
                tpl_node *mc = tpl_arena_alloc(a, sizeof *mc), *ma = tpl_arena_alloc(a, sizeof *ma);
                if (!mc || !ma) { tpl_c_nomem(C, n->off); return; }
                memset(mc, 0, sizeof *mc);
                mc->kind = TPL_N_CONST;
                mc->off = n->c->off;
                mc->val = tpl_v_int(n->c->val.len);
                memset(ma, 0, sizeof *ma);
                ma->kind = TPL_N_ARG;
                ma->off = n->c->off;
                ma->a = mc;
                m->b = ma;
            }
            memset(kw, 0, sizeof *kw);
            kw->kind = TPL_N_KWARG;
            kw->off = n->c->off;
            kw->a = m;
            kw->val = S("(blk)");
            tpl_node *last = argl;
            while (last && last->next) last = last->next;
            n->c = NULL;
            tpl_node *kwarg = kw;
            if (last) last->next = kwarg; else argl = kwarg;
            def_call(L, d, n, argl, bare, used);
            if (last) last->next = NULL;
            return;
        }
        n->c = NULL;   /* a method that never yields: Ruby never runs its block */
    }
    tpl_c_at(C, n->off);
    tpl_value hidden = tpl_v_str("(def)", 5);
    if (L->in_def) tpl_c_emit(C, TPL_OP_LOAD_ROOT, d->slot, 1);
    else tpl_c_emit(C, TPL_OP_LOAD_SLOT, d->slot, 1);
    tpl_c_word(C, tpl_c_name(C, hidden));
    uint32_t ok = tpl_c_emit(C, TPL_OP_JT_RB_KEEP, 0, -1);
    /* (a method of Ruby's main object tpl lacks, no template def ran: Ruby calls its own, tpl refuses; a NoMethodError
     * here, which a rescue takes, would be a different answer: `def f; instance_variable_get("@x") rescue 0 end`) */
    fail_msg(L, n->off, 1, self_method(n->val) ? (bare ? "unsupported Ruby construct: Kernel#%.*s called without a receiver"
                                                       : "unsupported Ruby construct: Kernel#%.*s is not implemented by tpl")
                         : bare && n->val.len && n->val.u.s[n->val.len - 1] != '?' && n->val.u.s[n->val.len - 1] != '!'
                                ? "undefined local variable or method `%.*s' for main:Object (NameError)"
                                : "undefined method `%.*s' for main:Object (NoMethodError)", &n->val);
    tpl_c_patch(C, ok, tpl_c_here(C));
    if (d->sig && (d->nkw || d->kwrest)) {
        /* f(1, "k" => 2) of a def with keyword parameters: the brace-less Hash is its keywords (Ruby 3.1: a
         * String key is no keyword parameter's, **opts takes it, else ArgumentError), as f(1, **{"k" => 2}) */
        tpl_node *bh = (tpl_node *)bare_hash(argl);
        if (bh) bh->kind = TPL_N_STARKW;
    }
    if (d->sig && !d->nkw && !d->kwrest) {
        bool kw = false;
        for (tpl_node *a = argl; a; a = a->next) {
            kw = kw || (a->kind == TPL_N_KWARG && !name_is(a->val, "(blk)"));
            if (a->kind == TPL_N_STARKW) {
                tpl_c_error(C, a->off, "unsupported Ruby construct: **hash in a call of the template method `%.*s' without keyword parameters", (int)n->val.len, n->val.u.s);
                return;
            }
        }
        if (kw && !(argl = kw_to_hash(L, argl))) return;
    }
    if (has_splat(argl)) {
        /* f(*args): the count is checked when the call runs */
        if (!d->sig) { tpl_c_error(C, n->off, "unsupported Ruby construct: a splat (*) in a call of `%.*s' before its def", (int)n->val.len, n->val.u.s); return; }
        /* (keywords: a required one missing fails where the def binds it, an unknown one in the call: runtime/vm.c
         * call_macro; a **opts parameter takes the others) */
        bool possplat = false;
        int npos = 0, nreqkw = 0, nleft = 0;
        char req[200];
        size_t lreq = 0;
        req[0] = 0;
        for (tpl_node *a = argl; a; a = a->next) {
            possplat = possplat || a->kind == TPL_N_STARARG;
            npos += a->kind == TPL_N_ARG;
        }
        for (int i = 0; i < d->nkw; i++) {
            if (!d->kwreq[i]) continue;
            if (lreq < 150) lreq += (size_t)snprintf(req + lreq, sizeof req - lreq, "%s%.*s", nreqkw ? ", " : "", d->kw[i].len > 40 ? 40 : (int)d->kw[i].len, d->kw[i].u.s);
            nreqkw++;
            bool given = false;
            for (tpl_node *a = argl; a; a = a->next)
                given = given || (a->kind == TPL_N_KWARG && a->val.len == d->kw[i].len && memcmp(a->val.u.s, d->kw[i].u.s, a->val.len) == 0);
            nleft += !given;
        }
        if (nreqkw && (possplat || (nleft > 1 && nreqkw > KW_MISSING_MAX))) {
            /* (Ruby names every missing keyword, and every required one in a count error: checked at compile time only;
             * f(**h) of one required keyword not given otherwise: its own "missing keyword" when the def binds it) */
            tpl_c_error(C, n->off, "unsupported Ruby construct: a splat (* or **) in a call of the template method `%.*s' with required keyword parameters", (int)n->val.len, n->val.u.s);
            return;
        }
        if (nreqkw && (npos < d->nreq || (!d->rest && npos > d->nreq + d->nopt))) {
            char exp[40], msg[400];
            if (d->rest) snprintf(exp, sizeof exp, "%d+", d->nreq);
            else if (d->nopt) snprintf(exp, sizeof exp, "%d..%d", d->nreq, d->nreq + d->nopt);
            else snprintf(exp, sizeof exp, "%d", d->nreq);
            snprintf(msg, sizeof msg, "wrong number of arguments (given %d, expected %s; required keyword%s: %s) (ArgumentError)",
                     npos, exp, nreqkw > 1 ? "s" : "", req);
            tpl_c_at(C, n->off);
            tpl_c_emit(C, TPL_OP_FAIL, tpl_c_const(C, tpl_v_str(msg, strlen(msg))), used ? 1 : 0);
            return;
        }
        uint32_t w = args_dyn(L, argl, d);
        tpl_c_at(C, n->off);
        tpl_c_emit(C, TPL_OP_CALL, 0, -argw_count(w));
        tpl_c_word(C, w);
        if (!used) tpl_c_emit(C, TPL_OP_POP, 0, -1);
        return;
    }
    if (!d->sig) {
        d->early = true;
        for (tpl_node *a = argl; a; a = a->next)
            if (a->kind == TPL_N_KWARG && !name_is(a->val, "(blk)")) { tpl_c_error(C, a->off, "unsupported Ruby construct: keyword arguments to `%.*s' before its def", (int)n->val.len, n->val.u.s); return; }
    } else {
        /* Ruby 3.1's ArgumentError texts: the count (with every required keyword), else the missing
         * keywords, else the unknown ones */
        int npos = 0, nmiss = 0, nbad = 0;
        char msg[400], miss[200], bad[200], req[200];
        size_t lmiss = 0, lbad = 0, lreq = 0;
        msg[0] = miss[0] = bad[0] = req[0] = 0;
        for (tpl_node *a = argl; a; a = a->next) {
            if (a->kind != TPL_N_KWARG) { npos++; continue; }
            if (name_is(a->val, "(blk)")) continue;
            bool known = false;
            for (int i = 0; i < d->nkw; i++) known = known || (d->kw[i].len == a->val.len && memcmp(d->kw[i].u.s, a->val.u.s, a->val.len) == 0);
            if (!known && !d->kwrest && lbad < 150)
                lbad += (size_t)snprintf(bad + lbad, sizeof bad - lbad, "%s:%.*s", nbad++ ? ", " : "", a->val.len > 40 ? 40 : (int)a->val.len, a->val.u.s);
        }
        int nreqkw = 0;
        for (int i = 0; i < d->nkw; i++) {
            if (!d->kwreq[i]) continue;
            if (lreq < 150) lreq += (size_t)snprintf(req + lreq, sizeof req - lreq, "%s%.*s", nreqkw++ ? ", " : "", d->kw[i].len > 40 ? 40 : (int)d->kw[i].len, d->kw[i].u.s);
            bool given = false;
            for (tpl_node *a = argl; a; a = a->next)
                given = given || (a->kind == TPL_N_KWARG && a->val.len == d->kw[i].len && memcmp(a->val.u.s, d->kw[i].u.s, a->val.len) == 0);
            if (!given && lmiss < 150)
                lmiss += (size_t)snprintf(miss + lmiss, sizeof miss - lmiss, "%s:%.*s", nmiss++ ? ", " : "", d->kw[i].len > 40 ? 40 : (int)d->kw[i].len, d->kw[i].u.s);
        }
        if (npos < d->nreq || (!d->rest && npos > d->nreq + d->nopt)) {
            char exp[40];
            if (d->rest) snprintf(exp, sizeof exp, "%d+", d->nreq);
            else if (d->nopt) snprintf(exp, sizeof exp, "%d..%d", d->nreq, d->nreq + d->nopt);
            else snprintf(exp, sizeof exp, "%d", d->nreq);
            snprintf(msg, sizeof msg, "wrong number of arguments (given %d, expected %s%s%s%s) (ArgumentError)", npos, exp,
                     nreqkw ? "; required keyword" : "", nreqkw > 1 ? "s: " : nreqkw ? ": " : "", req);
        } else if (nmiss) {
            snprintf(msg, sizeof msg, "missing keyword%s: %s (ArgumentError)", nmiss > 1 ? "s" : "", miss);
        } else if (nbad) {
            snprintf(msg, sizeof msg, "unknown keyword%s: %s (ArgumentError)", nbad > 1 ? "s" : "", bad);
        }
        if (msg[0]) {
            tpl_c_at(C, n->off);
            tpl_c_emit(C, TPL_OP_FAIL, tpl_c_const(C, tpl_v_str(msg, strlen(msg))), used ? 0 : -1);
            return;
        }
    }
    uint32_t w = d->sig && (d->rest || d->kwrest) ? args_def(L, argl, d) : args_kw(L, argl, true);
    tpl_c_at(C, n->off);
    tpl_c_emit(C, TPL_OP_CALL, 0, -argw_count(w));
    tpl_c_word(C, w);
    if (!used) tpl_c_emit(C, TPL_OP_POP, 0, -1);
}

/* Whether n (a def's body) has a return inside a begin (also `stmt rescue v`), outside any block or lambda. */
static bool return_in_begin(const tpl_node *n, bool in_begin, int depth)
{
    for (; n && depth < 200; n = n->next) {
        if (n->kind == TPL_N_RDEF || n->kind == TPL_N_RBLOCK) continue;
        if (n->kind == TPL_N_RRETURN && in_begin) return true;
        if (n->kind == TPL_N_RMETHOD && !n->a && !n->b && n->c && n->c->kind == TPL_N_RBLOCK && n->c->op != 8 && name_is(n->val, "loop")) {
            if (return_in_begin(n->c->b, true, depth + 1)) return true;   /* (Kernel#loop: a loop inside a StopIteration rescue) */
            continue;
        }
        if (n->kind == TPL_N_RMETHOD && n->c) {   /* (a call's block: not walked) */
            if (return_in_begin(n->a, in_begin, depth + 1) || return_in_begin(n->b, in_begin, depth + 1)) return true;
            continue;
        }
        bool ib = in_begin || n->kind == TPL_N_RBEGIN;
        if (return_in_begin(n->a, ib, depth + 1) || return_in_begin(n->b, ib, depth + 1) || return_in_begin(n->c, ib, depth + 1) ||
            return_in_begin(tpl_node_d(n), ib, depth + 1) || return_in_begin(tpl_node_e(n), ib, depth + 1))
            return true;
    }
    return depth >= 200;
}

/* After a (begin) call in a def with def_ret: a return in its body (retf set) leaves the enclosing begin
 * body too (flag kept), or the def with retv. */
static void return_check(erb_low *L, uint32_t off)
{
    if (!L->def_ret || !L->in_def) return;
    tpl_c_at(C, off);
    tpl_c_emit(C, TPL_OP_LOAD_SLOT, L->def_ret, 1);
    tpl_c_word(C, tpl_c_name(C, S("(retf)")));
    uint32_t cont = tpl_c_emit(C, TPL_OP_JF_RB, 0, -1);
    bool sub = false;
    for (erb_loop *lc = L->loop; lc; lc = lc->parent) sub = sub || lc->sub;
    if (sub) {
        tpl_c_emit(C, TPL_OP_NONE, 0, 1);
    } else {
        tpl_c_emit(C, TPL_OP_LOAD_SLOT, L->def_ret - 1, 1);
        tpl_c_word(C, tpl_c_name(C, S("(retv)")));
    }
    tpl_c_emit(C, TPL_OP_RET_RB, 0, -1);
    tpl_c_patch(C, cont, tpl_c_here(C));
}

/* Before a (begin) call in such a def: no return yet. */
static void return_reset(erb_low *L)
{
    if (!L->def_ret || !L->in_def) return;
    tpl_c_emit(C, TPL_OP_FALSE, 0, 1);
    tpl_c_emit(C, TPL_OP_STORE_SLOT, L->def_ret, -1);
}

/* A def's required keywords kw[0, n) (in slots[]), from the i-th on, those before it missing as the bits
 * of mask: Ruby's ArgumentError naming every missing one in the def's order ("missing keywords: :a, :b"),
 * as a tree of JSETs (2^n leaves) whose path where all are set falls through. */
static void kw_missing(erb_low *L, const tpl_node *const *kw, const uint32_t *slots, int n, int i, unsigned mask)
{
    if (tpl_c_failed(C)) return;
    if (i == n) {
        if (!mask) return;
        char msg[400];
        size_t len = 0;
        int cnt = 0;
        for (int k = 0; k < n; k++) cnt += (mask >> k) & 1;
        len += (size_t)snprintf(msg, sizeof msg, "missing keyword%s: ", cnt > 1 ? "s" : "");
        for (int k = 0, c = 0; k < n && len < 300; k++)
            if ((mask >> k) & 1)
                len += (size_t)snprintf(msg + len, sizeof msg - len, "%s:%.*s", c++ ? ", " : "",
                                        kw[k]->val.len > 40 ? 40 : (int)kw[k]->val.len, kw[k]->val.u.s);
        snprintf(msg + len, sizeof msg - len, " (ArgumentError)");
        tpl_c_at(C, kw[0]->off);
        tpl_c_emit(C, TPL_OP_FAIL, tpl_c_const(C, tpl_v_str(msg, strlen(msg))), 0);
        return;
    }
    tpl_c_emit(C, TPL_OP_JSET, slots[i], 0);
    uint32_t pos = tpl_c_word(C, 0);
    kw_missing(L, kw, slots, n, i + 1, mask | 1u << i);   /* (missing: ends in a FAIL) */
    tpl_c_patch_word(C, pos, tpl_c_here(C));
    kw_missing(L, kw, slots, n, i + 1, mask);
}

/* def NAME(params) body end: compiles the body as a function of the template (its own locals; @ivars and
 * the template's methods are shared) ending in RET_RB with the body's value, stores its closure in the
 * method's hidden slot when the def runs; its value is the name as a symbol. */
static void def_(erb_low *L, tpl_node *n, bool used)
{
    if (L->in_def) { tpl_c_error(C, n->off, "unsupported Ruby construct: def inside a def"); return; }
    erb_def *d = def_find(L, n->val, true);
    if (!d) return;
    tpl_value pn[66];
    uint32_t np = 0;
    for (tpl_node *p = n->a; p; p = p->next) {
        if (np >= 64) { tpl_c_error(C, p->off, "too many parameters"); return; }
        if (p->kind == TPL_N_NAME && p->op == 9) continue;   /* &blk: below */
        for (uint32_t i = 0; i < np; i++)
            if (pn[i].len == p->val.len && memcmp(pn[i].u.s, p->val.u.s, p->val.len) == 0) { tpl_c_error(C, p->off, "duplicated argument name (SyntaxError)"); return; }
        pn[np++] = p->val;
    }
    tpl_c_at(C, n->off);
    tpl_c_func *f = tpl_c_func_begin(C);
    if (!f) return;
    erb_loop *save_loop = L->loop;
    L->loop = NULL;
    L->in_def++;
    L->def_name = n->val;
    uint32_t save_exc = L->exc_slot, save_retry = L->retry_to;
    L->exc_slot = 0;
    L->retry_to = 0;   /* a def's body is a function of its own: no retry of an enclosing clause */
    uint32_t save_scope = L->scope;
    L->scope = n->off + 1;
    /* the template's block-local names (pending) are no names of the def's own scope: `def w(t)` after a
     * block that assigned t reads its parameter t */
    int save_npend = L->defs->npend;
    tpl_value save_pend[32];
    memcpy(save_pend, L->defs->pend, sizeof save_pend);
    L->defs->npend = 0;
    uint32_t blk_at = np;
    if (d->blk) pn[np++] = S("(blk)");   /* the block: a hidden keyword parameter (def_call) */
    /* required keywords (Ruby names every missing one, before any unknown one: kw_missing) and no **opts: a
     * hidden one takes the unknown keywords of a splat call, checked after the missing ones */
    const tpl_node *kwreq[KW_MISSING_MAX];
    int nkwreq = 0;
    bool kwrest = false;
    for (tpl_node *p = n->a; p; p = p->next) {
        kwrest = kwrest || (p->kind == TPL_N_NAME && p->op == 11);
        if (p->kind == TPL_N_KWARG && p->op == 1 && !p->a) {
            if (nkwreq < KW_MISSING_MAX) kwreq[nkwreq] = p;
            nkwreq++;
        }
    }
    uint32_t kwx_at = np;
    bool kwtree = nkwreq && nkwreq <= KW_MISSING_MAX, kwx = kwtree && !kwrest;
    if (kwx) pn[np++] = S("(kwx)");
    for (uint32_t i = 0; i < np; i++) tpl_c_declare(C, pn[i]);
    uint32_t entry = tpl_c_here(C);
    uint32_t save_blk = L->def_blk, save_blkslot = L->def_blkslot, save_ret = L->def_ret;
    tpl_value save_blkname = L->def_blkname;
    L->def_ret = 0;
    if (return_in_begin(n->b, false, 0)) {
        L->def_ret = tpl_c_declare(C, S("(retv)")) + 1;
        tpl_c_declare(C, S("(retf)"));   /* (the next slot) */
    }
    L->def_blk = 0;
    L->def_blkname = (tpl_value){ 0 };
    if (d->blk) {
        tpl_c_emit(C, TPL_OP_JSET, blk_at, 0);
        uint32_t pos = tpl_c_word(C, 0);
        tpl_c_emit(C, TPL_OP_NONE, 0, 1);
        tpl_c_emit(C, TPL_OP_STORE_SLOT, blk_at, -1);
        tpl_c_patch_word(C, pos, tpl_c_here(C));
        L->def_blk = blk_at + 1;
        if (d->blkname.len) {
            L->def_blkslot = tpl_c_declare(C, d->blkname);
            L->def_blkname = d->blkname;
            tpl_c_emit(C, TPL_OP_LOAD_SLOT, blk_at, 1);
            tpl_c_word(C, tpl_c_name(C, S("(blk)")));
            tpl_c_emit(C, TPL_OP_STORE_SLOT, L->def_blkslot, -1);
        }
    }
    if (kwtree) {
        uint32_t slots[KW_MISSING_MAX], k = 0, j = 0;
        for (tpl_node *p = n->a; p && k < (uint32_t)nkwreq; p = p->next) {
            if (p->kind == TPL_N_NAME && p->op == 9) continue;
            if (p == kwreq[k]) slots[k++] = j;
            j++;
        }
        kw_missing(L, kwreq, slots, nkwreq, 0, 0);
    }
    if (kwx) {   /* then the unknown ones */
        tpl_c_at(C, n->off);
        tpl_c_emit(C, TPL_OP_LOAD_SLOT, kwx_at, 1);
        tpl_c_word(C, tpl_c_name(C, S("(kwx)")));
        tpl_c_emit(C, TPL_OP_CALL_METHOD_RB, tpl_c_name(C, S("(kwunknown)")), 0);
        tpl_c_word(C, TPL_ARGW(0, 0, TPL_NO_KW));
        tpl_c_word(C, 0);
        tpl_c_emit(C, TPL_OP_POP, 0, -1);
    }
    uint32_t i = 0;
    for (tpl_node *p = n->a; p && !tpl_c_failed(C); p = p->next, i++) {
        if (p->kind == TPL_N_NAME && p->op == 9) { i--; continue; }
        if (p->kind == TPL_N_NAME && p->op != 10) continue;   /* required: the call passed it (checked there); **opts: the call's */
        tpl_c_at(C, p->off);
        tpl_c_emit(C, TPL_OP_JSET, i, 0);
        uint32_t pos = tpl_c_word(C, 0);
        if (p->kind == TPL_N_NAME) tpl_c_emit(C, TPL_OP_BUILD_LIST, 0, 1);   /* *rest: no arguments past the others */
        else if (p->a) expr(L, p->a);
        else fail_msg(L, p->off, 1, "missing keyword: :%.*s (ArgumentError)", &p->val);
        tpl_c_emit(C, TPL_OP_STORE_SLOT, i, -1);
        tpl_c_patch_word(C, pos, tpl_c_here(C));
    }
    /* a required parameter a call before the def did not pass */
    i = 0;
    for (tpl_node *p = n->a; p && !tpl_c_failed(C) && d->early; p = p->next, i++) {
        if (p->kind == TPL_N_NAME && p->op == 9) { i--; continue; }
        if (p->kind != TPL_N_NAME || p->op == 10 || p->op == 11) continue;
        tpl_c_at(C, p->off);
        tpl_c_emit(C, TPL_OP_JSET, i, 0);
        uint32_t pos = tpl_c_word(C, 0);
        char msg[160];
        snprintf(msg, sizeof msg, "wrong number of arguments (expected %d) (ArgumentError)", d->nreq);
        tpl_c_emit(C, TPL_OP_FAIL, tpl_c_const(C, tpl_v_str(msg, strlen(msg))), 0);
        tpl_c_patch_word(C, pos, tpl_c_here(C));
    }
    value_body(L, n->b);
    tpl_c_at(C, n->off);
    tpl_c_emit(C, TPL_OP_RET_RB, 0, -1);
    L->def_blk = save_blk;
    L->def_ret = save_ret;
    L->def_blkname = save_blkname;
    L->def_blkslot = save_blkslot;
    L->in_def--;
    L->defs->npend = save_npend;   /* (a def adds none: its blocks' are its own scope's, gone with it) */
    memcpy(L->defs->pend, save_pend, sizeof save_pend);
    L->exc_slot = save_exc;
    L->retry_to = save_retry;
    L->scope = save_scope;
    L->loop = save_loop;
    /* the names a call's keywords bind: a positional parameter none (Ruby passes it by position only), the
     * *rest one the hidden (rest) (args_def), a **opts one the keywords left over (kwargs_slot) */
    int kwargs_slot = -1;
    i = 0;
    for (tpl_node *p = n->a; p && i < np; p = p->next) {
        if (p->kind == TPL_N_NAME && p->op == 9) continue;
        if (p->kind == TPL_N_NAME && p->op == 10) pn[i] = S("(rest)");
        else if (p->kind == TPL_N_NAME && p->op == 11) { pn[i] = S("(**)"); kwargs_slot = (int)i; }
        else if (p->kind == TPL_N_NAME || p->op == 0) pn[i] = S("");
        i++;
    }
    if (kwx) { pn[kwx_at] = S("(**)"); kwargs_slot = (int)kwx_at; }
    tpl_c_func_end(C, f, n->val, pn, np, entry, n->off, kwargs_slot);
    tpl_c_emit(C, TPL_OP_STORE_SLOT, d->slot, -1);
    if (used) {
        tpl_value v = n->val;
        v.flags |= TPL_F_SYMBOL;
        tpl_c_emit(C, TPL_OP_CONST, tpl_c_const(C, v), 1);
    }
}

/* ------------------------------------------------------------------ statements */

static void stmt_(erb_low *L, tpl_node *n);

static void stmt(erb_low *L, tpl_node *n)
{
    stmt_(L, n);
    if (n && n->kind == TPL_N_SET) held_set(L, n);
}

static void stmt_(erb_low *L, tpl_node *n)
{
    if (tpl_c_failed(C) || !n) return;
    if (n->kind == TPL_N_SET && n->a && n->a->kind == TPL_N_NAME && L->defs->npend) {
        if (pend_has(L, n->a->val)) proc_forget(L, n->a->val);   /* a block-local again: a new variable (no Proc yet) */
        pend_set(L, n->a->val, false);
    }
    tpl_c_at(C, n->off);
    switch (n->kind) {
    case TPL_N_TEXT:
    case TPL_N_OUTPUT:
        if (L->in_def) { /* ERB's _erbout is a local of the template, not of the method */
            fail_msg(L, n->off, 0, "undefined local variable or method `%.*s' for main:Object (NameError)", &(tpl_value){ .u.s = "_erbout", .len = 7 });
            return;
        }
        if (n->kind == TPL_N_TEXT) { tpl_c_text(C, n->val.u.s, n->val.len); return; }
        {
        tpl_node *e = n->a;
        if (e->kind == TPL_N_RSTMTS && e->b && !e->b->next) e = e->b;
        if (e->kind == TPL_N_CONST && e->val.type == TPL_T_STR) { tpl_c_text(C, e->val.u.s, e->val.len); return; }
        uint32_t nadd = add_chain(L, e, false);
        if (nadd >= 3) { /* (an error in the chain is located at its last +) */
            add_chain(L, e, true);
            tpl_c_at(C, e->off);
            tpl_c_emit(C, TPL_OP_PRINT_ADDS, nadd, -(int)nadd);
            return;
        }
        expr(L, e);
        tpl_c_at(C, n->off);
        tpl_c_emit(C, TPL_OP_PRINT_PY, 0, -1);
        return;
    }
    case TPL_N_IF:
        if_(L, n, false);
        return;
    case TPL_N_RCASE:
        case_(L, n, false);
        return;
    case TPL_N_SET: {
        if (n->a && n->a->kind == TPL_N_NAME && method_ref(L, n->b) < 0) return;
        if (n->a && n->a->kind == TPL_N_NAME && is_proc_lit(n->b)) { proc_assign(L, n); return; }
        const tpl_node *twin = NULL;
        own_group g = { .n = 0 };
        L->site_bound = false;
        if (is_index(n->a) && !index_site(L, n, &twin, &g)) return;
        bool sb = L->site_bound, was = L->bound_store;
        expr(L, n->b);
        L->bound_store = was || sb;
        if (is_index(n->a)) index_store(L, n->a, n->off, true);
        else store_var(L, n->a->val, n->off);
        if (twin) twin_sync(L, twin);
        group_after(L, &g, n->off);
        L->bound_store = was;
        return;
    }
    case TPL_N_RMETHOD:
        call(L, n, false);
        return;
    case TPL_N_RSTMTS:
        body(L, n->b);
        return;
    case TPL_N_RFOR:
        for_loop(L, n);
        return;
    case TPL_N_RWHILE:
        while_loop(L, n->a, n->op & 1, NULL, n->b, n->off, false, n->op & 2);
        return;
    case TPL_N_RBEGIN:
        begin_(L, n, false);
        return;
    case TPL_N_RDEF:
        def_(L, n, false);
        return;
    case TPL_N_RRETURN:
        if (L->loop && L->loop->sub && L->loop->lambda_) {   /* return in a lambda: from the lambda */
            if (n->a) expr(L, n->a);
            else tpl_c_emit(C, TPL_OP_NONE, 0, 1);
            tpl_c_at(C, n->off);
            tpl_c_emit(C, TPL_OP_RET_RB, 0, -1);
            return;
        }
        for (erb_loop *lc = L->loop; lc; lc = lc->parent)
            if (lc->lambda_) { tpl_c_error(C, n->off, "unsupported Ruby construct: 'return' inside a block or begin/rescue of a lambda"); return; }
        if (!L->in_def) { tpl_c_error(C, n->off, "unsupported Ruby construct 'return' outside a def"); return; }
        bool in_try = false;
        for (erb_loop *lc = L->loop; lc; lc = lc->parent) {
            if (lc->sub && !(lc->try_ && L->def_ret)) { tpl_c_error(C, n->off, "unsupported Ruby construct: 'return' inside a block"); return; }
            in_try = in_try || lc->sub;
        }
        if (in_try) {
            /* inside a begin body (run as a block): the value into (retv), (retf) set, out of the body; each
             * enclosing (begin) call's return_check goes on out (an ensure clause runs first) */
            if (n->a) expr(L, n->a);
            else tpl_c_emit(C, TPL_OP_NONE, 0, 1);
            tpl_c_emit(C, TPL_OP_STORE_SLOT, L->def_ret - 1, -1);
            tpl_c_emit(C, TPL_OP_TRUE, 0, 1);
            tpl_c_emit(C, TPL_OP_STORE_SLOT, L->def_ret, -1);
            tpl_c_emit(C, TPL_OP_NONE, 0, 1);
            tpl_c_at(C, n->off);
            tpl_c_emit(C, TPL_OP_RET_RB, 0, -1);
            return;
        }
        if (n->a) expr(L, n->a);
        else tpl_c_emit(C, TPL_OP_NONE, 0, 1);
        tpl_c_at(C, n->off);
        tpl_c_emit(C, TPL_OP_RET_RB, 0, -1);
        return;
    case TPL_N_RRETRY:
        /* retry: the begin's body again (Ruby: in a rescue clause, else a SyntaxError) */
        if (!L->retry_to) { tpl_c_error(C, n->off, "Invalid retry without rescue (SyntaxError)"); return; }
        if (L->loop != L->retry_loop) {
            tpl_c_error(C, n->off, "unsupported Ruby construct: 'retry' inside a block or loop of a rescue clause");
            return;
        }
        tpl_c_at(C, n->off);
        tpl_c_emit(C, TPL_OP_JUMP, L->retry_to - 1, 0);
        return;
    case TPL_N_RNEXT:
    case TPL_N_RBREAK: {
        bool brk = n->kind == TPL_N_RBREAK;
        erb_loop *lc = L->loop;
        if (!lc) { tpl_c_error(C, n->off, "Invalid %s (SyntaxError)", brk ? "break" : "next"); return; }
        if (lc->try_) { tpl_c_error(C, n->off, "unsupported Ruby construct: '%s' inside begin/rescue", brk ? "break" : "next"); return; }
        if (lc->sub) {
            if (n->a) expr(L, n->a);
            else tpl_c_emit(C, TPL_OP_NONE, 0, 1);
            tpl_c_at(C, n->off);
            tpl_c_emit(C, TPL_OP_RET_RB, brk ? 1 : 0, -1);
            return;
        }
        if (brk && lc->val_slot) {
            if (n->a) expr(L, n->a);
            else tpl_c_emit(C, TPL_OP_NONE, 0, 1);
            tpl_c_emit(C, TPL_OP_STORE_SLOT, lc->val_slot - 1, -1);
        } else if (n->a) { expr(L, n->a); tpl_c_emit(C, TPL_OP_POP, 0, -1); }
        tpl_c_at(C, n->off);
        if (!brk) { tpl_c_emit(C, TPL_OP_JUMP, lc->top, 0); return; }
        if (lc->nbreaks >= 64) { tpl_c_error(C, n->off, "too many breaks in one block"); return; }
        lc->breaks[lc->nbreaks++] = tpl_c_emit(C, TPL_OP_JUMP, 0, 0);
        return;
    }
    default:
        expr(L, n);
        tpl_c_emit(C, TPL_OP_POP, 0, -1);
    }
}

static void body(erb_low *L, tpl_node *n)
{
    for (; n && !tpl_c_failed(C); n = n->next) stmt(L, n);
}

static void ivar_loop_sets(erb_low *L, const tpl_node *n, bool in_loop, int depth);

/* Whether the statement list l's value is ERB's _erbout: its last statement puts text (a text or <%= %>), or
 * is an if/unless whose every branch's is (an absent else is nil). */
static bool puts_last(const tpl_node *l, int depth)
{
    if (!l || depth > 100) return false;
    while (l->next) l = l->next;
    if (l->kind == TPL_N_TEXT) return l->val.len > 0;
    if (l->kind == TPL_N_OUTPUT) return true;
    if (l->kind == TPL_N_IF) return puts_last(l->b, depth + 1) && puts_last(l->c, depth + 1);
    return false;
}

/* The template's last top-level statement n when a comment after its last `end' hides ERB's `; _erbout':
 * ERB#result is that statement's value. An if/elsif/unless chain whose every branch ends in text is the
 * output when a branch runs; with no else, when none does, nil: no output at all, as Ruby prints nil.to_s
 * (the chain gets an else of (erbnil), tpl_vm_out_discard). Anything else is tpl's refusal. */
void tpl_erb_last_value(tpl_comp *c, const tpl_node *n, uint32_t off)
{
    if (!n || tpl_c_failed(c)) return;
    while (n->next) n = n->next;
    if (n->kind == TPL_N_IF && puts_last(n->b, 0)) {
        tpl_node *cur = (tpl_node *)n;
        int k = 0;
        for (; cur->c && cur->c->kind == TPL_N_IF && !cur->c->next && k < 100000; k++) {   /* elsif */
            if (!puts_last(cur->c->b, 0)) goto refuse;
            cur = cur->c;
        }
        if (cur->c) {
            if (puts_last(cur->c, 0)) return;   /* ERB#result: the output, as always */
            goto refuse;
        }
        tpl_node *nil = tpl_node_new(tpl_c_arena(c), TPL_N_CONST, off), *call = tpl_node_new(tpl_c_arena(c), TPL_N_RMETHOD, off);
        if (!nil || !call) { tpl_c_nomem(c, off); return; }
        nil->val = tpl_v_none();
        call->a = nil;
        call->val = tpl_v_str("(erbnil)", 8);
        call->tail = call;
        cur->c = call;
        return;
    }
refuse:
    tpl_c_error(c, off, "unsupported Ruby construct: a comment on the last line hides ERB's `; _erbout' (its result is "
                "then the last statement's value)");
}

/* String#encoding (and __ENCODING__, `"".encoding`): an Encoding object in Ruby, its name in tpl.
 * Whose name it is depends on where the string came from (Integer#to_s, chr, inspect, join and
 * Symbol#to_s are US-ASCII in Ruby, a literal UTF-8), which tpl's strings do not record; so tpl
 * answers only for a receiver whose encoding the template's text shows: a string literal or an
 * interpolation (UTF-8, "(encoding_lit)"), a Symbol (the runtime: US-ASCII when its characters are
 * ASCII); a host object (the Ruby gem's String in another encoding) answers itself. And the name stands for the Encoding only where Ruby
 * prints the same: a <%= %> tag's value, an interpolation, .to_s/.name (the name), .inspect
 * (#<Encoding:NAME>) and == / != between two encodings; anything else is refused. */
static bool enc_source(const tpl_node *n)
{
    return n && n->kind == TPL_N_RMETHOD && n->a && !n->b && !n->c && (name_is(n->val, "encoding") || name_is(n->val, "(encoding_lit)"));
}

/* n: a list; ok: whether its last item's value is printed or named (every item's when all) */
static void enc_walk_(erb_low *L, tpl_node *n, bool ok, bool all, int depth);
static void enc_walk(erb_low *L, tpl_node *n, bool ok, int depth) { enc_walk_(L, n, ok, false, depth); }

static void enc_walk_(erb_low *L, tpl_node *n, bool ok_last, bool all, int depth)
{
    for (; n && !tpl_c_failed(C); n = n->next) {
        bool ok = ok_last && (all || !n->next);
        if (enc_source(n)) {
            /* a literal's (or a Symbol's): the builtin's answer; any other receiver's is the runtime's: a
             * host object's own (a Ruby String in its encoding), a Symbol's, else the builtin refuses */
            if (n->a->kind == TPL_N_INTERP || (n->a->kind == TPL_N_CONST && n->a->val.type == TPL_T_STR && !(n->a->val.flags & TPL_F_SYMBOL)))
                n->val = tpl_v_str("(encoding_lit)", 14);
            if (!ok) {
                tpl_c_error(C, n->off, "unsupported Ruby construct: an Encoding used as a value (tpl has its name: it prints it, "
                            "interpolates it, compares two with == or answers to_s, name or inspect)");
                return;
            }
            enc_walk(L, n->a, false, depth + 1);
            continue;
        }
        if (n->kind == TPL_N_RMETHOD && n->a && !n->b && !n->c && enc_source(n->a) &&
            (name_is(n->val, "to_s") || name_is(n->val, "name") || name_is(n->val, "inspect"))) {
            tpl_node *e = n->a;
            enc_walk(L, e, true, depth + 1);
            if (tpl_c_failed(C)) return;
            if (name_is(n->val, "inspect")) {   /* "#<Encoding:#{e}>" */
                tpl_node *l = tpl_node_new(tpl_c_arena(C), TPL_N_CONST, n->off), *r = tpl_node_new(tpl_c_arena(C), TPL_N_CONST, n->off);
                if (!l || !r) { tpl_c_nomem(C, n->off); return; }
                l->val = tpl_v_str("#<Encoding:", 11);
                r->val = tpl_v_str(">", 1);
                l->next = e;
                e->next = r;
                l->tail = r;
                n->kind = TPL_N_INTERP;
                n->a = l;
                n->val = tpl_v_none();
            } else {   /* the name itself */
                tpl_node *nx = n->next, *tl = n->tail;
                *n = *e;
                n->next = nx;
                n->tail = tl;
            }
            continue;
        }
        if (n->kind == TPL_N_COMPARE && n->b && n->b->kind == TPL_N_CMPOP && !n->b->next &&
            (n->b->op == TPL_AOP_EQ || n->b->op == TPL_AOP_NE) && enc_source(n->a) && enc_source(n->b->a)) {
            enc_walk(L, n->a, true, depth + 1);
            enc_walk(L, n->b->a, true, depth + 1);
            continue;
        }
        bool kid_ok = n->kind == TPL_N_OUTPUT || n->kind == TPL_N_INTERP;
        enc_walk_(L, n->a, kid_ok, kid_ok, depth + 1);
        enc_walk(L, n->b, n->kind == TPL_N_RSTMTS && ok, depth + 1);
        enc_walk(L, n->c, false, depth + 1);
        enc_walk(L, tpl_node_d(n), false, depth + 1);
        enc_walk(L, tpl_node_e(n), false, depth + 1);
    }
}

void tpl_erb_lower_stmt(tpl_comp *c, tpl_node *n, bool frozen)
{
    erb_low low = { .c = c, .loop = NULL, .frozen = frozen, .in_def = 0, .defs = NULL };
    void **ext = tpl_c_ext(c);
    if (!*ext) {
        erb_defs *d = tpl_arena_alloc(tpl_c_arena(c), sizeof *d);
        if (!d) { tpl_c_nomem(c, 0); return; }
        memset(d, 0, sizeof *d);
        *ext = d;
    }
    low.defs = *ext;
    enc_walk(&low, n, false, 0);
    if (tpl_c_failed(c)) return;
    defs_scan(&low, n, 0);
    for (tpl_node *t = n; t; t = t->next) {
        /* a template-level `x = <new object>` runs once, in order: what x held before no longer counts */
        if (t->kind == TPL_N_SET && t->a && t->a->kind == TPL_N_NAME) {
            const tpl_node *lv[8];
            int nlv = 0;
            bool lit = false, self = false;
            bool link = link_leaves(t->b, lv, &nlv, &lit, 0);
            for (int i = 0; i < nlv; i++) self |= same_var(lv[i], t->a);
            own_var *v = (link && !self) || fresh(t->b) ? ov_find(&low, 0, t->a->val, false) : NULL;
            if (v) {
                v->flags = OV_ASSIGNED | (v->flags & OV_BPARAM);
                link_drop(&low, v);
            }
        }
        own_scan(&low, t, 0, 0, 0);
        predeclare_end(&low);
        ivar_loop_sets(&low, t, false, 0);
        if (tpl_c_failed(c)) break;
        stmt(&low, t);   /* (each statement lowered after its scan, before the next one's) */
    }
}

/* The @ivars a loop or a block in n sets (`[1, 2].each { |x| @sum = (@sum || 0) + x }`): their root slots
 * declared before n is lowered, so that every read in the loop, also one before the assignment in the
 * body (it runs again after it), reads the slot (the state key until it is set), not the state alone. */
static void ivar_loop_sets(erb_low *L, const tpl_node *n, bool in_loop, int depth)
{
    for (; n && depth < 200 && !tpl_c_failed(C); n = n->next) {
        if (n->kind == TPL_N_RDEF) continue;   /* (a def's @ivars are the template's slots already) */
        /* (a begin too: `retry` runs its body again) */
        bool loop = in_loop || n->kind == TPL_N_RWHILE || n->kind == TPL_N_RFOR || n->kind == TPL_N_RBLOCK || n->kind == TPL_N_RBEGIN;
        if (loop && n->kind == TPL_N_SET && n->a && (n->a->kind == TPL_N_RIVAR || n->a->kind == TPL_N_NAME) &&
            n->a->val.len > 1 && n->a->val.u.s[0] == '@') {
            uint32_t slot;
            if (!tpl_c_lookup(C, n->a->val, &slot) && !tpl_c_lookup_root(C, n->a->val, &slot))
                tpl_c_declare_root(C, n->a->val);
        }
        ivar_loop_sets(L, n->a, loop, depth + 1);
        ivar_loop_sets(L, n->b, loop, depth + 1);
        ivar_loop_sets(L, n->c, loop, depth + 1);
        ivar_loop_sets(L, tpl_node_d(n), loop, depth + 1);
        ivar_loop_sets(L, tpl_node_e(n), loop, depth + 1);
    }
}

bool tpl_erb_lower_end(tpl_comp *c)
{
    const tpl_options *o = tpl_c_options(c);
    if (o->tidy) tpl_c_emit(c, TPL_OP_TIDY_PY, 0, 0);
    tpl_c_emit(c, TPL_OP_HALT, 0, 0);
    return !tpl_c_failed(c);
}

bool tpl_erb_lower(tpl_comp *c, tpl_node *root)
{
    tpl_erb_lower_stmt(c, root->b, root->op == 1);
    return tpl_erb_lower_end(c);
}
