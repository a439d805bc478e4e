#!/bin/bash
# packaging/build-deb.sh: dpkg-buildpackage -b on a copy of the work tree with
# packaging/debian as ./debian; the .deb files nfsshim and nfsshim-fuse, and their
# contents per the FHS as Debian 12 lays it out (dpkg-deb -c against a fixed list).
. "$(dirname "$0")/lib.sh"
need dpkg-buildpackage dh fakeroot git
deb=$OUT/deb
rm -rf "$deb"
start=$SECONDS
"$SRC/packaging/build-deb.sh" "$deb" "$SRC" >/dev/null || fail "build-deb.sh"
echo "build-deb.sh took $((SECONDS - start)) s"
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
main=$deb/nfsshim_$VERSION-1_$arch.deb
fuse=$deb/nfsshim-fuse_$VERSION-1_$arch.deb
[ -s "$main" ] && [ -s "$fuse" ] || fail "no nfsshim/nfsshim-fuse .deb in $deb: $(ls "$deb")"
pass "built $(basename "$main") $(basename "$fuse")"

# Regular files and symlinks (directories left out), as absolute paths.
files() { dpkg-deb -c "$1" | awk '$1 !~ /^d/ { p = $6; sub(/^\./, "", p); print p }' >"$2"; }
cat >"$OUT/deb-main.expected" <<EOT
/etc/nfsshim.conf
/lib/systemd/system/nfsshim-gc.service
/lib/systemd/system/nfsshim-gc.timer
/usr/bin/nfsshim
/usr/lib/$ma/libnfsshim-preload.so
/usr/lib/tmpfiles.d/nfsshim.conf
/usr/libexec/nfsshim/nfsshim-gc-run
/usr/share/doc/nfsshim/changelog.Debian.gz
/usr/share/doc/nfsshim/copyright
/usr/share/doc/nfsshim/examples/kafka-nfsshim.conf
/usr/share/lintian/overrides/nfsshim
/usr/share/man/man1/nfsshim.1.gz
/usr/share/man/man5/nfsshim.conf.5.gz
EOT
cat >"$OUT/deb-fuse.expected" <<EOT
/lib/systemd/system/nfsshim-fuse@.service
/usr/sbin/nfsshim-fuse
/usr/share/doc/nfsshim-fuse/changelog.Debian.gz
/usr/share/doc/nfsshim-fuse/copyright
/usr/share/man/man8/nfsshim-fuse.8.gz
EOT
files "$main" "$OUT/deb-main.actual"
files "$fuse" "$OUT/deb-fuse.actual"
same_lines "$OUT/deb-main.expected" "$OUT/deb-main.actual" "nfsshim .deb"
pass "nfsshim .deb file list"
same_lines "$OUT/deb-fuse.expected" "$OUT/deb-fuse.actual" "nfsshim-fuse .deb"
pass "nfsshim-fuse .deb file list"

dpkg-deb -I "$main" conffiles | grep -qx /etc/nfsshim.conf || fail "/etc/nfsshim.conf is not a conffile"
dpkg-deb -I "$fuse" control | grep -q '^Depends:.*fuse3' || fail "nfsshim-fuse does not depend on fuse3"
dpkg-deb -I "$main" postinst | grep -q 'nfsshim-gc.timer' || fail "nfsshim postinst does not enable nfsshim-gc.timer"
dpkg-deb -I "$main" postinst | grep -q 'systemd-tmpfiles.*nfsshim.conf' || fail "nfsshim postinst does not run systemd-tmpfiles"
pass "conffiles, Depends, maintainer scripts"
