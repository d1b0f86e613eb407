"""tpl.jinja2 against real Jinja2 in the same process (session 34): a Python iterator taken
item by item as the template uses it."""
import itertools
import time

import jinja2
import pytest

import tpl.jinja2 as tj


def render_both(src, env=None, setup=None, **ctx):
    """Renders src under both engines (fresh context values from ctx's factories): the outputs,
    an exception as 'EXC Class: message'."""
    outs = []
    for m in (jinja2, tj):
        e = m.Environment(**(env or {}))
        if setup:
            setup(m, e)
        try:
            outs.append(e.from_string(src).render(**{k: f() for k, f in ctx.items()}))
        except Exception as ex:  # noqa: BLE001 (compared between the engines)
            outs.append("EXC %s: %s" % (type(ex).__name__, ex))
    return outs


def _growing():
    """A generator over a list that the loop body appends to (through add)."""
    items = [1]

    def gen():
        i = 0
        while i < len(items):
            yield items[i]
            i += 1

    def add(x):
        items.append(x)
        return ""
    return {"g": gen, "add": lambda: add}


@pytest.mark.parametrize("src", [
    "{% for x in g %}{{ x }}{% if x < 5 %}{{ add(x + 1) }}{% endif %}{% endfor %}",
    "{% for x in g %}{{ x }}{% if x < 5 %}{{ add(x + 1) }}{% endif %}{% else %}none{% endfor %}",
    "{% for x in g if x is odd %}{{ x }}{% if x < 5 %}{{ add(x + 1) }}{{ add(x + 2) }}{% endif %}{% endfor %}",
    "{% for x in g|map('string') %}{{ x }}{% if x|int < 4 %}{{ add(x|int + 1) }}{% endif %}{% endfor %}",
    "{% for x in g %}{{ x }}{{ loop.index }}{% if x < 4 %}{{ add(x + 1) }}{% endif %}{% endfor %}",
])
def test_generator_items_depend_on_the_loop_body(src):
    """A generator whose items depend on what the loop body did (it reads a list the body
    appends to through a callable) is taken from item by item as the loop runs, as Jinja2's
    for loop does: the items the body added are seen."""
    g = _growing()
    h = _growing()
    outs = []
    for m, ctx in ((jinja2, g), (tj, h)):
        e = m.Environment()
        state = {"g": ctx["g"](), "add": ctx["add"]()}
        outs.append(e.from_string(src).render(**state))
    assert outs[1] == outs[0]


@pytest.mark.parametrize("src", [
    "{% for x in g %}{{ x }}{% if loop.index > 3 %}{% break %}{% endif %}{% endfor %}",
    "{% for x in g %}{% if x is odd %}{% continue %}{% endif %}{{ x }}{% if x > 6 %}{% break %}{% endif %}{% endfor %}",
    "{{ g|first }}{{ g|first }}",
    "{{ (g|batch(3))|first }}{{ g|first }}",
    "{{ g|batch(2)|map('sum')|first }}",
    "{{ 5 in g }}{{ g|first }}",
    "{{ g|select('odd')|first }}{{ g|first }}",
    "{{ g|map('string')|first }}{{ g|first }}",
    "{% for x in g %}{% for y in g %}{{ x }}{{ y }}{% if y > 4 %}{% break %}{% endif %}{% endfor %}"
    "{% if x > 6 %}{% break %}{% endif %}{% endfor %}",
    "{% for x in g %}{{ x }}{{ loop.last }}{% if loop.index > 2 %}{% break %}{% endif %}{% endfor %}{{ g|first }}",
])
def test_endless_generator(src):
    """An endless generator (itertools.count()) is read only as far as the template takes it:
    a loop left with break, |first, `in`, |batch and the lazy filters over it."""
    outs = render_both(src, env={"extensions": ["jinja2.ext.loopcontrols"]}, g=itertools.count)
    assert outs[1] == outs[0]


# The guarantee the two tests below assert, load-independently: an endless Python iterable ends
# on the render's fuel. The default fuel (20,000,000) pays for at most 200,000 items at 100 units
# each (python/_tpl.c ITEM_FUEL; fewer when the loop body costs fuel too), so the render takes at
# most that many items from the iterator and stops with a located TemplateRuntimeError: a bound
# on the work done, not on the wall clock (a 2 s bound took 2.2-2.5 s at load 20).
FUEL_ITEMS = 20000000 // 100


def _taken(c):
    """How many items were taken from the itertools.count() c."""
    return next(c)


def test_endless_generator_read_whole_ends_on_the_fuel():
    """Read whole (|list), an endless generator ends on the render's fuel (each item taken costs
    fuel: a located TemplateRuntimeError after at most FUEL_ITEMS items; Jinja2 would fill the
    process), not a hang or the memory limit after millions of items."""
    c = itertools.count()
    with pytest.raises(tj.TemplateRuntimeError, match="fuel exhausted") as ei:
        tj.Environment().from_string("{{ g|list|length }}").render(g=(str(i) for i in c))
    assert FUEL_ITEMS // 2 < _taken(c) <= FUEL_ITEMS + 1
    assert "line 1" in " ".join(getattr(ei.value, "__notes__", []))


class _EndlessIterable:
    """Not a one-shot iterator: iter() gives a new endless one (read whole by the conversion)."""

    def __init__(self):
        self.counts = []

    def __iter__(self):
        self.counts.append(itertools.count())
        return self.counts[-1]


def _made_by(counts):
    """itertools.count, remembering each count it makes in counts."""
    return lambda *a: counts.append(itertools.count(*a)) or counts[-1]


def _ctx_count(wrap=lambda c: c):
    c = itertools.count()
    return {"g": wrap(c)}, lambda: _taken(c)


def _ctx_made():
    counts = []
    return {"g": _made_by(counts)}, lambda: sum(_taken(c) for c in counts)


def _ctx_iterable():
    g = _EndlessIterable()
    return {"g": g}, lambda: sum(_taken(c) for c in g.counts)


@pytest.mark.parametrize("src,ctx", [
    ("\n\n{% for x in g %}{{ x }}{% endfor %}", _ctx_count),
    ("\n\n{% for x in g() %}{% endfor %}", _ctx_made),
    ("\n\n{% for x in g %}{{ x }}{% else %}none{% endfor %}", lambda: _ctx_count(lambda c: (i for i in c))),
    ("\n\n{% for x in g|map('string') %}{{ x }}{% endfor %}", _ctx_count),
    ("\n\n{% for x in g if x < 0 %}{{ x }}{% endfor %}", _ctx_count),
    ("\n\n{% for x in g %}{{ x }}{% endfor %}", _ctx_iterable),
])
def test_endless_generator_loop_ends_on_the_fuel_fast(src, ctx):
    """A for loop over an endless Python generator without a break (issue 17): the render ends on
    its fuel limit (each item of a Python iterator costs 100 units) after at most FUEL_ITEMS items
    (what keeps it fast, whatever the machine's load), with a TemplateRuntimeError located at the
    loop's line; was the memory limit after 4 to 6 s and a few hundred MB."""
    args, taken = ctx()
    with pytest.raises(tj.TemplateRuntimeError, match="fuel exhausted") as ei:
        tj.Environment().from_string(src).render(**args)
    assert 1000 < taken() <= FUEL_ITEMS + 1
    assert "line 3" in " ".join(getattr(ei.value, "__notes__", []))


def test_generator_within_the_fuel_renders_whole():
    """A long generator the fuel pays for (100 units an item) renders whole, as in Jinja2."""
    src = "{% for x in g %}{{ x % 10 }}{% endfor %}"
    outs = [m.Environment().from_string(src).render(g=iter(range(50000))) for m in (jinja2, tj)]
    assert outs[1] == outs[0]


def _raising():
    yield 1
    yield 2
    raise KeyError("boom")


@pytest.mark.parametrize("src", [
    "{% for x in g %}{{ x }}{% endfor %}",
    "{{ g|first }}{{ g|first }}",
    "{{ g|first }}{{ g|first }}{{ g|first }}",
    "{{ 2 in g }}",
])
def test_generator_raising_midway(src):
    """A generator that raises after some items: the items taken before print, the exception
    ends the render when the template takes the item that raises, as in Jinja2."""
    outs = render_both(src, g=_raising)
    assert outs[1] == outs[0]


def test_generator_side_effects_interleave_with_output():
    """Each item is pulled when the loop reaches it: a generator's side effects come between
    the loop's outputs as under Jinja2 (seen through a callable that reports them)."""
    outs = []
    for m in (jinja2, tj):
        log = []

        def gen():
            for i in range(3):
                log.append("pull%d" % i)
                yield i

        def mark(x):
            log.append("body%d" % x)
            return ""
        m.Environment().from_string("{% for x in g %}{{ mark(x) }}{% endfor %}").render(g=gen(), mark=mark)
        outs.append(log)
    assert outs[1] == outs[0]


def _identity():
    kept = []

    def keep(v):
        kept.append(v)
        return ""

    def same(v):
        return repr(v is kept[0])

    def same_item(v):
        return repr(v is kept[0][0])
    return {"keep": keep, "same": same, "same_item": same_item}


@pytest.mark.parametrize("src", [
    "{% set l = [1, 2] %}{{ keep(l) }}{{ same(l) }}",
    "{% set d = {'a': [1]} %}{{ keep(d) }}{{ same(d) }}",
    "{% set l = [[1], 2] %}{{ keep(l) }}{{ same(l) }}{{ same_item(l[0]) }}",
    "{% set l = [1] %}{{ keep(l) }}{% for i in range(3) %}{{ same(l) }}{% endfor %}",
    "{% set l = [1] %}{% set m = [1] %}{{ keep(l) }}{{ same(m) }}",
    "{% set l = [1] %}{{ keep(l) }}{{ same([1]) }}",
    "{% macro f(x) %}{{ same(x) }}{% endmacro %}{% set l = [1] %}{{ keep(l) }}{{ f(l) }}",
])
def test_a_kept_value_passed_again_is_the_same_object(src):
    """A list or dict a callable kept is the same object when the template passes it again in a
    later call (`x is kept`), as Jinja2's; another list of the same items is another object."""
    outs = render_both(src, setup=lambda m, e: e.globals.update(_identity()))
    assert outs[1] == outs[0]


@pytest.mark.parametrize("src", [
    "{% set l = [1] %}{{ keep(l) }}{% do l.append(2) %}{{ same(l) }}{{ show() }}",
    "{% set l = [1] %}{{ keep(l) }}{% do l.append(2) %}{{ show() }}",
    "{% set d = {} %}{{ keep(d) }}{% do d.update(a=1) %}{{ show() }}{{ same(d) }}",
    "{% set l = [1] %}{{ keep(l) }}{% do l.append(2) %}",
    "{% set l = [[1]] %}{{ keep(l) }}{% do l[0].append(2) %}{{ show() }}",
    "{% set l = [1, 2, 3] %}{{ keep(l) }}{% do l.pop() %}{% do l.insert(0, 9) %}{{ show() }}",
])
def test_a_kept_value_the_template_changes_is_seen_by_python(src):
    """A list or dict a callable kept that the template then changes (`{% do l.append(2) %}`)
    shows the change to Python at its next call and after the render, as Jinja2's (one object:
    the template's own)."""
    outs = []
    for m in (jinja2, tj):
        kept = []
        ident = {"keep": lambda v: kept.append(v) or "", "same": lambda v: repr(v is kept[0]),
                 "show": lambda: repr(kept[0])}
        e = m.Environment(extensions=["jinja2.ext.do"])
        e.globals.update(ident)
        outs.append((e.from_string(src).render(), repr(kept)))
    assert outs[1] == outs[0]
