#!/bin/bash
# nfsshim gc --silly while some process holds a file on a FUSE mount whose daemon is
# stopped (SIGSTOP; a hung NFS or FUSE server is the same to a stat): the holder scan
# must not ask that filesystem for attributes (statx AT_STATX_DONT_SYNC), so gc of an
# unrelated directory finishes. Nor may the walk of the tree ask a FUSE mount inside it
# (a second bindfs mounted in the walked directory, stopped too): its mount point is
# recognized without a round trip (statx AT_STATX_DONT_SYNC) and skipped. Needs root and
# bindfs.
. "$(dirname "$0")/lib.sh"
[[ $(id -u) == 0 ]] || { echo "skip: needs root (FUSE mount)"; exit 77; }
command -v bindfs >/dev/null || fail "bindfs is not installed"

src=$tmp/src mnt=$tmp/mnt d=$tmp/silly
mkdir "$src" "$mnt" "$d" "$d/inner"
echo data >"$src/file"
bindfs -f "$src" "$mnt" &
bindfs_pid=$!
bindfs -f "$src" "$d/inner" &
inner_pid=$!
fuse_cleanup() {
  kill -CONT "$bindfs_pid" "$inner_pid" 2>/dev/null
  for p in "${holder_pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  for m in "$mnt" "$d/inner"; do
    mountpoint -q "$m" && { fusermount3 -u "$m" 2>/dev/null || umount -l "$m"; }
  done
  kill "$bindfs_pid" "$inner_pid" 2>/dev/null
  cleanup
}
trap fuse_cleanup EXIT
for m in "$mnt" "$d/inner"; do
  for ((i = 0; i < 100; i++)); do mountpoint -q "$m" && break; sleep 0.1; done
  mountpoint -q "$m" || fail "bindfs did not mount on $m"
done
sleep 300 <"$mnt/file" &
holder_pids+=($!)
sleep 2  # past the kernel's attribute timeout (1 s): a plain stat now asks the daemon
kill -STOP "$bindfs_pid" "$inner_pid"

touch "$d/.nfs0000000000000001000000f1"
timeout -k 5 20 "$nfsshim" gc --silly --max-age 0 --dry-run "$d" >"$tmp/out" 2>&1
rc=$?
[[ $rc != 124 && $rc != 137 ]] || fail "gc hung on a stopped FUSE daemon (timeout, rc $rc): $(cat "$tmp/out")"
[[ $rc == 0 ]] || fail "gc: $rc $(cat "$tmp/out")"
grep -qE "^(would remove|kept): $d/.nfs0000000000000001000000f1" "$tmp/out" || fail "gc output: $(cat "$tmp/out")"
grep -F "$d/" "$tmp/out"
pass "gc finishes while a FUSE daemon that a process holds a file of, and one mounted in the walked tree, are stopped"
