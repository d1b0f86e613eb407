#!/usr/bin/env python3
"""The error-kind table (issue 16): for every erroring template of a corpus, the exception class
the reference engine raises (Jinja2's for .jinja, Ruby's for .erb, Python's str.format for .fmt),
pinned in tests/error_kinds.txt from ../shared/conformance/oracle, against the kind tpl reports
(tpl_error.kind) and the exception its include/tpl_errors.def row names for the syntax
(tpl_error_exception), printed by tests/error_kind.c.

usage: error_kinds.py ERROR_KIND                 check every row (prints 'N passed, N failed')
       error_kinds.py ERROR_KIND --pin ORACLE    re-ask the oracle for every template of the corpus
                                                 and rewrite tests/error_kinds.txt

A row is `CLASS<TAB>PATH[<TAB>FLAGS]`: PATH relative to tests/ (@conformance/ for
../shared/conformance/), FLAGS those of `tplc render` (--strict, --profile P, ...), a state file
NAME.json beside the template is passed with --state. CLASS is the reference's exception; a row
whose CLASS the reference engine has no counterpart for in tpl (tpl's own limits) is left out.
The corpus: tests/errors/, tests/error_kinds/ (one template per class the audit found wrong),
tests/cases/jinja-dyn/ (templates named at render time, issue 14)
and the .err cases of ../shared/conformance."""
import json, os, re, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
CONF = os.path.normpath(os.path.join(HERE, "..", "..", "shared", "conformance"))
TABLE = os.path.join(HERE, "error_kinds.txt")
# Rows where tpl deliberately reports another class (a construct it refuses at compile time, a
# limit of its own): PATH, then '#' and why. A listed row that matches is reported, not failed.
KNOWN = os.path.join(HERE, "error_kinds.known")
EXTS = (".jinja", ".j2", ".erb", ".fmt")
FLAGS = {"strict": "--strict", "trim_blocks": "--trim-blocks", "lstrip_blocks": "--lstrip-blocks",
         "keep_trailing_newline": "--keep-trailing-newline", "tidy": "--tidy"}
# Exceptions of the reference engines that are not about the template: the oracle's own
# plumbing (a missing file) or tpl's own limits and resource errors, which tpl reports as limits.
NOT_TEMPLATE = {"FileNotFoundError", "JSONDecodeError", "RecursionError", "MemoryError", "SystemStackError",
                "NoMemoryError", "Interrupt"}


def resolve(path):
    return os.path.join(CONF, path[len("@conformance/"):]) if path.startswith("@conformance/") else \
        os.path.join(HERE, path)


def state_flags(full):
    base = os.path.splitext(full)[0]
    return ["--state", base + ".json"] if os.path.exists(base + ".json") else []


def corpus():
    """(PATH, FLAGS) of every template of the corpus."""
    for d in ("errors", "error_kinds", os.path.join("cases", "jinja-dyn")):
        folder = os.path.join(HERE, d)
        if not os.path.isdir(folder):
            continue
        for name in sorted(os.listdir(folder)):
            base, ext = os.path.splitext(name)
            if ext not in EXTS or name.startswith("_"):
                continue
            flags = []
            args = os.path.join(folder, base + ".args")
            if os.path.exists(args):
                flags = open(args).read().split()
                if any(f not in FLAGS.values() for f in flags):
                    continue  # tplc's own files (state, catalogs): not a template error
            yield d + "/" + name, flags
    for suite in sorted(os.listdir(CONF)):
        sdir = os.path.join(CONF, suite)
        if not os.path.isdir(sdir):
            continue
        sopts = {}
        if os.path.exists(os.path.join(sdir, "suite.json")):
            sopts = json.load(open(os.path.join(sdir, "suite.json")))
        for name in sorted(os.listdir(sdir)):
            base, ext = os.path.splitext(name)
            if ext not in EXTS or not os.path.exists(os.path.join(sdir, base + ".err")):
                continue
            opts = dict(sopts)
            if os.path.exists(os.path.join(sdir, base + ".opts.json")):
                opts.update(json.load(open(os.path.join(sdir, base + ".opts.json"))))
            flags, ok = [], True
            for k, v in opts.items():
                if k in FLAGS:
                    flags += [FLAGS[k]] if v else []
                elif k == "profile":
                    flags += ["--profile", v]
                elif not k.startswith("_"):
                    ok = False  # catalogs, facts, channels: the helper does not set them
            if ok:
                yield "@conformance/%s/%s" % (suite, name), flags


RUBY_CLASS = re.compile(r"\(([A-Z]\w*(?:::[A-Z]\w*)*)\)$")


def oracle_class(oracle, path, flags):
    full = resolve(path)
    try:
        p = subprocess.run([oracle, "render", os.path.basename(full)] + flags + state_flags(full),
                           cwd=os.path.dirname(full), capture_output=True, timeout=20)
    except subprocess.TimeoutExpired:
        return None  # a template that runs away (tpl stops it at a limit)
    if p.returncode == 0:
        return None
    err = p.stderr.decode("utf-8", "replace")
    m = re.match(r"[^\n]*?: error: (\w+): ", err)
    if not m:
        return "?"
    if m.group(1) == "RuntimeError" and os.path.splitext(full)[1] == ".erb":
        for line in err.splitlines():  # Ruby's report: "FILE:LINE:in `m': MESSAGE (Class)"
            r = RUBY_CLASS.search(line.rstrip())
            if r:
                return r.group(1)
        return "?"
    return m.group(1)


def tpl_class(helper, path, flags):
    full = resolve(path)
    p = subprocess.run([helper, os.path.basename(full)] + flags + state_flags(full),
                       cwd=os.path.dirname(full), capture_output=True, timeout=60)
    if p.returncode != 0:
        return "helper failed: %s" % p.stderr.decode("utf-8", "replace").strip()
    return p.stdout.decode().split()[-1]


def read_table():
    rows = []
    for line in open(TABLE, encoding="utf-8"):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.rstrip("\n").split("\t")
        rows.append((parts[0], parts[1], parts[2].split() if len(parts) > 2 else []))
    return rows


def main(argv):
    helper = os.path.abspath(argv[0])
    if "--pin" in argv:
        oracle = os.path.abspath(argv[argv.index("--pin") + 1])
        out = ["# The reference engine's exception for each erroring template (tests/error_kinds.py --pin).",
               "# CLASS<TAB>PATH<TAB>FLAGS"]
        for path, flags in corpus():
            cls = oracle_class(oracle, path, flags)
            if cls is None or cls == "?" or cls in NOT_TEMPLATE or "/state-" in path or "/invalid-state" in path:
                continue
            out.append("\t".join([cls, path] + ([" ".join(flags)] if flags else [])))
        with open(TABLE, "w", encoding="utf-8") as f:
            f.write("\n".join(out) + "\n")
        print("%d rows" % (len(out) - 2))
        return 0
    known = set()
    if os.path.exists(KNOWN):
        known = {l.split("#")[0].strip() for l in open(KNOWN, encoding="utf-8") if l.split("#")[0].strip()}
    passed = failed = xfail = 0
    for want, path, flags in read_table():
        got = tpl_class(helper, path, flags)
        if got == want:
            passed += 1
            if path in known:
                print("known difference now matches (remove it from error_kinds.known): %s" % path)
        elif path in known:
            xfail += 1
        else:
            failed += 1
            print("FAIL %s: reference %s, tpl %s" % (path, want, got))
    print("%d passed, %d failed, %d known differences" % (passed, failed, xfail))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
