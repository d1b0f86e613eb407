/* Python's str.format (https://docs.python.org/3/library/string.html#formatstrings): replacement
 * fields {name.attr[key]!conv:spec}, automatic and manual numbering, nested specs; each field's
 * spec goes to tpl_format_value (spec.c). */
#include "fmt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OOM() tpl_vm_nomem(vm)

static tpl_arena *AR(tpl_vm *vm) { return tpl_vm_arena(vm); }

typedef struct {
    const tpl_value *args;
    int nargs;
    const tpl_map *kwargs;
    int auto_idx;   /* -1 = manual numbering used, >= 0 next automatic index */
    bool manual;
    bool escape;    /* markupsafe's EscapeFormatter (Markup.format): each field's text escaped */
} fmt_state;

static int resolve_field(tpl_vm *vm, fmt_state *st, const char *s, size_t n, tpl_value *out)
{
    size_t i = 0;
    while (i < n && s[i] != '.' && s[i] != '[')
        i++;
    tpl_value obj;
    if (i == 0) {
        if (st->manual)
            return tpl_vm_error(vm, TPL_ERR_VALUE,
                                "cannot switch from manual field specification to automatic field numbering");
        int idx = st->auto_idx++;
        if (idx >= st->nargs)
            return tpl_vm_fail(vm, TPL_EK_INDEX, "Replacement index %d out of range for positional args tuple", idx);
        obj = st->args[idx];
    } else {
        bool digits = true;
        for (size_t k = 0; k < i; k++)
            if (s[k] < '0' || s[k] > '9') { digits = false; break; }
        if (digits) {
            if (st->auto_idx > 0)
                return tpl_vm_error(vm, TPL_ERR_VALUE,
                                    "cannot switch from automatic field numbering to manual field specification");
            st->manual = true;
            int64_t idx = 0;
            for (size_t k = 0; k < i && idx < 100000000; k++)
                idx = idx * 10 + (s[k] - '0');
            if (idx >= st->nargs)
                return tpl_vm_fail(vm, TPL_EK_INDEX, "Replacement index %lld out of range for positional args tuple",
                                    (long long)idx);
            obj = st->args[idx];
        } else {
            tpl_value *v = st->kwargs ? tpl_map_get(st->kwargs, tpl_v_str(s, i)) : NULL;
            if (!v)
                return tpl_vm_fail(vm, TPL_EK_KEY, "'%.*s'", (int)i, s);
            obj = *v;
        }
    }
    while (i < n) {
        if (s[i] == '.') {
            size_t j = ++i;
            while (i < n && s[i] != '.' && s[i] != '[')
                i++;
            if (i == j)
                return tpl_vm_error(vm, TPL_ERR_VALUE, "Empty attribute in format string");
            if (obj.type == TPL_T_UNDEF)
                return tpl_undefined_error(vm, obj);
            tpl_value prev = obj;
            if (tpl_getattr(vm, obj, s + j, i - j, &obj) < 0)
                return -1;
            /* Plain Python getattr outside the sandbox: no item fallback. */
            if (!tpl_vm_hf(vm) && (obj.type == TPL_T_UNDEF ||
                                   (prev.type == TPL_T_MAP && !(prev.flags & TPL_F_NS) && obj.type != TPL_T_FUNC)))
                return tpl_vm_fail(vm, TPL_EK_ATTRIBUTE, "'%s' object has no attribute '%.*s'",
                                    tpl_type_name(vm, prev), (int)(i - j), s + j);
        } else if (s[i] == '[') {
            size_t j = ++i;
            while (i < n && s[i] != ']')
                i++;
            if (i >= n)
                return tpl_vm_error(vm, TPL_ERR_VALUE, "Missing ']' in format string");
            if (i == j)
                return tpl_vm_error(vm, TPL_ERR_VALUE, "Empty attribute in format string");
            tpl_value key = tpl_path_key(s + j, i - j);
            i++;
            if (i < n && s[i] != '.' && s[i] != '[')
                return tpl_vm_error(vm, TPL_ERR_VALUE, "Only '.' or '[' may follow ']' in format field specifier");
            if (obj.type == TPL_T_UNDEF)
                return tpl_undefined_error(vm, obj);
            tpl_value prev = obj;
            if (tpl_getitem(vm, obj, key, &obj) < 0)
                return -1;
            /* Plain Python obj[key] outside the sandbox: a missing key is an error. */
            if (!tpl_vm_hf(vm) && obj.type == TPL_T_UNDEF) {
                if (prev.type == TPL_T_MAP) {
                    tpl_sb kb;
                    tpl_sb_init(&kb, AR(vm));
                    tpl_py_repr(&kb, key);
                    return tpl_vm_fail(vm, TPL_EK_KEY, "%.*s", (int)kb.len, kb.p ? kb.p : "");
                }
                if (prev.type == TPL_T_LIST || prev.type == TPL_T_STR)
                    return tpl_vm_fail(vm, key.type == TPL_T_STR ? TPL_EK_TYPE : TPL_EK_INDEX, key.type == TPL_T_STR
                                       ? "%s indices must be integers or slices, not str" : "%s index out of range",
                                       prev.type == TPL_T_STR ? "string" : tpl_type_name(vm, prev));
                return tpl_vm_error(vm, TPL_ERR_TYPE, "'%s' object is not subscriptable", tpl_type_name(vm, prev));
            }
        } else {
            return tpl_vm_error(vm, TPL_ERR_VALUE, "Only '.' or '[' may follow ']' in format field specifier");
        }
    }
    *out = obj;
    return 0;
}

static int vformat(tpl_vm *vm, fmt_state *st, tpl_sb *b, const char *s, size_t n, int depth)
{
    if (depth > 2)
        return tpl_vm_error(vm, TPL_ERR_VALUE, "Max string recursion exceeded");
    size_t i = 0;
    while (i < n) {
        char c = s[i];
        if (c == '}') {
            if (i + 1 < n && s[i + 1] == '}') {
                tpl_sb_putc(b, '}');
                i += 2;
                continue;
            }
            return tpl_vm_error(vm, TPL_ERR_VALUE, "Single '}' encountered in format string");
        }
        if (c != '{') {
            size_t j = i;
            while (j < n && s[j] != '{' && s[j] != '}')
                j++;
            tpl_sb_put(b, s + i, j - i);
            i = j;
            continue;
        }
        if (i + 1 < n && s[i + 1] == '{') {
            tpl_sb_putc(b, '{');
            i += 2;
            continue;
        }
        /* A replacement field: find its end, honouring nested braces. */
        size_t start = ++i;
        int nest = 1;
        size_t end = start;
        while (end < n) {
            if (s[end] == '{') nest++;
            else if (s[end] == '}' && --nest == 0) break;
            end++;
        }
        if (end >= n) {
            if (nest > 1 || end > start)
                return tpl_vm_error(vm, TPL_ERR_VALUE, "expected '}' before end of string");
            return tpl_vm_error(vm, TPL_ERR_VALUE, "Single '{' encountered in format string");
        }
        i = end + 1;
        /* field_name [! conv] [: spec] */
        size_t k = start;
        int bracket = 0;
        while (k < end) {
            if (s[k] == '[') bracket++;
            else if (s[k] == ']') bracket--;
            else if (bracket == 0 && (s[k] == '!' || s[k] == ':')) break;
            k++;
        }
        size_t name_end = k;
        char conv = 0;
        if (k < end && s[k] == '!') {
            if (k + 1 >= end)
                return tpl_vm_error(vm, TPL_ERR_VALUE, "end of string while looking for conversion specifier");
            conv = s[k + 1];
            k += 2;
            if (k < end && s[k] != ':')
                return tpl_vm_error(vm, TPL_ERR_VALUE, "expected ':' after conversion specifier");
        }
        const char *spec = "";
        size_t nspec = 0;
        if (k < end && s[k] == ':') {
            spec = s + k + 1;
            nspec = end - k - 1;
        }
        tpl_value v;
        if (resolve_field(vm, st, s + start, name_end - start, &v) < 0)
            return -1;
        if (conv) {
            tpl_sb cb;
            tpl_sb_init(&cb, AR(vm));
            if (tpl_vm_strict_undef(vm, v))
                return tpl_undefined_error(vm, v);
            if (conv == 'r') tpl_py_repr(&cb, v);
            else if (conv == 's') tpl_py_str(&cb, v);
            else if (conv == 'a') tpl_py_ascii(&cb, v);
            else
                return tpl_vm_error(vm, TPL_ERR_VALUE, "Unknown conversion specifier %c", conv);
            if (cb.failed) /* an int past 4,300 digits, a function in a list, no memory */
                return tpl_vm_sb_error(vm, &cb, "while getting the repr of an object");
            v = tpl_sb_value(&cb);
        }
        if (memchr(spec, '{', nspec)) {
            tpl_sb sb2;
            tpl_sb_init(&sb2, AR(vm));
            if (vformat(vm, st, &sb2, spec, nspec, depth + 1) < 0)
                return -1;
            spec = sb2.p ? sb2.p : "";
            nspec = sb2.len;
        }
        if (st->escape) {
            /* EscapeFormatter.format_field: a Markup value is its own text (Markup.__html_format__
             * takes no spec); any other value is formatted, then the text escaped. A conversion
             * (!r, !s, !a) has made a plain str of the value already. */
            if (!conv && v.type == TPL_T_STR && (v.flags & TPL_F_SAFE)) {
                if (nspec)
                    return tpl_vm_error(vm, TPL_ERR_VALUE, "Unsupported format specification for Markup.");
                tpl_sb_put(b, v.u.s, v.len);
                continue;
            }
            tpl_sb fb;
            tpl_sb_init(&fb, AR(vm));
            if (tpl_format_value(vm, &fb, v, spec, nspec) < 0)
                return -1;
            if (fb.failed)
                return tpl_vm_sb_error(vm, &fb, "while formatting a field");
            tpl_html_escape(b, fb.p ? fb.p : "", fb.len);
            continue;
        }
        if (tpl_format_value(vm, b, v, spec, nspec) < 0)
            return -1;
    }
    return 0;
}

int tpl_str_format(tpl_vm *vm, tpl_value fmt, const tpl_value *args, int nargs,
                   const tpl_map *kwargs, bool escape, tpl_value *out)
{
    fmt_state st = { args, nargs, kwargs, 0, false, escape };
    tpl_sb b;
    tpl_sb_init(&b, AR(vm));
    if (vformat(vm, &st, &b, fmt.u.s, fmt.len, 0) < 0)
        return -1;
    if (b.failed)
        return tpl_vm_sb_error(vm, &b, "while getting the repr of an object");
    *out = tpl_sb_value(&b);
    return 0;
}
