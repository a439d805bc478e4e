#!/bin/bash
# A lookup on a local SOURCE answers a name it stat'ed with the inode the table holds for
# that number. If the file was removed on SOURCE (by a program working there, not through
# the mount) between that stat and the table lookup, and a new file took its number
# (ext4 hands out the lowest free one) and was looked up meanwhile, the name must not be
# given the new file (uid 65534 reading d1/victim got EACCES from its mode, root read it).
# daemon_pause.so holds the daemon's thread after its stat of "victim" until the test has
# made that happen. The SOURCE is an ext4 image: tmpfs never reuses inode numbers.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || fail "run as root"
command -v mkfs.ext4 >/dev/null || fail "mkfs.ext4 missing (e2fsprogs)"
pause_lib=$(cd "$BUILD" && pwd)/tests/fusefs/libdaemon_pause.so
[ -f "$pause_lib" ] || fail "$pause_lib missing (build target daemon_pause)"
truncate -s 32M "$T/img"
mkfs.ext4 -q -F "$T/img" || fail "mkfs.ext4"
mkdir -p "$T/back" "$T/mnt" "$T/ctl"
chmod 755 "$T"
mount -o loop "$T/img" "$T/back" || fail "cannot loop-mount an ext4 image"
# The image is unmounted after the shim's mount and daemon are gone (lib.sh's cleanup only
# knows FUSE mounts), and before cleanup removes $T.
trap 'fusermount3 -u -z "$T/mnt" 2>/dev/null; for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
      umount "$T/back" 2>/dev/null || umount -l "$T/back"; cleanup' EXIT
mkdir "$T/back/d1" "$T/back/d2"
chmod 777 "$T/back/d1"
chown 1000:1000 "$T/back/d2"
head -c 300 /dev/zero | tr '\0' A > "$T/back/d1/victim"
chown 65534:65534 "$T/back/d1/victim"
victim_ino=$(stat -c %i "$T/back/d1/victim")

DAEMON_PAUSE="after-stat:victim:$T/ctl" LD_PRELOAD=$pause_lib mount_shim "$T/back" "$T/mnt"
stat "$T/mnt/d2" >/dev/null || fail "d2 through the mount"
setpriv --reuid=65534 --regid=65534 --clear-groups cat "$T/mnt/d1/victim" >"$T/out" 2>&1 &
reader=$!
for i in $(seq 200); do [ -e "$T/ctl/paused" ] && break; sleep 0.05; done
[ -e "$T/ctl/paused" ] || fail "the daemon never stat'ed d1/victim"
rm "$T/back/d1/victim"   # on SOURCE itself
setpriv --reuid=1000 --regid=1000 --clear-groups sh -c "umask 077; echo SECRET-OF-UID-1000 > '$T/mnt/d2/secret'" ||
  fail "uid 1000 cannot create d2/secret"
secret_ino=$(stat -c %i "$T/back/d2/secret")
[ "$secret_ino" = "$victim_ino" ] ||
  fail "setup: d2/secret got inode $secret_ino, not d1/victim's $victim_ino: the race was not set up"
touch "$T/ctl/go"
wait $reader
echo "uid 65534 reading d1/victim after it was removed and its number reused: $(cat "$T/out")"
grep -q SECRET "$T/out" && fail "d1/victim was answered with uid 1000's new file d2/secret"
# The name as root sees it now (the kernel may have cached the answer): not the new file.
out=$(cat "$T/mnt/d1/victim" 2>&1) && fail "root read d1/victim after it was removed: $out"
grep -q SECRET <<<"$out" && fail "d1/victim is uid 1000's d2/secret to root: $out"
grep -q "No such file" "$T/out" || fail "want ENOENT for the removed name, got: $(cat "$T/out")"
pass "a lookup never hands a removed name the file that took its inode number"
