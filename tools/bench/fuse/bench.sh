#!/bin/bash
# bench.sh [SIZE_MIB] [FILES] - nfsshim-fuse vs. the backing directory vs. bindfs, in one run.
#   sequential 1 MiB writes (with a final fsync) and reads of a SIZE_MIB file (default 1024,
#   the issue's 1 GiB), 20000 random 4 KiB reads of it, create/stat/unlink of FILES files
#   (default 10000).
# Reads start with cold caches (drop_caches) on every path, so each reads from the disk.
# The I/O part runs BENCH_IO_ROUNDS (default 3) interleaved rounds and reports medians.
# The metadata part runs on a tmpfs (mounted for it): on ext4 the cost of a create depends
# on how many inodes were deleted recently (ext4 recently_deleted() scans), i.e. on which
# path ran before, which would swamp the difference between the paths.
# The metadata part runs BENCH_ROUNDS (default 5) interleaved rounds and reports medians.
# Prints MB/s or ops/s per path, our ratio to direct and to bindfs (of the medians), the
# range of those ratios over the rounds, and the daemons' CPU seconds per GiB moved
# (utime+stime from /proc/PID/stat over every round's write+read).
# Runs in a private mount namespace: namespaces that other programs create meanwhile (test
# labs, containers) would otherwise keep copies of our mounts and their daemons alive.
# Needs root, bindfs, fusermount3, g++. NFSSHIM_BUILD: build dir (default /work/main/build).
# BENCH_SHIM_OPTS: extra nfsshim-fuse arguments (e.g. "-s" or "-o max_threads=4").
# BENCH_DIR: where to work (default: a temp dir under /var/tmp, on the disk).
# BENCH_WARM (default 1; 0: off): before each write and each cold read, every path gets
# just-freed memory (warm, below), so what ran before does not decide how dear new pages are.
set -eu
[ -n "${NFSSHIM_BENCH_NS:-}" ] || exec env NFSSHIM_BENCH_NS=1 unshare -m --propagation private "$0" "$@"
SIZE=${1:-1024}
FILES=${2:-10000}
case $SIZE$FILES in *[!0-9]*) echo "bench: SIZE_MIB and FILES must be numbers, got '$SIZE' '$FILES' (the build directory is NFSSHIM_BUILD)" >&2; exit 2 ;; esac
ROUNDS=${BENCH_ROUNDS:-5}
IO_ROUNDS=${BENCH_IO_ROUNDS:-3}
BUILD=${NFSSHIM_BUILD:-/work/main/build}
SHIM=$BUILD/fusefs/nfsshim-fuse
here=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d "${BENCH_DIR:-/var/tmp}/nfsshim-bench.XXXXXX")
warm_file=/dev/shm/nfsshim-bench-warm.$$
case ${BENCH_WARM:-1} in 0 | 1) ;; *) echo "bench: BENCH_WARM must be 0 or 1, got '$BENCH_WARM'" >&2; exit 2 ;; esac
shim_pid= bind_pid=
cleanup() {
  fusermount3 -u -z "$T/shim" 2>/dev/null || true
  fusermount3 -u -z "$T/bind" 2>/dev/null || true
  for p in $shim_pid $bind_pid; do kill "$p" 2>/dev/null || true; done
  umount -l "$T/back/meta" 2>/dev/null || true
  rm -rf "$T"
  rm -f "$warm_file"
}
trap cleanup EXIT
[ -x "$SHIM" ] || { echo "bench: $SHIM not built" >&2; exit 2; }
g++ -O2 -std=c++17 -o "$T/bench_io" "$here/bench_io.cc"
B=$T/bench_io
mkdir -p "$T/back/direct" "$T/back/shim" "$T/back/bind" "$T/shim" "$T/bind" "$T/back/meta"
mount -t tmpfs -o size=256m nfsshim-bench "$T/back/meta"
mkdir -p "$T/back/meta/direct" "$T/back/meta/shim" "$T/back/meta/bind"
env -u NFSSHIM_BUILD "$SHIM" "$T/back" "$T/shim" -o log=file:"$T/shim.log" ${BENCH_SHIM_OPTS:-}
bindfs "$T/back" "$T/bind"
shim_pid=$(pgrep -f "^$SHIM $T/back " | head -n 1)
bind_pid=$(pgrep -f "^bindfs $T/back " | head -n 1)
dirs=(direct "$T/back/direct" shim "$T/shim/shim" bindfs "$T/bind/bind")
meta_dir() { case $1 in direct) echo "$T/back/meta/direct" ;; shim) echo "$T/shim/meta/shim" ;; bindfs) echo "$T/bind/meta/bind" ;; esac; }

cpu() {  # PID -> utime+stime in clock ticks
  awk '{print $14 + $15}' "/proc/$1/stat"
}
pid_of() { case $1 in shim) echo "$shim_pid" ;; bindfs) echo "$bind_pid" ;; *) echo "" ;; esac; }
drop() { sync; echo 3 > /proc/sys/vm/drop_caches; }
# Memory the kernel has not used for a while costs several times more to fill: on a VM
# whose balloon reports free pages (virtio free page reporting, as on our machines) the
# host takes them back about 2 s after they are freed and faults them in again on the
# next touch (2 GiB written into tmpfs: 5.3-5.6 s in fresh memory, 0.8-1.2 s right after
# 2 GiB were freed). A write or cold read fills SIZE MiB of page cache directly and twice
# that through a FUSE mount (its own pages and the backing file's), so each one first
# gets 2 x SIZE MiB plus a tenth of memory just freed: the same start for every path.
warm() {
  [ "${BENCH_WARM:-1}" = 0 ] && return 0
  dd if=/dev/zero of="$warm_file" bs=1M count=$((SIZE * 2 + SIZE / 5 + 1)) status=none
  rm -f "$warm_file"
}
declare -A R IO
hz=$(getconf CLK_TCK)
cpu_shim=0 cpu_bind=0
# I/O: IO_ROUNDS rounds, the three paths interleaved in each, the median per path.
for ((r = 0; r < IO_ROUNDS; r++)); do
  for ((i = 0; i < ${#dirs[@]}; i += 2)); do
    name=${dirs[i]} d=${dirs[i + 1]} pid=$(pid_of "${dirs[i]}")
    c0=$([ -n "$pid" ] && cpu "$pid" || echo 0)
    drop
    warm
    IO[$name.write]+="$($B seqwrite "$d/big" "$SIZE") "
    drop
    warm
    IO[$name.read]+="$($B seqread "$d/big") "
    c1=$([ -n "$pid" ] && cpu "$pid" || echo 0)
    case $name in shim) cpu_shim=$((cpu_shim + c1 - c0)) ;; bindfs) cpu_bind=$((cpu_bind + c1 - c0)) ;; esac
    drop
    IO[$name.rand]+="$($B randread "$d/big" 20000) "
    rm -f "$d/big"
  done
done
gib=$(echo "$SIZE * 2 * $IO_ROUNDS / 1024" | bc -l)
R[shim.cpu]=$(echo "$cpu_shim / $hz / $gib" | bc -l)
R[bindfs.cpu]=$(echo "$cpu_bind / $hz / $gib" | bc -l)
# Metadata: ROUNDS rounds, the three paths interleaved in each, the median per path. On a
# small VM single runs of the same path differ by 2-4x (scheduling of the daemon's threads
# against the caller's); interleaving spreads slow phases over all paths.
declare -A M
for ((r = 0; r < ROUNDS; r++)); do
  for name in direct shim bindfs; do
    read -r c s u < <($B meta "$(meta_dir "$name")" "$FILES")
    M[$name.create]+="$c " M[$name.stat]+="$s " M[$name.unlink]+="$u "
  done
done
median() { printf '%s\n' $1 | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
for key in "${!M[@]}"; do R[$key]=$(median "${M[$key]}"); done
for key in "${!IO[@]}"; do R[$key]=$(median "${IO[$key]}"); done
# Range over the rounds of a per-round ratio of rates: ratio_range A_TIMES B_TIMES -> "min-max"
# of (rate A / rate B) = (time B / time A), round by round.
ratio_range() {
  paste <(printf '%s\n' $1) <(printf '%s\n' $2) |
    awk 'NF == 2 && $1 > 0 { r = $2 / $1; if (n++ == 0 || r < lo) lo = r; if (n == 1 || r > hi) hi = r }
         END { printf "%.2f-%.2f", lo, hi }'
}

printf '\nnfsshim-fuse benchmark: %d MiB file (median of %d rounds), %d files (median of %d rounds), %s, %s, memory warmed: %s\n' \
  "$SIZE" "$IO_ROUNDS" "$FILES" "$ROUNDS" "$(uname -r)" "${BENCH_SHIM_OPTS:-default options}" \
  "$([ "${BENCH_WARM:-1}" = 0 ] && echo no || echo yes)"
printf '%-22s %12s %12s %12s %10s %10s\n' test direct nfsshim-fuse bindfs shim/direct shim/bindfs
row() {  # LABEL KEY AMOUNT UNIT: rate = AMOUNT / seconds
  local dr sr br
  dr=$(echo "$3 / ${R[direct.$2]}" | bc -l)
  sr=$(echo "$3 / ${R[shim.$2]}" | bc -l)
  br=$(echo "$3 / ${R[bindfs.$2]}" | bc -l)
  printf '%-22s %12.0f %12.0f %12.0f %10.2f %10.2f\n' "$1 ($4)" "$dr" "$sr" "$br" \
    "$(echo "$sr / $dr" | bc -l)" "$(echo "$sr / $br" | bc -l)"
}
row "seq write 1M+fsync" write "$SIZE" "MiB/s"
row "seq read 1M cold" read "$SIZE" "MiB/s"
row "rand read 4K cold" rand 20000 "ops/s"
row "create" create "$FILES" "ops/s"
row "stat" stat "$FILES" "ops/s"
row "unlink" unlink "$FILES" "ops/s"
printf 'daemon CPU seconds per GiB (seq write+read): nfsshim-fuse %.2f, bindfs %.2f\n' \
  "${R[shim.cpu]}" "${R[bindfs.cpu]}"
echo "ratio ranges over the rounds (shim/direct, shim/bindfs; each round's paths ran back to back):"
for key in write read rand; do
  printf '  %-8s %s  %s\n' "$key" "$(ratio_range "${IO[shim.$key]}" "${IO[direct.$key]}")" \
    "$(ratio_range "${IO[shim.$key]}" "${IO[bindfs.$key]}")"
done
for key in create stat unlink; do
  printf '  %-8s %s  %s\n' "$key" "$(ratio_range "${M[shim.$key]}" "${M[direct.$key]}")" \
    "$(ratio_range "${M[shim.$key]}" "${M[bindfs.$key]}")"
done
