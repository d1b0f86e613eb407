"""Turn recorded renders of Jinja2's test suite into tpl cases (outputs from the oracle).
usage: gen_jinja.py RECORDS.jsonl OUTDIR AUTOESCAPE_OUTDIR EXISTING_SUITE_DIR..."""
import json, os, re, subprocess, sys, hashlib

recs = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
outdir, aedir = sys.argv[2], sys.argv[3]
existing = set()
for d in sys.argv[4:]:
    for n in os.listdir(d):
        if n.endswith(".jinja") and not n.startswith("_"):
            existing.add(open(os.path.join(d, n), encoding="utf-8").read())
ORACLE = "/work/shared/conformance/oracle"
LOOPCTL = "jinja2.ext.LoopControlExtension"
skipped, seen, made = {}, set(), []


def skip(why):
    skipped[why] = skipped.get(why, 0) + 1


def case_name(test):
    path, _, rest = test.partition("::")
    mod = os.path.basename(path)[5:-3]
    func = rest.split("::")[-1]
    func = re.sub(r"^test_", "", func)
    func = re.sub(r"[^A-Za-z0-9]+", "-", func).strip("-")[:60]
    return "%s-%s" % (mod, func)


def rename(s, mapping):
    for k in sorted(mapping, key=len, reverse=True):
        for q in "\"'":
            s = s.replace(q + k + q, q + mapping[k] + q)
    return s


def ren_val(v, mapping):
    if isinstance(v, str):
        return mapping.get(v, v)
    if isinstance(v, list):
        return [ren_val(x, mapping) for x in v]
    if isinstance(v, dict):
        return {k: ren_val(x, mapping) for k, x in v.items()}
    return v


names = {}
ONLY_CONV = os.environ.get("ONLY_CONV") == "1"
for r in recs:
    e = r["env"]
    conv = False
    if not r["ctx_ok"]:
        if not ONLY_CONV or r.get("ctx_conv") is None:
            skip("context not JSON"); continue
        r["ctx"], conv = r["ctx_conv"], True
    elif ONLY_CONV:
        continue
    if e["cls"] != "Environment":
        skip("env class " + e["cls"]); continue
    if e["filters_custom"] or e["tests_custom"] or e["globals_custom"] or e["policies_custom"]:
        skip("custom filters/tests/globals/policies"); continue
    if (e["block_start_string"], e["block_end_string"], e["variable_start_string"], e["variable_end_string"],
            e["comment_start_string"], e["comment_end_string"]) != ("{%", "%}", "{{", "}}", "{#", "#}"):
        skip("custom delimiters"); continue
    if e["line_statement_prefix"] or e["line_comment_prefix"] or e["newline_sequence"] != "\n" or e["is_async"]:
        skip("line prefixes/newline/async"); continue
    if e["finalize"] is not None:
        skip("finalize"); continue
    if e["undefined"] not in ("Undefined", "StrictUndefined"):
        skip("undefined " + e["undefined"]); continue
    if e["autoescape"] not in (False, True):
        skip("autoescape callable"); continue
    ext = set(e["extensions"]) - {LOOPCTL}
    if ext:
        skip("extension " + ",".join(sorted(ext))); continue
    loader = e["loader"]
    src = r["src"]
    refs = re.search(r"\{%-?\s*(extends|include|import|from)\b", src)
    if loader is not None and not isinstance(loader, dict):
        if refs:
            skip("loader " + loader); continue
        loader = None
    if loader is None and refs:
        pass  # the reference engine failed to load: fine as an error case
    if e["autoescape"] and "exc" in r:
        skip("autoescape error case"); continue
    opts = {}
    for k in ("trim_blocks", "lstrip_blocks", "keep_trailing_newline"):
        if e[k]:
            opts[k] = True
    if e["undefined"] == "StrictUndefined":
        opts["strict"] = True
    if LOOPCTL in e["extensions"]:
        opts = {"profile": "hf"}
    base = case_name(r["test"]) + ("-c" if conv else "")
    key = json.dumps([src, r["ctx"], opts, loader, e["autoescape"]], sort_keys=True)
    if key in seen:
        skip("duplicate"); continue
    seen.add(key)
    if src in existing and not loader and not r["ctx"]:
        skip("already in jinja-upstream"); continue
    n = names.get(base, 0) + 1
    names[base] = n
    name = base if n == 1 else "%s-%d" % (base, n)
    ctx = r["ctx"] or {}
    files = {}
    if loader:
        mapping = {k: "_%s--%s.jinja" % (name, re.sub(r"[^A-Za-z0-9_.-]+", "-", k)) for k in loader}
        src = rename(src, mapping)
        ctx = ren_val(ctx, mapping)
        files = {mapping[k]: rename(v, mapping) for k, v in loader.items()}
    made.append(dict(name=name, src=src, ctx=ctx, opts=opts, files=files, autoescape=e["autoescape"],
                     test=r["test"], want_out=r.get("out"), want_exc=r.get("exc")))

print("skipped:", json.dumps(skipped, indent=1), file=sys.stderr)
print("candidates:", len(made), file=sys.stderr)
json.dump(made, open(os.path.join(os.path.dirname(sys.argv[1]), "jinja_cands.json"), "w"), indent=1)
