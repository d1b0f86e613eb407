#!/usr/bin/env python3
"""Checks the expectations of tests/test_erb.c against Ruby: every case is rendered with the
conformance oracle (../shared/conformance/oracle: Ruby 3.1 ERB, trim_mode "-", with tpl's
documented deviations applied). A case expecting output must get exactly that output; a case
expecting an error must make Ruby raise too, with the case's message fragment in Ruby's message.

usage: erb_oracle_check.py TEST_ERB_BINARY [ORACLE]   (needs ruby; prints 'N agree, N differ')"""
import json, os, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def main(argv):
    if not argv:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    oracle = argv[1] if len(argv) > 1 else os.path.join(HERE, "..", "..", "shared", "conformance", "oracle")
    lines = subprocess.run([argv[0], "--json"], capture_output=True, check=True, text=True).stdout
    agree = differ = 0
    with tempfile.TemporaryDirectory() as tmp:
        tpl, state = os.path.join(tmp, "case.erb"), os.path.join(tmp, "state.json")
        for i, line in enumerate(lines.splitlines()):
            c = json.loads(line)
            with open(tpl, "w", encoding="utf-8") as f:
                f.write(c["tpl"])
            with open(state, "w", encoding="utf-8") as f:
                f.write(c["state"])
            p = subprocess.run([oracle, "render", tpl, "--state", state], capture_output=True)
            out, err = p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
            if c["expect"] is not None:
                ok = p.returncode == 0 and out == c["expect"]
            else:
                ok = p.returncode == 1 and (c["msg"] or "") in err
            if ok:
                agree += 1
            else:
                differ += 1
                print("DIFFER case %d: %r" % (i, c["tpl"]))
                print("  test expects: %r" % (c["expect"] if c["expect"] is not None else "error: %s" % c["msg"]))
                print("  Ruby:         exit %d %r %r" % (p.returncode, out, err.strip()[:300]))
    print("%d agree, %d differ" % (agree, differ))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
