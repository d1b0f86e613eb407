#!/usr/bin/env python3
"""Every public function is in the NULL-argument test (issue 13 §3), so a new one cannot be
forgotten: each TPL_API function declared in the headers must be called in the NULL-argument
section of tests/test_api.c (between the "NULL-ARGUMENT TEST" and "NULL-ARGUMENT TEST END" lines).

usage: api_null_check.py tests/test_api.c HEADER..."""
import re
import sys

test, headers = sys.argv[1], sys.argv[2:]
declared = []
for h in headers:
    for m in re.finditer(r'^TPL_API\b[^(;]*?\b(\w+)\s*\(', open(h, encoding='utf-8').read(), re.M):
        declared.append(m.group(1))
src = open(test, encoding='utf-8').read()
m = re.search(r'NULL-ARGUMENT TEST:(.*?)NULL-ARGUMENT TEST END', src, re.S)
if not m:
    sys.exit('the NULL-ARGUMENT TEST section is not in ' + test)
body = m.group(1)
missing = [f for f in declared if not re.search(r'\b' + f + r'\s*\(', body)]
print(f'{len(declared)} TPL_API functions, {len(declared) - len(missing)} called in the NULL-argument section')
if not declared or missing:
    print('not called in the NULL-argument section:', ' '.join(missing))
    sys.exit(1)
