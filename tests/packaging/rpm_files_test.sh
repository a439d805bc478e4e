#!/bin/bash
# The binary RPMs lay files out per the FHS as EL8 wants them (rpm -qlp against a fixed
# list), the settings file is %config(noreplace), the scriptlets are the systemd ones, and
# the paths written into the units and the Kafka drop-in are EL8's.
. "$(dirname "$0")/lib.sh"
need rpm rpm2cpio cpio
top=$OUT/rpm
arch=$(rpm --eval '%{_arch}')
main=$top/RPMS/$arch/nfsshim-$VERSION-1.$arch.rpm
fuse=$top/RPMS/$arch/nfsshim-fuse-$VERSION-1.$arch.rpm
[ -s "$main" ] && [ -s "$fuse" ] || fail "no RPMs in $top (packaging_rpm_build failed?)"

# Files and owned directories, without rpm's /usr/lib/.build-id links.
list() { rpm -qlp "$1" | grep -v '^/usr/lib/\.build-id' >"$2"; }

cat >"$OUT/rpm-main.expected" <<EOT
/etc/nfsshim.conf
/usr/bin/nfsshim
/usr/lib/systemd/system/nfsshim-gc.service
/usr/lib/systemd/system/nfsshim-gc.timer
/usr/lib/tmpfiles.d/nfsshim.conf
/usr/lib64/libnfsshim-preload.so
/usr/libexec/nfsshim
/usr/libexec/nfsshim/nfsshim-gc-run
/usr/share/doc/nfsshim
/usr/share/doc/nfsshim/examples
/usr/share/doc/nfsshim/examples/kafka-nfsshim.conf
/usr/share/licenses/nfsshim
/usr/share/licenses/nfsshim/LICENSE
/usr/share/man/man1/nfsshim.1.gz
/usr/share/man/man5/nfsshim.conf.5.gz
EOT
cat >"$OUT/rpm-fuse.expected" <<EOT
/usr/lib/systemd/system/nfsshim-fuse@.service
/usr/sbin/nfsshim-fuse
/usr/share/licenses/nfsshim-fuse
/usr/share/licenses/nfsshim-fuse/LICENSE
/usr/share/man/man8/nfsshim-fuse.8.gz
EOT
list "$main" "$OUT/rpm-main.actual"
list "$fuse" "$OUT/rpm-fuse.actual"
same_lines "$OUT/rpm-main.expected" "$OUT/rpm-main.actual" "nfsshim RPM"
pass "nfsshim RPM file list"
same_lines "$OUT/rpm-fuse.expected" "$OUT/rpm-fuse.actual" "nfsshim-fuse RPM"
pass "nfsshim-fuse RPM file list"

# Flags and modes: %config(noreplace), %license, %doc; executables 0755.
flags=$(rpm -qp --qf '[%{FILEFLAGS:fflags} %{FILEMODES:perms} %{FILENAMES}\n]' "$main" "$fuse")
grep -qx 'cn -rw-r--r-- /etc/nfsshim.conf' <<<"$flags" || fail "/etc/nfsshim.conf is not %config(noreplace) 0644: $(grep nfsshim.conf <<<"$flags")"
grep -qx 'l -rw-r--r-- /usr/share/licenses/nfsshim/LICENSE' <<<"$flags" || fail "LICENSE is not %license"
grep -qx 'd -rw-r--r-- /usr/share/doc/nfsshim/examples/kafka-nfsshim.conf' <<<"$flags" || fail "kafka-nfsshim.conf is not %doc"
for f in /usr/bin/nfsshim /usr/sbin/nfsshim-fuse /usr/lib64/libnfsshim-preload.so /usr/libexec/nfsshim/nfsshim-gc-run; do
  grep -qE "^ -rwxr-xr-x $f\$" <<<"$flags" || fail "$f is not an executable 0755 file: $(grep " $f\$" <<<"$flags")"
done
pass "flags: config(noreplace), license, doc, modes"

# Scriptlets: EL8's systemd macros and tmpfiles.
scripts=$(rpm -qp --scripts "$main")
for want in 'systemd-tmpfiles --create /usr/lib/tmpfiles.d/nfsshim.conf' \
            'systemctl --no-reload preset nfsshim-gc.timer' \
            'systemctl --no-reload disable --now nfsshim-gc.timer nfsshim-gc.service' \
            'systemctl try-restart nfsshim-gc.timer'; do
  grep -qF "$want" <<<"$scripts" || fail "nfsshim scriptlets lack '$want'"
done
scripts=$(rpm -qp --scripts "$fuse")
grep -qF 'systemctl --no-reload preset nfsshim-fuse@.service' <<<"$scripts" || fail "nfsshim-fuse %post"
grep -qF 'try-restart' <<<"$scripts" && fail "nfsshim-fuse must not restart its instances on upgrade"
pass "scriptlets"

# Dependencies.
req=$(rpm -qp --requires "$fuse")
grep -qx 'fuse3' <<<"$req" || fail "nfsshim-fuse does not require fuse3"
grep -q 'libfuse3.so.3' <<<"$req" || fail "nfsshim-fuse does not require libfuse3.so.3"
grep -q '^systemd' <<<"$req" || fail "nfsshim-fuse lacks Requires(post): systemd"

# Paths written into the units and the drop-in (extract the payload).
x=$OUT/rpm-x
rm -rf "$x" && mkdir -p "$x"
(cd "$x" && rpm2cpio "$main" | cpio -idm --quiet && rpm2cpio "$fuse" | cpio -idm --quiet) || fail "rpm2cpio"
grep -qx 'ExecStart=/usr/sbin/nfsshim-fuse %f %f' "$x/usr/lib/systemd/system/nfsshim-fuse@.service" || fail "ExecStart of nfsshim-fuse@.service"
grep -qx 'ExecStart=/usr/libexec/nfsshim/nfsshim-gc-run' "$x/usr/lib/systemd/system/nfsshim-gc.service" || fail "ExecStart of nfsshim-gc.service"
grep -qx 'exec /usr/bin/nfsshim gc "$@"' "$x/usr/libexec/nfsshim/nfsshim-gc-run" || fail "nfsshim path in nfsshim-gc-run"
grep -qx 'Environment=LD_PRELOAD=/usr/lib64/libnfsshim-preload.so' "$x/usr/share/doc/nfsshim/examples/kafka-nfsshim.conf" || fail "LD_PRELOAD in kafka-nfsshim.conf"
# The installed preload nfsshim run falls back to (absent here, so it names it).
if [ ! -e /usr/lib64/libnfsshim-preload.so ]; then
  msg=$(cd / && env -u NFSSHIM_PRELOAD_LIB "$x/usr/bin/nfsshim" run -- true 2>&1)
  grep -qF "'/usr/lib64/libnfsshim-preload.so'" <<<"$msg" || fail "nfsshim run does not look for /usr/lib64/libnfsshim-preload.so: $msg"
fi
cmp -s "$x/etc/nfsshim.conf" "$SRC/packaging/nfsshim.conf" || fail "/etc/nfsshim.conf is not packaging/nfsshim.conf"
pass "paths in the units, the gc helper, the drop-in and the nfsshim binary"
