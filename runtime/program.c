/* The program representation's own functions, which the loader (serialize.c), the verifier and
 * the VM use: the opcode table, name resolution against the library, spans, freeing. (Compiling
 * is compiler/program.c's.) */
#include <stdlib.h>
#include "program.h"
#include "library.h"

const tpl_opinfo tpl_opinfo_table[TPL_OP__COUNT] = {
#define TPL_OP(name, extra, fmt, pops, pushes, doc) { #name, extra, fmt, pops, pushes, doc },
#include "opcodes.def"
#undef TPL_OP
};

void tpl_name_resolve_hashed(tpl_name *nm, uint64_t hash)
{
    nm->hash = hash;
    tpl_stdlib.ids_for(nm->s.u.s, nm->s.len, &nm->global, nm->bk);
    nm->resolved = true;
}

void tpl_name_resolve(tpl_name *nm)
{
    tpl_name_resolve_hashed(nm, tpl_hash_str(nm->s.u.s, nm->s.len));
}

void tpl_program_span(const tpl_program *p, uint32_t pc, uint32_t *line, uint32_t *col)
{
    *line = *col = 0;
    size_t lo = 0, hi = p->nspans;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (p->spans[mid].pc <= pc) lo = mid + 1;
        else hi = mid;
    }
    if (lo == 0) return;
    *line = p->spans[lo - 1].line;
    *col = p->spans[lo - 1].col;
}

void tpl_program_free(tpl_program *p)
{
    if (!p) return;
    tpl_arena_free(&p->arena);
    if (!p->static_data) {
        free(p->name);
        free(p->source);
    }
    free(p);
}
