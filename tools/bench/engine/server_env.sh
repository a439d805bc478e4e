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
# protocol costs; ENGINE_BENCH_SERVER_MALLOC=default keeps glibc's defaults.
server_malloc=${ENGINE_BENCH_SERVER_MALLOC:-tuned}
case $server_malloc in
  tuned) server_tunables=glibc.malloc.trim_threshold=268435456:glibc.malloc.mmap_threshold=33554432 ;;
  default) server_tunables=${GLIBC_TUNABLES:-} ;;
  *) echo "ENGINE_BENCH_SERVER_MALLOC must be tuned or default, got '$server_malloc'" >&2; exit 2 ;;
esac
