#!/usr/bin/env bash
# Line and branch coverage of compiler/, runtime/, grammar/ and stdlib/ over the whole test suite
# (gcovr; Debian package gcovr). Writes build-cov/coverage.html and prints the summary.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v gcovr >/dev/null || apt-get install -y gcovr >/dev/null || { apt-get update >/dev/null && apt-get install -y gcovr >/dev/null; }
[ -d build-cov ] || meson setup build-cov -Db_coverage=true >/dev/null
find build-cov -name '*.gcda' -delete 2>/dev/null || true  # counts of this run only
ninja -C build-cov >/dev/null
meson test -C build-cov >/dev/null || true
gcovr -r . --object-directory build-cov --filter '(compiler|runtime|grammar|stdlib)/' \
  --html-details build-cov/coverage.html -s | tail -4
