#!/bin/bash
# An unlink through the mount of a held file whose name a directory takes between the
# daemon's stat and its rename into the graveyard (another NFS client, a program working on
# SOURCE itself): the plain unlink would say EISDIR and leave the directory. The daemon
# must not hide the directory in the graveyard (where no reaper can remove it: its tree
# would be gone from every view for good). SOURCE is bindfs (a FUSE SOURCE: the daemon
# buries held files); strace holds the daemon's renameat for 5 s at its entry, the window
# in which the test moves the file away and a directory to its name, through bindfs (its
# path-based node table would answer the old paths wrongly after changes beneath it).
# (LeakSanitizer cannot run under ptrace: off here.)
. "$(dirname "$0")/lib.sh"
command -v bindfs >/dev/null || fail "bindfs not installed"
command -v strace >/dev/null || fail "strace is not installed (tools/dev/install-deps.sh)"
# The test finds the daemon at renameat by its syscall number (264 on x86_64).
[ "$(uname -m)" = x86_64 ] || { echo "SKIP: x86_64 only (renameat's number)"; exit 77; }
mkdir -p "$T/real/dir" "$T/bind" "$T/mnt"
echo "the tree's data" > "$T/real/dir/inner"
trap 'fusermount3 -u -z "$T/mnt" 2>/dev/null; fusermount3 -u -z "$T/bind" 2>/dev/null; cleanup' EXIT
mount_bindfs "$T/real" "$T/bind"
SHIM="strace -f -qq -o /dev/null -e trace=renameat -e inject=renameat:delay_enter=5000000
  env ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=0 $SHIM"
mount_shim "$T/bind" "$T/mnt"
echo "the file's data" > "$T/mnt/name" || fail "cannot write through the mount"
exec 5< "$T/mnt/name"
/usr/bin/python3 -c 'import os, sys
try:
    os.unlink(sys.argv[1]); print("ok")
except OSError as e:
    print(os.strerror(e.errno))' "$T/mnt/name" > "$T/unlink.out" &
unlinker=$!
# Until a thread of the daemon waits at renameat's entry (syscall 264: x86_64, where the
# suite runs): it has stat'ed 'name', a held file, and is burying it.
in_renameat() {
  local pid f
  for pid in $(pgrep -f "nfsshim-fuse.*$T/mnt"); do
    for f in /proc/"$pid"/task/*/syscall; do
      case $(cat "$f" 2>/dev/null) in "264 "*) return 0 ;; esac
    done
  done
  return 1
}
for _ in $(seq 200); do in_renameat && break; sleep 0.02; done
in_renameat || fail "the daemon never waited in renameat: the case is not made"
mv "$T/bind/name" "$T/bind/moved" && mv "$T/bind/dir" "$T/bind/name" ||
  fail "cannot put the directory in the file's place (through bindfs, which tracks its paths)"
wait $unlinker
out=$(cat "$T/unlink.out")
echo "unlink through the mount, a directory at the name by the daemon's rename: $out"
[ -d "$T/real/name" ] || fail "the directory is gone from its name (unlink said: $out): $(ls -A "$T/real/$GRAVEYARD/u0" 2>&1)"
[ "$(cat "$T/real/name/inner")" = "the tree's data" ] || fail "the directory lost its file"
[ "$out" = "Is a directory" ] || fail "unlink said '$out', the plain call says 'Is a directory'"
held=$(cat <&5)
[ "$held" = "the file's data" ] || fail "the holder lost its data: '$held'"
exec 5<&-
unmount_shim "$T/mnt"
pass "an unlink whose name a directory took meanwhile gives EISDIR and leaves the directory"
