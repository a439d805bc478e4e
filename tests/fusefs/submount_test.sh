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
