#!/bin/bash
# kill -9 of the daemon while a deleted file is held: after `fusermount3 -u -z` and a remount
# nothing is lost, the dead daemon's graveyard entries are reaped, the mount works again.
# Also: the daemon detaches by itself (no -f) and stops cleanly on SIGTERM.
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/back" "$T/mnt"
M=$T/mnt
# Detached start: returns once mounted.
$SHIM "$T/back" "$M" -o log=file:"$T/shim.log" ${FUSEFS_OPTS:+-o "$FUSEFS_OPTS"} || fail "detached start"
MOUNTS+=("$M")
is_mounted "$M" fuse.nfsshim-fuse || fail "not mounted when the detached start returned"
pid=$(pgrep -f "^$SHIM_BIN $T/back " | head -n 1)
[ -n "$pid" ] && [ "$(cat /proc/$pid/comm)" = nfsshim-fuse ] || fail "daemon pid not found"

mkdir "$M/keep"
head -c 1000000 /dev/urandom > "$T/expected"
cp "$T/expected" "$M/keep/a"
echo small > "$M/keep/b"
cp "$T/expected" "$M/victim"
exec 3< "$M/victim"
rm "$M/victim"
[ -n "$(ls -A "$T/back/$GRAVEYARD/u0")" ] || fail "graveyard should hold the open victim"
kill -9 "$pid"
for i in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
exec 3<&-
stat "$M" >/dev/null 2>&1 && fail "mount still answers after kill -9"
# Remounting on a dead mount is refused with a clear message.
out=$($SHIM "$T/back" "$M" -f 2>&1) && fail "mount over a dead mount succeeded"
echo "$out" | grep -q "fusermount3 -u -z" || fail "unclear message for a dead mount: $out"
fusermount3 -u -z "$M" || fail "fusermount3 -u -z"
cmp "$T/expected" "$T/back/keep/a" && [ "$(cat "$T/back/keep/b")" = small ] || fail "data lost"
mount_shim "$T/back" "$M"
graveyard_empty "$T/back" || fail "dead daemon's entries not reaped: $(ls -A "$T/back/$GRAVEYARD/u0")"
grep -q "reaped 1 entries" "$T/shim.log" || fail "no reap logged"
cmp "$T/expected" "$M/keep/a" || fail "data through the new mount"
echo again > "$M/new" && [ "$(cat "$M/new")" = again ] || fail "new mount not usable"
# SIGTERM stops it cleanly and unmounts.
kill -TERM "$SHIM_PID"
wait "$SHIM_PID"; rc=$?
[ $rc -eq 0 ] || fail "SIGTERM exit status $rc"
is_mounted "$M" fuse.nfsshim-fuse && fail "still mounted after SIGTERM"
pass "kill -9, lazy unmount, remount, reap; SIGTERM"
