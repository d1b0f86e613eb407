#!/usr/bin/env python3
"""Hostile inputs for ERB's Array methods (issue 15): uniq (with and without a block), -, & and |
are linear (by hash and eql?, as Ruby's), not quadratic: 200,000 elements finish in well under the
CPU limit (uniq compared every pair: ~20 billion comparisons). Index assignment, <<, push, store
and delete change an Array or Hash in place (they copied it: 200,000 assignments in a loop were
quadratic in time and memory), so 200,000 of them also stay under a 64 MB render memory limit. Each case runs `tplc render` and
bounds its CPU time (not wall time: the machine may be busy); the outputs are checked against
values computed here. Usage: erb_scale.py TPLC. Prints "N passed, N failed"."""
import json
import os
import sys
import tempfile

from scale_common import CPU_LIMIT, check, finish, run_cpu

TPLC = sys.argv[1]
N = 200000


def render(name, src, state, want, extra=()):
    with tempfile.TemporaryDirectory() as d:
        path, spath = os.path.join(d, "t.erb"), os.path.join(d, "s.json")
        with open(path, "w") as f:
            f.write(src)
        with open(spath, "w") as f:
            json.dump(state, f)
        rc, stdout, stderr, cpu = run_cpu([TPLC, "render", path, "--state", spath, *extra], timeout=300)
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
MEM = ("--max-memory", str(64 << 20))
render("h[k] = v: 200,000 keys in a loop", "<% h = {} %><% xs.each { |x| h[x] = x * 2 } %><%= h.size %> <%= h[m - 1] %>",
       {"xs": distinct, "m": N}, f"{N} {2 * (N - 1)}", MEM)
render("h[k] = v through an alias, in a while loop",
       "<% h = {} %><% g = h %><% i = 0 %><% while i < n %><% g[\"k#{i}\"] = i %><% i += 1 %><% end %><%= h.size %>",
       {"n": N}, str(N), MEM)
render("a[i] = v and a << x: 200,000 each", "<% a = [] %><% b = [] %><% xs.each { |x| a[x] = x; b << x } %><%= a.size %> <%= b.size %>",
       {"xs": distinct}, f"{N} {N}", MEM)
render("store, push and delete: 200,000 each", "<% h = {} %><% a = [] %><% xs.each { |x| h.store(x, 1); a.push(x); h.delete(x - 1) } %>"
       "<%= h.size %> <%= a.size %>", {"xs": distinct}, f"1 {N}", MEM)
render("a state hash changed 200,000 times (copied once)", "<% xs.each { |x| st[x] = x } %><%= st.size %>",
       {"xs": distinct, "st": {"a": 1}}, str(N + 1), MEM)
finish()
