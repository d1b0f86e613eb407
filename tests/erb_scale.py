#!/usr/bin/env python3
"""Hostile inputs for ERB's Array methods (issue 15): uniq (with and without a block), -, & and |
are linear (by hash and eql?, as Ruby's), not quadratic: 200,000 elements finish in well under the
CPU limit (uniq compared every pair: ~20 billion comparisons). Each case runs `tplc render` and
bounds its CPU time (not wall time: the machine may be busy); the outputs are checked against
values computed here. Usage: erb_scale.py TPLC. Prints "N passed, N failed"."""
import json
import os
import sys
import tempfile

from scale_common import CPU_LIMIT, check, finish, run_cpu

TPLC = sys.argv[1]
N = 200000


def render(name, src, state, want):
    with tempfile.TemporaryDirectory() as d:
        path, spath = os.path.join(d, "t.erb"), os.path.join(d, "s.json")
        with open(path, "w") as f:
            f.write(src)
        with open(spath, "w") as f:
            json.dump(state, f)
        rc, stdout, stderr, cpu = run_cpu([TPLC, "render", path, "--state", spath], timeout=300)
        out = stdout.decode(errors="replace")
        check(rc == 0 and out == want, f"{name}: exit {rc}, output {out[:80]!r}",
              f"want {want[:80]!r}; stderr {stderr.decode(errors='replace')[:300]}")
        check(cpu < CPU_LIMIT, f"{name}: took {cpu:.2f} s of CPU (limit {CPU_LIMIT} s)")


ints = [(i * 7919) % (N // 2) for i in range(N)]          # every value twice
strs = [f"k{i % (N // 4)}" for i in range(N)]            # every value four times
distinct = list(range(N))                                 # all different (the worst case for a scan)
render("uniq: 200,000 distinct integers", "<%= xs.uniq.size %>", {"xs": distinct}, str(N))
render("uniq: 200,000 integers, each twice", "<%= xs.uniq.size %> <%= xs.uniq.last %>", {"xs": ints},
       f"{N // 2} {list(dict.fromkeys(ints))[-1]}")
render("uniq: 200,000 strings, each four times", "<%= xs.uniq.size %>", {"xs": strs}, str(N // 4))
render("uniq with a block: 200,000", "<%= xs.uniq { |x| x % 1000 }.size %>", {"xs": distinct}, "1000")
render("uniq of 200,000 pairs", "<%= xs.map { |x| [x, x % 7] }.uniq.size %>", {"xs": distinct}, str(N))
render("Array#-: 200,000 minus 100,000", "<%= (xs - ys).size %>", {"xs": distinct, "ys": distinct[::2]}, str(N // 2))
render("Array#& and #|: 200,000", "<%= (xs & ys).size %> <%= (xs | ys).size %>",
       {"xs": distinct, "ys": list(range(N // 2, N + N // 2))}, f"{N // 2} {N + N // 2}")
finish()
