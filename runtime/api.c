/* Public render API (include/tpl.h): render contexts, state from JSON, running a program. The
 * prompt features (facts, remembers, `call`, translation) are the library's per-render data
 * (stdlib/prompt/state.c) behind vm->ext. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "error.h"
#include "vm_impl.h"
#include "host.h"
#include "bigint.h"
#include "../include/tpl_native.h" /* TPL_NATIVE_DIRECT */

struct tpl_render {
    struct tpl_vm vm;
    /* Set while tpl_render_run (or a call that may run the host's allocator) works on the context:
     * a host callback calling back into it gets TPL_ERR_USAGE "render context busy" (issue 13 §3)
     * and the running render goes on undisturbed. */
    bool busy;
};

/* The error tpl_render_error reports for a NULL context and, from inside a callback of r's
 * own render, for r (the running render keeps its own record untouched: the VM keeps the first
 * error, so a refused re-entrant call must not write it). Constant data, never written. */
static const tpl_error null_render_error = { TPL_ERR_USAGE, "no render context (NULL)", NULL, 0, 0, NULL, TPL_EK_USAGE };
static const tpl_error busy_render_error = { TPL_ERR_USAGE, "render context busy", NULL, 0, 0, NULL, TPL_EK_USAGE };

tpl_vm *tpl_render_vm(tpl_render *r) { return &r->vm; }
bool tpl_render_busy(const tpl_render *r) { return r->busy; }

/* The state arena made empty for a new state: one that held more than an eighth of the memory
 * limit is freed rather than kept for reuse, so the room it kept (resident, though no state
 * uses it) adds little to what the next state and render take together (render_room). */
static void state_arena_reset(tpl_vm *vm)
{
    if (vm->state_arena.total > vm->limits.max_memory / 8) tpl_arena_free(&vm->state_arena);
    else tpl_arena_reset(&vm->state_arena);
}
void tpl_render_set_busy(tpl_render *r, bool busy) { r->busy = busy; }
void *tpl_vm_ext(const tpl_vm *vm) { return vm->ext; }
const tpl_allocator *tpl_vm_allocator(const tpl_vm *vm) { return &vm->alloc; }

/* Entry check of the public functions on a render context: false for NULL or a busy context. */
static bool usable(const tpl_render *r)
{
    return r && !r->busy;
}

void tpl_render_loader_hook(tpl_render *r, tpl_loader_fn loader, void *data,
                            tpl_status (*compile)(const char *name, const char *src, size_t len,
                                                  const tpl_options *opts, const char *ext_parent,
                                                  size_t ext_parent_len, tpl_program **out, tpl_error *err))
{
    if (!usable(r)) return;
    r->vm.loader = loader;
    r->vm.loader_data = loader ? data : NULL;
    r->vm.compile = loader ? compile : NULL;
}

/* The default allocator: malloc, realloc, free. */
static void *std_alloc(void *data, size_t size) { (void)data; return malloc(size); }
static void *std_realloc(void *data, void *ptr, size_t old_size, size_t new_size)
{
    (void)data;
    (void)old_size;
    return realloc(ptr, new_size);
}
static void std_free(void *data, void *ptr, size_t size) { (void)data; (void)size; free(ptr); }

void *tpl_vm_mem_realloc(tpl_vm *vm, void *ptr, size_t old_size, size_t new_size)
{
    return vm->alloc.realloc(vm->alloc.data, ptr, old_size, new_size);
}

tpl_render *tpl_render_new(const tpl_limits *limits)
{
    return tpl_render_new_with(limits, NULL);
}

tpl_render *tpl_render_new_with(const tpl_limits *limits, const tpl_allocator *alloc)
{
    tpl_allocator al = { std_alloc, std_realloc, std_free, NULL };
    if (alloc) {
        if (!alloc->alloc || !alloc->realloc || !alloc->free) return NULL;
        al = *alloc;
    }
    tpl_render *r = al.alloc(al.data, sizeof *r);
    if (!r) return NULL;
    memset(r, 0, sizeof *r);
    tpl_vm *vm = &r->vm;
    vm->alloc = al;
    tpl_limits l = { 0 };
    if (limits) l = *limits;
    if (!l.fuel) l.fuel = 20000000ull;
    if (!l.max_depth) l.max_depth = 200;
    if (!l.max_output) l.max_output = 64ull << 20;
    if (!l.max_memory) l.max_memory = TPL_DEFAULT_MAX_MEMORY;
    vm->limits = l;
    vm->fuel = l.fuel;
    tpl_arena_init(&vm->arena, l.max_memory); /* (less the state's bytes at each render: render_room) */
    vm->arena.fuel = &vm->fuel; /* walks over values charge the render's fuel */
    tpl_arena_init(&vm->state_arena, l.max_memory); /* the state counts against the memory limit */
    vm->arena.zero_chunks = vm->state_arena.zero_chunks = true; /* (tpl_render_rescue compares their bytes) */
    if (alloc) {
        /* the arenas keep a pointer to the copy inside the context */
        tpl_arena_set_allocator(&vm->arena, &vm->alloc);
        tpl_arena_set_allocator(&vm->state_arena, &vm->alloc);
    }
    vm->stack = al.alloc(al.data, TPL_VM_STACK * sizeof *vm->stack);
    vm->slots = al.alloc(al.data, TPL_VM_SLOTS * sizeof *vm->slots);
    vm->stack_cap = TPL_VM_STACK;
    vm->slots_cap = TPL_VM_SLOTS;
    /* never more room than the output limit allows (plus the NUL): every append that would pass
     * the limit then takes out_put_slow's checked path, however small the limit */
    vm->out_cap = l.max_output < 4095 ? (size_t)l.max_output + 1 : 4096;
    vm->out = al.alloc(al.data, vm->out_cap);
    if (!vm->stack || !vm->slots || !vm->out) { tpl_render_free(r); return NULL; }
    vm->state = tpl_v_none();
    vm->globals = tpl_v_none();
    vm->rb_self = tpl_v_none();
    tpl_vm_init_builtins(vm);
    if (!(vm->ext = tpl_stdlib.ext_new(vm))) { tpl_render_free(r); return NULL; }
    return r;
}

void tpl_render_free(tpl_render *r)
{
    if (!usable(r)) return; /* NULL, or called from a callback of r's own render: nothing */
    r->busy = true;
    tpl_vm *vm = &r->vm;
    tpl_allocator al = vm->alloc;
    tpl_vm_rescue_free(vm);
    tpl_vm_marks_free(vm);
    tpl_arena_free(&vm->arena);
    tpl_arena_free(&vm->state_arena);
    if (vm->ext) tpl_stdlib.ext_free(vm, vm->ext);
    if (vm->stack) al.free(al.data, vm->stack, vm->stack_cap * sizeof *vm->stack);
    if (vm->slots) al.free(al.data, vm->slots, vm->slots_cap * sizeof *vm->slots);
    if (vm->out) al.free(al.data, vm->out, vm->out_cap);
    if (vm->err_line_big) al.free(al.data, vm->err_line_big, vm->err_line_big_cap);
    al.free(al.data, r, sizeof *r);
}

static void clear_error(tpl_vm *vm)
{
    memset(&vm->err, 0, sizeof vm->err);
}

/* Sets the render's (unlocated) error of `kind`; returns its status. */
static tpl_status fail_kind(tpl_vm *vm, tpl_error_kind kind, const char *msg)
{
    clear_error(vm);
    snprintf(vm->err_msg, sizeof vm->err_msg, "%s", msg);
    vm->err.status = tpl_error_kind_status(kind);
    vm->err.kind = kind;
    vm->err.message = vm->err_msg;
    return vm->err.status;
}

static tpl_status fail(tpl_vm *vm, tpl_status st, const char *msg) { return fail_kind(vm, tpl_status_kind(st), msg); }

void tpl_render_clear_error(tpl_render *r) { clear_error(&r->vm); }

tpl_status tpl_render_fail(tpl_render *r, tpl_error_kind kind, const char *msg, uint32_t line, uint32_t col)
{
    tpl_status st = fail_kind(&r->vm, kind, msg);
    r->vm.err.line = line;
    r->vm.err.column = col;
    return st;
}

/* The render API's one out-of-memory report. */
static tpl_status nomem(tpl_vm *vm) { return fail_kind(vm, TPL_EK_NOMEM, tpl_error_kind_format(TPL_EK_NOMEM)); }

/* Converts parsed JSON to values in arena a (object order preserved, as jansson keeps it). Each
 * member is released from j once converted (replaced by null), so the jansson tree and its copy
 * are never both whole in memory: what the tree frees, the arena's next chunks can reuse. */
typedef struct key_cache key_cache;
static bool from_json(tpl_arena *a, json_t *j, tpl_value *out, int depth, bool big, key_cache *kc);

bool tpl_value_from_json(tpl_arena *a, json_t *j, tpl_value *out, int depth)
{
    return from_json(a, j, out, depth, false, NULL);
}

/* The keys of a state's dicts interned while it loads: each distinct key is copied once, and
 * every later key of the same bytes (`role` and `content` of each message of a list) is the same
 * string, as CPython's json.loads and Ruby's JSON.parse share equal keys (`is sameas` /
 * `equal?` of two dicts' keys is true there). An open-addressing set (malloc'd, proportional to
 * the distinct keys of a text already within max_state, freed when the load ends); out of memory:
 * keys not shared. */
struct key_cache {
    struct { const char *s; uint32_t n, h; } *e;
    uint32_t cap, len;
};

/* The longest run of slots a key's lookup walks: keys chosen to collide (a hostile state) are copied
 * unshared past it, so the load stays linear in the number of keys. */
#define KEY_PROBES 32

static uint32_t key_hash(const char *k, size_t n)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)k[i]) * 16777619u;
    return h ^ (h >> 15);
}

static char *key_copy(tpl_arena *a, key_cache *kc, const char *k, size_t klen)
{
    if (!kc || klen > UINT32_MAX) return tpl_arena_strdup(a, k, klen);
    uint32_t h = key_hash(k, klen);
    if (2 * (kc->len + 1) > kc->cap) { /* grow (and rehash) at half full */
        uint32_t ncap = kc->cap ? 2 * kc->cap : 64;
        void *ne = ncap > kc->cap ? calloc(ncap, sizeof *kc->e) : NULL;
        if (!ne) return tpl_arena_strdup(a, k, klen);
        struct key_cache nk = { ne, ncap, kc->len };
        for (uint32_t i = 0; i < kc->cap; i++)
            if (kc->e[i].s) {
                uint32_t j = kc->e[i].h & (ncap - 1), probes = 0;
                while (nk.e[j].s && ++probes < KEY_PROBES) j = (j + 1) & (ncap - 1);
                if (nk.e[j].s) nk.len--; /* (dropped from the set: its later copies are not shared) */
                else nk.e[j] = kc->e[i];
            }
        free(kc->e);
        *kc = nk;
    }
    uint32_t j = h & (kc->cap - 1), probes = 0;
    for (; kc->e[j].s; j = (j + 1) & (kc->cap - 1)) {
        if (kc->e[j].h == h && kc->e[j].n == klen && memcmp(kc->e[j].s, k, klen) == 0) return (char *)kc->e[j].s;
        if (++probes == KEY_PROBES) return tpl_arena_strdup(a, k, klen); /* a crowded run: not shared */
    }
    char *ks = tpl_arena_strdup(a, k, klen);
    if (ks) {
        kc->e[j].s = ks;
        kc->e[j].n = (uint32_t)klen;
        kc->e[j].h = h;
        kc->len++;
    }
    return ks;
}

/* big: the text went through big_rewrite, so a string "\0DIGITS" is an integer past int64.
 * kc: the keys interned so far (NULL: none). */
static bool from_json(tpl_arena *a, json_t *j, tpl_value *out, int depth, bool big, key_cache *kc)
{
    if (depth > 512) return false;
    switch (json_typeof(j)) {
    case JSON_OBJECT: {
        tpl_map *m = tpl_map_new(a, (uint32_t)json_object_size(j));
        if (!m) return false;
        const char *k;
        size_t klen;
        json_t *v;
        json_object_keylen_foreach(j, k, klen, v) {
            tpl_value kv, vv;
            char *ks = key_copy(a, kc, k, klen); /* (never with a NUL: jansson refuses one in a key) */
            if (!ks || !from_json(a, v, &vv, depth + 1, big, kc)) return false;
            kv = tpl_v_str(ks, klen);
            if (!tpl_map_set(a, m, kv, vv)) return false;
            if (json_is_object(v) || json_is_array(v) || json_is_string(v))
                json_object_setn_new_nocheck(j, k, klen, json_null()); /* in place: the iteration goes on */
        }
        *out = tpl_v_map(m);
        return true;
    }
    case JSON_ARRAY: {
        size_t n = json_array_size(j);
        tpl_list *l = tpl_list_new(a, (uint32_t)n);
        if (!l) return false;
        for (size_t i = 0; i < n; i++) {
            json_t *v = json_array_get(j, i);
            if (!from_json(a, v, &l->items[i], depth + 1, big, kc)) return false;
            if (json_is_object(v) || json_is_array(v) || json_is_string(v)) json_array_set_new(j, i, json_null());
        }
        l->len = (uint32_t)n;
        *out = tpl_v_list(l);
        return true;
    }
    case JSON_STRING: {
        size_t n = json_string_length(j);
        const char *sv = json_string_value(j);
        if (big && n > 1 && sv[0] == 0 && sv[1] == 0) sv++, n--; /* a string that starts with NUL (big_rewrite) */
        else if (big && n > 1 && sv[0] == 0) { /* big_rewrite's integer or real */
            const char *t = sv + 1;
            if (n - 1 == 3 && memcmp(t, "NaN", 3) == 0) { *out = tpl_v_float(NAN); return true; }
            if (n - 1 == 8 && memcmp(t, "Infinity", 8) == 0) { *out = tpl_v_float(HUGE_VAL); return true; }
            if (n - 1 == 9 && memcmp(t, "-Infinity", 9) == 0) { *out = tpl_v_float(-HUGE_VAL); return true; }
            if (strpbrk(t, ".eE")) { *out = tpl_v_float(t[0] == '-' ? -HUGE_VAL : HUGE_VAL); return true; }
            if (n - 1 - (t[0] == '-') > TPL_STATE_INT_MAX_DIGITS) {
                /* past tpl's integers (big_rewrite noted the first such, where; the render
                 * reports it): never parsed */
                *out = tpl_v_none();
                return true;
            }
            return tpl_big_parse(a, t, n - 1, 10, out);
        }
        char *s = tpl_arena_strdup(a, sv, n);
        if (!s) return false;
        *out = tpl_v_str(s, n);
        return true;
    }
    case JSON_INTEGER: *out = tpl_v_int(json_integer_value(j)); return true;
    case JSON_REAL: *out = tpl_v_float(json_real_value(j)); return true;
    case JSON_TRUE: *out = tpl_v_bool(true); return true;
    case JSON_FALSE: *out = tpl_v_bool(false); return true;
    default: *out = tpl_v_none(); return true;
    }
}

tpl_status tpl_render_null_arg(tpl_render *r, const char *fn, const char *what)
{
    char msg[128];
    snprintf(msg, sizeof msg, "%s: %s is NULL", fn, what);
    return fail(&r->vm, TPL_ERR_USAGE, msg);
}

/* Text from the host must be UTF-8, as the state is (jansson rejects invalid UTF-8 there), or it
 * would reach the output. */
tpl_status tpl_render_check_utf8(tpl_render *r, const char *what, const char *s, size_t n)
{
    size_t bad;
    if (tpl_utf8_valid(s, n, &bad)) return TPL_OK;
    char msg[128];
    snprintf(msg, sizeof msg, "%s is not valid UTF-8 (byte 0x%02X at offset %zu)", what, (unsigned char)s[bad], bad);
    return fail(&r->vm, TPL_ERR_VALUE, msg);
}

static tpl_status state_too_big(tpl_vm *vm);

/* Integers past int64 in JSON text (Python's json and Ruby's JSON read them exactly; jansson
 * refuses them: "too big integer"). big_rewrite copies the text with each such number token
 * replaced by the string "\u0000DIGITS", which from_json (big) turns back into the integer. A
 * string of the text whose value starts with NUL gets one more NUL in front ("\u0000\u0000...",
 * never a replacement's form), which from_json drops (a key with a NUL is jansson's error either
 * way). NULL when there is nothing to rewrite (or no memory: the plain parse reports the number).
 * The error position of a rewritten text maps back with big_unmap: each replacement is 8 bytes
 * longer than its token (a doubled NUL 6). The same is done to the NaN,
 * Infinity and -Infinity tokens Python's json reads ("\u0000NaN" ...: from_json makes the float;
 * an ERB render refuses them, as Ruby's JSON does). */
typedef struct big_text {
    char *s;
    size_t len;
    size_t *at, n;              /* the rewritten offsets of the n replacements */
    unsigned char *sh;          /* how many bytes longer each made the text (8, or 6: a doubled \u0000) */
    size_t long_digits, long_at; /* the first integer past TPL_PY_INT_MAX_STR_DIGITS digits (its
                                  * digits, 0: none) and its offset in the original text */
    bool nonfinite;             /* a NaN, Infinity or -Infinity token (rewritten as "\u0000NaN" ...) */
    size_t nf_at;               /* the first one's offset in the original text */
    size_t huge_digits, huge_at; /* the first integer past TPL_STATE_INT_MAX_DIGITS digits */
} big_text;

static bool big_token(const char *s, size_t n) /* an integer token -?[0-9]+ past int64 */
{
    size_t i = s[0] == '-', d = n - i;
    if (d < 19) return false;
    if (d > 19) return true;
    return memcmp(s + i, i ? "9223372036854775808" : "9223372036854775807", 19) > 0;
}

/* s[0..n) is a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static bool number_token(const char *s, size_t n)
{
    size_t i = s[0] == '-', d = i;
    while (i < n && s[i] >= '0' && s[i] <= '9') i++;
    if (i == d || (s[d] == '0' && i - d > 1)) return false;
    if (i < n && s[i] == '.') {
        size_t f = ++i;
        while (i < n && s[i] >= '0' && s[i] <= '9') i++;
        if (i == f) return false;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-')) i++;
        size_t x = i;
        while (i < n && s[i] >= '0' && s[i] <= '9') i++;
        if (i == x) return false;
    }
    return i == n;
}

static bool big_real(const char *s, size_t n) /* a real token past DBL_MAX: Python reads it as inf */
{
    char buf[64];
    if (n >= sizeof buf) {
        /* long mantissas: only the exponent matters for overflow; strtod handles any length */
        char *t = malloc(n + 1);
        if (!t) return false;
        memcpy(t, s, n);
        t[n] = 0;
        double d = strtod(t, NULL);
        free(t);
        return isinf(d);
    }
    memcpy(buf, s, n);
    buf[n] = 0;
    return isinf(strtod(buf, NULL));
}

static bool big_rewrite(const char *s, size_t len, big_text *bt)
{
    memset(bt, 0, sizeof *bt);
    size_t nbig = 0, ndbl = 0, extra = 0;
    bool in_str = false, esc = false;
    for (int pass = 0; pass < 2; pass++) {
        size_t o = 0;
        in_str = esc = false;
        for (size_t i = 0; i < len;) {
            char c = s[i];
            if (in_str) {
                if (esc) esc = false;
                else if (c == '\\') esc = true;
                else if (c == '"') in_str = false;
                if (pass) bt->s[o++] = c;
                i++;
                continue;
            }
            if (c == '"') {
                in_str = true;
                /* a string whose value starts with NUL (it starts with the escape \u0000) gets one
                 * more: from_json drops it again, so it never reads as a replacement */
                if (len - i > 7 && memcmp(s + i + 1, "\\u0000", 6) == 0) {
                    if (!pass) { ndbl++; extra += 6; }
                    else {
                        bt->at[bt->n] = o;
                        bt->sh[bt->n++] = 6;
                        memcpy(bt->s + o, "\"\\u0000", 7);
                        o += 7;
                    }
                    i++;
                    continue;
                }
            }
            /* Python's json reads NaN, Infinity and -Infinity (jansson refuses them): kept as
             * "\u0000NaN" ..., which from_json turns into the float */
            size_t nf = c == 'N' && len - i >= 3 && memcmp(s + i, "NaN", 3) == 0 ? 3
                        : c == 'I' && len - i >= 8 && memcmp(s + i, "Infinity", 8) == 0 ? 8
                        : c == '-' && len - i >= 9 && memcmp(s + i, "-Infinity", 9) == 0 ? 9 : 0;
            if (nf) {
                if (!pass) {
                    if (!bt->nonfinite) { bt->nonfinite = true; bt->nf_at = i; }
                    nbig++;
                    extra += 8;
                } else {
                    bt->at[bt->n] = o;
                    bt->sh[bt->n++] = 8;
                    memcpy(bt->s + o, "\"\\u0000", 7);
                    memcpy(bt->s + o + 7, s + i, nf);
                    o += 7 + nf;
                    bt->s[o++] = '"';
                }
                i += nf;
                continue;
            }
            if ((c == '-' || (c >= '0' && c <= '9')) && (i == 0 || !((s[i - 1] >= '0' && s[i - 1] <= '9') ||
                                                                       s[i - 1] == '.' || s[i - 1] == 'e' ||
                                                                       s[i - 1] == 'E' || s[i - 1] == '+' ||
                                                                       s[i - 1] == '-'))) {
                size_t e = i + (c == '-');
                while (e < len && s[e] >= '0' && s[e] <= '9') e++;
                bool digits = e > i + (c == '-'), frac = false;
                if (digits && e < len && s[e] == '.') {
                    frac = true;
                    for (e++; e < len && s[e] >= '0' && s[e] <= '9';) e++;
                }
                if (digits && e < len && (s[e] == 'e' || s[e] == 'E')) {
                    frac = true;
                    e++;
                    if (e < len && (s[e] == '+' || s[e] == '-')) e++;
                    while (e < len && s[e] >= '0' && s[e] <= '9') e++;
                }
                /* JSON's grammar: no leading zero, digits after '.' and after the exponent (a
                 * token that breaks it is left for jansson to report: 01, 1., 1e) */
                if (digits && number_token(s + i, e - i) &&
                    (frac ? big_real(s + i, e - i) : big_token(s + i, e - i))) {
                    size_t nd = e - i - (c == '-');
                    if (!pass && !frac && !bt->long_digits && nd > TPL_PY_INT_MAX_STR_DIGITS) {
                        bt->long_digits = nd;
                        bt->long_at = i;
                    }
                    if (!pass && !frac && !bt->huge_digits && nd > TPL_STATE_INT_MAX_DIGITS) {
                        bt->huge_digits = nd;
                        bt->huge_at = i;
                    }
                    if (!pass) { nbig++; extra += 8; }
                    else {
                        bt->at[bt->n] = o;
                        bt->sh[bt->n++] = 8;
                        memcpy(bt->s + o, "\"\\u0000", 7);
                        memcpy(bt->s + o + 7, s + i, e - i);
                        o += 7 + (e - i);
                        bt->s[o++] = '"';
                    }
                    i = e;
                    continue;
                }
                if (pass) { memcpy(bt->s + o, s + i, e - i); o += e - i; }
                i = e; /* (a lone '-': e is past it) */
                continue;
            }
            if (pass) bt->s[o++] = c;
            i++;
        }
        if (!pass) {
            if (!nbig) return false;
            bt->len = len + extra;
            bt->s = malloc(bt->len + 1);
            bt->at = malloc((nbig + ndbl) * sizeof *bt->at);
            bt->sh = malloc((nbig + ndbl) * sizeof *bt->sh);
            if (!bt->s || !bt->at || !bt->sh) {
                free(bt->s); free(bt->at); free(bt->sh);
                memset(bt, 0, sizeof *bt);
                return false;
            }
        }
    }
    return true;
}

/* A parse error's position in the rewritten text, mapped back to the original's. */
static void big_unmap(const big_text *bt, json_error_t *je)
{
    size_t pos = (size_t)je->position, shift = 0, col_shift = 0;
    size_t line_start = pos;
    while (line_start > 0 && bt->s[line_start - 1] != '\n') line_start--;
    for (size_t k = 0; k < bt->n && bt->at[k] < pos; k++) {
        shift += bt->sh[k];
        if (bt->at[k] >= line_start) col_shift += bt->sh[k];
    }
    je->position -= (int)shift;
    if (je->column > (int)col_shift) je->column -= (int)col_shift;
}

/* json_loadb with big integers kept (big_rewrite): *big says whether from_json must look for them;
 * *lng is the first integer past 4,300 digits (located as jansson locates: lines from 1, columns
 * in code points from 1), or digits 0. */
static json_t *load_json_big(const char *json, size_t len, json_error_t *je, bool *big, tpl_long_int *lng)
{
    big_text bt;
    *big = big_rewrite(json, len, &bt);
    memset(lng, 0, sizeof *lng);
    if (bt.long_digits) {
        uint32_t line = 1, col = 1;
        for (size_t i = 0; i < bt.long_at; i++) {
            if (json[i] == '\n') line++, col = 1;
            else if (((unsigned char)json[i] & 0xC0) != 0x80) col++;
        }
        lng->digits = bt.long_digits;
        lng->line = line;
        lng->column = col;
    }
    if (bt.huge_digits) {
        uint32_t line = 1, col = 1;
        for (size_t i = 0; i < bt.huge_at; i++) {
            if (json[i] == '\n') line++, col = 1;
            else if (((unsigned char)json[i] & 0xC0) != 0x80) col++;
        }
        lng->huge_digits = bt.huge_digits;
        lng->huge_line = line;
        lng->huge_column = col;
    }
    if (bt.nonfinite) {
        uint32_t line = 1, col = 1;
        for (size_t i = 0; i < bt.nf_at; i++) {
            if (json[i] == '\n') line++, col = 1;
            else if (((unsigned char)json[i] & 0xC0) != 0x80) col++;
        }
        lng->nonfinite = true;
        lng->nf_line = line;
        lng->nf_column = col;
    }
    if (!*big) return json_loadb(json, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, je);
    json_t *j = json_loadb(bt.s, bt.len, JSON_DECODE_ANY | JSON_ALLOW_NUL, je);
    if (!j && je->position >= 0 && (size_t)je->position <= bt.len) big_unmap(&bt, je);
    free(bt.s);
    free(bt.at);
    free(bt.sh);
    return j;
}

void tpl_render_state_reset(tpl_render *r)
{
    state_arena_reset(&r->vm);
    r->vm.reads_prog = NULL; /* (tpl_render_set_state_reads' map is gone) */
    r->vm.reads_map = NULL;
}

/* The state from a parsed document (NULL: je says why); j is consumed. */
static tpl_status set_state(tpl_vm *vm, json_t *j, const json_error_t *je, bool big, const tpl_long_int *lng)
{
    clear_error(vm);
    memset(&vm->state_long_int, 0, sizeof vm->state_long_int);
    vm->state_stamp++; /* (the native code's state memo: vm_impl.h) */
    if (!j) {
        fail(vm, TPL_ERR_STATE, je->text);
        vm->err.line = je->line > 0 ? (uint32_t)je->line : 1;
        vm->err.column = je->column > 0 ? (uint32_t)je->column : 1;
        return TPL_ERR_STATE;
    }
    if (!json_is_object(j)) {
        json_decref(j);
        return fail(vm, TPL_ERR_STATE, "the state must be a JSON object");
    }
    state_arena_reset(vm);
    vm->rb_self = tpl_v_none();
    vm->rb_ivars_state = false;
    vm->globals = tpl_v_none(); /* (built in the memory just reset) */
    tpl_value v;
    key_cache kc = { NULL, 0, 0 };
    bool ok = from_json(&vm->state_arena, j, &v, 0, big, &kc);
    free(kc.e);
    json_decref(j);
    if (!ok && vm->state_arena.over_limit) return state_too_big(vm);
    if (!ok) { vm->state = tpl_v_none(); return fail(vm, TPL_ERR_STATE, "state too deep or out of memory"); }
    vm->state = v;
    vm->state_host = false; /* (a JSON state: its lists change for one render, vm.c own_header) */
    vm->state_long_int = *lng;
    return TPL_OK;
}

/* Bytes loading a JSON text takes at its peak (the text, jansson's tree, the state's values),
 * estimated from its structure before parsing (a 60 MB state of [{}, {}, ...] took 4.9 GB), fed
 * in pieces. The weights are bytes of peak RSS measured per kind of item (glibc malloc, jansson
 * 2.14): a string 96 plus twice its bytes (jansson's copy and the state's), a number 34, every
 * value 20 (its slot), an object 212 (jansson's hashtable and buckets, the state's map), an array
 * 116, a key of an object past 16 keys 100 more (the tables of a large object grow by doubling).
 * tests/state_memory.py checks that a state within --max-memory peaks within ~10% of it (64 B a
 * value whatever its kind let 12 MB of one-letter strings take 324 MB under 256M). */
#define COST_STACK 64
typedef struct state_cost {
    uint64_t bytes, str_bytes, strings, numbers, values, objects, arrays, big_keys;
    uint32_t depth;                /* containers open */
    uint32_t keys[COST_STACK];     /* keys so far of each open object (arrays: unused) */
    bool in_str, esc;
    char prev;                     /* the last byte outside strings */
} state_cost;

static void cost_feed(state_cost *c, const char *s, size_t n)
{
    c->bytes += n;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (c->in_str) {
            if (c->esc) c->esc = false;
            else if (ch == '\\') c->esc = true;
            else if (ch == '"') c->in_str = false;
            else c->str_bytes++;
            continue;
        }
        if (ch == '"') {
            c->in_str = true;
            c->strings++;
        } else if (ch == '{' || ch == '[') {
            ch == '{' ? c->objects++ : c->arrays++;
            c->values++;
            if (c->depth < COST_STACK) c->keys[c->depth] = 0;
            c->depth++;
        } else if (ch == '}' || ch == ']') {
            if (c->depth) c->depth--;
        } else if (ch == ',') {
            c->values++;
        } else if (ch == ':') {
            /* past COST_STACK levels every key counts as one of a large object */
            uint32_t k = c->depth && c->depth <= COST_STACK ? ++c->keys[c->depth - 1] : 17;
            c->big_keys += k == 17 ? 17 : k > 17;
        } else if ((ch == '-' || (ch >= '0' && ch <= '9')) &&
                   !(c->prev == '-' || c->prev == '+' || c->prev == '.' || c->prev == 'e' || c->prev == 'E' ||
                     (c->prev >= '0' && c->prev <= '9'))) {
            c->numbers++;
        }
        c->prev = ch;
    }
}

static uint64_t cost_total(const state_cost *c)
{
    return c->bytes + c->str_bytes * 2 + c->strings * 96 + c->numbers * 34 + (c->values + 1) * 20 + c->objects * 212 +
           c->arrays * 116 + c->big_keys * 100;
}

static tpl_status state_too_big(tpl_vm *vm)
{
    char m[96];
    snprintf(m, sizeof m, "state exceeds the memory limit (%llu bytes)", (unsigned long long)vm->limits.max_memory);
    vm->state = tpl_v_none();
    vm->state_stamp++;
    return fail_kind(vm, TPL_EK_MEMORY_LIMIT, m);
}

tpl_status tpl_render_set_state_json(tpl_render *r, const char *json, size_t len)
{
    if (!usable(r)) return TPL_ERR_USAGE;
    if (!json) return tpl_render_null_arg(r, "tpl_render_set_state_json", "json");
    tpl_vm *vm = &r->vm;
    state_cost c = { 0 };
    cost_feed(&c, json, len);
    if (cost_total(&c) > vm->limits.max_memory) return state_too_big(vm);
    r->busy = true; /* the state arena may call the host's allocator */
    json_error_t je;
    bool big;
    tpl_long_int lng;
    json_t *j = load_json_big(json, len, &je, &big, &lng);
    tpl_status st = set_state(vm, j, &je, big, &lng);
    r->busy = false;
    return st;
}

tpl_status tpl_render_set_state_file(tpl_render *r, FILE *f)
{
    if (!usable(r)) return TPL_ERR_USAGE;
    if (!f) return tpl_render_null_arg(r, "tpl_render_set_state_file", "f");
    tpl_vm *vm = &r->vm;
    /* a seekable file is measured first (in 64 KiB pieces), then parsed from where it began */
    long at = ftell(f);
    if (at >= 0) {
        state_cost c = { 0 };
        char buf[1 << 16];
        size_t got;
        while ((got = fread(buf, 1, sizeof buf, f)) > 0) {
            cost_feed(&c, buf, got);
            if (cost_total(&c) > vm->limits.max_memory) return state_too_big(vm);
        }
        if (ferror(f) || fseek(f, at, SEEK_SET) != 0) return fail(vm, TPL_ERR_STATE, "cannot read the state");
    }
    /* read whole (measured above when seekable; never more than the memory limit), then parsed
     * as tpl_render_set_state_json parses it */
    size_t len = 0, cap = 1 << 16;
    char *text = malloc(cap);
    while (text) {
        if (len == cap) {
            char *nt = cap > vm->limits.max_memory ? NULL : realloc(text, cap * 2);
            if (!nt) {
                free(text);
                if (cap > vm->limits.max_memory) return state_too_big(vm);
                return nomem(vm);
            }
            text = nt;
            cap *= 2;
        }
        size_t got = fread(text + len, 1, cap - len, f);
        len += got;
        if (got == 0) break;
    }
    if (!text) return nomem(vm);
    if (ferror(f)) { free(text); return fail(vm, TPL_ERR_STATE, "cannot read the state"); }
    r->busy = true;
    json_error_t je;
    bool big;
    tpl_long_int lng;
    json_t *j = load_json_big(text, len, &je, &big, &lng);
    free(text);
    tpl_status st = set_state(vm, j, &je, big, &lng);
    r->busy = false;
    return st;
}

/* A state the reference engine would not have loaded (json.load's digit limit, Ruby's JSON): the
 * render's error, located in the state, or TPL_OK (run's rare path: out of its way). */
static __attribute__((noinline, cold)) tpl_status state_refused(tpl_vm *vm, const tpl_program *p)
{
    if (vm->state_long_int.digits && p->opts.syntax != TPL_SYNTAX_ERB) {
        /* Python's json.load raised while reading the state: nothing renders */
        char m[200];
        snprintf(m, sizeof m, "Exceeds the limit (%d digits) for integer string conversion: value has %zu digits; "
                 "use sys.set_int_max_str_digits() to increase the limit", TPL_PY_INT_MAX_STR_DIGITS,
                 vm->state_long_int.digits);
        fail(vm, TPL_ERR_STATE, m);
        vm->err.line = vm->state_long_int.line;
        vm->err.column = vm->state_long_int.column;
        return TPL_ERR_STATE;
    }
    if (vm->state_long_int.huge_digits && p->opts.syntax == TPL_SYNTAX_ERB) {
        /* Ruby's JSON reads it; tpl's integers stop at TPL_BIG_MAX_BITS */
        char m[200];
        snprintf(m, sizeof m, "integer in the state too large for tpl: value has %zu digits (at most %d; "
                 "tpl's integers have at most %d bits)", vm->state_long_int.huge_digits, TPL_STATE_INT_MAX_DIGITS,
                 TPL_BIG_MAX_BITS);
        fail(vm, TPL_ERR_STATE, m);
        vm->err.line = vm->state_long_int.huge_line;
        vm->err.column = vm->state_long_int.huge_column;
        return TPL_ERR_STATE;
    }
    if (vm->state_long_int.nonfinite && p->opts.syntax == TPL_SYNTAX_ERB) {
        /* Ruby's JSON.parse refuses NaN, Infinity and -Infinity (Python's json reads them) */
        fail(vm, TPL_ERR_STATE, "unexpected token in the state: Ruby's JSON reads no NaN, Infinity or -Infinity");
        vm->err.line = vm->state_long_int.nf_line;
        vm->err.column = vm->state_long_int.nf_column;
        return TPL_ERR_STATE;
    }
    return TPL_OK;
}

/* The render arena's limit: what tpl_limits.max_memory leaves over the state's values, so the state
 * and the render together stay within the one limit (each had all of it: twice the limit at the
 * peak). The state's bytes in use count, not the room its arena keeps for reuse, so the room a
 * render gets does not depend on earlier states; a chunk the render arena kept from an earlier
 * render that no longer fits is given back. */
static void render_room(tpl_vm *vm)
{
    size_t used = 0;
    for (const tpl_chunk *c = vm->state_arena.head; c; c = c->next) used += c->used;
    size_t max = vm->limits.max_memory > SIZE_MAX ? SIZE_MAX : (size_t)vm->limits.max_memory;
    size_t room = used < max ? max - used : 16; /* (0 would be no limit) */
    vm->arena.limit = room;
    if (vm->arena.total > room) tpl_arena_free(&vm->arena);
}

static tpl_status run(tpl_render *r, const tpl_program *p, const char **out, size_t *out_len)
{
    tpl_vm *vm = &r->vm;
    clear_error(vm);
    tpl_arena_reset(&vm->arena);
    render_room(vm);
    vm->host_payload = NULL;
    vm->host_msg[0] = 0;
    vm->p = p;
    if (__builtin_expect((vm->state_long_int.digits | vm->state_long_int.huge_digits) != 0 ||
                         vm->state_long_int.nonfinite, 0)) {
        tpl_status st = state_refused(vm, p);
        if (st != TPL_OK) return st;
    }
    vm->out_stream = vm->out_write && !p->opts.tidy;
    vm->out_flushed = 0;
    if (vm->out_stream && vm->out_cap > TPL_VM_OUT_PIECE) {
        /* pieces of about the buffer's size: a buffer a whole render grew is made small again */
        char *no = tpl_vm_mem_realloc(vm, vm->out, vm->out_cap, TPL_VM_OUT_PIECE);
        if (no) {
            vm->out = no;
            vm->out_cap = TPL_VM_OUT_PIECE;
        }
    }
    int rc = p->native_flags & TPL_NATIVE_DIRECT ? tpl_vm_run_direct(vm) : tpl_vm_run(vm);
    if (rc == 0 && vm->out_write) rc = tpl_vm_out_flush(vm); /* (the rest; a tidy program's whole output) */
    if (rc < 0) {
        if (vm->err.status == TPL_OK) fail(vm, TPL_ERR_TYPE, "render failed");
        return vm->err.status;
    }
    if (vm->out_len + 1 > vm->out_cap) {
        char *no = tpl_vm_mem_realloc(vm, vm->out, vm->out_cap, vm->out_len + 1);
        if (!no) return nomem(vm);
        vm->out = no;
        vm->out_cap = vm->out_len + 1;
    }
    vm->out[vm->out_len] = 0;
    *out = vm->out;
    *out_len = vm->out_len;
    return TPL_OK;
}

/* tpl_render_run's refusals (out of the way of a render's path) */
static __attribute__((noinline, cold)) tpl_status render_run_refused(tpl_render *r, const tpl_program *p,
                                                                    const char **out, size_t *out_len)
{
    if (!usable(r)) return TPL_ERR_USAGE;
    if (!p) return tpl_render_null_arg(r, "tpl_render_run", "the program");
    return tpl_render_null_arg(r, "tpl_render_run", out ? "out_len" : "out");
}

tpl_status tpl_render_run(tpl_render *r, const tpl_program *p, const char **out, size_t *out_len)
{
    if (out) *out = NULL;
    if (out_len) *out_len = 0;
    if (__builtin_expect(!usable(r) || !p || !out || !out_len, 0)) return render_run_refused(r, p, out, out_len);
    r->busy = true;
    tpl_status st = run(r, p, out, out_len);
    if (__builtin_expect(r->vm.rescue != NULL, 0)) tpl_vm_rescue_free(&r->vm); /* (a call's snapshot, rare) */
    if (__builtin_expect(r->vm.marks != NULL || r->vm.standing != NULL || r->vm.standing_next != 0,
                         0))
        tpl_vm_marks_free(&r->vm); /* (tpl_render_mark's, rare) */
    r->busy = false;
    return st;
}

/* ------------------------------------------------------------------ host functions */

void tpl_render_set_host_funcs(tpl_render *r, const tpl_host_func *funcs, size_t n)
{
    if (!usable(r)) return;
    r->vm.host_funcs = funcs && n ? funcs : NULL;
    r->vm.nhost_funcs = funcs ? n : 0;
}

int tpl_host_value_fn(void *data, tpl_host_call *call)
{
    (void)data;
    (void)call; /* (a caller's own tpl_host_call may not be tpl's: nothing is written to it) */
    return 1;
}

/* The state of one host call behind the public tpl_host_call (first member, so the public
 * pointer converts back). */
typedef struct host_call {
    tpl_host_call pub;
    tpl_vm *vm;
    tpl_value result;
    bool json_error, nomem;
    char msg[256];
} host_call;

tpl_status tpl_host_return_json(tpl_host_call *call, const char *json, size_t len)
{
    if (!call || !json) return TPL_ERR_USAGE;
    host_call *hc = (host_call *)call;
    json_error_t je;
    json_t *j = json_loadb(json, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    if (!j) {
        hc->json_error = true;
        snprintf(hc->msg, sizeof hc->msg, "invalid result JSON: %s", je.text);
        return TPL_ERR_VALUE;
    }
    tpl_value v;
    bool ok = tpl_value_from_json(&hc->vm->arena, j, &v, 0);
    json_decref(j);
    if (!ok) { hc->nomem = true; return TPL_ERR_NOMEM; }
    hc->result = v;
    return TPL_OK;
}

tpl_status tpl_host_return_str(tpl_host_call *call, const char *s, size_t len)
{
    if (!call || !s) return TPL_ERR_USAGE;
    host_call *hc = (host_call *)call;
    size_t bad;
    if (!tpl_utf8_valid(s, len, &bad)) { /* as the JSON result, whose parser rejects it */
        hc->json_error = true;
        snprintf(hc->msg, sizeof hc->msg, "result is not valid UTF-8 (byte 0x%02X at offset %zu)", (unsigned char)s[bad],
                 bad);
        return TPL_ERR_VALUE;
    }
    char *c = tpl_arena_strdup(&hc->vm->arena, s, len);
    if (!c) { hc->nomem = true; return TPL_ERR_NOMEM; }
    hc->result = tpl_v_str(c, len);
    return TPL_OK;
}

void tpl_host_fail(tpl_host_call *call, const char *msg)
{
    if (!call) return;
    host_call *hc = (host_call *)call;
    snprintf(hc->msg, sizeof hc->msg, "%s", msg ? msg : "");
}

/* Appends v as JSON (top-level undefined: null, or the strict undefined error). */
static int host_arg_json(tpl_vm *vm, tpl_sb *b, tpl_value v, const char *fname)
{
    if (v.type == TPL_T_UNDEF) {
        if (tpl_vm_strict_undef(vm, v)) return tpl_stdlib.undefined_error(vm, v);
        tpl_sb_puts(b, "null");
        return 0;
    }
    if (!tpl_json_dumps(b, v, false, -1, NULL, NULL, false))
        return tpl_vm_error(vm, TPL_ERR_TYPE, "host function '%s': an argument cannot be passed as JSON", fname);
    return 0;
}

int tpl_vm_host_call(tpl_vm *vm, int kind, tpl_value name, const tpl_value *pos, int npos, const tpl_value *kwn,
                     const tpl_value *kwv, int nkw, tpl_value *out)
{
    const char *what = kind == TPL_HOST_FILTER ? "filter" : kind == TPL_HOST_TEST ? "test" : "function";
    const tpl_host_func *f = NULL;
    for (size_t i = 0; i < vm->nhost_funcs && !f; i++) {
        const tpl_host_func *h = &vm->host_funcs[i];
        if ((int)h->kind == kind && h->name && h->fn && strlen(h->name) == name.len &&
            memcmp(h->name, name.u.s, name.len) == 0)
            f = h;
    }
    if (!f)
        return tpl_vm_error(vm, TPL_ERR_UNDEFINED, "no host %s named '%.*s' in this render context", what,
                            (int)name.len, name.u.s);
    if (tpl_has_big_range(pos, npos) || tpl_has_big_range(kwv, nkw)) /* a host sees items: it has none */
        return tpl_range_too_large(vm);
    if (f->fn == tpl_host_value_fn) { /* a host object called with values (runtime/host.c) */
        const tpl_host_object *ho = f->data;
        if (!ho || !ho->cls)
            return tpl_vm_error(vm, TPL_ERR_USAGE, "host %s '%s': no tpl_host_object", what, f->name);
        return tpl_hobj_call_func(vm, (tpl_render *)(void *)((char *)vm - offsetof(struct tpl_render, vm)), ho->cls,
                                  ho->obj, pos, npos, kwn, kwv, nkw, out);
    }
    tpl_sb args, kwargs;
    tpl_sb_init(&args, &vm->arena);
    tpl_sb_init(&kwargs, &vm->arena);
    tpl_sb_putc(&args, '[');
    for (int i = 0; i < npos; i++) {
        if (i) tpl_sb_puts(&args, ", ");
        if (host_arg_json(vm, &args, pos[i], f->name) < 0) return -1;
    }
    tpl_sb_puts(&args, "]");
    tpl_sb_putc(&args, 0);
    tpl_sb_putc(&kwargs, '{');
    for (int i = 0; i < nkw; i++) {
        if (i) tpl_sb_puts(&kwargs, ", ");
        if (host_arg_json(vm, &kwargs, kwn[i], f->name) < 0) return -1;
        tpl_sb_puts(&kwargs, ": ");
        if (host_arg_json(vm, &kwargs, kwv[i], f->name) < 0) return -1;
    }
    tpl_sb_putc(&kwargs, '}');
    tpl_sb_putc(&kwargs, 0);
    if (args.failed || kwargs.failed)
        return tpl_vm_nomem(vm);
    host_call hc = { { f->name, args.p, args.len - 1, kwargs.p, kwargs.len - 1 }, vm, tpl_v_none(), false, false, "" };
    int rc = f->fn(f->data, &hc.pub);
    /* nonzero: the host reports failure (RAISED); 0 with a rejected result (invalid JSON or UTF-8)
     * is a bad value from the host (VALUE) */
    if (rc != 0 || hc.json_error)
        return tpl_vm_error(vm, rc != 0 ? TPL_ERR_RAISED : TPL_ERR_VALUE, "host %s '%s' failed%s%s", what, f->name,
                            hc.msg[0] ? ": " : "", hc.msg);
    if (hc.nomem) return tpl_vm_nomem(vm); /* the host's result did not fit */
    *out = hc.result;
    return 0;
}

const tpl_error *tpl_render_error(const tpl_render *r)
{
    if (!r) return &null_render_error;
    if (r->busy) return &busy_render_error;
    return &r->vm.err;
}
