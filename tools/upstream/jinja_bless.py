"""Write candidate cases into a staging folder and bless them with the oracle; keep a case only
when the oracle agrees with what Jinja2's own test saw (same output, or both an error).
usage: emit.py CANDS.json STAGE AESTAGE"""
import json, os, subprocess, sys
import jinja2
cands = json.load(open(sys.argv[1]))
stage, aestage = sys.argv[2], sys.argv[3]
os.makedirs(stage, exist_ok=True); os.makedirs(aestage, exist_ok=True)
ORACLE = "/work/shared/conformance/oracle"
FL = {"trim_blocks": "--trim-blocks", "lstrip_blocks": "--lstrip-blocks",
      "keep_trailing_newline": "--keep-trailing-newline", "strict": "--strict"}
kept, diff, sources = [], [], []
for c in cands:
    d = aestage if c["autoescape"] else stage
    name = c["name"]
    def w(fn, text):
        with open(os.path.join(d, fn), "w", encoding="utf-8", newline="") as f:
            f.write(text)
    for fn, text in c["files"].items():
        w(fn, text)
    w(name + ".jinja", c["src"])
    if c["ctx"]:
        w(name + ".json", json.dumps(c["ctx"], ensure_ascii=False) + "\n")
    if c["opts"]:
        w(name + ".opts.json", json.dumps(c["opts"]) + "\n")
    if c["autoescape"]:
        env = jinja2.Environment(autoescape=True, loader=jinja2.FileSystemLoader(d))
        try:
            out, code, err = env.get_template(name + ".jinja").render(**c["ctx"]), 0, ""
        except Exception as e:
            out, code, err = None, 1, "%s: %s" % (type(e).__name__, e)
    else:
        cmd = [ORACLE, "render", "./" + name + ".jinja"]
        if c["ctx"]:
            cmd += ["--state", name + ".json"]
        for k, v in c["opts"].items():
            cmd += ["--profile", v] if k == "profile" else [FL[k]]
        p = subprocess.run(cmd, cwd=d, capture_output=True)
        code, out, err = p.returncode, p.stdout.decode("utf-8"), p.stderr.decode("utf-8")
    faithful = (code == 0 and c["want_out"] is not None and out == c["want_out"]) or \
               (code == 1 and c["want_exc"] is not None)
    if not faithful:
        diff.append((name, c["test"], code, (out or err)[:200], c["want_out"], c["want_exc"]))
        for fn in [name + ".jinja", name + ".json", name + ".opts.json"] + list(c["files"]):
            if os.path.exists(os.path.join(d, fn)):
                os.remove(os.path.join(d, fn))
        continue
    if code == 0:
        w(name + ".out", out)
    else:
        w(name + ".err", err)
    kept.append(name)
    sources.append((name, c["test"], c["autoescape"]))
json.dump(sources, open(os.path.join(os.path.dirname(sys.argv[1]), "sources.json"), "w"), indent=0)
print("kept", len(kept), "not faithful", len(diff))
for x in diff:
    print("  NOT FAITHFUL", x)
