/* Ruby methods for ERB views, as Ruby 3.1 defines them on String, Integer/Float, Array, Hash,
 * Range, nil and Kernel; regular expressions through Oniguruma with its Ruby syntax.
 * Symbols are strings (DESIGN §2), so a method never sees a Symbol receiver of its own. */
#include <float.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <pthread.h>
#include <string.h>
#include <dlfcn.h>
#include <oniguruma.h>
#include "../builtins.h"
#include "ruby.h"
#include "../../runtime/host.h"

#define A(vm) tpl_vm_arena(vm)

/* memcpy that accepts n == 0 with NULL pointers (empty lists have no items). */
static void mcpy(void *d, const void *s, size_t n) { if (n) memcpy(d, s, n); }
/* n values from s[si..] to d[di..]; nothing (no pointer arithmetic either) when n is 0, as an
 * empty list's items may be NULL. */
static void mcpy_items(tpl_value *d, size_t di, const tpl_value *s, size_t si, size_t n)
{
    if (n) memcpy(d + di, s + si, n * sizeof *d);
}

static int oom(tpl_vm *vm) { return tpl_vm_nomem(vm); }

static bool is_range(tpl_value v) { return v.type == TPL_T_LIST && (v.flags & TPL_F_RANGE_RB); }
static bool is_array(tpl_value v) { return v.type == TPL_T_LIST && !(v.flags & (TPL_F_RANGE_RB | TPL_F_MATCH_RB | TPL_F_ENUM_RB)); }
static bool is_num(tpl_value v) { return v.type == TPL_T_INT || v.type == TPL_T_FLOAT; }
static bool plain_num(tpl_value v);
static double dbl(tpl_value v)
{
    if (v.type == TPL_T_BIGINT) { /* Integer#to_f: Infinity past Float::MAX */
        double d;
        tpl_big_to_double(v, &d);
        return d;
    }
    return v.type == TPL_T_FLOAT ? v.u.f : (double)v.u.i;
}

/* How rb_convert_type names a value it cannot convert: nil, true and false by themselves. */
static const char *conv_name(tpl_value v)
{
    if (v.type == TPL_T_NONE || v.type == TPL_T_UNDEF) return "nil";
    if (v.type == TPL_T_BOOL) return v.u.i ? "true" : "false";
    return tpl_rb_class_name(v);
}

/* v.inspect as Ruby's error messages quote it: cut at 60 bytes (*len), in the render's arena ("" when
 * out of memory). */
static const char *inspect_short(tpl_vm *vm, tpl_value v, int *len)
{
    tpl_sb b;
    tpl_sb_init(&b, A(vm));
    tpl_rb_inspect(&b, v);
    *len = b.p ? (int)(b.len > 60 ? 60 : b.len) : 0;
    return b.p ? b.p : "";
}

/* Ruby's coerce_failed: "Y can't be coerced into X" (TypeError), Y the inspect of nil, true, false,
 * a Symbol or a Float (special constants), else Y's class. */
static int coerce_failed(tpl_vm *vm, tpl_value y, const char *xcls)
{
    int il = 0;
    const char *is;
    if ((y.type == TPL_T_STR && (y.flags & TPL_F_SYMBOL)) || y.type == TPL_T_FLOAT) is = inspect_short(vm, y, &il);
    else il = (int)strlen(is = conv_name(y));
    return tpl_vm_error(vm, TPL_ERR_TYPE, "%.*s can't be coerced into %s (TypeError)", il, is, xcls);
}

#include "core_methods.h"

/* Whether Ruby's core class cls has the public method name[0, n] (sep '#'), or the class method (sep
 * '.': File.join) (tools/gen_rb_core_methods.rb). */
static bool rb_core_has_sep(const char *cls, char sep, const char *name, size_t n)
{
    char key[96];
    int k = snprintf(key, sizeof key, "%s%c%.*s", cls, sep, (int)(n > 60 ? 60 : n), name);
    if (k < 0 || (size_t)k >= sizeof key) return false;
    size_t lo = 0, hi = sizeof rb_core_methods / sizeof rb_core_methods[0];
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(rb_core_methods[mid], key);
        if (c == 0) return true;
        if (c < 0) lo = mid + 1; else hi = mid;
    }
    return false;
}
static bool rb_core_has(const char *cls, const char *name, size_t n) { return rb_core_has_sep(cls, '#', name, n); }

/* ---- did_you_mean (Ruby 3.1's bundled did_you_mean 1.6: spell_checker.rb, jaro_winkler.rb,
 * levenshtein.rb): the "\nDid you mean?  x" Ruby's NameError, NoMethodError and KeyError add to their
 * message. The dictionaries: tools/gen_rb_dym_methods.rb. */

#include "dym_methods.h"

typedef struct { uint32_t *cp; size_t n; } dym_str;

/* s[0, n] as code points; norm: SpellChecker#normalize (downcase, then every '@' removed). */
static bool dym_cps(tpl_arena *ar, const char *s, size_t n, bool norm, dym_str *out)
{
    tpl_sb b;
    if (norm) {
        tpl_sb_init(&b, ar);
        tpl_py_lower(&b, s, n);   /* (Ruby's downcase of a name: the same full case mapping) */
        if (!b.p && n) return false;
        s = b.p ? b.p : "";
        n = b.len;
    }
    out->cp = tpl_arena_alloc(ar, (n + 1) * sizeof(uint32_t));
    if (!out->cp) return false;
    out->n = 0;
    for (size_t i = 0; i < n;) {
        uint32_t c = tpl_utf8_next(s, n, &i);
        if (!(norm && c == '@')) out->cp[out->n++] = c;
    }
    return true;
}

/* DidYouMean::Jaro.distance (flags as byte arrays instead of Integer bit sets); -1 when out of
 * memory or fuel. Its work (the compares it makes, up to l1 * l2) is charged to the render's
 * fuel (16 compares a unit: a unit is an instruction), as Levenshtein's below: a KeyError over a Hash of many long keys compares each key with the key
 * asked (3,000 keys of 5,000 characters took 20 s of CPU, unbounded). */
static double dym_jaro(tpl_arena *ar, const dym_str *s1, const dym_str *s2)
{
    if (s1->n > s2->n) { const dym_str *t = s1; s1 = s2; s2 = t; }
    size_t l1 = s1->n, l2 = s2->n;
    long range = (long)(l2 / 2) - 1;
    if (range < 0) range = 0;
    if (!tpl_fuel_charge(ar->fuel, (uint64_t)l1 + l2 + 1)) return -1;
    unsigned char *f1 = tpl_arena_alloc(ar, l1 + 1), *f2 = tpl_arena_alloc(ar, l2 + 1);
    if (!f1 || !f2) return -1;
    memset(f1, 0, l1 + 1);
    memset(f2, 0, l2 + 1);
    double m = 0, t = 0;
    for (size_t i = 0; i < l1; i++) {
        size_t last = i + (size_t)range, j = i >= (size_t)range ? i - (size_t)range : 0, first = j;
        for (; j <= last && j < l2; j++)
            if (!f2[j] && s1->cp[i] == s2->cp[j]) { f2[j] = 1; f1[i] = 1; m += 1; break; }
        if (!tpl_fuel_charge(ar->fuel, (j - first) / 16)) return -1;   /* (the compares made: 16 a unit) */
    }
    size_t k = 0;
    for (size_t i = 0; i < l1; i++) {
        if (!f1[i]) continue;
        size_t j = k, index = k;
        while (j < l2) { index = j; if (f2[j]) { k = j + 1; break; } j++; }
        if (s1->cp[i] != s2->cp[index]) t += 1;
    }
    t = floor(t / 2);
    return m == 0 ? 0 : (m / (double)l1 + m / (double)l2 + (m - t) / m) / 3;
}

/* DidYouMean::JaroWinkler.distance; -1 when out of memory or fuel */
static double dym_jw(tpl_arena *ar, const dym_str *s1, const dym_str *s2)
{
    double d = dym_jaro(ar, s1, s2);
    if (d > 0.7) {
        int bonus = 0;
        for (size_t i = 0; i < s1->n; i++) {
            if (i < s2->n && s1->cp[i] == s2->cp[i] && i < 4) bonus++;
            else break;
        }
        d = d + ((double)bonus * 0.1 * (1 - d));
    }
    return d;
}

/* DidYouMean::Levenshtein.distance; SIZE_MAX when out of memory or fuel */
static size_t dym_lev(tpl_arena *ar, const dym_str *a, const dym_str *b)
{
    if (a->n == 0) return b->n;
    if (b->n == 0) return a->n;
    if (!tpl_fuel_charge(ar->fuel, (uint64_t)a->n * b->n / 16 + 1)) return SIZE_MAX;
    size_t *d = tpl_arena_alloc(ar, (b->n + 1) * sizeof(size_t)), x = 0;
    if (!d) return SIZE_MAX;
    for (size_t j = 0; j <= b->n; j++) d[j] = j;
    for (size_t i = 1; i <= a->n; i++) {
        size_t left = i;
        for (size_t j = 0; j < b->n; j++) {
            size_t cost = a->cp[i - 1] == b->cp[j] ? 0 : 1;
            size_t ins = d[j + 1] + 1, del = left + 1, sub = d[j] + cost;
            x = ins < del && ins < sub ? ins : del < sub ? del : sub;
            d[j] = left;
            left = x;
        }
        d[b->n] = x;
    }
    return x;
}

/* A word of a dictionary: its to_s (what is spelled against the input) and what the suggestion
 * prints (KeyError: the key's inspect). */
typedef struct { const char *s, *show; size_t n, nshow; double jw; } dym_word;

static int dym_correct(tpl_arena *ar, char *out, size_t cap, const char *input, size_t in_n, dym_word *w, size_t nw,
                       const char *reject);


static int dym_suggest_but(tpl_arena *ar, char *out, size_t cap, const char *input, size_t in_n, dym_word *w, size_t nw,
                           const char *reject);

/* DidYouMean::SpellChecker#correct(input) over w[0, nw]: the corrections' "\nDid you mean?  ..."
 * (DidYouMean::Formatter) written at out (NUL-terminated, at most cap bytes with the NUL): its length,
 * -1 when out of memory, -2 when it does not fit. The arena's work memory is given back. */
static int dym_suggest(tpl_arena *ar, char *out, size_t cap, const char *input, size_t in_n, dym_word *w, size_t nw)
{
    return dym_suggest_but(ar, out, cap, input, in_n, w, nw, NULL);
}

/* dym_suggest, leaving out the corrections whose text (show) the NUL-terminated reject holds
 * (ClassNameChecker's `reject { |q| original_message.include?(q) }`); reject NULL: none. */
static int dym_suggest_but(tpl_arena *ar, char *out, size_t cap, const char *input, size_t in_n, dym_word *w, size_t nw,
                           const char *reject)
{
    tpl_arena_mark mk;
    if (!tpl_arena_mark_take(ar, &mk)) return -1;
    int r = dym_correct(ar, out, cap, input, in_n, w, nw, reject);
    tpl_arena_rewind(ar, &mk);
    return r;
}

/* A word kept by dym_correct, ordered by its distance then its place (a stable ascending order). */
typedef struct { double jw; size_t i; } dym_pick;

static int dym_pick_cmp(const void *x, const void *y)
{
    const dym_pick *a = x, *b = y;
    return a->jw < b->jw ? -1 : a->jw > b->jw ? 1 : a->i < b->i ? -1 : a->i > b->i;
}

/* Whether the NUL-terminated hay holds s[0, n]. */
static bool dym_within(const char *hay, const char *s, size_t n)
{
    for (const char *p = hay; *p; p++)
        if (strncmp(p, s, n) == 0) return true;
    return n == 0;
}

static int dym_correct(tpl_arena *ar, char *out, size_t cap, const char *input, size_t in_n, dym_word *w, size_t nw,
                       const char *reject)
{
    dym_str ni;
    if (!dym_cps(ar, input, in_n, true, &ni)) return -1;
    double thr = ni.n > 3 ? 0.834 : 0.77;
    size_t *pick = tpl_arena_alloc(ar, (nw + 1) * sizeof(size_t)), np = 0;
    if (!pick) return -1;
    for (size_t i = 0; i < nw; i++) {
        dym_str nword, raw;
        tpl_arena_mark mk;   /* (each word's work memory given back: a Hash's keys may be many and long) */
        bool marked = tpl_arena_mark_take(ar, &mk);
        if (!dym_cps(ar, w[i].s, w[i].n, true, &nword)) return -1;
        double jw = dym_jw(ar, &nword, &ni);
        if (jw < 0) return -1;
        bool skip = jw < thr || (w[i].n == in_n && memcmp(w[i].s, input, in_n) == 0);
        if (!skip) {
            if (!dym_cps(ar, w[i].s, w[i].n, false, &raw)) return -1;
            w[i].jw = dym_jw(ar, &raw, &ni);
        }
        if (marked) tpl_arena_rewind(ar, &mk);
        if (skip) continue;
        if (w[i].jw < 0) return -1;
        pick[np++] = i;
    }
    /* sort_by (a stable merge sort here: glibc's qsort_r), then reverse: the reverse of a stable
     * ascending sort is descending with equal keys in reverse dictionary order. (n log n: an
     * insertion sort was quadratic in the words kept, every key of a Hash of like keys.) */
    dym_pick *ps = tpl_arena_alloc(ar, (np + 1) * sizeof *ps);
    if (!ps) return -1;
    for (size_t i = 0; i < np; i++) ps[i] = (dym_pick){ w[pick[i]].jw, pick[i] };
    qsort(ps, np, sizeof *ps, dym_pick_cmp);
    for (size_t i = 0; i < np; i++) pick[i] = ps[np - 1 - i].i;
    size_t *corr = tpl_arena_alloc(ar, (np + 1) * sizeof(size_t)), nc = 0;
    if (!corr) return -1;
    size_t thr2 = (ni.n + 3) / 4;   /* (normalized_input.length * 0.25).ceil */
    for (size_t i = 0; i < np; i++) {
        dym_str nword;
        if (!dym_cps(ar, w[pick[i]].s, w[pick[i]].n, true, &nword)) return -1;
        size_t d = dym_lev(ar, &nword, &ni);
        if (d == SIZE_MAX) return -1;
        if (d <= thr2) corr[nc++] = pick[i];
    }
    for (size_t i = 0; nc == 0 && i < np; i++) {
        dym_str nword;
        if (!dym_cps(ar, w[pick[i]].s, w[pick[i]].n, true, &nword)) return -1;
        size_t len = ni.n < nword.n ? ni.n : nword.n, d = dym_lev(ar, &nword, &ni);
        if (d == SIZE_MAX) return -1;
        if (d < len) corr[nc++] = pick[i];
    }
    size_t o = 0, shown = 0;
    for (size_t i = 0; i < nc; i++) {
        if (reject && dym_within(reject, w[corr[i]].show, w[corr[i]].nshow)) continue;
        const char *lead = shown++ ? "\n               " : "\nDid you mean?  ";
        size_t ln = strlen(lead);
        if (o + ln + w[corr[i]].nshow >= cap) return -2;
        memcpy(out + o, lead, ln);
        memcpy(out + o + ln, w[corr[i]].show, w[corr[i]].nshow);
        o += ln + w[corr[i]].nshow;
    }
    out[o] = 0;
    return (int)o;
}

/* The class's row of dym_methods.h, or NULL. */
static int dym_row(const char *cls)
{
    for (size_t i = 0; i < sizeof rb_dym_methods / sizeof rb_dym_methods[0]; i++)
        if (strcmp(rb_dym_methods[i].cls, cls) == 0) return (int)i;
    return -1;
}

/* Whether the space-separated list has name[0, n]. */
static bool dym_listed(const char *list, const char *name, size_t n)
{
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ' ');
        size_t k = e ? (size_t)(e - p) : strlen(p);
        if (k == n && memcmp(p, name, n) == 0) return true;
        p += k + (e != NULL);
    }
    return false;
}

#define DYM_WORDS 320   /* (more than any class of dym_methods.h has) */

/* The words of the space-separated list at w[nw, cap); the new count. */
static size_t dym_split(const char *list, dym_word *w, size_t nw, size_t cap)
{
    for (const char *p = list; *p && nw < cap;) {
        const char *e = strchr(p, ' ');
        size_t k = e ? (size_t)(e - p) : strlen(p);
        w[nw++] = (dym_word){ .s = p, .n = k, .show = p, .nshow = k };
        p += k + (e != NULL);
    }
    return nw;
}

/* Row's whole public (priv false) or private list, in Ruby's order, at w[0, cap): its own names, then
 * its base row's whole list less the names the row has itself in either list (as
 * tools/gen_rb_dym_methods.rb splits them); the count. */
static size_t dym_list(int row, bool priv, dym_word *w, size_t cap, int depth)
{
    const char *own = priv ? rb_dym_methods[row].priv : rb_dym_methods[row].pub;
    const char *other = priv ? rb_dym_methods[row].pub : rb_dym_methods[row].priv;
    int base = priv ? rb_dym_methods[row].priv_base : rb_dym_methods[row].pub_base;
    size_t nw = dym_split(own, w, 0, cap);
    if (base < 0 || depth > 4) return nw;
    size_t from = nw, m = nw + dym_list(base, priv, w + nw, cap - nw, depth + 1);
    for (size_t i = from; i < m; i++)
        if (!dym_listed(own, w[i].s, w[i].n) && !dym_listed(other, w[i].s, w[i].n)) w[nw++] = w[i];
    return nw;
}

/* MethodNameChecker's suggestions for name[0, n] on a value of Ruby class cls (none when
 * dym_methods.h has no row for it): dym_suggest's result. */
static int dym_method(tpl_vm *vm, const char *cls, const char *name, size_t n, char *out, size_t cap)
{
    out[0] = 0;
    int row = dym_row(cls);
    if (row < 0) return 0;
    dym_word w[DYM_WORDS];
    return dym_suggest(A(vm), out, cap, name, n, w, dym_list(row, false, w, DYM_WORDS, 0));
}

/* Whether a value of class cls (a row of dym_methods.h) has the private method name[0, n]. */
static bool dym_private(int row, const char *name, size_t n)
{
    dym_word w[DYM_WORDS];
    size_t nw = dym_list(row, true, w, DYM_WORDS, 0);
    for (size_t i = 0; i < nw; i++)
        if (w[i].n == n && memcmp(w[i].s, name, n) == 0) return true;
    return false;
}

/* ClassNameChecker's suggestions for the uninitialized constant path[0, n] (NAME or SCOPE::NAME): NAME
 * spelled against Object's constants, then SCOPE's own (suggested as SCOPE::X), less any suggestion the
 * message "uninitialized constant PATH" holds (Float::NANN: not Float::NAN); dym_suggest's result. */
int tpl_rb_dym_const(tpl_arena *ar, const char *path, size_t n, char *out, size_t cap)
{
    out[0] = 0;
    size_t cut = 0;
    for (size_t i = 0; i + 1 < n; i++)
        if (path[i] == ':' && path[i + 1] == ':') cut = i + 2;
    tpl_arena_mark mk;
    if (!tpl_arena_mark_take(ar, &mk)) return -1;
    size_t nrows = sizeof rb_dym_consts / sizeof rb_dym_consts[0], cnt = 0;
    int rows[2] = { -1, -1 };
    for (size_t r = 0; r < nrows; r++) {
        size_t k = strlen(rb_dym_consts[r].scope);
        if (k == 0) rows[0] = (int)r;
        else if (cut && k == cut - 2 && memcmp(rb_dym_consts[r].scope, path, k) == 0) rows[1] = (int)r;
    }
    for (int i = 0; i < 2; i++)
        if (rows[i] >= 0) cnt += strlen(rb_dym_consts[rows[i]].names) / 2 + 1;
    dym_word *w = tpl_arena_alloc(ar, (cnt + 1) * sizeof *w);
    tpl_sb msg;
    tpl_sb_init(&msg, ar);
    tpl_sb_printf(&msg, "uninitialized constant %.*s", (int)n, path);
    if (!w || !msg.p) { tpl_arena_rewind(ar, &mk); return -1; }
    size_t nw = 0;
    for (int i = 0; i < 2; i++) {
        if (rows[i] < 0) continue;
        size_t from = nw;
        nw = dym_split(rb_dym_consts[rows[i]].names, w, nw, cnt);
        for (size_t j = from; i == 1 && j < nw; j++) {   /* (shown as SCOPE::X) */
            char *full = tpl_arena_alloc(ar, cut + w[j].n + 1);
            if (!full) { tpl_arena_rewind(ar, &mk); return -1; }
            memcpy(full, path, cut);
            memcpy(full + cut, w[j].s, w[j].n);
            full[cut + w[j].n] = 0;
            w[j].show = full;
            w[j].nshow = cut + w[j].n;
        }
    }
    int r = dym_suggest_but(ar, out, cap, path + cut, n - cut, w, nw, msg.p);
    tpl_arena_rewind(ar, &mk);
    return r;
}

/* Ruby's NoMethodError for name[0, n] on a value of class cls that reads `recv' in the message
 * ("1:Integer", "#<...>"): "private method `x' called for" when cls has it as a private method,
 * and did_you_mean's suggestions. */
static int raise_no_method(tpl_vm *vm, const char *cls, const char *name, size_t n, const char *recv, int rlen)
{
    char sugg[320];   /* (the message buffer is 512 bytes) */
    int k = dym_method(vm, cls, name, n, sugg, sizeof sugg);
    if (k == -1) return oom(vm);
    if (k == -2)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: a NoMethodError of `%.*s' whose did_you_mean "
                            "suggestions tpl does not write", (int)(n > 100 ? 100 : n), name);
    int row = dym_row(cls);
    bool priv = row >= 0 && dym_private(row, name, n);
    return tpl_vm_error(vm, TPL_ERR_TYPE, "%s `%.*s' %s %.*s (NoMethodError)%s", priv ? "private method" : "undefined method",
                        (int)n, name, priv ? "called for" : "for", rlen, recv, sugg);
}

static int no_method(tpl_vm *vm, tpl_value self, const char *name, size_t n);
static int no_method_raise(tpl_vm *vm, tpl_value self, const char *cls, const char *name, size_t n);

/* self's class when self is a plain Array, Hash or Range and name one of the methods tpl's Enumerators (held as
 * those) have that Ruby's Array, Hash and Range do not ("Array~with_index" in core_methods.h):
 * [1].with_index { } is NoMethodError, not the Enumerator's answer. */
static const char *not_own_method(tpl_value self, const char *name, size_t n)
{
    if (n < 4 || n > 11 || (self.type != TPL_T_LIST && self.type != TPL_T_MAP) || tpl_is_enum_rb(self) || tpl_is_aseq_rb(self))
        return NULL;
    const char *cls = tpl_rb_class_name(self);
    if (strcmp(cls, "Array") != 0 && strcmp(cls, "Hash") != 0 && strcmp(cls, "Range") != 0) return NULL;
    return rb_core_has_sep(cls, '~', name, n) ? cls : NULL;
}

int tpl_rb_arity_no_method(tpl_vm *vm, tpl_value self, const char *name)
{
    const char *cls;
    switch (self.type) {
    case TPL_T_INT: case TPL_T_BIGINT: cls = "Integer"; break;
    case TPL_T_FLOAT: cls = "Float"; break;
    case TPL_T_NONE: cls = "NilClass"; break;
    case TPL_T_BOOL: cls = self.u.i ? "TrueClass" : "FalseClass"; break;
    case TPL_T_STR:
        if (self.flags & (TPL_F_CLASS_RB | TPL_F_REGEX_RB | TPL_F_EXC_RB)) return 0;
        cls = self.flags & TPL_F_SYMBOL ? "Symbol" : "String";
        break;
    case TPL_T_LIST:
        if (self.flags & (TPL_F_MATCH_RB | TPL_F_ENUM_RB)) return 0;
        cls = self.flags & TPL_F_RANGE_RB ? "Range" : "Array";
        break;
    case TPL_T_MAP: cls = "Hash"; break;
    default: return 0;
    }
    size_t n = strlen(name);
    /* (what the oracle's libraries add to every object: json, yaml, shellwords) */
    static const char *const ext[] = { "to_json", "to_yaml", "shellescape", "shellsplit", "shelljoin", NULL };
    for (int i = 0; ext[i]; i++) if (strcmp(ext[i], name) == 0) return 0;
    if (rb_core_has(cls, name, n)) return 0;
    return no_method(vm, self, name, n);
}

/* A class constant (TPL_F_CLASS_RB string) that is a module in Ruby (its class is Module: no new). */
static bool class_is_module(tpl_value self)
{
    static const char *const mods[] = { "ERB::Util", "Comparable", "Enumerable", "Kernel", "Math", "JSON", "Shellwords", NULL };
    for (int i = 0; mods[i]; i++)
        if (self.len == strlen(mods[i]) && memcmp(self.u.s, mods[i], self.len) == 0) return true;
    return false;
}

/* NoMethodError, as Ruby's; a method Ruby's class has that tpl does not implement is tpl's refusal
 * instead (no rescue takes it: `x.to_r rescue y` would print y where Ruby prints x). */
static int no_method(tpl_vm *vm, tpl_value self, const char *name, size_t n)
{
    const char *cls = tpl_rb_class_name(self.type == TPL_T_UNDEF ? tpl_v_none() : self), *core = cls;
    char ebuf[64];
    if (n > 2 && name[0] == '(' && name[n - 1] == ')') { name++; n -= 2; }   /* "(shellescape)": the compiler's name */
    if (self.type == TPL_T_STR && (self.flags & TPL_F_EXC_RB)) { /* a rescued exception: its class, Exception's methods */
        tpl_value c = tpl_rb_exc_class(self);
        snprintf(ebuf, sizeof ebuf, "%.*s", (int)c.len, c.u.s);
        cls = ebuf;
        core = "Exception";
    }
    if (tpl_is_aseq_rb(self)) core = "Enumerator";   /* (ArithmeticSequence's own: enum_method) */
    if (self.type == TPL_T_STR && (self.flags & TPL_F_CLASS_RB) && self.len < 40) {   /* Kernel.puts: a class method Ruby has */
        char cname[48];
        snprintf(cname, sizeof cname, "%.*s", (int)self.len, self.u.s);
        if (rb_core_has_sep(cname, '.', name, n) || (n == 3 && memcmp(name, "new", 3) == 0 && rb_core_has("Class", name, n)))   /* (Enumerator.new: Class#new) */
            return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: %s.%.*s is not implemented by tpl", cname, (int)n, name);
    }
    if (self.type != TPL_T_HOST && rb_core_has(core, name, n))
        return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: %s#%.*s is not implemented by tpl", cls, (int)n, name);
    return no_method_raise(vm, self, cls, name, n);
}

/* no_method's NoMethodError (cls: self's class name as Ruby prints it). */
static int no_method_raise(tpl_vm *vm, tpl_value self, const char *cls, const char *name, size_t n)
{
    if (self.type == TPL_T_NONE || self.type == TPL_T_UNDEF)
        return raise_no_method(vm, "NilClass", name, n, "nil:NilClass", 12);
    const char *dcls = self.type == TPL_T_HOST ? "" : cls;   /* (a host object's methods: no suggestions) */
    int len;
    const char *insp = inspect_short(vm, self, &len);
    if (len && insp[0] == '#')   /* Ruby names the class only after an inspect that does not start with '#' */
        return raise_no_method(vm, dcls, name, n, insp, len);
    tpl_sb b;
    tpl_sb_init(&b, A(vm));
    tpl_sb_printf(&b, "%.*s:%s", len, insp, cls);
    return b.p ? raise_no_method(vm, dcls, name, n, b.p, (int)b.len) : oom(vm);
}

/* rb_convert_type's TypeError: v cannot be converted into the class of types.def row `want`. */
static int type_error(tpl_vm *vm, tpl_vtype want, tpl_value v)
{
    if (want == TPL_VT_INT && (v.type == TPL_T_NONE || v.type == TPL_T_UNDEF))
        return tpl_vm_error(vm, TPL_ERR_TYPE, "no implicit conversion from nil to integer (TypeError)");
    if (want == TPL_VT_INT && v.type == TPL_T_BIGINT)   /* (an Integer past 64 bits: NUM2LONG) */
        return tpl_vm_fail(vm, TPL_EK_OVERFLOW, "bignum too big to convert into `long' (RangeError)");
    return tpl_vm_error(vm, TPL_ERR_TYPE, "no implicit conversion of %s into %s (TypeError)", conv_name(v),
                        tpl_rb_type_name(want));
}

static int nmin_size(tpl_vm *vm, int64_t n, bool by);

/* rb_ary_new2(n)'s capacity, taken before any item is read (Range#first(n), Range#min(n)): "array size too big"
 * past ARY_MAX_SIZE, a refusal where it is gigabytes (Ruby's NoMemoryError or not, as the machine's memory
 * allows). 0 or -1. */
static int ary_capa(tpl_vm *vm, int64_t n)
{
    if (n > INT64_MAX / 8) return tpl_vm_error(vm, TPL_ERR_VALUE, "array size too big (ArgumentError)");
    if (n > ((int64_t)1 << 27))
        return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: an Array made with room for %lld items (Ruby's "
                            "NoMemoryError where the machine has not the memory)", (long long)n);
    return 0;
}

/* A Float where Ruby wants an Integer index (NUM2LONG): truncated toward zero; NaN and the infinities
 * are FloatDomainError, a value past a long RangeError. */
static int float_index(tpl_vm *vm, tpl_value *v)
{
    double f = v->u.f;
    if (isnan(f) || isinf(f))
        return tpl_vm_error(vm, TPL_ERR_TYPE, "float %s out of range of integer (RangeError)", isnan(f) ? "NaN" : f < 0 ? "-Inf" : "Inf");
    if (!(f < 9223372036854775808.0 && f >= -9223372036854775808.0))
        return tpl_vm_error(vm, TPL_ERR_TYPE, "float %.10g out of range of integer (RangeError)", f);
    *v = tpl_v_int((int64_t)f);
    return 0;
}

static int rat_method(tpl_vm *vm, tpl_value self, const char *name, size_t n, tpl_value *args, int npos, tpl_value *out);

/* An Integer argument as NUM2LONG reads it: a Float truncated (float_index), a Rational too (its to_int), else an
 * Integer or its TypeError. */
static int long_arg(tpl_vm *vm, tpl_value *v)
{
    if (v->type == TPL_T_FLOAT && float_index(vm, v) < 0) return -1;
    if (tpl_is_rat(*v) && rat_method(vm, *v, "truncate", 8, NULL, 0, v) < 0) return -1;
    if (v->type == TPL_T_BIGINT) return tpl_vm_error(vm, TPL_ERR_VALUE, "bignum too big to convert into `long' (RangeError)");
    if (v->type != TPL_T_INT) return type_error(vm, TPL_VT_INT, *v);
    return 0;
}

/* A radix argument as NUM2INT reads it (to_s(b), to_i(b), Integer(s, b); Math.ldexp's exponent): an Integer, a Float
 * truncated to a long first (float_index); anything else its TypeError/RangeError, never its bits read as a number.
 * 0 or -1. */
static int radix_arg(tpl_vm *vm, tpl_value v, int64_t *base)
{
    if (v.type == TPL_T_FLOAT && float_index(vm, &v) < 0) return -1;
    if (v.type != TPL_T_INT) return type_error(vm, TPL_VT_INT, v);
    if (v.u.i >= INT_MIN && v.u.i <= INT_MAX) { *base = v.u.i; return 0; }
    /* (NUM2INT's RangeError; not 'invalid radix') */
    return tpl_vm_error(vm, TPL_ERR_VALUE, "integer %lld too %s to convert to `int' (RangeError)", (long long)v.u.i,
                        v.u.i < 0 ? "small" : "big");
}

/* A value's class as rb_cmperr names it: a host object's own (tpl_host_class.type_of: a Ruby
 * object's class through the gem), else tpl_rb_class_name. */
static const char *cmp_class(tpl_value v)
{
    if (v.type == TPL_T_HOST) {
        const tpl_hobj *h = v.u.p;
        unsigned numeric = 0;
        const char *own = h->cls->type_of ? h->cls->type_of(h->obj, &numeric) : NULL;
        if (own) return own;
    }
    return tpl_rb_class_name(v);
}

/* rb_cmperr: the right operand by its inspect when it is nil, true, false, a number or a
 * symbol, else by its class. */
static int cmp_fail(tpl_vm *vm, tpl_value a, tpl_value b)
{
    if (b.type == TPL_T_NONE || b.type == TPL_T_UNDEF || b.type == TPL_T_BOOL || is_num(b) ||
        (b.type == TPL_T_STR && (b.flags & TPL_F_SYMBOL))) {
        tpl_sb sb;
        tpl_sb_init(&sb, A(vm));
        tpl_rb_inspect(&sb, b);
        return tpl_vm_error(vm, TPL_ERR_TYPE, "comparison of %s with %.*s failed (ArgumentError)", cmp_class(a), (int)sb.len, sb.p ? sb.p : "");
    }
    return tpl_vm_error(vm, TPL_ERR_TYPE, "comparison of %s with %s failed (ArgumentError)", cmp_class(a), cmp_class(b));
}

static tpl_value str_of(tpl_vm *vm, tpl_value v)
{
    if (v.type == TPL_T_STR) return v;
    tpl_sb b;
    tpl_sb_init(&b, A(vm));
    tpl_rb_to_s(&b, v);
    return tpl_sb_value(&b);
}

/* str_of, or -1 with Ruby's error when the text cannot be made (SystemStackError past
 * TPL_NEST_MAX levels, the memory limit): never a truncated text. */
static int str_of_checked(tpl_vm *vm, tpl_value v, tpl_value *out)
{
    if (v.type == TPL_T_STR) { *out = v; return 0; }
    tpl_sb b;
    tpl_sb_init(&b, A(vm));
    tpl_rb_to_s(&b, v);
    if (b.failed) return tpl_vm_sb_error(vm, &b, "while getting the repr of an object");
    *out = tpl_sb_value(&b);
    return 0;
}

static tpl_list *new_list(tpl_vm *vm, uint32_t cap) { return tpl_list_new(A(vm), cap); }
/* A Ruby Hash (keys by eql?: 1, 1.0 and true are three keys); also the seen-sets of uniq, &, |, -. */
/* Whether comparing keys in tpl_map_set ran out of fuel (the render then ends: tpl_vm_nomem). */
static bool fuel_out(tpl_vm *vm)
{
    uint64_t *f = tpl_vm_arena(vm)->fuel;
    return f && *f == 0;
}

/* A Hash's default (tpl_map.rb_default): Hash.new(value), or Hash.new { |h, k| ... } (blk.pc set: a block
 * of the template's one frame, called for a missing key). */
typedef struct rb_hash_default {
    tpl_value value;
    tpl_rb_block blk;
} rb_hash_default;

static tpl_map *rb_map(tpl_vm *vm, uint32_t cap)
{
    tpl_map *m = tpl_map_new(A(vm), cap);
    if (m) m->eql = true;
    return m;
}

/* ------------------------------------------------------------------ Gem::Version */

/* RubyGems 3.3's Gem::Version (rubygems/version.rb, Ruby 3.1's), held as its @version text
 * (TPL_F_GEMV_RB). Its segments are the runs of digits and of letters (`scan(/[0-9]+|[a-z]+/i)`);
 * a number's digits are kept without leading zeros, so numbers of any size compare exactly. */
enum { GEM_SEGS_MAX = 64 };
typedef struct { const char *p; size_t n; bool str; } gem_seg;

static bool gem_alpha(unsigned char c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; }
static bool gem_digit(unsigned char c) { return c >= '0' && c <= '9'; }

/* The segments of version text s (at most GEM_SEGS_MAX: -1 past it). */
static int gem_segments(const char *s, size_t n, gem_seg *out)
{
    int k = 0;
    for (size_t i = 0; i < n;) {
        bool d = gem_digit((unsigned char)s[i]);
        if (!d && !gem_alpha((unsigned char)s[i])) { i++; continue; }
        size_t j = i;
        while (j < n && (d ? gem_digit((unsigned char)s[j]) : gem_alpha((unsigned char)s[j]))) j++;
        if (k == GEM_SEGS_MAX) return -1;
        gem_seg g = { s + i, j - i, !d };
        if (d) while (g.n > 1 && g.p[0] == '0') { g.p++; g.n--; }
        out[k++] = g;
        i = j;
    }
    return k;
}

static bool gem_zero(gem_seg g) { return !g.str && g.n == 1 && g.p[0] == '0'; }

/* canonical_segments: the numeric segments before the first letters and the rest, each without
 * its trailing zeros. */
static int gem_canonical(const char *s, size_t n, gem_seg *out)
{
    int k = gem_segments(s, n, out), ss = 0, m = 0;
    if (k < 0) return -1;
    while (ss < k && !out[ss].str) ss++;
    int e = ss;
    while (e > 0 && gem_zero(out[e - 1])) e--;
    for (int i = 0; i < e; i++) out[m++] = out[i];
    int e2 = k;
    while (e2 > ss && gem_zero(out[e2 - 1])) e2--;
    for (int i = ss; i < e2; i++) out[m++] = out[i];
    return m;
}

static int gem_seg_cmp(gem_seg a, gem_seg b)
{
    if (a.str != b.str) return a.str ? -1 : 1;   /* letters (a prerelease) sort before numbers */
    if (!a.str && a.n != b.n) return a.n < b.n ? -1 : 1;
    size_t m = a.n < b.n ? a.n : b.n;
    int c = m ? memcmp(a.p, b.p, m) : 0;
    return c ? (c < 0 ? -1 : 1) : (a.n < b.n ? -1 : a.n > b.n);
}

/* Gem::Version#<=> of two versions' texts. */
static int gem_cmp(tpl_value a, tpl_value b)
{
    if (a.len == b.len && memcmp(a.u.s, b.u.s, a.len) == 0) return 0;
    gem_seg x[GEM_SEGS_MAX], y[GEM_SEGS_MAX];
    int nx = gem_canonical(a.u.s, a.len, x), ny = gem_canonical(b.u.s, b.len, y);
    int lim = nx > ny ? nx : ny;
    static const gem_seg zero = { "0", 1, false };
    for (int i = 0; i < lim; i++) {
        int c = gem_seg_cmp(i < nx ? x[i] : zero, i < ny ? y[i] : zero);
        if (c) return c;
    }
    return 0;
}

static bool gem_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }
static bool gem_alnum(unsigned char c) { return gem_digit(c) || gem_alpha(c); }

/* Gem::Version.correct?: ANCHORED_VERSION_PATTERN,
 * /\A\s*([0-9]+(?>\.[0-9a-zA-Z]+)*(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?)?\s*\z/. */
static bool gem_correct(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && gem_space((unsigned char)s[i])) i++;
    if (i < n && gem_digit((unsigned char)s[i])) {
        while (i < n && gem_digit((unsigned char)s[i])) i++;
        while (i + 1 < n && s[i] == '.' && gem_alnum((unsigned char)s[i + 1])) {
            i++;
            while (i < n && gem_alnum((unsigned char)s[i])) i++;
        }
        if (i + 1 < n && s[i] == '-' && (gem_alnum((unsigned char)s[i + 1]) || s[i + 1] == '-')) {
            i++;
            while (i < n && (gem_alnum((unsigned char)s[i]) || s[i] == '-')) i++;
            while (i + 1 < n && s[i] == '.' && (gem_alnum((unsigned char)s[i + 1]) || s[i + 1] == '-')) {
                i++;
                while (i < n && (gem_alnum((unsigned char)s[i]) || s[i] == '-')) i++;
            }
        }
    }
    while (i < n && gem_space((unsigned char)s[i])) i++;
    return i == n;
}

/* Gem::Version.new(v): v's to_s checked by correct? (ArgumentError), stripped, "-" as ".pre.", a
 * blank one "0". */
static int gem_new(tpl_vm *vm, tpl_value v, tpl_value *out)
{
    if (tpl_is_gemv_rb(v)) { *out = v; return 0; }
    if (v.type == TPL_T_NONE || v.type == TPL_T_UNDEF)   /* (RubyGems warns and makes "") */
        return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: Gem::Version.new(nil) (RubyGems deprecates nil versions)");
    tpl_value s = v.type == TPL_T_STR && !(v.flags & (TPL_F_CLASS_RB | TPL_F_REGEX_RB | TPL_F_EXC_RB)) ? v : str_of(vm, v);
    if (!s.u.s && s.len) return oom(vm);
    if (!gem_correct(s.u.s, s.len)) {
        int len = s.len > 200 ? 200 : (int)s.len;
        return tpl_vm_error(vm, TPL_ERR_TYPE, "Malformed version number string %.*s (ArgumentError)", len, s.u.s);
    }
    size_t a = 0, e = s.len;
    while (a < e && gem_space((unsigned char)s.u.s[a])) a++;
    while (e > a && gem_space((unsigned char)s.u.s[e - 1])) e--;
    tpl_sb b;
    tpl_sb_init(&b, A(vm));
    if (a == e) tpl_sb_putc(&b, '0');
    for (size_t i = a; i < e; i++) {
        if (s.u.s[i] == '-') tpl_sb_puts(&b, ".pre.");
        else tpl_sb_putc(&b, s.u.s[i]);
    }
    if (!b.p) return oom(vm);
    gem_seg segs[GEM_SEGS_MAX];
    if (gem_segments(b.p, b.len, segs) < 0)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: a Gem::Version of more than %d segments", GEM_SEGS_MAX);
    *out = tpl_v_str(b.p, b.len);
    out->flags = TPL_F_CLASS_RB | TPL_F_GEMV_RB;
    return 0;
}

/* A version's segment as a Ruby value: an Integer (a BIGINT past int64) or a String. */
static int gem_seg_value(tpl_vm *vm, gem_seg g, tpl_value *out)
{
    if (g.str) { *out = tpl_v_str(g.p, g.n); return 0; }
    if (g.n <= 18) {
        int64_t x = 0;
        for (size_t i = 0; i < g.n; i++) x = x * 10 + (g.p[i] - '0');
        *out = tpl_v_int(x);
        return 0;
    }
    return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: a Gem::Version segment past 18 digits");
}

/* release and bump: the segments before the first letters (`segments.pop while segments.any? { |s|
 * String === s }`), for bump without the last one when there are several and the new last plus 1,
 * joined by "." as a new version; release of a version without letters is itself. */
static int gem_derive(tpl_vm *vm, tpl_value v, bool bump, tpl_value *out)
{
    gem_seg s[GEM_SEGS_MAX];
    int k = gem_segments(v.u.s, v.len, s), ss = 0;
    while (ss < k && !s[ss].str) ss++;
    if (!bump && ss == k) { *out = v; return 0; }
    k = ss;
    if (bump && k > 1) k--;
    if (bump && k == 0)   /* segments[-1] of an empty list is nil: nil.succ */
        return tpl_vm_error(vm, TPL_ERR_TYPE, "undefined method `succ' for nil:NilClass (NoMethodError)");
    tpl_sb b;
    tpl_sb_init(&b, A(vm));
    tpl_sb_puts(&b, "");
    for (int i = 0; i < k; i++) {
        if (i) tpl_sb_putc(&b, '.');
        if (bump && i == k - 1) {   /* Integer#succ on the digits */
            char d[48];
            size_t n = s[i].n;
            if (n + 1 >= sizeof d)
                return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: a Gem::Version segment past 46 digits");
            memcpy(d + 1, s[i].p, n);
            d[0] = '0';
            size_t j = n;
            while (d[j] == '9') d[j--] = '0';
            d[j]++;
            tpl_sb_put(&b, d[0] == '0' ? d + 1 : d, d[0] == '0' ? n : n + 1);
        } else
            tpl_sb_put(&b, s[i].p, s[i].n);
    }
    if (!b.p) return oom(vm);
    return gem_new(vm, tpl_v_str(b.p, b.len), out);
}

/* The methods of a Gem::Version (self) and of the class (Gem::Version.new, .create, .correct?).
 * 1: not one of them. */
static int gem_method(tpl_vm *vm, tpl_value self, const char *name, size_t n, tpl_value *args, int npos, tpl_value *out)
{
#define IS(lit) (n == sizeof lit - 1 && memcmp(name, lit, sizeof lit - 1) == 0)
    if (!tpl_is_gemv_rb(self)) {   /* the class */
        if ((IS("new") || IS("create")) && npos == 1) {
            if (IS("create") && (args[0].type == TPL_T_NONE || args[0].type == TPL_T_UNDEF)) { *out = tpl_v_none(); return 0; }
            return gem_new(vm, args[0], out);
        }
        if (IS("correct?") && npos == 1) {
            if (args[0].type == TPL_T_NONE || args[0].type == TPL_T_UNDEF)
                return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: Gem::Version.correct?(nil) (RubyGems deprecates nil versions)");
            tpl_value s = str_of(vm, args[0]);
            *out = tpl_v_bool(gem_correct(s.u.s, s.len));
            return 0;
        }
        return 1;
    }
    if (npos == 0 && (IS("to_s") || IS("version"))) { *out = tpl_v_str(self.u.s, self.len); return 0; }
    if (npos == 0 && IS("prerelease?")) {
        bool p = false;
        for (uint32_t i = 0; i < self.len && !p; i++) p = gem_alpha((unsigned char)self.u.s[i]);
        *out = tpl_v_bool(p);
        return 0;
    }
    if (npos == 0 && (IS("segments") || IS("canonical_segments"))) {
        gem_seg s[GEM_SEGS_MAX];
        int k = IS("segments") ? gem_segments(self.u.s, self.len, s) : gem_canonical(self.u.s, self.len, s);
        tpl_list *l = new_list(vm, k > 0 ? (uint32_t)k : 1);
        if (!l) return oom(vm);
        for (int i = 0; i < k; i++)
            if (gem_seg_value(vm, s[i], &l->items[l->len++]) < 0) return -1;
        *out = tpl_v_list(l);
        return 0;
    }
    if (npos == 0 && IS("release")) return gem_derive(vm, self, false, out);
    if (npos == 0 && IS("bump")) return gem_derive(vm, self, true, out);
    if (npos == 1 && IS("<=>")) {
        tpl_value o = args[0];
        if (o.type == TPL_T_STR && !(o.flags & (TPL_F_CLASS_RB | TPL_F_REGEX_RB | TPL_F_EXC_RB | TPL_F_SYMBOL)) && gem_correct(o.u.s, o.len)) {
            if (gem_new(vm, o, &o) < 0) return -1;
        }
        *out = tpl_is_gemv_rb(o) ? tpl_v_int(gem_cmp(self, o)) : tpl_v_none();
        return 0;
    }
    if (npos == 1 && IS("eql?")) {
        tpl_value o = args[0];
        *out = tpl_v_bool(tpl_is_gemv_rb(o) && o.len == self.len && memcmp(o.u.s, self.u.s, self.len) == 0);
        return 0;
    }
    return 1;
#undef IS
}

/* A Gem::Version compared with o by Comparable (<=> with a version, or a String correct? reads as
 * one): *ok false when <=> is nil. */
static int gem_cmp_any(tpl_value a, tpl_value o, bool *ok)
{
    *ok = false;
    if (tpl_is_gemv_rb(o)) { *ok = true; return gem_cmp(a, o); }
    if (o.type == TPL_T_STR && !(o.flags & (TPL_F_CLASS_RB | TPL_F_REGEX_RB | TPL_F_EXC_RB | TPL_F_SYMBOL)) && gem_correct(o.u.s, o.len)) {
        /* the String as Gem::Version.new reads it (stripped, "-" as ".pre.", blank "0") */
        char buf[512];
        size_t a0 = 0, e = o.len, k = 0;
        while (a0 < e && gem_space((unsigned char)o.u.s[a0])) a0++;
        while (e > a0 && gem_space((unsigned char)o.u.s[e - 1])) e--;
        if (a0 == e) buf[k++] = '0';
        for (size_t i = a0; i < e; i++) {
            if (k + 6 > sizeof buf) return 0;
            if (o.u.s[i] == '-') { memcpy(buf + k, ".pre.", 5); k += 5; } else buf[k++] = o.u.s[i];
        }
        gem_seg t[GEM_SEGS_MAX];
        if (gem_segments(buf, k, t) < 0) return 0;
        *ok = true;
        return gem_cmp(a, tpl_v_str(buf, k));
    }
    return 0;
}

/* ------------------------------------------------------------------ equality and ordering */

/* Containers nested deeper than this compare unequal (rb_equal_rec) or not at all (rb_cmp):
 * the walks recurse on the C stack, and 200,000 levels overflowed it (SIGSEGV); Ruby raises
 * SystemStackError somewhat deeper. The Jinja side's tpl_equal stops at 500. */
enum { RB_CMP_MAX_DEPTH = 1000 };

/* ------------------------------------------------------------------ Rational (TPL_T_RATIONAL) */

/* A Rational's comparison with a number (one side a Rational): Integer and Rational exactly, a Float
 * through the Rational's to_f (Ruby's nurat_cmp and nurat_eqeq_p convert it). *ok false for NaN or
 * a value that is no number. */
static int rat_cmp(tpl_value a, tpl_value b, bool *ok)
{
    *ok = true;
    bool fa = a.type == TPL_T_FLOAT, fb = b.type == TPL_T_FLOAT;
    if (!(tpl_is_rat(a) || tpl_is_intlike(a) || fa) || !(tpl_is_rat(b) || tpl_is_intlike(b) || fb) ||
        a.type == TPL_T_BOOL || b.type == TPL_T_BOOL) { *ok = false; return 0; }
    if (fa || fb) {
        double x = fa ? a.u.f : tpl_is_rat(a) ? tpl_rat_to_double(a) : dbl(a);
        double y = fb ? b.u.f : tpl_is_rat(b) ? tpl_rat_to_double(b) : dbl(b);
        if (isnan(x) || isnan(y)) { *ok = false; return 0; }
        return x < y ? -1 : x > y;
    }
    mpq_t x, y;
    tpl_rat_get(x, a);
    tpl_rat_get(y, b);
    int c = mpq_cmp(x, y);
    mpq_clears(x, y, NULL);
    return c < 0 ? -1 : c > 0;
}

/* A number a Rational meets in arithmetic: Integer, Float or Rational (not true/false). */
static bool rat_peer(tpl_value v) { return v.type == TPL_T_INT || v.type == TPL_T_BIGINT || v.type == TPL_T_FLOAT || tpl_is_rat(v); }

/* The bits of q's larger part (num or den), for the size checks before a power. */
static size_t rat_bits(const mpq_t q)
{
    size_t a = mpz_sizeinbase(mpq_numref(q), 2), b = mpz_sizeinbase(mpq_denref(q), 2);
    return a > b ? a : b;
}

/* q ** e (e an Integer value) exactly: a negative e inverts (ZeroDivisionError for 0); a result past
 * TPL_BIG_MAX_BITS is the memory-limit error decided before the work. Clears q. */
static int rat_pow_int(tpl_vm *vm, mpq_t q, tpl_value e, tpl_value *out)
{
    bool neg = e.type == TPL_T_BIGINT ? e.u.s[0] == '-' : e.u.i < 0;
    bool unit = mpz_cmpabs_ui(mpq_numref(q), 1) == 0 && mpz_cmp_ui(mpq_denref(q), 1) == 0;
    if (neg && mpz_sgn(mpq_numref(q)) == 0) { mpq_clear(q); return tpl_vm_fail(vm, TPL_EK_ZERO_DIVISION, "divided by 0 (ZeroDivisionError)"); }
    if (mpz_sgn(mpq_numref(q)) == 0 || unit) {   /* 0 ** n, 1 ** n, (-1) ** n: no size to check */
        bool odd = e.type == TPL_T_BIGINT ? (e.u.s[e.len - 1] - '0') % 2 != 0 : (e.u.i & 1) != 0;
        if (e.type == TPL_T_INT && e.u.i == 0) mpq_set_ui(q, 1, 1);
        else if (unit && !odd) mpq_abs(q, q);
        return tpl_rat_result(vm, q, out);
    }
    uint64_t k;
    if (e.type == TPL_T_BIGINT) k = UINT64_MAX;
    else k = neg ? 0 - (uint64_t)e.u.i : (uint64_t)e.u.i;
    size_t bits = rat_bits(q);
    if (k > (uint64_t)TPL_BIG_MAX_BITS || (bits > 1 && (uint64_t)(bits - 1) * k > (uint64_t)TPL_BIG_MAX_BITS)) {
        mpq_clear(q);
        return tpl_vm_fail(vm, TPL_EK_MEMORY_LIMIT, "integer too large (more than %d bits)", TPL_BIG_MAX_BITS);
    }
    if (!tpl_fuel_charge(tpl_vm_arena(vm)->fuel, tpl_big_cost((size_t)(bits * k / 64 + 1)))) { mpq_clear(q); return tpl_vm_nomem(vm); }
    mpz_pow_ui(mpq_numref(q), mpq_numref(q), (unsigned long)k);
    mpz_pow_ui(mpq_denref(q), mpq_denref(q), (unsigned long)k);
    if (neg) mpq_inv(q, q);
    return tpl_rat_result(vm, q, out);
}

/* Whether Ruby's Integer a ** e (e > 0) is a Float: rb_big_pow warns and answers Float's pow
 * (Infinity) for a result past about 32 Mi bits (Ruby switches between 32.5 and 33.5 Mi bits by
 * the base: Float only when the exact size is past 32 Mi bits, where Ruby surely has; below,
 * the exact result, which tpl's integer limit refuses). */
static bool pow_is_float(tpl_value a, double e)
{
    double bits;
    if (a.type == TPL_T_BIGINT) {   /* (its digits, a lower bound: len - 1 digits past the sign) */
        size_t nd = a.len - (a.u.s[0] == '-');
        bits = (double)(nd - 1) * 3.321928;
    } else {
        if (a.u.i == 0 || a.u.i == 1 || a.u.i == -1) return false;
        bits = log2(fabs((double)a.u.i));
    }
    return bits * e > 32.0 * 1024 * 1024;
}

/* That Float: Float's pow of a Bignum a, of |a| for a Fixnum (int_pow drops the sign before it
 * squares its way to rb_big_pow: (-3) ** (10**9 + 1) is Infinity). */
static double pow_float(tpl_value a, double e)
{
    return a.type == TPL_T_INT ? pow(fabs(dbl(a)), e) : pow(dbl(a), e);
}

/* Arithmetic where a Rational takes part, or Integer ** negative Integer (a Rational in Ruby): 1
 * answered (*out), 0 not one of these, -1 error. A Float operand wins (the Rational's to_f). */
static int rat_arith(tpl_vm *vm, int op, tpl_value a, tpl_value b, tpl_value *out)
{
    if (!tpl_is_rat(a) && !tpl_is_rat(b)) {
        bool negexp = op == 'p' && (a.type == TPL_T_INT || a.type == TPL_T_BIGINT) &&
                      (b.type == TPL_T_BIGINT ? b.u.s[0] == '-' : b.type == TPL_T_INT && b.u.i < 0);
        if (!negexp) return 0;
        if (a.type == TPL_T_INT && (a.u.i == 1 || a.u.i == -1)) {
            /* 1 ** -n and (-1) ** -n are Integers in Ruby (fix_pow answers them before its negative
             * branch): 1, or -1 when the base is -1 and n is odd (a big n by its last digit) */
            bool odd = b.type == TPL_T_INT ? (b.u.i & 1) != 0 : b.len && ((unsigned char)b.u.s[b.len - 1] - '0') % 2 == 1;
            *out = tpl_v_int(a.u.i == -1 && odd ? -1 : 1);
            return 1;
        }
        double e = -dbl(b);
        if (pow_is_float(a, e)) {
            /* a ** |b| is a Float (rb_big_pow): fix_pow_inverted answers 1.0 / a ** that Float for
             * a Fixnum a, rb_big_pow 1.0 / that Float for a Bignum (0.0: 2 ** -(10**30)) */
            double y = pow_float(a, e);
            *out = tpl_v_float(1.0 / (a.type == TPL_T_INT ? pow(dbl(a), y) : y));
            return 1;
        }
        mpq_t q;
        tpl_rat_get(q, a);
        return rat_pow_int(vm, q, b, out) < 0 ? -1 : 1;
    }
    if (!rat_peer(a) || !rat_peer(b)) {
        if (!tpl_is_rat(a)) return 0;   /* (5 + "x", "x" * r: the other side's errors) */
        return coerce_failed(vm, b, "Rational");
    }
    if (a.type == TPL_T_FLOAT || b.type == TPL_T_FLOAT) {
        double x = tpl_is_rat(a) ? tpl_rat_to_double(a) : dbl(a), y = tpl_is_rat(b) ? tpl_rat_to_double(b) : dbl(b);
        switch (op) {
        case '+': *out = tpl_v_float(x + y); return 1;
        case '-': *out = tpl_v_float(x - y); return 1;
        case '*': *out = tpl_v_float(x * y); return 1;
        case '/': *out = tpl_v_float(x / y); return 1;
        case '%': {
            double m = fmod(x, y);
            if (y != 0.0 && m != 0.0 && ((m < 0) != (y < 0))) m += y;
            *out = tpl_v_float(m);
            return 1;
        }
        default:
            if (x < 0 && y != floor(y))
                return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: a negative number ** a fraction is a Complex (tpl has no Complex)");
            *out = tpl_v_float(pow(x, y));
            return 1;
        }
    }
    mpq_t x, y;
    tpl_rat_get(x, a);
    if (op == 'p') {
        tpl_rat_get(y, b);
        if (mpz_cmp_ui(mpq_denref(y), 1) != 0) {   /* a fractional exponent: Float's pow */
            double fx = tpl_rat_double(x), fy = tpl_rat_double(y);
            mpq_clears(x, y, NULL);
            if (fx < 0)
                return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: a negative number ** a fraction is a Complex (tpl has no Complex)");
            *out = tpl_v_float(pow(fx, fy));
            return 1;
        }
        tpl_value e;
        mpz_t ez;
        mpz_init_set(ez, mpq_numref(y));
        mpq_clear(y);
        if (tpl_big_result(vm, ez, &e) < 0) { mpq_clear(x); return -1; }
        if (e.type == TPL_T_BIGINT && mpz_sgn(mpq_numref(x)) != 0 &&
            !(mpz_cmpabs_ui(mpq_numref(x), 1) == 0 && mpz_cmp_ui(mpq_denref(x), 1) == 0)) {
            /* nurat_expt: a Bignum exponent warns and is Float's pow of to_f (Rational(1, 3) **
             * 10**30 is 0.0; 0, 1 and -1 stay exact below) */
            double fx = tpl_rat_double(x);
            mpq_clear(x);
            *out = tpl_v_float(pow(fx, dbl(e)));
            return 1;
        }
        return rat_pow_int(vm, x, e, out) < 0 ? -1 : 1;
    }
    tpl_rat_get(y, b);
    if ((op == '/' || op == '%') && mpq_sgn(y) == 0) {
        mpq_clears(x, y, NULL);
        return tpl_vm_fail(vm, TPL_EK_ZERO_DIVISION, "divided by 0 (ZeroDivisionError)");
    }
    if (!tpl_fuel_charge(tpl_vm_arena(vm)->fuel, tpl_big_cost(mpz_size(mpq_numref(x)) + mpz_size(mpq_denref(x)) +
                                                             mpz_size(mpq_numref(y)) + mpz_size(mpq_denref(y))))) {
        mpq_clears(x, y, NULL);
        return tpl_vm_nomem(vm);
    }
    switch (op) {
    case '+': mpq_add(x, x, y); break;
    case '-': mpq_sub(x, x, y); break;
    case '*': mpq_mul(x, x, y); break;
    case '/': mpq_div(x, x, y); break;
    default: { /* x - y * floor(x / y) */
        mpq_t t;
        mpz_t f;
        mpq_init(t);
        mpz_init(f);
        mpq_div(t, x, y);
        mpz_fdiv_q(f, mpq_numref(t), mpq_denref(t));
        mpq_set_z(t, f);
        mpq_mul(t, t, y);
        mpq_sub(x, x, t);
        mpq_clear(t);
        mpz_clear(f);
        break;
    }
    }
    mpq_clear(y);
    return tpl_rat_result(vm, x, out) < 0 ? -1 : 1;
}

/* Ruby's String#to_r / Rational(str) reading: [ws] [sign] digits[_digits] [.digits] [e[sign]digits] [/digits] [ws].
 * Sets q and returns the bytes read (0: no number). *fl: 0 q is the number; RAT_TINY or RAT_HUGE
 * (negated for a '-' sign) when its power of ten is past Ruby's power limit (read_rat_nos answers
 * the Float 0.0 or Infinity then: 10**exp is a Float); RAT_BIG when the exact value is past
 * TPL_BIG_MAX_BITS (known without computing the power). */
enum { RAT_TINY = 1, RAT_HUGE = 2, RAT_BIG = 3 };
static size_t rat_scan(const char *s, size_t n, mpq_t q, int *fl)
{
    *fl = 0;
    size_t i = 0;
    while (i < n && (s[i] == ' ' || (s[i] >= '\t' && s[i] <= '\r'))) i++;
    bool neg = false;
    if (i < n && (s[i] == '-' || s[i] == '+')) neg = s[i++] == '-';
    char *dig = malloc(n + 2);
    if (!dig) return 0;
    size_t nd = 0, frac = 0, st = i;
    long ex = 0;
    while (i < n && ((s[i] >= '0' && s[i] <= '9') || (s[i] == '_' && i > st && i + 1 < n && s[i + 1] >= '0' && s[i + 1] <= '9')))
        if (s[i++] != '_') dig[nd++] = s[i - 1];
    if (nd && i + 1 < n && s[i] == '.' && s[i + 1] >= '0' && s[i + 1] <= '9') {
        i++;
        size_t fs = i;
        while (i < n && ((s[i] >= '0' && s[i] <= '9') || (s[i] == '_' && i > fs && i + 1 < n && s[i + 1] >= '0' && s[i + 1] <= '9')))
            if (s[i++] != '_') { dig[nd++] = s[i - 1]; frac++; }
    }
    if (!nd) { free(dig); return 0; }
    if (i + 1 < n && (s[i] == 'e' || s[i] == 'E')) {
        size_t p = i + 1;
        bool eneg = false;
        if (p < n && (s[p] == '-' || s[p] == '+')) eneg = s[p++] == '-';
        if (p < n && s[p] >= '0' && s[p] <= '9') {
            while (p < n && s[p] >= '0' && s[p] <= '9') { if (ex < 100000000) ex = ex * 10 + (s[p] - '0'); p++; }
            if (eneg) ex = -ex;
            i = p;
        }
    }
    dig[nd] = 0;
    /* (frac is at most the input's length; a scale past the limits below is never computed) */
    double scale = (double)ex - (double)frac;
    /* 10**|scale| is a Float in Ruby past about 32.5 Mi bits (tpl: past 32 Mi exact bits, where Ruby
     * surely is); below that, a value whose exact size is past the integer limit is refused before
     * the power is computed: num * 10**scale, or a denominator of at least 10**-scale / num */
    double pbits = fabs(scale) * 3.321928;
    bool zero = nd == strspn(dig, "0");   /* (0 * 10**k and 0 / 10**k: 0, no power computed) */
    if (pbits > 32.0 * 1024 * 1024) *fl = scale > 0 ? RAT_HUGE : RAT_TINY;
    else if (!zero && (scale > 0 ? pbits : pbits - (double)nd * 3.321929) > (double)TPL_BIG_MAX_BITS + 64) *fl = RAT_BIG;
    mpz_set_str(mpq_numref(q), dig, 10);
    mpz_set_ui(mpq_denref(q), 1);
    free(dig);
    if (!*fl && !zero && scale != 0) {
        mpz_t p10;
        mpz_init(p10);
        mpz_ui_pow_ui(p10, 10, (unsigned long)fabs(scale));
        if (scale > 0) mpz_mul(mpq_numref(q), mpq_numref(q), p10);
        else mpz_set(mpq_denref(q), p10);
        mpz_clear(p10);
    }
    if (i + 1 < n && s[i] == '/' && s[i + 1] >= '0' && s[i + 1] <= '9') {
        mpz_t d;
        size_t ds = ++i;
        while (i < n && ((s[i] >= '0' && s[i] <= '9') || (s[i] == '_' && i > ds && i + 1 < n && s[i + 1] >= '0' && s[i + 1] <= '9'))) i++;
        char *t = malloc(i - ds + 1);
        if (!t) return 0;
        size_t k = 0;
        for (size_t j = ds; j < i; j++) if (s[j] != '_') t[k++] = s[j];
        t[k] = 0;
        mpz_init_set_str(d, t, 10);
        free(t);
        mpz_mul(mpq_denref(q), mpq_denref(q), d);
        mpz_clear(d);
    }
    if (neg) mpz_neg(mpq_numref(q), mpq_numref(q));
    if (*fl && *fl != RAT_BIG) {   /* (a zero denominator still raises first) */
        if (neg) *fl = -*fl;
        mpz_set_ui(mpq_numref(q), 0);
        if (mpz_sgn(mpq_denref(q)) != 0) mpz_set_ui(mpq_denref(q), 1);
    }
    return i;
}

/* The error or Float of a rat_scan flag (fl != 0): -1 error, else 0 with *out set to String#to_r's
 * Float 0.0 or -0.0 (out NULL: Rational(), whose q is 0/1 then, as Rational(0.0)). */
static int rat_scan_flag(tpl_vm *vm, int fl, tpl_value *out)
{
    if (fl == RAT_BIG) return tpl_vm_fail(vm, TPL_EK_MEMORY_LIMIT, "integer too large (more than %d bits)", TPL_BIG_MAX_BITS);
    if (fl == RAT_HUGE || fl == -RAT_HUGE) return tpl_vm_error(vm, TPL_ERR_VALUE, "Infinity (FloatDomainError)");
    if (out) *out = tpl_v_float(fl < 0 ? -0.0 : 0.0);
    return 0;
}

/* v as an exact rational for Rational(): Integer, Rational, Float (its exact value), String (strict).
 * 0, or -1 with Ruby's error. */
static int rat_of(tpl_vm *vm, tpl_value v, mpq_t q)
{
    if (tpl_is_rat(v) || v.type == TPL_T_INT || v.type == TPL_T_BIGINT) { tpl_rat_get(q, v); return 0; }
    mpq_init(q);
    if (v.type == TPL_T_FLOAT) {
        if (isnan(v.u.f) || isinf(v.u.f)) {
            mpq_clear(q);
            return tpl_vm_error(vm, TPL_ERR_VALUE, "%s (FloatDomainError)", isnan(v.u.f) ? "NaN" : v.u.f > 0 ? "Infinity" : "-Infinity");
        }
        mpq_set_d(q, v.u.f);
        return 0;
    }
    if (v.type == TPL_T_STR && !(v.flags & (TPL_F_SYMBOL | TPL_F_CLASS_RB | TPL_F_REGEX_RB | TPL_F_EXC_RB))) {
        int fl;
        size_t k = rat_scan(v.u.s, v.len, q, &fl);
        while (k && k < v.len && (v.u.s[k] == ' ' || (v.u.s[k] >= '\t' && v.u.s[k] <= '\r'))) k++;
        if (k && k == v.len) {
            if (mpz_sgn(mpq_denref(q)) == 0) { mpq_clear(q); return tpl_vm_fail(vm, TPL_EK_ZERO_DIVISION, "divided by 0 (ZeroDivisionError)"); }
            if (fl && rat_scan_flag(vm, fl, NULL) < 0) { mpq_clear(q); return -1; }
            return 0;
        }
        mpq_clear(q);
        int len;
        const char *insp = inspect_short(vm, v, &len);
        return tpl_vm_error(vm, TPL_ERR_VALUE, "invalid value for convert(): %.*s (ArgumentError)", len, insp);
    }
    mpq_clear(q);
    return tpl_vm_error(vm, TPL_ERR_TYPE, "can't convert %s into Rational (TypeError)", conv_name(v));
}

/* Kernel#Rational(x, y = 1). */
int r_k_Rational(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    mpq_t x, y;
    if (rat_of(vm, a[0], x) < 0) return -1;
    if (!tpl_given(a[1])) return tpl_rat_result(vm, x, out);
    if (rat_of(vm, a[1], y) < 0) { mpq_clear(x); return -1; }
    if (mpq_sgn(y) == 0) { mpq_clears(x, y, NULL); return tpl_vm_fail(vm, TPL_EK_ZERO_DIVISION, "divided by 0 (ZeroDivisionError)"); }
    mpq_div(x, x, y);
    mpq_clear(y);
    return tpl_rat_result(vm, x, out);
}

/* The simplest rational in [a, b] (Ruby's nurat_rationalize_internal, exact): p/q into r. */
static void rat_simplest(mpq_t r, const mpq_t a0, const mpq_t b0)
{
    mpq_t a, b, t;
    mpz_t c, k, p0, p1, p2, q0, q1, q2;
    mpq_inits(a, b, t, NULL);
    mpz_inits(c, k, p0, p1, p2, q0, q1, q2, NULL);
    mpq_set(a, a0);
    mpq_set(b, b0);
    mpz_set_ui(p0, 0); mpz_set_ui(p1, 1); mpz_set_ui(q0, 1); mpz_set_ui(q1, 0);
    for (int guard = 0; guard < 100000; guard++) {
        mpz_cdiv_q(c, mpq_numref(a), mpq_denref(a));
        mpq_set_z(t, c);
        if (mpq_cmp(t, b) < 0) break;
        mpz_sub_ui(k, c, 1);
        mpz_mul(p2, k, p1); mpz_add(p2, p2, p0);
        mpz_mul(q2, k, q1); mpz_add(q2, q2, q0);
        mpq_set_z(t, k);
        mpq_sub(b, b, t);   /* t = 1 / (b - k); b = 1 / (a - k); a = t */
        mpq_sub(a, a, t);
        mpq_inv(t, b);
        mpq_inv(b, a);
        mpq_set(a, t);
        mpz_set(p0, p1); mpz_set(q0, q1); mpz_set(p1, p2); mpz_set(q1, q2);
    }
    mpz_mul(p2, c, p1); mpz_add(p2, p2, p0);
    mpz_mul(q2, c, q1); mpz_add(q2, q2, q0);
    mpz_set(mpq_numref(r), p2);
    mpz_set(mpq_denref(r), q2);
    mpq_canonicalize(r);
    mpq_clears(a, b, t, NULL);
    mpz_clears(c, k, p0, p1, p2, q0, q1, q2, NULL);
}

/* The same walk on Floats, as Ruby runs it when the bounds are Floats (Float#rationalize(eps) and
 * Rational#rationalize(Float)): a = x - |eps|, b = x + |eps| in double arithmetic. */
static void rat_simplest_f(mpq_t r, double a, double b)
{
    mpz_t c, k, p0, p1, p2, q0, q1, q2;
    mpz_inits(c, k, p0, p1, p2, q0, q1, q2, NULL);
    mpz_set_ui(p0, 0); mpz_set_ui(p1, 1); mpz_set_ui(q0, 1); mpz_set_ui(q1, 0);
    for (int guard = 0; guard < 2000 && isfinite(a) && isfinite(b); guard++) {
        double cd = ceil(a);
        mpz_set_d(c, cd);
        if (cd < b) break;
        mpz_sub_ui(k, c, 1);
        mpz_mul(p2, k, p1); mpz_add(p2, p2, p0);
        mpz_mul(q2, k, q1); mpz_add(q2, q2, q0);
        double kd = mpz_get_d(k);
        double t = 1.0 / (b - kd);
        b = 1.0 / (a - kd);
        a = t;
        mpz_set(p0, p1); mpz_set(q0, q1); mpz_set(p1, p2); mpz_set(q1, q2);
    }
    mpz_mul(p2, c, p1); mpz_add(p2, p2, p0);
    mpz_mul(q2, c, q1); mpz_add(q2, q2, q0);
    if (mpz_sgn(q2) == 0) mpz_set_ui(q2, 1);
    mpz_set(mpq_numref(r), p2);
    mpz_set(mpq_denref(r), q2);
    mpq_canonicalize(r);
    mpz_clears(c, k, p0, p1, p2, q0, q1, q2, NULL);
}

/* Float#rationalize([eps]) of a finite d (rb_flt_rationalize / _with_prec). */
static int flt_rationalize(tpl_vm *vm, double d, const tpl_value *eps, tpl_value *out)
{
    if (isnan(d) || isinf(d)) return tpl_vm_error(vm, TPL_ERR_VALUE, "%s (FloatDomainError)", isnan(d) ? "NaN" : d > 0 ? "Infinity" : "-Infinity");
    bool neg = d < 0;
    double x = fabs(d);
    mpq_t r;
    mpq_init(r);
    if (eps) {
        double e = fabs(tpl_is_rat(*eps) ? tpl_rat_to_double(*eps) : dbl(*eps)), a = x - e, b = x + e;
        if (a == b) mpq_set_d(r, x);
        else rat_simplest_f(r, a, b);
    } else {
        int ex;
        double f = frexp(x, &ex);
        mpz_t fz;
        mpz_init_set_d(fz, ldexp(f, DBL_MANT_DIG));
        ex -= DBL_MANT_DIG;
        if (mpz_sgn(fz) == 0 || ex >= 0) {
            if (ex > 0) mpz_mul_2exp(fz, fz, (mp_bitcnt_t)ex);
            mpq_set_z(r, fz);
        } else {   /* between (2f - 1) / 2^(1-n) and (2f + 1) / 2^(1-n) */
            mpq_t a, b;
            mpq_inits(a, b, NULL);
            mpz_mul_2exp(fz, fz, 1);
            mpz_sub_ui(mpq_numref(a), fz, 1);
            mpz_add_ui(mpq_numref(b), fz, 1);
            mpz_set_ui(mpq_denref(a), 1);
            mpz_mul_2exp(mpq_denref(a), mpq_denref(a), (mp_bitcnt_t)(1 - ex));
            mpz_set(mpq_denref(b), mpq_denref(a));
            mpq_canonicalize(a);
            mpq_canonicalize(b);
            rat_simplest(r, a, b);
            mpq_clears(a, b, NULL);
        }
        mpz_clear(fz);
    }
    if (neg) mpq_neg(r, r);
    return tpl_rat_result(vm, r, out);
}

/* Rational#round/floor/ceil/truncate([ndigits]) (f_round_common): mode 0 round (half away from zero),
 * 1 floor, 2 ceil, 3 truncate. An Integer without digits or with ndigits < 1, else a Rational. */
static int rat_round(tpl_vm *vm, tpl_value self, const tpl_value *nd, int mode, tpl_value *out)
{
    int64_t k = 0;
    if (nd) {
        if (nd->type != TPL_T_INT && nd->type != TPL_T_BIGINT) return tpl_vm_error(vm, TPL_ERR_TYPE, "not an integer (TypeError)");
        /* 10**ndigits past Ruby's power limit is a Float (Infinity, or 0.0 for a negative ndigits):
         * self * it is a Float, and f_round_common answers self, or 0 for a negative ndigits
         * (a Bignum, or |ndigits| >= 2**31, surely past it; between 100000 and that, a limit) */
        bool neg = nd->type == TPL_T_BIGINT ? nd->u.s[0] == '-' : nd->u.i < 0;
        if (nd->type == TPL_T_BIGINT || nd->u.i >= ((int64_t)1 << 31) || nd->u.i <= -((int64_t)1 << 31)) {
            *out = neg ? tpl_v_int(0) : self;
            return 0;
        }
        k = nd->u.i;
        if (k > 100000 || k < -100000) return tpl_vm_error(vm, TPL_ERR_LIMIT, "unsupported: %s with %lld digits", "Rational#round", (long long)k);
    }
    mpq_t q, s;
    mpz_t z, p10;
    tpl_rat_get(q, self);
    mpq_init(s);
    mpz_inits(z, p10, NULL);
    mpz_ui_pow_ui(p10, 10, (unsigned long)(k < 0 ? -k : k));
    mpq_set_z(s, p10);
    if (k < 0) mpq_inv(s, s);
    mpq_mul(q, q, s);   /* q * 10**k */
    mpz_srcptr num = mpq_numref(q), den = mpq_denref(q);
    if (mode == 1) mpz_fdiv_q(z, num, den);
    else if (mode == 2) mpz_cdiv_q(z, num, den);
    else if (mode == 3) mpz_tdiv_q(z, num, den);
    else {   /* half away from zero: (2|n| + d) / 2d, signed */
        mpz_mul_2exp(z, num, 1);
        mpz_abs(z, z);
        mpz_add(z, z, den);
        mpz_t d2;
        mpz_init(d2);
        mpz_mul_2exp(d2, den, 1);
        mpz_fdiv_q(z, z, d2);
        mpz_clear(d2);
        if (mpz_sgn(num) < 0) mpz_neg(z, z);
    }
    mpq_clear(q);
    if (!nd || k < 1) {   /* an Integer: z / 10**k truncated (k <= 0: z * 10**-k) */
        if (k < 0) mpz_mul(z, z, p10);
        mpz_clear(p10);
        mpq_clear(s);
        return tpl_big_result(vm, z, out);
    }
    mpq_init(q);
    mpq_set_z(q, z);
    mpq_div(q, q, s);
    mpz_clears(z, p10, NULL);
    mpq_clear(s);
    return tpl_rat_result(vm, q, out);
}

/* Methods of a Rational, and Integer's/Float's/String's/nil's methods that make one (to_r,
 * rationalize, quo; Rational's class methods are Kernel#Rational): 0 answered, -1 error, 1 not one
 * of them. */
static int rat_method(tpl_vm *vm, tpl_value self, const char *name, size_t n, tpl_value *args, int npos, tpl_value *out)
{
#define IS(lit) (n == sizeof lit - 1 && memcmp(name, lit, sizeof lit - 1) == 0)
    if (!tpl_is_rat(self)) {
        bool intg = self.type == TPL_T_INT || self.type == TPL_T_BIGINT;
        if (IS("to_r") && npos == 0) {
            if (intg || self.type == TPL_T_FLOAT) {
                mpq_t q;
                if (rat_of(vm, self, q) < 0) return -1;
                return tpl_rat_result(vm, q, out);
            }
            if (self.type == TPL_T_NONE) { mpq_t q; mpq_init(q); return tpl_rat_result(vm, q, out); }
            if (self.type == TPL_T_STR && !(self.flags & (TPL_F_SYMBOL | TPL_F_CLASS_RB | TPL_F_REGEX_RB | TPL_F_EXC_RB))) {
                mpq_t q;
                mpq_init(q);
                int fl;
                if (!rat_scan(self.u.s, self.len, q, &fl)) mpq_set_ui(q, 0, 1);
                else if (mpz_sgn(mpq_denref(q)) == 0) {   /* "1/0".to_r raises, as Ruby's */
                    mpq_clear(q);
                    return tpl_vm_fail(vm, TPL_EK_ZERO_DIVISION, "divided by 0 (ZeroDivisionError)");
                } else if (fl) {   /* ("1e-99999999".to_r is the Float 0.0 in Ruby) */
                    mpq_clear(q);
                    return rat_scan_flag(vm, fl, out);
                }
                return tpl_rat_result(vm, q, out);
            }
            return 1;
        }
        if (IS("rationalize") && npos <= 1 && (intg || self.type == TPL_T_FLOAT)) {
            if (npos && !rat_peer(args[0])) return type_error(vm, TPL_VT_RATIONAL, args[0]);
            if (intg) { mpq_t q; tpl_rat_get(q, self); return tpl_rat_result(vm, q, out); }
            return flt_rationalize(vm, self.u.f, npos ? args : NULL, out);
        }
        if (IS("quo") && npos == 1 && (intg || self.type == TPL_T_FLOAT)) {
            if (self.type == TPL_T_FLOAT || args[0].type == TPL_T_FLOAT || !rat_peer(args[0])) {
                int h = rat_arith(vm, '/', self, args[0], out);
                if (h) return h < 0 ? -1 : 0;
                if (!rat_peer(args[0])) return coerce_failed(vm, args[0], intg ? "Rational" : "Float");
                *out = tpl_v_float(dbl(self) / dbl(args[0]));
                return 0;
            }
            mpq_t q;
            tpl_rat_get(q, self);
            tpl_value r;
            if (tpl_rat_result(vm, q, &r) < 0) return -1;
            return rat_arith(vm, '/', r, args[0], out) < 0 ? -1 : 0;
        }
        return 1;
    }
    bool neg = tpl_rat_neg(self);
    if (npos == 0) {
        if (IS("numerator") || IS("denominator")) {
            const char *sl = memchr(self.u.s, '/', self.len);
            size_t k = (size_t)(sl - self.u.s);
            tpl_value r;
            if (!tpl_big_parse(A(vm), IS("numerator") ? self.u.s : self.u.s + k + 1, IS("numerator") ? k : self.len - k - 1, 10, &r)) return oom(vm);
            *out = r;
            return 0;
        }
        if (IS("to_f")) { *out = tpl_v_float(tpl_rat_to_double(self)); return 0; }
        if (IS("to_r") || IS("rationalize") || IS("+@")) { *out = self; return 0; }
        if (IS("to_i") || IS("truncate")) return rat_round(vm, self, NULL, 3, out);
        if (IS("floor")) return rat_round(vm, self, NULL, 1, out);
        if (IS("ceil")) return rat_round(vm, self, NULL, 2, out);
        if (IS("round")) return rat_round(vm, self, NULL, 0, out);
        if (IS("abs") || IS("magnitude") || IS("-@")) {
            if (IS("-@") || neg) {
                mpq_t q;
                tpl_rat_get(q, self);
                mpq_neg(q, q);
                return tpl_rat_result(vm, q, out);
            }
            *out = self;
            return 0;
        }
        if (IS("zero?")) { *out = tpl_v_bool(tpl_rat_zero(self)); return 0; }
        if (IS("nonzero?")) { *out = tpl_rat_zero(self) ? tpl_v_none() : self; return 0; }
        if (IS("negative?")) { *out = tpl_v_bool(neg); return 0; }
        if (IS("positive?")) { *out = tpl_v_bool(!neg && !tpl_rat_zero(self)); return 0; }
        if (IS("integer?")) { *out = tpl_v_bool(false); return 0; }
        if (IS("finite?")) { *out = tpl_v_bool(true); return 0; }
        if (IS("infinite?")) { *out = tpl_v_none(); return 0; }
        return 1;
    }
    if (npos == 1) {
        if (IS("round") || IS("floor") || IS("ceil") || IS("truncate"))
            return rat_round(vm, self, args, IS("floor") ? 1 : IS("ceil") ? 2 : IS("truncate") ? 3 : 0, out);
        if (IS("rationalize")) {
            if (!rat_peer(args[0])) return type_error(vm, TPL_VT_RATIONAL, args[0]);
            if (args[0].type == TPL_T_FLOAT) {   /* the bounds are Floats */
                double x = fabs(tpl_rat_to_double(self)), e = fabs(args[0].u.f), a = x - e, b = x + e;
                if (a == b) { *out = self; return 0; }
                mpq_t r;
                mpq_init(r);
                rat_simplest_f(r, a, b);
                if (neg) mpq_neg(r, r);
                return tpl_rat_result(vm, r, out);
            }
            mpq_t x, e, a, b, r;
            tpl_rat_get(x, self);
            tpl_rat_get(e, args[0]);
            mpq_abs(e, e);
            mpq_inits(a, b, r, NULL);
            mpq_sub(a, x, e);
            mpq_add(b, x, e);
            if (mpq_equal(a, b)) mpq_set(r, x);
            else {
                bool ng = mpq_sgn(x) < 0;   /* (nurat_rationalize: the bounds of -x, negated back) */
                if (ng) { mpq_neg(a, a); mpq_neg(b, b); mpq_swap(a, b); }
                rat_simplest(r, a, b);
                if (ng) mpq_neg(r, r);
            }
            mpq_clears(x, e, a, b, NULL);
            return tpl_rat_result(vm, r, out);
        }
        if (IS("quo")) return rat_arith(vm, '/', self, args[0], out) < 0 ? -1 : 0;
        if (IS("fdiv")) {
            if (!rat_peer(args[0])) return coerce_failed(vm, args[0], "Rational");
            *out = tpl_v_float(tpl_rat_to_double(self) / (tpl_is_rat(args[0]) ? tpl_rat_to_double(args[0]) : dbl(args[0])));
            return 0;
        }
        if (IS("modulo")) return rat_arith(vm, '%', self, args[0], out) < 0 ? -1 : 0;
        if (IS("div")) {
            tpl_value q;
            int h = rat_arith(vm, '/', self, args[0], &q);
            if (h < 0) return -1;
            if (q.type == TPL_T_FLOAT) {
                if (isnan(q.u.f) || isinf(q.u.f)) return tpl_vm_error(vm, TPL_ERR_VALUE, "%s (FloatDomainError)", isnan(q.u.f) ? "NaN" : q.u.f > 0 ? "Infinity" : "-Infinity");
                return tpl_big_from_double(vm, floor(q.u.f), out);
            }
            return rat_round(vm, q, NULL, 1, out);
        }
        if (IS("<=>")) {
            bool ok;
            int c = rat_cmp(self, args[0], &ok);
            *out = ok ? tpl_v_int(c) : tpl_v_none();
            return 0;
        }
    }
    if (npos == 2 && IS("clamp")) {   /* Comparable's (r_any_clamp: min <=> max first, nil bounds) */
        tpl_value ca[3] = { self, args[0], args[1] };
        return r_any_clamp(vm, ca, out) < 0 ? -1 : 0;
    }
    if (npos == 2 && (IS("between?") || IS("clamp"))) {   /* Comparable's */
        bool ok1, ok2;
        int lo = rat_cmp(self, args[0], &ok1), hi = rat_cmp(self, args[1], &ok2);
        if (!ok1) return cmp_fail(vm, self, args[0]);
        if (IS("between?") && lo < 0) { *out = tpl_v_bool(false); return 0; }   /* (max not compared) */
        if (!ok2) return cmp_fail(vm, self, args[1]);
        if (IS("between?")) { *out = tpl_v_bool(lo >= 0 && hi <= 0); return 0; }
        bool ok3;
        if (rat_cmp(args[0], args[1], &ok3) > 0 || !ok3) return tpl_vm_error(vm, TPL_ERR_VALUE, "min argument must be smaller than max argument (ArgumentError)");
        *out = lo < 0 ? args[0] : hi > 0 ? args[1] : self;
        return 0;
    }
    return 1;
#undef IS
}

/* The pairs of containers a ==, eql? or <=> walk is inside (Ruby's rb_exec_recursive_paired): a
 * pair met again is equal to itself in Ruby's recursive_equal (`a = [1]; a << a; b = [1]; b << b;
 * a == b` is true) and compares by length in recursive_cmp. */
typedef struct rb_pair { const void *x, *y; const struct rb_pair *up; } rb_pair;

static bool rb_pair_seen(const rb_pair *p, const void *x, const void *y)
{
    for (; p; p = p->up)
        if (p->x == x && p->y == y) return true;
    return false;
}

static int rb_equal_d(tpl_value a, tpl_value b, uint64_t *fuel, int depth, const rb_pair *up);
static void aseq_parts(tpl_value e, tpl_value p[4]);
/* 1 equal, 0 not, -1 fuel exhausted (one unit per container element compared), -2 containers
 * nested more than RB_CMP_MAX_DEPTH deep (rb_deep_error). */
static int rb_equal_rec(tpl_value a, tpl_value b, uint64_t *fuel) { return rb_equal_d(a, b, fuel, 0, NULL); }

/* The error of a comparison that went past RB_CMP_MAX_DEPTH (eql?: TPL_NEST_MAX); Ruby compares
 * deeper, to its stack's end. */
static int rb_deep_error_at(tpl_vm *vm, int limit)
{
    return tpl_vm_fail(vm, TPL_EK_DEPTH, "stack level too deep (SystemStackError) (tpl compares containers nested at most %d deep)", limit);
}
static int rb_deep_error(tpl_vm *vm) { return rb_deep_error_at(vm, (int)RB_CMP_MAX_DEPTH); }

static int rb_equal_d(tpl_value a, tpl_value b, uint64_t *fuel, int depth, const rb_pair *up)
{
    if (a.type == TPL_T_UNDEF) a = tpl_v_none();
    if (b.type == TPL_T_UNDEF) b = tpl_v_none();
    if (is_num(a) && is_num(b)) return dbl(a) == dbl(b) && (a.type == TPL_T_FLOAT || b.type == TPL_T_FLOAT || a.u.i == b.u.i);
    if ((a.type == TPL_T_BIGINT || b.type == TPL_T_BIGINT) && plain_num(a) && plain_num(b)) return tpl_big_cmp(a, b) == 0;
    if (__builtin_expect(tpl_is_rat(a) || tpl_is_rat(b), 0)) {   /* Rational#==: by value (1r == 1, 0.5r == 0.5) */
        bool ok;
        int c = rat_cmp(a, b, &ok);
        return ok && c == 0;
    }
    if (a.type != b.type) return false;
    if (depth > RB_CMP_MAX_DEPTH && (a.type == TPL_T_LIST || a.type == TPL_T_MAP)) return -2;
    switch (a.type) {
    case TPL_T_NONE: return true;
    case TPL_T_BOOL: return a.u.i == b.u.i;
    case TPL_T_STR:
        if (tpl_is_gemv_rb(a)) {   /* Comparable#==: <=> is 0 (a String correct? reads as a version) */
            bool ok;
            int c = gem_cmp_any(a, b, &ok);
            return ok && c == 0;
        }
        if (tpl_is_gemv_rb(b)) return false;
        /* a class or module equals only itself, a Regexp only a Regexp (never a String of its name) */
        if ((a.flags ^ b.flags) & (TPL_F_CLASS_RB | TPL_F_REGEX_RB)) return false;
        if ((a.flags | b.flags) & TPL_F_EXC_RB) {   /* a rescued exception equals only the same class and message */
            if (!(a.flags & b.flags & TPL_F_EXC_RB)) return false;
            tpl_value ca = tpl_rb_exc_class(a), cb = tpl_rb_exc_class(b);
            if (ca.len != cb.len || memcmp(ca.u.s, cb.u.s, ca.len) != 0) return false;
        }
        return a.len == b.len && memcmp(a.u.s, b.u.s, a.len) == 0;
    case TPL_T_LIST:
        if (tpl_is_aseq_rb(a) && tpl_is_aseq_rb(b) && a.u.list != b.u.list) {   /* ArithmeticSequence#==: its four parts */
            tpl_value pa[4], pb[4];
            aseq_parts(a, pa);
            aseq_parts(b, pb);
            for (int i = 0; i < 4; i++) {
                int r = rb_equal_d(pa[i], pb[i], fuel, depth + 1, up);
                if (r != 1) return r;
            }
            return true;
        }
        if ((a.flags | b.flags) & TPL_F_ENUM_RB) return a.u.list == b.u.list;   /* an Enumerator: Object#== */
        if ((a.flags & TPL_F_RANGE_RB) != (b.flags & TPL_F_RANGE_RB) || a.u.list->len != b.u.list->len) return false;
        if (a.u.list == b.u.list) return true; /* Ruby's rb_equal: identical objects are == */
        if (rb_pair_seen(up, a.u.list, b.u.list)) return true;
        if (!tpl_fuel_charge(fuel, a.u.list->len)) return -1;
        rb_pair here = { a.u.list, b.u.list, up };
        for (uint32_t i = 0; i < a.u.list->len; i++) {
            int r = rb_equal_d(a.u.list->items[i], b.u.list->items[i], fuel, depth + 1, &here);
            if (r != 1) return r;
        }
        return true;
    case TPL_T_MAP:
        if (a.u.map->len != b.u.map->len) return false;
        if (a.u.map == b.u.map) return true;
        if (rb_pair_seen(up, a.u.map, b.u.map)) return true;
        if (!tpl_fuel_charge(fuel, a.u.map->len)) return -1;
        rb_pair hm = { a.u.map, b.u.map, up };
        for (uint32_t i = 0; i < a.u.map->len; i++) {
            tpl_value *o = tpl_map_get(b.u.map, a.u.map->e[i].key);
            if (!o) return false;
            int r = rb_equal_d(a.u.map->e[i].val, *o, fuel, depth + 1, &hm);
            if (r != 1) return r;
        }
        return true;
    default: return a.u.p == b.u.p;
    }
}

bool tpl_rb_equal(tpl_value a, tpl_value b) { return rb_equal_rec(a, b, NULL) == 1; }

/* A host object's operator method (ERB: a Ruby object's ==, +, <...): 0 answered (*out), -1
 * error, 1 the host has no such method. */
static int host_op(tpl_vm *vm, tpl_value self, const char *op, tpl_value b, tpl_value *out)
{
    tpl_value args[1] = { b };
    return tpl_hobj_send(vm, self, op, strlen(op), args, 1, NULL, NULL, 0, out);
}

int tpl_vm_rb_equal(tpl_vm *vm, tpl_value a, tpl_value b, bool *eq)
{
    /* a host object's own == (a Ruby String in another encoding...); a String or a number on
     * the left asks the right one, as String#== and Integer#== do for an object that is not
     * theirs (rb_str_equal's to_str case, num_equal) */
    if (a.type == TPL_T_HOST || (b.type == TPL_T_HOST && ((a.type == TPL_T_STR && !(a.flags & TPL_F_SYMBOL)) || (plain_num(a) && a.type != TPL_T_BOOL)))) {
        tpl_value r;
        int rc = a.type == TPL_T_HOST ? host_op(vm, a, "==", b, &r) : host_op(vm, b, "==", a, &r);
        if (rc < 0) return -1;
        if (rc == 0) { *eq = tpl_truthy_rb(r); return 0; }
    }
    int r = rb_equal_rec(a, b, tpl_vm_arena(vm)->fuel);
    if (r == -2) return rb_deep_error(vm);
    if (r < 0) return tpl_vm_nomem(vm);
    *eq = r == 1;
    return 0;
}

/* Ruby <=>: *ok false when the values do not compare (nil), or when the walk over two arrays
 * exhausted the render's fuel (then *fuel is 0: cmp_error reports it). */
static int rb_cmp_d(tpl_value a, tpl_value b, bool *ok, uint64_t *fuel, int depth, const rb_pair *up, bool *deep);
static int rb_cmp(tpl_value a, tpl_value b, bool *ok, uint64_t *fuel) { bool deep = false; return rb_cmp_d(a, b, ok, fuel, 0, NULL, &deep); }
/* rb_cmp telling apart (*deep) the two arrays nested past RB_CMP_MAX_DEPTH (rb_deep_error), which
 * Ruby compares. */
static int rb_cmp_deep(tpl_value a, tpl_value b, bool *ok, uint64_t *fuel, bool *deep)
{
    *deep = false;
    return rb_cmp_d(a, b, ok, fuel, 0, NULL, deep);
}
static const char *exc_parent(const char *c, size_t n);
static bool is_exc_class(tpl_value c);

/* Whether core class (or module) a has b among its ancestors (Ruby 3.1's), *known false for a class
 * outside the table. */
static bool class_below(tpl_value a, tpl_value b, bool *known)
{
    static const char *const anc[][5] = {
        { "Integer", "Numeric", "Comparable" }, { "Float", "Numeric", "Comparable" },
        { "Rational", "Numeric", "Comparable" }, { "Complex", "Numeric", "Comparable" },
        { "Numeric", "Comparable" }, { "String", "Comparable" }, { "Symbol", "Comparable" },
        { "Array", "Enumerable" }, { "Hash", "Enumerable" }, { "Range", "Enumerable" }, { "Enumerator", "Enumerable" },
        { "NilClass" }, { "TrueClass" }, { "FalseClass" }, { "Regexp" }, { "MatchData" }, { "Proc" }, { "Method" },
        { "Class", "Module" }, { "Module" }, { "Object" }, { "Comparable" }, { "Enumerable" }, { "Kernel" },
        { "BasicObject" } };
    #define NAMED(v, lit) ((v).len == strlen(lit) && memcmp((v).u.s, lit, (v).len) == 0)
    *known = true;
    bool bobj = NAMED(b, "Object") || NAMED(b, "Kernel") || NAMED(b, "BasicObject");
    if (is_exc_class(a)) {
        if (bobj) return true;
        if (!is_exc_class(b)) { *known = false; return false; }   /* (a module it includes: not in the table) */
        for (const char *p = exc_parent(a.u.s, a.len); p; p = exc_parent(p, strlen(p)))
            if (NAMED(b, p)) return true;
        return false;
    }
    for (size_t i = 0; i < sizeof anc / sizeof anc[0]; i++) {
        if (!NAMED(a, anc[i][0])) continue;
        bool mod = NAMED(a, "Comparable") || NAMED(a, "Enumerable") || NAMED(a, "Kernel");
        if (NAMED(a, "BasicObject")) return false;
        if (!mod && bobj) return !(NAMED(a, "Object") && NAMED(b, "Object"));
        for (int k = 1; k < 5 && anc[i][k]; k++)
            if (NAMED(b, anc[i][k])) return true;
        return false;
    }
    #undef NAMED
    *known = false;
    return false;
}

/* Module#<=>: 0 for the same, -1 when a descends from b, 1 when b from a, else nil (*ok false); a class
 * outside class_below's table only equals itself. */
static int class_cmp(tpl_value a, tpl_value b, bool *ok)
{
    *ok = true;
    if (a.len == b.len && memcmp(a.u.s, b.u.s, a.len) == 0) return 0;
    bool k1, k2;
    if (class_below(a, b, &k1)) return -1;
    if (class_below(b, a, &k2)) return 1;
    *ok = false;
    return 0;
}

static int rb_cmp_d(tpl_value a, tpl_value b, bool *ok, uint64_t *fuel, int depth, const rb_pair *up, bool *deep)
{
    *ok = true;
    if ((a.type == TPL_T_BIGINT && (is_num(b) || b.type == TPL_T_BIGINT)) || (b.type == TPL_T_BIGINT && is_num(a))) {
        int c = tpl_big_cmp(a, b);
        if (c == 2) { *ok = false; return 0; }
        return c;
    }
    if (is_num(a) && is_num(b)) {
        if (a.type == TPL_T_INT && b.type == TPL_T_INT) return a.u.i < b.u.i ? -1 : a.u.i > b.u.i;
        double x = dbl(a), y = dbl(b);
        if (isnan(x) || isnan(y)) { *ok = false; return 0; }
        if (a.type != TPL_T_FLOAT && b.type == TPL_T_FLOAT) return tpl_cmp_int_float(a.u.i, y); /* exact, as Integer#<=> */
        if (a.type == TPL_T_FLOAT && b.type != TPL_T_FLOAT) return -tpl_cmp_int_float(b.u.i, x);
        return x < y ? -1 : x > y;
    }
    if (tpl_is_rat(a) || tpl_is_rat(b)) return rat_cmp(a, b, ok);
    if (tpl_is_gemv_rb(a)) return gem_cmp_any(a, b, ok);
    if (tpl_is_gemv_rb(b)) {   /* String#<=> asks the other side (rb_invcmp); nothing else compares with one */
        if (a.type != TPL_T_STR || (a.flags & (TPL_F_CLASS_RB | TPL_F_REGEX_RB | TPL_F_EXC_RB | TPL_F_SYMBOL))) { *ok = false; return 0; }
        return -gem_cmp_any(b, a, ok);
    }
    if (a.type == TPL_T_STR && b.type == TPL_T_STR && ((a.flags | b.flags) & (TPL_F_REGEX_RB | TPL_F_CLASS_RB | TPL_F_EXC_RB))) {
        /* Regexp and exceptions have Object#<=> (0 when ==, else nil); Module#<=> by ancestry */
        if ((a.flags & TPL_F_CLASS_RB) && (b.flags & TPL_F_CLASS_RB)) return class_cmp(a, b, ok);
        if (rb_equal_d(a, b, fuel, depth, up) == 1) return 0;
        *ok = false;
        return 0;
    }
    if (a.type == TPL_T_STR && b.type == TPL_T_STR) {
        /* a Symbol and a String do not compare (Symbol#<=> and String#<=> answer nil) */
        if ((a.flags ^ b.flags) & TPL_F_SYMBOL) { *ok = false; return 0; }
        size_t m = a.len < b.len ? a.len : b.len;
        int c = m ? memcmp(a.u.s, b.u.s, m) : 0;
        return c ? (c < 0 ? -1 : 1) : (a.len < b.len ? -1 : a.len > b.len);
    }
    if (is_array(a) && is_array(b)) {
        /* Array#<=>: an Array is 0 to itself; a pair met again (recursive_cmp's Qundef) and
         * arrays whose common items are all 0 compare by length */
        if (a.u.list == b.u.list) return 0;
        uint32_t m = a.u.list->len < b.u.list->len ? a.u.list->len : b.u.list->len;
        if (rb_pair_seen(up, a.u.list, b.u.list)) m = 0;
        if (depth > RB_CMP_MAX_DEPTH) { *ok = false; *deep = true; return 0; }
        if (!tpl_fuel_charge(fuel, m)) { *ok = false; return 0; }
        rb_pair here = { a.u.list, b.u.list, up };
        for (uint32_t i = 0; i < m; i++) {
            int c = rb_cmp_d(a.u.list->items[i], b.u.list->items[i], ok, fuel, depth + 1, &here, deep);
            if (!*ok || c) return c;
        }
        return a.u.list->len < b.u.list->len ? -1 : a.u.list->len > b.u.list->len;
    }
    int eq = rb_equal_d(a, b, fuel, depth, up);
    if (eq == 1) return 0;
    if (eq == -2) *deep = true;
    *ok = false;
    return 0;
}

static int cmp_error(tpl_vm *vm, tpl_value a, tpl_value b)
{
    if (*tpl_vm_arena(vm)->fuel == 0) return tpl_vm_nomem(vm); /* rb_cmp ran out of fuel */
    bool ok, deep;   /* or went past RB_CMP_MAX_DEPTH (the walk again: an error's path, and no longer than the first) */
    rb_cmp_deep(a, b, &ok, NULL, &deep);
    if (deep) return rb_deep_error(vm);
    return cmp_fail(vm, a, b);
}

/* ------------------------------------------------------------------ blocks */

/* Yields one value; on `break` the method returns the break value at once. */
#define YIELD(blk, argp, nargs, res) do { \
        int yr_ = tpl_rb_yield(vm, &(blk), (argp), (nargs), (res)); \
        if (yr_ < 0) return -1; \
        if (yr_ > 0) { *out = *(res); return 0; } \
    } while (0)

/* ------------------------------------------------------------------ enumerables */

static int range_list(tpl_vm *vm, tpl_value r, tpl_list **out);

/* Items of an Enumerable receiver: array items, hash [k, v] pairs, range members. */
static int enum_live(tpl_vm *vm, tpl_value e, tpl_list **out);

static int enum_items(tpl_vm *vm, tpl_value v, tpl_list **out, const char *meth)
{
    if (v.type == TPL_T_HOST) { /* a host object: its plain data (an Enumerable's to_a, a hash) */
        tpl_value d;
        int rc = tpl_hobj_resolve(vm, v, &d);
        if (rc < 0) return -1;
        if (rc == 0 && d.type != TPL_T_HOST) return enum_items(vm, d, out, meth);
    }
    if (tpl_is_enum_rb(v)) return enum_live(vm, v, out);   /* an Enumerator: the items it yields */
    if (is_array(v)) { *out = v.u.list; return 0; }
    if (is_range(v)) return range_list(vm, v, out);
    if (v.type == TPL_T_MAP) {
        tpl_map *m = v.u.map;
        tpl_list *l = new_list(vm, m->len);
        if (!l) return oom(vm);
        for (uint32_t i = 0; i < m->len; i++) {
            tpl_list *p = new_list(vm, 2);
            if (!p) return oom(vm);
            p->items[0] = m->e[i].key;
            p->items[1] = m->e[i].val;
            p->len = 2;
            l->items[l->len++] = tpl_v_list(p);
        }
        *out = l;
        return 0;
    }
    return no_method(vm, v, meth, strlen(meth));
}

int tpl_rb_each_list(tpl_vm *vm, tpl_value v, int mode, tpl_list **out)
{
    if (mode == TPL_RB_TIMES) {
        if (v.type != TPL_T_INT) return no_method(vm, v, "times", 5);
        int64_t n = v.u.i < 0 ? 0 : v.u.i;
        if (n > 10000000) return tpl_vm_error(vm, TPL_ERR_LIMIT, "times: too many iterations");
        tpl_list *l = new_list(vm, (uint32_t)n);
        if (!l) return oom(vm);
        for (int64_t i = 0; i < n; i++) l->items[l->len++] = tpl_v_int(i);
        *out = l;
        return 0;
    }
    if (__builtin_expect(v.flags & TPL_F_RANGE_RB, 0) && v.type == TPL_T_LIST && (mode == TPL_RB_EACH || mode == TPL_RB_EACH_INDEXED) &&
        v.u.list->items[0].type == TPL_T_INT && v.u.list->items[1].type == TPL_T_NONE) {
        /* an endless Integer range ((1..).each, (1..nil)): its items as the loop takes them (a
         * pending list, tpl_pend_range; a break ends it, else the render's fuel) */
        tpl_value r, it;
        if (tpl_make_range(vm, v.u.list->items[0].u.i, INT64_MAX, 1, UINT64_MAX, &r) < 0 ||
            tpl_pend_range(vm, r, false, &it) < 0) return -1;
        *out = it.u.list;
        return 0;
    }
    tpl_list *items;
    if (enum_items(vm, v, &items, mode == TPL_RB_EACH ? "each" : "each_with_index") < 0) return -1;
    if (mode == TPL_RB_EACH || mode == TPL_RB_EACH_INDEXED) { *out = items; return 0; }
    tpl_list *l = new_list(vm, items->len);
    if (!l) return oom(vm);
    for (uint32_t i = 0; i < items->len; i++) {
        tpl_list *p = new_list(vm, 2);
        if (!p) return oom(vm);
        p->items[0] = items->items[i];
        p->items[1] = tpl_v_int(i);
        p->len = 2;
        l->items[l->len++] = tpl_v_list(p);
    }
    *out = l;
    return 0;
}

/* ------------------------------------------------------------------ ranges */

int tpl_rb_range(tpl_vm *vm, tpl_value b, tpl_value e, bool exclusive, tpl_value *out)
{
    const uint8_t odd = TPL_F_REGEX_RB | TPL_F_CLASS_RB | TPL_F_EXC_RB;
    bool sb = b.type == TPL_T_STR && !(b.flags & odd), se = e.type == TPL_T_STR && !(e.flags & odd);
    bool ok = (b.type == TPL_T_INT && (e.type == TPL_T_INT || e.type == TPL_T_NONE)) ||
              (sb && ((se && !((b.flags ^ e.flags) & TPL_F_SYMBOL)) || e.type == TPL_T_NONE)) ||
              (is_num(b) && (is_num(e) || e.type == TPL_T_NONE)) ||
              (b.type == TPL_T_NONE && (is_num(e) || se || e.type == TPL_T_NONE));   /* beginless */
    if (ok && is_num(b) && is_num(e) && (isnan(dbl(b)) || isnan(dbl(e)))) ok = false;
    if (!ok) {
        /* range_init: two ends whose <=> is nil (1..NaN, :a.."b", 1.."a") are Ruby's ArgumentError; other
         * pairs Ruby accepts (a nil end with anything, 1..2**64, []..[], true..true) tpl has no Range of */
        bool cmp_ok = false, deep = false;
        if (b.type != TPL_T_NONE && e.type != TPL_T_NONE && b.type != TPL_T_HOST && e.type != TPL_T_HOST)
            rb_cmp_deep(b, e, &cmp_ok, NULL, &deep);
        if (!cmp_ok && !deep && b.type != TPL_T_NONE && e.type != TPL_T_NONE && b.type != TPL_T_HOST && e.type != TPL_T_HOST)
            return tpl_vm_error(vm, TPL_ERR_TYPE, "bad value for range (ArgumentError)");
        return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: a Range of %s and %s", tpl_rb_class_name(b), tpl_rb_class_name(e));
    }
    tpl_list *l = new_list(vm, 3);
    if (!l) return oom(vm);
    l->items[0] = b;
    l->items[1] = e;
    l->items[2] = tpl_v_bool(exclusive);
    l->len = 3;
    *out = tpl_v_list(l);
    out->flags = TPL_F_RANGE_RB;
    return 0;
}

/* String#succ for the alphanumeric strings ranges use ('a'..'e', 'aa'..'zz', 'a1'..'a9'). */
static tpl_value str_succ(tpl_vm *vm, tpl_value s)
{
    char *p = tpl_arena_alloc(A(vm), s.len + 2);
    if (!p) return s;
    mcpy(p + 1, s.u.s, s.len);
    size_t i = s.len;
    while (i > 0) {
        char c = p[i];
        if (c == 'z') { p[i] = 'a'; i--; continue; }
        if (c == 'Z') { p[i] = 'A'; i--; continue; }
        if (c == '9') { p[i] = '0'; i--; continue; }
        p[i] = (char)(c + 1);
        return tpl_v_str(p + 1, s.len);
    }
    char first = s.len ? s.u.s[0] : 'a';
    p[0] = first == 'z' || (first >= 'a' && first <= 'z') ? 'a' : (first >= 'A' && first <= 'Z') ? 'A' : '1';
    return tpl_v_str(p, s.len + 1);
}

/* A string of 1 to 18 ASCII digits (numbers an int64 holds). */
static bool all_digits(tpl_value s)
{
    if (s.len == 0 || s.len > 18) return false;
    for (uint32_t i = 0; i < s.len; i++)
        if (s.u.s[i] < '0' || s.u.s[i] > '9') return false;
    return true;
}

static int range_list(tpl_vm *vm, tpl_value r, tpl_list **out)
{
    tpl_value b = r.u.list->items[0], e = r.u.list->items[1];
    bool excl = r.u.list->items[2].u.i != 0;
    if (b.type == TPL_T_NONE) return tpl_vm_error(vm, TPL_ERR_TYPE, "can't iterate from NilClass (TypeError)");
    if (e.type == TPL_T_NONE) return tpl_vm_error(vm, TPL_ERR_TYPE, "cannot convert endless range to an array (RangeError)");
    tpl_list *l = new_list(vm, 8);
    if (!l) return oom(vm);
    if (b.type == TPL_T_INT && e.type == TPL_T_FLOAT && !isnan(e.u.f)) {
        /* range_each_func: an Integer begin and a Float end yields b, b.succ, ... while <= (...: <) the end */
        if (e.u.f > 9e18) return tpl_vm_error(vm, TPL_ERR_LIMIT, "range too large");
        double f = e.u.f < -9e18 ? -9e18 : excl ? ceil(e.u.f) - 1 : floor(e.u.f);
        e = tpl_v_int((int64_t)f);
        excl = false;
    }
    if (b.type == TPL_T_INT && e.type == TPL_T_INT) {
        int64_t hi = excl ? e.u.i - 1 : e.u.i;
        if (hi >= b.u.i && hi - b.u.i > 10000000) return tpl_vm_error(vm, TPL_ERR_LIMIT, "range too large");
        for (int64_t i = b.u.i; i <= hi; i++)
            if (!tpl_list_push(A(vm), l, tpl_v_int(i))) return oom(vm);
    } else if (b.type == TPL_T_STR && e.type == TPL_T_STR) {
        /* String#upto: single ASCII characters by code, all-digit strings as numbers (as wide
         * as the first), else String#succ from the first while it is not longer than the last */
        unsigned char c0 = b.len ? (unsigned char)b.u.s[0] : 0, c1 = e.len ? (unsigned char)e.u.s[0] : 0;
        if (b.len == 1 && e.len == 1 && c0 < 0x80 && c1 < 0x80) {
            for (unsigned c = c0; c < c1 + (excl ? 0u : 1u); c++) {
                char ch = (char)c, *p = tpl_arena_strdup(A(vm), &ch, 1);
                if (!p || !tpl_list_push(A(vm), l, tpl_v_str(p, 1))) return oom(vm);
            }
        } else if (all_digits(b) && all_digits(e)) {
            int64_t lo = 0, hi = 0;
            for (uint32_t i = 0; i < b.len; i++) lo = lo * 10 + (b.u.s[i] - '0');
            for (uint32_t i = 0; i < e.len; i++) hi = hi * 10 + (e.u.s[i] - '0');
            if (excl) hi--;
            if (hi >= lo && hi - lo > 10000000) return tpl_vm_error(vm, TPL_ERR_LIMIT, "range too large");
            for (int64_t i = lo; i <= hi; i++) {
                char buf[24];
                int n = snprintf(buf, sizeof buf, "%0*lld", (int)b.len, (long long)i);
                char *p = tpl_arena_strdup(A(vm), buf, (size_t)n);
                if (!p || !tpl_list_push(A(vm), l, tpl_v_str(p, (size_t)n))) return oom(vm);
            }
        } else {
            bool ok;
            int c = rb_cmp(b, e, &ok, tpl_vm_arena(vm)->fuel);
            tpl_value s = b;
            for (int k = 0; c < 0 || (c == 0 && !excl); k++) {
                if (k == 10000000) return tpl_vm_error(vm, TPL_ERR_LIMIT, "range too large");
                bool last = tpl_rb_equal(s, e);
                if (last && excl) break;
                if (!tpl_list_push(A(vm), l, s)) return oom(vm);
                if (last) break;
                s = str_succ(vm, s);
                if (s.len > e.len) break;
            }
        }
        if (b.flags & TPL_F_SYMBOL)   /* (Symbol ranges: Symbols, from String#upto of their names) */
            for (uint32_t i = 0; i < l->len; i++) l->items[i].flags = TPL_F_SYMBOL;
    } else {
        return tpl_vm_error(vm, TPL_ERR_TYPE, "can't iterate from %s (TypeError)", tpl_rb_class_name(b));
    }
    *out = l;
    return 0;
}

static bool range_cover(tpl_value r, tpl_value v)
{
    tpl_value b = r.u.list->items[0], e = r.u.list->items[1];
    bool excl = r.u.list->items[2].u.i != 0, ok;
    int c;
    if (b.type != TPL_T_NONE) {   /* a beginless range has no lower bound */
        c = rb_cmp(b, v, &ok, NULL); /* range ends are numbers or strings */
        if (!ok || c > 0) return false;
    }
    if (e.type == TPL_T_NONE) return true;
    c = rb_cmp(v, e, &ok, NULL);
    return ok && (excl ? c < 0 : c <= 0);
}

/* ------------------------------------------------------------------ regular expressions */

/* Ruby's \w, \d, \s (and \b) are ASCII-only; its POSIX brackets and \p{} stay Unicode */
#define RB_ONIG_OPTIONS (ONIG_OPTION_WORD_IS_ASCII | ONIG_OPTION_DIGIT_IS_ASCII | ONIG_OPTION_SPACE_IS_ASCII)

/* Oniguruma comes from libonig.so.5 loaded with dlopen, its functions and data through the
 * table below, never by the dynamic linker's global lookup (issue 20): libruby exports Onigmo's
 * onig_* under the same names, so in a Ruby process (the gem) tpl's onig_new/onig_region_new
 * bound to Onigmo while onig_search_with_param bound to libonig ("ab" =~ /b/ was nil, sub
 * crashed), and libonig's own internal calls went to Onigmo too. When the process already
 * exports onig_new from another object, libonig is loaded with RTLD_DEEPBIND so that its
 * calls stay inside it; otherwise (tplc, Python, the sanitizer trees: ASan refuses
 * RTLD_DEEPBIND) with RTLD_LOCAL only. If libonig is already loaded (a host that links it),
 * that copy is used.
 *
 * Oniguruma's one-time set-up (its encoding tables and callout names) is not thread-safe:
 * onig_new runs onig_initialize itself when nothing has, so two threads compiling their first
 * regex at once (two renders, or compiles, of ERB templates) raced on its globals (valgrind --tool=drd:
 * onig_inited written in onig_initialize, read in onig_reg_init; the callout name table filled
 * twice at once). The table is filled and onig_initialize run exactly once (rx_once); the table
 * is only read after. */
#define RX_SONAME "libonig.so.5"
#define RX_FUNCS(X) \
    X(int, onig_new, (OnigRegex *, const OnigUChar *, const OnigUChar *, OnigOptionType, OnigEncoding, OnigSyntaxType *, OnigErrorInfo *)) \
    X(int, onig_initialize, (OnigEncoding *, int)) \
    X(int, onig_error_code_to_str, (OnigUChar *, int, ...)) \
    X(int, onig_foreach_name, (OnigRegex, int (*)(const OnigUChar *, const OnigUChar *, int, int *, OnigRegex, void *), void *)) \
    X(void, onig_free, (OnigRegex)) \
    X(OnigMatchParam *, onig_new_match_param, (void)) \
    X(void, onig_free_match_param, (OnigMatchParam *)) \
    X(int, onig_initialize_match_param, (OnigMatchParam *)) \
    X(int, onig_set_retry_limit_in_match_of_match_param, (OnigMatchParam *, unsigned long)) \
    X(int, onig_set_retry_limit_in_search_of_match_param, (OnigMatchParam *, unsigned long)) \
    X(int, onig_match_with_param, (OnigRegex, const OnigUChar *, const OnigUChar *, const OnigUChar *, OnigRegion *, OnigOptionType, OnigMatchParam *)) \
    X(int, onig_search_with_param, (OnigRegex, const OnigUChar *, const OnigUChar *, const OnigUChar *, const OnigUChar *, OnigRegion *, OnigOptionType, OnigMatchParam *)) \
    X(int, onig_name_to_backref_number, (OnigRegex, const OnigUChar *, const OnigUChar *, OnigRegion *)) \
    X(int, onig_noname_group_capture_is_active, (OnigRegex)) \
    X(int, onig_number_of_names, (OnigRegex)) \
    X(OnigRegion *, onig_region_new, (void)) \
    X(void, onig_region_free, (OnigRegion *, int)) \
    X(void, onig_region_copy, (OnigRegion *, OnigRegion *))

typedef struct {
    bool ok;
    char err[256];           /* why libonig could not be loaded (when !ok) */
#define RX_FIELD(ret, name, params) ret (*name) params;
    RX_FUNCS(RX_FIELD)
#undef RX_FIELD
    OnigEncoding utf8;       /* &OnigEncodingUTF8 */
    OnigSyntaxType *ruby;    /* &OnigSyntaxRuby */
} rx_lib_t;

static pthread_once_t rx_once = PTHREAD_ONCE_INIT;
static rx_lib_t rx_tab;      /* written once, under rx_once */

static bool rx_sym(void *h, const char *name, void *out)
{
    void *f = dlsym(h, name);
    if (!f) {
        snprintf(rx_tab.err, sizeof rx_tab.err, "%s has no symbol %s", RX_SONAME, name);
        return false;
    }
    memcpy(out, &f, sizeof f);   /* (ISO C has no cast from void * to a function pointer) */
    return true;
}

static void rx_init(void)
{
    rx_lib_t *t = &rx_tab;
    void *h = dlopen(RX_SONAME, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (!h) {
        int flags = RTLD_NOW | RTLD_LOCAL;
        if (dlsym(RTLD_DEFAULT, "onig_new")) flags |= RTLD_DEEPBIND;   /* another onig_new (Onigmo) */
        h = dlopen(RX_SONAME, flags);
    }
    if (!h) {
        const char *e = dlerror();
        snprintf(t->err, sizeof t->err, "%s", e ? e : RX_SONAME ": cannot be loaded");
        return;
    }
#define RX_LOAD(ret, name, params) if (!rx_sym(h, #name, &t->name)) return;
    RX_FUNCS(RX_LOAD)
#undef RX_LOAD
    void *d;
    if (!(d = dlsym(h, "OnigEncodingUTF8")) || !(t->utf8 = d, d = dlsym(h, "OnigSyntaxRuby"))) {
        snprintf(t->err, sizeof t->err, "%s has no symbol OnigEncodingUTF8 or OnigSyntaxRuby", RX_SONAME);
        return;
    }
    t->ruby = d;
    OnigEncoding enc[1] = { t->utf8 };
    t->onig_initialize(enc, 1);
    t->ok = true;
}

static const rx_lib_t *rx_lib(void)
{
    pthread_once(&rx_once, rx_init);
    return &rx_tab;
}

/* Every onig_* call below goes through the table (after rx_lib() succeeded: each starts from a
 * regex rx_new compiled, or a region after rx_ready) */
#define RX_CALL(name) (rx_lib()->name)
#define onig_new(...) RX_CALL(onig_new)(__VA_ARGS__)
#define onig_error_code_to_str(...) RX_CALL(onig_error_code_to_str)(__VA_ARGS__)
#define onig_foreach_name(...) RX_CALL(onig_foreach_name)(__VA_ARGS__)
#define onig_free(...) RX_CALL(onig_free)(__VA_ARGS__)
#define onig_new_match_param(...) RX_CALL(onig_new_match_param)(__VA_ARGS__)
#define onig_free_match_param(...) RX_CALL(onig_free_match_param)(__VA_ARGS__)
#define onig_initialize_match_param(...) RX_CALL(onig_initialize_match_param)(__VA_ARGS__)
#define onig_set_retry_limit_in_match_of_match_param(...) RX_CALL(onig_set_retry_limit_in_match_of_match_param)(__VA_ARGS__)
#define onig_set_retry_limit_in_search_of_match_param(...) RX_CALL(onig_set_retry_limit_in_search_of_match_param)(__VA_ARGS__)
#define onig_match_with_param(...) RX_CALL(onig_match_with_param)(__VA_ARGS__)
#define onig_search_with_param(...) RX_CALL(onig_search_with_param)(__VA_ARGS__)
#define onig_name_to_backref_number(...) RX_CALL(onig_name_to_backref_number)(__VA_ARGS__)
#define onig_noname_group_capture_is_active(...) RX_CALL(onig_noname_group_capture_is_active)(__VA_ARGS__)
#define onig_number_of_names(...) RX_CALL(onig_number_of_names)(__VA_ARGS__)
#define onig_region_new(...) RX_CALL(onig_region_new)(__VA_ARGS__)
#define onig_region_free(...) RX_CALL(onig_region_free)(__VA_ARGS__)
#define onig_region_copy(...) RX_CALL(onig_region_copy)(__VA_ARGS__)
#undef ONIG_ENCODING_UTF8
#undef ONIG_SYNTAX_RUBY
#define ONIG_ENCODING_UTF8 (rx_lib()->utf8)
#define ONIG_SYNTAX_RUBY (rx_lib()->ruby)

/* Whether libonig is usable; the error (located by the VM) when it is not */
static bool rx_ready(tpl_vm *vm)
{
    const rx_lib_t *l = rx_lib();
    if (!l->ok) tpl_vm_error(vm, TPL_ERR_TYPE, "invalid regular expression: %s", l->err);
    return l->ok;
}

/* rx_new's result when libonig could not be loaded (outside Oniguruma's error codes) */
#define RX_NO_LIB (-100000)
static int rx_new(OnigRegex *re, const UChar *p, const UChar *e, OnigErrorInfo *einfo)
{
    if (!rx_lib()->ok) return RX_NO_LIB;
    return onig_new(re, p, e, RB_ONIG_OPTIONS, ONIG_ENCODING_UTF8, ONIG_SYNTAX_RUBY, einfo);
}

/* Oniguruma's message for rx_new's error r */
static void rx_errstr(UChar *msg, int r, OnigErrorInfo *einfo)
{
    if (r == RX_NO_LIB) snprintf((char *)msg, ONIG_MAX_ERROR_MESSAGE_LEN, "%.*s", ONIG_MAX_ERROR_MESSAGE_LEN - 1, rx_lib()->err);
    else onig_error_code_to_str(msg, r, einfo);
}

static OnigRegex rx_compile(tpl_vm *vm, tpl_value pat)
{
    OnigRegex re = NULL;
    OnigErrorInfo einfo;
    const UChar *p = (const UChar *)pat.u.s;
    int r = rx_new(&re, p, p + pat.len, &einfo);
    if (r != ONIG_NORMAL) {
        UChar msg[ONIG_MAX_ERROR_MESSAGE_LEN];
        rx_errstr(msg, r, &einfo);
        tpl_vm_error(vm, TPL_ERR_TYPE, "invalid regular expression: %s", (const char *)msg);
        return NULL;
    }
    return re;
}

bool tpl_rb_regex_check(const char *pat, size_t n, char *msg, size_t cap)
{
    OnigRegex re = NULL;
    OnigErrorInfo einfo;
    int r = rx_new(&re, (const UChar *)pat, (const UChar *)pat + n, &einfo);
    if (r != ONIG_NORMAL) {
        UChar m[ONIG_MAX_ERROR_MESSAGE_LEN];
        rx_errstr(m, r, &einfo);
        snprintf(msg, cap, "invalid regular expression: %s", (const char *)m);
        return false;
    }
    onig_free(re);
    return true;
}

/* Backtracking bounds of one regex search or match (Oniguruma's retry limits): a pathological
 * pattern such as /(a|a)*b/ on a long subject ends with a located limit error instead of running
 * for hours (Ruby 3.1 has no limit). Generous for any pattern a prompt uses. */
enum { RX_RETRY_MATCH = 1000000, RX_RETRY_SEARCH = 10000000 };

/* After a failed search or match: the error for Oniguruma's result r (never ONIG_MISMATCH). */
static long rx_error(tpl_vm *vm, long r)
{
    if (r == ONIGERR_RETRY_LIMIT_IN_MATCH_OVER || r == ONIGERR_RETRY_LIMIT_IN_SEARCH_OVER)
        tpl_vm_error(vm, TPL_ERR_LIMIT, "regular expression backtracking limit reached");
    else if (r == ONIGERR_MEMORY)
        tpl_vm_nomem(vm);
    else
        tpl_vm_error(vm, TPL_ERR_TYPE, "regular expression search failed");
    return -2;
}

/* Runs a search (match: an anchored match at `from`) under the retry limits; the match start
 * (bytes) or -1 with the region filled; -2 with the render's error set. Each call charges one
 * unit of fuel, so loops over matches are bounded too. */
static long rx_run(tpl_vm *vm, OnigRegex re, tpl_value s, size_t from, OnigRegion *reg, bool match)
{
    if (!tpl_fuel_charge(tpl_vm_arena(vm)->fuel, 1)) { tpl_vm_nomem(vm); return -2; }
    const UChar *b = (const UChar *)s.u.s, *e = b + s.len;
    OnigMatchParam *mp = onig_new_match_param();
    if (!mp) { tpl_vm_nomem(vm); return -2; }
    onig_initialize_match_param(mp);
    onig_set_retry_limit_in_match_of_match_param(mp, RX_RETRY_MATCH);
    onig_set_retry_limit_in_search_of_match_param(mp, RX_RETRY_SEARCH);
    long r = match ? onig_match_with_param(re, b, e, b + from, reg, ONIG_OPTION_NONE, mp)
                   : onig_search_with_param(re, b, e, b + from, e, reg, ONIG_OPTION_NONE, mp);
    onig_free_match_param(mp);
    if (r >= 0) return match ? (long)from : r;
    return r == ONIG_MISMATCH ? -1 : rx_error(vm, r);
}

/* Searches s from byte `from`; returns the match start (bytes) or -1; region filled. -2 with
 * the render's error set (backtracking limit, fuel, memory). */
static long rx_search(tpl_vm *vm, OnigRegex re, tpl_value s, size_t from, OnigRegion *reg)
{
    return rx_run(vm, re, s, from, reg, false);
}

/* ------------------------------------------------------------------ dispatch */

/* A String method a Symbol has too (Symbol's own: 1; 2 when it answers a Symbol), else 0: Ruby's NoMethodError
 * (:a.strip). The Object methods every value has are TPL_BK_RANY's, not asked here. */
static int sym_method(const char *name, size_t n)
{
    static const char *const same[] = { "[]", "slice", "length", "size", "empty?", "start_with?", "end_with?", "=~", "match",
                                        "match?", "<=>", "==", "===", "!=", "!~", "casecmp", "casecmp?", "<", "<=", ">", ">=",
                                        "between?", "clamp", "to_s", "id2name", "to_sym", "intern", "inspect", "encoding",
                                        "to_proc", "eql?", "equal?", "hash", "frozen?", "dup", "clone", "itself", "freeze",
                                        "then", "yield_self", "tap", "to_json", "to_yaml", "name", NULL };
    static const char *const sym[] = { "upcase", "downcase", "capitalize", "swapcase", "succ", "next", NULL };
    for (int i = 0; same[i]; i++) if (strlen(same[i]) == n && memcmp(same[i], name, n) == 0) return 1;
    for (int i = 0; sym[i]; i++) if (strlen(sym[i]) == n && memcmp(sym[i], name, n) == 0) return 2;
    return 0;
}

static int kinds_for(tpl_value v, tpl_builtin_kind k[3])
{
    switch (v.type) {
    case TPL_T_STR:
        if (tpl_is_gemv_rb(v) || (v.flags & TPL_F_CLASS_RB)) return 0;   /* (a Gem::Version's methods: gem_method, a class's class_method; then Object's) */
        k[0] = TPL_BK_RSTR; return 1;
    case TPL_T_INT: case TPL_T_FLOAT: k[0] = TPL_BK_RNUM; return 1;
    case TPL_T_LIST:
        if (v.flags & TPL_F_MATCH_RB) { k[0] = TPL_BK_RMATCH; return 1; }
        if (v.flags & TPL_F_ENUM_RB) { k[0] = TPL_BK_RARR; return 1; }   /* (Enumerable's methods only) */
        if (v.flags & TPL_F_RANGE_RB) { k[0] = TPL_BK_RRANGE; k[1] = TPL_BK_RARR; return 2; }
        k[0] = TPL_BK_RARR; return 1;
    case TPL_T_MAP: k[0] = TPL_BK_RHASH; k[1] = TPL_BK_RARR; return 2;
    default: return 0;
    }
}

/* Array methods that hashes and ranges have too (Enumerable), used on their items. */
static bool enumerable(const char *name, size_t n)
{
    static const char *const names[] = { "(cycle_first)", "(cycle_take)", "map", "collect", "flat_map", "each_with_index", "find", "detect", "any?",
        "all?", "none?", "count", "cycle", "sort", "sort_by", "min_by", "max_by", "sum", "to_a", "entries", "first", "min", "max",
        "each", "reject", "select", "filter", "uniq", "include?", "find_index", "take", "drop", "group_by", "partition",
        "inject", "reduce", "zip", "each_slice", "tally", "minmax", "reverse_each", "take_while", "drop_while",
        "each_cons", "one?", "filter_map", "find_all", "collect_concat", "with_index", "grep", "grep_v", "chunk_while",
        "slice_when", "minmax_by", NULL };
    for (int i = 0; names[i]; i++)
        if (strlen(names[i]) == n && memcmp(names[i], name, n) == 0) return true;
    return false;
}

/* Whether builtin id takes keyword `name`: its signature names that parameter, or has **opts. */
static bool param_of(int id, tpl_value name)
{
    const char *p = tpl_builtin(id)->params;
    if (p && strstr(p, "**")) return true;   /* **opts takes any keyword */
    while (p && *p) {
        while (*p == '*') p++;
        const char *e = p;
        while (*e && *e != ',' && *e != '?' && *e != '=') e++;
        if ((size_t)(e - p) == name.len && memcmp(p, name.u.s, name.len) == 0) return true;
        p = strchr(e, ',');
        if (p) p++;
    }
    return false;
}

static int call_id(tpl_vm *vm, int id, tpl_value self, tpl_value *args, int npos, const tpl_value *kwn, tpl_value *kwv,
                   int nkw, tpl_value *out)
{
    tpl_value pos[TPL_MAX_PARAMS + 1];
    if (npos >= TPL_MAX_PARAMS) return tpl_vm_error(vm, TPL_ERR_TYPE, "too many arguments (ArgumentError)");
    pos[0] = self;
    if (npos) mcpy(pos + 1, args, (size_t)npos * sizeof *args);
    bool pack = nkw > 0;
    for (int k = 0; k < nkw && pack; k++) pack = !param_of(id, kwn[k]);
    if (pack) {
        /* h.merge(a: 1), a.push(k: v): keywords a method does not take are one Hash, its last
         * positional argument (Ruby passes them so to a method without keyword parameters) */
        tpl_map *m = rb_map(vm, (uint32_t)nkw);
        if (!m) return oom(vm);
        for (int k = 0; k < nkw; k++) {
            tpl_value key = kwn[k];
            key.flags |= TPL_F_SYMBOL;
            if (!tpl_map_set(A(vm), m, key, kwv[k])) return oom(vm);
        }
        pos[npos + 1] = tpl_v_map(m);
        pos[npos + 1].flags = TPL_F_MUT_RB;
        return tpl_vm_call_builtin(vm, id, pos, npos + 2, NULL, NULL, 0, out);
    }
    return tpl_vm_call_builtin(vm, id, pos, npos + 1, kwn, kwv, nkw, out);
}

/* Regexp.escape / Regexp.quote (rb_reg_quote): a backslash before [ ] { } ( ) | - * . \\ ? + ^ $ # and
 * space; tab, newline, CR, FF and VT as \\t \\n \\r \\f \\v. */
static int regexp_escape(tpl_vm *vm, tpl_value v, tpl_value *out)
{
    if (v.type != TPL_T_STR || (v.flags & (TPL_F_REGEX_RB | TPL_F_CLASS_RB))) return type_error(vm, TPL_VT_STR, v);
    tpl_sb b;
    tpl_sb_init(&b, A(vm));
    for (size_t i = 0; i < v.len; i++) {
        char c = v.u.s[i];
        switch (c) {
        case '[': case ']': case '{': case '}': case '(': case ')': case '|': case '-': case '*': case '.': case '\\':
        case '?': case '+': case '^': case '$': case '#': case ' ':
            tpl_sb_putc(&b, '\\');
            tpl_sb_putc(&b, c);
            break;
        case '\t': tpl_sb_puts(&b, "\\t"); break;
        case '\n': tpl_sb_puts(&b, "\\n"); break;
        case '\r': tpl_sb_puts(&b, "\\r"); break;
        case '\f': tpl_sb_puts(&b, "\\f"); break;
        case '\v': tpl_sb_puts(&b, "\\v"); break;
        default: tpl_sb_putc(&b, c); break;
        }
    }
    if (b.failed) return oom(vm);
    *out = tpl_sb_value(&b);
    return 0;
}

/* Integer methods of a big int (bigint.h; Ruby's Bignum): 0 answered, -1 error, 1 not one of
 * them (the Object methods follow: to_s, inspect, class, ==, ...). */
static int big_round(tpl_vm *vm, mpz_t z, int64_t nd, int mode, int half, tpl_value *out);
static int num_round(tpl_vm *vm, tpl_value *a, tpl_value *out, int mode);

static int big_method(tpl_vm *vm, tpl_value self, const char *name, size_t n, tpl_value *args, int npos, int nkw,
                      tpl_value *out)
{
#define IS(lit) (n == sizeof lit - 1 && memcmp(name, lit, sizeof lit - 1) == 0)
    if (nkw) return 1;
    if (IS("size") && npos == 0 && self.type == TPL_T_BIGINT) {   /* (Integer#size: |x|'s bytes) */
        mpz_t z;
        tpl_big_get(z, self);
        *out = tpl_v_int((int64_t)((mpz_sizeinbase(z, 2) + 7) / 8));
        mpz_clear(z);
        return 0;
    }
    bool neg = self.type == TPL_T_BIGINT ? self.u.s[0] == '-' : self.u.i < 0;
    if (IS("chr") && npos <= 1 && self.type == TPL_T_BIGINT)   /* (int_chr: the range before the encoding) */
        return tpl_vm_error(vm, TPL_ERR_VALUE, "bignum out of char range (RangeError)");
    if ((IS("floor") || IS("ceil") || IS("round") || IS("truncate")) && npos == 1 && args[0].type == TPL_T_INT &&
        self.type == TPL_T_BIGINT) {   /* to 10**-ndigits (round: half up) */
        int64_t nd;
        if (radix_arg(vm, args[0], &nd) < 0) return -1; /* (NUM2INT: past an int a RangeError) */
        mpz_t z;
        tpl_big_get(z, self);
        return big_round(vm, z, nd, IS("floor") ? 1 : IS("ceil") ? 2 : IS("truncate") ? 3 : 0, 0, out);
    }
    if (npos == 0 && self.type == TPL_T_BIGINT) {
        if (IS("to_i") || IS("to_int") || IS("floor") || IS("ceil") || IS("round") || IS("truncate") || IS("ord") ||
            IS("numerator") || IS("+@")) { *out = self; return 0; }
        if (IS("to_f")) { *out = tpl_v_float(dbl(self)); return 0; }
        if (IS("abs") || IS("magnitude")) return tpl_big_abs(vm, self, out);
        if (IS("-@")) return tpl_big_neg(vm, self, out);
        if (IS("zero?")) { *out = tpl_v_bool(false); return 0; }
        if (IS("positive?")) { *out = tpl_v_bool(!neg); return 0; }
        if (IS("negative?")) { *out = tpl_v_bool(neg); return 0; }
        if (IS("nonzero?") || IS("integer?") || IS("finite?")) { *out = IS("nonzero?") ? self : tpl_v_bool(true); return 0; }
        if (IS("infinite?")) { *out = tpl_v_none(); return 0; }
        if (IS("even?") || IS("odd?")) {
            bool even = (self.u.s[self.len - 1] - '0') % 2 == 0;
            *out = tpl_v_bool(IS("even?") ? even : !even);
            return 0;
        }
        if (IS("succ") || IS("next") || IS("pred"))
            return tpl_big_binop(vm, IS("pred") ? TPL_OP_SUB : TPL_OP_ADD, self, tpl_v_int(1), out);
        if (IS("bit_length")) {
            mpz_t z;
            tpl_big_get(z, self);
            if (neg) mpz_com(z, z); /* Ruby: the bits of ~x for a negative x */
            size_t bits = mpz_sizeinbase(z, 2);
            mpz_clear(z);
            *out = tpl_v_int((int64_t)bits);
            return 0;
        }
    }
    if (IS("digits") && npos == 1 && self.type == TPL_T_BIGINT &&
        (args[0].type == TPL_T_BIGINT || args[0].type == TPL_T_NONE || (args[0].type == TPL_T_INT && args[0].u.i < 0))) {
        /* rb_int_digits: the receiver's sign first, nil by to_int, a negative base, a Bignum base by division */
        if (neg) return tpl_vm_fail(vm, TPL_EK_VALUE, "out of domain (Math::DomainError)");
        if (args[0].type == TPL_T_NONE) return tpl_vm_error(vm, TPL_ERR_TYPE, "no implicit conversion of nil into Integer (TypeError)");
        if (args[0].type == TPL_T_INT || args[0].u.s[0] == '-') return tpl_vm_error(vm, TPL_ERR_TYPE, "negative radix (ArgumentError)");
        mpz_t z, b, r;
        tpl_big_get(z, self);
        tpl_big_get(b, args[0]);
        mpz_init(r);
        tpl_list *l = new_list(vm, 4);
        if (!l) { mpz_clears(z, b, r, NULL); return oom(vm); }
        while (mpz_sgn(z) > 0) {
            mpz_fdiv_qr(z, r, z, b);
            mpz_t d;
            mpz_init_set(d, r);
            tpl_value dv;
            if (tpl_big_result(vm, d, &dv) < 0) { mpz_clears(z, b, r, NULL); return -1; }
            if (!tpl_list_push(A(vm), l, dv)) { mpz_clears(z, b, r, NULL); return oom(vm); }
        }
        mpz_clears(z, b, r, NULL);
        *out = tpl_v_list(l);
        return 0;
    }
    if ((IS("to_s") || IS("inspect") || IS("digits")) && npos <= 1 && self.type == TPL_T_BIGINT) {
        int64_t base = 10;
        if (npos == 1) {
            if (radix_arg(vm, args[0], &base) < 0) return -1;   /* (NUM2INT: Ruby's TypeError/RangeError) */
            if (base < 2 || base > 36) return tpl_vm_error(vm, TPL_ERR_VALUE, "invalid radix %lld (ArgumentError)", (long long)base);
        }
        mpz_t z;
        tpl_big_get(z, self);
        if (IS("digits")) { /* least significant first */
            if (neg) { mpz_clear(z); return tpl_vm_fail(vm, TPL_EK_VALUE, "out of domain (Math::DomainError)"); }
            /* from the text mpz_get_str writes (subquadratic), reversed: dividing by the base one
             * digit at a time is quadratic ((10**300000).digits took 20 s) */
            size_t cap = mpz_sizeinbase(z, (int)base) + 2;
            char *p = tpl_arena_alloc(tpl_vm_arena(vm), cap);
            tpl_list *l = p ? tpl_list_new(tpl_vm_arena(vm), (uint32_t)cap) : NULL;
            if (!l) { mpz_clear(z); return oom(vm); }
            mpz_get_str(p, (int)base, z);
            mpz_clear(z);
            for (size_t k = strlen(p); k-- > 0;)
                l->items[l->len++] = tpl_v_int(p[k] <= '9' ? p[k] - '0' : p[k] - 'a' + 10);
            *out = tpl_v_list(l);
            return 0;
        }
        char *p = tpl_arena_alloc(tpl_vm_arena(vm), mpz_sizeinbase(z, (int)base) + 2);
        if (!p) { mpz_clear(z); return oom(vm); }
        mpz_get_str(p, (int)base, z);
        mpz_clear(z);
        *out = tpl_v_str(p, strlen(p));
        return 0;
    }
    if (IS("pow") && (npos == 1 || npos == 2) && self.type == TPL_T_BIGINT) { /* Integer#pow(b[, m]) */
        tpl_value pa[3] = { self, args[0], npos == 2 ? args[1] : tpl_v_unset() };
        return r_num_pow(vm, pa, out) < 0 ? -1 : 0;
    }
    if (npos == 1 && plain_num(args[0]) && (IS("+") || IS("-") || IS("*") || IS("/") || IS("%") || IS("**"))) {
        int op = name[0] == '*' && n == 2 ? 'p' : name[0];
        int h = tpl_rb_arith(vm, op, self, args[0], out);
        if (h != 0) return h < 0 ? -1 : 0;
        return tpl_big_binop(vm, op == '+' ? TPL_OP_ADD : op == '-' ? TPL_OP_SUB : op == '*' ? TPL_OP_MUL
                                 : op == '/' ? TPL_OP_DIV_RB : op == '%' ? TPL_OP_MOD : TPL_OP_POW, self, args[0], out);
    }
    if (npos == 1 && args[0].type == TPL_T_FLOAT && self.type == TPL_T_BIGINT && IS("remainder")) {   /* Float#% rules */
        tpl_value a2[2] = { self, args[0] };
        return r_num_remainder(vm, a2, out);
    }
    if (npos == 1 && tpl_is_intlike(args[0]) && args[0].type != TPL_T_BOOL) {
        tpl_value y = args[0];
        if (IS("pow")) {
            int h = tpl_rb_arith(vm, 'p', self, y, out);
            return h < 0 ? -1 : h > 0 ? 0 : tpl_big_binop(vm, TPL_OP_POW, self, y, out);
        }
        if (IS("div")) return tpl_big_binop(vm, TPL_OP_FLOORDIV, self, y, out);
        if (IS("modulo")) return tpl_big_binop(vm, TPL_OP_MOD, self, y, out);
        if (IS("fdiv")) { *out = tpl_v_float(dbl(self) / dbl(y)); return 0; }
        if (IS("divmod")) {
            tpl_list *l = tpl_list_new(tpl_vm_arena(vm), 2);
            if (!l) return oom(vm);
            if (tpl_big_binop(vm, TPL_OP_FLOORDIV, self, y, &l->items[0]) < 0) return -1;
            if (tpl_big_binop(vm, TPL_OP_MOD, self, y, &l->items[1]) < 0) return -1;
            l->len = 2;
            *out = tpl_v_list(l);
            return 0;
        }
        if (IS("gcdlcm")) {   /* [gcd, lcm] of a Bignum */
            tpl_list *l = tpl_list_new(tpl_vm_arena(vm), 2);
            if (!l) return oom(vm);
            mpz_t x, g, m;
            tpl_big_get(x, self);
            tpl_big_get(g, y);
            mpz_init(m);
            mpz_lcm(m, x, g);
            mpz_gcd(g, x, g);
            mpz_clear(x);
            if (tpl_big_result(vm, g, &l->items[0]) < 0) { mpz_clear(m); return -1; }
            if (tpl_big_result(vm, m, &l->items[1]) < 0) return -1;
            l->len = 2;
            *out = tpl_v_list(l);
            out->flags = TPL_F_MUT_RB;
            return 0;
        }
        if (IS("gcd") || IS("lcm") || IS("&") || IS("|") || IS("^") || IS("<<") || IS(">>") || IS("remainder")) {
            mpz_t x, z;
            tpl_big_get(x, self);
            tpl_big_get(z, y);
            if (IS("gcd")) mpz_gcd(z, x, z);
            else if (IS("lcm")) mpz_lcm(z, x, z);
            else if (IS("&")) mpz_and(z, x, z);
            else if (IS("|")) mpz_ior(z, x, z);
            else if (IS("^")) mpz_xor(z, x, z);
            else if (IS("remainder")) {
                if (mpz_sgn(z) == 0) { mpz_clears(x, z, NULL); return tpl_vm_fail(vm, TPL_EK_ZERO_DIVISION, "divided by 0 (ZeroDivisionError)"); }
                mpz_tdiv_r(z, x, z);
            } else { /* shifts: a count past int64 or the size limit is the limit error */
                if (y.type != TPL_T_INT) {
                    /* a Bignum count (big_shift2): 0 shifts to 0; to the right 0 or -1; to the left a
                     * RangeError from 2**67 bits (below it Ruby's NoMemoryError: the limit error) */
                    bool left = IS("<<") != (mpz_sgn(z) < 0);
                    bool zero = mpz_sgn(x) == 0, xneg = mpz_sgn(x) < 0;
                    mpz_abs(z, z);
                    bool huge = mpz_sizeinbase(z, 2) > 67;
                    mpz_clears(x, z, NULL);
                    if (zero || !left) { *out = tpl_v_int(!zero && xneg ? -1 : 0); return 0; }
                    if (huge) return tpl_vm_error(vm, TPL_ERR_VALUE, "shift width too big (RangeError)");
                    return tpl_big_binop(vm, TPL_OP_POW, tpl_v_int(2), y, out);
                }
                int64_t k = IS("<<") ? y.u.i : -y.u.i;
                if (k > (int64_t)TPL_BIG_MAX_BITS) { mpz_clears(x, z, NULL); return tpl_big_binop(vm, TPL_OP_POW, tpl_v_int(2), y, out); }
                if (k >= 0) mpz_mul_2exp(z, x, (mp_bitcnt_t)k);
                else mpz_fdiv_q_2exp(z, x, (mp_bitcnt_t)(k < -(int64_t)TPL_BIG_MAX_BITS * 2 ? (int64_t)TPL_BIG_MAX_BITS * 2 : -k));
            }
            mpz_clear(x);
            return tpl_big_result(vm, z, out);
        }
    }
    if (IS("<=>") && npos == 1) {
        bool ok = true;
        int c = rb_cmp(self, args[0], &ok, NULL);
        *out = ok ? tpl_v_int(c) : tpl_v_none();
        return 0;
    }
    return 1;
#undef IS
}

static int range_method(tpl_vm *vm, tpl_value self, const char *name, size_t n, tpl_value *args, int npos, tpl_value *out);
/* A block's own binding of its parameters (compiler/lower_erb.c block_sub, a block of TPL_RB_BIND_RAW):
 * `args.(bind)(kw, desc)` with the arguments as given (an Array) and the keywords (a Hash, or nil) answers
 * the parameters' values in order (lead, optional, *rest, post, keywords, **opts, &blk) as Ruby 3.1 binds
 * them (vm_args.c setup_parameters_complex): a proc takes the items of one Array argument when it has a
 * required positional parameter or two optional ones (keyword parameters do not count: Ruby 3.1's
 * proc { |*a, **o| }.([1, 2]) has a == [[1, 2]]), nil for missing required ones and drops extras; a
 * lambda checks the count (ArgumentError). A missing optional parameter or keyword is unset (its default).
 * desc: "lead opt rest post lambda kwrest blk" then each keyword's name, `!` after a required one. */
/* The value of keyword sym (a Symbol) in the keywords m of a call: only under a Symbol key (Ruby
 * 3.1 passes `"k" => 1` on as a String key, which binds no keyword parameter k: only **opts takes it). */
static tpl_value *rb_sym_get(tpl_map *m, tpl_value sym)
{
    for (uint32_t i = 0; i < m->len; i++) {
        tpl_value k = m->e[i].key;
        if (k.type == TPL_T_STR && (k.flags & TPL_F_SYMBOL) && k.len == sym.len && memcmp(k.u.s, sym.u.s, k.len) == 0) return &m->e[i].val;
    }
    return NULL;
}

static int bind_block(tpl_vm *vm, tpl_value self, tpl_value *args, int npos, tpl_value *out)
{
    if (npos != 2 || self.type != TPL_T_LIST || args[1].type != TPL_T_STR) return tpl_vm_error(vm, TPL_ERR_TYPE, "internal error: (bind)");
    int lead = 0, opt = 0, rest = 0, post = 0, lam = 0, kwrest = 0, blk = 0, used = 0;
    char dbuf[2048];
    if (args[1].len >= sizeof dbuf) return tpl_vm_error(vm, TPL_ERR_TYPE, "internal error: (bind)");
    memcpy(dbuf, args[1].u.s, args[1].len);
    dbuf[args[1].len] = 0;
    if (sscanf(dbuf, "%d %d %d %d %d %d %d%n", &lead, &opt, &rest, &post, &lam, &kwrest, &blk, &used) != 7)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "internal error: (bind)");
    const char *kwn[64];
    size_t kwl[64];
    bool kwreq[64];
    int nkwp = 0, nkwreq = 0;
    for (const char *p = dbuf + used; *p && nkwp < 64;) {
        while (*p == ' ') p++;
        if (!*p) break;
        const char *q = p;
        while (*q && *q != ' ' && *q != '!') q++;
        kwn[nkwp] = p;
        kwl[nkwp] = (size_t)(q - p);
        kwreq[nkwp] = *q == '!';
        nkwreq += kwreq[nkwp];
        nkwp++;
        p = *q == '!' ? q + 1 : q;
    }
    tpl_value kw = args[0];
    bool haskw = nkwp || kwrest;
    tpl_list *given = self.u.list;
    int n = (int)given->len;
    tpl_value av[260];
    if (n > 256) return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: more than 256 arguments to a block");
    for (int i = 0; i < n; i++) av[i] = given->items[i];
    /* keywords to a block without keyword parameters: a Hash argument */
    if (kw.type == TPL_T_MAP && !haskw) { av[n++] = kw; kw = tpl_v_none(); }
    int min = lead + post;
    /* (not with keywords given, nor for |a, &b|: Ruby's ambiguous_param0 one parameter) */
    bool kwgiven = kw.type == TPL_T_MAP;
    bool param0 = lead == 1 && !opt && !rest && !post && !haskw;
    if (!lam && n == 1 && !kwgiven && !param0 && is_array(av[0]) && (min > 0 || opt > 1)) {
        tpl_list *l = av[0].u.list;
        if (l->len > 256) return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: more than 256 arguments to a block");
        n = (int)l->len;
        for (int i = 0; i < n; i++) av[i] = l->items[i];
    }
    if (lam && (n < min || (!rest && n > min + opt))) {
        tpl_sb b;
        tpl_sb_init(&b, A(vm));
        tpl_sb_printf(&b, "wrong number of arguments (given %d, expected %d", n, min);
        if (rest) tpl_sb_printf(&b, "+");
        else if (opt) tpl_sb_printf(&b, "..%d", min + opt);
        if (nkwreq) {
            tpl_sb_printf(&b, "; required keyword%s:", nkwreq > 1 ? "s" : "");
            int k = 0;
            for (int i = 0; i < nkwp; i++)
                if (kwreq[i]) tpl_sb_printf(&b, "%s %.*s", k++ ? "," : "", (int)kwl[i], kwn[i]);
        }
        tpl_sb_printf(&b, ") (ArgumentError)");
        return tpl_vm_error(vm, TPL_ERR_TYPE, "%.*s", (int)b.len, b.p ? b.p : "");
    }
    while (n < min) av[n++] = tpl_v_none();          /* a proc: nil for missing required parameters */
    if (!rest && n > min + opt) n = min + opt;         /* and drops extras */
    int total = lead + opt + rest + post + nkwp + kwrest + blk;
    tpl_list *res = tpl_list_new(A(vm), total > 0 ? (uint32_t)total : 1u);
    if (!res) return oom(vm);
    tpl_value *o = res->items;
    int k = 0, mid = n - min;                          /* the values between lead and post */
    for (int i = 0; i < lead; i++) o[k++] = av[i];
    int nopt = mid < opt ? mid : opt;
    for (int i = 0; i < opt; i++) o[k++] = i < nopt ? av[lead + i] : tpl_v_unset();
    if (rest) {
        int nr = mid - nopt;
        tpl_list *r = tpl_list_new(A(vm), nr > 0 ? (uint32_t)nr : 1u);
        if (!r) return oom(vm);
        for (int i = 0; i < nr; i++) r->items[i] = av[lead + nopt + i];
        r->len = nr > 0 ? (uint32_t)nr : 0u;
        o[k++] = tpl_v_list(r);
    }
    for (int i = 0; i < post; i++) o[k++] = av[n - post + i];
    /* keywords: each parameter's, then the missing required ones, the unknown ones, **opts */
    tpl_sb miss;
    tpl_sb_init(&miss, A(vm));
    int nmiss = 0;
    for (int i = 0; i < nkwp; i++) {
        tpl_value key = tpl_v_str(kwn[i], kwl[i]);
        key.flags |= TPL_F_SYMBOL;
        tpl_value *v = kw.type == TPL_T_MAP ? rb_sym_get(kw.u.map, key) : NULL;
        o[k++] = v ? *v : tpl_v_unset();
        if (!v && kwreq[i]) tpl_sb_printf(&miss, "%s:%.*s", nmiss++ ? ", " : "", (int)kwl[i], kwn[i]);
    }
    if (nmiss) return tpl_vm_error(vm, TPL_ERR_TYPE, "missing keyword%s: %.*s (ArgumentError)", nmiss > 1 ? "s" : "", (int)miss.len, miss.p ? miss.p : "");
    tpl_map *extra = NULL;
    if (kw.type == TPL_T_MAP) {
        tpl_sb unk;
        tpl_sb_init(&unk, A(vm));
        int nunk = 0;
        tpl_map *m = kw.u.map;
        for (uint32_t e = 0; e < m->len; e++) {
            tpl_value key = m->e[e].key;
            bool known = false;
            for (int i = 0; i < nkwp && !known; i++)
                known = key.type == TPL_T_STR && (key.flags & TPL_F_SYMBOL) && key.len == kwl[i] && memcmp(key.u.s, kwn[i], kwl[i]) == 0;
            if (known) continue;
            if (kwrest) {
                if (!extra && !(extra = rb_map(vm, 4))) return oom(vm);
                if (!tpl_map_set(A(vm), extra, key, m->e[e].val)) return oom(vm);
            } else {
                tpl_sb_printf(&unk, "%s", nunk++ ? ", " : "");
                tpl_rb_inspect(&unk, key);
            }
        }
        if (nunk) return tpl_vm_error(vm, TPL_ERR_TYPE, "unknown keyword%s: %.*s (ArgumentError)", nunk > 1 ? "s" : "", (int)unk.len, unk.p ? unk.p : "");
    }
    if (kwrest) {
        if (!extra && !(extra = rb_map(vm, 1))) return oom(vm);
        o[k++] = tpl_v_map(extra);
    }
    if (blk) o[k++] = tpl_v_none();
    res->len = (uint32_t)k;
    *out = tpl_v_list(res);
    return 0;
}

static int rb_send_impl(tpl_vm *vm, tpl_value self, const char *name, size_t n, tpl_value *args, int npos,
                        const tpl_value *kwn, tpl_value *kwv, int nkw, tpl_value *out);
static int rb_copy_mut(tpl_vm *vm, tpl_value v, tpl_value *out);

/* Methods that answer their receiver itself in Ruby (the same object, not a copy). */
static bool answers_self(const char *name, size_t n)
{
    static const char *const names[] = { "each", "each_with_index", "each_pair", "each_key", "each_value", "reverse_each",
        "each_slice", "each_cons", "to_a", "to_h", "to_ary", "to_hash", "entries", "itself", "freeze", "push", "append", "<<",
        "concat", "unshift", "prepend", "insert", "[]=", "merge!", "update", "clear", "(own)", NULL };
    for (int i = 0; names[i]; i++)
        if (strlen(names[i]) == n && memcmp(names[i], name, n) == 0) return true;
    return false;
}

/* Whether container r shares storage with the array or hash v (the same object, or its items). */
static bool shares(tpl_value r, tpl_value v)
{
    if (r.type != v.type) return false;
    if (r.type == TPL_T_MAP) return r.u.map == v.u.map || (r.u.map->e && r.u.map->e == v.u.map->e);
    if (r.type != TPL_T_LIST) return false;
    if (r.u.list == v.u.list) return true;
    uintptr_t p = (uintptr_t)r.u.list->items, lo = (uintptr_t)v.u.list->items, hi = lo + (uintptr_t)v.u.list->cap * sizeof(tpl_value);
    return r.u.list->items && p >= lo && p < hi;
}

static bool is_mut(tpl_value v) { return (v.type == TPL_T_LIST || v.type == TPL_T_MAP) && (v.flags & TPL_F_MUT_RB); }

/* The bang methods (bang below) and delete_if/keep_if: they guard their receiver themselves and answer it. */
static bool bang_name(const char *name, size_t n)
{
    return (n > 1 && name[n - 1] == '!' && !(n == 6 && memcmp(name, "merge!", 6) == 0)) ||
           (n == 9 && (memcmp(name, "delete_if", 9) == 0)) || (n == 7 && memcmp(name, "keep_if", 7) == 0);
}

/* Calls method `name` of self. An array or hash this render may change in place (TPL_F_MUT_RB) is
 * guarded two ways: a method with a block iterates over the items as they were when it was called
 * (the block may change the array: the method's own loop never reads past what it allocated); and a
 * result that shares storage with the receiver or an argument, where Ruby answers a new object (dup,
 * a sort or uniq that changed nothing), is copied, so changing one never changes the other. */
/* ------------------------------------------------------------------ Enumerator */

/* Enumerable methods of an Array or Hash that answer an Enumerator without a block and whose result
 * with one is not the values they yield (select, group_by, ...): the Enumerator's items are the
 * receiver's (each_with_object(memo): [item, memo] pairs); with_index/each_with_index with a block
 * runs the method on the block's values (enum_by_index), each with a block the method itself. */
static bool enum_blockful(const char *name, size_t n, int npos)
{
#define IS(lit) (n == sizeof lit - 1 && memcmp(name, lit, sizeof lit - 1) == 0)
    switch (n) {   /* (asked on every blockless call of an Array or Hash: by length first) */
    case 4: return npos == 0 && IS("find");
    case 6: return (npos == 0 && (IS("select") || IS("filter") || IS("reject") || IS("detect") || IS("min_by") || IS("max_by"))) ||
                   (npos == 1 && (IS("min_by") || IS("max_by")));   /* (min_by(n): the n smallest) */
    case 7: return npos == 0 && IS("sort_by");
    case 8: return npos == 0 && (IS("find_all") || IS("group_by") || IS("flat_map"));
    case 9: return npos == 0 && IS("partition");
    case 10: return npos == 0 && IS("find_index");
    case 14: return npos == 0 && IS("collect_concat");
    case 16: return npos == 1 && IS("each_with_object");
    default: return false;
    }
#undef IS
}

static int enum_items(tpl_vm *vm, tpl_value v, tpl_list **out, const char *meth);
static tpl_value pair(tpl_vm *vm, tpl_value x, tpl_value y);
static int enum_by_index(tpl_vm *vm, tpl_value e, int64_t off, tpl_value *out);

/* The values an Enumerator of such a method yields: the receiver's items ([item, memo] pairs for
 * each_with_object). */
static int enum_blockful_items(tpl_vm *vm, tpl_value self, const char *name, size_t n, const tpl_value *args, tpl_list **out)
{
    tpl_list *l;
    if (enum_items(vm, self, &l, name) < 0) return -1;
    if (!(n == 16 && memcmp(name, "each_with_object", 16) == 0)) { *out = l; return 0; }
    tpl_list *r = new_list(vm, l->len);
    if (!r) return oom(vm);
    for (uint32_t i = 0; i < l->len; i++) {
        r->items[r->len] = pair(vm, l->items[i], args[0]);
        if (r->items[r->len++].type != TPL_T_LIST) return oom(vm);
    }
    *out = r;
    return 0;
}

/* The methods that answer an Enumerator without a block (Ruby's RETURN_SIZED_ENUMERATOR) and whose
 * blockless result in tpl is the list of the values the Enumerator yields. */
static bool enum_maker(tpl_value self, const char *name, size_t n)
{
    static const char *const arr[] = { "each", "each_with_index", "each_slice", "each_cons", "map", "collect", "each_entry",
        "reverse_each", "filter_map", "with_index", "each_pair", "cycle", NULL };
    /* (checked only for names of their shape: every blockless call of an Array or Hash asks) */
    static const char *const arr2[] = { "each_index", "each_key", "each_value", "transform_values", "transform_keys", NULL };
    static const char *const num[] = { "times", "upto", "downto", NULL };
    static const char *const str[] = { "each_char", "each_line", "each_byte", "each_codepoint", "upto", NULL };
    const char *const *names = self.type == TPL_T_INT ? num : self.type == TPL_T_STR ? str
                             : self.type == TPL_T_LIST || self.type == TPL_T_MAP ? arr : NULL;
    if (self.type == TPL_T_STR && (self.flags & (TPL_F_CLASS_RB | TPL_F_REGEX_RB | TPL_F_EXC_RB | TPL_F_SYMBOL))) return false;
    /* Numeric#step and Range#step: an Enumerator::ArithmeticSequence (a non-numeric Range's: an Enumerator) */
    if (n == 4 && name[0] == 's' && memcmp(name, "step", 4) == 0)
        return self.type == TPL_T_INT || self.type == TPL_T_FLOAT || self.type == TPL_T_BIGINT ||
               (self.type == TPL_T_LIST && (self.flags & TPL_F_RANGE_RB));
    for (int i = 0; names && names[i]; i++)
        if (strlen(names[i]) == n && memcmp(names[i], name, n) == 0) return true;
    if (names == arr && n >= 8 && (name[0] == 'e' || name[0] == 't'))
        for (int i = 0; arr2[i]; i++)
            if (strlen(arr2[i]) == n && memcmp(arr2[i], name, n) == 0) return true;
    return false;
}

/* Whether Enumerator x (its extra values) is Ruby's Enumerator over an Enumerator::Generator
 * (slice_when, chunk_while with a block): inspect prints the generator's address, size is nil, each
 * with a block answers nil, and its block runs again on the receiver as it is when it iterates. */
static bool enum_generator(const tpl_value *x)
{
    return (x[1].len == 10 && memcmp(x[1].u.s, "slice_when", 10) == 0) || (x[1].len == 11 && memcmp(x[1].u.s, "chunk_while", 11) == 0);
}

/* The Enumerator self.name(args) over the items it yields (TPL_F_ENUM_RB). */
static int enum_wrap(tpl_vm *vm, tpl_value self, const char *name, size_t n, const tpl_value *args, int npos, const tpl_list *items,
                     const tpl_value *kwn, const tpl_value *kwv, int nkw, tpl_value *out)
{
    tpl_list *l = new_list(vm, items->len + TPL_ENUM_EXTRA);
    tpl_list *al = new_list(vm, (uint32_t)npos + 1);
    char *nm = tpl_arena_strdup(A(vm), name, n);
    if (!l || !al || !nm) return oom(vm);
    tpl_map *kw = NULL;
    if (nkw) {   /* (keywords: a trailing Hash, the argument list flagged TPL_F_TUPLE; inspect prints `by: 2`) */
        if (!(kw = rb_map(vm, (uint32_t)nkw))) return oom(vm);
        for (int i = 0; i < nkw; i++)
            if (!tpl_map_set(A(vm), kw, kwn[i], kwv[i])) return oom(vm);
    }
    mcpy_items(l->items, 0, items->items, 0, items->len);
    l->len = items->len;
    l->cap = l->len;   /* (a push copies it first: the extra values stay) */
    for (int i = 0; i < npos; i++) al->items[al->len++] = args[i];
    if (kw) al->items[al->len++] = tpl_v_map(kw);
    tpl_value *x = l->items + l->len;
    x[0] = self;
    x[1] = tpl_v_str(nm, n);
    x[2] = tpl_v_list(al);
    if (kw) x[2].flags = TPL_F_TUPLE;
    x[3] = tpl_v_int(0);
    *out = tpl_v_list(l);
    out->flags = TPL_F_ENUM_RB;
    return 0;
}

static int rb_send_guarded(tpl_vm *vm, tpl_value self, const char *name, size_t n, tpl_value *args, int npos,
                           const tpl_value *kwn, tpl_value *kwv, int nkw, tpl_value *out);

/* The in-place methods of an Array or Hash that answer an Enumerator without a block (RETURN_SIZED_ENUMERATOR),
 * which tpl does not make: iterating it with a block would change the receiver. */
static bool bang_enum(tpl_value self, const char *name, size_t n)
{
    if (n < 4 || n > 17 || !(name[n - 1] == '!' || name[n - 1] == 'f') || tpl_is_enum_rb(self)) return false;
    if (!(self.type == TPL_T_MAP || (self.type == TPL_T_LIST && !(self.flags & (TPL_F_RANGE_RB | TPL_F_MATCH_RB))))) return false;
    static const char *const both[] = { "select!", "filter!", "reject!", "keep_if", "delete_if", NULL };
    static const char *const arr[] = { "map!", "collect!", "sort_by!", NULL }, *const hash[] = { "transform_keys!", "transform_values!", NULL };
    for (const char *const *l = both; *l; l++) if (strlen(*l) == n && memcmp(*l, name, n) == 0) return true;
    for (const char *const *l = self.type == TPL_T_MAP ? hash : arr; *l; l++) if (strlen(*l) == n && memcmp(*l, name, n) == 0) return true;
    return false;
}

static int zip_eachable(tpl_vm *vm, const tpl_value *v, int n);

/* Whether an Enumerator's receiver may have changed since it was made: an Array or Hash this render
 * changes in place (TPL_F_MUT_RB), or an Enumerator over one. */
static bool enum_src_mut(tpl_value v, int depth)
{
    if (depth > 8) return true;
    if (tpl_is_enum_rb(v)) return enum_src_mut(v.u.list->items[v.u.list->len], depth + 1);
    return (v.type == TPL_T_LIST || v.type == TPL_T_MAP) && (v.flags & TPL_F_MUT_RB);
}

/* Whether the receiver of a slice_when / chunk_while Enumerator holds the items (the same values, none an
 * Array or Hash this render changes in place) it held when the Enumerator took its runs (rb_send_guarded
 * left those as its argument). */
static bool gen_unchanged(const tpl_value *x)
{
    const tpl_list *al = x[2].u.list;
    if (al->len != 1 || al->items[0].type != x[0].type) return false;
    if (x[0].type == TPL_T_LIST) {
        const tpl_list *now = x[0].u.list, *then = al->items[0].u.list;
        if (now->len != then->len) return false;
        for (uint32_t i = 0; i < now->len; i++)
            if (memcmp(&now->items[i], &then->items[i], sizeof(tpl_value)) || is_mut(now->items[i])) return false;
        return true;
    }
    if (x[0].type == TPL_T_MAP) {
        const tpl_map *now = x[0].u.map, *then = al->items[0].u.map;
        if (now->len != then->len) return false;
        for (uint32_t i = 0; i < now->len; i++)
            if (memcmp(&now->e[i].key, &then->e[i].key, sizeof(tpl_value)) || memcmp(&now->e[i].val, &then->e[i].val, sizeof(tpl_value)) ||
                is_mut(now->e[i].val))
                return false;
        return true;
    }
    return false;
}

/* The items an Enumerator yields now: Ruby's runs its method again on the receiver as it is, so one
 * over a changed Array or Hash sees the change (its method called again, without a block). */
static int enum_live(tpl_vm *vm, tpl_value e, tpl_list **out)
{
    tpl_list *l = e.u.list;
    const tpl_value *x = l->items + l->len;
    if (!enum_src_mut(x[0], 0)) { *out = l; return 0; }
    if (enum_generator(x) && gen_unchanged(x)) { *out = l; return 0; }
    if (enum_generator(x))   /* (its block is not kept: the runs were taken when it was made) */
        return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: an Enumerator of %.*s over an Array or Hash this render "
                            "changes (Ruby runs its block again on the changed items)", (int)x[1].len, x[1].u.s);
    if (enum_blockful(x[1].u.s, x[1].len, (int)x[2].u.list->len))
        return enum_blockful_items(vm, x[0], x[1].u.s, x[1].len, x[2].u.list->items, out);
    tpl_rb_block save = tpl_vm_set_block(vm, (tpl_rb_block){ 0 });
    tpl_value r;
    int rc = rb_send_guarded(vm, x[0], x[1].u.s, x[1].len, x[2].u.list->items, (int)x[2].u.list->len, NULL, NULL, 0, &r);
    tpl_vm_set_block(vm, save);
    if (rc < 0) return -1;
    if (r.type != TPL_T_LIST) { *out = l; return 0; }
    *out = r.u.list;
    return 0;
}

/* An ArithmeticSequence's begin, end, step and exclude_end? (p[0..3]): n.step(limit, step) (or by:/to:
 * keywords, a trailing Hash), range.step(n). */
static void aseq_parts(tpl_value e, tpl_value p[4])
{
    const tpl_value *x = e.u.list->items + e.u.list->len;
    const tpl_list *al = x[2].u.list;
    uint32_t npos = al->len - ((x[2].flags & TPL_F_TUPLE) ? 1 : 0);
    p[3] = tpl_v_bool(false);
    p[2] = tpl_v_int(1);
    if (x[0].type == TPL_T_LIST) {   /* a Range */
        p[0] = x[0].u.list->items[0];
        p[1] = x[0].u.list->items[1];
        p[3] = tpl_v_bool(x[0].u.list->items[2].u.i != 0);
        if (npos) p[2] = al->items[0];
        return;
    }
    p[0] = x[0];
    p[1] = npos ? al->items[0] : tpl_v_none();
    if (npos > 1) p[2] = al->items[1];
    if (npos < al->len) {
        const tpl_map *kw = al->items[npos].u.map;
        for (uint32_t i = 0; i < kw->len; i++) {
            tpl_value k = kw->e[i].key;
            if (k.type == TPL_T_STR && k.len == 2 && memcmp(k.u.s, "by", 2) == 0) p[2] = kw->e[i].val;
            if (k.type == TPL_T_STR && k.len == 2 && memcmp(k.u.s, "to", 2) == 0) p[1] = kw->e[i].val;
        }
    }
}

/* An Enumerator's own methods (external iteration: next, peek, rewind; size; each with a block answers
 * what the method it stands for answers). 1: not one of them. */
static int enum_method(tpl_vm *vm, tpl_value self, const char *name, size_t n, int npos, tpl_value *out)
{
#define IS(lit) (n == sizeof lit - 1 && memcmp(name, lit, sizeof lit - 1) == 0)
    tpl_value *x = self.u.list->items + self.u.list->len;
    if (IS("join")) return no_method(vm, self, name, n);   /* (Array's, not Enumerable's) */
    if (npos) return 1;
    tpl_list *l;
    if (IS("size") && enum_generator(x)) { *out = tpl_v_none(); return 0; }   /* (no size function: it does not iterate) */
    if ((IS("next") || IS("peek") || IS("size")) && enum_live(vm, self, &l) < 0) return -1;
    if (IS("next") || IS("peek")) {
        if (x[3].u.i >= (int64_t)l->len) return tpl_vm_error(vm, TPL_ERR_TYPE, "iteration reached an end (StopIteration)");
        *out = l->items[x[3].u.i];
        if (IS("next")) x[3].u.i++;
        return 0;
    }
    if (IS("rewind")) { x[3].u.i = 0; *out = self; return 0; }
    if (IS("each")) { *out = self; return 0; }   /* (Enumerator#each without a block: itself) */
    if (tpl_is_aseq_rb(self) && (IS("begin") || IS("end") || IS("step") || IS("exclude_end?"))) {
        tpl_value p[4];
        aseq_parts(self, p);
        *out = p[IS("begin") ? 0 : IS("end") ? 1 : IS("step") ? 2 : 3];
        return 0;
    }
    if (IS("size")) {
        /* (the methods Ruby makes an Enumerator of without a size function: size is nil) */
        bool known = !((x[1].len == 9 && memcmp(x[1].u.s, "each_line", 9) == 0) ||
                       (x[1].len == 4 && (memcmp(x[1].u.s, "find", 4) == 0)) ||
                       (x[1].len == 6 && (memcmp(x[1].u.s, "detect", 6) == 0)) ||
                       (x[1].len == 10 && memcmp(x[1].u.s, "find_index", 10) == 0) || enum_generator(x));
        *out = known ? tpl_v_int(l->len) : tpl_v_none();
        return 0;
    }
    if (IS("to_s")) return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: an Enumerator's to_s (Ruby prints its address; inspect it or take its items)");
    return 1;
#undef IS
}

static int rb_send_body(tpl_vm *vm, tpl_value self, const char *name, size_t n, tpl_value *args, int npos,
                        const tpl_value *kwn, tpl_value *kwv, int nkw, tpl_value *out);

/* Methods that answer an Enumerator without a block before they read their arguments (Ruby's
 * RETURN_SIZED_ENUMERATOR ahead of the checks: [1].cycle(:a), 1.upto("a"), "s".gsub(1), (1..2).min_by(nil)
 * are Enumerators that raise only when they iterate). */
static bool lazy_args(const char *name, size_t n, int npos)
{
#define IS(lit) (n == sizeof lit - 1 && memcmp(name, lit, sizeof lit - 1) == 0)
    if (npos == 1 && IS("gsub")) return true;
    if (IS("step")) return true;
    return IS("cycle") || IS("upto") || IS("downto") || IS("each_line") || IS("each_with_index") || IS("each_entry") ||
           IS("with_index") || IS("each_with_object") || IS("min_by") || IS("max_by");
#undef IS
}

/* A lazy_args call whose arguments failed: their error is Ruby's only once the Enumerator iterates,
 * so tpl's refusal, which no rescue takes. (Its own frame: tpl_rb_send is on the stack of every
 * Ruby call, recursion included, and the message buffer would widen each of those frames.) */
static __attribute__((noinline)) int lazy_args_refusal(tpl_vm *vm, const char *name, size_t n)
{
    char msg[256];
    if (!tpl_vm_rescue(vm, msg, sizeof msg)) return -1;
    return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: %.*s with these arguments and no block (Ruby answers an "
                        "Enumerator that raises only when it iterates: %s)", (int)n, name, msg);
}

int tpl_rb_send(tpl_vm *vm, tpl_value self, const char *name, size_t n, tpl_value *args, int npos,
                const tpl_value *kwn, tpl_value *kwv, int nkw, tpl_value *out)
{
    bool lazy = npos > 0 && !nkw && !tpl_vm_block(vm).pc && lazy_args(name, n, npos);
    if (nkw && !tpl_vm_block(vm).pc) {   /* keywords are one more argument (a Hash), after the arity check */
#define IS(lit) (n == sizeof lit - 1 && memcmp(name, lit, sizeof lit - 1) == 0)
        lazy = (npos == 0 && (IS("min_by") || IS("max_by") || IS("cycle") || IS("with_index"))) || IS("each_with_index") || IS("each_entry");
#undef IS
    }
    if (lazy && n == 4 && name[0] == 's')   /* (Numeric#step only, and its step of 0 is at once an ArgumentError) */
        lazy = plain_num(self) && !(npos >= 2 && plain_num(args[1]) && dbl(args[1]) == 0);
    if (lazy && not_own_method(self, name, n)) lazy = false;   /* (a method the receiver lacks: NoMethodError at once) */
    int rc = rb_send_body(vm, self, name, n, args, npos, kwn, kwv, nkw, out);   /* (one call: inlined, one frame) */
    return rc >= 0 || !lazy ? rc : lazy_args_refusal(vm, name, n);
}

/* rb_send_body's rarer paths, each in a frame of its own (noinline): rb_send_body is on the C stack
 * of every Ruby call, recursion through lambdas and defs included, and the locals these take the
 * address of would widen each of those frames (under ASan by their redzones too). */

/* ArithmeticSequence#begin / end / step / exclude_end? (arity 0; a block is not used) */
static __attribute__((noinline)) int aseq_accessor(tpl_vm *vm, tpl_value self, const char *name, size_t n, int npos,
                                                   tpl_value *out)
{
    if (npos) return tpl_vm_error(vm, TPL_ERR_TYPE, "wrong number of arguments (given %d, expected 0) (ArgumentError)", npos);
    tpl_value p[4];
    aseq_parts(self, p);
    *out = p[name[0] == 'b' ? 0 : name[0] == 'e' && n == 3 ? 1 : name[0] == 's' ? 2 : 3];
    return 0;
}

/* Range#step with a block and no step: by 1 */
static __attribute__((noinline)) int range_step_one(tpl_vm *vm, tpl_value self, const char *name, size_t n,
                                                    const tpl_value *kwn, tpl_value *kwv, int nkw, tpl_value *out)
{
    tpl_value one = tpl_v_int(1);
    return tpl_rb_send(vm, self, name, n, &one, 1, kwn, kwv, nkw, out);   /* (with a block: not lazy_args) */
}

/* An Enumerator maker given keywords and no block */
static __attribute__((noinline)) int enum_maker_kw(tpl_vm *vm, tpl_value self, const char *name, size_t n, tpl_value *args,
                                                   int npos, const tpl_value *kwn, tpl_value *kwv, int nkw, tpl_value *out)
{
    /* each_line(chomp: true) without a block: an Enumerator of its lines; other keywords Ruby's
     * Enumerator keeps until it iterates (then an ArgumentError), which tpl does not make */
    bool chomp_only = n == 9 && memcmp(name, "each_line", 9) == 0;
    for (int i = 0; i < nkw && chomp_only; i++)
        chomp_only = kwn[i].type == TPL_T_STR && kwn[i].len == 5 && memcmp(kwn[i].u.s, "chomp", 5) == 0;
    /* the makers of a fixed arity count the keywords as one more argument (a Hash) before any Enumerator */
    static const char *const fixed[] = { "0each", "0map", "0collect", "0reverse_each", "0filter_map", "0each_pair",
        "0each_index", "0each_key", "0each_value", "0transform_values", "0times", "0each_char", "0each_byte",
        "0each_codepoint", "1each_slice", "1each_cons", "1upto", "1downto", NULL };
    for (int i = 0; fixed[i]; i++)
        if (strlen(fixed[i] + 1) == n && memcmp(fixed[i] + 1, name, n) == 0 && npos + 1 != fixed[i][0] - '0')
            return tpl_vm_error(vm, TPL_ERR_TYPE, "wrong number of arguments (given %d, expected %c) (ArgumentError)", npos + 1, fixed[i][0]);
    if (!chomp_only)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: %.*s with keywords and no block (Ruby answers an Enumerator that raises when it iterates)", (int)n, name);
    tpl_value r;
    if (rb_send_guarded(vm, self, name, n, args, npos, kwn, kwv, nkw, &r) < 0) return -1;
    if (r.type != TPL_T_LIST) { *out = r; return 0; }
    return enum_wrap(vm, self, name, n, args, npos, r.u.list, kwn, kwv, nkw, out);
}

static int rb_send_body(tpl_vm *vm, tpl_value self, const char *name, size_t n, tpl_value *args, int npos,
                        const tpl_value *kwn, tpl_value *kwv, int nkw, tpl_value *out)
{
    bool blk = tpl_vm_block(vm).pc != 0;
    const char *not_own = not_own_method(self, name, n);
    if (not_own) return no_method_raise(vm, self, not_own, name, n);
    if (tpl_is_aseq_rb(self) && nkw == 0 && ((n == 5 && memcmp(name, "begin", 5) == 0) || (n == 3 && memcmp(name, "end", 3) == 0) ||
                                             (n == 4 && memcmp(name, "step", 4) == 0) || (n == 12 && memcmp(name, "exclude_end?", 12) == 0))) {
        return aseq_accessor(vm, self, name, n, npos, out);
    }
    if (npos == 0 && nkw == 0 && n == 4 && memcmp(name, "step", 4) == 0 && is_range(self)) {
        /* range_step without a step steps by 1 (with a block: each item; without: an Enumerator whose
         * inspect names no step, which tpl does not make) */
        if (!blk) return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: Range#step without a step or a block");
        return range_step_one(vm, self, name, n, kwn, kwv, nkw, out);
    }
    if (tpl_is_enum_rb(self) && nkw == 0 && !blk) {
        int rc = enum_method(vm, self, name, n, npos, out);
        if (rc <= 0) return rc;
    }
    if (!blk && nkw == 0 && (self.type == TPL_T_LIST || self.type == TPL_T_MAP) && !(self.flags & TPL_F_RANGE_RB) &&
        enum_blockful(name, n, npos)) {   /* xs.select, xs.each_with_object([]): an Enumerator */
        tpl_list *l;
        if (enum_blockful_items(vm, self, name, n, args, &l) < 0) return -1;
        return enum_wrap(vm, self, name, n, args, npos, l, NULL, NULL, 0, out);
    }
    if (blk && nkw == 0 && npos <= 1 && tpl_is_enum_rb(self)) {
        const tpl_value *x = self.u.list->items + self.u.list->len;
        bool by_index = enum_blockful(x[1].u.s, x[1].len, (int)x[2].u.list->len);
        /* each with a block on an Enumerator of select, group_by, ...: the method itself with the block */
        if (by_index && npos == 0 && n == 4 && memcmp(name, "each", 4) == 0)
            return tpl_rb_send(vm, x[0], x[1].u.s, x[1].len, x[2].u.list->items, (int)x[2].u.list->len, NULL, NULL, 0, out);
        if (npos == 1 && n == 11 && memcmp(name, "with_object", 11) == 0) {
            /* Enumerator#with_object(memo) { |x, memo| }: each value the Enumerator yields with memo; answers memo */
            tpl_list *l;
            if (enum_live(vm, self, &l) < 0) return -1;
            tpl_rb_block b = tpl_vm_block(vm);
            uint32_t len = l->len;
            for (uint32_t i = 0; i < len; i++) {
                tpl_value ya[2] = { l->items[i], args[0] }, r;
                int yr = tpl_rb_yield(vm, &b, ya, 2, &r);
                if (yr < 0) return -1;
                if (yr > 0) { *out = r; return 0; }
            }
            *out = args[0];
            return 0;
        }
        /* with_index(off) / each_with_index with a block: the method on the block's values */
        by_index = by_index || (x[1].len == 10 && memcmp(x[1].u.s, "filter_map", 10) == 0);
        if (by_index && ((n == 10 && memcmp(name, "with_index", 10) == 0) || (npos == 0 && n == 15 && memcmp(name, "each_with_index", 15) == 0))) {
            int64_t off = 0;
            if (npos && args[0].type != TPL_T_NONE) {
                if (args[0].type != TPL_T_INT) return type_error(vm, TPL_VT_INT, args[0]);
                off = args[0].u.i;
            }
            return enum_by_index(vm, self, off, out);
        }
    }
    if (!blk && npos == 0 && nkw == 0 && bang_enum(self, name, n))
        return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: %.*s without a block (Ruby answers an Enumerator "
                            "that changes the receiver as it iterates)", (int)n, name);
    if (!blk && nkw && !(n == 4 && memcmp(name, "step", 4) == 0) && enum_maker(self, name, n))
        return enum_maker_kw(vm, self, name, n, args, npos, kwn, kwv, nkw, out);
    if (blk || (nkw && !(n == 4 && memcmp(name, "step", 4) == 0)) || !enum_maker(self, name, n)) {   /* (step(by: 2)) */
        int rc = rb_send_guarded(vm, self, name, n, args, npos, kwn, kwv, nkw, out);
        /* each with a block on an Enumerator of an each: what that each answers (its receiver) */
        if (rc == 0 && blk && tpl_is_enum_rb(self) && out->type == TPL_T_LIST && out->u.list == self.u.list) {
            tpl_value *x = self.u.list->items + self.u.list->len;
            bool mapping = (x[1].len == 3 && memcmp(x[1].u.s, "map", 3) == 0) || (x[1].len == 7 && memcmp(x[1].u.s, "collect", 7) == 0) ||
                           (x[1].len == 10 && (memcmp(x[1].u.s, "filter_map", 10) == 0 || memcmp(x[1].u.s, "with_index", 10) == 0));
            if (mapping) return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: each with a block on an Enumerator of %.*s", (int)x[1].len, x[1].u.s);
            /* (ArithmeticSequence#each answers itself, a Generator's each its block's value: nil) */
            *out = tpl_is_aseq_rb(self) ? self : enum_generator(x) ? tpl_v_none() : x[0];
        }
        return rc;
    }
    if (rb_send_guarded(vm, self, name, n, args, npos, kwn, kwv, nkw, out) < 0) return -1;
    if (out->type != TPL_T_LIST || (out->flags & (TPL_F_RANGE_RB | TPL_F_MATCH_RB))) return 0;
    return enum_wrap(vm, self, name, n, args, npos, out->u.list, kwn, kwv, nkw, out);
}

static int rb_send_guarded(tpl_vm *vm, tpl_value self, const char *name, size_t n, tpl_value *args, int npos,
                           const tpl_value *kwn, tpl_value *kwv, int nkw, tpl_value *out)
{
    /* (apply) spreads its arguments into a call of the method named, which guards */
    bool guard = is_mut(self) && !(n == 7 && memcmp(name, "(apply)", 7) == 0);
    for (int i = 0; i < npos && !guard; i++) guard = is_mut(args[i]);
    if (!guard) return rb_send_impl(vm, self, name, n, args, npos, kwn, kwv, nkw, out);
    tpl_value recv = self;
    void *snap = NULL;
    if (is_mut(self) && tpl_vm_block(vm).pc && !bang_name(name, n)) {
        if (self.type == TPL_T_LIST) {
            tpl_list *l = tpl_arena_alloc(A(vm), sizeof *l);
            if (!l) return oom(vm);
            *l = *self.u.list;
            l->cap = l->len;
            recv.u.list = l;
            snap = l;
        } else { /* the entries as they are; looked up by a scan (the index may come to name later ones) */
            tpl_map *m = tpl_arena_alloc(A(vm), sizeof *m);
            if (!m) return oom(vm);
            *m = *self.u.map;
            m->cap = m->len;
            m->idx_cap = 0;
            m->idx = NULL;
            recv.u.map = m;
            snap = m;
        }
        recv.flags &= (uint8_t)~TPL_F_MUT_RB;
    }
    if (rb_send_impl(vm, recv, name, n, args, npos, kwn, kwv, nkw, out) < 0) return -1;
    if (out->type != TPL_T_LIST && out->type != TPL_T_MAP) return 0;
    if (snap && out->u.p == snap) { *out = self; return 0; }
    if (snap && tpl_is_enum_rb(*out) && out->u.list->items[out->u.list->len].u.p == snap) {
        /* an Enumerator slice_when / chunk_while made: over self, which may change; the items its runs
         * were taken from (recv, self's entries then) as its argument list (enum_live compares them) */
        tpl_value *x = out->u.list->items + out->u.list->len;
        tpl_list *al = new_list(vm, 1);
        if (!al) return oom(vm);
        al->items[al->len++] = recv;
        x[0] = self;
        x[2] = tpl_v_list(al);
    }
    if ((answers_self(name, n) || bang_name(name, n)) && out->type == self.type && out->u.p == self.u.p) return 0;
    if (n == 5 && memcmp(name, "tally", 5) == 0 && npos == 1 && out->u.p == args[0].u.p) return 0;   /* (its Hash argument) */
    bool shared = is_mut(self) && shares(*out, self);
    for (int i = 0; i < npos && !shared; i++) shared = is_mut(args[i]) && shares(*out, args[i]);
    if (shared) {
        uint8_t keep = out->flags & TPL_F_FROZEN_CT_RB;
        if (rb_copy_mut(vm, *out, out) < 0) return -1;
        out->flags |= keep;
    }
    return 0;
}

static int op_error(tpl_vm *vm, const char *op, tpl_value a, tpl_value b);

/* The operators of Integer/Float (+ - * / % ** -@ and the comparisons), of String (+ * and the
 * comparisons) and Object (== != !) as methods: for send(:+, 1), public_send and respond_to?, where
 * the VM's operator opcodes are not reachable. 0 answered, -1 error, 1 not one of them. */
static int operator_method(tpl_vm *vm, tpl_value self, const char *name, size_t n, tpl_value *args, int npos, tpl_value *out)
{
#define IS(lit) (n == sizeof lit - 1 && memcmp(name, lit, sizeof lit - 1) == 0)
    bool num = plain_num(self) && self.type != TPL_T_BOOL;
    bool str = self.type == TPL_T_STR && !(self.flags & (TPL_F_REGEX_RB | TPL_F_CLASS_RB | TPL_F_SYMBOL));
    if (npos == 0) {
        if (IS("!")) { *out = tpl_v_bool(!tpl_truthy_rb(self)); return 0; }
        if (num && IS("-@")) {
            if (self.type == TPL_T_FLOAT) { *out = tpl_v_float(-self.u.f); return 0; }
            if (self.type == TPL_T_BIGINT) return tpl_big_neg(vm, self, out);
            if (self.u.i == INT64_MIN) return tpl_big_binop(vm, TPL_OP_SUB, tpl_v_int(0), self, out);
            *out = tpl_v_int(-self.u.i);
            return 0;
        }
        return 1;
    }
    if (npos != 1) return 1;
    tpl_value b = args[0];
    if (IS("==") || IS("!=")) {
        int eq = rb_equal_rec(self, b, tpl_vm_arena(vm)->fuel);
        if (eq == -2) return rb_deep_error(vm);
        if (eq < 0) return tpl_vm_nomem(vm);
        *out = tpl_v_bool(IS("==") ? eq == 1 : eq != 1);
        return 0;
    }
    if ((num || str) && (IS("<") || IS("<=") || IS(">") || IS(">="))) {
        if (tpl_rb_compare_check(vm, name, self, b, out) < 0) return -1;
        bool ok = true;
        int c = rb_cmp(self, b, &ok, NULL);
        if (!ok) return cmp_fail(vm, self, b);
        *out = tpl_v_bool(IS("<") ? c < 0 : IS("<=") ? c <= 0 : IS(">") ? c > 0 : c >= 0);
        return 0;
    }
    int op = IS("+") ? '+' : IS("-") ? '-' : IS("*") ? '*' : IS("/") ? '/' : IS("%") ? '%' : IS("**") ? 'p' : 0;
    if (!op || !(num || str || is_array(self))) return 1;
    int h = tpl_rb_arith(vm, op, self, b, out);
    if (h != 0) return h < 0 ? -1 : 0;
    if (!num) {   /* what the VM's operators do: String + String, Array + Array, String/Array * n */
        if (op == '+' && str) {
            tpl_sb sb;
            tpl_sb_init(&sb, A(vm));
            tpl_sb_put(&sb, self.u.s, self.len);
            tpl_sb_put(&sb, b.u.s, b.len);
            if (sb.failed) return oom(vm);
            *out = tpl_sb_value(&sb);
            return 0;
        }
        if (op == '+') return tpl_vm_concat_list(vm, self.u.list, b.u.list->items, b.u.list->len, out);
        uint64_t len = str ? self.len : self.u.list->len, k = (uint64_t)b.u.i;
        if (len == 0) k = 0;   /* (nothing to copy: "".send(:*, 10**18) looped 10**18 times) */
        if (k && len > ((uint64_t)1 << 28) / k) return tpl_vm_error(vm, TPL_ERR_LIMIT, "repetition too large");
        if (str) {
            tpl_sb sb;
            tpl_sb_init(&sb, A(vm));
            for (uint64_t i = 0; i < k && !sb.failed; i++) tpl_sb_put(&sb, self.u.s, self.len);
            if (sb.failed) return oom(vm);
            *out = tpl_sb_value(&sb);
            return 0;
        }
        tpl_list *l = new_list(vm, (uint32_t)(len * k));
        if (!l) return oom(vm);
        for (uint64_t i = 0; i < k; i++) {
            mcpy_items(l->items, l->len, self.u.list->items, 0, len);
            l->len += (uint32_t)len;
        }
        *out = tpl_v_list(l);
        return 0;
    }
    if (!plain_num(b) || b.type == TPL_T_BOOL) {
        char opname[3] = { name[0], n > 1 ? name[1] : 0, 0 };
        return op_error(vm, opname, self, b);
    }
    if (self.type == TPL_T_FLOAT || b.type == TPL_T_FLOAT) {
        double x = dbl(self), y = dbl(b);
        *out = tpl_v_float(op == '+' ? x + y : op == '-' ? x - y : op == '*' ? x * y : op == '/' ? x / y : pow(x, y));
        return 0;
    }
    return tpl_big_binop(vm, op == '+' ? TPL_OP_ADD : op == '-' ? TPL_OP_SUB : op == '*' ? TPL_OP_MUL
                             : op == '/' ? TPL_OP_DIV_RB : op == '%' ? TPL_OP_MOD : TPL_OP_POW, self, b, out);
#undef IS
}

/* Whether operator_method answers `name` for self (respond_to?). */
static bool operator_known(tpl_value self, const char *name, size_t n)
{
#define IS(lit) (n == sizeof lit - 1 && memcmp(name, lit, sizeof lit - 1) == 0)
    bool num = plain_num(self) && self.type != TPL_T_BOOL;
    bool str = self.type == TPL_T_STR && !(self.flags & (TPL_F_REGEX_RB | TPL_F_CLASS_RB | TPL_F_SYMBOL));
    if (IS("==") || IS("!=") || IS("!")) return true;
    if ((num || str) && (IS("<") || IS("<=") || IS(">") || IS(">="))) return true;
    if (num && (IS("+") || IS("-") || IS("*") || IS("/") || IS("%") || IS("**") || IS("-@"))) return true;
    if (str && (IS("+") || IS("*") || IS("%"))) return true;
    if (is_array(self) && (IS("+") || IS("-") || IS("*"))) return true;
    return false;
#undef IS
}

/* A class's own methods: name / to_s / inspect (its name), class (Class), new (String.new(s = ""),
 * Array.new(n = 0, v = nil), Hash.new without a default). 0 answered, -1 error, 1 not one of them. */
static int flatten_into(tpl_vm *vm, tpl_list *dst, tpl_list *src, int64_t depth, int guard);

/* File.basename(path, suffix = nil), File.dirname, File.extname, File.join(*parts): Ruby's string rules
 * for paths ('/' only; the file system is never read). */
static int file_method(tpl_vm *vm, const char *name, size_t n, tpl_value *args, int npos, tpl_value *out)
{
#define IS(lit) (n == sizeof lit - 1 && memcmp(name, lit, sizeof lit - 1) == 0)
    if (IS("join")) {
        tpl_list *l = new_list(vm, npos < 4 ? 4 : (uint32_t)npos), *parts = new_list(vm, (uint32_t)npos + 4);
        if (!l || !parts) return oom(vm);
        for (int i = 0; i < npos; i++) l->items[i] = args[i];
        l->len = (uint32_t)npos;
        if (flatten_into(vm, parts, l, -1, 0) < 0) return -1;   /* File.join("a", ["b", "c"]) */
        tpl_sb b;
        tpl_sb_init(&b, A(vm));
        for (uint32_t i = 0; i < parts->len; i++) {
            tpl_value p = parts->items[i];
            if (p.type != TPL_T_STR || (p.flags & (TPL_F_CLASS_RB | TPL_F_REGEX_RB))) return type_error(vm, TPL_VT_STR, p);
            const char *ps = p.u.s;
            size_t pl = p.len;
            if (i) {
                bool lend = b.len && b.p[b.len - 1] == '/';
                if (lend) { while (pl && *ps == '/') { ps++; pl--; } }
                else if (!(pl && *ps == '/')) tpl_sb_put(&b, "/", 1);
            }
            tpl_sb_put(&b, ps, pl);
        }
        if (b.failed) return oom(vm);
        *out = tpl_sb_value(&b);
        return 0;
    }
    static const char *const fs[] = { "exist?", "exists?", "file?", "directory?", "readable?", "writable?",
        "executable?", "executable_real?", "readable_real?", "writable_real?", "world_readable?", "world_writable?",
        "size", "size?", "zero?", "empty?", "symlink?", "pipe?", "socket?", "blockdev?", "chardev?", "owned?",
        "grpowned?", "setuid?", "setgid?", "sticky?", "identical?", "read", "readlines", "foreach", "open", "new",
        "write", "binread", "binwrite", "readlink", "expand_path", "absolute_path", "realpath", "realdirpath",
        "mtime", "atime", "ctime", "birthtime", "stat", "lstat", "ftype", "delete", "unlink", "rename", "chmod",
        "chown", "lchmod", "lchown", "link", "symlink", "truncate", "utime", "mkfifo", "popen", "sysopen", NULL };
    for (int i = 0; fs[i]; i++)
        if (n == strlen(fs[i]) && memcmp(name, fs[i], n) == 0)   /* (no rescue takes it: Ruby would read the disk) */
            return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: File.%.*s (a tpl template reads no files, "
                                "environment or processes: pass what it needs in the state)", (int)n, name);
    if (!(IS("basename") || IS("dirname") || IS("extname") || IS("split"))) return 1;
    if (IS("split")) {   /* File.split(path): [dirname, basename] */
        if (npos != 1) return tpl_vm_error(vm, TPL_ERR_VALUE, "wrong number of arguments (given %d, expected 1) (ArgumentError)", npos);
        tpl_list *l = new_list(vm, 2);
        if (!l) return oom(vm);
        if (file_method(vm, "dirname", 7, args, 1, &l->items[0]) < 0 || file_method(vm, "basename", 8, args, 1, &l->items[1]) < 0) return -1;
        l->len = 2;
        *out = tpl_v_list(l);
        out->flags = TPL_F_MUT_RB;
        return 0;
    }
    int max = IS("basename") ? 2 : 1;
    if (npos < 1 || npos > max)
        return tpl_vm_error(vm, TPL_ERR_VALUE, "wrong number of arguments (given %d, expected %s) (ArgumentError)", npos, max == 2 ? "1..2" : "1");
    for (int i = 0; i < npos; i++)
        if (args[i].type != TPL_T_STR || (args[i].flags & (TPL_F_CLASS_RB | TPL_F_REGEX_RB))) return type_error(vm, TPL_VT_STR, args[i]);
    const char *s = args[0].u.s;
    size_t len = args[0].len, end = len;
    while (end > 1 && s[end - 1] == '/') end--;           /* trailing slashes (the root stays) */
    size_t start = end;
    while (start > 0 && s[start - 1] != '/') start--;     /* the last component: [start, end) */
    if (IS("dirname")) {
        if (end == 1 && s[0] == '/') { *out = tpl_v_str("/", 1); return 0; }
        if (start == 0) { *out = tpl_v_str(".", 1); return 0; }
        size_t d = start;
        while (d > 1 && s[d - 1] == '/') d--;
        *out = tpl_v_str(s, d);
        return 0;
    }
    if (len && end == 1 && s[0] == '/') { *out = tpl_v_str("/", 1); return 0; }
    const char *bn = s + start;
    size_t bl = end - start;
    if (IS("extname")) {
        size_t k = 0;
        while (k < bl && bn[k] == '.') k++;
        size_t dot = bl;
        for (size_t i = k; i < bl; i++) if (bn[i] == '.') dot = i;
        *out = dot == bl ? tpl_v_str("", 0) : tpl_v_str(bn + dot, bl - dot);
        return 0;
    }
    if (npos == 2) {
        tpl_value sfx = args[1];
        if (sfx.len == 2 && memcmp(sfx.u.s, ".*", 2) == 0) {
            size_t dot = 0;
            for (size_t i = 1; i < bl; i++) if (bn[i] == '.') dot = i;
            if (dot) bl = dot;
        } else if (sfx.len < bl && memcmp(bn + bl - sfx.len, sfx.u.s, sfx.len) == 0) {
            bl -= sfx.len;
        }
    }
    *out = tpl_v_str(bn, bl);
    return 0;
#undef IS
}

/* ERB::Util.html_escape / .h (CGI.escapeHTML: & < > " ' as &amp; &lt; &gt; &quot; &#39;) and .url_encode / .u
 * (every byte but A-Z a-z 0-9 _ . - ~ as %XX), of the argument's to_s; 1: no such method. */
static int want_str(tpl_vm *vm, tpl_value v);

static int erb_util_method(tpl_vm *vm, const char *name, size_t n, tpl_value *args, int npos, tpl_value *out)
{
    bool html = (n == 11 && memcmp(name, "html_escape", 11) == 0) || (n == 1 && name[0] == 'h');
    bool url = (n == 10 && memcmp(name, "url_encode", 10) == 0) || (n == 1 && name[0] == 'u');
    if (!html && !url) return 1;
    if (npos != 1)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "wrong number of arguments (given %d, expected 1) (ArgumentError)", npos);
    tpl_value s;
    if (r_any_to_s(vm, args, &s) < 0) return -1;
    if (s.type != TPL_T_STR) return want_str(vm, s);
    tpl_sb b;
    tpl_sb_init(&b, A(vm));
    for (uint32_t i = 0; i < s.len; i++) {
        unsigned char c = (unsigned char)s.u.s[i];
        if (html) {
            switch (c) {
            case '&': tpl_sb_puts(&b, "&amp;"); break;
            case '<': tpl_sb_puts(&b, "&lt;"); break;
            case '>': tpl_sb_puts(&b, "&gt;"); break;
            case '"': tpl_sb_puts(&b, "&quot;"); break;
            case '\'': tpl_sb_puts(&b, "&#39;"); break;
            default: tpl_sb_put(&b, (const char *)&c, 1);
            }
        } else if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
                   c == '-' || c == '~') {
            tpl_sb_put(&b, (const char *)&c, 1);
        } else {
            tpl_sb_printf(&b, "%%%02X", c);
        }
    }
    if (b.failed) return oom(vm);
    *out = tpl_sb_value(&b);
    return 0;
}

/* JSON text of v as Ruby's json 2.6 writes it with State jo (runtime/print.c tpl_rb_json_with), or its error. */
static int rb_json_value(tpl_vm *vm, tpl_value v, const tpl_rb_json_opts *jo, tpl_value *out)
{
    tpl_sb b;
    tpl_sb_init(&b, A(vm));
    double bad = 0;
    int r = tpl_rb_json_with(&b, v, jo, &bad);
    if (r == 1)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "%d: %s not allowed in JSON (JSON::GeneratorError)", isnan(bad) ? 1003 : 1000,
                            isnan(bad) ? "NaN" : bad > 0 ? "Infinity" : "-Infinity");
    if (r == 2)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "nesting of %lld is too deep (JSON::NestingError)", (long long)jo->max_nesting);
    if (r == 3) return -1;
    if (r == 5)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: an Enumerator's to_json (Ruby writes its address)");
    if (r == 4)
        return tpl_vm_error(vm, TPL_ERR_LIMIT, "JSON nesting past %d levels (tpl's limit)", TPL_RB_JSON_DEPTH);
    if (b.failed) return oom(vm);
    *out = tpl_sb_value(&b);
    return 0;
}

/* One generator option (json 2.6's State#configure) into jo: the strings, allow_nan, max_nesting; options
 * that change the text otherwise (ascii_only, escape_slash, depth) are refused when set; others are ignored,
 * as configure ignores them. */
static int json_option(tpl_vm *vm, tpl_value k, tpl_value v, tpl_rb_json_opts *jo)
{
#define KEY(lit) (k.len == sizeof lit - 1 && memcmp(k.u.s, lit, sizeof lit - 1) == 0)
    tpl_value *str = KEY("indent") ? &jo->indent : KEY("space") ? &jo->space : KEY("space_before") ? &jo->space_before
                   : KEY("object_nl") ? &jo->object_nl : KEY("array_nl") ? &jo->array_nl : NULL;
    bool truthy = v.type != TPL_T_NONE && !(v.type == TPL_T_BOOL && !v.u.i);
    if (str) {
        if (!truthy) return 0;   /* configure skips a nil or false option */
        if (v.type != TPL_T_STR || (v.flags & (TPL_F_CLASS_RB | TPL_F_REGEX_RB)))
            return tpl_vm_error(vm, TPL_ERR_TYPE, "wrong argument type %s (expected String) (TypeError)", tpl_rb_class_name(v));
        *str = v;
        return 0;
    }
    if (KEY("allow_nan")) { jo->allow_nan = truthy; return 0; }
    if (KEY("max_nesting")) {
        if (!truthy) { jo->max_nesting = 0; return 0; }
        if (v.type != TPL_T_INT)
            return tpl_vm_error(vm, TPL_ERR_TYPE, "wrong argument type %s (expected Integer) (TypeError)", tpl_rb_class_name(v));
        jo->max_nesting = v.u.i;
        return 0;
    }
    if ((KEY("ascii_only") || KEY("escape_slash") || KEY("script_safe")) && truthy)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: JSON generator option %.*s", (int)k.len, k.u.s);
    if (KEY("depth") && !(v.type == TPL_T_INT && v.u.i == 0))
        return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: JSON generator option depth");
    return 0;
#undef KEY
}

/* A State from opts (nil, or a Hash whose Symbol keys are options: configure reads Symbols only) and keyword
 * arguments, over JSON.generate's defaults (pretty: pretty_generate's). */
static int json_state(tpl_vm *vm, tpl_value opts, const tpl_value *kwn, const tpl_value *kwv, int nkw, bool pretty,
                      bool to_json, tpl_rb_json_opts *jo)
{
    tpl_rb_json_defaults(jo, pretty);
    if (opts.type == TPL_T_MAP) {
        const tpl_map *m = opts.u.map;
        for (uint32_t i = 0; i < m->len; i++)
            if (m->e[i].key.type == TPL_T_STR && (m->e[i].key.flags & TPL_F_SYMBOL) &&
                json_option(vm, m->e[i].key, m->e[i].val, jo) < 0)
                return -1;
    } else if (opts.type != TPL_T_NONE && opts.type != TPL_T_UNSET && !to_json) {
        /* JSON.generate's State.new(opts): to_hash, then to_h (an Array of pairs: not taken here), else TypeError */
        if (is_array(opts))
            return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: JSON generator options as an Array of pairs");
        return tpl_vm_error(vm, TPL_ERR_TYPE, "can't convert %s into Hash (TypeError)", tpl_rb_class_name(opts));
    }   /* (to_json's State.from_state takes a Hash; anything else is the default State) */
    for (int i = 0; i < nkw; i++)
        if (json_option(vm, kwn[i], kwv[i], jo) < 0) return -1;
    return 0;
}

/* JSON.generate(obj, opts = nil) / JSON.dump(obj) / JSON.pretty_generate(obj, opts = nil): JSON's module functions
 * (loaded in Puppet, Chef and the oracle's view); opts as a Hash or keywords. */
static int json_method(tpl_vm *vm, const char *name, size_t n, tpl_value *args, int npos, const tpl_value *kwn,
                       const tpl_value *kwv, int nkw, tpl_value *out)
{
    bool pretty = n == 15 && memcmp(name, "pretty_generate", 15) == 0;
    bool dump = n == 4 && memcmp(name, "dump", 4) == 0;
    if (!pretty && !(n == 8 && memcmp(name, "generate", 8) == 0) && !dump) return 1;
    if (npos < 1 || npos > 2 || (dump && (npos != 1 || nkw)))
        return tpl_vm_error(vm, TPL_ERR_TYPE, "JSON.%.*s with %s is not supported (only the object%s)", (int)n, name,
                            npos ? "these arguments" : "no argument", dump ? "" : " and generator options");
    if (npos == 2 && nkw)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "wrong number of arguments (given 3, expected 1..2) (ArgumentError)");
    tpl_rb_json_opts jo;
    if (json_state(vm, npos == 2 ? args[1] : tpl_v_none(), kwn, kwv, nkw, pretty, false, &jo) < 0) return -1;
    return rb_json_value(vm, args[0], &jo, out);
}

/* Object#to_json(state = nil): a State from a Hash or keywords, as JSON.generate's */
int r_any_to_json(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_rb_json_opts jo;
    const tpl_map *kw = a[2].type == TPL_T_MAP ? a[2].u.map : NULL;
    tpl_value kwn[16], kwv[16];
    int nkw = 0;
    for (uint32_t i = 0; kw && i < kw->len && nkw < 16; i++, nkw++) { kwn[nkw] = kw->e[i].key; kwv[nkw] = kw->e[i].val; }
    if (kw && kw->len && a[1].type != TPL_T_UNSET)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "wrong number of arguments (given 2, expected 0..1) (ArgumentError)");
    if (json_state(vm, a[1], kwn, kwv, nkw, false, true, &jo) < 0) return -1;
    return rb_json_value(vm, a[0], &jo, out);
}

/* ------------------------------------------------------------------ to_yaml (issue 15) */

/* Object#to_yaml after `require 'yaml'`: Psych 4's YAMLTree over libyaml's emitter, as Ruby 3.1 writes it, for
 * Hash, Array, String, Symbol, Integer, Float, true, false and nil. What tpl cannot write exactly is an error
 * naming it: a line libyaml would fold (a scalar with a space past column 80), a string Psych tags or writes in
 * a form kept out (`<<`, a multi-line one ending in spaces or blank lines, a digit-led one that may be a
 * timestamp), a Hash or Array met twice (Psych's &1 anchors), a nil or collection key, other objects. */
typedef struct {
    tpl_vm *vm;
    tpl_sb *b;
    const void *seen[256];   /* the collections on the current path and written so far (anchors) */
    int nseen, depth;
} yaml_w;

enum { Y_PLAIN, Y_SINGLE, Y_DOUBLE, Y_LITERAL };
/* A Hash the template did not build (it keys by ==, not eql?): the reference's state Hashes are a Hash subclass,
 * which Psych writes with a !ruby/hash: tag */
#define Y_STATE_HASH "a Hash from the render state (a Hash subclass in the reference, which Psych tags)"

static int yaml_refuse(yaml_w *w, const char *what)
{
    return tpl_vm_error(w->vm, TPL_ERR_SYNTAX, "unsupported Ruby construct: to_yaml of %s (tpl writes Psych's plain, "
                        "quoted and literal forms only where they are exact)", what);
}

/* libyaml's IS_PRINTABLE (its unicode mode, as Psych sets it): no character past U+FFFF (an emoji is escaped) */
static bool yaml_printable(uint32_t c)
{
    return c == 0x0A || (c >= 0x20 && c <= 0x7E) || c == 0x85 || (c >= 0xA0 && c <= 0xD7FF) ||
           (c >= 0xE000 && c <= 0xFFFD && c != 0xFEFF);
}

static bool y_digit(char c) { return c >= '0' && c <= '9'; }

/* How many of s[i..n) are ASCII digits (at most max) */
static size_t y_digits(const char *s, size_t n, size_t i, size_t max)
{
    size_t k = 0;
    while (i + k < n && k < max && y_digit(s[i + k])) k++;
    return k;
}

/* Psych's ScalarScanner#tokenize of a string that begins with an ASCII digit: true when it reads as a String
 * (not an Integer, Float, Date or sexagesimal number); -1 when tpl cannot be sure (a timestamp). */
static int yaml_digit_string(const char *s, size_t n)
{
    /* TIME: -?\d{4}-\d{1,2}-\d{1,2}(T|\s+)\d{1,2}:\d\d:\d\d...: refused rather than parsed */
    if (n >= 10 && y_digits(s, n, 0, 4) == 4 && s[4] == '-' && memchr(s, ':', n)) return -1;
    /* Date: \d{4}-(1[012]|0\d|\d)-([12]\d|3[01]|0\d|\d), a valid Gregorian date (else strptime fails: a String) */
    if (n >= 8 && n <= 10 && y_digits(s, n, 0, 4) == 4 && s[4] == '-') {
        size_t m = y_digits(s, n, 5, 2);
        if (m && 5 + m < n && s[5 + m] == '-') {
            size_t d = y_digits(s, n, 6 + m, 2);
            if (d && 6 + m + d == n) {
                int yy = (s[0] - '0') * 1000 + (s[1] - '0') * 100 + (s[2] - '0') * 10 + (s[3] - '0');
                int mo = m == 1 ? s[5] - '0' : (s[5] - '0') * 10 + (s[6] - '0');
                int dd = d == 1 ? s[6 + m] - '0' : (s[6 + m] - '0') * 10 + (s[7 + m] - '0');
                bool mo_ok = m == 1 || s[5] == '0' || (s[5] == '1' && s[6] <= '2');
                bool dd_ok = d == 1 || s[6 + m] == '0' || s[6 + m] == '1' || s[6 + m] == '2' || (s[6 + m] == '3' && s[7 + m] <= '1');
                if (mo_ok && dd_ok) {
                    static const int mdays[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
                    bool leap = (yy % 4 == 0 && yy % 100 != 0) || yy % 400 == 0;
                    bool valid = mo >= 1 && mo <= 12 && dd >= 1 && dd <= mdays[mo - 1] + (mo == 2 && leap);
                    return valid ? 0 : 1;
                }
            }
        }
    }
    /* sexagesimal: [0-9][0-9_]*(:[0-5]?[0-9]){1,2} and the same with \.[0-9_]* */
    {
        size_t i = 1;
        while (i < n && (y_digit(s[i]) || s[i] == '_')) i++;
        int groups = 0;
        while (i < n && s[i] == ':' && groups < 3) {
            size_t k = y_digits(s, n, i + 1, 2);
            if (k == 0 || (k == 2 && s[i + 1] > '5')) break;
            i += 1 + k;
            groups++;
        }
        if (groups >= 1 && groups <= 2) {
            if (i == n) return 0;
            if (s[i] == '.') {
                size_t j = i + 1;
                while (j < n && (y_digit(s[j]) || s[j] == '_')) j++;
                if (j == n) return 0;
            }
        }
    }
    /* FLOAT: [0-9][0-9_,]*\.[0-9]*([eE][-+][0-9]+)? */
    {
        size_t i = 1;
        while (i < n && (y_digit(s[i]) || s[i] == '_' || s[i] == ',')) i++;
        if (i < n && s[i] == '.') {
            i++;
            while (i < n && y_digit(s[i])) i++;
            if (i == n) return 0;
            if (i + 2 < n && (s[i] == 'e' || s[i] == 'E') && (s[i + 1] == '-' || s[i + 1] == '+') && y_digits(s, n, i + 2, n) == n - i - 2)
                return 0;
        }
    }
    /* INTEGER: 0b[0-1_,]+ | 0[0-7_,]+ | 0 | [1-9]([0-9]|,[0-9]|_[0-9])* | 0x[0-9a-fA-F_,]+ (an Integer() of only
     * separators raises in Psych: refused) */
    if (s[0] == '0' && n > 2 && (s[1] == 'b' || s[1] == 'x')) {
        bool any = false, ok = true;
        for (size_t i = 2; i < n && ok; i++) {
            char c = s[i];
            bool dig = s[1] == 'b' ? (c == '0' || c == '1') : (y_digit(c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f'));
            any |= dig;
            ok = dig || c == '_' || c == ',';
        }
        if (ok) return any ? 0 : -1;
    } else if (s[0] == '0') {
        bool ok = n == 1, any = false;
        for (size_t i = 1; i < n; i++) {
            ok = s[i] == '_' || s[i] == ',' || (s[i] >= '0' && s[i] <= '7');
            any |= s[i] != '_' && s[i] != ',';
            if (!ok) break;
        }
        if (ok) return 0;
        (void)any;
        /* /\A0[0-7]*[89]/: quoted too */
        size_t i = 1;
        while (i < n && s[i] >= '0' && s[i] <= '7') i++;
        if (i < n && (s[i] == '8' || s[i] == '9')) return 0;
    } else {
        size_t i = 1;
        while (i < n) {
            if (y_digit(s[i])) i++;
            else if ((s[i] == ',' || s[i] == '_') && i + 1 < n && y_digit(s[i + 1])) i += 2;
            else break;
        }
        if (i == n) return 0;
    }
    return 1;
}

/* Psych's visit_String then libyaml's analysis: the style s is written in, or -1 (refused, *why set). */
static int yaml_str_style(const char *s, size_t n, bool key, const char **why)
{
    *why = "a string Psych writes in a form tpl does not";
    /* Psych: /\n(?!\Z)/ is a literal block */
    bool literal = false;
    for (size_t i = 0; i < n; i++)
        if (s[i] == '\n' && !(i + 1 == n || (i + 2 == n && s[i + 1] == '\n'))) literal = true;
    if (!literal && memchr(s, '\n', n)) return -1;   /* a trailing line break: quoted over two lines */
    if (n == 2 && s[0] == '<' && s[1] == '<') return -1;
    /* libyaml's analysis */
    bool special = false, block_ind = false, lead_space = false, trail_space = false, space_break = false,
         break_space = false, prev_space = false, prev_break = false;
    if (n >= 3 && (memcmp(s, "---", 3) == 0 || memcmp(s, "...", 3) == 0)) block_ind = true;
    size_t i = 0;
    uint32_t first = 0;
    while (i < n) {
        size_t at = i;
        uint32_t c = tpl_utf8_next(s, n, &i);
        if (at == 0) first = c;
        bool next_blank = i >= n || s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r';
        if (at == 0) {
            if (c < 0x80 && strchr("#,[]{}&*!|>'\"%@`", (int)c) && c) block_ind = true;
            if ((c == '?' || c == ':') && next_blank) block_ind = true;
            if (c == '-' && next_blank) block_ind = true;
        } else {
            if (c == ':' && next_blank) block_ind = true;   /* (",?[]{}" matter in flow context only) */
            if (c == '#' && (prev_space || prev_break)) block_ind = true;
        }
        if (!yaml_printable(c) || (c == 0xFFFD && i - at == 1)) special = true;
        if (c == '\r' || c == 0x85 || c == 0x2028 || c == 0x2029) {
            *why = "a string with a line break other than \\n";
            return -1;
        }
        if (c == '\n') {
            if (at == 0) return -1;   /* a leading break */
            if (prev_space) space_break = true;
            prev_break = true;
            prev_space = false;
        } else if (c == ' ') {
            if (at == 0) lead_space = true;
            if (i >= n) trail_space = true;
            if (prev_break) break_space = true;
            prev_space = true;
            prev_break = false;
        } else {
            prev_space = prev_break = false;
        }
    }
    if (literal) {
        /* only `|-` (no final break) and `|` (one final break) with a first line that is not indented */
        if (key || special || space_break || trail_space || lead_space || (n >= 2 && s[n - 1] == '\n' && s[n - 2] == '\n'))
            return -1;
        return Y_LITERAL;
    }
    /* Psych's choice */
    int style = Y_PLAIN;
    if (n == 1 && (s[0] == 'y' || s[0] == 'n')) style = Y_DOUBLE;
    else {
        bool word = first < 0x80 ? (first == '_' || y_digit((char)first) || ((first | 0x20) >= 'a' && (first | 0x20) <= 'z'))
                                 : false;
        if (n && first >= 0x80) {
            *why = "a string beginning with a character past ASCII";
            return -1;   /* [[:word:]] and [[:alpha:]] of Unicode: not modelled */
        }
        if (n && !word && !memchr(s, '"', n)) style = Y_DOUBLE;
        else if (n == 0) style = Y_SINGLE;
        else if (!word) {
            return -1;   /* a non-word start with a '"': libyaml's own choice */
        } else if (y_digit(s[0])) {
            int t = yaml_digit_string(s, n);
            if (t < 0) { *why = "a string that may read as a timestamp"; return -1; }
            if (t == 0) style = Y_SINGLE;
        } else if (n <= 5 && strchr("ytonfYTONF", s[0])) {
            /* ~, null, yes/true/on, no/false/off (any case) are not Strings to Psych */
            static const char *const words[] = { "null", "yes", "true", "on", "no", "false", "off", NULL };
            for (int k = 0; words[k]; k++)
                if (strlen(words[k]) == n && strncasecmp(words[k], s, n) == 0) style = Y_SINGLE;
        }
    }
    /* libyaml */
    if (style == Y_PLAIN && (lead_space || trail_space || block_ind || special || (key && n == 0))) style = Y_SINGLE;
    if (style == Y_SINGLE && (special || space_break || break_space)) style = Y_DOUBLE;
    return style;
}

/* Columns of the current line of b (characters since the last line break) */
static size_t yaml_col(const tpl_sb *b)
{
    size_t c = 0;
    for (size_t i = b->len; i > 0 && b->p[i - 1] != '\n'; i--)
        if (((unsigned char)b->p[i - 1] & 0xC0) != 0x80) c++;
    return c;
}

/* Writes string s (a key, or a value whose block content is at `indent`) */
static int yaml_str(yaml_w *w, const char *s, size_t n, bool key, int indent)
{
    const char *why;
    int style = yaml_str_style(s, n, key, &why);
    if (style < 0) return yaml_refuse(w, why);
    tpl_sb *b = w->b;
    size_t start = b->len, col = yaml_col(b);
    if (style == Y_LITERAL) {
        tpl_sb_puts(b, s[n - 1] == '\n' ? "|" : "|-");
        for (size_t i = 0; i < n;) {
            size_t e = i;
            while (e < n && s[e] != '\n') e++;
            tpl_sb_putc(b, '\n');
            if (e > i) {
                for (int k = 0; k < indent + 2; k++) tpl_sb_putc(b, ' ');
                tpl_sb_put(b, s + i, e - i);
                if (yaml_col(b) > 80 && memchr(s + i, ' ', e - i)) return yaml_refuse(w, "a line past 80 columns with spaces (libyaml folds it)");
            }
            i = e + 1;
        }
        return 0;
    }
    if (style == Y_PLAIN) tpl_sb_put(b, s, n);
    else if (style == Y_SINGLE) {
        tpl_sb_putc(b, '\'');
        for (size_t i = 0; i < n; i++) {
            if (s[i] == '\'') tpl_sb_putc(b, '\'');
            tpl_sb_putc(b, s[i]);
        }
        tpl_sb_putc(b, '\'');
    } else {
        tpl_sb_putc(b, '"');
        for (size_t i = 0; i < n;) {
            size_t at = i;
            uint32_t c = tpl_utf8_next(s, n, &i);
            if (c == 0xFFFD && i - at == 1) return yaml_refuse(w, "a string that is not UTF-8");
            static const char from[] = "\0\a\b\t\n\v\f\r\033\"\\";
            static const char to[] = "0abtnvfre\"\\";
            const char *e = c < 0x80 ? memchr(from, (int)c, sizeof from - 1) : NULL;
            if (e) { tpl_sb_putc(b, '\\'); tpl_sb_putc(b, to[e - from]); }
            else if (c == 0x85) tpl_sb_puts(b, "\\N");
            else if (c == 0xA0) tpl_sb_puts(b, "\\_");
            else if (c == 0x2028) tpl_sb_puts(b, "\\L");
            else if (c == 0x2029) tpl_sb_puts(b, "\\P");
            else if (!yaml_printable(c) || c == 0xFEFF) {
                if (c <= 0xFF) tpl_sb_printf(b, "\\x%02X", (unsigned)c);
                else if (c <= 0xFFFF) tpl_sb_printf(b, "\\u%04X", (unsigned)c);
                else tpl_sb_printf(b, "\\U%08X", (unsigned)c);
            } else tpl_sb_put(b, s + at, i - at);
        }
        tpl_sb_putc(b, '"');
    }
    if (key && b->len - start > 128) return yaml_refuse(w, "a key longer than 128 characters (a complex key)");
    if (!key && col + tpl_utf8_len(b->p + start, b->len - start) > 80 && memchr(b->p + start, ' ', b->len - start))
        return yaml_refuse(w, "a line past 80 columns with spaces (libyaml folds it)");
    return 0;
}

/* A scalar (not a Hash or an Array): its text after the indicator; nil writes nothing. */
static int yaml_scalar(yaml_w *w, tpl_value v, bool key, int indent)
{
    tpl_sb *b = w->b;
    switch (v.type) {
    case TPL_T_UNDEF: case TPL_T_UNSET: case TPL_T_NONE:
        if (key) return yaml_refuse(w, "a nil key");
        return 0;
    case TPL_T_BOOL:
        tpl_sb_puts(b, v.u.i ? "true" : "false");
        return 0;
    case TPL_T_INT: case TPL_T_BIGINT:
        tpl_rb_to_s(b, v);
        return 0;
    case TPL_T_FLOAT:
        if (isnan(v.u.f)) tpl_sb_puts(b, ".nan");
        else if (isinf(v.u.f)) tpl_sb_puts(b, v.u.f > 0 ? ".inf" : "-.inf");
        else tpl_rb_to_s(b, v);
        return 0;
    case TPL_T_STR:
        if (v.flags & (TPL_F_CLASS_RB | TPL_F_REGEX_RB)) break;
        if (v.flags & TPL_F_SYMBOL) {
            /* ":name": an identifier's symbol is plain */
            bool plain = v.len > 0 && !y_digit(v.u.s[0]);
            for (uint32_t i = 0; i < v.len && plain; i++) {
                unsigned char c = (unsigned char)v.u.s[i];
                plain = c == '_' || y_digit((char)c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') ||
                        (i + 1 == v.len && i > 0 && (c == '?' || c == '!'));
            }
            if (!plain) return yaml_refuse(w, "a Symbol that is not an identifier");
            tpl_sb_putc(b, ':');
            tpl_sb_put(b, v.u.s, v.len);
            return 0;
        }
        return yaml_str(w, v.u.s, v.len, key, indent);
    default:
        break;
    }
    return yaml_refuse(w, "an object other than Hash, Array, String, Symbol, Integer, Float, true, false and nil");
}

static bool yaml_empty_or_scalar(tpl_value v)
{
    if (v.type == TPL_T_MAP) return v.u.map->len == 0;
    if (v.type == TPL_T_LIST && !(v.flags & (TPL_F_RANGE_RB | TPL_F_MATCH_RB | TPL_F_ENUM_RB))) return v.u.list->len == 0;
    return true;
}

static int yaml_node(yaml_w *w, tpl_value v, int indent, bool inline_first);

/* v after an indicator ("---", "key:", "-"): a scalar or an empty collection on the same line, a mapping's or
 * a sequence's items below it (a sequence in a mapping at the mapping's indent, libyaml's indentless form). */
static int yaml_value(yaml_w *w, tpl_value v, int indent, bool in_map, bool in_seq)
{
    tpl_sb *b = w->b;
    if (yaml_empty_or_scalar(v)) {
        if (v.type == TPL_T_MAP) {
            if (!v.u.map->eql) return yaml_refuse(w, Y_STATE_HASH);
            tpl_sb_puts(b, " {}\n");
            return 0;
        }
        if (v.type == TPL_T_LIST) { tpl_sb_puts(b, " []\n"); return 0; }
        if (v.type == TPL_T_NONE || v.type == TPL_T_UNDEF || v.type == TPL_T_UNSET) { tpl_sb_putc(b, '\n'); return 0; }
        tpl_sb_putc(b, ' ');
        if (yaml_scalar(w, v, false, indent) < 0) return -1;
        tpl_sb_putc(b, '\n');
        return 0;
    }
    if (in_seq) {   /* "- a: 1" / "- - 1": the first item on the indicator's line */
        tpl_sb_putc(b, ' ');
        return yaml_node(w, v, indent + 2, true);
    }
    tpl_sb_putc(b, '\n');
    return yaml_node(w, v, in_map && v.type == TPL_T_LIST ? indent : indent + 2, false);
}

/* A non-empty Hash or Array in block style at `indent` (inline_first: its first line continues the current one) */
static int yaml_node(yaml_w *w, tpl_value v, int indent, bool inline_first)
{
    tpl_sb *b = w->b;
    const void *id = v.type == TPL_T_MAP ? (const void *)v.u.map : (const void *)v.u.list;
    for (int i = 0; i < w->nseen; i++)
        if (w->seen[i] == id) return yaml_refuse(w, "a Hash or Array met twice (Psych writes an alias)");
    if (w->nseen >= 256 || w->depth >= 100) return yaml_refuse(w, "a structure of more than 256 collections or 100 levels");
    if (v.type == TPL_T_MAP && !v.u.map->eql) return yaml_refuse(w, Y_STATE_HASH);
    if (!tpl_sb_charge(b, 1)) return 0;
    w->seen[w->nseen++] = id;
    w->depth++;
    uint32_t len = v.type == TPL_T_MAP ? v.u.map->len : v.u.list->len;
    for (uint32_t k = 0; k < len && !b->failed; k++) {
        if (k || !inline_first)
            for (int i = 0; i < indent; i++) tpl_sb_putc(b, ' ');
        if (v.type == TPL_T_MAP) {
            tpl_value key = v.u.map->e[k].key;
            if (!yaml_empty_or_scalar(key) || key.type == TPL_T_MAP || key.type == TPL_T_LIST)
                return yaml_refuse(w, "a Hash or Array key");
            if (yaml_scalar(w, key, true, indent) < 0) return -1;
            tpl_sb_putc(b, ':');
            if (yaml_value(w, v.u.map->e[k].val, indent, true, false) < 0) return -1;
        } else {
            tpl_sb_putc(b, '-');
            if (yaml_value(w, v.u.list->items[k], indent, false, true) < 0) return -1;
        }
    }
    w->depth--;
    return 0;
}

/* x.to_yaml (YAML.dump(x)): "---" and the document */
static int rb_yaml_value(tpl_vm *vm, tpl_value v, tpl_value *out)
{
    tpl_sb b;
    tpl_sb_init(&b, A(vm));
    yaml_w w = { .vm = vm, .b = &b };
    tpl_sb_puts(&b, "---");
    if (yaml_empty_or_scalar(v) ? yaml_value(&w, v, 0, false, false) < 0 : (tpl_sb_putc(&b, '\n'), yaml_node(&w, v, 0, false) < 0))
        return -1;
    if (b.failed) return oom(vm);
    *out = tpl_sb_value(&b);
    return 0;
}

int r_any_to_yaml(tpl_vm *vm, tpl_value *a, tpl_value *out) { return rb_yaml_value(vm, a[0], out); }

/* ------------------------------------------------------------------ Shellwords (issue 15) */

/* Shellwords.escape (shellwords.rb, Ruby 3.1): the argument's to_s; '' for an empty one; a backslash before each
 * character that is not [A-Za-z0-9_\-.,:+/@\n] (a multibyte character whole), a newline as '\n' in quotes. */
static int shell_escape(tpl_vm *vm, tpl_value v, tpl_sb *b)
{
    tpl_value s;
    if (r_any_to_s(vm, &v, &s) < 0) return -1;
    if (s.type != TPL_T_STR) return want_str(vm, s);
    if (!s.len) { tpl_sb_puts(b, "''"); return 0; }
    for (uint32_t i = 0; i < s.len; i++) {
        unsigned char c = (unsigned char)s.u.s[i];
        if (c == '\n') tpl_sb_puts(b, "'\n'");
        else if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
                 c == '.' || c == ',' || c == ':' || c == '+' || c == '/' || c == '@' || (c >= 0x80 && c < 0xC0)) {
            tpl_sb_putc(b, (char)c);
        } else {
            tpl_sb_putc(b, '\\');
            tpl_sb_putc(b, (char)c);
        }
    }
    return 0;
}

static int shell_escape_value(tpl_vm *vm, tpl_value v, tpl_value *out)
{
    tpl_sb b;
    tpl_sb_init(&b, A(vm));
    if (shell_escape(vm, v, &b) < 0) return -1;
    if (b.failed) return oom(vm);
    *out = tpl_sb_value(&b);
    return 0;
}

/* Shellwords.join: each item escaped, joined by a space (an Array; another object's map, as Ruby's) */
static int shell_join(tpl_vm *vm, tpl_value v, tpl_value *out)
{
    if (!is_array(v)) return no_method(vm, v, "map", 3);
    tpl_sb b;
    tpl_sb_init(&b, A(vm));
    for (uint32_t i = 0; i < v.u.list->len; i++) {
        if (i) tpl_sb_putc(&b, ' ');
        if (shell_escape(vm, v.u.list->items[i], &b) < 0) return -1;
    }
    if (b.failed) return oom(vm);
    *out = tpl_sb_value(&b);
    return 0;
}

static bool sh_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }

/* Shellwords.split (shellwords.rb's scan): words of bare text, '...' (kept as is), "..." (a backslash before
 * $ ` " \ or a newline dropped) and \x (x kept; a backslash before a newline or at the end stays); a word ends at
 * whitespace or the end; an unmatched quote is ArgumentError. */
static int shell_split(tpl_vm *vm, tpl_value line, tpl_value *out)
{
    if (line.type != TPL_T_STR || (line.flags & (TPL_F_CLASS_RB | TPL_F_REGEX_RB))) return no_method(vm, line, "scan", 4);
    const char *s = line.u.s;
    size_t n = line.len, i = 0;
    tpl_list *words = new_list(vm, 4);
    if (!words) return oom(vm);
    tpl_sb f;
    tpl_sb_init(&f, A(vm));
    bool open = false;   /* a field is being built */
    for (;;) {
        while (i < n && sh_space((unsigned char)s[i])) i++;
        if (i >= n) break;
        char c = s[i];
        if (c == '\'') {
            size_t j = i + 1;
            while (j < n && s[j] != '\'') j++;
            if (j >= n) goto unmatched;
            tpl_sb_put(&f, s + i + 1, j - i - 1);
            i = j + 1;
        } else if (c == '"') {
            size_t j = i + 1;
            while (j < n && s[j] != '"') j += s[j] == '\\' && j + 1 < n ? 2 : 1;
            if (j >= n) goto unmatched;
            for (size_t k = i + 1; k < j; k++) {
                if (s[k] == '\\' && k + 1 < j && strchr("$`\"\\\n", s[k + 1])) k++;
                tpl_sb_putc(&f, s[k]);
            }
            i = j + 1;
        } else if (c == '\\') {
            if (i + 1 >= n) { tpl_sb_putc(&f, '\\'); i++; }
            else if (s[i + 1] == '\n') { tpl_sb_put(&f, s + i, 2); i += 2; }
            else {
                size_t k = i + 2;   /* the next character, whole */
                while (k < n && ((unsigned char)s[k] & 0xC0) == 0x80) k++;
                tpl_sb_put(&f, s + i + 1, k - i - 1);
                i = k;
            }
        } else {
            size_t j = i;
            while (j < n && !sh_space((unsigned char)s[j]) && s[j] != '\\' && s[j] != '\'' && s[j] != '"') j++;
            tpl_sb_put(&f, s + i, j - i);
            i = j;
        }
        open = true;
        if (i >= n || sh_space((unsigned char)s[i])) {   /* the separator: the word is done */
            if (i < n) i++;
            if (f.failed) return oom(vm);
            tpl_value w = f.len ? tpl_sb_value(&f) : tpl_v_str("", 0);
            if (!tpl_list_push(A(vm), words, w)) return oom(vm);
            tpl_sb_init(&f, A(vm));
            open = false;
        }
    }
    (void)open;
    *out = tpl_v_list(words);
    return 0;
unmatched: {
        tpl_sb b;
        tpl_sb_init(&b, A(vm));
        tpl_rb_inspect(&b, line);
        return tpl_vm_error(vm, TPL_ERR_VALUE, "Unmatched quote: %.*s (ArgumentError)", (int)b.len, b.p ? b.p : "");
    }
}

int r_str_shellescape(tpl_vm *vm, tpl_value *a, tpl_value *out) { return shell_escape_value(vm, a[0], out); }
int r_str_shellsplit(tpl_vm *vm, tpl_value *a, tpl_value *out) { return shell_split(vm, a[0], out); }
int r_arr_shelljoin(tpl_vm *vm, tpl_value *a, tpl_value *out) { return shell_join(vm, a[0], out); }

/* Shellwords.escape/shellescape, join/shelljoin, split/shellsplit/shellwords (the module's functions); 1: none */
static int shellwords_method(tpl_vm *vm, const char *name, size_t n, tpl_value *args, int npos, tpl_value *out)
{
#define IS(lit) (n == sizeof lit - 1 && memcmp(name, lit, sizeof lit - 1) == 0)
    int which = IS("escape") || IS("shellescape") ? 0 : IS("join") || IS("shelljoin") ? 1
              : IS("split") || IS("shellsplit") || IS("shellwords") ? 2 : -1;
#undef IS
    if (which < 0) return 1;
    if (npos != 1)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "wrong number of arguments (given %d, expected 1) (ArgumentError)", npos);
    return which == 0 ? shell_escape_value(vm, args[0], out) : which == 1 ? shell_join(vm, args[0], out)
                      : shell_split(vm, args[0], out);
}

static const char *exc_parent(const char *c, size_t n);
/* Whether the class constant c is an exception class (tpl's tree, or a name ending in Error). */
static bool is_exc_class(tpl_value c)
{
    if (c.len == 9 && memcmp(c.u.s, "Exception", 9) == 0) return true;
    if (c.len >= 5 && memcmp(c.u.s + c.len - 5, "Error", 5) == 0) return true;
    return strcmp(exc_parent(c.u.s, c.len), "StandardError") != 0 || (c.len == 13 && memcmp(c.u.s, "StopIteration", 13) == 0);
}

/* An exception object of class cls with message msg (its to_s), as `rescue => e` binds one: the
 * message flagged TPL_F_EXC_RB, " (Class)" after it. */
static int make_exc(tpl_vm *vm, tpl_value cls, tpl_value msg, tpl_value *out)
{
    msg = str_of(vm, msg);
    if (msg.type != TPL_T_STR) return -1;
    char *p = tpl_arena_alloc(A(vm), msg.len + cls.len + 4);
    if (!p) return oom(vm);
    memcpy(p, msg.u.s, msg.len);
    p[msg.len] = ' ';
    p[msg.len + 1] = '(';
    memcpy(p + msg.len + 2, cls.u.s, cls.len);
    p[msg.len + 2 + cls.len] = ')';
    p[msg.len + 3 + cls.len] = 0;
    *out = tpl_v_str(p, msg.len);
    out->flags = TPL_F_EXC_RB;
    return 0;
}

/* ------------------------------------------------------------------ Math */

/* Ruby's Get_Double (rb_to_float) for Math's functions: an Integer (a big one through big2dbl,
 * Infinity past Float::MAX), a Float, a Rational's to_f; else TypeError "can't convert X into Float". */
static int math_double(tpl_vm *vm, tpl_value v, double *d)
{
    if (plain_num(v)) { *d = dbl(v); return 0; }
    if (tpl_is_rat(v)) { *d = tpl_rat_to_double(v); return 0; }
    if (v.type == TPL_T_HOST)   /* a host's Numeric (BigDecimal) converts in Ruby: not a TypeError a rescue could take */
        return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: a Math function of a host object (tpl converts Integer, Float and Rational)");
    return tpl_vm_error(vm, TPL_ERR_TYPE, "can't convert %s into Float (TypeError)", conv_name(v));
}

/* math.c's get_double_rshift: a positive big Integer of 1024 bits or more is shifted right to 53
 * significant bits first (*shift of them) so its log is finite. */
static int math_double_rshift(tpl_vm *vm, tpl_value v, double *d, size_t *shift)
{
    *shift = 0;
    if (v.type == TPL_T_BIGINT && v.u.s[0] != '-') {
        mpz_t z;
        tpl_big_get(z, v);
        size_t bits = mpz_sizeinbase(z, 2);
        if (bits >= DBL_MAX_EXP) {
            *shift = bits - DBL_MANT_DIG;
            mpz_fdiv_q_2exp(z, z, (mp_bitcnt_t)*shift);
            *d = mpz_get_d(z);   /* (53 bits: exact) */
            mpz_clear(z);
            return 0;
        }
        mpz_clear(z);
    }
    return math_double(vm, v, d);
}

static int math_domain(tpl_vm *vm, const char *fn)
{
    return tpl_vm_fail(vm, TPL_EK_VALUE, "Numerical argument is out of domain - %s (Math::DomainError)", fn);
}

/* Math.f(x...), as Ruby 3.1's math.c (its domain checks and special cases, glibc's libm as Ruby's on
 * Linux); 1 for a method Math does not have. */
static int math_method(tpl_vm *vm, const char *name, size_t n, tpl_value *args, int npos, tpl_value *out)
{
    static const char *const one[] = { "sqrt", "cbrt", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh",
                                       "tanh", "asinh", "acosh", "atanh", "exp", "log2", "log10", "erf", "erfc",
                                       "gamma", "lgamma", "frexp", NULL };
    static const char *const two[] = { "atan2", "hypot", "ldexp", NULL };
    char fn[8];
    int want = 0;
    for (int i = 0; one[i] && !want; i++) if (strlen(one[i]) == n && memcmp(one[i], name, n) == 0) want = 1;
    for (int i = 0; two[i] && !want; i++) if (strlen(two[i]) == n && memcmp(two[i], name, n) == 0) want = 2;
    bool is_log = n == 3 && memcmp(name, "log", 3) == 0;
    if (!want && !is_log) return 1;
    memcpy(fn, name, n);
    fn[n] = 0;
    if (is_log ? npos < 1 || npos > 2 : npos != want)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "wrong number of arguments (given %d, expected %s) (ArgumentError)", npos,
                            is_log ? "1..2" : want == 1 ? "1" : "2");
#define FN(lit) (strcmp(fn, lit) == 0)
    double x, y = 0, r;
    size_t shift = 0;
    if (is_log || FN("log2") || FN("log10")) {
        if (math_double_rshift(vm, args[0], &x, &shift) < 0) return -1;
        if (x < 0.0) return math_domain(vm, fn);
        if (is_log) {
            r = x == 0.0 ? -HUGE_VAL : log(x) + (double)shift * M_LN2;
            if (npos == 2) {
                double b = 0;
                size_t bs = 0;
                if (math_double_rshift(vm, args[1], &b, &bs) < 0) return -1;
                if (b < 0.0) return math_domain(vm, fn);
                r /= b == 0.0 ? -HUGE_VAL : log(b) + (double)bs * M_LN2;
            }
        } else if (x == 0.0) {
            r = -HUGE_VAL;
        } else {
            r = FN("log2") ? log2(x) + (double)shift : log10(x) + (double)shift * log10(2.0);
        }
        *out = tpl_v_float(r);
        return 0;
    }
    if (FN("ldexp")) {   /* ldexp(x, NUM2INT(n)) */
        if (math_double(vm, args[0], &x) < 0) return -1;
        tpl_value e = args[1];
        int64_t k;
        if (radix_arg(vm, e, &k) < 0) return -1; /* (NUM2INT as a radix's: an Integer or a Float truncated, RangeErrors) */
        *out = tpl_v_float(ldexp(x, (int)k));
        return 0;
    }
    if (math_double(vm, args[0], &x) < 0) return -1;
    if (want == 2 && math_double(vm, args[1], &y) < 0) return -1;
    if (FN("atan2")) {   /* Math.atan2(y, x): args[0] is y (converted after x in Ruby; both are numbers here) */
        double dy = x, dx = y;
        r = dx == 0.0 && dy == 0.0 ? (!signbit(dx) ? dy : !signbit(dy) ? M_PI : -M_PI) : atan2(dy, dx);
    } else if (FN("hypot")) r = hypot(x, y);
    else if (FN("sqrt")) {
        if (x < 0.0) return math_domain(vm, fn);
        r = x == 0.0 ? 0.0 : sqrt(x);
    } else if (FN("cbrt")) {
        r = cbrt(x);
#if defined __GLIBC__
        if (isfinite(r) && !(x == 0.0 && r == 0.0)) r = (2.0 * r + (x / r / r)) / 3.0;   /* (math.c's refinement on glibc) */
#endif
    } else if (FN("sin")) r = sin(x);
    else if (FN("cos")) r = cos(x);
    else if (FN("tan")) r = tan(x);
    else if (FN("atan")) r = atan(x);
    else if (FN("sinh")) r = sinh(x);
    else if (FN("cosh")) r = cosh(x);
    else if (FN("tanh")) r = tanh(x);
    else if (FN("asinh")) r = asinh(x);
    else if (FN("exp")) r = exp(x);
    else if (FN("erf")) r = erf(x);
    else if (FN("erfc")) r = erfc(x);
    else if (FN("asin") || FN("acos")) {
        if (x < -1.0 || 1.0 < x) return math_domain(vm, fn);
        r = FN("asin") ? asin(x) : acos(x);
    } else if (FN("acosh")) {
        if (x < 1.0) return math_domain(vm, fn);
        r = acosh(x);
    } else if (FN("atanh")) {
        if (x < -1.0 || 1.0 < x) return math_domain(vm, fn);
        r = x == -1.0 ? -HUGE_VAL : x == 1.0 ? HUGE_VAL : atanh(x);
    } else if (FN("gamma")) {
        static const double fact[] = { 1.0, 1.0, 2.0, 6.0, 24.0, 120.0, 720.0, 5040.0, 40320.0, 362880.0, 3628800.0,
                                       39916800.0, 479001600.0, 6227020800.0, 87178291200.0, 1307674368000.0,
                                       20922789888000.0, 355687428096000.0, 6402373705728000.0, 121645100408832000.0,
                                       2432902008176640000.0, 51090942171709440000.0, 1124000727777607680000.0 };
        if (isinf(x)) {
            if (signbit(x)) return math_domain(vm, fn);
            r = HUGE_VAL;
        } else if (x == 0.0) r = signbit(x) ? -HUGE_VAL : HUGE_VAL;
        else if (x == floor(x) && x < 0.0) return math_domain(vm, fn);
        else if (x == floor(x) && 1.0 <= x && x <= 23.0) r = fact[(int)x - 1];   /* (0! .. 22! exact) */
        else r = tgamma(x);
    } else {   /* lgamma, frexp: [Float, Integer] */
        int k = 1;
        if (FN("frexp")) r = frexp(x, &k);
        else if (isinf(x)) {
            if (signbit(x)) return math_domain(vm, fn);
            r = HUGE_VAL;
        } else if (x == 0.0) { r = HUGE_VAL; k = signbit(x) ? -1 : 1; }
        else r = lgamma_r(x, &k);
        tpl_list *l = new_list(vm, 2);
        if (!l) return oom(vm);
        l->items[0] = tpl_v_float(r);
        l->items[1] = tpl_v_int(k);
        l->len = 2;
        *out = tpl_v_list(l);
        out->flags = TPL_F_MUT_RB;
        return 0;
    }
#undef FN
    *out = tpl_v_float(r);
    return 0;
}

static int class_method(tpl_vm *vm, tpl_value self, const char *name, size_t n, tpl_value *args, int npos, tpl_value *out)
{
#define IS(lit) (n == sizeof lit - 1 && memcmp(name, lit, sizeof lit - 1) == 0)
#define CLS(lit) (self.len == sizeof lit - 1 && memcmp(self.u.s, lit, sizeof lit - 1) == 0)
    if (npos == 0 && (IS("name") || IS("to_s") || IS("inspect"))) {
        *out = tpl_v_str(self.u.s, self.len);
        return 0;
    }
    if (npos == 0 && IS("class")) {   /* a module's class is Module */
        *out = class_is_module(self) ? tpl_v_str("Module", 6) : tpl_v_str("Class", 5);
        out->flags = TPL_F_CLASS_RB;
        return 0;
    }
    if ((IS("new") || IS("exception")) && npos <= 1 && is_exc_class(self))   /* ArgumentError.new("m") */
        return make_exc(vm, self, npos ? args[0] : self, out);
    if (CLS("Integer") && IS("sqrt") && npos == 1) {   /* Integer.sqrt(n): the floor of n's square root (a Float truncated first) */
        tpl_value x = args[0];
        if (x.type == TPL_T_FLOAT) {
            if (!isfinite(x.u.f)) return tpl_vm_fail(vm, TPL_EK_VALUE, "%s (FloatDomainError)", isnan(x.u.f) ? "NaN" : x.u.f > 0 ? "Infinity" : "-Infinity");
            if (tpl_big_from_double(vm, x.u.f, &x) < 0) return -1;
        }
        if (x.type != TPL_T_INT && x.type != TPL_T_BIGINT) return type_error(vm, TPL_VT_INT, x);
        mpz_t z;
        tpl_big_get(z, x);
        if (mpz_sgn(z) < 0) { mpz_clear(z); return tpl_vm_fail(vm, TPL_EK_VALUE, "Numerical argument is out of domain - \"isqrt\" (Math::DomainError)"); }
        mpz_sqrt(z, z);
        return tpl_big_result(vm, z, out);
    }
    if (CLS("File")) return file_method(vm, name, n, args, npos, out);
    if (CLS("Math")) return math_method(vm, name, n, args, npos, out);
    if (CLS("Kernel")) {   /* Kernel.format(...): Kernel's module functions tpl has, as the bare call */
        static const char *const kfn[] = { "format", "sprintf", "Integer", "Float", "String", "Array", "Rational", NULL };
        for (int i = 0; kfn[i]; i++)
            if (strlen(kfn[i]) == n && memcmp(kfn[i], name, n) == 0) {
                int id = tpl_vm_method_find(vm, TPL_BK_RKERNEL, name, n);
                if (id >= 0) return tpl_vm_call_builtin(vm, id, args, npos, NULL, NULL, 0, out);
            }
    }
    if (CLS("Regexp") && IS("last_match") && npos <= 1) {   /* $~, or $~[n] (nil without a match) */
        tpl_value m = tpl_vm_rb_match(vm);
        if (npos == 0 || m.type != TPL_T_LIST || !(m.flags & TPL_F_MATCH_RB)) {
            *out = npos == 0 ? m : tpl_v_none();
            return 0;
        }
        tpl_value a[3] = { m, args[0], tpl_v_unset() };
        return r_md_getitem(vm, a, out);
    }
    if (CLS("ERB::Util")) return erb_util_method(vm, name, n, args, npos, out);
    if (CLS("JSON")) return json_method(vm, name, n, args, npos, NULL, NULL, 0, out);
    if (CLS("Shellwords")) return shellwords_method(vm, name, n, args, npos, out);
    if (IS("[]") && CLS("Array")) {   /* Array[a, b] */
        tpl_list *l = new_list(vm, npos < 4 ? 4 : (uint32_t)npos);
        if (!l) return oom(vm);
        for (int i = 0; i < npos; i++) l->items[i] = args[i];
        l->len = (uint32_t)npos;
        *out = tpl_v_list(l);
        out->flags = TPL_F_MUT_RB;
        return 0;
    }
    if (IS("[]") && CLS("Hash")) {
        /* Hash[hash], Hash[[[k, v], [k]]], Hash[k, v, ...]: a new Hash, with Ruby's ArgumentErrors */
        tpl_map *m = rb_map(vm, 4);
        if (!m) return oom(vm);
        if (npos == 1 && args[0].type == TPL_T_MAP) {
            tpl_map *o = args[0].u.map;
            for (uint32_t i = 0; i < o->len; i++)
                if (!tpl_map_set(A(vm), m, o->e[i].key, o->e[i].val)) return oom(vm);
        } else if (npos == 1 && is_array(args[0])) {
            tpl_list *l = args[0].u.list;
            for (uint32_t i = 0; i < l->len; i++) {
                tpl_value p = l->items[i];
                if (!is_array(p))
                    return tpl_vm_error(vm, TPL_ERR_VALUE, "wrong element type %s at %u (expected array) (ArgumentError)", tpl_rb_class_name(p), i);
                if (p.u.list->len < 1 || p.u.list->len > 2)
                    return tpl_vm_error(vm, TPL_ERR_VALUE, "invalid number of elements (%u for 1..2) (ArgumentError)", p.u.list->len);
                if (!tpl_map_set(A(vm), m, p.u.list->items[0], p.u.list->len == 2 ? p.u.list->items[1] : tpl_v_none())) return oom(vm);
            }
        } else if (npos % 2) {
            return tpl_vm_error(vm, TPL_ERR_VALUE, "odd number of arguments for Hash (ArgumentError)");
        } else {
            for (int i = 0; i < npos; i += 2)
                if (!tpl_map_set(A(vm), m, args[i], args[i + 1])) return oom(vm);
        }
        *out = tpl_v_map(m);
        out->flags = TPL_F_MUT_RB;
        return 0;
    }
    if (!IS("new")) return 1;
    if (CLS("String") && npos <= 1) {
        if (npos && (args[0].type != TPL_T_STR || (args[0].flags & (TPL_F_CLASS_RB | TPL_F_REGEX_RB))))
            return type_error(vm, TPL_VT_STR, args[0]);
        *out = npos ? args[0] : tpl_v_str("", 0);
        out->flags = 0;
        return 0;
    }
    if (CLS("Array") && npos <= 2) {
        int64_t k = 0;
        if (npos && is_array(args[0]) && npos == 1) return rb_copy_mut(vm, args[0], out);
        if (npos) {
            if (args[0].type != TPL_T_INT) return type_error(vm, TPL_VT_INT, args[0]);
            k = args[0].u.i;
            if (k < 0) return tpl_vm_error(vm, TPL_ERR_VALUE, "negative array size (ArgumentError)");
            if (k > 10000000) return tpl_vm_error(vm, TPL_ERR_LIMIT, "array too long");
        }
        tpl_list *l = new_list(vm, (uint32_t)(k < 4 ? 4 : k));
        if (!l) return oom(vm);
        tpl_rb_block blk = tpl_vm_block(vm);
        if (blk.pc) {
            /* Array.new(n) { |i| ... }: the block's value for each index (it supersedes a default value) */
            l->len = 0;
            for (int64_t i = 0; i < k; i++) {
                tpl_value iv = tpl_v_int(i), r;
                int yr = tpl_rb_yield(vm, &blk, &iv, 1, &r);
                if (yr < 0) return -1;
                if (yr > 0) { *out = r; return 0; }   /* break v */
                l->items[i] = r;
                l->len = (uint32_t)i + 1;
            }
            *out = tpl_v_list(l);
            out->flags = TPL_F_MUT_RB;
            return 0;
        }
        for (int64_t i = 0; i < k; i++) l->items[i] = npos == 2 ? args[1] : tpl_v_none();
        l->len = (uint32_t)k;
        *out = tpl_v_list(l);
        out->flags = TPL_F_MUT_RB;
        return 0;
    }
    if (CLS("Hash")) {
        /* Hash.new, Hash.new(default), Hash.new { |h, k| ... } */
        tpl_rb_block blk = tpl_vm_block(vm);
        if (npos > 1 || (npos == 1 && blk.pc))
            return tpl_vm_error(vm, TPL_ERR_TYPE, "wrong number of arguments (given %d, expected 0) (ArgumentError)", npos);
        tpl_map *m = rb_map(vm, 4);
        if (!m) return oom(vm);
        if (npos || blk.pc) {
            rb_hash_default *d = tpl_arena_alloc(A(vm), sizeof *d);
            if (!d) return oom(vm);
            d->value = npos ? args[0] : tpl_v_none();
            d->blk = blk;
            m->rb_default = d;
        }
        *out = tpl_v_map(m);
        out->flags = TPL_F_MUT_RB;
        return 0;
    }
    return 1;
#undef CLS
#undef IS
}

/* The methods of an exception (`rescue => e`, Cls.new) tpl answers: the rest of String's are not its. */
/* The exception class among cls and its ancestors whose own public method (Ruby 3.1's, beyond
 * Exception's) name[0, n] is (NameError#name, KeyError#key, SystemExit#status...), else NULL. */
static const char *exc_own_method(tpl_value cls, const char *name, size_t n)
{
    static const char *const own[][2] = { { "NameError", "name" }, { "NameError", "receiver" }, { "NameError", "local_variables" },
        { "NoMethodError", "args" }, { "NoMethodError", "private_call?" }, { "KeyError", "key" }, { "KeyError", "receiver" },
        { "FrozenError", "receiver" }, { "StopIteration", "result" }, { "SystemExit", "status" }, { "SystemExit", "success?" },
        { "LocalJumpError", "exit_value" }, { "LocalJumpError", "reason" }, { "UncaughtThrowError", "tag" },
        { "UncaughtThrowError", "value" }, { "SignalException", "signo" }, { "SignalException", "signm" },
        { "SystemCallError", "errno" }, { "NoMatchingPatternKeyError", "key" }, { "NoMatchingPatternKeyError", "matchee" } };
    if (cls.type != TPL_T_STR) return NULL;
    const char *c = cls.u.s;
    size_t cl = cls.len;
    for (int depth = 0; c && depth < 16; depth++) {
        for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
            if (strlen(own[i][0]) == cl && memcmp(own[i][0], c, cl) == 0 && strlen(own[i][1]) == n && memcmp(own[i][1], name, n) == 0)
                return own[i][0];
        c = exc_parent(c, cl);
        cl = c ? strlen(c) : 0;
    }
    return NULL;
}

static bool exc_method_ok(const char *name, size_t n)
{
    static const char *const names[] = { "message", "to_s", "inspect", "class", "is_a?", "kind_of?", "instance_of?", "==",
        "!=", "!", "eql?", "equal?", "nil?", "frozen?", "itself", "then", "yield_self", "tap", "object_id", "hash", NULL };
    for (int i = 0; names[i]; i++)
        if (strlen(names[i]) == n && memcmp(names[i], name, n) == 0) return true;
    return false;
}

/* A Proc of the template (compiler/lower_erb.c proc_op): `p.call(args)`, `p.(args)`, `p[args]`, `p.yield`,
 * `p.arity`, `p.lambda?` are `p.(call)(meta, args...)` with the Proc's block as the call's block. The
 * variable holds the block's entry (an Integer: never seen by the template, whose other uses of it are
 * compile errors); anything else there (nil when the assignment did not run) is Ruby's NoMethodError.
 * meta: the arguments given (bits 0-7), the required parameters (8-15), the optional ones (16-23), a
 * lambda (bit 24), answer arity (25) or lambda? (26) instead of calling. A lambda checks the count as
 * Ruby's (ArgumentError); a proc takes the items of one Array argument when it has two or more
 * parameters, nil for missing required parameters; a missing optional parameter is unset (its default). */
enum { RB_PROC_AUX = 0xB10D };
/* proc_call's yield of the block blk to its k arguments args[first..] (vals: room for blk's
 * parameters; keep: for keep_cap kept slots): tpl_rb_yield's answer. */
static inline int proc_yield_in(tpl_vm *vm, const tpl_rb_block *blk, const tpl_value *args, int first, int k, int nreq,
                                bool lam, tpl_value *out, tpl_value *vals, uint32_t *keep, uint32_t keep_cap)
{
    int np = (int)blk->nparams;
    const tpl_value *src = args + first;
    int cnt = k;
    if (!lam && k == 1 && np >= 2 && is_array(args[first])) {
        src = args[first].u.list->items;
        cnt = (int)args[first].u.list->len;
    }
    for (int i = 0; i < np && i < 256; i++) vals[i] = i < cnt ? src[i] : i < nreq ? tpl_v_none() : tpl_v_unset();
    if (first != 2) return tpl_rb_yield(vm, blk, vals, np, out);
    uint32_t nkeep = 0;
    const char *p = args[1].u.s, *e = p + args[1].len;
    while (p < e) {
        uint32_t v = 0;
        while (p < e && *p >= '0' && *p <= '9') v = v * 10 + (uint32_t)(*p++ - '0');
        if (p < e) p++;
        if (nkeep == keep_cap) return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: a Proc calling itself with more than 256 locals");
        keep[nkeep++] = v;
    }
    return tpl_rb_yield_keep(vm, blk, vals, np, out, keep, nkeep);
}

/* proc_yield_in with room for 256 parameters and kept slots (5 KB): its own frame, only for a Proc of
 * more than 16 parameters or 32 kept slots, so that the copies of the others stay small on the C stack
 * of every nested call (a lambda calling itself 900 deep took 12 KB a level under ASan). */
static __attribute__((noinline)) int proc_yield_big(tpl_vm *vm, const tpl_rb_block *blk, const tpl_value *args, int first,
                                                    int k, int nreq, bool lam, tpl_value *out)
{
    tpl_value vals[256];
    uint32_t keep[256];
    return proc_yield_in(vm, blk, args, first, k, nreq, lam, out, vals, keep, 256);
}

static __attribute__((noinline)) int proc_yield(tpl_vm *vm, const tpl_rb_block *blk, const tpl_value *args, int first, int k, int nreq, bool lam,
                                                tpl_value *out)
{
    size_t commas = 0;
    if (first == 2)
        for (uint32_t i = 0; i < args[1].len; i++) commas += args[1].u.s[i] == ',';
    if (blk->nparams > 16 || commas >= 32) return proc_yield_big(vm, blk, args, first, k, nreq, lam, out);
    tpl_value vals[16];
    uint32_t keep[32];
    return proc_yield_in(vm, blk, args, first, k, nreq, lam, out, vals, keep, 32);
}

static int proc_call(tpl_vm *vm, tpl_value self, tpl_value *args, int npos, tpl_value *out)
{
    tpl_rb_block blk = tpl_vm_block(vm);
    if (npos < 1 || args[0].type != TPL_T_INT) return tpl_vm_error(vm, TPL_ERR_TYPE, "internal error: (call)");
    uint32_t meta = (uint32_t)args[0].u.i;
    const char *nm = meta >> 25 & 1 ? "arity" : meta >> 26 & 1 ? "lambda?" : "call";
    if (self.type != TPL_T_INT || self.aux != RB_PROC_AUX || !blk.pc) {
        tpl_vm_set_block(vm, (tpl_rb_block){ 0, 0, 0 });
        return no_method(vm, self, nm, strlen(nm));
    }
    /* the Proc the variable holds now (proc_value): its entry, parameters and signature; the call's frame */
    uint64_t u = (uint64_t)self.u.i;
    blk.pc = (uint32_t)(u & 0xFFFFFFu);
    blk.nparams = (uint32_t)(u >> 24 & 0xFF);
    bool lam = u >> 48 & 1;
    /* a call from the Proc's own block (bit 27): args[1] lists the slots each call keeps ("3,4,7") */
    int first = meta >> 27 & 1 ? 2 : 1;
    if (npos < first || (first == 2 && args[1].type != TPL_T_STR)) return tpl_vm_error(vm, TPL_ERR_TYPE, "internal error: (call)");
    int k = npos - first, nreq = (int)(u >> 32 & 0xFF), nopt = (int)(u >> 40 & 0xFF);
    if (meta >> 25 & 1) { *out = tpl_v_int(u >> 49 & 1 ? -(nreq + 1) : nreq); return 0; }   /* (rb_proc_arity: the sig's bit 17) */
    if (meta >> 26 & 1) { *out = tpl_v_bool(lam); return 0; }
    if (blk.nparams & TPL_RB_BIND_RAW) {
        /* the block binds them (bind_block): the arguments as given, the keywords (bit 28: the last argument) */
        tpl_value kwv = tpl_v_none();
        if (meta >> 28 & 1 && k > 0) kwv = args[first + --k];
        if (kwv.type == TPL_T_MAP && kwv.u.map->len == 0) kwv = tpl_v_none();   /* f.(**{}): no keywords */
        int rc = first == 2 ? tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: a Proc with *rest, keyword or &block parameters calling itself")
                            : tpl_rb_yield_kw(vm, &blk, args + first, k, kwv, out);
        if (rc < 0) return -1;
        if (rc > 0 && !lam) return tpl_vm_error(vm, TPL_ERR_TYPE, "break from proc-closure (LocalJumpError)");
        return 0;
    }
    /* keywords to a Proc of no keyword parameters: a Hash argument, none when empty (f.(**{})) */
    if (meta >> 28 & 1 && k > 0 && args[first + k - 1].type == TPL_T_MAP && args[first + k - 1].u.map->len == 0) k--;
    if (lam && (k < nreq || k > nreq + nopt)) {
        if (nopt) return tpl_vm_error(vm, TPL_ERR_TYPE, "wrong number of arguments (given %d, expected %d..%d) (ArgumentError)", k, nreq, nreq + nopt);
        return tpl_vm_error(vm, TPL_ERR_TYPE, "wrong number of arguments (given %d, expected %d) (ArgumentError)", k, nreq);
    }
    int rc = proc_yield(vm, &blk, args, first, k, nreq, lam, out);
    if (rc < 0) return -1;
    if (rc > 0 && !lam) return tpl_vm_error(vm, TPL_ERR_TYPE, "break from proc-closure (LocalJumpError)");
    return 0;
}

/* f = <Proc literal> (compiler/lower_erb.c proc_assign): `nil.(proc)(sig)` with the Proc's block answers the
 * Proc as a hidden Integer (entry | nparams << 24 | sig << 32; sig: required parameters, optional ones << 8,
 * a lambda << 16, a negative arity << 17) that (call) trusts by its aux, so a variable assigned another Proc calls that one. */
static int proc_value(tpl_vm *vm, tpl_value *args, int npos, tpl_value *out)
{
    tpl_rb_block b = tpl_vm_block(vm);
    if (!b.pc || npos != 1 || args[0].type != TPL_T_INT) return tpl_vm_error(vm, TPL_ERR_TYPE, "internal error: (proc)");
    *out = tpl_v_int((int64_t)((uint64_t)b.pc | (uint64_t)b.nparams << 24 | ((uint64_t)args[0].u.i & 0x3FFFFu) << 32));
    out->aux = RB_PROC_AUX;
    return 0;
}

/* The block given to a template method (compiler/lower_erb.c def_call): `nil.(block)` with the block answers
 * it as a hidden Integer (entry | nparams << 24 | the frame's slot base << 32), the method's hidden keyword
 * argument; `blk.(yield)(args)` in the method yields to it (nil: Ruby's LocalJumpError). The frame of the
 * block is the caller's, below the method's while it runs; the method's other uses of it are compile errors. */
enum { RB_BLOCK_AUX = 0xB10C };
static int block_value(tpl_vm *vm, tpl_value *args, int npos, tpl_value *out)
{
    tpl_rb_block b = tpl_vm_block(vm);
    *out = b.pc ? tpl_v_int((int64_t)((uint64_t)b.pc | (uint64_t)b.nparams << 24 | (uint64_t)b.slot_base << 32)) : tpl_v_none();
    if (b.pc) out->aux = RB_BLOCK_AUX;   /* (no Integer the template makes has it: (yield) trusts only this) */
    if (b.pc && npos == 1 && args[0].type == TPL_T_INT) out->len = (uint32_t)args[0].u.i;   /* a lambda's arity */
    return 0;
}

/* block_yield's yield to a lambda of np parameters: a missing optional one is unset (its default).
 * The copy of more than 16 (4 KB of room) in its own frame: off the C stack of other nested block calls. */
static __attribute__((noinline)) int lambda_yield_big(tpl_vm *vm, const tpl_rb_block *b, const tpl_value *args, int npos,
                                                      int np, tpl_value *out)
{
    tpl_value vals[256];
    for (int i = 0; i < np && i < 256; i++) vals[i] = i < npos ? args[i] : tpl_v_unset();
    return tpl_rb_yield(vm, b, vals, np, out);
}

static int lambda_yield(tpl_vm *vm, const tpl_rb_block *b, const tpl_value *args, int npos, int np, tpl_value *out)
{
    if (np > 16) return lambda_yield_big(vm, b, args, npos, np, out);
    tpl_value vals[16];
    for (int i = 0; i < np; i++) vals[i] = i < npos ? args[i] : tpl_v_unset();
    return tpl_rb_yield(vm, b, vals, np, out);
}

/* yield(args) in a def; kw: `yield a, k: 1`, whose keywords are the last argument (a Hash: a block binding its
 * own binds them as keywords, any other takes the Hash as one more argument, as Ruby's). */
static int block_yield(tpl_vm *vm, tpl_value self, tpl_value *args, int npos, bool kw, tpl_value *out)
{
    if (self.type != TPL_T_INT || self.aux != RB_BLOCK_AUX) return tpl_vm_error(vm, TPL_ERR_TYPE, "no block given (LocalJumpError)");
    uint64_t u = (uint64_t)self.u.i;
    tpl_rb_block b = { (uint32_t)(u & 0xFFFFFFu), (uint32_t)(u >> 24 & 0xFF), (uint32_t)(u >> 32) };
    int rc;
    if (kw && npos > 0 && args[npos - 1].type == TPL_T_MAP && args[npos - 1].u.map->len == 0) {
        npos--;   /* yield(**{}): no argument */
        kw = false;
    }
    if (b.nparams & TPL_RB_BIND_RAW) {   /* the block binds them (bind_block) */
        rc = kw && npos > 0 ? tpl_rb_yield_kw(vm, &b, args, npos - 1, args[npos - 1], out) : tpl_rb_yield(vm, &b, args, npos, out);
        if (rc > 0 && (self.len & 1)) rc = 0;
    } else if (self.len & 1) {   /* a lambda: Ruby's arity check, no Array splat, a missing optional parameter its default */
        int nreq = (int)(self.len >> 8 & 0xFF), nopt = (int)(self.len >> 16 & 0xFF), np = (int)b.nparams;
        if (npos < nreq || npos > nreq + nopt) {
            if (nopt) return tpl_vm_error(vm, TPL_ERR_TYPE, "wrong number of arguments (given %d, expected %d..%d) (ArgumentError)", npos, nreq, nreq + nopt);
            return tpl_vm_error(vm, TPL_ERR_TYPE, "wrong number of arguments (given %d, expected %d) (ArgumentError)", npos, nreq);
        }
        rc = lambda_yield(vm, &b, args, npos, np, out);
        if (rc > 0) rc = 0;   /* break in a lambda: its value */
    } else {
        rc = tpl_rb_yield(vm, &b, args, npos, out);
    }
    if (rc < 0) return -1;
    if (rc > 0) return tpl_vm_def_break(vm, self, b.slot_base, *out);   /* (out to the call the block was given to: runtime/vm.c call_macro) */
    return 0;
}

/* blk.call(args) (also blk.(), blk[], blk.yield) of a def's &blk: nil (no block given) is Ruby's NoMethodError
 * for that method, args[0] its name; else a yield. */
static int block_call(tpl_vm *vm, tpl_value self, tpl_value *args, int npos, tpl_value *out)
{
    if (npos < 1 || args[0].type != TPL_T_STR) return tpl_vm_error(vm, TPL_ERR_TYPE, "internal error: (bcall)");
    if (self.type != TPL_T_INT || self.aux != RB_BLOCK_AUX) return no_method(vm, self, args[0].u.s, args[0].len);
    return block_yield(vm, self, args + 1, npos - 1, false, out);
}

/* recv.m(args, &blk) with a def's &blk (compiler/lower_erb.c fwd_call): blk.(fwd)(recv, "m", flags, args...)
 * calls m with that block as it was given, so m's every yielded value reaches it (nil: no block). A lambda
 * checks its arity at each yield, which a builtin's yield does not: one of one parameter goes to a method
 * that yields one value (flags bit 0), any other is refused. */
static int block_forward(tpl_vm *vm, tpl_value self, tpl_value *args, int npos, tpl_value *out)
{
    if (npos < 3 || args[1].type != TPL_T_STR || args[2].type != TPL_T_INT) return tpl_vm_error(vm, TPL_ERR_TYPE, "internal error: (fwd)");
    tpl_rb_block b = { 0, 0, 0 };
    if (self.type == TPL_T_INT && self.aux == RB_BLOCK_AUX) {
        uint64_t u = (uint64_t)self.u.i;
        b = (tpl_rb_block){ (uint32_t)(u & 0xFFFFFFu), (uint32_t)(u >> 24 & 0xFF), (uint32_t)(u >> 32) };
        if ((self.len & 1) && !((args[2].u.i & 1) && (self.len >> 8 & 0xFF) == 1 && (self.len >> 16 & 0xFF) == 0))
            return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: a lambda of %u parameter%s passed on as the block of %.*s "
                                "(Ruby checks its arity against each yield)", (unsigned)((self.len >> 8 & 0xFF) + (self.len >> 16 & 0xFF)),
                                (self.len >> 8 & 0xFF) + (self.len >> 16 & 0xFF) == 1 ? "" : "s", (int)args[1].len, args[1].u.s);
    }
    tpl_rb_block save = tpl_vm_set_block(vm, b);
    int rc = tpl_rb_send(vm, args[0], args[1].u.s, args[1].len, args + 3, npos - 3, NULL, NULL, 0, out);
    tpl_vm_set_block(vm, save);
    return rc;
}

/* (kwunknown): the keywords of a call that a def with required keywords and no **opts has no parameter for
 * (its hidden **, checked after the missing ones, compiler/lower_erb.c kw_missing): Ruby's ArgumentError
 * naming them (a Symbol as :k, another key by its inspect); nil when there are none. */
static __attribute__((noinline)) int kw_unknown(tpl_vm *vm, tpl_value h, tpl_value *out)
{
    *out = tpl_v_none();
    if (h.type != TPL_T_MAP || h.u.map->len == 0) return 0;
    tpl_sb b;
    tpl_sb_init(&b, A(vm));
    uint32_t k = 0;
    for (uint32_t i = 0; i < h.u.map->len && b.len < 200; i++) {
        tpl_value key = h.u.map->e[i].key;
        tpl_sb_puts(&b, k++ ? ", " : "");
        if (key.type == TPL_T_STR && (key.flags & TPL_F_SYMBOL)) tpl_sb_printf(&b, ":%.*s", key.len > 60 ? 60 : (int)key.len, key.u.s);
        else tpl_rb_inspect(&b, key);
    }
    if (!b.p) return oom(vm);
    return tpl_vm_error(vm, TPL_ERR_TYPE, "unknown keyword%s: %.*s (ArgumentError)", h.u.map->len > 1 ? "s" : "", (int)b.len, b.p);
}

static int rb_send_impl(tpl_vm *vm, tpl_value self, const char *name, size_t n, tpl_value *args, int npos,
                        const tpl_value *kwn, tpl_value *kwv, int nkw, tpl_value *out)
{
    if (n >= 5 && name[0] == '(' && nkw == 0) {
        if (n == 5 && memcmp(name, "(fwd)", 5) == 0) return block_forward(vm, self, args, npos, out);
        if (n == 7 && memcmp(name, "(bcall)", 7) == 0) return block_call(vm, self, args, npos, out);
        if (n == 6 && memcmp(name, "(call)", 6) == 0) return proc_call(vm, self, args, npos, out);
        if (n == 7 && memcmp(name, "(block)", 7) == 0) return block_value(vm, args, npos, out);
        if (n == 6 && memcmp(name, "(bind)", 6) == 0) return bind_block(vm, self, args, npos, out);
        if (n == 6 && memcmp(name, "(proc)", 6) == 0) return proc_value(vm, args, npos, out);
        if (n == 7 && memcmp(name, "(yield)", 7) == 0) return block_yield(vm, self, args, npos, false, out);
        if (n == 9 && memcmp(name, "(yieldkw)", 9) == 0) return block_yield(vm, self, args, npos, true, out);
        if (n == 11 && memcmp(name, "(kwunknown)", 11) == 0) return kw_unknown(vm, self, out);
        if (n == 8 && memcmp(name, "(erbnil)", 8) == 0) { *out = tpl_v_none(); return tpl_vm_out_discard(vm); }
    }
    if (self.type == TPL_T_UNDEF) self = tpl_v_none();
    if (self.type == TPL_T_INT && self.aux == RB_PROC_AUX)
        /* a Proc (proc_value's hidden Integer) where the compiler did not know the variable held one: read by code
         * compiled before its Proc assignment (`od = nil; ev = ->(n) { od.(n) }; od = ->(n) { n }`) */
        return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: `%.*s' of a Proc read before its variable's Proc "
                            "assignment (assign the Proc first)", (int)n, name);
    /* call.channel: the `call` object answers its fields as methods */
    tpl_value call = tpl_prompt_call(vm);
    if (self.type == TPL_T_MAP && call.type == TPL_T_MAP && self.u.map == call.u.map && npos == 0 && nkw == 0) {
        tpl_value *hit = tpl_map_get_str(self.u.map, name, n, tpl_hash_str(name, n));
        if (hit) { *out = *hit; return 0; }
    }
    if (self.type == TPL_T_STR && (self.flags & TPL_F_EXC_RB) && !exc_method_ok(name, n)) {
        /* an exception is held as its message: String's methods are not its own */
        if (rb_core_has("Exception", name, n))
            return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: Exception#%.*s is not implemented by tpl", (int)n, name);
        const char *own = exc_own_method(tpl_rb_exc_class(self), name, n);
        if (own)
            return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: %s#%.*s is not implemented by tpl", own, (int)n, name);
        tpl_sb b;
        tpl_sb_init(&b, A(vm));
        tpl_rb_inspect(&b, self);
        if (!b.p) return oom(vm);
        tpl_value c = tpl_rb_exc_class(self);
        char cname[64];
        snprintf(cname, sizeof cname, "%.*s", (int)c.len, c.u.s);
        return raise_no_method(vm, cname, name, n, b.p, (int)b.len);
    }
    if (tpl_is_gemv_rb(self) || (self.type == TPL_T_STR && (self.flags & TPL_F_CLASS_RB) && self.len == 12 &&
                                 memcmp(self.u.s, "Gem::Version", 12) == 0 && nkw == 0 && !tpl_vm_block(vm).pc)) {
        int rc = nkw || tpl_vm_block(vm).pc ? 1 : gem_method(vm, self, name, n, args, npos, out);
        if (rc <= 0) return rc;
    }
    if (self.type == TPL_T_STR && (self.flags & TPL_F_CLASS_RB) && self.len == 6 && memcmp(self.u.s, "Regexp", 6) == 0 &&
        ((n == 6 && memcmp(name, "escape", 6) == 0) || (n == 5 && memcmp(name, "quote", 5) == 0)) && npos == 1 && nkw == 0)
        return regexp_escape(vm, args[0], out);
    if (self.type == TPL_T_HOST) {
        /* the host's own method (send); with a block, or when it has none, its plain data's */
        if (tpl_vm_block(vm).pc == 0) {
            int rc = tpl_hobj_send(vm, self, name, n, args, npos, kwn, kwv, nkw, out);
            if (rc <= 0) return rc;
        }
        if (enumerable(name, n)) {
            tpl_value d;
            int rc = tpl_hobj_resolve(vm, self, &d);
            if (rc < 0) return -1;
            if (rc == 0 && d.type != TPL_T_HOST) return rb_send_impl(vm, d, name, n, args, npos, kwn, kwv, nkw, out);
        }
        return no_method(vm, self, name, n);
    }
    if (self.type == TPL_T_BIGINT && nkw && npos <= 1 && n == 5 && memcmp(name, "round", 5) == 0 && !tpl_vm_block(vm).pc) {
        /* a big Integer's round(ndigits, half: mode) */
        tpl_map *kw = rb_map(vm, (uint32_t)nkw);
        if (!kw) return oom(vm);
        for (int i = 0; i < nkw; i++)
            if (!tpl_map_set(A(vm), kw, kwn[i], kwv[i])) return oom(vm);
        tpl_value a[3] = { self, npos ? args[0] : tpl_v_unset(), tpl_v_map(kw) };
        return num_round(vm, a, out, 0);
    }
    if (nkw == 0 && (tpl_is_rat(self) || (n >= 3 && (name[n - 1] == 'r' || name[n - 1] == 'o' || name[n - 1] == 'e')))) {
        int rc = rat_method(vm, self, name, n, args, npos, out);   /* (to_r, rationalize, quo) */
        if (rc <= 0) return rc;
    }
    if (self.type == TPL_T_BIGINT || (self.type == TPL_T_INT && npos == 1 && args[0].type == TPL_T_BIGINT)) {
        int rc = big_method(vm, self, name, n, args, npos, nkw, out);
        if (rc <= 0) return rc;
    }
    if (nkw && !tpl_vm_block(vm).pc && self.type == TPL_T_STR && (self.flags & TPL_F_CLASS_RB) && self.len == 4 &&
        memcmp(self.u.s, "JSON", 4) == 0) {   /* JSON.generate(x, indent: "  ", ...) */
        int rc = json_method(vm, name, n, args, npos, kwn, kwv, nkw, out);
        if (rc <= 0) return rc;
    }
    if (nkw == 0 && tpl_vm_block(vm).pc && self.type == TPL_T_STR && (self.flags & TPL_F_CLASS_RB) && n == 3 &&
        memcmp(name, "new", 3) == 0 && ((self.len == 4 && memcmp(self.u.s, "Hash", 4) == 0) ||
                                        (self.len == 5 && memcmp(self.u.s, "Array", 5) == 0 && npos >= 1 && npos <= 2)))
        return class_method(vm, self, name, n, args, npos, out);   /* Hash.new { |h, k| ... }, Array.new(n) { |i| ... } */
    if (nkw == 0 && !tpl_vm_block(vm).pc) {
        int rc = operator_method(vm, self, name, n, args, npos, out);
        if (rc <= 0) return rc;
        if (self.type == TPL_T_STR && (self.flags & TPL_F_CLASS_RB) && !tpl_is_gemv_rb(self)) {
            rc = class_method(vm, self, name, n, args, npos, out);
            if (rc <= 0) return rc;
        }
    }
    if (is_range(self) && nkw == 0) {
        int rc = range_method(vm, self, name, n, args, npos, out);
        if (rc <= 0) return rc;
    }
    if ((is_array(self) || is_range(self) || self.type == TPL_T_MAP) && nkw == 0 && n == 10 && memcmp(name, "each_entry", 10) == 0)
        return rb_send_impl(vm, self, "each", 4, args, npos, NULL, NULL, 0, out);   /* one item per yield */
    if (is_array(self) && nkw == 0 && npos == 0 && n == 10 && memcmp(name, "each_index", 10) == 0) {
        /* the indexes (of the items at the call; with a block, answers the array) */
        tpl_list *l = new_list(vm, self.u.list->len ? self.u.list->len : 1);
        if (!l) return oom(vm);
        for (uint32_t i = 0; i < self.u.list->len; i++) l->items[l->len++] = tpl_v_int(i);
        if (!tpl_vm_block(vm).pc) { *out = tpl_v_list(l); return 0; }
        tpl_value r;
        if (rb_send_impl(vm, tpl_v_list(l), "each", 4, args, 0, NULL, NULL, 0, &r) < 0) return -1;
        *out = r.type == TPL_T_LIST && r.u.list == l ? self : r;   /* a break's value */
        return 0;
    }
    tpl_builtin_kind k[3];
    int nk = kinds_for(self, k);
    for (int i = 0; i < nk; i++) {
        int id = tpl_vm_method_find(vm, k[i], name, n);
        if (id < 0) continue;
        if (k[i] == TPL_BK_RSTR && (self.flags & TPL_F_SYMBOL)) {
            int sm = sym_method(name, n);
            if (!sm) break;   /* (String's, not Symbol's: NoMethodError) */
            if (call_id(vm, id, self, args, npos, kwn, kwv, nkw, out) < 0) return -1;
            if (sm == 2 && out->type == TPL_T_STR) out->flags = TPL_F_SYMBOL;   /* (:a.upcase is :A) */
            return 0;
        }
        if (k[i] == TPL_BK_RARR && !is_array(self)) {
            if (!enumerable(name, n) && !(tpl_is_aseq_rb(self) && n == 4 && memcmp(name, "last", 4) == 0)) break;
            tpl_builtin_sig sig;
            int np = npos;   /* (keywords it does not take are one more argument, a Hash: call_id) */
            bool packed = nkw > 0;
            for (int k = 0; k < nkw && packed; k++) packed = !param_of(id, kwn[k]);
            if (packed) np++;
            if ((nkw == 0 || packed) && tpl_builtin_signature(id, &sig) &&
                ((sig.varargs < 0 && np + 1 > sig.npositional) || np + 1 < sig.nrequired)) {
                /* Ruby counts the arguments before it iterates (a beginless Range's map(1) is the ArgumentError,
                 * not "can't iterate"): the count's error, from a call on no items */
                tpl_list none = { 0, 0, NULL };
                return call_id(vm, id, tpl_v_list(&none), args, npos, kwn, kwv, nkw, out);
            }
            if (n == 4 && memcmp(name, "take", 4) == 0 && npos == 1 && nkw == 0) {
                /* Enumerable#take reads its count first: take(0) is [] without iterating ((0.5..2).take(0)) */
                tpl_value k = args[0];
                if (long_arg(vm, &k) < 0) return -1;
                if (k.u.i < 0) return tpl_vm_error(vm, TPL_ERR_VALUE, "attempt to take negative size (ArgumentError)");
                if (k.u.i == 0) {
                    tpl_list *r = new_list(vm, 0);
                    if (!r) return oom(vm);
                    *out = tpl_v_list(r);
                    out->flags = TPL_F_MUT_RB;
                    return 0;
                }
            }
            if (npos == 1 && nkw == 0 && args[0].type != TPL_T_NONE &&
                ((n == 10 && (memcmp(name, "each_slice", 10) == 0 || memcmp(name, "each_cons", 9) == 0)) ||
                 (n == 9 && memcmp(name, "each_cons", 9) == 0) ||
                 (tpl_vm_block(vm).pc && n == 6 && (memcmp(name, "min_by", 6) == 0 || memcmp(name, "max_by", 6) == 0)))) {
                /* the count is read before the items (NUM2LONG; each_slice's "invalid slice size", each_cons'
                 * "invalid size", nmin_run's "negative size (n)"): (..3).each_slice(0) { } is not "can't iterate" */
                tpl_value k = args[0];
                if (long_arg(vm, &k) < 0) return -1;
                if (name[0] == 'e' && k.u.i <= 0)
                    return tpl_vm_error(vm, TPL_ERR_VALUE, n == 10 && name[5] == 's' ? "invalid slice size (ArgumentError)" : "invalid size (ArgumentError)");
                if (name[0] == 'm' && k.u.i < 0) return tpl_vm_error(vm, TPL_ERR_VALUE, "negative size (%lld) (ArgumentError)", (long long)k.u.i);
                if (name[0] == 'm' && k.u.i == 0) {   /* (nmin_run: no items wanted, none read) */
                    tpl_list *r = new_list(vm, 0);
                    if (!r) return oom(vm);
                    *out = tpl_v_list(r);
                    out->flags = TPL_F_MUT_RB;
                    return 0;
                }
            }
            tpl_list *items;
            if (enum_items(vm, self, &items, "each") < 0) return -1;
            if (items->len == 0 && n == 3 && memcmp(name, "zip", 3) == 0 && zip_eachable(vm, args, npos) < 0) return -1;
            if (items->len == 0 && n == 3 && memcmp(name, "sum", 3) == 0 && npos == 1 && args[0].type == TPL_T_FLOAT) {
                /* enum_sum answers a Float init as f + c (its compensation, 0.0): {}.sum(-0.0) is 0.0 (Array#sum
                 * answers the init itself) */
                *out = tpl_v_float(args[0].u.f + 0.0);
                return 0;
            }
            bool blk = tpl_vm_block(vm).pc != 0;
            if (call_id(vm, id, tpl_v_list(items), args, npos, kwn, kwv, nkw, out) < 0) return -1;
            /* each, each_with_index and each_slice with a block answer the hash or range */
            if (blk && out->type == TPL_T_LIST && out->u.list == items && n >= 4 && memcmp(name, "each", 4) == 0) *out = self;
            return 0;
        }
        return call_id(vm, id, self, args, npos, kwn, kwv, nkw, out);
    }
    int id = tpl_vm_method_find(vm, TPL_BK_RANY, name, n);
    if (id >= 0) return call_id(vm, id, self, args, npos, kwn, kwv, nkw, out);
    return no_method(vm, self, name, n);
}

static bool num_end(tpl_value v) { return v.type == TPL_T_INT || v.type == TPL_T_FLOAT || v.type == TPL_T_BIGINT; }

/* A Range's own answers where iterating its items is not Ruby's way (range.c): max, min and count
 * without a block or arguments, from its ends; on an endless range (end nil, or an Integer begin
 * and an infinite Float end) first/take(n) and find/detect/find_index/take_while with a block,
 * iterating lazily; any other Enumerable method there is tpl's refusal (Ruby iterates it lazily or
 * forever). 1: not taken. */
static int range_method(tpl_vm *vm, tpl_value self, const char *name, size_t n, tpl_value *args, int npos, tpl_value *out)
{
#define IS(lit) (n == sizeof lit - 1 && memcmp(name, lit, sizeof lit - 1) == 0)
    tpl_value b = self.u.list->items[0], e = self.u.list->items[1];
    bool excl = self.u.list->items[2].u.i != 0, blk = tpl_vm_block(vm).pc != 0, ok;
    if (!blk && b.type == TPL_T_NONE) {
        /* a beginless Range's blockless each, map, select, each_slice(2), step(2), ...: Ruby's Enumerator,
         * which fails only when it iterates (can't iterate from NilClass) and answers size, inspect, ...
         * without iterating; tpl's Enumerators hold their items: its refusal, not the TypeError a rescue
         * would take */
        if ((IS("chunk_while") || IS("slice_when")) && npos == 0)
            return tpl_vm_error(vm, TPL_ERR_TYPE, "tried to create Proc object without a block (ArgumentError)");
        if (enum_maker(self, name, n) || enum_blockful(name, n, npos) || (npos == 0 && (IS("take_while") || IS("drop_while"))))
            return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: Range#%.*s without a block on a beginless range "
                                "(Ruby answers an Enumerator that cannot iterate)", (int)n, name);
    }
    if (npos == 1 && is_range(args[0]) && (IS("===") || IS("include?") || IS("member?"))) {   /* only cover? takes a range */
        *out = tpl_v_bool(false);
        return 0;
    }
    if (!blk && npos == 0 && IS("count") && (b.type == TPL_T_NONE || e.type == TPL_T_NONE)) { *out = tpl_v_float(INFINITY); return 0; }
    if (IS("min") && (blk || npos)) {   /* range_min: with a block Enumerable's, with a count range_first */
        if (b.type == TPL_T_NONE) return tpl_vm_error(vm, TPL_ERR_TYPE, "cannot get the minimum of beginless range (RangeError)");
        if (blk && e.type == TPL_T_NONE)
            return tpl_vm_error(vm, TPL_ERR_TYPE, "cannot get the minimum of endless range with custom comparison method (RangeError)");
        if (blk) return 1;
        if (npos != 1) return tpl_vm_error(vm, TPL_ERR_TYPE, "wrong number of arguments (given %d, expected 1) (ArgumentError)", npos);
        tpl_value k = args[0];
        if (long_arg(vm, &k) < 0) return -1;   /* (NUM2LONG, then rb_ary_new2's check, then each) */
        if (k.u.i < 0) return tpl_vm_error(vm, TPL_ERR_TYPE, "negative array size (or size too big) (ArgumentError)");
        return tpl_rb_send(vm, self, "first", 5, &k, 1, NULL, NULL, 0, out);
    }
    if (IS("max") && (blk || npos || (excl && !num_end(e)))) {   /* range_max: Enumerable's (nmin_run: max(0) iterates nothing) */
        if (e.type == TPL_T_NONE) return tpl_vm_error(vm, TPL_ERR_TYPE, "cannot get the maximum of endless range (RangeError)");
        if (b.type == TPL_T_NONE) return tpl_vm_error(vm, TPL_ERR_TYPE, "cannot get the maximum of beginless range with custom comparison method (RangeError)");
        if (npos == 1 && args[0].type != TPL_T_NONE) {   /* (max(nil) is max) */
            tpl_value k = args[0];
            if (long_arg(vm, &k) < 0) return -1;
            if (k.u.i < 0) return tpl_vm_error(vm, TPL_ERR_TYPE, "negative size (%lld) (ArgumentError)", (long long)k.u.i);
            if (nmin_size(vm, k.u.i, false) < 0) return -1;
            if (k.u.i == 0) {
                tpl_list *r = new_list(vm, 0);
                if (!r) return oom(vm);
                *out = tpl_v_list(r);
                out->flags = TPL_F_MUT_RB;
                return 0;
            }
        }
        return 1;
    }
    if (!blk && npos == 0 && IS("minmax") && (b.type != TPL_T_INT || e.type != TPL_T_INT)) {   /* range_minmax: [min, max] */
        tpl_list *r = new_list(vm, 2);
        if (!r) return oom(vm);
        if (tpl_rb_send(vm, self, "min", 3, NULL, 0, NULL, NULL, 0, &r->items[0]) < 0) return -1;
        if (tpl_rb_send(vm, self, "max", 3, NULL, 0, NULL, NULL, 0, &r->items[1]) < 0) return -1;
        r->len = 2;
        *out = tpl_v_list(r);
        out->flags = TPL_F_MUT_RB;
        return 0;
    }
    if (!blk && npos == 0 && IS("max") && (b.type != TPL_T_INT || e.type != TPL_T_INT)) {
        if (e.type == TPL_T_NONE) return tpl_vm_error(vm, TPL_ERR_TYPE, "cannot get the maximum of endless range (RangeError)");
        if (!(excl && !num_end(e))) {
            int c = b.type == TPL_T_NONE ? -1 : rb_cmp(b, e, &ok, NULL);
            if (b.type != TPL_T_NONE && !ok) return cmp_fail(vm, b, e);
            if (c > 0) { *out = tpl_v_none(); return 0; }
            if (!excl) { *out = e; return 0; }
            if (e.type != TPL_T_INT) return tpl_vm_error(vm, TPL_ERR_TYPE, "cannot exclude non Integer end value (TypeError)");
            if (c == 0) { *out = tpl_v_none(); return 0; }
            return tpl_vm_error(vm, TPL_ERR_TYPE, "cannot exclude end value with non Integer begin value (TypeError)");
        }
        if (b.type == TPL_T_NONE) return tpl_vm_error(vm, TPL_ERR_TYPE, "cannot get the maximum of beginless range with custom comparison method (RangeError)");
        return 1;
    }
    if (!blk && npos == 0 && IS("min") && (b.type != TPL_T_INT || e.type != TPL_T_INT)) {
        if (b.type == TPL_T_NONE) return tpl_vm_error(vm, TPL_ERR_TYPE, "cannot get the minimum of beginless range (RangeError)");
        if (!(excl && !num_end(e))) {
            int c = e.type == TPL_T_NONE ? -1 : rb_cmp(b, e, &ok, NULL);
            if (e.type != TPL_T_NONE && !ok) return cmp_fail(vm, b, e);
            *out = c > 0 || (c == 0 && excl) ? tpl_v_none() : b;
            return 0;
        }
        return 1;
    }
    bool endless = e.type == TPL_T_NONE || (b.type == TPL_T_INT && e.type == TPL_T_FLOAT && isinf(e.u.f) && e.u.f > 0);
    if (!endless || b.type == TPL_T_NONE) return 1;
    if (b.type != TPL_T_INT && !(b.type == TPL_T_STR && !(b.flags & TPL_F_CLASS_RB))) return 1;
    if (!blk && npos == 1 && (IS("first") || IS("take"))) {
        if (args[0].type != TPL_T_INT) return 1;
        int64_t k = args[0].u.i;
        if (k < 0) return tpl_vm_error(vm, TPL_ERR_TYPE, IS("take") ? "attempt to take negative size (ArgumentError)" : "negative array size (or size too big) (ArgumentError)");
        if (k > 10000000 || (b.type == TPL_T_INT && b.u.i > INT64_MAX - k)) return tpl_vm_error(vm, TPL_ERR_LIMIT, "range too large");
        tpl_list *l = new_list(vm, k ? (uint32_t)k : 1);
        if (!l) return oom(vm);
        tpl_value v = b;
        for (int64_t i = 0; i < k; i++) {
            l->items[l->len++] = v;
            v = v.type == TPL_T_INT ? tpl_v_int(v.u.i + 1) : str_succ(vm, v);
            if (v.type != TPL_T_INT && !v.u.s) return oom(vm);
        }
        *out = tpl_v_list(l);
        out->flags = TPL_F_MUT_RB;
        return 0;
    }
    if (blk && npos == 0 && (IS("find") || IS("detect") || IS("find_index") || IS("take_while"))) {
        tpl_rb_block bk = tpl_vm_block(vm);
        tpl_list *tw = NULL;
        if (IS("take_while") && !(tw = new_list(vm, 8))) return oom(vm);
        tpl_value v = b;
        for (int64_t i = 0;; i++) {
            if (i >= 10000000 || (v.type == TPL_T_INT && v.u.i == INT64_MAX)) return tpl_vm_error(vm, TPL_ERR_LIMIT, "range too large");
            tpl_value r;
            int yr = tpl_rb_yield(vm, &bk, &v, 1, &r);
            if (yr < 0) return -1;
            if (yr > 0) { *out = r; return 0; }
            if (tw) {
                if (!tpl_truthy_rb(r)) { *out = tpl_v_list(tw); out->flags = TPL_F_MUT_RB; return 0; }
                if (!tpl_list_push(A(vm), tw, v)) return oom(vm);
            } else if (tpl_truthy_rb(r)) {
                *out = IS("find_index") ? tpl_v_int(i) : v;
                return 0;
            }
            v = v.type == TPL_T_INT ? tpl_v_int(v.u.i + 1) : str_succ(vm, v);
            if (v.type != TPL_T_INT && !v.u.s) return oom(vm);
        }
    }
    if (blk && b.type == TPL_T_INT && ((npos == 0 && (IS("each") || IS("each_with_index"))) ||
                                       (npos == 1 && args[0].type == TPL_T_INT && args[0].u.i > 0 && (IS("step") || IS("each_slice"))))) {
        /* (1..).each / each_with_index / step(n) / each_slice(n) with a block: until a break (its value), or the fuel */
        tpl_rb_block bk = tpl_vm_block(vm);
        int64_t by = npos ? args[0].u.i : 1, v = b.u.i;
        bool slice = IS("each_slice"), indexed = IS("each_with_index");
        for (int64_t i = 0;; i++, v += by) {
            if (v > INT64_MAX - by) return tpl_vm_error(vm, TPL_ERR_LIMIT, "range too large");
            tpl_value y[2] = { tpl_v_int(v), tpl_v_int(i) }, r;
            if (slice) {
                tpl_list *l = new_list(vm, by > 64 ? 64 : (uint32_t)by);
                if (!l) return oom(vm);
                for (int64_t k = 0; k < by; k++)
                    if (!tpl_list_push(A(vm), l, tpl_v_int(v + k))) return oom(vm);
                y[0] = tpl_v_list(l);
                y[0].flags = TPL_F_MUT_RB;
            }
            int yr = tpl_rb_yield(vm, &bk, y, indexed ? 2 : 1, &r);
            if (yr < 0) return -1;
            if (yr > 0) { *out = r; return 0; }
        }
    }
    static const char *const keep[] = { "to_a", "entries", "to_ary", "first", "last", "min", "max", "minmax", "size", "count",
        "begin", "end", "exclude_end?", "include?", "member?", "cover?", "===", "==", "eql?", "inspect", "to_s", "hash",
        "class", "is_a?", "kind_of?", "instance_of?", "nil?", "frozen?", "then", "itself", "respond_to?", NULL };
    for (int i = 0; keep[i]; i++)
        if (strlen(keep[i]) == n && memcmp(keep[i], name, n) == 0) return 1;
    if (name[0] == '(' || enumerable(name, n) || rb_core_has("Range", name, n))
        return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: Range#%.*s on an endless range (Ruby iterates it lazily)", (int)n, name);
    return 1;
#undef IS
}

/* rb_send_impl's path for a receiver without flags, no block and no keywords, when neither
 * operator_method (operator names only) nor the `call` object takes it: its type's kind, a Hash's
 * own methods before Array's (those run on the items: not plain), then Kernel's. */
static bool enum_maker(tpl_value self, const char *name, size_t n);

int tpl_rb_plain_method(tpl_vm *vm, tpl_value self, const char *name, size_t n, const void **except)
{
    *except = NULL;
    if (self.flags || n == 0 || !((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= 'A' && name[0] <= 'Z') || name[0] == '_'))
        return -1;
    if (enum_maker(self, name, n) || bang_enum(self, name, n)) return -1;   /* (blockless: an Enumerator, tpl_rb_send) */
    if (not_own_method(self, name, n)) return -1;   /* (NoMethodError: tpl_rb_send) */
    if (n == 4 && memcmp(name, "gsub", 4) == 0) return -1;   /* (gsub(pattern) without a block: lazy_args) */
    tpl_builtin_kind k;
    switch (self.type) {
    case TPL_T_STR: k = TPL_BK_RSTR; break;
    case TPL_T_INT: case TPL_T_FLOAT: k = TPL_BK_RNUM; break;
    case TPL_T_LIST: k = TPL_BK_RARR; break;
    case TPL_T_MAP: k = TPL_BK_RHASH; break;
    default: return -1;
    }
    int id = tpl_vm_method_find(vm, k, name, n);
    if (id < 0 && self.type == TPL_T_MAP && tpl_vm_method_find(vm, TPL_BK_RARR, name, n) >= 0) return -1;
    if (id < 0) id = tpl_vm_method_find(vm, TPL_BK_RANY, name, n);
    if (id >= 0 && self.type == TPL_T_MAP) {
        tpl_value call = tpl_prompt_call(vm);
        if (call.type == TPL_T_MAP) *except = call.u.map;
    }
    return id;
}

static int rb_getitem(tpl_vm *vm, tpl_value obj, tpl_value key, tpl_value *out);

/* GETITEM_RB's obj[key] is a call without a block: the block of the method whose block is running
 * (a rescue modifier's, a begin's, an each's) is not this call's (Hash[x] would take it). */
int tpl_rb_getitem(tpl_vm *vm, tpl_value obj, tpl_value key, tpl_value *out)
{
    tpl_rb_block save = tpl_vm_set_block(vm, (tpl_rb_block){ 0, 0, 0 });
    int rc = rb_getitem(vm, obj, key, out);
    tpl_vm_set_block(vm, save);
    return rc;
}

/* The key a Hash's [], key?, fetch and dig look up: a Symbol as its String in a Hash copied from the
 * render state's (tpl_map.rb_state: the reference's StateHash converts it); key itself elsewhere (a plain
 * Ruby Hash keeps :k and "k" apart; the state's own Hashes, all String keys, read :k as "k"). */
static tpl_value state_key(const tpl_map *m, tpl_value key)
{
    if ((!m->eql || m->rb_state) && key.type == TPL_T_STR && (key.flags & TPL_F_SYMBOL)) key.flags &= (uint8_t)~TPL_F_SYMBOL;
    return key;
}

static int rb_getitem(tpl_vm *vm, tpl_value obj, tpl_value key, tpl_value *out)
{
    switch (obj.type) {
    case TPL_T_MAP: {
        key = state_key(obj.u.map, key);
        tpl_value *hit = tpl_map_get(obj.u.map, key);
        if (hit) { *out = *hit; return 0; }
        const rb_hash_default *d = obj.u.map->rb_default;
        if (d && d->blk.pc) {
            /* Hash.new { |h, k| ... }: the block's value (it may store it: h[k] = v) */
            tpl_rb_block blk = d->blk;
            tpl_value args[2] = { obj, key };
            return tpl_rb_yield(vm, &blk, args, 2, out) < 0 ? -1 : 0;
        }
        *out = d ? d->value : tpl_v_none();
        return 0;
    }
    case TPL_T_LIST:
    case TPL_T_STR:
        if (is_range(obj)) break;
        return tpl_rb_send(vm, obj, "[]", 2, &key, 1, NULL, NULL, 0, out);
    case TPL_T_INT:   /* Integer#[]: a bit */
    case TPL_T_BIGINT:
        return tpl_rb_send(vm, obj, "[]", 2, &key, 1, NULL, NULL, 0, out);
    case TPL_T_HOST: { /* the host's [] */
        int rc = tpl_hobj_item(vm, obj, key, out);
        if (rc <= 0) return rc;
        break;
    }
    default:
        break;
    }
    return no_method(vm, obj, "[]", 2);
}

/* ------------------------------------------------------------------ Kernel */

int r_k_Array(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value v = a[0];
    if (is_array(v)) { *out = v; return 0; }
    if (v.type == TPL_T_NONE) { *out = tpl_v_list(new_list(vm, 0)); return out->u.list ? 0 : oom(vm); }
    if (is_range(v)) return r_range_to_a(vm, a, out);   /* (Range#to_a: RangeError for an endless one) */
    if (v.type == TPL_T_MAP) {
        tpl_list *l;
        if (enum_items(vm, v, &l, "to_a") < 0) return -1;
        *out = tpl_v_list(l);
        return 0;
    }
    tpl_list *l = new_list(vm, 1);
    if (!l) return oom(vm);
    l->items[l->len++] = v;
    *out = tpl_v_list(l);
    return 0;
}

/* Kernel#Hash: a Hash as it is, nil and [] an empty Hash, anything else (to_hash only) TypeError. */
int r_k_Hash(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value v = a[0];
    if (v.type == TPL_T_MAP) { *out = v; return 0; }
    if (v.type == TPL_T_NONE || v.type == TPL_T_UNDEF || (is_array(v) && v.u.list->len == 0)) {
        tpl_map *m = tpl_map_new(A(vm), 0);
        if (!m) return oom(vm);
        *out = tpl_v_map(m);
        return 0;
    }
    return tpl_vm_error(vm, TPL_ERR_TYPE, "can't convert %s into Hash (TypeError)", conv_name(v));
}

static bool rb_space(char c);
static int str_to_i(tpl_vm *vm, tpl_value s, int base, bool strict, tpl_value *out);
static int str_to_f(tpl_vm *vm, tpl_value s, bool strict, tpl_value *out);

/* Integer()/Float()'s keywords (**kw, a Hash): `exception: true|false` (*exc), Ruby's errors for others */
static int conv_kw(tpl_vm *vm, tpl_value kw, bool *exc)
{
    *exc = true;
    if (kw.type != TPL_T_MAP) return 0;
    tpl_sb b;
    tpl_sb_init(&b, A(vm));
    int unknown = 0;
    for (uint32_t i = 0; i < kw.u.map->len; i++) {
        tpl_value k = kw.u.map->e[i].key, v = kw.u.map->e[i].val;
        if (k.type == TPL_T_STR && k.len == 9 && !memcmp(k.u.s, "exception", 9)) {
            if (v.type != TPL_T_BOOL) {
                tpl_sb ib;
                tpl_sb_init(&ib, A(vm));
                tpl_rb_inspect(&ib, v);
                if (ib.failed) return tpl_vm_sb_error(vm, &ib, "while getting the repr of an object");
                tpl_value s = tpl_sb_value(&ib);
                return tpl_vm_error(vm, TPL_ERR_TYPE, "expected true or false as exception: %.*s (ArgumentError)", (int)s.len, s.u.s);
            }
            *exc = v.u.i != 0;
            continue;
        }
        tpl_sb_puts(&b, unknown++ ? ", :" : ":");
        if (k.type == TPL_T_STR) tpl_sb_put(&b, k.u.s, k.len); else tpl_rb_inspect(&b, k);
    }
    if (b.failed) return tpl_vm_sb_error(vm, &b, "while listing keywords");
    if (unknown) {
        tpl_value s = tpl_sb_value(&b);
        return tpl_vm_error(vm, TPL_ERR_TYPE, "unknown keyword%s: %.*s (ArgumentError)", unknown > 1 ? "s" : "", (int)s.len, s.u.s);
    }
    return 0;
}

/* A conversion's result with exception: false: nil for an error Ruby's rescue would catch */
static int conv_result(tpl_vm *vm, int rc, bool exc, tpl_value *out)
{
    if (rc >= 0 || exc) return rc;
    char msg[8];
    if (!tpl_vm_rescue(vm, msg, sizeof msg)) return -1;
    *out = tpl_v_none();
    return 0;
}

static int k_integer(tpl_vm *vm, tpl_value v, bool has_base, int base, tpl_value *out)
{
    if (has_base && !(v.type == TPL_T_STR && !(v.flags & TPL_F_SYMBOL)))
        return tpl_vm_error(vm, TPL_ERR_TYPE, "base specified for non string value (ArgumentError)");
    if (v.type == TPL_T_INT || v.type == TPL_T_BIGINT) { *out = v; return 0; }
    if (v.type == TPL_T_FLOAT) return r_num_to_i(vm, &v, out);
    if (tpl_is_rat(v)) return rat_round(vm, v, NULL, 3, out);
    if (v.type == TPL_T_STR && !(v.flags & TPL_F_SYMBOL)) return str_to_i(vm, v, base, true, out);
    return tpl_vm_error(vm, TPL_ERR_TYPE, "can't convert %s into Integer (TypeError)", conv_name(v));
}

/* Integer(v, base = nil, exception: true). Integer(s, nil): no base (rb_convert_to_integer reads nil
 * as 0); a negative base: the string's prefix (0x, 0b, 0o, 0d, a leading 0 octal), else its
 * magnitude (-1: 10), as rb_int_parse_cstr. An invalid radix is an error also with exception: false. */
int r_k_Integer(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    bool exc;
    if (conv_kw(vm, a[2], &exc) < 0) return -1;
    tpl_value v = a[0];
    bool has_base = tpl_given(a[1]) && a[1].type != TPL_T_NONE, str = v.type == TPL_T_STR && !(v.flags & TPL_F_SYMBOL);
    int64_t base = 0;
    if (has_base && str) {
        if (radix_arg(vm, a[1], &base) < 0) return -1;
        if (base < 0) {
            int64_t mag = base < -1 ? -base : 10;
            if (mag > 36) return tpl_vm_error(vm, TPL_ERR_TYPE, "invalid radix %lld (ArgumentError)", (long long)mag);
            size_t i = 0;
            while (i < v.len && rb_space(v.u.s[i])) i++;
            if (i < v.len && (v.u.s[i] == '-' || v.u.s[i] == '+')) i++;
            base = i + 1 < v.len && v.u.s[i] == '0' ? 0 : mag;
        }
        if (base == 1 || base > 36) return str_to_i(vm, v, (int)base, true, out);
    }
    return conv_result(vm, k_integer(vm, v, has_base, (int)base, out), exc, out);
}

static int k_float(tpl_vm *vm, tpl_value v, tpl_value *out)
{
    if (is_num(v) || v.type == TPL_T_BIGINT) { *out = tpl_v_float(dbl(v)); return 0; }
    if (tpl_is_rat(v)) { *out = tpl_v_float(tpl_rat_to_double(v)); return 0; }
    if (v.type == TPL_T_STR && !(v.flags & TPL_F_SYMBOL)) return str_to_f(vm, v, true, out);
    return tpl_vm_error(vm, TPL_ERR_TYPE, "can't convert %s into Float (TypeError)", conv_name(v));
}

/* Float(v, exception: true) */
int r_k_Float(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    bool exc;
    if (conv_kw(vm, a[1], &exc) < 0) return -1;
    return conv_result(vm, k_float(vm, a[0], out), exc, out);
}

int r_k_String(tpl_vm *vm, tpl_value *a, tpl_value *out) { return str_of_checked(vm, a[0], out); }

/* (defined)(key, found, otherwise): defined?(name) for a name the template never assigned: `found`
 * when the render's state has the key (a local of the binding, or an @ivar), else `otherwise`. */
int r_k_defined_state(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value st = tpl_vm_state(vm);
    bool has = st.type == TPL_T_MAP && a[0].type == TPL_T_STR && tpl_map_get_str(st.u.map, a[0].u.s, a[0].len, tpl_hash_str(a[0].u.s, a[0].len));
    /* an @ivar with a self object (tpl_render_set_self_val): self's, asked (send "@x": missing when
     * not set), as LOAD_IVAR_RB reads it — the state's only while it holds self's @ivars
     * (tpl_render_set_self_ivars_in_state) and has this one */
    tpl_value self = tpl_vm_self(vm);
    if (self.type == TPL_T_HOST && !(has && tpl_vm_ivars_in_state(vm)) && a[0].type == TPL_T_STR && a[0].len < 255 &&
        a[1].type == TPL_T_STR && a[1].len == 17 && memcmp(a[1].u.s, "instance-variable", 17) == 0) {
        char iv[256];
        iv[0] = '@';
        memcpy(iv + 1, a[0].u.s, a[0].len);
        tpl_value got;
        int rc = tpl_hobj_send(vm, self, iv, a[0].len + 1, NULL, 0, NULL, NULL, 0, &got);
        if (rc < 0) return -1;
        has = rc == 0;
    }
    *out = has ? a[1] : a[2];
    return 0;
}

/* (host_runs)(): the host callbacks that ran code so far (tpl_vm_host_runs), as an Integer: what an
 * ERB held local was assigned at (lower_erb.c held_set) */
int r_k_host_runs(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    (void)a;
    *out = tpl_v_int((int64_t)(tpl_vm_host_runs(vm) & INT64_MAX));
    return 0;
}

/* (held)(value, name, since?): a local of an ERB template with a self read after Ruby code may have
 * run that may have changed its object in place (lower_erb.c held_guard): a String (not frozen),
 * Array or Hash is tpl's refusal, as tpl holds a copy of it — unless since, the (host_runs) when the
 * local was assigned, shows no Ruby code ran after (a bare name that was the binding's local, not a
 * method of self); other values are themselves. */
int r_k_held(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (a[2].type == TPL_T_INT && (uint64_t)a[2].u.i == (tpl_vm_host_runs(vm) & INT64_MAX)) { *out = a[0]; return 0; }
    if ((a[0].type == TPL_T_STR && !(a[0].flags & (TPL_F_FROZEN_RB | TPL_F_SYMBOL | TPL_F_REGEX_RB | TPL_F_CLASS_RB))) ||
        a[0].type == TPL_T_LIST || a[0].type == TPL_T_MAP) {
        int n = a[1].type == TPL_T_STR && a[1].len < 100 ? (int)a[1].len : 0;
        return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: `%.*s' read after Ruby code ran (a method of self): "
                            "it holds a String, Array or Hash of self's or the binding's, which that code may have changed in "
                            "place where tpl reads its copy", n, n ? a[1].u.s : "");
    }
    *out = a[0];
    return 0;
}

/* tr(text, lang: nil): the shared translation builtin (stdlib/prompt/markdown.c, stdlib/prompt/tr.c). */
int r_k_tr(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    return h_tr(vm, a, out);
}

/* ------------------------------------------------------------------ any object */

int r_any_nil_p(tpl_vm *vm, tpl_value *a, tpl_value *out) { (void)vm; *out = tpl_v_bool(a[0].type == TPL_T_NONE); return 0; }

/* Exception#message: an exception's (a String flagged TPL_F_EXC_RB); a String has no message. */
int r_str_message(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (!(a[0].flags & TPL_F_EXC_RB)) return no_method(vm, a[0], "message", 7);
    return r_any_to_s(vm, a, out);
}

int r_any_to_s(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (a[0].type == TPL_T_STR) { *out = a[0]; out->flags = a[0].flags & TPL_F_SYMBOL ? 0 : a[0].flags & TPL_F_FROZEN_RB; return 0; }
    return str_of_checked(vm, a[0], out);
}

static bool is_exc(tpl_value v);
int r_any_inspect(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_sb b;
    tpl_sb_init(&b, A(vm));
    tpl_rb_inspect(&b, a[0]);
    if (b.failed) return tpl_vm_sb_error(vm, &b, "while getting the repr of an object");
    *out = tpl_sb_value(&b);
    return 0;
}

#define exc_class tpl_rb_exc_class
static bool is_exc(tpl_value v) { return v.type == TPL_T_STR && (v.flags & TPL_F_EXC_RB); }
static bool exc_is(tpl_value cls, tpl_value want);

static bool is_a(tpl_value v, tpl_value cls)
{
    if (is_exc(v)) return exc_is(exc_class(v), cls) || (cls.len == 6 && !memcmp(cls.u.s, "Object", 6)) ||
                          (cls.len == 6 && !memcmp(cls.u.s, "Kernel", 6)) || (cls.len == 11 && !memcmp(cls.u.s, "BasicObject", 11));
    const char *c = tpl_rb_class_name(v);
    size_t n = cls.len;
#define IS(lit) (n == sizeof(lit) - 1 && memcmp(cls.u.s, lit, n) == 0)
    if (IS("Object") || IS("BasicObject") || IS("Kernel")) return true;
    if (IS("Numeric") || IS("Comparable")) return is_num(v) || tpl_is_rat(v) || v.type == TPL_T_BIGINT || (IS("Comparable") && v.type == TPL_T_STR);
    if (IS("Module")) return tpl_value_vtype(v, false) == TPL_VT_CLASS;   /* (a class is a Module) */
    if (IS("Enumerable")) return v.type == TPL_T_LIST || v.type == TPL_T_MAP;
#undef IS
    return strlen(c) == n && memcmp(c, cls.u.s, n) == 0;
}

int r_any_is_a_p(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (a[1].type != TPL_T_STR || !(a[1].flags & TPL_F_CLASS_RB))
        return tpl_vm_error(vm, TPL_ERR_TYPE, "class or module required (TypeError)");
    *out = tpl_v_bool(is_a(a[0], a[1]));
    return 0;
}

/* Object#instance_of?(klass): klass is the value's own class (not an ancestor: 1.instance_of?(Numeric) is false). */
int r_any_instance_of_p(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (a[1].type != TPL_T_STR || !(a[1].flags & TPL_F_CLASS_RB))
        return tpl_vm_error(vm, TPL_ERR_TYPE, "class or module required (TypeError)");
    if (is_exc(a[0])) {
        tpl_value c = exc_class(a[0]);
        *out = tpl_v_bool(c.len == a[1].len && memcmp(c.u.s, a[1].u.s, c.len) == 0);
        return 0;
    }
    const char *cn = tpl_rb_class_name(a[0].type == TPL_T_UNDEF ? tpl_v_none() : a[0]);
    *out = tpl_v_bool(strlen(cn) == a[1].len && memcmp(cn, a[1].u.s, a[1].len) == 0);
    return 0;
}

int r_any_eql_p(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    int eq = tpl_eql_metered(a[0], a[1], tpl_vm_arena(vm)->fuel);
    if (eq == -2) return rb_deep_error_at(vm, (int)TPL_NEST_MAX);
    if (eq < 0) return tpl_vm_nomem(vm);
    *out = tpl_v_bool(eq == 1);
    return 0;
}

/* a.hash == b.hash (compiler/lower_erb.c "(hash_eq)"): Ruby's hash values are seeded per process, but for
 * nil, booleans, Integers, Floats other than NaN (whose hash is equal where eql? is not), Rationals and
 * Strings two are equal exactly when the values are eql?. Any other value is the refusal a.hash is. */
int r_any_hash_eq(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    for (int i = 0; i < 2; i++) {
        tpl_value v = a[i];
        bool ok = v.type == TPL_T_NONE || v.type == TPL_T_UNDEF || v.type == TPL_T_BOOL || v.type == TPL_T_INT ||
                  v.type == TPL_T_BIGINT || v.type == TPL_T_RATIONAL || (v.type == TPL_T_FLOAT && v.u.f == v.u.f) ||
                  (v.type == TPL_T_STR && !(v.flags & (TPL_F_SYMBOL | TPL_F_REGEX_RB | TPL_F_CLASS_RB | TPL_F_EXC_RB)) &&
                   !tpl_is_gemv_rb(v) && !tpl_is_enum_rb(v));
        if (!ok) {   /* what v.hash is (the refusal), then equal hashes */
            tpl_value h[2];
            for (int j = 0; j < 2; j++)
                if (tpl_rb_send(vm, a[j], "hash", 4, NULL, 0, NULL, NULL, 0, &h[j]) < 0) return -1;
            return r_any_eql_p(vm, h, out);
        }
    }
    return r_any_eql_p(vm, a, out);
}

/* Object#equal?: the same object. Arrays, hashes and strings by identity (the same storage); nil,
 * booleans, integers, floats and symbols, which Ruby does not allocate, by value (eql?). */
int r_any_equal_p(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value x = a[0], y = a[1];
    bool same;
    if (x.type != y.type) same = false;
    else if (x.type == TPL_T_LIST || x.type == TPL_T_MAP) same = x.u.p == y.u.p;
    else if (x.type == TPL_T_STR && !(x.flags & TPL_F_SYMBOL)) same = x.u.s == y.u.s && x.len == y.len && x.flags == y.flags;
    else if (x.type == TPL_T_BIGINT) same = false;
    else if (x.type == TPL_T_RATIONAL) same = x.u.s == y.u.s;   /* (an object: the same text, as to_r answers self) */
    else return r_any_eql_p(vm, a, out);
    *out = tpl_v_bool(same);
    return 0;
}

int r_any_cmp(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    bool ok;
    bool deep;
    int c = rb_cmp_deep(a[0], a[1], &ok, tpl_vm_arena(vm)->fuel, &deep);
    if (!ok && *tpl_vm_arena(vm)->fuel == 0) return tpl_vm_nomem(vm);
    if (deep) return rb_deep_error(vm);
    *out = ok ? tpl_v_int(c) : tpl_v_none();
    return 0;
}

static int rx_match(tpl_vm *vm, tpl_value s, tpl_value p, int64_t pos, bool set_last, tpl_value *md, int64_t *at);
static int want_pattern(tpl_vm *vm, tpl_value v);

int r_any_eqq(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value p = a[0], v = a[1];
    if (is_range(p)) { *out = tpl_v_bool(range_cover(p, v)); return 0; }
    if (tpl_is_gemv_rb(p)) {   /* Object#===: == (Comparable's) */
        bool ok;
        int c = gem_cmp_any(p, v, &ok);
        *out = tpl_v_bool(ok && c == 0);
        return 0;
    }
    if (p.type == TPL_T_STR && (p.flags & TPL_F_CLASS_RB)) { *out = tpl_v_bool(is_a(v, p)); return 0; }
    if (p.type == TPL_T_STR && (p.flags & TPL_F_REGEX_RB)) {   /* Regexp#===: sets $~ */
        if (v.type != TPL_T_STR || (v.flags & (TPL_F_CLASS_RB | TPL_F_REGEX_RB))) {
            tpl_vm_set_rb_match(vm, tpl_v_none());
            *out = tpl_v_bool(false);
            return 0;
        }
        tpl_value md;
        int64_t at;
        if (rx_match(vm, v, p, 0, true, &md, &at) < 0) return -1;
        *out = tpl_v_bool(md.type != TPL_T_NONE);
        return 0;
    }
    bool eq = false;
    if (tpl_vm_rb_equal(vm, p, v, &eq) < 0) return -1;
    *out = tpl_v_bool(eq);
    return 0;
}

/* onig_foreach_name: each group number of a name gets the name (a list item per group 1..n). */
static int md_name(const UChar *name, const UChar *name_end, int ngroups, int *groups, OnigRegex re, void *arg)
{
    (void)re;
    void **ctx = arg;
    tpl_vm *vm = ctx[0];
    tpl_list *names = ctx[1];
    char *copy = tpl_arena_strdup(A(vm), (const char *)name, (size_t)(name_end - name));
    if (!copy) return -1;
    for (int i = 0; i < ngroups; i++)
        if (groups[i] >= 1 && (uint32_t)groups[i] <= names->len)
            names->items[groups[i] - 1] = tpl_v_str(copy, (size_t)(name_end - name));
    return 0;
}

/* The MatchData (TPL_F_MATCH_RB, runtime/value.h) of a successful search of s by pattern p (re:
 * its compiled regexp, for the group names; NULL for a String pattern). */
static int md_new(tpl_vm *vm, tpl_value s, tpl_value p, OnigRegex re, const OnigRegion *reg, tpl_value *out)
{
    uint32_t ng = (uint32_t)reg->num_regs;
    /* (a String pattern's, re NULL: one item more, which Ruby's inspect shows as #<MatchData: TEXT>, runtime/print.c) */
    tpl_list *l = new_list(vm, 3 + 2 * ng + !re), *names = NULL;
    if (!l) return oom(vm);
    if (re && onig_number_of_names(re) > 0) {
        if (!(names = new_list(vm, ng > 1 ? ng - 1 : 1))) return oom(vm);
        for (uint32_t g = 1; g < ng; g++) names->items[names->len++] = tpl_v_none();
        void *ctx[2] = { vm, names };
        if (onig_foreach_name(re, md_name, ctx) != 0) return oom(vm);
    }
    l->items[0] = s;
    l->items[0].flags = TPL_F_FROZEN_RB;
    l->items[1] = p;
    l->items[2] = names ? tpl_v_list(names) : tpl_v_none();
    for (uint32_t g = 0; g < ng; g++) {
        l->items[3 + 2 * g] = tpl_v_int(reg->beg[g] >= 0 ? reg->beg[g] : -1);
        l->items[4 + 2 * g] = tpl_v_int(reg->beg[g] >= 0 ? reg->end[g] : -1);
    }
    l->len = 3 + 2 * ng;
    if (!re) l->items[l->len++] = tpl_v_none();
    *out = tpl_v_list(l);
    out->flags = TPL_F_MATCH_RB;
    return 0;
}

/* Searches string s for regexp p from character `pos` (negative: from the end; past the end: no
 * match): *md is the MatchData or nil, *at the match's character index. $~ is set when set_last. */
static int rx_match(tpl_vm *vm, tpl_value s, tpl_value p, int64_t pos, bool set_last, tpl_value *md, int64_t *at)
{
    *md = tpl_v_none();
    int64_t len = (int64_t)tpl_utf8_len(s.u.s, s.len);
    if (pos < 0) pos += len;
    if (pos >= 0 && pos <= len) {
        OnigRegex re = rx_compile(vm, p);
        if (!re) return -1;
        OnigRegion *reg = onig_region_new();
        size_t from = tpl_utf8_offset(s.u.s, s.len, (size_t)pos);
        long r = reg ? rx_search(vm, re, s, from, reg) : -2;
        int rc = r == -2 ? (reg ? -1 : oom(vm)) : 0;
        if (r >= 0) {
            rc = md_new(vm, s, p, re, reg, md);
            *at = (int64_t)tpl_utf8_len(s.u.s, (size_t)r);
        }
        if (reg) onig_region_free(reg, 1);
        onig_free(re);
        if (rc < 0) return -1;
    }
    if (set_last) tpl_vm_set_rb_match(vm, *md);
    return 0;
}

static bool is_regex(tpl_value v) { return v.type == TPL_T_STR && (v.flags & TPL_F_REGEX_RB); }

/* Regexp#source: the pattern as written. A regex is held as Regexp#to_s, "(?mi-x:SRC)", where to_s
 * escaped each bare `/` (`%r{a/b}` is "(?-mix:a\\/b)"); Ruby's source has it bare, as its lexer
 * unescapes `\/` in `/a\/b/` too. */
int r_str_source(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value v = a[0];
    if (!is_regex(v)) return no_method(vm, v, "source", 6);
    size_t i = 0;
    if (v.len >= 5 && memcmp(v.u.s, "(?", 2) == 0) {
        while (i < v.len && v.u.s[i] != ':') i++;
        i++;
    }
    size_t end = i ? v.len - 1 : v.len;
    tpl_sb b;
    tpl_sb_init(&b, A(vm));
    for (; i < end; i++) {
        if (v.u.s[i] == '\\' && i + 1 < end) {
            if (v.u.s[i + 1] != '/') tpl_sb_putc(&b, '\\');
            i++;
        }
        tpl_sb_putc(&b, v.u.s[i]);
    }
    if (b.failed) return oom(vm);
    *out = tpl_sb_value(&b);
    return 0;
}

/* =~ : String#=~ and Regexp#=~ (the match's character index or nil; sets $~); Object#=~ is nil. */
int r_any_match_op(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value s = a[0], p = a[1];
    bool rx_self = is_regex(s);
    if (rx_self) { tpl_value t = s; s = p; p = t; }
    if (!is_regex(p)) {
        /* String =~ String is Ruby's TypeError; with anything else Object#=~ answers nil */
        if (s.type == TPL_T_STR && p.type == TPL_T_STR && !(p.flags & TPL_F_CLASS_RB))
            return tpl_vm_error(vm, TPL_ERR_TYPE, "type mismatch: String given (TypeError)");
        *out = tpl_v_none();
        return 0;
    }
    if (s.type != TPL_T_STR || (s.flags & TPL_F_CLASS_RB)) {
        if (rx_self && s.type != TPL_T_NONE && !(s.type == TPL_T_STR))
            return tpl_vm_error(vm, TPL_ERR_TYPE, "no implicit conversion of %s into String (TypeError)", conv_name(s));
        if (rx_self) tpl_vm_set_rb_match(vm, tpl_v_none());
        *out = tpl_v_none();
        return 0;
    }
    tpl_value md;
    int64_t at = 0;
    if (rx_match(vm, s, p, 0, true, &md, &at) < 0) return -1;
    *out = md.type == TPL_T_NONE ? md : tpl_v_int(at);
    return 0;
}

/* String#match(pattern, pos = 0) and Regexp#match(str, pos = 0): the MatchData or nil (sets $~);
 * a String pattern is a regexp source, as Ruby compiles it. With a block, the block's value on a
 * match (nil otherwise). */
/* A String given where Ruby's match/match? want a pattern is the source of a Regexp (get_pat): a bad one
 * is Ruby's "MESSAGE: /SOURCE/ (RegexpError)". */
static int str_pattern_check(tpl_vm *vm, tpl_value p)
{
    char msg[256];
    if (tpl_rb_regex_check(p.u.s, p.len, msg, sizeof msg)) return 0;
    const char *m = strncmp(msg, "invalid regular expression: ", 28) == 0 ? msg + 28 : msg;
    return tpl_vm_error(vm, TPL_ERR_TYPE, "%s: /%.*s/ (RegexpError)", m, (int)(p.len > 200 ? 200 : p.len), p.u.s);
}

/* The subject, pattern and start of String#match(?) and Regexp#match(?) (a Regexp receiver
 * swaps the first two; a String pattern is checked as a Regexp's source). 1: the subject is nil
 * (the caller answers), 0: go on, -1: error. */
static int match_args(tpl_vm *vm, const tpl_value *a, tpl_value *s, tpl_value *p, int64_t *pos)
{
    *s = a[0];
    *p = a[1];
    *pos = 0;
    if (is_regex(*s)) {
        tpl_value t = *s; *s = *p; *p = t;
        if (s->type == TPL_T_NONE) return 1;
        if (s->type != TPL_T_STR || (s->flags & (TPL_F_CLASS_RB | TPL_F_REGEX_RB)))
            return tpl_vm_error(vm, TPL_ERR_TYPE, "no implicit conversion of %s into String (TypeError)", conv_name(*s));
    } else if (want_pattern(vm, *p) < 0) {
        return -1;
    } else if (!is_regex(*p) && str_pattern_check(vm, *p) < 0) {
        return -1;
    }
    if (tpl_given(a[2])) {
        if (a[2].type != TPL_T_INT) return type_error(vm, TPL_VT_INT, a[2]);
        *pos = a[2].u.i;
    }
    return 0;
}

int r_str_match(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value s, p;
    int64_t pos;
    int rc = match_args(vm, a, &s, &p, &pos);
    if (rc < 0) return -1;
    if (rc) { tpl_vm_set_rb_match(vm, s); *out = s; return 0; }
    tpl_rb_block blk = tpl_vm_block(vm);
    int64_t at;
    if (rx_match(vm, s, p, pos, true, out, &at) < 0) return -1;
    if (blk.pc && out->type != TPL_T_NONE) {
        tpl_value md = *out;
        if (tpl_rb_yield(vm, &blk, &md, 1, out) < 0) return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ MatchData */

static uint32_t md_groups(tpl_value m) { return (m.u.list->len - 3) / 2; }
static int64_t md_beg(tpl_value m, uint32_t g) { return m.u.list->items[3 + 2 * g].u.i; }
static int64_t md_end(tpl_value m, uint32_t g) { return m.u.list->items[4 + 2 * g].u.i; }
static tpl_value md_group(tpl_value m, uint32_t g)
{
    tpl_value s = m.u.list->items[0];
    int64_t b = md_beg(m, g);
    return b < 0 ? tpl_v_none() : tpl_v_str(s.u.s + b, (size_t)(md_end(m, g) - b));
}

/* The group a MatchData index names: an Integer (negative from the end; -1 when out of range) or a
 * group name (String or Symbol: IndexError when the regexp has no such name; the last group of that
 * name that took part, as Ruby). -2 with the error set. */
static int64_t md_index(tpl_vm *vm, tpl_value m, tpl_value i, bool strict)
{
    int64_t n = md_groups(m);
    if (i.type == TPL_T_INT) {
        int64_t k = i.u.i < 0 ? i.u.i + n : i.u.i;
        if (k < 0 || k >= n) {
            if (strict) { tpl_vm_error(vm, TPL_ERR_TYPE, "index %lld out of matches (IndexError)", (long long)i.u.i); return -2; }
            return -1;
        }
        return k;
    }
    if (i.type == TPL_T_STR && !(i.flags & (TPL_F_REGEX_RB | TPL_F_CLASS_RB))) {
        tpl_value names = m.u.list->items[2];
        int64_t found = -1;
        for (uint32_t g = 0; names.type == TPL_T_LIST && g < names.u.list->len; g++) {
            tpl_value nm = names.u.list->items[g];
            if (nm.type == TPL_T_STR && nm.len == i.len && memcmp(nm.u.s, i.u.s, i.len) == 0 &&
                (found < 0 || md_beg(m, g + 1) >= 0))
                found = g + 1;
        }
        if (found < 0) {
            tpl_vm_error(vm, TPL_ERR_TYPE, "undefined group name reference: %.*s (IndexError)", (int)(i.len > 100 ? 100 : i.len), i.u.s);
            return -2;
        }
        return found;
    }
    tpl_vm_error(vm, TPL_ERR_TYPE, "no implicit conversion of %s into Integer (TypeError)", conv_name(i));
    return -2;
}

static int md_list(tpl_vm *vm, tpl_value m, uint32_t from, tpl_value *out)
{
    uint32_t n = md_groups(m);
    tpl_list *l = new_list(vm, n);
    if (!l) return oom(vm);
    for (uint32_t g = from; g < n; g++) l->items[l->len++] = md_group(m, g);
    *out = tpl_v_list(l);
    return 0;
}

int r_md_to_a(tpl_vm *vm, tpl_value *a, tpl_value *out) { return md_list(vm, a[0], 0, out); }
int r_md_captures(tpl_vm *vm, tpl_value *a, tpl_value *out) { return md_list(vm, a[0], 1, out); }
int r_md_size(tpl_vm *vm, tpl_value *a, tpl_value *out) { (void)vm; *out = tpl_v_int(md_groups(a[0])); return 0; }
int r_md_to_s(tpl_vm *vm, tpl_value *a, tpl_value *out) { (void)vm; *out = md_group(a[0], 0); return 0; }
int r_md_string(tpl_vm *vm, tpl_value *a, tpl_value *out) { (void)vm; *out = a[0].u.list->items[0]; return 0; }
int r_md_regexp(tpl_vm *vm, tpl_value *a, tpl_value *out) { (void)vm; *out = a[0].u.list->items[1]; return 0; }

int r_md_pre_match(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    (void)vm;
    tpl_value s = a[0].u.list->items[0];
    *out = tpl_v_str(s.u.s, (size_t)md_beg(a[0], 0));
    return 0;
}

int r_md_post_match(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    (void)vm;
    tpl_value s = a[0].u.list->items[0];
    size_t e = (size_t)md_end(a[0], 0);
    *out = tpl_v_str(s.u.s + e, s.len - e);
    return 0;
}

/* m[i] (Integer or group name), m[start, len] and m[range] (as to_a's) */
int r_md_getitem(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (tpl_given(a[2]) || is_range(a[1])) {
        tpl_value l, args[2] = { a[1], a[2] };
        if (md_list(vm, a[0], 0, &l) < 0) return -1;
        return tpl_rb_send(vm, l, "[]", 2, args, tpl_given(a[2]) ? 2 : 1, NULL, NULL, 0, out);
    }
    int64_t g = md_index(vm, a[0], a[1], false);
    if (g == -2) return -1;
    *out = g < 0 ? tpl_v_none() : md_group(a[0], (uint32_t)g);
    return 0;
}

int r_md_values_at(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *idx = a[1].u.list, *l = new_list(vm, idx->len);
    if (!l) return oom(vm);
    for (uint32_t k = 0; k < idx->len; k++) {
        tpl_value args[3] = { a[0], idx->items[k], tpl_v_unset() };
        if (r_md_getitem(vm, args, &l->items[l->len]) < 0) return -1;
        l->len++;
    }
    *out = tpl_v_list(l);
    return 0;
}

/* begin(n) / end(n) / offset(n): character offsets of group n (nil when it did not take part) */
static int md_offset(tpl_vm *vm, tpl_value *a, int which, tpl_value *out)
{
    int64_t g = md_index(vm, a[0], a[1], true);
    if (g == -2) return -1;
    tpl_value s = a[0].u.list->items[0];
    int64_t b = md_beg(a[0], (uint32_t)g), e = md_end(a[0], (uint32_t)g);
    tpl_value vb = b < 0 ? tpl_v_none() : tpl_v_int((int64_t)tpl_utf8_len(s.u.s, (size_t)b));
    tpl_value ve = b < 0 ? tpl_v_none() : tpl_v_int((int64_t)tpl_utf8_len(s.u.s, (size_t)e));
    if (which == 0) { *out = vb; return 0; }
    if (which == 1) { *out = ve; return 0; }
    tpl_list *l = new_list(vm, 2);
    if (!l) return oom(vm);
    l->items[0] = vb;
    l->items[1] = ve;
    l->len = 2;
    *out = tpl_v_list(l);
    return 0;
}

int r_md_begin(tpl_vm *vm, tpl_value *a, tpl_value *out) { return md_offset(vm, a, 0, out); }
int r_md_end(tpl_vm *vm, tpl_value *a, tpl_value *out) { return md_offset(vm, a, 1, out); }
int r_md_offset(tpl_vm *vm, tpl_value *a, tpl_value *out) { return md_offset(vm, a, 2, out); }

/* names: the regexp's group names, each once, in order */
int r_md_names(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value names = a[0].u.list->items[2];
    tpl_list *l = new_list(vm, 2);
    if (!l) return oom(vm);
    for (uint32_t g = 0; names.type == TPL_T_LIST && g < names.u.list->len; g++) {
        tpl_value nm = names.u.list->items[g];
        bool seen = nm.type != TPL_T_STR;
        for (uint32_t k = 0; k < l->len && !seen; k++) seen = l->items[k].len == nm.len && memcmp(l->items[k].u.s, nm.u.s, nm.len) == 0;
        if (!seen && !tpl_list_push(A(vm), l, nm)) return oom(vm);
    }
    *out = tpl_v_list(l);
    return 0;
}

/* named_captures: {"name" => the last group of that name that took part (or nil)} */
int r_md_named_captures(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value names;
    if (r_md_names(vm, a, &names) < 0) return -1;
    tpl_map *m = rb_map(vm, names.u.list->len);
    if (!m) return oom(vm);
    for (uint32_t k = 0; k < names.u.list->len; k++) {
        int64_t g = md_index(vm, a[0], names.u.list->items[k], false);
        if (g == -2) return -1;
        if (!tpl_map_set(A(vm), m, names.u.list->items[k], md_group(a[0], (uint32_t)g))) return oom(vm);
    }
    *out = tpl_v_map(m);
    return 0;
}

int r_any_class(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    (void)vm;
    if (is_exc(a[0])) *out = exc_class(a[0]);
    else { const char *c = tpl_rb_class_name(a[0]); *out = tpl_v_str(c, strlen(c)); }
    out->flags = TPL_F_CLASS_RB;
    return 0;
}

/* ------------------------------------------------------------------ respond_to?, send */

/* A method name a template may name: tpl's hidden methods ("(hash)", "$~", ...) are not Ruby's. */
static bool public_name(const char *name, size_t n) { return n > 0 && name[0] != '(' && name[0] != '$'; }

/* The name argument of send/respond_to?: a Symbol or a String. -1 with Ruby's TypeError. */
static int method_name(tpl_vm *vm, tpl_value v)
{
    if (v.type == TPL_T_STR && !(v.flags & (TPL_F_REGEX_RB | TPL_F_CLASS_RB))) return 0;
    int len;
    const char *insp = inspect_short(vm, v, &len);
    return tpl_vm_error(vm, TPL_ERR_TYPE, "%.*s is not a symbol nor a string (TypeError)", len, insp);
}

/* respond_to?(name): whether tpl_rb_send would find the method for this value (the methods tpl
 * implements, by the receiver's class; Enumerable's for hashes and ranges). A host object answers
 * for its plain data. */
int r_any_respond_to_p(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (method_name(vm, a[1]) < 0) return -1;
    const char *name = a[1].u.s;
    size_t n = a[1].len;
    tpl_value self = a[0];
    if (self.type == TPL_T_UNDEF) self = tpl_v_none();
    bool ok = false;
    if (public_name(name, n)) {
        tpl_builtin_kind k[3];
        int nk = kinds_for(self, k);
        for (int i = 0; i < nk && !ok; i++)
            ok = tpl_vm_method_find(vm, k[i], name, n) >= 0 && (k[i] != TPL_BK_RARR || is_array(self) || enumerable(name, n)) &&
                 (k[i] != TPL_BK_RSTR || !(self.flags & TPL_F_SYMBOL) || sym_method(name, n));
        ok = ok || tpl_vm_method_find(vm, TPL_BK_RANY, name, n) >= 0 || operator_known(self, name, n);
        if (tpl_is_enum_rb(self) && !ok)   /* its own methods (enum_method) */
            ok = (n == 4 && (memcmp(name, "next", 4) == 0 || memcmp(name, "peek", 4) == 0 || memcmp(name, "size", 4) == 0)) ||
                 (n == 6 && memcmp(name, "rewind", 6) == 0);
        if (tpl_is_enum_rb(self) && n == 4 && memcmp(name, "join", 4) == 0) ok = false;
        if (tpl_is_gemv_rb(self)) {   /* its own methods (gem_method), Comparable's and Object's */
            static const char *const gm[] = { "to_s", "version", "prerelease?", "segments", "canonical_segments", "release",
                "bump", "<=>", "eql?", "<", "<=", ">", ">=", "==", "between?", "clamp", NULL };
            ok = tpl_vm_method_find(vm, TPL_BK_RANY, name, n) >= 0;
            for (int i = 0; gm[i] && !ok; i++) ok = strlen(gm[i]) == n && memcmp(gm[i], name, n) == 0;
        } else if (!ok && self.type == TPL_T_STR && (self.flags & TPL_F_CLASS_RB)) {
            /* a class or module: its class methods in Ruby (File.respond_to?(:join)) and Class's */
            char cls[48];
            snprintf(cls, sizeof cls, "%.*s", (int)(self.len > 40 ? 40 : self.len), self.u.s);
            bool mod = class_is_module(self);
            bool cls_only = (n == 3 && memcmp(name, "new", 3) == 0) || (n == 8 && memcmp(name, "allocate", 8) == 0) ||
                            (n == 10 && memcmp(name, "superclass", 10) == 0) || (n == 10 && memcmp(name, "subclasses", 10) == 0);
            ok = (n == 4 && memcmp(name, "name", 4) == 0) || rb_core_has_sep(cls, '.', name, n) ||
                 ((!mod || !cls_only) && rb_core_has("Class", name, n));
            /* the classes whose instances are made otherwise (undef_method :new on their singleton):
             * Integer.respond_to?(:new) is false; Rational and Complex have no allocate either */
            static const char *const no_new[] = { "Integer", "Float", "Symbol", "NilClass", "TrueClass", "FalseClass",
                                                  "Rational", "Complex", "Method", NULL };
            if (ok && n == 3 && memcmp(name, "new", 3) == 0)
                for (int i = 0; no_new[i]; i++)
                    if (strcmp(cls, no_new[i]) == 0) ok = false;
            if (ok && n == 8 && memcmp(name, "allocate", 8) == 0 && (strcmp(cls, "Rational") == 0 || strcmp(cls, "Complex") == 0))
                ok = false;
        } else if (self.type != TPL_T_HOST && !(self.type == TPL_T_STR && (self.flags & (TPL_F_EXC_RB | TPL_F_CLASS_RB))) &&
                   !tpl_is_enum_rb(self) && !tpl_is_aseq_rb(self) && rb_core_has(tpl_rb_class_name(self), "class", 5)) {
            /* a value of a core class (Integer, Float, String, Array, Hash, Range, ...): Ruby's answer, its class's
             * public methods (tools/gen_rb_core_methods.rb), not which of them tpl runs: 1.respond_to?(:to_r) is true
             * where tpl has no to_r, 1.5.respond_to?(:even?) false where tpl runs Integer's even? on a Float too, and
             * [].respond_to?(:with_index) false ("Array~with_index": only its Enumerator has it) */
            const char *cls = tpl_rb_class_name(self);
            ok = rb_core_has(cls, name, n) && !rb_core_has_sep(cls, '~', name, n);
        }
    }
    if (!ok && public_name(name, n) && tpl_given(a[2]) && tpl_truthy_rb(a[2]))   /* include_all: private methods too */
        return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: respond_to? with include_all true (private "
                            "methods: 1.respond_to?(:puts, true) is true in Ruby)");
    *out = tpl_v_bool(ok);
    return 0;
}

/* Whether r.name changes a String, Array or Hash r in place: tpl's strings are values and a state's array or
 * hash is copied at its first change, which the lowering arranges only for a call it sees (compiler/
 * lower_erb.c; r.send(:name) with a Symbol literal is that call); by a name known at run time it is refused. */
static bool send_changes_receiver(tpl_value r, const char *name, size_t n)
{
    bool str = r.type == TPL_T_STR && !(r.flags & (TPL_F_SYMBOL | TPL_F_REGEX_RB | TPL_F_CLASS_RB));
    bool seq = (r.type == TPL_T_LIST && !(r.flags & TPL_F_RANGE_RB)) || r.type == TPL_T_MAP;
    if (!str && !seq) return false;
    if (n > 1 && name[n - 1] == '!' && !(n == 2 && name[0] == '!')) return true;
    if (n > 1 && name[n - 1] == '=' && name[n - 2] != '=' && name[n - 2] != '!' && name[n - 2] != '<' && name[n - 2] != '>')
        return true;   /* []=, default=, ... (not ==, !=, <=, >=) */
    static const char *const names[] = { "<<", "push", "append", "concat", "unshift", "prepend", "insert", "merge!",
        "update", "clear", "replace", "freeze", "delete", "delete_at", "delete_if", "keep_if", "store", "pop", "shift",
        "fill", "setbyte", "force_encoding", "compare_by_identity", "rehash", "initialize_copy",
        "instance_variable_set", "extend", "define_singleton_method", NULL };
    for (int i = 0; names[i]; i++)
        if (strlen(names[i]) == n && memcmp(names[i], name, n) == 0) return true;
    return false;
}

/* send / public_send / __send__(name, *args): the method call (with the block given to send), as
 * tpl_rb_send; tpl's hidden methods are Ruby's NoMethodError. */
int r_any_send(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (!tpl_given(a[1])) return tpl_vm_error(vm, TPL_ERR_TYPE, "no method name given (ArgumentError)");
    if (method_name(vm, a[1]) < 0) return -1;
    tpl_list *args = a[2].u.list;
    if (!public_name(a[1].u.s, a[1].len)) return no_method(vm, a[0], a[1].u.s, a[1].len);
    if (send_changes_receiver(a[0], a[1].u.s, a[1].len))
        return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: send of `%.*s', a method that changes its receiver "
                            "in place, by a name known only at run time (call it directly, or send a Symbol literal)",
                            (int)a[1].len, a[1].u.s);
    return tpl_rb_send(vm, a[0], a[1].u.s, a[1].len, args->items, (int)args->len, NULL, NULL, 0, out);
}

/* $~ and $1..$9, $& (compiler/lower_erb.c: names no template can call otherwise) */
int r_k_last_match(tpl_vm *vm, tpl_value *a, tpl_value *out) { (void)a; *out = tpl_vm_rb_match(vm); return 0; }

int r_k_nth_match(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value m = tpl_vm_rb_match(vm);
    if (m.type != TPL_T_LIST || !(m.flags & TPL_F_MATCH_RB) || a[0].type != TPL_T_INT) { *out = tpl_v_none(); return 0; }
    if (a[0].u.i == 100001 || a[0].u.i == 100002) {   /* $` and $' (compiler/lower_erb.c) */
        tpl_value x[1] = { m };
        return a[0].u.i == 100001 ? r_md_pre_match(vm, x, out) : r_md_post_match(vm, x, out);
    }
    int64_t g = md_index(vm, m, a[0], false);
    *out = g < 0 ? tpl_v_none() : md_group(m, (uint32_t)g);
    return 0;
}

int r_k_when_splat(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value items = a[0], subj = a[1];
    bool has = tpl_truthy_rb(a[2]);
    *out = tpl_v_bool(false);
    if (items.type != TPL_T_LIST) return 0;
    for (uint32_t i = 0; i < items.u.list->len; i++) {
        tpl_value it = items.u.list->items[i], r;
        if (!has) r = it;
        else if (tpl_rb_send(vm, it, "===", 3, &subj, 1, NULL, NULL, 0, &r) < 0) return -1;
        if (tpl_truthy_rb(r)) { *out = tpl_v_bool(true); return 0; }
    }
    return 0;
}

int r_any_self(tpl_vm *vm, tpl_value *a, tpl_value *out) { (void)vm; *out = a[0]; return 0; }
/* nil, booleans, numbers, symbols, regexes and ranges are frozen in Ruby 3.1; strings when flagged */
int r_any_frozen_p(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    (void)vm;
    tpl_value v = a[0];
    bool f;
    switch (v.type) {
    case TPL_T_STR: f = (v.flags & (TPL_F_SYMBOL | TPL_F_REGEX_RB | TPL_F_FROZEN_RB)) != 0; break;
    case TPL_T_LIST: f = (v.flags & (TPL_F_RANGE_RB | TPL_F_FROZEN_CT_RB)) != 0; break;
    case TPL_T_MAP: f = (v.flags & TPL_F_FROZEN_CT_RB) != 0; break;
    default: f = true; break;
    }
    *out = tpl_v_bool(f);
    return 0;
}

int r_any_to_a(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (a[0].type == TPL_T_NONE) return r_k_Array(vm, a, out);
    return no_method(vm, a[0], "to_a", 4);
}

int r_any_to_i(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (a[0].type == TPL_T_NONE) { *out = tpl_v_int(0); return 0; }
    return no_method(vm, a[0], "to_i", 4);
}

int r_any_to_f(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (a[0].type == TPL_T_NONE) { *out = tpl_v_float(0.0); return 0; }
    return no_method(vm, a[0], "to_f", 4);
}

/* ------------------------------------------------------------------ String */

/* A String argument as StringValue takes it: a Symbol is none (no implicit conversion of Symbol into String). */
static int want_str(tpl_vm *vm, tpl_value v)
{
    if (v.type != TPL_T_STR || (v.flags & (TPL_F_REGEX_RB | TPL_F_CLASS_RB | TPL_F_SYMBOL))) return type_error(vm, TPL_VT_STR, v);
    return 0;
}

/* A pattern argument (sub, gsub, scan, split, match?): a String or a Regexp. */
static int want_pattern(tpl_vm *vm, tpl_value v)
{
    if (v.type != TPL_T_STR || (v.flags & (TPL_F_CLASS_RB | TPL_F_SYMBOL)))   /* (get_pat: a Symbol is no pattern) */
        return tpl_vm_error(vm, TPL_ERR_TYPE, "wrong argument type %s (expected Regexp) (TypeError)", conv_name(v));
    return 0;
}

/* Ruby's downcase: full case mapping one character at a time (no final-sigma rule). */
static void rb_lower(tpl_sb *b, const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        size_t st = i;
        if ((unsigned char)s[i] < 0x80) {
            while (i < n && (unsigned char)s[i] < 0x80) i++;
            tpl_py_lower(b, s + st, i - st);
            continue;
        }
        tpl_utf8_next(s, n, &i);
        tpl_py_lower(b, s + st, i - st);
    }
}

/* Ruby's upcase (downcase): the ASCII and Latin-1 letters eight bytes a step into a string of
 * the same length (tpl_case_latin1, as the Jinja filters upper/lower), the rest from the first
 * code point that needs the Unicode tables appended with full case mapping (downcase one
 * character at a time: rb_lower). */
static int rb_case(tpl_vm *vm, const tpl_value *a, tpl_value *out, bool upper)
{
    const char *s = a[0].u.s;
    size_t n = a[0].len;
    if (!n) { *out = tpl_v_str("", 0); return 0; }
    char *o = tpl_arena_alloc(A(vm), n);
    if (!o) return oom(vm);
    size_t i = tpl_case_latin1(o, (const unsigned char *)s, n, upper);
    if (i == n) { *out = tpl_v_str(o, n); return 0; }
    tpl_sb b;
    tpl_sb_init(&b, A(vm));
    tpl_sb_put(&b, o, i);
    if (upper) tpl_py_case_from(&b, s, n, i, true);
    else rb_lower(&b, s + i, n - i);
    if (b.failed) return oom(vm);
    *out = tpl_sb_value(&b);
    return 0;
}

/* Ruby's check_case_options (string.c) of the case methods' options (a list): which = 'u'pcase,
 * 'd'owncase, 'c'apitalize, 's'wapcase. 0: no options, 1: :ascii, 2: :fold (downcase), 3: :turkic and/or
 * :lithuanian; -1 when it raised. */
static int rb_case_options(tpl_vm *vm, tpl_value opts, char which)
{
    if (opts.type != TPL_T_LIST || opts.u.list->len == 0) return 0;
    const tpl_list *l = opts.u.list;
    if (l->len > 2) return tpl_vm_error(vm, TPL_ERR_TYPE, "too many options (ArgumentError)");
    const tpl_value *o = l->items;
#define CASE_SYM(v, lit) ((v).type == TPL_T_STR && ((v).flags & TPL_F_SYMBOL) && (v).len == strlen(lit) && memcmp((v).u.s, lit, (v).len) == 0)
    if (CASE_SYM(o[0], "ascii")) {
        if (l->len == 2) return tpl_vm_error(vm, TPL_ERR_TYPE, "too many options (ArgumentError)");
        return 1;
    }
    if (CASE_SYM(o[0], "turkic") || CASE_SYM(o[0], "lithuanian")) {
        if (l->len == 2 && !(CASE_SYM(o[0], "turkic") ? CASE_SYM(o[1], "lithuanian") : CASE_SYM(o[1], "turkic")))
            return tpl_vm_error(vm, TPL_ERR_TYPE, "invalid second option (ArgumentError)");
        return 3;
    }
    if (l->len > 1) return tpl_vm_error(vm, TPL_ERR_TYPE, "too many options (ArgumentError)");
    if (CASE_SYM(o[0], "fold")) {
        if (which != 'd') return tpl_vm_error(vm, TPL_ERR_TYPE, "option :fold only allowed for downcasing (ArgumentError)");
        return 2;
    }
#undef CASE_SYM
    return tpl_vm_error(vm, TPL_ERR_TYPE, "invalid option (ArgumentError)");
}

static int rb_capitalize(tpl_vm *vm, const tpl_value *a, tpl_value *out);
static int rb_swapcase(tpl_vm *vm, const tpl_value *a, tpl_value *out);

/* String#upcase/downcase/capitalize/swapcase(*options): the options checked as Ruby's; :ascii maps
 * the ASCII letters alone; :fold, :turkic and :lithuanian map as without them on ASCII text (no
 * 'i' for the Turkic rules), tpl's refusal on other text. */
static int rb_case_with(tpl_vm *vm, tpl_value *a, tpl_value *out, char which)
{
    int opt = rb_case_options(vm, a[1], which);
    if (opt < 0) return -1;
    tpl_value s = a[0];
    bool ascii = true, has_i = false;
    for (size_t i = 0; i < s.len; i++) {
        if ((unsigned char)s.u.s[i] >= 0x80) ascii = false;
        if (s.u.s[i] == 'i' || s.u.s[i] == 'I') has_i = true;
    }
    if (opt == 1 && !ascii) {
        char *o = tpl_arena_alloc(A(vm), s.len + 1);
        if (!o) return oom(vm);
        bool first = true;
        for (size_t i = 0; i < s.len; i++) {
            char c = s.u.s[i];
            bool up = c >= 'A' && c <= 'Z', lo = c >= 'a' && c <= 'z';
            bool to_up = which == 'u' || (which == 's' && lo) || (which == 'c' && first);
            bool to_lo = which == 'd' || (which == 's' && up) || (which == 'c' && !first);
            if (to_up && lo) c = (char)(c - 32);
            else if (to_lo && up) c = (char)(c + 32);
            o[i] = c;
            first = false;
        }
        *out = tpl_v_str(o, s.len);
        return 0;
    }
    if ((opt == 2 && !ascii) || (opt == 3 && (!ascii || has_i)))
        return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: the case mapping options :fold, :turkic and "
                            ":lithuanian of text that is not ASCII (or has an 'i', :turkic)");
    switch (which) {
    case 'u': return rb_case(vm, a, out, true);
    case 'd': return rb_case(vm, a, out, false);
    case 'c': return rb_capitalize(vm, a, out);
    default: return rb_swapcase(vm, a, out);
    }
}

int r_str_upcase(tpl_vm *vm, tpl_value *a, tpl_value *out) { return rb_case_with(vm, a, out, 'u'); }
int r_str_downcase(tpl_vm *vm, tpl_value *a, tpl_value *out) { return rb_case_with(vm, a, out, 'd'); }
int r_str_capitalize(tpl_vm *vm, tpl_value *a, tpl_value *out) { return rb_case_with(vm, a, out, 'c'); }
int r_str_swapcase(tpl_vm *vm, tpl_value *a, tpl_value *out) { return rb_case_with(vm, a, out, 's'); }

static int rb_capitalize(tpl_vm *vm, const tpl_value *a, tpl_value *out)
{
    tpl_value s = a[0];
    if (s.len == 0) { *out = s; return 0; }
    size_t i = 0;
    tpl_utf8_next(s.u.s, s.len, &i);
    tpl_sb b;
    tpl_sb_init(&b, A(vm));
    tpl_py_capitalize(&b, s.u.s, i);   /* the first character's titlecase ("ß" -> "Ss", "ǆ" -> "ǅ") */
    rb_lower(&b, s.u.s + i, s.len - i);
    if (b.failed) return oom(vm);
    *out = tpl_sb_value(&b);
    return 0;
}

/* Ruby's swapcase of the 31 titlecase letters (Unicode Lt; enc/unicode.c's CaseMappingSpecials
 * "swapCASE"): the first letter of its decomposition lowercased, the second uppercased ("ǅ" ->
 * "dŽ", "ᾼ" -> "αΙ"), from Ruby 3.1 itself. */
static const uint32_t rb_title_swap[][3] = {
    {0x01C5, 0x0064, 0x017D}, {0x01C8, 0x006C, 0x004A}, {0x01CB, 0x006E, 0x004A}, {0x01F2, 0x0064, 0x005A},
    {0x1F88, 0x1F00, 0x0399}, {0x1F89, 0x1F01, 0x0399}, {0x1F8A, 0x1F02, 0x0399}, {0x1F8B, 0x1F03, 0x0399},
    {0x1F8C, 0x1F04, 0x0399}, {0x1F8D, 0x1F05, 0x0399}, {0x1F8E, 0x1F06, 0x0399}, {0x1F8F, 0x1F07, 0x0399},
    {0x1F98, 0x1F20, 0x0399}, {0x1F99, 0x1F21, 0x0399}, {0x1F9A, 0x1F22, 0x0399}, {0x1F9B, 0x1F23, 0x0399},
    {0x1F9C, 0x1F24, 0x0399}, {0x1F9D, 0x1F25, 0x0399}, {0x1F9E, 0x1F26, 0x0399}, {0x1F9F, 0x1F27, 0x0399},
    {0x1FA8, 0x1F60, 0x0399}, {0x1FA9, 0x1F61, 0x0399}, {0x1FAA, 0x1F62, 0x0399}, {0x1FAB, 0x1F63, 0x0399},
    {0x1FAC, 0x1F64, 0x0399}, {0x1FAD, 0x1F65, 0x0399}, {0x1FAE, 0x1F66, 0x0399}, {0x1FAF, 0x1F67, 0x0399},
    {0x1FBC, 0x03B1, 0x0399}, {0x1FCC, 0x03B7, 0x0399}, {0x1FFC, 0x03C9, 0x0399},
};

static bool rb_swap_title(tpl_sb *b, uint32_t cp)
{
    if (cp < 0x01C5 || cp > 0x1FFC) return false;
    for (size_t k = 0; k < sizeof rb_title_swap / sizeof *rb_title_swap; k++)
        if (rb_title_swap[k][0] == cp) {
            tpl_sb_put_cp(b, rb_title_swap[k][1]);
            tpl_sb_put_cp(b, rb_title_swap[k][2]);
            return true;
        }
    return false;
}

static int rb_swapcase(tpl_vm *vm, const tpl_value *a, tpl_value *out)
{
    tpl_value s = a[0];
    tpl_sb b;
    tpl_sb_init(&b, A(vm));
    size_t i = 0;
    while (i < s.len) {
        size_t st = i;
        uint32_t cp = tpl_utf8_next(s.u.s, s.len, &i);
        if (rb_swap_title(&b, cp)) continue;
        if (tpl_uc_isupper(cp)) rb_lower(&b, s.u.s + st, i - st);
        else if (tpl_uc_islower(cp)) tpl_py_upper(&b, s.u.s + st, i - st);
        else tpl_sb_put(&b, s.u.s + st, i - st);
    }
    if (b.failed) return oom(vm);
    *out = tpl_sb_value(&b);
    return 0;
}

static bool rb_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r' || c == 0; }

static tpl_value rb_strip(tpl_value s, int which)
{
    size_t b = 0, e = s.len;
    if (which & 1) while (b < e && rb_space(s.u.s[b]) && s.u.s[b]) b++;
    if (which & 2) while (e > b && rb_space(s.u.s[e - 1])) e--;
    return tpl_v_str(s.u.s + b, e - b);
}

int r_str_strip(tpl_vm *vm, tpl_value *a, tpl_value *out) { (void)vm; *out = rb_strip(a[0], 3); return 0; }
int r_str_lstrip(tpl_vm *vm, tpl_value *a, tpl_value *out) { (void)vm; *out = rb_strip(a[0], 1); return 0; }
int r_str_rstrip(tpl_vm *vm, tpl_value *a, tpl_value *out) { (void)vm; *out = rb_strip(a[0], 2); return 0; }

/* chomp, chomp(sep): sep nil keeps the string, "" drops every trailing "\n" / "\r\n" (paragraph
 * mode), "\n" is the default (one "\n", "\r\n" or "\r"), another sep is dropped when it ends the string */
int r_str_chomp(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value s = a[0];
    size_t n = s.len;
    if (tpl_given(a[1]) && !(a[1].type == TPL_T_STR && a[1].len == 1 && a[1].u.s[0] == '\n')) {
        tpl_value sep = a[1];
        if (sep.type == TPL_T_NONE) { *out = s; return 0; }
        if (want_str(vm, sep) < 0) return -1;
        if (sep.len == 0) {
            while (n && s.u.s[n - 1] == '\n') {
                n--;
                if (n && s.u.s[n - 1] == '\r') n--;
            }
        } else if (sep.len <= n && memcmp(s.u.s + n - sep.len, sep.u.s, sep.len) == 0) {
            n -= sep.len;
        }
        *out = tpl_v_str(s.u.s, n);
        return 0;
    }
    if (n && s.u.s[n - 1] == '\n') n--;
    if (n && s.u.s[n - 1] == '\r' && n < s.len) n--;
    else if (n == s.len && n && s.u.s[n - 1] == '\r') n--;
    *out = tpl_v_str(s.u.s, n);
    return 0;
}

int r_str_length(tpl_vm *vm, tpl_value *a, tpl_value *out) { (void)vm; *out = tpl_v_int((int64_t)tpl_utf8_len(a[0].u.s, a[0].len)); return 0; }
int r_str_empty_p(tpl_vm *vm, tpl_value *a, tpl_value *out) { (void)vm; *out = tpl_v_bool(a[0].len == 0); return 0; }

static bool has_sub(tpl_value s, tpl_value t)
{
    return tpl_memmem(s.u.s, s.len, t.u.s, t.len) != NULL;
}

int r_str_include_p(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (want_str(vm, a[1]) < 0) return -1;
    *out = tpl_v_bool(has_sub(a[0], a[1]));
    return 0;
}

static int affix(tpl_vm *vm, tpl_value *a, tpl_value *out, bool start)
{
    tpl_value s = a[0];
    tpl_list *l = a[1].u.list;
    for (uint32_t i = 0; i < l->len; i++) {
        tpl_value p = l->items[i];
        if (p.type == TPL_T_STR && (p.flags & TPL_F_REGEX_RB) && start) {
            OnigRegex re = rx_compile(vm, p);
            if (!re) return -1;
            OnigRegion *reg = onig_region_new();
            long r = reg ? rx_run(vm, re, s, 0, reg, true) : -2;
            tpl_value md = tpl_v_none();   /* (start_with?(Regexp) sets $~, nil when it does not match) */
            int rc = r >= 0 ? md_new(vm, s, p, re, reg, &md) : 0;
            if (reg) onig_region_free(reg, 1);
            onig_free(re);
            if (r == -2 || rc < 0) return reg ? -1 : oom(vm);
            tpl_vm_set_rb_match(vm, md);
            if (r >= 0) { *out = tpl_v_bool(true); return 0; }
            continue;
        }
        if (want_str(vm, p) < 0) return -1;
        if (p.len <= s.len && memcmp(start ? s.u.s : s.u.s + s.len - p.len, p.u.s, p.len) == 0) {
            *out = tpl_v_bool(true);
            return 0;
        }
    }
    *out = tpl_v_bool(false);
    return 0;
}

int r_str_start_with_p(tpl_vm *vm, tpl_value *a, tpl_value *out) { return affix(vm, a, out, true); }
int r_str_end_with_p(tpl_vm *vm, tpl_value *a, tpl_value *out) { return affix(vm, a, out, false); }

/* Appends group g of the match (nothing when it did not take part). */
static void put_group(tpl_sb *b, tpl_value s, const OnigRegion *reg, int g)
{
    if (g >= 0 && g < reg->num_regs && reg->beg[g] >= 0) tpl_sb_put(b, s.u.s + reg->beg[g], (size_t)(reg->end[g] - reg->beg[g]));
}

/* Ruby replacement strings, as Ruby's rb_reg_regsub: \0 \& (whole match), \1..\9 (groups),
 * \k<name> (named group; re is NULL for a string pattern, which has none; with named groups or a
 * string pattern \1..\9 print nothing), \` (before the match),
 * \' (after it), \+ (last group that matched), \\ (backslash); any other \x stays as written.
 * Returns -1 (error set) for a \k reference Ruby rejects. */
static int put_repl(tpl_vm *vm, tpl_sb *b, tpl_value repl, tpl_value s, OnigRegex re, const OnigRegion *reg)
{
    for (size_t i = 0; i < repl.len; i++) {
        /* the text up to the next backslash in one copy (a byte at a time, a 1,000-byte
         * replacement made gsub over 100,000 matches 3e9 instructions) */
        const char *bs = memchr(repl.u.s + i, '\\', repl.len - i);
        size_t run = bs ? (size_t)(bs - (repl.u.s + i)) : repl.len - i;
        if (run) { tpl_sb_put(b, repl.u.s + i, run); i += run - 1; continue; }
        if (i + 1 >= repl.len) { tpl_sb_putc(b, '\\'); continue; }
        char d = repl.u.s[++i];
        if (d == '&' || d == '0') put_group(b, s, reg, 0);
        else if (d >= '1' && d <= '9') { /* Ruby drops them when the pattern has named groups or is a string */
            if (re && onig_noname_group_capture_is_active(re)) put_group(b, s, reg, d - '0');
        }
        else if (d == '`') tpl_sb_put(b, s.u.s, (size_t)reg->beg[0]);
        else if (d == '\'') tpl_sb_put(b, s.u.s + reg->end[0], s.len - (size_t)reg->end[0]);
        else if (d == '+') {
            int g = reg->num_regs - 1;
            while (g > 0 && reg->beg[g] < 0) g--;
            if (g > 0) put_group(b, s, reg, g);
        } else if (d == '\\') tpl_sb_putc(b, '\\');
        else if (d == 'k' && i + 1 < repl.len && repl.u.s[i + 1] == '<') {
            const char *name = repl.u.s + i + 2, *lim = repl.u.s + repl.len;
            const char *close = memchr(name, '>', (size_t)(lim - name));
            if (!close) return tpl_vm_error(vm, TPL_ERR_TYPE, "invalid group name reference format (RuntimeError)");
            int g = re && close > name ? onig_name_to_backref_number(re, (const UChar *)name, (const UChar *)close, (OnigRegion *)reg) : -1;
            if (g < 1)
                return tpl_vm_error(vm, TPL_ERR_TYPE, "undefined group name reference: %.*s (IndexError)", (int)(close - name), name);
            put_group(b, s, reg, g);
            i = (size_t)(close - repl.u.s);
        } else {
            tpl_sb_putc(b, '\\');
            tpl_sb_putc(b, d);
        }
    }
    return 0;
}

static int sub_impl(tpl_vm *vm, tpl_value *a, tpl_value *out, bool global)
{
    tpl_value s = a[0], pat = a[1];
    tpl_rb_block blk = tpl_vm_block(vm);
    bool has_repl = tpl_given(a[2]);
    if (!has_repl && !blk.pc) return tpl_vm_error(vm, TPL_ERR_TYPE, "wrong number of arguments (given 1, expected 2) (ArgumentError)");
    tpl_value repl = has_repl ? a[2] : tpl_v_none();
    bool hash = has_repl && repl.type == TPL_T_MAP;   /* each match replaced by hash[match].to_s */
    if (has_repl && !hash && want_str(vm, repl) < 0) return -1;
    bool rx = pat.type == TPL_T_STR && (pat.flags & TPL_F_REGEX_RB);
    if (!rx && want_pattern(vm, pat) < 0) return -1;
    if (!rx && !rx_ready(vm)) return -1;   /* $~ is an Oniguruma region even for a string pattern */
    OnigRegex re = NULL;
    OnigRegion *reg = NULL;
    if (rx) {
        if (!(re = rx_compile(vm, pat))) return -1;
        reg = onig_region_new();
    }
    tpl_sb b;
    tpl_sb_init(&b, A(vm));
    size_t pos = 0, copied = 0;
    int rc = 0;
    OnigRegion *last = NULL;   /* $~ after the call: the last match (Ruby sets it, nil when none) */
    while (pos <= s.len) {
        long ms, me;
        if (rx) {
            ms = rx_search(vm, re, s, pos, reg);
            if (ms == -2) { rc = -1; break; }
            if (ms < 0) break;
            me = reg->end[0];
        } else {
            const char *q = tpl_memmem(s.u.s + pos, s.len - pos, pat.u.s, pat.len);
            if (!q) break;
            ms = (long)(q - s.u.s);
            me = ms + (long)pat.len;
        }
        tpl_sb_put(&b, s.u.s + copied, (size_t)ms - copied);
        OnigRegion fake = { 0 };
        int beg = (int)ms, end = (int)me;
        fake.num_regs = 1;
        fake.beg = &beg;
        fake.end = &end;
        if (!last && !(last = onig_region_new())) { rc = oom(vm); break; }
        onig_region_copy(last, rx ? reg : &fake);
        if (!has_repl) {   /* the block sees this match in $~ */
            tpl_value md;
            if (md_new(vm, s, pat, re, last, &md) < 0) { rc = -1; break; }
            tpl_vm_set_rb_match(vm, md);
        }
        if (hash) {
            tpl_value r;
            if (tpl_rb_getitem(vm, repl, tpl_v_str(s.u.s + ms, (size_t)(me - ms)), &r) < 0) { rc = -1; break; }
            tpl_value rs = str_of(vm, r);
            tpl_sb_put(&b, rs.u.s, rs.len);
        } else if (has_repl) {
            if (put_repl(vm, &b, repl, s, re, rx ? reg : &fake) < 0) { rc = -1; break; }
        } else {
            tpl_value m = tpl_v_str(s.u.s + ms, (size_t)(me - ms)), r;
            int yr = tpl_rb_yield(vm, &blk, &m, 1, &r);
            if (yr < 0) { rc = -1; break; }
            if (yr > 0) { *out = r; goto done; }
            tpl_value rs = str_of(vm, r);
            tpl_sb_put(&b, rs.u.s, rs.len);
        }
        copied = (size_t)me;
        if (!global || b.failed) break;   /* past the memory limit: no more searching */
        if (me == ms) {
            if ((size_t)me >= s.len) { pos = s.len + 1; break; }
            size_t k = (size_t)me;
            tpl_utf8_next(s.u.s, s.len, &k);
            tpl_sb_put(&b, s.u.s + me, k - (size_t)me);
            copied = pos = k;
        } else {
            pos = (size_t)me;
        }
    }
    if (rc == 0) {
        if (copied < s.len) tpl_sb_put(&b, s.u.s + copied, s.len - copied);
        if (b.failed) rc = oom(vm);
        else *out = tpl_sb_value(&b);
    }
done:
    if (rc == 0) {
        tpl_value md = tpl_v_none();
        if (last && md_new(vm, s, pat, re, last, &md) < 0) rc = -1;
        else tpl_vm_set_rb_match(vm, md);
    }
    if (last) onig_region_free(last, 1);
    if (reg) onig_region_free(reg, 1);
    if (re) onig_free(re);
    return rc;
}

int r_str_sub(tpl_vm *vm, tpl_value *a, tpl_value *out) { return sub_impl(vm, a, out, false); }
int r_str_gsub(tpl_vm *vm, tpl_value *a, tpl_value *out) { return sub_impl(vm, a, out, true); }

/* The MatchData of a String pattern pat found at q in s (one group: its bytes). */
static int str_pattern_md(tpl_vm *vm, tpl_value s, tpl_value pat, const char *q, tpl_value *md)
{
    OnigRegion fake = { 0 };
    int beg = (int)(q - s.u.s), en = beg + (int)pat.len;
    fake.num_regs = 1;
    fake.beg = &beg;
    fake.end = &en;
    return md_new(vm, s, pat, NULL, &fake, md);
}

/* String#scan: the matches (or their groups); with a block (blk->pc) yields each instead, the block seeing its
 * match in $~, and answers the receiver. $~ is the last match after it (nil without one). */
static int scan_impl(tpl_vm *vm, tpl_value *a, tpl_value *out, const tpl_rb_block *blk)
{
    tpl_value s = a[0], pat = a[1], md = tpl_v_none(), r;
    if (want_pattern(vm, pat) < 0) return -1;
    tpl_list *l = blk ? NULL : new_list(vm, 4);
    if (!blk && !l) return oom(vm);
    if (!(pat.flags & TPL_F_REGEX_RB)) {
        if (pat.len == 0) return tpl_vm_error(vm, TPL_ERR_TYPE, "scan with an empty string is not supported");
        const char *last = NULL;
        for (const char *q = s.u.s, *end = s.u.s + s.len;
             (q = tpl_memmem(q, (size_t)(end - q), pat.u.s, pat.len)) != NULL; q += pat.len) {
            last = q;
            if (!blk) {
                if (!tpl_list_push(A(vm), l, pat)) return oom(vm);
                continue;
            }
            if (str_pattern_md(vm, s, pat, q, &md) < 0) return -1;
            tpl_vm_set_rb_match(vm, md);
            YIELD(*blk, &pat, 1, &r);
        }
        if (last && str_pattern_md(vm, s, pat, last, &md) < 0) return -1;
        tpl_vm_set_rb_match(vm, md);
        *out = blk ? s : tpl_v_list(l);
        return 0;
    }
    OnigRegex re = rx_compile(vm, pat);
    if (!re) return -1;
    OnigRegion *reg = onig_region_new(), *lastreg = onig_region_new();
    size_t pos = 0;
    bool any = false, nomem = !reg || !lastreg;
    int rc = 0;
    while (!nomem && pos <= s.len) {
        long ms = rx_search(vm, re, s, pos, reg);
        if (ms < 0) { if (ms == -2) rc = -1; break; }
        tpl_value item;
        if (reg->num_regs > 1) {
            tpl_list *g = new_list(vm, (uint32_t)reg->num_regs - 1);
            for (int k = 1; g && k < reg->num_regs; k++)
                g->items[g->len++] = reg->beg[k] >= 0 ? tpl_v_str(s.u.s + reg->beg[k], (size_t)(reg->end[k] - reg->beg[k])) : tpl_v_none();
            item = g ? tpl_v_list(g) : tpl_v_none();
            if (!g) { nomem = true; break; }
        } else {
            item = tpl_v_str(s.u.s + ms, (size_t)(reg->end[0] - ms));
        }
        onig_region_copy(lastreg, reg);
        any = true;
        if (blk) {
            if (md_new(vm, s, pat, re, reg, &md) < 0) { rc = -1; break; }
            tpl_vm_set_rb_match(vm, md);
            int yr = tpl_rb_yield(vm, blk, &item, 1, &r);
            if (yr < 0) { rc = -1; break; }
            if (yr > 0) { rc = 1; break; }
        } else if (!tpl_list_push(A(vm), l, item)) {   /* a failed push (the memory limit) ends the render: never a shorter list */
            nomem = true;
            break;
        }
        if (reg->end[0] == ms) {
            size_t k = (size_t)ms;
            if (k >= s.len) break;
            tpl_utf8_next(s.u.s, s.len, &k);
            pos = k;
        } else {
            pos = (size_t)reg->end[0];
        }
    }
    if (rc == 0 && !nomem) {
        md = tpl_v_none();
        if (any && md_new(vm, s, pat, re, lastreg, &md) < 0) rc = -1;
        else tpl_vm_set_rb_match(vm, md);
    }
    if (reg) onig_region_free(reg, 1);
    if (lastreg) onig_region_free(lastreg, 1);
    onig_free(re);
    if (rc < 0) return -1;
    if (nomem) return oom(vm);
    *out = rc > 0 ? r : blk ? s : tpl_v_list(l);
    return 0;
}

int r_str_scan(tpl_vm *vm, tpl_value *a, tpl_value *out) { return scan_impl(vm, a, out, NULL); }

/* String#match?(pattern, pos = 0) and Regexp#match?(string, pos = 0): as match, without setting $~; a
 * String pattern is a Regexp's source ("a.c" matches "abc"). */
int r_str_match_p(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value s, p;
    int64_t pos;
    int rc = match_args(vm, a, &s, &p, &pos);
    if (rc < 0) return -1;
    if (rc) { *out = tpl_v_bool(false); return 0; }
    tpl_value md;
    int64_t at;
    if (rx_match(vm, s, p, pos, false, &md, &at) < 0) return -1;
    *out = tpl_v_bool(md.type != TPL_T_NONE);
    return 0;
}

/* The groups of a split match that took part in it, pushed after the piece they end (Ruby). */
static bool push_groups(tpl_vm *vm, tpl_list *l, tpl_value s, OnigRegion *reg)
{
    for (int k = 1; k < reg->num_regs; k++)
        if (reg->beg[k] >= 0 && !tpl_list_push(A(vm), l, tpl_v_str(s.u.s + reg->beg[k], (size_t)(reg->end[k] - reg->beg[k]))))
            return false;
    return true;
}

static int str_split(tpl_vm *vm, tpl_value *a, tpl_value *out);

/* split { |piece| }: each piece yielded, the receiver the result (Ruby 2.6+). */
int r_str_split(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (str_split(vm, a, out) < 0) return -1;
    tpl_rb_block blk = tpl_vm_block(vm);
    if (!blk.pc || out->type != TPL_T_LIST) return 0;
    const tpl_list *l = out->u.list;
    tpl_value v;
    for (uint32_t i = 0; i < l->len; i++) YIELD(blk, &l->items[i], 1, &v);
    *out = a[0];
    return 0;
}

static int str_split(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value s = a[0];
    tpl_list *l = new_list(vm, 4);
    if (!l) return oom(vm);
    /* limit: n > 0 gives at most n fields (the last one the rest, trailing empty ones kept), n < 0
     * keeps the trailing empty fields, 0 is none */
    int64_t limit = 0;
    if (tpl_given(a[2])) {
        if (a[2].type != TPL_T_INT) return type_error(vm, TPL_VT_INT, a[2]);
        limit = a[2].u.i;
        if (limit == 1) {
            if (s.len && !tpl_list_push(A(vm), l, s)) return oom(vm);
            *out = tpl_v_list(l);
            return 0;
        }
    }
    bool awk = !tpl_given(a[1]) || a[1].type == TPL_T_NONE || (a[1].type == TPL_T_STR && a[1].len == 1 && a[1].u.s[0] == ' ' && !(a[1].flags & TPL_F_REGEX_RB));
    if (awk) {
        size_t i = 0;
        while (i < s.len) {
            size_t ws = i;
            while (i < s.len && rb_space(s.u.s[i])) i++;
            if (i >= s.len) { /* trailing blanks: one empty field when a limit is given */
                if (limit != 0 && i > ws && !tpl_list_push(A(vm), l, tpl_v_str("", 0))) return oom(vm);
                break;
            }
            if (limit > 1 && (int64_t)l->len == limit - 1) { /* the rest, as it is */
                if (!tpl_list_push(A(vm), l, tpl_v_str(s.u.s + i, s.len - i))) return oom(vm);
                break;
            }
            size_t st = i;
            while (i < s.len && !rb_space(s.u.s[i])) i++;
            if (!tpl_list_push(A(vm), l, tpl_v_str(s.u.s + st, i - st))) return oom(vm);
        }
    } else if (a[1].flags & TPL_F_REGEX_RB) {
        OnigRegex re = rx_compile(vm, a[1]);
        if (!re) return -1;
        OnigRegion *reg = onig_region_new();
        size_t pos = 0, start = 0;
        int64_t fields = 0;   /* a limit n > 1 stops after n - 1 fields (their groups follow them) */
        bool rx_failed = false, nomem = false;
        while (pos < s.len && (limit <= 1 || fields < limit - 1)) {
            long ms = rx_search(vm, re, s, pos, reg);
            if (ms < 0) { rx_failed = ms == -2; break; }
            long me = reg->end[0];
            if (me == ms) {
                if ((size_t)ms >= s.len) break;
                if ((size_t)ms == start) { size_t k = (size_t)ms; tpl_utf8_next(s.u.s, s.len, &k); pos = k; if (ms == 0 && start == 0) { continue; } }
                else pos = (size_t)ms;
                if ((size_t)ms != start || ms != 0) {
                    size_t k = (size_t)ms;
                    if ((size_t)ms == start) tpl_utf8_next(s.u.s, s.len, &k);
                    if (!tpl_list_push(A(vm), l, tpl_v_str(s.u.s + start, k - start)) || !push_groups(vm, l, s, reg)) {
                        nomem = true;
                        break;
                    }
                    fields++;
                    start = k;
                    pos = k;
                }
                continue;
            }
            if (!tpl_list_push(A(vm), l, tpl_v_str(s.u.s + start, (size_t)ms - start)) || !push_groups(vm, l, s, reg)) {
                nomem = true;
                break;
            }
            fields++;
            start = pos = (size_t)me;
        }
        if (!nomem && s.len && !tpl_list_push(A(vm), l, tpl_v_str(s.u.s + start, s.len - start))) nomem = true;
        onig_region_free(reg, 1);
        onig_free(re);
        if (rx_failed) return -1;
        if (nomem) return oom(vm);
    } else {
        if (want_pattern(vm, a[1]) < 0) return -1;
        tpl_value sep = a[1];
        size_t start = 0;
        if (sep.len == 0) {   /* characters: with a limit n > 1, n - 1 of them and the rest */
            size_t i = 0;
            while (i < s.len && (limit <= 1 || (int64_t)l->len < limit - 1)) {
                size_t c = i;
                tpl_utf8_next(s.u.s, s.len, &i);
                if (!tpl_list_push(A(vm), l, tpl_v_str(s.u.s + c, i - c))) return oom(vm);
            }
            if (s.len && limit != 0 &&   /* the rest, even empty ("abc".split("", 4) ends with "") */
                !tpl_list_push(A(vm), l, tpl_v_str(s.u.s + i, s.len - i)))
                return oom(vm);
            *out = tpl_v_list(l);
            return 0;
        }
        for (const char *q; (limit <= 1 || (int64_t)l->len < limit - 1) && (q = tpl_memmem(s.u.s + start, s.len - start, sep.u.s, sep.len)) != NULL;) {
            size_t i = (size_t)(q - s.u.s);
            if (!tpl_list_push(A(vm), l, tpl_v_str(s.u.s + start, i - start))) return oom(vm);
            start = i + sep.len;
        }
        if (s.len && !tpl_list_push(A(vm), l, tpl_v_str(s.u.s + start, s.len - start)))   /* "".split(x, n) is [] */
            return oom(vm);
    }
    if (limit == 0) while (l->len && l->items[l->len - 1].len == 0) l->len--;
    *out = tpl_v_list(l);
    return 0;
}

/* A String's integer past int64 (Ruby's Bignum): the digits p[from..to) in base ('_' skipped) as a
 * big int; past tpl's TPL_BIG_MAX_BITS the memory-limit error, decided from the digit count
 * before any work. */
static int str_big_int(tpl_vm *vm, const char *p, size_t from, size_t to, int base, bool neg, tpl_value *out)
{
    size_t nd = 0;
    for (size_t i = from; i < to; i++) nd += p[i] != '_';
    double bits = (double)(nd - 1) * log2((double)base);
    if (bits > TPL_BIG_MAX_BITS) return tpl_vm_fail(vm, TPL_EK_MEMORY_LIMIT, "integer too large (more than %d bits)", TPL_BIG_MAX_BITS);
    char *buf = tpl_arena_alloc(A(vm), nd + 2);
    if (!buf) return oom(vm);
    size_t k = 0;
    if (neg) buf[k++] = '-';
    for (size_t i = from; i < to; i++)
        if (p[i] != '_') buf[k++] = p[i];
    buf[k] = 0;
    mpz_t z;
    if (mpz_init_set_str(z, buf, base) != 0) { mpz_clear(z); return tpl_vm_error(vm, TPL_ERR_VALUE, "invalid digits"); }
    return tpl_big_result(vm, z, out);
}

static int digit36(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : (c | 0x20) >= 'a' && (c | 0x20) <= 'z' ? (c | 0x20) - 'a' + 10 : 99;
}

/* String to Integer in `base` (2..36, or 0: from the prefix 0x 0b 0o 0d, a leading 0 meaning
 * octal, else decimal); a prefix matching the base is skipped. strict: Integer(), which
 * rejects anything but the number and surrounding whitespace. */
static int str_to_i(tpl_vm *vm, tpl_value s, int base, bool strict, tpl_value *out)
{
    if (base != 0 && (base < 2 || base > 36)) return tpl_vm_error(vm, TPL_ERR_TYPE, "invalid radix %d (ArgumentError)", base);
    size_t i = 0, n = s.len;
    const char *p = s.u.s;
    while (i < n && rb_space(p[i])) i++;
    bool neg = false;
    if (i < n && (p[i] == '-' || p[i] == '+')) neg = p[i++] == '-';
    if (i + 1 < n && p[i] == '0') {
        char x = (char)(p[i + 1] | 0x20);
        int pb = x == 'x' ? 16 : x == 'b' ? 2 : x == 'o' ? 8 : x == 'd' ? 10 : 0;
        if (pb && (base == 0 || base == pb)) { base = pb; i += 2; }
        else if (base == 0) base = 8;
    }
    if (base == 0) base = 10;
    int64_t v = 0;
    size_t digits = 0, first = i;
    bool big = false;
    for (; i < n; i++) {
        char c = p[i];
        if (c == '_') {   /* one '_' between two digits ("1__0", "1_" end the number: Integer() refuses them) */
            if (digits && i + 1 < n && digit36(p[i + 1]) < base) continue;
            break;
        }
        int d = digit36(c);
        if (d >= base) break;
        if (!big && (__builtin_mul_overflow(v, base, &v) || __builtin_add_overflow(v, d, &v))) big = true;
        digits++;
    }
    size_t last = i;
    while (last > first && p[last - 1] == '_') last--;
    if (strict) {
        while (i < n && rb_space(p[i])) i++;
        if (!digits || i < n) return tpl_vm_error(vm, TPL_ERR_TYPE, "invalid value for Integer(): \"%.*s\" (ArgumentError)", (int)s.len, s.u.s);
    }
    if (big) return str_big_int(vm, p, first, last, base, neg, out);
    *out = tpl_v_int(neg ? -v : v);
    return 0;
}

/* p[i] is a '_' a decimal digit follows (Ruby's number syntax: one '_' between two digits; the caller
 * has just read a digit) */
static bool dig_us(const char *p, size_t i, size_t n)
{
    return p[i] == '_' && i + 1 < n && isdigit((unsigned char)p[i + 1]);
}

static int str_to_f(tpl_vm *vm, tpl_value s, bool strict, tpl_value *out)
{
    char buf[128];
    size_t i = 0, k = 0, n = s.len;
    const char *p = s.u.s;
    while (i < n && rb_space(p[i])) i++;
    if (i < n && (p[i] == '-' || p[i] == '+')) buf[k++] = p[i++];
    size_t d0 = k;
    if ((strict || k > 0) && i + 1 < n && p[i] == '0' && (p[i + 1] == 'x' || p[i + 1] == 'X')) {
        /* Float("0x1f") / Float("0x1.8p1"): a hexadecimal float (digits with '_' between them; a
         * fraction only with a p exponent), as Ruby's strtod; String#to_f reads one only after a sign
         * ("-0x1F".to_f is -31.0, "0x1f".to_f 0.0: rb_cstr_to_dbl's check comes before the sign) */
        bool ok = false, frac = false, badexp = false;
        buf[k++] = '0';
        buf[k++] = 'x';
        i += 2;
        for (int part = 0; part < 2; part++) {
            size_t h0 = k;
            while (i < n && k < 100 && (isxdigit((unsigned char)p[i]) ||
                                         (p[i] == '_' && part == 0 && k > h0 && i + 1 < n && isdigit((unsigned char)p[i + 1])))) {
                if (p[i] != '_') buf[k++] = p[i];
                i++;
            }
            if (k == h0) break;
            if (part == 0) ok = true;
            if (part == 1) frac = true;
            if (part == 0 && i + 1 < n && p[i] == '.' && isxdigit((unsigned char)p[i + 1])) buf[k++] = p[i++];
            else { if (part == 0 && i < n && p[i] == '.') frac = true; break; }   /* "0x1." is no number */
        }
        if (ok && i < n && (p[i] == 'p' || p[i] == 'P')) {
            size_t si = i, sk = k;
            buf[k++] = p[i++];
            if (i < n && (p[i] == '-' || p[i] == '+')) buf[k++] = p[i++];
            if (i < n && p[i] >= '0' && p[i] <= '9') {
                while (i < n && k < 126 && (isdigit((unsigned char)p[i]) || dig_us(p, i, n))) { if (p[i] != '_') buf[k++] = p[i]; i++; }
                frac = false;
            } else {
                i = si;
                k = sk;
                badexp = true;
            }
        }
        buf[k] = 0;
        if (!strict) {
            *out = tpl_v_float(!ok || frac || badexp ? 0.0 : strtod(buf, NULL));
            return 0;
        }
        while (i < n && rb_space(p[i])) i++;
        if (!ok || frac || i < n)
            return tpl_vm_error(vm, TPL_ERR_TYPE, "invalid value for Float(): \"%.*s\" (ArgumentError)", (int)s.len, s.u.s);
        *out = tpl_v_float(strtod(buf, NULL));
        return 0;
    }
    while (i < n && k < 100 && ((p[i] >= '0' && p[i] <= '9') || (k > d0 && dig_us(p, i, n)))) { if (p[i] != '_') buf[k++] = p[i]; i++; }
    if (i + 1 < n && p[i] == '.' && p[i + 1] >= '0' && p[i + 1] <= '9') {
        buf[k++] = p[i++];
        while (i < n && k < 110 && (isdigit((unsigned char)p[i]) || dig_us(p, i, n))) { if (p[i] != '_') buf[k++] = p[i]; i++; }
    }
    if (i + 1 < n && (p[i] == 'e' || p[i] == 'E') && k > d0) {
        size_t save = k, si = i;
        buf[k++] = p[i++];
        if (i < n && (p[i] == '-' || p[i] == '+')) buf[k++] = p[i++];
        if (i < n && p[i] >= '0' && p[i] <= '9') { while (i < n && k < 126 && (isdigit((unsigned char)p[i]) || dig_us(p, i, n))) { if (p[i] != '_') buf[k++] = p[i]; i++; } }
        else { k = save; i = si; }
    }
    buf[k] = 0;
    if (strict) {
        while (i < n && rb_space(p[i])) i++;
        if (k == d0 || i < n) return tpl_vm_error(vm, TPL_ERR_TYPE, "invalid value for Float(): \"%.*s\" (ArgumentError)", (int)s.len, s.u.s);
    }
    *out = tpl_v_float(k > d0 ? strtod(buf, NULL) : 0.0);
    return 0;
}

int r_str_to_i(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    int64_t base = 10;
    if (tpl_given(a[1]) && radix_arg(vm, a[1], &base) < 0) return -1;
    return str_to_i(vm, a[0], base < INT_MIN || base > INT_MAX ? -1 : (int)base, false, out);
}
int r_str_to_f(tpl_vm *vm, tpl_value *a, tpl_value *out) { return str_to_f(vm, a[0], false, out); }
int r_str_to_sym(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    *out = a[0];
    if (tpl_vm_json_state_str(vm, a[0])) {   /* (a copy: a Symbol's to_s is US-ASCII, not the state's UTF-8: r_str_encoding) */
        char *p = tpl_arena_strdup(A(vm), a[0].u.s, a[0].len);
        if (!p) return oom(vm);
        *out = tpl_v_str(p, a[0].len);
    }
    out->flags = TPL_F_SYMBOL;
    return 0;
}

int r_str_reverse(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value s = a[0];
    char *p = tpl_arena_alloc(A(vm), s.len + 1);
    if (!p) return oom(vm);
    size_t i = 0, w = s.len;
    while (i < s.len) {
        size_t st = i;
        tpl_utf8_next(s.u.s, s.len, &i);
        w -= i - st;
        mcpy(p + w, s.u.s + st, i - st);
    }
    *out = tpl_v_str(p, s.len);
    return 0;
}

static int justify(tpl_vm *vm, tpl_value *a, tpl_value *out, int how)
{
    tpl_value s = a[0];
    int64_t width;
    if (long_arg(vm, &a[1]) < 0) return -1;
    width = a[1].u.i;
    tpl_value pad = tpl_given(a[2]) ? a[2] : tpl_v_str(" ", 1);
    if (want_str(vm, pad) < 0) return -1;
    if (pad.len == 0) return tpl_vm_error(vm, TPL_ERR_TYPE, "zero width padding (ArgumentError)");
    int64_t len = (int64_t)tpl_utf8_len(s.u.s, s.len);
    if (width <= len) { *out = s; return 0; }
    if (width > 10000000) return tpl_vm_error(vm, TPL_ERR_LIMIT, "width too large");
    int64_t total = width - len, left = how == 0 ? 0 : how == 1 ? total : total / 2, right = total - left;
    tpl_list *pc;
    if (tpl_to_list(vm, pad, &pc) < 0) return -1;
    tpl_sb b;
    tpl_sb_init(&b, A(vm));
    for (int64_t i = 0; i < left && !b.failed; i++) tpl_sb_put(&b, pc->items[i % pc->len].u.s, pc->items[i % pc->len].len);
    tpl_sb_put(&b, s.u.s, s.len);
    for (int64_t i = 0; i < right && !b.failed; i++) tpl_sb_put(&b, pc->items[i % pc->len].u.s, pc->items[i % pc->len].len);
    if (b.failed) return oom(vm);
    *out = tpl_sb_value(&b);
    return 0;
}

int r_str_ljust(tpl_vm *vm, tpl_value *a, tpl_value *out) { return justify(vm, a, out, 0); }
int r_str_rjust(tpl_vm *vm, tpl_value *a, tpl_value *out) { return justify(vm, a, out, 1); }
int r_str_center(tpl_vm *vm, tpl_value *a, tpl_value *out) { return justify(vm, a, out, 2); }

/* Normalises (start, length) over len items Ruby's way; false when out of range (nil). */
static bool span(int64_t len, int64_t start, int64_t cnt, int64_t *b, int64_t *n)
{
    if (start < 0) start += len;
    if (start < 0 || start > len || cnt < 0) return false;
    if (cnt > len - start) cnt = len - start;
    *b = start;
    *n = cnt;
    return true;
}

static bool range_span(tpl_value r, int64_t len, int64_t *b, int64_t *n)
{
    tpl_value rb = r.u.list->items[0], re = r.u.list->items[1];
    bool excl = r.u.list->items[2].u.i != 0;
    /* a Float end truncated as rb_range_beg_len's NUM2LONG ("abcdef"[1.5..3.5] is "bcd"; was nil) */
    if (rb.type == TPL_T_FLOAT && rb.u.f > -9.2e18 && rb.u.f < 9.2e18) rb = tpl_v_int((int64_t)rb.u.f);
    if (re.type == TPL_T_FLOAT && re.u.f > -9.2e18 && re.u.f < 9.2e18) re = tpl_v_int((int64_t)re.u.f);
    if (rb.type != TPL_T_INT && rb.type != TPL_T_NONE) return false;
    if (re.type != TPL_T_INT && re.type != TPL_T_NONE) return false;
    int64_t s = rb.type == TPL_T_INT ? rb.u.i : 0;
    int64_t e = re.type == TPL_T_INT ? re.u.i : len;
    if (re.type == TPL_T_INT) {
        if (e < 0) e += len;
        if (e >= len) e = len;   /* (before the +1: an end near INT64_MAX must not overflow) */
        else if (!excl) e++;
    }
    if (s < 0) s += len;
    if (s < 0 || s > len) return false;
    *b = s;
    *n = e > s ? e - s : 0;
    return true;
}

int r_str_idx(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value s = a[0], k = a[1];
    int64_t len = (int64_t)tpl_utf8_len(s.u.s, s.len), b, n;
    if ((k.type == TPL_T_FLOAT || tpl_is_rat(k)) && long_arg(vm, &k) < 0) return -1;   /* s[1.5]: to_int, as Ruby's NUM2LONG */
    if (tpl_given(a[2]) && (a[2].type == TPL_T_FLOAT || tpl_is_rat(a[2])) && long_arg(vm, &a[2]) < 0) return -1;
    if (k.type == TPL_T_STR && (k.flags & (TPL_F_SYMBOL | TPL_F_CLASS_RB | TPL_F_EXC_RB)))
        return type_error(vm, TPL_VT_INT, k);   /* "str"[:sym]: TypeError (a Symbol is no substring) */
    if (k.type == TPL_T_STR && !(k.flags & TPL_F_REGEX_RB)) {
        if (tpl_given(a[2])) return type_error(vm, TPL_VT_INT, k);   /* s["sub", n]: rb_str_substr's Integer */
        *out = has_sub(s, k) ? k : tpl_v_none();
        return 0;
    }
    if (k.type == TPL_T_STR) {
        tpl_value r;
        tpl_value args[2] = { s, k };
        if (r_any_match_op(vm, args, &r) < 0) return -1;
        if (r.type == TPL_T_NONE) { *out = r; return 0; }
        OnigRegex re = rx_compile(vm, k);
        if (!re) return -1;
        OnigRegion *reg = onig_region_new();
        long ms = rx_search(vm, re, s, 0, reg);
        int g = 0;
        if (ms >= 0 && tpl_given(a[2])) { /* s[re, capture]: that group (a number or a name), nil when it took no part */
            if (a[2].type == TPL_T_INT) {
                int64_t gi = a[2].u.i < 0 ? a[2].u.i + reg->num_regs : a[2].u.i;
                g = gi >= 0 && gi < reg->num_regs ? (int)gi : -1;
            } else if (a[2].type == TPL_T_STR) {
                g = onig_name_to_backref_number(re, (const UChar *)a[2].u.s, (const UChar *)a[2].u.s + a[2].len, reg);
                if (g < 0) {
                    onig_region_free(reg, 1);
                    onig_free(re);
                    return tpl_vm_error(vm, TPL_ERR_TYPE, "undefined group name reference: %.*s (IndexError)", (int)a[2].len, a[2].u.s);
                }
            } else {
                onig_region_free(reg, 1);
                onig_free(re);
                return type_error(vm, TPL_VT_INT, a[2]);
            }
        }
        *out = ms >= 0 && g >= 0 && reg->beg[g] >= 0 ? tpl_v_str(s.u.s + reg->beg[g], (size_t)(reg->end[g] - reg->beg[g])) : tpl_v_none();
        onig_region_free(reg, 1);
        onig_free(re);
        return ms == -2 ? -1 : 0;
    }
    if (is_range(k)) {
        if (!range_span(k, len, &b, &n)) { *out = tpl_v_none(); return 0; }
    } else if (k.type == TPL_T_INT) {
        if (tpl_given(a[2])) {
            if (a[2].type != TPL_T_INT) return type_error(vm, TPL_VT_INT, a[2]);
            if (!span(len, k.u.i, a[2].u.i, &b, &n)) { *out = tpl_v_none(); return 0; }
        } else {
            b = k.u.i < 0 ? k.u.i + len : k.u.i;
            if (b < 0 || b >= len) { *out = tpl_v_none(); return 0; }
            n = 1;
        }
    } else {
        return type_error(vm, TPL_VT_INT, k);
    }
    size_t o0 = tpl_utf8_offset(s.u.s, s.len, (size_t)b), o1 = tpl_utf8_offset(s.u.s, s.len, (size_t)(b + n));
    *out = tpl_v_str(s.u.s + o0, o1 - o0);
    return 0;
}

int r_str_chars(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *l;
    if (tpl_to_list(vm, a[0], &l) < 0) return -1;
    *out = tpl_v_list(l);
    return 0;
}

int r_str_lines(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value s = a[0];
    tpl_list *l = new_list(vm, 4);
    if (!l) return oom(vm);
    size_t st = 0;
    for (size_t i = 0; i < s.len; i++)
        if (s.u.s[i] == '\n') {
            if (!tpl_list_push(A(vm), l, tpl_v_str(s.u.s + st, i + 1 - st))) return oom(vm);
            st = i + 1;
        }
    if (st < s.len && !tpl_list_push(A(vm), l, tpl_v_str(s.u.s + st, s.len - st))) return oom(vm);
    *out = tpl_v_list(l);
    return 0;
}

int r_str_plus(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (want_str(vm, a[1]) < 0) return -1;
    return tpl_vm_concat(vm, tpl_v_str(a[0].u.s, a[0].len), tpl_v_str(a[1].u.s, a[1].len), out);
}

/* String#<< (and concat): a String, or an Integer as a code point. The compiler stores the
 * result back into the receiver's variable (values are immutable). */
static int frozen_error(tpl_vm *vm, tpl_value s)
{
    int len;
    const char *insp = inspect_short(vm, s, &len);
    return tpl_vm_error(vm, TPL_ERR_TYPE, "can't modify frozen String: %.*s (FrozenError)", len, insp);
}

int r_str_shovel(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (a[0].flags & TPL_F_FROZEN_RB) return frozen_error(vm, a[0]);
    if (a[1].type == TPL_T_BIGINT) return tpl_vm_error(vm, TPL_ERR_VALUE, "bignum out of char range (RangeError)");
    if (a[1].type == TPL_T_INT) {
        int64_t cp = a[1].u.i;
        if (cp < 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return tpl_vm_error(vm, TPL_ERR_VALUE, "%lld out of char range (RangeError)", (long long)cp);
        tpl_sb b;
        tpl_sb_init(&b, A(vm));
        tpl_sb_put_cp(&b, (uint32_t)cp);
        if (b.failed) return oom(vm);
        return tpl_vm_concat(vm, tpl_v_str(a[0].u.s, a[0].len), tpl_sb_value(&b), out);
    }
    return r_str_plus(vm, a, out);
}

/* String#concat(*others): each appended as << appends it (strings, or Integer code points). */
int r_str_concat(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (a[0].flags & TPL_F_FROZEN_RB) return frozen_error(vm, a[0]);
    tpl_list *more = a[1].u.list;
    tpl_value cur = a[0];
    for (uint32_t i = 0; i < more->len; i++) {
        tpl_value b[2] = { cur, more->items[i] };
        if (r_str_shovel(vm, b, &cur) < 0) return -1;
    }
    *out = cur;
    return 0;
}

/* ------------------------------------------------------------------ numbers */

static double round_half_up(double x, double s)
{
    double f, xs = x * s;
    f = round(xs);
    if (s == 1.0) return f;
    if (x > 0) { if ((double)((f + 0.5) / s) <= x) f += 1; }
    else { if ((double)((f - 0.5) / s) >= x) f -= 1; }
    return f;
}

static double round_half_even(double x, double s)
{
    double xs = x * s, f = round(xs);
    if (fabs(xs - trunc(xs)) == 0.5) f = 2.0 * round(xs / 2.0);
    return f;
}

static double round_half_down(double x, double s)
{
    double f = round(x * s);
    if (x > 0) { if ((double)((f - 0.5) / s) >= x) f -= 1; }
    else { if ((double)((f + 0.5) / s) <= x) f += 1; }
    return f;
}

static int64_t ipow10(int64_t n) { int64_t p = 1; while (n-- > 0 && p < INT64_MAX / 10) p *= 10; return p; }

enum { HALF_UP, HALF_EVEN, HALF_DOWN };

/* Integer rounding to 10**-nd (nd < 0) with mode 0 round (ties by `half`), 1 floor, 2 ceil. */
/* (128-bit: 9223372036854775807.ceil(-18) and 5.ceil(-19) are 10**19, past int64; 10**-nd past an
 * int64's digits, nd <= -20, gives 0 as Ruby's int_round_zero_p decides for a fixnum.) */
static __int128 int_round(int64_t x, int64_t nd, int mode, int half)
{
    if (nd >= 0) return x;
    if (-nd >= 20) return 0;
    __int128 p = -nd == 19 ? (__int128)ipow10(18) * 10 : ipow10(-nd), q = x / p, r = x % p;
    if (r < 0) { q--; r += p; }
    if (mode == 1) return q * p;
    if (mode == 2) return r ? (q + 1) * p : q * p;
    if (r * 2 > p || (r * 2 == p && (half == HALF_EVEN ? (q & 1) : half == HALF_UP ? x >= 0 : x < 0))) q++;
    return q * p;
}

/* Big int z rounded to 10**-nd (nd < 0) as int_round (mode 3: truncate); 0 when 10**-nd is past its
 * digits (Ruby's int_round_zero_p). Clears z. */
static int big_round(tpl_vm *vm, mpz_t z, int64_t nd, int mode, int half, tpl_value *out)
{
    if (nd >= 0) return tpl_big_result(vm, z, out);
    if (-0.415241 * (double)nd - 0.125 > (double)((mpz_sizeinbase(z, 2) + 7) / 8)) {
        mpz_clear(z);
        *out = tpl_v_int(0);
        return 0;
    }
    bool neg = mpz_sgn(z) < 0;
    if (mode == 3) mode = neg ? 2 : 1;
    mpz_t p, q, rm;
    mpz_inits(p, q, rm, NULL);
    mpz_ui_pow_ui(p, 10, (unsigned long)-nd);
    mpz_fdiv_qr(q, rm, z, p);
    int c = mpz_sgn(rm) ? 1 : 0;
    if (c && mode == 0) {
        mpz_mul_2exp(rm, rm, 1);
        c = mpz_cmp(rm, p);
    }
    if (mode == 2 ? c > 0 : mode == 0 && (c > 0 || (c == 0 && mpz_sgn(rm) &&
                                          (half == HALF_EVEN ? mpz_odd_p(q) : half == HALF_UP ? !neg : neg))))
        mpz_add_ui(q, q, 1);
    mpz_mul(z, q, p);
    mpz_clears(p, q, rm, NULL);
    return tpl_big_result(vm, z, out);
}

/* int_round's result as a value: an Integer, or a big one past int64. */
static int int_round_value(tpl_vm *vm, __int128 v, tpl_value *out)
{
    if (v >= INT64_MIN && v <= INT64_MAX) { *out = tpl_v_int((int64_t)v); return 0; }
    unsigned __int128 m = v < 0 ? -(unsigned __int128)v : (unsigned __int128)v;
    mpz_t z;
    mpz_init_set_ui(z, (unsigned long)(uint64_t)(m >> 64));
    mpz_mul_2exp(z, z, 64);
    mpz_add_ui(z, z, (unsigned long)(uint64_t)m);
    if (v < 0) mpz_neg(z, z);
    return tpl_big_result(vm, z, out);
}

static int num_round(tpl_vm *vm, tpl_value *a, tpl_value *out, int mode)
{
    tpl_value v = a[0];
    int64_t nd = 0;
    /* Integer#round without ndigits is the Integer, its keywords unread (int_round: 3.round(half: :bad) 3) */
    if (mode == 0 && !tpl_given(a[1]) && (v.type == TPL_T_INT || v.type == TPL_T_BIGINT)) { *out = v; return 0; }
    if (tpl_given(a[2]) && a[2].type == TPL_T_MAP && a[2].u.map->len) {
        const tpl_map *kw = a[2].u.map;
        if (mode != 0) {   /* floor/ceil take no keywords: Ruby passes them as a Hash ndigits */
            if (tpl_given(a[1])) return tpl_vm_error(vm, TPL_ERR_TYPE, "wrong number of arguments (given 2, expected 0..1) (ArgumentError)");
            return type_error(vm, TPL_VT_INT, a[2]);
        }
        tpl_sb sb;   /* round's one keyword is half: (rb_get_kwargs' "unknown keyword(s): :x, :y") */
        tpl_sb_init(&sb, A(vm));
        int unknown = 0;
        for (uint32_t i = 0; i < kw->len; i++) {
            tpl_value k = kw->e[i].key;
            if (k.type == TPL_T_STR && k.len == 4 && memcmp(k.u.s, "half", 4) == 0) continue;
            if (unknown++) tpl_sb_puts(&sb, ", ");
            if (k.type == TPL_T_STR) k.flags |= TPL_F_SYMBOL;   /* (a keyword's name, :x) */
            tpl_rb_inspect(&sb, k);
        }
        if (unknown)
            return tpl_vm_error(vm, TPL_ERR_TYPE, "unknown keyword%s: %.*s (ArgumentError)", unknown > 1 ? "s" : "", (int)sb.len, sb.p ? sb.p : "");
    }
    /* ndigits is NUM2INT's: past an int a RangeError (12345.round(-(2**40)) was 0), a Float truncated */
    if (tpl_given(a[1]) && radix_arg(vm, a[1], &nd) < 0) return -1;
    int half = HALF_UP;
    if (mode == 0 && tpl_given(a[2]) && a[2].type == TPL_T_MAP) {
        tpl_value *h = tpl_map_get_str(a[2].u.map, "half", 4, tpl_hash_str("half", 4));
        if (h && h->type != TPL_T_NONE) {
            tpl_value hs = str_of(vm, *h);
            if (h->type == TPL_T_STR && h->len == 4 && memcmp(h->u.s, "even", 4) == 0) half = HALF_EVEN;
            else if (h->type == TPL_T_STR && h->len == 4 && memcmp(h->u.s, "down", 4) == 0) half = HALF_DOWN;
            else if (!(h->type == TPL_T_STR && h->len == 2 && memcmp(h->u.s, "up", 2) == 0))
                return tpl_vm_error(vm, TPL_ERR_TYPE, "invalid rounding mode: %.*s (ArgumentError)", (int)hs.len, hs.u.s);
        }
    }
    if (v.type == TPL_T_INT) return int_round_value(vm, int_round(v.u.i, nd, mode, half), out);
    if (v.type == TPL_T_BIGINT) {
        mpz_t z;
        tpl_big_get(z, v);
        return big_round(vm, z, nd, mode, half, out);
    }
    double x = v.u.f;
    if (nd <= 0) {
        /* round to 10**-nd with nd < 0 rounds the integer part (Float#round calls
         * Integer#round on to_i); floor and ceil take the float's floor or ceil first */
        if (!isfinite(x)) return tpl_vm_error(vm, TPL_ERR_TYPE, "%s (FloatDomainError)", isnan(x) ? "NaN" : x > 0 ? "Infinity" : "-Infinity");
        double r = mode == 1 ? floor(x) : mode == 2 ? ceil(x) : nd < 0 ? trunc(x)
                 : half == HALF_EVEN ? round_half_even(x, 1.0) : half == HALF_DOWN ? round_half_down(x, 1.0) : round(x);
        if (fabs(r) >= 9.2e18 && nd < 0) {   /* a big integer part rounded to 10**-nd */
            mpz_t z;
            mpz_init_set_d(z, r);
            return big_round(vm, z, nd, mode, half, out);
        }
        if (fabs(r) >= 9.2e18) return tpl_big_from_double(vm, r, out);
        return int_round_value(vm, int_round((int64_t)r, nd, mode, half), out);
    }
    int binexp;
    frexp(x, &binexp);
    /* float_round_overflow / underflow (Ruby's float.c) */
    if (nd >= (DBL_DIG + 2) - (binexp > 0 ? binexp / 4 : binexp / 3 - 1)) { *out = v; return 0; }
    if (binexp > 0 ? false : nd < -(binexp / 3 - 1) - 1 && false) { *out = tpl_v_float(0.0); return 0; }
    double s = pow(10, (double)nd), r;
    if (mode == 1) { r = floor(x * s); if ((r + 1) / s <= x) r += 1; }
    else if (mode == 2) { r = ceil(x * s); if ((r - 1) / s >= x) r -= 1; }
    else r = half == HALF_EVEN ? round_half_even(x, s) : half == HALF_DOWN ? round_half_down(x, s) : round_half_up(x, s);
    *out = tpl_v_float(r / s);
    return 0;
}

int r_num_round(tpl_vm *vm, tpl_value *a, tpl_value *out) { return num_round(vm, a, out, 0); }
int r_num_floor(tpl_vm *vm, tpl_value *a, tpl_value *out) { return num_round(vm, a, out, 1); }
int r_num_ceil(tpl_vm *vm, tpl_value *a, tpl_value *out) { return num_round(vm, a, out, 2); }
/* Integer#truncate(ndigits) / Float#truncate(ndigits): toward zero, floor for a positive number and ceil
 * for a negative one (Ruby's int_truncate / flo_truncate); without ndigits, to_i */
int r_num_truncate(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (!tpl_given(a[1])) return r_num_to_i(vm, a, out);
    tpl_value b[3] = { a[0], a[1], tpl_v_none() };
    bool neg = a[0].type == TPL_T_INT ? a[0].u.i < 0 : a[0].type == TPL_T_FLOAT ? a[0].u.f < 0 : false;
    return num_round(vm, b, out, neg ? 2 : 1);
}

int r_num_to_i(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value v = a[0];
    if (v.type == TPL_T_INT) { *out = v; return 0; }
    if (!isfinite(v.u.f)) return tpl_vm_error(vm, TPL_ERR_TYPE, "%s (FloatDomainError)", isnan(v.u.f) ? "NaN" : v.u.f > 0 ? "Infinity" : "-Infinity");
    if (fabs(v.u.f) >= 9.2e18) return tpl_big_from_double(vm, trunc(v.u.f), out);
    *out = tpl_v_int((int64_t)v.u.f);
    return 0;
}

int r_num_to_f(tpl_vm *vm, tpl_value *a, tpl_value *out) { (void)vm; *out = tpl_v_float(dbl(a[0])); return 0; }

int r_num_to_s(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value v = a[0];
    if (tpl_given(a[1]) && v.type == TPL_T_FLOAT)   /* (Float#to_s takes no radix) */
        return tpl_vm_error(vm, TPL_ERR_VALUE, "wrong number of arguments (given 1, expected 0) (ArgumentError)");
    if (!tpl_given(a[1]) || v.type != TPL_T_INT) { *out = str_of(vm, v); return 0; }
    int64_t base = 10;
    if (radix_arg(vm, a[1], &base) < 0) return -1;
    if (base < 2 || base > 36) return tpl_vm_error(vm, TPL_ERR_TYPE, "invalid radix %lld (ArgumentError)", (long long)base);
    char buf[72];
    int k = 71;
    buf[k] = 0;
    uint64_t x = v.u.i < 0 ? (uint64_t)0 - (uint64_t)v.u.i : (uint64_t)v.u.i;
    do { buf[--k] = "0123456789abcdefghijklmnopqrstuvwxyz"[x % (uint64_t)base]; x /= (uint64_t)base; } while (x);
    if (v.u.i < 0) buf[--k] = '-';
    char *s = tpl_arena_strdup(A(vm), buf + k, (size_t)(71 - k));
    if (!s) return oom(vm);
    *out = tpl_v_str(s, (size_t)(71 - k));
    return 0;
}

int r_num_abs(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value v = a[0];
    if (v.type == TPL_T_FLOAT) { *out = tpl_v_float(fabs(v.u.f)); return 0; }
    if (v.u.i == INT64_MIN) return tpl_big_abs(vm, v, out);
    *out = tpl_v_int(v.u.i < 0 ? -v.u.i : v.u.i);
    return 0;
}

int r_num_fdiv(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (a[1].type == TPL_T_BIGINT && a[0].type == TPL_T_FLOAT) { *out = tpl_v_float(a[0].u.f / dbl(a[1])); return 0; }   /* (Float#fdiv is /) */
    if (!is_num(a[1])) return coerce_failed(vm, a[1], tpl_rb_class_name(a[0]));   /* (num_funcall_op_1's coerce) */
    *out = tpl_v_float(dbl(a[0]) / dbl(a[1]));
    return 0;
}

int r_num_divmod(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value x = a[0], y = a[1];
    if (!is_num(y)) return coerce_failed(vm, y, tpl_rb_class_name(x));
    tpl_list *l = new_list(vm, 2);
    if (!l) return oom(vm);
    if (x.type == TPL_T_INT && y.type == TPL_T_INT) {
        if (y.u.i == 0) return tpl_vm_fail(vm, TPL_EK_ZERO_DIVISION, "divided by 0 (ZeroDivisionError)");
        if (y.u.i == -1 && x.u.i == INT64_MIN) { /* the C division traps (SIGFPE): 2**63, 0 */
            if (tpl_big_binop(vm, TPL_OP_FLOORDIV, x, y, &l->items[0]) < 0) return -1;
            l->items[1] = tpl_v_int(0);
            l->len = 2;
            *out = tpl_v_list(l);
            return 0;
        }
        int64_t q = x.u.i / y.u.i, r = x.u.i % y.u.i;
        if (r && ((r < 0) != (y.u.i < 0))) { q--; r += y.u.i; }
        l->items[0] = tpl_v_int(q);
        l->items[1] = tpl_v_int(r);
    } else {
        /* Ruby's flodivmod; the quotient is an Integer */
        double dx = dbl(x), dy = dbl(y), q, r;
        if (isnan(dy)) q = r = dy;
        else {
            if (dy == 0.0) return tpl_vm_fail(vm, TPL_EK_ZERO_DIVISION, "divided by 0 (ZeroDivisionError)");
            r = dx == 0.0 || (isinf(dy) && !isinf(dx)) ? dx : fmod(dx, dy);
            q = isinf(dx) && !isinf(dy) ? dx : round((dx - r) / dy);
            if (dy * r < 0) { r += dy; q -= 1.0; }
        }
        if (!isfinite(q)) return tpl_vm_error(vm, TPL_ERR_TYPE, "%s (FloatDomainError)", isnan(q) ? "NaN" : q > 0 ? "Infinity" : "-Infinity");
        if (fabs(q) < 9.2e18) l->items[0] = tpl_v_int((int64_t)q);
        else if (tpl_big_from_double(vm, q, &l->items[0]) < 0) return -1; /* (it returned q alone, not [q, r]) */
        l->items[1] = tpl_v_float(r);
    }
    l->len = 2;
    *out = tpl_v_list(l);
    return 0;
}

static int want_int(tpl_vm *vm, tpl_value v, const char *m)
{
    if (v.type != TPL_T_INT) return no_method(vm, v, m, strlen(m));
    return 0;
}

int r_num_even_p(tpl_vm *vm, tpl_value *a, tpl_value *out) { if (want_int(vm, a[0], "even?") < 0) return -1; *out = tpl_v_bool((a[0].u.i & 1) == 0); return 0; }
int r_num_odd_p(tpl_vm *vm, tpl_value *a, tpl_value *out) { if (want_int(vm, a[0], "odd?") < 0) return -1; *out = tpl_v_bool((a[0].u.i & 1) != 0); return 0; }
int r_num_zero_p(tpl_vm *vm, tpl_value *a, tpl_value *out) { (void)vm; *out = tpl_v_bool(dbl(a[0]) == 0.0); return 0; }
int r_num_positive_p(tpl_vm *vm, tpl_value *a, tpl_value *out) { (void)vm; *out = tpl_v_bool(dbl(a[0]) > 0.0); return 0; }
int r_num_negative_p(tpl_vm *vm, tpl_value *a, tpl_value *out) { (void)vm; *out = tpl_v_bool(dbl(a[0]) < 0.0); return 0; }
int r_num_integer_p(tpl_vm *vm, tpl_value *a, tpl_value *out) { (void)vm; *out = tpl_v_bool(a[0].type == TPL_T_INT); return 0; }

int r_num_between_p(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    bool ok1, ok2;   /* (Comparable#between?: false once below min, max not compared) */
    if (a[0].type == TPL_T_STR && (a[0].flags & (TPL_F_REGEX_RB | TPL_F_CLASS_RB | TPL_F_EXC_RB)))
        return no_method(vm, a[0], "between?", 8);   /* (Regexp, Module, exceptions are not Comparable) */
    int c1 = rb_cmp(a[0], a[1], &ok1, tpl_vm_arena(vm)->fuel);
    if (!ok1) return cmp_error(vm, a[0], a[1]);
    if (c1 < 0) { *out = tpl_v_bool(false); return 0; }
    int c2 = rb_cmp(a[0], a[2], &ok2, tpl_vm_arena(vm)->fuel);
    if (!ok2) return cmp_error(vm, a[0], a[2]);
    *out = tpl_v_bool(c2 <= 0);
    return 0;
}

int r_num_times(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_rb_block blk = tpl_vm_block(vm);
    if (want_int(vm, a[0], "times") < 0) return -1;
    if (!blk.pc) {   /* the enumerator, as 0...n */
        tpl_list *r;
        if (tpl_rb_each_list(vm, a[0], TPL_RB_TIMES, &r) < 0) return -1;
        *out = tpl_v_list(r);
        return 0;
    }
    tpl_value r;
    for (int64_t i = 0; i < a[0].u.i; i++) {
        tpl_value iv = tpl_v_int(i);
        YIELD(blk, &iv, 1, &r);
    }
    *out = a[0];
    return 0;
}

/* ------------------------------------------------------------------ Array (and Enumerable) */

static tpl_list *L_(tpl_value v) { return v.u.list; }

int r_arr_first(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *l = L_(a[0]);
    if (!tpl_given(a[1])) { *out = l->len ? l->items[0] : tpl_v_none(); return 0; }
    if (long_arg(vm, &a[1]) < 0) return -1;
    if (a[1].u.i < 0) return tpl_vm_error(vm, TPL_ERR_TYPE, "negative array size (ArgumentError)");
    uint32_t n = a[1].u.i > l->len ? l->len : (uint32_t)a[1].u.i;
    tpl_list *r = new_list(vm, n);
    if (!r) return oom(vm);
    mcpy(r->items, l->items, n * sizeof *r->items);
    r->len = n;
    *out = tpl_v_list(r);
    return 0;
}

int r_arr_last(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *l = L_(a[0]);
    if (!tpl_given(a[1])) { *out = l->len ? l->items[l->len - 1] : tpl_v_none(); return 0; }
    if (long_arg(vm, &a[1]) < 0) return -1;
    if (a[1].u.i < 0) return tpl_vm_error(vm, TPL_ERR_TYPE, "negative array size (ArgumentError)");
    uint32_t n = a[1].u.i > l->len ? l->len : (uint32_t)a[1].u.i;
    tpl_list *r = new_list(vm, n);
    if (!r) return oom(vm);
    mcpy_items(r->items, 0, l->items, l->len - n, n);
    r->len = n;
    *out = tpl_v_list(r);
    return 0;
}

int r_arr_size(tpl_vm *vm, tpl_value *a, tpl_value *out) { (void)vm; *out = tpl_v_int(L_(a[0])->len); return 0; }
int r_arr_empty_p(tpl_vm *vm, tpl_value *a, tpl_value *out) { (void)vm; *out = tpl_v_bool(L_(a[0])->len == 0); return 0; }

int r_arr_count(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *l = L_(a[0]);
    tpl_rb_block blk = tpl_vm_block(vm);
    int64_t n = 0;
    tpl_value r;
    for (uint32_t i = 0; i < l->len; i++) {
        if (tpl_given(a[1])) { bool eq = false; if (tpl_vm_rb_equal(vm, l->items[i], a[1], &eq) < 0) return -1; n += eq; }
        else if (blk.pc) { YIELD(blk, &l->items[i], 1, &r); n += tpl_truthy_rb(r); }
        else n++;
    }
    *out = tpl_v_int(n);
    return 0;
}

/* any? all? none?: with a block, its value; with an argument, ===; else the item itself. */
static int quantify(tpl_vm *vm, tpl_value *a, tpl_value *out, int which)
{
    tpl_list *l = L_(a[0]);
    tpl_rb_block blk = tpl_vm_block(vm);
    for (uint32_t i = 0; i < l->len; i++) {
        tpl_value r = l->items[i];
        if (tpl_given(a[1])) {
            tpl_value args[2] = { a[1], l->items[i] };
            if (r_any_eqq(vm, args, &r) < 0) return -1;
        } else if (blk.pc) {
            YIELD(blk, &l->items[i], 1, &r);
        }
        bool t = tpl_truthy_rb(r);
        if (which == 0 && t) { *out = tpl_v_bool(true); return 0; }
        if (which == 1 && !t) { *out = tpl_v_bool(false); return 0; }
        if (which == 2 && t) { *out = tpl_v_bool(false); return 0; }
    }
    *out = tpl_v_bool(which != 0);
    return 0;
}

int r_arr_any_p(tpl_vm *vm, tpl_value *a, tpl_value *out) { return quantify(vm, a, out, 0); }
int r_arr_all_p(tpl_vm *vm, tpl_value *a, tpl_value *out) { return quantify(vm, a, out, 1); }
int r_arr_none_p(tpl_vm *vm, tpl_value *a, tpl_value *out) { return quantify(vm, a, out, 2); }

int r_arr_include_p(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *l = L_(a[0]);
    for (uint32_t i = 0; i < l->len; i++) {
        bool eq = false;
        if (tpl_vm_rb_equal(vm, l->items[i], a[1], &eq) < 0) return -1;
        if (eq) { *out = tpl_v_bool(true); return 0; }
    }
    *out = tpl_v_bool(false);
    return 0;
}

int r_arr_index(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *l = L_(a[0]);
    tpl_rb_block blk = tpl_vm_block(vm);
    tpl_value r;
    for (uint32_t i = 0; i < l->len; i++) {
        bool hit = false;
        if (tpl_given(a[1])) { if (tpl_vm_rb_equal(vm, l->items[i], a[1], &hit) < 0) return -1; }
        else { YIELD(blk, &l->items[i], 1, &r); hit = tpl_truthy_rb(r); }
        if (hit) { *out = tpl_v_int(i); return 0; }
    }
    *out = tpl_v_none();
    return 0;
}

/* join_in's Arrays, innermost first: Ruby's join refuses an Array inside itself (ArgumentError). */
struct join_path { const tpl_list *l; const struct join_path *up; };

static int join_in(tpl_vm *vm, tpl_sb *b, tpl_list *l, tpl_value sep, int depth, const struct join_path *up)
{
    /* only depth is bounded (the C stack), as printing is */
    if (depth > 1000) return tpl_vm_error(vm, TPL_ERR_LIMIT, "join: arrays nested more than 1000 deep");
    for (const struct join_path *p = up; p; p = p->up)
        if (p->l == l) return tpl_vm_error(vm, TPL_ERR_VALUE, "recursive array join (ArgumentError)");
    struct join_path here = { l, up };
    for (uint32_t i = 0; i < l->len; i++) {
        if (!tpl_sb_charge(b, 1)) return 0; /* memory or fuel: the caller reports it */
        if (i) tpl_sb_put(b, sep.u.s, sep.len);
        tpl_value v = l->items[i];
        if (is_array(v)) { if (join_in(vm, b, v.u.list, sep, depth + 1, &here) < 0) return -1; }
        else tpl_rb_to_s(b, v);
    }
    return 0;
}

int r_arr_join(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value sep = tpl_given(a[1]) && a[1].type != TPL_T_NONE ? a[1] : tpl_v_str("", 0);
    if (want_str(vm, sep) < 0) return -1;
    tpl_list *l = L_(a[0]);
    size_t total = l->len ? (size_t)sep.len * (l->len - 1) : 0;
    uint32_t i = 0;
    for (; i < l->len && l->items[i].type == TPL_T_STR && i < 64; i++) total += l->items[i].len;
    if (i == l->len && i > 0 && total <= UINT32_MAX) {
        /* a few strings (to_s is the string itself): copied once into a string of their total
         * length, charged the fuel join_in charges (one unit per item) */
        if (!tpl_fuel_charge(A(vm)->fuel, l->len)) return oom(vm);
        char *o = tpl_arena_alloc(A(vm), total ? total : 1);
        if (!o) return oom(vm);
        size_t k = 0;
        for (i = 0; i < l->len; i++) {
            if (i && sep.len) { mcpy(o + k, sep.u.s, sep.len); k += sep.len; }
            if (l->items[i].len) { mcpy(o + k, l->items[i].u.s, l->items[i].len); k += l->items[i].len; }
        }
        *out = tpl_v_str(o, total);
        return 0;
    }
    tpl_sb b;
    tpl_sb_init(&b, A(vm));
    if (join_in(vm, &b, l, sep, 0, NULL) < 0) return -1;
    if (b.failed) return oom(vm);
    *out = tpl_sb_value(&b);
    return 0;
}

/* Merge sort with a comparator: Ruby's <=>, or the block's result. */
typedef struct sorter { tpl_vm *vm; tpl_rb_block blk; bool use_blk; tpl_value *keys; bool failed; } sorter;

static int sort_cmp(sorter *s, tpl_value x, tpl_value y)
{
    tpl_vm *vm = s->vm;
    if (s->use_blk) {
        tpl_value args[2] = { x, y }, r;
        int yr = tpl_rb_yield(vm, &s->blk, args, 2, &r);
        if (yr != 0) { s->failed = true; if (yr > 0) tpl_vm_error(vm, TPL_ERR_TYPE, "break from a sort block is not supported"); return 0; }
        if (r.type == TPL_T_INT) return r.u.i < 0 ? -1 : r.u.i > 0;
        /* rb_cmpint of the block's value: nil is the comparison's error, a Bignum or Float by its sign, else
         * its > 0 / < 0 (a String or Symbol: "comparison of String with 0 failed"; no > : NoMethodError) */
        if (r.type == TPL_T_BIGINT) return r.u.s[0] == '-' ? -1 : 1;
        if (r.type == TPL_T_FLOAT) return r.u.f < 0 ? -1 : r.u.f > 0;
        s->failed = true;
        if (r.type == TPL_T_NONE || r.type == TPL_T_UNDEF) cmp_fail(vm, x, y);
        else if (r.type == TPL_T_STR && !(r.flags & (TPL_F_REGEX_RB | TPL_F_CLASS_RB | TPL_F_EXC_RB))) cmp_fail(vm, r, tpl_v_int(0));
        else if (tpl_is_rat(r) || r.type == TPL_T_HOST || (r.type == TPL_T_STR && (r.flags & TPL_F_CLASS_RB)))
            tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: a comparison block answering a %s", tpl_rb_class_name(r));
        else no_method(vm, r, ">", 1);
        return 0;
    }
    if (x.type == TPL_T_HOST) {   /* a Ruby object's own <=> (Comparable): an Integer, else Ruby's ArgumentError */
        tpl_value r;
        int rc = host_op(vm, x, "<=>", y, &r);
        if (rc < 0) { s->failed = true; return 0; }
        if (rc == 0 && r.type == TPL_T_INT) return r.u.i < 0 ? -1 : r.u.i > 0;
        if (rc == 0 && r.type == TPL_T_FLOAT) return r.u.f < 0 ? -1 : r.u.f > 0;   /* (rb_cmpint: its < 0, > 0) */
        if (rc == 0 && r.type != TPL_T_NONE) {
            s->failed = true;
            tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: a <=> that answers neither an Integer nor nil");
            return 0;
        }
        s->failed = true;
        cmp_fail(vm, x, y);
        return 0;
    }
    bool ok;
    int c = rb_cmp(x, y, &ok, tpl_vm_arena(vm)->fuel);
    if (!ok) { s->failed = true; cmp_error(vm, x, y); }
    return c;
}

static void msort(sorter *s, tpl_value *v, tpl_value *k, tpl_value *tv, tpl_value *tk, uint32_t n)
{
    if (n < 2 || s->failed) return;
    uint32_t m = n / 2;
    msort(s, v, k, tv, tk, m);
    msort(s, v + m, k ? k + m : NULL, tv, tk, n - m);
    uint32_t i = 0, j = m, o = 0;
    while (i < m && j < n && !s->failed) {
        bool take_right = sort_cmp(s, k ? k[i] : v[i], k ? k[j] : v[j]) > 0;
        uint32_t src = take_right ? j++ : i++;
        tv[o] = v[src];
        if (k) tk[o] = k[src];
        o++;
    }
    while (i < m) { tv[o] = v[i]; if (k) tk[o] = k[i]; o++; i++; }
    while (j < n) { tv[o] = v[j]; if (k) tk[o] = k[j]; o++; j++; }
    mcpy(v, tv, n * sizeof *v);
    if (k) mcpy(k, tk, n * sizeof *k);
}

static int sort_list(tpl_vm *vm, tpl_list *src, tpl_value *keys, bool use_blk, tpl_list **out)
{
    uint32_t n = src->len;
    tpl_list *r = new_list(vm, n);
    tpl_value *tv = tpl_arena_alloc(A(vm), (n + 1) * sizeof *tv), *tk = keys ? tpl_arena_alloc(A(vm), (n + 1) * sizeof *tk) : NULL;
    if (!r || !tv || (keys && !tk)) return oom(vm);
    mcpy(r->items, src->items, n * sizeof *r->items);
    r->len = n;
    sorter s = { vm, tpl_vm_block(vm), use_blk, keys, false };
    msort(&s, r->items, keys, tv, tk, n);
    if (s.failed) return -1;
    *out = r;
    return 0;
}

int r_arr_sort(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *r;
    if (sort_list(vm, L_(a[0]), NULL, tpl_vm_block(vm).pc != 0, &r) < 0) return -1;
    *out = tpl_v_list(r);
    return 0;
}

/* The block's value for every item (map, sort_by, min_by, ...). */
static int block_values(tpl_vm *vm, tpl_list *l, tpl_value **keys, tpl_value *out, bool *broke)
{
    tpl_rb_block blk = tpl_vm_block(vm);
    if (!blk.pc) return tpl_vm_error(vm, TPL_ERR_SYNTAX, "unsupported Ruby construct: this method without a block (Ruby answers an Enumerator)");
    tpl_value *k = tpl_arena_alloc(A(vm), (l->len + 1) * sizeof *k);
    if (!k) return oom(vm);
    *broke = false;
    for (uint32_t i = 0; i < l->len; i++) {
        int yr = tpl_rb_yield(vm, &blk, &l->items[i], 1, &k[i]);
        if (yr < 0) return -1;
        if (yr > 0) { *out = k[i]; *broke = true; return 0; }
    }
    *keys = k;
    return 0;
}

int r_arr_sort_by(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value *keys;
    bool broke;
    if (block_values(vm, L_(a[0]), &keys, out, &broke) < 0) return -1;
    if (broke) return 0;
    tpl_list *r;
    if (sort_list(vm, L_(a[0]), keys, false, &r) < 0) return -1;
    *out = tpl_v_list(r);
    return 0;
}

/* min/max (sign -1/1), min_by/max_by (by). Without a block Array#min/max (rb_ary_min/max) compare
 * the best so far with the next item, <=> called on the best (so a failed comparison's message
 * names the best's class first: [1, "a"] "comparison of Integer with String failed"); the VM's
 * opt_newarray_min/max for a literal with a non-static item (`[1, "a"].min`) compare the next item
 * with the best (item_first, "comparison of String with 1 failed"), as Enumerable#min_by and a block do. */
static int extreme_(tpl_vm *vm, tpl_value *a, tpl_value *out, int sign, bool by, bool item_first)
{
    tpl_list *l = L_(a[0]);
    tpl_value *keys = l->items;
    bool broke = false;
    if (by && block_values(vm, l, &keys, out, &broke) < 0) return -1;
    if (broke) return 0;
    tpl_rb_block blk = tpl_vm_block(vm);
    sorter s = { vm, blk, !by && blk.pc != 0, NULL, false };
    int64_t best = -1;
    item_first |= by || s.use_blk;
    for (uint32_t i = 0; i < l->len; i++) {
        if (best < 0 || (item_first ? sort_cmp(&s, keys[i], keys[best]) * sign > 0 : sort_cmp(&s, keys[best], keys[i]) * sign < 0))
            best = i;
        if (s.failed) return -1;
    }
    *out = best < 0 ? tpl_v_none() : l->items[best];
    return 0;
}
static int extreme(tpl_vm *vm, tpl_value *a, tpl_value *out, int sign, bool by) { return extreme_(vm, a, out, sign, by, false); }
int r_arr_newarray_min(tpl_vm *vm, tpl_value *a, tpl_value *out) { return extreme_(vm, a, out, -1, false, true); }
int r_arr_newarray_max(tpl_vm *vm, tpl_value *a, tpl_value *out) { return extreme_(vm, a, out, 1, false, true); }

int r_arr_min(tpl_vm *vm, tpl_value *a, tpl_value *out) { return extreme(vm, a, out, -1, false); }
int r_arr_max(tpl_vm *vm, tpl_value *a, tpl_value *out) { return extreme(vm, a, out, 1, false); }
int r_arr_min_by(tpl_vm *vm, tpl_value *a, tpl_value *out) { return extreme(vm, a, out, -1, true); }
int r_arr_max_by(tpl_vm *vm, tpl_value *a, tpl_value *out) { return extreme(vm, a, out, 1, true); }

int r_arr_sum(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *l = L_(a[0]);
    tpl_rb_block blk = tpl_vm_block(vm);
    tpl_value acc = tpl_given(a[1]) ? a[1] : tpl_v_int(0);
    /* Kahan-Babuska compensated summation once floats appear, as Ruby's Array#sum */
    bool flt = false;
    double f = 0.0, c = 0.0;
    for (uint32_t i = 0; i < l->len; i++) {
        tpl_value v = l->items[i], r;
        if (blk.pc) { YIELD(blk, &v, 1, &r); v = r; }
        if (i == 0 && (v.type == TPL_T_INT || v.type == TPL_T_BIGINT) &&
            ((acc.type == TPL_T_STR && !(acc.flags & (TPL_F_SYMBOL | TPL_F_REGEX_RB | TPL_F_CLASS_RB | TPL_F_EXC_RB))) || is_array(acc))) {
            /* a String or Array init: Ruby's ary_sum adds the leading Integers first (yielding each, and the
             * item after them), then that sum + init: Integer#+'s TypeError ([1, 2].sum('a')) */
            for (uint32_t k = 1; k < l->len; k++) {
                tpl_value w = l->items[k];
                if (blk.pc) { YIELD(blk, &w, 1, &r); w = r; }
                if (w.type != TPL_T_INT && w.type != TPL_T_BIGINT) break;
            }
            return coerce_failed(vm, acc, "Integer");
        }
        if (!flt && acc.type == TPL_T_INT && v.type == TPL_T_INT) {
            int64_t r;
            if (!__builtin_add_overflow(acc.u.i, v.u.i, &r)) acc.u.i = r;
            else if (tpl_big_binop(vm, TPL_OP_ADD, acc, v, &acc) < 0) return -1;
            continue;
        }
        if (is_num(acc) && is_num(v)) {
            if (!flt) { flt = true; f = dbl(acc); c = 0.0; }
            double x = dbl(v);
            if (isnan(f)) {   /* NaN and the infinities outside the compensation, as Ruby's rb_ary_sum */
            } else if (isnan(x)) {
                f = x;
            } else if (isinf(x)) {
                f = isinf(f) && signbit(x) != signbit(f) ? NAN : x;
            } else if (!isinf(f)) {
                double t = f + x;
                if (fabs(f) >= fabs(x)) c += (f - t) + x;
                else c += (x - t) + f;
                f = t;
            }
            acc = tpl_v_float(f);
            continue;
        }
        if (flt) { acc = tpl_v_float(f + c); flt = false; }
        if ((acc.type == TPL_T_BIGINT || v.type == TPL_T_BIGINT) && plain_num(acc) && plain_num(v)) {
            if (acc.type == TPL_T_FLOAT || v.type == TPL_T_FLOAT) acc = tpl_v_float(dbl(acc) + dbl(v));
            else if (tpl_big_binop(vm, TPL_OP_ADD, acc, v, &acc) < 0) return -1;
            continue;
        }
        if ((tpl_is_rat(acc) || tpl_is_rat(v)) && rat_peer(acc) && rat_peer(v)) {   /* exact, a Float wins */
            if (rat_arith(vm, '+', acc, v, &acc) < 0) return -1;
            if (acc.type == TPL_T_FLOAT) { flt = true; f = acc.u.f; c = 0.0; }
            continue;
        }
        if (acc.type == TPL_T_NONE || acc.type == TPL_T_UNDEF || acc.type == TPL_T_BOOL || acc.type == TPL_T_MAP || is_range(acc) ||
            (acc.type == TPL_T_STR && (acc.flags & (TPL_F_SYMBOL | TPL_F_REGEX_RB | TPL_F_CLASS_RB | TPL_F_EXC_RB)))) {
            /* an init without + (nil, a Symbol, a Hash, ...): a number's sum meets it in Integer#+ or Float's
             * conversion (TypeError); other items call its + (NoMethodError) */
            if (!plain_num(v) && !tpl_is_rat(v)) return no_method(vm, acc, "+", 1);
            int il = 0;
            const char *is = acc.type == TPL_T_STR && (acc.flags & TPL_F_SYMBOL) ? inspect_short(vm, acc, &il) : conv_name(acc);
            if (!(acc.type == TPL_T_STR && (acc.flags & TPL_F_SYMBOL))) il = (int)strlen(is);
            return tpl_vm_error(vm, TPL_ERR_TYPE, "%.*s can't be coerced into %s (TypeError)", il, is, tpl_rb_class_name(v));
        }
        if (acc.type == TPL_T_STR && v.type == TPL_T_STR) {
            tpl_value args[2] = { acc, v };
            if (r_str_plus(vm, args, &acc) < 0) return -1;
            continue;
        }
        if (is_array(acc) && is_array(v)) {
            tpl_list *m = new_list(vm, acc.u.list->len + v.u.list->len);
            if (!m) return oom(vm);
            mcpy(m->items, acc.u.list->items, acc.u.list->len * sizeof *m->items);
            mcpy_items(m->items, acc.u.list->len, v.u.list->items, 0, v.u.list->len);
            m->len = acc.u.list->len + v.u.list->len;
            acc = tpl_v_list(m);
            continue;
        }
        return plain_num(acc) ? coerce_failed(vm, v, tpl_rb_class_name(acc)) : op_error(vm, "+", acc, v);   /* (String#+, Array#+: their TypeError) */
    }
    *out = flt ? tpl_v_float(f + c) : acc;
    return 0;
}

int r_arr_uniq(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    /* by hash and eql? (Ruby's rb_ary_uniq): linear, the first of each key kept */
    tpl_list *l = L_(a[0]);
    tpl_value *keys = l->items;
    bool broke = false;
    if (tpl_vm_block(vm).pc && block_values(vm, l, &keys, out, &broke) < 0) return -1;
    if (broke) return 0;
    tpl_list *r = new_list(vm, l->len);
    tpl_map *seen = rb_map(vm, l->len + 1);
    if (!r || !seen) return oom(vm);
    if (!tpl_fuel_charge(tpl_vm_arena(vm)->fuel, l->len)) return tpl_vm_nomem(vm);
    for (uint32_t i = 0; i < l->len; i++) {
        uint32_t before = seen->len;
        if (!tpl_map_set(A(vm), seen, keys[i], tpl_v_none())) return oom(vm);
        if (seen->len != before) r->items[r->len++] = l->items[i];
    }
    if (fuel_out(vm)) return tpl_vm_nomem(vm);
    *out = tpl_v_list(r);
    return 0;
}

int r_arr_reverse(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *l = L_(a[0]), *r = new_list(vm, l->len);
    if (!r) return oom(vm);
    for (uint32_t i = 0; i < l->len; i++) r->items[i] = l->items[l->len - 1 - i];
    r->len = l->len;
    *out = tpl_v_list(r);
    return 0;
}

int r_arr_compact(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *l = L_(a[0]), *r = new_list(vm, l->len);
    if (!r) return oom(vm);
    for (uint32_t i = 0; i < l->len; i++)
        if (l->items[i].type != TPL_T_NONE) r->items[r->len++] = l->items[i];
    *out = tpl_v_list(r);
    return 0;
}

/* The Arrays flatten_into is inside, innermost first (Ruby's flatten without a level refuses an Array inside itself). */
struct flat_path { const tpl_list *l; const struct flat_path *up; };

static int flatten_in(tpl_vm *vm, tpl_list *dst, tpl_list *src, int64_t depth, int guard, const struct flat_path *up)
{
    if (guard > 1000) {
        /* an Array inside itself (its cycle within 1000 levels): the deepest one is on the path above it already */
        for (const struct flat_path *p = depth < 0 ? up : NULL; p; p = p->up)
            if (p->l == src) return tpl_vm_error(vm, TPL_ERR_VALUE, "tried to flatten recursive array (ArgumentError)");
        return tpl_vm_error(vm, TPL_ERR_LIMIT, "flatten: arrays nested more than 1000 deep");
    }
    if (!tpl_fuel_charge(tpl_vm_arena(vm)->fuel, src->len)) return tpl_vm_nomem(vm);
    struct flat_path here = { src, up };
    for (uint32_t i = 0; i < src->len; i++) {
        tpl_value v = src->items[i];
        if (is_array(v) && depth != 0) { if (flatten_in(vm, dst, v.u.list, depth - 1, guard + 1, &here) < 0) return -1; }
        else if (!tpl_list_push(A(vm), dst, v)) return oom(vm);
    }
    return 0;
}

static int flatten_into(tpl_vm *vm, tpl_list *dst, tpl_list *src, int64_t depth, int guard)
{
    return flatten_in(vm, dst, src, depth, guard, NULL);
}

int r_arr_flatten(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *r = new_list(vm, L_(a[0])->len);
    if (!r) return oom(vm);
    if (tpl_given(a[1]) && a[1].type != TPL_T_NONE && long_arg(vm, &a[1]) < 0) return -1;   /* (NUM2INT; nil: all levels) */
    int64_t depth = tpl_given(a[1]) && a[1].type == TPL_T_INT ? a[1].u.i : -1;
    if (flatten_into(vm, r, L_(a[0]), depth, 0) < 0) return -1;
    *out = tpl_v_list(r);
    return 0;
}

/* Hash#flatten(depth = 1): its [key, value] pairs flattened depth levels (rb_hash_flatten: 0 the pairs themselves,
 * a negative depth every level; the depth as NUM2INT reads it, nil a TypeError). */
int r_hash_flatten(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    int64_t depth = 1;
    if (tpl_given(a[1])) {
        if (long_arg(vm, &a[1]) < 0) return -1;
        depth = a[1].u.i;
    }
    tpl_list *pairs;
    if (enum_items(vm, a[0], &pairs, "flatten") < 0) return -1;
    if (depth == 0) { *out = tpl_v_list(pairs); return 0; }
    tpl_list *r = new_list(vm, pairs->len * 2 + 1);
    if (!r) return oom(vm);
    if (flatten_into(vm, r, pairs, depth, 0) < 0) return -1;
    *out = tpl_v_list(r);
    return 0;
}

int r_arr_map(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *l = L_(a[0]);
    if (!tpl_vm_block(vm).pc) { *out = tpl_v_list(l); return 0; }   /* the enumerator, as its items */
    tpl_value *keys;
    bool broke;
    if (block_values(vm, l, &keys, out, &broke) < 0) return -1;
    if (broke) return 0;
    tpl_list *r = new_list(vm, l->len);
    if (!r) return oom(vm);
    mcpy(r->items, keys, l->len * sizeof *keys);
    r->len = l->len;
    *out = tpl_v_list(r);
    return 0;
}

int r_arr_flat_map(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *l = L_(a[0]);
    tpl_value *keys;
    bool broke;
    if (block_values(vm, l, &keys, out, &broke) < 0) return -1;
    if (broke) return 0;
    tpl_list *r = new_list(vm, l->len);
    if (!r) return oom(vm);
    for (uint32_t i = 0; i < l->len; i++) {
        if (is_array(keys[i])) { if (flatten_into(vm, r, keys[i].u.list, 0, 0) < 0) return -1; }
        else if (!tpl_list_push(A(vm), r, keys[i])) return oom(vm);
    }
    *out = tpl_v_list(r);
    return 0;
}

static int filter_impl(tpl_vm *vm, tpl_value *a, tpl_value *out, bool keep)
{
    tpl_list *l = L_(a[0]);
    tpl_value *keys;
    bool broke;
    if (block_values(vm, l, &keys, out, &broke) < 0) return -1;
    if (broke) return 0;
    tpl_list *r = new_list(vm, l->len);
    if (!r) return oom(vm);
    for (uint32_t i = 0; i < l->len; i++)
        if (tpl_truthy_rb(keys[i]) == keep) r->items[r->len++] = l->items[i];
    *out = tpl_v_list(r);
    return 0;
}

int r_arr_select(tpl_vm *vm, tpl_value *a, tpl_value *out) { return filter_impl(vm, a, out, true); }
int r_arr_reject(tpl_vm *vm, tpl_value *a, tpl_value *out) { return filter_impl(vm, a, out, false); }

int r_arr_find(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *l = L_(a[0]);
    tpl_rb_block blk = tpl_vm_block(vm);
    /* (without a block Ruby answers an Enumerator, also for an empty receiver: `(4..1).detect(-1)`) */
    if (!blk.pc) return tpl_vm_error(vm, TPL_ERR_SYNTAX, "unsupported Ruby construct: find/detect without a block (Ruby answers an Enumerator)");
    tpl_value r;
    for (uint32_t i = 0; i < l->len; i++) {
        YIELD(blk, &l->items[i], 1, &r);
        if (tpl_truthy_rb(r)) { *out = l->items[i]; return 0; }
    }
    /* find(ifnone): none found, ifnone.call's value (Ruby's NoMethodError for what has no call) */
    if (tpl_given(a[1]) && a[1].type != TPL_T_NONE && blk.pc) {
        tpl_rb_block save = tpl_vm_set_block(vm, (tpl_rb_block){ 0, 0, 0 });
        int rc = tpl_rb_send(vm, a[1], "call", 4, NULL, 0, NULL, NULL, 0, out);
        tpl_vm_set_block(vm, save);
        return rc;
    }
    *out = tpl_v_none();
    return 0;
}

int r_arr_each(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *l = L_(a[0]);
    tpl_rb_block blk = tpl_vm_block(vm);
    if (!blk.pc) { *out = tpl_v_list(l); return 0; }   /* the enumerator, as its items */
    tpl_value r;
    for (uint32_t i = 0; i < l->len; i++) YIELD(blk, &l->items[i], 1, &r);
    *out = a[0];
    return 0;
}

int r_arr_each_with_index(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *l = L_(a[0]);
    tpl_rb_block blk = tpl_vm_block(vm);
    if (!blk.pc) {   /* the enumerator, as its [item, index] pairs */
        tpl_list *r = NULL;
        if (tpl_rb_each_list(vm, a[0], TPL_RB_EACH_WITH_INDEX, &r) < 0) return -1;
        *out = tpl_v_list(r);
        return 0;
    }
    tpl_value r;
    for (uint32_t i = 0; i < l->len; i++) {
        tpl_value args[2] = { l->items[i], tpl_v_int(i) };
        YIELD(blk, args, 2, &r);
    }
    *out = a[0];
    return 0;
}

/* acc.send(op, x) for inject(:op): Ruby's arithmetic on numbers, + on strings and arrays, else the
 * method of that name. */
static int send_op(tpl_vm *vm, tpl_value op, tpl_value acc, tpl_value x, tpl_value *out)
{
    bool ints = acc.type == TPL_T_INT && x.type == TPL_T_INT, nums = is_num(acc) && is_num(x);
    if (op.len == 1 && nums && strchr("+-*", op.u.s[0])) {
        int64_t r;
        if (ints) {
            bool ovf = op.u.s[0] == '+' ? __builtin_add_overflow(acc.u.i, x.u.i, &r)
                     : op.u.s[0] == '-' ? __builtin_sub_overflow(acc.u.i, x.u.i, &r) : __builtin_mul_overflow(acc.u.i, x.u.i, &r);
            if (ovf) return tpl_big_binop(vm, op.u.s[0] == '+' ? TPL_OP_ADD : op.u.s[0] == '-' ? TPL_OP_SUB : TPL_OP_MUL,
                                          acc, x, out);
            *out = tpl_v_int(r);
            return 0;
        }
        double p = dbl(acc), q = dbl(x);
        *out = tpl_v_float(op.u.s[0] == '+' ? p + q : op.u.s[0] == '-' ? p - q : p * q);
        return 0;
    }
    if (op.len == 1 && op.u.s[0] == '+' && acc.type == TPL_T_STR && x.type == TPL_T_STR) return tpl_vm_concat(vm, acc, x, out);
    if (op.len == 1 && op.u.s[0] == '+' && is_array(acc) && is_array(x))
        return tpl_vm_concat_list(vm, acc.u.list, x.u.list->items, x.u.list->len, out);
    if (op.len == 1 && strchr("+-*/%", op.u.s[0])) {
        int h = tpl_rb_arith(vm, op.u.s[0], acc, x, out);
        if (h != 0) return h < 0 ? -1 : 0;
        if (ints && x.u.i == 0) return tpl_vm_fail(vm, TPL_EK_ZERO_DIVISION, "divided by 0 (ZeroDivisionError)");
        if (ints && x.u.i == -1 && acc.u.i == INT64_MIN) { /* the C division traps (SIGFPE) */
            if (op.u.s[0] == '%') { *out = tpl_v_int(0); return 0; }
            return tpl_big_binop(vm, TPL_OP_FLOORDIV, acc, x, out);
        }
        if (ints && op.u.s[0] == '/') {
            int64_t qq = acc.u.i / x.u.i;
            if ((acc.u.i % x.u.i != 0) && ((acc.u.i < 0) != (x.u.i < 0))) qq--;
            *out = tpl_v_int(qq);
            return 0;
        }
        if (ints) {
            int64_t m = acc.u.i % x.u.i;
            if (m != 0 && ((m < 0) != (x.u.i < 0))) m += x.u.i;
            *out = tpl_v_int(m);
            return 0;
        }
        if (nums && op.u.s[0] == '/') { *out = tpl_v_float(dbl(acc) / dbl(x)); return 0; }
        if (!(acc.type == TPL_T_BIGINT || (acc.type == TPL_T_INT && x.type == TPL_T_BIGINT)))
            return no_method(vm, acc, op.u.s, op.len);
    }
    tpl_value arg = x;
    return tpl_rb_send(vm, acc, op.u.s, op.len, &arg, 1, NULL, NULL, 0, out);
}

int r_arr_inject(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *l = L_(a[0]);
    tpl_rb_block blk = tpl_vm_block(vm);
    if (!blk.pc || tpl_given(a[2])) {
        /* inject(:+) / inject(init, :+) (with two arguments the block is not used) */
        tpl_value op = tpl_given(a[2]) ? a[2] : a[1];
        if (!tpl_given(op)) {   /* (Ruby yields from the second item on: [] nil, [x] x, more LocalJumpError) */
            if (l->len <= 1) { *out = l->len ? l->items[0] : tpl_v_none(); return 0; }
            return tpl_vm_error(vm, TPL_ERR_TYPE, "no block given (LocalJumpError)");
        }
        if (op.type != TPL_T_STR || (op.flags & (TPL_F_REGEX_RB | TPL_F_CLASS_RB | TPL_F_EXC_RB))) {   /* (rb_check_id, before any item) */
            int il;
            const char *is = inspect_short(vm, op, &il);
            return tpl_vm_error(vm, TPL_ERR_TYPE, "%.*s is not a symbol nor a string (TypeError)", il, is);
        }
        uint32_t k = 0;
        tpl_value acc;
        if (tpl_given(a[2])) acc = a[1];
        else if (l->len) acc = l->items[k++];
        else { *out = tpl_v_none(); return 0; }
        for (; k < l->len; k++)
            if (send_op(vm, op, acc, l->items[k], &acc) < 0) return -1;
        *out = acc;
        return 0;
    }
    uint32_t i = 0;
    tpl_value acc;
    if (tpl_given(a[1])) acc = a[1];
    else if (l->len) acc = l->items[i++];
    else { *out = tpl_v_none(); return 0; }
    for (; i < l->len; i++) {
        tpl_value args[2] = { acc, l->items[i] };
        YIELD(blk, args, 2, &acc);
    }
    *out = acc;
    return 0;
}

/* push / << / append: a new array (the lowering stores it back into the variable). */

int r_arr_take(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (long_arg(vm, &a[1]) < 0) return -1;
    if (a[1].u.i < 0) return tpl_vm_error(vm, TPL_ERR_TYPE, "attempt to take negative size (ArgumentError)");
    return r_arr_first(vm, a, out);
}

int r_arr_drop(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *l = L_(a[0]);
    if (long_arg(vm, &a[1]) < 0) return -1;   /* (NUM2LONG: 1.5 drops 1, "a" is a TypeError) */
    if (a[1].u.i < 0) return tpl_vm_error(vm, TPL_ERR_TYPE, "attempt to drop negative size (ArgumentError)");
    uint32_t k = a[1].u.i > l->len ? l->len : (uint32_t)a[1].u.i;
    tpl_list *r = new_list(vm, l->len - k);
    if (!r) return oom(vm);
    mcpy_items(r->items, 0, l->items, k, l->len - k);
    r->len = l->len - k;
    *out = tpl_v_list(r);
    return 0;
}

/* Enumerable#zip's check of an argument (Array#zip's too, unless its receiver is empty): what responds to each. */
static int zip_eachable(tpl_vm *vm, const tpl_value *v, int n)
{
    for (int k = 0; k < n; k++) {
        tpl_value o = v[k];
        if (!(o.type == TPL_T_LIST || o.type == TPL_T_MAP))
            return tpl_vm_error(vm, TPL_ERR_TYPE, "wrong argument type %s (must respond to :each) (TypeError)", tpl_rb_class_name(o));
    }
    return 0;
}

int r_arr_zip(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *l = L_(a[0]), *others = L_(a[1]);
    /* every argument first: an Array, or what responds to each (a Hash's pairs, a Range's items), else Ruby's
     * TypeError; an empty Array reads none of them (Ruby 3.1's [].zip(10) is []: Enumerable#zip of an empty
     * Hash or Range checks them, rb_send_impl) */
    if (l->len == 0) {
        tpl_list *r = new_list(vm, 0);
        if (!r) return oom(vm);
        *out = tpl_v_list(r);
        return 0;
    }
    for (uint32_t k = 0; k < others->len; k++) {
        tpl_value o = others->items[k];
        if (is_array(o)) continue;
        if (o.type == TPL_T_MAP || (is_range(o) && o.u.list->items[1].type != TPL_T_NONE)) {
            tpl_list *items;
            if (enum_items(vm, o, &items, "each") < 0) return -1;
            others->items[k] = tpl_v_list(items);
            continue;
        }
        if (is_range(o) && (o.u.list->items[0].type == TPL_T_INT || o.u.list->items[0].type == TPL_T_BIGINT)) {
            /* an endless Range of Integers: its first len items */
            tpl_list *items = new_list(vm, l->len);
            if (!items) return oom(vm);
            tpl_value x = o.u.list->items[0];
            for (uint32_t i = 0; i < l->len; i++) {
                items->items[items->len++] = x;
                if (x.type == TPL_T_INT && x.u.i < INT64_MAX) x = tpl_v_int(x.u.i + 1);
                else if (tpl_big_binop(vm, TPL_OP_ADD, x, tpl_v_int(1), &x) < 0) return -1;
            }
            others->items[k] = tpl_v_list(items);
            continue;
        }
        if (is_range(o) && o.u.list->items[0].type == TPL_T_FLOAT)
            return tpl_vm_error(vm, TPL_ERR_TYPE, "can't iterate from Float (TypeError)");
        if (is_range(o) || tpl_is_enum_rb(o))
            return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: zip with an endless Range or an Enumerator");
        return tpl_vm_error(vm, TPL_ERR_TYPE, "wrong argument type %s (must respond to :each) (TypeError)", tpl_rb_class_name(o));
    }
    tpl_list *r = new_list(vm, l->len);
    if (!r) return oom(vm);
    for (uint32_t i = 0; i < l->len; i++) {
        tpl_list *t = new_list(vm, others->len + 1);
        if (!t) return oom(vm);
        t->items[t->len++] = l->items[i];
        for (uint32_t k = 0; k < others->len; k++) {
            tpl_value o = others->items[k];
            if (!is_array(o)) return type_error(vm, TPL_VT_LIST, o);
            t->items[t->len++] = i < o.u.list->len ? o.u.list->items[i] : tpl_v_none();
        }
        r->items[r->len++] = tpl_v_list(t);
    }
    *out = tpl_v_list(r);
    return 0;
}

int r_arr_idx(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *l = L_(a[0]);
    tpl_value k = a[1];
    int64_t len = l->len, b, n;
    if ((k.type == TPL_T_FLOAT || tpl_is_rat(k)) && long_arg(vm, &k) < 0) return -1;   /* a[1.5]: to_int, as Ruby's NUM2LONG */
    if (tpl_given(a[2]) && (a[2].type == TPL_T_FLOAT || tpl_is_rat(a[2])) && long_arg(vm, &a[2]) < 0) return -1;
    if (is_range(k)) {
        if (!range_span(k, len, &b, &n)) { *out = tpl_v_none(); return 0; }
    } else if (k.type == TPL_T_INT) {
        if (!tpl_given(a[2])) {
            int64_t i = k.u.i < 0 ? k.u.i + len : k.u.i;
            *out = i >= 0 && i < len ? l->items[i] : tpl_v_none();
            return 0;
        }
        if (a[2].type != TPL_T_INT) return type_error(vm, TPL_VT_INT, a[2]);
        if (!span(len, k.u.i, a[2].u.i, &b, &n)) { *out = tpl_v_none(); return 0; }
    } else {
        return type_error(vm, TPL_VT_INT, k);
    }
    tpl_list *r = new_list(vm, (uint32_t)n);
    if (!r) return oom(vm);
    mcpy_items(r->items, 0, l->items, (size_t)b, (size_t)n);
    r->len = (uint32_t)n;
    *out = tpl_v_list(r);
    return 0;
}

static int dig_impl(tpl_vm *vm, tpl_value v, tpl_list *keys, tpl_value *out)
{
    if (keys->len == 0) return tpl_vm_error(vm, TPL_ERR_VALUE, "wrong number of arguments (given 0, expected 1+) (ArgumentError)");
    for (uint32_t i = 0; i < keys->len; i++) {
        if (v.type == TPL_T_NONE) break;
        if (v.type != TPL_T_MAP && !is_array(v))
            return tpl_vm_error(vm, TPL_ERR_TYPE, "%s does not have #dig method (TypeError)", tpl_rb_class_name(v));
        tpl_value k = keys->items[i];
        /* an Array's dig is rb_ary_at: NUM2LONG of the key (a Float or Rational truncated; a Range is a TypeError,
         * not a slice) */
        if (is_array(v) && long_arg(vm, &k) < 0) return -1;
        if (tpl_rb_getitem(vm, v, k, &v) < 0) return -1;
    }
    *out = v;
    return 0;
}

int r_arr_dig(tpl_vm *vm, tpl_value *a, tpl_value *out) { return dig_impl(vm, a[0], L_(a[1]), out); }

int r_arr_fetch(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *l = L_(a[0]);
    if (long_arg(vm, &a[1]) < 0) return -1;
    int64_t i = a[1].u.i < 0 ? a[1].u.i + l->len : a[1].u.i;
    if (i >= 0 && i < (int64_t)l->len) { *out = l->items[i]; return 0; }
    tpl_rb_block blk = tpl_vm_block(vm);
    if (blk.pc) { tpl_value r; YIELD(blk, &a[1], 1, &r); *out = r; return 0; }
    if (tpl_given(a[2])) { *out = a[2]; return 0; }
    return tpl_vm_error(vm, TPL_ERR_TYPE, "index %lld outside of array bounds: %lld...%lld (IndexError)", (long long)a[1].u.i,
                        -(long long)l->len, (long long)l->len);
}

int r_arr_to_a(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    (void)vm;
    *out = a[0]; /* the same array (a tuple of arguments as an Array) */
    out->flags = a[0].flags & (TPL_F_MUT_RB | TPL_F_FROZEN_CT_RB);
    return 0;
}

int r_arr_to_h(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *l = L_(a[0]);
    if (tpl_vm_block(vm).pc) {
        tpl_value *pairs;
        bool broke;
        if (block_values(vm, l, &pairs, out, &broke) < 0) return -1;
        if (broke) return 0;
        tpl_list *pl = new_list(vm, l->len);
        if (!pl) return oom(vm);
        mcpy(pl->items, pairs, l->len * sizeof *pairs);
        pl->len = l->len;
        l = pl;
    }
    tpl_map *m = rb_map(vm, l->len);
    if (!m) return oom(vm);
    for (uint32_t i = 0; i < l->len; i++) {
        tpl_value p = l->items[i];
        if (!is_array(p)) return tpl_vm_error(vm, TPL_ERR_TYPE, "wrong element type %s at %u (expected array) (TypeError)", tpl_rb_class_name(p), i);
        if (p.u.list->len != 2)
            return tpl_vm_error(vm, TPL_ERR_TYPE, "wrong array length at %u (expected 2, was %u) (ArgumentError)", i, p.u.list->len);
        if (!tpl_map_set(A(vm), m, p.u.list->items[0], p.u.list->items[1])) return oom(vm);
    }
    *out = tpl_v_map(m);
    return 0;
}

int r_arr_group_by(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *l = L_(a[0]);
    tpl_value *keys;
    bool broke;
    if (block_values(vm, l, &keys, out, &broke) < 0) return -1;
    if (broke) return 0;
    tpl_map *m = rb_map(vm, 4);
    if (!m) return oom(vm);
    for (uint32_t i = 0; i < l->len; i++) {
        tpl_value *g = tpl_map_get(m, keys[i]);
        if (!g) {
            if (!tpl_map_set(A(vm), m, keys[i], tpl_v_list(new_list(vm, 2)))) return oom(vm);
            g = tpl_map_get(m, keys[i]);
        }
        if (!g || !g->u.list || !tpl_list_push(A(vm), g->u.list, l->items[i])) return oom(vm);
    }
    *out = tpl_v_map(m);
    return 0;
}

/* ------------------------------------------------------------------ Hash */

static tpl_map *M_(tpl_value v) { return v.u.map; }

int r_hash_keys(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_map *m = M_(a[0]);
    tpl_list *l = new_list(vm, m->len);
    if (!l) return oom(vm);
    for (uint32_t i = 0; i < m->len; i++) l->items[l->len++] = m->e[i].key;
    *out = tpl_v_list(l);
    return 0;
}

int r_hash_values(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_map *m = M_(a[0]);
    tpl_list *l = new_list(vm, m->len);
    if (!l) return oom(vm);
    for (uint32_t i = 0; i < m->len; i++) l->items[l->len++] = m->e[i].val;
    *out = tpl_v_list(l);
    return 0;
}

int r_hash_size(tpl_vm *vm, tpl_value *a, tpl_value *out) { (void)vm; *out = tpl_v_int(M_(a[0])->len); return 0; }
int r_hash_empty_p(tpl_vm *vm, tpl_value *a, tpl_value *out) { (void)vm; *out = tpl_v_bool(M_(a[0])->len == 0); return 0; }
int r_hash_key_p(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    (void)vm;
    *out = tpl_v_bool(tpl_map_get(M_(a[0]), state_key(M_(a[0]), a[1])) != NULL);
    return 0;
}

/* m's entry of key as Ruby's Hash methods other than [], key?, fetch and dig find it: a Symbol finds only a
 * Symbol key, also in the state's Hashes (which tpl_map_get reads :k as "k" in). */
static tpl_value *rb_map_get(const tpl_map *m, tpl_value key)
{
    if (!m->eql && key.type == TPL_T_STR && (key.flags & TPL_F_SYMBOL))
        return tpl_map_probe_rb(m, key.u.s, key.len, tpl_hash_str(key.u.s, key.len), TPL_F_SYMBOL);
    return tpl_map_get(m, key);
}

/* has_key?, include?, member?: Hash's own (the reference's StateHash converts a Symbol for key? alone) */
int r_hash_has_key_p(tpl_vm *vm, tpl_value *a, tpl_value *out) { (void)vm; *out = tpl_v_bool(rb_map_get(M_(a[0]), a[1]) != NULL); return 0; }

int r_hash_value_p(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_map *m = M_(a[0]);
    for (uint32_t i = 0; i < m->len; i++) {
        bool eq = false;
        if (tpl_vm_rb_equal(vm, m->e[i].val, a[1], &eq) < 0) return -1;
        if (eq) { *out = tpl_v_bool(true); return 0; }
    }
    *out = tpl_v_bool(false);
    return 0;
}

int r_hash_idx(tpl_vm *vm, tpl_value *a, tpl_value *out) { return tpl_rb_getitem(vm, a[0], a[1], out); }

/* Hash#fetch's KeyError, with did_you_mean's KeyErrorChecker suggestions: the keys whose to_s is the
 * String or Symbol key's text (the oracle's Symbol#== equals a Symbol and a String), else
 * SpellChecker#correct of the key over the keys' to_s; each printed with inspect. */
static int key_not_found(tpl_vm *vm, const tpl_map *m, tpl_value key)
{
    tpl_arena_mark mk;
    if (!tpl_arena_mark_take(A(vm), &mk)) return oom(vm);
    tpl_sb b, ks;
    tpl_sb_init(&b, A(vm));
    tpl_rb_inspect(&b, key);
    tpl_sb_init(&ks, A(vm));
    tpl_rb_to_s(&ks, key);
    dym_word *w = tpl_arena_alloc(A(vm), (m->len + 1) * sizeof *w);
    if (!b.p || ks.failed || !w) return oom(vm);
    size_t nw = 0;
    for (uint32_t i = 0; i < m->len; i++) {
        tpl_sb t, in;
        tpl_sb_init(&t, A(vm));
        tpl_rb_to_s(&t, m->e[i].key);
        tpl_sb_init(&in, A(vm));
        tpl_rb_inspect(&in, m->e[i].key);
        if (t.failed || in.failed || !in.p) return oom(vm);
        w[nw++] = (dym_word){ .s = t.p ? t.p : "", .n = t.len, .show = in.p, .nshow = in.len };
    }
    char sugg[320];
    int k = 0;
    sugg[0] = 0;
    if (key.type == TPL_T_STR && !(key.flags & (TPL_F_REGEX_RB | TPL_F_CLASS_RB | TPL_F_EXC_RB))) {   /* exact_matches */
        size_t o = 0;
        for (size_t i = 0; i < nw && k >= 0; i++) {
            if (w[i].n != key.len || memcmp(w[i].s, key.u.s, key.len) != 0) continue;
            const char *lead = o ? "\n               " : "\nDid you mean?  ";
            size_t ln = strlen(lead);
            if (o + ln + w[i].nshow >= sizeof sugg) { k = -2; break; }
            memcpy(sugg + o, lead, ln);
            memcpy(sugg + o + ln, w[i].show, w[i].nshow);
            o += ln + w[i].nshow;
            sugg[o] = 0;
        }
    }
    if (k == 0 && !sugg[0]) k = dym_suggest(A(vm), sugg, sizeof sugg, ks.p ? ks.p : "", ks.len, w, nw);
    int r = k == -1 ? oom(vm)
          : k == -2 ? tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: a KeyError whose did_you_mean suggestions "
                                   "tpl does not write")
          : tpl_vm_error(vm, TPL_ERR_TYPE, "key not found: %.*s (KeyError)%s", (int)b.len, b.p, sugg);
    tpl_arena_rewind(A(vm), &mk);
    return r;
}

int r_hash_fetch(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    a[1] = state_key(M_(a[0]), a[1]);   /* (a state Hash's fetch(:k) is fetch("k"): its block and KeyError see "k") */
    tpl_value *hit = tpl_map_get(M_(a[0]), a[1]);
    if (hit) { *out = *hit; return 0; }
    tpl_rb_block blk = tpl_vm_block(vm);
    if (blk.pc) { tpl_value r; YIELD(blk, &a[1], 1, &r); *out = r; return 0; }
    if (tpl_given(a[2])) { *out = a[2]; return 0; }
    return key_not_found(vm, M_(a[0]), a[1]);
}

int r_hash_dig(tpl_vm *vm, tpl_value *a, tpl_value *out) { return dig_impl(vm, a[0], L_(a[1]), out); }

int r_hash_each(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_map *m = M_(a[0]);
    tpl_rb_block blk = tpl_vm_block(vm);
    if (!blk.pc) {   /* the enumerator, as its [key, value] pairs */
        tpl_list *r;
        if (enum_items(vm, a[0], &r, "each") < 0) return -1;
        *out = tpl_v_list(r);
        return 0;
    }
    tpl_value r;
    for (uint32_t i = 0; i < m->len; i++) {
        tpl_list *p = new_list(vm, 2);
        if (!p) return oom(vm);
        p->items[0] = m->e[i].key;
        p->items[1] = m->e[i].val;
        p->len = 2;
        tpl_value pv = tpl_v_list(p);
        YIELD(blk, &pv, 1, &r);
    }
    *out = a[0];
    return 0;
}

static int hash_filter(tpl_vm *vm, tpl_value *a, tpl_value *out, bool keep)
{
    tpl_map *m = M_(a[0]), *r = rb_map(vm, m->len);
    if (!r) return oom(vm);
    tpl_rb_block blk = tpl_vm_block(vm);
    for (uint32_t i = 0; i < m->len; i++) {
        tpl_value args[2] = { m->e[i].key, m->e[i].val }, v;
        YIELD(blk, args, 2, &v);
        if (tpl_truthy_rb(v) == keep && !tpl_map_set(A(vm), r, m->e[i].key, m->e[i].val)) return oom(vm);
    }
    *out = tpl_v_map(r);
    return 0;
}

int r_hash_select(tpl_vm *vm, tpl_value *a, tpl_value *out) { return hash_filter(vm, a, out, true); }
int r_hash_reject(tpl_vm *vm, tpl_value *a, tpl_value *out) { return hash_filter(vm, a, out, false); }

int r_hash_merge(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_map *m = M_(a[0]);
    if (a[1].type != TPL_T_MAP) return type_error(vm, TPL_VT_DICT, a[1]);
    tpl_map *o = a[1].u.map, *r = rb_map(vm, m->len + o->len);
    if (!r) return oom(vm);
    r->rb_default = m->rb_default;
    r->rb_state = !m->eql || m->rb_state;   /* (merge is dup + update: the receiver's class) */
    for (uint32_t i = 0; i < m->len; i++) if (!tpl_map_set(A(vm), r, m->e[i].key, m->e[i].val)) return oom(vm);
    for (uint32_t i = 0; i < o->len; i++) if (!tpl_map_set(A(vm), r, o->e[i].key, o->e[i].val)) return oom(vm);
    *out = tpl_v_map(r);
    return 0;
}

int r_hash_to_h(tpl_vm *vm, tpl_value *a, tpl_value *out) { (void)vm; *out = a[0]; return 0; }

/* ------------------------------------------------------------------ Range */

/* range.c's r_less: a <=> b, INT_MAX when they do not compare (nil <=> nil is 0). */
static int r_less(tpl_value a, tpl_value b)
{
    if (a.type == TPL_T_NONE && b.type == TPL_T_NONE) return 0;
    if (a.type == TPL_T_NONE || b.type == TPL_T_NONE) return INT_MAX;
    bool ok;
    int c = rb_cmp(a, b, &ok, NULL);
    return ok ? c : INT_MAX;
}

/* Range#cover?(range), as range.c's r_cover_range_p: val's bounds inside r's (val's max when only
 * r's end is inclusive: nil where Range#max raises TypeError or answers nil). */
static bool range_cover_range(tpl_value r, tpl_value val)
{
    tpl_value end = r.u.list->items[1], vb = val.u.list->items[0], ve = val.u.list->items[1];
    bool rx = r.u.list->items[2].u.i != 0, vx = val.u.list->items[2].u.i != 0;
    if (end.type != TPL_T_NONE && ve.type == TPL_T_NONE) return false;
    if (r.u.list->items[0].type != TPL_T_NONE && vb.type == TPL_T_NONE) return false;
    if (vb.type != TPL_T_NONE && ve.type != TPL_T_NONE && r_less(vb, ve) > (vx ? -1 : 0)) return false;
    if (vb.type != TPL_T_NONE && !range_cover(r, vb)) return false;
    int c = r_less(end, ve);
    if (rx == vx) return c >= 0;
    if (rx) return c > 0;
    if (c >= 0) return true;
    /* val is exclusive, r inclusive: val.max (an Integer end less one; else TypeError: false) */
    if (ve.type != TPL_T_INT || vb.type != TPL_T_INT) return false;
    if (vb.u.i > ve.u.i - 1) return false;
    return r_less(end, tpl_v_int(ve.u.i - 1)) >= 0;
}

int r_range_cover_p(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    (void)vm;
    *out = tpl_v_bool(is_range(a[1]) ? range_cover_range(a[0], a[1]) : range_cover(a[0], a[1]));
    return 0;
}

int r_range_begin(tpl_vm *vm, tpl_value *a, tpl_value *out) { (void)vm; *out = a[0].u.list->items[0]; return 0; }

int r_range_first(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (a[0].u.list->items[0].type == TPL_T_NONE)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "cannot get the first element of beginless range (RangeError)");
    if (!tpl_given(a[1])) { *out = a[0].u.list->items[0]; return 0; }
    tpl_value b = a[0].u.list->items[0], e = a[0].u.list->items[1];
    tpl_list *l;
    if (e.type == TPL_T_NONE && b.type == TPL_T_INT && a[1].type == TPL_T_INT) {
        /* the first n of an endless range */
        if (a[1].u.i < 0) return tpl_vm_error(vm, TPL_ERR_TYPE, "negative array size (or size too big) (ArgumentError)");
        if (a[1].u.i > 10000000 || b.u.i > INT64_MAX - a[1].u.i) return tpl_vm_error(vm, TPL_ERR_LIMIT, "range too large");
        if (!(l = new_list(vm, (uint32_t)a[1].u.i))) return oom(vm);
        for (int64_t i = 0; i < a[1].u.i; i++) l->items[l->len++] = tpl_v_int(b.u.i + i);
        *out = tpl_v_list(l);
        return 0;
    }
    if (a[1].type == TPL_T_INT || a[1].type == TPL_T_FLOAT) {   /* (range_first: rb_ary_new2(NUM2LONG(n)) first) */
        tpl_value k = a[1];
        if (long_arg(vm, &k) < 0) return -1;
        if (k.u.i < 0) return tpl_vm_error(vm, TPL_ERR_TYPE, "negative array size (or size too big) (ArgumentError)");
        if (ary_capa(vm, k.u.i) < 0) return -1;
    }
    if (range_list(vm, a[0], &l) < 0) return -1;
    tpl_value args[2] = { tpl_v_list(l), a[1] };
    return r_arr_first(vm, args, out);
}

int r_range_last(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (a[0].u.list->items[1].type == TPL_T_NONE)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "cannot get the last element of endless range (RangeError)");
    if (!tpl_given(a[1])) { *out = a[0].u.list->items[1]; return 0; }   /* the end, even of a ... range */
    tpl_value rb = a[0].u.list->items[0], re = a[0].u.list->items[1];
    if (rb.type == TPL_T_INT && re.type == TPL_T_INT && (__int128)re.u.i - rb.u.i <= 0) {
        /* rb_int_range_last: end - begin of 0 or less is [] before the count is read ((1..1).last(1) is [] in 3.1) */
        tpl_list *e = new_list(vm, 0);
        if (!e) return oom(vm);
        *out = tpl_v_list(e);
        out->flags = TPL_F_MUT_RB;
        return 0;
    }
    tpl_list *l;
    if (range_list(vm, a[0], &l) < 0) return -1;
    tpl_value args[2] = { tpl_v_list(l), a[1] };
    return r_arr_last(vm, args, out);
}

static int yield_each(tpl_vm *vm, tpl_list *l, tpl_value self, tpl_value *out);

/* Ruby's ruby_float_step_size: how many steps of unit a float range from beg to end takes, with the
 * rounding error of (end - beg) / unit forgiven ((0.1..0.5).step(0.1) has 5 items). */
static double float_step_size(double beg, double end, double unit, bool excl)
{
    if (isinf(unit)) return unit > 0 ? beg <= end : beg >= end;
    double n = (end - beg) / unit, err = (fabs(beg) + fabs(end) + fabs(end - beg)) / fabs(unit) * DBL_EPSILON;
    if (err > 0.5) err = 0.5;
    if (excl) {
        if (n <= 0) return 0;
        n = n < 1 ? 0 : floor(n - err);
        double d = (n + 1) * unit + beg;
        if (beg < end ? d < end : beg > end && d > end) n++;
    } else {
        if (n < 0) return 0;
        n = floor(n + err);
    }
    return n + 1;
}

int r_range_step(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value rb = a[0].u.list->items[0], re = a[0].u.list->items[1];
    bool fl = a[1].type == TPL_T_FLOAT || rb.type == TPL_T_FLOAT || re.type == TPL_T_FLOAT;
    if (fl && is_num(a[1]) && is_num(rb) && is_num(re)) {   /* a float step: Ruby's ruby_float_step */
        double beg = dbl(rb), end = dbl(re), unit = dbl(a[1]);
        if (unit == 0) return tpl_vm_error(vm, TPL_ERR_TYPE, "step can't be 0 (ArgumentError)");
        if (unit < 0 && tpl_vm_block(vm).pc) return tpl_vm_error(vm, TPL_ERR_TYPE, "step can't be negative (ArgumentError)");
        if (unit < 0 && end <= beg)   /* (blockless, an ArithmeticSequence going down: not tpl's) */
            return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: a negative Float step over a Range");
        /* (a negative step from below its end yields nothing) */
        double n = unit < 0 ? 0 : float_step_size(beg, end, unit, a[0].u.list->items[2].u.i != 0);
        if (!(n <= 10000000)) return tpl_vm_error(vm, TPL_ERR_LIMIT, "step: too many iterations");
        tpl_list *fr = new_list(vm, (uint32_t)n + 1);
        if (!fr) return oom(vm);
        for (int64_t i = 0; i < (int64_t)n; i++) {
            double d = (double)i * unit + beg;
            if (unit >= 0 ? end < d : d < end) d = end;
            fr->items[fr->len++] = tpl_v_float(d);
        }
        return yield_each(vm, fr, a[0], out);
    }
    bool numeric = is_num(rb) || rb.type == TPL_T_BIGINT, blockless = !tpl_vm_block(vm).pc;
    if (numeric && a[1].type == TPL_T_BIGINT && a[1].u.s[0] != '-') a[1] = tpl_v_int(INT64_MAX);   /* (one item: the begin) */
    if (long_arg(vm, &a[1]) < 0) return -1;
    if (a[1].u.i < 0 && numeric && blockless) {
        /* an ArithmeticSequence going down: begin, begin + step, ... while not below the end */
        if (rb.type != TPL_T_INT || re.type != TPL_T_INT)
            return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: a negative step over a Range of other than Integers");
        bool excl = a[0].u.list->items[2].u.i != 0;
        tpl_list *d = new_list(vm, 4);
        if (!d) return oom(vm);
        for (int64_t x = rb.u.i; excl ? x > re.u.i : x >= re.u.i;) {
            if (d->len >= 10000000) return tpl_vm_error(vm, TPL_ERR_LIMIT, "step: too many iterations");
            if (!tpl_list_push(A(vm), d, tpl_v_int(x))) return oom(vm);
            if (__builtin_add_overflow(x, a[1].u.i, &x)) break;
        }
        *out = tpl_v_list(d);
        return 0;
    }
    if (a[1].u.i <= 0) return tpl_vm_error(vm, TPL_ERR_TYPE, a[1].u.i ? "step can't be negative (ArgumentError)" : "step can't be 0 (ArgumentError)");
    tpl_list *l;
    if (range_list(vm, a[0], &l) < 0) return -1;
    tpl_list *r = new_list(vm, l->len);
    if (!r) return oom(vm);
    for (uint32_t i = 0; i < l->len; i += (uint32_t)(a[1].u.i > UINT32_MAX ? UINT32_MAX : a[1].u.i)) r->items[r->len++] = l->items[i];
    tpl_rb_block blk = tpl_vm_block(vm);
    if (blk.pc) {
        tpl_value v;
        for (uint32_t i = 0; i < r->len; i++) YIELD(blk, &r->items[i], 1, &v);
        *out = a[0];
        return 0;
    }
    *out = tpl_v_list(r);
    return 0;
}

int r_range_to_a(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *l;
    /* (range_to_a asks for an end first: (nil..nil).to_a is RangeError, where its each is TypeError) */
    if (a[0].u.list->items[1].type == TPL_T_NONE)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "cannot convert endless range to an array (RangeError)");
    if (range_list(vm, a[0], &l) < 0) return -1;
    *out = tpl_v_list(l);
    return 0;
}

int r_range_size(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value b = a[0].u.list->items[0], e = a[0].u.list->items[1];
    bool excl = a[0].u.list->items[2].u.i != 0;
    /* range_size: a beginless range (whatever its end) and a numeric one without an end are Infinity */
    if (b.type == TPL_T_NONE) { *out = tpl_v_float(INFINITY); return 0; }   /* (..5).size, (nil..nil).size */
    if (!is_num(b)) { *out = tpl_v_none(); return 0; }   /* only numeric ranges have a size */
    if (e.type == TPL_T_NONE || (b.type == TPL_T_INT && e.type == TPL_T_FLOAT && isinf(e.u.f) && e.u.f > 0)) {
        *out = tpl_v_float(INFINITY);
        return 0;
    }
    if (b.type == TPL_T_FLOAT && is_num(e)) {   /* ruby_float_step_size by 1 ((0.5..2).size is 2) */
        double n = float_step_size(b.u.f, dbl(e), 1.0, excl);
        if (isinf(n)) { *out = tpl_v_float(n); return 0; }
        if (n >= 9.2e18) return tpl_big_from_double(vm, n, out);   /* (rb_dbl2big: (0.0..1e300).size) */
        *out = tpl_v_int((int64_t)n);
        return 0;
    }
    if (b.type == TPL_T_INT && is_num(e)) {
        double hi = e.type == TPL_T_INT ? (double)e.u.i : floor(e.u.f);
        if (e.type == TPL_T_INT || fabs(hi) < 9.2e18) {
            /* exact (128-bit: the size of a range over most of int64 is past int64) */
            int64_t h = e.type == TPL_T_INT ? e.u.i : (int64_t)hi;
            __int128 n = (__int128)h - b.u.i + ((excl && (e.type == TPL_T_INT || hi == e.u.f)) ? 0 : 1);
            return int_round_value(vm, n > 0 ? n : 0, out);
        }
        if (excl && hi == dbl(e)) hi -= 1;
        double n = hi - (double)b.u.i + 1;
        *out = tpl_v_int(n > 0 ? (int64_t)n : 0);
        return 0;
    }
    tpl_list *l;
    if (range_list(vm, a[0], &l) < 0) return -1;
    *out = tpl_v_int(l->len);
    return 0;
}

/* Range#sum: Ruby's enum_sum adds an Integer range without a block by formula (int_range_sum:
 * (1..10**12).sum at once), onto an init that is no Float; anything else as Array#sum over its items. */
int r_range_sum(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value b = a[0].u.list->items[0], e = a[0].u.list->items[1];
    bool excl = a[0].u.list->items[2].u.i != 0;
    tpl_value init = tpl_given(a[1]) ? a[1] : tpl_v_int(0);
    bool intb = b.type == TPL_T_INT || b.type == TPL_T_BIGINT, inte = e.type == TPL_T_INT || e.type == TPL_T_BIGINT;
    if (!tpl_vm_block(vm).pc && intb && inte && (init.type == TPL_T_INT || init.type == TPL_T_BIGINT)) {
        mpz_t lo, hi, t;
        tpl_big_get(lo, b);
        tpl_big_get(hi, e);
        if (excl) mpz_sub_ui(hi, hi, 1);
        if (mpz_cmp(hi, lo) < 0) { mpz_clear(lo); mpz_clear(hi); *out = init; return 0; }
        mpz_init(t);
        mpz_sub(t, hi, lo);
        mpz_add_ui(t, t, 1);     /* the count */
        mpz_add(hi, hi, lo);     /* first + last */
        mpz_mul(t, t, hi);
        mpz_fdiv_q_2exp(t, t, 1);
        mpz_clear(lo);
        tpl_big_get(lo, init);   /* (tpl_big_get initialises) */
        mpz_add(t, t, lo);
        mpz_clear(lo);
        mpz_clear(hi);
        return tpl_big_result(vm, t, out);
    }
    tpl_list *l;
    if (range_list(vm, a[0], &l) < 0) return -1;
    if (l->len == 0 && init.type == TPL_T_FLOAT) { *out = tpl_v_float(init.u.f + 0.0); return 0; }   /* (enum_sum's f + c) */
    tpl_value a2[2] = { tpl_v_list(l), a[1] };
    return r_arr_sum(vm, a2, out);
}

/* ------------------------------------------------------------------ remembers? */

int r_k_remembers(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    /* (the oracle's remembers?(w) reads w.to_s: a Symbol is its name) */
    if (a[0].type != TPL_T_STR || (a[0].flags & (TPL_F_REGEX_RB | TPL_F_CLASS_RB))) return type_error(vm, TPL_VT_STR, a[0]);
    return g_remembers(vm, a, out);
}

/* ------------------------------------------------------------------ operators */

static bool plain_num(tpl_value v) { return v.type == TPL_T_INT || v.type == TPL_T_FLOAT || v.type == TPL_T_BIGINT; }

static int op_error(tpl_vm *vm, const char *op, tpl_value a, tpl_value b)
{
    if (plain_num(a)) {
        return coerce_failed(vm, b, tpl_rb_class_name(a));
    }
    if (a.type == TPL_T_STR && !(a.flags & (TPL_F_REGEX_RB | TPL_F_CLASS_RB)) && (op[0] == '+' || op[0] == '*') && !op[1])   /* (String has no **) */
        return type_error(vm, op[0] == '+' ? TPL_VT_STR : TPL_VT_INT, b);
    if (is_array(a) && (op[0] == '+' || op[0] == '-')) return type_error(vm, TPL_VT_LIST, b);
    return no_method(vm, a, op, strlen(op));
}

static int set_op(tpl_vm *vm, tpl_value self, tpl_list *others, int op, tpl_value *out);

int tpl_rb_arith(tpl_vm *vm, int op, tpl_value a, tpl_value b, tpl_value *out)
{
    char name[3] = { (char)op, 0, 0 };
    if (op == 'p') { name[0] = '*'; name[1] = '*'; }
    /* (a Symbol, Regexp, class or rescued exception has no arithmetic: NoMethodError) */
    bool sym_a = a.type == TPL_T_STR && (a.flags & (TPL_F_SYMBOL | TPL_F_REGEX_RB | TPL_F_CLASS_RB | TPL_F_EXC_RB));
    if (op == 'p' && b.type == TPL_T_FLOAT && b.u.f != round(b.u.f) &&
        (a.type == TPL_T_INT ? a.u.i < 0 : a.type == TPL_T_FLOAT ? a.u.f < 0 : (a.type == TPL_T_BIGINT || tpl_is_rat(a)) && a.u.s[0] == '-'))
        /* Ruby's fix_pow/rb_big_pow/flo_pow: a negative number ** a Float that is no whole number (NaN too) is a
         * Complex (the int path of Integer#pow reaches here as well: (-8).pow(0.5) printed NaN) */
        return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: a negative number ** a fraction is a Complex (tpl has no Complex)");
    if (__builtin_expect(tpl_is_rat(a) || tpl_is_rat(b) || op == 'p', 0)) {   /* Rational, and Integer ** -n */
        int h = rat_arith(vm, op, a, b, out);
        if (h) return h;
    }
    if (plain_num(a) && plain_num(b)) {
        bool big = a.type == TPL_T_BIGINT || b.type == TPL_T_BIGINT;
        if (big && (a.type == TPL_T_FLOAT || b.type == TPL_T_FLOAT) && op != '/' && op != '%') {
            double x = dbl(a), y = dbl(b); /* Ruby converts the Integer (Infinity past Float::MAX) */
            *out = tpl_v_float(op == '+' ? x + y : op == '-' ? x - y : op == '*' ? x * y : pow(x, y));
            return 1;
        }
        if (op == 'p' && a.type != TPL_T_FLOAT && b.type != TPL_T_FLOAT && (b.type == TPL_T_BIGINT ? b.u.s[0] != '-' : b.u.i > 0) &&
            pow_is_float(a, dbl(b))) {
            *out = tpl_v_float(pow_float(a, dbl(b)));
            return 1;
        }
        if (a.type == TPL_T_FLOAT || b.type == TPL_T_FLOAT) {
            double x = dbl(a), y = dbl(b);
            if (op == 'p') {   /* (the Complex cases are refused above) */
                /* fix_pow: Integer ** Float is 1.0 for a zero exponent, 0 ** y is 0.0 (Infinity for y < 0,
                 * NaN too: 0 ** NaN is 0.0), 1 ** y is 1.0; Float#** is C's pow (0.0 ** -1 is Infinity,
                 * not an error) */
                double r = a.type == TPL_T_INT && y == 0.0 ? 1.0
                         : a.type == TPL_T_INT && a.u.i == 0 ? (y < 0 ? HUGE_VAL : 0.0)
                         : a.type == TPL_T_INT && a.u.i == 1 ? 1.0 : pow(x, y);
                *out = tpl_v_float(r);
                return 1;
            }
            if (op == '/') { *out = tpl_v_float(x / y); return 1; }
            if (op == '%') {
                if (y == 0.0) return tpl_vm_fail(vm, TPL_EK_ZERO_DIVISION, "divided by 0 (ZeroDivisionError)");
                double m = fmod(x, y);
                if (y != 0.0 && m != 0.0 && ((m < 0) != (y < 0))) m += y;
                *out = tpl_v_float(m);
                return 1;
            }
        }
        if ((op == '/' || op == '%') && a.type != TPL_T_FLOAT && b.type == TPL_T_INT && b.u.i == 0)
            return tpl_vm_fail(vm, TPL_EK_ZERO_DIVISION, "divided by 0 (ZeroDivisionError)");
        return 0;
    }
    if (sym_a) return no_method(vm, a, name, strlen(name));
    if (a.type == TPL_T_HOST) { /* a Ruby object's own operator (a String in another encoding: +, *, %) */
        int rc = host_op(vm, a, name, b, out);
        if (rc <= 0) return rc < 0 ? -1 : 1;
    }
    switch (op) {
    case '+':
        if (a.type == TPL_T_STR && b.type == TPL_T_STR && !(b.flags & (TPL_F_REGEX_RB | TPL_F_CLASS_RB | TPL_F_EXC_RB | TPL_F_SYMBOL))) return 0;
        if (a.type == TPL_T_STR && b.type == TPL_T_HOST && !(a.flags & (TPL_F_REGEX_RB | TPL_F_CLASS_RB | TPL_F_EXC_RB))) {
            /* "x" + obj: String#+ of the host's String (another encoding: the host's "(r+)",
             * a + obj computed by the host; a host without it: the TypeError below) */
            int rc = host_op(vm, b, "(r+)", a, out);
            if (rc <= 0) return rc < 0 ? -1 : 1;
        }
        if (is_array(a) && is_array(b)) return 0;
        break;
    case '-':
        if (is_array(a) && is_array(b)) {   /* by hash and eql?, linear (Array#difference) */
            tpl_value o[1] = { b };
            tpl_list ol = { .items = o, .len = 1 };
            return set_op(vm, a, &ol, '-', out) < 0 ? -1 : 1;
        }
        break;
    case '*':
        if ((a.type == TPL_T_STR || is_array(a)) && (b.type == TPL_T_FLOAT || tpl_is_rat(b))) {
            /* String#* / Array#* read the count by NUM2LONG: a Float or Rational truncated toward zero
             * ("ab" * 3.7 is "ababab", "ab" * -0.5 ""); NaN, the infinities and past a long RangeError */
            tpl_value k = b;
            if (long_arg(vm, &k) < 0) return -1;
            if (k.type == TPL_T_BIGINT) return long_arg(vm, &k);
            return operator_method(vm, a, "*", 1, &k, 1, out) < 0 ? -1 : 1;
        }
        if ((a.type == TPL_T_STR || is_array(a)) && b.type == TPL_T_INT) {
            if (b.u.i < 0) return tpl_vm_error(vm, TPL_ERR_TYPE, "negative argument (ArgumentError)");
            return 0;
        }
        if (is_array(a) && b.type == TPL_T_STR) {
            tpl_value args[2] = { a, b };
            if (r_arr_join(vm, args, out) < 0) return -1;
            return 1;
        }
        break;
    case '%':
        if (a.type == TPL_T_STR) {
            tpl_value args = b;
            if (is_array(b)) { args.flags = TPL_F_TUPLE; }
            if (tpl_str_mod(vm, a, args, out) < 0) return -1;
            return 1;
        }
        break;
    default:
        break;
    }
    return op_error(vm, name, a, b);
}

int tpl_rb_compare_check(tpl_vm *vm, const char *op, tpl_value a, tpl_value b, tpl_value *out)
{
    if (a.type == TPL_T_HOST) { /* a Ruby object's own <, <=, >, >= (Comparable) */
        int rc = host_op(vm, a, op, b, out);
        if (rc <= 0) return rc < 0 ? -1 : 1;
    }
    if (__builtin_expect(tpl_is_rat(a) || tpl_is_rat(b), 0) && a.type != TPL_T_HOST && b.type != TPL_T_HOST) {
        bool ok;   /* Rational's Comparable, and Integer/Float < Rational */
        int c = rat_cmp(a, b, &ok);
        if (!ok) return cmp_fail(vm, a, b);
        *out = tpl_v_bool(op[1] == '=' ? (op[0] == '<' ? c <= 0 : c >= 0) : (op[0] == '<' ? c < 0 : c > 0));
        return 1;
    }
    if (tpl_is_gemv_rb(a)) {   /* Comparable's operators on Gem::Version#<=> */
        bool ok;
        int c = gem_cmp_any(a, b, &ok);
        if (!ok) return cmp_fail(vm, a, b);
        *out = tpl_v_bool(op[1] == '=' ? (op[0] == '<' ? c <= 0 : c >= 0) : (op[0] == '<' ? c < 0 : c > 0));
        return 1;
    }
    if (tpl_is_gemv_rb(b) && a.type == TPL_T_STR && !(a.flags & (TPL_F_CLASS_RB | TPL_F_REGEX_RB | TPL_F_EXC_RB | TPL_F_SYMBOL))) {
        bool ok;   /* String's Comparable: String#<=> asks the version (rb_invcmp) */
        int c = -gem_cmp_any(b, a, &ok);
        if (!ok) return cmp_fail(vm, a, b);
        *out = tpl_v_bool(op[1] == '=' ? (op[0] == '<' ? c <= 0 : c >= 0) : (op[0] == '<' ? c < 0 : c > 0));
        return 1;
    }
    bool sa = a.type == TPL_T_STR && !(a.flags & (TPL_F_REGEX_RB | TPL_F_CLASS_RB | TPL_F_EXC_RB));
    bool sb = b.type == TPL_T_STR && !(b.flags & (TPL_F_REGEX_RB | TPL_F_CLASS_RB | TPL_F_EXC_RB));
    if (plain_num(a) && plain_num(b)) return 0;
    if (sa && sb && !((a.flags ^ b.flags) & TPL_F_SYMBOL)) return 0;   /* (a Symbol and a String do not compare) */
    if (plain_num(a) || sa) return cmp_fail(vm, a, b);
    return no_method(vm, a, op, strlen(op));
}

int r_arr_each_slice(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *l = L_(a[0]);
    if (long_arg(vm, &a[1]) < 0) return -1;
    if (a[1].u.i <= 0) return tpl_vm_error(vm, TPL_ERR_TYPE, "invalid slice size (ArgumentError)");
    uint32_t k = a[1].u.i > l->len ? (l->len ? l->len : 1) : (uint32_t)a[1].u.i;
    tpl_list *r = new_list(vm, l->len / k + 1);
    if (!r) return oom(vm);
    for (uint32_t i = 0; i < l->len; i += k) {
        uint32_t m = l->len - i < k ? l->len - i : k;
        tpl_list *g = new_list(vm, m);
        if (!g) return oom(vm);
        mcpy_items(g->items, 0, l->items, i, m);
        g->len = m;
        r->items[r->len++] = tpl_v_list(g);
    }
    tpl_rb_block blk = tpl_vm_block(vm);
    if (!blk.pc) { *out = tpl_v_list(r); return 0; }
    tpl_value v;
    for (uint32_t i = 0; i < r->len; i++) YIELD(blk, &r->items[i], 1, &v);
    *out = a[0];   /* Ruby 3.1: the receiver */
    return 0;
}

/* minmax { |a, b| } is Enumerable#minmax's pairwise walk (enum.c minmax_ii): each pair ordered by one
 * yield (a tie keeps the first), then its smaller against the min and its larger against the max, so
 * ties and a non-total block answer what Ruby does. */
static int minmax_blk_update(sorter *s, tpl_value i, tpl_value j, tpl_value *mm, bool *have)
{
    if (!*have) { mm[0] = i; mm[1] = j; *have = true; return 0; }
    if (sort_cmp(s, i, mm[0]) < 0) mm[0] = i;
    if (s->failed) return -1;
    if (sort_cmp(s, j, mm[1]) > 0) mm[1] = j;
    return s->failed ? -1 : 0;
}

static int minmax_blk(tpl_vm *vm, tpl_list *l, tpl_value *mm)
{
    sorter s = { vm, tpl_vm_block(vm), true, NULL, false };
    bool have = false, has_last = false;
    tpl_value last = tpl_v_none();
    mm[0] = mm[1] = tpl_v_none();
    for (uint32_t k = 0; k < l->len; k++) {
        tpl_value i = l->items[k];
        if (!has_last) { last = i; has_last = true; continue; }
        tpl_value j = last;
        has_last = false;
        int c = sort_cmp(&s, j, i);
        if (s.failed) return -1;
        if (c == 0) i = j;
        else if (c < 0) { tpl_value t = i; i = j; j = t; }
        if (minmax_blk_update(&s, i, j, mm, &have) < 0) return -1;
    }
    if (has_last && minmax_blk_update(&s, last, last, mm, &have) < 0) return -1;
    return 0;
}

/* Enumerable#minmax_by: the block's values compared in pairs (enum.c minmax_by_i): of a tied pair the first
 * stands for both, so ties keep Ruby's items. */
int r_arr_minmax_by(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *l = L_(a[0]);
    tpl_value *keys = NULL;
    bool broke = false;
    if (block_values(vm, l, &keys, out, &broke) < 0) return -1;
    if (broke) return 0;
    sorter s = { vm, tpl_vm_block(vm), false, NULL, false };
    int64_t mn = -1, mx = -1, last = -1;
    for (uint32_t k = 0; k <= l->len; k++) {
        int64_t i, j;
        if (k == l->len) {
            if (last < 0) break;
            i = j = last;
        } else {
            if (last < 0) { last = k; continue; }
            i = k, j = last;
            last = -1;
            int c = sort_cmp(&s, keys[j], keys[i]);
            if (s.failed) return -1;
            if (c == 0) i = j;
            else if (c < 0) { int64_t t = i; i = j; j = t; }
        }
        if (mn < 0) { mn = i; mx = j; continue; }
        if (sort_cmp(&s, keys[i], keys[mn]) < 0) mn = i;
        if (s.failed) return -1;
        if (sort_cmp(&s, keys[j], keys[mx]) > 0) mx = j;
        if (s.failed) return -1;
    }
    tpl_list *r = new_list(vm, 2);
    if (!r) return oom(vm);
    r->items[0] = mn < 0 ? tpl_v_none() : l->items[mn];
    r->items[1] = mx < 0 ? tpl_v_none() : l->items[mx];
    r->len = 2;
    *out = tpl_v_list(r);
    return 0;
}

/* Integer#size: the bytes of the machine representation (8 for a Fixnum and any Integer of 64 bits; a bigger one's
 * absolute value in bytes, as rb_big_size on this 64-bit Ruby). Float has none. */
int r_num_size(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (a[0].type == TPL_T_FLOAT) return no_method(vm, a[0], "size", 4);
    *out = tpl_v_int(8);   /* (a big Integer's: big_method) */
    return 0;
}

int r_arr_minmax(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *r = new_list(vm, 2);
    if (!r) return oom(vm);
    if (tpl_vm_block(vm).pc) {
        if (minmax_blk(vm, L_(a[0]), r->items) < 0) return -1;
        r->len = 2;
        *out = tpl_v_list(r);
        return 0;
    }
    /* (Ruby's rb_assoc_new(rb_ary_min(..), rb_ary_max(..)): gcc evaluates the max first, whose error wins) */
    if (extreme(vm, a, &r->items[1], 1, false) < 0 || extreme(vm, a, &r->items[0], -1, false) < 0) return -1;
    r->len = 2;
    *out = tpl_v_list(r);
    return 0;
}

int r_str_ord(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (a[0].len == 0) return tpl_vm_error(vm, TPL_ERR_TYPE, "empty string (ArgumentError)");
    size_t i = 0;
    *out = tpl_v_int(tpl_utf8_next(a[0].u.s, a[0].len, &i));
    return 0;
}

/* ------------------------------------------------------------------ appended builtins
 * (builtins.def lists these last, so the ids of earlier builtins in .tplb files stay) */

/* Kernel#format / sprintf: format % [args...], Ruby's format sequences (String#%). */
int r_k_format(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (want_str(vm, a[0]) < 0) return -1;
    tpl_value args = a[1];
    if (a[2].type == TPL_T_MAP && a[2].u.map->len) {   /* format("%{x}", x: 1): the keywords are a last Hash argument */
        const tpl_map *kw = a[2].u.map;
        tpl_map *h = rb_map(vm, kw->len);
        if (!h) return oom(vm);
        for (uint32_t i = 0; i < kw->len; i++) {
            tpl_value k = kw->e[i].key;
            k.flags |= TPL_F_SYMBOL;
            if (!tpl_map_set(A(vm), h, k, kw->e[i].val)) return oom(vm);
        }
        const tpl_list *l = L_(a[1]);
        if (l->len == 0) return tpl_str_mod(vm, a[0], tpl_v_map(h), out);
        tpl_list *w = new_list(vm, l->len + 1);
        if (!w) return oom(vm);
        for (uint32_t i = 0; i < l->len; i++) w->items[w->len++] = l->items[i];
        w->items[w->len++] = tpl_v_map(h);
        args = tpl_v_list(w);
    }
    args.flags = TPL_F_TUPLE;   /* the argument list itself, never one array argument */
    return tpl_str_mod(vm, a[0], args, out);
}

/* Array#reverse_each: each, last item first; without a block, the items in that order. */
int r_arr_reverse_each(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *l = L_(a[0]);
    tpl_rb_block blk = tpl_vm_block(vm);
    if (!blk.pc) return r_arr_reverse(vm, a, out);
    tpl_value r;
    for (uint32_t i = l->len; i > 0; i--) YIELD(blk, &l->items[i - 1], 1, &r);
    *out = a[0];
    return 0;
}

/* String#prepend(*strings): the strings, then self (stored back by the compiler). */
int r_str_prepend(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (a[0].flags & TPL_F_FROZEN_RB) return frozen_error(vm, a[0]);
    tpl_list *more = L_(a[1]);
    tpl_sb b;
    tpl_sb_init(&b, A(vm));
    for (uint32_t i = 0; i < more->len; i++) {
        if (want_str(vm, more->items[i]) < 0) return -1;
        tpl_sb_put(&b, more->items[i].u.s, more->items[i].len);
    }
    tpl_sb_put(&b, a[0].u.s, a[0].len);
    *out = tpl_sb_value(&b);
    return 0;
}

/* A String#tr character set: code point ranges in order, negated by a leading '^' (when more
 * follows). As Ruby's trnext: '\' takes the next character literally; `a-z` is a range when a
 * character follows the '-', else the '-' is itself. */
typedef struct { uint32_t lo, hi; } tr_range;
typedef struct { tr_range *r; uint32_t n; uint64_t total; bool neg; } tr_set;

static int tr_parse(tpl_vm *vm, tpl_value s, bool allow_neg, tr_set *set)
{
    const char *p = s.u.s;
    size_t n = s.len, i = 0;
    set->neg = allow_neg && n > 1 && p[0] == '^';
    if (set->neg) i = 1;
    set->r = tpl_arena_alloc(A(vm), (n + 1) * sizeof *set->r);
    if (!set->r) return oom(vm);
    set->n = 0;
    set->total = 0;
    while (i < n) {
        if (p[i] == '\\' && i + 1 < n) i++;
        size_t start = i;
        uint32_t lo = tpl_utf8_next(p, n, &i), hi = lo;
        if (i + 1 < n && p[i] == '-') {
            i++;
            hi = tpl_utf8_next(p, n, &i);
            if (lo > hi)
                return tpl_vm_error(vm, TPL_ERR_TYPE, "invalid range \"%.*s\" in string transliteration (ArgumentError)",
                                    (int)(i - start), p + start);
        }
        set->r[set->n++] = (tr_range){ lo, hi };
        set->total += hi - lo + 1;
    }
    return 0;
}

/* String#tr(from, to): each character in from becomes the one at the same place in to (to's
 * last character past its end; a later mention in from wins); with '^from', every character
 * not in from becomes to's last; an empty to deletes. As Ruby's tr. */
/* String#tr, and #tr_s (squeeze: a run of characters translated to the same one gives one of it). */
static int str_tr(tpl_vm *vm, tpl_value *a, bool squeeze, tpl_value *out)
{
    tpl_value s = a[0];
    if (want_str(vm, a[1]) < 0 || want_str(vm, a[2]) < 0) return -1;
    tr_set from, to;
    if (tr_parse(vm, a[1], true, &from) < 0 || tr_parse(vm, a[2], false, &to) < 0) return -1;
    uint32_t last = to.n ? to.r[to.n - 1].hi : 0;
    int64_t prev = -1;   /* the character the last one was translated to (tr_s), -1 after any other */
    tpl_sb b;
    tpl_sb_init(&b, A(vm));
    for (size_t i = 0; i < s.len;) {
        size_t at = i;
        uint32_t c = tpl_utf8_next(s.u.s, s.len, &i);
        uint64_t idx = 0, base = 0;
        bool hit = false;
        for (uint32_t k = 0; k < from.n; k++) {
            if (c >= from.r[k].lo && c <= from.r[k].hi) { hit = true; idx = base + (c - from.r[k].lo); }
            base += from.r[k].hi - from.r[k].lo + 1;
        }
        if (from.neg ? hit : !hit) { tpl_sb_put(&b, s.u.s + at, i - at); prev = -1; continue; }
        if (!to.n) continue;   /* deleted */
        uint32_t r = last;
        if (!from.neg && idx < to.total) {
            for (uint32_t k = 0; k < to.n; k++) {
                uint64_t len = to.r[k].hi - to.r[k].lo + 1;
                if (idx < len) { r = to.r[k].lo + (uint32_t)idx; break; }
                idx -= len;
            }
        }
        if (squeeze && prev == (int64_t)r) continue;
        prev = r;
        tpl_sb_put_cp(&b, r);
    }
    *out = tpl_sb_value(&b);
    return 0;
}

int r_str_tr(tpl_vm *vm, tpl_value *a, tpl_value *out) { return str_tr(vm, a, false, out); }

int r_str_tr_s(tpl_vm *vm, tpl_value *a, tpl_value *out) { return str_tr(vm, a, true, out); }

/* ------------------------------------------------------------------ issue 15: ERB fidelity */

/* Arrays and Hashes change in place (TPL_F_MUT_RB): a container this render built is changed where it
 * is, so every variable holding it sees the change, as Ruby's references do. One that is not (the
 * state's, the program's, a method's result) is copied first: the copy has the flag, and the lowering
 * stores it back into the variable the receiver came from (index_store, own_receiver). */

static bool is_frozen_ct(tpl_value v) { return (v.type == TPL_T_LIST || v.type == TPL_T_MAP) && (v.flags & TPL_F_FROZEN_CT_RB); }

static int frozen_ct_error(tpl_vm *vm, tpl_value v)
{
    int len;
    const char *insp = inspect_short(vm, v, &len);
    return tpl_vm_error(vm, TPL_ERR_TYPE, "can't modify frozen %s: %.*s (FrozenError)", tpl_rb_class_name(v), len, insp);
}

/* A copy of array or hash v that this render may change in place (a Hash keys by eql?). */
static int rb_copy_mut(tpl_vm *vm, tpl_value v, tpl_value *out)
{
    if (v.type == TPL_T_LIST) {
        tpl_list *l = v.u.list, *r = new_list(vm, l->len < 4 ? 4 : l->len);
        if (!r) return oom(vm);
        mcpy_items(r->items, 0, l->items, 0, l->len);
        r->len = l->len;
        *out = tpl_v_list(r);
    } else {
        tpl_map *m = v.u.map, *r = rb_map(vm, m->len < 4 ? 4 : m->len);
        if (!r) return oom(vm);
        r->rb_default = m->rb_default;   /* (dup keeps the default, as Ruby's) */
        r->rb_state = !m->eql || m->rb_state;   /* (and the class: a state Hash's copy reads :k as "k") */
        /* keys distinct by == are distinct by eql? too */
        for (uint32_t i = 0; i < m->len; i++)
            if (!tpl_map_append(A(vm), r, m->e[i].key, m->e[i].hash, m->e[i].val)) return oom(vm);
        *out = tpl_v_map(r);
    }
    out->flags = TPL_F_MUT_RB;
    return 0;
}

/* The array or hash v, to be changed: itself when this render may change it in place, else a copy
 * that it may; FrozenError when v is frozen. */
static int rb_own(tpl_vm *vm, tpl_value v, tpl_value *out)
{
    if (is_frozen_ct(v)) return frozen_ct_error(vm, v);
    if (v.flags & TPL_F_MUT_RB) { *out = v; return 0; }
    return rb_copy_mut(vm, v, out);
}

/* Room for n items in a list this render owns (items past len are no value's). */
static int list_reserve(tpl_vm *vm, tpl_list *l, uint64_t n)
{
    if (n <= l->cap) return 0;
    if (n > 10000000) return tpl_vm_error(vm, TPL_ERR_LIMIT, "array too long");
    uint64_t cap = (uint64_t)l->cap * 2 > n ? (uint64_t)l->cap * 2 : n;
    tpl_value *items = tpl_arena_alloc(A(vm), (size_t)cap * sizeof *items);
    if (!items) return oom(vm);
    mcpy_items(items, 0, l->items, 0, l->len);
    l->items = items;
    l->cap = (uint32_t)cap;
    return 0;
}

/* (own): the lowering's step before a method that changes its receiver (store, delete, merge!, ...):
 * an array or hash this render may change in place (rb_own), which it stores back; anything else as it is. */
int r_any_own(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if ((a[0].type == TPL_T_LIST && is_array(a[0])) || a[0].type == TPL_T_MAP) return rb_own(vm, a[0], out);
    *out = a[0];
    return 0;
}

/* (numeric): whether a is a number (the lowering stores `x << v`'s result back into x unless it is) */
int r_any_numeric(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    (void)vm;
    *out = tpl_v_bool(a[0].type == TPL_T_INT || a[0].type == TPL_T_BIGINT || a[0].type == TPL_T_FLOAT);
    return 0;
}

/* (unshared): the lowering's check before a method that changes its receiver in place when the
 * receiver may be held by another name too (compiler/lower_erb.c, "shared receivers"): tpl's strings
 * are values and the state's (or a method's) arrays and hashes are copied at their first change, so
 * the other name would not see the change Ruby makes; that is an error naming the construct, never a
 * different text. mode bit 1: a String is refused; bit 2: an array or hash this render did not build.
 * A frozen receiver passes (the method raises FrozenError, as in Ruby). mode 4: the receiver is the
 * binding's object (Tpl::ERB#result: an @ivar of self or a local the template did not assign), which
 * Ruby's ERB would change for the caller: refused with the text in a[2] unless it is a frozen String,
 * Array or Hash (Ruby's FrozenError then, which a rescue takes). */
int r_any_unshared(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    int64_t mode = a[1].type == TPL_T_INT ? a[1].u.i : 3;
    int mlen = a[2].len > 60 ? 60 : (int)a[2].len;
    *out = tpl_v_none();
    if (mode == 4) {
        bool frozen = a[0].type == TPL_T_STR ? (a[0].flags & (TPL_F_SYMBOL | TPL_F_REGEX_RB | TPL_F_CLASS_RB | TPL_F_FROZEN_RB)) == TPL_F_FROZEN_RB
                                             : ((a[0].type == TPL_T_LIST && is_array(a[0])) || a[0].type == TPL_T_MAP) && is_frozen_ct(a[0]);
        if (frozen) return 0;
        return tpl_vm_error(vm, TPL_ERR_SYNTAX, "%.*s", a[2].type == TPL_T_STR ? (int)a[2].len : 0, a[2].type == TPL_T_STR ? a[2].u.s : "");
    }
    if ((mode & 1) && a[0].type == TPL_T_STR && !(a[0].flags & (TPL_F_SYMBOL | TPL_F_REGEX_RB | TPL_F_CLASS_RB | TPL_F_FROZEN_RB)))
        return tpl_vm_error(vm, TPL_ERR_SYNTAX, "unsupported Ruby construct: String#%.*s on a string another name may "
                            "hold: tpl strings are values, the other name would not see the change", mlen, a[2].u.s);
    if ((mode & 2) && ((a[0].type == TPL_T_LIST && is_array(a[0])) || a[0].type == TPL_T_MAP) &&
        !(a[0].flags & (TPL_F_MUT_RB | TPL_F_FROZEN_CT_RB)))
        return tpl_vm_error(vm, TPL_ERR_SYNTAX, "unsupported Ruby construct: %s#%.*s on the state's (or a method's) %s "
                            "that another name may hold: tpl copies it at its first change, the other name would not see it",
                            a[0].type == TPL_T_MAP ? "Hash" : "Array", mlen, a[2].u.s, a[0].type == TPL_T_MAP ? "hash" : "array");
    return 0;
}

/* Object#dup / #clone(freeze: true): an array or hash is copied (dup unfrozen; clone keeps frozen);
 * a string as String#dup; anything else is itself. */
static int dup_clone(tpl_vm *vm, tpl_value *a, tpl_value *out, bool clone)
{
    if ((a[0].type == TPL_T_LIST && is_array(a[0])) || a[0].type == TPL_T_MAP) {
        if (rb_copy_mut(vm, a[0], out) < 0) return -1;
        if (clone && (a[0].flags & TPL_F_FROZEN_CT_RB)) out->flags |= TPL_F_FROZEN_CT_RB;
        return 0;
    }
    *out = a[0];
    return 0;
}

int r_any_dup(tpl_vm *vm, tpl_value *a, tpl_value *out) { return dup_clone(vm, a, out, false); }
int r_any_clone(tpl_vm *vm, tpl_value *a, tpl_value *out) { return dup_clone(vm, a, out, true); }

/* Object#freeze: an array or hash answers itself frozen (stored back by the lowering: a change then
 * raises FrozenError); anything else is itself (strings: String#freeze). */
int r_any_freeze(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    (void)vm;
    *out = a[0];
    if ((a[0].type == TPL_T_LIST && is_array(a[0])) || a[0].type == TPL_T_MAP) out->flags |= TPL_F_FROZEN_CT_RB;
    return 0;
}

/* a[start, len] = v / a[range] = v: items [b, b+n) replaced by v's items (an Array) or by v, nil-padded
 * when b is past the end (Ruby's rb_ary_splice). */
static int arr_splice(tpl_vm *vm, tpl_value self, int64_t b, int64_t n, tpl_value v, tpl_value *out)
{
    if (rb_own(vm, self, out) < 0) return -1;
    tpl_list *l = out->u.list;
    int64_t len = l->len;
    if (b > len) n = 0;
    else if (n > len - b) n = len - b;
    bool arr = v.type == TPL_T_LIST && is_array(v);
    int64_t rn = arr ? (int64_t)v.u.list->len : 1;
    int64_t tail = b > len ? 0 : len - b - n;
    int64_t nl = b + rn + tail;
    if (nl >= 10000000) return tpl_vm_error(vm, TPL_ERR_LIMIT, "index %lld too big for an array", (long long)b);
    /* the replacement may be this very array: copy its items first */
    tpl_value one = v, *ri = arr ? v.u.list->items : &one;
    if (arr && rn) {
        tpl_value *cp = tpl_arena_alloc(A(vm), (size_t)rn * sizeof *cp);
        if (!cp) return oom(vm);
        mcpy_items(cp, 0, ri, 0, (size_t)rn);
        ri = cp;
    }
    if (list_reserve(vm, l, (uint64_t)nl) < 0) return -1;
    if (b > len) {
        for (int64_t k = len; k < b; k++) l->items[k] = tpl_v_none();
    } else if (tail) {
        memmove(l->items + b + rn, l->items + b + n, (size_t)tail * sizeof *l->items);
    }
    mcpy_items(l->items, (size_t)b, ri, 0, (size_t)rn);
    l->len = (uint32_t)nl;
    return 0;
}

/* Ruby's rb_range_beg_len for an assignment: the start (negative from the end; before the start is a
 * RangeError) and the count (never negative) of range r over a sequence of len items. */
static int range_beg_len(tpl_vm *vm, tpl_value r, int64_t len, int64_t *b, int64_t *n)
{
    tpl_value rb = r.u.list->items[0], re = r.u.list->items[1];
    bool excl = r.u.list->items[2].u.i != 0;
    if ((rb.type != TPL_T_INT && rb.type != TPL_T_NONE) || (re.type != TPL_T_INT && re.type != TPL_T_NONE))
        return type_error(vm, TPL_VT_INT, rb.type != TPL_T_INT ? rb : re);
    int64_t s = rb.type == TPL_T_INT ? rb.u.i : 0, e = re.type == TPL_T_INT ? re.u.i : len;
    if (s < 0) s += len;
    if (s < 0) {
        int ln;
        const char *insp = inspect_short(vm, r, &ln);
        return tpl_vm_error(vm, TPL_ERR_VALUE, "%.*s out of range (RangeError)", ln, insp);
    }
    if (re.type == TPL_T_INT) {
        if (e < 0) e += len;
        if (!excl && e < INT64_MAX) e++;
    }
    *b = s;
    *n = e > s ? e - s : 0;
    return 0;
}

/* a[i] = v (the lowering's index assignment): item i set in place, nil-padded past the end as Ruby pads;
 * a[start, len] = v and a[range] = v replace a span (arr_splice). */
int r_arr_setitem(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    int64_t len = L_(a[0])->len;
    if (tpl_given(a[3])) {
        if (long_arg(vm, &a[1]) < 0) return -1;
        if (a[2].type != TPL_T_INT) return type_error(vm, TPL_VT_INT, a[2]);
        int64_t b = a[1].u.i, n = a[2].u.i;
        if (n < 0) return tpl_vm_error(vm, TPL_ERR_TYPE, "negative length (%lld) (IndexError)", (long long)n);
        if (b < 0) {
            if (b + len < 0)
                return tpl_vm_error(vm, TPL_ERR_TYPE, "index %lld too small for array; minimum: -%lld (IndexError)",
                                    (long long)b, (long long)len);
            b += len;
        }
        if (b >= 10000000) return tpl_vm_error(vm, TPL_ERR_LIMIT, "index %lld too big for an array", (long long)b);
        return arr_splice(vm, a[0], b, n, a[3], out);
    }
    if (is_range(a[1])) {
        int64_t b, n;
        if (range_beg_len(vm, a[1], len, &b, &n) < 0) return -1;
        if (b >= 10000000) return tpl_vm_error(vm, TPL_ERR_LIMIT, "index %lld too big for an array", (long long)b);
        return arr_splice(vm, a[0], b, n, a[2], out);
    }
    if (long_arg(vm, &a[1]) < 0) return -1;
    int64_t i = a[1].u.i;
    if (i < 0) {
        if (i + len < 0)
            return tpl_vm_error(vm, TPL_ERR_TYPE, "index %lld too small for array; minimum: -%lld (IndexError)", (long long)i,
                                (long long)len);
        i += len;
    }
    if (i >= 10000000) return tpl_vm_error(vm, TPL_ERR_LIMIT, "index %lld too big for an array", (long long)i);
    if (rb_own(vm, a[0], out) < 0) return -1;
    tpl_list *l = out->u.list;
    if (i >= len) {
        if (list_reserve(vm, l, (uint64_t)i + 1) < 0) return -1;
        for (uint32_t k = l->len; k < (uint32_t)i; k++) l->items[k] = tpl_v_none();
        l->len = (uint32_t)i + 1;
    }
    l->items[i] = a[2];
    return 0;
}

/* s[i] = t, s[start, len] = t, s[range] = t, s["sub"] = t, s[/re/] = t: the string with that span
 * (characters) replaced by t (strings are values: the lowering stores it back into the variable). */
int r_str_setitem(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value s = a[0], k = a[1], v = tpl_given(a[3]) ? a[3] : a[2];
    if (s.flags & TPL_F_FROZEN_RB) return frozen_error(vm, s);
    if (v.type != TPL_T_STR) return want_str(vm, v);
    int64_t len = (int64_t)tpl_utf8_len(s.u.s, s.len), b, n;
    size_t o0, o1;
    if (tpl_given(a[3])) {
        if (k.type != TPL_T_INT) return type_error(vm, TPL_VT_INT, k);
        if (a[2].type != TPL_T_INT) return type_error(vm, TPL_VT_INT, a[2]);
        b = k.u.i;
        n = a[2].u.i;
        if (n < 0) return tpl_vm_error(vm, TPL_ERR_TYPE, "negative length %lld (IndexError)", (long long)n);
        if (b < 0) b += len;
        if (b < 0 || b > len) return tpl_vm_error(vm, TPL_ERR_TYPE, "index %lld out of string (IndexError)", (long long)k.u.i);
        if (n > len - b) n = len - b;
    } else if (is_range(k)) {
        if (range_beg_len(vm, k, len, &b, &n) < 0) return -1;
        if (b > len) {
            int ln;
            const char *insp = inspect_short(vm, k, &ln);
            return tpl_vm_error(vm, TPL_ERR_VALUE, "%.*s out of range (RangeError)", ln, insp);
        }
        if (n > len - b) n = len - b;
    } else if (k.type == TPL_T_INT) {
        b = k.u.i < 0 ? k.u.i + len : k.u.i;
        if (b < 0 || b >= len) return tpl_vm_error(vm, TPL_ERR_TYPE, "index %lld out of string (IndexError)", (long long)k.u.i);
        n = 1;
    } else if (k.type == TPL_T_STR && !(k.flags & TPL_F_REGEX_RB)) {
        const char *hit = k.len ? tpl_memmem(s.u.s, s.len, k.u.s, k.len) : s.u.s;
        if (!hit) return tpl_vm_error(vm, TPL_ERR_TYPE, "string not matched (IndexError)");
        o0 = (size_t)(hit - s.u.s);
        o1 = o0 + k.len;
        goto splice;
    } else if (k.type == TPL_T_STR) {
        OnigRegex re = rx_compile(vm, k);
        if (!re) return -1;
        OnigRegion *reg = onig_region_new();
        long ms = rx_search(vm, re, s, 0, reg);
        long me = ms >= 0 ? reg->end[0] : 0;
        onig_region_free(reg, 1);
        onig_free(re);
        if (ms == -2) return -1;
        if (ms < 0) return tpl_vm_error(vm, TPL_ERR_TYPE, "regexp not matched (IndexError)");
        o0 = (size_t)ms;
        o1 = (size_t)me;
        goto splice;
    } else {
        return type_error(vm, TPL_VT_INT, k);
    }
    o0 = tpl_utf8_offset(s.u.s, s.len, (size_t)b);
    o1 = tpl_utf8_offset(s.u.s, s.len, (size_t)(b + n));
splice:;
    size_t nl = o0 + v.len + (s.len - o1);
    char *p = tpl_arena_alloc(A(vm), nl + 1);
    if (!p) return oom(vm);
    mcpy(p, s.u.s, o0);
    mcpy(p + o0, v.u.s, v.len);
    mcpy(p + o0 + v.len, s.u.s + o1, s.len - o1);
    p[nl] = 0;
    *out = tpl_v_str(p, nl);
    return 0;
}

/* h[k] = v: k set in place (an existing key keeps its place, a new one goes last). */
int r_hash_setitem(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (rb_own(vm, a[0], out) < 0) return -1;
    if (!tpl_map_set(A(vm), out->u.map, a[1], a[2])) return oom(vm);
    if (fuel_out(vm)) return tpl_vm_nomem(vm);
    return 0;
}

/* Hash#store(k, v): h[k] = v, answering v. */
int r_hash_store(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value h;
    if (r_hash_setitem(vm, a, &h) < 0) return -1;
    *out = a[2];
    return 0;
}

/* Hash#delete(k): the value removed, or nil (the block's value when given). */
int r_hash_delete(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value h;
    if (rb_own(vm, a[0], &h) < 0) return -1;
    uint64_t *fuel = A(vm)->fuel;
    tpl_value *hit = tpl_map_get_metered(h.u.map, a[1], fuel);
    if (fuel_out(vm)) return tpl_vm_nomem(vm);
    if (!hit) {
        tpl_rb_block blk = tpl_vm_block(vm);
        if (blk.pc) YIELD(blk, &a[1], 1, out);
        else *out = tpl_v_none();
        return 0;
    }
    *out = *hit;
    tpl_map_del(h.u.map, a[1]);
    return 0;
}

/* Array#delete(obj): every item == obj removed; the last one removed, or nil. */
int r_arr_delete(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value self;
    if (rb_own(vm, a[0], &self) < 0) return -1;
    tpl_list *l = self.u.list;
    uint32_t k = 0;
    *out = tpl_v_none();
    bool found = false;
    for (uint32_t i = 0; i < l->len; i++) {
        uint64_t *fuel = A(vm)->fuel;
        int eq = rb_equal_rec(l->items[i], a[1], fuel);
        if (eq == -2) return rb_deep_error(vm);
        if (eq < 0) return tpl_vm_nomem(vm);
        if (eq) { *out = l->items[i]; found = true; continue; }
        l->items[k++] = l->items[i];
    }
    l->len = k;
    if (!found) {
        tpl_rb_block blk = tpl_vm_block(vm);
        if (blk.pc) YIELD(blk, &a[1], 1, out);
    }
    return 0;
}

/* Array#delete_at(i): the item removed, or nil. */
int r_arr_delete_at(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (long_arg(vm, &a[1]) < 0) return -1;
    tpl_value self;
    if (rb_own(vm, a[0], &self) < 0) return -1;
    tpl_list *l = self.u.list;
    int64_t i = a[1].u.i;
    if (i < 0) i += l->len;
    *out = tpl_v_none();
    if (i < 0 || i >= l->len) return 0;
    *out = l->items[i];
    memmove(l->items + i, l->items + i + 1, (size_t)(l->len - i - 1) * sizeof *l->items);
    l->len--;
    return 0;
}

/* Array#pop / #shift (n?): the last / first item removed (nil when empty), or the last / first n as an array. */
static int pop_shift(tpl_vm *vm, tpl_value *a, tpl_value *out, bool last)
{
    bool many = tpl_given(a[1]);
    if (many && long_arg(vm, &a[1]) < 0) return -1;
    if (many && a[1].u.i < 0) return tpl_vm_error(vm, TPL_ERR_VALUE, "negative array size (ArgumentError)");
    tpl_value self;
    if (rb_own(vm, a[0], &self) < 0) return -1;
    tpl_list *l = self.u.list;
    uint32_t n = many ? (a[1].u.i > l->len ? l->len : (uint32_t)a[1].u.i) : (l->len ? 1 : 0);
    uint32_t from = last ? l->len - n : 0;
    if (many) {
        tpl_list *r = new_list(vm, n);
        if (!r) return oom(vm);
        mcpy_items(r->items, 0, l->items, from, n);
        r->len = n;
        *out = tpl_v_list(r);
        out->flags = TPL_F_MUT_RB;
    } else {
        *out = n ? l->items[from] : tpl_v_none();
    }
    if (!last) memmove(l->items, l->items + n, (size_t)(l->len - n) * sizeof *l->items);
    l->len -= n;
    return 0;
}

int r_arr_pop(tpl_vm *vm, tpl_value *a, tpl_value *out) { return pop_shift(vm, a, out, true); }
int r_arr_shift(tpl_vm *vm, tpl_value *a, tpl_value *out) { return pop_shift(vm, a, out, false); }

/* Array#clear / Hash#clear: emptied in place, answering self. */
int r_any_clear(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (rb_own(vm, a[0], out) < 0) return -1;
    if (out->type == TPL_T_LIST) out->u.list->len = 0;
    else { out->u.map->len = 0; if (out->u.map->idx_cap) memset(out->u.map->idx, 0, (size_t)out->u.map->idx_cap * sizeof *out->u.map->idx); }
    return 0;
}

/* Array#replace / Hash#replace: the receiver (changed in place, every name holding it sees it) takes other's
 * items or pairs; String#replace / String#clear: the new text, stored back into the receiver's variable (the
 * lowering's changing methods, as <<). */
int r_arr_replace(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (a[1].type != TPL_T_LIST || (a[1].flags & (TPL_F_RANGE_RB | TPL_F_MATCH_RB | TPL_F_ENUM_RB)))
        return tpl_vm_error(vm, TPL_ERR_TYPE, "no implicit conversion of %s into Array (TypeError)", tpl_rb_class_name(a[1]));
    tpl_list *src = a[1].u.list;
    uint32_t n = src->len;
    tpl_value *items = tpl_arena_alloc(A(vm), ((size_t)n + 1) * sizeof *items);   /* (a.replace(a): read first) */
    if (!items) return oom(vm);
    mcpy_items(items, 0, src->items, 0, n);
    if (rb_own(vm, a[0], out) < 0) return -1;
    out->u.list->len = 0;
    for (uint32_t i = 0; i < n; i++)
        if (!tpl_list_push(A(vm), out->u.list, items[i])) return oom(vm);
    return 0;
}

int r_hash_replace(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (a[1].type != TPL_T_MAP)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "no implicit conversion of %s into Hash (TypeError)", tpl_rb_class_name(a[1]));
    const tpl_map *src = a[1].u.map;
    uint32_t n = src->len;
    tpl_entry *e = tpl_arena_alloc(A(vm), ((size_t)n + 1) * sizeof *e);
    if (!e) return oom(vm);
    if (n) memcpy(e, src->e, (size_t)n * sizeof *e);
    if (rb_own(vm, a[0], out) < 0) return -1;
    tpl_map *m = out->u.map;
    m->len = 0;
    if (m->idx_cap) memset(m->idx, 0, (size_t)m->idx_cap * sizeof *m->idx);
    for (uint32_t i = 0; i < n; i++)
        if (!tpl_map_append(A(vm), m, e[i].key, e[i].hash, e[i].val)) return oom(vm);
    return 0;
}

int r_str_replace(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (a[0].flags & TPL_F_FROZEN_RB) return frozen_error(vm, a[0]);
    if (want_str(vm, a[1]) < 0) return -1;
    *out = tpl_v_str(a[1].u.s, a[1].len);
    return 0;
}

int r_str_clear(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (a[0].flags & TPL_F_FROZEN_RB) return frozen_error(vm, a[0]);
    *out = tpl_v_str("", 0);
    return 0;
}

/* (apply)(name, args, keywords): r.m(*a, **h) (the lowering's spread call): method `name` of self with the
 * items of the Array args and the pairs of the dict keywords; the block passes through. */
int r_any_apply(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (a[1].type != TPL_T_STR || a[2].type != TPL_T_LIST || a[3].type != TPL_T_MAP)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "bad argument list");
    tpl_list *l = a[2].u.list;
    tpl_map *m = a[3].u.map;
    tpl_value *v = tpl_arena_alloc(A(vm), ((size_t)l->len + 2 * (size_t)m->len + 1) * sizeof *v);
    if (!v) return oom(vm);
    mcpy_items(v, 0, l->items, 0, l->len);
    tpl_value *kwn = v + l->len + m->len;
    for (uint32_t i = 0; i < m->len; i++) {
        kwn[i] = m->e[i].key;
        v[l->len + i] = m->e[i].val;
    }
    return tpl_rb_send(vm, a[0], a[1].u.s, a[1].len, v, (int)l->len, kwn, v + l->len, (int)m->len, out);
}

/* (arity)(args, nreq, nmax, rest): args, the Array a splat call passes to a template method, when its size is
 * within the method's parameters; else Ruby's ArgumentError. rest (a method with a *rest parameter): no
 * upper bound, and the result is [args[0, nmax], "(rest)", args[nmax..]] (the positional arguments, then
 * the rest Array as the hidden keyword argument the call passes it by: compiler/lower_erb.c def_call). */
int r_k_arity(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (a[0].type != TPL_T_LIST || a[1].type != TPL_T_INT || a[2].type != TPL_T_INT)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "bad argument list");
    int64_t n = a[0].u.list->len, lo = a[1].u.i, hi = a[2].u.i;
    if (tpl_given(a[3]) && tpl_truthy_rb(a[3])) {
        if (n < lo) return tpl_vm_error(vm, TPL_ERR_VALUE, "wrong number of arguments (given %lld, expected %lld+) (ArgumentError)", (long long)n, (long long)lo);
        uint32_t k = n < hi ? (uint32_t)n : (uint32_t)hi;
        const tpl_list *l = a[0].u.list;
        tpl_list *head = new_list(vm, k), *tail = new_list(vm, (uint32_t)n - k), *r = new_list(vm, 3);
        if (!head || !tail || !r) return oom(vm);
        for (uint32_t i = 0; i < (uint32_t)n; i++) {
            if (i < k) head->items[head->len++] = l->items[i];
            else tail->items[tail->len++] = l->items[i];
        }
        r->items[0] = tpl_v_list(head);
        r->items[1] = tpl_v_str("(rest)", 6);
        r->items[1].flags |= TPL_F_SYMBOL;   /* (a def's keyword names are Symbols: runtime/vm.c call_macro) */
        r->items[2] = tpl_v_list(tail);
        r->items[2].flags = TPL_F_MUT_RB;   /* (a new Array, as Ruby's) */
        r->len = 3;
        *out = tpl_v_list(r);
        return 0;
    }
    if (n < lo || n > hi) {
        if (lo == hi) return tpl_vm_error(vm, TPL_ERR_VALUE, "wrong number of arguments (given %lld, expected %lld) (ArgumentError)", (long long)n, (long long)lo);
        return tpl_vm_error(vm, TPL_ERR_VALUE, "wrong number of arguments (given %lld, expected %lld..%lld) (ArgumentError)", (long long)n, (long long)lo, (long long)hi);
    }
    *out = a[0];
    return 0;
}

/* Array#cycle(n = nil) { |x| }: the items n times over (without n until a break); nil. Without a block
 * (the Enumerator) the items n times over as one array; an endless one (no n) is refused. */
int r_arr_cycle(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *l = L_(a[0]);
    tpl_rb_block blk = tpl_vm_block(vm);
    bool count = tpl_given(a[1]) && a[1].type != TPL_T_NONE;
    if (count && long_arg(vm, &a[1]) < 0) return -1;
    int64_t n = count ? (a[1].u.i < 0 ? 0 : a[1].u.i) : -1;
    *out = tpl_v_none();
    if (!blk.pc) {
        if (!count) return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: cycle without a block or a count (an endless Enumerator)");
        if (!l->len) n = 0;   /* ([].cycle(10**18) is [] at once: the loop below ran n times over nothing) */
        if ((uint64_t)n > 10000000 / (l->len ? l->len : 1))   /* (n * len overflowed: cycle(2**62) of 4 items wrote past the list) */
            return tpl_vm_error(vm, TPL_ERR_LIMIT, "array too long");
        tpl_list *r = new_list(vm, (uint32_t)(n * l->len) + 1);
        if (!r) return oom(vm);
        for (int64_t k = 0; k < n; k++) mcpy_items(r->items, (uint32_t)(k * l->len), l->items, 0, l->len);
        r->len = (uint32_t)(n * l->len);
        *out = tpl_v_list(r);
        return 0;
    }
    tpl_value r;
    for (int64_t k = 0; (n < 0 || k < n) && l->len; k++) {
        uint32_t len = l->len;   /* (the block may change the array: Ruby reads its length each time) */
        for (uint32_t i = 0; i < len && i < l->len; i++) YIELD(blk, &l->items[i], 1, &r);
    }
    *out = tpl_v_none();
    return 0;
}

/* a.cycle.first(k) / a.cycle.take(k): the first k items of the endless Enumerator (Ruby's errors for k). */
static int cycle_take(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *l = L_(a[0]);
    if (long_arg(vm, &a[1]) < 0) return -1;
    if (a[1].u.i < 0)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "attempt to take negative size (ArgumentError)");
    uint64_t k = l->len ? (uint64_t)a[1].u.i : 0;
    if (k > 10000000) return tpl_vm_error(vm, TPL_ERR_LIMIT, "array too long");
    tpl_list *r = new_list(vm, (uint32_t)k + 1);
    if (!r) return oom(vm);
    for (uint64_t i = 0; i < k; i++) r->items[i] = l->items[i % l->len];
    r->len = (uint32_t)k;
    *out = tpl_v_list(r);
    return 0;
}
int r_arr_cycle_first(tpl_vm *vm, tpl_value *a, tpl_value *out) { return cycle_take(vm, a, out); }
int r_arr_cycle_take(tpl_vm *vm, tpl_value *a, tpl_value *out) { return cycle_take(vm, a, out); }

/* Object#then / #yield_self { |x| }: the block's value; #tap { |x| }: self, after the block ran. Without
 * a block then/yield_self answer an Enumerator in Ruby (refused here), tap is Ruby's LocalJumpError. */
static int then_tap(tpl_vm *vm, tpl_value *a, tpl_value *out, bool tap)
{
    tpl_rb_block blk = tpl_vm_block(vm);
    if (!blk.pc) {
        if (tap) return tpl_vm_error(vm, TPL_ERR_TYPE, "no block given (LocalJumpError)");
        return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: then without a block (an Enumerator)");
    }
    tpl_value r;
    int yr = tpl_rb_yield(vm, &blk, &a[0], 1, &r);
    if (yr < 0) return -1;
    *out = yr > 0 || !tap ? r : a[0];
    return 0;
}

int r_any_then(tpl_vm *vm, tpl_value *a, tpl_value *out) { return then_tap(vm, a, out, false); }
int r_any_tap(tpl_vm *vm, tpl_value *a, tpl_value *out) { return then_tap(vm, a, out, true); }

/* ---- bang methods (issue 15): sort!, uniq!, map!, select!, strip!, gsub!, ... ----
 * The method without the bang computes the new contents; an array or hash takes them in place (rb_own:
 * every variable holding it sees the change) and a string is answered, which the lowering stores back
 * into the receiver's variable when it is not nil (strings are values). Ruby answers nil when nothing
 * changed for many of them: BANG_SELF never, BANG_LEN when the size is the same (select!, uniq!,
 * compact!; a string: the same bytes), BANG_EQ when == (flatten!), BANG_MATCH when the pattern did not
 * match (sub!, gsub!: even a replacement by the same text is a change). */
enum { BANG_SELF, BANG_LEN, BANG_EQ, BANG_MATCH };
typedef int (*rb_method_fn)(tpl_vm *, tpl_value *, tpl_value *);

static int bang(tpl_vm *vm, tpl_value *a, tpl_value *out, rb_method_fn base, int mode)
{
    tpl_value self = a[0], r;
    if (self.type == TPL_T_STR) {
        if (self.flags & TPL_F_FROZEN_RB) return frozen_error(vm, self);
        if (base(vm, a, &r) < 0) return -1;
        if (r.type != TPL_T_STR) { *out = r; return 0; }   /* a block's break */
        bool same = mode == BANG_MATCH ? tpl_vm_rb_match(vm).type == TPL_T_NONE
                  : mode != BANG_SELF && r.len == self.len && memcmp(r.u.s, self.u.s, r.len) == 0;
        *out = same ? tpl_v_none() : r;
        return 0;
    }
    if (is_frozen_ct(self)) return frozen_ct_error(vm, self);
    /* the method without the bang iterates over the items as they are now (the block may change self) */
    tpl_value snap = self;
    if (self.type == TPL_T_LIST) {
        tpl_list *l = tpl_arena_alloc(A(vm), sizeof *l);
        if (!l) return oom(vm);
        *l = *self.u.list;
        l->cap = l->len;
        snap.u.list = l;
    } else {
        tpl_map *m = tpl_arena_alloc(A(vm), sizeof *m);
        if (!m) return oom(vm);
        *m = *self.u.map;
        m->cap = m->len;
        m->idx_cap = 0;
        m->idx = NULL;
        snap.u.map = m;
    }
    snap.flags &= (uint8_t)~TPL_F_MUT_RB;
    a[0] = snap;
    int rc = base(vm, a, &r);
    a[0] = self;
    if (rc < 0) return -1;
    if (r.type != self.type) { *out = r; return 0; }   /* a block's break */
    bool same = false;
    if (self.type == TPL_T_LIST) {
        if (mode == BANG_LEN) same = r.u.list->len == self.u.list->len;
        else if (mode == BANG_EQ && tpl_vm_rb_equal(vm, self, r, &same) < 0) return -1;
    } else {
        same = mode != BANG_SELF && r.u.map->len == self.u.map->len;
    }
    if (same) { *out = tpl_v_none(); return 0; }
    tpl_value own;
    if (rb_own(vm, self, &own) < 0) return -1;
    if (own.type == TPL_T_LIST) {
        tpl_list *l = own.u.list, *n = r.u.list;
        if (list_reserve(vm, l, n->len) < 0) return -1;
        mcpy_items(l->items, 0, n->items, 0, n->len);
        l->len = n->len;
    } else {
        tpl_map *m = own.u.map, *n = r.u.map;
        m->len = 0;
        if (m->idx_cap) memset(m->idx, 0, (size_t)m->idx_cap * sizeof *m->idx);
        for (uint32_t i = 0; i < n->len; i++)
            if (!tpl_map_append(A(vm), m, n->e[i].key, n->e[i].hash, n->e[i].val)) return oom(vm);
    }
    *out = own;
    return 0;
}

#define BANG(fn, base, mode) int fn(tpl_vm *vm, tpl_value *a, tpl_value *out) { return bang(vm, a, out, base, mode); }
BANG(r_arr_sort_bang, r_arr_sort, BANG_SELF)
BANG(r_arr_sort_by_bang, r_arr_sort_by, BANG_SELF)
BANG(r_arr_map_bang, r_arr_map, BANG_SELF)
BANG(r_arr_select_bang, r_arr_select, BANG_LEN)
BANG(r_arr_keep_if, r_arr_select, BANG_SELF)
BANG(r_arr_reject_bang, r_arr_reject, BANG_LEN)
BANG(r_arr_delete_if, r_arr_reject, BANG_SELF)
BANG(r_arr_uniq_bang, r_arr_uniq, BANG_LEN)
BANG(r_arr_compact_bang, r_arr_compact, BANG_LEN)
BANG(r_arr_flatten_bang, r_arr_flatten, BANG_EQ)
BANG(r_arr_reverse_bang, r_arr_reverse, BANG_SELF)
BANG(r_arr_rotate_bang, r_arr_rotate, BANG_SELF)
BANG(r_hash_select_bang, r_hash_select, BANG_LEN)
BANG(r_hash_keep_if, r_hash_select, BANG_SELF)
BANG(r_hash_reject_bang, r_hash_reject, BANG_LEN)
BANG(r_hash_delete_if, r_hash_reject, BANG_SELF)
BANG(r_hash_compact_bang, r_hash_compact, BANG_LEN)
BANG(r_hash_transform_values_bang, r_hash_transform_values, BANG_SELF)
BANG(r_hash_transform_keys_bang, r_hash_transform_keys, BANG_SELF)
BANG(r_str_strip_bang, r_str_strip, BANG_LEN)
BANG(r_str_lstrip_bang, r_str_lstrip, BANG_LEN)
BANG(r_str_rstrip_bang, r_str_rstrip, BANG_LEN)
BANG(r_str_chomp_bang, r_str_chomp, BANG_LEN)
BANG(r_str_chop_bang, r_str_chop, BANG_LEN)
BANG(r_str_upcase_bang, r_str_upcase, BANG_LEN)
BANG(r_str_downcase_bang, r_str_downcase, BANG_LEN)
BANG(r_str_capitalize_bang, r_str_capitalize, BANG_LEN)
BANG(r_str_swapcase_bang, r_str_swapcase, BANG_LEN)
BANG(r_str_squeeze_bang, r_str_squeeze, BANG_LEN)
BANG(r_str_delete_bang, r_str_delete, BANG_LEN)
BANG(r_str_tr_bang, r_str_tr, BANG_LEN)
BANG(r_str_sub_bang, r_str_sub, BANG_MATCH)
BANG(r_str_gsub_bang, r_str_gsub, BANG_MATCH)
BANG(r_str_reverse_bang, r_str_reverse, BANG_SELF)
BANG(r_str_succ_bang, r_str_succ, BANG_SELF)
#undef BANG

/* Hash#merge! / #update(*others) { |k, old, new| }: the others' pairs set into self, answering self. */
int r_hash_update(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *others = L_(a[1]);
    for (uint32_t k = 0; k < others->len; k++)
        if (others->items[k].type != TPL_T_MAP) return type_error(vm, TPL_VT_DICT, others->items[k]);
    if (rb_own(vm, a[0], out) < 0) return -1;
    tpl_map *r = out->u.map;
    tpl_rb_block blk = tpl_vm_block(vm);
    for (uint32_t k = 0; k < others->len; k++) {
        tpl_map *o = others->items[k].u.map;
        for (uint32_t i = 0; i < o->len; i++) {
            tpl_value v = o->e[i].val, *old = blk.pc ? tpl_map_get(r, o->e[i].key) : NULL;
            if (old) {
                tpl_value args[3] = { o->e[i].key, *old, v };
                YIELD(blk, args, 3, &v);
            }
            if (!tpl_map_set(A(vm), r, o->e[i].key, v)) return oom(vm);
        }
    }
    if (fuel_out(vm)) return tpl_vm_nomem(vm);
    return 0;
}

/* Array#push / append / << (*items): appended in place, answering self. */
int r_arr_push(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *more = L_(a[1]);
    if (rb_own(vm, a[0], out) < 0) return -1;
    tpl_list *l = out->u.list;
    if (list_reserve(vm, l, (uint64_t)l->len + more->len) < 0) return -1;
    mcpy_items(l->items, l->len, more->items, 0, more->len);
    l->len += more->len;
    return 0;
}

/* Array#<<(item): push of one item (send(:<<, a, b) is an ArgumentError, as Ruby's). */
int r_arr_shovel(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list one = { 1, 1, &a[1] };
    tpl_value b[2] = { a[0], tpl_v_list(&one) };
    return r_arr_push(vm, b, out);
}

/* Array#concat(*arrays): their items appended in place, answering self. */
int r_arr_concat(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *more = L_(a[1]);
    uint64_t n = 0;
    for (uint32_t i = 0; i < more->len; i++) {
        tpl_value o = more->items[i];
        if (!is_array(o)) return type_error(vm, TPL_VT_LIST, o);
        n += L_(o)->len;
    }
    if (rb_own(vm, a[0], out) < 0) return -1;
    tpl_list *l = out->u.list;
    uint32_t len0 = l->len;
    if (list_reserve(vm, l, (uint64_t)len0 + n) < 0) return -1;
    for (uint32_t i = 0; i < more->len; i++) {
        tpl_list *o = L_(more->items[i]);
        /* a.concat(a): the items as they were before */
        uint32_t on = o == l ? len0 : o->len;
        mcpy_items(l->items, l->len, o->items, 0, on);
        l->len += on;
    }
    return 0;
}

/* Array#insert(index, *items) (unshift / prepend: index 0): the items placed before index, in place,
 * nil-padded past the end; answering self. */
static int insert_at(tpl_vm *vm, tpl_value self, int64_t i, const tpl_list *items, tpl_value *out)
{
    if (rb_own(vm, self, out) < 0) return -1;
    tpl_list *l = out->u.list;
    uint32_t at = (uint32_t)i, len0 = l->len, k = items->len;
    uint64_t n = (uint64_t)(at > len0 ? at : len0) + k;
    if (list_reserve(vm, l, n) < 0) return -1;
    if (at >= len0) {
        for (uint32_t j = len0; j < at; j++) l->items[j] = tpl_v_none();
    } else {
        memmove(l->items + at + k, l->items + at, (size_t)(len0 - at) * sizeof *l->items);
    }
    mcpy_items(l->items, at, items->items, 0, k);
    l->len = (uint32_t)n;
    return 0;
}

int r_arr_unshift(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (L_(a[1])->len == 0) return rb_own(vm, a[0], out);
    return insert_at(vm, a[0], 0, L_(a[1]), out);
}

/* String#freeze / #dup / #+@ / #-@ : the frozen flag (TPL_F_FROZEN_RB); values are immutable, so
 * a copy is the same bytes. */
int r_str_freeze(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    (void)vm;
    *out = a[0];
    if (!(out->flags & (TPL_F_SYMBOL | TPL_F_REGEX_RB | TPL_F_CLASS_RB))) out->flags |= TPL_F_FROZEN_RB;
    return 0;
}

int r_str_dup(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    (void)vm;
    *out = a[0];
    out->flags &= (uint8_t)~TPL_F_FROZEN_RB;
    return 0;
}

int r_num_uplus(tpl_vm *vm, tpl_value *a, tpl_value *out) { (void)vm; *out = a[0]; return 0; }

/* ------------------------------------------------------------------ issue 15: the Ruby core
 * real templates call (String, Integer/Float, Array/Enumerable, Hash, Range), as Ruby 3.1. */

/* Byte offset of code point ci in s (ci in 0..length), found by walking the UTF-8. */
static size_t cp_byte(tpl_value s, int64_t ci)
{
    size_t i = 0;
    for (int64_t k = 0; k < ci && i < s.len; k++) tpl_utf8_next(s.u.s, s.len, &i);
    return i;
}

static int64_t byte_cp(tpl_value s, size_t b) { return (int64_t)tpl_utf8_len(s.u.s, b); }

/* A list of n items from v (n may be 0). */
static tpl_list *list_of(tpl_vm *vm, const tpl_value *v, uint32_t n)
{
    tpl_list *l = new_list(vm, n);
    if (!l) return NULL;
    mcpy_items(l->items, 0, v, 0, n);
    l->len = n;
    return l;
}

static tpl_value pair(tpl_vm *vm, tpl_value x, tpl_value y)
{
    tpl_value v[2] = { x, y };
    tpl_list *l = list_of(vm, v, 2);
    return l ? tpl_v_list(l) : tpl_v_none();
}

/* String#index(pattern, start = 0) / #rindex(pattern, start = length): the code point index of the
 * first (last) match starting at or after (at or before) start, or nil. */
static int str_index(tpl_vm *vm, tpl_value *a, tpl_value *out, bool rev)
{
    tpl_value s = a[0], p = a[1];
    int64_t len = byte_cp(s, s.len), st = rev ? len : 0;
    /* rb_str_index_m / rb_str_rindex_m: the position first (NUM2LONG; before the start: nil), then the pattern
     * (a Regexp, else StringValue's TypeError), then a position past the end */
    if (tpl_given(a[2])) {
        tpl_value k = a[2];
        if (long_arg(vm, &k) < 0) return -1;
        st = k.u.i;
        if (st < 0) st += len;
        if (st < 0) { *out = tpl_v_none(); return 0; }
    }
    if (p.type != TPL_T_STR || (p.flags & (TPL_F_CLASS_RB | TPL_F_SYMBOL))) return type_error(vm, TPL_VT_STR, p);
    if (tpl_given(a[2])) {
        if (!rev && st > len) { *out = tpl_v_none(); return 0; }
        if (st > len) st = len;
    }
    size_t from = cp_byte(s, st);
    if (!(p.flags & TPL_F_REGEX_RB)) {
        const char *hit;
        if (rev) {
            size_t lim = from + p.len <= s.len ? from + p.len : s.len;
            hit = tpl_memrmem(s.u.s, lim, p.u.s, p.len);
        } else {
            hit = tpl_memmem(s.u.s + from, s.len - from, p.u.s, p.len);
        }
        *out = hit ? tpl_v_int(byte_cp(s, (size_t)(hit - s.u.s))) : tpl_v_none();
        return 0;
    }
    OnigRegex re = rx_compile(vm, p);
    if (!re) return -1;
    OnigRegion *reg = onig_region_new();
    long r = -1;
    if (!rev) {
        r = rx_search(vm, re, s, from, reg);
    } else {   /* the last start at or before `from` where the pattern matches */
        for (size_t at = from;;) {
            r = rx_run(vm, re, s, at, reg, true);
            if (r != -1 || at == 0) break;
            do at--; while (at > 0 && ((unsigned char)s.u.s[at] & 0xC0) == 0x80);
        }
    }
    tpl_value md = tpl_v_none();   /* (a Regexp's index and rindex set $~) */
    int rc = r >= 0 ? md_new(vm, s, p, re, reg, &md) : 0;
    onig_region_free(reg, 1);
    onig_free(re);
    if (r == -2 || rc < 0) return -1;
    tpl_vm_set_rb_match(vm, md);
    *out = r >= 0 ? tpl_v_int(byte_cp(s, (size_t)r)) : tpl_v_none();
    return 0;
}

int r_str_index(tpl_vm *vm, tpl_value *a, tpl_value *out) { return str_index(vm, a, out, false); }
int r_str_rindex(tpl_vm *vm, tpl_value *a, tpl_value *out) { return str_index(vm, a, out, true); }

/* The character sets of count / delete / squeeze (tr's syntax); a character is selected when
 * every set selects it (Ruby's intersection). */
typedef struct { tr_set *sets; uint32_t n; } tr_sets;

static int tr_sets_parse(tpl_vm *vm, tpl_list *args, const char *meth, bool need, tr_sets *ts)
{
    if (need && args->len == 0)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "wrong number of arguments (given 0, expected 1+) (ArgumentError)");
    (void)meth;
    ts->n = args->len;
    ts->sets = tpl_arena_alloc(A(vm), (args->len + 1) * sizeof *ts->sets);
    if (!ts->sets) return oom(vm);
    for (uint32_t i = 0; i < args->len; i++) {
        if (want_str(vm, args->items[i]) < 0) return -1;
        if (tr_parse(vm, args->items[i], true, &ts->sets[i]) < 0) return -1;
    }
    return 0;
}

static bool tr_sets_has(const tr_sets *ts, uint32_t c)
{
    for (uint32_t i = 0; i < ts->n; i++) {
        const tr_set *s = &ts->sets[i];
        bool hit = false;
        for (uint32_t k = 0; k < s->n && !hit; k++) hit = c >= s->r[k].lo && c <= s->r[k].hi;
        if (hit == s->neg) return false;
    }
    return true;
}

int r_str_count(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tr_sets ts;
    if (tr_sets_parse(vm, L_(a[1]), "count", true, &ts) < 0) return -1;
    int64_t n = 0;
    for (size_t i = 0; i < a[0].len;) n += tr_sets_has(&ts, tpl_utf8_next(a[0].u.s, a[0].len, &i));
    *out = tpl_v_int(n);
    return 0;
}

int r_str_delete(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    /* rb_str_delete_bang answers at once for an empty String, its arguments unread ("".delete(1) is "") */
    if (a[0].len == 0) { *out = tpl_v_str("", 0); return 0; }
    tr_sets ts;
    if (tr_sets_parse(vm, L_(a[1]), "delete", true, &ts) < 0) return -1;
    tpl_sb b;
    tpl_sb_init(&b, A(vm));
    for (size_t i = 0; i < a[0].len;) {
        size_t at = i;
        if (!tr_sets_has(&ts, tpl_utf8_next(a[0].u.s, a[0].len, &i))) tpl_sb_put(&b, a[0].u.s + at, i - at);
    }
    if (b.failed) return oom(vm);
    *out = tpl_sb_value(&b);
    return 0;
}

int r_str_squeeze(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tr_sets ts;
    if (tr_sets_parse(vm, L_(a[1]), "squeeze", false, &ts) < 0) return -1;
    tpl_sb b;
    tpl_sb_init(&b, A(vm));
    uint32_t prev = 0xFFFFFFFFu;
    for (size_t i = 0; i < a[0].len;) {
        size_t at = i;
        uint32_t c = tpl_utf8_next(a[0].u.s, a[0].len, &i);
        if (c == prev && tr_sets_has(&ts, c)) continue;
        prev = c;
        tpl_sb_put(&b, a[0].u.s + at, i - at);
    }
    if (b.failed) return oom(vm);
    *out = tpl_sb_value(&b);
    return 0;
}

/* Yields every item of l (or answers l itself without a block); the receiver with a block. */
static int yield_each(tpl_vm *vm, tpl_list *l, tpl_value self, tpl_value *out)
{
    tpl_rb_block blk = tpl_vm_block(vm);
    if (!blk.pc) { *out = tpl_v_list(l); return 0; }
    tpl_value r;
    for (uint32_t i = 0; i < l->len; i++) YIELD(blk, &l->items[i], 1, &r);
    *out = self;
    return 0;
}

/* String#each_char / chars (with a block: yields each, answers the receiver). */
int r_str_each_char(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *l;
    if (tpl_to_list(vm, a[0], &l) < 0) return -1;
    return yield_each(vm, l, a[0], out);
}

/* rb_get_kwargs' ArgumentError for the keywords of kw (a Hash, or unset) other than the one named
 * ok ("unknown keyword: :x", "unknown keywords: :x, :y"); 0 when there are none. */
static int kw_only(tpl_vm *vm, tpl_value kw, const char *ok)
{
    if (!tpl_given(kw) || kw.type != TPL_T_MAP) return 0;
    tpl_sb sb;
    tpl_sb_init(&sb, A(vm));
    int unknown = 0;
    for (uint32_t i = 0; i < kw.u.map->len; i++) {
        tpl_value k = kw.u.map->e[i].key;
        if (k.type == TPL_T_STR && k.len == strlen(ok) && memcmp(k.u.s, ok, k.len) == 0) continue;
        if (unknown++) tpl_sb_puts(&sb, ", ");
        if (k.type == TPL_T_STR) k.flags |= TPL_F_SYMBOL;   /* (a keyword's name, :x) */
        tpl_rb_inspect(&sb, k);
    }
    if (!unknown) return 0;
    if (sb.failed) return tpl_vm_sb_error(vm, &sb, "while listing keywords");
    return tpl_vm_error(vm, TPL_ERR_TYPE, "unknown keyword%s: %.*s (ArgumentError)", unknown > 1 ? "s" : "", (int)sb.len, sb.p ? sb.p : "");
}

/* String#lines / each_line(separator = "\n", chomp: false). */
int r_str_each_line(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (kw_only(vm, a[2], "chomp") < 0) return -1;
    tpl_value s = a[0], sep = tpl_v_str("\n", 1);
    if (tpl_given(a[1]) && a[1].type != TPL_T_NONE) {
        if (want_str(vm, a[1]) < 0) return -1;
        sep = a[1];
    }
    bool chomp = false;
    if (tpl_given(a[2]) && a[2].type == TPL_T_MAP) {
        tpl_value *c = tpl_map_get_str(a[2].u.map, "chomp", 5, tpl_hash_str("chomp", 5));
        chomp = c && tpl_truthy_rb(*c);
    }
    tpl_list *l = new_list(vm, 4);
    if (!l) return oom(vm);
    bool para = sep.len == 0;   /* "": paragraphs, separated by runs of newlines */
    size_t st = 0;
    while (st < s.len) {
        const char *hit = para ? tpl_memmem(s.u.s + st, s.len - st, "\n\n", 2) : tpl_memmem(s.u.s + st, s.len - st, sep.u.s, sep.len);
        size_t end, next;
        if (!hit) { end = next = s.len; }
        else {
            end = (size_t)(hit - s.u.s) + (para ? 2 : sep.len);
            next = end;
            if (para) while (next < s.len && s.u.s[next] == '\n') next++;
        }
        size_t keep = end;
        if (chomp && hit) keep = end - (para ? 2 : sep.len);
        else if (chomp && !para && sep.len == 1 && sep.u.s[0] == '\n' && keep > st && s.u.s[keep - 1] == '\n') keep--;
        if (chomp && hit && !para && sep.len == 1 && sep.u.s[0] == '\n' && keep > st && s.u.s[keep - 1] == '\r') keep--;
        if (!tpl_list_push(A(vm), l, tpl_v_str(s.u.s + st, keep - st))) return oom(vm);
        st = next;
    }
    return yield_each(vm, l, a[0], out);
}

/* String#succ / next: Ruby's rb_str_succ for ASCII alphanumerics (the rightmost one counts up,
 * carrying left through alphanumerics; a carry past the first adds 'a', 'A' or '1' in front of
 * it); a string without alphanumerics steps its last character. */
int r_str_succ(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value s = a[0];
    if (s.len == 0) { *out = s; out->flags = 0; return 0; }
    char *p = tpl_arena_alloc(A(vm), s.len + 2);
    if (!p) return oom(vm);
    mcpy(p, s.u.s, s.len);
    int64_t last_alnum = -1;
    for (int64_t i = (int64_t)s.len - 1; i >= 0 && last_alnum < 0; i--) {
        char c = p[i];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) last_alnum = i;
    }
    if (last_alnum < 0) {   /* no alphanumerics: the last character's code point + 1 */
        size_t i = 0, lastpos = 0;
        uint32_t c = 0;
        while (i < s.len) { lastpos = i; c = tpl_utf8_next(s.u.s, s.len, &i); }
        tpl_sb b;
        tpl_sb_init(&b, A(vm));
        tpl_sb_put(&b, s.u.s, lastpos);
        tpl_sb_put_cp(&b, c + 1 == 0xD800 ? 0xE000 : c + 1); /* (the surrogates are no characters) */
        if (b.failed) return oom(vm);
        *out = tpl_sb_value(&b);
        return 0;
    }
    /* rb_str_succ: right to left over alphanumerics; a run of other characters between a letter
     * and a digit (either way round) stops the carry */
    int64_t first = last_alnum;
    char carry_kind = 0, last_kind = 0;   /* last_kind: 'a' letter, '0' digit of the last wrapped */
    bool gap = false;
    for (int64_t i = last_alnum; i >= 0; i--) {
        char c = p[i];
        bool digit = c >= '0' && c <= '9', alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        if (gap && last_kind && ((last_kind == 'a' && digit) || (last_kind == '0' && alpha))) break;
        if (!digit && !alpha) { gap = true; continue; }
        gap = false;
        first = i;
        if (c == 'z') { p[i] = 'a'; carry_kind = 'a'; }
        else if (c == 'Z') { p[i] = 'A'; carry_kind = 'A'; }
        else if (c == '9') { p[i] = '0'; carry_kind = '1'; }
        else { p[i] = (char)(c + 1); carry_kind = 0; break; }
        last_kind = digit ? '0' : 'a';
    }
    if (!carry_kind) { *out = tpl_v_str(p, s.len); return 0; }
    char *q = tpl_arena_alloc(A(vm), s.len + 2);
    if (!q) return oom(vm);
    mcpy(q, p, (size_t)first);
    q[first] = carry_kind;
    mcpy(q + first + 1, p + first, s.len - (size_t)first);
    *out = tpl_v_str(q, s.len + 1);
    return 0;
}

int r_str_bytes(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *l = new_list(vm, a[0].len);
    if (!l) return oom(vm);
    for (uint32_t i = 0; i < a[0].len; i++) l->items[l->len++] = tpl_v_int((unsigned char)a[0].u.s[i]);
    return yield_each(vm, l, a[0], out);
}

int r_str_codepoints(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *l = new_list(vm, a[0].len);
    if (!l) return oom(vm);
    for (size_t i = 0; i < a[0].len;) l->items[l->len++] = tpl_v_int(tpl_utf8_next(a[0].u.s, a[0].len, &i));
    return yield_each(vm, l, a[0], out);
}

int r_str_bytesize(tpl_vm *vm, tpl_value *a, tpl_value *out) { (void)vm; *out = tpl_v_int(a[0].len); return 0; }

/* String#sum(bits = 16): the sum of the bytes modulo 2**bits (no modulo when bits <= 0) */
int r_str_sum(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    int64_t bits = 16;
    if (tpl_given(a[1])) {
        if (long_arg(vm, &a[1]) < 0) return -1;
        bits = a[1].u.i;
    }
    uint64_t sum = 0;
    for (uint32_t i = 0; i < a[0].len; i++) sum += (unsigned char)a[0].u.s[i];
    if (bits > 0 && bits < 63) sum &= ((uint64_t)1 << bits) - 1;
    *out = tpl_v_int((int64_t)sum);
    return 0;
}

int r_str_getbyte(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (long_arg(vm, &a[1]) < 0) return -1;
    int64_t i = a[1].u.i < 0 ? a[1].u.i + a[0].len : a[1].u.i;
    *out = i >= 0 && i < (int64_t)a[0].len ? tpl_v_int((unsigned char)a[0].u.s[i]) : tpl_v_none();
    return 0;
}

/* String#insert(index, other): other before the character at index (negative: after it); the
 * lowering stores the result back into the receiver's variable, as << does. */
int r_str_insert(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value s = a[0];
    if (s.flags & TPL_F_FROZEN_RB) return frozen_error(vm, s);
    if (long_arg(vm, &a[1]) < 0) return -1;
    if (want_str(vm, a[2]) < 0) return -1;
    int64_t len = byte_cp(s, s.len), i = a[1].u.i;
    if (i < 0) i += len + 1;
    if (i < 0 || i > len) return tpl_vm_error(vm, TPL_ERR_TYPE, "index %lld out of string (IndexError)", (long long)a[1].u.i);
    size_t at = cp_byte(s, i);
    tpl_sb b;
    tpl_sb_init(&b, A(vm));
    tpl_sb_put(&b, s.u.s, at);
    tpl_sb_put(&b, a[2].u.s, a[2].len);
    tpl_sb_put(&b, s.u.s + at, s.len - at);
    if (b.failed) return oom(vm);
    *out = tpl_sb_value(&b);
    return 0;
}

/* Comparable#between?(min, max) and #clamp(min, max) on any receiver, by <=>. */
int r_any_clamp(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    /* Comparable#clamp (cmp_clamp): clamp(range) takes the range's ends (exclusive only without an end);
     * a nil bound is none; min <=> max first, then x <=> min (0: x), then x <=> max */
    if (a[0].type == TPL_T_STR && (a[0].flags & (TPL_F_REGEX_RB | TPL_F_CLASS_RB | TPL_F_EXC_RB)))
        return no_method(vm, a[0], "clamp", 5);   /* (Regexp, Module, exceptions are not Comparable) */
    tpl_value lo = a[1], hi = a[2];
    if (!tpl_given(hi)) {
        if (!is_range(lo)) return tpl_vm_error(vm, TPL_ERR_TYPE, "wrong argument type %s (expected Range) (TypeError)", conv_name(lo));
        hi = lo.u.list->items[1];
        if (lo.u.list->items[2].u.i && hi.type != TPL_T_NONE)
            return tpl_vm_error(vm, TPL_ERR_TYPE, "cannot clamp with an exclusive range (ArgumentError)");
        lo = lo.u.list->items[0];
    }
    bool ok;
    int c;
    if (lo.type != TPL_T_NONE && hi.type != TPL_T_NONE) {
        c = rb_cmp(lo, hi, &ok, tpl_vm_arena(vm)->fuel);
        if (!ok) return cmp_error(vm, lo, hi);
        if (c > 0) return tpl_vm_error(vm, TPL_ERR_TYPE, "min argument must be smaller than max argument (ArgumentError)");
    }
    if (lo.type != TPL_T_NONE) {
        c = rb_cmp(a[0], lo, &ok, tpl_vm_arena(vm)->fuel);
        if (!ok) return cmp_error(vm, a[0], lo);
        if (c == 0) { *out = a[0]; return 0; }
        if (c < 0) { *out = lo; return 0; }
    }
    if (hi.type != TPL_T_NONE) {
        c = rb_cmp(a[0], hi, &ok, tpl_vm_arena(vm)->fuel);
        if (!ok) return cmp_error(vm, a[0], hi);
        if (c > 0) { *out = hi; return 0; }
    }
    *out = a[0];
    return 0;
}

int r_str_chop(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    (void)vm;
    tpl_value s = a[0];
    size_t n = s.len;
    if (n >= 2 && s.u.s[n - 2] == '\r' && s.u.s[n - 1] == '\n') n -= 2;
    else if (n) { n--; while (n > 0 && ((unsigned char)s.u.s[n] & 0xC0) == 0x80) n--; }
    *out = tpl_v_str(s.u.s, n);
    return 0;
}

int r_str_chr(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    (void)vm;
    size_t i = 0;
    if (a[0].len) tpl_utf8_next(a[0].u.s, a[0].len, &i);
    *out = tpl_v_str(a[0].u.s, i);
    return 0;
}

/* String#hex / #oct: the leading number (sign, 0x / 0b / 0o / 0 prefixes, underscores), 0 when none. */
static int str_radix(tpl_vm *vm, tpl_value s, int base, tpl_value *out)
{
    size_t i = 0;
    while (i < s.len && rb_space(s.u.s[i])) i++;
    bool neg = false;
    if (i < s.len && (s.u.s[i] == '-' || s.u.s[i] == '+')) neg = s.u.s[i++] == '-';
    if (i + 1 < s.len && s.u.s[i] == '0') {
        char x = (char)(s.u.s[i + 1] | 0x20);
        if (base == 16 && x == 'x') i += 2;
        else if (base == 8 && x == 'x') { base = 16; i += 2; }
        else if (base == 8 && x == 'b') { base = 2; i += 2; }
        else if (base == 8 && x == 'o') i += 2;
        else if (base == 8 && x == 'd') { base = 10; i += 2; }
    }
    int64_t v = 0;
    bool any = false, big = false;
    size_t first = i;
    for (; i < s.len; i++) {
        char c = s.u.s[i];
        if (c == '_' && any && i + 1 < s.len && s.u.s[i + 1] != '_') continue;
        int d = c >= '0' && c <= '9' ? c - '0' : (c | 0x20) >= 'a' && (c | 0x20) <= 'z' ? (c | 0x20) - 'a' + 10 : 99;
        if (d >= base) break;
        if (!big && (__builtin_mul_overflow(v, base, &v) || __builtin_add_overflow(v, d, &v))) big = true;
        any = true;
    }
    if (big) return str_big_int(vm, s.u.s, first, i, base, neg, out);
    *out = tpl_v_int(neg ? -v : v);
    return 0;
}

int r_str_hex(tpl_vm *vm, tpl_value *a, tpl_value *out) { return str_radix(vm, a[0], 16, out); }
int r_str_oct(tpl_vm *vm, tpl_value *a, tpl_value *out) { return str_radix(vm, a[0], 8, out); }

/* String#casecmp (ASCII case folded <=>; nil for a non-string) and casecmp? (Unicode folding;
 * tpl folds ASCII and compares the rest by bytes). */
static int casecmp_impl(tpl_vm *vm, tpl_value *a, tpl_value *out, bool pred)
{
    /* (a Symbol's casecmp takes a Symbol, a String's a String) */
    if (a[1].type != TPL_T_STR || (a[1].flags & (TPL_F_CLASS_RB | TPL_F_REGEX_RB)) || ((a[0].flags ^ a[1].flags) & TPL_F_SYMBOL)) {
        *out = tpl_v_none();
        return 0;
    }
    tpl_sb x, y;
    tpl_sb_init(&x, A(vm));
    tpl_sb_init(&y, A(vm));
    rb_lower(&x, a[0].u.s, a[0].len);
    rb_lower(&y, a[1].u.s, a[1].len);
    if (x.failed || y.failed) return oom(vm);
    bool ok;
    int c = rb_cmp(tpl_sb_value(&x), tpl_sb_value(&y), &ok, NULL);
    *out = pred ? tpl_v_bool(c == 0) : tpl_v_int(c);
    return 0;
}

int r_str_casecmp(tpl_vm *vm, tpl_value *a, tpl_value *out) { return casecmp_impl(vm, a, out, false); }
int r_str_casecmp_p(tpl_vm *vm, tpl_value *a, tpl_value *out) { return casecmp_impl(vm, a, out, true); }

static int affix_cut(tpl_vm *vm, tpl_value *a, tpl_value *out, bool prefix)
{
    if (want_str(vm, a[1]) < 0) return -1;
    tpl_value s = a[0], x = a[1];
    *out = tpl_v_str(s.u.s, s.len);
    if (x.len > s.len) return 0;
    if (prefix && memcmp(s.u.s, x.u.s, x.len) == 0) *out = tpl_v_str(s.u.s + x.len, s.len - x.len);
    if (!prefix && memcmp(s.u.s + s.len - x.len, x.u.s, x.len) == 0) *out = tpl_v_str(s.u.s, s.len - x.len);
    return 0;
}

int r_str_delete_prefix(tpl_vm *vm, tpl_value *a, tpl_value *out) { return affix_cut(vm, a, out, true); }
int r_str_delete_suffix(tpl_vm *vm, tpl_value *a, tpl_value *out) { return affix_cut(vm, a, out, false); }

/* String#partition / #rpartition(sep): [before, sep, after] around the first (last) match. */
static int str_partition(tpl_vm *vm, tpl_value *a, tpl_value *out, bool rev)
{
    tpl_value s = a[0], p = a[1];
    if (want_pattern(vm, p) < 0) return -1;
    size_t at = 0, mlen = 0;
    bool hit = false;
    if (!(p.flags & TPL_F_REGEX_RB)) {
        const char *h = rev ? tpl_memrmem(s.u.s, s.len, p.u.s, p.len) : tpl_memmem(s.u.s, s.len, p.u.s, p.len);
        if (h) { hit = true; at = (size_t)(h - s.u.s); mlen = p.len; }
    } else {
        tpl_value args[3] = { s, p, tpl_v_unset() }, idx;
        if (str_index(vm, args, &idx, rev) < 0) return -1;
        if (idx.type == TPL_T_INT) {
            OnigRegex re = rx_compile(vm, p);
            if (!re) return -1;
            OnigRegion *reg = onig_region_new();
            at = cp_byte(s, idx.u.i);
            long r = rx_run(vm, re, s, at, reg, true);
            if (r >= 0) { hit = true; mlen = (size_t)(reg->end[0] - reg->beg[0]); }
            onig_region_free(reg, 1);
            onig_free(re);
            if (r == -2) return -1;
        }
    }
    tpl_value v[3];
    if (!hit) {
        tpl_value e = tpl_v_str("", 0);
        v[0] = rev ? e : tpl_v_str(s.u.s, s.len);
        v[1] = e;
        v[2] = rev ? tpl_v_str(s.u.s, s.len) : e;
    } else {
        v[0] = tpl_v_str(s.u.s, at);
        v[1] = tpl_v_str(s.u.s + at, mlen);
        v[2] = tpl_v_str(s.u.s + at + mlen, s.len - at - mlen);
    }
    tpl_list *l = list_of(vm, v, 3);
    if (!l) return oom(vm);
    *out = tpl_v_list(l);
    return 0;
}

int r_str_partition(tpl_vm *vm, tpl_value *a, tpl_value *out) { return str_partition(vm, a, out, false); }
int r_str_rpartition(tpl_vm *vm, tpl_value *a, tpl_value *out) { return str_partition(vm, a, out, true); }

int r_str_ascii_only_p(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    (void)vm;
    bool ok = true;
    for (uint32_t i = 0; i < a[0].len && ok; i++) ok = (unsigned char)a[0].u.s[i] < 0x80;
    *out = tpl_v_bool(ok);
    return 0;
}

/* String#encoding and __ENCODING__: templates and their strings are UTF-8 (an Encoding prints
 * its name; tpl has no Encoding objects, so it is that name). */
int r_str_encoding_lit(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    (void)vm;
    if (a[0].flags & TPL_F_SYMBOL) {   /* a Symbol of ASCII characters only is US-ASCII (rb_enc_symname_type) */
        bool ascii = true;
        for (uint32_t i = 0; i < a[0].len && ascii; i++) ascii = (unsigned char)a[0].u.s[i] < 0x80;
        if (ascii) { *out = tpl_v_str("US-ASCII", 8); return 0; }
    }
    *out = tpl_v_str("UTF-8", 5);
    return 0;
}
/* String#encoding of a string the template computed (the lowering names a literal's
 * "(encoding_lit)"): Ruby's is US-ASCII (Integer#to_s, chr, inspect, join of those) or UTF-8 by
 * where it came from, which tpl's strings do not record: a Symbol's, and UTF-8 for a String of a JSON state or
 * a part of one (tpl_vm_json_state_str: its bytes are the state's; to_sym copies them), else refused (a host's
 * state: the Ruby gem borrows US-ASCII and UTF-8 Strings alike). */
int r_str_encoding(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (a[0].flags & TPL_F_SYMBOL) return r_str_encoding_lit(vm, a, out);
    /* a String of the JSON state (or a part of one): UTF-8, as Ruby's JSON.parse makes it */
    if (!(a[0].flags & (TPL_F_REGEX_RB | TPL_F_CLASS_RB | TPL_F_EXC_RB)) && tpl_vm_json_state_str(vm, a[0]))
        return r_str_encoding_lit(vm, a, out);
    return tpl_vm_error(vm, TPL_ERR_SYNTAX, "unsupported Ruby construct: the encoding of a computed string (Ruby's is US-ASCII or "
                        "UTF-8 by where the string came from, which tpl's strings do not record)");
}
/* force_encoding / encode / scrub / unicode_normalize? no: the same UTF-8 string. */
/* Whether v names UTF-8 (any case), the one encoding tpl's strings have. */
static bool utf8_name(tpl_value v)
{
    static const char u[] = "utf-8";
    if (v.type != TPL_T_STR || v.len != 5) return false;
    for (int i = 0; i < 5; i++)
        if ((v.u.s[i] | (v.u.s[i] >= 'A' && v.u.s[i] <= 'Z' ? 0x20 : 0)) != u[i]) return false;
    return true;
}

/* String#force_encoding / #encode: tpl's strings are UTF-8, so to UTF-8 (from UTF-8, with the
 * invalid/undef/replace/fallback options valid UTF-8 never uses) they are the same text; any other
 * encoding is tpl's refusal (its bytes, length and inspect would differ from Ruby's). */
static int str_encoding_to(tpl_vm *vm, const char *m, tpl_value enc, tpl_value *out, tpl_value self)
{
    if (tpl_given(enc) && (enc.type != TPL_T_STR || (enc.flags & (TPL_F_SYMBOL | TPL_F_REGEX_RB | TPL_F_CLASS_RB | TPL_F_EXC_RB))))
        return tpl_vm_error(vm, TPL_ERR_TYPE, "no implicit conversion of %s into String (TypeError)", conv_name(enc));   /* (rb_to_encoding) */
    if (tpl_given(enc) && !utf8_name(enc)) {
        tpl_value e = enc.type == TPL_T_STR ? enc : tpl_v_str("?", 1);
        return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: String#%s(\"%.*s\"): tpl's strings are UTF-8", m,
                            (int)(e.len > 40 ? 40 : e.len), e.u.s);
    }
    *out = self;
    out->flags &= (uint8_t)~TPL_F_FROZEN_RB;
    return 0;
}
int r_str_force_encoding(tpl_vm *vm, tpl_value *a, tpl_value *out) { return str_encoding_to(vm, "force_encoding", a[1], out, a[0]); }
int r_str_encode(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value xml = tpl_v_none();
    if (a[3].type == TPL_T_MAP) {
        const tpl_map *o = a[3].u.map;
        for (uint32_t i = 0; i < o->len; i++) {
            tpl_value k = o->e[i].key;
            bool ok = k.type == TPL_T_STR && ((k.len == 7 && !memcmp(k.u.s, "invalid", 7)) || (k.len == 5 && !memcmp(k.u.s, "undef", 5)) ||
                                              (k.len == 7 && !memcmp(k.u.s, "replace", 7)) || (k.len == 8 && !memcmp(k.u.s, "fallback", 8)));
            if (k.type == TPL_T_STR && k.len == 3 && !memcmp(k.u.s, "xml", 3)) { xml = o->e[i].val; ok = true; }
            if (!ok) return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: String#encode with the option %.*s:",
                                         k.type == TPL_T_STR ? (int)(k.len > 40 ? 40 : k.len) : 1, k.type == TPL_T_STR ? k.u.s : "?");
        }
    }
    bool text = false, attr = false;   /* xml: :text / :attr (transcode.c econv_opts): XML's escapes, :attr quoted */
    if (xml.type != TPL_T_NONE && xml.type != TPL_T_UNDEF) {
        bool sym = xml.type == TPL_T_STR && (xml.flags & TPL_F_SYMBOL);
        text = sym && xml.len == 4 && !memcmp(xml.u.s, "text", 4);
        attr = sym && xml.len == 4 && !memcmp(xml.u.s, "attr", 4);
        if (!text && !attr && sym)
            return tpl_vm_error(vm, TPL_ERR_TYPE, "unexpected value for xml option: %.*s (ArgumentError)", (int)xml.len, xml.u.s);
        if (!text && !attr) return tpl_vm_error(vm, TPL_ERR_TYPE, "unexpected value for xml option (ArgumentError)");
    }
    int r = tpl_given(a[2]) && !utf8_name(a[2]) ? str_encoding_to(vm, "encode", a[2], out, a[0])
                                                : str_encoding_to(vm, "encode", a[1], out, a[0]);
    if (r < 0 || (!text && !attr)) return r;
    tpl_sb b;
    tpl_sb_init(&b, A(vm));
    if (attr) tpl_sb_putc(&b, '"');
    for (size_t i = 0; i < out->len; i++) {
        char c = out->u.s[i];
        if (c == '&') tpl_sb_puts(&b, "&amp;");
        else if (c == '<') tpl_sb_puts(&b, "&lt;");
        else if (c == '>') tpl_sb_puts(&b, "&gt;");
        else if (attr && c == '"') tpl_sb_puts(&b, "&quot;");
        else if (attr && c == '\'') tpl_sb_puts(&b, "&apos;");
        else tpl_sb_putc(&b, c);
    }
    if (attr) tpl_sb_putc(&b, '"');
    if (b.failed) return oom(vm);
    *out = tpl_sb_value(&b);
    return 0;
}
int r_str_same(tpl_vm *vm, tpl_value *a, tpl_value *out) { (void)vm; *out = a[0]; out->flags &= (uint8_t)~TPL_F_FROZEN_RB; return 0; }
int r_any_true(tpl_vm *vm, tpl_value *a, tpl_value *out) { (void)vm; (void)a; *out = tpl_v_bool(true); return 0; }

/* String#upto(last, exclusive = false): the members of self..last, yielded or as an array. */
int r_str_upto(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (want_str(vm, a[1]) < 0) return -1;
    tpl_value r = tpl_v_none();
    if (tpl_rb_range(vm, a[0], a[1], tpl_given(a[2]) && tpl_truthy_rb(a[2]), &r) < 0) return -1;
    tpl_list *l = NULL;
    if (range_list(vm, r, &l) < 0) return -1;
    return yield_each(vm, l, a[0], out);
}

/* ---- Integer / Float */

/* Integer#upto / #downto(limit): self, self ± 1, ... to limit, yielded (or as an array). */
static int int_walk(tpl_vm *vm, tpl_value *a, tpl_value *out, int dir, const char *meth)
{
    if (want_int(vm, a[0], meth) < 0) return -1;
    if (a[1].type == TPL_T_BIGINT) {   /* a limit past 64 bits: nothing to walk, or a walk only a break ends */
        if ((a[1].u.s[0] == '-') == (dir > 0)) {
            if (!tpl_vm_block(vm).pc) {
                tpl_list *l = new_list(vm, 0);
                if (!l) return oom(vm);
                *out = tpl_v_list(l);
                return 0;
            }
            *out = a[0];
            return 0;
        }
        a[1] = tpl_v_int(dir > 0 ? INT64_MAX : INT64_MIN);
    }
    if (!is_num(a[1])) return cmp_fail(vm, a[0], a[1]);
    int64_t b = a[0].u.i;
    double lim = dbl(a[1]);
    int64_t e = a[1].type == TPL_T_INT ? a[1].u.i : (int64_t)(dir > 0 ? floor(lim) : ceil(lim));
    if (a[1].type == TPL_T_FLOAT && (isnan(lim) || lim > 9e18 || lim < -9e18))
        return tpl_vm_error(vm, TPL_ERR_LIMIT, "%s: too many iterations", meth);
    uint64_t n = dir > 0 ? (e >= b ? (uint64_t)e - (uint64_t)b + 1 : 0) : (b >= e ? (uint64_t)b - (uint64_t)e + 1 : 0);
    tpl_rb_block blk = tpl_vm_block(vm);
    if (!blk.pc) {
        if (n > 10000000) return tpl_vm_error(vm, TPL_ERR_LIMIT, "%s: too many iterations", meth);
        tpl_list *l = new_list(vm, (uint32_t)n);
        if (!l) return oom(vm);
        for (uint64_t k = 0; k < n; k++) l->items[l->len++] = tpl_v_int(b + (int64_t)k * dir);
        *out = tpl_v_list(l);
        return 0;
    }
    tpl_value r = tpl_v_none();
    for (uint64_t k = 0; k < n; k++) {
        tpl_value iv = tpl_v_int(b + (int64_t)k * dir);
        YIELD(blk, &iv, 1, &r);
    }
    *out = a[0];
    return 0;
}

int r_num_upto(tpl_vm *vm, tpl_value *a, tpl_value *out) { return int_walk(vm, a, out, 1, "upto"); }
int r_num_downto(tpl_vm *vm, tpl_value *a, tpl_value *out) { return int_walk(vm, a, out, -1, "downto"); }

/* Numeric#step(limit = nil, step = 1): integers exactly; floats as Ruby's ruby_float_step (n steps
 * counted once, with the same rounding allowance, the last value clamped to the limit). */
int r_num_step(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value lim = tpl_given(a[1]) ? a[1] : tpl_v_none(), st = tpl_given(a[2]) ? a[2] : tpl_v_int(1);
    /* step(by: s, to: e) and step(e, by: s): the keywords are the trailing Hash */
    tpl_value kw = tpl_given(a[2]) ? a[2] : tpl_given(a[1]) ? a[1] : tpl_v_none();
    if (kw.type == TPL_T_MAP) {
        if (tpl_given(a[2])) st = tpl_v_int(1); else lim = tpl_v_none();
        for (uint32_t i = 0; i < kw.u.map->len; i++) {
            tpl_value k = kw.u.map->e[i].key;
            if (k.type == TPL_T_STR && k.len == 2 && !memcmp(k.u.s, "by", 2)) st = kw.u.map->e[i].val;
            else if (k.type == TPL_T_STR && k.len == 2 && !memcmp(k.u.s, "to", 2)) lim = kw.u.map->e[i].val;
            else if (k.type == TPL_T_STR) return tpl_vm_error(vm, TPL_ERR_TYPE, "unknown keyword: :%.*s (ArgumentError)", (int)k.len, k.u.s);
            else return cmp_fail(vm, a[0], kw);
        }
    }
    if (!is_num(st)) return tpl_vm_error(vm, TPL_ERR_TYPE, "step must be numeric (ArgumentError)");
    if (dbl(st) == 0) return tpl_vm_error(vm, TPL_ERR_TYPE, "step can't be 0 (ArgumentError)");
    if (lim.type == TPL_T_NONE) return tpl_vm_error(vm, TPL_ERR_LIMIT, "step: an endless step is not supported");
    if (!is_num(lim)) return cmp_fail(vm, a[0], lim);
    tpl_list *l = new_list(vm, 8);
    if (!l) return oom(vm);
    if (a[0].type == TPL_T_INT && lim.type == TPL_T_INT && st.type == TPL_T_INT) {
        int64_t b = a[0].u.i, e = lim.u.i, s = st.u.i;
        uint64_t n = s > 0 ? (e >= b ? ((uint64_t)e - (uint64_t)b) / (uint64_t)s + 1 : 0)
                           : (b >= e ? ((uint64_t)b - (uint64_t)e) / (uint64_t)(-(s + 1) + 1ull) + 1 : 0);
        if (n > 10000000) return tpl_vm_error(vm, TPL_ERR_LIMIT, "step: too many iterations");
        for (uint64_t k = 0; k < n; k++) if (!tpl_list_push(A(vm), l, tpl_v_int(b + (int64_t)k * s))) return oom(vm);
    } else {
        double b = dbl(a[0]), e = dbl(lim), s = dbl(st);
        double n = (e - b) / s, err = (fabs(b) + fabs(e) + fabs(e - b)) / fabs(s) * DBL_EPSILON;
        if (isinf(s)) { n = s > 0 ? (b <= e ? 0 : -1) : (b >= e ? 0 : -1); err = 0; }
        if (err > 0.5) err = 0.5;
        n = floor(n + err);
        if (!(n < 10000000)) return tpl_vm_error(vm, TPL_ERR_LIMIT, "step: too many iterations");
        for (int64_t k = 0; k <= (int64_t)n; k++) {
            double d = (double)k * s + b;
            if ((s > 0 && d > e) || (s < 0 && d < e)) d = e;
            if (!tpl_list_push(A(vm), l, tpl_v_float(d))) return oom(vm);
        }
    }
    return yield_each(vm, l, a[0], out);
}

static bool rb_integer(tpl_value v) { return v.type == TPL_T_INT || v.type == TPL_T_BIGINT; }

/* Integer#pow(b, m) where an operand is past 64 bits (Ruby's int_pow_tmp3: b >= 0, m != 0,
 * the result has m's sign as Integer#% does), by GMP's mpz_powm; fuel: the exponent's bits
 * times a multiplication of m's size. */
static int pow_mod_big(tpl_vm *vm, const tpl_value *a, tpl_value *out)
{
    mpz_t x, e, m;
    mpz_inits(x, e, m, NULL);
    tpl_big_get(x, a[0]);
    tpl_big_get(e, a[1]);
    tpl_big_get(m, a[2]);
    int rc = 0;
    if (mpz_sgn(e) < 0)
        rc = tpl_vm_error(vm, TPL_ERR_TYPE, "Integer#pow() 1st argument cannot be negative when 2nd argument specified (RangeError)");
    else if (mpz_sgn(m) == 0)
        rc = tpl_vm_fail(vm, TPL_EK_ZERO_DIVISION, "divided by 0 (ZeroDivisionError)");
    else {
        size_t bits = mpz_sizeinbase(e, 2), limbs = mpz_size(m);
        uint64_t cost = tpl_big_cost(limbs) * (uint64_t)limbs;
        if (bits && cost > UINT64_MAX / bits) cost = UINT64_MAX;
        else cost *= bits ? bits : 1;
        if (!tpl_fuel_charge(tpl_vm_arena(vm)->fuel, cost)) rc = tpl_vm_nomem(vm);
    }
    if (rc < 0) {
        mpz_clears(x, e, m, NULL);
        return -1;
    }
    mpz_powm(x, x, e, m); /* in [0, |m|) */
    if (mpz_sgn(m) < 0 && mpz_sgn(x) != 0) mpz_add(x, x, m);
    mpz_clears(e, m, NULL);
    return tpl_big_result(vm, x, out); /* (clears x) */
}

/* Integer#pow(b) and pow(b, modulus). */
int r_num_pow(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    bool big = a[0].type == TPL_T_BIGINT || a[1].type == TPL_T_BIGINT || (tpl_given(a[2]) && a[2].type == TPL_T_BIGINT);
    if (a[0].type != TPL_T_BIGINT && want_int(vm, a[0], "pow") < 0) return -1;
    if (!tpl_given(a[2])) {
        int h = tpl_rb_arith(vm, 'p', a[0], a[1], out);
        if (h != 0) return h < 0 ? -1 : 0;
        if (big && (a[1].type == TPL_T_INT || a[1].type == TPL_T_BIGINT)) return tpl_big_binop(vm, TPL_OP_POW, a[0], a[1], out);
        if (a[0].type == TPL_T_INT && a[1].type == TPL_T_INT) {
            int64_t r = 1, b = a[0].u.i;
            for (int64_t e = a[1].u.i; e > 0; e >>= 1) {
                if ((e & 1) && __builtin_mul_overflow(r, b, &r)) return tpl_big_binop(vm, TPL_OP_POW, a[0], a[1], out);
                if (e > 1 && __builtin_mul_overflow(b, b, &b)) return tpl_big_binop(vm, TPL_OP_POW, a[0], a[1], out);
            }
            *out = tpl_v_int(r);
            return 0;
        }
        *out = tpl_v_float(pow(dbl(a[0]), dbl(a[1])));
        return 0;
    }
    if (!rb_integer(a[0]) || !rb_integer(a[1]) || !rb_integer(a[2]))
        return tpl_vm_error(vm, TPL_ERR_TYPE, "Integer#pow() 2nd argument not allowed unless all arguments are integers (TypeError)");
    if (big) return pow_mod_big(vm, a, out);
    if (a[1].u.i < 0) return tpl_vm_error(vm, TPL_ERR_TYPE, "Integer#pow() 1st argument cannot be negative when 2nd argument specified (RangeError)");
    int64_t m = a[2].u.i;
    if (m == 0) return tpl_vm_fail(vm, TPL_EK_ZERO_DIVISION, "divided by 0 (ZeroDivisionError)");
    __int128 r = 1, base = m == -1 ? 0 : a[0].u.i % m, mm = m; /* INT64_MIN % -1 traps (SIGFPE) */
    for (int64_t e = a[1].u.i; e > 0; e >>= 1) {
        if (e & 1) r = (r * base) % mm;
        base = (base * base) % mm;
    }
    if (r != 0 && ((r < 0) != (mm < 0))) r += mm;
    *out = tpl_v_int((int64_t)r);
    return 0;
}

/* n >> b of an int64 (b < 0 a left shift; false: past int64) */
static bool bits_shr(int64_t n, int64_t b, int64_t *r)
{
    if (b >= 0) { *r = b > 63 ? (n < 0 ? -1 : 0) : n >> b; return true; }
    if (b < -62 || n == 0) { *r = 0; return n == 0; }
    int64_t k = -b;
    if (n > (INT64_MAX >> k) || n < (INT64_MIN >> k)) return false;
    *r = (int64_t)((uint64_t)n << k);
    return true;
}

/* v & ((1 << len) - 1), Ruby's generate_mask (a negative len: the mask -1, v itself); false: past int64 */
static bool bits_mask(int64_t v, int64_t len, int64_t *r)
{
    if (len < 0 || (len >= 63 && v >= 0)) { *r = v; return true; }
    if (len >= 63) return false;
    *r = v & (int64_t)((UINT64_C(1) << len) - 1);
    return true;
}

/* n[b..e], n[b...e], n[..e], n[b..]: Ruby 3.1's int_aref1 on a range of Integers */
static int int_bit_range(tpl_vm *vm, int64_t n, tpl_value r, tpl_value *out)
{
    tpl_value b = r.u.list->items[0], e = r.u.list->items[1];
    bool excl = r.u.list->items[2].u.i != 0, bnil = b.type == TPL_T_NONE, enil = e.type == TPL_T_NONE;
    if ((!bnil && b.type != TPL_T_INT) || (!enil && e.type != TPL_T_INT) || (bnil && enil))
        return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: Integer#[] with a range of other than Integers");
    int64_t v;
    if (bnil) {   /* beginless: 0 when the bits up to e are 0, else Ruby's ArgumentError */
        if (e.u.i < 0) { *out = tpl_v_int(0); return 0; }
        if (!bits_mask(n, excl ? e.u.i : e.u.i + 1, &v)) v = n;
        if (v) return tpl_vm_error(vm, TPL_ERR_VALUE, "The beginless range for Integer#[] results in infinity (ArgumentError)");
        *out = tpl_v_int(0);
        return 0;
    }
    int64_t bi = b.u.i;
    if (!enil && bi == e.u.i) {   /* one bit, or none */
        *out = tpl_v_int(excl ? 0 : bi < 0 ? 0 : bi > 63 ? (n < 0) : (int64_t)(((uint64_t)n >> bi) & 1u));
        return 0;
    }
    if (!bits_shr(n, bi, &v)) return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: Integer#[] of a bit field past 64 bits");
    if (!enil && bi < e.u.i) {
        int64_t len;
        if (__builtin_sub_overflow(e.u.i, bi, &len) || (!excl && __builtin_add_overflow(len, 1, &len)) ||
            !bits_mask(v, len, &v))
            return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: Integer#[] of a bit field past 64 bits");
    }
    *out = tpl_v_int(v);
    return 0;
}

/* Integer#[i]: bit i of the two's complement (0 below bit 0, the sign past bit 63); n[i, len] and n[range]
 * (Ruby 2.7's bit fields) within int64; a big receiver is refused. */
int r_num_idx(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (a[0].type == TPL_T_BIGINT)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: Integer#[] of a big Integer");
    if (a[0].type == TPL_T_INT && is_range(a[1]) && !tpl_given(a[2])) return int_bit_range(vm, a[0].u.i, a[1], out);
    if (want_int(vm, a[0], "[]") < 0) return -1;
    tpl_value k = a[1], w = a[2];
    if (k.type == TPL_T_FLOAT && float_index(vm, &k) < 0) return -1;
    if (k.type == TPL_T_BIGINT) return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: Integer#[] of a big index");
    if (k.type != TPL_T_INT) return type_error(vm, TPL_VT_INT, k);
    int64_t n = a[0].u.i, i = k.u.i;
    if (tpl_given(w)) {   /* n[i, len]: len bits from bit i */
        if (w.type == TPL_T_FLOAT && float_index(vm, &w) < 0) return -1;
        if (w.type != TPL_T_INT) return type_error(vm, TPL_VT_INT, w);
        int64_t v;
        if (!bits_shr(n, i, &v) || !bits_mask(v, w.u.i, &v))
            return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: Integer#[] of a bit field past 64 bits");
        *out = tpl_v_int(v);
        return 0;
    }
    *out = tpl_v_int(i < 0 ? 0 : i > 63 ? (n < 0) : (int64_t)(((uint64_t)n >> i) & 1u));
    return 0;
}

int r_num_digits(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (want_int(vm, a[0], "digits") < 0) return -1;
    /* rb_int_digits: a negative receiver's DomainError before the base is read; the base by to_int (nil:
     * "no implicit conversion of nil into Integer"); a Bignum base: tpl_big's digits */
    if (a[0].u.i < 0) return tpl_vm_error(vm, TPL_ERR_TYPE, "out of domain (Math::DomainError)");
    int64_t base = 10;
    if (tpl_given(a[1]) && a[1].type == TPL_T_BIGINT) {
        if (a[1].u.s[0] == '-') return tpl_vm_error(vm, TPL_ERR_TYPE, "negative radix (ArgumentError)");
        tpl_list *l = new_list(vm, 1);   /* (an Integer below a base past 64 bits is its one digit) */
        if (!l) return oom(vm);
        l->items[l->len++] = a[0];
        *out = tpl_v_list(l);
        return 0;
    }
    if (tpl_given(a[1]) && (a[1].type == TPL_T_NONE || a[1].type == TPL_T_UNDEF))
        return tpl_vm_error(vm, TPL_ERR_TYPE, "no implicit conversion of nil into Integer (TypeError)");
    if (tpl_given(a[1])) {
        if (long_arg(vm, &a[1]) < 0) return -1;
        base = a[1].u.i;
        if (base < 0) return tpl_vm_error(vm, TPL_ERR_TYPE, "negative radix (ArgumentError)");
        if (base < 2) return tpl_vm_error(vm, TPL_ERR_TYPE, "invalid radix %lld (ArgumentError)", (long long)base);
    }
    tpl_list *l = new_list(vm, 20);
    if (!l) return oom(vm);
    uint64_t v = (uint64_t)a[0].u.i;
    do { if (!tpl_list_push(A(vm), l, tpl_v_int((int64_t)(v % (uint64_t)base)))) return oom(vm); v /= (uint64_t)base; } while (v);
    *out = tpl_v_list(l);
    return 0;
}

static int int_step1(tpl_vm *vm, tpl_value *a, tpl_value *out, int d, const char *meth)
{
    if (want_int(vm, a[0], meth) < 0) return -1;
    int64_t r;
    if (__builtin_add_overflow(a[0].u.i, d, &r)) return tpl_big_binop(vm, TPL_OP_ADD, a[0], tpl_v_int(d), out);
    *out = tpl_v_int(r);
    return 0;
}

int r_num_succ(tpl_vm *vm, tpl_value *a, tpl_value *out) { return int_step1(vm, a, out, 1, "succ"); }
int r_num_pred(tpl_vm *vm, tpl_value *a, tpl_value *out) { return int_step1(vm, a, out, -1, "pred"); }

static uint64_t ugcd(uint64_t x, uint64_t y) { while (y) { uint64_t t = x % y; x = y; y = t; } return x; }
static uint64_t uabs(int64_t v) { return v < 0 ? 0 - (uint64_t)v : (uint64_t)v; }

static int gcd_lcm(tpl_vm *vm, tpl_value *a, tpl_value *out, bool lcm)
{
    if (want_int(vm, a[0], lcm ? "lcm" : "gcd") < 0) return -1;
    if (a[1].type != TPL_T_INT && a[1].type != TPL_T_BIGINT) return tpl_vm_error(vm, TPL_ERR_TYPE, "not an integer (TypeError)");
    uint64_t x = uabs(a[0].u.i), y = a[1].type == TPL_T_INT ? uabs(a[1].u.i) : 0, g = ugcd(x, y), r = g;
    if (lcm) {
        if (x == 0 || y == 0) r = 0;
        else if (__builtin_mul_overflow(x / g, y, &r)) r = UINT64_MAX;
    }
    if (r > INT64_MAX || a[1].type == TPL_T_BIGINT) {   /* past int64 (INT64_MIN's gcd with itself or 0, an lcm, a
                                                          * Bignum argument): Ruby's Bignum */
        mpz_t x2, y2;
        mpz_init_set_si(x2, a[0].u.i);
        tpl_big_get(y2, a[1]);
        if (lcm) mpz_lcm(y2, x2, y2);
        else mpz_gcd(y2, x2, y2);
        mpz_clear(x2);
        return tpl_big_result(vm, y2, out);
    }
    *out = tpl_v_int((int64_t)r);
    return 0;
}

int r_num_gcd(tpl_vm *vm, tpl_value *a, tpl_value *out) { return gcd_lcm(vm, a, out, false); }
int r_num_lcm(tpl_vm *vm, tpl_value *a, tpl_value *out) { return gcd_lcm(vm, a, out, true); }

/* Integer#gcdlcm: [gcd, lcm] */
int r_num_gcdlcm(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (a[0].type != TPL_T_INT && a[0].type != TPL_T_BIGINT) return no_method(vm, a[0], "gcdlcm", 6);   /* (Integer's only) */
    tpl_list *l = tpl_list_new(A(vm), 2);
    if (!l) return oom(vm);
    if (gcd_lcm(vm, a, &l->items[0], false) < 0 || gcd_lcm(vm, a, &l->items[1], true) < 0) return -1;
    l->len = 2;
    *out = tpl_v_list(l);
    out->flags = TPL_F_MUT_RB;
    return 0;
}

/* Integer#chr: one ASCII character (codes 128..255 are binary strings in Ruby: not supported). */
static bool utf8_name(tpl_value v);
int r_num_chr(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    /* int_chr: the range first (rb_num_to_uint), then the encoding (rb_to_encoding) */
    if (a[0].type == TPL_T_BIGINT) return tpl_vm_error(vm, TPL_ERR_VALUE, "bignum out of char range (RangeError)");
    if (want_int(vm, a[0], "chr") < 0) return -1;
    int64_t c = a[0].u.i;
    if (c < 0 || (c > 255 && !tpl_given(a[1])) || c > (int64_t)UINT32_MAX)
        return tpl_vm_error(vm, TPL_ERR_VALUE, "%lld out of char range (RangeError)", (long long)c);
    if (tpl_given(a[1])) {
        tpl_value e = a[1];
        if (e.type != TPL_T_STR || (e.flags & (TPL_F_SYMBOL | TPL_F_REGEX_RB | TPL_F_CLASS_RB | TPL_F_EXC_RB)))
            return tpl_vm_error(vm, TPL_ERR_TYPE, "no implicit conversion of %s into String (TypeError)", conv_name(e));
        if (!utf8_name(e))
            return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: Integer#chr in an encoding other than UTF-8");
        if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
            return tpl_vm_error(vm, TPL_ERR_VALUE, c > 0x10FFFF ? "%lld out of char range (RangeError)" : "invalid codepoint 0x%llX in UTF-8 (RangeError)", (long long)c);
        tpl_sb b;
        tpl_sb_init(&b, A(vm));
        tpl_sb_put_cp(&b, (uint32_t)c);
        if (!b.p) return oom(vm);
        *out = tpl_sb_value(&b);
        return 0;
    }
    if (c > 127) return tpl_vm_error(vm, TPL_ERR_TYPE, "Integer#chr of a code above 127 (a binary string) is not supported");
    /* a US-ASCII string in Ruby: its inspect writes a control without a named escape as \xNN (a UTF-8
     * string's as \uNNNN), and the encoding follows it into concatenations: refused */
    if ((c < 0x20 && !memchr("\n\r\t\f\v\b\a\033", (int)c, 8)) || c == 0x7F)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "Integer#chr of a control character (a US-ASCII string) is not supported");
    char ch = (char)c, *p = tpl_arena_strdup(A(vm), &ch, 1);
    if (!p) return oom(vm);
    *out = tpl_v_str(p, 1);
    return 0;
}

int r_num_ord(tpl_vm *vm, tpl_value *a, tpl_value *out) { if (want_int(vm, a[0], "ord") < 0) return -1; *out = a[0]; return 0; }

int r_num_bit_length(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (want_int(vm, a[0], "bit_length") < 0) return -1;
    uint64_t v = a[0].u.i < 0 ? ~(uint64_t)a[0].u.i : (uint64_t)a[0].u.i;
    *out = tpl_v_int(v ? 64 - __builtin_clzll(v) : 0);
    return 0;
}

/* Integer#div (floored, an Integer even from floats), #modulo (%), #remainder (truncated). */
int r_num_div(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (!is_num(a[1])) return tpl_rb_arith(vm, '/', a[0], a[1], out) < 0 ? -1 : no_method(vm, a[1], "coerce", 6);
    if (dbl(a[1]) == 0) return tpl_vm_fail(vm, TPL_EK_ZERO_DIVISION, "divided by 0 (ZeroDivisionError)");
    if (a[0].type == TPL_T_INT && a[1].type == TPL_T_INT) {
        if (a[0].u.i == INT64_MIN && a[1].u.i == -1) return tpl_big_binop(vm, TPL_OP_FLOORDIV, a[0], a[1], out);
        int64_t q = a[0].u.i / a[1].u.i;
        if ((a[0].u.i % a[1].u.i != 0) && ((a[0].u.i < 0) != (a[1].u.i < 0))) q--;
        *out = tpl_v_int(q);
        return 0;
    }
    double q = floor(dbl(a[0]) / dbl(a[1]));
    if (!(q > -9.2e18 && q < 9.2e18)) return tpl_big_from_double(vm, q, out);
    *out = tpl_v_int((int64_t)q);
    return 0;
}

int r_num_modulo(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    return send_op(vm, tpl_v_str("%", 1), a[0], a[1], out);
}

int r_num_remainder(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (tpl_is_rat(a[1]) || a[1].type == TPL_T_HOST)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: remainder of a %s", tpl_rb_class_name(a[1]));
    if (!is_num(a[1]))   /* num_remainder's do_coerce: no coerce method is coerce_failed's TypeError */
        return coerce_failed(vm, a[1], tpl_rb_class_name(a[0]));
    if (a[0].type == TPL_T_INT && a[1].type == TPL_T_INT) {
        if (a[1].u.i == 0) return tpl_vm_fail(vm, TPL_EK_ZERO_DIVISION, "divided by 0 (ZeroDivisionError)");
        *out = tpl_v_int(a[1].u.i == -1 ? 0 : a[0].u.i % a[1].u.i);
        return 0;
    }
    /* (Ruby's remainder takes the % of a Float: 0.0 is a ZeroDivisionError, as for %) */
    if (dbl(a[1]) == 0) return tpl_vm_fail(vm, TPL_EK_ZERO_DIVISION, "divided by 0 (ZeroDivisionError)");
    *out = tpl_v_float(fmod(dbl(a[0]), dbl(a[1])));
    return 0;
}

int r_num_nonzero_p(tpl_vm *vm, tpl_value *a, tpl_value *out) { (void)vm; *out = dbl(a[0]) == 0 ? tpl_v_none() : a[0]; return 0; }
int r_num_finite_p(tpl_vm *vm, tpl_value *a, tpl_value *out) { (void)vm; *out = tpl_v_bool(a[0].type == TPL_T_INT || isfinite(a[0].u.f)); return 0; }
int r_num_nan_p(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (a[0].type != TPL_T_FLOAT) return no_method(vm, a[0], "nan?", 4);
    *out = tpl_v_bool(isnan(a[0].u.f));
    return 0;
}
/* Float#next_float / #prev_float: the next representable double up or down (nextafter; NaN stays NaN,
 * Float::MAX.next_float is Infinity, Infinity.prev_float Float::MAX). */
static int next_float(tpl_vm *vm, tpl_value *a, tpl_value *out, double to, const char *name)
{
    if (a[0].type != TPL_T_FLOAT) return no_method(vm, a[0], name, strlen(name));
    *out = tpl_v_float(nextafter(a[0].u.f, to));
    return 0;
}
int r_num_next_float(tpl_vm *vm, tpl_value *a, tpl_value *out) { return next_float(vm, a, out, HUGE_VAL, "next_float"); }
int r_num_prev_float(tpl_vm *vm, tpl_value *a, tpl_value *out) { return next_float(vm, a, out, -HUGE_VAL, "prev_float"); }
int r_num_infinite_p(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    (void)vm;
    *out = a[0].type == TPL_T_FLOAT && isinf(a[0].u.f) ? tpl_v_int(a[0].u.f > 0 ? 1 : -1) : tpl_v_none();
    return 0;
}

/* ---- Array and Enumerable */

/* The block's truth for one item (the item itself without a block). */
static int truth_of(tpl_vm *vm, const tpl_rb_block *blk, tpl_value v, bool *t, bool *broke, tpl_value *out)
{
    tpl_value r = v;
    if (blk->pc) {
        int yr = tpl_rb_yield(vm, blk, &v, 1, &r);
        if (yr < 0) return -1;
        if (yr > 0) { *broke = true; *out = r; return 0; }
    }
    *t = tpl_truthy_rb(r);
    return 0;
}

int r_arr_partition(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *l = L_(a[0]);
    tpl_value *keys;
    bool broke;
    if (block_values(vm, l, &keys, out, &broke) < 0) return -1;
    if (broke) return 0;
    tpl_list *y = new_list(vm, l->len), *n = new_list(vm, l->len);
    if (!y || !n) return oom(vm);
    for (uint32_t i = 0; i < l->len; i++) {
        tpl_list *d = tpl_truthy_rb(keys[i]) ? y : n;
        d->items[d->len++] = l->items[i];
    }
    *out = pair(vm, tpl_v_list(y), tpl_v_list(n));
    return out->type == TPL_T_LIST ? 0 : oom(vm);
}

/* tally / tally(hash): Ruby 3.1 counts into the given Hash in place (FrozenError when it is frozen, even for no
 * items). A count already there must be an Integer Ruby can add 1 to as it does: a Fixnum in [0, 2**62 - 1)
 * or a Bignum (past Fixnum's range); a negative Fixnum, 2**62 - 1 or another class is a TypeError "wrong argument
 * type C (expected Integer)" (enum.c tally_up's unsigned compare, then Check_Type(T_BIGNUM)). A Hash this render
 * did not build (the state's) would change under another name Ruby shares: refused. */
int r_arr_tally(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *l = L_(a[0]);
    tpl_map *m;
    if (a[1].type != TPL_T_UNSET) {
        if (a[1].type != TPL_T_MAP)
            return tpl_vm_error(vm, TPL_ERR_TYPE, "no implicit conversion of %s into Hash (TypeError)", conv_name(a[1]));
        if (is_frozen_ct(a[1])) return frozen_ct_error(vm, a[1]);
        if (!(a[1].flags & TPL_F_MUT_RB))
            return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: tally(hash) into a Hash this template did not "
                                "build (Ruby changes it in place under every name that holds it)");
        m = a[1].u.map;
    } else if (!(m = rb_map(vm, l->len))) return oom(vm);
    const int64_t fixmax = ((int64_t)1 << 62) - 1;
    for (uint32_t i = 0; i < l->len; i++) {
        tpl_value *c = tpl_map_get(m, l->items[i]);
        if (!c) {
            if (!tpl_map_set(A(vm), m, l->items[i], tpl_v_int(1))) return oom(vm);
        } else if (c->type == TPL_T_INT && c->u.i >= 0 && c->u.i < fixmax) {
            c->u.i++;
        } else if ((c->type == TPL_T_INT && (c->u.i > fixmax || c->u.i < -fixmax - 1)) || c->type == TPL_T_BIGINT) {
            tpl_value r;
            if (c->type == TPL_T_INT && c->u.i < INT64_MAX) r = tpl_v_int(c->u.i + 1);
            else if (tpl_big_binop(vm, TPL_OP_ADD, *c, tpl_v_int(1), &r) < 0) return -1;
            if (!tpl_map_set(A(vm), m, l->items[i], r)) return oom(vm);
        } else {
            return tpl_vm_error(vm, TPL_ERR_TYPE, "wrong argument type %s (expected Integer) (TypeError)", conv_name(*c));
        }
    }
    *out = a[1].type != TPL_T_UNSET ? a[1] : tpl_v_map(m);
    out->flags |= TPL_F_MUT_RB;   /* (a new Hash, or the one given: this render's) */
    return 0;
}

static int while_impl(tpl_vm *vm, tpl_value *a, tpl_value *out, bool take)
{
    tpl_list *l = L_(a[0]);
    tpl_rb_block blk = tpl_vm_block(vm);
    if (!blk.pc)   /* (its Enumerator's items are not the Array's: each yield's value decides) */
        return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: %s without a block (an Enumerator)", take ? "take_while" : "drop_while");
    uint32_t k = 0;
    for (; k < l->len; k++) {
        bool t = false, broke = false;
        if (truth_of(vm, &blk, l->items[k], &t, &broke, out) < 0) return -1;
        if (broke) return 0;
        if (!t) break;
    }
    tpl_list *r = take ? list_of(vm, l->items, k) : list_of(vm, l->items + k, l->len - k);
    if (!r) return oom(vm);
    *out = tpl_v_list(r);
    return 0;
}

int r_arr_take_while(tpl_vm *vm, tpl_value *a, tpl_value *out) { return while_impl(vm, a, out, true); }
int r_arr_drop_while(tpl_vm *vm, tpl_value *a, tpl_value *out) { return while_impl(vm, a, out, false); }

int r_arr_each_cons(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *l = L_(a[0]);
    if (long_arg(vm, &a[1]) < 0) return -1;
    if (a[1].u.i <= 0) return tpl_vm_error(vm, TPL_ERR_TYPE, "invalid size (ArgumentError)");
    uint32_t k = a[1].u.i > l->len ? l->len + 1 : (uint32_t)a[1].u.i;
    tpl_list *r = new_list(vm, l->len >= k ? l->len - k + 1 : 0);
    if (!r) return oom(vm);
    for (uint32_t i = 0; k <= l->len && i + k <= l->len; i++) {
        tpl_list *g = list_of(vm, l->items + i, k);
        if (!g) return oom(vm);
        r->items[r->len++] = tpl_v_list(g);
    }
    return yield_each(vm, r, a[0], out);
}

int r_arr_rotate(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *l = L_(a[0]);
    int64_t n = 1;
    if (tpl_given(a[1])) {
        if (long_arg(vm, &a[1]) < 0) return -1;
        n = a[1].u.i;
    }
    tpl_list *r = new_list(vm, l->len);
    if (!r) return oom(vm);
    if (l->len) {
        int64_t k = n % (int64_t)l->len;
        if (k < 0) k += l->len;
        mcpy_items(r->items, 0, l->items, (size_t)k, l->len - (size_t)k);
        mcpy_items(r->items, l->len - (size_t)k, l->items, 0, (size_t)k);
    }
    r->len = l->len;
    *out = tpl_v_list(r);
    return 0;
}

int r_arr_values_at(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *l = L_(a[0]), *idx = L_(a[1]);
    tpl_list *r = new_list(vm, idx->len);
    if (!r) return oom(vm);
    for (uint32_t i = 0; i < idx->len; i++) {
        tpl_value k = idx->items[i], v;
        if (is_range(k)) {
            /* rb_range_beg_len as values_at calls it: a start before the array is a RangeError, one
             * past its end is not, and the range's items past the end are nil (values_at(6..7) of
             * five items is [nil, nil]) */
            int64_t b, n, len = l->len;
            if (range_beg_len(vm, k, len, &b, &n) < 0) return -1;
            if (n > 10000000) return tpl_vm_error(vm, TPL_ERR_LIMIT, "range too large");
            for (int64_t j = b; j < b + n; j++)
                if (!tpl_list_push(A(vm), r, j < len ? l->items[j] : tpl_v_none())) return oom(vm);
            continue;
        }
        tpl_value args[2] = { a[0], k };
        tpl_value args3[3] = { args[0], args[1], tpl_v_unset() };
        if (r_arr_idx(vm, args3, &v) < 0) return -1;
        if (!tpl_list_push(A(vm), r, v)) return oom(vm);
    }
    *out = tpl_v_list(r);
    return 0;
}

int r_arr_one_p(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *l = L_(a[0]);
    tpl_rb_block blk = tpl_vm_block(vm);
    int n = 0;
    for (uint32_t i = 0; i < l->len; i++) {
        tpl_value r = l->items[i];
        if (tpl_given(a[1])) {
            tpl_value args[2] = { a[1], l->items[i] };
            if (r_any_eqq(vm, args, &r) < 0) return -1;
        } else if (blk.pc) {
            YIELD(blk, &l->items[i], 1, &r);
        }
        if (tpl_truthy_rb(r) && ++n > 1) { *out = tpl_v_bool(false); return 0; }
    }
    *out = tpl_v_bool(n == 1);
    return 0;
}

int r_arr_product(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *l = L_(a[0]), *others = L_(a[1]);
    uint64_t total = l->len;
    for (uint32_t k = 0; k < others->len; k++) {
        if (!is_array(others->items[k])) return type_error(vm, TPL_VT_LIST, others->items[k]);
        total *= others->items[k].u.list->len;
        if (total > 10000000) return tpl_vm_error(vm, TPL_ERR_LIMIT, "product: too many combinations");
    }
    tpl_list *r = new_list(vm, (uint32_t)total);
    uint32_t n = others->len + 1;
    uint32_t *ix = tpl_arena_alloc(A(vm), n * sizeof *ix);
    if (!r || !ix) return oom(vm);
    for (uint64_t t = 0; t < total; t++) {
        uint64_t rem = t;
        for (uint32_t k = n; k-- > 0;) {
            uint32_t len = k == 0 ? l->len : others->items[k - 1].u.list->len;
            ix[k] = (uint32_t)(rem % len);
            rem /= len;
        }
        tpl_list *c = new_list(vm, n);
        if (!c) return oom(vm);
        for (uint32_t k = 0; k < n; k++) c->items[c->len++] = k == 0 ? l->items[ix[0]] : others->items[k - 1].u.list->items[ix[k]];
        r->items[r->len++] = tpl_v_list(c);
    }
    tpl_rb_block blk = tpl_vm_block(vm);
    if (!blk.pc) { *out = tpl_v_list(r); return 0; }
    tpl_value v;
    for (uint32_t i = 0; i < r->len; i++) YIELD(blk, &r->items[i], 1, &v);
    *out = a[0];
    return 0;
}

/* min(n) / max(n) (and min_by(n) / max_by(n)): Ruby's rb_nmin_run (enum.c): candidates gathered in a
 * buffer of 4n, cut to n by a quickselect partition (nmin_filter) whenever it fills and at the end, items
 * not below the last cut's pivot skipped; the n kept then sorted (ruby_qsort: glibc's stable merge sort,
 * as msort) and reversed for max. The partition's swaps decide which of tied items are kept and their order. */
static void nmin_filter(sorter *s, const tpl_value *keys, uint32_t *buf, uint32_t *curlen, uint32_t n, bool rev,
                        tpl_value *limit, bool *has_limit)
{
    if (*curlen <= n) return;
#define NSWAP(x, y) do { uint32_t t_ = buf[x]; buf[x] = buf[y]; buf[y] = t_; } while (0)
    int64_t left = 0, right = (int64_t)*curlen - 1, store;
    for (;;) {
        int64_t pivot = left + (right - left) / 2, np = 1;
        NSWAP(pivot, right);
        pivot = right;
        store = left;
        int64_t i = left;
        while (i <= right - np) {
            int c = sort_cmp(s, keys[buf[i]], keys[buf[pivot]]);
            if (s->failed) return;
            if (rev) c = -c;
            if (c == 0) { NSWAP(i, right - np); np++; continue; }
            if (c < 0) { NSWAP(i, store); store++; }
            i++;
        }
        int64_t j = store;
        for (i = right; right - np < i; i--) if (j <= i) { NSWAP(j, i); j++; }
        if (store <= (int64_t)n && (int64_t)n <= store + np) break;
        if ((int64_t)n < store) right = store - 1;
        else left = store + np;
    }
#undef NSWAP
    *limit = keys[buf[store]];
    *has_limit = true;
    *curlen = n;
}

/* nmin_run's buffer for n items wanted (rb_ary_tmp_new of 4n values, twice that for min_by/max_by's keys), taken
 * before any item is read: its ArgumentErrors past a long's range, and a refusal where it is gigabytes, which Ruby
 * gets or not (NoMemoryError) as the machine's memory allows: [3, 1, 2].max_by(10**10) { }. */
static int nmin_size(tpl_vm *vm, int64_t n, bool by)
{
    if (INT64_MAX / 4 / (by ? 2 : 1) < n) return tpl_vm_error(vm, TPL_ERR_VALUE, "too big size (ArgumentError)");
    int64_t cap = n * 4 * (by ? 2 : 1);
    if (cap > INT64_MAX / 8) return tpl_vm_error(vm, TPL_ERR_VALUE, "array size too big (ArgumentError)");
    if (cap > ((int64_t)1 << 27))
        return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: min/max of %lld items (Ruby allocates room for %lld values "
                            "first: NoMemoryError where the machine has not the memory)", (long long)n, (long long)cap);
    return 0;
}

static int extreme_n(tpl_vm *vm, tpl_value *a, tpl_value *out, int sign, bool by)
{
    tpl_list *l = L_(a[0]);
    if (long_arg(vm, &a[1]) < 0) return -1;
    if (a[1].u.i < 0) return tpl_vm_error(vm, TPL_ERR_TYPE, "negative size (%lld) (ArgumentError)", (long long)a[1].u.i);
    if (nmin_size(vm, a[1].u.i, by) < 0) return -1;
    if (a[1].u.i == 0) { *out = tpl_v_list(new_list(vm, 0)); return 0; }
    tpl_value *keys = l->items;
    bool broke = false;
    if (by && block_values(vm, l, &keys, out, &broke) < 0) return -1;
    if (broke) return 0;
    uint32_t len = l->len, n = a[1].u.i > len ? len : (uint32_t)a[1].u.i;
    uint64_t bufmax = (uint64_t)a[1].u.i * 4;   /* (n <= 2^63-1: no overflow in 64 bits for the comparison below) */
    uint32_t *buf = tpl_arena_alloc(A(vm), ((size_t)len + 1) * sizeof *buf);
    if (!buf) return oom(vm);
    sorter s = { vm, tpl_vm_block(vm), !by && tpl_vm_block(vm).pc != 0, NULL, false };
    bool rev = sign > 0, has_limit = false;
    tpl_value limit = tpl_v_none();
    uint32_t cur = 0;
    for (uint32_t i = 0; i < len; i++) {
        if (has_limit) {
            int c = sort_cmp(&s, keys[i], limit);
            if (s.failed) return -1;
            if (rev) c = -c;
            if (c >= 0) continue;
        }
        buf[cur++] = i;
        if (cur == bufmax) {
            nmin_filter(&s, keys, buf, &cur, n, rev, &limit, &has_limit);
            if (s.failed) return -1;
        }
    }
    nmin_filter(&s, keys, buf, &cur, n, rev, &limit, &has_limit);
    if (s.failed) return -1;
    tpl_list *c = new_list(vm, cur);
    tpl_value *ck = by ? tpl_arena_alloc(A(vm), ((size_t)cur + 1) * sizeof *ck) : NULL;
    if (!c || (by && !ck)) return oom(vm);
    for (uint32_t i = 0; i < cur; i++) {
        c->items[c->len++] = l->items[buf[i]];
        if (ck) ck[i] = keys[buf[i]];
    }
    tpl_list *r;
    if (sort_list(vm, c, ck, s.use_blk, &r) < 0) return -1;
    if (rev) for (uint32_t i = 0; i < r->len / 2; i++) {
        tpl_value t = r->items[i];
        r->items[i] = r->items[r->len - 1 - i];
        r->items[r->len - 1 - i] = t;
    }
    *out = tpl_v_list(r);
    return 0;
}

int r_arr_min_n(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (tpl_given(a[1]) && a[1].type != TPL_T_NONE) return extreme_n(vm, a, out, -1, false);   /* (min(nil): min) */
    return r_arr_min(vm, a, out);
}

int r_arr_max_n(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (tpl_given(a[1]) && a[1].type != TPL_T_NONE) return extreme_n(vm, a, out, 1, false);   /* (min(nil): min) */
    return r_arr_max(vm, a, out);
}

int r_arr_min_by_n(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (tpl_given(a[1]) && a[1].type != TPL_T_NONE) return extreme_n(vm, a, out, -1, true);   /* (min(nil): min) */
    return r_arr_min_by(vm, a, out);
}

int r_arr_max_by_n(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (tpl_given(a[1]) && a[1].type != TPL_T_NONE) return extreme_n(vm, a, out, 1, true);   /* (min(nil): min) */
    return r_arr_max_by(vm, a, out);
}

int r_arr_filter_map(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *l = L_(a[0]);
    if (!tpl_vm_block(vm).pc) { *out = tpl_v_list(l); return 0; }
    tpl_value *keys;
    bool broke;
    if (block_values(vm, l, &keys, out, &broke) < 0) return -1;
    if (broke) return 0;
    tpl_list *r = new_list(vm, l->len);
    if (!r) return oom(vm);
    for (uint32_t i = 0; i < l->len; i++) if (tpl_truthy_rb(keys[i])) r->items[r->len++] = keys[i];
    *out = tpl_v_list(r);
    return 0;
}

/* with_index(offset = 0) / each_with_index on what each/map answered without a block: the
 * block's values (map.with_index); each.with_index as a statement discards them. */
/* m.with_index(off) { |x, i| } on an Enumerator of select, group_by, ... (enum_blockful): the block's value
 * for each item in turn is what m's block would answer (find, detect and find_index stop at the first
 * truthy one), then m's result from those values. */
static int enum_by_index(tpl_vm *vm, tpl_value e, int64_t off, tpl_value *out)
{
#define IS(lit) (n == sizeof lit - 1 && memcmp(name, lit, sizeof lit - 1) == 0)
    const tpl_value *x = e.u.list->items + e.u.list->len;
    const char *name = x[1].u.s;
    size_t n = x[1].len;
    tpl_value recv = x[0];
    tpl_list *l;
    if (enum_live(vm, e, &l) < 0) return -1;
    tpl_rb_block blk = tpl_vm_block(vm);
    bool first = IS("find") || IS("detect") || IS("find_index");
    tpl_value *k = tpl_arena_alloc(A(vm), (l->len + 1) * sizeof *k);
    if (!k) return oom(vm);
    uint32_t len = l->len;   /* (the block may change the receiver: the items as they were) */
    for (uint32_t i = 0; i < len; i++) {
        tpl_value args[2] = { l->items[i], tpl_v_int(off + (int64_t)i) };
        YIELD(blk, args, 2, &k[i]);
        if (first && tpl_truthy_rb(k[i])) { *out = IS("find_index") ? tpl_v_int(i) : l->items[i]; return 0; }
    }
    if (first) { *out = tpl_v_none(); return 0; }
    if (IS("each_with_object")) { *out = x[2].u.list->items[0]; return 0; }
    if (IS("sort_by")) {
        tpl_list *r;
        tpl_list src = *l;
        src.len = len;
        if (sort_list(vm, &src, k, false, &r) < 0) return -1;
        *out = tpl_v_list(r);
        return 0;
    }
    if (IS("min_by") || IS("max_by")) {
        sorter s = { vm, blk, false, NULL, false };
        int64_t best = -1;
        for (uint32_t i = 0; i < len; i++) {
            if (best < 0 || sort_cmp(&s, k[i], k[best]) * (IS("min_by") ? -1 : 1) > 0) best = i;
            if (s.failed) return -1;
        }
        *out = best < 0 ? tpl_v_none() : l->items[best];
        return 0;
    }
    if (IS("group_by")) {
        tpl_map *m = rb_map(vm, 4);
        if (!m) return oom(vm);
        for (uint32_t i = 0; i < len; i++) {
            tpl_value *g = tpl_map_get(m, k[i]);
            if (!g) {
                if (!tpl_map_set(A(vm), m, k[i], tpl_v_list(new_list(vm, 2)))) return oom(vm);
                g = tpl_map_get(m, k[i]);
            }
            if (!g || !g->u.list || !tpl_list_push(A(vm), g->u.list, l->items[i])) return oom(vm);
        }
        *out = tpl_v_map(m);
        return 0;
    }
    if ((IS("select") || IS("filter") || IS("reject")) && recv.type == TPL_T_MAP) {   /* Hash#select: a Hash */
        tpl_map *m = rb_map(vm, len);
        if (!m) return oom(vm);
        for (uint32_t i = 0; i < len; i++)
            if (tpl_truthy_rb(k[i]) == !IS("reject")) {
                const tpl_list *p = l->items[i].u.list;
                if (!tpl_map_set(A(vm), m, p->items[0], p->items[1])) return oom(vm);
            }
        *out = tpl_v_map(m);
        return 0;
    }
    tpl_list *y = new_list(vm, len), *no = new_list(vm, len);
    if (!y || !no) return oom(vm);
    for (uint32_t i = 0; i < len; i++) {
        bool t = tpl_truthy_rb(k[i]);
        if (IS("flat_map") || IS("collect_concat")) {
            if (is_array(k[i])) {
                for (uint32_t j = 0; j < k[i].u.list->len; j++)
                    if (!tpl_list_push(A(vm), y, k[i].u.list->items[j])) return oom(vm);
            } else if (!tpl_list_push(A(vm), y, k[i])) return oom(vm);
        } else if (IS("filter_map")) {
            if (t) y->items[y->len++] = k[i];
        } else if (IS("reject")) {
            if (!t) y->items[y->len++] = l->items[i];
        } else {   /* select, filter, find_all, partition */
            tpl_list *d = t ? y : no;
            d->items[d->len++] = l->items[i];
        }
    }
    *out = IS("partition") ? pair(vm, tpl_v_list(y), tpl_v_list(no)) : tpl_v_list(y);
    if (out->type != TPL_T_LIST) return oom(vm);
    out->flags = TPL_F_MUT_RB;
    return 0;
#undef IS
}

int r_arr_with_index(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *l = L_(a[0]);
    int64_t off = 0;
    if (tpl_given(a[1]) && a[1].type != TPL_T_NONE) {
        if (long_arg(vm, &a[1]) < 0) return -1;
        off = a[1].u.i;
    }
    tpl_rb_block blk = tpl_vm_block(vm);
    tpl_list *r = new_list(vm, l->len);
    if (!r) return oom(vm);
    for (uint32_t i = 0; i < l->len; i++) {
        tpl_value args[2] = { l->items[i], tpl_v_int(off + i) };
        if (!blk.pc) { r->items[r->len++] = pair(vm, args[0], args[1]); continue; }
        tpl_value v;
        YIELD(blk, args, 2, &v);
        r->items[r->len++] = v;
    }
    *out = tpl_v_list(r);
    return 0;
}

int r_arr_transpose(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *l = L_(a[0]);
    uint32_t w = 0;
    for (uint32_t i = 0; i < l->len; i++) {
        tpl_value row = l->items[i];
        if (!is_array(row)) return type_error(vm, TPL_VT_LIST, row);
        if (i == 0) w = row.u.list->len;
        else if (row.u.list->len != w)
            return tpl_vm_error(vm, TPL_ERR_TYPE, "element size differs (%u should be %u) (IndexError)", row.u.list->len, w);
    }
    tpl_list *r = new_list(vm, w);
    if (!r) return oom(vm);
    for (uint32_t j = 0; j < w; j++) {
        tpl_list *c = new_list(vm, l->len);
        if (!c) return oom(vm);
        for (uint32_t i = 0; i < l->len; i++) c->items[c->len++] = l->items[i].u.list->items[j];
        r->items[r->len++] = tpl_v_list(c);
    }
    *out = tpl_v_list(r);
    return 0;
}

int r_arr_rindex(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *l = L_(a[0]);
    tpl_rb_block blk = tpl_vm_block(vm);
    tpl_value r = tpl_v_none();
    for (uint32_t i = l->len; i-- > 0;) {
        bool hit = false;
        if (tpl_given(a[1])) { if (tpl_vm_rb_equal(vm, l->items[i], a[1], &hit) < 0) return -1; }
        else if (blk.pc) { YIELD(blk, &l->items[i], 1, &r); hit = tpl_truthy_rb(r); }
        else { *out = tpl_v_list(l); return 0; }
        if (hit) { *out = tpl_v_int(i); return 0; }
    }
    *out = tpl_v_none();
    return 0;
}

int r_arr_assoc(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *l = L_(a[0]);
    for (uint32_t i = 0; i < l->len; i++) {
        tpl_value e = l->items[i];
        if (!is_array(e) || e.u.list->len == 0) continue;
        bool eq = false;
        if (tpl_vm_rb_equal(vm, e.u.list->items[0], a[1], &eq) < 0) return -1;
        if (eq) { *out = e; return 0; }
    }
    *out = tpl_v_none();
    return 0;
}

/* grep(pattern) / grep_v: the items pattern === item (does not) match, mapped by the block. */
static int grep_impl(tpl_vm *vm, tpl_value *a, tpl_value *out, bool keep)
{
    tpl_list *l = L_(a[0]);
    tpl_rb_block blk = tpl_vm_block(vm);
    tpl_list *r = new_list(vm, l->len);
    if (!r) return oom(vm);
    for (uint32_t i = 0; i < l->len; i++) {
        tpl_value args[2] = { a[1], l->items[i] }, m;
        if (r_any_eqq(vm, args, &m) < 0) return -1;
        if (tpl_truthy_rb(m) != keep) continue;
        tpl_value v = l->items[i];
        if (blk.pc) YIELD(blk, &l->items[i], 1, &v);
        r->items[r->len++] = v;
    }
    *out = tpl_v_list(r);
    return 0;
}

int r_arr_grep(tpl_vm *vm, tpl_value *a, tpl_value *out) { return grep_impl(vm, a, out, true); }
int r_arr_grep_v(tpl_vm *vm, tpl_value *a, tpl_value *out) { return grep_impl(vm, a, out, false); }

/* chunk_while / slice_when: runs of neighbours the block joins (splits), as arrays. */
static int chunk_impl(tpl_vm *vm, tpl_value *a, tpl_value *out, bool join_on_true)
{
    tpl_list *l = L_(a[0]);
    tpl_rb_block blk = tpl_vm_block(vm);
    if (!blk.pc) return tpl_vm_error(vm, TPL_ERR_TYPE, "tried to create Proc object without a block (ArgumentError)");
    tpl_list *r = new_list(vm, 4), *cur = NULL;
    if (!r) return oom(vm);
    for (uint32_t i = 0; i < l->len; i++) {
        bool split = i == 0;
        if (i > 0) {
            tpl_value args[2] = { l->items[i - 1], l->items[i] }, v;
            YIELD(blk, args, 2, &v);
            split = tpl_truthy_rb(v) != join_on_true;
        }
        if (split) {
            if (!(cur = new_list(vm, 4)) || !tpl_list_push(A(vm), r, tpl_v_list(cur))) return oom(vm);
        }
        if (!tpl_list_push(A(vm), cur, l->items[i])) return oom(vm);
        r->items[r->len - 1] = tpl_v_list(cur);
    }
    /* Ruby's is an Enumerator (of an Enumerator::Generator) whatever follows: its inspect prints an
     * address, its size is nil; the runs are computed now (tpl's Enumerators hold their items) */
    const char *nm = join_on_true ? "chunk_while" : "slice_when";
    return enum_wrap(vm, a[0], nm, strlen(nm), NULL, 0, r, NULL, NULL, 0, out);
}

int r_arr_chunk_while(tpl_vm *vm, tpl_value *a, tpl_value *out) { return chunk_impl(vm, a, out, true); }
int r_arr_slice_when(tpl_vm *vm, tpl_value *a, tpl_value *out) { return chunk_impl(vm, a, out, false); }

/* Array#insert(index, *items): in place (insert_at); a negative index counts from after the last item. */
int r_arr_insert(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *l = L_(a[0]), *items = L_(a[2]);
    if (long_arg(vm, &a[1]) < 0) return -1;
    if (items->len == 0) return rb_own(vm, a[0], out);
    int64_t len = l->len, i = a[1].u.i;
    if (i < 0) {
        i += len + 1;
        if (i < 0)
            return tpl_vm_error(vm, TPL_ERR_TYPE, "index %lld too small for array; minimum: -%lld (IndexError)", (long long)a[1].u.i,
                                (long long)len + 1);
    }
    if (i >= 10000000) return tpl_vm_error(vm, TPL_ERR_LIMIT, "index %lld too big for an array", (long long)i);
    return insert_at(vm, a[0], i, items, out);
}

/* Array#- / difference, & / intersection, | / union: by eql? (hash), order of the receiver. */
static int set_op(tpl_vm *vm, tpl_value self, tpl_list *others, int op, tpl_value *out)
{
    tpl_list *l = self.u.list;
    for (uint32_t k = 0; k < others->len; k++) if (!is_array(others->items[k])) return type_error(vm, TPL_VT_LIST, others->items[k]);
    tpl_map *seen = rb_map(vm, l->len + 1), *in = rb_map(vm, 8);
    tpl_list *r = new_list(vm, l->len);
    if (!seen || !in || !r) return oom(vm);
    tpl_value yes = tpl_v_bool(true);
    if (op == '-' || op == '&') {
        for (uint32_t k = 0; k < others->len; k++) {
            tpl_list *o = others->items[k].u.list;
            tpl_map *cur = rb_map(vm, o->len + 1);
            if (!cur) return oom(vm);
            for (uint32_t i = 0; i < o->len; i++) if (!tpl_map_set(A(vm), cur, o->items[i], yes)) return oom(vm);
            if (k == 0 || op == '-') {
                for (uint32_t i = 0; i < o->len; i++) if (!tpl_map_set(A(vm), in, o->items[i], yes)) return oom(vm);
                if (op == '&') in = cur;
            } else {   /* &: only keys in every other array */
                tpl_map *both = rb_map(vm, in->len + 1);
                if (!both) return oom(vm);
                for (uint32_t i = 0; i < in->len; i++)
                    if (tpl_map_get_metered(cur, in->e[i].key, tpl_vm_arena(vm)->fuel) && !tpl_map_set(A(vm), both, in->e[i].key, yes)) return oom(vm);
                in = both;
            }
        }
    }
    for (uint32_t i = 0; i < l->len; i++) {
        tpl_value v = l->items[i];
        if (op == '-') { if (!tpl_map_get_metered(in, v, tpl_vm_arena(vm)->fuel)) r->items[r->len++] = v; continue; }
        if (tpl_map_get_metered(seen, v, tpl_vm_arena(vm)->fuel)) continue;
        if (op == '&' && others->len && !tpl_map_get_metered(in, v, tpl_vm_arena(vm)->fuel)) continue;
        if (!tpl_map_set(A(vm), seen, v, yes)) return oom(vm);
        r->items[r->len++] = v;
    }
    if (op == '|')
        for (uint32_t k = 0; k < others->len; k++) {
            tpl_list *o = others->items[k].u.list;
            for (uint32_t i = 0; i < o->len; i++) {
                if (tpl_map_get_metered(seen, o->items[i], tpl_vm_arena(vm)->fuel)) continue;
                if (!tpl_map_set(A(vm), seen, o->items[i], yes) || !tpl_list_push(A(vm), r, o->items[i])) return oom(vm);
            }
        }
    if (fuel_out(vm)) return tpl_vm_nomem(vm);
    *out = tpl_v_list(r);
    return 0;
}

int r_arr_difference(tpl_vm *vm, tpl_value *a, tpl_value *out) { return set_op(vm, a[0], L_(a[1]), '-', out); }
int r_arr_intersection(tpl_vm *vm, tpl_value *a, tpl_value *out) { return set_op(vm, a[0], L_(a[1]), '&', out); }
int r_arr_union(tpl_vm *vm, tpl_value *a, tpl_value *out) { return set_op(vm, a[0], L_(a[1]), '|', out); }

int r_arr_intersect_p(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (!is_array(a[1])) return type_error(vm, TPL_VT_LIST, a[1]);
    tpl_value o[1] = { a[1] };
    tpl_list ol = { .items = o, .len = 1 };
    tpl_value r = tpl_v_none();
    if (set_op(vm, a[0], &ol, '&', &r) < 0) return -1;
    *out = tpl_v_bool(r.u.list->len > 0);
    return 0;
}

/* Array#zip with a block yields each tuple and answers nil. */
int r_arr_zip_blk(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (r_arr_zip(vm, a, out) < 0) return -1;
    tpl_rb_block blk = tpl_vm_block(vm);
    if (!blk.pc) return 0;
    tpl_list *l = out->u.list;
    tpl_value v;
    for (uint32_t i = 0; i < l->len; i++) YIELD(blk, &l->items[i], 1, &v);
    *out = tpl_v_none();
    return 0;
}

/* String#scan with a block: yields each match (or its groups), answers the receiver. */
int r_str_scan_blk(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_rb_block blk = tpl_vm_block(vm);
    return scan_impl(vm, a, out, blk.pc ? &blk : NULL);
}

/* ---- Hash */

int r_hash_count(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (!tpl_given(a[1]) && !tpl_vm_block(vm).pc) return r_hash_size(vm, a, out);
    tpl_list *items = NULL;
    if (enum_items(vm, a[0], &items, "count") < 0) return -1;
    tpl_value args[2] = { tpl_v_list(items), a[1] };
    return r_arr_count(vm, args, out);
}

int r_hash_to_h_blk(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (!tpl_vm_block(vm).pc) {
        const tpl_map *m = M_(a[0]);
        if (m->eql && !m->rb_state) return r_hash_to_h(vm, a, out);
        /* a state Hash's to_h is a new plain Hash (Hash#to_h of a subclass): :k no longer reads "k" */
        if (rb_copy_mut(vm, a[0], out) < 0) return -1;
        out->u.map->rb_state = false;
        return 0;
    }
    tpl_list *items = NULL;
    if (enum_items(vm, a[0], &items, "to_h") < 0) return -1;
    tpl_value args[1] = { tpl_v_list(items) };
    return r_arr_to_h(vm, args, out);
}

/* Hash#merge(*others) { |key, old, new| ... }. */
int r_hash_merge_all(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_map *m = M_(a[0]);
    tpl_list *others = L_(a[1]);
    tpl_rb_block blk = tpl_vm_block(vm);
    tpl_map *r = rb_map(vm, m->len + 4);
    if (!r) return oom(vm);
    r->rb_default = m->rb_default;   /* merge is dup + update: the copy keeps the receiver's default */
    r->rb_state = !m->eql || m->rb_state;   /* (and its class) */
    for (uint32_t i = 0; i < m->len; i++) if (!tpl_map_set(A(vm), r, m->e[i].key, m->e[i].val)) return oom(vm);
    for (uint32_t k = 0; k < others->len; k++) {
        tpl_value ov = others->items[k];
        if (ov.type != TPL_T_MAP) return type_error(vm, TPL_VT_DICT, ov);
        tpl_map *o = ov.u.map;
        for (uint32_t i = 0; i < o->len; i++) {
            tpl_value v = o->e[i].val, *old = blk.pc ? tpl_map_get(r, o->e[i].key) : NULL;
            if (old) {
                tpl_value args[3] = { o->e[i].key, *old, v };
                YIELD(blk, args, 3, &v);
            }
            if (!tpl_map_set(A(vm), r, o->e[i].key, v)) return oom(vm);
        }
    }
    *out = tpl_v_map(r);
    return 0;
}

static int transform(tpl_vm *vm, tpl_value *a, tpl_value *out, bool keys)
{
    tpl_map *m = M_(a[0]);
    tpl_rb_block blk = tpl_vm_block(vm);
    tpl_value mapping = keys && tpl_given(a[1]) ? a[1] : tpl_v_unset();
    if (tpl_given(mapping) && mapping.type != TPL_T_MAP) return type_error(vm, TPL_VT_DICT, mapping);
    if (!blk.pc && !tpl_given(mapping)) {   /* the enumerator, as what it yields: the keys or the values */
        tpl_list *items = new_list(vm, m->len);
        if (!items) return oom(vm);
        for (uint32_t i = 0; i < m->len; i++) items->items[items->len++] = keys ? m->e[i].key : m->e[i].val;
        *out = tpl_v_list(items);
        return 0;
    }
    tpl_map *r = rb_map(vm, m->len);
    if (!r) return oom(vm);
    for (uint32_t i = 0; i < m->len; i++) {
        tpl_value x = keys ? m->e[i].key : m->e[i].val, v;
        tpl_value *hit = tpl_given(mapping) ? tpl_map_get(mapping.u.map, x) : NULL;
        if (hit) v = *hit;
        else if (blk.pc) YIELD(blk, &x, 1, &v);
        else v = x;
        if (!tpl_map_set(A(vm), r, keys ? v : m->e[i].key, keys ? m->e[i].val : v)) return oom(vm);
    }
    *out = tpl_v_map(r);
    return 0;
}

int r_hash_transform_values(tpl_vm *vm, tpl_value *a, tpl_value *out) { return transform(vm, a, out, false); }
int r_hash_transform_keys(tpl_vm *vm, tpl_value *a, tpl_value *out) { return transform(vm, a, out, true); }

/* Hash#slice(*keys) (in the order asked) / #except(*keys). */
static int hash_pick(tpl_vm *vm, tpl_value *a, tpl_value *out, bool keep)
{
    tpl_map *m = M_(a[0]);
    tpl_list *ks = L_(a[1]);
    tpl_map *r = rb_map(vm, keep ? ks->len : m->len);
    if (!r) return oom(vm);
    if (keep) {
        for (uint32_t i = 0; i < ks->len; i++) {
            tpl_value *v = rb_map_get(m, ks->items[i]);
            if (v) {
                /* the hash's own key object (a symbol key stays a symbol) */
                tpl_value key = ks->items[i];
                for (uint32_t j = 0; j < m->len; j++) if (&m->e[j].val == v) { key = m->e[j].key; break; }
                if (!tpl_map_set(A(vm), r, key, *v)) return oom(vm);
            }
        }
    } else {
        for (uint32_t i = 0; i < m->len; i++) {
            bool drop = false;
            for (uint32_t k = 0; k < ks->len && !drop; k++) drop = tpl_eql(m->e[i].key, ks->items[k]);   /* (eql?: :k is no "k") */
            if (!drop && !tpl_map_set(A(vm), r, m->e[i].key, m->e[i].val)) return oom(vm);
        }
    }
    *out = tpl_v_map(r);
    return 0;
}

int r_hash_slice(tpl_vm *vm, tpl_value *a, tpl_value *out) { return hash_pick(vm, a, out, true); }
int r_hash_except(tpl_vm *vm, tpl_value *a, tpl_value *out) { return hash_pick(vm, a, out, false); }

int r_hash_invert(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_map *m = M_(a[0]), *r = rb_map(vm, m->len);
    if (!r) return oom(vm);
    for (uint32_t i = 0; i < m->len; i++) {
        /* a later equal value replaces the key where the first one put it, as Ruby's Hash#[]= */
        if (!tpl_map_set(A(vm), r, m->e[i].val, m->e[i].key)) return oom(vm);
    }
    *out = tpl_v_map(r);
    return 0;
}

int r_hash_key(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_map *m = M_(a[0]);
    for (uint32_t i = 0; i < m->len; i++) {
        bool eq = false;
        if (tpl_vm_rb_equal(vm, m->e[i].val, a[1], &eq) < 0) return -1;
        if (eq) { *out = m->e[i].key; return 0; }
    }
    *out = tpl_v_none();
    return 0;
}

static int hash_values_at(tpl_vm *vm, tpl_value *a, tpl_value *out, bool fetch)
{
    tpl_map *m = M_(a[0]);
    tpl_list *ks = L_(a[1]);
    tpl_rb_block blk = tpl_vm_block(vm);
    tpl_list *r = new_list(vm, ks->len);
    if (!r) return oom(vm);
    for (uint32_t i = 0; i < ks->len; i++) {
        tpl_value *v = rb_map_get(m, ks->items[i]), x;
        if (v) x = *v;
        else if (!fetch) x = tpl_v_none();
        else if (blk.pc) YIELD(blk, &ks->items[i], 1, &x);
        else {
            tpl_value args[3] = { a[0], ks->items[i], tpl_v_unset() };
            return r_hash_fetch(vm, args, out);
        }
        r->items[r->len++] = x;
    }
    *out = tpl_v_list(r);
    return 0;
}

int r_hash_values_at(tpl_vm *vm, tpl_value *a, tpl_value *out) { return hash_values_at(vm, a, out, false); }
int r_hash_fetch_values(tpl_vm *vm, tpl_value *a, tpl_value *out) { return hash_values_at(vm, a, out, true); }

static int hash_each_part(tpl_vm *vm, tpl_value *a, tpl_value *out, bool keys)
{
    tpl_value l = tpl_v_none();
    if ((keys ? r_hash_keys : r_hash_values)(vm, a, &l) < 0) return -1;
    return yield_each(vm, l.u.list, a[0], out);
}

int r_hash_each_key(tpl_vm *vm, tpl_value *a, tpl_value *out) { return hash_each_part(vm, a, out, true); }
int r_hash_each_value(tpl_vm *vm, tpl_value *a, tpl_value *out) { return hash_each_part(vm, a, out, false); }

int r_hash_compact(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_map *m = M_(a[0]), *r = rb_map(vm, m->len);
    if (!r) return oom(vm);
    for (uint32_t i = 0; i < m->len; i++)
        if (m->e[i].val.type != TPL_T_NONE && m->e[i].val.type != TPL_T_UNDEF && !tpl_map_set(A(vm), r, m->e[i].key, m->e[i].val))
            return oom(vm);
    *out = tpl_v_map(r);
    return 0;
}

/* ---- Range */

int r_range_end(tpl_vm *vm, tpl_value *a, tpl_value *out) { (void)vm; *out = a[0].u.list->items[1]; return 0; }
int r_range_exclude_end_p(tpl_vm *vm, tpl_value *a, tpl_value *out) { (void)vm; *out = tpl_v_bool(a[0].u.list->items[2].u.i != 0); return 0; }

/* ---- begin/rescue (compiler/lower_erb.c begin_): the methods of the rescue machinery */

/* Ruby's exception classes tpl raises, each with its superclass (Exception's subtree that
 * templates meet). */
static const char *const exc_tree[][2] = {
    { "NoMethodError", "NameError" }, { "NameError", "StandardError" }, { "FrozenError", "RuntimeError" },
    { "RuntimeError", "StandardError" }, { "KeyError", "IndexError" }, { "StopIteration", "IndexError" },
    { "IndexError", "StandardError" }, { "FloatDomainError", "RangeError" }, { "RangeError", "StandardError" },
    { "Math::DomainError", "StandardError" }, { "ArgumentError", "StandardError" }, { "TypeError", "StandardError" },
    { "ZeroDivisionError", "StandardError" }, { "LocalJumpError", "StandardError" }, { "RegexpError", "StandardError" },
    { "EncodingError", "StandardError" }, { "IOError", "StandardError" }, { "StandardError", "Exception" },
    { "SystemStackError", "Exception" },
    { "JSON::NestingError", "JSON::ParserError" }, { "JSON::ParserError", "JSON::JSONError" },
    { "JSON::GeneratorError", "JSON::JSONError" }, { "JSON::JSONError", "StandardError" },
    { NULL, NULL } };

static const char *exc_parent(const char *c, size_t n)
{
    for (int i = 0; exc_tree[i][0]; i++)
        if (strlen(exc_tree[i][0]) == n && memcmp(exc_tree[i][0], c, n) == 0) return exc_tree[i][1];
    return n == 9 && memcmp(c, "Exception", 9) == 0 ? NULL : "StandardError";
}

/* nil.(begin) { body }: [true, value] when the body ran, [false, nil, message, class, full message]
 * when it raised an error Ruby's rescue could catch (tpl_vm_rescue); other errors stay. tpl's
 * messages end with the exception's class in parentheses ("... (NoMethodError)"); without one it
 * is a StandardError. */
int r_any_begin(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    (void)a;
    tpl_rb_block blk = tpl_vm_block(vm);
    tpl_value v = tpl_v_none();
    int yr = tpl_rb_yield(vm, &blk, NULL, 0, &v);
    tpl_list *l = new_list(vm, 5);
    if (yr >= 0) {
        if (!l) return oom(vm);
        l->items[0] = tpl_v_bool(true);
        l->items[1] = v;
        l->len = 2;
        *out = tpl_v_list(l);
        return 0;
    }
    char buf[1100], *msg = buf;
    void *payload;
    uint32_t where;
    /* (tpl's depth limit is a limit error no clause takes: Ruby's stack is deeper, so a rescue of it would
     * run where Ruby's recursion goes on) */
    if (!tpl_vm_rescue_host(vm, buf, sizeof buf, &payload, &where)) return -1;
    if (!l || (payload && !(l = new_list(vm, 7)))) return oom(vm);
    tpl_value chain = tpl_v_none();
    if (payload) {   /* a host's Ruby exception: "ANCESTORS\x02MESSAGE (Class)" */
        char *sep = strchr(buf, '\x02');
        if (!sep) return tpl_vm_rethrow(vm, payload, buf, strlen(buf), where);
        char *c = tpl_arena_strdup(A(vm), buf, strlen(buf));
        if (!c) return oom(vm);
        chain = tpl_v_str(c, (size_t)(sep - buf));
        msg = sep + 1;
    }
    size_t n = strlen(msg), mlen = n;
    char *orig = tpl_arena_strdup(A(vm), msg, n);   /* ([4]: the message as raised, for a re-raise) */
    if (!orig) return oom(vm);
    char *dym = strstr(msg, "\nDid you mean?  ");
    while (dym && !(dym - msg >= 4 && dym[-1] == ')'))   /* (not one in the receiver's inspect: after the class) */
        dym = strstr(dym + 1, "\nDid you mean?  ");
    if (dym) {
        /* did_you_mean's lines after the class, as Ruby prints an uncaught error ("MSG (NoMethodError)\nDid you
         * mean?  x"): the exception's message is MSG and the lines, followed by " (Class)" (tpl_rb_exc_class) */
        size_t hn = (size_t)(dym - msg), k = hn - 1;
        while (k > 0 && (msg[k - 1] == ':' || (msg[k - 1] >= 'a' && msg[k - 1] <= 'z') || (msg[k - 1] >= 'A' && msg[k - 1] <= 'Z'))) k--;
        if (k >= 2 && msg[k - 1] == '(' && msg[k - 2] == ' ') {
            char *r = tpl_arena_alloc(A(vm), n + 1);
            if (!r) return oom(vm);
            memcpy(r, msg, k - 2);
            memcpy(r + k - 2, dym, n - hn);
            memcpy(r + k - 2 + (n - hn), msg + k - 2, hn - (k - 2));
            r[n] = 0;
            msg = r;
        }
    }
    tpl_value cls = tpl_v_str("StandardError", 13);
    if (n >= 3 && msg[n - 1] == ')') {
        size_t k = n - 1;
        while (k > 0 && (msg[k - 1] == ':' || (msg[k - 1] >= 'a' && msg[k - 1] <= 'z') || (msg[k - 1] >= 'A' && msg[k - 1] <= 'Z'))) k--;
        if (k >= 2 && msg[k - 1] == '(' && msg[k - 2] == ' ' && msg[k] >= 'A' && msg[k] <= 'Z') {
            char *c = tpl_arena_strdup(A(vm), msg + k, n - 1 - k);
            if (!c) return oom(vm);
            cls = tpl_v_str(c, n - 1 - k);
            mlen = k - 2;
        }
    }
    size_t off = 0;   /* a bare raise outside a rescue: "unhandled exception" uncaught, an empty message caught */
    if (strcmp(msg, "unhandled exception (RuntimeError)") == 0) { off = 19; mlen = 0; }
    char *m = tpl_arena_strdup(A(vm), msg, n);
    if (!m) return oom(vm);
    l->items[0] = tpl_v_bool(false);
    l->items[1] = tpl_v_none();
    l->items[2] = tpl_v_str(m + off, mlen);
    l->items[2].flags = TPL_F_EXC_RB;
    l->items[3] = cls;
    l->items[4] = tpl_v_str(orig, n);
    l->len = 5;
    if (payload) {   /* [3]: the ancestors' names; [5], [6]: the payload and where (tpl_vm_rethrow puts it back) */
        l->items[3] = chain;
        l->items[5] = tpl_v_int((int64_t)(intptr_t)payload);
        l->items[6] = tpl_v_int(where);
        l->len = 7;
    }
    *out = tpl_v_list(l);
    return 0;
}

/* caught.(rescue?)(class names): whether the caught error's class is one of them or descends from
 * one (none named: StandardError). */
static bool exc_is(tpl_value cls, tpl_value want)
{
    if (cls.len == want.len && memcmp(cls.u.s, want.u.s, cls.len) == 0) return true;
    for (const char *p = exc_parent(cls.u.s, cls.len); p; p = exc_parent(p, strlen(p)))
        if (strlen(p) == want.len && memcmp(p, want.u.s, want.len) == 0) return true;
    return false;
}

/* Whether class name w names one of the space-separated class paths of list: the path, or its
 * last segments after a "::" (`rescue MyError` in a template of a binding inside module App,
 * whose constant Ruby finds lexically, names App::MyError). */
static bool word_in(tpl_value list, tpl_value w)
{
    for (size_t k = 0; k <= list.len;) {
        size_t e = k;
        while (e < list.len && list.u.s[e] != ' ') e++;
        if (e - k >= w.len && memcmp(list.u.s + e - w.len, w.u.s, w.len) == 0 &&
            (e - k == w.len || (e - k >= w.len + 2 && list.u.s[e - w.len - 1] == ':' && list.u.s[e - w.len - 2] == ':')))
            return true;
        k = e + 1;
    }
    return false;
}

int r_any_rescue_p(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    (void)vm;
    tpl_list *names = L_(a[1]);
    tpl_value cls = L_(a[0])->items[3];
    if (L_(a[0])->len == 7) {   /* a host's exception: its class and ancestors by name (space-separated) */
        bool hit = false;
        for (uint32_t i = 0; i < (names->len ? names->len : 1) && !hit; i++)
            hit = word_in(cls, names->len ? names->items[i] : tpl_v_str("StandardError", 13));
        *out = tpl_v_bool(hit);
        return 0;
    }
    bool hit = names->len == 0 && exc_is(cls, tpl_v_str("StandardError", 13));
    for (uint32_t i = 0; i < names->len && !hit; i++) hit = exc_is(cls, names->items[i]);
    *out = tpl_v_bool(hit);
    return 0;
}

/* caught.(raise): the caught error again (no clause matched). */
int r_any_reraise(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    (void)out;
    tpl_list *l = L_(a[0]);
    tpl_value m = l->items[4];
    if (l->len == 7) {   /* a host's exception: the host raises it again */
        tpl_value c = l->items[3];
        char buf[1100];
        int k = snprintf(buf, sizeof buf, "%.*s\x02%.*s", (int)c.len, c.u.s, (int)m.len, m.u.s);
        return tpl_vm_rethrow(vm, (void *)(intptr_t)l->items[5].u.i, buf, k < 0 ? 0 : (size_t)k >= sizeof buf ? sizeof buf - 1 : (size_t)k,
                              (uint32_t)l->items[6].u.i);
    }
    return tpl_vm_fail(vm, TPL_EK_RAISED, "%.*s", (int)m.len, m.u.s);
}

/* Kernel#raise / fail: raise "message" (RuntimeError), raise Class, raise Class, "message". */
int r_k_raise(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    (void)out;
    tpl_value e = a[0], m = a[1];
    if (!tpl_given(e)) return tpl_vm_fail(vm, TPL_EK_RAISED, "unhandled exception (RuntimeError)");
    if (e.type == TPL_T_STR && (e.flags & TPL_F_CLASS_RB)) {
        tpl_value msg = tpl_given(m) ? str_of(vm, m) : e;
        return tpl_vm_fail(vm, TPL_EK_RAISED, "%.*s (%.*s)", (int)msg.len, msg.u.s, (int)e.len, e.u.s);
    }
    if (is_exc(e)) {   /* raise e (a rescued or new exception), raise e, "other message" */
        tpl_value c = exc_class(e), msg = tpl_given(m) ? str_of(vm, m) : e;
        return tpl_vm_fail(vm, TPL_EK_RAISED, "%.*s (%.*s)", (int)msg.len, msg.u.s, (int)c.len, c.u.s);
    }
    if (e.type != TPL_T_STR || tpl_given(m)) return tpl_vm_error(vm, TPL_ERR_TYPE, "exception class/object expected (TypeError)");
    return tpl_vm_fail(vm, TPL_EK_RAISED, "%.*s (RuntimeError)", (int)e.len, e.u.s);
}

/* ---- the binary operators & | ^ << >> (the parser makes them method calls, as Ruby does) */

/* Array#& / Array#| : intersection / union by hash and eql? (order of the receiver, then the
 * argument's new items), as Array#intersection / #union with one argument. */
static int arr_setop1(tpl_vm *vm, tpl_value *a, int op, tpl_value *out)
{
    if (!is_array(a[1])) return type_error(vm, TPL_VT_LIST, a[1]);
    tpl_value o[1] = { a[1] };
    tpl_list ol = { .items = o, .len = 1 };
    return set_op(vm, a[0], &ol, op, out);
}
int r_arr_and(tpl_vm *vm, tpl_value *a, tpl_value *out) { return arr_setop1(vm, a, '&', out); }
int r_arr_or(tpl_vm *vm, tpl_value *a, tpl_value *out) { return arr_setop1(vm, a, '|', out); }

/* Integer#& | ^ << >> (Float has none: NoMethodError; a non-integer argument cannot be coerced). */
static int int_bits(tpl_vm *vm, tpl_value *a, const char *name, tpl_value *out)
{
    if (a[0].type != TPL_T_INT) return no_method(vm, a[0], name, strlen(name));
    tpl_value b = a[1];
    if (b.type == TPL_T_BIGINT) return big_method(vm, a[0], name, strlen(name), &b, 1, 0, out);
    if (b.type != TPL_T_INT) {
        if (b.type == TPL_T_FLOAT && name[0] != '<' && name[0] != '>') {
            tpl_sb sb;
            tpl_sb_init(&sb, A(vm));
            tpl_rb_inspect(&sb, b);
            return tpl_vm_error(vm, TPL_ERR_TYPE, "%.*s can't be coerced into Integer (TypeError)", (int)sb.len, sb.p ? sb.p : "");
        }
        if (b.type == TPL_T_FLOAT) {   /* << / >>: rb_to_int, Float#to_i (NaN, Infinity: FloatDomainError) */
            double f = b.u.f;
            if (!isfinite(f)) return tpl_vm_error(vm, TPL_ERR_TYPE, "%s (FloatDomainError)", isnan(f) ? "NaN" : f > 0 ? "Infinity" : "-Infinity");
            if (fabs(f) >= 9.2e18) {   /* a shift past 2**63 bits: to the right 0 or -1, to the left past the limit */
                bool l = (name[0] == '<') != (f < 0);
                if (!l || a[0].u.i == 0) { *out = tpl_v_int(!l && a[0].u.i < 0 ? -1 : 0); return 0; }
                if (tpl_big_from_double(vm, trunc(fabs(f)), &b) < 0) return -1;
                return big_method(vm, a[0], "<<", 2, &b, 1, 0, out);
            }
            b = tpl_v_int((int64_t)f);
        } else if (name[0] == '<' || name[0] == '>') {   /* (rb_to_int's TypeError: "of nil into Integer") */
            if (b.type == TPL_T_NONE || b.type == TPL_T_UNDEF)
                return tpl_vm_error(vm, TPL_ERR_TYPE, "no implicit conversion of nil into Integer (TypeError)");
            return type_error(vm, TPL_VT_INT, b);
        }
        else return coerce_failed(vm, b, "Integer");
    }
    int64_t x = a[0].u.i, y = b.u.i;
    switch (name[0]) {
    case '&': *out = tpl_v_int(x & y); return 0;
    case '|': *out = tpl_v_int(x | y); return 0;
    case '^': *out = tpl_v_int(x ^ y); return 0;
    default: break;
    }
    bool left = name[0] == '<';
    if (y < 0) { left = !left; y = y == INT64_MIN ? INT64_MAX : -y; }
    if (!left) { *out = tpl_v_int(y >= 63 ? (x < 0 ? -1 : 0) : x >> y); return 0; }
    if (x == 0) { *out = tpl_v_int(0); return 0; }
    if (y >= 63 || (x > 0 ? x > (INT64_MAX >> y) : x < (INT64_MIN >> y)))
        return big_method(vm, a[0], left ? "<<" : ">>", 2, &(tpl_value){ .type = TPL_T_INT, .u.i = y }, 1, 0, out);
    *out = tpl_v_int((int64_t)((uint64_t)x << y));
    return 0;
}
int r_num_band(tpl_vm *vm, tpl_value *a, tpl_value *out) { return int_bits(vm, a, "&", out); }
int r_num_bor(tpl_vm *vm, tpl_value *a, tpl_value *out) { return int_bits(vm, a, "|", out); }
int r_num_bxor(tpl_vm *vm, tpl_value *a, tpl_value *out) { return int_bits(vm, a, "^", out); }
int r_num_lshift(tpl_vm *vm, tpl_value *a, tpl_value *out) { return int_bits(vm, a, "<<", out); }
int r_num_rshift(tpl_vm *vm, tpl_value *a, tpl_value *out) { return int_bits(vm, a, ">>", out); }

/* true/false/nil & | ^ (TrueClass, FalseClass, NilClass): booleans by the argument's truth. */
static int bool_op(tpl_vm *vm, tpl_value *a, char op, tpl_value *out)
{
    tpl_value s = a[0];
    if (s.type != TPL_T_BOOL && s.type != TPL_T_NONE && s.type != TPL_T_UNDEF) return no_method(vm, s, op == '&' ? "&" : op == '|' ? "|" : "^", 1);
    bool x = tpl_truthy_rb(s), y = tpl_truthy_rb(a[1]);
    *out = tpl_v_bool(op == '&' ? x && y : op == '|' ? x || y : x != y);
    return 0;
}
int r_any_band(tpl_vm *vm, tpl_value *a, tpl_value *out) { return bool_op(vm, a, '&', out); }
int r_any_bor(tpl_vm *vm, tpl_value *a, tpl_value *out) { return bool_op(vm, a, '|', out); }
int r_any_bxor(tpl_vm *vm, tpl_value *a, tpl_value *out) { return bool_op(vm, a, '^', out); }

/* nil.(hash)(k1, v1, k2, v2, ...): an ERB hash literal (compiler/lower_erb.c): a Ruby Hash, keys by
 * eql? (any value may be a key, arrays too); a repeated key keeps its first place, the last value. */
int r_any_hash_lit(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *kv = L_(a[1]);
    tpl_map *m = rb_map(vm, kv->len / 2);
    if (!m) return oom(vm);
    for (uint32_t i = 0; i + 1 < kv->len; i += 2)
        if (!tpl_map_set(A(vm), m, kv->items[i], kv->items[i + 1])) return oom(vm);
    if (fuel_out(vm)) return tpl_vm_nomem(vm);
    *out = tpl_v_map(m);
    out->flags = TPL_F_MUT_RB;
    return 0;
}

/* Hash#default: Hash.new(v)'s v; nil without one or with a default block. */
int r_hash_default(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    (void)vm;
    const rb_hash_default *d = a[0].u.map->rb_default;
    *out = d && !d->blk.pc ? d->value : tpl_v_none();
    return 0;
}

/* (store_back) (compiler/lower_erb.c index_store): `h[k] << x` stores h[k] back into h only when h has
 * key k (an item read from a Hash's default is not stored: Ruby never assigns it); an array's item
 * as []=; a string or any other value is left as it is (`s[0] << "x"` changes a new substring). */
int r_hash_store_back(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    uint64_t *fuel = A(vm)->fuel;
    tpl_value *hit = tpl_map_get_metered(a[0].u.map, a[1], fuel);
    if (fuel_out(vm)) return tpl_vm_nomem(vm);
    if (!hit) { *out = a[0]; return 0; }
    return r_hash_setitem(vm, a, out);
}

int r_arr_store_back(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value b[4] = { a[0], a[1], a[2], tpl_v_unset() };
    return r_arr_setitem(vm, b, out);
}

int r_any_store_back(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    (void)vm;
    *out = a[0];
    return 0;
}

/* ------------------------------------------------------------------ pack / unpack (issue 15) */

/* One directive of a pack template: its letter, its count (-1: `*`), a base64 line length of 0 (`m0`). */
typedef struct { char d; int64_t count; } pack_dir;

static const char b64_chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Parses fmt into dirs (at most 32); an unsupported directive is an error naming it. */
static int pack_dirs(tpl_vm *vm, tpl_value fmt, pack_dir *dirs, int *nd)
{
    if (want_str(vm, fmt) < 0) return -1;   /* (a Symbol too: "no implicit conversion of Symbol into String") */
    *nd = 0;
    for (uint32_t i = 0; i < fmt.len;) {
        char c = fmt.u.s[i++];
        if (c == ' ' || c == '\t' || c == '\n') continue;
        if (!c || !strchr("mCcUaAHhNnVvw", c))
            return tpl_vm_error(vm, TPL_ERR_SYNTAX, "unsupported Ruby construct: pack/unpack directive '%c' (tpl has "
                                "m, m0, C, c, U, a, A, H, h, N, n, V, v and w)",
                                (unsigned char)c >= 0x20 && (unsigned char)c < 0x7f ? c : '?');
        int64_t count = c == 'm' ? 60 : 1;
        if (i < fmt.len && fmt.u.s[i] == '*') { count = -1; i++; }
        else if (i < fmt.len && fmt.u.s[i] >= '0' && fmt.u.s[i] <= '9') {
            count = 0;
            while (i < fmt.len && fmt.u.s[i] >= '0' && fmt.u.s[i] <= '9' && count < 100000000) count = count * 10 + (fmt.u.s[i++] - '0');
            if (c == 'm' && count != 0) count = count < 3 ? 60 : count / 3 * 4;   /* Ruby: bytes per line, rounded to 3 */
        } else if (c == 'm') count = 60;
        if (*nd >= 32) return tpl_vm_error(vm, TPL_ERR_LIMIT, "pack template too long");
        dirs[(*nd)++] = (pack_dir){ c, count };
    }
    return 0;
}

/* Bytes [from, to) of a packed or unpacked string are text tpl can hold as Ruby has it: a byte past 127 makes
 * Ruby's an ASCII-8BIT (binary) string, and a control byte without a named escape (NUL, 0x01, 0x7F, ...) is
 * one whose inspect differs (binary "\x00", tpl's UTF-8 "\u0000"): either is the error naming the directive. */
static int pack_text_check(tpl_vm *vm, const char *s, size_t from, size_t to, char c, bool unpack)
{
    for (size_t i = from; i < to; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch >= 0x80 || ch == 0x7F || (ch < 0x20 && !strchr("\n\r\t\f\v\b\a\033", ch) ) || ch == 0)
            return tpl_vm_error(vm, TPL_ERR_SYNTAX, "unsupported Ruby construct: %s('%c') of a %s (a binary string)",
                                unpack ? "unpack" : "pack", c, ch >= 0x80 ? "byte past 127" : "NUL or control byte");
    }
    return 0;
}

/* A hex digit's value as Ruby's pack('H'/'h') reads it (a letter: its low 3 bits + 9; else its low 4 bits). */
static unsigned hex_nibble(unsigned char ch)
{
    return ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')) ? ((ch & 7u) + 9u) & 15u : ch & 15u;
}

int r_arr_pack(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    pack_dir dirs[32];
    int nd;
    if (pack_dirs(vm, a[1], dirs, &nd) < 0) return -1;
    tpl_list *l = a[0].u.list;
    uint32_t k = 0;
    tpl_sb b;
    tpl_sb_init(&b, A(vm));
    for (int d = 0; d < nd; d++) {
        char c = dirs[d].d;
        size_t from = b.len;
        if (c == 'm') {
            if (k >= l->len) return tpl_vm_error(vm, TPL_ERR_VALUE, "too few arguments (ArgumentError)");
            tpl_value s = l->items[k++];
            if (s.type != TPL_T_STR) return want_str(vm, s);
            int64_t line = dirs[d].count;   /* output chars per line; 0: one line, no newline */
            int64_t col = 0;
            for (uint32_t i = 0; i < s.len; i += 3) {
                uint32_t n = s.len - i < 3 ? s.len - i : 3;
                uint32_t v = (uint32_t)(unsigned char)s.u.s[i] << 16 | (n > 1 ? (uint32_t)(unsigned char)s.u.s[i + 1] << 8 : 0) |
                             (n > 2 ? (unsigned char)s.u.s[i + 2] : 0);
                char q[4] = { b64_chars[v >> 18 & 63], b64_chars[v >> 12 & 63], n > 1 ? b64_chars[v >> 6 & 63] : '=',
                              n > 2 ? b64_chars[v & 63] : '=' };
                tpl_sb_put(&b, q, 4);
                col += 4;
                if (line && col >= line) { tpl_sb_putc(&b, '\n'); col = 0; }
            }
            if (line && col) tpl_sb_putc(&b, '\n');
            continue;
        }
        if (c == 'a' || c == 'A' || c == 'H' || c == 'h') {   /* one String item */
            if (k >= l->len) return tpl_vm_error(vm, TPL_ERR_VALUE, "too few arguments (ArgumentError)");
            tpl_value s = l->items[k++];
            if (s.type != TPL_T_STR) return want_str(vm, s);
            int64_t n = dirs[d].count < 0 ? (int64_t)s.len : dirs[d].count;
            if (n > (int64_t)1 << 30) return tpl_vm_error(vm, TPL_ERR_LIMIT, "pack count too large");
            if (c == 'a' || c == 'A') {   /* n bytes, padded with NULs ('a') or spaces ('A') */
                size_t take = (size_t)n < s.len ? (size_t)n : s.len;
                tpl_sb_put(&b, s.u.s, take);
                for (size_t j = take; j < (size_t)n; j++) tpl_sb_putc(&b, c == 'a' ? '\0' : ' ');
            } else {   /* n hex digits, high ('H') or low ('h') nibble first; missing ones are 0 */
                for (int64_t j = 0; j < n; j += 2) {
                    unsigned hi = j < (int64_t)s.len ? hex_nibble((unsigned char)s.u.s[j]) : 0;
                    unsigned lo = j + 1 < n && j + 1 < (int64_t)s.len ? hex_nibble((unsigned char)s.u.s[j + 1]) : 0;
                    tpl_sb_putc(&b, (char)(c == 'H' ? hi << 4 | lo : lo << 4 | hi));
                }
            }
            if (b.failed) return oom(vm);
            if (pack_text_check(vm, b.p, from, b.len, c, false) < 0) return -1;
            continue;
        }
        int64_t n = dirs[d].count < 0 ? (int64_t)(l->len - k) : dirs[d].count;
        for (int64_t j = 0; j < n; j++) {
            if (k >= l->len) return tpl_vm_error(vm, TPL_ERR_VALUE, "too few arguments (ArgumentError)");
            tpl_value v = l->items[k++];
            if (v.type != TPL_T_INT) return type_error(vm, TPL_VT_INT, v);
            if (c == 'U') {
                if (v.u.i < 0 || v.u.i > 0x10FFFF || (v.u.i >= 0xD800 && v.u.i <= 0xDFFF))
                    return tpl_vm_error(vm, TPL_ERR_VALUE, "pack(U): value out of range (RangeError)");
                tpl_sb_put_cp(&b, (uint32_t)v.u.i);
                continue;
            }
            uint64_t u = (uint64_t)v.u.i;   /* (two's complement: Ruby packs a negative's low bytes) */
            if (c == 'N') { char q[4] = { (char)(u >> 24), (char)(u >> 16), (char)(u >> 8), (char)u }; tpl_sb_put(&b, q, 4); }
            else if (c == 'n') { char q[2] = { (char)(u >> 8), (char)u }; tpl_sb_put(&b, q, 2); }
            else if (c == 'V') { char q[4] = { (char)u, (char)(u >> 8), (char)(u >> 16), (char)(u >> 24) }; tpl_sb_put(&b, q, 4); }
            else if (c == 'v') { char q[2] = { (char)u, (char)(u >> 8) }; tpl_sb_put(&b, q, 2); }
            else if (c == 'w') {   /* BER: 7 bits a byte, most significant first, the high bit on all but the last */
                if (v.u.i < 0) return tpl_vm_error(vm, TPL_ERR_VALUE, "can't compress negative numbers (ArgumentError)");
                char q[10];
                int m = 0;
                do { q[9 - m] = (char)((u & 0x7F) | (m ? 0x80 : 0)); u >>= 7; m++; } while (u);
                tpl_sb_put(&b, q + 10 - m, (size_t)m);
            } else tpl_sb_putc(&b, (char)(u & 0xFF));
        }
        if (b.failed) return oom(vm);
        if (c == 'C' || c == 'c') {   /* (control bytes pass, as before: tpl's text prints them as Ruby's does) */
            for (size_t i = from; i < b.len; i++)
                if ((unsigned char)b.p[i] >= 0x80)
                    return tpl_vm_error(vm, TPL_ERR_SYNTAX, "unsupported Ruby construct: pack('%c') of a byte past 127 "
                                        "(a binary string)", c);
        } else if (c != 'U' && pack_text_check(vm, b.p, from, b.len, c, false) < 0) return -1;
    }
    if (b.failed) return oom(vm);
    *out = tpl_sb_value(&b);
    return 0;
}

static int b64_val(unsigned char c)
{
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

/* The unpacked values of s by fmt, in a new array (first: stop after the first value, unpack1). */
static int unpack_impl(tpl_vm *vm, tpl_value s, tpl_value fmt, bool first, tpl_value *out)
{
    pack_dir dirs[32];
    int nd;
    if (pack_dirs(vm, fmt, dirs, &nd) < 0) return -1;
    tpl_list *l = new_list(vm, 8);
    if (!l) return oom(vm);
    size_t i = 0;
    for (int d = 0; d < nd && !(first && l->len); d++) {
        char c = dirs[d].d;
        if (c == 'm') {
            tpl_sb b;
            tpl_sb_init(&b, A(vm));
            uint32_t acc = 0;
            int bits = 0;
            for (; i < s.len; i++) {
                unsigned char ch = (unsigned char)s.u.s[i];
                if (ch == '=') { while (i < s.len && s.u.s[i] == '=') i++; break; }
                int v = b64_val(ch);
                if (v < 0) {
                    if (dirs[d].count == 0) return tpl_vm_error(vm, TPL_ERR_VALUE, "invalid base64 (ArgumentError)");
                    continue;
                }
                acc = acc << 6 | (uint32_t)v;
                bits += 6;
                if (bits >= 8) { bits -= 8; tpl_sb_putc(&b, (char)(acc >> bits & 0xFF)); }
            }
            if (b.failed) return oom(vm);
            tpl_value r = tpl_sb_value(&b);
            size_t bad;
            if (!tpl_utf8_valid(r.u.s, r.len, &bad))
                return tpl_vm_error(vm, TPL_ERR_SYNTAX, "unsupported Ruby construct: unpack('m') of bytes that are not "
                                    "UTF-8 text (a binary string)");
            if (!tpl_list_push(A(vm), l, r)) return oom(vm);
            continue;
        }
        if (c == 'a' || c == 'A' || c == 'H' || c == 'h') {   /* one String: n bytes ('a', 'A') or n hex digits */
            size_t rest = s.len - i, n;
            if (c == 'a' || c == 'A') n = dirs[d].count < 0 || (uint64_t)dirs[d].count > rest ? rest : (size_t)dirs[d].count;
            else n = dirs[d].count < 0 || (uint64_t)dirs[d].count > rest * 2 ? rest * 2 : (size_t)dirs[d].count;
            tpl_value r;
            if (c == 'a' || c == 'A') {
                size_t m = n;
                if (c == 'A') while (m && (s.u.s[i + m - 1] == ' ' || s.u.s[i + m - 1] == '\0')) m--;
                if (pack_text_check(vm, s.u.s, i, i + m, c, true) < 0) return -1;
                char *p = tpl_arena_strdup(A(vm), s.u.s + i, m);
                if (!p) return oom(vm);
                r = tpl_v_str(p, m);
                i += n;
            } else {
                char *p = tpl_arena_alloc(A(vm), n + 1);
                if (!p) return oom(vm);
                static const char hex[] = "0123456789abcdef";
                for (size_t j = 0; j < n; j++) {
                    unsigned char byte = (unsigned char)s.u.s[i + j / 2];
                    unsigned nib = (j % 2 == 0) == (c == 'H') ? byte >> 4 : byte & 15u;
                    p[j] = hex[nib];
                }
                p[n] = 0;
                r = tpl_v_str(p, n);
                i += (n + 1) / 2;
            }
            if (!tpl_list_push(A(vm), l, r)) return oom(vm);
            continue;
        }
        int64_t n = dirs[d].count;
        size_t width = c == 'N' || c == 'V' ? 4 : c == 'n' || c == 'v' ? 2 : 1;
        for (int64_t j = 0; (n < 0 || j < n) && !(first && l->len); j++) {
            if (c == 'w') {   /* BER: bytes with the high bit set, then one without */
                size_t at = i;
                while (at < s.len && ((unsigned char)s.u.s[at] & 0x80)) at++;
                if (at >= s.len) { i = s.len; break; }   /* (an unterminated number is dropped, as Ruby) */
                mpz_t z;
                mpz_init(z);
                for (; i <= at; i++) {
                    mpz_mul_2exp(z, z, 7);
                    mpz_add_ui(z, z, (unsigned char)s.u.s[i] & 0x7Fu);
                }
                tpl_value v;
                if (tpl_big_result(vm, z, &v) < 0) return -1;
                if (!tpl_list_push(A(vm), l, v)) return oom(vm);
                continue;
            }
            if (width > 1) {
                if (s.len - i < width) {   /* too few bytes: nil (past `*`: the end) */
                    i = s.len;
                    if (n < 0) break;
                    if (!tpl_list_push(A(vm), l, tpl_v_none())) return oom(vm);
                    continue;
                }
                const unsigned char *q = (const unsigned char *)s.u.s + i;
                int64_t v = c == 'N' ? (int64_t)((uint32_t)q[0] << 24 | (uint32_t)q[1] << 16 | (uint32_t)q[2] << 8 | q[3])
                          : c == 'V' ? (int64_t)((uint32_t)q[3] << 24 | (uint32_t)q[2] << 16 | (uint32_t)q[1] << 8 | q[0])
                          : c == 'n' ? (int64_t)(q[0] << 8 | q[1]) : (int64_t)(q[1] << 8 | q[0]);
                i += width;
                if (!tpl_list_push(A(vm), l, tpl_v_int(v))) return oom(vm);
                continue;
            }
            if (i >= s.len) {
                if (n < 0) break;
                if (!tpl_list_push(A(vm), l, tpl_v_none())) return oom(vm);
                continue;
            }
            int64_t v;
            if (c == 'U') {
                size_t at = i;
                v = tpl_utf8_next(s.u.s, s.len, &at);
                i = at;
            } else {
                v = (unsigned char)s.u.s[i++];
                if (c == 'c' && v >= 128) v -= 256;
            }
            if (!tpl_list_push(A(vm), l, tpl_v_int(v))) return oom(vm);
        }
    }
    if (first) { *out = l->len ? l->items[0] : tpl_v_none(); return 0; }
    *out = tpl_v_list(l);
    out->flags = TPL_F_MUT_RB;
    return 0;
}

/* unpack's offset: keyword (its only one), read before the format: s from byte offset on (*s), an Integer
 * as NUM2LONG reads it, not negative, at most s's length (Ruby's pack_unpack_internal). */
static int unpack_offset(tpl_vm *vm, tpl_value kw, tpl_value *s)
{
    if (!tpl_given(kw) || kw.type != TPL_T_MAP) return 0;
    if (kw_only(vm, kw, "offset") < 0) return -1;
    tpl_value off = kw.u.map->len ? kw.u.map->e[0].val : tpl_v_int(0);
    if (long_arg(vm, &off) < 0) return -1;
    if (off.u.i < 0) return tpl_vm_error(vm, TPL_ERR_VALUE, "offset can't be negative (ArgumentError)");
    if (s->type != TPL_T_STR || (uint64_t)off.u.i > s->len) return tpl_vm_error(vm, TPL_ERR_VALUE, "offset outside of string (ArgumentError)");
    s->u.s += off.u.i;
    s->len -= (uint32_t)off.u.i;
    return 0;
}

/* unpack with a block yields each value and answers nil (break's value when it breaks); unpack1 ignores one. */
int r_str_unpack(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_rb_block blk = tpl_vm_block(vm);
    tpl_value str = a[0];
    if (unpack_offset(vm, a[2], &str) < 0 || unpack_impl(vm, str, a[1], false, out) < 0) return -1;
    if (!blk.pc) return 0;
    tpl_list *l = out->u.list;
    for (uint32_t i = 0; i < l->len; i++) {
        int yr = tpl_rb_yield(vm, &blk, &l->items[i], 1, out);
        if (yr != 0) return yr < 0 ? -1 : 0;
    }
    *out = tpl_v_none();
    return 0;
}
int r_str_unpack1(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value str = a[0];
    return unpack_offset(vm, a[2], &str) < 0 ? -1 : unpack_impl(vm, str, a[1], true, out);
}

/* String#dump (Ruby's rb_str_dump for a UTF-8 string): inspect's escapes with only ASCII left as it is
 * (tpl_rb_str_escape). */
int r_str_dump(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_sb b;
    tpl_sb_init(&b, A(vm));
    tpl_rb_str_escape(&b, a[0].u.s, a[0].len, true);
    if (b.failed) return oom(vm);
    *out = tpl_sb_value(&b);
    return 0;
}

/* String#unicode_normalize(form = :nfc) / #unicode_normalized?(form = :nfc): utf8proc's forms. */
static int norm_form(tpl_vm *vm, tpl_value f)
{
    static const char *const names[4] = { "nfc", "nfd", "nfkc", "nfkd" };
    if (!tpl_given(f)) return 0;
    if (f.type == TPL_T_STR)
        for (int i = 0; i < 4; i++)
            if (strlen(names[i]) == f.len && memcmp(names[i], f.u.s, f.len) == 0) return i;
    tpl_value s = str_of(vm, f);
    return tpl_vm_error(vm, TPL_ERR_VALUE, "Invalid normalization form %.*s. (ArgumentError)", (int)(s.len > 40 ? 40 : s.len), s.u.s) - 4;
}
int r_str_unicode_normalize(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    int form = norm_form(vm, a[1]);
    if (form < 0) return -1;
    tpl_value r = tpl_unicode_normalize(A(vm), a[0], form);
    if (r.type != TPL_T_STR) return oom(vm);
    *out = tpl_v_str(r.u.s, r.len);
    return 0;
}
int r_str_unicode_normalized_p(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value r;
    if (r_str_unicode_normalize(vm, a, &r) < 0) return -1;
    *out = tpl_v_bool(r.len == a[0].len && memcmp(r.u.s, a[0].u.s, r.len) == 0);
    return 0;
}

/* Integer#inspect is Integer#to_s (an alias: 5.inspect(2) "101"); Float#inspect takes no argument. */
int r_num_inspect(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (tpl_given(a[1]) && a[0].type == TPL_T_FLOAT)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "wrong number of arguments (given 1, expected 0) (ArgumentError)");
    if (tpl_given(a[1])) return r_num_to_s(vm, a, out);
    return r_any_inspect(vm, a, out);
}
