#!/bin/bash
# A rename over a file held open through the mount buries the target first (SOURCE is
# bindfs: a FUSE SOURCE would hide the holders' file beside its name). When the rename then
# fails (EXDEV: the source is on a tmpfs inside SOURCE) and putting the target back fails
# too (strace makes every linkat and renameat2 of the daemon fail: the two ways back), the
# caller is told its file stayed, so the daemon must not remove it: not at the last release
# and not when it (or `nfsshim gc`) reaps the graveyard later. The entry is renamed k~ENTRY,
# a name no reaper takes (fusefs/graveyard_ops.cc, unbury). The preload's twin is
# tests/preload/failed_restore.sh. (LeakSanitizer cannot run under ptrace: off here.)
. "$(dirname "$0")/lib.sh"
command -v bindfs >/dev/null || fail "bindfs not installed"
command -v strace >/dev/null || fail "strace is not installed (tools/dev/install-deps.sh)"
mkdir -p "$T/real/sub" "$T/bind" "$T/mnt"
mount -t tmpfs -o size=1m nfsshim-failed-restore "$T/real/sub" || fail "cannot mount a tmpfs"
trap 'fusermount3 -u -z "$T/mnt" 2>/dev/null; fusermount3 -u -z "$T/bind" 2>/dev/null; umount -l "$T/real/sub"; cleanup' EXIT
mount_bindfs "$T/real" "$T/bind"
plain_shim=$SHIM
SHIM="strace -f -qq -o /dev/null -e trace=linkat,renameat2 -e inject=linkat:error=EIO
  -e inject=renameat2:error=EIO env ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=0 $plain_shim"
mount_shim "$T/bind" "$T/mnt" -o entry_timeout=0
echo "the target's data" > "$T/mnt/target" && echo new > "$T/mnt/sub/src" ||
  fail "cannot write through the mount"
exec 5< "$T/mnt/target"
out=$(/usr/bin/python3 -c 'import os, sys
try:
    os.rename(sys.argv[1], sys.argv[2]); print("ok")
except OSError as e:
    print(os.strerror(e.errno))' "$T/mnt/sub/src" "$T/mnt/target")
echo "rename through the mount, target held: $out"
[ "$out" = "Invalid cross-device link" ] || fail "the rename did not fail as the plain call does: $out"
grep "cannot put 'target' back" "$T/shim.log" ||
  fail "the put-back did not fail: the case is not made: $(grep -iE 'warn|error' "$T/shim.log")"
[ ! -e "$T/real/target" ] || fail "the target is back: the case is not made"
[ "$(cat <&5)" = "the target's data" ] || fail "the holder lost its data"
exec 5<&-
grave=$T/real/$GRAVEYARD/u$(id -u)
kept() { grep -l "the target's data" "$grave"/* 2>/dev/null; }
sleep 0.5  # the last RELEASE comes after close(2) returns
[ -n "$(kept)" ] || fail "removed at the last release: $(ls -A "$grave")"
unmount_shim "$T/mnt"
# A new daemon reaps the graveyard at its start; then the daily gc.
SHIM=$plain_shim
mount_shim "$T/bind" "$T/mnt"
unmount_shim "$T/mnt"
[ -n "$(kept)" ] || fail "reaped by the next daemon's start: $(ls -A "$grave")"
"$BUILD/tools/nfsshim" gc "$T/real" || fail "nfsshim gc $T/real failed"
[ -n "$(kept)" ] || fail "removed by nfsshim gc: $(ls -A "$grave")"
pass "a held target that could not be put back after a failed rename is kept as $(basename "$(kept)")"
