#!/bin/bash
# The FUSE daemon publishes its counters like a shimmed process: `nfsshim stat` lists it
# as kind "fuse", and its buried / removed_last_ref counters move when a file that is
# open through the mount is deleted and then closed.
. "$(dirname "$0")/lib.sh"
NFSSHIM=$BUILD/tools/nfsshim
export NFSSHIM_STATS_DIR=$T/stats
mkdir -p "$T/src" "$T/mnt" "$NFSSHIM_STATS_DIR"
mount_shim "$T/src" "$T/mnt"
counter() {  # NAME: the fuse daemon's counter, from the JSON
  "$NFSSHIM" stat --json | python3 -c "
import json, sys
ps = [p for p in json.load(sys.stdin)['processes'] if p['kind'] == 'fuse' and p['pid'] == $SHIM_PID]
print(ps[0]['counters']['$1'] if ps else 'absent')"
}
[ "$(counter buried)" = 0 ] || fail "daemon not listed by nfsshim stat, or counters not at 0: $(counter buried)"
echo data > "$T/mnt/f"
exec 7< "$T/mnt/f"
rm "$T/mnt/f"
[ "$(counter buried)" = 1 ] || fail "buried did not move to 1: $(counter buried)"
[ "$(counter removed_last_ref)" = 0 ] || fail "removed before the close"
exec 7<&-
for i in $(seq 50); do [ "$(counter removed_last_ref)" = 1 ] && break; sleep 0.1; done
[ "$(counter removed_last_ref)" = 1 ] || fail "removed_last_ref did not move to 1 after the close"
"$NFSSHIM" stat --prometheus | grep -q "kind=\"fuse\"" || fail "no fuse series in --prometheus"
unmount_shim "$T/mnt"
pass "nfsshim stat shows the FUSE daemon's counters moving"
