#!/bin/bash
# Filesystems mounted inside SOURCE are treated as their own kind (fs.h, Fs::local_fs): a
# local one (tmpfs here) like SOURCE's own local files: no FLUSH at close (FOPEN_NOFLUSH)
# and a plain unlink of a closed file; a FUSE one (bindfs) the careful way: a FLUSH at
# every close, whose error close(2) must report.
. "$(dirname "$0")/lib.sh"
M=$T/mnt
mkdir -p "$T/back/local" "$T/back/fuse" "$T/fusesrc" "$M"
mount -t tmpfs nfsshim-submount "$T/back/local" || fail "mount tmpfs"
trap 'fusermount3 -u -z "$M" 2>/dev/null; umount -l "$T/back/local" 2>/dev/null; cleanup' EXIT
mount_bindfs "$T/fusesrc" "$T/back/fuse"

SHIM_DEBUG_OUT=$T/d mount_shim "$T/back" "$M"
flushes() { grep -c "opcode: FLUSH " "$T/d"; }

# A FLUSH is a synchronous request: its line is written before close(2) returns.
f0=$(flushes)
echo a >"$M/local/a" || fail "create on the tmpfs inside SOURCE"
f1=$(flushes)
echo b >"$M/fuse/b" || fail "create on the bindfs inside SOURCE"
f2=$(flushes)
[ "$f1" = "$f0" ] || fail "a close on the tmpfs inside SOURCE sent $((f1 - f0)) FLUSH (want none: a local filesystem)"
[ "$f2" -gt "$f1" ] || fail "a close on the bindfs inside SOURCE sent no FLUSH (want one: FUSE reports errors at close)"
[ "$(cat "$T/back/local/a")" = a ] && [ "$(cat "$T/fusesrc/b")" = b ] || fail "wrong bytes in the backing files"
pass "a tmpfs inside SOURCE: no FLUSH at close; a bindfs inside SOURCE: a FLUSH at close"

# Opened (through passthrough where the kernel has it), closed, deleted: a local
# filesystem keeps nothing for an unseen holder, so this is a plain unlink, not an attempt
# to bury it in SOURCE's graveyard (another filesystem: that would log and count a fallback).
cat "$M/local/a" >/dev/null
rm "$M/local/a" || fail "rm on the tmpfs inside SOURCE"
[ ! -e "$T/back/local/a" ] || fail "the file is still in the tmpfs"
grep -q "another filesystem than the graveyard" "$T/shim.log" &&
  fail "an unlink on the tmpfs inside SOURCE tried the graveyard: $(grep 'another filesystem' "$T/shim.log")"
unmount_shim "$M"
pass "a closed file on the tmpfs inside SOURCE: a plain unlink"

# A listing of a directory holding the mount point of a filesystem that does not answer (a
# stopped bindfs that keeps no attributes) answers at once, as on SOURCE: getdents asks
# nothing of the mounted filesystem, and readdirplus must not either (no attributes for a
# mount point: a stat of that name waits, as on SOURCE). A stat beside it is answered.
mkdir -p "$T/back/sub2/hang" "$T/hangsrc"
echo x >"$T/back/sub2/file"
mount_bindfs "$T/hangsrc" "$T/back/sub2/hang" -o attr_timeout=0
hpid=$(pgrep -f "^bindfs -o attr_timeout=0 $T/hangsrc " | head -n 1)
[ -n "$hpid" ] || fail "no bindfs process"
trap 'kill -CONT "$hpid" 2>/dev/null; fusermount3 -u -z "$M" 2>/dev/null; umount -l "$T/back/local" 2>/dev/null; cleanup' EXIT
# within5 CMD...: runs CMD; 0 if it ended (and succeeded) within 5 s. A request the daemon
# sent on waits for its answer even through SIGKILL: the bindfs continues, then CMD ends.
within5() {
  "$@" >"$T/within.out" 2>&1 &
  local p=$! i
  for i in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$p" 2>/dev/null; then
    kill -CONT "$hpid"
    wait "$p"
    return 124
  fi
  wait "$p"
}
mount_shim "$T/back" "$M"
kill -STOP "$hpid"
within5 ls "$T/back/sub2" || fail "control: ls of the backing directory did not answer"
within5 python3 -c 'import os, sys; print(sorted(os.listdir(sys.argv[1])))' "$M/sub2" ||
  fail "listing a directory that holds an unresponsive mount point hung or failed (rc $?)"
[ "$(cat "$T/within.out")" = "['file', 'hang']" ] || fail "listing of sub2: $(cat "$T/within.out")"
within5 stat "$M/sub2/file" || fail "stat beside the unresponsive mount point hung or failed"
kill -CONT "$hpid"
stat "$M/sub2/hang" >/dev/null || fail "stat of the mount point after the bindfs continued"
unmount_shim "$M"
pass "a listing beside an unresponsive mount point answers (no attributes asked of it)"

# Filesystems inside SOURCE number their inodes on their own (two tmpfs both have a root 1
# and a first file 2), but through the mount every file has one st_dev: their inode numbers
# must differ there, or tar stores one file as a hard link of the other, du counts one only
# and find sees a loop. SOURCE's own files keep their numbers.
mkdir -p "$T/back/m1" "$T/back/m2"
mount -t tmpfs nfsshim-m1 "$T/back/m1" || fail "mount tmpfs m1"
mkdir "$T/back/m1/inner"
mount -t tmpfs nfsshim-inner "$T/back/m1/inner" || fail "mount tmpfs m1/inner"
mount -t tmpfs nfsshim-m2 "$T/back/m2" || fail "mount tmpfs m2"
trap 'kill -CONT "$hpid" 2>/dev/null; fusermount3 -u -z "$M" 2>/dev/null; umount -l "$T/back/m1/inner" "$T/back/m1" "$T/back/m2" "$T/back/local" 2>/dev/null; cleanup' EXIT
echo 1 >"$T/back/m1/data"
echo 22 >"$T/back/m2/data"
echo 333 >"$T/back/m1/inner/x"
mount_shim "$T/back" "$M"
ids=$(cd "$M" && stat -c '%d %i %n' m1 m2 m1/inner m1/data m2/data m1/inner/x)
[ "$(echo "$ids" | cut -d' ' -f1,2 | sort -u | wc -l)" = 6 ] ||
  fail "files on different filesystems inside SOURCE share (st_dev, st_ino) through the mount: $ids"
[ "$(stat -c %i "$M/sub2/file")" = "$(stat -c %i "$T/back/sub2/file")" ] ||
  fail "a file of SOURCE's own filesystem changed its inode number"
# readdir's d_ino is the number stat gives (ls -i, find -inum use it); not for a mount point,
# whose d_ino is the covered directory's, on SOURCE too.
python3 - "$M" "$T/back" <<'PY' || fail "d_ino and st_ino differ"
import os, sys
for d in ("m1", "m2", "m1/inner"):
    for e in os.scandir(os.path.join(sys.argv[1], d)):
        if os.path.ismount(os.path.join(sys.argv[2], d, e.name)):
            continue
        if e.inode() != os.lstat(e.path).st_ino:
            sys.exit("%s: d_ino %d, st_ino %d" % (e.path, e.inode(), os.lstat(e.path).st_ino))
PY
out=$(find "$M/m1" "$M/m2" 2>&1) || fail "find through the mount failed: $out"
echo "$out" | grep -q "^$M/m1/inner/x$" || fail "find did not list m1/inner/x: $out"
[ "$(du -sb "$M/m1" "$M/m2" | wc -l)" = 2 ] || fail "du counted one filesystem only: $(du -sb "$M/m1" "$M/m2")"
unmount_shim "$M"
pass "filesystems inside SOURCE keep distinct inode numbers through the mount; SOURCE's own unchanged"
