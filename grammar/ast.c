/* AST helpers: node allocation and the kind/operator name tables (from the X-macro lists). */
#include "ast.h"
#include <string.h>

static const char *const kind_names[] = {
#define TPL_NK(k, doc) #k,
    TPL_NODE_KINDS(TPL_NK)
#undef TPL_NK
};

static const char *const op_names[] = {
#define TPL_OPX(k, s) s,
    TPL_OPERATORS(TPL_OPX)
#undef TPL_OPX
};

const char *tpl_node_kind_name(int kind)
{
    return kind >= 0 && kind < TPL_N__COUNT ? kind_names[kind] : "?";
}

const char *tpl_operator_name(int op)
{
    return op >= 0 && op < (int)(sizeof op_names / sizeof op_names[0]) ? op_names[op] : "?";
}

tpl_node *tpl_node_append(tpl_node *head, tpl_node *item)
{
    if (!head) return item;
    if (!item) return head;
    tpl_node *t = head->tail ? head->tail : head;
    while (t->next) t = t->next;
    t->next = item;
    head->tail = item->tail ? item->tail : item;
    return head;
}
