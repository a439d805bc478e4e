#!/bin/bash
# guest_nfs.sh (runs inside the UML guest of uml_nfs_test.sh; cwd = the NFS mount)
# MODROOT: the guest's module tree (uml-run.sh's $NFSSHIM_LAB/uml/modroot).
# 1. Control: the Kafka pattern directly on NFS must fail (silly rename).
# 2. nfsshim-fuse mounted over the NFS mount itself (SOURCE = MOUNTPOINT), the native and
#    the JVM Kafka pattern through it must pass with no preload, leaving nothing behind.
#    Two hard links of an open file both removed: rmdir of their directory works. A
#    new file the server gives a deleted one's inode number is not taken for the old one.
# 3. After unmounting: on the NFS mount, no .nfs* file and an empty graveyard.
# 4. -o drop_backing_cache: the NFS client's page cache does not keep a second copy.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export JAVA_TOOL_OPTIONS=-XX:UseAVX=2  # UML 6.1 loses AVX-512 state across signals
unset LD_PRELOAD
dir=$PWD
shim=$NFSSHIM_BUILD/fusefs/nfsshim-fuse
log=${TMPDIR:?}/nfsshim-fuse.log
grave=$dir/.graveyard.nfsshim/u$(id -u)
fail() { echo "GUEST FAIL: $*"; [ -f "$log" ] && tail -n 20 "$log"; exit 1; }
mounted() { grep -q " $dir .* - fuse.nfsshim-fuse " /proc/self/mountinfo; }

[ "$(stat -f -c %T "$dir")" = nfs ] || fail "$dir is not NFS"
echo "== control: native pattern directly on NFS (must fail)"
"$here/../kafka/run_pattern.sh" native "$dir" expect-fail || fail "control did not fail on NFS"
for i in $(seq 50); do [ -z "$(ls -A "$dir")" ] && break; sleep 0.1; done
[ -z "$(ls -A "$dir")" ] || fail "leftovers after the control: $(ls -A "$dir")"

modprobe -d "${MODROOT:?}" fuse || fail "modprobe fuse"
[ -c /dev/fuse ] || fail "no /dev/fuse in the guest"
rm -f "$log"
env -u NFSSHIM_BUILD -u MODROOT "$shim" "$dir" "$dir" -f -o "log=file:$log" &
pid=$!
# The "mounted" line is logged after the kernel's INIT, a moment after the mount shows.
for i in $(seq 100); do mounted && grep -q "mounted $dir on $dir (" "$log" && break; sleep 0.1; done
mounted || fail "nfsshim-fuse did not mount on $dir"
grep -q "mounted $dir on $dir (NFS;" "$log" || fail "daemon did not detect NFS as SOURCE: $(tail -n 3 "$log")"

for kind in native java; do
  echo "== $kind pattern through nfsshim-fuse over NFS (must pass)"
  "$here/../kafka/run_pattern.sh" "$kind" "$dir" expect-pass || fail "$kind pattern through nfsshim-fuse"
  for i in $(seq 50); do [ -z "$(ls -A "$grave" 2>/dev/null)" ] && break; sleep 0.1; done
  [ -z "$(ls -A "$grave" 2>/dev/null)" ] || fail "graveyard not empty after $kind: $(ls -A "$grave")"
done
left=$(ls -A "$dir" | grep -vx .graveyard.nfsshim)
[ -z "$left" ] || fail "left in the mount: $left"

echo "== hard links: both names of an open file removed, then rmdir"
# The daemon's O_PATH descriptor holds the dentry of the name it looked up first (a);
# the open file came through the other (b). Removing b buries the file; removing a must
# not leave a silly-renamed a beside the user's files.
mkdir "$dir/hl" && echo linked >"$dir/hl/a" && ln "$dir/hl/a" "$dir/hl/b" || fail "hard link setup"
exec 3<"$dir/hl/b"
rm "$dir/hl/b" "$dir/hl/a" || fail "rm of both names"
rmdir "$dir/hl" || fail "rmdir after both names of an open file went: $(ls -A "$dir/hl" 2>&1)"
[ "$(cat <&3)" = linked ] || fail "the holder lost the data"
exec 3<&-
for i in $(seq 50); do [ -z "$(ls -A "$grave" | grep -v '^\.nfs')" ] && break; sleep 0.1; done
[ -z "$(ls -A "$grave" | grep -v '^\.nfs')" ] || fail "graveyard entries after the close: $(ls -A "$grave")"

echo "== a file number the server gives again: a new name is not the old, deleted file"
# Another client (here the server's own directory, through hostfs) deletes a file the
# daemon knows and makes one that gets the same inode number (ext4 reuses it at once).
# The NFS client may answer a stat of the daemon's old descriptor from its attribute
# cache, as if the file still were there; the new name must still get the new file.
exp=${MODROOT%/uml/modroot}/exp
mkdir "$dir/reuse" && echo old >"$exp/reuse/a" || fail "reuse setup"
out=$(python3 - "$dir/reuse" "$exp/reuse" <<'PY' 2>&1
import os, sys
mnt, srv = sys.argv[1], sys.argv[2]
old = os.stat(f"{srv}/a").st_ino
os.stat(f"{mnt}/a")  # the daemon now knows the file
os.unlink(f"{srv}/a")
made = []
for i in range(2000):
    with open(f"{srv}/b{i}", "w") as f:
        f.write("new\n")
    made.append(f"{srv}/b{i}")
    if os.stat(made[-1]).st_ino == old:
        break
else:
    print("no inode number came back in 2000 files"); sys.exit(2)
try:
    with open(f"{mnt}/b{i}") as f:
        data = f.read()
except OSError as e:
    print(f"open of the new name b{i} (inode {old} again) through the mount: {e}"); sys.exit(1)
if data != "new\n":
    print(f"b{i} read through the mount gave {data!r}, not the new file's 'new'"); sys.exit(1)
print(f"b{i} took inode {old} after {i + 1} files; read through the mount: the new file")
PY
) || fail "$out"
echo "$out"
rm -rf "$dir/reuse" || fail "rm -rf reuse"

fusermount3 -u "$dir" || fail "fusermount3 -u $dir"
wait "$pid" || fail "daemon exit status $?"
mounted && fail "still mounted"
# The NFS mount itself now: nothing silly-renamed, nothing buried.
silly=$(find "$dir" -name '.nfs*')
[ -z "$silly" ] || fail "silly-renamed files on NFS: $silly"
[ -z "$(ls -A "$grave" 2>/dev/null)" ] || fail "graveyard on NFS not empty: $(ls -A "$grave")"

# 4. -o drop_backing_cache over the real NFS client: what is written (and fsync'ed) or read
# through a classic mount (this kernel has no passthrough) is not kept a second time in the
# NFS client's page cache. Mounted beside the NFS mount so that fincore(1) can count the
# NFS file's pages. Control: the NFS client keeps the pages of a file written and
# fsync'ed on the NFS mount directly.
view=$TMPDIR/view
mkdir -p "$view"
mib() { fincore -b -n -o RES "$1" | awk '{print int($1 / 1048576)}'; }
head -c $((32 << 20)) /dev/urandom >"$TMPDIR/data"
dd if="$TMPDIR/data" of="$dir/control" bs=1M conv=fsync status=none || fail "write on NFS"
control=$(mib "$dir/control")
env -u NFSSHIM_BUILD -u MODROOT "$shim" "$dir" "$view" -f -o "log=file:$log,nopassthrough,drop_backing_cache" &
pid=$!
for i in $(seq 100); do grep -q "mounted $dir on $view (" "$log" && break; sleep 0.1; done
grep -q " $view .* - fuse.nfsshim-fuse " /proc/self/mountinfo || fail "nfsshim-fuse did not mount on $view"
grep -q "mounted $dir on $view .*drop_backing_cache on" "$log" || fail "no drop_backing_cache mount: $(tail -n 3 "$log")"
dd if="$TMPDIR/data" of="$view/f" bs=1M conv=fsync status=none || fail "write through the mount"
written=$(mib "$dir/f")
cat "$dir/f" >/dev/null
before=$(mib "$dir/f")
cmp "$view/f" "$TMPDIR/data" || fail "wrong bytes read through the drop_backing_cache mount"
read=$(mib "$dir/f")
fusermount3 -u "$view" || fail "fusermount3 -u $view"
wait "$pid" || fail "daemon exit status $?"
cmp "$dir/f" "$TMPDIR/data" || fail "wrong bytes in the NFS file"
rm -f "$dir/f" "$dir/control" "$TMPDIR/data"
echo "NFS client's cache (MiB of 32): written+fsync'ed on NFS $control; through the mount $written; read through it $read (cached beforehand $before)"
[ "$before" -ge 30 ] || fail "the NFS client did not cache the file read on NFS, so the read check could not tell"
[ "$read" -le 2 ] || fail "read through a drop_backing_cache mount: the NFS client keeps $read MiB"
# NFSv3 against ganesha: the client drops a file's pages itself once it sees the mtime of
# its own writes at the next open (no usable pre-op attributes), so the write check needs
# a client that keeps them (4.1 here).
if [ "$control" -ge 30 ]; then
  [ "$written" -le 1 ] || fail "written and fsync'ed through a drop_backing_cache mount: the NFS client keeps $written MiB"
else
  echo "write check not made: the NFS client kept $control MiB of a file written on NFS directly"
fi
echo "GUEST PASS"
