#!/bin/bash
# nfsshim gc --silly run by a user who cannot see every process: a process it may not
# inspect (EACCES/EPERM on /proc/PID) or a proc mounted with hidepid (other users'
# processes unreadable or invisible) makes the holder scan incomplete, and a silly file
# held by such a process is kept, with the reason. Needs root (mount, setpriv).
. "$(dirname "$0")/lib.sh"
[[ $(id -u) == 0 ]] || { echo "skip: needs root (mount -t proc, setpriv)"; exit 77; }

nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
chmod 711 "$tmp"
d=$tmp/silly
mkdir "$d"
f=$d/.nfs0000000000000001000000a1
touch -d '1 hour ago' "$f"
chown -R 65534:65534 "$d"
# The holder: a process of root, which the gc user (65534) may not inspect.
sleep 300 <"$f" &
holder_pids+=($!)
holder=$!

# gc as 65534 on D with PROC; the output in $tmp/out.
gc_as_nobody() {
  "${nobody[@]}" "$nfsshim" gc --silly --max-age 0 --proc "$1" "$d" >"$tmp/out" 2>&1 ||
    fail "gc --proc $1: $? $(cat "$tmp/out")"
}
kept() {  # kept WHY-PATTERN
  [[ -e $f ]] || fail "a silly file held by process $holder was removed: $(cat "$tmp/out")"
  grep -qF "kept: $f (cannot tell whether it is held: $1" "$tmp/out" ||
    fail "expected 'kept: $f (cannot tell whether it is held: $1' in: $(cat "$tmp/out")"
}

# A proc tree whose process directory gc may not open (EACCES): not an exited process.
fake=$tmp/proc
mkdir -p "$fake/4242/fd"
ln -s "$f" "$fake/4242/fd/3"
: >"$fake/4242/maps"
chmod 755 "$fake"
chmod 000 "$fake/4242"
gc_as_nobody "$fake"
kept "cannot inspect process 4242: Permission denied"
pass "a process directory that cannot be opened makes the scan incomplete"

# A private proc with hidepid, in a mount namespace of its own (gone with it). Before
# Linux 5.8 every proc mount of a pid namespace shares one superblock: the option would
# reach the host's /proc (and invisible, noaccess, ptraceable do not exist).
IFS=. read -r kmaj kmin _ < /proc/sys/kernel/osrelease
hps=(1 2 invisible noaccess ptraceable)
if (( kmaj < 5 || (kmaj == 5 && kmin < 8) )); then
  echo "not checked: hidepid per proc mount needs Linux 5.8 (this is $kmaj.$kmin)"
  hps=()
fi
for hp in "${hps[@]}"; do
  unshare --mount --propagation private bash -c '
    mkdir -p "$1" && mount -t proc -o hidepid="$2" proc "$1" || exit 3
    shift 2
    exec "$@"' _ "$tmp/hp" "$hp" "${nobody[@]}" "$nfsshim" gc --silly --max-age 0 --proc "$tmp/hp" "$d" \
    >"$tmp/out" 2>&1 || fail "gc on a proc with hidepid=$hp: $? $(cat "$tmp/out")"
  kept "$tmp/hp is mounted with hidepid="
  echo "hidepid=$hp: $(grep -F "kept: $f" "$tmp/out")"
done
grep -q "$tmp/hp" /proc/self/mountinfo && fail "the private proc mount is still there"
(( ${#hps[@]} )) && pass "a proc mounted with hidepid makes the scan incomplete for a user"

kill "$holder"
wait "$holder" 2>/dev/null
chmod 755 "$fake/4242"
rm "$fake/4242/fd/3"
"$nfsshim" gc --silly --max-age 0 --proc "$fake" "$d" >"$tmp/out" 2>&1 || fail "gc as root: $(cat "$tmp/out")"
[[ ! -e $f ]] || fail "root's gc on a readable proc tree kept an unheld silly file: $(cat "$tmp/out")"
pass "root's gc still removes an unheld silly file"
