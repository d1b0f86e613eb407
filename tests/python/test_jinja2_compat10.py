"""tpl.jinja2 against real Jinja2 in the same process (session 39, issue 17): every attribute of
the Context a pass_context callable gets, called in loops, macros, call blocks, blocks, with,
include, set and filter blocks — Jinja2's value, or NotImplementedError naming the attribute (or
the name looked up) and exactly why, never a different value."""
import jinja2
import pytest

import tpl.jinja2 as tj

_BUILTIN = ("range", "dict", "lipsum", "cycler", "joiner", "namespace")

# (what the callable reads through its Context, what the refusal names)
ATTRS = {
    "parent": (lambda c: sorted(k for k in c.parent if not k.startswith(_BUILTIN)), "Context.parent"),
    "vars": (lambda c: sorted(c.vars.items()), "Context.vars"),
    "get": (lambda c: (c.get("x"), c.get("a"), c.get("y", "D")), "Context lookup of 'x'"),
    "resolve": (lambda c: (str(c.resolve("x")), str(c.resolve("a"))), "Context lookup of 'x'"),
    "item": (lambda c: c["a"], None),
    "item_x": (lambda c: c["x"], "Context lookup of 'x'"),
    "in": (lambda c: ("x" in c, "a" in c, "zz" in c), "Context lookup of 'x'"),
    "name": (lambda c: c.name, "Context.name"),
    "eval_ctx": (lambda c: c.eval_ctx.autoescape, None),
    "exported_vars": (lambda c: sorted(c.exported_vars), "Context.exported_vars"),
    "environment": (lambda c: type(c.environment).__name__, None),
    "keys": (lambda c: sorted(k for k in c.keys() if k in ("a", "x", "i", "y")), "Context.get_all"),
    "get_all": (lambda c: sorted(k for k in c.get_all() if k in ("a", "x", "i", "y")), "Context.get_all"),
    # (session 41: .blocks was {} in every template, Jinja2's holds its blocks' functions)
    "blocks": (lambda c: sorted(c.blocks), "Context.blocks"),
    "globals_keys": (lambda c: sorted(c.globals_keys), "Context.globals_keys"),
    "derived": (lambda c: sorted(k for k in c.derived().get_all() if k in ("a", "x", "i", "y")), "Context.derived"),
}
# (refusals whose reason is not the template's names)
_OWN_REASON = ("Context.parent", "Context.blocks", "Context.globals_keys", "Context.derived")

SHAPES = [
    "{{ f() }}",
    "{% set x = 1 %}{{ f() }}",
    "{{ f() }}{% set x = 1 %}",
    "{% for i in [1, 2] %}{{ f() }}{% endfor %}",
    "{% for i in [1, 2] %}{% set x = i %}{{ f() }}{% endfor %}",
    "{% set x = 0 %}{% for i in [1, 2] %}{% set x = i %}{{ f() }}{% endfor %}",
    "{% macro m(x) %}{{ f() }}{% endmacro %}{{ m(5) }}",
    "{% macro m() %}{% set x = 3 %}{{ f() }}{% endmacro %}{{ m() }}",
    "{% macro m() %}{{ caller() }}{% endmacro %}{% call m() %}{{ f() }}{% endcall %}",
    "{% macro m() %}{{ caller(4) }}{% endmacro %}{% call(x) m() %}{{ f() }}{% endcall %}",
    "{% block b %}{{ f() }}{% endblock %}",
    "{% block b %}{% set x = 7 %}{{ f() }}{% endblock %}",
    "{% with x = 2 %}{{ f() }}{% endwith %}",
    "{% with %}{% set x = 2 %}{{ f() }}{% endwith %}",
    "{% include 'inc' %}",
    "{% set x = 9 %}{% include 'inc' %}",
    "{% for i in [1] %}{% include 'inc' %}{% endfor %}",
    "{% set y %}{{ f() }}{% endset %}{{ y }}",
    "{% filter upper %}{{ f() }}{% endfilter %}",
    "{% if true %}{% set x = 4 %}{{ f() }}{% endif %}",
    # (session 41: Jinja2 renders a scoped block with context.derived(the local names around it):
    # the loop variable, `loop`, with names and macro arguments in its parent, empty vars — tpl
    # gave the template's own Context there: no 'x' from the loop, the top level's vars)
    "{% set a = 2 %}{% for x in [1, 2] %}{% block s scoped %}{{ f() }}{% endblock %}{% endfor %}",
    "{% with x = 2 %}{% block s scoped %}{{ f() }}{% endblock %}{% endwith %}",
    "{% macro m(x) %}{% block s scoped %}{{ f() }}{% endblock %}{% endmacro %}{{ m(5) }}",
    "{% set x = 1 %}{% block s scoped %}{{ f() }}{% endblock %}",
]


def _render(m, src, fn):
    env = m.Environment(loader=m.DictLoader({"inc": "{{ f() }}"}))
    env.globals["f"] = m.pass_context(lambda c: repr(fn(c)))
    try:
        return env.from_string(src).render(a=1)
    except NotImplementedError as e:
        return e
    except Exception as e:  # noqa: BLE001 (compared between the engines)
        return "%s: %s" % (type(e).__name__, e)


@pytest.mark.parametrize("attr", sorted(ATTRS))
@pytest.mark.parametrize("src", SHAPES)
def test_context_attribute_as_jinja2_or_refused_by_name(src, attr):
    fn, names = ATTRS[attr]
    want, got = _render(jinja2, src, fn), _render(tj, src, fn)
    if not isinstance(got, NotImplementedError):
        assert got == want
        return
    msg = str(got)
    assert names and msg.startswith("tpl.jinja2: " + names), msg
    if msg.startswith(tuple("tpl.jinja2: " + n for n in _OWN_REASON)):
        return
    if "scoped" in src:
        assert "in a template with a scoped block" in msg, msg
        return
    if "include" in src:
        assert "includes, imports or extends others" in msg
    else:
        # the names the template assigns away from its top level, named
        assert "assigns 'i', 'x' other than at its top level" in msg or "assigns 'x' other than" in msg, msg


def test_context_refusal_in_an_including_template_says_it_includes():
    """A callable in a template that includes another (nothing assigned anywhere): Context.vars
    is refused because the callable may run in the included template — said so (it said "a
    template that assigns names", which this one does not)."""
    with pytest.raises(NotImplementedError, match=r"^tpl\.jinja2: Context\.vars in a template that includes, "
                                                  r"imports or extends others"):
        env = tj.Environment(loader=tj.DictLoader({"inc": "{{ f() }}"}))
        env.globals["f"] = tj.pass_context(lambda c: repr(c.vars))
        env.from_string("{% include 'inc' %}").render()


@pytest.mark.parametrize("src", [
    "{% for x in [1, 2] %}{% block s scoped %}{{ 0|g }}{% if 0 is t %}T{% endif %}{% endblock %}{% endfor %}",
    "{% with x = 3 %}{% block s scoped %}{{ 0|g }}{% endblock %}{% endwith %}",
    "{% for x in [1] %}{{ 0|g }}{% endfor %}{% block s scoped %}{% endblock %}",
])
@pytest.mark.parametrize("what", ["x", "loop", "vars", "parent"])
def test_filter_and_test_contexts_in_a_scoped_block_as_jinja2_or_refused(src, what):
    """A pass_context filter's and test's Context inside a scoped block is Jinja2's derived one too
    (its parent holds the loop variable and `loop`): Jinja2's value or a NotImplementedError saying
    the template has a scoped block (it was the template's own Context: 'x' missing, vars {})."""
    def read(c):
        if what == "vars":
            return sorted(c.vars)
        if what == "parent":
            return sorted(k for k in c.parent if k in ("x", "loop", "a"))
        return type(c.get(what)).__name__ if what == "loop" else c.get(what)

    def render(m):
        env = m.Environment()
        env.filters["g"] = m.pass_context(lambda c, v: repr(read(c)))
        env.tests["t"] = m.pass_context(lambda c, v: read(c) is not None)
        try:
            return env.from_string(src).render(a=1)
        except NotImplementedError as e:
            return e

    want, got = render(jinja2), render(tj)
    if isinstance(got, NotImplementedError):
        assert "in a template with a scoped block" in str(got), got
    else:
        assert got == want
