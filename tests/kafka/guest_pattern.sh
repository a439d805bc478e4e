#!/bin/bash
# guest_pattern.sh native|java PRELOAD_LIB  (runs inside the UML guest, cwd = the NFS mount)
# With the real Linux NFS client: the Kafka pattern must fail without the shim (silly
# rename) and pass with it. The shim finds the mount by its statfs magic: no
# NFSSHIM_WATCH is set.
set -uo pipefail
kind=$1 lib=$2
here=$(cd "$(dirname "$0")" && pwd)
# HotSpot would use AVX-512, whose state UML 6.1 does not keep across signals.
export JAVA_TOOL_OPTIONS=-XX:UseAVX=2
dir=$PWD
echo "== $kind without the shim on $(stat -f -c %T "$dir") (must fail)"
"$here/run_pattern.sh" "$kind" "$dir" expect-fail || exit 1
# The kernel removes its .nfs files at the last close, just after the program exits.
for i in $(seq 50); do [ -z "$(ls -A "$dir")" ] && break; sleep 0.1; done
[ -z "$(ls -A "$dir")" ] || { echo "leftovers after the unshimmed run: $(ls -A "$dir")"; exit 1; }
echo "== $kind with the shim (must pass)"
LD_PRELOAD=$lib "$here/run_pattern.sh" "$kind" "$dir" expect-pass || exit 1
grave=$dir/.graveyard.nfsshim/u$(id -u)
[ -d "$grave" ] || { echo "FAIL: the shim never used its graveyard (NFS not detected?)"; exit 1; }
for i in $(seq 50); do [ -z "$(ls -A "$grave")" ] && break; sleep 0.1; done
[ -z "$(ls -A "$grave")" ] || { echo "FAIL: graveyard not empty after exit: $(ls -A "$grave")"; exit 1; }
echo "GUEST PASS"
