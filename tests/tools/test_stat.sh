#!/bin/bash
# nfsshim stat: counters of a shimmed process move as it unlinks open files; table,
# JSON and Prometheus output (checked by promtool when installed); processes that
# are gone are not shown.
. "$(dirname "$0")/lib.sh"

# counter PID NAME: the value in `nfsshim stat --json`.
counter() {
  "$nfsshim" stat --json | grep "\"pid\": $1," | grep -o "\"$2\": [0-9]*" | awk '{print $2}'
}

holder_start h
[[ $(counter "$h_pid" buried) == 0 ]] || fail "fresh process: buried=$(counter "$h_pid" buried)"
holder_do h "hold $data/a" >/dev/null
[[ $(counter "$h_pid" buried) == 1 ]] || fail "after one unlink: buried=$(counter "$h_pid" buried)"
[[ $(counter "$h_pid" live_entries) == 1 ]] || fail "live_entries=$(counter "$h_pid" live_entries)"
holder_do h "hold $data/b" >/dev/null
[[ $(counter "$h_pid" buried) == 2 ]] || fail "after two unlinks: buried=$(counter "$h_pid" buried)"
[[ $(counter "$h_pid" live_entries) == 2 ]] || fail "live_entries=$(counter "$h_pid" live_entries)"
holder_do h close >/dev/null
[[ $(counter "$h_pid" removed_last_ref) == 2 ]] || fail "removed_last_ref=$(counter "$h_pid" removed_last_ref)"
[[ $(counter "$h_pid" live_entries) == 0 ]] || fail "after close: live_entries=$(counter "$h_pid" live_entries)"
pass "counters move while the process unlinks open files"

"$nfsshim" stat >"$tmp/table" || fail "stat: $?"
head -1 "$tmp/table" | grep -qE "^ *PID  KIND +NAME +buried" || fail "table head: $(head -1 "$tmp/table")"
grep -qE "^ *$h_pid  preload  holder +2 +2 " "$tmp/table" || fail "table row: $(cat "$tmp/table")"
"$nfsshim" stat --prometheus >"$tmp/prom" || fail "stat --prometheus: $?"
grep -qx "nfsshim_buried_total{pid=\"$h_pid\",kind=\"preload\",comm=\"holder\"} 2" "$tmp/prom" || fail "prom: $(cat "$tmp/prom")"
grep -qx "# TYPE nfsshim_live_entries gauge" "$tmp/prom" || fail "no gauge TYPE"
if [[ -x /usr/bin/promtool ]]; then
  /usr/bin/promtool check metrics <"$tmp/prom" || fail "promtool check metrics"
  pass "promtool accepts the Prometheus output"
else
  echo "note: promtool not installed; the format is checked by StatFormat.* in tools_tests"
fi
pass "table and Prometheus output"

# Gone without a trace (SIGKILL leaves the file): not shown.
kill -9 "$h_pid"
wait "$h_pid" 2>/dev/null
[[ -f $stats/$h_pid.stats ]] || fail "SIGKILL left no stats file to ignore"
"$nfsshim" stat --json | grep -q "\"pid\": $h_pid," && fail "dead process shown"
"$nfsshim" stat --json | grep -qx '{"processes": \[\]}' || fail "expected no processes: $("$nfsshim" stat --json)"
# A normal exit removes the file.
holder_start q
echo quit >&"$q_in"
wait "$q_pid" 2>/dev/null
[[ ! -e $stats/$q_pid.stats ]] || fail "normal exit left its stats file"
pass "dead processes are not shown; a normal exit removes its file"

for bad in "--json --prometheus" "--watch" "--watch 0" "--watch x" "--frob"; do
  # shellcheck disable=SC2086
  "$nfsshim" stat $bad >/dev/null 2>&1; rc=$?
  [[ $rc == 2 ]] || fail "stat $bad exited $rc"
done
timeout 3 "$nfsshim" stat --watch 1 >"$tmp/watch"
[[ $(grep -cE "^ *PID" "$tmp/watch") -ge 2 ]] || fail "--watch printed $(grep -cE "^ *PID" "$tmp/watch") tables"
pass "bad arguments: status 2; --watch repeats"
