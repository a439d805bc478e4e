#!/bin/bash
# stats_full.sh PRELOAD_LIB SCRATCH (as root)
# The preload publishes its counters in <stats_dir>/<pid>.stats through a shared mapping.
# On a full filesystem (a small /run tmpfs) a store into a mapped page that has no block
# behind it is a SIGBUS: the preload must get the space first and, without it, stay
# unpublished; the host process runs on. Also in a fork child, which publishes its own.
set -uo pipefail
lib=$1 scratch=$2
fail() { echo "FAIL: $*"; exit 1; }
[ "$(id -u)" = 0 ] || fail "run as root (mounts a tmpfs)"
full=$scratch/full
cleanup() { grep -q " $full " /proc/self/mountinfo && umount "$full"; rm -rf "$scratch"; }
trap cleanup EXIT
rm -rf "$scratch"; mkdir -p "$full"
mount -t tmpfs -o size=64k,mode=1777 nfsshim-stats-full "$full" || fail "cannot mount a tmpfs"
dd if=/dev/zero of="$full/filler" bs=4k status=none 2>/dev/null  # until ENOSPC
[ "$(df --output=avail -B1 "$full" | tail -1 | tr -d ' ')" = 0 ] || fail "the tmpfs is not full"
# Control: with room, the counters are published there.
mkdir -p "$scratch/room"
LD_PRELOAD=$lib NFSSHIM_STATS_DIR=$scratch/room sh -c 'ls "$0" | grep -q "^$$\.stats$"' "$scratch/room" ||
  fail "control: no <pid>.stats published in a directory with room"
# The full one: the process and a fork child run to their end.
out=$(LD_PRELOAD=$lib NFSSHIM_STATS_DIR=$full NFSSHIM_LOG_LEVEL=debug \
  python3 -c 'import os, sys
pid = os.fork()
if pid == 0:
    os._exit(7)
_, st = os.waitpid(pid, 0)
print("child", os.waitstatus_to_exitcode(st))' 2>&1)
rc=$?
echo "$out"
[ $rc = 0 ] || fail "the process died (rc $rc) with its stats dir full"
grep -q "^child 7$" <<<"$out" || fail "the fork child did not exit normally"
grep -q "counters not published: .*No space left on device" <<<"$out" ||
  fail "no debug line naming ENOSPC"
[ -z "$(ls "$full" | grep -v '^filler$')" ] || fail "a stats file was left behind: $(ls "$full")"
echo "PASS: a full stats dir leaves the counters unpublished, the process and its child unharmed"
