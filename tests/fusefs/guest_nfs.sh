#!/bin/bash
# guest_nfs.sh (runs inside the UML guest of uml_nfs_test.sh; cwd = the NFS mount)
# MODROOT: the guest's module tree (uml-run.sh's $NFSSHIM_LAB/uml/modroot).
# 1. Control: the Kafka pattern directly on NFS must fail (silly rename).
# 2. nfsshim-fuse mounted over the NFS mount itself (SOURCE = MOUNTPOINT), the native and
#    the JVM Kafka pattern through it must pass with no preload, leaving nothing behind.
# 3. After unmounting: on the NFS mount, no .nfs* file and an empty graveyard.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export JAVA_TOOL_OPTIONS=-XX:UseAVX=2  # UML 6.1 loses AVX-512 state across signals
unset LD_PRELOAD
dir=$PWD
shim=$NFSSHIM_BUILD/fusefs/nfsshim-fuse
log=${TMPDIR:?}/nfsshim-fuse.log
grave=$dir/.graveyard.nfsshim/u$(id -u)
fail() { echo "GUEST FAIL: $*"; [ -f "$log" ] && tail -n 20 "$log"; exit 1; }
mounted() { grep -q " $dir .* - fuse.nfsshim-fuse " /proc/self/mountinfo; }

[ "$(stat -f -c %T "$dir")" = nfs ] || fail "$dir is not NFS"
echo "== control: native pattern directly on NFS (must fail)"
"$here/../kafka/run_pattern.sh" native "$dir" expect-fail || fail "control did not fail on NFS"
for i in $(seq 50); do [ -z "$(ls -A "$dir")" ] && break; sleep 0.1; done
[ -z "$(ls -A "$dir")" ] || fail "leftovers after the control: $(ls -A "$dir")"

modprobe -d "${MODROOT:?}" fuse || fail "modprobe fuse"
[ -c /dev/fuse ] || fail "no /dev/fuse in the guest"
rm -f "$log"
env -u NFSSHIM_BUILD -u MODROOT "$shim" "$dir" "$dir" -f -o "log=file:$log" &
pid=$!
for i in $(seq 100); do mounted && break; sleep 0.1; done
mounted || fail "nfsshim-fuse did not mount on $dir"
grep -q "(NFS;" "$log" || fail "daemon did not detect NFS as SOURCE"

for kind in native java; do
  echo "== $kind pattern through nfsshim-fuse over NFS (must pass)"
  "$here/../kafka/run_pattern.sh" "$kind" "$dir" expect-pass || fail "$kind pattern through nfsshim-fuse"
  for i in $(seq 50); do [ -z "$(ls -A "$grave" 2>/dev/null)" ] && break; sleep 0.1; done
  [ -z "$(ls -A "$grave" 2>/dev/null)" ] || fail "graveyard not empty after $kind: $(ls -A "$grave")"
done
left=$(ls -A "$dir" | grep -vx .graveyard.nfsshim)
[ -z "$left" ] || fail "left in the mount: $left"

fusermount3 -u "$dir" || fail "fusermount3 -u $dir"
wait "$pid" || fail "daemon exit status $?"
mounted && fail "still mounted"
# The NFS mount itself now: nothing silly-renamed, nothing buried.
silly=$(find "$dir" -name '.nfs*')
[ -z "$silly" ] || fail "silly-renamed files on NFS: $silly"
[ -z "$(ls -A "$grave" 2>/dev/null)" ] || fail "graveyard on NFS not empty: $(ls -A "$grave")"
grep -q "buried" "$log" 2>/dev/null || true
echo "GUEST PASS"
