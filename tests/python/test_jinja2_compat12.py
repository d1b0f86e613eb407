"""tpl.jinja2 against real Jinja2 in the same process (session 41, issue 17): a module's list
cleared or popped at its end and appended to again in each of 100,000 macro calls. Before, an
append below the array's high-water mark (after clear or pop) always copied the array into the
call's memory, and the older list pointing there kept that call's memory: +14 MB (clear past 50
items), +160 MB (pop() and append in every call). Now the append reuses the array when no other
list reads it (runtime/vm.c list_array_alone): flat, every output Jinja2's; a list made from the
array (`|list`, slices) still sees it unchanged."""
import zlib

import jinja2
import pytest

import tpl.jinja2 as tj

_SRCS = {
    "clear": "{% set l = [] %}{% macro m(a) %}{% if l|length >= 50 %}{% do l.clear() %}{% endif %}"
             "{% do l.append(a) %}{{ l|length }}/{{ l[0] }}/{{ l|sum }}{% endmacro %}",
    "pop": "{% set l = [] %}{% macro m(a) %}{% if l|length >= 50 %}{% do l.pop() %}{% endif %}"
           "{% do l.append(a) %}{{ l|length }}/{{ l[-1] }}/{{ l|sum }}{% endmacro %}",
    "extend": "{% set ns = namespace(l=[]) %}{% macro m(a) %}{% if ns.l|length >= 40 %}{% do ns.l.clear() %}"
              "{% endif %}{% do ns.l.extend([a, a + 1]) %}{{ ns.l|length }}/{{ ns.l|last }}{% endmacro %}",
}


def _rss_kib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 // 1024


def _calls(mo, n, crc=0):
    for i in range(n):
        crc = zlib.crc32(str(mo.m(i)).encode(), crc)
    return crc


@pytest.mark.parametrize("kind", sorted(_SRCS))
def test_module_list_cleared_or_popped_runs_in_flat_memory(kind):
    src = _SRCS[kind]
    jm = jinja2.Environment(extensions=["jinja2.ext.do"]).from_string(src).module
    want = _calls(jm, 100000, _calls(jm, 3000))
    mo = tj.Environment(extensions=["jinja2.ext.do"]).from_string(src).module
    got = _calls(mo, 3000)
    base = _rss_kib()
    got = _calls(mo, 100000, got)
    grew = _rss_kib() - base
    assert got == want
    assert grew < 2048, grew


# A list made from the array before the clear or pop keeps its items: the append copies.
_SHARED = [
    "{% set l = [1, 2, 3, 4] %}{% set m = l|list %}{% do l.clear() %}{% do l.append(9) %}{{ l }}{{ m }}",
    "{% set l = [1, 2, 3, 4] %}{% do l.append(5) %}{% set m = l|list %}{% do l.clear() %}{% do l.append(9) %}"
    "{{ l }}{{ m }}",
    "{% set l = [1, 2, 3, 4] %}{% do l.append(5) %}{% set m = l[:3] %}{% do l.clear() %}{% do l.extend([7, 8]) %}"
    "{{ l }}{{ m }}",
    "{% set l = [1, 2, 3, 4] %}{% do l.append(5) %}{% set m = l[2:] %}{% do l.clear() %}{% do l.extend([7, 8, 9]) %}"
    "{{ l }}{{ m }}",
    "{% set l = [1, 2, 3, 4] %}{% do l.append(5) %}{% set m = l[1:4] %}{% do l.pop() %}{% do l.pop() %}"
    "{% do l.append(0) %}{{ l }}{{ m }}",
    "{% set l = [] %}{% for i in range(6) %}{% do l.append(i) %}{% endfor %}{% set t = l|list %}"
    "{% for i in range(3) %}{% do l.pop() %}{% endfor %}{% do l.append('x') %}{{ l }}{{ t }}{{ t|length }}",
    "{% set l = [] %}{% for i in range(5) %}{% do l.append(i) %}{% endfor %}{% set ns = namespace(k=l[:2]) %}"
    "{% do l.clear() %}{% do l.append('a') %}{% do l.append('b') %}{{ l }}{{ ns.k }}",
    "{% set l = [] %}{% for i in range(5) %}{% do l.append(i) %}{% endfor %}{% set d = {'k': l[1:3]} %}"
    "{% do l.clear() %}{% for i in range(5) %}{% do l.append(i * 10) %}{% endfor %}{{ l }}{{ d }}",
    "{% set l = [] %}{% for i in range(5) %}{% do l.append(i) %}{% endfor %}{% for x in l %}"
    "{% if loop.first %}{% do l.pop() %}{% do l.append(9) %}{% endif %}{{ x }},{% endfor %}{{ l }}",
    "{% set l = [] %}{% for i in range(5) %}{% do l.append(i) %}{% endfor %}{% set m = l + [] %}"
    "{% do l.clear() %}{% do l.append(9) %}{{ l }}{{ m }}",
    "{% set l = [] %}{% for i in range(8) %}{% do l.append(i) %}{% if i % 3 == 2 %}{% do l.clear() %}{% endif %}"
    "{% endfor %}{% do l.append('z') %}{{ l }}",
]


@pytest.mark.parametrize("src", _SHARED)
def test_list_shared_before_clear_or_pop_as_jinja2(src):
    env = dict(extensions=["jinja2.ext.do"])
    want = jinja2.Environment(**env).from_string(src).render()
    assert tj.Environment(**env).from_string(src).render() == want
