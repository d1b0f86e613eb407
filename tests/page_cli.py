#!/usr/bin/env python3
"""tplc page, tplc lint --page and tplc render's page scope (issue 18), through the command line.

usage: page_cli.py TPLC SOURCE_ROOT [--update]

- every tests/page/bad-* and static-* folder: `tplc page DIR` exits 1 with its expect.txt on
  stderr, and `tplc lint --page DIR` exits 1 with it on stdout;
- the runs in CASES below: exit status, stdout and stderr against tests/page/cli/NAME.out
  (first line "exit N", then stdout, then "--- stderr" and stderr). --update rewrites them.
Block texts themselves are checked against the reference engines elsewhere (test_page and
tests/page_oracle.py); these pin tplc's formats. Prints "N passed, N failed"."""
import os, subprocess, sys

CASES = [
    ("front-desk-text", ["page", "examples/front-desk", "--golden", "examples/front-desk/call.json", "--case", "3"]),
    ("front-desk-whatsapp-json", ["page", "examples/front-desk", "--golden", "examples/front-desk/call.json",
                                  "--case", "2", "--channel", "whatsapp", "--format", "json"]),
    ("front-desk-steps", ["page", "examples/front-desk", "--steps", "examples/front-desk/call.json"]),
    ("front-desk-steps-json", ["page", "examples/front-desk", "--steps", "examples/front-desk/call.json",
                               "--format", "json"]),
    ("three-defaults", ["page", "tests/page/three"]),
    ("three-scope", ["page", "tests/page/three", "--state", "tests/page/cli/state.json", "--resumed",
                     "--claimed", "P-204", "--remember", "their usual doctor is Dr. Vidal", "--channel", "web"]),
    ("three-steps", ["page", "tests/page/three", "--steps", "tests/page/three/steps.json", "--channel", "whatsapp"]),
    ("render-scope", ["render", "tests/page/three/view.jinja", "--profile", "pinecall", "--defaults",
                      "tests/page/cli/defaults.json", "--state", "tests/page/cli/state.json", "--resumed",
                      "--claimed", "P-204"]),
    ("render-defaults-golden", ["render", "tests/page/three/status.erb", "--profile", "pinecall", "--defaults",
                                "tests/page/cli/defaults.json", "--golden", "tests/page/three/steps.json",
                                "--case", "0"]),
    ("bad-state", ["page", "tests/page/three", "--state", "tests/page/cli/bad-state.json"]),
    ("bad-steps", ["page", "tests/page/three", "--steps", "tests/page/cli/bad-steps.json"]),
    ("steps-and-state", ["page", "tests/page/three", "--steps", "tests/page/three/steps.json", "--state",
                         "tests/page/cli/state.json"]),
    ("no-page", ["page", "tests/page/cli"]),
    ("golden-misspelled-key", ["page", "tests/page/three", "--golden", "tests/page/cli/misspelled-golden.json"]),
    ("steps-misspelled-key", ["page", "tests/page/three", "--steps", "tests/page/cli/misspelled-steps.json"]),
    ("lint-page-ok", ["lint", "--page", "examples/front-desk"]),
    ("lint-page-json", ["lint", "--page", "tests/page/static-erb", "--format", "json"]),
]


def run(tplc, root, args):
    p = subprocess.run([tplc] + args, cwd=root, capture_output=True, timeout=60)
    return "exit %d\n%s--- stderr\n%s" % (p.returncode, p.stdout.decode("utf-8", "replace"),
                                          p.stderr.decode("utf-8", "replace"))


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    tplc, root = os.path.abspath(argv[0]), argv[1]
    update = "--update" in argv
    npass = nfail = 0
    pages = os.path.join(root, "tests", "page")
    for d in sorted(os.listdir(pages)):
        if not (d.startswith("bad-") or d.startswith("static-")):
            continue
        want = open(os.path.join(pages, d, "expect.txt"), encoding="utf-8").read()
        for args, stream in ((["page", "tests/page/" + d], "stderr"), (["lint", "--page", "tests/page/" + d], "stdout")):
            p = subprocess.run([tplc] + args, cwd=root, capture_output=True, timeout=60)
            got = (p.stderr if stream == "stderr" else p.stdout).decode("utf-8", "replace")
            if p.returncode == 1 and got == want:
                npass += 1
            else:
                nfail += 1
                print("FAIL tplc %s: exit %d, %s:\n%s--- want\n%s" % (" ".join(args), p.returncode, stream, got, want))
    for name, args in CASES:
        path = os.path.join(pages, "cli", name + ".out")
        got = run(tplc, root, args)
        if update:
            with open(path, "w", encoding="utf-8") as f:
                f.write(got)
        want = open(path, encoding="utf-8").read() if os.path.exists(path) else None
        if got == want:
            npass += 1
        else:
            nfail += 1
            print("FAIL tplc %s:\n%s--- want\n%s" % (" ".join(args), got, want))
    print("%d passed, %d failed" % (npass, nfail))
    return 1 if nfail else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
