/* Pages (include/tpl_page.h, DESIGN.md §8): loading page.json, the static-block guarantee, and
 * rendering a call block by block, re-rendering only the blocks whose read values changed.
 * A layer above the engine: only the public headers and jansson. */
#include <fcntl.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <jansson.h>
#include "tpl.h"
#include "tpl_page.h"
#include "page_json.h"

#define MAX_PAGE_JSON ((size_t)16 << 20)
#define MAX_TEMPLATE ((size_t)256 << 20)

enum { DEP_CHANMED = 1, DEP_CLAIMED = 2, DEP_FACTS = 4 };

typedef struct pblock {
    char *name;
    tpl_page_region region;
    char *file;            /* template name (relative to the folder), or NULL: a text block */
    char *text;            /* a text block's literal text */
    size_t len;
    tpl_program *prog;
    bool borrowed;         /* prog is the caller's (tpl_page_block_def.program) */
    char **reads;          /* paths, for tpl_page_block_reads */
    size_t nreads;
    char **keys;           /* state names whose values the block's output depends on */
    size_t *keylens;
    size_t nkeys;
    unsigned deps;         /* DEP_* */
} pblock;

struct tpl_page {
    pblock *b;
    size_t n;
    pj_entry *defs;        /* the defaults' top-level entries (keys and compact JSON values) */
    size_t ndefs;
    char *defs_text;       /* the buffer defs point into */
    json_t *defaults;      /* the same as a jansson object (the slow path's overlay) */
    bool defs_slow;        /* defs unusable as text (escaped keys) */
};

/* ------------------------------------------------------------------ errors */

static char *dupn(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (!d) return NULL;
    if (n) memcpy(d, s, n);
    d[n] = 0;
    return d;
}

static char *dups(const char *s) { return s ? dupn(s, strlen(s)) : NULL; }

/* Line and column (1-based, code points) of byte offset off in s, and a copy of its line. */
static void linecol(const char *s, size_t n, size_t off, uint32_t *line, uint32_t *col, char **srcline)
{
    uint32_t l = 1, c = 1;
    size_t bol = 0;
    if (off > n) off = n;
    for (size_t i = 0; i < off; i++) {
        if (s[i] == '\n') { l++; c = 1; bol = i + 1; }
        else if (((unsigned char)s[i] & 0xC0) != 0x80) c++;
    }
    size_t eol = bol;
    while (eol < n && s[eol] != '\n' && s[eol] != '\r') eol++;
    *line = l;
    *col = c;
    if (srcline) *srcline = dupn(s + bol, eol - bol);
}

static tpl_status fail(tpl_error *err, tpl_status st, const char *file, const char *src, size_t n, size_t off,
                       const char *fmt, ...) __attribute__((format(printf, 7, 8)));
static tpl_status fail(tpl_error *err, tpl_status st, const char *file, const char *src, size_t n, size_t off,
                       const char *fmt, ...)
{
    if (!err) return st;
    tpl_error_clear(err);
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    err->status = st;
    err->kind = tpl_status_kind(st);
    err->message = dups(buf);
    err->file = dups(file);
    if (src) linecol(src, n, off, &err->line, &err->column, (char **)&err->source_line);
    return st;
}

/* ------------------------------------------------------------------ loading */

/* The loader of a page folder: names resolve beside the template that includes them (its
 * folder inside the page folder), never outside the page folder. */
typedef struct dir_loader {
    const char *dir;       /* the page folder */
    const char *sub;       /* the block template's folder relative to it ("" or "views/") */
    size_t sublen;
} dir_loader;

/* Whether name was seen before (then true); records it in the set. A hash set (a jansson object):
 * the pairwise check was 5e9 strcmp calls for a page of 100,000 blocks. OOM counts as seen,
 * which fails the load rather than letting a duplicate through. */
static bool seen_before(json_t *seen, const char *name)
{
    if (!seen) return true;
    if (json_object_get(seen, name)) return true;
    return json_object_set_new_nocheck(seen, name, json_true()) != 0;
}

static bool safe_rel(const char *name, size_t n)
{
    if (n == 0 || name[0] == '/' || memchr(name, 0, n)) return false;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && name[j] != '/') j++;
        if (j - i == 2 && name[i] == '.' && name[i + 1] == '.') return false;
        i = j + 1;
    }
    return true;
}

/* Reads a regular file of at most cap bytes. A FIFO or a device (also through a symlink) is
 * refused unread, as tplc refuses them: a FIFO hung the load, /dev/zero read 256 MB first. */
static char *read_path(const char *path, size_t cap, size_t *len)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return NULL;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > cap) { close(fd); return NULL; }
    FILE *f = fdopen(fd, "rb");
    if (!f) { close(fd); return NULL; }
    size_t n = 0, sz = 4096;
    char *buf = malloc(sz);
    while (buf) {
        size_t got = fread(buf + n, 1, sz - n - 1, f);
        n += got;
        if (got == 0) break;
        if (n > cap) { free(buf); buf = NULL; break; }
        if (n + 1 >= sz) {
            char *nb = realloc(buf, sz * 2);
            if (!nb) { free(buf); buf = NULL; break; }
            buf = nb;
            sz *= 2;
        }
    }
    if (buf && ferror(f)) { free(buf); buf = NULL; }
    fclose(f);
    if (!buf) return NULL;
    buf[n] = 0;
    *len = n;
    return buf;
}

/* Reads DIR/SUB/NAME (SUB may be empty). NULL when unsafe or unreadable. */
static char *read_rel(const char *dir, const char *sub, size_t sublen, const char *name, size_t n, size_t *len)
{
    if (!safe_rel(name, n)) return NULL;
    size_t dl = strlen(dir);
    char *path = malloc(dl + 1 + sublen + n + 1);
    if (!path) return NULL;
    memcpy(path, dir, dl);
    path[dl] = '/';
    memcpy(path + dl + 1, sub, sublen);
    memcpy(path + dl + 1 + sublen, name, n);
    path[dl + 1 + sublen + n] = 0;
    char *s = read_path(path, MAX_TEMPLATE, len);
    free(path);
    return s;
}

/* Why read_rel(dir, "", 0, name) failed, as far as stat(2) tells: NULL when the file is missing
 * (or the reason is unknown), else "is not a regular file" (a FIFO, a device, a folder), "is too
 * large (over 256 MiB)" or "cannot be read: REASON". */
static const char *unreadable_why(const char *dir, const char *name)
{
    size_t dl = strlen(dir), n = strlen(name);
    char *path = malloc(dl + n + 2);
    if (!path) return NULL;
    memcpy(path, dir, dl);
    path[dl] = '/';
    memcpy(path + dl + 1, name, n + 1);
    struct stat st;
    int rc = stat(path, &st), e = errno;
    free(path);
    if (rc != 0) return e == ENOENT || e == ENOTDIR ? NULL : e == ELOOP ? "cannot be read: too many levels of symbolic links" : NULL;
    if (!S_ISREG(st.st_mode)) return "is not a regular file";
    if ((uint64_t)st.st_size > MAX_TEMPLATE) return "is too large (over 256 MiB)";
    return "cannot be read";
}

static char *dir_load(void *data, const char *name, size_t n, size_t *len)
{
    const dir_loader *l = data;
    return read_rel(l->dir, l->sub, l->sublen, name, n, len);
}

static bool syntax_of(const char *name, tpl_syntax *syn)
{
    const char *dot = strrchr(name, '.');
    const char *slash = strrchr(name, '/');
    if (!dot || (slash && dot < slash)) return false;
    if (!strcmp(dot, ".jinja") || !strcmp(dot, ".j2")) *syn = TPL_SYNTAX_JINJA;
    else if (!strcmp(dot, ".erb")) *syn = TPL_SYNTAX_ERB;
    else if (!strcmp(dot, ".fmt") || !strcmp(dot, ".txt")) *syn = TPL_SYNTAX_FMT;
    else return false;
    return true;
}

static void block_free(pblock *b)
{
    free(b->name);
    free(b->file);
    free(b->text);
    if (!b->borrowed) tpl_program_free(b->prog);
    for (size_t i = 0; i < b->nreads; i++) free(b->reads[i]);
    free(b->reads);
    for (size_t i = 0; i < b->nkeys; i++) free(b->keys[i]);
    free(b->keys);
    free(b->keylens);
}

void tpl_page_free(tpl_page *pg)
{
    if (!pg) return;
    for (size_t i = 0; i < pg->n; i++) block_free(&pg->b[i]);
    free(pg->b);
    free(pg->defs);
    free(pg->defs_text);
    json_decref(pg->defaults);
    free(pg);
}

static bool add_str(char ***v, size_t *n, const char *s, size_t len, size_t **lens)
{
    for (size_t i = 0; i < *n; i++)
        if (strlen((*v)[i]) == len && !memcmp((*v)[i], s, len)) return true;
    char **nv = realloc(*v, (*n + 1) * sizeof *nv);
    if (!nv) return false;
    *v = nv;
    if (lens) {
        size_t *nl = realloc(*lens, (*n + 1) * sizeof *nl);
        if (!nl) return false;
        *lens = nl;
        nl[*n] = len;
    }
    if (!(nv[*n] = dupn(s, len))) return false;
    (*n)++;
    return true;
}

static bool is_remembers(const char *s, size_t n)
{
    return (n == 9 && !memcmp(s, "remembers", 9)) || (n == 10 && !memcmp(s, "remembers?", 10));
}

/* What a static block may not read: the name to report (malloc'd), or NULL when allowed. */
static char *forbidden(const tpl_read *rd)
{
    switch (rd->kind) {
    case TPL_READ_CALL:
        if (rd->attr && ((rd->attr_len == 7 && !memcmp(rd->attr, "channel", 7)) ||
                         (rd->attr_len == 6 && !memcmp(rd->attr, "medium", 6))))
            return NULL;
        if (!rd->attr) return dups("call");
        {
            char *s = malloc(5 + rd->attr_len + 1);
            if (s) { memcpy(s, "call.", 5); memcpy(s + 5, rd->attr, rd->attr_len); s[5 + rd->attr_len] = 0; }
            return s;
        }
    case TPL_READ_FUNC:
        return is_remembers(rd->name, rd->len) ? dupn(rd->name, rd->len) : NULL;
    case TPL_READ_STATE:
    case TPL_READ_HOST:
    default:
        return dupn(rd->name, rd->len);
    }
}

/* Compiles block b from src and analyses its reads (static: the guarantee). */
static tpl_status compile_block(pblock *b, const char *src, size_t len, const char *profile, tpl_loader_fn loader,
                                void *loader_data, const dir_loader *dl, tpl_error *err)
{
    if (!b->prog) {
        tpl_syntax syn;
        if (!syntax_of(b->file, &syn))
            return fail(err, TPL_ERR_SYNTAX, b->file, NULL, 0, 0, "unknown template extension (use .jinja, .j2, .erb, .fmt or .txt)");
        tpl_options o = { 0 };
        const char *prof = profile;
        if (syn != TPL_SYNTAX_JINJA && strcmp(profile, "pinecall") != 0) prof = NULL; /* jinja2/hf: Jinja-only */
        if (prof && tpl_options_profile(&o, syn, prof) != TPL_OK)
            return fail(err, TPL_ERR_SYNTAX, b->file, NULL, 0, 0, "unknown profile '%s'", profile);
        o.syntax = syn;
        o.loader = loader;
        o.loader_data = loader_data;
        tpl_status st = tpl_compile(b->file, src, len, &o, &b->prog, err);
        if (st != TPL_OK) return st;
    }
    /* a template named by a value computed when it runs reads what no reads-set shows, and a
     * page renders without a render-time loader: such a block is refused when the page loads */
    if (tpl_program_needs_loader(b->prog))
        return fail(err, TPL_ERR_SYNTAX, b->file, NULL, 0, 0,
                    "block '%s' names a template by a value computed when it runs (include/import of a "
                    "name that is not a string constant); a page block's reads must be known", b->name);
    size_t n = tpl_program_reads_located(b->prog, NULL, 0);
    tpl_read *rd = malloc((n + 1) * sizeof *rd);
    if (!rd) return fail(err, TPL_ERR_NOMEM, b->file, NULL, 0, 0, "out of memory");
    tpl_program_reads_located(b->prog, rd, n);
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++) {
        char *what = b->region == TPL_PAGE_STATIC ? forbidden(&rd[i]) : NULL;
        if (what) {
            /* the source line of the file the read is in */
            size_t sl = 0;
            char *s = NULL;
            if (!src) s = NULL; /* a compiled program: no source at hand */
            else if (!strcmp(rd[i].file, b->file)) s = dupn(src, len), sl = len;
            else if (dl) s = dir_load((void *)dl, rd[i].file, strlen(rd[i].file), &sl);
            else if (loader) s = loader(loader_data, rd[i].file, strlen(rd[i].file), &sl);
            /* a loaded template's name resolves beside the block's template: name it from the page folder */
            char *file = dl && strcmp(rd[i].file, b->file) ? malloc(dl->sublen + strlen(rd[i].file) + 1) : dups(rd[i].file);
            if (file && dl && strcmp(rd[i].file, b->file)) {
                memcpy(file, dl->sub, dl->sublen);
                strcpy(file + dl->sublen, rd[i].file);
            }
            fail(err, TPL_ERR_SYNTAX, file ? file : rd[i].file, NULL, 0, 0,
                 "static block '%s' reads '%s'; a static block may read only call.channel and call.medium", b->name, what);
            if (err) {
                err->line = rd[i].line;
                err->column = rd[i].column;
                if (s) {
                    size_t l = 1, at = 0;
                    while (l < rd[i].line && at < sl) { if (s[at++] == '\n') l++; }
                    size_t e = at;
                    while (e < sl && s[e] != '\n' && s[e] != '\r') e++;
                    err->source_line = dupn(s + at, e - at);
                }
            }
            free(file);
            free(s);
            free(what);
            free(rd);
            return TPL_ERR_SYNTAX;
        }
        const tpl_read *r = &rd[i];
        switch (r->kind) {
        case TPL_READ_STATE:
            ok = add_str(&b->reads, &b->nreads, r->name, r->len, NULL) &&
                 add_str(&b->keys, &b->nkeys, r->name, r->len, &b->keylens);
            if (is_remembers(r->name, r->len)) b->deps |= DEP_FACTS;
            break;
        case TPL_READ_CALL: {
            char path[80];
            int k = r->attr ? snprintf(path, sizeof path, "call.%.*s", (int)r->attr_len, r->attr) : snprintf(path, sizeof path, "call");
            ok = add_str(&b->reads, &b->nreads, path, (size_t)k < sizeof path ? (size_t)k : sizeof path - 1, NULL);
            if (!r->attr) b->deps |= DEP_CHANMED | DEP_CLAIMED;
            else if (r->attr_len == 7 && !memcmp(r->attr, "claimed", 7)) b->deps |= DEP_CLAIMED;
            else if ((r->attr_len == 7 && !memcmp(r->attr, "channel", 7)) || (r->attr_len == 6 && !memcmp(r->attr, "medium", 6)))
                b->deps |= DEP_CHANMED;
            else b->deps |= DEP_CHANMED | DEP_CLAIMED; /* call.history and the like */
            break;
        }
        case TPL_READ_FUNC: /* a builtin the state may shadow: its name is a state key too */
            ok = add_str(&b->keys, &b->nkeys, r->name, r->len, &b->keylens);
            if (is_remembers(r->name, r->len)) {
                b->deps |= DEP_FACTS;
                ok = ok && add_str(&b->reads, &b->nreads, "remembers", 9, NULL);
            }
            break;
        case TPL_READ_HOST:
        default:
            b->deps |= DEP_CHANMED | DEP_CLAIMED | DEP_FACTS; /* a host function may answer anything */
            ok = add_str(&b->reads, &b->nreads, r->name, r->len, NULL);
            break;
        }
    }
    free(rd);
    if (!ok) return fail(err, TPL_ERR_NOMEM, b->file, NULL, 0, 0, "out of memory");
    return TPL_OK;
}

/* Sets the page's defaults from a JSON object. */
static tpl_status set_defaults(tpl_page *pg, json_t *def)
{
    pg->defaults = def ? json_incref(def) : json_object();
    if (!pg->defaults) return TPL_ERR_NOMEM;
    char *text = json_dumps(pg->defaults, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!text) return TPL_ERR_NOMEM;
    pg->defs_text = text;
    size_t cap = 0;
    int rc = pj_scan_object(text, strlen(text), &pg->defs, &pg->ndefs, &cap);
    if (rc < 0) return TPL_ERR_NOMEM;
    pg->defs_slow = rc == 0; /* a key that needs escaping: every render takes the slow path */
    return TPL_OK;
}

static void trim_dir(char *sub, size_t *sublen)
{
    char *slash = strrchr(sub, '/');
    *sublen = slash ? (size_t)(slash - sub) + 1 : 0;
}

tpl_status tpl_page_new(const tpl_page_block_def *blocks, size_t n, const char *profile, const char *defaults_json,
                        size_t defaults_len, tpl_loader_fn loader, void *loader_data, tpl_page **out, tpl_error *err)
{
    if (!out) return fail(err, TPL_ERR_USAGE, NULL, NULL, 0, 0, "tpl_page_new: out is NULL");
    *out = NULL;
    if (!blocks && n) return fail(err, TPL_ERR_USAGE, NULL, NULL, 0, 0, "tpl_page_new: blocks is NULL");
    if (!profile) profile = "pinecall";
    tpl_page *pg = calloc(1, sizeof *pg);
    if (!pg || !(pg->b = calloc(n + 1, sizeof *pg->b))) { free(pg); return fail(err, TPL_ERR_NOMEM, NULL, NULL, 0, 0, "out of memory"); }
    tpl_status st = TPL_OK;
    bool seen_dynamic = false;
    json_t *seen = json_object();
    if (!seen) st = fail(err, TPL_ERR_NOMEM, NULL, NULL, 0, 0, "out of memory");
    for (size_t i = 0; i < n && st == TPL_OK; i++) {
        const tpl_page_block_def *d = &blocks[i];
        if (!d->name || !*d->name) { st = fail(err, TPL_ERR_USAGE, NULL, NULL, 0, 0, "block %zu has no name", i + 1); break; }
        if (seen_before(seen, d->name)) st = fail(err, TPL_ERR_SYNTAX, NULL, NULL, 0, 0, "duplicate block name '%s'", d->name);
        if (d->region == TPL_PAGE_DYNAMIC) seen_dynamic = true;
        else if (seen_dynamic)
            st = fail(err, TPL_ERR_SYNTAX, NULL, NULL, 0, 0, "static block '%s' after a dynamic block (static blocks come first)", d->name);
        if (st != TPL_OK) break;
        pblock *b = &pg->b[pg->n++];
        b->name = dups(d->name);
        b->region = d->region;
        if (!b->name) { st = fail(err, TPL_ERR_NOMEM, NULL, NULL, 0, 0, "out of memory"); break; }
        if (!d->template_name && !d->program) {
            if (!(b->text = dupn(d->src ? d->src : "", d->src ? d->len : 0))) st = fail(err, TPL_ERR_NOMEM, NULL, NULL, 0, 0, "out of memory");
            b->len = d->src ? d->len : 0;
            continue;
        }
        if (d->program) {
            b->prog = (tpl_program *)d->program; /* borrowed: never freed nor changed by the page */
            b->borrowed = true;
        }
        const char *file = d->template_name; /* for a compiled program: optional, its name in messages */
        if (!(b->file = dups(file ? file : b->name))) { st = fail(err, TPL_ERR_NOMEM, NULL, NULL, 0, 0, "out of memory"); break; }
        st = compile_block(b, d->program ? NULL : d->src, d->program ? 0 : d->len, profile, loader, loader_data, NULL, err);
    }
    json_decref(seen);
    if (st == TPL_OK) {
        json_t *def = NULL;
        if (defaults_json) {
            json_error_t je;
            def = json_loadb(defaults_json, defaults_len, JSON_REJECT_DUPLICATES, &je);
            if (!def || !json_is_object(def)) {
                st = fail(err, TPL_ERR_STATE, "defaults", NULL, 0, 0, "defaults must be a JSON object%s%s", def ? "" : ": ",
                          def ? "" : je.text);
                json_decref(def);
                def = NULL;
            }
        }
        if (st == TPL_OK && set_defaults(pg, def) != TPL_OK) st = fail(err, TPL_ERR_NOMEM, NULL, NULL, 0, 0, "out of memory");
        json_decref(def);
    }
    if (st != TPL_OK) { tpl_page_free(pg); return st; }
    *out = pg;
    return TPL_OK;
}

/* ---- page.json ---- */

static tpl_status pj_fail(tpl_error *err, const char *src, size_t n, size_t off, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static tpl_status pj_fail(tpl_error *err, const char *src, size_t n, size_t off, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return fail(err, TPL_ERR_SYNTAX, "page.json", src, n, off, "%s", buf);
}

tpl_status tpl_page_load_dir(const char *dir, tpl_page **out, tpl_error *err)
{
    if (!out) return fail(err, TPL_ERR_USAGE, NULL, NULL, 0, 0, "tpl_page_load_dir: out is NULL");
    *out = NULL;
    if (!dir) return fail(err, TPL_ERR_USAGE, NULL, NULL, 0, 0, "tpl_page_load_dir: dir is NULL");
    /* "" would make every path absolute ("/page.json", "/v.jinja"): no folder, nothing read */
    if (!*dir) return fail(err, TPL_ERR_IO, "page.json", NULL, 0, 0, "cannot read page.json: the folder name is empty");
    size_t n = 0;
    char *path = malloc(strlen(dir) + 12);
    if (!path) return fail(err, TPL_ERR_NOMEM, NULL, NULL, 0, 0, "out of memory");
    sprintf(path, "%s/page.json", dir);
    char *src = read_path(path, MAX_PAGE_JSON, &n);
    free(path);
    if (!src) return fail(err, TPL_ERR_IO, "page.json", NULL, 0, 0, "cannot read page.json in '%s'", dir);
    tpl_status st = TPL_OK;
    json_error_t je;
    json_t *root = json_loadb(src, n, JSON_REJECT_DUPLICATES, &je);
    tpl_page_block_def *defs = NULL;
    char **texts = NULL;
    size_t *lens = NULL;
    pj_node *tree = NULL;
    size_t nb = 0;
    json_t *seen = NULL;
    if (!root) {
        st = pj_fail(err, src, n, (size_t)je.position > 0 ? (size_t)je.position - 1 : 0, "invalid JSON: %s", je.text);
        goto done;
    }
    tree = pj_tree(src, n);
    if (!tree) { st = fail(err, TPL_ERR_NOMEM, NULL, NULL, 0, 0, "out of memory"); goto done; }
    if (!json_is_object(root)) { st = pj_fail(err, src, n, tree->off, "page.json must be an object"); goto done; }
    const char *key;
    json_t *val;
    json_object_foreach(root, key, val) {
        size_t koff = pj_key_off(tree, key);
        if (strcmp(key, "profile") && strcmp(key, "blocks") && strcmp(key, "defaults")) {
            st = pj_fail(err, src, n, koff, "unknown key '%s' (page.json has profile, blocks and defaults)", key);
            goto done;
        }
    }
    const char *profile = "pinecall";
    json_t *jp = json_object_get(root, "profile");
    if (jp) {
        if (!json_is_string(jp) || (strcmp(json_string_value(jp), "pinecall") && strcmp(json_string_value(jp), "jinja2") &&
                                    strcmp(json_string_value(jp), "hf"))) {
            st = pj_fail(err, src, n, pj_val_off(tree, "profile"), "profile must be \"pinecall\", \"jinja2\" or \"hf\"");
            goto done;
        }
        profile = json_string_value(jp);
    }
    json_t *jd = json_object_get(root, "defaults");
    if (jd && !json_is_object(jd)) { st = pj_fail(err, src, n, pj_val_off(tree, "defaults"), "defaults must be an object"); goto done; }
    json_t *jb = json_object_get(root, "blocks");
    if (!jb || !json_is_array(jb)) {
        st = pj_fail(err, src, n, jb ? pj_val_off(tree, "blocks") : tree->off, "page.json needs \"blocks\": an array of blocks");
        goto done;
    }
    const pj_node *barr = pj_child(tree, "blocks");
    nb = json_array_size(jb);
    defs = calloc(nb + 1, sizeof *defs);
    texts = calloc(nb + 1, sizeof *texts);
    lens = calloc(nb + 1, sizeof *lens);
    if (!defs || !texts || !lens || !(seen = json_object())) { st = fail(err, TPL_ERR_NOMEM, NULL, NULL, 0, 0, "out of memory"); goto done; }
    bool seen_dynamic = false;
    for (size_t i = 0; i < nb; i++) {
        json_t *b = json_array_get(jb, i);
        const pj_node *bn = pj_index(barr, i);
        size_t boff = bn ? bn->off : 0;
        if (!json_is_object(b)) { st = pj_fail(err, src, n, boff, "block %zu must be an object", i + 1); goto done; }
        json_object_foreach(b, key, val) {
            if (strcmp(key, "name") && strcmp(key, "region") && strcmp(key, "template") && strcmp(key, "text")) {
                st = pj_fail(err, src, n, pj_key_off(bn, key), "unknown key '%s' in block %zu (a block has name, region and template or text)", key, i + 1);
                goto done;
            }
        }
        json_t *nm = json_object_get(b, "name"), *rg = json_object_get(b, "region");
        json_t *tp = json_object_get(b, "template"), *tx = json_object_get(b, "text");
        if (!nm || !json_is_string(nm) || !*json_string_value(nm)) {
            st = pj_fail(err, src, n, nm ? pj_val_off(bn, "name") : boff, "block %zu needs a \"name\" (a non-empty string)", i + 1);
            goto done;
        }
        const char *name = json_string_value(nm);
        if (seen_before(seen, name)) { st = pj_fail(err, src, n, pj_val_off(bn, "name"), "duplicate block name '%s'", name); goto done; }
        if (!rg || !json_is_string(rg) || (strcmp(json_string_value(rg), "static") && strcmp(json_string_value(rg), "dynamic"))) {
            st = pj_fail(err, src, n, rg ? pj_val_off(bn, "region") : boff, "block '%s' needs \"region\": \"static\" or \"dynamic\"", name);
            goto done;
        }
        bool dyn = !strcmp(json_string_value(rg), "dynamic");
        if (dyn) seen_dynamic = true;
        else if (seen_dynamic) {
            st = pj_fail(err, src, n, pj_val_off(bn, "region"), "static block '%s' after a dynamic block (every static block comes first)", name);
            goto done;
        }
        if ((tp && tx) || (!tp && !tx)) {
            st = pj_fail(err, src, n, tp && tx ? pj_key_off(bn, "text") : boff, "block '%s' needs exactly one of \"template\" and \"text\"", name);
            goto done;
        }
        if ((tp && !json_is_string(tp)) || (tx && !json_is_string(tx))) {
            st = pj_fail(err, src, n, pj_val_off(bn, tp ? "template" : "text"), "\"%s\" of block '%s' must be a string", tp ? "template" : "text", name);
            goto done;
        }
        defs[i].name = name;
        defs[i].region = dyn ? TPL_PAGE_DYNAMIC : TPL_PAGE_STATIC;
        if (tx) {
            defs[i].src = json_string_value(tx);
            defs[i].len = json_string_length(tx);
            continue;
        }
        const char *tn = json_string_value(tp);
        tpl_syntax syn;
        if (!syntax_of(tn, &syn)) {
            st = pj_fail(err, src, n, pj_val_off(bn, "template"), "template '%s' of block '%s': unknown extension (use .jinja, .j2, .erb, .fmt or .txt)", tn, name);
            goto done;
        }
        if (!safe_rel(tn, strlen(tn))) {
            st = pj_fail(err, src, n, pj_val_off(bn, "template"), "template '%s' of block '%s' is outside the page folder", tn, name);
            goto done;
        }
        texts[i] = read_rel(dir, "", 0, tn, strlen(tn), &lens[i]);
        if (!texts[i]) {
            const char *why = unreadable_why(dir, tn);
            if (why)
                st = pj_fail(err, src, n, pj_val_off(bn, "template"), "template '%s' of block '%s' %s", tn, name, why);
            else
                st = pj_fail(err, src, n, pj_val_off(bn, "template"), "template '%s' of block '%s' not found (or unreadable)", tn, name);
            goto done;
        }
        defs[i].template_name = tn;
        defs[i].src = texts[i];
        defs[i].len = lens[i];
    }
    /* compile each block with a loader resolving beside its template */
    tpl_page *pg = calloc(1, sizeof *pg);
    if (!pg || !(pg->b = calloc(nb + 1, sizeof *pg->b))) { free(pg); st = fail(err, TPL_ERR_NOMEM, NULL, NULL, 0, 0, "out of memory"); goto done; }
    for (size_t i = 0; i < nb && st == TPL_OK; i++) {
        pblock *b = &pg->b[pg->n++];
        b->name = dups(defs[i].name);
        b->region = defs[i].region;
        if (!b->name) { st = fail(err, TPL_ERR_NOMEM, NULL, NULL, 0, 0, "out of memory"); break; }
        if (!defs[i].template_name) {
            if (!(b->text = dupn(defs[i].src, defs[i].len))) st = fail(err, TPL_ERR_NOMEM, NULL, NULL, 0, 0, "out of memory");
            b->len = defs[i].len;
            continue;
        }
        if (!(b->file = dups(defs[i].template_name))) { st = fail(err, TPL_ERR_NOMEM, NULL, NULL, 0, 0, "out of memory"); break; }
        dir_loader dl = { dir, b->file, 0 };
        trim_dir(b->file, &dl.sublen);
        st = compile_block(b, defs[i].src, defs[i].len, profile, dir_load, &dl, &dl, err);
    }
    if (st == TPL_OK && set_defaults(pg, jd) != TPL_OK) st = fail(err, TPL_ERR_NOMEM, NULL, NULL, 0, 0, "out of memory");
    if (st != TPL_OK) tpl_page_free(pg);
    else *out = pg;
done:
    for (size_t i = 0; texts && i < nb; i++) free(texts[i]);
    free(texts);
    free(lens);
    free(defs);
    pj_tree_free(tree);
    json_decref(seen);
    json_decref(root);
    free(src);
    return st;
}

size_t tpl_page_block_count(const tpl_page *pg) { return pg ? pg->n : 0; }
const char *tpl_page_block_name(const tpl_page *pg, size_t i) { return pg && i < pg->n ? pg->b[i].name : NULL; }
tpl_page_region tpl_page_block_region(const tpl_page *pg, size_t i) { return pg && i < pg->n ? pg->b[i].region : TPL_PAGE_STATIC; }

size_t tpl_page_block_reads(const tpl_page *pg, size_t i, const char **paths, size_t cap)
{
    if (!pg || i >= pg->n) return 0;
    if (!paths) cap = 0;
    for (size_t k = 0; k < pg->b[i].nreads && k < cap; k++) paths[k] = pg->b[i].reads[k];
    return pg->b[i].nreads;
}

/* ------------------------------------------------------------------ a call */

typedef struct bstate {
    char *text;            /* the block's text after the last render */
    size_t len, cap;
    bool changed, rendered;
    bool valid;            /* text and vals describe the last render (false: render next step) */
    unsigned gen_chanmed, gen_claimed, gen_facts; /* the generations it was rendered at */
    char **vals;           /* per tracked key: the JSON text of its value then (NULL: absent) */
    size_t *vlens;
} bstate;

struct tpl_page_call {
    const tpl_page *pg;
    tpl_render *r;
    bstate *bs;
    bool started;
    bool resumed;
    char channel[32], medium[32], claimed[64];
    bool has_claimed;
    unsigned gen_chanmed, gen_claimed, gen_facts;
    char **facts;
    size_t *flens, nfacts;
    pj_entry *ents;        /* the state's top-level entries (scratch) */
    size_t nents, entcap;
    pj_entry *merged;      /* defaults + state + resumed (scratch) */
    size_t nmerged, mcap;
    char *buf;             /* the merged state's JSON text (scratch) */
    size_t blen, bcap;
    tpl_error err;         /* errors of the call object itself */
    const tpl_error *last; /* the error tpl_page_call_error returns */
};

tpl_page_call *tpl_page_call_new(const tpl_page *pg, tpl_render *r)
{
    if (!pg || !r) return NULL;
    tpl_page_call *c = calloc(1, sizeof *c);
    if (!c || !(c->bs = calloc(pg->n + 1, sizeof *c->bs))) { free(c); return NULL; }
    c->pg = pg;
    c->r = r;
    for (size_t i = 0; i < pg->n; i++) {
        c->bs[i].vals = calloc(pg->b[i].nkeys + 1, sizeof *c->bs[i].vals);
        c->bs[i].vlens = calloc(pg->b[i].nkeys + 1, sizeof *c->bs[i].vlens);
        if (!c->bs[i].vals || !c->bs[i].vlens) { tpl_page_call_free(c); return NULL; }
    }
    strcpy(c->channel, "phone");
    strcpy(c->medium, "voice");
    if (tpl_render_set_call(r, "phone", NULL) != TPL_OK || tpl_render_set_call_claimed(r, NULL) != TPL_OK) {
        tpl_page_call_free(c);
        return NULL;
    }
    tpl_render_clear_facts(r);
    return c;
}

static void forget_vals(const tpl_page *pg, bstate *s, size_t i)
{
    for (size_t k = 0; k < pg->b[i].nkeys; k++) { free(s->vals[k]); s->vals[k] = NULL; }
}

void tpl_page_call_free(tpl_page_call *c)
{
    if (!c) return;
    for (size_t i = 0; i < c->pg->n; i++) {
        if (c->bs[i].vals) forget_vals(c->pg, &c->bs[i], i);
        free(c->bs[i].vals);
        free(c->bs[i].vlens);
        free(c->bs[i].text);
    }
    free(c->bs);
    for (size_t i = 0; i < c->nfacts; i++) free(c->facts[i]);
    free(c->facts);
    free(c->flens);
    free(c->ents);
    free(c->merged);
    free(c->buf);
    tpl_error_clear(&c->err);
    free(c);
}

void tpl_page_call_reset(tpl_page_call *c)
{
    if (!c) return;
    c->started = false;
    for (size_t i = 0; i < c->pg->n; i++) c->bs[i].valid = false;
}

static tpl_status own_fail(tpl_page_call *c, tpl_status st, const char *msg)
{
    tpl_error_clear(&c->err);
    c->err.status = st;
    c->err.kind = tpl_status_kind(st);
    c->err.message = dups(msg);
    c->last = &c->err;
    return st;
}

tpl_status tpl_page_call_set_channel(tpl_page_call *c, const char *channel, const char *medium)
{
    if (!c) return TPL_ERR_USAGE;
    if (!channel) channel = "phone";
    if (!medium) medium = strcmp(channel, "whatsapp") == 0 ? "text" : "voice";
    if (strlen(channel) >= sizeof c->channel || strlen(medium) >= sizeof c->medium)
        return own_fail(c, TPL_ERR_USAGE, "channel or medium too long");
    if (!strcmp(channel, c->channel) && !strcmp(medium, c->medium)) return TPL_OK;
    tpl_status st = tpl_render_set_call(c->r, channel, medium);
    if (st != TPL_OK) { c->last = tpl_render_error(c->r); return st; }
    strcpy(c->channel, channel);
    strcpy(c->medium, medium);
    c->gen_chanmed++;
    return TPL_OK;
}

tpl_status tpl_page_call_set_claimed(tpl_page_call *c, const char *claimed)
{
    if (!c) return TPL_ERR_USAGE;
    if (claimed && strlen(claimed) >= sizeof c->claimed) return own_fail(c, TPL_ERR_USAGE, "claimed code too long");
    if ((!claimed && !c->has_claimed) || (claimed && c->has_claimed && !strcmp(claimed, c->claimed))) return TPL_OK;
    tpl_status st = tpl_render_set_call_claimed(c->r, claimed);
    if (st != TPL_OK) { c->last = tpl_render_error(c->r); return st; }
    c->has_claimed = claimed != NULL;
    if (claimed) strcpy(c->claimed, claimed);
    c->gen_claimed++;
    return TPL_OK;
}

void tpl_page_call_set_resumed(tpl_page_call *c, bool resumed) { if (c) c->resumed = resumed; }

void tpl_page_call_facts_changed(tpl_page_call *c) { if (c) c->gen_facts++; }

tpl_status tpl_page_call_set_facts(tpl_page_call *c, const char *const *facts, const size_t *lens, size_t n)
{
    if (!c) return TPL_ERR_USAGE;
    if (n && (!facts || !lens)) return own_fail(c, TPL_ERR_USAGE, "tpl_page_call_set_facts: facts or lens is NULL");
    bool same = n == c->nfacts;
    for (size_t i = 0; same && i < n; i++) same = lens[i] == c->flens[i] && !memcmp(facts[i], c->facts[i], lens[i]);
    if (same) return TPL_OK;
    for (size_t i = 0; i < c->nfacts; i++) free(c->facts[i]);
    free(c->facts);
    free(c->flens);
    c->nfacts = 0;
    c->facts = calloc(n + 1, sizeof *c->facts);
    c->flens = calloc(n + 1, sizeof *c->flens);
    c->gen_facts++;
    tpl_render_clear_facts(c->r);
    if (!c->facts || !c->flens) return own_fail(c, TPL_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        if (!(c->facts[i] = dupn(facts[i], lens[i]))) return own_fail(c, TPL_ERR_NOMEM, "out of memory");
        c->flens[i] = lens[i];
        c->nfacts++;
        tpl_status st = tpl_render_add_fact(c->r, facts[i], lens[i]);
        if (st != TPL_OK) {
            /* refused (not UTF-8): the call has no facts, so that the next set, even of the same
             * list, is a change and is checked again (it was taken as the same and kept the
             * facts before the refused one) */
            c->last = tpl_render_error(c->r);
            for (size_t k = 0; k < c->nfacts; k++) free(c->facts[k]);
            c->nfacts = 0;
            tpl_render_clear_facts(c->r);
            return st;
        }
    }
    return TPL_OK;
}

const tpl_error *tpl_page_call_error(const tpl_page_call *c) { return !c ? NULL : c->last ? c->last : &c->err; }

static bool put(tpl_page_call *c, const char *s, size_t n)
{
    if (c->blen + n + 1 > c->bcap) {
        size_t nc = c->bcap ? c->bcap * 2 : 1024;
        while (nc < c->blen + n + 1) nc *= 2;
        char *nb = realloc(c->buf, nc);
        if (!nb) return false;
        c->buf = nb;
        c->bcap = nc;
    }
    memcpy(c->buf + c->blen, s, n);
    c->blen += n;
    c->buf[c->blen] = 0;
    return true;
}

static bool key_is(const pj_entry *e, const char *k)
{
    size_t n = strlen(k);
    return e->klen == n && !memcmp(e->key, k, n);
}

/* The merged scope from the state's entries: defaults not overridden, the state without the
 * framework names, then `resumed`. False when out of memory. */
static bool merge(tpl_page_call *c)
{
    const tpl_page *pg = c->pg;
    size_t need = pg->ndefs + c->nents + 1;
    if (need > c->mcap) {
        pj_entry *m = realloc(c->merged, need * sizeof *m);
        if (!m) return false;
        c->merged = m;
        c->mcap = need;
    }
    size_t k = 0;
    for (size_t i = 0; i < pg->ndefs; i++) {
        bool over = key_is(&pg->defs[i], "resumed") || key_is(&pg->defs[i], "call");
        for (size_t j = 0; j < c->nents && !over; j++)
            over = c->ents[j].klen == pg->defs[i].klen && !memcmp(c->ents[j].key, pg->defs[i].key, pg->defs[i].klen);
        if (!over) c->merged[k++] = pg->defs[i];
    }
    for (size_t j = 0; j < c->nents; j++)
        if (!key_is(&c->ents[j], "resumed") && !key_is(&c->ents[j], "call")) c->merged[k++] = c->ents[j];
    c->merged[k++] = (pj_entry){ "resumed", 7, c->resumed ? "true" : "false", c->resumed ? 4 : 5 };
    c->nmerged = k;
    return true;
}

static const pj_entry *find_merged(const tpl_page_call *c, const char *key, size_t n)
{
    for (size_t i = 0; i < c->nmerged; i++)
        if (c->merged[i].klen == n && !memcmp(c->merged[i].key, key, n)) return &c->merged[i];
    return NULL;
}

/* The merged state as JSON text in c->buf, from the entries (fast path). */
static bool merged_text(tpl_page_call *c)
{
    c->blen = 0;
    if (!put(c, "{", 1)) return false;
    for (size_t i = 0; i < c->nmerged; i++) {
        const pj_entry *e = &c->merged[i];
        if ((i && !put(c, ",", 1)) || !put(c, "\"", 1) || !put(c, e->key, e->klen) || !put(c, "\":", 2) ||
            !put(c, e->val, e->vlen))
            return false;
    }
    return put(c, "}", 1);
}

/* The merged state through jansson (slow path: a state the scanner does not take). 0, -1 out
 * of memory, or -2 when jansson refuses what tpl accepted (an integer past 64 bits; *je says
 * where). */
static int merged_slow(tpl_page_call *c, const char *json, size_t len, json_error_t *je)
{
    json_t *st = json_loadb(json, len, 0, je);
    if (!st) return -2;
    json_t *m = json_deep_copy(c->pg->defaults);
    if (!json_is_object(st) || !m) { json_decref(st); json_decref(m); return -1; }
    json_object_del(st, "call");
    json_object_del(st, "resumed");
    json_object_del(m, "call");
    json_object_update(m, st);
    json_object_set_new(m, "resumed", json_boolean(c->resumed));
    char *text = json_dumps(m, JSON_COMPACT);
    json_decref(st);
    json_decref(m);
    if (!text) return -1;
    c->blen = 0;
    bool ok = put(c, text, strlen(text));
    free(text);
    return ok ? 0 : -1;
}

static bool keep_text(bstate *s, const char *text, size_t n, bool first)
{
    bool changed = first ? n > 0 : (n != s->len || memcmp(text, s->text, n) != 0);
    if (n + 1 > s->cap) {
        size_t nc = s->cap ? s->cap : 256;
        while (nc < n + 1) nc *= 2;
        char *nt = realloc(s->text, nc);
        if (!nt) return false;
        s->text = nt;
        s->cap = nc;
    }
    memcpy(s->text, text, n);
    s->text[n] = 0;
    s->len = n;
    s->changed = changed;
    s->rendered = true;
    return true;
}

/* Whether block i must be rendered this step. */
static bool needs(const tpl_page_call *c, size_t i, bool fast, bool first)
{
    const pblock *b = &c->pg->b[i];
    const bstate *s = &c->bs[i];
    if (first || !s->valid) return true;
    if (b->region == TPL_PAGE_STATIC) return s->gen_chanmed != c->gen_chanmed;
    if (!fast) return true;
    if ((b->deps & DEP_CHANMED) && s->gen_chanmed != c->gen_chanmed) return true;
    if ((b->deps & DEP_CLAIMED) && s->gen_claimed != c->gen_claimed) return true;
    if ((b->deps & DEP_FACTS) && s->gen_facts != c->gen_facts) return true;
    for (size_t k = 0; k < b->nkeys; k++) {
        const pj_entry *e = find_merged(c, b->keys[k], b->keylens[k]);
        if (!e != !s->vals[k]) return true;
        if (e && (e->vlen != s->vlens[k] || memcmp(e->val, s->vals[k], e->vlen) != 0)) return true;
    }
    return false;
}

static bool note_vals(tpl_page_call *c, size_t i)
{
    const pblock *b = &c->pg->b[i];
    bstate *s = &c->bs[i];
    forget_vals(c->pg, s, i);
    for (size_t k = 0; k < b->nkeys; k++) {
        const pj_entry *e = find_merged(c, b->keys[k], b->keylens[k]);
        if (!e) continue;
        if (!(s->vals[k] = dupn(e->val, e->vlen))) return false;
        s->vlens[k] = e->vlen;
    }
    return true;
}

static tpl_status render_block(tpl_page_call *c, size_t i, bool first)
{
    const char *out;
    size_t n;
    tpl_status st = tpl_render_run(c->r, c->pg->b[i].prog, &out, &n);
    if (st != TPL_OK) { c->last = tpl_render_error(c->r); return st; }
    if (!keep_text(&c->bs[i], out, n, first)) return own_fail(c, TPL_ERR_NOMEM, "out of memory");
    bstate *s = &c->bs[i];
    s->gen_chanmed = c->gen_chanmed;
    s->gen_claimed = c->gen_claimed;
    s->gen_facts = c->gen_facts;
    return TPL_OK;
}

tpl_status tpl_page_call_render(tpl_page_call *c, const char *state_json, size_t len)
{
    if (!c) return TPL_ERR_USAGE;
    if (!state_json && len) return own_fail(c, TPL_ERR_USAGE, "tpl_page_call_render: state_json is NULL");
    const tpl_page *pg = c->pg;
    c->last = NULL;
    bool first = !c->started;
    int rc = pj_scan_object(state_json, len, &c->ents, &c->nents, &c->entcap);
    if (rc < 0) return own_fail(c, TPL_ERR_NOMEM, "out of memory");
    bool fast = rc == 1 && !pg->defs_slow;
    if (fast && !merge(c)) return own_fail(c, TPL_ERR_NOMEM, "out of memory");
    tpl_status st = TPL_OK;
    /* static blocks: they read nothing of the state, so they render against an empty one */
    bool any = false;
    for (size_t i = 0; i < pg->n; i++) {
        const pblock *b = &pg->b[i];
        bstate *s = &c->bs[i];
        if (!b->prog) { /* a text block */
            if (first || !s->valid) {
                if (!keep_text(s, b->text, b->len, first)) return own_fail(c, TPL_ERR_NOMEM, "out of memory");
                s->valid = true;
            } else s->changed = false;
            s->rendered = false;
            continue;
        }
        if (b->region != TPL_PAGE_STATIC) continue;
        if (!needs(c, i, fast, first)) { s->changed = s->rendered = false; continue; }
        if (!any && (st = tpl_render_set_state_json(c->r, "{}", 2)) != TPL_OK) goto failed;
        any = true;
        s->valid = false;
        if ((st = render_block(c, i, first)) != TPL_OK) goto failed;
        s->valid = true;
    }
    /* dynamic blocks */
    any = false;
    for (size_t i = 0; i < pg->n; i++) {
        const pblock *b = &pg->b[i];
        bstate *s = &c->bs[i];
        if (!b->prog || b->region != TPL_PAGE_DYNAMIC) continue;
        if (!needs(c, i, fast, first)) { s->changed = s->rendered = false; continue; }
        if (!any) {
            if (fast) {
                if (!merged_text(c)) { st = own_fail(c, TPL_ERR_NOMEM, "out of memory"); goto failed; }
            } else {
                /* tpl's own parser judges the state first (its error names the caller's JSON) */
                if ((st = tpl_render_set_state_json(c->r, state_json, len)) != TPL_OK) { c->last = tpl_render_error(c->r); goto failed; }
                json_error_t je;
                int ms = merged_slow(c, state_json, len, &je);
                if (ms == -2) {
                    /* (was reported as "out of memory") */
                    char m[256];
                    snprintf(m, sizeof m, "a page's state cannot hold this value (line %d, column %d: %s)", je.line,
                             je.column, je.text);
                    st = own_fail(c, TPL_ERR_STATE, m);
                    goto failed;
                }
                if (ms < 0) { st = own_fail(c, TPL_ERR_NOMEM, "out of memory"); goto failed; }
            }
            if ((st = tpl_render_set_state_json(c->r, c->buf, c->blen)) != TPL_OK) { c->last = tpl_render_error(c->r); goto failed; }
            any = true;
        }
        s->valid = false;
        if ((st = render_block(c, i, first)) != TPL_OK) goto failed;
        if (fast) {
            if (!note_vals(c, i)) { st = own_fail(c, TPL_ERR_NOMEM, "out of memory"); goto failed; }
            s->valid = true;
        }
        /* slow path: the values are not known as text; the block renders again next step */
        else s->valid = false, s->rendered = true;
    }
    c->started = true;
    return TPL_OK;
failed:
    if (!c->last) c->last = tpl_render_error(c->r);
    for (size_t i = 0; i < pg->n; i++) c->bs[i].valid = false;
    c->started = false;
    return st;
}

tpl_status tpl_page_call_block(const tpl_page_call *c, size_t i, tpl_page_block_result *out)
{
    if (!c || !out || i >= c->pg->n || !c->started) return TPL_ERR_USAGE;
    const bstate *s = &c->bs[i];
    out->name = c->pg->b[i].name;
    out->region = c->pg->b[i].region;
    out->text = s->text ? s->text : "";
    out->len = s->len;
    out->changed = s->changed;
    out->rendered = s->rendered;
    return TPL_OK;
}

static bool section(char **buf, size_t *n, size_t *cap, const char *head, const char *text, size_t len, bool first)
{
    while (len && (text[len - 1] == ' ' || text[len - 1] == '\t' || text[len - 1] == '\n' || text[len - 1] == '\r' ||
                   text[len - 1] == '\f' || text[len - 1] == '\v'))
        len--;
    size_t hl = strlen(head);
    size_t need = *n + 2 + hl + 1 + len + 2;
    if (need > *cap) {
        size_t nc = *cap ? *cap * 2 : 1024;
        while (nc < need) nc *= 2;
        char *nb = realloc(*buf, nc);
        if (!nb) return false;
        *buf = nb;
        *cap = nc;
    }
    if (!first) { memcpy(*buf + *n, "\n\n", 2); *n += 2; }
    memcpy(*buf + *n, head, hl);
    *n += hl;
    if (len) {
        (*buf)[(*n)++] = '\n';
        memcpy(*buf + *n, text, len);
        *n += len;
    }
    (*buf)[*n] = 0;
    return true;
}

tpl_status tpl_page_call_text(const tpl_page_call *c, char **out, size_t *len)
{
    if (!out || !len) return TPL_ERR_USAGE;
    *out = NULL;
    *len = 0;
    if (!c) return TPL_ERR_USAGE;
    if (!c->started) return TPL_ERR_USAGE;
    char *buf = NULL;
    size_t n = 0, cap = 0;
    bool ok = true, firstsec = true, history = false;
    char head[512];
    for (size_t i = 0; i <= c->pg->n && ok; i++) {
        bool dyn = i == c->pg->n || c->pg->b[i].region == TPL_PAGE_DYNAMIC;
        if (dyn && !history) {
            ok = section(&buf, &n, &cap, "\xe2\x94\x80\xe2\x94\x80 history \xe2\x94\x80\xe2\x94\x80", "", 0, firstsec);
            firstsec = false;
            history = true;
        }
        if (i == c->pg->n || !ok) break;
        snprintf(head, sizeof head, "\xe2\x94\x80\xe2\x94\x80 %s (%s) \xe2\x94\x80\xe2\x94\x80", c->pg->b[i].name,
                 dyn ? "dynamic" : "static");
        ok = section(&buf, &n, &cap, head, c->bs[i].text ? c->bs[i].text : "", c->bs[i].len, firstsec);
        firstsec = false;
    }
    if (ok) {
        char *nb = realloc(buf, n + 2);
        if (nb) { buf = nb; buf[n++] = '\n'; buf[n] = 0; }
        else ok = false;
    }
    if (!ok) { free(buf); return TPL_ERR_NOMEM; }
    *out = buf;
    *len = n;
    return TPL_OK;
}
