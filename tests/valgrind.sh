#!/usr/bin/env bash
# Valgrind memcheck (no leak, no invalid access) over the in-process unit tests, and over tplc on
# the pinecall, jinja-core and fmt-core suites. Usage: tests/valgrind.sh BUILD_DIR
# Prints "N passed, N failed" (unit tests count one each, conformance cases by case).
set -uo pipefail
cd "$(dirname "$0")/.."
b=${1:-build}
vg=(valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect)
passed=0 failed=0
# (the 2-core CI machine: the conformance subset runs as two halves (tests/shard.py) beside the
# unit tests, three valgrind processes at a time)
wrap=$(mktemp)
printf '#!/bin/sh\nexec %s "%s" "$@"\n' "${vg[*]}" "$(cd "$b" && pwd)/tplc" > "$wrap"
chmod +x "$wrap"
outs=()
pids=()
for s in 0/2 1/2; do
  out=$(mktemp)
  outs+=("$out")
  python3 tests/shard.py "$s" ../shared/conformance/run "$wrap" ../shared/conformance/pinecall ../shared/conformance/jinja-core \
    ../shared/conformance/fmt-core --known tests/known-failures.txt --timeout 60 >"$out" 2>&1 &
  pids+=($!)
done
for t in test_core test_runtime test_stdlib test_erb; do
  if "${vg[@]}" "$b/tests/$t" >/tmp/tpl-vg-$t.log 2>&1; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL valgrind $t"; tail -20 /tmp/tpl-vg-$t.log; fi
done
# the page layer: reads located, page folders, calls step by step, the state scanner (issue 18)
if "${vg[@]}" "$b/tests/test_page" tests/page examples/front-desk >/tmp/tpl-vg-test_page.log 2>&1; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL valgrind test_page"; tail -20 /tmp/tpl-vg-test_page.log
fi
for i in 0 1; do
  wait "${pids[$i]}"
  out=$(cat "${outs[$i]}")
  rm -f "${outs[$i]}"
  echo "$out" | grep -E "^FAIL" | head -20
  last=$(echo "$out" | tail -n 1)
  p=$(echo "$last" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p')
  f=$(echo "$last" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p')
  passed=$((passed + ${p:-0})); failed=$((failed + ${f:-1}))
done
rm -f "$wrap"
echo "valgrind: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
