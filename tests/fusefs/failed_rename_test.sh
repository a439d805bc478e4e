#!/bin/bash
# A rename over a file open through the mount that the backing filesystem refuses (EXDEV:
# the source is on another filesystem mounted inside SOURCE) returns the plain call's error
# and leaves the target under its name, with its data, also after its holder closed. SOURCE
# is bindfs (a FUSE SOURCE hides unlinked open files beside their name, so the daemon buries
# the target before the rename and must put it back).
. "$(dirname "$0")/lib.sh"
command -v bindfs >/dev/null || fail "bindfs not installed"
mkdir -p "$T/real/sub" "$T/bind" "$T/mnt"
mount -t tmpfs -o size=1m nfsshim-failed-rename "$T/real/sub" || fail "cannot mount a tmpfs"
trap 'fusermount3 -u -z "$T/mnt" 2>/dev/null; fusermount3 -u -z "$T/bind" 2>/dev/null; umount -l "$T/real/sub"; cleanup' EXIT
mount_bindfs "$T/real" "$T/bind"
# The target is put back by a hard link and its graveyard name is unlinked. bindfs (libfuse's
# path-based API) keeps the file's node under that removed name and drops it at the last
# release; names of it cached by the kernel (bindfs's entries, ours) lead to that node (ENOENT)
# until they expire, 1 s for bindfs. entry_timeout=0 for ours, and the check waits out
# bindfs's. NFS, which keeps a file by its handle, has no such window.
mount_shim "$T/bind" "$T/mnt" -o entry_timeout=0
echo old > "$T/mnt/target" && echo new > "$T/mnt/sub/src" || fail "cannot write through the mount"
echo other > "$T/real/plain-target" && echo src > "$T/real/sub/plain-src"
rename_err() { /usr/bin/python3 -c 'import os, sys
try:
    os.rename(sys.argv[1], sys.argv[2]); print("ok")
except OSError as e:
    print(os.strerror(e.errno))' "$@"; }
plain=$(rename_err "$T/real/sub/plain-src" "$T/real/plain-target")
exec 5< "$T/mnt/target"
shim=$(rename_err "$T/mnt/sub/src" "$T/mnt/target")
echo "plain: $plain; through the mount, target held: $shim"
[ "$plain" != ok ] || fail "the plain rename across filesystems worked: the case cannot be made"
[ "$shim" = "$plain" ] || fail "through the mount: '$shim', plainly: '$plain'"
[ "$(cat "$T/mnt/target")" = old ] || fail "the target's name lost its data while held"
[ "$(cat <&5)" = old ] || fail "the holder lost its data"
exec 5<&-
sleep 1.2  # the RELEASE comes after close(2) returns; bindfs's cached entries expire (above)
[ "$(cat "$T/mnt/target")" = old ] || fail "the target is gone after its holder closed"
[ "$(cat "$T/real/target")" = old ] || fail "the target is gone from SOURCE"
[ "$(cat "$T/mnt/sub/src")" = new ] || fail "the source changed"
left=$(ls -A "$T/real/$GRAVEYARD/u0" 2>/dev/null)
[ -z "$left" ] || fail "graveyard not empty: $left"
pass "a refused rename over a held target ($plain) leaves it in place, before and after its last close"
