#!/bin/bash
# fuzz.sh [--build DIR] [SECONDS_PER_TARGET] [TARGET...]: builds the libFuzzer targets of
# tests/fuzz with clang (ASan+UBSan, in DIR, default ./build-fuzz; only the targets and
# libshim), replays every seed corpus once (CTest), and runs each target for SECONDS
# (default 20) from its seed corpus in tests/fuzz/corpus/TARGET. Fails on any crash,
# leak, UB report or broken invariant; the input is left in DIR/fuzz-artifacts/TARGET/. Prints a table: runs executed, corpus
# size, coverage gained, crashes. Then replays each corpus/TARGET/crashes/ (open bugs,
# see tests/fuzz/README.md) without workarounds to say which are still open.
# CI (tools/dev/test.sh) runs `fuzz.sh 20`.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build-fuzz
if [ "${1:-}" = --build ]; then build=$2; shift 2; fi
secs=${1:-20}
[ $# -gt 0 ] && shift
case $secs in ''|*[!0-9]*) echo "usage: $0 [--build DIR] [SECONDS_PER_TARGET] [TARGET...]" >&2; exit 2;; esac
corpora=$root/tests/fuzz/corpus
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for d in "$corpora"/*/; do targets+=("$(basename "$d")"); done
fi

# Per-target extra libFuzzer flags / ASAN_OPTIONS, e.g. to steer around a known open bug
# (tests/fuzz/README.md) so that it does not hide new ones. None today.
declare -A extra_flags=()
declare -A extra_asan=()

command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ missing (tools/dev/install-deps.sh)" >&2; exit 2; }
echo "=== fuzz: building in $build"
mkdir -p "$build"
if ! { CC=clang CXX=clang++ cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
         -DNFSSHIM_FUZZ=ON -DNFSSHIM_TESTS=OFF -DNFSSHIM_BENCH=OFF -DNFSSHIM_FUSE=OFF &&
       cmake --build "$build" --target fuzz_all -j "$(nproc)"; } >"$build/fuzz-build.log" 2>&1; then
  tail -40 "$build/fuzz-build.log" >&2
  echo "fuzz.sh: the clang build failed (log: $build/fuzz-build.log)" >&2
  exit 1
fi
echo "=== fuzz: seed corpus replay (ctest -L fuzz)"
if ! ctest --test-dir "$build/tests/fuzz" -L fuzz --output-on-failure -j "$(nproc)" >"$build/fuzz-replay.log" 2>&1; then
  cat "$build/fuzz-replay.log" >&2
  echo "fuzz.sh: a seed input fails (see above)" >&2
  exit 1
fi
grep 'tests passed' "$build/fuzz-replay.log"

work=$build/fuzz-work
arts=$build/fuzz-artifacts
rm -rf "$work" "$arts"
mkdir -p "$work/tmp"
status=0
rows=()
for t in "${targets[@]}"; do
  bin=$build/tests/fuzz/fuzz_$t
  [ -x "$bin" ] || { echo "fuzz.sh: no target fuzz_$t" >&2; exit 2; }
  mkdir -p "$work/$t" "$arts/$t"
  find "$corpora/$t" -maxdepth 1 -type f -exec cp {} "$work/$t/" \;
  log=$work/$t.log
  echo "=== fuzz: $t for ${secs}s"
  rc=0
  TMPDIR=$work/tmp ASAN_OPTIONS="${extra_asan[$t]:-detect_leaks=1}" UBSAN_OPTIONS=print_stacktrace=1 \
    "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$arts/$t/" ${extra_flags[$t]:-} "$work/$t" >"$log" 2>&1 || rc=$?
  inited=$(grep -m1 -o 'INITED cov: [0-9]*' "$log" | awk '{print $3}')
  final=$(grep -E '^#[0-9]+' "$log" | grep -o 'cov: [0-9]*' | tail -1 | awk '{print $2}')
  runs=$(awk '/stat::number_of_executed_units/ {print $2}' "$log")
  crashes=$(find "$arts/$t" -type f | wc -l)
  files=$(find "$work/$t" -type f | wc -l)
  bytes=$(du -sb "$work/$t" | cut -f1)
  if [ "$rc" -ne 0 ] || [ "$crashes" -ne 0 ]; then
    status=1
    crashes=$((crashes ? crashes : 1))
    echo "fuzz.sh: $t FAILED (exit $rc); log $log; input in $arts/$t/:" >&2
    grep -E 'ERROR|FUZZ_CHECK|SUMMARY|^  ' "$log" | head -20 >&2 || true
  fi
  rows+=("$(printf '%-14s %12s %8s %10s %8s %8s' "$t" "${runs:-?}" "$files" "$bytes" "+$(( ${final:-0} - ${inited:-0} ))" "$crashes")")
done

echo "=== fuzz summary (${secs}s per target, ASan+UBSan)"
printf '%-14s %12s %8s %10s %8s %8s\n' target runs corpus bytes new_cov crashes
printf '%s\n' "${rows[@]}"

# Open bugs: the crash inputs kept in corpus/TARGET/crashes/, replayed as they are.
for t in "${targets[@]}"; do
  for f in "$corpora/$t"/crashes/*; do
    [ -f "$f" ] || continue
    if "$build/tests/fuzz/fuzz_$t" "$f" >/dev/null 2>&1; then
      echo "open bug FIXED? $t: ${f#$root/} passes now: move it to the seeds"
    else
      echo "open bug (known): $t: ${f#$root/} still fails (tests/fuzz/README.md)"
    fi
  done
done
exit $status
