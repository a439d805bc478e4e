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
expect_error "log must be stderr, syslog or file:/ABSOLUTE/PATH (got 'file:relative.log')" $SHIM "$T/back" "$T/mnt" -f -o log=file:relative.log
expect_error "spin_us must be a whole number from 0 to 10000 microseconds (got '20000')" $SHIM "$T/back" "$T/mnt" -f -o spin_us=20000
expect_error "write_behind_kb must be a whole number from 0 to 262144 KiB (got '300000')" $SHIM "$T/back" "$T/mnt" -f -o write_behind_kb=300000
expect_error "read_ahead_kb must be a whole number from 0 to 1048576 KiB (got '2000000')" $SHIM "$T/back" "$T/mnt" -f -o read_ahead_kb=2000000
# Numbers sscanf("%u") would have taken: UINT_MAX (once read as "not given"), a sign, 2^32 + 1.
expect_error "read_ahead_kb must be a whole number.*(got '4294967295')" $SHIM "$T/back" "$T/mnt" -f -o read_ahead_kb=4294967295
expect_error "max_threads must be a whole number from 0 to 100000 (got '-1')" $SHIM "$T/back" "$T/mnt" -f -o max_threads=-1
expect_error "stall_us must be a whole number.*(got '4294967297')" $SHIM "$T/back" "$T/mnt" -f -o stall_us=4294967297
expect_error "max_idle_threads must be a whole number.*(got '')" $SHIM "$T/back" "$T/mnt" -f -o max_idle_threads=
expect_error "write_behind_kb must be a whole number.*(got '1k')" $SHIM "$T/back" "$T/mnt" -f -o write_behind_kb=1k
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

# allow_other (our default) and noallow_other: the last word wins, as for every option.
for order in "noallow_other,allow_other yes" "allow_other,noallow_other no"; do
  set -- $order
  mount_shim "$T/back" "$T/mnt" -o "$1"
  has=no
  grep " $T/mnt " /proc/mounts | grep -q "[ ,]allow_other[ ,]" && has=yes
  [ "$has" = "$2" ] || fail "-o $1: allow_other in the mount options: $has, want $2"
  unmount_shim "$T/mnt"
done
pass "allow_other/noallow_other: the last one wins"

# A backing call that hangs (in a stopped bindfs inside SOURCE) holds its own request thread
# only: the request loop adds a thread after stall_us and others are served (-s fails here).
mkdir -p "$T/back2/slow" "$T/x"
echo hi >"$T/back2/file"
mount_bindfs "$T/x" "$T/back2/slow"
bpid=$(pgrep -f "^bindfs $T/x " | head -n 1)
[ -n "$bpid" ] || fail "no bindfs process"
trap 'kill -CONT "$bpid" 2>/dev/null; cleanup' EXIT
flow=
# hanging_read FILE CONTENT [flow]: a read of slow/FILE hangs in the stopped bindfs; a stat
# beside it must be answered. With flow, a caller truncating a file in a loop (no fork per
# step, so its requests come closer than a tick) keeps requests flowing meanwhile, when the
# loop's watchdog ticks slower (loop.cc: kFlowTicks); its requests must be served too.
hanging_read() {
  local file=$1 want=$2 tag= amid= stuck c1 c2
  [ "${3:-}" = flow ] && tag=" (flow)" amid="amid a flow of requests, "
  echo "$want" >"$T/x/$file"
  mount_shim "$T/back2" "$T/mnt"
  # The kernel knows slow/ then: the stuck lookup inside it holds no lock of the root
  # directory (parallel lookups in one directory need our own /dev/fuse io; tested below).
  ls "$T/mnt/slow" >/dev/null || fail "ls slow$tag"
  if [ -n "$tag" ]; then
    : >"$T/flow.count"  # one byte per step (appends: its size is never read half-written)
    (while :; do : >"$T/mnt/flow"; printf x >>"$T/flow.count"; done) &
    flow=$!
    trap 'kill "$flow" 2>/dev/null; kill -CONT "$bpid" 2>/dev/null; cleanup' EXIT
    sleep 0.3
  fi
  kill -STOP "$bpid"
  timeout 30 cat "$T/mnt/slow/$file" >"$T/$file.out" &
  stuck=$!
  sleep 0.5
  kill -0 "$stuck" 2>/dev/null || fail "the read through the stopped bindfs did not wait$tag"
  [ -n "$tag" ] && c1=$(stat -c %s "$T/flow.count")
  timeout 10 stat "$T/mnt/file" >/dev/null || fail "${amid}a request stuck in the backing filesystem blocked another one"
  if [ -n "$tag" ]; then
    sleep 0.3
    c2=$(stat -c %s "$T/flow.count")
    [ "$c2" -gt "$c1" ] || fail "the flow of requests stopped behind the stuck one ($c1 then $c2 steps)"
    kill "$flow"
    wait "$flow" 2>/dev/null || true
    trap 'kill -CONT "$bpid" 2>/dev/null; cleanup' EXIT
  fi
  kill -CONT "$bpid"
  wait "$stuck" || fail "the stuck read failed after the backing filesystem continued$tag"
  [ "$(cat "$T/$file.out")" = "$want" ] || fail "the stuck read returned '$(cat "$T/$file.out")'$tag"
  unmount_shim "$T/mnt"
}
hanging_read f slow
pass "a hanging backing call blocks only its caller"
hanging_read g slow2 flow
pass "amid a flow of requests, a hanging backing call blocks only its caller"

# A LOOKUP stuck in the backing filesystem (the stopped bindfs's root, not yet known to the
# kernel) keeps other names of the same directory from being looked up only where the kernel
# serializes lookups per directory. Our own /dev/fuse io (libfuse >= 3.14, passthrough's)
# asks for FUSE_PARALLEL_DIROPS: a lookup of another name answers meanwhile. Control: with
# -o nopassthrough (libfuse's io, which never asks for it) that lookup waits. The bindfs
# keeps no attributes (attr_timeout=0): each lookup of its root asks it again.
mkdir -p "$T/back2/slow0"
mount_bindfs "$T/x" "$T/back2/slow0" -o attr_timeout=0
bpid0=$(pgrep -f "^bindfs -o attr_timeout=0 $T/x " | head -n 1)
[ -n "$bpid0" ] || fail "no bindfs process (attr_timeout=0)"
trap 'kill -CONT "$bpid" "$bpid0" 2>/dev/null; cleanup' EXIT
stuck_lookup() {  # OPTS NAME: 0 if 'stat MNT/NAME' answered while 'stat MNT/slow0' was stuck
  local answered=1 other
  mount_shim "$T/back2" "$T/mnt" $1
  kill -STOP "$bpid0"
  stat "$T/mnt/slow0" >/dev/null 2>&1 &
  stuck=$!
  sleep 0.5
  kill -0 "$stuck" 2>/dev/null || fail "the lookup of the stopped bindfs did not wait ($1)"
  stat "$T/mnt/$2" >/dev/null 2>&1 &
  other=$!
  for i in $(seq 40); do kill -0 "$other" 2>/dev/null || break; sleep 0.05; done
  kill -0 "$other" 2>/dev/null || { wait "$other" && answered=0; }
  kill -CONT "$bpid0"
  wait "$stuck" || fail "the stuck lookup failed after the backing filesystem continued ($1)"
  wait "$other" || fail "stat $2 failed ($1)"
  unmount_shim "$T/mnt"
  return $answered
}
echo other >"$T/back2/other1"
echo other >"$T/back2/other2"
if grep "mounted $T/back2 on $T/mnt " "$T/shim.log" | tail -n 1 | grep -q "parallel lookups on"; then
  stuck_lookup "" other1 || fail "a lookup stuck on the backing filesystem held up another lookup in its directory"
  if stuck_lookup "-o nopassthrough" other2; then
    fail "control: without FUSE_PARALLEL_DIROPS a lookup beside the stuck one answered (the test has no teeth)"
  fi
  pass "a stuck lookup holds up no other lookup of its directory (FUSE_PARALLEL_DIROPS; control waits)"
else
  echo "parallel lookups off here ($(grep "mounted $T/back2" "$T/shim.log" | tail -n 1)): libfuse without custom io, or FUSEFS_OPTS"
fi
