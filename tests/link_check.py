#!/usr/bin/env python3
"""The layering at link time (issue 16): no object of a library layer refers to a symbol that only
a layer above it defines. include_check.py checks the #include lines; this checks what the objects
of libtpl actually call (`nm`), so a function declared in a low header but defined in a high
folder (the loader calling the compiler's name resolution, say) is caught too.

    runtime/ < stdlib/ < grammar/ < compiler/ < page/

The one sanctioned upward reference is tpl_stdlib: runtime/library.h declares the table of
builtin entry points, stdlib/library.c defines it. Exit 1 with one line per upward reference.

    link_check.py OBJECT_DIR   (libtpl's objects: BUILD/libtpl.so.X.Y.Z.p)
"""
import os
import subprocess
import sys

ORDER = ["runtime", "stdlib", "grammar", "compiler", "page"]
ALLOWED = {"tpl_stdlib"}


def layer(obj):
    """The layer of an object file by meson's name for it (runtime_vm.c.o, meson-generated_.._grammar_x.c.o)."""
    name = obj.replace("meson-generated_.._", "")
    for l in ORDER:
        if name.startswith(l + "_"):
            return l
    return None


def symbols(objdir, objs, defined):
    """{object: its defined (or undefined) symbols}, from one `nm` over every object (a process
    per object took minutes of wall time on a loaded machine: the test's timeout is 30 s)."""
    args = ["nm", "--defined-only" if defined else "--undefined-only"] + [os.path.join(objdir, o) for o in objs]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    by = {o: set() for o in objs}
    names = {os.path.join(objdir, o) + ":": o for o in objs}
    cur = None
    for line in out.splitlines():
        if line in names:
            cur = names[line]
            continue
        parts = line.split()
        if not parts or cur is None:
            continue
        if defined and len(parts) == 3 and parts[1] in "TDRBVWGSC":
            by[cur].add(parts[2])
        elif not defined and len(parts) >= 2 and parts[-2] == "U":
            by[cur].add(parts[-1])
    return by


def main():
    objdir = sys.argv[1]
    objs = [f for f in sorted(os.listdir(objdir)) if f.endswith(".o") and layer(f)]
    if not objs:
        print(f"link_check: no library objects in {objdir}")
        return 1
    defined_by = {}
    defs, undefs = symbols(objdir, objs, True), symbols(objdir, objs, False)
    for o in objs:
        for s in defs[o]:
            defined_by.setdefault(s, set()).add(layer(o))
    bad = []
    for o in objs:
        lo = ORDER.index(layer(o))
        for s in sorted(undefs[o]):
            if s in ALLOWED or s not in defined_by:
                continue
            owners = defined_by[s]
            if all(ORDER.index(l) > lo for l in owners):
                bad.append(f"{o}: calls {s}, defined in {'/'.join(sorted(owners))}/ (a layer above {layer(o)}/)")
    for b in bad:
        print(b)
    print(f"link_check: {len(objs)} objects, {len(bad)} references up the layer order")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
