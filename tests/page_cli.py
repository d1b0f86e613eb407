#!/usr/bin/env python3
"""tplc page, tplc lint --page and tplc render's page scope (issue 18), through the command line.

usage: page_cli.py TPLC SOURCE_ROOT [--update]

- every tests/page/bad-* and static-* folder: `tplc page DIR` exits 1 with its expect.txt on
  stderr, and `tplc lint --page DIR` exits 1 with it on stdout;
- the runs in CASES below: exit status, stdout and stderr against tests/page/cli/NAME.out
  (first line "exit N", then stdout, then "--- stderr" and stderr). --update rewrites them.
Block texts themselves are checked against the reference engines elsewhere (test_page and
tests/page_oracle.py); these pin tplc's formats. Prints "N passed, N failed"."""
import json, os, subprocess, sys, tempfile, time

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
    ("page-not-folder", ["page", "tests/page/cli/defaults.json"]),
    ("page-no-folder", ["page", "tests/page/cli/missing"]),
    ("golden-misspelled-key", ["page", "tests/page/three", "--golden", "tests/page/cli/misspelled-golden.json"]),
    ("steps-misspelled-key", ["page", "tests/page/three", "--steps", "tests/page/cli/misspelled-steps.json"]),
    ("lint-page-ok", ["lint", "--page", "examples/front-desk"]),
    ("lint-page-json", ["lint", "--page", "tests/page/static-erb", "--format", "json"]),
]


def run(tplc, root, args):
    p = subprocess.run([tplc] + args, cwd=root, capture_output=True, timeout=60)
    return "exit %d\n%s--- stderr\n%s" % (p.returncode, p.stdout.decode("utf-8", "replace"),
                                          p.stderr.decode("utf-8", "replace"))


def hostile(tplc):
    """Hostile page folders, made here (a FIFO cannot live in git): a block template that is a
    FIFO (the load hung) or a link to /dev/zero (read 256 MB first) is refused unread; 100,000
    blocks load in linear time (the duplicate-name check was pairwise: > 10 s), and a duplicate
    among them is still found. Returns (passed, failed)."""
    npass = nfail = 0
    page = {"blocks": [{"name": "v", "region": "dynamic", "template": "v.jinja"}]}
    with tempfile.TemporaryDirectory(prefix="tpl-page-") as tmp:
        runs = []
        for kind in ("fifo", "zero"):
            d = os.path.join(tmp, kind)
            os.mkdir(d)
            with open(os.path.join(d, "page.json"), "w") as f:
                json.dump(page, f)
            if kind == "fifo":
                os.mkfifo(os.path.join(d, "v.jinja"))
            else:
                os.symlink("/dev/zero", os.path.join(d, "v.jinja"))
            runs.append((kind, d, "template 'v.jinja' of block 'v' is not a regular file"))
        for kind, dup in (("many", False), ("many-dup", True)):
            d = os.path.join(tmp, kind)
            os.mkdir(d)
            names = ["b%d" % (i % 99999 if dup else i) for i in range(100000)]
            with open(os.path.join(d, "page.json"), "w") as f:
                json.dump({"blocks": [{"name": n, "region": "dynamic", "text": "x"} for n in names]}, f)
            runs.append((kind, d, "duplicate block name 'b0'" if dup else None))
        for kind, d, want in runs:
            t0 = time.time()
            try:
                p = subprocess.run([tplc, "lint", "--page", d], capture_output=True, timeout=20)
                rc, out = p.returncode, p.stdout.decode("utf-8", "replace")
            except subprocess.TimeoutExpired:
                rc, out = None, "(timed out)"
            took = time.time() - t0
            ok = (rc == 0 and not out) if want is None else (rc == 1 and want in out)
            ok = ok and took < 10  # generous: the machine is shared; it took minutes before
            if ok:
                npass += 1
            else:
                nfail += 1
                print("FAIL hostile page %s: exit %s in %.1f s:\n%s--- want\n%s" % (kind, rc, took, out[:500], want))
    return npass, nfail


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
    hp, hf = hostile(tplc)
    npass, nfail = npass + hp, nfail + hf
    print("%d passed, %d failed" % (npass, nfail))
    return 1 if nfail else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
