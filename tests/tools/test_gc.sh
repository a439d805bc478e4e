#!/bin/bash
# nfsshim gc: the entry of a SIGKILLed shimmed process is removed, a live process's
# entry is kept, --dry-run changes nothing, bad arguments change nothing (status 2), a
# PATH that cannot be opened is reported as failed (status 1) and the others are still
# reaped; --silly removes unheld old .nfs* files only, without following symlinks.
. "$(dirname "$0")/lib.sh"

holder_start live
[[ $(holder_do live "hold $data/live.txt") == "held $data/live.txt" ]] || fail "live hold"
holder_start victim
[[ $(holder_do victim "hold $data/victim.txt") == "held $data/victim.txt" ]] || fail "victim hold"
live_entry=$(entries_of "$live_pid")
victim_entry=$(entries_of "$victim_pid")
[[ -n $live_entry && -n $victim_entry ]] || fail "no graveyard entries: $(ls -AR "$data")"
kill -9 "$victim_pid"
wait "$victim_pid" 2>/dev/null
[[ -f $stats/$victim_pid.stats ]] || fail "killed process left no stats file"
grave=$data/.graveyard.nfsshim/u$(id -u)

before=$(snapshot)
"$nfsshim" gc --dry-run "$data" >"$tmp/dry" 2>&1 || fail "gc --dry-run: $? $(cat "$tmp/dry")"
[[ $(snapshot) == "$before" ]] || fail "--dry-run changed something: $(diff <(echo "$before") <(snapshot))"
grep -qF "would remove: $grave/$victim_entry (owner process $victim_pid is gone)" "$tmp/dry" || fail "dry run: $(cat "$tmp/dry")"
grep -qF "kept: $grave/$live_entry (owner process $live_pid is alive)" "$tmp/dry" || fail "dry run: $(cat "$tmp/dry")"
grep -qF "would remove: $stats/$victim_pid.stats" "$tmp/dry" || fail "dry run stats: $(cat "$tmp/dry")"
pass "--dry-run reports and changes nothing"

# Anyone may make a directory in the graveyard's 1733 top: u<uid + 2^32> is not u<uid>,
# and must not make gc judge that user's graveyard a second time.
alias=$data/.graveyard.nfsshim/u$(( $(id -u) + 4294967296 ))
mkdir "$alias" || fail "mkdir $alias"
"$nfsshim" gc --dry-run "$data" >"$tmp/alias" 2>&1 || fail "gc --dry-run with $alias: $? $(cat "$tmp/alias")"
n=$(grep -cF "kept: $grave/$live_entry" "$tmp/alias")
[[ $n == 1 ]] || fail "gc judged u$(id -u) $n times with $alias beside it: $(cat "$tmp/alias")"
rmdir "$alias"
pass "a u<uid + 2^32> directory is not taken for u<uid>"

# A name its owner chose with an escape sequence and a newline in it reaches root's
# terminal and journal written as escapes: no cursor movement, no forged second line.
planted=$grave/$(printf 'x\033[2J\nremoved: y')
: >"$planted"
"$nfsshim" gc --dry-run "$data" >"$tmp/ctl" 2>&1 || fail "gc --dry-run with a control-character name: $?"
grep -qF "kept: $grave/x\x1b[2J\x0aremoved: y (not an nfsshim entry)" "$tmp/ctl" || fail "gc output: $(cat -v "$tmp/ctl")"
grep -q $'\033' "$tmp/ctl" && fail "an escape character reached the output: $(cat -v "$tmp/ctl")"
rm -f "$planted"
pass "names with control characters are written as escapes"

for bad in "--max-age bogus $data" "--frob $data" "--silly" "--silly --"; do
  # shellcheck disable=SC2086
  "$nfsshim" gc $bad >/dev/null 2>"$tmp/err"; rc=$?
  [[ $rc == 2 ]] || fail "gc $bad exited $rc"
  [[ -s $tmp/err ]] || fail "gc $bad said nothing"
  [[ $(snapshot) == "$before" ]] || fail "gc $bad changed something"
done
pass "bad arguments: status 2, nothing changed"

# PATHs it cannot open (missing, not a directory; as root squashed on a 0750 directory)
# before and after $data: each is a failure, $data and the stats files are still reaped.
: >"$tmp/file"
"$nfsshim" gc "$tmp/missing" "$data" "$tmp/file" >"$tmp/gc" 2>&1; rc=$?
[[ $rc == 1 ]] || fail "gc with unopenable PATHs exited $rc: $(cat "$tmp/gc")"
[[ ! -e $grave/$victim_entry ]] || fail "dead process's entry still there"
[[ -e $grave/$live_entry ]] || fail "live process's entry removed"
[[ ! -e $stats/$victim_pid.stats ]] || fail "dead process's stats file still there"
[[ -e $stats/$live_pid.stats ]] || fail "live process's stats file removed"
grep -qF "removed: $grave/$victim_entry" "$tmp/gc" || fail "gc output: $(cat "$tmp/gc")"
grep -qF "kept: $grave/$live_entry" "$tmp/gc" || fail "gc output: $(cat "$tmp/gc")"
grep -qF "failed: $tmp/missing (cannot open directory: No such file or directory)" "$tmp/gc" || fail "gc output: $(cat "$tmp/gc")"
grep -qF "failed: $tmp/file (cannot open directory: Not a directory)" "$tmp/gc" || fail "gc output: $(cat "$tmp/gc")"
grep -q "removed, 1 kept, 2 failed" "$tmp/gc" || fail "gc summary: $(cat "$tmp/gc")"
pass "gc removed the dead owner's entry and kept the live one, past two PATHs it cannot open (status 1)"

[[ $(holder_do live close) == closed ]] || fail "live close"
[[ -z $(entries_of "$live_pid") ]] || fail "entry not removed at the last close"

# --silly: an old unheld one goes; one held by a process, one behind a symlink and a
# look-alike name stay. Holders are looked up in a proc tree made here (--proc), as
# this machine may have processes that even root cannot inspect; the real /proc is
# checked after that.
mkdir -p "$data/sub" "$tmp/outside"
gone=$data/sub/.nfs00000000000000aa00000001
held=$data/.nfs00000000000000bb00000002
mapped=$data/sub/.nfs00000000000000dd00000004
outside=$tmp/outside/.nfs00000000000000cc00000003
lookalike=$data/.nfsshim-notes
touch "$gone" "$held" "$mapped" "$outside" "$lookalike"
ln -s "$tmp/outside" "$data/link"
fake=$tmp/proc
mkdir -p "$fake/4242/fd" "$fake/4343/fd"
ln -s "$held" "$fake/4242/fd/3"
: >"$fake/4242/maps"
: >"$fake/4343/maps"
printf '7f0000000000-7f0000001000 r--s 00000000 %x:%x %d %s\n' \
  "$(stat -c %Hd "$mapped")" "$(stat -c %Ld "$mapped")" "$(stat -c %i "$mapped")" "$mapped" >"$fake/4343/maps"
silly() { "$nfsshim" gc --silly --proc "$fake" "$@" "$data" >"$tmp/silly" 2>&1 || fail "gc --silly $*: $? $(cat "$tmp/silly")"; }
has() { grep -qF "$1" "$tmp/silly" || fail "expected '$1' in: $(cat "$tmp/silly")"; }

before=$(snapshot)
silly --max-age 1h
[[ $(snapshot) == "$before" ]] || fail "young silly files touched"
has "kept: $gone (silly-renamed"
silly --max-age 0 --dry-run
[[ $(snapshot) == "$before" ]] || fail "--silly --dry-run changed something"
has "would remove: $gone"
silly --max-age 0
[[ ! -e $gone ]] || fail "old unheld silly file kept: $(cat "$tmp/silly")"
has "removed: $gone"
[[ -e $held ]] || fail "silly file held by a descriptor removed"
has "kept: $held (held by process 4242)"
[[ -e $mapped ]] || fail "silly file held by a mapping removed"
has "kept: $mapped (held by process 4343)"
[[ -e $outside ]] || fail "followed a symlink"
[[ -e $lookalike ]] || fail "removed a name the NFS client does not make"
pass "--silly removes only old silly renames that nobody holds"

# The real /proc: this shell holds $held. Either every process could be inspected
# (then it is kept as held by us) or not (then nothing is removed).
rm "$fake/4242/fd/3"
exec 7<"$held"
"$nfsshim" gc --silly --max-age 0 "$data" >"$tmp/silly" 2>&1 || fail "gc --silly: $(cat "$tmp/silly")"
[[ -e $held && -e $mapped ]] || fail "real /proc: a silly file was removed: $(cat "$tmp/silly")"
grep -qF "kept: $held (held by process $$)" "$tmp/silly" || has "kept: $held (cannot tell whether it is held"
exec 7<&-
"$nfsshim" gc --silly --proc "$tmp/none" "$data" >/dev/null 2>&1
[[ $? == 2 ]] || fail "unreadable --proc not refused"
pass "--silly with the real /proc never removes a held file"

# A silly file that changes while the holders are scanned is kept: pass 2 checks the age
# again. (A new silly rename that got the inode number of one removed meanwhile looks
# just like it: the same inode, young again.) The scan is held up between the two passes
# by a FIFO in the fake proc tree, opened by gc for reading as a process's maps.
mkdir -p "$tmp/renew" "$tmp/proc2/4545/fd"
renewed=$tmp/renew/.nfs00000000000000ee00000005
touch "$renewed"
mkfifo "$tmp/proc2/4545/maps"
exec 8<>"$tmp/proc2/4545/maps"  # a writer: gc's read waits until this closes
sleep 2
"$nfsshim" gc --silly --max-age 1 --proc "$tmp/proc2" "$tmp/renew" >"$tmp/silly" 2>&1 8>&- &
gc_pid=$!
# Until gc has the FIFO open: pass 1 is done. gc itself, not the shell forked for it: that
# one has our fd 8 (the FIFO) until its redirections run (CI's TSan run once caught it
# there, and the file was renewed before pass 1).
for ((i = 0; i < 200; i++)); do
  [ "$(readlink "/proc/$gc_pid/exe")" = "$(readlink -f "$nfsshim")" ] &&
    ls -l "/proc/$gc_pid/fd" 2>/dev/null | grep -qF "$tmp/proc2/4545/maps" && break
  sleep 0.1
done
((i < 200)) || fail "gc never opened the FIFO: $(cat "$tmp/silly")"
chmod 600 "$renewed"  # a new ctime: young again
exec 8>&-
wait "$gc_pid" || fail "gc --silly (renewed): $(cat "$tmp/silly")"
[[ -e $renewed ]] || fail "a silly file renewed during the scan was removed: $(cat "$tmp/silly")"
has "kept: $renewed (silly-renamed"
has "changed since the scan began"
rm "$renewed"
touch "$renewed"  # the same run without the change removes it
sleep 2
"$nfsshim" gc --silly --max-age 1 --proc "$tmp/proc" "$tmp/renew" >"$tmp/silly" 2>&1 || fail "gc: $(cat "$tmp/silly")"
[[ ! -e $renewed ]] || fail "an old unheld silly file kept: $(cat "$tmp/silly")"
pass "--silly keeps a silly file that became young again during the holder scan"
