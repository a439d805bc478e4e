# Shared harness for the fusefs tests (sourced). Every test works under a fresh temp dir and
# unmounts everything it mounted on exit, whatever happened.
#   NFSSHIM_BUILD   build dir (holds fusefs/nfsshim-fuse, tests/kafka, tests/fusefs)
#   FUSEFS_OPTS     more -o options for every daemon mount_shim starts
#   FUSEFS_MODE     passthrough: mount_shim checks that the daemon turned kernel passthrough
#                   on (our default) where the kernel has it; classic: every daemon gets
#                   -o nopassthrough, and the test skips (77) on a kernel without passthrough,
#                   where the test in the other mode runs the classic path already
set -u
BUILD=${NFSSHIM_BUILD:?NFSSHIM_BUILD must name the build directory}
SHIM_BIN=$BUILD/fusefs/nfsshim-fuse
# NFSSHIM_* variables are nfsshim settings to the daemon: keep the harness's own out.
SHIM="env -u NFSSHIM_BUILD $SHIM_BIN"
GRAVEYARD=.graveyard.nfsshim
T=$(mktemp -d /tmp/nfsshim-fusefs.XXXXXX)
MOUNTS=()   # mount points to unmount, last first
PIDS=()     # daemons we started in the foreground

cleanup() {
  local i
  for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
    fusermount3 -u -z "${MOUNTS[i]}" 2>/dev/null
  done
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  rm -rf "$T"
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "PASS: $*"; }

# True while MNT is a mount point of type TYPE (the top one at that path).
is_mounted() { grep -q " $1 .* - $2 " /proc/self/mountinfo; }

wait_mounted() {  # MNT TYPE
  local i
  for i in $(seq 1 100); do is_mounted "$1" "$2" && stat "$1" >/dev/null 2>&1 && return 0; sleep 0.05; done
  fail "$1 did not become a $2 mount"
}

# mount_shim SRC MNT [args...]: runs the daemon in the foreground (in the background of this
# shell, so the test knows its pid: SHIM_PID) and waits for the mount. SHIM_DEBUG_OUT=FILE:
# with libfuse's -d lines (one per request) in FILE.
mount_shim() {
  local src=$1 mnt=$2
  shift 2
  local cmd=($SHIM "$src" "$mnt" -f -o log=file:"$T/shim.log" ${FUSEFS_OPTS:+-o "$FUSEFS_OPTS"} "$@")
  # The daemon logs "mounted SRC on MNT (...)" after the kernel's INIT: a moment after the
  # mount shows, so callers that read that line wait for this mount's own one.
  local logged
  logged=$(grep -cF "mounted $src on $mnt (" "$T/shim.log" 2>/dev/null)
  if [ -n "${SHIM_DEBUG_OUT:-}" ]; then "${cmd[@]}" -d 2>"$SHIM_DEBUG_OUT" & else "${cmd[@]}" & fi
  SHIM_PID=$!
  PIDS+=("$SHIM_PID")
  MOUNTS+=("$mnt")
  wait_mounted "$mnt" fuse.nfsshim-fuse
  local i
  for i in $(seq 100); do
    [ "$(grep -cF "mounted $src on $mnt (" "$T/shim.log" 2>/dev/null)" -gt "${logged:-0}" ] && break
    sleep 0.05
  done
  [ "$(grep -cF "mounted $src on $mnt (" "$T/shim.log" 2>/dev/null)" -gt "${logged:-0}" ] ||
    fail "$mnt mounted but the daemon logged no 'mounted $src on $mnt' line: $(tail -n 3 "$T/shim.log")"
  local want=
  case ${FUSEFS_MODE:-} in
    passthrough) kernel_has_passthrough && want=on ;;
    classic) want=off ;;
  esac
  if [ -n "$want" ]; then
    grep "mounted $src on $mnt " "$T/shim.log" | tail -n 1 | grep -q "passthrough $want," ||
      fail "FUSEFS_MODE=$FUSEFS_MODE on $(uname -r): want passthrough $want: $(grep -i passthrough "$T/shim.log")"
  fi
}

# Whether the running kernel was built with FUSE passthrough: 0 yes, 1 no (its config says
# so, or it is older than 6.9).
kernel_has_passthrough() {
  local cfg
  cfg=$( (zcat /proc/config.gz || cat "/boot/config-$(uname -r)") 2>/dev/null | grep "FUSE_PASSTHROUGH")
  if [ -n "$cfg" ]; then [ "$cfg" = CONFIG_FUSE_PASSTHROUGH=y ]; return; fi
  printf '%s\n' 6.9 "$(uname -r | cut -d- -f1)" | sort -V -C
}
# The daemon whose log is LOG did not turn passthrough on: a skip (exit 77) on a kernel
# without it, a failure on one that has it.
skip_without_passthrough() {
  if kernel_has_passthrough; then
    fail "asked for passthrough on a kernel that has it ($(uname -r)), but the daemon runs without: $(grep -i passthrough "$1")"
  fi
  echo "SKIP: this kernel ($(uname -r)) has no FUSE passthrough"
  exit 77
}

case ${FUSEFS_MODE:-} in
  "" | passthrough) ;;
  classic)
    if ! kernel_has_passthrough; then
      echo "SKIP: this kernel ($(uname -r)) has no FUSE passthrough: the test without _classic runs the classic path"
      exit 77
    fi
    FUSEFS_OPTS=nopassthrough${FUSEFS_OPTS:+,$FUSEFS_OPTS}
    ;;
  *) fail "FUSEFS_MODE must be passthrough or classic, got '$FUSEFS_MODE'" ;;
esac

unmount_shim() {  # MNT: unmount and wait for the daemon to exit
  fusermount3 -u "$1" || fail "fusermount3 -u $1"
  # A mount namespace created meanwhile by another program (a test lab, a container) keeps
  # a copy of the mount, and the connection, alive: then end the daemon as SIGTERM would.
  local i
  for i in $(seq 100); do kill -0 "$SHIM_PID" 2>/dev/null || break; sleep 0.1; done
  kill "$SHIM_PID" 2>/dev/null
  wait "$SHIM_PID" 2>/dev/null
}

mount_bindfs() {  # SRC MNT [bindfs options...]
  bindfs "${@:3}" "$1" "$2" || fail "bindfs $*"
  MOUNTS+=("$2")
  wait_mounted "$2" fuse
}

# The graveyard of SRC (as the daemon, root, uses it) is empty.
graveyard_empty() {
  local g="$1/$GRAVEYARD/u$(id -u)"
  [ ! -d "$g" ] || [ -z "$(ls -A "$g")" ]
}

# graveyard_empty SRC within 5 s (the kernel sends the last RELEASE asynchronously).
wait_graveyard_empty() {
  local i
  for i in $(seq 1 50); do graveyard_empty "$1" && return 0; sleep 0.1; done
  graveyard_empty "$1"
}
