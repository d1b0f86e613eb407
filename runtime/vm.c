/* The VM: dispatch loop and the value semantics the opcodes need (Python rules for Jinja,
 * Ruby rules where an opcode says so). */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "vm_impl.h"
#include "error.h"
#include "bigint.h"
#include "host.h"
#include "../include/tpl_native.h"

/* ------------------------------------------------------------------ errors and accessors */

static int vm_verror(tpl_vm *vm, tpl_error_kind kind, const char *fmt, va_list ap)
{
    if (vm->err.status != TPL_OK) return -1; /* keep the first error */
    vsnprintf(vm->err_msg, sizeof vm->err_msg, fmt, ap);
    /* an ERB message names Ruby's class at its end: that class's kind, unless a limit */
    if (tpl_error_kind_status(kind) != TPL_ERR_LIMIT && kind != TPL_EK_NOMEM)
        kind = tpl_error_kind_of_message((tpl_syntax)tpl_vm_syntax(vm), vm->err_msg, strlen(vm->err_msg), kind);
    vm->err.status = tpl_error_kind_status(kind);
    vm->err.kind = kind;
    vm->err.message = vm->err_msg;
    vm->err.file = vm->p ? vm->p->name : NULL;
    vm->err.line = vm->err.column = 0;
    vm->err.source_line = NULL;
    /* the dispatch loop keeps pc in a register: it locates the error when it unwinds (locate) */
    vm->err_unlocated = true;
    return -1;
}

int tpl_vm_error(tpl_vm *vm, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = vm_verror(vm, tpl_status_kind((tpl_status)code), fmt, ap);
    va_end(ap);
    return rc;
}

int tpl_vm_fail(tpl_vm *vm, tpl_error_kind kind, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = vm_verror(vm, kind, fmt, ap);
    va_end(ap);
    return rc;
}

int tpl_vm_limit(tpl_vm *vm, tpl_error_kind kind, unsigned long long limit)
{
    return tpl_vm_fail(vm, kind, tpl_error_kind_format(kind), limit);
}

uint64_t tpl_vm_max_output(const tpl_vm *vm) { return vm->limits.max_output; }

int tpl_vm_put_cp(tpl_vm *vm, tpl_sb *b, uint32_t cp)
{
    if (cp >= 0xD800 && cp <= 0xDFFF) {
        if (tpl_vm_syntax(vm) == TPL_SYNTAX_ERB)
            return tpl_vm_fail(vm, TPL_EK_OVERFLOW, "invalid codepoint 0x%X in UTF-8 (RangeError)", (unsigned)cp);
        return tpl_vm_error(vm, TPL_ERR_VALUE,
                            "'utf-8' codec can't encode character '\\u%04x': surrogates not allowed", (unsigned)cp);
    }
    tpl_sb_put_cp(b, cp);
    return 0;
}

/* Sets the location of the pending error to instruction pc of the running program. */
static void locate_in(tpl_vm *vm, uint32_t file, uint32_t line, uint32_t column);
static void locate(tpl_vm *vm, uint32_t pc)
{
    vm->err_unlocated = false;
    vm->pc = pc;
    if (vm->p) {
        uint32_t line, column, file;
        tpl_program_span(vm->p, vm->pc, &line, &column, &file);
        locate_in(vm, file, line, column);
    }
}

/* The error's location: line and column of the running program's template, with its source line. */
static void locate_at(tpl_vm *vm, uint32_t line, uint32_t column)
{
    locate_in(vm, 0, line, column);
}

/* The same in file `file` of the program (tpl_program_file: 0 the template itself, else a
 * template whose code an include, import or extends put in the program). */
static void locate_in(tpl_vm *vm, uint32_t file, uint32_t line, uint32_t column)
{
    vm->err_unlocated = false;
    vm->err.line = line;
    vm->err.column = column;
    {
        const char *src;
        size_t srclen;
        vm->err.file = tpl_program_file(vm->p, file, &src, &srclen); /* (the file the location is in) */
        vm->err.source_line = NULL;
        if (vm->err.line && src && srclen) { /* a stripped program has no lines */
            const char *s = src;
            size_t n = srclen, i = 0;
            uint32_t l = 1;
            while (i < n && l < vm->err.line) { /* (memchr: a line of 100 KB is not walked byte by byte) */
                const char *nl = memchr(s + i, '\n', n - i);
                if (!nl) { i = n; break; }
                i = (size_t)(nl - s) + 1;
                l++;
            }
            const char *nl = i < n ? memchr(s + i, '\n', n - i) : NULL;
            size_t e = nl ? (size_t)(nl - s) : n;
            /* a line longer than the fixed buffer goes to the heap, whole, so the caret stays
             * under its column; without memory it is cut (the caret then ends the cut line) */
            size_t raw = e - i, len = tpl_error_line_copy(NULL, s + i, raw); /* (a NUL byte shows as U+2400) */
            char *dst = vm->err_line;
            if (len >= sizeof vm->err_line) {
                if (len + 1 > vm->err_line_big_cap) {
                    char *nb = vm->err_line_big
                        ? vm->alloc.realloc(vm->alloc.data, vm->err_line_big, vm->err_line_big_cap, len + 1)
                        : vm->alloc.alloc(vm->alloc.data, len + 1);
                    if (nb) { vm->err_line_big = nb; vm->err_line_big_cap = len + 1; }
                }
                if (len + 1 <= vm->err_line_big_cap) dst = vm->err_line_big;
                else raw = (sizeof vm->err_line - 1) / 3; /* at most 3 bytes a byte */
            }
            tpl_error_line_copy(dst, s + i, raw);
            vm->err.source_line = dst;
        }
    }
}

tpl_arena *tpl_vm_arena(tpl_vm *vm) { return &vm->arena; }
bool tpl_vm_strict(const tpl_vm *vm) { return vm->p && vm->p->opts.strict; }
bool tpl_vm_strict_undef(const tpl_vm *vm, tpl_value v)
{
    return v.type == TPL_T_UNDEF && v.aux != TPL_UNDEF_COND && tpl_vm_strict(vm);
}
bool tpl_vm_state_owns(const tpl_vm *vm, const void *p) { return tpl_arena_owns(&vm->state_arena, p); }

/* ------------------------------------------------------------------ containers changed in place (issue 14) */

/* The entry of vm->own for array arr (NULL when it is not one of this render's), or with add, the
 * slot to record it in (NULL when out of memory). */
static struct tpl_own *own_slot(tpl_vm *vm, const void *arr, bool add)
{
    if (vm->own_cap) {
        uint32_t mask = vm->own_cap - 1;
        for (uint32_t i = (uint32_t)(((uintptr_t)arr >> 4) * 0x9E3779B1u) & mask;; i = (i + 1) & mask) {
            if (vm->own[i].arr == arr) return &vm->own[i];
            if (!vm->own[i].arr) {
                if (!add) return NULL;
                if ((vm->own_n + 1) * 4 <= vm->own_cap * 3) {
                    vm->own_n++;
                    vm->own[i].arr = arr;
                    vm->own[i].hwm = 0;
                    return &vm->own[i];
                }
                break;
            }
        }
    }
    if (!add) return NULL;
    uint32_t cap = vm->own_cap ? vm->own_cap * 2 : 16;
    struct tpl_own *t = tpl_arena_alloc(&vm->arena, (size_t)cap * sizeof *t), *old = vm->own;
    if (!t) return NULL;
    memset(t, 0, (size_t)cap * sizeof *t);
    uint32_t oldcap = vm->own_cap;
    vm->own = t;
    vm->own_cap = cap;
    vm->own_n = 0;
    for (uint32_t i = 0; i < oldcap; i++)
        if (old[i].arr) {
            struct tpl_own *e = own_slot(vm, old[i].arr, true);
            e->hwm = old[i].hwm;
        }
    return own_slot(vm, arr, true);
}

enum { TPL_OWN_HEADER = UINT32_MAX, /* vm->own's mark of a state container's header (vm->undo) */
       TPL_OWN_HOST = UINT32_MAX - 1 /* and of a host object's list or dict (tpl_vm_mark_host_container) */ };

void tpl_vm_mark_host_container(tpl_vm *vm, const void *p)
{
    struct tpl_own *e = own_slot(vm, p, true);
    if (e) e->hwm = TPL_OWN_HOST;
    vm->host_containers = true;
}

static void name_hits_gone(tpl_vm *vm);

/* What the interpreter and the native code found in the state's dicts (vm->attr_hit, the native
 * memo) is gone: a dict of the state changed (its entries may have moved), now or when the render
 * ended and put it back; the next render finds them again (state_stamp). */
static void state_finds_gone(tpl_vm *vm)
{
    name_hits_gone(vm);
    memset(vm->native_memo, 0, sizeof vm->native_memo);
    memset(vm->native_kept, 0, sizeof vm->native_kept);
    vm->state_stamp++;
}

/* The state's containers this render changed are put back as they were. */
static void state_restore(tpl_vm *vm)
{
    for (uint32_t i = vm->undo_n; i-- > 0;) {
        struct tpl_undo *u = &vm->undo[i];
        if (u->map) *(tpl_map *)u->hdr = u->was.m;
        else *(tpl_list *)u->hdr = u->was.l;
    }
    vm->undo_n = 0;
    state_finds_gone(vm);
}

/* The container header p (a list, or a dict with map) may be changed by this render: one it made,
 * or the state's (a JSON state: changed for this render only, put back when it ends). Else (a
 * host's values, a constant of the program) a located error. */
static int own_header(tpl_vm *vm, void *p, bool map, const char *what)
{
    const char *kind = map ? "dict" : "list";
    struct tpl_own *e;
    if (vm->host_containers && (e = own_slot(vm, p, false)) && e->hwm == TPL_OWN_HOST)
        return tpl_vm_fail(vm, TPL_EK_RUNTIME, "unsupported: %s on a %s read from a Python object: tpl renders a copy "
                           "of it, so the object's %s would not change as Jinja2 changes it; copy it first (`|%s`)",
                           what, kind, kind, kind);
    if (tpl_arena_owns(&vm->arena, p)) return 0;
    e = own_slot(vm, p, false);
    if (e && e->hwm == TPL_OWN_HEADER) return 0;
    if (!vm->state_host && tpl_arena_owns(&vm->state_arena, p)) {
        if (vm->undo_n == vm->undo_cap) {
            uint32_t cap = vm->undo_cap ? vm->undo_cap * 2 : 8;
            struct tpl_undo *u = tpl_arena_alloc(&vm->arena, (size_t)cap * sizeof *u);
            if (!u) return tpl_vm_nomem(vm);
            if (vm->undo_n) memcpy(u, vm->undo, (size_t)vm->undo_n * sizeof *u);
            vm->undo = u;
            vm->undo_cap = cap;
        }
        if (!(e = own_slot(vm, p, true))) return tpl_vm_nomem(vm);
        e->hwm = TPL_OWN_HEADER;
        struct tpl_undo *u = &vm->undo[vm->undo_n++];
        u->hdr = p;
        u->map = map;
        if (map) u->was.m = *(tpl_map *)p;
        else u->was.l = *(tpl_list *)p;
        return 0;
    }
    if (vm->state_host && tpl_arena_owns(&vm->state_arena, p))
        return tpl_vm_fail(vm, TPL_EK_RUNTIME, "unsupported: %s on a %s the host passed in: tpl renders a copy of the "
                           "host's values, so the caller's %s would not change as Jinja2 changes it; copy it first (`|%s`)",
                           what, kind, kind, kind);
    return tpl_vm_fail(vm, TPL_EK_RUNTIME, "unsupported: %s on a %s the render did not make (a constant of the program, "
                       "which tpl shares between renders): copy it first (`|%s`)", what, kind, kind);
}

/* l's items in a new array of this render's with room for cap items. */
static int list_move(tpl_vm *vm, tpl_list *l, uint64_t cap)
{
    if (cap > TPL_RANGE_ITEMS_MAX) return tpl_vm_fail(vm, TPL_EK_LIMIT, "list too long (more than 10,000,000 items)");
    if (cap < 4) cap = 4;
    tpl_value *items = tpl_arena_alloc(&vm->arena, (size_t)cap * sizeof *items);
    struct tpl_own *e = items ? own_slot(vm, items, true) : NULL;
    if (!e) return tpl_vm_nomem(vm);
    if (l->len) memcpy(items, l->items, (size_t)l->len * sizeof *items);
    l->items = items;
    l->cap = (uint32_t)cap;
    e->hwm = l->len;
    return 0;
}

int tpl_vm_list_room(tpl_vm *vm, tpl_value v, uint32_t extra, const char *what)
{
    vm->changes++;
    tpl_list *l = v.u.list;
    struct tpl_own *e = l->items ? own_slot(vm, l->items, false) : NULL;
    if (!e && own_header(vm, l, false, what) < 0) return -1;
    uint64_t need = (uint64_t)l->len + extra;
    if (!e || l->len < e->hwm || need > l->cap) {
        uint64_t cap = (uint64_t)l->len * 2 > need ? (uint64_t)l->len * 2 : need;
        if (list_move(vm, l, cap) < 0) return -1;
        e = own_slot(vm, l->items, false);
    }
    e->hwm = (uint32_t)need;
    return 0;
}

int tpl_vm_list_fresh(tpl_vm *vm, tpl_value v, uint32_t extra, const char *what)
{
    vm->changes++;
    tpl_list *l = v.u.list;
    if (!(l->items && own_slot(vm, l->items, false)) && own_header(vm, l, false, what) < 0) return -1;
    return list_move(vm, l, (uint64_t)l->len + extra);
}

int tpl_vm_map_own(tpl_vm *vm, tpl_value v, const char *what)
{
    vm->changes++;
    tpl_map *m = v.u.map;
    if (m->e && own_slot(vm, m->e, false)) return 0;
    if (own_header(vm, m, true, what) < 0) return -1;
    tpl_map *c = tpl_map_new(&vm->arena, m->len < 4 ? 4 : m->len);
    if (!c) return tpl_vm_nomem(vm);
    for (uint32_t i = 0; i < m->len; i++)
        if (!tpl_map_append(&vm->arena, c, m->e[i].key, m->e[i].hash, m->e[i].val)) return tpl_vm_nomem(vm);
    m->e = c->e;
    m->cap = c->cap;
    m->idx = c->idx;
    m->idx_cap = c->idx_cap;
    if (m->e && !own_slot(vm, m->e, true)) return tpl_vm_nomem(vm);
    return 0;
}

/* A dict entry as the (key, value) tuple items() yields, in the render's arena. */
static int entry_pair(tpl_vm *vm, tpl_value key, tpl_value val, tpl_value *out) {
    tpl_list *pair = tpl_list_new(&vm->arena, 2);
    if (!pair) return tpl_vm_nomem(vm);
    pair->items[0] = key;
    pair->items[1] = val;
    pair->len = 2;
    *out = tpl_v_list(pair);
    out->flags = TPL_F_TUPLE;
    return 0;
}

/* l's items made from dict m's entries (the view's kind what), then m and the stamp: an int value, the
 * render's count of dict changes then, aux the dict's gen, len the room of the array (items past the
 * two tail slots), flags VIEW_KEPT once something may keep the array (tpl_vm_view_sync). A refill
 * writes into the view's own array when it has room and nothing kept it (no growth per read of a
 * view whose dict keeps changing); an items view keeps the (key, value) tuples that did not change. */
enum { VIEW_KEPT = 1, VIEW_EMPTY = 2 /* (not filled yet: tpl_vm_view_new) */ };
static int view_fill(tpl_vm *vm, tpl_list *l, tpl_map *m, int what, bool refill)
{
    tpl_value *items = NULL, *old = refill ? l->items : NULL;
    uint32_t room = m->len, oldn = refill ? l->len : 0;
    if (refill && !(old[oldn + 1].flags & VIEW_KEPT) && old[oldn + 1].len >= m->len) {
        items = old;
        room = old[oldn + 1].len;
    } else {
        if (refill && !(old[oldn + 1].flags & VIEW_EMPTY))
            room = m->len + m->len / 2; /* (a view read again after changes: room to grow; its first fill exact) */
        if (!(items = tpl_arena_alloc(&vm->arena, ((size_t)room + 2) * sizeof *items))) return tpl_vm_nomem(vm);
    }
    for (uint32_t i = 0; i < m->len; i++) {
        if (what == 0) {
            if (i < oldn && old[i].type == TPL_T_LIST && old[i].u.list->len == 2 &&
                !memcmp(&old[i].u.list->items[0], &m->e[i].key, sizeof(tpl_value)) &&
                !memcmp(&old[i].u.list->items[1], &m->e[i].val, sizeof(tpl_value))) {
                items[i] = old[i]; /* (the same entry: its tuple again) */
                continue;
            }
            if (entry_pair(vm, m->e[i].key, m->e[i].val, &items[i]) < 0) return -1;
        } else {
            items[i] = what == 1 ? m->e[i].key : m->e[i].val;
        }
    }
    items[m->len] = tpl_v_map(m);
    items[m->len + 1] = tpl_v_int((int64_t)vm->dict_changes);
    items[m->len + 1].aux = m->gen;
    items[m->len + 1].len = room;
    l->items = items;
    l->len = l->cap = m->len; /* (cap == len: a push copies first, never overwriting the dict) */
    return 0;
}

int tpl_vm_view_new(tpl_vm *vm, tpl_value dict, int what, tpl_value *out)
{
    /* (made empty and stale: filled at its first read, tpl_vm_view_sync; a view compared, printed,
     * measured or searched reads its dict and is never filled) */
    tpl_list *l = tpl_arena_alloc(&vm->arena, sizeof *l);
    tpl_value *tail = tpl_arena_alloc(&vm->arena, 2 * sizeof *tail);
    if (!l || !tail) return tpl_vm_nomem(vm);
    tail[0] = dict;
    tail[0].flags = 0;
    tail[1] = tpl_v_int(0);
    tail[1].flags = VIEW_EMPTY;
    l->items = tail;
    l->len = l->cap = 0;
    *out = tpl_v_list(l);
    out->aux = (uint16_t)(TPL_LAZY_DICT_ITEMS + what); /* dict_items, dict_keys, dict_values */
    out->flags = TPL_F_VIEW_DICT;
    return 0;
}

/* View v's items as its dict is now, for a reader that does not keep the array (a compare). */
static int view_peek(tpl_vm *vm, tpl_value v)
{
    if (!tpl_is_view(v)) return 0;
    tpl_list *l = v.u.list;
    tpl_value *stamp = &l->items[l->len + 1];
    uint64_t was = (uint64_t)stamp->u.i;
    tpl_map *m = l->items[l->len].u.map;
    if (stamp->flags & VIEW_EMPTY) return view_fill(vm, l, m, v.aux - TPL_LAZY_DICT_ITEMS, true);
    if (was == vm->dict_changes) return 0;
    if (m->gen == stamp->aux && vm->dict_changes - was < 0xFFFF) { /* (its gen would have wrapped no sooner) */
        stamp->u.i = (int64_t)vm->dict_changes;
        return 0;
    }
    return view_fill(vm, l, m, v.aux - TPL_LAZY_DICT_ITEMS, true);
}

int tpl_vm_view_sync(tpl_vm *vm, tpl_value v)
{
    if (!tpl_is_view(v)) return 0;
    if (view_peek(vm, v) < 0) return -1;
    v.u.list->items[v.u.list->len + 1].flags |= VIEW_KEPT; /* (the caller may keep the array) */
    return 0;
}

void tpl_vm_map_owned(tpl_vm *vm, tpl_value v)
{
    v.u.map->gen++;
    vm->dict_changes++;
    if (v.u.map->e) (void)own_slot(vm, v.u.map->e, true); /* (out of memory: the next change copies) */
    const struct tpl_own *h = own_slot(vm, v.u.map, false);
    if (h && h->hwm == TPL_OWN_HEADER) state_finds_gone(vm); /* (a dict of the state: its entries moved) */
}
bool tpl_vm_debug_undefined(const tpl_vm *vm) { return vm->p && vm->p->opts.debug_undefined && !vm->p->opts.strict; }
bool tpl_vm_chainable_undefined(const tpl_vm *vm)
{
    return vm->p && vm->p->opts.chainable_undefined && !vm->p->opts.strict;
}
bool tpl_vm_hf(const tpl_vm *vm) { return vm->p && vm->p->opts.hf; }
bool tpl_vm_autoescape(const tpl_vm *vm) { return vm->p && vm->p->opts.autoescape && vm->p->opts.syntax == TPL_SYNTAX_JINJA; }
int tpl_vm_syntax(const tpl_vm *vm) { return vm->p ? (int)vm->p->opts.syntax : 0; }
const char *tpl_vm_bound_lang(const tpl_vm *vm) { return vm->p ? vm->p->opts.lang : NULL; }

int tpl_vm_nomem(tpl_vm *vm)
{
    if (vm->fuel == 0) /* a walk over a value ran out of fuel (tpl_fuel_charge) */
        return tpl_vm_limit(vm, TPL_EK_FUEL, vm->limits.fuel);
    if (vm->arena.over_limit) return tpl_vm_limit(vm, TPL_EK_MEMORY_LIMIT, vm->limits.max_memory); /* (the arena's is what the state left) */
    return tpl_vm_fail(vm, TPL_EK_NOMEM, "%s", tpl_error_kind_format(TPL_EK_NOMEM));
}
static int oom(tpl_vm *vm) { return tpl_vm_nomem(vm); }

/* A number of tpl's own (int, float, bool, big int) or of the host's (tpl_host_class.type_of). */
static bool any_number(tpl_value v)
{
    return v.type == TPL_T_INT || v.type == TPL_T_FLOAT || v.type == TPL_T_BOOL || v.type == TPL_T_BIGINT ||
           (tpl_hobj_numeric(v) & TPL_HOST_NUMBER);
}

/* The first strict undefined (not an inline if's) in v, depth first, or NULL. */
static const tpl_value *first_strict_undef(const tpl_value *v, int depth)
{
    if (v->type == TPL_T_UNDEF) return v->aux != TPL_UNDEF_COND ? v : NULL;
    if (depth > TPL_NEST_MAX) return NULL;
    if (v->type == TPL_T_LIST && !(v->flags & TPL_F_RANGE_BIG))
        for (uint32_t i = 0; i < v->u.list->len; i++) {
            const tpl_value *u = first_strict_undef(&v->u.list->items[i], depth + 1);
            if (u) return u;
        }
    if (v->type == TPL_T_MAP)
        for (uint32_t i = 0; i < v->u.map->len; i++) {
            const tpl_value *u = first_strict_undef(&v->u.map->e[i].val, depth + 1);
            if (u) return u;
        }
    return NULL;
}

/* == of two containers met a strict undefined among their items: Jinja2's StrictUndefined.__eq__
 * raises (the left operand's first, as Python tries x.__eq__ before the reflected one). */
static int strict_item_error(tpl_vm *vm, tpl_value a, tpl_value b)
{
    const tpl_value *u = first_strict_undef(&a, 0);
    if (!u) u = first_strict_undef(&b, 0);
    if (!u) return tpl_vm_error(vm, TPL_ERR_TYPE, "undefined value");
    return tpl_stdlib.undefined_error(vm, *u);
}

/* Python's == of a and b where a or b is a host object (tpl_eq_host.eq, what the equality of
 * containers asks about their items): the same object is equal (Python's identity shortcut of
 * item comparisons); a host number with a number is the host's arithmetic "==" (Decimal(1) == 1);
 * else the host object's own == (tpl_host_class.eq: __eq__); a host without those equals only
 * itself. 1 equal, 0 not, TPL_EQ_HOST_ERROR with the host's error set. */
static int host_eq(void *ctx, tpl_value a, tpl_value b)
{
    tpl_vm *vm = ctx;
    bool eq = false;
    if (a.type == TPL_T_HOST && b.type == TPL_T_HOST && a.u.p == b.u.p) return 1;
    if (((tpl_hobj_numeric(a) | tpl_hobj_numeric(b)) & TPL_HOST_NUMBER) && any_number(a) && any_number(b)) {
        int h = tpl_hobj_compare(vm, "==", a, b, &eq);
        if (h < 0) return TPL_EQ_HOST_ERROR;
        if (h == 0) return eq;
    }
    int rc = tpl_hobj_eq(vm, a.type == TPL_T_HOST ? a : b, a.type == TPL_T_HOST ? b : a, &eq);
    if (rc < 0) return TPL_EQ_HOST_ERROR;
    return rc == 0 && eq;
}

int tpl_vm_key_of(tpl_vm *vm, tpl_value v, tpl_value *key)
{
    *key = v;
    if (v.type != TPL_T_HOST || !(tpl_hobj_numeric(v) & TPL_HOST_NUMBER)) return 0;
    tpl_value k;
    int rc = tpl_hobj_key(vm, v, &k);
    if (rc < 0) return -1;
    if (rc == 0 && (k.type == TPL_T_INT || k.type == TPL_T_FLOAT || k.type == TPL_T_BIGINT || k.type == TPL_T_BOOL))
        *key = k;
    return 0;
}

static bool is_tuple(tpl_value v) { return v.type == TPL_T_LIST && (v.flags & TPL_F_TUPLE); }
static bool host_key(tpl_value v) { return v.type == TPL_T_HOST || (is_tuple(v) && tpl_value_has_host(v)); }

/* tpl_eq_host.find, and tpl_vm_map_get after m's own lookup missed: Python finds a dict key by
 * its hash, then == (identity first). tpl hashes a host object by its identity, so when key is
 * a host object or a tuple holding one, or m has such keys, the host is asked (tpl_hobj_key_equal:
 * Python's hash and ==) about the pairs tpl's lookup could not decide. Shortcuts: a host number
 * is looked up again as the int or float it equals (tpl_vm_key_of: hash(Decimal(1)) == hash(1)),
 * and else can equal only a host key; two values of tpl equal only as tpl says; a tuple only a
 * tuple of its length. (A key the host cannot hash matches nothing here: where Python raises,
 * the caller asked tpl_vm_check_hashable first; Jinja2's d[key] is then undefined.) 1 with *at set, 0 not found,
 * TPL_EQ_HOST_ERROR. */
static int host_find(void *ctx, const tpl_map *m, tpl_value key, uint32_t *at)
{
    tpl_vm *vm = ctx;
    bool num = any_number(key);
    bool all = host_key(key); /* compare with every key of m, not only its host keys */
    if (key.type == TPL_T_HOST && num) {
        tpl_value k;
        if (tpl_vm_key_of(vm, key, &k) < 0) return TPL_EQ_HOST_ERROR;
        const tpl_value *v = k.type != TPL_T_HOST ? tpl_map_get(m, k) : NULL;
        if (v) {
            *at = (uint32_t)((const tpl_entry *)(const void *)((const char *)v - offsetof(tpl_entry, val)) - m->e);
            return 1;
        }
        all = false;
    }
    if (!all && !m->host_keys) return 0;
    if (all && m->len > 1) { /* the host's own lookup: one call, its hash of key taken once */
        int64_t i;
        int r = tpl_hobj_key_find(vm, m, key, &i);
        if (r < 0) return TPL_EQ_HOST_ERROR;
        if (r == 0) {
            if (i < 0) return 0;
            *at = (uint32_t)i;
            return 1;
        }
    }
    for (uint32_t i = 0; i < m->len; i++) {
        tpl_value k = m->e[i].key;
        if (!all && !host_key(k)) continue;
        if (k.type != TPL_T_HOST && key.type != TPL_T_HOST &&
            (is_tuple(k) != is_tuple(key) || (is_tuple(k) && k.u.list->len != key.u.list->len)))
            continue;
        if (key.type != TPL_T_HOST && !is_tuple(key) && !num && (tpl_hobj_numeric(k) & TPL_HOST_NUMBER))
            continue; /* (a number equals only a number) */
        if (k.type == TPL_T_HOST && key.type == TPL_T_HOST && k.u.p == key.u.p) { *at = i; return 1; }
        bool eq = false;
        int r = tpl_hobj_key_equal(vm, k, key, &eq);
        if (r < 0) return TPL_EQ_HOST_ERROR;
        if (r == 0 && eq) { *at = i; return 1; }
    }
    return 0;
}

const tpl_eq_host *tpl_vm_eq_host(tpl_vm *vm) { return &vm->eq_host; }

int tpl_vm_map_get_host(tpl_vm *vm, const tpl_map *m, tpl_value key, tpl_value **out)
{
    uint32_t at;
    *out = NULL;
    if (key.type != TPL_T_HOST && !m->host_keys && !(is_tuple(key) && tpl_value_has_host(key))) return 0;
    int r = host_find(vm, m, key, &at);
    if (r < 0) return -1;
    *out = r ? &m->e[at].val : NULL;
    return 0;
}

int tpl_vm_map_put(tpl_vm *vm, tpl_map *m, tpl_value key, tpl_value val)
{
    tpl_value *hit;
    if (tpl_vm_map_get(vm, m, key, &hit) < 0) return -1;
    if (hit) { *hit = val; return 0; } /* (Python keeps the first key object) */
    return tpl_map_set(&vm->arena, m, key, val) ? 0 : oom(vm);
}

int tpl_vm_equal(tpl_vm *vm, tpl_value a, tpl_value b, bool *eq)
{
    if (__builtin_expect(a.type == TPL_T_HOST || b.type == TPL_T_HOST, 0)) {
        /* the host's own equality first: Python's a == b (__eq__, reflected, which may raise), its
         * result's truth (no identity shortcut: Decimal('NaN') == itself is False) */
        tpl_value v;
        int rc = tpl_hobj_richcompare(vm, "==", a, b, &v);
        if (rc == 0) {
            int t = v.type == TPL_T_BOOL ? v.u.i != 0 : tpl_truthy_py(vm, v);
            if (t < 0) return -1;
            *eq = t;
            return 0;
        }
        if (rc < 0) return -1;
        rc = tpl_hobj_eq(vm, a.type == TPL_T_HOST ? a : b, a.type == TPL_T_HOST ? b : a, eq);
        if (rc <= 0) return rc;
    }
    if (__builtin_expect(a.type == TPL_T_HOST || b.type == TPL_T_HOST, 0) &&
        ((tpl_hobj_numeric(a) | tpl_hobj_numeric(b)) & TPL_HOST_NUMBER) && any_number(a) && any_number(b) &&
        !(a.type == TPL_T_HOST && b.type == TPL_T_HOST && a.u.p == b.u.p)) { /* (a Decimal == 1: no silent False) */
        int h = tpl_hobj_compare(vm, "==", a, b, eq);
        if (h <= 0) return h;
        return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported: '==' between '%s' and '%s' (tpl does not compare the "
                            "host's own number types: convert to int or float first)", tpl_type_name(vm, a),
                            tpl_type_name(vm, b));
    }
    int r = tpl_equal_host_metered(a, b, 0, tpl_vm_strict(vm), &vm->fuel, tpl_vm_eq_host(vm));
    if (__builtin_expect(r < 0, 0)) {
        if (r == TPL_EQ_HOST_ERROR) return -1;
        if (r == -3) return strict_item_error(vm, a, b);
        if (r == -2) return tpl_vm_nest_error(vm, "in comparison");
        return tpl_vm_nomem(vm);
    }
    *eq = r == 1;
    return 0;
}

int tpl_vm_item_equal(tpl_vm *vm, tpl_value a, tpl_value b, bool *eq)
{
    /* (a host object, Decimal(1) in [1], o in [1]: host_eq, reached through the equality) */
    /* (live views: value.c compares them by their dicts, as they are now) */
    int r = tpl_equal_host_metered(a, b, 1, tpl_vm_strict(vm), &vm->fuel, tpl_vm_eq_host(vm));
    if (__builtin_expect(r < 0, 0)) {
        if (r == TPL_EQ_HOST_ERROR) return -1;
        if (r == -3) return strict_item_error(vm, a, b);
        if (r == -2) return tpl_vm_nest_error(vm, "in comparison");
        return tpl_vm_nomem(vm);
    }
    *eq = r == 1;
    return 0;
}

static tpl_value undef_named(const char *s, size_t n, int kind, int container)
{
    tpl_value v = { 0 };
    v.type = TPL_T_UNDEF;
    v.aux = (uint16_t)kind;
    v.flags = (uint8_t)container;
    v.u.s = s;
    v.len = (uint32_t)n;
    return v;
}

static int map_miss(tpl_vm *vm, tpl_value obj, const tpl_name *nm, tpl_value *out);

/* Jinja2's `missing` in a slot (MISSING_SLOT): an undefined value known by its text's address,
 * which only MISSING_STR and MISSING_FAIL look at (a macro's read of a loop's or with's
 * parameter after the block ended; never pushed otherwise) */
static const char missing_mark[] = "missing";
static bool is_missing_mark(tpl_value v) { return v.type == TPL_T_UNDEF && v.u.s == missing_mark; }

/* ------------------------------------------------------------------ truthiness */

int tpl_truthy_py(tpl_vm *vm, tpl_value v)
{
    switch (v.type) {
    case TPL_T_UNDEF:
        if (tpl_vm_strict_undef(vm, v)) return tpl_stdlib.undefined_error(vm, v);
        return 0;
    case TPL_T_NONE: return 0;
    case TPL_T_BOOL: case TPL_T_INT: return v.u.i != 0;
    case TPL_T_BIGINT: return 1; /* never 0 (normalised) */
    case TPL_T_RATIONAL: return !tpl_rat_zero(v); /* (Python's Fraction; ERB's truth is its own) */
    case TPL_T_FLOAT: return v.u.f != 0.0;
    case TPL_T_STR: return v.len != 0;
    case TPL_T_LIST: /* a Python iterator is always true, and so is a range held without its items */
        if (tpl_is_view(v)) return tpl_view_dict(v)->len != 0; /* (live) */
        return v.u.list->len != 0 || tpl_is_iter(v) || (v.flags & TPL_F_RANGE_BIG);
    case TPL_T_MAP: return v.u.map->len != 0;
    case TPL_T_HOST: return tpl_hobj_truth(vm, v);
    default: return 1;
    }
}

/* ------------------------------------------------------------------ output */

/* A streaming render (tpl_render_set_output): the output so far handed to the write callback
 * and the buffer emptied. 0, or -1 (the output limit passed, or the callback refused it). */
int tpl_vm_out_flush(tpl_vm *vm)
{
    if (vm->out_flushed + vm->out_len > vm->limits.max_output)
        return tpl_vm_limit(vm, TPL_EK_OUTPUT_LIMIT, vm->limits.max_output);
    if (vm->out_len && vm->out_write(vm->out_data, vm->out, vm->out_len) != 0)
        return tpl_vm_fail(vm, TPL_EK_IO, "the output was refused by the write callback");
    vm->out_flushed += vm->out_len;
    vm->out_len = 0;
    return 0;
}

int tpl_vm_out_discard(tpl_vm *vm)
{
    if (vm->ncaptures || vm->out_flushed)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: a comment after the last `end' hides ERB's "
                            "`; _erbout' and its if ran no branch (ERB#result is nil: no output), where tpl no longer "
                            "holds the output");
    vm->out_len = 0;
    return 0;
}

/* Grows the output buffer for n more bytes (and the final NUL), then appends them; a streaming
 * render outside any capture hands the full buffer to its write callback instead of growing it. */
static int out_put_slow(tpl_vm *vm, const char *s, size_t n)
{
    if (n == 0) return 0;
    if (vm->out_stream && vm->ncaptures == 0 && vm->out_len && vm->out_len + n + 1 > vm->out_cap &&
        tpl_vm_out_flush(vm) < 0)
        return -1;
    if (vm->out_len + n + 1 > vm->out_cap) {
        if (vm->out_flushed + vm->out_len + n > vm->limits.max_output)
            return tpl_vm_limit(vm, TPL_EK_OUTPUT_LIMIT, vm->limits.max_output);
        size_t nc = vm->out_cap ? vm->out_cap * 2 : 4096;
        while (nc < vm->out_len + n + 1) nc *= 2;
        /* the capacity stays within the limit (+ the NUL), so the inline appends, which check
         * only the capacity, cannot pass it either */
        if (vm->limits.max_output < SIZE_MAX - 1 && nc > vm->limits.max_output + 1) nc = (size_t)vm->limits.max_output + 1;
        char *no = tpl_vm_mem_realloc(vm, vm->out, vm->out_cap, nc);
        if (!no) return tpl_vm_nomem(vm);
        vm->out = no;
        vm->out_cap = nc;
    }
    if (n) memcpy(vm->out + vm->out_len, s, n);
    vm->out_len += n;
    return 0;
}

/* *d = *s for a value the next instructions read (a loop variable's slot, a pushed operand): two
 * 8-byte moves (tpl_native_set), not GCC's one 16-byte move, whose store this machine's CPU does
 * not forward to an 8-byte load of its second half (the map or string pointer the next
 * instruction reads), so that read would wait for the store to reach the cache (perf39's finding
 * for the native views). */
static inline __attribute__((always_inline)) void val_set(tpl_value *d, const tpl_value *s)
{
    tpl_native_set((tpl_nvalue *)(void *)d, (const tpl_nvalue *)(const void *)s);
}

/* Copies n bytes from s to d (n may be 0 with s NULL): tpl_native_copy, the one inline copy the VM
 * and the native views share (up to 32 bytes as overlapping loads and stores, more by memcpy). */
static inline __attribute__((always_inline)) void out_copy(char *d, const char *s, size_t n)
{
    tpl_native_copy(d, s, n);
}

/* Appends n bytes to the output. The buffer is reused across renders, so after the first render
 * of a program the fast path (it fits) is the only one taken. */
static inline __attribute__((always_inline)) int out_put(tpl_vm *vm, const char *s, size_t n)
{
    /* the length read once: the copy's byte stores could alias vm->out_len for the compiler */
    size_t len = vm->out_len;
    if (__builtin_expect(len + n < vm->out_cap, 1)) {
        out_copy(vm->out + len, s, n);
        vm->out_len = len + n;
        return 0;
    }
    return out_put_slow(vm, s, n);
}

/* Appends n1 bytes at s1 and n2 at s2 when both fit the output as it is (true), else nothing
 * (false: the caller appends them with out_put). */
static inline __attribute__((always_inline)) bool out_put2(tpl_vm *vm, const char *s1, size_t n1, const char *s2,
                                                           size_t n2)
{
    size_t len = vm->out_len;
    if (__builtin_expect(len + n1 + n2 < vm->out_cap, 1)) {
        char *o = vm->out + len;
        out_copy(o, s1, n1);
        out_copy(o + n1, s2, n2);
        vm->out_len = len + n1 + n2;
        return true;
    }
    return false;
}

/* Writes the decimal digits of i right-aligned ending at end; returns the first byte. */
static char *format_int(char *end, int64_t i)
{
    uint64_t u = i < 0 ? 0 - (uint64_t)i : (uint64_t)i;
    char *p = end;
    do { *--p = (char)('0' + u % 10); u /= 10; } while (u);
    if (i < 0) *--p = '-';
    return p;
}

/* The call depth limit (--max-depth) or the operand stack's end: in ERB Ruby's SystemStackError, as Ruby's own
 * stack ends there, with tpl's limit named. */
static int depth_error(tpl_vm *vm, bool stack)
{
    if (vm->p && vm->p->opts.syntax == TPL_SYNTAX_ERB) {
        if (stack) return tpl_vm_fail(vm, TPL_EK_DEPTH, "stack level too deep (SystemStackError) (tpl's operand stack is full)");
        return tpl_vm_fail(vm, TPL_EK_DEPTH, "stack level too deep (SystemStackError) (tpl's maximum call depth, %u)", vm->limits.max_depth);
    }
    if (stack) return tpl_vm_fail(vm, TPL_EK_DEPTH, "maximum call depth reached (out of stack)");
    return tpl_vm_fail(vm, TPL_EK_DEPTH, "maximum call depth (%u) reached", vm->limits.max_depth);
}

/* Python's str() of an iterator or generator is its memory address ("<generator object
 * sync_do_map at 0x7f...>"): no two runs agree, so tpl refuses to print one. */
int tpl_vm_nest_error(tpl_vm *vm, const char *while_)
{
    if (vm->p && vm->p->opts.syntax == TPL_SYNTAX_ERB) /* Ruby recurses until its stack ends */
        return tpl_vm_fail(vm, TPL_EK_DEPTH, "stack level too deep (SystemStackError)");
    return tpl_vm_fail(vm, TPL_EK_DEPTH, "maximum recursion depth exceeded %s (containers nested more than %d deep)",
                       while_, (int)TPL_NEST_MAX);
}

int tpl_vm_sb_error(tpl_vm *vm, const tpl_sb *b, const char *while_)
{
    if (b->address == tpl_nest_limit) return tpl_vm_nest_error(vm, while_);
    if (b->address) return tpl_print_address_error(vm, b->address); /* marked: failed too */
    return tpl_vm_nomem(vm);
}

int tpl_print_address_error(tpl_vm *vm, const char *what)
{
    if (what == tpl_nest_limit) return tpl_vm_nest_error(vm, "while getting the repr of an object");
    if (what == tpl_big_str_limit) return tpl_big_str_error(vm);
    if (vm->p && vm->p->opts.syntax == TPL_SYNTAX_ERB)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: inspect of an %s (Ruby prints its address: #<... 0x...>)", what);
    return tpl_vm_error(vm, TPL_ERR_TYPE, "cannot print a value holding a %s: Python prints its memory address (<... at 0x...>)", what);
}

/* LoopContext's repr shows its length, which drains the iterator the loop pulls from. */
/* Room in a loop's taken items d for n more (at least doubling; the arena's). */
static int loop_items_reserve(tpl_vm *vm, tpl_list *d, uint32_t n)
{
    uint64_t cap = (uint64_t)d->len + n;
    if (cap < (uint64_t)d->cap * 2 + 4) cap = (uint64_t)d->cap * 2 + 4;
    if (cap >= UINT32_MAX / 2) return tpl_vm_error(vm, TPL_ERR_LIMIT, "too many items");
    tpl_value *it = tpl_arena_alloc(&vm->arena, (size_t)cap * sizeof *it);
    if (!it) return oom(vm);
    if (d->len) memcpy(it, d->items, d->len * sizeof *it);
    d->items = it;
    d->cap = (uint32_t)cap;
    return 0;
}

static int loop_pull(tpl_vm *vm, tpl_loop *l, uint32_t want);
static int loop_drain(tpl_vm *vm, tpl_value v)
{
    return v.u.loop->src ? loop_pull(vm, v.u.loop, UINT32_MAX) : 0;
}

int tpl_print_iter_error(tpl_vm *vm, tpl_value v)
{
    return tpl_vm_error(vm, TPL_ERR_TYPE, "cannot print a %s: Python prints its memory address (<%s object at 0x...>); "
                        "convert it with |list or |join first", tpl_lazy_name(v.aux), tpl_lazy_name(v.aux));
}

/* Environment(undefined=DebugUndefined) (tpl_options.debug_undefined) */
static bool debug_undefined(const tpl_vm *vm, tpl_value v)
{
    return v.aux != TPL_UNDEF_COND && tpl_vm_debug_undefined(vm);
}

/* Environment(undefined=ChainableUndefined) (tpl_options.chainable_undefined) */
static bool chainable_undefined(const tpl_vm *vm) { return tpl_vm_chainable_undefined(vm); }

/* Appends Python str(v) (undefined: strict error, lenient nothing). */
static int print_py(tpl_vm *vm, tpl_value v)
{
    switch (v.type) {
    case TPL_T_STR: return out_put(vm, v.u.s, v.len);
    case TPL_T_UNDEF:
        if (tpl_vm_strict_undef(vm, v)) return tpl_stdlib.undefined_error(vm, v);
        if (debug_undefined(vm, v)) {
            tpl_sb b;
            tpl_sb_init(&b, &vm->arena);
            tpl_stdlib.undefined_debug_str(&b, v);
            if (b.failed) return tpl_vm_sb_error(vm, &b, "while getting the repr of an object");
            return out_put(vm, b.p, b.len);
        }
        return 0;
    case TPL_T_INT: {
        char buf[24];
        char *s = format_int(buf + sizeof buf, v.u.i);
        return out_put(vm, s, (size_t)(buf + sizeof buf - s));
    }
    default: {
        if (tpl_is_iter(v)) return tpl_print_iter_error(vm, v);
        if (v.type == TPL_T_LOOP && loop_drain(vm, v) < 0) return -1;
        tpl_sb b;
        tpl_sb_init(&b, &vm->arena);
        tpl_py_str(&b, v);
        if (b.failed || b.address) return tpl_vm_sb_error(vm, &b, "while getting the repr of an object");
        return b.len ? out_put(vm, b.p, b.len) : 0; /* empty: b.p may be NULL */
    }
    }
}

/* Python str() as a value (strings pass through). */
static int to_str_py(tpl_vm *vm, tpl_value v, tpl_value *out)
{
    if (v.type == TPL_T_STR) { *out = v; return 0; }
    if (tpl_vm_strict_undef(vm, v)) return tpl_stdlib.undefined_error(vm, v);
    if (tpl_is_iter(v)) return tpl_print_iter_error(vm, v);
    if (v.type == TPL_T_LOOP && loop_drain(vm, v) < 0) return -1;
    tpl_sb b;
    tpl_sb_init(&b, &vm->arena);
    if (v.type == TPL_T_UNDEF && debug_undefined(vm, v)) tpl_stdlib.undefined_debug_str(&b, v);
    else tpl_py_str(&b, v);
    if (b.failed || b.address) return tpl_vm_sb_error(vm, &b, "while getting the repr of an object");
    *out = tpl_sb_value(&b);
    return 0;
}

/* Python/Ruby tidy: rstrip every line, runs of 3+ newlines become 2, strip both ends. */
static int tidy(tpl_vm *vm, bool ruby)
{
    char *s = vm->out;
    size_t n = vm->out_len, w = 0, i = 0;
    char *o = tpl_arena_alloc(&vm->arena, n + 1);
    if (!o) return oom(vm);
    /* split into lines */
    while (i < n) {
        size_t b = i, e, next;
        if (ruby) {
            const char *nl = memchr(s + i, '\n', n - i);
            e = nl ? (size_t)(nl - s) : n;
            next = nl ? e + 1 : n;
        } else {
            e = i;
            next = n;
            while (e < n) {
                size_t k = e;
                uint32_t cp = tpl_utf8_next(s, n, &k);
                if (cp == '\n' || cp == '\r' || cp == 0x0b || cp == 0x0c || (cp >= 0x1c && cp <= 0x1e) ||
                    cp == 0x85 || cp == 0x2028 || cp == 0x2029) {
                    next = k;
                    if (cp == '\r' && k < n && s[k] == '\n') next = k + 1;
                    break;
                }
                e = k;
            }
        }
        /* rstrip [b, e) */
        if (ruby) {
            while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r' || s[e - 1] == '\n' ||
                             s[e - 1] == '\f' || s[e - 1] == '\v' || s[e - 1] == 0)) e--;
        } else {
            tpl_value ln = tpl_py_strip(tpl_v_str(s + b, e - b), 2, NULL, 0);
            e = b + ln.len;
        }
        memcpy(o + w, s + b, e - b);
        w += e - b;
        if (next < n || (ruby && next == n && next > e && s[n - 1] == '\n')) o[w++] = '\n';
        i = next;
    }
    /* squeeze \n{3,} to \n\n */
    size_t r = 0, k = 0;
    while (r < w) {
        if (o[r] == '\n') {
            size_t run = 0;
            while (r < w && o[r] == '\n') { run++; r++; }
            if (run > 2) run = 2;
            while (run--) o[k++] = '\n';
        } else {
            o[k++] = o[r++];
        }
    }
    tpl_value res;
    if (ruby) {
        size_t b = 0, e = k;
        while (b < e && strchr(" \t\r\n\f\v", o[b]) && o[b]) b++;
        while (e > b && (strchr(" \t\r\n\f\v", o[e - 1]) || o[e - 1] == 0)) e--;
        res = tpl_v_str(o + b, e - b);
    } else {
        res = tpl_py_strip(tpl_v_str(o, k), 3, NULL, 0);
    }
    memmove(vm->out, res.u.s, res.len);
    vm->out_len = res.len;
    return 0;
}

/* ------------------------------------------------------------------ attribute and item access */

static int bound_method(tpl_vm *vm, tpl_value self, int id, tpl_value *out)
{
    tpl_bound *b = tpl_arena_alloc(&vm->arena, sizeof *b);
    if (!b) return oom(vm);
    b->self = self;
    b->method = (uint16_t)id;
    tpl_value v = { 0 };
    v.type = TPL_T_FUNC;
    v.u.bound = b;
    *out = v;
    return 0;
}

/* An attribute read from an object's own dict: a method bound to that object (a cycler()'s next,
 * reset) is a new bound-method object at every access, as Python's (`c.next is sameas c.next` is
 * false; == compares the receiver and the function). */
static inline int fresh_own_method(tpl_vm *vm, tpl_value obj, tpl_value *v)
{
    if (__builtin_expect(v->type == TPL_T_FUNC, 0) && v->u.p && v->aux < TPL_FN_ALIAS && v->u.bound->self.type == TPL_T_MAP &&
        v->u.bound->self.u.map == obj.u.map) {
        tpl_bound *b = tpl_arena_alloc(&vm->arena, sizeof *b);
        if (!b) return oom(vm);
        *b = *v->u.bound;
        v->u.bound = b;
    }
    return 0;
}

static int method_kind(tpl_value v)
{
    switch (v.type) {
    case TPL_T_STR: return TPL_BK_STR;
    case TPL_T_MAP: return TPL_BK_MAP;
    /* list, tuple and range have index() and count(); iterators and dict views have neither */
    case TPL_T_LIST: return v.aux == TPL_LAZY_NONE || v.aux == TPL_LAZY_RANGE ? TPL_BK_LIST : -1;
    default: return -1;
    }
}

/* Whether builtin method `id` is markupsafe.Markup's own (unescape, striptags, __html__,
 * escape): builtins.def names its receiver `markup`; a plain str has no such attribute. */
static bool markup_only(int id)
{
    const tpl_builtin_info *bi = tpl_lib_builtin(id);
    return bi->kind == TPL_BK_STR && bi->params[0] == 'm';
}

/* The method id found for self, or -1: none for Markup's own methods unless the str is markup;
 * of the list kind, copy() is list.copy, which a tuple and a range do not have (Python). */
static int method_gate(tpl_value self, int id)
{
    if (id >= 0 && self.type == TPL_T_LIST) {
        const tpl_builtin_info *bi = tpl_lib_builtin(id); /* _asdict(): a groupby result's only */
        if (bi->namelen == 7 && bi->kind == TPL_BK_LIST && memcmp(bi->name, "_asdict", 7) == 0)
            return (self.flags & TPL_F_GROUP) && self.u.list->len == 2 ? id : -1;
    }
    if (id >= 0 && self.type == TPL_T_LIST && ((self.flags & TPL_F_TUPLE) || self.aux != TPL_LAZY_NONE)) {
        const tpl_builtin_info *bi = tpl_lib_builtin(id); /* a tuple has index and count, no copy or
                                                            * mutating method */
        return bi->kind == TPL_BK_LIST && strcmp(bi->name, "index") != 0 && strcmp(bi->name, "count") != 0 ? -1 : id;
    }
    return id >= 0 && self.type == TPL_T_STR && !(self.flags & TPL_F_SAFE) && markup_only(id) ? -1 : id;
}

/* Whether the n bytes at a and b (a map key and a name, n >= 1) are equal: tpl_native_eq with
 * the lengths names have most (4 to 8 bytes) tested first. */
static inline __attribute__((always_inline)) bool key_bytes_eq(const char *a, const char *b, uint32_t n)
{
    if (__builtin_expect(n - 4u <= 4u, 1)) {
        uint32_t a0, b0, a1, b1;
        memcpy(&a0, a, 4); memcpy(&b0, b, 4); memcpy(&a1, a + n - 4, 4); memcpy(&b1, b + n - 4, 4);
        return ((a0 ^ b0) | (a1 ^ b1)) == 0;
    }
    return tpl_native_eq(a, b, n);
}

/* The entry of map m whose key is the string of name nm, or NULL: tpl_map_probe_str, first trying
 * the entry this name was last found at (vm->key_hint). A template reads the same few names from
 * maps of one shape (the state, each item of a list of records), so the guess is usually right and
 * a lookup costs one comparison instead of a scan. Keys are unique, so the entry found is the one
 * the scan would find. */
static inline __attribute__((always_inline)) tpl_value *map_find_name(tpl_vm *vm, const tpl_map *m, const tpl_name *nm)
{
    if (__builtin_expect(m->eql, 0)) {
        /* a Ruby Hash: :k finds the Symbol, "k" the String (eql?); a Hash copied from the state's reads
         * :k as "k" (the reference's StateHash#[]) */
        unsigned sym = (nm->s.flags & TPL_F_SYMBOL) && !m->rb_state ? TPL_F_SYMBOL : 0;
        return tpl_map_probe_rb(m, nm->s.u.s, nm->s.len, nm->hash, sym);
    }
    uint32_t *h = &vm->key_hint[((uintptr_t)nm >> 3) % (sizeof vm->key_hint / sizeof vm->key_hint[0])];
    uint32_t i = *h;
    if (__builtin_expect(i < m->len, 1)) {
        tpl_entry *e = &m->e[i];
        /* (no hash compare: the bytes decide, and the guess is usually right.) The key's type,
         * flags, aux and length as one 8-byte compare with the name's: a string of the name's
         * flags (a name has none but SYMBOL: .tplb's check), so never a Ruby class or Regexp key,
         * which is no String of its name (Hash[Array]'s entry is not h["Array"]); a key of other
         * flags (a Markup key) is left to the probe, which finds it as before */
        uint64_t kh, nh;
        memcpy(&kh, &e->key, sizeof kh);
        memcpy(&nh, &nm->s, sizeof nh);
        if (kh == nh && key_bytes_eq(e->key.u.s, nm->s.u.s, nm->s.len)) return &e->val;
    }
    tpl_value *hit = tpl_map_probe_str(m, nm->s.u.s, nm->s.len, nm->hash);
    if (hit) *h = (uint32_t)((const tpl_entry *)(const void *)((const char *)hit - offsetof(tpl_entry, val)) - m->e);
    return hit;
}

/* The builtin method `nm` names for a receiver of method kind `kind` (-1: none), from the ids
 * the compiler resolved (no string search at run time). */
static int name_method(const tpl_name *nm, int kind)
{
    if (kind < 0) return -1;
    return nm->resolved ? nm->bk[kind - TPL_BK_STR] : tpl_stdlib.find((tpl_builtin_kind)kind, nm->s.u.s, nm->s.len);
}

/* A loop over a Jinja2 iterator (LoopContext over a generator) pulls its items one at a time,
 * so the loop body sees the iterator's rest (`{% for x in g %}{{ g|list }}` takes what the loop
 * has not): moves items from l->src to l->items until l->items holds `want` or src is empty.
 * length and revindex drain the iterator, last and nextitem peek one item ahead, as Jinja2's. */
static int pend_fill(tpl_vm *vm, tpl_pending *p, uint32_t want);

/* Since when dict m may hold a deleted entry in CPython's table (a dict_del_n), UINT64_MAX: it does not. */
static uint64_t dict_hole_since(const tpl_vm *vm, const tpl_map *m)
{
    if (vm->dict_hole_all_gen == vm->gen && vm->gen) return 0;
    for (uint32_t i = 0; i < vm->dict_hole_n; i++)
        if (vm->dict_hole[i].m == m && vm->dict_hole[i].gen == vm->gen) return vm->dict_hole[i].at;
    return UINT64_MAX;
}

static void dict_hole_set(tpl_vm *vm, const tpl_map *m, uint64_t at)
{
    uint32_t i, n = 0;
    for (i = 0; i < vm->dict_hole_n; i++) /* (this render's others kept) */
        if (vm->dict_hole[i].gen == vm->gen && vm->dict_hole[i].m != m) vm->dict_hole[n++] = vm->dict_hole[i];
    vm->dict_hole_n = n;
    if (at == UINT64_MAX) return;
    if (n == TPL_DICT_HOLES) { vm->dict_hole_all_gen = vm->gen; return; }
    vm->dict_hole[vm->dict_hole_n++] = (struct tpl_dict_hole){ m, at, vm->gen };
}

void tpl_vm_dict_holed(tpl_vm *vm, const tpl_map *m, const tpl_map *from)
{
    uint64_t was = dict_hole_since(vm, m);
    if (from) {
        uint64_t f = dict_hole_since(vm, from);
        if (f != UINT64_MAX && was == UINT64_MAX) dict_hole_set(vm, m, f);
    } else if (was == UINT64_MAX) {
        dict_hole_set(vm, m, vm->dict_del_n); /* (the deletion logged next) */
    }
}

void tpl_vm_dict_deleted(tpl_vm *vm, const tpl_map *m, uint32_t at, uint32_t n)
{
    struct tpl_dict_del *d = &vm->dict_del[vm->dict_del_n++ % TPL_DICT_DEL_LOG];
    d->m = m;
    d->at = at;
    d->n = n;
    d->hole = dict_hole_since(vm, m);
    if (n == UINT32_MAX) dict_hole_set(vm, m, UINT64_MAX); /* CPython's clear: a new empty table */
}

/* The deletions from dict m since *seen (vm->dict_del_n then) replayed on *p, a count of m's first
 * entries: a dict iterator's place, as CPython's index into its entries (forwards: the entries
 * passed; reversed: those not passed yet), which the entries deleted below it move back; the added
 * ones follow the last. 0; -1 (a located refusal) when an entry below it was deleted: CPython's
 * index then counts a deleted entry, and an insertion that rebuilds its table (which depends on the
 * table's size, which tpl does not follow) moves the entries under it, so what the iterator yields
 * next, or whether it raises "dictionary keys changed", is not known; so when m held a deleted entry
 * since before the last step (the iterator may have passed it: its index counts it) and changes now,
 * or the log no longer holds all the deletions since. A clear() makes CPython's table anew: the
 * iterator's index is then one into the entries added since, as tpl's place p. (The size is the
 * same: the caller raised "changed size" else, so entries were also added.) */
static int dict_replay(tpl_vm *vm, const tpl_map *m, uint64_t *seen, uint32_t p)
{
    if (*seen == vm->dict_del_n) return 0;
    bool lost = vm->dict_del_n - *seen > TPL_DICT_DEL_LOG;
    for (uint64_t k = *seen; k < vm->dict_del_n && !lost; k++) {
        const struct tpl_dict_del *d = &vm->dict_del[k % TPL_DICT_DEL_LOG];
        if (d->m == m && ((d->hole != UINT64_MAX && d->hole < *seen) || (d->n != UINT32_MAX && d->at < p))) lost = true;
    }
    if (lost)
        return tpl_vm_fail(vm, TPL_EK_RUNTIME, "unsupported: a dict whose keys were deleted and added while a loop "
                           "iterates it (what Python does next depends on its hash table's size, which tpl does not follow)");
    *seen = vm->dict_del_n;
    return 0;
}

tpl_value tpl_vm_dict_stamp(const tpl_vm *vm, const tpl_map *m)
{
    tpl_value v = tpl_v_int((int64_t)vm->dict_del_n);
    v.aux = m->gen;
    v.len = m->len;
    return v;
}

int tpl_vm_dict_iter_sync(tpl_vm *vm, tpl_value v)
{
    if (!(v.type == TPL_T_LIST && (v.flags & TPL_F_VIEW_DICT) && tpl_is_iter(v))) return 0;
    tpl_list *l = v.u.list;
    if (l->items[l->len].type != TPL_T_MAP || l->items[l->len + 1].type != TPL_T_INT) return 0; /* (a part taken) */
    tpl_map *m = l->items[l->len].u.map;
    tpl_value st = l->items[l->len + 1];
    if (!l->len) return 0; /* (exhausted: CPython's no longer looks at the dict) */
    if (m->len != st.len) return tpl_vm_fail(vm, TPL_EK_RUNTIME_ERROR, "dictionary changed size during iteration");
    if ((uint64_t)st.u.i == vm->dict_del_n && st.aux == m->gen) return 0;
    uint64_t seen = (uint64_t)st.u.i;
    uint32_t p = l->len;
    if (dict_replay(vm, m, &seen, p) < 0) return -1;
    for (uint32_t i = 0; i < p; i++) { /* (in place: p <= len) */
        const tpl_entry *e = &m->e[p - 1 - i];
        if (v.aux == TPL_LAZY_DICT_REVITEMS) {
            if (entry_pair(vm, e->key, e->val, &l->items[i]) < 0) return -1;
        } else {
            l->items[i] = v.aux == TPL_LAZY_DICT_REVVALUES ? e->val : e->key;
        }
    }
    l->items[p] = tpl_v_map(m);
    l->items[p + 1] = tpl_vm_dict_stamp(vm, m);
    l->len = l->cap = p;
    return 0;
}

/* One next() of Python's dict iterator (dictiter_iternextkey, dictreviter_iternext) over l->dict:
 * 1 with *out (the key, (key, value) or the value, read from the dict now: a view is live), 0
 * at the end, -1 with RuntimeError when the dict changed size since the loop began, or (forwards,
 * CPython 3.8+) when it finds more entries than the dict had: keys it yielded were deleted and
 * others added, which follow the last entry (CPython's table may also be rebuilt by an insertion,
 * which moves the entries past the deleted ones: tpl does not follow that). */
static int dict_next(tpl_vm *vm, tpl_loop *l, tpl_value *out)
{
    tpl_map *m = l->dict;
    if (m->len != l->dict_len) return tpl_vm_fail(vm, TPL_EK_RUNTIME_ERROR, "dictionary changed size during iteration");
    const tpl_entry *e;
    if (l->dict_rev) { /* the reversed() iterator's items, as the dict is now: the next one taken */
        tpl_list *s = l->src;
        tpl_value it = tpl_v_list(s);
        it.flags = TPL_F_VIEW_DICT;
        it.aux = l->dict_what == 1 ? TPL_LAZY_DICT_REVITEMS : l->dict_what == 2 ? TPL_LAZY_DICT_REVVALUES : TPL_LAZY_DICT_REVITER;
        if (tpl_vm_dict_iter_sync(vm, it) < 0) return -1;
        if (!s->len) { l->dict = NULL; return 0; } /* exhausted: it no longer looks at the dict */
        e = &m->e[s->len - 1];
        s->items++; /* (its dict and stamp stay where they are: past the items) */
        s->len--;
        s->cap = s->len;
    } else {
        if (dict_replay(vm, m, &l->dict_seen, l->dict_pos) < 0) return -1;
        if (l->dict_pos >= m->len) { l->dict = NULL; return 0; }
        if (!l->dict_left) return tpl_vm_fail(vm, TPL_EK_RUNTIME_ERROR, "dictionary keys changed during iteration");
        e = &m->e[l->dict_pos++];
        l->dict_left--;
    }
    tpl_value key = e->key;
    const tpl_value *val = &e->val;
    if (l->dict_what == 0) *out = key;
    else if (l->dict_what == 2) *out = *val;
    else {
        if (entry_pair(vm, key, *val, out) < 0) return -1;
    }
    return 1;
}

static int loop_pull(tpl_vm *vm, tpl_loop *l, uint32_t want)
{
    tpl_list *s = l->src, *d = l->items;
    if (!s) return 0;
    if (l->dict) { /* Python's dict iterator, at each next() */
        while (l->dict && d->len < want) {
            tpl_value x;
            int r = dict_next(vm, l, &x);
            if (r < 0) return -1;
            if (!r) break;
            if (d->len == d->cap && loop_items_reserve(vm, d, 1) < 0) return -1;
            d->items[d->len++] = x;
        }
        return 0;
    }
    if (s->cap == TPL_PEND_MARK) { /* a lazy iterator: produce what is wanted, room for it */
        tpl_pending *p = (tpl_pending *)(void *)s;
        uint32_t more = want == UINT32_MAX ? UINT32_MAX : want > d->len ? want - d->len : 0;
        if (!more) return 0;
        if (s->len < more && pend_fill(vm, p, more) < 0) return -1;
        uint32_t n = s->len < more ? s->len : more;
        if (!n) return 0; /* (items may be NULL when empty) */
        if (d->cap - d->len < n && loop_items_reserve(vm, d, n) < 0) return -1;
        memcpy(d->items + d->len, s->items, n * sizeof *s->items);
        d->len += n;
        s->items += n;
        s->len -= n;
        p->bcap -= n;
        return 0;
    }
    while (d->len < want && s->len && d->len < d->cap) {
        d->items[d->len++] = s->items[0];
        s->items++;
        s->len--;
        s->cap = s->len;
    }
    return 0;
}

/* LOOP_SKIP: the loop drops item l->i - 1 (the one its FOR_NEXT just gave), which a loop filter
 * rejected, so loop.index and previtem count the kept items only. A loop over a list first
 * becomes one that pulls the rest of the list one item at a time (its items: the kept ones). */
static int loop_skip(tpl_vm *vm, tpl_loop *l)
{
    if (l->i == 0) return 0;
    if (!l->src) {
        if (l->i > l->items->len) return 0;
        tpl_list *all = l->items, *src = tpl_arena_alloc(&vm->arena, sizeof *src);
        tpl_list *kept = tpl_list_new(&vm->arena, all->len);
        if (!src || !kept) return oom(vm);
        *src = *all;
        src->items += l->i;
        src->len = src->cap = all->len - l->i;
        if (l->i > 1) memcpy(kept->items, all->items, (l->i - 1) * sizeof *kept->items);
        kept->len = l->i - 1;
        l->items = kept;
        l->src = src;
        l->i--;
        return 0;
    }
    tpl_list *d = l->items;
    uint32_t at = l->i - 1;
    if (at < d->len) {
        memmove(d->items + at, d->items + at + 1, (d->len - at - 1) * sizeof *d->items);
        d->len--;
    }
    l->i--;
    return 0;
}

/* loop.last or loop.nextitem of a loop over a list found no next item: Jinja2's LoopContext peeked
 * past the end of the list's iterator, which then stays exhausted, so items the body appends after
 * are not iterated (issue 14); the loop goes on over the list as it is now. */
static int loop_peek_end(tpl_vm *vm, tpl_loop *l)
{
    if (l->src || l->i < l->items->len) return 0;
    tpl_list *s = tpl_arena_alloc(&vm->arena, sizeof *s);
    if (!s) return oom(vm);
    *s = *l->items;
    s->cap = s->len;
    l->items = s;
    return 0;
}

/* What loop.length needs of a loop still taking items (l->src): len(d) of a dict or its view
 * now, nothing taken (the loop's next step still checks the dict); else every item taken. */
static int loop_length_pull(tpl_vm *vm, tpl_loop *l)
{
    if (!l->dict_rev && l->dict) {
        if (!l->len1) l->len1 = l->dict->len + 1;
        return 0;
    }
    return loop_pull(vm, l, UINT32_MAX);
}

static int loop_attr(tpl_vm *vm, tpl_loop *l, const char *name, size_t n, tpl_value *out)
{
#define IS(s) (n == sizeof(s) - 1 && memcmp(name, s, n) == 0)
    if (l->src) {
        if (IS("length") || IS("revindex") || IS("revindex0")) {
            if (loop_length_pull(vm, l) < 0) return -1;
        }
        else if ((IS("last") || IS("nextitem")) && loop_pull(vm, l, l->i + 1) < 0) return -1;
    } else if ((IS("last") || IS("nextitem")) && loop_peek_end(vm, l) < 0) {
        return -1;
    }
    uint32_t len = l->items->len, i = l->i;
    if (IS("index")) *out = tpl_v_int(i);
    else if (IS("index0")) *out = tpl_v_int((int64_t)i - 1);
    else if (IS("revindex") || IS("revindex0") || IS("length")) { /* (len() once, as Jinja2's LoopContext) */
        if (!l->len1) l->len1 = len + 1;
        *out = tpl_v_int((int64_t)l->len1 - 1 - i + (IS("revindex") ? 1 : 0));
        if (IS("length")) *out = tpl_v_int((int64_t)l->len1 - 1);
    }
    else if (IS("first")) *out = tpl_v_bool(i == 1);
    else if (IS("last")) *out = tpl_v_bool(i == len);
    else if (IS("depth")) *out = tpl_v_int(l->depth);
    else if (IS("depth0")) *out = tpl_v_int((int64_t)l->depth - 1);
    else if (IS("previtem")) *out = i >= 2 ? l->items->items[i - 2] : undef_named("there is no previous item", 25, TPL_UNDEF_PLAIN, 0);
    else if (IS("nextitem")) *out = i < len ? l->items->items[i] : undef_named("there is no next item", 21, TPL_UNDEF_PLAIN, 0);
    else if (IS("cycle") || IS("changed")) /* (a bound method Python prints with the loop's repr) */
        return tpl_vm_fail(vm, TPL_EK_ATTRIBUTE, "unsupported: loop.%.*s as a value (tpl has it only called: loop.%.*s(...))",
                           (int)n, name, (int)n, name);
    else *out = undef_named(name, n, TPL_UNDEF_ATTR, TPL_VT_LOOP + 1);
#undef IS
    return 0;
}

/* Jinja2's Macro attributes: name, arguments (the parameter names), catch_kwargs,
 * catch_varargs, caller (whether the body reads kwargs, varargs, caller). */
static int macro_attr(tpl_vm *vm, const tpl_closure *cl, const char *name, size_t n, tpl_value *out)
{
#define IS(s) (n == sizeof s - 1 && memcmp(name, s, n) == 0)
    const tpl_macro_desc *d = cl->d;
    const tpl_list *params = (cl->prog ? cl->prog : vm->p)->consts[d->params].u.list;
    if (IS("name")) *out = cl->name.len ? cl->name : tpl_v_none(); /* a call block's caller: None */
    else if (IS("arguments")) {
        tpl_list *l = tpl_list_new(&vm->arena, d->nparams);
        if (!l) return oom(vm);
        for (uint32_t i = 0; i < d->nparams; i++) l->items[i] = params->items[i];
        l->len = d->nparams;
        *out = tpl_v_list(l);
        out->flags = TPL_F_TUPLE;
    } else if (IS("catch_kwargs")) *out = tpl_v_bool(d->kwargs_slot >= 0);
    else if (IS("catch_varargs")) *out = tpl_v_bool(d->varargs_slot >= 0);
    else if (IS("caller")) *out = tpl_v_bool(d->caller_slot >= 0);
    else if (IS("explicit_caller")) { /* "caller" in arguments */
        bool ex = false;
        for (uint32_t i = 0; i < d->nparams; i++)
            if (params->items[i].len == 6 && memcmp(params->items[i].u.s, "caller", 6) == 0) ex = true;
        *out = tpl_v_bool(ex);
    } else if (n && name[0] == '_' && vm->p->opts.hf) /* the sandbox hides private names (unsafe_undefined) */
        *out = undef_named(name, n, TPL_UNDEF_ATTR, TPL_VT_MACRO + 1);
    else if (IS("_argument_count")) *out = tpl_v_int(d->nparams);
    else if (IS("_default_autoescape")) *out = tpl_v_bool(tpl_vm_autoescape(vm));
    else if (IS("_func") || IS("_environment") || IS("_invoke"))
        return tpl_vm_fail(vm, TPL_EK_ATTRIBUTE, "unsupported: Macro.%.*s (an interpreter object tpl does not model)", (int)n, name);
    else *out = undef_named(name, n, TPL_UNDEF_ATTR, TPL_VT_MACRO + 1);
#undef IS
    return 0;
}

/* Methods that mutate a list or dict: refused as transformers' ImmutableSandboxedEnvironment
 * refuses them in the hf profile (elsewhere they are Python's: stdlib/py/methods.c). A tuple,
 * a range, an iterator or a dict view has no such attribute: undefined, as in Jinja2. */
static inline __attribute__((always_inline)) bool is_mutating(tpl_value obj, const char *name, size_t n)
{
    static const char *const list_m[] = { "append", "clear", "extend", "insert", "pop", "remove", "reverse", "sort" };
    static const char *const dict_m[] = { "clear", "pop", "popitem", "setdefault", "update" };
    const char *const *m = obj.type == TPL_T_LIST ? list_m : dict_m;
    size_t cnt = obj.type == TPL_T_LIST ? sizeof list_m / sizeof *list_m : sizeof dict_m / sizeof *dict_m;
    if (obj.type == TPL_T_LIST ? (obj.flags & TPL_F_TUPLE) || obj.aux != TPL_LAZY_NONE
                               : !(obj.type == TPL_T_MAP && !(obj.flags & TPL_F_NS)))
        return false;
    if (n == 0) return false;
    for (size_t i = 0; i < cnt; i++) /* the first byte first: most keys compare no further */
        if (m[i][0] == name[0] && strlen(m[i]) == n && memcmp(m[i], name, n) == 0) return true;
    return false;
}

/* `x.__class__`, `x.__doc__`, `m.__name__`...: every Python object has special attributes whose
 * values are interpreter objects (<class 'int'>, docstrings, slot wrappers) that tpl does not
 * model. Jinja2's plain Environment returns them; its sandbox (the hf profile: transformers'
 * ImmutableSandboxedEnvironment) makes every name starting with '_' undefined, which is what the
 * lookups below give. Elsewhere the access is a located error, never a silently different value
 * (a host object answers for itself). */
static int dunder_error(tpl_vm *vm, const char *name, size_t n)
{
    return tpl_vm_fail(vm, TPL_EK_RUNTIME, "unsupported: Python's special attribute '%.*s' (an interpreter object tpl does not model)",
                       (int)(n > 60 ? 60 : n), name);
}

/* `x.__class__` in Jinja (Jinja2's plain Environment returns the Python class): the class as a
 * value (value.h TPL_FN_TYPE) that prints as CPython prints it (<class 'str'>), compares and
 * hashes by its types.def row; the classes Jinja2 has as globals (range, dict, namespace,
 * cycler, joiner) are those globals, so `{}.__class__ == dict`. What tpl's value would name
 * wrongly (a method of Jinja2's own objects is a Python `method`, an undefined of another class)
 * is a located refusal. */
static int class_of(tpl_vm *vm, tpl_value obj, tpl_value *out)
{
    tpl_vtype vt;
    if (obj.type == TPL_T_UNDEF) {
        if (chainable_undefined(vm) || tpl_vm_debug_undefined(vm))
            return tpl_vm_fail(vm, TPL_EK_RUNTIME, "unsupported: the class of an undefined value of this render's Undefined class");
        vt = tpl_value_vtype(obj, tpl_vm_strict_undef(vm, obj));
    } else if (obj.type == TPL_T_FUNC && tpl_value_class(obj) != TPL_VT__COUNT) {
        vt = TPL_VT_TYPE;
    } else {
        vt = (tpl_vtype)(tpl_undef_container(obj) - 1); /* (a cycler's or joiner's state: their class) */
        bool ruby = vt == TPL_VT_SYMBOL || vt == TPL_VT_REGEXP || vt == TPL_VT_CLASS || vt == TPL_VT_RUBY_RANGE ||
                    vt == TPL_VT_MATCHDATA || vt == TPL_VT_ENUMERATOR || vt == TPL_VT_ARITH_SEQ || vt == TPL_VT_GEM_VERSION;
        bool plain_self = obj.type == TPL_T_FUNC && obj.u.p && obj.aux < TPL_FN_ALIAS &&
                          ((obj.u.bound->self.type == TPL_T_STR && !obj.u.bound->self.flags) ||
                           (obj.u.bound->self.type == TPL_T_LIST && !obj.u.bound->self.aux &&
                            !(obj.u.bound->self.flags & ~TPL_F_TUPLE)) ||
                           (obj.u.bound->self.type == TPL_T_MAP && !obj.u.bound->self.flags));
        if ((obj.type == TPL_T_FUNC && !plain_self && obj.aux < TPL_FN_ALIAS && vt != TPL_VT_JOINER) || vt == TPL_VT_UNSET ||
            vt == TPL_VT_HOST || ruby)
            return tpl_vm_fail(vm, TPL_EK_RUNTIME, "unsupported: the class of a %s (tpl does not model it as a Python object)",
                               tpl_type_name(vm, obj));
        if (vt == TPL_VT_FALSE) vt = TPL_VT_TRUE; /* (one class, bool) */
    }
    static const struct { tpl_vtype vt; const char *global; } globals[] = {
        { TPL_VT_RANGE, "range" }, { TPL_VT_DICT, "dict" }, { TPL_VT_NAMESPACE, "namespace" },
        { TPL_VT_CYCLER, "cycler" }, { TPL_VT_JOINER, "joiner" },
    };
    tpl_value v = { 0 };
    v.type = TPL_T_FUNC;
    v.aux = (uint16_t)(TPL_FN_TYPE + vt);
    for (size_t i = 0; i < sizeof globals / sizeof *globals; i++)
        if (globals[i].vt == vt) v.aux = (uint16_t)tpl_stdlib.find(TPL_BK_GLOBAL, globals[i].global, strlen(globals[i].global));
    *out = v;
    return 0;
}

/* A class's __name__, __qualname__, __module__ and __class__ (vt: tpl_value_class); its other
 * special attributes (__mro__, __subclasses__, __dict__, __doc__...) are interpreter objects: a
 * located refusal. 1: not one of these (a class global's own attributes: class_attr). */
static int type_attr(tpl_vm *vm, tpl_vtype vt, const char *name, size_t n, tpl_value *out)
{
    const char *c = tpl_types[vt].pyclass; /* <class 'jinja2.utils.Cycler'> */
    size_t cn = strlen(c) - 10, dot = cn;
    while (dot > 0 && c[8 + dot - 1] != '.') dot--;
    if ((n == 8 && memcmp(name, "__name__", 8) == 0) || (n == 12 && memcmp(name, "__qualname__", 12) == 0)) {
        *out = tpl_v_str(c + 8 + dot, cn - dot);
        return 0;
    }
    if (n == 10 && memcmp(name, "__module__", 10) == 0) {
        *out = dot ? tpl_v_str(c + 8, dot - 1) : tpl_v_str("builtins", 8);
        return 0;
    }
    if (n == 9 && memcmp(name, "__class__", 9) == 0) {
        *out = (tpl_value){ 0 };
        out->type = TPL_T_FUNC;
        out->aux = TPL_FN_TYPE + TPL_VT_TYPE;
        return 0;
    }
    return tpl_is_dunder(name, n) ? dunder_error(vm, name, n) : 1;
}

/* An attribute of a Python number: the data attributes real, imag, numerator, denominator (an
 * int's numerator is itself; a bool's real is an int, as Python's), the methods of builtins.def's
 * PYNUM kind that the receiver's type has (the first parameter's name: float, int or num), else
 * undefined. The methods tpl does not have (to_bytes and from_bytes give bytes; fromhex) are a
 * located error, not an undefined that would print nothing where Python prints the method. */
static int number_attr(tpl_vm *vm, tpl_value obj, const char *name, size_t n, tpl_value *out)
{
    bool fl = obj.type == TPL_T_FLOAT;
#define IS(lit) (n == sizeof lit - 1 && memcmp(name, lit, n) == 0)
    if (IS("real") || (!fl && IS("numerator"))) {
        *out = obj.type == TPL_T_BOOL ? tpl_v_int(obj.u.i) : obj;
        out->flags = 0;
        return 0;
    }
    if (IS("imag")) { *out = fl ? tpl_v_float(0.0) : tpl_v_int(0); return 0; }
    if (!fl && IS("denominator")) { *out = tpl_v_int(1); return 0; }
    int id = tpl_stdlib.find(TPL_BK_PYNUM, name, n);
    if (id >= 0) {
        char own = tpl_lib_builtin(id)->params[0]; /* 'f'loat, 'i'nt, 'n'um */
        if (own == 'n' || (own == 'f') == fl) return bound_method(vm, obj, id, out);
    }
    if (fl ? IS("fromhex") : IS("to_bytes") || IS("from_bytes"))
        return tpl_vm_fail(vm, TPL_EK_ATTRIBUTE, "unsupported: %s.%.*s (%s)", fl ? "float" : "int", (int)n, name,
                           fl ? "a class method tpl does not have" : "tpl has no bytes");
#undef IS
    *out = undef_named(name, n, TPL_UNDEF_ATTR, tpl_undef_container(obj));
    return 0;
}

static int fn_special(tpl_vm *vm, int kind, tpl_value self, int cls_id, tpl_value *out)
{
    int r = bound_method(vm, self, cls_id, out);
    if (r) return r;
    out->aux = (uint16_t)kind; /* (TPL_FN_ALIAS / DESCR / MEMBER: value.h) */
    return 0;
}

/* getattr(cls, name) of a global that is a class in Jinja2 (vt: tpl_value_class; cls_id its
 * builtin id): 0 with *out, 1 when the class has no such attribute, -1 with an error. Methods
 * are unbound (<method 'get' of 'dict' objects>), range's start/stop/step data members; what
 * Python prints with an address (type.mro, Cycler.next/reset/current) is a
 * located error (the sandbox of the hf profile hides mro: undefined). */
static int class_attr(tpl_vm *vm, tpl_vtype vt, int cls_id, const char *name, size_t n, tpl_value *out)
{
    static const char *const dict_m[] = { "clear", "copy", "get", "items", "keys", "pop", "popitem", "setdefault",
                                          "update", "values" };
    static const char *const range_m[] = { "count", "index" }, *const range_d[] = { "start", "stop", "step" };
    static const char *const cycler_f[] = { "next", "reset", "current" };
#define FIND(tab, kind)                                                                                           \
    for (size_t i = 0; i < sizeof tab / sizeof *tab; i++)                                                          \
        if (strlen(tab[i]) == n && memcmp(tab[i], name, n) == 0)                                                   \
            return fn_special(vm, kind, tpl_v_str(tab[i], n), cls_id, out);
    if (vt == TPL_VT_DICT) { FIND(dict_m, TPL_FN_DESCR) }
    if (vt == TPL_VT_RANGE) { FIND(range_m, TPL_FN_DESCR) FIND(range_d, TPL_FN_MEMBER) }
#undef FIND
    bool addr = n == 3 && memcmp(name, "mro", 3) == 0;
    if (addr && vm->p->opts.hf) { /* SandboxedEnvironment.is_internal_attribute */
        char msg[64];
        int k = snprintf(msg, sizeof msg, "access to attribute 'mro' of 'type' object is unsafe.");
        char *m = tpl_arena_strdup(&vm->arena, msg, (size_t)k);
        if (!m) return oom(vm);
        *out = undef_named(m, (size_t)k, TPL_UNDEF_PLAIN, 0);
        return 0;
    }
    if (vt == TPL_VT_DICT && n == 8 && memcmp(name, "fromkeys", 8) == 0) { /* a class method: bound to a new {} */
        tpl_map *m = tpl_map_new(&vm->arena, 0);
        if (!m) return oom(vm);
        return bound_method(vm, tpl_v_map(m), tpl_stdlib.find(TPL_BK_MAP, name, n), out);
    }
    for (size_t i = 0; vt == TPL_VT_CYCLER && i < sizeof cycler_f / sizeof *cycler_f; i++)
        if (strlen(cycler_f[i]) == n && memcmp(cycler_f[i], name, n) == 0) addr = true;
    if (addr)
        return tpl_vm_fail(vm, TPL_EK_ATTRIBUTE, "unsupported: %s.%.*s (a function of the class, which Python prints with its address)",
                           vt == TPL_VT_CYCLER ? "Cycler" : vt == TPL_VT_JOINER ? "Joiner" : vt == TPL_VT_NAMESPACE ? "Namespace"
                           : tpl_types[vt].py, (int)(n > 60 ? 60 : n), name);
    return 1;
}

/* obj.name / obj[name] of a TPL_T_FUNC: a class global's attribute (class_attr), else Jinja2's
 * fallback cls[name], which only dict has (dict[name], a types.GenericAlias); a GenericAlias
 * forwards getattr to dict (what dict lacks: undefined). Anything else: undefined. */
static int func_attr(tpl_vm *vm, tpl_value obj, const char *name, size_t n, tpl_value *out)
{
    if (tpl_is_pytype(obj)) { /* x.__class__.upper: a method descriptor tpl does not make */
        int rc = type_attr(vm, tpl_value_class(obj), name, n, out);
        if (rc <= 0) return rc;
        return tpl_vm_fail(vm, TPL_EK_ATTRIBUTE, "unsupported: %s.%.*s (an attribute of a class tpl does not model)",
                           tpl_types[tpl_value_class(obj)].py, (int)(n > 60 ? 60 : n), name);
    }
    tpl_vtype vt = obj.u.p ? (obj.aux == TPL_FN_ALIAS ? TPL_VT_DICT : TPL_VT__COUNT) : tpl_value_class(obj);
    if (vt != TPL_VT__COUNT && !(n >= 5 && tpl_is_dunder(name, n))) {
        int cls_id = obj.u.p ? obj.u.bound->method : obj.aux;
        int rc = class_attr(vm, vt, cls_id, name, n, out);
        if (rc <= 0) return rc;
        if (vt == TPL_VT_DICT && !obj.u.p) {
            char *k = tpl_arena_strdup(&vm->arena, name, n);
            if (!k) return oom(vm);
            return fn_special(vm, TPL_FN_ALIAS, tpl_v_str(k, n), cls_id, out);
        }
    } else if (vt == TPL_VT_DICT && !obj.u.p) { /* (hf: a dunder dict has is unsafe, one it lacks dict['__x__']) */
        return tpl_vm_fail(vm, TPL_EK_ATTRIBUTE, "unsupported: dict.%.*s (tpl does not model the class's special attributes)",
                           (int)(n > 60 ? 60 : n), name);
    }
    uint8_t cont = tpl_undef_container(obj);
    if (cont == TPL_VT_JOINER + 1 && obj.u.bound->self.type == TPL_T_MAP && /* a joiner's .sep and .used */
        ((n == 3 && memcmp(name, "sep", 3) == 0) || (n == 4 && memcmp(name, "used", 4) == 0))) {
        const tpl_value *hit = tpl_map_get_str(obj.u.bound->self.u.map, name, n, tpl_hash_str(name, n));
        if (hit) { *out = *hit; return 0; }
    }
    *out = undef_named(name, n, TPL_UNDEF_ATTR, cont);
    return 0;
}

int tpl_getattr(tpl_vm *vm, tpl_value obj, const char *name, size_t n, tpl_value *out)
{
    if (__builtin_expect(n >= 5 && name[0] == '_', 0) && tpl_is_dunder(name, n) && obj.type != TPL_T_HOST && !vm->p->opts.hf &&
        tpl_vm_syntax(vm) != TPL_SYNTAX_ERB) {
        if (tpl_vm_syntax(vm) == TPL_SYNTAX_JINJA) {
            if (n == 9 && memcmp(name, "__class__", 9) == 0) return class_of(vm, obj, out);
            tpl_vtype cls = obj.type == TPL_T_FUNC ? tpl_value_class(obj) : TPL_VT__COUNT;
            int rc = cls != TPL_VT__COUNT ? type_attr(vm, cls, name, n, out) : 1;
            if (rc <= 0) return rc;
        }
        if (!(obj.type == TPL_T_MAP && (obj.flags & TPL_F_NS)) && !(obj.type == TPL_T_STR && tpl_stdlib.find(TPL_BK_STR, name, n) >= 0))
            return dunder_error(vm, name, n); /* (a Namespace hides every other name: undefined, below; Markup's
                                                __html__ is modelled: a method of Markup, undefined on str) */
    }
    if ((vm->p->opts.hf || tpl_vm_syntax(vm) == TPL_SYNTAX_ERB) && is_mutating(obj, name, n)) {
        /* transformers' sandbox (hf) gives an undefined value that raises this message when used;
         * elsewhere Jinja2's methods change the list or dict (stdlib/py/methods.c, issue 14) */
        char msg[160];
        int k = snprintf(msg, sizeof msg, "access to attribute '%.*s' of '%s' object is unsafe.", (int)(n > 40 ? 40 : n),
                         name, obj.type == TPL_T_LIST ? "list" : "dict");
        /* the receiver is kept past the message's NUL: l.append == l.append compares it (the
         * method's __self__), as Python's bound methods do (value.c) */
        char *m = tpl_arena_alloc(&vm->arena, (size_t)k + 1 + sizeof obj);
        if (!m) return oom(vm);
        memcpy(m, msg, (size_t)k + 1);
        memcpy(m + k + 1, &obj, sizeof obj);
        if (vm->p->opts.hf) { *out = undef_named(m, (size_t)k, TPL_UNDEF_PLAIN, 0); return 0; }
        return bound_method(vm, tpl_v_str(m, (size_t)k), tpl_stdlib.id_unsafe_method, out);
    }
    switch (obj.type) {
    case TPL_T_MAP: {
        if (!(obj.flags & TPL_F_NS)) {
            int id = tpl_stdlib.find(TPL_BK_MAP, name, n);
            /* (fromkeys: Python's class method, no Ruby Hash's) */
            if (id >= 0 && !(n == 8 && memcmp(name, "fromkeys", 8) == 0 && tpl_vm_syntax(vm) == TPL_SYNTAX_ERB))
                return bound_method(vm, obj, id, out);
        }
        tpl_value *hit = tpl_map_get_str(obj.u.map, name, n, tpl_hash_str(name, n));
        if (!hit) { /* (a new Undefined object: load_global) */
            char *k = tpl_arena_strdup(&vm->arena, name, n);
            if (!k) return oom(vm);
            *out = undef_named(k, n, TPL_UNDEF_ATTR, tpl_undef_container(obj));
            return 0;
        }
        *out = *hit;
        return fresh_own_method(vm, obj, out);
    }
    case TPL_T_STR:
    case TPL_T_LIST: {
        if (obj.type == TPL_T_LIST && (obj.flags & TPL_F_GROUP) && obj.u.list->len == 2) {
            /* groupby's (grouper, list) tuples also have these attributes (Jinja2) */
            if (n == 7 && memcmp(name, "grouper", 7) == 0) { *out = obj.u.list->items[0]; return 0; }
            if (n == 4 && memcmp(name, "list", 4) == 0) { *out = obj.u.list->items[1]; return 0; }
            if (n == 7 && memcmp(name, "_fields", 7) == 0) { /* (a namedtuple's) */
                tpl_list *f = tpl_list_new(&vm->arena, 2);
                if (!f) return oom(vm);
                f->items[0] = tpl_v_str("grouper", 7);
                f->items[1] = tpl_v_str("list", 4);
                f->len = 2;
                *out = tpl_v_list(f);
                out->flags = TPL_F_TUPLE;
                return 0;
            }
        }
        if (obj.type == TPL_T_LIST && obj.aux == TPL_LAZY_RANGE && n >= 4 && n <= 5) { /* range.start/stop/step */
            int k = memcmp(name, "start", n) == 0 && n == 5 ? 0 : memcmp(name, "stop", n) == 0 && n == 4 ? 1
                  : memcmp(name, "step", n) == 0 && n == 4 ? 2 : -1;
            if (k >= 0) {
                *out = tpl_range_params(obj)[k];
                return 0;
            }
        }
        int id = method_gate(obj, tpl_stdlib.find(method_kind(obj), name, n));
        if (id >= 0) return bound_method(vm, obj, id, out);
        if (obj.type == TPL_T_STR && n == 6 && memcmp(name, "encode", 6) == 0 && tpl_vm_syntax(vm) != TPL_SYNTAX_ERB)
            return tpl_vm_fail(vm, TPL_EK_ATTRIBUTE, "unsupported: str.encode (tpl has no bytes)");
        if (obj.type == TPL_T_LIST && obj.aux >= TPL_LAZY_DICT_ITEMS && obj.aux <= TPL_LAZY_DICT_VALUES &&
            ((n == 7 && memcmp(name, "mapping", 7) == 0) || (n == 10 && memcmp(name, "isdisjoint", 10) == 0)))
            return tpl_vm_fail(vm, TPL_EK_ATTRIBUTE, "unsupported: %s.%.*s (a view tpl holds as its items)",
                               tpl_type_name(vm, obj), (int)n, name);
        *out = undef_named(name, n, TPL_UNDEF_ATTR, tpl_undef_container(obj));
        return 0;
    }
    case TPL_T_LOOP:
        return loop_attr(vm, obj.u.loop, name, n, out);
    case TPL_T_MACRO:
        return macro_attr(vm, (const tpl_closure *)obj.u.p, name, n, out);
    case TPL_T_UNDEF:
        if (chainable_undefined(vm)) { *out = obj; return 0; } /* ChainableUndefined.__getattr__ */
        return tpl_stdlib.undefined_error(vm, obj);
    case TPL_T_HOST: {
        int rc = tpl_hobj_getattr(vm, obj, name, n, out);
        if (rc <= 0) return rc;
        *out = undef_named(name, n, TPL_UNDEF_ATTR, tpl_undef_container(obj));
        return 0;
    }
    case TPL_T_INT:
    case TPL_T_BOOL:
    case TPL_T_BIGINT:
    case TPL_T_FLOAT:
        if (tpl_vm_syntax(vm) != TPL_SYNTAX_ERB)
            return number_attr(vm, obj, name, n, out);
        /* fallthrough */
    default:
        if (obj.type == TPL_T_FUNC && tpl_vm_syntax(vm) == TPL_SYNTAX_JINJA) return func_attr(vm, obj, name, n, out);
        *out = undef_named(name, n, TPL_UNDEF_ATTR, tpl_undef_container(obj));
        return 0;
    }
}

static bool as_index(tpl_value k, int64_t *i)
{
    if (k.type == TPL_T_INT || k.type == TPL_T_BOOL) { *i = k.u.i; return true; }
    return false;
}

/* A slice bound: an int, or a big int saturated to int64 (Python clamps every bound to the
 * sequence, so only the sign of one past int64 matters). */
static bool as_slice_index(tpl_value k, int64_t *i)
{
    if (k.type == TPL_T_BIGINT) { *i = k.u.s[0] == '-' ? INT64_MIN : INT64_MAX; return true; }
    return as_index(k, i);
}

int tpl_getitem(tpl_vm *vm, tpl_value obj, tpl_value key, tpl_value *out)
{
    int64_t i;
    switch (obj.type) {
    case TPL_T_MAP: {
        tpl_value *hit;
        /* (dict[StrictUndefined] hashes it: UndefinedError, where a plain Undefined is no key) */
        if (tpl_vm_strict_undef(vm, key)) return tpl_stdlib.undefined_error(vm, key);
        if (tpl_vm_map_get(vm, obj.u.map, key, &hit) < 0) return -1;
        if (hit) { *out = *hit; return 0; }
        if (key.type == TPL_T_STR) return tpl_getattr(vm, obj, key.u.s, key.len, out);
        break;
    }
    case TPL_T_LIST:
        if (obj.aux > TPL_LAZY_RANGE) break; /* dict views, iterators: TypeError, so undefined (Jinja2's getitem) */
        if ((obj.flags & TPL_F_RANGE_BIG) && (tpl_is_intlike(key))) {
            bool found;
            if (tpl_range_item(vm, obj, key, &found, out) < 0) return -1;
            if (found) return 0;
            break;
        }
        if (as_index(key, &i)) {
            int64_t len = obj.u.list->len;
            if (i < 0) i += len;
            if (i >= 0 && i < len) { *out = obj.u.list->items[i]; return 0; }
            break;
        }
        if (key.type == TPL_T_STR) return tpl_getattr(vm, obj, key.u.s, key.len, out);
        break;
    case TPL_T_STR:
        if (as_index(key, &i)) {
            int64_t len = (int64_t)tpl_utf8_len(obj.u.s, obj.len);
            if (i < 0) i += len;
            if (i >= 0 && i < len) {
                size_t b = tpl_utf8_offset(obj.u.s, obj.len, (size_t)i);
                size_t e = b;
                tpl_utf8_next(obj.u.s, obj.len, &e);
                *out = tpl_v_str(obj.u.s + b, e - b);
                out->flags = obj.flags & TPL_F_SAFE;
                return 0;
            }
            break;
        }
        if (key.type == TPL_T_STR) return tpl_getattr(vm, obj, key.u.s, key.len, out);
        break;
    case TPL_T_LOOP:
    case TPL_T_MACRO: /* m["name"]: Jinja2's getitem falls back to the attribute */
        if (key.type == TPL_T_STR) return tpl_getattr(vm, obj, key.u.s, key.len, out);
        break;
    case TPL_T_FUNC: /* dict[key] is a types.GenericAlias; other callables: TypeError, then the attribute */
        if (tpl_vm_syntax(vm) == TPL_SYNTAX_JINJA && !obj.u.p && tpl_value_class(obj) == TPL_VT_DICT)
            return fn_special(vm, TPL_FN_ALIAS, key, obj.aux, out);
        if (key.type == TPL_T_STR) return tpl_getattr(vm, obj, key.u.s, key.len, out);
        break;
    case TPL_T_HOST: {
        int rc = tpl_hobj_getitem(vm, obj, key, out);
        if (rc <= 0) return rc;
        break;
    }
    case TPL_T_UNDEF:
        if (chainable_undefined(vm)) { *out = obj; return 0; } /* ChainableUndefined.__getitem__ */
        return tpl_stdlib.undefined_error(vm, obj);
    default: /* a number, None...: Jinja2's getitem falls back to the attribute ((1)['real'], map(attribute='__class__')) */
        if (key.type == TPL_T_STR && tpl_vm_syntax(vm) == TPL_SYNTAX_JINJA) return tpl_getattr(vm, obj, key.u.s, key.len, out);
        break;
    }
    /* missing: an undefined naming the key */
    tpl_sb b;
    tpl_sb_init(&b, &vm->arena);
    if (key.type == TPL_T_STR) tpl_sb_put(&b, key.u.s, key.len);
    else tpl_py_repr(&b, key);
    *out = undef_named(b.p ? b.p : "", b.len, key.type == TPL_T_STR ? TPL_UNDEF_ATTR : TPL_UNDEF_ITEM, tpl_undef_container(obj));
    return 0;
}

int tpl_getpath(tpl_vm *vm, tpl_value obj, tpl_value path, tpl_value *out)
{
    if (path.type != TPL_T_STR) return tpl_getitem(vm, obj, path, out);
    const char *s = path.u.s;
    size_t n = path.len, i = 0;
    tpl_value cur = obj;
    while (i <= n) {
        size_t e = i;
        while (e < n && s[e] != '.') e++;
        bool digits = e > i;
        for (size_t k = i; k < e; k++) if (s[k] < '0' || s[k] > '9') digits = false;
        if (cur.type == TPL_T_UNDEF) { *out = cur; return 0; }
        if (digits) {
            int64_t idx = 0;
            for (size_t k = i; k < e; k++) idx = idx * 10 + (s[k] - '0');
            if (tpl_getitem(vm, cur, tpl_v_int(idx), &cur) < 0) return -1;
        } else if (tpl_getitem(vm, cur, tpl_v_str(s + i, e - i), &cur) < 0) {
            return -1;
        }
        i = e + 1;
        if (e >= n) break;
    }
    *out = cur;
    return 0;
}

/* ------------------------------------------------------------------ iteration */

int tpl_to_list(tpl_vm *vm, tpl_value v, tpl_list **out)
{
    switch (v.type) {
    case TPL_T_LIST: {
        if (v.flags & TPL_F_RANGE_BIG) return tpl_range_too_large(vm);
        if (tpl_is_view(v) && tpl_vm_view_sync(vm, v) < 0) return -1;
        tpl_pending *p = tpl_pend_of(v);
        if (p) { /* (not taken: the consumers take first, tpl_take_iter) */
            tpl_list *c = tpl_arena_alloc(&vm->arena, sizeof *c);
            if (!c || pend_fill(vm, p, UINT32_MAX) < 0) return c ? -1 : oom(vm);
            *c = p->l;
            c->cap = c->len;
            *out = c;
            return 0;
        }
        *out = v.u.list;
        return 0;
    }
    case TPL_T_LOOP: { /* LoopContext.__next__: the loop's next items as (item, loop), which advances it */
        tpl_loop *l = v.u.loop;
        if (l->src && loop_pull(vm, l, UINT32_MAX) < 0) return -1;
        uint32_t n = l->items->len > l->i ? l->items->len - l->i : 0;
        tpl_list *r = tpl_list_new(&vm->arena, n);
        if (!r) return oom(vm);
        for (uint32_t k = 0; k < n; k++) {
            tpl_list *t = tpl_list_new(&vm->arena, 2);
            if (!t) return oom(vm);
            t->items[0] = l->items->items[l->i + k];
            t->items[1] = v;
            t->len = 2;
            r->items[k] = tpl_v_list(t);
            r->items[k].flags = TPL_F_TUPLE;
        }
        r->len = n;
        l->i += n;
        *out = r;
        return 0;
    }
    case TPL_T_MAP: {
        /* Jinja2's Namespace (namespace(), an imported template's module) has no __iter__ */
        if (v.flags & TPL_F_NS) return tpl_vm_error(vm, TPL_ERR_TYPE, "'%s' object is not iterable", tpl_type_name(vm, v));
        tpl_map *m = v.u.map;
        tpl_list *l = tpl_list_new(&vm->arena, m->len);
        if (!l) return oom(vm);
        for (uint32_t i = 0; i < m->len; i++) l->items[i] = m->e[i].key;
        l->len = m->len;
        *out = l;
        return 0;
    }
    case TPL_T_STR: {
        size_t n = tpl_utf8_len(v.u.s, v.len), i = 0;
        tpl_list *l = tpl_list_new(&vm->arena, (uint32_t)n);
        if (!l) return oom(vm);
        while (i < v.len) {
            size_t b = i;
            tpl_utf8_next(v.u.s, v.len, &i);
            l->items[l->len++] = tpl_v_str(v.u.s + b, i - b);
        }
        *out = l;
        return 0;
    }
    case TPL_T_UNDEF: /* (an inline if's is the plain Undefined: empty, also in a strict render) */
        if (tpl_vm_strict_undef(vm, v)) return tpl_stdlib.undefined_error(vm, v);
        *out = tpl_list_new(&vm->arena, 0);
        return *out ? 0 : oom(vm);
    case TPL_T_HOST:
        if (tpl_hobj_numeric(v) & TPL_HOST_ITERATOR) { /* a one-shot iterator: all its items, taken */
            if (tpl_hobj_as_iter(vm, &v) < 0 || tpl_take_iter(vm, &v, UINT32_MAX) < 0) return -1;
            *out = v.u.list;
            return 0;
        }
        return tpl_hobj_iter(vm, v, out);
    default:
        return tpl_vm_error(vm, TPL_ERR_TYPE, "'%s' object is not iterable", tpl_type_name(vm, v));
    }
}

/* ------------------------------------------------------------------ comparison and arithmetic */

static bool is_numeric(tpl_value v) { return v.type == TPL_T_INT || v.type == TPL_T_FLOAT || v.type == TPL_T_BOOL; }
static double as_double(tpl_value v) { return v.type == TPL_T_FLOAT ? v.u.f : (double)v.u.i; }

static int lower_cmp(tpl_vm *vm, tpl_value a, tpl_value b, int *cmp)
{
    tpl_sb x, y;
    tpl_sb_init(&x, &vm->arena);
    tpl_sb_init(&y, &vm->arena);
    tpl_py_lower(&x, a.u.s, a.len);
    tpl_py_lower(&y, b.u.s, b.len);
    if (x.failed || y.failed) return oom(vm);
    size_t m = x.len < y.len ? x.len : y.len;
    int c = m ? memcmp(x.p, y.p, m) : 0;
    *cmp = c ? (c < 0 ? -1 : 1) : (x.len < y.len ? -1 : x.len > y.len);
    return 0;
}

int tpl_compare(tpl_vm *vm, tpl_value a, tpl_value b, bool case_sensitive, int *cmp)
{
    if ((a.type == TPL_T_BIGINT && (is_numeric(b) || b.type == TPL_T_BIGINT)) ||
        (b.type == TPL_T_BIGINT && is_numeric(a))) {
        int c = tpl_big_cmp(a, b);
        *cmp = c == 2 ? 0 : c; /* NaN: unordered, as two floats compare here */
        return 0;
    }
    if (is_numeric(a) && is_numeric(b)) {
        if (a.type != TPL_T_FLOAT && b.type != TPL_T_FLOAT) *cmp = a.u.i < b.u.i ? -1 : a.u.i > b.u.i;
        else if (a.type != TPL_T_FLOAT && !isnan(b.u.f)) *cmp = tpl_cmp_int_float(a.u.i, b.u.f);
        else if (b.type != TPL_T_FLOAT && !isnan(a.u.f)) *cmp = -tpl_cmp_int_float(b.u.i, a.u.f);
        else {
            double x = as_double(a), y = as_double(b);
            *cmp = x < y ? -1 : x > y ? 1 : 0;
        }
        return 0;
    }
    if (a.type == TPL_T_STR && b.type == TPL_T_STR) {
        if (!case_sensitive) return lower_cmp(vm, a, b, cmp);
        size_t m = a.len < b.len ? a.len : b.len;
        int c = m ? memcmp(a.u.s, b.u.s, m) : 0;
        *cmp = c ? (c < 0 ? -1 : 1) : (a.len < b.len ? -1 : a.len > b.len);
        return 0;
    }
    /* ranges and iterators have no order in Python, nor has a list and a tuple (a TypeError, below) */
    if (a.type == TPL_T_LIST && b.type == TPL_T_LIST && !(a.aux == TPL_LAZY_RANGE || b.aux == TPL_LAZY_RANGE ||
                                                          tpl_is_iter(a) || tpl_is_iter(b)) &&
        (a.flags & TPL_F_TUPLE) == (b.flags & TPL_F_TUPLE)) {
        uint32_t m = a.u.list->len < b.u.list->len ? a.u.list->len : b.u.list->len;
        for (uint32_t i = 0; i < m; i++) {
            tpl_value x = a.u.list->items[i], y = b.u.list->items[i];
            bool eq = false;
            if (tpl_vm_item_equal(vm, x, y, &eq) < 0) return -1;
            if (eq) continue;
            return tpl_compare(vm, x, y, case_sensitive, cmp);
        }
        *cmp = a.u.list->len < b.u.list->len ? -1 : a.u.list->len > b.u.list->len;
        return 0;
    }
    if (a.type == TPL_T_UNDEF) return tpl_stdlib.undefined_error(vm, a);
    if (b.type == TPL_T_UNDEF) return tpl_stdlib.undefined_error(vm, b);
    if ((tpl_hobj_numeric(a) | tpl_hobj_numeric(b)) & TPL_HOST_NUMBER) {
        /* the host's own numbers (a Decimal): a < b, else b < a, else equal */
        bool lt = false, gt = false;
        int h = tpl_hobj_compare(vm, "<", a, b, &lt);
        if (h == 0 && !lt) h = tpl_hobj_compare(vm, "<", b, a, &gt);
        if (h < 0) return -1;
        if (h == 0) { *cmp = lt ? -1 : gt; return 0; }
    }
    if (!((tpl_hobj_numeric(a) | tpl_hobj_numeric(b)) & TPL_HOST_NUMBER) && (a.type == TPL_T_HOST || b.type == TPL_T_HOST)) {
        /* another host object: Python's a < b (its __lt__, or the other side's reflected __gt__),
         * else b < a, else equal; what Python raises (no order: its TypeError) propagates */
        tpl_value v;
        int lt = 0, gt = 0;
        int h = tpl_hobj_richcompare(vm, "<", a, b, &v);
        if (h == 0) lt = v.type == TPL_T_BOOL ? v.u.i != 0 : tpl_truthy_py(vm, v);
        if (h == 0 && lt == 0) {
            h = tpl_hobj_richcompare(vm, "<", b, a, &v);
            if (h == 0) gt = v.type == TPL_T_BOOL ? v.u.i != 0 : tpl_truthy_py(vm, v);
        }
        if (h < 0 || lt < 0 || gt < 0) return -1;
        if (h == 0) { *cmp = lt ? -1 : gt; return 0; }
    }
    if ((tpl_hobj_numeric(a) | tpl_hobj_numeric(b)) & TPL_HOST_NUMBER)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "'<' not supported between instances of '%s' and '%s' (tpl does not "
                            "compare the host's own number types: convert to int or float first)", tpl_type_name(vm, a),
                            tpl_type_name(vm, b));
    return tpl_vm_error(vm, TPL_ERR_TYPE, "'<' not supported between instances of '%s' and '%s'", tpl_type_name(vm, a), tpl_type_name(vm, b));
}

static bool is_dict_view(tpl_value v)
{
    return v.type == TPL_T_LIST && v.aux >= TPL_LAZY_DICT_ITEMS && v.aux <= TPL_LAZY_DICT_VALUES;
}

/* After a failed `<=`, `>` or `>=` (op): Python's TypeError names the operator the template
 * used, also for the elements of lists and tuples (compared with that operator) and when the
 * reflected operator was tried too; tpl_compare's error says '<'. */
static void cmp_error_op(tpl_vm *vm, int op)
{
    static const char pre[] = "'<' not supported between";
    const char *sym = op == TPL_OP_LE ? "<=" : op == TPL_OP_GT ? ">" : op == TPL_OP_GE ? ">=" : NULL;
    if (!sym || strncmp(vm->err_msg, pre, sizeof pre - 1) != 0) return;
    size_t len = strlen(vm->err_msg), sl = strlen(sym);
    if (len + sl >= sizeof vm->err_msg) return;
    memmove(vm->err_msg + 1 + sl, vm->err_msg + 2, len - 1); /* (from the closing quote, with the NUL) */
    memcpy(vm->err_msg + 1, sym, sl);
}

/* `<`, `<=`, `>`, `>=` (op) with a dict view on either side, as CPython's dictviews_richcompare:
 * two dict_keys / dict_items views (either kind) order as sets, by size and subset; a view with
 * anything else, and dict_values, have no order (TypeError; an Undefined's own error first). */
static int view_order(tpl_vm *vm, int op, tpl_value a, tpl_value b, bool *r)
{
    bool set_a = a.aux == TPL_LAZY_DICT_KEYS || a.aux == TPL_LAZY_DICT_ITEMS;
    bool set_b = b.aux == TPL_LAZY_DICT_KEYS || b.aux == TPL_LAZY_DICT_ITEMS;
    const char *sym = op == TPL_OP_LT ? "<" : op == TPL_OP_LE ? "<=" : op == TPL_OP_GT ? ">" : ">=";
    if (a.type == TPL_T_UNDEF) return tpl_stdlib.undefined_error(vm, a);
    if (b.type == TPL_T_UNDEF) return tpl_stdlib.undefined_error(vm, b);
    if (!is_dict_view(a) || !is_dict_view(b) || !set_a || !set_b)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "'%s' not supported between instances of '%s' and '%s'", sym,
                            tpl_type_name(vm, a), tpl_type_name(vm, b));
    if (view_peek(vm, a) < 0 || view_peek(vm, b) < 0) return -1;
    uint32_t la = a.u.list->len, lb = b.u.list->len;
    bool size_ok = op == TPL_OP_LT ? la < lb : op == TPL_OP_LE ? la <= lb : op == TPL_OP_GT ? la > lb : la >= lb;
    int c = !size_ok ? 0 : op == TPL_OP_LT || op == TPL_OP_LE ? tpl_view_contained_metered(a, b, &vm->fuel)
                                                              : tpl_view_contained_metered(b, a, &vm->fuel);
    if (c == -2) return tpl_vm_nest_error(vm, "in comparison");
    if (c < 0) return tpl_vm_nomem(vm);
    *r = c == 1;
    return 0;
}

/* `<`, `<=`, `>`, `>=` (op) with a host object on either side: Python's rich comparison of the
 * operator itself (the object's __le__, the other side's reflected __ge__, NotImplemented, then
 * Python's TypeError "'<=' not supported between instances of 'A' and 'A'"), *out its result
 * (printed as itself when it is no bool, as Jinja2 compiles `a <= b` to Python's). 1: not the
 * host's to answer (no arith hook, an undefined operand): tpl_compare's order. */
static __attribute__((noinline)) int host_order(tpl_vm *vm, int op, tpl_value a, tpl_value b, tpl_value *out)
{
    const char *sym = op == TPL_OP_LT ? "<" : op == TPL_OP_LE ? "<=" : op == TPL_OP_GT ? ">" : ">=";
    return tpl_hobj_richcompare(vm, sym, a, b, out);
}

/* ---- appending to strings (CONCAT, + on strings)
 * vm->cat holds the four most recently used concatenation results. A concatenation whose first
 * part is one of them (same bytes, same length) and whose block is still the newest of its chunk
 * appends the rest in place: the bytes past a string's length belong to no value (a block's
 * recorded length only grows), so every earlier value stays intact. When it cannot (no room, or
 * other blocks came after it) and the string is 1 KiB or more, the copy takes a chunk of its own
 * with room to double, and replaces the entry. So `ns.s = ns.s ~ x` or `t += x` in a loop copies
 * and keeps O(final length) bytes, not O(steps x length). */

/* A block for a total-byte string whose first part is `first`; *keep is how many leading bytes
 * are already in place (first.len when appending in place, else 0) and *hit the entry of
 * `first` (-1: none), for cat_end. NULL: out of memory (or over the limit; the error is not set). */
static char *cat_begin(tpl_vm *vm, tpl_value first, size_t total, size_t *keep, int *hit)
{
    *keep = 0;
    *hit = -1;
    if (first.type == TPL_T_STR && first.len)
        for (int i = 0; i < 4; i++)
            if (vm->cat[i].p == first.u.s && vm->cat[i].len == first.len) { *hit = i; break; }
    if (*hit < 0) return tpl_arena_alloc(&vm->arena, total + 1);
    struct tpl_concat *e = &vm->cat[*hit];
    tpl_chunk *c = e->chunk;
    size_t need = ((size_t)(e->p - (const char *)c->data) + total + 1 + 15) & ~(size_t)15;
    if (c->used == e->end && need <= c->size) {
        if (e->born <= vm->cat_fence) vm->cat_crossed = ++vm->cat_tick; /* (see vm_impl.h) */
        if (need > c->used) c->used = need;
        *keep = first.len;
        return (char *)e->p;
    }
    if (total < 1024) return tpl_arena_alloc(&vm->arena, total + 1);
    size_t room = total < UINT32_MAX / 2 ? 2 * total : total;
    bool over = vm->arena.over_limit;
    char *s = tpl_arena_alloc_alone(&vm->arena, room + 1);
    if (!s) { /* no room to double under the memory limit: the exact size may fit */
        vm->arena.over_limit = over;
        s = tpl_arena_alloc(&vm->arena, total + 1);
    }
    return s;
}

/* Records s (total bytes, from cat_begin; hit as it set) as a concatenation result: in the entry
 * it grew or moved from, else in place of the least recently used entry. */
static void cat_end(tpl_vm *vm, char *s, size_t total, int hit)
{
    struct tpl_concat *e;
    if (hit >= 0 && vm->cat[hit].p == s) { /* appended in place */
        e = &vm->cat[hit];
        e->len = (uint32_t)total;
        e->end = e->chunk->used;
        e->tick = ++vm->cat_tick;
        return;
    }
    /* a new block is in the head chunk or alone in one linked right behind it */
    tpl_chunk *c = vm->arena.head;
    if (c && !(s >= (char *)c->data && s < (char *)c->data + c->used)) c = c->next;
    if (!c || !(s >= (char *)c->data && s < (char *)c->data + c->used)) return;
    if (hit >= 0) e = &vm->cat[hit];
    else {
        e = &vm->cat[0];
        for (int i = 1; i < 4; i++)
            if (vm->cat[i].tick < e->tick) e = &vm->cat[i];
    }
    ++vm->cat_tick;
    *e = (struct tpl_concat){ s, (uint32_t)total, c, c->used, vm->cat_tick, vm->cat_tick };
}

int tpl_vm_concat(tpl_vm *vm, tpl_value a, tpl_value b, tpl_value *out)
{
    size_t n = (size_t)a.len + b.len, keep;
    int hit;
    if (n > UINT32_MAX) return tpl_vm_error(vm, TPL_ERR_LIMIT, "string too long");
    char *p = cat_begin(vm, a, n, &keep, &hit);
    if (!p) return oom(vm);
    if (!keep && a.len) memcpy(p, a.u.s, a.len);
    if (b.len) memcpy(p + a.len, b.u.s, b.len);
    cat_end(vm, p, n, hit);
    *out = tpl_v_str(p, n);
    return 0;
}

/* Python's float x // y (y not 0), as CPython's _float_div_mod: the quotient of x less its
 * remainder, rounded to the nearest integer, so inf // 1 is nan and -0.0 // 5 is -0.0. */
static double py_float_floordiv(double x, double y)
{
    double mod = fmod(x, y), div = (x - mod) / y;
    if (mod != 0 && ((y < 0) != (mod < 0)))
        div -= 1.0;
    if (div == 0)
        return copysign(0.0, x / y);
    double fd = floor(div);
    return div - fd > 0.5 ? fd + 1.0 : fd;
}

int tpl_vm_float_binop(tpl_vm *vm, int op, double x, double y, tpl_value *out)
{
    switch (op) {
    case TPL_OP_ADD: *out = tpl_v_float(x + y); return 0;
    case TPL_OP_SUB: *out = tpl_v_float(x - y); return 0;
    case TPL_OP_MUL: *out = tpl_v_float(x * y); return 0;
    case TPL_OP_DIV_PY: case TPL_OP_DIV_RB:
        if (y == 0.0)
            return tpl_vm_fail(vm, TPL_EK_ZERO_DIVISION, op == TPL_OP_DIV_PY ? "float division by zero" : "float floor division by zero");
        *out = tpl_v_float(x / y);
        return 0;
    case TPL_OP_FLOORDIV:
        if (y == 0.0) return tpl_vm_fail(vm, TPL_EK_ZERO_DIVISION, "float floor division by zero");
        *out = tpl_v_float(py_float_floordiv(x, y));
        return 0;
    case TPL_OP_MOD: {
        if (y == 0.0) return tpl_vm_fail(vm, TPL_EK_ZERO_DIVISION, "float modulo");
        double m = fmod(x, y);
        if (m != 0 && ((m < 0) != (y < 0))) m += y;
        else if (m == 0 && tpl_vm_syntax(vm) != TPL_SYNTAX_ERB)
            m = copysign(0.0, y); /* Python: a zero remainder has the divisor's sign (-5 % 5.0 is 0.0) */
        *out = tpl_v_float(m);
        return 0;
    }
    case TPL_OP_POW: {
        if (x == 0.0 && y < 0) return tpl_vm_fail(vm, TPL_EK_ZERO_DIVISION, "0.0 cannot be raised to a negative power");
        /* Python and Ruby give a complex number; tpl has none: an error, not a silent nan */
        if (x < 0 && isfinite(y) && y != floor(y))
            return tpl_vm_error(vm, TPL_ERR_TYPE, "complex numbers are not supported (a negative number to a fractional power)");
        double r = pow(x, y);
        /* Python's float pow raises where C's overflows (Ruby prints Infinity) */
        if (isinf(r) && isfinite(x) && isfinite(y) && tpl_vm_syntax(vm) == TPL_SYNTAX_JINJA)
            return tpl_vm_fail(vm, TPL_EK_OVERFLOW, "(34, 'Numerical result out of range')");
        *out = tpl_v_float(r);
        return 0;
    }
    }
    return tpl_vm_error(vm, TPL_ERR_TYPE, "bad operator");
}

/* The Python types with a sequence repeat (sq_repeat) among tpl's values (Markup aside). */
static bool is_py_sequence(const char *type_name)
{
    return strcmp(type_name, "str") == 0 || strcmp(type_name, "list") == 0 || strcmp(type_name, "tuple") == 0;
}

/* An operator tpl does not compute: the host's arith for its own numbers (a Decimal), else the error. */
static int arith_error(tpl_vm *vm, const char *op, tpl_value a, tpl_value b, tpl_value *out)
{
    if (a.type == TPL_T_UNDEF) return tpl_stdlib.undefined_error(vm, a);
    if (b.type == TPL_T_UNDEF) return tpl_stdlib.undefined_error(vm, b);
    if (__builtin_expect(a.type == TPL_T_HOST || b.type == TPL_T_HOST, 0)) {
        int h = tpl_hobj_arith(vm, op[0] == '*' && op[1] == '*' ? "**" : op, a, b, out);
        if (h <= 0) return h;
    }
    if (op[0] == '-' && !op[1] && a.type == TPL_T_LIST && (a.aux == TPL_LAZY_DICT_KEYS || a.aux == TPL_LAZY_DICT_ITEMS) &&
        tpl_vm_syntax(vm) != TPL_SYNTAX_ERB) /* Python: a set, which prints its items in hash order */
        return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported: %s - %s makes a set (tpl has no set type)",
                            tpl_type_name(vm, a), tpl_type_name(vm, b));
    if ((tpl_hobj_numeric(a) | tpl_hobj_numeric(b)) & TPL_HOST_NUMBER) /* (a Decimal, a Fraction...) */
        return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported operand type(s) for %s: '%s' and '%s' (tpl does no "
                            "arithmetic on the host's own number types: convert to int or float first)", op,
                            tpl_type_name(vm, a), tpl_type_name(vm, b));
    const char *an = tpl_type_name(vm, a), *bn = tpl_type_name(vm, b);
    if (op[0] == '*' && !op[1] && tpl_vm_syntax(vm) != TPL_SYNTAX_ERB) {
        /* Python's PyNumber_Multiply: Markup's __mul__ / __rmul__ (markupsafe 3) is str.__mul__,
         * which takes only an integer; with no number product, a sequence (str, list, tuple)
         * repeats by the other operand, which is not an integer here */
        bool am = strcmp(an, "Markup") == 0, bm = strcmp(bn, "Markup") == 0;
        if (am || bm)
            return tpl_vm_error(vm, TPL_ERR_TYPE, "'%s' object cannot be interpreted as an integer", am ? bn : an);
        bool as = is_py_sequence(an), bs = is_py_sequence(bn);
        if (as || bs)
            return tpl_vm_error(vm, TPL_ERR_TYPE, "can't multiply sequence by non-int of type '%s'", as ? bn : an);
    }
    return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported operand type(s) for %s: '%s' and '%s'", op, an, bn);
}

/* ---- appending to lists (+ on lists, Ruby push and <<)
 * As for strings above: vm->lcat holds the four most recently used list results that were given
 * room past their length. Such a room belongs to no value (every list sharing the array has a
 * length at most the entry's), so a concatenation onto the entry's exact list writes the new items
 * there and the result shares the array. A result of 64 items or more that cannot do that gets an
 * array with room to double. So `ns.l = ns.l + [x]` in a loop copies and keeps O(final length)
 * items, not O(steps x length). Item arrays are only ever written while a list is built, so
 * sharing them is safe; the result's own cap is its length, so nothing else pushes into the room. */
int tpl_vm_concat_list(tpl_vm *vm, const tpl_list *a, const tpl_value *b, uint32_t nb, tpl_value *out)
{
    uint32_t la = a->len;
    if (nb > UINT32_MAX - la) return tpl_vm_error(vm, TPL_ERR_LIMIT, "list too long");
    uint32_t n = la + nb;
    tpl_list *l = tpl_arena_alloc(&vm->arena, sizeof *l);
    if (!l) return oom(vm);
    struct tpl_lconcat *e = NULL;
    if (la)
        for (int i = 0; i < 4; i++)
            if (vm->lcat[i].items == a->items && vm->lcat[i].len == la) { e = &vm->lcat[i]; break; }
    tpl_value *items;
    if (e && n <= e->cap) {
        items = (tpl_value *)e->items; /* the room past la is no value's */
    } else {
        uint32_t cap = n >= 64 ? (n <= UINT32_MAX / 2 ? 2 * n : UINT32_MAX) : n;
        bool over = vm->arena.over_limit;
        items = n ? tpl_arena_alloc(&vm->arena, (size_t)cap * sizeof *items) : NULL;
        if (n && !items && cap > n) { /* no room to double under the memory limit: the exact size may fit */
            vm->arena.over_limit = over;
            cap = n;
            items = tpl_arena_alloc(&vm->arena, (size_t)cap * sizeof *items);
        }
        if (n && !items) return oom(vm);
        if (la) memcpy(items, a->items, (size_t)la * sizeof *items);
        if (cap > n) {
            if (!e) {
                e = &vm->lcat[0];
                for (int i = 1; i < 4; i++)
                    if (vm->lcat[i].tick < e->tick) e = &vm->lcat[i];
            }
            e->items = items;
            e->cap = cap;
        } else if (e) {
            e->items = NULL; /* outgrown with no room: forget it */
        }
    }
    if (nb) memcpy(items + la, b, (size_t)nb * sizeof *items);
    if (e && e->items == items) {
        e->len = n;
        e->tick = ++vm->cat_tick;
    }
    l->len = l->cap = n;
    l->items = items;
    *out = tpl_v_list(l);
    return 0;
}

static int concat_lists(tpl_vm *vm, tpl_value a, tpl_value b, tpl_value *out)
{
    if (tpl_vm_concat_list(vm, a.u.list, b.u.list->items, b.u.list->len, out) < 0) return -1;
    out->flags = a.flags & TPL_F_TUPLE;
    return 0;
}

static int repeat(tpl_vm *vm, tpl_value s, int64_t times, tpl_value *out)
{
    if (times < 0) times = 0;
    /* nothing to copy: the empty result at once, whatever the count (a loop over a count of
     * 52 billion empty copies never ended) */
    uint32_t len = s.type == TPL_T_STR ? s.len : s.u.list->len;
    if (len == 0) times = 0;
    if (s.type == TPL_T_STR) {
        if ((uint64_t)times > vm->limits.max_output / (len ? len : 1))
            return tpl_vm_error(vm, TPL_ERR_LIMIT, "string repetition too large");
        size_t n = (size_t)len * (size_t)times;
        char *p = tpl_arena_alloc(&vm->arena, n + 1);
        if (!p) return oom(vm);
        if (n) memcpy(p, s.u.s, len);
        for (size_t have = len; have < n;) { /* doubling copies */
            size_t k = have < n - have ? have : n - have;
            memcpy(p + have, p, k);
            have += k;
        }
        *out = tpl_v_str(p, n);
        out->flags = s.flags & TPL_F_SAFE; /* Markup * n is Markup */
        return 0;
    }
    if (len && (uint64_t)times > 10000000u / len) return tpl_vm_error(vm, TPL_ERR_LIMIT, "list repetition too large");
    tpl_list *l = tpl_list_new(&vm->arena, (uint32_t)(len * times));
    if (!l) return oom(vm);
    for (int64_t i = 0; i < times; i++) memcpy(l->items + (size_t)i * len, s.u.list->items, len * sizeof(tpl_value));
    l->len = (uint32_t)(len * times);
    *out = tpl_v_list(l);
    out->flags = s.flags & TPL_F_TUPLE;
    return 0;
}

static int call_builtin(tpl_vm *vm, int id, tpl_value *pos, int npos, const tpl_value *kwn, tpl_value *kwv, int nkw,
                        tpl_value *out);

static int binop(tpl_vm *vm, int op, tpl_value a, tpl_value b, tpl_value *out)
{
    bool ints = (a.type == TPL_T_INT || a.type == TPL_T_BOOL) && (b.type == TPL_T_INT || b.type == TPL_T_BOOL);
    bool nums = is_numeric(a) && is_numeric(b);
    int64_t r;
    if ((a.type == TPL_T_BIGINT || b.type == TPL_T_BIGINT) &&
        (a.type == TPL_T_BIGINT || is_numeric(a)) && (b.type == TPL_T_BIGINT || is_numeric(b)))
        return tpl_big_binop(vm, op, a, b, out);
    switch (op) {
    case TPL_OP_ADD:
        if (ints) {
            if (__builtin_add_overflow(a.u.i, b.u.i, &r)) return tpl_big_binop(vm, op, a, b, out);
            *out = tpl_v_int(r);
            return 0;
        }
        if (nums) { *out = tpl_v_float(as_double(a) + as_double(b)); return 0; }
        if (a.type == TPL_T_STR && b.type == TPL_T_STR) {
            if ((a.flags ^ b.flags) & TPL_F_SAFE) {
                /* Markup + str: the plain operand is escaped, the result is markup (Jinja2) */
                tpl_value *plain = (a.flags & TPL_F_SAFE) ? &b : &a;
                if (call_builtin(vm, tpl_stdlib.id_escape, plain, 1, NULL, NULL, 0, plain) < 0) return -1;
            }
            bool safe = (a.flags & TPL_F_SAFE) || (b.flags & TPL_F_SAFE);
            if (tpl_vm_concat(vm, a, b, out) < 0) return -1;
            if (safe) out->flags = TPL_F_SAFE;
            return 0;
        }
        if (a.type == TPL_T_LIST && b.type == TPL_T_LIST && (a.flags & TPL_F_TUPLE) == (b.flags & TPL_F_TUPLE) && !a.aux && !b.aux)
            return concat_lists(vm, a, b, out);
        if (tpl_is_lazy(a) || tpl_is_lazy(b)) return arith_error(vm, "+", a, b, out);
        if ((a.type == TPL_T_STR || a.type == TPL_T_LIST) && b.type != TPL_T_UNDEF) /* as Python's str and list */
            return tpl_vm_error(vm, TPL_ERR_TYPE, "can only concatenate %s (not \"%s\") to %s", tpl_type_name(vm, a), tpl_type_name(vm, b), tpl_type_name(vm, a));
        return arith_error(vm, "+", a, b, out);
    case TPL_OP_SUB:
        if (ints) {
            if (__builtin_sub_overflow(a.u.i, b.u.i, &r)) return tpl_big_binop(vm, op, a, b, out);
            *out = tpl_v_int(r);
            return 0;
        }
        if (nums) { *out = tpl_v_float(as_double(a) - as_double(b)); return 0; }
        return arith_error(vm, "-", a, b, out);
    case TPL_OP_MUL:
        if (ints) {
            if (__builtin_mul_overflow(a.u.i, b.u.i, &r)) return tpl_big_binop(vm, op, a, b, out);
            *out = tpl_v_int(r);
            return 0;
        }
        if (nums) { *out = tpl_v_float(as_double(a) * as_double(b)); return 0; }
        if (tpl_is_lazy(a) || tpl_is_lazy(b)) return arith_error(vm, "*", a, b, out);
        if ((a.type == TPL_T_STR || a.type == TPL_T_LIST) && (b.type == TPL_T_INT || b.type == TPL_T_BOOL)) return repeat(vm, a, b.u.i, out);
        if ((b.type == TPL_T_STR || b.type == TPL_T_LIST) && (a.type == TPL_T_INT || a.type == TPL_T_BOOL)) return repeat(vm, b, a.u.i, out);
        if (((a.type == TPL_T_STR || a.type == TPL_T_LIST) && b.type == TPL_T_BIGINT) ||
            ((b.type == TPL_T_STR || b.type == TPL_T_LIST) && a.type == TPL_T_BIGINT))
            return tpl_vm_fail(vm, TPL_EK_OVERFLOW, "cannot fit 'int' into an index-sized integer");
        return arith_error(vm, "*", a, b, out);
    case TPL_OP_DIV_PY:
        if (!nums) return arith_error(vm, "/", a, b, out);
        if (as_double(b) == 0.0) return tpl_vm_fail(vm, TPL_EK_ZERO_DIVISION, ints ? "division by zero" : "float division by zero");
        *out = tpl_v_float(as_double(a) / as_double(b));
        return 0;
    case TPL_OP_DIV_RB:
    case TPL_OP_FLOORDIV:
        if (ints) {
            if (b.u.i == 0) return tpl_vm_fail(vm, TPL_EK_ZERO_DIVISION, op == TPL_OP_DIV_RB ? "divided by 0" : "integer division or modulo by zero");
            if (a.u.i == INT64_MIN && b.u.i == -1) return tpl_big_binop(vm, op, a, b, out);
            int64_t q = a.u.i / b.u.i;
            if ((a.u.i % b.u.i != 0) && ((a.u.i < 0) != (b.u.i < 0))) q--;
            *out = tpl_v_int(q);
            return 0;
        }
        if (nums) return tpl_vm_float_binop(vm, op, as_double(a), as_double(b), out);
        return arith_error(vm, op == TPL_OP_DIV_RB ? "/" : "//", a, b, out);
    case TPL_OP_MOD:
        if (ints) {
            if (b.u.i == 0) return tpl_vm_fail(vm, TPL_EK_ZERO_DIVISION, "integer modulo by zero");
            if (b.u.i == -1) { *out = tpl_v_int(0); return 0; }
            int64_t m = a.u.i % b.u.i;
            if (m != 0 && ((m < 0) != (b.u.i < 0))) m += b.u.i;
            *out = tpl_v_int(m);
            return 0;
        }
        if (nums) return tpl_vm_float_binop(vm, op, as_double(a), as_double(b), out);
        if (a.type == TPL_T_STR) /* printf-style formatting: a tuple's items, a dict's %(key)s, else one value */
            return tpl_stdlib.str_mod(vm, a, b, out);
        return arith_error(vm, "%", a, b, out);
    case TPL_OP_POW:
        if (ints && b.u.i >= 0) {
            int64_t base = a.u.i, e = b.u.i, acc = 1;
            while (e > 0) {
                if (e & 1) { if (__builtin_mul_overflow(acc, base, &acc)) return tpl_big_binop(vm, op, a, b, out); }
                e >>= 1;
                if (e && __builtin_mul_overflow(base, base, &base)) return tpl_big_binop(vm, op, a, b, out);
            }
            *out = tpl_v_int(acc);
            return 0;
        }
        if (nums) return tpl_vm_float_binop(vm, op, as_double(a), as_double(b), out);
        return arith_error(vm, "** or pow()", a, b, out);
    }
    return tpl_vm_error(vm, TPL_ERR_TYPE, "bad operator");
}

/* Jinja2's iterators (the generators map, select and friends return, reversed(), iter(range))
 * run once. A consumer takes n items (UINT32_MAX: all) as a list header of its own over the
 * same items, and the shared list loses them: the next use of the same value sees what is left
 * (an exhausted iterator is empty). *v becomes the taken part. A lazy one (tpl_pending) first
 * produces what is taken (pend_fill). */
int tpl_take_iter(tpl_vm *vm, tpl_value *v, uint32_t n)
{
    tpl_pending *pd = tpl_pend_of(*v);
    if (pd && pend_fill(vm, pd, n) < 0) return -1;
    if (__builtin_expect(v->flags & TPL_F_VIEW_DICT, 0) && tpl_vm_dict_iter_sync(vm, *v) < 0) return -1;
    tpl_list *l = v->u.list;
    tpl_list *c = tpl_arena_alloc(&vm->arena, sizeof *c);
    if (!c) return oom(vm);
    *c = *l;
    if (n > l->len) n = l->len;
    c->len = c->cap = n;
    if (n) {
        l->items += n;
        l->len -= n;
        if (pd) pd->bcap -= n;
        else l->cap = l->len;
    }
    v->u.list = c;
    return 0;
}
#define take_iter tpl_take_iter

static tpl_pending *pend_new(tpl_vm *vm, tpl_value src, uint16_t aux, tpl_value *out)
{
    tpl_pending *p = tpl_arena_alloc(&vm->arena, sizeof *p);
    if (!p) return NULL;
    memset(p, 0, sizeof *p);
    p->l.cap = TPL_PEND_MARK;
    p->src = src;
    tpl_value v = tpl_v_list(&p->l);
    v.aux = aux;
    *out = v;
    return p;
}

int tpl_pend_stage(tpl_vm *vm, tpl_value src, tpl_pend_fn fn, const tpl_value *a, int na, uint32_t per, uint16_t aux,
                   tpl_value *out)
{
    tpl_pending *p = pend_new(vm, src, aux, out);
    if (!p) return oom(vm);
    p->fn = fn;
    p->per = per;
    for (int i = 0; i < 4; i++) p->a[i] = i < na ? a[i] : tpl_v_unset();
    return 0;
}

int tpl_pend_whole(tpl_vm *vm, tpl_value src, tpl_pend_fn fn, const tpl_value *a, int na, tpl_value *out)
{
    if (tpl_pend_stage(vm, src, fn, a, na, UINT32_MAX, TPL_LAZY_GENERATOR, out) < 0) return -1;
    tpl_pend_of(*out)->whole = true;
    return 0;
}

int tpl_pend_range(tpl_vm *vm, tpl_value r, bool rev, tpl_value *out)
{
    tpl_pending *p = pend_new(vm, r, TPL_LAZY_RANGE_ITER, out);
    if (!p) return oom(vm);
    p->rev = rev;
    return 0;
}

int tpl_pend_revlist(tpl_vm *vm, tpl_value l, tpl_value *out)
{
    tpl_pending *p = pend_new(vm, l, TPL_LAZY_LIST_REVITER, out);
    if (!p) return oom(vm);
    p->rev = true;
    p->pos = l.u.list->len;
    return 0;
}

/* Appends the n items at x to p's produced items. */
static int pend_push(tpl_vm *vm, tpl_pending *p, const tpl_value *x, uint32_t n)
{
    if (!n) return 0;
    if ((uint64_t)p->l.len + n >= TPL_PEND_MARK / 2) return tpl_vm_error(vm, TPL_ERR_LIMIT, "too many items");
    if (p->bcap - p->l.len < n) {
        uint32_t cap = p->l.len + n < 8 ? 8 : p->l.len + n;
        if (cap < p->l.len * 2) cap = p->l.len * 2;
        tpl_value *it = tpl_arena_alloc(&vm->arena, (size_t)cap * sizeof *it);
        if (!it) return oom(vm);
        if (p->l.len) memcpy(it, p->l.items, p->l.len * sizeof *it);
        p->l.items = it;
        p->bcap = cap;
    }
    memcpy(p->l.items + p->l.len, x, n * sizeof *x);
    p->l.len += n;
    return 0;
}

/* Up to k (UINT32_MAX: all) next items of p's source, as a plain list *out. */
static int pend_src(tpl_vm *vm, tpl_pending *p, uint32_t k, tpl_list **out)
{
    tpl_value s = p->src;
    if (__builtin_expect(s.type == TPL_T_HOST, 0)) { /* a one-shot host iterator (tpl_hobj_as_iter) */
        tpl_list *l = tpl_list_new(&vm->arena, k < 8 ? (k ? k : 1) : 8);
        if (!l) return oom(vm);
        while (l->len < k) {
            tpl_value x;
            int r = tpl_hobj_next(vm, s, &x);
            if (r < 0) return -1;
            if (r) break;
            if (l->len == l->cap) {
                tpl_list *g = l->cap < TPL_PEND_MARK / 4 ? tpl_list_new(&vm->arena, l->cap * 2) : NULL;
                if (!g) return oom(vm);
                memcpy(g->items, l->items, l->len * sizeof *g->items);
                g->len = l->len;
                l = g;
            }
            l->items[l->len++] = x;
        }
        *out = l;
        return 0;
    }
    if (tpl_is_iter(s)) {
        if (take_iter(vm, &s, k) < 0) return -1;
        *out = s.u.list;
        return 0;
    }
    if (tpl_is_big_range(s)) {
        mpz_t n;
        tpl_range_len(n, tpl_range_params(s));
        if (mpz_cmp_ui(n, p->pos) <= 0) mpz_set_ui(n, 0);
        else mpz_sub_ui(n, n, p->pos);
        bool all_fit = mpz_cmp_ui(n, TPL_RANGE_ITEMS_MAX) <= 0;
        uint64_t left = all_fit ? mpz_get_ui(n) : UINT64_MAX;
        mpz_clear(n);
        if (k == UINT32_MAX && !all_fit) return tpl_range_too_large(vm);
        if (k > left) k = (uint32_t)left;
        tpl_list *l = tpl_list_new(&vm->arena, k);
        if (!l) return oom(vm);
        for (uint32_t i = 0; i < k; i++) {
            bool found = false;
            int64_t at = (int64_t)(p->pos + i);
            if (tpl_range_item(vm, s, tpl_v_int(p->rev ? -at - 1 : at), &found, &l->items[i]) < 0) return -1;
            if (!found) break;
            l->len++;
        }
        p->pos += l->len;
        *out = l;
        return 0;
    }
    if (tpl_is_view(s)) { /* a dict or its view: Python's dict iterator, made at the first pull */
        tpl_map *m = tpl_view_dict(s);
        if (!p->dict_started) {
            p->dict_started = true;
            p->dict_len = m->len;
            p->dict_seen = vm->dict_del_n;
        } else if (m->len != p->dict_len) {
            return tpl_vm_fail(vm, TPL_EK_RUNTIME_ERROR, "dictionary changed size during iteration");
        }
        if (dict_replay(vm, m, &p->dict_seen, (uint32_t)p->pos) < 0) return -1;
        uint64_t left = p->pos < m->len ? m->len - p->pos : 0;
        if (k > left) k = (uint32_t)left;
        tpl_list *l = tpl_list_new(&vm->arena, k ? k : 1);
        if (!l) return oom(vm);
        for (uint32_t i = 0; i < k; i++) {
            const tpl_entry *e = &m->e[p->pos + i];
            if (s.aux == TPL_LAZY_DICT_ITEMS) {
                if (entry_pair(vm, e->key, e->val, &l->items[i]) < 0) return -1;
            } else {
                l->items[i] = s.aux == TPL_LAZY_DICT_VALUES ? e->val : e->key;
            }
        }
        l->len = k;
        p->pos += k;
        *out = l;
        return 0;
    }
    tpl_list *all;
    if (tpl_to_list(vm, s, &all) < 0) return -1;
    tpl_list *l = tpl_arena_alloc(&vm->arena, sizeof *l);
    if (!l) return oom(vm);
    if (p->rev) { /* Python's list_reverseiterator: pos is its next index + 1, made when reversed() was
                   * called; it ends (for good) when that index is past the list's length now */
        uint32_t n = 0, cap = k == UINT32_MAX ? (p->pos < all->len ? (uint32_t)p->pos : all->len) : k;
        if (!(l->items = tpl_arena_alloc(&vm->arena, (cap ? cap : 1) * sizeof *l->items))) return oom(vm);
        while (n < cap && p->pos > 0 && p->pos <= all->len) l->items[n++] = all->items[--p->pos];
        if (n < cap || !p->pos) p->pos = 0;
        l->len = l->cap = n;
        *out = l;
        return 0;
    }
    uint64_t left = p->pos < all->len ? all->len - p->pos : 0;
    if (k > left) k = (uint32_t)left;
    l->len = l->cap = k;
    {
        l->items = k ? all->items + p->pos : all->items; /* (items may be NULL when empty) */
    }
    p->pos += k;
    *out = l;
    return 0;
}

/* Produces items of p until it holds want (UINT32_MAX: all) or its source is exhausted. A stage
 * that is asked for all runs once over the rest of its source (the eager filter); else it runs on
 * as few source items as yield what is wanted, as Python's generator would. */
static int pend_fill(tpl_vm *vm, tpl_pending *p, uint32_t want)
{
    while (p->l.len < want && !p->done) {
        uint32_t need = want == UINT32_MAX ? UINT32_MAX : want - p->l.len, k;
        if (p->each) k = 1;
        else if (!p->fn || need == UINT32_MAX) k = need;
        else if (!p->per) k = 1;
        else k = need > (UINT32_MAX - 1) / p->per ? UINT32_MAX : need * p->per;
        if (p->ahead && p->fn && p->per && p->per != UINT32_MAX && k != UINT32_MAX && k < UINT32_MAX - 1)
            k += p->has_held ? 0 : 1; /* the look-ahead item */
        if (!p->fn && p->src.type == TPL_T_HOST) { /* a one-shot host iterator: its items one by one */
            for (; p->l.len < want; ) {
                tpl_value x;
                int r = tpl_hobj_next(vm, p->src, &x);
                if (r < 0) return -1;
                if (r) { p->done = true; break; }
                if (pend_push(vm, p, &x, 1) < 0) return -1;
            }
            break;
        }
        tpl_list *chunk = NULL;
        if (pend_src(vm, p, k, &chunk) < 0) return -1;
        if (chunk->len < k || (k == UINT32_MAX && !p->each)) p->done = true;
        if (p->ahead && (p->has_held || (!p->done && chunk->len))) { /* held item first, the last one held back */
            uint32_t n = chunk->len + (p->has_held ? 1 : 0) - (p->done ? 0 : 1);
            tpl_list *c = tpl_list_new(&vm->arena, n ? n : 1);
            if (!c) return oom(vm);
            if (p->has_held) c->items[c->len++] = p->held;
            for (uint32_t i = 0; c->len < n; i++) c->items[c->len++] = chunk->items[i];
            p->has_held = !p->done;
            if (p->has_held) p->held = chunk->items[chunk->len - 1];
            chunk = c;
        }
        if (!chunk->len && !(p->whole && p->fn)) break;
        if (!p->fn) {
            if (pend_push(vm, p, chunk->items, chunk->len) < 0) return -1;
            continue;
        }
        tpl_value a[4], r;
        memcpy(a, p->a, sizeof a);
        a[0] = tpl_v_list(chunk);
        if (p->fn(vm, a, &r) < 0) return -1;
        if (r.type != TPL_T_LIST) return tpl_vm_error(vm, TPL_ERR_TYPE, "bad generator stage");
        if (pend_push(vm, p, r.u.list->items, r.u.list->len) < 0) return -1;
    }
    return 0;
}

static int call_any(tpl_vm *vm, tpl_value fn, tpl_value *pos, int npos, const tpl_value *kwn, tpl_value *kwv, int nkw,
                    tpl_value *out);

/* LOOP_FILTER's stage: the items of a[0] whose test (a[1], the loop's filter function) prints
 * something, each tested as the loop takes it. */
static int loop_filter_stage(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_list *in = a[0].u.list, *kept = tpl_list_new(&vm->arena, in->len ? in->len : 1);
    if (!kept) return oom(vm);
    for (uint32_t i = 0; i < in->len; i++) {
        tpl_value r;
        if (call_any(vm, a[1], &in->items[i], 1, NULL, NULL, 0, &r) < 0) return -1;
        if (r.type == TPL_T_STR && r.len) kept->items[kept->len++] = in->items[i];
    }
    *out = tpl_v_list(kept);
    return 0;
}

/* LOOP_FILTER: the iterator of the items of src that test fn keeps. A list is read by position
 * as the loop goes (items the body or the test appends are seen, as Python's list iterator
 * does); an iterator is taken from; anything else is read into a list first. */
static int loop_filter_op(tpl_vm *vm, tpl_value src, tpl_value fn, tpl_value *out)
{
    if (!tpl_is_iter(src) && !tpl_is_big_range(src) && !(src.type == TPL_T_LIST && src.aux == TPL_LAZY_NONE)) {
        tpl_list *l;
        if (src.type == TPL_T_LOOP)
            return tpl_vm_fail(vm, TPL_EK_RUNTIME, "unsupported: a for loop over a loop object (`for x, l in loop`)");
        if (tpl_to_list(vm, src, &l) < 0) return -1;
        src = tpl_v_list(l);
    }
    tpl_value a[2] = { tpl_v_unset(), fn };
    if (tpl_pend_stage(vm, src, loop_filter_stage, a, 2, 0, TPL_LAZY_GENERATOR, out) < 0) return -1;
    tpl_pend_of(*out)->each = true;
    return 0;
}

/* The iterators among a builtin's arguments are consumed by the call: every filter, method and
 * global iterates them, except tests, `default` and `attr`, which never do, and `first`, which
 * takes one item (Jinja2's next(iter(seq))). */
static int take_iter_args(tpl_vm *vm, int id, tpl_value *pos, int npos, tpl_value *kwv, int nkw)
{
    const tpl_builtin_info *bi = tpl_lib_builtin(id);
    if (!bi || bi->kind == TPL_BK_TEST) return 0;
#define IS_NAME(lit) (bi->namelen == sizeof lit - 1 && memcmp(bi->name, lit, sizeof lit - 1) == 0)
    bool filter = bi->kind == TPL_BK_FILTER;
    if (filter && (IS_NAME("default") || IS_NAME("d") || IS_NAME("attr"))) return 0;
    uint32_t n = filter && IS_NAME("first") ? 1 : UINT32_MAX;
    /* the generators Jinja2's filters return take from their source only as they are consumed
     * (tpl_pend_stage): the source is not taken now; len() and random.choice() of an iterator
     * fail without taking from it */
    bool lazy0 = filter && (IS_NAME("map") || IS_NAME("select") || IS_NAME("reject") || IS_NAME("selectattr") ||
                            IS_NAME("rejectattr") || IS_NAME("batch") || IS_NAME("unique") || IS_NAME("items"));
    bool keep0 = lazy0 || (filter && (IS_NAME("length") || IS_NAME("count") || IS_NAME("last") || IS_NAME("random") ||
                                      IS_NAME("slice") ||
                                      /* int(it), float(it): Python's TypeError, the default: not consumed */
                                      IS_NAME("int") || IS_NAME("float") ||
                                      /* str(it): its repr, nothing taken (tpl refuses it: an address) */
                                      IS_NAME("string")));
    /* a range held without its items: the builtins that read it as Python's range does (len,
     * first, last, str, repr, json's TypeError, range.index/count); any other wants its items */
    bool big_ok = (filter && (lazy0 || IS_NAME("reverse") || IS_NAME("random") || IS_NAME("first") || IS_NAME("last") || IS_NAME("length") || IS_NAME("count") ||
                              IS_NAME("string") || IS_NAME("pprint") || IS_NAME("tojson") ||
                              /* the filters of text, which take str(value) */
                              IS_NAME("e") || IS_NAME("escape") || IS_NAME("forceescape") || IS_NAME("safe") ||
                              IS_NAME("wordcount") || IS_NAME("upper") || IS_NAME("lower") || IS_NAME("capitalize") ||
                              IS_NAME("title") || IS_NAME("trim") || IS_NAME("center") || IS_NAME("striptags"))) ||
                  (bi->kind == TPL_BK_LIST && (IS_NAME("index") || IS_NAME("count")));
    bool big_args = filter && IS_NAME("format"); /* "%s"|format(r): printed */
    /* the filters Jinja2 runs list(), sorted() or len() in: OverflowError past 2**63 items */
    bool big_len = filter && (IS_NAME("list") || IS_NAME("sort") || IS_NAME("slice"));
#undef IS_NAME
    for (int i = 0; i < npos; i++)
        if (tpl_is_big_range(pos[i]) && !((big_ok && i == 0) || (big_args && i > 0)))
            return big_len && i == 0 ? tpl_range_items_needed(vm, pos[i]) : tpl_range_too_large(vm);
    for (int i = 0; i < nkw; i++)
        if (tpl_is_big_range(kwv[i])) return tpl_range_too_large(vm);
    for (int i = keep0 ? 1 : 0; i < npos; i++)
        if (tpl_is_iter(pos[i]) && take_iter(vm, &pos[i], n) < 0) return -1;
    for (int i = 0; i < nkw; i++)
        if (tpl_is_iter(kwv[i]) && take_iter(vm, &kwv[i], UINT32_MAX) < 0) return -1;
    return 0;
}

/* ------------------------------------------------------------------ *args / **kwargs (Jinja) */

/* ARGS_STAR: the items of *v appended to the positional-argument list *args (a list the call's
 * BUILD_TUPLE just made: changed in place). Python iterates v (an iterator is consumed). */
static int args_star(tpl_vm *vm, tpl_value *args, tpl_value v)
{
    tpl_list *items;
    if (args->type != TPL_T_LIST) return tpl_vm_error(vm, TPL_ERR_TYPE, "bad argument list");
    if (v.type == TPL_T_HOST && tpl_hobj_as_iter(vm, &v) < 0) return -1;
    if (tpl_is_iter(v) && take_iter(vm, &v, UINT32_MAX) < 0) return -1;
    if (v.type == TPL_T_STR || v.type == TPL_T_LIST || v.type == TPL_T_MAP || v.type == TPL_T_UNDEF || v.type == TPL_T_HOST) {
        if (tpl_to_list(vm, v, &items) < 0) return -1;
    } else {
        return tpl_vm_error(vm, TPL_ERR_TYPE, "Value after * must be an iterable, not %s", tpl_type_name(vm, v));
    }
    /* a new list (the one below may be any value a .tplb put there: never changed) */
    const tpl_list *old = args->u.list;
    if ((uint64_t)old->len + items->len > UINT32_MAX / 2) return tpl_vm_error(vm, TPL_ERR_LIMIT, "too many arguments");
    tpl_list *l = tpl_list_new(&vm->arena, old->len + items->len);
    if (!l) return oom(vm);
    if (old->len) memcpy(l->items, old->items, old->len * sizeof *l->items);
    if (items->len) memcpy(l->items + old->len, items->items, items->len * sizeof *l->items);
    l->len = old->len + items->len;
    *args = tpl_v_list(l);
    return 0;
}

/* ARGS_DSTAR: the items of **v added to the keyword-argument dict *kw (the call's BUILD_MAP:
 * changed in place), with Python's TypeErrors. */
static int args_dstar(tpl_vm *vm, tpl_value *kw, tpl_value v)
{
    if (kw->type != TPL_T_MAP) return tpl_vm_error(vm, TPL_ERR_TYPE, "bad argument dict");
    if (v.type == TPL_T_UNDEF) return tpl_stdlib.undefined_error(vm, v); /* (Python asks it for keys()) */
    bool erb = vm->p && vm->p->opts.syntax == TPL_SYNTAX_ERB;
    if (v.type != TPL_T_MAP && erb)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "no implicit conversion of %s into Hash (TypeError)",   /* (nil, true, false: their inspect) */
                            v.type == TPL_T_NONE ? "nil" : v.type == TPL_T_BOOL ? (v.u.i ? "true" : "false") : tpl_rb_class_name(v));
    if (v.type != TPL_T_MAP)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "jinja2.runtime.Context.call() argument after ** must be a mapping, not %s",
                            tpl_type_name(vm, v));
    const tpl_map *m = v.u.map, *old = kw->u.map;
    /* a new dict (the one below may be any value a .tplb put there: never changed) */
    tpl_map *out = tpl_map_new(&vm->arena, old->len + m->len);
    if (!out) return oom(vm);
    /* (ERB: Ruby's keyword Hash keys by eql?: f(**h, a: 2) of h = {"a" => 1} passes "a" and :a) */
    out->eql = erb;
    for (uint32_t i = 0; i < old->len; i++)
        if (!tpl_map_set(&vm->arena, out, old->e[i].key, old->e[i].val)) return oom(vm);
    *kw = tpl_v_map(out);
    for (uint32_t i = 0; i < m->len; i++) {
        tpl_value k = m->e[i].key;
        /* (ERB: any key, as Ruby 3.1's **opts takes; call_macro binds a keyword parameter from a Symbol only) */
        if (k.type != TPL_T_STR && !erb) return tpl_vm_error(vm, TPL_ERR_TYPE, "keywords must be strings");
        if (tpl_map_get(kw->u.map, k) && !erb)   /* (ERB: a later one's value in the earlier one's place, as Ruby's) */
            return tpl_vm_error(vm, TPL_ERR_TYPE, "jinja2.runtime.Context.call() got multiple values for keyword argument '%.*s'",
                                k.len > 200 ? 200 : (int)k.len, k.u.s);
        if (!tpl_map_set(&vm->arena, kw->u.map, k, m->e[i].val)) return oom(vm);
    }
    return 0;
}

/* A call whose argument word is TPL_ARGW_DYN: the positional list and keyword dict on top of
 * the stack (sp[-2], sp[-1]) become its arguments there; *npos, *nkw and *kwn say what they are. */
static int spread_args(tpl_vm *vm, tpl_value **spp, const tpl_value *stack_end, int *npos, int *nkw,
                       const tpl_value **kwn)
{
    tpl_value *sp = *spp - 2;
    if (sp[0].type != TPL_T_LIST || sp[1].type != TPL_T_MAP) return tpl_vm_error(vm, TPL_ERR_TYPE, "bad argument list");
    const tpl_list *l = sp[0].u.list;
    const tpl_map *m = sp[1].u.map;
    if ((size_t)(stack_end - sp) <= (size_t)l->len + m->len) return tpl_vm_error(vm, TPL_ERR_LIMIT, "operand stack overflow");
    tpl_value *names = NULL;
    if (m->len && !(names = tpl_arena_alloc(&vm->arena, m->len * sizeof *names))) return oom(vm);
    for (uint32_t i = 0; i < l->len; i++) sp[i] = l->items[i];
    for (uint32_t i = 0; i < m->len; i++) {
        names[i] = m->e[i].key;
        sp[l->len + i] = m->e[i].val;
    }
    *npos = (int)l->len;
    *nkw = (int)m->len;
    *kwn = names;
    *spp = sp + l->len + m->len;
    return 0;
}

static int contains(tpl_vm *vm, tpl_value item, tpl_value seq, bool *res);
int tpl_vm_contains(tpl_vm *vm, tpl_value item, tpl_value seq, bool *res) { return contains(vm, item, seq, res); }

static int contains(tpl_vm *vm, tpl_value item, tpl_value seq, bool *res)
{
    if (__builtin_expect(seq.type == TPL_T_HOST, 0) && tpl_hobj_as_iter(vm, &seq) < 0) return -1;
    if (__builtin_expect(tpl_is_view(seq), 0)) { /* a view: its dict as it is now, read in place */
        tpl_map *m = tpl_view_dict(seq);
        if (seq.aux == TPL_LAZY_DICT_KEYS) /* (dict_keys.__contains__: the dict's) */
            return contains(vm, item, tpl_v_map(m), res);
        if (seq.aux == TPL_LAZY_DICT_ITEMS) { /* (key, value): the key's value, == value; else False */
            *res = false;
            if (tpl_vm_strict_undef(vm, item)) return tpl_stdlib.undefined_error(vm, item);
            if (!(item.type == TPL_T_LIST && (item.flags & TPL_F_TUPLE) && !item.aux && item.u.list->len == 2)) return 0;
            tpl_value k = item.u.list->items[0], *hit;
            if ((k.type == TPL_T_LIST || k.type == TPL_T_MAP || k.type == TPL_T_HOST) && tpl_vm_check_hashable(vm, k) < 0)
                return -1;
            if (tpl_vm_map_get(vm, m, k, &hit) < 0) return -1;
            return hit ? tpl_vm_item_equal(vm, *hit, item.u.list->items[1], res) : 0;
        }
        *res = false; /* dict_values: each value, as a list's */
        if (tpl_vm_strict_undef(vm, item) && m->len) return tpl_stdlib.undefined_error(vm, item);
        for (uint32_t i = 0; i < m->len && !*res; i++)
            if (tpl_vm_item_equal(vm, item, m->e[i].val, res) < 0) return -1;
        return 0;
    }
    if (__builtin_expect(tpl_is_view(item), 0) && view_peek(vm, item) < 0) return -1; /* (live views) */
    if (tpl_pend_of(seq)) { /* a lazy one: item by item */
        *res = false;
        while (!*res) {
            tpl_value one = seq;
            if (take_iter(vm, &one, 1) < 0) return -1;
            if (!one.u.list->len) break;
            if (tpl_vm_item_equal(vm, item, one.u.list->items[0], res) < 0) return -1;
        }
        return 0;
    }
    if (tpl_is_iter(seq)) {
        /* `x in it` consumes the iterator up to the first equal item */
        if (tpl_vm_dict_iter_sync(vm, seq) < 0) return -1;
        uint32_t i = 0;
        *res = false;
        for (; i < seq.u.list->len && !*res; i++)
            if (tpl_vm_item_equal(vm, item, seq.u.list->items[i], res) < 0) return -1;
        return take_iter(vm, &seq, i);
    }
    switch (seq.type) {
    case TPL_T_STR:
        if (item.type != TPL_T_STR) {
            /* (str.__contains__ reads no method of its argument: an Undefined, strict too, is the
             * TypeError, as Jinja2's) */
            return tpl_vm_error(vm, TPL_ERR_TYPE, "'in <string>' requires string as left operand, not %s", tpl_type_name(vm, item));
        }
        *res = item.len == 0 || (item.len <= seq.len && memmem(seq.u.s, seq.len, item.u.s, item.len) != NULL);
        return 0;
    case TPL_T_LIST:
        /* StrictUndefined.__eq__ (reached by the list's comparisons) and __hash__ raise */
        if (tpl_vm_strict_undef(vm, item) && (seq.u.list->len || (seq.flags & TPL_F_RANGE_BIG)))
            return tpl_stdlib.undefined_error(vm, item);
        if (seq.flags & TPL_F_RANGE_BIG) {
            mpz_t at;
            mpz_init(at);
            *res = tpl_range_find(seq, item, at);
            mpz_clear(at);
            return 0;
        }
        for (uint32_t i = 0; i < seq.u.list->len; i++) {
            bool eq = false;
            if (tpl_vm_item_equal(vm, item, seq.u.list->items[i], &eq) < 0) return -1;
            if (eq) { *res = true; return 0; }
        }
        *res = false;
        return 0;
    case TPL_T_MAP:
        if (seq.flags & TPL_F_NS) /* a Namespace has no __contains__ nor __iter__ */
            return tpl_vm_error(vm, TPL_ERR_TYPE, "argument of type '%s' is not iterable", tpl_type_name(vm, seq));
        if (tpl_vm_strict_undef(vm, item))
            return tpl_stdlib.undefined_error(vm, item);
        if ((item.type == TPL_T_LIST || item.type == TPL_T_MAP || item.type == TPL_T_HOST) && tpl_vm_check_hashable(vm, item) < 0)
            return -1;
        tpl_value *hit;
        if (tpl_vm_map_get(vm, seq.u.map, item, &hit) < 0) return -1;
        *res = hit != NULL;
        return 0;
    case TPL_T_UNDEF:
        if (tpl_vm_strict_undef(vm, seq)) return tpl_stdlib.undefined_error(vm, seq);
        *res = false;
        return 0;
    default:
        return tpl_vm_error(vm, TPL_ERR_TYPE, "argument of type '%s' is not iterable", tpl_type_name(vm, seq));
    }
}

int tpl_range_too_large(tpl_vm *vm)
{
    return tpl_vm_error(vm, TPL_ERR_LIMIT, "range too large");
}

int tpl_range_items_needed(tpl_vm *vm, tpl_value r)
{
    mpz_t n;
    tpl_range_len(n, tpl_range_params(r));
    bool fits = mpz_cmp_ui(n, 0) >= 0 && mpz_sizeinbase(n, 2) <= 63;
    mpz_clear(n);
    if (!fits) return tpl_vm_fail(vm, TPL_EK_OVERFLOW, "Python int too large to convert to C ssize_t");
    return tpl_range_too_large(vm);
}

int tpl_range_item(tpl_vm *vm, tpl_value r, tpl_value index, bool *found, tpl_value *out)
{
    const tpl_value *p = tpl_range_params(r);
    mpz_t n, i, z;
    tpl_range_len(n, p);
    tpl_big_get(i, index);
    if (mpz_sgn(i) < 0) mpz_add(i, i, n);
    *found = mpz_sgn(i) >= 0 && mpz_cmp(i, n) < 0;
    int rc = 0;
    if (*found) { /* start + i * step */
        tpl_big_get(z, p[2]);
        mpz_mul(i, i, z);
        mpz_clear(z);
        tpl_big_get(z, p[0]);
        mpz_add(i, i, z);
        mpz_clear(z);
        if (!tpl_big_value(&vm->arena, i, out)) rc = oom(vm);
    }
    mpz_clear(n);
    mpz_clear(i);
    return rc;
}

int tpl_make_range(tpl_vm *vm, int64_t start, int64_t stop, int64_t step, uint64_t count, tpl_value *out)
{
    return tpl_make_range_v(vm, tpl_v_int(start), tpl_v_int(stop), tpl_v_int(step), count, out);
}

int tpl_make_range_v(tpl_vm *vm, tpl_value start, tpl_value stop, tpl_value step, uint64_t count, tpl_value *out)
{
    if (count > TPL_RANGE_ITEMS_MAX) { /* no items: (start, stop, step) only */
        tpl_list *l = tpl_list_new(tpl_vm_arena(vm), 3);
        if (!l) return oom(vm);
        l->items[0] = start;
        l->items[1] = stop;
        l->items[2] = step;
        l->len = l->cap = 0;
        *out = tpl_v_list(l);
        out->aux = TPL_LAZY_RANGE;
        out->flags = TPL_F_RANGE_BIG;
        return 0;
    }
    /* the items, then (start, stop, step) past them for printing (tpl_range_params) */
    tpl_list *l = tpl_list_new(tpl_vm_arena(vm), (uint32_t)count + 3);
    if (!l)
        return oom(vm);
    if (start.type == TPL_T_INT && step.type == TPL_T_INT &&
        (count == 0 || ((step.u.i >= 0 ? (uint64_t)step.u.i : 0 - (uint64_t)step.u.i) <= (uint64_t)INT64_MAX / count &&
                        !__builtin_add_overflow(start.u.i, step.u.i * (int64_t)(count - 1), &(int64_t){0})))) {
        int64_t x = start.u.i; /* every item fits in int64 */
        for (uint64_t i = 0; i < count; i++) {
            l->items[i] = tpl_v_int(x);
            x = (int64_t)((uint64_t)x + (uint64_t)step.u.i);
        }
    } else { /* an item past int64: Python's ints are unbounded */
        mpz_t x, d;
        tpl_big_get(x, start);
        tpl_big_get(d, step);
        int rc = 0;
        for (uint64_t i = 0; i < count && rc == 0; i++) {
            if (!tpl_big_value(tpl_vm_arena(vm), x, &l->items[i])) rc = oom(vm);
            mpz_add(x, x, d);
        }
        mpz_clear(x);
        mpz_clear(d);
        if (rc < 0) return rc;
    }
    l->items[count] = start;
    l->items[count + 1] = stop;
    l->items[count + 2] = step;
    l->len = l->cap = (uint32_t)count;
    *out = tpl_v_list(l);
    out->aux = TPL_LAZY_RANGE;
    return 0;
}

/* Python slicing with None for missing parts. */
static int do_slice(tpl_vm *vm, tpl_value obj, tpl_value a, tpl_value b, tpl_value c, tpl_value *out)
{
    tpl_list *src = NULL;
    int64_t len;
    if (obj.type == TPL_T_LIST && obj.aux > TPL_LAZY_RANGE) /* dict views, iterators */
        return tpl_vm_error(vm, TPL_ERR_TYPE, "'%s' object is not subscriptable", tpl_type_name(vm, obj));
    if (obj.type == TPL_T_LIST) {
        src = obj.u.list;
        len = src->len;
        if (obj.flags & TPL_F_RANGE_BIG) { /* the slice is a range of the range's own parameters */
            mpz_t n;
            tpl_range_len(n, tpl_range_params(obj));
            bool fits = mpz_fits_slong_p(n) && sizeof(long) == sizeof(int64_t);
            len = fits ? (int64_t)mpz_get_si(n) : 0;
            mpz_clear(n);
            if (!fits) return tpl_range_too_large(vm);
        }
    } else if (obj.type == TPL_T_STR) len = (int64_t)tpl_utf8_len(obj.u.s, obj.len);
    else if (obj.type == TPL_T_UNDEF) {
        if (chainable_undefined(vm)) { *out = obj; return 0; }
        return tpl_stdlib.undefined_error(vm, obj);
    } else return tpl_vm_error(vm, TPL_ERR_TYPE, "'%s' object is not subscriptable", tpl_type_name(vm, obj));
    int64_t step = 1, start, stop;
    if (c.type != TPL_T_NONE) {
        if (!as_slice_index(c, &step)) return tpl_vm_error(vm, TPL_ERR_TYPE, "slice indices must be integers or None or have an __index__ method");
        if (step == 0) return tpl_vm_error(vm, TPL_ERR_VALUE, "slice step cannot be zero");
    }
    int64_t lo = step < 0 ? -1 : 0, hi = step < 0 ? len - 1 : len;
    if (a.type == TPL_T_NONE) start = step < 0 ? hi : lo;
    else {
        if (!as_slice_index(a, &start)) return tpl_vm_error(vm, TPL_ERR_TYPE, "slice indices must be integers or None or have an __index__ method");
        if (start < 0) { start += len; if (start < lo) start = lo; }
        else if (start > hi) start = hi;
    }
    if (b.type == TPL_T_NONE) stop = step < 0 ? lo : hi;
    else {
        if (!as_slice_index(b, &stop)) return tpl_vm_error(vm, TPL_ERR_TYPE, "slice indices must be integers or None or have an __index__ method");
        if (stop < 0) { stop += len; if (stop < lo) stop = lo; }
        else if (stop > hi) stop = hi;
    }
    /* unsigned: a step of any size (even INT64_MIN) divides without overflow; start + i * step
     * stays in range, as i * |step| < len whenever i > 0 */
    int64_t count = 0;
    if (step > 0 && stop > start) count = (int64_t)(((uint64_t)(stop - start) - 1) / (uint64_t)step + 1);
    if (step < 0 && start > stop) count = (int64_t)(((uint64_t)(start - stop) - 1) / (0 - (uint64_t)step) + 1);
    if (obj.aux == TPL_LAZY_RANGE) { /* a slice of a range is a range: start + i * step of the range */
        const tpl_value *p = tpl_range_params(obj);
        mpz_t z0, zs, r[3];
        tpl_big_get(z0, p[0]);
        tpl_big_get(zs, p[2]);
        int64_t ix[3] = {start, stop, step};
        tpl_value rv[3];
        bool ok = true;
        for (int k = 0; k < 3; k++) {
            if (k == 2 && c.type == TPL_T_BIGINT) tpl_big_get(r[k], c); /* the step itself, not saturated */
            else { mpz_init(r[k]); mpz_set_si(r[k], (long)ix[k]); }
            mpz_mul(r[k], r[k], zs);
            if (k < 2) mpz_add(r[k], r[k], z0);
            ok = ok && tpl_big_value(&vm->arena, r[k], &rv[k]);
            mpz_clear(r[k]);
        }
        mpz_clear(z0);
        mpz_clear(zs);
        if (!ok) return oom(vm);
        return tpl_make_range_v(vm, rv[0], rv[1], rv[2], (uint64_t)count, out);
    }
    if (obj.type == TPL_T_LIST) {
        tpl_list *l = tpl_list_new(&vm->arena, (uint32_t)count);
        if (!l) return oom(vm);
        for (int64_t i = 0; i < count; i++) l->items[i] = src->items[start + i * step];
        l->len = (uint32_t)count;
        *out = tpl_v_list(l);
        out->flags = obj.flags & TPL_F_TUPLE;
        return 0;
    }
    /* strings: by code point */
    if (step == 1) {
        size_t b0 = tpl_utf8_offset(obj.u.s, obj.len, (size_t)start);
        size_t b1 = count ? tpl_utf8_offset(obj.u.s, obj.len, (size_t)stop) : b0;
        *out = tpl_v_str(obj.u.s + b0, b1 - b0);
        out->flags = obj.flags & TPL_F_SAFE; /* a slice of Markup is Markup */
        return 0;
    }
    tpl_list *chars;
    if (tpl_to_list(vm, obj, &chars) < 0) return -1;
    tpl_sb sb;
    tpl_sb_init(&sb, &vm->arena);
    for (int64_t i = 0; i < count; i++) {
        const tpl_value *ch = &chars->items[start + i * step];
        tpl_sb_put(&sb, ch->u.s, ch->len);
    }
    if (sb.failed) return tpl_vm_sb_error(vm, &sb, "while getting the repr of an object");
    *out = tpl_sb_value(&sb);
    out->flags = obj.flags & TPL_F_SAFE;
    return 0;
}

/* ------------------------------------------------------------------ globals */

/* The render's globals' value of name nm (tpl_render_set_globals_val), or NULL. */
static inline tpl_value *globals_find(tpl_vm *vm, const tpl_name *nm)
{
    return vm->globals.type == TPL_T_MAP ? tpl_map_probe_str(vm->globals.u.map, nm->s.u.s, nm->s.len, nm->hash) : NULL;
}

/* The state's value of name nm, else the globals', or NULL. */
static inline tpl_value *state_find(tpl_vm *vm, const tpl_name *nm)
{
    tpl_value *hit = vm->state.type == TPL_T_MAP ? map_find_name(vm, vm->state.u.map, nm) : NULL;
    return hit ? hit : globals_find(vm, nm);
}

static int load_global(tpl_vm *vm, const tpl_name *nm, tpl_value *out)
{
    tpl_value *hit = state_find(vm, nm);
    if (hit) { *out = *hit; return 0; }
    if (tpl_stdlib.ext_global(vm, nm->s.u.s, nm->s.len, out)) return 0; /* the library's own (`call`) */
    int id = nm->resolved ? nm->global : tpl_stdlib.find(TPL_BK_GLOBAL, nm->s.u.s, nm->s.len);
    if (id == tpl_stdlib.id_range && vm->p->opts.hf) id = tpl_stdlib.id_range_hf; /* the sandbox's safe_range */
    if (id >= 0 && (vm->p->opts.hf || (id != tpl_stdlib.id_raise_exception && id != tpl_stdlib.id_strftime_now))) {
        tpl_value f = { 0 };
        f.type = TPL_T_FUNC;
        f.aux = (uint16_t)id;
        *out = f;
        return 0;
    }
    /* a new Undefined object at each lookup, as Jinja2's: its name copied, so a variable assigned
     * from another holds the same object (`is sameas`: stdlib/jinja/tests.c t_sameas) */
    char *name = tpl_arena_strdup(&vm->arena, nm->s.u.s, nm->s.len);
    if (!name) return oom(vm);
    *out = undef_named(name, nm->s.len, TPL_UNDEF_NAME, 0);
    return 0;
}

/* ------------------------------------------------------------------ calls */

static int run(tpl_vm *vm, uint32_t pc, uint32_t slot_base, uint32_t outer_base, uint32_t npre, tpl_value *result);
static int interp(tpl_vm *vm, uint32_t pc, uint32_t slot_base, uint32_t outer_base, uint32_t npre, tpl_value *result,
                  tpl_native_frame *st);

int tpl_vm_call_builtin(tpl_vm *vm, int id, tpl_value *pos, int npos, const tpl_value *kwn, tpl_value *kwv, int nkw,
                        tpl_value *out)
{
    return call_builtin(vm, id, pos, npos, kwn, kwv, nkw, out);
}

int tpl_vm_method_find(tpl_vm *vm, tpl_builtin_kind kind, const char *name, size_t n)
{
    if (n > 0xFFFF) return tpl_stdlib.find(kind, name, n);
    uintptr_t h = ((uintptr_t)name >> 3) * 31u + (uintptr_t)kind;
    struct tpl_method_memo *e = &vm->method_memo[h % (sizeof vm->method_memo / sizeof vm->method_memo[0])];
    if (e->gen == vm->gen && e->name == name && e->len == n && e->kind == kind) return e->id;
    int id = tpl_stdlib.find(kind, name, n);
    e->name = name;
    e->gen = vm->gen;
    e->len = (uint16_t)n;
    e->kind = (uint8_t)kind;
    e->id = (int16_t)id;
    return id;
}

void tpl_vm_init_builtins(tpl_vm *vm)
{
    vm->eq_host = (tpl_eq_host){ host_eq, host_find, vm };
    memset(vm->bind_lo, BIND_UNKNOWN, sizeof vm->bind_lo);
}

/* bind_lo/bind_hi of builtin id from its signature, the first time a render context calls it. */
static void bind_range(tpl_vm *vm, int id)
{
    tpl_builtin_sig sig;
    vm->bind_lo[id] = 1;
    vm->bind_hi[id] = 0;
    if (!tpl_stdlib.signature(id, &sig) || sig.varargs >= 0 || sig.varkw >= 0) return;
    uint8_t lo = 0;
    for (int i = 0; i < sig.nparams; i++)
        if (!sig.optional[i]) lo = (uint8_t)(i + 1);
    vm->bind_lo[id] = lo;
    vm->bind_hi[id] = sig.nparams;
}

/* ADDS of plain strings: *out = args[0] + ... + args[a-1] (total bytes; may append in place). */
static int concat_plain(tpl_vm *vm, const tpl_value *args, uint32_t a, size_t total, tpl_value *out)
{
    if (total > UINT32_MAX) return tpl_vm_error(vm, TPL_ERR_LIMIT, "string too long");
    size_t off;
    int hit;
    char *s = cat_begin(vm, args[0], total, &off, &hit);
    if (!s) return oom(vm);
    for (uint32_t i = off ? 1 : 0; i < a; i++) { memcpy(s + off, args[i].u.s, args[i].len); off += args[i].len; }
    cat_end(vm, s, total, hit);
    *out = tpl_v_str(s, total);
    return 0;
}

/* CONCAT: args[0] = the concatenation of the Python str() of args[0..a-1]. Ints are written
 * straight into the result (no string of their own); the result may append in place (cat_begin). */
static int concat_py(tpl_vm *vm, tpl_value *args, uint32_t a)
{
    size_t total = 0;
    for (uint32_t i = 0; i < a; i++) {
        if (args[i].type == TPL_T_INT) { total += decimal_len(abs_u64(args[i].u.i)) + (args[i].u.i < 0); continue; }
        if (to_str_py(vm, args[i], &args[i]) < 0) return -1;
        total += args[i].len;
    }
    if (total > UINT32_MAX) return tpl_vm_error(vm, TPL_ERR_LIMIT, "string too long");
    size_t off;
    int hit;
    char *s = cat_begin(vm, args[0], total, &off, &hit);
    if (!s) return oom(vm);
    for (uint32_t i = off ? 1 : 0; i < a; i++) {
        if (args[i].type == TPL_T_INT) {
            if (args[i].u.i < 0) s[off++] = '-';
            off += put_decimal(s + off, abs_u64(args[i].u.i));
        } else {
            memcpy(s + off, args[i].u.s, args[i].len);
            off += args[i].len;
        }
    }
    cat_end(vm, s, total, hit);
    args[0] = tpl_v_str(s, total);
    return 0;
}

/* SWITCH_STR at pc on string v: the target of the JUMP for the tuple item v equals (the verifier
 * checked that n + 1 JUMPs follow), else of the first JUMP. */
static inline uint32_t switch_target(const uint32_t *code, uint32_t pc, const tpl_list *l, tpl_value v)
{
    uint32_t i = 0;
    for (; i < l->len; i++)
        if (l->items[i].len == v.len && tpl_mem_eq(l->items[i].u.s, v.u.s, v.len)) break;
    return TPL_INSN_A(code[pc + 1 + (i < l->len ? i + 1 : 0)]);
}

/* The one-shot host iterators (TPL_HOST_ITERATOR: a Python generator) among a builtin's
 * arguments as the VM's iterators of their items (tpl_hobj_as_iter), which the builtin takes
 * from as Jinja2's filters take from a generator (|first one item). Left as they are: the value
 * of the text filters (str(obj)) and of |length and |count (the len callback: Python's
 * TypeError); |last and |random of one are Python's TypeErrors naming its type, as
 * reversed(it) and random.choice(it) raise. */
static int host_iter_args(tpl_vm *vm, int id, tpl_value *pos, int npos, tpl_value *kwv, int nkw)
{
    for (int i = 0; i < npos; i++) {
        if (pos[i].type != TPL_T_HOST || !(tpl_hobj_numeric(pos[i]) & TPL_HOST_ITERATOR)) continue;
        const tpl_builtin_info *bi = tpl_lib_builtin(id);
        bool filter = bi && bi->kind == TPL_BK_FILTER;
#define IS_NAME(lit) (bi->namelen == sizeof lit - 1 && memcmp(bi->name, lit, sizeof lit - 1) == 0)
        if (i == 0 && filter) {
            if (IS_NAME("e") || IS_NAME("escape") || IS_NAME("forceescape") || IS_NAME("string"))
                continue;
            if (IS_NAME("length") || IS_NAME("count")) { /* (Python's len(): its TypeError) */
                int64_t n;
                if (tpl_hobj_len(vm, pos[0], &n) < 0) return -1;
                continue;
            }
            if (IS_NAME("last"))
                return tpl_vm_error(vm, TPL_ERR_TYPE, "'%s' object is not reversible", tpl_type_name(vm, pos[0]));
            if (IS_NAME("random")) {
                int64_t n;
                int rc = tpl_hobj_len(vm, pos[0], &n);
                if (rc < 0) return -1;
                if (rc > 0) return tpl_vm_error(vm, TPL_ERR_TYPE, "object of type '%s' has no len()", tpl_type_name(vm, pos[0]));
            }
        }
#undef IS_NAME
        if (tpl_hobj_as_iter(vm, &pos[i]) < 0) return -1;
    }
    for (int i = 0; i < nkw; i++)
        if (kwv[i].type == TPL_T_HOST && tpl_hobj_as_iter(vm, &kwv[i]) < 0) return -1;
    return 0;
}

static int call_builtin(tpl_vm *vm, int id, tpl_value *pos, int npos, const tpl_value *kwn, tpl_value *kwv, int nkw,
                        tpl_value *out)
{
    tpl_value a[TPL_MAX_PARAMS];
    if (__builtin_expect(vm->has_host, 0) && host_iter_args(vm, id, pos, npos, kwv, nkw) < 0) return -1;
    /* iterators (consumed) and ranges held without their items (most builtins want the items) */
    for (int i = 0; i < npos; i++)
        if (__builtin_expect(pos[i].type == TPL_T_LIST && (pos[i].aux || (pos[i].flags & TPL_F_RANGE_BIG)), 0)) {
            if (tpl_is_view(pos[i])) { /* a dict view: its items as the dict is now */
                if (tpl_vm_view_sync(vm, pos[i]) < 0) return -1;
                continue;
            }
            if (!tpl_is_iter(pos[i]) && !(pos[i].flags & TPL_F_RANGE_BIG)) continue;
            if (take_iter_args(vm, id, pos, npos, kwv, nkw) < 0) return -1;
            break;
        }
    for (int i = 0; i < nkw; i++) {
        if (__builtin_expect(tpl_is_big_range(kwv[i]), 0) && (!tpl_lib_builtin(id) || tpl_lib_builtin(id)->kind != TPL_BK_TEST))
            return tpl_range_too_large(vm);
        if (__builtin_expect(tpl_is_view(kwv[i]), 0) && tpl_vm_view_sync(vm, kwv[i]) < 0) return -1;
    }
    if (__builtin_expect(vm->has_host, 0)) {
        /* escape/e/forceescape/string take str(obj) of a host object (markupsafe's escape and
         * soft_str), not its items: its str() as a string value; the escapes its own HTML first
         * (__html__: the html callback), as markupsafe's escape */
        int h = 1;
        if (npos > 0 && pos[0].type == TPL_T_HOST && id != tpl_stdlib.id_string &&
            (id == tpl_stdlib.id_escape || id == tpl_stdlib.id_e || id == tpl_stdlib.id_forceescape) &&
            (h = tpl_hobj_html(vm, pos[0], &pos[0])) < 0)
            return -1;
        if (h && npos > 0 && pos[0].type == TPL_T_HOST &&
            (id == tpl_stdlib.id_escape || id == tpl_stdlib.id_e || id == tpl_stdlib.id_forceescape ||
             id == tpl_stdlib.id_string)) {
            tpl_sb b;
            tpl_sb_init(&b, &vm->arena);
            tpl_hobj_print(&b, pos[0], false);
            if (b.failed) return tpl_vm_sb_error(vm, &b, "while getting the repr of an object"); /* (a failing str callback set the error first) */
            pos[0] = tpl_v_str(b.p ? b.p : "", b.len);
        }
        if (tpl_hobj_resolve_args(vm, pos, npos) < 0 || tpl_hobj_resolve_args(vm, kwv, nkw) < 0) return -1;
    }
    if (nkw == 0 && (unsigned)id < tpl_stdlib.nbuiltins && vm->bind_lo[id] == BIND_UNKNOWN) bind_range(vm, id);
    if (nkw == 0 && (unsigned)id < tpl_stdlib.nbuiltins && npos >= vm->bind_lo[id] && npos <= vm->bind_hi[id]) {
        /* what tpl_builtin_bind does for such a call, without parsing the signature */
        for (int i = 0; i < npos; i++) a[i] = pos[i];
        for (int i = npos; i < vm->bind_hi[id]; i++) a[i] = tpl_v_unset(); /* one per parameter */
    } else if (tpl_stdlib.bind(vm, id, pos, npos, kwn, kwv, nkw, a) < 0) {
        return -1;
    }
    const tpl_builtin_info *bi = tpl_lib_builtin(id);
    if (bi->kind == TPL_BK_STR && a[0].type == TPL_T_STR && (a[0].flags & TPL_F_SAFE)) return tpl_stdlib.markup_method(vm, id, a, out);
    return bi->fn(vm, a, out);
}

/* A macro's name in messages as Jinja2 writes it: 'name', or None for a call block's caller. */
#define MNAME(nm) (nm)->s.len ? "'" : "", (nm)->s.len ? (int)(nm)->s.len : 4, (nm)->s.len ? (nm)->s.u.s : "None", (nm)->s.len ? "'" : ""

/* Whether keyword name takes a parameter of the macro (one not given by position) or its caller. */
static bool kw_param(const tpl_macro_desc *d, const tpl_list *params, int npos, tpl_value name)
{
    for (uint32_t i = 0; i < d->nparams; i++)
        if (tpl_equal(params->items[i], name)) return (int)i >= npos;
    return name.len == 6 && memcmp(name.u.s, "caller", 6) == 0 && d->caller_slot >= 0;
}

/* Closes cl over slots [base, top) of the frame ending: a copy of only the slots it reads there
 * (tpl_program.cl_need: its defining frame's, and its template level's when that lies in the
 * frame), when the program knows them and that is smaller than the whole; else *whole, one copy
 * of every slot shared by the closures closed then (made on first use). */
static int close_one(tpl_vm *vm, tpl_closure *cl, uint32_t base, uint32_t top, const tpl_value **whole)
{
    uint32_t n = top > base ? top - base : 0;
    const tpl_program *p = cl->prog ? cl->prog : vm->p;
    size_t m = (size_t)(cl->d - p->macros);
    cl->closed_lo = base;
    cl->nclosed = n;
    cl->next_open = NULL;
    cl->closed_idx = NULL;
    cl->nidx = 0;
    if (p->cl_need_off && m < p->nmacros && cl->outer_base >= base) {
        const uint32_t *nd = p->cl_need + p->cl_need_off[m];
        uint32_t nn = p->cl_need_off[m + 1] - p->cl_need_off[m], k = 0;
        if (nn < n / 2 + 1) {
            uint32_t *idx = tpl_arena_alloc(&vm->arena, (nn ? nn : 1) * sizeof *idx);
            tpl_value *val = tpl_arena_alloc(&vm->arena, (nn ? nn : 1) * sizeof *val);
            if (!idx || !val) return oom(vm);
            for (uint32_t i = 0; i < nn; i++) {
                uint32_t s = nd[i] & 0x7FFFFFFFu, fb = nd[i] >> 31 ? cl->root_base : cl->outer_base;
                if (nd[i] >> 31 && cl->root_base < base) continue; /* (its template level outlives the frame) */
                uint64_t at = (uint64_t)(fb - base) + s;
                if (at >= n) continue; /* (never read: out of range there) */
                /* (ascending: insertion, the template level's and the defining frame's interleave) */
                uint32_t j = k;
                while (j && idx[j - 1] >= at) j--;
                if (j < k && idx[j] == at) continue;
                memmove(idx + j + 1, idx + j, (k - j) * sizeof *idx);
                idx[j] = (uint32_t)at;
                k++;
            }
            for (uint32_t i = 0; i < k; i++) val[i] = vm->slots[base + idx[i]];
            cl->closed = val;
            cl->closed_idx = idx;
            cl->nidx = k;
            return 0;
        }
    }
    if (!*whole) {
        tpl_value *copy = tpl_arena_alloc(&vm->arena, (n ? n : 1) * sizeof *copy); /* (never NULL: closed) */
        if (!copy) return oom(vm);
        if (n) memcpy(copy, vm->slots + base, n * sizeof *copy);
        *whole = copy;
    }
    cl->closed = *whole;
    return 0;
}

/* A frame whose slots start at base ends, its slots in use up to top: the open closures made in it
 * (or over a template it imported, whose slots lie above base) are closed over a copy of
 * [base, top) (vm_impl.h tpl_closure; close_one). */
static int close_frame(tpl_vm *vm, uint32_t base, uint32_t top)
{
    tpl_closure *cl = vm->open_cl;
    if (__builtin_expect(!cl, 1) || (cl->outer_base < base && cl->root_base < base)) return 0;
    const tpl_value *whole = NULL;
    while (cl && (cl->outer_base >= base || cl->root_base >= base)) {
        tpl_closure *next = cl->next_open;
        if (close_one(vm, cl, base, top, &whole) < 0) return -1;
        cl = next;
    }
    vm->open_cl = cl;
    return 0;
}

/* CL_CLOSE: the inlined include (or import) whose CL_MARK stored mark ends in the frame whose
 * slots start at base: the open closures made since (newest first on the list; those of frames
 * that ended since were closed then) are closed over a copy of [base, top), as close_frame at a
 * macro's return, so each run of the include is a fresh template's (Jinja2 renders it with a new
 * context and frame). A closure over a frame below base (an import's, among the template level's
 * slots) stays open: that frame outlives the include. */
static int close_since(tpl_vm *vm, uint32_t mark, uint32_t base, uint32_t top)
{
    tpl_closure *cl = vm->open_cl, *keep = NULL, **tail = &keep;
    const tpl_value *whole = NULL;
    while (cl && cl->seq >= mark) {
        tpl_closure *next = cl->next_open;
        if (cl->outer_base >= base) {
            if (close_one(vm, cl, base, top, &whole) < 0) return -1;
        } else {
            *tail = cl;
            tail = &cl->next_open;
        }
        cl = next;
    }
    *tail = cl;
    vm->open_cl = keep;
    return 0;
}

/* LOAD_UP: slot `slot` of the frame the closure `hops` links out from the running one was made
 * in (a macro reading a variable of a macro two or more levels out); -1 when the chain or the
 * slot is not there (a program the compiler did not make). */
static int load_up(tpl_vm *vm, uint32_t hops, uint32_t slot, tpl_value *out)
{
    const tpl_closure *t = vm->cur_cl;
    for (uint32_t i = 0; t && i < hops; i++) t = t->up;
    if (!t || !hops) return tpl_vm_fail(vm, TPL_EK_CORRUPT, "LOAD_UP: no frame %u levels out", hops);
    if (t->closed) {
        if (t->outer_base < t->closed_lo || (uint64_t)(t->outer_base - t->closed_lo) + slot >= t->nclosed)
            return tpl_vm_fail(vm, TPL_EK_CORRUPT, "LOAD_UP: slot %u out of range", slot);
        uint32_t at = t->outer_base - t->closed_lo + slot;
        if (t->closed_idx) { /* (a copy of the slots it reads: the program's analysis has this one) */
            uint32_t lo = 0, hi = t->nidx;
            while (lo < hi) {
                uint32_t mid = lo + (hi - lo) / 2;
                if (t->closed_idx[mid] < at) lo = mid + 1;
                else hi = mid;
            }
            if (lo == t->nidx || t->closed_idx[lo] != at)
                return tpl_vm_fail(vm, TPL_EK_CORRUPT, "LOAD_UP: slot %u not kept by the closure", slot);
            *out = t->closed[lo];
        } else {
            *out = t->closed[at];
        }
    } else {
        if ((uint64_t)t->outer_base + slot >= vm->slot_top)
            return tpl_vm_fail(vm, TPL_EK_CORRUPT, "LOAD_UP: slot %u out of range", slot);
        *out = vm->slots[t->outer_base + slot];
    }
    return 0;
}

/* Ruby's ArgumentError naming every keyword of kwn[0..nkw) that is not a parameter of d (a def
 * of the template called with a splat). Its own frame: the message buffer stays off the C stack of
 * nested calls. */
static __attribute__((noinline)) int unknown_keywords(tpl_vm *vm, const tpl_macro_desc *d, const tpl_list *params,
                                                      const tpl_value *kwn, int nkw)
{
    char msg[240];
    int len = 0, nun = 0;
    for (int j = 0; j < nkw; j++) {
        bool param = false, sym = kwn[j].type == TPL_T_STR && (kwn[j].flags & TPL_F_SYMBOL);
        for (uint32_t i = 0; i < d->nparams && !param && sym; i++) param = tpl_equal(params->items[i], kwn[j]);
        if (param) continue;
        if (len < 200) {
            if (sym) {
                len += snprintf(msg + len, sizeof msg - (size_t)len, "%s:%.*s", nun ? ", " : "", kwn[j].len > 60 ? 60 : (int)kwn[j].len, kwn[j].u.s);
            } else {   /* a String or other key: its inspect (Ruby's message) */
                tpl_sb sb;
                tpl_sb_init(&sb, &vm->arena);
                tpl_rb_inspect(&sb, kwn[j]);
                len += snprintf(msg + len, sizeof msg - (size_t)len, "%s%.*s", nun ? ", " : "", sb.len > 60 ? 60 : (int)sb.len, sb.p ? sb.p : "");
            }
        }
        nun++;
    }
    return tpl_vm_error(vm, TPL_ERR_TYPE, "unknown keyword%s: %s (ArgumentError)", nun > 1 ? "s" : "", msg);
}


/* A macro's **kwargs dict; an ERB def's **opts Hash keys by Ruby's eql? ("a" and :a, 1 and 1.0 are
 * two keys: f(**h, a: 2) of h = {"a" => 1} is {"a"=>1, :a=>2}; rb_state: kwargs_done) */
static tpl_map *kwargs_map(tpl_vm *vm, bool erb, uint32_t cap)
{
    tpl_map *m = tpl_map_new(&vm->arena, cap);
    if (m && erb) m->eql = true;
    return m;
}

/* An ERB def's **opts holding a String key (from f(**h) of a state Hash: Ruby's rb_hash_dup keeps
 * the state Hash's class) reads a Symbol key as its String, as the state's Hashes do */
static void kwargs_done(tpl_map *m)
{
    for (uint32_t i = 0; m->eql && i < m->len; i++)
        if (m->e[i].key.type == TPL_T_STR && !(m->e[i].key.flags & (TPL_F_SYMBOL | TPL_F_CLASS_RB | TPL_F_REGEX_RB))) {
            m->rb_state = true;
            return;
        }
}
static int call_macro(tpl_vm *vm, const tpl_closure *cl, tpl_value *pos, int npos, const tpl_value *kwn,
                      tpl_value *kwv, int nkw, tpl_value caller, tpl_value *out)
{
    const tpl_macro_desc *d = cl->d;
    const tpl_program *p = cl->prog ? cl->prog : vm->p;
    const tpl_name *mname = &p->names[d->name];
    if (vm->depth >= vm->limits.max_depth)
        return depth_error(vm, false);
    uint32_t base = vm->slot_top, frame_lo = base, outer_base = cl->outer_base, root_base = cl->root_base;
    if (__builtin_expect(cl->closed != NULL, 0)) {
        /* a closed closure: the slots of the frame it was made in, back above the slot top */
        if ((uint64_t)base + cl->nclosed + d->nslots > vm->slots_cap) return depth_error(vm, true);
        if (cl->closed_idx) {
            for (uint32_t i = 0; i < cl->nclosed; i++) vm->slots[base + i] = tpl_v_unset();
            for (uint32_t i = 0; i < cl->nidx; i++) vm->slots[base + cl->closed_idx[i]] = cl->closed[i];
        } else if (cl->nclosed) {
            memcpy(vm->slots + base, cl->closed, cl->nclosed * sizeof *cl->closed);
        }
        outer_base = base + (cl->outer_base - cl->closed_lo);
        if (cl->root_base >= cl->closed_lo) root_base = base + (cl->root_base - cl->closed_lo);
        base += cl->nclosed;
        vm->slot_top = base;
    }
    if (base + d->nslots > vm->slots_cap || vm->stack_top + d->max_stack > vm->stack_cap) {
        vm->slot_top = frame_lo;
        return depth_error(vm, true);
    }
    tpl_value *slots = vm->slots + base;
    for (uint32_t i = 0; i < d->nslots; i++) slots[i] = tpl_v_unset();
    tpl_list *params = p->consts[d->params].u.list;
    tpl_list *varargs = NULL;
    bool too_many = false; /* (Jinja2's Macro.__call__ checks the keywords first) */
    if (npos > d->nparams) {
        if (d->varargs_slot < 0 && vm->p->opts.syntax == TPL_SYNTAX_ERB) /* a def of the template */
            return tpl_vm_error(vm, TPL_ERR_TYPE, "wrong number of arguments (given %d, expected at most %u) (ArgumentError)", npos, d->nparams);
        if (d->varargs_slot < 0) too_many = true;
        else if (!(varargs = tpl_list_new(&vm->arena, (uint32_t)(npos - d->nparams)))) return oom(vm);
    }
    for (int i = 0; i < npos && i < (int)d->nparams; i++) slots[i] = pos[i];
    for (int i = (int)d->nparams; varargs && i < npos; i++) varargs->items[varargs->len++] = pos[i];
    if (d->varargs_slot >= 0) {
        if (!varargs) varargs = tpl_list_new(&vm->arena, 0);
        if (!varargs) return oom(vm);
        slots[d->varargs_slot] = tpl_v_list(varargs);
        slots[d->varargs_slot].flags = TPL_F_TUPLE;
    }
    tpl_map *kwargs = NULL;
    bool erb = vm->p->opts.syntax == TPL_SYNTAX_ERB;
    for (int k = 0; k < nkw; k++) {
        bool found = false;
        /* (a def of the template: a keyword parameter binds a Symbol key only; a String key of f(**h) or
         * f("k" => 1) goes to **opts, else it is unknown, as Ruby 3.1's) */
        for (uint32_t i = 0; i < d->nparams && (!erb || (kwn[k].type == TPL_T_STR && (kwn[k].flags & TPL_F_SYMBOL))); i++) {
            if (tpl_equal(params->items[i], kwn[k])) {
                /* already given by position: Jinja2 leaves it among the extra keywords */
                if ((int)i < npos) break;
                slots[i] = kwv[k];
                found = true;
                break;
            }
        }
        if (found) continue;
        if (!erb && kwn[k].len == 6 && memcmp(kwn[k].u.s, "caller", 6) == 0 && d->caller_slot >= 0) {
            slots[d->caller_slot] = kwv[k];
            continue;
        }
        if (d->kwargs_slot < 0 && erb) {
            /* a def of the template called with a splat (f(**h), checked when it runs) */
            return unknown_keywords(vm, d, params, kwn + k, nkw - k);
        }
        if (d->kwargs_slot < 0) {
            /* Jinja2 raises for the first keyword left over, unless `caller` is among them: a call
             * block (or caller=) given to a macro that does not read caller */
            for (int j = k; j < nkw; j++)
                if (kwn[j].len == 6 && memcmp(kwn[j].u.s, "caller", 6) == 0 && !kw_param(d, params, npos, kwn[j]))
                    return tpl_vm_error(vm, TPL_ERR_TYPE, "macro %s%.*s%s was invoked with two values for the special caller "
                                        "argument. This is most likely a bug.", MNAME(mname));
            return tpl_vm_error(vm, TPL_ERR_TYPE, "macro %s%.*s%s takes no keyword argument '%.*s'", MNAME(mname),
                                (int)kwn[k].len, kwn[k].u.s);
        }
        if (!kwargs && !(kwargs = kwargs_map(vm, erb, 4))) return oom(vm);
        if (!tpl_map_set(&vm->arena, kwargs, kwn[k], kwv[k])) return oom(vm);
    }
    if (d->kwargs_slot >= 0) {
        if (!kwargs && !(kwargs = kwargs_map(vm, erb, 0))) return oom(vm);
        kwargs_done(kwargs);
        slots[d->kwargs_slot] = tpl_v_map(kwargs);
        /* an ERB def's **opts: a Hash Ruby builds for the call (changed in place, as the literals of the render) */
        if (vm->p->opts.syntax == TPL_SYNTAX_ERB) slots[d->kwargs_slot].flags |= TPL_F_MUT_RB;
    }
    if (too_many)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "macro %s%.*s%s takes not more than %u argument(s)", MNAME(mname), d->nparams);
    if (d->caller_slot >= 0 && slots[d->caller_slot].type == TPL_T_UNSET && caller.type != TPL_T_UNSET)
        slots[d->caller_slot] = caller;
    if (d->caller_slot >= 0 && (slots[d->caller_slot].type == TPL_T_UNSET || slots[d->caller_slot].type == TPL_T_NONE)) {
        /* no caller (or caller=None): Jinja2's Undefined(hint="No caller defined"), its message when
         * used; not when caller is a parameter of the macro's own (explicit_caller) */
        bool explicit = false;
        for (uint32_t i = 0; i < d->nparams; i++)
            if (params->items[i].len == 6 && memcmp(params->items[i].u.s, "caller", 6) == 0) explicit = true;
        if (!explicit) slots[d->caller_slot] = undef_named("No caller defined", 17, TPL_UNDEF_PLAIN, 0);
    }
    if (vm->ncaptures >= TPL_VM_CAPTURES) return tpl_vm_fail(vm, TPL_EK_DEPTH, "maximum call depth reached (captures)");
    vm->captures[vm->ncaptures++] = vm->out_len;
    vm->slot_top = base + d->nslots;
    vm->depth++;
    uint32_t save_pc = vm->pc, save_stack = vm->stack_top, save_root = vm->root_base;
    int save_captures = vm->ncaptures - 1;
    const tpl_program *save_p = vm->p;
    vm->p = p; /* (a macro of a template loaded at render time runs its own program's code) */
    vm->root_base = cl->prog ? root_base : vm->root_base;
    tpl_value save_state = vm->state;
    if (cl->prog) vm->state = cl->state; /* (its template's context, as Jinja2's macros read theirs) */
    const tpl_closure *save_cl = vm->cur_cl;
    vm->cur_cl = cl;
    /* (ERB: the def's own $~, nil at its start; the caller's back after it, however it ends) */
    struct tpl_rb_mframe mf = { vm->rb_mframes, vm->rb_match, vm->rb_match_base };
    vm->rb_mframes = &mf;
    vm->rb_match = tpl_v_none();
    vm->rb_match_base = base;
    /* (ERB: the block given to the call, when a block literal of the caller's frame: a break out of it ends this call) */
    tpl_value blk = tpl_v_unset();
    uint32_t caller_base = vm->rb_call_base;
    if (erb)
        for (int k = 0; k < nkw; k++)
            if (kwn[k].len == 5 && memcmp(kwn[k].u.s, "(blk)", 5) == 0) blk = kwv[k];
    int rc = run(vm, d->entry, base, outer_base, 0, out);
    if (rc < 0 && vm->rb_brk.on && blk.type == TPL_T_INT && blk.u.i == vm->rb_brk.blk.u.i && blk.aux == vm->rb_brk.blk.aux &&
        caller_base == vm->rb_brk.base && !vm->host_payload) {
        vm->rb_brk.on = false;
        memset(&vm->err, 0, sizeof vm->err);
        vm->err_unlocated = false;
        vm->rb_broke = false;
        *out = vm->rb_brk.val;
        rc = 0;
    }
    vm->rb_match = mf.m;
    vm->rb_match_base = mf.base;
    vm->rb_mframes = mf.prev;
    vm->cur_cl = save_cl;
    if (close_frame(vm, frame_lo, vm->slot_top) < 0) rc = -1;
    vm->state = save_state;
    /* an ERB def ends with RET_RB (its value; it prints nothing), a failed body anywhere (a Ruby
     * rescue goes on): the call's capture is closed either way */
    vm->ncaptures = save_captures;
    /* (an error inside is located in the macro's own template, its name, line and column) */
    vm->p = save_p;
    vm->root_base = save_root;
    vm->pc = save_pc;
    vm->stack_top = save_stack;
    vm->depth--;
    vm->slot_top = frame_lo;
    return rc;
}

/* ------------------------------------------------------------------ templates loaded at render time */

/* The program of the template the render's loader has under name (a string): *out and 1, 0 when
 * the loader has no such template, -1 with the error set (no loader, a compile error in it, the
 * program's cache full). Compiled once per loader and name, kept with the program (issue 14). */
static int include_load(tpl_vm *vm, tpl_value name, const tpl_program **out)
{
    if (!vm->loader || !vm->compile)
        return tpl_vm_fail(vm, TPL_EK_TEMPLATE_NOT_FOUND, "cannot load '%.*s': no template loader at render time",
                           (int)(name.len > 200 ? 200 : name.len), name.u.s);
    const tpl_program *p = vm->p;
    tpl_program *sub = tpl_program_sub_get(p, vm->loader, vm->loader_data, name.u.s, name.len);
    if (sub) { *out = sub; return 1; }
    size_t len = 0;
    char *src = vm->loader(vm->loader_data, name.u.s, name.len, &len);
    if (!src) return 0;
    char *nm = malloc(name.len + 1);
    if (!nm) { free(src); return tpl_vm_nomem(vm); }
    memcpy(nm, name.u.s, name.len);
    nm[name.len] = 0;
    tpl_options o = p->opts;
    o.loader = vm->loader;
    o.loader_data = vm->loader_data;
    o.host_funcs = vm->host_funcs; /* the render's own: the ones a program keeps are names only */
    o.nhost_funcs = vm->nhost_funcs;
    o.finalize = p->finalize; /* the environment's finalize applies to every template it loads */
    o.tidy = false; /* the including template's end tidies the whole output */
    tpl_error err = { 0 };
    tpl_status st = vm->compile(nm, src, len, &o, NULL, 0, &sub, &err);
    free(src);
    if (st != TPL_OK) {
        tpl_vm_fail(vm, err.kind, "in '%s' at %u:%u: %s", nm, err.line, err.column, err.message ? err.message : "error");
        tpl_error_clear(&err);
        free(nm);
        return -1;
    }
    free(nm);
    bool full;
    const tpl_program *kept = tpl_program_sub_put(p, vm->loader, vm->loader_data, name.u.s, name.len, sub, &full);
    if (!kept)
        return full ? tpl_vm_fail(vm, TPL_EK_LIMIT, "more than %d templates loaded at render time", TPL_MAX_LOADED)
                    : tpl_vm_nomem(vm);
    *out = kept;
    return 1;
}

/* The output of an imported template's top level from mark on, which the import drops: kept for
 * MODULE, the module `{% import %}` makes prints it (Jinja2's TemplateModule.__str__). */
static int keep_import_out(tpl_vm *vm, size_t mark)
{
    size_t n = vm->out_len - mark;
    char *s = n ? tpl_arena_strdup(&vm->arena, vm->out + mark, n) : "";
    if (!s) return tpl_vm_nomem(vm);
    vm->import_out = tpl_v_str(s, (uint32_t)n);
    return 0;
}

/* Runs sub, a template loaded at render time, on this render with the names of ctx (a map laid
 * over the state; None: none): its template-level slots above the caller's. exports NULL: an
 * include (output into the render's). Else an import: the output is dropped, the slots stay
 * (its macros are closures over them) and *exports is a dict of its template-level names. */
static int run_loaded(tpl_vm *vm, const tpl_program *sub, tpl_value ctx, tpl_value *exports)
{
    if (vm->depth >= vm->limits.max_depth)
        return depth_error(vm, false);
    uint32_t base = vm->slot_top;
    if ((uint64_t)base + sub->nslots > vm->slots_cap || (uint64_t)vm->stack_top + sub->max_stack > vm->stack_cap)
        return depth_error(vm, true);
    /* the included template's names: the including frame's variables over the state */
    tpl_value state = tpl_v_none();
    if (ctx.type == TPL_T_MAP) {
        const tpl_map *sm = vm->state.type == TPL_T_MAP ? vm->state.u.map : NULL;
        const tpl_map *cm = ctx.u.map;
        if (!cm->len && sm) {
            state = vm->state;
        } else {
            tpl_map *m = tpl_map_new(&vm->arena, (sm ? sm->len : 0) + cm->len);
            if (!m) return tpl_vm_nomem(vm);
            for (uint32_t i = 0; sm && i < sm->len; i++)
                if (!tpl_map_append(&vm->arena, m, sm->e[i].key, sm->e[i].hash, sm->e[i].val)) return tpl_vm_nomem(vm);
            for (uint32_t i = 0; i < cm->len; i++) {
                if (cm->e[i].val.type == TPL_T_UNDEF || cm->e[i].val.type == TPL_T_UNSET) continue; /* not set yet */
                if (!tpl_map_set(&vm->arena, m, cm->e[i].key, cm->e[i].val)) return tpl_vm_nomem(vm);
            }
            state = tpl_v_map(m);
        }
    }
    for (uint32_t i = 0; i < sub->nslots; i++) vm->slots[base + i] = tpl_v_unset();
    if (exports) { /* (an import: its output is dropped) */
        if (vm->ncaptures >= TPL_VM_CAPTURES) return tpl_vm_fail(vm, TPL_EK_DEPTH, "maximum call depth reached (captures)");
        vm->captures[vm->ncaptures++] = vm->out_len;
    }
    const tpl_program *save_p = vm->p;
    uint32_t save_root = vm->root_base, save_pc = vm->pc, save_stack = vm->stack_top, save_top = vm->slot_top;
    tpl_value save_state = vm->state;
    vm->p = sub;
    vm->root_base = base;
    vm->slot_top = base + sub->nslots;
    vm->state = state;
    vm->depth++;
    tpl_value r;
    const tpl_closure *save_cl = vm->cur_cl;
    vm->cur_cl = NULL; /* (a template level) */
    int rc = run(vm, 0, base, 0, 0, &r);
    vm->cur_cl = save_cl;
    vm->depth--;
    vm->state = save_state;
    /* an import keeps the template's slots until its caller's frame ends: its macros read them */
    if (!exports && close_frame(vm, base, vm->slot_top) < 0) rc = -1;
    vm->slot_top = exports ? base + sub->nslots : save_top;
    if (exports && rc == 0 && keep_import_out(vm, vm->captures[vm->ncaptures - 1]) < 0) rc = -1;
    if (exports) vm->out_len = vm->captures[--vm->ncaptures];
    vm->stack_top = save_stack;
    vm->pc = save_pc;
    vm->root_base = save_root;
    vm->p = save_p;
    if (rc < 0) return rc; /* located in the loaded template (its name, line and column), as Jinja2's traceback */
    if (exports) {
        tpl_map *m = tpl_map_new(&vm->arena, sub->nexports);
        if (!m) return tpl_vm_nomem(vm);
        for (uint32_t i = 0; i < sub->nexports; i++) {
            tpl_value v = vm->slots[base + sub->export_slots[i]];
            if (v.type == TPL_T_UNSET || (sub->exports[i].len && sub->exports[i].u.s[0] == '_')) continue;
            if (!tpl_map_set(&vm->arena, m, sub->exports[i], v)) return tpl_vm_nomem(vm);
        }
        *exports = tpl_v_map(m);
    }
    return 0;
}

/* IMPORT_MOD: runs d, a template imported without context and compiled with its importer (issue
 * 13 §1), as a template level of its own: its frame is the template-level slots from base (its
 * macros are closures over them: they stay), its output is dropped, and *out is the dict of its
 * exported names it leaves in its slot 0. */
static int import_mod(tpl_vm *vm, const tpl_macro_desc *d, uint32_t base, tpl_value *out)
{
    if (vm->depth >= vm->limits.max_depth)
        return depth_error(vm, false);
    if (!d->nslots || (uint64_t)base + d->nslots > vm->slot_top ||
        (uint64_t)vm->stack_top + d->max_stack > vm->stack_cap)
        return depth_error(vm, true);
    if (vm->ncaptures >= TPL_VM_CAPTURES) return tpl_vm_fail(vm, TPL_EK_DEPTH, "maximum call depth reached (captures)");
    for (uint32_t i = 0; i < d->nslots; i++) vm->slots[base + i] = tpl_v_unset();
    vm->captures[vm->ncaptures++] = vm->out_len;
    int save_captures = vm->ncaptures - 1;
    uint32_t save_root = vm->root_base, save_pc = vm->pc, save_stack = vm->stack_top;
    vm->root_base = base;
    vm->depth++;
    tpl_value r;
    const tpl_closure *save_cl = vm->cur_cl;
    vm->cur_cl = NULL; /* (a template level) */
    int rc = run(vm, d->entry, base, 0, 0, &r);
    vm->cur_cl = save_cl;
    vm->depth--;
    vm->ncaptures = save_captures;
    if (rc == 0 && keep_import_out(vm, vm->captures[save_captures]) < 0) rc = -1;
    if (rc == 0) vm->out_len = vm->captures[save_captures];
    vm->stack_top = save_stack;
    vm->pc = save_pc;
    vm->root_base = save_root;
    if (rc < 0) return rc;
    *out = vm->slots[base];
    return 0;
}

/* {% extends EXPR %} picked when it runs (EXTENDS_DYN, EXTENDS_RUN): name checked as Jinja2's
 * get_template takes it (a list or dict is not hashable; a name is split on '/'), then *out =
 * the running template compiled again with that parent (its blocks over the parent's: the
 * program EXTENDS_RUN renders), compiled once and kept with the program. */
static int extends_load(tpl_vm *vm, tpl_value name, const tpl_program **out)
{
    if (name.type == TPL_T_UNDEF) return tpl_stdlib.undefined_error(vm, name);
    if (name.type != TPL_T_STR) {
        const char *tn = tpl_type_name(vm, name);
        if (!strcmp(tn, "list") || !strcmp(tn, "dict")) return tpl_vm_error(vm, TPL_ERR_TYPE, "unhashable type: '%s'", tn);
        return tpl_vm_fail(vm, TPL_EK_ATTRIBUTE, "'%s' object has no attribute 'split'", tn);
    }
    if (!vm->loader || !vm->compile)
        return tpl_vm_fail(vm, TPL_EK_TEMPLATE_NOT_FOUND, "cannot load '%.*s': no template loader at render time",
                           (int)(name.len > 200 ? 200 : name.len), name.u.s);
    const tpl_program *p = vm->p;
    if (!p->source || !p->source_len)
        return tpl_vm_fail(vm, TPL_EK_USAGE, "extends '%.*s': the template's source is not available",
                           (int)(name.len > 200 ? 200 : name.len), name.u.s);
    /* the key among the templates kept with p: NUL, "extends", NUL, the name (no template name
     * starts with NUL: a loader is never asked for this one) */
    size_t klen = 9 + (size_t)name.len;
    char *key = tpl_arena_alloc(&vm->arena, klen);
    if (!key) return tpl_vm_nomem(vm);
    memcpy(key, "\0extends\0", 9);
    memcpy(key + 9, name.u.s, name.len);
    tpl_program *sub = tpl_program_sub_get(p, vm->loader, vm->loader_data, key, klen);
    if (sub) { *out = sub; return 0; }
    tpl_options o = p->opts;
    o.loader = vm->loader;
    o.loader_data = vm->loader_data;
    o.host_funcs = vm->host_funcs;
    o.nhost_funcs = vm->nhost_funcs;
    o.finalize = p->finalize;
    o.tidy = false; /* (the template's own end tidies the output) */
    tpl_error err = { 0 };
    tpl_status st = vm->compile(p->name, p->source, p->source_len, &o, name.u.s, name.len, &sub, &err);
    if (st != TPL_OK) {
        /* located at the extends (the parent's errors are, as when compiled with the template) */
        tpl_vm_fail(vm, err.kind, "%s", err.message ? err.message : "error");
        tpl_error_clear(&err);
        return -1;
    }
    bool full;
    const tpl_program *kept = tpl_program_sub_put(p, vm->loader, vm->loader_data, key, klen, sub, &full);
    if (!kept)
        return full ? tpl_vm_fail(vm, TPL_EK_LIMIT, "more than %d templates loaded at render time", TPL_MAX_LOADED)
                    : tpl_vm_nomem(vm);
    *out = kept;
    return 0;
}

/* {% import EXPR as m %} / {% from EXPR import ... %} (IMPORT_DYN): *out = the dict of the
 * names the template exports (the compiler makes the module or picks the names). */
static int import_dyn(tpl_vm *vm, tpl_value name, tpl_value ctx, tpl_value *out)
{
    if (name.type == TPL_T_UNDEF) return tpl_stdlib.undefined_error(vm, name);
    if (name.type != TPL_T_STR)
        return tpl_vm_fail(vm, TPL_EK_ATTRIBUTE, "'%s' object has no attribute 'split'", tpl_type_name(vm, name));
    const tpl_program *sub = NULL;
    int r = include_load(vm, name, &sub);
    if (r < 0) return -1;
    if (!r)
        return tpl_vm_fail(vm, TPL_EK_TEMPLATE_NOT_FOUND, "template '%.*s' not found",
                           (int)(name.len > 200 ? 200 : name.len), name.u.s);
    if (!sub->exports) return tpl_vm_fail(vm, TPL_EK_USAGE, "'%.*s' was not compiled for an import",
                                          (int)(name.len > 200 ? 200 : name.len), name.u.s);
    return run_loaded(vm, sub, ctx, out);
}

/* {% include EXPR %} (INCLUDE_DYN): names is a template name, or an iterable of names tried in
 * turn (Jinja2's select_template: undefined items are skipped); ctx the including frame's
 * variables (a map laid over the state; None: without context). flags bit 0: ignore missing.
 * The template runs as a template of its own on this render (its slots above the caller's,
 * its output into the render's), as Jinja2's template.root_render_func(new_context(...)). */
static int include_dyn(tpl_vm *vm, tpl_value names, tpl_value ctx, uint32_t flags)
{
    const tpl_program *sub = NULL;
    if (names.type == TPL_T_UNDEF) return tpl_stdlib.undefined_error(vm, names);
    if (names.type == TPL_T_STR) {
        int r = include_load(vm, names, &sub);
        if (r < 0) return -1;
        if (!r) {
            if (flags & 1) return 0;
            return tpl_vm_fail(vm, TPL_EK_TEMPLATE_NOT_FOUND, "template '%.*s' not found",
                               (int)(names.len > 200 ? 200 : names.len), names.u.s);
        }
    } else {
        tpl_list *l;
        if (tpl_to_list(vm, names, &l) < 0) return -1;
        for (uint32_t i = 0; i < l->len && !sub; i++) {
            tpl_value x = l->items[i];
            if (x.type == TPL_T_UNDEF) continue;
            if (x.type != TPL_T_STR)
                return tpl_vm_fail(vm, TPL_EK_ATTRIBUTE, "'%s' object has no attribute 'split'", tpl_type_name(vm, x));
            if (include_load(vm, x, &sub) < 0) return -1;
        }
        if (!sub) {
            if (flags & 1) return 0;
            if (!l->len) return tpl_vm_fail(vm, TPL_EK_TEMPLATES_NOT_FOUND, "Tried to select from an empty list of templates.");
            tpl_sb b;
            tpl_sb_init(&b, &vm->arena);
            tpl_sb_puts(&b, "none of the templates given were found: ");
            for (uint32_t i = 0; i < l->len; i++) {
                if (i) tpl_sb_puts(&b, ", ");
                tpl_py_str(&b, l->items[i]);
            }
            if (b.failed) return tpl_vm_sb_error(vm, &b, "while getting the repr of an object");
            return tpl_vm_fail(vm, TPL_EK_TEMPLATES_NOT_FOUND, "%.*s", (int)(b.len > 400 ? 400 : b.len), b.p);
        }
    }
    return run_loaded(vm, sub, ctx, NULL);
}

static int call_any(tpl_vm *vm, tpl_value fn, tpl_value *pos, int npos, const tpl_value *kwn, tpl_value *kwv, int nkw,
                    tpl_value *out);

/* Calls dict[...] (a GenericAlias calls dict), dict.get / range.count (an unbound method: the first
 * argument is self) or range.start (not callable). */
static int call_special(tpl_vm *vm, tpl_value fn, tpl_value *pos, int npos, const tpl_value *kwn, tpl_value *kwv, int nkw,
                        tpl_value *out)
{
    const tpl_bound *bd = fn.u.bound;
    if (fn.aux == TPL_FN_ALIAS) return call_builtin(vm, bd->method, pos, npos, kwn, kwv, nkw, out);
    if (fn.aux != TPL_FN_DESCR) return tpl_vm_error(vm, TPL_ERR_TYPE, "'%s' object is not callable", tpl_type_name(vm, fn));
    const char *owner = tpl_lib_builtin(bd->method)->name;
    if (npos == 0)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "unbound method %s.%.*s() needs an argument", owner, (int)bd->self.len, bd->self.u.s);
    tpl_value self = pos[0];
    bool ok = strcmp(owner, "dict") == 0 ? self.type == TPL_T_MAP && !(self.flags & TPL_F_NS)
                                         : self.type == TPL_T_LIST && self.aux == TPL_LAZY_RANGE;
    if (!ok)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "descriptor '%.*s' for '%s' objects doesn't apply to a '%s' object",
                            (int)bd->self.len, bd->self.u.s, owner, tpl_type_name(vm, self));
    tpl_value m;
    if (tpl_getattr(vm, self, bd->self.u.s, bd->self.len, &m) < 0) return -1;
    return call_any(vm, m, pos + 1, npos - 1, kwn, kwv, nkw, out);
}

/* A bound method: self first. Its own frame (the 64 arguments' copy, 1 KB) keeps it off the C stack
 * of every macro call nesting through call_any. */
static __attribute__((noinline)) int call_bound(tpl_vm *vm, const tpl_bound *bd, tpl_value *pos, int npos,
                                                const tpl_value *kwn, tpl_value *kwv, int nkw, tpl_value *out)
{
    tpl_value args[64];
    if (npos >= 63) return tpl_vm_error(vm, TPL_ERR_TYPE, "too many arguments");
    args[0] = bd->self;
    if (npos) memcpy(args + 1, pos, (size_t)npos * sizeof *pos);
    return call_builtin(vm, bd->method, args, npos + 1, kwn, kwv, nkw, out);
}

/* Calls a callable value with positional and keyword arguments. */
static int call_any(tpl_vm *vm, tpl_value fn, tpl_value *pos, int npos, const tpl_value *kwn, tpl_value *kwv, int nkw,
                    tpl_value *out)
{
    if (fn.type == TPL_T_MACRO)
        return call_macro(vm, (const tpl_closure *)fn.u.p, pos, npos, kwn, kwv, nkw, tpl_v_unset(), out);
    if (fn.type == TPL_T_FUNC) {
        if (!fn.u.bound) {
            if (fn.aux >= TPL_FN_TYPE) /* x.__class__(5): a constructor of a Python object */
                return tpl_vm_fail(vm, TPL_EK_RUNTIME, "unsupported: calling the class %s (tpl does not model Python's constructors)",
                                   tpl_types[tpl_value_class(fn)].py);
            return call_builtin(vm, fn.aux, pos, npos, kwn, kwv, nkw, out);
        }
        if (fn.aux >= TPL_FN_ALIAS) return call_special(vm, fn, pos, npos, kwn, kwv, nkw, out);
        return call_bound(vm, fn.u.bound, pos, npos, kwn, kwv, nkw, out);
    }
    if (fn.type == TPL_T_HOST) {
        if (tpl_has_big_range(pos, npos) || tpl_has_big_range(kwv, nkw)) return tpl_range_too_large(vm);
        return tpl_hobj_call(vm, fn, pos, npos, kwn, kwv, nkw, out);
    }
    if (fn.type == TPL_T_UNDEF) return tpl_stdlib.undefined_error(vm, fn);
    if (fn.type == TPL_T_LOOP) { /* LoopContext.__call__(iterable): the recursive loop one level deeper */
        const tpl_loop *l = fn.u.loop;
        if (l->rec.type != TPL_T_MACRO)
            return tpl_vm_error(vm, TPL_ERR_TYPE, "The loop must have the 'recursive' marker to be called recursively.");
        tpl_value it;
        if (npos == 1 && nkw == 0) it = pos[0];
        else if (npos == 0 && nkw == 1 && kwn[0].len == 8 && memcmp(kwn[0].u.s, "iterable", 8) == 0) it = kwv[0];
        else if (npos + nkw == 0)
            return tpl_vm_error(vm, TPL_ERR_TYPE, "LoopContext.__call__() missing 1 required positional argument: 'iterable'");
        else if (nkw == 0)
            return tpl_vm_error(vm, TPL_ERR_TYPE, "LoopContext.__call__() takes 2 positional arguments but %d were given", npos + 1);
        else
            return tpl_vm_error(vm, TPL_ERR_TYPE, "LoopContext.__call__() got an unexpected keyword argument");
        tpl_value args[3] = { it, tpl_v_int((int64_t)l->depth + 1), l->rec };
        return call_macro(vm, (const tpl_closure *)l->rec.u.p, args, 3, NULL, NULL, 0, tpl_v_unset(), out);
    }
    return tpl_vm_error(vm, TPL_ERR_TYPE, "'%s' object is not callable", tpl_type_name(vm, fn));
}

int tpl_call_value(tpl_vm *vm, tpl_value fn, tpl_value *args, int nargs, tpl_value *out)
{
    return call_any(vm, fn, args, nargs, NULL, NULL, 0, out);
}

int tpl_call_value_kw(tpl_vm *vm, tpl_value fn, tpl_value *args, int nargs, const tpl_value *kwn, tpl_value *kwv,
                      int nkw, tpl_value *out)
{
    return call_any(vm, fn, args, nargs, kwn, kwv, nkw, out);
}

/* Whether the render binds a host function of that kind and name (tpl_render_set_host_funcs). */
static bool host_bound(const tpl_vm *vm, tpl_host_kind kind, tpl_value name)
{
    if (name.type != TPL_T_STR) return false;
    for (size_t i = 0; i < vm->nhost_funcs; i++) {
        const tpl_host_func *h = &vm->host_funcs[i];
        if (h->kind == kind && h->name && h->fn && strlen(h->name) == name.len && memcmp(h->name, name.u.s, name.len) == 0)
            return true;
    }
    return false;
}

/* A filter or test named by a string (map('f'), select('t'), selectattr('a', 't')...): a host
 * filter/test the render binds, as Jinja2 finds custom ones in env.filters/env.tests (before a
 * builtin of the same name, as at compile time), else a builtin. */
int tpl_call_filter_named(tpl_vm *vm, tpl_value name, tpl_value *args, int nargs, tpl_value *out)
{
    if (vm->nhost_funcs && host_bound(vm, TPL_HOST_FILTER, name))
        return tpl_vm_host_call(vm, TPL_HOST_FILTER, name, args, nargs, NULL, NULL, 0, out);
    int id = name.type == TPL_T_STR ? tpl_stdlib.find(TPL_BK_FILTER, name.u.s, name.len) : -1;
    if (id >= 0) id = tpl_stdlib.filter_variant(id, tpl_vm_autoescape(vm), tpl_vm_hf(vm)); /* as `x|name` compiles */
    if (id < 0) return tpl_vm_fail(vm, TPL_EK_RUNTIME, "No filter named '%.*s'.", name.type == TPL_T_STR ? (int)name.len : 1, name.type == TPL_T_STR ? name.u.s : "?");
    return call_builtin(vm, id, args, nargs, NULL, NULL, 0, out);
}

int tpl_call_test_named(tpl_vm *vm, tpl_value name, tpl_value *args, int nargs, tpl_value *out)
{
    if (vm->nhost_funcs && host_bound(vm, TPL_HOST_TEST, name))
        return tpl_vm_host_call(vm, TPL_HOST_TEST, name, args, nargs, NULL, NULL, 0, out);
    int id = name.type == TPL_T_STR ? tpl_stdlib.find(TPL_BK_TEST, name.u.s, name.len) : -1;
    if (id < 0) return tpl_vm_fail(vm, TPL_EK_RUNTIME, "No test named '%.*s'.", name.type == TPL_T_STR ? (int)name.len : 1, name.type == TPL_T_STR ? name.u.s : "?");
    return call_builtin(vm, id, args, nargs, NULL, NULL, 0, out);
}

/* loop.cycle(...) and loop.changed(...) */
static int loop_method(tpl_vm *vm, tpl_loop *l, tpl_value name, tpl_value *args, int nargs, tpl_value *out, bool *handled)
{
    *handled = true;
    if (name.len == 5 && memcmp(name.u.s, "cycle", 5) == 0) {
        if (nargs == 0) return tpl_vm_error(vm, TPL_ERR_TYPE, "no items for cycling given");
        *out = args[(l->i - 1) % (uint32_t)nargs];
        return 0;
    }
    if (name.len == 7 && memcmp(name.u.s, "changed", 7) == 0) {
        tpl_list *now = tpl_list_new(&vm->arena, (uint32_t)nargs);
        if (!now) return oom(vm);
        if (nargs) memcpy(now->items, args, (size_t)nargs * sizeof *args);
        now->len = (uint32_t)nargs;
        tpl_value nv = tpl_v_list(now);
        bool same = false;
        if (l->has_changed && tpl_vm_equal(vm, l->last_changed, nv, &same) < 0) return -1;
        bool changed = !same;
        l->last_changed = nv;
        l->has_changed = true;
        *out = tpl_v_bool(changed);
        return 0;
    }
    *handled = false;
    return 0;
}

/* `default`, `length` (and `upper` / `lower` of ASCII strings) the way their stdlib
 * functions compute them with only positional arguments, for the values they usually get; the
 * result replaces args[0]. 1: done, 0: take the generic call, -1: error. */
static inline __attribute__((always_inline)) int filter_fast(tpl_vm *vm, int id, tpl_value *args, int npos)
{
    tpl_value v = args[0];
    if (id == tpl_stdlib.id_default) {
        /* boolean=false: an undefined value is replaced, anything else passes */
        if (npos > 2) return 0;
        if (v.type == TPL_T_UNDEF || v.type == TPL_T_UNSET) args[0] = npos == 2 ? args[1] : tpl_v_str("", 0);
        return 1;
    }
    if (id == tpl_stdlib.id_length) {
        if (npos != 1) return 0;
        if (v.type == TPL_T_LIST && !tpl_is_iter(v) && !(v.flags & TPL_F_RANGE_BIG)) { args[0] = tpl_v_int(v.u.list->len); return 1; }
        if (v.type == TPL_T_MAP && !(v.flags & TPL_F_NS)) { args[0] = tpl_v_int(v.u.map->len); return 1; }
        if (v.type == TPL_T_HOST) { /* the len callback; without one the filter gets the resolved data */
            int64_t n;
            int rc = tpl_hobj_len(vm, v, &n);
            if (rc == 0) args[0] = tpl_v_int(n);
            return rc < 0 ? -1 : rc == 0;
        }
        return 0;
    }
    if (id == tpl_stdlib.id_upper || id == tpl_stdlib.id_lower) {
        if (npos != 1 || v.type != TPL_T_STR) return 0;
        const unsigned char *s0 = (const unsigned char *)v.u.s;
        for (uint32_t i = 0; i < v.len; i++)
            if (s0[i] >= 0x80) return 0;
        char *o = tpl_arena_alloc(&vm->arena, (size_t)v.len + 1);
        if (!o) return oom(vm);
        bool up = id == tpl_stdlib.id_upper;
        for (uint32_t i = 0; i < v.len; i++) {
            unsigned char ch = s0[i];
            o[i] = (char)(up ? (ch >= 'a' && ch <= 'z' ? ch - 32 : ch) : (ch >= 'A' && ch <= 'Z' ? ch + 32 : ch));
        }
        o[v.len] = 0;
        args[0] = tpl_v_str(o, v.len);
        args[0].flags = v.flags & TPL_F_SAFE;
        return 1;
    }
    return 0;
}

/* Starts a for loop over items: the `loop` object goes into *slot. */
static int new_loop(tpl_vm *vm, tpl_list *items, tpl_value *slot)
{
    tpl_loop *l = tpl_arena_alloc(&vm->arena, sizeof *l);
    if (!l) return oom(vm);
    memset(l, 0, sizeof *l);
    l->items = items;
    l->depth = 1;
    tpl_value v = { 0 };
    v.type = TPL_T_LOOP;
    v.u.loop = l;
    *slot = v;
    return 0;
}

/* ------------------------------------------------------------------ operations shared by the
 * interpreter and the native helpers (tpl_native_*), so both run the same code */

/* `trim` of the string *v (no arguments) when its ends are ASCII: the white space Python's
 * str.strip() removes taken off both ends in place (tpl_py_strip's fast path). False, *v
 * untouched, when a byte at an end is not ASCII (it may start Unicode white space). The native
 * views' code (include/tpl_native.h), so both make the same value. */
static inline __attribute__((always_inline)) bool trim_ascii(tpl_value *v)
{
    return tpl_native_trim((tpl_nvalue *)(void *)v) != 0;
}

/* FILTER, FILTER_PRINT or TEST (op) of builtin a on args: npos positional values, then nkw
 * keyword values named by kwn. 1 when a FILTER_PRINT wrote its result to the output itself (its
 * PRINT done), 0 with the result in args[0], -1 on an error (unlocated). */
static inline __attribute__((always_inline)) int filter_op(tpl_vm *vm, uint32_t op, uint32_t a, tpl_value *args,
                                                           int npos, const tpl_value *kwn, int nkw)
{
    if (__builtin_expect(npos && args[0].type == TPL_T_LIST && (args[0].flags & TPL_F_VIEW_DICT), 0)) {
        if (a == tpl_stdlib.id_length && npos == 1 && nkw == 0 && op != TPL_OP_TEST && tpl_is_view(args[0])) {
            args[0] = tpl_v_int(tpl_view_dict(args[0])->len); /* (len(view): its dict's, nothing made) */
            return 0;
        }
        if ((a == tpl_stdlib.id_first || a == tpl_stdlib.id_last) && npos == 1 && nkw == 0 && op != TPL_OP_TEST &&
            tpl_is_view(args[0]) && tpl_view_dict(args[0])->len) {
            /* first / last of a view: its dict's first or last entry, nothing made (Jinja2's
             * next(iter(view)) and next(iter(reversed(view))) read one entry) */
            const tpl_map *m = tpl_view_dict(args[0]);
            const tpl_entry *e = &m->e[a == tpl_stdlib.id_first ? 0 : m->len - 1];
            int what = args[0].aux - TPL_LAZY_DICT_ITEMS;
            if (what == 0) return entry_pair(vm, e->key, e->val, &args[0]);
            args[0] = what == 1 ? e->key : e->val;
            return 0;
        }
        if (tpl_vm_view_sync(vm, args[0]) < 0) return -1; /* (a dict view: the fast paths read its items) */
    }
    if (nkw == 0 && op != TPL_OP_TEST) {
        /* common filters on the values they usually get, without the binder */
        if (a == tpl_stdlib.id_trim && npos == 1 && args[0].type == TPL_T_STR && trim_ascii(&args[0]))
            return 0;
        if ((a == tpl_stdlib.id_upper || a == tpl_stdlib.id_lower) && npos == 1 && args[0].type == TPL_T_STR &&
            op == TPL_OP_FILTER_PRINT && vm->out_len + args[0].len < vm->out_cap) {
            /* `{{ s | upper }}`: ASCII case-mapped straight into the output (no copy, no PRINT) */
            const unsigned char *s0 = (const unsigned char *)args[0].u.s;
            size_t n = args[0].len;
            char *o = vm->out + vm->out_len;
            size_t i = tpl_case_latin1(o, s0, n, a == tpl_stdlib.id_upper);
            if (i < n) {
                /* the rest from its first non-ASCII byte, with the Unicode tables */
                tpl_sb b;
                tpl_sb_init(&b, &vm->arena);
                tpl_py_case_from(&b, (const char *)s0, n, i, a == tpl_stdlib.id_upper);
                if (b.failed) return tpl_vm_sb_error(vm, &b, "while getting the repr of an object");
                vm->out_len += i;
                if (b.len && out_put(vm, b.p, b.len) < 0) return -1;
            } else {
                vm->out_len += n;
            }
            return 1;
        }
        if (a == tpl_stdlib.id_join && (npos == 1 || (npos == 2 && args[1].type == TPL_T_STR)) &&
            args[0].type == TPL_T_LIST && !tpl_is_iter(args[0]) && !(args[0].flags & TPL_F_RANGE_BIG) && op == TPL_OP_FILTER_PRINT) {
            /* `{{ xs | join(", ") }}` of strings: straight into the output (no string built) */
            const tpl_list *l = args[0].u.list;
            const char *sep = npos == 2 ? args[1].u.s : NULL;
            size_t dl = npos == 2 ? args[1].len : 0, total = l->len ? dl * (l->len - 1) : 0;
            uint32_t i = 0;
            for (; i < l->len && l->items[i].type == TPL_T_STR; i++) total += l->items[i].len;
            if (i == l->len && vm->out_len + total < vm->out_cap) {
                char *o = vm->out + vm->out_len;
                for (i = 0; i < l->len; i++) { /* (out_copy: short strings without a memcpy call) */
                    if (i) { out_copy(o, sep, dl); o += dl; }
                    out_copy(o, l->items[i].u.s, l->items[i].len);
                    o += l->items[i].len;
                }
                vm->out_len += total;
                return 1;
            }
        }
        int done = filter_fast(vm, (int)a, args, npos);
        if (done < 0) return -1;
        if (done) return 0;
    }
    tpl_value r;
    if (call_builtin(vm, (int)a, args, npos, kwn, args + npos, nkw, &r) < 0) return -1;
    args[0] = r;
    return 0;
}

/* GETATTR of name nm on *v, in place. 0 or -1 (unlocated error). */
static inline __attribute__((always_inline)) int getattr_op(tpl_vm *vm, const tpl_name *nm, tpl_value *v)
{
    tpl_value obj = *v;
    tpl_value *hit = NULL;
    if (obj.type == TPL_T_MAP && ((obj.flags & TPL_F_NS) || name_method(nm, TPL_BK_MAP) < 0) &&
        ((hit = map_find_name(vm, obj.u.map, nm)) || !is_mutating(obj, nm->s.u.s, nm->s.len))) {
        /* a key (no dict method of that name): as tpl_getattr, without searching by string
         * (a missing key named as a mutating method: tpl_getattr's unsafe method) */
        if (hit) { *v = *hit; return fresh_own_method(vm, obj, v); }
        if (__builtin_expect(nm->s.u.s[0] == '_', 0)) /* d.__len__: tpl_getattr's dunder_error */
            return tpl_getattr(vm, obj, nm->s.u.s, nm->s.len, v) < 0 ? -1 : 0;
        return map_miss(vm, obj, nm, v); /* (a new Undefined object: tpl_getattr) */
    }
    if (obj.type == TPL_T_LOOP && !tpl_is_dunder(nm->s.u.s, nm->s.len)) /* loop.index & co. (loop.__class__: tpl_getattr) */
        return loop_attr(vm, obj.u.loop, nm->s.u.s, nm->s.len, v) < 0 ? -1 : 0;
    return tpl_getattr(vm, obj, nm->s.u.s, nm->s.len, v) < 0 ? -1 : 0;
}

/* GETITEM_STR of name nm on *v, in place. 0 or -1 (unlocated error). */
static inline __attribute__((always_inline)) int getitem_str_op(tpl_vm *vm, const tpl_name *nm, tpl_value *v)
{
    tpl_value obj = *v;
    if (obj.type == TPL_T_MAP) {
        tpl_value *hit = map_find_name(vm, obj.u.map, nm);
        if (hit) { *v = *hit; return 0; }
    }
    return tpl_getitem(vm, obj, nm->s, v) < 0 ? -1 : 0;
}

/* PRINT_PY of v. 0 or -1 (unlocated error). */
static inline __attribute__((always_inline)) int print_py_op(tpl_vm *vm, const tpl_value *v)
{
    if (v->type == TPL_T_STR) return out_put(vm, v->u.s, v->len) < 0 ? -1 : 0;
    if (v->type == TPL_T_INT && v->u.i >= 0 && vm->out_len + 20 < vm->out_cap) {
        /* a non-negative int: digits written in place, two at a time, right to left */
        vm->out_len += put_decimal(vm->out + vm->out_len, (uint64_t)v->u.i);
        return 0;
    }
    return print_py(vm, *v) < 0 ? -1 : 0;
}

/* PRINT_RB of v. 0 or -1 (unlocated error). */
/* An Enumerator's to_s is Kernel#to_s, its address: tpl's refusal. */
static int enum_to_s_error(tpl_vm *vm)
{
    return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: an Enumerator's to_s (Ruby prints its address; inspect it or take its items)");
}

static int print_rb_op(tpl_vm *vm, tpl_value v)
{
    if (v.type == TPL_T_STR) return out_put(vm, v.u.s, v.len) < 0 ? -1 : 0;
    if (tpl_is_enum_rb(v)) return enum_to_s_error(vm);
    tpl_sb b;
    tpl_sb_init(&b, &vm->arena);
    tpl_rb_to_s(&b, v);
    if (b.failed) return tpl_vm_sb_error(vm, &b, "while getting the repr of an object");
    if (b.len && out_put(vm, b.p, b.len) < 0) return -1; /* empty: b.p may be NULL */
    return 0;
}

/* ADDS / PRINT_ADDS / ADDS_RB / PRINT_ADDS_RB (op) of the a values at args: a + b + c ..., plain
 * strings concatenated in one step, anything else added pairwise. 1 with the sum in args[0] (the
 * ADDS forms), 0 when it was printed, -1 on an error (unlocated). */
static inline __attribute__((always_inline)) int adds_op(tpl_vm *vm, uint32_t op, tpl_value *args, uint32_t a)
{
    bool print = op == TPL_OP_PRINT_ADDS || op == TPL_OP_PRINT_ADDS_RB;
    if (print && vm->out) {
        /* plain strings with room for all: checked and copied in one pass (the output length is
         * set only when every operand was copied; else the general path below from the start) */
        char *o = vm->out + vm->out_len, *end = vm->out + vm->out_cap;
        uint32_t i = 0;
        for (; i < a; i++) {
            if (args[i].type != TPL_T_STR || (args[i].flags & (TPL_F_SAFE | TPL_F_SYMBOL)) ||
                args[i].len >= (size_t)(end - o))
                break;
            out_copy(o, args[i].u.s, args[i].len);
            o += args[i].len;
        }
        if (i == a) {
            vm->out_len = (size_t)(o - vm->out);
            return 0;
        }
    }
    bool plain = true;
    size_t total = 0;
    for (uint32_t i = 0; i < a; i++) {
        if (args[i].type != TPL_T_STR || (args[i].flags & (TPL_F_SAFE | TPL_F_SYMBOL))) { plain = false; break; }
        total += args[i].len;
    }
    bool rb = op == TPL_OP_ADDS_RB || op == TPL_OP_PRINT_ADDS_RB;
    if (plain && print) {
        if (vm->out_len + total < vm->out_cap) { /* room for all: one check, then copies */
            char *o = vm->out + vm->out_len;
            for (uint32_t i = 0; i < a; i++) {
                out_copy(o, args[i].u.s, args[i].len);
                o += args[i].len;
            }
            vm->out_len += total;
            return 0;
        }
        for (uint32_t i = 0; i < a; i++)
            if (out_put(vm, args[i].u.s, args[i].len) < 0) return -1;
        return 0;
    }
    tpl_value r;
    if (plain) {
        if (concat_plain(vm, args, a, total, &r) < 0) return -1;
    } else {
        r = args[0];
        for (uint32_t i = 1; i < a; i++) {
            int h = rb ? tpl_stdlib.rb_arith(vm, '+', r, args[i], &r) : 0; /* as ADD_RB */
            if (h < 0 || (h == 0 && binop(vm, TPL_OP_ADD, r, args[i], &r) < 0)) return -1;
        }
    }
    if (print && rb) return print_rb_op(vm, r);
    if (print) return print_py(vm, r) < 0 ? -1 : 0;
    args[0] = r;
    return 1;
}

/* PRINT_ADDS_K: PRINT_ADDS of the items of the constant tuple ks, a None item standing for the
 * next of the a values at args; the string items are plain and klen bytes long in all (the
 * verifier's). 0 when printed, -1 on an error (unlocated). */
/* adds_k_op's general path: PRINT_ADDS of all the operands, in order. Its own frame: the operands'
 * copy (512 bytes) stays off interp's, which every nested call has on the C stack. */
static __attribute__((noinline)) int adds_k_slow(tpl_vm *vm, const tpl_list *ks, const tpl_value *args)
{
    tpl_value all[TPL_ADDS_K_MAX];
    const tpl_value *x = args;
    for (uint32_t i = 0; i < ks->len; i++) all[i] = ks->items[i].type == TPL_T_STR ? ks->items[i] : *x++;
    return adds_op(vm, TPL_OP_PRINT_ADDS, all, ks->len) < 0 ? -1 : 0;
}

static inline __attribute__((always_inline)) int adds_k_op(tpl_vm *vm, const tpl_list *ks, const tpl_value *args,
                                                           uint32_t a, size_t klen)
{
    if (ks->items[1].flags & TPL_F_ADDS_ALT) {
        /* literal, value, literal, ..., literal (the verifier's): one pass copying them in pairs,
         * each value checked to be a plain string with room for it and the literals; what it
         * wrote past out_len before a value that is not is written over by the general path */
        size_t room = vm->out_cap - vm->out_len;
        if (__builtin_expect(klen < room, 1)) {
            size_t left = room - klen; /* (the values' bytes must stay below it) */
            char *o = vm->out + vm->out_len;
            const tpl_value *k = ks->items, *x = args, *xend = args + a;
            out_copy(o, k->u.s, k->len);
            o += k->len;
            for (; x < xend; x++) {
                if ((((uint32_t)x->type | (uint32_t)x->flags << 8) & (0xffu | (TPL_F_SAFE | TPL_F_SYMBOL) << 8)) !=
                        TPL_T_STR ||
                    x->len >= left)
                    goto general;
                left -= x->len;
                out_copy(o, x->u.s, x->len);
                o += x->len;
                k += 2;
                out_copy(o, k->u.s, k->len);
                o += k->len;
            }
            vm->out_len = (size_t)(o - vm->out);
            return 0;
        }
    }
general:;
    /* plain strings with room for all: one check of the values and the room, then the copies */
    size_t total = klen;
    uint32_t j = 0;
    for (; j < a; j++) {
        /* a plain string: its type and its flags' SAFE and SYMBOL bits as one 16-bit compare */
        if ((((uint32_t)args[j].type | (uint32_t)args[j].flags << 8) & (0xffu | (TPL_F_SAFE | TPL_F_SYMBOL) << 8)) !=
            TPL_T_STR)
            break;
        total += args[j].len;
    }
    if (j == a && vm->out_len + total < vm->out_cap) {
        char *o = vm->out + vm->out_len;
        const tpl_value *x = args;
        for (const tpl_value *k = ks->items, *kend = k + ks->len; k < kend; k++) {
            /* a branch a kind of item (fewer instructions than selecting the item to copy) */
            if (k->type == TPL_T_STR) {
                out_copy(o, k->u.s, k->len);
                o += k->len;
            } else {
                out_copy(o, x->u.s, x->len);
                o += x->len;
                x++;
            }
        }
        vm->out_len += total;
        return 0;
    }
    return adds_k_slow(vm, ks, args);
}

/* Whether the n bytes at s, 1 to 16 of them, are all ASCII (two overlapping loads); false for
 * other lengths (the caller's general path decides). */
static inline __attribute__((always_inline)) bool short_ascii(const char *s, size_t n)
{
    uint64_t x;
    if (n >= 8 && n <= 16) {
        uint64_t a, b;
        memcpy(&a, s, 8);
        memcpy(&b, s + n - 8, 8);
        x = a | b;
    } else if (n >= 4 && n < 8) {
        uint32_t a, b;
        memcpy(&a, s, 4);
        memcpy(&b, s + n - 4, 4);
        x = a | b;
    } else if (n >= 1 && n < 4) {
        x = (unsigned char)s[0] | (unsigned char)s[n >> 1] | (unsigned char)s[n - 1];
    } else {
        return false;
    }
    return (x & UINT64_C(0x8080808080808080)) == 0;
}

/* CALL_NAME of global function nm (builtin id) on args (npos positional values, then nkw keyword
 * values named by kwn), vm->stack_top already above them: the state's value of that name when it
 * has one, else the builtin. 0 with the result in args[0], or -1 (unlocated error). */
/* CALL_NAME's builtin, when the state has no value of that name (as call_name_op). */
static inline __attribute__((always_inline)) int call_name_builtin(tpl_vm *vm, const tpl_name *nm, uint32_t id,
                                                                   tpl_value *args, int npos, const tpl_value *kwn, int nkw)
{
    tpl_value r;
    if (!vm->p->opts.hf && (id == tpl_stdlib.id_raise_exception || id == tpl_stdlib.id_strftime_now)) {
        tpl_stdlib.undefined_error(vm, undef_named(nm->s.u.s, nm->s.len, TPL_UNDEF_NAME, 0));
        return -1;
    }
    if (nkw == 0 && !vm->has_host && id < tpl_stdlib.nbuiltins && npos == vm->bind_hi[id] &&
        npos >= vm->bind_lo[id] && (npos == 0 || !(tpl_is_iter(args[0]) || tpl_is_view(args[0]))) && npos <= 1 &&
        tpl_lib_builtin((int)id)->kind != TPL_BK_STR) {
        /* a call call_builtin binds by copying (its signature's range known, no keywords, no
         * iterator, no host object), of at most one argument: the builtin called on the stack's
         * arguments directly (they are the call's own, consumed by it) */
        if (tpl_lib_builtin((int)id)->fn(vm, args, &r) < 0) return -1;
    } else if (call_builtin(vm, (int)id, args, npos, kwn, args + npos, nkw, &r) < 0) {
        return -1;
    }
    args[0] = r;
    return 0;
}

static inline __attribute__((always_inline)) int call_name_op(tpl_vm *vm, const tpl_name *nm, uint32_t id,
                                                              tpl_value *args, int npos, const tpl_value *kwn, int nkw)
{
    tpl_value r;
    tpl_value *shadow = state_find(vm, nm);
    if (!shadow) return call_name_builtin(vm, nm, id, args, npos, kwn, nkw);
    if (call_any(vm, *shadow, args, npos, kwn, args + npos, nkw, &r) < 0) return -1;
    args[0] = r;
    return 0;
}

/* FOR_INIT: a loop over *v (popped by the caller) into *slot. 0 or -1 (unlocated error). */
static int for_init_op(tpl_vm *vm, tpl_value v, tpl_value *slot)
{
    tpl_list *items;
    if (__builtin_expect(v.type == TPL_T_HOST, 0) && tpl_hobj_as_iter(vm, &v) < 0) return -1;
    if (v.type == TPL_T_LOOP) /* Jinja2 advances the loop one item per iteration, as the body runs */
        return tpl_vm_fail(vm, TPL_EK_RUNTIME, "unsupported: a for loop over a loop object (`for x, l in loop`)");
    tpl_map *dict = tpl_vm_syntax(vm) == TPL_SYNTAX_JINJA ? tpl_view_dict(v) : NULL;
    if (tpl_is_iter(v)) {
        /* an iterator: the loop pulls from it as it goes (loop_pull) */
        tpl_list *src = v.u.list;
        if (!(items = tpl_list_new(&vm->arena, src->len)) || new_loop(vm, items, slot) < 0) return oom(vm);
        slot->u.loop->src = src;
        if (dict) { /* reversed(d), reversed(d.items()): Python's reverse dict iterator */
            tpl_loop *l = slot->u.loop;
            l->dict = dict;
            l->dict_len = src->len;
            l->dict_rev = true;
            l->dict_what = v.aux == TPL_LAZY_DICT_REVITEMS ? 1 : v.aux == TPL_LAZY_DICT_REVVALUES ? 2 : 0;
            l->dict_len = src->items[src->len + 1].len; /* (its size when reversed() was made) */
        }
        return 0;
    }
    if (dict || (v.type == TPL_T_MAP && !(v.flags & TPL_F_NS) && tpl_vm_syntax(vm) == TPL_SYNTAX_JINJA)) {
        /* a dict or its view: Python's dict iterator, the keys taken one at a time (loop_pull), each
         * step checking the dict (dict_next); a view yields the dict's entries as they are then */
        tpl_map *m = dict ? dict : v.u.map;
        tpl_list *keys = tpl_list_new(&vm->arena, m->len), *src = tpl_arena_alloc(&vm->arena, sizeof *src);
        tpl_list *taken = tpl_list_new(&vm->arena, m->len);
        if (!keys || !src || !taken || new_loop(vm, taken, slot) < 0) return oom(vm);
        for (uint32_t i = 0; i < m->len; i++) keys->items[i] = m->e[i].key;
        keys->len = m->len;
        *src = *keys;
        tpl_loop *l = slot->u.loop;
        l->src = src;
        l->dict = m;
        l->dict_len = m->len;
        l->dict_pos = 0;
        l->dict_left = m->len;
        l->dict_seen = vm->dict_del_n;
        l->dict_what = !dict || v.aux == TPL_LAZY_DICT_KEYS ? 0 : v.aux == TPL_LAZY_DICT_ITEMS ? 1 : 2;
        return 0;
    }
    if (v.type == TPL_T_LIST && !(v.flags & TPL_F_RANGE_BIG)) items = v.u.list; /* (tpl_to_list's answer, without the call) */
    else if (tpl_to_list(vm, v, &items) < 0) return -1;
    return new_loop(vm, items, slot) < 0 ? -1 : 0;
}

/* CALL_METHOD_RB's call-site cache (no block, no keywords, a receiver without flags): the builtin
 * tpl_rb_send would call with the receiver itself, or -1 for the general path (vm->rb_sites).
 * *direct: whether the VM may call it straight on the receiver and args (n = npos + 1 values), as
 * call_builtin would after its checks: positional binding known for n (the entry's), no host object
 * in the render, no value an iterator or a range held without its items (the receiver's flags are
 * 0: no range, no markup-safe string); 2 when n is every parameter (the values bound in place). */
static inline int rb_site_method(tpl_vm *vm, const uint32_t *site, tpl_value self, const tpl_value *name,
                                 const tpl_value *args, int npos, int *direct)
{
    bool plain = !vm->has_host && !tpl_is_iter(self);
    for (int i = 0; i < npos; i++) {
        tpl_type t = args[i].type;
        if (__builtin_expect(t == TPL_T_LIST || t == TPL_T_MAP || t == TPL_T_BIGINT, 0)) {
            if (t == TPL_T_BIGINT || (args[i].flags & TPL_F_MUT_RB)) return -1;
            if (tpl_is_iter(args[i]) || (args[i].flags & TPL_F_RANGE_BIG)) plain = false;
        }
    }
    struct tpl_rb_site *e = &vm->rb_sites[((uintptr_t)site >> 2) % (sizeof vm->rb_sites / sizeof vm->rb_sites[0])];
    if (__builtin_expect(e->site == site && e->type == self.type && e->gen != vm->gen, 0) && self.type != TPL_T_MAP &&
        e->npos == npos && e->len == name->len && name->len <= sizeof e->name && memcmp(e->name, name->u.s, name->len) == 0)
        e->gen = vm->gen; /* the same call at this site in this render: compared once per render, not per call */
    if (e->site != site || e->type != self.type || e->gen != vm->gen) {
        const void *except;
        int id = tpl_stdlib.rb_plain_method(vm, self, name->u.s, name->len, &except);
        uint8_t d = 0;
        if (id >= 0 && (unsigned)id < tpl_stdlib.nbuiltins) {
            if (vm->bind_lo[id] == BIND_UNKNOWN) bind_range(vm, id);
            int n = npos + 1;
            d = n >= vm->bind_lo[id] && n <= vm->bind_hi[id] ? (n == vm->bind_hi[id] ? 2 : 1) : 0;
        }
        *e = (struct tpl_rb_site){ site, except, vm->gen, self.type, (uint8_t)(name->len > sizeof e->name ? 0xFF : name->len),
                                   (int16_t)id, { 0 }, (uint8_t)npos, d };
        if (name->len <= sizeof e->name) memcpy(e->name, name->u.s, name->len);
    }
    if (e->id < 0 || (self.type == TPL_T_MAP && self.u.map == e->except)) return -1;
    *direct = plain ? e->direct : 0;
    return e->id;
}

/* ------------------------------------------------------------------ the dispatch loop */

/* vm->name_hit's mark of a name the render's state does not hold (never read as a value) */
static const tpl_value name_absent = { 0 };

/* The kept attributes of state dicts (vm->attr_hit) are gone with the name lookups. */
static void name_hits_gone(tpl_vm *vm)
{
    if (++vm->name_hit_gen == 0) {
        memset(vm->attr_hit, 0, sizeof vm->attr_hit);
        vm->name_hit_gen = 1;
    }
}

/* name_a.name_b of the state dict hit (hits[na], a map), when it holds key b and b is no dict
 * method (GETATTR's fast path: getattr_op), else NULL; kept in vm->attr_hit while hits[na] is. */
static inline __attribute__((always_inline)) const tpl_value *state_attr(tpl_vm *vm, const tpl_value *hit, uint32_t na,
                                                                         uint32_t nb, const tpl_name *names)
{
    uint64_t tag = (uint64_t)vm->name_hit_gen << 32 | na << 16 | nb;
    struct tpl_attr_hit *e = &vm->attr_hit[(na * 37u + nb) % (sizeof vm->attr_hit / sizeof vm->attr_hit[0])];
    if (e->tag == tag) return e->v;
    const tpl_name *nm = &names[nb];
    const tpl_value *v;
    if (((hit->flags & TPL_F_NS) || name_method(nm, TPL_BK_MAP) < 0) && (v = map_find_name(vm, hit->u.map, nm))) {
        e->tag = tag;
        e->v = v;
        return v;
    }
    return NULL;
}

/* A fused op's dict lookup that missed: the general GETATTR (tpl_getattr: a new Undefined object,
 * d.__class__, or the located refusal of a special attribute). */
/* CALL_METHOD_RB's call of a builtin its site found (direct 1: bound by position, 0: through
 * call_builtin) with the receiver args[-1] and npos arguments copied. Its own frame: the copy
 * stays off interp's, which every nested call has on the C stack. */
static __attribute__((noinline)) int site_call_copied(tpl_vm *vm, int id, int direct, const tpl_value *args, int npos,
                                                      tpl_value *r)
{
    tpl_value pos[TPL_MAX_PARAMS + 1];
    pos[0] = args[-1];
    for (int i = 0; i < npos; i++) pos[i + 1] = args[i];
    if (!direct) return call_builtin(vm, id, pos, npos + 1, NULL, NULL, 0, r);
    for (int i = npos + 1; i < vm->bind_hi[id]; i++) pos[i] = tpl_v_unset();
    return tpl_stdlib.table[id].fn(vm, pos, r);
}

/* LOAD_IVAR_RB of a host self: sends "@name" (vm->stack_top set by the caller); 1 when the name is
 * too long to be an instance variable's. Its own frame (as site_call_copied). */
static __attribute__((noinline)) int send_ivar(tpl_vm *vm, const tpl_value *name, tpl_value *out)
{
    char iv[256];
    size_t n = name->len;
    if (n >= sizeof iv - 1) return 1;
    iv[0] = '@';
    memcpy(iv + 1, name->u.s, n);
    return tpl_hobj_send(vm, vm->rb_self, iv, n + 1, NULL, 0, NULL, NULL, 0, out);
}

static __attribute__((noinline)) int map_miss(tpl_vm *vm, tpl_value obj, const tpl_name *nm, tpl_value *out)
{
    return tpl_getattr(vm, obj, nm->s.u.s, nm->s.len, out);
}

/* The truth of a value of a type whose truth cannot fail (tpl_truthy_py's answer for none, bool,
 * int, str, dict, list), else -1 (the caller runs the general path). */
static inline __attribute__((always_inline)) int plain_truth(const tpl_value *v)
{
    switch (v->type) {
    case TPL_T_NONE: return 0;
    case TPL_T_BOOL: case TPL_T_INT: return v->u.i != 0;
    case TPL_T_STR: return v->len != 0;
    case TPL_T_MAP: return v->u.map->len != 0;
    case TPL_T_LIST: return (v->flags & TPL_F_VIEW_DICT) ? -1 : v->u.list->len != 0 || tpl_is_iter(*v) || (v->flags & TPL_F_RANGE_BIG);
    default: return -1;
    }
}

/* name_a.name_b of a state dict for the fused fast paths (hits set): the entry kept for (a, b)
 * in this generation of the lookups first — it was kept while hits[na] was a dict, and neither
 * changes within a generation, so the kept entry needs no look at hits[na] — else state_attr of
 * hits[na] when the render has found a dict there; NULL otherwise. */
static inline __attribute__((always_inline)) const tpl_value *kept_attr(tpl_vm *vm, const tpl_value *const *hits,
                                                                        uint32_t na, uint32_t nb, const tpl_name *names)
{
    const struct tpl_attr_hit *e = &vm->attr_hit[(na * 37u + nb) % (sizeof vm->attr_hit / sizeof vm->attr_hit[0])];
    if (e->tag == ((uint64_t)vm->name_hit_gen << 32 | na << 16 | nb)) return e->v;
    const tpl_value *hit = hits[na];
    if (hit == NULL || hit->type != TPL_T_MAP) return NULL; /* (name_absent's type is UNDEF) */
    return state_attr(vm, hit, na, nb, names);
}

/* Builtin id is remembers (Jinja's) or ERB's remembers / remembers? with an argument v it takes as
 * a String (r_k_remembers: a String or Symbol; a Regexp or a class is its TypeError): CALL_NAME's
 * kept answers apply (r_k_remembers is g_remembers once want_str passes). */
static inline __attribute__((always_inline)) bool remembers_id(uint32_t id, const tpl_value *v)
{
    return id == tpl_stdlib.id_remembers ||
           ((id == tpl_stdlib.id_remembers_rb || id == tpl_stdlib.id_remembers_p_rb) &&
            !(v->flags & (TPL_F_REGEX_RB | TPL_F_CLASS_RB)));
}

/* ERB's @name of the state for the fused fast paths (hits set: the state is a map): LOAD_IVAR_RB's
 * lookup, kept in hits as it keeps it (the first read finds it: from Ruby every render's state is
 * new); NULL when the state and its globals do not hold it (LOAD_IVAR_RB then asks the library's
 * globals) or self is a host object (its ivars are sent). The value may be an UNDEF, which
 * LOAD_IVAR_RB reads as nil. */
static inline __attribute__((always_inline)) const tpl_value *kept_ivar(tpl_vm *vm, const tpl_value **hits, uint32_t a,
                                                                        const tpl_name *names)
{
    if (!hits || (vm->rb_self.type == TPL_T_HOST && !vm->rb_ivars_state)) return NULL;
    const tpl_value *hit = hits[a];
    if (__builtin_expect(hit == NULL, 0)) {
        hit = state_find(vm, &names[a]);
        hits[a] = hit ? hit : &name_absent;
        return hit;
    }
    return hit == &name_absent ? NULL : hit;
}

/* ERB's @name["key"] of a state Hash holding the key (LOAD_IVAR_RB; GETITEM_STR_RB's fast path),
 * else NULL; kept in vm->attr_hit as kept_attr's entries, tagged apart from them (bit 31: a
 * Ruby item has no dict-method exception, so Jinja's attribute entries and these never answer
 * for each other). */
static inline __attribute__((always_inline)) const tpl_value *kept_item_rb(tpl_vm *vm, const tpl_value **hits,
                                                                           uint32_t na, uint32_t nb, const tpl_name *names)
{
    if (!hits || (vm->rb_self.type == TPL_T_HOST && !vm->rb_ivars_state)) return NULL;
    uint64_t tag = (uint64_t)vm->name_hit_gen << 32 | 1u << 31 | na << 16 | nb;
    struct tpl_attr_hit *e = &vm->attr_hit[(na * 37u + nb) % (sizeof vm->attr_hit / sizeof vm->attr_hit[0])];
    if (e->tag == tag) return e->v;
    const tpl_value *hit = kept_ivar(vm, hits, na, names), *v;
    if (hit == NULL || hit->type != TPL_T_MAP) return NULL;
    if ((v = map_find_name(vm, hit->u.map, &names[nb])) != NULL) {
        e->tag = tag;
        e->v = v;
    }
    return v;
}

/* A call instruction's arguments from its argument word aw: npos, nkw, args, kwn (a TPL_ARGW_DYN
 * word spreads the list and dict ARGS_STAR / ARGS_DSTAR built). */
#define CALL_ARGS(aw) \
    int npos = (int)TPL_ARGW_NPOS(aw), nkw = (int)TPL_ARGW_NKW(aw); \
    const tpl_value *kwn = NULL; \
    if (__builtin_expect(TPL_ARGW_K(aw) == TPL_ARGW_DYN, 0)) { \
        /* (the addresses of copies taken, never of sp, npos, nkw, kwn: they stay in registers) */ \
        tpl_value *sp_ = sp; \
        int np_ = npos, nk_ = nkw; \
        const tpl_value *kwn_ = NULL; \
        if (spread_args(vm, &sp_, stack_end, &np_, &nk_, &kwn_) < 0) goto fail; \
        sp = sp_; npos = np_; nkw = nk_; kwn = kwn_; \
    } else if (nkw) { \
        kwn = consts[TPL_ARGW_K(aw)].u.list->items; \
    } \
    tpl_value *args = sp - npos - nkw
#define STACK_CHECK(n) do { if (sp + (n) >= stack_end) { rc = tpl_vm_error(vm, TPL_ERR_LIMIT, "operand stack overflow"); goto fail; } } while (0)

/* EQ / NE of two values that are not both strings (`==`; the caller negates for NE): a
 * StrictUndefined operand raises (its __eq__ / __ne__), anything else compares as Python does. */
static int eq_op(tpl_vm *vm, tpl_value x, tpl_value y, bool *r)
{
    if (__builtin_expect(x.type == TPL_T_UNDEF || y.type == TPL_T_UNDEF, 0)) {
        if (tpl_vm_strict_undef(vm, x)) return tpl_stdlib.undefined_error(vm, x);
        if (tpl_vm_strict_undef(vm, y)) return tpl_stdlib.undefined_error(vm, y);
    }
    return tpl_vm_equal(vm, x, y, r);
}

/* GCC's global common subexpression elimination moves loads of the dispatch loop's values
 * across its computed gotos and spills them (GCC's manual advises -fno-gcse for such loops):
 * about 1% fewer instructions per render on w1 and w2. GCC's register allocator, left to split
 * this function into regions (its default), keeps `ip`, the label table and even `vm` in stack
 * slots, a load or two in every dispatch; allocating the function as one region
 * (-fira-region=one) keeps them in registers: w1 3,606 -> 3,402 instructions per render, w2 -3.9%,
 * w4 -3.8%, w5 -4.6% (bench/RESULTS.md, session 24). It replaces the asm("r15") / asm("r14")
 * register variables for `ip` and the label table, which gained 1.7% on w1 and 0.1-1.2% on the
 * other workloads over the default allocation and tied the code to two named registers. */
#if defined(__GNUC__) && !defined(__clang__)
#define INTERP_OPT __attribute__((optimize("no-gcse", "ira-region=one")))
#else
#define INTERP_OPT
#endif

/* The interpreter. st NULL: runs a call level from pc to its end (RETURN, RET_RB, HALT). st set
 * (tpl_native_step): runs the one instruction at pc (with the instructions its fused paths take)
 * on the native frame's stack, then stops with st->pc, st->sp and st->ticks set and returns 1. */
INTERP_OPT static int interp(tpl_vm *vm, uint32_t pc0, uint32_t slot_base, uint32_t outer_base, uint32_t npre, tpl_value *result,
                  tpl_native_frame *st)
{
    const tpl_program *p = vm->p;
    const uint32_t *code = p->code;
    const uint32_t *ip = code + pc0; /* the running instruction (pc: ip - code) */
    const tpl_value *consts = p->consts;
    const tpl_name *names = p->names;
    tpl_value *slots = vm->slots + slot_base;
    tpl_value *root_slots = vm->slots + vm->root_base;
    tpl_value *outer_slots = vm->slots + outer_base;
    /* each call level gets the part of the operand stack above its caller's */
    tpl_value *stack = st ? (tpl_value *)(void *)st->stack : vm->stack + vm->stack_top;
    tpl_value *stack_end = vm->stack + vm->stack_cap;
    tpl_value *sp = stack + npre; /* next free (a Ruby block starts with its parameters pushed) */
    int rc = 0;
    uint32_t w, a;
    /* Fuel: every instruction is counted in a register (ticks) and charged to vm->fuel at the
     * points where a render can run long or re-enter run(): backward jumps, calls and the end.
     * Between two such points a frame runs at most the program's length, so the limit holds as
     * before (an overrun is reported at the next charge point, with the same message). */
    uint64_t ticks = st ? st->ticks : 0;
    /* the lookups of this program's names in this state kept for the render (vm->name_hit) */
    const tpl_value **hits = !st && p == vm->name_hit_prog && vm->state.type == TPL_T_MAP &&
                             vm->state.u.map == vm->name_hit_state ? vm->name_hit : NULL;
/* the opcode of the running instruction (read again: `w` is not kept past the dispatch) */
#define CUR_OP TPL_INSN_OP(*ip)
#define PC ((uint32_t)(ip - code))
#define CHARGE() do { \
        if (__builtin_expect(ticks > vm->fuel, 0)) { vm->fuel = 0; goto out_of_fuel; } \
        vm->fuel -= ticks; ticks = 0; } while (0)
/* A taken jump; a backward one charges the fuel. */
#define JUMP_TO(t) do { const uint32_t *t_ = code + (t); if (t_ <= ip) CHARGE(); ip = t_; DISPATCH_OR_TOP; } while (0)
/* A comparison's bool result r (its operands already popped to one slot): pushed, or, for the
 * superinstructions the peephole pass chose (compiler/peephole.c: fused with the syntax's
 * jump-if-false, JF, or keep-and-jump-if-true, JTK, after it), the jump after it taken here in
 * the same dispatch. */
#define BRANCH_ON_RESULT(r, JF1, JF2, JTK1, JTK2) do { \
        uint32_t op_ = CUR_OP; \
        if (op_ == (JF1) || op_ == (JF2)) { \
            ticks++; ip++; sp--; \
            if (!(r)) { JUMP_TO(TPL_INSN_A(*ip)); } \
            NEXT(0); \
        } \
        if (op_ == (JTK1) || op_ == (JTK2)) { \
            ticks++; ip++; \
            if (r) { sp[-1] = tpl_v_bool(true); JUMP_TO(TPL_INSN_A(*ip)); } \
            sp--; \
            NEXT(0); \
        } \
        sp[-1] = tpl_v_bool(r); \
        NEXT(0); \
    } while (0)

#if defined(__GNUC__)
    static const void *const labels[TPL_OP__COUNT] = {
#define TPL_OP(name, extra, fmt, pops, pushes, flags, doc) &&op_##name,
#define TPL_FUSED(name, base, doc, ...) &&op_##name,
#include "opcodes.def"
#undef TPL_OP
#undef TPL_FUSED
    };
    /* a native step runs one instruction: every later dispatch goes to `stepped` */
    static const void *const stop_labels[TPL_OP__COUNT] = {
#define TPL_OP(name, extra, fmt, pops, pushes, flags, doc) &&stepped,
#define TPL_FUSED(name, base, doc, ...) &&stepped,
#include "opcodes.def"
#undef TPL_OP
#undef TPL_FUSED
    };
    const void *const *tbl = labels;
#define DISPATCH() do { \
        ticks++; w = *ip; a = TPL_INSN_A(w); goto *tbl[TPL_INSN_OP(w)]; } while (0)
#define CASE(name) op_##name:
#define NEXT(extra) do { ip += 1 + (extra); DISPATCH(); } while (0)
#define DISPATCH_OR_TOP DISPATCH()
    if (st) {
        tbl = stop_labels;
        ticks++; w = *ip; a = TPL_INSN_A(w); goto *labels[TPL_INSN_OP(w)];
    }
    DISPATCH();
#else
#define CASE(name) case TPL_OP_##name:
#define NEXT(extra) do { ip += 1 + (extra); goto top; } while (0)
#define DISPATCH_OR_TOP goto top
    bool started = false;
top:
    if (st && started) { ticks++; goto stepped; }
    started = true;
    ticks++; w = *ip; a = TPL_INSN_A(w);
    switch (TPL_INSN_OP(w)) {
#endif

    CASE(TEXT) {
        if (out_put(vm, consts[a].u.s, consts[a].len) < 0) goto fail;
        NEXT(0);
    }
    CASE(TEXT_JUMP) {
        /* TEXT; JUMP */
        if (out_put(vm, consts[a].u.s, consts[a].len) < 0) goto fail;
        ticks++;
        ip++;
        JUMP_TO(TPL_INSN_A(*ip));
    }
    CASE(PRINT_PY) {
        sp--;
        if (print_py_op(vm, sp) < 0) goto fail;
        NEXT(0);
    }
    CASE(PRINT_RB) {
        tpl_value v = *--sp;
        if (v.type == TPL_T_STR) { if (out_put(vm, v.u.s, v.len) < 0) goto fail; }
        else if (v.type == TPL_T_INT && vm->out_len + 21 < vm->out_cap) {
            /* Integer#to_s: the digits written in place (as PRINT_PY) */
            char *o = vm->out + vm->out_len;
            if (v.u.i < 0) *o++ = '-';
            o += put_decimal(o, abs_u64(v.u.i));
            vm->out_len = (size_t)(o - vm->out);
        } else if (print_rb_op(vm, v) < 0) goto fail;
        NEXT(0);
    }
    CASE(CAPTURE) {
        if (vm->ncaptures >= TPL_VM_CAPTURES) { tpl_vm_error(vm, TPL_ERR_LIMIT, "captures nested too deeply"); goto fail; }
        vm->captures[vm->ncaptures++] = vm->out_len;
        NEXT(0);
    }
    CASE(END_CAPTURE) {
        size_t mark = vm->captures[--vm->ncaptures];
        char *s = tpl_arena_strdup(&vm->arena, vm->out + mark, vm->out_len - mark);
        if (!s) { oom(vm); goto fail; }
        *sp++ = tpl_v_str(s, vm->out_len - mark);
        vm->out_len = mark;
        NEXT(0);
    }
    CASE(TIDY_PY) { if (tidy(vm, false) < 0) goto fail; NEXT(0); }
    CASE(TIDY_RB) { if (tidy(vm, true) < 0) goto fail; NEXT(0); }
    CASE(CONST) { *sp++ = consts[a]; NEXT(0); }
    CASE(CONST_CALL_NAME_JF) {
        /* CONST 'usual doctor'; CALL_NAME remembers; JF_PY: the answer CALL_NAME's first path
         * keeps (vm->rkept), with the fuel charged as CALL_NAME charges it (its CHARGE, then the
         * kept scan's share), taken in this dispatch; anything else is CONST, and the call and the
         * jump run as they are (the fuel running out included: their own paths report it) */
        const tpl_value *c = &consts[a];
        if (hits && hits[TPL_INSN_A(ip[1])] == &name_absent && remembers_id(ip[2], c) &&
            ip[3] == TPL_ARGW(1, 0, TPL_NO_KW) && c->type == TPL_T_STR && c->len - 1u < sizeof vm->rkept[0].s) {
            const char *s = c->u.s;
            uint32_t n = c->len;
            uint32_t key = n << 16 | (uint32_t)(unsigned char)s[0] << 8 | (unsigned char)s[n - 1];
            const struct tpl_rkept *k = &vm->rkept[(key * 0x9E3779B1u) >> 29]; /* (as CALL_NAME's) */
            uint64_t t = ticks + 1; /* (with the CALL_NAME's dispatch) */
            if (k->n == n && tpl_native_eq(k->s, s, n) && t <= vm->fuel && (k->kept >> 2) < vm->fuel - t) {
                vm->fuel -= t + (k->kept >> 2);
                ticks = 1; /* (the JF_PY's dispatch) */
                ip += 4;   /* (the JF_PY: CONST, CALL_NAME's three words) */
                if (!(k->kept >> 1 & 1)) { JUMP_TO(TPL_INSN_A(*ip)); }
                NEXT(0);
            }
        }
        *sp++ = *c;
        NEXT(0);
    }
    CASE(INT) { *sp++ = tpl_v_int((int32_t)(a << 8) >> 8); NEXT(0); }
    CASE(NONE) { *sp++ = tpl_v_none(); NEXT(0); }
    CASE(TRUE) { *sp++ = tpl_v_bool(true); NEXT(0); }
    CASE(FALSE) { *sp++ = tpl_v_bool(false); NEXT(0); }
    CASE(UNDEF) { *sp++ = undef_named(NULL, a, TPL_UNDEF_COND, 0); NEXT(0); } /* (len: the line, tpl_undefined_error) */
    CASE(UNDEF_MSG) { *sp++ = undef_named(consts[a].u.s, consts[a].len, TPL_UNDEF_PLAIN, 0); NEXT(0); }
    CASE(POP) { sp--; NEXT(0); }
    CASE(DUP) { sp[0] = sp[-1]; sp++; NEXT(0); }
    CASE(TEXT_NAME_ATTR_PRINT) {
        /* TEXT; LOAD_NAME_ATTR_PRINT (' in {{ clinic.city }}'): the text and the key's string in
         * one append when the fast path of LOAD_NAME_ATTR_PRINT (below) applies, else the text
         * and then that instruction */
        const tpl_value *t = &consts[a], *v;
        if (hits && (v = kept_attr(vm, hits, TPL_INSN_A(ip[1]), TPL_INSN_A(ip[2]), names)) != NULL &&
            v->type == TPL_T_STR && out_put2(vm, t->u.s, t->len, v->u.s, v->len)) {
            ticks += 3;
            ip += 4;
            DISPATCH();
        }
        if (out_put(vm, t->u.s, t->len) < 0) goto fail;
        ticks++; ip++; w = *ip; a = TPL_INSN_A(w);
        goto load_name_attr_print;
    }
    CASE(TEXT_NAME_PRINT) {
        /* TEXT; LOAD_NAME_PRINT: as TEXT_NAME_ATTR_PRINT */
        const tpl_value *t = &consts[a], *hit;
        if (hits && (hit = hits[TPL_INSN_A(ip[1])]) != NULL && hit->type == TPL_T_STR &&
            out_put2(vm, t->u.s, t->len, hit->u.s, hit->len)) {
            ticks += 2;
            ip += 3;
            DISPATCH();
        }
        if (out_put(vm, t->u.s, t->len) < 0) goto fail;
        ticks++; ip++; w = *ip; a = TPL_INSN_A(w);
        goto load_name_print;
    }
    CASE(TEXT_SLOT_ATTR_PRINT) {
        /* TEXT; LOAD_SLOT_ATTR_PRINT ('- {{ slot.day }}'): as TEXT_NAME_ATTR_PRINT */
        const tpl_value *t = &consts[a], *v = &slots[TPL_INSN_A(ip[1])], *hit;
        if (v->type == TPL_T_MAP) {
            const tpl_name *nm = &names[TPL_INSN_A(ip[3])];
            if (((v->flags & TPL_F_NS) || name_method(nm, TPL_BK_MAP) < 0) &&
                (hit = map_find_name(vm, v->u.map, nm)) != NULL) {
                if (hit->type == TPL_T_STR && out_put2(vm, t->u.s, t->len, hit->u.s, hit->len)) {
                    ticks += 3;
                    ip += 5; /* (TEXT, LOAD_SLOT_ATTR_PRINT's two words, GETATTR, PRINT_PY) */
                    DISPATCH();
                }
                if (hit->type == TPL_T_INT && hit->u.i >= 0 && vm->out_len + t->len + 20 < vm->out_cap) {
                    /* ' #{{ r.id }}': the digits in place (LOAD_SLOT_ATTR_PRINT's) */
                    char *o = vm->out + vm->out_len;
                    out_copy(o, t->u.s, t->len);
                    vm->out_len += t->len + put_decimal(o + t->len, (uint64_t)hit->u.i);
                    ticks += 3;
                    ip += 5;
                    DISPATCH();
                }
            }
        }
        if (out_put(vm, t->u.s, t->len) < 0) goto fail;
        ticks++; ip++; w = *ip; a = TPL_INSN_A(w);
        goto load_slot_attr_print;
    }
    CASE(LOAD_NAME_ATTR_PRINT) {
    load_name_attr_print:;
        /* {{ name.key }} of a string in a state dict whose entry the render has found before (hits:
         * the state is a map), the key no dict method: one load, one key lookup, the print; else
         * as LOAD_NAME (which finds and keeps the entry) */
        const tpl_value *v;
        if (hits && (v = kept_attr(vm, hits, a, TPL_INSN_A(ip[1]), names)) != NULL && v->type == TPL_T_STR) {
            ticks += 2;
            ip += 3;
            if (out_put(vm, v->u.s, v->len) < 0) goto fail;
            DISPATCH();
        }
        goto load_name;
    }
    CASE(LOAD_NAME_PRINT) {
    load_name_print:;
        /* {{ name }} of a state string the render has found before: as LOAD_NAME_ATTR_PRINT */
        const tpl_value *hit;
        if (hits && (hit = hits[a]) != NULL && hit->type == TPL_T_STR) { /* (name_absent's type is UNDEF) */
            ticks++;
            ip += 2;
            if (out_put(vm, hit->u.s, hit->len) < 0) goto fail;
            DISPATCH();
        }
        goto load_name;
    }
    CASE(LOAD_NAME) {
        /* a name the render has found in the state before */
        const tpl_value *hit;
        if (hits && (hit = hits[a]) != NULL && hit != &name_absent) {
            *sp++ = *hit;
            NEXT(0);
        }
        goto load_name;
    }
    CASE(LOAD_NAME_JF) {
        /* {% if name %} of a state value the render has found before, of a type whose truth
         * cannot fail (tpl_truthy_py's): JF_PY's jump here */
        const tpl_value *hit;
        if (hits && (hit = hits[a]) != NULL) {
            int t = plain_truth(hit); /* (name_absent's UNDEF: -1, LOAD_NAME, then JF_PY) */
            if (t >= 0) {
                ticks++;
                ip++; /* (the JF_PY) */
                if (!t) { JUMP_TO(TPL_INSN_A(*ip)); }
                NEXT(0);
            }
        }
        goto load_name;
    }
    CASE(LOAD_NAME_ATTR_JF) {
        /* {% if name.key %} of a state dict's key (LOAD_NAME_ATTR's fast path) whose truth cannot
         * fail: GETATTR's value tested and JF_PY's jump taken here; else as LOAD_NAME, the GETATTR and
         * the JF_PY then running as they are */
        const tpl_value *v;
        int t;
        if (hits && (v = kept_attr(vm, hits, a, TPL_INSN_A(ip[1]), names)) != NULL && (t = plain_truth(v)) >= 0) {
            ticks += 2;
            ip += 2; /* (the JF_PY) */
            if (!t) { JUMP_TO(TPL_INSN_A(*ip)); }
            NEXT(0);
        }
        goto load_name;
    }
    CASE(LOAD_NAME_SWITCH) {
        /* LOAD_NAME; SWITCH_STR of a state string the render has found before: its branch picked
         * here; else as LOAD_NAME, the SWITCH_STR then running as it is */
        const tpl_value *hit;
        if (hits && (hit = hits[a]) != NULL && hit->type == TPL_T_STR) { /* (name_absent's type is UNDEF) */
            ticks++;
            ip++; /* (the SWITCH_STR) */
            JUMP_TO(switch_target(code, PC, consts[TPL_INSN_A(*ip)].u.list, *hit));
        }
        goto load_name;
    }
    CASE(LOAD_NAME_ATTR) {
        /* name.key of a state dict whose entry the render has found before */
        const tpl_value *v;
        if (hits && (v = kept_attr(vm, hits, a, TPL_INSN_A(ip[1]), names)) != NULL) {
            ticks++;
            *sp++ = *v;
            NEXT(1);
        }
        goto load_name;
    }
    {
    load_name:
        if (vm->state.type == TPL_T_MAP) { /* load_global's first step, inlined */
            const tpl_value *hit;
            if (hits && hits[a]) { /* (a < p->nnames <= TPL_VM_NAME_HITS: the verifier's) */
                hit = hits[a] == &name_absent ? NULL : hits[a];
            } else {
                hit = state_find(vm, &names[a]);
                if (hits) hits[a] = hit ? hit : &name_absent;
            }
            if (hit) {
                uint32_t op = CUR_OP;
                if (op == TPL_OP_LOAD_NAME_PRINT && hit->type == TPL_T_STR) {
                    /* {{ name }} of a string: PRINT_PY's fast path here */
                    ticks++;
                    ip++;
                    if (out_put(vm, hit->u.s, hit->len) < 0) goto fail;
                    NEXT(0);
                }
                if ((op == TPL_OP_LOAD_NAME_ATTR || op == TPL_OP_LOAD_NAME_ATTR_PRINT) && hit->type == TPL_T_MAP) {
                    /* name.key of a dict holding the key that is no dict method: GETATTR's fast path
                     * (getattr_op) here, and PRINT_PY's when it is a string to print */
                    const tpl_value *v = hits ? state_attr(vm, hit, a, TPL_INSN_A(ip[1]), names) : NULL;
                    const tpl_name *nm = &names[TPL_INSN_A(ip[1])];
                    if (v || (!hits && ((hit->flags & TPL_F_NS) || name_method(nm, TPL_BK_MAP) < 0) &&
                              (v = map_find_name(vm, hit->u.map, nm)))) {
                        ticks++;
                        if (op == TPL_OP_LOAD_NAME_ATTR_PRINT && v->type == TPL_T_STR) {
                            ticks++;
                            ip += 2;
                            if (out_put(vm, v->u.s, v->len) < 0) goto fail;
                            NEXT(0);
                        }
                        *sp++ = *v;
                        NEXT(1);
                    }
                }
                *sp++ = *hit;
                NEXT(0);
            }
        }
        if (load_global(vm, &names[a], sp) < 0) goto fail;
        sp++;
        NEXT(0);
    }
    CASE(LOAD_SLOT_ATTR_PRINT) {
    load_slot_attr_print:;
        /* {{ r.name }}: LOAD_SLOT; GETATTR of a dict's key that is no dict method and PRINT_PY's
         * fast path for a string or a non-negative int; other values pushed (as LOAD_SLOT_ATTR) */
        const tpl_value *v = &slots[a];
        if (v->type == TPL_T_MAP) {
            const tpl_name *nm = &names[TPL_INSN_A(ip[2])];
            const tpl_value *hit = NULL;
            if (((v->flags & TPL_F_NS) || name_method(nm, TPL_BK_MAP) < 0) &&
                ((hit = map_find_name(vm, v->u.map, nm)) || !is_mutating(*v, nm->s.u.s, nm->s.len))) {
                if (hit && hit->type == TPL_T_STR) {
                    ticks += 2;
                    ip += 4; /* (LOAD_SLOT_ATTR_PRINT's two words, GETATTR, PRINT_PY) */
                    if (out_put(vm, hit->u.s, hit->len) < 0) goto fail;
                    DISPATCH();
                }
                if (hit && hit->type == TPL_T_INT && hit->u.i >= 0 && vm->out_len + 20 < vm->out_cap) {
                    ticks += 2; /* (r.id: print_py_op's digits in place) */
                    ip += 4;
                    vm->out_len += put_decimal(vm->out + vm->out_len, (uint64_t)hit->u.i);
                    DISPATCH();
                }
                if (hit) *sp++ = *hit;
                else if (map_miss(vm, *v, nm, sp++) < 0) goto fail;
                if (fresh_own_method(vm, *v, &sp[-1]) < 0) goto fail;
                ticks++;
                NEXT(2);
            }
        } else if (v->type == TPL_T_LOOP && vm->out_len + 20 < vm->out_cap) {
            /* {{ loop.index }}: loop_attr's int (GETATTR's loop path; index pulls nothing) printed
             * as PRINT_PY prints a non-negative int */
            const tpl_name *nm = &names[TPL_INSN_A(ip[2])];
            if (nm->s.len == 5 && memcmp(nm->s.u.s, "index", 5) == 0) {
                ticks += 2;
                ip += 4;
                vm->out_len += put_decimal(vm->out + vm->out_len, v->u.loop->i);
                DISPATCH();
            }
        }
        goto load_slot;
    }
    CASE(LOAD_SLOT_ATTR_CONST_FILTER)
    CASE(LOAD_SLOT_ATTR_FILTER) {
        /* LOAD_SLOT_ATTR's fast path, then the CONST after it (LOAD_SLOT_ATTR_CONST_FILTER) and the
         * FILTER (or FILTER_PRINT) after them without their dispatches; else as LOAD_SLOT */
        const tpl_value *v = &slots[a];
        if (v->type == TPL_T_MAP) {
            const tpl_name *nm = &names[TPL_INSN_A(ip[2])];
            const tpl_value *hit = NULL;
            if (((v->flags & TPL_F_NS) || name_method(nm, TPL_BK_MAP) < 0) &&
                ((hit = map_find_name(vm, v->u.map, nm)) || !is_mutating(*v, nm->s.u.s, nm->s.len))) {
                bool k = CUR_OP == TPL_OP_LOAD_SLOT_ATTR_CONST_FILTER;
                if (k && ip[5] == TPL_ARGW(2, 0, TPL_NO_KW) && TPL_INSN_OP(ip[4]) == TPL_OP_FILTER_PRINT &&
                    TPL_INSN_A(ip[4]) == tpl_stdlib.id_default) {
                    /* `{{ r.note | default("n/a") }}`: the key's string, or the constant's when the key
                     * is missing (filter_fast's default: no undefined value made), printed as the
                     * FILTER_PRINT prints a string result */
                    const tpl_value *d = hit ? hit : &consts[TPL_INSN_A(ip[3])];
                    if (d->type == TPL_T_STR) {
                        ticks += 4;
                        ip += 6; /* (LOAD_SLOT's two words, GETATTR, CONST, FILTER_PRINT's two words: at the
                                  * PRINT_PY, where an output limit is reported) */
                        if (out_put(vm, d->u.s, d->len) < 0) goto fail;
                        NEXT(0);
                    }
                }
                if (!k && hit && hit->type == TPL_T_STR &&
                    ip[3] == TPL_INSN(TPL_OP_FILTER, (uint32_t)tpl_stdlib.id_trim) && ip[4] == TPL_ARGW(1, 0, TPL_NO_KW)) {
                    /* `message.content | trim`: as LOAD_SLOT_ITEM_FILTER's (the string trimmed
                     * before it is pushed, the FILTER's words not read again) */
                    tpl_value x = *hit;
                    if (trim_ascii(&x)) {
                        val_set(sp++, &x);
                        ticks += 2;
                        ip += 5; /* (LOAD_SLOT_ATTR_FILTER's two words, GETATTR, FILTER's two words) */
                        DISPATCH_OR_TOP;
                    }
                }
                /* (pushed as two 8-byte moves: the filter reads the pointer next) */
                if (hit) val_set(sp++, hit);
                else if (map_miss(vm, *v, nm, sp++) < 0) goto fail;
                ticks += 2;
                ip += 3; /* (LOAD_SLOT's two words, GETATTR) */
                if (k) {
                    val_set(sp++, &consts[TPL_INSN_A(*ip)]);
                    ticks++;
                    ip++;
                }
                goto fused_filter;
            }
        }
        goto load_slot;
    }
    CASE(LOAD_SLOT_ITEM_FILTER) {
        /* LOAD_SLOT_ITEM's fast path, then the FILTER (or FILTER_PRINT) after it without its
         * dispatch; else as LOAD_SLOT */
        const tpl_value *v = &slots[a], *hit;
        if (v->type == TPL_T_MAP && (hit = map_find_name(vm, v->u.map, &names[TPL_INSN_A(ip[2])])) != NULL) {
            if (hit->type == TPL_T_STR && ip[3] == TPL_INSN(TPL_OP_FILTER, (uint32_t)tpl_stdlib.id_trim) &&
                ip[4] == TPL_ARGW(1, 0, TPL_NO_KW)) {
                /* `message['content'] | trim` (the FILTER's fast path below): the string found
                 * trimmed before it is pushed, the FILTER's words not read again */
                tpl_value x = *hit;
                if (trim_ascii(&x)) {
                    *sp++ = x;
                    ticks += 2;
                    ip += 5; /* (LOAD_SLOT_ITEM_FILTER's two words, GETITEM_STR, FILTER's two words) */
                    DISPATCH_OR_TOP;
                }
            }
            val_set(sp++, hit);
            ticks += 2;
            ip += 3;
        fused_filter: /* (and LOAD_SLOT_ATTR_FILTER's) the FILTER or FILTER_PRINT at ip */
            w = *ip;
            a = TPL_INSN_A(w);
            if (TPL_INSN_OP(w) == TPL_OP_FILTER) goto filter_plain;
            goto filter;
        }
        goto load_slot;
    }
    CASE(LOAD_SLOT_ATTR) {
        /* LOAD_SLOT; GETATTR (r.name) of a dict's key that is no dict method: as GETATTR does it */
        tpl_value v = slots[a];
        if (v.type == TPL_T_MAP) {
            const tpl_name *nm = &names[TPL_INSN_A(ip[2])];
            tpl_value *hit = NULL;
            if (((v.flags & TPL_F_NS) || name_method(nm, TPL_BK_MAP) < 0) &&
                ((hit = map_find_name(vm, v.u.map, nm)) || !is_mutating(v, nm->s.u.s, nm->s.len))) {
                if (hit) *sp++ = *hit;
                else if (map_miss(vm, v, nm, sp++) < 0) goto fail;
                if (fresh_own_method(vm, v, &sp[-1]) < 0) goto fail;
                ticks++;
                NEXT(2);
            }
        }
        goto load_slot;
    }
    CASE(LOAD_SLOT_ITEM) {
        /* LOAD_SLOT; GETITEM_STR (message['content']) as one step when the key is there */
        const tpl_value *v = &slots[a], *hit;
        if (v->type == TPL_T_MAP && (hit = map_find_name(vm, v->u.map, &names[TPL_INSN_A(ip[2])])) != NULL) {
            ticks++;
            *sp++ = *hit;
            NEXT(2);
        }
        goto load_slot;
    }
    CASE(LOAD_SLOT_ITEM_RB_PRINT) {
    load_slot_item_rb_print:;
        /* <%= r["name"] %>: LOAD_SLOT_ITEM_RB's fast path and, for a String, PRINT_RB's, in one
         * dispatch; other values pushed (as LOAD_SLOT_ITEM_RB), the PRINT_RB then running */
        const tpl_value *v = &slots[a], *hit;
        if (v->type == TPL_T_MAP &&
            ((hit = map_find_name(vm, v->u.map, &names[TPL_INSN_A(ip[2])])) != NULL || !v->u.map->rb_default)) {
            if (hit && hit->type == TPL_T_STR) {
                ticks += 2;
                ip += 4; /* (LOAD_SLOT_ITEM_RB_PRINT's two words, GETITEM_STR_RB, PRINT_RB) */
                if (out_put(vm, hit->u.s, hit->len) < 0) goto fail;
                DISPATCH();
            }
            if (hit && hit->type == TPL_T_INT && vm->out_len + 21 < vm->out_cap) {
                /* Integer#to_s: the digits in place (PRINT_RB's) */
                char *o = vm->out + vm->out_len;
                if (hit->u.i < 0) *o++ = '-';
                o += put_decimal(o, abs_u64(hit->u.i));
                vm->out_len = (size_t)(o - vm->out);
                ticks += 2;
                ip += 4;
                DISPATCH();
            }
            ticks++;
            *sp++ = hit ? *hit : tpl_v_none();
            NEXT(2);
        }
        goto load_slot;
    }
    CASE(TEXT_SLOT_ITEM_RB_PRINT) {
        /* TEXT; LOAD_SLOT_ITEM_RB_PRINT ('- <%= slot["day"] %>'): as TEXT_IVAR_PRINT_RB */
        const tpl_value *t = &consts[a], *v = &slots[TPL_INSN_A(ip[1])], *hit;
        if (v->type == TPL_T_MAP && (hit = map_find_name(vm, v->u.map, &names[TPL_INSN_A(ip[3])])) != NULL) {
            if (hit->type == TPL_T_STR && out_put2(vm, t->u.s, t->len, hit->u.s, hit->len)) {
                ticks += 3;
                ip += 5; /* (TEXT, LOAD_SLOT_ITEM_RB_PRINT's two words, GETITEM_STR_RB, PRINT_RB) */
                DISPATCH();
            }
            if (hit->type == TPL_T_INT && vm->out_len + t->len + 21 < vm->out_cap) {
                /* '. #<%= r["id"] %>': the text, then the digits in place (PRINT_RB's) */
                char *o = vm->out + vm->out_len;
                out_copy(o, t->u.s, t->len);
                o += t->len;
                if (hit->u.i < 0) *o++ = '-';
                o += put_decimal(o, abs_u64(hit->u.i));
                vm->out_len = (size_t)(o - vm->out);
                ticks += 3;
                ip += 5;
                DISPATCH();
            }
        }
        if (out_put(vm, t->u.s, t->len) < 0) goto fail;
        ticks++; ip++; w = *ip; a = TPL_INSN_A(w);
        goto load_slot_item_rb_print;
    }
    CASE(LOAD_SLOT_ITEM_RB) {
        /* LOAD_SLOT; GETITEM_STR_RB (ERB's r["name"]) as one step when the Hash answers it: the
         * key's value, or nil when it has no such key and no default (GETITEM_STR_RB's fast path) */
        const tpl_value *v = &slots[a], *hit;
        if (v->type == TPL_T_MAP &&
            ((hit = map_find_name(vm, v->u.map, &names[TPL_INSN_A(ip[2])])) != NULL || !v->u.map->rb_default)) {
            ticks++;
            *sp++ = hit ? *hit : tpl_v_none();
            NEXT(2);
        }
        goto load_slot;
    }
    CASE(LOAD_SLOT_ITEM_SWITCH) {
        /* message['role'] of a string picking its branch of an if/elif chain (LOAD_SLOT_ITEM;
         * SWITCH_STR): one dispatch */
        const tpl_value *v = &slots[a], *hit;
        if (v->type == TPL_T_MAP && (hit = map_find_name(vm, v->u.map, &names[TPL_INSN_A(ip[2])])) != NULL &&
            hit->type == TPL_T_STR) {
            ticks += 2;
            ip += 3;
            uint32_t t = switch_target(code, PC, consts[TPL_INSN_A(*ip)].u.list, *hit);
            if (st) JUMP_TO(t); /* (a native step goes on at the jump's target only) */
            const uint32_t *q = code + t;
            if (q <= ip) CHARGE();
            if (q[0] == TPL_INSN(TPL_OP_LOAD_SLOT_ITEM, a) && q[2] == ip[-1]) {
                /* the branch starts by reading the same key of the same slot again (w4's
                 * `message['role']` printed in the elif branch it picked): that LOAD_SLOT_ITEM
                 * taken here with the value just found (its two instructions counted) */
                *sp++ = *hit;
                ticks += 2;
                q += 3;
            }
            if (q[0] == TPL_INSN(TPL_OP_LOAD_SLOT_ITEM_FILTER, a) &&
                q[3] == TPL_INSN(TPL_OP_FILTER, (uint32_t)tpl_stdlib.id_trim) && q[4] == TPL_ARGW(1, 0, TPL_NO_KW) &&
                TPL_INSN_OP(q[5]) == TPL_OP_PRINT_ADDS_K_JUMP && TPL_INSN_A(q[5]) >= 1) {
                /* ... and the branch is `{{ 'text' + ... + (message['content'] | trim) + 'text' }}`
                 * ending it (w4's every branch): LOAD_SLOT_ITEM_FILTER's trim path and the
                 * PRINT_ADDS_K_JUMP after it run here on the same dict (their four instructions and
                 * two dispatches counted), the trimmed string written where its push puts it;
                 * anything else goes on at q as the dispatch would */
                const tpl_value *c = map_find_name(vm, v->u.map, &names[TPL_INSN_A(q[2])]);
                if (c && c->type == TPL_T_STR) {
                    tpl_value x = *c;
                    if (trim_ascii(&x)) {
                        uint32_t n = TPL_INSN_A(q[5]);
                        *sp = x;
                        sp -= n - 1;
                        ticks += 5;
                        ip = q + 5; /* (the PRINT_ADDS_K_JUMP: where an error is reported) */
                        if (adds_k_op(vm, consts[ip[1]].u.list, sp, n, ip[2]) < 0) goto fail;
                        ip += 3;
                        JUMP_TO(TPL_INSN_A(*ip));
                    }
                }
            }
            ip = q;
            DISPATCH_OR_TOP;
        }
        goto load_slot_item_cmp;
    }
    CASE(LOAD_SLOT_ITEM_CMP) {
    load_slot_item_cmp:;
        /* LOAD_SLOT; GETITEM_STR (message['role']) as one step when the key is there */
        tpl_value v = slots[a];
        if (v.type != TPL_T_MAP) goto load_slot;
        const tpl_name *nm = &names[TPL_INSN_A(ip[2])];
        tpl_value *hit = map_find_name(vm, v.u.map, nm);
        if (!hit) goto load_slot;
        ticks++;
        if (CUR_OP == TPL_OP_LOAD_SLOT_ITEM_CMP && hit->type == TPL_T_STR) {
            /* ... CONST s; EQ|NE fused with JF_PY|JT_PY_KEEP on two strings: the whole test here */
            uint32_t kw = ip[3], cw = ip[4], cop = TPL_INSN_OP(cw);
            const tpl_value *k = &consts[TPL_INSN_A(kw)];
            if (k->type == TPL_T_STR) {
                bool r = hit->len == k->len && tpl_mem_eq(hit->u.s, k->u.s, k->len);
                if (cop == TPL_OP_NE_JF || cop == TPL_OP_NE_JTK) r = !r;
                ticks += 3;
                ip += 5;
                if (cop == TPL_OP_EQ_JF || cop == TPL_OP_NE_JF) {
                    if (!r) { JUMP_TO(TPL_INSN_A(*ip)); }
                } else if (r) {
                    *sp++ = tpl_v_bool(true);
                    JUMP_TO(TPL_INSN_A(*ip));
                }
                NEXT(0);
            }
        } else if (CUR_OP == TPL_OP_LOAD_SLOT_ITEM_SWITCH && hit->type == TPL_T_STR) {
            /* message['role'] picking its branch of an if/elif chain */
            ticks++;
            ip += 3;
            JUMP_TO(switch_target(code, PC, consts[TPL_INSN_A(*ip)].u.list, *hit));
        }
        *sp++ = *hit;
        NEXT(2);
    }
    CASE(LOAD_SLOT) {
    load_slot:;
        tpl_value v = slots[a];
        if (v.type == TPL_T_UNSET) {
            if (load_global(vm, &names[ip[1]], &v) < 0) goto fail;
        }
        *sp++ = v;
        NEXT(1);
    }
    CASE(LOAD_OUTER) {
        tpl_value v = outer_slots[a];
        if (v.type == TPL_T_UNSET) { if (load_global(vm, &names[ip[1]], &v) < 0) goto fail; }
        *sp++ = v;
        NEXT(1);
    }
    CASE(LOAD_UP) {
        tpl_value v;
        if (load_up(vm, a >> 16, a & 0xFFFF, &v) < 0) goto fail;
        if (v.type == TPL_T_UNSET) { if (load_global(vm, &names[ip[1]], &v) < 0) goto fail; }
        *sp++ = v;
        NEXT(1);
    }
    CASE(CL_MARK) {
        slots[a] = tpl_v_int((int64_t)vm->cl_seq);
        vm->inc_open++;
        NEXT(0);
    }
    CASE(CL_CLOSE) {
        if (slots[a].type == TPL_T_INT) {
            if (vm->inc_open) vm->inc_open--;
            if (close_since(vm, (uint32_t)slots[a].u.i, slot_base, vm->slot_top) < 0) goto fail;
        }
        NEXT(0);
    }
    CASE(MISSING_SLOT) { slots[a] = undef_named(missing_mark, 7, TPL_UNDEF_PLAIN, 0); NEXT(0); }
    CASE(MISSING_STR) {
        if (is_missing_mark(sp[-1])) sp[-1] = tpl_v_str(missing_mark, 7); /* (Jinja2: str(missing)) */
        NEXT(0);
    }
    CASE(MISSING_FAIL) {
        if (is_missing_mark(sp[-1])) {
            tpl_vm_fail(vm, TPL_EK_RUNTIME, "%.*s", (int)consts[a].len, consts[a].u.s);
            goto fail;
        }
        NEXT(0);
    }
    CASE(MISSING_IS) {
        /* (UNDEF_MSG's value: its text is the constant's, which the compiler shares per text) */
        sp[-1] = tpl_v_bool(sp[-1].type == TPL_T_UNDEF && sp[-1].u.s == consts[a].u.s);
        NEXT(0);
    }
    CASE(LOAD_GLOBAL) {
        tpl_value saved = vm->state;
        vm->state = tpl_v_none();
        int rc2 = load_global(vm, &names[a], sp);
        vm->state = saved;
        if (rc2 < 0) goto fail;
        sp++;
        NEXT(0);
    }
    CASE(LOAD_ROOT) {
        tpl_value v = root_slots[a];
        if (v.type == TPL_T_UNSET) { if (load_global(vm, &names[ip[1]], &v) < 0) goto fail; }
        *sp++ = v;
        NEXT(1);
    }
    CASE(STORE_LOAD_SLOT) {
        if (sp[-1].type != TPL_T_UNSET) {
            /* `{% set x = ... %}{{ x }}`: stored and kept on the stack, the LOAD_SLOT taken here */
            slots[a] = sp[-1];
            ticks++;
            NEXT(2);
        }
        slots[a] = *--sp;
        NEXT(0);
    }
    CASE(STORE_SLOT) {
        slots[a] = *--sp;
        NEXT(0);
    }
    CASE(STORE_ROOT) { root_slots[a] = *--sp; NEXT(0); }
    CASE(UNSET_SLOT) { slots[a] = tpl_v_unset(); NEXT(0); }
    CASE(UNSET_SLOT_RB) {
        const tpl_name *nm = &names[ip[1]];
        if (vm->state.type != TPL_T_MAP || !tpl_map_probe_str(vm->state.u.map, nm->s.u.s, nm->s.len, nm->hash))
            slots[a] = tpl_v_unset();
        NEXT(1);
    }
    CASE(GETATTR) {
        if (getattr_op(vm, &names[a], &sp[-1]) < 0) goto fail;
        NEXT(0);
    }
    CASE(GETITEM_STR) {
        if (getitem_str_op(vm, &names[a], &sp[-1]) < 0) goto fail;
        NEXT(0);
    }
    CASE(ADDS)
    CASE(PRINT_ADDS)
    CASE(ADDS_RB)
    CASE(PRINT_ADDS_RB) {
        /* a + b + c ...: plain strings concatenate in one step; anything else adds pairwise */
        tpl_value *args = sp - a;
        int k = adds_op(vm, CUR_OP, args, a);
        if (k < 0) goto fail;
        sp = args + k;
        NEXT(0);
    }
    CASE(LOOP_FILTER) {
        sp--;
        if (loop_filter_op(vm, sp[-1], sp[0], &sp[-1]) < 0) goto fail;
        NEXT(0);
    }
    CASE(PRINT_ADDS_K) {
        sp -= a;
        if (adds_k_op(vm, consts[ip[1]].u.list, sp, a, ip[2]) < 0) goto fail;
        NEXT(2);
    }
    CASE(PRINT_ADDS_K_JUMP) {
        /* PRINT_ADDS_K; JUMP (the end of an if branch in a loop's body) */
        sp -= a;
        if (adds_k_op(vm, consts[ip[1]].u.list, sp, a, ip[2]) < 0) goto fail;
        ticks++;
        ip += 3;
        JUMP_TO(TPL_INSN_A(*ip));
    }
    CASE(GETITEM) {
        sp--;
        if (tpl_getitem(vm, sp[-1], sp[0], &sp[-1]) < 0) goto fail;
        NEXT(0);
    }
    CASE(SLICE) {
        sp -= 3;
        if (do_slice(vm, sp[-1], sp[0], sp[1], sp[2], &sp[-1]) < 0) goto fail;
        NEXT(0);
    }
    CASE(NS_SET) {
        tpl_value val = sp[-1], ns = sp[-2];
        sp -= 2;
        if (ns.type != TPL_T_MAP || !(ns.flags & TPL_F_NS)) {
            /* (Jinja2 3.1.6 checks isinstance(ref, Namespace) first: an undefined ref is this error too) */
            tpl_vm_fail(vm, TPL_EK_RUNTIME, "cannot assign attribute on non-namespace object");
            goto fail;
        }
        if (!tpl_map_set(&vm->arena, ns.u.map, names[a].s, val)) { oom(vm); goto fail; }
        NEXT(0);
    }
/* Integer + Integer without overflow, in place of the two operands (ADD, ADD_RB: the same sum in
 * Python and Ruby; rb_arith would answer 0 and leave it to binop). */
#define ADD_INT_FAST() do { \
        int64_t r_; \
        if (sp[-2].type == TPL_T_INT && sp[-1].type == TPL_T_INT && !__builtin_add_overflow(sp[-2].u.i, sp[-1].u.i, &r_)) { \
            sp--; \
            sp[-1] = tpl_v_int(r_); \
            NEXT(0); \
        } } while (0)
    CASE(ADD) {
        tpl_value x = sp[-2], y = sp[-1];
        ADD_INT_FAST();
        sp--;
        if (binop(vm, TPL_OP_ADD, x, y, &sp[-1]) < 0) goto fail;
        NEXT(0);
    }
#define BINOP_CASE(NAME) CASE(NAME) { sp--; if (binop(vm, TPL_OP_##NAME, sp[-1], sp[0], &sp[-1]) < 0) goto fail; NEXT(0); }
    BINOP_CASE(SUB)
    BINOP_CASE(MUL)
    BINOP_CASE(DIV_PY)
    CASE(DIV_RB) {
        sp--;
        int h = tpl_stdlib.rb_arith(vm, '/', sp[-1], sp[0], &sp[-1]);
        if (h < 0) goto fail;
        if (h == 0 && binop(vm, TPL_OP_DIV_RB, sp[-1], sp[0], &sp[-1]) < 0) goto fail;
        NEXT(0);
    }
    BINOP_CASE(FLOORDIV)
    BINOP_CASE(MOD)
    BINOP_CASE(POW)
    CASE(NEG) {
        tpl_value v = sp[-1];
        if ((v.type == TPL_T_INT || v.type == TPL_T_BOOL) && v.u.i != INT64_MIN) sp[-1] = tpl_v_int(-v.u.i);
        else if (v.type == TPL_T_FLOAT) sp[-1] = tpl_v_float(-v.u.f);
        else {
            if (v.type == TPL_T_UNDEF) tpl_stdlib.undefined_error(vm, v);
            else if (v.type == TPL_T_INT || v.type == TPL_T_BIGINT) { if (tpl_big_neg(vm, v, &sp[-1]) == 0) NEXT(0); }
            else if (v.type == TPL_T_HOST) { /* the host's own number (a Decimal) */
                int h = tpl_hobj_arith(vm, "neg", v, tpl_v_none(), &sp[-1]);
                if (h == 0) NEXT(0);
                if (h > 0) tpl_vm_error(vm, TPL_ERR_TYPE, "bad operand type for unary -: '%s'", tpl_type_name(vm, v));
            }
            else tpl_vm_error(vm, TPL_ERR_TYPE, "bad operand type for unary -: '%s'", tpl_type_name(vm, v));
            goto fail;
        }
        NEXT(0);
    }
    CASE(POS) {
        tpl_value v = sp[-1];
        if (v.type == TPL_T_BOOL) sp[-1] = tpl_v_int(v.u.i);
        else if (v.type != TPL_T_INT && v.type != TPL_T_FLOAT && v.type != TPL_T_BIGINT) {
            int h = 1;
            if (v.type == TPL_T_HOST && (h = tpl_hobj_arith(vm, "pos", v, tpl_v_none(), &sp[-1])) == 0) NEXT(0);
            if (h < 0) goto fail;
            if (v.type == TPL_T_UNDEF) tpl_stdlib.undefined_error(vm, v);
            else tpl_vm_error(vm, TPL_ERR_TYPE, "bad operand type for unary +: '%s'", tpl_type_name(vm, v));
            goto fail;
        }
        NEXT(0);
    }
    CASE(CONCAT) {
        sp -= a;
        if (concat_py(vm, sp, a) < 0) goto fail;
        sp++;
        NEXT(0);
    }
    CASE(CONCAT_AE) {
        /* Jinja2's markup_join: when some operand is Markup, the others are escaped and the
         * result is Markup */
        sp -= a;
        bool safe = false;
        for (uint32_t i = 0; i < a; i++) safe |= sp[i].type == TPL_T_STR && (sp[i].flags & TPL_F_SAFE);
        for (uint32_t i = 0; safe && i < a; i++) {
            if (sp[i].type == TPL_T_STR && (sp[i].flags & TPL_F_SAFE)) continue;
            if (tpl_vm_strict_undef(vm, sp[i])) { tpl_stdlib.undefined_error(vm, sp[i]); goto fail; }
            if (call_builtin(vm, tpl_stdlib.id_escape, &sp[i], 1, NULL, NULL, 0, &sp[i]) < 0) goto fail;
        }
        if (concat_py(vm, sp, a) < 0) goto fail;
        if (safe) sp->flags = TPL_F_SAFE;
        sp++;
        NEXT(0);
    }
    CASE(CONCAT_RB) {
        tpl_value *args = sp - a;
        tpl_sb b;
        tpl_sb_init(&b, &vm->arena);
        for (uint32_t i = 0; i < a; i++) {
            if (tpl_is_enum_rb(args[i])) { enum_to_s_error(vm); goto fail; }
            tpl_rb_to_s(&b, args[i]);
        }
        if (b.failed) { tpl_vm_sb_error(vm, &b, "while getting the repr of an object"); goto fail; }
        sp = args;
        *sp++ = tpl_sb_value(&b);
        NEXT(0);
    }
    CASE(EQ)
    CASE(NE)
    CASE(EQ_JF)
    CASE(NE_JF)
    CASE(EQ_JTK)
    CASE(NE_JTK) {
        /* Strings compare inline; StrictUndefined's __eq__/__ne__ raise. A following JF_PY or
         * JT_PY_KEEP (an if / elif test, an `or` chain) is taken here on the bool directly. */
        tpl_value x = sp[-2], y = sp[-1];
        bool r = false;
        sp--;
        if (x.type == TPL_T_STR && y.type == TPL_T_STR) {
            r = x.len == y.len && tpl_mem_eq(x.u.s, y.u.s, x.len);
        } else if (__builtin_expect(x.type == TPL_T_HOST || y.type == TPL_T_HOST, 0)) {
            /* Python's a == b (a != b) of a host object: the object's own result, printed as itself
             * when it is no bool (a numpy-like array's), its truth for a test (Jinja2 compiles
             * `a == b` to Python's) */
            uint32_t op_ = CUR_OP;
            bool ne = op_ == TPL_OP_NE || op_ == TPL_OP_NE_JF || op_ == TPL_OP_NE_JTK;
            tpl_value v;
            int rc = tpl_hobj_richcompare(vm, ne ? "!=" : "==", x, y, &v);
            if (rc < 0) goto fail;
            if (rc > 0) {
                if (eq_op(vm, x, y, &r) < 0) goto fail;
            } else {
                if (v.type != TPL_T_BOOL && (op_ == TPL_OP_EQ || op_ == TPL_OP_NE)) { sp[-1] = v; NEXT(0); }
                int t = v.type == TPL_T_BOOL ? v.u.i != 0 : tpl_truthy_py(vm, v);
                if (t < 0) goto fail;
                if (v.type != TPL_T_BOOL && t && (op_ == TPL_OP_EQ_JTK || op_ == TPL_OP_NE_JTK)) {
                    ticks++; ip++; sp[-1] = v; JUMP_TO(TPL_INSN_A(*ip)); /* (`a == b or c`: a == b itself) */
                }
                r = ne ? !t : t;
            }
        } else if (eq_op(vm, x, y, &r) < 0) goto fail;
        if (CUR_OP == TPL_OP_NE || CUR_OP == TPL_OP_NE_JF || CUR_OP == TPL_OP_NE_JTK) r = !r;
        BRANCH_ON_RESULT(r, TPL_OP_EQ_JF, TPL_OP_NE_JF, TPL_OP_EQ_JTK, TPL_OP_NE_JTK);
    }
#define CMP_CASE(NAME, TEST) CASE(NAME) { \
        int c = 0; sp--; \
        if (__builtin_expect(is_dict_view(sp[-1]) || is_dict_view(sp[0]), 0)) { \
            bool r = false; \
            if (view_order(vm, CUR_OP, sp[-1], sp[0], &r) < 0) goto fail; \
            sp[-1] = tpl_v_bool(r); NEXT(0); \
        } \
        if (__builtin_expect(sp[-1].type == TPL_T_HOST || sp[0].type == TPL_T_HOST, 0)) { \
            int h_ = host_order(vm, CUR_OP, sp[-1], sp[0], &sp[-1]); \
            if (h_ < 0) goto fail; \
            if (h_ == 0) NEXT(0); \
        } \
        if (tpl_compare(vm, sp[-1], sp[0], true, &c) < 0) { cmp_error_op(vm, CUR_OP); goto fail; } \
        sp[-1] = tpl_v_bool(TEST); NEXT(0); }
    CMP_CASE(LT, c < 0)
    /* NaN is unordered: tpl_compare says 0 (equal) for it, so <= and >= check (< and > are false already) */
    CMP_CASE(LE, c <= 0 && !tpl_is_nan_pair(sp[-1], sp[0]))
    CMP_CASE(GT, c > 0)
    CMP_CASE(GE, c >= 0 && !tpl_is_nan_pair(sp[-1], sp[0]))
    CASE(IN) {
        bool r = false;
        sp--;
        if (contains(vm, sp[-1], sp[0], &r) < 0) goto fail;
        sp[-1] = tpl_v_bool(r);
        NEXT(0);
    }
    CASE(NOT_PY) {
        int t = tpl_truthy_py(vm, sp[-1]);
        if (t < 0) goto fail;
        sp[-1] = tpl_v_bool(!t);
        NEXT(0);
    }
    CASE(NOT_RB) { sp[-1] = tpl_v_bool(!tpl_truthy_rb(sp[-1])); NEXT(0); }
    CASE(JUMP) { JUMP_TO(a); }
    CASE(SWITCH_STR) {
        tpl_value v = *--sp;
        uint32_t n = consts[a].u.list->len;
        if (v.type != TPL_T_STR) NEXT(n + 1);
        JUMP_TO(switch_target(code, PC, consts[a].u.list, v));
    }
    CASE(JF_PY) {
        sp--;
        if (sp->type == TPL_T_BOOL) { if (!sp->u.i) { JUMP_TO(a); } NEXT(0); }
        int t = tpl_truthy_py(vm, *sp);
        if (t < 0) goto fail;
        if (!t) { JUMP_TO(a); }
        NEXT(0);
    }
    CASE(JT_PY) {
        int t = tpl_truthy_py(vm, *--sp);
        if (t < 0) goto fail;
        if (t) { JUMP_TO(a); }
        NEXT(0);
    }
    CASE(JF_PY_KEEP) {
        int t = tpl_truthy_py(vm, sp[-1]);
        if (t < 0) goto fail;
        if (!t) { JUMP_TO(a); }
        sp--;
        NEXT(0);
    }
    CASE(JT_PY_KEEP) {
        int t = tpl_truthy_py(vm, sp[-1]);
        if (t < 0) goto fail;
        if (t) { JUMP_TO(a); }
        sp--;
        NEXT(0);
    }
    CASE(JF_RB) { if (!tpl_truthy_rb(*--sp)) { JUMP_TO(a); } NEXT(0); }
    CASE(JT_RB) { if (tpl_truthy_rb(*--sp)) { JUMP_TO(a); } NEXT(0); }
    CASE(JF_RB_KEEP) { if (!tpl_truthy_rb(sp[-1])) { JUMP_TO(a); } sp--; NEXT(0); }
    CASE(JT_RB_KEEP) { if (tpl_truthy_rb(sp[-1])) { JUMP_TO(a); } sp--; NEXT(0); }
    CASE(FOR_INIT) {
        sp--;
        if (for_init_op(vm, *sp, &slots[a]) < 0) goto fail;
        NEXT(0);
    }
    CASE(FOR_NEXT_STORE) {
        /* `for x in ...`: FOR_NEXT; STORE_SLOT x, the item going to the loop variable's slot in
         * this dispatch (checked as FOR_NEXT) */
        if (slots[a].type == TPL_T_LOOP) {
            tpl_loop *l = slots[a].u.loop;
            if (__builtin_expect(l->src == NULL, 1)) {
                if (l->i < l->items->len) {
                    val_set(&slots[TPL_INSN_A(ip[2])], &l->items->items[l->i++]);
                    ticks++;
                    NEXT(2);
                }
                JUMP_TO(ip[1]);
            }
        }
        goto for_next;
    }
    CASE(FOR_NEXT) {
    for_next:;
        /* the verifier bounds the slot; its type is only known here (hostile .tplb files) */
        if (slots[a].type != TPL_T_LOOP) { tpl_vm_error(vm, TPL_ERR_TYPE, "FOR_NEXT on a slot without a loop"); goto fail; }
        tpl_loop *l = slots[a].u.loop;
        if (__builtin_expect(l->src != NULL, 0) && loop_pull(vm, l, l->i + 1) < 0) goto fail;
        if (l->i < l->items->len) {
            if (CUR_OP == TPL_OP_FOR_NEXT_STORE) {
                slots[TPL_INSN_A(ip[2])] = l->items->items[l->i++];
                ticks++;
                NEXT(2);
            }
            *sp++ = l->items->items[l->i++];
            NEXT(1);
        }
        JUMP_TO(ip[1]);
    }
    CASE(LOOP_SKIP) {
        if (slots[a].type != TPL_T_LOOP) { tpl_vm_error(vm, TPL_ERR_TYPE, "LOOP_SKIP on a slot without a loop"); goto fail; }
        if (loop_skip(vm, slots[a].u.loop) < 0) goto fail;
        NEXT(0);
    }
    CASE(LOOP_INDEX_RB) {
        if (slots[a].type != TPL_T_LOOP || slots[a].u.loop->i == 0) {
            tpl_vm_error(vm, TPL_ERR_TYPE, "LOOP_INDEX_RB on a slot without a loop item");
            goto fail;
        }
        *sp++ = tpl_v_int((int64_t)slots[a].u.loop->i - 1);
        NEXT(0);
    }
    CASE(LOOP_DEPTH) {
        tpl_value d = *--sp;
        if (slots[a].type == TPL_T_LOOP && d.type == TPL_T_LIST && d.u.list->len == 2) { /* (depth, function) */
            slots[a].u.loop->rec = d.u.list->items[1];
            d = d.u.list->items[0];
        }
        if (slots[a].type == TPL_T_LOOP && d.type == TPL_T_INT) slots[a].u.loop->depth = (uint32_t)d.u.i;
        NEXT(0);
    }
    CASE(JSET) {
        if (slots[a].type != TPL_T_UNSET) JUMP_TO(ip[1]);
        NEXT(1);
    }
    CASE(UNPACK) {
        tpl_value v = *--sp;
        tpl_list *items;
        if (v.type == TPL_T_HOST && tpl_hobj_as_iter(vm, &v) < 0) goto fail;
        if (tpl_is_iter(v) && take_iter(vm, &v, a + 1) < 0) goto fail; /* (Python takes one past the names) */
        if (v.type == TPL_T_STR || v.type == TPL_T_LIST || v.type == TPL_T_MAP) {
            if (tpl_to_list(vm, v, &items) < 0) goto fail;
        } else {
            if (v.type == TPL_T_UNDEF) tpl_stdlib.undefined_error(vm, v);
            else tpl_vm_error(vm, TPL_ERR_TYPE, "cannot unpack non-iterable %s object", tpl_type_name(vm, v));
            goto fail;
        }
        if (items->len != a) {
            if (items->len < a) tpl_vm_error(vm, TPL_ERR_VALUE, "not enough values to unpack (expected %u, got %u)", a, items->len);
            else tpl_vm_error(vm, TPL_ERR_VALUE, "too many values to unpack (expected %u)", a);
            goto fail;
        }
        STACK_CHECK(a);
        if (a) memcpy(sp, items->items, a * sizeof *sp);
        sp += a;
        NEXT(0);
    }
    CASE(FILTER) {
    filter_plain:;
        /* `s | trim` of a string with ASCII ends: before the argument word is decoded (filter_op's
         * first fast path) */
        if (ip[1] == TPL_ARGW(1, 0, TPL_NO_KW) && a == tpl_stdlib.id_trim && sp[-1].type == TPL_T_STR &&
            trim_ascii(&sp[-1]))
            NEXT(1);
        goto filter;
    }
    CASE(FILTER_PRINT)
    CASE(TEST) {
    filter:;
        uint32_t aw = ip[1];
        CALL_ARGS(aw);
        int k = filter_op(vm, CUR_OP, a, args, npos, kwn, nkw);
        if (k < 0) goto fail;
        if (k) { sp = args; ticks++; NEXT(2); } /* FILTER_PRINT: the PRINT after it done too */
        if (CUR_OP == TPL_OP_FILTER_PRINT && args[0].type == TPL_T_STR) {
            /* a string result (`default`'s, a filter called through the binder): PRINT_PY's fast
             * path here, at the PRINT_PY */
            sp = args;
            ticks++;
            ip += 2;
            if (out_put(vm, args[0].u.s, args[0].len) < 0) goto fail;
            NEXT(0);
        }
        sp = args + 1;
        NEXT(1);
    }
    CASE(CALL) {
        CHARGE();
        uint32_t aw = ip[1];
        CALL_ARGS(aw);
        tpl_value r;
        vm->stack_top = (uint32_t)(sp - vm->stack);
        vm->rb_call_base = slot_base;
        if (call_any(vm, args[-1], args, npos, kwn, args + npos, nkw, &r) < 0) goto fail;
        sp = args - 1;
        *sp++ = r;
        NEXT(1);
    }
    CASE(CALL_NAME) {
        CHARGE();
        uint32_t id = ip[1], aw = ip[2];
        if (aw == TPL_ARGW(1, 0, TPL_NO_KW) && hits && hits[a] == &name_absent && remembers_id(id, &sp[-1]) &&
            sp[-1].type == TPL_T_STR && sp[-1].len - 1u < sizeof vm->rkept[0].s) {
            /* remembers("usual doctor") again, the state known not to shadow it: the answer kept
             * by an earlier call (vm->rkept) with the fuel its fact scan charged (the call when
             * the fuel would run out, so the error falls where it did), else the fast path below
             * without decoding the argument word */
            const char *s = sp[-1].u.s;
            uint32_t n = sp[-1].len;
            uint32_t key = n << 16 | (uint32_t)(unsigned char)s[0] << 8 | (unsigned char)s[n - 1];
            struct tpl_rkept *k = &vm->rkept[(key * 0x9E3779B1u) >> 29]; /* (8 entries) */
            if (k->n == n && tpl_native_eq(k->s, s, n) && (k->kept >> 2) < vm->fuel) {
                vm->fuel -= k->kept >> 2;
                sp[-1] = tpl_v_bool(k->kept >> 1 & 1);
                NEXT(2);
            }
            if (short_ascii(s, n)) {
                uint64_t kept = 0;
                vm->stack_top = (uint32_t)(sp - vm->stack);
                if (tpl_stdlib.remembers_kept(vm, s, n, &sp[-1], &kept) < 0) goto fail;
                if (kept) {
                    k->kept = kept;
                    k->n = n;
                    memcpy(k->s, s, n);
                }
                NEXT(2);
            }
        }
        CALL_ARGS(aw);
        vm->stack_top = (uint32_t)(sp - vm->stack);
        if (hits) {
            /* call_name_op with the state's answer kept for the render */
            const tpl_value *shadow = hits[a];
            if (!shadow) {
                shadow = state_find(vm, &names[a]);
                hits[a] = shadow = shadow ? shadow : &name_absent;
            }
            if (shadow == &name_absent) {
                if (npos == 1 && nkw == 0 && remembers_id(id, &args[0]) && args[0].type == TPL_T_STR &&
                    short_ascii(args[0].u.s, args[0].len)) {
                    /* remembers("usual doctor"): the builtin's answer for an ASCII string (no NFC
                     * form to make), without binding its arguments (as the native code's) */
                    if (tpl_stdlib.remembers_ascii(vm, args[0].u.s, args[0].len, &args[0]) < 0) goto fail;
                } else if (call_name_builtin(vm, &names[a], id, args, npos, kwn, nkw) < 0) goto fail;
            } else {
                tpl_value r;
                if (call_any(vm, *shadow, args, npos, kwn, args + npos, nkw, &r) < 0) goto fail;
                args[0] = r;
            }
        } else if (call_name_op(vm, &names[a], id, args, npos, kwn, nkw) < 0) {
            goto fail;
        }
        sp = args + 1;
        NEXT(2);
    }
    CASE(CALL_METHOD) {
        CHARGE();
        uint32_t aw = ip[1];
        CALL_ARGS(aw);
        tpl_value self = args[-1];
        tpl_value r;
        int kind = method_kind(self);
        int id = !(self.flags & TPL_F_NS) ? method_gate(self, name_method(&names[a], kind)) : -1;
        if (__builtin_expect((unsigned)(id - tpl_stdlib.id_mut_lo) <= (unsigned)(tpl_stdlib.id_mut_hi - tpl_stdlib.id_mut_lo), 0) &&
            (vm->p->opts.hf || tpl_vm_syntax(vm) == TPL_SYNTAX_ERB))
            id = -1; /* (the sandbox's refusal: tpl_getattr) */
        vm->stack_top = (uint32_t)(sp - vm->stack);
        if (id >= 0) {
            /* self is already just below the arguments */
            if (call_builtin(vm, id, args - 1, npos + 1, kwn, args + npos, nkw, &r) < 0) goto fail;
        } else {
            bool handled = false;
            if (self.type == TPL_T_LOOP && nkw == 0) {
                if (loop_method(vm, self.u.loop, names[a].s, args, npos, &r, &handled) < 0) goto fail;
            }
            if (!handled) {
                tpl_value fn;
                if (tpl_getattr(vm, self, names[a].s.u.s, names[a].s.len, &fn) < 0) goto fail;
                if (call_any(vm, fn, args, npos, kwn, args + npos, nkw, &r) < 0) goto fail;
            }
        }
        sp = args - 1;
        *sp++ = r;
        NEXT(1);
    }
    CASE(BUILD_LIST)
    CASE(BUILD_TUPLE) {
        tpl_list *l = tpl_list_new(&vm->arena, a);
        if (!l) { oom(vm); goto fail; }
        sp -= a;
        if (a) memcpy(l->items, sp, a * sizeof *sp);
        l->len = a;
        *sp = tpl_v_list(l);
        /* a new list: an ERB array literal may be changed in place (TPL_F_MUT_RB; Jinja never looks) */
        sp->flags = CUR_OP == TPL_OP_BUILD_TUPLE ? TPL_F_TUPLE : TPL_F_MUT_RB;
        sp++;
        NEXT(0);
    }
    CASE(BUILD_MAP) {
        tpl_map *m = tpl_map_new(&vm->arena, a);
        if (!m) { oom(vm); goto fail; }
        sp -= 2 * a;
        for (uint32_t i = 0; i < a; i++) {
            tpl_value k = sp[2 * i];
            if ((k.type == TPL_T_LIST || k.type == TPL_T_MAP || k.type == TPL_T_UNDEF || k.type == TPL_T_HOST) &&
                tpl_vm_check_hashable(vm, k) < 0) goto fail;
            if (__builtin_expect(k.type == TPL_T_HOST || k.type == TPL_T_LIST || m->host_keys, 0)) {
                /* ({d: 1, 1: 2} with d = Decimal(1): one entry, as Python's dict) */
                if (tpl_vm_map_put(vm, m, k, sp[2 * i + 1]) < 0) goto fail;
                continue;
            }
            if (!tpl_map_set(&vm->arena, m, k, sp[2 * i + 1])) { oom(vm); goto fail; }
        }
        *sp++ = tpl_v_map(m);
        NEXT(0);
    }
    CASE(MACRO) {
        tpl_closure *cl = tpl_arena_alloc(&vm->arena, sizeof *cl);
        if (!cl) { oom(vm); goto fail; }
        cl->d = &p->macros[a];
        cl->outer_base = slot_base;
        cl->closed = NULL;
        cl->closed_lo = cl->nclosed = 0;
        cl->closed_idx = NULL;
        cl->nidx = 0;
        cl->next_open = NULL;
        cl->up = slot_base ? vm->cur_cl : NULL;
        cl->seq = vm->cl_seq++;
        /* (the main template level outlives every closure, but for an inlined include's) */
        if (slot_base | vm->root_base | vm->inc_open) {
            cl->next_open = vm->open_cl;
            vm->open_cl = cl;
        }
        cl->prog = p;
        cl->root_base = vm->root_base;
        cl->state = vm->state;
        cl->name = cl->d->name < p->nnames ? p->names[cl->d->name].s : tpl_v_str("", 0);
        tpl_value v = { 0 };
        v.type = TPL_T_MACRO;
        v.u.p = cl;
        *sp++ = v;
        NEXT(0);
    }
    CASE(FAIL) {
        tpl_vm_fail(vm, tpl_fail_kind((tpl_syntax)tpl_vm_syntax(vm), consts[a].u.s, consts[a].len), "%.*s", (int)consts[a].len,
                    consts[a].u.s);
        goto fail;
    }
    CASE(FAIL_KIND) { /* (the verifier checked word 1 is a kind) */
        tpl_vm_fail(vm, (tpl_error_kind)ip[1], "%.*s", (int)consts[a].len, consts[a].u.s);
        goto fail;
    }
    CASE(OUT_INSERT) {
        /* an include without context in filter or set blocks: its text (END_CAPTURE's) goes where
         * the A-th innermost capture began, the captures from there on move past it (the verifier
         * checked A captures are open) */
        tpl_value v = sp[-1];
        if (v.type != TPL_T_STR || a < 1 || a > (uint32_t)vm->ncaptures) { /* (only a corrupt .tplb) */
            tpl_vm_error(vm, TPL_ERR_TYPE, "bad OUT_INSERT operands");
            goto fail;
        }
        int k = vm->ncaptures - (int)a;
        if (vm->captures[k] > vm->out_len) { tpl_vm_error(vm, TPL_ERR_TYPE, "bad OUT_INSERT operands"); goto fail; }
        size_t pos = vm->captures[k], tail = vm->out_len - pos, n = v.len;
        /* (the string lives in the arena, not in the output buffer the append may move) */
        if (n && out_put(vm, v.u.s, n) < 0) goto fail;
        if (n) {
            memmove(vm->out + pos + n, vm->out + pos, tail);
            memcpy(vm->out + pos, v.u.s, n);
            for (int i = k; i < vm->ncaptures; i++) vm->captures[i] += n;
        }
        sp--;
        NEXT(0);
    }
    CASE(ESCAPE) {
        if (!(sp[-1].type == TPL_T_STR && (sp[-1].flags & TPL_F_SAFE))) {
            tpl_value r;
            if (call_builtin(vm, tpl_stdlib.id_escape, sp - 1, 1, NULL, NULL, 0, &r) < 0) goto fail;
            sp[-1] = r;
        }
        NEXT(0);
    }
    CASE(RETURN) {
        CHARGE();
        size_t mark = vm->captures[--vm->ncaptures];
        char *s = tpl_arena_strdup(&vm->arena, vm->out + mark, vm->out_len - mark);
        if (!s) { oom(vm); goto fail; }
        *result = tpl_v_str(s, vm->out_len - mark);
        /* Environment(autoescape=True): a macro, caller or recursive loop returns Markup however
         * it is reached (an imported module's attribute, a dict item), as Jinja2's Macro */
        if (vm->p->opts.autoescape && vm->p->opts.syntax == TPL_SYNTAX_JINJA) result->flags = TPL_F_SAFE;
        vm->out_len = mark;
        return 0;
    }
    CASE(INCLUDE_DYN) {
        CHARGE();
        sp -= 2;
        vm->stack_top = (uint32_t)(sp - vm->stack);
        if (include_dyn(vm, sp[0], sp[1], a) < 0) goto fail;
        NEXT(0);
    }
    CASE(IMPORT_DYN) {
        CHARGE();
        sp -= 2;
        vm->stack_top = (uint32_t)(sp - vm->stack);
        tpl_value m;
        if (import_dyn(vm, sp[0], sp[1], &m) < 0) goto fail;
        *sp++ = m;
        NEXT(0);
    }
    CASE(IMPORT_MOD) {
        CHARGE();
        vm->stack_top = (uint32_t)(sp - vm->stack);
        tpl_value m;
        if (import_mod(vm, &p->macros[a], vm->root_base + ip[1], &m) < 0) goto fail;
        *sp++ = m;
        NEXT(1);
    }
    CASE(MODULE) {
        /* {% import ... as m %}: a Namespace of the exports that prints as the template's output
         * (A = 3: the output below the name and the dict; A = 2: the import's, import_out) and repr()s as
         * <TemplateModule 'name'> */
        CHARGE();
        if ((a != 2 && a != 3) || sp[-1].type != TPL_T_MAP) { /* (only a corrupt .tplb: the compiler emits neither) */
            tpl_vm_error(vm, TPL_ERR_TYPE, "bad module operands");
            goto fail;
        }
        tpl_value *mv = tpl_arena_alloc(&vm->arena, 2 * sizeof *mv);
        if (!mv) { oom(vm); goto fail; }
        mv[0] = a == 3 ? sp[-3] : vm->import_out;
        mv[1] = sp[-2];
        if (mv[0].type != TPL_T_STR) mv[0] = tpl_v_str("", 0);
        const tpl_map *d = sp[-1].u.map; /* (BUILD_MAP's, IMPORT_MOD's or IMPORT_DYN's dict) */
        tpl_map *m = tpl_map_new(&vm->arena, d->len);
        if (!m) { oom(vm); goto fail; }
        for (uint32_t i = 0; i < d->len; i++)
            if (!tpl_map_append(&vm->arena, m, d->e[i].key, d->e[i].hash, d->e[i].val)) { oom(vm); goto fail; }
        m->module = mv;
        sp -= a;
        *sp = tpl_v_map(m);
        sp->flags = TPL_F_NS;
        sp++;
        NEXT(0);
    }
    CASE(EXTENDS_DYN) {
        CHARGE();
        vm->stack_top = (uint32_t)(sp - vm->stack);
        const tpl_program *sub;
        if (extends_load(vm, sp[-1], &sub) < 0) goto fail;
        NEXT(0);
    }
    CASE(EXTENDS_RUN) {
        CHARGE();
        sp -= 1;
        vm->stack_top = (uint32_t)(sp - vm->stack);
        if (slots[a].type == TPL_T_STR) {
            const tpl_program *sub;
            if (extends_load(vm, slots[a], &sub) < 0 || run_loaded(vm, sub, sp[0], NULL) < 0) goto fail;
        }
        NEXT(0);
    }
    CASE(HALT) {
        CHARGE();
        *result = tpl_v_none();
        return 0;
    }
    /* format strings (compiler/lower_fmt.c) */
    CASE(FMT_BEGIN) {
        tpl_value fields, tr;
        if (tpl_stdlib.fmt_begin(vm, consts[ip[1]], &fields, &tr) < 0) goto fail;
        slots[a] = fields;
        if (tr.type == TPL_T_STR) {
            if (out_put(vm, tr.u.s, tr.len) < 0) goto fail;
            JUMP_TO(ip[2]);
        }
        NEXT(2);
    }
    CASE(FMT_FIELD) {
        tpl_value obj = sp[-1];
        tpl_value *hit = obj.type == TPL_T_MAP
            ? map_find_name(vm, obj.u.map, &names[a]) : NULL;
        if (hit) sp[-1] = *hit;
        else if (tpl_stdlib.fmt_item(vm, obj, names[a].s, &sp[-1]) < 0) goto fail;
        NEXT(0);
    }
    CASE(FMT_ITEM) { if (tpl_stdlib.fmt_item(vm, sp[-1], consts[a], &sp[-1]) < 0) goto fail; NEXT(0); }
    CASE(FMT_ATTR) { if (tpl_stdlib.fmt_attr(vm, sp[-1], consts[a], &sp[-1]) < 0) goto fail; NEXT(0); }
    CASE(FMT_CONV) { if (tpl_stdlib.fmt_conv(vm, sp[-1], (int)a, &sp[-1]) < 0) goto fail; NEXT(0); }
    CASE(FMT_PRINT) {
        tpl_value v = *--sp;
        if (v.type == TPL_T_STR && consts[a].len == 0) {
            if (out_put(vm, v.u.s, v.len) < 0) goto fail;
        } else {
            tpl_sb b;
            tpl_sb_init(&b, &vm->arena);
            if (tpl_stdlib.format_value(vm, &b, v, consts[a].u.s, consts[a].len) < 0) goto fail;
            if (b.failed) { tpl_vm_sb_error(vm, &b, "while getting the repr of an object"); goto fail; }
            if (b.len && out_put(vm, b.p, b.len) < 0) goto fail; /* empty: b.p may be NULL */
        }
        NEXT(0);
    }
    CASE(FMT_SPEC) {
        tpl_value spec = *--sp;
        tpl_sb b;
        tpl_sb_init(&b, &vm->arena);
        if (tpl_stdlib.format_value(vm, &b, sp[-1], spec.u.s, spec.len) < 0) goto fail;
        if (b.failed) { tpl_vm_sb_error(vm, &b, "while getting the repr of an object"); goto fail; }
        sp[-1] = tpl_sb_value(&b);
        NEXT(0);
    }


    /* ---- Ruby (ERB) ---- */
    CASE(LOAD_NAME_RB) {
        if (load_global(vm, &names[a], sp) < 0) goto fail;
        if (sp->type == TPL_T_UNDEF && vm->rb_self.type == TPL_T_HOST) { /* self's method (tpl_render_set_self_val) */
            vm->stack_top = (uint32_t)(sp - vm->stack);
            int rc = tpl_hobj_send(vm, vm->rb_self, names[a].s.u.s, names[a].s.len, NULL, 0, NULL, NULL, 0, sp);
            if (rc < 0) goto fail;
            if (rc > 0) *sp = tpl_v_undef();
        }
        if (sp->type == TPL_T_UNDEF) {
            /* (`ready?`, `save!`: no local variable has that name, Ruby calls a method: NoMethodError) */
            char last = names[a].s.len ? names[a].s.u.s[names[a].s.len - 1] : 0;
            tpl_vm_error(vm, TPL_ERR_UNDEFINED, last == '?' || last == '!' ? "undefined method `%.*s' for main:Object (NoMethodError)"
                                                                            : "undefined local variable or method `%.*s' for main:Object (NameError)",
                         (int)names[a].s.len, names[a].s.u.s);
            goto fail;
        }
        sp++;
        NEXT(0);
    }
    CASE(LOAD_IVAR_RB_PRINT) {
    load_ivar_rb_print:;
        /* <%= @name %> of a state String the render has found before: PRINT_RB's fast path here;
         * else as LOAD_IVAR_RB, the PRINT_RB then running as it is */
        const tpl_value *v = kept_ivar(vm, hits, a, names);
        if (v && v->type == TPL_T_STR) {
            ticks++;
            ip += 2;
            if (out_put(vm, v->u.s, v->len) < 0) goto fail;
            DISPATCH();
        }
        goto load_ivar_rb;
    }
    CASE(LOAD_IVAR_ITEM_RB_PRINT) {
    load_ivar_item_rb_print:;
        /* <%= @clinic["name"] %> of a String a state Hash holds: LOAD_IVAR_RB, GETITEM_STR_RB and
         * PRINT_RB's fast paths here; else as LOAD_IVAR_RB */
        const tpl_value *v = kept_item_rb(vm, hits, a, TPL_INSN_A(ip[1]), names);
        if (v && v->type == TPL_T_STR) {
            ticks += 2;
            ip += 3;
            if (out_put(vm, v->u.s, v->len) < 0) goto fail;
            DISPATCH();
        }
        goto load_ivar_rb;
    }
    CASE(LOAD_IVAR_RB_JF) {
        /* <% if @patient %> of a state value the render has found before: JF_RB's jump here (Ruby's
         * truth cannot fail) */
        const tpl_value *v = kept_ivar(vm, hits, a, names);
        if (v) {
            ticks++;
            ip++; /* (the JF_RB) */
            if (!tpl_truthy_rb(*v)) { JUMP_TO(TPL_INSN_A(*ip)); } /* (an UNDEF: nil, false) */
            NEXT(0);
        }
        goto load_ivar_rb;
    }
    CASE(LOAD_IVAR_ITEM_RB_JF) {
        /* <% if @patient["is_new"] %> of a key a state Hash holds: GETITEM_STR_RB's value tested and
         * JF_RB's jump taken here; else as LOAD_IVAR_RB */
        const tpl_value *v = kept_item_rb(vm, hits, a, TPL_INSN_A(ip[1]), names);
        if (v) {
            ticks += 2;
            ip += 2; /* (the JF_RB) */
            if (!tpl_truthy_rb(*v)) { JUMP_TO(TPL_INSN_A(*ip)); }
            NEXT(0);
        }
        goto load_ivar_rb;
    }
    CASE(LOAD_IVAR_RB_SWITCH) {
        /* LOAD_IVAR_RB; SWITCH_STR of a state String the render has found before: its branch picked
         * here (as SWITCH_STR); else as LOAD_IVAR_RB */
        const tpl_value *v = kept_ivar(vm, hits, a, names);
        if (v && v->type == TPL_T_STR) {
            ticks++;
            ip++; /* (the SWITCH_STR) */
            JUMP_TO(switch_target(code, PC, consts[TPL_INSN_A(*ip)].u.list, *v));
        }
        goto load_ivar_rb;
    }
    CASE(TEXT_IVAR_PRINT_RB) {
        /* TEXT; LOAD_IVAR_RB_PRINT: the text and the String in one append when that fast path
         * applies, else the text and then that instruction */
        const tpl_value *t = &consts[a], *v = kept_ivar(vm, hits, TPL_INSN_A(ip[1]), names);
        if (v && v->type == TPL_T_STR && out_put2(vm, t->u.s, t->len, v->u.s, v->len)) {
            ticks += 2;
            ip += 3; /* (TEXT, LOAD_IVAR_RB_PRINT, PRINT_RB) */
            DISPATCH();
        }
        if (out_put(vm, t->u.s, t->len) < 0) goto fail;
        ticks++; ip++; w = *ip; a = TPL_INSN_A(w);
        goto load_ivar_rb_print;
    }
    CASE(TEXT_IVAR_ITEM_PRINT_RB) {
        /* TEXT; LOAD_IVAR_ITEM_RB_PRINT: as TEXT_IVAR_PRINT_RB */
        const tpl_value *t = &consts[a], *v = kept_item_rb(vm, hits, TPL_INSN_A(ip[1]), TPL_INSN_A(ip[2]), names);
        if (v && v->type == TPL_T_STR && out_put2(vm, t->u.s, t->len, v->u.s, v->len)) {
            ticks += 3;
            ip += 4; /* (TEXT, LOAD_IVAR_ITEM_RB_PRINT, GETITEM_STR_RB, PRINT_RB) */
            DISPATCH();
        }
        if (out_put(vm, t->u.s, t->len) < 0) goto fail;
        ticks++; ip++; w = *ip; a = TPL_INSN_A(w);
        goto load_ivar_item_rb_print;
    }
    CASE(LOAD_IVAR_RB) {
    load_ivar_rb:;
        /* self's instance variable: send "@name" — unless self's @ivars are the state's for now
         * (tpl_render_set_self_ivars_in_state: the host read them before the run), then the
         * state's name, and self's when the state does not hold it */
        bool self_iv = vm->rb_self.type == TPL_T_HOST;
        if ((!self_iv || vm->rb_ivars_state) && vm->state.type == TPL_T_MAP) {
            /* the state's @name (Tpl::ERB's ivars): load_name's kept lookup */
            const tpl_value *hit;
            if (hits && hits[a]) {
                hit = hits[a] == &name_absent ? NULL : hits[a];
            } else {
                hit = state_find(vm, &names[a]);
                if (hits) hits[a] = hit ? hit : &name_absent;
            }
            if (hit) {
                *sp = hit->type == TPL_T_UNDEF ? tpl_v_none() : *hit;
                sp++;
                NEXT(0);
            }
        }
        if (self_iv) {
            vm->stack_top = (uint32_t)(sp - vm->stack);
            int rc = send_ivar(vm, &names[a].s, sp);
            if (rc < 0) goto fail;
            if (rc > 0) *sp = tpl_v_none();
            sp++;
            NEXT(0);
        }
        if (load_global(vm, &names[a], sp) < 0) goto fail;
        if (sp->type == TPL_T_UNDEF) *sp = tpl_v_none();
        sp++;
        NEXT(0);
    }
    CASE(GETITEM_STR_RB) {
        tpl_value obj = sp[-1];
        if (obj.type == TPL_T_MAP) {
            tpl_value *hit = map_find_name(vm, obj.u.map, &names[a]);
            if (hit || !obj.u.map->rb_default) {   /* (a Hash with a default answers it: rb_getitem) */
                sp[-1] = hit ? *hit : tpl_v_none();
                NEXT(0);
            }
        }
        vm->stack_top = (uint32_t)(sp - vm->stack); /* (a Hash's default block runs above the operands) */
        if (tpl_stdlib.rb_getitem(vm, obj, names[a].s, &sp[-1]) < 0) goto fail;
        NEXT(0);
    }
    CASE(GETITEM_RB) {
        sp--;
        vm->stack_top = (uint32_t)(sp - vm->stack); /* (a Hash's default block runs above the operands) */
        if (tpl_stdlib.rb_getitem(vm, sp[-1], sp[0], &sp[-1]) < 0) goto fail;
        NEXT(0);
    }
    CASE(CALL_METHOD_RB_PRINT)
    CASE(CALL_METHOD_RB) {
        uint32_t aw = ip[1], bw = ip[2];
        int npos = (int)TPL_ARGW_NPOS(aw), nkw = (int)TPL_ARGW_NKW(aw);
        tpl_value *args = sp - npos - nkw;
        tpl_value r;
        if (bw == 0 && nkw == 0 && args[-1].flags == 0 && npos < TPL_MAX_PARAMS) {
            int direct;
            int id = rb_site_method(vm, ip, args[-1], &names[a].s, args, npos, &direct);
            if (id >= 0) {
                /* tpl_rb_send's call of that builtin (call_id), without its lookups */
                tpl_rb_block save = vm->rb_block;
                vm->rb_block = (tpl_rb_block){ 0, 0, (uint32_t)(slots - vm->slots) };
                vm->stack_top = (uint32_t)(sp - vm->stack);
                int rc;
                if (direct == 2) {
                    /* call_builtin's positional binding of every parameter: the receiver and the
                     * arguments where they are on the stack (popped after the call) */
                    rc = tpl_stdlib.table[id].fn(vm, args - 1, &r);
                } else {
                    rc = site_call_copied(vm, id, direct, args, npos, &r);
                }
                vm->rb_block = save;
                if (rc < 0) goto fail;
                sp = args - 1;
                goto call_method_rb_done;
            }
        }
        const tpl_value *kwn = nkw ? consts[TPL_ARGW_K(aw)].u.list->items : NULL;
        tpl_rb_block save = vm->rb_block;
        vm->rb_block = (tpl_rb_block){ bw & 0xFFFFFFu, bw >> 24, (uint32_t)(slots - vm->slots) };
        vm->stack_top = (uint32_t)(sp - vm->stack);
        int rc = tpl_stdlib.rb_send(vm, args[-1], names[a].s.u.s, names[a].s.len, args, npos, kwn, args + npos, nkw, &r);
        vm->rb_block = save;
        if (rc < 0) goto fail;
        sp = args - 1;
    call_method_rb_done:
        if (CUR_OP == TPL_OP_CALL_METHOD_RB_PRINT && r.type == TPL_T_STR) {
            /* `<%= r["name"].upcase %>`: PRINT_RB's string path here, at the PRINT_RB (where an
             * output limit is reported), without its dispatch */
            ticks++;
            ip += 3;
            if (out_put(vm, r.u.s, r.len) < 0) goto fail;
            NEXT(0);
        }
        *sp++ = r;
        NEXT(2);
    }
    CASE(CALL_SELF_RB) {
        uint32_t aw = ip[1];
        int npos = (int)TPL_ARGW_NPOS(aw), nkw = (int)TPL_ARGW_NKW(aw);
        tpl_value *args = sp - npos - nkw;
        if (vm->rb_self.type != TPL_T_HOST) {
            tpl_vm_error(vm, TPL_ERR_SYNTAX, "undefined method `%.*s' for main:Object (NoMethodError)",
                         names[a].s.len > 100 ? 100 : (int)names[a].s.len, names[a].s.u.s);
            goto fail;
        }
        const tpl_value *kwn = nkw ? consts[TPL_ARGW_K(aw)].u.list->items : NULL;
        tpl_value r;
        tpl_rb_block save = vm->rb_block;
        vm->rb_block = (tpl_rb_block){ 0, 0, 0 };
        vm->stack_top = (uint32_t)(sp - vm->stack);
        int rc = tpl_stdlib.rb_send(vm, vm->rb_self, names[a].s.u.s, names[a].s.len, args, npos, kwn, args + npos, nkw, &r);
        vm->rb_block = save;
        if (rc < 0) goto fail;
        sp = args;
        *sp++ = r;
        NEXT(1);
    }
    CASE(ARGS_STAR) {
        sp--;
        if (args_star(vm, &sp[-1], sp[0]) < 0) goto fail;
        NEXT(0);
    }
    CASE(ARGS_DSTAR) {
        sp--;
        if (args_dstar(vm, &sp[-1], sp[0]) < 0) goto fail;
        NEXT(0);
    }
    CASE(RET_RB) {
        CHARGE(); /* a block's instructions count even when it has no loop: 10^11 yields of an
                   * empty block ran with no fuel charged */
        *result = *--sp;
        if (a) vm->rb_broke = true;
        return 0;
    }
    CASE(UNPACK_RB) {
        tpl_value v = *--sp;
        STACK_CHECK(a);
        bool arr = v.type == TPL_T_LIST && !(v.flags & (TPL_F_RANGE_RB | TPL_F_MATCH_RB | TPL_F_ENUM_RB));
        for (uint32_t i = 0; i < a; i++)
            sp[i] = arr ? (i < v.u.list->len ? v.u.list->items[i] : tpl_v_none()) : (i == 0 ? v : tpl_v_none());
        sp += a;
        NEXT(0);
    }
    CASE(RANGE_RB) {
        sp--;
        if (tpl_stdlib.rb_range(vm, sp[-1], sp[0], a != 0, &sp[-1]) < 0) goto fail;
        NEXT(0);
    }
    CASE(FOR_INIT_RB) {
        tpl_list *items;
        if (tpl_stdlib.rb_each_list(vm, *--sp, (int)(a >> 16), &items) < 0) goto fail;
        if (__builtin_expect(items->cap == TPL_PEND_MARK, 0)) { /* an endless range's items, as the loop pulls them */
            tpl_value it = tpl_v_list(items);
            it.aux = TPL_LAZY_RANGE_ITER;
            if (for_init_op(vm, it, &slots[a & 0xFFFFu]) < 0) goto fail;
        } else if (new_loop(vm, items, &slots[a & 0xFFFFu]) < 0) {
            goto fail;
        }
        NEXT(0);
    }
#define RB_ARITH_CASE(NAME, BASE, OPC) CASE(NAME) { \
        sp--; \
        int h = tpl_stdlib.rb_arith(vm, OPC, sp[-1], sp[0], &sp[-1]); \
        if (h < 0) goto fail; \
        if (h == 0 && binop(vm, TPL_OP_##BASE, sp[-1], sp[0], &sp[-1]) < 0) goto fail; \
        NEXT(0); }
    CASE(ADD_RB) {
        ADD_INT_FAST();
        sp--;
        int h = tpl_stdlib.rb_arith(vm, '+', sp[-1], sp[0], &sp[-1]);
        if (h < 0) goto fail;
        if (h == 0 && binop(vm, TPL_OP_ADD, sp[-1], sp[0], &sp[-1]) < 0) goto fail;
        NEXT(0);
    }
    RB_ARITH_CASE(SUB_RB, SUB, '-')
    RB_ARITH_CASE(MUL_RB, MUL, '*')
    RB_ARITH_CASE(MOD_RB, MOD, '%')
    RB_ARITH_CASE(POW_RB, POW, 'p')
#define RB_CMP_CASE(NAME, OPS, TEST) CASE(NAME) { \
        int c = 0; sp--; \
        int k_ = tpl_stdlib.rb_compare_check(vm, OPS, sp[-1], sp[0], &sp[-1]); \
        if (k_ < 0) goto fail; \
        if (k_ > 0) NEXT(0); /* (a host object's own operator answered) */ \
        if (tpl_compare(vm, sp[-1], sp[0], true, &c) < 0) goto fail; \
        sp[-1] = tpl_v_bool(TEST); NEXT(0); }
    RB_CMP_CASE(LT_RB, "<", c < 0)
    RB_CMP_CASE(LE_RB, "<=", c <= 0 && !tpl_is_nan_pair(sp[-1], sp[0]))
    RB_CMP_CASE(GT_RB, ">", c > 0)
    RB_CMP_CASE(GE_RB, ">=", c >= 0 && !tpl_is_nan_pair(sp[-1], sp[0]))
    CASE(NEG_RB) {
        tpl_value v = sp[-1];
        if (v.type == TPL_T_INT && v.u.i != INT64_MIN) sp[-1] = tpl_v_int(-v.u.i);
        else if (v.type == TPL_T_FLOAT) sp[-1] = tpl_v_float(-v.u.f);
        else if (v.type == TPL_T_INT || v.type == TPL_T_BIGINT) { if (tpl_big_neg(vm, v, &sp[-1]) < 0) goto fail; }
        else if (tpl_stdlib.rb_send(vm, v, "-@", 2, NULL, 0, NULL, NULL, 0, &sp[-1]) < 0) goto fail;   /* String#-@ */
        NEXT(0);
    }
    CASE(EQ_RB)
    CASE(NE_RB)
    CASE(EQ_RB_JF)
    CASE(NE_RB_JF)
    CASE(EQ_RB_JTK)
    CASE(NE_RB_JTK) {
        /* as EQ/NE: strings inline, a following JF_RB / JT_RB_KEEP taken on the result here */
        tpl_value x = sp[-2], y = sp[-1];
        bool r = false;
        if (x.type == TPL_T_STR && y.type == TPL_T_STR && !((x.flags | y.flags) & (TPL_F_EXC_RB | TPL_F_CLASS_RB | TPL_F_REGEX_RB))) r = x.len == y.len && tpl_mem_eq(x.u.s, y.u.s, x.len);
        else if (tpl_stdlib.rb_equal(vm, x, y, &r) < 0) goto fail;
        if (CUR_OP == TPL_OP_NE_RB || CUR_OP == TPL_OP_NE_RB_JF || CUR_OP == TPL_OP_NE_RB_JTK) r = !r;
        sp--;
        BRANCH_ON_RESULT(r, TPL_OP_EQ_RB_JF, TPL_OP_NE_RB_JF, TPL_OP_EQ_RB_JTK, TPL_OP_NE_RB_JTK);
    }
#define HOST_CASE(NAME, KIND) CASE(NAME) { \
        CHARGE(); \
        uint32_t aw = ip[1]; \
        CALL_ARGS(aw); \
        tpl_value r; \
        vm->stack_top = (uint32_t)(sp - vm->stack); \
        if (tpl_vm_host_call(vm, KIND, consts[a], args, npos, kwn, args + npos, nkw, &r) < 0) goto fail; \
        sp = args; \
        *sp++ = r; \
        NEXT(1); }
    HOST_CASE(HOST_FILTER, TPL_HOST_FILTER)
    HOST_CASE(HOST_CALL, TPL_HOST_GLOBAL)
    HOST_CASE(HOST_TEST, TPL_HOST_TEST)
#if !defined(__GNUC__)
    }
#endif
out_of_fuel:
    tpl_vm_limit(vm, TPL_EK_FUEL, vm->limits.fuel);
fail:
    (void)rc;
    if (vm->err_unlocated) locate(vm, PC);
    return -1;
stepped: /* (native step) the next instruction was counted by its dispatch, not run */
    st->pc = PC;
    st->sp = (uint32_t)(sp - stack);
    st->ticks = ticks - 1;
    return 1;
}

/* Whether the running thread's C stack is too near its end for another nested run. TPL_VM_NEST_MAX
 * bounds the nesting by count, but a level's frames are larger in some builds (sanitizers) and a
 * host's thread stack may be small (a Ruby thread's): past TPL_VM_CSTACK_CHECK levels each run
 * compares its frame with a guard TPL_VM_CSTACK_MARGIN (a quarter of a small stack) above the
 * stack's low end, looked up once per render (pthread_getattr_np, glibc). Never a SIGSEGV: the same depth error, earlier. */
static bool cstack_exhausted(tpl_vm *vm)
{
    uintptr_t here = (uintptr_t)__builtin_frame_address(0);
    if (!vm->cstack_guard) {
        pthread_attr_t a;
        void *lo = NULL;
        size_t size = 0;
        vm->cstack_guard = 1; /* unknown: the count alone */
        if (pthread_getattr_np(pthread_self(), &a) == 0) {
            if (pthread_attr_getstack(&a, &lo, &size) == 0 && lo && size >= 64 * 1024)
                vm->cstack_guard = (uintptr_t)lo + (size >= 4 * TPL_VM_CSTACK_MARGIN ? TPL_VM_CSTACK_MARGIN : size / 4);
            pthread_attr_destroy(&a);
        }
    }
    return here < vm->cstack_guard;
}

static int run_native(tpl_vm *vm, uint32_t pc, uint32_t slot_base, uint32_t outer_base, uint32_t npre, tpl_value *result);

/* A call level of vm->p: the native render when the program has one, else the interpreter. */
static int run(tpl_vm *vm, uint32_t pc, uint32_t slot_base, uint32_t outer_base, uint32_t npre, tpl_value *result)
{
    if (vm->depth > TPL_VM_NEST_MAX) /* every nested run counts in depth: the C stack's bound */
        return tpl_vm_fail(vm, TPL_EK_DEPTH, "maximum call depth reached (%d nested calls)", TPL_VM_NEST_MAX);
    if (__builtin_expect(vm->depth > TPL_VM_CSTACK_CHECK, 0) && cstack_exhausted(vm))
        return tpl_vm_fail(vm, TPL_EK_DEPTH, "maximum call depth reached (%u nested calls: the thread's C stack "
                           "is near its end)", vm->depth);
    if (vm->p->native) return run_native(vm, pc, slot_base, outer_base, npre, result);
    return interp(vm, pc, slot_base, outer_base, npre, result, NULL);
}

/* run's call of the native render. Its own frame: the native frame (its fields' copies) stays off
 * run's, which every nested interpreted call has on the C stack. */
static __attribute__((noinline)) int run_native(tpl_vm *vm, uint32_t pc, uint32_t slot_base, uint32_t outer_base,
                                                uint32_t npre, tpl_value *result)
{
    tpl_native_frame f = {
        .vm = vm, .stack = (tpl_nvalue *)(void *)(vm->stack + vm->stack_top),
        .slots = (tpl_nvalue *)(void *)(vm->slots + slot_base), .out = &vm->out, .out_len = &vm->out_len,
        .out_cap = &vm->out_cap, .fuel = &vm->fuel, .result = (tpl_nvalue *)(void *)result,
        .slot_base = slot_base, .outer_base = outer_base, .state = (const tpl_nvalue *)(const void *)&vm->state,
        .hints = vm->native_hint,
        /* (the memo is the root state's: a macro of another template or an include with
         * its own context reads another state) */
        .memo = vm->p->native == vm->memo_fn && vm->state.type == TPL_T_MAP && vm->state.u.map == vm->memo_state
                    ? (const tpl_nvalue **)(void *)vm->native_memo : NULL,
    };
    f.kept = f.memo ? vm->native_kept : NULL;
    return vm->p->native(&f, pc, npre);
}

/* ------------------------------------------------------------------ native programs (tpl_native.h) */

_Static_assert(sizeof(tpl_nvalue) == sizeof(tpl_value), "tpl_nvalue mirrors tpl_value");
_Static_assert(offsetof(tpl_nvalue, len) == offsetof(tpl_value, len), "tpl_nvalue mirrors tpl_value");
_Static_assert(offsetof(tpl_nvalue, u) == offsetof(tpl_value, u), "tpl_nvalue mirrors tpl_value");
_Static_assert((int)TPL_NT_UNSET == (int)TPL_T_UNSET && (int)TPL_NT_STR == (int)TPL_T_STR &&
               (int)TPL_NT_MAP == (int)TPL_T_MAP && (int)TPL_NT_BOOL == (int)TPL_T_BOOL &&
               (int)TPL_NT_LIST == (int)TPL_T_LIST && (int)TPL_NT_UNDEF == (int)TPL_T_UNDEF &&
               (int)TPL_NT_NONE == (int)TPL_T_NONE && (int)TPL_NT_INT == (int)TPL_T_INT &&
               (int)TPL_NT_FLOAT == (int)TPL_T_FLOAT && (int)TPL_NT_LOOP == (int)TPL_T_LOOP, "tpl_native.h type numbers");

_Static_assert((int)TPL_NF_SAFE == (int)TPL_F_SAFE && (int)TPL_NF_SYMBOL == (int)TPL_F_SYMBOL &&
               (int)TPL_NF_RANGE_BIG == (int)TPL_F_RANGE_BIG && (int)TPL_NF_REGEX_RB == (int)TPL_F_REGEX_RB &&
               (int)TPL_NF_CLASS_RB == (int)TPL_F_CLASS_RB, "tpl_native.h flags");
_Static_assert(sizeof(tpl_nentry) == sizeof(tpl_entry) && offsetof(tpl_nentry, val) == offsetof(tpl_entry, val) &&
               offsetof(tpl_nentry, hash) == offsetof(tpl_entry, hash), "tpl_nentry mirrors tpl_entry");
_Static_assert(offsetof(tpl_nmap, len) == offsetof(tpl_map, len) && offsetof(tpl_nmap, idx_cap) == offsetof(tpl_map, idx_cap) &&
               offsetof(tpl_nmap, e) == offsetof(tpl_map, e) && offsetof(tpl_nmap, idx) == offsetof(tpl_map, idx),
               "tpl_nmap mirrors tpl_map's leading members");

_Static_assert(sizeof(tpl_nlist) == sizeof(tpl_list) && offsetof(tpl_nlist, items) == offsetof(tpl_list, items) &&
               offsetof(tpl_nlist, len) == offsetof(tpl_list, len), "tpl_nlist mirrors tpl_list");
_Static_assert((int)TPL_NLAZY_ITER == (int)TPL_LAZY_GENERATOR, "TPL_NLAZY_ITER is the first iterator");
_Static_assert(offsetof(tpl_nloop, items) == offsetof(tpl_loop, items) && offsetof(tpl_nloop, src) == offsetof(tpl_loop, src) &&
               offsetof(tpl_nloop, i) == offsetof(tpl_loop, i) && offsetof(tpl_nloop, len1) == offsetof(tpl_loop, len1) &&
               (int)TPL_NT_LOOP == (int)TPL_T_LOOP,
               "tpl_nloop mirrors tpl_loop's leading members");

_Static_assert(sizeof ((tpl_vm *)0)->native_hint / sizeof(uint32_t) == TPL_NHINTS, "tpl_native.h hints");
_Static_assert(sizeof ((tpl_vm *)0)->native_memo / sizeof(tpl_value *) == TPL_NMEMO, "tpl_native.h memo");
_Static_assert(sizeof ((tpl_vm *)0)->native_kept / sizeof(uint64_t) == TPL_NKEPT, "tpl_native.h kept");

#define NV(x) ((tpl_value *)(void *)(x))

int tpl_native_step(tpl_native_frame *f, uint32_t pc, uint32_t sp)
{
    if (!f || !f->vm) return -1;
    tpl_vm *vm = f->vm;
    if (pc >= vm->p->ncode) return -1;
    tpl_value r;
    int rc = interp(vm, pc, f->slot_base, f->outer_base, sp, f->result ? NV(f->result) : &r, f);
    return rc;
}

int tpl_native_run_vm(tpl_native_frame *f, uint32_t entry, uint32_t npre)
{
    if (!f || !f->vm) return -1;
    tpl_vm *vm = f->vm;
    if (f->ticks) { /* the instructions the native code ran before */
        if (f->ticks > vm->fuel) return tpl_native_out_of_fuel(f, entry);
        vm->fuel -= f->ticks;
        f->ticks = 0;
    }
    vm->stack_top = (uint32_t)(NV(f->stack) - vm->stack); /* a call made by this level moved it */
    if (vm->name_hit_lazy == vm->p) { /* the rendered program's first interpreted function */
        memset(vm->name_hit, 0, vm->p->nnames * sizeof vm->name_hit[0]); /* (not kept: name_hit_kept is false) */
        memset(vm->rkept, 0, sizeof vm->rkept);
        name_hits_gone(vm);
        vm->name_hit_prog = vm->p;
        vm->name_hit_lazy = NULL;
    }
    tpl_value r;
    return interp(vm, entry, f->slot_base, f->outer_base, npre, f->result ? NV(f->result) : &r, NULL);
}

int tpl_native_put_slow(tpl_native_frame *f, const char *s, size_t n) { return f && f->vm ? out_put_slow(f->vm, s, n) : -1; }

int tpl_native_fail(tpl_native_frame *f, uint32_t pc)
{
    if (!f || !f->vm) return -1;
    tpl_vm *vm = f->vm;
    if (vm->err_unlocated) locate(vm, pc);
    return -1;
}

int tpl_native_out_of_fuel(tpl_native_frame *f, uint32_t pc)
{
    if (!f || !f->vm) return -1;
    tpl_vm *vm = f->vm;
    vm->fuel = 0;
    tpl_vm_limit(vm, TPL_EK_FUEL, vm->limits.fuel);
    return tpl_native_fail(f, pc);
}

int tpl_native_load_name(tpl_native_frame *f, uint32_t name, tpl_nvalue *out)
{
    if (!f || !f->vm || !out) return -1;
    tpl_vm *vm = f->vm;
    return load_global(vm, &vm->p->names[name], NV(out));
}

int tpl_native_truthy_py(tpl_native_frame *f, const tpl_nvalue *v) { return f && f->vm && v ? tpl_truthy_py(f->vm, *NV(v)) : -1; }

int tpl_native_equal(tpl_native_frame *f, const tpl_nvalue *x, const tpl_nvalue *y)
{
    if (!f || !f->vm || !x || !y) return -1;
    bool r = false;
    if (NV(x)->type == TPL_T_STR && NV(y)->type == TPL_T_STR)
        return NV(x)->len == NV(y)->len && tpl_mem_eq(NV(x)->u.s, NV(y)->u.s, NV(x)->len);
    return eq_op(f->vm, *NV(x), *NV(y), &r) < 0 ? -1 : r;
}

int tpl_native_for_next(tpl_native_frame *f, uint32_t slot, tpl_nvalue *out)
{
    if (!f || !f->vm || !out) return -1;
    tpl_value *s = NV(f->slots) + slot;
    if (s->type != TPL_T_LOOP) return tpl_vm_error(f->vm, TPL_ERR_TYPE, "FOR_NEXT on a slot without a loop");
    tpl_loop *l = s->u.loop;
    if (loop_pull(f->vm, l, l->i + 1) < 0) return -1;
    if (l->i >= l->items->len) return 0;
    *NV(out) = l->items->items[l->i++];
    return 1;
}

const tpl_nvalue *tpl_native_map_get(tpl_native_frame *f, const tpl_nvalue *objp, uint32_t name)
{
    if (!f || !f->vm || !objp || objp->type != TPL_NT_MAP) return NULL;
    tpl_vm *vm = f->vm;
    const tpl_value *obj = NV(objp);
    const tpl_name *nm = &vm->p->names[name];
    return (const tpl_nvalue *)(const void *)map_find_name(vm, obj->u.map, nm);
}

/* The operations generated code runs directly (no step through the interpreter): each is the
 * interpreter's own code for that instruction (the *_op functions above). */
int tpl_native_filter(tpl_native_frame *f, uint32_t pc, tpl_nvalue *args)
{
    if (!f || !f->vm || !args) return -1;
    tpl_vm *vm = f->vm;
    const tpl_program *p = vm->p;
    if (pc + 1 >= p->ncode) return -1;
    uint32_t w = p->code[pc], op = TPL_INSN_OP(w), aw = p->code[pc + 1];
    if ((op != TPL_OP_FILTER && op != TPL_OP_FILTER_PRINT && op != TPL_OP_TEST) || TPL_ARGW_K(aw) == TPL_ARGW_DYN)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "tpl_native_filter on an instruction it does not run");
    int npos = (int)TPL_ARGW_NPOS(aw), nkw = (int)TPL_ARGW_NKW(aw);
    const tpl_value *kwn = nkw ? p->consts[TPL_ARGW_K(aw)].u.list->items : NULL;
    return filter_op(vm, op, TPL_INSN_A(w), NV(args), npos, kwn, nkw);
}

int tpl_native_getattr(tpl_native_frame *f, uint32_t name, tpl_nvalue *v)
{
    if (!f || !f->vm || !v) return -1;
    tpl_vm *vm = f->vm;
    return getattr_op(vm, &vm->p->names[name], NV(v));
}

int tpl_native_getitem_str(tpl_native_frame *f, uint32_t name, tpl_nvalue *v)
{
    if (!f || !f->vm || !v) return -1;
    tpl_vm *vm = f->vm;
    return getitem_str_op(vm, &vm->p->names[name], NV(v));
}

int tpl_native_print_py(tpl_native_frame *f, const tpl_nvalue *v)
{
    if (!f || !f->vm || !v) return -1;
    return print_py_op(f->vm, NV(v));
}

int tpl_native_print_rb(tpl_native_frame *f, const tpl_nvalue *v)
{
    if (!f || !f->vm || !v) return -1;
    return print_rb_op(f->vm, *NV(v));
}

int tpl_native_adds(tpl_native_frame *f, uint32_t pc, tpl_nvalue *args)
{
    if (!f || !f->vm || !args) return -1;
    tpl_vm *vm = f->vm;
    if (pc >= vm->p->ncode) return -1;
    uint32_t w = vm->p->code[pc], op = TPL_INSN_OP(w);
    if (tpl_op_base(op) == TPL_OP_PRINT_ADDS_K) { /* (PRINT_ADDS_K_JUMP too; the verifier checked the
                                                   * instruction at pc, as the others) */
        const tpl_program *p = vm->p;
        uint32_t k = pc + 2 < p->ncode ? p->code[pc + 1] : UINT32_MAX;
        if (k >= p->nconsts || p->consts[k].type != TPL_T_LIST || p->consts[k].u.list->len > TPL_ADDS_K_MAX)
            return tpl_vm_error(vm, TPL_ERR_TYPE, "tpl_native_adds on an instruction it does not run");
        return adds_k_op(vm, p->consts[k].u.list, NV(args), TPL_INSN_A(w), p->code[pc + 2]);
    }
    if (op != TPL_OP_ADDS && op != TPL_OP_PRINT_ADDS && op != TPL_OP_ADDS_RB && op != TPL_OP_PRINT_ADDS_RB)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "tpl_native_adds on an instruction it does not run");
    return adds_op(vm, op, NV(args), TPL_INSN_A(w));
}

int tpl_native_loop_attr(tpl_native_frame *f, uint32_t which, tpl_nvalue *v)
{
    if (!f || !f->vm || !v) return -1;
    if (v->type != TPL_NT_LOOP) return tpl_vm_error(f->vm, TPL_ERR_TYPE, "tpl_native_loop_attr on a value that is no loop");
    tpl_loop *l = NV(v)->u.loop;
    switch (which) { /* as loop_attr, with its pulls from an iterator */
    case TPL_NLOOP_INDEX: *NV(v) = tpl_v_int(l->i); return 0;
    case TPL_NLOOP_INDEX0: *NV(v) = tpl_v_int((int64_t)l->i - 1); return 0;
    case TPL_NLOOP_FIRST: *NV(v) = tpl_v_bool(l->i == 1); return 0;
    case TPL_NLOOP_LAST:
        if (l->src && loop_pull(f->vm, l, l->i + 1) < 0) return -1;
        if (loop_peek_end(f->vm, l) < 0) return -1;
        *NV(v) = tpl_v_bool(l->i == l->items->len);
        return 0;
    case TPL_NLOOP_LENGTH:
        if (l->src && loop_length_pull(f->vm, l) < 0) return -1;
        if (!l->len1) l->len1 = l->items->len + 1; /* (once: loop_attr) */
        *NV(v) = tpl_v_int((int64_t)l->len1 - 1);
        return 0;
    default:
        return tpl_vm_error(f->vm, TPL_ERR_TYPE, "tpl_native_loop_attr: no such attribute");
    }
}

/* tpl_native_call_name, or tpl_native_call_builtin (builtin: the state has no value of the name) */
static int native_call_name(tpl_native_frame *f, uint32_t pc, tpl_nvalue *args, bool builtin)
{
    if (!f || !f->vm || !args) return -1;
    tpl_vm *vm = f->vm;
    const tpl_program *p = vm->p;
    if (pc + 2 >= p->ncode) return -1;
    uint32_t w = p->code[pc], id = p->code[pc + 1], aw = p->code[pc + 2];
    if (TPL_INSN_OP(w) != TPL_OP_CALL_NAME || TPL_ARGW_K(aw) == TPL_ARGW_DYN)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "tpl_native_call_name on an instruction it does not run");
    int npos = (int)TPL_ARGW_NPOS(aw), nkw = (int)TPL_ARGW_NKW(aw);
    const tpl_value *kwn = nkw ? p->consts[TPL_ARGW_K(aw)].u.list->items : NULL;
    tpl_value *av = NV(args);
    vm->stack_top = (uint32_t)(av + npos + nkw - vm->stack); /* a macro it calls runs above them */
    if (builtin && !globals_find(vm, &p->names[TPL_INSN_A(w)])) /* (the native code probed the state) */
        return call_name_builtin(vm, &p->names[TPL_INSN_A(w)], id, av, npos, kwn, nkw);
    return call_name_op(vm, &p->names[TPL_INSN_A(w)], id, av, npos, kwn, nkw);
}

int tpl_native_call_name(tpl_native_frame *f, uint32_t pc, tpl_nvalue *args) { return native_call_name(f, pc, args, false); }
int tpl_native_call_builtin(tpl_native_frame *f, uint32_t pc, tpl_nvalue *args) { return native_call_name(f, pc, args, true); }

int tpl_native_remembers(tpl_native_frame *f, const char *s, uint32_t n, tpl_nvalue *out)
{
    if (!f || !f->vm || !s || !out) return -1;
    return tpl_stdlib.remembers_ascii(f->vm, s, n, NV(out));
}

int tpl_native_remembers_kept(tpl_native_frame *f, const char *s, uint32_t n, tpl_nvalue *out, uint64_t *kept)
{
    if (!f || !f->vm || !s || !out) return -1;
    return tpl_stdlib.remembers_kept(f->vm, s, n, NV(out), kept);
}

int tpl_native_for_init(tpl_native_frame *f, uint32_t slot, const tpl_nvalue *v)
{
    if (!f || !f->vm || !v) return -1;
    return for_init_op(f->vm, *NV(v), NV(f->slots) + slot);
}

/* ------------------------------------------------------------------ Ruby blocks */

int tpl_vm_def_break(tpl_vm *vm, tpl_value blk, uint32_t base, tpl_value val)
{
    int rc = tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: break out of a block a template method yields to");
    vm->rb_brk.on = true;
    vm->rb_brk.blk = blk;
    vm->rb_brk.val = val;
    vm->rb_brk.base = base;
    return rc;
}

tpl_rb_block tpl_vm_block(const tpl_vm *vm) { return vm->rb_block; }
tpl_rb_block tpl_vm_set_block(tpl_vm *vm, tpl_rb_block b) { tpl_rb_block o = vm->rb_block; vm->rb_block = b; return o; }
tpl_value tpl_vm_state(const tpl_vm *vm) { return vm->state; }
bool tpl_vm_json_state_str(const tpl_vm *vm, tpl_value s)
{
    return s.type == TPL_T_STR && s.len && !vm->state_host && vm->state.type == TPL_T_MAP && tpl_arena_owns(&vm->state_arena, s.u.s);
}
tpl_value tpl_vm_self(const tpl_vm *vm) { return vm->rb_self; }
bool tpl_vm_ivars_in_state(const tpl_vm *vm) { return vm->rb_ivars_state; }
void tpl_vm_host_ran(tpl_vm *vm) { vm->host_runs++; }
uint64_t tpl_vm_host_runs(const tpl_vm *vm) { return vm->host_runs; }
void tpl_vm_state_changed(tpl_vm *vm) { vm->state_stamp++; }
tpl_value tpl_vm_rb_match(const tpl_vm *vm) { return vm->rb_match; }
void tpl_vm_set_rb_match(tpl_vm *vm, tpl_value m) { vm->rb_match = m; }

int tpl_rb_yield(tpl_vm *vm, const tpl_rb_block *b, const tpl_value *args, int nargs, tpl_value *out)
{
    return tpl_rb_yield_kw(vm, b, args, nargs, tpl_v_none(), out);
}

/* Keywords to a block of positional parameters: one more argument, the Hash. Its own frame (never
 * inlined): the argument copy stays off the stack of every nested yield. */
static __attribute__((noinline)) int yield_kw_hash(tpl_vm *vm, const tpl_rb_block *b, const tpl_value *args, int nargs,
                                                   tpl_value kw, tpl_value *out)
{
    tpl_value a2[257];
    if (nargs > 256) return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported Ruby construct: more than 256 arguments to a block");
    for (int i = 0; i < nargs; i++) a2[i] = args[i];
    a2[nargs] = kw;
    return tpl_rb_yield_kw(vm, b, a2, nargs + 1, tpl_v_none(), out);
}

static inline __attribute__((always_inline)) int yield_run(tpl_vm *vm, const tpl_rb_block *b, const tpl_value *args, int nargs,
                                                            tpl_value kw, tpl_value *out);

/* The slots of the block at entry pc that are its own (its parameters and locals, its inner blocks', its
 * block-local variables): the String of the CONST right before its entry, never run ("s0-s1,a,b": slots s0 to
 * s1 - 1, a, b; compiler/lower_erb.c own_slots), or NULL (no such CONST: a block of no own slots). */
static const tpl_value *own_spec(const tpl_vm *vm, uint32_t pc)
{
    const tpl_program *p = vm->p;
    if (pc == 0 || pc > p->ncode) return NULL;
    uint32_t w = p->code[pc - 1], op = TPL_INSN_OP(w), a = TPL_INSN_A(w);
    if (op >= TPL_OP__COUNT || tpl_op_base(op) != TPL_OP_CONST || a >= p->nconsts || p->consts[a].type != TPL_T_STR) return NULL;
    return p->consts[a].len ? &p->consts[a] : NULL;
}

/* Walks own_spec's slots of the frame at base: mode 0 counts them, 1 copies them into save, 2 puts save back.
 * The count, or UINT32_MAX when one is past the slots (a hostile .tplb) or there are more than cap. */
static uint32_t own_walk(tpl_vm *vm, const tpl_value *spec, uint32_t base, tpl_value *save, uint32_t cap, int mode)
{
    const char *s = spec->u.s, *e = s + spec->len;
    uint32_t n = 0;
    while (s < e) {
        uint64_t lo = 0, hi;
        while (s < e && *s >= '0' && *s <= '9' && lo < 0x10000000) lo = lo * 10 + (uint64_t)(*s++ - '0');
        hi = lo + 1;
        if (s < e && *s == '-') {
            s++;
            hi = 0;
            while (s < e && *s >= '0' && *s <= '9' && hi < 0x10000000) hi = hi * 10 + (uint64_t)(*s++ - '0');
        }
        if (s < e) s++;
        if (hi > lo && base + hi > vm->slots_cap) return UINT32_MAX;
        for (uint64_t k = lo; k < hi; k++, n++) {
            if (n >= cap) return UINT32_MAX;
            if (mode == 1) save[n] = vm->slots[base + k];
            else if (mode == 2) vm->slots[base + k] = save[n];
        }
    }
    return n;
}

/* tpl_rb_yield_kw of a block running already in the same frame (a call of it from inside itself): its own
 * slots are put back after the call, as Ruby's calls each have their own. own_save copies them onto the operand
 * stack (returns how many, or UINT32_MAX on an error); own_restore puts them back and pops them. Their own frames,
 * which return before the call: the C stack of each nested yield stays tpl_rb_yield_kw's. */
static __attribute__((noinline)) const tpl_value *own_reentered(tpl_vm *vm, const tpl_rb_block *b)
{
    for (const struct tpl_rb_active *a = vm->rb_active; a; a = a->prev)
        if (a->pc == b->pc && a->base == b->slot_base) return own_spec(vm, b->pc);
    return NULL;
}

static __attribute__((noinline)) uint32_t own_save(tpl_vm *vm, const tpl_rb_block *b, const tpl_value *spec)
{
    uint32_t room = vm->stack_cap - vm->stack_top;
    uint32_t n = own_walk(vm, spec, b->slot_base, NULL, room, 0);
    if (n == UINT32_MAX || (uint64_t)vm->stack_top + n + tpl_rb_block_pushes(b->nparams) + vm->p->max_stack > vm->stack_cap) {
        depth_error(vm, true);
        return UINT32_MAX;
    }
    own_walk(vm, spec, b->slot_base, vm->stack + vm->stack_top, n, 1);
    vm->stack_top += n;
    return n;
}

static __attribute__((noinline)) void own_restore(tpl_vm *vm, const tpl_rb_block *b, const tpl_value *spec, uint32_t n)
{
    vm->stack_top -= n;
    own_walk(vm, spec, b->slot_base, vm->stack + vm->stack_top, n, 2);   /* (after an error too: a rescue in the outer call goes on) */
}

int tpl_rb_yield_kw(tpl_vm *vm, const tpl_rb_block *b, const tpl_value *args, int nargs, tpl_value kw, tpl_value *out)
{
    const tpl_value *spec = NULL;
    uint32_t n = 0;
    if (__builtin_expect(vm->rb_active != NULL, 0) && b->pc && !(kw.type == TPL_T_MAP && !(b->nparams & TPL_RB_BIND_RAW)) &&
        (spec = own_reentered(vm, b)) && (n = own_save(vm, b, spec)) == UINT32_MAX)
        return -1;
    int rc = yield_run(vm, b, args, nargs, kw, out);
    if (__builtin_expect(spec != NULL, 0)) own_restore(vm, b, spec, n);
    return rc;
}

/* (inline: every nested yield's C stack as before, with the 24 bytes of its record in rb_active) */
static inline __attribute__((always_inline)) int yield_run(tpl_vm *vm, const tpl_rb_block *b, const tpl_value *args, int nargs,
                                                            tpl_value kw, tpl_value *out)
{
    if (!b->pc) return tpl_vm_error(vm, TPL_ERR_TYPE, "no block given (yield) (LocalJumpError)");
    if (vm->depth >= vm->limits.max_depth)
        return depth_error(vm, false);
    uint32_t np = tpl_rb_block_pushes(b->nparams);
    if (vm->stack_top + np + vm->p->max_stack > vm->stack_cap)
        return depth_error(vm, true);
    tpl_value *st = vm->stack + vm->stack_top;
    if (b->nparams & TPL_RB_BIND_RAW) {
        /* the block binds them itself: the arguments as given and the keywords */
        tpl_list *l = tpl_list_new(&vm->arena, nargs > 0 ? (uint32_t)nargs : 1u);
        if (!l) return oom(vm);
        for (int i = 0; i < nargs; i++) l->items[i] = args[i];
        l->len = nargs > 0 ? (uint32_t)nargs : 0u;
        st[0] = tpl_v_list(l);
        st[1] = kw;
    } else if (kw.type == TPL_T_MAP) {
        return yield_kw_hash(vm, b, args, nargs, kw, out);
    } else if (nargs == 1 && np >= 2 && args[0].type == TPL_T_LIST && !(args[0].flags & (TPL_F_RANGE_RB | TPL_F_MATCH_RB | TPL_F_ENUM_RB))) {
        tpl_list *l = args[0].u.list;
        for (uint32_t i = 0; i < np; i++) st[i] = i < l->len ? l->items[i] : tpl_v_none();
    } else {
        for (uint32_t i = 0; i < np; i++) st[i] = (int)i < nargs ? args[i] : tpl_v_none();
    }
    uint32_t save_pc = vm->pc, save_stack = vm->stack_top;
    vm->depth++;
    vm->rb_broke = false;
    int rc;
    struct tpl_rb_active act = { vm->rb_active, b->pc, b->slot_base };
    vm->rb_active = &act;
    struct tpl_rb_mframe *home = NULL;
    if (__builtin_expect(b->slot_base != vm->rb_match_base, 0))   /* a block of a frame that called a def: that frame's $~ */
        for (home = vm->rb_mframes; home && home->base != b->slot_base; home = home->prev) {}
    if (home) {
        tpl_value m = vm->rb_match;
        uint32_t mb = vm->rb_match_base;
        vm->rb_match = home->m;
        vm->rb_match_base = home->base;
        rc = run(vm, b->pc, b->slot_base, 0, np, out);
        home->m = vm->rb_match;
        vm->rb_match = m;
        vm->rb_match_base = mb;
    } else {
        rc = run(vm, b->pc, b->slot_base, 0, np, out);
    }
    vm->rb_active = act.prev;
    vm->depth--;
    vm->pc = save_pc;
    vm->stack_top = save_stack;
    if (rc < 0) return -1;
    if (vm->rb_broke) { vm->rb_broke = false; return 1; }
    return 0;
}

int tpl_rb_yield_keep(tpl_vm *vm, const tpl_rb_block *b, const tpl_value *args, int nargs, tpl_value *out,
                      const uint32_t *keep, uint32_t nkeep)
{
    if (!b->pc) return tpl_vm_error(vm, TPL_ERR_TYPE, "no block given (yield) (LocalJumpError)");
    for (uint32_t i = 0; i < nkeep; i++)
        if ((uint64_t)b->slot_base + keep[i] >= vm->slots_cap) return tpl_vm_error(vm, TPL_ERR_TYPE, "internal error: a kept slot");
    if ((uint64_t)vm->stack_top + nkeep + tpl_rb_block_pushes(b->nparams) + vm->p->max_stack > vm->stack_cap) return depth_error(vm, true);
    /* the kept values sit on the operand stack above the caller's, below the call's */
    tpl_value *saved = vm->stack + vm->stack_top;
    for (uint32_t i = 0; i < nkeep; i++) saved[i] = vm->slots[b->slot_base + keep[i]];
    vm->stack_top += nkeep;
    int rc = yield_run(vm, b, args, nargs, tpl_v_none(), out);   /* (its kept slots hold the block's own: no own_spec) */
    vm->stack_top -= nkeep;
    if (rc >= 0)
        for (uint32_t i = 0; i < nkeep; i++) vm->slots[b->slot_base + keep[i]] = saved[i];
    return rc;
}

bool tpl_vm_rescue(tpl_vm *vm, char *msg, size_t cap) { return tpl_vm_rescue_host(vm, msg, cap, NULL, NULL); }

bool tpl_vm_rescue_host(tpl_vm *vm, char *msg, size_t cap, void **payload, uint32_t *where)
{
    if (payload) *payload = NULL;
    if (where) *where = 0;
    if (vm->err.status == TPL_OK || vm->err.status == TPL_ERR_LIMIT || vm->err.status == TPL_ERR_NOMEM) return false;
    if (vm->rb_brk.on) {
        /* a break out of a yielded-to block through a rescue or ensure of the method: Ruby runs the ensure
         * clause on the way, tpl would skip it: the refusal (never rescued) goes on instead of the break */
        vm->rb_brk.on = false;
        return false;
    }
    if (vm->host_payload) {
        /* a host's own exception: it re-raises it, unless it marked it rescuable (and the caller takes it) */
        if (!payload || vm->host_msg[0] != '\x01' || strlen(vm->host_msg) >= cap) return false;
        snprintf(msg, cap, "%s", vm->host_msg + 1);
        *payload = vm->host_payload;
        if (where && !vm->err_unlocated && vm->err.line && vm->err.line < 0x10000 && vm->err.column < 0x10000)
            *where = vm->err.line << 16 | vm->err.column;
        vm->host_payload = NULL;
        vm->host_msg[0] = 0;
        memset(&vm->err, 0, sizeof vm->err);
        vm->err_unlocated = false;
        vm->rb_broke = false;
        return true;
    }
    /* tpl's own refusal of what Ruby would run ("unsupported Ruby construct: ...", "... is not supported"):
     * never rescued, or `x rescue y` would print y where Ruby prints x */
    if (strncmp(vm->err_msg, "unsupported Ruby construct", 26) == 0 || strstr(vm->err_msg, " not supported"))
        return false;
    snprintf(msg, cap, "%s", vm->err_msg);
    memset(&vm->err, 0, sizeof vm->err);
    vm->err_unlocated = false;
    vm->rb_broke = false;
    return true;
}

int tpl_vm_rethrow(tpl_vm *vm, void *payload, const char *marked, size_t len, uint32_t where)
{
    if (len + 2 > sizeof vm->host_msg) len = sizeof vm->host_msg - 2;   /* (it fitted when it was taken) */
    vm->host_msg[0] = '\x01';
    memcpy(vm->host_msg + 1, marked, len);
    vm->host_msg[len + 1] = 0;
    vm->host_payload = payload;
    const char *m = memchr(marked, '\x02', len);
    m = m ? m + 1 : marked;
    tpl_vm_error(vm, TPL_ERR_RAISED, "%.*s", (int)(marked + len - m), m);
    if (where && vm->p) locate_at(vm, where >> 16, where & 0xFFFF);   /* where it was raised */
    return -1;
}

/* Grows *buf (of *cap values) to at least need values; the contents are not kept (no frame is
 * running). The old buffer stays when the new one cannot be had. */
static bool grow_values(tpl_vm *vm, tpl_value **buf, uint32_t *cap, uint64_t need)
{
    if (need <= *cap) return true;
    tpl_value *nb = vm->alloc.alloc(vm->alloc.data, need * sizeof *nb);
    if (!nb) return false;
    vm->alloc.free(vm->alloc.data, *buf, *cap * sizeof **buf);
    *buf = nb;
    *cap = (uint32_t)need;
    return true;
}

/* Sizes the operand stack and the slots for p: its template level, then room for nested calls
 * (TPL_VM_STACK / TPL_VM_SLOTS, or four frames of its largest macro when that is more; a Ruby
 * block's frame is the template level's stack). Both together stay within the memory limit. */
static inline __attribute__((always_inline)) int size_frames(tpl_vm *vm, const tpl_program *p)
{
    uint64_t mslots = 0, mstack = p->opts.syntax == TPL_SYNTAX_ERB ? p->max_stack : 0;
    for (size_t i = 0; i < p->nmacros; i++) {
        if (p->macros[i].nslots > mslots) mslots = p->macros[i].nslots;
        if (p->macros[i].max_stack > mstack) mstack = p->macros[i].max_stack;
    }
    uint64_t need_slots = p->nslots + (4 * mslots > TPL_VM_SLOTS ? 4 * mslots : TPL_VM_SLOTS);
    uint64_t need_stack = p->max_stack + (4 * mstack > TPL_VM_STACK ? 4 * mstack : TPL_VM_STACK);
    if (need_slots <= vm->slots_cap && need_stack <= vm->stack_cap) return 0;
    uint64_t bytes = (need_slots + need_stack) * sizeof(tpl_value);
    if (bytes > vm->limits.max_memory)
        tpl_vm_fail(vm, TPL_EK_MEMORY_LIMIT, "memory limit reached (%llu bytes): the template needs %llu bytes of "
                     "operand stack and variables", (unsigned long long)vm->limits.max_memory,
                     (unsigned long long)bytes);
    else if (!grow_values(vm, &vm->slots, &vm->slots_cap, need_slots) ||
             !grow_values(vm, &vm->stack, &vm->stack_cap, need_stack))
        tpl_vm_nomem(vm);
    else
        return 0;
    locate(vm, 0); /* the template's first instruction */
    return -1;
}

/* The state memo of the native render p (tpl_native_frame's memo and kept): emptied when it was
 * another program's, the state changed, or it is another state. */
static inline void native_memo_check(tpl_vm *vm, const tpl_program *p)
{
    if (p->native != vm->memo_fn || vm->memo_stamp != vm->state_stamp || vm->memo_state != vm->name_hit_state) {
        memset(vm->native_memo, 0, sizeof vm->native_memo);
        memset(vm->native_kept, 0, sizeof vm->native_kept);
        vm->memo_fn = p->native;
        vm->memo_stamp = vm->state_stamp;
        vm->memo_state = vm->name_hit_state;
    }
}

/* tpl_vm_run of a native program whose code runs without the interpreter (TPL_NATIVE_DIRECT: no
 * step, no macro, no include; one call level): the set-up its code and the VM's helpers it
 * calls read, then the native function with its frame on the C stack (run's, at depth 0). The
 * slots are reset only when the code may read one it did not store (TPL_NATIVE_FRESH_SLOTS). */
int tpl_vm_run_direct(tpl_vm *vm)
{
    const tpl_program *p = vm->p;
    /* (size_frames' room: no macro, not ERB) */
    if (__builtin_expect((uint64_t)p->nslots + TPL_VM_SLOTS > vm->slots_cap ||
                         (uint64_t)p->max_stack + TPL_VM_STACK > vm->stack_cap, 0) && size_frames(vm, p) < 0)
        return -1;
    vm->stack_top = 0;
    if (++vm->gen == 0) { /* wrapped */
        memset(vm->method_memo, 0, sizeof vm->method_memo);
        memset(vm->rb_sites, 0, sizeof vm->rb_sites);
        vm->gen = 1;
    }
    if (!(p->native_flags & TPL_NATIVE_FRESH_SLOTS))
        for (uint32_t i = 0; i < p->nslots; i++) vm->slots[i] = tpl_v_unset();
    vm->own = NULL; /* (in the render arena, which was reset) */
    vm->own_cap = vm->own_n = 0;
    vm->host_containers = false;
    vm->undo = NULL;
    vm->undo_n = vm->undo_cap = 0;
    vm->name_hit_prog = NULL; /* (as tpl_vm_run's for a native program) */
    vm->name_hit_lazy = p->nnames <= TPL_VM_NAME_HITS ? p : NULL;
    vm->name_hit_kept = false;
    vm->name_hit_state = vm->state.type == TPL_T_MAP ? vm->state.u.map : NULL;
    native_memo_check(vm, p);
    vm->slot_top = p->nslots;
    vm->open_cl = NULL;
    vm->cur_cl = NULL;
    vm->cl_seq = vm->inc_open = 0;
    vm->root_base = 0;
    vm->depth = 0;
    vm->cstack_guard = 0;
    vm->ncaptures = 0;
    vm->out_len = 0;
    vm->fuel = vm->limits.fuel;
    vm->err_unlocated = false;
    vm->rb_match = tpl_v_none();
    vm->rb_match_base = 0;
    vm->rb_mframes = NULL;
    vm->rb_active = NULL;
    vm->rb_brk.on = false;   /* (a refused break of the last render) */
    for (int i = 0; i < 4; i++) {
        vm->cat[i].p = NULL;
        vm->lcat[i].items = NULL;
    }
    tpl_value r;
    tpl_native_frame f = {
        .vm = vm, .stack = (tpl_nvalue *)(void *)vm->stack, .slots = (tpl_nvalue *)(void *)vm->slots,
        .out = &vm->out, .out_len = &vm->out_len, .out_cap = &vm->out_cap, .fuel = &vm->fuel,
        .result = (tpl_nvalue *)(void *)&r, .state = (const tpl_nvalue *)(const void *)&vm->state,
        .hints = vm->native_hint,
        .memo = vm->name_hit_state ? (const tpl_nvalue **)(void *)vm->native_memo : NULL,
    };
    f.kept = f.memo ? vm->native_kept : NULL;
    int rc = p->native(&f, 0, 0);
    if (vm->undo_n) state_restore(vm);
    return rc;
}

/* Renders vm->p from the start. */
int tpl_vm_run(tpl_vm *vm)
{
    const tpl_program *p = vm->p;
    if (size_frames(vm, p) < 0) return -1;
    vm->stack_top = 0;
    if (++vm->gen == 0) { /* wrapped */
        memset(vm->method_memo, 0, sizeof vm->method_memo);
        memset(vm->rb_sites, 0, sizeof vm->rb_sites);
        vm->gen = 1;
    }
    for (uint32_t i = 0; i < p->nslots; i++) vm->slots[i] = tpl_v_unset();
    vm->own = NULL; /* (in the render arena, which was reset) */
    vm->own_cap = vm->own_n = 0;
    vm->host_containers = false;
    vm->undo = NULL;
    vm->undo_n = vm->undo_cap = 0;
    /* the state lookups of the last render (interp: hits) are kept when the state, the globals
     * and the program's names are those they were found for, else gone */
    const tpl_map *state_map = vm->state.type == TPL_T_MAP ? vm->state.u.map : NULL;
    vm->name_hit_prog = NULL;
    vm->name_hit_lazy = NULL;
    if (p->nnames <= TPL_VM_NAME_HITS) { /* (a bigger program keeps none) */
        if (p->native) {
            vm->name_hit_lazy = p; /* (cleared if the interpreter runs it: tpl_native_run_vm) */
            vm->name_hit_kept = false;
        } else {
            if (!vm->name_hit_kept || vm->name_hit_stamp != vm->state_stamp || vm->name_hit_state != state_map ||
                vm->name_hit_sig != p->names_sig) {
                memset(vm->name_hit, 0, p->nnames * sizeof vm->name_hit[0]);
                memset(vm->rkept, 0, sizeof vm->rkept);
                name_hits_gone(vm);
                if (vm->reads_prog == p && vm->reads_map == state_map && state_map && state_map->e == vm->reads_e &&
                    state_map->len == vm->reads_n) {
                    /* the state the host built from p's reads (tpl_render_set_state_reads), as it
                     * made it (entries are only ever appended: the same array and length are the
                     * same entries): entry k is name reads_name[k]'s lookup */
                    tpl_entry *e = state_map->e;
                    for (uint32_t k = 0; k < vm->reads_n; k++) vm->name_hit[vm->reads_name[k]] = &e[k].val;
                }
                vm->name_hit_stamp = vm->state_stamp;
                vm->name_hit_sig = p->names_sig;
                vm->name_hit_kept = p->names_sig != 0; /* (a program not signed: nothing kept) */
            }
            vm->name_hit_prog = p;
        }
    } else {
        vm->name_hit_kept = false;
    }
    vm->name_hit_state = state_map;
    if (p->native) native_memo_check(vm, p); /* (the native state memo may be another's) */
    vm->slot_top = p->nslots;
    vm->open_cl = NULL;
    vm->cur_cl = NULL;
    vm->cl_seq = vm->inc_open = 0;
    vm->root_base = 0;
    vm->depth = 0;
    vm->cstack_guard = 0; /* (this render's thread: looked up when runs nest deep) */
    vm->ncaptures = 0;
    vm->out_len = 0;
    vm->fuel = vm->limits.fuel;
    vm->err_unlocated = false;
    vm->rb_match = tpl_v_none();
    vm->rb_match_base = 0;
    vm->rb_mframes = NULL;
    vm->rb_active = NULL;
    vm->rb_brk.on = false;   /* (a refused break of the last render) */
    for (int i = 0; i < 4; i++) { /* blocks of the last render are gone */
        vm->cat[i].p = NULL;
        vm->lcat[i].items = NULL;
    }
    tpl_value r;
    int rc = run(vm, 0, 0, 0, 0, &r);
    if (vm->undo_n) state_restore(vm);
    return rc;
}
