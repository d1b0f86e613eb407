/* The error model inside the library (runtime/error.c): filling tpl_error records by kind
 * (include/tpl_errors.def), and the one out-of-memory report. */
#ifndef TPL_ERROR_H
#define TPL_ERROR_H

#include "../include/tpl.h"

/* The message format of a kind (tpl_errors.def; "" when its messages vary). Its arguments are
 * unsigned long long. */
const char *tpl_error_kind_format(tpl_error_kind kind);

/* The first kind whose exception for `syntax` (tpl_error_exception) is name[0..n), or
 * TPL_EK_NONE. */
tpl_error_kind tpl_error_kind_of_exception(tpl_syntax syntax, const char *name, size_t n);
/* The kind an error message of `syntax` names: tpl's ERB messages end with the class Ruby
 * raises, as Ruby prints it ("key not found: :b (KeyError)"), and that class's kind (the first
 * tpl_errors.def row whose Ruby exception it is) is the error's; dflt for any other message. */
tpl_error_kind tpl_error_kind_of_message(tpl_syntax syntax, const char *msg, size_t n, tpl_error_kind dflt);
/* The kind of the error a FAIL instruction raises with message msg[0..n) in a program of
 * `syntax`: an ERB message ends with the class Ruby raises, as Ruby prints it ("undefined
 * method `f' for main:Object (NoMethodError)"), whose kind it is; any other (Jinja's unknown
 * filter or test in a branch, required block, extended twice) is Jinja2's
 * TemplateRuntimeError, TPL_EK_RUNTIME. */
tpl_error_kind tpl_fail_kind(tpl_syntax syntax, const char *msg, size_t n);

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

/* A source line for tpl_error.source_line (a C string): src[0..n) copied to dst with each NUL byte
 * written as U+2400 SYMBOL FOR NULL (one code point for one, so the caret's column still counts
 * right; a NUL would end the string). dst NULL: only the length is computed. Returns the length of
 * the copy (n + 2 per NUL byte); dst needs that plus 1 (the copy is NUL-terminated). */
size_t tpl_error_line_copy(char *dst, const char *src, size_t n);

#endif
