#!/usr/bin/env python3
"""Builds a seed corpus for the fuzz targets whose inputs are not conformance files as they are.

usage: seeds.py tplb TPLC OUTDIR DIR...   every .jinja/.erb/.fmt template in DIRs that compiles
                                          (with its NAME.opts.json profile/syntax when present)
                                          becomes OUTDIR/NAME.tplb via `tplc compile`
       seeds.py catalog OUTDIR DIR...     the "catalog" object of every NAME.opts.json in DIRs
                                          becomes OUTDIR/NAME.json
Prints how many seeds it wrote."""
import json, os, subprocess, sys

EXTS = {".jinja": "jinja", ".erb": "erb", ".fmt": "fmt"}


def opts_of(path):
    base = os.path.splitext(path)[0]
    try:
        with open(base + ".opts.json") as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def tplb(tplc, out, dirs):
    n = 0
    for d in dirs:
        for name in sorted(os.listdir(d)):
            base, ext = os.path.splitext(name)
            if ext not in EXTS:
                continue
            src = os.path.join(d, name)
            args = [tplc, "compile", src, "--syntax", EXTS[ext], "-o",
                    os.path.join(out, "%s-%s.tplb" % (os.path.basename(d), base))]
            o = opts_of(src)
            if isinstance(o.get("profile"), str):
                args += ["--profile", o["profile"]]
            if subprocess.run(args, capture_output=True, timeout=60).returncode == 0:
                n += 1
    return n


def catalog(out, dirs):
    n = 0
    for d in dirs:
        for name in sorted(os.listdir(d)):
            if not name.endswith(".opts.json"):
                continue
            cat = opts_of(os.path.join(d, name[: -len(".opts.json")]))
            if "catalog" in cat:
                with open(os.path.join(out, name[: -len(".opts.json")] + ".json"), "w") as f:
                    json.dump(cat["catalog"], f, ensure_ascii=False, indent=1)
                n += 1
    return n


def main(argv):
    if len(argv) >= 4 and argv[0] == "tplb":
        n = tplb(argv[1], argv[2], argv[3:])
    elif len(argv) >= 3 and argv[0] == "catalog":
        n = catalog(argv[1], argv[2:])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    print("%d seeds" % n)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
