#!/bin/bash
# uml_sweep.sh PRELOAD_LIB: runs guest_sweep.sh in a UML guest on the lab's NFS export.
set -euo pipefail
lib=$1
here=$(cd "$(dirname "$0")" && pwd)
export NFSSHIM_LAB=${NFSSHIM_LAB:-/tmp/nfsshim-lab}
exp=$NFSSHIM_LAB/exp
find "$exp" -mindepth 1 -delete 2>/dev/null || true
# Another host's silly-rename leftover, as the server stores it.
mkdir -p "$exp/b" && echo foreign > "$exp/b/.nfs000000000012abcd00000001"
"$here/../lab/uml-run.sh" -o vers=4.1 -- "$here/guest_sweep.sh" "$lib"
find "$exp" -mindepth 1 -delete 2>/dev/null || true
echo PASS
