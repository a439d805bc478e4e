#!/bin/bash
# An open that reaches the daemon while it unlinks the file, after its "nothing open, plain
# unlink" decision and before the unlinkat, must not leave the file open on SOURCE: a FUSE
# SOURCE (bindfs here) would then hide it as .fuse_hidden* beside its name, and rmdir of
# the directory fails until the holder closes. The opener reopens the file through
# /proc/self/fd of an O_PATH descriptor it took before (an open whose path walk is done).
# daemon_pause.so holds the daemon before its unlinkat of "f" while the open comes in.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || fail "run as root"
command -v bindfs >/dev/null || fail "bindfs missing"
pause_lib=$(cd "$BUILD" && pwd)/tests/fusefs/libdaemon_pause.so
[ -f "$pause_lib" ] || fail "$pause_lib missing (build target daemon_pause)"
mkdir -p "$T/under/dir" "$T/bind" "$T/mnt" "$T/ctl"
echo data > "$T/under/dir/f"
mount_bindfs "$T/under" "$T/bind"
DAEMON_PAUSE="before-unlink:f:$T/ctl" LD_PRELOAD=$pause_lib mount_shim "$T/bind" "$T/mnt" -o nopassthrough
/usr/bin/python3 - "$T/mnt/dir/f" "$T/ctl" >"$T/opener.out" 2>&1 <<'PY' &
import os, sys, time
p = os.open(sys.argv[1], os.O_PATH)
while not os.path.exists(sys.argv[2] + "/paused"):
    time.sleep(0.01)
try:
    fd = os.open("/proc/self/fd/%d" % p, os.O_RDONLY)
    print("reopened during the unlink")
    time.sleep(3)
except OSError as e:
    print("reopen during the unlink: %s" % e.strerror)
PY
opener=$!
rm "$T/mnt/dir/f" &
rmer=$!
for i in $(seq 200); do [ -e "$T/ctl/paused" ] && break; sleep 0.05; done
[ -e "$T/ctl/paused" ] || fail "the daemon never unlinked dir/f"
sleep 0.5   # the reopen reaches the daemon (before the fix it opened the file here)
touch "$T/ctl/go"
wait $rmer || fail "rm dir/f failed"
left=$(ls -A "$T/under/dir")
echo "SOURCE's dir after rm: '$left'; opener: $(cat "$T/opener.out" 2>/dev/null)"
[ -z "$left" ] || fail "the unlink left '$left' in SOURCE's directory"
rmdir "$T/mnt/dir" || fail "rmdir after the unlink failed"
wait $opener
pass "an open racing an unlink leaves nothing beside the name"
