#!/bin/bash
# uml_flush.sh PROBE PRELOAD_LIB: runs guest_flush.sh in a UML guest on the lab's NFS export.
set -euo pipefail
probe=$1 lib=$2
here=$(cd "$(dirname "$0")" && pwd)
export NFSSHIM_LAB=${NFSSHIM_LAB:-/tmp/nfsshim-lab}
exp=$NFSSHIM_LAB/exp
find "$exp" -mindepth 1 -delete 2>/dev/null || true
out=$("$here/../lab/uml-run.sh" -o vers=4.1 -- "$here/guest_flush.sh" "$probe" "$lib" 2>&1) || true
echo "$out"
find "$exp" -mindepth 1 -delete 2>/dev/null || true
grep -q "GUEST PASS" <<<"$out" || { echo FAIL; exit 1; }
echo PASS
