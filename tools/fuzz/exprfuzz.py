"""Differential fuzzer for Jinja EXPRESSIONS: random expressions (literals of every type, state values,
undefined names and attributes, every operator, chained comparisons, conditional expressions,
slices and subscripts, every builtin filter and test with sensible and absurd arguments, str/list/
dict methods, the globals range/dict/cycler/joiner/namespace) printed with {{ ... }} and tested
with {% if %}, with autoescape off and on, rendered by Jinja2 and by tpl.jinja2 in one process.

Usage: python3 exprfuzz.py [N] [SEED] [OUTDIR]   or   --n N --seed SEED --out OUTDIR [--seeds K]
(tpl.jinja2 from build/python, or TPL_PYBUILD=DIR). Each case runs in a forked child (a hang or a
crash of either engine is a finding, not the end of the run). Prints counts; writes each
difference, reduced to a smallest expression that still shows it, to OUTDIR as JSON.
Kinds: different (both rendered, other text: SILENT), jinja-errors-only (tpl rendered text where
Jinja2 raised: SILENT), tpl-refuses (Jinja2 rendered, tpl raised at compile time), tpl-errors-only
(Jinja2 rendered, tpl raised at render time), error-class (both raised, other exception classes),
crash/timeout (the child died or took longer than --timeout s).
`python3 exprfuzz.py --replay FILE.json` re-renders one finding."""
import argparse
import warnings
import json
import os
import re
import resource
import select
import signal
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.environ.get("TPL_PYBUILD", os.path.join(HERE, "..", "..", "build", "python")),
                os.path.join(HERE, "..", "..", "python")]
import random  # noqa: E402
import jinja2  # noqa: E402
import markupsafe  # noqa: E402
import tpl.jinja2 as tj  # noqa: E402


def state():
    return {"n": 3, "z": 0, "neg": -7, "big": 2 ** 70, "f": 2.5, "nz": -0.0, "fl": 1e16,
            "s": "Hello World", "e": "", "h": "<b>a&b</b> \"q\" 'x'", "u": "héllo wörld ß ǅ 日本",
            "num": "42", "l": [3, 1, 2], "ls": ["b", "a", "C"], "lm": [1, "a", None, 2.5],
            "ld": [{"a": 1, "b": "x"}, {"a": 2, "b": "y"}, {"a": 1, "b": "z"}],
            "d": {"a": 1, "b": [2, 3], "c": {"x": "y"}}, "de": {}, "le": [], "t": (1, 2),
            "none": None, "yes": True, "no": False, "m": markupsafe.Markup("<i>m</i> &amp;"),
            "nested": [[1, 2], [3, [4, 5]]],
            "inf": float("inf"), "ninf": float("-inf"), "nan": float("nan"), "sinf": "-inf"}


INTS = ["0", "1", "-1", "2", "3", "7", "10", "-3", "2147483648", "9223372036854775807", "9223372036854775808",
        "-9223372036854775809", "4611686018427387904", "(2 ** 63)", "(-2 ** 64)", "(10 ** 19)",
        "18446744073709551616", "-9223372036854775808", "100000000000000000000", "123456789012345678901234567890",
        "1_000", "0b101", "0o17", "0x1F"]
FLOATS = ["0.0", "-0.0", "1.5", "-2.5", "1e16", "1e-7", "0.1", "3.0", "1e308", "123.456", "2.5e3", "1E2"]
# (not `'inf'|float` or `1e308 * 10`: Jinja2 folds those to Const(inf) and its generated code then
# names an undefined `inf`, a NameError tpl models separately: tests/cases/jinja-fold11 inf-*)
SPECIAL_FLOATS = ["inf", "nan", "ninf", "sinf|float", "(-inf)", "(nan + 1)"]
STRS = ["''", "'a'", "'abc'", "'Hello World'", "'a,b,c'", "'<b>&\"</b>'", "\"it's\"", "'héllo'", "'ß'", "'İ'",
        "'  x  '", "'12'", "'-3'", "'1.5'", "'x\\ny'", "'\\t'", "'%s'", "'%d'", "'{}'", "'{0}!'", "'a b  c'",
        "'ǅ'", "'日本'", "'😀x'", "'http://x.com/a?b=1&c'", "'foo bar baz qux'", "'<p>x</p>'", "'AbC'",
        "'0x1A'", "' 3 '", "'1e3'", "'True'", "'%(a)s'", "'{a}'"]
STATE_NAMES = list(state().keys())
UNDEF = ["undef", "d.missing", "l[10]", "s.nope", "none.x", "undef.x", "d['zz']", "ld[0].q", "m.x"]

FILTER_BASE = {}
for _t, _fs in {"str": "capitalize center escape e forceescape format indent lower replace safe string striptags title "
                       "trim truncate upper urlencode urlize wordcount wordwrap float int",
                "num": "abs filesizeformat float int round string",
                "seq": "batch count first join last length list max min reject reverse select slice sort sum unique",
                "objs": "groupby map rejectattr selectattr sum join unique sort min max",
                "map": "dictsort items xmlattr tojson pprint"}.items():
    for _f in _fs.split():
        FILTER_BASE.setdefault(_f, _t)
FILTERS = {
    "abs": [[]], "attr": [["'a'"], ["'real'"], ["'upper'"], ["1"], ["none"]],
    "batch": [["2"], ["2", "'-'"], ["1"], ["0"], ["3", "none"]],
    "capitalize": [[]], "center": [[], ["9"], ["2"], ["-1"]], "count": [[]],
    "d": [[], ["'D'"], ["'D'", "true"]], "default": [["1"], ["'D'", "boolean=true"]],
    "dictsort": [[], ["true"], ["false", "'value'"], ["by='value'", "reverse=true"], ["case_sensitive=true"]],
    "e": [[]], "escape": [[]], "filesizeformat": [[], ["true"], ["binary=true"]], "first": [[]],
    "float": [[], ["1.5"], ["default='x'"]], "forceescape": [[]],
    "format": [["1"], ["'x'", "2"], ["a=1"]], "groupby": [["'a'"], ["'b'"], ["'a'", "default=0"], ["attribute='a'"], ["0"]],
    "indent": [[], ["2"], ["2", "true"], ["'> '", "true", "true"], ["width=1", "blank=true"]],
    "int": [[], ["5"], ["0", "16"], ["default=9", "base=2"], ["0", "0"]], "items": [[]],
    "join": [[], ["','"], ["', '", "'a'"], ["attribute='a'"], ["'|'"]], "last": [[]], "length": [[]], "list": [[]],
    "lower": [[]], "map": [["'upper'"], ["attribute='a'"], ["'string'"], ["attribute='a'", "default=0"], ["'int'"], ["'length'"]],
    "max": [[], ["attribute='a'"], ["case_sensitive=true"]], "min": [[], ["attribute='a'"], ["true"]],
    "pprint": [[]], "reject": [[], ["'odd'"], ["'none'"], ["'eq'", "1"]],
    "rejectattr": [["'a'"], ["'a'", "'eq'", "1"], ["'b'", "'defined'"]],
    "replace": [["'a'", "'b'"], ["'l'", "'L'", "1"], ["''", "'-'"], ["'o'", "''", "-1"]],
    "reverse": [[]], "round": [[], ["1"], ["0", "'floor'"], ["2", "'ceil'"], ["1", "'x'"], ["-1"], ["1.5", "'ceil'"],
                               ["precision=-1.0", "method='floor'"], ["none"], ["method='common'"]],
    "safe": [[]], "select": [[], ["'odd'"], ["'string'"], ["'gt'", "1"], ["'in'", "[1, 2]"], ["'defined'"]],
    "selectattr": [["'a'"], ["'a'", "'eq'", "1"], ["'b'", "'in'", "'xy'"]],
    "slice": [["2"], ["3", "0"], ["1"]], "sort": [[], ["true"], ["attribute='a'"], ["case_sensitive=true"], ["false", "false", "'b'"]],
    "string": [[]], "striptags": [[]], "sum": [[], ["attribute='a'"], ["start=10"], ["'a'", "1"]],
    "title": [[]], "tojson": [[], ["2"], ["indent=1"]], "trim": [[], ["'x'"], ["chars='H'"]],
    "truncate": [[], ["5"], ["5", "true"], ["3", "false", "'..'", "0"], ["leeway=0", "length=4"]],
    "unique": [[], ["true"], ["attribute='a'"]], "upper": [[]], "urlencode": [[]],
    "urlize": [[], ["10"], ["5", "true"], ["target='_blank'"], ["rel='x'"], ["extra_schemes=['ftp:']"],
               ["extra_schemes=['x-y:', 'a']"], ["trim_url_limit=3", "nofollow=true"], ["extra_schemes=()"]],
    "wordcount": [[]], "wordwrap": [[], ["5"], ["3", "false"], ["10", "true", "'|'"], ["4", "break_on_hyphens=false"],
                                   ["3", "true", "'<br>'|safe"], ["width=2", "wrapstring=m"], ["0"], ["2.5"]],
    "xmlattr": [[], ["false"]],
}
TESTS = {
    "boolean": [], "callable": [], "defined": [], "divisibleby": ["3"], "eq": ["1"], "equalto": ["'a'"],
    "escaped": [], "even": [], "false": [], "filter": [], "float": [], "ge": ["2"], "gt": ["1"],
    "greaterthan": ["0"], "in": ["[1, 2, 3]"], "integer": [], "iterable": [], "le": ["2"], "lessthan": ["3"],
    "lower": [], "lt": ["1"], "mapping": [], "ne": ["0"], "none": [], "number": [], "odd": [], "sameas": ["none"],
    "sequence": [], "string": [], "test": [], "true": [], "undefined": [], "upper": [], "==": ["1"],
    "!=": ["'a'"], "<": ["2"], ">": ["0"], "<=": ["1"], ">=": ["1"],
}
STR_METHODS = [("upper", []), ("lower", []), ("split", ["','"]), ("split", []), ("split", ["' '", "1"]),
               ("rsplit", ["','", "1"]), ("format", ["1"]), ("format", ["a=2"]), ("startswith", ["'H'"]),
               ("startswith", ["('a', 'H')"]), ("endswith", ["'d'"]), ("join", ["['x', 'y']"]), ("replace", ["'l'", "'L'"]),
               ("replace", ["'o'", "'0'", "1"]), ("strip", []), ("strip", ["'H'"]), ("lstrip", []), ("rstrip", ["'d'"]),
               ("title", []), ("capitalize", []), ("count", ["'l'"]), ("count", ["''"]), ("index", ["'o'"]),
               ("find", ["'o'"]), ("find", ["'zz'"]), ("rfind", ["'o'"]), ("zfill", ["8"]), ("center", ["9", "'*'"]),
               ("ljust", ["6"]), ("rjust", ["6", "'.'"]), ("isdigit", []), ("isalpha", []), ("isupper", []),
               ("islower", []), ("isspace", []), ("swapcase", []), ("casefold", []), ("partition", ["' '"]),
               ("splitlines", []), ("removeprefix", ["'He'"]), ("removesuffix", ["'ld'"]),
               ("expandtabs", ["2"]), ("isalnum", []), ("istitle", []), ("isdecimal", []), ("isnumeric", []),
               ("split", ["none", "-1"]), ("rsplit", ["'l'", "0"]), ("center", ["-3"]), ("zfill", ["-1"]),
               ("ljust", ["4", "'ab'"]), ("find", ["'o'", "-3", "100"]), ("count", ["'l'", "none", "-2"]),
               ("startswith", ["''", "20"]), ("replace", ["''", "'.'", "2"]), ("strip", ["none"]),
               ("format", ["1.5"]), ("format", ["x=[1]"]), ("rpartition", ["'o'"])]
LIST_METHODS = [("count", ["1"]), ("index", ["1"]), ("index", ["'a'"]), ("copy", [])]
DICT_METHODS = [("items", []), ("keys", []), ("values", []), ("get", ["'a'"]), ("get", ["'zz'", "0"]),
                ("get", ["'zz'"]), ("copy", [])]


class N:
    """An expression node: parts are strings and child nodes; str() is the source."""
    __slots__ = ("parts", "prec")

    def __init__(self, parts, prec=9):
        self.parts = parts
        self.prec = prec

    def __str__(self):
        return "".join(str(p) for p in self.parts)

    def kids(self):
        return [p for p in self.parts if isinstance(p, N)]


def lit(s):
    return N([s])


def paren(x):
    return N(["(", x, ")"])


class Gen:
    def __init__(self, r):
        self.R = r
        self.depth = 0

    def leaf(self):
        R = self.R
        c = R.random()
        if c < 0.3:
            return lit(R.choice(STATE_NAMES))
        if c < 0.42:
            return lit(R.choice(INTS))
        if c < 0.52:
            return lit(R.choice(FLOATS))
        if c < 0.55:
            return paren(lit(R.choice(SPECIAL_FLOATS)))
        if c < 0.72:
            return lit(R.choice(STRS))
        if c < 0.8:
            return lit(R.choice(UNDEF))
        return lit(R.choice(["none", "true", "false", "None", "True", "False", "[]", "{}", "()", "[1, 2, 3]",
                             "('a', 1)", "{'a': 1, 'b': 2}", "['b', 'a']", "[{'a': 2}, {'a': 1}]", "range(4)",
                             "[1, [2, 3]]", "{'k': 'v'}|items|list", "'<x>'|safe", "['a', 'b']|join|safe",
                             "([1] < [2])", "((1, 'a') >= (1, 'b'))", "'{:.2f}'.format(f)", "'{:>6}'.format(n)",
                             "'%.1f%%'|format(f)", "(1.5).is_integer()", "'%s-%s'|format(1, 2)"]))

    def expr(self):
        R = self.R
        if self.depth > 3 or R.random() < 0.25:
            return self.leaf()
        self.depth += 1
        try:
            return self.compound()
        finally:
            self.depth -= 1

    def compound(self):
        R = self.R
        c = R.random()
        e = self.expr
        if c < 0.12:
            op = R.choice(["+", "-", "*", "/", "//", "%", "**", "~", "+", "~", "*"])
            if R.random() < 0.15:  # a chain of + (error order: left to right)
                return paren(N([e(), " + ", e(), " + ", e(), " + ", e()]))
            if R.random() < 0.1:  # float formatting through %
                fmt = R.choice(["'%.3f'", "'%e'", "'%g'", "'%5.1f|'", "'%+d'", "'%x'", "'%r'", "'%-6s|'", "'%05.2f'"])
                return paren(N([lit(fmt), " % ", e()]))
            return paren(N([e(), " " + op + " ", e()]))
        if c < 0.18:
            return paren(N([e(), R.choice([" and ", " or "]), e()]))
        if c < 0.21:
            return paren(N([R.choice(["not ", "-", "+", "not not "]), e()]))
        if c < 0.29:
            ops = ["==", "!=", "<", "<=", ">", ">=", "in", "not in"]
            parts = [e()]
            for _ in range(R.choice([1, 1, 1, 2])):
                parts += [" " + R.choice(ops) + " ", e()]
            return paren(N(parts))
        if c < 0.37:
            t = R.choice(list(TESTS))
            arg = TESTS[t]
            neg = R.choice(["", "not "])
            if arg and R.random() < 0.3:
                args = [e()]
            else:
                args = [lit(a) for a in arg]
            if args and R.random() < 0.5 and t not in ("==", "!=", "<", ">", "<=", ">="):
                return paren(N([e(), " is " + neg + t + " ", args[0]]))
            tail = ["("] + self.commas(args) + [")"] if args else []
            return paren(N([e(), " is " + neg + t] + tail))
        if c < 0.42:
            if R.random() < 0.7:
                return paren(N([e(), " if ", e(), " else ", e()]))
            return paren(N([e(), " if ", e()]))
        if c < 0.5:
            parts = [e(), "["]
            kind = R.random()
            bound = lambda: R.choice(["", "", "1", "-1", "0", "2", "-2", "none", "10", "-10", "n", "1.5"])
            if kind < 0.4:
                parts += [R.choice(["0", "1", "-1", "2", "'a'", "'b'", "10", "-4", "none", "true", "1.0"])]
            elif kind < 0.5:
                parts += [e()]
            else:
                parts += [bound(), ":", bound()]
                if R.random() < 0.5:
                    parts += [":", R.choice(["", "1", "-1", "2", "-2", "0", "none", "3", "-3", "big", "neg"])]
            return N(parts + ["]"])
        if c < 0.53:
            return N([e(), "." + R.choice(["a", "b", "0", "1", "real", "imag", "x", "c", "items", "keys", "upper"])])
        if c < 0.75:
            f = R.choice(list(FILTERS))
            args = R.choice(FILTERS[f])
            r = R.random()
            if r < 0.2 and args:
                # an absurd argument in one position
                i = R.randrange(len(args))
                args = list(args)
                if "=" in args[i]:
                    k = args[i].split("=", 1)[0]
                    args[i] = k + "=" + str(self.leaf())
                else:
                    args[i] = str(self.leaf())
            elif r < 0.3:
                args = [str(self.leaf()) for _ in range(R.randint(1, 3))]
            base = e() if R.random() < 0.5 else self.typed(FILTER_BASE.get(f, "any"))
            if R.random() < 0.5 or not args:
                call = ([] if not args else ["("] + self.commas([lit(a) for a in args]) + [")"])
                return N([base, "|" + f] + call)
            return N([base, "|" + f, "("] + self.commas([lit(a) for a in args]) + [")"])
        if c < 0.85:
            r = R.random()
            if r < 0.6:
                m, args = R.choice(STR_METHODS)
                base = R.choice([e(), lit(R.choice(STRS)), lit(R.choice(["s", "u", "h", "e", "num", "m"]))])
            elif r < 0.75:
                m, args = R.choice(LIST_METHODS)
                base = R.choice([e(), lit(R.choice(["l", "ls", "lm", "t", "[1, 1, 2]", "le"]))])
            else:
                m, args = R.choice(DICT_METHODS)
                base = R.choice([e(), lit(R.choice(["d", "de", "{'a': 1}", "ld[0]"]))])
            if args and R.random() < 0.2:
                args = [str(self.leaf())] + list(args[1:])
            return N([base, "." + m + "("] + self.commas([lit(a) for a in args]) + [")"])
        if c < 0.9:
            g = R.random()
            if g < 0.35:
                return N(["range("] + self.commas([R.choice([e(), lit(R.choice(["3", "0", "-2", "5", "1"]))])
                                                   for _ in range(R.randint(1, 3))]) + [")"])
            if g < 0.5:
                return N(["dict(a=", e(), R.choice([", b=2)", ")"])])
            if g < 0.65:
                return N(["cycler(", e(), ", 2)." + R.choice(["next()", "current", "next() ~ 'x'"])])
            if g < 0.75:
                return N(["joiner(", e(), ")()"])
            if g < 0.85:
                return N(["namespace(a=", e(), ").a"])
            return N(["namespace(", R.choice(["d", "{'a': 1}", "a=1"]), ")." + R.choice(["a", "b"])])
        if c < 0.95:
            k = R.random()
            if k < 0.4:
                return N(["["] + self.commas([e() for _ in range(R.randint(0, 3))]) + ["]"])
            if k < 0.7:
                items = [e() for _ in range(R.randint(1, 3))]
                return N(["("] + self.commas(items) + ([",)"] if len(items) == 1 else [")"]))
            kv = []
            for i in range(R.randint(0, 3)):
                if kv:
                    kv.append(", ")
                kv += [R.choice(["'a'", "'b'", "1", "none", "'k'"]), ": ", e()]
            return N(["{"] + kv + ["}"])
        return paren(N([e(), " ~ ", e()]))

    def typed(self, ty):
        """a value of the type a filter expects (so that more cases render than raise)"""
        R = self.R
        pool = {"str": ["s", "h", "u", "e", "num", "m", "'a b'", "'  Hello  world  '", "'x' ~ n", "s|upper",
                        "'http://a.b/c www.x.org a@b.co'", "'<p>Hi</p> &amp;'|safe", "ls|join(' ')", "'a\\nb\\n\\nc'"],
                "num": ["n", "neg", "f", "nz", "big", "z", "fl", "1.25", "-3", "2 ** 64", "inf", "nan", "1e-7", "(n / 7)",
                        "'12'|int", "true"],
                "seq": ["l", "ls", "lm", "le", "t", "nested", "range(5)", "s", "'abc'", "[1, 2, 2, 3]", "['B', 'a', 'b']",
                        "[1.5, 2, -1]", "l|reverse", "d.keys()", "[none, 1]", "['x', 'y']|map('upper')"],
                "objs": ["ld", "ld|reverse", "[{'a': 2}, {'a': none}, {'b': 1}]", "[d, d]", "[{'a': 'x'}, {'a': 'X'}]"],
                "map": ["d", "de", "{'b': 1, 'a': 2}", "{'a': 'x', 'b': [1], 'c': none}", "ld[0]", "{1: 'a', 'B': 2}"]}
        if ty == "any":
            ty = R.choice(list(pool))
        return lit(R.choice(pool[ty]))

    @staticmethod
    def commas(items):
        out = []
        for i, x in enumerate(items):
            if i:
                out.append(", ")
            out.append(x)
        return out


WRAPS = ["{{ %s }}", "{%% if %s %%}T{%% else %%}F{%% endif %%}", "[{{ %s }}]", "{{ (%s)|string }}", "{{ %s }}"]


def make_src(expr, wrap):
    return WRAPS[wrap] % expr


ADDR = re.compile(r" at 0x[0-9a-f]+")


warnings.simplefilter("ignore")


def render(mod, src, autoescape):
    env = mod.Environment(autoescape=autoescape)
    try:
        t = env.from_string(src)
    except Exception as e:  # noqa
        return ["compile-error", type(e).__name__, str(e)[:300]]
    try:
        return ["ok", ADDR.sub(" at 0xADDR", t.render(**state()))]
    except Exception as e:  # noqa
        return ["error", type(e).__name__, str(e)[:300]]


def compare(src, autoescape):
    a = render(jinja2, src, autoescape)
    b = render(tj, src, autoescape)
    if a[0] == "ok" and b[0] == "ok":
        kind = None if a[1] == b[1] else "different"
    elif a[0] == "ok" and (" at 0xADDR" in a[1] or "cannot print a" in b[2] or "complex numbers" in b[2]):
        kind = None  # by design: tpl refuses to print an object's address (a generator, a method)
        # and has no complex numbers
    elif a[0] == "ok":
        kind = "tpl-refuses" if b[0] == "compile-error" else "tpl-errors-only"
    elif b[0] == "ok":
        kind = "jinja-errors-only"
    else:
        kind = None if a[1] == b[1] else "error-class"
    return kind, a, b


class Worker:
    """A forked child (memory bounded) that renders cases one by one: a hang or a crash of either
    engine costs one case (reported as timeout/crash), not the run."""

    def __init__(self):
        self.pid = None

    def start(self):
        a_r, a_w = os.pipe()
        b_r, b_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(a_w)
            os.close(b_r)
            resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
            inp = os.fdopen(a_r, "r")
            out = os.fdopen(b_w, "w")
            for line in inp:
                src, ae = json.loads(line)
                try:
                    res = compare(src, ae)
                except BaseException as e:  # noqa
                    res = ["crash", "child: %s: %s" % (type(e).__name__, e)]
                out.write(json.dumps(res) + "\n")
                out.flush()
            os._exit(0)
        os.close(a_r)
        os.close(b_w)
        self.pid = pid
        self.w = os.fdopen(a_w, "w")
        self.r = os.fdopen(b_r, "r")

    def stop(self):
        if self.pid:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.waitpid(self.pid, 0)
            self.w.close()
            self.r.close()
            self.pid = None

    def run(self, src, ae, timeout):
        if not self.pid:
            self.start()
        try:
            self.w.write(json.dumps([src, ae]) + "\n")
            self.w.flush()
        except BrokenPipeError:
            self.stop()
            return ["crash", "child died"]
        ready, _, _ = select.select([self.r], [], [], timeout)
        if not ready:
            self.stop()
            return ["timeout", "more than %gs" % timeout]
        line = self.r.readline()
        if not line:
            self.stop()
            return ["crash", "child died"]
        return json.loads(line)


WORKER = Worker()


def check(src, autoescape, timeout):
    res = WORKER.run(src, autoescape, timeout)
    if res[0] in ("crash", "timeout"):
        return res[0], res, res
    return res


def signature(kind, a, b):
    """What a reduced case must keep: the kind, and for errors the classes."""
    return (kind, a[1] if a[0] != "ok" else "", b[1] if b[0] != "ok" else "")


def simpler(node):
    """Candidate replacements of a node, smallest first."""
    out = sorted(node.kids(), key=lambda k: len(str(k)))
    for s in ("1", "'a'", "none", "l", "s", "0"):
        if str(node) != s:
            out.append(lit(s))
    return out


def reduce_expr(root, wrap, autoescape, sig, timeout):
    """Greedy: replace any node by a child or a small literal while the signature holds."""
    def nodes(n, path=()):
        yield path, n
        for i, p in enumerate(n.parts):
            if isinstance(p, N):
                yield from nodes(p, path + (i,))

    def replaced(n, path, new):
        if not path:
            return new
        parts = list(n.parts)
        parts[path[0]] = replaced(parts[path[0]], path[1:], new)
        return N(parts, n.prec)

    tries = 0
    changed = True
    while changed and tries < 400:
        changed = False
        for path, n in list(nodes(root)):
            for cand in simpler(n):
                new = replaced(root, path, cand)
                if len(str(new)) >= len(str(root)):
                    continue
                tries += 1
                r = check(make_src(str(new), wrap), autoescape, timeout)
                if r[0] and signature(*r) == sig:
                    root = new
                    changed = True
                    break
            if changed:
                break
    # the simplest wrapper that still shows it
    for w in (0, 1):
        if w != wrap:
            r = check(make_src(str(root), w), autoescape, timeout)
            if r[0] and signature(*r) == sig:
                return root, w
    return root, wrap


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("pos", nargs="*")
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--seeds", type=int, default=1, help="run seeds SEED..SEED+K-1")
    ap.add_argument("--out", default="/tmp/exprfuzz")
    ap.add_argument("--timeout", type=float, default=10.0)
    ap.add_argument("--no-reduce", action="store_true")
    ap.add_argument("--replay")
    a = ap.parse_args()
    if a.replay:
        d = json.load(open(a.replay))
        for ae in (d["autoescape"],):
            print(d["src"], "autoescape=%s" % ae)
            k, ja, tb = compare(d["src"], ae)
            print(" kind:", k, "\n J:", ja, "\n T:", tb)
        return
    if a.pos:
        a.n = int(a.pos[0])
    if len(a.pos) > 1:
        a.seed = int(a.pos[1])
    if len(a.pos) > 2:
        a.out = a.pos[2]
    os.makedirs(a.out, exist_ok=True)
    counts = {}
    for seed in range(a.seed, a.seed + a.seeds):
        R = random.Random(seed)
        for i in range(a.n):
            root = Gen(R).expr()
            wrap = R.randrange(len(WRAPS))
            ae = R.random() < 0.3
            src = make_src(str(root), wrap)
            r = check(src, ae, a.timeout)
            kind = r[0] or ("same-ok" if r[1][0] == "ok" else "same-error")
            counts[kind] = counts.get(kind, 0) + 1
            if not r[0]:
                continue
            sig = signature(*r)
            small, w = (root, wrap) if a.no_reduce else reduce_expr(root, wrap, ae, sig, a.timeout)
            ssrc = make_src(str(small), w)
            rr = check(ssrc, ae, a.timeout)
            rec = {"kind": kind, "src": ssrc, "autoescape": ae, "jinja2": rr[1], "tpl": rr[2], "original": src}
            with open(os.path.join(a.out, "%s-%d-%d.json" % (kind, seed, i)), "w") as f:
                json.dump(rec, f, indent=1, ensure_ascii=False)
            print("%s seed=%d #%d ae=%s: %s\n   J: %s\n   T: %s" % (kind, seed, i, ae, ssrc, rr[1], rr[2]), flush=True)
    print(counts)


if __name__ == "__main__":
    main()
