#!/usr/bin/env python3
"""The state counts against --max-memory by what loading it really takes (session 38): for each
kind of JSON state (scalars, strings, keys of large and small objects, empty containers, chat
messages), the largest state tplc accepts under --max-memory 64M is found by bisection, and its
load must peak within 10% of the limit above the process's base (peak RSS of a render of a tiny
state), and at no less than half of it (the estimate is not so cautious that states it could hold
are refused). Before, every value was counted 64 bytes whatever its kind: 12 MB of one-letter
strings peaked at 324 MB under the default 256M.

    state_memory.py TPLC

Peak RSS comes from GNU time (package `time`). RSS is measured only in plain builds
(TPL_SCALE_RSS=1 from meson: a sanitizer's shadow memory is not tpl's); other trees check that
every state is either rendered or refused with the located limit error.

The state and the render share the one limit (session 39): the render arena and the state arena
each had the whole --max-memory, so a state within the limit plus a render within it peaked near
twice the limit. A render that needs most of the limit over a state that takes a quarter of it is
now refused with the located limit error (before: rendered), the same render over a tiny state
still renders, and (plain builds) the refused run peaks within 10% of the limit above the base."""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scale_common import check, finish  # noqa: E402

TPLC = os.path.abspath(sys.argv[1])
LIMIT = (64 << 20) if os.environ.get("TPL_SCALE_RSS") == "1" else (8 << 20)  # (smaller where RSS is not measured: sanitized trees are slow)
RSS = LIMIT == 64 << 20

ITEMS = {
    "ints": "1", "floats": "1.5", "nulls": "null", "strings": '"x"', "empty strings": '""',
    "40-byte strings": '"' + "x" * 40 + '"', "empty objects": "{}", "empty lists": "[]",
    "one-key objects": '{"k":1}', "three-key objects": '{"a":1,"b":"x","c":true}',
    "messages": '{"role":"user","content":"Hello there, I would like to book an appointment for tomorrow"}',
    "eight-key objects": '{"a":1,"b":"x","c":true,"d":null,"e":2.5,"f":"yy","g":[],"h":{}}',
}


def state(kind, n):
    if kind == "keys of one object":
        return '{"a":{' + ",".join('"k%d":%d' % (i, i) for i in range(n)) + "}}"
    return '{"a":[' + ",".join([ITEMS[kind]] * n) + "]}"


def render(d, text, rss=RSS):
    path = os.path.join(d, "s.json")
    with open(path, "w") as f:
        f.write(text)
    cmd = [TPLC, "render", os.path.join(d, "t.jinja"), "--state", path, "--max-memory", str(LIMIT)]
    if rss:
        cmd = ["/usr/bin/time", "-f", "%M", "-o", os.path.join(d, "rss")] + cmd
    # (without meson's MALLOC_PERTURB_: glibc then writes every byte malloc hands out, as
    # compile_scale.py says, and the peak is no longer what a user's run takes)
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_PERTURB_"}
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    kib = int(open(os.path.join(d, "rss")).read().split()[-1]) if rss else 0
    return p.returncode, p.stdout, p.stderr, kib


def shared_budget(d, base):
    """A state taking ~1/4 of the limit in values (1000-byte strings: a little over 1000 bytes each
    in the state's arena, ~3100 by the load's estimate) and a render allocating 0.85 of it."""
    with open(os.path.join(d, "rep.jinja"), "w") as f:
        f.write('{{ ("x" * k)|length }}')
    k = int(LIMIT * 0.85)
    n = LIMIT // 4 // 1040

    def run(text, rss):
        path = os.path.join(d, "s2.json")
        with open(path, "w") as f:
            f.write(text)
        cmd = [TPLC, "render", os.path.join(d, "rep.jinja"), "--state", path, "--max-memory", str(LIMIT)]
        if rss:
            cmd = ["/usr/bin/time", "-f", "%M", "-o", os.path.join(d, "rss")] + cmd
        env = {k_: v for k_, v in os.environ.items() if k_ != "MALLOC_PERTURB_"}
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
        kib = int(open(os.path.join(d, "rss")).read().split()[-1]) if rss else 0
        return p.returncode, p.stdout, p.stderr, kib

    rc, out, err, _ = run('{"k": %d}' % k, False)
    check(rc == 0 and out == str(k), "a render of %d bytes over a tiny state renders" % k, (out + err)[:300])
    big = '{"k": %d, "a": [%s]}' % (k, ",".join(['"' + "y" * 1000 + '"'] * n))
    rc, out, err, kib = run(big, RSS)
    check(rc == 1 and ": error: memory limit reached (%d bytes)" % LIMIT in err,
          "the same render over a state of a quarter of the limit is refused (one budget for both)",
          "rc %d: %s" % (rc, (out + err)[:300]))
    if RSS:
        used = (kib - base) * 1024
        print("%-20s state of %d strings + %d-byte render: peak RSS %6d KiB (%.2f of the limit above the base)"
              % ("shared budget", n, k, kib, used / LIMIT))
        check(used <= LIMIT * 1.10, "state + render within one --max-memory peak within 10% of it",
              "peak RSS %d KiB, base %d KiB" % (kib, base))


def main():
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "t.jinja"), "w") as f:
            f.write("{{ a|length }}")
        _, _, _, base = render(d, '{"a": [1]}')
        shared_budget(d, base)
        for kind in list(ITEMS) + ["keys of one object"]:
            def accepted(n):
                rc, out, err, _ = render(d, state(kind, n), rss=False)
                if rc == 0:
                    check(out == str(n), "%s: %d items render" % (kind, n), out[:80])
                else:
                    check(rc == 1 and ": error: state exceeds the memory limit (%d bytes)" % LIMIT in err,
                          "%s: %d items are refused with the located limit error" % (kind, n), err[:300])
                return rc == 0
            lo, hi = 0, 4096  # lo: accepted; hi: refused
            while accepted(hi):
                lo, hi = hi, hi * 2
            while hi - lo > max(16, lo // 32):
                mid = (lo + hi) // 2
                lo, hi = (mid, hi) if accepted(mid) else (lo, mid)
            if not RSS:
                continue
            rc, out, err, kib = render(d, state(kind, lo))
            used = (kib - base) * 1024
            print("%-20s %8d items accepted: peak RSS %6d KiB (%.2f of the limit above the base %d KiB)"
                  % (kind, lo, kib, used / LIMIT, base))
            check(rc == 0, "%s: the largest accepted state renders" % kind, err[:300])
            check(used <= LIMIT * 1.10, "%s: a state within --max-memory 64M peaks within 10%% of it" % kind,
                  "peak RSS %d KiB, base %d KiB" % (kib, base))
            check(used >= LIMIT * 0.5, "%s: states needing half of --max-memory are not refused" % kind,
                  "peak RSS %d KiB, base %d KiB" % (kib, base))
    finish()


main()
