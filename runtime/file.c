/* tpl_file_write: the one way tpl's tools write a file (tplc's -o and --depfile, the store's PO
 * export and PO templates), so a failed or killed write never leaves a partial or temporary file
 * and never changes the target's mode (include/tpl.h documents the contract). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include "tpl.h"

/* The descriptor a path names as a stream of this process (/dev/stdout, /dev/stderr, /dev/fd/N,
 * /proc/self/fd/N), or -1. */
static int stream_fd(const char *p)
{
    if (strcmp(p, "/dev/stdout") == 0) return 1;
    if (strcmp(p, "/dev/stderr") == 0) return 2;
    const char *num = strncmp(p, "/dev/fd/", 8) == 0 ? p + 8 : strncmp(p, "/proc/self/fd/", 14) == 0 ? p + 14 : NULL;
    if (!num || *num < '0' || *num > '9') return -1;
    char *end;
    long fd = strtol(num, &end, 10);
    return *end || fd > INT_MAX ? -1 : (int)fd;
}

/* Follows the symlinks of path's last component (at most 40): a malloc'd path of the file it
 * names, which may not exist (a dangling link). Sets *fd when a hop names a stream of this
 * process. NULL with errno set on failure. */
static char *follow_links(const char *path, int *fd)
{
    char *cur = strdup(path);
    for (int hop = 0; cur; hop++) {
        if ((*fd = stream_fd(cur)) >= 0) return cur;
        struct stat st;
        if (lstat(cur, &st) != 0 || !S_ISLNK(st.st_mode)) return cur;
        if (hop == 40) { free(cur); errno = ELOOP; return NULL; }
        char target[PATH_MAX];
        ssize_t tl = readlink(cur, target, sizeof target - 1);
        if (tl < 0) { free(cur); return NULL; }
        target[tl] = 0;
        const char *slash = strrchr(cur, '/');
        char *next;
        if (target[0] == '/' || !slash) next = strdup(target);
        else {
            size_t dl = (size_t)(slash - cur) + 1;
            next = malloc(dl + (size_t)tl + 1);
            if (next) {
                memcpy(next, cur, dl);
                memcpy(next + dl, target, (size_t)tl + 1);
            }
        }
        free(cur);
        cur = next;
    }
    errno = ENOMEM;
    return NULL;
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

/* fill for a descriptor that is not a new regular file of ours (a stream, a FIFO, a device). With
 * TPL_FILE_BY_NAME fill writes an unnamed temporary file (one it can open by name without
 * truncating or reopening the target), whose bytes are then copied to fd. */
static int fill_other(int fd, unsigned flags, tpl_fill_fn fill, void *data)
{
    if (!(flags & TPL_FILE_BY_NAME)) {
        errno = 0;
        int rc = fill(data, fd, NULL);
        if (rc != 0 && !errno) errno = EIO;
        return rc ? -1 : 0;
    }
    FILE *t = tmpfile();
    if (!t) return -1;
    int tfd = fileno(t), rc = 0;
    char name[32];
    snprintf(name, sizeof name, "/proc/self/fd/%d", tfd);
    errno = 0;
    if (fill(data, tfd, name) != 0) { rc = -1; if (!errno) errno = EIO; }
    char buf[16384];
    for (off_t at = 0; rc == 0;) {
        ssize_t got = pread(tfd, buf, sizeof buf, at);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) { rc = got < 0 ? -1 : 0; break; }
        if (write_all(fd, buf, (size_t)got) != 0) rc = -1;
        at += got;
    }
    int e = errno;
    fclose(t);
    errno = e;
    return rc;
}

/* A stream of this process, written as it is (a `>> log` keeps appending). */
static int write_stream(int fd, unsigned flags, tpl_fill_fn fill, void *data)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0) return -1;
    if ((fl & O_ACCMODE) == O_RDONLY) { errno = EBADF; return -1; }
    if (fd == 1) fflush(stdout);
    if (fd == 2) fflush(stderr);
    return fill_other(fd, flags, fill, data);
}

/* A new file's contents: fill, the target's mode, synced. 0, or -1 with errno set. */
static int fill_file(int fd, const char *name, tpl_fill_fn fill, void *data, bool chmod_it, mode_t mode)
{
    errno = 0;
    int rc = fill(data, fd, name);
    if (rc != 0 && !errno) errno = EIO;
    if (rc == 0 && chmod_it) rc = fchmod(fd, mode);
    if (rc == 0) rc = fsync(fd);
    return rc ? -1 : 0;
}

int tpl_file_write(const char *path, unsigned flags, tpl_fill_fn fill, void *data)
{
    if (!path || !fill || !path[0]) { errno = path && fill ? ENOENT : EINVAL; return -1; }
    if (strcmp(path, "-") == 0) return write_stream(1, flags, fill, data);
    int sfd = -1;
    char *target = follow_links(path, &sfd);
    if (!target) return -1;
    if (sfd >= 0) { free(target); return write_stream(sfd, flags, fill, data); }
    struct stat st;
    bool exists = stat(target, &st) == 0;
    if (exists && S_ISDIR(st.st_mode)) { free(target); errno = EISDIR; return -1; }
    if (exists && !S_ISREG(st.st_mode)) {
        /* a FIFO, a device or a socket: nothing to rename over, written in place */
        int fd = open(target, O_WRONLY | O_NOCTTY | O_CLOEXEC);
        free(target);
        if (fd < 0) return -1;
        int rc = fill_other(fd, flags, fill, data);
        int e = errno;
        if (close(fd) != 0 && rc == 0) return -1;
        errno = e;
        return rc;
    }
    const char *slash = strrchr(target, '/');
    const char *base = slash ? slash + 1 : target;
    size_t dl = slash ? (size_t)(slash - target) + 1 : 0, bl = strlen(base);
    char *tmp = malloc(dl + bl + 48);
    char *dir = tmp ? (dl ? strndup(target, dl) : strdup(".")) : NULL;
    if (!dir) { free(tmp); free(target); errno = ENOMEM; return -1; }
    memcpy(tmp, target, dl);
    /* An existing file keeps its mode: the new one is made 0600 and given that mode once full
     * (never readable by more than the old one was). A new file gets 0666 less the umask, which
     * the kernel applies at creation (umask() itself would change it for every thread). */
    mode_t cmode = exists ? 0600 : 0666;
    /* The signals that end a run from outside (a terminal's ^C, kill, a hangup) wait while a named
     * temporary file exists: it is renamed or unlinked first, and a pending signal is delivered
     * when they are unblocked below, so no `.FILE.N` is left behind. Blocking (no handler) needs no
     * state outside this call, and is per thread. SIGXFSZ is blocked throughout: past the file size
     * limit a write fails with EFBIG, reported like a full disk. */
    sigset_t block, saved;
    sigemptyset(&block);
    sigaddset(&block, SIGXFSZ);
    pthread_sigmask(SIG_BLOCK, &block, &saved);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGHUP);
    sigaddset(&block, SIGQUIT);
    int rc = 0, e = 0;
    bool named = false;
    /* First the contents go to an unnamed file in the target's directory (O_TMPFILE), so a write
     * killed midway, even by SIGKILL, leaves nothing behind; only a whole, synced file is given a
     * temporary name (linkat never follows a link planted at the new name: EEXIST, the next name),
     * then renamed over the target. Where O_TMPFILE or /proc is missing, the file is named from
     * the start (O_CREAT | O_EXCL). */
    int fd = -1;
#ifdef O_TMPFILE
    fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, cmode);
#endif
    char proc[32];
    if (fd >= 0) {
        snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
        if (access(proc, F_OK) != 0) { close(fd); fd = -1; } /* no /proc: no way to name it */
    }
    if (fd >= 0) {
        rc = fill_file(fd, proc, fill, data, exists, st.st_mode & 07777);
        e = errno;
        pthread_sigmask(SIG_BLOCK, &block, NULL);
        for (unsigned k = 0; rc == 0 && k < 100 && !named; k++) {
            snprintf(tmp + dl, bl + 48, ".%s.%ld.%u", base, (long)getpid(), k);
            if (linkat(AT_FDCWD, proc, AT_FDCWD, tmp, AT_SYMLINK_FOLLOW) == 0) named = true;
            else if (errno != EEXIST) break;
        }
        close(fd);
        fd = rc == 0 && !named ? -1 : -2; /* not linkable here: written again under a name */
    } else {
        pthread_sigmask(SIG_BLOCK, &block, NULL);
    }
    if (fd == -1) {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        unsigned long salt = (unsigned long)now.tv_nsec ^ ((unsigned long)getpid() << 16);
        for (unsigned k = 0; k < 100 && fd < 0; k++) {
            snprintf(tmp + dl, bl + 48, ".%s.%ld.%lx", base, (long)getpid(), salt + k * 7919u);
            fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, cmode);
            if (fd < 0 && errno != EEXIST) break;
        }
        if (fd < 0) rc = -1, e = errno;
        else {
            named = true;
            rc = fill_file(fd, tmp, fill, data, exists, st.st_mode & 07777);
            e = errno;
            if (close(fd) != 0 && rc == 0) { rc = -1; e = errno; }
        }
    }
    if (rc == 0 && rename(tmp, target) != 0) { rc = -1; e = errno; }
    if (rc != 0 && named) unlink(tmp);
    if (rc != 0 && e == EFBIG) {
        /* the SIGXFSZ the failed write raised is taken rather than delivered */
        sigset_t xfsz;
        sigemptyset(&xfsz);
        sigaddset(&xfsz, SIGXFSZ);
        struct timespec zero = { 0, 0 };
        (void)sigtimedwait(&xfsz, NULL, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    if (rc == 0) {
        /* the rename itself: best effort */
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) { (void)fsync(dfd); close(dfd); }
    }
    free(dir);
    free(tmp);
    free(target);
    errno = e;
    return rc;
}
