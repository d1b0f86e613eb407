#!/usr/bin/env python3
"""Checks the block texts of a page call against the reference engines.

usage: page_oracle.py ORACLE EXPECTED.txt PAGE_DIR STEPS.json [CHANNEL]

EXPECTED.txt is the output of `test_page --steps PAGE_DIR STEPS.json CHANNEL` (tests/page/*/
expected*.txt): for every step, every template block's text there must be what the oracle
(../shared/conformance/oracle: Jinja2, Ruby ERB, str.format) renders for that block with the
page's scope: static blocks against an empty state, dynamic ones against the defaults overlaid
by the step's state with `call` dropped and `resumed` set (false unless the step says), the
step's memory as --remember facts, --profile of the page (format strings: --tidy, as tpl's
pinecall profile). Steps that set call.claimed are skipped (the oracle's call.claimed is None).
Each section of the page text has its trailing whitespace removed, so texts compare rstripped.
Prints "N passed, N failed"; exit 1 on a mismatch."""
import json, os, re, subprocess, sys, tempfile

FLAGS = re.compile(r"^-- \S+ changed=[01] rendered=[01] bytes=\d+$")
HEAD = re.compile(r"^── (.*) \((static|dynamic)\) ──$|^── history ──$")


def parse(expected):
    steps, cur, name = [], None, None
    for line in open(expected, encoding="utf-8").read().split("\n"):
        if line.startswith("== step "):
            cur = {}
            steps.append(cur)
            name = None
            continue
        if FLAGS.match(line) or line.startswith("error "):
            name = None
            continue
        m = HEAD.match(line)
        if m:
            name = m.group(1)
            if name:
                cur[name] = []
            continue
        if name is not None:
            cur[name].append(line)
    return [{k: "\n".join(v).rstrip() for k, v in s.items()} for s in steps]


def main(argv):
    if len(argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    oracle, expected, page_dir, steps_file = argv[:4]
    channel = argv[4] if len(argv) > 4 else "phone"
    page = json.load(open(os.path.join(page_dir, "page.json"), encoding="utf-8"))
    steps = json.load(open(steps_file, encoding="utf-8"))
    texts = parse(expected)
    profile = page.get("profile", "pinecall")
    defaults = page.get("defaults", {})
    npass = nfail = 0
    with tempfile.TemporaryDirectory() as tmp:
        for i, step in enumerate(steps):
            if "claimed" in step or "raw_state" in step:
                continue
            ch = step.get("channel", channel)
            state = dict(defaults)
            state.update({k: v for k, v in step.get("state", {}).items() if k not in ("call", "resumed")})
            state.pop("call", None)
            state["resumed"] = bool(step.get("resumed", False))
            for b in page["blocks"]:
                if "template" not in b:
                    continue
                sp = os.path.join(tmp, "state.json")
                with open(sp, "w", encoding="utf-8") as f:
                    json.dump(state if b["region"] == "dynamic" else {}, f)
                tpl = os.path.join(page_dir, b["template"])
                cmd = [oracle, "render", tpl, "--state", sp, "--channel", ch]
                if tpl.endswith((".fmt", ".txt")):
                    cmd += ["--tidy"] if profile == "pinecall" else []
                else:
                    cmd += ["--profile", profile]
                for fact in step.get("memory", []):
                    cmd += ["--remember", fact]
                p = subprocess.run(cmd, capture_output=True)
                got = p.stdout.decode("utf-8").rstrip()
                want = texts[i].get(b["name"]) if i < len(texts) else None
                if p.returncode == 0 and want == got:
                    npass += 1
                else:
                    nfail += 1
                    print("FAIL step %d block %s:\n--- oracle (%d)\n%s%s\n--- tpl\n%s" % (
                        i + 1, b["name"], p.returncode, got, p.stderr.decode(), want), file=sys.stderr)
    print("%d passed, %d failed" % (npass, nfail))
    return 1 if nfail else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
