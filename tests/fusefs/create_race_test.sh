#!/bin/bash
# A name the kernel believes absent (a negative entry it cached) can exist in SOURCE by the
# time its CREATE reaches the daemon: another NFS client or a program working on SOURCE
# made it meanwhile. The daemon runs as root, so its create must never follow a symlink
# there nor open an existing file for the caller: the caller gets what it would get
# without the mount (the kernel looks the name up again and opens it with its own checks).
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || fail "run as root (the creates run as uid 65534)"
mkdir -p "$T/back/d" "$T/mnt" "$T/rootonly"
chmod 755 "$T" "$T/back"
chmod 777 "$T/back/d"      # anybody may create here
chmod 700 "$T/rootonly"    # nobody may not
mount_shim "$T/back" "$T/mnt" -o negative_timeout=60
M=$T/mnt/d
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }

# A symlink appears under a name the kernel has cached as absent.
stat "$M/s" >/dev/null 2>&1 && fail "d/s exists before the test made it"
ln -s "$T/rootonly/planted" "$T/back/d/s"
out=$(as_nobody sh -c ": >> '$M/s'" 2>&1) && fail "uid 65534 created a file through d/s in a directory it may not write"
echo "create through a planted symlink: $out"
[ -e "$T/rootonly/planted" ] && fail "the daemon created the symlink's target as root: $(stat -c '%U %a %n' "$T/rootonly/planted")"
grep -q "Permission denied" <<<"$out" || fail "want EACCES (the plain call's answer), got: $out"

# Root's private file appears under a name the kernel has cached as absent.
stat "$M/f" >/dev/null 2>&1 && fail "d/f exists before the test made it"
echo secret > "$T/back/d/f"
chmod 600 "$T/back/d/f"
out=$(as_nobody sh -c "echo mine >> '$M/f'" 2>&1) && fail "uid 65534 opened root's 0600 file for writing"
echo "create over root's 0600 file: $out"
grep -q "Permission denied" <<<"$out" || fail "want EACCES (the plain call's answer), got: $out"
[ "$(cat "$T/back/d/f")" = secret ] || fail "root's file changed: $(cat "$T/back/d/f")"
[ "$(stat -c %u "$T/back/d/f")" = 0 ] || fail "root's file was given to uid $(stat -c %u "$T/back/d/f")"

# The same without O_EXCL from the kernel's view, with O_EXCL from the caller's: EEXIST.
stat "$M/x" >/dev/null 2>&1 && fail "d/x exists before the test made it"
echo old > "$T/back/d/x"
out=$(as_nobody /usr/bin/python3 -c "import os; os.open('$M/x', os.O_WRONLY | os.O_CREAT | os.O_EXCL)" 2>&1) &&
  fail "O_EXCL create of an existing name succeeded"
grep -q "FileExistsError" <<<"$out" || fail "want EEXIST for O_EXCL, got: $out"

# And a create that races with nothing works as before, the file the caller's.
as_nobody sh -c "echo new > '$M/new'" || fail "uid 65534 cannot create a fresh file"
[ "$(stat -c %u "$T/back/d/new")" = 65534 ] || fail "a fresh file belongs to uid $(stat -c %u "$T/back/d/new")"
[ "$(cat "$T/back/d/new")" = new ] || fail "a fresh file holds '$(cat "$T/back/d/new")'"

# mkdir, symlink, mknod: the daemon makes the node as the caller (fsuid, fsgid, groups of
# the FUSE request), so there is nothing to hand over afterwards. Before, it made the node
# as root and then chowned the name to the caller: a racer who renamed another user's file
# into its place in between (node_swap.so does it right after the daemon's
# symlinkat/mknodat, as a racer that won would) got that file: uid 1234's, or root's for
# a regular file from mknod(2), which the checks of 680edd2 let through.
unmount_shim "$T/mnt"
swap_lib=$(cd "$BUILD" && pwd)/tests/fusefs/libnode_swap.so
[ -f "$swap_lib" ] || fail "$swap_lib missing (build target node_swap)"
for kind in symlink fifo regular; do
  victim=$T/back/d/victim-$kind
  owner=1234
  [ $kind = regular ] && owner=0
  echo "secret of uid $owner" > "$victim"
  chown $owner:$owner "$victim"
  chmod 600 "$victim"
  NODE_SWAP="n-$kind:$victim" LD_PRELOAD=$swap_lib mount_shim "$T/back" "$T/mnt"
  case $kind in
    symlink) out=$(as_nobody ln -s anywhere "$M/n-$kind" 2>&1) ;;
    fifo) out=$(as_nobody mkfifo "$M/n-$kind" 2>&1) ;;
    regular) out=$(as_nobody /usr/bin/python3 -c "import os, stat; os.mknod('$M/n-$kind', stat.S_IFREG | 0o600)" 2>&1) ;;
  esac
  echo "$kind while a racer swaps uid $owner's file in: ${out:-no error}"
  [ -e "$T/back/d/n-$kind.made" ] || [ -L "$T/back/d/n-$kind.made" ] || fail "$kind: the race harness did not swap (no n-$kind.made)"
  got=$(stat -c %u "$T/back/d/n-$kind")
  [ "$got" = $owner ] || fail "$kind: the daemon gave uid $owner's file to uid $got"
  [ "$(stat -c %u "$T/back/d/n-$kind.made")" = 65534 ] || fail "$kind: the node made was not the caller's"
  unmount_shim "$T/mnt"
done

# create(2): the daemon creates and opens the file, then looks its name up for the entry.
# A racer who renamed uid 1234's 0600 file over the new name in between must not get it:
# before, the kernel tied the caller's descriptor to that entry (its owner and mode in
# fstat; with passthrough its data, and the victim's later opens the racer's file).
victim=$T/back/d/victim-create
echo "secret of uid 1234" > "$victim"
chown 1234:1234 "$victim"
chmod 600 "$victim"
NODE_SWAP="n-create:$victim" LD_PRELOAD=$swap_lib mount_shim "$T/back" "$T/mnt"
out=$(as_nobody /usr/bin/python3 -c "
import os, sys
try:
    fd = os.open('$M/n-create', os.O_RDWR | os.O_CREAT, 0o600)
except OSError as e:
    print('open:', e.strerror); sys.exit(0)
st = os.fstat(fd)
print('opened: uid %d mode %o, read %r' % (st.st_uid, st.st_mode & 0o7777, os.read(fd, 100)))
os.write(fd, b'OWNED-BY-NOBODY')
os.close(fd)" 2>&1)
echo "create while a racer swaps uid 1234's file in: $out"
[ -e "$T/back/d/n-create.made" ] || fail "create: the race harness did not swap (no n-create.made)"
grep -q secret <<<"$out" && fail "create: uid 65534 read uid 1234's file: $out"
grep -q "uid 1234" <<<"$out" && fail "create: uid 65534's descriptor is uid 1234's file: $out"
[ "$(cat "$T/back/d/n-create")" = "secret of uid 1234" ] || fail "create: uid 1234's file now holds '$(cat "$T/back/d/n-create")'"
grep -q "^open: Permission denied" <<<"$out" || fail "create: want EACCES (the name holds uid 1234's 0600 file), got: $out"
unmount_shim "$T/mnt"

# Made as the caller: its owner and group; its supplementary groups count (a directory
# writable by group 4242 only); a set-group-ID directory's group is inherited.
mount_shim "$T/back" "$T/mnt"
mkdir -p "$T/back/g" "$T/back/sg"
chgrp 4242 "$T/back/g"
chmod 775 "$T/back/g"
chgrp 4343 "$T/back/sg"
chmod 2777 "$T/back/sg"
as_nobody mkdir "$M/fresh-dir" && as_nobody mkfifo "$M/fresh-fifo" && as_nobody ln -s x "$M/fresh-link" ||
  fail "uid 65534 cannot make a directory, fifo or symlink"
for n in fresh-dir fresh-fifo fresh-link; do
  [ "$(stat -c %u:%g "$T/back/d/$n")" = 65534:65534 ] || fail "$n belongs to $(stat -c %u:%g "$T/back/d/$n")"
done
setpriv --reuid=65534 --regid=65534 --groups=4242 mkdir "$T/mnt/g/by-group" ||
  fail "uid 65534 in group 4242 cannot mkdir in a directory writable by group 4242"
out=$(as_nobody mkdir "$T/mnt/g/no-group" 2>&1) && fail "uid 65534 without group 4242 made a directory there"
grep -q "Permission denied" <<<"$out" || fail "want EACCES without the group, got: $out"
as_nobody mkdir "$T/mnt/sg/inherits" || fail "mkdir in a set-group-ID directory"
[ "$(stat -c %u:%g "$T/back/sg/inherits")" = 65534:4343 ] || fail "in a set-group-ID directory: $(stat -c %u:%g "$T/back/sg/inherits")"
# A file created with set-user-ID and set-group-ID bits keeps them, as without the mount
# (a chown by the daemon afterwards used to clear them); a group member's create in the
# group's directory works, a non-member's is refused.
mkcreat() { /usr/bin/python3 -c "import os, sys; os.close(os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o6755))" "$1"; }
as_nobody bash -c "$(declare -f mkcreat); mkcreat '$M/suid' && mkcreat '$T/back/d/suid-direct'" ||
  fail "uid 65534 cannot create with mode 06755"
[ "$(stat -c %a:%u:%g "$T/back/d/suid")" = "$(stat -c %a:%u:%g "$T/back/d/suid-direct")" ] ||
  fail "created through the mount: $(stat -c %a:%u:%g "$T/back/d/suid"), directly: $(stat -c %a:%u:%g "$T/back/d/suid-direct")"
setpriv --reuid=65534 --regid=65534 --groups=4242 sh -c ": > '$T/mnt/g/file-by-group'" ||
  fail "uid 65534 in group 4242 cannot create a file in a directory writable by group 4242"
out=$(as_nobody sh -c ": > '$T/mnt/g/file-no-group'" 2>&1) && fail "uid 65534 without group 4242 created a file there"
as_nobody sh -c ": > '$T/mnt/sg/file-inherits'" || fail "create in a set-group-ID directory"
[ "$(stat -c %u:%g "$T/back/sg/file-inherits")" = 65534:4343 ] ||
  fail "a file in a set-group-ID directory: $(stat -c %u:%g "$T/back/sg/file-inherits")"
unmount_shim "$T/mnt"
pass "creates over names that appeared meanwhile: no symlink followed as root, no file opened past its mode; nodes and files made as the caller (owner, groups, set-group-ID, mode bits), none given away by a racer"
