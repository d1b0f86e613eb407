#!/usr/bin/env bash
# Render time of the VM and of the native views against c-hand, timed in one process (issue 21):
#
#   bench/hand_ratio.sh [BUILD_DIR] [WORKLOAD...]   (default: build-bench, w1_agent w2_loop w4_chat)
#
# w3_static is timed against memcpy of its expected output into a reused buffer instead of c-hand.
# A copy of 64 KiB by glibc's `rep movsb` on this machine's CPU takes up to ~1.35x longer when the
# destination is a little ahead of the source modulo 4096 bytes (bench/RESULTS.md, session 37), so
# w3's ratio depends on where each process's buffers happen to lie, in the reference too.
#
# BUILD_DIR should be a release build (`meson setup build-bench --buildtype=release`). Each
# workload runs tpl-hand-ratio (bench/hand_ratio.c): c-hand, the VM and the native view take turns
# in batches; the fastest batch (min) and the 10th percentile are the figures that machine load
# moves least. HR_BATCH / HR_ROUNDS override the batch size and the number of rounds.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build-bench}
shift $(( $# > 0 ? 1 : 0 ))
shared=${BENCH_SHARED:-$here/../shared/bench}
ninja -C "$build" bench/tpl-hand-ratio >/dev/null
ws=("$@")
[ ${#ws[@]} -gt 0 ] || ws=(w1_agent w2_loop w4_chat)
for w in "${ws[@]}"; do
  args=()
  [ -n "${HR_BATCH:-}" ] && args=("${HR_BATCH}" "${HR_ROUNDS:-300}")
  "$build/bench/tpl-hand-ratio" "$shared/workloads/$w" "${args[@]}"
done
