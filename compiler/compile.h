/* Compiler interface used by the front ends' drivers (compiler/program.c). */
#ifndef TPL_COMPILE_H
#define TPL_COMPILE_H

#include "../grammar/ast.h"
#include "../runtime/program.h"

typedef struct tpl_comp tpl_comp;

/* A compiler emitting into program p; tmp holds compile-time data (freed by the caller). */
tpl_comp *tpl_comp_new(tpl_program *p, tpl_arena *tmp, const char *src, size_t n);
/* Compiles a TEMPLATE node (Jinja semantics). */
bool tpl_comp_template(tpl_comp *c, tpl_node *root);
/* A Jinja template compiled one top-level statement at a time (for the templates
 * tpl_jinja_streamable accepts; compile.c): begin, each statement in order, end (instead of
 * tpl_comp_template). */
void tpl_comp_stream_begin(tpl_comp *c);
void tpl_comp_stream_stmt(tpl_comp *c, tpl_node *n);
bool tpl_comp_stream_end(tpl_comp *c);
/* A Jinja template compiled in two passes over its statements (for a large template that
 * tpl_jinja_two_pass accepts; compile.c), each statement's tree freed after each pass: begin,
 * facts_stmt for each top-level statement in order, facts_end (false: a compile error, the one
 * tpl_comp_template would report first), then facts_compile for each statement parsed again,
 * and tpl_comp_stream_end. The program is the one tpl_comp_template makes. */
/* loops: the template has a for statement; extends: an extends statement (its blocks are parsed
 * again where the chain's base template places them: tpl_comp_set_reparse) */
void tpl_comp_facts_begin(tpl_comp *c, bool loops, bool extends);
void tpl_comp_facts_stmt(tpl_comp *c, tpl_node *n);
bool tpl_comp_facts_end(tpl_comp *c);
void tpl_comp_facts_compile(tpl_comp *c, tpl_node *n);
/* A two-pass compile's second pass: fn(data, off, a) parses the block whose BLOCK node is at
 * source offset off again into arena a and returns that node (NULL: out of memory), for a block
 * compiled where its statement's tree is not in memory (self.NAME() in another statement).
 * spare: an arena the caller initialised and frees after the compile (or NULL); a block parsed
 * again is parsed into it when no other is (reset after it), so 30,000 self.NAME() calls do not
 * make and zero 30,000 arena chunks; a reparse inside another's compile gets an arena of its own. */
void tpl_comp_set_reparse(tpl_comp *c, tpl_node *(*fn)(void *data, uint32_t off, tpl_arena *a), void *data,
                          tpl_arena *spare);
/* And fn(data, off, min, each, arg) (data: the reparse's) parses the body of that block again
 * with each statement to each(arg, node), its tree freed after it: 1, 0 when the body's source is
 * shorter than min (nothing parsed), -1 failed. A large block is compiled so (its frame's names
 * gathered in two parses first), never holding its whole tree (issue 13 §1). */
void tpl_comp_set_restream(tpl_comp *c, int (*fn)(void *data, uint32_t off, size_t min,
                                                  void (*each)(void *arg, tpl_node *n), void *arg));
/* Moves code and tables into the program and releases the compiler's heap buffers. Must be
 * called once, also after a failure. */
bool tpl_comp_finish(tpl_comp *c);
/* The peephole pass (compiler/peephole.c), one walk over code[0..n): rewrites the opcode of each
 * instruction that a superinstruction of opcodes.def (TPL_FUSED) covers, and each jump operand
 * whose target is an unconditional JUMP to that JUMP's target; nothing else changes. */
void tpl_peephole(uint32_t *code, size_t n);
/* The first compile error, if any. */
bool tpl_comp_error(const tpl_comp *c, uint32_t *off, const char **msg, tpl_error_kind *kind);


/* ---- the compiler's building blocks, for lowerings in other files (ERB, format strings) ----
 * Opcodes passed to tpl_c_emit are Jinja's; the current syntax's variant is emitted (JF_PY
 * becomes JF_RB in an ERB template). `delta` is the instruction's stack effect. */
uint32_t tpl_c_emit(tpl_comp *c, int op, uint32_t a, int delta);
uint32_t tpl_c_word(tpl_comp *c, uint32_t w);          /* an extra operand word; returns its position */
uint32_t tpl_c_here(tpl_comp *c);                      /* binds a label at the next instruction */
void tpl_c_patch(tpl_comp *c, uint32_t pc, uint32_t target);
void tpl_c_patch_word(tpl_comp *c, uint32_t pos, uint32_t target);
uint32_t tpl_c_const(tpl_comp *c, tpl_value v);         /* constant index (strings are copied) */
uint32_t tpl_c_name(tpl_comp *c, tpl_value s);          /* name index (hash precomputed) */
uint32_t tpl_c_name_sym(tpl_comp *c, tpl_value s);      /* the same, keeping s's TPL_F_SYMBOL (ERB h[:k]) */
void tpl_c_expr(tpl_comp *c, tpl_node *n);
void tpl_c_body(tpl_comp *c, tpl_node *n);
/* An if/elif chain is compiled in a loop, not by recursion: mark = tpl_c_chain_begin(c), then
 * tpl_c_chain_jump(c, pc) for each branch's JUMP to the chain's end, and tpl_c_chain_end(c,
 * mark) where the chain ends (patches those jumps; chains nested in the branches keep their
 * own marks). */
size_t tpl_c_chain_begin(tpl_comp *c);
void tpl_c_chain_jump(tpl_comp *c, uint32_t pc);
void tpl_c_chain_end(tpl_comp *c, size_t mark);
/* An if/elif chain comparing one pure lookup with string literals as a SWITCH_STR jump table
 * (compile.c); the front end's own expression and body compilers are called with ctx. Inside
 * a chain (tpl_c_chain_begin): the branches' end jumps go to the chain's end and *rest is what
 * follows the table's branches (an elif to continue the chain with, an else body, or NULL),
 * for the caller to compile. False (nothing emitted) when n starts no such chain. */
typedef void (*tpl_c_fn)(void *ctx, tpl_node *n);
bool tpl_c_if_switch(tpl_comp *c, tpl_node *n, tpl_c_fn cond, tpl_c_fn body, void *ctx, tpl_node **rest);
void tpl_c_text(tpl_comp *c, const char *s, size_t n);  /* output text (merged with neighbours) */
uint32_t tpl_c_declare(tpl_comp *c, tpl_value name);    /* a variable of the innermost scope */
uint32_t tpl_c_slot(tpl_comp *c);                      /* an anonymous slot */
uint32_t tpl_c_nslots(const tpl_comp *c);              /* the slots the function has so far (the next new one) */
void tpl_c_push_scope(tpl_comp *c);
void tpl_c_pop_scope(tpl_comp *c);
void tpl_c_store(tpl_comp *c, tpl_node *target);        /* pops into a NAME or TUPLE target */
void tpl_c_load(tpl_comp *c, tpl_value name);           /* pushes a name's value */
int tpl_c_syntax(const tpl_comp *c);                    /* tpl_syntax_id */
void tpl_c_at(tpl_comp *c, uint32_t off);               /* source offset for the next instructions */
tpl_arena *tpl_c_arena(tpl_comp *c);                    /* compile-time arena */
const tpl_options *tpl_c_options(const tpl_comp *c);
const char *tpl_c_template_name(const tpl_comp *c);  /* the name tpl_compile was given ("" when none) */
bool tpl_c_failed(const tpl_comp *c);
void tpl_c_error(tpl_comp *c, uint32_t off, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A compile error of a finer kind than TPL_EK_SYNTAX (include/tpl_errors.def), located at off. */
void tpl_c_fail(tpl_comp *c, tpl_error_kind kind, uint32_t off, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* The compiler's one out-of-memory report, located at off (TPL_EK_NOMEM). */
void tpl_c_nomem(tpl_comp *c, uint32_t off);
/* The program's arena: constants built by a lowering (keyword-name tuples) live here. */
tpl_arena *tpl_c_program_arena(tpl_comp *c);
/* True when name is a variable of the current function (its slot in *slot). */
bool tpl_c_lookup(tpl_comp *c, tpl_value name, uint32_t *slot);

/* A lowering's own pointer for the whole compile (ERB keeps the template's defs there; NULL at first). */
void **tpl_c_ext(tpl_comp *c);
/* True when name is a variable of the template level (its slot in *slot), from anywhere. */
bool tpl_c_lookup_root(tpl_comp *c, tpl_value name, uint32_t *slot);
/* A variable of the template level's outermost scope, declared from anywhere (a hidden slot). */
uint32_t tpl_c_declare_root(tpl_comp *c, tpl_value name);
/* A nested function (an ERB def): tpl_c_func_begin emits a JUMP over its code and opens its frame (the
 * enclosing functions' variables resolve as the template level's; declare its parameters first, slot i =
 * parameter i; its code must end in an END instruction, e.g. RET_RB, whose value is the call's);
 * tpl_c_func_end closes it, registers it as a macro entered at `entry` with parameter names
 * params[0..nparams) (keyword arguments bind by those names; kwargs_slot >= 0: the slot of the Hash that takes the
 * others) and pushes its closure (MACRO). */
typedef struct tpl_c_func tpl_c_func;
tpl_c_func *tpl_c_func_begin(tpl_comp *c);
void tpl_c_func_end(tpl_comp *c, tpl_c_func *f, tpl_value name, const tpl_value *params, uint32_t nparams, uint32_t entry,
                    uint32_t off, int kwargs_slot);

/* True when the compile options name a host function of that kind (a tpl_host_kind). */
bool tpl_c_host_func(const tpl_comp *c, tpl_value name, int kind);

/* Compiles an ERB TEMPLATE node (Ruby semantics; compiler/lower_erb.c). */
bool tpl_erb_lower(tpl_comp *c, tpl_node *root);
/* The same one top-level statement at a time (a streaming compile, tpl_erb_parse with c->top):
 * each statement n in order (frozen: the template's tpl_erb_frozen is 1), then the end. */
void tpl_erb_lower_stmt(tpl_comp *c, tpl_node *n, bool frozen);
/* The template's last statement n when a comment after its `end` hides ERB's `; _erbout` (at offset off):
 * refused unless its value is the output (an if/unless whose every branch ends in text or <%= %>). */
void tpl_erb_last_value(tpl_comp *c, const tpl_node *n, uint32_t off);
bool tpl_erb_lower_end(tpl_comp *c);

/* Records a tr() call at source offset off whose text is `text` (a CONST str node is a literal;
 * anything else, or NULL, is reported by tplc lint as not extractable). */
void tpl_c_note_tr(tpl_comp *c, uint32_t off, const tpl_node *text);

/* Format-string prompts (compiler/lower_fmt.c): lowers the whole template src[0..n). */
bool tpl_lower_fmt(tpl_comp *c, const char *src, size_t n);

/* Jinja front end + compiler. Fills err on failure. */
tpl_status tpl_compile_jinja(tpl_program *p, const char *src, size_t n, tpl_error *err);
/* ERB front end + lowering (source kept byte for byte). Fills err on failure. */
tpl_status tpl_compile_erb(tpl_program *p, const char *src, size_t n, tpl_error *err);

/* The cut of a left-leaning `+` chain n (link(x): x is one of its additions, its left operand
 * x->a, its right x->b), shared by the Jinja and ERB compilers: both languages add left to right,
 * so an operand from the third on is evaluated after the additions before it. *cut is the chain's
 * leaf (its first operand), or the sub-chain before the first operand from the third on that
 * safe(ctx, operand, chain before it) says may raise or act: that sub-chain is one operand, compiled
 * first, so the error of an earlier addition comes first (Jinja2 `s + n + undef.x`, Ruby
 * `'a' + 1 + [].fetch(3)`). Returns how many operands one ADDS adds (1: n is no chain). */
uint32_t tpl_add_chain_cut(tpl_node *n, bool (*link)(const tpl_node *x),
                           bool (*safe)(void *ctx, const tpl_node *x, const tpl_node *prev), void *ctx,
                           tpl_node **cut);

#endif
