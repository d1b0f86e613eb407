"""tpl.jinja2 against real Jinja2 in the same process (session 33, fixpy2): Python callables
under the callable test, identity of a template value handed twice, lists a callable keeps and
changes later, a macro's repr."""
import jinja2
import pytest

import tpl.jinja2 as tj


def render_both(src, setup=None, **ctx):
    """Renders src under both engines (fresh context values from ctx's factories): the outputs,
    an exception as 'EXC Class: message'."""
    outs = []
    for m in (jinja2, tj):
        e = m.Environment()
        if setup:
            setup(m, e)
        try:
            outs.append(e.from_string(src).render(**{k: f() for k, f in ctx.items()}))
        except Exception as ex:  # noqa: BLE001 (compared between the engines)
            outs.append("EXC %s: %s" % (type(ex).__name__, ex))
    return outs


class Obj:
    def meth(self):
        return 1


class CallMe:
    def __call__(self):
        return 2


def _fn():
    return 3


@pytest.mark.parametrize("src", [
    "{{ f is callable }}",
    "{{ g is callable }}|{{ c is callable }}|{{ k is callable }}|{{ o is callable }}",
    "{{ o.meth is callable }}|{{ o|attr('meth') is callable }}",
    "{{ [f, 1, o, o.meth, 'x']|select('callable')|list|length }}",
    "{{ [f, 1, o.meth]|reject('callable')|list }}",
    "{{ 1 is callable }}|{{ 'x' is callable }}|{{ [] is callable }}|{{ {} is callable }}",
])
def test_python_callables_are_callable(src):
    """A Python builtin, function, bound method, class or object with __call__ passes the
    callable test (Python's callable()); other objects do not."""
    outs = render_both(src, f=lambda: len, g=lambda: _fn, c=lambda: CallMe(), k=lambda: Obj, o=lambda: Obj())
    assert outs[1] == outs[0]


@pytest.mark.parametrize("src", [
    "{% set l = [1] %}{{ f(l, l) }}",
    "{% set l = [1] %}{{ f2([l, l]) }}",
    "{% set d = {'a': 1} %}{{ f(d, d) }}",
    "{% set d = {'a': 1} %}{{ f(d, x=d) }}",
    "{% set l = [1] %}{{ f(l, [1]) }}",
    "{% set l = [[1]] %}{{ f(l[0], l[0]) }}",
    "{% set l = [1] %}{% set m = l %}{{ f(l, m) }}",
])
def test_a_template_value_handed_twice_is_one_object(src):
    """A template list or dict reaches a Python call as one object however often it is
    passed (`a is b`, as Jinja2's)."""
    def f(a, b=None, x=None):
        return repr(a is (x if x is not None else b))

    def f2(v):
        return repr(v[0] is v[1])
    outs = render_both(src, setup=lambda m, e: e.globals.update(f=f, f2=f2))
    assert outs[1] == outs[0]


def _keeper():
    kept = []

    def keep(v):
        kept.append(v)
        return ""

    def later():
        if isinstance(kept[0], dict):
            kept[0]["k"] = 7
        else:
            kept[0].append(7)
        return ""

    def noop():
        return ""
    return keep, later, noop


@pytest.mark.parametrize("src", [
    "{% set l = [1] %}{{ keep(l) }}{{ later() }}{{ l }}",
    "{% set d = {} %}{{ keep(d) }}{{ later() }}{{ d }}",
    "{% set l = [[1]] %}{{ keep(l[0]) }}{{ noop() }}{{ later() }}{{ l }}",
    "{% set l = [1] %}{{ keep(l) }}{% for i in [1, 2] %}{{ noop() }}{% endfor %}{{ later() }}{{ l }}",
])
def test_a_kept_value_changed_later_is_seen(src):
    """A list or dict a callable keeps and changes in a later call: the template sees the change
    when that call returns (its value made to hold Python's items in place), as Jinja2's one
    object (was a NotImplementedError)."""
    def setup(m, e):
        keep, later, noop = _keeper()
        e.globals.update(keep=keep, later=later, noop=noop)
    outs = render_both(src, setup=setup)
    assert outs[1] == outs[0]


@pytest.mark.parametrize("src", [
    "{% set l = [1] %}{{ keep(l) }}{{ noop() }}{{ l }}",
    "{% set l = [1] %}{% for i in range(3) %}{{ g(l) }}{{ noop() }}{% endfor %}{{ l }}",
])
def test_a_kept_value_unchanged_is_fine(src):
    def setup(m, e):
        keep, later, noop = _keeper()
        e.globals.update(keep=keep, later=later, noop=noop, g=lambda v: len(v))
    outs = render_both(src, setup=setup)
    assert outs[1] == outs[0]


@pytest.mark.parametrize("src", [
    "{% macro foo() %}{% endmacro %}{{ r(foo) }}",
    "{% macro w() %}{{ r(caller) }}{% endmacro %}{% call w() %}x{% endcall %}",
])
def test_a_macros_repr_and_type_name(src):
    """A macro handed to Python shows as Jinja2's Macro (repr, type name)."""
    def r(m):
        return "%r %s" % (m, type(m).__name__)
    outs = render_both(src, setup=lambda m, e: e.globals.update(r=r))
    assert outs[1] == outs[0]
