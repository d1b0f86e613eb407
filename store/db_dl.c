/* Loading the store's optional libraries (libsqlite3, libpq, libgettextpo) with dlopen when they
 * are used, not at every start of a process that links the store: together with their own
 * dependencies they cost most of the dynamic linker's work at tplc's start (issue 21). */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include "db.h"

void *db_dl_open(const char *soname, const char *what, char *msg, size_t cap)
{
    void *lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *e = dlerror();
        snprintf(msg, cap, "%s: %s", what, e ? e : soname);
    }
    return lib;
}

bool db_dl_sym(void *lib, const char *soname, const char *name, void *fn, char *msg, size_t cap)
{
    void *f = dlsym(lib, name);
    if (!f) {
        snprintf(msg, cap, "%s has no function %s", soname, name);
        return false;
    }
    memcpy(fn, &f, sizeof f); /* (ISO C has no cast from void * to a function pointer) */
    return true;
}
