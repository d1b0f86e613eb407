/* Precompiled programs (issue 6): .tplb round trips, static programs, the verifier against
 * hostile bytes, and the render limits.
 *
 *  - round trip: compile → save → load renders the same text; the reads-set; stripped source.
 *  - static: a program loaded with tpl_program_load_static over the compiled tables.
 *  - fuzz: 10,000 mutated .tplb files (bit flips, byte writes, truncations, splices, insertions,
 *    deletions; half with the length and CRC fixed up so the parser and verifier see them), and
 *    3,000 programs with mutated code words; each must be rejected or render without a crash
 *    (run under ASan/UBSan by tests/check.sh). Deterministic seed; TPLB_FUZZ_SEED overrides it.
 *  - limits: fuel, call depth, output bytes and arena memory each end a render with
 *    TPL_ERR_LIMIT.
 * Prints "N passed, N failed"; exit status 1 on any failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tpl.h"
#include "tpl_static.h"
#include "runtime/program.h"
#include "runtime/library.h"
#include "runtime/crc32.h"

static int npass, nfail;
#define CHECK(cond) do { if (cond) npass++; else { nfail++; fprintf(stderr, "test_tplb.c:%d: FAIL %s\n", __LINE__, #cond); } } while (0)

static const char *const TEMPLATES[] = {
    "Hello {{ name }}!\n{% for x in items %}[{{ loop.index }}:{{ x|upper }}]{% else %}none{% endfor %}\n",
    "{% macro row(a, b=2) %}<{{ a }}|{{ b }}|{{ varargs|length }}|{{ kwargs }}>{% endmacro %}"
    "{{ row(1) }}{{ row(1, b=3) }}{{ row(1, 2, 3, z=4) }}"
    "{% call(x) row('c') %}inner {{ x }}{% endcall %}",
    "{% set ns = namespace(n=0) %}{% for i in range(5) %}{% set ns.n = ns.n + i %}{% endfor %}"
    "{{ ns.n }} {{ (1, 2, 3)|join(',') }} {{ {'a': 1, 'b': [1, 2.5, none, true]}|tojson }} "
    "{{ 'x' if name else 'y' }} {{ name is defined and items|length > 1 or false }}"
    "{% if name == 'W' %}{{ name ~ '!' ~ 3 }}{% elif name %}?{% endif %}{{ items[1:] }} {{ -3 // 2 }} {{ 2 ** 10 }}",
    "{% for a, b in pairs %}{{ a }}={{ b }}{% if not loop.last %}, {% endif %}{% endfor %}"
    "{% filter upper %}shout {{ name }}{% endfilter %}{% set block %}cap{{ 1 }}{% endset %}{{ block }}"
    "{{ items|map('upper')|list }} {{ items|select('equalto', 'a')|list }} {{ name.lower() }}",
    "{% macro outer(n) %}{% macro inner() %}{{ n }}{% endmacro %}{{ inner() }}{% endmacro %}{{ outer(5) }}"
    "{% for x in [[1, [2]], [3]] recursive %}({{ x if x is number else loop(x) }}){% endfor %}"
    "{{ remembers('likes tea') }} {{ call.channel }} {{ undefined_name|default('dflt') }}",
    "{% for x in items + [1] %}{% if x == 'a' %}A{% elif x == 'b' or 'c' == x %}BC{% else %}-{% endif %}{% endfor %}",
};
#define NTEMPLATES (sizeof TEMPLATES / sizeof *TEMPLATES)
static const char STATE[] = "{\"name\": \"W\", \"items\": [\"a\", \"b\", \"c\"], \"pairs\": [[1, 2], [3, 4]]}";

static tpl_program *compile(const char *src, const tpl_options *opts)
{
    tpl_program *p = NULL;
    tpl_error err = { 0 };
    if (tpl_compile("t.jinja", src, strlen(src), opts, &p, &err) != TPL_OK) {
        fprintf(stderr, "compile failed: %s\n", err.message ? err.message : "?");
        tpl_error_clear(&err);
        return NULL;
    }
    return p;
}

/* Renders p; returns a malloc'd copy of the output, or NULL with *st set. */
static char *render(tpl_render *r, const tpl_program *p, tpl_status *st)
{
    const char *out;
    size_t n;
    *st = tpl_render_run(r, p, &out, &n);
    if (*st != TPL_OK) return NULL;
    char *s = malloc(n + 1);
    memcpy(s, out, n + 1);
    return s;
}

static tpl_render *new_render(const tpl_limits *l)
{
    tpl_render *r = tpl_render_new(l);
    if (!r) abort();
    if (tpl_render_set_state_json(r, STATE, strlen(STATE)) != TPL_OK) abort();
    tpl_render_add_fact(r, "the caller likes tea", 20);
    return r;
}

/* Whether p and q (NULL: false) render the same, each in a fresh render context. */
static bool same_output(const tpl_program *p, const tpl_program *q)
{
    tpl_render *r = new_render(NULL);
    tpl_status s1, s2;
    char *a = render(r, p, &s1), *b = q ? render(r, q, &s2) : NULL;
    bool same = a && b && strcmp(a, b) == 0;
    free(a);
    free(b);
    tpl_render_free(r);
    return same;
}

static void test_round_trip(void)
{
    tpl_render *r = new_render(NULL);
    for (size_t i = 0; i < NTEMPLATES; i++) {
        tpl_program *p = compile(TEMPLATES[i], NULL);
        CHECK(p != NULL);
        if (!p) continue;
        tpl_status st1, st2;
        char *a = render(r, p, &st1);
        if (st1 != TPL_OK) fprintf(stderr, "template %zu: %s\n", i, tpl_render_error(r)->message);
        CHECK(st1 == TPL_OK);
        for (unsigned flags = 0; flags <= TPL_SAVE_STRIP_SOURCE; flags++) {
            void *bytes;
            size_t len;
            CHECK(tpl_program_save(p, flags, &bytes, &len) == TPL_OK);
            CHECK(tpl_is_tplb(bytes, len));
            tpl_program *q = NULL;
            tpl_error err = { 0 };
            tpl_status ls = tpl_program_load("t.tplb", bytes, len, &q, &err);
            if (ls != TPL_OK) fprintf(stderr, "template %zu: load: %s\n", i, err.message);
            CHECK(ls == TPL_OK);
            tpl_error_clear(&err);
            free(bytes); /* the program owns copies */
            if (!q) continue;
            char *b = render(r, q, &st2);
            CHECK(st2 == st1);
            CHECK(a && b && strcmp(a, b) == 0);
            CHECK(tpl_program_source_hash(q) == tpl_program_source_hash(p));
            CHECK(tpl_program_reads(q, NULL, NULL, 0) == tpl_program_reads(p, NULL, NULL, 0));
            free(b);
            tpl_program_free(q);
        }
        free(a);
        tpl_program_free(p);
    }
    /* the reads-set of the first template: name, items */
    tpl_program *p = compile(TEMPLATES[0], NULL);
    const char *names[4];
    size_t lens[4];
    size_t n = tpl_program_reads(p, names, lens, 4);
    CHECK(n == 2);
    CHECK(n == 2 && lens[0] == 4 && memcmp(names[0], "name", 4) == 0 && lens[1] == 5 && memcmp(names[1], "items", 5) == 0);
    tpl_program_free(p);
    /* every syntax's state reads; a local variable counts where it may not be assigned yet */
    static const struct { tpl_syntax syntax; const char *src, *want; } reads[] = {
        { TPL_SYNTAX_JINJA, "{% if c %}{% set y = 1 %}{% endif %}{{ y }}{% set z = 2 %}{{ z }}", "c,y" },
        { TPL_SYNTAX_JINJA, "{% set s = ', ' %}{% for x in xs %}{{ s }}{{ x }}{{ loop.index }}{% endfor %}", "xs" },
        { TPL_SYNTAX_JINJA, "{% macro m(a, b=k) %}{{ a }}{{ b }}{{ c }}{% endmacro %}{{ m(1) }}", "k,c" },
        { TPL_SYNTAX_ERB, "<%= a %><%= @b %><% x = 1 %><%= x %><% [1].each do |y| %><%= y %><%= x %><% end %>", "a,b" },
        { TPL_SYNTAX_FMT, "Hi {name}, {user.city}!", "name,user" },
    };
    for (size_t i = 0; i < sizeof reads / sizeof *reads; i++) {
        tpl_options ro = { 0 };
        ro.syntax = reads[i].syntax;
        tpl_program *rp = compile(reads[i].src, &ro);
        char got[64] = "";
        const char *rn[8];
        size_t rl[8], nr = rp ? tpl_program_reads(rp, rn, rl, 8) : 0;
        for (size_t j = 0; j < nr && j < 8; j++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%.*s", j ? "," : "", (int)rl[j], rn[j]);
        if (strcmp(got, reads[i].want) != 0) fprintf(stderr, "reads of %s: got '%s'\n", reads[i].src, got);
        CHECK(strcmp(got, reads[i].want) == 0);
        tpl_program_free(rp);
    }
    p = compile(TEMPLATES[0], NULL);
    /* options survive the round trip */
    tpl_options o = { 0 };
    tpl_options_profile(&o, TPL_SYNTAX_JINJA, "pinecall");
    tpl_program *ps = compile("{{ name }}\n", &o);
    void *bytes;
    size_t len;
    tpl_program_save(ps, 0, &bytes, &len);
    tpl_program *q = NULL;
    CHECK(tpl_program_load(NULL, bytes, len, &q, NULL) == TPL_OK);
    CHECK(q && tpl_program_options(q)->strict && tpl_program_options(q)->tidy && tpl_program_options(q)->trim_blocks);
    /* a runtime error of a loaded program has the same location and source line */
    tpl_program *pe = compile("line one\n{{ 1 // 0 }}\n", NULL);
    void *eb;
    size_t el;
    tpl_program_save(pe, 0, &eb, &el);
    tpl_program *qe = NULL;
    CHECK(tpl_program_load(NULL, eb, el, &qe, NULL) == TPL_OK);
    tpl_status st;
    CHECK(render(r, qe, &st) == NULL && st == TPL_ERR_TYPE);
    CHECK(tpl_render_error(r)->line == 2 && tpl_render_error(r)->source_line &&
          strcmp(tpl_render_error(r)->source_line, "{{ 1 // 0 }}") == 0);
    /* version and checksum are checked */
    ((unsigned char *)eb)[8] = 9;
    tpl_error err = { 0 };
    tpl_program *bad = NULL;
    CHECK(tpl_program_load("x.tplb", eb, el, &bad, &err) == TPL_ERR_CORRUPT && !bad);
    CHECK(err.message && strstr(err.message, "version"));
    tpl_error_clear(&err);
    ((unsigned char *)eb)[8] = TPL_TPLB_VERSION;
    ((unsigned char *)eb)[el - 1] ^= 1;
    CHECK(tpl_program_load("x.tplb", eb, el, &bad, &err) == TPL_ERR_CORRUPT && !bad);
    CHECK(err.message && strstr(err.message, "checksum"));
    tpl_error_clear(&err);
    free(eb);
    free(bytes);
    tpl_program_free(pe);
    tpl_program_free(qe);
    tpl_program_free(q);
    tpl_program_free(ps);
    tpl_program_free(p);
    tpl_render_free(r);
}

/* A static program over a compiled program's tables (the layout --emit c generates); its span
 * runs are decoded into spans_out (up to 4,096 runs; the compiled program keeps them compact). */
static tpl_static_span spans_out[4096];
/* Every builtin of the library by name, in id order (so the code's ids are its indexes). */
static tpl_static_builtin builtins_all[4096];
static tpl_static_program static_of(const tpl_program *p)
{
    uint32_t nb = 0;
    for (const tpl_builtin_info *bi; nb < 4096 && (bi = tpl_lib_builtin((int)nb)) != NULL; nb++)
        builtins_all[nb] = (tpl_static_builtin){ bi->kind, (uint32_t)bi->namelen, bi->name };
    tpl_loc_it it;
    tpl_loc_it_init(&it, p);
    size_t ns = 0;
    for (tpl_span s; ns < 4096 && tpl_span_next(&it, &s); ns++) spans_out[ns] = (tpl_static_span){ s.pc, s.line, s.col, s.file };
    CHECK(ns == p->nspans);
    tpl_static_program sp = { 0 };
    sp.magic = TPL_STATIC_MAGIC;
    sp.version = TPL_TPLB_VERSION;
    sp.name = p->name;
    sp.source = p->source;
    sp.source_len = p->source_len;
    sp.nslots = p->nslots;
    sp.max_stack = p->max_stack;
    sp.code = p->code;
    sp.ncode = p->ncode;
    sp.consts = (const tpl_static_value *)(const void *)p->consts;
    sp.nconsts = p->nconsts;
    sp.names = (const tpl_static_name *)(const void *)p->names;
    sp.nnames = p->nnames;
    sp.spans = spans_out;
    sp.nspans = ns;
    sp.macros = (const tpl_static_macro *)(const void *)p->macros;
    sp.nmacros = p->nmacros;
    sp.builtins = builtins_all;
    sp.nbuiltins = nb;
    return sp;
}

static void test_static(void)
{
    tpl_program *p = compile(TEMPLATES[1], NULL);
    tpl_static_program sp = static_of(p);
    tpl_program *q = NULL;
    CHECK(tpl_program_load_static(&sp, &q, NULL) == TPL_OK);
    CHECK(same_output(p, q));
    /* the code is copied with the builtins resolved by name: here the same ids */
    CHECK(q && q->ncode == p->ncode && memcmp(q->code, p->code, p->ncode * sizeof *p->code) == 0);
    tpl_program_free(q);
    sp.version = 99;
    tpl_error err = { 0 };
    CHECK(tpl_program_load_static(&sp, &q, &err) == TPL_ERR_CORRUPT);
    tpl_error_clear(&err);
    tpl_program_free(p);
}

/* --emit c names the builtins the code calls (tpl_static_program.builtins; the code's builtin
 * operands index that table), so a generated file does not depend on builtins.def's order: a
 * table in any order loads with this library's ids; an unknown name or a file without the table
 * (generated before builtins were named) is refused. */
static void test_static_builtins(void)
{
    tpl_program *p = compile("{{ name|upper }} {{ items|join('-') }} {{ 3 is odd }} {{ range(2)|list }}", NULL);
    uint32_t *code = malloc(p->ncode * sizeof *code + 1);
    memcpy(code, p->code, p->ncode * sizeof *code);
    /* a table of the code's builtins in reverse first-use order, the code's operands its indexes */
    tpl_static_builtin table[16];
    uint32_t ids[16], nt = 0;
    for (size_t pass = 0; pass < 2; pass++)
        for (size_t pc = 0; pc < p->ncode;) {
            const tpl_opinfo *oi = &tpl_opinfo_table[TPL_INSN_OP(p->code[pc])];
            for (size_t k = 0; oi->fmt[k] && k <= oi->extra; k++) {
                if (oi->fmt[k] != 'b') continue;
                uint32_t id = k ? p->code[pc + k] : TPL_INSN_A(p->code[pc]), at = 0;
                while (at < nt && ids[at] != id) at++;
                if (pass == 0 && at == nt && nt < 16) ids[nt++] = id;
                if (pass == 1) {
                    uint32_t ix = nt - 1 - at;
                    code[pc + k] = k ? ix : TPL_INSN(TPL_INSN_OP(code[pc]), ix);
                }
            }
            pc += 1 + (size_t)oi->extra;
        }
    CHECK(nt >= 4);
    for (uint32_t i = 0; i < nt; i++) {
        const tpl_builtin_info *bi = tpl_lib_builtin((int)ids[nt - 1 - i]);
        table[i] = (tpl_static_builtin){ bi->kind, (uint32_t)bi->namelen, bi->name };
    }
    tpl_static_program sp = static_of(p);
    sp.code = code;
    sp.builtins = table;
    sp.nbuiltins = nt;
    tpl_program *q = NULL;
    CHECK(tpl_program_load_static(&sp, &q, NULL) == TPL_OK);
    CHECK(same_output(p, q));
    CHECK(q && memcmp(q->code, p->code, p->ncode * sizeof *code) == 0); /* this library's ids again */
    tpl_program_free(q);
    /* an unknown name, a name of another kind, no name, no table: refused */
    for (int k = 0; k < 4; k++) {
        tpl_static_builtin bad = table[0];
        if (k == 0) bad.name = "nosuchfilter", bad.len = 12;
        if (k == 1) bad.kind = 255;
        if (k == 2) bad.name = NULL;
        table[0] = bad;
        if (k == 3) sp.builtins = NULL;
        tpl_error err = { 0 };
        q = NULL;
        CHECK(tpl_program_load_static(&sp, &q, &err) == TPL_ERR_CORRUPT && q == NULL);
        CHECK(err.message && (k == 3 ? strstr(err.message, "regenerate") != NULL
                                     : strstr(err.message, k == 2 ? "without a name" : "unknown builtin") != NULL));
        if (k == 0) CHECK(err.message && strstr(err.message, "'nosuchfilter'") != NULL);
        tpl_error_clear(&err);
        table[0] = (tpl_static_builtin){ tpl_lib_builtin((int)ids[nt - 1])->kind,
                                         (uint32_t)tpl_lib_builtin((int)ids[nt - 1])->namelen,
                                         tpl_lib_builtin((int)ids[nt - 1])->name };
    }
    free(code);
    tpl_program_free(p);
}

/* Loads a patched copy of a program: case 0 (unpatched) loads and renders `want`; any other case
 * is refused as corrupt with a message naming `op`. */
static void load_patched(const tpl_static_program *sp, int k, const char *op, const char *want)
{
    tpl_program *q = NULL;
    tpl_error err = { 0 };
    tpl_status st = tpl_program_load_static(sp, &q, &err);
    CHECK(k == 0 ? st == TPL_OK : st == TPL_ERR_CORRUPT);
    if (k && !(err.message && strstr(err.message, op))) {
        fprintf(stderr, "case %d: %s\n", k, err.message ? err.message : "(none)");
        nfail++;
    }
    tpl_error_clear(&err);
    if (k == 0 && q) {
        tpl_render *r = new_render(NULL);
        tpl_status s1;
        char *out = render(r, q, &s1);
        CHECK(out && strcmp(out, want) == 0);
        free(out);
        tpl_render_free(r);
    }
    tpl_program_free(q);
}

/* SWITCH_STR's jump table (read by the VM without dispatching its JUMPs) is checked on load. */
static void test_switch_table(void)
{
    tpl_program *p = compile(TEMPLATES[NTEMPLATES - 1], NULL);
    size_t sw = 0;
    while (sw < p->ncode && TPL_INSN_OP(p->code[sw]) != TPL_OP_SWITCH_STR) sw++;
    CHECK(sw < p->ncode);
    if (sw == p->ncode) { tpl_program_free(p); return; }
    uint32_t *code = malloc(p->ncode * sizeof *code);
    tpl_static_program sp = static_of(p);
    sp.code = code;
    /* as compiled: loads; a table entry that is no JUMP, or a constant that is no string tuple:
     * rejected */
    for (int k = 0; k < 4; k++) {
        memcpy(code, p->code, p->ncode * sizeof *code);
        uint32_t kk = TPL_INSN_A(p->code[sw]);
        if (k == 1) code[sw + 2] = TPL_INSN(TPL_OP_POP, 0);
        if (k == 2) code[sw + 1] = TPL_INSN(TPL_OP_JF_PY, TPL_INSN_A(code[sw + 1]));
        if (k == 3) {
            for (kk = 0; kk < p->nconsts && p->consts[kk].type != TPL_T_STR; kk++) {}
            code[sw] = TPL_INSN(TPL_OP_SWITCH_STR, kk);
        }
        load_patched(&sp, k, "SWITCH_STR", "ABCBC-");
    }
    free(code);
    tpl_program_free(p);
}

/* PRINT_ADDS_K's tuple (string literals the VM copies unchecked, a None per value it pops) is
 * checked on load. */
static void test_adds_k_tuple(void)
{
    tpl_program *p = compile("{{ '<' + name + '>' }}{{ 'x' }}", NULL);
    size_t at = 0;
    while (p && at < p->ncode && TPL_INSN_OP(p->code[at]) != TPL_OP_PRINT_ADDS_K)
        at += 1 + (size_t)tpl_opinfo_table[TPL_INSN_OP(p->code[at])].extra;
    CHECK(p && at < p->ncode);
    if (!p || at >= p->ncode) { tpl_program_free(p); return; }
    uint32_t *code = malloc(p->ncode * sizeof *code);
    tpl_static_program sp = static_of(p);
    sp.code = code;
    /* as compiled: loads and renders; a count that is not the tuple's Nones, a constant that is no
     * tuple, a wrong length of the literals: rejected */
    for (int k = 0; k < 5; k++) {
        memcpy(code, p->code, p->ncode * sizeof *code);
        if (k == 4) code[at + 2]++; /* the literals' length, one more than they are */
        if (k == 1) code[at] = TPL_INSN(TPL_OP_PRINT_ADDS_K, 0);
        if (k == 2) code[at] = TPL_INSN(TPL_OP_PRINT_ADDS_K, 2);
        if (k == 3) {
            uint32_t kk = 0;
            while (kk < p->nconsts && p->consts[kk].type != TPL_T_STR) kk++;
            code[at + 1] = kk;
        }
        load_patched(&sp, k, "PRINT_ADDS_K", "<W>x");
    }
    free(code);
    tpl_program_free(p);
}

/* Superinstructions (issue 16): the peephole pass fuses where opcodes.def says, a fused program
 * renders what the same code with every superinstruction turned back into its base renders (the
 * VM's fast paths change nothing), and a superinstruction whose successors are not there is
 * refused at load. */
static void test_superinstructions(void)
{
    static const char *const src[] = {
        "{% for m in ms %}{% if m['role'] == 'user' %}U:{{ m['content'] }}{% elif m['role'] != 'bot' %}"
        "N{% endif %}{% if m['role'] == 'x' or m['role'] == 'bot' %}B{% endif %}{% endfor %}",
        "{% for m in ms %}{% if m['role'] == 'user' %}u{% elif m['role'] == 'bot' %}b{% elif m['role'] == 's' %}"
        "s{% else %}?{% endif %}{% endfor %}",
        "{% for m in ms %}{{ m.role }}{{ 'I' if m.items else '-' }}{{ m.missing }}{% set y = m['content'] %}{{ y }}{{ y | upper }}"
        "{{ [y, m.role] | join('+') }}{{ m.role | lower }}{% endfor %}{% for x in [1, 2] %}{{ x == 2 }}{% endfor %}",
        /* issue 21: state names and their keys printed (strings in one dispatch, the rest not) */
        "{{ t }}{{ n }}{{ ms|length }}{{ d.a }}{{ d.b }}{{ d.zz }}{{ t.zz }}{% if d.a %}{{ d.a | upper }}{% endif %}"
        "{% if d.zz %}Z{% endif %}{{ nope }}{% for m in ms %}{{ m.role }}{{ m.zz }};{% endfor %}",
        /* issue 21 (vm12): loop.index printed, a dict's value handed to its filter, a printed `+`
         * chain with the JUMP after it */
        "{% for m in ms %}{{ loop.index }}{{ m.role | upper }}{{ m.content | default('d') }}{{ m.zz | default('z') }}"
        "{{ m.role | join('-') }}{% set u = m.role | lower %}{{ u }}{% if m['role'] == 'user' %}"
        "{{ 'U' + (m['content'] | trim) + '.' }}{% else %}-{% endif %}{% endfor %}",
    };
    static const char state[] = "{\"ms\": [{\"role\": \"user\", \"content\": \"hi\"}, {\"role\": \"bot\", "
                                "\"content\": \"Yo\"}, {\"role\": \"s\", \"content\": \"\\u00e9t\\u00e9\"}, "
                                "{\"content\": \"none\"}], \"t\": \"T\", \"n\": 5, \"d\": {\"a\": \"A\", \"b\": 2}}";
    const uint32_t want[] = { TPL_OP_EQ_JF, TPL_OP_NE_JF, TPL_OP_EQ_JTK, TPL_OP_LOAD_SLOT_ITEM_CMP,
                              TPL_OP_LOAD_SLOT_ITEM_SWITCH, TPL_OP_LOAD_SLOT_ATTR, TPL_OP_LOAD_SLOT_ITEM,
                              TPL_OP_STORE_LOAD_SLOT, TPL_OP_FOR_NEXT_STORE, TPL_OP_FILTER_PRINT,
                              TPL_OP_LOAD_NAME_ATTR_PRINT, TPL_OP_LOAD_NAME_ATTR, TPL_OP_LOAD_NAME_PRINT,
                              TPL_OP_LOAD_SLOT_ATTR_PRINT, TPL_OP_LOAD_SLOT_ATTR_FILTER,
                              TPL_OP_LOAD_SLOT_ATTR_CONST_FILTER, TPL_OP_LOAD_SLOT_ITEM_FILTER,
                              TPL_OP_PRINT_ADDS_K_JUMP, TPL_OP_CALL_METHOD_RB_PRINT, TPL_OP_LOAD_SLOT_ITEM_RB,
                              TPL_OP_LOAD_IVAR_ITEM_RB_PRINT, TPL_OP_LOAD_IVAR_ITEM_RB_JF, TPL_OP_LOAD_IVAR_RB_PRINT,
                              TPL_OP_LOAD_IVAR_RB_JF, TPL_OP_LOAD_IVAR_RB_SWITCH, TPL_OP_LOAD_SLOT_ITEM_RB_PRINT,
                              TPL_OP_TEXT_IVAR_PRINT_RB, TPL_OP_TEXT_IVAR_ITEM_PRINT_RB, TPL_OP_TEXT_SLOT_ITEM_RB_PRINT,
                              TPL_OP_CONST_CALL_NAME_JF };
    /* issue 20 (rb19): ERB method calls printed (a String result, an Integer, a call with fewer
     * arguments than parameters, a KeyError's default), a Hash's item of a block variable (held,
     * missing: nil) */
    static const char *const erb_src[] = {
        "<% ms.each do |m| %><%= m[\"content\"] %>|<%= m[\"zz\"] %>|<%= m[\"content\"].upcase %>|"
        "<%= m.fetch(\"content\", \"d\") %>|<%= m.fetch(\"zz\", \"d\") %>|<%= m.fetch(\"content\") %>|"
        "<%= m.keys.length %>|<%= [m[\"content\"], \"x\"].join(\"+\") %>|<%= m[\"role\"].inspect %>;<% end %>",
        /* issue 20 (erbperf): the state's @ivars and their Hashes' items printed and tested, each
         * read twice (the second read takes the fused fast path: the render has found it); a
         * String, an Integer, a Hash, a missing key, a missing @ivar; a block variable's String,
         * missing and Integer items after text; remembers of a phrase asked twice */
        "<%= @t %><%= @t %>|<%= @n %><%= @n %>|<%= @d[\"a\"] %>;<%= @d[\"a\"] %>|<%= @d[\"b\"] %>;<%= @d[\"b\"] %>|"
        "<%= @d[\"zz\"] %>;<%= @d[\"zz\"] %>|<%= @zz %>;<%= @zz %>|<% if @d %>D<% end %><% if @d %>D<% end %>"
        "<% if @zz %>Z<% end %><% if @zz %>Z<% end %><% if @n %>N<% end %><% if @n %>N<% end %>"
        "<% if @d[\"a\"] %>A<% end %><% if @d[\"a\"] %>A<% end %><% if @d[\"zz\"] %>Z<% end %><% if @d[\"zz\"] %>Z<% end %>"
        "<% 2.times do %><% if @t == \"U\" %>u<% elsif @t == \"T\" %>t<% elsif @t == \"V\" %>v<% else %>?<% end %><% end %>"
        "<% if @n == \"U\" %>u<% elsif @n == \"T\" %>t<% elsif @n == \"V\" %>v<% else %>?<% end %>"
        "<% ms.each do |m| %>-<%= m[\"content\"] %>,<%= m[\"zz\"] %>:<%= m[\"role\"] %>;<% end %>"
        "<% [{\"k\" => -7}, {\"k\" => 12}].each do |h| %>:<%= h[\"k\"] %>=<%= h[\"k\"] %><% end %>"
        "<% if remembers(\"x\") %>R<% end %><% if remembers(\"x\") %>R<% end %>",
    };
    const size_t njinja = sizeof src / sizeof *src;
    bool seen[TPL_OP__COUNT] = { false };
    for (size_t t = 0; t < njinja + sizeof erb_src / sizeof *erb_src; t++) {
        tpl_options eo = { 0 };
        eo.syntax = TPL_SYNTAX_ERB;
        tpl_program *p = t < njinja ? compile(src[t], NULL) : compile(erb_src[t - njinja], &eo);
        if (!p) continue;
        uint32_t *code = malloc(p->ncode * sizeof *code);
        memcpy(code, p->code, p->ncode * sizeof *code);
        size_t fused_at = SIZE_MAX;
        for (size_t pc = 0; pc < p->ncode; pc += 1 + (size_t)tpl_opinfo_table[TPL_INSN_OP(p->code[pc])].extra) {
            uint32_t op = TPL_INSN_OP(p->code[pc]);
            seen[op] = true;
            if (tpl_op_base(op) != op) {
                code[pc] = TPL_INSN(tpl_op_base(op), TPL_INSN_A(code[pc]));
                if (op == TPL_OP_FOR_NEXT_STORE) fused_at = pc;
            }
        }
        tpl_static_program sp = static_of(p);
        sp.code = code;
        tpl_program *q = NULL;
        tpl_error err = { 0 };
        CHECK(tpl_program_load_static(&sp, &q, &err) == TPL_OK);
        tpl_error_clear(&err);
        tpl_render *r = new_render(NULL);
        CHECK(tpl_render_set_state_json(r, state, strlen(state)) == TPL_OK);
        tpl_status s1 = TPL_OK, s2 = TPL_OK;
        char *fused = render(r, p, &s1), *plain = q ? render(r, q, &s2) : NULL;
        CHECK(fused && plain && s1 == s2 && strcmp(fused, plain) == 0);
        if (!(fused && plain && strcmp(fused, plain) == 0))
            fprintf(stderr, "template %zu: fused '%s', plain '%s'\n", t, fused ? fused : "-", plain ? plain : "-");
        free(fused);
        free(plain);
        tpl_render_free(r);
        tpl_program_free(q);
        /* a FOR_NEXT_STORE whose STORE_SLOT became a POP (same stack effect): refused */
        CHECK(fused_at != SIZE_MAX || t >= njinja);
        if (fused_at != SIZE_MAX) {
            memcpy(code, p->code, p->ncode * sizeof *code);
            code[fused_at + 2] = TPL_INSN(TPL_OP_POP, 0);
            q = NULL;
            CHECK(tpl_program_load_static(&sp, &q, &err) == TPL_ERR_CORRUPT);
            CHECK(err.message && strstr(err.message, "FOR_NEXT_STORE: not followed by OP(STORE_SLOT)"));
            tpl_error_clear(&err);
            tpl_program_free(q);
        }
        free(code);
        tpl_program_free(p);
    }
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        CHECK(seen[want[i]]);
        if (!seen[want[i]]) fprintf(stderr, "superinstruction %s not chosen\n", tpl_opinfo_table[want[i]].name);
    }
}

/* ------------------------------------------------------------------ fuzz */

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Makes the header agree with the (mutated) payload: length and CRC. */
static void fix_header(unsigned char *b, size_t n)
{
    if (n < 32) return;
    uint64_t plen = n - 32;
    uint32_t crc = tpl_crc32(b + 32, n - 32);
    for (int i = 0; i < 8; i++) b[16 + i] = (unsigned char)(plen >> (8 * i));
    for (int i = 0; i < 4; i++) b[24 + i] = (unsigned char)(crc >> (8 * i));
}

typedef struct fuzz_stats { int rejected, rendered, failed_render; } fuzz_stats;

static void try_bytes(const unsigned char *b, size_t n, tpl_render *r, fuzz_stats *fs)
{
    tpl_program *p = NULL;
    tpl_error err = { 0 };
    tpl_status st = tpl_program_load("fuzz.tplb", b, n, &p, &err);
    tpl_error_clear(&err);
    if (st != TPL_OK) { fs->rejected++; return; }
    const char *out;
    size_t len;
    if (tpl_render_run(r, p, &out, &len) == TPL_OK) fs->rendered++;
    else fs->failed_render++;
    char *dis = tpl_disassemble(p);
    free(dis);
    tpl_program_free(p);
}

static void test_fuzz(void)
{
    uint64_t seed = 0x9E3779B97F4A7C15ull;
    const char *env = getenv("TPLB_FUZZ_SEED");
    if (env) seed = strtoull(env, NULL, 0) | 1;
    tpl_limits lim = { 20000, 20, 1 << 20, 16 << 20 };
    tpl_render *r = new_render(&lim);
    unsigned char *base[NTEMPLATES];
    size_t blen[NTEMPLATES];
    for (size_t i = 0; i < NTEMPLATES; i++) {
        tpl_program *p = compile(TEMPLATES[i], NULL);
        void *bytes;
        tpl_program_save(p, i % 2 ? TPL_SAVE_STRIP_SOURCE : 0, &bytes, &blen[i]);
        base[i] = bytes;
        tpl_program_free(p);
    }
    fuzz_stats fs = { 0 };
    size_t cap = 1 << 16;
    unsigned char *b = malloc(cap);
    for (int it = 0; it < 10000; it++) {
        size_t k = rnd(&seed) % NTEMPLATES, n = blen[k];
        memcpy(b, base[k], n);
        int kind = (int)(rnd(&seed) % 6);
        int rounds = 1 + (int)(rnd(&seed) % 4);
        for (int m = 0; m < rounds; m++) {
            switch (kind) {
            case 0: /* bit flips */
                for (int j = 0, f = 1 + (int)(rnd(&seed) % 8); j < f; j++) {
                    size_t at = rnd(&seed) % n;
                    b[at] ^= (unsigned char)(1u << (rnd(&seed) % 8));
                }
                break;
            case 1: /* byte writes, often small or extreme values */
                b[rnd(&seed) % n] = (unsigned char)(rnd(&seed) % 3 == 0 ? 0xFF : rnd(&seed) % 3 == 0 ? 0 : rnd(&seed));
                break;
            case 2: /* truncation */
                n = rnd(&seed) % (n + 1);
                break;
            case 3: { /* splice: a range from another file over this one */
                size_t o = rnd(&seed) % NTEMPLATES;
                size_t from = rnd(&seed) % blen[o], cnt = rnd(&seed) % (blen[o] - from + 1);
                size_t to = n ? rnd(&seed) % n : 0;
                if (to + cnt > cap) cnt = cap - to;
                memcpy(b + to, base[o] + from, cnt);
                if (to + cnt > n) n = to + cnt;
                break;
            }
            case 4: { /* insertion of random bytes */
                size_t at = n ? rnd(&seed) % n : 0, cnt = 1 + rnd(&seed) % 8;
                if (n + cnt > cap) break;
                memmove(b + at + cnt, b + at, n - at);
                for (size_t j = 0; j < cnt; j++) b[at + j] = (unsigned char)rnd(&seed);
                n += cnt;
                break;
            }
            default: { /* deletion */
                if (!n) break;
                size_t at = rnd(&seed) % n, cnt = 1 + rnd(&seed) % 8;
                if (at + cnt > n) cnt = n - at;
                memmove(b + at, b + at + cnt, n - at - cnt);
                n -= cnt;
                break;
            }
            }
            if (!n) break;
        }
        if (it % 2) fix_header(b, n);
        try_bytes(b, n, r, &fs);
    }
    /* mutated code words through the internal tables: exercises the verifier itself */
    for (int it = 0; it < 3000; it++) {
        size_t k = rnd(&seed) % NTEMPLATES;
        tpl_program *p = NULL;
        CHECK(tpl_program_load(NULL, base[k], blen[k], &p, NULL) == TPL_OK);
        if (!p) continue;
        for (int m = 0, rounds = 1 + (int)(rnd(&seed) % 3); m < rounds; m++) {
            size_t at = rnd(&seed) % p->ncode;
            switch (rnd(&seed) % 4) {
            case 0: p->code[at] ^= 1u << (rnd(&seed) % 32); break;
            case 1: p->code[at] = (p->code[at] & 0xFF) | (uint32_t)(rnd(&seed) % 64) << 8; break;
            case 2: p->code[at] = (uint32_t)(rnd(&seed) % TPL_OP__COUNT) | (p->code[at] & ~0xFFu); break;
            default:
                if (p->nmacros) p->macros[rnd(&seed) % p->nmacros].nslots = (uint16_t)(rnd(&seed) % 8);
                else p->nslots = (uint32_t)(rnd(&seed) % 8);
                break;
            }
        }
        void *bytes;
        size_t len;
        if (tpl_program_save(p, 0, &bytes, &len) == TPL_OK) {
            try_bytes(bytes, len, r, &fs);
            free(bytes);
        }
        tpl_program_free(p);
    }
    printf("fuzz: %d rejected, %d rendered, %d failed to render\n", fs.rejected, fs.rendered, fs.failed_render);
    CHECK(fs.rejected + fs.rendered + fs.failed_render == 13000);
    CHECK(fs.rejected > 0);
    free(b);
    for (size_t i = 0; i < NTEMPLATES; i++) free(base[i]);
    tpl_render_free(r);
}

/* ------------------------------------------------------------------ limits */

static void expect_limit(const char *src, tpl_limits lim, const char *what)
{
    tpl_program *p = compile(src, NULL);
    CHECK(p != NULL);
    if (!p) return;
    tpl_render *r = new_render(&lim);
    tpl_status st;
    char *out = render(r, p, &st);
    CHECK(out == NULL && st == TPL_ERR_LIMIT);
    const char *msg = tpl_render_error(r)->message;
    if (!msg || !strstr(msg, what)) fprintf(stderr, "limit message '%s' lacks '%s'\n", msg ? msg : "", what);
    CHECK(msg && strstr(msg, what));
    free(out);
    /* the same program renders within default limits */
    tpl_render_free(r);
    tpl_program_free(p);
}

static void test_limits(void)
{
    expect_limit("{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}",
                 (tpl_limits){ .fuel = 10000 }, "fuel");
    expect_limit("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", (tpl_limits){ .max_depth = 10 }, "depth");
    expect_limit("{% for i in range(100) %}{{ 'x' * 100 }}{% endfor %}", (tpl_limits){ .max_output = 1000 }, "output");
    expect_limit("{% set s = 'x' * 100000 %}{% for i in range(100) %}{% set t = s ~ i %}{% endfor %}",
                 (tpl_limits){ .max_memory = 1 << 20 }, "memory");
    /* within limits the same kind of program succeeds */
    tpl_program *p = compile("{% for i in range(10) %}{{ i }}{% endfor %}", NULL);
    tpl_render *r = new_render(&(tpl_limits){ .fuel = 10000, .max_output = 100 });
    tpl_status st;
    char *out = render(r, p, &st);
    CHECK(st == TPL_OK && out && strcmp(out, "0123456789") == 0);
    free(out);
    tpl_render_free(r);
    tpl_program_free(p);
}

/* Appending to a string in a loop (`ns.s = ns.s ~ ...`, `+`, ERB `+=`) appends in place: 20,000
 * steps building a 389 KB string fit in 8 MiB of arena (copying each step would take ~3.9 GB);
 * also when a part is a float, whose str() is formatted on the way, when other strings are built
 * between the steps, and once the string has a chunk of its own. */
static void test_concat_append(void)
{
    static const struct { tpl_syntax syntax; const char *src, *want; } cases[] = {
        { TPL_SYNTAX_JINJA,
          "{% set ns = namespace(s='') %}{% for i in range(20000) %}{% set ns.s = ns.s ~ i ~ ': line of text\n' %}"
          "{% endfor %}{{ ns.s|length }} {{ ns.s[:17] }}|{{ ns.s[-21:] }}",
          "388890 0: line of text\n1|\n19999: line of text\n" },
        { TPL_SYNTAX_JINJA,
          "{% set ns = namespace(s='') %}{% for i in range(20000) %}{% set ns.s = ns.s ~ 0.5 ~ i ~ ': line of text\n' %}"
          "{% endfor %}{{ ns.s|length }} {{ ns.s[:17] }}|{{ ns.s[-21:] }}",
          "448890 0.50: line of tex|519999: line of text\n" },
        { TPL_SYNTAX_JINJA,
          "{% set ns = namespace(s='') %}{% for i in range(20000) %}{% set ns.s = ns.s + (i|string) + ': line of text\n' %}"
          "{% endfor %}{{ ns.s|length }} {{ ns.s[:17] }}|{{ ns.s[-21:] }}",
          "388890 0: line of text\n1|\n19999: line of text\n" },
        { TPL_SYNTAX_ERB,
          "<% t = '' %><% 20000.times do |i| t += \"#{i}: line of text\\n\" end %><%= t.length %> <%= t[-21..] %>",
          "388890 \n19999: line of text\n" },
        { TPL_SYNTAX_ERB,
          "<% t = '' %><% 20000.times do |i| t += i.to_s + \": line of text\\n\" end %><%= t.length %> <%= t[-21..] %>",
          "388890 \n19999: line of text\n" },
        /* lists: 20,000 appends copied each time would need 3.2 GB */
        { TPL_SYNTAX_JINJA,
          "{% set ns = namespace(l=[]) %}{% for i in range(20000) %}{% set ns.l = ns.l + [i] %}{% endfor %}"
          "{{ ns.l|length }} {{ ns.l[-2:] }} {{ ns.l|sum }}",
          "20000 [19998, 19999] 199990000" },
        { TPL_SYNTAX_ERB,
          "<% a = [] %><% 20000.times do |i| a << i end %><% 20000.times do |i| a.push(i, i) end %>"
          "<%= a.length %> <%= a.last(3).inspect %> <%= a.sum %>",
          "60000 [19998, 19999, 19999] 599970000" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tpl_options o = { 0 };
        o.syntax = cases[i].syntax;
        tpl_program *p = compile(cases[i].src, &o);
        tpl_render *r = new_render(&(tpl_limits){ .max_memory = 8 << 20 });
        tpl_status st;
        char *out = render(r, p, &st);
        if (!out || strcmp(out, cases[i].want) != 0)
            fprintf(stderr, "concat append %zu: got '%s'\n", i, out ? out : tpl_render_error(r)->message);
        CHECK(st == TPL_OK && out && strcmp(out, cases[i].want) == 0);
        free(out);
        tpl_render_free(r);
        tpl_program_free(p);
    }
}

/* Regression (found by test_fuzz): a loop whose FOR_NEXT exit jumps backwards ran forever,
 * because only JUMP charged fuel on backward jumps. Every jump now charges. */
static void test_backward_loop_exit(void)
{
    tpl_program *p = compile("{% for i in [1] %}x{% endfor %}", NULL);
    size_t pc = 0;
    while (pc < p->ncode && tpl_op_base(TPL_INSN_OP(p->code[pc])) != TPL_OP_FOR_NEXT) /* FOR_NEXT_STORE too */
        pc += 1 + (size_t)tpl_opinfo_table[TPL_INSN_OP(p->code[pc])].extra;
    CHECK(pc < p->ncode);
    if (pc < p->ncode) p->code[pc + 1] = (uint32_t)pc; /* exit to itself */
    tpl_render *r = new_render(&(tpl_limits){ .fuel = 10000 });
    tpl_status st;
    char *out = render(r, p, &st);
    CHECK(st == TPL_ERR_LIMIT);
    free(out);
    tpl_render_free(r);
    tpl_program_free(p);
}

/* tpl_program_source_hash is XXH64 (seed 0) of the source as given (before normalisation): the
 * reference values of the xxHash library, covering each tail path (stripes, 8, 4, 1 bytes). */
static void test_source_hash(void)
{
    static const struct { const char *src; uint64_t hash; } cases[] = {
        { "", 0xef46db3751d8e999u },
        { "a", 0xd24ec4f1a98c6e5bu },
        { "Hi {{ name }}!", 0x6801f061278ed7a1u },
        { "The quick brown fox jumps over the lazy dog, {{ x }}. \xc3\x89\xc3\xa9", 0xfa45497175286bd9u },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tpl_program *p = compile(cases[i].src, NULL);
        CHECK(p != NULL);
        if (!p) continue;
        CHECK(tpl_program_source_hash(p) == cases[i].hash);
        tpl_program_free(p);
    }
}

/* The header's reserved word (outside the checksum) and the payload's padding after the option
 * bits (inside it) must be 0: a file with either set is rejected, not read past. */
static void test_reserved_bytes(void)
{
    tpl_program *p = compile("{{ x }}", NULL);
    void *bytes;
    size_t n;
    CHECK(tpl_program_save(p, 0, &bytes, &n) == TPL_OK);
    tpl_program_free(p);
    unsigned char *b = bytes;
    tpl_program *q = NULL;
    CHECK(tpl_program_load("ok.tplb", b, n, &q, NULL) == TPL_OK);
    tpl_program_free(q);
    static const size_t at[] = { 28, 31, 34, 35 };
    for (size_t i = 0; i < sizeof at / sizeof *at; i++) {
        b[at[i]] = 1;
        fix_header(b, n);
        tpl_error err = { 0 };
        q = NULL;
        CHECK(tpl_program_load("bad.tplb", b, n, &q, &err) == TPL_ERR_CORRUPT && !q);
        CHECK(err.message && strstr(err.message, at[i] < 32 ? "reserved header bytes" : "bad options"));
        tpl_error_clear(&err);
        b[at[i]] = 0;
    }
    fix_header(b, n);
    CHECK(tpl_program_load("ok.tplb", b, n, &q, NULL) == TPL_OK);
    tpl_program_free(q);
    free(bytes);
}

/* A runtime error of a program saved without its source is located, without a source line. */
static void test_stripped_error(void)
{
    tpl_program *p = compile("\n{{ 1 // 0 }}", NULL);
    void *bytes;
    size_t n;
    CHECK(tpl_program_save(p, TPL_SAVE_STRIP_SOURCE, &bytes, &n) == TPL_OK);
    tpl_program_free(p);
    tpl_program *q = NULL;
    CHECK(tpl_program_load("s.tplb", bytes, n, &q, NULL) == TPL_OK);
    free(bytes);
    tpl_render *r = new_render(NULL);
    tpl_status st;
    char *out = render(r, q, &st);
    const tpl_error *e = tpl_render_error(r);
    CHECK(st != TPL_OK && e->line == 2 && e->column == 6 && e->source_line == NULL);
    free(out);
    tpl_render_free(r);
    tpl_program_free(q);
}

/* Builtins are referenced by name (format 4): the file's table names them, the code holds indexes
 * of it; a name this tpl does not have is a clear load error, and the names survive a save. */
static void test_builtin_names(void)
{
    tpl_program *p = compile("{{ name | upper }} {{ 'x' is string }} {{ range(2) | list | join(',') }}", NULL);
    void *b = NULL;
    size_t n = 0;
    CHECK(p && tpl_program_save(p, TPL_SAVE_STRIP_SOURCE, &b, &n) == TPL_OK);
    if (!b) return;
    unsigned char *u = b;
    unsigned char *at = memmem(u, n, "upper", 5);
    CHECK(at != NULL);
    tpl_program *q = NULL;
    CHECK(tpl_program_load("n.tplb", b, n, &q, NULL) == TPL_OK && q);
    tpl_render *r = tpl_render_new(NULL);
    tpl_status st;
    static const char state[] = "{\"name\": \"ab\"}";
    CHECK(tpl_render_set_state_json(r, state, sizeof state - 1) == TPL_OK);
    char *out = render(r, q, &st);
    CHECK(out && strcmp(out, "AB True 0,1") == 0);
    free(out);
    tpl_program_free(q);
    if (at) {
        memcpy(at, "uppex", 5);
        fix_header(u, n);
        tpl_error err = { 0 };
        q = NULL;
        CHECK(tpl_program_load("n.tplb", b, n, &q, &err) == TPL_ERR_CORRUPT && !q);
        CHECK(err.message && strstr(err.message, "unknown builtin filter 'uppex'"));
        tpl_error_clear(&err);
    }
    free(b);
    tpl_render_free(r);
    tpl_program_free(p);
}

int main(void)
{
    test_builtin_names();
    test_reserved_bytes();
    test_stripped_error();
    test_concat_append();
    test_backward_loop_exit();
    test_source_hash();
    test_round_trip();
    test_static();
    test_static_builtins();
    test_switch_table();
    test_adds_k_tuple();
    test_superinstructions();
    test_limits();
    test_fuzz();
    printf("%d passed, %d failed\n", npass, nfail);
    return nfail ? 1 : 0;
}
