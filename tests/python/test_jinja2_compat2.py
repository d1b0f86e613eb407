"""tpl.jinja2 against real Jinja2 in the same process (session 33): host objects' misses name
their class, macros handed to Python, values a callable changes, generators."""
import jinja2
import pytest

import tpl.jinja2 as tj


class Foo:
    y = 1


class ItemFoo:
    y = 1

    def __getitem__(self, k):
        if k == "it":
            return "item"
        raise KeyError(k)


def render_both(src, undefined="Undefined", setup=None, **ctx):
    """Renders src under both engines (fresh context values from ctx's factories): the outputs,
    an exception as 'EXC Class: message'."""
    outs = []
    for m in (jinja2, tj):
        e = m.Environment(undefined=getattr(m, undefined))
        if setup:
            setup(m, e)
        try:
            outs.append(e.from_string(src).render(**{k: f() for k, f in ctx.items()}))
        except Exception as ex:  # noqa: BLE001 (compared between the engines)
            outs.append("EXC %s: %s" % (type(ex).__name__, ex))
    return outs


MISS_CASES = ["{{ o.x.y }}", "[{{ o.x }}]", "[{{ o['x'] }}]", "{{ o[0].z }}", "{{ o.x is defined }}",
              "{{ o.x|default('d') }}", "{{ o.y }}", "{{ o|attr('y') }}|{{ o|attr('q') }}", "{{ o.x ~ 'a' }}",
              "{{ i.it }}|{{ i['y'] }}|{{ i|attr('it') }}|{{ i.q }}|{{ i[3] }}", "{{ d.x.z }}"]


@pytest.mark.parametrize("undefined", ["Undefined", "DebugUndefined", "StrictUndefined", "ChainableUndefined"])
@pytest.mark.parametrize("src", MISS_CASES)
def test_a_host_objects_miss_names_its_class(src, undefined):
    """A missing attribute or item of a Python object is Jinja2's undefined naming the object's
    class ("'__main__.Foo object' has no attribute 'x'"), in messages and DebugUndefined's
    output; the attr filter reads attributes only (never the item)."""
    import datetime
    outs = render_both(src, undefined, o=Foo, i=ItemFoo, d=lambda: datetime.date(2020, 1, 2))
    assert outs[1] == outs[0]


@pytest.mark.parametrize("src", [
    "{% macro m(a, b=2) %}{{ varargs }}{{ kwargs }}{% endmacro %}{{ h(m) }}",
    "{% macro m(a, b=2) %}{{ caller() }}{% endmacro %}{{ h(m) }}",
    "{% macro m(caller) %}{% endmacro %}{{ h(m) }}",
    "{% macro w() %}{{ h(caller) }}{% endmacro %}{% call w() %}x{% endcall %}",
    "{% macro w() %}{{ h(caller) }}{% endmacro %}{% call(p, q=1) w() %}{{ varargs }}{% endcall %}",
])
def test_macro_attributes_seen_from_python(src):
    """A macro or caller handed to Python shows Jinja2's Macro attributes (read when handed
    over, so also after the render)."""
    kept = []

    def h(f):
        kept.append(f)
        return "%r %r %r %r %r %r" % (f.name, f.arguments, f.catch_kwargs, f.catch_varargs, f.caller,
                                      f.explicit_caller)
    outs = render_both(src, setup=lambda m, e: e.globals.update(h=h))
    assert outs[1] == outs[0]
    assert (kept[0].name, kept[0].arguments) == (kept[1].name, kept[1].arguments)


def _append(v):
    if isinstance(v, dict):
        v["k"] = 1
    else:
        v.append(2)
    return ""


@pytest.mark.parametrize("src", [
    "{% set l = [1] %}{{ f(l) }}{{ l }}",
    "{% set d = {} %}{{ f(d) }}{{ d }}",
    "{% set l = [1] %}{{ l|g }}{{ l }}",
    "{% set l = [[1]] %}{{ f(l[0]) }}{{ l }}",
    "{% set l = [{}] %}{{ f(l[0]) }}{{ l }}",
    "{% for x in [[1]] %}{{ f(x) }}{{ x }}{% endfor %}",
    "{% set l = [[1]] %}{% set a = l[0] %}{{ f(a) }}{{ l }}{{ a is sameas l[0] }}",
    "{% set l = [1] %}{{ f(l) }}{{ f(l) }}{{ l }}{% set _ = l.append(3) %}{{ f(l) }}{{ l }}",
])
def test_a_callable_changing_a_template_value_is_seen(src):
    """A list or dict from the template reaches a Python callable as a copy: what the callable
    does to it is made the template's too when the call returns (tpl_render_assign: in place,
    every holder of it sees it), as Jinja2's template, which holds the object itself (was a
    NotImplementedError)."""
    def setup(m, e):
        e.globals["f"] = _append
        e.filters["g"] = _append
    outs = render_both(src, setup=setup)
    assert outs[1] == outs[0]


def test_a_callable_changing_a_list_the_host_passed_in_is_refused():
    """A list of the render's state (the host's, converted before the render) changed by a callable
    stays refused (NotImplementedError naming it), never a silently different output."""
    def setup(m, e):
        e.globals["f"] = _append
    outs = render_both("{{ f(s) }}{{ s }}", setup=setup, s=lambda: [1])
    assert outs[1].startswith("EXC NotImplementedError: tpl: a Python callable changed a "), outs


@pytest.mark.parametrize("src", [
    "{% set l = [3, 1, 2] %}{{ f(l) }}{{ l }}",
    "{% set d = {'a': [1]} %}{{ f(d) }}{{ d }}",
    "{{ f([1, {'x': [2]}]) }}",
    "{% set l = [1] %}{{ l|g }}{{ l }}",
])
def test_a_callable_reading_a_template_value(src):
    """Callables that only read (or copy) what they are given are unaffected."""
    def setup(m, e):
        e.globals["f"] = lambda v: str(sorted(v) if isinstance(v, list) else dict(v))
        e.filters["g"] = lambda v: v + [5]
    outs = render_both(src, setup=setup)
    assert outs[1] == outs[0]


def _gen():
    yield 1
    yield 2


@pytest.mark.parametrize("src", [
    "{{ g|length }}{{ g|list }}",
    "{{ i|length }}",
    "{% for x in g %}{{ loop.length }}{% endfor %}{{ g|list }}",
    "{% for x in g %}{{ x }}{% endfor %}|{% for x in g %}{{ x }}{% endfor %}",
    "{{ g|list }}{{ g|list }}",
    "{{ f(g) }}{{ g|list }}",
    "{% set h = mk() %}{{ h|join }}{{ h|join }}",
])
def test_one_shot_iterators(src):
    """A generator or iterator from Python: |length is Python's TypeError (it has no len()),
    a second loop sees it empty, a callable taking an item leaves the rest."""
    def setup(m, e):
        e.globals["f"] = next
        e.globals["mk"] = _gen
    outs = render_both(src, setup=setup, g=_gen, i=lambda: iter([1, 2]))
    assert outs[1] == outs[0]


class Holder:
    def __init__(self):
        self.l = [1]
        self.d = {"x": [1]}

    def get(self):
        return [1]


@pytest.mark.parametrize("src", [
    "{{ o.l.append(2) }}{{ o.l }}",
    "{% set x = o.l %}{{ x.append(2) }}{{ o.l }}",
    "{{ o.d.update(a=1) }}{{ o.d }}",
    "{{ o.d.x.append(2) }}{{ o.d }}",
    "{{ o['d'].pop('x') }}{{ o.d }}",
    "{{ (o|attr('l')).append(2) }}{{ o.l }}",
])
def test_changing_a_python_objects_list_is_refused(src):
    """A list or dict read from a Python object's attribute or item is tpl's copy: changing it
    in place (append, update, pop) is refused, located, never the silently unchanged object."""
    outs = render_both(src, o=Holder)
    assert outs[1].startswith("EXC TemplateRuntimeError: unsupported: ") and "read from a Python object" in outs[1], outs


@pytest.mark.parametrize("src", [
    "{% set x = o.l|list %}{{ x.append(2) }}{{ x }}{{ o.l }}",
    "{% set x = o.get() %}{{ x.append(2) }}{{ x }}",
    "{% set x = [] %}{% for i in o.l %}{{ x.append(i) }}{% endfor %}{{ x }}",
])
def test_changing_a_copy_of_a_python_objects_list(src):
    outs = render_both(src, o=Holder)
    assert outs[1] == outs[0]


def _ctx_fn(m):
    @m.pass_context
    def c(ctx, n):
        v = ctx.get(n, "MISSING")
        v = "callable" if callable(v) else v
        keys = sorted(k for k in ctx.keys() if k not in ("range", "dict", "lipsum", "cycler", "joiner", "namespace", "c"))
        return "%s|%s|%s|%s" % (v, n in ctx, keys, sorted(ctx.exported_vars))
    return c


@pytest.mark.parametrize("src", [
    "{% for a in [1] %}{{ c('a') }}{% endfor %}",
    "{% for a in items %}{{ c('items') }}{{ c('a') }}{% endfor %}",
    "{% for a, b in [(1, 2)] %}{{ c('b') }}{% endfor %}",
    "{% with a = 3 %}{{ c('a') }}{% endwith %}",
    "{% macro m(a) %}{{ c('a') }}{% endmacro %}{{ m(4) }}",
    "{{ c('m') }}{% macro m() %}{% endmacro %}{{ c('m') }}",
    "{% if 1 %}{% macro m() %}{% endmacro %}{% endif %}{{ c('m') }}",
    "{% macro _m() %}{% endmacro %}{{ c('_m') }}",
    "{% with a = 1 %}{% set b = 2 %}{{ c('b') }}{% endwith %}{{ c('b') }}",
    "{% set a = 1 %}{% macro m() %}{% set a = 7 %}{{ c('a') }}{% endmacro %}{{ m() }}{{ c('a') }}",
    "{% macro m() %}{% set a = 7 %}{{ c('a') }}{% endmacro %}{{ m() }}{% set a = 3 %}{{ m() }}",
    "{% filter upper %}{% set a = 'x' %}{{ c('a') }}{% endfilter %}{{ c('a') }}",
    "{% macro w() %}{{ caller() }}{% endmacro %}{% call w() %}{% set a = 2 %}{{ c('a') }}{% endcall %}",
    "{% with %}{% if 1 %}{% set a = 1 %}{% endif %}{{ c('a') }}{% endwith %}",
    "{% set s %}{% set a = 1 %}{{ c('a') }}{% endset %}{{ s }}{{ c('a') }}",
])
def test_pass_context_with_loop_targets_with_names_and_macros(src):
    """A pass_context callable's Context: for targets, with names and what a set inside a with,
    macro, call, filter or set block assigns are that frame's own (Jinja2's context never holds
    them: the template's top-level value or the render argument shows through), a top-level
    macro is a template variable once defined."""
    outs = render_both(src, setup=lambda m, e: e.globals.update(c=_ctx_fn(m)), items=lambda: [5], a=lambda: "arg")
    assert outs[1] == outs[0]


@pytest.mark.parametrize("src", [
    "{% for x in [1] %}{% set a = 2 %}{{ c('a') }}{% endfor %}",
    "{% block b %}{% set a = 5 %}{{ c('a') }}{% endblock %}",
    "{% set s %}{% for a in [1] %}{{ a }}{% endfor %}{% endset %}{{ c('a') }}",
    "{% macro m() %}{% for x in [1] %}{% set a = 1 %}{{ c('a') }}{% endfor %}{% endmacro %}{{ m() }}",
])
def test_pass_context_names_set_in_loops_and_blocks_refused(src):
    """A name a set inside a loop, block or with assigns (Jinja2's derived context may hold it)
    is refused by name, never silently different."""
    outs = render_both(src, setup=lambda m, e: e.globals.update(c=_ctx_fn(m)), items=lambda: [5])
    assert outs[1].startswith("EXC NotImplementedError: tpl.jinja2: Context lookup of "), outs


def _gen3():
    yield 1
    yield 2
    yield 3


class GenHolder:
    def __init__(self):
        self._g = _gen3()

    @property
    def g(self):
        return self._g


@pytest.mark.parametrize("src", [
    "{{ g|first }}{{ g|list }}",
    "{{ m|first }}{{ m|list }}",
    "{{ i|first }}{{ i|list }}",
    "{{ z|first }}{{ z|list }}",
    "{{ g|first }}{{ g|first }}{{ g|first }}{{ g|first }}",
    "{{ g is iterable }}{{ g|list }}",
    "{{ 2 in g }}{{ g|list }}|{{ 5 in g }}{{ g|list }}",
    "{{ 2 is in g }}{{ g|list }}",
    "{{ 7 is in g }}{{ g|list }}",
    "{{ g|count }}",
    "{{ g|first }}{{ g|length }}",
    "{{ g|last }}", "{{ m|last }}", "{{ i|last }}",
    "{{ g|random }}", "{{ i|random }}",
    "{{ g|min }}{{ g|list }}", "{{ g|max }}{{ g|sum }}", "{{ g|join(',') }}{{ g|list }}",
    "{{ g|unique|list }}{{ g|list }}",
    "{{ g|batch(2)|first }}{{ g|list }}",
    "{{ g|slice(2)|list }}{{ g|list }}",
    "{{ g|map('string')|first }}{{ g|list }}",
    "{{ g|select('odd')|first }}{{ g|first }}{{ g|list }}",
    "{{ g|first }}{{ g|map('string')|join }}",
    "{% for x in g %}{{ x }}{{ loop.last }}{% endfor %}{{ g|list }}",
    "{% for x in g %}{{ x }}{{ g|first }}{% endfor %}|{{ g|list }}",
    "{% for x in g %}{% for y in g %}{{ x }}{{ y }}{% endfor %}{% endfor %}",
    "{{ g|first }}{% for x in g %}{{ x }}{{ loop.first }}{% endfor %}",
    "{% set a, b, c = g %}{{ a }}{{ c }}{{ g|list }}",
    "{{ o.g|first }}{{ o.g|list }}",
    "{{ l[0]|first }}{{ l[0]|list }}",
    "{{ g|first }}{{ [g]|map('list')|list }}",
    "{{ g|first }}{{ namespace(x=g).x|list }}",
    "{{ g|list }}{{ f(g) }}",
    "{{ g|tojson }}",
    "{{ g|reverse|list }}{{ g|list }}",
    "{{ h(*g) }}{{ g|list }}",
    "{% set n = [1, 2, 3]|map('int') %}{{ 2 is in n }}{{ n|list }}",
])
def test_one_shot_iterators_taken_as_jinja2_takes(src):
    """A generator, map(), zip() or iter(list) from Python is taken from as Jinja2 takes from it
    (issue 17): |first takes one item and `in` up to the match, leaving the rest for the next
    use; |last, |random and |length are Python's TypeErrors naming its type; a loop or a filter
    that reads all leaves it empty; the same iterator read through an attribute or a list is
    the same iterator."""
    def setup(m, e):
        e.globals["f"] = next
        e.globals["h"] = lambda *a: str(a)
    outs = render_both(src, setup=setup, g=_gen3, m=lambda: map(str, [1, 2, 3]), i=lambda: iter([1, 2, 3]),
                       z=lambda: zip([1, 2], [3, 4]), o=GenHolder, l=lambda: [_gen3()])
    assert outs[1] == outs[0]


@pytest.mark.parametrize("src", [
    "{{ g|first }}{{ f(g) }}{{ g|list }}",
    "{{ 1 in g }}{{ f(g) }}",
    "{{ g|first }}{{ l(g) }}{{ g|list }}",
    "{% for x in g %}{{ x }}{% if loop.first %}{{ f(g) }}{% endif %}{% endfor %}",
    "{% for x in g %}{{ x }}{% if loop.first %}{{ loop.last }}{{ l(g) }}{% endif %}{% endfor %}",
])
def test_one_shot_iterator_handed_back_after_a_partial_take(src):
    """The template takes a Python iterator's items as it uses them (session 34): handed to a
    Python callable after the template took only some, the callable gets the iterator itself
    with the rest in it, as in Jinja2 (a loop's look-ahead for loop.last took one more there
    too)."""
    outs = render_both(src, setup=lambda m, e: e.globals.update(f=next, l=list), g=_gen3)
    assert outs[1] == outs[0]


@pytest.mark.parametrize("src", [
    "{% set k = d.keys() %}{{ addk(d) }}{{ k|list }}",
    "{% set k = d.items() %}{{ addk(d) }}{{ k|list }}",
    "{{ dk|list }}{{ addk(d) }}{{ dk|list }}",
    "{% for k in dk %}{{ k }}{% endfor %}{{ addk(d) }}{{ dk|length }}",
])
def test_a_python_dict_view_changed_by_a_callable_is_refused(src):
    """A view of a Python dict in the state (d.keys()) is tpl's view of its copy: a callable
    changing the dict is refused (Jinja2's live view would show the change)."""
    def addk(d):
        d["c"] = 3
        return ""
    d = {}

    def mk_d():
        d.clear()
        d.update(a=1, b=2)
        return d
    outs = render_both(src, setup=lambda m, e: e.globals.update(addk=addk), d=mk_d, dk=lambda: d.keys())
    assert outs[1].startswith("EXC NotImplementedError: tpl: a Python callable changed a dict"), outs
