"""tpl.jinja2 against real Jinja2 in the same process (session 40, issue 17): a module's macros
called from Python 100,000 times, every fifth call writing a value the module's top level made
(a namespace's counter and flag, a dict's items: no string made by the call) — in
flat memory, every output Jinja2's. Before, a call that wrote anything older kept its memory (a
module under 64 KiB: its own; over 64 KiB: its whole batch), 6-11 MB over these calls; now a
release keeps the writes and gives the memory back when no changed word points into it
(runtime/host.c rescue_same)."""
import zlib

import jinja2
import pytest

import tpl.jinja2 as tj

_TOP = ("{% set ns = namespace(n=0, on=false) %}{% set d = {'k': 0, 'j': none} %}{% set l = [0, 1, 2] %}"
        "{% macro m(a) %}[{{ a }}:{{ ns.n }}]{% endmacro %}"
        "{% macro k(a) %}{% set ns.n = ns.n + a %}{% set ns.on = not ns.on %}{% do d.update({'k': a}) %}"
        "{% do d.update(j=a % 7) %}{{ ns.n }}/{{ ns.on }}/{{ d.k }}/{{ d.j }}/{{ l|sum }}{% endmacro %}")


def _rss_kib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 // 1024


def _calls(mo, n, crc=0):
    for i in range(n):
        crc = zlib.crc32(str(mo.m("s%d" % i)).encode(), crc)
        if i % 5 == 0:
            crc = zlib.crc32(str(mo.k(i)).encode(), crc)
    return crc


@pytest.mark.parametrize("big", ["", "{% set big = 'y' * 80000 %}"], ids=["small", "over-64-KiB"])
def test_module_calls_writing_older_values_run_in_flat_memory(big):
    src = big + _TOP
    jm = jinja2.Environment(extensions=["jinja2.ext.do"]).from_string(src).module
    want = _calls(jm, 100000, _calls(jm, 3000))
    mo = tj.Environment(extensions=["jinja2.ext.do"]).from_string(src).module
    got = _calls(mo, 3000)
    base = _rss_kib()
    got = _calls(mo, 100000, got)
    grew = _rss_kib() - base
    assert got == want
    assert grew < 2048, grew


def test_module_calls_writing_older_values_outputs_as_jinja2():
    """The outputs themselves (the first 400 calls of each kind, both module sizes)."""
    for big in ("", "{% set big = 'y' * 80000 %}"):
        outs = []
        for mod in (jinja2, tj):
            mo = mod.Environment(extensions=["jinja2.ext.do"]).from_string(big + _TOP).module
            outs.append([(str(mo.m(i)), str(mo.k(i))) for i in range(400)])
        assert outs[1] == outs[0]
