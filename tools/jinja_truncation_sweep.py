#!/usr/bin/env python3
"""Truncation sweep (issue 14): cuts the conformance corpus's Jinja templates at random points
inside their tags and compares tplc's syntax error (message text and line) with Jinja2's parser's.

usage: tools/jinja_truncation_sweep.py [CUTS_PER_TEMPLATE [SEED [PATH_SUBSTRING]]]
       (TPLC=path/to/tplc, default build/tplc; the corpus is ../shared/conformance)
Prints DIFF lines, the tally and the differing classes, most frequent first."""
import glob, os, random, re, subprocess, sys, collections, tempfile
import jinja2, jinja2.ext, jinja2.nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TPLC = os.environ.get("TPLC", os.path.join(ROOT, "build", "tplc"))
C = os.path.join(ROOT, "..", "shared", "conformance")
TC = os.path.join(ROOT, "tests", "cases")
TMP = tempfile.mkdtemp(prefix="tpl-trunc-")

class Generation(jinja2.ext.Extension):
    tags = {"generation"}
    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)
    def _body(self, caller):
        return caller()

def env_for(profile):
    if profile == "hf":
        return ImmutableSandboxedEnvironment(extensions=[Generation, jinja2.ext.loopcontrols], trim_blocks=True, lstrip_blocks=True)
    if profile == "pinecall":
        return jinja2.Environment(trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    return jinja2.Environment()

def corpus():
    out = []
    for d, prof in (("chat", "hf"), ("bugs-jinja", "hf"), ("jinja-core", "jinja2"), ("pinecall", "pinecall"), ("i18n", "jinja2")):
        for f in sorted(glob.glob(f"{C}/{d}/*.jinja")):
            out.append((f, prof))
    for f in sorted(glob.glob(f"{TC}/jinja-wild*/*.jinja")) + sorted(glob.glob(f"{TC}/jinja-wild*/*.j2")):
        out.append((f, "skip"))
    return out

TAG = re.compile(r"\{\{|\{%")
def cut_points(src, k, rng):
    pts = []
    for m in TAG.finditer(src):
        close = "}}" if m.group() == "{{" else "%}"
        e = src.find(close, m.end())
        if e < 0: e = len(src)
        pts.extend(range(m.end(), e))
    rng.shuffle(pts)
    return sorted(pts[:k])

def jinja_err(src, profile):
    try:
        env_for(profile).parse(src)
        return None
    except jinja2.TemplateSyntaxError as e:
        return (e.lineno, e.message)
    except Exception as e:
        return (0, "%s: %s" % (type(e).__name__, e))

EL = re.compile(r"^[^\n]*?:(\d+):(\d+): error: (.*)$", re.M)
def tpl_err(path, profile):
    p = subprocess.run([TPLC, "render", path, "--state", os.path.join(TMP, "empty.json"), "--profile", profile], capture_output=True)
    if p.returncode == 0:
        return None
    s = p.stderr.decode("utf-8", "replace")
    m = EL.search(s)
    if not m:
        return (0, s.strip().splitlines()[0] if s.strip() else "rc=%d" % p.returncode)
    return (int(m.group(1)), m.group(3))

def main():
    k = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    only = sys.argv[3] if len(sys.argv) > 3 else None
    with open(os.path.join(TMP, "empty.json"), "w") as f:
        f.write("{}")
    rng = random.Random(seed)
    stats = collections.Counter()
    classes = collections.Counter()
    tmp = os.path.join(TMP, "t.jinja")
    for f, prof in corpus():
        if only and only not in f: continue
        if prof == "skip": continue
        src = open(f, encoding="utf-8", newline="").read()
        for cp in cut_points(src, k, rng):
            t = src[:cp]
            j = jinja_err(t, prof)
            if j is None:
                stats["jinja-ok"] += 1
                continue
            open(tmp, "w", encoding="utf-8", newline="").write(t)
            r = tpl_err(tmp, prof)
            if r is None:
                stats["tpl-ok-jinja-err"] += 1
                print("TPLOK", f, cp, j, repr(t[-40:]))
                continue
            if r[1] == j[1] and r[0] == j[0]:
                stats["same"] += 1
            else:
                stats["text-diff" if r[1] != j[1] else "line-diff"] += 1
                classes[(j[1], r[1]) if r[1] != j[1] else ("LINE", j[1])] += 1
                print("DIFF", f, cp, "jinja=", j, "tpl=", r, repr(t[-50:]))
    print(dict(stats))
    for c, n in classes.most_common(60):
        print(n, c)
main()
