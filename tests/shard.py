#!/usr/bin/env python3
"""Splits the corpus-wide tests between build trees (CI time: tests/check.sh runs the corpus
under ASan+UBSan in two trees, gcc's build-asan and clang's build-fuzz; each takes half of it,
so every template still runs under the sanitizers once).

TPL_TEST_SHARD=I/N (meson option test_shard): a test keeps only the templates whose key hashes
to I modulo N. The key is the template's folder name and file name ("SUITE/NAME.jinja"), stable
across checkouts and the same in every corpus-wide test, so a template's checks all run in the
same tree. Unset or empty: every template.

As a script: shard.py I/N|'' RUNNER ARGS... runs a conformance runner (../shared/conformance/run)
with TPL_TEST_SHARD=I/N, its cases_in() keeping this shard's templates only.
"""
import importlib.machinery
import importlib.util
import os
import sys
import zlib


def spec():
    """(I, N) from TPL_TEST_SHARD, or None for every template."""
    s = os.environ.get("TPL_TEST_SHARD", "").strip()
    if s in ("", "all"):
        return None
    i, n = (int(x) for x in s.split("/"))
    if not 0 <= i < n:
        raise SystemExit("TPL_TEST_SHARD=%s: I/N with 0 <= I < N" % s)
    return i, n


def key(path):
    path = os.path.normpath(path)
    return os.path.basename(os.path.dirname(path)) + "/" + os.path.basename(path)


def mine(path, sp=None):
    """Whether this shard runs the template at path."""
    sp = sp if sp is not None else spec()
    return sp is None or zlib.crc32(key(path).encode("utf-8", "surrogateescape")) % sp[1] == sp[0]


def describe():
    sp = spec()
    return "" if sp is None else " (shard %d/%d of the corpus: TPL_TEST_SHARD)" % sp


def load(path, name):
    loader = importlib.machinery.SourceFileLoader(name, path)
    s = importlib.util.spec_from_loader(name, loader)
    mod = importlib.util.module_from_spec(s)
    loader.exec_module(mod)
    return mod


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    os.environ["TPL_TEST_SHARD"] = argv[0]
    sp = spec()
    runner = load(argv[1], "conformance_run")
    if sp is not None:
        cases_in = runner.cases_in
        runner.cases_in = lambda suite: (c for c in cases_in(suite) if mine(c[0], sp))
        print("shard %d/%d of the corpus (TPL_TEST_SHARD)" % sp)
    return runner.main(argv[2:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
