#!/bin/bash
# engine_bench.sh BUILD_DIR [SIZE_MIB]
# The direct NFS engines against libnfs's nfs-cp, in one run, on one private nfs-ganesha
# (FSAL VFS, NFSv3 and NFSv4.1, 127.0.0.1:24049/24048): sequential write and read of
# SIZE_MIB (default 1024) and 4 KiB random reads, for nconnect=1,2,4,8 with io_uring and
# epoll, the NFSv3 engine and the NFSv4.1 session engine one after the other per setting.
# Prints each engine_bench line, then ratios: engine MiB/s / nfs-cp MiB/s (same server,
# same run), v4.1 / v3, io_uring vs epoll syscalls per RPC, and v4.1's peak slots in use.
# ENGINE_BENCH_REPS (default 2): repetitions, the best counts. Needs root (namespaces for
# ganesha). fs.pipe-max-size is raised to 2 MiB for the run (restored at exit) so that the
# mounted daemon takes WRITE data through a pipe, as a root daemon started by systemd does
# (CAP_SYS_RESOURCE, which root in a container may lack); ENGINE_BENCH_PIPES=asis keeps it.
set -euo pipefail
build=$(readlink -f "${1:?usage: engine_bench.sh BUILD_DIR [SIZE_MIB]}")
size=${2:-1024}
reps=${ENGINE_BENCH_REPS:-2}  # repetitions of the engine matrix; the best one counts
root=$(cd "$(dirname "$0")/../../.." && pwd)
. "$root/tools/bench/engine/server_env.sh"
[[ $reps =~ ^[1-9][0-9]*$ ]] || { echo "ENGINE_BENCH_REPS must be a positive integer, got '$reps'" >&2; exit 2; }
[[ $size =~ ^[1-9][0-9]*$ ]] || { echo "SIZE_MIB must be a positive integer, got '$size'" >&2; exit 2; }
. "$root/tests/engine/ganesha.sh"
bench=$build/tools/bench/engine/engine_bench
[ -x "$bench" ] || { echo "build engine_bench first: cmake --build $build --target engine_bench" >&2; exit 1; }
port=24049 mnt=24048
work=$(mktemp -d /tmp/nfsshim-engine-bench.XXXXXX)
shm_dst=/dev/shm/nfsshim-engine-bench.$$
if [ "$export_on" = ram ]; then export_dir=$(mktemp -d /dev/shm/nfsshim-engine-bench-export.XXXXXX)
else export_dir=$work/export; fi
pipe_file=/proc/sys/fs/pipe-max-size pipe_was=
cleanup() {
  ganesha_stop "$work/state"; rm -rf "$work" "$export_dir"; rm -f "$shm_dst" "$shm_dst.warm"; bench_tracefs_down
  if [ -n "$pipe_was" ]; then echo "$pipe_was" >"$pipe_file"; fi
}
trap cleanup EXIT
if [ "${ENGINE_BENCH_PIPES:-raise}" != asis ] && [ "$(cat "$pipe_file")" -lt $((2 << 20)) ]; then
  pipe_was=$(cat "$pipe_file")
  echo $((2 << 20)) >"$pipe_file" || { echo "cannot raise $pipe_file (ENGINE_BENCH_PIPES=asis runs without)" >&2; exit 1; }
fi
echo "fs.pipe-max-size: $(cat "$pipe_file")${pipe_was:+ (raised from $pipe_was for this run)}"
bench_tracefs_up
GLIBC_TUNABLES=$server_tunables ganesha_start "$work/state" "$export_dir" $port $mnt VFS
# The server's CPU per GiB beside the client's: on this loopback test bed both share the
# machine's CPUs, so their sum bounds the speed of every client (summary.awk: "ceiling").
srv_pid=$(pgrep -f "^ganesha.nfsd -F -f $work/state/ganesha.conf" | head -1)
[ -n "$srv_pid" ] || { echo "cannot find the ganesha.nfsd process" >&2; exit 1; }
pid_cpu() { sed 's/.*) //' "/proc/$1/stat" | awk -v t="$(getconf CLK_TCK)" '{ printf "%.2f", ($12 + $13) / t }'; }
srv_cpu() { pid_cpu "$srv_pid"; }
url="nfs://127.0.0.1/export?vers=3&nfsport=$port&mountport=$mnt"
# The same export through the v4 pseudo fs (Pseudo = /export): same server, same files.
url41="nfs://127.0.0.1/export?vers=4.1&nfsport=$port"
libnfs_url() { echo "nfs://127.0.0.1/export/$1?version=3&nfsport=$port&mountport=$mnt"; }
head -c "$((size << 20))" /dev/zero > "$work/src.dat"
out=$work/results.txt
: > "$out"

# Memory the kernel has not used for a while costs several times more to fill: on a VM
# whose balloon reports free pages (virtio free page reporting, as on our machines) the
# host takes them back about 2 s after they are freed and faults them in again on the next
# touch. Measured here: 2 GiB written into tmpfs took 5.3-5.6 s in fresh memory, 0.8-1.2 s
# right after 2 GiB were freed, 2.9 s 15 s after; ganesha's CPU per GiB written swung
# 0.8-4.3 s unwarmed and 0.7-1.4 s warmed. Every contender's writes fill new pages (the
# server's tmpfs export, nfs-cp's tmpfs target when it reads), so each one gets memory
# just freed, SIZE MiB plus a tenth: the same start for all, whatever ran before.
warm_memory() {
  dd if=/dev/zero of="$shm_dst.warm" bs=1M count=$((size + size / 10 + 1)) status=none
  rm -f "$shm_dst.warm"
}

nfscp() {  # nfscp write|read -> "phase=nfscp_write MiBps=.. cpu_s_per_GiB=.. peak_rss_MiB=.."
  local dir=$1 t s0  # s0: the server's CPU seconds before
  sync
  if [ "$dir" = write ]; then rm -f "$export_dir/nfscp.dat"; fi  # nfs-cp does not overwrite
  rm -f "$shm_dst"
  warm_memory
  s0=$(srv_cpu)
  if [ "$dir" = write ]; then
    t=$( { /usr/bin/time -f "%e %U %S %M" nfs-cp "$work/src.dat" "$(libnfs_url nfscp.dat)" >/dev/null; } 2>&1 | tail -1)
  else
    # nfs-cp cannot write to /dev/null (it creates its target): a tmpfs file costs the least.
    t=$( { /usr/bin/time -f "%e %U %S %M" nfs-cp "$(libnfs_url nfscp.dat)" "$shm_dst" >/dev/null; } 2>&1 | tail -1)
    rm -f "$shm_dst"
  fi
  echo "$t" | awk -v d="$dir" -v s="$size" -v s0="$s0" -v s1="$(srv_cpu)" '{
    printf "phase=nfscp_%s MiBps=%.1f cpu_s_per_GiB=%.3f server_cpu_s_per_GiB=%.3f peak_rss_MiB=%d secs=%.2f\n", d, s/$1, ($2+$3)/(s/1024), (s1-s0)/(s/1024), $4/1024, $1}'
}

# One uncounted run per engine first (as paired.sh): ganesha's first reads of each version
# fill its heap (server_env.sh); else the first configuration measured pays for it.
for u in "$url" "$url41"; do "$bench" "$u&nconnect=4" --size "$size" --rand-ops 20000 >/dev/null; done
for rep in $(seq "$reps"); do
  nfscp write | tee -a "$out"
  nfscp read | tee -a "$out"
  for n in 1 2 4 8; do
    for io in uring epoll; do
      for u in "$url" "$url41"; do
        warm_memory
        "$bench" "$u&nconnect=$n&io=$io" --size "$size" --rand-ops 20000 --server-pid "$srv_pid" | sed "s/^/rep=$rep /" | tee -a "$out"
      done
    done
  done
done

# Through the FUSE mount (nfsshim-fuse nfs://..., NFSv3 and NFSv4.1): dd of the same size, 1 MiB blocks, the
# write ending with fsync (COMMIT). Best of the two repetitions like the rest. Per phase the
# client's CPU per GiB: the daemon's (/proc/PID/stat; its FUSE copies are its system time)
# plus dd's (/usr/bin/time; the page cache copies on its side), the server's, and the
# daemon's peak RSS (VmHWM) over the mount's life: summary.awk's mount ceilings.
shim=$build/fusefs/nfsshim-fuse
if [ -x "$shim" ]; then
  mnt=$work/mnt
  mkdir -p "$mnt"
  for rep in $(seq "$reps"); do
    for cfg in "3 1 uring" "3 4 uring" "3 4 epoll" "3 8 uring" \
               "4.1 1 uring" "4.1 4 uring" "4.1 4 epoll" "4.1 8 uring"; do
      set -- $cfg
      vers=$1; shift
      if [ "$vers" = 4.1 ]; then u=$url41; else u=$url; fi
      "$shim" "$u&nconnect=$1&io=$2" "$mnt" -f -o log=file:"$work/shim.log" &
      spid=$!
      for i in $(seq 100); do grep -q " $mnt .* fuse.nfsshim-fuse " /proc/self/mountinfo && break; sleep 0.05; done
      warm_memory
      d0=$(pid_cpu $spid) s0=$(srv_cpu) t0=$(date +%s.%N)
      /usr/bin/time -f "%U %S" -o "$work/dd_w.time" dd if=/dev/zero of="$mnt/fuse.dat" bs=1M count="$size" conv=fsync status=none
      t1=$(date +%s.%N) d1=$(pid_cpu $spid) s1=$(srv_cpu) u1=$(date +%s.%N)  # u1: the read's start
      /usr/bin/time -f "%U %S" -o "$work/dd_r.time" dd if="$mnt/fuse.dat" of=/dev/null bs=1M status=none
      t2=$(date +%s.%N) d2=$(pid_cpu $spid) s2=$(srv_cpu)
      hwm=$(awk '/^VmHWM:/ { print int($2 / 1024) }' "/proc/$spid/status")
      rm -f "$mnt/fuse.dat"
      fusermount3 -u "$mnt"
      # Another process that copied our mount namespace meanwhile (unshare -m) keeps the FUSE
      # connection alive after the unmount: then the daemon is told to stop.
      for i in $(seq 50); do kill -0 $spid 2>/dev/null || break; sleep 0.1; done
      kill $spid 2>/dev/null || true
      wait $spid || true
      # The daemon's unmount line: how many WRITEs came with their data through a pipe.
      piped=$(grep -o 'writes with their data through a pipe (splice): [0-9]*' "$work/shim.log" | tail -n 1 | awk '{ print $NF }')
      awk -v a="$t0" -v b="$t1" -v b2="$u1" -v c="$t2" -v s="$size" -v n="$1" -v io="$2" -v r="$rep" -v v="$vers" \
          -v d0="$d0" -v d1="$d1" -v d2="$d2" -v s0="$s0" -v s1="$s1" -v s2="$s2" -v hwm="$hwm" -v piped="${piped:-?}" \
          -v ddw="$(tail -1 "$work/dd_w.time")" -v ddr="$(tail -1 "$work/dd_r.time")" 'BEGIN {
        g = s / 1024; split(ddw, w, " "); split(ddr, q, " ")
        printf "rep=%s phase=mount_write vers=%s io=%s nconnect=%s MiBps=%.1f daemon_cpu_s_per_GiB=%.3f app_cpu_s_per_GiB=%.3f server_cpu_s_per_GiB=%.3f daemon_peak_rss_MiB=%d piped_writes=%s\n", r, v, io, n, s / (b - a), (d1 - d0) / g, (w[1] + w[2]) / g, (s1 - s0) / g, hwm, piped
        printf "rep=%s phase=mount_read vers=%s io=%s nconnect=%s MiBps=%.1f daemon_cpu_s_per_GiB=%.3f app_cpu_s_per_GiB=%.3f server_cpu_s_per_GiB=%.3f daemon_peak_rss_MiB=%d\n", r, v, io, n, s / (c - b2), (d2 - d1) / g, (q[1] + q[2]) / g, (s2 - s1) / g, hwm }' | tee -a "$out"
    done
  done
fi

echo
echo "=== summary (best of $reps repetitions; the machine is shared, so single runs are noisy)"
awk -v ncpu="$(nproc)" -f "$root/tools/bench/engine/lib.awk" -f "$root/tools/bench/engine/summary.awk" "$out"
