#!/bin/bash
# Two names of one open file, both removed, on a FUSE SOURCE (bindfs): both names are one
# node of ours, so the open file is buried (not hidden by bindfs as .fuse_hidden* beside
# its names) and rmdir of their directory succeeds while the holder keeps reading. The
# second name is reached two ways: a hard link made on SOURCE and looked up, and one made
# through the mount (op_link's lookup). A FUSE SOURCE gives each name's lookup its own
# file handle (the kernel's node id), so a check by handle would take them for two files.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || fail "run as root"
command -v bindfs >/dev/null || fail "bindfs missing"
mkdir -p "$T/under/d1" "$T/under/d2" "$T/bind" "$T/mnt"
echo one > "$T/under/d1/x"
ln "$T/under/d1/x" "$T/under/d1/y"   # made beside the mount
echo two > "$T/under/d2/x"
mount_bindfs "$T/under" "$T/bind"
mount_shim "$T/bind" "$T/mnt"
M=$T/mnt
for d in d1 d2; do
  exec 3<"$M/$d/x" || fail "open $d/x"
  if [ $d = d1 ]; then stat "$M/d1/y" >/dev/null || fail "stat d1/y"
  else ln "$M/d2/x" "$M/d2/y" || fail "ln through the mount"; fi
  rm "$M/$d/x" "$M/$d/y" || fail "rm of both names in $d"
  left=$(ls -A "$T/under/$d")
  [ -z "$left" ] || fail "$d: removing both names of an open file left '$left' in SOURCE"
  rmdir "$M/$d" || fail "rmdir $d while its file is open: $(ls -A "$T/under/$d" 2>&1)"
  want=$([ $d = d1 ] && echo one || echo two)
  [ "$(cat <&3)" = "$want" ] || fail "$d: the holder lost the data"
  exec 3<&-
  echo "ok: $d: both names removed, rmdir done, the holder read '$want'"
done
wait_graveyard_empty "$T/bind" || fail "graveyard not empty after the last close: $(ls -A "$T/under/$GRAVEYARD/u0")"
unmount_shim "$M"
pass "hard links of an open file on a FUSE SOURCE: one node, buried, rmdir works"
