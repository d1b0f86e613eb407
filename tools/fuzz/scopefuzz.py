"""Differential fuzzer: random Jinja templates built from statements (set/if/for/with/macro/call/
filter/namespace/blocks/include/import/loop controls) rendered by Jinja2 and by tpl.jinja2 in the same
process. Usage: python3 scopefuzz.py N SEED [OUTDIR] (tpl.jinja2 from build/python, or TPL_PYBUILD=DIR)
Prints counts and writes each difference (template, state, both results) to OUTDIR."""
import json
import os
import random
import sys

sys.path[:0] = [os.environ.get("TPL_PYBUILD", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "python")),
                os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python")]
import jinja2  # noqa: E402
import tpl.jinja2 as tj  # noqa: E402

N = int(sys.argv[1])
SEED = int(sys.argv[2])
OUT = sys.argv[3] if len(sys.argv) > 3 else "/tmp/scopefuzz"
os.makedirs(OUT, exist_ok=True)
R = random.Random(SEED)

VARS = ["x", "y", "z", "a", "items", "ns"]
STATE = {"a": 3, "incname": "inc", "libname": "lib", "items": [1, 2, 3], "s": "hi", "d": {"k": 1, "j": 2}, "tree": [{"n": 1, "c": [{"n": 2, "c": []}]}, {"n": 3, "c": []}]}


class Gen:
    def __init__(self):
        self.depth = 0
        self.macros = []
        self.loopdepth = 0
        self.inmacro = False
        self.blocks = 0
        self.inblock = False  # inside a block of a template that extends 'base' (super, self.bN())
        self.recursive = 0  # inside `for t in tree recursive` (t.n, loop(t.c)) with no plain loop between

    def var(self):
        return R.choice(["x", "y", "z", "a", "items", "s", "d", "loop_v", "i", "j", "k"])

    def atom(self):
        c = R.random()
        if c < 0.35:
            return self.var()
        if c < 0.5:
            return str(R.randint(-2, 5))
        if c < 0.6:
            return repr(R.choice(["", "a", "b c", "X"]))
        if c < 0.65:
            return R.choice(["ns.v", "ns.v", "ns.w|default('W')"])
        if c < 0.72 and self.loopdepth:
            return R.choice(["loop.index", "loop.index0", "loop.first", "loop.last", "loop.length",
                             "loop.revindex", "loop.depth", "loop.previtem", "loop.nextitem",
                             "loop.cycle('p','q')", "loop.changed(i)", "loop.cycle(i, 'x')", "loop.changed(i, j)",
                             "loop.previtem|default('P')", "(loop.nextitem is defined)", "loop.depth0",
                             "loop.changed(loop.index // 2)", "loop.cycle(*items)"])
        if c < 0.73 and self.recursive:
            return R.choice(["t.n", "t.c|length", "loop(t.c)", "loop(t.c)|trim", "loop.depth"])
        if c < 0.74 and self.inblock:
            return R.choice(["super()", "(super is defined)", "self.b1()", "self.b3()", "(super is undefined)"])
        if c < 0.76 and self.inmacro:
            return R.choice(["varargs", "kwargs", "caller()" if R.random() < 0.3 else "b"])
        if c < 0.82 and self.macros:
            m = R.choice(self.macros)
            return f"{m}({self.atom()})"
        if c < 0.86:
            return f"[{self.atom()}, {self.atom()}]"
        if c < 0.9:
            return f"({self.atom()} if {self.cond()} else {self.atom()})"
        return R.choice(["none", "true", "false", "range(3)"])

    def expr(self):
        e = self.atom()
        r = R.random()
        if r < 0.15:
            e = f"{e} ~ {self.atom()}"
        elif r < 0.25:
            e = f"{e} + {self.atom()}"
        elif r < 0.4:
            e = f"{e}|" + R.choice(["length", "string", "default('D')", "join(',')", "list|length", "upper",
                                    "d", "int", "first", "sum", "tojson"])
        return e

    def cond(self):
        c = R.random()
        if c < 0.3:
            return f"{self.var()} is defined"
        if c < 0.5:
            return f"{self.atom()} == {self.atom()}"
        if c < 0.6:
            return f"not {self.atom()}"
        if c < 0.7 and self.loopdepth:
            return R.choice(["loop.first", "loop.last", "i > 1"])
        return self.atom()

    def name(self):
        return R.choice(["x", "y", "z", "i", "j", "k", "a", "items"])

    def body(self, n=None):
        if self.depth > 4:
            return self.leaf()
        self.depth += 1
        out = "".join(self.stmt() for _ in range(n if n is not None else R.randint(1, 4)))
        self.depth -= 1
        return out

    def leaf(self):
        return R.choice(["[{{ " + self.expr() + " }}]", "t", "{% set " + self.name() + " = " + self.expr() + " %}"])

    def stmt(self):
        c = R.random()
        if c < 0.22:
            return "[{{ " + self.expr() + " }}]"
        if c < 0.36:
            return "{% set " + self.name() + " = " + self.expr() + " %}"
        if c < 0.4:
            return "{% set " + self.name() + " %}" + self.body(1) + "{% endset %}"
        if c < 0.44:
            return R.choice(["{% set ns.v = " + self.expr() + " %}", "{% set ns.v = ns.v ~ 'c' %}",
                             "{% set ns.w = " + self.expr() + " %}", "{% set ns.v %}" + self.body(1) + "{% endset %}"])
        if c < 0.46:
            return R.choice(["{% set " + self.name() + " | " + R.choice(["upper", "trim", "length", "e"]) + " %}" +
                             self.body(1) + "{% endset %}",
                             "{% set " + self.name() + ", " + self.name() + " = " + self.atom() + ", " + self.atom() + " %}",
                             "{% set mn = namespace(c=0) %}{% for q in items %}{% set mn.c = mn.c + q %}{% endfor %}"
                             "[{{ mn.c }}]"])
        if c < 0.54:
            s = "{% if " + self.cond() + " %}" + self.body()
            if R.random() < 0.3:
                s += "{% elif " + self.cond() + " %}" + self.body()
            if R.random() < 0.4:
                s += "{% else %}" + self.body()
            return s + "{% endif %}"
        if c < 0.68:
            v = R.choice(["i", "j", "k", "x", "(i, j)"])
            seq = R.choice(["items", "[1, 2]", "range(3)", "[]", "d.items()", "[[1, 2], [3, 4]]", "s", "[1, 1, 2]",
                            "items|reverse", "d"])
            filt = f" if {self.cond()}" if R.random() < 0.15 else ""
            self.loopdepth += 1
            savedr, self.recursive = self.recursive, 0
            b = self.body()
            if R.random() < 0.15:
                b += R.choice(["{% break %}", "{% continue %}", "{% if loop.index > 1 %}{% break %}{% endif %}"])
            self.loopdepth -= 1
            self.recursive = savedr
            s = "{% for " + v + " in " + seq + filt + " %}" + b
            if R.random() < 0.2:
                s += "{% else %}" + self.body()
            return s + "{% endfor %}"
        if c < 0.72:
            if R.random() < 0.4:
                return "{% for t in tree recursive %}<{{ t.n }}{{ loop(t.c) }}>{% endfor %}"
            # a recursive loop with a random body: loop(t.c) printed, set, inside if/filter blocks, loop vars
            saved = self.loopdepth
            self.recursive += 1
            self.loopdepth += 1
            pre = self.body(R.randint(0, 2))
            rec = R.choice(["{{ loop(t.c) }}", "{% set r = loop(t.c) %}[{{ r }}]", "{% if t.c %}{{ loop(t.c) }}{% endif %}",
                            "{% filter upper %}{{ loop(t.c) }}{% endfilter %}", "{% set r %}{{ loop(t.c) }}{% endset %}{{ r|length }}",
                            "{{ loop(t.c)|length }}"])
            post = self.body(R.randint(0, 2))
            self.recursive -= 1
            self.loopdepth = saved
            seq = R.choice(["tree", "tree|reverse", "(tree if true else [])"])
            return "{% for t in " + seq + " recursive %}<{{ t.n }}|" + pre + rec + post + ">{% endfor %}"
        if c < 0.77:
            if R.random() < 0.3:
                return ("{% with " + self.name() + " = " + self.expr() + ", " + self.name() + " = " + self.expr() +
                        " %}" + self.body() + "{% endwith %}")
            return "{% with " + self.name() + " = " + self.expr() + " %}" + self.body() + "{% endwith %}"
        if c < 0.83 and not self.inmacro:
            m = f"m{len(self.macros)}"
            args = R.choice(["a", "a, b=1", "b", ""])
            self.inmacro = True
            saved, savedr = self.loopdepth, self.recursive
            self.loopdepth = self.recursive = 0
            b = self.body()
            if R.random() < 0.2:
                b += R.choice(["{{ caller(" + self.atom() + ") }}", "{% set ns.v = ns.v ~ 'm' %}",
                               "{% set mn = namespace(c=1) %}{% set mn.c = mn.c + 1 %}{{ mn.c }}"])
            self.loopdepth, self.recursive = saved, savedr
            self.inmacro = False
            self.macros.append(m)
            return "{% macro " + m + "(" + args + ") %}" + b + "{% endmacro %}"
        if c < 0.86 and self.macros:
            m = R.choice(self.macros)
            if R.random() < 0.3:
                return "{% call(u) " + m + "(" + self.atom() + ") %}[{{ u }}]" + self.body(1) + "{% endcall %}"
            return "{% call " + m + "(" + self.atom() + ") %}" + self.body(1) + "{% endcall %}"
        if c < 0.89:
            f = R.choice(["upper", "upper", "trim", "replace('t', 'T')", "e", "indent(2)", "lower|title", "center(9)",
                          "striptags", "wordcount", "length", "list|join('.')", "reverse", "default('D')"])
            b = self.body()
            if R.random() < 0.3:
                b = R.choice(["{% set " + self.name() + " = " + self.expr() + " %}", "{% include 'inc' %}",
                              "{% set ns.v = " + self.expr() + " %}"]) + b
            return "{% filter " + f + " %}" + b + "{% endfilter %}"
        if c < 0.92 and self.blocks < 3:
            self.blocks += 1
            scoped = " scoped" if R.random() < 0.5 else ""
            return "{% block b" + str(self.blocks) + scoped + " %}" + self.body() + "{% endblock %}"
        if c < 0.95:
            return R.choice(["{% include 'inc' %}", "{% include incname %}", "{% include ['nope', incname] %}",
                             "{% include 'nope' ignore missing %}"]) if R.random() < 0.93 else \
                "{% include 'inc' without context %}"
        if c < 0.97:
            return "{% from libname import lm %}[{{ lm(" + self.atom() + ") }}]" if R.random() < 0.5 else \
                "{% import 'lib' as L %}[{{ L.lm(" + self.atom() + ") }}]"
        return "{# c #}"


# a parent for templates that extend (issue 14 composition sweep): a required block, a scoped block in a
# loop, a block calling super-less self.b1()
BASE = ("<{% block b1 %}B1{{ x|default('-') }}{% endblock %}|{% block b2 required %}{% endblock %}|"
        "{% for i in [1, 2] %}{% block b3 scoped %}B3{{ i }}{% endblock %}{% endfor %}|{{ self.b1() }}>")
LIB = "{% macro lm(q) %}<{{ q }}|{{ x is defined }}|{{ a }}>{% endmacro %}{% set top = 5 %}"
INC = "(inc {{ x|default('-') }} {{ i|default('-') }} {% set x = 'I' %}{{ x }})"


def render(mod, src, opts):
    env = mod.Environment(loader=mod.DictLoader({"main": src, "inc": INC, "lib": LIB, "base": BASE}),
                          extensions=["jinja2.ext.loopcontrols"], **opts)
    try:
        t = env.get_template("main")
    except Exception as e:  # noqa
        return ("compile-error", type(e).__name__, str(e)[:200])
    try:
        st = dict(STATE)
        st["ns"] = env.globals.get("namespace", None) and None
        return ("ok", t.render(**{k: v for k, v in STATE.items()}))
    except Exception as e:  # noqa
        return ("error", type(e).__name__, str(e)[:200])


counts = {"same": 0, "both-error": 0, "different": 0, "tpl-refuses": 0, "tpl-errors-only": 0, "jinja-errors-only": 0}
for n in range(N):
    g = Gen()
    if R.random() < 0.3:
        # extends 'base' (static or by a name): blocks b1, b2, b3 with bodies reading super and self
        g.inblock, g.blocks = True, 3
        src = "{% extends " + R.choice(["'base'", "'ba' ~ 'se'"]) + " %}{% set ns = namespace(v=0) %}"
        for b in R.sample(["b1", "b2", "b3"], R.randint(1, 3)):
            src += "{% block " + b + " %}" + g.body(R.randint(1, 3)) + "{% endblock %}"
    else:
        src = "{% set ns = namespace(v=0) %}" + g.body(R.randint(2, 6))
    opts = {}
    if R.random() < 0.3:
        opts["trim_blocks"] = True
    a = render(jinja2, src, opts)
    b = render(tj, src, opts)
    if a[0] == "ok" and b[0] == "ok":
        kind = "same" if a[1] == b[1] else "different"
    elif a[0] != "ok" and b[0] != "ok":
        kind = "both-error"
    elif a[0] == "ok" and b[0] == "compile-error":
        kind = "tpl-refuses"
    elif a[0] == "ok":
        kind = "tpl-errors-only"
    else:
        kind = "jinja-errors-only"
    counts[kind] += 1
    if kind not in ("same", "both-error"):
        with open(os.path.join(OUT, f"{kind}-{SEED}-{n}.txt"), "w") as f:
            f.write(json.dumps({"src": src, "opts": opts, "jinja2": a, "tpl": b}, indent=1))
print(counts)
