#!/bin/bash
# paired.sh BUILD io|vers [SIZE_MIB] [PAIRS]
# Two settings of the direct engines compared in paired, interleaved runs:
#   io:   io_uring against epoll, for the NFSv3 and the NFSv4.1 engine (issue 4: never slower);
#   vers: NFSv4.1 against NFSv3, with io_uring and with epoll (issue 5: within 10%).
# PAIRS (default 7) pairs of engine_bench runs (write, read, 20000 random 4 KiB reads of
# SIZE_MIB, default 1024), the two settings back to back on one private nfs-ganesha
# (127.0.0.1:24249, MOUNT 24248; export and malloc as engine_bench.sh, server_env.sh).
# Which one goes first alternates (ABBA...), and the pair loop is the outer one, so a loud
# minute on the shared machine hits one pair of every configuration instead of all pairs
# of one. Prints each raw line (pair=.. first=.. load1=.. then engine_bench's line), then
# paired.awk's table: per row the median ratio with a distribution-free confidence interval
# and a verdict. The printed output can be fed to paired.awk again (with -v by=io|vers).
# PAIRED_RAND_OPS (default 20000): random reads per run; PAIRED_ROWS: the other setting's
# values (io mode: vers, default "3 4.1"; vers mode: io, default "uring epoll") and
# PAIRED_NCONNECT (io mode default "1 4 8", vers mode "1 2 4 8"): a subset, e.g. to run one
# row again with more pairs. Needs root (namespaces for ganesha).
set -euo pipefail
usage="usage: paired.sh BUILD io|vers [SIZE_MIB] [PAIRS]"
build=$(readlink -f "${1:?$usage}")
by=${2:?$usage}
size=${3:-1024}
pairs=${4:-7}
rand_ops=${PAIRED_RAND_OPS:-20000}
case $by in
  io) rows=${PAIRED_ROWS:-3 4.1}; nc_list=${PAIRED_NCONNECT:-1 4 8}; sides="uring epoll"
      [[ $rows =~ ^(3|4\.1)( (3|4\.1))*$ ]] || { echo "PAIRED_ROWS must list 3 and/or 4.1 in io mode, got '$rows'" >&2; exit 2; } ;;
  vers) rows=${PAIRED_ROWS:-uring epoll}; nc_list=${PAIRED_NCONNECT:-1 2 4 8}; sides="4.1 3"
      [[ $rows =~ ^(uring|epoll)( (uring|epoll))*$ ]] || { echo "PAIRED_ROWS must list uring and/or epoll in vers mode, got '$rows'" >&2; exit 2; } ;;
  *) echo "$usage (the second argument says what is compared: io or vers, got '$by')" >&2; exit 2 ;;
esac
[[ $size =~ ^[1-9][0-9]*$ ]] || { echo "SIZE_MIB must be a positive integer, got '$size'" >&2; exit 2; }
[[ $pairs =~ ^[1-9][0-9]*$ ]] || { echo "PAIRS must be a positive integer, got '$pairs'" >&2; exit 2; }
[[ $rand_ops =~ ^[1-9][0-9]*$ ]] || { echo "PAIRED_RAND_OPS must be a positive integer, got '$rand_ops'" >&2; exit 2; }
[[ $nc_list =~ ^(1|2|4|8)( (1|2|4|8))*$ ]] || { echo "PAIRED_NCONNECT must list 1, 2, 4 or 8, got '$nc_list'" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "paired.sh needs root (ganesha runs in its own namespaces)" >&2; exit 2; }
root=$(cd "$(dirname "$0")/../../.." && pwd)
. "$root/tools/bench/engine/server_env.sh"
. "$root/tests/engine/ganesha.sh"
bench=$build/tools/bench/engine/engine_bench
[ -x "$bench" ] || { echo "build engine_bench first: cmake --build $build --target engine_bench" >&2; exit 1; }
bench_ganesha_up paired
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
echo "# paired.sh $by: $(date -u '+%F %T') UTC, size ${size} MiB, $pairs pairs, rand-ops $rand_ops, rows $rows, nconnect $nc_list, export $export_on, server malloc $server_malloc, $(nproc) CPUs, $(git -C "$root" describe --always --dirty 2>/dev/null || echo "?")"
# One run per engine first, not counted: the first write of the file allocates its blocks
# on the server, every later one overwrites them.
for vers in 3 4.1; do run "warmup=1" "$vers" 1 uring; done
for p in $(seq "$pairs"); do
  cfg=0
  for row in $rows; do
    for n in $nc_list; do
      # Each configuration alternates who goes first from pair to pair, and so do neighbours.
      cfg=$((cfg + 1))
      if (( (p + cfg) % 2 )); then order=$sides; else order="${sides#* } ${sides%% *}"; fi
      first=${order%% *}
      for side in $order; do
        if [ "$by" = io ]; then run "pair=$p first=$first" "$row" "$n" "$side"
        else run "pair=$p first=$first" "$side" "$n" "$row"; fi
      done
    done
  done
done
echo "# elapsed $(( $(date +%s) - t0 )) s"

echo
if [ "$by" = io ]; then echo "=== paired io_uring / epoll ($pairs pairs, size $size MiB; paired.awk)"
else echo "=== paired NFSv4.1 / NFSv3 ($pairs pairs, size $size MiB; paired.awk)"; fi
awk -v by="$by" -f "$root/tools/bench/engine/lib.awk" -f "$root/tools/bench/engine/paired.awk" "$out"
if [ $failed -ne 0 ]; then echo "$failed engine_bench runs FAILED (see the FAILED lines)" >&2; exit 1; fi
