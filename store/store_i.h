/* What store/po.c shares with store/store.c (internal to the store library; hidden). */
#ifndef TPL_STORE_I_H
#define TPL_STORE_I_H
#include "tpl_store.h"

#define STORE_HIDDEN __attribute__((visibility("hidden")))
/* Sets s's message (printf-style) and returns st. */
STORE_HIDDEN tpl_store_status tpl_store_i_fail(tpl_store *s, tpl_store_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A write transaction (serialised with every other writer of the store). */
STORE_HIDDEN tpl_store_status tpl_store_i_begin(tpl_store *s);
STORE_HIDDEN tpl_store_status tpl_store_i_commit(tpl_store *s);
/* Rolls back keeping the failure's message; returns st. */
STORE_HIDDEN tpl_store_status tpl_store_i_rollback(tpl_store *s, tpl_store_status st);

#define fail tpl_store_i_fail
#define begin tpl_store_i_begin
#define commit tpl_store_i_commit
#define rollback tpl_store_i_rollback
#endif
