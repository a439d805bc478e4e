#!/bin/bash
# guest_sweep.sh PRELOAD_LIB  (inside the UML guest, cwd = the NFS mount; $1 = preload)
# What rmdir can do about silly-rename leftovers, with the real Linux NFS client:
#  A. a .nfs file held by a process on THIS client: the kernel refuses to rename it
#     (EBUSY), so the shim cannot sweep it; rmdir fails with ENOTEMPTY as it would plainly,
#     the holder is unharmed, and rmdir works after the holder closes.
#  B. a .nfs file nobody on this client holds (another host's silly rename, made here on
#     the server side by the host script): the shim moves it into the graveyard and rmdir
#     succeeds.
set -uo pipefail
lib=$1
fail() { echo "GUEST FAIL: $*"; exit 1; }
rmdir_shim() { LD_PRELOAD=$lib rmdir "$1" 2>&1; }

mkdir a && echo held > a/f
exec 5< a/f
rm a/f                                             # no shim: silly rename
ls -A a | grep -q '^\.nfs' || fail "A: no .nfs file after unlink of an open file"
out=$(rmdir_shim a) && fail "A: rmdir succeeded while a local process holds the .nfs file"
echo "A: rmdir through the shim: $out"
echo "$out" | grep -q "not empty" || fail "A: expected ENOTEMPTY, got: $out"
[ "$(cat <&5)" = held ] || fail "A: the holder lost its data"
ls -A a | grep -q '^\.nfs' || fail "A: the .nfs file was moved although it is busy"
exec 5<&-
for i in $(seq 50); do [ -z "$(ls -A a)" ] && break; sleep 0.1; done
rmdir_shim a >/dev/null || fail "A: rmdir after the holder closed"
echo "A: ok (busy .nfs file left alone; rmdir works after the close)"

[ -d b ] || fail "B: host did not prepare b/"
ls -A b | grep -q '^\.nfs' || fail "B: no foreign .nfs file in b/"
rmdir b 2>/dev/null && fail "B: plain rmdir succeeded: the test does not bite"
rmdir_shim b >/dev/null || fail "B: rmdir through the shim failed"
[ ! -e b ] || fail "B: b still exists"
ls .graveyard.nfsshim/u0 | grep -q '^s~' || fail "B: the swept file is not in the graveyard"
echo "B: ok (foreign .nfs leftover swept into the graveyard, rmdir succeeded)"
echo "GUEST PASS"
