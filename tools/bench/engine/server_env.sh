# Sourced by the engine benchmarks: how their nfs-ganesha runs. Sets export_on (ram|disk)
# and server_tunables (GLIBC_TUNABLES for ganesha), or exits 2 naming the bad setting.
# Where ganesha's export lives: in RAM by default (a tmpfs dir under /dev/shm), as ONTAP
# takes UNSTABLE writes and COMMITs into NVRAM; ENGINE_BENCH_EXPORT=disk puts it under /tmp,
# where this VM's disk makes every COMMIT's fsync the limit of nfs-cp and the engines alike.
export_on=${ENGINE_BENCH_EXPORT:-ram}
[[ $export_on =~ ^(ram|disk)$ ]] || { echo "ENGINE_BENCH_EXPORT must be ram or disk, got '$export_on'" >&2; exit 2; }
# ganesha's malloc: with glibc's default thresholds it hands its 1 MiB READ buffers back to
# the kernel and faults them in again: 9% of its CPU in NFSv4.1 reads went to page faults
# (perf; 2% in NFSv3 ones). Raised thresholds keep them, so the test server costs what the
# protocol costs. One arena: with glibc's 8 per CPU, each of ganesha's worker threads
# grows buffers of its own, and a thread arena frees a whole heap it no longer uses
# whatever the trim threshold, so its NFSv4.1 reads still faulted 9000-43000 pages per
# GiB (14% of its CPU, in the copy from tmpfs into fresh pages) after several runs, its
# NFSv3 ones 0; with one arena, 10 after two runs, and v4.1 reads ran as fast as v3's.
# ENGINE_BENCH_SERVER_MALLOC=default keeps glibc's defaults.
server_malloc=${ENGINE_BENCH_SERVER_MALLOC:-tuned}
case $server_malloc in
  tuned) server_tunables=glibc.malloc.trim_threshold=268435456:glibc.malloc.mmap_threshold=33554432:glibc.malloc.arena_max=1 ;;
  default) server_tunables=${GLIBC_TUNABLES:-} ;;
  *) echo "ENGINE_BENCH_SERVER_MALLOC must be tuned or default, got '$server_malloc'" >&2; exit 2 ;;
esac

# engine_bench counts syscalls with the tracepoint raw_syscalls:sys_enter, whose id it reads
# from tracefs: mounted here if the machine has not (a fresh VM often has not; then the
# counts read n/a), and unmounted again by bench_tracefs_down.
tracefs_ours=
bench_tracefs_up() {
  if [ ! -e /sys/kernel/tracing/events ] && [ ! -e /sys/kernel/debug/tracing/events ]; then
    mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null && tracefs_ours=1 ||
      echo "cannot mount tracefs on /sys/kernel/tracing: syscall counts will read n/a" >&2
  fi
}
bench_tracefs_down() { if [ -n "$tracefs_ours" ]; then umount /sys/kernel/tracing || true; fi; }

# bench_ganesha_up NAME: the private nfs-ganesha of paired.sh and instr_per_op.sh on
# 127.0.0.1:24249 (MOUNT 24248), dirs /tmp/nfsshim-NAME.*, export as chosen above, stopped
# with its dirs removed on exit. Sets port, mnt, work, export_dir. Needs
# tests/engine/ganesha.sh sourced. ganesha_start only checks that the port answers: another
# server there would be measured, so a port in use is an error.
bench_ganesha_up() {
  port=24249 mnt=24248
  local p
  for p in $port $mnt; do
    if bash -c "exec 3<>/dev/tcp/127.0.0.1/$p" 2>/dev/null; then
      echo "127.0.0.1:$p is in use (another benchmark run?): stop it first" >&2; exit 1
    fi
  done
  work=$(mktemp -d "/tmp/nfsshim-$1.XXXXXX")
  if [ "$export_on" = ram ]; then export_dir=$(mktemp -d "/dev/shm/nfsshim-$1-export.XXXXXX")
  else export_dir=$work/export; fi
  trap 'ganesha_stop "$work/state"; rm -rf "$work" "$export_dir"; bench_tracefs_down' EXIT
  bench_tracefs_up
  GLIBC_TUNABLES=$server_tunables ganesha_start "$work/state" "$export_dir" $port $mnt VFS
}
