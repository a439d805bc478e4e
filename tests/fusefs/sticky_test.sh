#!/bin/bash
# A sticky directory (mode 1777, like /tmp) lets only a file's owner, the directory's owner
# or root remove or rename a name. The kernel checks that against the inode it has cached
# for the name (entry_timeout); the daemon then acts as root on whatever the name holds on
# SOURCE now. If another user's file took the name on SOURCE meanwhile (another NFS client,
# a program working on SOURCE), the daemon must refuse as SOURCE would: EPERM, file kept.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || fail "run as root (acts as uids 65534 and 1234)"
mkdir -p "$T/back/tmp" "$T/mnt"
chmod 755 "$T" "$T/back"
chmod 1777 "$T/back/tmp"
mount_shim "$T/back" "$T/mnt" -o entry_timeout=60,attr_timeout=60
M=$T/mnt/tmp B=$T/back/tmp
as() { local u=$1; shift; setpriv --reuid="$u" --regid="$u" --clear-groups "$@"; }

# Through the mount the kernel refuses uid 65534 another user's name (control).
as 1234 sh -c "echo theirs > '$B/seen'"
out=$(as 65534 rm -f "$M/seen" 2>&1) && fail "control: uid 65534 removed uid 1234's file in a sticky directory"
grep -q "Operation not permitted" <<<"$out" || fail "control: want EPERM, got: $out"

# uid 65534's own names, looked up (cached) through the mount; then each is replaced on
# SOURCE by uid 1234's file or directory of the same name.
as 65534 sh -c "echo mine > '$M/f' && echo mine > '$M/t' && echo src > '$M/src' && mkdir '$M/d'" ||
  fail "uid 65534 cannot create in the sticky directory"
stat "$M/f" "$M/t" "$M/d" >/dev/null
for n in f t; do
  rm "$B/$n" && as 1234 sh -c "echo 'of uid 1234' > '$B/$n'"
done
rmdir "$B/d" && as 1234 mkdir "$B/d"
[ "$(stat -c %u "$B/f"):$(stat -c %u "$B/d")" = 1234:1234 ] || fail "setup: the names are not uid 1234's"

out=$(as 65534 rm -f "$M/f" 2>&1)
echo "unlink of a name uid 1234's file took: ${out:-succeeded}"
[ -e "$B/f" ] || fail "unlink: uid 65534 removed uid 1234's file in a sticky directory"
grep -q "Operation not permitted" <<<"$out" || fail "unlink: want EPERM, got: $out"

out=$(as 65534 mv -f "$M/src" "$M/t" 2>&1)
echo "rename over a name uid 1234's file took: ${out:-succeeded}"
[ "$(cat "$B/t")" = "of uid 1234" ] || fail "rename: uid 65534 replaced uid 1234's file: $(cat "$B/t")"
grep -q "Operation not permitted" <<<"$out" || fail "rename: want EPERM, got: $out"

out=$(as 65534 rmdir "$M/d" 2>&1)
echo "rmdir of a name uid 1234's directory took: ${out:-succeeded}"
[ -d "$B/d" ] || fail "rmdir: uid 65534 removed uid 1234's directory in a sticky directory"
grep -q "Operation not permitted" <<<"$out" || fail "rmdir: want EPERM, got: $out"

# What the rule allows still works: a caller with CAP_FOWNER (the kernel lets it), uid
# 65534's own file; root's removal of anyone's.
as 1234 sh -c "echo 'of uid 1234' > '$B/capped'"
setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=+fowner --ambient-caps=+fowner rm -f "$M/capped" ||
  fail "uid 65534 with CAP_FOWNER cannot remove uid 1234's file through the mount"
[ -e "$B/capped" ] && fail "uid 65534 with CAP_FOWNER: uid 1234's file still there"
as 65534 sh -c "echo own > '$M/own'" && as 65534 rm "$M/own" || fail "uid 65534 cannot remove its own file"
as 65534 mv "$M/src" "$M/moved" || fail "uid 65534 cannot rename its own file"
rm "$M/f" || fail "root cannot remove uid 1234's file"
unmount_shim "$T/mnt"
pass "sticky directory: a name another user's file took on SOURCE is refused (EPERM), as SOURCE would"
