#!/bin/bash
# sweep_bindfs.sh PRELOAD_LIB SCRATCH
# A process WITHOUT the shim holds a file open and unlinks it on bindfs, leaving a
# .fuse_hidden* file (as an unshimmed process leaves .nfs* on NFS). rmdir of that
# directory fails with ENOTEMPTY plainly; through the shim it must succeed by moving
# the leftover into the graveyard, while the holder keeps reading its data.
set -euo pipefail
lib=$1 scratch=$2
src=$scratch/src mnt=$scratch/mnt
cleanup() { exec 5<&- 2>/dev/null || true; mountpoint -q "$mnt" && { fusermount3 -u "$mnt" 2>/dev/null || umount -l "$mnt"; }; true; }
trap cleanup EXIT
cleanup
rm -rf "$scratch"; mkdir -p "$src" "$mnt"
bindfs "$src" "$mnt"
mkdir "$mnt/p"; echo "held data" > "$mnt/p/f"
exec 5< "$mnt/p/f"
rm "$mnt/p/f"
ls -A "$mnt/p" | grep -q '^.fuse_hidden' || { echo "FAIL: bindfs left no .fuse_hidden file"; exit 1; }
if rmdir "$mnt/p" 2>/dev/null; then echo "FAIL: plain rmdir succeeded: the test does not bite"; exit 1; fi
echo "plain rmdir: ENOTEMPTY, as expected"
LD_PRELOAD=$lib NFSSHIM_WATCH=$mnt rmdir "$mnt/p" || { echo "FAIL: rmdir through the shim failed"; exit 1; }
[ ! -e "$mnt/p" ] || { echo "FAIL: directory still there"; exit 1; }
[ "$(cat <&5)" = "held data" ] || { echo "FAIL: the holder lost its data"; exit 1; }
exec 5<&-
grave=$src/.graveyard.nfsshim/u$(id -u)
for i in $(seq 50); do [ -z "$(ls -A "$grave")" ] && break; sleep 0.1; done
[ -z "$(ls -A "$grave")" ] || { echo "FAIL: swept file not released after the holder closed: $(ls -A "$grave")"; exit 1; }
echo "PASS: rmdir swept the leftover; the holder kept reading; released at its close"
