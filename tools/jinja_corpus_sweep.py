#!/usr/bin/env python3
"""Corpus sweep (issue 14): renders public Jinja templates (kept OUTSIDE the repo) with tplc and with
the oracle (../shared/conformance/oracle, real Jinja2 3.1) against a set of invented states, and
classifies each render: identical / different / refused by tpl only / refused by oracle only /
refused by both.

usage: tools/jinja_corpus_sweep.py DIR [DIR...] [--only SUBSTRING] [--states I,J] [--show] [--synth] [--inproc] [--ext E,F]
  A DIR's *.jinja / *.j2 files are templates (--ext html,sls adds *.html and *.sls: Sphinx themes, Salt states). Chat templates (their source names `messages`) render
  with the hf profile against CHAT_STATES below; the others with the jinja2 profile (trim_blocks, as
  Ansible's template module; DIR/sweep.flags replaces that flag) against GENERIC_STATES, or against
  NAME.json (a state or a list of states) when it exists beside the template.
  (TPLC=path/to/tplc, default build/tplc.) Prints one line per non-identical render and a tally.
  --show prints both outputs of each difference.
  --synth: a generic template without NAME.json renders against states synthesized from what it reads
  (jinja2.meta's undeclared names, the attributes and constant subscripts it uses, the names it loops
  over or calls .items() on): missing, strings, numbers, booleans, lists of dicts, nested dicts, a
  shape guessed from the use, and a seeded mix (see synth_states).
  A generic template whose first line is Ansible's `#jinja2: lstrip_blocks: True, ...` header renders
  with those options (trim_blocks, lstrip_blocks, keep_trailing_newline), as Ansible's template module does.
  --inproc runs the oracle in this process (its main(), imported from the file), much faster.
  Error-class mismatches (both refuse, different Jinja2 exception class) print as CLASS lines."""
import glob, json, os, subprocess, sys, tempfile, collections, difflib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TPLC = os.environ.get("TPLC", os.path.join(ROOT, "build", "tplc"))
ORACLE = os.path.join(ROOT, "..", "shared", "conformance", "oracle")
TMP = tempfile.mkdtemp(prefix="tpl-corpus-")
NOW = "1721952000"

TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Get the weather in a city.",
          "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"},
                         "unit": {"type": "string", "enum": ["c", "f"]}}, "required": ["city"]}}},
         {"type": "function", "function": {"name": "search", "description": "Search the web.",
          "parameters": {"type": "object", "properties": {"q": {"type": "string"}, "n": {"type": "integer", "default": 3}},
                         "required": ["q"]}}}]
BASE = {"bos_token": "<s>", "eos_token": "</s>", "add_generation_prompt": True}
def st(**kw):
    d = dict(BASE); d.update(kw); return d
CHAT_STATES = [
    st(messages=[{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Hi there"},
                 {"role": "assistant", "content": "Hello! How can I help?"}, {"role": "user", "content": "What is 2+2?"}]),
    st(messages=[{"role": "user", "content": "Weather in Paris?"},
                 {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "type": "function",
                   "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}}]},
                 {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "{\"temp\": 21.5}"},
                 {"role": "assistant", "content": "It is 21.5 C."}, {"role": "user", "content": "And Rome?"}], tools=TOOLS),
    st(messages=[{"role": "system", "content": "Think first."}, {"role": "user", "content": "Why is the sky blue?"},
                 {"role": "assistant", "content": "<think>\nRayleigh.\n</think>\n\nScattering.", "reasoning_content": "Rayleigh scattering."},
                 {"role": "user", "content": "Thanks"}], enable_thinking=False),
    st(messages=[{"role": "user", "content": [{"type": "text", "text": "Describe"}, {"type": "image", "url": "http://x/y.png"},
                                             {"type": "text", "text": " this."}]},
                 {"role": "assistant", "content": [{"type": "text", "text": "A cat."}]},
                 {"role": "user", "content": [{"type": "text", "text": "Colour?"}]}], add_generation_prompt=False),
    st(messages=[{"role": "system", "content": "Use tools."}, {"role": "user", "content": "Find tpl"},
                 {"role": "assistant", "content": None, "tool_calls": [{"id": "c9", "type": "function",
                   "function": {"name": "search", "arguments": "{\"q\": \"tpl\", \"n\": 2}"}}]},
                 {"role": "tool", "tool_call_id": "c9", "content": "found 2"}], tools=TOOLS, enable_thinking=True),
]
TRICKY_TOOLS = [{"type": "function", "function": {"name": "plot", "description": "Plot \u00e9t\u00e9 \"data\" <b>&</b>\n  indented",
          "parameters": {"type": "object", "properties": {"xs": {"type": "array", "items": {"type": "number"}, "description": "values"},
                         "opts": {"type": "object", "properties": {"log": {"type": "boolean", "default": False}},
                                  "additionalProperties": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
                         "mode": {"type": ["string", "null"], "enum": ["a", "b", None]}}, "required": ["xs"]}}}]
CHAT_STATES += [
    st(messages=[{"role": "system", "content": [{"type": "text", "text": "Sys \u2603 part"}]},
                 {"role": "user", "content": "  Plot \u6570\u636e \U0001F600 \\n 'q' \"dq\"  "},
                 {"role": "assistant", "content": "ok", "tool_calls": [{"id": "x1", "type": "function", "function": {"name": "plot",
                   "arguments": {"xs": [1, 2.5, -0.0, 1e-07, 1e+22, 12345678901234], "opts": {"log": True, "title": "\u00e9\n\t", "none": None}, "mode": None}}},
                   {"id": "x2", "type": "function", "function": {"name": "plot", "arguments": {}}}]},
                 {"role": "tool", "tool_call_id": "x1", "content": [{"type": "text", "text": "ok 1"}]},
                 {"role": "tool", "tool_call_id": "x2", "content": "ok 2"}], tools=TRICKY_TOOLS, add_generation_prompt=True),
    st(messages=[{"role": "user", "content": "one"}, {"role": "user", "content": "two"},
                 {"role": "assistant", "content": "<think>a</think>b</think>c", "thinking": "t1"},
                 {"role": "assistant", "content": "", "reasoning_content": "only reasoning"}], add_generation_prompt=False),
]
GENERIC_STATES = [{}]

def _walk_names(src, opts):
    """(undeclared names, attribute/key names, names iterated, names with .items()/.keys()/.values())"""
    import jinja2, jinja2.meta, jinja2.nodes as n, jinja2.ext
    env = jinja2.Environment(extensions=[jinja2.ext.loopcontrols, jinja2.ext.do], **opts)
    ast = env.parse(src)
    names = sorted(jinja2.meta.find_undeclared_variables(ast))
    attrs, iters, maps = set(), set(), set()
    for node in ast.find_all((n.Getattr, n.Getitem)):
        if isinstance(node, n.Getattr):
            attrs.add(node.attr)
        elif isinstance(node.arg, n.Const) and isinstance(node.arg.value, str):
            attrs.add(node.arg.value)
    for node in ast.find_all(n.For):
        it = node.iter
        while isinstance(it, (n.Filter, n.Call)) and getattr(it, "node", None) is not None:
            if isinstance(it, n.Call) and isinstance(it.node, n.Getattr) and it.node.attr in ("items", "keys", "values"):
                base = it.node.node
                if isinstance(base, n.Name):
                    maps.add(base.name)
                it = base
                break
            it = it.node
        if isinstance(it, n.Name):
            iters.add(it.name)
    attrs -= {"items", "keys", "values", "get", "append", "update", "split", "join", "format", "strip",
              "lower", "upper", "startswith", "endswith", "replace", "pop", "setdefault", "extend", "insert"}
    return names, sorted(attrs), iters, maps

def synth_states(src, opts):
    import random
    try:
        names, attrs, iters, maps = _walk_names(src, opts)
    except Exception:
        return [{}]
    if not names:
        return [{}]
    attrs = attrs[:40]
    flat = {a: "%s-v" % a for a in attrs}
    flat2 = {a: (i % 3 + 1 if i % 2 else "w%d" % i) for i, a in enumerate(attrs)}
    def nest(d):
        return {a: ({b: "x-%s" % b for b in attrs[:12]} if d else "leaf") for a in attrs} if attrs else {"k": "v"}
    def guess(nm):
        if nm in maps:
            return {"alpha": dict(flat), "beta": "two"}
        if nm in iters:
            return [dict(flat), dict(flat2)]
        return dict(flat) if attrs else "val-" + nm
    rnd = random.Random(len(src))
    pool = [None, "", "s", 0, 1, 2.5, -3, True, False, [], ["a", "b"], {}, [dict(flat)], dict(flat2), "a,b c"]
    return [{},
            {nm: "str-" + nm for nm in names},
            {nm: 3 for nm in names},
            {nm: True for nm in names},
            {nm: False for nm in names},
            {nm: [dict(flat), dict(flat2)] for nm in names},
            {nm: nest(1) for nm in names},
            {nm: guess(nm) for nm in names},
            {nm: rnd.choice(pool) for nm in names}]

_ORACLE_MOD = []
def run_inproc(tpl, state, prof, extra):
    import importlib.util, io, contextlib
    if not _ORACLE_MOD:
        from importlib.machinery import SourceFileLoader
        spec = importlib.util.spec_from_loader("tpl_oracle", SourceFileLoader("tpl_oracle", ORACLE))
        m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); _ORACLE_MOD.append(m)
    sp = os.path.join(TMP, "state-o.json")
    with open(sp, "w") as f:
        json.dump(state, f)
    os.environ["SOURCE_DATE_EPOCH"] = NOW
    out, err = io.BytesIO(), io.StringIO()
    class W:  # sys.stdout.buffer stand-in
        buffer = out
        def write(self, s): out.write(s.encode())
        def flush(self): pass
    old = sys.stdout
    try:
        sys.stdout = W()
        with contextlib.redirect_stderr(err):
            rc = _ORACLE_MOD[0].main(["render", tpl, "--state", sp, "--profile", prof] + extra)
    except RecursionError:
        rc = 1; err.write("RecursionError")
    finally:
        sys.stdout = old
    return (rc, out.getvalue(), err.getvalue().encode())

def err_class(msg):
    """the Jinja2 exception class an error line names (tpl: 'error: Class: ...' or a bare message)"""
    import re
    m = re.search(r"error: ([A-Za-z]+(?:Error|Undefined|Exception)):", msg)
    return m.group(1) if m else None

def kind(src):
    return "chat" if "messages" in src else "generic"

def run(cmd, tpl, state, prof, extra):
    sp = os.path.join(TMP, "state.json")
    with open(sp, "w") as f:
        json.dump(state, f)
    env = dict(os.environ, SOURCE_DATE_EPOCH=NOW)
    try:
        p = subprocess.run(cmd + ["render", tpl, "--state", sp, "--profile", prof] + extra, capture_output=True, env=env, timeout=60)
    except subprocess.TimeoutExpired:
        return (99, b"", b"timeout")
    return (p.returncode, p.stdout, p.stderr)

def main():
    sys.stdout.reconfigure(line_buffering=True)
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    only = None
    if "--only" in sys.argv:
        only = sys.argv[sys.argv.index("--only") + 1]
        args.remove(only)
    show = "--show" in sys.argv
    pick = None
    synth = "--synth" in sys.argv
    inproc = "--inproc" in sys.argv
    exts = ["jinja", "j2"]
    if "--ext" in sys.argv:
        v = sys.argv[sys.argv.index("--ext") + 1]
        args.remove(v)
        exts += [e.lstrip(".") for e in v.split(",") if e]
    if "--states" in sys.argv:
        v = sys.argv[sys.argv.index("--states") + 1]
        args.remove(v)
        pick = {int(x) for x in v.split(",")}
    tally = collections.Counter()
    per_tpl = collections.defaultdict(collections.Counter)
    files = []
    for d in args:
        for e in exts:
            files += sorted(glob.glob(os.path.join(d, "**", "*." + e), recursive=True))
    for tpl in files:
        if only and only not in tpl:
            continue
        src = open(tpl, encoding="utf-8", errors="replace").read()
        k = kind(src)
        own = os.path.splitext(tpl)[0] + ".json"
        ff = os.path.join(os.path.dirname(tpl), "sweep.flags")
        generic_flags = open(ff).read().split() if os.path.exists(ff) else ["--trim-blocks"]
        if os.path.exists(own):
            states = json.load(open(own)); states = states if isinstance(states, list) else [states]
            prof, extra = ("hf", []) if k == "chat" else ("jinja2", generic_flags)
        elif k == "chat":
            states, prof, extra = CHAT_STATES, "hf", []
        else:
            states, prof, extra = GENERIC_STATES, "jinja2", generic_flags
            if synth:
                states = synth_states(src, dict(trim_blocks="--trim-blocks" in extra, lstrip_blocks="--lstrip-blocks" in extra))
        hdr = src.split("\n", 1)[0]
        if k != "chat" and hdr.startswith("#jinja2:"):
            # Ansible's template module reads a first line `#jinja2: lstrip_blocks: True, ...` as options
            # (Jinja2 prints it): render with them, so the body is exercised as Ansible renders it
            for kv in hdr[len("#jinja2:"):].split(","):
                key, _, val = (x.strip() for x in kv.partition(":"))
                if key in ("trim_blocks", "lstrip_blocks", "keep_trailing_newline"):
                    flag = "--" + key.replace("_", "-")
                    extra = [f for f in extra if f != flag] + ([flag] if val.lower() == "true" else [])
        if os.path.splitext(tpl)[1] not in (".jinja", ".j2"):
            extra = extra + ["--syntax", "jinja"]  # an --ext file: the CLI reads it as str.format otherwise
        for i, s in enumerate(states):
            if pick is not None and i not in pick:
                continue
            a = run([TPLC], tpl, s, prof, extra)
            b = run_inproc(tpl, s, prof, extra) if inproc else run([sys.executable, ORACLE], tpl, s, prof, extra)
            if a[0] == 0 and b[0] == 0:
                c = "identical" if a[1] == b[1] else "different"
            elif a[0] != 0 and b[0] != 0:
                c = "refused-both"
                ca, cb = err_class(a[2].decode("utf-8", "replace")), err_class(b[2].decode("utf-8", "replace"))
                if ca and cb and ca != cb:
                    c = "class-mismatch"
                else:
                    ma = a[2].decode("utf-8", "replace").split("error: ", 1)[-1].splitlines()[0] if a[2] else ""
                    mb = b[2].decode("utf-8", "replace").split("error: ", 1)[-1].split(": ", 1)[-1].strip()
                    if ma.strip() != mb.splitlines()[0].strip() if mb else True:
                        tally["(refused-both, message differs)"] += 1
                        if "--msgs" in sys.argv:
                            print("MSG %s #%d  tpl: %s | oracle: %s" % (os.path.relpath(tpl), i, ma[:200], mb[:200]))
            elif a[0] != 0:
                c = "refused-tpl-only"
            else:
                c = "refused-oracle-only"
            tally[c] += 1
            per_tpl[tpl][c] += 1
            if c != "identical" and c != "refused-both" or (c == "refused-both" and show) or a[0] == 99:
                msg = (a[2].decode("utf-8", "replace").strip().splitlines() or [""])[0] if a[0] else ""
                om = (b[2].decode("utf-8", "replace").strip().splitlines() or [""])[-1] if b[0] else ""
                print("%s %s #%d  tpl: %s | oracle: %s" % (c.upper(), os.path.relpath(tpl), i, msg[:200], om[:200]))
                if show and c == "different":
                    for l in difflib.unified_diff(b[1].decode("utf-8", "replace").splitlines(), a[1].decode("utf-8", "replace").splitlines(), "oracle", "tpl", lineterm="", n=1):
                        print("   ", l)
    tt = collections.Counter()
    for t, c in per_tpl.items():
        tt["identical" if set(c) <= {"identical", "refused-both"} and c["identical"] else
           "refused-both" if set(c) == {"refused-both"} else "not-identical"] += 1
    print("renders:", dict(tally))
    print("templates: %d; %s" % (len(per_tpl), dict(tt)))

if __name__ == "__main__":
    main()
