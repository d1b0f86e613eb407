/* Host values (include/tpl.h, issue 17): state built with the direct constructors (no JSON),
 * and host objects read lazily through tpl_host_class callbacks: attribute, item, iteration,
 * call with args/kwargs, truthiness, str/repr, resolve; a failing callback ends the render with
 * a located TPL_ERR_RAISED error that carries the host's payload. Public header only.
 * Prints "N passed, N failed"; exit status 1 on any failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tpl.h"

static int npass, nfail;

#define CHECK(cond, ...)                                                 \
    do {                                                                 \
        if (cond) npass++;                                               \
        else { nfail++; fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
               fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); }      \
    } while (0)

static tpl_program *compile(const char *src)
{
    tpl_program *p = NULL;
    tpl_error err = { 0 };
    if (tpl_compile("t.jinja", src, strlen(src), NULL, &p, &err) != TPL_OK) {
        fprintf(stderr, "compile: %s\n", err.message);
        tpl_error_clear(&err);
        return NULL;
    }
    return p;
}

static char buf[4096];

/* Renders p with r; the output, or "ERR:<status>:<line>:<message>". */
static const char *render(tpl_render *r, const tpl_program *p)
{
    const char *out;
    size_t n;
    if (!p) return "no program";
    tpl_status st = tpl_render_run(r, p, &out, &n);
    if (st != TPL_OK) {
        const tpl_error *e = tpl_render_error(r);
        snprintf(buf, sizeof buf, "ERR:%d:%u:%s", (int)st, e->line, e->message);
    } else {
        snprintf(buf, sizeof buf, "%s", out);
    }
    return buf;
}

static tpl_val str(tpl_render *r, const char *s)
{
    tpl_val v = tpl_val_none();
    if (tpl_val_str(r, s, strlen(s), 0, &v) != TPL_OK) nfail++;
    return v;
}

/* ---- a host "person": fields name/age, a method greet(greeting, punct=...), a list of
 * friends, counts of every callback so the test sees what the render touched */
typedef struct person {
    const char *name;
    int64_t age;
    int getattr_calls, getitem_calls, iter_calls, call_calls, str_calls, truth_calls, resolve_calls;
    bool fail_on_age;       /* getattr 'age' fails with a payload */
} person;

static int payload_token = 42;

static tpl_host_result p_getattr(void *obj, tpl_render *r, const char *name, size_t len, tpl_val *out);

static tpl_host_result m_call(void *obj, tpl_render *r, const tpl_val *args, size_t nargs, const tpl_val *kwn,
                              const tpl_val *kwv, size_t nkw, tpl_val *out)
{
    person *p = obj;
    p->call_calls++;
    char s[256];
    size_t gl = 0, pl = 1;
    const char *g = nargs ? tpl_val_as_str(args[0], &gl) : "Hello";
    if (!nargs) gl = 5;
    if (!g) { g = "?"; gl = 1; }
    const char *punct = "!";
    for (size_t i = 0; i < nkw; i++) {
        size_t kl;
        const char *k = tpl_val_as_str(kwn[i], &kl);
        if (k && kl == 5 && memcmp(k, "punct", 5) == 0) punct = tpl_val_as_str(kwv[i], &pl);
    }
    if (!punct) { punct = "!"; pl = 1; }
    int n = snprintf(s, sizeof s, "%.*s, %s%.*s", (int)gl, g, p->name, (int)pl, punct);
    return tpl_val_str(r, s, (size_t)n, 0, out) == TPL_OK ? TPL_HOST_OK : TPL_HOST_ERROR;
}

static const tpl_host_class method_class = { "method", NULL, NULL, NULL, NULL, m_call, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL };

static tpl_host_result p_getattr(void *obj, tpl_render *r, const char *name, size_t len, tpl_val *out)
{
    person *p = obj;
    p->getattr_calls++;
    if (len == 4 && memcmp(name, "name", 4) == 0) return tpl_val_str(r, p->name, strlen(p->name), 0, out) ? TPL_HOST_ERROR : TPL_HOST_OK;
    if (len == 3 && memcmp(name, "age", 3) == 0) {
        if (p->fail_on_age) { tpl_host_error(r, "ValueError: age is secret", &payload_token); return TPL_HOST_ERROR; }
        *out = tpl_val_int(p->age);
        return TPL_HOST_OK;
    }
    if (len == 5 && memcmp(name, "greet", 5) == 0) return tpl_val_host(r, &method_class, p, out) ? TPL_HOST_ERROR : TPL_HOST_OK;
    return TPL_HOST_MISSING;
}

static tpl_host_result p_getitem(void *obj, tpl_render *r, tpl_val key, tpl_val *out)
{
    person *p = obj;
    p->getitem_calls++;
    if (tpl_val_kind_of(key) == TPL_VAL_INT && tpl_val_as_int(key) == 0) {
        *out = tpl_val_int(p->age * 10);
        return TPL_HOST_OK;
    }
    (void)r;
    return TPL_HOST_MISSING;
}

static tpl_host_result p_iter(void *obj, tpl_render *r, tpl_val *out)
{
    person *p = obj;
    p->iter_calls++;
    if (tpl_val_list(r, 2, 0, out) != TPL_OK) return TPL_HOST_ERROR;
    tpl_val_list_push(r, *out, tpl_val_int(1));
    tpl_val_list_push(r, *out, str(r, p->name));
    return TPL_HOST_OK;
}

static tpl_host_result p_str(void *obj, tpl_render *r, bool repr, tpl_val *out)
{
    person *p = obj;
    p->str_calls++;
    char s[128];
    int n = snprintf(s, sizeof s, repr ? "<Person %s>" : "%s (%lld)", p->name, (long long)p->age);
    return tpl_val_str(r, s, (size_t)n, 0, out) == TPL_OK ? TPL_HOST_OK : TPL_HOST_ERROR;
}

static tpl_host_result p_truth(void *obj, tpl_render *r, bool *out)
{
    person *p = obj;
    (void)r;
    p->truth_calls++;
    *out = p->age > 0;
    return TPL_HOST_OK;
}

static tpl_host_result p_resolve(void *obj, tpl_render *r, tpl_val *out)
{
    person *p = obj;
    p->resolve_calls++;
    if (tpl_val_map(r, 2, out) != TPL_OK) return TPL_HOST_ERROR;
    tpl_val_map_set(r, *out, str(r, "name"), str(r, p->name));
    tpl_val_map_set(r, *out, str(r, "age"), tpl_val_int(p->age));
    return TPL_HOST_OK;
}

static tpl_host_result p_len(void *obj, tpl_render *r, int64_t *out)
{
    (void)obj;
    (void)r;
    *out = 99;
    return TPL_HOST_OK;
}

/* |int and |float of a person: the age (|float: a float; as_float false, an int) */
static tpl_host_result p_number(void *obj, tpl_render *r, bool as_float, tpl_val *out)
{
    person *p = obj;
    (void)r;
    *out = as_float ? tpl_val_float((double)p->age + 0.5) : tpl_val_int(p->age);
    return TPL_HOST_OK;
}

static const tpl_host_class person_class = { "Person", p_getattr, p_getitem, p_iter, NULL, NULL, p_truth, p_str,
                                             p_resolve, NULL, NULL, NULL, NULL, NULL, NULL };
static const tpl_host_class sized_class = { "Sized", NULL, NULL, NULL, p_len, NULL, NULL, NULL, NULL, NULL, p_number, NULL, NULL, NULL, NULL };

/* Builds {"who": <person>, "n": 3, "xs": [1, "two", 3.5, None, True], "m": {"k": "v", 1: "one"},
 * "t": (1, 2), "safe": Markup("<b>")} on r. */
static void set_state(tpl_render *r, person *who)
{
    tpl_val st, xs, m, t, h, safe;
    CHECK(tpl_render_reset_state(r) == TPL_OK, "reset_state");
    CHECK(tpl_val_map(r, 4, &st) == TPL_OK, "map");
    CHECK(tpl_val_host(r, &person_class, who, &h) == TPL_OK, "host");
    CHECK(tpl_val_map_set(r, st, str(r, "who"), h) == TPL_OK, "set who");
    tpl_val_map_set(r, st, str(r, "n"), tpl_val_int(3));
    CHECK(tpl_val_list(r, 1, 0, &xs) == TPL_OK, "list");
    tpl_val_list_push(r, xs, tpl_val_int(1));
    tpl_val_list_push(r, xs, str(r, "two"));
    tpl_val_list_push(r, xs, tpl_val_float(3.5));
    tpl_val_list_push(r, xs, tpl_val_none());
    tpl_val_list_push(r, xs, tpl_val_bool(true));
    tpl_val_map_set(r, st, str(r, "xs"), xs);
    tpl_val_map(r, 0, &m);
    tpl_val_map_set(r, m, str(r, "k"), str(r, "v"));
    CHECK(tpl_val_map_set(r, m, tpl_val_int(1), str(r, "one")) == TPL_OK, "int key");
    CHECK(tpl_val_map_set(r, m, xs, str(r, "no")) == TPL_ERR_TYPE, "list key refused");
    tpl_val_map_set(r, st, str(r, "m"), m);
    tpl_val_list(r, 2, TPL_VAL_AS_TUPLE, &t);
    tpl_val_list_push(r, t, tpl_val_int(1));
    tpl_val_list_push(r, t, tpl_val_int(2));
    tpl_val_map_set(r, st, str(r, "t"), t);
    CHECK(tpl_val_str(r, "<b>", 3, TPL_VAL_MARKUP, &safe) == TPL_OK && tpl_val_is_markup(safe), "markup");
    tpl_val_map_set(r, st, str(r, "safe"), safe);
    CHECK(tpl_val_str(r, "\xff", 1, 0, &safe) == TPL_ERR_VALUE, "invalid UTF-8 refused");
    CHECK(tpl_val_len(st) == 6 && tpl_val_kind_of(tpl_val_map_value(st, 5)) == TPL_VAL_STR, "readers");
    CHECK(tpl_render_set_state_val(r, st) == TPL_OK, "set_state_val");
}

/* ---- ERB (issue 20): a Ruby-like object answering methods through send, and the render's self */
typedef struct rbobj {
    const char *name;
    int sends;
} rbobj;

static tpl_host_result o_send(void *obj, tpl_render *r, const char *name, size_t len, const tpl_val *args,
                              size_t nargs, const tpl_val *kwn, const tpl_val *kwv, size_t nkw, tpl_val *out)
{
    rbobj *o = obj;
    o->sends++;
    char s[256];
    int n;
    if (len == 4 && memcmp(name, "name", 4) == 0 && nargs == 0) n = snprintf(s, sizeof s, "%s", o->name);
    else if (len == 5 && memcmp(name, "@note", 5) == 0) n = snprintf(s, sizeof s, "ivar of %s", o->name);
    else if (len == 5 && memcmp(name, "greet", 5) == 0 && nargs == 1) {
        size_t gl, pl = 1;
        const char *g = tpl_val_as_str(args[0], &gl), *punct = "!";
        for (size_t i = 0; i < nkw; i++) {
            size_t kl;
            const char *k = tpl_val_as_str(kwn[i], &kl);
            if (k && kl == 5 && memcmp(k, "punct", 5) == 0) punct = tpl_val_as_str(kwv[i], &pl);
        }
        n = snprintf(s, sizeof s, "%.*s, %s%.*s", g ? (int)gl : 0, g ? g : "", o->name, punct ? (int)pl : 0, punct ? punct : "");
    } else if (nargs == 1 && ((len == 1 && (name[0] == '+' || name[0] == '<')) || (len == 2 && memcmp(name, "==", 2) == 0) ||
                              (len == 4 && memcmp(name, "(r+)", 4) == 0))) {
        /* Ruby's operators as the object's methods (o + x, o == x, o < x; "x" + o is "(r+)") */
        size_t al = 0;
        const char *a = tpl_val_as_str(args[0], &al);
        char b[64];
        snprintf(b, sizeof b, "%.*s", a ? (int)al : 0, a ? a : "");
        if (name[0] == '=') { *out = tpl_val_bool(a && strcmp(o->name, b) == 0); return TPL_HOST_OK; }
        if (name[0] == '<') { *out = tpl_val_bool(strcmp(o->name, b) < 0); return TPL_HOST_OK; }
        n = name[0] == '+' ? snprintf(s, sizeof s, "%s+%s", o->name, b) : snprintf(s, sizeof s, "%s&%s", b, o->name);
    } else if (len == 4 && memcmp(name, "fail", 4) == 0) {
        tpl_host_error(r, "RuntimeError: failed on purpose", &payload_token);
        return TPL_HOST_ERROR;
    } else return TPL_HOST_MISSING;
    return tpl_val_str(r, s, (size_t)n, 0, out) == TPL_OK ? TPL_HOST_OK : TPL_HOST_ERROR;
}

static tpl_host_result o_item(void *obj, tpl_render *r, tpl_val key, tpl_val *out)
{
    (void)obj;
    size_t n;
    const char *k = tpl_val_as_str(key, &n);
    if (!k) return TPL_HOST_MISSING;
    char s[64];
    int m = snprintf(s, sizeof s, "item %.*s", (int)n, k);
    return tpl_val_str(r, s, (size_t)m, 0, out) == TPL_OK ? TPL_HOST_OK : TPL_HOST_ERROR;
}

static tpl_host_result o_resolve(void *obj, tpl_render *r, tpl_val *out)
{
    (void)obj;
    if (tpl_val_list(r, 3, 0, out) != TPL_OK) return TPL_HOST_ERROR;
    for (int i = 3; i >= 1; i--) tpl_val_list_push(r, *out, tpl_val_int(i));
    return TPL_HOST_OK;
}

static tpl_host_result o_str(void *obj, tpl_render *r, bool repr, tpl_val *out)
{
    rbobj *o = obj;
    char s[128];
    int n = snprintf(s, sizeof s, repr ? "#<RbObj %s>" : "%s", o->name);
    return tpl_val_str(r, s, (size_t)n, 0, out) == TPL_OK ? TPL_HOST_OK : TPL_HOST_ERROR;
}

static const tpl_host_class rb_class = { "RbObj", NULL, o_item, NULL, NULL, NULL, NULL, o_str, o_resolve, o_send, NULL, NULL, NULL, NULL, NULL };

static tpl_program *compile_erb(const char *src, bool self)
{
    tpl_options o = { 0 };
    o.syntax = TPL_SYNTAX_ERB;
    o.erb_self = self;
    tpl_program *p = NULL;
    tpl_error err = { 0 };
    if (tpl_compile("t.erb", src, strlen(src), &o, &p, &err) != TPL_OK) {
        fprintf(stderr, "compile: %s\n", err.message);
        tpl_error_clear(&err);
        return NULL;
    }
    return p;
}

static void expect_erb(tpl_render *r, const char *src, bool self, const char *want)
{
    tpl_program *p = compile_erb(src, self);
    const char *got = render(r, p);
    CHECK(strcmp(got, want) == 0, "%s: got [%s], want [%s]", src, got, want);
    /* the same from .tplb (erb_self is kept) */
    void *b = NULL;
    size_t n = 0;
    tpl_program *q = NULL;
    if (p && tpl_program_save(p, 0, &b, &n) == TPL_OK && tpl_program_load("t.erb", b, n, &q, NULL) == TPL_OK) {
        got = render(r, q);
        CHECK(strcmp(got, want) == 0, "%s (.tplb): got [%s], want [%s]", src, got, want);
        CHECK(tpl_program_options(q)->erb_self == self, "erb_self kept by .tplb");
    } else CHECK(0, "save/load %s", src);
    free(b);
    tpl_program_free(q);
    tpl_program_free(p);
}

static void erb_section(void)
{
    tpl_render *r = tpl_render_new(NULL);
    rbobj obj = { "Ann", 0 }, self = { "Main", 0 };
    person pp = { "Pat", 5, 0, 0, 0, 0, 0, 0, 0, false };
    tpl_val st, o, sym, rng, h, pv;
    tpl_val_map(r, 4, &st);
    CHECK(tpl_val_host(r, &rb_class, &obj, &o) == TPL_OK, "host");
    tpl_val_map_set(r, st, str(r, "o"), o);
    CHECK(tpl_val_str(r, "sym", 3, TPL_VAL_SYMBOL, &sym) == TPL_OK, "symbol");
    tpl_val_map(r, 1, &h);
    tpl_val_map_set(r, h, sym, tpl_val_int(1));
    tpl_val_map_set(r, st, str(r, "h"), h);
    CHECK(tpl_val_range(r, tpl_val_int(1), tpl_val_int(4), true, &rng) == TPL_OK, "range");
    tpl_val_map_set(r, st, str(r, "rng"), rng);
    tpl_val_host(r, &person_class, &pp, &pv);
    tpl_val_map_set(r, st, str(r, "pyobj"), pv);
    tpl_val_map_set(r, st, str(r, "x"), str(r, "state x"));
    tpl_val fz;
    CHECK(tpl_val_str(r, "fro", 3, TPL_VAL_FROZEN, &fz) == TPL_OK, "frozen string");
    tpl_val_map_set(r, st, str(r, "fz"), fz);
    CHECK(tpl_render_set_state_val(r, st) == TPL_OK, "state");

    /* a frozen Ruby String (TPL_VAL_FROZEN): frozen? true, a change in place Ruby's FrozenError; a copy is not */
    expect_erb(r, "<%= fz.frozen? %> <%= x.frozen? %> <%= fz.dup.frozen? %> <%= fz.upcase %>", false, "true false false FRO");
    expect_erb(r, "<%= fz.upcase! %>", false, "ERR:3:1:can't modify frozen String: \"fro\" (FrozenError)");

    /* values and method calls on a host object (send), [] (getitem), Enumerable methods over resolve */
    expect_erb(r, "<%= o.name %> <%= o.greet('Hi') %> <%= o.greet('Yo', punct: '?') %> <%= o[:k] %> <%= o['j'] %>", false,
               "Ann Hi, Ann! Yo, Ann? item k item j");
    expect_erb(r, "<%= o.sort.inspect %> <% o.each do |i| %><%= i %><% end %> <%= o.map { |i| i * 2 }.sum %>", false,
               "[1, 2, 3] 321 12");
    expect_erb(r, "<%= h.inspect %> <%= h[:sym] %> <%= h['sym'] %> <%= rng.inspect %> <%= rng.to_a.inspect %> <%= rng.sum %>",
               false, "{:sym=>1} 1 1 1...4 [1, 2, 3] 6");
    CHECK(tpl_val_range(r, tpl_val_int(1), tpl_val_bool(true), false, &rng) == TPL_ERR_TYPE, "bad range refused");
    /* Ruby's operators on a host object are its own methods (send): o + x, o == x (also x == o
     * with x a String or a number), o < x, "x" + o (its "(r+)"); a class without send: as before */
    expect_erb(r, "<%= o + 'x' %> <%= 'x' + o %> <%= o == 'Ann' %> <%= 'Ann' == o %> <%= o != 'Ann' %> <%= o == 'Bo' %> "
                  "<%= 1 == o %> <%= nil == o %> <%= o < 'B' %> <%= o < 'A' %> <%= 'a' + o + '!' %>", false,
               "Ann+x x&Ann true true false false false false true false a&Ann!");
    expect_erb(r, "<%= o * 2 %>", false, "ERR:3:1:undefined method `*' for #<RbObj Ann> (NoMethodError)");
    expect_erb(r, "<%= pyobj + 1 %>", false, "ERR:3:1:undefined method `+' for <Person Pat>:Person (NoMethodError)");
    expect_erb(r, "<%= 'x' + pyobj %>", false, "ERR:3:1:no implicit conversion of Person into String (TypeError)");
    /* no such method: NoMethodError; a class without send (say Python's): the same */
    expect_erb(r, "<%= o.nope %>", false, "ERR:3:1:undefined method `nope' for #<RbObj Ann> (NoMethodError)");
    expect_erb(r, "<%= pyobj.name %>", false, "ERR:3:1:undefined method `name' for <Person Pat>:Person (NoMethodError)");
    /* a failing send: located TPL_ERR_RAISED with the payload */
    expect_erb(r, "a\n<%= o.fail %>", false, "ERR:5:2:RbObj.send 'fail' failed: RuntimeError: failed on purpose");
    CHECK(tpl_render_error_payload(r) == &payload_token, "send payload");

    /* without a self: unknown names and receiver-less calls fail as before; @x reads the state */
    expect_erb(r, "<%= who %>", false, "ERR:2:1:undefined local variable or method `who' for main:Object (NameError)");
    expect_erb(r, "<%= helper(1) %>", true, "ERR:3:1:undefined method `helper' for main:Object (NoMethodError)");
    expect_erb(r, "<%= @x %>", true, "state x");

    /* with a self: bare names, receiver-less calls and @ivars go to it; state names win */
    tpl_val sv;
    CHECK(tpl_val_host(r, &rb_class, &self, &sv) == TPL_OK && tpl_render_set_self_val(r, sv) == TPL_OK, "set self");
    expect_erb(r, "<%= name %> <%= greet('Hey', punct: '.') %> <%= @note %> <%= x %> [<%= @none %>]", true,
               "Main Hey, Main. ivar of Main state x []");
    expect_erb(r, "<%= who %>", true, "ERR:2:1:undefined local variable or method `who' for main:Object (NameError)");
    expect_erb(r, "<%= nothing(1) %>", true, "ERR:3:1:undefined method `nothing' for #<RbObj Main> (NoMethodError)");
    /* compiled without erb_self, a receiver-less unknown call stays a compile-time NoMethodError */
    expect_erb(r, "<%= greet('x') %>", false, "ERR:3:1:undefined method `greet' for main:Object (NoMethodError)");
    CHECK(tpl_render_reset_state(r) == TPL_OK, "reset drops self");
    expect_erb(r, "<%= @note.inspect %>", true, "nil");
    tpl_render_free(r);
}

static void expect(tpl_render *r, const char *src, const char *want)
{
    tpl_program *p = compile(src);
    const char *got = render(r, p);
    CHECK(strcmp(got, want) == 0, "%s: got [%s], want [%s]", src, got, want);
    tpl_program_free(p);
}

/* ---- host objects as host functions (tpl_host_value_fn): a filter "shout" and a test "odd"
 * whose calls get the arguments as values (obj says which) */
static tpl_host_result fn_call(void *obj, tpl_render *r, const tpl_val *args, size_t nargs, const tpl_val *kwn,
                               const tpl_val *kwv, size_t nkw, tpl_val *out)
{
    (void)kwn;
    (void)kwv;
    if (strcmp(obj, "odd") == 0) {
        *out = tpl_val_bool(nargs == 1 && nkw == 0 && (tpl_val_as_int(args[0]) & 1));
        return TPL_HOST_OK;
    }
    size_t n;
    const char *s = nargs ? tpl_val_as_str(args[0], &n) : NULL;
    if (!s || tpl_val_kind_of(args[0]) != TPL_VAL_STR) {
        tpl_host_error(r, "shout wants a string", NULL);
        return TPL_HOST_ERROR;
    }
    char up[64];
    size_t k = 0;
    for (; k < n && k < sizeof up - 1; k++) up[k] = (char)(s[k] >= 'a' && s[k] <= 'z' ? s[k] - 32 : s[k]);
    for (size_t i = 1; i < nargs && k < sizeof up - 1; i++) up[k++] = '!';
    return tpl_val_str(r, up, k, 0, out) == TPL_OK ? TPL_HOST_OK : TPL_HOST_ERROR;
}

static const tpl_host_class fn_class = { "fn", NULL, NULL, NULL, NULL, fn_call, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL };

/* The filter "shout" and the test "odd" as host objects, and options naming them. */
typedef struct host_fns {
    char shout_name[6], odd_name[4];
    tpl_host_object shout, odd;
    tpl_host_func funcs[2];
} host_fns;

static void host_fns_init(host_fns *h, tpl_options *o)
{
    memcpy(h->shout_name, "shout", 6);
    memcpy(h->odd_name, "odd", 4);
    h->shout = (tpl_host_object){ &fn_class, h->shout_name };
    h->odd = (tpl_host_object){ &fn_class, h->odd_name };
    h->funcs[0] = (tpl_host_func){ "shout", TPL_HOST_FILTER, tpl_host_value_fn, &h->shout };
    h->funcs[1] = (tpl_host_func){ "odd", TPL_HOST_TEST, tpl_host_value_fn, &h->odd };
    *o = (tpl_options){ 0 };
    o->host_funcs = h->funcs;
    o->nhost_funcs = 2;
}

static void host_value_functions(void)
{
    host_fns h;
    tpl_options o;
    host_fns_init(&h, &o);
    tpl_host_func *funcs = h.funcs;
    const char *src = "{{ 'hi'|shout }} {{ 'a'|shout(1, 2) }} {{ 3 is odd }} {{ 4 is odd }} {{ 4 is not odd }} "
                      "{% if 5 is odd %}yes{% endif %}";
    tpl_program *p = NULL;
    tpl_error err = { 0 };
    CHECK(tpl_compile("t.jinja", src, strlen(src), &o, &p, &err) == TPL_OK, "compile with a host test: %s",
          err.message ? err.message : "");
    tpl_error_clear(&err);
    tpl_host_func names[4];
    CHECK(tpl_program_host_functions(p, names, 4) == 2 && names[1].kind == TPL_HOST_TEST, "the host test is recorded");
    tpl_render *r = tpl_render_new(NULL);
    tpl_render_set_host_funcs(r, funcs, 2);
    const char *got = render(r, p);
    CHECK(strcmp(got, "HI A!! True False True yes") == 0, "host value functions: %s", got);
    tpl_program_free(p);
    p = compile("{{ 'a'|shout }}");
    CHECK(p == NULL, "without the table, shout is an unknown filter");
    src = "{{ 1|shout }}";
    CHECK(tpl_compile("t.jinja", src, strlen(src), &o, &p, &err) == TPL_OK, "compile");
    got = render(r, p);
    CHECK(strstr(got, "ERR:5:") == got && strstr(got, "shout wants a string"), "a failing host object: %s", got);
    tpl_program_free(p);
    tpl_render_free(r);
}

/* ---- tpl_render_lookup: a host function reads the template-level variables of the render
 * calling it (Jinja2's Context.vars for pass_context), "-" when there is none */
static tpl_host_result peek_call(void *obj, tpl_render *r, const tpl_val *args, size_t nargs, const tpl_val *kwn,
                                 const tpl_val *kwv, size_t nkw, tpl_val *out)
{
    (void)obj;
    (void)kwn;
    (void)kwv;
    (void)nkw;
    size_t n = 0;
    const char *s = nargs ? tpl_val_as_str(args[0], &n) : NULL;
    tpl_status st = tpl_render_lookup(r, s, n, out);
    if (st == TPL_ERR_UNDEFINED && tpl_val_kind_of(*out) == TPL_VAL_NONE) return tpl_val_str(r, "-", 1, 0, out) == TPL_OK ? TPL_HOST_OK : TPL_HOST_ERROR;
    return st == TPL_OK ? TPL_HOST_OK : TPL_HOST_ERROR;
}

static const tpl_host_class peek_class = { "peek", NULL, NULL, NULL, NULL, peek_call, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL };

static void render_lookup(void)
{
    char nm[] = "peek";
    tpl_host_object peek = { &peek_class, nm };
    tpl_host_func funcs[1] = { { "peek", TPL_HOST_GLOBAL, tpl_host_value_fn, &peek } };
    tpl_options o = { 0 };
    o.host_funcs = funcs;
    o.nhost_funcs = 1;
    const char *src = "{{ peek('a') }}{% set a = 1 %}{{ peek('a') }}{% macro m(a) %}{{ peek('a') }}{% endmacro %}"
                      "{% if a %}{% set a = [2] %}{% endif %}{{ m(3) }}{% set _b, c = 'b', 'c' %}{{ peek('_b') }}{{ peek('c') }}"
                      "{% set s %}S{% endset %}{{ peek('s') }}{{ peek('n') }}{{ peek('') }}{{ peek('peek') }}"
                      "{% macro k() %}{{ peek('d') }}{{ d }}{% endmacro %}{{ k() }}{% set d = 'D' %}{{ k() }}"
                      "{% set u = nope %}{{ peek('u') is defined }}";
    tpl_program *p = NULL;
    tpl_error err = { 0 };
    CHECK(tpl_compile("t.jinja", src, strlen(src), &o, &p, &err) == TPL_OK, "compile: %s", err.message ? err.message : "");
    tpl_error_clear(&err);
    tpl_render *r = tpl_render_new(NULL);
    tpl_render_set_host_funcs(r, funcs, 1);
    CHECK(tpl_render_set_state_json(r, "{\"n\": 5}", 8) == TPL_OK, "state");
    const char *got = render(r, p);
    CHECK(strcmp(got, "-1[2]bcS----DDFalse") == 0, "render_lookup: %s", got);
    tpl_val v;
    CHECK(tpl_render_lookup(r, "a", 1, &v) == TPL_ERR_USAGE && tpl_val_kind_of(v) == TPL_VAL_NONE,
          "render_lookup after the render: not rendering");
    tpl_program_free(p);
    tpl_render_free(r);
}

/* ---- tpl_render_call and the class readers: a host function "twice" gets a macro (or a call
 * block's caller), calls it twice (once with a keyword argument) and joins the outputs; "kind"
 * names the class of its argument (tpl_val_type_name, a range's params, a view's dict) */
static tpl_host_result twice_call(void *obj, tpl_render *r, const tpl_val *args, size_t nargs, const tpl_val *kwn,
                                  const tpl_val *kwv, size_t nkw, tpl_val *out)
{
    (void)obj;
    const tpl_val *fn = nargs ? &args[0] : NULL;
    for (size_t i = 0; !fn && i < nkw; i++) fn = &kwv[i]; /* caller= */
    if (!fn) return TPL_HOST_ERROR;
    tpl_val a[2], kn, kv, o1, o2;
    a[0] = tpl_val_int(1);
    if (tpl_val_str(r, "b", 1, 0, &kn) != TPL_OK) return TPL_HOST_ERROR;
    kv = tpl_val_int(7);
    if (tpl_render_call(r, *fn, a, nargs > 1 ? 1 : 0, NULL, NULL, 0, &o1) != TPL_OK) return TPL_HOST_ERROR;
    if (tpl_render_call(r, *fn, a, nargs > 1 ? 1 : 0, nargs > 1 ? &kn : NULL, nargs > 1 ? &kv : NULL, nargs > 1 ? 1 : 0, &o2) != TPL_OK)
        return TPL_HOST_ERROR;
    size_t n1, n2;
    const char *s1 = tpl_val_as_str(o1, &n1), *s2 = tpl_val_as_str(o2, &n2);
    char b[128];
    int n = snprintf(b, sizeof b, "%.*s|%.*s", (int)n1, s1 ? s1 : "?", (int)n2, s2 ? s2 : "?");
    (void)kwn;
    return tpl_val_str(r, b, (size_t)n, 0, out) == TPL_OK ? TPL_HOST_OK : TPL_HOST_ERROR;
}

static tpl_host_result kind_call(void *obj, tpl_render *r, const tpl_val *args, size_t nargs, const tpl_val *kwn,
                                 const tpl_val *kwv, size_t nkw, tpl_val *out)
{
    (void)obj;
    (void)kwn;
    (void)kwv;
    (void)nkw;
    if (!nargs) return TPL_HOST_ERROR;
    const char *t = tpl_val_type_name(args[0]);
    char b[128];
    tpl_val rp[3];
    int n;
    if (tpl_val_range_params(args[0], rp))
        n = snprintf(b, sizeof b, "%s(%lld,%lld,%lld)", t, (long long)tpl_val_as_int(rp[0]), (long long)tpl_val_as_int(rp[1]),
                     (long long)tpl_val_as_int(rp[2]));
    else
        n = snprintf(b, sizeof b, "%s:%zu", t ? t : "?", tpl_val_len(tpl_val_view_dict(args[0])));
    return tpl_val_str(r, b, (size_t)n, 0, out) == TPL_OK ? TPL_HOST_OK : TPL_HOST_ERROR;
}

static const tpl_host_class twice_class = { "twice", NULL, NULL, NULL, NULL, twice_call, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL };
static const tpl_host_class kind_class = { "kind", NULL, NULL, NULL, NULL, kind_call, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL };

static void render_call(void)
{
    char n1[] = "twice", n2[] = "kind";
    tpl_host_object tw = { &twice_class, n1 }, kd = { &kind_class, n2 };
    tpl_host_func funcs[2] = { { "twice", TPL_HOST_GLOBAL, tpl_host_value_fn, &tw }, { "kind", TPL_HOST_GLOBAL, tpl_host_value_fn, &kd } };
    tpl_options o = { 0 };
    o.host_funcs = funcs;
    o.nhost_funcs = 2;
    const char *src = "{% macro m(a, b=2) %}<{{ a }}{{ b }}>{% endmacro %}{{ twice(m, 0) }} "
                      "{% call twice() %}[{{ 1 + 1 }}]{% endcall %} {{ kind(range(1, 9, 3)) }} {{ kind({'a': 1}.items()) }} "
                      "{{ kind(namespace(a=1)) }} {{ kind(m) }} {{ kind([1]) }} {{ kind(cycler(1)) }}";
    tpl_program *p = NULL;
    tpl_error err = { 0 };
    CHECK(tpl_compile("t.jinja", src, strlen(src), &o, &p, &err) == TPL_OK, "compile: %s", err.message ? err.message : "");
    tpl_error_clear(&err);
    tpl_render *r = tpl_render_new(NULL);
    tpl_render_set_host_funcs(r, funcs, 2);
    const char *got = render(r, p);
    CHECK(strcmp(got, "<12>|<17> [2]|[2] range(1,9,3) dict_items:1 Namespace:0 Macro:0 list:0 Cycler:0") == 0,
          "render_call: %s", got);
    tpl_val v;
    CHECK(tpl_render_call(r, tpl_val_none(), NULL, 0, NULL, NULL, 0, &v) == TPL_ERR_USAGE, "render_call after the render");
    tpl_program_free(p);
    tpl_render_free(r);
}

/* ---- tpl_render_rescue gives back what a failed call allocated: "catchn" calls its macro 3,000
 * times and takes each failure back; the macro builds 10 KB first, so a render under a 4 MiB
 * memory limit finishes only when the rescues free it (probe35 bug 10). A macro that changes an
 * older list before it fails keeps that change (nothing is given back then). */
static tpl_host_result catchn_call(void *obj, tpl_render *r, const tpl_val *args, size_t nargs, const tpl_val *kwn,
                                   const tpl_val *kwv, size_t nkw, tpl_val *out)
{
    (void)obj, (void)kwn, (void)kwv, (void)nkw;
    if (!nargs) return TPL_HOST_ERROR;
    int caught = 0;
    for (int i = 0; i < 3000; i++) {
        tpl_val o;
        tpl_error e;
        if (tpl_render_call(r, args[0], NULL, 0, NULL, NULL, 0, &o) == TPL_OK) continue;
        if (tpl_render_rescue(r, &e) != TPL_OK) return TPL_HOST_ERROR;
        if (e.kind == TPL_EK_ZERO_DIVISION) caught++;
    }
    *out = tpl_val_int(caught);
    return TPL_HOST_OK;
}

static const tpl_host_class catchn_class = { "catchn", NULL, NULL, NULL, NULL, catchn_call, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL };

static void render_rescue(void)
{
    char nm[] = "catchn";
    tpl_host_object co = { &catchn_class, nm };
    tpl_host_func funcs[1] = { { "catchn", TPL_HOST_GLOBAL, tpl_host_value_fn, &co } };
    tpl_options o = { 0 };
    o.host_funcs = funcs;
    o.nhost_funcs = 1;
    o.do_statement = true;
    const char *srcs[2][2] = {
        { "{% macro m() %}{{ 'x' * 10000 }}{{ 1 / 0 }}{% endmacro %}{{ catchn(m) }}", "3000" },
        { "{% set l = [] %}{% macro m() %}{% do l.append(l|length) %}{{ 1 / 0 }}{% endmacro %}{{ catchn(m) }} "
          "{{ l|length }} {{ l[2999] }}", "3000 3000 2999" },
    };
    tpl_limits lim = { 0 };
    lim.max_memory = 4u << 20;
    for (int i = 0; i < 2; i++) {
        tpl_program *p = NULL;
        tpl_error err = { 0 };
        CHECK(tpl_compile("t.jinja", srcs[i][0], strlen(srcs[i][0]), &o, &p, &err) == TPL_OK, "compile: %s",
              err.message ? err.message : "");
        tpl_error_clear(&err);
        tpl_render *r = tpl_render_new(&lim);
        tpl_render_set_host_funcs(r, funcs, 1);
        const char *got = render(r, p);
        CHECK(strcmp(got, srcs[i][1]) == 0, "render_rescue %d: %s", i, got);
        tpl_program_free(p);
        tpl_render_free(r);
    }
}

/* ---- tpl_render_mark/tpl_render_release give back what a successful call allocated once the
 * host has read its result: "calln" calls its macro 3,000 times (each output 10 KB) between a
 * mark and a release, so a render under a 4 MiB memory limit finishes only when the releases
 * free it (session 37: a module's macros called from Python kept every call's memory until the
 * render ended). A macro that changes an older list keeps its change (nothing given back then);
 * release without give_back, or without a mark, gives nothing back. */
static tpl_host_result calln_call(void *obj, tpl_render *r, const tpl_val *args, size_t nargs, const tpl_val *kwn,
                                  const tpl_val *kwv, size_t nkw, tpl_val *out)
{
    (void)obj, (void)kwn, (void)kwv, (void)nkw;
    if (!nargs) return TPL_HOST_ERROR;
    int64_t total = 0, back = 0;
    for (int i = 0; i < 3000; i++) {
        tpl_val o;
        if (tpl_render_mark(r) != TPL_OK) return TPL_HOST_ERROR;
        tpl_val arg = tpl_val_int(i);
        if (tpl_render_call(r, args[0], &arg, 1, NULL, NULL, 0, &o) != TPL_OK) {
            tpl_render_release(r, false);
            return TPL_HOST_ERROR;
        }
        size_t n = 0;
        if (!tpl_val_as_str(o, &n)) n = 0;
        total += (int64_t)n;
        back += tpl_render_release(r, true);
    }
    if (tpl_render_release(r, true)) return TPL_HOST_ERROR; /* (no mark left) */
    /* (every call's given back at its release: 3000; some, in batches: 1) */
    *out = tpl_val_int(total * 10000 + (back == 3000 ? 3000 : back > 0));
    return TPL_HOST_OK;
}

static const tpl_host_class calln_class = { "calln", NULL, NULL, NULL, NULL, calln_call, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL };

static void render_release(void)
{
    char nm[] = "calln";
    tpl_host_object co = { &calln_class, nm };
    tpl_host_func funcs[1] = { { "calln", TPL_HOST_GLOBAL, tpl_host_value_fn, &co } };
    tpl_options o = { 0 };
    o.host_funcs = funcs;
    o.nhost_funcs = 1;
    o.do_statement = true;
    /* (3, 4: a render holding more than 64 KiB, whose marks share one snapshot and give back in
     * batches: 30 MB of calls finish under the 4 MiB limit; a macro changing an older list keeps
     * every change) */
    const char *srcs[8][2] = {
        { "{% macro m(i) %}{{ 'x' * 10000 }}{% endmacro %}{{ calln(m) }}", "300000003000" },
        /* (an int appended in place: given back, but for the calls that moved the list's items) */
        { "{% set l = [] %}{% macro m(i) %}{% do l.append(i) %}{{ 'y' * 10 }}{% endmacro %}{{ calln(m) }} "
          "{{ l|length }} {{ l[2999] }}", "300000001 3000 2999" },
        { "{% set big = 'z' * 100000 %}{% macro m(i) %}{{ 'x' * 10000 }}{% endmacro %}{{ calln(m) }} {{ big|length }}",
          "300000000001 100000" },
        { "{% set big = 'z' * 100000 %}{% set l = [] %}{% macro m(i) %}{% do l.append(i) %}{{ 'y' * 10 }}"
          "{% endmacro %}{{ calln(m) }} {{ l|length }} {{ l[2999] }} {{ l|sum }} {{ big|length }}",
          "300000000 3000 2999 4498500 100000" },
        /* (session 40: a call that writes an older value keeps its write, and its memory is given
         * back when nothing older points into it — a namespace's counter: 30 MB of calls, small
         * and over 64 KiB, finish under 4 MiB) */
        { "{% set ns = namespace(n=0) %}{% macro m(i) %}{% set ns.n = ns.n + i %}{{ 'x' * 10000 }}{% endmacro %}"
          "{{ calln(m) }} {{ ns.n }}", "300000003000 4498500" },
        { "{% set big = 'z' * 100000 %}{% set ns = namespace(n=0) %}{% macro m(i) %}{% set ns.n = ns.n + i %}"
          "{{ 'x' * 10000 }}{% endmacro %}{{ calln(m) }} {{ ns.n }} {{ big|length }}", "300000000001 4498500 100000" },
        /* (a string the call made, stored in an older namespace: kept — the strings made after the
         * calls would overwrite it if its memory were given back) */
        { "{% set ns = namespace(s='') %}{% macro m(i) %}{% set ns.s = 'k' ~ i %}{{ 'y' * 10 }}{% endmacro %}"
          "{{ calln(m) }} {{ 'q' * 24 }} {{ ns.s }}", "300000000 qqqqqqqqqqqqqqqqqqqqqqqq k2999" },
        /* (an older string grown in place, vm->cat: only its length changed, yet it reaches past the
         * mark — kept) */
        { "{% set ns = namespace(s='') %}{% set ns.s = 'a' * 2000 %}{% set ns.s = ns.s ~ 'b' %}"
          "{% macro m(i) %}{% set ns.s = ns.s ~ 'c' %}{{ 'y' * 10 }}{% endmacro %}{{ calln(m) }} {{ 'q' * 24 }} "
          "{{ ns.s|length }} {{ ns.s[1999:2003] }} {{ ns.s[-2:] }} {{ ns.s.count('c') }}",
          "300000000 qqqqqqqqqqqqqqqqqqqqqqqq 5001 abcc cc 3000" },
    };
    tpl_limits lim = { 0 };
    lim.max_memory = 4u << 20;
    for (int i = 0; i < 8; i++) {
        tpl_program *p = NULL;
        tpl_error err = { 0 };
        CHECK(tpl_compile("t.jinja", srcs[i][0], strlen(srcs[i][0]), &o, &p, &err) == TPL_OK, "compile: %s",
              err.message ? err.message : "");
        tpl_error_clear(&err);
        tpl_render *r = tpl_render_new(&lim);
        tpl_render_set_host_funcs(r, funcs, 1);
        const char *got = render(r, p);
        CHECK(strcmp(got, srcs[i][1]) == 0, "render_release %d: %s", i, got);
        tpl_program_free(p);
        tpl_render_free(r);
    }
}

/* ---- the host's own numbers (tpl_host_class.arith): "cents", a fixed-point number of cents that
 * prints as 1.50; its arith adds, negates, compares with ints and other cents. cents_plain has no
 * arith: an operator on it stays the TypeError naming its type. */
typedef struct cents { int64_t v; int ariths; } cents;
static cents cents_pool[8];

static int64_t cents_of(tpl_val v, bool *ok)
{
    *ok = true;
    if (tpl_val_kind_of(v) == TPL_VAL_INT) return tpl_val_as_int(v) * 100;
    if (tpl_val_kind_of(v) == TPL_VAL_HOST) return ((cents *)tpl_val_host_object(v))->v;
    *ok = false;
    return 0;
}

static const char *c_type_of(void *obj, unsigned *numeric)
{
    (void)obj;
    *numeric = TPL_HOST_NUMBER;
    return "Cents";
}

static tpl_host_result c_str(void *obj, tpl_render *r, bool repr, tpl_val *out)
{
    cents *c = obj;
    char s[48];
    int64_t a = c->v < 0 ? -c->v : c->v;
    int n = snprintf(s, sizeof s, repr ? "Cents('%s%lld.%02lld')" : "%s%lld.%02lld", c->v < 0 ? "-" : "",
                     (long long)(a / 100), (long long)(a % 100));
    return tpl_val_str(r, s, (size_t)n, 0, out) == TPL_OK ? TPL_HOST_OK : TPL_HOST_ERROR;
}

static const tpl_host_class cents_class;

static tpl_host_result c_arith(void *obj, tpl_render *r, const char *op, tpl_val a, tpl_val b, tpl_val *out)
{
    ((cents *)obj)->ariths++;
    bool oka, okb;
    int64_t x = cents_of(a, &oka), y = cents_of(b, &okb);
    bool unary = tpl_val_kind_of(b) == TPL_VAL_NONE;
    if (!oka || (!okb && !unary)) return TPL_HOST_MISSING;
    int64_t res;
    if (strcmp(op, "==") == 0) { *out = tpl_val_bool(x == y); return TPL_HOST_OK; }
    if (strcmp(op, "<") == 0) { *out = tpl_val_bool(x < y); return TPL_HOST_OK; }
    if (strcmp(op, "+") == 0) res = x + y;
    else if (strcmp(op, "-") == 0) res = x - y;
    else if (strcmp(op, "neg") == 0 && unary) res = -x;
    else if (strcmp(op, "abs") == 0 && unary) res = x < 0 ? -x : x;
    else if (strcmp(op, "/") == 0) {
        if (y == 0) { tpl_host_error(r, "ZeroDivisionError: cents by zero", NULL); return TPL_HOST_ERROR; }
        *out = tpl_val_float((double)x / (double)y);
        return TPL_HOST_OK;
    } else return TPL_HOST_MISSING;
    for (int i = 0; i < 8; i++)
        if (cents_pool[i].v == INT64_MIN) {
            cents_pool[i] = (cents){ res, 0 };
            return tpl_val_host(r, &cents_class, &cents_pool[i], out) == TPL_OK ? TPL_HOST_OK : TPL_HOST_ERROR;
        }
    tpl_host_error(r, "out of cents", NULL);
    return TPL_HOST_ERROR;
}

static const tpl_host_class cents_class = { "Cents", NULL, NULL, NULL, NULL, NULL, NULL, c_str, NULL, NULL, NULL,
                                            c_type_of, NULL, NULL, c_arith };
static const tpl_host_class cents_plain = { "Cents", NULL, NULL, NULL, NULL, NULL, NULL, c_str, NULL, NULL, NULL,
                                            c_type_of, NULL, NULL, NULL };

static void host_numbers(void)
{
    tpl_render *r = tpl_render_new(NULL);
    cents a = { 150, 0 }, b = { -275, 0 }, p = { 150, 0 };
    const struct { const char *src, *want; } cases[] = {
        { "{{ a }} {{ a + 1 }} {{ 1 + a }} {{ a + b }} {{ a - b }} {{ -b }} {{ b|abs }}", "1.50 2.50 2.50 -1.25 4.25 2.75 2.75" },
        { "{{ a == 1 }} {{ a < b }} {{ b < a }} {{ a > 1 }} {{ a >= a }} {{ a != b }} {{ a in [1, b] }}",
          "False False True True True True False" },
        { "{{ [a, b, 2]|sort }} {{ [a, b]|max }} {{ [a, b]|min }} {{ [a, b]|sum }} {{ a / 3 }}",
          "[Cents('-2.75'), Cents('1.50'), 2] 1.50 -2.75 -1.25 0.5" },
        { "{{ a * 2 }}", "ERR:3:1:unsupported operand type(s) for *: 'Cents' and 'int' (tpl does no arithmetic on "
                         "the host's own number types: convert to int or float first)" },
        { "{{ a / 0 }}", "ERR:5:1:Cents./ failed: ZeroDivisionError: cents by zero" },
        { "{{ a + x }}", "ERR:2:1:'x' is undefined" },
        { "{{ p + 1 }}", "ERR:3:1:unsupported operand type(s) for +: 'Cents' and 'int' (tpl does no arithmetic on "
                         "the host's own number types: convert to int or float first)" },
        { "{{ p == 1 }}", "ERR:3:1:unsupported: '==' between 'Cents' and 'int' (tpl does not compare the host's own "
                          "number types: convert to int or float first)" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (int k = 0; k < 8; k++) cents_pool[k].v = INT64_MIN;
        tpl_val st = { { 0, 0 } }, h = { { 0, 0 } };
        CHECK(tpl_render_reset_state(r) == TPL_OK && tpl_val_map(r, 3, &st) == TPL_OK, "state");
        tpl_val_host(r, &cents_class, &a, &h);
        tpl_val_map_set(r, st, str(r, "a"), h);
        tpl_val_host(r, &cents_class, &b, &h);
        tpl_val_map_set(r, st, str(r, "b"), h);
        tpl_val_host(r, &cents_plain, &p, &h);
        tpl_val_map_set(r, st, str(r, "p"), h);
        tpl_render_set_state_val(r, st);
        expect(r, cases[i].src, cases[i].want);
    }
    CHECK(a.ariths > 0 && p.ariths == 0, "arith called on a (%d), never on the class without it", a.ariths);
    tpl_render_free(r);
}

/* Compiles src with options o, renders it on r and compares (or expects a compile error). */
static void expect_opts(tpl_render *r, const tpl_options *o, const char *src, const char *want)
{
    tpl_program *p = NULL;
    tpl_error err = { 0 };
    tpl_status st = tpl_compile("t.jinja", src, strlen(src), o, &p, &err);
    if (!want) {
        CHECK(st != TPL_OK, "%s: compiles, want an error", src);
    } else if (st != TPL_OK) {
        CHECK(0, "%s: %s", src, err.message ? err.message : "");
    } else {
        const char *got = render(r, p);
        if (strncmp(want, "ERR", 3) == 0) /* a render error whose message holds the rest */
            CHECK(strncmp(got, "ERR:", 4) == 0 && strstr(got, want + 3), "%s: got [%s], want [%s]", src, got, want);
        else
            CHECK(strcmp(got, want) == 0, "%s: got [%s], want [%s]", src, got, want);
    }
    tpl_error_clear(&err);
    tpl_program_free(p);
}

/* tpl.jinja2's Environment settings (issue 17): finalize, host filters/tests named by string in
 * map/select/reject/selectattr, ChainableUndefined, DebugUndefined (expected outputs from
 * Jinja2 3.1 with the same filters) */
static void environment_settings(void)
{
    host_fns h;
    tpl_options o;
    host_fns_init(&h, &o);
    tpl_host_func *funcs = h.funcs;
    tpl_render *r = tpl_render_new(NULL);
    tpl_render_set_host_funcs(r, funcs, 2);
    expect_opts(r, &o, "{{ ['a', 'b']|map('shout')|join(',') }} {{ [1, 2, 3]|select('odd')|list }} "
                       "{{ [1, 2, 3]|reject('odd')|list }} {{ [{'n': 1}, {'n': 2}]|selectattr('n', 'odd')|list }}",
                "A,B [1, 3] [2] [{'n': 1}]");
    o.finalize = "shout";
    expect_opts(r, &o, "a{{ 'b' }}c{{ 'd' ~ 'e' }}{% set x %}{{ 'f' }}{% endset %}{{ x }}", "aBcDEF");
    o.finalize = "nosuch";
    expect_opts(r, &o, "{{ 1 }}", NULL);
    o.finalize = NULL;
    o.host_funcs = NULL;
    o.nhost_funcs = 0;
    o.chainable_undefined = true;
    expect_opts(r, &o, "[{{ a.b.c }}][{{ a['b'][1:2] }}][{{ a.b|default('z') }}][{{ a.b is defined }}]",
                "[][][z][False]");
    o.chainable_undefined = false;
    expect_opts(r, &o, "{{ a.b }}", "ERR'a' is undefined");
    o.debug_undefined = true;
    expect_opts(r, &o, "[{{ a }}][{{ {'k': 1}.nope }}][{{ {'k': 1}['no'] }}][{{ [1][3] }}][{{ 'x' ~ a }}]",
                "[{{ a }}][{{ no such element: dict object['nope'] }}][{{ no such element: dict object['no'] }}]"
                "[{{ no such element: list object[3] }}][x{{ a }}]");
    /* a hint prints as Jinja2's DebugUndefined prints it (was "{{ None }}"), and so do the host's
     * undefined values with a name or a hint (tpl_val_undefined_text) */
    tpl_val st = tpl_val_none(), uh = tpl_val_none(), un = tpl_val_none();
    CHECK(tpl_val_map(r, 2, &st) == TPL_OK && tpl_val_undefined_text(r, "hi there", 8, true, &uh) == TPL_OK &&
          tpl_val_undefined_text(r, "nm", 2, false, &un) == TPL_OK, "undefined_text");
    CHECK(tpl_val_undefined_text(r, "\xff", 1, true, &uh) == TPL_ERR_VALUE && tpl_val_undefined_text(NULL, "", 0, true, &uh) ==
          TPL_ERR_USAGE && tpl_val_undefined_text(r, NULL, 1, true, &uh) == TPL_ERR_USAGE, "undefined_text refusals");
    tpl_val_undefined_text(r, "hi there", 8, true, &uh);
    tpl_val_map_set(r, st, str(r, "h"), uh);
    tpl_val_map_set(r, st, str(r, "n"), un);
    tpl_render_set_state_val(r, st);
    expect_opts(r, &o, "[{{ []|first }}][{% for x in [1] %}{{ loop.previtem }}{% endfor %}][{{ h }}][{{ n }}]",
                "[{{ undefined value printed: No first item, sequence was empty. }}]"
                "[{{ undefined value printed: there is no previous item }}][{{ undefined value printed: hi there }}][{{ nm }}]");
    o.debug_undefined = false;
    expect_opts(r, &o, "[{{ h }}][{{ n }}]{{ h is defined }}{{ n is defined }}", "[][]FalseFalse");
    expect_opts(r, &o, "{{ h.x }}", "ERRhi there");
    expect_opts(r, &o, "{{ n.x }}", "ERR'nm' is undefined");
    tpl_render_free(r);
}

/* ---- a host whose misses name its class (tpl_val_undefined_missing), a macro's attributes read
 * from a callback (tpl_render_getattr), and a host's lists refused by mutating methods (expected
 * outputs from Jinja2 3.1 with a Python class app.Owner of the same attributes) */
static tpl_host_result ow_getattr(void *obj, tpl_render *r, const char *name, size_t len, tpl_val *out)
{
    (void)obj;
    if (len == 1 && name[0] == 'x') { *out = tpl_val_int(1); return TPL_HOST_OK; }
    if (len == 1 && name[0] == 'l') {
        tpl_val l;
        if (tpl_val_list(r, 1, 0, &l) != TPL_OK || tpl_val_list_push(r, l, tpl_val_int(1)) != TPL_OK) return TPL_HOST_ERROR;
        *out = l;
        return TPL_HOST_OK;
    }
    return tpl_val_undefined_missing(r, "app.Owner object", 16, name, len, false, out) == TPL_OK ? TPL_HOST_OK : TPL_HOST_ERROR;
}

static tpl_host_result ow_getitem(void *obj, tpl_render *r, tpl_val key, tpl_val *out)
{
    (void)obj;
    size_t n;
    const char *s = tpl_val_as_str(key, &n);
    if (tpl_val_kind_of(key) == TPL_VAL_STR && n == 1 && s[0] == 'k')
        return tpl_val_str(r, "K", 1, 0, out) == TPL_OK ? TPL_HOST_OK : TPL_HOST_ERROR;
    if (tpl_val_kind_of(key) == TPL_VAL_STR) return TPL_HOST_MISSING; /* (then getattr's miss) */
    return tpl_val_undefined_missing(r, "app.Owner object", 16, "3", 1, true, out) == TPL_OK ? TPL_HOST_OK : TPL_HOST_ERROR;
}

static tpl_host_result mattr_call(void *obj, tpl_render *r, const tpl_val *args, size_t nargs, const tpl_val *kwn,
                                  const tpl_val *kwv, size_t nkw, tpl_val *out)
{
    (void)obj; (void)kwn; (void)kwv; (void)nkw;
    tpl_val name, a, ck;
    if (nargs != 1 || tpl_render_getattr(r, args[0], "name", 4, &name) != TPL_OK ||
        tpl_render_getattr(r, args[0], "arguments", 9, &a) != TPL_OK ||
        tpl_render_getattr(r, args[0], "catch_kwargs", 12, &ck) != TPL_OK)
        return TPL_HOST_ERROR;
    size_t n;
    const char *s = tpl_val_as_str(name, &n);
    char buf[64];
    int w = snprintf(buf, sizeof buf, "%.*s/%zu/%d", (int)n, s ? s : "", tpl_val_len(a), (int)tpl_val_as_bool(ck));
    return tpl_val_str(r, buf, (size_t)w, 0, out) == TPL_OK ? TPL_HOST_OK : TPL_HOST_ERROR;
}

static const tpl_host_class owner_class = { "Owner", ow_getattr, ow_getitem, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL };
static const tpl_host_class mattr_class = { "mattr", NULL, NULL, NULL, NULL, mattr_call, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL };

static void host_misses(void)
{
    char n1[] = "mattr";
    int ow = 0;
    tpl_host_object ma = { &mattr_class, n1 };
    tpl_host_func funcs[1] = { { "mattr", TPL_HOST_GLOBAL, tpl_host_value_fn, &ma } };
    tpl_options o = { 0 };
    o.host_funcs = funcs;
    o.nhost_funcs = 1;
    tpl_render *r = tpl_render_new(NULL);
    tpl_render_set_host_funcs(r, funcs, 1);
    tpl_val st = tpl_val_none(), h = tpl_val_none();
    CHECK(tpl_val_map(r, 1, &st) == TPL_OK && tpl_val_host(r, &owner_class, &ow, &h) == TPL_OK &&
          tpl_val_map_set(r, st, str(r, "o"), h) == TPL_OK && tpl_render_set_state_val(r, st) == TPL_OK, "owner state");
    expect_opts(r, &o, "{{ o.x }}[{{ o.y }}][{{ o['k'] }}][{{ o['q'] }}]{{ o.y is defined }}{{ o.y|default('d') }}{{ o|attr('x') }}",
                "1[][K][]Falsed1");
    expect_opts(r, &o, "{{ o.y.z }}", "ERR'app.Owner object' has no attribute 'y'");
    expect_opts(r, &o, "{{ o['q'].z }}", "ERR'app.Owner object' has no attribute 'q'");
    expect_opts(r, &o, "{{ o[3].z }}", "ERRapp.Owner object has no element 3");
    expect_opts(r, &o, "{{ o.l.append(2) }}", "ERRread from a Python object");
    expect_opts(r, &o, "{% set c = o.l|list %}{{ c.append(2) }}{{ c }}", "None[1, 2]");
    expect_opts(r, &o, "{% macro m(a, b=2) %}{% endmacro %}{{ mattr(m) }}", "m/2/0");
    o.debug_undefined = true;
    expect_opts(r, &o, "[{{ o.y }}][{{ o[3] }}]", "[{{ no such element: app.Owner object['y'] }}][{{ no such element: app.Owner object[3] }}]");
    tpl_render_free(r);
}

/* ---- tpl_val_map_add_str: string keys appended with a hash the host computed (a Python dict's
 * distinct keys), below and above the size at which maps build an index, mixed with map_set */
static void map_add_str(void)
{
    tpl_render *r = tpl_render_new(NULL);
    static const char *const names[] = { "a", "bb", "ccc", "dddd", "e", "f", "g", "h", "i", "j", "k", "l" };
    char src[512], want[256];
    for (int n = 1; n <= 12; n++) {
        tpl_val st, inner;
        CHECK(tpl_render_reset_state(r) == TPL_OK && tpl_val_map(r, 2, &st) == TPL_OK, "state map");
        size_t sl = 0, wl = 0;
        for (int i = 0; i < n; i++) {
            const char *k = names[i];
            tpl_val v = tpl_val_int(i * 10);
            CHECK(tpl_val_map_add_str(r, st, k, strlen(k), tpl_val_key_hash(k, strlen(k)),
                                      TPL_VAL_BORROW | TPL_VAL_UTF8_VALID, v) == TPL_OK, "add %s", k);
            sl += (size_t)snprintf(src + sl, sizeof src - sl, "{{ %s }},", k);
            wl += (size_t)snprintf(want + wl, sizeof want - wl, "%d,", i * 10);
        }
        /* a key set afterwards through map_set finds the appended one (same hash, equal bytes) */
        tpl_val_map_set(r, st, str(r, names[n - 1]), tpl_val_int(-1));
        wl -= (size_t)snprintf(NULL, 0, "%d,", (n - 1) * 10);
        snprintf(want + wl, sizeof want - wl, "-1,");
        CHECK(tpl_val_map(r, 0, &inner) == TPL_OK, "inner map");
        CHECK(tpl_val_map_add_str(r, inner, "k\xc3\xa9", 3, tpl_val_key_hash("k\xc3\xa9", 3), 0, str(r, "v")) == TPL_OK,
              "copied key");
        CHECK(tpl_val_map_add_str(r, inner, "\xff", 1, tpl_val_key_hash("\xff", 1), 0, tpl_val_none()) == TPL_ERR_VALUE,
              "a key that is not UTF-8 is refused");
        CHECK(tpl_val_map_add_str(r, st, "m", 1, tpl_val_key_hash("m", 1), TPL_VAL_MARKUP, inner) == TPL_OK, "add m");
        CHECK(tpl_val_len(st) == (size_t)n + 1 && tpl_render_set_state_val(r, st) == TPL_OK, "len %d", n);
        snprintf(src + sl, sizeof src - sl, "{{ m['k\xc3\xa9'] }}{{ m|length }}{{ m }}{{ nope is defined }}");
        snprintf(want + strlen(want), sizeof want - strlen(want), "v1{'k\xc3\xa9': 'v'}False");
        expect(r, src, want);
    }
    tpl_render_free(r);
}

/* ---- tpl_val_map_of_str / tpl_val_list_of: maps and lists built at once, below and above the
 * size at which maps build an index; bad keys refused */
static void built_at_once(void)
{
    tpl_render *r = tpl_render_new(NULL);
    static const char *const names[] = { "a", "bb", "ccc", "dddd", "e", "f", "g", "h", "i", "j", "k", "l" };
    char src[512], want[256];
    for (size_t n = 0; n <= 12; n++) {
        tpl_str_entry e[12];
        tpl_val items[12], st = tpl_val_none(), xs = tpl_val_none(), tup = tpl_val_none();
        size_t sl = 0, wl = 0;
        for (size_t i = 0; i < n; i++) {
            e[i] = (tpl_str_entry){ names[i], strlen(names[i]), tpl_val_key_hash(names[i], strlen(names[i])),
                                    tpl_val_int((int64_t)i * 10) };
            items[i] = tpl_val_int((int64_t)i);
            sl += (size_t)snprintf(src + sl, sizeof src - sl, "{{ %s }},", names[i]);
            wl += (size_t)snprintf(want + wl, sizeof want - wl, "%d,", i ? (int)i * 10 : -1); /* a: set again below */
        }
        CHECK(tpl_render_reset_state(r) == TPL_OK && tpl_val_list_of(r, items, n, 0, &xs) == TPL_OK &&
              tpl_val_list_of(r, items, n < 2 ? n : 2, TPL_VAL_AS_TUPLE, &tup) == TPL_OK, "lists of %zu", n);
        tpl_str_entry more[13];
        memcpy(more, e, sizeof e);
        more[n] = (tpl_str_entry){ "xs", 2, tpl_val_key_hash("xs", 2), xs };
        CHECK(tpl_val_map_of_str(r, more, n + 1, TPL_VAL_BORROW | TPL_VAL_UTF8_VALID, &st) == TPL_OK, "map of %zu", n);
        CHECK(tpl_val_map_add_str(r, st, "t", 1, tpl_val_key_hash("t", 1), 0, tup) == TPL_OK &&
              tpl_val_map_set(r, st, str(r, "a"), tpl_val_int(-1)) == TPL_OK, "add to it");
        CHECK(tpl_val_len(st) == n + 2 + (n == 0) && tpl_render_set_state_val(r, st) == TPL_OK, "len %zu", n);
        snprintf(src + sl, sizeof src - sl, "{{ xs }}{{ t }}{{ nope is defined }}");
        char list[128] = "[", tup_s[32];
        for (size_t i = 0; i < n; i++) snprintf(list + strlen(list), sizeof list - strlen(list), i ? ", %zu" : "%zu", i);
        strcat(list, "]");
        snprintf(tup_s, sizeof tup_s, n == 0 ? "()" : n == 1 ? "(0,)" : "(0, 1)");
        snprintf(want + wl, sizeof want - wl, "%s%sFalse", list, tup_s);
        expect(r, src, want);
    }
    tpl_val m;
    tpl_str_entry bad = { "\xff", 1, tpl_val_key_hash("\xff", 1), tpl_val_none() };
    CHECK(tpl_val_map_of_str(r, &bad, 1, 0, &m) == TPL_ERR_VALUE, "a key that is not UTF-8 is refused");
    tpl_str_entry copied = { "k\xc3\xa9", 3, tpl_val_key_hash("k\xc3\xa9", 3), tpl_val_bool(true) };
    CHECK(tpl_val_map_of_str(r, &copied, 1, TPL_VAL_MARKUP, &m) == TPL_OK && tpl_val_len(m) == 1 &&
          tpl_val_is_markup(tpl_val_map_key(m, 0)) && tpl_val_as_bool(tpl_val_map_value(m, 0)), "copied markup key");
    /* tpl_val_str_borrow: the string itself (not a copy), no render context needed */
    static const char word[] = "w\xc3\xa9rd";
    tpl_val b, e2 = tpl_val_none();
    size_t bl = 0;
    CHECK(tpl_val_str_borrow(word, 5, &b) == TPL_OK && tpl_val_kind_of(b) == TPL_VAL_STR &&
          tpl_val_as_str(b, &bl) == word && bl == 5 && !tpl_val_is_markup(b), "borrowed str");
    CHECK(tpl_val_str_borrow(NULL, 0, &e2) == TPL_OK && tpl_val_as_str(e2, &bl) && bl == 0, "borrowed empty str");
    CHECK(tpl_val_str_borrow(NULL, 1, &e2) == TPL_ERR_USAGE && tpl_val_str_borrow(word, 5, NULL) == TPL_ERR_USAGE,
          "borrow: usage errors");
    CHECK(tpl_val_str_borrow(word, (size_t)UINT32_MAX, &e2) == TPL_ERR_VALUE, "borrow: 4 GiB refused");
    tpl_str_entry be = { "b", 1, tpl_val_key_hash("b", 1), b };
    CHECK(tpl_render_reset_state(r) == TPL_OK && tpl_val_map_of_str(r, &be, 1, TPL_VAL_BORROW | TPL_VAL_UTF8_VALID, &m) == TPL_OK &&
          tpl_render_set_state_val(r, m) == TPL_OK, "borrowed str in the state");
    expect(r, "{{ b }}|{{ b|upper }}|{{ b|length }}", "w\xc3\xa9rd|W\xc3\x89RD|4");
    /* tpl_val_map_of_strs: string keys with borrowed string values, below and above the size at
     * which maps build an index, as a list of messages */
    static const char *const vals[] = { "system", "  hi  ", "", "w\xc3\xa9rd", "e", "f", "g", "h", "i", "j", "k", "l" };
    for (size_t n = 0; n <= 12; n++) {
        tpl_str_str ss[12];
        char src2[2048], want2[512];
        size_t sl = 0, wl = 0;
        for (size_t i = 0; i < n; i++) {
            ss[i] = (tpl_str_str){ names[i], vals[i], (uint32_t)strlen(names[i]), (uint32_t)strlen(vals[i]),
                                   tpl_val_key_hash(names[i], strlen(names[i])) };
            sl += (size_t)snprintf(src2 + sl, sizeof src2 - sl, "[{{ m[0]['%s']|trim }}{{ m[1].%s is string }}]", names[i],
                                   names[i]);
            wl += (size_t)snprintf(want2 + wl, sizeof want2 - wl, "[%s%s]", i == 1 ? "hi" : vals[i], "True");
        }
        tpl_val two[2] = { 0 }, xs = { 0 };
        CHECK(tpl_render_reset_state(r) == TPL_OK && tpl_val_map_of_strs(r, ss, n, &two[0]) == TPL_OK &&
              tpl_val_map_of_strs(r, ss, n, &two[1]) == TPL_OK && tpl_val_len(two[0]) == n &&
              tpl_val_list_of(r, two, 2, 0, &xs) == TPL_OK, "map of %zu strs", n);
        size_t vl = 0;
        CHECK(n == 0 || (tpl_val_as_str(tpl_val_map_value(two[0], 0), &vl) == vals[0] && vl == 6), "borrowed value");
        tpl_str_entry top = { "m", 1, tpl_val_key_hash("m", 1), xs };
        CHECK(tpl_val_map_of_str(r, &top, 1, TPL_VAL_BORROW | TPL_VAL_UTF8_VALID, &m) == TPL_OK &&
              tpl_render_set_state_val(r, m) == TPL_OK, "the list as the state");
        snprintf(src2 + sl, sizeof src2 - sl, "{{ m[0]|length }}{{ m[0].nope is defined }}{{ m[0] == m[1] }}");
        snprintf(want2 + wl, sizeof want2 - wl, "%zuFalseTrue", n);
        expect(r, src2, want2);
        /* the same list at once (tpl_val_list_of_str_maps): n entries, then n again; as a tuple
         * of the first map and an empty one too */
        tpl_str_str ss2[24];
        for (size_t i = 0; i < n; i++) ss2[i] = ss2[n + i] = ss[i];
        uint32_t counts[2] = { (uint32_t)n, (uint32_t)n }, counts2[2] = { (uint32_t)n, 0 };
        tpl_val tu = { 0 };
        CHECK(tpl_render_reset_state(r) == TPL_OK && tpl_val_list_of_str_maps(r, ss2, counts, 2, 0, &xs) == TPL_OK &&
              tpl_val_kind_of(xs) == TPL_VAL_LIST && tpl_val_len(xs) == 2 &&
              tpl_val_len(tpl_val_item(xs, 1)) == n &&
              tpl_val_list_of_str_maps(r, ss2, counts2, 2, TPL_VAL_AS_TUPLE, &tu) == TPL_OK &&
              tpl_val_kind_of(tu) == TPL_VAL_TUPLE && tpl_val_len(tpl_val_item(tu, 1)) == 0, "list of %zu-str maps", n);
        vl = 0;
        CHECK(n == 0 || (tpl_val_as_str(tpl_val_map_value(tpl_val_item(xs, 1), 0), &vl) == vals[0] && vl == 6),
              "list of maps: borrowed value");
        tpl_str_entry top2[2] = { { "m", 1, tpl_val_key_hash("m", 1), xs }, { "t", 1, tpl_val_key_hash("t", 1), tu } };
        CHECK(tpl_val_map_of_str(r, top2, 2, TPL_VAL_BORROW | TPL_VAL_UTF8_VALID, &m) == TPL_OK &&
              tpl_render_set_state_val(r, m) == TPL_OK, "the list of maps as the state");
        expect(r, src2, want2);
        char src3[128], want3[64];
        snprintf(src3, sizeof src3, "{{ t|length }}{{ t[0] == m[0] }}{{ t[1]|length }}{{ t is sequence }}{{ m[1].%s }}",
                 n ? names[0] : "x");
        snprintf(want3, sizeof want3, "2True0True%s", n ? vals[0] : "");
        expect(r, src3, want3);
    }
    tpl_str_str bads[] = { { NULL, "v", 1, 1, 0 }, { "k", NULL, 1, 1, 0 }, { "k", "v", UINT32_MAX, 1, 0 },
                           { "k", "v", 1, UINT32_MAX, 0 } };
    for (size_t i = 0; i < sizeof bads / sizeof bads[0]; i++)
        CHECK(tpl_val_map_of_strs(r, &bads[i], 1, &m) == TPL_ERR_USAGE, "map_of_strs: bad entry %zu", i);
    CHECK(tpl_val_map_of_strs(NULL, bads, 0, &m) == TPL_ERR_USAGE && tpl_val_map_of_strs(r, NULL, 1, &m) == TPL_ERR_USAGE &&
          tpl_val_map_of_strs(r, bads, 0, NULL) == TPL_ERR_USAGE && tpl_val_map_of_strs(r, NULL, 0, &m) == TPL_OK &&
          tpl_val_len(m) == 0, "map_of_strs: usage errors, an empty map");
    {
        uint32_t big[1] = { UINT32_MAX / 4 + 1 }, one[1] = { 1 };
        tpl_val l = { 0 };
        CHECK(tpl_val_list_of_str_maps(NULL, bads, one, 1, 0, &l) == TPL_ERR_USAGE &&
                  tpl_val_list_of_str_maps(r, bads, NULL, 1, 0, &l) == TPL_ERR_USAGE &&
                  tpl_val_list_of_str_maps(r, NULL, one, 1, 0, &l) == TPL_ERR_USAGE &&
                  tpl_val_list_of_str_maps(r, bads, one, 1, 0, NULL) == TPL_ERR_USAGE &&
                  tpl_val_list_of_str_maps(r, &bads[1], one, 1, 0, &l) == TPL_ERR_USAGE &&
                  tpl_val_list_of_str_maps(r, bads, big, 1, 0, &l) == TPL_ERR_LIMIT &&
                  tpl_val_list_of_str_maps(r, NULL, NULL, 0, 0, &l) == TPL_OK && tpl_val_len(l) == 0,
              "list_of_str_maps: usage errors, limits, an empty list");
    }
    tpl_render_free(r);
}

/* ---- tpl_val_int_text: integers of any size from a host (Python's and Ruby's ints), and their
 * kind and text back (issue 14) */
static void int_text(void)
{
    tpl_render *r = tpl_render_new(NULL);
    tpl_val st = tpl_val_none(), v = tpl_val_none(), w, small = tpl_val_none();
    CHECK(tpl_render_reset_state(r) == TPL_OK && tpl_val_map(r, 2, &st) == TPL_OK, "state map");
    CHECK(tpl_val_int_text(r, "-100000000000000000000000000000000", 34, 16, &v) == TPL_OK, "hex big int");
    CHECK(tpl_val_kind_of(v) == TPL_VAL_BIGINT, "kind %d", (int)tpl_val_kind_of(v));
    size_t n = 0;
    const char *t = tpl_val_as_str(v, &n);
    CHECK(t && n == 40 && memcmp(t, "-340282366920938463463374607431768211456", 40) == 0, "decimal text %.*s", (int)n, t);
    CHECK(tpl_val_int_text(r, "+9223372036854775807", 20, 10, &small) == TPL_OK && tpl_val_kind_of(small) == TPL_VAL_INT &&
          tpl_val_as_int(small) == INT64_MAX, "a value that fits is an int");
    CHECK(tpl_val_int_text(r, "9223372036854775808", 19, 10, &w) == TPL_OK && tpl_val_kind_of(w) == TPL_VAL_BIGINT, "2**63");
    CHECK(tpl_val_int_text(r, "12z", 3, 10, &w) == TPL_ERR_VALUE, "not a number");
    CHECK(tpl_val_int_text(r, "-", 1, 10, &w) == TPL_ERR_VALUE, "a sign alone");
    CHECK(tpl_val_int_text(r, "0x1f", 4, 16, &w) == TPL_ERR_VALUE, "no prefix");
    CHECK(tpl_val_int_text(r, "1", 1, 37, &w) == TPL_ERR_USAGE, "base 37");
    CHECK(tpl_val_int_text(NULL, "1", 1, 10, &w) == TPL_ERR_USAGE, "NULL r");
    tpl_val_map_set(r, st, str(r, "v"), v);
    tpl_val_map_set(r, st, str(r, "s"), small);
    CHECK(tpl_render_set_state_val(r, st) == TPL_OK, "state");
    expect(r, "{{ v }} {{ v + 1 }} {{ v // 2**64 }} {{ s + 1 }} {{ [v]|tojson }}",
           "-340282366920938463463374607431768211456 -340282366920938463463374607431768211455 "
           "-18446744073709551616 9223372036854775808 [-340282366920938463463374607431768211456]");
    tpl_render_free(r);
}

/* ---- tpl_render_set_globals_val: names below the state that every template sees, one imported
 * or included without context too (as Jinja2's Environment.globals; expected outputs from Jinja2
 * 3.1 with env.globals = {'g': 'G'}) */
static char *globals_loader(void *data, const char *name, size_t len, size_t *n)
{
    (void)data;
    const char *src = len == 1 && name[0] == 'm' ? "{% macro f() %}[{{ g }}|{{ x }}]{% endmacro %}{% set top = g %}"
                    : len == 1 && name[0] == 'i' ? "<{{ g }}|{{ x }}>" : NULL;
    if (!src) return NULL;
    *n = strlen(src);
    char *s = malloc(*n + 1);
    if (s) memcpy(s, src, *n + 1);
    return s;
}

static void globals_layer(void)
{
    tpl_options o;
    memset(&o, 0, sizeof o); /* (tpl_options_profile keeps the loader and the compile memory limit) */
    tpl_options_profile(&o, TPL_SYNTAX_JINJA, "jinja2");
    o.loader = globals_loader;
    const char *src = "{% import 'm' as m %}{{ m.f() }}{{ m.top }}{% include 'i' without context %}{% include 'i' %}"
                      "{% from 'm' import f %}{{ f() }}{{ g }}{{ x }}";
    tpl_render *r = tpl_render_new(NULL);
    tpl_val st = tpl_val_none(), gl = tpl_val_none();
    CHECK(tpl_val_map(r, 1, &st) == TPL_OK && tpl_val_map(r, 1, &gl) == TPL_OK, "maps");
    tpl_val_map_set(r, st, str(r, "x"), str(r, "X"));
    tpl_val_map_set(r, gl, str(r, "g"), str(r, "G"));
    CHECK(tpl_render_set_state_val(r, st) == TPL_OK && tpl_render_set_globals_val(r, gl) == TPL_OK, "set globals");
    expect_opts(r, &o, src, "[G|]G<G|><G|X>[G|]GX");
    expect_opts(r, &o, src, "[G|]G<G|><G|X>[G|]GX"); /* (kept across renders) */
    tpl_val_map_set(r, st, str(r, "g"), str(r, "S")); /* the state's g over the globals' */
    expect_opts(r, &o, src, "[G|]G<G|><S|X>[G|]SX");
    CHECK(tpl_render_set_globals_val(r, tpl_val_none()) == TPL_OK, "globals removed");
    expect_opts(r, &o, "[{{ g }}]{% include 'i' without context %}", "[S]<|>");
    tpl_render_set_globals_val(r, gl);
    CHECK(tpl_render_reset_state(r) == TPL_OK, "reset");
    expect_opts(r, &o, "[{{ g }}]{% include 'i' without context %}", "[]<|>"); /* dropped with the state */
    tpl_render_free(r);
}

/* ---- tpl_render_set_output: the output in pieces as the render produces it (their text joined
 * is the output without it), a refusal stops the render, the output limit counts every piece */
typedef struct sink {
    char buf[1 << 16];
    size_t len;
    int pieces, stop_after;
} sink;

static int sink_write(void *data, const void *bytes, size_t len)
{
    sink *k = data;
    if (k->stop_after && k->pieces >= k->stop_after) return 1;
    if (k->len + len <= sizeof k->buf) memcpy(k->buf + k->len, bytes, len);
    k->len += len;
    k->pieces++;
    return 0;
}

static void output_pieces(void)
{
    const char *src = "{% for i in range(n) %}{{ i }} {{ 'x' * 50 }}\n{% endfor %}{% macro m() %}{{ 'y' * 9000 }}"
                      "{% endmacro %}{% set b %}{{ 'z' * 5000 }}{% endset %}[{{ m()|length }}|{{ b|length }}]";
    tpl_program *p = compile(src);
    tpl_render *r = tpl_render_new(NULL);
    tpl_val st;
    tpl_val_map(r, 1, &st);
    tpl_val_map_set(r, st, str(r, "n"), tpl_val_int(1000));
    tpl_render_set_state_val(r, st);
    const char *out;
    size_t n;
    CHECK(tpl_render_run(r, p, &out, &n) == TPL_OK, "whole");
    char *whole = malloc(n + 1);
    memcpy(whole, out, n + 1);
    size_t wn = n;
    static sink k;
    tpl_render_set_output(r, sink_write, &k);
    CHECK(tpl_render_run(r, p, &out, &n) == TPL_OK && n == 0 && out && !out[0], "streamed: *out empty");
    CHECK(k.len == wn && memcmp(k.buf, whole, wn) == 0 && k.pieces > 3, "pieces joined (%zu of %zu bytes, %d pieces)",
          k.len, wn, k.pieces);
    k.len = 0;
    k.pieces = 0;
    k.stop_after = 2;
    CHECK(tpl_render_run(r, p, &out, &n) == TPL_ERR_IO && tpl_render_error(r)->kind == TPL_EK_IO && k.pieces == 2,
          "a refusal stops the render");
    tpl_render_set_output(r, NULL, NULL);
    CHECK(tpl_render_run(r, p, &out, &n) == TPL_OK && n == wn, "whole again");
    tpl_render_free(r);
    tpl_limits lim = { 0 };
    lim.max_output = 20000;
    r = tpl_render_new(&lim);
    tpl_val_map(r, 1, &st);
    tpl_val_map_set(r, st, str(r, "n"), tpl_val_int(1000));
    tpl_render_set_state_val(r, st);
    k.len = 0;
    k.pieces = 0;
    k.stop_after = 0;
    tpl_render_set_output(r, sink_write, &k);
    CHECK(tpl_render_run(r, p, &out, &n) == TPL_ERR_LIMIT && k.len <= 20000, "limit over pieces (%zu written)", k.len);
    tpl_render_free(r);
    tpl_program_free(p);
    free(whole);
}

/* ---- a one-shot host iterator (TPL_HOST_ITERATOR): its items asked one at a time, as taken */
typedef struct counter {
    int next, end;  /* the next item; end < 0: endless */
    int calls;
} counter;

static tpl_host_result ctr_next(void *obj, tpl_render *r, tpl_val *out)
{
    counter *c = obj;
    (void)r;
    c->calls++;
    if (c->end >= 0 && c->next >= c->end) return TPL_HOST_MISSING;
    *out = tpl_val_int(c->next++);
    return TPL_HOST_OK;
}

static const char *ctr_type(void *obj, unsigned *numeric)
{
    (void)obj;
    *numeric = TPL_HOST_ITERATOR;
    return "counter";
}

static const tpl_host_class counter_class = { "counter", NULL, NULL, ctr_next, NULL, NULL, NULL, NULL, NULL, NULL,
                                              NULL, ctr_type, NULL, NULL, NULL };

static const char *render_counter(const char *src, counter *c)
{
    tpl_options o = { 0 };
    o.loop_controls = true;
    tpl_program *p = NULL;
    tpl_error err = { 0 };
    if (tpl_compile("t.jinja", src, strlen(src), &o, &p, &err) != TPL_OK) {
        tpl_error_clear(&err);
        return "compile error";
    }
    tpl_render *r = tpl_render_new(NULL);
    tpl_val st, it;
    tpl_val_map(r, 1, &st);
    tpl_val_host(r, &counter_class, c, &it);
    tpl_val_map_set(r, st, str(r, "it"), it);
    tpl_render_set_state_val(r, st);
    const char *out = render(r, p);
    tpl_render_free(r);
    tpl_program_free(p);
    return out;
}

static void host_iterators(void)
{
    counter c = { 0, -1, 0 };
    const char *out = render_counter("{% for x in it %}{{ x }}{% if x == 3 %}{% break %}{% endif %}{% endfor %}", &c);
    CHECK(strcmp(out, "0123") == 0 && c.calls == 4, "endless iterator left with break: %s (%d calls)", out, c.calls);
    c = (counter){ 0, -1, 0 };
    out = render_counter("{{ it|first }}{{ it|first }}{{ 5 in it }}{{ it|first }}", &c);
    CHECK(strcmp(out, "01True6") == 0 && c.calls == 7, "|first and in take what they need: %s (%d calls)", out, c.calls);
    c = (counter){ 0, 3, 0 };
    out = render_counter("{{ it|list }}{{ it|list }}", &c);
    CHECK(strcmp(out, "[0, 1, 2][]") == 0, "read whole once: %s", out);
}

int main(void)
{
    host_iterators();
    globals_layer();
    output_pieces();
    built_at_once();
    int_text();
    map_add_str();
    host_value_functions();
    render_lookup();
    render_call();
    render_rescue();
    render_release();
    host_misses();
    host_numbers();
    environment_settings();
    tpl_render *r = tpl_render_new(NULL);
    person ann = { "Ann", 37, 0, 0, 0, 0, 0, 0, 0, false };
    set_state(r, &ann);

    /* plain values built without JSON print as Jinja2 prints them */
    expect(r, "{{ n + 1 }} {{ xs }} {{ m }} {{ t }} {{ m[1] }} {{ xs|length }}",
           "4 [1, 'two', 3.5, None, True] {'k': 'v', 1: 'one'} (1, 2) one 5");
    expect(r, "{% autoescape true %}{{ safe }}{{ '<i>' }}{% endautoescape %}", "<b>&lt;i&gt;");

    /* lazy: a render that does not read `who` never calls back */
    int before = ann.getattr_calls + ann.str_calls + ann.truth_calls;
    expect(r, "{{ n }}", "3");
    CHECK(ann.getattr_calls + ann.str_calls + ann.truth_calls == before, "an unread host object is not touched");

    /* attribute, item, method call with args and kwargs */
    expect(r, "{{ who.name }} is {{ who.age }}", "Ann is 37");
    expect(r, "{{ who['name'] }} {{ who[0] }}", "Ann 370");
    expect(r, "{{ who.greet() }} {{ who.greet('Hi', punct='?') }}", "Hello, Ann! Hi, Ann?");
    CHECK(ann.call_calls == 2, "greet called twice (%d)", ann.call_calls);
    /* a missing attribute is undefined, as in Jinja2 */
    expect(r, "[{{ who.nope }}]{{ who.nope is defined }}", "[]False");
    /* str, repr inside a container, truthiness, iteration */
    expect(r, "{{ who }} {{ [who] }}", "Ann (37) [<Person Ann>]");
    expect(r, "{% if who %}yes{% endif %}{% if not who %}no{% endif %}", "yes");
    expect(r, "{% for x in who %}{{ loop.index }}={{ x }};{% endfor %}", "1=1;2=Ann;");
    CHECK(ann.iter_calls == 1 && ann.truth_calls == 2, "iter %d truth %d", ann.iter_calls, ann.truth_calls);
    /* builtin filters get the resolved data */
    expect(r, "{{ who|dictsort }} {{ who|length }} {{ who|tojson }}",
           "[('age', 37), ('name', 'Ann')] 2 {\"age\": 37, \"name\": \"Ann\"}");
    CHECK(ann.resolve_calls == 3, "resolve calls %d", ann.resolve_calls);
    /* |length asks the len callback when the class has one */
    tpl_val st2, sz;
    tpl_val_map(r, 1, &st2);
    tpl_val_host(r, &sized_class, &ann, &sz);
    tpl_val_map_set(r, st2, str(r, "sz"), sz);
    tpl_val_map_set(r, st2, str(r, "who"), tpl_val_host(r, &person_class, &ann, &sz) == TPL_OK ? sz : tpl_val_none());
    tpl_render_set_state_val(r, st2);
    expect(r, "{{ sz|length }} {{ who|length }}", "99 2");
    /* |int and |float ask the number callback; a class without one gives the default */
    expect(r, "{{ sz|int }} {{ sz|float }} {{ sz|int + 1 }} {{ who|int(7) }} {{ who|float }}", "37 37.5 38 7 0.0");
    /* tpl_val_undefined: the host's undefined value is the template's (is defined, printing,
     * default, an attribute of it an UndefinedError) */
    CHECK(tpl_val_kind_of(tpl_val_undefined()) == TPL_VAL_UNDEFINED, "tpl_val_undefined kind");
    tpl_val_map_set(r, st2, str(r, "u"), tpl_val_undefined());
    tpl_render_set_state_val(r, st2);
    expect(r, "[{{ u }}]{{ u is defined }} {{ u|default('d') }} {{ [u is undefined, u]|length }}", "[]False d 2");
    expect(r, "{{ u.x }}", "ERR:2:1:undefined value");
    /* not callable: a TypeError naming the class */
    expect(r, "{{ who() }}", "ERR:3:1:'Person' object is not callable");

    /* a failing callback: located TPL_ERR_RAISED with the host's message and payload */
    ann.fail_on_age = true;
    expect(r, "line one\n{{ who.name }}\n{{ who.age }}", "ERR:5:3:Person.getattr 'age' failed: ValueError: age is secret");
    CHECK(tpl_render_error_payload(r) == &payload_token, "payload");
    expect(r, "{{ who.name }}", "Ann");
    CHECK(tpl_render_error_payload(r) == NULL, "payload reset by the next render");
    ann.fail_on_age = false;

    /* the state stays across renders; a reset drops it */
    CHECK(tpl_render_reset_state(r) == TPL_OK, "reset");
    expect(r, "[{{ who }}]", "[]");

    /* a host object built from a callback lives in the render's memory: many renders, flat */
    set_state(r, &ann);
    tpl_program *p = compile("{% for i in range(50) %}{{ who.greet('Yo') }}{% endfor %}");
    for (int i = 0; i < 2000 && p; i++) render(r, p);
    CHECK(strncmp(buf, "Yo, Ann!Yo, Ann!", 16) == 0, "repeated: %.40s", buf);
    tpl_program_free(p);

    /* the memory limit bounds host-built values */
    tpl_limits lim = { 0 };
    lim.max_memory = 1 << 16;
    tpl_render *small = tpl_render_new(&lim);
    tpl_val big;
    tpl_status st = TPL_OK;
    CHECK(tpl_val_list(small, 0, 0, &big) == TPL_OK, "list on small");
    for (int i = 0; i < 100000 && st == TPL_OK; i++) st = tpl_val_list_push(small, big, tpl_val_int(i));
    CHECK(st == TPL_ERR_LIMIT, "memory limit: %d", (int)st);
    tpl_render_free(small);

    /* TPL_VAL_BORROW: the value points at the host's bytes (no copy); TPL_VAL_UTF8_VALID skips
     * the check the plain constructor makes */
    {
        char bbuf[] = "abc";
        tpl_render *b = tpl_render_new(NULL);
        tpl_val bs, bm;
        CHECK(tpl_val_map(b, 1, &bm) == TPL_OK, "borrow map");
        CHECK(tpl_val_str(b, bbuf, 3, TPL_VAL_BORROW | TPL_VAL_UTF8_VALID, &bs) == TPL_OK, "borrowed str");
        CHECK(tpl_val_as_str(bs, NULL) == bbuf, "borrowed: the same bytes");
        CHECK(tpl_val_str(b, "\xff", 1, TPL_VAL_BORROW, &bs) == TPL_ERR_VALUE, "borrowed invalid UTF-8 refused");
        CHECK(tpl_val_str(b, bbuf, 3, TPL_VAL_BORROW, &bs) == TPL_OK, "borrowed, checked");
        tpl_val_map_set(b, bm, str(b, "s"), bs);
        tpl_render_set_state_val(b, bm);
        bbuf[0] = 'x';
        tpl_program *p2 = compile("{{ s }}");
        const char *got = render(b, p2);
        CHECK(strcmp(got, "xbc") == 0, "borrowed string read at render time: %s", got);
        tpl_program_free(p2);
        tpl_render_free(b);
    }

    tpl_render_free(r);
    erb_section();
    printf("%d passed, %d failed\n", npass, nfail);
    return nfail ? 1 : 0;
}
