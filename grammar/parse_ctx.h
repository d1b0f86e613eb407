/* State shared by a Lemon grammar's actions and its driver. */
#ifndef TPL_PARSE_CTX_H
#define TPL_PARSE_CTX_H

#include "lex.h"
#include "ast.h"
#include "../include/tpl.h"

typedef struct tpl_pctx {
    tpl_arena *arena;     /* AST nodes and literal strings */
    const char *src;      /* normalised source (NUL-terminated) */
    size_t n;
    tpl_node *root;       /* the TEMPLATE node once parsing succeeded */
    bool failed;
    bool nomem;         /* the error is out of memory (tpl_pctx_nomem) */
    bool assertion;     /* the error is Jinja2's TemplateAssertionError (tpl_pctx_assert) */
    uint32_t err_off;
    char msg[320];
    uint32_t cur_off;     /* offset of the token being parsed */
    /* Jinja's driver, for Jinja2's syntax-error texts (tpl_jinja_syntax_error): the token before
     * the one being parsed (kind, flag) and the one before it, the tag it is in (TK_VAR_BEGIN for `{{`, else the tag's
     * first token), the brackets open in that tag and which keywords it has passed (1 `in`,
     * 2 `as`, 4 `import`, 8 a bracket at the top level, 16 `with`'s `=` since its last comma, 32 a
     * comma inside `with`'s current target, 64 the `)` just seen closed a call block's parameters). */
    int prev_kind, prev2_kind, tag;
    uint32_t tag_off;     /* where that tag's first token is */
    uint8_t prev_flag, tag_seen;
    bool in_fname;        /* the token before is part of a filter's or test's (dotted) name */
    uint16_t nest;
    uint8_t nest_kind[32]; /* the outermost 32 open brackets' TPL_NK_*, */
    uint32_t nest_off[32]; /* and where each opened */
    /* the template ends inside a tag (Jinja2's lexer stops there; its parser says what it
     * expected), and the last token (Jinja2 reports an end of template at its line) */
    bool in_tag;
    bool lex_failed;      /* the tokens stop at the scanner's error: no end of template */
    uint32_t last_off, last_len;
    const tpl_jtok_vec *toks; /* the tokens being parsed and the index of the current one (for */
    size_t ti;                /* the look-ahead of Jinja2's error texts) */
    /* `break` and `continue` are unknown tags (Jinja2 without jinja2.ext.loopcontrols) */
    bool no_loop_controls;
    bool no_generation;   /* `generation` is an unknown tag (outside the hf profile) */
    bool no_do;           /* `do` is an unknown tag (without jinja2.ext.do) */
    tpl_node dummy;       /* returned when the arena is exhausted (the parse then fails) */
    void *front;          /* a front end's private state (ERB: its generated script) */
    /* A streaming compile (Jinja): each top-level statement goes to top(top_data, node) as soon
     * as it is parsed instead of into root's list; NULL: the whole tree is built. */
    void (*top)(void *top_data, tpl_node *node);
    void *top_data;
    /* A streaming compile: the arena for what outlives a statement's tree (ERB: the script, its
     * texts, the tokenizer's local names) while `arena` is reset after each statement; NULL:
     * `arena` holds it all. */
    tpl_arena *keep;
    /* ERB: a comment on the script's last line right after an `end` (it hides ERB's `; _erbout`: the result
     * is that statement's value): its offset + 1, for the compiler's check of the last statement (0: none) */
    uint32_t erb_last_comment;
} tpl_pctx;

/* What an open bracket of a Jinja tag is (tpl_pctx.nest_kind), for what Jinja2 expects next. */
enum {
    TPL_NK_GROUP = 1,   /* ( ) a parenthesised expression or tuple: `)` */
    TPL_NK_CALL,        /* f( ) call arguments: `,` */
    TPL_NK_SIG,         /* macro / call-block parameters: names, `,` */
    TPL_NK_LIST,        /* [ ] a list or a subscript: `,` */
    TPL_NK_DICT,        /* { } `:` after a key, else `,` */
    TPL_NK_KW = 0x10,   /* flag: a call that has had a keyword argument */
    TPL_NK_COLON = 0x20 /* flag: a dict entry past its `:` */
};

/* Jinja2's text for a syntax error at token t of a Jinja template (its parser's expect() and
 * parse_primary()/parse_tuple() failures: "expected token 'end of print statement', got 'y'",
 * "unexpected 'end of statement block'", "Expected an expression, got ...", "can't assign to
 * 'const'"), from the state the driver keeps in c. */
void tpl_jinja_syntax_error(tpl_pctx *c, const tpl_token *t);

/* The grammar's top-level append: node to ctx->top when streaming (returns list unchanged),
 * else appended to list. */
tpl_node *tpl_p_top(tpl_pctx *ctx, tpl_node *list, tpl_node *node);
/* Whether a Jinja template's tokens name only statements a streaming compile takes (if, for,
 * break, continue: nothing the compiler must see the whole template for: no extends, block,
 * set, macro, import, include, call, with, ...). */
bool tpl_jinja_streamable(const tpl_jtok_vec *toks);
/* What a two-pass compile of the template of tokens toks needs to know first
 * (tpl_comp_facts_begin): *loops, it has a for statement; *extends, an extends statement. (A
 * block compiled where self.NAME() or the base template calls it, outside its statement, is
 * parsed again there: tpl_comp_set_reparse.) */
void tpl_jinja_two_pass(const tpl_jtok_vec *toks, bool *loops, bool *extends);
/* Whether every extends is a string constant at the top level (not inside an if): the only kind
 * the two-pass compile takes; another picks its parent at render time (the whole-tree compile). */
bool tpl_jinja_extends_static(const tpl_jtok_vec *toks);

/* Records the first error (later ones are ignored). */
void tpl_pctx_error(tpl_pctx *c, uint32_t off, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A parse error Jinja2's parser raises as TemplateAssertionError (its exc= argument). */
void tpl_pctx_assert(tpl_pctx *c, uint32_t off, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The kind of c's error: TPL_EK_NOMEM, TPL_EK_ASSERTION or TPL_EK_SYNTAX. */
tpl_error_kind tpl_pctx_kind(const tpl_pctx *c);
/* The parser's one out-of-memory report: tpl_pctx_error with the error model's message, nomem set. */
void tpl_pctx_nomem(tpl_pctx *c, uint32_t off);

/* Token helpers used by grammar actions. */
tpl_node *tpl_p_name(tpl_pctx *c, tpl_token t);      /* NAME node */
tpl_node *tpl_p_dotted(tpl_pctx *c, tpl_node *name, tpl_token t); /* name "a" + `.b`: "a.b" */
void tpl_p_bad_target(tpl_pctx *c, tpl_token open, const char *what); /* a list or dict as a target */
tpl_node *tpl_p_string(tpl_pctx *c, tpl_token t);    /* CONST str from a quoted literal */
/* "a" "b": the literals after the first wait in a->a (a list of CONST nodes) until
 * tpl_p_string_join copies them all into a's value at once, where the literal ends (a copy of the
 * string so far per literal was quadratic: 20,000 adjacent literals took 200 MB and seconds). */
tpl_node *tpl_p_string_cat(tpl_pctx *c, tpl_node *a, tpl_token t);
/* a itself (CONST str) with its waiting literals appended, once; keep_flags: a's value flags stay
 * (else a joined string has none, as Jinja's always had); any other node as it is. */
tpl_node *tpl_p_string_join(tpl_pctx *c, tpl_node *a, bool keep_flags);
tpl_node *tpl_p_integer(tpl_pctx *c, tpl_token t);
/* tpl_p_integer's node for the literal 2**63 (op of a CONST, a big int): negated it is the int
 * -9223372036854775808 (tpl_p_negate folds it). */
#define TPL_CONST_INT_2_63 1
/* `-e` (Jinja's unary minus): a UNOP, or the CONST -9223372036854775808 when e is 2**63. */
tpl_node *tpl_p_negate(tpl_pctx *c, uint32_t off, tpl_node *e);
tpl_node *tpl_p_float(tpl_pctx *c, tpl_token t);
tpl_node *tpl_p_node(tpl_pctx *c, int kind, uint32_t off, tpl_node *a, tpl_node *b);
tpl_value tpl_p_tokstr(tpl_pctx *c, tpl_token t);    /* the token's bytes as a str value */
/* Whether a block body holds only template text that is Python-isspace() (comments leave
 * nothing): what Jinja2's parse_block allows in a `required` block. */
bool tpl_p_blank_body(const tpl_node *body);
/* {% trans %} as jinja2.ext.i18n parses it with newstyle gettext: context (a CONST str or NULL),
 * head (KWARG nodes from the grammar), the singular body (TEXT and NAME nodes) and the pluralize
 * part (ARG: a = NAME or NULL, b = body; NULL: none) become an OUTPUT of a call of gettext,
 * ngettext, pgettext or npgettext with the message(s), the count and every variable as a keyword
 * (preceded by `SET _trans = ...` when the count is a call, as Jinja2 does). Errors are Jinja2's. */
tpl_node *tpl_p_trans(tpl_pctx *c, uint32_t off, tpl_node *context, tpl_node *head, tpl_node *singular_body,
                      tpl_node *plural_part);

/* if/elif (ERB: elsif) chains, built without recursion: tpl_p_elif appends the IF node `elif`
 * to the chain `chain` (NULL: none yet), which keeps its last IF in the first one's `tail`;
 * tpl_p_elif_end gives the chain its else body (may be NULL), clears `tail` and returns the
 * chain (or the else body when there is no elif), the first IF's c. */
tpl_node *tpl_p_elif(tpl_node *chain, tpl_node *elif);
tpl_node *tpl_p_elif_end(tpl_node *chain, tpl_node *else_body);

/* Parses a Jinja template into c->root; returns false with c->msg/err_off on failure. */
bool tpl_jinja_parse(tpl_pctx *c, const tpl_jtok_vec *toks);
/* A template the scanner refused (lr: not out of memory) with the tokens before its error: as
 * Jinja2's lexer runs while its parser reads, a syntax error in those tokens is the one
 * reported, else the scanner's. Leaves c failed; returns false. */
bool tpl_jinja_parse_lex_failed(tpl_pctx *c, const tpl_jtok_vec *toks, const tpl_lex_result *lr);
/* Parses again, into c (its arena), the block statement whose BLOCK node is at source offset off
 * of the template whose tokens are t (already parsed whole without error): its tokens from its
 * `{%` to its endblock's `%}` as a template of that one statement. Returns the BLOCK node, or
 * NULL (out of memory; no such block). */
tpl_node *tpl_jinja_parse_block(tpl_pctx *c, const tpl_jtok_vec *t, uint32_t off);
/* The body of the block whose tag is at source offset off (from after its tag to its endblock),
 * parsed again as a template of its own: c->top gets its statements one at a time (a large block
 * compiled a statement at a time, issue 13 §1). 1 parsed, 0 the body's source is shorter than
 * min (nothing parsed), -1 failed (c's error, or no such block). */
int tpl_jinja_parse_block_body(tpl_pctx *c, const tpl_jtok_vec *t, uint32_t off, size_t min);
/* The deepest AST the compilers walk (they recurse once per level or so): about as deep as
 * Python lets Jinja2 go. A deeper tree (a chain of 50,000 filters, `1+1+...`) is a located
 * error before any walk. */
#define TPL_MAX_AST_DEPTH 1000
/* False, with the error at the first node deeper than TPL_MAX_AST_DEPTH, for such a tree. */
bool tpl_p_check_depth(tpl_pctx *c, const tpl_node *root);
/* tpl_p_check_depth for a tree whose nodes (all but root itself) are in arena a: a tree is no
 * deeper than it has nodes, so when a holds too few bytes for TPL_MAX_AST_DEPTH nodes the walk
 * is skipped (issue 21: the walk was 4% of compiling a small template). */
bool tpl_p_depth_ok(tpl_pctx *c, const tpl_arena *a, const tpl_node *root);

/* A string -> uint32 map for compile-time name lookups (scopes, blocks, a lexer's locals), so
 * that resolving a name costs O(1) instead of a scan over every name seen so far. Keys are
 * borrowed (they must outlive the map: the source, an AST arena); the table lives in `arena`
 * (grown tables are left there, which costs at most the final table once more). Zero-initialise
 * with the arena set. */
typedef struct tpl_smap_ent { const char *s; uint32_t len, val; } tpl_smap_ent;
typedef struct tpl_smap {
    tpl_arena *arena;
    tpl_smap_ent *e;     /* open addressing; s == NULL marks an empty entry */
    uint32_t cap, n;
} tpl_smap;
/* True with *val set when s[0..n) is a key. */
bool tpl_smap_get(const tpl_smap *m, const char *s, size_t n, uint32_t *val);
/* Sets key s[0..n) to val (overwriting); false when out of memory. */
bool tpl_smap_put(tpl_smap *m, const char *s, size_t n, uint32_t val);

#endif
