#!/usr/bin/env python3
"""Every conformance case renders identically natively and in the VM (issue 21).

usage: native_conformance.py TPLC INCLUDE_DIR CC... [-- SUITE_DIR ...]

For each suite (default: every suite of ../shared/conformance, tpl's tests/cases/* and
tests/errors, which pins error texts and render limits; TPL_TEST_SHARD=I/N keeps the templates of
one shard, tests/shard.py: tests/check.sh splits the corpus between its gcc and clang trees), compiles every case with
`tplc compile --emit c --native` and the case's compile-time flags into one C file per case,
builds the suite's files into one shared library with the given C compiler
(-std=c11 -Wall -Wextra -Werror: the generated C must be warning-free), then compares
`tplc render SUITE.so --name SYMBOL` (render-time flags only) with `tplc render TEMPLATE` (all
flags): exit status, stdout and stderr byte-identical, errors and limits included. A template
that fails to compile must fail `tplc compile` with the same exit status and message.
The last line is 'N passed, N failed'.
"""
import concurrent.futures, importlib.machinery, importlib.util, os, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import shard  # noqa: E402  (TPL_TEST_SHARD: this tree's part of the corpus, tests/shard.py)
CONF = os.path.normpath(os.path.join(HERE, "..", "..", "shared", "conformance"))
COMPILE_FLAGS = {"--trim-blocks", "--lstrip-blocks", "--keep-trailing-newline", "--strict", "--tidy"}
COMPILE_VALUED = {"--syntax", "--profile", "--max-compile-memory"}


def load_runner():
    path = os.path.join(CONF, "run")
    loader = importlib.machinery.SourceFileLoader("conformance_run", path)
    spec = importlib.util.spec_from_loader("conformance_run", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def split_flags(args):
    """Splits render arguments (after TEMPLATE) into compile-time and render-time flags."""
    comp, rend, i = [], [], 0
    while i < len(args):
        a = args[i]
        if a in COMPILE_FLAGS:
            comp.append(a)
        elif a in COMPILE_VALUED:
            comp += [a, args[i + 1]]
            i += 1
        elif a.startswith("-") and i + 1 < len(args) and not args[i + 1].startswith("--"):
            rend += [a, args[i + 1]]
            i += 1
        else:
            rend.append(a)
        i += 1
    return comp, rend


def run(cmd, env=None, cwd=None, timeout=60):
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=timeout, env=env, cwd=cwd)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return None, b"", b"timeout"


def error_cases(d):
    """tests/errors: NAME.<ext> [+ NAME.json state, NAME.args extra flags], rendered in d."""
    out = []
    for name in sorted(os.listdir(d)):
        base, ext = os.path.splitext(name)
        if ext not in (".jinja", ".erb", ".fmt"):
            continue
        args = []
        if os.path.exists(os.path.join(d, base + ".json")):
            args += ["--state", base + ".json"]
        if os.path.exists(os.path.join(d, base + ".args")):
            with open(os.path.join(d, base + ".args")) as f:
                args += f.read().split()
        out.append((name, args, None))
    return out


def main(argv):
    if "--" in argv:
        k = argv.index("--")
        argv, suites = argv[:k], argv[k + 1:]
    else:
        suites = []
    if len(argv) < 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    tplc, inc, cc = os.path.abspath(argv[0]), os.path.abspath(argv[1]), argv[2:]
    runner = load_runner()
    if not suites:
        suites = sorted(os.path.join(CONF, d) for d in os.listdir(CONF) if os.path.isdir(os.path.join(CONF, d)))
        cdir = os.path.join(HERE, "cases")
        suites += sorted(os.path.join(cdir, d) for d in os.listdir(cdir) if os.path.isdir(os.path.join(cdir, d)))
        suites.append(os.path.join(HERE, "errors"))
    passed = failed = 0
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=2)
    cpool = concurrent.futures.ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2))
    with tempfile.TemporaryDirectory() as tmp:
        for si, suite in enumerate(suites):
            sname = os.path.basename(os.path.normpath(suite))
            work = os.path.join(tmp, "s%d" % si)
            os.makedirs(work)
            # (case id, source command, env, cwd, compile flags, render flags)
            cases = []
            if sname == "errors" and os.path.dirname(os.path.normpath(suite)) == HERE:
                for name, args, _ in error_cases(suite):
                    if not shard.mine(os.path.join(suite, name)):
                        continue
                    comp, rend = split_flags(args)
                    cases.append((sname + "/" + name, [tplc, "render", name] + args, None, suite, name, comp, rend))
            else:
                base_opts = runner.load_json(os.path.join(suite, "suite.json"), {}) or {}
                for tpl, stem in runner.cases_in(suite):
                    if not shard.mine(tpl):
                        continue
                    opts = dict(base_opts)
                    opts.update(runner.load_json(stem + ".opts.json", {}) or {})
                    cid = sname + "/" + os.path.basename(stem)
                    try:
                        cmd, env = runner.build_cmd(tplc, tpl, stem, opts, work)
                    except ValueError as e:
                        failed += 1
                        print("FAIL %s\n   %s" % (cid, e), flush=True)
                        continue
                    comp, rend = split_flags(cmd[3:])
                    cases.append((cid, cmd, env, None, tpl, comp, rend))

            def compile_one(i):
                cid, cmd, env, cwd, tpl, comp, rend = cases[i]
                src = run(cmd, env, cwd)
                cfile = os.path.join(work, "c%d.c" % i)
                cc_ = run([tplc, "compile", tpl] + comp + ["--emit", "c", "--native", "--name", "case_%d" % i,
                                                        "-o", cfile], env, cwd)
                return src, cc_, cfile

            results = list(pool.map(compile_one, range(len(cases))))
            built, todo = [], []
            for i, (src, cc_, cfile) in enumerate(results):
                cid = cases[i][0]
                if cc_[0] != 0:
                    if src[0] == cc_[0] and src[2] == cc_[2] and not os.path.exists(cfile):
                        passed += 1
                    else:
                        failed += 1
                        print("FAIL %s\n   compile failed: %r\n   source: %r" % (cid, cc_[2][:300], src[2][:300]), flush=True)
                else:
                    built.append(cfile)
                    todo.append(i)
            if not todo:
                continue
            lib = os.path.join(work, "suite.so")
            # One object per case, compiled in parallel (-O0: a 2.6 MB generated file takes minutes
            # at -O1 on one core), then one link.
            def build_one(cfile):
                return run(cc + ["-std=c11", "-Wall", "-Wextra", "-Werror", "-O0", "-fPIC", "-c", "-I" + inc,
                                 "-o", cfile[:-2] + ".o", cfile], timeout=1200)
            b = next((r for r in cpool.map(build_one, built) if r[0] != 0), None)
            if b is None:
                b = run(cc + ["-shared", "-o", lib] + [c[:-2] + ".o" for c in built], timeout=1200)
            if b[0] != 0:
                failed += len(todo)
                print("FAIL %s: the generated C does not build:\n%s" % (sname, b[2].decode("utf-8", "replace")[:3000]), flush=True)
                continue

            def render_one(i):
                cid, cmd, env, cwd, tpl, comp, rend = cases[i]
                return run([tplc, "render", lib, "--name", "case_%d" % i] + rend, env, cwd)

            for i, got in zip(todo, pool.map(render_one, todo)):
                cid, src = cases[i][0], results[i][0]
                if got == src:
                    passed += 1
                else:
                    failed += 1
                    print("FAIL %s\n   vm:     exit %s %r / %r\n   native: exit %s %r / %r" % (
                        cid, src[0], src[1][:200], src[2][:200], got[0], got[1][:200], got[2][:200]))
    if shard.spec():
        print("shard %d/%d of the corpus (TPL_TEST_SHARD)" % shard.spec())
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
