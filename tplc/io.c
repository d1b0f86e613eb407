/* tplc's files: inputs read with checks (regular files only, a size cap), the template loader,
 * and outputs written so that nothing is lost or overwritten (see tplc.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "tplc.h"

/* Why an input was refused: an errno value, or one of these. */
#define E_NOT_REGULAR (-1)
#define E_TOO_LARGE (-2)

static const char *reason(int code)
{
    return code == E_NOT_REGULAR ? "not a regular file" : code == E_TOO_LARGE ? "too large (over 256 MiB)" : strerror(code);
}

/* Reads at most cap + 1 bytes from fd into a malloc'd NUL-terminated buffer (size_hint: the
 * expected size, 0 when unknown). NULL with *code set on failure or past the cap. */
static char *read_fd(int fd, size_t size_hint, size_t *len, int *code)
{
    size_t cap = size_hint ? size_hint + 1 : 65536, n = 0;
    char *buf = malloc(cap + 1);
    if (!buf) { *code = ENOMEM; return NULL; }
    for (;;) {
        if (n == cap) {
            if (n > TPLC_MAX_INPUT) break;
            size_t nc = cap * 2 > TPLC_MAX_INPUT + 1 ? TPLC_MAX_INPUT + 1 : cap * 2;
            char *nb = realloc(buf, nc + 1);
            if (!nb) { free(buf); *code = ENOMEM; return NULL; }
            buf = nb;
            cap = nc;
        }
        ssize_t got = read(fd, buf + n, cap - n);
        if (got < 0) {
            if (errno == EINTR) continue;
            *code = errno;
            free(buf);
            return NULL;
        }
        if (got == 0) break;
        n += (size_t)got;
    }
    if (n > TPLC_MAX_INPUT) { free(buf); *code = E_TOO_LARGE; return NULL; }
    buf[n] = 0;
    *len = n;
    return buf;
}

/* Opens path for reading when it is a regular file within the cap (checked by stat before the
 * open, so a FIFO or a device is never opened, and again on the descriptor). -1 with *code set. */
static int open_regular(const char *path, off_t *size, int *code)
{
    struct stat st, fst;
    if (stat(path, &st) != 0) { *code = errno; return -1; }
    if (!S_ISREG(st.st_mode)) { *code = S_ISDIR(st.st_mode) ? EISDIR : E_NOT_REGULAR; return -1; }
    if ((uintmax_t)st.st_size > TPLC_MAX_INPUT) { *code = E_TOO_LARGE; return -1; }
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) { *code = errno; return -1; }
    if (fstat(fd, &fst) != 0 || !S_ISREG(fst.st_mode) || (uintmax_t)fst.st_size > TPLC_MAX_INPUT) {
        *code = S_ISREG(fst.st_mode) ? E_TOO_LARGE : E_NOT_REGULAR; /* swapped since the stat */
        close(fd);
        return -1;
    }
    *size = fst.st_size;
    return fd;
}

static char *read_path(const char *path, size_t *len, int *code)
{
    if (strcmp(path, "-") == 0) {
        struct stat st;
        size_t hint = 0;
        if (fstat(0, &st) == 0 && S_ISREG(st.st_mode)) {
            if ((uintmax_t)st.st_size > TPLC_MAX_INPUT) { *code = E_TOO_LARGE; return NULL; }
            hint = (size_t)st.st_size;
        }
        return read_fd(0, hint, len, code);
    }
    off_t size;
    int fd = open_regular(path, &size, code);
    if (fd < 0) return NULL;
    char *text = read_fd(fd, (size_t)size, len, code);
    close(fd);
    return text;
}

char *tplc_read(const char *path, size_t *len, const char **why)
{
    int code = 0;
    char *text = read_path(path, len, &code);
    if (!text) *why = reason(code);
    return text;
}

char *tplc_read_input(const char *path, const char *what, size_t *len)
{
    int code = 0;
    char *text = read_path(path, len, &code);
    if (!text) fprintf(stderr, "%s: error: cannot read %s: %s\n", path, what, reason(code));
    return text;
}

FILE *tplc_open_input(const char *path, const char *what)
{
    int code = 0;
    off_t size;
    int fd = open_regular(path, &size, &code);
    FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
    if (fd >= 0 && !f) { code = errno; close(fd); }
    if (!f) fprintf(stderr, "%s: error: cannot read %s: %s\n", path, what, reason(code));
    return f;
}

/* ---- the loader ---- */

bool tplc_loader_init(tplc_loader *l, const char *path)
{
    memset(l, 0, sizeof *l);
    const char *slash = strcmp(path, "-") == 0 ? NULL : strrchr(path, '/');
    l->dir = slash ? strndup(path, (size_t)(slash - path) + (slash == path)) : strdup(".");
    return l->dir != NULL;
}

void tplc_loader_free(tplc_loader *l)
{
    free(l->dir);
    free(l->failed);
    memset(l, 0, sizeof *l);
}

char *tplc_loader_load(void *data, const char *name, size_t name_len, size_t *len)
{
    tplc_loader *l = data;
    if (name_len == 0 || memchr(name, 0, name_len)) return NULL;
    /* as Jinja2's FileSystemLoader: a ".." segment never leaves the folder (not found) */
    for (size_t i = 0; i < name_len;) {
        size_t j = i;
        while (j < name_len && name[j] != '/') j++;
        if (j - i == 2 && name[i] == '.' && name[i + 1] == '.') return NULL;
        i = j + 1;
    }
    size_t dl = strlen(l->dir);
    char *path = malloc(dl + name_len + 2);
    if (!path) return NULL;
    memcpy(path, l->dir, dl);
    path[dl] = '/';
    memcpy(path + dl + 1, name, name_len);
    path[dl + 1 + name_len] = 0;
    int code = 0;
    char *text = read_path(path, len, &code);
    if (!text && code != ENOENT && code != ENOTDIR) {
        /* it exists but cannot be used: say why instead of "not found" */
        free(l->failed);
        l->failed = strndup(name, name_len);
        l->code = code;
    }
    free(path);
    return text;
}

char *tplc_loader_fix_error(const tplc_loader *l, const tpl_error *err)
{
    if (!l->failed || !err->message) return NULL;
    size_t n = strlen(l->failed);
    char *want = malloc(n + 32);
    if (!want) return NULL;
    snprintf(want, n + 32, "template '%s' not found", l->failed);
    bool match = strcmp(want, err->message) == 0;
    free(want);
    if (!match) return NULL;
    const char *why = reason(l->code);
    size_t m = n + strlen(why) + 32;
    char *msg = malloc(m);
    if (!msg) return NULL;
    if (l->code < 0) snprintf(msg, m, "template '%s' is %s", l->failed, why);
    else snprintf(msg, m, "template '%s' cannot be read: %s", l->failed, why);
    return msg;
}

/* ---- outputs ---- */

bool tplc_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return a && b && strcmp(a, "-") != 0 && strcmp(b, "-") != 0 && stat(a, &sa) == 0 && stat(b, &sb) == 0 &&
           sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static int write_all(int fd, const char *data, size_t n)
{
    while (n) {
        ssize_t w = write(fd, data, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        data += w;
        n -= (size_t)w;
    }
    return 0;
}

/* What an output holds: bytes in memory, or a program written as a .tplb in pieces. */
typedef struct tplc_payload {
    const void *data;
    size_t n;
    const tpl_program *prog;
    unsigned flags;
    bool nomem;       /* the program's write ran out of memory */
} tplc_payload;

static int fd_sink(void *data, const void *bytes, size_t n) { return write_all(*(int *)data, bytes, n); }

/* Writes the payload to fd (tpl_file_write's fill): 0, or -1 with errno set (ENOMEM when out of
 * memory). */
static int put_payload(void *data, int fd, const char *name)
{
    (void)name;
    tplc_payload *pl = data;
    if (!pl->prog) return write_all(fd, pl->data, pl->n);
    errno = 0;
    tpl_status st = tpl_program_write(pl->prog, pl->flags, fd_sink, &fd);
    if (st == TPL_OK) return 0;
    if (st != TPL_ERR_IO) { pl->nomem = true; errno = ENOMEM; }
    else if (!errno) errno = EIO;
    return -1;
}

/* Atomic, mode-preserving, through symlinks, streams as they are: tpl_file_write (include/tpl.h),
 * shared with the prompt store's PO files. */
int tplc_write_output(const char *path, const void *data, size_t n)
{
    tplc_payload pl = { data, n, NULL, 0, false };
    return tpl_file_write(path ? path : "-", 0, put_payload, &pl);
}

int tplc_write_program(const char *path, const tpl_program *prog, unsigned flags)
{
    tplc_payload pl = { NULL, 0, prog, flags, false };
    int rc = tpl_file_write(path ? path : "-", 0, put_payload, &pl);
    return rc && pl.nomem ? -2 : rc;
}

/* Whether `out` names the input `in`; prints the refusal. */
static bool refuse(const char *flag, const char *out, const char *in)
{
    if (!tplc_same_file(out, in)) return false;
    fprintf(stderr, "tplc: error: %s %s is an input (%s); tplc does not write to its inputs\n", flag, out, in);
    return true;
}

int tplc_check_outputs(const tplc_opts *o, const char *tpl, const tpl_program *prog)
{
    const char *outs[2] = { o->out, o->depfile }, *flags[2] = { "-o", "--depfile" };
    size_t nd = prog ? tpl_program_dependencies(prog, NULL, NULL, 0) : 0;
    const char **deps = nd ? calloc(nd, sizeof *deps) : NULL;
    if (nd && !deps) { fprintf(stderr, "tplc: out of memory\n"); return TPLC_EXIT_USAGE; }
    if (nd) tpl_program_dependencies(prog, deps, NULL, nd);
    tplc_loader l;
    if (!tplc_loader_init(&l, tpl ? tpl : "-")) { free(deps); fprintf(stderr, "tplc: out of memory\n"); return TPLC_EXIT_USAGE; }
    bool hit = false;
    for (int k = 0; k < 2 && !hit; k++) {
        if (!outs[k]) continue;
        if (!outs[k][0]) { /* (not a file: "" would be reported as ": cannot write") */
            fprintf(stderr, "tplc: error: %s needs a file name (it is empty)\n", flags[k]);
            hit = true;
            break;
        }
        const char *ins[5] = { o->state, o->golden, o->schema, o->defaults, o->steps };
        for (int i = 0; i < 5 && !hit; i++) hit = refuse(flags[k], outs[k], ins[i]);
        for (int i = 0; i < o->args.n && !hit; i++) hit = refuse(flags[k], outs[k], o->args.v[i]);
        for (int i = 0; i < o->catalogs.n && !hit; i++) hit = refuse(flags[k], outs[k], o->catalogs.v[i]);
        for (size_t i = 0; i < nd && !hit; i++) {
            size_t m = strlen(l.dir) + strlen(deps[i]) + 2;
            char *p = malloc(m);
            if (!p) break;
            snprintf(p, m, "%s/%s", l.dir, deps[i]);
            hit = refuse(flags[k], outs[k], p);
            free(p);
        }
    }
    if (!hit && o->out && o->depfile && (strcmp(o->out, o->depfile) == 0 || tplc_same_file(o->out, o->depfile))) {
        fprintf(stderr, "tplc: error: -o and --depfile name the same file\n");
        hit = true;
    }
    tplc_loader_free(&l);
    free(deps);
    return hit ? TPLC_EXIT_USAGE : 0;
}
