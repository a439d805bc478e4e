#!/bin/bash
# crash_recovery.sh HELPER PRELOAD_LIB SCRATCH
# A process that holds a buried file is SIGKILLed: its graveyard entry outlives it.
# The next shimmed process that deletes something on that filesystem must reap it,
# and must leave alone the entry of a process that is still alive.
set -euo pipefail
helper=$1 lib=$2 scratch=$3
rm -rf "$scratch"; mkdir -p "$scratch"
export NFSSHIM_WATCH=$scratch
grave=$scratch/.graveyard.nfsshim/u$(id -u)
count() { ls -A "$grave" 2>/dev/null | grep -c "~$1~" || true; }
others() { ls -A "$grave" 2>/dev/null | grep -vc "~$1~" || true; }

# A live holder, in the background, until we close its stdin.
exec 7> >(LD_PRELOAD=$lib "$helper" "$scratch/live" wait > "$scratch/live.out")
for i in $(seq 50); do grep -q buried "$scratch/live.out" 2>/dev/null && break; sleep 0.1; done
live_pid=$(ps -eo pid,args | awk -v f="$scratch/live" '$0 ~ f && $0 ~ /wait/ && !/awk/ {print $1}' | head -1)
[ -n "$live_pid" ] || { echo "FAIL: live holder did not start"; exit 1; }

set +e
LD_PRELOAD=$lib "$helper" "$scratch/victim" die
rc=$?
set -e
[ $rc = 137 ] || { echo "FAIL: helper should have died of SIGKILL, rc=$rc"; exit 1; }
dead_entries=$(others "$live_pid")
[ "$dead_entries" = 1 ] || { echo "FAIL: expected 1 orphan entry, found $dead_entries: $(ls -A "$grave")"; exit 1; }
[ "$(count "$live_pid")" = 1 ] || { echo "FAIL: live holder's entry missing"; exit 1; }
echo "after SIGKILL: 1 orphan entry, 1 live entry"

# The next run that touches this filesystem reaps what the dead left.
echo x > "$scratch/other"
LD_PRELOAD=$lib rm "$scratch/other"
left=$(others "$live_pid")
[ "$left" = 0 ] || { echo "FAIL: orphan not reaped: $(ls -A "$grave")"; exit 1; }
[ "$(count "$live_pid")" = 1 ] || { echo "FAIL: a live process's entry was reaped"; exit 1; }
echo "next run: orphan reaped, live entry kept"

exec 7>&-   # the live holder closes its file and exits
for i in $(seq 50); do kill -0 "$live_pid" 2>/dev/null || break; sleep 0.1; done
[ -z "$(ls -A "$grave")" ] || { echo "FAIL: live holder's entry not removed at its close: $(ls -A "$grave")"; exit 1; }
echo "PASS"
