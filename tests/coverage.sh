#!/usr/bin/env bash
# Line and branch coverage of compiler/, runtime/, grammar/ and stdlib/ over the whole test suite
# (gcovr; Debian package gcovr). Writes build-cov/coverage.html and prints the summary.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d build-cov ] || meson setup build-cov -Db_coverage=true >/dev/null
ninja -C build-cov >/dev/null
meson test -C build-cov >/dev/null || true
gcovr -r . --object-directory build-cov --filter '(compiler|runtime|grammar|stdlib)/' \
  --html-details build-cov/coverage.html -s | tail -4
