#!/bin/bash
# `graveyard = MOUNT=DIR` mappings as gc, doctor and the preload see them: a mapped
# graveyard nobody has made yet is nothing to do for gc (as a missing default one is).
. "$(dirname "$0")/lib.sh"

# A mapped graveyard that does not exist yet (nobody deleted a held file): gc said
# "failed: $data/.g (cannot list: ...)" with status 1, every day.
NFSSHIM_GRAVEYARD=$data=$data/.g "$nfsshim" gc "$data" >"$tmp/gc" 2>&1; rc=$?
[[ $rc == 0 ]] || fail "gc of a missing mapped graveyard exited $rc: $(cat "$tmp/gc")"
grep -qF "nothing to do: no graveyard in $data ($data/.g)" "$tmp/gc" || fail "gc output: $(cat "$tmp/gc")"
[[ ! -e $data/.g ]] || fail "gc made the graveyard"
pass "a mapped graveyard that does not exist yet: nothing to do, status 0"

# The environment replaces the file's mappings (as it does for every key) and, for one
# MOUNT given twice, the last mapping wins in gc, doctor and the preload alike. gc took the
# file's first mapping (.g1) while the preload and doctor took the last (.g2): the
# entry of a killed owner in .g2 was never reaped and gc failed on .g1 every day.
uid=$(id -u)
unset NFSSHIM_WATCH
# agree NAME ROOT FILE DIR: holder NAME holds ROOT/FILE and is killed; its entry must be
# in DIR/u<uid> and nowhere else under ROOT, doctor ROOT must name DIR, gc ROOT must
# remove the entry.
agree() {
  local n=$1 root=$2 file=$3 dir=$4 pid entry
  holder_start "$n"
  [[ $(holder_do "$n" "hold $root/$file") == "held $root/$file" ]] || fail "$n: hold"
  eval "pid=\$${n}_pid"
  entry=$(cd "$dir/u$uid" 2>/dev/null && find . -maxdepth 1 -name "*~$pid~*" -printf '%f\n')
  [[ -n $entry ]] || fail "$n: no entry in $dir: $(find "$tmp" -name "*~$pid~*")"
  [[ $(cd "$root" && find . -name "*~$pid~*" | wc -l) == 1 ]] || fail "$n: entries: $(find "$root" -name "*~$pid~*")"
  kill -9 "$pid"
  wait "$pid" 2>/dev/null
  "$nfsshim" doctor "$root" >"$tmp/doctor" 2>&1
  grep -qE "^  location: +$dir\$" "$tmp/doctor" || fail "$n: doctor: $(grep location "$tmp/doctor")"
  "$nfsshim" gc "$root" >"$tmp/gc" 2>&1 || fail "$n: gc exited $?: $(cat "$tmp/gc")"
  grep -qF "removed: $dir/u$uid/$entry (owner process $pid is gone)" "$tmp/gc" || fail "$n: gc: $(cat "$tmp/gc")"
  [[ ! -e $dir/u$uid/$entry ]] || fail "$n: entry still there"
}

d2=$tmp/d2
mkdir -p "$d2"
printf 'watch = %s\ngraveyard = %s=%s/.g1\n' "$d2" "$d2" "$d2" >"$tmp/c2.conf"
NFSSHIM_CONFIG=$tmp/c2.conf NFSSHIM_GRAVEYARD=$d2=$d2/.g2 agree h2 "$d2" f "$d2/.g2"
pass "NFSSHIM_GRAVEYARD replaces the file's mapping in the preload, doctor and gc"

d3=$tmp/d3
mkdir -p "$d3"
printf 'watch = %s\ngraveyard = %s=%s/.ga, %s=%s/.gb\n' "$d3" "$d3" "$d3" "$d3" "$d3" >"$tmp/c3.conf"
NFSSHIM_CONFIG=$tmp/c3.conf agree h3 "$d3" f "$d3/.gb"
pass "one MOUNT mapped twice: the last mapping wins in the preload, doctor and gc"

# Nested watch dirs: the deepest one that holds the file is its root. The preload took
# the first listed (d5), doctor the deepest (d5/sub).
d5=$tmp/d5
mkdir -p "$d5/sub"
printf 'watch = %s:%s/sub\n' "$d5" "$d5" >"$tmp/c5.conf"
NFSSHIM_CONFIG=$tmp/c5.conf agree h5 "$d5/sub" f "$d5/sub/.graveyard.nfsshim"
pass "nested watch dirs: the deepest is the root in the preload, doctor and gc"

# A MOUNT written through a symlink: watch dirs are resolved, a mapping's MOUNT is compared
# as written (resolving it would stat every mapped mount point: one whose NFS server is
# gone would hang deletes, fork and gc). It is not used, the same way in all three, and
# doctor says so and what to write; it was ignored without a word.
d4=$tmp/d4
mkdir -p "$d4" "$tmp/x"
ln -s "$d4" "$tmp/x/lnk"
lnk=$tmp/x/lnk
printf 'watch = %s\ngraveyard = %s=%s/.mygrave\n' "$lnk" "$lnk" "$lnk" >"$tmp/c4.conf"
NFSSHIM_CONFIG=$tmp/c4.conf agree h4 "$lnk" f "$d4/.graveyard.nfsshim"
NFSSHIM_CONFIG=$tmp/c4.conf "$nfsshim" doctor "$lnk" >"$tmp/doctor" 2>&1; rc=$?
[[ $rc == 1 ]] || fail "doctor with a symlinked MOUNT exited $rc: $(cat "$tmp/doctor")"
grep -qF "graveyard mapping '$lnk=$lnk/.mygrave' is not used: '$lnk' is not a real path (it resolves to '$d4'): write '$d4'" \
  "$tmp/doctor" || fail "doctor: $(cat "$tmp/doctor")"
pass "a MOUNT written through a symlink: not used by the preload, doctor and gc alike; doctor names it"

# A mapping whose MOUNT is below the root of PATH (neither a watch dir nor a mount point)
# is never used: doctor names it.
d6=$tmp/d6
mkdir -p "$d6/sub"
printf 'watch = %s\ngraveyard = %s/sub=%s/sub/.g\n' "$d6" "$d6" "$d6" >"$tmp/c6.conf"
NFSSHIM_CONFIG=$tmp/c6.conf "$nfsshim" doctor "$d6/sub" >"$tmp/doctor" 2>&1; rc=$?
[[ $rc == 1 ]] || fail "doctor with an unused mapping exited $rc: $(cat "$tmp/doctor")"
grep -qF "graveyard mapping '$d6/sub=$d6/sub/.g' is not used" "$tmp/doctor" || fail "doctor: $(cat "$tmp/doctor")"
pass "doctor names a mapping whose MOUNT is neither a watch dir nor a mount point"

# A filesystem mounted below a watch dir is not part of it: the preload matches watch
# dirs by device, and doctor must too (it said "watched" with the watch dir's graveyard,
# on another filesystem). Needs root for the tmpfs.
d7=$tmp/d7
mkdir -p "$d7/m"
if [[ $(id -u) == 0 ]] && mount -t tmpfs nfsshim-test "$d7/m" 2>/dev/null; then
  # The holders first (h7 keeps the tmpfs busy), then the tmpfs, then the rest.
  trap 'for p in "${holder_pids[@]}"; do kill -9 "$p" 2>/dev/null; done; wait 2>/dev/null; umount "$d7/m"; cleanup' EXIT
  printf 'watch = %s\n' "$d7" >"$tmp/c7.conf"
  export NFSSHIM_CONFIG=$tmp/c7.conf
  holder_start h7
  [[ $(holder_do h7 "hold $d7/m/f") == "held $d7/m/f" ]] || fail "h7: hold"
  # shellcheck disable=SC2154  # h7_pid: set by holder_start
  [[ -z $(find "$d7" -name "*~${h7_pid}~*") ]] || fail "h7: buried: $(find "$d7" -name "*~${h7_pid}~*")"
  "$nfsshim" doctor "$d7/m" >"$tmp/doctor" 2>&1; rc=$?
  grep -qE '^  watched: +false$' "$tmp/doctor" || fail "doctor on a mount below a watch dir: $(cat "$tmp/doctor")"
  [[ $rc == 0 ]] || fail "doctor on a mount below a watch dir exited $rc: $(cat "$tmp/doctor")"
  unset NFSSHIM_CONFIG
  pass "a filesystem mounted below a watch dir: not watched, for the preload and doctor"
else
  echo "skip: a tmpfs below a watch dir (needs root and mount)"
fi
