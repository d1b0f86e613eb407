#!/usr/bin/env python3
"""Adds up the test results of several meson build folders (meson-logs/testlog.json) and prints
one closing line 'N passed, N failed'. A suite that reports its own case counts (a line
'N passed, N failed' in its output) counts by cases; other tests count as one each."""
import json, os, re, sys

passed = failed = 0
for d in sys.argv[1:]:
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
