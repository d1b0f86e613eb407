/* tpl — template compiler and VM for agent prompts.  Public API.
 *
 * Conventions (DESIGN.md §6):
 *  - Opaque types; every function returns a tpl_status (TPL_OK = 0) unless stated otherwise.
 *  - Strings are UTF-8 with an explicit byte length; they need not be NUL-terminated.
 *  - Ownership is stated per function. "Borrowed" means the callee keeps no reference after it
 *    returns; "owned by X" means the pointer dies with X.
 *  - A compiled tpl_program is immutable and may be rendered from many threads at once, each
 *    thread with its own tpl_render.
 *  - Errors never longjmp through host frames: a failing call returns a status and fills the
 *    tpl_error record of the object it was called on.
 *  - NULL (issue 13 §3): a function given a NULL object or a NULL output pointer returns
 *    TPL_ERR_USAGE (when it has a tpl_render or tpl_error record, with "FN: WHAT is NULL" in
 *    it) and writes nothing else; functions without a status tolerate NULL as stated on each
 *    (free-style functions do nothing, queries return 0/NULL). Optional arguments say so.
 *  - Re-entrancy: while a render context renders (or parses state, adds a fact, sets `call`),
 *    the host callbacks it runs (host functions, remembers, allocator) must not change it:
 *    such a call returns TPL_ERR_USAGE (a void function does nothing) and tpl_render_error
 *    reports "render context busy"; the running render goes on unaffected. Other render
 *    contexts may be used freely from a callback.
 *  - Text from the host (facts, `call` channel/medium, language, tr keys, host function
 *    results) must be UTF-8: invalid UTF-8 is refused with TPL_ERR_VALUE, so it never reaches
 *    the output; JSON text (state, catalogs, JSON results) is refused as invalid JSON.
 */
#ifndef TPL_H
#define TPL_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TPL_VERSION_STRING "0.1.0"

/* TPL_API marks every function of the public API. The library is built with hidden visibility
 * (-fvisibility=hidden), so libtpl.so exports exactly the TPL_API declarations (all named tpl_*;
 * tests/exports.py checks it) and a host's own symbols can never clash with tpl's internals.
 * A new public function must carry it. */
#if defined(__GNUC__) || defined(__clang__)
#define TPL_API __attribute__((visibility("default")))
#else
#define TPL_API
#endif

/* Status codes. Template errors (syntax, undefined, type, limit) are 1..63; usage and I/O
 * errors are 64 and above (the CLI maps them to exit status 1 and 2). */
typedef enum tpl_status {
    TPL_OK = 0,
    TPL_ERR_SYNTAX = 1,     /* the template does not parse; or uses a construct tpl refuses */
    TPL_ERR_UNDEFINED = 2,  /* strict undefined printed, iterated or tested; unknown ERB name */
    TPL_ERR_TYPE = 3,       /* operation on values of the wrong type, int64 overflow, 1/0 */
    TPL_ERR_LIMIT = 4,      /* fuel, depth, output or memory limit reached */
    TPL_ERR_RAISED = 5,     /* raise_exception() / a host function reported failure */
    TPL_ERR_VALUE = 6,      /* bad argument value (e.g. invalid format spec) */
    TPL_ERR_STATE = 7,      /* the render state (JSON) is invalid */
    TPL_ERR_USAGE = 64,     /* bad API use or option */
    TPL_ERR_IO = 65,        /* a file could not be read or written */
    TPL_ERR_NOMEM = 66,     /* allocation failed */
    TPL_ERR_CORRUPT = 67,   /* a .tplb failed verification */
} tpl_status;

/* What went wrong, finer than the status: one row of include/tpl_errors.def each, named for the
 * class the reference engine raises (tests/error_kinds.txt pins it against the oracle):
 *   TPL_EK_NONE                 no error
 *   TPL_EK_SYNTAX               TemplateSyntaxError / SyntaxError: does not parse, or tpl refuses it
 *   TPL_EK_ASSERTION            TemplateAssertionError (status SYNTAX): Jinja2's code generator
 *                               refuses it (unknown filter or test, block defined twice, ...)
 *   TPL_EK_TEMPLATE_NOT_FOUND,  TemplateNotFound, TemplatesNotFound (status SYNTAX): include,
 *   TPL_EK_TEMPLATES_NOT_FOUND  import or extends of a template the loader does not have
 *   TPL_EK_FORMAT, _INDEX       ValueError, IndexError (status SYNTAX): a format string str.format refuses
 *   TPL_EK_UNDEFINED            UndefinedError / NameError
 *   TPL_EK_TYPE                 TypeError; TPL_EK_ZERO_DIVISION ZeroDivisionError; TPL_EK_OVERFLOW
 *                               OverflowError / RangeError; TPL_EK_ATTRIBUTE AttributeError /
 *                               NoMethodError; TPL_EK_FROZEN FrozenError (status TYPE)
 *   TPL_EK_VALUE                ValueError / ArgumentError; TPL_EK_KEY KeyError; TPL_EK_INDEX
 *                               IndexError; TPL_EK_REGEXP RegexpError; TPL_EK_FLOAT_DOMAIN
 *                               FloatDomainError; TPL_EK_STOP_ITERATION StopIteration;
 *                               TPL_EK_FILTER_ARGUMENT FilterArgumentError (status VALUE)
 *   TPL_EK_RAISED               raise_exception() or a host function failed; TPL_EK_RUNTIME
 *                               TemplateRuntimeError (a required block, extends twice, an unknown
 *                               filter reached at render time); TPL_EK_RUNTIME_ERROR RuntimeError;
 *                               TPL_EK_SECURITY SecurityError; TPL_EK_TEMPLATE TemplateError
 *                               (status RAISED)
 *   TPL_EK_LIMIT, _FUEL, _DEPTH, _OUTPUT_LIMIT, _MEMORY_LIMIT, _COMPILE_MEMORY_LIMIT
 *                               a limit reached (status LIMIT; the message names the limit)
 *   TPL_EK_STATE, _USAGE, _IO, _NOMEM, _CORRUPT   the statuses of the same names
 * Every kind has one status; a status's default kind (TPL_EK_LIMIT for a limit tpl has no finer
 * kind for, ...) is tpl_status_kind(status). New kinds are appended (the values are ABI). */
typedef enum tpl_error_kind {
#define TPL_ERROR_KIND(id, status, name, py, rb, fmt) TPL_EK_##id,
#include "tpl_errors.def"
#undef TPL_ERROR_KIND
    TPL_EK__COUNT
} tpl_error_kind;

/* Where an error happened. Line and column are 1-based; the column counts code points.
 * line == 0 means no location. All strings are owned by the object the error came from and stay
 * valid until its next failing call or its destruction. kind is status's refinement
 * (tpl_error_kind); records a host fills itself with kind 0 (TPL_EK_NONE) mean tpl_status_kind of
 * their status. */
typedef struct tpl_error {
    tpl_status status;
    const char *message;    /* without location, e.g. "'name' is undefined" */
    const char *file;       /* template name given at compile time */
    uint32_t line, column;
    const char *source_line;/* the source line (no newline), or NULL */
    tpl_error_kind kind;    /* TPL_EK_*: e.g. TPL_EK_FUEL for a TPL_ERR_LIMIT from the fuel */
} tpl_error;


/* Template syntaxes (DESIGN.md §2). */
typedef enum tpl_syntax { TPL_SYNTAX_JINJA = 0, TPL_SYNTAX_ERB = 1, TPL_SYNTAX_FMT = 2 } tpl_syntax;

/* The name of an error kind ("fuel", "zero_division", ...; tpl_errors.def), or "unknown" for a
 * value that is not a kind. Static storage. */
TPL_API const char *tpl_error_kind_name(tpl_error_kind kind);
/* The exception the reference engine of `syntax` raises for an error of this kind: Jinja2's
 * (Python, also for TPL_SYNTAX_FMT) or ERB's (Ruby), e.g. "ZeroDivisionError"; "" when it has
 * none (tpl's own limits, API and file errors) or kind is not a kind. Static storage. */
TPL_API const char *tpl_error_exception(tpl_error_kind kind, tpl_syntax syntax);
/* The status errors of this kind are reported with (TPL_OK for TPL_EK_NONE or a value that is not
 * a kind). */
TPL_API tpl_status tpl_error_kind_status(tpl_error_kind kind);
/* The default kind of a status: the first tpl_errors.def row with it (TPL_EK_NONE for TPL_OK or
 * a value that is not a status). */
TPL_API tpl_error_kind tpl_status_kind(tpl_status status);

/* Loads the template named by include, import or extends (`name` is not NUL-terminated).
 * Returns a malloc'd buffer the compiler frees with free(), with *len set; NULL when there is
 * no such template. Called during tpl_compile (a name that is a string constant: tpl_options'
 * loader), and during tpl_render_run for a name computed when the template runs (the render
 * context's loader, tpl_render_set_loader), possibly from several threads at once when a program
 * renders on several contexts. */
typedef char *(*tpl_loader_fn)(void *data, const char *name, size_t name_len, size_t *len);

/* ---- host functions: extra filters and global functions a host adds ----
 *
 * Value-passing convention: JSON text. A host function receives its positional arguments as a
 * JSON array (a filter's subject first: `x|f(1)` passes [x, 1]) and its keyword arguments as a
 * JSON object ("{}" when none); strings are UTF-8, integers stay integers, None/nil is null,
 * tuples are arrays. An undefined argument is null (with `strict`, passing one is the usual
 * undefined error instead); a value JSON cannot carry (a macro, a function) is a TPL_ERR_TYPE
 * error before the call. The function sets its result with tpl_host_return_json (any JSON
 * value: objects become dicts/hashes) or tpl_host_return_str (a plain string); without either
 * the result is None/nil. It returns 0 on success and nonzero on failure: the render then stops
 * with TPL_ERR_RAISED and an error located at the call, "host function 'NAME' failed" plus the
 * message given to tpl_host_fail, if any. Nothing unwinds through host frames (no longjmp).
 * A host function may not change the render context that is calling it: tpl_render_run and
 * the other changing functions on it return TPL_ERR_USAGE ("render context busy"); it may use
 * other render contexts. */

/* One call of a host function. Every pointer is borrowed for the duration of the call. */
typedef struct tpl_host_call {
    const char *name;           /* the function's name (NUL-terminated) */
    const char *args_json;      /* JSON array of the positional arguments (NUL-terminated) */
    size_t args_len;
    const char *kwargs_json;    /* JSON object of the keyword arguments (NUL-terminated) */
    size_t kwargs_len;
} tpl_host_call;

/* A host function. `data` is the tpl_host_func's data. Returns 0 on success, nonzero on failure. */
typedef int (*tpl_host_fn)(void *data, tpl_host_call *call);

/* Whether a host function is a filter (`x|name(args)`), a global function (`name(args)`;
 * in ERB a receiver-less call `name(args)`) or a Jinja test (`x is name(args)`: the subject
 * first; its result is used as is, as Jinja2's call_test does). */
typedef enum tpl_host_kind { TPL_HOST_FILTER = 0, TPL_HOST_GLOBAL = 1, TPL_HOST_TEST = 2 } tpl_host_kind;

/* An entry of a host-function table. At compile time only name and kind are used (fn and data
 * may be NULL); at render time (tpl_render_set_host_funcs) fn implements the function. With
 * fn = tpl_host_value_fn and data pointing at a tpl_host_object, the function is that host
 * object instead (see "host values" below): its class's `call` callback receives the
 * arguments as values (tpl_val, no JSON; a filter's or test's subject first) and returns the
 * result as a value — what a language package binds its own callables with (issue 17). */
typedef struct tpl_host_func {
    const char *name;           /* NUL-terminated, an identifier */
    tpl_host_kind kind;
    tpl_host_fn fn;
    void *data;                 /* passed to fn (borrowed) */
} tpl_host_func;

/* A host object as a host function: the data of an entry whose fn is tpl_host_value_fn
 * (borrowed, like data; cls is a tpl_host_class, declared below). */
typedef struct tpl_host_object {
    const struct tpl_host_class *cls;
    void *obj;
} tpl_host_object;
/* The marker fn of such entries. tpl calls the object's `call` callback instead; called
 * directly (with JSON) it fails: returns 1. */
TPL_API int tpl_host_value_fn(void *data, tpl_host_call *call);

/* Sets the call's result from JSON text (borrowed; parsed and copied into the render). Returns
 * TPL_ERR_VALUE for invalid JSON, including invalid UTF-8 (the call then fails: the render stops
 * with TPL_ERR_VALUE, "host function 'NAME' failed: invalid result JSON: ..." — TPL_ERR_RAISED
 * when the function also returns nonzero), TPL_ERR_NOMEM on allocation failure, TPL_ERR_USAGE
 * when call or json is NULL (the result is then unchanged). */
TPL_API tpl_status tpl_host_return_json(tpl_host_call *call, const char *json, size_t len);
/* Sets the call's result to a string (borrowed; copied). TPL_ERR_NOMEM on allocation failure;
 * TPL_ERR_VALUE when s is not UTF-8 (the call then fails as for invalid JSON above);
 * TPL_ERR_USAGE when call or s is NULL. */
TPL_API tpl_status tpl_host_return_str(tpl_host_call *call, const char *s, size_t len);
/* Gives the reason of a failure (NUL-terminated, borrowed; copied): the render's error message
 * becomes "host function 'NAME' failed: MSG" when the function then returns nonzero. NULL call:
 * nothing; NULL msg: no reason. */
TPL_API void tpl_host_fail(tpl_host_call *call, const char *msg);

/* Compile-time options. Zero-initialise, then set fields; tpl_options_profile() fills a profile.
 * Profiles (DESIGN.md §2): "jinja2" (Jinja2 defaults), "pinecall" (trim_blocks, lstrip_blocks,
 * keep_trailing_newline, strict, tidy), "hf" (trim_blocks, lstrip_blocks, loop controls,
 * raise_exception, strftime_now, the transformers tojson). */
typedef struct tpl_options {
    tpl_syntax syntax;
    bool trim_blocks;           /* as Jinja2's trim_blocks */
    bool lstrip_blocks;         /* as Jinja2's lstrip_blocks */
    bool keep_trailing_newline; /* as Jinja2's keep_trailing_newline */
    bool strict;                /* StrictUndefined instead of Undefined */
    bool tidy;                  /* rstrip lines, squeeze 3+ newlines to 2, strip both ends */
    bool hf;                    /* Hugging Face chat-template environment */
    tpl_loader_fn loader;       /* include/import/extends resolution (NULL: none; they then fail) */
    void *loader_data;          /* passed to loader (borrowed) */
    /* Host filters and global functions templates may call (borrowed, read during tpl_compile
     * only). They are resolved at compile time: a name that is neither builtin nor in this table
     * is still a compile error, and a host entry takes precedence over a builtin of the same name
     * and kind. The program records the names it calls (tpl_program_host_functions; .tplb and
     * --emit c keep them); a render binds implementations by name (tpl_render_set_host_funcs).
     * A host global function is called even when the state has a variable of that name, and is
     * callable only directly (`name(...)`), not as a value. */
    const tpl_host_func *host_funcs;
    size_t nhost_funcs;
    /* The program's bound language (NUL-terminated UTF-8, borrowed; copied into the program;
     * NULL or "": none). tr() and format-string translation use it when neither the call nor
     * the render (tpl_render_set_lang) gives a language (DESIGN.md §3; `tplc compile --lang`).
     * Kept by .tplb files (format 4) and --emit c; tpl_program_options returns it. */
    const char *lang;
    /* Memory one tpl_compile may take for its syntax trees (the template's and those it loads),
     * the compiler's scratch and the program's constants, in bytes; 0: the default, 1 GiB
     * (TPL_DEFAULT_COMPILE_MEMORY). Past it the compile fails with TPL_ERR_LIMIT "compile memory
     * limit reached (N bytes)", located at the construct being parsed or compiled. Kept by
     * tpl_options_profile; not stored in the program. */
    uint64_t max_compile_memory;
    /* Jinja2 Environment settings beyond the profiles (issue 17: tpl.jinja2). Compile-time only:
     * the code reflects them; .tplb does not store them (a loaded program's tpl_program_options
     * reports them false). Jinja only; tpl_options_profile sets them false. */
    bool autoescape;            /* Environment(autoescape=True): every template (and what it
                                   includes) as inside {% autoescape true %}, without its scope */
    bool loop_controls;         /* the jinja2.ext.loopcontrols extension: {% break %} and
                                   {% continue %} (always on in the hf profile) */
    bool do_statement;          /* the jinja2.ext.do extension: {% do expr %} evaluates expr
                                   and drops the value */
    bool defer_missing;         /* a template an include or import names that the loader does
                                   not find is loaded when the statement runs (the render's
                                   loader; TemplateNotFound then, as Jinja2 raises it), not a
                                   compile error; without it only such statements in code that
                                   may not run (an if's branch, a loop, a macro) are deferred */
    /* Environment(finalize=f): the name of a host filter (an entry of host_funcs, kind
     * TPL_HOST_FILTER; NUL-terminated, borrowed, read during tpl_compile only) applied to the
     * value of every output expression {{ ... }} before it is printed (escaped first under
     * autoescape), constants included; template text is not finalized (Jinja2's semantics).
     * NULL: none. A name host_funcs does not list is a compile error. */
    const char *finalize;
    /* Environment(undefined=ChainableUndefined): an attribute, item or slice of an undefined
     * value is that undefined value (not an error); it prints, tests and iterates as the
     * lenient Undefined. Jinja only; ignored under strict. */
    bool chainable_undefined;
    /* Environment(undefined=DebugUndefined): printing an undefined value (or its str(), as `~`
     * takes it) gives "{{ name }}" for a missing variable and "{{ no such element: dict
     * object['key'] }}" for a missing attribute or item, as Jinja2's DebugUndefined.__str__;
     * otherwise the lenient Undefined. Jinja only; ignored under strict. These two are read
     * when the program runs but are not kept by .tplb files (a loaded program is lenient). */
    bool debug_undefined;
    /* ERB only: compile for a render with a `self` object (tpl_render_set_self_val; the Ruby
     * gem's Tpl::ERB#result(binding)). A receiver-less call of a method that is not one of tpl's
     * Kernel builtins (`helper(x)`) then calls self's method of that name when it runs; without
     * a self it is the NoMethodError it is otherwise ("undefined method `helper' for
     * main:Object"), and without this option that error is decided at compile time (lint lists
     * it). Kept by .tplb files (an option bit); default false. */
    bool erb_self;
} tpl_options;

#define TPL_DEFAULT_COMPILE_MEMORY (1ull << 30)
/* tpl_limits.max_memory when 0: the render arena's default bytes (a host sizing its own buffers
 * by the limit, e.g. how many items of a host iterable to read, uses the same figure) */
#define TPL_DEFAULT_MAX_MEMORY (256ull << 20)

/* Fills *o with the named profile for the syntax (keeping o's loader and loader_data); returns
 * TPL_ERR_USAGE for an unknown name, a profile that does not apply to the syntax ("jinja2" and
 * "hf" are Jinja-only) or a NULL o. A NULL profile is the syntax's defaults. */
TPL_API tpl_status tpl_options_profile(tpl_options *o, tpl_syntax syntax, const char *profile);

/* Limits of one render. 0 means the default given beside each field. */
typedef struct tpl_limits {
    uint64_t fuel;          /* instructions per render (default 20,000,000) */
    uint32_t max_depth;     /* macro call / include depth (default 200) */
    uint64_t max_output;    /* output bytes (default 64 MiB) */
    uint64_t max_memory;    /* bytes of the state's values and the render's together (default
                             * 256 MiB): a render has what the state leaves of it */
} tpl_limits;

typedef struct tpl_program tpl_program;
typedef struct tpl_render tpl_render;

/* Allocator callbacks for a render context (tpl_render_new_with). `data` is passed to each
 * callback as is. alloc returns `size` bytes aligned to at least 16 (as malloc does on 64-bit
 * platforms; misaligned blocks are freed and treated as failure) or NULL; realloc resizes a
 * block from alloc (old_size is its current size) and returns NULL on failure leaving it intact;
 * free releases a block of `size` bytes (never called with NULL). The callbacks are called only
 * from the thread using the render context. */
typedef struct tpl_allocator {
    void *(*alloc)(void *data, size_t size);
    void *(*realloc)(void *data, void *ptr, size_t old_size, size_t new_size);
    void (*free)(void *data, void *ptr, size_t size);
    void *data;
} tpl_allocator;

/* Compiles a template. `name` is used in diagnostics (borrowed; copied; NULL: "<template>").
 * `src` is borrowed: the program owns copies of every string it needs. opts NULL: all defaults
 * (Jinja2's). On success *out is a new program the caller frees with tpl_program_free. On
 * failure returns TPL_ERR_SYNTAX (or NOMEM; USAGE when src or out is NULL) and, when err is not
 * NULL, fills *err; the strings in *err stay valid until tpl_error_clear(err). */
TPL_API tpl_status tpl_compile(const char *name, const char *src, size_t len, const tpl_options *opts,
                       tpl_program **out, tpl_error *err);
/* Compiles a template like tpl_compile, but reports every error it can find, not only the first
 * (`tplc lint`): after an error, the tag that holds it (Jinja `{% %}` `{{ }}`, ERB `<% %>`, a
 * format field) is set aside — a block opener is replaced by one of the same kind that parses,
 * so its end tag still matches; anything else by blanks, so later lines and columns stay the
 * same — and compilation resumes at the next tag. Recovery stops at an error outside any tag
 * (an unclosed block at the end), in an included template, after cap errors, or once the retries
 * have compiled 32 MiB of source in all (a big template reports its first errors); a later error
 * can be a consequence of an earlier one. Fills errs[0..n) in source order (each like
 * tpl_compile's *err, with the original source line; the caller clears each with tpl_error_clear;
 * errs[0] is tpl_compile's error when cap is 1) and returns n, the number
 * of errors found (at most cap; 0: the template compiles and, when out is not NULL, *out is the
 * program, as from tpl_compile; else *out is NULL). errs NULL or cap 0: only tells whether
 * there is an error (1) or not (0). */
TPL_API size_t tpl_compile_all(const char *name, const char *src, size_t len, const tpl_options *opts,
                               tpl_program **out, tpl_error *errs, size_t cap);
/* Frees a program (NULL: nothing). */
TPL_API void tpl_program_free(tpl_program *p);
/* Releases the strings of an error record filled by tpl_compile or a loader (no-op on a zeroed
 * record or NULL). */
TPL_API void tpl_error_clear(tpl_error *err);

/* Prints the program's disassembly (offset, opcode, operands, source line) to a malloc'd
 * string the caller frees with free(). NULL on allocation failure or when p is NULL. */
TPL_API char *tpl_disassemble(const tpl_program *p);

/* The scanner's tokens (tpl_dump_tokens) or the parser's tree (tpl_dump_ast) of a template, as
 * `tplc dump --tokens` / `--ast` print them (format: README.md "tplc dump", docs/architecture.md
 * "Tests by stage"): the same scanners and parsers tpl_compile runs, stopped after that stage.
 * name, src, len and opts as for tpl_compile (opts: syntax, trim_blocks, lstrip_blocks,
 * keep_trailing_newline, max_compile_memory; NULL: Jinja defaults); src need not be
 * NUL-terminated. On success *out is a malloc'd NUL-terminated text the caller frees with free().
 * Errors: the scanner's or parser's located error, as tpl_compile reports it (TPL_ERR_SYNTAX,
 * TPL_ERR_LIMIT, TPL_ERR_NOMEM), *out NULL; errors of later stages (unknown filters, a format
 * field that is positional) are not reported here. Release err with tpl_error_clear. */
TPL_API tpl_status tpl_dump_tokens(const char *name, const char *src, size_t len, const tpl_options *opts, char **out,
                                   tpl_error *err);
TPL_API tpl_status tpl_dump_ast(const char *name, const char *src, size_t len, const tpl_options *opts, char **out,
                                tpl_error *err);

/* ---- render ---- */

/* A render context: arena, output buffer, state, facts, language. Reusable: render many times;
 * each render resets the arena, so a steady-state render allocates nothing. Not thread-safe:
 * one tpl_render per thread. Free with tpl_render_free. limits NULL: every default. Returns NULL
 * when an allocation fails. */
TPL_API tpl_render *tpl_render_new(const tpl_limits *limits);
/* As tpl_render_new, with every block of the render context itself allocated through `alloc`
 * (copied; alloc->data is borrowed and must outlive the context): the context, the render arena
 * (values built while rendering), the state, facts and `call` arenas, the operand stack and
 * local slots, and the output buffer. As with malloc, a steady-state render allocates nothing.
 * Not routed through it: the translation catalogs (tpl_render_add_catalog_json and friends),
 * the JSON parser's temporary tree while parsing state or a host function's result, and
 * NFC normalisation scratch space, which use malloc. alloc NULL means malloc/realloc/free.
 * Returns NULL when an allocation fails or when alloc lacks a callback. tpl_render_free returns
 * everything through alloc->free. */
TPL_API tpl_render *tpl_render_new_with(const tpl_limits *limits, const tpl_allocator *alloc);
/* Frees a render context and everything it owns. NULL, or a call from a callback of r's own
 * running render: nothing. */
TPL_API void tpl_render_free(tpl_render *r);

/* Sets the template variables from a JSON object (UTF-8 text, borrowed). The previous state is
 * dropped. Returns TPL_ERR_STATE with the JSON's own line and column in the render's error on
 * invalid JSON (including invalid UTF-8) or when the top level is not an object; TPL_ERR_USAGE
 * when r or json is NULL. The state counts against the memory limit (tpl_limits.max_memory,
 * which the state and each render then share): JSON whose parse would need more (estimated from its structure
 * before parsing: ~250 bytes per object or array, ~64 per value, 2 per byte) or whose values
 * take more is TPL_ERR_LIMIT "state exceeds the memory limit (N bytes)", with no state set. */
TPL_API tpl_status tpl_render_set_state_json(tpl_render *r, const char *json, size_t len);
/* As tpl_render_set_state_json, reading the JSON from f (borrowed; read to the end of the
 * document, not closed) through a stdio buffer: the text is never whole in memory, which keeps
 * the peak of a large state down (tplc --state uses it). A seekable f is measured in a first
 * pass (the memory-limit estimate) and parsed from where it was; from a pipe only the state's
 * values are bounded, not the parser's tree. Errors as tpl_render_set_state_json; a read error
 * is TPL_ERR_STATE too; TPL_ERR_USAGE when r or f is NULL. */
TPL_API tpl_status tpl_render_set_state_file(tpl_render *r, FILE *f);
/* Binds host functions (tpl_host_func, see above) for the programs rendered with r: a program's
 * call of host function NAME of kind K runs the entry with that name and kind. `funcs` is
 * borrowed and must stay valid (and unchanged) while it is set; NULL/0 removes the table.
 * Persists across renders. A call whose function is not bound is a located TPL_ERR_UNDEFINED
 * render error ("no host filter named 'NAME' in this render context"). NULL r: nothing. */
TPL_API void tpl_render_set_host_funcs(tpl_render *r, const tpl_host_func *funcs, size_t n);
/* Sets the loader of the templates r's renders name by a value computed when they run (issue 14:
 * Jinja's `{% include name %}`, `{% include [a, b] %}`, `{% include x ignore missing %}`; a name
 * that is a string constant is resolved at compile time by tpl_options' loader, as before).
 * `data` is borrowed and must stay valid while it is set; NULL loader removes it. Persists
 * across renders. A template it loads is compiled with the options of the program that names it
 * (tidy off: the including template tidies the whole output; host functions: r's,
 * tpl_render_set_host_funcs) and kept with that program, once per loader, data and name (at
 * most 256 a program), until tpl_program_free; so the loader must give the same text for a name
 * while the program lives (Jinja2's cache without auto_reload). It renders with the including
 * frame's variables over the state (`without context`: none). Errors, located at the include
 * statement: TPL_EK_TEMPLATE_NOT_FOUND "template 'NAME' not found" (also without a loader),
 * TPL_EK_TEMPLATES_NOT_FOUND for a list none of which exists, the loaded template's compile
 * error as "in 'NAME' at L:C: MESSAGE" with its kind, TPL_EK_DEPTH when includes nest deeper
 * than tpl_limits.max_depth (a template that includes itself). NULL r: nothing. */
TPL_API void tpl_render_set_loader(tpl_render *r, tpl_loader_fn loader, void *data);

/* ---- host values (issue 17): a host's own values without JSON ----
 *
 * A tpl_val is a 16-byte handle to one value, passed and copied by value. Scalars (None, bool,
 * int, float) need no render context. Strings, lists, maps and host objects live in a render
 * context's value memory: built outside a render they belong to the context's state (dropped
 * by tpl_render_reset_state, tpl_render_set_state_json/_val/_file and tpl_render_free); built
 * from a host-object callback during tpl_render_run they belong to that render (dropped when
 * the next render starts). Handles into dropped memory must not be used. Lists and maps are
 * mutable while the host builds them; once handed to the render (state or callback result)
 * they must not change. All sizes count against tpl_limits.max_memory: past it a constructor
 * returns TPL_ERR_LIMIT. Values built for one render context must not be used with another.
 *
 * A host object is an opaque pointer plus a class (tpl_host_class: callbacks for attribute,
 * item, iteration, length, call, truthiness, str and resolve). The VM reads it lazily: a
 * render calls back only for the paths the template actually reads (obj.name, obj[key], a for
 * loop over it, a call, printing it). Callbacks run only inside tpl_render_run on r's thread;
 * a host object is never touched after tpl_render_run returns (the host keeps it alive for as
 * long as a value of r holds it: until the state is dropped or the render ends). Designed for
 * the language packages: Python's objects (getattr, mapping items, iteration, calls with
 * args/kwargs) and Ruby's (send, [], each) both map onto the same callbacks. */
typedef struct tpl_val { uint64_t opaque_[2]; } tpl_val;

/* The kind of a value (tpl_val_kind). TPL_VAL_OTHER is a template-only value (a macro, a
 * builtin function, a loop object): a host can only print or pass it back. */
typedef enum tpl_val_kind {
    TPL_VAL_UNDEFINED = 0, TPL_VAL_NONE, TPL_VAL_BOOL, TPL_VAL_INT, TPL_VAL_FLOAT, TPL_VAL_STR,
    TPL_VAL_LIST, TPL_VAL_TUPLE, TPL_VAL_MAP, TPL_VAL_HOST, TPL_VAL_OTHER,
    TPL_VAL_BIGINT, /* an integer past int64 (Python's and Ruby's ints are unbounded): its decimal
                     * text from tpl_val_as_str; built with tpl_val_int_text */
    TPL_VAL_RATIONAL, /* a Ruby Rational (ERB: 3r, Rational(1, 3), 2 ** -2): its text "NUM/DEN"
                       * (reduced, DEN > 0) from tpl_val_as_str; built with tpl_val_rational_text */
} tpl_val_kind;

/* tpl_val_str / tpl_val_list flags. */
enum {
    TPL_VAL_MARKUP = 1,   /* string: markup-safe (Jinja2 Markup, an object with __html__) */
    TPL_VAL_AS_TUPLE = 2, /* list: a Python tuple (prints (1, 2)) */
    /* string: s is not copied, the value points at it: s must stay valid and unchanged for as
     * long as the value can be used (until the state is dropped, or, for a value built in a
     * callback, until the render ends). Saves the copy of a host string the host keeps alive
     * anyway (Python: a reference to the str held for the render). */
    TPL_VAL_BORROW = 4,
    /* string: the host guarantees s is valid UTF-8 (a Python str's UTF-8 buffer), so tpl does
     * not check it again. Invalid bytes under this flag are undefined behaviour. */
    TPL_VAL_UTF8_VALID = 8,
    TPL_VAL_SYMBOL = 16,  /* string: a Ruby Symbol (ERB: inspect prints :name; otherwise the
                           * string it names, as tpl's ERB treats symbols: DESIGN.md §2) */
    TPL_VAL_FROZEN = 32,  /* string: a frozen Ruby String (ERB: frozen? is true, and a method that
                           * changes it in place is Ruby's FrozenError) */
};

/* One host-object callback's result: TPL_HOST_OK with *out set; TPL_HOST_MISSING: no such
 * attribute/item (the template sees an undefined value, as Jinja2 does for a missing
 * attribute), or for the other callbacks "not supported" (the VM then falls back: iteration,
 * length, call and str are a TypeError naming the class, truth is true, resolve keeps the
 * object); TPL_HOST_ERROR after tpl_host_error: the render stops with TPL_ERR_RAISED, located
 * at the template instruction that called back, with the host's message and payload. A getattr
 * or getitem may also miss with TPL_HOST_OK and an undefined from tpl_val_undefined_missing (a
 * miss naming the host's class): the other lookup is still tried, and this undefined is the
 * result when it misses too. */
typedef enum tpl_host_result { TPL_HOST_OK = 0, TPL_HOST_MISSING = 1, TPL_HOST_ERROR = -1 } tpl_host_result;

/* The class of host objects. Every callback may be NULL (treated as TPL_HOST_MISSING). `obj`
 * is the pointer given to tpl_val_host; `r` the running render context, usable only for the
 * tpl_val constructors and readers and tpl_host_error (other calls on r get TPL_ERR_USAGE,
 * "render context busy"). Values the callbacks return are built with the constructors (in the
 * render's memory) or are values the host was given. The class is borrowed: it must outlive
 * every object of it (normally a static const). */
typedef struct tpl_host_class {
    const char *name;   /* the type's name in error messages ("object" when NULL) */
    /* obj.name in a template (Jinja `.`, and `[]` after the item lookup misses) */
    tpl_host_result (*getattr)(void *obj, tpl_render *r, const char *name, size_t len, tpl_val *out);
    /* obj[key] (Jinja `[]`, and `.` after the attribute lookup misses) */
    tpl_host_result (*getitem)(void *obj, tpl_render *r, tpl_val key, tpl_val *out);
    /* iteration (for loops, filters over it): *out a list of the items (a mapping: its keys); of
     * a one-shot iterator (type_of: TPL_HOST_ITERATOR), *out its next item, asked for each item
     * the VM takes, when it takes it; TPL_HOST_MISSING when it is exhausted */
    tpl_host_result (*iter)(void *obj, tpl_render *r, tpl_val *out);
    /* |length (without it, |length counts the resolved data) */
    tpl_host_result (*len)(void *obj, tpl_render *r, int64_t *out);
    /* obj(args..., name=value...): kwnames[i] are strings */
    tpl_host_result (*call)(void *obj, tpl_render *r, const tpl_val *args, size_t nargs, const tpl_val *kwnames,
                            const tpl_val *kwvals, size_t nkw, tpl_val *out);
    /* truthiness (Jinja if/and/or/not) */
    tpl_host_result (*truth)(void *obj, tpl_render *r, bool *out);
    /* printing: str(obj) (repr false) or repr(obj) inside a printed container (repr true); a str */
    tpl_host_result (*str)(void *obj, tpl_render *r, bool repr, tpl_val *out);
    /* the object as plain data, before a builtin filter, test or method gets it (a mapping as a
     * map, a sequence as a list); TPL_HOST_MISSING keeps the object as it is */
    tpl_host_result (*resolve)(void *obj, tpl_render *r, tpl_val *out);
    /* ERB: a Ruby method call obj.name(args..., name: value...) — `obj.name` without arguments
     * too — and, on the render's self object (tpl_render_set_self_val), a bare name that is not
     * a variable (`helper`), a receiver-less call (`helper(x)`) and an instance variable (name
     * "@x", no arguments). TPL_HOST_MISSING: obj has no such method; the VM then tries the
     * object's plain data (resolve, else iter) for the Enumerable methods tpl knows (map,
     * select, each...) and otherwise fails with Ruby's NoMethodError. A call with a block
     * (obj.each do |x| ... end) never reaches send: it iterates the object's items (resolve/
     * iter). NULL (e.g. a Python class): ERB method calls on the object are NoMethodErrors.
     * Ruby's operators on the object are sent as methods of its own (`obj + x` is name "+",
     * `obj == x` "==", `obj < x` "<"...); `x == obj` with x a String or a number is obj's "=="
     * (as Ruby's String#== and Integer#== ask an object not theirs), and `"str" + obj` is name
     * "(r+)" with args[0] the string: the host computes str + obj (TPL_HOST_MISSING: a TypeError). */
    tpl_host_result (*send)(void *obj, tpl_render *r, const char *name, size_t len, const tpl_val *args,
                            size_t nargs, const tpl_val *kwnames, const tpl_val *kwvals, size_t nkw, tpl_val *out);
    /* the object as a number, for Jinja's |int (as_float false: *out an int, Python's int(obj),
     * else int(float(obj))) and |float (as_float true: *out a float or an int, float(obj)).
     * TPL_HOST_MISSING: not a number (the filter gives its default); a value of another kind
     * counts as missing. */
    tpl_host_result (*number)(void *obj, tpl_render *r, bool as_float, tpl_val *out);
    /* the object's own type (a Python package's objects share one class): its name for error
     * messages (borrowed, NUL-terminated, valid while obj is; NULL: the class's name), and in
     * *numeric (0 when not set) TPL_HOST_NUMBER for a number (Python's numbers.Number: Decimal,
     * Fraction, complex...), with TPL_HOST_INTEGER for an int and TPL_HOST_FLOAT for a float:
     * Jinja's tests number, integer and float. tpl does no arithmetic on such objects itself:
     * an operator, comparison or numeric filter on one asks arith below, and without it is a
     * TypeError naming this type. */
    const char *(*type_of)(void *obj, unsigned *numeric);
    /* the object's own HTML (markupsafe's __html__): *out a string, which escaping the object
     * gives as markup (Jinja's |e and autoescape, |safe, |forceescape escapes it again);
     * TPL_HOST_MISSING: none (its str is escaped). Printing, `~` and |string use str. */
    tpl_host_result (*html)(void *obj, tpl_render *r, tpl_val *out);
    /* obj == other (Jinja `==`, `!=`; also `other == obj` with other not a host object, as Python
     * asks the object when the other side's __eq__ declines): *out the truth of the host's
     * equality (Python: obj == other, which may raise: TPL_HOST_ERROR ends the render with it).
     * NULL or TPL_HOST_MISSING: tpl's own equality (an object equals only itself). */
    tpl_host_result (*eq)(void *obj, tpl_render *r, tpl_val other, bool *out);
    /* Arithmetic and comparison on the host's own numbers (type_of: TPL_HOST_NUMBER; Python's
     * Decimal, Fraction, an int/float subclass with methods). Called when an operand a or b is
     * such an object of this class (obj is a's when it is, else b's) and the other is not
     * undefined, for what tpl cannot compute itself. op: a binary operator "+", "-", "*", "/",
     * "//", "%", "**"; a comparison "==" or "<" (the VM takes *out's truthiness; sorting asks
     * a > b as b < a); "==", "!=", "<", "<=", ">", ">=" are also asked of objects that are not
     * numbers, for Jinja's `a == b`, `a <= b`... and the tests eq, ne, lt, le, gt, ge (*out
     * printed as itself when it is no bool; its truth for a condition or select; MISSING: for
     * "=="/"!=" the eq callback, for an order tpl's own: a < b, else b < a, else equal); unary, b none: "neg" (-a), "pos" (+a), "abs"; Jinja's |round: "round"
     * (round(a, b), b an int or none), "ceil" and "floor" (math.ceil/floor(a * 10**b) / 10**b,
     * b an int); "key" (b none): a as a dict key, the int or float equal to a that hashes as a
     * does (Python: Decimal(1) is the key 1; MISSING when a equals no int or float, e.g.
     * Decimal('0.1'): then only host keys are compared with it), what a dict lookup of a
     * (`a in {1: x}`, `{1: x}[a]`) and |unique use; "key" is asked of every host object of the
     * class, not only numbers (TPL_HOST_ERROR: a is not hashable, Python's TypeError). "key=="
     * (a a dict's key, b the key looked up; either is an object of the class or a tuple holding
     * one): whether a dict holding a finds it under b (Python: hash(a) == hash(b), then a == b,
     * identity first), *out its truth; asked for the pairs of keys tpl cannot decide ({d: 1,
     * 1: 2}, (d,) in {(1,): x}, an object with its own __hash__ and __eq__ in a dict or |unique).
     * "find" (a the key looked up: an object of the class or a tuple holding one; b a map, read
     * only): the dict lookup of a among b's keys in one call, *out the int index of the first key
     * that "key==" would match, or -1 (Python: hash(a) once, then == only for keys of an equal
     * hash); MISSING: tpl asks "key==" of each key instead.
     * *out: the result (a number of tpl's or a host object). TPL_HOST_MISSING: not
     * supported (the VM's TypeError naming the type, as without the callback). Appended last:
     * NULL (a class written before it) is that TypeError. */
    tpl_host_result (*arith)(void *obj, tpl_render *r, const char *op, tpl_val a, tpl_val b, tpl_val *out);
} tpl_host_class;
/* tpl_host_class.type_of's numeric kinds; TPL_HOST_CALLABLE (not numeric) marks an object
 * Jinja's `callable` test is true for (Python's callable(obj): a function, a bound method, a
 * class, an object with __call__) */
enum { TPL_HOST_NUMBER = 1, TPL_HOST_INTEGER = 2, TPL_HOST_FLOAT = 4, TPL_HOST_CALLABLE = 8,
       /* a one-shot iterator (Python's generator, map(), iter(list)): the VM's iterator of its
        * items, read from the host as they are taken (the iter callback, a call per item),
        * as Jinja2 takes from a generator (|first one item, `x in it` up to the match, a loop
        * item by item as it runs, `break` leaving the rest unread) */
       TPL_HOST_ITERATOR = 16 };

/* Scalars (no render context, cannot fail). */
TPL_API tpl_val tpl_val_none(void);
TPL_API tpl_val tpl_val_bool(bool b);
TPL_API tpl_val tpl_val_int(int64_t i);
TPL_API tpl_val tpl_val_float(double d);
/* An undefined value, as a missing variable is (Jinja2's Undefined: `is defined` is false, it
 * prints as the render's undefined values print, an attribute of it is an UndefinedError unless
 * chainable): what a host hands over for its own undefined objects (tpl.jinja2: an Undefined
 * instance a Python callable returns) or where Jinja2 makes a value undefined. */
TPL_API tpl_val tpl_val_undefined(void);
/* An undefined value carrying text (len bytes of UTF-8, copied into r's value memory): with hint
 * false, a missing variable of that name ("'text' is undefined"; DebugUndefined prints
 * "{{ text }}"); with hint true, Jinja2's Undefined(hint=text): the UndefinedError's message is
 * text, DebugUndefined prints "{{ undefined value printed: text }}". TPL_ERR_VALUE when text is
 * not UTF-8 or longer than 4 GiB - 1, TPL_ERR_LIMIT over the memory limit, TPL_ERR_USAGE for
 * NULL r or out, or NULL text with len > 0. */
TPL_API tpl_status tpl_val_undefined_text(tpl_render *r, const char *text, size_t len, bool hint, tpl_val *out);
/* An undefined value for a missing attribute (item false: "'OWNER' has no attribute 'NAME'") or
 * item (item true: "OWNER has no element NAME", name then the key's repr) of a host object whose
 * class Jinja2 names OWNER (object_type_repr: "__main__.Foo object"); DebugUndefined prints
 * "{{ no such element: OWNER['NAME'] }}" (the item's repr as given). What a host's getattr or
 * getitem hands over for a miss so that messages name its own class (issue 17). Texts are UTF-8,
 * copied into r's value memory; errors as tpl_val_undefined_text (NULL owner or name with a
 * length: TPL_ERR_USAGE). */
TPL_API tpl_status tpl_val_undefined_missing(tpl_render *r, const char *owner, size_t owner_len, const char *name,
                                             size_t name_len, bool item, tpl_val *out);
/* An integer of any size from its text s (len bytes, borrowed): digits in base (2..36, letters
 * either case) after an optional '-' or '+', no prefix, no '_'; a Python int or Ruby Integer past
 * int64 (Python: format(n, 'x'), base 16). A value that fits int64 is an ordinary int
 * (TPL_VAL_INT), a larger one TPL_VAL_BIGINT. TPL_ERR_VALUE when s is not such a number,
 * TPL_ERR_LIMIT past 2**20 bits (tpl's integer limit, README) or the memory limit, TPL_ERR_USAGE
 * for NULL r or out, NULL s with len > 0, or a base outside 2..36. */
TPL_API tpl_status tpl_val_int_text(tpl_render *r, const char *s, size_t len, int base, tpl_val *out);
/* A Ruby Rational (TPL_VAL_RATIONAL) from its text s (len bytes, borrowed): decimal "NUM/DEN" (an
 * optional '-' on NUM, DEN > 0; reduced here), or "NUM" (NUM/1). TPL_ERR_VALUE when s is not such a
 * number or DEN is 0, TPL_ERR_LIMIT past 2**20 bits or the memory limit, TPL_ERR_USAGE for NULL r or
 * out, or NULL s with len > 0. */
TPL_API tpl_status tpl_val_rational_text(tpl_render *r, const char *s, size_t len, tpl_val *out);
/* A string: s (len bytes of UTF-8, borrowed) is copied into r's value memory; flags: any of
 * TPL_VAL_MARKUP, TPL_VAL_BORROW (not copied: s must outlive the value, see above) and
 * TPL_VAL_UTF8_VALID (not checked). TPL_ERR_VALUE when s is not UTF-8 or longer than
 * 4 GiB - 1, TPL_ERR_LIMIT over the memory limit, TPL_ERR_USAGE for NULL r, s (with len > 0)
 * or out. */
TPL_API tpl_status tpl_val_str(tpl_render *r, const char *s, size_t len, unsigned flags, tpl_val *out);
/* A string borrowing s (len bytes, valid UTF-8, not checked; s must outlive the value): what
 * tpl_val_str(r, s, len, TPL_VAL_BORROW | TPL_VAL_UTF8_VALID, out) makes, without a render
 * context, for a host converting many strings (Python's str values). TPL_ERR_VALUE when len is
 * 4 GiB or more, TPL_ERR_USAGE for NULL out or NULL s with len > 0. */
TPL_API tpl_status tpl_val_str_borrow(const char *s, size_t len, tpl_val *out);
/* An empty list with room for cap items (it grows); flags 0 or TPL_VAL_AS_TUPLE. */
TPL_API tpl_status tpl_val_list(tpl_render *r, size_t cap, unsigned flags, tpl_val *out);
/* Appends item to list (TPL_ERR_USAGE when list is not a list, TPL_ERR_LIMIT past the memory
 * limit or 2^32-1 items). */
TPL_API tpl_status tpl_val_list_push(tpl_render *r, tpl_val list, tpl_val item);
/* A Ruby Range begin..end (exclusive: begin...end): begin an int, float or string; end of the
 * same kind or none (an endless range). TPL_ERR_TYPE for other kinds (Ruby's "bad value for
 * range"), TPL_ERR_LIMIT past the memory limit, TPL_ERR_USAGE for NULL r or out. In a Jinja
 * or format template it is a list of three items (begin, end, exclusive). */
TPL_API tpl_status tpl_val_range(tpl_render *r, tpl_val begin, tpl_val end, bool exclusive, tpl_val *out);
/* An empty insertion-ordered map with room for cap entries (it grows). */
TPL_API tpl_status tpl_val_map(tpl_render *r, size_t cap, tpl_val *out);
/* Sets map[key] = val (a key set again keeps its first position). Keys are compared as Python
 * does (1 == 1.0 == True, (1, 2) == (1.0, 2)); a key must be a string, number, bool or None, or a
 * tuple (tpl_val_list_of/tpl_val_list with TPL_VAL_AS_TUPLE, not changed afterwards) of such keys
 * and tuples (Python's tuple keys); else TPL_ERR_TYPE (a list, a map, a host object). */
TPL_API tpl_status tpl_val_map_set(tpl_render *r, tpl_val map, tpl_val key, tpl_val val);
/* The hash tpl's maps keep for the string key s (len bytes; FNV-1a, fixed for a library
 * version): a host computes it once per key string it sees again and again (Python's dict keys,
 * Ruby's Symbols) and passes it to tpl_val_map_add_str. 0 for NULL s with len > 0. */
TPL_API uint64_t tpl_val_key_hash(const char *s, size_t len);
/* Appends the string key -> val to map without looking the key up: for a key the host knows is
 * not in map yet (the distinct str keys of a Python dict), so neither a duplicate scan nor
 * hashing is done. key is taken as tpl_val_str takes s under flags (TPL_VAL_BORROW: not copied,
 * it must outlive the value; TPL_VAL_UTF8_VALID: not checked; TPL_VAL_MARKUP and
 * TPL_VAL_SYMBOL); hash must be tpl_val_key_hash(key, len). A key already in map, or a wrong
 * hash, leaves a map in which that key may be found in either entry or not at all (never a
 * memory error). TPL_ERR_USAGE when r is NULL, map not a map or key NULL with len > 0;
 * TPL_ERR_VALUE for a key that is not UTF-8 (without TPL_VAL_UTF8_VALID); TPL_ERR_LIMIT past
 * the memory limit or 2^30 entries. */
TPL_API tpl_status tpl_val_map_add_str(tpl_render *r, tpl_val map, const char *key, size_t len, uint64_t hash,
                                       unsigned flags, tpl_val val);
/* One entry of tpl_val_map_of_str: a string key (as tpl_val_map_add_str's key, len and hash)
 * and its value. */
typedef struct tpl_str_entry {
    const char *key;
    size_t len;
    uint64_t hash;
    tpl_val val;
} tpl_str_entry;
/* A map of the n entries e at once, in their order: what tpl_val_map and n
 * tpl_val_map_add_str calls with flags build (the keys distinct, each hash
 * tpl_val_key_hash(key, len); the same caveats), in one allocation and one call (a host
 * converting a dict of str keys). e is read during the call only. TPL_ERR_USAGE when r or out
 * is NULL, e NULL with n > 0 or a key NULL with len > 0; TPL_ERR_VALUE for a key that is not
 * UTF-8 (without TPL_VAL_UTF8_VALID); TPL_ERR_LIMIT past the memory limit or 2^30 entries. */
TPL_API tpl_status tpl_val_map_of_str(tpl_render *r, const tpl_str_entry *e, size_t n, unsigned flags, tpl_val *out);
/* One entry of tpl_val_map_of_strs: a string key (key, len, hash as tpl_str_entry's) and a
 * string value (slen bytes at s). */
typedef struct tpl_str_str {
    const char *key;
    const char *s;
    uint32_t len, slen;
    uint64_t hash;
} tpl_str_str;
/* A map of the n entries e at once, each value a string: what tpl_val_map_of_str builds with
 * flags TPL_VAL_BORROW | TPL_VAL_UTF8_VALID and the values tpl_val_str_borrow(s, slen) — keys
 * and values borrowed (they must outlive the state's use of them) and valid UTF-8, unchecked.
 * The cheapest way for a host to hand over a dict of strings (a chat message). TPL_ERR_USAGE
 * when r or out is NULL, e NULL with n > 0, a key or value NULL with a length > 0, or a length
 * of UINT32_MAX; TPL_ERR_LIMIT past the memory limit or 2^30 entries. */
TPL_API tpl_status tpl_val_map_of_strs(tpl_render *r, const tpl_str_str *e, size_t n, tpl_val *out);
/* A list (flags 0 or TPL_VAL_AS_TUPLE) of n maps at once, map i of counts[i] entries of e (the
 * entries of map 0 first, then those of map 1...), each as tpl_val_map_of_strs builds it (the same
 * borrowing and caveats): the list and its maps in one allocation and one call (a host converting
 * a list of small dicts of strings: a chat's messages). e and counts are read during the call
 * only. TPL_ERR_USAGE when r or out is NULL, counts NULL with n > 0, e NULL with entries, or an
 * entry as tpl_val_map_of_strs refuses it; TPL_ERR_LIMIT past the memory limit, 2^31 maps or
 * 2^30 entries in a map. */
TPL_API tpl_status tpl_val_list_of_str_maps(tpl_render *r, const tpl_str_str *e, const uint32_t *counts, size_t n,
                                            unsigned flags, tpl_val *out);
/* A list (flags 0 or TPL_VAL_AS_TUPLE) of the n values items at once, in one allocation: what
 * tpl_val_list and n tpl_val_list_push calls build. items is read during the call only.
 * TPL_ERR_USAGE when r or out is NULL or items NULL with n > 0; TPL_ERR_LIMIT past the memory
 * limit or 2^31 items. */
TPL_API tpl_status tpl_val_list_of(tpl_render *r, const tpl_val *items, size_t n, unsigned flags, tpl_val *out);
/* *v marked as a frozen Ruby object: a list (not a tuple) as a frozen Array, a map as a frozen
 * Hash, a string as TPL_VAL_FROZEN marks it (ERB: frozen? is true, and a method that changes it
 * in place is Ruby's FrozenError). TPL_ERR_USAGE for NULL v, TPL_ERR_TYPE for another kind. */
TPL_API tpl_status tpl_val_freeze(tpl_val *v);
/* A host object (obj and cls borrowed; see tpl_host_class). TPL_ERR_USAGE when r or cls is
 * NULL. */
TPL_API tpl_status tpl_val_host(tpl_render *r, const tpl_host_class *cls, void *obj, tpl_val *out);

/* Readers (for callbacks receiving values, and for tests). Each is total: a reader of the
 * wrong kind returns 0/NULL/false/an undefined value. */
TPL_API tpl_val_kind tpl_val_kind_of(tpl_val v);
TPL_API bool tpl_val_as_bool(tpl_val v);          /* bool */
TPL_API int64_t tpl_val_as_int(tpl_val v);        /* int or bool */
TPL_API double tpl_val_as_float(tpl_val v);       /* float, int or bool */
/* str: the bytes (not NUL-terminated; valid as long as the value) and *len; an undefined value
 * gives the name that was missing; a TPL_VAL_BIGINT its decimal text ('-' and digits). */
TPL_API const char *tpl_val_as_str(tpl_val v, size_t *len);
TPL_API bool tpl_val_is_markup(tpl_val v);        /* a markup-safe string */
/* A string's flags as tpl_val_str takes them: TPL_VAL_MARKUP, TPL_VAL_SYMBOL (a Ruby Symbol: an
 * ERB :name), TPL_VAL_FROZEN (a frozen Ruby String); 0 for any other value. */
TPL_API unsigned tpl_val_str_flags(tpl_val v);
TPL_API size_t tpl_val_len(tpl_val v);            /* items of a list/tuple, entries of a map */
TPL_API tpl_val tpl_val_item(tpl_val v, size_t i);     /* list/tuple item i */
TPL_API tpl_val tpl_val_map_key(tpl_val v, size_t i);  /* map entry i's key (insertion order) */
TPL_API tpl_val tpl_val_map_value(tpl_val v, size_t i);/* map entry i's value */
TPL_API void *tpl_val_host_object(tpl_val v);     /* a host object's obj, else NULL */
TPL_API const tpl_host_class *tpl_val_host_class(tpl_val v); /* a host object's class, else NULL */
/* The Python class a value stands for, as type(x).__name__ prints it under Jinja2 3.1: "range",
 * "dict_keys", "dict_items", "dict_values", "generator", "Namespace", "Cycler", "Joiner",
 * "LoopContext", "Macro", "TemplateModule", "Markup", "list", "tuple", "dict", "str", ... (the kind
 * alone does not tell a range or a dict view from a list, nor a namespace from a dict): what a
 * host reads to hand its callables the types Jinja2 passes (issue 17). NULL for a host object (its
 * class is the host's). Static storage. */
TPL_API const char *tpl_val_type_name(tpl_val v);
/* A range (tpl_val_type_name "range", small or too large to hold its items): its start, stop and
 * step into out[0..2] (int or big int values) and true; false, out untouched, for any other value
 * or NULL out. */
TPL_API bool tpl_val_range_params(tpl_val v, tpl_val *out);
/* A dict view (tpl_val_type_name "dict_keys", "dict_items" or "dict_values"): the dict it views (a
 * map value: Python's views are live, so its entries now); an undefined value for any other value. */
TPL_API tpl_val tpl_val_view_dict(tpl_val v);

/* Drops r's state (the variables become none) and the values built for it, so that a new state
 * can be built with the constructors. TPL_ERR_USAGE for NULL r or a busy context. */
TPL_API tpl_status tpl_render_reset_state(tpl_render *r);
/* Sets the template variables to map (a tpl_val_map built on r since the last reset; keys must
 * be strings to be visible as names). TPL_ERR_USAGE when map is not a map or r is NULL/busy. */
TPL_API tpl_status tpl_render_set_state_val(tpl_render *r, tpl_val map);
/* Sets the template variables to values of program p's reads (tpl_program_reads, in its
 * order): read which[k] is the name whose value is vals[k], for k < n; the reads not named are
 * not set (a name neither the state nor the globals hold). The state is the map of those names
 * in the order given, as tpl_val_map_of_str with TPL_VAL_BORROW | TPL_VAL_UTF8_VALID and
 * tpl_render_set_state_val make it — its keys are p's own strings (the names tpl_program_reads
 * gives), so p must outlive the state; the values are built on r since the last reset and
 * which and vals are read during the call only — and when r then renders p over it, no name
 * given is looked up: each read finds its value at once. The fastest way for a host that has
 * matched its data to p's reads (say, a dict or Hash holding those names) to hand it over. A
 * read given twice: that name finds either value (never a memory error). TPL_ERR_USAGE when r
 * or p is NULL, r busy, which or vals NULL with n > 0, or a which[k] is not below the count
 * tpl_program_reads gives; TPL_ERR_NOMEM; TPL_ERR_LIMIT past the memory limit. */
TPL_API tpl_status tpl_render_set_state_reads(tpl_render *r, const tpl_program *p, const uint32_t *which,
                                              const tpl_val *vals, size_t n);
/* Sets r's globals to map (a tpl_val_map built on r since the last reset), or removes them
 * (tpl_val_none()): names below the state, as Jinja2's Environment.globals. A name the state
 * does not hold is looked up in the globals before the builtins, by the template and by every
 * template it includes or imports, with or without context (which see no state). Dropped with
 * the state and its values (tpl_render_reset_state, tpl_render_set_state_json/file); kept
 * across renders otherwise. TPL_ERR_USAGE when map is neither a map nor none, or r is
 * NULL/busy. */
TPL_API tpl_status tpl_render_set_globals_val(tpl_render *r, tpl_val map);
/* Sets the ERB `self` of r's renders (a host object built on r since the last reset, or none
 * to remove it; dropped with the state like the values built for it): a bare name that is
 * neither a local nor a state variable is self's method of that name (the class's send), an
 * instance variable @x is send "@x" (the state is not consulted, except as
 * tpl_render_set_self_ivars_in_state says), and in a program compiled
 * with tpl_options.erb_self a receiver-less call of an unknown method calls self's. Jinja and
 * format templates ignore it. TPL_ERR_USAGE when self is neither a host object nor none, or r
 * is NULL/busy. */
TPL_API tpl_status tpl_render_set_self_val(tpl_render *r, tpl_val self);
/* ERB with a self (tpl_render_set_self_val): in_state true — set before tpl_render_run — makes
 * an instance variable @x read the state's x, as without a self (the host has read self's
 * @ivars into the state, and nothing has changed them yet); false — also from a callback during
 * the run, once host code that may change them has run — makes @x self's again (send "@x") for
 * the rest of the render. tpl_render_set_self_val and tpl_render_reset_state set it false.
 * TPL_ERR_USAGE for NULL r, or in_state true while r is rendering. */
TPL_API tpl_status tpl_render_set_self_ivars_in_state(tpl_render *r, bool in_state);

/* From a host-object callback: the reason it fails (msg NUL-terminated, borrowed, copied; NULL:
 * none) and an opaque payload (say, the host language's exception object) the host gets back
 * with tpl_render_error_payload after tpl_render_run returns. The render's error message is
 * "CLASS.WHAT failed: MSG" (WHAT the callback: getattr 'name', call, ...). tpl never touches
 * or frees the payload; the host owns it. Return TPL_HOST_ERROR from the callback after it. */
TPL_API void tpl_host_error(tpl_render *r, const char *msg, void *payload);
/* From a callback of r's own running render: charges `units` of the render's fuel
 * (tpl_limits.fuel) for work the host does on the template's behalf that no instruction counts
 * — the items an iteration callback pulls from an endless host generator, say — so that the
 * render ends on its fuel as when the VM does the work. TPL_OK; TPL_ERR_LIMIT when the fuel
 * runs out (the render's located fuel error is set: return TPL_HOST_ERROR from the callback;
 * the render ends with that error, not the callback's); the render's error status when it has
 * failed already; TPL_ERR_USAGE for NULL r or r not rendering. */
TPL_API tpl_status tpl_render_charge(tpl_render *r, uint64_t units);
/* The fuel one item a host iterator yields costs (fuel stands for time: a host callback producing
 * and converting an item takes about a hundred instructions' time), charged by tpl for
 * TPL_HOST_ITERATOR items and by bindings per item of a host each they drain
 * (tpl_render_charge): an endless host iteration ends on the default fuel after 200,000 items, in
 * well under 2 s, not on the memory limit. */
#define TPL_HOST_ITEM_FUEL 100
/* The payload of the host error that ended r's last render (NULL when none; reset when a
 * render starts). */
TPL_API void *tpl_render_error_payload(const tpl_render *r);
/* From a callback of r's own running render (a host function or host-object callback): *out is
 * the value the template-level variable `name` (len bytes, borrowed) of the template r is running
 * holds now — a name its top level assigns ({% set %}, a macro, ...: Jinja2's Context.vars), once
 * assigned (an undefined value it was assigned counts, not the one a variable starts with that a
 * macro reads before the assignment); what a Jinja `pass_context` callable reads through its
 * Context (issue 17). The value
 * is r's (valid until the callback returns; read it with the tpl_val readers). TPL_ERR_UNDEFINED
 * when the template has no such variable or has not assigned it yet (the state and globals are
 * the host's own: it looks there then); TPL_ERR_USAGE when r, name (with len > 0) or out is NULL,
 * r is not rendering, or the running program keeps no names of its variables (a program loaded
 * from .tplb or a static one). *out is none on every failure (when out is not NULL). Only reads:
 * the render goes on unaffected. */
TPL_API tpl_status tpl_render_lookup(tpl_render *r, const char *name, size_t len, tpl_val *out);

/* From a callback of r's own running render (a host function or host-object callback): calls fn,
 * a callable value of the template the callback was given (a macro, a call block's caller, a
 * template function, a bound method), with nargs positional arguments and nkw keyword ones
 * (kwnames[i] strings), as the template calls it: *out its result (a macro's output, a string —
 * markup under autoescape), r's value, valid until the callback returns. It runs inside r's
 * render, under its limits (issue 17: Jinja2 hands Python callables Macro objects they can call).
 * On failure the render's error holds why and is returned; the render then ends with that
 * error when the callback returns, whatever it returns. TPL_ERR_USAGE when r or out is NULL,
 * args/kwnames/kwvals NULL with a count, a keyword name is not a string, or r is not rendering;
 * *out is none on every failure (when out is not NULL). */
TPL_API tpl_status tpl_render_call(tpl_render *r, tpl_val fn, const tpl_val *args, size_t nargs, const tpl_val *kwnames,
                                   const tpl_val *kwvals, size_t nkw, tpl_val *out);

/* From a callback of r's own running render, after a tpl_render_call that failed: the call's error
 * is taken back, so that the render goes on (a Python callable that catches the exception of the
 * macro it called, as Jinja2's render goes on; what the failed call printed is already dropped),
 * and copied to *taken (when not NULL; its strings are r's, valid until the callback returns or
 * r's next error). The error's payload (tpl_render_error_payload), when it had one, is the host's
 * from then on: read it first. TPL_OK when r had no error (*taken zeroed) or it is taken back;
 * the error's status, kept (*taken zeroed), when it is a limit's (fuel, memory, depth, output) or
 * out of memory: the render ends with it. TPL_ERR_USAGE when r is NULL or not rendering. What the
 * failed call allocated is given back when nothing made before it was changed by it and no host
 * callback ran inside it (a Jinja render whose memory in use before the call was at most 64 KiB):
 * values the call made, which the host never saw, die then, so a host catching a failing macro's
 * error in a loop runs in bounded memory. */
TPL_API tpl_status tpl_render_rescue(tpl_render *r, tpl_error *taken);

/* From a callback of r's own running render: marks r's memory, before the host converts the
 * arguments of a call it is about to make (tpl_render_call), so that tpl_render_release can give
 * back what the render allocated after it once the host has read the result. Marks nest: each
 * tpl_render_release takes back the newest. A mark costs a copy of the memory the render uses
 * (taken only for a Jinja render; while that and its variables take more than 64 KiB, marks
 * share one copy, up to 16 MiB, and their calls' memory is given back in batches, once it has
 * grown by as much as the copy: tpl_render_release). Marks left are dropped when the render ends. TPL_ERR_USAGE when
 * r is NULL or not rendering; TPL_ERR_NOMEM. */
TPL_API tpl_status tpl_render_mark(tpl_render *r);

/* From a callback of r's own running render: takes back the newest mark (tpl_render_mark). With
 * give_back, what r allocated since the mark (the converted arguments, the call's frames, its
 * result) is given back when nothing made before the mark points into it (what the calls wrote
 * there stays: a namespace's counter, a dict's int item; a string a call made and stored in an
 * older namespace, or a list it moved, keeps the memory), no host callback ran since, no list or
 * dict got a new item array and the render has no pending error — the host
 * must then hold no value r gave it since the mark (it converted the result, a string, to its
 * own). true when it was given back (a host macro loop: tpl.jinja2's Template.module, 100,000
 * calls in flat memory); false otherwise, or when r is NULL, not rendering or has no mark. A mark
 * of a render over 64 KiB may give back later, with a later call's release (the host keeps no
 * value of the call in either case: false then does not mean the memory stays). */
TPL_API bool tpl_render_release(tpl_render *r, bool give_back);

/* From a callback of r's own running render: *out is the template's `v.name` (name len bytes,
 * borrowed) of a value the callback was given, as the template reads it (a macro's name,
 * arguments, catch_kwargs, catch_varargs, caller: what Jinja2's Macro object shows Python;
 * issue 17). r's value, valid until the callback returns. Errors as tpl_render_call's (a
 * failure ends the render with it); TPL_ERR_USAGE when r, out or name (with len > 0) is NULL or
 * r is not rendering. */
TPL_API tpl_status tpl_render_getattr(tpl_render *r, tpl_val v, const char *name, size_t len, tpl_val *out);

/* The in-place changes of lists and dicts (Python's mutating methods: append, update, pop, ...)
 * r's renders have made so far, counted from r's creation: a host that mirrors a template's
 * changes into its own containers (tpl.jinja2: a Python list a callable returned, changed by
 * `{% do l.append(x) %}`) compares it with the figure it last saw and looks only when it moved.
 * 0 for a NULL r. */
TPL_API uint64_t tpl_render_changes(const tpl_render *r);

/* From a callback of r's own running render: the template's list or dict dst (a value r gave the
 * callback, made by r's render or by a conversion during it) holds, in place, what src (a list
 * or dict of the same kind built during the callback) holds: every holder of dst in the template
 * sees the new items (tpl.jinja2: a Python list a callable returned and later changed from
 * Python, as Jinja2's one object). TPL_ERR_USAGE when r is NULL or not rendering; TPL_ERR_TYPE
 * when dst and src are not both plain lists (not tuples, ranges or iterators) or both dicts (not
 * namespaces), or dst is not the render's own (the state's or a program constant). */
TPL_API tpl_status tpl_render_assign(tpl_render *r, tpl_val dst, tpl_val src);

/* Renders the program. On TPL_OK, *out and *out_len point at the output, owned by r and valid until
 * the next render or tpl_render_free; the output is NUL-terminated. On failure the render's error
 * (tpl_render_error) holds the status, message and template location. NULL p (say, after a
 * failed load), out or out_len: TPL_ERR_USAGE (in the render's error when r is not NULL);
 * *out and *out_len are NULL/0 on every failure. From a callback of r's own render:
 * TPL_ERR_USAGE "render context busy", and the running render is unaffected. */
TPL_API tpl_status tpl_render_run(tpl_render *r, const tpl_program *p, const char **out, size_t *out_len);
/* The last error of this render context (valid until the next call on r; status TPL_OK after a
 * successful call). Never NULL: for a NULL r a constant TPL_ERR_USAGE record "no render
 * context (NULL)", and from a callback of r's own running render a constant TPL_ERR_USAGE
 * record "render context busy". */
TPL_API const tpl_error *tpl_render_error(const tpl_render *r);

/* Formats an error as "FILE:LINE:COL: error: MESSAGE\n  source line\n  caret\n" into a malloc'd
 * string the caller frees (err is borrowed). Returns NULL on allocation failure or when err is
 * NULL. */
TPL_API char *tpl_error_format(const tpl_error *err);


/* ---- precompiled programs (.tplb files and C arrays; DESIGN.md §5) ---- */

/* Version of the .tplb format written by tpl_program_save; the loader accepts only this one. */
#define TPL_TPLB_VERSION 5

/* tpl_program_save flags. */
enum {
    TPL_SAVE_STRIP_SOURCE = 1, /* omit the normalised source: smaller, but runtime errors then
                                * carry a location without the source line */
    TPL_EMIT_NATIVE = 2,       /* tpl_program_emit_c only: also write the render as C (include/tpl_native.h:
                                * `tplc compile --emit c --native`); the file then includes tpl_native.h */
};

/* Serializes a program (from tpl_compile or a loader) to the .tplb format: magic, format
 * version, little-endian fields, CRC-32 of the payload, the options it was compiled with (and its
 * bound language), code,
 * constants, names, span table, macros, reads-set, source hash and (unless stripped) the
 * normalised source. On TPL_OK *out is a malloc'd buffer of *len bytes the caller frees with
 * free(). Returns TPL_ERR_NOMEM on allocation failure, TPL_ERR_USAGE when p, out or len is NULL
 * (*out and *len, when given, are then NULL/0). p is borrowed. */
TPL_API tpl_status tpl_program_save(const tpl_program *p, unsigned flags, void **out, size_t *len);

/* A sink for tpl_program_write: takes the next len bytes (borrowed for the call only) and returns
 * 0, or nonzero to stop the write. */
typedef int (*tpl_write_fn)(void *data, const void *bytes, size_t len);
/* Writes the bytes tpl_program_save would return through `write`, in pieces of at most 16 KiB,
 * without holding the whole file in memory (a compile's peak memory: issue 13 §1); the program
 * is read twice (its length and checksum come first in the header). `data` is passed to every
 * call. Returns TPL_OK; TPL_ERR_IO when write returned nonzero (it is not called again, and what
 * it received is an incomplete file); TPL_ERR_NOMEM on allocation failure; TPL_ERR_USAGE when p
 * or write is NULL (write is never called then). p is borrowed. */
TPL_API tpl_status tpl_program_write(const tpl_program *p, unsigned flags, tpl_write_fn write, void *data);

/* Fills a file for tpl_file_write: writes its whole contents through fd or, with TPL_FILE_BY_NAME
 * (for a library that takes a file name, such as libgettextpo), by opening `path`, a name of the
 * same new regular file while the call lasts (never the target itself: truncating it is safe).
 * Without TPL_FILE_BY_NAME path is NULL when fd is not a new file of tpl_file_write's (a stream,
 * a FIFO, a device, written as they are). Returns 0, or nonzero with errno set (EIO when errno is
 * 0). May be called a second time, from the start, with another fd and path (where the first new
 * file could not be named). */
typedef int (*tpl_fill_fn)(void *data, int fd, const char *path);
#define TPL_FILE_BY_NAME 1u  /* tpl_file_write flags: fill writes through path, not fd */
/* Writes the file at path so that a failed or killed write never leaves a partial or temporary
 * file, as tplc's -o does (one implementation for tplc and the prompt store): fill writes an
 * unnamed file in the target's directory (Linux's O_TMPFILE), which is synced, given the target's
 * mode (an existing file keeps its permissions; a new one gets 0666 less the umask), then a
 * temporary name (a link planted there is never followed) and renamed over the target, so even
 * SIGKILL leaves nothing behind (where O_TMPFILE or /proc is missing the file is named, O_EXCL,
 * from the start: SIGINT, SIGTERM, SIGHUP and SIGQUIT wait, blocked in the calling thread, while
 * it exists). Through a symlink (also a dangling one) the file it names is written and the link
 * kept. `-`, /dev/stdout, /dev/stderr, /dev/fd/N and /proc/self/fd/N are that descriptor, written
 * as it is (an append stays an append); a FIFO or device is written in place (with
 * TPL_FILE_BY_NAME through an unnamed temporary file, then copied). A directory is EISDIR. The
 * caller checks that path is not one of its inputs. Returns 0, or -1 with errno set (fill's errno
 * when it failed; EFBIG past the file size limit, whose SIGXFSZ is not delivered): the target is
 * then untouched (a stream or FIFO may have received part of it). NULL path or fill: -1 with
 * EINVAL, fill not called; "" is ENOENT. flags: 0 or TPL_FILE_BY_NAME. data is passed to fill. */
TPL_API int tpl_file_write(const char *path, unsigned flags, tpl_fill_fn fill, void *data);
/* Streams the output of r's renders (Jinja2's Template.generate): from now on tpl_render_run hands
 * the template's output to write in pieces as the render produces it (a piece whenever its output
 * buffer, 4 KiB and more, fills outside a macro call, call or set block or import, which collect
 * their own output; the rest when the render ends), and on TPL_OK *out is "" (*out_len 0). The
 * pieces are borrowed for the call only, cut anywhere (a UTF-8 sequence may span two); joined they
 * are the output tpl_render_run returns without it. A program compiled with tpl_options.tidy
 * gives its output in one piece at the end (tidy needs all of it). write returns 0, or nonzero to
 * stop the render: it fails with TPL_ERR_IO (kind TPL_EK_IO, "the output was refused by the
 * write callback"). A render that fails after some pieces were written does not take them back.
 * tpl_limits.max_output counts every byte written. write is called from the render (a callback:
 * r is busy); data is borrowed and must stay valid while it is set. NULL write: the output is
 * returned whole again (as without it). Persists across renders. NULL r: nothing. */
TPL_API void tpl_render_set_output(tpl_render *r, tpl_write_fn write, void *data);

/* True when data starts with the .tplb magic (it may still be corrupt); false for NULL data. */
TPL_API bool tpl_is_tplb(const void *data, size_t len);

/* Loads a program from .tplb bytes (borrowed: the program owns copies of everything it needs, so
 * data may be freed right after). Every load is verified before it returns: checksum, bounds,
 * opcodes, instruction boundaries, jump targets, constant/name/macro/builtin indexes, slot
 * indexes and operand stack depth on every path; hostile bytes give TPL_ERR_CORRUPT (or
 * TPL_ERR_NOMEM), never a crash. `name` (borrowed, may be NULL) names the bytes in the error.
 * On TPL_OK *out is a new program freed with tpl_program_free. On failure, when err is not
 * NULL, *err is filled; release it with tpl_error_clear. NULL data or out: TPL_ERR_USAGE. */
TPL_API tpl_status tpl_program_load(const char *name, const void *data, size_t len, tpl_program **out, tpl_error *err);

/* Writes C source defining `const struct tpl_static_program SYMBOL` (see tpl_static.h): the
 * bytecode, constants, names, spans and macros as const arrays, and the builtins the code calls
 * by name (the code's builtin operands index that table, as in a .tplb, so the file does not
 * depend on the order of the library's builtin list). A host links the file and calls
 * tpl_program_load_static(&SYMBOL, ...). `symbol` must be a C identifier the file can define
 * (else TPL_ERR_USAGE): not a C11, C23 or GNU keyword, not `main`, no leading `_`, not a macro or
 * type of the C headers the file includes (`NULL`, `stdout`, `bool`, `size_t`, `INT8_MAX`, ...),
 * not in tpl's namespace `tpl_`/`TPL_` (`tpl_view_...` is allowed). A libc or libtpl function of
 * the same name is not detected here (`tplc compile` refuses those too).
 * flags as for tpl_program_save. On TPL_OK *out is a malloc'd NUL-terminated string of *len bytes
 * the caller frees with free(). NULL p, symbol, out or len: TPL_ERR_USAGE. */
TPL_API tpl_status tpl_program_emit_c(const tpl_program *p, const char *symbol, unsigned flags, char **out, size_t *len);

/* A program compiled into the host binary by `tplc compile --emit c` (layout in tpl_static.h). */
typedef struct tpl_static_program tpl_static_program;

/* Loads a program from static data: the program's constants, names, spans, macros, name and
 * source point into *sp, which must outlive the program (it normally is a const global); the
 * code is copied with its builtin operands resolved by name (sp->builtins: an unknown builtin is
 * TPL_ERR_CORRUPT naming it; a file generated before builtins were named has none and is refused
 * with "regenerate"). The data is verified as tpl_program_load verifies bytes (minus the checksum,
 * which only .tplb files carry). On TPL_OK *out is freed with tpl_program_free (which releases
 * the descriptor and the code's copy). Errors as tpl_program_load; NULL sp or out: TPL_ERR_USAGE. */
TPL_API tpl_status tpl_program_load_static(const tpl_static_program *sp, tpl_program **out, tpl_error *err);

/* The reads-set: names of the state variables the program can read (loads of names that are not
 * local variables, a local variable where it may not be assigned yet — it reads the state then —,
 * ERB names and @names, format-string fields, and global function calls, which the state may
 * shadow), in first-use order of the name table. It may also name a local variable the analysis
 * cannot show assigned (one set in both branches of an if, for one); it never misses a state
 * variable the program can read, except what a template loaded at render time reads (a name
 * computed when it runs, tpl_program_needs_loader): for such a program a host gives the whole state. Stores up to cap names (pointers owned by p, not NUL-terminated) and their byte
 * lengths into names[] and lens[] (either may be NULL: not stored); returns the total count
 * (0 for a NULL p). */
TPL_API size_t tpl_program_reads(const tpl_program *p, const char **names, size_t *lens, size_t cap);

/* What a read of the render's scope is (tpl_program_reads_located). */
typedef enum tpl_read_kind {
    TPL_READ_STATE = 0, /* a state variable (name; as the reads-set: a local variable the analysis
                         * cannot show assigned counts too) */
    TPL_READ_CALL = 1,  /* the `call` builtin: attr names the field read (call.channel,
                         * call['medium'], ERB call[:claimed] or call.claimed); attr NULL when call
                         * is used some other way (passed, iterated, call.get(...)) */
    TPL_READ_FUNC = 2,  /* a global function called by name (remembers, range, tr...: builtins
                         * the state may shadow), or a builtin global loaded where the state is
                         * not visible (a macro imported without context calling remembers) */
    TPL_READ_HOST = 3,  /* a host function (filter or global; tpl_options.host_funcs) */
    TPL_READ_SELF = 4,  /* ERB: a receiver-less call of self's method (one no builtin answers, in
                         * a program compiled with tpl_options.erb_self; tpl_render_set_self_val):
                         * name is the method's; not in the reads-set, as it never reads the state */
} tpl_read_kind;

/* One read of a compiled program (tpl_program_reads_located). Pointers are owned by the program
 * (name and attr are not NUL-terminated; file is). */
typedef struct tpl_read {
    tpl_read_kind kind;
    const char *name;       /* the state name, "call", the function's name */
    size_t len;
    const char *attr;       /* TPL_READ_CALL: the field read, or NULL */
    size_t attr_len;
    const char *file;       /* the template the read is written in: the program's name, or the
                             * name (as spelled in include/import/extends) of a loaded template */
    uint32_t line, column;  /* 1-based; column in code points; in `file` */
    bool fallback;          /* TPL_READ_STATE: a local variable read where the analysis cannot show
                             * it assigned (it reads the state then); false for a direct state read */
    bool builtin;           /* the name is also a builtin global function of the library (range,
                             * remembers, tr...): the state may shadow it */
    bool ivar;              /* TPL_READ_STATE: an ERB instance variable @name (name without the @):
                             * self's when a self is set (tpl_render_set_self_val), else the state
                             * variable name; false for a bare name */
} tpl_read;

/* Every read of the render's scope in p, in code order, each with its kind and its own source
 * location, also inside included or imported templates and macro bodies, on every branch
 * whether taken or not (it is the code, not a render, that is inspected): the state-name reads
 * behind tpl_program_reads, reads of the `call` builtin and which field, global function calls
 * (remembers(...) among them) and host function calls. A page (tpl_page.h) refuses static
 * blocks from it. Stores up to cap entries into out (NULL: only counts) and returns the
 * total count (0 also when out of memory or p is NULL). Programs loaded from .tplb keep the locations;
 * static programs (tpl_program_load_static) locate reads by the span table instead (their
 * file is the program's name; in an included template, the include statement). */
TPL_API size_t tpl_program_reads_located(const tpl_program *p, tpl_read *out, size_t cap);

/* How serious a diagnostic is. */
typedef enum tpl_severity { TPL_SEVERITY_ERROR = 0, TPL_SEVERITY_WARNING = 1 } tpl_severity;

/* One finding about a template (tpl_program_deferred_errors). Strings are owned by the program
 * (message is not NUL-terminated: use message_len; file is). */
typedef struct tpl_diagnostic {
    tpl_severity severity;
    tpl_status status;      /* the status a render reaching it fails with */
    const char *file;       /* the template it is in: the program's name, or the name of a template
                             * whose code an include, import or extends put in the program */
    uint32_t line, column;  /* 1-based; column in code points */
    const char *message;
    size_t message_len;
} tpl_diagnostic;

/* The errors p defers to render time, in code order: Jinja2 compiles an unknown filter or test
 * in a branch, and a few other mistakes, into code that raises only when it runs (its "soft"
 * errors), so the compiled program carries them; a render that reaches one fails with that
 * status and message: Jinja2's TemplateRuntimeError (TPL_ERR_RAISED, kind TPL_EK_RUNTIME), or
 * for ERB the class Ruby raises, named at the message's end (TPL_EK_ATTRIBUTE for
 * "(NoMethodError)", TPL_EK_UNDEFINED for "(NameError)"). `tplc lint` reports them without rendering. Stores up to
 * cap entries into out (NULL: only counts) and returns the total count (0 for a NULL p). */
TPL_API size_t tpl_program_deferred_errors(const tpl_program *p, tpl_diagnostic *out, size_t cap);

/* The templates p's compilation loaded through the loader (include, import, extends, from ...
 * import: every name the loader returned a template for, transitively, in first-load order,
 * each once; names as the templates spelled them). Stores up to cap names (pointers owned by p,
 * NUL-terminated) and their byte lengths into names[] and lens[] (either may be NULL); returns
 * the total count. Build tools turn it into a depfile (tplc compile --depfile). Programs loaded
 * from .tplb bytes or static data have no dependency list (0); so has a NULL p. */
TPL_API size_t tpl_program_dependencies(const tpl_program *p, const char **names, size_t *lens, size_t cap);
/* Whether p names a template by a value computed when it runs (an include, import or extends
 * whose name is not a string constant, an extends inside an if, or an included or imported
 * template that extends, issue 14): its renders then need a loader (tpl_render_set_loader). .tplb
 * files and static programs keep it (it is an instruction of the code). False for a NULL p. */
TPL_API bool tpl_program_needs_loader(const tpl_program *p);

/* The host functions p calls, each (name, kind) once in code order. Stores up to cap entries
 * into out (may be NULL when cap is 0) with name pointing into p (NUL-terminated, owned by p),
 * fn and data NULL; returns the total count (0 for a NULL p; a NULL out only counts). */
TPL_API size_t tpl_program_host_functions(const tpl_program *p, tpl_host_func *out, size_t cap);

/* The options p was compiled with (owned by p; loader fields are NULL for loaded programs, and
 * host_funcs is always NULL: see tpl_program_host_functions). NULL for a NULL p. */
TPL_API const tpl_options *tpl_program_options(const tpl_program *p);

/* The XXH64 hash (seed 0, as the xxHash library computes it) of the source p was compiled from,
 * before normalisation: tools compare it with a template file to tell whether a .tplb is stale.
 * (Earlier builds stored FNV-1a 64 here: a .tplb they wrote keeps that value, so it reads as stale.)
 * 0 for a NULL p. */
TPL_API uint64_t tpl_program_source_hash(const tpl_program *p);

/* The program's name: the file name it was compiled under (tpl_compile's name; a .tplb and a
 * static program keep it), which its diagnostics name. NUL-terminated, owned by p; NULL for a
 * NULL p. tplc renders a program from a VIEWS.so with the loader reading beside this file. */
TPL_API const char *tpl_program_name(const tpl_program *p);

#ifdef __cplusplus
}
#endif
/* The prompt features (facts and remembers(), `call`, translation catalogs): their own section
 * of the API, declared in tpl_prompt.h and included here so that existing hosts keep compiling. */
#include "tpl_prompt.h"

#endif
