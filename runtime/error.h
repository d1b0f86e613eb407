/* The error model inside the library (runtime/error.c): filling tpl_error records by kind
 * (include/tpl_errors.def), and the one out-of-memory report. */
#ifndef TPL_ERROR_H
#define TPL_ERROR_H

#include "../include/tpl.h"

/* The message format of a kind (tpl_errors.def; "" when its messages vary). Its arguments are
 * unsigned long long. */
const char *tpl_error_kind_format(tpl_error_kind kind);

/* Fill err (when not NULL; its previous strings are released) and return the kind's status.
 * Strings are malloc'd copies, released by tpl_error_clear.
 * _at: located at byte offset off of src[0..n) (line, column, source line; src NULL gives 1:1
 * with no source line), file name or "<template>". */
tpl_status tpl_error_set_at(tpl_error *err, tpl_error_kind kind, const char *name, const char *src, size_t n,
                            uint32_t off, const char *msg);
/* Unlocated, file name as given (may be NULL). */
tpl_status tpl_error_set(tpl_error *err, tpl_error_kind kind, const char *name, const char *msg);
/* An unlocated TPL_ERR_USAGE error (a NULL argument, a bad option), file name or "<template>". */
tpl_status tpl_error_usage(tpl_error *err, const char *name, const char *msg);
/* The one out-of-memory report of the library outside a render (tpl_vm_nomem inside one, which
 * ends here for the heap): TPL_EK_NOMEM, "out of memory". Returns TPL_ERR_NOMEM. */
tpl_status tpl_error_nomem(tpl_error *err, const char *name);

#endif
