#!/bin/bash
# Kernel passthrough (fusefs/passthrough.h; on by default), on a kernel that offers it:
# - the file data of open files bypasses the daemon: with -d, libfuse prints every request
#   it serves; the same writes and reads make READ and WRITE requests on a classic mount
#   (-o nopassthrough) and none with the default options, and the bytes are right on both;
# - delete-on-last-close still holds (an open file unlinked: the name is free at once, the
#   holder reads on, the graveyard empties at the close), for an fd and for a mapping;
# - two files open at once on one inode (a reader and an appender) share its backing file;
# - a shared writable mapping writes through to SOURCE;
# - over bindfs, a file held only by a passthrough mapping and unlinked leaves nothing beside
#   its name (the kernel maps the backing file: the daemon never hears of the mapping);
# - where passthrough cannot work the daemon says so and serves the classic way: with the
#   writeback cache, and as a user without CAP_SYS_ADMIN (the kernel refuses backing files);
#   a warning if -o passthrough asked for it, information if it was only the default.
# Skips (exit 77, saying so) on a kernel without FUSE passthrough (Linux < 6.9), fails on
# one that has it if the daemon did not see it offered.
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/back" "$T/mnt"
M=$T/mnt
head -c 8000000 /dev/urandom > "$T/expected"

io_requests() {  # LOG: READ and WRITE requests the daemon served, from libfuse's -d lines
  grep -cE "opcode: (READ|WRITE) " "$1"
}
# Writes and reads back a file through the mount; the bytes must be right.
write_read() {
  dd if="$T/expected" of="$M/$1" bs=1M conv=fsync status=none || fail "write $1"
  cmp "$T/expected" "$T/back/$1" || fail "$1: wrong bytes in SOURCE"
  cmp "$T/expected" "$M/$1" || fail "$1: wrong bytes read through the mount"
}

# mount_debug DEBUG_OUT OPTS: the daemon on $M with libfuse's -d lines in DEBUG_OUT.
mount_debug() {
  $SHIM "$T/back" "$M" -f -d -o "$2" 2> "$1" &
  SHIM_PID=$!; PIDS+=("$SHIM_PID"); MOUNTS+=("$M")
  wait_mounted "$M" fuse.nfsshim-fuse
}

# Classic: the data goes through the daemon.
mount_debug "$T/classic.d" nopassthrough,log=file:"$T/classic.log"
write_read classic
unmount_shim "$M"
n=$(io_requests "$T/classic.d")
[ "$n" -gt 0 ] || fail "classic mount: no READ/WRITE request seen in libfuse's debug output (the check below would be empty)"

grep -q "kernel passthrough: off (-o nopassthrough)" "$T/classic.log" || fail "nopassthrough: $(grep -i passthrough "$T/classic.log")"

# Passthrough: the default.
mount_debug "$T/pt.d" log=file:"$T/shim.log"
for i in $(seq 50); do grep -q "kernel passthrough:" "$T/shim.log" && break; sleep 0.1; done
grep -q "kernel passthrough: on" "$T/shim.log" || skip_without_passthrough "$T/shim.log"
write_read pt
[ "$(io_requests "$T/pt.d")" = 0 ] || fail "passthrough: the daemon served $(io_requests "$T/pt.d") READ/WRITE requests (classic: $n)"
grep -qE "opcode: (OPEN|CREATE) " "$T/pt.d" || fail "no OPEN/CREATE request seen"
grep -qi "warn\|error" "$T/shim.log" && fail "daemon complained: $(grep -i 'warn\|error' "$T/shim.log")"
pass "passthrough: 0 READ/WRITE requests through the daemon (classic: $n), bytes right"

# Two open files on one inode, then delete-on-last-close.
exec 7< "$M/pt"
exec 8>> "$M/pt"
echo tail >&8 || fail "append through a second open"
exec 8>&-
rm "$M/pt" || fail "rm of an open file"
[ ! -e "$M/pt" ] && [ ! -e "$T/back/pt" ] || fail "name still there after rm"
[ -n "$(ls -A "$T/back/$GRAVEYARD/u0")" ] || fail "graveyard should hold the open file"
echo new > "$M/pt" && [ "$(cat "$M/pt")" = new ] || fail "re-create the name"
head -c 8000000 <&7 | cmp - "$T/expected" || fail "the held fd reads wrong bytes after the rm"
[ "$(tail -c 5 <&7)" = tail ] || fail "the appended bytes are not there for the held fd"
exec 7<&-
wait_graveyard_empty "$T/back" || fail "graveyard not empty after the last close: $(ls -A "$T/back/$GRAVEYARD/u0")"
pass "passthrough: two opens of one inode, rm while open, graveyard emptied at the close"

# A mapping alone holds the file; a shared writable mapping writes through.
cp "$T/expected" "$M/map"
python3 - "$M/map" "$T/back/map" "$T/expected" "$(dirname "$0")" <<'PY' || fail "mapping checks"
import os, sys, time
path, backing, expected, here = sys.argv[1:]
sys.path.insert(0, here)
from rawmap import Mapping
m = Mapping(path, writable=True)  # only the mapping holds the file now
m.write(0, b"hello")
with open(backing, "rb") as f:
    assert f.read(5) == b"hello", "shared mapping did not write through to SOURCE"
time.sleep(0.5)   # the kernel's RELEASE is sent asynchronously: let it reach the daemon
os.unlink(path)
want = b"hello" + open(expected, "rb").read()[5:]
assert m.read() == want, "mapping reads wrong bytes after the unlink"
m.close()
PY
wait_graveyard_empty "$T/back" || fail "graveyard not empty after munmap"
pass "passthrough: shared writable mapping, held by the mapping alone across the unlink"
unmount_shim "$M"

# Over bindfs (a SOURCE that, like NFS, hides an unlinked file that is still open beside its
# name: .fuse_hidden*, where NFS makes .nfs*): a passthrough mapping holds the backing file,
# not the FUSE file, so after the close the daemon sees no open file; its unlink must still
# go through the graveyard, and no hidden file may appear in the user's directory.
mkdir -p "$T/b2" "$T/bind"
mount_bindfs "$T/b2" "$T/bind"
mount_shim "$T/bind" "$M" -o passthrough
mkdir "$M/part"
cp "$T/expected" "$M/part/seg.index"
python3 - "$M/part/seg.index" "$T/b2/part" "$T/expected" "$(dirname "$0")" <<'PY' || fail "mapping over bindfs"
import os, sys, time
path, backing_dir, expected, here = sys.argv[1:]
sys.path.insert(0, here)
from rawmap import Mapping
m = Mapping(path)  # only the mapping holds the file now
time.sleep(0.5)   # the kernel's RELEASE is sent asynchronously: let it reach the daemon
os.unlink(path)
left = os.listdir(backing_dir)
assert left == [], "hidden files beside the unlinked name: %s" % left
os.rmdir(os.path.dirname(path))
assert m.read() == open(expected, "rb").read(), "mapping reads wrong bytes after unlink and rmdir"
m.close()
PY
wait_graveyard_empty "$T/b2" || fail "graveyard not empty after munmap: $(ls -A "$T/b2/$GRAVEYARD/u0")"
unmount_shim "$M"
pass "passthrough over bindfs: a mapping alone across unlink and rmdir, nothing left beside the name"

# keep_cache: meaningless with passthrough, and the kernel fails an open that has it (EIO).
mount_shim "$T/back" "$M" -o passthrough,keep_cache
write_read kc
unmount_shim "$M"
pass "passthrough with keep_cache"

# Writeback cache: the kernel allows no passthrough with it. Asked for: a warning; default: info.
mount_shim "$T/back" "$M" -o passthrough,writeback
grep -q "warn.*passthrough: off, the kernel allows none with the writeback cache" "$T/shim.log" || fail "no warning on passthrough with writeback: $(grep -i passthrough "$T/shim.log")"
write_read wb
unmount_shim "$M"
: > "$T/shim.log"
mount_shim "$T/back" "$M" -o writeback
grep -q "info.*passthrough: off, the kernel allows none with the writeback cache" "$T/shim.log" || fail "no word on passthrough with writeback: $(grep -i passthrough "$T/shim.log")"
grep -qi "warn" "$T/shim.log" && fail "default passthrough with writeback: a warning: $(grep -i warn "$T/shim.log")"
write_read wb2
unmount_shim "$M"

# Without CAP_SYS_ADMIN the kernel refuses backing files: served the classic way, said once.
# The daemon runs as nobody (mounting through fusermount3), in a mount namespace of its own
# whose /dev/fuse nobody may open (this host's is 0600).
mkdir -p "$T/dev" "$T/nb/back" "$T/nb/mnt"
chown nobody "$T/nb/back" "$T/nb/mnt"
chmod 0755 "$T"
for opt in passthrough default; do : > "$T/nobody-$opt.log"; chown nobody "$T/nobody-$opt.log"; done
unshare -m --propagation private bash -c '
  set -e
  T=$1 SHIM_BIN=$2
  mount -t tmpfs nfsshim-dev "$T/dev"
  mknod -m 0666 "$T/dev/fuse" c 10 229
  mount --bind "$T/dev/fuse" /dev/fuse
  for opt in passthrough default; do
    o=noallow_other,log=file:$T/nobody-$opt.log
    [ $opt = default ] || o=$opt,$o
    runuser -u nobody -- "$SHIM_BIN" "$T/nb/back" "$T/nb/mnt" -o "$o"
    runuser -u nobody -- bash -c "cp $T/expected $T/nb/mnt/np-$opt && cmp $T/expected $T/nb/mnt/np-$opt && cp $T/expected $T/nb/mnt/np2-$opt && cmp $T/expected $T/nb/mnt/np2-$opt"
    runuser -u nobody -- fusermount3 -u "$T/nb/mnt"
  done
' _ "$T" "$SHIM_BIN" || fail "unprivileged daemon: mount, I/O or unmount failed: $(tail -n 5 "$T"/nobody-*.log)"
for opt in passthrough default; do
  log=$T/nobody-$opt.log level=info
  [ $opt = default ] || level=warn
  grep -q "kernel passthrough: on" "$log" || fail "unprivileged daemon ($opt): INIT did not ask for passthrough"
  [ "$(grep -c "$level.*passthrough: off, cannot register a backing file (Operation not permitted): every file" "$log")" = 1 ] ||
    fail "unprivileged daemon ($opt): want one $level line about backing files: $(grep -i passthrough "$log")"
  # Every other fallback of an unprivileged daemon (readahead in sysfs) is information too.
  [ "$(grep -ci "warn" "$log")" = "$([ $opt = default ] && echo 0 || echo 1)" ] ||
    fail "unprivileged daemon ($opt): warnings: $(grep -i "warn" "$log")"
  grep -q "info.*readahead stays the kernel's: cannot set /sys/class/bdi/" "$log" ||
    fail "unprivileged daemon ($opt): no line on the readahead it could not set"
  cmp "$T/expected" "$T/nb/back/np2-$opt" || fail "unprivileged daemon ($opt): wrong bytes in SOURCE"
done
pass "passthrough: off with writeback, classic without CAP_SYS_ADMIN (a warning if asked for, else info)"
