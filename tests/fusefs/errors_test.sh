#!/bin/bash
# Start-up errors: a clear message naming the problem, a non-zero exit, nothing mounted.
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/back" "$T/mnt"
touch "$T/file"
expect_error() {  # PATTERN CMD...: CMD must exit non-zero, print PATTERN, mount nothing
  local pattern=$1
  shift
  out=$("$@" 2>&1) && fail "succeeded: $*"
  echo "$out" | grep -qi -- "$pattern" || fail "message for '$*' does not say '$pattern': $out"
  is_mounted "$T/mnt" fuse.nfsshim-fuse && fail "mounted anyway: $*"
  echo "ok: $* -> $(echo "$out" | head -n 1)"
}
expect_error "SOURCE '$T/missing': No such file" $SHIM "$T/missing" "$T/mnt" -f
expect_error "SOURCE '$T/file': Not a directory" $SHIM "$T/file" "$T/mnt" -f
expect_error "unknown option.*bogus" $SHIM "$T/back" "$T/mnt" -f -o bogus
expect_error "invalid parameter.*entry_timeout" $SHIM "$T/back" "$T/mnt" -f -o entry_timeout=soon
expect_error "log_level must be" $SHIM "$T/back" "$T/mnt" -f -o log_level=loud
expect_error "is not a directory" $SHIM "$T/back" "$T/file" -f
expect_error "MOUNTPOINT '$T/nowhere'" $SHIM "$T/back" "$T/nowhere" -f
expect_error "missing MOUNTPOINT" $SHIM "$T/back"
expect_error "graveyard.*another filesystem" $SHIM "$T/back" "$T/mnt" -f -o graveyard=/proc/x
# /dev/fuse missing: hide it in a private mount namespace.
if command -v unshare >/dev/null; then
  expect_error "/dev/fuse" unshare -m sh -c "mount --bind '$T/file' /dev/fuse && exec $SHIM '$T/back' '$T/mnt' -f"
fi
# Mountpoint in use.
mount_shim "$T/back" "$T/mnt"
out=$($SHIM "$T/back" "$T/mnt" -f 2>&1) && fail "second mount succeeded"
echo "$out" | grep -q "in use" || fail "unclear message for a mountpoint in use: $out"
unmount_shim "$T/mnt"
pass "start-up errors"
