/* Unit tests for runtime/value.c, runtime/unicode.c and runtime/print.c.
 *
 * Every expected string below was produced by the reference engines (python3 3.11 with
 * Jinja2 3.1, ruby 3.1) and pasted as C literals. Standalone: prints "N passed, N failed" and
 * exits 1 on any failure.
 *
 *   gcc -std=c11 -Wall -Wextra -Werror -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE \
 *       -Iinclude -I. tests/test_runtime.c runtime/value.c runtime/unicode.c runtime/print.c \
 *       -lutf8proc -lm -fsanitize=address,undefined -o /tmp/test_runtime && /tmp/test_runtime
 */
#include "runtime/vm.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct tctx {
    int pass, fail;
    tpl_arena a;   /* values built by the tests */
} tctx;

static void ok(tctx *t, bool cond, int line, const char *what)
{
    if (cond) {
        t->pass++;
        return;
    }
    t->fail++;
    fprintf(stderr, "test_runtime.c:%d: FAIL %s\n", line, what);
}
#define OK(cond) ok(t, (cond), __LINE__, #cond)

static void put_escaped(FILE *f, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7F && c != '\\')
            fputc(c, f);
        else
            fprintf(f, "\\x%02x", c);
    }
}

static void eq_bytes(tctx *t, int line, const char *got, size_t n, const char *exp)
{
    if (n == strlen(exp) && memcmp(got, exp, n) == 0) {
        t->pass++;
        return;
    }
    t->fail++;
    fprintf(stderr, "test_runtime.c:%d: FAIL\n  expected: ", line);
    put_escaped(stderr, exp, strlen(exp));
    fprintf(stderr, "\n  got:      ");
    put_escaped(stderr, got, n);
    fputc('\n', stderr);
}

/* Runs one printer into a heap builder and compares the output. */
typedef void (*printer)(tpl_sb *, tpl_value);
static void eq_print(tctx *t, int line, printer fn, tpl_value v, const char *exp)
{
    tpl_sb b;
    tpl_sb_init(&b, NULL);
    fn(&b, v);
    eq_bytes(t, line, b.p ? b.p : "", b.len, exp);
    tpl_sb_free(&b);
}
#define PY_STR(v, exp) eq_print(t, __LINE__, tpl_py_str, (v), (exp))
#define PY_REPR(v, exp) eq_print(t, __LINE__, tpl_py_repr, (v), (exp))
#define RB_TO_S(v, exp) eq_print(t, __LINE__, tpl_rb_to_s, (v), (exp))
#define RB_INSPECT(v, exp) eq_print(t, __LINE__, tpl_rb_inspect, (v), (exp))

/* json.dumps into an arena builder; exp NULL means "not serialisable". */
static void eq_json(tctx *t, int line, tpl_value v, bool ascii, int indent, const char *isep,
                    const char *ksep, bool sort, const char *exp)
{
    tpl_sb b;
    tpl_sb_init(&b, &t->a);
    tpl_sb_puts(&b, "<");
    bool r = tpl_json_dumps(&b, v, ascii, indent, isep, ksep, sort);
    if (!exp) {
        ok(t, !r && b.len == 1, line, "json.dumps should fail and leave the builder unchanged");
        return;
    }
    ok(t, r, line, "json.dumps should succeed");
    eq_bytes(t, line, b.p + 1, b.len - 1, exp);
}
#define JSON(v, ascii, indent, isep, ksep, sort, exp) \
    eq_json(t, __LINE__, (v), (ascii), (indent), (isep), (ksep), (sort), (exp))

static void eq_tojson(tctx *t, int line, tpl_value v, int indent, const char *exp)
{
    tpl_sb b;
    tpl_sb_init(&b, &t->a);
    bool r = tpl_json_dumps_htmlsafe(&b, v, indent);
    ok(t, r, line, "tojson should succeed");
    eq_bytes(t, line, b.p, b.len, exp);
}

/* ------------------------------------------------------------------ value builders */

static tpl_value S(const char *s) { return tpl_v_str(s, strlen(s)); }
static tpl_value I(int64_t i) { return tpl_v_int(i); }
static tpl_value F(double f) { return tpl_v_float(f); }
static tpl_value B(bool b) { return tpl_v_bool(b); }
static tpl_value N(void) { return tpl_v_none(); }

static tpl_value vlist(tctx *t, uint8_t flags, int n, va_list ap)
{
    tpl_list *l = tpl_list_new(&t->a, 0);
    for (int k = 0; k < n; k++)
        tpl_list_push(&t->a, l, va_arg(ap, tpl_value));
    tpl_value v = tpl_v_list(l);
    v.flags = flags;
    return v;
}

static tpl_value L(tctx *t, int n, ...)
{
    va_list ap;
    va_start(ap, n);
    tpl_value v = vlist(t, 0, n, ap);
    va_end(ap);
    return v;
}

static tpl_value T(tctx *t, int n, ...)
{
    va_list ap;
    va_start(ap, n);
    tpl_value v = vlist(t, TPL_F_TUPLE, n, ap);
    va_end(ap);
    return v;
}

/* M(t, n, k1, v1, ..., kn, vn) */
static tpl_value M(tctx *t, int n, ...)
{
    va_list ap;
    va_start(ap, n);
    tpl_map *m = tpl_map_new(&t->a, 0);
    for (int k = 0; k < n; k++) {
        tpl_value key = va_arg(ap, tpl_value);
        tpl_value val = va_arg(ap, tpl_value);
        tpl_map_set(&t->a, m, key, val);
    }
    va_end(ap);
    return tpl_v_map(m);
}

static tpl_value with_flags(tpl_value v, uint8_t flags)
{
    v.flags = flags;
    return v;
}

/* ------------------------------------------------------------------ value.c */

static void test_arena(tctx *t)
{
    tpl_arena a;
    tpl_arena_init(&a, 0);
    for (size_t n = 0; n < 3000; n += 7) {
        unsigned char *p = tpl_arena_alloc(&a, n);
        OK(p && ((uintptr_t)p & 15) == 0);
        if (p && n)
            memset(p, 0xAB, n);
    }
    char *s = tpl_arena_strdup(&a, "hello", 3);
    OK(s && strcmp(s, "hel") == 0);
    OK(tpl_arena_alloc(&a, 5u << 20) != NULL);   /* a dedicated chunk */
    OK(tpl_arena_alloc(&a, 100) != NULL);
    size_t sum = 0, nchunks = 0;
    for (tpl_chunk *c = a.head; c; c = c->next, nchunks++)
        sum += c->size;
    OK(nchunks > 1 && sum == a.total);
    tpl_arena_reset(&a);
    OK(a.head && !a.head->next && a.head->size == sum && a.head->used == 0 && a.total == sum);
    /* Steady state: the same workload again fits the kept chunk without a new one. */
    for (size_t n = 0; n < 3000; n += 7)
        tpl_arena_alloc(&a, n);
    OK(tpl_arena_alloc(&a, 5u << 20) != NULL && tpl_arena_alloc(&a, 100) != NULL);
    OK(a.head && !a.head->next && a.total == sum);
    tpl_arena_reset(&a);
    OK(a.head && !a.head->next && a.total == sum);
    tpl_arena_free(&a);
    OK(a.head == NULL && a.total == 0);

    tpl_arena_init(&a, 100000);
    OK(tpl_arena_alloc(&a, 60000) != NULL);
    OK(!a.over_limit);
    OK(tpl_arena_alloc(&a, 60000) == NULL);
    OK(a.over_limit);
    OK(a.total <= 100000);
    OK(tpl_arena_alloc(&a, 16) != NULL);   /* small allocations still fit */
    tpl_arena_reset(&a);
    OK(!a.over_limit);
    OK(tpl_arena_alloc(&a, 90000) != NULL);
    tpl_arena_free(&a);

    /* zero_chunks (a render context's arenas, whose bytes tpl_render_rescue compares): a chunk
     * comes zeroed even when malloc hands back memory a freed chunk dirtied; off by default */
    tpl_arena_init(&a, 0);
    OK(!a.zero_chunks);
    unsigned char *d = tpl_arena_alloc(&a, 20000);
    OK(d != NULL);
    if (d) memset(d, 0xCD, 20000);
    tpl_arena_free(&a);
    tpl_arena_init(&a, 0);
    a.zero_chunks = true;
    unsigned char *z = tpl_arena_alloc(&a, 20000);
    bool all_zero = z != NULL;
    for (size_t i = 0; z && i < 20000; i++) all_zero &= z[i] == 0;
    OK(all_zero);
    tpl_arena_free(&a);
}

static void test_lists_maps(tctx *t)
{
    tpl_arena *a = &t->a;
    tpl_list *l = tpl_list_new(a, 0);
    bool pushed = true;
    for (int k = 0; k < 1000; k++)
        pushed &= tpl_list_push(a, l, I(k));
    OK(pushed && l->len == 1000 && l->items[999].u.i == 999 && l->items[0].u.i == 0);

    /* Small map: linear scan; Python key equality 1 == 1.0 == True. */
    tpl_map *m = tpl_map_new(a, 2);
    OK(tpl_map_set(a, m, I(1), S("one")));
    OK(tpl_map_set(a, m, S("a"), I(2)));
    OK(tpl_map_set(a, m, F(1.0), S("uno")));   /* replaces, keeps the key 1 and position */
    OK(m->len == 2 && m->e[0].key.type == TPL_T_INT);
    tpl_value *v = tpl_map_get(m, B(true));
    OK(v && v->len == 3 && memcmp(v->u.s, "uno", 3) == 0);
    OK(tpl_map_get(m, F(1.5)) == NULL);
    OK(tpl_map_get(m, S("b")) == NULL);
    OK(tpl_map_get_str(m, "a", 1, tpl_hash_str("a", 1)) != NULL);
    OK(tpl_map_get_str(m, "ab", 2, tpl_hash_str("ab", 2)) == NULL);

    /* Large map: hashed index, insertion order, deletes keep order. */
    tpl_map *big = tpl_map_new(a, 0);
    char *keys = tpl_arena_alloc(a, 200 * 8);
    bool set = true;
    for (int k = 0; k < 200; k++) {
        snprintf(keys + k * 8, 8, "k%d", k);
        set &= tpl_map_set(a, big, S(keys + k * 8), I(k));
    }
    OK(set && big->len == 200 && big->idx_cap >= 400);
    bool found = true;
    for (int k = 0; k < 200; k++) {
        const char *key = keys + k * 8;
        tpl_value *x = tpl_map_get_str(big, key, strlen(key), tpl_hash_str(key, strlen(key)));
        found &= x && x->u.i == k && big->e[k].val.u.i == k;
    }
    OK(found);
    OK(tpl_map_set(a, big, S("k5"), I(-5)) && big->len == 200 && big->e[5].val.u.i == -5);
    OK(tpl_map_del(big, S("k0")) && tpl_map_del(big, S("k100")) && !tpl_map_del(big, S("k100")));
    OK(big->len == 198 && big->e[0].val.u.i == 1 && big->e[99].val.u.i == 101);
    OK(tpl_map_get(big, S("k100")) == NULL && tpl_map_get(big, S("k199"))->u.i == 199);
    OK(tpl_map_set(a, big, S("k0"), I(0)) && big->e[198].val.u.i == 0);
    OK(tpl_map_get(big, S("k0")) != NULL);
    /* Numeric keys in a big map. */
    tpl_map *nums = tpl_map_new(a, 0);
    for (int k = 0; k < 50; k++)
        tpl_map_set(a, nums, I(k), I(k * k));
    OK(tpl_map_get(nums, F(7.0))->u.i == 49 && tpl_map_get(nums, B(true))->u.i == 1);
    OK(tpl_map_get(nums, F(7.5)) == NULL);
    /* Deleting down to a small map and adding again. */
    for (int k = 0; k < 45; k++)
        tpl_map_del(nums, I(k));
    OK(nums->len == 5 && nums->e[0].key.u.i == 45);
    tpl_map_set(a, nums, I(1000), I(1));
    OK(tpl_map_get(nums, I(1000)) && tpl_map_get(nums, I(49)) && !tpl_map_get(nums, I(3)));
}

static void test_equal_hash(tctx *t)
{
    OK(tpl_equal(I(1), F(1.0)) && tpl_equal(I(1), B(true)) && tpl_equal(F(0.0), B(false)));
    OK(!tpl_equal(F(0.5), I(0)) && !tpl_equal(I(1), S("1")));
    OK(!tpl_equal(I(9007199254740993), F(9007199254740992.0)));
    OK(tpl_equal(I(INT64_MIN), F(-9223372036854775808.0)));
    OK(!tpl_equal(I(INT64_MAX), F(9223372036854775808.0)));
    OK(!tpl_equal(F(NAN), F(NAN)) && tpl_equal(F(-0.0), I(0)));
    OK(tpl_equal(S("abc"), S("abc")) && !tpl_equal(S("abc"), S("abd")) && tpl_equal(S(""), S("")));
    OK(tpl_equal(N(), N()) && !tpl_equal(N(), B(false)));
    OK(tpl_equal(tpl_v_undef(), tpl_v_undef()) && !tpl_equal(tpl_v_undef(), N()));
    OK(tpl_equal(L(t, 2, I(1), S("x")), L(t, 2, F(1.0), S("x"))));
    OK(!tpl_equal(L(t, 1, I(1)), T(t, 1, I(1))) && tpl_equal(T(t, 1, I(1)), T(t, 1, B(true))));
    OK(!tpl_equal(L(t, 1, I(1)), L(t, 2, I(1), I(2))));
    OK(tpl_equal(M(t, 2, S("a"), I(1), S("b"), L(t, 0)), M(t, 2, S("b"), L(t, 0), S("a"), F(1.0))));
    OK(!tpl_equal(M(t, 1, S("a"), I(1)), M(t, 1, S("a"), I(2))));
    OK(!tpl_equal(M(t, 1, S("a"), I(1)), M(t, 1, S("b"), I(1))));
    tpl_value ns = M(t, 1, S("a"), I(1));
    OK(!tpl_equal(with_flags(ns, TPL_F_NS), with_flags(M(t, 1, S("a"), I(1)), TPL_F_NS)));
    OK(tpl_equal(with_flags(ns, TPL_F_NS), with_flags(ns, TPL_F_NS)));

    OK(tpl_hash_value(I(1)) == tpl_hash_value(F(1.0)) && tpl_hash_value(I(1)) == tpl_hash_value(B(true)));
    OK(tpl_hash_value(F(-0.0)) == tpl_hash_value(I(0)));
    OK(tpl_hash_value(I(-7)) == tpl_hash_value(F(-7.0)) && tpl_hash_value(I(1)) != tpl_hash_value(I(2)));
    OK(tpl_hash_value(S("key")) == tpl_hash_str("key", 3));
    OK(tpl_hash_value(T(t, 2, I(1), S("x"))) == tpl_hash_value(T(t, 2, B(true), S("x"))));
    OK(tpl_hash_str("", 0) == 0xcbf29ce484222325u);
    /* A list containing itself: equality and hashing terminate. */
    tpl_value self = L(t, 1, I(1));
    tpl_list_push(&t->a, self.u.list, self);
    OK(tpl_equal(self, self));
    (void)tpl_hash_value(self);
}

static void test_sb(tctx *t)
{
    tpl_sb b;
    tpl_sb_init(&b, NULL);
    for (int k = 0; k < 1000; k++)
        tpl_sb_printf(&b, "%d,", k);
    OK(!b.failed && b.len == 3890 && memcmp(b.p, "0,1,2,", 6) == 0 && memcmp(b.p + b.len - 4, "999,", 4) == 0);
    tpl_sb_printf(&b, "%s", "");
    OK(b.len == 3890);
    tpl_sb_free(&b);

    tpl_sb_init(&b, &t->a);
    tpl_sb_puts(&b, "x");
    tpl_sb_printf(&b, "[%0500d]", 7);
    tpl_sb_put_cp(&b, 0xE9);
    tpl_sb_put_cp(&b, 0x20AC);
    tpl_sb_put_cp(&b, 0x1F600);
    tpl_sb_put_cp(&b, 0xD800);   /* not encodable: U+FFFD */
    tpl_sb_putc(&b, '!');
    OK(!b.failed && b.len == 1 + 502 + 2 + 3 + 4 + 3 + 1);
    OK(memcmp(b.p + 503, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xef\xbf\xbd!", 13) == 0);
    tpl_value v = tpl_sb_value(&b);
    OK(v.type == TPL_T_STR && v.len == b.len);

    /* Growth in place: the builder's buffer is the newest allocation of the head chunk. */
    tpl_arena a;
    tpl_arena_init(&a, 0);
    tpl_sb_init(&b, &a);
    tpl_sb_puts(&b, "ab");
    const char *first = b.p;
    for (int k = 0; k < 100; k++)
        tpl_sb_puts(&b, "0123456789");
    OK(b.p == first && b.len == 1002);
    tpl_sb_init(&b, NULL);
    OK(tpl_sb_value(&b).len == 0 && tpl_sb_value(&b).u.s != NULL);
    tpl_arena_free(&a);

    /* Allocation failure: flagged, truncated, never a crash. */
    tpl_arena_init(&a, 4096);
    tpl_sb_init(&b, &a);
    for (int k = 0; k < 1000; k++)
        tpl_sb_puts(&b, "0123456789");
    OK(b.failed && a.over_limit && b.len <= 4096);
    size_t len = b.len;
    tpl_sb_printf(&b, "%d", 5);
    tpl_sb_putc(&b, 'x');
    OK(b.len == len);
    tpl_arena_free(&a);
}

/* ------------------------------------------------------------------ unicode.c */

static void test_utf8(tctx *t)
{
    static const struct {
        const char *s;
        uint32_t cps[6];
        int n;
    } cases[] = {
        {"a\xe2\x82\xac\xf0\x9f\x98\x80\xc3\xa9", {0x61, 0x20AC, 0x1F600, 0xE9}, 4},
        {"\xc0\x80", {0xFFFD, 0xFFFD}, 2},                   /* overlong */
        {"\xe0\x80\x80", {0xFFFD, 0xFFFD, 0xFFFD}, 3},       /* overlong */
        {"\xed\xa0\x80", {0xFFFD, 0xFFFD, 0xFFFD}, 3},       /* surrogate */
        {"\xf4\x90\x80\x80", {0xFFFD, 0xFFFD, 0xFFFD, 0xFFFD}, 4},  /* > U+10FFFF */
        {"\xe2\x82", {0xFFFD, 0xFFFD}, 2},                   /* truncated */
        {"\xff" "a\x80", {0xFFFD, 0x61, 0xFFFD}, 3},
        {"\xf4\x8f\xbf\xbf\xef\xbf\xbd", {0x10FFFF, 0xFFFD}, 2},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const char *s = cases[c].s;
        size_t n = strlen(s), i = 0;
        int k = 0;
        bool same = true;
        while (i < n && k < 6)
            same &= tpl_utf8_next(s, n, &i) == cases[c].cps[k++];
        OK(same && k == cases[c].n && i == n);
        OK(tpl_utf8_len(s, n) == (size_t)cases[c].n);
    }
    const char *s = "a\xe2\x82\xac\xf0\x9f\x98\x80z";
    OK(tpl_utf8_offset(s, 9, 0) == 0 && tpl_utf8_offset(s, 9, 1) == 1 && tpl_utf8_offset(s, 9, 2) == 4);
    OK(tpl_utf8_offset(s, 9, 3) == 8 && tpl_utf8_offset(s, 9, 4) == 9 && tpl_utf8_offset(s, 9, 99) == 9);
    size_t i = 3;
    OK(tpl_utf8_next(s, 3, &i) == 0 && i == 3);   /* at the end: nothing */

    /* str.isspace: exactly these code points in all of Unicode (from CPython 3.11). */
    static const uint32_t spaces[] = {9, 10, 11, 12, 13, 28, 29, 30, 31, 32, 133, 160, 5760, 8192,
                                      8193, 8194, 8195, 8196, 8197, 8198, 8199, 8200, 8201, 8202,
                                      8232, 8233, 8239, 8287, 12288};
    size_t next = 0;
    bool exact = true;
    for (uint32_t cp = 0; cp <= 0x10FFFF; cp++) {
        bool want = next < sizeof spaces / sizeof spaces[0] && spaces[next] == cp;
        next += want;
        exact &= tpl_py_isspace(cp) == want;
    }
    OK(exact);
}

static void eq_strip(tctx *t, int line, const char *s, int which, const char *chars, const char *exp)
{
    tpl_value in = with_flags(S(s), TPL_F_SAFE);
    tpl_value r = tpl_py_strip(in, which, chars, chars ? strlen(chars) : 0);
    ok(t, r.type == TPL_T_STR && r.flags == TPL_F_SAFE && r.u.s >= s && r.u.s + r.len <= s + strlen(s),
       line, "strip returns a flagged substring");
    eq_bytes(t, line, r.u.s, r.len, exp);
}
#define STRIP(s, which, chars, exp) eq_strip(t, __LINE__, (s), (which), (chars), (exp))

static void test_strip(tctx *t)
{
    STRIP("  \t hi \xe3\x80\x80\n", 3, NULL, "hi");
    STRIP("  \t hi \xe3\x80\x80\n", 1, NULL, "hi \xe3\x80\x80\n");
    STRIP("  \t hi \xe3\x80\x80\n", 2, NULL, "  \t hi");
    STRIP("\xc2\x85\xc2\xa0x\xe2\x80\xa8", 3, NULL, "x");
    STRIP("\xe2\x80\x8bx", 3, NULL, "\xe2\x80\x8bx");   /* U+200B is not whitespace */
    STRIP("xyhixy", 3, "xy", "hi");
    STRIP("\xc3\xa9""ahia\xc3\xa9", 3, "\xc3\xa9""a", "hi");
    STRIP("\xc3\xa9""ahia\xc3\xa9", 1, "\xc3\xa9""a", "hia\xc3\xa9");
    STRIP("\xc3\xa9""ahia\xc3\xa9", 2, "\xc3\xa9""a", "\xc3\xa9""ahi");
    STRIP("   ", 3, NULL, "");
    STRIP("", 3, NULL, "");
    STRIP(" x ", 3, "", " x ");
    STRIP("\xff hi \xff", 3, NULL, "\xff hi \xff");
    STRIP(" \xa9\xc3 ", 3, NULL, "\xa9\xc3");
    STRIP("\xe2\x82\xac\xac", 2, "\xe2\x82\xac", "\xe2\x82\xac\xac");
    tpl_value n = I(5);
    OK(tpl_py_strip(n, 3, NULL, 0).type == TPL_T_INT);
}

typedef void (*casefn)(tpl_sb *, const char *, size_t);

static void eq_case(tctx *t, int line, casefn fn, const char *s, const char *exp)
{
    tpl_sb b;
    tpl_sb_init(&b, &t->a);
    fn(&b, s, strlen(s));
    eq_bytes(t, line, b.p ? b.p : "", b.len, exp);
}

static void test_case(tctx *t)
{
    /* {input, upper, lower, title, capitalize} from CPython 3.11. */
    static const char *const cases[][5] = {
        {"hello wORLD", "HELLO WORLD", "hello world", "Hello World", "Hello world"},
        {"they're bill's friends", "THEY'RE BILL'S FRIENDS", "they're bill's friends", "They'Re Bill'S Friends", "They're bill's friends"},
        {"\xc3\x9f stra\xc3\x9f""e", "SS STRASSE", "\xc3\x9f stra\xc3\x9f""e", "Ss Stra\xc3\x9f""e", "Ss stra\xc3\x9f""e"},
        {"\xef\xac\x81nance", "FINANCE", "\xef\xac\x81nance", "Finance", "Finance"},
        {"\xc4\xb0stanbul", "\xc4\xb0STANBUL", "i\xcc\x87stanbul", "\xc4\xb0stanbul", "\xc4\xb0stanbul"},
        {"\xce\xa3\xce\x91\xce\xa3 \xce\x91\xce\xa3. \xe1\xbd\x88\xce\x94\xce\xa5\xce\xa3\xce\xa3\xce\x95\xce\x8e\xce\xa3", "\xce\xa3\xce\x91\xce\xa3 \xce\x91\xce\xa3. \xe1\xbd\x88\xce\x94\xce\xa5\xce\xa3\xce\xa3\xce\x95\xce\x8e\xce\xa3", "\xcf\x83\xce\xb1\xcf\x82 \xce\xb1\xcf\x82. \xe1\xbd\x80\xce\xb4\xcf\x85\xcf\x83\xcf\x83\xce\xb5\xcf\x8d\xcf\x82", "\xce\xa3\xce\xb1\xcf\x82 \xce\x91\xcf\x82. \xe1\xbd\x88\xce\xb4\xcf\x85\xcf\x83\xcf\x83\xce\xb5\xcf\x8d\xcf\x82", "\xce\xa3\xce\xb1\xcf\x82 \xce\xb1\xcf\x82. \xe1\xbd\x80\xce\xb4\xcf\x85\xcf\x83\xcf\x83\xce\xb5\xcf\x8d\xcf\x82"},
        {"\xe1\xbe\xb3 \xe1\xbe\xbc \xc7\x86 \xc7\x85", "\xce\x91\xce\x99 \xce\x91\xce\x99 \xc7\x84 \xc7\x84", "\xe1\xbe\xb3 \xe1\xbe\xb3 \xc7\x86 \xc7\x86", "\xe1\xbe\xbc \xe1\xbe\xbc \xc7\x85 \xc7\x85", "\xe1\xbe\xbc \xe1\xbe\xb3 \xc7\x86 \xc7\x86"},
        {"123abc d\xc3\xa9j\xc3\xa0-vu", "123ABC D\xc3\x89J\xc3\x80-VU", "123abc d\xc3\xa9j\xc3\xa0-vu", "123Abc D\xc3\xa9j\xc3\xa0-Vu", "123abc d\xc3\xa9j\xc3\xa0-vu"},
        {"a\xce\xa3'b", "A\xce\xa3'B", "a\xcf\x83'b", "A\xcf\x83'B", "A\xcf\x83'b"},
        {"\xce\xa3", "\xce\xa3", "\xcf\x83", "\xce\xa3", "\xce\xa3"},
        {"\xce\x91\xce\xa3'\xce\xa3", "\xce\x91\xce\xa3'\xce\xa3", "\xce\xb1\xcf\x83'\xcf\x82", "\xce\x91\xcf\x83'\xce\xa3", "\xce\x91\xcf\x83'\xcf\x82"},
        {"", "", "", "", ""},
        {"x\xc3\xbf", "X\xc5\xb8", "x\xc3\xbf", "X\xc3\xbf", "X\xc3\xbf"},
        /* Not UTF-8: invalid bytes pass through unchanged. */
        {"a\xff" "b\xce", "A\xff" "B\xce", "a\xff" "b\xce", "A\xff" "B\xce", "A\xff" "b\xce"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int line = __LINE__;
        eq_case(t, line, tpl_py_upper, cases[c][0], cases[c][1]);
        eq_case(t, line, tpl_py_lower, cases[c][0], cases[c][2]);
        eq_case(t, line, tpl_py_title, cases[c][0], cases[c][3]);
        eq_case(t, line, tpl_py_capitalize, cases[c][0], cases[c][4]);
    }
}

static void test_nfc(tctx *t)
{
    tpl_value in = S("e\xcc\x81 A\xcc\x8a \xe2\x84\xab");
    tpl_value r = tpl_nfc(&t->a, in);
    eq_bytes(t, __LINE__, r.u.s, r.len, "\xc3\xa9 \xc3\x85 \xc3\x85");
    tpl_value ascii = S("plain");
    r = tpl_nfc(&t->a, ascii);
    OK(r.u.s == ascii.u.s && r.len == 5);
    tpl_value bad = S("\xff\xcc\x81");
    r = tpl_nfc(&t->a, bad);
    OK(r.u.s == bad.u.s && r.len == bad.len);
}

/* ------------------------------------------------------------------ print.c */

static void test_py_print(tctx *t)
{
    PY_STR(L(t, 10, I(1), S("a"), N(), B(true), F(2.5), L(t, 0), M(t, 0), T(t, 1, S("x")),
             T(t, 0), T(t, 2, I(1), I(2))),
           "[1, 'a', None, True, 2.5, [], {}, ('x',), (), (1, 2)]");
    PY_STR(M(t, 3, S("a"), I(1), S("b"), L(t, 2, I(1), I(2)), S("c"), M(t, 1, S("d"), N())),
           "{'a': 1, 'b': [1, 2], 'c': {'d': None}}");
    PY_STR(L(t, 8, S("it's"), S("say \"hi\""), S("it's \"x\""), S("tab\there"), S("nl\n\r"),
             tpl_v_str("\0\x7f\x1b", 3),
             S("\xc3\xa9\xe2\x80\x8b\xc2\xa0\xe2\x80\xa8\xf0\x9f\x98\x80\xee\x80\x80\xf4\x8f\xbf\xbf\xcd\xb8\xc2\x85"),
             S("back\\slash")),
           "[\"it's\", 'say \"hi\"', 'it\\'s \"x\"', 'tab\\there', 'nl\\n\\r', '\\x00\\x7f\\x1b', '\xc3\xa9\\u200b\\xa0\\u2028\xf0\x9f\x98\x80\\ue000\\U0010ffff\\u0378\\x85', 'back\\\\slash']");
    PY_STR(M(t, 3, I(1), S("one"), F(2.5), B(false), N(), I(-3)), "{1: 'one', 2.5: False, None: -3}");
    PY_STR(L(t, 12, F(1e16), F(1e-05), F(0.1), F(-0.0), F(NAN), F(INFINITY), F(-INFINITY), F(1e22),
             F(123456789.0), F(0.1 + 0.2), F(1.0 / 3), F(1e15)),
           "[1e+16, 1e-05, 0.1, -0.0, nan, inf, -inf, 1e+22, 123456789.0, 0.30000000000000004, 0.3333333333333333, 1000000000000000.0]");
    PY_STR(L(t, 1, with_flags(S("a"), TPL_F_SAFE)), "[Markup('a')]");
    PY_STR(with_flags(M(t, 1, S("a"), I(1)), TPL_F_NS), "<Namespace {'a': 1}>");
    PY_STR(L(t, 1, tpl_v_undef()), "[Undefined]");
    PY_STR(tpl_v_undef(), "");
    PY_STR(with_flags(S("<b>"), TPL_F_SAFE), "<b>");
    PY_STR(L(t, 2, I(INT64_MIN), I(INT64_MAX)), "[-9223372036854775808, 9223372036854775807]");
    PY_STR(N(), "None");
    PY_STR(B(false), "False");
    PY_STR(F(100.0), "100.0");
    PY_STR(S("it's"), "it's");
    PY_REPR(S("it's"), "\"it's\"");
    PY_REPR(S(""), "''");
    PY_REPR(S("a\xff"), "'a\\udcff'");   /* not UTF-8: as surrogateescape would show it */
    PY_REPR(I(-42), "-42");
    tpl_value self = L(t, 1, I(1));
    tpl_list_push(&t->a, self.u.list, self);
    PY_STR(self, "[1, [...]]");
    tpl_value d = M(t, 1, S("a"), I(1));
    tpl_map_set(&t->a, d.u.map, S("self"), d);
    PY_STR(d, "{'a': 1, 'self': {...}}");
    /* Deep nesting stays bounded: TPL_NEST_MAX lists print, one more is Python's RecursionError
     * (the builder fails, marked tpl_nest_limit), never a "[...]" Python would not print. */
    tpl_value deep = L(t, 0);
    for (int k = 1; k < TPL_NEST_MAX; k++)
        deep = L(t, 1, deep);
    tpl_sb b;
    tpl_sb_init(&b, NULL);
    tpl_py_str(&b, deep);
    OK(!b.failed && b.len == 2 * (size_t)TPL_NEST_MAX && !b.address);
    tpl_sb_free(&b);
    deep = L(t, 1, deep);
    tpl_sb_init(&b, NULL);
    tpl_py_str(&b, deep);
    OK(b.failed && b.address == tpl_nest_limit);
    tpl_sb_free(&b);
    tpl_value deep2 = L(t, 0), deep3 = L(t, 0);
    for (int k = 1; k <= TPL_NEST_MAX; k++) {
        deep2 = L(t, 1, deep2);
        if (k < TPL_NEST_MAX) deep3 = L(t, 1, deep3);
    }
    OK(tpl_equal(deep, deep) && tpl_equal_metered(deep, deep2, NULL) == -2 && !tpl_equal(deep, deep2));
    OK(tpl_equal_metered(deep3, L(t, 0), NULL) == 0 && tpl_equal_metered(deep3, deep3, NULL) == 1);

    /* Float repr: shortest round-trip digits (values checked against CPython). */
    static const struct {
        double d;
        const char *py, *rb;
    } floats[] = {
        {0.0, "0.0", "0.0"},
        {1.0, "1.0", "1.0"},
        {1e16, "1e+16", "1.0e+16"},
        {1e15, "1000000000000000.0", "1.0e+15"},
        {999999999999999.0, "999999999999999.0", "999999999999999.0"},
        {1234567890123456.0, "1234567890123456.0", "1.234567890123456e+15"},
        {1626983080611305.8, "1626983080611305.8", "1626983080611305.8"},
        {12345678901234567.0, "1.2345678901234568e+16", "1.2345678901234568e+16"},
        {1e-05, "1e-05", "1.0e-05"},
        {0.0001, "0.0001", "0.0001"},
        {0.00012345, "0.00012345", "0.00012345"},
        {1.5e-07, "1.5e-07", "1.5e-07"},
        {1e100, "1e+100", "1.0e+100"},
        {5e-324, "5e-324", "5.0e-324"},
        {1.7976931348623157e308, "1.7976931348623157e+308", "1.7976931348623157e+308"},
        {2.2250738585072014e-308, "2.2250738585072014e-308", "2.2250738585072014e-308"},
        {9007199254740992.0, "9007199254740992.0", "9.007199254740992e+15"},
        {0x1p-1022 * 3, "6.675221575521604e-308", "6.675221575521604e-308"},
        {0x1p+100, "1.2676506002282294e+30", "1.2676506002282294e+30"},
        {0x1p-100, "7.888609052210118e-31", "7.888609052210118e-31"},
        {123.456, "123.456", "123.456"},
        {-2.5, "-2.5", "-2.5"},
    };
    for (size_t k = 0; k < sizeof floats / sizeof floats[0]; k++) {
        tpl_sb_init(&b, NULL);
        tpl_py_float(&b, floats[k].d);
        eq_bytes(t, __LINE__, b.p, b.len, floats[k].py);
        b.len = 0;
        tpl_rb_to_s(&b, F(floats[k].d));
        eq_bytes(t, __LINE__, b.p, b.len, floats[k].rb);
        tpl_sb_free(&b);
    }
}

static void test_rb_print(tctx *t)
{
    tpl_value sym = with_flags(S("b"), TPL_F_SYMBOL);
    RB_INSPECT(L(t, 7, I(1), S("a"), N(), B(true), F(2.5), L(t, 0), M(t, 0)),
               "[1, \"a\", nil, true, 2.5, [], {}]");
    RB_INSPECT(M(t, 3, S("a"), I(1), sym, N(), I(2), L(t, 2, F(1.0), S("x"))),
               "{\"a\"=>1, :b=>nil, 2=>[1.0, \"x\"]}");
    RB_INSPECT(L(t, 8, S("tab\t"), S("q\""), S("#{x} #$y #@z #a #"), S("\x1b\a\b\v\f\r\n"),
                 tpl_v_str("\0\x7f", 2),
                 S("\xc3\xa9\xe2\x80\xa8\xc2\xa0\xc2\x85\xe2\x80\x8b\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf\xcd\xb8"),
                 S("back\\slash"), S("\xff\xfe")),
               "[\"tab\\t\", \"q\\\"\", \"\\#{x} \\#$y \\#@z #a #\", \"\\e\\a\\b\\v\\f\\r\\n\", \"\\u0000\\u007F\", \"\xc3\xa9\\u2028\xc2\xa0\xc2\x85\xe2\x80\x8b\xf0\x9f\x98\x80\\u{10FFFF}\\u0378\", \"back\\\\slash\", \"\\xFF\\xFE\"]");
    RB_INSPECT(L(t, 10, with_flags(S("abc"), TPL_F_SYMBOL), with_flags(S("a b"), TPL_F_SYMBOL),
                 with_flags(S("a?"), TPL_F_SYMBOL), with_flags(S("9a"), TPL_F_SYMBOL),
                 with_flags(S("+"), TPL_F_SYMBOL), with_flags(S("[]"), TPL_F_SYMBOL),
                 with_flags(S("a="), TPL_F_SYMBOL), with_flags(S(""), TPL_F_SYMBOL),
                 with_flags(S("\xc3\xa9"), TPL_F_SYMBOL), with_flags(S("A_1!"), TPL_F_SYMBOL)),
               "[:abc, :\"a b\", :a?, :\"9a\", :+, :[], :a=, :\"\", :\xc3\xa9, :A_1!]");
    RB_INSPECT(L(t, 14, F(1e16), F(1e15), F(999999999999999.0), F(1.0e-5), F(0.0001), F(1.5e-7),
                 F(-0.0), F(0.1 + 0.2), F(100.0), F(NAN), F(INFINITY), F(-INFINITY),
                 F(1626983080611305.8), F(5e-324)),
               "[1.0e+16, 1.0e+15, 999999999999999.0, 1.0e-05, 0.0001, 1.5e-07, -0.0, 0.30000000000000004, 100.0, NaN, Infinity, -Infinity, 1626983080611305.8, 5.0e-324]");
    tpl_value self = L(t, 1, I(1));
    tpl_list_push(&t->a, self.u.list, self);
    RB_INSPECT(self, "[1, [...]]");
    tpl_value h = M(t, 1, S("a"), I(1));
    tpl_map_set(&t->a, h.u.map, S("self"), h);
    RB_INSPECT(h, "{\"a\"=>1, \"self\"=>{...}}");
    RB_INSPECT(L(t, 2, I(INT64_MIN), I(INT64_MAX)), "[-9223372036854775808, 9223372036854775807]");
    RB_TO_S(N(), "");
    RB_TO_S(tpl_v_undef(), "");
    RB_TO_S(B(true), "true");
    RB_TO_S(F(1e16), "1.0e+16");
    RB_TO_S(S("str"), "str");
    RB_TO_S(sym, "b");
    RB_TO_S(L(t, 2, I(1), L(t, 1, N())), "[1, [nil]]");
    RB_TO_S(M(t, 1, S("k"), S("v")), "{\"k\"=>\"v\"}");
}

static void test_json(tctx *t)
{
    tpl_value obj = M(t, 2, S("b"), L(t, 4, I(1), F(2.5), N(), B(true)), S("a"), S("x"));
    JSON(obj, true, -1, NULL, NULL, false, "{\"b\": [1, 2.5, null, true], \"a\": \"x\"}");
    tpl_value obj2 = M(t, 3, S("b"), L(t, 4, I(1), F(2.5), N(), B(true)), S("a"), S("x"), S("c"),
                       M(t, 1, S("d"), L(t, 0)));
    JSON(obj2, true, 2, NULL, NULL, true,
         "{\n  \"a\": \"x\",\n  \"b\": [\n    1,\n    2.5,\n    null,\n    true\n  ],\n  \"c\": {\n    \"d\": []\n  }\n}");
    JSON(M(t, 2, S("b"), L(t, 2, I(1), M(t, 0)), S("a"), S("x")), true, 0, NULL, NULL, false,
         "{\n\"b\": [\n1,\n{}\n],\n\"a\": \"x\"\n}");
    JSON(M(t, 2, S("a"), L(t, 0), S("b"), M(t, 0)), true, 2, NULL, NULL, false,
         "{\n  \"a\": [],\n  \"b\": {}\n}");
    JSON(M(t, 2, S("b"), L(t, 2, I(1), I(2)), S("a"), S("x")), true, -1, ",", ":", false,
         "{\"b\":[1,2],\"a\":\"x\"}");
    tpl_value str = S("\xc3\xa9\xf0\x9f\x98\x80\x7f\x01\"\\/\n\t\b\f\r");
    JSON(str, false, -1, NULL, NULL, false,
         "\"\xc3\xa9\xf0\x9f\x98\x80\x7f\\u0001\\\"\\\\/\\n\\t\\b\\f\\r\"");
    JSON(str, true, -1, NULL, NULL, false,
         "\"\\u00e9\\ud83d\\ude00\\u007f\\u0001\\\"\\\\/\\n\\t\\b\\f\\r\"");
    JSON(M(t, 5, I(1), S("a"), F(2.5), S("b"), N(), S("c"), B(false), S("d"), F(INFINITY), S("e")),
         true, -1, NULL, NULL, false,
         "{\"1\": \"a\", \"2.5\": \"b\", \"null\": \"c\", \"false\": \"d\", \"Infinity\": \"e\"}");
    JSON(M(t, 4, I(10), S("a"), I(2), S("b"), F(2.5), S("c"), B(true), S("d")), true, -1, NULL,
         NULL, true, "{\"true\": \"d\", \"2\": \"b\", \"2.5\": \"c\", \"10\": \"a\"}");
    JSON(L(t, 7, F(1e16), F(1.0), F(NAN), F(INFINITY), F(-INFINITY), F(-0.0), F(5e-324)), true, -1,
         NULL, NULL, false, "[1e+16, 1.0, NaN, Infinity, -Infinity, -0.0, 5e-324]");
    JSON(T(t, 2, I(1), S("x")), true, -1, NULL, NULL, false, "[1, \"x\"]");
    JSON(L(t, 2, L(t, 2, I(1), L(t, 2, I(2), L(t, 0))), M(t, 1, S("k"), M(t, 1, S("z"), I(1)))),
         true, 3, ", ", " = ", false,
         "[\n   [\n      1, \n      [\n         2, \n         []\n      ]\n   ], \n   {\n      \"k\" = {\n         \"z\" = 1\n      }\n   }\n]");
    JSON(M(t, 5, S("z"), S("y"), S("\xc3\xa9"), I(1), S("a"), I(2), S("ab"), I(3), S("B"), I(4)),
         false, -1, NULL, NULL, true,
         "{\"B\": 4, \"a\": 2, \"ab\": 3, \"z\": \"y\", \"\xc3\xa9\": 1}");
    JSON(M(t, 1, N(), I(1)), true, -1, NULL, NULL, true, "{\"null\": 1}");
    JSON(S("a\xff"), true, -1, NULL, NULL, false, "\"a\\ufffd\"");
    JSON(S("a\xff"), false, -1, NULL, NULL, false, "\"a\xef\xbf\xbd\"");
    /* Not serialisable: TypeError / ValueError in Python. */
    JSON(L(t, 2, I(1), tpl_v_undef()), true, -1, NULL, NULL, false, NULL);
    JSON(M(t, 1, S("a"), L(t, 1, tpl_v_undef())), true, 2, NULL, NULL, false, NULL);
    JSON(with_flags(M(t, 1, S("a"), I(1)), TPL_F_NS), true, -1, NULL, NULL, false, NULL);
    JSON(M(t, 2, S("a"), I(1), I(2), I(2)), true, -1, NULL, NULL, true, NULL);
    JSON(M(t, 2, N(), I(1), I(2), I(2)), true, -1, NULL, NULL, true, NULL);
    JSON(M(t, 1, T(t, 1, I(1)), I(1)), true, -1, NULL, NULL, false, NULL);
    tpl_value self = L(t, 1, I(1));
    tpl_list_push(&t->a, self.u.list, self);
    JSON(self, true, -1, NULL, NULL, false, NULL);

    /* Jinja2's tojson filter. */
    tpl_value h = M(t, 2, S("b"), S("<&>'\xc3\xa9\xf0\x9f\x98\x80"), S("a"), I(1));
    eq_tojson(t, __LINE__, h, -1,
              "{\"a\": 1, \"b\": \"\\u003c\\u0026\\u003e\\u0027\\u00e9\\ud83d\\ude00\"}");
    tpl_value h2 = M(t, 2, S("b"), S("<&>'\xc3\xa9\xf0\x9f\x98\x80"), S("a"), L(t, 2, I(1), I(2)));
    eq_tojson(t, __LINE__, h2, 2,
              "{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": \"\\u003c\\u0026\\u003e\\u0027\\u00e9\\ud83d\\ude00\"\n}");
    eq_tojson(t, __LINE__, L(t, 2, I(1), I(2)), -1, "[1, 2]");
}

int main(void)
{
    tctx ctx = {0};
    tctx *t = &ctx;
    tpl_arena_init(&t->a, 0);
    test_arena(t);
    test_lists_maps(t);
    test_equal_hash(t);
    test_sb(t);
    test_utf8(t);
    test_strip(t);
    test_case(t);
    test_nfc(t);
    test_py_print(t);
    test_rb_print(t);
    test_json(t);
    tpl_arena_free(&t->a);
    printf("%d passed, %d failed\n", t->pass, t->fail);
    return t->fail ? 1 : 0;
}
