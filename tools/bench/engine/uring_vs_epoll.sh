#!/bin/bash
# uring_vs_epoll.sh BUILD [SIZE_MIB] [PAIRS]
# io_uring against epoll, paired and interleaved, for the NFSv3 and the NFSv4.1 engine at
# nconnect 1, 4, 8: PAIRS (default 7) pairs of engine_bench runs (write, read, 20000 random
# 4 KiB reads of SIZE_MIB, default 1024), one io=uring and one io=epoll back to back on one
# private nfs-ganesha (127.0.0.1:24249, MOUNT 24248). Which one goes first alternates
# (ABBA...), and the pair loop is the outer one, so a loud minute on the shared machine
# hits one pair of every configuration instead of all pairs of one. Prints each raw line
# (pair=.. first=.. load1=.. then engine_bench's line), then paired.awk's table: per
# (vers, nconnect, phase) the median uring/epoll ratio with a distribution-free confidence
# interval and a verdict. The printed output can be fed to paired.awk again.
# UVE_RAND_OPS (default 20000): random reads per run; UVE_VERS (default "3 4.1") and
# UVE_NCONNECT (default "1 4 8"): a subset, e.g. to run one row again with more pairs.
# Needs root (namespaces for ganesha).
set -euo pipefail
usage="usage: uring_vs_epoll.sh BUILD [SIZE_MIB] [PAIRS]"
build=$(readlink -f "${1:?$usage}")
size=${2:-1024}
pairs=${3:-7}
rand_ops=${UVE_RAND_OPS:-20000}
[[ $size =~ ^[1-9][0-9]*$ ]] || { echo "SIZE_MIB must be a positive integer, got '$size'" >&2; exit 2; }
[[ $pairs =~ ^[1-9][0-9]*$ ]] || { echo "PAIRS must be a positive integer, got '$pairs'" >&2; exit 2; }
[[ $rand_ops =~ ^[1-9][0-9]*$ ]] || { echo "UVE_RAND_OPS must be a positive integer, got '$rand_ops'" >&2; exit 2; }
vers_list=${UVE_VERS:-3 4.1}
nc_list=${UVE_NCONNECT:-1 4 8}
[[ $vers_list =~ ^(3|4\.1)( (3|4\.1))*$ ]] || { echo "UVE_VERS must list 3 and/or 4.1, got '$vers_list'" >&2; exit 2; }
[[ $nc_list =~ ^(1|2|4|8)( (1|2|4|8))*$ ]] || { echo "UVE_NCONNECT must list 1, 2, 4 or 8, got '$nc_list'" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "uring_vs_epoll.sh needs root (ganesha runs in its own namespaces)" >&2; exit 2; }
root=$(cd "$(dirname "$0")/../../.." && pwd)
. "$root/tests/engine/ganesha.sh"
bench=$build/tools/bench/engine/engine_bench
[ -x "$bench" ] || { echo "build engine_bench first: cmake --build $build --target engine_bench" >&2; exit 1; }
port=24249 mnt=24248
# ganesha_start only checks that the port answers: another server there would be measured.
for p in $port $mnt; do
  if bash -c "exec 3<>/dev/tcp/127.0.0.1/$p" 2>/dev/null; then
    echo "127.0.0.1:$p is in use (another uring_vs_epoll.sh run?): stop it first" >&2; exit 1
  fi
done
work=$(mktemp -d /tmp/nfsshim-uring-vs-epoll.XXXXXX)
cleanup() { ganesha_stop "$work/state"; rm -rf "$work"; }
trap cleanup EXIT
ganesha_start "$work/state" "$work/export" $port $mnt VFS
declare -A url=(
  [3]="nfs://127.0.0.1/export?vers=3&nfsport=$port&mountport=$mnt"
  [4.1]="nfs://127.0.0.1/export?vers=4.1&nfsport=$port")  # v4 pseudo path /export: same files
out=$work/pairs.txt
: > "$out"
failed=0

# run TAG VERS NCONNECT IO: one engine_bench run; its lines get TAG and the 1-min load.
run() {
  local tag=$1 vers=$2 n=$3 io=$4 load rc=0
  load=$(cut -d' ' -f1 /proc/loadavg)
  "$bench" "${url[$vers]}&nconnect=$n&io=$io" --size "$size" --rand-ops "$rand_ops" \
    --phases write,read,rand > "$work/run.txt" 2> "$work/run.err" || rc=$?
  sed "s/^/$tag load1=$load /" "$work/run.txt" | tee -a "$out"
  if [ $rc -ne 0 ]; then
    # Kept in the data (paired.awk drops that pair and counts it), the run goes on.
    echo "FAILED $tag vers=$vers io=$io nconnect=$n rc=$rc: $(tr '\n' ' ' < "$work/run.err")" | tee -a "$out" >&2
    failed=$((failed + 1))
  fi
}

t0=$(date +%s)
echo "# uring_vs_epoll.sh: $(date -u '+%F %T') UTC, size ${size} MiB, $pairs pairs, rand-ops $rand_ops, vers $vers_list, nconnect $nc_list, $(nproc) CPUs, $(git -C "$root" describe --always --dirty 2>/dev/null || echo "?")"
# One run per engine first, not counted: the first write of the file allocates its blocks
# on the server, every later one overwrites them.
for vers in $vers_list; do run "warmup=1" "$vers" 1 uring; done
for p in $(seq "$pairs"); do
  cfg=0
  for vers in $vers_list; do
    for n in $nc_list; do
      # Each configuration alternates who goes first from pair to pair, and so do neighbours.
      cfg=$((cfg + 1))
      if (( (p + cfg) % 2 )); then order="epoll uring"; else order="uring epoll"; fi
      first=${order%% *}
      for io in $order; do run "pair=$p first=$first" "$vers" "$n" "$io"; done
    done
  done
done
echo "# elapsed $(( $(date +%s) - t0 )) s"

echo
echo "=== paired io_uring / epoll ($pairs pairs, size $size MiB; paired.awk)"
awk -f "$root/tools/bench/engine/paired.awk" "$out"
if [ $failed -ne 0 ]; then echo "$failed engine_bench runs FAILED (see the FAILED lines)" >&2; exit 1; fi
