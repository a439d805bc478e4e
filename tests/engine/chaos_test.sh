#!/bin/bash
# chaos_test.sh BIN MODE PORT MNT_PORT
# The engine under connection loss, against a private nfs-ganesha (FSAL VFS):
#   kill-conn  drop one of the 4 TCP connections (ss -K) three times mid-transfer
#   restart    stop ganesha (SIGKILL) mid-transfer and start it again: every connection is
#              lost, UNSTABLE data written before the restart must be re-sent (verifier)
# chaos_test (BIN) checks that no byte is lost or corrupted. Stops everything it started.
set -uo pipefail
bin=$1 mode=$2 port=$3 mnt_port=$4
here=$(cd "$(dirname "$0")" && pwd)
. "$here/ganesha.sh"
work=$(mktemp -d /tmp/nfsshim-chaos.XXXXXX)
pid=
cleanup() {
  set +e
  [ -n "$pid" ] && kill "$pid" 2>/dev/null
  ganesha_stop "$work/state"
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
ganesha_start "$work/state" "$work/export" "$port" "$mnt_port" VFS || fail "ganesha"
mkdir -p "$work/flags"
url="nfs://127.0.0.1/export?vers=3&nfsport=$port&mountport=$mnt_port&nconnect=4&timeo=50&retrans=3"
case $mode in
  kill-conn) min_reconnects=3 min_resent=0 ;;
  restart) min_reconnects=4 min_resent=1 ;;
  soft-down) min_reconnects=soft min_resent=0; url="${url/retrans=3/retrans=1}&soft" ;;
  *) echo "unknown mode $mode" >&2; exit 2 ;;
esac
"$bin" "$url" "$work/export" "$work/flags" $min_reconnects $min_resent &
pid=$!
for i in $(seq 600); do [ -e "$work/flags/ready" ] && break; kill -0 $pid 2>/dev/null || break; sleep 0.05; done
[ -e "$work/flags/ready" ] || fail "workload did not start"
conns() { ss -Htn state established "( dport = :$port )" | awk '{print $3}' | sed 's/.*://' ; }
echo "connections (client ports): $(conns | tr '\n' ' ')"
if [ "$mode" = soft-down ]; then
  ganesha_stop "$work/state"
  echo "ganesha stopped"
elif [ "$mode" = kill-conn ]; then
  for round in 1 2 3; do
    sport=$(conns | head -1)
    [ -n "$sport" ] || fail "no established connection to kill"
    ss -K -t state established "( sport = :$sport and dport = :$port )" >/dev/null
    echo "round $round: killed the connection from port $sport"
    sleep 1
  done
else
  sleep 0.5
  ganesha_crash "$work/state"
  echo "ganesha killed (SIGKILL) mid-transfer"
  sleep 1
  ganesha_start "$work/state" "$work/export" "$port" "$mnt_port" VFS || fail "ganesha restart"
  echo "ganesha restarted"
  sleep 2
fi
touch "$work/flags/stop"
wait $pid
rc=$?
pid=
[ $rc -eq 0 ] || fail "chaos_test ($mode) exit $rc"
echo "PASS: $mode"
