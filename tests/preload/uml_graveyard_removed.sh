#!/bin/bash
# uml_graveyard_removed.sh PROGRAM PRELOAD_LIB: graveyard_removed in a UML guest on the lab's
# NFS export (the real Linux NFS client), the graveyard removed on the server side, as by
# another NFS client or an operator there: the guest's descriptor of it then gives ESTALE.
set -euo pipefail
prog=$1 lib=$2
here=$(cd "$(dirname "$0")" && pwd)
export NFSSHIM_LAB=${NFSSHIM_LAB:-/tmp/nfsshim-lab}
lab=$(cd "$NFSSHIM_LAB" && pwd -P)
exp=$lab/exp
find "$exp" -mindepth 1 -delete 2>/dev/null || true
rc=0
out=$("$here/../lab/uml-run.sh" -o vers=4.1 -e LD_PRELOAD="$lib" -e NFSSHIM_WATCH="$lab/mnt" \
  -- "$prog" "$lab/mnt" "$exp" 2>&1) || rc=$?
echo "$out"
find "$exp" -mindepth 1 -delete 2>/dev/null || true
[ $rc = 0 ] && grep -q "^PASS" <<<"$out" || { echo "FAIL (exit $rc)"; exit 1; }
echo PASS
