"""tpl.jinja2 against real Jinja2 in the same process (session 38, issue 14): the exception class
a render raises where Jinja2 raises a plain Python exception (its generated code's NameError for
a float literal past the double range, its asserts, Python's own TypeError, ValueError, ...)."""
import jinja2
import pytest

import tpl.jinja2 as tj

RAISING = [
    # (template, render arguments, the class Jinja2 3.1 raises)
    ("{{ n + 1e400 }}", {"n": 1}, "NameError"),       # Jinja2 writes the literal as `inf`
    ("{{ -1e400 + n }}", {"n": 1}, "NameError"),
    ("{% if 1e400 %}x{% endif %}", {}, "NameError"),
    ("{{ f(1e400) }}", {"f": str}, "NameError"),
    ("{{ 'abc'|truncate(1) }}", {}, "AssertionError"),  # do_truncate's asserts
    ("{{ 'abc'|truncate(1.5) }}", {}, "AssertionError"),
    ("{{ 'abcdefgh'|truncate(5, leeway=-1) }}", {}, "AssertionError"),
    ("{{ 1 / 0 }}", {}, "ZeroDivisionError"),
    ("{{ n // 0 }}", {"n": 1}, "ZeroDivisionError"),
    ("{{ n % 0 }}", {"n": 1}, "ZeroDivisionError"),
    ("{{ 'a' + 1 }}", {}, "TypeError"),
    ("{{ n < 'a' }}", {"n": 1}, "TypeError"),
    ("{{ x() }}", {"x": 1}, "TypeError"),
    ("{{ n|length }}", {"n": 1}, "TypeError"),
    ("{% set a, b = 1 %}", {}, "TypeError"),
    ("{{ [1,'a']|sort }}", {}, "TypeError"),
    ("{{ d.pop('x') }}", {"d": {}}, "KeyError"),
    ("{{ {}.popitem() }}", {}, "KeyError"),
    ("{{ l.pop(5) }}", {"l": [1]}, "IndexError"),
    ("{{ '{0}'.format() }}", {}, "IndexError"),
    ("{{ l.index(9) }}", {"l": [1]}, "ValueError"),
    ("{{ range(1, 2, 0) }}", {}, "ValueError"),
    ("{{ 'x'|wordwrap(0) }}", {}, "ValueError"),
    ("{% for a, b in [[1,2,3]] %}{% endfor %}", {}, "ValueError"),
    ("{{ 10 ** 10000 }}", {}, "ValueError"),
    ("{{ (10 ** 400) * 1.0 }}", {}, "OverflowError"),
    ("{{ x|float|int }}", {"x": "inf"}, "OverflowError"),
    ("{{ cycler().next() }}", {}, "RuntimeError"),
    ("{{ x|round(1, 'bad') }}", {"x": 1.5}, "FilterArgumentError"),
    ("{{ [1]|map('nofilter')|list }}", {}, "TemplateRuntimeError"),
]


def _raised(m, src, data):
    with pytest.raises(Exception) as info:
        m.Environment().from_string(src).render(**data)
    return type(info.value).__name__, str(info.value)


@pytest.mark.parametrize("src,data,cls", RAISING)
def test_exception_class_is_jinja2s(src, data, cls):
    want = _raised(jinja2, src, data)
    assert want[0] == cls  # (the table says what the reference raises)
    assert _raised(tj, src, data) == want
