/* Translation (tr) and format-string prompts: catalogs, language, tr_keys (DESIGN.md §3).
 *
 * A render context owns one tpl_tr_state (created on first use, freed with the render). Catalogs
 * are JSON objects {"main_lang": "en", "zz": {"source": "target", ...}, ...}; the first is the
 * prompt's own, the others are a fallback chain. Pattern rows ("Hello, {name}!") are split into
 * literals and placeholder names once, when the catalog is added. */
#ifndef TPL_TR_H
#define TPL_TR_H

#include "../../runtime/vm.h"

typedef struct tpl_tr_state tpl_tr_state;

/* The render's translation state (made by the first tpl_render_add_catalog_json, set_lang or
 * add_tr_key; owned by the render's prompt state, state.c), or NULL when none was set. */
tpl_tr_state *tpl_prompt_tr(const tpl_vm *vm);

/* Creates an empty state (NULL on allocation failure). */
tpl_tr_state *tpl_tr_new(void);
/* Frees the state and everything it owns (NULL is a no-op). */
void tpl_tr_free(tpl_tr_state *t);
/* Adds a catalog parsed from JSON text (borrowed). Returns TPL_OK, TPL_ERR_STATE when the JSON is
 * invalid or not an object (line/column of the JSON error in *line and *col, message in msg), or
 * TPL_ERR_NOMEM. */
tpl_status tpl_tr_add_catalog_json(tpl_tr_state *t, const char *json, size_t len, char *msg, size_t msgsize,
                                   uint32_t *line, uint32_t *col);
/* Appends a finished tpl_catalog (borrowed: it must outlive its use by t) to the lookup order;
 * false on allocation failure. */
bool tpl_tr_add_catalog(tpl_tr_state *t, const tpl_catalog *c);
/* Whether tpl_catalog_finish has run on c. */
bool tpl_tr_catalog_finished(const tpl_catalog *c);
/* Drops every catalog. */
void tpl_tr_clear_catalogs(tpl_tr_state *t);
/* Sets the render language (NULL or "" = none). Copied. false on allocation failure. */
bool tpl_tr_set_lang(tpl_tr_state *t, const char *lang, size_t len);
/* Adds a tr_keys field name (fmt prompts: its value is translated before formatting). */
bool tpl_tr_add_key(tpl_tr_state *t, const char *name, size_t len);
void tpl_tr_clear_keys(tpl_tr_state *t);

/* tr(text, lang), the oracle's Translator: text must be a string; lang a string or unset/none (= the
 * render language). The result is an exact row's target as it is (any JSON value: a list of plural
 * forms prints as a list), a pattern row's target filled, or text itself. A pattern row whose target
 * is no string fails as the oracle's fill does (Python's TypeError, Ruby's NoMethodError). */
int tpl_tr_value(tpl_vm *vm, tpl_value text, tpl_value lang, tpl_value *out);
/* gettext's tr (jinja2.ext.i18n): tpl_tr_value, then a list target gives its first form (an empty
 * list: IndexError), and any other non-string its str(). */
int tpl_tr_text(tpl_vm *vm, tpl_value text, tpl_value lang, tpl_value *out);

/* The start of a fmt render: builds the field map (the state, with the tr_keys fields translated)
 * into *fields and, when the template string translates to a different string, formats that
 * string against the fields into *translated (else *translated is unset). */
int tpl_fmt_begin(tpl_vm *vm, tpl_value source, tpl_value *fields, tpl_value *translated);

/* Format-string field access as Python's str.format does it (errors are Python's):
 * obj[key] (key an int or str constant), getattr(obj, name), and the !s !r !a conversions. */
int tpl_fmt_item(tpl_vm *vm, tpl_value obj, tpl_value key, tpl_value *out);
int tpl_fmt_attr(tpl_vm *vm, tpl_value obj, tpl_value name, tpl_value *out);
int tpl_fmt_conv(tpl_vm *vm, tpl_value v, int conv, tpl_value *out);

#endif
