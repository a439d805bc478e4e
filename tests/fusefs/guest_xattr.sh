#!/bin/bash
# guest_xattr.sh (runs as root inside the UML guest of uml_xattr_test.sh, Linux 6.1).
# NFSSHIM_BUILD: the build tree; MODROOT: the guest's module tree.
# Before Linux 6.2 a FUSE mount that does not ask for FUSE_POSIX_ACL (nfsshim-fuse did not
# until 2026-12-05; a kernel may not offer it) gets system.posix_acl_access as a plain
# setxattr with no owner check by the kernel, and -o default_permissions does not cover
# system.*. The daemon runs as root: unless it sets the xattr as the caller, the backing
# filesystem's owner check passes for anyone. (With FUSE_POSIX_ACL the kernel checks the
# owner of an ACL itself; other system.* names still reach the daemon unchecked.)
# SOURCE is a tmpfs (CONFIG_TMPFS_POSIX_ACL=y in Debian's UML kernel). Then the same with a
# daemon run by uid 1000, which cannot take another caller's identity.
set -uo pipefail
unset LD_PRELOAD
shim=$NFSSHIM_BUILD/fusefs/nfsshim-fuse
acl=$NFSSHIM_BUILD/tests/fusefs/acl_xattr
src=/run/xattr-src view=/run/xattr-view log=/run/xattr.log
fail() { echo "GUEST FAIL: $*"; [ -f "$log" ] && tail -n 20 "$log"; exit 1; }
nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
mounted() { grep -q " $view .* - fuse.nfsshim-fuse " /proc/self/mountinfo; }

modprobe -d "${MODROOT:?}" fuse || fail "modprobe fuse"
[ -c /dev/fuse ] || fail "no /dev/fuse in the guest"
echo "guest kernel $(uname -r)"
mkdir -p "$src" "$view" && mount -t tmpfs -o mode=0755 tmpfs "$src" || fail "tmpfs on $src"
umask 077
echo secret >"$src/root-file" && echo secret >"$src/root-ext" || fail "root's files"
"$acl" ext "$src/root-ext" || fail "root cannot set an extended ACL on tmpfs"
nobody touch "$src/dummy" 2>/dev/null && fail "uid 65534 may write in $src"
# A file of uid 65534's own, to show the switch keeps what the caller may do.
echo mine >"$src/nobody-file" && chown 65534:65534 "$src/nobody-file" || fail "nobody's file"

echo "== control: uid 65534 directly on SOURCE"
out=$(nobody "$acl" grant "$src/root-file") && fail "direct: uid 65534 set an ACL on root's file: $out"
[[ $out == *"Operation not permitted"* ]] || fail "direct grant: $out (expected EPERM)"
out=$(nobody "$acl" remove "$src/root-ext") && fail "direct: uid 65534 removed root's ACL: $out"
[[ $out == *"Operation not permitted"* ]] || fail "direct remove: $out (expected EPERM)"

env -u NFSSHIM_BUILD -u MODROOT "$shim" "$src" "$view" -f -o "log=file:$log,nopassthrough" &
pid=$!
for i in $(seq 100); do mounted && grep -q "mounted $src on $view (" "$log" && break; sleep 0.1; done
mounted || fail "nfsshim-fuse did not mount on $view"
grep -q "mounted $src on $view (" "$log" || fail "no 'mounted' line: $(tail -n 3 "$log")"

echo "== uid 65534 through nfsshim-fuse (root daemon, allow_other)"
out=$(nobody "$acl" grant "$view/root-file")
echo "grant through the mount: $out (root's file now mode $(stat -c %a "$src/root-file") on SOURCE)"
[[ $out == "grant: Operation not permitted" ]] || fail "grant through the mount: '$out' (expected EPERM, as on SOURCE)"
mode=$(stat -c %a "$src/root-file")
[ "$mode" = 600 ] || fail "root's file is now mode $mode on SOURCE"
nobody cat "$src/root-file" 2>/dev/null && fail "uid 65534 can read root's file on SOURCE"
nobody cat "$view/root-file" 2>/dev/null && fail "uid 65534 can read root's file through the mount"
out=$(nobody "$acl" remove "$view/root-ext")
echo "remove through the mount: $out (root's ACL: $("$acl" has "$src/root-ext"))"
[[ $out == "remove: Operation not permitted" ]] || fail "remove through the mount: '$out' (expected EPERM, as on SOURCE)"
"$acl" has "$src/root-ext" >/dev/null || fail "root's extended ACL is gone"

echo "== what the caller may do still works through the mount"
nobody "$acl" grant "$view/nobody-file" || fail "uid 65534 cannot set an ACL on its own file"
[ "$(stat -c %a "$src/nobody-file")" = 606 ] || fail "nobody's file: mode $(stat -c %a "$src/nobody-file"), expected 606"
"$acl" remove "$view/root-ext" || fail "root cannot remove its ACL through the mount"
"$acl" has "$src/root-ext" >/dev/null && fail "root's ACL still there after its removexattr"

fusermount3 -u "$view" || fail "fusermount3 -u $view"
wait "$pid" || fail "daemon exit status $?"

# A daemon that is not root (uid 1000, allow_other through fusermount3) cannot switch to
# another caller: their setxattr must be refused (EPERM), not done as the daemon's user on
# the daemon's user's files.
echo "== uid 65534 through a daemon run by uid 1000"
echo user_allow_other >/run/fuse.conf && chmod 644 /run/fuse.conf && mount --bind /run/fuse.conf /etc/fuse.conf || fail "fuse.conf"
chmod 666 /dev/fuse
own=$src/u1000
mkdir "$own" && echo secret >"$own/file" && chmod 600 "$own/file" && chmod 755 "$own" && chown -R 1000:1000 "$own" || fail "u1000's files"
view2=/run/xattr-view2 log2=/run/xattr2.log
mkdir "$view2" && touch "$log2" && chown 1000:1000 "$view2" "$log2" || fail "u1000's mount point"
setpriv --reuid=1000 --regid=1000 --clear-groups env -u NFSSHIM_BUILD -u MODROOT HOME=/run \
  "$shim" "$own" "$view2" -f -o "log=file:$log2,nopassthrough" &
pid=$!
for i in $(seq 100); do grep -q "mounted $own on $view2 (" "$log2" && break; sleep 0.1; done
grep -q "mounted $own on $view2 (" "$log2" || { log=$log2; fail "uid 1000's nfsshim-fuse did not mount"; }
out=$(nobody "$acl" grant "$view2/file")
echo "grant through uid 1000's mount: $out (u1000's file now mode $(stat -c %a "$own/file") on SOURCE)"
[[ $out == "grant: Operation not permitted" ]] || { log=$log2; fail "grant through uid 1000's mount: '$out' (expected EPERM)"; }
[ "$(stat -c %a "$own/file")" = 600 ] || fail "u1000's file is now mode $(stat -c %a "$own/file")"
# An xattr the kernel passes on unchecked (system.*, not an ACL: with FUSE_POSIX_ACL the
# kernel refused the grant above itself) reaches the daemon, which cannot switch: EPERM.
out=$(nobody /usr/bin/python3 -c "import os, sys
try:
    os.setxattr(sys.argv[1], 'system.nfsshim_test', b'x'); print('set')
except OSError as e:
    print(e.strerror)" "$view2/file")
echo "system.nfsshim_test through uid 1000's mount: $out"
[[ $out == "Operation not permitted" ]] || { log=$log2; fail "system.* xattr through uid 1000's mount: '$out' (expected EPERM)"; }
grep -q "cannot act as the calling user (uid 65534).*setxattr and removexattr by other users fail with EPERM" "$log2" ||
  { log=$log2; fail "no warning that the daemon cannot switch"; }
setpriv --reuid=1000 --regid=1000 --clear-groups "$acl" grant "$view2/file" || fail "uid 1000 cannot set an ACL on its own file through its mount"
fusermount3 -u "$view2" || fail "fusermount3 -u $view2"
wait "$pid" || fail "uid 1000's daemon: exit status $?"
umount "$src"
echo "GUEST PASS"
