#!/usr/bin/env python3
"""tplc render --autoescape (Jinja2's Environment(autoescape=True)) against real Jinja2's outputs:
every tests/autoescape/NAME.jinja (not _*) with NAME.json as the state must print NAME.out
(written by tests/autoescape/gen.py with Jinja2). usage: autoescape_check.py TPLC"""
import os, subprocess, sys

def main(argv):
    tplc = os.path.abspath(argv[1])
    d = os.path.join(os.path.dirname(os.path.abspath(__file__)), "autoescape")
    failed = passed = 0
    for name in sorted(os.listdir(d)):
        if not name.endswith(".jinja") or name.startswith("_"):
            continue
        base = name[:-6]
        cmd = [tplc, "render", name, "--autoescape"]
        if os.path.exists(os.path.join(d, base + ".json")):
            cmd += ["--state", base + ".json"]
        p = subprocess.run(cmd, cwd=d, capture_output=True, timeout=60)
        with open(os.path.join(d, base + ".out"), "rb") as f:
            want = f.read()
        if p.returncode != 0 or p.stdout != want:
            failed += 1
            print("FAIL %s (exit %d)\n  got:  %r\n  want: %r\n%s" % (name, p.returncode, p.stdout[:400], want[:400],
                                                                p.stderr.decode("utf-8", "replace")))
        else:
            passed += 1
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed or not passed else 0

if __name__ == "__main__":
    sys.exit(main(sys.argv))
