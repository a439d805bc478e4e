#!/bin/bash
# nfsshim gc and time namespaces: the start time in /proc/PID/stat (field 22) is shown
# shifted by the *reader's* boottime offset. An entry must carry the raw boot time, and
# a reaper must compare raw boot time, or a live owner on the other side of a time
# namespace looks like a dead process whose pid was reused. Both ways: an owner inside a
# time namespace judged from outside, and an owner outside judged from inside.
# Needs root (unshare --time) and a kernel with time namespaces (Linux 5.6).
. "$(dirname "$0")/lib.sh"
[[ $(id -u) == 0 ]] || { echo "skip: needs root (unshare --time)"; exit 77; }
[[ -e /proc/self/ns/time ]] && unshare --time --boottime 100000 true 2>"$tmp/err" ||
  { echo "skip: no time namespaces here: $(cat "$tmp/err")"; exit 77; }

timens=(unshare --time --boottime 100000)
grave=$data/.graveyard.nfsshim/u$(id -u)
start_of() { cut -d' ' -f22 "/proc/$1/stat"; }  # as seen from here (offset 0)

# An owner inside the time namespace, gc outside.
HOLDER_WRAP="${timens[*]}" holder_start inside
[[ $(holder_do inside "hold $data/inside.txt") == "held $data/inside.txt" ]] || fail "inside hold"
entry=$(entries_of "$inside_pid")
[[ -n $entry ]] || fail "no graveyard entry of pid $inside_pid: $(ls -AR "$data")"
echo "owner in a time namespace (boottime +100000 s): pid $inside_pid, entry $entry, start here $(start_of "$inside_pid")"
[[ ${entry##*~$inside_pid~} == "$(start_of "$inside_pid")~"* ]] ||
  fail "the entry does not carry the raw start time $(start_of "$inside_pid"): $entry"
"$nfsshim" gc "$data" >"$tmp/gc" 2>&1 || fail "gc: $? $(cat "$tmp/gc")"
[[ -e $grave/$entry ]] || fail "gc outside removed the entry of a live owner inside a time namespace: $(cat "$tmp/gc")"
grep -qF "kept: $grave/$entry (owner process $inside_pid is alive)" "$tmp/gc" || fail "gc output: $(cat "$tmp/gc")"
pass "an owner inside a time namespace: its entry carries raw boot time and gc outside keeps it"

# An owner outside, gc inside the time namespace.
holder_start outside
[[ $(holder_do outside "hold $data/outside.txt") == "held $data/outside.txt" ]] || fail "outside hold"
out_entry=$(entries_of "$outside_pid")
[[ -n $out_entry ]] || fail "no graveyard entry of pid $outside_pid: $(ls -AR "$data")"
"${timens[@]}" "$nfsshim" gc "$data" >"$tmp/gc" 2>&1 || fail "gc in a time namespace: $? $(cat "$tmp/gc")"
[[ -e $grave/$out_entry ]] || fail "gc inside a time namespace removed a live owner's entry: $(cat "$tmp/gc")"
[[ -e $grave/$entry ]] || fail "gc inside another time namespace removed a live owner's entry: $(cat "$tmp/gc")"
grep -qF "kept: $grave/$out_entry (owner process $outside_pid is alive)" "$tmp/gc" || fail "gc output: $(cat "$tmp/gc")"
grep -qF "kept: $grave/$entry (owner process $inside_pid is alive)" "$tmp/gc" || fail "gc output: $(cat "$tmp/gc")"
pass "gc inside a time namespace keeps the entries of live owners outside and in another one"

# Gone for real (SIGKILL leaves the entry): removed, from either side.
kill -9 "$inside_pid" "$outside_pid"
wait 2>/dev/null
"${timens[@]}" "$nfsshim" gc "$data" >"$tmp/gc" 2>&1 || fail "gc after the owners died: $? $(cat "$tmp/gc")"
[[ ! -e $grave/$entry && ! -e $grave/$out_entry ]] || fail "entries of dead owners stayed: $(cat "$tmp/gc")"
pass "the entries of owners that are gone are removed"
