#!/bin/bash
# nfsshim gc and nfsshim stat (run as root, gc daily) read every N.stats file of the shared
# stats directory (mode 1777) before they know whose it is. A user who truncates their file
# between the reader's size check and its read must not kill the reader (with a mapped
# file: SIGBUS). Here uid 65534 flips the size of its files between 0 and 4096 bytes in a
# tight loop while root runs gc and stat again and again: none may die of a signal.
# Needs root (setpriv).
. "$(dirname "$0")/lib.sh"
[[ $(id -u) == 0 ]] || { echo "skip: needs root (setpriv)"; exit 77; }
command -v perl >/dev/null || { echo "skip: needs perl"; exit 77; }

chmod 711 "$tmp"
mkdir -m 1777 "$stats"
nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
# Files named for pids that do not exist (gc removes files of gone processes: it must
# read them first). Made by 65534, as a user's process would.
files=()
for i in $(seq 20); do files+=("$stats/$((4000000 + i)).stats"); done
"${nobody[@]}" nice -n 10 perl -e '
  my @fh;
  for my $f (@ARGV) { open(my $h, ">", $f) or die "$f: $!"; push @fh, $h; }
  $SIG{TERM} = sub { exit 0 };
  while (1) { for my $h (@fh) { truncate($h, 0); truncate($h, 4096); } }
' "${files[@]}" &
racer=$!
holder_pids+=($racer)
sleep 0.2
kill -0 "$racer" 2>/dev/null || fail "the truncating process did not start"

died=0 runs=0 t0=$SECONDS
# 100 rounds, or 20 s (the sanitizer builds run it 5-10x slower; the timeout is 60 s).
for i in $(seq 100); do
  (( SECONDS - t0 < 20 )) || break
  runs=$((runs + 2))
  "$nfsshim" stat >/dev/null 2>"$tmp/err"; rc=$?
  (( rc >= 128 )) && { echo "stat died: status $rc (signal $((rc - 128)))"; died=$((died + 1)); }
  "$nfsshim" gc "$data" >/dev/null 2>"$tmp/err"; rc=$?
  (( rc >= 128 )) && { echo "gc died: status $rc (signal $((rc - 128)))"; died=$((died + 1)); }
done
kill "$racer"
(( died == 0 )) || fail "$died of $runs runs of nfsshim gc/stat died of a signal while stats files were truncated"
pass "$runs runs of nfsshim gc/stat while uid 65534 truncated its stats files: none died"
