#!/usr/bin/env python3
"""Every conformance case renders identically from source and from its .tplb.

usage: tplb_conformance.py TPLC [SUITE_DIR ...]

For each case of ../shared/conformance (Jinja, ERB and format-string templates; syntaxes tpl cannot compile
yet are skipped), compiles the template with `tplc compile` and the case's compile-time flags
into a temporary .tplb, then compares `tplc render X.tplb` (render-time flags only) with
`tplc render X.jinja` (all flags): exit status, stdout and stderr must be byte-identical. A
template that fails to compile must fail `tplc compile` with the same exit status and message.
The last line is 'N passed, N failed'.
"""
import concurrent.futures, importlib.machinery, importlib.util, os, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import shard  # noqa: E402  (TPL_TEST_SHARD: this tree's half of the corpus, tests/shard.py)

HERE = os.path.dirname(os.path.abspath(__file__))
CONF = os.path.normpath(os.path.join(HERE, "..", "..", "shared", "conformance"))
COMPILE_FLAGS = {"--trim-blocks", "--lstrip-blocks", "--keep-trailing-newline", "--strict", "--tidy"}
COMPILE_VALUED = {"--syntax", "--profile"}


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


def run(cmd, env):
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=60, env=env)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return None, b"", b"timeout"


def check_case(tplc, runner, cid, tpl, stem, opts, tmp):
    """One case from source and from its .tplb (in the folder tmp): None, or the failure's text."""
    os.mkdir(tmp)
    try:
        cmd, env = runner.build_cmd(tplc, tpl, stem, opts, tmp)
    except ValueError as e:
        return "FAIL %s\n   %s" % (cid, e)
    comp, rend = split_flags(cmd[3:])
    tplb = os.path.join(tmp, "case.tplb")
    src = run(cmd, env)
    if src[0] == 2:  # a usage error: every flag of the case format is supported
        return "FAIL %s\n   usage error rendering from source: %r" % (cid, src[2][:300])
    cc = run([tplc, "compile", tpl] + comp + ["-o", tplb], env)
    if cc[0] != 0:
        # a compile error must be the same error as rendering from source
        ok = src[0] == cc[0] and src[2] == cc[2] and not os.path.exists(tplb)
        why = "compile failed: %r" % cc[2][:300]
    else:
        got = run([tplc, "render", tplb] + rend, env)
        ok = got == src
        why = "source: exit %s %r / %r\n   tplb:   exit %s %r / %r" % (
            src[0], src[1][:200], src[2][:200], got[0], got[1][:200], got[2][:200])
    return None if ok else "FAIL %s\n   %s" % (cid, why)


def main(argv):
    if not argv:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    tplc = os.path.abspath(argv[0])
    runner = load_runner()
    suites = argv[1:] or sorted(os.path.join(CONF, d) for d in os.listdir(CONF)
                                if os.path.isdir(os.path.join(CONF, d)))
    cases = []  # (case id, template, stem, options)
    for suite in suites:
        sname = os.path.basename(os.path.normpath(suite))
        base_opts = runner.load_json(os.path.join(suite, "suite.json"), {}) or {}
        for tpl, stem in runner.cases_in(suite):
            if not shard.mine(tpl):
                continue
            opts = dict(base_opts)
            opts.update(runner.load_json(stem + ".opts.json", {}) or {})
            cases.append((sname + "/" + os.path.basename(stem), tpl, stem, opts))
    with tempfile.TemporaryDirectory() as tmp:
        # (two workers, each case in a folder of its own: the 2-core CI machine, when meson runs
        # this test alone at the end of a tree)
        jobs = [(c, os.path.join(tmp, str(i))) for i, c in enumerate(cases)]
        with concurrent.futures.ThreadPoolExecutor(max_workers=min(2, os.cpu_count() or 1)) as pool:
            results = list(pool.map(lambda j: check_case(tplc, runner, *j[0], j[1]), jobs))
    passed = failed = 0
    for why in results:
        if why is None:
            passed += 1
        else:
            failed += 1
            print(why)
    if shard.spec():
        print("shard %d/%d of the corpus (TPL_TEST_SHARD)" % shard.spec())
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
