#!/bin/bash
# shellcheck disable=SC2154  # live_pid, live_in, ...: set by holder_start (lib.sh)
# guest_tools.sh (runs inside the UML guest started by uml_tools.sh; cwd = the lab's NFS
# mount, made by the real Linux NFS client with vers=4.1,nconnect=4 against nfs-ganesha).
# `nfsshim doctor`, `gc` and `stat` on a real NFS mount:
#   doctor  reports nfs, the mount's options from mountinfo and silly rename = true from
#           its probe, as a shell experiment on the same mount shows; on the guest's tmpfs
#           silly rename = false (and the same experiment shows none there).
#   stat    the Kafka partition-delete pattern (kafka_pattern) runs under `nfsshim run`,
#           stopped twice by pause_at.so (at its first rmdir, after the deletes; at its
#           first munmap, after closing its descriptors): the counters move between the
#           stops as the buried files lose their references; saves --prometheus output
#           of both stops in $TOOLS_OUT for promtool (on the host).
#   gc      while the Kafka pattern is stopped (alive) and a SIGKILLed shimmed holder
#           left a graveyard entry: gc removes the dead one's entry and stats file and
#           keeps every entry of the live processes.
# Needs TOOLS_NFSSHIM, TOOLS_HOLDER, TOOLS_PAUSE_AT, TOOLS_KAFKA_PATTERN, TOOLS_OUT,
# NFSSHIM_STATS_DIR (passed by uml_tools.sh).
: "${TOOLS_PAUSE_AT:?}" "${TOOLS_KAFKA_PATTERN:?}" "${TOOLS_OUT:?}" "${NFSSHIM_STATS_DIR:?}"
stats_dir=$NFSSHIM_STATS_DIR
TOOLS_TMPDIR=/run  # the guest's own tmpfs: fifos and scratch files
. "$(dirname "$0")/lib.sh"
mnt=$PWD
# Not a watched directory: the shim and the tools find the NFS mount by themselves.
unset NFSSHIM_WATCH
stats=$stats_dir
export NFSSHIM_STATS_DIR=$stats
data=$mnt/logs      # a Kafka log dir on the mount; the graveyard is in the mount root
grave=$mnt/.graveyard.nfsshim/u$(id -u)
mkdir -p "$data" "$stats"
# Process creation is slow in UML (about 0.1 s): the helpers below use bash builtins.
shopt -s nullglob
# entries_of PID: the names of PID's graveyard entries, one per line.
entries_of() {
  local e
  for e in "$grave"/*~"$1"~*; do echo "${e##*/}"; done
}
# nap: sleep 0.05 s without starting a process.
mkfifo "$tmp/nap"
exec {nap_fd}<>"$tmp/nap"
nap() { read -r -t 0.05 -u "$nap_fd"; }
[[ $(stat -f -c %T "$mnt") == nfs ]] || fail "$mnt is not NFS: $(stat -f -c %T "$mnt")"

# json_field FILE KEY: REPLY = the first value of "KEY": in FILE (strings unquoted).
json_field() {
  local j re="\"$2\": (\"([^\"]*)\"|([^,}]*))"
  j=$(<"$1")
  REPLY=
  [[ $j =~ $re ]] && REPLY=${BASH_REMATCH[2]}${BASH_REMATCH[3]}
}

# ---- doctor -------------------------------------------------------------------------
# Ground truth without nfsshim: unlink an open file and look for a .nfs* name.
silly_seen() {  # silly_seen DIR -> prints true/false
  local d=$1 f
  exec 8>"$d/ground-truth"
  rm "$d/ground-truth"
  f=("$d"/.nfs*)
  exec 8>&-
  [[ ${#f[@]} -gt 0 ]] && echo true || echo false
}
local_dir=$tmp/local   # tmpfs
mkdir -p "$local_dir"
[[ $(silly_seen "$mnt") == true ]] || fail "the NFS mount shows no silly rename without nfsshim: not the lab's NFS?"
[[ $(silly_seen "$local_dir") == false ]] || fail "tmpfs shows a silly rename?"
for _ in {1..100}; do f=("$mnt"/.nfs*); [[ ${#f[@]} == 0 ]] && break; nap; done

"$nfsshim" doctor --json "$mnt" >"$tmp/doc.json" 2>"$tmp/doc.err"; rc=$?
cp "$tmp/doc.json" "$TOOLS_OUT/doctor-nfs.json"
[[ $rc == 0 ]] || fail "doctor on NFS exited $rc: $(cat "$tmp/doc.json" "$tmp/doc.err")"
opts=$(awk -v m="$mnt" '$5 == m { print $NF }' /proc/self/mountinfo)   # super options
[[ -n $opts ]] || fail "no mountinfo line for $mnt"
mi() {  # mi KEY: REPLY = the value of KEY= in the mount's super options
  local re=",$1=([^,]*),"
  REPLY=
  [[ ,$opts, =~ $re ]] && REPLY=${BASH_REMATCH[1]}
}
want() {  # want KEY VALUE
  json_field "$tmp/doc.json" "$1"
  [[ $REPLY == "$2" ]] || fail "doctor on NFS: $1 = '$REPLY', expected '$2': $(cat "$tmp/doc.json")"
}
want nfs true
want fstype nfs4
want statfs_type nfs
want mount_point "$mnt"
want super_options "$opts"
for k in vers nconnect proto timeo retrans; do
  mi $k
  [[ -n $REPLY ]] || fail "no $k= in mountinfo: $opts"
  want $k "$REPLY"
done
want vers 4.1
want nconnect 4
want recovery hard
want silly_rename true
want cleaned_up true
want watched true
want watched_as "NFS mount"
want location "$mnt/.graveyard.nfsshim"
json_field "$tmp/doc.json" silly_name
[[ $REPLY =~ ^\.nfs[0-9a-f]{24}$ ]] || fail "silly_name: $(cat "$tmp/doc.json")"
grep -q 'nconnect=4: NetApp recommends vers=4.1,nconnect=16' "$tmp/doc.json" || fail "no nconnect advice"
for f in "$mnt"/* "$mnt"/.[!.]*; do
  [[ $f == "$mnt/logs" || $f == "$mnt/.graveyard.nfsshim" ]] || fail "doctor left on NFS: $(ls -A "$mnt")"
done
"$nfsshim" doctor "$mnt" >"$tmp/doc.txt" 2>&1 || fail "doctor (text) on NFS: $?"
grep -qE '^  silly_rename: +true$' "$tmp/doc.txt" || fail "text: $(cat "$tmp/doc.txt")"
grep -qE '^  nconnect: +4$' "$tmp/doc.txt" || fail "text: $(cat "$tmp/doc.txt")"
pass "doctor on NFS: silly rename seen by its probe; vers, nconnect, proto, timeo, retrans, hard as in mountinfo ($opts)"

"$nfsshim" doctor --json "$local_dir" >"$tmp/loc.json" 2>&1 || fail "doctor on tmpfs exited $?: $(cat "$tmp/loc.json")"
cp "$tmp/loc.json" "$TOOLS_OUT/doctor-tmpfs.json"
json_field "$tmp/loc.json" nfs
[[ $REPLY == false ]] || fail "tmpfs called NFS: $(cat "$tmp/loc.json")"
json_field "$tmp/loc.json" statfs_type
[[ $REPLY == tmpfs ]] || fail "tmpfs: $(cat "$tmp/loc.json")"
json_field "$tmp/loc.json" silly_rename
[[ $REPLY == false ]] || fail "tmpfs silly rename: $(cat "$tmp/loc.json")"
grep -q '"vers"' "$tmp/loc.json" && fail "NFS options reported for tmpfs"
[[ -z $(ls -A "$local_dir") ]] || fail "doctor left on tmpfs: $(ls -A "$local_dir")"
pass "doctor on tmpfs in the same guest: not NFS, no silly rename"

# ---- stat during the Kafka pattern, gc while it is alive ---------------------------------
# counter FILE PID NAME: prints counter NAME of process PID in `nfsshim stat --json` output.
counter() {
  local j re="\"pid\": $2,[^"$'\n'"]*\"$3\": ([0-9]+)"
  j=$(<"$1")
  [[ $j =~ $re ]] && echo "${BASH_REMATCH[1]}"
}
# wait_stopped PID: until the process is stopped (pause_at.so raised SIGSTOP).
wait_stopped() {
  local s
  for _ in {1..300}; do
    read -r s 2>/dev/null <"/proc/$1/stat" || fail "process $1 is gone: $(cat "$tmp/kp.out" "$tmp/kp.err")"
    s=${s##*) }
    [[ ${s%% *} == T ]] && return 0
    nap
  done
  fail "process $1 did not stop: $(cat "$tmp/kp.out" "$tmp/kp.err")"
}
snap() {  # snap TAG: json, table and Prometheus output of `nfsshim stat`
  "$nfsshim" stat --json >"$tmp/$1.json" || fail "stat --json: $?"
  "$nfsshim" stat >"$tmp/$1.table" || fail "stat: $?"
  "$nfsshim" stat --prometheus >"$TOOLS_OUT/$1.prom" || fail "stat --prometheus: $?"
}

# `nfsshim run` puts the shim in front of the LD_PRELOAD it finds (pause_at.so); PAUSE_AT
# is set for the Kafka pattern only (env execs it: same pid).
LD_PRELOAD=$TOOLS_PAUSE_AT "$nfsshim" run -- env PAUSE_AT=rmdir,munmap "$TOOLS_KAFKA_PATTERN" "$data" \
  >"$tmp/kp.out" 2>"$tmp/kp.err" &
kp=$!
holder_pids+=("$kp")
wait_stopped "$kp"
grep -qx "pause_at: rmdir" "$tmp/kp.err" || fail "stopped elsewhere: $(cat "$tmp/kp.err")"
grep -qx "OK delete-entries" "$tmp/kp.out" || fail "not after the deletes: $(cat "$tmp/kp.out")"
snap p1
b1=$(counter "$tmp/p1.json" "$kp" buried)
r1=$(counter "$tmp/p1.json" "$kp" removed_last_ref)
l1=$(counter "$tmp/p1.json" "$kp" live_entries)
[[ -n $b1 ]] || fail "kafka_pattern ($kp) not in stat: $(cat "$tmp/p1.json")"
# Five files are still held: segment 0's log (writer and reader fds), segment 1's log
# (fd) and three index files (mappings only); at least those were buried.
# (Not checked here: tracked_fds/tracked_maps read 0 at this point, as the preload updates
# those gauges only when it rescans references, not when it buries; see the report.)
[[ $b1 -ge 5 ]] || fail "after the deletes: buried=$b1: $(cat "$tmp/p1.json")"
[[ $l1 == 5 ]] || fail "after the deletes: live_entries=$l1: $(cat "$tmp/p1.json")"
[[ $(counter "$tmp/p1.json" "$kp" errors) == 0 ]] || fail "errors: $(cat "$tmp/p1.json")"
[[ $(counter "$tmp/p1.json" "$kp" fallbacks) == 0 ]] || fail "fallbacks: $(cat "$tmp/p1.json")"
e=("$grave"/*~"$kp"~*)
[[ ${#e[@]} == 5 ]] || fail "graveyard: $(ls -A "$grave")"
grep -qE "^ *$kp  preload  kafka_pattern +$b1 +$r1 " "$tmp/p1.table" || fail "table: $(cat "$tmp/p1.table")"
grep -qx "nfsshim_live_entries{pid=\"$kp\",kind=\"preload\",comm=\"kafka_pattern\"} 5" "$TOOLS_OUT/p1.prom" ||
  fail "prometheus: $(cat "$TOOLS_OUT/p1.prom")"
[[ -z $(find "$data" -name '.nfs*') ]] || fail "silly renames despite the shim: $(find "$data" -name '.nfs*')"
pass "stat, Kafka pattern stopped after its deletes: buried=$b1, live_entries=$l1, removed_last_ref=$r1"

# gc: a SIGKILLed holder's entry goes, every entry of the live processes stays.
holder_start live
[[ $(holder_do live "hold $data/live.txt") == "held $data/live.txt" ]] || fail "live hold"
holder_start victim
[[ $(holder_do victim "hold $data/victim.txt") == "held $data/victim.txt" ]] || fail "victim hold"
live_entry=$(entries_of "$live_pid")
victim_entry=$(entries_of "$victim_pid")
[[ -n $live_entry && -n $victim_entry ]] || fail "no graveyard entries: $(ls -A "$grave")"
{ kill -9 "$victim_pid"; wait "$victim_pid"; } 2>/dev/null
[[ -f $stats/$victim_pid.stats ]] || fail "killed process left no stats file"
[[ -e $grave/$victim_entry ]] || fail "SIGKILL removed the entry by itself?"
kafka_entries=$(entries_of "$kp")
"$nfsshim" gc --dry-run "$mnt" >"$tmp/dry" 2>&1 || fail "gc --dry-run: $? $(cat "$tmp/dry")"
grep -qF "would remove: $grave/$victim_entry (owner process $victim_pid is gone)" "$tmp/dry" || fail "dry: $(cat "$tmp/dry")"
[[ -e $grave/$victim_entry ]] || fail "--dry-run removed the entry"
"$nfsshim" gc "$mnt" >"$tmp/gc" 2>&1 || fail "gc: $? $(cat "$tmp/gc")"
cp "$tmp/gc" "$TOOLS_OUT/gc.out"
[[ ! -e $grave/$victim_entry ]] || fail "dead process's entry still there: $(cat "$tmp/gc")"
grep -qF "removed: $grave/$victim_entry (owner process $victim_pid is gone)" "$tmp/gc" || fail "gc: $(cat "$tmp/gc")"
[[ ! -e $stats/$victim_pid.stats ]] || fail "dead process's stats file still there"
for e in $live_entry $kafka_entries; do
  [[ -e $grave/$e ]] || fail "live process's entry $e removed: $(cat "$tmp/gc")"
  grep -qF "kept: $grave/$e (owner process" "$tmp/gc" || fail "gc did not report $e: $(cat "$tmp/gc")"
done
[[ $(grep -c '^removed:' "$tmp/gc") == 2 ]] || fail "gc removed more than the entry and stats file: $(cat "$tmp/gc")"
[[ -z $(find "$mnt" -name '.nfs*') ]] || fail "gc left silly renames: $(find "$mnt" -name '.nfs*')"
[[ $(holder_do live close) == closed ]] || fail "live close"
[[ -z $(entries_of "$live_pid") ]] || fail "live entry not removed at its last close"
pass "gc on NFS removed the SIGKILLed process's entry, kept the entries of live processes"

# Second stop: the Kafka pattern has closed its descriptors, the indexes are still mapped.
kill -CONT "$kp"
wait_stopped "$kp"
grep -qx "pause_at: munmap" "$tmp/kp.err" || fail "stopped elsewhere: $(cat "$tmp/kp.err")"
grep -qx "OK recreate-name" "$tmp/kp.out" || fail "not before close-all: $(cat "$tmp/kp.out")"
snap p2
b2=$(counter "$tmp/p2.json" "$kp" buried)
r2=$(counter "$tmp/p2.json" "$kp" removed_last_ref)
l2=$(counter "$tmp/p2.json" "$kp" live_entries)
[[ $b2 -ge $b1 ]] || fail "buried went down: $b1 -> $b2"
[[ $r2 -ge $((r1 + 2)) ]] || fail "the two closed logs were not removed: removed_last_ref $r1 -> $r2: $(cat "$tmp/p2.json")"
[[ $l2 == 3 ]] || fail "live_entries=$l2 with three mapped indexes: $(cat "$tmp/p2.json")"
[[ $(counter "$tmp/p2.json" "$kp" tracked_maps) == 3 ]] || fail "tracked_maps: $(cat "$tmp/p2.json")"
[[ $(counter "$tmp/p2.json" "$kp" tracked_fds) == 0 ]] || fail "tracked_fds: $(cat "$tmp/p2.json")"
e=("$grave"/*~"$kp"~*)
[[ ${#e[@]} == 3 ]] || fail "graveyard: $(ls -A "$grave")"
pass "stat, stopped after closing its fds: buried=$b2, removed_last_ref $r1 -> $r2, live_entries $l1 -> $l2"

kill -CONT "$kp"
wait "$kp"; rc=$?
if [[ $rc != 0 ]] || ! grep -qx "RESULT PASS" "$tmp/kp.out"; then
  fail "Kafka pattern: status $rc: $(cat "$tmp/kp.out" "$tmp/kp.err")"
fi
[[ ! -e $stats/$kp.stats ]] || fail "normal exit left its stats file"
[[ -z $(entries_of "$kp") ]] || fail "entries left after exit: $(ls -A "$grave")"
"$nfsshim" stat --json | grep -q "\"pid\": $kp," && fail "exited process still shown"
pass "Kafka pattern passed on NFS; its entries and stats file are gone"
echo quit >&"$live_in"
wait "$live_pid"
echo "GUEST PASS"
