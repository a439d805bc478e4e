#!/bin/bash
# ganesha_test.sh TEST_BINARY [ARGS]: runs the nfs4 protocol tests against a private
# nfs-ganesha on 127.0.0.1:$NFS4_TEST_PORT (default 32049), with its own state and
# export dirs under a fresh temp dir; stops it and removes the dirs on every exit path.
# Needs root (mount namespace) and nfs-ganesha + nfs-ganesha-vfs.
# NFS4_RECORD_DIR=DIR saves the reply bytes of some compounds there (how
# tests/nfs4/replies/ was made).
set -euo pipefail
BIN=$1; shift
here=$(cd "$(dirname "$0")" && pwd)
ADDR=127.0.0.1
PORT=${NFS4_TEST_PORT:-32049}
root=$(mktemp -d /tmp/nfsshim-nfs4.XXXXXX)
PID=
cleanup() {
  set +e
  if [ -n "$PID" ]; then
    kill "$PID" 2>/dev/null
    for _ in $(seq 100); do kill -0 "$PID" 2>/dev/null || break; sleep 0.05; done
    kill -9 "$PID" 2>/dev/null
  fi
  rm -rf "$root"
}
trap cleanup EXIT

out=$("$here/ganesha_up.sh" "$root/state" "$root/export" "$ADDR" "$PORT")
PID=$(sed -n 's/^GANESHA_PID=//p' <<<"$out")
[ -n "$PID" ] || { echo "no ganesha pid: $out" >&2; exit 1; }

status=0
NFS4_TEST_ADDR=$ADDR NFS4_TEST_PORT=$PORT NFS4_EXPORT_DIR=$root/export "$BIN" "$@" || status=$?
if [ $status != 0 ]; then
  echo "--- ganesha log" >&2
  tail -n 40 "$root/state/ganesha.log" >&2
fi
exit $status
