#!/bin/bash
# write_behind.sh BUILD [PAIRS]
# nfsshim-fuse's write-behind (-o write_behind_kb, fusefs/nfs/write_behind.h) against the
# same mount with write_behind_kb=0 (every WRITE waits for its NFS WRITE), in interleaved
# pairs (which side goes first alternates) on one private nfs-ganesha (server_env.sh: export
# in RAM, 127.0.0.1:24249). Per pair and side: a new mount (nconnect=4) of vers=3 or 4.1,
# then dd from /dev/zero through it with conv=fsync: 1 GiB in 1 MiB writes, 256 MiB in
# 16 KiB writes (a Kafka producer's append size). Memory is warmed before each dd (this VM
# hands freed memory back to its host; engine_bench.sh does the same).
# Prints each run, then per row the median MiB/s of each side, the median of the per-pair
# ratios on/off with their min and max, and the daemon's CPU seconds per GiB written.
# PAIRS default 5; WB_KB (default 4096): the write_behind_kb measured against 0.
# Needs root (ganesha's namespaces, FUSE mounts).
set -euo pipefail
usage="usage: write_behind.sh BUILD [PAIRS]"
build=$(readlink -f "${1:?$usage}")
pairs=${2:-5}
wb_kb=${WB_KB:-4096}
[[ $pairs =~ ^[1-9][0-9]*$ ]] || { echo "PAIRS must be a positive integer, got '$pairs'" >&2; exit 2; }
[[ $wb_kb =~ ^[1-9][0-9]*$ ]] || { echo "WB_KB must be a positive integer, got '$wb_kb'" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "write_behind.sh needs root" >&2; exit 2; }
shim=$build/fusefs/nfsshim-fuse
[ -x "$shim" ] || { echo "$shim missing: build nfsshim-fuse first" >&2; exit 1; }
root=$(cd "$(dirname "$0")/../../.." && pwd)
. "$root/tools/bench/engine/server_env.sh"
. "$root/tests/engine/ganesha.sh"
bench_ganesha_up write-behind
mp=$work/mnt out=$work/runs.txt
mkdir -p "$mp"
: > "$out"
trap 'grep -q " $mp " /proc/self/mountinfo && fusermount3 -u -z "$mp"; ganesha_stop "$work/state"; rm -rf "$work" "$export_dir"; bench_tracefs_down' EXIT

cpu_of() { awk '{ printf "%.2f", ($14 + $15) / 100 }' "/proc/$1/stat"; }
# run PAIR VERS BS MIB KB: one mount, one dd; prints its line.
run() {
  local pair=$1 vers=$2 bs=$3 mib=$4 kb=$5 url pid c0 c1 t0 t1 count
  url="nfs://127.0.0.1/export?vers=$vers&nconnect=4&nfsport=$port"
  [ "$vers" = 3 ] && url="$url&mountport=$mnt"
  "$shim" "$url" "$mp" -f -o "log=file:$work/shim.log,write_behind_kb=$kb" &
  pid=$!
  for _ in $(seq 200); do grep -q " $mp " /proc/self/mountinfo && break; sleep 0.05; done
  grep -q " $mp " /proc/self/mountinfo || { echo "nfsshim-fuse did not mount" >&2; exit 1; }
  dd if=/dev/zero of=/dev/shm/nfsshim-wb-warm bs=1M count=$((mib + mib / 10 + 1)) status=none
  rm -f /dev/shm/nfsshim-wb-warm
  [ "$bs" = 1M ] && count=$mib || count=$((mib * 64))
  c0=$(cpu_of "$pid"); t0=$(date +%s.%N)
  dd if=/dev/zero of="$mp/f" bs="$bs" count="$count" conv=fsync status=none
  t1=$(date +%s.%N); c1=$(cpu_of "$pid")
  rm -f "$mp/f"
  fusermount3 -u "$mp"
  wait "$pid"
  awk -v p="$pair" -v v="$vers" -v b="$bs" -v k="$kb" -v m="$mib" -v t0="$t0" -v t1="$t1" -v c0="$c0" -v c1="$c1" \
    'BEGIN { printf "pair=%s vers=%s bs=%s write_behind_kb=%s MiBps=%.1f daemon_cpu_s_per_GiB=%.2f\n", p, v, b, k, m / (t1 - t0), (c1 - c0) * 1024 / m }' |
    tee -a "$out"
}

echo "# write_behind.sh: $(date -u '+%F %T') UTC, $pairs pairs, nconnect 4, export $export_on, $(nproc) CPUs, $(git -C "$root" describe --always --dirty 2>/dev/null || echo "?")"
for vers in 3 4.1; do run warmup "$vers" 1M 1024 0 > /dev/null; done  # the export's first blocks
for p in $(seq "$pairs"); do
  cfg=0
  for vers in 3 4.1; do
    for bs in 1M 16k; do
      cfg=$((cfg + 1))
      mib=1024; [ "$bs" = 16k ] && mib=256
      if (( (p + cfg) % 2 )); then order="$wb_kb 0"; else order="0 $wb_kb"; fi
      for kb in $order; do run "$p" "$vers" "$bs" "$mib" "$kb"; done
    done
  done
done

echo
echo "=== write-behind (write_behind_kb=$wb_kb) / off (0), $pairs pairs"
awk -f "$root/tools/bench/engine/lib.awk" -f "$root/tools/bench/engine/write_behind.awk" "$out"
