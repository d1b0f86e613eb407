/* Prompt-writing helpers — HeavenBase's (AgentHeaven's) Markdown helpers, exactly as
 * ../shared/HELPERS.md (and the conformance oracle, which wins where the two disagree) define
 * them: bullet_list, numbered_list, omission_list, md_block, line_numbered, code_block,
 * file_block, json_block, tag_block, format_value, bullet_dict, md_section, example_block,
 * fast_prompt_section — and the tr builtin. Each is a global and a Jinja filter (the first
 * argument is the subject); stdlib/builtins.def holds their signatures.
 *
 * Value notation as HELPERS.md §0: S(v) is Python str() (Jinja2's soft_str: undefined is "",
 * an error when strict), R(v) is repr(), lines are str.splitlines(), whitespace is Unicode
 * whitespace, J(...) is json.dumps. Where HeavenBase raises, these fail the render (TPL_ERR_TYPE
 * or TPL_ERR_VALUE with Python's message); what tpl cannot reproduce (a JSON `cls`/`default`
 * callable, a dict as `window`) is an error naming it, never different text.
 * A missing optional argument arrives as TPL_T_UNSET and means the Python default. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "../builtins.h"
#include "tr.h"

#define OOM() tpl_vm_nomem(vm)
#define AR(vm) tpl_vm_arena(vm)

/* Arguments whose Python default is None: unset means None. */
static tpl_value opt_none(tpl_value v) { return v.type == TPL_T_UNSET ? tpl_v_none() : v; }
static bool is_none(tpl_value v) { return v.type == TPL_T_UNSET || v.type == TPL_T_NONE; }
static tpl_value lit(const char *s) { return tpl_v_str(s, strlen(s)); }

/* S(v): Python str() (strings pass through). */
static int S(tpl_vm *vm, tpl_value v, tpl_value *out)
{
    if (v.type == TPL_T_STR) { *out = v; return 0; }
    return tpl_to_str(vm, v, out);
}

static int put_S(tpl_vm *vm, tpl_sb *b, tpl_value v)
{
    tpl_value s;
    if (S(vm, v, &s) < 0) return -1;
    tpl_sb_put(b, s.u.s, s.len);
    return 0;
}

static int finish(tpl_vm *vm, tpl_sb *b, tpl_value *out)
{
    if (b->failed) return OOM();
    *out = tpl_sb_value(b);
    return 0;
}

static int truthy(tpl_vm *vm, tpl_value v)
{
    if (v.type == TPL_T_UNSET) return 0;
    return tpl_truthy_py(vm, v);
}

static bool key_is(tpl_value k, const char *s)
{
    size_t n = strlen(s);
    return k.type == TPL_T_STR && k.len == n && memcmp(k.u.s, s, n) == 0;
}

/* d.get(k) for a dict d; *found tells whether the key is there. */
static tpl_value map_get(tpl_value d, const char *k, bool *found)
{
    tpl_value *v = tpl_map_get_str(d.u.map, k, strlen(k), tpl_hash_str(k, strlen(k)));
    if (found) *found = v != NULL;
    return v ? *v : tpl_v_unset();
}

/* d.get(k, dflt) where d must be a dict (AttributeError otherwise, as Python's `.get`). */
static int get_or(tpl_vm *vm, tpl_value d, const char *k, tpl_value dflt, tpl_value *out)
{
    if (d.type != TPL_T_MAP) {
        if (d.type == TPL_T_UNDEF) return tpl_undefined_error(vm, d);
        return tpl_vm_fail(vm, TPL_EK_ATTRIBUTE, "'%s' object has no attribute 'get'", tpl_type_name(vm, d));
    }
    bool found;
    tpl_value v = map_get(d, k, &found);
    *out = found ? v : dflt;
    return 0;
}

static int need_str(tpl_vm *vm, tpl_value v, const char *what)
{
    if (v.type == TPL_T_STR) return 0;
    if (v.type == TPL_T_UNDEF) return tpl_undefined_error(vm, v);
    return tpl_vm_fail(vm, TPL_EK_ATTRIBUTE, "'%s' object has no attribute '%s'", tpl_type_name(vm, v), what);
}

/* Binds the keyword arguments of a `**kwargs` dict to the named parameters of fname (the
 * helper it is spread into): vals[i] = the value for names[i] or unset. A key that is none of
 * the names is Python's "unexpected keyword argument" TypeError, unless rest_ok (then it is
 * left for the caller). opts must be a dict (Python: "argument after ** must be a mapping"). */
static int spread(tpl_vm *vm, tpl_value opts, const char *fname, const char *const *names, int n, tpl_value *vals,
                  bool rest_ok)
{
    for (int i = 0; i < n; i++) vals[i] = tpl_v_unset();
    if (opts.type != TPL_T_MAP)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "%s() argument after ** must be a mapping, not %s", fname,
                            tpl_type_name(vm, opts));
    for (uint32_t k = 0; k < opts.u.map->len; k++) {
        tpl_value key = opts.u.map->e[k].key;
        if (key.type != TPL_T_STR) return tpl_vm_error(vm, TPL_ERR_TYPE, "keywords must be strings");
        int i = 0;
        while (i < n && !key_is(key, names[i])) i++;
        if (i < n) vals[i] = opts.u.map->e[k].val;
        else if (!rest_ok)
            return tpl_vm_error(vm, TPL_ERR_TYPE, "%s() got an unexpected keyword argument '%.*s'", fname,
                                (int)key.len, key.u.s);
    }
    return 0;
}

/* ------------------------------------------------------------------ J: json.dumps */

static bool has_nonfinite(tpl_value v, int depth)
{
    if (depth > 600) return false;
    if (v.type == TPL_T_FLOAT) return !isfinite(v.u.f);
    if (v.type == TPL_T_LIST) {
        for (uint32_t i = 0; i < v.u.list->len; i++)
            if (has_nonfinite(v.u.list->items[i], depth + 1)) return true;
    } else if (v.type == TPL_T_MAP) {
        for (uint32_t i = 0; i < v.u.map->len; i++)
            if (has_nonfinite(v.u.map->e[i].key, depth + 1) || has_nonfinite(v.u.map->e[i].val, depth + 1)) return true;
    }
    return false;
}

/* J(data, indent=indent, sort_keys=False, ensure_ascii=False, **kw): HeavenBase's _json_text,
 * i.e. json.dumps(data, sort_keys=, indent=, ensure_ascii=, **more). kw (a dict or unset) may
 * override indent; its keys named in skip[0..nskip) belong to the caller and are ignored. */
static int json_text(tpl_vm *vm, tpl_value data, tpl_value indent, tpl_value kw, const char *const *skip, int nskip,
                     tpl_value *out)
{
    static const char *const names[] = {"indent", "sort_keys", "ensure_ascii", "separators", "skipkeys",
                                        "check_circular", "allow_nan", "cls", "default"};
    enum { N = sizeof names / sizeof names[0] };
    tpl_value o[N];
    for (int i = 0; i < N; i++) o[i] = tpl_v_unset();
    if (tpl_given(kw)) {
        if (kw.type != TPL_T_MAP)
            return tpl_vm_error(vm, TPL_ERR_TYPE, "argument after ** must be a mapping, not %s", tpl_type_name(vm, kw));
        for (uint32_t k = 0; k < kw.u.map->len; k++) {
            tpl_value key = kw.u.map->e[k].key;
            if (key.type != TPL_T_STR) return tpl_vm_error(vm, TPL_ERR_TYPE, "keywords must be strings");
            bool mine = false;
            for (int s = 0; s < nskip && !mine; s++) mine = key_is(key, skip[s]);
            if (mine) continue;
            int i = 0;
            while (i < N && !key_is(key, names[i])) i++;
            if (i == N)
                return tpl_vm_error(vm, TPL_ERR_TYPE, "__init__() got an unexpected keyword argument '%.*s'",
                                    (int)key.len, key.u.s);
            o[i] = kw.u.map->e[k].val;
        }
    }
    if (tpl_given(o[0])) indent = o[0];
    int sort_keys = truthy(vm, o[1]), ascii = truthy(vm, o[2]);
    if (sort_keys < 0 || ascii < 0) return -1;
    for (int i = 7; i < N; i++)
        if (!is_none(o[i]))
            return tpl_vm_error(vm, TPL_ERR_VALUE, "json: tpl does not support the '%s' argument of json.dumps", names[i]);
    if (tpl_given(o[6])) {
        int allow = tpl_truthy_py(vm, o[6]);
        if (allow < 0) return -1;
        if (!allow && has_nonfinite(data, 0))
            return tpl_vm_error(vm, TPL_ERR_VALUE, "Out of range float values are not JSON compliant");
    }
    int ind = -1;
    tpl_value sind = tpl_v_unset();
    if (indent.type == TPL_T_STR) {
        sind = indent;
        ind = 1;
    } else if (indent.type != TPL_T_NONE) {
        int64_t n;
        if (indent.type != TPL_T_INT && indent.type != TPL_T_BOOL)
            return tpl_vm_error(vm, TPL_ERR_TYPE, "can't multiply sequence by non-int of type '%s'", tpl_type_name(vm, indent));
        n = indent.u.i;
        if (n > 100000) return tpl_vm_error(vm, TPL_ERR_LIMIT, "json indent %lld is too large", (long long)n);
        ind = n < 0 ? 0 : (int)n;
    }
    const char *isep = NULL, *ksep = NULL;
    tpl_value sp = o[3];
    if (!is_none(sp)) {
        if (sp.type != TPL_T_LIST || sp.u.list->len != 2)
            return tpl_vm_error(vm, TPL_ERR_VALUE, "separators must be an (item_separator, key_separator) pair");
        tpl_value x = sp.u.list->items[0], y = sp.u.list->items[1];
        if (x.type != TPL_T_STR || y.type != TPL_T_STR) return tpl_vm_error(vm, TPL_ERR_TYPE, "separators must be strings");
        if (memchr(x.u.s, 0, x.len) || memchr(y.u.s, 0, y.len))
            return tpl_vm_error(vm, TPL_ERR_VALUE, "json: tpl does not support NUL in separators");
        if (tpl_given(sind) && (memchr(x.u.s, '\n', x.len) || memchr(y.u.s, '\n', y.len)))
            return tpl_vm_error(vm, TPL_ERR_VALUE, "json: tpl does not support a string indent with line breaks in separators");
        isep = tpl_arena_strdup(AR(vm), x.u.s, x.len);
        ksep = tpl_arena_strdup(AR(vm), y.u.s, y.len);
        if (!isep || !ksep) return OOM();
    }
    tpl_sb b;
    tpl_sb_init(&b, AR(vm));
    if (!tpl_json_dumps(&b, data, ascii, ind, isep, ksep, sort_keys)) {
        if (tpl_vm_strict_undef(vm, data)) return tpl_undefined_error(vm, data);
        return tpl_vm_error(vm, TPL_ERR_TYPE, "Object of type %s is not JSON serializable", tpl_type_name(vm, data));
    }
    if (b.failed) return OOM();
    if (tpl_given(sind)) {
        /* A string indent: dumped with indent 1, every line break is followed by exactly `level`
         * spaces (strings hold no raw line breaks), each of which becomes the string. */
        tpl_sb r;
        tpl_sb_init(&r, AR(vm));
        for (size_t i = 0; i < b.len; i++) {
            tpl_sb_putc(&r, b.p[i]);
            if (b.p[i] != '\n') continue;
            while (i + 1 < b.len && b.p[i + 1] == ' ') {
                tpl_sb_put(&r, sind.u.s, sind.len);
                i++;
            }
        }
        return finish(vm, &r, out);
    }
    return finish(vm, &b, out);
}

/* ------------------------------------------------------------------ lists */

/* _bullet_block(item, bullet) appended to out: bullet None (NONE) gives the item itself, which
 * must be a string (str.join); otherwise every non-blank line of S(item) is indented by
 * len(bullet) + 1 spaces and the first run of that many spaces becomes "bullet ". `index` is the
 * item's position for the join's error message. */
static int bullet_block(tpl_vm *vm, tpl_sb *out, tpl_value item, tpl_value bullet, uint32_t index)
{
    if (bullet.type == TPL_T_NONE) {
        if (item.type != TPL_T_STR)
            return tpl_vm_error(vm, TPL_ERR_TYPE, "sequence item %u: expected str instance, %s found", index,
                                tpl_type_name(vm, item));
        tpl_sb_put(out, item.u.s, item.len);
        return 0;
    }
    tpl_value text;
    if (S(vm, item, &text) < 0) return -1;
    size_t w = tpl_utf8_len(bullet.u.s, bullet.len) + 1;
    tpl_list *lines;
    if (tpl_splitlines(vm, text, true, &lines) < 0) return -1;
    tpl_sb b;
    tpl_sb_init(&b, AR(vm));
    for (uint32_t i = 0; i < lines->len; i++) {
        tpl_value l = lines->items[i];
        if (tpl_py_strip(l, 3, NULL, 0).len)
            for (size_t k = 0; k < w; k++) tpl_sb_putc(&b, ' ');
        tpl_sb_put(&b, l.u.s, l.len);
    }
    if (b.failed) return OOM();
    const char *s = b.p ? b.p : "";
    size_t run = 0, at = b.len;
    for (size_t i = 0; i < b.len; i++) {
        run = s[i] == ' ' ? run + 1 : 0;
        if (run == w) { at = i + 1 - w; break; }
    }
    if (at == b.len) {
        tpl_sb_put(out, s, b.len);
        return 0;
    }
    tpl_sb_put(out, s, at);
    tpl_sb_put(out, bullet.u.s, bullet.len);
    tpl_sb_putc(out, ' ');
    tpl_sb_put(out, s + at + w, b.len - at - w);
    return 0;
}

/* The bullet argument: "-" when unset, None stays None, anything else S(bullet). */
static int bullet_arg(tpl_vm *vm, tpl_value v, tpl_value *out)
{
    if (!tpl_given(v)) { *out = lit("-"); return 0; }
    if (v.type == TPL_T_NONE) { *out = v; return 0; }
    return S(vm, v, out);
}

static int bullets(tpl_vm *vm, const tpl_list *items, tpl_value bullet, tpl_value *out)
{
    tpl_sb b;
    tpl_sb_init(&b, AR(vm));
    for (uint32_t i = 0; i < items->len; i++) {
        if (i) tpl_sb_putc(&b, '\n');
        if (bullet_block(vm, &b, items->items[i], bullet, i) < 0) return -1;
    }
    return finish(vm, &b, out);
}

static int bullet_list(tpl_vm *vm, tpl_value items, tpl_value bullet, tpl_value *out)
{
    tpl_list *l;
    tpl_value bs;
    if (tpl_iter_list(vm, items, &l) < 0 || bullet_arg(vm, bullet, &bs) < 0) return -1;
    return bullets(vm, l, bs, out);
}

int h_bullet_list(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    return bullet_list(vm, a[0], a[1], out);
}

/* len(v) as Python: strings, lists, dicts (undefined: 0, an error when strict). */
static int py_len(tpl_vm *vm, tpl_value v, int64_t *n)
{
    switch (v.type) {
    case TPL_T_STR: *n = (int64_t)tpl_utf8_len(v.u.s, v.len); return 0;
    case TPL_T_LIST: *n = v.u.list->len; return 0;
    case TPL_T_MAP: *n = v.u.map->len; return 0;
    case TPL_T_UNDEF:
        if (tpl_vm_strict_undef(vm, v)) return tpl_undefined_error(vm, v);
        *n = 0;
        return 0;
    default:
        return tpl_vm_error(vm, TPL_ERR_TYPE, "object of type '%s' has no len()", tpl_type_name(vm, v));
    }
}

int h_numbered_list(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    int64_t n;
    tpl_list *items;
    if (py_len(vm, a[0], &n) < 0 || tpl_iter_list(vm, a[0], &items) < 0) return -1;
    char buf[32];
    int width = snprintf(buf, sizeof buf, "%lld", (long long)n);
    tpl_sb b;
    tpl_sb_init(&b, AR(vm));
    for (uint32_t i = 0; i < items->len; i++) {
        char bl[64];
        int d = snprintf(buf, sizeof buf, "%u", i + 1);
        int k = snprintf(bl, sizeof bl, "%u.%*s", i + 1, width > d ? width - d : 0, "");
        if (i) tpl_sb_putc(&b, '\n');
        if (bullet_block(vm, &b, items->items[i], tpl_v_str(bl, (size_t)k), i) < 0) return -1;
    }
    return finish(vm, &b, out);
}

/* A number argument of a comparison or sum (int, bool or float). */
typedef struct { bool isint; int64_t i; double f; } num;

static int num_arg(tpl_vm *vm, tpl_value v, int64_t dflt, num *n)
{
    if (!tpl_given(v)) { *n = (num){true, dflt, (double)dflt}; return 0; }
    if (v.type == TPL_T_INT || v.type == TPL_T_BOOL) { *n = (num){true, v.u.i, (double)v.u.i}; return 0; }
    if (v.type == TPL_T_FLOAT) { *n = (num){false, 0, v.u.f}; return 0; }
    if (v.type == TPL_T_UNDEF) return tpl_undefined_error(vm, v);
    return tpl_vm_error(vm, TPL_ERR_TYPE, "'<' not supported between instances of '%s' and 'int'", tpl_type_name(vm, v));
}

int h_omission_list(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    num top = { 0 }, bottom = { 0 };
    int64_t count;
    if (num_arg(vm, a[1], -1, &top) < 0) return -1;
    if (top.f < 0 || (top.isint && top.i < 0)) {
        /* kept = -1: the items themselves (len() is still taken) */
        if (py_len(vm, a[0], &count) < 0) return -1;
        *out = a[0];
        return 0;
    }
    if (num_arg(vm, a[2], 1, &bottom) < 0 || py_len(vm, a[0], &count) < 0) return -1;
    bool ints = top.isint && bottom.isint;
    int64_t kept = 0;
    if (ints && __builtin_add_overflow(top.i, bottom.i, &kept))
        return tpl_vm_error(vm, TPL_ERR_TYPE, "integer overflow");
    double keptf = top.f + bottom.f;
    if (ints ? kept < 0 || count <= kept : keptf < 0 || (double)count <= keptf) {
        *out = a[0];
        return 0;
    }
    if (!ints)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "slice indices must be integers or None or have an __index__ method");
    if (a[0].type != TPL_T_LIST || (a[0].flags & TPL_F_TUPLE))
        return tpl_vm_error(vm, TPL_ERR_TYPE, a[0].type == TPL_T_MAP ? "unhashable type: 'slice'"
                                              : "can only concatenate %s (not \"list\") to %s",
                            tpl_type_name(vm, a[0]), tpl_type_name(vm, a[0]));
    const tpl_list *items = a[0].u.list;
    tpl_list *l = tpl_list_new(AR(vm), (uint32_t)count + 1);
    if (!l) return OOM();
    int64_t head = top.i < count ? top.i : count;
    for (int64_t i = 0; i < head; i++) l->items[l->len++] = items->items[i];
    char buf[64];
    int k = snprintf(buf, sizeof buf, "... (omitting %lld)", (long long)(count - kept));
    char *s = tpl_arena_strdup(AR(vm), buf, (size_t)k);
    if (!s) return OOM();
    l->items[l->len++] = tpl_v_str(s, (size_t)k);
    if (bottom.i > 0) {
        int64_t from = bottom.i >= count ? 0 : count - bottom.i;
        for (int64_t i = from; i < count; i++) l->items[l->len++] = items->items[i];
    }
    *out = tpl_v_list(l);
    return 0;
}

/* ------------------------------------------------------------------ blocks */

/* _fence(content): "```" grown by three backticks while it occurs in content (Python's `in`:
 * a substring of a string, an element of a list, a key of a dict). */
static int fence(tpl_vm *vm, tpl_value content, size_t *len)
{
    *len = 3;
    if (content.type == TPL_T_STR) {
        size_t longest = 0, run = 0;
        for (size_t i = 0; i < content.len; i++) {
            run = content.u.s[i] == '`' ? run + 1 : 0;
            if (run > longest) longest = run;
        }
        while (*len <= longest) *len += 3;
        return 0;
    }
    char ticks[64];
    for (;;) {
        if (*len >= sizeof ticks) return tpl_vm_error(vm, TPL_ERR_LIMIT, "md_block: fence too long");
        memset(ticks, '`', *len);
        bool in;
        if (tpl_contains(vm, tpl_v_str(ticks, *len), content, &in) < 0) return -1;
        if (!in) return 0;
        *len += 3;
    }
}

static int md_block(tpl_vm *vm, tpl_value content, tpl_value lang, tpl_value header, tpl_value *out)
{
    size_t f;
    if (fence(vm, content, &f) < 0) return -1;
    tpl_sb b;
    tpl_sb_init(&b, AR(vm));
    int t = truthy(vm, header);
    if (t < 0) return -1;
    if (t) {
        if (put_S(vm, &b, header) < 0) return -1;
        tpl_sb_putc(&b, '\n');
    }
    for (size_t i = 0; i < f; i++) tpl_sb_putc(&b, '`');
    if (tpl_given(lang) && put_S(vm, &b, lang) < 0) return -1;
    tpl_sb_putc(&b, '\n');
    if (put_S(vm, &b, content) < 0) return -1;
    tpl_sb_putc(&b, '\n');
    for (size_t i = 0; i < f; i++) tpl_sb_putc(&b, '`');
    return finish(vm, &b, out);
}

int h_md_block(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    return md_block(vm, a[0], a[1], a[2], out);
}

/* One bound of window[0]:window[1]: None, or an int, clamped as a Python slice of n rows. */
static int slice_bound(tpl_vm *vm, tpl_value v, int64_t n, int64_t open, int64_t *out)
{
    if (v.type == TPL_T_NONE) { *out = open; return 0; }
    if (v.type != TPL_T_INT && v.type != TPL_T_BOOL) {
        if (tpl_vm_strict_undef(vm, v)) return tpl_undefined_error(vm, v);
        return tpl_vm_error(vm, TPL_ERR_TYPE, "slice indices must be integers or None or have an __index__ method");
    }
    int64_t i = v.u.i;
    if (i < 0) i = i < -n ? 0 : i + n;
    if (i > n) i = n;
    *out = i;
    return 0;
}

/* line_numbered(content, start=-1, window=None): the rows of S(content), numbered
 * "(%4d)  " from start when start >= 0, then rows[window[0]:window[1]], joined by "\n". */
static int line_numbered(tpl_vm *vm, tpl_value content, tpl_value start, tpl_value window, tpl_value *out)
{
    tpl_value text;
    tpl_list *rows;
    if (S(vm, content, &text) < 0 || tpl_splitlines(vm, text, false, &rows) < 0) return -1;
    num st = { 0 };
    if (tpl_given(start) && start.type != TPL_T_INT && start.type != TPL_T_BOOL && start.type != TPL_T_FLOAT) {
        if (start.type == TPL_T_UNDEF) return tpl_undefined_error(vm, start);
        return tpl_vm_error(vm, TPL_ERR_TYPE, "'>=' not supported between instances of '%s' and 'int'",
                            tpl_type_name(vm, start));
    }
    if (num_arg(vm, start, -1, &st) < 0) return -1;
    bool numbered = st.isint ? st.i >= 0 : st.f >= 0;
    if (numbered && !st.isint)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "'float' object cannot be interpreted as an integer");
    int64_t lo = 0, hi = rows->len;
    if (!is_none(window)) {
        if (window.type != TPL_T_LIST) {
            if (window.type == TPL_T_UNDEF) return tpl_undefined_error(vm, window);
            if (window.type == TPL_T_MAP)
                return tpl_vm_error(vm, TPL_ERR_VALUE, "line_numbered: tpl takes a window as a list [start, end], not a dict");
            return tpl_vm_error(vm, TPL_ERR_TYPE, "'%s' object is not subscriptable", tpl_type_name(vm, window));
        }
        if (window.u.list->len < 2)
            return tpl_vm_fail(vm, TPL_EK_INDEX, "%s index out of range", window.flags & TPL_F_TUPLE ? "tuple" : "list");
        if (slice_bound(vm, window.u.list->items[0], rows->len, 0, &lo) < 0 ||
            slice_bound(vm, window.u.list->items[1], rows->len, rows->len, &hi) < 0)
            return -1;
    }
    tpl_sb b;
    tpl_sb_init(&b, AR(vm));
    for (int64_t i = lo; i < hi; i++) {
        if (i > lo) tpl_sb_putc(&b, '\n');
        if (numbered) {
            int64_t n;
            if (__builtin_add_overflow(st.i, i, &n)) return tpl_vm_error(vm, TPL_ERR_TYPE, "integer overflow");
            tpl_sb_printf(&b, "(%4lld)  ", (long long)n);
        }
        tpl_sb_put(&b, rows->items[i].u.s, rows->items[i].len);
    }
    return finish(vm, &b, out);
}

int h_line_numbered(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    return line_numbered(vm, a[0], a[1], a[2], out);
}

static int code_block(tpl_vm *vm, tpl_value content, tpl_value lang, tpl_value start, tpl_value window,
                      tpl_value header, tpl_value *out)
{
    tpl_value text;
    if (line_numbered(vm, content, start, window, &text) < 0) return -1;
    return md_block(vm, text, lang, header, out);
}

int h_code_block(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    return code_block(vm, a[0], a[1], a[2], a[3], a[4], out);
}

static int file_block(tpl_vm *vm, tpl_value file, tpl_value content, tpl_value lang, tpl_value start,
                      tpl_value window, tpl_value *out)
{
    if (need_str(vm, content, "splitlines") < 0) return -1;
    tpl_list *lines;
    if (tpl_splitlines(vm, content, false, &lines) < 0) return -1;
    tpl_sb h;
    tpl_sb_init(&h, AR(vm));
    tpl_sb_puts(&h, "File: `");
    if (put_S(vm, &h, file) < 0) return -1;
    tpl_sb_printf(&h, "` (%u lines)", lines->len);
    if (h.failed) return OOM();
    return code_block(vm, content, lang, start, window, tpl_sb_value(&h), out);
}

int h_file_block(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    return file_block(vm, a[0], a[1], a[2], a[3], a[4], out);
}

int h_json_block(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value text;
    if (json_text(vm, a[0], tpl_v_int(4), a[4], NULL, 0, &text) < 0) return -1;
    return code_block(vm, text, lit("json"), a[1], a[2], a[3], out);
}

static int tag_block(tpl_vm *vm, tpl_value tag, tpl_value content, tpl_value inline_, tpl_value *out)
{
    int in = truthy(vm, inline_);
    if (in < 0) return -1;
    tpl_value ts;
    if (S(vm, tag, &ts) < 0) return -1;
    tpl_sb b;
    tpl_sb_init(&b, AR(vm));
    tpl_sb_putc(&b, '<');
    tpl_sb_put(&b, ts.u.s, ts.len);
    tpl_sb_puts(&b, in ? ">" : ">\n");
    if (put_S(vm, &b, content) < 0) return -1;
    tpl_sb_puts(&b, in ? "</" : "\n</");
    tpl_sb_put(&b, ts.u.s, ts.len);
    tpl_sb_putc(&b, '>');
    return finish(vm, &b, out);
}

int h_tag_block(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    return tag_block(vm, a[0], a[1], a[2], out);
}

/* ------------------------------------------------------------------ format_value, bullet_dict */

static int bullet_dict(tpl_vm *vm, tpl_value d, tpl_value bullet, tpl_value schema, int depth, tpl_value *out);

static int split_schema(tpl_vm *vm, tpl_value schema, tpl_value *mode, tpl_value *opts);

static const char *const MODES[] = {"base", "repr", "dump", "code", "file", "json", "nest", "tag", "param", "todo", "none"};
enum { M_BASE, M_REPR, M_DUMP, M_CODE, M_FILE, M_JSON, M_NEST, M_TAG, M_PARAM, M_TODO, M_NONE, M_COUNT };

/* _param_line(spec, key, opts): one JSON-schema property. */
static int param_line(tpl_vm *vm, tpl_value spec, tpl_value key, tpl_value opts, tpl_value *out)
{
    bool described = spec.type == TPL_T_MAP;
    tpl_sb b;
    tpl_sb_init(&b, AR(vm));
    tpl_sb_putc(&b, '`');
    if (put_S(vm, &b, key) < 0) return -1;
    tpl_sb_puts(&b, "`: ");
    bool found;
    tpl_value type = described ? map_get(spec, "type", &found) : tpl_v_unset();
    if (!described || !found) type = lit("any");
    if (put_S(vm, &b, type) < 0) return -1;
    tpl_value req;
    if (get_or(vm, opts, "required", tpl_v_bool(false), &req) < 0) return -1;
    int t = tpl_truthy_py(vm, req);
    if (t < 0) return -1;
    if (t) tpl_sb_puts(&b, " *(required)*");
    tpl_value choices = described ? opt_none(map_get(spec, "enum", NULL)) : tpl_v_none();
    if ((t = tpl_truthy_py(vm, choices)) < 0) return -1;
    if (t) {
        tpl_list *l;
        if (tpl_iter_list(vm, choices, &l) < 0) return -1;
        tpl_sb_puts(&b, " (");
        for (uint32_t i = 0; i < l->len; i++) {
            if (i) tpl_sb_puts(&b, ", ");
            if (put_S(vm, &b, l->items[i]) < 0) return -1;
        }
        tpl_sb_putc(&b, ')');
    }
    tpl_value dflt = described ? opt_none(map_get(spec, "default", NULL)) : tpl_v_none();
    if (dflt.type != TPL_T_NONE) {
        tpl_sb_puts(&b, " = ");
        if (put_S(vm, &b, dflt) < 0) return -1;
    }
    tpl_value about = described ? map_get(spec, "description", &found) : tpl_v_unset();
    if (described && found) {
        if ((t = tpl_truthy_py(vm, about)) < 0) return -1;
        if (t) {
            tpl_sb_puts(&b, " \xe2\x80\x94 ");
            if (put_S(vm, &b, about) < 0) return -1;
        }
    }
    return finish(vm, &b, out);
}

/* format_value with the schema already split into mode and kwargs (opts: a dict, or unset for
 * {}). *out is a string, or None for mode "none". */
static int format_mode(tpl_vm *vm, tpl_value value, tpl_value mode, tpl_value opts, tpl_value bullet, tpl_value key,
                       tpl_value tag, int depth, tpl_value *out)
{
    if (depth > 100) return tpl_vm_error(vm, TPL_ERR_LIMIT, "format_value nested too deeply");
    int m = 0;
    while (m < M_COUNT && !key_is(mode, MODES[m])) m++;
    if (m == M_COUNT) {
        tpl_sb b;
        tpl_sb_init(&b, AR(vm));
        tpl_py_repr(&b, mode);
        if (b.failed) return OOM();
        return tpl_vm_error(vm, TPL_ERR_VALUE, "format_value: unknown mode %.*s", (int)b.len, b.p);
    }
    if (!tpl_given(opts)) {
        tpl_map *e = tpl_map_new(AR(vm), 0);
        if (!e) return OOM();
        opts = tpl_v_map(e);
    }
    if (m == M_NONE) { *out = tpl_v_none(); return 0; }
    if (m == M_PARAM) return param_line(vm, value, key, opts, out);
    tpl_value text;
    bool inline_tag = true;
    switch (m) {
    case M_BASE:
        if (S(vm, value, &text) < 0) return -1;
        break;
    case M_REPR: {
        tpl_sb b;
        tpl_sb_init(&b, AR(vm));
        tpl_py_repr(&b, value);
        if (finish(vm, &b, &text) < 0) return -1;
        break;
    }
    case M_DUMP:
        if (opts.type != TPL_T_MAP)
            return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported operand type(s) for |: 'dict' and '%s'", tpl_type_name(vm, opts));
        if (json_text(vm, value, tpl_v_none(), opts, NULL, 0, &text) < 0) return -1;
        break;
    case M_CODE: {
        static const char *const names[] = {"lang", "start", "window", "header"};
        tpl_value k[4], s;
        if (spread(vm, opts, "code_block", names, 4, k, false) < 0 || S(vm, value, &s) < 0 ||
            code_block(vm, s, k[0], k[1], k[2], k[3], &text) < 0)
            return -1;
        break;
    }
    case M_FILE: {
        static const char *const names[] = {"lang", "start", "window"};
        tpl_value k[3], s;
        if (spread(vm, opts, "file_block", names, 3, k, false) < 0 || S(vm, value, &s) < 0 ||
            file_block(vm, lit("value"), s, k[0], k[1], k[2], &text) < 0)
            return -1;
        break;
    }
    case M_JSON: {
        static const char *const names[] = {"start", "window", "header"};
        tpl_value k[3], js;
        int64_t ind = 0;
        if (bullet.type != TPL_T_NONE) {
            tpl_value bs;
            if (S(vm, bullet, &bs) < 0) return -1;
            ind = (int64_t)tpl_utf8_len(bs.u.s, bs.len) + 1;
        }
        if (spread(vm, opts, "json_block", names, 3, k, true) < 0 ||
            json_text(vm, value, tpl_v_int(ind), opts, names, 3, &js) < 0 ||
            code_block(vm, js, lit("json"), k[0], k[1], k[2], &text) < 0)
            return -1;
        break;
    }
    case M_NEST: {
        if (value.type != TPL_T_MAP)
            return tpl_vm_error(vm, TPL_ERR_VALUE, "format_value: 'nest' needs a dict, got %s", tpl_type_name(vm, value));
        tpl_value b, sch;
        if (get_or(vm, opts, "bullet", bullet, &b) < 0 || get_or(vm, opts, "schema", tpl_v_none(), &sch) < 0) return -1;
        if (bullet_dict(vm, value, b.type == TPL_T_UNSET ? tpl_v_none() : b, sch, depth + 1, &text) < 0) return -1;
        break;
    }
    case M_TAG: {
        tpl_value sch, inner, in, t = tag;
        if (get_or(vm, opts, "schema", lit("base"), &sch) < 0) return -1;
        tpl_value imode, iopts;
        if (split_schema(vm, sch, &imode, &iopts) < 0) return -1;
        if (format_mode(vm, value, imode, iopts, tpl_v_none(), tpl_v_none(), tpl_v_none(), depth + 1, &inner) < 0)
            return -1;
        const tpl_value cands[3] = {tag, tpl_v_unset(), key};
        bool picked = false;
        for (int i = 0; i < 3 && !picked; i++) {
            tpl_value c = cands[i];
            if (i == 1 && get_or(vm, opts, "tag", tpl_v_none(), &c) < 0) return -1;
            int tr = truthy(vm, c);
            if (tr < 0) return -1;
            if (tr) { t = c; picked = true; }
        }
        if (!picked) t = lit("output");
        if (get_or(vm, opts, "inline", tpl_v_bool(true), &in) < 0) return -1;
        int it = tpl_truthy_py(vm, in);
        if (it < 0) return -1;
        inline_tag = it;
        if (tag_block(vm, t, inner, tpl_v_bool(inline_tag), &text) < 0) return -1;
        break;
    }
    default: /* todo */
        text = lit("TODO");
        break;
    }
    if (key.type == TPL_T_NONE) { *out = text; return 0; }
    tpl_sb b;
    tpl_sb_init(&b, AR(vm));
    if (m != M_TAG) {
        if (put_S(vm, &b, key) < 0) return -1;
        tpl_sb_puts(&b, ": ");
    }
    if (m == M_CODE || m == M_FILE || m == M_JSON || m == M_NEST || (m == M_TAG && !inline_tag)) tpl_sb_putc(&b, '\n');
    tpl_sb_put(&b, text.u.s, text.len);
    return finish(vm, &b, out);
}

/* A schema (None, a mode name, or {"mode": ..., "kwargs": ...}) split into mode and kwargs. */
static int split_schema(tpl_vm *vm, tpl_value schema, tpl_value *mode, tpl_value *opts)
{
    *opts = tpl_v_unset();
    if (is_none(schema)) { *mode = lit("repr"); return 0; }
    if (schema.type == TPL_T_STR) { *mode = schema; return 0; }
    if (get_or(vm, schema, "mode", lit("repr"), mode) < 0) return -1;
    return get_or(vm, schema, "kwargs", tpl_v_unset(), opts);
}

static int format_value(tpl_vm *vm, tpl_value value, tpl_value schema, tpl_value bullet, tpl_value key, tpl_value tag,
                        int depth, tpl_value *out)
{
    tpl_value mode, opts;
    if (split_schema(vm, schema, &mode, &opts) < 0) return -1;
    return format_mode(vm, value, mode, opts, opt_none(bullet), opt_none(key), opt_none(tag), depth, out);
}

int h_format_value(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    return format_value(vm, a[0], a[1], a[2], a[3], a[4], 0, out);
}

static int bullet_dict(tpl_vm *vm, tpl_value d, tpl_value bullet, tpl_value schema, int depth, tpl_value *out)
{
    if (d.type != TPL_T_MAP) {
        if (d.type == TPL_T_UNDEF) return tpl_undefined_error(vm, d);
        return tpl_vm_fail(vm, TPL_EK_ATTRIBUTE, "'%s' object has no attribute 'items'", tpl_type_name(vm, d));
    }
    tpl_value bs;
    if (bullet_arg(vm, bullet, &bs) < 0) return -1;
    schema = opt_none(schema);
    if (schema.type != TPL_T_NONE && schema.type != TPL_T_STR && schema.type != TPL_T_MAP)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported operand type(s) for |: 'dict' and '%s'", tpl_type_name(vm, schema));
    const tpl_map *dm = d.u.map;
    tpl_list *lines = tpl_list_new(AR(vm), dm->len);
    if (!lines) return OOM();
    for (uint32_t i = 0; i < dm->len; i++) {
        tpl_value key = dm->e[i].key, spec = lit("repr");
        if (schema.type == TPL_T_STR) spec = schema;
        else if (schema.type == TPL_T_MAP) {
            tpl_value *s = tpl_map_get(schema.u.map, key);
            if (s) spec = *s;
        }
        tpl_value mode = spec, opts = tpl_v_unset(), line;
        if (spec.type == TPL_T_MAP &&
            (get_or(vm, spec, "mode", lit("repr"), &mode) < 0 || get_or(vm, spec, "kwargs", tpl_v_unset(), &opts) < 0))
            return -1;
        if (format_mode(vm, dm->e[i].val, mode, opts, bs, key, tpl_v_none(), depth + 1, &line) < 0) return -1;
        if (line.type != TPL_T_NONE) lines->items[lines->len++] = line;
    }
    return bullets(vm, lines, bs, out);
}

int h_bullet_dict(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    return bullet_dict(vm, a[0], a[1], a[2], 0, out);
}

/* ------------------------------------------------------------------ sections */

static int md_section(tpl_vm *vm, tpl_sb *b, tpl_value title, tpl_value level, tpl_value content, tpl_value sections,
                      tpl_value end, int depth)
{
    if (depth > 100) return tpl_vm_error(vm, TPL_ERR_LIMIT, "md_section nested too deeply");
    tpl_sb o;
    tpl_sb_init(&o, AR(vm));
    if (!is_none(title)) {
        if (level.type != TPL_T_INT && level.type != TPL_T_BOOL) {
            if (level.type == TPL_T_UNDEF) return tpl_undefined_error(vm, level);
            return tpl_vm_error(vm, TPL_ERR_TYPE, "can't multiply sequence by non-int of type '%s'", tpl_type_name(vm, level));
        }
        if (level.u.i > 100000) return tpl_vm_error(vm, TPL_ERR_LIMIT, "md_section: level %lld is too deep", (long long)level.u.i);
        for (int64_t i = 0; i < level.u.i; i++) tpl_sb_putc(&o, '#');
        tpl_sb_putc(&o, ' ');
        if (put_S(vm, &o, title) < 0) return -1;
        tpl_sb_putc(&o, '\n');
    }
    if (!is_none(content)) {
        if (need_str(vm, content, "strip") < 0) return -1;
        tpl_value cs = tpl_py_strip(content, 3, NULL, 0);
        tpl_sb_put(&o, cs.u.s, cs.len);
        tpl_sb_putc(&o, '\n');
    }
    int t = truthy(vm, sections);
    if (t < 0) return -1;
    if (t) {
        tpl_list *secs;
        if (tpl_iter_list(vm, sections, &secs) < 0) return -1;
        tpl_value next;
        if (secs->len) {
            if (level.type == TPL_T_FLOAT) next = tpl_v_float(level.u.f + 1);
            else if (level.type == TPL_T_INT || level.type == TPL_T_BOOL) {
                int64_t n;
                if (__builtin_add_overflow(level.u.i, 1, &n)) return tpl_vm_error(vm, TPL_ERR_TYPE, "integer overflow");
                next = tpl_v_int(n);
            } else {
                if (level.type == TPL_T_UNDEF) return tpl_undefined_error(vm, level);
                return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported operand type(s) for +: '%s' and 'int'", tpl_type_name(vm, level));
            }
        }
        for (uint32_t i = 0; i < secs->len; i++) {
            tpl_value s = secs->items[i];
            if (s.type != TPL_T_MAP) {
                if (s.type == TPL_T_UNDEF) return tpl_undefined_error(vm, s);
                return tpl_vm_error(vm, TPL_ERR_TYPE, "%s indices must be integers or slices, not str", tpl_type_name(vm, s));
            }
            bool found;
            tpl_value st = map_get(s, "title", &found);
            if (!found) return tpl_vm_fail(vm, TPL_EK_KEY, "KeyError: 'title'");
            tpl_value sc = map_get(s, "content", NULL), ss = map_get(s, "sections", NULL), se = map_get(s, "end", NULL);
            tpl_sb_putc(&o, '\n');
            if (md_section(vm, &o, st, next, opt_none(sc), opt_none(ss), opt_none(se), depth + 1) < 0) return -1;
        }
    }
    if (!is_none(end)) {
        tpl_sb_putc(&o, '\n');
        if (put_S(vm, &o, end) < 0) return -1;
        tpl_sb_putc(&o, '\n');
    }
    if (o.failed) return OOM();
    tpl_value r = tpl_py_strip(tpl_sb_value(&o), 1, NULL, 0);
    tpl_sb_put(b, r.u.s, r.len);
    return 0;
}

int h_md_section(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_sb b;
    tpl_sb_init(&b, AR(vm));
    tpl_value level = tpl_given(a[1]) ? a[1] : tpl_v_int(1);
    if (md_section(vm, &b, a[0], level, a[2], a[3], a[4], 0) < 0) return -1;
    return finish(vm, &b, out);
}

/* ------------------------------------------------------------------ examples and prompts */

/* t(x): the tr= callable, or str. The result is used as text (S). */
typedef struct { tpl_value fn; bool call; } sayer;

static int say(tpl_vm *vm, const sayer *t, tpl_value x, tpl_value *out)
{
    if (t->call) {
        tpl_value r;
        if (tpl_call_value(vm, t->fn, &x, 1, &r) < 0) return -1;
        x = r;
    }
    return S(vm, x, out);
}

static int say_lit(tpl_vm *vm, const sayer *t, const char *s, tpl_value *out)
{
    return say(vm, t, lit(s), out);
}

/* hints / notes: a string is one item; None or empty is none. */
static int listify(tpl_vm *vm, tpl_value x, tpl_list **out)
{
    if (x.type == TPL_T_STR) {
        if (!(*out = tpl_list_new(AR(vm), 1))) return OOM();
        (*out)->items[(*out)->len++] = x;
        return 0;
    }
    int t = truthy(vm, x);
    if (t < 0) return -1;
    if (!t) {
        if (!(*out = tpl_list_new(AR(vm), 0))) return OOM();
        return 0;
    }
    return tpl_iter_list(vm, x, out);
}

static int labelled_items(tpl_vm *vm, tpl_sb *b, const sayer *t, const char *label, tpl_value x, tpl_value bullet,
                          bool *any)
{
    tpl_list *items;
    if (listify(vm, x, &items) < 0) return -1;
    *any = items->len > 0;
    if (!*any) return 0;
    tpl_list *said = tpl_list_new(AR(vm), items->len);
    if (!said) return OOM();
    for (uint32_t i = 0; i < items->len; i++)
        if (say(vm, t, items->items[i], &said->items[said->len++]) < 0) return -1;
    tpl_value l, text;
    if (say_lit(vm, t, label, &l) < 0 || bullets(vm, said, bullet, &text) < 0) return -1;
    tpl_sb_putc(b, '\n');
    tpl_sb_put(b, l.u.s, l.len);
    tpl_sb_puts(b, ":\n");
    tpl_sb_put(b, text.u.s, text.len);
    return 0;
}

static int example_block(tpl_vm *vm, tpl_value inputs, tpl_value output, tpl_value bullet, tpl_value inputs_schema,
                         tpl_value output_schema, tpl_value hints, tpl_value expected, tpl_value notes, tpl_value tag,
                         const sayer *t, tpl_value *out)
{
    tpl_value bs, lab, text;
    if (bullet_arg(vm, bullet, &bs) < 0) return -1;
    if (!tpl_given(output_schema)) output_schema = lit("tag");
    tpl_sb b;
    tpl_sb_init(&b, AR(vm));
    if (say_lit(vm, t, "Inputs", &lab) < 0 || bullet_dict(vm, inputs, bs, inputs_schema, 0, &text) < 0) return -1;
    tpl_sb_put(&b, lab.u.s, lab.len);
    tpl_sb_puts(&b, ":\n");
    tpl_sb_put(&b, text.u.s, text.len);
    bool any;
    if (labelled_items(vm, &b, t, "Hints", opt_none(hints), bs, &any) < 0) return -1;
    static const char *const labels[2] = {"Output", "Expected"};
    static const char *const tags[2] = {"output", "expected"};
    const tpl_value vals[2] = {output, expected};
    for (int i = 0; i < 2; i++) {
        if (!tpl_given(vals[i])) continue;
        tpl_value v;
        if (say_lit(vm, t, labels[i], &lab) < 0 ||
            format_value(vm, vals[i], output_schema, tpl_v_none(), tpl_v_none(), lit(tags[i]), 0, &v) < 0)
            return -1;
        tpl_sb_putc(&b, '\n');
        tpl_sb_put(&b, lab.u.s, lab.len);
        tpl_sb_puts(&b, ":\n");
        if (put_S(vm, &b, v) < 0) return -1;
    }
    if (labelled_items(vm, &b, t, "Notes", opt_none(notes), bs, &any) < 0) return -1;
    if (finish(vm, &b, &text) < 0) return -1;
    int tt = truthy(vm, tag);
    if (tt < 0) return -1;
    if (tt) return tag_block(vm, tag, text, tpl_v_bool(false), out);
    *out = text;
    return 0;
}

int h_example_block(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    int c = truthy(vm, a[9]);
    if (c < 0) return -1;
    sayer t = {a[9], c != 0};
    return example_block(vm, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], &t, out);
}

/* An example or instance of fast_prompt_section (AgentHeaven's CacheEntry from a dict). */
typedef struct { bool ok; tpl_value inputs, output, expected; } entry;

static int to_entry(tpl_vm *vm, tpl_value data, entry *e)
{
    e->ok = false;
    if (data.type != TPL_T_MAP) return 0;
    bool found;
    tpl_value in = map_get(data, "inputs", &found);
    if (!found) {
        tpl_map *m = tpl_map_new(AR(vm), 0);
        if (!m) return OOM();
        in = tpl_v_map(m);
    }
    if (in.type != TPL_T_MAP) return tpl_vm_error(vm, TPL_ERR_TYPE, "an entry's inputs must be a dict with string keys");
    static const char *const own[] = {"cls", "func", "output", "expected", "metadata", "exclude"};
    for (uint32_t i = 0; i < in.u.map->len; i++) {
        tpl_value k = in.u.map->e[i].key;
        if (k.type != TPL_T_STR) return tpl_vm_error(vm, TPL_ERR_TYPE, "an entry's inputs must be a dict with string keys");
        for (size_t j = 0; j < sizeof own / sizeof own[0]; j++)
            if (key_is(k, own[j]))
                return tpl_vm_error(vm, TPL_ERR_TYPE, "an entry's inputs may not be named '%s'", own[j]);
    }
    e->ok = true;
    e->inputs = in;
    e->output = map_get(data, "output", NULL);
    e->expected = map_get(data, "expected", NULL);
    return 0;
}

/* A titled group (descriptions / instructions) normalised: titles[i] with items[i]. */
typedef struct { uint32_t n; tpl_value *titles; tpl_list **items; } groups;

static int titled_groups(tpl_vm *vm, tpl_value g, const char *dflt, groups *out)
{
    g = opt_none(g);
    uint32_t n = g.type == TPL_T_MAP ? g.u.map->len : 1;
    out->n = n;
    out->titles = tpl_arena_alloc(AR(vm), (n ? n : 1) * sizeof *out->titles);
    out->items = tpl_arena_alloc(AR(vm), (n ? n : 1) * sizeof *out->items);
    if (!out->titles || !out->items) return OOM();
    for (uint32_t i = 0; i < n; i++) {
        tpl_value v = g.type == TPL_T_MAP ? g.u.map->e[i].val : g;
        out->titles[i] = g.type == TPL_T_MAP ? g.u.map->e[i].key : lit(dflt);
        if (v.type == TPL_T_LIST && !(v.flags & TPL_F_TUPLE)) {
            out->items[i] = v.u.list;
        } else {
            tpl_list *l = tpl_list_new(AR(vm), 1);
            if (!l) return OOM();
            if (v.type != TPL_T_NONE) l->items[l->len++] = v;
            out->items[i] = l;
        }
    }
    return 0;
}

static int add_section(tpl_vm *vm, tpl_list *secs, tpl_value title, tpl_value content)
{
    tpl_map *m = tpl_map_new(AR(vm), 2);
    if (!m || !tpl_map_set(AR(vm), m, lit("title"), title) || !tpl_map_set(AR(vm), m, lit("content"), content)) return OOM();
    secs->items[secs->len++] = tpl_v_map(m);
    return 0;
}

static int bulleted(tpl_vm *vm, const sayer *t, const groups *g, tpl_list *secs)
{
    for (uint32_t i = 0; i < g->n; i++) {
        const tpl_list *items = g->items[i];
        if (!items->len) continue;
        tpl_list *said = tpl_list_new(AR(vm), items->len);
        if (!said) return OOM();
        for (uint32_t k = 0; k < items->len; k++)
            if (items->items[k].type != TPL_T_NONE && say(vm, t, items->items[k], &said->items[said->len++]) < 0)
                return -1;
        tpl_value title, content;
        if (say(vm, t, g->titles[i], &title) < 0 || bullets(vm, said, lit("-"), &content) < 0 ||
            add_section(vm, secs, title, content) < 0)
            return -1;
    }
    return 0;
}

static tpl_value message(tpl_vm *vm, const char *role, tpl_value content)
{
    tpl_map *m = tpl_map_new(AR(vm), 2);
    if (!m || !tpl_map_set(AR(vm), m, lit("role"), lit(role)) || !tpl_map_set(AR(vm), m, lit("content"), content))
        return tpl_v_unset();
    return tpl_v_map(m);
}

int h_fast_prompt_section(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value system = opt_none(a[0]), inputs_schema = a[3], output_schema = a[4];
    sayer t = {a[8], !is_none(a[8])};
    tpl_list *msgs = tpl_list_new(AR(vm), 2);
    if (!msgs) return OOM();
    int sep = truthy(vm, a[7]);
    if (sep < 0) return -1;
    if (sep && system.type != TPL_T_NONE) {
        tpl_value c, m;
        if (say(vm, &t, system, &c) < 0) return -1;
        if ((m = message(vm, "system", c)).type == TPL_T_UNSET) return OOM();
        msgs->items[msgs->len++] = m;
        system = tpl_v_none();
    }
    groups desc, instr;
    if (titled_groups(vm, a[1], "Task Descriptions", &desc) < 0 || titled_groups(vm, a[5], "Instructions", &instr) < 0)
        return -1;
    tpl_list *exl;
    tpl_value examples = opt_none(a[2]);
    int te = tpl_truthy_py(vm, examples);
    if (te < 0) return -1;
    if (te) {
        if (tpl_iter_list(vm, examples, &exl) < 0) return -1;
    } else if (!(exl = tpl_list_new(AR(vm), 0))) {
        return OOM();
    }
    entry *ex = tpl_arena_alloc(AR(vm), (exl->len ? exl->len : 1) * sizeof *ex), inst;
    if (!ex) return OOM();
    for (uint32_t i = 0; i < exl->len; i++)
        if (to_entry(vm, exl->items[i], &ex[i]) < 0) return -1;
    if (to_entry(vm, opt_none(a[6]), &inst) < 0) return -1;
    tpl_list *secs = tpl_list_new(AR(vm), desc.n + instr.n + 2);
    if (!secs) return OOM();
    if (bulleted(vm, &t, &desc, secs) < 0) return -1;
    if (exl->len) {
        tpl_value shown = output_schema;
        int ts = truthy(vm, output_schema);
        if (ts < 0) return -1;
        if (!ts) {
            tpl_map *kw = tpl_map_new(AR(vm), 2), *s = tpl_map_new(AR(vm), 2);
            if (!kw || !s || !tpl_map_set(AR(vm), kw, lit("schema"), lit("repr")) ||
                !tpl_map_set(AR(vm), kw, lit("inline"), tpl_v_bool(true)) || !tpl_map_set(AR(vm), s, lit("mode"), lit("tag")) ||
                !tpl_map_set(AR(vm), s, lit("kwargs"), tpl_v_map(kw)))
                return OOM();
            shown = tpl_v_map(s);
        }
        tpl_sb b;
        tpl_sb_init(&b, AR(vm));
        for (uint32_t i = 0; i < exl->len; i++) {
            if (!ex[i].ok) return tpl_vm_fail(vm, TPL_EK_ATTRIBUTE, "an example must be a dict (AgentHeaven: None has no to_str)");
            char tag[32];
            int n = snprintf(tag, sizeof tag, "example_%u", i + 1);
            tpl_value text;
            if (example_block(vm, ex[i].inputs, ex[i].output, tpl_v_unset(), inputs_schema, shown, tpl_v_unset(),
                              ex[i].expected, tpl_v_unset(), tpl_v_str(tag, (size_t)n), &t, &text) < 0)
                return -1;
            if (i) tpl_sb_puts(&b, "\n\n");
            tpl_sb_put(&b, text.u.s, text.len);
        }
        tpl_value title, content;
        if (finish(vm, &b, &content) < 0 || say_lit(vm, &t, "Examples", &title) < 0 || add_section(vm, secs, title, content) < 0)
            return -1;
    }
    if (bulleted(vm, &t, &instr, secs) < 0) return -1;
    if (inst.ok) {
        tpl_value text, title;
        if (example_block(vm, inst.inputs, lit("TODO"), tpl_v_unset(), inputs_schema, lit("todo"), tpl_v_unset(),
                          inst.expected, tpl_v_unset(), lit("new_instance"), &t, &text) < 0 ||
            say_lit(vm, &t, "New Instance", &title) < 0 || add_section(vm, secs, title, text) < 0)
            return -1;
    }
    tpl_value content = tpl_v_none();
    if (system.type != TPL_T_NONE && say(vm, &t, system, &content) < 0) return -1;
    tpl_sb b;
    tpl_sb_init(&b, AR(vm));
    tpl_value user, m;
    if (md_section(vm, &b, tpl_v_none(), tpl_v_int(1), content, tpl_v_list(secs), tpl_v_none(), 0) < 0 ||
        finish(vm, &b, &user) < 0)
        return -1;
    if ((m = message(vm, "user", user)).type == TPL_T_UNSET) return OOM();
    msgs->items[msgs->len++] = m;
    *out = tpl_v_list(msgs);
    return 0;
}

/* tr(text, lang=?, elicit=?): str(text) (Ruby's to_s in ERB), then the catalogs (stdlib/prompt/tr.c).
 * elicit is HeavenBase's (issue 19): only "none" (translate from the rows, never ask a model) is
 * accepted; any other value is an error naming it. */
int h_tr(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value text = a[0], elicit = a[2];
    if (elicit.type == TPL_T_STR) {
        size_t n = elicit.len;
        if (n != 4 || memcmp(elicit.u.s, "none", 4) != 0)
            return tpl_vm_fail(vm, tpl_vm_syntax(vm) == TPL_SYN_ERB ? TPL_EK_VALUE : TPL_EK_TYPE, "tr(): unsupported elicit value '%.*s' (only \"none\" is supported)",
                                (int)(n > 200 ? 200 : n), elicit.u.s);
    } else if (elicit.type != TPL_T_UNSET) {
        return tpl_vm_fail(vm, tpl_vm_syntax(vm) == TPL_SYN_ERB ? TPL_EK_VALUE : TPL_EK_TYPE, "tr(): unsupported elicit value of type %s (only \"none\" is supported)",
                            tpl_type_name(vm, elicit));
    }
    if (text.type != TPL_T_STR) {
        if (tpl_vm_syntax(vm) == TPL_SYNTAX_ERB) {
            tpl_sb b;
            tpl_sb_init(&b, AR(vm));
            tpl_rb_to_s(&b, text);
            if (b.failed) return OOM();
            text = tpl_sb_value(&b);
        } else if (tpl_to_str(vm, text, &text) < 0) {
            return -1;
        }
    }
    return tpl_tr_value(vm, text, a[1], out);
}
