#!/bin/bash
# nfsshim gc and a shimmed process in another pid namespace on this host (a container
# sharing the host's name and kernel, as a Kubernetes hostNetwork pod): its pids mean
# nothing here, so its live entry must not be taken for a dead process's. It is judged
# like another host's: kept while younger than the foreign age, removed after.
. "$(dirname "$0")/lib.sh"
[[ $(id -u) == 0 ]] || { echo "skip: needs root (unshare --pid)"; exit 77; }

HOLDER_WRAP="unshare --pid --fork --kill-child --mount-proc" holder_start boxed
box=${holder_pids[-1]}
[[ $(holder_do boxed "hold $data/boxed.txt") == "held $data/boxed.txt" ]] || fail "boxed hold"
entry=$(entries_of "$boxed_pid")
[[ -n $entry ]] || fail "no graveyard entry of pid $boxed_pid: $(ls -AR "$data")"
echo "the boxed holder is pid $boxed_pid in its namespace; its entry: $entry"
grave=$data/.graveyard.nfsshim/u$(id -u)

"$nfsshim" gc "$data" >"$tmp/gc" 2>&1 || fail "gc: $? $(cat "$tmp/gc")"
[[ -e $grave/$entry ]] || fail "gc removed a live process's entry (it looked up pid $boxed_pid here): $(cat "$tmp/gc")"
grep -qF "kept: $grave/$entry (owner in another pid namespace, younger than the foreign age)" "$tmp/gc" ||
  fail "gc output: $(cat "$tmp/gc")"
pass "the entry of a live process in another pid namespace is kept"

kill -9 "$box"
wait "$box" 2>/dev/null
"$nfsshim" gc --max-age 0 "$data" >"$tmp/gc" 2>&1 || fail "gc --max-age 0: $? $(cat "$tmp/gc")"
[[ ! -e $grave/$entry ]] || fail "an entry older than the foreign age stayed: $(cat "$tmp/gc")"
grep -qF "removed: $grave/$entry" "$tmp/gc" || fail "gc output: $(cat "$tmp/gc")"
pass "past the foreign age it is removed"
