#!/usr/bin/env python3
"""The shared library exports exactly the public API (issue 13 §3, issue 16 "Exports").

usage: exports.py LIBTPL.so HEADER...

Fails when `nm -D --defined-only` lists a symbol not named tpl_* (an internal name a host could
clash with), when a TPL_API function of the headers is not exported, when an exported function
is not declared TPL_API, or when the library has no versioned soname."""
import re
import subprocess
import sys

lib, headers = sys.argv[1], sys.argv[2:]
out = subprocess.run(['nm', '-D', '--defined-only', lib], check=True, capture_output=True,
                     text=True).stdout
exported = set()
for line in out.splitlines():
    parts = line.split()
    # a lower-case type letter is a LOCAL symbol: listed in .dynsym (GNU ld 2.40 puts the
    # __start_/__stop_ symbols of the fuzz build's __sancov_* sections there), not exported
    if len(parts) >= 3 and (parts[1] == 'u' or not parts[1].islower()):  # 'u': unique global
        exported.add(parts[2].split('@')[0])
declared = set()
for h in headers:
    text = open(h, encoding='utf-8').read()
    # a declaration may span lines: TPL_API <type> [*]name(
    for m in re.finditer(r'^TPL_API\b[^(;]*?\b(\w+)\s*\(', text, re.M):
        declared.add(m.group(1))
bad = sorted(s for s in exported if not s.startswith('tpl_'))
missing = sorted(declared - exported)
extra = sorted(exported - declared)
ok = True
if not declared:
    print('no TPL_API declaration found in', headers); ok = False
if bad:
    print(f'{len(bad)} exported symbols not named tpl_*:', ' '.join(bad[:40])); ok = False
if missing:
    print('TPL_API functions not exported:', ' '.join(missing)); ok = False
if extra:
    print('exported but not declared TPL_API in the headers:', ' '.join(extra)); ok = False
dyn = subprocess.run(['readelf', '-d', lib], check=True, capture_output=True, text=True).stdout
m = re.search(r'\(SONAME\)\s+Library soname: \[([^\]]+)\]', dyn)
if not m or not re.fullmatch(r'libtpl\.so\.\d+', m.group(1)):
    print('soname missing or unversioned:', m.group(1) if m else None); ok = False
print(f'{len(exported)} exported, {len(declared)} declared TPL_API, soname {m.group(1) if m else None}')
sys.exit(0 if ok else 1)
