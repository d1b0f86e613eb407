#!/usr/bin/env python3
"""Format-string sweep (issue 14): every `'literal'.format(...)` / `.format_map(...)` string in the
Python sources under DIRs (kept OUTSIDE the repo), found with Python's `ast`, renamed to keyword fields
as fmt-upstream does (`{}` / `{0}` become `{a0}`...; tpl formats with keyword arguments only), rendered
by tplc (`--syntax fmt`) and by the oracle (../shared/conformance/oracle: `str.format(**state)`, run in
this process) against invented states of the types the specs ask for: ordinary values, other types
for fields without a type, and edge values (NaN, infinities, -0.0, 5e-324, 2**64+1, bools, combining
marks, emoji, None, lists, dicts). Classifies each render as identical / different / refused by tpl
only / refused by the oracle only / refused by both.

usage: tools/fmt_corpus_sweep.py DIR [DIR...] [--show] [--dump OUTDIR]
  (TPLC=path/to/tplc, default build/tplc.) Prints one line per non-identical render and a tally.
  --dump OUTDIR writes each distinct string as OUTDIR/N.fmt with its states N.K.json (to reduce)."""
import ast, collections, contextlib, glob, io, json, os, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TPLC = os.environ.get("TPLC", os.path.join(ROOT, "build", "tplc"))
ORACLE = os.path.join(ROOT, "..", "shared", "conformance", "oracle")
TMP = tempfile.mkdtemp(prefix="tpl-fmt-sweep-")


def strings_in(path):
    try:
        tree = ast.parse(open(path, encoding="utf-8", errors="replace").read())
    except (SyntaxError, ValueError, RecursionError):
        return
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("format", "format_map")
                and isinstance(node.func.value, ast.Constant) and isinstance(node.func.value.value, str)):
            yield node.func.value.value, node.lineno


class Bad(Exception):
    pass


def rename(s):
    """`{}`/`{N}` fields become `{aN}` (auto-numbered as Python does, nested specs included);
    returns (text, {root name: (accessors, type char)})"""
    out, fields, auto = [], {}, [0]

    def field(body, depth):
        # body: what is between { and } (no outer braces)
        i, n = 0, len(body)
        while i < n and body[i] not in ".[!:":
            i += 1
        name, rest = body[:i], body[i:]
        acc_end = 0
        while acc_end < len(rest) and rest[acc_end] not in "!:":
            if rest[acc_end] == "[":
                acc_end = rest.index("]", acc_end) + 1 if "]" in rest[acc_end:] else len(rest)
            else:
                acc_end += 1
        acc, tail = rest[:acc_end], rest[acc_end:]
        if name == "":
            name = "a%d" % auto[0]; auto[0] += 1
        elif name.isdigit():
            name = "a%d" % int(name)
        elif not name.isidentifier():
            raise Bad(name)
        conv, spec = "", None
        if tail.startswith("!"):
            conv, tail = tail[:2], tail[2:]
            if tail and not tail.startswith(":"):
                raise Bad(tail)
        if tail.startswith(":"):
            spec = tail[1:]
        typ = spec[-1] if spec and spec[-1].isalpha() else ""
        if depth:
            typ = "w"  # a nested field: a width or precision
        prev = fields.get(name)
        fields[name] = (acc or (prev[0] if prev else ""), typ or (prev[1] if prev else ""))
        return "{" + name + acc + conv + (":" + walk(spec, depth + 1) if spec is not None else "") + "}"

    def walk(t, depth):
        if depth > 2:
            raise Bad("deep")
        res, i, n = [], 0, len(t)
        while i < n:
            ch = t[i]
            if ch == "{":
                if depth == 0 and i + 1 < n and t[i + 1] == "{":
                    res.append("{{"); i += 2; continue
                lvl, j = 1, i + 1
                while j < n and lvl:
                    if t[j] == "{": lvl += 1
                    elif t[j] == "}": lvl -= 1
                    j += 1
                if lvl:
                    raise Bad("open")
                res.append(field(t[i + 1:j - 1], depth)); i = j
            elif ch == "}":
                if depth == 0 and i + 1 < n and t[i + 1] == "}":
                    res.append("}}"); i += 2; continue
                raise Bad("single }")
            else:
                res.append(ch); i += 1
        return "".join(res)

    return walk(s, 0), fields


INTS = "bcdoxXn"
FLOATS = "eEfFgG%"


def value(acc, typ, k, name):
    if acc.startswith("["):
        key = acc[1:acc.index("]")]
        inner = value(acc[acc.index("]") + 1:], typ, k, name)
        return [inner, inner] if key.isdigit() and int(key) < 2 else {key: inner}
    if acc.startswith("."):
        return {"x": 1}  # an attribute of a JSON object: AttributeError in both
    if typ == "w":
        return [8, 3, 0, 12, 1, 20, 5][k % 7]
    if typ in INTS:
        return [42, 7, -5, 2**64 + 1, True, 0, 10**20][k % 7] if typ != "c" else [65, 233, 128512, 0, 97, 10, 65][k % 7]
    if typ in FLOATS:
        return [3.14159, 2.5, -0.0, float("nan"), float("inf"), 5e-324, 1e300][k % 7]
    if typ == "s":
        return ["abc", "", "e\u0301t\u00e9", "\U0001F44D\U0001F3FD", "a\tb\nc", "x" * 40, "'q\""][k % 7]
    return ["text-" + name, 7, 2.5, True, None, [1, "a"], {"k": None}][k % 7]


def run_tplc(path, state):
    sp = os.path.join(TMP, "s.json")
    with open(sp, "w") as f:
        json.dump(state, f)
    try:
        p = subprocess.run([TPLC, "render", path, "--state", sp, "--syntax", "fmt"], capture_output=True, timeout=30)
    except subprocess.TimeoutExpired:
        return (99, b"", b"timeout")
    return (p.returncode, p.stdout, p.stderr)


_OR = []


def run_oracle(path, state):
    import importlib.util
    from importlib.machinery import SourceFileLoader
    if not _OR:
        spec = importlib.util.spec_from_loader("tpl_oracle", SourceFileLoader("tpl_oracle", ORACLE))
        m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); _OR.append(m)
    sp = os.path.join(TMP, "so.json")
    with open(sp, "w") as f:
        json.dump(state, f)
    out, err = io.BytesIO(), io.StringIO()

    class W:
        buffer = out
        def write(self, s): out.write(s.encode())
        def flush(self): pass
    old = sys.stdout
    try:
        sys.stdout = W()
        with contextlib.redirect_stderr(err):
            rc = _OR[0].main(["render", path, "--state", sp, "--syntax", "fmt"])
    finally:
        sys.stdout = old
    return (rc, out.getvalue(), err.getvalue().encode())


def main():
    sys.stdout.reconfigure(line_buffering=True)
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    dump = None
    if "--dump" in sys.argv:
        dump = sys.argv[sys.argv.index("--dump") + 1]
        args.remove(dump)
        os.makedirs(dump, exist_ok=True)
    show = "--show" in sys.argv
    seen, tally, per, skipped = {}, collections.Counter(), collections.Counter(), 0
    for d in args:
        for py in sorted(glob.glob(os.path.join(d, "**", "*.py"), recursive=True)):
            for s, line in strings_in(py):
                if "{" not in s or s in seen:
                    continue
                try:
                    t, fields = rename(s)
                except (Bad, ValueError):
                    skipped += 1
                    continue
                seen[s] = "%s:%d" % (os.path.relpath(py, d), line)
    print("strings: %d distinct (%d skipped: not a valid format string)" % (len(seen), skipped))
    for n, (s, where) in enumerate(seen.items()):
        t, fields = rename(s)
        path = os.path.join(dump if dump else TMP, "%d.fmt" % n)
        with open(path, "w", encoding="utf-8") as f:
            f.write(t)
        worst = "identical"
        for k in range(7):
            state = {nm: value(acc, typ, k, nm) for nm, (acc, typ) in fields.items()}
            if dump:
                with open(os.path.join(dump, "%d.%d.json" % (n, k)), "w") as f:
                    json.dump(state, f)
            a, b = run_tplc(path, state), run_oracle(path, state)
            if a[0] == 0 and b[0] == 0:
                c = "identical" if a[1] == b[1] else "different"
            elif a[0] and b[0]:
                c = "refused-both"
            else:
                c = "refused-tpl-only" if a[0] else "refused-oracle-only"
            tally[c] += 1
            if c not in ("identical", "refused-both"):
                worst = c
                ma = (a[2].decode("utf-8", "replace").strip().splitlines() or [""])[0]
                mb = (b[2].decode("utf-8", "replace").strip().splitlines() or [""])[-1]
                print("%s %s #%d %r state=%s\n   tpl: %s %r\n   oracle: %s %r" % (
                    c.upper(), where, k, t[:160], json.dumps(state)[:200], ma[:160], a[1][:160], mb[:160], b[1][:160]))
            elif show and c == "refused-both":
                print("REFUSED-BOTH %s #%d %r" % (where, k, t[:120]))
        per[worst] += 1
    print("renders:", dict(tally))
    print("strings:", dict(per))


if __name__ == "__main__":
    main()
