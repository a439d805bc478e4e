#!/bin/bash
# ganesha_test.sh PORT TEST_BINARY [ARGS]: runs NFSv4.1 engine tests against a private
# nfs-ganesha on 127.0.0.1:PORT with its own state and export dirs under a fresh temp
# dir; stops it and removes the dirs on every exit path. Needs root (mount namespace)
# and nfs-ganesha + nfs-ganesha-vfs. The test binary gets NFS41_TEST_ADDR/PORT,
# NFS41_EXPORT_DIR, NFS41_RESTART (kill -9 ganesha and start it again on the same port,
# state and export) and NFS41_STOP (kill -9 only).
set -euo pipefail
PORT=$1 BIN=$2; shift 2
here=$(cd "$(dirname "$0")" && pwd)
# A short lease, so that "idle for twice the lease" is quick (tests/nfs4/ganesha_up.sh).
export GANESHA_LEASE=${NFS41_LEASE:-5}
ADDR=127.0.0.1
root=$(mktemp -d /tmp/nfsshim-nfs41.XXXXXX)
cleanup() {
  set +e
  local pid
  pid=$(cat "$root/pid" 2>/dev/null)
  if [ -n "$pid" ]; then
    kill "$pid" 2>/dev/null
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    kill -9 "$pid" 2>/dev/null
  fi
  rm -rf "$root"
}
trap cleanup EXIT

# restart.sh: stop the running ganesha (SIGKILL: a crash, nothing flushed) and start a
# new one with the same config; the pid file follows, so cleanup stops the new one.
cat > "$root/restart.sh" <<RESTART
#!/bin/bash
set -eu
pid=\$(cat "$root/pid")
kill -9 "\$pid" 2>/dev/null || true
for _ in \$(seq 200); do kill -0 "\$pid" 2>/dev/null || break; sleep 0.05; done
out=\$("$here/../nfs4/ganesha_up.sh" "$root/state" "$root/export" "$ADDR" "$PORT")
sed -n 's/^GANESHA_PID=//p' <<<"\$out" > "$root/pid"
RESTART
chmod +x "$root/restart.sh"
# stop.sh: kill -9 only (the soft-mount test); restart.sh brings it back.
cat > "$root/stop.sh" <<STOP
#!/bin/bash
pid=\$(cat "$root/pid")
kill -9 "\$pid" 2>/dev/null || true
for _ in \$(seq 200); do kill -0 "\$pid" 2>/dev/null || break; sleep 0.05; done
STOP
chmod +x "$root/stop.sh"

out=$("$here/../nfs4/ganesha_up.sh" "$root/state" "$root/export" "$ADDR" "$PORT")
sed -n 's/^GANESHA_PID=//p' <<<"$out" > "$root/pid"
[ -s "$root/pid" ] || { echo "no ganesha pid: $out" >&2; exit 1; }

status=0
NFS41_TEST_ADDR=$ADDR NFS41_TEST_PORT=$PORT NFS41_EXPORT_DIR=$root/export \
  NFS41_RESTART=$root/restart.sh NFS41_STOP=$root/stop.sh "$BIN" "$@" || status=$?
if [ $status != 0 ]; then
  echo "--- ganesha log" >&2
  tail -n 40 "$root/state/ganesha.log" >&2
fi
exit $status
