#!/usr/bin/env python3
"""Instructions per render from Python, for callgrind (issue 17): renders one shared-harness
workload N times with one engine, in the setup of bench/python_bench.py (Jinja template with
trim_blocks + lstrip_blocks; remembers(x) = x in context["memory"]).

    PYTHONHASHSEED=0 PYTHONPATH=build/python:python valgrind --tool=callgrind \\
        /usr/bin/python3 bench/python_count.py WORKLOAD ENGINE N [fresh]

ENGINE: jinja (Jinja2, remembers a global function), tpl (tpl.Template, remembers the same
Python callable), tpl-data (remembers=memory: the list as data, answered in C). fresh: every
render gets its own context dict, made by json.loads before any render (223 copies, made in
every run whatever N, so their making cancels out); otherwise the same dict every render.
Three renders warm up first. Count a run with N renders and one with a smaller N (e.g. 220 and
20; w2 12 and 2) and divide the difference of callgrind's totals by the difference of N."""
import json
import os
import sys

wl, eng, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
fresh = len(sys.argv) > 4 and sys.argv[4] == "fresh"
here = os.path.dirname(os.path.abspath(__file__))
wdir = os.environ.get("WORKLOADS", os.path.join(here, "..", "..", "shared", "bench", "workloads"))
src = open(os.path.join(wdir, wl, "template.jinja"), encoding="utf-8").read()
text = open(os.path.join(wdir, wl, "context.json"), encoding="utf-8").read()
ctx = json.loads(text)
memory = ctx.get("memory", [])
if eng == "jinja":
    import jinja2
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True, autoescape=False, keep_trailing_newline=False)
    env.globals["remembers"] = lambda x: x in memory
    t = env.from_string(src)
elif eng in ("tpl", "tpl-data"):
    import tpl
    t = tpl.Template(src, trim_blocks=True, lstrip_blocks=True,
                     remembers=memory if eng == "tpl-data" else (lambda x: x in memory))
else:
    sys.exit("engine: jinja, tpl or tpl-data")
if n + 3 > 223:
    sys.exit("N at most 220")
ctxs = [json.loads(text) for _ in range(223)] if fresh else [ctx] * 223
r = t.render
for i in range(3):
    r(ctxs[i])
for i in range(3, n + 3):
    r(ctxs[i])
