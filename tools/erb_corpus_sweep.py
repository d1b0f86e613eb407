#!/usr/bin/env python3
"""ERB corpus sweep (issue 15): renders public ERB templates (kept OUTSIDE the repo) with tplc and
with the oracle (../shared/conformance/oracle, Ruby 3.1 ERB, trim_mode "-") against states built from
each template's own reads, and classifies each render: identical / different / refused by tpl only /
refused by oracle only / refused by both.

usage: tools/erb_corpus_sweep.py DIR [DIR...] [--only SUBSTRING] [--show] [--variants N] [--save DIR]
  (--save DIR: each template's states are kept in DIR/PARENT/NAME.json and read back on the next run, so
  a sweep before and after a change renders the same states)
  A DIR's *.erb / *.tt files are templates. NAME.json beside a template (a state or a list of states)
  replaces the generated ones.
  State generation: every `@var`, `node[..][..]` / `@x['k']` / `scope['x']` (a Hash `scope`) path and bare local the
  template reads, typed from how it is used (a Hash where it iterates pairs, calls keys/each_pair or
  is indexed by a literal key, an Array where it iterates one name, joins, maps or sorts, an Integer
  for ports, sizes, timeouts and counts, true for flags, else a String). Then repaired from the
  oracle's errors (NameError adds the name; "undefined method `each' for String" makes it an Array
  ...), up to 40 rounds. Variant 1 is the generated state, variant 2 flips flags to false, empties
  collections and zeroes counts (--variants 2), or if Ruby refuses that, keeps every Hash's keys, or
  else only flips the flags.
  (TPLC=path/to/tplc, default build/tplc.) Prints one line per non-identical render and a tally.
  --show prints both outputs of each difference; --save DIR writes each template's final states."""
import glob, json, os, re, subprocess, sys, tempfile, collections, difflib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TPLC = os.environ.get("TPLC", os.path.join(ROOT, "build", "tplc"))
ORACLE = os.path.join(ROOT, "..", "shared", "conformance", "oracle")
TMP = tempfile.mkdtemp(prefix="tpl-erb-corpus-")

INT_WORDS = re.compile(r"(port|timeout|size|count|max|min|num|limit|interval|retries|workers|threads|"
                       r"level|days|seconds|weight|priority|uid|gid|mode|memory|mb|kb|ttl|delay|backlog)", re.I)
BOOL_WORDS = re.compile(r"(^|_)(enable|enabled|use|manage|ssl|tls|debug|verbose|allow|disable|disabled|"
                        r"is|has|with|purge|secure|compress|ipv6|daemon|auth|log)(_|$)|\?$", re.I)
ID = r"[A-Za-z_][A-Za-z0-9_]*"
KEY = r"""\[\s*(?::(\w+)|'([^'\\]*)'|"([^"\\#]*)")\s*\]"""
HASH_USE = re.compile(r"^\s*\.(each_pair|keys|values|each_key|each_value|key\?|has_key\?|fetch|dig|merge|to_a|sort_by)\b|"
                      r"^\s*\.(each|map|sort\.each|sort\.map|select|reject|collect|each_with_index)\s*(do|\{)\s*\|\s*\(?\s*\w+\s*,\s*\w+")
ARRAY_USE = re.compile(r"^\s*\.(each|map|collect|join|sort|first|last|flatten|uniq|compact|include\?|any\?|"
                       r"each_with_index|select|reject|size|length|count|empty\?|min|max|to_a|push|find)\b")
STR_USE = re.compile(r"^\s*\.(upcase|downcase|capitalize|gsub|sub|split|strip|start_with\?|end_with\?|chomp|"
                     r"to_sym|=~|match|tr|ljust|rjust|center|squeeze)\b")


def default_for(name):
    base = name.rsplit(".", 1)[-1].lower()
    if INT_WORDS.search(base):
        return 8080 if "port" in base else 30
    if BOOL_WORDS.search(base):
        return True
    return name.replace(".", "-") + "-value"


def reads(src):
    """{path tuple: kind} where path[0] is '@x' or 'node' or a bare name; kind hash/array/str/None."""
    code = "\n".join(re.findall(r"<%(?!%)[-=#]?(.*?)-?%>", src, re.S))
    code = re.sub(r"^\s*#.*$", "", code, flags=re.M)
    found = {}
    for m in re.finditer(r"(@" + ID + r"|\bnode\b|\bscope\b|\bconfig\b|\boptions\b)((?:" + KEY + r")*)", code):
        root = m.group(1)
        keys = [a or b or c for a, b, c in re.findall(KEY, m.group(2))]
        rest = code[m.end():m.end() + 80]
        if root == "scope" and not keys:
            continue   # scope.lookupvar / scope.function_x: Puppet's scope object (refused by both)
        path = (root,) + tuple(keys)
        for i in range(1, len(path)):
            found.setdefault(path[:i], "hash")
            if found[path[:i]] != "hash":
                found[path[:i]] = "hash"
        k = None
        if HASH_USE.match(rest):
            k = "hash"
        elif ARRAY_USE.match(rest):
            k = "array"
        elif STR_USE.match(rest):
            k = "str"
        elif re.match(r"\s*\[\s*(\w+|\d+)\s*\]", rest) and not re.match(r"\s*\[\s*\d", rest):
            k = "hash"
        if k or path not in found:
            if found.get(path) != "hash":
                found[path] = k
    # `for x in @list` / `@list.each do |x|` handled above; locals from scope.lookupvar('x')
    for m in re.finditer(r"lookupvar\(\s*['\"](?:::)?(?:\w+::)*(\w+)['\"]\s*\)", code):
        found.setdefault(("@" + m.group(1),), None)
    # a bare local indexed by literal keys (fpm's `attributes[:rpm_x]`, Vagrant's `options[:ip]`): a Hash
    params = set()
    for m in re.finditer(r"\|\s*\(?([\w\s,()]+)\)?\s*\|", code):
        params.update(re.findall(ID, m.group(1)))
    for m in re.finditer(r"(?<![\w@.:$])([a-z_]\w*)((?:" + KEY + r")+)", code):
        root = m.group(1)
        if root in params or root in ("node", "scope", "config", "options") or root in RUBY_WORDS:
            continue
        keys = [a or b or c for a, b, c in re.findall(KEY, m.group(2))]
        path = (root,) + tuple(keys)
        for i in range(1, len(path)):
            found[path[:i]] = "hash"
        found.setdefault(path, None)
    # the items of a collection a block iterates (`networks.each do |net|` ... `net[:ip]`, `networks[0][:device]`):
    # Hashes of the keys the template reads from them, a path (ROOT..., "[]", KEY...)
    for m in re.finditer(r"(@?[a-z_]\w*(?:" + KEY + r")*)\.(?:each|map|collect|select|reject|find|detect|each_with_index|"
                         r"sort_by|flat_map|any\?|all\?|count|group_by|filter_map)\s*(?:do|\{)\s*\|\s*(\w+)\s*[|,]", code):
        root = (m.group(1).split("[")[0],) + tuple(a or b or c for a, b, c in re.findall(KEY, m.group(1)))
        var = m.groups()[-1]
        for k in re.finditer(r"(?<![\w@.])" + var + r"((?:" + KEY + r")+)", code[m.end():]):
            keys = tuple(a or b or c for a, b, c in re.findall(KEY, k.group(1)))
            found[root + ("[]",) + keys] = None
    for m in re.finditer(r"(?<![\w.:])(@?[a-z_]\w*)\[\s*0\s*\]((?:" + KEY + r")+)", code):
        keys = tuple(a or b or c for a, b, c in re.findall(KEY, m.group(2)))
        found[(m.group(1),) + ("[]",) + keys] = None
    return found


RUBY_WORDS = {"if", "unless", "and", "or", "not", "in", "then", "else", "elsif", "when", "case", "while", "until",
              "do", "end", "return", "puts", "print", "p", "yield", "self", "nil", "true", "false", "super"}


def build(found):
    state = {}
    elems = collections.defaultdict(dict)
    for path in sorted(found, key=len):
        if "[]" in path:
            i = path.index("[]")
            elems[path[:i]][path[i + 1:]] = found[path]
            continue
        kind = found[path]
        d = state
        for p in path[:-1]:
            key = p.lstrip("@")
            if not isinstance(d.get(key), dict):
                d[key] = {}
            d = d[key]
        key = path[-1].lstrip("@")
        if key in d and isinstance(d[key], dict):
            continue
        if kind == "hash":
            d[key] = {}
        elif kind == "array":
            d[key] = ["%s-a" % key, "%s-b" % key]
        elif kind == "str":
            d[key] = "%s-value" % key
        else:
            d[key] = default_for(key)
    for root, sub in elems.items():
        items = []
        for suffix in ("a", "b"):
            item = build({k: v for k, v in sub.items() if k})
            fill_hashes(item, "")
            items.append(json.loads(json.dumps(item).replace("-value", "-" + suffix)))
        d = state
        for p in root[:-1]:
            key = p.lstrip("@")
            if not isinstance(d.get(key), dict):
                d[key] = {}
            d = d[key]
        d[root[-1].lstrip("@")] = items
    fill_hashes(state, "")
    # a name Ruby cannot bind as a local (ES_HOME): left out (the oracle sets each state key as one)
    return {k: v for k, v in state.items() if re.match(r"[a-z_][A-Za-z0-9_]*$", k)}


def fill_hashes(d, name):
    if not isinstance(d, dict):
        return
    if not d and name:
        d["%s_key1" % name] = "v1"
        d["%s_key2" % name] = "v2"
    for k, v in d.items():
        fill_hashes(v, k)


def variant(state, level=0):
    """flags false, collections empty, counts 0 (top level only keeps the keys). level 1 keeps every
    Hash's keys (a template that reads node['a']['b'] unguarded), level 2 only flips flags."""
    out = {}
    for k, v in state.items():
        if v is True:
            out[k] = False
        elif level < 2 and isinstance(v, int) and not isinstance(v, bool):
            out[k] = 0
        elif level < 2 and isinstance(v, list):
            out[k] = []
        elif isinstance(v, dict):
            out[k] = variant(v, level) if level or any(isinstance(x, dict) for x in v.values()) else {}
        else:
            out[k] = v
    return out


def run(cmd, tpl, state):
    sp = os.path.join(TMP, "state.json")
    with open(sp, "w") as f:
        json.dump(state, f)
    try:
        p = subprocess.run(cmd + ["render", tpl, "--state", sp] + (["--syntax", "erb"] if tpl.endswith(".tt") else []),
                           capture_output=True, timeout=60)
    except subprocess.TimeoutExpired:
        return (99, b"", b"timeout")
    return (p.returncode, p.stdout, p.stderr)


# The oracle's own Ruby program, run by one long-lived Ruby that forks a child per render (the oracle
# spawns a Python and a Ruby per render: seconds each on a loaded machine). Differences and tpl-only
# refusals are re-checked with the oracle itself before they are reported.
DRIVER = r'''
require "erb"; require "json"
script = File.read(ARGV[0])
while (line = STDIN.gets)
  job = JSON.parse(line)
  pid = fork do
    STDIN.reopen(job["in"]); STDOUT.reopen(job["out"], "w"); STDERR.reopen(job["err"], "w")
    eval(script, TOPLEVEL_BINDING, "-e")
  end
  Process.wait(pid)
  STDOUT.puts($?.exitstatus); STDOUT.flush
end
'''
_driver = None


def oracle(tpl, state, exact=False):
    global _driver
    if exact:
        return run([sys.executable, ORACLE], tpl, state)
    if _driver is None:
        import importlib.machinery, importlib.util
        loader = importlib.machinery.SourceFileLoader("tpl_oracle", ORACLE)
        spec = importlib.util.spec_from_loader("tpl_oracle", loader)
        mod = importlib.util.module_from_spec(spec); loader.exec_module(mod)
        open(os.path.join(TMP, "oracle.rb"), "w").write(mod.RUBY)
        _driver = subprocess.Popen(["ruby", "-e", DRIVER, os.path.join(TMP, "oracle.rb")], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, text=True)
    job = dict(source=open(tpl, encoding="utf-8", newline="").read(), state=state, memory=[],
               call=dict(channel="phone", medium="voice", claimed=None, history=[]), name=os.path.basename(tpl),
               catalogs=[], lang=None)
    f = {k: os.path.join(TMP, "job." + k) for k in ("in", "out", "err")}
    with open(f["in"], "w") as fh:
        json.dump(job, fh)
    _driver.stdin.write(json.dumps(f) + "\n"); _driver.stdin.flush()
    rc = int(_driver.stdout.readline())
    return (rc, open(f["out"], "rb").read(), open(f["err"], "rb").read())


def set_path(state, path, value):
    d = state
    for p in path[:-1]:
        if isinstance(d, list):
            d = d[p]
            continue
        if not isinstance(d.get(p), (dict, list)):
            d[p] = {}
        d = d[p]
    d[path[-1]] = value


def find_value_paths(d, pred, pre=()):
    """paths to the values pred accepts: Hash keys, and indices into Arrays (an element used as a Hash)."""
    items = d.items() if isinstance(d, dict) else enumerate(d) if isinstance(d, list) else []
    for k, v in items:
        if pred(k if isinstance(d, dict) else pre[-1] if pre else "item", v):
            yield pre + (k,)
        yield from find_value_paths(v, pred, pre + (k,))


def repair(state, err):
    """One fix from Ruby's error text, or None."""
    m = re.search(r"undefined local variable or method `(\w+)'", err)
    if m and m.group(1) not in state:
        state[m.group(1)] = default_for(m.group(1))
        return True
    m = re.search(r"undefined method `(\w+[?!]?)' for (?:\"([^\"]*)\":String|(\d+):Integer|(true|false|nil))", err)
    if m:
        meth, sval, ival, lit = m.groups()
        if sval is not None:
            target = lambda k, v: v == sval
        elif ival is not None:
            target = lambda k, v: v == int(ival) and not isinstance(v, bool)
        elif lit in ("true", "false"):
            target = lambda k, v: v is (lit == "true")
        else:
            return None
        hashy = meth in ("each_pair", "keys", "values", "each_key", "each_value", "key?", "has_key?", "fetch", "dig", "merge")
        stry = meth in ("upcase", "downcase", "capitalize", "gsub", "sub", "split", "strip", "start_with?", "end_with?", "chomp", "empty?", "length", "size")
        for p in find_value_paths(state, target):
            set_path(state, p, {"%s_key1" % p[-1]: "v1", "%s_key2" % p[-1]: "v2"} if hashy
                     else ("%s-value" % p[-1]) if stry and lit else ["%s-a" % p[-1], "%s-b" % p[-1]])
            return True
    m = re.search(r"no implicit conversion of (?:String|Symbol) into Integer", err)
    if m:
        for p in find_value_paths(state, lambda k, v: isinstance(v, list)):
            set_path(state, p, {"%s_key1" % p[-1]: "v1", "%s_key2" % p[-1]: "v2"})
            return True
    return None


def gen_states(tpl, src, nvar):
    state = build(reads(src))
    for _ in range(40):
        b = oracle(tpl, state)
        if b[0] == 0:
            break
        if not repair(state, b[2].decode("utf-8", "replace")):
            break
    states = [state]
    if nvar > 1:
        # the gentlest variant Ruby renders (each level keeps more of the state), else the first
        cands = [variant(state, lv) for lv in range(3)]
        ok = [v for v in cands if v != state and oracle(tpl, v)[0] == 0]
        states.append(ok[0] if ok else cands[0])
    return states


def main():
    sys.stdout.reconfigure(line_buffering=True)
    argv = sys.argv[1:]
    opt = {}
    for o in ("--only", "--variants", "--save"):
        if o in argv:
            i = argv.index(o); opt[o] = argv[i + 1]; del argv[i:i + 2]
    show = "--show" in argv
    args = [a for a in argv if not a.startswith("--")]
    nvar = int(opt.get("--variants", "1"))
    tally = collections.Counter()
    per_tpl = collections.defaultdict(collections.Counter)
    files = []
    for d in args:
        files += sorted(glob.glob(os.path.join(d, "**", "*.erb"), recursive=True))
        files += sorted(glob.glob(os.path.join(d, "**", "*.tt"), recursive=True))
    for tpl in files:
        if "--only" in opt and opt["--only"] not in tpl:
            continue
        src = open(tpl, encoding="utf-8", errors="replace").read()
        own = os.path.splitext(tpl)[0] + ".json"
        sd = None
        if "--save" in opt:
            sd = os.path.join(opt["--save"], os.path.basename(os.path.dirname(tpl)), os.path.basename(os.path.splitext(tpl)[0]) + ".json")
        if os.path.exists(own):
            states = json.load(open(own)); states = states if isinstance(states, list) else [states]
        elif sd and os.path.exists(sd):   # a state an earlier run generated (--save DIR): the same renders again
            states = json.load(open(sd))
        else:
            states = gen_states(tpl, src, nvar)
            if sd:
                os.makedirs(os.path.dirname(sd), exist_ok=True)
                json.dump(states, open(sd, "w"), indent=1)
        for i, s in enumerate(states):
            a = run([TPLC], tpl, s)
            b = oracle(tpl, s)
            if a[0] != b[0] or a[0] == 0 and a[1] != b[1]:
                b = oracle(tpl, s, exact=True)
            if a[0] == 0 and b[0] == 0:
                c = "identical" if a[1] == b[1] else "different"
            elif a[0] != 0 and b[0] != 0:
                c = "refused-both"
            elif a[0] != 0:
                c = "refused-tpl-only"
            else:
                c = "refused-oracle-only"
            tally[c] += 1
            per_tpl[tpl][c] += 1
            if c != "identical" and c != "refused-both" or (c == "refused-both" and show):
                msg = (a[2].decode("utf-8", "replace").strip().splitlines() or [""])[0] if a[0] else ""
                om = (b[2].decode("utf-8", "replace").strip().splitlines() or [""])[0] if b[0] else ""
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
