#!/bin/bash
# nfsshim gc --silly while some process holds a file on a FUSE mount whose daemon is
# stopped (SIGSTOP; a hung NFS or FUSE server is the same to a stat): the holder scan
# must not ask that filesystem for attributes (statx AT_STATX_DONT_SYNC), so gc of an
# unrelated directory finishes. Needs root and bindfs.
. "$(dirname "$0")/lib.sh"
[[ $(id -u) == 0 ]] || { echo "skip: needs root (FUSE mount)"; exit 77; }
command -v bindfs >/dev/null || fail "bindfs is not installed"

src=$tmp/src mnt=$tmp/mnt d=$tmp/silly
mkdir "$src" "$mnt" "$d"
echo data >"$src/file"
bindfs -f "$src" "$mnt" &
bindfs_pid=$!
fuse_cleanup() {
  kill -CONT "$bindfs_pid" 2>/dev/null
  for p in "${holder_pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  mountpoint -q "$mnt" && { fusermount3 -u "$mnt" 2>/dev/null || umount -l "$mnt"; }
  kill "$bindfs_pid" 2>/dev/null
  cleanup
}
trap fuse_cleanup EXIT
for ((i = 0; i < 100; i++)); do mountpoint -q "$mnt" && break; sleep 0.1; done
mountpoint -q "$mnt" || fail "bindfs did not mount"
sleep 300 <"$mnt/file" &
holder_pids+=($!)
sleep 2  # past the kernel's attribute timeout (1 s): a plain stat now asks the daemon
kill -STOP "$bindfs_pid"

touch "$d/.nfs0000000000000001000000f1"
timeout -k 5 20 "$nfsshim" gc --silly --max-age 0 --dry-run "$d" >"$tmp/out" 2>&1
rc=$?
[[ $rc != 124 && $rc != 137 ]] || fail "gc hung on the stopped FUSE daemon's file (timeout, rc $rc): $(cat "$tmp/out")"
[[ $rc == 0 ]] || fail "gc: $rc $(cat "$tmp/out")"
grep -qE "^(would remove|kept): $d/.nfs0000000000000001000000f1" "$tmp/out" || fail "gc output: $(cat "$tmp/out")"
grep -F "$d/" "$tmp/out"
pass "gc finishes while a FUSE daemon that a process holds a file of is stopped"
