#!/usr/bin/env python3
"""Golden tests for tplc's own output formats: per stage, `tplc dump --tokens` (tests/dump/NAME.EXT →
NAME.EXT.tokens), `tplc dump --ast` (→ NAME.EXT.ast) and the `tplc dump` disassembly (→ NAME.EXT.dump),
each with the flags in NAME.args if there is one (every source in tests/dump must have all three;
a failing dump's golden is 'exit N' then the exact stderr), and diagnostics (tests/errors/NAME.<ext> [+ NAME.json state, NAME.args extra flags] →
NAME.expect: 'exit N' then the exact stderr). These pin tpl's formats, not a reference engine's.

usage: golden.py TPLC [--update]   (--update rewrites the expected files after a deliberate change)
Prints 'N passed, N failed'."""
import os, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))


def run(tplc, args, cwd):
    p = subprocess.run([tplc] + args, cwd=cwd, capture_output=True, timeout=30)
    return p.returncode, p.stdout, p.stderr


def main(argv):
    tplc, update = os.path.abspath(argv[0]), "--update" in argv
    passed = failed = 0
    cases = []
    ddir = os.path.join(HERE, "dump")
    for name in sorted(os.listdir(ddir)):
        base, ext = os.path.splitext(name)
        if ext in (".jinja", ".erb", ".fmt"):
            for mode in ("tokens", "ast", "dump"):
                cases.append((mode, ddir, name, os.path.join(ddir, name + "." + mode)))
    edir = os.path.join(HERE, "errors")
    for name in sorted(os.listdir(edir)):
        base, ext = os.path.splitext(name)
        if ext in (".jinja", ".erb", ".fmt"):
            cases.append(("error", edir, name, os.path.join(edir, base + ".expect")))
    for kind, d, name, expect in cases:
        base = os.path.splitext(name)[0]
        if kind in ("tokens", "ast", "dump"):
            args = ["dump", name] + ([] if kind == "dump" else ["--" + kind])
            if os.path.exists(os.path.join(d, base + ".args")):
                with open(os.path.join(d, base + ".args")) as f:
                    args += f.read().split()
            code, out, err = run(tplc, args, d)
            got = out if code == 0 else b"exit %d\n" % code + err
        else:
            args = ["render", name]
            if os.path.exists(os.path.join(d, base + ".json")):
                args += ["--state", base + ".json"]
            if os.path.exists(os.path.join(d, base + ".args")):
                with open(os.path.join(d, base + ".args")) as f:
                    args += f.read().split()
            code, out, err = run(tplc, args, d)
            got = b"exit %d\n" % code + err
        if update:
            with open(expect, "wb") as f:
                f.write(got)
        want = open(expect, "rb").read() if os.path.exists(expect) else None
        if got == want:
            passed += 1
        else:
            failed += 1
            print("FAIL %s/%s" % (kind, name))
            print("  want: %r" % (want[:400] if want is not None else None))
            print("  got:  %r" % got[:400])
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
