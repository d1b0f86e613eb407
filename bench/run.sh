#!/usr/bin/env bash
# Runs tpl and every anchor engine side by side with the shared harness and writes
# bench/RESULTS.md.
#
#   bench/run.sh                                   # full run: 5 reps, BENCH_TIME=1.0 (~15 min)
#   REPS=3 BENCH_TIME=0.5 bench/run.sh             # quicker
#   ENGINES=tpl-jinja,ejs,tera,memcpy bench/run.sh # subset (names from engines.tsv)
#   BENCH_WORKLOADS=w1_agent,w5_format bench/run.sh
#   NO_INSTALL=1 NO_BUILD=1 NO_GEN=1 BENCH_OUT=/tmp/r.md ENGINES=c-hand,c-fmt-naive,memcpy,tpl-jinja,tpl-native bench/run.sh
#     # tpl against the C references only: no apt-get / npm, only the C references built (their
#     # Makefile), the shared workloads as they are, the report written to BENCH_OUT alone (the
#     # default bench/RESULTS.md keeps its hand-written sections from "## Python:" on)
#
# Steps: build tpl-bench in build-bench/ (release, -O3); install the anchors' dependencies when
# missing (ruby-erubi, librust-tera-dev via apt-get; the node modules via npm ci in the copy);
# copy ../shared/bench (read-only in CI) to a temporary folder; register tpl-jinja, tpl-erb and
# tpl-fmt in its engines.tsv; run its run_all.sh (interleaved repetitions, rotated order, one
# process per (engine, workload)); copy its RESULTS.md to bench/RESULTS.md with a header naming
# the machine, the date, the commit and the settings, plus tpl's allocation and memory figures.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
shared=${BENCH_SHARED:-$here/../shared/bench}
build=${BENCH_BUILD:-$here/build-bench}
export REPS=${REPS:-5} BENCH_TIME=${BENCH_TIME:-1.0} BENCH_COMPILE_TIME=${BENCH_COMPILE_TIME:-0.3}

# 1. tpl-bench, optimised build
if [ ! -d "$build" ]; then
  meson setup "$build" "$here" --buildtype=release -Db_ndebug=true >/dev/null
fi
ninja -C "$build" bench/tpl-bench bench/tpl-bench-native tplc >/dev/null
bin="$build/bench/tpl-bench"
nbin="$build/bench/tpl-bench-native"   # the workloads' Jinja views compiled to native C (issue 21)

# 2. anchors' one-time installs (see ../shared/bench/README.md, "Setup")
need=()
[ -n "${NO_INSTALL:-}" ] || {
ruby -e 'require "erubi"' 2>/dev/null || need+=(ruby ruby-erubi)
ls -d /usr/share/cargo/registry/tera-* >/dev/null 2>&1 || need+=(librust-tera-dev)
command -v cargo >/dev/null || need+=(cargo)
if [ ${#need[@]} -gt 0 ] && command -v apt-get >/dev/null; then
  echo "[run.sh] installing: ${need[*]}"
  (apt-get install -y "${need[@]}" || { apt-get update && apt-get install -y "${need[@]}"; }) >/dev/null || true
fi
}

# 3. a writable copy of the shared harness with tpl registered
work=$(mktemp -d /tmp/tpl-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
cp -r "$shared/." "$work/"
# keep previously built anchors if the shared copy has them; node modules are installed once
# into a cache beside the build and linked in
nm_cache="$build/node_modules-cache"
if [ ! -d "$work/engines/node/node_modules" ]; then
  if [ ! -d "$nm_cache/node_modules" ] && [ -z "${NO_INSTALL:-}" ]; then
    mkdir -p "$nm_cache"
    cp "$work/engines/node/package.json" "$work/engines/node/package-lock.json" "$nm_cache/"
    (cd "$nm_cache" && npm ci --no-audit --no-fund >/dev/null 2>&1) || echo "[run.sh] npm ci failed: node engines unavailable"
  fi
  [ -d "$nm_cache/node_modules" ] && ln -s "$nm_cache/node_modules" "$work/engines/node/node_modules"
fi
# the Tera build is cached too (cargo target dir)
mkdir -p "$build/tera-target"
ln -s "$build/tera-target" "$work/engines/tera/target"
{
  echo "tpl-jinja       engine     env BENCH_DIALECT=jinja $bin"
  echo "tpl-erb         engine     env BENCH_DIALECT=erb $bin"
  echo "tpl-fmt         engine     env BENCH_DIALECT=fmt $bin"
  echo "tpl-native      engine     env BENCH_DIALECT=jinja $nbin"
} >> "$work/engines.tsv"

# 4. run (NO_BUILD=1 skips run_all.sh's build.sh: the C references are still built, by their Makefile)
[ -z "${NO_BUILD:-}" ] || make -C "$work/engines/c" >/dev/null
(cd "$work" && ./run_all.sh)

# 5. bench/RESULTS.md: header + tpl's extra fields + the shared report, then the sections
# written by hand from other benchmarks (the Python package's, the prompt store's: from the
# "## Python:" heading to the end), kept as they are
out=${BENCH_OUT:-$here/bench/RESULTS.md}
kept="$work/kept-sections.md"
if [ -z "${BENCH_OUT:-}" ] && [ -f "$out" ]; then sed -n '/^## Python: /,$p' "$out" > "$kept"; else : > "$kept"; fi
{
  echo "# tpl vs the anchors"
  echo
  echo "Written by \`bench/run.sh\` ($(date -u +%Y-%m-%d)); commit \`$(git -C "$here" rev-parse --short HEAD)\`$(git -C "$here" diff --quiet HEAD -- . ':!bench/RESULTS.md' 2>/dev/null || echo ' (with local changes)')."
  echo
  echo "- Machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) logical CPUs, $(uname -sr)"
  echo "- Settings: REPS=$REPS BENCH_TIME=$BENCH_TIME BENCH_COMPILE_TIME=$BENCH_COMPILE_TIME${ENGINES:+ ENGINES=$ENGINES}${BENCH_WORKLOADS:+ BENCH_WORKLOADS=$BENCH_WORKLOADS}"
  echo "- tpl: \`tpl-bench\` built with \`--buildtype=release\` ($(cc --version | head -1)); Jinja with trim_blocks + lstrip_blocks, autoescape off."
  echo
  echo "## tpl: heap allocations per steady-state render and peak memory"
  echo
  echo "| workload | allocs/render | bytes/render | allocs in the first render | peak RSS of tpl-bench (KiB) |"
  echo "| :--- | ---: | ---: | ---: | ---: |"
  python3 - "$work/results/raw" <<'EOF'
import json, os, sys
raw = sys.argv[1]
rows = {}
for rep in sorted(os.listdir(raw)):
    p = os.path.join(raw, rep, "tpl-jinja.jsonl")
    if not os.path.exists(p):
        continue
    for line in open(p):
        try:
            d = json.loads(line)
        except ValueError:
            continue
        if "allocs_per_render" in d:
            rows.setdefault(d["workload"], d)
for w in sorted(rows):
    d = rows[w]
    print("| %s | %g | %g | %d | %d |" % (w, d["allocs_per_render"], d["alloc_bytes_per_render"],
                                        d.get("allocs_first_render", 0), d["peak_rss_kib"]))
EOF
  rss=$( { /usr/bin/time -f %M "$build/tplc" render "$work/workloads/w2_loop/template.jinja" \
           --state "$work/workloads/w2_loop/context.json" --trim-blocks --lstrip-blocks -o "$work/w2.out"; } 2>&1 | tail -1)
  echo
  echo "Peak RSS of \`tplc render\` on w2_loop (GNU time %M): ${rss} KiB."
  echo
  echo "## Every engine against hand-written C (issue 21)"
  echo
  echo "Render time ÷ the reference's, from the medians of this run: c-hand for w1, w2 and w4,"
  echo "c-fmt-naive for w5, memcpy for w3 (the static text). 1.00× = as fast as the reference."
  echo
  python3 - "$work/results/summary.json" <<'EOF'
import json, sys
rows = json.load(open(sys.argv[1]))
ref = {"w1_agent": "c-hand", "w2_loop": "c-hand", "w4_chat": "c-hand", "w5_format": "c-fmt-naive", "w3_static": "memcpy"}
t = {(r["engine"], r["workload"]): r["render_ns_median"] for r in rows}
engines = [e for e in dict.fromkeys(r["engine"] for r in rows if r["kind"] == "engine")]
wls = sorted(dict.fromkeys(r["workload"] for r in rows))
print("| workload (reference) | " + " | ".join(engines) + " |")
print("| :--- |" + " ---: |" * len(engines))
for w in wls:
    base = t.get((ref.get(w), w))
    cells = []
    for e in engines:
        v = t.get((e, w))
        cells.append("%.2f×" % (v / base) if v and base else "—")
    print("| %s (%s) | %s |" % (w, ref.get(w, "?"), " | ".join(cells)))
EOF
  echo
  sed '1s/^# .*/# Shared harness report (run_all.sh \/ report.py)/' "$work/RESULTS.md" | sed 's/^## /### /; 1s/^# /## /'
  if [ -s "$kept" ]; then echo; echo; cat "$kept"; fi
} > "$out"
echo "[run.sh] wrote $out"
