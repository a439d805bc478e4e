#!/bin/bash
# fstab_test.sh: nfsshim-fuse mounted the way /etc/fstab does it, through mount(8) and the
# mount.fuse3 helper ("mount -t fuse.nfsshim-fuse SOURCE MNT -o opts" runs /sbin/mount.fuse,
# which runs "nfsshim-fuse SOURCE MNT -o opts" through /bin/sh).
#
# mount(8) removes PATH from the helper's environment (util-linux sanitize_env), so sh looks
# nfsshim-fuse up in its default PATH (/usr/local/sbin:...:/bin): a PATH prepended by the
# caller is NOT used. The binary must be installed there (packaging puts it in sbin). So this
# test runs in a private mount namespace with a temp dir bind-mounted over /usr/local/sbin
# holding the nfsshim-fuse symlink; nothing changes outside the namespace.
#
# Cases: mount -t on the command line; an fstab line (mount -T FILE MNT) carrying the
# fstab-only words (defaults, _netdev, nofail, noauto, x-systemd.requires-mounts-for=);
# mount.fuse3 run directly with nfsshim-fuse found through a prepended PATH (that does work
# without mount(8)); and mount failing cleanly when nfsshim-fuse is not installed. Each
# mount: it is ours (type, source, allow_other), our own option arrived (entry_timeout in
# the daemon's log), files pass through, delete-on-last-close works, and umount(8) ends
# the daemon.
if [ -z "${FSTAB_TEST_NS:-}" ]; then
  exec env FSTAB_TEST_NS=1 unshare -m --propagation private bash "$0" "$@"
fi
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/back" "$T/mnt" "$T/sbin" "$T/bin"
mount --bind "$T/sbin" /usr/local/sbin || fail "bind mount over /usr/local/sbin"
MOUNTS+=(/usr/local/sbin)
MOUNT_ENV=(env -u NFSSHIM_BUILD -u FSTAB_TEST_NS)

daemon_pid() {  # the nfsshim-fuse process serving $T/mnt (argv has SOURCE and MNT)
  pgrep -f "nfsshim-fuse $T/back $T/mnt" | head -n 1
}

check_mount() {  # LABEL LOG TIMEOUT
  local label=$1 log=$2 tmo=$3 line pid
  MOUNTS+=("$T/mnt")
  wait_mounted "$T/mnt" fuse.nfsshim-fuse
  pid=$(daemon_pid)
  [ -n "$pid" ] || fail "$label: no nfsshim-fuse daemon for $T/mnt"
  PIDS+=("$pid")
  line=$(grep " $T/mnt " /proc/self/mountinfo)
  case $line in *" - fuse.nfsshim-fuse $T/back "*) ;; *) fail "$label: wrong mount: $line" ;; esac
  case $line in *allow_other*) ;; *) fail "$label: allow_other missing: $line" ;; esac
  grep -q "entry_timeout ${tmo}s" "$log" || fail "$label: -o entry_timeout=$tmo did not reach the daemon: $(cat "$log")"
  echo data > "$T/mnt/f" || fail "$label: write through the mount"
  [ "$(cat "$T/back/f")" = data ] || fail "$label: file not in SOURCE"
  # Delete-on-last-close: the unlinked open file waits in the graveyard, then goes.
  exec 7< "$T/mnt/f"
  rm "$T/mnt/f" || fail "$label: unlink"
  [ -z "$(ls "$T/mnt")" ] || fail "$label: name still listed after unlink"
  graveyard_empty "$T/back" && fail "$label: unlinked open file is not in the graveyard"
  [ "$(cat <&7)" = data ] || fail "$label: data of the unlinked open file lost"
  exec 7<&-
  wait_graveyard_empty "$T/back" || fail "$label: graveyard not emptied at the last close"
  umount "$T/mnt" || fail "$label: umount"
  for i in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  kill -0 "$pid" 2>/dev/null && fail "$label: daemon $pid still running after umount"
  is_mounted "$T/mnt" fuse.nfsshim-fuse && fail "$label: still mounted after umount"
  unset 'MOUNTS[${#MOUNTS[@]}-1]'
  pass "$label"
}

# 0. Not installed: the helper must fail and leave nothing mounted.
"${MOUNT_ENV[@]}" PATH="$T/bin:$PATH" mount -t fuse.nfsshim-fuse "$T/back" "$T/mnt" 2>/dev/null &&
  { MOUNTS+=("$T/mnt"); fail "mounted although nfsshim-fuse is not installed"; }
is_mounted "$T/mnt" fuse.nfsshim-fuse && fail "left mounted after a failed mount"
pass "mount fails cleanly while nfsshim-fuse is not installed"
ln -s "$SHIM_BIN" "$T/sbin/nfsshim-fuse"
ln -s "$SHIM_BIN" "$T/bin/nfsshim-fuse"

# 1. mount -t fuse.nfsshim-fuse on the command line.
"${MOUNT_ENV[@]}" mount -t fuse.nfsshim-fuse "$T/back" "$T/mnt" \
  -o "log=file:$T/t.log,entry_timeout=0.5" || fail "mount -t fuse.nfsshim-fuse"
check_mount "mount -t fuse.nfsshim-fuse" "$T/t.log" 0.5

# 2. An fstab line (mount -T reads FILE instead of /etc/fstab), with the ordering option the
# documented fstab line carries (x-systemd.requires-mounts-for=SOURCE: mount(8) keeps x-*
# options from the helper, so the daemon must not see it as unknown).
printf '%s %s fuse.nfsshim-fuse defaults,_netdev,nofail,noauto,x-systemd.requires-mounts-for=%s,log=file:%s,entry_timeout=2 0 0\n' \
  "$T/back" "$T/mnt" "$T/back" "$T/fstab.log" > "$T/fstab"
"${MOUNT_ENV[@]}" mount -T "$T/fstab" "$T/mnt" || fail "mount -T fstab ($(cat "$T/fstab"))"
check_mount "fstab entry" "$T/fstab.log" 2

# 3. The helper itself keeps PATH: nfsshim-fuse from a prepended temp dir.
rm "$T/sbin/nfsshim-fuse"
"${MOUNT_ENV[@]}" PATH="$T/bin:$PATH" mount.fuse3 "$T/back" "$T/mnt" -t fuse.nfsshim-fuse \
  -o "log=file:$T/helper.log,entry_timeout=3" || fail "mount.fuse3 with PATH"
check_mount "mount.fuse3 with nfsshim-fuse in PATH" "$T/helper.log" 3
