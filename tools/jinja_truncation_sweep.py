#!/usr/bin/env python3
"""Truncation sweep (issue 14): cuts the conformance corpus's Jinja templates at random points
inside their tags and compares tplc's syntax error (message text and line) with Jinja2's parser's.

usage: tools/jinja_truncation_sweep.py [CUTS_PER_TEMPLATE [SEED [PATH_SUBSTRING]]]
       tools/jinja_truncation_sweep.py --mutate [MUTATIONS_PER_TEMPLATE [SEED [PATH_SUBSTRING]]]
       (TPLC=path/to/tplc, default build/tplc; the corpus is ../shared/conformance and examples/)
--mutate: instead of cutting, deletes, duplicates or swaps tokens inside the tags (one mutation
per variant; TAG_MUTATIONS=0.4 of them instead delete or duplicate whole tags, add `-`/`+`,
raw/endraw or comments with `#}` in strings) and compares accept/reject, the error's text and line, and (both accepting) the
output rendered with the case's state when Jinja2 renders it.
Prints DIFF lines, the tally and the differing classes, most frequent first."""
import glob, json, os, random, re, subprocess, sys, collections, tempfile
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

TOK = re.compile(r"""\s*(?:'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|\d+(?:\.\d+)?|\w+|\*\*|//|[=!<>]=|.)""", re.S)
def tag_tokens(src):
    """(start, end) of every token inside the {{ }} and {% %} tags of src (leading blanks included)."""
    out = []
    for m in TAG.finditer(src):
        close = "}}" if m.group() == "{{" else "%}"
        e = src.find(close, m.end())
        if e < 0: continue
        p = m.end()
        if p < e and src[p] in "-+": p += 1
        while p < e:
            t = TOK.match(src, p, e)
            if not t or t.end() == p: break
            if src[t.start():t.end()].strip():
                out.append((t.start(), t.end()))
            p = t.end()
    return out

WHOLE_TAG = re.compile(r"\{%.*?%\}|\{\{.*?\}\}|\{#.*?#\}", re.S)
def mutate_tag(src, rng):
    """whole-tag mutations: delete or duplicate a tag (end tags too), whitespace control (`-`/`+`)
    in odd places, raw/endraw around or inside tags, comments holding `#}` in strings"""
    tags = [(m.start(), m.end()) for m in WHOLE_TAG.finditer(src)]
    if not tags: return src
    a, b = rng.choice(tags)
    op = rng.choice(("deltag", "duptag", "ws", "ws", "raw", "rawin", "comment"))
    if op == "deltag": return src[:a] + src[b:]
    if op == "duptag": return src[:b] + src[a:b] + src[b:]
    if op == "ws":
        p = rng.randrange(a + 1, b)
        return src[:p] + rng.choice("-+") + src[p:]
    if op == "raw":
        return src[:a] + "{% raw %}" + src[a:b] + rng.choice(("{% endraw %}", "{%- endraw -%}", "{% endraw %}{% endraw %}", "")) + src[b:]
    if op == "rawin":
        return src[:a] + rng.choice(("{% raw %}{% raw %}x{% endraw %}", "{% endraw %}", "{%raw-%} {{ {%-endraw%}", "{% raw %}{% endraw x %}")) + src[a:]
    return src[:b] + rng.choice(('{# "#}" #}', "{# '#}' #}", '{# {# #} #}', '{#- x -#}', '{# {% raw %} #}')) + src[b:]

def mutate(src, toks, rng):
    if rng.random() < float(os.environ.get("TAG_MUTATIONS", "0.4")):
        return mutate_tag(src, rng)
    i = rng.randrange(len(toks))
    a, b = toks[i]
    op = rng.choice(("delete", "duplicate", "swap"))
    if op == "delete": return src[:a] + src[b:]
    if op == "duplicate": return src[:b] + src[a:b] + src[b:]
    if i + 1 >= len(toks): return src[:a] + src[b:]
    c, d = toks[i + 1]
    if c < b: return src[:a] + src[b:]
    return src[:a] + src[c:d] + src[b:c] + src[a:b] + src[d:]

def jinja_render(src, profile, state):
    try:
        return ("ok", env_for(profile).from_string(src).render(**state))
    except jinja2.TemplateSyntaxError as e:
        return ("syntax", e.lineno, e.message)
    except Exception as e:
        return ("runtime", type(e).__name__)

def tpl_render(path, profile, statef):
    p = subprocess.run([TPLC, "render", path, "--state", statef, "--profile", profile], capture_output=True, timeout=60)
    if p.returncode == 0:
        return ("ok", p.stdout.decode("utf-8", "replace"))
    s = p.stderr.decode("utf-8", "replace")
    m = EL.search(s)
    return ("err", int(m.group(1)) if m else 0, m.group(3) if m else s.strip()[:200])

def main_mutate(argv):
    k = int(argv[0]) if argv else 6
    seed = int(argv[1]) if len(argv) > 1 else 1
    only = argv[2] if len(argv) > 2 else None
    rng = random.Random(seed)
    stats = collections.Counter()
    classes = collections.Counter()
    tmp = os.path.join(TMP, "t.jinja")
    files = [(f, p) for f, p in corpus() if p != "skip"]
    files += [(f, "jinja2") for f in sorted(glob.glob(os.path.join(ROOT, "examples", "**", "*.jinja"), recursive=True))]
    for f, prof in files:
        if only and only not in f: continue
        src = open(f, encoding="utf-8", newline="").read()
        statef = os.path.splitext(f)[0] + ".json"
        if not os.path.exists(statef): statef = os.path.join(TMP, "empty.json")
        try:
            state = json.load(open(statef, encoding="utf-8"))
            if not isinstance(state, dict): continue
        except Exception:
            continue
        toks = tag_tokens(src)
        if not toks: continue
        seen = set()
        for _ in range(k):
            t = mutate(src, toks, rng)
            if t in seen or t == src: continue
            seen.add(t)
            j = jinja_render(t, prof, state)
            open(tmp, "w", encoding="utf-8", newline="").write(t)
            try:
                r = tpl_render(tmp, prof, statef)
            except subprocess.TimeoutExpired:
                stats["tpl-timeout"] += 1
                print("TIMEOUT", f, repr(t[:80]))
                continue
            if j[0] == "syntax":
                if r[0] == "ok":
                    stats["tpl-ok-jinja-err"] += 1
                    classes[("TPLOK", j[2])] += 1
                    print("TPLOK", f, j, diff_at(src, t))
                elif (r[1], r[2]) == (j[1], j[2]):
                    stats["same-error"] += 1
                else:
                    stats["text-diff" if r[2] != j[2] else "line-diff"] += 1
                    classes[(j[2], r[2]) if r[2] != j[2] else ("LINE", j[2])] += 1
                    print("DIFF", f, "jinja=", j, "tpl=", r, diff_at(src, t))
            elif j[0] == "ok":
                if r[0] == "ok" and r[1] == j[1]:
                    stats["same-output"] += 1
                elif r[0] == "ok":
                    stats["output-diff"] += 1
                    classes[("OUTPUT",)] += 1
                    print("OUTDIFF", f, diff_at(src, t))
                else:
                    stats["tpl-err-jinja-ok"] += 1
                    classes[("TPLERR", r[2][:80])] += 1
                    print("TPLERR", f, r, diff_at(src, t))
            else:
                stats["jinja-runtime-error"] += 1
    print(dict(stats))
    for c, n in classes.most_common(60):
        print(n, c)

def diff_at(a, b):
    """the mutated stretch of b, with a little context"""
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]: i += 1
    return repr(b[max(0, i - 30):i + 30])

def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--mutate":
        with open(os.path.join(TMP, "empty.json"), "w") as f:
            f.write("{}")
        return main_mutate(sys.argv[2:])
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
