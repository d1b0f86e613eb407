"""tpl.jinja2: Jinja2's rendering API on tpl (issue 17 §3), so that

    import tpl.jinja2 as jinja2

renders templates byte-identically to Jinja2. Provided: Environment (loader, trim_blocks,
lstrip_blocks, keep_trailing_newline, autoescape as a bool or a function of the template name
such as select_autoescape(), undefined=Undefined|StrictUndefined|ChainableUndefined|DebugUndefined,
finalize, the extensions jinja2.ext.loopcontrols and jinja2.ext.do by name or class,
filters/tests/globals with Python callables (custom filters and tests also by name inside
map/select/reject/selectattr/rejectattr), pass_environment, pass_eval_context and pass_context
(a Context over the render's parent: see Context), Markup and
Undefined handed to callables as Jinja2 hands them, policies (json.* honoured), the template
cache), from_string, get_template, select_template, get_or_select_template, list_templates,
call_filter, call_test, Template.render/generate/stream/globals/is_up_to_date/module/make_module,
DictLoader, FileSystemLoader, FunctionLoader, ChoiceLoader, PrefixLoader, PackageLoader,
BaseLoader, Markup/escape (from markupsafe when installed), the exception classes with
Jinja2's attributes (TemplateSyntaxError.lineno/name/filename/message/source), and Jinja2's
modules exceptions, loaders, environment, runtime, utils and ext as tpl.jinja2.NAME.

Jinja2 API this module does not provide raises NotImplementedError naming it (never a silent
difference; README "Python" lists the differences left): a Context lookup of a name the
template binds other than by a top-level set, undefined classes other than the four above, other extensions (i18n is tpl's own tr()),
custom delimiters and line statements, the urlize/truncate policies, ModuleLoader,
make_module(shared=True/locals=), Environment.compile/parse/lex, bytecode caches,
sandboxing, native types, meta, async rendering, Jinja2's internals (nodes, lexer, compiler...);
an autoescape function that decides differently for a template and a template it includes,
imports or extends (tpl compiles them together).
"""
import ast
import collections
import contextvars
import functools
import os
import re
import sys
import threading
import types
import weakref

import tpl as _tpl

try:
    from markupsafe import Markup, escape  # noqa: F401  (Jinja2 re-exports these too)
except ImportError:  # pragma: no cover
    Markup = escape = None

__all__ = ["clear_caches", "is_undefined", "make_logging_undefined", "ModuleLoader", "BytecodeCache",
           "FileSystemBytecodeCache", "MemcachedBytecodeCache", "DebugUndefined", "Environment", "Template", "BaseLoader", "DictLoader", "FileSystemLoader", "FunctionLoader",
           "ChoiceLoader", "PackageLoader", "Undefined", "StrictUndefined", "ChainableUndefined",
           "TemplateError", "TemplateSyntaxError", "UndefinedError", "TemplateNotFound", "TemplatesNotFound",
           "TemplateRuntimeError", "SecurityError", "TemplateAssertionError", "Markup", "escape",
           "select_autoescape Namespace", "PrefixLoader", "ext", "pass_context", "pass_eval_context", "pass_environment"]

# The extensions tpl provides, by Jinja2's names (jinja2.ext.loopcontrols is the class
# jinja2.ext.LoopControlExtension; either spelling, or the class itself, is accepted).
_EXTENSIONS = {"jinja2.ext.loopcontrols": "loop_controls", "jinja2.ext.LoopControlExtension": "loop_controls",
               "jinja2.ext.do": "do_statement", "jinja2.ext.ExprStmtExtension": "do_statement"}


def _jinja2_message(m):
    """tpl's error message as Jinja2's: without the suggestion tpl adds to an unknown filter's or
    test's ("No test named 'nope'. Did you mean 'none'?")."""
    return re.sub(r"(No (?:filter|test) named '.*'(?: found)?\.) Did you mean '[^']*'\?\Z", r"\1", m) if m else m


def _extension_option(e):
    if e in (LoopControlExtension, ExprStmtExtension):
        e = "jinja2.ext." + e.__name__
    name = e if isinstance(e, str) else "%s.%s" % (getattr(e, "__module__", "?"), getattr(e, "__name__", e))
    if name not in _EXTENSIONS:
        raise NotImplementedError("tpl.jinja2.Environment(extensions=[%r]): only jinja2.ext.loopcontrols and "
                                  "jinja2.ext.do are provided" % (name,))
    return _EXTENSIONS[name]


# ---------------------------------------------------------------- exceptions (Jinja2's names)

_BUILTIN_ERRORS = {n: getattr(__import__("builtins"), n) for n in
                   ("TypeError", "ZeroDivisionError", "OverflowError", "ValueError", "RecursionError", "MemoryError",
                    "OSError", "KeyError", "IndexError", "AttributeError", "StopIteration", "RuntimeError", "NameError", "AssertionError")}

class TemplateError(Exception):
    def __init__(self, message=None):
        super().__init__(message)
        self.message = message


class TemplateNotFound(IOError, LookupError, TemplateError):
    def __init__(self, name, message=None):
        IOError.__init__(self, name)
        self.message = message if message is not None else name
        self.name = name
        self.templates = [name]

    def __str__(self):
        return str(self.message)


class TemplatesNotFound(TemplateNotFound):
    def __init__(self, names=(), message=None):
        names = list(names)
        super().__init__(names[-1] if names else None, message or "none of the templates given were found: "
                         + ", ".join(n._undefined_message if isinstance(n, Undefined) else str(n) for n in names))
        self.templates = names


class TemplateSyntaxError(TemplateError):
    def __init__(self, message, lineno, name=None, filename=None):
        super().__init__(message)
        self.lineno = lineno
        self.name = name
        self.filename = filename
        self.source = None
        self.translated = False

    def __str__(self):
        # as Jinja2's: the message alone once the environment has raised it (translated)
        if self.translated:
            return str(self.message)
        location = "line %d" % self.lineno
        name = self.filename or self.name
        if name:
            location = 'File "%s", %s' % (name, location)
        return "%s\n  %s" % (self.message, location)


class TemplateAssertionError(TemplateSyntaxError):
    pass


class TemplateRuntimeError(TemplateError):
    pass


class UndefinedError(TemplateRuntimeError):
    pass


class SecurityError(TemplateRuntimeError):
    pass


class FilterArgumentError(TemplateRuntimeError):
    pass


# ---------------------------------------------------------------- undefined classes

class _Missing:
    def __repr__(self):
        return "missing"


missing = _Missing()  # (Jinja2's utils.missing: Undefined(obj=) when there is no object)


def object_type_repr(obj):
    """As Jinja2's utils.object_type_repr (what its undefined messages name)."""
    if obj is None:
        return "None"
    if obj is Ellipsis:
        return "Ellipsis"
    cls = type(obj)
    if cls.__module__ == "builtins":
        return "%s object" % cls.__name__
    return "%s.%s object" % (cls.__module__, cls.__name__)


class Undefined:
    """Jinja2's default: lenient undefined values (tpl's jinja2 profile). In templates tpl
    implements them itself; instances of this class are what Python callables (custom
    filters, tests, globals) receive for an undefined argument, as in Jinja2."""

    __slots__ = ("_undefined_hint", "_undefined_obj", "_undefined_name", "_undefined_exception")

    def __init__(self, hint=None, obj=missing, name=None, exc=None):
        self._undefined_hint = hint
        self._undefined_obj = obj
        self._undefined_name = name
        self._undefined_exception = exc or UndefinedError

    @property
    def _undefined_message(self):
        if self._undefined_hint:
            return self._undefined_hint
        if self._undefined_obj is missing:
            return "%r is undefined" % (self._undefined_name,)
        if not isinstance(self._undefined_name, str):
            return "%s has no element %r" % (object_type_repr(self._undefined_obj), self._undefined_name)
        return "%r has no attribute %r" % (object_type_repr(self._undefined_obj), self._undefined_name)

    def _fail_with_undefined_error(self, *args, **kwargs):
        raise self._undefined_exception(self._undefined_message)

    def _tpl_undefined(self):
        """What tpl's undefined value of this instance carries (the extension asks it when the
        instance enters a render): (hint, True), (name, False) for a missing variable, or None."""
        if self._undefined_hint:
            return (str(self._undefined_hint), True)
        if self._undefined_obj is missing and isinstance(self._undefined_name, str):
            return (self._undefined_name, False)
        if self._undefined_obj is missing and isinstance(self, DebugUndefined):
            return None  # (prints as Jinja2's "{{ None }}"; its message is tpl's "undefined value")
        return (self._undefined_message, True)

    def __getattr__(self, name):
        if name[:2] == "__":
            raise AttributeError(name)
        return self._fail_with_undefined_error()

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = \
        __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __pos__ = __neg__ = __call__ = __getitem__ = \
        __lt__ = __le__ = __gt__ = __ge__ = __int__ = __float__ = __complex__ = __pow__ = __rpow__ = \
        _fail_with_undefined_error

    def __eq__(self, other):
        return type(self) is type(other)

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return id(type(self))

    def __str__(self):
        return ""

    def __len__(self):
        return 0

    def __iter__(self):
        yield from ()

    def __bool__(self):
        return False

    def __repr__(self):
        return "Undefined"


class StrictUndefined(Undefined):
    """Undefined values are errors as soon as they are printed, iterated or tested."""

    __slots__ = ()
    __iter__ = __str__ = __len__ = Undefined._fail_with_undefined_error
    __eq__ = __ne__ = __bool__ = __hash__ = __contains__ = Undefined._fail_with_undefined_error


class ChainableUndefined(Undefined):
    """An attribute or item of an undefined value is that undefined value (no error)."""

    __slots__ = ()

    def __html__(self):
        return str(self)

    def __getattr__(self, _name):  # (as Jinja2's: every missing attribute, dunder names too)
        return self

    def __getitem__(self, _name):
        return self


class DebugUndefined(Undefined):
    """An undefined value prints as {{ name }} (or {{ no such element: ... }})."""

    __slots__ = ()

    def __str__(self):
        if self._undefined_hint:
            message = "undefined value printed: %s" % self._undefined_hint
        elif self._undefined_obj is missing:
            message = self._undefined_name
        else:
            message = "no such element: %s[%r]" % (object_type_repr(self._undefined_obj), self._undefined_name)
        return "{{ %s }}" % (message,)


# as Jinja2's runtime: the classes keep their slots (no __dict__) but not the __slots__ attribute
# (its test suite checks that getattr(Undefined, "__slots__") raises AttributeError)
del Undefined.__slots__, ChainableUndefined.__slots__, DebugUndefined.__slots__, StrictUndefined.__slots__


# ---------------------------------------------------------------- Namespace

class Namespace:
    """As Jinja2's jinja2.utils.Namespace (what the template's namespace() makes): attributes from
    a dict or keyword arguments, set with ns[name] = value. A template's namespace handed to a
    Python callable is one of these, a copy of it then: setting a name on that copy is refused
    (NotImplementedError), since the template would not see it as it does under Jinja2."""

    def __init__(*args, **kwargs):  # (self among args, as Jinja2's: a keyword named self works)
        self, args = args[0], args[1:]
        self.__attrs = dict(*args, **kwargs)

    def __getattribute__(self, name):
        if name in {"_Namespace__attrs", "__class__", "_Namespace__copy"}:
            return object.__getattribute__(self, name)
        try:
            return self.__attrs[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setitem__(self, name, value):
        try:
            copy = self.__copy
        except AttributeError:
            copy = False
        if copy:
            raise NotImplementedError(
                "tpl.jinja2: setting %r on a template's namespace from Python (the callable got a copy of it: "
                "the template would not see the change it sees under Jinja2)" % (name,))
        self.__attrs[name] = value

    def __repr__(self):
        return f"<Namespace {self.__attrs!r}>"


def _namespace_copy(d):
    """A template's namespace (its attributes in d) as a callable gets it (_tpl's from_val)."""
    ns = Namespace(d)
    object.__setattr__(ns, "_Namespace__copy", True)
    return ns


# ---------------------------------------------------------------- pass_* decorators

class _PassArg:
    def __init__(self, name):
        self.name = name


def pass_context(f):
    """As Jinja2's: the callable gets the render's Context first (see Context)."""
    f.jinja_pass_arg = _PassArg("context")
    return f


def pass_eval_context(f):
    """As Jinja2's: the callable gets an EvalContext (environment, autoescape) first."""
    f.jinja_pass_arg = _PassArg("eval_context")
    return f


def pass_environment(f):
    """As Jinja2's: the callable gets the Environment first."""
    f.jinja_pass_arg = _PassArg("environment")
    return f


class EvalContext:
    def __init__(self, environment, template_name=None):
        self.environment = environment
        self.autoescape = environment._autoescape(template_name)
        self.volatile = False


# The render running in this thread: (template, parent dict), set by Template.render/generate
# around tpl's render (a pass_context callable's Context reads it).
_RENDERING = contextvars.ContextVar("tpl.jinja2 rendering", default=None)

_STATEMENT = re.compile(r"\{%.*?%\}", re.S)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _call_in_waiter(q, f, args, kwargs):
    """Runs f(*args, **kwargs) in the thread reading q (a render's pieces or replies) and returns
    its result or raises its exception here."""
    import queue

    reply = queue.SimpleQueue()
    q.put(("call", (f, args, kwargs, reply, _RENDERING.get(None))))
    ok, v = reply.get()
    if ok:
        return v
    try:
        raise v
    finally:
        v = None


def _bound_names(sources):
    """Every identifier inside a statement tag ({% ... %}) of the sources: a superset of the names
    a template binds (set, for, macro and call arguments, with, import), which a Context does
    not look up (Jinja2's context would hold their current values: NotImplementedError)."""
    names = set()
    for src in sources:
        for st in _STATEMENT.findall(src):
            names.update(_IDENT.findall(st))
    return frozenset(names)


_TAG = re.compile(r"\{#.*?#\}|\{%[-+]?\s*raw\s*[-+]?%\}.*?\{%[-+]?\s*endraw\s*[-+]?%\}|\{%[-+]?(.*?)[-+]?%\}", re.S)
_SCOPED = frozenset(("if", "for", "macro", "call", "filter", "with", "block", "autoescape", "trans"))
_BINDERS = frozenset(("for", "with", "import", "from"))
_LOCAL_SETS = frozenset(("with", "macro", "call", "filter", "set"))
_BLOCK_TAG = re.compile(r"\{%[-+]?\s*block\b")
_SCOPED_BLOCK = re.compile(r"\{%[-+]?\s*block\s+\w+[^%]*\bscoped\b")
_SET_EQ = re.compile(r"(?<![=!<>])=(?!=)")


def _scan_names(source):
    """(top, other, looped) of a template's source: the names its top level assigns with {% set %}
    (outside every block but if/elif/else: Jinja2's Context.vars), in order of appearance (also
    those other statements may bind: the caller leaves those out), and a
    superset of the names anything else may bind (a set inside a for, block, macro...; a macro's
    name; imports, and for targets and with inside a set block: every name such a statement
    mentions). (Macro and call arguments, for targets and with names are their frame's own:
    Jinja2's context does not hold them.) Third, the names of the second that only a set inside
    a loop or block may assign (a filter's Context never holds those)."""
    top, other, looped = {}, set(), set()
    stack = []
    for m in _TAG.finditer(source):
        body = m.group(1)
        words = _IDENT.findall(body) if body else ()
        if not words:
            continue
        kw = words[0]
        if kw.startswith("end"):
            if stack:
                stack.pop()
            continue
        if kw == "set":
            rest = body.strip()[3:]
            eq = _SET_EQ.search(rest)
            lhs = rest[:eq.start()] if eq else rest.split("|")[0]
            targets = [] if "." in lhs else _IDENT.findall(lhs)
            inner = [k for k in stack if k != "if"]
            if not inner:
                top.update(dict.fromkeys(targets))
            elif inner[-1] in ("for", "block"):  # (Jinja2's _loop_vars / _block_vars: a call's derived
                looped.update(targets)              # context holds them, a filter's or test's never)
            elif inner[-1] not in _LOCAL_SETS:
                other.update(targets)
            # (else a set inside a with, macro, call, filter or set block: that frame's own, which
            # Jinja2's context never holds — only a loop's or block's sets reach its derived context)
            if eq is None:
                stack.append("set")
        elif kw == "macro":  # (its arguments are its own frame's: Jinja2's context does not hold them)
            if all(k == "if" for k in stack):  # (a top-level macro is in Jinja2's Context.vars once defined)
                top.update(dict.fromkeys(words[1:2]))
            else:
                other.update(words[1:2])
        elif kw in ("for", "with") and "set" not in stack:
            pass  # (for targets and with names are the loop's and with's own: Jinja2's context never
            # holds them — only what a {% set %} inside assigns, found above; inside a set block
            # Jinja2 tracks them as the set's, so there they are refused below)
        elif kw in _BINDERS:
            other.update(words)
        if kw in _SCOPED:
            stack.append(kw)
    return tuple(top), frozenset(other | looped), frozenset(looped - other)


@functools.lru_cache(maxsize=256)
def _block_info(source):
    """(whether source has a {% block %}, _scoped_locals(source) when it has a scoped one else
    None), once per source (a Context is made for every pass_context call)."""
    if not _BLOCK_TAG.search(source):
        return False, None
    return True, (frozenset(_scoped_locals(source)) if _SCOPED_BLOCK.search(source) else None)


def _scoped_locals(source):
    """A superset of the names a scoped block's derived Context may hold that the template's own
    does not (loop variables, with names, macro and call arguments, sets inside those): every
    identifier in a statement tag but the targets of the top level's {% set %}s (the same value
    in both: Jinja2's derived parent is the template's get_all() plus the locals)."""
    names, stack = set(), []
    for m in _TAG.finditer(source):
        body = m.group(1)
        words = _IDENT.findall(body) if body else ()
        if not words:
            continue
        kw = words[0]
        if kw.startswith("end"):
            if stack:
                stack.pop()
            continue
        if kw == "set" and all(k == "if" for k in stack):
            rest = body.strip()[3:]
            eq = _SET_EQ.search(rest)
            if eq is None:
                names.update(_IDENT.findall(rest.split("|", 1)[1]) if "|" in rest else ())
                stack.append("set")
            else:
                names.update(_IDENT.findall(rest[eq.end():]))
            continue
        names.update(words)
        if kw in _SCOPED:
            stack.append(kw)
    return names


class Context:
    """Jinja2's template Context as a pass_context callable gets it: the template's variables
    (Jinja2's vars: the names its top level assigns with {% set %}, once assigned — read from
    the running render, tpl_render_lookup) over the render's parent (Environment.globals,
    Template.globals and the render arguments, the objects themselves), the environment, the
    template's name and its eval context. tpl does not hand its other frames' variables to
    Python: looking up a name that a statement may bind otherwise (for targets and sets inside
    a loop, block, macro or with; macro and call arguments; imports — Jinja2's context may give
    them) or, in a template that loads others, any name a statement mentions, and .vars,
    .exported_vars, iterating or listing the context when the template has such names, raise
    NotImplementedError naming the name. (Made by the render; not to be made by hand.)"""

    def __init__(self, template, parent, cell=None, plain=False):
        self.environment = template.environment
        self._parent = {**_DEFAULT_NAMESPACE, **parent}  # (Jinja2's default globals below)
        self._handed = None  # {name: (object, snapshot)}: see _hand
        self._template = template
        self._cell = cell
        # _wide: why Jinja2's parent may hold more than the globals and arguments here (None: it
        # does not) — a call's context inside a loop or block where a set ran is derived, its
        # parent the template's variables and those sets' (Context.derived), and an included or
        # imported template's parent holds its includer's variables
        self._wide = None
        self._loads = template._loaded or template._own_of is not None
        if self._loads:  # (a module's: its template's names)
            self._top, self._bound = (), template._bound_names()
            if self._bound:
                self._wide = "a template that loads others and assigns names"
        else:
            top, self._bound, looped = template._scanned_names()
            if plain:
                # a filter's, test's or finalize's (plain: Jinja2 hands them the template's own
                # context, not the derived one a call inside a loop or block gets): what a set
                # inside a loop or block assigns is never in it (the top level's value, the
                # parent's, or missing)
                self._bound = self._bound - looped
            elif looped:
                self._wide = "a template that sets %s inside a loop or block" % (
                    ", ".join(repr(n) for n in sorted(looped)[:3]) + (", ..." if len(looped) > 3 else ""),)
            self._top = tuple(n for n in top if n not in self._bound)
        # a scoped block ({% block b scoped %}): Jinja2 renders it with context.derived(the local
        # names around it), so a callable inside one (a call, a filter or a test alike) gets a
        # Context whose parent also holds the loop variable, `loop`, with names and macro
        # arguments there, and whose vars are empty — every name a statement mentions, and `loop`,
        # is refused, and what lists the variables or the parent
        self._has_blocks, scoped = self._blocks_of()
        self._scoped = scoped is not None
        if self._scoped:
            self._bound = self._bound | scoped
            self._top = tuple(n for n in self._top if n not in self._bound)
            self._wide = "a template with a scoped block (Jinja2's Context inside one is derived)"
        self.eval_ctx = EvalContext(template.environment, template.name)

    def _blocks_of(self):
        """(whether the sources have a {% block %}, the names a scoped block's Context may hold
        that the template's does not, and `loop` — None without a scoped block), kept on the
        template while its sources are the same objects."""
        tmpl = self._template
        own = tmpl._own_of if tmpl._own_of is not None else tmpl
        got = tmpl.__dict__.get("_blocks_got")
        if (got is None or got[0] is not tmpl._source or got[1] is not own._source or got[2] is not own._sources
                or got[3] is not self._loads):
            infos = [_block_info(src) for src in self._sources()]
            scoped = [i[1] for i in infos if i[1] is not None]
            got = tmpl._blocks_got = (tmpl._source, own._source, own._sources, self._loads,
                                      (any(i[0] for i in infos),
                                       frozenset().union(*scoped) | {"loop"} if scoped else None))
        return got[4]

    def _sources(self):
        """The sources the callable may run in: the template's, and those it loads."""
        tmpl = self._template
        own = tmpl._own_of if tmpl._own_of is not None else tmpl
        return list(own._sources) + [own._source or ""] if self._loads else [tmpl._source or ""]

    @property
    def blocks(self):
        """Jinja2's holds the render functions of the template's blocks ({name: [function, ...]}),
        which tpl does not have: {} for a template without blocks (nor templates it loads), else
        NotImplementedError."""
        if self._has_blocks:
            raise NotImplementedError("tpl.jinja2: Context.blocks of a template with {% block %}s (Jinja2's holds "
                                      "their render functions, which tpl's compiled blocks are not)")
        return {}

    @property
    def globals_keys(self):
        """As Jinja2's: the names of the template's globals (Jinja2's default namespace, the
        environment's and the template's own). NotImplementedError where Jinja2's context is
        another (a derived one in a loop or block that set names: empty; a template it loads)."""
        if self._wide:
            raise NotImplementedError("tpl.jinja2: Context.globals_keys in %s (Jinja2's context there may be "
                                      "another: a derived one, or a loaded template's)" % self._wide)
        tmpl = self._template
        if self._loads and tmpl._loaded_globals():
            raise NotImplementedError("tpl.jinja2: Context.globals_keys in a template that loads templates with "
                                      "globals of their own (Jinja2's context may be one of theirs)")
        return set(_DEFAULT_NAMESPACE) | set(tmpl.globals)

    def derived(self, locals=None):
        raise NotImplementedError("tpl.jinja2: Context.derived (a new Context over the render's variables: tpl's "
                                  "contexts are made by the render)")

    def super(self, name, current):
        raise NotImplementedError("tpl.jinja2: Context.super (Jinja2's block render functions, which tpl's compiled "
                                  "blocks are not)")

    @property
    def parent(self):
        """The render's parent (globals and arguments, the objects themselves). NotImplementedError
        where Jinja2's holds the template's variables too (_wide: a call inside a loop or block that
        set names, whose context is derived; a template that loads others)."""
        if self._scoped or (self._wide and self._loads):
            raise NotImplementedError("tpl.jinja2: Context.parent %s" % self._why())
        if self._wide:
            raise NotImplementedError("tpl.jinja2: Context.parent in %s (Jinja2's parent there holds the variables "
                                      "such a set assigns: tpl does not hand its variables to Python callables)"
                                      % self._wide)
        for k, v in self._parent.items():
            self._hand(k, v)
        return self._parent

    def _hand(self, key, v):
        """v, the parent's value of key, as handed to Python. A list, dict or tuple among the names
        the template reads is a copy in the render (converted when it started): what Python does to
        it through the Context (ctx['items'].append(x)) the template would not see, where Jinja2's
        would — so it is remembered with a snapshot, compared when the callable returns
        (_check_handed: NotImplementedError naming it when it changed)."""
        if type(v) in _COPIED and (self._handed is None or key not in self._handed) and key in self._reads():
            if self._handed is None:
                self._handed = {}
            self._handed[key] = (v, _snap(v, 0))
        return v

    def _reads(self):
        """The names the template's program reads (every name when it tells none)."""
        tmpl = self._template
        t = getattr(tmpl, "_t", None)
        got = tmpl.__dict__.get("_reads_of")
        if got is None or got[0] is not t:
            reads = getattr(t, "reads", None) if t is not None else None
            got = tmpl._reads_of = (t, frozenset(reads) if isinstance(reads, (list, tuple)) else None)
        return self._parent if got[1] is None else got[1]

    def _check_handed(self, what):
        """NotImplementedError when the callable (what) changed a list, dict or tuple of the
        parent the template reads, through this Context."""
        for key, (v, snap) in (self._handed or {}).items():
            if not _same(snap, v, 0):
                raise NotImplementedError(
                    "tpl.jinja2: %s changed the render's %s %r through its Context (now %.200r): the template "
                    "reads a copy of it made when the render started, so it would not see the change (Jinja2's "
                    "would); change a value the template made ({%% set %%}), an object's attribute, or pass the "
                    "result back instead" % (what, type(v).__name__, key, v))

    def _var(self, key):
        """The template's variable key as the render holds it now, or missing."""
        cell = self._cell
        if not cell:
            raise NotImplementedError("tpl.jinja2: Context lookup of %r, a variable of the template, after its "
                                      "render ended" % (key,))
        try:
            return _tpl._tpl.lookup(cell[-1], key)
        except KeyError:
            return missing
        except RuntimeError as e:
            raise NotImplementedError("tpl.jinja2: Context lookup of %r: %s" % (key, e)) from None

    def _vars(self):
        out = {}
        for k in self._top:
            v = self._var(k)
            if v is not missing:
                out[k] = v
        return out

    @property
    def name(self):
        own = self._template._own_of
        if own is not None and not own._loaded:  # a module's macro or top level: its template's
            return own.name
        if self._template._loaded or own is not None:
            raise NotImplementedError("tpl.jinja2: Context.name in a template that includes, imports or extends "
                                      "others (Jinja2 names the template the callable runs in, which tpl does not "
                                      "tell Python callables)")
        return self._template.name

    def _why(self):
        """Why this Context cannot hand what Jinja2's would: the template's names it does not read."""
        if self._scoped:
            return ("in a template with a scoped block (Jinja2's Context inside one is derived: its parent holds the "
                    "local names around the block — loop variables and `loop`, with names, macro arguments — and its "
                    "vars are empty; tpl does not hand those to Python callables)")
        if self._loads:
            return ("in a template that includes, imports or extends others (the callable may run in one of them, "
                    "whose Jinja2 Context holds the loader's variables and the loop and set names around the "
                    "include, which tpl does not hand to Python callables)")
        names = sorted(self._bound)
        return ("of a template that assigns %s other than at its top level (in a for, block, macro, call, with or "
                "set block: Jinja2's Context there holds their current values, which tpl does not hand to Python "
                "callables)" % (", ".join(repr(n) for n in names[:3]) + (", ..." if len(names) > 3 else ""),))

    def _check(self, key):
        if key in self._bound:
            raise NotImplementedError("tpl.jinja2: Context lookup of %r %s" % (key, self._why()))

    def _all_checked(self, what):
        if self._bound:
            raise NotImplementedError("tpl.jinja2: Context.%s %s" % (what, self._why()))

    @property
    def vars(self):
        self._all_checked("vars")
        return self._vars()

    @property
    def exported_vars(self):
        self._all_checked("exported_vars")
        return {k for k in self._vars() if k[:1] != "_"}

    def resolve_or_missing(self, key):
        self._check(key)
        if key in self._top:
            v = self._var(key)
            if v is not missing:
                return v
        v = self._parent.get(key, missing)
        return v if v is missing else self._hand(key, v)

    def resolve(self, key):
        rv = self.resolve_or_missing(key)
        if rv is missing:
            return self.environment.undefined(name=key)
        return rv

    def get(self, key, default=None):
        try:
            return self[key]
        except KeyError:
            return default

    def __getitem__(self, key):
        rv = self.resolve_or_missing(key)
        if rv is missing:
            raise KeyError(key)
        return rv

    def __contains__(self, name):
        return self.resolve_or_missing(name) is not missing

    def get_all(self):
        self._all_checked("get_all")
        return {**self.parent, **self._vars()}  # (self.parent: each handed)

    def get_exported(self):
        self._all_checked("get_exported")
        return {k: v for k, v in self._vars().items() if k[:1] != "_"}

    def keys(self):
        return self.get_all().keys()

    def values(self):
        return self.get_all().values()

    def items(self):
        return self.get_all().items()

    def __iter__(self):
        return iter(self.get_all())

    def call(self, __obj, *args, **kwargs):
        """As Jinja2's Context.call: __obj called with this context, the environment or the eval
        context first when it asks for one (pass_*)."""
        how = _pass_arg_of(__obj)
        if how == "context":
            args = (self,) + args
        elif how == "eval_context":
            args = (self.eval_ctx,) + args
        elif how == "environment":
            args = (self.environment,) + args
        return __obj(*args, **kwargs)

    def __repr__(self):
        return "<Context %r of %r>" % (self.get_all(), self.name)  # (Jinja2's: its variables too)


# What a render converts (a copy): the parent's values of these types a Context hands out are
# checked for changes when the callable returns (Context._hand)
_COPIED = (list, dict, tuple)


_SNAP_BIG = 1024  # a longer list or tuple is recorded by its length and _SNAP_SAMPLE of its items


_SNAP_SAMPLE = 64


@functools.lru_cache(maxsize=64)
def _sampled(n):
    """The positions recorded of a list of n items: its ends and evenly between."""
    step = max(1, n // _SNAP_SAMPLE)
    return tuple(sorted(set(range(0, n, step)) | {n - 1}))


def _snap(v, depth):
    """A copy of v's lists, dicts and tuples, nested ones too (their items the objects
    themselves), to compare with _same; a list or tuple of more than 1,024 items by its length
    and 64 of its items (as _tpl's check of the lists a callable holds: a loop of calls stays
    linear)."""
    t = type(v)
    if depth > 64 or t not in _COPIED:
        return v
    d = depth + 1  # (a leaf, the usual item, kept without a call)
    if t is dict:
        return [(k, x if type(x) not in _COPIED else _snap(x, d)) for k, x in v.items()]
    n = len(v)
    if n > _SNAP_BIG:
        return ("big", n, [x if type(x) not in _COPIED else _snap(x, d) for x in [v[i] for i in _sampled(n)]])
    return [x if type(x) not in _COPIED else _snap(x, d) for x in v]


def _same(snap, v, depth):
    """Whether v holds what snap (_snap) recorded: the same objects in the same order."""
    t = type(v)
    if depth > 64 or t not in _COPIED:
        return snap is v
    d = depth + 1
    if type(snap) is tuple:  # ("big", length, sampled items)
        if t is dict or len(v) != snap[1]:
            return False
        v = [v[i] for i in _sampled(len(v))]
        snap = snap[2]
    elif type(snap) is not list or len(snap) != len(v):
        return False
    if t is dict:
        return all(sk is k and (sx is x if type(x) not in _COPIED else _same(sx, x, d))
                   for (sk, sx), (k, x) in zip(snap, v.items()))
    return all(sx is x if type(x) not in _COPIED else _same(sx, x, d) for sx, x in zip(snap, v))


# Jinja2's DEFAULT_NAMESPACE, in a Context's parent: range and dict are Python's; lipsum, cycler,
# joiner and namespace are tpl's own in templates (called from Python: NotImplementedError)
_DEFAULT_NAMESPACE = {"range": range, "dict": dict}
for _n in ("lipsum", "cycler", "joiner", "namespace"):
    _DEFAULT_NAMESPACE[_n] = (lambda n: lambda *a, **kw: _refused(
        "Context['%s']" % n, "tpl's %s global is the VM's, not a Python callable" % n)())(_n)
del _n


def _named_as(call, f):
    """call, named as f (its name, qualified name, doc and module, where f has them)."""
    for k in ("__name__", "__qualname__", "__doc__", "__module__"):
        try:
            setattr(call, k, getattr(f, k))
        except (AttributeError, TypeError):
            pass
    return call


def _passing(f, first):
    """f called with first() before its arguments, named as f (Jinja2 hands the template f itself)."""
    def call(*a, **kw):
        return f(first(), *a, **kw)
    return _named_as(call, f)


def _passing_context(f, what, plain=False):
    """f called with the render's Context first (pass_context), named as f; what it changed of
    the render's parent through that Context is checked when it returns (Context._hand). plain:
    a filter's, test's or finalize's (Context)."""
    def call(*a, **kw):
        ctx = _current_context(what, plain)
        rv = f(ctx, *a, **kw)
        if ctx._handed:
            ctx._check_handed("the pass_context callable %s" % what)
        return rv
    return _named_as(call, f)


def _current_context(what, plain=False):
    r = _RENDERING.get()
    if r is None:
        raise NotImplementedError("tpl.jinja2: %s uses pass_context outside a render of tpl.jinja2.Template.render/"
                                  "generate (Environment.call_filter/call_test)" % (what,))
    return Context(*r, plain=plain)


def _bind_pass_arg(env, name, kind, f, template_name):
    """f as tpl calls it: Jinja2's pass_* decorators (its own or these) honoured."""
    how = _pass_arg_of(f)
    if how is None:
        return f
    if how == "environment":
        return _passing(f, lambda: env)
    if how == "eval_context":
        ctx = EvalContext(env, template_name)
        return _passing(f, lambda: ctx)
    return _passing_context(f, "%s %r" % (kind, name), plain=True)


_PLAIN_CALLABLES = (types.FunctionType, types.MethodType, types.BuiltinFunctionType, types.BuiltinMethodType,
                    types.MethodWrapperType, type)


def _pass_arg_of(obj):
    """The jinja_pass_arg name of a callable (a callable class's __call__ too, as Jinja2's
    Context.call looks), or None. (An Undefined is callable, and its attributes raise.)"""
    if isinstance(obj, Undefined):
        return None
    how = getattr(getattr(obj, "jinja_pass_arg", None), "name", None)
    if how is None and not isinstance(obj, _PLAIN_CALLABLES):
        how = getattr(getattr(getattr(obj, "__call__", None), "jinja_pass_arg", None), "name", None)
    return how


def _context_callable(env, name, f, template_name):
    """A callable of the render context (env/template globals, render arguments) as tpl calls it:
    pass_environment, pass_eval_context and pass_context (the render's Context) honoured."""
    how = _pass_arg_of(f)
    if how == "environment":
        return _passing(f, lambda: env)
    if how == "eval_context":
        ctx = EvalContext(env, template_name)
        return _passing(f, lambda: ctx)

    return _passing_context(f, repr(name))


def select_autoescape(enabled_extensions=("html", "htm", "xml"), disabled_extensions=(), default_for_string=True,
                      default=False):
    """As Jinja2's: a function template name -> bool (None: a template from a string)."""
    enabled = tuple("." + x.lstrip(".").lower() for x in enabled_extensions)
    disabled = tuple("." + x.lstrip(".").lower() for x in disabled_extensions)

    def autoescape(template_name):
        if template_name is None:
            return default_for_string
        name = template_name.lower()
        if name.endswith(enabled):
            return True
        if name.endswith(disabled):
            return False
        return default
    return autoescape


# ---------------------------------------------------------------- loaders

def split_template_path(template):
    """As Jinja2's: a template name's pieces; a piece with a path separator or '..' is
    TemplateNotFound (no escaping the search path)."""
    pieces = []
    for piece in template.split("/"):
        if os.path.sep in piece or (os.path.altsep and os.path.altsep in piece) or piece == os.path.pardir:
            raise TemplateNotFound(template)
        if piece and piece != ".":
            pieces.append(piece)
    return pieces


class BaseLoader:
    has_source_access = True

    def get_source(self, environment, template):
        raise TemplateNotFound(template)

    def list_templates(self):
        raise TypeError("this loader cannot iterate over all templates")

    def load(self, environment, name, globals=None):
        return environment.get_template(name, globals=globals)


class DictLoader(BaseLoader):
    def __init__(self, mapping):
        self.mapping = mapping

    def get_source(self, environment, template):
        if template in self.mapping:
            source = self.mapping[template]
            return source, None, lambda: source == self.mapping.get(template)
        raise TemplateNotFound(template)

    def list_templates(self):
        return sorted(self.mapping)


class FunctionLoader(BaseLoader):
    def __init__(self, load_func):
        self.load_func = load_func

    def get_source(self, environment, template):
        rv = self.load_func(template)
        if rv is None:
            raise TemplateNotFound(template)
        if isinstance(rv, str):
            return rv, None, None
        return rv


class FileSystemLoader(BaseLoader):
    def __init__(self, searchpath, encoding="utf-8", followlinks=False):
        if isinstance(searchpath, (str, os.PathLike)):
            searchpath = [searchpath]
        self.searchpath = [os.fspath(p) for p in searchpath]
        self.encoding = encoding
        self.followlinks = followlinks

    def get_source(self, environment, template):
        pieces = split_template_path(template)
        for base in self.searchpath:
            filename = os.path.join(base, *pieces)
            if os.path.isfile(filename):
                with open(filename, encoding=self.encoding) as f:
                    source = f.read()
                mtime = os.path.getmtime(filename)
                return source, os.path.normpath(filename), lambda: os.path.getmtime(filename) == mtime
        raise TemplateNotFound(template)

    def list_templates(self):
        found = set()
        for base in self.searchpath:
            for dirpath, _, files in os.walk(base, followlinks=self.followlinks):
                for f in files:
                    found.add(os.path.relpath(os.path.join(dirpath, f), base).replace(os.path.sep, "/"))
        return sorted(found)


class PrefixLoader(BaseLoader):
    def __init__(self, mapping, delimiter="/"):
        self.mapping = mapping
        self.delimiter = delimiter

    def get_loader(self, template):
        try:
            prefix, name = template.split(self.delimiter, 1)
            loader = self.mapping[prefix]
        except (ValueError, KeyError):
            raise TemplateNotFound(template) from None
        return loader, name

    def get_source(self, environment, template):
        loader, name = self.get_loader(template)
        try:
            return loader.get_source(environment, name)
        except TemplateNotFound:
            raise TemplateNotFound(template) from None

    def list_templates(self):
        result = []
        for prefix, loader in self.mapping.items():
            for template in loader.list_templates():
                result.append(prefix + self.delimiter + template)
        return result


class ChoiceLoader(BaseLoader):
    def __init__(self, loaders):
        self.loaders = loaders

    def get_source(self, environment, template):
        for loader in self.loaders:
            try:
                return loader.get_source(environment, template)
            except TemplateNotFound:
                pass
        raise TemplateNotFound(template)

    def list_templates(self):
        found = set()
        for loader in self.loaders:
            found.update(loader.list_templates())
        return sorted(found)


class PackageLoader(FileSystemLoader):
    """Templates in a folder of an importable package (a package on the file system; zip
    imports raise NotImplementedError)."""

    def __init__(self, package_name, package_path="templates", encoding="utf-8"):
        import importlib.util
        package_path = os.path.normpath(package_path).rstrip(os.path.sep)
        if package_path == os.path.curdir:
            package_path = ""
        elif package_path[:2] == os.path.curdir + os.path.sep:
            package_path = package_path[2:]
        self.package_name = package_name
        self.package_path = package_path
        spec = importlib.util.find_spec(package_name)
        if spec is None:
            raise ValueError("package %r was not found" % (package_name,))
        roots = list(spec.submodule_search_locations or [])
        if not roots and spec.origin:
            roots = [os.path.dirname(spec.origin)]
        if spec.loader is not None and type(spec.loader).__name__ == "zipimporter":
            raise NotImplementedError("tpl.jinja2.PackageLoader for a zip-imported package")
        for root in roots:
            folder = os.path.join(root, package_path)
            if os.path.isdir(folder):
                break
        else:
            raise ValueError("PackageLoader could not find a %r directory in the %r package."
                             % (package_path, package_name))
        super().__init__(folder, encoding)


# ---------------------------------------------------------------- environment and templates

_SUPPORTED_DEFAULTS = {
    "block_start_string": "{%", "block_end_string": "%}", "variable_start_string": "{{",
    "variable_end_string": "}}", "comment_start_string": "{#", "comment_end_string": "#}",
    "line_statement_prefix": None, "line_comment_prefix": None, "newline_sequence": "\n",
    "optimized": True, "bytecode_cache": None, "enable_async": False,
}

# Jinja2's DEFAULT_POLICIES. The json ones are honoured (tojson is then Jinja2's, in Python); a
# template whose source names urlize or truncate while their policy differs from the default is
# a NotImplementedError (tpl's filters have Jinja2's defaults built in).
_DEFAULT_POLICIES = {
    "compiler.ascii_str": True, "urlize.rel": "noopener", "urlize.target": None, "urlize.extra_schemes": None,
    "truncate.leeway": 5, "json.dumps_function": None, "json.dumps_kwargs": {"sort_keys": True},
    "ext.i18n.trimmed": False,
}
_FILTER_POLICIES = (("urlize", ("urlize.rel", "urlize.target", "urlize.extra_schemes")),
                    ("truncate", ("truncate.leeway",)))


def _htmlsafe_json_dumps(obj, dumps=None, **kwargs):
    """Jinja2's utils.htmlsafe_json_dumps."""
    import json
    return Markup((dumps or json.dumps)(obj, **kwargs).replace("<", "\\u003c").replace(">", "\\u003e")
                  .replace("&", "\\u0026").replace("'", "\\u0027"))


class _Policies(dict):
    """Environment.policies: a dict that counts its changes, so a template sees a change made
    after it was compiled (Jinja2 reads the policies when the template runs)."""

    version = 0

    def _changed(f):
        def changed(self, *a, **kw):
            self.version += 1
            return f(self, *a, **kw)
        return changed
    __setitem__ = _changed(dict.__setitem__)
    __delitem__ = _changed(dict.__delitem__)
    update = _changed(dict.update)
    pop = _changed(dict.pop)
    popitem = _changed(dict.popitem)
    setdefault = _changed(dict.setdefault)
    clear = _changed(dict.clear)
    __ior__ = _changed(dict.__ior__)
    del _changed


def _policies_state(p):
    """What a compiled template depends on in policies p: the dict and its changes (a plain dict
    put in its place: its items)."""
    v = getattr(p, "version", None)
    return (p, v) if v is not None else (p, tuple(p.items()))


def _random_filter(seq):
    """Jinja2's random filter: Python's random.choice (so random.seed() gives Jinja2's picks)."""
    import random
    try:
        return random.choice(seq)
    except IndexError:
        return Undefined("No random item, sequence was empty.")


class _Cache(dict):
    """Jinja2's template cache: the last cache_size templates loaded (None: no cache; a negative
    size: unbounded)."""

    def __init__(self, size):
        super().__init__()
        self.size = size

    def get(self, key):
        t = dict.pop(self, key, None)
        if t is not None:
            self[key] = t  # most recently used last
        return t

    def put(self, key, t):
        dict.pop(self, key, None)
        self[key] = t
        while 0 <= self.size < len(self):
            del self[next(iter(self))]


def _make_cache(size):
    return None if size == 0 else _Cache(size)


class Environment:
    def __init__(self, loader=None, trim_blocks=False, lstrip_blocks=False, keep_trailing_newline=False,
                 autoescape=False, undefined=Undefined, extensions=(), finalize=None, cache_size=400,
                 auto_reload=True, **options):
        for k, v in options.items():
            if k not in _SUPPORTED_DEFAULTS:
                raise TypeError("Environment() got an unexpected keyword argument %r" % (k,))
            if v != _SUPPORTED_DEFAULTS[k]:
                raise NotImplementedError("tpl.jinja2.Environment(%s=%r)" % (k, v))
        for m in ("getattr", "getitem"):  # (Jinja2's hooks for attribute lookups in templates)
            if getattr(type(self), m) is not getattr(Environment, m):
                raise NotImplementedError("tpl.jinja2: an Environment subclass overriding %s (templates look up "
                                          "attributes and items in tpl)" % m)
        self._ext_options = {_extension_option(e): True for e in extensions}
        for k, v in _SUPPORTED_DEFAULTS.items():  # (Jinja2's attributes of the same names)
            setattr(self, k, v)
        self.is_async = False
        if undefined not in (Undefined, StrictUndefined, ChainableUndefined, DebugUndefined):
            raise NotImplementedError("tpl.jinja2.Environment(undefined=%s)" % getattr(undefined, "__name__", undefined))
        self.loader = loader
        self.trim_blocks = trim_blocks
        self.lstrip_blocks = lstrip_blocks
        self.keep_trailing_newline = keep_trailing_newline
        self.autoescape = autoescape
        self.undefined = undefined
        self.finalize = finalize
        self.extensions = {e if isinstance(e, str) else e.__name__: e for e in extensions}
        self.globals = {}
        self.filters = {}
        self.tests = {}
        self.policies = _Policies(_DEFAULT_POLICIES, **{"json.dumps_kwargs": {"sort_keys": True}})
        self.cache = _make_cache(cache_size)
        self.auto_reload = auto_reload
        self._calls = {}

    def _autoescape(self, name):
        return bool(self.autoescape(name) if callable(self.autoescape) else self.autoescape)

    def _policy_filters(self, sources):
        """The filters env.policies replaces (tojson), checking the policies tpl cannot honour
        against the sources a template is compiled from."""
        pol = self.policies
        for filt, keys in _FILTER_POLICIES:
            for k in keys:
                if pol.get(k, _DEFAULT_POLICIES[k]) != _DEFAULT_POLICIES[k] and any(filt in src for src in sources):
                    raise NotImplementedError("tpl.jinja2: Environment.policies[%r] = %r (tpl's %s has Jinja2's "
                                              "default)" % (k, pol[k], filt))
        if pol.get("json.dumps_function") is None and pol.get("json.dumps_kwargs") == {"sort_keys": True}:
            return {}
        env = weakref.ref(self)

        def tojson(value, indent=None):  # Jinja2's do_tojson, reading the policies when it runs
            pol = env().policies
            kw = dict(pol.get("json.dumps_kwargs") or {})
            if indent is not None:
                kw["indent"] = indent
            return _htmlsafe_json_dumps(value, pol.get("json.dumps_function"), **kw)
        return {"tojson": tojson}

    def _compile(self, source, name, filename, globals, own=None):
        """A Template of source. own (Template.module's wrappers): (key, template) — the name
        key loads that template's source (no loader asked) and autoescape is that template's."""
        autoescape = self._autoescape(own[1].name if own else name)
        sources = [source]
        uptodate = []
        loaded = []  # the names of the templates it loads (compiled with it, or when it runs)

        # the program keeps this loader for names computed at render time: a weak reference, so a
        # template held by its environment (env.globals) makes no cycle through the C program
        env = weakref.ref(self)

        def loader(n):
            if own is not None and n == own[0]:
                # (its source is one of this template's: the names a Context refuses, the policy
                # filters and Python's random filter where it names them)
                if own[1]._source not in sources[1:]:
                    sources.append(own[1]._source)
                return own[1]._source
            self = env()
            if self is None or self.loader is None:
                return None
            if type(self).join_path is not Environment.join_path:
                # (Jinja2 names it join_path(n, the template naming it); tpl's loader is not told that one)
                raise NotImplementedError("tpl.jinja2: an Environment subclass overriding join_path, for %r that a "
                                          "template loads (tpl does not tell the loader which template names it)" % n)
            try:
                src, _, up = self.loader.get_source(self, n)
            except TemplateNotFound:
                return None
            sources.append(src)
            uptodate.append(up)
            loaded.append(n)
            if callable(self.autoescape) and self._autoescape(n) != autoescape:
                raise NotImplementedError("tpl.jinja2: autoescape is %s for %r but %s for %r, which it loads (tpl "
                                          "compiles them together)" % (autoescape, name, not autoescape, n))
            return src
        # Jinja2's random filter (Python's random) only where a source names it: a host filter costs
        # every render a little
        filters = {"random": _random_filter} if "random" in source else {}
        filters.update({k: _bind_pass_arg(self, k, "filter", f, name) for k, f in self.filters.items()})
        try:
            t = _tpl.Template(source, name=filename or name, loader=loader, trim_blocks=self.trim_blocks,
                              lstrip_blocks=self.lstrip_blocks, keep_trailing_newline=self.keep_trailing_newline,
                              strict=self.undefined is StrictUndefined, autoescape=autoescape,
                              chainable_undefined=self.undefined is ChainableUndefined,
                              debug_undefined=self.undefined is DebugUndefined,
                              filters=filters,
                              tests={k: _bind_pass_arg(self, k, "test", f, name) for k, f in self.tests.items()},
                              markup=Markup, undefined=self.undefined,
                              finalize=None if self.finalize is None else
                              _bind_pass_arg(self, "finalize", "finalize", self.finalize, name),
                              defer_missing=True, **self._ext_options)
        except _tpl.TemplateSyntaxError as e:
            if e.message and e.message.startswith("template '") and e.message.endswith("' not found"):
                raise TemplateNotFound(e.message[10:-11]) from None
            builtin = _BUILTIN_ERRORS.get(e.exception)
            if builtin is not None:  # a format string str.format refuses (ValueError, IndexError)
                raise builtin(e.message) from None
            cls = TemplateAssertionError if e.exception == "TemplateAssertionError" else TemplateSyntaxError
            mt = re.match(r"in '(.*)' at (\d+):\d+: (.*)\Z", e.message or "", re.S)
            if mt and mt.group(1) != name:
                # a template it extends, includes or imports does not compile: Jinja2 loads that
                # one when the template runs, so get_template succeeds and render raises, located
                # in that template
                err = cls(_jinja2_message(mt.group(3)), int(mt.group(2)), mt.group(1))
                err.translated = True
                tmpl = Template._from_tpl(self, _CompileFailed(err), name, filename, globals)
                tmpl._source = source
                tmpl._uptodate, tmpl._loaded, tmpl._policies = uptodate, loaded, _policies_state(self.policies)
                return tmpl
            err = cls(_jinja2_message(e.message), e.lineno, name, filename)
            err.source = source
            err.translated = True  # as Jinja2 raises it from the environment: str() is the message
            raise err from None
        policy_filters = self._policy_filters(sources)
        if "random" not in filters and any("random" in src for src in sources):
            policy_filters.setdefault("random", _random_filter)
        if policy_filters:  # (known only once every source is loaded: compiled again with them)
            filters.update(policy_filters)
            t = _tpl.Template(source, name=filename or name, loader=loader, trim_blocks=self.trim_blocks,
                              lstrip_blocks=self.lstrip_blocks, keep_trailing_newline=self.keep_trailing_newline,
                              strict=self.undefined is StrictUndefined, autoescape=autoescape,
                              chainable_undefined=self.undefined is ChainableUndefined,
                              debug_undefined=self.undefined is DebugUndefined, filters=filters,
                              tests={k: _bind_pass_arg(self, k, "test", f, name) for k, f in self.tests.items()},
                              markup=Markup, undefined=self.undefined,
                              finalize=None if self.finalize is None else
                              _bind_pass_arg(self, "finalize", "finalize", self.finalize, name),
                              defer_missing=True, **self._ext_options)
        tmpl = Template._from_tpl(self, t, name, filename, globals)
        tmpl._source = source
        tmpl._sources = sources
        tmpl._own_of = own[1] if own else None  # (a module's wrapper: the template it runs)
        tmpl._wants_context = any(_pass_arg_of(f) == "context" for f in
                                  list(self.filters.values()) + list(self.tests.values()) + [self.finalize]
                                  if f is not None)
        tmpl._uptodate = uptodate
        tmpl._loaded = loaded
        tmpl._policies = _policies_state(self.policies)
        return tmpl

    def from_string(self, source, globals=None, template_class=None):
        return self._compile(source, None, None, globals)

    def get_template(self, name, parent=None, globals=None):
        if isinstance(name, Template):
            return name
        if isinstance(name, Undefined):
            name._fail_with_undefined_error()
        if parent is not None:
            name = self.join_path(name, parent)
        if self.loader is None:
            raise TypeError("no loader for this environment specified")
        try:
            key = (weakref.ref(self.loader), name)  # (Jinja2's key)
        except TypeError:
            key = (self.loader, name)
        t = self.cache.get(key) if self.cache is not None else None  # as Jinja2's _load_template
        if t is not None and self.auto_reload and not t.is_up_to_date:
            t = None  # its source changed: a new Template
        if t is not None:
            if self.auto_reload and not t._sources_up_to_date():
                # a template it loads (compiled with it) changed: compiled again, the same Template
                # (Jinja2 keeps it and loads the other template anew when it runs)
                source, filename, up = self.loader.get_source(self, name)
                fresh = self._compile(source, name, filename, None)
                t._t, t._source, t._policies, t.filename = fresh._t, source, fresh._policies, filename
                t._uptodate, t._own_uptodate, t._loaded = fresh._uptodate, up, fresh._loaded
            if globals:
                t.globals.update(globals)
            return t
        source, filename, up = self.loader.get_source(self, name)
        t = self._compile(source, name, filename, globals)
        t._own_uptodate = up
        if self.cache is not None:
            self.cache.put(key, t)
        return t

    def join_path(self, template, parent):
        """As Jinja2's: the name as it is (override it to resolve names relative to parent)."""
        return template

    def _call(self, kind, name, value, args, kwargs):
        """call_filter/call_test: a one-expression template whose value a Python callable
        receives (cached per name and argument shape)."""
        args, kwargs = tuple(args or ()), dict(kwargs or {})
        known = self.filters if kind == "|" else self.tests
        own = known.get(name)  # (a filter or test of env.filters/tests: its own template)
        key = (kind, name, len(args), tuple(kwargs), id(own))
        t, _ = self._calls.get(key, (None, None))
        if t is None:
            if not name.isidentifier():
                raise TemplateRuntimeError("No %s named %r." % ("filter" if kind == "|" else "test", name))
            call = "%s(%s)" % (name, ", ".join(["a%d" % i for i in range(len(args))] +
                                                ["%s=k_%s" % (k, k) for k in kwargs]))
            expr = "v|%s" % call if kind == "|" else "v is %s" % call
            try:
                t = self.from_string("{%% set _ = ret(%s) %%}" % expr)
            except TemplateSyntaxError as e:
                if "No %s named" % ("filter" if kind == "|" else "test") in str(e.message):
                    raise TemplateRuntimeError("No %s named %r." % ("filter" if kind == "|" else "test", name)) \
                        from None
                raise
            self._calls[key] = (t, own)  # (own kept alive: its id stays its own)
        out = []
        ctx = {"ret": out.append, "v": value}
        ctx.update(("a%d" % i, a) for i, a in enumerate(args))
        ctx.update(("k_" + k, v) for k, v in kwargs.items())
        t.render(ctx)
        return out[0]

    def getitem(self, obj, argument):
        """As Jinja2's: obj[argument], else the attribute of that name, else an undefined value.
        (Templates look up items and attributes in tpl, not through this method: a subclass
        that overrides it is refused when the Environment is made.)"""
        try:
            return obj[argument]
        except (AttributeError, TypeError, LookupError):
            if isinstance(argument, str):
                try:
                    return getattr(obj, argument)
                except AttributeError:
                    pass
            return self.undefined(obj=obj, name=argument)

    def getattr(self, obj, attribute):
        """As Jinja2's: the attribute, else obj[attribute], else an undefined value (see getitem)."""
        try:
            return getattr(obj, attribute)
        except AttributeError:
            pass
        try:
            return obj[attribute]
        except (TypeError, LookupError, AttributeError):
            return self.undefined(obj=obj, name=attribute)

    def call_filter(self, name, value, args=None, kwargs=None, context=None, eval_ctx=None):
        """As Jinja2's: the filter `name` applied to value (tpl's or env.filters')."""
        if context is not None or eval_ctx is not None:
            raise NotImplementedError("tpl.jinja2.Environment.call_filter(context=/eval_ctx=)")
        return self._call("|", name, value, args, kwargs)

    def call_test(self, name, value, args=None, kwargs=None, context=None, eval_ctx=None):
        """As Jinja2's: the test `name` of value (tpl's or env.tests'), a bool."""
        if context is not None or eval_ctx is not None:
            raise NotImplementedError("tpl.jinja2.Environment.call_test(context=/eval_ctx=)")
        return self._call("is", name, value, args, kwargs)

    def select_template(self, names, parent=None, globals=None):
        if isinstance(names, Undefined):
            names._fail_with_undefined_error()
        names = list(names)
        if not names:
            raise TemplatesNotFound(message="Tried to select from an empty list of templates.")
        for n in names:
            if isinstance(n, Undefined):  # (Jinja2: its message in the list)
                continue
            try:
                return self.get_template(n, parent, globals)
            except TemplateNotFound:
                pass
        raise TemplatesNotFound(names)

    def get_or_select_template(self, template_name_or_list, parent=None, globals=None):
        if isinstance(template_name_or_list, (str, Undefined, Template)):
            return self.get_template(template_name_or_list, parent, globals)
        return self.select_template(template_name_or_list, parent, globals)

    def list_templates(self, extensions=None, filter_func=None):
        names = self.loader.list_templates()
        if extensions is not None:
            names = [n for n in names if n.rsplit(".", 1)[-1] in extensions]
        if filter_func is not None:
            names = [n for n in names if filter_func(n)]
        return names

    overlayed = False
    linked_to = None

    def overlay(self, block_start_string=missing, block_end_string=missing, variable_start_string=missing,
                variable_end_string=missing, comment_start_string=missing, comment_end_string=missing,
                line_statement_prefix=missing, line_comment_prefix=missing, trim_blocks=missing,
                lstrip_blocks=missing, newline_sequence=missing, keep_trailing_newline=missing, extensions=missing,
                optimized=missing, undefined=missing, finalize=missing, autoescape=missing, loader=missing,
                cache_size=missing, auto_reload=missing, bytecode_cache=missing, enable_async=False):
        """Jinja2's Environment.overlay: a new environment sharing this one's data (filters, tests,
        globals, policies: the same dicts) but for the options given, with a new cache (empty,
        of this one's size or cache_size) and its extensions plus those given. Options tpl does not
        provide are refused as in Environment()."""
        args = dict(locals())
        del args["self"], args["cache_size"], args["extensions"], args["enable_async"]
        for k in _SUPPORTED_DEFAULTS:
            if args.get(k, missing) is not missing and args[k] != _SUPPORTED_DEFAULTS[k]:
                raise NotImplementedError("tpl.jinja2.Environment.overlay(%s=%r)" % (k, args[k]))
        if enable_async:
            raise NotImplementedError("tpl.jinja2.Environment.overlay(enable_async=True)")
        if undefined is not missing and undefined not in (Undefined, StrictUndefined, ChainableUndefined,
                                                          DebugUndefined):
            raise NotImplementedError("tpl.jinja2.Environment.overlay(undefined=%s)"
                                      % getattr(undefined, "__name__", undefined))
        rv = object.__new__(self.__class__)
        rv.__dict__.update(self.__dict__)
        rv.overlayed = True
        rv.linked_to = self
        for key, value in args.items():
            if value is not missing:
                setattr(rv, key, value)
        # (Jinja2's copy_cache: a new, empty cache of the same size)
        rv.cache = _make_cache(cache_size) if cache_size is not missing else \
            None if self.cache is None else _Cache(self.cache.size)
        rv.extensions = dict(self.extensions)
        rv._ext_options = dict(self._ext_options)
        if extensions is not missing:
            rv._ext_options.update({_extension_option(e): True for e in extensions})
            rv.extensions.update({e if isinstance(e, str) else e.__name__: e for e in extensions})
        rv._calls = {}
        return rv

    def compile_expression(self, source, undefined_to_none=True):
        """As Jinja2's: a callable that evaluates the expression source with the variables it is
        given (a mapping and/or keyword arguments) and returns its value (the Python value of it:
        a template's list, dict, range... as a Python callable gets them; an undefined value is
        None when undefined_to_none, else the environment's Undefined)."""
        if "%}" in source or "{%" in source or "\n" in source:
            raise NotImplementedError("tpl.jinja2.Environment.compile_expression of %r (a block tag delimiter or a "
                                      "newline in it)" % (source,))
        try:
            t = self.from_string("{% set _ = __tpl_put(" + source + ") %}")
        except TemplateSyntaxError as e:
            e.source = source
            raise
        return TemplateExpression(t, undefined_to_none)

    def __getattr__(self, name):
        if name in ("compile", "parse", "lex", "preprocess", "compile_templates",
                    "extend", "add_extension", "iter_extensions", "make_globals", "handle_exception"):
            raise NotImplementedError("tpl.jinja2.Environment.%s" % name)
        raise AttributeError(name)


class TemplateExpression:
    """As Jinja2's (Environment.compile_expression): called with variables, the expression's value."""

    def __init__(self, template, undefined_to_none):
        self._template = template
        self._undefined_to_none = undefined_to_none

    def __call__(self, *args, **kwargs):
        got = []

        def put(*a, **kw):
            if len(a) != 1 or kw:  # (Jinja2's parser says so when it compiles the expression)
                err = TemplateSyntaxError("chunk after expression", 1)
                err.translated = True
                raise err
            got.append(a[0])
        self._template.render(dict(*args, **kwargs), __tpl_put=put)
        rv = got[0]
        if self._undefined_to_none and isinstance(rv, Undefined):
            return None
        return rv


def _macro_exception(e):
    """The Jinja2 exception for tpl's error e of a template's macro a Python callable called
    (tpl._macro_error: Python may catch it and the render goes on, as Jinja2's)."""
    t = object.__new__(Template)
    t.name = e.name
    return Template._raised(t, e)


class Template:
    """A template of an Environment (Template(source) makes one with the default environment)."""

    _parent_tls = __import__("threading").local()  # (_context's parent, for the caller in this thread)

    def __new__(cls, source=None, **env_options):
        if source is None:
            return super().__new__(cls)
        return Environment(**env_options).from_string(source)

    @classmethod
    def _from_tpl(cls, env, t, name, filename, globals):
        self = super().__new__(cls)
        self.environment = env
        self._t = t
        self.name = name
        self._filename = filename
        self.globals = collections.ChainMap(dict(globals or {}), env.globals)  # as Jinja2's
        self._uptodate = []  # (the templates it loads)
        self._loaded = []  # (their names)
        self._own_uptodate = None
        return self

    def _loaded_globals(self):
        """The per-template globals (get_template(name, globals=...): Template.globals' own layer)
        of the templates this one loads, as Jinja2 finds them in the environment's cache when it
        loads them while rendering: {} when they have none. tpl gives every template a template
        imports or includes without context one set of globals (below the state): templates with
        different own globals are refused (NotImplementedError), never a silent difference."""
        env = self.environment
        if not self._loaded or env.cache is None or env.loader is None:
            return {}
        try:
            lk = weakref.ref(env.loader)
        except TypeError:
            lk = env.loader
        owns = []
        for n in dict.fromkeys(self._loaded):
            t = dict.get(env.cache, (lk, n))  # (no LRU update: Jinja2 would not see this look)
            if t is None or (env.auto_reload and not t.is_up_to_date):
                owns.append((n, {}))  # (Jinja2 loads it afresh: the environment's globals only)
            else:
                owns.append((n, t.globals.maps[0]))
        own = {}
        for n, g in owns:
            own.update(g)
        if own and any(g.keys() != own.keys() or any(g[k] is not v for k, v in own.items()) for _, g in owns):
            raise NotImplementedError(
                "tpl.jinja2: the templates %s, which %r loads, have different per-template globals "
                "(get_template(name, globals=...)); tpl gives the templates a template imports or includes "
                "one set of globals" % (", ".join(repr(n) for n, _ in owns), self.name or "<template>"))
        return own

    @property
    def filename(self):
        """As Jinja2's: the loader's file name, "<template>" for a template without one."""
        return "<template>" if self._filename is None else self._filename

    @filename.setter
    def filename(self, value):
        self._filename = value

    @property
    def is_up_to_date(self):
        """As Jinja2's: False once this template's source changed."""
        return self._own_uptodate is None or self._own_uptodate()

    def _sources_up_to_date(self):
        """This template's source and those it loads (compiled with it) unchanged."""
        return all(up is None or up() for up in [self._own_uptodate] + self._uptodate)

    _wants_context = False
    _sources = ()
    _own_of = None

    def _bound_names(self):
        b = self.__dict__.get("_bound")
        if b is None:
            b = self._bound = _bound_names(self._sources)
        return b

    def _scanned_names(self):
        b = self.__dict__.get("_scanned")
        if b is None or b[0] is not self._source:  # (auto_reload replaces the source)
            b = self._scanned = (self._source, _scan_names(self._source or ""))
        return b[1]

    def _context(self, args, kwargs):
        """The render's state (template and env globals, then the arguments) and the env globals
        below it (None when there are none). self._parent: the state as given (a pass_context
        callable's Context.parent), or None when nothing of the render asks for a Context."""
        env = self.environment
        g = self.globals
        ctx = {**g.maps[1], **g.maps[0], **dict(*args, **kwargs)} if len(g.maps) == 2 else {**g, **dict(*args, **kwargs)}
        parent = dict(ctx) if self._wants_context else None
        for k, v in ctx.items():
            if callable(v) and _pass_arg_of(v) is not None:
                if parent is None and _pass_arg_of(v) == "context":
                    parent = dict(ctx)
                ctx[k] = _context_callable(env, k, v, self.name)
        if parent is None and any(callable(v) and _pass_arg_of(v) == "context" for v in env.globals.values()):
            parent = dict(ctx)
        self._parent_tls.parent = parent
        pol = env.policies  # (Jinja2 reads them when the template runs)
        st = self._policies
        if pol is not st[0] or (st[1] != pol.version if type(pol) is _Policies else st != _policies_state(pol)):
            fresh = env._compile(self._source, self.name, self._filename, None)
            self._t, self._policies = fresh._t, fresh._policies
        own = self._loaded_globals()
        if not env.globals and not own:
            return ctx, None
        # env.globals below the state too: what the templates it imports or includes without
        # context see (Jinja2 gives them the environment's globals), with the loaded templates'
        # own globals over them (Jinja2: Template.globals, a ChainMap over env.globals). Those
        # are not this template's: a name of them that the state does not hold is undefined
        # here and in what runs in this template's context (extends, includes with context).
        for k in own:
            if k not in ctx:
                ctx[k] = env.undefined(name=k)
        g = {**env.globals, **own} if own else env.globals
        return ctx, {k: _context_callable(env, k, v, self.name) if callable(v) and _pass_arg_of(v) is not None else v
                     for k, v in g.items()}

    def render(self, *args, **kwargs):
        ctx, eg = self._context(args, kwargs)
        parent = self._parent_tls.parent
        cell = [] if parent is not None else None  # (the render's handle while it runs: Context)
        token = _RENDERING.set((self, parent, cell)) if parent is not None else None
        dispatch = getattr(_DISPATCH, "fn", None)
        try:
            if eg is None and cell is None and dispatch is None:
                return self._t.render(ctx)
            out = self._t._render_globals(ctx, eg or {}, cell, dispatch)
            if isinstance(out, tuple):
                _tpl._raise(out)
            return out
        except _tpl.TemplateError as e:
            raise self._raised(e) from None
        finally:
            if token is not None:
                _RENDERING.reset(token)

    def _raised(self, e):
        """The Jinja2 exception to raise for tpl's error e."""
        err = self._error(e)
        err._tpl_status = e.status  # (a module's render tells its limits from the macro's errors)
        if not isinstance(err, TemplateSyntaxError) and e.lineno and hasattr(err, "add_note"):
            # located as the Python exceptions a callback raises are (Jinja2 shows the
            # template line in the traceback it rewrites)
            err.add_note("tpl: raised while rendering %s, line %d, column %d"
                         % (e.filename or e.name or "<template>", e.lineno, e.column))
        return err

    def _error(self, e):
        """The Jinja2 exception for tpl's error e."""
        if isinstance(e, _tpl.UndefinedError):
            return UndefinedError(e.message)
        # as Jinja2: Python's own exception (TypeError, ZeroDivisionError, ...) where Jinja2
        # raises one, else TemplateRuntimeError
        builtin = _BUILTIN_ERRORS.get(e.exception)
        if builtin is KeyError:
            # Python's KeyError holds the key and prints its repr, which is tpl's message
            try:
                return KeyError(ast.literal_eval(e.message))
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                return KeyError(e.message)
        if builtin is not None:
            return builtin(e.message)
        m = e.message or ""
        if e.exception == "TemplateNotFound":  # a name computed at render time
            return TemplateNotFound(m[10:-11] if m.startswith("template '") and m.endswith("' not found")
                                   else m)
        if e.exception in ("TemplateSyntaxError", "TemplateAssertionError"):
            # a template loaded when it runs (a computed name) does not compile: Jinja2's
            # TemplateSyntaxError located in that template ("in 'NAME' at LINE:COL: message")
            mt = re.match(r"in '(.*)' at (\d+):\d+: (.*)\Z", m, re.S)
            name, lineno, m = (mt.group(1), int(mt.group(2)), mt.group(3)) if mt else (self.name, e.lineno, m)
            cls = TemplateAssertionError if e.exception == "TemplateAssertionError" else TemplateSyntaxError
            err = cls(_jinja2_message(m), lineno, name)
            err.translated = True
            return err
        if e.exception == "TemplatesNotFound":  # (tpl's message lists the names as Jinja2's)
            head = "none of the templates given were found: "
            return TemplatesNotFound(m[len(head):].split(", ") if m.startswith(head) else (), message=m)
        own = {"TemplateError": TemplateError, "SecurityError": SecurityError,
               "FilterArgumentError": FilterArgumentError}.get(e.exception, TemplateRuntimeError)
        return own(_jinja2_message(e.message))

    def generate(self, *args, **kwargs):
        """As Jinja2's: the output in pieces as the render produces them (tpl hands its output
        buffer over each time it fills, about 4 KiB; joined, the pieces are render()'s text). The
        render runs in a thread of its own, paused while a piece waits to be taken; closing the
        generator early stops it."""
        ctx, eg = self._context(args, kwargs)
        return _generate(self, self._t, ctx, eg, self._parent_tls.parent)

    def stream(self, *args, **kwargs):
        return TemplateStream(self.generate(*args, **kwargs))

    # Template.module / make_module: the template run as Jinja2's make_module runs it, through a
    # template that imports it with context (tpl's import: its output dropped, its template-level
    # names exported as Jinja2 exports them) and hands its names, values and output to Python.
    # That render then goes on, in a thread of its own (_ModuleServer), serving the calls of the
    # module's macros from Python, so the template's top level runs once per module as Jinja2's.
    _MODULE_SRC = ("{% import __tpl_self as __tpl_m with context %}"
                   "{% for __tpl_n in __tpl_names(__tpl_m) %}{% set __tpl_v = __tpl_m[__tpl_n] %}"
                   "{% set _ = __tpl_put(__tpl_n, __tpl_v, __tpl_v is callable, (__tpl_v.name, __tpl_v.arguments, "
                   "__tpl_v.catch_kwargs, __tpl_v.catch_varargs, __tpl_v.caller) if __tpl_v is callable and "
                   "__tpl_v.catch_kwargs is defined else none) %}{% endfor %}"
                   "{% set _ = __tpl_put(none, __tpl_m|string, false, none) %}"
                   "{% set __tpl_d = {} %}{% for __tpl_n in __tpl_names(__tpl_m) %}"
                   "{% if __tpl_m[__tpl_n] is callable and __tpl_m[__tpl_n].catch_kwargs is defined %}"
                   "{% set _ = __tpl_d.update({__tpl_n: __tpl_m[__tpl_n]}) %}{% endif %}{% endfor %}"
                   "{% for _ in __tpl_k %}{% for _ in __tpl_k %}{% for _ in __tpl_k %}"
                   "{% set __tpl_r = __tpl_serve(__tpl_d) %}"
                   "{% set _ = __tpl_done(__tpl_m[__tpl_r[0]](*__tpl_r[1], **__tpl_r[2])) %}"
                   "{% endfor %}{% endfor %}{% endfor %}")
    # (__tpl_serve runs the macros' calls in Python, each through tpl_render_call, whose memory is
    # given back when the call returns a str: tpl_render_release — a loop of calls in flat memory;
    # it hands the template a call of another name, a template function, to run as before)
    _MACRO_SRC = ("{% import __tpl_self as __tpl_m with context %}"
                  "{% set _ = __tpl_put(__tpl_m[__tpl_n](*__tpl_a, **__tpl_k)) %}")

    def _own_wrapper(self, which):
        """The wrapper template (a Template of this environment) that imports this one."""
        cache = self.__dict__.setdefault("_wrappers", {})
        w = cache.get(which)
        if w is None or w._own_source is not self._source:
            key = self.name if self.name is not None else "<template>"
            src = (self._MODULE_SRC if which == "module" else self._MACRO_SRC).replace("__tpl_self", repr(key))
            w = self.environment._compile(src, "<tpl.jinja2 %s of %s>" % (which, key), None, self.globals.maps[0],
                                          own=(key, self))
            w._own_source = self._source
            cache[which] = w
        return w

    def make_module(self, vars=None, shared=False, locals=None):
        """As Jinja2's: the template run with vars (and the globals), as a TemplateModule: its
        exported template-level names as attributes (macros as Macro objects, callables
        returning str, Markup under autoescape) and str() its output. The template's top level
        runs once: the render that ran it stays, in a thread of its own, and runs the macros
        Python calls (one at a time). Runs it again (its output dropped) only when that render
        has ended — a macro called from Python reached a limit inside, or the render reached one
        of its limits (fuel, memory) after many calls (a macro's error is raised to the caller,
        the render goes on) — and, for that call only, when a Python callable the
        render is calling calls a macro of the same module."""
        if shared or locals:
            raise NotImplementedError("tpl.jinja2.Template.make_module(shared=/locals=)")
        if self.environment.is_async:
            raise NotImplementedError("tpl.jinja2.Template.make_module with enable_async")
        server = _ModuleServer(self, dict(vars or {}))
        got, body = server.start()
        return TemplateModule(self, got, body)

    @property
    def module(self):
        """As Jinja2's: make_module() once, kept."""
        m = self.__dict__.get("_module")
        if m is None:
            m = self._module = self.make_module()
        return m

    def __getattr__(self, name):
        if name in ("make_module_async", "new_context", "render_async", "generate_async",
                    "debug_info", "blocks", "root_render_func", "from_code", "from_module_dict"):
            raise NotImplementedError("tpl.jinja2.Template.%s" % name)
        raise AttributeError(name)

    def __repr__(self):
        return "<Template %r>" % (self.name or "memory")


class TemplateModule:
    """As Jinja2's: a template's exported names as attributes (Template.module/make_module);
    str() is the template's output, __html__() that as Markup."""

    def __init__(self, template, names, body):
        self._body_stream = list(body)
        self.__dict__.update(names)
        self.__name__ = template.name

    def __html__(self):
        return Markup("".join(self._body_stream))

    def __str__(self):
        return "".join(self._body_stream)

    def __repr__(self):
        name = "memory:%x" % id(self) if self.__name__ is None else repr(self.__name__)
        return "<%s %s>" % (type(self).__name__, name)


# How _tpl's call() says a macro called from Python reached a limit (the render ends with it)
_CALL_ENDS_RENDER = "tpl: a template's macro called from Python failed (status"


class _ServerStop(BaseException):
    """Ends a module's serving render (raised from its __tpl_next callback)."""


_SERVER_LOOP = [0] * 1000  # (the serving render's three nested loops: 10**9 macro calls at most)


_DISPATCH = threading.local()  # fn: how the renders this thread runs call Python callables (_tpl's dispatch)


def _module_serve(wrapper, ctx, resp, dispatch):
    """The thread of a _ModuleServer: the wrapper's render, until it is told to stop."""
    _DISPATCH.fn = dispatch
    try:
        wrapper.render(ctx)
    except _ServerStop:
        return
    except BaseException as e:
        resp.put(("raise", e))
        return
    resp.put(("raise", TemplateRuntimeError("tpl.jinja2: the module's render ended")))


def _run_call(call):
    """Runs, in this thread, a Python callable a render in another thread calls (its dispatch)."""
    f, args, kwargs, reply, rendering = call
    token = _RENDERING.set(rendering)  # (what pass_context callables find: that render)
    try:
        r = (True, f(*args, **(kwargs or {})))
    except BaseException as e:
        r = (False, e)
    finally:
        _RENDERING.reset(token)
    reply.put(r)


def _serve_calls(resp):
    """The next answer of a module's render, running the Python callables it calls meanwhile."""
    while True:
        kind, v = resp.get()
        if kind != "call":
            return kind, v
        _run_call(v)
        v = None


class _ModuleServer:
    """A TemplateModule's render (Template._MODULE_SRC) in a thread of its own: it runs the
    template's top level once and hands over the exported names and the output (start), then
    waits in a callback for the calls of the module's macros from Python (call), runs each and
    waits again (the callables it calls see the caller's context variables). Stopped when the last Macro and module referring to it are gone."""

    def __init__(self, template, vars):
        self._template = template
        self._vars = vars
        self._lock = threading.Lock()
        self._tid = None
        self._req = None
        self._resp = None
        self._served = 0
        self._stop = None
        self._caller = None  # the thread waiting for a macro call (it runs the render's callables)

    def start(self):
        """Starts the render; its exported names and output, or raises the top level's error."""
        import queue
        req, resp = queue.SimpleQueue(), queue.SimpleQueue()
        got, body = {}, []
        server = weakref.ref(self)

        def names(m):
            return list(m) if isinstance(m, dict) else []

        def put(n, v, is_callable, info):
            if n is None:
                body.append(str(v))
            elif v is None and is_callable:
                s = server()
                got[n] = Macro(s, n, info) if s is not None else None
            else:
                got[n] = v

        tokens = []
        calling = [True]  # a thread waits for this render (start, call): it runs the callables

        def next_call():
            # the callables a macro calls see the caller's context variables (contextvars: say,
            # Flask's request), as when Jinja2 runs the macro in the caller's thread
            while tokens:
                var, tok = tokens.pop()
                try:
                    var.reset(tok)
                except ValueError:
                    pass
            calling[0] = False
            resp.put(("ready", None))
            r = req.get()
            if r is None:
                raise _ServerStop()
            calling[0] = True
            for var, val in r[3].items():
                if var is not _RENDERING:
                    tokens.append((var, var.set(val)))
            return r[:3]

        def done(out):
            calling[0] = False
            resp.put(("ok", out))

        def serve(macros):
            # the module's macros (Macro objects of this render) called as Python asks, here; a
            # call of another name goes back to the template (its loop calls it, then serve again)
            while True:
                r = next_call()
                f = macros.get(r[0])
                if f is None:
                    return r
                try:
                    out = f(*r[1], **r[2])
                except RuntimeError as e:
                    if str(e).startswith(_CALL_ENDS_RENDER):
                        raise  # (a limit inside: the render ends with it, and the caller gets it)
                    calling[0] = False
                    resp.put(("err", e))
                    continue
                except _ServerStop:
                    raise
                except BaseException as e:  # noqa: BLE001 (the macro's error, raised to the caller)
                    calling[0] = False
                    resp.put(("err", e))
                    continue
                done(out)

        def dispatch(f, args, kwargs):
            # a Python callable the render calls runs in the thread that waits for the render, as
            # under Jinja2, whose module runs in the thread that makes it or calls its macros
            # (threading.local, threading.current_thread(): the caller's); serve runs here
            if not calling[0] or f is serve:
                return f(*args, **(kwargs or {}))
            return _call_in_waiter(resp, f, args, kwargs)

        for f in (names, put, next_call, done):
            f._tpl_raw = True  # (_tpl: a template-only value reaches them as None, not refused)
        ctx = {**self._vars, "__tpl_names": names, "__tpl_put": put, "__tpl_serve": serve, "__tpl_done": done,
               "__tpl_k": _SERVER_LOOP}
        th = threading.Thread(target=_module_serve, args=(self._template._own_wrapper("module"), ctx, resp, dispatch),
                              name="tpl.jinja2 module %s" % (self._template.name,), daemon=True)
        th.start()
        kind, v = _serve_calls(resp)
        if kind != "ready":
            th.join()
            raise v
        exported = dict(got)
        got.clear()  # (the render's callbacks keep no Macro: a Macro keeps this server alive)
        if self._stop is not None:
            self._stop.detach()
        self._tid, self._req, self._resp, self._served = th.ident, req, resp, 0
        self._stop = weakref.finalize(self, req.put, None)
        self._stop.atexit = False  # (at exit the thread stays waiting: no render runs while Python ends)
        return exported, body

    def call(self, name, args, kwargs):
        """The macro name called with args and kwargs, by the render (its output)."""
        if threading.get_ident() in (self._tid, self._caller):
            # a Python callable the render is calling calls a macro of this module: that render
            # is busy, so a render of its own (the top level again, its output dropped)
            out = []
            self._template._own_wrapper("macro").render(
                {**self._vars, "__tpl_n": name, "__tpl_a": args, "__tpl_k": kwargs, "__tpl_put": out.append})
            return out[0]
        with self._lock:
            for retry in (False, True):
                if self._req is None:
                    self.start()
                self._req.put((name, args, kwargs, contextvars.copy_context()))
                self._caller = threading.get_ident()
                try:
                    kind, v = _serve_calls(self._resp)
                finally:
                    self._caller = None
                if kind in ("ok", "err"):  # (err: the macro's error; the render goes on)
                    self._served += 1
                    if self._resp.get()[0] != "ready":  # (the render waits for the next call again)
                        self._req, self._tid = None, None
                        self._stop.detach()
                    if kind == "err":
                        try:
                            raise v
                        finally:
                            v = None
                    return v
                # the render ended: the macro failed, or a limit of the long render was reached
                # (a new render, which runs the top level again, has all of them afresh)
                served, self._req, self._tid = self._served, None, None
                self._stop.detach()
                if retry or not served or getattr(v, "_tpl_status", None) != 4:
                    raise v


class Macro:
    """As Jinja2's Macro, for a macro of a TemplateModule called from Python: name, arguments
    (the parameter names), catch_kwargs, catch_varargs, caller (whether its body uses kwargs,
    varargs, caller); calling it returns its output as str (Markup under autoescape). (Run by
    the module's render: see Template.make_module.)"""

    def __init__(self, server, key, info=None):
        self._server = server
        self._key = key  # (its name in the module)
        self.name = key
        if info is not None:
            self.name, arguments, self.catch_kwargs, self.catch_varargs, self.caller = info
            self.arguments = tuple(arguments)
            self.explicit_caller = "caller" in self.arguments
            self._argument_count = len(self.arguments)

    def __call__(self, *args, **kwargs):
        return self._server.call(self._key, args, kwargs)

    def __repr__(self):
        return "<%s %s>" % (type(self).__name__, "anonymous" if self.name is None else repr(self.name))


class _CompileFailed:
    """A template's program when a template it loads does not compile: each render raises that
    template's TemplateSyntaxError, as Jinja2's render does (it loads the other one then)."""

    def __init__(self, err):
        self.err = err

    def _fail(self, *args):
        raise self.err.with_traceback(None)

    render = _render_globals = _render_stream = _fail


def _generate(template, t, ctx, eg, parent=None):
    import queue
    import threading
    pieces = queue.SimpleQueue()  # str pieces, then ("end", result) or ("raise", exception)
    go_on = threading.Semaphore(0)
    stop = []

    def write(piece):  # (in the render's thread)
        pieces.put(piece)
        go_on.acquire()
        return not stop

    def dispatch(f, args, kwargs):
        # (in the render's thread) a Python callable the render calls runs in the thread that
        # takes the pieces, as Jinja2's generator runs the template there
        return _call_in_waiter(pieces, f, args, kwargs)

    def work():
        cell = None
        if parent is not None:
            cell = []
            _RENDERING.set((template, parent, cell))
        try:
            pieces.put(("end", t._render_stream(ctx, eg, write, cell, dispatch)))
        except BaseException as e:  # (a callback's exception: raised where the pieces are taken)
            pieces.put(("raise", e))

    th = threading.Thread(target=work, name="tpl.jinja2 generate", daemon=True)
    th.start()
    try:
        while True:
            item = pieces.get()
            if type(item) is str:
                try:
                    yield item
                finally:
                    go_on.release()
                continue
            if item[0] == "call":
                _run_call(item[1])
                item = None
                continue
            th.join()
            if item[0] == "raise":
                raise item[1]
            if isinstance(item[1], tuple):
                try:
                    _tpl._raise(item[1])
                except _tpl.TemplateError as e:
                    raise template._raised(e) from None
            return
    finally:
        if th.is_alive():  # closed early: the render stops at its next piece
            stop.append(True)
            go_on.release()
            th.join()


class TemplateStream:
    """As Jinja2's: iterates over the output (generate()'s pieces, or pieces of `size`
    characters with enable_buffering), dump() writes it to a file or path."""

    def __init__(self, gen):
        self._gen = gen
        self.buffered = False
        self._next = gen.__next__

    def dump(self, fp, encoding=None, errors="strict"):
        close = False
        if isinstance(fp, (str, os.PathLike)):
            fp = open(fp, "wb" if encoding is not None else "w", **({} if encoding is not None else {"encoding": "utf-8"}))
            close = True
        try:
            for piece in self:
                fp.write(piece.encode(encoding, errors) if encoding is not None else piece)
        finally:
            if close:
                fp.close()

    def disable_buffering(self):
        self._next = self._gen.__next__
        self.buffered = False

    def enable_buffering(self, size=5):
        if size <= 1:
            raise ValueError("buffer size too small")
        text = "".join(self._gen)
        self._next = iter([text[i:i + size] for i in range(0, len(text), size)] or [""]).__next__
        self.buffered = True

    def __iter__(self):
        return self

    def __next__(self):
        return self._next()


# ---------------------------------------------------------------- the rest of Jinja2's public names

def is_undefined(obj):
    """As Jinja2's: obj is an Undefined (what Python callables receive for an undefined value)."""
    return isinstance(obj, Undefined)


def clear_caches():
    """As Jinja2's; tpl.jinja2 keeps no module-level caches (each Environment has its own)."""


def consume(iterable):
    """As Jinja2's utils.consume."""
    for _ in iterable:
        pass


def _refused(qualname, doc):
    def refuse(*args, **kwargs):
        raise NotImplementedError("tpl.jinja2: %s (%s)" % (qualname, doc))
    return refuse


def _refused_class(qualname, doc, bases=()):
    """A class of Jinja2's API tpl.jinja2 does not provide: defining a subclass works (so a module
    declaring one imports), making an instance raises NotImplementedError naming it."""
    return type(qualname.rsplit(".", 1)[-1], bases, {"__init__": _refused(qualname, doc), "__doc__":
                                                     "Not provided by tpl.jinja2: %s (NotImplementedError)." % doc})


def make_logging_undefined(logger=None, base=Undefined):
    raise NotImplementedError("tpl.jinja2.make_logging_undefined (undefined classes other than Undefined, "
                              "StrictUndefined, ChainableUndefined and DebugUndefined)")


ModuleLoader = _refused_class("ModuleLoader", "tpl compiles templates itself; Template.save() gives .tplb bytes",
                              (BaseLoader,))
BytecodeCache = _refused_class("BytecodeCache", "bytecode caches: Template.save()/tpl.Template.load() keep a "
                               "compiled program")
FileSystemBytecodeCache = _refused_class("FileSystemBytecodeCache", "bytecode caches", (BytecodeCache,))
MemcachedBytecodeCache = _refused_class("MemcachedBytecodeCache", "bytecode caches", (BytecodeCache,))


class Extension:
    """Jinja2's extension base class: a subclass can be defined, but tpl.jinja2 runs only the
    extensions it provides (Environment(extensions=[Sub]) raises NotImplementedError naming it)."""

    def __init__(self, environment):
        raise NotImplementedError("tpl.jinja2: extension %s.%s" % (type(self).__module__, type(self).__name__))


class LoopControlExtension(Extension):
    """jinja2.ext.loopcontrols: {% break %} and {% continue %} (pass it in Environment(extensions=))."""


class ExprStmtExtension(Extension):
    """jinja2.ext.do: {% do expr %} (pass it in Environment(extensions=))."""


def _submodule(name, doc, provided, refused):
    """tpl.jinja2.NAME, as Jinja2's module jinja2.NAME: the names listed in provided, and for
    the names of Jinja2's module tpl.jinja2 does not provide, NotImplementedError naming them."""
    m = types.ModuleType(__name__ + "." + name, doc)
    g = globals()
    for n in provided.split():
        setattr(m, n, g[n])

    def __getattr__(attr):
        if attr in refused:
            raise NotImplementedError("tpl.jinja2: jinja2.%s.%s is not provided (%s)" % (name, attr, refused[attr]))
        raise AttributeError("module %r has no attribute %r" % (m.__name__, attr))
    m.__getattr__ = __getattr__
    sys.modules[m.__name__] = m
    return m


def _names(text, why):
    return dict.fromkeys(text.split(), why)


_INTERNAL = "Jinja2's internals: tpl has its own compiler and VM"
exceptions = _submodule(
    "exceptions", "Jinja2's exception classes.",
    "TemplateError TemplateNotFound TemplatesNotFound TemplateSyntaxError TemplateAssertionError "
    "TemplateRuntimeError UndefinedError SecurityError FilterArgumentError", {})
loaders = _submodule(
    "loaders", "Jinja2's template loaders.",
    "TemplateNotFound split_template_path BaseLoader FileSystemLoader PackageLoader DictLoader FunctionLoader "
    "PrefixLoader ChoiceLoader ModuleLoader", _names("open_if_exists internalcode", _INTERNAL))
environment = _submodule(
    "environment", "Jinja2's Environment and Template.",
    "Environment Template TemplateStream TemplateNotFound TemplateRuntimeError TemplatesNotFound "
    "TemplateSyntaxError UndefinedError Undefined EvalContext consume missing TemplateModule TemplateExpression",
    {**_names("CodeGenerator generate get_lexer Lexer TokenStream Parser Context new_context concat import_string "
              "internalcode LRUCache get_spontaneous_environment create_cache copy_cache load_extensions "
              "", _INTERNAL),
     **_names("DEFAULT_FILTERS DEFAULT_TESTS DEFAULT_NAMESPACE DEFAULT_POLICIES BLOCK_START_STRING BLOCK_END_STRING "
              "VARIABLE_START_STRING VARIABLE_END_STRING COMMENT_START_STRING COMMENT_END_STRING "
              "LINE_STATEMENT_PREFIX LINE_COMMENT_PREFIX TRIM_BLOCKS LSTRIP_BLOCKS NEWLINE_SEQUENCE "
              "KEEP_TRAILING_NEWLINE", "Jinja2's defaults module")})
runtime = _submodule(
    "runtime", "Jinja2's undefined classes.",
    "Undefined StrictUndefined ChainableUndefined DebugUndefined make_logging_undefined EvalContext missing "
    "object_type_repr pass_eval_context TemplateNotFound TemplateRuntimeError UndefinedError Macro Namespace",
    _names("auto_aiter auto_await concat internalcode exported async_exported identity markup_join "
           "str_join new_context TemplateReference Context BlockReference LoopContext AsyncLoopContext",
           "the template context, loops and macros are tpl's VM's"))
utils = _submodule(
    "utils", "Jinja2's helpers that concern rendering.",
    "missing pass_context pass_eval_context pass_environment is_undefined consume clear_caches object_type_repr "
    "select_autoescape Namespace",
    {**_names("internal_code internalcode concat import_string open_if_exists pformat url_quote LRUCache",
              _INTERNAL),
     **_names("urlize generate_lorem_ipsum Cycler Joiner",
              "the urlize filter and the lipsum, cycler and joiner globals are tpl's, in templates"),
     **_names("htmlsafe_json_dumps", "the tojson filter is tpl's, in templates")})
ext = _submodule(
    "ext", "Jinja2's extensions: loopcontrols and do are provided (pass them in Environment(extensions=)).",
    "Extension LoopControlExtension ExprStmtExtension",
    _names("InternationalizationExtension i18n DebugExtension debug extract_from_ast babel_extract "
           "GETTEXT_FUNCTIONS", "extensions other than loopcontrols and do; i18n is tpl's own tr()"))
ext.loopcontrols = LoopControlExtension
ext.do = ExprStmtExtension
_SANDBOX = ("sandboxed rendering: as in Jinja2's plain Environment, a template reaches the attributes of the Python "
            "objects given to it")
sandbox = _submodule(
    "sandbox", "Jinja2's sandbox: not provided.", "",
    _names("SandboxedEnvironment ImmutableSandboxedEnvironment SandboxedFormatter SandboxedEscapeFormatter "
           "safe_range unsafe is_internal_attribute modifies_known_mutable MAX_RANGE UNSAFE_FUNCTION_ATTRIBUTES "
           "UNSAFE_METHOD_ATTRIBUTES UNSAFE_GENERATOR_ATTRIBUTES UNSAFE_COROUTINE_ATTRIBUTES "
           "UNSAFE_ASYNC_GENERATOR_ATTRIBUTES", _SANDBOX))
nativetypes = _submodule(
    "nativetypes", "Jinja2's native types: not provided.", "",
    _names("NativeEnvironment NativeTemplate NativeCodeGenerator native_concat has_safe_repr",
           "native Python values as the result: tpl renders text"))
bccache = _submodule(
    "bccache", "Jinja2's bytecode caches: not provided.", "BytecodeCache FileSystemBytecodeCache MemcachedBytecodeCache",
    _names("Bucket bc_version bc_magic", "bytecode caches"))
meta = _submodule(
    "meta", "Jinja2's template introspection: not provided (tpl.Template(...).reads is tpl's).", "",
    _names("find_undeclared_variables find_referenced_templates TrackingCodeGenerator",
           "it reads Jinja2's AST (Environment.parse); tpl.Template(source).reads lists what a template reads"))
_INTERNAL_MODULES = ("nodes lexer parser compiler idtracking optimizer visitor debug async_utils defaults constants "
                     "filters tests").split()


def __getattr__(name):
    if name in _INTERNAL_MODULES:
        raise NotImplementedError("tpl.jinja2: jinja2.%s is not provided (%s)" % (name, _INTERNAL))
    raise AttributeError("module %r has no attribute %r" % (__name__, name))
