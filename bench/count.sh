#!/usr/bin/env bash
# Instructions per render (or per compile) of each workload, counted by callgrind: unlike times,
# these do not move with machine load, so they compare two builds on a busy machine.
#
#   bench/count.sh [BUILD_DIR] [render|compile] [WORKLOAD...]   (default: build-bench, render, all)
#
# BENCH_DIALECT=erb (or fmt) counts template.erb (template.fmt) instead of template.jinja;
# BENCH_NATIVE=1 counts the native views (tpl-count-native) instead of the VM.
# Each workload runs under valgrind twice (N=20 and N=220); the difference over 200 is the figure.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build-bench}
mode=${2:-render}
shift $(( $# > 2 ? 2 : $# ))
shared=${BENCH_SHARED:-$here/../shared/bench}
exe="$build/bench/tpl-count"
[ "${BENCH_NATIVE:-0}" = 1 ] && exe="$build/bench/tpl-count-native" # the native views (issue 21)
ninja -C "$build" "bench/$(basename "$exe")" >/dev/null
ws=("$@")
[ ${#ws[@]} -gt 0 ] || ws=(w1_agent w2_loop w3_static w4_chat w5_format)
count() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$exe" "$shared/workloads/$1" "$2" "$mode" 2>&1 |
          awk '/refs:/ { gsub(",", "", $4); print $4 }'; }
for w in "${ws[@]}"; do
  a=$(count "$w" 20); b=$(count "$w" 220)
  echo "$w $mode: $(( (b - a) / 200 )) instructions"
done
