"""tpl.jinja2: Jinja2's rendering API on tpl (issue 17 §3), so that

    import tpl.jinja2 as jinja2

renders templates byte-identically to Jinja2. Provided: Environment (loader, trim_blocks,
lstrip_blocks, keep_trailing_newline, undefined=Undefined|StrictUndefined, globals with Python
values and callables), from_string, get_template, select_template, Template.render/generate,
DictLoader, FileSystemLoader, FunctionLoader, ChoiceLoader, BaseLoader, Markup/escape (from
markupsafe when installed), and the exception classes with Jinja2's attributes.

Jinja2 API this module does not provide raises NotImplementedError naming it (never a silent
difference): autoescape other than False, finalize, custom filters and tests
(Environment.filters/.tests additions), ChainableUndefined and other undefined classes,
extensions (loopcontrols included: tpl enables loop controls only in the hf profile), custom
delimiters, PackageLoader, PrefixLoader, ModuleLoader, Template.stream/module/make_module,
Environment.compile/parse/lex/overlay, bytecode caches, sandboxing.
"""
import os

import tpl as _tpl

try:
    from markupsafe import Markup, escape  # noqa: F401  (Jinja2 re-exports these too)
except ImportError:  # pragma: no cover
    Markup = escape = None

__all__ = ["Environment", "Template", "BaseLoader", "DictLoader", "FileSystemLoader", "FunctionLoader",
           "ChoiceLoader", "PackageLoader", "Undefined", "StrictUndefined", "ChainableUndefined",
           "TemplateError", "TemplateSyntaxError", "UndefinedError", "TemplateNotFound", "TemplatesNotFound",
           "TemplateRuntimeError", "SecurityError", "TemplateAssertionError", "Markup", "escape",
           "select_autoescape"]


# ---------------------------------------------------------------- exceptions (Jinja2's names)

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
                         + ", ".join(map(str, names)))
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
        return "%s\n  line %s" % (self.message, self.lineno)


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


# ---------------------------------------------------------------- undefined classes (markers)

class Undefined:
    """Jinja2's default: lenient undefined values (tpl's jinja2 profile)."""


class StrictUndefined(Undefined):
    """Undefined values are errors as soon as they are printed, iterated or tested."""


class ChainableUndefined(Undefined):
    """Not provided by tpl (NotImplementedError when used)."""


class DebugUndefined(Undefined):
    """Not provided by tpl (NotImplementedError when used)."""


def select_autoescape(enabled_extensions=("html", "htm", "xml"), disabled_extensions=(), default_for_string=True,
                      default=False):
    """As Jinja2's: a function template name -> bool. tpl.jinja2 accepts it only when it says
    False for every template it compiles (autoescaping is not provided)."""
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
        pieces = [p for p in template.split("/") if p and p != "."]
        if any(p == ".." for p in pieces) or os.path.sep in template.replace("/", "") and os.path.sep != "/":
            raise TemplateNotFound(template)
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


class PackageLoader(BaseLoader):
    def __init__(self, *args, **kwargs):
        raise NotImplementedError("tpl.jinja2.PackageLoader (use FileSystemLoader on the package folder)")


# ---------------------------------------------------------------- environment and templates

_SUPPORTED_DEFAULTS = {
    "block_start_string": "{%", "block_end_string": "%}", "variable_start_string": "{{",
    "variable_end_string": "}}", "comment_start_string": "{#", "comment_end_string": "#}",
    "line_statement_prefix": None, "line_comment_prefix": None, "newline_sequence": "\n",
    "optimized": True, "cache_size": 400, "auto_reload": True, "bytecode_cache": None, "enable_async": False,
}


class Environment:
    def __init__(self, loader=None, trim_blocks=False, lstrip_blocks=False, keep_trailing_newline=False,
                 autoescape=False, undefined=Undefined, extensions=(), finalize=None, **options):
        for k, v in options.items():
            if k not in _SUPPORTED_DEFAULTS:
                raise TypeError("Environment() got an unexpected keyword argument %r" % (k,))
            if v != _SUPPORTED_DEFAULTS[k]:
                raise NotImplementedError("tpl.jinja2.Environment(%s=%r)" % (k, v))
        if extensions:
            raise NotImplementedError("tpl.jinja2.Environment(extensions=%r)" % (list(extensions),))
        if finalize is not None:
            raise NotImplementedError("tpl.jinja2.Environment(finalize=...)")
        if undefined not in (Undefined, StrictUndefined):
            raise NotImplementedError("tpl.jinja2.Environment(undefined=%s)" % getattr(undefined, "__name__", undefined))
        self.loader = loader
        self.trim_blocks = trim_blocks
        self.lstrip_blocks = lstrip_blocks
        self.keep_trailing_newline = keep_trailing_newline
        self.autoescape = autoescape
        self.undefined = undefined
        self.finalize = None
        self.extensions = {}
        self.globals = {}
        self.filters = {}
        self.tests = {}
        self.policies = {}
        self.cache = {}

    def _check(self, name):
        ae = self.autoescape(name) if callable(self.autoescape) else self.autoescape
        if ae:
            raise NotImplementedError("tpl.jinja2: autoescape (Environment(autoescape=...) true for %r)" % (name,))
        if self.filters:
            raise NotImplementedError("tpl.jinja2: custom filters (Environment.filters: %s)" % ", ".join(sorted(self.filters)))
        if self.tests:
            raise NotImplementedError("tpl.jinja2: custom tests (Environment.tests: %s)" % ", ".join(sorted(self.tests)))

    def _compile(self, source, name, filename, globals):
        self._check(name)

        def loader(n):
            if self.loader is None:
                return None
            try:
                return self.loader.get_source(self, n)[0]
            except TemplateNotFound:
                return None
        try:
            t = _tpl.Template(source, name=filename or name, loader=loader, trim_blocks=self.trim_blocks,
                              lstrip_blocks=self.lstrip_blocks, keep_trailing_newline=self.keep_trailing_newline,
                              strict=self.undefined is StrictUndefined)
        except _tpl.TemplateSyntaxError as e:
            if e.message and e.message.startswith("template '") and e.message.endswith("' not found"):
                raise TemplateNotFound(e.message[10:-11]) from None
            raise TemplateSyntaxError(e.message, e.lineno, name, filename) from None
        return Template._from_tpl(self, t, name, filename, globals)

    def from_string(self, source, globals=None, template_class=None):
        return self._compile(source, None, None, globals)

    def get_template(self, name, parent=None, globals=None):
        if isinstance(name, Template):
            return name
        if self.loader is None:
            raise TypeError("no loader for this environment specified")
        source, filename, _ = self.loader.get_source(self, name)
        return self._compile(source, name, filename, globals)

    def select_template(self, names, parent=None, globals=None):
        names = list(names)
        if not names:
            raise TemplatesNotFound(message="Tried to select from an empty list of templates.")
        for n in names:
            try:
                return self.get_template(n, parent, globals)
            except TemplateNotFound:
                pass
        raise TemplatesNotFound(names)

    def get_or_select_template(self, template_name_or_list, parent=None, globals=None):
        if isinstance(template_name_or_list, (str, Template)):
            return self.get_template(template_name_or_list, parent, globals)
        return self.select_template(template_name_or_list, parent, globals)

    def list_templates(self, extensions=None, filter_func=None):
        names = self.loader.list_templates()
        if extensions is not None:
            names = [n for n in names if n.rsplit(".", 1)[-1] in extensions]
        if filter_func is not None:
            names = [n for n in names if filter_func(n)]
        return names

    def __getattr__(self, name):
        if name in ("compile", "parse", "lex", "preprocess", "overlay", "compile_templates", "compile_expression",
                    "extend", "add_extension", "iter_extensions", "make_globals", "join_path", "handle_exception"):
            raise NotImplementedError("tpl.jinja2.Environment.%s" % name)
        raise AttributeError(name)


class Template:
    """A template of an Environment (Template(source) makes one with the default environment)."""

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
        self.filename = filename
        self.globals = dict(globals or {})
        return self

    def render(self, *args, **kwargs):
        ctx = {**self.environment.globals, **self.globals, **dict(*args, **kwargs)}
        try:
            return self._t.render(ctx)
        except _tpl.UndefinedError as e:
            raise UndefinedError(e.message) from None
        except _tpl.TemplateError as e:
            raise TemplateRuntimeError(e.message) from None

    def generate(self, *args, **kwargs):
        yield self.render(*args, **kwargs)

    def __getattr__(self, name):
        if name in ("stream", "module", "make_module", "new_context", "render_async", "generate_async",
                    "is_up_to_date", "debug_info", "blocks", "root_render_func"):
            raise NotImplementedError("tpl.jinja2.Template.%s" % name)
        raise AttributeError(name)

    def __repr__(self):
        return "<Template %r>" % (self.name or "memory")
