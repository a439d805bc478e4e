#!/bin/bash
# Installs the .deb files on this machine (root), then: `nfsshim doctor /tmp` works,
# `nfsshim run` loads the installed preload, nfsshim-fuse mounts a temp dir (SOURCE and
# MOUNTPOINT apart, then over itself as the unit does) and the unit's own ExecStop unmounts
# it, systemd-analyze verify accepts the installed units and the Kafka drop-in; then
# `dpkg --purge` leaves no file behind (file lists of /etc /usr /lib /opt /srv /var before
# and after, without dpkg's and apt's own state, caches and logs).
. "$(dirname "$0")/lib.sh"
need dpkg systemd-analyze fusermount3 findmnt
[ "$(id -u)" = 0 ] || skip "needs root (dpkg -i)"
[ -c /dev/fuse ] || skip "no /dev/fuse"
deb=$OUT/deb
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
main=$deb/nfsshim_$VERSION-1_$arch.deb
fuse=$deb/nfsshim-fuse_$VERSION-1_$arch.deb
[ -s "$main" ] && [ -s "$fuse" ] || fail "no .deb files in $deb (packaging_deb_build failed?)"
# Never clobber a real installation or an admin's settings.
for p in nfsshim nfsshim-fuse; do
  if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'installed\|config-files\|unpacked'; then
    dpkg-query -W -f='${Status}' "$p" | grep -q 'not-installed' || skip "package $p is on this machine already"
  fi
done
for f in /etc/nfsshim.conf /usr/bin/nfsshim /usr/sbin/nfsshim-fuse; do
  [ ! -e "$f" ] || skip "$f exists already (not from a package this test may remove)"
done

T=$(mktemp -d /tmp/nfsshim-pkg.XXXXXX)
installed=0
cleanup() {
  local m
  for m in "$T/mnt" "$T/over"; do
    findmnt -rn -t fuse.nfsshim-fuse -M "$m" >/dev/null 2>&1 && fusermount3 -u -z "$m"
  done
  [ $installed = 1 ] && dpkg --purge nfsshim-fuse nfsshim >/dev/null 2>&1
  rm -rf "$T"
}
trap cleanup EXIT

snapshot() {
  find /etc /usr /lib /opt /srv /var -xdev \
       \( -path /var/lib/dpkg -o -path /var/lib/apt -o -path /var/cache -o -path /var/log \
          -o -path /var/tmp -o -path /var/backups -o -path /var/lib/systemd/timers \) -prune \
       -o -print 2>/dev/null | LC_ALL=C sort >"$1"
}
snapshot "$T/before"

export DEBIAN_FRONTEND=noninteractive
dpkg -i "$main" "$fuse" >"$T/dpkg-i.log" 2>&1 || { cat "$T/dpkg-i.log" >&2; fail "dpkg -i"; }
installed=1
pass "dpkg -i nfsshim nfsshim-fuse"
[ -L /etc/systemd/system/timers.target.wants/nfsshim-gc.timer ] || fail "nfsshim-gc.timer not enabled"
pass "nfsshim-gc.timer enabled"

# The command and the preload, from their installed places.
cd "$T"
out=$(env -u NFSSHIM_PRELOAD_LIB nfsshim doctor /tmp 2>&1)
rc=$?
echo "$out" | head -40
[ $rc = 0 ] || [ $rc = 1 ] || fail "nfsshim doctor /tmp exited $rc"
grep -qi 'io_uring' <<<"$out" && grep -qi 'fuse' <<<"$out" || fail "nfsshim doctor /tmp: no host section"
pass "nfsshim doctor /tmp (exit $rc)"
lib=/usr/lib/$ma/libnfsshim-preload.so
env -u NFSSHIM_PRELOAD_LIB -u LD_PRELOAD nfsshim run -- sh -c "grep -qF '$lib' /proc/self/maps" || \
  fail "nfsshim run did not load $lib"
pass "nfsshim run loads $lib"

# nfsshim-fuse: SOURCE and MOUNTPOINT apart.
mkdir -p "$T/src" "$T/mnt"
echo hello >"$T/src/a"
nfsshim-fuse "$T/src" "$T/mnt" -o log=file:"$T/fuse.log" || fail "nfsshim-fuse $T/src $T/mnt"
findmnt -rn -t fuse.nfsshim-fuse -M "$T/mnt" >/dev/null || fail "$T/mnt is not mounted"
[ "$(cat "$T/mnt/a")" = hello ] || fail "reading through the overlay"
echo world >"$T/mnt/b" && [ "$(cat "$T/src/b")" = world ] || fail "writing through the overlay"
exec 7<"$T/mnt/b"
rm "$T/mnt/b" || fail "unlink of an open file through the overlay"
[ ! -e "$T/src/b" ] && [ "$(cat <&7)" = world ] || fail "open-unlinked file: name must go, data must stay"
exec 7<&-
fusermount3 -u "$T/mnt" || fail "fusermount3 -u"
for _ in $(seq 50); do findmnt -rn -M "$T/mnt" >/dev/null || break; sleep 0.1; done
findmnt -rn -M "$T/mnt" >/dev/null && fail "$T/mnt still mounted"
pass "nfsshim-fuse mounts, serves, keeps an open-unlinked file, unmounts"

# As the unit runs it: over itself (SOURCE = MOUNTPOINT = %f), stopped by the unit's ExecStop.
unit=/lib/systemd/system/nfsshim-fuse@.service
mkdir -p "$T/over"
echo under >"$T/over/x"
start=$(sed -n 's/^ExecStart=//p' "$unit" | sed "s|%f|$T/over|g")
[ "$start" = "/usr/sbin/nfsshim-fuse $T/over $T/over" ] || fail "unexpected ExecStart: $start"
$start -o log=file:"$T/fuse2.log" || fail "$start"
findmnt -rn -t fuse.nfsshim-fuse -M "$T/over" >/dev/null || fail "overlay on $T/over not mounted"
[ "$(cat "$T/over/x")" = under ] || fail "the overlay does not show the directory under it"
stop=$(sed -n 's/^ExecStop=//p' "$unit" | sed "s|%f|$T/over|g; s/\\\$\\\$/\$/g")
eval "$stop" || fail "ExecStop: $stop"
for _ in $(seq 50); do findmnt -rn -t fuse.nfsshim-fuse -M "$T/over" >/dev/null || break; sleep 0.1; done
findmnt -rn -t fuse.nfsshim-fuse -M "$T/over" >/dev/null && fail "ExecStop left the overlay mounted"
eval "$stop" || fail "ExecStop with nothing mounted must succeed (and unmount nothing)"
[ "$(cat "$T/over/x")" = under ] || fail "the directory under the overlay is gone"
pass "overlay over itself as in nfsshim-fuse@.service; ExecStop unmounts only the overlay"

# systemd-analyze verify: the installed units, an instance of the template, the Kafka drop-in.
export SYSTEMD_LOG_LEVEL=notice
mkdir -p "$T/units/kafka.service.d"
cat >"$T/units/kafka.service" <<EOT
[Unit]
Description=Kafka broker (stand-in)
[Service]
ExecStart=/bin/true
EOT
cp /usr/share/doc/nfsshim/examples/kafka-nfsshim.conf "$T/units/kafka.service.d/nfsshim.conf"
# The drop-in's commented ordering for the FUSE overlay, switched on.
sed -i 's/^#\[Unit\]/[Unit]/; s/^#Requires=nfsshim-fuse/Requires=nfsshim-fuse/; s/^#After=nfsshim-fuse/After=nfsshim-fuse/' \
  "$T/units/kafka.service.d/nfsshim.conf"
verify() {
  SYSTEMD_UNIT_PATH="$T/units:" systemd-analyze verify --man=no "$@" >"$T/verify.log" 2>&1
  local rc=$?
  cat "$T/verify.log"
  [ $rc = 0 ] || fail "systemd-analyze verify $* (exit $rc)"
  grep -v 'Failed to connect\|srv-kafka.mount\|tmp-.*\.mount' "$T/verify.log" | grep -qi 'error\|warn\|unknown\|ignoring' && \
    fail "systemd-analyze verify $*: complaints above"
  pass "systemd-analyze verify $*"
}
verify /lib/systemd/system/nfsshim-gc.service /lib/systemd/system/nfsshim-gc.timer
verify nfsshim-fuse@srv-kafka.service
verify kafka.service

# Purge: nothing left.
dpkg --purge nfsshim-fuse nfsshim >"$T/dpkg-purge.log" 2>&1 || { cat "$T/dpkg-purge.log" >&2; fail "dpkg --purge"; }
installed=0
snapshot "$T/after"
same_lines "$T/before" "$T/after" "after dpkg --purge"
pass "dpkg --purge leaves the file system as it was"
