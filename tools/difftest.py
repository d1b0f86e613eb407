#!/usr/bin/env python3
"""Differential testing against Jinja2: renders random small templates with tplc and with the
reference oracle (../shared/conformance/oracle, real Jinja2) and reports every difference.
A development tool (needs python3 with jinja2); failures it finds become conformance-style
regression cases in tests/.

usage: difftest.py TPLC [N] [SEED]"""
import json, os, random, subprocess, sys, tempfile

ORACLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "conformance", "oracle")
STATE = {"s": "Héllo wörld", "e": "", "n": 7, "m": -3, "f": 2.5, "z": 0, "t": True, "no": None,
         "xs": [3, 1, 2], "ws": ["b", "A", "c"], "d": {"b": 2, "a": 1}, "u": [{"k": "x", "v": 1}, {"k": "y", "v": 2}],
         "big": 10 ** 15, "tiny": 1e-7, "nested": [[1, 2], [3]]}
ATOMS = ["s", "e", "n", "m", "f", "z", "t", "no", "xs", "ws", "d", "u", "big", "tiny", "nested", "missing",
         "1", "0", "-1", "2.0", "1e3", "'a'", "'ab c'", "''", "none", "true", "false", "[1, 'x']", "(1,)", "{'k': 1}",
         "d.a", "u[0].k", "xs[-1]", "s[1:3]", "xs[::-1]", "ws|sort", "loop_free"]
FILTERS = ["upper", "lower", "title", "capitalize", "trim", "length", "first", "last", "list", "string", "int",
           "float", "abs", "sort", "reverse", "unique", "join(',')", "default('D')", "default('D', true)",
           "round", "round(1)", "tojson", "e", "safe", "wordcount", "center(9)", "indent(2)", "truncate(5)",
           "replace('l', 'L')", "batch(2)|list", "slice(2)|list", "sum", "min", "max", "items|list", "dictsort",
           "map('string')|list", "select|list", "reject|list", "selectattr('v')|list", "map(attribute='k')|list",
           "groupby('k')|list", "format(1)", "filesizeformat", "urlencode", "striptags", "pprint", "count",
           "wordwrap(5)", "xmlattr"]
TESTS = ["defined", "undefined", "none", "number", "string", "mapping", "iterable", "sequence", "odd", "even",
         "divisibleby(3)", "lower", "upper", "true", "false", "integer", "float", "eq 7", "gt 1", "in [1, 2, 3]"]
OPS = ["+", "-", "*", "/", "//", "%", "**", "~", "==", "!=", "<", ">", "<=", ">=", "in", "not in", "and", "or"]


def expr(r, depth=0):
    k = r.random()
    if depth > 2 or k < 0.35:
        return r.choice(ATOMS)
    if k < 0.55:
        return "%s|%s" % (expr(r, depth + 1), r.choice(FILTERS))
    if k < 0.65:
        return "%s is %s%s" % (expr(r, depth + 1), r.choice(["", "not "]), r.choice(TESTS))
    if k < 0.85:
        return "(%s %s %s)" % (expr(r, depth + 1), r.choice(OPS), expr(r, depth + 1))
    if k < 0.92:
        return "(%s if %s else %s)" % (expr(r, depth + 1), expr(r, depth + 1), expr(r, depth + 1))
    return "not %s" % expr(r, depth + 1)


def stmt(r, depth=0):
    k = r.random()
    if depth > 1 or k < 0.45:
        return "{{ %s }}" % expr(r)
    if k < 0.6:
        return "{%% if %s %%}A%s{%% else %%}B{%% endif %%}" % (expr(r), stmt(r, depth + 1))
    if k < 0.75:
        return "{%% for x in %s %%}[{{ loop.index }}{{ x }}%s]{%% else %%}E{%% endfor %%}" % (r.choice(["xs", "ws", "d", "u", "s", "nested", "range(3)"]), stmt(r, depth + 1))
    if k < 0.85:
        return "{%% set v = %s %%}{{ v }}" % expr(r)
    return "{%- if true -%} x {%+ if false %}y{% endif %}\n  {# c #}\n"


def main(argv):
    tplc = argv[0]
    n = int(argv[1]) if len(argv) > 1 else 200
    r = random.Random(int(argv[2]) if len(argv) > 2 else 1)
    tmp = tempfile.mkdtemp()
    state = os.path.join(tmp, "s.json")
    with open(state, "w") as f:
        json.dump(STATE, f)
    diffs = 0
    for i in range(n):
        src = "".join(stmt(r) for _ in range(r.randint(1, 3)))
        path = os.path.join(tmp, "t.jinja")
        with open(path, "w") as f:
            f.write(src)
        flags = r.choice([[], ["--trim-blocks", "--lstrip-blocks"], ["--strict"]])
        a = subprocess.run([tplc, "render", path, "--state", state] + flags, capture_output=True)
        b = subprocess.run([sys.executable, ORACLE, "render", path, "--state", state] + flags, capture_output=True)
        ok = (a.returncode == 0) == (b.returncode == 0) and (a.returncode != 0 or a.stdout == b.stdout)
        if not ok:
            diffs += 1
            print("DIFF %s\n  src: %r\n  tpl: %d %r %s\n  ref: %d %r %s" % (" ".join(flags), src, a.returncode, a.stdout[:200],
                  a.stderr.decode()[:200].strip().split("\n")[0], b.returncode, b.stdout[:200], b.stderr.decode()[:200].strip()))
    print("%d cases, %d differences" % (n, diffs))
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
