#!/usr/bin/env python3
"""Adds up the test results of several meson build folders (meson-logs/testlog.json) and prints
one closing line 'N passed, N failed'. A suite that reports its own case counts (a line
'N passed, N failed' in its output) counts by cases; other tests count as one each."""
import json, os, re, sys

passed = failed = 0
args = sys.argv[1:]
extra = []
if "--extra" in args:  # logs of other runners whose last "N passed, N failed" line counts too
    i = args.index("--extra")
    extra, args = args[i + 1:], args[:i]
for path in extra:
    found = re.findall(r"(\d+) passed, (\d+) failed", open(path, encoding="utf-8", errors="replace").read()) if os.path.exists(path) else []
    if found:
        passed += int(found[-1][0])
        failed += int(found[-1][1])
    else:
        failed += 1
        print("%s: no result line" % path)
for d in args:
    log = os.path.join(d, "meson-logs", "testlog.json")
    if not os.path.exists(log):
        failed += 1
        print("%s: no test log (build failed?)" % d)
        continue
    for line in open(log, encoding="utf-8"):
        t = json.loads(line)
        m = re.findall(r"^(\d+) passed, (\d+) failed", t.get("stdout", ""), re.M)
        ok = t.get("result") in ("OK", "EXPECTEDFAIL", "SKIP")
        if m:
            p, f = map(int, m[-1])
            passed += p
            failed += f
            if not ok and f == 0:
                failed += 1
        else:
            passed += ok
            failed += not ok
print("%d passed, %d failed" % (passed, failed))
