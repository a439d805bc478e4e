#!/bin/bash
# fuse_nfs_chaos_test.sh BUILD_DIR MODE[-v41] PORT MNT_PORT [URL_OPTS]
# Connection loss seen by an application through an nfsshim-fuse mount of
# nfs://...?vers=3&nconnect=4 (hard mount) over a private nfs-ganesha (FSAL VFS):
#   kill-conn  one of the daemon's 4 TCP connections is dropped (ss -K, chosen by its source port)
#   restart    ganesha is killed (SIGKILL) and started again
#   outage     the same, with ganesha kept down CHAOS_DOWN_S seconds (default 12), longer
#              than a soft mount's budget (timeo x (retrans + 1), which URL_OPTS must set
#              small): a hard mount blocks the application meanwhile, nothing fails
#   integrity  no fault: the same parallel transfer, plus file D written straight into the
#              export and read through the mount meanwhile
# MODE-v41 runs the same over vers=4.1 (the session engine): the connections are the
# session's, a dropped one must come back bound to it (BIND_CONN_TO_SESSION) with its calls
# replayed; after the restart the client id is renewed and the files re-opened.
# URL_OPTS (default nconnect=4) go into the URL, e.g. "nconnect=8&io=epoll".
# CHAOS_LOG_LEVEL=debug passes -o log_level=debug to the daemon.
# CHAOS_SHIM_OPTS=OPT[,OPT] passes more -o options (e.g. write_behind_kb=0) to the daemon.
# while 2 writers (2 threads each: 1 MiB pwrites, then fsync) write files B1, B2 (separate
# files: FUSE serializes writes to one file on its inode lock; NFSSHIM_CHAOS_MIB each, default
# 256) and 2 threads read file A (128 MiB, written before) pass
# after pass. kill-conn drops one connection at a time until a drop caught requests in flight
# (at most 30 drops). Writers and reader must see no error; afterwards every file holds the
# exact pattern (tests/engine/fuse_chaos_io), read through the mount and straight from the
# export. The daemon's log must show the fault hit it (connections lost and reconnected; after
# the restart also UNSTABLE data re-sent under the new write verifier), so the test fails if
# no fault was injected.
# Stops everything it started (trap), by PID.
set -uo pipefail
build=$1 mode=$2 port=$3 mnt_port=$4 url_opts=${5:-nconnect=4}
vers=3
case $mode in *-v41) vers=4.1 mode=${mode%-v41} ;; esac
case $mode in kill-conn|restart|outage|integrity) ;; *) echo "unknown mode $mode" >&2; exit 2 ;; esac
down_s=1
if [ "$mode" = outage ]; then
  down_s=${CHAOS_DOWN_S:-12}
  timeo=$(echo "$url_opts" | sed -n 's/.*timeo=\([0-9]*\).*/\1/p')
  retrans=$(echo "$url_opts" | sed -n 's/.*retrans=\([0-9]*\).*/\1/p')
  [ -n "$timeo" ] && [ -n "$retrans" ] && [ $((timeo * (retrans + 1))) -lt $((down_s * 10)) ] || {
    echo "outage: URL_OPTS must set timeo and retrans with timeo x (retrans + 1) < ${down_s}0 (got '$url_opts')" >&2
    exit 2
  }
fi
nconn=$(echo "$url_opts" | sed -n 's/.*nconnect=\([0-9]*\).*/\1/p')
[ -n "$nconn" ] || { echo "URL_OPTS must name nconnect= (got '$url_opts')" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
. "$here/ganesha.sh"
shim=$build/fusefs/nfsshim-fuse
io=$build/tests/engine/fuse_chaos_io
mib_a=128 mib_b=${NFSSHIM_CHAOS_MIB:-256}
[ "$mode" = integrity ] && mib_a=256
# What each engine logs: a connection lost (with the calls it had in flight), back again.
if [ "$vers" = 3 ]; then
  reconn_re='\] reconnected to ' inflight_sed='s/.*re-sending \([0-9]*\) requests.*/\1/p'
  conn_sed='s/.*\[conn \([0-9]*\)\].*/\1/p'
else
  reconn_re='nfs41: conn [0-9]* reconnected' inflight_sed='s/.*; \([0-9]*\) calls in flight to replay.*/\1/p'
  conn_sed='s/.*nfs41: conn \([0-9]*\) lost: .*/\1/p'
fi
work=$(mktemp -d /tmp/nfsshim-fuse-chaos.XXXXXX)
mnt=$work/mnt exp=$work/export log=$work/shim.log
mkdir -p "$mnt" "$work/flags"
shim_pid= writers= reader= reader_d=
cleanup() {
  set +e
  for p in $writers $reader $reader_d; do kill "$p" 2>/dev/null; done
  # Processes blocked on the mount (hard mount, server gone) end with the daemon.
  grep -q " $mnt " /proc/self/mountinfo && fusermount3 -u -z "$mnt"
  [ -n "$shim_pid" ] && kill "$shim_pid" 2>/dev/null && wait "$shim_pid" 2>/dev/null
  for p in $writers $reader $reader_d; do wait "$p" 2>/dev/null; done
  ganesha_stop "$work/state"
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  [ -f "$log" ] && { echo "--- daemon log (tail)" >&2; tail -25 "$log" >&2; }
  exit 1
}
[ -x "$io" ] || fail "$io missing (build target fuse_chaos_io)"
url="nfs://127.0.0.1/export?vers=$vers&$url_opts&nfsport=$port"
[ "$vers" = 3 ] && url="$url&mountport=$mnt_port"
log_opt=
[ -n "${CHAOS_LOG_LEVEL:-}" ] && log_opt=",log_level=$CHAOS_LOG_LEVEL"
t0=$(date +%s.%N)
elapsed() { awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f s", b - a }'; }

ganesha_start "$work/state" "$exp" "$port" "$mnt_port" VFS || fail "ganesha"
"$shim" "$url" "$mnt" -f -o log=file:"$log$log_opt"${CHAOS_SHIM_OPTS:+,$CHAOS_SHIM_OPTS} &
shim_pid=$!
for i in $(seq 200); do
  grep -q " $mnt .* fuse.nfsshim-fuse " /proc/self/mountinfo && break
  kill -0 "$shim_pid" 2>/dev/null || fail "nfsshim-fuse exited before mounting"
  sleep 0.05
done
grep -q " $mnt .* fuse.nfsshim-fuse " /proc/self/mountinfo || fail "$mnt did not become a mount"

# The daemon's established connections to ganesha, as local (source) ports.
conns() { ss -Htnp state established "( dport = :$port )" | grep "pid=$shim_pid," | awk '{print $3}' | sed 's/.*://'; }
count() { grep -c "$1" "$log"; }
for i in $(seq 100); do [ "$(conns | wc -l)" -eq $nconn ] && break; sleep 0.05; done
[ "$(conns | wc -l)" -eq $nconn ] || fail "expected $nconn connections from the daemon, have: $(conns | tr '\n' ' ')"
mounted=$(grep -m1 ' mounted .* on ' "$log" | sed 's/.* on [^ ]* //')
echo "mounted $url $mounted"
case $url_opts in
*io=uring*) echo "$mounted" | grep -q io_uring || fail "io=uring asked, the daemon runs: $mounted" ;;
*io=epoll*) echo "$mounted" | grep -q epoll || fail "io=epoll asked, the daemon runs: $mounted" ;;
esac

"$io" write "$mnt/a" $mib_a 4 1 > "$work/write_a.out" || fail "writing A: $(cat "$work/write_a.out")"
echo "A: $(cat "$work/write_a.out") ($(elapsed))"
[ "$(count ' lost: ')" -eq 0 ] || fail "connections lost before any fault"
# v4.1: the session is made on connection 0, the others are bound to it at the mount.
bind_re='bound to the session (BIND_CONN_TO_SESSION)'
binds_at_mount=$(count "$bind_re")
[ "$vers" = 3 ] || [ "$binds_at_mount" -eq $((nconn - 1)) ] ||
  fail "$binds_at_mount of $nconn connections bound to the session at the mount, not $((nconn - 1))"
if [ "$mode" = integrity ]; then
  # D: written straight into the export (by the server's file system, not through NFS).
  "$io" write "$exp/d" $mib_a 2 4 > "$work/write_d.out" || fail "writing D in the export: $(cat "$work/write_d.out")"
  echo "D (in the export dir): $(cat "$work/write_d.out")"
fi

# The transfer under fault: B1, B2 written, A read, all through the mount.
# kill-conn: the writers go on (pass after pass) until a drop has caught calls in flight,
# however quickly this machine writes MIB_B.
again=
[ "$mode" = kill-conn ] && again=$work/flags/stop_writers
for k in 1 2; do
  "$io" write "$mnt/b$k" "$mib_b" 2 $((k + 1)) "$work/flags/b${k}_started" 24 $again > "$work/write_b$k.out" 2>&1 &
  writers="$writers $!"
done
running() { for p in $writers $reader; do kill -0 "$p" 2>/dev/null || return 1; done; }
"$io" read "$mnt/a" $mib_a 2 1 "$work/flags/stop_reader" > "$work/read_a.out" 2>&1 &
reader=$!
if [ "$mode" = integrity ]; then
  "$io" read "$mnt/d" $mib_a 2 4 "$work/flags/stop_reader" > "$work/read_d.out" 2>&1 &
  reader_d=$!
fi
for i in $(seq 1200); do
  [ -e "$work/flags/b1_started" ] && [ -e "$work/flags/b2_started" ] && break
  running || break
  sleep 0.05
done
[ "$mode" = integrity ] || running || fail "the transfer ended before the fault (raise NFSSHIM_CHAOS_MIB): $(cat "$work"/write_b*.out)"
case $mode in
kill-conn)
  # One connection per drop. A drop between two requests re-sends nothing, so drop again
  # (one at a time, with all 4 up again) until one had requests in flight to re-send. The
  # first drop hits the writers and the reader; the reader goes on until we stop it.
  drops=0 resent=0
  # Under TSan (calls are short against the daemon's own slow work) most drops catch none:
  # go on while the transfer lasts (200 drops at most).
  while [ $drops -lt 200 ] && [ "$resent" -eq 0 ] && running; do
    for i in $(seq 100); do [ "$(conns | wc -l)" -eq $nconn ] && break; sleep 0.02; done
    # v4.1: the last dropped connection is bound to the session again (not dropped mid-bind).
    for i in $(seq 100); do
      [ "$vers" = 3 ] || [ $(($(count "$bind_re") - binds_at_mount)) -ge $drops ] && break
      sleep 0.02
    done
    before=$(conns | tr '\n' ' ')
    [ "$(conns | wc -l)" -eq $nconn ] || fail "the daemon has not $nconn connections before a drop: $before"
    # Prefer one with bytes queued (Recv-Q or Send-Q): requests in flight; look for one for
    # up to 0.5 s, then take any at random. (Taking the first by port picked the connection
    # just re-made after the last drop, still without calls, again and again under TSan.)
    busy=
    for i in $(seq 50); do
      busy=$(ss -Htnp state established "( dport = :$port )" | grep "pid=$shim_pid," |
             awk '$1 > 0 || $2 > 0' | shuf -n 1)
      [ -n "$busy" ] && break
      sleep 0.01
    done
    [ -n "$busy" ] || busy=$(ss -Htnp state established "( dport = :$port )" | grep "pid=$shim_pid," | shuf -n 1)
    sport=$(echo "$busy" | awk '{print $3}' | sed 's/.*://')
    killed=$(ss -K -Htn state established "( sport = :$sport and dport = :$port )")
    [ -n "$killed" ] || fail "ss -K dropped nothing (kernel without CONFIG_INET_DIAG_DESTROY?)"
    drops=$((drops + 1))
    [ $drops -gt 1 ] || running || fail "the writers had ended before the first drop"
    for i in $(seq 100); do [ "$(count ' lost: ')" -ge $drops ] && break; sleep 0.01; done
    [ "$(count ' lost: ')" -eq $drops ] || fail "drop $drops: the daemon logged $(count ' lost: ') lost connections"
    resent=$(grep ' lost: ' "$log" | tail -1 | sed -n "$inflight_sed")
    echo "drop $drops: the connection from port $sport (of: $before) mid-transfer, $resent requests in flight re-sent ($(elapsed))"
  done
  touch "$work/flags/stop_writers"
  [ "${resent:-0}" -gt 0 ] || fail "no drop caught requests in flight in $drops drops"
  ;;
restart|outage)
  ganesha_crash "$work/state"
  echo "ganesha killed (SIGKILL) mid-transfer ($(elapsed)), kept down $down_s s"
  sleep "$down_s"
  ganesha_start "$work/state" "$exp" "$port" "$mnt_port" VFS || fail "ganesha restart"
  echo "ganesha restarted ($(elapsed))"
  ;;
integrity) ;;
esac
case $mode in restart|outage) ;; *) false ;; esac && ! running &&
  fail "the transfer had ended before the restart took effect: $(cat "$work"/write_b*.out)"
for p in $writers; do wait $p || fail "a writer of B saw an error: $(cat "$work"/write_b*.out)"; done
writers=
touch "$work/flags/stop_reader"
wait $reader
rc=$?
reader=
[ $rc -eq 0 ] || fail "the reader of A saw an error: $(cat "$work/read_a.out")"
echo "B1, B2: $(cat "$work"/write_b*.out | tr '\n' ';') ($(elapsed))"
echo "A $([ "$mode" = integrity ] && echo meanwhile || echo "under fault"): $(cat "$work/read_a.out")"
if [ -n "$reader_d" ]; then
  wait $reader_d
  rc=$?
  reader_d=
  [ $rc -eq 0 ] || fail "the reader of D (through the mount) saw an error: $(cat "$work/read_d.out")"
  echo "D through the mount, meanwhile: $(cat "$work/read_d.out")"
fi

# Every byte, through the mount (from the server: each open drops the page cache) and on disk.
for k in 1 2; do
  "$io" read "$mnt/b$k" "$mib_b" 4 $((k + 1)) > "$work/verify.out" 2>&1 ||
    fail "B$k through the mount: $(cat "$work/verify.out")"
  echo "B$k through the mount: $(cat "$work/verify.out")"
done
for f in "a $mib_a 1" "b1 $mib_b 2" "b2 $mib_b 3"; do
  set -- $f
  size=$(stat -c %s "$exp/$1")
  [ "$size" -eq $(($2 << 20)) ] || fail "$1 in the export has $size bytes, not $2 MiB"
  "$io" read "$exp/$1" "$2" 2 "$3" > "$work/verify.out" 2>&1 || fail "$1 in the export: $(cat "$work/verify.out")"
  echo "$1 in the export dir: $(cat "$work/verify.out")"
done

# The fault reached the daemon and it recovered (not a run where nothing happened).
for i in $(seq 100); do [ "$(conns | wc -l)" -eq $nconn ] && break; sleep 0.05; done
[ "$(conns | wc -l)" -eq $nconn ] || fail "the daemon has $(conns | wc -l) connections after recovery, not $nconn"
lost=$(count ' lost: ') reconn=$(count "$reconn_re")
echo "daemon log: $lost connection(s) lost, $reconn reconnected"
grep -E ' lost: |reconnected|verifier changed|nfs41: (session|client id|re-open|server)|BIND_CONN' "$log" | sed 's/^/  /'
case $mode in
kill-conn)
  [ "$lost" -eq $drops ] || fail "expected $drops lost connections in the daemon log, found $lost"
  [ "$reconn" -eq $drops ] || fail "$drops connections dropped but $reconn reconnected"
  ;;
restart|outage)
  [ "$(grep ' lost: ' "$log" | sed -n "$conn_sed" | sort -u | wc -l)" -eq $nconn ] ||
    fail "expected all $nconn connections lost, found $lost lost"
  [ "$reconn" -ge $nconn ] || fail "expected $nconn reconnects, found $reconn"
  [ "$(count 'write verifier changed')" -ge 1 ] ||
    fail "no UNSTABLE data re-sent after the restart (write verifier unchanged?)"
  ;;
integrity)
  [ "$lost" -eq 0 ] || fail "$lost connection(s) lost without a fault"
  ;;
esac
if [ "$vers" = 4.1 ]; then
  binds=$(($(count "$bind_re") - binds_at_mount))
  echo "nfs41: $binds connection(s) bound to the session again after the mount"
  [ "$(count 'nfs41: re-open of')" -eq 0 ] || fail "files not re-opened: $(grep 'nfs41: re-open of' "$log" | head -3)"
  case $mode in
  kill-conn)
    # The session lived on: the dropped connection was bound to it again, nothing re-made.
    [ "$binds" -eq $drops ] || fail "$drops connections dropped but $binds bound to the session again"
    [ "$(count 'nfs41: session lost\|nfs41: client id lost')" -eq 0 ] ||
      fail "the session did not survive a dropped connection"
    ;;
  outage)
    # The application was blocked, not failed, and the log said why (once, not per call).
    n=$(count 'not responding, still trying')
    [ "$n" -ge 1 ] || fail "the server was away ${down_s} s and the daemon never logged 'not responding'"
    ok=$(count 'nfs41: server .* OK$')
    echo "nfs41: 'not responding' logged $n time(s), 'OK' $ok"
    # Once per outage (the kernel's way), not once per call that timed out (150 before).
    [ "$n" -le 3 ] && [ "$ok" -ge 1 ] || fail "'not responding' logged $n times, 'OK' $ok times in one outage"
    ;;&
  restart|outage)
    # The restarted server knows neither session nor client id: a new one, files re-opened.
    [ "$(count 'nfs41: client id lost')" -ge 1 ] || fail "no new client id after the restart"
    [ "$binds" -ge $((nconn - 1)) ] || fail "only $binds connections bound to the new session"
    ;;
  integrity)
    [ "$binds" -eq 0 ] && [ "$(count 'nfs41: session lost\|nfs41: client id lost\|BIND_CONN_TO_SESSION failed')" -eq 0 ] ||
      fail "session recovery without a fault"
    ;;
  esac
fi
fusermount3 -u "$mnt" || fail "fusermount3 -u"
echo "PASS: $mode vers=$vers $url_opts ($(elapsed))"
