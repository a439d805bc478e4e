#!/bin/bash
# failed_rename.sh PRELOAD_LIB SCRATCH (as root)
# A rename over another user's file that the kernel refuses must leave that file where it
# was. The preload moves the target into the graveyard before the rename; when the rename
# fails it must put the target back even where fs.protected_hardlinks forbids the caller
# a hard link to it (the way back used to be a link, and the file was then deleted).
set -euo pipefail
lib=$1 scratch=$2
fail() { echo "FAIL: $*"; exit 1; }
[ "$(id -u)" = 0 ] || fail "run as root (the rename runs as uid 65534)"
rm -rf "$scratch"; mkdir -p "$scratch/locked" "$scratch/open"
chmod 755 "$scratch" "$scratch/locked"
chmod 777 "$scratch/open"                      # anybody may add and remove names here
install -d -m 1733 "$scratch/.graveyard.nfsshim"  # as an admin prepares it for all users
echo "root's data" > "$scratch/open/target"    # root's, 0644: nobody may read, not write
chmod 644 "$scratch/open/target"
echo "nobody's" > "$scratch/locked/source"     # in a directory nobody cannot change
ino=$(stat -c %i "$scratch/open/target")
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }

# The case under test needs the link to be refused: check it first, on the plain system.
if as_nobody ln "$scratch/open/target" "$scratch/open/probe" 2>/dev/null; then
  rm -f "$scratch/open/probe"
  fail "uid 65534 may hard-link root's file here (fs.protected_hardlinks=$(cat /proc/sys/fs/protected_hardlinks)): the case cannot be made"
fi

# The renaming process holds the target open: only then does the preload bury it first.
rename_held() {
  python3 -c 'import os, sys
fd = os.open(sys.argv[2], os.O_RDONLY)
try:
    os.rename(sys.argv[1], sys.argv[2])
except OSError as e:
    sys.exit(f"rename: {os.strerror(e.errno)}")' "$@"
}
plain=$(as_nobody bash -c "$(declare -f rename_held); rename_held \"\$@\"" _ \
  "$scratch/locked/source" "$scratch/open/target" 2>&1) && fail "plain rename succeeded"
shim=$(as_nobody env LD_PRELOAD="$lib" NFSSHIM_WATCH="$scratch" NFSSHIM_MODE=all \
  bash -c "$(declare -f rename_held); rename_held \"\$@\"" _ \
  "$scratch/locked/source" "$scratch/open/target" 2>&1) && fail "rename under the preload succeeded"
echo "plain: $plain"
echo "shim:  $shim"
shim=$(grep -v ' nfsshim\[' <<<"$shim" || true)  # the shim's own log lines aside
[ "$plain" = "$shim" ] || fail "the preload's error differs from the plain call's"
[ -e "$scratch/open/target" ] || fail "the target is gone after the refused rename"
[ "$(stat -c %i "$scratch/open/target")" = "$ino" ] || fail "the target is another file now"
[ "$(cat "$scratch/open/target")" = "root's data" ] || fail "the target's data changed"
grave=$scratch/.graveyard.nfsshim/u65534
[ -d "$grave" ] || fail "the preload never made its graveyard: did it act at all?"
left=$(ls -A "$grave")
[ -z "$left" ] || fail "graveyard not empty: $left"
echo "PASS: a refused rename over root's file leaves it in place (its link back refused, renamed back)"
