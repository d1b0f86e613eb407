#!/usr/bin/env python3
"""Differential fuzzer for format strings (issue 14): random str.format templates and JSON states,
rendered by tplc (`render --syntax fmt`) and by Python's `str.format(**state)` in this process (the
oracle's semantics: ../shared/conformance/oracle render_fmt, state read back from JSON). Compares the
exit status, the output bytes and the error text (tpl's `FILE:L:C: error: MSG` against Python's
`Type: message`; tpl may omit the `Type: ` prefix and may add a parenthesised hint after the message).

Classes: same / silent (tpl exit 0 with other text, or tpl exit 0 where Python raised) /
refused-tpl-only (tpl refuses what Python renders: allowed, but counted) / errtext (both refuse, the
messages differ).

usage: tools/fmt_diff_fuzz.py [--seed N] [--iters N] [--show N] [--dump DIR]
  (TPLC=path/to/tplc, default build/tplc.) Seeded and reproducible: the same seed gives the same cases.
  --dump DIR writes each non-same case as DIR/K.fmt + DIR/K.json (to reduce and turn into cases)."""
import json, math, os, random, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TPLC = os.environ.get("TPLC", os.path.join(ROOT, "build", "tplc"))
TMP = tempfile.mkdtemp(prefix="tpl-fmt-fuzz-")

NAMES = ["x", "y", "n", "s", "f", "b", "z", "l", "d", "w", "p"]


def rand_int(r):
    return r.choice([0, 1, -1, 7, 42, -5, 255, 1000, 1234567, -987654321, 2**31, 2**63 - 1, 2**63,
                     2**64 + 1, -2**64, 10**20, 10**30 + 7, 65, 233, 0x10FFFF, 128512,
                     r.randint(-10**6, 10**6), r.randint(-2**70, 2**70)])


def rand_float(r):
    return r.choice([0.0, -0.0, 1.0, -1.0, 0.5, 1.5, 2.5, -2.5, 2.675, 1.005, 0.125, 0.375, 3.14159,
                     1e300, -1e300, 5e-324, 1e-7, 1e16, 1e17, 123456.789, 0.1, 1e22, 9.995, 99.95,
                     float("inf"), float("-inf"), float("nan"), 1.7976931348623157e308,
                     r.uniform(-1000, 1000), r.uniform(-1, 1) * 10 ** r.randint(-20, 20),
                     float(r.randint(-10**6, 10**6))])


def rand_str(r):
    return r.choice(["", "a", "abc", "hello world", "e\u0301t\u00e9", "\U0001F44D\U0001F3FD", "a\tb\nc",
                     "x" * 30, "'q\"", "\u00e9\u00e8", "\u4e2d\u6587", "\\", "\x00\x07", "{}", "{x}",
                     "\u2028", "\x7f\x80", "caf\u00e9", "'", "\"", "it's", "\ud7ff", "\U0001F600"])


def rand_value(r, depth=0):
    k = r.random()
    if k < 0.25:
        return rand_int(r)
    if k < 0.5:
        return rand_float(r)
    if k < 0.7:
        return rand_str(r)
    if k < 0.78:
        return r.choice([True, False])
    if k < 0.83:
        return None
    if depth > 1:
        return rand_int(r)
    if k < 0.92:
        return [rand_value(r, depth + 1) for _ in range(r.randint(0, 3))]
    return {r.choice(["a", "b", "key", "0", "1", "x y", "é"]): rand_value(r, depth + 1)
            for _ in range(r.randint(0, 3))}


def rand_spec(r, depth):
    parts = []
    if r.random() < 0.35:
        if r.random() < 0.6:
            parts.append(r.choice(" *0-_.é{x}<>=^,%#zab\u4e2d" if depth == 0 else " *0-_.<>=^"))
        parts.append(r.choice("<>=^"))
    if r.random() < 0.3:
        parts.append(r.choice("+- "))
    if r.random() < 0.08:
        parts.append("z")
    if r.random() < 0.15:
        parts.append("#")
    if r.random() < 0.15:
        parts.append("0")
    if r.random() < 0.45:
        if depth == 0 and r.random() < 0.15:
            parts.append("{w}")
        else:
            parts.append(str(r.choice([0, 1, 2, 3, 5, 8, 10, 12, 20, 30, 100])))
    if r.random() < 0.15:
        parts.append(r.choice(",_"))
    if r.random() < 0.35:
        if depth == 0 and r.random() < 0.15:
            parts.append(".{p}")
        else:
            parts.append("." + str(r.choice([0, 1, 2, 3, 5, 6, 10, 17, 20, 40])))
    if r.random() < 0.7:
        parts.append(r.choice("bcdoxXneEfFgG%s") if r.random() < 0.95 else r.choice("aAiyr!"))
    s = "".join(parts)
    if r.random() < 0.05:  # shuffle: invalid specs
        s = "".join(r.sample(s, len(s)))
    return s


def rand_field(r, state, depth=0):
    name = r.choice(NAMES)
    if r.random() < 0.04:
        name = r.choice(["", "0", "1", "", "x y", "-1"])
    acc = ""
    if r.random() < 0.15:
        acc = r.choice(["[0]", "[1]", "[a]", "[key]", ".a", ".real", ".imag", "[0][0]", "[a][b]", "[-1]",
                        "[]", ".", "[0", ".upper", "[x y]", "[é]", ".__class__", ".b.c"])
    conv = ""
    if r.random() < 0.15:
        conv = r.choice(["!r", "!s", "!a", "!r", "!a", "!x", "!", "!rr"])
    spec = None
    if r.random() < 0.7:
        spec = rand_spec(r, depth)
    out = "{" + name + acc + conv + (":" + spec if spec is not None else "") + "}"
    if r.random() < 0.02:
        out = out[:-1]  # unterminated
    return out


def typed_spec(r, v):
    """A spec that is likely valid for v's type (where silent differences hide)."""
    if isinstance(v, bool) or isinstance(v, int):
        types = "bcdoxXneEfFgG%" if not isinstance(v, bool) or r.random() < 0.5 else "d"
        if isinstance(v, int) and not 0 <= v <= 0x10FFFF:
            types = types.replace("c", "")
        t = r.choice(types + "  ")
        t = "" if t == " " else t
    elif isinstance(v, float):
        t = r.choice("eEfFgGn%  ")
        t = "" if t == " " else t
    elif isinstance(v, str):
        t = r.choice(["s", ""])
    else:
        return ""
    parts = []
    if r.random() < 0.4:
        if r.random() < 0.6:
            parts.append(r.choice(" *0-_.é\u4e2d{}"))
        parts.append(r.choice("<>^" if isinstance(v, str) else "<>=^"))
    num = not isinstance(v, str)
    if num and r.random() < 0.3:
        parts.append(r.choice("+- "))
    if num and t not in "bcdoxXn" and r.random() < 0.15 and (t or isinstance(v, float)):
        parts.append("z")
    if num and r.random() < 0.2 and t != "c":
        parts.append("#")
    if r.random() < 0.2 and not (isinstance(v, str)):
        parts.append("0")
    if r.random() < 0.5:
        parts.append(str(r.choice([1, 2, 3, 5, 8, 10, 12, 20, 30])))
    if num and t not in "cn" and r.random() < 0.2:
        parts.append(r.choice(",_") if t not in "boxX" else "_")
    if t not in "bcdoxXn" and r.random() < 0.4 and not (isinstance(v, int) and not t):
        parts.append("." + str(r.choice([0, 1, 2, 3, 4, 6, 10, 15, 16, 17, 20, 30])))
    parts.append(t)
    return "".join(parts)


def typed_template(r, state):
    pieces = []
    for _ in range(r.randint(1, 4)):
        name = r.choice(NAMES)
        v = state.get(name)
        if v is None or isinstance(v, (list, dict)) or r.random() < 0.3:
            v = r.choice([rand_int, rand_float, rand_str, lambda r: r.choice([True, False])])(r)
            state[name] = v
        conv = r.choice(["", "", "", "", "!r", "!a", "!s"])
        if conv:
            spec = r.choice(["", ">20", "^9.3", "*<12", ".0", ".5"])
        else:
            spec = typed_spec(r, v)
        pieces.append("{" + name + conv + (":" + spec if spec or r.random() < 0.1 else "") + "}")
        if r.random() < 0.4:
            pieces.append(r.choice(["|", " ", "{{", "}}", "é", "\n"]))
    return "".join(pieces)


def rand_template(r, state):
    if r.random() < 0.5:
        return typed_template(r, state)
    pieces = []
    for _ in range(r.randint(1, 4)):
        k = r.random()
        if k < 0.6:
            pieces.append(rand_field(r, state))
        elif k < 0.85:
            pieces.append(r.choice(["a", " ", "-", "|", "x=", "\n", "é", "{{", "}}", "{{}}"]))
        elif k < 0.9:
            pieces.append(r.choice(["}", "{", "{:}", "{!r}", "{ }", "{x:{w}}", "{x:{w}.{p}}", "{x:{}}",
                                    "{x:{w:{p}}}", "{x!r:^{w}}", "{x[}", "{x:}", "{:d}"]))
        else:
            pieces.append(rand_field(r, state))
    return "".join(pieces)


def rand_state(r):
    st = {n: rand_value(r) for n in NAMES if r.random() < 0.9}
    if r.random() < 0.7:
        st["w"] = r.choice([0, 1, 3, 8, 12, 20, -1, 2.5, "5", True, None, 100])
    if r.random() < 0.7:
        st["p"] = r.choice([0, 1, 2, 3, 6, 10, -2, "2", True, 20])
    return st


def python_render(src, state):
    try:
        return 0, src.format(**state).encode("utf-8"), ""
    except Exception as e:
        return 1, b"", "%s: %s" % (type(e).__name__, e)
    # (RecursionError / MemoryError are Exceptions too: counted as refusals)


def tpl_render(src, state_json):
    tp, sp = os.path.join(TMP, "t.fmt"), os.path.join(TMP, "s.json")
    with open(tp, "w", encoding="utf-8", newline="") as f:
        f.write(src)
    with open(sp, "w", encoding="utf-8") as f:
        f.write(state_json)
    try:
        p = subprocess.run([TPLC, "render", tp, "--state", sp, "--syntax", "fmt"], capture_output=True,
                           timeout=20)
    except subprocess.TimeoutExpired:
        return 99, b"", "timeout"
    err = p.stderr.decode("utf-8", "replace")
    first = err.split("\n", 1)[0]
    if ": error: " in first:
        first = first.split(": error: ", 1)[1]
    return p.returncode, p.stdout, first


def same_error(tpl_msg, py_msg):
    typ, _, msg = py_msg.partition(": ")
    for cand in (py_msg, msg):
        if tpl_msg == cand or tpl_msg.startswith(cand + " ("):
            return True
    return False


class _AnyStr(str):
    def __format__(self, spec): return ""


class _Any:
    """A value every field name, accessor, conversion and spec accepts: rendering a template with it
    leaves only the template's structural errors (str.format parses one field at a time)."""
    def __getattr__(self, k): return self
    def __getitem__(self, k): return self
    def __format__(self, spec): return ""
    def __repr__(self): return _AnyStr("")
    __str__ = __repr__


def structural_error(src):
    kw = {}
    for _ in range(64):
        try:
            src.format(*([_Any()] * 64), **kw)
            return ""
        except KeyError as e:
            kw[e.args[0]] = _Any()
        except Exception as e:
            return "%s: %s" % (type(e).__name__, e)
    return ""


def classify(t, p, src=""):
    if t[0] == 0 and p[0] == 0:
        return "same" if t[1] == p[1] else "silent"
    if t[0] == 0:
        return "silent"
    if t[0] not in (0, 1):
        return "crash"
    if p[0] == 0:
        return "refused-tpl-only"
    if same_error(t[2], p[2]):
        return "same"
    # tpl checks the whole template's structure before rendering; Python raises the first error
    # in text order (a bad value in an earlier field before a syntax error in a later one)
    se = structural_error(src)
    if se and same_error(t[2], se):
        return "errtext-order"
    # tpl refuses positional fields ({} {0}) before rendering: Python reaches them in text order
    if t[2].startswith("Replacement index ") and "out of range for positional args tuple" in t[2]:
        return "errtext-order"
    return "errtext"


def main(argv):
    seed, iters, show, dump = 1, 2000, 20, None
    it = iter(argv)
    for a in it:
        if a == "--seed":
            seed = int(next(it))
        elif a == "--iters":
            iters = int(next(it))
        elif a == "--show":
            show = int(next(it))
        elif a == "--dump":
            dump = next(it)
        else:
            print(__doc__.strip(), file=sys.stderr)
            return 2
    r = random.Random(seed)
    tally, shown = {}, {}
    if dump:
        os.makedirs(dump, exist_ok=True)
    for i in range(iters):
        state = rand_state(r)
        src = rand_template(r, state)
        sj = json.dumps(state, ensure_ascii=r.random() < 0.5)
        pstate = json.loads(sj)
        p = python_render(src, pstate)
        t = tpl_render(src, sj)
        c = classify(t, p, src)
        tally[c] = tally.get(c, 0) + 1
        if c != "same":
            if shown.get(c, 0) < show:
                shown[c] = shown.get(c, 0) + 1
                print("%s #%d %r state=%s\n   tpl: %s %r %s\n   py:  %s %r %s" % (
                    c, i, src, sj, t[0], t[1][:200], t[2], p[0], p[1][:200], p[2]))
            if dump:
                with open(os.path.join(dump, "%s-%d.fmt" % (c, i)), "w", encoding="utf-8", newline="") as f:
                    f.write(src)
                with open(os.path.join(dump, "%s-%d.json" % (c, i)), "w", encoding="utf-8") as f:
                    f.write(sj)
    print("seed %d iters %d:" % (seed, iters), dict(sorted(tally.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
