/* The AST shared by every syntax. Front ends (grammar/) build it; the compiler lowers it.
 * Nodes live in the compile arena; lists are linked through `next`. Every node has the byte
 * offset of its first character in the source (its span start) for diagnostics. */
#ifndef TPL_AST_H
#define TPL_AST_H

#include "../runtime/value.h"

/* X(KIND, children meaning) — the one list of node kinds. */
#define TPL_NODE_KINDS(X) \
    /* expressions */ \
    X(CONST,     "val = the constant") \
    X(NAME,      "val = name (str)") \
    X(GETATTR,   "a = object, val = attribute name") \
    X(GETITEM,   "a = object, b = key") \
    X(SLICE,     "a = object, b = start, c = stop, d = step (each may be NULL)") \
    X(CALL,      "a = callee, b = args (list of ARG/KWARG/STARARG/STARKW)") \
    X(ARG,       "a = value") \
    X(KWARG,     "val = name, a = value") \
    X(STARARG,   "a = value (*args)") \
    X(STARKW,    "a = value (**kwargs)") \
    X(FILTER,    "a = subject (NULL in filter blocks), val = name, b = args") \
    X(TEST,      "a = subject, val = name, b = args; op = 1 when negated") \
    X(BINOP,     "op = TPL_AOP_*, a, b") \
    X(UNOP,      "op = TPL_AOP_NEG/POS/NOT, a") \
    X(AND,       "a, b") \
    X(OR,        "a, b") \
    X(COMPARE,   "a = first operand, b = list of CMPOP") \
    X(CMPOP,     "op = TPL_AOP_EQ.., a = right operand") \
    X(CONDEXPR,  "a = test, b = then, c = else (NULL: undefined)") \
    X(CONCAT,    "a = list of operands (~)") \
    X(LIST,      "a = items") \
    X(TUPLE,     "a = items") \
    X(DICT,      "a = list of PAIR") \
    X(PAIR,      "a = key, b = value") \
    X(INTERP,    "a = list of parts (string interpolation, ERB \"#{}\")") \
    /* statements */ \
    X(TEXT,      "val = text") \
    X(OUTPUT,    "a = expression to print") \
    X(IF,        "a = test, b = body, c = else body (or an IF for elif)") \
    X(FOR,       "a = target, b = iterable, c = body, d = else body, e = filter test; op = 1 recursive") \
    X(SET,       "a = target, b = value") \
    X(SETBLOCK,  "a = target, b = body, c = filters (FILTER list)") \
    X(MACRO,     "val = name, a = params (NAME or KWARG with default), b = body") \
    X(CALLBLOCK, "a = call expression, b = caller params, c = body") \
    X(FILTERBLOCK, "a = filters, b = body") \
    X(WITH,      "a = list of SET, b = body") \
    X(BREAK,     "") \
    X(CONTINUE,  "") \
    X(INCLUDE,   "a = template expression; op bit 1 = ignore missing, bit 2 = without context") \
    X(IMPORT,    "a = template, val = alias; op bit 4 = with context") \
    X(FROMIMPORT,"a = template, b = list of (NAME val = name, a = alias NAME or NULL); op bit 4 = with context") \
    X(EXTENDS,   "a = template expression") \
    X(BLOCK,     "val = name, b = body; op bit 1 = scoped, bit 2 = required") \
    X(DO,        "a = expression") \
    X(AUTOESCAPE,"a = expression, b = body") \
    X(GENERATION,"b = body") \
    X(NSSET,     "a = namespace expression (NAME), val = attribute, b = value") \
    X(NSREF,     "a = namespace NAME, val = attribute: `ns.a` as an item of a set's target tuple") \
    X(TEMPLATE,  "b = body") \
    /* Ruby (ERB) constructs; everything else in ERB uses the shared kinds above */ \
    X(RMETHOD,   "Ruby call: a = receiver (NULL: a function), val = name, b = args (ARG/KWARG), c = RBLOCK") \
    X(RBLOCK,    "Ruby block: a = parameters (NAME list), b = body") \
    X(RRANGE,    "Ruby range: a = begin, b = end (NULL: endless); op = 1 when exclusive (...)") \
    X(RCASE,     "Ruby case: a = subject (or NULL), b = RWHEN list, c = else body") \
    X(RWHEN,     "a = values (list), b = body") \
    X(RIVAR,     "@name: val = \"@name\" (a variable of its own, distinct from the local `name`; until assigned it reads state key `name`, nil when missing)") \
    X(RREGEX,    "Ruby regex literal: val = pattern, op = TPL_RX_* options") \
    X(RSTMTS,    "b = statements; its value is the last one's ((a; b) and #{} bodies)") \
    X(RNEXT,     "next in a block: a = value or NULL") \
    X(RBREAK,    "break in a block: a = value or NULL") \
    X(RCONSTNAME,"a constant (Array, Hash, String, ...): val = its name") \
    X(RFOR,      "Ruby for loop: a = iterable, b = body, c = loop variables (NAME list; no scope of their own)") \
    X(RWHILE,    "Ruby while/until loop: a = condition, b = body; op bit 1: until, bit 2: begin ... end while (the body first)") \
    X(RBEGIN,    "Ruby begin/rescue/ensure: a = body, b = RRESCUE list, c = ensure body (also `x rescue y`)") \
    X(RDEF,      "Ruby def: val = method name, a = parameters (NAME: required; KWARG op 0: optional, a = default; KWARG op 1: keyword, a = default or NULL when required), b = body") \
    X(RRETURN,   "return in a def: a = value or NULL") \
    X(RSAFE,     "r&.m(args): a = r, b = the RMETHOD on the receiver NAME \"(safe)\" (r's value); c = its block, if any") \
    X(RDEFINED,  "defined?(e): a = e, not evaluated (what Ruby's defined? answers: \"local-variable\", \"method\", ..., nil)") \
    X(RRESCUE,   "a rescue clause: a = exception classes (RCONSTNAME list; none: StandardError), b = body, c = the => variable (NAME); op = 1: the begin's else") \
    X(RRETRY,    "retry in a rescue clause: the begin's body runs again")

typedef enum tpl_node_kind {
#define TPL_NK(k, doc) TPL_N_##k,
    TPL_NODE_KINDS(TPL_NK)
#undef TPL_NK
    TPL_N__COUNT
} tpl_node_kind;

/* Operators shared by BINOP/UNOP/CMPOP. */
#define TPL_OPERATORS(X) \
    X(ADD, "+") X(SUB, "-") X(MUL, "*") X(DIV, "/") X(FLOORDIV, "//") X(MOD, "%") X(POW, "**") \
    X(NEG, "-") X(POS, "+") X(NOT, "not") \
    X(EQ, "==") X(NE, "!=") X(LT, "<") X(LE, "<=") X(GT, ">") X(GE, ">=") X(IN, "in") X(NOTIN, "not in")

typedef enum tpl_operator {
#define TPL_OPX(k, s) TPL_AOP_##k,
    TPL_OPERATORS(TPL_OPX)
#undef TPL_OPX
} tpl_operator;

/* 64 bytes (issue 13 §1: the tree of a large template is most of its compile memory). d and e
 * share their room with val: only FOR and SLICE have them, and neither has a val. A walk over
 * every kind of node reads them through tpl_node_d / tpl_node_e (NULL for the other kinds). */
typedef struct tpl_node {
    uint16_t kind;
    uint16_t op;
    uint32_t off;            /* byte offset of the node in the source */
    struct tpl_node *a, *b, *c;
    struct tpl_node *next;   /* sibling in a list */
    struct tpl_node *tail;   /* in a list's head: its last node (O(1) append) */
    union {
        tpl_value val;       /* CONST value; names and texts as str (not in FOR and SLICE) */
        struct { struct tpl_node *d, *e; }; /* FOR and SLICE only */
    };
} tpl_node;

/* Whether nodes of `kind` have d and e (instead of val). */
static inline bool tpl_node_has_de(int kind) { return kind == TPL_N_FOR || kind == TPL_N_SLICE; }
/* n's d and e, NULL for the kinds without them (for walks over every kind). */
static inline tpl_node *tpl_node_d(const tpl_node *n) { return tpl_node_has_de(n->kind) ? n->d : NULL; }
static inline tpl_node *tpl_node_e(const tpl_node *n) { return tpl_node_has_de(n->kind) ? n->e : NULL; }

const char *tpl_node_kind_name(int kind);
const char *tpl_operator_name(int op);

/* Allocates a zeroed node in the arena (NULL on exhaustion). Inline: the parser makes one per
 * node (issue 21, compile time). */
static inline tpl_node *tpl_node_new(tpl_arena *a, int kind, uint32_t off)
{
    tpl_node *n = tpl_arena_alloc(a, sizeof *n);
    if (!n) return NULL;
    memset(n, 0, sizeof *n);
    n->kind = (uint16_t)kind;
    n->off = off;
    return n;
}
/* Appends `item` to the list starting at `head`; returns the new head. */
tpl_node *tpl_node_append(tpl_node *head, tpl_node *item);

#endif
