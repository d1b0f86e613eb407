#!/usr/bin/env python3
"""One bytecode, not two interpreters: `tplc dump` of a view written in ERB and of the same view
written in Jinja must show the same opcode kinds, in the same order, once each syntax's semantic
variant is folded (JF_RB and JF_PY are both JF: only truthiness differs) and each superinstruction
is read as its base (the peephole pass fuses per syntax as the VM's fast paths allow). The sequence must also
match the golden list in view.ops.

usage: check.py TPLC DIR   (DIR holds view.erb, view.jinja and view.ops)"""
import os, re, subprocess, sys


def superinstructions():
    """Each superinstruction of runtime/opcodes.def (TPL_FUSED rows) → its base opcode: the
    peephole pass's choice, not a semantic difference between the syntaxes."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "runtime", "opcodes.def")
    with open(path) as f:
        return dict(re.findall(r"^TPL_FUSED\(\s*(\w+),\s*(\w+),", f.read(), re.M))


def kinds(tplc, path):
    out = subprocess.run([tplc, "dump", path], check=True, capture_output=True, text=True).stdout
    base = superinstructions()
    ops = []
    for line in out.splitlines()[1:]:
        parts = line.split()
        if len(parts) >= 2:
            ops.append(re.sub(r"_(RB|PY)$", "", base.get(parts[1], parts[1])))
    return ops


def main():
    tplc, d = sys.argv[1], sys.argv[2]
    erb = kinds(tplc, os.path.join(d, "view.erb"))
    jinja = kinds(tplc, os.path.join(d, "view.jinja"))
    with open(os.path.join(d, "view.ops")) as f:
        golden = f.read().split()
    ok = True
    if erb != jinja:
        print("ERB and Jinja dumps differ:\n  erb:   %s\n  jinja: %s" % (" ".join(erb), " ".join(jinja)))
        ok = False
    if erb != golden:
        print("dump differs from view.ops:\n  got:    %s\n  golden: %s" % (" ".join(erb), " ".join(golden)))
        ok = False
    print("same opcode kinds (%d instructions)" % len(erb) if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
