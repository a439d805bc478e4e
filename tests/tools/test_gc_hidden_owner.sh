#!/bin/bash
# nfsshim gc and an owner it cannot see in /proc: with proc mounted hidepid=2 (or
# invisible), /proc/PID of a process the reaper may not inspect does not exist for it,
# exactly as for a process that is gone. Such a process may be another user's, or one of
# the reaper's own user that is not dumpable (a setcap'd java, PR_SET_DUMPABLE 0). Its
# entry must be kept: kill(pid, 0) still finds it. All as uid 65534, in a mount namespace
# of its own whose /proc is mounted hidepid=2. Needs root (mount, nsenter, setpriv).
. "$(dirname "$0")/lib.sh"
[[ $(id -u) == 0 ]] || { echo "skip: needs root (unshare --mount, mount -t proc, setpriv)"; exit 77; }
# Before Linux 5.8 every proc mount of a pid namespace shares one superblock: the option
# would reach the host's /proc.
IFS=. read -r kmaj kmin _ < /proc/sys/kernel/osrelease
if (( kmaj < 5 || (kmaj == 5 && kmin < 8) )); then
  echo "skip: hidepid per proc mount needs Linux 5.8 (this is $kmaj.$kmin)"
  exit 77
fi

nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
chmod 711 "$tmp"
mkdir -p "$stats"
chown 65534:65534 "$data" "$stats"
grave=$data/.graveyard.nfsshim/u65534

# The namespace: a process that mounts the private proc and then waits; every command
# below enters it with nsenter.
unshare --mount --propagation private bash -c \
  'mount -t proc -o hidepid=2 proc /proc && : >"$1" && exec sleep 300' _ "$tmp/ns.ready" &
holder_pids+=($!)
ns=$!
for _ in $(seq 100); do [[ -e $tmp/ns.ready ]] && break; sleep 0.1; done
[[ -e $tmp/ns.ready ]] || fail "the mount namespace with hidepid=2 did not come up"
in_ns=(nsenter -t "$ns" -m "${nobody[@]}")
grep -q 'hidepid=' < <("${in_ns[@]}" cat /proc/self/mountinfo) || fail "no hidepid proc in the namespace"

HOLDER_WRAP="${in_ns[*]}" holder_start owner
[[ $(holder_do owner nodump) == nodump ]] || fail "owner nodump"
[[ $(holder_do owner "hold $data/owner.txt") == "held $data/owner.txt" ]] || fail "owner hold"
entry=$("${in_ns[@]}" ls -A "$grave" | grep "~$owner_pid~")
[[ -n $entry ]] || fail "no graveyard entry of pid $owner_pid: $(ls -AR "$data")"
"${in_ns[@]}" test -e "/proc/$owner_pid" && fail "the owner is visible in the namespace's /proc: nothing is checked"
echo "owner pid $owner_pid (not dumpable, hidden by hidepid=2); its entry: $entry"

"${in_ns[@]}" "$nfsshim" gc "$data" >"$tmp/gc" 2>&1 || fail "gc: $? $(cat "$tmp/gc")"
[[ -e $grave/$entry ]] || fail "gc removed a live process's entry: $(cat "$tmp/gc")"
grep -qF "kept: $grave/$entry (owner process $owner_pid is alive)" "$tmp/gc" || fail "gc output: $(cat "$tmp/gc")"
pass "the entry of a live owner hidden by hidepid=2 is kept"

# Gone for real (kill then says ESRCH), killed so that it leaves its entry behind: removed.
kill -9 "$owner_pid"
for _ in $(seq 100); do kill -0 "$owner_pid" 2>/dev/null || break; sleep 0.1; done
"${in_ns[@]}" "$nfsshim" gc "$data" >"$tmp/gc" 2>&1 || fail "gc after the owner's exit: $? $(cat "$tmp/gc")"
[[ ! -e $grave/$entry ]] || fail "the entry of an owner that is gone stayed: $(cat "$tmp/gc")"
grep -qF "removed: $grave/$entry (owner process $owner_pid is gone)" "$tmp/gc" || fail "gc output: $(cat "$tmp/gc")"
pass "once the owner is gone its entry is removed"
