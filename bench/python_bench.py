#!/usr/bin/env python3
"""tpl vs Jinja2 from Python, in one process, on the shared workloads (issue 17 §5).

    PYTHONPATH=build/python:python /usr/bin/python3 bench/python_bench.py [--fresh] [--callable] [../shared/bench/workloads] [SECONDS] [ROUNDS]

Per workload: the Jinja template with trim_blocks + lstrip_blocks (as the shared harness's
jinja2 engine), the context as a Python dict loaded from context.json (its conversion is part of
every tpl render), remembers(x) = x in context["memory"] for both engines (Jinja2: a global
function; tpl: `remembers=memory`, the list as data, answered in C — with --callable the same
Python function as Jinja2's); outputs must be equal. Each measurement is taken ROUNDS times (default 5), the two engines interleaved, and the
fastest round is reported (the machine is shared: the minimum is the least disturbed figure).
Prints per-render and per-compile (from_string / tpl.Template) times and the ratios.

--fresh: every render gets a context dict made anew by json.loads (the agent case: the state
changes every call), for both engines: FRESH (50) copies are made before timing and taken in
turn, so no render sees the dict the one before it saw (tpl's converted-value cache finds
nothing) and json.loads is not timed."""
import itertools
import json
import os
import sys
import time

import jinja2

import tpl

here = os.path.dirname(os.path.abspath(__file__))
fresh = "--fresh" in sys.argv[1:]
if fresh:
    sys.argv.remove("--fresh")
as_callable = "--callable" in sys.argv[1:]
if as_callable:
    sys.argv.remove("--callable")
FRESH = 50
wdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "..", "shared", "bench", "workloads")
target = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5


def measure(fn, seconds):
    """ns per call of fn over about `seconds`."""
    n, t0 = 0, time.perf_counter()
    while True:
        for _ in range(10):
            fn()
        n += 10
        dt = time.perf_counter() - t0
        if dt >= seconds:
            return dt / n * 1e9


def interleaved(fa, fb, seconds):
    """The fastest of `rounds` measurements of fa and of fb, taken alternately."""
    a, b = [], []
    for _ in range(rounds):
        a.append(measure(fa, seconds / rounds))
        b.append(measure(fb, seconds / rounds))
    return min(a), min(b)


print("context: %s; tpl remembers: %s" % ("a fresh json.loads dict per render" if fresh else "the same dict every render",
                                           "a Python callable" if as_callable else "the memory list as data"))
print("| workload | Jinja2 render (µs) | tpl render (µs) | render speedup | Jinja2 from_string (µs) | tpl compile (µs) | compile speedup |")
print("| :--- | ---: | ---: | ---: | ---: | ---: | ---: |")
for wl in ("w1_agent", "w2_loop", "w4_chat", "w5_format"):
    src = open(os.path.join(wdir, wl, "template.jinja"), encoding="utf-8").read()
    text = open(os.path.join(wdir, wl, "context.json"), encoding="utf-8").read()
    ctx = json.loads(text)
    memory = ctx.get("memory", [])
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True, autoescape=False, keep_trailing_newline=False)
    env.globals["remembers"] = lambda x: x in memory
    jt = env.from_string(src)
    tt = tpl.Template(src, trim_blocks=True, lstrip_blocks=True,
                      remembers=(lambda x: x in memory) if as_callable else memory)
    want, got = jt.render(ctx), tt.render(ctx)
    if want != got:
        print("| %s | output differs from Jinja2 |" % wl)
        continue
    if fresh:
        jnext, tnext = itertools.cycle([json.loads(text) for _ in range(FRESH)]).__next__, \
            itertools.cycle([json.loads(text) for _ in range(FRESH)]).__next__
        jr, tr = interleaved(lambda: jt.render(jnext()), lambda: tt.render(tnext()), target * 2)
    else:
        jr, tr = interleaved(lambda: jt.render(ctx), lambda: tt.render(ctx), target * 2)
    k = [0]

    def jc():
        k[0] += 1
        env.from_string(src + "\n" + str(k[0]))

    def tc():
        k[0] += 1
        tpl.Template(src + "\n" + str(k[0]), trim_blocks=True, lstrip_blocks=True)
    jcn, tcn = interleaved(jc, tc, target)
    print("| %s | %.1f | %.2f | %.1f× | %.0f | %.1f | %.0f× |" % (wl, jr / 1e3, tr / 1e3, jr / tr, jcn / 1e3, tcn / 1e3, jcn / tcn))
