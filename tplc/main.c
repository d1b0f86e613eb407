/* tplc — compile, render, lint and disassemble templates (DESIGN.md §4).
 * This file is the command line itself: the flag table and the subcommand table (one source for
 * parsing and for every --help text; docs/tplc.1 follows them, checked by tests/cli_flags.sh), the
 * parser, and the check that standard output was really written. Exit status: 0 success,
 * 1 template error (syntax, undefined, type, limit, invalid state), 2 usage or I/O error. */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tplc.h"

enum flag_kind {
    F_BOOL,     /* bool field */
    F_STR,      /* const char * field; given once */
    F_LIST,     /* tplc_list field; repeatable */
    F_CASE,     /* long field: a non-negative number */
    F_COUNT,    /* uint64_t field: a positive number */
    F_DEPTH,    /* uint32_t field: a positive number */
    F_BYTES,    /* uint64_t field: a positive number of bytes, K/M/G suffixes (binary) */
};

typedef struct flag {
    const char *name;
    enum flag_kind kind;
    size_t off;             /* of the field in tplc_opts */
    const char *metavar;    /* the value's name in help texts (NULL for F_BOOL) */
    const char *choices;    /* "a|b|c": the values allowed, or NULL */
    const char *help;
} flag;

#define OFF(f) offsetof(tplc_opts, f)

/* Every flag of every subcommand, in --help order. */
static const flag flags[] = {
    { "--state", F_STR, OFF(state), "FILE.json", NULL, "template variables: a JSON object (- reads standard input)" },
    { "--golden", F_STR, OFF(golden), "FILE.json", NULL,
      "a Pinecall golden {\"state\": {...}, \"memory\": [facts]} (or an array of them: --case)" },
    { "--case", F_CASE, OFF(case_n), "N", NULL, "the case of a golden array to use, counting from 0" },
    { "--schema", F_STR, OFF(schema), "FILE.json", NULL, "a JSON Schema whose \"properties\" name the state" },
    { "--syntax", F_STR, OFF(syntax), "SYNTAX", "jinja|erb|fmt", "the template syntax (default: by extension)" },
    { "--profile", F_STR, OFF(profile), "PROFILE", "jinja2|pinecall|hf", "a bundle of options (DESIGN.md §2)" },
    { "--trim-blocks", F_BOOL, OFF(trim_blocks), NULL, NULL, "remove the first newline after a block tag" },
    { "--lstrip-blocks", F_BOOL, OFF(lstrip_blocks), NULL, NULL, "strip whitespace before a block tag on its line" },
    { "--keep-trailing-newline", F_BOOL, OFF(keep_nl), NULL, NULL, "keep the template's final newline" },
    { "--strict", F_BOOL, OFF(strict), NULL, NULL, "undefined values are errors when printed, iterated or tested" },
    { "--tidy", F_BOOL, OFF(tidy), NULL, NULL, "strip line ends, squeeze blank lines, strip both ends" },
    { "--autoescape", F_BOOL, OFF(autoescape), NULL, NULL, "Jinja: escape every {{ }} value as Environment(autoescape=True)" },
    { "--extension", F_LIST, OFF(extensions), "NAME", "jinja2.ext.do|jinja2.ext.loopcontrols",
      "Jinja: a Jinja2 extension, as Environment(extensions=[NAME]) (repeatable)" },
    { "--max-compile-memory", F_BYTES, OFF(max_compile_memory), "BYTES", NULL,
      "memory the compile may take (default 1G; K, M, G suffixes)" },
    { "--lang", F_STR, OFF(lang), "L", NULL, "the language tr() translates to" },
    { "--catalog", F_LIST, OFF(catalogs), "FILE.json", NULL, "a translation catalog (repeatable: fallbacks in order)" },
    { "--tr-key", F_LIST, OFF(trkeys), "NAME", NULL, "a format-string field whose value is translated (repeatable)" },
    { "--remember", F_LIST, OFF(facts), "FACT", NULL, "a fact memory told this call, for remembers() (repeatable)" },
    { "--channel", F_STR, OFF(channel), "C", "phone|web|whatsapp", "call.channel (default phone)" },
    { "--medium", F_STR, OFF(medium), "M", "voice|text", "call.medium (default: text on whatsapp, else voice)" },
    { "--resumed", F_BOOL, OFF(resumed), NULL, NULL, "`resumed` is true (a resumed call; default false)" },
    { "--claimed", F_STR, OFF(claimed), "CODE", NULL, "call.claimed (default None)" },
    { "--defaults", F_STR, OFF(defaults), "FILE.json", NULL, "a JSON object laid under the state (a page's defaults)" },
    { "--steps", F_STR, OFF(steps), "STEPS.json", NULL, "a JSON array of goldens, one per state change of a call" },
    { "--page", F_STR, OFF(page), "DIR", NULL, "a page folder (DIR/page.json) to check" },
    { "--fuel", F_COUNT, OFF(limits.fuel), "N", NULL, "instructions per render (default 20000000)" },
    { "--max-depth", F_DEPTH, OFF(limits.max_depth), "N", NULL, "macro call and include depth (default 200)" },
    { "--max-output", F_BYTES, OFF(limits.max_output), "BYTES", NULL, "output bytes (default 64M; K, M, G suffixes)" },
    { "--max-memory", F_BYTES, OFF(limits.max_memory), "BYTES", NULL, "render memory bytes (default 256M; K, M, G suffixes)" },
    { "--strip-source", F_BOOL, OFF(strip_source), NULL, NULL, "leave the template source out of the .tplb" },
    { "--emit", F_STR, OFF(emit), "FORMAT", "tplb|c", "what to write (default tplb)" },
    { "--native", F_BOOL, OFF(native), NULL, NULL,
      "--emit c: also write the render as C (tpl_native.h), linked against libtpl; same symbol and behaviour" },
    { "--name", F_STR, OFF(name), "SYMBOL", NULL,
      "--emit c: the C symbol (default tpl_view_ + the template's base name, non-identifier bytes as _)" },
    { "--depfile", F_STR, OFF(depfile), "FILE", NULL, "also write a Makefile rule: OUT, the template and what it loads" },
    { "--tokens", F_BOOL, OFF(tokens), NULL, NULL, "print the scanner's tokens instead: span, kind, text" },
    { "--ast", F_BOOL, OFF(ast), NULL, NULL, "print the parser's tree instead: kind, position, value, indented" },
    { "--reads", F_BOOL, OFF(reads), NULL, NULL, "print the state names each template can read" },
    { "--format", F_STR, OFF(format), "FORMAT", "text|json", "the report format (default text)" },
    { "-o", F_STR, OFF(out), "OUT", NULL, "the output file, written atomically (-: standard output)" },
};

/* Flag groups usable in a command's flag list. */
static const struct { const char *name, *flags; } groups[] = {
    { "@compile", "--syntax --profile --trim-blocks --lstrip-blocks --keep-trailing-newline --strict --tidy "
                  "--autoescape --extension --max-compile-memory" },
    { "@limits", "--fuel --max-depth --max-output --max-memory" },
};

/* The subcommands, in --help order. */
static const tplc_command commands[] = {
    { "render",
      "TEMPLATE [--state FILE.json | --golden FILE.json [--case N]] [compile flags]\n"
      "[--lang L] [--catalog FILE.json]... [--tr-key NAME]... [--remember FACT]...\n"
      "[--channel phone|web|whatsapp] [--medium voice|text]\n"
      "[--fuel N] [--max-depth N] [--max-output BYTES] [--max-memory BYTES] [-o OUT]\n"
      "VIEWS.so --name SYMBOL [render flags]",
      "Renders TEMPLATE (a source, or a .tplb from tplc compile) to standard output or OUT; or the\n"
      "program SYMBOL of a shared library built from tplc compile --emit c [--native] files.",
      "--state --golden --case @compile --lang --catalog --tr-key --remember --channel --medium --resumed --claimed "
      "--defaults @limits --name -o", 1, 1,
      tplc_render, NULL },
    { "page",
      "DIR [--state FILE.json | --golden FILE.json [--case N]] [--channel C] [--medium M]\n"
      "[--resumed] [--claimed CODE] [--remember FACT]... [--format text|json]\n"
      "DIR --steps STEPS.json [--channel C] [--medium M] [--format text|json]",
      "Renders the page folder DIR (DIR/page.json: static blocks, the history, dynamic blocks) for\n"
      "a state; with --steps, a whole call: which blocks changed (would be sent) at each step, which\n"
      "were not re-rendered, and the bytes sent against re-sending every block every step.",
      "--state --golden --case --channel --medium --resumed --claimed --remember --steps --format @limits", 1, 1,
      tplc_page, NULL },
    { "lint",
      "TEMPLATE... [compile flags] [--state FILE.json | --schema FILE.json] [--reads] [--format text|json]\n"
      "--page DIR [--format text|json]",
      "Reports syntax errors, unknown filters and tests, non-literal tr() texts and, with --state or\n"
      "--schema, the names the templates read that the state lacks. Exit 1 when anything is found.\n"
      "--page DIR checks a page folder: page.json, every block template, and that static blocks read\n"
      "only call.channel and call.medium.",
      "@compile --state --schema --reads --format --page", 0, -1, tplc_lint, NULL },
    { "dump", "TEMPLATE [compile flags]\nTEMPLATE --tokens|--ast [compile flags]\nVIEWS.so --name SYMBOL",
      "Prints the disassembly: offset, opcode, operands, source line. --tokens prints the scanner's\n"
      "tokens (one a line: LINE:COL-LINE:COL, kind, quoted text), --ast the parser's tree (one node a\n"
      "line, indented: field, kind, LINE:COL, operator, value).",
      "@compile --tokens --ast --name", 1, 1, tplc_dump, NULL },
    { "compile",
      "TEMPLATE [compile flags] [--lang L] [--strip-source] [--depfile FILE] -o OUT.tplb\n"
      "TEMPLATE [compile flags] [--lang L] --emit c [--native] [--name SYMBOL] [--depfile FILE] -o OUT.c",
      "Compiles TEMPLATE to a .tplb file, or to C source defining a tpl_static_program.\n"
      "--lang L binds L into the program: tr() uses it when the render sets no language.",
      "@compile --lang --strip-source --emit --native --name --depfile -o", 1, 1, tplc_compile, NULL },
    { "prompt",
      "create NAME (--template TEXT | --file PATH) [--syntax fmt|jinja|erb] [--profile P] [--tr-key K]... [--lang L]\n"
      "list [--prefix P] [--json]\n"
      "show NAME[:N]|ID [--json]\n"
      "versions NAME [--all] [--json]\n"
      "remove NAME[:N]|ID\n"
      "render NAME[:N]|ID [--args JSON | --state FILE] [--lang L] [--remember FACT]...\n"
      "tr-set NAME SOURCE LANG TARGET [--dict D]\n"
      "tr-list NAME [--lang L] [--json]\n"
      "tr-bind NAME DICT\n"
      "tr-unbind NAME DICT\n"
      "tr-export (NAME | --dict D) --lang L -o FILE.po\n"
      "tr-import FILE.po [--dict D]",
      "Prompts as versioned, translatable objects in a store (DESIGN.md §10): every verb takes\n"
      "--store PATH (SQLite) or --store postgresql://... (default $TPL_STORE, else ./.tpl/store.db).\n"
      "Exit status: 0 ok, 1 template error or missing prompt/version, 2 usage or store I/O error.",
      "", 0, -1, NULL, tplc_prompt },
    { "tr-extract", "TEMPLATE... -o CATALOG.json|FILE.pot [--lang L] [compile flags]",
      "Writes every literal tr() text (Jinja and ERB), fmt template string and Jinja gettext message\n"
      "({% trans %}, _(), gettext(), ngettext(), pgettext(), npgettext()) as a catalog skeleton, or\n"
      "with -o FILE.pot (or .po) as a gettext PO template (msgctxt, msgid_plural, #: references,\n"
      "#, python-format), as Babel extracts them.",
      "@compile --lang -o", 1, -1, tplc_tr_extract, NULL },
};

static const size_t ncommands = sizeof commands / sizeof *commands;

static const flag *find_flag(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof flags / sizeof *flags; i++)
        if (strlen(flags[i].name) == len && memcmp(flags[i].name, name, len) == 0) return &flags[i];
    return NULL;
}

/* Whether word (NUL-terminated) is one of the space-separated words of list. */
static bool in_list(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = list; *p;) {
        while (*p == ' ') p++;
        const char *e = p;
        while (*e && *e != ' ') e++;
        if ((size_t)(e - p) == n && memcmp(p, word, n) == 0) return true;
        p = e;
    }
    return false;
}

static bool accepts(const tplc_command *c, const char *flagname)
{
    if (in_list(c->flags, flagname)) return true;
    for (size_t g = 0; g < sizeof groups / sizeof *groups; g++)
        if (in_list(c->flags, groups[g].name) && in_list(groups[g].flags, flagname)) return true;
    return false;
}

static void print_synopsis(FILE *f, const tplc_command *c, const char *first)
{
    const char *s = c->synopsis;
    size_t indent = strlen(first) + 5 + strlen(c->name) + 1;
    fprintf(f, "%stplc %s ", first, c->name);
    bool alt = false; /* a second form starts with TEMPLATE again */
    while (*s) {
        const char *e = strchr(s, '\n');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        fwrite(s, 1, n, f);
        fputc('\n', f);
        if (!e) break;
        s = e + 1;
        alt = strncmp(s, "TEMPLATE", 8) == 0 || strncmp(s, "DIR ", 4) == 0 || strncmp(s, "--page ", 7) == 0 ||
              strcmp(c->name, "prompt") == 0; /* one form per verb */
        if (alt) fprintf(f, "%*stplc %s ", (int)strlen(first), "", c->name);
        else fprintf(f, "%*s", (int)indent, "");
    }
}

/* tplc NAME --help: the synopsis, the summary and every flag the command takes. */
static void command_help(FILE *f, const tplc_command *c)
{
    print_synopsis(f, c, "usage: ");
    fprintf(f, "\n%s\n", c->summary);
    bool any = false;
    for (size_t i = 0; i < sizeof flags / sizeof *flags; i++) {
        const flag *fl = &flags[i];
        if (!c->run || !accepts(c, fl->name)) continue;
        if (!any) fputs("\nflags:\n", f);
        any = true;
        char head[64];
        snprintf(head, sizeof head, "%s%s%s", fl->name, fl->metavar ? " " : "",
                 fl->metavar ? (fl->choices ? fl->choices : fl->metavar) : "");
        fprintf(f, "  %-28s %s\n", head, fl->help);
    }
    fputs("\nTEMPLATE - reads standard input (once: not with --state -). --flag=value and -- work.\n"
          "Exit status: 0 success, 1 template error, 2 usage or I/O error. More: man tplc.\n", f);
}

static void usage(FILE *f)
{
    for (size_t i = 0; i < ncommands; i++) print_synopsis(f, &commands[i], i ? "       " : "usage: ");
    fputs("       tplc SUBCOMMAND --help\n"
          "       tplc --version\n", f);
}

static void main_help(void)
{
    usage(stdout);
    fputs("\nThe syntax follows the extension (.erb ERB, .fmt/.txt format strings, else Jinja) unless\n"
          "--syntax says otherwise; TEMPLATE - reads standard input. compile flags: --syntax, --profile,\n"
          "--trim-blocks, --lstrip-blocks, --keep-trailing-newline, --strict, --tidy, --autoescape,\n"
          "--extension, --max-compile-memory "
          "(default 1G). Render limits\n"
          "(defaults): --fuel 20000000 instructions, --max-depth 200, --max-output 64M, --max-memory 256M.\n"
          "Exit status: 0 success, 1 template error, 2 usage or I/O error. More: man tplc and the README.\n",
          stdout);
}

/* Parses a positive number with an optional K/M/G suffix (bytes only). */
bool tplc_parse_number(const char *s, bool suffixes, uint64_t max, uint64_t *out)
{
    if (*s < '0' || *s > '9') return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno == ERANGE) return false;
    unsigned shift = 0;
    if (suffixes && *end && !end[1]) {
        shift = *end == 'K' || *end == 'k' ? 10 : *end == 'M' || *end == 'm' ? 20 : *end == 'G' || *end == 'g' ? 30 : 99;
        if (shift == 99) return false;
        end++;
    }
    if (*end || v == 0 || v > (max >> shift)) return false;
    *out = (uint64_t)v << shift;
    return true;
}

/* Stores one flag's value. Returns false after printing a usage error. */
static bool set_flag(tplc_opts *o, const flag *fl, const char *val)
{
    char *field = (char *)o + fl->off;
    const char *cmd = o->cmd->name;
    if (fl->choices) {
        char buf[64];
        snprintf(buf, sizeof buf, "%s", fl->choices);
        for (char *p = buf; *p; p++) if (*p == '|') *p = ' ';
        if (!in_list(buf, val) || !*val) {
            fprintf(stderr, "tplc %s: %s takes %s (got '%s')\n", cmd, fl->name, fl->choices, val);
            return false;
        }
    }
    switch (fl->kind) {
    case F_BOOL:
        *(bool *)field = true;
        return true;
    case F_STR:
        if (*(const char **)field) {
            fprintf(stderr, "tplc %s: %s given twice\n", cmd, fl->name);
            return false;
        }
        *(const char **)field = val;
        return true;
    case F_LIST: {
        tplc_list *l = (tplc_list *)field;
        l->v[l->n++] = val;
        return true;
    }
    case F_CASE: {
        uint64_t v = 0;
        if (o->case_n >= 0) { fprintf(stderr, "tplc %s: --case given twice\n", cmd); return false; }
        if (strcmp(val, "0") == 0) v = 0;
        else if (!tplc_parse_number(val, false, LONG_MAX, &v)) {
            fprintf(stderr, "tplc %s: --case needs a non-negative number (got '%s')\n", cmd, val);
            return false;
        }
        o->case_n = (long)v;
        return true;
    }
    case F_COUNT:
    case F_DEPTH:
    case F_BYTES: {
        uint64_t v;
        if (!tplc_parse_number(val, fl->kind == F_BYTES, fl->kind == F_DEPTH ? UINT32_MAX : UINT64_MAX, &v)) {
            fprintf(stderr, "tplc %s: %s needs a positive number%s (got '%s')\n", cmd, fl->name,
                    fl->kind == F_BYTES ? " of bytes (K, M, G suffixes allowed)" : "", val);
            return false;
        }
        if (fl->kind == F_DEPTH) *(uint32_t *)field = (uint32_t)v;
        else *(uint64_t *)field = v;
        return true;
    }
    }
    return false;
}

/* Parses argv[2..] for command c. Returns 0, 1 after printing help (exit 0), or -1 after a usage
 * error. */
static int parse_args(int argc, char **argv, const tplc_command *c, tplc_opts *o)
{
    o->cmd = c;
    o->case_n = -1;
    tplc_list *lists[] = { &o->args, &o->facts, &o->catalogs, &o->trkeys, &o->extensions };
    for (size_t i = 0; i < sizeof lists / sizeof *lists; i++)
        if (!(lists[i]->v = calloc((size_t)argc + 1, sizeof *lists[i]->v))) { fprintf(stderr, "tplc: out of memory\n"); return -1; }
    bool dashdash = false;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (dashdash || a[0] != '-' || a[1] == 0) {
            o->args.v[o->args.n++] = a;
            continue;
        }
        if (strcmp(a, "--") == 0) { dashdash = true; continue; }
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) { command_help(stdout, c); return 1; }
        const char *eq = strncmp(a, "--", 2) == 0 ? strchr(a, '=') : NULL;
        size_t nl = eq ? (size_t)(eq - a) : strlen(a);
        const flag *fl = find_flag(a, nl);
        if (!fl) {
            fprintf(stderr, "tplc %s: unknown flag %.*s (tplc %s --help lists its flags)\n", c->name, (int)nl, a, c->name);
            return -1;
        }
        if (!accepts(c, fl->name)) {
            fprintf(stderr, "tplc %s: %s does not apply to %s (tplc %s --help lists its flags)\n", c->name, fl->name,
                    c->name, c->name);
            return -1;
        }
        const char *val = NULL;
        if (fl->kind == F_BOOL) {
            if (eq) { fprintf(stderr, "tplc %s: %s takes no value\n", c->name, fl->name); return -1; }
        } else if (eq) {
            val = eq + 1;
        } else if (++i < argc) {
            val = argv[i];
        } else {
            fprintf(stderr, "tplc %s: %s needs a value\n", c->name, fl->name);
            return -1;
        }
        if (!set_flag(o, fl, val)) return -1;
    }
    o->tpl = o->args.n ? o->args.v[0] : NULL;
    if (o->args.n < c->min_args || (c->max_args >= 0 && o->args.n > c->max_args)) {
        if (o->args.n < c->min_args) fprintf(stderr, "tplc %s: a TEMPLATE is needed\n", c->name);
        else fprintf(stderr, "tplc %s: unexpected argument %s\n", c->name, o->args.v[c->max_args]);
        return -1;
    }
    /* combinations */
    if (o->state && o->golden) { fprintf(stderr, "tplc %s: --state and --golden exclude each other\n", c->name); return -1; }
    if (o->state && o->schema) { fprintf(stderr, "tplc %s: give --state or --schema, not both\n", c->name); return -1; }
    if (o->case_n >= 0 && !o->golden) { fprintf(stderr, "tplc %s: --case needs --golden\n", c->name); return -1; }
    int stdin_uses = (o->state && strcmp(o->state, "-") == 0) + (o->golden && strcmp(o->golden, "-") == 0) +
                     (o->schema && strcmp(o->schema, "-") == 0);
    for (int i = 0; i < o->args.n; i++) stdin_uses += strcmp(o->args.v[i], "-") == 0;
    for (int i = 0; i < o->catalogs.n; i++) stdin_uses += strcmp(o->catalogs.v[i], "-") == 0;
    if (stdin_uses > 1) {
        fprintf(stderr, "tplc %s: standard input (-) can be read only once (TEMPLATE -, --state -, ...)\n", c->name);
        return -1;
    }
    size_t tl = o->tpl ? strlen(o->tpl) : 0;
    bool shared = tl > 3 && strcmp(o->tpl + tl - 3, ".so") == 0; /* render/dump VIEWS.so --name SYMBOL */
    if (o->name && !(o->emit && strcmp(o->emit, "c") == 0) && !shared) {
        fprintf(stderr, "tplc %s: --name applies to --emit c (or names the program of a .so)\n", c->name);
        return -1;
    }
    if (o->native && !(o->emit && strcmp(o->emit, "c") == 0)) {
        fprintf(stderr, "tplc %s: --native applies to --emit c\n", c->name);
        return -1;
    }
    if (o->depfile && (!o->out || strcmp(o->out, "-") == 0)) {
        fprintf(stderr, "tplc %s: --depfile needs -o OUT (a file: the rule's target)\n", c->name);
        return -1;
    }
    return 0;
}

static void free_opts(tplc_opts *o)
{
    free(o->args.v);
    free(o->facts.v);
    free(o->catalogs.v);
    free(o->trkeys.v);
    free(o->extensions.v);
}

/* Standard output must really have been written: a full disk is an I/O error (exit 2). */
static int finish(int rc)
{
    if (fflush(stdout) != 0 || ferror(stdout) || fclose(stdout) != 0) {
        int e = errno ? errno : EIO;
        fprintf(stderr, "tplc: error: cannot write standard output: %s\n", strerror(e));
        return TPLC_EXIT_USAGE;
    }
    return rc;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--version") == 0) {
        printf("tplc %s\n", TPL_VERSION_STRING);
        return finish(0);
    }
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        main_help();
        return finish(0);
    }
    if (argc < 2 || argv[1][0] == '-') {
        if (argc >= 2) fprintf(stderr, "tplc: expected a subcommand before %s\n", argv[1]);
        usage(stderr);
        return TPLC_EXIT_USAGE;
    }
    const tplc_command *c = NULL;
    for (size_t i = 0; i < ncommands && !c; i++)
        if (strcmp(commands[i].name, argv[1]) == 0) c = &commands[i];
    if (!c) {
        fprintf(stderr, "tplc: unknown subcommand '%s' (", argv[1]);
        for (size_t i = 0; i < ncommands; i++) fprintf(stderr, "%s%s", i ? ", " : "", commands[i].name);
        fprintf(stderr, "; tplc --help)\n");
        return TPLC_EXIT_USAGE;
    }
    if (c->run_raw) {
        if (argc == 3 && (strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0)) {
            command_help(stdout, c);
            return finish(0);
        }
        return finish(c->run_raw(argc - 1, argv + 1));
    }
    tplc_opts o;
    memset(&o, 0, sizeof o);
    int p = parse_args(argc, argv, c, &o);
    int rc = p < 0 ? TPLC_EXIT_USAGE : p > 0 ? 0 : c->run(&o);
    free_opts(&o);
    return finish(rc);
}
