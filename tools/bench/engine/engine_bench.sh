#!/bin/bash
# engine_bench.sh BUILD_DIR [SIZE_MIB]
# The direct NFS engine against libnfs's nfs-cp, in one run, on one private nfs-ganesha
# (FSAL VFS, NFSv3, 127.0.0.1:22249/22248): sequential write and read of SIZE_MIB (default
# 1024) and 4 KiB random reads, for nconnect=1,2,4,8 with io_uring and epoll.
# Prints each engine_bench line, then ratios: engine MiB/s / nfs-cp MiB/s (same server,
# same run), io_uring vs epoll syscalls per RPC. Needs root (namespaces for ganesha).
set -euo pipefail
build=$(readlink -f "${1:?usage: engine_bench.sh BUILD_DIR [SIZE_MIB]}")
size=${2:-1024}
root=$(cd "$(dirname "$0")/../../.." && pwd)
. "$root/tests/engine/ganesha.sh"
bench=$build/tools/bench/engine/engine_bench
[ -x "$bench" ] || { echo "build engine_bench first: cmake --build $build --target engine_bench" >&2; exit 1; }
port=22249 mnt=22248
work=$(mktemp -d /tmp/nfsshim-engine-bench.XXXXXX)
shm_dst=/dev/shm/nfsshim-engine-bench.$$
cleanup() { ganesha_stop "$work/state"; rm -rf "$work"; rm -f "$shm_dst"; }
trap cleanup EXIT
ganesha_start "$work/state" "$work/export" $port $mnt VFS
url="nfs://127.0.0.1/export?vers=3&nfsport=$port&mountport=$mnt"
libnfs_url() { echo "nfs://127.0.0.1/export/$1?version=3&nfsport=$port&mountport=$mnt"; }
head -c "$((size << 20))" /dev/zero > "$work/src.dat"
out=$work/results.txt
: > "$out"

nfscp() {  # nfscp write|read -> "phase=nfscp_write MiBps=.. cpu_s_per_GiB=.. peak_rss_MiB=.."
  local dir=$1 t
  sync
  if [ "$dir" = write ]; then
    rm -f "$work/export/nfscp.dat"  # nfs-cp does not overwrite
    t=$( { /usr/bin/time -f "%e %U %S %M" nfs-cp "$work/src.dat" "$(libnfs_url nfscp.dat)" >/dev/null; } 2>&1 | tail -1)
  else
    # nfs-cp cannot write to /dev/null (it creates its target): a tmpfs file costs the least.
    rm -f "$shm_dst"
    t=$( { /usr/bin/time -f "%e %U %S %M" nfs-cp "$(libnfs_url nfscp.dat)" "$shm_dst" >/dev/null; } 2>&1 | tail -1)
    rm -f "$shm_dst"
  fi
  echo "$t" | awk -v d="$dir" -v s="$size" '{printf "phase=nfscp_%s MiBps=%.1f cpu_s_per_GiB=%.3f peak_rss_MiB=%d secs=%.2f\n", d, s/$1, ($2+$3)/(s/1024), $4/1024, $1}'
}

for rep in 1 2; do
  nfscp write | tee -a "$out"
  nfscp read | tee -a "$out"
  for n in 1 2 4 8; do
    for io in uring epoll; do
      "$bench" "$url&nconnect=$n&io=$io" --size "$size" --rand-ops 20000 | sed "s/^/rep=$rep /" | tee -a "$out"
    done
  done
done

# Through the FUSE mount (nfsshim-fuse nfs://...): dd of the same size, 1 MiB blocks, the
# write ending with fsync (COMMIT). Best of the two repetitions like the rest.
shim=$build/fusefs/nfsshim-fuse
if [ -x "$shim" ]; then
  mnt=$work/mnt
  mkdir -p "$mnt"
  for rep in 1 2; do
    for cfg in "1 uring" "4 uring" "4 epoll" "8 uring"; do
      set -- $cfg
      "$shim" "$url&nconnect=$1&io=$2" "$mnt" -f -o log=file:"$work/shim.log" &
      spid=$!
      for i in $(seq 100); do grep -q " $mnt .* fuse.nfsshim-fuse " /proc/self/mountinfo && break; sleep 0.05; done
      t0=$(date +%s.%N)
      dd if=/dev/zero of="$mnt/fuse.dat" bs=1M count="$size" conv=fsync status=none
      t1=$(date +%s.%N)
      dd if="$mnt/fuse.dat" of=/dev/null bs=1M status=none
      t2=$(date +%s.%N)
      rm -f "$mnt/fuse.dat"
      fusermount3 -u "$mnt"
      # Another process that copied our mount namespace meanwhile (unshare -m) keeps the FUSE
      # connection alive after the unmount: then the daemon is told to stop.
      for i in $(seq 50); do kill -0 $spid 2>/dev/null || break; sleep 0.1; done
      kill $spid 2>/dev/null || true
      wait $spid || true
      awk -v a="$t0" -v b="$t1" -v c="$t2" -v s="$size" -v n="$1" -v io="$2" -v r="$rep" 'BEGIN {
        printf "rep=%s phase=mount_write io=%s nconnect=%s MiBps=%.1f\n", r, io, n, s / (b - a)
        printf "rep=%s phase=mount_read io=%s nconnect=%s MiBps=%.1f\n", r, io, n, s / (c - b) }' | tee -a "$out"
    done
  done
fi

echo
echo "=== summary (best of 2 repetitions; the machine is shared, so single runs are noisy)"
awk '
  function kv(line, key,   m) { if (match(line, key "=[^ ]+")) return substr(line, RSTART + length(key) + 1, RLENGTH - length(key) - 1); return "" }
  /phase=nfscp_write/ { v = kv($0, "MiBps") + 0; if (v > cpw) { cpw = v; cpwc = kv($0, "cpu_s_per_GiB"); cpwr = kv($0, "peak_rss_MiB") } }
  /phase=nfscp_read/  { v = kv($0, "MiBps") + 0; if (v > cpr) { cpr = v; cprc = kv($0, "cpu_s_per_GiB"); cprr = kv($0, "peak_rss_MiB") } }
  /phase=mount_/ { k = kv($0, "phase") " " kv($0, "io") " nconnect=" kv($0, "nconnect"); v = kv($0, "MiBps") + 0; if (v > mount[k]) mount[k] = v }
  /phase=(write|read|rand4k) / {
    k = kv($0, "phase") " " kv($0, "io") " " kv($0, "nconnect")
    v = (kv($0, "phase") == "rand4k") ? kv($0, "ops_per_s") + 0 : kv($0, "MiBps") + 0
    if (v > best[k]) { best[k] = v; cpu[k] = kv($0, "cpu_s_per_GiB"); sc[k] = kv($0, "syscalls_per_rpc"); lsc[k] = kv($0, "loop_syscalls_per_rpc"); rss[k] = kv($0, "peak_rss_MiB"); cus[k] = kv($0, "cpu_us_per_op") }
  }
  END {
    for (k in mount) printf "through the mount: %-24s %6.0f MiB/s  x%.2f nfs-cp\n", k, mount[k], mount[k] / (k ~ /write/ ? cpw : cpr)
    printf "nfs-cp: write %.0f MiB/s (%s CPU s/GiB, %s MiB RSS), read %.0f MiB/s (%s CPU s/GiB, %s MiB RSS)\n", cpw, cpwc, cpwr, cpr, cprc, cprr
    printf "%-7s %-8s %3s %10s %9s %9s %9s %8s %8s\n", "phase", "io", "nc", "MiB/s|op/s", "x nfs-cp", "CPUs/GiB", "sys/rpc", "loop/rpc", "RSS MiB"
    split("write read rand4k", ph, " "); split("io_uring epoll", ios, " ")
    for (p = 1; p <= 3; p++) for (n = 1; n <= 8; n *= 2) for (i = 1; i <= 2; i++) {
      k = ph[p] " " ios[i] " " n
      if (!(k in best)) continue
      base = ph[p] == "write" ? cpw : ph[p] == "read" ? cpr : 0
      ratio = base > 0 ? sprintf("%.2f", best[k] / base) : "-"
      printf "%-7s %-8s %3d %10.0f %9s %9s %9s %8s %8s\n", ph[p], ios[i], n, best[k], ratio, (ph[p] == "rand4k" ? cus[k] "us/op" : cpu[k]), sc[k], lsc[k], rss[k]
    }
    for (p = 1; p <= 3; p++) for (n = 1; n <= 8; n *= 2) {
      ku = ph[p] " io_uring " n; ke = ph[p] " epoll " n
      if ((ku in best) && (ke in best))
        printf "uring/epoll %-6s nconnect=%d: speed x%.2f, syscalls/rpc %s vs %s, loop syscalls/rpc %s vs %s\n", ph[p], n, best[ku] / best[ke], sc[ku], sc[ke], lsc[ku], lsc[ke]
    }
  }' "$out"
