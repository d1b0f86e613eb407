#!/usr/bin/env python3
"""Golden tests of `tplc lint` (text and JSON output).

usage: lint_golden.py TPLC [--update]

Each tests/lint/NAME.cmd holds the arguments after `tplc` (shell words); the command runs in
tests/lint and its stdout followed by a line "exit N" must equal tests/lint/NAME.out.
--update rewrites the .out files. The last line is 'N passed, N failed'.
"""
import os, shlex, subprocess, sys

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lint")


def main(argv):
    if not argv:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    tplc, update = os.path.abspath(argv[0]), "--update" in argv[1:]
    passed = failed = 0
    for name in sorted(os.listdir(HERE)):
        if not name.endswith(".cmd"):
            continue
        with open(os.path.join(HERE, name), encoding="utf-8") as f:
            args = shlex.split(f.read())
        p = subprocess.run([tplc] + args, cwd=HERE, capture_output=True, timeout=60)
        got = p.stdout + b"exit %d\n" % p.returncode
        out = os.path.join(HERE, name[:-4] + ".out")
        if update:
            with open(out, "wb") as f:
                f.write(got)
        with open(out, "rb") as f:
            want = f.read()
        if got == want:
            passed += 1
        else:
            failed += 1
            print("FAIL %s\n--- want\n%s--- got\n%s--- stderr\n%s" % (name, want.decode(errors="replace"),
                  got.decode(errors="replace"), p.stderr.decode(errors="replace")))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
