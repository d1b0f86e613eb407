#!/usr/bin/env bash
# Builds tpl and runs every test:
#   build        gcc, -Werror: the whole suite (native-conformance: half of the corpus, -Dnative_shard=0/2)
#   build-release gcc -O3, -Werror: builds everything (its warnings differ), runs the core tests
#   build-clang  clang, -Werror: the whole suite (native-conformance: the other half, -Dnative_shard=1/2)
#   build-asan   ASan+UBSan: the whole suite but native-conformance (~10 min a stage; gcc and clang run it)
#   build-tsan   ThreadSanitizer: the concurrent-render test
#   build-fuzz   clang + libFuzzer + ASan/UBSan: the whole suite but native-conformance, and a smoke run of each fuzz target
#                (the two ASan+UBSan trees split the corpus-wide tests: -Dtest_shard=0/2 and 1/2, tests/shard.py;
#                every template of the corpus runs under the sanitizers once)
#   valgrind     memcheck over the unit tests and tplc on a subset of the conformance corpus
# The last line is "N passed, N failed" over all of them.
set -uo pipefail
cd "$(dirname "$0")/.."
status=0
dirs=()
run() { # dir, [meson setup args...] ; TESTS selects test names (default: all)
  local dir=$1; shift
  dirs+=("$dir")
  if [ ! -d "$dir" ]; then
    meson setup "$dir" --werror "$@" >"/tmp/tpl-setup-$dir.log" 2>&1 || { cat "/tmp/tpl-setup-$dir.log"; status=1; return; }
  fi
  ninja -C "$dir" >"/tmp/tpl-build-$dir.log" 2>&1 || { cat "/tmp/tpl-build-$dir.log"; status=1; return; }
  echo "== $dir"
  # shellcheck disable=SC2086
  meson test -C "$dir" --print-errorlogs --no-rebuild --timeout-multiplier 10 ${TESTS:-} || status=1
}
run build -Dnative_shard=0/2
TESTS="core stdlib" run build-release --buildtype=release   # -O3: gcc's flow warnings differ
CC=clang run build-clang -Dnative_shard=1/2
TESTS='--no-suite native' run build-asan -Dtest_shard=0/2 -Db_sanitize=address,undefined -Db_lundef=false -Dc_args=-fno-sanitize-recover=all -Dc_link_args=-fno-sanitize-recover=all
TESTS=threads run build-tsan -Db_sanitize=thread -Db_lundef=false
TESTS='--no-suite native' CC=clang run build-fuzz -Dtest_shard=1/2 -Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false
tests/valgrind.sh build >/tmp/tpl-valgrind.log 2>&1 || status=1
tail -n 3 /tmp/tpl-valgrind.log
python3 tests/summary.py "${dirs[@]}" --extra /tmp/tpl-valgrind.log
exit $status
