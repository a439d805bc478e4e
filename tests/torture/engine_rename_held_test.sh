#!/bin/bash
# engine_rename_held_test.sh [SECONDS]: regression test of a bug the engine phase found
# (README.md, "Found and fixed"): through nfsshim-fuse over the direct NFSv3 engine, a file
# that was replaced by rename(2) while other processes opened and read it gave them ESTALE. No fault is
# needed: the load's checkpoint threads (write ckpt.tmp, rename over ckpt, while another
# thread opens ckpt, waits 4 ms, reads it) hit it within seconds. Private nfs-ganesha on
# 127.0.0.1:25149/25148 (FSAL VFS). Exit 0 iff the load passes. Needs root, /dev/fuse,
# nfs-ganesha; NFSSHIM_BUILD names the build dir.
set -uo pipefail
secs=${1:-10}
build=${NFSSHIM_BUILD:-$(cd "$(dirname "$0")/../.." && pwd)/build}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../engine/ganesha.sh"
w=$(mktemp -d /tmp/nfsshim-rename-held.XXXXXX)
mkdir -p "$w/mnt" "$w/export"
daemon=
cleanup() {
  grep -q " $w/mnt " /proc/mounts && fusermount3 -u -z "$w/mnt"
  [ -n "$daemon" ] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
  ganesha_stop "$w/state"
  rm -rf "$w"
}
trap cleanup EXIT
ganesha_start "$w/state" "$w/export" 25149 25148 VFS || exit 2
"$build/fusefs/nfsshim-fuse" "nfs://127.0.0.1/export?vers=3&nconnect=4&nfsport=25149&mountport=25148" "$w/mnt" \
  -f -o log=file:"$w/fuse.log" 2> "$w/fuse.stderr" &
daemon=$!
for _ in $(seq 100); do grep -q " $w/mnt " /proc/mounts && break; sleep 0.05; done
grep -q " $w/mnt " /proc/mounts || { echo "the nfs:// mount did not come up" >&2; exit 2; }
"$build/tests/torture/torture_driver" load --procs 1 --threads 1 --partitions 1 --dir "$w/mnt" \
  --backing "$w/export" --seconds "$secs" --daemon-pid "$daemon" --label rename-held > "$w/out" 2> "$w/err"
rc=$?
grep -E '^  (operations|checkpoint replaces|EBUSY/ENOTEMPTY/ESTALE)' "$w/out"
sed -n 's/^torture\[[0-9]*\]: //p' "$w/err" | sort | uniq -c | sort -rn | head -n 5
[ $rc = 0 ] && echo "PASS: no error through the nfs:// mount" || echo "FAIL: see above"
exit $rc
