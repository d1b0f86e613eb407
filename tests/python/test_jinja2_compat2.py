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
