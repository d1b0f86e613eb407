/* The builtin table (from builtins.def), argument binding, and helpers shared by the stdlib.
 *
 * Everything here is immutable: the table is `static const`, and parameter specs are parsed on
 * demand (they are a few dozen bytes), so there is no lazily initialised global state. */
#include "builtins.h"
#include "../runtime/host.h"
#include "ruby/ruby.h"

#include <string.h>
#include <stdio.h>
#include <utf8proc.h>

/* ------------------------------------------------------------------ the table */

const tpl_builtin_info tpl_builtin_table[TPL_B__COUNT] = {
#define TPL_BUILTIN(kind, id, name, fn, params) [TPL_B_##kind##_##id] = { TPL_BK_##kind, sizeof name - 1, name, params, fn },
#include "builtins.def"
#undef TPL_BUILTIN
};

const tpl_builtin_info *tpl_builtin(int id)
{
    if (id < 0 || id >= TPL_B__COUNT)
        return NULL;
    return &tpl_builtin_table[id];
}

bool tpl_builtin_signature(int id, tpl_builtin_sig *sig)
{
    memset(sig, 0, sizeof *sig);
    sig->varargs = sig->varkw = -1;
    if (id < 0 || id >= TPL_B__COUNT)
        return false;
    const char *p = tpl_builtin_table[id].params;
    bool seen_optional = false;
    int required = -1;
    while (*p && sig->nparams < TPL_MAX_PARAMS) {
        int k = sig->nparams;
        if (p[0] == '/' && (p[1] == ',' || p[1] == 0)) { /* Python's positional-only marker */
            sig->nposonly = (uint8_t)k;
            p += p[1] ? 2 : 1;
            continue;
        }
        int stars = 0;
        while (*p == '*') { stars++; p++; }
        const char *start = p;
        while (*p && *p != ',' && *p != '?')
            p++;
        size_t len = (size_t)(p - start);
        bool opt = false;
        if (*p == '?') { opt = true; p++; }
        if (*p == ',')
            p++;
        sig->pnames[k] = start;
        sig->pnamelen[k] = (uint8_t)len;
        sig->optional[k] = opt;
        if (stars == 1) sig->varargs = (int8_t)k;
        else if (stars >= 2) sig->varkw = (int8_t)k;
        if ((opt || stars) && required < 0)
            required = k;
        if (opt) seen_optional = true;
        sig->nparams++;
    }
    (void)seen_optional;
    sig->nrequired = (uint8_t)(required < 0 ? sig->nparams : required);
    sig->npositional = (uint8_t)(sig->varargs >= 0 ? sig->varargs
                                 : (sig->varkw >= 0 ? sig->varkw : sig->nparams));
    return true;
}

/* Jinja2 registers these operator spellings as tests too. */
static const struct { const char *op; const char *name; } test_aliases[] = {
    {"==", "eq"}, {"!=", "ne"}, {"<", "lt"}, {"<=", "le"}, {">", "gt"}, {">=", "ge"},
};

/* Byte-table scans, eight entries per step: the bits of match_bytes(w, b) mark the bytes of w
 * equal to b (the lowest one exactly; a higher mark can be spurious after a borrow, so callers
 * check each candidate). Words are read little-endian, so bit 8i is entry i on every host. */
static uint64_t load_le64(const uint8_t *p)
{
    return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24 |
           (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 | (uint64_t)p[7] << 56;
}

static uint64_t match_bytes(uint64_t w, uint8_t b)
{
    uint64_t x = w ^ (0x0101010101010101u * b);
    return (x - 0x0101010101010101u) & ~x & 0x8080808080808080u;
}

#define ROUND8(n) (((n) + 7) / 8 * 8)

/* (name length, kind) of every builtin folded into one byte (a collision only costs a check),
 * padded with entries no builtin matches, so tpl_builtin_find looks at the few rows of the right
 * length and kind. */
#define TPL_FIND_KEY(len, kind) ((uint8_t)((len) * 16u + (kind)))
static const uint8_t find_keys[ROUND8(TPL_B__COUNT)] = {
#define TPL_BUILTIN(kind, id, name, fn, params) [TPL_B_##kind##_##id] = TPL_FIND_KEY(sizeof name - 1, TPL_BK_##kind),
#include "builtins.def"
#undef TPL_BUILTIN
};

int tpl_builtin_find(tpl_builtin_kind kind, const char *name, size_t n)
{
    if (kind == TPL_BK_TEST && n > 0 && n <= 2 && !((name[0] >= 'a' && name[0] <= 'z'))) {
        for (size_t i = 0; i < sizeof test_aliases / sizeof test_aliases[0]; i++)
            if (strlen(test_aliases[i].op) == n && memcmp(test_aliases[i].op, name, n) == 0)
                return tpl_builtin_find(kind, test_aliases[i].name, strlen(test_aliases[i].name));
        return -1;
    }
    if (n == 0 || n > 255)
        return -1;
    uint8_t key = TPL_FIND_KEY(n, (unsigned)kind);
    for (size_t base = 0; base < TPL_B__COUNT; base += 8) {
        for (uint64_t m = match_bytes(load_le64(find_keys + base), key); m; m &= m - 1) {
            size_t i = base + (size_t)(__builtin_ctzll(m) >> 3);
            if (i >= TPL_B__COUNT) break;
            const tpl_builtin_info *b = &tpl_builtin_table[i];
            if (b->namelen == n && b->kind == kind && b->name[0] == name[0] && memcmp(b->name, name, n) == 0)
                return (int)i;
        }
    }
    return -1;
}

/* The builtins a plain name can resolve to (GLOBAL, STR, MAP, LIST kinds), in table order, with
 * their name lengths and names side by side, and a byte key of each name's length, first and
 * last letters: name resolution scans these few dozen keys eight at a time (match_bytes) and compares a name only
 * with the entries of its key (issue 21: keyed by the length alone, a compile's name lookups
 * checked ~10 candidates each). */
#define TPL_NAMED_KEY(len, first, last) ((uint8_t)((unsigned)(len) * 61u + (unsigned char)(first) * 7u + (unsigned char)(last)))
#define TPL_NAMED_GLOBAL(x) x,
#define TPL_NAMED_STR(x) x,
#define TPL_NAMED_MAP(x) x,
#define TPL_NAMED_LIST(x) x,
#define TPL_NAMED_FILTER(x)
#define TPL_NAMED_TEST(x)
#define TPL_NAMED_RKERNEL(x)
#define TPL_NAMED_RANY(x)
#define TPL_NAMED_RSTR(x)
#define TPL_NAMED_RNUM(x)
#define TPL_NAMED_RARR(x)
#define TPL_NAMED_RHASH(x)
#define TPL_NAMED_RRANGE(x)
#define TPL_NAMED_RMATCH(x)
#define TPL_NAMED_PYNUM(x)
static const uint16_t named_ids[] = {
#define TPL_BUILTIN(kind, id, name, fn, params) TPL_NAMED_##kind(TPL_B_##kind##_##id)
#include "builtins.def"
#undef TPL_BUILTIN
};
#define NNAMED (sizeof named_ids / sizeof named_ids[0])
static const uint8_t named_keys[ROUND8(NNAMED)] = {   /* padded with 0 (checked by index) */
#define TPL_BUILTIN(kind, id, name, fn, params) TPL_NAMED_##kind(TPL_NAMED_KEY(sizeof name - 1, name[0], name[sizeof name - 2]))
#include "builtins.def"
#undef TPL_BUILTIN
};
/* The keys present, as a 256-bit set: most names a template uses are no builtin's, and one bit
 * test tells. */
#define TPL_NAMED_BIT(key, word) ((key) >> 6 == (word) ? (uint64_t)1 << ((key) & 63) : 0)
#define TPL_ISNAMED_GLOBAL 1
#define TPL_ISNAMED_STR 1
#define TPL_ISNAMED_MAP 1
#define TPL_ISNAMED_LIST 1
#define TPL_ISNAMED_FILTER 0
#define TPL_ISNAMED_TEST 0
#define TPL_ISNAMED_RKERNEL 0
#define TPL_ISNAMED_RANY 0
#define TPL_ISNAMED_RSTR 0
#define TPL_ISNAMED_RNUM 0
#define TPL_ISNAMED_RARR 0
#define TPL_ISNAMED_RHASH 0
#define TPL_ISNAMED_RRANGE 0
#define TPL_ISNAMED_RMATCH 0
#define TPL_ISNAMED_PYNUM 0
static const uint64_t named_set[4] = {
#define TPL_BUILTIN(kind, id, name, fn, params) (TPL_ISNAMED_##kind ? TPL_NAMED_BIT(TPL_NAMED_KEY(sizeof name - 1, name[0], name[sizeof name - 2]), 0) : 0) |
#include "builtins.def"
#undef TPL_BUILTIN
    0,
#define TPL_BUILTIN(kind, id, name, fn, params) (TPL_ISNAMED_##kind ? TPL_NAMED_BIT(TPL_NAMED_KEY(sizeof name - 1, name[0], name[sizeof name - 2]), 1) : 0) |
#include "builtins.def"
#undef TPL_BUILTIN
    0,
#define TPL_BUILTIN(kind, id, name, fn, params) (TPL_ISNAMED_##kind ? TPL_NAMED_BIT(TPL_NAMED_KEY(sizeof name - 1, name[0], name[sizeof name - 2]), 2) : 0) |
#include "builtins.def"
#undef TPL_BUILTIN
    0,
#define TPL_BUILTIN(kind, id, name, fn, params) (TPL_ISNAMED_##kind ? TPL_NAMED_BIT(TPL_NAMED_KEY(sizeof name - 1, name[0], name[sizeof name - 2]), 3) : 0) |
#include "builtins.def"
#undef TPL_BUILTIN
    0,
};
#undef TPL_NAMED_BIT
static const uint8_t named_lens[NNAMED] = {
#define TPL_BUILTIN(kind, id, name, fn, params) TPL_NAMED_##kind(sizeof name - 1)
#include "builtins.def"
#undef TPL_BUILTIN
};
static const char *const named_names[] = {
#define TPL_BUILTIN(kind, id, name, fn, params) TPL_NAMED_##kind(name)
#include "builtins.def"
#undef TPL_BUILTIN
};
#undef TPL_NAMED_GLOBAL
#undef TPL_NAMED_STR
#undef TPL_NAMED_MAP
#undef TPL_NAMED_LIST
#undef TPL_NAMED_FILTER
#undef TPL_NAMED_TEST
#undef TPL_NAMED_RKERNEL
#undef TPL_NAMED_RANY
#undef TPL_NAMED_RSTR
#undef TPL_NAMED_RNUM
#undef TPL_NAMED_RARR
#undef TPL_NAMED_RHASH
#undef TPL_NAMED_RRANGE
#undef TPL_NAMED_RMATCH
#undef TPL_NAMED_PYNUM
#undef TPL_ISNAMED_GLOBAL
#undef TPL_ISNAMED_STR
#undef TPL_ISNAMED_MAP
#undef TPL_ISNAMED_LIST
#undef TPL_ISNAMED_FILTER
#undef TPL_ISNAMED_TEST
#undef TPL_ISNAMED_RKERNEL
#undef TPL_ISNAMED_RANY
#undef TPL_ISNAMED_RSTR
#undef TPL_ISNAMED_RNUM
#undef TPL_ISNAMED_RARR
#undef TPL_ISNAMED_RHASH
#undef TPL_ISNAMED_RRANGE
#undef TPL_ISNAMED_RMATCH
#undef TPL_ISNAMED_PYNUM

void tpl_builtin_ids_for(const char *name, size_t n, int16_t *global, int16_t bk[3])
{
    *global = bk[0] = bk[1] = bk[2] = -1;
    if (n == 0 || n > 255)
        return;
    uint8_t key = TPL_NAMED_KEY(n, name[0], name[n - 1]);
    if (!(named_set[key >> 6] >> (key & 63) & 1))
        return;
    for (size_t base = 0; base < NNAMED; base += 8) {
        for (uint64_t m = match_bytes(load_le64(named_keys + base), key); m; m &= m - 1) {
            size_t k = base + (size_t)(__builtin_ctzll(m) >> 3);
            if (k >= NNAMED || named_lens[k] != n || named_names[k][0] != name[0] || memcmp(named_names[k], name, n) != 0)
                continue;
            int kind = tpl_builtin_table[named_ids[k]].kind;
            int16_t *slot = kind == TPL_BK_GLOBAL ? global : &bk[kind - TPL_BK_STR];
            if (*slot < 0)
                *slot = (int16_t)named_ids[k];
        }
    }
}

/* ------------------------------------------------------------------ binding */

static const char *ordinal_args(int n) { return n == 1 ? "argument" : "arguments"; }

/* How CPython 3.11 checks the argument count of a method of str, dict or list, which decides the
 * wording of its TypeError: 'N' METH_NOARGS ("str.upper() takes no arguments (1 given)"), 'O'
 * METH_O ("list.append() takes exactly one argument (2 given)"), 'C' Argument Clinic's
 * positional check ("get expected at least 1 argument, got 0"), 'P' getargs ("split() takes at
 * most 2 arguments (3 given)"); 0: Python's generic wording (a method without a row). */
static char py_arity_style(tpl_builtin_kind kind, const char *name)
{
    static const struct { tpl_builtin_kind kind; char style; const char *names; } rows[] = {
        { TPL_BK_STR, 'N', " upper lower title capitalize swapcase casefold isdigit isalpha isalnum isspace isupper islower"
                           " isnumeric isdecimal istitle isprintable isascii isidentifier " },
        { TPL_BK_STR, 'O', " join format_map partition rpartition removeprefix removesuffix translate zfill " },
        { TPL_BK_STR, 'C', " strip lstrip rstrip replace center ljust rjust maketrans " },
        { TPL_BK_STR, 'P', " split rsplit splitlines startswith endswith find rfind index rindex count expandtabs " },
        { TPL_BK_MAP, 'N', " items keys values copy popitem clear " },
        { TPL_BK_MAP, 'C', " get pop setdefault fromkeys " },
        { TPL_BK_LIST, 'N', " copy clear reverse " },
        { TPL_BK_LIST, 'O', " append extend remove count " },
        { TPL_BK_LIST, 'C', " index insert pop " },
        { TPL_BK_PYNUM, 'N', " is_integer hex bit_length bit_count conjugate as_integer_ratio " },
    };
    size_t n = strlen(name);
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        if (rows[i].kind != kind) continue;
        for (const char *p = strstr(rows[i].names, name); p; p = strstr(p + 1, name))
            if (p[-1] == ' ' && p[n] == ' ') return rows[i].style;
    }
    return 0;
}

/* The Python type that owns method `id` called on self (a number's: float or int, a bool's int). */
static const char *py_owner(int id, tpl_value self)
{
    switch (tpl_builtin_table[id].kind) {
    case TPL_BK_STR: return "str";
    case TPL_BK_MAP: return "dict";
    case TPL_BK_LIST: return "list";
    case TPL_BK_PYNUM: return self.type == TPL_T_FLOAT ? "float" : self.type == TPL_T_BOOL ? "bool" : "int";
    default: return NULL;
    }
}

/* The TypeError of a str/dict/list/int/float method given `given` arguments (self not counted)
 * where it takes min..max, in CPython's wording for the method (py_arity_style); 0 when it has none. */
static int py_arity_error(tpl_vm *vm, int id, tpl_value self, int given, int min, int max)
{
    const tpl_builtin_info *b = &tpl_builtin_table[id];
    const char *owner = py_owner(id, self);
    const char *bound = given < min ? "at least " : "at most ";
    int count = given < min ? min : max;
    switch (owner ? py_arity_style(b->kind, b->name) : 0) {
    case 'N': return tpl_vm_error(vm, TPL_ERR_TYPE, "%s.%s() takes no arguments (%d given)", owner, b->name, given);
    case 'O': return tpl_vm_error(vm, TPL_ERR_TYPE, "%s.%s() takes exactly one argument (%d given)", owner, b->name, given);
    case 'C':
        return tpl_vm_error(vm, TPL_ERR_TYPE, "%s expected %s%d argument%s, got %d", b->name, min == max ? "" : bound, count,
                            count == 1 ? "" : "s", given);
    case 'P':
        return tpl_vm_error(vm, TPL_ERR_TYPE, "%s() takes %s %d argument%s (%d given)", b->name,
                            min == max ? "exactly" : given < min ? "at least" : "at most", count, count == 1 ? "" : "s", given);
    default: return 0;
    }
}

int tpl_builtin_bind(tpl_vm *vm, int id, const tpl_value *pos, int npos, const tpl_value *kwnames,
                     const tpl_value *kwvals, int nkw, tpl_value *a)
{
    tpl_builtin_sig sig;
    if (!tpl_builtin_signature(id, &sig))
        return tpl_vm_error(vm, TPL_ERR_TYPE, "unknown builtin");
    /* Python's name for it: a variant's table name without its " (...)" tag ("tojson (hf)") */
    const char *fname = tpl_builtin_table[id].name, *tag = strstr(fname, " (");
    char fbuf[64];
    if (tag) {
        snprintf(fbuf, sizeof fbuf, "%.*s", (int)(tag - fname), fname);
        fname = fbuf;
    }
    tpl_arena *ar = tpl_vm_arena(vm);
    for (int i = 0; i < TPL_MAX_PARAMS; i++)
        a[i] = tpl_v_unset();

    int npositional = sig.npositional;
    int nbind = npos < npositional ? npos : npositional;
    for (int i = 0; i < nbind; i++)
        a[i] = pos[i];
    if (npos > npositional) {
        if (sig.varargs < 0) {
            tpl_builtin_kind k = tpl_builtin_table[id].kind;
            if (k >= TPL_BK_RKERNEL && k <= TPL_BK_RMATCH) {
                /* Ruby's ArgumentError counts the arguments after the receiver (a method's self). */
                int self = k != TPL_BK_RKERNEL;
                if (self && npos > 0 && tpl_rb_arity_no_method(vm, pos[0], tpl_builtin_table[id].name) < 0) return -1;
                int req = sig.nrequired < npositional ? sig.nrequired : npositional;
                if (req == npositional)
                    return tpl_vm_error(vm, TPL_ERR_TYPE, "wrong number of arguments (given %d, expected %d) (ArgumentError)",
                                        npos - self, npositional - self);
                return tpl_vm_error(vm, TPL_ERR_TYPE, "wrong number of arguments (given %d, expected %d..%d) (ArgumentError)",
                                    npos - self, req - self, npositional - self);
            }
            /* Python counts the parameters that take positions. */
            int req = sig.nrequired < npositional ? sig.nrequired : npositional;
            if (py_arity_error(vm, id, pos[0], npos - 1, req - 1, npositional - 1) < 0)
                return -1;
            if (req == npositional)
                return tpl_vm_error(vm, TPL_ERR_TYPE, "%s() takes %d positional %s but %d %s given",
                                    fname, npositional, ordinal_args(npositional), npos,
                                    npos == 1 ? "was" : "were");
            return tpl_vm_error(vm, TPL_ERR_TYPE,
                                "%s() takes from %d to %d positional arguments but %d %s given",
                                fname, req, npositional, npos, npos == 1 ? "was" : "were");
        }
    }
    if (sig.varargs >= 0) {
        int extra = npos > npositional ? npos - npositional : 0;
        tpl_list *l = tpl_list_new(ar, (uint32_t)extra);
        if (!l)
            return tpl_vm_nomem(vm);
        for (int i = 0; i < extra; i++)
            if (!tpl_list_push(ar, l, pos[npositional + i]))
                return tpl_vm_nomem(vm);
        a[sig.varargs] = tpl_v_list(l);
        a[sig.varargs].flags = TPL_F_TUPLE;
    }
    tpl_map *kw = NULL;
    if (sig.varkw >= 0) {
        kw = tpl_map_new(ar, (uint32_t)nkw);
        if (!kw)
            return tpl_vm_nomem(vm);
        a[sig.varkw] = tpl_v_map(kw);
    }
    /* Python's methods of str, dict and list take their arguments by position only (`/` in
     * the signature): "abc".center(width=5) is a TypeError, not a centred string. */
    const char *pyown = py_owner(id, npos > 0 ? pos[0] : tpl_v_unset());
    char owner[8] = "";
    if (pyown) snprintf(owner, sizeof owner, "%s.", pyown);
    if (nkw > 0 && sig.nposonly == sig.nparams)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "%s%s() takes no keyword arguments", owner, fname);
    for (int k = 0; k < nkw; k++) {
        tpl_value nm = kwnames[k];
        if (nm.type != TPL_T_STR)
            return tpl_vm_error(vm, TPL_ERR_TYPE, "%s() keywords must be strings", fname);
        for (int i = 0; i < sig.nposonly; i++)
            if (sig.pnamelen[i] == nm.len && memcmp(sig.pnames[i], nm.u.s, nm.len) == 0 && sig.varkw < 0)
                return tpl_vm_error(vm, TPL_ERR_TYPE, "%s%s() got some positional-only arguments passed as keyword arguments: '%.*s'",
                                    owner, fname, (int)nm.len, nm.u.s);
        int found = -1;
        for (int i = sig.nposonly; i < sig.nparams; i++) {
            if (i == sig.varargs || i == sig.varkw)
                continue;
            if (sig.pnamelen[i] == nm.len && memcmp(sig.pnames[i], nm.u.s, nm.len) == 0) {
                found = i;
                break;
            }
        }
        if (found >= 0) {
            if (a[found].type != TPL_T_UNSET)
                return tpl_vm_error(vm, TPL_ERR_TYPE, "%s() got multiple values for argument '%.*s'",
                                    fname, (int)nm.len, nm.u.s);
            a[found] = kwvals[k];
            continue;
        }
        if (!kw)
            return tpl_vm_error(vm, TPL_ERR_TYPE, "%s() got an unexpected keyword argument '%.*s'",
                                fname, (int)nm.len, nm.u.s);
        if (tpl_map_get(kw, nm))
            return tpl_vm_error(vm, TPL_ERR_TYPE, "%s() got multiple values for keyword argument '%.*s'",
                                fname, (int)nm.len, nm.u.s);
        if (!tpl_map_set(ar, kw, nm, kwvals[k]))
            return tpl_vm_nomem(vm);
    }
    /* Missing required parameters, reported all at once like Python. */
    int missing[TPL_MAX_PARAMS], nmissing = 0;
    for (int i = 0; i < sig.nparams; i++) {
        if (i == sig.varargs || i == sig.varkw || sig.optional[i])
            continue;
        if (a[i].type == TPL_T_UNSET)
            missing[nmissing++] = i;
    }
    if (nmissing && tpl_builtin_table[id].kind >= TPL_BK_RKERNEL && tpl_builtin_table[id].kind <= TPL_BK_RMATCH) {
        /* Ruby: too few arguments is the same ArgumentError as too many */
        int self = tpl_builtin_table[id].kind != TPL_BK_RKERNEL;
        if (self && npos > 0 && tpl_rb_arity_no_method(vm, pos[0], tpl_builtin_table[id].name) < 0) return -1;
        int req = sig.nrequired < npositional ? sig.nrequired : npositional;
        if (req == npositional || sig.varargs >= 0)
            return tpl_vm_error(vm, TPL_ERR_VALUE, "wrong number of arguments (given %d, expected %d%s) (ArgumentError)",
                                npos - self, req - self, sig.varargs >= 0 ? "+" : "");
        return tpl_vm_error(vm, TPL_ERR_VALUE, "wrong number of arguments (given %d, expected %d..%d) (ArgumentError)",
                            npos - self, req - self, npositional - self);
    }
    if (nmissing && missing[0] < npositional) {
        int req = sig.nrequired < npositional ? sig.nrequired : npositional;
        if (py_arity_error(vm, id, npos > 0 ? pos[0] : tpl_v_unset(), npos - 1, req - 1, npositional - 1) < 0)
            return -1;
    }
    if (nmissing) {
        char buf[256];
        size_t used = 0;
        for (int m = 0; m < nmissing; m++) {
            int i = missing[m];
            const char *sep = m == 0 ? "" : (m == nmissing - 1 ? (nmissing == 2 ? " and " : ", and ") : ", ");
            int w = snprintf(buf + used, sizeof buf - used, "%s'%.*s'", sep, (int)sig.pnamelen[i], sig.pnames[i]);
            if (w < 0 || (size_t)w >= sizeof buf - used)
                break;
            used += (size_t)w;
        }
        bool kwonly = missing[0] >= npositional;
        return tpl_vm_error(vm, TPL_ERR_TYPE, "%s() missing %d required %s%s: %s", fname, nmissing,
                            kwonly ? "keyword-only " : "positional ", ordinal_args(nmissing), buf);
    }
    return 0;
}

/* ------------------------------------------------------------------ undefined */

/* Jinja2's object_type_repr for the container an attribute or item was missing from (the VM
 * keeps it in the undefined value's flags: tpl_undef_container, a tpl_vtype + 1; 0 = unknown,
 * reported as a dict). */
static const char *container_repr(tpl_value v)
{
    int t = v.flags;
    if (t == TPL_UNDEF_OWNER_TEXT && v.u.s) return v.u.s + v.len + 1; /* (a host's class: tpl_val_undefined_missing) */
    if (t == 0 || t > TPL_VT__COUNT) return "dict object";
    return t - 1 == TPL_VT_NONE ? "None" : tpl_types[t - 1].objrepr;
}

int tpl_undefined_error(tpl_vm *vm, tpl_value v)
{
    tpl_sb b;
    tpl_sb_init(&b, tpl_vm_arena(vm));
    tpl_value name = tpl_v_str(v.u.s ? v.u.s : "", v.u.s ? v.len : 0);
    switch (v.aux) {
    case TPL_UNDEF_NAME:
        tpl_py_repr(&b, name);
        return tpl_vm_error(vm, TPL_ERR_UNDEFINED, "%.*s is undefined", (int)b.len, b.p ? b.p : "");
    case TPL_UNDEF_ATTR:
        tpl_py_repr(&b, name);
        return tpl_vm_error(vm, TPL_ERR_UNDEFINED, "'%s' has no attribute %.*s", container_repr(v),
                            (int)b.len, b.p ? b.p : "");
    case TPL_UNDEF_ITEM:
        /* the VM stores the key's repr as the name */
        return tpl_vm_error(vm, TPL_ERR_UNDEFINED, "%s has no element %.*s", container_repr(v),
                            (int)name.len, name.u.s);
    case TPL_UNDEF_COND: /* the VM keeps the inline if's line in len (0: unknown) */
        if (!v.u.s && v.len)
            return tpl_vm_error(vm, TPL_ERR_UNDEFINED, "the inline if-expression on line %u evaluated to false and "
                                "no else section was defined.", (unsigned)v.len);
        return tpl_vm_error(vm, TPL_ERR_UNDEFINED, "undefined value");
    default:
        if (name.len)
            return tpl_vm_error(vm, TPL_ERR_UNDEFINED, "%.*s", (int)name.len, name.u.s);
        return tpl_vm_error(vm, TPL_ERR_UNDEFINED, "undefined value");
    }
}

void tpl_undefined_debug_str(tpl_sb *b, tpl_value v)
{
    tpl_value name = tpl_v_str(v.u.s ? v.u.s : "", v.u.s ? v.len : 0);
    tpl_sb_puts(b, "{{ ");
    switch (v.aux) {
    case TPL_UNDEF_NAME:
        tpl_sb_put(b, name.u.s, name.len);
        break;
    case TPL_UNDEF_ATTR: case TPL_UNDEF_ITEM:
        tpl_sb_puts(b, "no such element: ");
        tpl_sb_puts(b, container_repr(v));
        tpl_sb_putc(b, '[');
        if (v.aux == TPL_UNDEF_ATTR) tpl_py_repr(b, name);
        else tpl_sb_put(b, name.u.s, name.len); /* the VM stores the key's repr as the name */
        tpl_sb_putc(b, ']');
        break;
    default: /* Jinja2: "undefined value printed: HINT", else (no hint, no name) None */
        if (name.len) {
            tpl_sb_puts(b, "undefined value printed: ");
            tpl_sb_put(b, name.u.s, name.len);
        } else {
            tpl_sb_puts(b, "None");
        }
        break;
    }
    tpl_sb_puts(b, " }}");
}

/* ------------------------------------------------------------------ helpers */

void tpl_html_escape(tpl_sb *b, const char *s, size_t n)
{
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        const char *rep;
        switch (s[i]) {
        case '&': rep = "&amp;"; break;
        case '<': rep = "&lt;"; break;
        case '>': rep = "&gt;"; break;
        case '"': rep = "&#34;"; break;
        case '\'': rep = "&#39;"; break;
        default: continue;
        }
        tpl_sb_put(b, s + run, i - run);
        tpl_sb_puts(b, rep);
        run = i + 1;
    }
    tpl_sb_put(b, s + run, n - run);
}


int tpl_to_str(tpl_vm *vm, tpl_value v, tpl_value *out)
{
    if (v.type == TPL_T_STR) {
        *out = v;
        return 0;
    }
    if (v.type == TPL_T_UNDEF) {
        if (tpl_vm_strict_undef(vm, v))
            return tpl_undefined_error(vm, v);
        if (v.aux == TPL_UNDEF_COND || !tpl_vm_debug_undefined(vm)) {
            *out = tpl_v_str("", 0);
            return 0;
        }
    }
    if (tpl_is_iter(v))
        return tpl_print_iter_error(vm, v);
    tpl_sb b;
    tpl_sb_init(&b, tpl_vm_arena(vm));
    if (v.type == TPL_T_UNDEF)
        tpl_undefined_debug_str(&b, v); /* DebugUndefined.__str__ */
    else
        tpl_py_str(&b, v);
    if (b.failed || b.address)
        return tpl_vm_sb_error(vm, &b, "while getting the repr of an object");
    *out = tpl_sb_value(&b);
    return 0;
}

int tpl_iter_list(tpl_vm *vm, tpl_value v, tpl_list **out)
{
    if (v.type == TPL_T_UNDEF) {
        if (tpl_vm_strict_undef(vm, v))
            return tpl_undefined_error(vm, v);
        *out = tpl_list_new(tpl_vm_arena(vm), 0);
        if (!*out)
            return tpl_vm_nomem(vm);
        return 0;
    }
    if (v.type == TPL_T_LIST) {
        *out = v.u.list;
        return 0;
    }
    return tpl_to_list(vm, v, out);
}

int tpl_arg_index(tpl_vm *vm, tpl_value v, int64_t *out)
{
    if (v.type == TPL_T_INT || v.type == TPL_T_BOOL) {
        *out = v.u.i;
        return 0;
    }
    if (v.type == TPL_T_BIGINT)
        return tpl_vm_fail(vm, TPL_EK_OVERFLOW, "Python int too large to convert to C ssize_t");
    return tpl_vm_error(vm, TPL_ERR_TYPE, "'%s' object cannot be interpreted as an integer",
                        tpl_type_name(vm, v));
}

int tpl_arg_index_sat(tpl_vm *vm, tpl_value v, int64_t *out)
{
    if (v.type == TPL_T_BIGINT) {
        *out = v.u.s[0] == '-' ? INT64_MIN : INT64_MAX;
        return 0;
    }
    return tpl_arg_index(vm, v, out);
}

/* Whether Python can order a and b at the top level (numbers, strings, lists with lists, tuples
 * with tuples); nested elements are checked by tpl_compare itself. */
static bool orderable(tpl_value a, tpl_value b)
{
    if ((tpl_is_num(a) || a.type == TPL_T_BIGINT) && (tpl_is_num(b) || b.type == TPL_T_BIGINT))
        return true;
    if (a.type == TPL_T_STR && b.type == TPL_T_STR)
        return true;
    if (a.type == TPL_T_HOST || b.type == TPL_T_HOST)
        return true; /* the host's own numbers (a Decimal) and objects (__lt__): tpl_compare asks the host */
    return a.type == TPL_T_LIST && b.type == TPL_T_LIST && (a.flags & TPL_F_TUPLE) == (b.flags & TPL_F_TUPLE);
}

int tpl_compare_op(tpl_vm *vm, tpl_value a, tpl_value b, const char *op, int *cmp)
{
    if (a.type == TPL_T_UNDEF)
        return tpl_undefined_error(vm, a);
    if (b.type == TPL_T_UNDEF)
        return tpl_undefined_error(vm, b);
    if (!orderable(a, b))
        return tpl_vm_error(vm, TPL_ERR_TYPE, "'%s' not supported between instances of '%s' and '%s'", op,
                            tpl_type_name(vm, a), tpl_type_name(vm, b));
    return tpl_compare(vm, a, b, true, cmp);
}

int tpl_arg_truthy(tpl_vm *vm, tpl_value v, bool dflt)
{
    if (v.type == TPL_T_UNSET)
        return dflt;
    return tpl_truthy_py(vm, v);
}

bool tpl_is_ascii(const char *s, size_t n)
{
    /* 8 bytes at a time, the last 8 (or 4) overlapping the ones before: no byte loop from 4 bytes */
    const uint64_t hi = 0x8080808080808080ull;
    uint64_t w;
    if (n >= 8) {
        for (size_t i = 0; i + 8 < n; i += 8) {
            memcpy(&w, s + i, 8);
            if (w & hi)
                return false;
        }
        memcpy(&w, s + n - 8, 8);
        return !(w & hi);
    }
    if (n >= 4) {
        uint32_t x, y;
        memcpy(&x, s, 4);
        memcpy(&y, s + n - 4, 4);
        return !((x | y) & 0x80808080u);
    }
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] & 0x80)
            return false;
    return true;
}

tpl_value tpl_str_lower(tpl_vm *vm, tpl_value s)
{
    if (s.type != TPL_T_STR)
        return s;
    if (tpl_is_ascii(s.u.s, s.len)) {
        size_t i = 0;
        while (i < s.len && !(s.u.s[i] >= 'A' && s.u.s[i] <= 'Z'))
            i++;
        if (i == s.len)
            return tpl_v_str(s.u.s, s.len);
        char *p = tpl_arena_alloc(tpl_vm_arena(vm), s.len + 1);
        if (!p)
            return tpl_v_str(s.u.s, s.len);
        for (i = 0; i < s.len; i++) {
            char c = s.u.s[i];
            p[i] = (c >= 'A' && c <= 'Z') ? (char)(c + 32) : c;
        }
        p[s.len] = 0;
        return tpl_v_str(p, s.len);
    }
    tpl_sb b;
    tpl_sb_init(&b, tpl_vm_arena(vm));
    tpl_py_lower(&b, s.u.s, s.len);
    return tpl_sb_value(&b);
}

/* ---- Unicode classification (Python's definitions, via utf8proc categories) */

bool tpl_uc_isalpha(uint32_t cp)
{
    if (cp < 128)
        return (cp | 32) >= 'a' && (cp | 32) <= 'z';
    switch (utf8proc_category((utf8proc_int32_t)cp)) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO:
        return true;
    default:
        return false;
    }
}

bool tpl_uc_isdecimal(uint32_t cp)
{
    if (cp < 128)
        return cp >= '0' && cp <= '9';
    return utf8proc_category((utf8proc_int32_t)cp) == UTF8PROC_CATEGORY_ND;
}

int tpl_uc_decimal_value(uint32_t cp)
{
    if (cp < 128)
        return cp >= '0' && cp <= '9' ? (int)(cp - '0') : -1;
    if (!tpl_uc_isdecimal(cp))
        return -1;
    /* Unicode assigns decimal digits in whole runs of ten from zero (some runs adjoin: the
     * mathematical digits U+1D7CE..U+1D7FF are five), so the value is the distance from the
     * start of the run of decimals, modulo 10 */
    uint32_t start = cp;
    while (start > 0 && cp - start < 64 && tpl_uc_isdecimal(start - 1)) start--;
    return (int)((cp - start) % 10);
}

/* Code points with Numeric_Type=Digit that are not decimal (superscripts, circled digits...). */
static bool is_digit_extra(uint32_t cp)
{
    static const uint32_t ranges[][2] = {
        {0x00B2, 0x00B3}, {0x00B9, 0x00B9}, {0x1369, 0x1371}, {0x19DA, 0x19DA},
        {0x2070, 0x2070}, {0x2074, 0x2079}, {0x2080, 0x2089}, {0x2460, 0x2468},
        {0x2474, 0x247C}, {0x2488, 0x2490}, {0x24EA, 0x24EA}, {0x24F5, 0x24FD},
        {0x24FF, 0x24FF}, {0x2776, 0x277E}, {0x2780, 0x2788}, {0x278A, 0x2792},
        {0x10A40, 0x10A43}, {0x10E60, 0x10E68}, {0x11052, 0x1105A}, {0x1F100, 0x1F10A},
    };
    for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++)
        if (cp >= ranges[i][0] && cp <= ranges[i][1])
            return true;
    return false;
}

bool tpl_uc_isdigit(uint32_t cp)
{
    if (cp < 128)
        return cp >= '0' && cp <= '9';
    return tpl_uc_isdecimal(cp) || is_digit_extra(cp);
}

bool tpl_uc_isnumeric(uint32_t cp)
{
    if (cp < 128)
        return cp >= '0' && cp <= '9';
    switch (utf8proc_category((utf8proc_int32_t)cp)) {
    case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_NO:
        return true;
    default:
        /* CJK ideographs with numeric values (一二三...). */
        switch (cp) {
        case 0x3007: case 0x4E00: case 0x4E8C: case 0x4E09: case 0x56DB: case 0x4E94:
        case 0x516D: case 0x4E03: case 0x516B: case 0x4E5D: case 0x5341: case 0x767E:
        case 0x5343: case 0x4E07: case 0x5104: case 0x96F6: case 0x5146:
            return true;
        }
        return false;
    }
}

bool tpl_uc_isword(uint32_t cp)
{
    if (cp < 128)
        return ((cp | 32) >= 'a' && (cp | 32) <= 'z') || (cp >= '0' && cp <= '9') || cp == '_';
    return tpl_uc_isalpha(cp) || tpl_uc_isnumeric(cp);
}

bool tpl_uc_isupper(uint32_t cp)
{
    if (cp < 128)
        return cp >= 'A' && cp <= 'Z';
    if (utf8proc_category((utf8proc_int32_t)cp) == UTF8PROC_CATEGORY_LU)
        return true;
    /* Other_Uppercase: circled and squared Latin capitals, Roman numerals. */
    return (cp >= 0x2160 && cp <= 0x216F) || (cp >= 0x24B6 && cp <= 0x24CF) ||
           (cp >= 0x1F130 && cp <= 0x1F149) || (cp >= 0x1F150 && cp <= 0x1F169) ||
           (cp >= 0x1F170 && cp <= 0x1F189);
}

bool tpl_uc_islower(uint32_t cp)
{
    if (cp < 128)
        return cp >= 'a' && cp <= 'z';
    if (utf8proc_category((utf8proc_int32_t)cp) == UTF8PROC_CATEGORY_LL)
        return true;
    /* Other_Lowercase: ordinal indicators, modifier letters, small Roman numerals, circled. */
    return cp == 0xAA || cp == 0xBA || (cp >= 0x2B0 && cp <= 0x2B8) || (cp >= 0x2C0 && cp <= 0x2C1) ||
           (cp >= 0x2E0 && cp <= 0x2E4) || cp == 0x345 || cp == 0x37A ||
           (cp >= 0x1D2C && cp <= 0x1D6A) || cp == 0x1D78 || (cp >= 0x1D9B && cp <= 0x1DBF) ||
           cp == 0x2071 || cp == 0x207F || (cp >= 0x2090 && cp <= 0x209C) ||
           (cp >= 0x2170 && cp <= 0x217F) || (cp >= 0x24D0 && cp <= 0x24E9) ||
           (cp >= 0x2C7C && cp <= 0x2C7D) || (cp >= 0xA69C && cp <= 0xA69D) || cp == 0xA770 ||
           (cp >= 0xA7F8 && cp <= 0xA7F9) || (cp >= 0xAB5C && cp <= 0xAB5F);
}

bool tpl_uc_istitle(uint32_t cp)
{
    if (cp < 128)
        return false;
    return utf8proc_category((utf8proc_int32_t)cp) == UTF8PROC_CATEGORY_LT;
}

/* ---- attribute paths */

static bool all_digits(const char *s, size_t n)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return true;
}

tpl_value tpl_path_key(const char *s, size_t n)
{
    if (all_digits(s, n) && n <= 18) {
        int64_t k = 0;
        for (size_t t = 0; t < n; t++)
            k = k * 10 + (s[t] - '0');
        return tpl_v_int(k);
    }
    return tpl_v_str(s, n);
}

static int getitem_step(tpl_vm *vm, tpl_value item, tpl_value key, tpl_value dflt, tpl_value *out)
{
    if (item.type == TPL_T_UNDEF)
        return tpl_undefined_error(vm, item); /* Undefined.__getitem__ always fails */
    if (tpl_getitem(vm, item, key, out) < 0)
        return -1;
    if (out->type == TPL_T_UNDEF && dflt.type != TPL_T_UNSET && dflt.type != TPL_T_NONE)
        *out = dflt;
    return 0;
}

int tpl_attr_get(tpl_vm *vm, tpl_value item, tpl_value attr, tpl_value dflt, tpl_value *out)
{
    if (attr.type == TPL_T_UNSET || attr.type == TPL_T_NONE) {
        *out = item;
        return 0;
    }
    if (attr.type != TPL_T_STR)
        return getitem_step(vm, item, attr, dflt, out);
    const char *s = attr.u.s;
    size_t n = attr.len, i = 0;
    for (;;) {
        size_t j = i;
        while (j < n && s[j] != '.')
            j++;
        tpl_value key = tpl_path_key(s + i, j - i);
        if (getitem_step(vm, item, key, dflt, &item) < 0)
            return -1;
        if (j >= n)
            break;
        i = j + 1;
    }
    *out = item;
    return 0;
}

int tpl_builtin_filter_variant(int id, bool autoescape, bool hf)
{
    switch (id) {
    case TPL_B_FILTER_join: return autoescape ? TPL_B_FILTER_join_ae : id;
    case TPL_B_FILTER_replace: return autoescape ? TPL_B_FILTER_replace_ae : id;
    case TPL_B_FILTER_xmlattr: return autoescape ? TPL_B_FILTER_xmlattr_ae : id;
    case TPL_B_FILTER_urlize: return autoescape ? TPL_B_FILTER_urlize_ae : id;
    case TPL_B_FILTER_tojson: return hf ? TPL_B_FILTER_tojson_hf : id;
    case TPL_B_FILTER_join_ae: case TPL_B_FILTER_replace_ae: case TPL_B_FILTER_xmlattr_ae:
    case TPL_B_FILTER_urlize_ae: case TPL_B_FILTER_tojson_hf: case TPL_B_FILTER_call_result: return -1;
    default: return id;
    }
}

/* ---- calling filters and tests by name */

static int call_builtin_kw(tpl_vm *vm, tpl_builtin_kind kind, tpl_value name, tpl_value *args,
                           int nargs, const tpl_map *kwargs, tpl_value *out)
{
    if (name.type != TPL_T_STR)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "%s name must be a string",
                            kind == TPL_BK_FILTER ? "filter" : "test");
    int id = tpl_builtin_find(kind, name.u.s, name.len);
    if (id >= 0 && kind == TPL_BK_FILTER)
        id = tpl_builtin_filter_variant(id, tpl_vm_autoescape(vm), tpl_vm_hf(vm));
    if (id < 0)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "No %s named '%.*s'.",
                            kind == TPL_BK_FILTER ? "filter" : "test", (int)name.len, name.u.s);
    tpl_value names[64], vals[64];
    int nkw = 0;
    for (uint32_t i = 0; kwargs && i < kwargs->len && nkw < 64; i++) {
        names[nkw] = kwargs->e[i].key;
        vals[nkw] = kwargs->e[i].val;
        nkw++;
    }
    tpl_value a[TPL_MAX_PARAMS];
    if (tpl_builtin_bind(vm, id, args, nargs, names, vals, nkw, a) < 0)
        return -1;
    return tpl_builtin_table[id].fn(vm, a, out);
}

int tpl_filter_by_name(tpl_vm *vm, tpl_value name, tpl_value *args, int nargs,
                       const tpl_map *kwargs, tpl_value *out)
{
    if (!kwargs || kwargs->len == 0)
        return tpl_call_filter_named(vm, name, args, nargs, out);
    return call_builtin_kw(vm, TPL_BK_FILTER, name, args, nargs, kwargs, out);
}

int tpl_test_by_name(tpl_vm *vm, tpl_value name, tpl_value *args, int nargs,
                     const tpl_map *kwargs, bool *out)
{
    tpl_value r;
    int rc;
    if (!kwargs || kwargs->len == 0)
        rc = tpl_call_test_named(vm, name, args, nargs, &r);
    else
        rc = call_builtin_kw(vm, TPL_BK_TEST, name, args, nargs, kwargs, &r);
    if (rc < 0)
        return -1;
    if (r.type == TPL_T_BOOL) {
        *out = r.u.i != 0;
        return 0;
    }
    int t = tpl_truthy_py(vm, r);
    if (t < 0)
        return -1;
    *out = t;
    return 0;
}
