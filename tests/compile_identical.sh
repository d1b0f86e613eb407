#!/usr/bin/env bash
# Issue 21 (compile time): two tplc builds compile every template of the conformance suites,
# tests/cases, tests/errors, the benchmark workloads and examples/ to the same programs.
#
#   tests/compile_identical.sh OLD_TPLC NEW_TPLC
#
# Each template is compiled with `tplc compile -o OUT.tplb` under three flag sets (none;
# --trim-blocks --lstrip-blocks; --strict --keep-trailing-newline), from its own directory (so
# includes and imports resolve as in the suites); the .tplb bytes, the exit status and the error
# text (a located compile error: FILE:LINE:COL + source line + caret) must be identical.
# Prints the differing templates and exits 1 when any differ. Meant for a change to the front end
# or the compile driver that must not change what is compiled (run it by hand, before and after).
set -u
old=$(realpath "$1"); new=$(realpath "$2")
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
dirs=("$here/../shared/conformance" "$here/tests/cases" "$here/tests/errors" "$here/../shared/bench/workloads" "$here/examples")
flagsets=("" "--trim-blocks --lstrip-blocks" "--strict --keep-trailing-newline")
n=0; bad=0
while IFS= read -r -d '' f; do
  d=$(dirname "$f"); b=$(basename "$f")
  for fl in "${flagsets[@]}"; do
    # shellcheck disable=SC2086
    (cd "$d" && timeout 20 "$old" compile "$b" $fl -o "$tmp/a.tplb" >"$tmp/a.err" 2>&1; echo "rc=$?" >>"$tmp/a.err")
    # shellcheck disable=SC2086
    (cd "$d" && timeout 20 "$new" compile "$b" $fl -o "$tmp/b.tplb" >"$tmp/b.err" 2>&1; echo "rc=$?" >>"$tmp/b.err")
    n=$((n + 1))
    if ! cmp -s "$tmp/a.err" "$tmp/b.err"; then
      bad=$((bad + 1)); echo "DIFF (error/status) $f [$fl]"; diff "$tmp/a.err" "$tmp/b.err" | head -5
    elif [ -f "$tmp/a.tplb" ] || [ -f "$tmp/b.tplb" ]; then
      if ! cmp -s "$tmp/a.tplb" "$tmp/b.tplb"; then bad=$((bad + 1)); echo "DIFF (program) $f [$fl]"; fi
    fi
    rm -f "$tmp/a.tplb" "$tmp/b.tplb"
  done
done < <(find "${dirs[@]}" -type f \( -name '*.jinja' -o -name '*.erb' -o -name '*.fmt' -o -name '*.j2' \) -print0 | sort -z)
echo "compile_identical: $n compiles, $bad differ"
[ "$bad" -eq 0 ]
