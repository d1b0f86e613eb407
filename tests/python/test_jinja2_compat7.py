"""tpl.jinja2 against real Jinja2 in the same process (session 37, issue 17): what a pass_context
callable does to the render's values through its Context."""
import copy
import types

import jinja2
import pytest

import tpl.jinja2 as tj


def _render(m, src, data, **globals_):
    e = m.Environment(loader=m.DictLoader({"inc": "{{ items }}"}))
    for k, f in globals_.items():
        e.globals[k] = m.pass_context(f)
    d = copy.deepcopy(data)
    try:
        return e.from_string(src).render(d), d
    except Exception as ex:  # noqa: BLE001 (compared between the engines)
        return "%s: %s" % (type(ex).__name__, ex), d


CHANGED_THROUGH_CONTEXT = [
    # (template, render arguments, callable: what it does through its Context)
    ("{{ add(3) }}{{ items }}", {"items": [1, 2]}, lambda ctx, x: ctx["items"].append(x) or ""),
    ("{% for i in items %}{{ add(9) if i == 1 }}{{ i }}{% endfor %}{{ items|length }}", {"items": [1, 2]},
     lambda ctx, x: ctx.get("items").append(x) or ""),
    ("{{ add(3) }}{{ d }}", {"d": {"a": 1}}, lambda ctx, x: ctx.resolve("d").update(b=x) or ""),
    ("{{ add(3) }}{{ d.l }}", {"d": {"l": [1]}}, lambda ctx, x: ctx["d"]["l"].append(x) or ""),
    ("{{ add(3) }}{{ t[0] }}", {"t": ([1],)}, lambda ctx, x: ctx["t"][0].append(x) or ""),
    ("{{ add(3) }}{{ items }}", {"items": [1, 2]}, lambda ctx, x: ctx.parent["items"].append(x) or ""),
    ("{{ add(3) }}{{ items }}", {"items": [1, 2]}, lambda ctx, x: ctx.get_all()["items"].pop() and ""),
    ("{{ add(0) }}{{ items }}", {"items": [1, 2]}, lambda ctx, x: ctx["items"].__setitem__(x, 5) or ""),
    ("{{ add(3) }}{% include 'inc' %}", {"items": [1, 2]}, lambda ctx, x: ctx["items"].append(x) or ""),
]


@pytest.mark.parametrize("src,data,f", CHANGED_THROUGH_CONTEXT)
def test_context_change_of_a_render_argument_is_refused(src, data, f):
    """A pass_context callable that changes a list, dict or tuple of the render arguments through
    its Context (ctx['items'].append(x)): Jinja2's template sees the change, tpl's reads the copy
    it made when the render started — refused with NotImplementedError naming the callable and the
    name (it rendered the old value, exit 0: '[1, 2]' for '[1, 2, 3]')."""
    want, _ = _render(jinja2, src, data, add=f)
    got, _ = _render(tj, src, data, add=f)
    assert got != want
    assert got.startswith("NotImplementedError: tpl.jinja2: the pass_context callable 'add' changed the render's")
    assert repr(next(iter(data))) in got


UNCHANGED_OR_UNREAD = [
    # read only, or changed where the template does not read it: the same output as Jinja2
    ("{{ peek() }}{{ items }}", {"items": [1, 2]}, lambda ctx: repr(ctx["items"]) + repr(sorted(ctx.get_all()))[:0]),
    ("{{ peek() }}{{ other }}", {"items": [1, 2], "other": 1}, lambda ctx: ctx["items"].append(3) or ""),
    ("{{ peek() }}{{ items }}", {"items": [1, 2]}, lambda ctx: ctx["items"].append(3) or ctx["items"].pop() and ""),
    ("{{ peek() }}{{ o.items }}", {"o": types.SimpleNamespace(items=[1])}, lambda ctx: ctx["o"].items.append(2) or ""),
    ("{% set l = [1] %}{{ peek() }}{{ l }}", {}, lambda ctx: repr(ctx["l"])),
]


@pytest.mark.parametrize("src,data,f", UNCHANGED_OR_UNREAD)
def test_context_reads_and_unread_changes_render_as_jinja2(src, data, f):
    """What the check above does not refuse: a Context read, a change of a name the template does not
    read, a change undone before the callable returns, an object's attribute (read from Python
    each time) — the same output as Jinja2's."""
    want = _render(jinja2, src, data, peek=f)
    got = _render(tj, src, data, peek=f)
    assert got == want
