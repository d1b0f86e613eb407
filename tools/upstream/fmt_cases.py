"""Recorded str.format calls of CPython's tests -> tpl fmt cases, blessed by the oracle.
Positional fields are renamed to keyword fields (tpl's fmt takes keyword state, like
str.format(**state)): {} / {0} -> {aN}. Successful calls of one test method are grouped, one line
each, into templates of at most CHUNK fields; each error call is its own case.
usage: gen_fmt.py RECORDS.jsonl STAGE"""
import json, os, re, subprocess, sys, _string
recs = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
stage = sys.argv[2]
os.makedirs(stage, exist_ok=True)
ORACLE = "/work/shared/conformance/oracle"
CHUNK = 25


def dec(v):
    if isinstance(v, dict) and set(v) == {"__float__"}:
        return float(v["__float__"])
    if isinstance(v, list):
        return [dec(x) for x in v]
    if isinstance(v, dict):
        return {k: dec(x) for k, x in v.items()}
    return v


def big(v):
    if isinstance(v, int) and not isinstance(v, bool):
        return abs(v) >= 10 ** 4000
    if isinstance(v, list):
        return any(big(x) for x in v)
    if isinstance(v, dict):
        return any(big(x) for x in v.values())
    return False


class Renamer:
    def __init__(self, prefix):
        self.prefix, self.auto = prefix, 0

    def field(self, name):
        first, rest = _string.formatter_field_name_split(name)
        if first == "":
            first = self.prefix + str(self.auto); self.auto += 1
        elif isinstance(first, int):
            first = self.prefix + str(first)
        else:
            return name
        for is_attr, key in rest:
            first += ("." + key) if is_attr else "[%s]" % key
        return first

    def text(self, s, depth=0):
        out = []
        for lit, name, spec, conv in _string.formatter_parser(s):
            out.append(lit.replace("{", "{{").replace("}", "}}"))
            if name is None:
                continue
            f = "{" + self.field(name)
            if conv:
                f += "!" + conv
            if spec:
                f += ":" + self.text(spec, depth + 1)
            out.append(f + "}")
        return "".join(out)


def convert(r, prefix):
    """-> (template, state) or None"""
    args, kw = dec(r["args"]), dec(r["kwargs"])
    if "__map__" in kw:
        return None
    tpl = r["tpl"]
    if not args:
        return tpl, kw
    try:
        new = Renamer(prefix).text(tpl)
    except ValueError:
        return tpl, kw  # the reference engine refuses the template itself
    state = dict(kw)
    for i, a in enumerate(args):
        state[prefix + str(i)] = a
    return new, state


def modname(test):
    parts = test.split(".")
    return parts[1][5:] if parts[1].startswith("test_") else parts[1], re.sub(r"^test_?", "", parts[-1]).strip("_")


groups, errs, seen, skipped = {}, [], set(), {}
for r in recs:
    if not r["ok"] or big(r["args"]) or big(r["kwargs"]):
        skipped["values not JSON"] = skipped.get("values not JSON", 0) + 1; continue
    key = json.dumps([r["tpl"], r["args"], r["kwargs"]], sort_keys=True)
    if key in seen:
        continue
    seen.add(key)
    mod, meth = modname(r["test"])
    if "exc" in r:
        errs.append((mod, meth, r))
    else:
        groups.setdefault((mod, meth), []).append(r)

cases = []  # (name, template, state, want_out, want_exc, sources)
for (mod, meth), rs in groups.items():
    for ci in range(0, len(rs), CHUNK):
        chunk = rs[ci:ci + CHUNK]
        parts, state, want, ok = [], {}, [], True
        for j, r in enumerate(chunk):
            cv = convert(r, "a%d_" % j if True else "")
            if cv is None:
                ok = False; break
            t, s = cv
            if any(k in state for k in s):
                # a keyword field shared by two calls: keep the call alone
                cases.append(("%s-%s-k%d" % (mod, meth, ci + j), t, s, r["out"], None, [r["test"]]))
                continue
            parts.append(t); state.update(s); want.append(r["out"])
        if not parts:
            continue
        cases.append(("%s-%s-%d" % (mod, meth, ci // CHUNK + 1), "\n".join(parts), state, "\n".join(want), None,
                      [chunk[0]["test"]]))
ecount = {}
for mod, meth, r in errs:
    cv = convert(r, "a")
    if cv is None:
        continue
    t, s = cv
    k = "%s-%s" % (mod, meth)
    ecount[k] = ecount.get(k, 0) + 1
    cases.append(("%s-err%d" % (k, ecount[k]), t, s, None, r["exc"], [r["test"]]))

kept, unfaithful, src_notes = 0, [], []
for name, t, s, want_out, want_exc, tests in cases:
    name = re.sub(r"[^A-Za-z0-9-]+", "-", name)
    def w(fn, text):
        with open(os.path.join(stage, fn), "w", encoding="utf-8", newline="") as f:
            f.write(text)
    w(name + ".fmt", t)
    if s:
        w(name + ".json", json.dumps(s, ensure_ascii=False) + "\n")
    cmd = [ORACLE, "render", "./" + name + ".fmt"] + (["--state", name + ".json"] if s else [])
    p = subprocess.run(cmd, cwd=stage, capture_output=True)
    out = p.stdout.decode("utf-8")
    if (p.returncode == 0 and want_out is not None and out == want_out) or (p.returncode == 1 and want_exc):
        w(name + (".out" if p.returncode == 0 else ".err"), out if p.returncode == 0 else p.stderr.decode())
        kept += 1
        src_notes.append((name, tests[0], want_exc))
    else:
        unfaithful.append((name, p.returncode, out[:100], p.stderr.decode()[:200], (want_out or "")[:100], want_exc))
        for ext in (".fmt", ".json"):
            if os.path.exists(os.path.join(stage, name + ext)):
                os.remove(os.path.join(stage, name + ext))
json.dump(src_notes, open(os.path.join(os.path.dirname(sys.argv[1]), "fmt_sources.json"), "w"), indent=0)
print("skipped", skipped, "kept", kept, "unfaithful", len(unfaithful))
for u in unfaithful:
    print("  UNFAITHFUL", u)
