#!/bin/bash
# bench.sh [--quick] [--out FILE]: the preload's costs, as ratios against the plain
# calls measured in the same run (configurations alternate round by round, medians
# are compared; machines here are noisy, absolute times mean little).
#   1. per-call overhead of open+close, unlink, rename (over a target) and unlink of an
#      open file, in these configurations:
#        plain           no preload (the baseline)
#        shim-idle       preload loaded, nothing watched on the host
#        shim-elsewhere  preload loaded, a watched filesystem exists, the call is not on it
#        shim-all        the call is on a watched directory, mode=all (the default)
#        shim-referenced the call is on a watched directory, mode=referenced
#   2. a JVM doing segment appends, index mmaps, rolls and retention deletes for
#      SECONDS (60, or 10 with --quick), plain against the shim watching its directory
#   3. memory: heap bytes per tracked reference; growth over 1M open/close cycles
# Needs a build (NFSSHIM_BUILD, default ./build) and a JDK. Writes Markdown to --out
# (default: stdout).
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
build=${NFSSHIM_BUILD:-$root/build}
quick=0 out=/dev/stdout
while [ $# -gt 0 ]; do
  case $1 in --quick) quick=1;; --out) out=$2; shift;; *) echo "usage: $0 [--quick] [--out FILE]" >&2; exit 2;; esac
  shift
done
lib=$build/preload/libnfsshim-preload.so
bench=$build/tools/bench/shim_bench
[ -f "$lib" ] && [ -x "$bench" ] || { echo "build first: $lib / $bench missing" >&2; exit 2; }
scratch=$(mktemp -d /var/tmp/nfsshim-bench.XXXXXX)
elsewhere=$(mktemp -d /dev/shm/nfsshim-bench.XXXXXX)
trap 'rm -rf "$scratch" "$elsewhere"' EXIT
rounds=$((quick ? 3 : 7)); iters=$((quick ? 5000 : 20000)); jvm_s=$((quick ? 10 : 60))

config_env() {  # config -> env assignments
  case $1 in
    plain) echo "";;
    shim-idle) echo "LD_PRELOAD=$lib";;
    shim-elsewhere) echo "LD_PRELOAD=$lib NFSSHIM_WATCH=$elsewhere";;
    shim-all) echo "LD_PRELOAD=$lib NFSSHIM_WATCH=$scratch NFSSHIM_MODE=all";;
    shim-referenced) echo "LD_PRELOAD=$lib NFSSHIM_WATCH=$scratch NFSSHIM_MODE=referenced";;
  esac
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

configs=(plain shim-idle shim-elsewhere shim-all shim-referenced)
ops=(open_close unlink rename unlink_open)
declare -A res
for op in "${ops[@]}"; do
  for r in $(seq "$rounds"); do
    for c in "${configs[@]}"; do
      d=$scratch/w; rm -rf "$d"; mkdir -p "$d"
      n=$iters
      # unlink of an open file costs a scan of every open fd: hold 1000 of them.
      [ "$op" = unlink_open ] && n=1000
      v=$(env $(config_env "$c") "$bench" percall "$op" "$d" "$n" | awk '/ns_per_op/ {print $2}')
      res[$op,$c]+="$v "
    done
  done
done

{
echo "## Preload per-call overhead"
echo
echo "$(uname -srm), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'); local filesystem $(stat -f -c %T "$scratch"); median of $rounds rounds x $iters calls."
echo
printf '| call | plain ns |'; for c in "${configs[@]:1}"; do printf ' %s |' "$c"; done; echo
printf '|---|---|'; for c in "${configs[@]:1}"; do printf -- '---|'; done; echo
for op in "${ops[@]}"; do
  base=$(echo ${res[$op,plain]} | tr ' ' '\n' | median)
  printf '| %s | %.0f |' "$op" "$base"
  for c in "${configs[@]:1}"; do
    m=$(echo ${res[$op,$c]} | tr ' ' '\n' | median)
    awk -v m="$m" -v b="$base" 'BEGIN {printf " %.3f (%.0f ns) |", m/b, m}'
  done
  echo
done
echo
echo "Ratios are time with the shim / time without (1.000 = no cost). unlink_open is the"
echo "bury path (unlink of a file the process holds open), measured while holding 1000 fds:"
echo "it reads /proc/self/fd and /proc/self/maps once, so it grows with the process's fd count."
} > "$out"

# JVM workload
classes=$scratch/classes; mkdir -p "$classes"
javac -d "$classes" "$root/tools/bench/preload/JvmSegmentBench.java"
jvm() {  # config
  d=$scratch/jvm; rm -rf "$d"; mkdir -p "$d"
  env $(config_env "$1") java -XX:-UsePerfData -cp "$classes" JvmSegmentBench "$d" "$jvm_s" | awk '/bytes_per_sec/ {print $2}'
}
declare -A jres
jrounds=$((quick ? 2 : 2))
for r in $(seq $jrounds); do for c in plain shim-all shim-referenced; do jres[$c]+="$(jvm $c) "; done; done
{
echo
echo "## JVM segment workload ($jvm_s s per run, $jrounds runs each, median)"
echo
jb=$(echo ${jres[plain]} | tr ' ' '\n' | median)
echo "| configuration | MB/s | ratio to plain |"
echo "|---|---|---|"
for c in plain shim-all shim-referenced; do
  m=$(echo ${jres[$c]} | tr ' ' '\n' | median)
  awk -v m="$m" -v b="$jb" -v c="$c" 'BEGIN {printf "| %s | %.1f | %.3f |\n", c, m/1e6, m/b}'
done
} >> "$out"

# Memory
d=$scratch/mem; rm -rf "$d"; mkdir -p "$d"
mem=$(LD_PRELOAD=$lib NFSSHIM_WATCH=$scratch "$bench" memory "$d" 2000)
{
echo
echo "## Memory (2,000 buried files, one fd each; then 1,000,000 open/close cycles)"
echo
echo '```'
echo "$mem"
echo '```'
} >> "$out"
