/* The prompt features' per-render data (include/tpl_prompt.h): the facts remembers() consults or
 * the host's memory store, the `call` object (channel, medium, claimed code) and the translation
 * state. One tpl_prompt_state per render context, in its extension slot (tpl_vm_ext), made and
 * freed through the library table (tpl_stdlib.ext_new / ext_free); the VM never looks inside. */
#include <string.h>
#include "../builtins.h"
#include "../../runtime/error.h"
#include "tr.h"

/* remembers() memo: its entries (16: remembered_at takes a hash's top 4 bits), the longest
 * phrase it keeps */
enum { REMEMBERED_N = 16, REMEMBERED_MAX = 32 };

struct tpl_prompt_state {
    tpl_arena fact_arena;   /* facts; reset by tpl_render_clear_facts */
    tpl_arena call_arena;   /* the `call` object; rebuilt by tpl_render_set_call */
    tpl_list *facts;        /* NFC-normalised facts, or NULL before the first */
    tpl_remembers_fn remembers_fn; /* host memory store (tpl_render_set_remembers), or NULL */
    void *remembers_data;
    tpl_value call;         /* the `call` builtin value (a map) */
    char channel[32], medium[32];
    char claimed[64];       /* call.claimed; has_claimed false: None */
    bool has_claimed;
    tpl_tr_state *tr;       /* catalogs, language, tr_keys (tr.c); NULL until first set */
    /* remembers() answers kept while the facts do not change (a template asks the same phrases
     * in every render): emptied by every change of the facts (add_fact, clear_facts) */
    struct remembered {
        uint32_t n;         /* the phrase's length (NFC form); UINT32_MAX: an empty memo entry */
        bool found;
        uint64_t cost;      /* the fuel its fact scan charges */
        char s[REMEMBERED_MAX]; /* the phrase's bytes (a copy: the caller's may not outlive it) */
    } remembered[REMEMBERED_N];
};

static tpl_prompt_state *state_of(const tpl_vm *vm) { return tpl_vm_ext(vm); }

/* An answer native code may keep until the facts or the memory store change (tpl_native.h,
 * tpl_native_remembers_kept): 1, whether found, the fuel its scan charges. */
#define KEPT(found, cost) ((uint64_t)(cost) << 2 | (uint64_t)(found) << 1 | 1u)

static void forget_remembered(tpl_prompt_state *s)
{
    for (size_t i = 0; i < REMEMBERED_N; i++) s->remembered[i].n = UINT32_MAX;
}

/* The memo entry the phrase w (n bytes) goes to, or NULL when it is too long to keep. An entry
 * holds a phrase only while the facts it was answered from are the render context's (and they
 * are not empty: remembers() answers no facts before it looks). */
static struct remembered *remembered_at(tpl_prompt_state *s, const char *w, size_t n)
{
    if (n - 1 >= REMEMBERED_MAX) return NULL; /* (n 0 too: nothing to key on) */
    uint32_t key = (uint32_t)n << 16 | (uint32_t)(unsigned char)w[0] << 8 | (unsigned char)w[n - 1];
    return &s->remembered[(key * 0x9E3779B1u) >> 28]; /* (Fibonacci hashing: 16 entries) */
}

/* The answer a memo entry holds, with the fuel its fact scan charged. */
static int remembered_answer(tpl_vm *vm, const struct remembered *m, tpl_value *out)
{
    if (!tpl_fuel_charge(tpl_vm_arena(vm)->fuel, m->cost))
        return tpl_vm_nomem(vm);
    *out = tpl_v_bool(m->found);
    return 0;
}

/* The `call` map for the state's channel, medium and claimed code (in call_arena, rebuilt). */
static bool build_call(tpl_prompt_state *s)
{
    tpl_arena *a = &s->call_arena;
    tpl_arena_reset(a);
    tpl_map *m = tpl_map_new(a, 4);
    tpl_list *hist = tpl_list_new(a, 0);
    if (!m || !hist) return false;
    bool ok = tpl_map_set(a, m, tpl_v_str("channel", 7), tpl_v_str(s->channel, strlen(s->channel))) &&
              tpl_map_set(a, m, tpl_v_str("medium", 6), tpl_v_str(s->medium, strlen(s->medium))) &&
              tpl_map_set(a, m, tpl_v_str("claimed", 7),
                          s->has_claimed ? tpl_v_str(s->claimed, strlen(s->claimed)) : tpl_v_none()) &&
              tpl_map_set(a, m, tpl_v_str("history", 7), tpl_v_list(hist));
    if (ok) s->call = tpl_v_map(m);
    return ok;
}

void *tpl_prompt_new(tpl_vm *vm)
{
    const tpl_allocator *al = tpl_vm_allocator(vm);
    tpl_prompt_state *s = al->alloc(al->data, sizeof *s);
    if (!s) return NULL;
    memset(s, 0, sizeof *s);
    tpl_arena_init(&s->fact_arena, 0);
    tpl_arena_init(&s->call_arena, 0);
    tpl_arena_set_allocator(&s->fact_arena, al);
    tpl_arena_set_allocator(&s->call_arena, al);
    forget_remembered(s);
    strcpy(s->channel, "phone");
    strcpy(s->medium, "voice");
    if (!build_call(s)) { tpl_prompt_free(vm, s); return NULL; }
    return s;
}

void tpl_prompt_free(tpl_vm *vm, void *ext)
{
    tpl_prompt_state *s = ext;
    if (!s) return;
    const tpl_allocator *al = tpl_vm_allocator(vm);
    tpl_arena_free(&s->fact_arena);
    tpl_arena_free(&s->call_arena);
    tpl_tr_free(s->tr);
    al->free(al->data, s, sizeof *s);
}

int tpl_prompt_global(tpl_vm *vm, const char *name, size_t n, tpl_value *out)
{
    if (n != 4 || memcmp(name, "call", 4) != 0) return 0;
    *out = state_of(vm)->call;
    return 1;
}

tpl_value tpl_prompt_call(const tpl_vm *vm) { return state_of(vm)->call; }
tpl_tr_state *tpl_prompt_tr(const tpl_vm *vm) { return state_of(vm)->tr; }

/* ------------------------------------------------------------------ remembers() */

/* remembers() of the string w, NFC-normalised if it is not ASCII (ascii: known to be ASCII); not
 * inlined (its frame would cost tpl_prompt_remembers_ascii's memo hits) */
static __attribute__((noinline)) int remembers_str(tpl_vm *vm, tpl_value w, bool ascii, tpl_value *out,
                                                   uint64_t *kept)
{
    tpl_prompt_state *s = state_of(vm);
    if (s->remembers_fn) {
        /* the host's memory store (tpl_render_set_remembers) answers instead of the facts */
        if (!ascii && !tpl_is_ascii(w.u.s, w.len))
            w = tpl_nfc(tpl_vm_arena(vm), w);
        tpl_vm_host_ran(vm);
        int rc = s->remembers_fn(s->remembers_data, w.u.s, w.len);
        if (rc < 0 || rc > 1) return tpl_vm_error(vm, TPL_ERR_RAISED, "host function 'remembers' failed");
        *out = tpl_v_bool(rc == 1);
        return 0;
    }
    size_t nfacts = s->facts ? s->facts->len : 0;
    if (nfacts == 0) {
        if (kept) *kept = KEPT(false, 0);
        *out = tpl_v_bool(false);
        return 0;
    }
    if (!ascii && !tpl_is_ascii(w.u.s, w.len))
        w = tpl_nfc(tpl_vm_arena(vm), w);
    /* the same phrase asked before with these facts: the same answer and the same fuel */
    struct remembered *m = remembered_at(s, w.u.s, w.len);
    if (m && m->n == w.len && tpl_mem_eq(m->s, w.u.s, w.len)) {
        if (kept) *kept = KEPT(m->found, m->cost);
        return remembered_answer(vm, m, out);
    }
    /* Each fact scanned charges the render's fuel: four units plus one per 16 bytes (the search
     * is linear, tpl_bytes_contain), so 20,000 calls over 100,000 facts end with a located fuel
     * error instead of running for a minute. */
    const tpl_value *facts = s->facts->items;
    uint64_t cost = 0;
    bool found = false;
    for (size_t i = 0; i < nfacts && !found; i++) {
        cost += 4 + facts[i].len / 16;
        found = facts[i].type == TPL_T_STR && tpl_bytes_contain(facts[i].u.s, facts[i].len, w.u.s, w.len);
    }
    if (m) {
        m->n = w.len;
        memcpy(m->s, w.u.s, w.len);
        m->found = found;
        m->cost = cost;
    }
    if (kept) *kept = KEPT(found, cost);
    if (!tpl_fuel_charge(tpl_vm_arena(vm)->fuel, cost))
        return tpl_vm_nomem(vm);
    *out = tpl_v_bool(found);
    return 0;
}

int g_remembers(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value w = a[0];
    if (w.type != TPL_T_STR && tpl_to_str(vm, a[0], &w) < 0)
        return -1;
    return remembers_str(vm, w, false, out, NULL);
}

static inline __attribute__((always_inline)) int remembers_ascii(tpl_vm *vm, const char *s, size_t n, tpl_value *out,
                                                                 uint64_t *kept)
{
    /* the memo first, without remembers_str's frame (a template's constant phrases) */
    tpl_prompt_state *ps = state_of(vm);
    const struct remembered *m = ps->remembers_fn ? NULL : remembered_at(ps, s, n);
    if (m && m->n == n && tpl_mem_eq(m->s, s, n)) {
        if (kept) *kept = KEPT(m->found, m->cost);
        return remembered_answer(vm, m, out);
    }
    return remembers_str(vm, tpl_v_str(s, n), true, out, kept);
}

int tpl_prompt_remembers_ascii(tpl_vm *vm, const char *s, size_t n, tpl_value *out)
{
    return remembers_ascii(vm, s, n, out, NULL);
}

int tpl_prompt_remembers_kept(tpl_vm *vm, const char *s, size_t n, tpl_value *out, uint64_t *kept)
{
    return remembers_ascii(vm, s, n, out, kept);
}

/* ------------------------------------------------------------------ the public API */

/* Entry check of the public functions: false for NULL or a busy context. */
static bool usable(const tpl_render *r) { return r && !tpl_render_busy(r); }
static tpl_prompt_state *rstate(tpl_render *r) { return state_of(tpl_render_vm(r)); }
static tpl_status nomem(tpl_render *r)
{
    return tpl_render_fail(r, TPL_EK_NOMEM, tpl_error_kind_format(TPL_EK_NOMEM), 0, 0);
}

static tpl_status add_fact(tpl_render *r, const char *fact, size_t len)
{
    tpl_prompt_state *s = rstate(r);
    tpl_render_clear_error(r);
    if (tpl_render_check_utf8(r, "the fact", fact, len) != TPL_OK) return TPL_ERR_VALUE;
    if (!s->facts && !(s->facts = tpl_list_new(&s->fact_arena, 4))) return nomem(r);
    char *c = tpl_arena_strdup(&s->fact_arena, fact, len);
    if (!c) return nomem(r);
    tpl_value v = tpl_nfc(&s->fact_arena, tpl_v_str(c, len));
    forget_remembered(s); /* (before the push: a failed push may have changed nothing, or not) */
    tpl_vm_state_changed(tpl_render_vm(r)); /* (native code's kept answers) */
    if (!tpl_list_push(&s->fact_arena, s->facts, v)) return nomem(r);
    return TPL_OK;
}

tpl_status tpl_render_add_fact(tpl_render *r, const char *fact, size_t len)
{
    if (!usable(r)) return TPL_ERR_USAGE;
    if (!fact) return tpl_render_null_arg(r, "tpl_render_add_fact", "fact");
    tpl_render_set_busy(r, true); /* the arena may call the host's allocator */
    tpl_status st = add_fact(r, fact, len);
    tpl_render_set_busy(r, false);
    return st;
}

void tpl_render_clear_facts(tpl_render *r)
{
    if (!usable(r)) return;
    tpl_prompt_state *s = rstate(r);
    s->facts = NULL;
    forget_remembered(s);
    tpl_vm_state_changed(tpl_render_vm(r)); /* (native code's kept answers) */
    tpl_arena_reset(&s->fact_arena);
}

void tpl_render_set_remembers(tpl_render *r, tpl_remembers_fn fn, void *data)
{
    if (!usable(r)) return;
    tpl_prompt_state *s = rstate(r);
    s->remembers_fn = fn;
    s->remembers_data = fn ? data : NULL;
    tpl_vm_state_changed(tpl_render_vm(r)); /* (native code's kept answers) */
}

static tpl_status set_call(tpl_render *r, const char *channel, const char *medium)
{
    tpl_prompt_state *s = rstate(r);
    tpl_render_clear_error(r);
    if (!channel) channel = "phone";
    if (!medium) medium = strcmp(channel, "whatsapp") == 0 ? "text" : "voice";
    if (strlen(channel) >= sizeof s->channel || strlen(medium) >= sizeof s->medium)
        return tpl_render_fail(r, TPL_EK_USAGE, "channel or medium too long", 0, 0);
    if (tpl_render_check_utf8(r, "the channel", channel, strlen(channel)) != TPL_OK ||
        tpl_render_check_utf8(r, "the medium", medium, strlen(medium)) != TPL_OK)
        return TPL_ERR_VALUE;
    memmove(s->channel, channel, strlen(channel) + 1); /* may be s->channel itself */
    memmove(s->medium, medium, strlen(medium) + 1);
    return build_call(s) ? TPL_OK : nomem(r);
}

tpl_status tpl_render_set_call(tpl_render *r, const char *channel, const char *medium)
{
    if (!usable(r)) return TPL_ERR_USAGE;
    tpl_render_set_busy(r, true);
    tpl_status st = set_call(r, channel, medium);
    tpl_render_set_busy(r, false);
    return st;
}

tpl_status tpl_render_set_call_claimed(tpl_render *r, const char *claimed)
{
    if (!usable(r)) return TPL_ERR_USAGE;
    tpl_prompt_state *s = rstate(r);
    tpl_render_clear_error(r);
    if (claimed && tpl_render_check_utf8(r, "the claimed code", claimed, strlen(claimed)) != TPL_OK)
        return TPL_ERR_VALUE;
    if (claimed && strlen(claimed) >= sizeof s->claimed)
        return tpl_render_fail(r, TPL_EK_USAGE, "claimed code too long", 0, 0);
    s->has_claimed = claimed != NULL;
    if (claimed) strcpy(s->claimed, claimed);
    return tpl_render_set_call(r, s->channel, s->medium);
}

/* The render's translation state, made on first use (NULL: out of memory). */
static tpl_tr_state *tr_state(tpl_render *r)
{
    tpl_prompt_state *s = rstate(r);
    if (!s->tr) s->tr = tpl_tr_new();
    return s->tr;
}

tpl_status tpl_render_add_catalog_json(tpl_render *r, const char *json, size_t len)
{
    if (!usable(r)) return TPL_ERR_USAGE;
    if (!json) return tpl_render_null_arg(r, "tpl_render_add_catalog_json", "json");
    tpl_render_clear_error(r);
    tpl_tr_state *t = tr_state(r);
    if (!t) return nomem(r);
    char msg[256];
    uint32_t line, col;
    tpl_status st = tpl_tr_add_catalog_json(t, json, len, msg, sizeof msg, &line, &col);
    if (st != TPL_OK) tpl_render_fail(r, tpl_status_kind(st), msg, line, col);
    return st;
}

tpl_status tpl_render_add_catalog(tpl_render *r, const tpl_catalog *c)
{
    if (!usable(r)) return TPL_ERR_USAGE;
    if (!c) return tpl_render_null_arg(r, "tpl_render_add_catalog", "c");
    tpl_render_clear_error(r);
    if (!tpl_tr_catalog_finished(c))
        return tpl_render_fail(r, TPL_EK_USAGE, "tpl_render_add_catalog: the catalog is not finished (tpl_catalog_finish)", 0, 0);
    tpl_tr_state *t = tr_state(r);
    if (!t || !tpl_tr_add_catalog(t, c)) return nomem(r);
    return TPL_OK;
}

void tpl_render_clear_catalogs(tpl_render *r)
{
    if (usable(r) && rstate(r)->tr) tpl_tr_clear_catalogs(rstate(r)->tr);
}

tpl_status tpl_render_set_lang(tpl_render *r, const char *lang)
{
    if (!usable(r)) return TPL_ERR_USAGE;
    tpl_render_clear_error(r);
    if (lang && tpl_render_check_utf8(r, "the language", lang, strlen(lang)) != TPL_OK) return TPL_ERR_VALUE;
    tpl_tr_state *t = tr_state(r);
    if (!t || !tpl_tr_set_lang(t, lang, lang ? strlen(lang) : 0)) return nomem(r);
    return TPL_OK;
}

tpl_status tpl_render_add_tr_key(tpl_render *r, const char *name, size_t len)
{
    if (!usable(r)) return TPL_ERR_USAGE;
    if (!name) return tpl_render_null_arg(r, "tpl_render_add_tr_key", "name");
    tpl_render_clear_error(r);
    if (tpl_render_check_utf8(r, "the tr key", name, len) != TPL_OK) return TPL_ERR_VALUE;
    tpl_tr_state *t = tr_state(r);
    if (!t || !tpl_tr_add_key(t, name, len)) return nomem(r);
    return TPL_OK;
}

void tpl_render_clear_tr_keys(tpl_render *r)
{
    if (usable(r) && rstate(r)->tr) tpl_tr_clear_keys(rstate(r)->tr);
}
