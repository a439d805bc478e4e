#!/bin/bash
# engine_test.sh BIN PORT MNT_PORT QUERY [gtest args...]
# Starts a private nfs-ganesha (FSAL VFS, NFSv3) on 127.0.0.1:PORT/MNT_PORT with a fresh
# export directory, runs BIN (engine_test) against nfs://127.0.0.1/export?...&QUERY and
# stops the server on every exit path; if BIN fails, the end of the server's log is printed.
set -euo pipefail
bin=$1 port=$2 mnt_port=$3 query=$4
shift 4
here=$(cd "$(dirname "$0")" && pwd)
. "$here/ganesha.sh"
work=$(mktemp -d /tmp/nfsshim-engine.XXXXXX)
cleanup() { ganesha_stop "$work/state"; rm -rf "$work"; }
trap cleanup EXIT
ganesha_start "$work/state" "$work/export" "$port" "$mnt_port" VFS
export NFSSHIM_TEST_URL="nfs://127.0.0.1/export?vers=3&nfsport=$port&mountport=$mnt_port&$query"
export NFSSHIM_TEST_EXPORT="$work/export"
echo "URL: $NFSSHIM_TEST_URL"
rc=0
"$bin" "$@" || rc=$?
if ((rc)); then  # what the server said about it (it logs errors at EVENT level and up)
  echo "--- ganesha's log, its last lines:"
  grep -v DBUS "$work/state/ganesha.log" | tail -30 || true
fi
exit $rc
