#!/bin/bash
# The daemon takes `log` and `log_level` from the settings file (NFSSHIM_CONFIG) and the
# environment (NFSSHIM_LOG_LEVEL...), as nfsshim.conf(5) and its unit say; -o log= and
# -o log_level= win over both; with neither, it logs at info (stderr with -f).
# A debug line to look for: an unlink of a file open through the mount is buried and
# logged at debug ("buried 'NAME' as ENTRY (1 open)").
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/back" "$T/mnt"

# start LABEL [env assignments...] -- [daemon args...]: mounts $T/back on $T/mnt in the
# foreground (daemon in the background of this shell), stderr into $T/LABEL.err.
start() {
  local label=$1 envs=()
  shift
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" $SHIM "$T/back" "$T/mnt" -f ${FUSEFS_OPTS:+-o "$FUSEFS_OPTS"} "$@" 2>"$T/$label.err" &
  SHIM_PID=$!
  PIDS+=("$SHIM_PID")
  MOUNTS+=("$T/mnt")
  wait_mounted "$T/mnt" fuse.nfsshim-fuse
}
# Unlinks a file held open through the mount (a debug line), then unmounts.
bury_and_stop() {
  echo data >"$T/mnt/f"
  exec 7<"$T/mnt/f"
  rm "$T/mnt/f" || fail "unlink through the mount"
  exec 7<&-
  wait_graveyard_empty "$T/back" || fail "graveyard not emptied"
  unmount_shim "$T/mnt"
}
has() { grep -q -- "$2" "$1" 2>/dev/null; }

# 1. The file's log and log_level, no -o: debug lines in the file it names.
cat >"$T/debug.conf" <<EOF
log = file:$T/cfg.log
log_level = debug
EOF
start cfg NFSSHIM_CONFIG="$T/debug.conf" --
bury_and_stop
has "$T/cfg.log" " debug: .*buried 'f' as " || fail "no debug line in the config's log file: $(cat "$T/cfg.log" 2>&1; cat "$T/cfg.err")"
has "$T/cfg.log" " info: mounted $T/back on $T/mnt " || fail "no mount line in the config's log file: $(cat "$T/cfg.log")"
pass "log and log_level from the settings file"

# 2. -o wins over the file: the level and the target.
rm -f "$T/cfg.log"
start opt NFSSHIM_CONFIG="$T/debug.conf" -- -o "log_level=warn"
bury_and_stop
! has "$T/cfg.log" " debug: \| info: " || fail "-o log_level=warn did not win over the file: $(cat "$T/cfg.log")"
start opt2 NFSSHIM_CONFIG="$T/debug.conf" -- -o "log=file:$T/opt.log"
bury_and_stop
has "$T/opt.log" " debug: .*buried 'f' as " || fail "-o log=: no debug line in $T/opt.log: $(cat "$T/opt.log" 2>&1)"
! has "$T/cfg.log" "mounted" || fail "-o log= did not win over the file's log: $(cat "$T/cfg.log")"
pass "-o log= and -o log_level= win over the file"

# 3. The environment: NFSSHIM_LOG_LEVEL wins over the file, as for the preload.
start env NFSSHIM_CONFIG="$T/debug.conf" NFSSHIM_LOG_LEVEL=error --
bury_and_stop
! has "$T/cfg.log" " debug: \| info: " || fail "NFSSHIM_LOG_LEVEL=error did not win over the file: $(cat "$T/cfg.log")"
pass "NFSSHIM_LOG_LEVEL wins over the file"

# 4. Neither: info on stderr (-f), no debug.
start none NFSSHIM_CONFIG=/dev/null --
bury_and_stop
has "$T/none.err" " info: mounted $T/back on $T/mnt " || fail "default: no info line on stderr: $(cat "$T/none.err")"
! has "$T/none.err" " debug: " || fail "default: debug lines on stderr: $(cat "$T/none.err")"
pass "without settings: info on stderr"
