#!/bin/bash
# A rename over a file that is open through the mount, on a local SOURCE: the name is never
# missing, not to another process working on SOURCE either. A local filesystem keeps the
# replaced file for its holders by itself, so the daemon renames plainly (atomic); burying
# the target first (as on NFS, where its holders' file would be silly-renamed beside the
# name) would be two steps with the name missing in between. The holder reads the old data.
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/back" "$T/mnt"
mount_shim "$T/back" "$T/mnt"
/usr/bin/python3 - "$T/mnt" "$T/back" <<'PY' || fail "rename over an open target through the mount"
import os, sys, threading
mnt, back = sys.argv[1], sys.argv[2]
with open(f"{mnt}/ckpt", "w") as f:
    f.write("0")
stop, missing = threading.Event(), [0]
def watch():  # on SOURCE, beside the mount
    while not stop.is_set():
        try:
            os.stat(f"{back}/ckpt")
        except FileNotFoundError:
            missing[0] += 1
t = threading.Thread(target=watch)
t.start()
for i in range(1, 1001):
    held = os.open(f"{mnt}/ckpt", os.O_RDONLY)
    with open(f"{mnt}/ckpt.tmp", "w") as f:
        f.write(str(i))
    os.rename(f"{mnt}/ckpt.tmp", f"{mnt}/ckpt")
    old = os.pread(held, 16, 0).decode()
    os.close(held)
    if old != str(i - 1):
        stop.set(); t.join()
        sys.exit(f"round {i}: the holder read {old!r}, not {str(i - 1)!r}")
stop.set()
t.join()
if missing[0]:
    sys.exit(f"the name was missing on SOURCE {missing[0]} times in 1000 renames over an open target")
print("1000 renames over an open target: the name never missing on SOURCE, holders read the old data")
PY
left=$(ls -A "$T/back/$GRAVEYARD/u0" 2>/dev/null)
[ -z "$left" ] || fail "graveyard not empty: $left"
pass "rename over an open target on a local SOURCE is atomic"
