/* tplc's internal interface: the parsed command line, the subcommand table and the file helpers
 * every subcommand shares (tplc/main.c parses, tplc/io.c reads and writes files). Not installed;
 * only tplc's own sources include it. DESIGN.md §4 is the contract of the command line.
 *
 * Adding a subcommand: write `int tplc_NAME(const tplc_opts *o)` in tplc/NAME.c, declare it
 * below, add its row to the command table in tplc/main.c (name, synopsis, summary, the flags it
 * takes, how many positional arguments) and any new flags to the flag table there (one row:
 * name, value, field of tplc_opts, help). Parsing, `tplc NAME --help`, `--flag=value`, `--` and
 * "flag does not apply to NAME" then come from the tables; tests/cli_flags.sh checks that
 * doc/tplc.1 mentions every flag --help prints. A subcommand that parses its own arguments
 * (verbs with their own flags) sets `run_raw` instead of `run`. */
#ifndef TPLC_H
#define TPLC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "tpl.h"
#include "tpl_store.h"

#define TPLC_EXIT_TEMPLATE 1
#define TPLC_EXIT_USAGE 2

/* The largest input tplc reads (a template, an included template, state, golden, catalog,
 * schema): a larger regular file is refused by its size, unread; standard input stops at it. */
#define TPLC_MAX_INPUT ((size_t)256 << 20)

/* A repeatable flag's values, in command-line order (v has room for every argument). */
typedef struct tplc_list {
    const char **v;
    int n;
} tplc_list;

typedef struct tplc_command tplc_command;

/* The parsed command line. Strings point into argv; NULL/false/0 when not given. */
typedef struct tplc_opts {
    const tplc_command *cmd;
    tplc_list args;             /* positional arguments after the subcommand */
    const char *tpl;            /* args.v[0] (NULL when there is none) */
    /* inputs */
    const char *state, *golden, *schema;
    long case_n;                /* --case N (-1 when not given) */
    tplc_list facts, catalogs, trkeys;
    tplc_list extensions;       /* --extension NAME: Jinja2 extensions (jinja2.ext.do, jinja2.ext.loopcontrols) */
    /* compile flags */
    const char *syntax, *profile;
    bool trim_blocks, lstrip_blocks, keep_nl, strict, tidy, autoescape;
    uint64_t max_compile_memory; /* --max-compile-memory (0: the library's default) */
    /* render */
    const char *lang, *channel, *medium;
    tpl_limits limits;          /* --fuel --max-depth --max-output --max-memory (0: default) */
    /* outputs */
    const char *out;            /* -o (NULL, or "-" normalised to NULL: standard output) */
    const char *depfile, *emit, *name, *format;
    bool strip_source, reads, native;
    bool tokens, ast;           /* tplc dump --tokens / --ast */
    /* pages (tplc/page.c) */
    const char *steps, *defaults, *claimed, *page;
    bool resumed;
} tplc_opts;

/* One subcommand. `flags` lists the flags it takes, space-separated, with groups @compile
 * (syntax and whitespace options) and @limits (render limits); any other flag is a usage error
 * for it. Positional arguments: at least min_args, at most max_args (-1: any number). */
struct tplc_command {
    const char *name;
    const char *synopsis;       /* usage after "tplc NAME " (lines joined by "\n") */
    const char *summary;        /* what it does, a few lines for --help */
    const char *flags;
    int min_args, max_args;
    int (*run)(const tplc_opts *o);            /* parsed by the table */
    int (*run_raw)(int argc, char **argv);     /* or its own parser (argv[0] = NAME) */
};

/* A positive decimal number up to max (with suffixes: a K, M or G suffix multiplies by 2^10,
 * 2^20, 2^30) into *out; false when it is not one (tplc/main.c: the limit flags). */
bool tplc_parse_number(const char *s, bool suffixes, uint64_t max, uint64_t *out);

/* Subcommands (tplc/commands.c, tplc/lint.c). Each returns the exit status. */
int tplc_render(const tplc_opts *o);
int tplc_dump(const tplc_opts *o);
int tplc_compile(const tplc_opts *o);
int tplc_tr_extract(const tplc_opts *o);
int tplc_lint(const tplc_opts *o);
/* Pages (tplc/page.c, DESIGN.md §8): tplc page DIR; tplc lint --page DIR; and tplc render's page
 * scope (--defaults, --resumed, --claimed: defaults under the state, `call` dropped from the
 * state, `resumed` set) loaded into r instead of the plain --state/--golden (0 or an exit
 * status, the error printed). */
int tplc_page(const tplc_opts *o);
int tplc_lint_page(const tplc_opts *o);
int tplc_page_scope(const tplc_opts *o, tpl_render *r);
/* tplc prompt VERB ... (tplc/prompt.c, DESIGN.md §10): parses its own arguments (argv[0] is
 * "prompt"). */
int tplc_prompt(int argc, char **argv);

/* ---- files (tplc/io.c) ---- */

/* Reads a whole input ("-" = standard input). Refuses, unread, anything that is not a regular
 * file (a FIFO, a device — also through a symlink —, a directory) and a regular file larger than
 * TPLC_MAX_INPUT; standard input is read up to the cap. Returns malloc'd bytes (NUL-terminated,
 * *len set) or NULL with *why set to a static reason ("not a regular file", "too large (over 256
 * MiB)", or strerror text). Never blocks on a FIFO. */
char *tplc_read(const char *path, size_t *len, const char **why);
/* As tplc_read, printing "PATH: error: cannot read WHAT: WHY" on failure. */
char *tplc_read_input(const char *path, const char *what, size_t *len);
/* Opens an input for streaming (the state parser reads it through stdio) with the same checks
 * as tplc_read (regular file, size cap; not for "-"). NULL after printing the error. */
FILE *tplc_open_input(const char *path, const char *what);

/* The loader tplc gives the compiler: names resolve beside the main template, never through a
 * ".." segment (as Jinja2's FileSystemLoader), and are read with tplc_read's checks. When it
 * refuses a file that exists (not a regular file, too large, unreadable) it remembers why, and
 * tplc_loader_fix_error turns the compiler's "template 'X' not found" into that reason. */
typedef struct tplc_loader {
    char *dir;                  /* the main template's folder */
    char *failed;               /* the last name refused although it exists, or NULL */
    int code;                   /* why (an errno value, or tplc's own codes) */
} tplc_loader;
/* Sets up l for the template at `path` ("-": the current folder); false when out of memory. */
bool tplc_loader_init(tplc_loader *l, const char *path);
void tplc_loader_free(tplc_loader *l);
char *tplc_loader_load(void *data, const char *name, size_t name_len, size_t *len);
/* When err is the compiler's "template 'X' not found" for a name l refused for another reason,
 * returns a malloc'd better message ("template 'X' is not a regular file") to print instead of
 * err->message; else NULL. */
char *tplc_loader_fix_error(const tplc_loader *l, const tpl_error *err);

/* Writes n bytes to path: "-" or NULL is standard output; /dev/stdout, /dev/stderr, /dev/fd/N
 * and /proc/self/fd/N write to that descriptor as it is (a `>> log` redirection keeps its log);
 * a FIFO, a device or a socket is written in place; anything else through a temporary file made
 * with mkstemp beside the target (O_EXCL: a link planted there is never followed), fsync'ed and
 * renamed over it: a failed run never leaves a partial file. A symlink (also a dangling one) is
 * followed to the file it names, which is replaced while the link stays; an existing file keeps
 * its permissions, a new one gets 0666 & ~umask. Returns 0, or -1 with errno set. */
int tplc_write_output(const char *path, const void *data, size_t n);
/* The same for a program's .tplb (tpl_program_write with flags TPL_SAVE_*), written in pieces as
 * it is encoded (a large template's file is never held in memory): 0, -1 with errno set, or -2
 * when out of memory. */
int tplc_write_program(const char *path, const tpl_program *prog, unsigned flags);

/* Whether paths a and b name the same existing file (either NULL or "-": false). */
bool tplc_same_file(const char *a, const char *b);

/* "tplc never writes to its inputs": checks -o and --depfile against every input of o (the
 * templates, state, golden, schema, defaults, steps, catalogs) and, when prog is given, every template its
 * compilation loaded (resolved beside `tpl`). Prints the refusal and returns TPLC_EXIT_USAGE,
 * else 0. */
int tplc_check_outputs(const tplc_opts *o, const char *tpl, const tpl_program *prog);

/* ---- shared by the subcommands (tplc/commands.c) ---- */

/* Prints a tpl error record (tpl_error_format) to stderr. */
void tplc_print_error(const tpl_error *e);
/* Compiles template `path` (or loads it when it is a .tplb) with o's compile flags. Prints errors,
 * unless errout is given and the error is the template's (exit 1): then the caller gets the
 * record (tpl_error_clear it) and, in *msgout, the message to show (malloc'd: the record's, or
 * the loader's better reason). I/O and usage errors are always printed. Returns 0 or an exit
 * status. */
int tplc_compile_path(const tplc_opts *o, const char *path, tpl_program **prog, tpl_error *errout, char **msgout);
/* tplc_compile_path reporting every error (tpl_compile_all): up to cap errors go to errs[] with
 * their messages in msgs[] (malloc'd, the loader's reason for a missing template) and *nerr is
 * their count; an error of another kind (usage, I/O) is printed instead (msgs[i] NULL, errs[i]
 * cleared). Returns 0, EXIT_TEMPLATE or EXIT_USAGE (the worst of the errors). */
int tplc_compile_path_all(const tplc_opts *o, const char *path, tpl_program **prog, tpl_error *errs, char **msgs,
                          size_t cap, size_t *nerr);


/* Extracted messages (tplc tr-extract, tplc prompt tr-extract): the literal tr() texts and Jinja
 * gettext messages of programs, deduplicated by (context, msgid) in first-seen order, each with
 * its "#: LABEL:LINE" references. */
typedef struct tplc_msg {
    char *ctx, *id, *plural;    /* msgctxt or NULL, msgid, msgid_plural or NULL (owned) */
    tpl_store_pot_ref *refs;    /* refs[i].file borrows the label given to tplc_msgs_add */
    size_t nrefs;
    bool pyfmt;                 /* a %-format gettext message ("#, python-format", as Babel) */
} tplc_msg;
typedef struct tplc_msgs tplc_msgs;
tplc_msgs *tplc_msgs_new(void);                 /* NULL when out of memory */
void tplc_msgs_free(tplc_msgs *m);
/* Adds prog's messages (a program compiled from source: a .tplb keeps no record of them),
 * referenced as LABEL:LINE (label borrowed: it must outlive m); a non-literal argument is a
 * warning on stderr. Returns 0 or an exit status (out of memory, printed). */
int tplc_msgs_add(tplc_msgs *m, const tpl_program *prog, const char *label);
const tplc_msg *tplc_msgs_list(const tplc_msgs *m, size_t *n);
/* The messages as PO template entries (borrowing m's strings; free() the array), NULL when out
 * of memory. */
tpl_store_pot_entry *tplc_msgs_entries(const tplc_msgs *m);
/* Writes them as a PO template (tpl_store_pot_write); 0 or an exit status (printed). */
int tplc_msgs_write_pot(const tplc_msgs *m, const char *path);

/* Whether the golden object g (the file's top-level object, or element elem of its top-level array
 * when elem >= 0; text/len are the file's bytes) holds only the keys a golden has ("state",
 * "memory"). On the first other key (a misspelling) it prints FILE:LINE:COL: error with the file's
 * line and a caret, and returns false. */
bool tplc_golden_keys_ok(const char *path, const char *text, size_t len, json_t *g, long elem);

#endif
