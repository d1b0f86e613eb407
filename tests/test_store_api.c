/* The prompt store keeps the NULL contract of tpl.h (issue 13 §3): every tpl_store.h function
 * given a NULL store, a NULL argument or a NULL output returns an error status (never
 * TPL_STORE_OK), answers "" / does nothing, and never crashes; the store stays usable after.
 * api_null_check.py checks that the NULL-argument section below calls every TPL_API function of
 * include/tpl_store.h. Usage: test_store_api (an SQLite store in a fresh temporary folder). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tpl_store.h"

static int passed, failed;

#define CHECK(cond, what)                                              \
    do {                                                               \
        if (cond) passed++;                                            \
        else { failed++; printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, what); } \
    } while (0)

/* A failing status: anything but TPL_STORE_OK. */
#define FAILS(call) CHECK((call) != TPL_STORE_OK, #call)

int main(void)
{
    char dir[] = "/tmp/tpl-store-api-XXXXXX";
    if (!mkdtemp(dir)) { perror("mkdtemp"); return 2; }
    char path[sizeof dir + 16];
    snprintf(path, sizeof path, "%s/store.db", dir);
    tpl_store *s = NULL;
    if (tpl_store_open(path, &s) != TPL_STORE_OK) {
        printf("cannot open %s: %s\n", path, tpl_store_errmsg(s));
        tpl_store_close(s);
        return 2;
    }
    tpl_store_new nw = { .name = "greet", .source = "Hi {name}", .source_len = 9, .syntax = TPL_SYNTAX_FMT };
    tpl_store_prompt *p = NULL;
    tpl_error err = { 0 };
    CHECK(tpl_store_create(s, &nw, &p, &err) == TPL_STORE_OK, "create greet");
    tpl_store_prompt_free(p);
    p = NULL;
    tpl_store_prompt *v = NULL;
    tpl_store_tr *trs = NULL;
    tpl_store_loaded *l = NULL;
    size_t n = 7;
    char *pf = NULL;
    const char *dicts[] = { "greet" };
    const char *null_dicts[] = { NULL };

    /* NULL-ARGUMENT TEST: */
    /* open/close/errmsg/backend */
    FAILS(tpl_store_open(path, NULL));
    tpl_store *s2 = NULL;
    FAILS(tpl_store_open(NULL, &s2));
    CHECK(s2 != NULL && strlen(tpl_store_errmsg(s2)) > 0, "open(NULL): a handle that says why");
    tpl_store_close(s2);
    tpl_store_close(NULL);
    CHECK(tpl_store_errmsg(NULL) != NULL, "errmsg(NULL)");
    CHECK(tpl_store_backend(NULL) != NULL && !*tpl_store_backend(NULL), "backend(NULL) is \"\"");
    CHECK(tpl_store_round_trips(NULL) == 0, "round_trips(NULL) is 0");
    /* rows */
    FAILS(tpl_store_create(NULL, &nw, &p, &err));
    FAILS(tpl_store_create(s, NULL, &p, &err));
    tpl_store_new bad = nw;
    bad.name = NULL;
    FAILS(tpl_store_create(s, &bad, &p, &err));
    bad = nw;
    bad.source = NULL;
    FAILS(tpl_store_create(s, &bad, &p, &err));
    bad = nw;
    bad.tr_keys = NULL;
    bad.ntr_keys = 2;
    FAILS(tpl_store_create(s, &bad, &p, &err));
    const char *null_keys[] = { NULL };
    bad.tr_keys = null_keys;
    bad.ntr_keys = 1;
    FAILS(tpl_store_create(s, &bad, &p, &err));
    CHECK(p == NULL, "create failed: *out NULL");
    FAILS(tpl_store_get(NULL, "greet", &p));
    FAILS(tpl_store_get(s, NULL, &p));
    FAILS(tpl_store_get(s, "greet", NULL));
    tpl_store_prompt_free(NULL);
    FAILS(tpl_store_list(NULL, NULL, &v, &n));
    FAILS(tpl_store_list(s, NULL, NULL, &n));
    FAILS(tpl_store_list(s, NULL, &v, NULL));
    FAILS(tpl_store_versions(NULL, "greet", true, &v, &n));
    FAILS(tpl_store_versions(s, NULL, true, &v, &n));
    FAILS(tpl_store_versions(s, "greet", true, NULL, &n));
    FAILS(tpl_store_versions(s, "greet", true, &v, NULL));
    tpl_store_prompts_free(NULL, 3);
    FAILS(tpl_store_remove(NULL, "greet"));
    FAILS(tpl_store_remove(s, NULL));
    /* translation rows */
    FAILS(tpl_store_tr_set(NULL, "greet", "de", "Hi", "Hallo", NULL, NULL, 0));
    FAILS(tpl_store_tr_set(s, NULL, "de", "Hi", "Hallo", NULL, NULL, 0));
    FAILS(tpl_store_tr_set(s, "greet", NULL, "Hi", "Hallo", NULL, NULL, 0));
    FAILS(tpl_store_tr_set(s, "greet", "de", NULL, "Hallo", NULL, NULL, 0));
    FAILS(tpl_store_tr_set(s, "greet", "de", "Hi", NULL, NULL, NULL, 0));
    FAILS(tpl_store_tr_set(s, "greet", "de", "Hi", "Hallo", "His", NULL, 2));
    FAILS(tpl_store_tr_set(s, "greet", "de", "Hi", "Hallo", "His", null_dicts, 1));
    FAILS(tpl_store_prompt_tr_set(NULL, "greet", NULL, "de", "Hi", "Hallo"));
    FAILS(tpl_store_prompt_tr_set(s, NULL, NULL, "de", "Hi", "Hallo"));
    FAILS(tpl_store_prompt_tr_set(s, "greet", NULL, NULL, "Hi", "Hallo"));
    FAILS(tpl_store_prompt_tr_set(s, "greet", NULL, "de", NULL, "Hallo"));
    FAILS(tpl_store_prompt_tr_set(s, "greet", NULL, "de", "Hi", NULL));
    FAILS(tpl_store_prompt_tr_set(s, "no.such.prompt", NULL, "de", "Hi", "Hallo"));
    tpl_store_pot_entry ent = { NULL, "Hi", NULL, NULL, 0, false };
    size_t added = 9;
    FAILS(tpl_store_tr_add_untranslated(NULL, "greet", "de", &ent, 1, &added));
    CHECK(added == 0, "add_untranslated failed: *added 0");
    FAILS(tpl_store_tr_add_untranslated(s, NULL, "de", &ent, 1, &added));
    FAILS(tpl_store_tr_add_untranslated(s, "greet", NULL, &ent, 1, &added));
    FAILS(tpl_store_tr_add_untranslated(s, "greet", "de", NULL, 1, &added));
    CHECK(tpl_store_tr_add_untranslated(s, "greet", "de", NULL, 0, NULL) == TPL_STORE_OK, "add_untranslated of nothing");
    tpl_store_pot_entry nullid = { NULL, NULL, NULL, NULL, 0, false };
    CHECK(tpl_store_tr_add_untranslated(s, "greet", "de", &nullid, 1, &added) == TPL_STORE_OK && added == 0,
          "add_untranslated skips a NULL msgid");
    FAILS(tpl_store_tr_delete(NULL, "greet", "de", "Hi"));
    FAILS(tpl_store_tr_delete(s, NULL, "de", "Hi"));
    FAILS(tpl_store_tr_delete(s, "greet", NULL, "Hi"));
    FAILS(tpl_store_tr_delete(s, "greet", "de", NULL));
    FAILS(tpl_store_tr_list(NULL, dicts, 1, "de", &trs, &n));
    FAILS(tpl_store_tr_list(s, NULL, 1, "de", &trs, &n));
    FAILS(tpl_store_tr_list(s, null_dicts, 1, "de", &trs, &n));
    FAILS(tpl_store_tr_list(s, dicts, 1, "de", NULL, &n));
    FAILS(tpl_store_tr_list(s, dicts, 1, "de", &trs, NULL));
    tpl_store_trs_free(NULL, 4);
    FAILS(tpl_store_plural_forms(NULL, "greet", "de", &pf));
    FAILS(tpl_store_plural_forms(s, NULL, "de", &pf));
    FAILS(tpl_store_plural_forms(s, "greet", NULL, &pf));
    FAILS(tpl_store_plural_forms(s, "greet", "de", NULL));
    FAILS(tpl_store_set_plural_forms(NULL, "greet", "de", "nplurals=2; plural=(n != 1);"));
    FAILS(tpl_store_set_plural_forms(s, NULL, "de", "nplurals=2; plural=(n != 1);"));
    FAILS(tpl_store_set_plural_forms(s, "greet", NULL, "nplurals=2; plural=(n != 1);"));
    FAILS(tpl_store_bind(NULL, "greet", "common"));
    FAILS(tpl_store_bind(s, NULL, "common"));
    FAILS(tpl_store_bind(s, "greet", NULL));
    FAILS(tpl_store_unbind(NULL, "greet", "common"));
    FAILS(tpl_store_unbind(s, NULL, "common"));
    FAILS(tpl_store_unbind(s, "greet", NULL));
    /* loading and applying */
    FAILS(tpl_store_load(NULL, "greet", &l, &err));
    FAILS(tpl_store_load(s, NULL, &l, &err));
    FAILS(tpl_store_load(s, "greet", NULL, &err));
    tpl_store_loaded_free(NULL);
    CHECK(tpl_store_apply(NULL, NULL, NULL, NULL) != TPL_OK, "apply(NULL, NULL)");
    CHECK(tpl_store_loaded_json(NULL) == TPL_STORE_INVALID, "loaded_json(NULL)");
    /* PO files */
    FAILS(tpl_store_po_export(NULL, dicts, 1, "de", "/dev/null", &n));
    FAILS(tpl_store_po_export(s, NULL, 1, "de", "/dev/null", &n));
    FAILS(tpl_store_po_export(s, null_dicts, 1, "de", "/dev/null", &n));
    FAILS(tpl_store_po_export(s, dicts, 1, NULL, "/dev/null", &n));
    FAILS(tpl_store_po_export(s, dicts, 1, "de", NULL, &n));
    FAILS(tpl_store_po_import(NULL, "/dev/null", "greet", &n));
    FAILS(tpl_store_po_import(s, NULL, "greet", &n));
    char msg[128];
    FAILS(tpl_store_pot_write(NULL, NULL, 0, msg, sizeof msg));
    CHECK(msg[0] != 0, "pot_write(NULL path) says why");
    FAILS(tpl_store_pot_write("/dev/null", NULL, 2, NULL, 0));
    /* NULL-ARGUMENT TEST END */

    /* the store still works, and the failed calls changed nothing */
    CHECK(tpl_store_get(s, "greet", &p) == TPL_STORE_OK && p && p->version == 1, "get greet after the NULL calls");
    tpl_store_prompt_free(p);
    CHECK(tpl_store_list(s, NULL, &v, &n) == TPL_STORE_OK && n == 1, "one prompt listed");
    tpl_store_prompts_free(v, n);
    const char *forms[] = { "une pomme", "des pommes" };
    CHECK(tpl_store_tr_set(s, "greet", "fr", "Hi", "Salut", NULL, NULL, 0) == TPL_STORE_OK &&
          tpl_store_tr_set(s, "greet", "fr", "apple", "", "apples", forms, 2) == TPL_STORE_OK &&
          tpl_store_tr_set(s, "greet", "de", "Hi", "", NULL, NULL, 0) == TPL_STORE_OK, "tr rows");
    CHECK(tpl_store_load(s, "greet", &l, &err) == TPL_STORE_OK, "load greet");
    /* the catalogs are tpl_catalogs; their JSON only on request (an untranslated row left out) */
    CHECK(l && l->ncatalogs == 1 && l->tr_catalogs && l->tr_catalogs[0] && !l->catalogs, "loaded catalogs");
    CHECK(l && tpl_store_loaded_json(l) == TPL_STORE_OK && tpl_store_loaded_json(l) == TPL_STORE_OK && l->catalogs &&
          strcmp(l->catalogs[0], "{\"fr\":{\"Hi\":\"Salut\",\"apple\":[\"une pomme\",\"des pommes\"]}}") == 0 &&
          l->catalog_lens[0] == strlen(l->catalogs[0]), "loaded_json");
    tpl_render *r = l ? tpl_render_new(NULL) : NULL;
    CHECK(r && tpl_store_apply(l, NULL, NULL, NULL) != TPL_OK, "apply(l, NULL render)");
    CHECK(r && tpl_store_apply(l, r, NULL, NULL) == TPL_OK, "apply(l, r)");
    {
        tpl_error ce = { 0 };
        tpl_program *tp = NULL;
        const char *out;
        size_t on;
        const char *src = "{{ tr('Hi') }} {{ ngettext('apple', 'apples', 3) }}";
        CHECK(tpl_compile("t.jinja", src, strlen(src), NULL, &tp, &ce) == TPL_OK &&
              tpl_store_apply(l, r, "fr", NULL) == TPL_OK && tpl_render_set_state_json(r, "{}", 2) == TPL_OK &&
              tpl_render_run(r, tp, &out, &on) == TPL_OK && strcmp(out, "Salut des pommes") == 0, "apply fr");
        tpl_program_free(tp);
        tpl_error_clear(&ce);
    }
    tpl_render_free(r);
    tpl_store_loaded_free(l);
    {
        /* texts past TPL_STORE_MAX_TEXT are refused before any work (a 100 MB prompt took 20 s to
         * store and as long to render) */
        size_t big = TPL_STORE_MAX_TEXT + 1;
        char *text = malloc(big + 1);
        if (text) {
            memset(text, 'a', big);
            text[big] = 0;
            tpl_store_new huge = { .name = "huge", .source = text, .source_len = big, .syntax = TPL_SYNTAX_FMT };
            tpl_store_prompt *hp = NULL;
            CHECK(tpl_store_create(s, &huge, &hp, NULL) == TPL_STORE_INVALID && !hp &&
                  strstr(tpl_store_errmsg(s), "the source of 'huge' is 8388609 bytes; the store takes at most 8388608"),
                  "create of a source past TPL_STORE_MAX_TEXT");
            CHECK(tpl_store_get(s, "huge", &hp) == TPL_STORE_NOT_FOUND, "nothing stored");
            CHECK(tpl_store_tr_set(s, "greet", "de", "Hi", text, NULL, NULL, 0) == TPL_STORE_INVALID &&
                  strstr(tpl_store_errmsg(s), "target text is 8388609 bytes"), "tr_set of a target past the limit");
            CHECK(tpl_store_tr_set(s, "greet", "de", text, "x", NULL, NULL, 0) == TPL_STORE_INVALID,
                  "tr_set of a source past the limit");
            free(text);
        }
    }
    tpl_error_clear(&err);
    tpl_store_close(s);
    unlink(path);
    char wal[sizeof path + 8];
    snprintf(wal, sizeof wal, "%s-wal", path);
    unlink(wal);
    snprintf(wal, sizeof wal, "%s-shm", path);
    unlink(wal);
    rmdir(dir);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
