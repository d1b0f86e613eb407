"""tpl: compile Jinja2, ERB and str.format prompt templates to bytecode and render them
byte-identically to the reference engines, from Python (issue 17).

    import tpl
    t = tpl.Template("Hello {{ user.name }}!", profile="pinecall")
    t.render(user={"name": "Ann"})            # or t.render({"user": ...})

Values cross natively (dict in insertion order, list, tuple, str, int, float, bool, None);
any other object is read lazily through its attributes, items, iteration and calls.
`tpl.jinja2` is a drop-in for Jinja2's rendering API; `tpl.chat.apply_chat_template` renders
Hugging Face chat templates as transformers does.
"""
import builtins as _builtins
import json as _json
import operator as _operator
import os as _os
from collections.abc import Mapping as _Mapping

try:
    from . import _tpl
except ImportError:  # the build tree: _tpl beside the package (PYTHONPATH=build/python:python)
    import _tpl

__version__ = _tpl.version
__all__ = ["Template", "TemplateError", "TemplateSyntaxError", "UndefinedError", "TemplateRuntimeError",
           "LimitError", "CorruptError", "Limits", "TemplateAssertionError", "TemplateNotFound", "TemplatesNotFound",
           "FilterArgumentError", "SecurityError"]


class Macro:
    """A template's macro, or a call block's caller, as a Python callable gets it (Jinja2 hands a
    Macro): calling it runs it inside the render that handed it over (tpl_render_call), with
    positional and keyword arguments, and returns its output (Markup under autoescape with
    tpl.jinja2); the render's limits count it. Callable only while that render runs, from the
    callback it gave it to (RuntimeError otherwise); an error inside it raises its exception (as
    Jinja2's: a Python exception raised inside as itself), which Python may catch and go on
    (the render goes on), or let through (the render ends with it); a limit's ends the render.
    Jinja2's Macro attributes (name, arguments, catch_kwargs, catch_varargs, caller,
    explicit_caller) are read when it is handed over and stay readable."""

    __slots__ = ("_handle", "_value", "name", "arguments", "catch_kwargs", "catch_varargs", "caller",
                 "explicit_caller")

    def __init__(self, handle, value, info=None):
        self._handle = handle
        self._value = value
        for k, v in (info or {}).items():
            setattr(self, k, v)

    def __call__(self, *args, **kwargs):
        return _tpl.call(self._handle, self._value, args, kwargs or None)

    def __repr__(self):  # as Jinja2's Macro
        name = getattr(self, "name", None)
        return "<%s %s>" % (type(self).__name__, "anonymous" if name is None else repr(name))


# (the name tpl.TemplateCallable, as before; the class is Macro, as Jinja2's: type(m).__name__)
TemplateCallable = Macro


class TemplateError(Exception):
    """A template failed to compile, load or render. Attributes: status (tpl_status), message,
    name/filename (the template), lineno, column, source_line, formatted (FILE:LINE:COL: error:
    ... with the source line and a caret)."""

    exception = ""  # the Python exception Jinja2 raises for this error ("" for tpl's own)

    def __init__(self, message=None, name=None, lineno=None, column=None, source_line=None, status=0,
                 formatted=None):
        Exception.__init__(self, message)
        self.message = message
        self.name = self.filename = name
        self.lineno = lineno
        self.column = column
        self.source_line = source_line
        self.status = status
        self.formatted = formatted

    def __str__(self):
        return self.formatted.rstrip("\n") if self.formatted else str(self.message)


class TemplateSyntaxError(TemplateError):
    """The template does not parse, or uses a construct tpl refuses (status 1)."""


class UndefinedError(TemplateError):
    """A strict undefined value was printed, iterated or tested (status 2)."""


class TemplateRuntimeError(TemplateError):
    """A render failed: type error, raise_exception(), bad value, bad state (status 3, 5, 6, 7)."""


class LimitError(TemplateRuntimeError):
    """Fuel, depth, output or memory limit reached (status 4)."""


class CorruptError(TemplateError):
    """A .tplb failed verification (status 67)."""


# Jinja2's own classes for the finer kinds (include/tpl_errors.def, tpl_error_exception), each a
# subclass of the status class it had before, so `except tpl.TemplateSyntaxError` still catches
# an assertion error or a missing template.
class TemplateAssertionError(TemplateSyntaxError):
    """Jinja2's code generator refuses the template (unknown filter or test, block defined twice,
    extends not at the top level, ...): a TemplateSyntaxError, as in Jinja2."""

    exception = "TemplateAssertionError"


class TemplateNotFound(TemplateSyntaxError, LookupError):
    """An include, import or extends names a template the loader does not have (status 1)."""

    exception = "TemplateNotFound"


class TemplatesNotFound(TemplateNotFound):
    """None of the templates an include lists exists."""

    exception = "TemplatesNotFound"


class FilterArgumentError(TemplateRuntimeError):
    """A filter got an argument value it refuses (dictsort's by=, round's method=)."""

    exception = "FilterArgumentError"


class SecurityError(TemplateRuntimeError):
    """A mutating method called (tpl values are immutable, as in Jinja2's sandbox)."""

    exception = "SecurityError"


_STATUS = {1: TemplateSyntaxError, 2: UndefinedError, 4: LimitError, 67: CorruptError}
_JINJA = {c.exception: c for c in (TemplateAssertionError, TemplateNotFound, TemplatesNotFound, FilterArgumentError,
                                   SecurityError)}

# Render errors of the kinds Jinja2 reports as Python's own exceptions (include/tpl_errors.def,
# tpl_error_exception) are also instances of that exception: `except TypeError` catches a
# template's type error as it does with Jinja2, `except tpl.TemplateError` still catches it.
_BUILTIN = {}
for _name in ("TypeError", "ZeroDivisionError", "OverflowError", "ValueError", "RecursionError", "MemoryError",
              "OSError", "KeyError", "IndexError", "AttributeError", "StopIteration"):
    _BUILTIN[_name] = type("Template" + _name, (TemplateRuntimeError, getattr(_builtins, _name)),
                           {"__module__": __name__, "exception": _name,
                            "__doc__": "A render error Jinja2 raises as %s." % _name})
    globals()["Template" + _name] = _BUILTIN[_name]
    __all__.append("Template" + _name)
del _name


def _raise(err):
    status, message, name, line, column, source_line, formatted, exception = err
    cls = _JINJA.get(exception) or _STATUS.get(status) or _BUILTIN.get(exception, TemplateRuntimeError)
    e = cls(message, name, line or None, column or None, source_line, status, formatted)
    if exception and not cls.exception:
        e.exception = exception
    raise e


def _macro_error(err, jinja):
    """The exception a template's macro called from Python raises for tpl's error tuple err: tpl's
    (as Template.render raises it), under tpl.jinja2 (jinja true) Jinja2's. Python may catch it:
    the render goes on, as Jinja2's (_tpl's call)."""
    try:
        _raise(err)
    except TemplateError as e:
        if not jinja:
            return e
        from . import jinja2 as _j
        return _j._macro_exception(e)


class Limits(tuple):
    """Render limits (0 = the default): fuel (instructions, 20,000,000), max_depth (200),
    max_output (bytes, 64 MiB), max_memory (bytes, 256 MiB)."""

    def __new__(cls, fuel=0, max_depth=0, max_output=0, max_memory=0):
        # integers only, as range() takes them: a float, str or None is a TypeError, not truncated
        vals = tuple(_operator.index(v) for v in (fuel, max_depth, max_output, max_memory))
        for name, v, top in zip(("fuel", "max_depth", "max_output", "max_memory"), vals,
                                (2**64 - 1, 2**32 - 1, 2**64 - 1, 2**64 - 1)):
            if not 0 <= v <= top:
                raise ValueError(f"Limits: {name} must be between 0 (the default) and {top}, not {v}")
        return super().__new__(cls, vals)


_SYNTAX = {"jinja": 0, "erb": 1, "fmt": 2}
_EXT = {".jinja": "jinja", ".j2": "jinja", ".erb": "erb", ".fmt": "fmt", ".txt": "fmt"}
_COMPILE_OPTIONS = frozenset(("trim_blocks", "lstrip_blocks", "keep_trailing_newline", "strict", "tidy", "hf",
                              "autoescape", "loop_controls", "do_statement", "chainable_undefined", "debug_undefined",
                              "defer_missing"))
_RENDER_OPTIONS = frozenset(("facts", "remembers", "channel", "medium", "claimed", "lang", "catalogs", "tr_keys",
                             "limits", "markup", "undefined"))
_FUNC_KINDS = {"filters": 0, "tests": 2}  # tpl_host_kind
_FINALIZE = "tpl:finalize"  # the host filter name of finalize= (no template can name it)


def _render_args(opts):
    """The keyword arguments of _tpl.Program.render from the public render options."""
    out = {}
    if opts.get("facts") is not None:
        facts = opts["facts"]
        out["facts"] = [facts] if isinstance(facts, str) else list(facts)
    if opts.get("remembers") is not None:
        out["remembers"] = opts["remembers"]
    if any(opts.get(k) is not None for k in ("channel", "medium", "claimed")):
        out["call"] = (opts.get("channel"), opts.get("medium"), opts.get("claimed"))
    if opts.get("lang") is not None:
        out["lang"] = opts["lang"]
    if opts.get("catalogs") is not None:
        cats = opts["catalogs"]
        if isinstance(cats, (dict, str)):
            cats = [cats]
        out["catalogs"] = [_catalog_json(c) for c in cats]
    if opts.get("tr_keys") is not None:
        keys = opts["tr_keys"]
        out["tr_keys"] = [keys] if isinstance(keys, str) else list(keys)
    for k in ("markup", "undefined", "funcs"):
        if opts.get(k) is not None:
            out[k] = opts[k]
    if opts.get("limits") is not None:
        lim = opts["limits"]
        if isinstance(lim, dict):
            lim = Limits(**lim)
        elif not isinstance(lim, (tuple, list)):
            raise TypeError("limits must be a Limits, a dict or a tuple, not %s" % type(lim).__name__)
        out["limits"] = Limits(*lim)
    return out


def _catalog_json(c):
    """A catalog as JSON text: a str as it is, a dict (JSON object) dumped."""
    if isinstance(c, str):
        return c
    if isinstance(c, dict):
        return _json.dumps(c, ensure_ascii=False)
    raise TypeError("a catalog must be a dict or a JSON str, not %s" % type(c).__name__)


def _has_buffer(obj):
    try:
        memoryview(obj).release()
        return True
    except TypeError:
        return False


def _source_text(source):
    """Template source as str: a str, or UTF-8 bytes (a bytes-like object)."""
    if isinstance(source, str):
        return source
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source).decode("utf-8")
    raise TypeError("template source must be str or bytes, not %s" % type(source).__name__)


def _check_name(name):
    if name is not None and not isinstance(name, str):
        raise TypeError("name must be a str or None, not %s" % type(name).__name__)


class Template(_tpl.Program):
    """A compiled template (immutable; render it from any number of threads at once).

    Template(source, syntax="jinja"|"erb"|"fmt", profile=None|"jinja2"|"pinecall"|"hf", name=None,
             loader=None, **options)

    filters / tests: dicts of Python callables the template calls as filters (x|name(args))
    and tests (x is name(args)), with the subject first, also when named by a string in
    map/select/reject/selectattr/rejectattr; values cross as everywhere else.
    finalize (Jinja): a callable every output expression's value goes through before it is
    printed, as Jinja2's Environment(finalize=...).
    options: the compile options trim_blocks, lstrip_blocks, keep_trailing_newline, strict, tidy,
    hf (None or absent: the profile's value), autoescape (Jinja2's Environment(autoescape=True)),
    chainable_undefined / debug_undefined (Jinja2's ChainableUndefined / DebugUndefined),
    loop_controls and do_statement (the jinja2.ext.loopcontrols and jinja2.ext.do extensions),
    and default render options for every render:
    facts (list of str: what memory told this call, for remembers()), remembers (a callable
    words -> bool instead of facts, or a list/tuple/set/frozenset of str: remembers(x) is then
    `x in data`, answered in C without the GIL), channel, medium, claimed (the `call` builtin), lang,
    catalogs (dicts or JSON strings), tr_keys, limits (Limits or a dict). loader(name) -> str or
    None resolves include/import/extends: while compiling for names that are string constants,
    and during renders for names computed when the template runs (the Template keeps it).
    """

    # a Program subclass: render is the C method (no Python frame per render), the compiled
    # code adopted from what _tpl.compile/_tpl.load made
    __slots__ = ("name", "syntax", "_defaults", "_args")
    _raise_error = staticmethod(_raise)  # how the C render raises a template error

    def __init__(self, source, syntax="jinja", profile=None, name=None, loader=None, **options):
        if not isinstance(syntax, str):
            raise TypeError("syntax must be a str ('jinja', 'erb' or 'fmt'), not %s" % type(syntax).__name__)
        if syntax not in _SYNTAX:
            raise ValueError("syntax must be 'jinja', 'erb' or 'fmt', not %r" % (syntax,))
        compile_opts = {}
        defaults = {}
        funcs = []
        for k, v in options.items():
            if k in _COMPILE_OPTIONS:  # (the usual ones first)
                compile_opts[k] = v
            elif k in _FUNC_KINDS:
                if v is not None and not isinstance(v, _Mapping):
                    raise TypeError("%s must be a dict of callables, not %s" % (k, type(v).__name__))
                for fname, fn in (v or {}).items():
                    if not callable(fn):
                        raise TypeError("%s[%r] is not callable" % (k, fname))
                    funcs.append((fname, _FUNC_KINDS[k], fn))
            elif k == "finalize":
                if v is not None:
                    if not callable(v):
                        raise TypeError("finalize must be callable")
                    if syntax != "jinja":
                        raise ValueError("finalize is a Jinja option")
                    funcs.append((_FINALIZE, 0, v))
                    compile_opts["finalize"] = _FINALIZE
            elif k in _RENDER_OPTIONS:
                defaults[k] = v
            else:
                raise TypeError("Template() got an unexpected option %r" % (k,))
        if funcs:
            compile_opts["host_funcs"] = [(n, kind) for n, kind, _ in funcs]
            defaults["funcs"] = tuple(funcs)
        source = _source_text(source)
        _check_name(name)
        if profile is not None and not isinstance(profile, str):
            raise TypeError("profile must be a str or None, not %s" % type(profile).__name__)
        if loader is not None and not callable(loader):
            raise TypeError("loader must be callable (name -> str or None), not %s" % type(loader).__name__)
        p = _tpl.compile(source, name or "<template>", _SYNTAX[syntax], profile, compile_opts, loader)
        if p.__class__ is tuple:
            _raise(p)
        self._adopt(p)
        self.name = name
        self.syntax = syntax
        self._defaults = defaults
        self._args = None
        if defaults:
            self._args = _render_args(defaults)
            self.configure(**self._args)  # applied once per pooled render context

    def _init(self, program, name, syntax, defaults):
        self._adopt(program)
        self.name = name
        self.syntax = syntax
        self._defaults = defaults
        self._args = _render_args(defaults) if defaults else None
        if self._args:
            self.configure(**self._args)  # applied once per pooled render context

    @property
    def _p(self):
        return self  # (the compiled program: this object)

    @classmethod
    def from_file(cls, path, syntax=None, profile=None, **options):
        """Compiles a template file; the syntax comes from its extension (.jinja .j2 .erb .fmt
        .txt) unless given; include/import/extends names resolve relative to its folder."""
        path = _os.fspath(path)
        if syntax is None:
            syntax = _EXT.get(_os.path.splitext(path)[1], "jinja")
        with open(path, encoding="utf-8") as f:
            source = f.read()
        folder = _os.path.dirname(_os.path.abspath(path))

        def loader(name):
            full = _os.path.join(folder, name)
            if not _os.path.isfile(full):
                return None
            with open(full, encoding="utf-8") as f:
                return f.read()

        return cls(source, syntax=syntax, profile=profile, name=path, loader=options.pop("loader", loader), **options)

    @classmethod
    def load(cls, data, name=None, **render_options):
        """A template from .tplb bytes (Template.save); verified before use (CorruptError)."""
        # a bytes-like object: bytes(42) would be 42 zero bytes, bytes("x") a different error
        if isinstance(data, str) or not _has_buffer(data):
            raise TypeError("Template.load() needs bytes (a .tplb), not %s" % type(data).__name__)
        _check_name(name)
        p = _tpl.load(data, name)
        if isinstance(p, tuple):
            _raise(p)
        for k in render_options:
            if k not in _RENDER_OPTIONS:
                raise TypeError("Template.load() got an unexpected option %r" % (k,))
        self = cls.__new__(cls)
        self._init(p, name, ("jinja", "erb", "fmt")[p.syntax], dict(render_options))
        return self

    def save(self, strip_source=False):
        """The program as .tplb bytes (Template.load reads them back)."""
        return _tpl.Program.save(self, bool(strip_source))

    @property
    def reads(self):
        """The state names the template can read (its reads-set), in first-use order."""
        return list(_tpl.Program.reads.__get__(self))

    # render(mapping=None, /, **kwargs) -> str: _tpl.Program.render, inherited (C): the
    # variables of a mapping and/or keyword arguments, merged as dict(...) merges them; Python
    # exceptions raised by the values' methods propagate as themselves

    def render_with(self, state=None, **options):
        """Renders `state` (a mapping) with render options for this render only (facts,
        remembers, channel, medium, claimed, lang, catalogs, tr_keys, limits), over the
        template's defaults."""
        for k in options:
            if k not in _RENDER_OPTIONS:
                raise TypeError("render_with() got an unexpected option %r" % (k,))
        args = _render_args({**self._defaults, **options})
        out = self._render({} if state is None else state, **args)
        if isinstance(out, tuple):
            _raise(out)
        return out

    def __repr__(self):
        return "<tpl.Template %s (%s)>" % (self.name or "<template>", self.syntax)
