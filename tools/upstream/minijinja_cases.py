#!/usr/bin/env python3
"""MiniJinja's snapshot inputs (mitsuhiko/minijinja, minijinja/tests/inputs/*.txt|*.html) as tpl
cases, blessed by ../shared/conformance/oracle (Jinja2 3.1), and a tally against tplc.

usage: minijinja_cases.py INPUTS_DIR STAGE [TPLC]
       minijinja_cases.py --install STAGE tests/cases/jinja-minijinja tests/autoescape

Each input is a JSON context, a line `---`, then the template (its `$settings` key holds
MiniJinja's environment options: undefined=strict, trim_blocks, lstrip_blocks,
keep_trailing_newline; custom markers and line prefixes are not Jinja2 options tpl has). The
templates of inputs/refs/ keep their names and are written beside the cases (the CLI's loader
and the oracle's FileSystemLoader both resolve names beside the template). A `.html` input is
autoescaped by MiniJinja: it is written to STAGE/autoescape/mj-NAME.jinja (Jinja2 with
Environment(autoescape=True), as tests/autoescape/gen.py renders) and also rendered plain.

Writes STAGE/NAME.jinja, NAME.json, NAME.opts.json and NAME.out (or NAME.err, the oracle's
message) for every input the oracle renders or refuses, and STAGE/tally.json. With TPLC each
render is run again with tplc and classified: identical / differs / refused by both / refused
by tpl only / tpl renders where Jinja2 raises. Inputs that need what only MiniJinja's test
harness has (its `get_args` function, its `one_shot_iterator` value, custom syntax) are
skipped and counted."""
import json, os, re, shutil, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
ORACLE = os.path.join(HERE, "..", "..", "..", "shared", "conformance", "oracle")
if not os.path.exists(ORACLE):
    ORACLE = "/work/shared/conformance/oracle"
FL = {"trim_blocks": "--trim-blocks", "lstrip_blocks": "--lstrip-blocks",
      "keep_trailing_newline": "--keep-trailing-newline", "strict": "--strict"}
HARNESS_ONLY = ("get_args", "one_shot_iterator")
# Inputs Jinja2 refuses only for a line or block using what MiniJinja has and Jinja2 does not:
# NAME-adapted is the input without the lines Jinja2 fails on (adapt), and without the lines
# holding a string listed here (left to another task), with why.
ADAPT = {
    "debug": ("MiniJinja's debug() global", ()),
    "do_macro": ("{% do %} (jinja2.ext.do, not enabled)", ()),
    "do_macro_calling_macro": ("{% do %} (jinja2.ext.do, not enabled)", ()),
    "filters": ("MiniJinja's bool, split, lines, chain and zip filters; sort of mixed types; lines "
                "printing a generator (Python prints its address)", ()),
    "groupby-filter": ("groupby(attribute=) of an item without it (Jinja2 raises)", ()),
    "import_all": ("tojson of a module (Jinja2 raises)", ()),
    "macro_import2": ("dict() of a module (Jinja2 raises)", ()),
    "mul": ("range * int (Jinja2 raises)", ()),
    "namespace": ("a namespace attribute of a namespace assigned (ns.a.b = ...: Jinja2's syntax error)", ()),
    "tests": ("MiniJinja's startingwith/endingwith tests; `-1 is sameas -1` (Jinja2 parses `sameas - 1`); "
              "`[1, 2, 3] is sameas [1, 2, 3]` left out (tpl refuses sameas of two constants: another task)",
              ("[1, 2, 3] is sameas",)),
    "loop_dictsort": ("dictsort(by='value') of mixed types (Jinja2 raises)", ()),
}
BLOCK_OPEN = re.compile(r"\{%-?\s*(for|if|macro|call|filter|block|with|set\s+\w+\s*-?%\})")


def jinja2_error_line(src, ctx, opts, folder):
    """The line of src where Jinja2 (the oracle's environment) fails, 0 when it renders, or None
    when the failure has no line in src."""
    import jinja2
    env = jinja2.Environment(trim_blocks=bool(opts.get("trim_blocks")), lstrip_blocks=bool(opts.get("lstrip_blocks")),
                             keep_trailing_newline=bool(opts.get("keep_trailing_newline")),
                             loader=jinja2.FileSystemLoader(folder),
                             extensions=["jinja2.ext.loopcontrols"] if opts.get("profile") == "hf" else [])
    if opts.get("strict"):
        env.undefined = jinja2.StrictUndefined
    try:
        out = env.from_string(src).render(**ctx)
    except jinja2.TemplateSyntaxError as e:
        return e.lineno if e.name is None else None
    except Exception:
        tb, line = sys.exc_info()[2], None
        while tb:
            if tb.tb_frame.f_code.co_filename == "<template>":
                line = tb.tb_frame.f_lineno
            tb = tb.tb_next
        return line  # Jinja2 rewrote the traceback: template lines
    if " at 0x" in out:  # a generator or function printed: Python's memory address
        for i, l in enumerate(out.split("\n")):
            if " at 0x" in l:
                return -1
    return 0


def adapt(src, ctx, opts, folder):
    """Drop the lines (or the one-line-opened block) Jinja2 fails on, one at a time, until it
    renders: MiniJinja-only filters, tests and syntax in otherwise portable templates. Returns
    (new_src, dropped line numbers) or None."""
    lines = src.split("\n")
    keep = list(range(len(lines)))
    dropped = []
    for _ in range(60):
        cur = "\n".join(lines[i] for i in keep)
        ln = jinja2_error_line(cur, ctx, opts, folder)
        if ln == 0:
            return (cur, dropped) if dropped and len(keep) > 1 else None
        if ln == -1:  # printed addresses: drop each line that prints one alone
            bad = [k for k in keep if jinja2_error_line(lines[k], ctx, opts, folder) == -1]
            if not bad:
                return None
            for k in bad:
                keep.remove(k)
                dropped.append(k + 1)
            continue
        if ln is None or ln > len(keep):
            return None
        k = keep[ln - 1]
        m = BLOCK_OPEN.search(lines[k])
        span = [k]
        if m and "end" + m.group(1).split()[0] not in lines[k]:
            end = "end" + m.group(1).split()[0]
            j = keep.index(k) + 1
            while j < len(keep) and end not in lines[keep[j]]:
                span.append(keep[j])
                j += 1
            if j == len(keep):
                return None
            span.append(keep[j])
        for k in span:
            keep.remove(k)
            dropped.append(k + 1)
    return None


# Renders not kept in tests/cases/jinja-minijinja (install): Jinja2's output has a memory address
# (printed generators), is 100 MB (tpl's max_output limit refuses it: README's limits), or the
# input is kept as NAME-adapted / NAME-hf instead (its failure is MiniJinja-only syntax).
LEFT_OUT = {"opfilters": "prints generators (Python prints their address; tpl refuses: README)",
            "err_repeat_string_too_large": "100 MB of output (past tpl's 64 MiB max_output)",
            "loop_controls": "kept as loop_controls-hf (loopcontrols: the hf profile)",
            "do_closure": "{% do %} inside a macro (jinja2.ext.do is not enabled)"}
LEFT_OUT.update({k: "kept as %s-adapted" % k for k in ADAPT})


def install(stage, dest, aedest):
    """Copy the kept renders (and the refs) from STAGE into the case folders."""
    os.makedirs(dest, exist_ok=True)
    for d, to in ((stage, dest), (os.path.join(stage, "autoescape"), aedest)):
        for fn in sorted(os.listdir(d)):
            p = os.path.join(d, fn)
            if not os.path.isfile(p) or fn == "tally.json":
                continue
            base = fn.split(".")[0]
            if base in LEFT_OUT or (d != stage and not fn.startswith("mj-") and fn.endswith(".jinja")):
                continue
            if d != stage and not fn.startswith("mj-") and not any(  # refs the mj-* cases name
                    fn in open(os.path.join(d, t), encoding="utf-8").read()
                    for t in os.listdir(d) if t.startswith("mj-") and t.endswith(".jinja")):
                continue
            shutil.copyfile(p, os.path.join(to, fn))


def parse(path):
    with open(path, encoding="utf-8", newline="") as f:
        text = f.read()
    head, sep, src = text.partition("\n---\n")
    if not sep:
        raise ValueError("%s: no --- line" % path)
    ctx = json.loads(head)
    settings = ctx.pop("$settings", {}) or {}
    opts, skip = {}, None
    for k, v in settings.items():
        if k == "undefined":
            if v == "strict":
                opts["strict"] = True
            elif v != "lenient":
                skip = "undefined=%s (MiniJinja's chainable undefined)" % v
        elif k in FL:
            if v:
                opts[k] = True
        else:
            skip = "setting %s (custom syntax)" % k
    for word in HARNESS_ONLY:
        if word in src:
            skip = "uses the harness's %s" % word
    return ctx, opts, src, skip


def run(cmd, cwd):
    try:
        p = subprocess.run(cmd, cwd=cwd, capture_output=True, timeout=30)
        return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        return None, b"", "timeout"


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    if argv[0] == "--install":  # --install STAGE DEST AUTOESCAPE_DEST
        install(*argv[1:4])
        return 0
    inputs, stage = argv[0], argv[1]
    tplc = os.path.abspath(argv[2]) if len(argv) > 2 else None
    aestage = os.path.join(stage, "autoescape")
    os.makedirs(aestage, exist_ok=True)
    refs = os.path.join(inputs, "refs")
    for name in sorted(os.listdir(refs)):
        for d in (stage, aestage):
            shutil.copyfile(os.path.join(refs, name), os.path.join(d, name))
    tally, rows, adapted = {}, [], {}
    for fn in sorted(os.listdir(inputs)):
        path = os.path.join(inputs, fn)
        if not os.path.isfile(path):
            continue
        base, ext = os.path.splitext(fn)
        ctx, opts, src, skip = parse(path)
        renders = [(base if ext == ".txt" else base + "-html", stage, False, src, opts)]
        if ext == ".html":
            renders.append(("mj-" + base, aestage, True, src, opts))
        if not skip and ext == ".txt" and re.search(r"\{%-?\s*(break|continue)\b", src) and \
                not base.startswith("err_"):  # loopcontrols: Jinja2's extension, the hf profile's
            renders.append((base + "-hf", stage, False, src, dict(opts, profile="hf")))
        if not skip and ext == ".txt" and base in ADAPT:
            lines = src.split("\n")
            orig = [i + 1 for i, l in enumerate(lines) if not any(w in l for w in ADAPT[base][1])]
            got = adapt("\n".join(lines[i - 1] for i in orig), ctx, opts, stage)
            if got:
                gone = sorted(set(range(1, len(lines) + 1)) - {orig[k - 1] for k in range(1, len(orig) + 1)
                                                                if k not in got[1]})
                adapted[base + "-adapted"] = (fn, gone, ADAPT[base][0])
                renders.append((base + "-adapted", stage, False, got[0], opts))
        for name, d, ae, src, opts in renders:
            if skip:
                tally.setdefault("skipped", []).append((name, skip))
                continue

            def w(suffix, data):
                with open(os.path.join(d, name + suffix), "wb") as f:
                    f.write(data if isinstance(data, bytes) else data.encode("utf-8"))
            w(".jinja", src)
            if ctx:
                w(".json", json.dumps(ctx, ensure_ascii=False) + "\n")
            if opts and not ae:
                w(".opts.json", json.dumps(opts) + "\n")
            if ae:
                if opts:
                    raise ValueError("%s: autoescape case with settings" % fn)
                import jinja2
                env = jinja2.Environment(autoescape=True, loader=jinja2.FileSystemLoader(d))
                try:
                    ocode, oout, oerr = 0, env.get_template(name + ".jinja").render(**ctx).encode("utf-8"), ""
                except Exception as e:
                    ocode, oout, oerr = 1, b"", "%s: %s" % (type(e).__name__, e)
            else:
                cmd = [ORACLE, "render", "./" + name + ".jinja"]
                if ctx:
                    cmd += ["--state", name + ".json"]
                cmd += [x for k, v in opts.items() for x in (["--profile", v] if k == "profile" else [FL[k]])]
                ocode, oout, oerr = run(cmd, d)
            if ocode == 0:
                w(".out", oout)
            else:
                w(".err", oerr)
            if not tplc:
                continue
            cmd = [tplc, "render", name + ".jinja"] + (["--state", name + ".json"] if ctx else [])
            cmd += [x for k, v in opts.items() for x in (["--profile", v] if k == "profile" else [FL[k]])]
            cmd += ["--autoescape"] if ae else []
            tcode, tout, terr = run(cmd, d)
            if ocode == 0 and tcode == 0:
                cls = "identical" if oout == tout else "differs"
            elif ocode == 0:
                cls = "refused by tpl only"
            elif tcode == 0:
                cls = "tpl renders where Jinja2 raises"
            else:
                cls = "refused by both"
            tally.setdefault(cls, []).append(name)
            rows.append({"name": name, "class": cls, "oracle": oerr.strip()[-300:] or oout.decode("utf-8", "replace")[:300],
                         "tpl": terr.strip()[:300] or tout.decode("utf-8", "replace")[:300]})
    with open(os.path.join(stage, "tally.json"), "w") as f:
        json.dump({"tally": tally, "rows": rows, "adapted": adapted}, f, indent=1, ensure_ascii=False)
    for cls, names in sorted(tally.items()):
        print("%-32s %d" % (cls, len(names)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
