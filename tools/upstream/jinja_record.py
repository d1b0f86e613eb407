"""pytest plugin: records every Template.render of Jinja2's own test suite (env options, source,
loader templates, context, result) into $J22_OUT as JSON lines."""
import json, os, sys, traceback
import pytest
import jinja2
from jinja2 import Environment, Template, loaders, nodes
from jinja2.environment import Environment as Env

OUT = open(os.environ["J22_OUT"], "a", encoding="utf-8")
CUR = {"test": None}
_default = Environment()


def ok_value(v, depth=0):
    if depth > 20:
        return False
    t = type(v)
    if v is None or t in (bool, int, str):
        return True
    if t is float:
        return v == v and v not in (float("inf"), float("-inf"))
    if t is list:
        return all(ok_value(x, depth + 1) for x in v)
    if t is dict:
        return all(type(k) is str and ok_value(x, depth + 1) for k, x in v.items())
    return False


def conv_value(v, depth=0):
    """Best-effort JSON form of a context value (tuple/range -> list, record objects -> dict of
    their fields); raises TypeError for anything else. Never consumes an iterator."""
    import dataclasses
    if depth > 20:
        raise TypeError
    t = type(v)
    if v is None or t in (bool, int, str):
        return v
    if t is float and v == v and v not in (float("inf"), float("-inf")):
        return v
    if t in (list, tuple, range):
        return [conv_value(x, depth + 1) for x in v]
    if t is dict:
        if not all(type(k) is str for k in v):
            raise TypeError
        return {k: conv_value(x, depth + 1) for k, x in v.items()}
    if hasattr(v, "_asdict"):
        return {k: conv_value(x, depth + 1) for k, x in v._asdict().items()}
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {f.name: conv_value(getattr(v, f.name), depth + 1) for f in dataclasses.fields(v)}
    raise TypeError(t.__name__)


def conv_ctx(ctx):
    out = {}
    for k, v in ctx.items():
        try:
            out[k] = conv_value(v)
        except TypeError:
            pass  # left out: kept only when the reference engine prints the same without it
    return out


def env_info(env):
    info = {"cls": type(env).__name__}
    for k in ("trim_blocks", "lstrip_blocks", "keep_trailing_newline", "block_start_string",
              "block_end_string", "variable_start_string", "variable_end_string",
              "comment_start_string", "comment_end_string", "line_statement_prefix",
              "line_comment_prefix", "newline_sequence", "optimized", "is_async"):
        info[k] = getattr(env, k)
    ae = env.autoescape
    info["autoescape"] = ae if isinstance(ae, bool) else "callable"
    info["finalize"] = None if env.finalize is None else getattr(env.finalize, "__name__", "callable")
    info["undefined"] = env.undefined.__name__
    info["extensions"] = sorted(env.extensions)
    info["filters_custom"] = sorted(k for k, v in env.filters.items() if _default.filters.get(k) is not v)
    info["tests_custom"] = sorted(k for k, v in env.tests.items() if _default.tests.get(k) is not v)
    info["globals_custom"] = sorted(k for k, v in env.globals.items() if _default.globals.get(k) is not v)
    info["policies_custom"] = sorted(k for k, v in env.policies.items() if _default.policies.get(k) != v)
    ld = env.loader
    if ld is None:
        info["loader"] = None
    elif type(ld) is loaders.DictLoader:
        info["loader"] = {k: v for k, v in ld.mapping.items() if isinstance(v, str)}
    else:
        info["loader"] = type(ld).__name__
    return info


orig_from_string = Env.from_string
orig_get_template = Env.get_template
orig_render = Template.render


def from_string(self, source, *a, **kw):
    try:
        t = orig_from_string(self, source, *a, **kw)
    except Exception as e:
        if CUR["test"] and isinstance(source, str):
            OUT.write(json.dumps({"test": CUR["test"], "src": source, "name": None, "env": env_info(self),
                                  "ctx": {}, "ctx_ok": True, "compile": True,
                                  "exc": "%s: %s" % (type(e).__name__, e)}) + "\n"); OUT.flush()
        raise
    if isinstance(source, str):
        t._j22 = {"src": source, "name": None}
    return t


def get_template(self, name, *a, **kw):
    t = orig_get_template(self, name, *a, **kw)
    if not hasattr(t, "_j22") and isinstance(name, str):
        try:
            src = self.loader.get_source(self, name)[0] if self.loader else None
        except Exception:
            src = None
        if src is not None:
            t._j22 = {"src": src, "name": name}
    return t


def render(self, *args, **kwargs):
    rec = getattr(self, "_j22", None)
    entry = None
    if rec is not None and CUR["test"]:
        try:
            ctx = dict(*args, **kwargs)
        except Exception:
            ctx = None
        entry = {"test": CUR["test"], "src": rec["src"], "name": rec["name"],
                 "env": env_info(self.environment),
                 "ctx": ctx if ctx is not None and ok_value(ctx) else None,
                 "ctx_ok": ctx is not None and ok_value(ctx),
                 "ctx_conv": conv_ctx(ctx) if ctx is not None and not ok_value(ctx) else None,
                 "ctx_repr": repr(ctx)[:300]}
    try:
        out = orig_render(self, *args, **kwargs)
    except Exception as e:
        if entry:
            entry["exc"] = "%s: %s" % (type(e).__name__, e)
            OUT.write(json.dumps(entry) + "\n"); OUT.flush()
        raise
    if entry:
        entry["out"] = out
        OUT.write(json.dumps(entry) + "\n"); OUT.flush()
    return out


Env.from_string = from_string
Env.get_template = get_template
Template.render = render


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    CUR["test"] = item.nodeid
    yield
    CUR["test"] = None
