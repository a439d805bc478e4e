#!/bin/bash
# instr_per_op.sh BUILD [OPS]
# User-space instructions per 4 KiB random read, NFSv3 engine against NFSv4.1 engine, counted
# by valgrind's callgrind: unlike seconds (+-30% here), the count moves by a few percent
# whatever else the shared machine is doing, so it shows a CPU change that the paired speed
# runs cannot see.
# Per engine, engine_bench reads OPS (default 3000) and OPS/3 random 4 KiB pieces under
# callgrind; the difference of the two totals over the difference of the counts is the cost
# of one read, without start-up and teardown. epoll loop, nconnect=1 (valgrind does not
# emulate io_uring). The kernel's share (syscalls, wake-ups) is not in the count. One private
# nfs-ganesha as paired.sh runs it (server_env.sh). Needs root and valgrind.
set -euo pipefail
usage="usage: instr_per_op.sh BUILD [OPS]"
build=$(readlink -f "${1:?$usage}")
ops=${2:-3000}
[[ $ops =~ ^[1-9][0-9]*$ && $ops -ge 30 ]] || { echo "OPS must be an integer >= 30, got '$ops'" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "instr_per_op.sh needs root (ganesha runs in its own namespaces)" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "valgrind missing: apt-get install valgrind" >&2; exit 1; }
root=$(cd "$(dirname "$0")/../../.." && pwd)
. "$root/tools/bench/engine/server_env.sh"
. "$root/tests/engine/ganesha.sh"
bench=$build/tools/bench/engine/engine_bench
[ -x "$bench" ] || { echo "build engine_bench first: cmake --build $build --target engine_bench" >&2; exit 1; }
bench_ganesha_up instr
declare -A url=(
  [3]="nfs://127.0.0.1/export?vers=3&nfsport=$port&mountport=$mnt&nconnect=1&io=epoll"
  [4.1]="nfs://127.0.0.1/export?vers=4.1&nfsport=$port&nconnect=1&io=epoll")
"$bench" "${url[3]}" --size 64 --phases write > /dev/null  # the file the reads read

# total VERS N: instructions of a whole engine_bench run reading N pieces.
total() {
  local log=$work/cg-$1-$2.log
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bench" "${url[$1]}" --size 64 \
    --rand-ops "$2" --phases rand > /dev/null 2> "$log" || { cat "$log" >&2; return 1; }
  sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$log"
}
echo "# instr_per_op.sh: $(date -u '+%F %T') UTC, $ops and $((ops / 3)) reads, $(git -C "$root" describe --always --dirty 2>/dev/null || echo "?")"
declare -A per
for vers in 3 4.1; do
  hi=$(total "$vers" "$ops") lo=$(total "$vers" $((ops / 3)))
  per[$vers]=$(( (hi - lo) / (ops - ops / 3) ))
  echo "vers=$vers instructions_per_read=${per[$vers]}"
done
awk -v a="${per[4.1]}" -v b="${per[3]}" 'BEGIN { printf "v4.1/v3 instructions per read: x%.2f\n", a / b }'
