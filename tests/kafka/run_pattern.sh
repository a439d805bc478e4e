#!/bin/bash
# run_pattern.sh native|java DIR [expect-pass|expect-fail]
#
# Runs the Kafka partition-delete pattern (kafka_pattern / KafkaPattern) on DIR and exits 0 iff
# the outcome matches the expectation (default expect-pass):
#   expect-pass: the program prints RESULT PASS and exits 0, DIR holds no new entries except the
#                shim's graveyard .graveyard.nfsshim, and .graveyard.nfsshim/u<uid> (if any) is empty.
#   expect-fail: the program prints RESULT FAIL and exits 1 (the filesystem shows the problem).
# Exit status: 0 match, 1 mismatch, 2 bad usage or missing build.
# Build dir: $NFSSHIM_BUILD (default /work/main/build); the programs are looked up in its
# tests/kafka (or kafka) subdirectory. The environment (LD_PRELOAD, NFSSHIM_*) is passed on.
set -u
usage() { echo "usage: $0 native|java DIR [expect-pass|expect-fail]" >&2; exit 2; }
[ $# -ge 2 ] && [ $# -le 3 ] || usage
kind=$1 dir=$2 expect=${3:-expect-pass}
case $kind in native|java) ;; *) usage ;; esac
case $expect in expect-pass|expect-fail) ;; *) usage ;; esac
[ -d "$dir" ] || { echo "run_pattern: $dir is not a directory" >&2; exit 2; }

build=${NFSSHIM_BUILD:-/work/main/build}
out=
for d in "$build/tests/kafka" "$build/kafka" "$build"; do
  if [ "$kind" = native ] && [ -x "$d/kafka_pattern" ]; then out=$d; break; fi
  if [ "$kind" = java ] && [ -f "$d/classes/KafkaPattern.class" ]; then out=$d; break; fi
done
[ -n "$out" ] || { echo "run_pattern: $kind program not built under $build (tests/kafka)" >&2; exit 2; }

graveyard=.graveyard.nfsshim
before=$(ls -A "$dir")

if [ "$kind" = native ]; then
  cmd=("$out/kafka_pattern" "$dir")
else
  cmd=(java -XX:-UsePerfData -cp "$out/classes" KafkaPattern "$dir")
fi
echo "run_pattern: ${cmd[*]} ($expect)"
log=$("${cmd[@]}" 2>&1); rc=$?
printf '%s\n' "$log"
result=$(printf '%s\n' "$log" | sed -n 's/^RESULT //p' | tail -n 1)

verdict() { echo "run_pattern: $kind on $dir: $1"; exit "$2"; }
if [ "$expect" = expect-fail ]; then
  [ "$rc" -eq 1 ] && [ "$result" = FAIL ] && verdict "failed as expected" 0
  verdict "MISMATCH: expected RESULT FAIL with status 1, got '${result:-no RESULT}' status $rc" 1
fi

[ "$rc" -eq 0 ] && [ "$result" = PASS ] ||
  verdict "MISMATCH: expected RESULT PASS with status 0, got '${result:-no RESULT}' status $rc" 1
# Entries that were not there before (the graveyard excepted) are a leftover mess.
# (No process substitution: the UML guest has no /dev/fd.)
extra=
for e in $(ls -A "$dir"); do
  [ "$e" = "$graveyard" ] && continue
  printf '%s\n' "$before" | grep -qxF -- "$e" || extra="$extra $e"
done
[ -z "$extra" ] || verdict "MISMATCH: passed but left in $dir: $(echo $extra)" 1
mine="$dir/$graveyard/u$(id -u)"
if [ -d "$mine" ]; then
  left=$(ls -A "$mine")
  [ -z "$left" ] || verdict "MISMATCH: passed but $mine is not empty: $(echo $left)" 1
fi
verdict "passed as expected" 0
