#!/bin/bash
# torture.sh [--minutes N] [--phases LIST] [--no-shim]
# The torture suite (see README.md): a Kafka-like load, faults, symlink races, other
# users and hostile names, under the preload on bindfs, through nfsshim-fuse over a
# local directory, and through nfsshim-fuse over the direct NFSv3 engine against
# nfs-ganesha in a network namespace (ganesha killed and restarted, the network cut and
# restored). Prints one table of figures at the end; exits 0 iff every check passed.
#   --minutes N   total load time to spread over the load phases (default: smoke, ~3 min
#                 wall in all); N >= 10 also runs the 1e6-entry directory
#   --phases L    comma-separated subset of: preload,fuse,fusekill,readonly,enospc,
#                 security,names,engine (default: all of these), and uml (never by
#                 default: the real NFS client in
#                 user-mode-linux against nfs-ganesha, slow)
#   --no-shim     run the preload phases WITHOUT the preload: they must then fail
#                 (EBUSY/ENOTEMPTY, .fuse_hidden leftovers): shows the suite bites
# Needs root, /dev/fuse, bindfs, setpriv, chattr, a tmpfs mount. NFSSHIM_BUILD names the
# build dir (default /work/main/build).
set -u
BUILD=${NFSSHIM_BUILD:-/work/main/build}
DRIVER=$BUILD/tests/torture/torture_driver
PRELOAD=$BUILD/preload/libnfsshim-preload.so
FUSE=$BUILD/fusefs/nfsshim-fuse
CLI=$BUILD/tools/nfsshim
HOLDER=$BUILD/tests/preload/crash_helper
G=.graveyard.nfsshim
minutes=0 phases='' no_shim=0
while [ $# -gt 0 ]; do
  case $1 in
    --minutes) minutes=$2; shift 2 ;;
    --phases) phases=$2; shift 2 ;;
    --no-shim) no_shim=1; shift ;;
    *) echo "usage: $0 [--minutes N] [--phases LIST] [--no-shim]" >&2; exit 2 ;;
  esac
done
[[ $minutes =~ ^[0-9]+$ ]] || { echo "torture: --minutes wants a whole number, got '$minutes'" >&2; exit 2; }
if [ -z "$phases" ]; then
  phases=preload,fuse,fusekill,readonly,enospc,security,names,engine
fi
for f in "$DRIVER" "$PRELOAD" "$FUSE" "$CLI" "$HOLDER"; do
  [ -x "$f" ] || [ -f "$f" ] || { echo "torture: $f not built (NFSSHIM_BUILD=$BUILD)" >&2; exit 2; }
done
for c in bindfs fusermount3 setpriv chattr; do
  command -v $c >/dev/null || { echo "torture: $c missing" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "torture: needs root (mounts, other users)" >&2; exit 2; }

# Load seconds per load phase: the smoke variant is short; --minutes spreads N minutes
# over the 8 load runs (the two main ones and the engine's get 2 shares each).
if [ "$minutes" -gt 0 ]; then share=$((minutes * 60 / 11)); else share=0; fi
secs() { [ "$share" -gt 0 ] && echo $((share * $1)) || echo "$2"; }
ENTRIES=20000
[ "$minutes" -ge 10 ] && ENTRIES=1000000

T=$(mktemp -d /tmp/nfsshim-torture.XXXXXX)
chmod 755 "$T"
MOUNTS=() PIDS=() FAILED=()
cleanup() {
  local i
  for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
    grep -q " ${MOUNTS[i]} " /proc/mounts || continue
    fusermount3 -u -z "${MOUNTS[i]}" 2>/dev/null || umount -l "${MOUNTS[i]}" 2>/dev/null
  done
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  engine_down
  # TORTURE_KEEP_LOGS=DIR: the daemons' logs outlive the run (for a failure's diagnosis).
  [ -n "${TORTURE_KEEP_LOGS:-}" ] && mkdir -p "$TORTURE_KEEP_LOGS" &&
    for f in "$T"/fuse.log "$T"/*/fuse.log; do [ -f "$f" ] && cp "$f" "$TORTURE_KEEP_LOGS/$(basename "$(dirname "$f")")-fuse.log"; done
  chattr -R -i "$T" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT

say() { echo "== $*"; }
problem() { echo "torture: FAIL [$phase]: $*"; FAILED+=("$phase: $*"); }
want() { [[ ",$phases," == *",$1,"* ]]; }

# Runs the driver, echoing its output; keeps its FIGURES line. Returns the driver's status.
drive() {
  local out rc
  out=$("$@" 2> >(tail -n 30 >&2)); rc=$?
  printf '%s\n' "$out"
  local f; f=$(printf '%s\n' "$out" | grep '^FIGURES ' | tail -n 1)
  [ -n "$f" ] && echo "${f#FIGURES } [$phase]" >> "$T/figs"
  return $rc
}
shimmed() {  # shimmed WATCHDIR cmd...: under the preload watching WATCHDIR (unless --no-shim)
  local w=$1; shift
  if [ "$no_shim" = 1 ]; then "$@"; else LD_PRELOAD=$PRELOAD NFSSHIM_WATCH=$w "$@"; fi
}
field() { awk -v k="  $1" 'index($0, k) == 1 { v = $NF } END { print v }'; }  # a table row's figure

wait_mount() {  # MNT TYPE
  local i
  for i in $(seq 100); do grep -q " $1 $2 " /proc/mounts && return 0; sleep 0.05; done
  echo "torture: $1 did not become a $2 mount" >&2; return 1
}
mount_bindfs() { mkdir -p "$1" "$2"; bindfs "$1" "$2" && MOUNTS+=("$2") && wait_mount "$2" fuse; }
# mount_fuse SRC MNT: nfsshim-fuse in the foreground of a background job; DAEMON = its pid.
# (It raises its own fd limit to the hard limit: it holds one descriptor per known inode.)
mount_fuse() {
  mkdir -p "$1" "$2"
  (exec env -u NFSSHIM_BUILD "$FUSE" "$1" "$2" -f -o log=file:"$T/fuse.log") &
  DAEMON=$!
  PIDS+=("$DAEMON")
  MOUNTS+=("$2")
  wait_mount "$2" fuse.nfsshim-fuse
}
unmount() { fusermount3 -u "$1" 2>/dev/null || fusermount3 -u -z "$1"; }
tmpfs_used_kib() { df --output=used -k "$1" | tail -n 1 | tr -d ' '; }

# The engine phase: nfs-ganesha in a network namespace of its own (ENS), reached from here
# over a veth pair (EVH here, EVN there) in 10.81.0.0/24 (nothing else uses it); cutting
# the network is `ip link set EVH down`. Its ports are private to the namespace.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../engine/ganesha.sh"
ENS=nfsshim-tte EVH=tte-host EVN=tte-ns ENET=10.81.0 EPORT=25049 EMPORT=25048 ESTATE=
engine_ganesha() {  # (re)starts ganesha inside ENS, bound to every address there
  ip netns exec "$ENS" env GANESHA_BIND_ADDR=0.0.0.0 bash -c '. "$1"; ganesha_start "$2" "$3" "$4" "$5" VFS' \
    _ "$HERE/../engine/ganesha.sh" "$ESTATE" "$1" "$EPORT" "$EMPORT"
}
engine_up() {  # EXPORT_DIR: the namespace, the link, ganesha
  if [ -e "/run/netns/$ENS" ]; then
    [ -z "$(ip netns pids "$ENS" 2>/dev/null)" ] || { echo "torture: netns $ENS in use (another run?)" >&2; return 1; }
    ip netns del "$ENS"; ip link del "$EVH" 2>/dev/null  # a stale one from a killed run
  fi
  ESTATE=$T/engine-state
  ip netns add "$ENS" &&
    ip link add "$EVH" type veth peer name "$EVN" netns "$ENS" &&
    ip addr add "$ENET.1/24" dev "$EVH" && ip link set "$EVH" up &&
    ip -n "$ENS" addr add "$ENET.2/24" dev "$EVN" && ip -n "$ENS" link set "$EVN" up &&
    ip -n "$ENS" link set lo up &&
    engine_ganesha "$1"
}
engine_down() {  # ganesha (by its recorded PIDs), the link, the namespace
  [ -n "$ESTATE" ] || return 0
  ganesha_stop "$ESTATE"
  ip link del "$EVH" 2>/dev/null
  ip netns del "$ENS" 2>/dev/null
  ESTATE=
}

LOAD=("$DRIVER" load --procs 3 --threads 6 --max-rss-mib 256 --max-daemon-rss-mib 256)

# ---- (a) the preload on bindfs: load with random SIGKILLs; `nfsshim gc` if needed
if want preload; then
  phase=preload-bindfs; say "$phase"
  mount_bindfs "$T/pb/src" "$T/pb/mnt"
  shimmed "$T/pb/mnt" drive "${LOAD[@]}" --dir "$T/pb/mnt" --backing "$T/pb/src" --seconds "$(secs 2 24)" \
    --kill-every 6 --gc "$CLI" --label "$phase" || problem "load checks failed"
  unmount "$T/pb/mnt"
fi

# ---- (b) nfsshim-fuse over a local directory: load with random SIGKILLs
if want fuse; then
  phase=fuse-local; say "$phase"
  mount_fuse "$T/fl/back" "$T/fl/mnt"
  drive "${LOAD[@]}" --dir "$T/fl/mnt" --backing "$T/fl/back" --seconds "$(secs 2 24)" --kill-every 6 \
    --daemon-pid "$DAEMON" --label "$phase" || problem "load checks failed"
  unmount "$T/fl/mnt"
fi

# ---- SIGKILL of the FUSE daemon under load, lazy unmount, remount: the new daemon
# reaps the dead one's graveyard, every surviving file verifies, a new load recovers.
if want fusekill; then
  phase=fuse-daemon-kill; say "$phase"
  mount_fuse "$T/fk/back" "$T/fk/mnt"
  "${LOAD[@]}" --dir "$T/fk/mnt" --backing "$T/fk/back" --seconds 60 --disconnect-ok --quiesce 0 \
    --label "$phase-before" > "$T/fk.out" 2>&1 &
  load=$!
  sleep $((4 + RANDOM % 5))
  entries=$(ls -A "$T/fk/back/$G/u0" 2>/dev/null | wc -l)
  kill -9 "$DAEMON"; wait "$DAEMON" 2>/dev/null
  wait $load
  grep -E '^  (operations|disconnects|bytes lost|EBUSY/ENOTEMPTY/ESTALE|unexpected)' "$T/fk.out"
  lost=$(field 'bytes lost (must be 0)' < "$T/fk.out")
  [ "${lost:-1}" = 0 ] || problem "bytes lost before the kill: $lost"
  fusermount3 -u -z "$T/fk/mnt"
  echo "graveyard entries when the daemon died: $entries"
  mount_fuse "$T/fk/back" "$T/fk/mnt"
  drive "$DRIVER" verify --dir "$T/fk/mnt" --backing "$T/fk/back" || problem "after remount: not reaped or data bad"
  echo "fuse-daemon-kill ops=0 faults=1 survived=$([ ${#FAILED[@]} = 0 ] && echo 1 || echo 0) verified=0 lost=${lost:-0} rss=0 daemon_rss=0 $([ ${#FAILED[@]} = 0 ] && echo PASS || echo FAIL) [$phase]" >> "$T/figs"
  drive "${LOAD[@]}" --dir "$T/fk/mnt" --backing "$T/fk/back" --seconds "$(secs 1 10)" \
    --daemon-pid "$DAEMON" --label "$phase-after" || problem "load after remount failed"
  unmount "$T/fk/mnt"
fi

# ---- the graveyard made read-only (immutable): the shim falls back to the plain call.
# On bindfs the application then sees what it sees without the shim (ENOTEMPTY on rmdir
# while .fuse_hidden files exist) and must lose nothing; through FUSE the daemon falls
# back to a plain unlink of the backing file, which the application does not notice.
if want readonly; then
  phase=readonly-preload; say "$phase"
  mkdir -p "$T/ro/src/$G/u0"; chmod 1733 "$T/ro/src/$G"; chmod 700 "$T/ro/src/$G/u0"
  chattr +i "$T/ro/src/$G/u0"
  mount_bindfs "$T/ro/src" "$T/ro/mnt"
  out=$(shimmed "$T/ro/mnt" drive "${LOAD[@]}" --dir "$T/ro/mnt" --backing "$T/ro/src" --seconds "$(secs 1 10)" \
    --plain-ok --faults 1 --label "$phase"); rc=$?
  printf '%s\n' "$out" | grep -E '^  (operations|EBUSY|bytes lost|silly|graveyard entries left)'
  plain=$(printf '%s\n' "$out" | field 'EBUSY/ENOTEMPTY as plain (expected)')
  [ "${plain:-0}" -gt 0 ] || problem "no plain-call error seen: was the graveyard really unusable?"
  [ $rc = 0 ] || problem "load checks failed"
  chattr -i "$T/ro/src/$G/u0"
  unmount "$T/ro/mnt"

  phase=readonly-fuse; say "$phase"
  mkdir -p "$T/rf/back/$G/u0"; chmod 1733 "$T/rf/back/$G"; chmod 700 "$T/rf/back/$G/u0"
  chattr +i "$T/rf/back/$G/u0"
  mount_fuse "$T/rf/back" "$T/rf/mnt"
  drive "${LOAD[@]}" --dir "$T/rf/mnt" --backing "$T/rf/back" --seconds "$(secs 1 10)" --daemon-pid "$DAEMON" \
    --faults 1 --label "$phase" || problem "load checks failed"
  grep -q "cannot move .* into the graveyard .*plain unlink" "$T/fuse.log" || problem "the daemon never fell back: was the graveyard really unusable?"
  chattr -i "$T/rf/back/$G/u0"
  unmount "$T/rf/mnt"
fi

# ---- the filesystem full (a 48 MiB tmpfs as backing): ENOSPC reaches the application as
# it would without the shim, nothing is lost, and once everything is deleted the space
# is all back (nothing leaked in a graveyard).
if want enospc; then
  for how in preload fuse; do
    phase=enospc-$how; say "$phase"
    mkdir -p "$T/ns-$how/back" "$T/ns-$how/mnt"
    mount -t tmpfs -o size=48m tmpfs "$T/ns-$how/back" && MOUNTS+=("$T/ns-$how/back") || { problem "tmpfs mount"; continue; }
    base=$(tmpfs_used_kib "$T/ns-$how/back")
    args=(--dir "$T/ns-$how/mnt" --backing "$T/ns-$how/back" --seconds "$(secs 1 10)" --enospc-ok
          --roll 4194304 --keep 4 --faults 1 --label "$phase")
    if [ $how = preload ]; then
      mount_bindfs "$T/ns-$how/back" "$T/ns-$how/mnt"
      out=$(shimmed "$T/ns-$how/mnt" drive "${LOAD[@]}" "${args[@]}"); rc=$?
    else
      mount_fuse "$T/ns-$how/back" "$T/ns-$how/mnt"
      out=$(drive "${LOAD[@]}" "${args[@]}" --daemon-pid "$DAEMON"); rc=$?
    fi
    printf '%s\n' "$out" | grep -E '^  (operations|ENOSPC|bytes lost|graveyard entries left|silly)'
    nospc=$(printf '%s\n' "$out" | field 'ENOSPC seen (expected here)')
    [ "${nospc:-0}" -gt 0 ] || problem "the filesystem never filled up"
    [ $rc = 0 ] || problem "load checks failed"
    if [ $how = preload ]; then shimmed "$T/ns-$how/mnt" rm -rf "$T/ns-$how/mnt"/p* "$T/ns-$how/mnt"/cp*
    else rm -rf "$T/ns-$how/mnt"/p* "$T/ns-$how/mnt"/cp*; fi
    sleep 1
    used=$(tmpfs_used_kib "$T/ns-$how/back")
    echo "tmpfs used: $base KiB before, $used KiB after deleting everything"
    [ "$used" -le $((base + 64)) ] || problem "space leaked: $used KiB used ($(ls -A "$T/ns-$how/back" "$T/ns-$how/back/$G"/* 2>&1 | head -5 | tr '\n' ' '))"
    unmount "$T/ns-$how/mnt"
  done
fi

# ---- security: symlink swaps during buries and reaps; other users; permissions.
if want security; then
  phase=race-preload; say "$phase"
  mkdir -p "$T/sec/local" "$T/sec/outside"
  touch "$T/sec/local/first"; shimmed "$T/sec/local" rm "$T/sec/local/first"  # makes the graveyard
  shimmed "$T/sec/local" drive "$DRIVER" race --dir "$T/sec/local" --outside "$T/sec/outside" \
    --graveyard-dir "$T/sec/local/$G/u0" --seconds 8 --label "$phase" || problem "symlink race"
  "$CLI" gc "$T/sec/local" > /dev/null 2>&1
  "$DRIVER" race --dir "$T/sec/local" --outside "$T/sec/outside" --seconds 0 > /dev/null \
    || problem "canary changed by nfsshim gc"  # (a 0-second race only re-checks the canary)
  # what reaping leaves: the planted directories (a reap never recurses)
  find -P "$T/sec/local/$G/u0" -mindepth 1 -maxdepth 1 -name '*~4194303~*' -exec rm -rf {} +
  [ -z "$(ls -A "$T/sec/local/$G/u0")" ] || problem "graveyard not empty after the race: $(ls -A "$T/sec/local/$G/u0" | head -3)"

  phase=race-fuse; say "$phase"
  mount_fuse "$T/sf/back" "$T/sf/mnt"
  touch "$T/sf/mnt/first"; exec 8< "$T/sf/mnt/first"; rm "$T/sf/mnt/first"; exec 8<&-
  drive "$DRIVER" race --dir "$T/sf/mnt" --outside "$T/sf/outside" --graveyard-dir "$T/sf/back/$G/u0" \
    --seconds 8 --label "$phase" || problem "symlink race"
  unmount "$T/sf/mnt"
  mount_fuse "$T/sf/back" "$T/sf/mnt"  # the new daemon reaps the planted entries
  "$DRIVER" race --dir "$T/sf/mnt" --outside "$T/sf/outside" --seconds 0 > /dev/null \
    || problem "canary changed by the daemon's reap at mount"
  find -P "$T/sf/back/$G/u0" -mindepth 1 -maxdepth 1 -name '*~4194303~*' -exec rm -rf {} +
  [ -z "$(ls -A "$T/sf/back/$G/u0")" ] || problem "graveyard not empty after the race: $(ls -A "$T/sf/back/$G/u0" | head -3)"
  unmount "$T/sf/mnt"

  phase=other-user; say "$phase"
  L=$T/sec/users; O=$T/sec/outside2; mkdir -p "$L" "$O"; chmod 1777 "$L"
  echo canary > "$O/canary"
  nobody() { setpriv --reuid 65534 --regid 65534 --clear-groups "$@"; }
  echo topsecret > "$L/secret"
  exec 7> >(shimmed "$L" "$HOLDER" "$L/secret" wait > "$T/holder.out")
  for i in $(seq 50); do grep -q buried "$T/holder.out" 2>/dev/null && break; sleep 0.1; done
  entry=$(ls -A "$L/$G/u0" | head -n 1)
  [ -n "$entry" ] || problem "the holder's file was not buried"
  [ "$(stat -c %a:%u "$L/$G")" = 1733:0 ] || problem "graveyard top is $(stat -c %a:%u "$L/$G"), want 1733:0"
  [ "$(stat -c %a:%u "$L/$G/u0")" = 700:0 ] || problem "u0 is $(stat -c %a:%u "$L/$G/u0"), want 700:0"
  checks=0
  deny() { checks=$((checks + 1)); if nobody "$@" > /dev/null 2>&1; then problem "uid 65534 could: $*"; fi; }
  deny ls "$L/$G"
  deny ls "$L/$G/u0"
  deny cat "$L/$G/u0/$entry"
  deny rm -f "$L/$G/u0/$entry"
  deny mv "$L/$G/u0/$entry" "$L/stolen"
  deny ln "$L/$G/u0/$entry" "$L/hardlink"
  deny mv "$L/$G/u0" "$L/$G/mine"
  deny rmdir "$L/$G/u0"
  deny env LD_PRELOAD="$PRELOAD" NFSSHIM_WATCH="$L" "$CLI" gc "$L/$G/u0"
  deny env LD_PRELOAD="$PRELOAD" NFSSHIM_WATCH="$L" rm -rf "$L/$G"
  [ -e "$L/$G/u0/$entry" ] || problem "root's buried file is gone after uid 65534's attempts"
  # uid 65534's own buried file lands in its own 0700 directory
  nobody sh -c "echo mine > '$L/mine'"
  exec 6> >(nobody env LD_PRELOAD="$PRELOAD" NFSSHIM_WATCH="$L" "$HOLDER" "$L/mine" wait > "$T/holder2.out")
  for i in $(seq 50); do grep -q buried "$T/holder2.out" 2>/dev/null && break; sleep 0.1; done
  # (graveyard_other_user_test.sh: the 1733 top level is reached with a path descriptor)
  if [ "$(stat -c %a:%u "$L/$G/u65534" 2>/dev/null)" != 700:65534 ]; then
    problem "uid 65534 could not use the graveyard (u65534 missing)"
  fi
  exec 6>&- 7>&-
  sleep 0.5
  # A graveyard planted by uid 65534 before root's first use, with u0 a symlink outside:
  # root's shim must not use it (the delete falls back to a plain unlink).
  L2=$T/sec/planted; mkdir -p "$L2"; chmod 1777 "$L2"
  nobody sh -c "mkdir -m 777 '$L2/$G' && ln -s '$O' '$L2/$G/u0'"
  echo victim > "$L2/victim"
  exec 5< "$L2/victim"
  shimmed "$L2" rm "$L2/victim" || problem "rm with a planted graveyard failed"
  [ "$(cat <&5)" = victim ] || problem "open file unreadable after fallback"
  exec 5<&-
  [ "$(ls -A "$O")" = canary ] && [ "$(cat "$O/canary")" = canary ] || problem "planted graveyard redirected a bury: $(ls -A "$O")"
  [ -e "$L2/victim" ] && problem "victim still there"
  echo "other-user: $checks denied attempts, planted graveyard refused"
  ok=1; printf '%s\n' "${FAILED[@]}" | grep -q '^other-user' && ok=0
  echo "other-user ops=$((checks + 3)) faults=$((checks + 1)) survived=$([ $ok = 1 ] && echo $((checks + 1)) || echo 0) verified=0 lost=0 rss=0 daemon_rss=0 $([ $ok = 1 ] && echo PASS || echo FAIL) [$phase]" >> "$T/figs"
fi

# ---- hostile names, a deep tree, a directory of many entries: delete while open.
if want names; then
  phase=names-preload-bindfs; say "$phase"
  mount_bindfs "$T/nb/src" "$T/nb/mnt"
  # bindfs resolves full paths (PATH_MAX): short components here
  shimmed "$T/nb/mnt" drive "$DRIVER" names --dir "$T/nb/mnt" --depth 200 --component-len 8 --entries "$ENTRIES" \
    || problem "names"
  drive "$DRIVER" verify --dir "$T/nb/mnt" --backing "$T/nb/src" > /dev/null || problem "leftovers: $(ls -A "$T/nb/src")"
  [ -z "$(ls -A "$T/nb/src" | grep -v "^$G\$")" ] || problem "leftovers: $(ls -A "$T/nb/src")"
  unmount "$T/nb/mnt"

  phase=names-preload-local; say "$phase"
  mkdir -p "$T/nl"
  shimmed "$T/nl" drive "$DRIVER" names --dir "$T/nl" --depth 200 --entries 2000 || problem "names"
  [ -z "$(ls -A "$T/nl" | grep -v "^$G\$")" ] && [ -z "$(ls -A "$T/nl/$G/u0" 2>/dev/null)" ] || problem "leftovers"

  phase=names-fuse; say "$phase"
  mount_fuse "$T/nf/back" "$T/nf/mnt"
  # The daemon holds one fd per inode: a directory cannot hold more entries than its limit.
  limit=$(awk '/open files/ {print $4}' "/proc/$DAEMON/limits")
  n=$ENTRIES
  if [ "$limit" != unlimited ] && [ "$n" -gt $((limit * 9 / 10 - 100)) ]; then
    n=$((limit * 9 / 10 - 100)); echo "entries capped at $n by the daemon's fd limit $limit"
  fi
  drive "$DRIVER" names --dir "$T/nf/mnt" --depth 200 --entries "$n" || problem "names"
  drive "$DRIVER" verify --dir "$T/nf/mnt" --backing "$T/nf/back" > /dev/null || problem "leftovers"
  [ -z "$(ls -A "$T/nf/back" | grep -v "^$G\$")" ] || problem "leftovers: $(ls -A "$T/nf/back")"
  unmount "$T/nf/mnt"
fi

# ---- nfsshim-fuse over the direct NFSv3 engine (nfs:// source, hard mount, nconnect=4)
# against nfs-ganesha in its own network namespace: the load with SIGKILLs, and meanwhile
# ganesha killed (-9) and restarted, then the network cut (host side of the veth down)
# and restored. The mount is hard: the application stalls and resumes, sees no error.
# Then the usual checks through the mount, and once unmounted the export itself must
# hold every surviving byte and an empty graveyard (<export>/.graveyard.nfsshim/u0).
if want engine; then
  phase=engine-nfs; say "$phase"
  E=$T/te DAEMON=; mkdir -p "$E/mnt" "$E/export"
  esecs=$(secs 2 30)
  # The cut: a few seconds in the smoke (TCP retransmits carry the connections over);
  # in the full run longer than the engine's timeo (60 s), so it also drops and redials.
  hold=6; [ "$minutes" -gt 0 ] && hold=70
  if ! command -v ganesha.nfsd > /dev/null || ! command -v ip > /dev/null; then
    problem "needs ganesha.nfsd (nfs-ganesha, nfs-ganesha-vfs) and ip (iproute2)"
  elif ! engine_up "$E/export" > "$E/up.out" 2>&1; then
    problem "netns/ganesha setup failed: $(tail -3 "$E/up.out" | tr '\n' ' ')"
  else
    url="nfs://$ENET.2/export?vers=3&nconnect=4&nfsport=$EPORT&mountport=$EMPORT"
    (exec env -u NFSSHIM_BUILD "$FUSE" "$url" "$E/mnt" -f -o log=file:"$E/fuse.log" \
      -o log_level="${TORTURE_FUSE_LOG_LEVEL:-info}" 2> "$E/fuse.stderr") &
    DAEMON=$!; PIDS+=("$DAEMON"); MOUNTS+=("$E/mnt")
    if wait_mount "$E/mnt" fuse.nfsshim-fuse; then
      "${LOAD[@]}" --dir "$E/mnt" --backing "$E/export" --seconds "$esecs" --kill-every 6 \
        --daemon-pid "$DAEMON" --faults 2 --label "$phase" > "$E/load.out" 2> "$E/load.err" &
      load=$!
      t0=$(date +%s)
      at() { local d=$((t0 + $1 - $(date +%s))); [ $d -gt 0 ] && sleep $d; }
      # 1. ganesha killed and restarted (every connection lost, unstable writes re-sent)
      at $((esecs / 4))
      echo "ganesha killed (SIGKILL) at +$(($(date +%s) - t0)) s"; ganesha_crash "$ESTATE"
      sleep 1
      engine_ganesha "$E/export" >> "$E/up.out" 2>&1 || problem "ganesha restart failed: $(tail -3 "$E/up.out" | tr '\n' ' ')"
      echo "ganesha restarted at +$(($(date +%s) - t0)) s"
      # 2. the network cut: a create issued during the cut must wait for the restore
      at $((esecs / 2))
      ip link set "$EVH" down; echo "network cut at +$(($(date +%s) - t0)) s for $hold s"
      sleep 0.5
      ( touch "$E/mnt/cut-probe"; echo "$? $(date +%s.%N)" > "$E/probe" ) &
      probe=$!
      sleep "$hold"
      [ -s "$E/probe" ] && problem "a create went through while the network was cut: $(cat "$E/probe")"
      ip link set "$EVH" up; restored=$(date +%s.%N); echo "network restored at +$(($(date +%s) - t0)) s"
      wait $probe
      read -r prc pdone < "$E/probe"
      echo "create issued 0.5 s into the cut: status $prc, done $(awk -v a="$pdone" -v b="$restored" 'BEGIN { printf "%.1f", a - b }') s after the restore"
      [ "$prc" = 0 ] || problem "the create during the cut failed (status $prc)"
      rm -f "$E/mnt/cut-probe"
      wait $load; rc=$?
      cat "$E/load.out"
      # every error the workers reported, by kind and path (20 at most per process)
      sed -n 's/^torture\(\[[0-9]*\]\)\{0,1\}: //p' "$E/load.err" | sort | uniq -c | sort -rn | head -n 12
      grep -A 2 'SIGBUS at' "$E/load.err" | head -n 12  # with the mapping, file offset and size
      [ -n "${TORTURE_KEEP_LOGS:-}" ] && mkdir -p "$TORTURE_KEEP_LOGS" && cp "$E/load.err" "$TORTURE_KEEP_LOGS/te-load.err"
      f=$(grep '^FIGURES ' "$E/load.out" | tail -n 1)
      [ -n "$f" ] && echo "${f#FIGURES } [$phase]" >> "$T/figs"
      [ $rc = 0 ] || problem "load checks failed"
      grep -q "connection to $ENET.2 lost" "$E/fuse.log" && grep -q "reconnected to $ENET.2" "$E/fuse.log" ||
        problem "the engine never saw the restart (no 'connection lost'/'reconnected' in its log)"
      echo "engine log: $(grep -c "connection to .* lost" "$E/fuse.log") connections lost, $(grep -c "reconnected to" "$E/fuse.log") reconnected, $(grep -c "not responding" "$E/fuse.log") 'not responding'"
      [ "$minutes" -gt 0 ] && { grep -q "not responding" "$E/fuse.log" || problem "a ${hold} s cut and no 'not responding' in the engine's log"; }
      unmount "$E/mnt"
      drive "$DRIVER" verify --dir "$E/export" || problem "the export after unmount: data bad, graveyard or silly-rename leftovers"
    else
      problem "the nfs:// mount did not come up: $(tail -3 "$E/fuse.log" 2>/dev/null | tr '\n' ' ')"
    fi
  fi
  engine_down
  # ganesha's mount namespace (a copy made at its restart) may have held the FUSE mount
  # alive after the unmount: with ganesha gone the daemon ends; else stop it.
  [ -n "${DAEMON:-}" ] && { for i in $(seq 50); do kill -0 "$DAEMON" 2>/dev/null || break; sleep 0.1; done
    kill "$DAEMON" 2>/dev/null; wait "$DAEMON" 2>/dev/null; }
fi

# ---- (c) the real Linux NFS client (user-mode-linux, 1 CPU) against nfs-ganesha in a
# private lab (own state dir, netns, tap, subnet): the load under the preload, SIGKILLs.
# Only with --phases ...,uml (slow). The server's export must end with no .nfs* file and
# an empty graveyard.
if want uml; then
  phase=uml-nfs; say "$phase"
  export NFSSHIM_LAB=$T/lab NFSSHIM_LAB_NETNS=nfsshim-tort NFSSHIM_LAB_TAP=nstort0 NFSSHIM_LAB_NET=10.79.0
  here=$(cd "$(dirname "$0")" && pwd)
  if "$here/../lab/lab.sh" up > "$T/lab.out" 2>&1; then
    usecs=$(secs 2 60)
    NFSSHIM_BUILD=$BUILD TORTURE_NO_SHIM=$no_shim drive "$here/../lab/uml-run.sh" -o vers=4.1 -T $((usecs + 300)) \
      -e NFSSHIM_BUILD -e TORTURE_NO_SHIM -- \
      "$here/guest_load.sh" "$usecs" || problem "load in the guest failed"
    silly=$(find "$NFSSHIM_LAB/exp" -name '.nfs*' | head -3)
    [ -z "$silly" ] || problem "server holds silly-rename files: $silly"
    left=$(find "$NFSSHIM_LAB/exp/$G" -mindepth 2 2>/dev/null | head -3)
    [ -z "$left" ] || problem "graveyard entries left on the server: $left"
  else
    problem "lab.sh up failed: $(tail -3 "$T/lab.out")"
  fi
  "$here/../lab/lab.sh" down > /dev/null 2>&1
fi

# ---- the table
echo
echo "==== torture figures ($([ "$minutes" -gt 0 ] && echo "$minutes minutes" || echo smoke)$([ $no_shim = 1 ] && echo ", WITHOUT the preload"))"
printf '%-28s %12s %7s %9s %16s %10s %10s %10s  %s\n' phase ops faults survived bytes-verified bytes-lost rss-KiB daemon-KiB verdict
tot_ops=0 tot_f=0 tot_s=0 tot_v=0 tot_l=0 peak=0 dpeak=0
while read -r f; do
  label=${f##*[}; label=${label%]}
  get() { printf '%s\n' "$f" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
  verdict=$(printf '%s\n' "$f" | grep -oE '(PASS|FAIL)' | tail -n 1)
  printf '%-28s %12s %7s %9s %16s %10s %10s %10s  %s\n' "$label" "$(get ops)" "$(get faults)" "$(get survived)" \
    "$(get verified)" "$(get lost)" "$(get rss)" "$(get daemon_rss)" "${verdict:-}"
  tot_ops=$((tot_ops + $(get ops))); tot_f=$((tot_f + $(get faults))); tot_s=$((tot_s + $(get survived)))
  tot_v=$((tot_v + $(get verified))); tot_l=$((tot_l + $(get lost)))
  [ "$(get rss)" -gt $peak ] && peak=$(get rss); [ "$(get daemon_rss)" -gt $dpeak ] && dpeak=$(get daemon_rss)
done < <(cat "$T/figs" 2>/dev/null)
printf '%-28s %12s %7s %9s %16s %10s %10s %10s\n' TOTAL $tot_ops $tot_f $tot_s $tot_v $tot_l $peak $dpeak
if [ ${#FAILED[@]} -gt 0 ]; then
  echo "torture: ${#FAILED[@]} check(s) FAILED:"; printf '  %s\n' "${FAILED[@]}"
  exit 1
fi
echo "torture: all checks passed"
