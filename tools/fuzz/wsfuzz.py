"""Differential fuzzer for whitespace control: random templates of text with spaces/tabs/newlines and
tags with -/+ modifiers, comments, raw blocks, line statements off, under trim_blocks/lstrip_blocks/
keep_trailing_newline, rendered by Jinja2 and tpl.jinja2 in one process.
Usage: python3 wsfuzz.py N SEED [OUTDIR]"""
import json
import os
import random
import sys

sys.path[:0] = [os.environ.get("TPL_PYBUILD", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "python")),
                os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python")]
import jinja2  # noqa: E402
import tpl.jinja2 as tj  # noqa: E402

N, SEED = int(sys.argv[1]), int(sys.argv[2])
OUT = sys.argv[3] if len(sys.argv) > 3 else "/tmp/wsfuzz"
os.makedirs(OUT, exist_ok=True)
R = random.Random(SEED)


def ws():
    # rarely a brace, % or # beside a tag (most make a syntax error in both) or a non-newline space
    return "".join(R.choice(["{", "}", "%", "#", "\f", "\v", "\u00a0", "\u2028", "\x1c", "\x85"]) if R.random() < 0.04 else
                   R.choice([" ", "  ", "\t", "\n", "\r\n", "x", "", "\n\n", " \n", "\n ", "\r"])
                   for _ in range(R.randint(0, 4)))


def mod():
    return R.choice(["", "", "-", "+"])


def tag(body):
    return "{%" + mod() + " " + body + " " + mod() + "%}"


def gen(depth=0):
    out = []
    for _ in range(R.randint(1, 5)):
        c = R.random()
        out.append(ws())
        if c < 0.25:
            out.append("{{" + R.choice(["", "-", "+"]) + R.choice([" ", "", "\n"]) +
                       R.choice(["x", "'a'", "1", "y|default('')", "'\\n'", "' '", "'{%'", "'\n x\n'"]) + " " +
                       R.choice(["", "-"]) + "}}")
        elif c < 0.35:
            out.append("{#" + mod() + R.choice([" c ", "", "\n c\n", " {% if %} ", "-", " # "]) + mod() + "#}")
        elif c < 0.38 and depth < 3:
            out.append(tag("with w = " + R.choice(["1", "x", "' '"])) + gen(depth + 1) + "{{ w }}" + tag("endwith"))
        elif c < 0.41 and depth < 3:
            out.append(tag("macro c2()") + gen(depth + 1) + "{{ caller() }}" + tag("endmacro") +
                       tag("call c2()") + gen(depth + 1) + tag("endcall"))
        elif c < 0.43 and depth < 3:
            out.append(tag("if not x") + gen(depth + 1) + tag("elif x") + gen(depth + 1) + tag("endif"))
        elif c < 0.45 and depth < 3:
            out.append(tag("for i in []") + gen(depth + 1) + tag("else") + gen(depth + 1) + tag("endfor"))
        elif c < 0.55 and depth < 3:
            out.append(tag("if " + R.choice(["x", "not x", "true"])) + gen(depth + 1))
            if R.random() < 0.4:
                out.append(tag("else") + gen(depth + 1))
            out.append(tag("endif"))
        elif c < 0.7 and depth < 3:
            out.append(tag("for i in [1, 2]") + gen(depth + 1) + tag("endfor"))
        elif c < 0.75:
            rm = lambda: R.choice(["", "-", "", "+"])
            inner = R.choice(["{{ x }}", "{%- if %}", "{# c -#}", "", "{% raw %}", "\n{{- x }}\n"])
            out.append("{%" + rm() + R.choice([" ", "", "  "]) + "raw" + R.choice([" ", "", "\n"]) + R.choice(["", "-"]) +
                       "%}" + ws() + inner + ws() +
                       "{%" + rm() + " endraw" + R.choice([" ", ""]) + rm() + "%}")
        elif c < 0.82:
            out.append(tag("set y = 2"))
        elif c < 0.87 and depth < 3:
            out.append(tag("set z") + gen(depth + 1) + tag("endset") + "{{ z }}")
        elif c < 0.9 and depth < 3:
            out.append(tag("macro m()") + gen(depth + 1) + tag("endmacro") + "{{ m() }}")
        elif c < 0.93 and depth < 3:
            out.append(tag("filter upper") + gen(depth + 1) + tag("endfilter"))
        else:
            out.append(ws())
    out.append(ws())
    return "".join(out)


def render(mod_, src, opts):
    env = mod_.Environment(**opts)
    try:
        t = env.from_string(src)
    except Exception as e:  # noqa
        return ("compile-error", type(e).__name__, str(e)[:200])
    try:
        return ("ok", t.render(x=1))
    except Exception as e:  # noqa
        return ("error", type(e).__name__, str(e)[:200])


counts = {}
for n in range(N):
    src = gen()
    opts = {k: True for k in ("trim_blocks", "lstrip_blocks", "keep_trailing_newline") if R.random() < 0.4}
    a, b = render(jinja2, src, opts), render(tj, src, opts)
    if a[0] == "ok" and b[0] == "ok":
        kind = "same" if a[1] == b[1] else "different"
    elif a[0] != "ok" and b[0] != "ok":
        kind = "both-error"
    elif a[0] == "ok":
        kind = "tpl-only-error"
    else:
        kind = "jinja-only-error"
    counts[kind] = counts.get(kind, 0) + 1
    if kind not in ("same", "both-error"):
        with open(os.path.join(OUT, f"{kind}-{SEED}-{n}.txt"), "w") as f:
            f.write(json.dumps({"src": src, "opts": opts, "jinja2": a, "tpl": b}, indent=1))
print(counts)
