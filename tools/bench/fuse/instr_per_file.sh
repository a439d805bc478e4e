#!/bin/bash
# instr_per_file.sh [BUILD] - the daemon's user-space instructions per file for nfsshim-fuse
# and bindfs (valgrind callgrind), for bench_io's metadata loop: create+close, stat, unlink
# of each file, three rounds. Each daemon serves a tmpfs SOURCE twice, for 300 and for 900
# files; the difference of the two totals over 600 files x 3 rounds is the cost of one
# file's requests, without mount and unmount. Counts move a few percent between runs where
# seconds move 30%; they show where the daemons' CPU goes, not the kernel's round trips,
# which decide the metadata speed (fusefs/README.md). Needs root, valgrind, bindfs, g++.
set -eu
[ -n "${NFSSHIM_INSTR_NS:-}" ] || exec env NFSSHIM_INSTR_NS=1 unshare -m --propagation private "$0" "$@"
BUILD=${1:-${NFSSHIM_BUILD:-/work/main/build}}
SHIM=$BUILD/fusefs/nfsshim-fuse
[ -x "$SHIM" ] || { echo "instr_per_file: $SHIM not built" >&2; exit 2; }
for c in valgrind bindfs fusermount3 g++; do
  command -v $c >/dev/null || { echo "instr_per_file: $c missing" >&2; exit 2; }
done
here=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d /var/tmp/nfsshim-instr.XXXXXX)
cleanup() { fusermount3 -u -z "$T/mnt" 2>/dev/null || true; umount "$T/back" 2>/dev/null || true; rm -rf "$T"; }
trap cleanup EXIT
mkdir -p "$T/back" "$T/mnt"
mount -t tmpfs -o size=256m nfsshim-instr "$T/back"
g++ -O2 -std=c++17 -o "$T/bench_io" "$here/bench_io.cc"

# total DAEMON N: instructions of one daemon's life serving N files x 3 rounds.
total() {
  local d=$1 n=$2 log=$T/cg-$1-$2.log pid i
  case $d in
    shim) valgrind --tool=callgrind --callgrind-out-file=/dev/null "$SHIM" "$T/back" "$T/mnt" -f \
            -o log=file:"$T/shim.log" 2> "$log" & ;;
    bindfs) valgrind --tool=callgrind --callgrind-out-file=/dev/null bindfs -f "$T/back" "$T/mnt" 2> "$log" & ;;
  esac
  pid=$!
  for i in $(seq 300); do grep -q " $T/mnt " /proc/mounts && break; sleep 0.1; done
  grep -q " $T/mnt " /proc/mounts || { echo "instr_per_file: $d did not mount" >&2; cat "$log" >&2; exit 1; }
  mkdir "$T/mnt/d-$n"
  "$T/bench_io" meta "$T/mnt/d-$n" "$n" > /dev/null
  rmdir "$T/mnt/d-$n"
  fusermount3 -u "$T/mnt"
  wait "$pid" || true
  sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$log"
}
echo "# instr_per_file.sh: $(date -u '+%F %T') UTC, $(git -C "$here" describe --always --dirty 2>/dev/null || echo "?")"
declare -A per
for d in shim bindfs; do
  lo=$(total $d 300) hi=$(total $d 900)
  per[$d]=$(( (hi - lo) / 1800 ))
  echo "daemon=$d instructions_per_file=${per[$d]}"
done
awk -v a="${per[shim]}" -v b="${per[bindfs]}" 'BEGIN { printf "nfsshim-fuse/bindfs instructions per file: x%.2f\n", a / b }'
