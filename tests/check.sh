#!/usr/bin/env bash
# Builds tpl and runs every test: once with gcc -Werror, once with clang, once under ASan+UBSan,
# and the fuzz targets briefly (clang, libFuzzer).
# The last line is "N passed, N failed" over all test runs.
set -uo pipefail
cd "$(dirname "$0")/.."
status=0
run() { # name, meson setup args...
  local dir=$1; shift
  if [ ! -d "$dir" ]; then
    meson setup "$dir" --werror "$@" >"/tmp/tpl-setup-$dir.log" 2>&1 || { cat "/tmp/tpl-setup-$dir.log"; status=1; return; }
  fi
  ninja -C "$dir" >"/tmp/tpl-build-$dir.log" 2>&1 || { cat "/tmp/tpl-build-$dir.log"; status=1; return; }
  echo "== $dir"
  meson test -C "$dir" --print-errorlogs --no-rebuild || status=1
}
run build
CC=clang run build-clang
run build-asan -Db_sanitize=address,undefined -Db_lundef=false
# libFuzzer smoke run of every fuzz target (20 s each), clang with ASan+UBSan
CC=clang run build-fuzz -Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false
python3 tests/summary.py build build-clang build-asan build-fuzz
exit $status
