/* Global functions: range, dict, namespace, raise_exception, strftime_now, lipsum,
 * cycler, joiner. */
#include "../builtins.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/time.h>

#define OOM() tpl_vm_nomem(vm)

enum { SANDBOX_RANGE_MAX = 100000 };

int g_range(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *args = a[0].u.list;
    int n = (int)args->len;
    if (n == 0)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "range expected at least 1 argument, got 0");
    if (n > 3)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "range expected at most 3 arguments, got %d", n);
    tpl_value v[3];
    bool big = false;
    for (int i = 0; i < n; i++) {
        v[i] = args->items[i];
        if (v[i].type == TPL_T_BIGINT)
            big = true; /* Python's range takes unbounded ints */
        else if (tpl_arg_index(vm, v[i], &v[i].u.i) < 0)
            return -1;
        else
            v[i] = tpl_v_int(v[i].u.i);
    }
    tpl_value start = tpl_v_int(0), stop, step = tpl_v_int(1);
    if (n == 1) {
        stop = v[0];
    } else {
        start = v[0];
        stop = v[1];
        if (n == 3)
            step = v[2];
    }
    if (step.type == TPL_T_INT && step.u.i == 0)
        return tpl_vm_error(vm, TPL_ERR_VALUE, "range() arg 3 must not be zero");
    uint64_t count = 0;
    if (!big) {
        /* Length without overflow: ceil((stop - start) / step) in unsigned arithmetic. */
        int64_t i0 = start.u.i, i1 = stop.u.i, d = step.u.i;
        if (d > 0 && i0 < i1)
            count = ((uint64_t)i1 - (uint64_t)i0 - 1) / (uint64_t)d + 1;
        else if (d < 0 && i0 > i1)
            count = ((uint64_t)i0 - (uint64_t)i1 - 1) / (0 - (uint64_t)d) + 1;
    } else {
        /* ceil((stop - start) / step) when positive, exactly; past TPL_RANGE_ITEMS_MAX it is only "more" */
        mpz_t z0, z1, zd;
        tpl_big_get(z0, start);
        tpl_big_get(z1, stop);
        tpl_big_get(zd, step);
        mpz_sub(z1, z1, z0);
        if (mpz_sgn(z1) != 0 && mpz_sgn(z1) == mpz_sgn(zd)) {
            mpz_abs(z1, z1);
            mpz_abs(zd, zd);
            mpz_cdiv_q(z1, z1, zd);
            count = mpz_cmp_ui(z1, TPL_RANGE_ITEMS_MAX) > 0 ? (uint64_t)TPL_RANGE_ITEMS_MAX + 1 : mpz_get_ui(z1);
        }
        mpz_clear(z0);
        mpz_clear(z1);
        mpz_clear(zd);
    }
    if (tpl_vm_hf(vm) && count > SANDBOX_RANGE_MAX)
        return tpl_vm_error(vm, TPL_ERR_LIMIT,
                            "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
    return tpl_make_range_v(vm, start, stop, step, count, out);
}

static int dict_of(tpl_vm *vm, tpl_value *a, tpl_value *out);

/* dict(*args, **kwargs): Python's dict() (a mapping or an iterable of pairs, then the keywords). */
int g_dict(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    return dict_of(vm, a, out);
}

/* Namespace(*args, **kwargs): the attributes are dict(*args, **kwargs). */
int g_namespace(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (dict_of(vm, a, out) < 0)
        return -1;
    out->flags = TPL_F_NS;
    return 0;
}

static int dict_of(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    const tpl_list *args = a[0].u.list;
    const tpl_map *kw = a[1].u.map;
    tpl_arena *ar = tpl_vm_arena(vm);
    if (args->len > 1)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "dict expected at most 1 argument, got %u", args->len);
    tpl_map *m = tpl_map_new(ar, kw->len + 4);
    if (!m)
        return OOM();
    if (args->len == 1) {
        tpl_value src = args->items[0];
        if (src.type == TPL_T_MAP && (src.flags & TPL_F_NS)) /* Jinja2's Namespace is no mapping nor iterable */
            return tpl_vm_error(vm, TPL_ERR_TYPE, "'%s' object is not iterable", tpl_type_name(vm, src));
        if (src.type == TPL_T_MAP) {
            for (uint32_t i = 0; i < src.u.map->len; i++)
                if (tpl_vm_map_put(vm, m, src.u.map->e[i].key, src.u.map->e[i].val) < 0)
                    return -1;
        } else {
            tpl_list *items;
            if (src.type == TPL_T_UNDEF)
                return tpl_undefined_error(vm, src);
            if (src.type != TPL_T_LIST && src.type != TPL_T_STR && src.type != TPL_T_LOOP)
                return tpl_vm_error(vm, TPL_ERR_TYPE, "'%s' object is not iterable", tpl_type_name(vm, src));
            if (tpl_to_list(vm, src, &items) < 0)
                return -1;
            for (uint32_t i = 0; i < items->len; i++) {
                tpl_value it = items->items[i];
                tpl_list *pair;
                /* (Python iterates each element: a list, tuple or dict view, a string's characters,
                 * a dict's keys, a loop, an Undefined's nothing) */
                if (it.type == TPL_T_LIST || it.type == TPL_T_STR || it.type == TPL_T_LOOP || it.type == TPL_T_UNDEF ||
                    (it.type == TPL_T_MAP && !(it.flags & TPL_F_NS))) {
                    if (tpl_to_list(vm, it, &pair) < 0)
                        return -1;
                } else {
                    return tpl_vm_error(vm, TPL_ERR_TYPE,
                                        "cannot convert dictionary update sequence element #%u to a sequence", i);
                }
                if (pair->len != 2)
                    return tpl_vm_error(vm, TPL_ERR_VALUE,
                                        "dictionary update sequence element #%u has length %u; 2 is required",
                                        i, pair->len);
                if ((pair->items[0].type == TPL_T_HOST || pair->items[0].type == TPL_T_LIST) &&
                    tpl_vm_check_hashable(vm, pair->items[0]) < 0)
                    return -1;
                if (tpl_vm_map_put(vm, m, pair->items[0], pair->items[1]) < 0)
                    return -1;
            }
        }
    }
    for (uint32_t i = 0; i < kw->len; i++)
        if (!tpl_map_set(ar, m, kw->e[i].key, kw->e[i].val))
            return OOM();
    *out = tpl_v_map(m);
    return 0;
}


int g_raise_exception(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value m;
    if (tpl_to_str(vm, a[0], &m) < 0)
        return -1;
    return tpl_vm_fail(vm, TPL_EK_TEMPLATE, "%.*s", (int)m.len, m.u.s);
}

/* A mutating list/dict method called: tpl values are immutable (as transformers' sandbox). */
int g_unsafe_method(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    (void)out;
    return tpl_vm_fail(vm, TPL_EK_SECURITY, "%.*s", (int)a[0].len, a[0].u.s);
}

/* datetime.now().strftime(fmt) (naive local time), or the UTC time of SOURCE_DATE_EPOCH when
 * it is set, as the transformers chat-template environment does. Python handles %f, %z and %Z
 * itself (naive datetimes give "" for %z and %Z); the rest goes to the C library. */
int g_strftime_now(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value f = a[0];
    if (f.type != TPL_T_STR)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "strftime() argument 1 must be str, not %s",
                            tpl_type_name(vm, f));
    struct tm tm;
    long usec = 0;
    const char *epoch = getenv("SOURCE_DATE_EPOCH");
    if (epoch && *epoch) {
        char *end;
        long long e = strtoll(epoch, &end, 10);
        time_t t = (time_t)e;
        if (!gmtime_r(&t, &tm))
            return tpl_vm_error(vm, TPL_ERR_VALUE, "SOURCE_DATE_EPOCH out of range");
    } else {
        struct timeval tv;
        gettimeofday(&tv, NULL);
        time_t t = tv.tv_sec;
        usec = (long)tv.tv_usec;
        if (!localtime_r(&t, &tm))
            return tpl_vm_error(vm, TPL_ERR_VALUE, "time out of range");
    }
    /* Rewrite the Python-only directives, then format with a trailing sentinel so that an
     * empty result can be told from a too-small buffer. */
    tpl_arena *ar = tpl_vm_arena(vm);
    tpl_sb fmt;
    tpl_sb_init(&fmt, ar);
    for (size_t i = 0; i < f.len; i++) {
        char c = f.u.s[i];
        if (c == '%' && i + 1 < f.len) {
            char d = f.u.s[i + 1];
            if (d == 'f') {
                char us[8];
                snprintf(us, sizeof us, "%06ld", usec);
                tpl_sb_puts(&fmt, us);
                i++;
                continue;
            }
            if (d == 'z' || d == 'Z') {
                i++;
                continue;
            }
            tpl_sb_putc(&fmt, c);
            tpl_sb_putc(&fmt, d);
            i++;
            continue;
        }
        if (c == 0)
            return tpl_vm_error(vm, TPL_ERR_VALUE, "embedded null character");
        tpl_sb_putc(&fmt, c);
    }
    tpl_sb_putc(&fmt, 'x');
    tpl_sb_putc(&fmt, 0);
    if (fmt.failed)
        return OOM();
    size_t cap = fmt.len * 4 + 64;
    for (int tries = 0; tries < 8; tries++) {
        char *buf = tpl_arena_alloc(ar, cap);
        if (!buf)
            return OOM();
        size_t n = strftime(buf, cap, fmt.p, &tm);
        if (n > 0) {
            *out = tpl_v_str(buf, n - 1);
            return 0;
        }
        cap *= 4;
    }
    return tpl_vm_error(vm, TPL_ERR_LIMIT, "strftime result too long");
}

/* lipsum(n=5, html=True, min=20, max=100): deterministic lorem ipsum (Jinja2's is random). */
int g_lipsum(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    static const char *const words[] = {
        "lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit", "sed",
        "do", "eiusmod", "tempor", "incididunt", "ut", "labore", "et", "dolore", "magna",
        "aliqua", "enim", "ad", "minim", "veniam", "quis", "nostrud", "exercitation", "ullamco",
        "laboris", "nisi", "aliquip", "ex", "ea", "commodo", "consequat", "duis", "aute", "irure",
        "in", "reprehenderit", "voluptate", "velit", "esse", "cillum", "eu", "fugiat", "nulla",
        "pariatur", "excepteur", "sint", "occaecat", "cupidatat", "non", "proident", "sunt",
        "culpa", "qui", "officia", "deserunt", "mollit", "anim", "id", "est", "laborum",
    };
    const size_t nwords = sizeof words / sizeof words[0];
    int64_t n = 5, mn = 20, mx = 100;
    if (tpl_given(a[0]) && tpl_arg_index_sat(vm, a[0], &n) < 0) return -1;
    int html = tpl_arg_truthy(vm, a[1], true);
    if (html < 0) return -1;
    if (tpl_given(a[2]) && tpl_arg_index_sat(vm, a[2], &mn) < 0) return -1;
    if (tpl_given(a[3]) && tpl_arg_index_sat(vm, a[3], &mx) < 0) return -1;
    if (n > 1000 || mx > 100000 || mn < -100000)
        return tpl_vm_error(vm, TPL_ERR_LIMIT, "lipsum too large");
    /* Jinja2 draws each paragraph's word count with randrange(min, max): max is excluded */
    if (mx <= mn)
        return tpl_vm_error(vm, TPL_ERR_VALUE, "empty range for randrange() (%lld, %lld, %lld)", (long long)mn,
                            (long long)mx, (long long)(mx - mn));
    tpl_sb b;
    tpl_sb_init(&b, tpl_vm_arena(vm));
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    for (int64_t p = 0; p < n; p++) {
        if (p)
            tpl_sb_puts(&b, html ? "\n" : "\n\n");
        if (html)
            tpl_sb_puts(&b, "<p>");
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        int64_t count = mn + (int64_t)((seed >> 33) % (uint64_t)(mx - mn));
        bool cap = true;
        if (count <= 0)
            tpl_sb_putc(&b, '.');   /* no words: Jinja2's paragraph is just the full stop */
        for (int64_t w = 0; w < count; w++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            const char *word = words[(seed >> 33) % nwords];
            if (w)
                tpl_sb_putc(&b, ' ');
            if (cap) {
                tpl_sb_putc(&b, (char)(word[0] - 32));
                tpl_sb_puts(&b, word + 1);
                cap = false;
            } else {
                tpl_sb_puts(&b, word);
            }
            if (w + 1 == count) {
                tpl_sb_putc(&b, '.');
            } else if (((seed >> 20) & 15) == 0) {
                tpl_sb_putc(&b, '.');
                cap = true;
            } else if (((seed >> 24) & 15) == 0) {
                tpl_sb_putc(&b, ',');
            }
        }
        if (html)
            tpl_sb_puts(&b, "</p>");
    }
    if (b.failed)
        return OOM();
    *out = tpl_sb_value(&b);
    if (html)
        out->flags = TPL_F_SAFE;
    return 0;
}

/* cycler() and joiner() return stateful objects built from what the VM already has: a
 * namespace-flagged map holding the state, and bound methods (TPL_T_FUNC with u.bound) whose
 * self is that map. The methods are builtins with names no template can spell ("cycler.next",
 * ...); until builtins.def lists them (see builtins.h), cycler() and joiner() report that they
 * are not supported. */

static int bound(tpl_vm *vm, tpl_value self, int id, tpl_value *out)
{
    tpl_bound *b = tpl_arena_alloc(tpl_vm_arena(vm), sizeof *b);
    if (!b)
        return OOM();
    b->self = self;
    b->method = (uint16_t)id;
    tpl_value v = {0};
    v.type = TPL_T_FUNC;
    v.aux = (uint16_t)id;
    v.u.bound = b;
    *out = v;
    return 0;
}

static int set_key(tpl_vm *vm, tpl_map *m, const char *k, tpl_value v)
{
    return tpl_map_set(tpl_vm_arena(vm), m, tpl_v_str(k, strlen(k)), v) ? 0 : OOM();
}

static tpl_value *get_key(const tpl_map *m, const char *k)
{
    return tpl_map_get_str(m, k, strlen(k), tpl_hash_str(k, strlen(k)));
}

/* Jinja2's Cycler: .items, .pos, .current, .next(), .reset(). */
int g_cycler(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    int next_id = tpl_builtin_find(TPL_BK_GLOBAL, "cycler.next", 11);
    int reset_id = tpl_builtin_find(TPL_BK_GLOBAL, "cycler.reset", 12);
    if (next_id < 0 || reset_id < 0)
        return tpl_vm_error(vm, TPL_ERR_SYNTAX, "cycler() is not supported yet");
    tpl_list *items = a[0].u.list;
    if (items->len == 0)
        return tpl_vm_fail(vm, TPL_EK_RUNTIME_ERROR, "at least one item has to be provided");
    tpl_map *m = tpl_map_new(tpl_vm_arena(vm), 6);
    if (!m)
        return OOM();
    tpl_value self = tpl_v_map(m);
    self.flags = TPL_F_NS;
    tpl_value itv = tpl_v_list(items), nx, rs;
    itv.flags = TPL_F_TUPLE;
    if (bound(vm, self, next_id, &nx) < 0 || bound(vm, self, reset_id, &rs) < 0)
        return -1;
    if (set_key(vm, m, "items", itv) < 0 || set_key(vm, m, "pos", tpl_v_int(0)) < 0 ||
        set_key(vm, m, "current", items->items[0]) < 0 || set_key(vm, m, "next", nx) < 0 ||
        set_key(vm, m, "reset", rs) < 0)
        return -1;
    *out = self;
    return 0;
}

static int cycler_state(tpl_vm *vm, tpl_value self, tpl_map **m, const tpl_list **items, int64_t *pos)
{
    tpl_value *it, *p;
    if (self.type != TPL_T_MAP || !(it = get_key(self.u.map, "items")) || it->type != TPL_T_LIST ||
        it->u.list->len == 0 || !(p = get_key(self.u.map, "pos")) || p->type != TPL_T_INT)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "not a cycler");
    *m = self.u.map;
    *items = it->u.list;
    *pos = p->u.i;
    if (*pos < 0 || *pos >= (int64_t)(*items)->len)
        *pos = 0;
    return 0;
}

int g_cycler_next(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_map *m = NULL;
    const tpl_list *items = NULL;
    int64_t pos = 0;
    if (cycler_state(vm, a[0], &m, &items, &pos) < 0)
        return -1;
    *out = items->items[pos];
    pos = (pos + 1) % (int64_t)items->len;
    if (set_key(vm, m, "pos", tpl_v_int(pos)) < 0 || set_key(vm, m, "current", items->items[pos]) < 0)
        return -1;
    return 0;
}

int g_cycler_reset(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_map *m = NULL;
    const tpl_list *items = NULL;
    int64_t pos = 0;
    if (cycler_state(vm, a[0], &m, &items, &pos) < 0)
        return -1;
    if (set_key(vm, m, "pos", tpl_v_int(0)) < 0 || set_key(vm, m, "current", items->items[0]) < 0)
        return -1;
    *out = tpl_v_none();
    return 0;
}

/* Jinja2's Joiner: calling it gives "" the first time, then sep. The value is the bound
 * "joiner.__call__" method of its state (.sep, .used). */
int g_joiner(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    int call_id = tpl_builtin_find(TPL_BK_GLOBAL, "joiner.__call__", 15);
    if (call_id < 0)
        return tpl_vm_error(vm, TPL_ERR_SYNTAX, "joiner() is not supported yet");
    tpl_map *m = tpl_map_new(tpl_vm_arena(vm), 2);
    if (!m)
        return OOM();
    tpl_value self = tpl_v_map(m);
    self.flags = TPL_F_NS;
    if (set_key(vm, m, "sep", tpl_given(a[0]) ? a[0] : tpl_v_str(", ", 2)) < 0 ||
        set_key(vm, m, "used", tpl_v_bool(false)) < 0)
        return -1;
    return bound(vm, self, call_id, out);
}

int g_joiner_call(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value *used, *sep;
    if (a[0].type != TPL_T_MAP || !(used = get_key(a[0].u.map, "used")) || !(sep = get_key(a[0].u.map, "sep")))
        return tpl_vm_error(vm, TPL_ERR_TYPE, "not a joiner");
    if (used->type == TPL_T_BOOL && !used->u.i) {
        *used = tpl_v_bool(true);
        *out = tpl_v_str("", 0);
        return 0;
    }
    *out = *sep;
    return 0;
}
