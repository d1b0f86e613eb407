#!/usr/bin/env python3
"""The layering check (issue 16, docs/architecture.md): every #include of the library's folders
goes down the layer order, never up or sideways, and the layers above the engine use only the
public headers.

    runtime/ < stdlib/ < grammar/ < compiler/ < (public API: include/*.h)
    tplc/, page/, store/: include/*.h and their own folder's headers only

A folder may include its own headers and any header of a folder below it; include/*.h (the
public declarations: status codes, options, error records) may be included by every layer.
Inside stdlib/ the language folders (py/, jinja/, ruby/, fmt/, prompt/) include only their own
headers and stdlib/'s top (the builtin table, builtins.h), never each other: what one language
needs of another goes through builtins.h.
Generated headers (the Lemon parsers' token files, unicode_tables.h) belong to the folder that
generates them. Exit 1 with one line per bad include, else 0.

    include_check.py SOURCE_ROOT
"""
import os
import re
import sys

ORDER = ["runtime", "stdlib", "grammar", "compiler"]
PUBLIC_ONLY = ["tplc", "page", "store"]
GENERATED = {"jinja_parse.h": "grammar", "erb_parse.h": "grammar", "unicode_tables.h": "runtime",
             "unicode_names.h": "runtime"}
SUFFIXES = (".c", ".h", ".def", ".re", ".y")
STDLIB_LANGS = ["py", "jinja", "ruby", "fmt", "prompt"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def resolve(root, src_dir, target):
    """The path (relative to root) a quoted include resolves to, or None when not found."""
    for cand in (os.path.join(src_dir, target), os.path.join(root, target), os.path.join(root, "include", target),
                 os.path.join(root, "grammar", target)):
        if os.path.isfile(cand):
            return os.path.relpath(os.path.realpath(cand), os.path.realpath(root))
    return None


def stdlib_lang(rel):
    """The stdlib language folder of a path relative to the root (stdlib/py/x.c: "py"), or None."""
    parts = rel.split(os.sep)
    return parts[1] if len(parts) > 2 and parts[0] == "stdlib" and parts[1] in STDLIB_LANGS else None


def owner(root, src_dir, target):
    """The folder (top-level name) a quoted include resolves to, or None when not found."""
    base = os.path.basename(target)
    if base in GENERATED:
        return GENERATED[base]
    for cand in (os.path.join(src_dir, target), os.path.join(root, target), os.path.join(root, "include", target),
                 os.path.join(root, "grammar", target)):
        if os.path.isfile(cand):
            rel = os.path.relpath(os.path.realpath(cand), os.path.realpath(root))
            return rel.split(os.sep)[0]
    return None


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    bad = []
    checked = 0
    for folder in ORDER + PUBLIC_ONLY:
        top = os.path.join(root, folder)
        for dirpath, _, files in os.walk(top):
            for f in sorted(files):
                if not f.endswith(SUFFIXES):
                    continue
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, root)
                with open(path, encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
                for m in INCLUDE.finditer(text):
                    checked += 1
                    line = text.count("\n", 0, m.start()) + 1
                    target = m.group(1)
                    who = owner(root, dirpath, target)
                    if who is None:
                        bad.append(f"{rel}:{line}: #include \"{target}\": not found")
                    elif who == folder and folder == "stdlib":
                        lang, tlang = stdlib_lang(rel), stdlib_lang(resolve(root, dirpath, target) or "")
                        if lang and tlang and lang != tlang:
                            bad.append(f"{rel}:{line}: #include \"{target}\": stdlib/{lang}/ may not include stdlib/{tlang}/ (sideways)")
                    elif who == folder or who == "include":
                        continue
                    elif folder in PUBLIC_ONLY:
                        bad.append(f"{rel}:{line}: #include \"{target}\": {folder}/ uses only the public headers (include/)")
                    elif who not in ORDER:
                        bad.append(f"{rel}:{line}: #include \"{target}\": {who}/ is not a library layer")
                    elif ORDER.index(who) > ORDER.index(folder):
                        bad.append(f"{rel}:{line}: #include \"{target}\": {folder}/ may not include {who}/ (a layer above it)")
    for b in bad:
        print(b)
    if checked == 0:
        print("include_check: no #include lines found (wrong source root?)")
        return 1
    print(f"include_check: {checked} includes, {len(bad)} against the layer order")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
