/* Hostile templates (issue 13 §1): work the render limits must bound. Each case either gives
 * the reference engine's answer or ends with a located TPL_ERR_LIMIT error; either way within
 * MAX_CPU seconds of CPU time (clock(), so a busy machine does not make it flaky) under small
 * limits. Before the fixes each of these ran for hours (values of shared structure: 2^60
 * elements in 60 instructions) or grew without bound.
 * Prints "N passed, N failed" and each case's CPU time; exit status 1 when anything failed. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pthread.h>
#include <sys/resource.h>
#include "tpl.h"

#define MAX_CPU 2.0
/* A bound on work that is linear but large in a sanitized tree (ASan/TSan run it 3-4x slower:
 * lint's 32 MiB of retried compiles take 0.6 s plain, 2.2 s under ASan); what it guards against
 * (a retry per error over the whole source) took 4.9 s plain, ~20 s there. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif
#define MAX_CPU_LARGE (SANITIZED ? 4 * MAX_CPU : MAX_CPU)

static int passed, failed;

/* prefix, then body n times, then suffix: a malloc'd string. */
static char *rep(const char *prefix, const char *body, int n, const char *suffix)
{
    size_t lp = strlen(prefix), lb = strlen(body), ls = strlen(suffix);
    char *s = malloc(lp + lb * (size_t)n + ls + 1);
    if (!s) abort();
    memcpy(s, prefix, lp);
    for (int i = 0; i < n; i++) memcpy(s + lp + lb * (size_t)i, body, lb);
    memcpy(s + lp + lb * (size_t)n, suffix, ls + 1);
    return s;
}

/* Renders src (owned; freed here) under lim. want_status 0: the output must be want; else
 * the status must be want_status and the message must contain want, located at a line. */
static int nfacts; /* facts every render of expect() is given: "fact number I about nothing" */
static const char *catalog; /* when set, every render of expect() gets this catalog and lang "de" */

static void expect(const char *name, tpl_syntax syn, char *src, tpl_limits lim, const char *state,
                   int want_status, const char *want)
{
    tpl_options o;
    memset(&o, 0, sizeof o);
    o.syntax = syn;
    tpl_program *p = NULL;
    tpl_error cerr;
    memset(&cerr, 0, sizeof cerr);
    clock_t t0 = clock();
    bool ok = true;
    char why[512] = "";
    if (tpl_compile(name, src, strlen(src), &o, &p, &cerr) != TPL_OK) {
        snprintf(why, sizeof why, "compile: %s", cerr.message ? cerr.message : "?");
        tpl_error_clear(&cerr);
        ok = false;
    }
    tpl_render *r = ok ? tpl_render_new(&lim) : NULL;
    if (ok && state && tpl_render_set_state_json(r, state, strlen(state)) != TPL_OK) {
        snprintf(why, sizeof why, "state: %s", tpl_render_error(r)->message);
        ok = false;
    }
    if (ok && catalog && (tpl_render_add_catalog_json(r, catalog, strlen(catalog)) != TPL_OK ||
                          tpl_render_set_lang(r, "de") != TPL_OK)) {
        snprintf(why, sizeof why, "catalog: %s", tpl_render_error(r)->message);
        ok = false;
    }
    for (int i = 0; ok && i < nfacts; i++) {
        char f[64];
        snprintf(f, sizeof f, "fact number %d about nothing", i);
        ok = tpl_render_add_fact(r, f, strlen(f)) == TPL_OK;
    }
    if (ok) {
        const char *out = NULL;
        size_t n = 0;
        tpl_status st = tpl_render_run(r, p, &out, &n);
        const tpl_error *e = tpl_render_error(r);
        if (want_status == 0) {
            if (st != TPL_OK) snprintf(why, sizeof why, "status %d: %s", (int)st, e->message), ok = false;
            else if (n != strlen(want) || memcmp(out, want, n) != 0)
                snprintf(why, sizeof why, "output %.*s", (int)(n < 200 ? n : 200), out), ok = false;
        } else if ((int)st != want_status || !strstr(e->message, want) || e->line == 0) {
            snprintf(why, sizeof why, "status %d at line %u: %s", (int)st, e->line,
                     st == TPL_OK ? "(rendered)" : e->message);
            ok = false;
        }
    }
    double cpu = (double)(clock() - t0) / CLOCKS_PER_SEC;
    if (ok && cpu > MAX_CPU) snprintf(why, sizeof why, "took %.2f s of CPU", cpu), ok = false;
    printf("%-28s %6.3f s  %s\n", name, cpu, ok ? "ok" : "FAIL");
    if (ok) passed++;
    else failed++, printf("  want: %.200s\n  got:  %s\n", want, why);
    if (r) tpl_render_free(r);
    tpl_program_free(p);
    free(src);
}

#define J TPL_SYNTAX_JINJA
#define E TPL_SYNTAX_ERB
#define FUEL "fuel exhausted"

/* Values of shared structure: x = [x, x] 60 times is 2^60 elements. Every walk over a value
 * charges the fuel per element (runtime/value.h, tpl_fuel_charge). */
static void test_shared_structure(void)
{
    tpl_limits lim = { .fuel = 2000000, .max_memory = 64 << 20 };
    const char *jp = "{% set ns = namespace(x=1, y=1) -%}\n";
    const char *jb = "{% set ns.x = [ns.x, ns.x] %}{% set ns.y = [ns.y, ns.y] -%}\n";
    static const struct { const char *name, *tail; } jc[] = {
        { "jinja print", "{{ ns.x }}" },
        { "jinja print namespace", "{{ ns }}" },
        { "jinja string", "{{ ns.x|string|length }}" },
        { "jinja tojson", "{{ ns.x|tojson|length }}" },
        { "jinja pprint", "{{ ns.x|pprint|length }}" },
        { "jinja join", "{{ ns.x|join|length }}" },
        { "jinja format", "{{ '%s'|format(ns.x)|length }}" },
        { "jinja bullet_list", "{{ bullet_list(ns.x)|length }}" },
        { "jinja ==", "{{ ns.x == ns.y }}" },
        { "jinja in", "{{ ns.x in [ns.y] }}" },
        { "jinja index", "{{ [ns.y].index(ns.x) }}" },
        { "jinja sort", "{{ [ns.x, ns.y]|sort|length }}" },
        { "jinja is eq", "{{ ns.x is eq(ns.y) }}" },
    };
    for (size_t i = 0; i < sizeof jc / sizeof *jc; i++)
        expect(jc[i].name, J, rep(jp, jb, 60, jc[i].tail), lim, NULL, TPL_ERR_LIMIT, FUEL);
    /* identical (not merely equal) values compare at once, as in Python */
    expect("jinja == identical", J, rep(jp, jb, 60, "{{ ns.x == ns.x }}"), lim, NULL, 0, "True");

    const char *ep = "<% x = 1; y = 1 -%>\n";
    const char *eb = "<% x = [x, x]; y = [y, y] -%>\n";
    static const struct { const char *name, *tail; } ec[] = {
        { "erb to_s", "<%= x %>" },
        { "erb inspect", "<%= x.inspect.size %>" },
        { "erb join", "<%= x.join.size %>" },
        { "erb flatten", "<%= x.flatten.size %>" },
        { "erb ==", "<%= x == y %>" },
        { "erb <=>", "<%= x <=> y %>" },
        { "erb include?", "<%= [x].include?(y) %>" },
        { "erb sort", "<%= [x, y].sort.size %>" },
        { "erb uniq", "<%= [x, y].uniq.size %>" },
        { "erb &", "<%= ([x] & [y]).size %>" },
        { "erb -", "<%= ([x] - [y]).size %>" },
        { "erb |", "<%= ([x] | [y]).size %>" },
        { "erb hash keys", "<%= {x => 1, y => 2}.size %>" },
        { "erb eql?", "<%= x.eql?(y) %>" },
    };
    for (size_t i = 0; i < sizeof ec / sizeof *ec; i++)
        expect(ec[i].name, E, rep(ep, eb, 60, ec[i].tail), lim, NULL, TPL_ERR_LIMIT, FUEL);
    expect("erb == identical", E, rep(ep, eb, 60, "<%= x == x %>"), lim, NULL, 0, "true");
}

/* Substring search is linear (tpl_memmem / tpl_memrmem): a needle of 400,000 bytes that almost
 * matches everywhere in 4,000,000 bytes was 1.6e12 byte compares. Python and Ruby answer at once. */
static void test_substring_search(void)
{
    tpl_limits lim = { .fuel = 2000000, .max_memory = 64 << 20 };
    const char *jp = "{% set h = 'a' * 4000000 %}{% set n = 'a' * 400000 + 'b' %}{% set r = 'b' + 'a' * 400000 %}";
    static const struct { const char *name, *tail, *want; } jc[] = {
        { "jinja find", "{{ h.find(n) }}", "-1" },
        { "jinja rfind", "{{ h.rfind(r) }}", "-1" },
        { "jinja rfind hit", "{{ (h + r + h).rfind(r) }}", "4000000" },
        { "jinja index", "{{ (h + n).index(n) }}", "4000000" },
        { "jinja count", "{{ h.count(n) }}", "0" },
        { "jinja replace", "{{ h.replace(n, 'x')|length }}", "4000000" },
        { "jinja split", "{{ h.split(n)|length }} {{ h.rsplit(r)|length }}", "1 1" },
        { "jinja partition", "{{ h.partition(n)[0]|length }} {{ h.rpartition(r)[2]|length }}", "4000000 4000000" },
        { "jinja in", "{{ n in h }}", "False" },
    };
    for (size_t i = 0; i < sizeof jc / sizeof *jc; i++) {
        char *src = rep(jp, jc[i].tail, 1, "");
        expect(jc[i].name, J, src, lim, NULL, 0, jc[i].want);
    }
    const char *ep = "<% h = 'a' * 4000000; n = 'a' * 400000 + 'b' %>";
    static const struct { const char *name, *tail, *want; } ec[] = {
        { "erb include?", "<%= h.include?(n) %>", "false" },
        { "erb sub", "<%= h.sub(n, 'x').size %>", "4000000" },
        { "erb gsub", "<%= h.gsub(n, 'x').size %>", "4000000" },
        { "erb scan", "<%= h.scan(n).size %>", "0" },
        { "erb split", "<%= h.split(n).size %>", "1" },
        { "erb []", "<%= h[n].inspect %>", "nil" },
    };
    for (size_t i = 0; i < sizeof ec / sizeof *ec; i++)
        expect(ec[i].name, E, rep(ep, ec[i].tail, 1, ""), lim, NULL, 0, ec[i].want);
    /* a catastrophic regex: Oniguruma's retry limits end it (Ruby 3.1 runs for minutes) */
    const char *rx = "<% h = 'a' * 30 + '!' %>";
    expect("erb =~ backtracking", E, rep(rx, "<%= h =~ /^(a|a)*$/ %>", 1, ""), lim, NULL, TPL_ERR_LIMIT,
           "backtracking limit");
    expect("erb gsub backtracking", E, rep(rx, "<%= h.gsub(/(a|a)*$/, 'x') %>", 1, ""), lim, NULL, TPL_ERR_LIMIT,
           "backtracking limit");
    expect("erb scan backtracking", E, rep(rx, "<%= h.scan(/(a|a)*$/).size %>", 1, ""), lim, NULL, TPL_ERR_LIMIT,
           "backtracking limit");
    expect("erb match? backtracking", E, rep(rx, "<%= h.match?(/^(a|a)*$/) %>", 1, ""), lim, NULL, TPL_ERR_LIMIT,
           "backtracking limit");
}

/* remembers() scanned every fact on every call with no fuel: 20,000 calls over 100,000 facts
 * took a minute. Each fact scanned now charges the fuel; answers stay exact. */
static void test_remembers(void)
{
    tpl_limits lim = { .fuel = 2000000, .max_memory = 64 << 20 };
    nfacts = 100000;
    expect("remembers found", J, rep("", "{{ remembers('number 99999 about') }}", 1, ""), lim, NULL, 0, "True");
    expect("remembers not found", J, rep("", "{{ remembers('number 100000') }}", 1, ""), lim, NULL, 0, "False");
    expect("remembers 20,000 calls", J, rep("", "{% for i in range(20000) %}{{ remembers('zzz') }}{% endfor %}", 1, ""),
           lim, NULL, TPL_ERR_LIMIT, FUEL);
    expect("erb remembers? 20,000 calls", E, rep("", "<% 20000.times do %><%= remembers?('zzz') %><% end %>", 1, ""),
           lim, NULL, TPL_ERR_LIMIT, FUEL);
    nfacts = 0;
}

/* n pseudo-random letters and digits (a fixed LCG; then a NUL): almost every trigram distinct. */
static void noise(char *s, size_t n, uint32_t seed)
{
    static const char abc[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        s[i] = abc[(seed >> 16) % 62];
    }
    s[n] = 0;
}

/* tr() pattern rows: the ranking's trigram count de-duplicated by comparing every trigram of
 * the row's longest literal with every earlier one (one 100,000-character row: 23 s), and every
 * call took scratch for every pattern row and never returned it ("out of memory" after a few
 * hundred calls over 5,000 rows). Now the count is taken once per row when the catalog is
 * added, scratch is reused, and the rows scanned charge the fuel. */
static void test_tr(void)
{
    tpl_limits lim = { .fuel = 20000000, .max_memory = 64 << 20 };
    size_t n = 100000;
    char *cat = malloc(2 * n + 256), *state = malloc(n + 64);
    if (!cat || !state) abort();
    strcpy(cat, "{\"de\": {\"");
    noise(cat + strlen(cat), n, 1);
    strcpy(cat + strlen(cat), "{x}\": \"T{x}\"}}");
    strcpy(state, "{\"t\": \"");
    noise(state + strlen(state), n, 1);
    strcpy(state + strlen(state), "Z\"}");
    catalog = cat;
    expect("tr 100,000-char row", J, rep("", "{{ tr(t) }}", 1, ""), lim, state, 0, "TZ");
    free(cat);

    /* 5,000 rows of four placeholders; 1,000 calls that match the last row (320 MB of scratch before) */
    cat = malloc(5000 * 64 + 64);
    if (!cat) abort();
    size_t len = (size_t)sprintf(cat, "{\"de\": {");
    for (int i = 0; i < 5000; i++)
        len += (size_t)sprintf(cat + len, "%s\"{a} row %d {b} of {c} and {d}!\": \"{d}{c}{b}{a}\"", i ? ", " : "", i);
    strcpy(cat + len, "}}");
    catalog = cat;
    char *want = rep("", "4321", 1001, "");
    expect("tr 5,000 rows x 1,000 calls", J, rep("", "{% for i in range(1000) %}{{ tr('1 row 4999 2 of 3 and 4!') }}{% endfor %}"
           "{{ tr('1 row 0 2 of 3 and 4!') }}", 1, ""), lim, NULL, 0, want);
    free(want);
    free(cat);

    /* 2,000 rows of 1,000-byte literals searched in a 4 MB text: 8 GB of scanning, charged to the fuel */
    cat = malloc(2000 * 1100 + 64 + 1);
    if (!cat) abort();
    len = (size_t)sprintf(cat, "{\"de\": {");
    for (int i = 0; i < 2000; i++) {
        len += (size_t)sprintf(cat + len, "%s\"{a}", i ? ", " : "");
        noise(cat + len, 1000, (uint32_t)i + 7);
        len += 1000;
        len += (size_t)sprintf(cat + len, "{b}!\": \"x\"");
    }
    strcpy(cat + len, "}}");
    catalog = cat;
    expect("tr 2,000 long rows, 4 MB text", J, rep("", "{{ tr('a' * 4000000 + '!') }}", 1, ""), lim, NULL, TPL_ERR_LIMIT, FUEL);
    free(cat);
    catalog = NULL;
    free(state);
}

/* The VM's operand stack and slots were fixed at 16,384 values: a 20,000-item list literal,
 * 20,000 top-level sets or 30,000 dict entries compiled, then failed every render with "too many
 * variables" and no location. Jinja2 and Ruby render them; the VM now sizes both per program
 * within the memory limit, and says so, located, when the limit is too small. */
static void test_frames(void)
{
    tpl_limits lim = { .fuel = 2000000, .max_memory = 64 << 20 };
    expect("jinja 20,000-item list", J, rep("{{ [0", ", 0", 19999, "]|length }}"), lim, NULL, 0, "20000");
    expect("jinja 30,000 dict entries", J, rep("{{ {'a': 0", ", 'a': 0", 29999, "}|length }}"), lim, NULL, 0, "1");
    char *sets = malloc(20000 * 32 + 64);
    if (!sets) abort();
    size_t len = 0;
    for (int i = 0; i < 20000; i++) len += (size_t)sprintf(sets + len, "{%% set v%d = %d %%}", i, i);
    strcpy(sets + len, "{{ v0 + v19999 }}");
    expect("jinja 20,000 sets", J, sets, lim, NULL, 0, "19999");
    expect("jinja macro 20,000-item list", J, rep("{% macro m() %}{{ [0", ", 0", 19999, "]|length }}{% endmacro %}{{ m() }}"),
           lim, NULL, 0, "20000");
    expect("erb 20,000-item list", E, rep("<%= [0", ", 0", 19999, "].size %>"), lim, NULL, 0, "20000");
    expect("erb block 20,000-item list", E, rep("<% [1].each do |x| %><%= [x", ", 0", 19999, "].size %><% end %>"),
           lim, NULL, 0, "20000");
    expect("frames over the memory limit", J, rep("{{ [0", ", 0", 60000, "]|length }}"),
           (tpl_limits){ .fuel = 2000000, .max_memory = 1 << 20 }, NULL, TPL_ERR_LIMIT, "memory limit reached (1048576 bytes)");
}

/* The memory limit is named when reached, and range(10_000_000)|list works within the default
 * 256 MiB as the README says (|list shares the items of the list it copies). */
static void test_memory_limit(void)
{
    expect("range(10M)|list", J, rep("", "{{ range(10000000)|list|length }}", 1, ""), (tpl_limits){ .fuel = 2000000 },
           NULL, 0, "10000000");
    expect("memory limit named", J, rep("", "{{ (range(1000000)|map('string')|list)|length }}", 1, ""),
           (tpl_limits){ .fuel = 20000000, .max_memory = 8 << 20 }, NULL, TPL_ERR_LIMIT, "memory limit reached (8388608 bytes)");
}

/* The state counts against the memory limit: 8 MiB of [{}, {}, ...] under an 8 MiB limit is
 * refused before parsing (a 60 MB state took 4.9 GB); a state within it is set. */
static void test_state_memory(void)
{
    tpl_limits lim = { .max_memory = 8 << 20 };
    size_t n = 8 << 20;
    char *big = malloc(n + 16);
    if (!big) abort();
    strcpy(big, "{\"a\": [");
    size_t len = strlen(big);
    while (len + 4 < n) { memcpy(big + len, "{},", 3); len += 3; }
    memcpy(big + len, "{}]}", 5);
    len += 4;
    tpl_render *r = tpl_render_new(&lim);
    clock_t t0 = clock();
    tpl_status st = tpl_render_set_state_json(r, big, len);
    double cpu = (double)(clock() - t0) / CLOCKS_PER_SEC;
    bool ok = st == TPL_ERR_LIMIT && strstr(tpl_render_error(r)->message, "state exceeds the memory limit (8388608 bytes)");
    ok = ok && tpl_render_set_state_json(r, "{\"a\": [{}, {}]}", 15) == TPL_OK;
    printf("%-28s %6.3f s  %s\n", "state memory limit", cpu, ok ? "ok" : "FAIL");
    if (ok) passed++;
    else failed++, printf("  got: status %d: %s\n", (int)st, tpl_render_error(r)->message);
    tpl_render_free(r);
    free(big);
}

/* The state and the render share one memory budget (session 39: each arena had the whole
 * --max-memory, so a state within it plus a render within it peaked near twice the limit). Under
 * 8 MiB: a 6 MB string renders over a tiny state, but not over a state of ~2.6 MB of values; the
 * memory the big render's arena kept for reuse does not block a later state (JSON or host values)
 * that fits with it given back. */
static tpl_status run1(tpl_render *r, tpl_program *p, const char **out)
{
    size_t n;
    return tpl_render_run(r, p, out, &n);
}

static char *strings_state(int k, int n)
{
    char *s = malloc(64 + (size_t)n * 1003);
    if (!s) abort();
    int len = sprintf(s, "{\"k\": %d, \"a\": [", k);
    for (int i = 0; i < n; i++) {
        s[len++] = i ? ',' : ' ';
        s[len++] = '"';
        memset(s + len, 'y', 1000);
        len += 1000;
        s[len++] = '"';
    }
    strcpy(s + len, "]}");
    return s;
}

static void test_shared_memory_budget(void)
{
    tpl_limits lim = { .fuel = 20000000, .max_memory = 8 << 20 };
    tpl_options o;
    memset(&o, 0, sizeof o);
    o.syntax = J;
    tpl_program *p = NULL;
    tpl_error cerr;
    memset(&cerr, 0, sizeof cerr);
    const char *src = "{{ (\"x\" * k)|length }}";
    bool ok = tpl_compile("budget", src, strlen(src), &o, &p, &cerr) == TPL_OK;
    tpl_render *r = ok ? tpl_render_new(&lim) : NULL;
    const char *out = NULL, *why = "compile";
    char *big = strings_state(6000000, 2500), *fits = strings_state(100, 2500);
    if (ok) why = "6 MB over a tiny state renders";
    ok = ok && tpl_render_set_state_json(r, "{\"k\": 6000000}", 14) == TPL_OK && run1(r, p, &out) == TPL_OK &&
         strcmp(out, "6000000") == 0;
    if (ok) why = "a 2.6 MB state after the 6 MB render (its kept arena given back)";
    ok = ok && tpl_render_set_state_json(r, fits, strlen(fits)) == TPL_OK && run1(r, p, &out) == TPL_OK &&
         strcmp(out, "100") == 0;
    if (ok) why = "6 MB over the 2.6 MB state: the memory limit";
    ok = ok && tpl_render_set_state_json(r, big, strlen(big)) == TPL_OK && run1(r, p, &out) == TPL_ERR_LIMIT &&
         strstr(tpl_render_error(r)->message, "memory limit reached (8388608 bytes)");
    /* host values after a big render: the constructor gives the render's kept memory back too */
    if (ok) why = "host: 6 MB render, then a 3 MB string value";
    char *three = malloc(3 << 20);
    if (!three) abort();
    memset(three, 'z', 3 << 20);
    tpl_val v;
    ok = ok && tpl_render_set_state_json(r, "{\"k\": 6000000}", 14) == TPL_OK && run1(r, p, &out) == TPL_OK &&
         tpl_render_reset_state(r) == TPL_OK && tpl_val_str(r, three, 3 << 20, 0, &v) == TPL_OK;
    printf("%-28s %6s    %s\n", "shared memory budget", "", ok ? "ok" : "FAIL");
    if (ok) passed++;
    else failed++, printf("  failed at: %s: %s\n", why, r ? tpl_render_error(r)->message : "");
    free(three);
    free(big);
    free(fits);
    if (r) tpl_render_free(r);
    tpl_program_free(p);
}

/* Big integers (session 17): Integer#digits of a 300,001-digit number was one division by the
 * base per digit, quadratic (20 s); it is a conversion to text now. Outputs are Ruby 3.1's. */
static void test_bigint(void)
{
    tpl_limits lim = { .fuel = 20000000, .max_memory = 64 << 20 };
    expect("erb digits of 10**300000", E,
           rep("", "<%= (10**300000).digits.size %> <%= (10**300000+7).digits(36)[0] %> <%= (3**300000).digits.sum %>", 1, ""),
           lim, NULL, 0, "300001 35 644202");
}

/* A state JSON integer of more than 4,300 digits (session 20): Python's json.load raises ValueError
 * while reading the state, so Jinja2 and str.format render nothing; Ruby's JSON reads it exactly
 * (ERB's outputs are Ruby 3.1's). Before, tpl rendered the Jinja and format-string templates. */
static void test_state_long_int(void)
{
    tpl_limits lim = { .fuel = 20000000 };
    char *s4301 = rep("{\"a\": [1,\n  2], \"x\": -", "7", 4301, "}");
    char *s4300 = rep("{\"x\": ", "9", 4300, "}");
    const char *msg = "Exceeds the limit (4300 digits) for integer string conversion: value has 4301 digits";
    expect("jinja state int 4301 digits", J, rep("", "x{{ 1 }}", 1, ""), lim, s4301, TPL_ERR_STATE, msg);
    expect("fmt state int 4301 digits", TPL_SYNTAX_FMT, rep("", "x{a}", 1, ""), lim, s4301, TPL_ERR_STATE, msg);
    expect("erb state int 4301 digits", E, rep("", "<%= x.to_s.size %> <%= x % 1000 %> <%= (x + 1).to_s[-3..] %>", 1, ""),
           lim, s4301, 0, "4302 223 776");
    expect("jinja state int 4300 digits", J, rep("", "{{ x|string|length }} {{ x % 1000 }}", 1, ""), lim, s4300, 0,
           "4300 999");
    /* where: line 2, column 9 (code points, as jansson counts a syntax error's) */
    tpl_render *r = tpl_render_new(&lim);
    tpl_program *p = NULL;
    tpl_options o = { 0 };
    const char *st = "{\"a\": 1,\n \"\u00e9\u00e9\": [";
    char *doc = rep(st, "1", 5000, "]}");
    bool ok = r && tpl_compile("t.jinja", "x", 1, &o, &p, NULL) == TPL_OK &&
              tpl_render_set_state_json(r, doc, strlen(doc)) == TPL_OK;
    const char *out;
    size_t n;
    ok = ok && tpl_render_run(r, p, &out, &n) == TPL_ERR_STATE && tpl_render_error(r)->line == 2 &&
         tpl_render_error(r)->column == 9 && strstr(tpl_render_error(r)->message, "value has 5000 digits");
    /* a state without one renders again */
    ok = ok && tpl_render_set_state_json(r, "{}", 2) == TPL_OK && tpl_render_run(r, p, &out, &n) == TPL_OK;
    printf("%-28s %6.3f s  %s\n", "state long int located", 0.0, ok ? "ok" : "FAIL");
    if (ok) passed++;
    else failed++;
    tpl_program_free(p);
    tpl_render_free(r);
    free(doc);
    free(s4301);
    free(s4300);
}

/* gsub past the memory limit stops searching at once (it searched the 1,000,000 matches on: 12 s),
 * and a replacement is copied in runs between backslashes (a byte at a time: 3e9 instructions for
 * 100 MB). The escapes' output is Ruby 3.1's. */
static void test_gsub(void)
{
    tpl_limits lim = { .fuel = 20000000, .max_memory = 64 << 20 };
    expect("erb gsub past the memory limit", E, rep("", "<%= ('a' * 1000000).gsub('a', 'x' * 1000).size %>", 1, ""),
           lim, NULL, TPL_ERR_LIMIT, "memory limit reached");
    expect("erb gsub regex past the limit", E, rep("", "<%= ('a' * 1000000).gsub(/a/) { 'x' * 1000 }.size %>", 1, ""),
           lim, NULL, TPL_ERR_LIMIT, "memory limit reached");
    expect("erb gsub 1000-byte repl", E, rep("", "<%= ('a' * 10000).gsub(/a/, 'x' * 1000).size %>", 1, ""),
           lim, NULL, 0, "10000000");
    expect("erb gsub escapes", E,
           rep("", "<%= 'hello world'.gsub(/o(.)/, '<\\1\\0\\`\\'\\+\\\\\\q\\k>') %>|"
                   "<%= 'ab'.gsub('a', 'x\\\\') %>|<%= 'ab'.gsub('a', 'x\\0\\&y') %>", 1, ""),
           lim, NULL, 0, "hell< o hell' \\q\\k>w<rorhello w'r\\q\\k>ld|x\\b|xaayb");
}

/* C-stack recursion (session 17): a raised max_depth let nested runs of the VM (a Hash default
 * block indexing its own hash; templates including themselves at render time) overflow the C
 * stack, and ERB's ==, <=>, include?, sort over arrays 200,000 deep recursed without bound: each
 * was a SIGSEGV. Now a DEPTH limit error at 1,000 nested runs, and such arrays compare unequal
 * (== false, as tpl_equal past 500 levels) or not at all (sort: ArgumentError, as for nil). */
/* Nested runs on a small thread stack (a host's thread: Ruby's are 1 MiB, as here): the
 * count of nested runs alone (1,000) would overflow it; the VM checks the C stack past 64 levels
 * and ends the render with its depth error instead of a SIGSEGV (which would kill this test). */
static void *small_stack_render(void *arg)
{
    const char *src = "<% h = Hash.new { |hash, k| k == 0 ? 0 : hash[k - 1] + 1 } %><%= h[950] %>";
    tpl_options o;
    memset(&o, 0, sizeof o);
    o.syntax = TPL_SYNTAX_ERB;
    tpl_program *p = NULL;
    tpl_error cerr;
    memset(&cerr, 0, sizeof cerr);
    int *ok = arg;
    if (tpl_compile("small-stack.erb", src, strlen(src), &o, &p, &cerr) != TPL_OK) { tpl_error_clear(&cerr); return NULL; }
    tpl_limits lim = { .fuel = 20000000, .max_depth = 100000000 };
    tpl_render *r = tpl_render_new(&lim);
    const char *out = NULL;
    size_t n = 0;
    tpl_status st = r ? tpl_render_run(r, p, &out, &n) : TPL_ERR_NOMEM;
    *ok = (st == TPL_OK && n == 3 && memcmp(out, "950", 3) == 0) ||
          (st == TPL_ERR_LIMIT && strstr(tpl_render_error(r)->message, "maximum call depth reached") != NULL);
    if (!*ok) printf("  got: status %d %s\n", (int)st, st == TPL_OK ? "(wrong output)" : tpl_render_error(r)->message);
    tpl_render_free(r);
    tpl_program_free(p);
    return NULL;
}

static void test_small_thread_stack(void)
{
    pthread_attr_t a;
    pthread_t t;
    int ok = 0;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 1024 * 1024);
    if (pthread_create(&t, &a, small_stack_render, &ok) == 0) pthread_join(t, NULL);
    pthread_attr_destroy(&a);
    if (ok) passed++;
    else failed++, printf("FAIL erb hash default recursion on a 1 MiB thread stack\n");
}

static void test_c_stack(void)
{
    tpl_limits deep = { .fuel = 20000000, .max_depth = 100000000 };
    expect("erb hash default recursion", E,
           rep("", "<% h = Hash.new { |hash, k| k == 0 ? 0 : hash[k - 1] + 1 } %><%= h[100000] %>", 1, ""), deep, NULL,
           TPL_ERR_LIMIT, "maximum call depth reached (");   /* 1000 nested calls, or fewer where the C stack ends first */
    expect("erb hash default within 1000", E,
           rep("", "<% h = Hash.new { |hash, k| k == 0 ? 0 : hash[k - 1] + 1 } %><%= h[900] %>", 1, ""), deep, NULL, 0, "900");
    /* Session 34: each nested call's C stack, measured under ASan (gcc; clang+ASan, the fuzz tree)
     * on 8 MB: a lambda calling itself took 17.7 KB a level under clang+ASan (proc_call's 4 KB copy of
     * the arguments and 1 KB of kept slots, block_yield's 4 KB, interp's 2 KB of cold copies, a
     * bound method's 1 KB in call_any): 900 levels ended at 460 with the C-stack depth error (Ruby: 900).
     * Each path at the depth its reference engine reaches (Jinja2's macros and recursive loops end
     * with RecursionError past ~250 levels; tpl's captures end at 256). */
    /* (clang+ASan's frames: a lambda level still takes ~11 KB there, 725 levels on 8 MB; 700 asserted in
     * that tree, Ruby's 900 everywhere else, gcc's ASan tree included) */
#if defined(__clang__) && defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LAMBDA_DEPTH "700"
#endif
#endif
#ifndef LAMBDA_DEPTH
#define LAMBDA_DEPTH "900"
#endif
    expect("erb lambda recursion within 1000", E,
           rep("", "<% f = ->(n) { n == 0 ? 0 : f.(n - 1) + 1 } %><%= f.(" LAMBDA_DEPTH ") %>", 1, ""), deep, NULL, 0, LAMBDA_DEPTH);
    expect("erb proc [] recursion within 1000", E,
           rep("", "<% f = proc { |n| n == 0 ? 0 : f[n - 1] + 1 } %><%= f[" LAMBDA_DEPTH "] %>", 1, ""), deep, NULL, 0, LAMBDA_DEPTH);
    expect("jinja macro recursion 200", J,
           rep("", "{% macro f(n) %}{% if n %}{{ f(n-1) }}{% else %}x{% endif %}{% endmacro %}{{ f(200) }}", 1, ""), deep, NULL,
           0, "x");
    {
        char want[1024];
        size_t n = 0;
        for (int i = 1; i <= 200; i++) n += (size_t)snprintf(want + n, sizeof want - n, "%d", i);
        snprintf(want + n, sizeof want - n, ".");
        expect("jinja recursive loop 200", J,
               rep("{% set ns = namespace(a=[]) %}{% for i in range(200) %}{% set ns.a = [ns.a] %}{% endfor %}",
                   "{% for x in ns.a recursive %}{{ loop.depth }}{{ loop(x) }}{% endfor %}.", 1, ""), deep, NULL, 0, want);
    }
    tpl_limits lim = { .fuel = 20000000 };
    const char *pre = "<% a = []; b = []; 200000.times { a = [a]; b = [b] } %>";
    static const struct { const char *name, *tail, *want; int status; } c[] = {
        /* Ruby: SystemStackError (stack level too deep); tpl past its depth limit: the same kind and message
         * (before session 36 ==, <=> and sort answered false, nil and ArgumentError) */
        { "erb == 200000 deep", "<%= a == b %>", "stack level too deep (SystemStackError)", TPL_ERR_LIMIT },
        { "erb include? 200000 deep", "<%= [a].include?(b) %>", "stack level too deep (SystemStackError)", TPL_ERR_LIMIT },
        { "erb count 200000 deep", "<%= [a].count(b) %>", "stack level too deep (SystemStackError)", TPL_ERR_LIMIT },
        { "erb eql? 200000 deep", "<%= a.eql?(b) %>", "stack level too deep (SystemStackError)", TPL_ERR_LIMIT },
        { "erb <=> 200000 deep", "<%= (a <=> b).inspect %>", "stack level too deep (SystemStackError)", TPL_ERR_LIMIT },
        { "erb sort 200000 deep", "<%= [a, b].sort.size %>", "stack level too deep (SystemStackError)", TPL_ERR_LIMIT },
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++)
        expect(c[i].name, E, rep(pre, c[i].tail, 1, ""), lim, NULL, c[i].status, c[i].want);
}

/* Lists past the memory limit (session 25): ERB's scan and split with a regex pushed their items
 * without checking, so at the memory limit the items were dropped and the render went on: a
 * 6,000,000-match scan said 4194304 (the last capacity that fit). Now the limit error, as for the
 * String pattern; under the limit the count is exact. */
static void test_list_limit(void)
{
    tpl_limits lim = { .fuel = 20000000, .max_memory = 16 << 20 };
    static const struct { const char *name, *src; } c[] = {
        { "erb scan regex past the limit", "<%= ('a' * 2000000).scan(/a/).size %>" },
        { "erb scan groups past the limit", "<%= ('ab' * 1000000).scan(/(a)(b)/).size %>" },
        { "erb split regex past the limit", "<%= ('a,' * 2000000).split(/,/).size %>" },
        { "erb split groups past the limit", "<%= ('a,' * 1000000).split(/(,)/).size %>" },
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++)
        expect(c[i].name, E, rep("", c[i].src, 1, ""), lim, NULL, TPL_ERR_LIMIT, "memory limit reached (16777216 bytes)");
    expect("erb scan regex within the limit", E, rep("", "<%= ('a' * 200000).scan(/a/).size %>", 1, ""), lim, NULL, 0, "200000");
}

/* A String's integer past tpl's 2**20 bits (session 25): to_i, Integer(), hex and oct read big
 * integers now (they were "integer overflow (tpl integers are 64-bit)" past int64); one too large
 * is the memory-limit error, decided from the digit count before GMP parses 10 MB of digits. */
static void test_str_to_big_int(void)
{
    tpl_limits lim = { .fuel = 20000000 };
    expect("erb to_i of 10M digits", E, rep("", "<%= ('9' * 10000000).to_i %>", 1, ""), lim, NULL, TPL_ERR_LIMIT,
           "integer too large (more than 1048576 bits)");
    expect("erb to_i of 300,000 digits", E, rep("", "<%= ('9' * 300000).to_i.to_s.size %>", 1, ""), lim, NULL, 0, "300000");
}

/* Many methods (session 25): each ERB `def` and each call of a name looked the template's methods
 * up in a list, so 40,000 defs took 5 s of CPU to compile (20,000: 1.5 s); a hash index now. */
static void test_many_defs(void)
{
    char *src = malloc(40000 * 40 + 64);
    if (!src) abort();
    size_t n = 0;
    for (int i = 0; i < 40000; i++) n += (size_t)sprintf(src + n, "<%% def f%d(); %d; end %%>", i, i);
    sprintf(src + n, "<%%= f39999 + f0 %%>");
    expect("erb 40000 defs", E, src, (tpl_limits){ .fuel = 20000000 }, NULL, 0, "39999");
}

/* A diagnostic's source line (session 25): tpl_error_format kept 9 bytes for every code point of
 * the line to place the caret, so the error at the end of a 50 MB one-line template took 450 MB
 * and seconds (tplc: 594 MB, past 10 s). Only the window around the caret is kept now: the peak
 * RSS grows by less than the line while formatting. */
static void test_error_window(void)
{
    size_t n = 30u << 20;
    char *src = malloc(n + 32);
    if (!src) abort();
    memcpy(src, "{{ \"", 4);
    memset(src + 4, 'a', n);
    strcpy(src + 4 + n, "\" + }}");
    tpl_options o;
    memset(&o, 0, sizeof o);
    tpl_program *p = NULL;
    tpl_error e;
    memset(&e, 0, sizeof e);
    bool ok = tpl_compile("long.jinja", src, strlen(src), &o, &p, &e) == TPL_ERR_SYNTAX;
    free(src);
    struct rusage ru0, ru1;
    getrusage(RUSAGE_SELF, &ru0);
    clock_t t0 = clock();
    char *text = ok ? tpl_error_format(&e) : NULL;
    double cpu = (double)(clock() - t0) / CLOCKS_PER_SEC;
    getrusage(RUSAGE_SELF, &ru1);
    long grew = ru1.ru_maxrss - ru0.ru_maxrss; /* KiB */
    ok = text && strstr(text, "long.jinja:1:31457289: error: unexpected 'end of print statement'\n  ...aaaa") &&
         strstr(text, "aaaa\" + }}\n") && strlen(text) < 400 && grew < (long)(n >> 10) && cpu < MAX_CPU;
    printf("%-28s %6.3f s  %s (peak RSS +%ld KiB)\n", "error window on a 30 MB line", cpu, ok ? "ok" : "FAIL", grew);
    if (ok) passed++;
    else failed++, printf("  got: %.300s\n", text ? text : "(nothing)");
    free(text);
    tpl_error_clear(&e);
}

/* Errors on a long line, many times (session 37, issue 17): formatting one measured every code
 * point of the line (a 100 KB line: 300 us an error, a Python loop of failing renders spent its
 * time there) and a runtime error's location walked the source byte by byte. The caret's window
 * is now found by skipping the units before it (ASCII 32 bytes a step) and the line's width is
 * counted only up to the cut: 400 errors of a 2 MB line, each formatted, in well under a second
 * (before: 5 ms and more each). The text is the same as before (the window, its "..." marks, the
 * caret under its character after a non-ASCII one). */
static void test_error_window_repeated(void)
{
    size_t n = 2u << 20;
    char *line = malloc(n + 256);
    if (!line) abort();
    memcpy(line, "\xc3\xa9", 2); /* (a two-byte unit first: the skip starts off the fast path) */
    memset(line + 2, 'a', n);
    strcpy(line + 2 + n, "{{ 1/0 }}");
    memset(line + 2 + n + 9, 'b', 100);
    line[2 + n + 109] = 0;
    char want[512];
    /* (the caret under '/': 60 columns before it, 40 from it, "..." at both ends) */
    snprintf(want, sizeof want, "long.jinja:1:%zu: error: division by zero\n  ...%.56s{{ 1/0 }}%.35s...\n     %60s^\n",
             n + 6, line + 2, line + n + 11, "");
    tpl_options o;
    memset(&o, 0, sizeof o);
    tpl_program *p = NULL;
    tpl_error ce;
    memset(&ce, 0, sizeof ce);
    bool ok = tpl_compile("long.jinja", line, strlen(line), &o, &p, &ce) == TPL_OK;
    tpl_render *r = ok ? tpl_render_new(NULL) : NULL;
    char *text = NULL;
    clock_t t0 = clock();
    for (int i = 0; ok && i < 400; i++) {
        const char *out;
        size_t len;
        ok = r && tpl_render_run(r, p, &out, &len) == TPL_ERR_TYPE;
        free(text);
        text = ok ? tpl_error_format(tpl_render_error(r)) : NULL;
        ok = text && strcmp(text, want) == 0;
    }
    double cpu = (double)(clock() - t0) / CLOCKS_PER_SEC;
    ok = ok && cpu < MAX_CPU / 2;
    printf("%-28s %6.3f s  %s\n", "400 errors on a 2 MB line", cpu, ok ? "ok" : "FAIL");
    if (ok) passed++;
    else failed++, printf("  want: %s  got:  %.300s\n", want, text ? text : "(nothing)");
    free(text);
    if (r) tpl_render_free(r);
    tpl_program_free(p);
    tpl_error_clear(&ce);
    free(line);
}

/* A format width past the output limit (session 26): Python pads to it (200 MB), tpl refused it
 * with Python's "Too many decimal digits" (Python's error only past 2^63 - 1): now the located
 * output-limit error, after the checks of the spec Python makes first. str.center and the
 * center filter likewise (they said "width too large"). */
static void test_huge_width(void)
{
    tpl_limits lim = { .fuel = 20000000 };
    expect("fmt width 2e8", TPL_SYNTAX_FMT, rep("", "{x:>200000000}", 1, ""), lim, "{\"x\": 1}", TPL_ERR_LIMIT,
           "output limit reached (67108864 bytes)");
    expect("fmt width 2e8 bad type", TPL_SYNTAX_FMT, rep("", "{x:>200000000d}", 1, ""), lim, "{\"x\": \"1\"}",
           TPL_ERR_VALUE, "Unknown format code 'd' for object of type 'str'");
    expect("fmt width 2^63", TPL_SYNTAX_FMT, rep("", "{x:>9223372036854775808}", 1, ""), lim, "{\"x\": 1}",
           TPL_ERR_VALUE, "Too many decimal digits in format string");
    lim.max_output = 4 << 20;
    expect("fmt width 5e6 limit 4M", TPL_SYNTAX_FMT, rep("", "{x:>5000000}", 1, ""), lim, "{\"x\": 1}", TPL_ERR_LIMIT,
           "output limit reached (4194304 bytes)");
    lim.max_output = 0;
    expect("jinja %-format width 2e8", J, rep("", "{{ '%200000000d' % 1 }}", 1, ""), lim, NULL, TPL_ERR_LIMIT,
           "output limit reached (67108864 bytes)");
    expect("jinja %-format *width 2^40", J, rep("", "{{ '%*d' % (2**40, 1) }}", 1, ""), lim, NULL, TPL_ERR_LIMIT,
           "output limit reached (67108864 bytes)");
    expect("jinja %-format prec 2e8", J, rep("", "{{ '%.200000000d' % 1 }}", 1, ""), lim, NULL, TPL_ERR_LIMIT,
           "output limit reached (67108864 bytes)");
    expect("jinja %-format width 2e8 bad", J, rep("", "{{ '%200000000d' % 'x' }}", 1, ""), lim, NULL, TPL_ERR_TYPE,
           "%d format: a real number is required, not str");
    expect("jinja %-format str prec 2e8", J, rep("", "{{ '%.200000000s|%.3s' % ('x', 'abcd') }}", 1, ""), lim, NULL, 0,
           "x|abc");
    /* Ruby's format widths and precisions go up to INT_MAX (session 27; tpl said "width too big"
     * past 10^8): past the output limit the located limit error, below it Ruby's output */
    expect("erb format width 2^31-1", E, rep("", "<%= format('%2147483647d', 1).size %>", 1, ""), lim, NULL,
           TPL_ERR_LIMIT, "output limit reached (67108864 bytes)");
    expect("erb % width 1e8 str", E, rep("", "<%= ('%-100000000s|' % 'ab').size %>", 1, ""), lim, NULL,
           TPL_ERR_LIMIT, "output limit reached (67108864 bytes)");
    expect("erb format *width 2^31-1 %c", E, rep("", "<%= format('%*c', 2147483647, 10).size %>", 1, ""), lim, NULL,
           TPL_ERR_LIMIT, "output limit reached (67108864 bytes)");
    expect("erb format prec 2^31-1 d", E, rep("", "<%= format('%.2147483647d', 1).size %>", 1, ""), lim, NULL,
           TPL_ERR_LIMIT, "output limit reached (67108864 bytes)");
    expect("erb format width 2^31", E, rep("", "<%= format('%2147483648d', 1) %>", 1, ""), lim, NULL, TPL_ERR_VALUE,
           "width too big (ArgumentError)");
    expect("erb format *width -2^31", E, rep("", "<%= format('%*d', -2147483648, 1) %>", 1, ""), lim, NULL,
           TPL_ERR_VALUE, "width too big (ArgumentError)");
    expect("erb format width 2e8 bad", E, rep("", "<%= format('%200000000d', 'x') %>", 1, ""), lim, NULL,
           TPL_ERR_VALUE, "invalid value for Integer(): \"x\" (ArgumentError)");
    expect("erb format prec 2^31-1 s", E, rep("", "<%= format('%.2147483647s|%.*s', 'ab', 2147483647, 'cd') %>", 1, ""),
           lim, NULL, 0, "ab|cd");
    expect("erb format width 6e7", E, rep("", "<%= format('%60000000d', 1).size %>", 1, ""), lim, NULL, 0, "60000000");
    expect("jinja center 2e8", J, rep("", "{{ 'x'.center(200000000) }}{{ 'x'|center(200000000) }}", 1, ""), lim, NULL,
           TPL_ERR_LIMIT, "output limit reached (67108864 bytes)");
}

/* A state integer past tpl's 2**20 bits (session 26): "state too deep or out of memory" before.
 * Python's json.loads refuses it (past 4,300 digits, the message test_state_long_int checks);
 * Ruby reads it: tpl names its digits, located, and never parses it. */
static void test_state_huge_int(void)
{
    tpl_limits lim = { .fuel = 20000000 };
    char *s = rep("{\"a\": 1,\n \"x\": [-", "9", 10000000, "]}");
    expect("erb state int 1e7 digits", E, rep("", "<%= x %>", 1, ""), lim, s, TPL_ERR_STATE,
           "integer in the state too large for tpl: value has 10000000 digits");
    expect("jinja state int 1e7 digits", J, rep("", "{{ x }}", 1, ""), lim, s, TPL_ERR_STATE,
           "Exceeds the limit (4300 digits) for integer string conversion: value has 10000000 digits");
    free(s);
    s = rep("{\"x\": ", "9", 315652, "}");
    expect("erb state int 315652 digits", E, rep("", "<%= x.to_s.size %>", 1, ""), lim, s, 0, "315652");
    free(s);
}

/* ERB printing an array nested 100,000 deep (session 26): inspect said "out of memory", to_s and
 * String() returned a truncated text silently, "#{a}" gave Python's RecursionError. Ruby raises
 * SystemStackError "stack level too deep". */
static void test_erb_deep_print(void)
{
    tpl_limits lim = { .fuel = 20000000 };
    const char *deep = "<% a = []; 100000.times { a = [a] } %>";
    const char *tails[] = { "<%= a.inspect.size %>", "<%= a.to_s.size %>", "<%= String(a).size %>", "<%= \"#{a}\" %>",
                            "<%= a %>", "<%= [a].to_s.size %>" };
    for (size_t i = 0; i < sizeof tails / sizeof *tails; i++) {
        char name[64];
        snprintf(name, sizeof name, "erb deep print %zu", i);
        expect(name, E, rep(deep, tails[i], 1, ""), lim, NULL, TPL_ERR_LIMIT, "stack level too deep (SystemStackError)");
    }
}

/* ERB: tpl's depth limit is a located limit error that no rescue takes (session 35, erb43). Ruby's stack is about
 * 10,000 calls deep: its SystemStackError comes where tpl's limit (200, at most 1,000) cannot reach, so a rescue of
 * tpl's limit would print what Ruby never does (`f(0)` below: tpl 99, Ruby 10073; a 500-deep recursion Ruby finishes
 * would run its rescue branch). Ruby fails the bare rescue and rescue modifier forms too (tests/cases/erb-lang20). */
static void test_erb_depth_unrescued(void)
{
    tpl_limits lim = { .fuel = 20000000 };
    static const char *const src[] = {
        "<% def f(n) = begin; f(n + 1); rescue SystemStackError; n; end %><%= f(0) %>",
        "<% def down(n) = down(n + 1) -%>\n<%= begin; down(0); rescue Exception => e; e.message; end %>",
        "<% def d(n) = n == 0 ? 0 : 1 + d(n - 1) %><%= begin; d(500); rescue SystemStackError; \"deep\"; end %>",
        "<% spin = ->(n) { spin.(n + 1) } %><%= begin; spin.(0); rescue StandardError, SystemStackError; 1; end %>",
        "<% h = Hash.new { |hh, k| hh[k + 1] } %><%= begin; h[0]; rescue SystemStackError => e; e.class; end %>",
        "<% def down(n) = down(n + 1) %><%= (down(0) rescue 1) %><% begin; down(0); rescue; end %>",
        "<% def down(n) = down(n + 1) %><% begin; down(0); rescue SystemStackError => e; raise; end %>",
    };
    for (size_t i = 0; i < sizeof src / sizeof *src; i++) {
        char name[64];
        snprintf(name, sizeof name, "erb depth limit unrescued %zu", i);
        expect(name, TPL_SYNTAX_ERB, rep("", src[i], 1, ""), lim, NULL, TPL_ERR_LIMIT, "stack level too deep (SystemStackError)");
    }
}

/* ==, <=>, eql?, include? and sort of two Arrays nested 1001 deep: Ruby compares them (true, 0), tpl stops
 * its walk at its depth limit, so a located error names that limit, never false or nil (session 36, erb44). */
static void test_erb_deep_compare(void)
{
    tpl_limits lim = { .fuel = 20000000 };
    static const char *const src[] = {
        "<%= a == b %>", "<%= a != b %>", "<%= (a <=> b).inspect %>", "<%= a.eql?(b) %>", "<%= [a].include?(b) %>",
        "<%= [a, b].max.size %>", "<%= [a, b].sort.size %>", "<%= [a].index(b) %>", "<%= begin; a == b; rescue => e; 0; end %>",
    };
    for (size_t i = 0; i < sizeof src / sizeof *src; i++) {
        char name[64], t[256];
        snprintf(name, sizeof name, "erb deep compare %zu", i);
        snprintf(t, sizeof t, "<%% a = []; 1001.times { a = [a] }; b = []; 1001.times { b = [b] } %%>%s", src[i]);
        expect(name, TPL_SYNTAX_ERB, rep("", t, 1, ""), lim, NULL, TPL_ERR_LIMIT, "(tpl compares containers nested at most");
    }
}

/* State keys chosen to collide in the key set that shares equal keys while a state loads (session
 * 29: FNV-1a and linear probing; 120,000 such keys took 14.8 s, 60,000 3.7 s: quadratic): the walk is bounded, so
 * the load stays linear. The keys are found by the same hash as runtime/api.c's. */
static uint32_t fnv_key_hash(const char *k, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)k[i]) * 16777619u;
    return h ^ (h >> 15);
}

static void test_state_colliding_keys(void)
{
    enum { N = 60000 }; /* (the set ends at 131,072 slots: keys whose slot is below 512 collide there) */
    size_t cap = (size_t)N * 24 + 64, len = 0;
    char *s = malloc(cap);
    if (!s) abort();
    len += (size_t)sprintf(s, "{\"l\": [");
    int c = 0;
    for (unsigned long i = 0; c < N; i++) {
        char b[32];
        int n = sprintf(b, "k%lu", i);
        if ((fnv_key_hash(b, (size_t)n) & (131072 - 1)) >= 512) continue;
        len += (size_t)sprintf(s + len, "%s{\"%s\": 1}", c ? "," : "", b);
        c++;
    }
    strcpy(s + len, "]}");
    expect("state of colliding keys", J, rep("", "{{ l|length }}", 1, ""), (tpl_limits){ .fuel = 0 }, s, 0, "60000");
    free(s);
}

/* Adjacent string literals ("a" "b" ... in Jinja and ERB) are joined once where the literal
 * ends: joined at each step, the compile arena held every prefix (40,000 literals: ~800 MB, so
 * this 32 MiB compile budget failed) and the copies took seconds. */
static void test_adjacent_literals(void)
{
    const tpl_syntax syn[2] = { J, E };
    const char *pre[2] = { "{{ (\"a\" ", "<%= (\"a\" " }, *suf[2] = { ")|length }}", ").size %>" };
    for (int k = 0; k < 2; k++) {
        char *src = rep(pre[k], k ? "'b' " : "\"b\" ", 40000, suf[k]);
        tpl_options o;
        memset(&o, 0, sizeof o);
        o.syntax = syn[k];
        o.max_compile_memory = 32 << 20;
        tpl_program *p = NULL;
        tpl_error err;
        memset(&err, 0, sizeof err);
        clock_t t0 = clock();
        bool ok = tpl_compile("adjacent", src, strlen(src), &o, &p, &err) == TPL_OK;
        const char *out = NULL;
        size_t n = 0;
        tpl_render *r = ok ? tpl_render_new(NULL) : NULL;
        ok = ok && r && tpl_render_run(r, p, &out, &n) == TPL_OK && n == 5 && memcmp(out, "40001", 5) == 0;
        double cpu = (double)(clock() - t0) / CLOCKS_PER_SEC;
        ok = ok && cpu <= MAX_CPU;
        printf("%-28s %6.3f s  %s\n", k ? "40k adjacent literals (ERB)" : "40k adjacent literals", cpu, ok ? "ok" : "FAIL");
        if (ok) passed++;
        else failed++, printf("  got: %s\n", err.message ? err.message : out ? out : "?");
        tpl_error_clear(&err);
        if (r) tpl_render_free(r);
        tpl_program_free(p);
        free(src);
    }
}

/* A closure closes over only the slots it reads (tpl_program.cl_need), not a copy of its whole
 * frame: 50,000 calls of a macro with 60 sets that makes a macro (closed at each return; 59 MB
 * when every return copied the frame) stay within 16 MiB, the stored ones still reading theirs. */
static void test_closure_copies(void)
{
    tpl_limits lim = { .fuel = 100000000, .max_memory = 16 << 20 };
    const char *tail = "{% macro inner() %}{{ i }}-{{ a3 }}{% macro deep() %}{{ i }}{{ a59 }}{% endmacro %}{{ deep() }}"
                       "{% endmacro %}{% set ns.l = ns.l + [inner] if i % 25000 == 0 else ns.l %}{% endmacro %}"
                       "{% set ns = namespace(l=[]) %}{% for i in range(50000) %}{{ outer(i) }}{% endfor %}"
                       "{% for f in ns.l %}[{{ f() }}]{% endfor %}";
    char *src = malloc(60 * 32 + strlen(tail) + 64);
    if (!src) abort();
    size_t len = (size_t)sprintf(src, "{%% macro outer(i) %%}");
    for (int i = 0; i < 60; i++) len += (size_t)sprintf(src + len, "{%% set a%d = %d %%}", i, i);
    strcpy(src + len, tail);
    expect("jinja 50,000 closed frames", J, src, lim, NULL, 0, "[0-3059][25000-32500059]");
}

/* Compiles src (owned; freed here): the compile must fail with a message containing want, located
 * at a line, within MAX_CPU seconds of CPU time. */
static void expect_compile_error(const char *name, tpl_syntax syn, char *src, const char *want)
{
    tpl_options o;
    memset(&o, 0, sizeof o);
    o.syntax = syn;
    tpl_program *p = NULL;
    tpl_error err;
    memset(&err, 0, sizeof err);
    clock_t t0 = clock();
    tpl_status st = tpl_compile(name, src, strlen(src), &o, &p, &err);
    double cpu = (double)(clock() - t0) / CLOCKS_PER_SEC;
    bool ok = st != TPL_OK && err.message && strstr(err.message, want) && err.line > 0 && cpu <= MAX_CPU;
    printf("%-28s %6.3f s  %s\n", name, cpu, ok ? "ok" : "FAIL");
    if (ok) passed++;
    else failed++, printf("  want: %s\n  got:  status %d, %s, %.2f s of CPU\n", want, (int)st, err.message ? err.message : "(compiled)", cpu);
    tpl_error_clear(&err);
    tpl_program_free(p);
    free(src);
}

/* Blocks compiled in place (session 41): self.NAME() and super() compile the block's body where
 * they call it, so 22 blocks each calling the one before twice (self.b20() twice in b21, ...)
 * made 2^21 copies: 9.7 s of compile (release build) and 99 MB before "template too large". The
 * copies nested in a copy are bounded (TPL_NESTED_COPY_MAX words): a located error at once. 12
 * such blocks (4,095 copies' output) still render. */
static char *self_chain(int n)
{
    char *s = malloc((size_t)n * 96 + 64);
    if (!s) abort();
    size_t k = (size_t)sprintf(s, "{%% block b0 %%}x{%% endblock %%}");
    for (int i = 1; i < n; i++)
        k += (size_t)sprintf(s + k, "{%% block b%d %%}{{ self.b%d() }}{{ self.b%d() }}{%% endblock %%}", i, i - 1, i - 1);
    return s;
}

static void test_nested_copies(void)
{
    expect_compile_error("jinja self.b() copies 2^21", J, self_chain(22), "compile more than 262144 words of copies");
    char want[4096];
    memset(want, 'x', 4095);
    want[4095] = 0;
    tpl_limits lim = { .fuel = 10000000 };
    expect("jinja self.b() copies 2^11", J, self_chain(12), lim, NULL, 0, want);
}

/* "a0,a1,...,a(n-1)": a malloc'd list of n names */
static char *names(int n, const char *sep)
{
    size_t ls = strlen(sep);
    char *s = malloc((size_t)n * (12 + ls) + 1);
    if (!s) abort();
    size_t k = 0;
    for (int i = 0; i < n; i++) k += (size_t)sprintf(s + k, "%sa%d", i ? sep : "", i);
    return s;
}

static char *wrap(const char *prefix, char *middle, const char *suffix)
{
    char *s = rep(prefix, middle, 1, suffix);
    free(middle);
    return s;
}

/* Long lists of names (session 37): Jinja's parser checked "non-default argument follows default
 * argument" against every earlier parameter, and ERB's lexer scanned the rest of an `a, b, c` run
 * for a multiple assignment's `=` at every name of it, so a macro, call block or lambda of 100,000
 * parameters, or an ERB array or call of 50,000 names, compiled for minutes (quadratic). Now
 * linear; a macro or call block takes at most 255 parameters (what a call can pass), as an ERB
 * block or lambda 64 and a def 255. */
static void test_long_name_lists(void)
{
    expect_compile_error("jinja macro 100000 params", J, wrap("{% macro m(", names(100000, ","), ") %}{% endmacro %}{{ m() }}"),
                         "too many parameters (more than 255)");
    expect_compile_error("jinja call block 100000", J, wrap("{% call(", names(100000, ","), ") m() %}{% endcall %}"),
                         "too many parameters (more than 255)");
    expect_compile_error("jinja macro defaults", J, wrap("{% macro m(x=1, ", names(100000, ","), ") %}{% endmacro %}"),
                         "non-default argument follows default argument");
    expect_compile_error("erb lambda 100000 params", E, wrap("<% f = ->(", names(100000, ", "), ") { 1 } %><%= 1 %>"),
                         "too many block parameters");
    tpl_limits lim = { .fuel = 1000000 };
    expect("jinja macro 255 params", J, wrap("{% macro m(", names(255, ","), ") %}{{ a0 }}{{ a254 }}|{% endmacro %}{{ m(1) }}"),
           lim, NULL, 0, "1|");
    expect("erb array of 50000 names", E, wrap("<% ", names(50000, ", "), " = 1 %><%= a0.inspect %><%= a49999.inspect %>"),
           lim, NULL, 0, "1nil");
    expect("erb 50000 names unassigned", E, wrap("<%= [", names(50000, ", "), "].size %>"), lim, NULL, TPL_ERR_UNDEFINED,
           "undefined local variable or method `a0'");
}

/* did_you_mean's work is bounded by the fuel: Hash#fetch's KeyError compares the key asked with
 * every key of the Hash (Jaro-Winkler, then Levenshtein), each comparison up to the product of
 * the two lengths: 3,000 keys of 2,000 characters took 5 s of CPU (5,000 characters 20 s), now
 * the fuel error; the words kept were ordered by an insertion sort, quadratic in their number
 * (200,000 like keys: 8 s), now n log n. A long method name still gets its NoMethodError. */
static char *dym_state(int nkeys, int pad, const char *key_fmt, const char *q)
{
    size_t cap = (size_t)nkeys * (size_t)(pad + 40) + strlen(q) + 64, n = 0;
    char *s = malloc(cap);
    if (!s) abort();
    n += (size_t)snprintf(s + n, cap - n, "{\"q\": \"%s\", \"h\": {", q);
    for (int i = 0; i < nkeys; i++) {
        n += (size_t)snprintf(s + n, cap - n, "%s\"", i ? ", " : "");
        n += (size_t)snprintf(s + n, cap - n, key_fmt, i);
        for (int k = 0; k < pad; k++) s[n++] = 'x';
        n += (size_t)snprintf(s + n, cap - n, "\": %d", i);
    }
    snprintf(s + n, cap - n, "}}");
    return s;
}

static void test_did_you_mean(void)
{
    tpl_limits lim = { .fuel = 4000000 };
    char *q = rep("y", "y", 1999, "");
    char *st = dym_state(3000, 2000, "k%05d", q);
    expect("erb KeyError long keys", E, rep("<%= h.fetch(q) %>", "", 0, ""), lim, st, TPL_ERR_LIMIT, FUEL);
    free(st);
    free(q);
    st = dym_state(120000, 0, "abcdefgh%d", "abcdefgh");
    tpl_limits big = { .fuel = 200000000 };
    expect("erb KeyError many like keys", E, rep("<%= h.fetch(q) %>", "", 0, ""), big, st, TPL_ERR_TYPE,
           "KeyError whose did_you_mean suggestions tpl does not write");
    free(st);
    tpl_limits dflt = { .fuel = 20000000 };   /* (the default fuel) */
    expect("erb NoMethodError long name", E, rep("<%= 1.send((\"z\" * 100000).to_sym) rescue 5 %>", "", 0, ""), dflt, NULL,
           0, "5");
}

/* Array#cycle(n) without a block: n * len overflowed its check (cycle(2**62) of 4 items is 2^64
 * items, 0 in 64 bits: the list was made for none and written past, a segfault), and an empty
 * array looped n times over nothing ([].cycle(10**18).to_a hung; Ruby answers [] at once). */
static void test_cycle_count(void)
{
    tpl_limits lim = { .fuel = 1000000 };
    expect("erb cycle(2**62) overflow", E, rep("<%= [1, 2, 3, 4].cycle(2**62).to_a.size %>", "", 0, ""), lim, NULL,
           TPL_ERR_LIMIT, "array too long");
    expect("erb [].cycle(10**18)", E, rep("<%= [].cycle(10**18).to_a.inspect %>", "", 0, ""), lim, NULL, 0, "[]");
    expect("erb cycle(3)", E, rep("<%= [1, 2].cycle(3).to_a.inspect %>", "", 0, ""), lim, NULL, 0, "[1, 2, 1, 2, 1, 2]");
}

/* tpl_compile_all (tplc lint) compiled the whole template again after each error: 200,000 unknown
 * filters in 3.4 MB took 100 compiles, 5 s of CPU (release). The retries stop after 32 MiB of
 * source: the first errors, in bounded time. */
static void test_lint_budget(void)
{
    char *src = rep("", "{{ x|nofilter }}", 200000, "");
    tpl_options o;
    memset(&o, 0, sizeof o);
    o.syntax = J;
    tpl_error errs[100];
    memset(errs, 0, sizeof errs);
    clock_t t0 = clock();
    size_t n = tpl_compile_all("lint.jinja", src, strlen(src), &o, NULL, errs, 100);
    double cpu = (double)(clock() - t0) / CLOCKS_PER_SEC;
    bool ok = n >= 2 && n < 100 && errs[0].line == 1 && errs[0].message && strstr(errs[0].message, "No filter named 'nofilter'") &&
              cpu <= MAX_CPU_LARGE;
    printf("%-28s %6.3f s  %s\n", "lint 200000 unknown filters", cpu, ok ? "ok" : "FAIL");
    if (ok) passed++;
    else failed++, printf("  got: %zu errors, %.2f s of CPU\n", n, cpu);
    for (size_t i = 0; i < n && i < 100; i++) tpl_error_clear(&errs[i]);
    free(src);
    /* a small template still gets every error */
    src = rep("", "{{ x|nofilter }}\n", 150, "");
    n = tpl_compile_all("lint.jinja", src, strlen(src), &o, NULL, errs, 100);
    ok = n == 100 && errs[99].line == 100;
    printf("%-28s %6s    %s\n", "lint 150 errors, small", "", ok ? "ok" : "FAIL");
    if (ok) passed++;
    else failed++, printf("  got: %zu errors\n", n);
    for (size_t i = 0; i < n && i < 100; i++) tpl_error_clear(&errs[i]);
    free(src);
}

int main(void)
{
    test_shared_structure();
    test_substring_search();
    test_remembers();
    test_tr();
    test_frames();
    test_memory_limit();
    test_state_memory();
    test_shared_memory_budget();
    test_bigint();
    test_state_long_int();
    test_gsub();
    test_c_stack();
    test_small_thread_stack();
    test_list_limit();
    test_many_defs();
    test_str_to_big_int();
    test_error_window();
    test_error_window_repeated();
    test_huge_width();
    test_state_huge_int();
    test_erb_deep_print();
    test_erb_depth_unrescued();
    test_erb_deep_compare();
    test_state_colliding_keys();
    test_adjacent_literals();
    test_closure_copies();
    test_long_name_lists();
    test_lint_budget();
    test_did_you_mean();
    test_cycle_count();
    test_nested_copies();
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
