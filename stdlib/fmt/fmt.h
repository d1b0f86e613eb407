/* What the files of stdlib/fmt/ share: Python's format-spec mini-language (spec.c), str.format
 * (str_format.c) and printf-style % (percent.c). Their entry points (tpl_format_value,
 * tpl_str_format, tpl_str_mod) are declared in stdlib/builtins.h for the other languages. */
#ifndef TPL_STDLIB_FMT_H
#define TPL_STDLIB_FMT_H

#include "../builtins.h"

/* The most digits after the point a float is formatted with ({:.Nf}, %.Nf): beyond is a limit
 * error (Python goes on; a prompt never needs it). */
#define TPL_MAX_FLOAT_PREC 1000

/* C's %#g of ad >= 0 with precision p (conv 'g' or 'G'), as Python and Ruby print it (percent.c). */
bool tpl_fmt_alt_g(tpl_sb *b, double ad, int64_t p, char conv);

#endif
