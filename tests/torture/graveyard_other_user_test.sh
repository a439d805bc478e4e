#!/bin/bash
# Regression test for a bug the torture suite found (CTest torture.*). Needs root.
# The graveyard's top level is mode 1733 so that every user can add their own u<UID>.
# A user other than the one who created it could not open it: Graveyard::open opened every
# level with O_RDONLY (libshim/src/graveyard/graveyard.cc, open_dir), which needs read
# permission on the directory, and 1733 grants others only -wx. That user's deletes then
# fell back to the plain call (silly renames, EBUSY/ENOTEMPTY again). The top level is now
# reached with O_PATH when it cannot be read (search permission suffices).
# usage: NFSSHIM_BUILD=DIR graveyard_other_user_test.sh
set -u
BUILD=${NFSSHIM_BUILD:-/work/main/build}
lib=$BUILD/preload/libnfsshim-preload.so helper=$BUILD/tests/preload/crash_helper
d=$(mktemp -d /tmp/nfsshim-gy-user.XXXXXX); trap 'rm -rf "$d"' EXIT
chmod 1777 "$d"
echo x > "$d/a"; LD_PRELOAD=$lib NFSSHIM_WATCH=$d rm "$d/a"   # root makes the graveyard
stat -c 'graveyard top: %a owner %u' "$d/.graveyard.nfsshim"
setpriv --reuid 65534 --regid 65534 --clear-groups sh -c "echo y > '$d/b'"
# uid 65534 holds b and deletes it: it must be buried in u65534
setpriv --reuid 65534 --regid 65534 --clear-groups env LD_PRELOAD="$lib" NFSSHIM_WATCH="$d" \
  "$helper" "$d/b" die
if [ -d "$d/.graveyard.nfsshim/u65534" ]; then echo "PASS: uid 65534 used the graveyard"; exit 0; fi
echo "FAIL: uid 65534 could not use the graveyard root created (no u65534; see the shim's warning above)"
exit 1
