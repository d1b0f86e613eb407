"""Greedy reducer for a scopefuzz finding: python3 reduce.py FILE.txt (tpl.jinja2 from build/python,
or TPL_PYBUILD) -> the smallest template
(whole tags or balanced statement ranges removed / unwrapped) that still shows the same kind of
difference (same tpl error class, or still different output)."""
import json, os, re, sys
sys.path[:0] = [os.environ.get("TPL_PYBUILD", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "python")),
                os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python")]
import jinja2, tpl.jinja2 as tj
LIB = "{% macro lm(q) %}<{{ q }}|{{ x is defined }}|{{ a }}>{% endmacro %}{% set top = 5 %}"
INC = "(inc {{ x|default('-') }} {{ i|default('-') }} {% set x = 'I' %}{{ x }})"
STATE = {"a": 3, "items": [1, 2, 3], "s": "hi", "d": {"k": 1, "j": 2}, "tree": [{"n": 1, "c": [{"n": 2, "c": []}]}, {"n": 3, "c": []}]}
def render(mod, src, opts):
    env = mod.Environment(loader=mod.DictLoader({"main": src, "inc": INC, "lib": LIB}), extensions=["jinja2.ext.loopcontrols"], **opts)
    try:
        t = env.get_template("main")
    except Exception as e:
        return ("compile-error", type(e).__name__)
    try:
        return ("ok", t.render(**STATE))
    except Exception as e:
        return ("error", type(e).__name__)
def kind(src, opts):
    a, b = render(jinja2, src, opts), render(tj, src, opts)
    if a[0] == "ok" and b[0] == "ok": return "different" if a[1] != b[1] else None
    if a[0] == "ok": return "tpl:" + b[1]
    if b[0] == "ok": return "jinja:" + a[1]
    return None
OPEN = {"if": "endif", "for": "endfor", "block": "endblock", "macro": "endmacro", "call": "endcall",
        "filter": "endfilter", "with": "endwith", "set": "endset"}
def segs(src):
    return [m for m in re.split(r"(\{%.*?%\}|\{\{.*?\}\}|\{#.*?#\})", src) if m]
def tagname(s):
    m = re.match(r"\{%-?\s*(\w+)", s); return m.group(1) if m else None
def ranges(sg):
    out = []
    for i, s in enumerate(sg):
        t = tagname(s)
        if t in OPEN and not (t == "set" and "=" in s):
            depth = 0
            for j in range(i, len(sg)):
                u = tagname(sg[j])
                if u == t and not (t == "set" and "=" in sg[j]): depth += 1
                elif u == OPEN[t]:
                    depth -= 1
                    if depth == 0: out.append((i, j)); break
    return out
d = json.load(open(sys.argv[1])); src, opts = d["src"], d["opts"]
want = kind(src, opts); print("kind:", want)
changed = True
while changed:
    changed = False
    sg = segs(src)
    cands = []
    for (i, j) in ranges(sg):
        cands.append(sg[:i] + sg[j + 1:])
        cands.append(sg[:i] + sg[i + 1:j] + sg[j + 1:])
    for i in range(len(sg)):
        if tagname(sg[i]) not in OPEN and not (tagname(sg[i]) or "").startswith(("end", "el")):
            cands.append(sg[:i] + sg[i + 1:])
    for c in sorted(cands, key=lambda c: len("".join(c))):
        s2 = "".join(c)
        if len(s2) < len(src) and kind(s2, opts) == want:
            src = s2; changed = True; break
print(src)
a, b = render(jinja2, src, opts), render(tj, src, opts); print(" J:", a, "\n T:", b)
