#!/bin/bash
# POSIX ACLs on SOURCE count through the mount. The kernel checks permissions itself
# (default_permissions) with what the daemon reports; without FUSE_POSIX_ACL it saw the mode
# bits only, so an ACL entry denying a user was not seen and the daemon, root, opened and
# removed for them anyway. With it, the kernel leaves the umask of new nodes to the daemon,
# which must apply the caller's (unless a default ACL decides, as on SOURCE).
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || fail "run as root (acts as uid 65534)"
acl=$BUILD/tests/fusefs/acl_xattr
[ -x "$acl" ] || fail "$acl missing (build target acl_xattr)"
mkdir -p "$T/back/d" "$T/mnt"
chmod 755 "$T" "$T/back"
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
echo secret > "$T/back/f"
chmod 755 "$T/back/f" "$T/back/d"
chmod 777 "$T/back/d"
echo victim > "$T/back/d/victim"
out=$("$acl" deny "$T/back/f") || { echo "SKIP: SOURCE's filesystem takes no POSIX ACL ($out)"; exit 77; }
"$acl" deny "$T/back/d" >/dev/null || fail "cannot set the ACL of d"
# Controls, directly on SOURCE: uid 65534 may neither read f nor remove names in d.
as_nobody cat "$T/back/f" >/dev/null 2>&1 && fail "control: uid 65534 reads f on SOURCE despite its ACL"
as_nobody rm -f "$T/back/d/victim" 2>/dev/null; [ -e "$T/back/d/victim" ] || fail "control: uid 65534 removed d/victim on SOURCE"

mount_shim "$T/back" "$T/mnt"
out=$(as_nobody cat "$T/mnt/f" 2>&1) && fail "uid 65534 read f through the mount despite the ACL denying it: $out"
echo "read of f (ACL user:65534:---): $out"
grep -q "Permission denied" <<<"$out" || fail "want EACCES, got: $out"
out=$(as_nobody rm -f "$T/mnt/d/victim" 2>&1)
[ -e "$T/back/d/victim" ] || fail "uid 65534 removed d/victim through the mount despite d's ACL"
echo "unlink in d (ACL user:65534:---): $out"
grep -q "Permission denied" <<<"$out" || fail "want EACCES, got: $out"
out=$(as_nobody sh -c ": > '$T/mnt/d/new'" 2>&1) && fail "uid 65534 created in d through the mount despite d's ACL"
cat "$T/mnt/f" >/dev/null || fail "root cannot read f through the mount"

# same_modes DIR UMASK WHAT: uid 65534 with UMASK makes a file and a directory in DIR through
# the mount and directly on SOURCE: the modes must agree.
same_modes() {
  local d=$1 u=$2 what=$3 got want
  as_nobody sh -c "umask $u; : > '$T/mnt/$d/f$u'; mkdir '$T/mnt/$d/d$u'; : > '$T/back/$d/F$u'; mkdir '$T/back/$d/D$u'" ||
    fail "uid 65534 cannot create with umask $u $what"
  got=$(stat -c %a "$T/back/$d/f$u" "$T/back/$d/d$u" | tr '\n' ' ')
  want=$(stat -c %a "$T/back/$d/F$u" "$T/back/$d/D$u" | tr '\n' ' ')
  echo "umask $u $what: through the mount $got, directly $want"
  [ "$got" = "$want" ] || fail "umask $u $what: modes through the mount $got, directly $want"
}
# New nodes get the caller's umask, as on SOURCE (no default ACL here).
mkdir -p "$T/back/open" && chmod 777 "$T/back/open"
for u in 022 077 002; do same_modes open $u ""; done
# A default ACL replaces the umask, on SOURCE and through the mount (the kernel sends the
# mode unmasked: FUSE_DONT_MASK).
mkdir -p "$T/back/dflt" && chmod 777 "$T/back/dflt"
"$acl" default "$T/back/dflt" >/dev/null || fail "cannot set a default ACL"
same_modes dflt 022 "under a default ACL rwx"
unmount_shim "$T/mnt"

# A SOURCE without POSIX ACLs (ramfs; NFSv4 before Linux 6.2, vfat, noacl) answers
# EOPNOTSUPP for them: the kernel must see "no ACL" and decide by the mode bits, or every
# caller but a file's owner is refused (ls of the mount root, cat of a 0644 file).
mkdir -p "$T/ram" "$T/mnt2"
mount -t ramfs -o mode=755 nfsshim-acl-ram "$T/ram" || fail "cannot mount a ramfs"
trap 'fusermount3 -u -z "$T/mnt2" 2>/dev/null; umount -l "$T/ram" 2>/dev/null; cleanup' EXIT
echo hi > "$T/ram/f" && chmod 644 "$T/ram/f" && mkdir -m 777 "$T/ram/d"
"$acl" has "$T/ram/f" >/dev/null 2>&1 && fail "ramfs has an ACL"
mount_shim "$T/ram" "$T/mnt2"
out=$(as_nobody sh -c "ls '$T/mnt2' >/dev/null && cat '$T/mnt2/f' && : > '$T/mnt2/d/new'" 2>&1)
echo "uid 65534 over a SOURCE without ACLs: ${out}"
[ "$out" = hi ] || fail "uid 65534 over a SOURCE without ACLs: '$out' (want the file's contents)"
unmount_shim "$T/mnt2"
umount "$T/ram"
pass "POSIX ACLs on SOURCE deny through the mount as they do on SOURCE; new nodes get the caller's umask or the default ACL; a SOURCE without ACLs works by its mode bits"
