/* Jinja grammar (Lemon). Mirrors Jinja2 3.1's parser (jinja2/parser.py): the expression levels
 * condexpr < or < and < not < compare < math1 (+ -) < concat (~) < math2 (* / // %) < pow (**)
 * < unary (- +) < filter/test < postfix, and its statements. The driver drops BLOCK_BEGIN, so
 * every statement starts with its keyword token; keywords that are not operators fall back to
 * NAME where a name is expected (`call.channel`, `loop.cycle`, `x.set`). */

%name JinjaParse
%token_prefix TK_
%token_type {tpl_token}
%default_type {tpl_node *}
%extra_argument {tpl_pctx *ctx}
%stack_size 1000

%include {
/* Jinja2 refuses `x is a is b` (but accepts `(x is a) is b`). */
#define NO_TEST_CHAIN(S, T) do { if ((S)->kind == TPL_N_TEST && !((S)->op & 2)) tpl_pctx_error(ctx, (T).off, "You cannot chain multiple tests with is"); } while (0)
/* Lemon's generated code fetches the extra argument in functions that do not use it. */
#pragma GCC diagnostic ignored "-Wunused-variable"
/* Lemon's table-consistency asserts and trace hooks cost ~a third of parsing; the tables are
 * generated, so they are compiled out (the grammar's own actions use no assert). */
#ifndef NDEBUG
#define NDEBUG 1
#endif
#include <assert.h>
#include <string.h>
#include "parse_ctx.h"
#define N(kind, off) tpl_p_node(ctx, TPL_N_##kind, (off), NULL, NULL)
#define NODE(kind, off, a, b) tpl_p_node(ctx, TPL_N_##kind, (off), (a), (b))
static tpl_node *binop(tpl_pctx *ctx, int op, tpl_node *a, tpl_node *b, uint32_t off) {
    tpl_node *n = tpl_p_node(ctx, TPL_N_BINOP, off, a, b);
    if (n) n->op = (uint16_t)op;
    return n;
}
static tpl_node *with_op(tpl_node *n, int op) { if (n) n->op = (uint16_t)op; return n; }
static tpl_node *with_val(tpl_node *n, tpl_value v) { if (n) n->val = v; return n; }
static tpl_node *with_c(tpl_node *n, tpl_node *c) { if (n) n->c = c; return n; }
static tpl_node *with_d(tpl_node *n, tpl_node *d) { if (n) n->d = d; return n; }
}

%syntax_error {
    if (!ctx->failed) {
        if (yymajor == 0 && ctx->in_tag) {
            tpl_jinja_syntax_error(ctx, &TOKEN);
        } else if (yymajor == 0) {
            tpl_pctx_error(ctx, (uint32_t)ctx->n, "unexpected end of template");
        } else if (TOKEN.flag & 0x80) {
            tpl_pctx_error(ctx, TOKEN.off, "Encountered unknown tag '%.*s'.", (int)TOKEN.len, ctx->src + TOKEN.off);
        } else {
            tpl_jinja_syntax_error(ctx, &TOKEN);
        }
    }
}
%stack_overflow {
    tpl_pctx_error(ctx, ctx->cur_off, "template nesting too deep (parser stack limit)");
}

%token TEXT VAR_BEGIN VAR_END BLOCK_BEGIN BLOCK_END SEMICOLON.
%fallback NAME ELIF ENDIF FOR ENDFOR SET ENDSET MACRO ENDMACRO CALL ENDCALL FILTER ENDFILTER
          WITH ENDWITH WITHOUT CONTEXT BLOCK ENDBLOCK EXTENDS INCLUDE IMPORT FROM AS IGNORE MISSING
          RECURSIVE SCOPED REQUIRED BREAK CONTINUE DO AUTOESCAPE ENDAUTOESCAPE GENERATION
          ENDGENERATION ENDRAW PRINT TRANS ENDTRANS PLURALIZE.

/* Operators, loosest first (Jinja2 3.1's parse_or .. parse_pow, then parse_filter_expr's `|`
 * and `is`); they only settle the shift/reduce choices of the bexpr and arith rules below. */
%left OR.
%left AND.
%right NOT.
%left ADD SUB.
%left TILDE.
%left MUL DIV FLOORDIV MOD.
%left POW.
%left PIPE IS.
%left LPAREN.

template ::= tbody(B). { tpl_node *t = N(TEMPLATE, 0); if (t) t->b = B; ctx->root = t; }

/* The template's own statements: each handed to ctx->top as soon as it is parsed when a
 * streaming compile set it (tpl_p_top; the tree then never holds more than one), else a list. */
tbody(A) ::= . { A = NULL; }
tbody(A) ::= tbody(B) TEXT(T). { A = tpl_p_top(ctx, B, with_val(N(TEXT, T.off), tpl_p_tokstr(ctx, T))); }
tbody(A) ::= tbody(B) VAR_BEGIN(T) expr(E) VAR_END. { A = tpl_p_top(ctx, B, NODE(OUTPUT, T.off, E, NULL)); }
tbody(A) ::= tbody(B) VAR_BEGIN(T) tuple_n(E) VAR_END. { A = tpl_p_top(ctx, B, NODE(OUTPUT, T.off, E, NULL)); }
tbody(A) ::= tbody(B) stmt(S). { A = tpl_p_top(ctx, B, S); }

body(A) ::= . { A = NULL; }
/* text, output and statements each append to the body in one reduction (an output's lone
 * expression, the common case, is taken as expr: no tuple_expr reduction) */
body(A) ::= body(B) TEXT(T). { A = tpl_node_append(B, with_val(N(TEXT, T.off), tpl_p_tokstr(ctx, T))); }
body(A) ::= body(B) VAR_BEGIN(T) expr(E) VAR_END. { A = tpl_node_append(B, NODE(OUTPUT, T.off, E, NULL)); }
body(A) ::= body(B) VAR_BEGIN(T) tuple_n(E) VAR_END. { A = tpl_node_append(B, NODE(OUTPUT, T.off, E, NULL)); }
body(A) ::= body(B) stmt(S). { A = tpl_node_append(B, S); }

/* ---- if ---- */
/* An elif chain is a list, not nesting: `elifs` grows to the left (one parser stack entry for
 * any number of branches), each elif an IF in the c of the one before; while it grows, the
 * first elif's `tail` is the last one (tpl_p_elif). An if without elif or else, and the parts
 * of one with them, have no empty rule (each empty rule is a parser reduction). */
stmt(A) ::= IF(T) btuple(C) blk_end body(B) ENDIF BLOCK_END. { A = NODE(IF, T.off, C, B); }
stmt(A) ::= IF(T) btuple(C) blk_end body(B) if_tail(L) ENDIF BLOCK_END. { A = with_c(NODE(IF, T.off, C, B), L); }
if_tail(A) ::= elifs(E). { A = tpl_p_elif_end(E, NULL); }
if_tail ::= if_else.
if_tail(A) ::= elifs(E) if_else(L). { A = tpl_p_elif_end(E, L); }
elifs(A) ::= ELIF(T) btuple(C) blk_end body(B). { A = tpl_p_elif(NULL, NODE(IF, T.off, C, B)); }
elifs(A) ::= elifs(L) ELIF(T) btuple(C) blk_end body(B). { A = tpl_p_elif(L, NODE(IF, T.off, C, B)); }
if_else(A) ::= ELSE blk_end body(B). { A = B ? B : N(TEXT, 0); if (A && !B) A->val = tpl_v_str("", 0); }

/* ---- for ---- */
stmt(A) ::= FOR(T) target(X) IN btuple(I) for_filter(F) for_rec(R) blk_end body(B) for_else(E) ENDFOR BLOCK_END.
    { A = NODE(FOR, T.off, X, I); if (A) { A->c = B; A->d = E; A->e = F; A->op = (uint16_t)R; } }
/* for's iterable and if's and elif's test: Jinja2's parse_tuple(with_condexpr=False), so `for x
 * in 1, 2` loops over a tuple, `if 1, 2` tests one (true) and `if a if b else c` is an error */
btuple ::= bexpr.
btuple(A) ::= bexprs2(L). { A = NODE(TUPLE, L->off, L, NULL); }
btuple(A) ::= bexprs2(L) COMMA. { A = NODE(TUPLE, L->off, L, NULL); }
btuple(A) ::= bexpr(E) COMMA. { A = NODE(TUPLE, E->off, E, NULL); }
/* The end of a tag that opens a body: Jinja2's parse_statements skips one `:` before it
 * ("for python compatibility": `{% if x: %}`, `{% else: %}`, `{% macro m(): %}`) */
blk_end ::= BLOCK_END.
blk_end ::= COLON BLOCK_END.
bexprs2(A) ::= bexpr(X) COMMA bexpr(Y). { A = tpl_node_append(X, Y); }
bexprs2(A) ::= bexprs2(L) COMMA bexpr(Y). { A = tpl_node_append(L, Y); }
for_filter(A) ::= . { A = NULL; }
for_filter(A) ::= IF expr(E). { A = E; }
%type for_rec {int}
for_rec(A) ::= . { A = 0; }
for_rec(A) ::= RECURSIVE. { A = 1; }
for_else(A) ::= . { A = NULL; }
for_else(A) ::= ELSE blk_end body(B). { A = B ? B : with_val(N(TEXT, 0), tpl_v_str("", 0)); }

/* Assignment targets (Jinja2's parse_assign_target): a name, or a tuple of targets with or without
 * parentheses, nested to any depth (`for (a, b), c in ...`). */
target ::= tgt_atom.
target(A) ::= tgt_list(L). { A = NODE(TUPLE, L->off, L, NULL); }
target(A) ::= tgt_list(L) COMMA. { A = NODE(TUPLE, L->off, L, NULL); }
target(A) ::= tgt_atom(X) COMMA. { A = NODE(TUPLE, X->off, X, NULL); }
tgt_atom(A) ::= NAME(T). { A = tpl_p_name(ctx, T); }
tgt_atom(A) ::= LPAREN target(X) RPAREN. { A = X; }
/* `()`: an empty tuple target (parse_primary's Tuple([]), which can_assign): unpacks empty items */
tgt_atom(A) ::= LPAREN(T) RPAREN. { A = NODE(TUPLE, T.off, NULL, NULL); }
/* parse_assign_target parses a list or dict there (parse_primary), then refuses it */
tgt_atom(A) ::= LBRACKET(T) items RBRACKET. { A = N(NAME, T.off); tpl_p_bad_target(ctx, T, "list"); }
tgt_atom(A) ::= LBRACE(T) dict_items RBRACE. { A = N(NAME, T.off); tpl_p_bad_target(ctx, T, "dict"); }
tgt_list(A) ::= tgt_atom(X) COMMA tgt_atom(Y). { A = tpl_node_append(X, Y); }
tgt_list(A) ::= tgt_list(L) COMMA tgt_atom(Y). { A = tpl_node_append(L, Y); }

/* ---- set ---- */
/* Jinja2 3.1.6's parse_assign_target(with_namespace=True): a namespace attribute `ns.a` as the
 * target or as an item of the target's tuple (not inside parentheses); `a, = v` is "unexpected '='"
 * (the tuple ends only at %}), so a trailing comma is a block set's only */
stmt(A) ::= SET(T) set_target(X) ASSIGN tuple_expr(E) BLOCK_END.
    { A = X && X->kind == TPL_N_NSREF ? with_val(NODE(NSSET, T.off, X->a, E), X->val) : NODE(SET, T.off, X, E); }
stmt(A) ::= SET(T) set_target(X) blk_end body(B) ENDSET BLOCK_END. { A = NODE(SETBLOCK, T.off, X, B); }
stmt(A) ::= SET(T) set_target(X) PIPE filter_chain(F) blk_end body(B) ENDSET BLOCK_END.
    { A = with_c(NODE(SETBLOCK, T.off, X, B), F); }
stmt(A) ::= SET(T) set_list(L) COMMA blk_end body(B) ENDSET BLOCK_END.
    { A = NODE(SETBLOCK, T.off, NODE(TUPLE, L->off, L, NULL), B); }
stmt(A) ::= SET(T) set_item(X) COMMA blk_end body(B) ENDSET BLOCK_END.
    { A = NODE(SETBLOCK, T.off, NODE(TUPLE, X->off, X, NULL), B); }
set_target ::= set_item.
set_target(A) ::= set_list(L). { A = NODE(TUPLE, L->off, L, NULL); }
set_item ::= tgt_atom.
set_item(A) ::= NAME(NS) DOT NAME(AT). { A = with_val(NODE(NSREF, NS.off, tpl_p_name(ctx, NS), NULL), tpl_p_tokstr(ctx, AT)); }
set_list(A) ::= set_item(X) COMMA set_item(Y). { A = tpl_node_append(X, Y); }
set_list(A) ::= set_list(L) COMMA set_item(Y). { A = tpl_node_append(L, Y); }

/* ---- macro, call, filter, with ---- */
stmt(A) ::= MACRO(T) NAME(M) LPAREN params(P) RPAREN blk_end body(B) ENDMACRO BLOCK_END.
    { A = with_val(NODE(MACRO, T.off, P, B), tpl_p_tokstr(ctx, M)); }
stmt(A) ::= CALL(T) call_callee(E) blk_end body(B) ENDCALL BLOCK_END. { A = with_c(NODE(CALLBLOCK, T.off, E, NULL), B); }
stmt(A) ::= CALL(T) LPAREN params(P) RPAREN call_callee(E) blk_end body(B) ENDCALL BLOCK_END.
    { A = with_c(NODE(CALLBLOCK, T.off, E, P), B); }
/* parse_call_block's "expected call" (at the tag's line), as soon as the callee is complete */
call_callee(A) ::= callee(E). { A = E; if (E->kind != TPL_N_CALL) tpl_pctx_error(ctx, ctx->tag_off, "expected call"); }
stmt(A) ::= FILTER(T) filter_chain(F) blk_end body(B) ENDFILTER BLOCK_END. { A = NODE(FILTERBLOCK, T.off, F, B); }
stmt(A) ::= WITH(T) with_assigns(S) BLOCK_END body(B) ENDWITH BLOCK_END. { A = NODE(WITH, T.off, S, B); }
/* Jinja2's parse_print: expressions (no tuple) joined by commas, each printed as by {{ }} */
stmt(A) ::= PRINT BLOCK_END. { A = NULL; }
stmt(A) ::= PRINT print_list(L) BLOCK_END. { A = L; }
print_list(A) ::= expr(E). { A = NODE(OUTPUT, E->off, E, NULL); }
print_list(A) ::= print_list(L) COMMA expr(E). { A = tpl_node_append(L, NODE(OUTPUT, E->off, E, NULL)); }
stmt(A) ::= BREAK(T) BLOCK_END. { A = N(BREAK, T.off); }
stmt(A) ::= CONTINUE(T) BLOCK_END. { A = N(CONTINUE, T.off); }
stmt(A) ::= DO(T) tuple_expr(E) BLOCK_END. { A = NODE(DO, T.off, E, NULL); }
stmt(A) ::= GENERATION(T) blk_end body(B) ENDGENERATION BLOCK_END. { A = NODE(GENERATION, T.off, NULL, B); }
stmt(A) ::= AUTOESCAPE(T) expr(E) blk_end body(B) ENDAUTOESCAPE BLOCK_END. { A = NODE(AUTOESCAPE, T.off, E, B); }

/* ---- i18n: {% trans %} (jinja2.ext.i18n, newstyle gettext; built by tpl_p_trans) ---- */
/* {% trans ["context"] [name[=expr]][, ...] [trimmed|notrimmed] %} body [{% pluralize [name] %} body]
 * {% endtrans %}: a body holds only text and {{ name }}. Head items are KWARG nodes (a = the
 * expression or NULL; op bit 1 = a comma came before it); the pluralize part is an ARG node
 * (a = its NAME or NULL, b = its body). */
stmt(A) ::= TRANS(T) trans_ctx(X) trans_head(H) BLOCK_END trans_body(S) trans_plural(P) ENDTRANS BLOCK_END.
    { A = tpl_p_trans(ctx, T.off, X, H, S, P); }
trans_ctx(A) ::= . { A = NULL; }
trans_ctx(A) ::= STRING(T). { A = tpl_p_string(ctx, T); }
/* A NAME may follow a head item without a comma only when that item has no expression (Jinja2
 * wants commas between variables but not after trimmed/notrimmed; an expression followed by a NAME
 * would be ambiguous with a test's argument): th_bare ends in a bare name (or is empty), th_expr
 * in an expression. */
trans_head ::= th_bare.
trans_head ::= th_expr.
th_bare(A) ::= . { A = NULL; }
th_bare(A) ::= th_bare(L) NAME(T). { A = tpl_node_append(L, with_val(N(KWARG, T.off), tpl_p_tokstr(ctx, T))); }
th_bare(A) ::= trans_head(L) COMMA NAME(T). { A = tpl_node_append(L, with_op(with_val(N(KWARG, T.off), tpl_p_tokstr(ctx, T)), 1)); }
th_expr(A) ::= th_bare(L) NAME(T) ASSIGN expr(E).
    { A = tpl_node_append(L, with_op(with_val(NODE(KWARG, T.off, E, NULL), tpl_p_tokstr(ctx, T)), 2)); }
th_expr(A) ::= trans_head(L) COMMA NAME(T) ASSIGN expr(E).
    { A = tpl_node_append(L, with_op(with_val(NODE(KWARG, T.off, E, NULL), tpl_p_tokstr(ctx, T)), 3)); }
trans_body(A) ::= . { A = NULL; }
trans_body(A) ::= trans_body(L) TEXT(T). { A = tpl_node_append(L, with_val(N(TEXT, T.off), tpl_p_tokstr(ctx, T))); }
trans_body(A) ::= trans_body(L) VAR_BEGIN NAME(T) VAR_END. { A = tpl_node_append(L, tpl_p_name(ctx, T)); }
trans_plural(A) ::= . { A = NULL; }
trans_plural(A) ::= PLURALIZE(T) BLOCK_END trans_body(B). { A = NODE(ARG, T.off, NULL, B); }
trans_plural(A) ::= PLURALIZE(T) NAME(N) BLOCK_END trans_body(B). { A = NODE(ARG, T.off, tpl_p_name(ctx, N), B); }

/* ---- template composition ---- */
stmt(A) ::= INCLUDE(T) expr(E) include_opts(O) BLOCK_END. { A = with_op(NODE(INCLUDE, T.off, E, NULL), O); }
%type include_opts {int}
%type ctx_opt {int}
include_opts ::= ctx_opt.
include_opts(A) ::= IGNORE MISSING ctx_opt(C). { A = 1 | C; }
%type ctx_given {int}
ctx_opt(A) ::= . { A = 0; }
ctx_opt(A) ::= ctx_given(C). { A = C; }
ctx_given(A) ::= WITH CONTEXT. { A = 4; } /* (import and from-import; include's default) */
ctx_given(A) ::= WITHOUT CONTEXT. { A = 2; }
stmt(A) ::= IMPORT(T) expr(E) AS NAME(N) ctx_opt(C) BLOCK_END.
    { A = with_op(with_val(NODE(IMPORT, T.off, E, NULL), tpl_p_tokstr(ctx, N)), C); }
stmt(A) ::= FROM(T) expr(E) IMPORT import_names(L) ctx_opt(C) BLOCK_END.
    { A = with_op(NODE(FROMIMPORT, T.off, E, L), C); }
/* a comma after the names only before with/without context (Jinja2's parse_from) */
stmt(A) ::= FROM(T) expr(E) IMPORT import_names(L) COMMA ctx_given(C) BLOCK_END.
    { A = with_op(NODE(FROMIMPORT, T.off, E, L), C); }
import_names ::= import_name.
import_names(A) ::= import_names(L) COMMA import_name(I). { A = tpl_node_append(L, I); }
import_name(A) ::= NAME(T). { A = tpl_p_name(ctx, T); }
import_name(A) ::= NAME(T) AS NAME(U). { A = tpl_p_name(ctx, T); if (A) A->a = tpl_p_name(ctx, U); }
/* `with`/`without` not followed by `context` is a name (Jinja2's parse_from looks one token
 * ahead: `import bar, with, context`, `import bar, with with context`); where no modifier may
 * stand (right after `import`) the %fallback makes it a name already */
import_name(A) ::= ctx_word(T). { A = tpl_p_name(ctx, T); }
import_name(A) ::= ctx_word(T) AS NAME(U). { A = tpl_p_name(ctx, T); if (A) A->a = tpl_p_name(ctx, U); }
%type ctx_word {tpl_token}
ctx_word(A) ::= WITH(T). { A = T; }
ctx_word(A) ::= WITHOUT(T). { A = T; }
stmt(A) ::= EXTENDS(T) expr(E) BLOCK_END. { A = NODE(EXTENDS, T.off, E, NULL); }
stmt(A) ::= BLOCK(T) NAME(N) block_opts(O) blk_end body(B) ENDBLOCK(K) block_end_name(E) BLOCK_END.
    { A = with_op(with_val(NODE(BLOCK, T.off, NULL, B), tpl_p_tokstr(ctx, N)), O);
      if ((O & 2) && !tpl_p_blank_body(B))
          tpl_pctx_error(ctx, K.off, "Required blocks can only contain comments or whitespace");
      /* `{% endblock name %}` must repeat the block's name (Jinja2's parse_block) */
      if (E.len && (E.len != N.len || memcmp(ctx->src + E.off, ctx->src + N.off, N.len) != 0))
          tpl_pctx_error(ctx, E.off, "expected token 'end of statement block', got '%.*s'", (int)(E.len > 40 ? 40 : E.len), ctx->src + E.off); }
%type block_opts {int}
/* Jinja2 3.1's parse_block: skip_if("scoped") then skip_if("required"), each once, in that order */
block_opts(A) ::= . { A = 0; }
block_opts(A) ::= SCOPED. { A = 1; }
block_opts(A) ::= REQUIRED. { A = 2; }
block_opts(A) ::= SCOPED REQUIRED. { A = 3; }
%type block_end_name {tpl_token}
%type pname {tpl_token}
block_end_name(A) ::= . { memset(&A, 0, sizeof A); }
block_end_name(A) ::= NAME(T). { A = T; }

/* ---- parameters and arguments ---- */
params(A) ::= . { A = NULL; }
params ::= param_list.
/* (parse_signature wants a name after each comma: no trailing comma) */
param_list ::= param.
param_list(A) ::= param_list(L) COMMA param(P). {
    /* parse_signature: "non-default argument follows default argument" (an earlier default
     * followed by a non-default one was reported when that one came: only the last one counts,
     * so a long list is not scanned once per parameter) */
    const tpl_node *last = L ? (L->tail ? L->tail : L) : NULL;
    if (P && P->kind != TPL_N_KWARG && last && last->kind == TPL_N_KWARG)
        tpl_pctx_error(ctx, P->off, "non-default argument follows default argument");
    A = tpl_node_append(L, P);
}
param(A) ::= pname(T). { A = tpl_p_name(ctx, T); }
param(A) ::= pname(T) ASSIGN expr(E). { A = with_val(NODE(KWARG, T.off, E, NULL), tpl_p_tokstr(ctx, T)); }
/* parse_assign_target(name_only=True): true/false/none (the lexer's names there) are refused */
pname(A) ::= NAME(T). {
    A = T;
    static const char *const consts[] = { "true", "false", "none", "True", "False", "None" };
    for (size_t i = 0; i < sizeof consts / sizeof *consts; i++)
        if (T.len == strlen(consts[i]) && memcmp(ctx->src + T.off, consts[i], T.len) == 0)
            tpl_pctx_error(ctx, T.off, "can't assign to 'name'");
}

/* Jinja2's parse_with: `target = expr` items joined by commas (no trailing one), each target an
 * assignment target with tuples (`a, (b, c) = ...`), each value an expression (no tuple) */
with_assigns(A) ::= . { A = NULL; }
with_assigns ::= with_list.
with_list ::= with_assign.
with_list(A) ::= with_list(L) COMMA with_assign(S). { A = tpl_node_append(L, S); }
with_assign(A) ::= tgt_atom(X) ASSIGN expr(E). { A = NODE(SET, X->off, X, E); }
with_assign(A) ::= tgt_list(L) ASSIGN expr(E). { A = NODE(SET, L->off, NODE(TUPLE, L->off, L, NULL), E); }

args(A) ::= . { A = NULL; }
args ::= arg_list.
args(A) ::= arg_list(L) COMMA. { A = L; }
arg_list ::= arg.
arg_list(A) ::= arg_list(L) COMMA arg(X). { A = tpl_node_append(L, X); }
arg(A) ::= expr(E). { A = NODE(ARG, E->off, E, NULL); }
arg(A) ::= NAME(T) ASSIGN expr(E). { A = with_val(NODE(KWARG, T.off, E, NULL), tpl_p_tokstr(ctx, T)); }
arg(A) ::= MUL(T) expr(E). { A = NODE(STARARG, T.off, E, NULL); }
arg(A) ::= POW(T) expr(E). { A = NODE(STARKW, T.off, E, NULL); }

/* ---- expressions ---- */
/* A lone expression is the tuple_expr itself, two or more (or one with a trailing comma) are a
 * TUPLE (tuple_n); `exprs` (one or more) is the list literal's. */
tuple_expr ::= expr.
tuple_expr ::= tuple_n.
tuple_n(A) ::= expr(E) COMMA. { A = NODE(TUPLE, E->off, E, NULL); }
tuple_n(A) ::= exprs2(L). { A = NODE(TUPLE, L->off, L, NULL); }
tuple_n(A) ::= exprs2(L) COMMA. { A = NODE(TUPLE, L->off, L, NULL); }
exprs2(A) ::= expr(X) COMMA expr(Y). { A = tpl_node_append(X, Y); }
exprs2(A) ::= exprs2(L) COMMA expr(Y). { A = tpl_node_append(L, Y); }
exprs ::= expr.
exprs(A) ::= exprs(L) COMMA expr(E). { A = tpl_node_append(L, E); }

/* Jinja2's operator levels as two flat nonterminals resolved by the precedence declarations at
 * the top: bexpr (or < and < not, and a comparison chain over two or more arith) over arith (+ - <
 * ~ < * / // % < ** < filters and tests, all left-associative as in Jinja2, and prefix - + over
 * unary_nf, which take no filter: `-x|f` is `(-x)|f`) over postfix (the primaries and their
 * trailers). Each unit rule is one parser reduction for every operand (~50 instructions), so an
 * operand climbs only postfix -> arith -> bexpr -> expr (-> tuple_expr): a comparison is made
 * directly from its first arith, the first prefix - + directly into arith, and the primaries are
 * postfix's own alternatives. The trees are the ones a chain of levels builds. */
expr ::= bexpr.
expr(A) ::= bexpr(T) IF bexpr(C) ELSE expr(F). { A = with_c(NODE(CONDEXPR, T->off, C, T), F); }
expr(A) ::= bexpr(T) IF bexpr(C). { A = NODE(CONDEXPR, T->off, C, T); }

bexpr ::= arith.
bexpr(A) ::= arith(E) cmp_list(L). { A = NODE(COMPARE, E->off, E, L); }
bexpr(A) ::= bexpr(L) OR bexpr(R). { A = NODE(OR, L->off, L, R); }
bexpr(A) ::= bexpr(L) AND bexpr(R). { A = NODE(AND, L->off, L, R); }
bexpr(A) ::= NOT(T) bexpr(E). { A = with_op(NODE(UNOP, T.off, E, NULL), TPL_AOP_NOT); }

cmp_list(A) ::= cmp_op(O) arith(E). { A = O; if (A) A->a = E; }
cmp_list(A) ::= cmp_list(L) cmp_op(O) arith(E). { if (O) O->a = E; A = tpl_node_append(L, O); }
cmp_op(A) ::= EQ(T). { A = with_op(N(CMPOP, T.off), TPL_AOP_EQ); }
cmp_op(A) ::= NE(T). { A = with_op(N(CMPOP, T.off), TPL_AOP_NE); }
cmp_op(A) ::= LT(T). { A = with_op(N(CMPOP, T.off), TPL_AOP_LT); }
cmp_op(A) ::= LTEQ(T). { A = with_op(N(CMPOP, T.off), TPL_AOP_LE); }
cmp_op(A) ::= GT(T). { A = with_op(N(CMPOP, T.off), TPL_AOP_GT); }
cmp_op(A) ::= GTEQ(T). { A = with_op(N(CMPOP, T.off), TPL_AOP_GE); }
cmp_op(A) ::= IN(T). { A = with_op(N(CMPOP, T.off), TPL_AOP_IN); }
cmp_op(A) ::= NOT(T) IN. { A = with_op(N(CMPOP, T.off), TPL_AOP_NOTIN); }

arith ::= postfix. [OR]
arith(A) ::= SUB(T) unary_nf(E). { A = tpl_p_negate(ctx, T.off, E); }
arith(A) ::= ADD(T) unary_nf(E). { A = with_op(NODE(UNOP, T.off, E, NULL), TPL_AOP_POS); }
arith(A) ::= arith(L) ADD(T) arith(R). { A = binop(ctx, TPL_AOP_ADD, L, R, T.off); }
arith(A) ::= arith(L) SUB(T) arith(R). { A = binop(ctx, TPL_AOP_SUB, L, R, T.off); }
arith(A) ::= arith(L) TILDE(T) arith(R).
    { if (L->kind == TPL_N_CONCAT) { tpl_node_append(L->a, R); A = L; } else A = NODE(CONCAT, T.off, tpl_node_append(L, R), NULL); }
arith(A) ::= arith(L) MUL(T) arith(R). { A = binop(ctx, TPL_AOP_MUL, L, R, T.off); }
arith(A) ::= arith(L) DIV(T) arith(R). { A = binop(ctx, TPL_AOP_DIV, L, R, T.off); }
arith(A) ::= arith(L) FLOORDIV(T) arith(R). { A = binop(ctx, TPL_AOP_FLOORDIV, L, R, T.off); }
arith(A) ::= arith(L) MOD(T) arith(R). { A = binop(ctx, TPL_AOP_MOD, L, R, T.off); }
arith(A) ::= arith(L) POW(T) arith(R). { A = binop(ctx, TPL_AOP_POW, L, R, T.off); }

arith(A) ::= arith(S) PIPE filter_call(F). { A = F; if (A) A->a = S; }
/* a call right after a filter or test (parse_filter_expr's loop): `x|attr("items")()` */
arith(A) ::= arith(S) LPAREN(T) args(L) RPAREN. { A = NODE(CALL, T.off, S, L); }
arith(A) ::= arith(S) IS(T) test_name(N). { NO_TEST_CHAIN(S, T); A = with_val(NODE(TEST, T.off, S, NULL), N->val); }
arith(A) ::= arith(S) IS(T) test_name(N) LPAREN args(L) RPAREN. { NO_TEST_CHAIN(S, T); A = with_val(NODE(TEST, T.off, S, L), N->val); }
arith(A) ::= arith(S) IS(T) test_name(N) test_arg(X). { NO_TEST_CHAIN(S, T); A = with_val(NODE(TEST, T.off, S, NODE(ARG, X->off, X, NULL)), N->val); }
arith(A) ::= arith(S) IS(T) NOT test_name(N). { NO_TEST_CHAIN(S, T); A = with_op(with_val(NODE(TEST, T.off, S, NULL), N->val), 1); }
arith(A) ::= arith(S) IS(T) NOT test_name(N) LPAREN args(L) RPAREN. { NO_TEST_CHAIN(S, T); A = with_op(with_val(NODE(TEST, T.off, S, L), N->val), 1); }
arith(A) ::= arith(S) IS(T) NOT test_name(N) test_arg(X). { NO_TEST_CHAIN(S, T); A = with_op(with_val(NODE(TEST, T.off, S, NODE(ARG, X->off, X, NULL)), N->val), 1); }
test_name(A) ::= NAME(T). { A = tpl_p_name(ctx, T); }
test_name(A) ::= NONE(T). { A = tpl_p_name(ctx, T); }
test_name(A) ::= TRUE(T). { A = tpl_p_name(ctx, T); }
test_name(A) ::= FALSE(T). { A = tpl_p_name(ctx, T); }
test_name(A) ::= IN(T). { A = tpl_p_name(ctx, T); }
test_name(A) ::= test_name(S) DOT NAME(N). { A = tpl_p_dotted(ctx, S, N); }
test_arg ::= test_primary.
test_arg(A) ::= test_arg(S) DOT(T) NAME(N). { A = with_val(NODE(GETATTR, T.off, S, NULL), tpl_p_tokstr(ctx, N)); }
test_arg(A) ::= test_arg(S) LPAREN(T) args(L) RPAREN. { A = NODE(CALL, T.off, S, L); }
test_arg(A) ::= test_arg(S) LBRACKET(T) RBRACKET. { A = NODE(GETITEM, T.off, S, NODE(TUPLE, T.off, NULL, NULL)); }
test_arg(A) ::= test_arg(S) LBRACKET(T) subscript(K) RBRACKET. { A = K->kind == TPL_N_SLICE && !K->a ? K : NODE(GETITEM, T.off, S, K); if (A && A == K) A->a = S; }
test_primary(A) ::= NAME(T). { A = tpl_p_name(ctx, T); }
test_primary(A) ::= strings(S). { A = tpl_p_string_join(ctx, S, false); }
test_primary(A) ::= INTEGER(T). { A = tpl_p_integer(ctx, T); }
test_primary(A) ::= FLOAT(T). { A = tpl_p_float(ctx, T); }
test_primary(A) ::= TRUE(T). { A = with_val(N(CONST, T.off), tpl_v_bool(true)); }
test_primary(A) ::= FALSE(T). { A = with_val(N(CONST, T.off), tpl_v_bool(false)); }
test_primary(A) ::= NONE(T). { A = with_val(N(CONST, T.off), tpl_v_none()); }
test_primary(A) ::= LBRACKET(T) items(L) RBRACKET. { A = NODE(LIST, T.off, L, NULL); }
test_primary(A) ::= LBRACE(T) dict_items(L) RBRACE. { A = NODE(DICT, T.off, L, NULL); }

filter_chain ::= filter_call.
filter_chain(A) ::= filter_chain(L) PIPE filter_call(F). { A = tpl_node_append(L, F); }
filter_call(A) ::= fname(T). [OR] { A = with_val(N(FILTER, T->off), T->val); }
filter_call(A) ::= fname(T) LPAREN args(L) RPAREN. { A = with_val(NODE(FILTER, T->off, NULL, L), T->val); }
/* parse_filter's and parse_test's names: `name(.name)*`, one name "a.b" (no such filter or test) */
fname(A) ::= NAME(T). { A = tpl_p_name(ctx, T); }
fname(A) ::= fname(S) DOT NAME(N). { A = tpl_p_dotted(ctx, S, N); }

unary_nf ::= postfix. [OR]
unary_nf(A) ::= SUB(T) unary_nf(E). { A = tpl_p_negate(ctx, T.off, E); }
unary_nf(A) ::= ADD(T) unary_nf(E). { A = with_op(NODE(UNOP, T.off, E, NULL), TPL_AOP_POS); }

postfix(A) ::= postfix(S) DOT(T) NAME(N). { A = with_val(NODE(GETATTR, T.off, S, NULL), tpl_p_tokstr(ctx, N)); }
postfix(A) ::= postfix(S) DOT(T) INTEGER(I). { A = NODE(GETITEM, T.off, S, tpl_p_integer(ctx, I)); }
postfix(A) ::= postfix(S) LBRACKET(T) subscript(K) RBRACKET.
    { if (K->kind == TPL_N_SLICE && !K->a) { A = K; A->a = S; } else A = NODE(GETITEM, T.off, S, K); }
postfix(A) ::= postfix(S) LPAREN(T) args(L) RPAREN. { A = NODE(CALL, T.off, S, L); }
/* `x[]`: parse_subscript with no subscripts makes the key an empty tuple */
postfix(A) ::= postfix(S) LBRACKET(T) RBRACKET. { A = NODE(GETITEM, T.off, S, NODE(TUPLE, T.off, NULL, NULL)); }

callee(A) ::= NAME(T). { A = tpl_p_name(ctx, T); }
callee(A) ::= callee(S) DOT(T) NAME(N). { A = with_val(NODE(GETATTR, T.off, S, NULL), tpl_p_tokstr(ctx, N)); }
callee(A) ::= callee(S) LPAREN(T) args(L) RPAREN. { A = NODE(CALL, T.off, S, L); }

subscript ::= expr.
/* a[1, 2]: Jinja2's parse_subscript makes the keys one tuple (a trailing comma is an error there too) */
subscript(A) ::= exprs2(L). { A = NODE(TUPLE, L->off, L, NULL); }
subscript(A) ::= opt_expr(B) COLON(T) opt_expr(E). { A = NODE(SLICE, T.off, NULL, B); if (A) A->c = E; }
subscript(A) ::= opt_expr(B) COLON(T) opt_expr(E) COLON opt_expr(S). { A = with_d(with_c(NODE(SLICE, T.off, NULL, B), E), S); }
opt_expr(A) ::= . { A = NULL; }
opt_expr ::= expr.

postfix(A) ::= NAME(T). { A = tpl_p_name(ctx, T); }
postfix(A) ::= strings(S). { A = tpl_p_string_join(ctx, S, false); }
postfix(A) ::= INTEGER(T). { A = tpl_p_integer(ctx, T); }
postfix(A) ::= FLOAT(T). { A = tpl_p_float(ctx, T); }
postfix(A) ::= TRUE(T). { A = with_val(N(CONST, T.off), tpl_v_bool(true)); }
postfix(A) ::= FALSE(T). { A = with_val(N(CONST, T.off), tpl_v_bool(false)); }
postfix(A) ::= NONE(T). { A = with_val(N(CONST, T.off), tpl_v_none()); }
postfix(A) ::= LPAREN(T) RPAREN. { A = NODE(TUPLE, T.off, NULL, NULL); }
postfix(A) ::= LPAREN tuple_expr(E) RPAREN. { A = E; if (A->kind == TPL_N_TEST) A->op |= 2; /* parenthesised */ }
postfix(A) ::= LBRACKET(T) items(L) RBRACKET. { A = NODE(LIST, T.off, L, NULL); }
postfix(A) ::= LBRACE(T) dict_items(L) RBRACE. { A = NODE(DICT, T.off, L, NULL); }

strings(A) ::= STRING(T). { A = tpl_p_string(ctx, T); }
strings(A) ::= strings(S) STRING(T). { A = tpl_p_string_cat(ctx, S, T); }

items(A) ::= . { A = NULL; }
items ::= exprs.
items(A) ::= exprs(L) COMMA. { A = L; }
dict_items(A) ::= . { A = NULL; }
dict_items ::= pairs.
dict_items(A) ::= pairs(L) COMMA. { A = L; }
pairs ::= pair.
pairs(A) ::= pairs(L) COMMA pair(P). { A = tpl_node_append(L, P); }
pair(A) ::= expr(K) COLON expr(V). { A = NODE(PAIR, K->off, K, V); }
