#!/bin/bash
# engine_rename_held_test.sh [SECONDS]: regression test of bugs the engine phase found
# (README.md, "Found and fixed"): through nfsshim-fuse over the direct NFSv3 engine, readers
# of a file that rename(2) replaces got ESTALE.
# 1. The load's checkpoint threads (write ckpt.tmp, rename over ckpt, while another thread
#    opens ckpt, waits 4 ms, reads it) for SECONDS: no error may reach them.
# 2. `torture_driver replace` for SECONDS: one thread replaces f by rename in a loop, 4 open
#    and read it whole; every open must succeed, and the daemon must not have answered any
#    of their OPENs with ESTALE (its debug log says "open: ESTALE"): each one the kernel
#    retried once, and two in a row reached the application (1 in ~250 in the torture load).
# 3. `torture_driver stale-size --fstat 0 --list 1` for SECONDS: a file appended to, mapped
#    up to what the appends returned, its directory listed: no SIGBUS (README.md, "Found and
#    fixed: SIGBUS on a mapping").
# Private nfs-ganesha on 127.0.0.1:25149/25148 (FSAL VFS). Exit 0 iff all pass. Needs root,
# /dev/fuse, nfs-ganesha; NFSSHIM_BUILD names the build dir, NFSSHIM_FUSE_BIN another daemon
# binary (to show the test fails without the fix).
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
"${NFSSHIM_FUSE_BIN:-$build/fusefs/nfsshim-fuse}" "nfs://127.0.0.1/export?vers=3&nconnect=4&nfsport=25149&mountport=25148" \
  "$w/mnt" -f -o log=file:"$w/fuse.log" -o log_level=debug 2> "$w/fuse.stderr" &
daemon=$!
for _ in $(seq 100); do grep -q " $w/mnt " /proc/mounts && break; sleep 0.05; done
grep -q " $w/mnt " /proc/mounts || { echo "the nfs:// mount did not come up" >&2; exit 2; }
"$build/tests/torture/torture_driver" load --procs 1 --threads 1 --partitions 1 --dir "$w/mnt" \
  --backing "$w/export" --seconds "$secs" --daemon-pid "$daemon" --label rename-held > "$w/out" 2> "$w/err"
rc=$?
grep -E '^  (operations|checkpoint replaces|EBUSY/ENOTEMPTY/ESTALE)' "$w/out"
sed -n 's/^torture\[[0-9]*\]: //p' "$w/err" | sort | uniq -c | sort -rn | head -n 5
[ $rc = 0 ] && echo "PASS: the load, no error through the nfs:// mount" || echo "FAIL: the load, see above"
# 2. Only renames replace files from here on: any ESTALE answered to an OPEN is the bug.
mkdir -p "$w/mnt/r"
before=$(wc -l < "$w/fuse.log")
"$build/tests/torture/torture_driver" replace --dir "$w/mnt/r" --seconds "$secs" --readers 4 2>&1 | head -n 12
rrc=${PIPESTATUS[0]}
stale=$(tail -n +"$((before + 1))" "$w/fuse.log" | grep -c 'open: ESTALE')
echo "OPENs the daemon answered ESTALE (each retried once by the kernel): $stale"
if [ "$rrc" = 0 ] && [ "$stale" = 0 ]; then echo "PASS: replace"; else echo "FAIL: replace"; rc=1; fi
# 3. A file grows by appends while a reader maps what the appends returned and the directory
#    is listed: READDIRPLUS attributes older than an append must never set the size back
#    (SIGBUS on the mapping; the old daemon: within 10 s, 2 runs of 2).
mkdir -p "$w/mnt/s"
"$build/tests/torture/torture_driver" stale-size --dir "$w/mnt/s" --seconds "$secs" --list 1 --fstat 0 2>&1 | tail -n 12
src=${PIPESTATUS[0]}
if [ "$src" = 0 ]; then echo "PASS: stale-size"; else echo "FAIL: stale-size (exit $src)"; rc=1; fi
exit $rc
