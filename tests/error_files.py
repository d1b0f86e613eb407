#!/usr/bin/env python3
"""Where a runtime error in another template is located (issue 14): for every template of
tests/errors that loads another one (include, import, from-import, extends) and fails at render
time in Jinja2, tplc's diagnostic names the file and line of Jinja2's traceback's innermost
template frame, and the source line under it is that file's line; the program saved as .tplb
(with its sources, and stripped of them) reports the same location.

Jinja2 runs in process: jinja2.Environment with a FileSystemLoader on tests/errors (StrictUndefined
for a template whose NAME.args says --strict; NAME.json is the state). Compile-time errors
(TemplateSyntaxError, TemplateAssertionError, TemplateNotFound) are tests/golden.py's: tplc
reports those at the statement that loaded the template.

usage: error_files.py TPLC        (prints 'N passed, N failed'; exit 1 when one failed)"""
import json, os, re, shutil, subprocess, sys, tempfile, traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ERRORS = os.path.join(HERE, "errors")
LOADS = re.compile(r"{%-?\s*(include|import|from|extends)\b")
DIAG = re.compile(r"^(.*?):(\d+):(\d+): error: (.*)$")
# Templates whose location differs from Jinja2's on purpose, with why.
KNOWN = {
    # Jinja2's code for the second extends raises before the statement's own line mark, so its
    # traceback names the line of the statement before; tplc names the second extends.
    "extended-twice.jinja",
}


def jinja2_location(name, flags, state):
    """(file, line, message) of Jinja2's innermost template frame, or None: no runtime error."""
    import jinja2
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(ERRORS),
                             undefined=jinja2.StrictUndefined if "--strict" in flags else jinja2.Undefined)
    try:
        env.get_template(name).render(**state)
    except (jinja2.TemplateSyntaxError, jinja2.TemplateNotFound):
        return None
    except Exception as e:  # the template's own error
        frames = [f for f in traceback.extract_tb(e.__traceback__)
                  if os.path.dirname(os.path.abspath(f.filename)) == ERRORS]
        if not frames:
            return None
        return os.path.basename(frames[-1].filename), frames[-1].lineno, str(e)
    return None


def source_line(fname, line):
    with open(os.path.join(ERRORS, fname), encoding="utf-8", newline="") as f:
        text = f.read().replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    return lines[line - 1] if 0 < line <= len(lines) else None


def tplc_render(tplc, target, flags, state_args, cwd=ERRORS):
    p = subprocess.run([tplc, "render", target] + flags + state_args, cwd=cwd, capture_output=True, timeout=60)
    return p.returncode, p.stderr.decode("utf-8", "replace")


def main(argv):
    tplc = os.path.abspath(argv[0])
    passed = failed = 0
    tmp = tempfile.mkdtemp(prefix="tpl-error-files-")
    work = os.path.join(tmp, "errors")  # (.tplb files beside the templates they load at render time)
    shutil.copytree(ERRORS, work)
    for name in sorted(os.listdir(ERRORS)):
        base, ext = os.path.splitext(name)
        if ext != ".jinja":
            continue
        src = open(os.path.join(ERRORS, name), encoding="utf-8", errors="replace").read()
        if not LOADS.search(src):
            continue
        flags = []
        if os.path.exists(os.path.join(ERRORS, base + ".args")):
            flags = open(os.path.join(ERRORS, base + ".args")).read().split()
            if any(f != "--strict" for f in flags):
                continue  # tplc's own limits and files
        state, state_args = {}, []
        if os.path.exists(os.path.join(ERRORS, base + ".json")):
            state = json.load(open(os.path.join(ERRORS, base + ".json")))
            state_args = ["--state", base + ".json"]
        want = jinja2_location(name, flags, state)
        if want is None:
            continue
        wfile, wline, wmsg = want
        problems = []
        if name in KNOWN:
            continue
        c = subprocess.run([tplc, "compile", name, "-o", os.path.join(tmp, "probe.tplb")] + flags, cwd=ERRORS,
                           capture_output=True, timeout=60)
        if c.returncode != 0:
            continue  # refused at compile time (tpl's own location: tests/golden.py)
        rc, err = tplc_render(tplc, name, flags, state_args)
        lines = err.split("\n")
        m = DIAG.match(lines[0])
        if rc != 1 or not m:
            problems.append("exit %d, stderr %r" % (rc, err[:300]))
        else:
            if (m.group(1), int(m.group(2))) != (wfile, wline):
                problems.append("located at %s:%s, Jinja2 at %s:%d (%s)" % (m.group(1), m.group(2), wfile, wline, wmsg))
            want_src = source_line(wfile, wline)
            if want_src is not None and (len(lines) < 2 or lines[1] != "  " + want_src.replace("\t", "    ")
                                         and lines[1].strip() != want_src.strip()):
                problems.append("source line %r, want %r" % (lines[1] if len(lines) > 1 else None, want_src))
            # the same program saved and loaded: the same diagnostic; stripped: the location alone
            for strip in (False, True):
                out = os.path.join(work, base + (".stripped" if strip else "") + ".tplb")
                c = subprocess.run([tplc, "compile", name, "-o", out] + flags + (["--strip-source"] if strip else []),
                                   cwd=ERRORS, capture_output=True, timeout=60)
                if c.returncode != 0:
                    problems.append("tplc compile%s: %s" % (" --strip-source" if strip else "",
                                                            c.stderr.decode("utf-8", "replace")[:300]))
                    continue
                rc2, err2 = tplc_render(tplc, out, [], state_args, work)
                if not strip and (rc2, err2) != (rc, err):
                    problems.append(".tplb: exit %d, stderr %r" % (rc2, err2[:300]))
                if strip and (rc2 != 1 or not err2.startswith(lines[0] + "\n")):
                    problems.append(".tplb without sources: exit %d, stderr %r" % (rc2, err2[:300]))
        if problems:
            failed += 1
            print("FAIL %s: %s" % (name, "; ".join(problems)))
        else:
            passed += 1
    shutil.rmtree(tmp, ignore_errors=True)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
