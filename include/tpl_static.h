/* tpl — layout of programs compiled into a host binary (`tplc compile --emit c`).
 *
 * Generated C files include this header; hosts normally need only tpl.h and
 *     extern const struct tpl_static_program SYMBOL;
 *     tpl_program_load_static(&SYMBOL, &prog, &err);
 * The structs mirror the runtime's internal tables byte for byte (the library checks this with
 * static assertions), so tpl_program_load_static points the program at them without copying.
 * They are an ABI of this library version: regenerate the C files when tpl is upgraded
 * (`version` is checked at load time). Do not write these by hand. */
#ifndef TPL_STATIC_H
#define TPL_STATIC_H

#include "tpl.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TPL_STATIC_MAGIC 0x54504c43u /* "TPLC" */

struct tpl_static_list;
struct tpl_native_frame;

/* A constant: type is 1 none, 2 bool, 3 int, 4 float, 5 str, 6 tuple (the runtime's tpl_type). */
typedef struct tpl_static_value {
    uint8_t type, flags;
    uint16_t aux;
    uint32_t len;                 /* str: bytes */
    union {
        int64_t i;                /* bool, int; float: the IEEE-754 bits */
        const char *s;
        const struct tpl_static_list *list;
    } u;
} tpl_static_value;

typedef struct tpl_static_list {
    uint32_t len, cap;
    const tpl_static_value *items;
} tpl_static_list;

typedef struct tpl_static_name {
    tpl_static_value s;
    uint64_t hash;                /* FNV-1a 64 of the name */
    int16_t builtin_ids[4];       /* filled by the runtime's compiler; 0 here (looked up by name) */
    _Bool resolved;               /* 0 in generated code: the VM resolves builtins by name */
} tpl_static_name;

/* Instructions from pc on come from line:col of file (an index of the program's files; 0: the
 * template itself). */
typedef struct tpl_static_span {
    uint32_t pc, line, col, file;
} tpl_static_span;

/* A template whose code the program holds (its includes, imports, extends): files[0] is the
 * template itself (its source is the program's `source`), the others as the compile loaded them,
 * with their normalised sources (NULL when stripped) for the lines under diagnostics. */
typedef struct tpl_static_file {
    const char *name;
    const char *source;
    size_t source_len;
} tpl_static_file;

/* A builtin the code calls, by name: the code's builtin operands (a filter's, test's, global
 * function's or method's) are indexes of the program's builtins table, which
 * tpl_program_load_static resolves to the loading library's builtins (as a .tplb's table), so a
 * generated file does not depend on the order of the library's builtin list. kind: the
 * library's builtin kind (0 filter, 1 test, 2 global function, 3 str method, 4 dict method,
 * 5 list method, 6 Kernel function, 7 method, 8 String, 9 Numeric, 10 Array, 11 Hash, 12 Range
 * method); an unknown (kind, name) is a load error naming it. */
typedef struct tpl_static_builtin {
    uint32_t kind;
    uint32_t len;                 /* bytes of name */
    const char *name;
} tpl_static_builtin;

typedef struct tpl_static_macro {
    uint32_t entry, name, params;
    uint16_t nparams, nslots, max_stack;
    int16_t varargs_slot, kwargs_slot, caller_slot;
} tpl_static_macro;

struct tpl_static_program {
    uint32_t magic;               /* TPL_STATIC_MAGIC */
    uint32_t version;             /* TPL_TPLB_VERSION */
    uint32_t syntax;              /* tpl_syntax */
    uint32_t options;             /* bit 0 trim_blocks, 1 lstrip_blocks, 2 keep_trailing_newline,
                                   * 3 strict, 4 tidy, 5 hf */
    const char *name;
    const char *source;           /* normalised source, or NULL */
    size_t source_len;
    uint64_t source_hash;
    uint32_t nslots, max_stack;
    const uint32_t *code;
    size_t ncode;
    const tpl_static_value *consts;
    size_t nconsts;
    const tpl_static_name *names;
    size_t nnames;
    const tpl_static_span *spans;
    size_t nspans;
    const tpl_static_macro *macros;
    size_t nmacros;
    const char *lang;             /* the bound language (tpl_options.lang), or NULL */
    /* `--emit c --native`: the render as C (tpl_native.h: a tpl_native_fn), or NULL: the VM runs
     * the bytecode above. Either way the program behaves the same to the byte. */
    int (*native)(struct tpl_native_frame *f, uint32_t entry, uint32_t npre);
    /* The builtins the code calls (their indexes are the code's builtin operands). Never NULL in
     * a generated file: a file without it (generated before builtins were named) is refused
     * ("regenerate it with this tplc"). */
    const tpl_static_builtin *builtins;
    size_t nbuiltins;
    /* What the native render needs of the runtime at each render (tpl_native.h TPL_NATIVE_*:
     * decided by the emitter), 0 without a native render or when it needs the full set-up (a file
     * that leaves it out: 0). */
    uint32_t native_flags;
    /* The files the spans name (nfiles 0: only the template itself). */
    const tpl_static_file *files;
    size_t nfiles;
};

#ifdef __cplusplus
}
#endif
#endif
