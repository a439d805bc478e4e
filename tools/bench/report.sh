#!/bin/bash
# report.sh [--quick] [OUT.md]: every benchmark of the project in one go, and one Markdown
# report (default ./perf-report/report.md) with the ratios each bench measures against
# its baseline in the same run, the machine's details, and PNG plots beside it (per-call
# overhead of the preload; engine throughput against nconnect, and the NFSv4.1 engine
# beside the NFSv3 engine, when the engine bench is there). Raw outputs and the RESULT lines (tools/bench/report/README.md) go to
# OUTDIR/raw/. Exit 0 if every available bench ran, 1 otherwise (the report says which).
#   --quick        small sizes: a smoke check in a few minutes; the figures are noisy
#   NFSSHIM_BUILD  build dir with the bench targets (default ./build; built if missing)
# Needs root (the FUSE bench mounts and drops caches), a JDK, bindfs, gnuplot.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
here=$root/tools/bench
quick=0 out=./perf-report/report.md
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1 ;;
    -h|--help|-*) echo "usage: $0 [--quick] [OUT.md]" >&2; exit 2 ;;
    *) out=$1 ;;
  esac
  shift
done
mkdir -p "$(dirname "$out")"
outdir=$(cd "$(dirname "$out")" && pwd)
out=$outdir/$(basename "$out")
raw=$outdir/raw
rm -rf "$raw"; mkdir -p "$raw"
results=$raw/results.txt
: > "$results"

build=${NFSSHIM_BUILD:-$root/build}
export NFSSHIM_BUILD=$build
# Build (incrementally) what the benches run, so that they measure this tree.
echo "report: building the bench targets in $build"
[ -f "$build/CMakeCache.txt" ] || cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$(nproc)" --target nfsshim-preload shim_bench nfsshim-fuse >"$raw/build.log" 2>&1 ||
  { tail -30 "$raw/build.log" >&2; echo "report: build failed (log: $raw/build.log)" >&2; exit 1; }
# The engine bench is optional: build it if the tree has it.
if grep -qs engine_bench "$here/engine/CMakeLists.txt"; then
  cmake --build "$build" -j "$(nproc)" --target engine_bench >>"$raw/build.log" 2>&1 || true
fi

declare -A state
limit=$((quick ? 1200 : 7200))  # seconds per bench before it counts as hung
run_bench() {  # NAME CMD...: runs it (stdout to raw/NAME.out, stderr to raw/NAME.log)
  local name=$1 rc=0; shift
  echo "report: running $name: $*"
  local t0=$SECONDS
  timeout "$limit" "$@" >"$raw/$name.out" 2>"$raw/$name.log" || rc=$?
  state[$name.secs]=$((SECONDS - t0))
  if [ "$rc" -eq 0 ]; then state[$name]=ok; else state[$name]="FAILED (exit $rc, see raw/$name.log)"; fi
}
parse() { awk -f "$here/report/$1" "$2" >>"$results" || true; }  # PARSER FILE -> RESULT lines

# 1. The preload: per-call overhead, JVM workload, memory (writes Markdown itself).
if [ "$quick" = 1 ]; then pre_args=(--quick); else pre_args=(); fi
run_bench preload "$here/preload/bench.sh" "${pre_args[@]}" --out "$raw/preload.md"
[ -f "$raw/preload.md" ] && parse preload.awk "$raw/preload.md"
parse preload.awk "$raw/preload.out"  # RESULT lines a bench may print itself
# 2. The FUSE overlay against the backing directory and bindfs.
if [ "$quick" = 1 ]; then fuse_args=(32 2000); rounds=2; else fuse_args=(); rounds=${BENCH_ROUNDS:-5}; fi
run_bench fuse env BENCH_ROUNDS="$rounds" "$here/fuse/bench.sh" "${fuse_args[@]}"
parse fuse.awk "$raw/fuse.out"
# 3. The direct NFS engines (NFSv3 and NFSv4.1, one ganesha) against nfs-cp, nconnect 1..8,
#    io_uring and epoll, if the tree has the script: engine_bench.sh BUILD_DIR [SIZE_MIB].
engine_sh=$here/engine/engine_bench.sh
[ -x "$engine_sh" ] && [ -x "$build/tools/bench/engine/engine_bench" ] || engine_sh=
if [ -n "$engine_sh" ]; then
  if [ "$quick" = 1 ]; then eng_args=(64); else eng_args=(); fi
  run_bench engine "$engine_sh" "$build" "${eng_args[@]}"
  parse engine.awk "$raw/engine.out"
else
  state[engine]="not available (no tools/bench/engine/engine_bench.sh or engine_bench binary)"
fi

plots=$("$here/report/plot.sh" "$results" "$outdir" 2>"$raw/plot.log" || true)
has_plot() { grep -qx "$1" <<<"$plots"; }

# The machine.
ver() { pkg-config --modversion "$1" 2>/dev/null || echo "not installed"; }
cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
commit=$(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
[ -n "$(git -C "$root" status --porcelain 2>/dev/null | head -1)" ] && commit="$commit (with uncommitted changes)"
mem_kb=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)

{
echo "# nfsshim performance report"
echo
echo "\`tools/bench/report.sh$([ "$quick" = 1 ] && echo " --quick")\`, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $commit."
echo "Every figure is a ratio against a baseline measured in the same run (absolute times on"
echo "shared machines mean little)."
[ "$quick" = 1 ] && echo && echo "**Quick mode**: small sizes and few rounds, a smoke check of the benches; the ratios are noisy."
echo
echo "## Machine"
echo
echo "| | |"
echo "|---|---|"
echo "| CPU | $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//') |"
echo "| cores | $(nproc) online ($(grep -c ^processor /proc/cpuinfo) in /proc/cpuinfo) |"
echo "| memory | $(awk -v k="$mem_kb" 'BEGIN {printf "%.1f GiB", k / 1048576}') |"
echo "| kernel | $(uname -srm) |"
echo "| distribution | $(. /etc/os-release 2>/dev/null; echo "${PRETTY_NAME:-unknown}") |"
echo "| compiler | $([ -n "$cxx" ] && "$cxx" --version 2>/dev/null | head -1 || echo unknown) |"
echo "| libfuse | $(ver fuse3) |"
echo "| libnfs | $(ver libnfs) |"
echo "| liburing | $(ver liburing) |"
echo "| JDK | $(java -version 2>&1 | head -1 || echo none) |"
echo "| build | $build ($(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null)) |"
echo
echo "## Benches run"
echo
echo "| bench | state | seconds |"
echo "|---|---|---|"
for b in preload fuse engine; do echo "| $b | ${state[$b]} | ${state[$b.secs]:--} |"; done
echo
echo "## Ratios at a glance"
echo
echo "| bench | case | ratio of | value |"
echo "|---|---|---|---|"
awk '$4 ~ /^metric=ratio/ {printf "| %s | %s | %s | %s |\n", substr($2, 7), substr($3, 6), substr($4, 8), substr($5, 7)}' "$results"
echo
echo "## Preload (tools/bench/preload/bench.sh)"
echo
has_plot preload_overhead.png && echo "![preload per-call overhead](preload_overhead.png)" && echo
if [ -s "$raw/preload.md" ]; then sed 's/^## /### /' "$raw/preload.md"; else echo "No output: ${state[preload]}."; fi
echo
echo "## FUSE overlay (tools/bench/fuse/bench.sh${fuse_args:+ ${fuse_args[*]}})"
echo
if [ -s "$raw/fuse.out" ]; then echo '```'; sed '/^$/d' "$raw/fuse.out"; echo '```'; else echo "No output: ${state[fuse]}."; fi
echo
echo "## Direct NFS engine"
echo
if [ -n "$engine_sh" ]; then
  echo "\`${engine_sh#$root/} BUILD${eng_args:+ ${eng_args[*]}}\` (MiB; default 1024): ${state[engine]}."
  echo
  has_plot engine_nconnect.png && echo "![engine throughput against nconnect](engine_nconnect.png)" && echo
  # The script's summary (best of its repetitions); every run's line is in raw/engine.out.
  if grep -q '^=== summary' "$raw/engine.out" 2>/dev/null; then
    echo '```'; sed -n '/^=== summary/,$p' "$raw/engine.out"; echo '```'
    echo; echo "Each run's own line (syscalls, per-connection calls, v4.1 slot figures): raw/engine.out."
  elif [ -s "$raw/engine.out" ]; then echo '```'; cat "$raw/engine.out"; echo '```'; fi
  echo
  echo "### NFSv4.1 engine against NFSv3 engine"
  echo
  v41_table=$(awk -f "$here/report/v41_table.awk" "$results" 2>/dev/null || true)
  if [ -n "$v41_table" ]; then
    echo "Both engines on the same nfs-ganesha (NFSv3 and v4.1 on one port, the v4 export at"
    echo "pseudo path /export), one after the other for each io backend and nconnect; best of"
    echo "the repetitions; x nfs-cp against libnfs's nfs-cp of the same run. v4.1 counts"
    echo "compounds (SEQUENCE + PUTFH + READ/WRITE), one per 1 MiB piece like v3's RPCs."
    echo
    has_plot engine_v41_v3.png && echo "![NFSv4.1 beside NFSv3 against nconnect](engine_v41_v3.png)" && echo
    echo "$v41_table"
  else
    echo "No v4.1 figures in this run (${state[engine]})."
  fi
else
  echo "Not available: no tools/bench/engine/engine_bench.sh or no engine_bench binary in the build,"
  echo "so engine against nfs-cp, nconnect scaling, io_uring against epoll and v4.1 against v3"
  echo "are not in this report."
fi
echo
echo "## Not measured here"
echo
# (The engine's mount lines cover NFSv3 and NFSv4.1 since 2026-12-03.)
if [ -z "$engine_sh" ]; then echo "- Everything of the direct engines, NFSv4.1 against NFSv3 included (above)."
else echo "- Nothing more: the sections above say which benchmarks ran and which did not."; fi
echo
echo "## Raw data"
echo
echo "raw/: each bench's output and log; raw/results.txt: every figure as a RESULT line"
echo "(format: tools/bench/report/README.md), $(wc -l <"$results") lines."
} >"$out"
echo "report: wrote $out"
status=0
for b in preload fuse engine; do case ${state[$b]} in ok|not\ available*) ;; *) status=1 ;; esac; done
exit $status
