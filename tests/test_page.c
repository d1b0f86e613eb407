/* Pages (issue 18, DESIGN.md §8) and the core reads they rest on: tpl_program_reads_located
 * (kinds and locations, also inside included templates and macros, kept by .tplb), call.claimed,
 * page folders (tests/page/: the static-block guarantee for each kind of read, bad page files),
 * and a call rendered step by step (changed and rendered flags, defaults overlay, framework
 * names, the slow path for states the scanner leaves to the parser, errors).
 *
 * usage: test_page TESTS_PAGE_DIR [EXAMPLE_PAGE_DIR]
 *                                            run every check; "N passed, N failed"
 *        test_page --steps DIR STEPS.json [CHANNEL [MEDIUM]]
 *                                            print each step (page text and block flags), the
 *                                            form of DIR/expected*.txt (tests/page_oracle.py
 *                                            checks those texts against the reference engines) */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "tpl.h"
#include "tpl_page.h"
#include "../page/page_json.h"

static int npass, nfail;

#define CHECK(cond, ...)                                                 \
    do {                                                                 \
        if (cond) npass++;                                               \
        else { nfail++; fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
               fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); }      \
    } while (0)

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) { free(s); s = NULL; }
    fclose(f);
    if (!s) return NULL;
    s[n] = 0;
    if (len) *len = (size_t)n;
    return s;
}

/* ------------------------------------------------------------------ a growing string */

typedef struct buf {
    char *s;
    size_t n, cap;
} buf;

static void bput(buf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        b->cap = (b->n + n + 1) * 2;
        b->s = realloc(b->s, b->cap);
        if (!b->s) abort();
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = 0;
}

static void bprintf(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bprintf(buf *b, const char *fmt, ...)
{
    char tmp[4096];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    bput(b, tmp, k < 0 ? 0 : (size_t)k < sizeof tmp ? (size_t)k : sizeof tmp - 1);
}

/* ------------------------------------------------------------------ reads located */

typedef struct mem_loader {
    const char *names[4];
    const char *srcs[4];
} mem_loader;

static char *mem_load(void *data, const char *name, size_t n, size_t *len)
{
    mem_loader *l = data;
    for (int i = 0; i < 4 && l->names[i]; i++)
        if (strlen(l->names[i]) == n && !memcmp(l->names[i], name, n)) {
            *len = strlen(l->srcs[i]);
            char *s = malloc(*len + 1);
            memcpy(s, l->srcs[i], *len + 1);
            return s;
        }
    return NULL;
}

/* The reads of p as "KIND NAME[.ATTR] FILE:LINE:COL; ..." */
static void reads_str(const tpl_program *p, buf *b)
{
    static const char *const kinds[] = { "state", "call", "func", "host", "self" };
    tpl_read rd[64];
    size_t n = tpl_program_reads_located(p, rd, 64);
    b->n = 0;
    bput(b, "", 0);
    for (size_t i = 0; i < n && i < 64; i++)
        bprintf(b, "%s%s %s%.*s%s%.*s %s:%u:%u", i ? "; " : "", kinds[rd[i].kind], rd[i].ivar ? "@" : "", (int)rd[i].len, rd[i].name,
                rd[i].attr ? "." : "", (int)rd[i].attr_len, rd[i].attr ? rd[i].attr : "", rd[i].file, rd[i].line,
                rd[i].column);
}

static tpl_program *compile(const char *name, const char *src, tpl_syntax syn, tpl_options *o)
{
    tpl_program *p = NULL;
    tpl_error err = { 0 };
    bool erb_self = o->erb_self; /* (the profile sets every option) */
    tpl_options_profile(o, syn, "pinecall");
    o->erb_self = erb_self;
    if (tpl_compile(name, src, strlen(src), o, &p, &err) != TPL_OK) {
        fprintf(stderr, "compile %s: %s\n", name, err.message);
        tpl_error_clear(&err);
        return NULL;
    }
    return p;
}

static void check_reads_o(const char *name, const char *src, tpl_syntax syn, mem_loader *ml, bool erb_self,
                          const char *want)
{
    tpl_options o = { 0 };
    o.erb_self = erb_self;
    o.loader = ml ? mem_load : NULL;
    o.loader_data = ml;
    tpl_program *p = compile(name, src, syn, &o);
    CHECK(p != NULL, "%s compiles", name);
    if (!p) return;
    buf b = { 0 };
    reads_str(p, &b);
    CHECK(!strcmp(b.s, want), "%s reads:\n  got  %s\n  want %s", name, b.s, want);
    /* a .tplb keeps them */
    void *bytes;
    size_t len;
    tpl_program *q = NULL;
    tpl_error err = { 0 };
    CHECK(tpl_program_save(p, 0, &bytes, &len) == TPL_OK && tpl_program_load(name, bytes, len, &q, &err) == TPL_OK,
          "%s round trip", name);
    if (q) {
        reads_str(q, &b);
        CHECK(!strcmp(b.s, want), "%s reads after .tplb:\n  got  %s\n  want %s", name, b.s, want);
        tpl_program_free(q);
    }
    /* a .tplb of the previous format is refused cleanly */
    if (len > 12) {
        ((unsigned char *)bytes)[8] = TPL_TPLB_VERSION - 1;
        CHECK(tpl_program_load(name, bytes, len, &q, &err) == TPL_ERR_CORRUPT && strstr(err.message, "format version"),
              "%s: old format refused", name);
        tpl_error_clear(&err);
    }
    free(bytes);
    free(b.s);
    tpl_program_free(p);
}

static void check_reads(const char *name, const char *src, tpl_syntax syn, mem_loader *ml, const char *want)
{
    check_reads_o(name, src, syn, ml, false, want);
}

static void test_reads_located(void)
{
    mem_loader ml = { { "inc.jinja", "m.jinja" },
                      { "a\n{% if x %}{{ stage }}{% endif %}\n",
                        "{% macro m() %}\n  {{ call.claimed }}{{ remembers('y') }}{% endmacro %}" } };
    check_reads("a.jinja",
                "{{ call.channel }}\n{% if call['medium'] == 'x' %}{{ patient.name }}{% endif %}"
                "{% include 'inc.jinja' %}{% from 'm.jinja' import m %}{{ m() }}\n{{ range(2) | join }}{{ call }}",
                TPL_SYNTAX_JINJA, &ml,
                "call call.channel a.jinja:1:4; call call.medium a.jinja:2:7; state patient a.jinja:2:34; "
                "state x inc.jinja:2:7; state stage inc.jinja:2:14; call call.claimed m.jinja:2:6; "
                "func remembers m.jinja:2:24; func range a.jinja:3:4; call call a.jinja:3:25");
    /* a local assigned before its use reads nothing; one assigned on a branch may read the state */
    check_reads("b.jinja", "{% set a = 1 %}{{ a }}{% if c %}{% set d = 2 %}{% endif %}{{ d }}", TPL_SYNTAX_JINJA, NULL,
                "state c b.jinja:1:29; state d b.jinja:1:62");
    check_reads("c.erb", "<%= call.channel %><%= call[:claimed] %>\n<% if remembers?('x') %><%= @stage %><%= foo %><% end %>",
                TPL_SYNTAX_ERB, NULL,
                "call call.channel c.erb:1:5; call call.claimed c.erb:1:24; func remembers? c.erb:2:7; "
                "state @stage c.erb:2:29; state foo c.erb:2:42");
    /* ERB with a self (Tpl::ERB): a call of self's method is a self read, not in the reads-set
     * (located by the span table); an @ivar read is marked as one */
    check_reads_o("s.erb", "<%= @a %>\n<%= helper(@b, 1) %><%= c %>", TPL_SYNTAX_ERB, NULL, true,
                  "state @a s.erb:1:5; state @b s.erb:2:12; self helper s.erb:2:5; state c s.erb:2:25");
    check_reads("d.fmt", "hi {name} {a.b}", TPL_SYNTAX_FMT, NULL, "state name d.fmt:1:4; state a d.fmt:1:11");
    /* columns count code points on a line with non-ASCII text (read from the table of line
     * starts, in and out of source order: a macro's body compiled where it is called) */
    check_reads("e.jinja",
                "\xc3\xa9{{ x }}\n\xc3\xb1\xc3\xbc {{ y }}\xc3\xa9 {{ z }}\n{{ w }}{% macro m() %}\xc3\xa9{{ v }}{% endmacro %}"
                "\n\xe2\x82\xac{{ m() }}{{ u }}",
                TPL_SYNTAX_JINJA, NULL,
                "state x e.jinja:1:5; state y e.jinja:2:7; state z e.jinja:2:16; state w e.jinja:3:4; "
                "state v e.jinja:3:27; state u e.jinja:4:14");
    /* host functions */
    static const tpl_host_func hf[] = { { "lookup", TPL_HOST_GLOBAL, NULL, NULL }, { "shout", TPL_HOST_FILTER, NULL, NULL } };
    tpl_options o = { 0 };
    tpl_options_profile(&o, TPL_SYNTAX_JINJA, "pinecall");
    o.host_funcs = hf;
    o.nhost_funcs = 2;
    tpl_program *p = NULL;
    tpl_error err = { 0 };
    const char *src = "{{ lookup(1) }}\n{{ 'a' | shout }}";
    CHECK(tpl_compile("h.jinja", src, strlen(src), &o, &p, &err) == TPL_OK, "host program compiles");
    if (p) {
        buf b = { 0 };
        reads_str(p, &b);
        CHECK(!strcmp(b.s, "host lookup h.jinja:1:4; host shout h.jinja:2:10"), "host reads: %s", b.s);
        free(b.s);
        tpl_program_free(p);
    }
}

static void test_claimed(void)
{
    tpl_options o = { 0 };
    tpl_program *p = compile("c.jinja", "{{ call.claimed }}|{{ call.channel }}", TPL_SYNTAX_JINJA, &o);
    tpl_render *r = tpl_render_new(NULL);
    const char *out;
    size_t n;
    CHECK(p && tpl_render_run(r, p, &out, &n) == TPL_OK && !strcmp(out, "None|phone"), "claimed None by default");
    CHECK(tpl_render_set_call_claimed(r, "A-17") == TPL_OK, "set claimed");
    CHECK(tpl_render_run(r, p, &out, &n) == TPL_OK && !strcmp(out, "A-17|phone"), "claimed set: %s", out);
    CHECK(tpl_render_set_call(r, "web", NULL) == TPL_OK, "set call");
    CHECK(tpl_render_run(r, p, &out, &n) == TPL_OK && !strcmp(out, "A-17|web"), "claimed kept by set_call: %s", out);
    char long_code[100];
    memset(long_code, 'x', sizeof long_code - 1);
    long_code[sizeof long_code - 1] = 0;
    CHECK(tpl_render_set_call_claimed(r, long_code) == TPL_ERR_USAGE, "too long claimed");
    CHECK(tpl_render_set_call_claimed(r, NULL) == TPL_OK && tpl_render_run(r, p, &out, &n) == TPL_OK &&
          !strcmp(out, "None|web"), "claimed back to None: %s", out);
    tpl_program_free(p);
    tpl_render_free(r);
}

/* ------------------------------------------------------------------ a call, step by step */

/* Runs the goldens of steps_json as a call of page pg and appends each step to out. Returns the
 * status of the first failing step (its error appended too). */
static tpl_status run_steps(const tpl_page *pg, const char *steps_json, const char *channel, const char *medium, buf *out)
{
    json_error_t je;
    json_t *steps = json_loads(steps_json, 0, &je);
    if (!steps || !json_is_array(steps)) { json_decref(steps); bprintf(out, "bad steps JSON\n"); return TPL_ERR_USAGE; }
    tpl_render *r = tpl_render_new(NULL);
    tpl_page_call *c = tpl_page_call_new(pg, r);
    tpl_page_call_set_channel(c, channel, medium);
    tpl_status st = TPL_OK;
    size_t i;
    json_t *step;
    json_array_foreach(steps, i, step) {
        json_t *mem = json_object_get(step, "memory");
        const char *facts[16];
        size_t lens[16], nf = 0;
        for (size_t k = 0; k < json_array_size(mem) && nf < 16; k++, nf++) {
            facts[nf] = json_string_value(json_array_get(mem, k));
            lens[nf] = json_string_length(json_array_get(mem, k));
        }
        tpl_page_call_set_facts(c, facts, lens, nf);
        json_t *claimed = json_object_get(step, "claimed"); /* test-only: set call.claimed */
        if (claimed) tpl_page_call_set_claimed(c, json_string_value(claimed));
        json_t *resumed = json_object_get(step, "resumed");
        if (resumed) tpl_page_call_set_resumed(c, json_is_true(resumed));
        json_t *ch = json_object_get(step, "channel");
        if (ch) tpl_page_call_set_channel(c, json_string_value(ch), NULL);
        char *state = json_dumps(json_object_get(step, "state"), JSON_COMPACT);
        json_t *raw = json_object_get(step, "raw_state"); /* test-only: the state's JSON text as is */
        const char *text = raw ? json_string_value(raw) : state;
        bprintf(out, "== step %zu\n", i + 1);
        st = tpl_page_call_render(c, text, strlen(text));
        free(state);
        if (st != TPL_OK) {
            char *e = tpl_error_format(tpl_page_call_error(c));
            bprintf(out, "error %d: %s", (int)st, e ? e : "?");
            free(e);
            continue;
        }
        char *page;
        size_t n;
        if (tpl_page_call_text(c, &page, &n) == TPL_OK) bput(out, page, n);
        free(page);
        for (size_t b = 0; b < tpl_page_block_count(pg); b++) {
            tpl_page_block_result br;
            tpl_page_call_block(c, b, &br);
            bprintf(out, "-- %s changed=%d rendered=%d bytes=%zu\n", br.name, br.changed, br.rendered, br.len);
        }
    }
    tpl_page_call_free(c);
    tpl_render_free(r);
    json_decref(steps);
    return st;
}

static char *error_text(const char *dir)
{
    tpl_page *pg = NULL;
    tpl_error err = { 0 };
    if (tpl_page_load_dir(dir, &pg, &err) == TPL_OK) { tpl_page_free(pg); return NULL; }
    char *e = tpl_error_format(&err);
    tpl_error_clear(&err);
    return e;
}

/* Every bad-* and static-* folder fails to load with the error in its expect.txt. */
static void test_bad_pages(const char *root)
{
    static const char *const dirs[] = {
        "bad-unknown-key", "bad-unknown-top", "bad-missing-template", "bad-static-after-dynamic", "bad-duplicate",
        "bad-json", "bad-template-and-text", "bad-region", "bad-outside",
        "static-field", "static-nested", "static-remembers", "static-resumed", "static-branch", "static-claimed",
        "static-call-whole", "static-include", "static-macro", "static-erb", "static-erb-remembers", "static-fmt",
    };
    char path[4096];
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", root, dirs[i]);
        char *got = error_text(path);
        snprintf(path, sizeof path, "%s/%s/expect.txt", root, dirs[i]);
        char *want = slurp(path, NULL);
        CHECK(got && want && !strcmp(got, want), "%s:\n--- got\n%s--- want\n%s", dirs[i], got ? got : "(loaded)\n",
              want ? want : "(no expect.txt)\n");
        free(got);
        free(want);
    }
}

static void test_steps(const char *root, const char *name, const char *steps, const char *channel, const char *expected)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", root, name);
    tpl_page *pg = NULL;
    tpl_error err = { 0 };
    CHECK(tpl_page_load_dir(path, &pg, &err) == TPL_OK, "%s loads: %s", name, err.message ? err.message : "");
    tpl_error_clear(&err);
    if (!pg) return;
    snprintf(path, sizeof path, "%s/%s/%s", root, name, steps);
    char *sj = slurp(path, NULL);
    snprintf(path, sizeof path, "%s/%s/%s", root, name, expected);
    char *want = slurp(path, NULL);
    buf got = { 0 };
    bput(&got, "", 0);
    if (sj) run_steps(pg, sj, channel, NULL, &got);
    CHECK(sj && want && !strcmp(got.s, want), "%s %s:\n--- got\n%s--- want\n%s", name, steps, got.s, want ? want : "(none)\n");
    free(got.s);
    free(sj);
    free(want);
    tpl_page_free(pg);
}

/* Blocks in memory: all three syntaxes, errors of the block list. */
static void test_in_memory(void)
{
    tpl_page_block_def defs[] = {
        { "identity", TPL_PAGE_STATIC, "identity.erb", "Medium: <%= call.medium %>\n", 0, NULL },
        { "tools", TPL_PAGE_STATIC, NULL, "Tools: none.", 0, NULL },
        { "view", TPL_PAGE_DYNAMIC, "view.fmt", "Stage {stage}, {patient[name]}.", 0, NULL },
        { "more", TPL_PAGE_DYNAMIC, "more.jinja", "{{ stage | upper }}{% if remembers('x') %}!{% endif %}", 0, NULL },
    };
    for (size_t i = 0; i < 4; i++) defs[i].len = strlen(defs[i].src);
    tpl_page *pg = NULL;
    tpl_error err = { 0 };
    const char *def = "{\"stage\": \"identify\", \"patient\": {\"name\": \"?\"}}";
    CHECK(tpl_page_new(defs, 4, NULL, def, strlen(def), NULL, NULL, &pg, &err) == TPL_OK, "in-memory page: %s",
          err.message ? err.message : "");
    tpl_error_clear(&err);
    if (pg) {
        const char *paths[8];
        size_t n = tpl_page_block_reads(pg, 3, paths, 8);
        CHECK(n == 2 && !strcmp(paths[0], "stage") && !strcmp(paths[1], "remembers"), "reads of 'more'");
        n = tpl_page_block_reads(pg, 0, paths, 8);
        CHECK(n == 1 && !strcmp(paths[0], "call.medium"), "reads of 'identity'");
        buf got = { 0 };
        bput(&got, "", 0);
        run_steps(pg,
                  "[{\"state\": {}},"
                  " {\"state\": {\"stage\": \"book\"}},"
                  " {\"state\": {\"stage\": \"book\"}, \"memory\": [\"x y\"]},"
                  " {\"state\": {\"stage\": \"book\", \"patient\": {\"name\": \"Ana\"}}, \"memory\": [\"x y\"]},"
                  " {\"raw_state\": \"{\\\"stage\\\": \\\"bo\\\\u006fk\\\", \\\"p\\\\u0061tient\\\": 1, \\\"patient\\\": {\\\"name\\\": \\\"Ana\\\"}}\", \"memory\": [\"x y\"]},"
                  " {\"raw_state\": \"{\\\"stage\\\": \\\"book\\\", \\\"patient\\\": {\\\"name\\\": \\\"Ana\\\"}}\", \"memory\": [\"x y\"]},"
                  " {\"raw_state\": \"{\\\"stage\\\": \", \"memory\": [\"x y\"]},"
                  " {\"raw_state\": \"[1]\"},"
                  " {\"state\": {\"stage\": \"book\", \"patient\": {\"name\": \"Ana\"}}, \"memory\": [\"x y\"], \"channel\": \"whatsapp\"}]",
                  "phone", NULL, &got);
        const char *want =
            "== step 1\n── identity (static) ──\nMedium: voice\n\n── tools (static) ──\nTools: none.\n\n── history ──\n\n"
            "── view (dynamic) ──\nStage identify, ?.\n\n── more (dynamic) ──\nIDENTIFY\n"
            "-- identity changed=1 rendered=1 bytes=13\n-- tools changed=1 rendered=0 bytes=12\n"
            "-- view changed=1 rendered=1 bytes=18\n-- more changed=1 rendered=1 bytes=8\n"
            "== step 2\n── identity (static) ──\nMedium: voice\n\n── tools (static) ──\nTools: none.\n\n── history ──\n\n"
            "── view (dynamic) ──\nStage book, ?.\n\n── more (dynamic) ──\nBOOK\n"
            "-- identity changed=0 rendered=0 bytes=13\n-- tools changed=0 rendered=0 bytes=12\n"
            "-- view changed=1 rendered=1 bytes=14\n-- more changed=1 rendered=1 bytes=4\n"
            "== step 3\n── identity (static) ──\nMedium: voice\n\n── tools (static) ──\nTools: none.\n\n── history ──\n\n"
            "── view (dynamic) ──\nStage book, ?.\n\n── more (dynamic) ──\nBOOK!\n"
            "-- identity changed=0 rendered=0 bytes=13\n-- tools changed=0 rendered=0 bytes=12\n"
            "-- view changed=0 rendered=0 bytes=14\n-- more changed=1 rendered=1 bytes=5\n"
            "== step 4\n── identity (static) ──\nMedium: voice\n\n── tools (static) ──\nTools: none.\n\n── history ──\n\n"
            "── view (dynamic) ──\nStage book, Ana.\n\n── more (dynamic) ──\nBOOK!\n"
            "-- identity changed=0 rendered=0 bytes=13\n-- tools changed=0 rendered=0 bytes=12\n"
            "-- view changed=1 rendered=1 bytes=16\n-- more changed=0 rendered=0 bytes=5\n"
            /* escapes: the slow path renders every dynamic block, same texts */
            "== step 5\n── identity (static) ──\nMedium: voice\n\n── tools (static) ──\nTools: none.\n\n── history ──\n\n"
            "── view (dynamic) ──\nStage book, Ana.\n\n── more (dynamic) ──\nBOOK!\n"
            "-- identity changed=0 rendered=0 bytes=13\n-- tools changed=0 rendered=0 bytes=12\n"
            "-- view changed=0 rendered=1 bytes=16\n-- more changed=0 rendered=1 bytes=5\n"
            /* after the slow path the values are unknown: rendered again */
            "== step 6\n── identity (static) ──\nMedium: voice\n\n── tools (static) ──\nTools: none.\n\n── history ──\n\n"
            "── view (dynamic) ──\nStage book, Ana.\n\n── more (dynamic) ──\nBOOK!\n"
            "-- identity changed=0 rendered=0 bytes=13\n-- tools changed=0 rendered=0 bytes=12\n"
            "-- view changed=0 rendered=1 bytes=16\n-- more changed=0 rendered=1 bytes=5\n"
            "== step 7\nerror 7: <template>:1:10: error: unexpected token near end of file\n"
            "== step 8\nerror 7: <template>: error: the state must be a JSON object\n"
            /* after an error: a new start, the channel changed: static blocks render again */
            "== step 9\n── identity (static) ──\nMedium: text\n\n── tools (static) ──\nTools: none.\n\n── history ──\n\n"
            "── view (dynamic) ──\nStage book, Ana.\n\n── more (dynamic) ──\nBOOK!\n"
            "-- identity changed=1 rendered=1 bytes=12\n-- tools changed=1 rendered=0 bytes=12\n"
            "-- view changed=1 rendered=1 bytes=16\n-- more changed=1 rendered=1 bytes=5\n";
        CHECK(!strcmp(got.s, want), "in-memory call:\n--- got\n%s--- want\n%s", got.s, want);
        free(got.s);
        tpl_page_free(pg);
    }
    /* errors of the block list */
    tpl_page_block_def dup[] = { { "a", TPL_PAGE_STATIC, NULL, "x", 1, NULL }, { "a", TPL_PAGE_DYNAMIC, NULL, "y", 1, NULL } };
    CHECK(tpl_page_new(dup, 2, NULL, NULL, 0, NULL, NULL, &pg, &err) == TPL_ERR_SYNTAX && !pg &&
          !strcmp(err.message, "duplicate block name 'a'"), "duplicate: %s", err.message);
    tpl_error_clear(&err);
    tpl_page_block_def order[] = { { "v", TPL_PAGE_DYNAMIC, NULL, "x", 1, NULL }, { "s", TPL_PAGE_STATIC, NULL, "y", 1, NULL } };
    CHECK(tpl_page_new(order, 2, NULL, NULL, 0, NULL, NULL, &pg, &err) == TPL_ERR_SYNTAX && !pg, "static after dynamic");
    tpl_error_clear(&err);
    tpl_page_block_def st[] = { { "s", TPL_PAGE_STATIC, "s.fmt", "{stage}", 7, NULL } };
    CHECK(tpl_page_new(st, 1, NULL, NULL, 0, NULL, NULL, &pg, &err) == TPL_ERR_SYNTAX && err.line == 1 &&
          err.column == 1 && !strcmp(err.file, "s.fmt") &&
          !strcmp(err.message, "static block 's' reads 'stage'; a static block may read only call.channel and call.medium"),
          "static fmt: %s", err.message);
    tpl_error_clear(&err);
    const char *bad = "[1]";
    CHECK(tpl_page_new(dup, 1, NULL, bad, 3, NULL, NULL, &pg, &err) == TPL_ERR_STATE && !pg, "defaults not an object");
    tpl_error_clear(&err);
}

/* The page's state scanner (page/page_json.c) may only take what the real parsers take: over
 * mutations of a few states, whenever pj_scan_object says 1, jansson (strict, no duplicate keys)
 * and tpl's state parser accept the text, with the same keys and equal values. */
static void test_scanner(void)
{
    static const char *const seeds[] = {
        "{\"stage\": \"schedule\", \"n\": -12, \"x\": 1.5e3, \"ok\": true, \"p\": null, \"l\": [1, {\"a\": \"\\u00e9\\n\"}]}",
        "{\"name\": \"Clínica\", \"big\": 123456789012345678, \"f\": 0.1, \"e\": [], \"o\": {}}",
        " { \"a\" : [ [ [ ] ] ] , \"b\" : \"\\\"q\\\\\" } ",
    };
    static const char alphabet[] = "{}[]\",:\\ \n0123456789-+.eEtrufalsn\x80\xc3\xa9\xed\xa0\xf4\x90u";
    uint64_t rng = 0x9e3779b97f4a7c15u;
    pj_entry *ents = NULL;
    size_t nents = 0, cap = 0;
    int taken = 0, bad = 0;
    tpl_render *r = tpl_render_new(NULL);
    for (int it = 0; it < 30000; it++) {
        char buf[512];
        const char *seed = seeds[it % 3];
        size_t n = strlen(seed);
        memcpy(buf, seed, n);
        for (int m = 0; m < 1 + it % 3; m++) {
            rng = rng * 6364136223846793005u + 1442695040888963407u;
            size_t at = (size_t)(rng >> 33) % (n ? n : 1);
            char ch = alphabet[(rng >> 20) % (sizeof alphabet - 1)];
            int op = (int)((rng >> 12) % 3);
            if (op == 0 && n) buf[at] = ch;
            else if (op == 1 && n + 1 < sizeof buf) { memmove(buf + at + 1, buf + at, n - at); buf[at] = ch; n++; }
            else if (n) { memmove(buf + at, buf + at + 1, n - at - 1); n--; }
        }
        int rc = pj_scan_object(buf, n, &ents, &nents, &cap);
        if (rc != 1) continue;
        taken++;
        json_error_t je;
        json_t *j = json_loadb(buf, n, JSON_REJECT_DUPLICATES, &je);
        bool ok = j && json_is_object(j) && json_object_size(j) == nents &&
                  tpl_render_set_state_json(r, buf, n) == TPL_OK;
        for (size_t i = 0; ok && i < nents; i++) {
            char key[256];
            snprintf(key, sizeof key, "%.*s", (int)ents[i].klen, ents[i].key);
            json_t *v = json_loadb(ents[i].val, ents[i].vlen, JSON_DECODE_ANY, &je);
            ok = v && json_object_get(j, key) && json_equal(v, json_object_get(j, key));
            json_decref(v);
        }
        json_decref(j);
        if (!ok && bad++ < 5) fprintf(stderr, "scanner took what a parser refuses: %.*s\n", (int)n, buf);
    }
    free(ents);
    tpl_render_free(r);
    CHECK(bad == 0 && taken > 1000, "state scanner: %d taken, %d wrongly", taken, bad);
}

/* NULL-ARGUMENT TEST: every TPL_API function of tpl_page.h, called with NULL objects and NULL
 * outputs (issue 13 §3; tests/api_null_check.py checks none is missing): statuses are
 * TPL_ERR_USAGE, queries answer 0/NULL, void functions do nothing, and nothing crashes. */
static void test_null_args(void)
{
    tpl_error err = { 0 };
    tpl_page *pg = (tpl_page *)&err;
    CHECK(tpl_page_load_dir(NULL, &pg, &err) == TPL_ERR_USAGE && pg == NULL && err.message &&
              strstr(err.message, "dir is NULL"), "load_dir(NULL dir)");
    tpl_error_clear(&err);
    CHECK(tpl_page_load_dir(".", NULL, &err) == TPL_ERR_USAGE && err.message && strstr(err.message, "out is NULL"),
          "load_dir(NULL out)");
    tpl_error_clear(&err);
    CHECK(tpl_page_load_dir(".", NULL, NULL) == TPL_ERR_USAGE, "load_dir(NULL out, NULL err)");
    CHECK(tpl_page_load_dir("", &pg, &err) == TPL_ERR_IO && pg == NULL && err.message &&
              strstr(err.message, "folder name is empty"), "load_dir(\"\") reads nothing (not /page.json)");
    tpl_error_clear(&err);
    CHECK(tpl_page_new(NULL, 1, NULL, NULL, 0, NULL, NULL, &pg, &err) == TPL_ERR_USAGE && pg == NULL,
          "page_new(NULL blocks)");
    tpl_error_clear(&err);
    CHECK(tpl_page_new(NULL, 0, NULL, NULL, 0, NULL, NULL, NULL, NULL) == TPL_ERR_USAGE, "page_new(NULL out)");
    tpl_page_free(NULL);
    CHECK(tpl_page_block_count(NULL) == 0, "block_count(NULL)");
    CHECK(tpl_page_block_name(NULL, 0) == NULL, "block_name(NULL)");
    CHECK(tpl_page_block_region(NULL, 0) == TPL_PAGE_STATIC, "block_region(NULL)");
    CHECK(tpl_page_block_reads(NULL, 0, NULL, 4) == 0, "block_reads(NULL)");
    CHECK(tpl_page_call_new(NULL, NULL) == NULL, "call_new(NULL)");
    tpl_page_call_free(NULL);
    tpl_page_call_reset(NULL);
    CHECK(tpl_page_call_set_channel(NULL, "web", NULL) == TPL_ERR_USAGE, "set_channel(NULL)");
    CHECK(tpl_page_call_set_claimed(NULL, "A") == TPL_ERR_USAGE, "set_claimed(NULL)");
    tpl_page_call_set_resumed(NULL, true);
    CHECK(tpl_page_call_set_facts(NULL, NULL, NULL, 0) == TPL_ERR_USAGE, "set_facts(NULL)");
    tpl_page_call_facts_changed(NULL);
    CHECK(tpl_page_call_render(NULL, "{}", 2) == TPL_ERR_USAGE, "call_render(NULL)");
    CHECK(tpl_page_call_error(NULL) == NULL, "call_error(NULL)");
    tpl_page_block_result res;
    CHECK(tpl_page_call_block(NULL, 0, &res) == TPL_ERR_USAGE, "call_block(NULL)");
    char *text = (char *)&err;
    size_t len = 7;
    CHECK(tpl_page_call_text(NULL, &text, &len) == TPL_ERR_USAGE && text == NULL && len == 0, "call_text(NULL)");
    CHECK(tpl_page_call_text(NULL, NULL, NULL) == TPL_ERR_USAGE, "call_text(NULL out)");

    /* A real page and call, with NULL outputs and arguments. */
    tpl_page_block_def def[] = { { .name = "view", .region = TPL_PAGE_DYNAMIC, .template_name = "view.jinja", .src = "{{ x }}", .len = 7 } };
    CHECK(tpl_page_new(def, 1, NULL, NULL, 0, NULL, NULL, &pg, &err) == TPL_OK, "page_new: %s", err.message ? err.message : "");
    tpl_error_clear(&err);
    if (!pg) return;
    CHECK(tpl_page_block_reads(pg, 0, NULL, 4) == 1, "block_reads(NULL paths) counts");
    tpl_render *r = tpl_render_new(NULL);
    CHECK(tpl_page_call_new(pg, NULL) == NULL, "call_new(NULL render)");
    tpl_page_call *c = r ? tpl_page_call_new(pg, r) : NULL;
    CHECK(c != NULL, "call_new");
    if (c) {
        CHECK(tpl_page_call_set_facts(c, NULL, NULL, 2) == TPL_ERR_USAGE, "set_facts(NULL facts)");
        CHECK(tpl_page_call_render(c, NULL, 5) == TPL_ERR_USAGE, "call_render(NULL state)");
        CHECK(tpl_page_call_render(c, "{\"x\": 1}", 8) == TPL_OK, "call_render");
        CHECK(tpl_page_call_block(c, 0, NULL) == TPL_ERR_USAGE, "call_block(NULL out)");
        CHECK(tpl_page_call_text(c, NULL, &len) == TPL_ERR_USAGE, "call_text(NULL out)");
    }
    tpl_page_call_free(c);
    tpl_render_free(r);
    tpl_page_free(pg);
}
/* NULL-ARGUMENT TEST END */

/* A fact the render context refuses (not UTF-8) leaves the call with no facts: setting the same
 * list again is refused again (it was taken as unchanged, TPL_OK, and the call kept the facts
 * before the refused one), and an empty list then answers remembers() from no facts. */
static void test_refused_fact(void)
{
    tpl_page_block_def defs[] = {
        { "v", TPL_PAGE_DYNAMIC, "v.jinja", "{{ remembers('good') }}", 0, NULL },
    };
    defs[0].len = strlen(defs[0].src);
    tpl_page *pg = NULL;
    tpl_error err = { 0 };
    CHECK(tpl_page_new(defs, 1, NULL, "{}", 2, NULL, NULL, &pg, &err) == TPL_OK, "refused fact: page");
    tpl_error_clear(&err);
    if (!pg) return;
    tpl_render *r = tpl_render_new(NULL);
    tpl_page_call *c = tpl_page_call_new(pg, r);
    const char *facts[] = { "good fact", "bad \xff fact" };
    size_t lens[] = { strlen(facts[0]), strlen(facts[1]) };
    for (int round = 0; round < 2; round++) {
        tpl_status st = tpl_page_call_set_facts(c, facts, lens, 2);
        const tpl_error *e = tpl_page_call_error(c);
        CHECK(st == TPL_ERR_VALUE && e && e->message && strstr(e->message, "not valid UTF-8"),
              "refused fact, set %d: status %d", round + 1, (int)st);
    }
    CHECK(tpl_page_call_set_facts(c, NULL, NULL, 0) == TPL_OK, "refused fact: no facts");
    tpl_page_block_result b = { 0 };
    CHECK(tpl_page_call_render(c, "{}", 2) == TPL_OK && tpl_page_call_block(c, 0, &b) == TPL_OK &&
          b.len == 5 && !memcmp(b.text, "False", 5), "refused fact: remembers() sees no fact: %.*s", (int)b.len,
          b.text ? b.text : "");
    /* an integer past 64 bits, which the render context takes and the page's merge (jansson)
     * does not: a state error naming where (it said "out of memory") */
    const char *big[] = { "{\"n\": 99999999999999999999}", "{\"s\": \"\\u0041\", \"n\": [99999999999999999999]}" };
    for (size_t k = 0; k < 2; k++) {
        tpl_status st = tpl_page_call_render(c, big[k], strlen(big[k]));
        const tpl_error *e = tpl_page_call_error(c);
        CHECK(st == TPL_ERR_STATE && e && e->message && strstr(e->message, "too big integer") &&
              !strstr(e->message, "out of memory"),
              "big integer state %zu: status %d: %s", k, (int)st, e && e->message ? e->message : "");
    }
    tpl_page_call_free(c);
    tpl_render_free(r);
    tpl_page_free(pg);
}

int main(int argc, char **argv)
{
    if (argc >= 4 && !strcmp(argv[1], "--steps")) {
        tpl_page *pg = NULL;
        tpl_error err = { 0 };
        if (tpl_page_load_dir(argv[2], &pg, &err) != TPL_OK) {
            char *e = tpl_error_format(&err);
            fputs(e, stderr);
            free(e);
            tpl_error_clear(&err);
            return 1;
        }
        char *sj = slurp(argv[3], NULL);
        buf out = { 0 };
        bput(&out, "", 0);
        tpl_status st = sj ? run_steps(pg, sj, argc > 4 ? argv[4] : NULL, argc > 5 ? argv[5] : NULL, &out) : TPL_ERR_IO;
        fputs(out.s, stdout);
        free(out.s);
        free(sj);
        tpl_page_free(pg);
        return st == TPL_OK ? 0 : 1;
    }
    if (argc < 2) {
        fprintf(stderr, "usage: test_page TESTS_PAGE_DIR | --steps DIR STEPS.json [CHANNEL [MEDIUM]]\n");
        return 2;
    }
    test_null_args();
    test_reads_located();
    test_claimed();
    test_scanner();
    test_in_memory();
    test_refused_fact();
    test_bad_pages(argv[1]);
    test_steps(argv[1], "three", "steps.json", "phone", "expected.txt");
    test_steps(argv[1], "three", "steps.json", "whatsapp", "expected-whatsapp.txt");
    test_steps(argv[1], "three", "steps-call.json", "web", "expected-call.txt");
    if (argc > 2) { /* examples/front-desk: a whole call on two channels */
        test_steps(argv[2], ".", "call.json", "phone", "call.expected.txt");
        test_steps(argv[2], ".", "call.json", "whatsapp", "call.expected-whatsapp.txt");
    }
    printf("%d passed, %d failed\n", npass, nfail);
    return nfail ? 1 : 0;
}
