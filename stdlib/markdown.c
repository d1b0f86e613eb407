/* Prompt-writing helpers (globals, and filters with the first argument as the subject):
 * bullet_list, numbered_list, md_block, code_block, file_block, json_block, bullet_dict,
 * omission_list, md_section — and the tr builtin. Each follows the Python definition in the
 * conformance oracle byte for byte (str() is Python's, lines are str.splitlines()', whitespace
 * is Unicode whitespace). */
#include <stdio.h>
#include <string.h>
#include "builtins.h"
#include "tr.h"

#define OOM() tpl_vm_nomem(vm)

static bool none_or_unset(tpl_value v) { return v.type == TPL_T_UNSET || v.type == TPL_T_NONE; }

/* str(v) with Python's rules (strings pass through). */
static int py_str(tpl_vm *vm, tpl_value v, tpl_value *out)
{
    if (v.type == TPL_T_STR) { *out = v; return 0; }
    return tpl_to_str(vm, v, out);
}

static int need_str(tpl_vm *vm, tpl_value v, const char *what)
{
    if (v.type == TPL_T_STR) return 0;
    if (v.type == TPL_T_UNDEF) return tpl_undefined_error(vm, v);
    return tpl_vm_error(vm, TPL_ERR_TYPE, "'%s' object has no attribute '%s'", tpl_type_name(vm, v), what);
}

static void put_spaces(tpl_sb *b, size_t n)
{
    for (size_t i = 0; i < n; i++) tpl_sb_putc(b, ' ');
}

/* _indent(s, n): every line holding non-whitespace gets n spaces in front. */
static int indent(tpl_vm *vm, tpl_sb *b, tpl_value s, size_t n)
{
    tpl_list *lines;
    if (tpl_splitlines(vm, s, true, &lines) < 0) return -1;
    for (uint32_t i = 0; i < lines->len; i++) {
        tpl_value l = lines->items[i];
        if (tpl_py_strip(l, 3, NULL, 0).len) put_spaces(b, n);
        tpl_sb_put(b, l.u.s, l.len);
    }
    return 0;
}

/* _bullet_block(text, bullet): indent by len(bullet) + 1, then the first run of that many
 * spaces becomes the bullet and a space. */
static int bullet_block(tpl_vm *vm, tpl_sb *out, tpl_value item, tpl_value bullet)
{
    tpl_value text;
    if (py_str(vm, item, &text) < 0) return -1;
    size_t w = tpl_utf8_len(bullet.u.s, bullet.len) + 1;
    tpl_sb b;
    tpl_sb_init(&b, tpl_vm_arena(vm));
    if (indent(vm, &b, text, w) < 0) return -1;
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

static int bullet_arg(tpl_vm *vm, tpl_value v, tpl_value *out)
{
    if (!tpl_given(v)) { *out = tpl_v_str("-", 1); return 0; }
    return py_str(vm, v, out);
}

static int finish(tpl_vm *vm, tpl_sb *b, tpl_value *out)
{
    if (b->failed) return OOM();
    *out = tpl_sb_value(b);
    return 0;
}

static int bullets(tpl_vm *vm, tpl_list *items, tpl_value bullet, tpl_value *out)
{
    tpl_sb b;
    tpl_sb_init(&b, tpl_vm_arena(vm));
    for (uint32_t i = 0; i < items->len; i++) {
        if (i) tpl_sb_putc(&b, '\n');
        if (bullet_block(vm, &b, items->items[i], bullet) < 0) return -1;
    }
    return finish(vm, &b, out);
}

int h_bullet_list(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *items;
    tpl_value bullet;
    if (tpl_iter_list(vm, a[0], &items) < 0 || bullet_arg(vm, a[1], &bullet) < 0) return -1;
    return bullets(vm, items, bullet, out);
}

int h_numbered_list(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *items;
    if (tpl_iter_list(vm, a[0], &items) < 0) return -1;
    char buf[32];
    int width = snprintf(buf, sizeof buf, "%u", items->len);
    tpl_sb b;
    tpl_sb_init(&b, tpl_vm_arena(vm));
    for (uint32_t i = 0; i < items->len; i++) {
        char bl[64];
        int n = snprintf(bl, sizeof bl, "%u.%*s", i + 1, width - snprintf(buf, sizeof buf, "%u", i + 1), "");
        if (i) tpl_sb_putc(&b, '\n');
        if (bullet_block(vm, &b, items->items[i], tpl_v_str(bl, (size_t)n)) < 0) return -1;
    }
    return finish(vm, &b, out);
}

static bool all_backticks(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != '`') return false;
    return true;
}

/* _fence(content): the shortest run of backticks (3, 6, 9, ...) not found in content. */
static int fence(tpl_vm *vm, tpl_value content, size_t *len)
{
    *len = 3;
    if (content.type == TPL_T_LIST) {
        for (;;) {
            bool found = false;
            for (uint32_t i = 0; i < content.u.list->len && !found; i++) {
                tpl_value it = content.u.list->items[i];
                found = it.type == TPL_T_STR && it.len == *len && all_backticks(it.u.s, it.len);
            }
            if (!found) return 0;
            *len += 3;
        }
    }
    if (content.type != TPL_T_STR) {
        if (content.type == TPL_T_UNDEF) return tpl_undefined_error(vm, content);
        return tpl_vm_error(vm, TPL_ERR_TYPE, "argument of type '%s' is not iterable", tpl_type_name(vm, content));
    }
    size_t longest = 0, run = 0;
    for (size_t i = 0; i < content.len; i++) {
        run = content.u.s[i] == '`' ? run + 1 : 0;
        if (run > longest) longest = run;
    }
    while (*len <= longest) *len += 3;
    return 0;
}

static int md_block(tpl_vm *vm, tpl_value content, tpl_value lang, tpl_value header, tpl_value *out)
{
    size_t f;
    if (fence(vm, content, &f) < 0) return -1;
    tpl_value cs, ls = tpl_v_str("", 0), hs = tpl_v_str("", 0);
    if (py_str(vm, content, &cs) < 0) return -1;
    if (tpl_given(lang) && py_str(vm, lang, &ls) < 0) return -1;
    tpl_sb b;
    tpl_sb_init(&b, tpl_vm_arena(vm));
    if (tpl_given(header)) {
        int t = tpl_truthy_py(vm, header);
        if (t < 0) return -1;
        if (t) {
            if (py_str(vm, header, &hs) < 0) return -1;
            tpl_sb_put(&b, hs.u.s, hs.len);
            tpl_sb_putc(&b, '\n');
        }
    }
    for (size_t i = 0; i < f; i++) tpl_sb_putc(&b, '`');
    tpl_sb_put(&b, ls.u.s, ls.len);
    tpl_sb_putc(&b, '\n');
    tpl_sb_put(&b, cs.u.s, cs.len);
    tpl_sb_putc(&b, '\n');
    for (size_t i = 0; i < f; i++) tpl_sb_putc(&b, '`');
    return finish(vm, &b, out);
}

int h_md_block(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    return md_block(vm, a[0], a[1], a[2], out);
}

static int code_block(tpl_vm *vm, tpl_value content, tpl_value lang, tpl_value start, tpl_value header,
                      tpl_value *out)
{
    int64_t st = -1;
    if (tpl_given(start) && tpl_arg_index(vm, start, &st) < 0) return -1;
    if (st >= 0) {
        if (need_str(vm, content, "splitlines") < 0) return -1;
        tpl_list *lines;
        if (tpl_splitlines(vm, content, false, &lines) < 0) return -1;
        tpl_sb b;
        tpl_sb_init(&b, tpl_vm_arena(vm));
        for (uint32_t i = 0; i < lines->len; i++) {
            if (i) tpl_sb_putc(&b, '\n');
            tpl_sb_printf(&b, "(%4lld)  ", (long long)(st + i));
            tpl_sb_put(&b, lines->items[i].u.s, lines->items[i].len);
        }
        if (b.failed) return OOM();
        content = tpl_sb_value(&b);
    }
    return md_block(vm, content, lang, header, out);
}

int h_code_block(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    return code_block(vm, a[0], a[1], a[2], a[3], out);
}

int h_file_block(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    if (need_str(vm, a[1], "splitlines") < 0) return -1;
    tpl_list *lines;
    tpl_value file;
    if (tpl_splitlines(vm, a[1], false, &lines) < 0 || py_str(vm, a[0], &file) < 0) return -1;
    tpl_sb h;
    tpl_sb_init(&h, tpl_vm_arena(vm));
    tpl_sb_puts(&h, "File: `");
    tpl_sb_put(&h, file.u.s, file.len);
    tpl_sb_printf(&h, "` (%u lines)", lines->len);
    if (h.failed) return OOM();
    return code_block(vm, a[1], a[2], a[3], tpl_sb_value(&h), out);
}

int h_json_block(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    int64_t ind = 4;
    if (tpl_given(a[1])) {
        if (a[1].type == TPL_T_NONE) ind = -1;
        else if (tpl_arg_index(vm, a[1], &ind) < 0) return -1;
        if (ind > 64) ind = 64;
        if (ind < 0 && a[1].type != TPL_T_NONE) ind = 0;
    }
    tpl_sb b;
    tpl_sb_init(&b, tpl_vm_arena(vm));
    if (!tpl_json_dumps(&b, a[0], false, (int)ind, NULL, NULL, false))
        return tpl_vm_error(vm, TPL_ERR_TYPE, "Object of type %s is not JSON serializable", tpl_type_name(vm, a[0]));
    if (b.failed) return OOM();
    return code_block(vm, tpl_sb_value(&b), tpl_v_str("json", 4), tpl_v_unset(), tpl_v_unset(), out);
}

int h_bullet_dict(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value d = a[0], bullet;
    if (d.type != TPL_T_MAP) {
        if (d.type == TPL_T_UNDEF) return tpl_undefined_error(vm, d);
        return tpl_vm_error(vm, TPL_ERR_TYPE, "'%s' object has no attribute 'items'", tpl_type_name(vm, d));
    }
    if (bullet_arg(vm, a[1], &bullet) < 0) return -1;
    tpl_arena *ar = tpl_vm_arena(vm);
    tpl_list *items = tpl_list_new(ar, d.u.map->len);
    if (!items) return OOM();
    for (uint32_t i = 0; i < d.u.map->len; i++) {
        tpl_sb b;
        tpl_sb_init(&b, ar);
        tpl_py_str(&b, d.u.map->e[i].key);
        tpl_sb_puts(&b, ": ");
        tpl_py_repr(&b, d.u.map->e[i].val);
        if (b.failed) return OOM();
        items->items[items->len++] = tpl_sb_value(&b);
    }
    return bullets(vm, items, bullet, out);
}

int h_omission_list(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *items;
    int64_t top = -1, bottom = 1;
    if (tpl_iter_list(vm, a[0], &items) < 0) return -1;
    if (tpl_given(a[1]) && tpl_arg_index(vm, a[1], &top) < 0) return -1;
    if (tpl_given(a[2]) && tpl_arg_index(vm, a[2], &bottom) < 0) return -1;
    int64_t n = items->len;
    int64_t most = top < 0 ? -1 : top + bottom;
    if (most < 0 || n <= most) {
        *out = tpl_v_list(items);
        return 0;
    }
    tpl_arena *ar = tpl_vm_arena(vm);
    tpl_list *l = tpl_list_new(ar, (uint32_t)n + 1);
    if (!l) return OOM();
    int64_t head = top < n ? top : n;
    for (int64_t i = 0; i < head; i++) l->items[l->len++] = items->items[i];
    char buf[64];
    int k = snprintf(buf, sizeof buf, "... (omitting %lld)", (long long)(n - most));
    char *s = tpl_arena_strdup(ar, buf, (size_t)k);
    if (!s) return OOM();
    l->items[l->len++] = tpl_v_str(s, (size_t)k);
    if (bottom > 0) {
        int64_t from = n - bottom < 0 ? 0 : n - bottom;
        for (int64_t i = from; i < n; i++) l->items[l->len++] = items->items[i];
    }
    *out = tpl_v_list(l);
    return 0;
}

static int map_get(tpl_value m, const char *k, tpl_value *out)
{
    tpl_value *v = tpl_map_get_str(m.u.map, k, strlen(k), tpl_hash_str(k, strlen(k)));
    *out = v ? *v : tpl_v_none();
    return 0;
}

static int md_section(tpl_vm *vm, tpl_sb *b, tpl_value title, int64_t level, tpl_value content,
                      tpl_value sections, tpl_value end, int depth)
{
    if (depth > 100) return tpl_vm_error(vm, TPL_ERR_LIMIT, "md_section nested too deeply");
    tpl_sb o;
    tpl_sb_init(&o, tpl_vm_arena(vm));
    if (!none_or_unset(title)) {
        tpl_value ts;
        if (py_str(vm, title, &ts) < 0) return -1;
        for (int64_t i = 0; i < level && i < 100000; i++) tpl_sb_putc(&o, '#');
        tpl_sb_putc(&o, ' ');
        tpl_sb_put(&o, ts.u.s, ts.len);
        tpl_sb_putc(&o, '\n');
    }
    if (!none_or_unset(content)) {
        if (need_str(vm, content, "strip") < 0) return -1;
        tpl_value cs = tpl_py_strip(content, 3, NULL, 0);
        tpl_sb_put(&o, cs.u.s, cs.len);
        tpl_sb_putc(&o, '\n');
    }
    if (tpl_given(sections)) {
        int t = tpl_truthy_py(vm, sections);
        if (t < 0) return -1;
        tpl_list *secs = NULL;
        if (t && tpl_iter_list(vm, sections, &secs) < 0) return -1;
        for (uint32_t i = 0; secs && i < secs->len; i++) {
            tpl_value s = secs->items[i];
            if (s.type != TPL_T_MAP)
                return tpl_vm_error(vm, TPL_ERR_TYPE, "'%s' object has no attribute 'get'", tpl_type_name(vm, s));
            tpl_value st, sc, ss, se;
            map_get(s, "title", &st);
            map_get(s, "content", &sc);
            map_get(s, "sections", &ss);
            map_get(s, "end", &se);
            tpl_sb_putc(&o, '\n');
            if (md_section(vm, &o, st, level + 1, sc, ss, se, depth + 1) < 0) return -1;
        }
    }
    if (!none_or_unset(end)) {
        tpl_value es;
        if (py_str(vm, end, &es) < 0) return -1;
        tpl_sb_putc(&o, '\n');
        tpl_sb_put(&o, es.u.s, es.len);
        tpl_sb_putc(&o, '\n');
    }
    if (o.failed) return OOM();
    tpl_value r = tpl_py_strip(tpl_sb_value(&o), 1, NULL, 0);
    tpl_sb_put(b, r.u.s, r.len);
    return 0;
}

int h_md_section(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    int64_t level = 1;
    if (tpl_given(a[1]) && tpl_arg_index(vm, a[1], &level) < 0) return -1;
    tpl_sb b;
    tpl_sb_init(&b, tpl_vm_arena(vm));
    if (md_section(vm, &b, a[0], level, a[2], a[3], a[4], 0) < 0) return -1;
    return finish(vm, &b, out);
}

/* tr(text, lang=?): str(text) (Ruby's to_s in ERB), then the catalogs (stdlib/tr.c). */
int h_tr(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value text = a[0];
    if (text.type != TPL_T_STR) {
        if (tpl_vm_syntax(vm) == TPL_SYNTAX_ERB) {
            tpl_sb b;
            tpl_sb_init(&b, tpl_vm_arena(vm));
            tpl_rb_to_s(&b, text);
            if (b.failed) return OOM();
            text = tpl_sb_value(&b);
        } else if (tpl_to_str(vm, text, &text) < 0) {
            return -1;
        }
    }
    return tpl_tr_text(vm, text, a[1], out);
}
