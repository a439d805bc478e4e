#!/bin/bash
# uml_nfs_test.sh [VERS]: nfsshim-fuse with the REAL Linux NFS client as SOURCE. Boots one
# user-mode-linux guest (tests/lab/uml-run.sh) that mounts the lab's nfs-ganesha export
# (vers=VERS, default 4.1) and runs guest_nfs.sh there: the Kafka pattern fails directly
# on NFS, and passes (native and JVM, no preload) through nfsshim-fuse mounted over the NFS
# mount. Then the server's side is checked: no .nfs* file and no graveyard entry left.
# Needs the lab: tests/lab/lab.sh up (CTest fixture nfslab).
set -euo pipefail
vers=${1:-4.1}
here=$(cd "$(dirname "$0")" && pwd)
lab=$here/../lab
export NFSSHIM_LAB=${NFSSHIM_LAB:-/tmp/nfsshim-lab}
labdir=$(cd "$NFSSHIM_LAB" && pwd -P)
exp=$labdir/exp
find "$exp" -mindepth 1 -delete 2>/dev/null || true
rc=0
"$lab/uml-run.sh" -o "vers=$vers" -T 400 -e NFSSHIM_BUILD -e "MODROOT=$labdir/uml/modroot" -- \
  "$here/guest_nfs.sh" || rc=$?
[ $rc = 0 ] || { echo "FAIL: guest exit status $rc"; exit 1; }
silly=$(find "$exp" -name '.nfs*' -o -name '.fuse_hidden*' | grep -v '/.graveyard.nfsshim$' || true)
[ -z "$silly" ] || { echo "FAIL: server still holds silly-rename files: $silly"; exit 1; }
left=$(find "$exp/.graveyard.nfsshim" -mindepth 2 2>/dev/null || true)
[ -z "$left" ] || { echo "FAIL: graveyard entries left on the server: $left"; exit 1; }
[ -d "$exp/.graveyard.nfsshim" ] || { echo "FAIL: nfsshim-fuse never made its graveyard on the server"; exit 1; }
echo "PASS: Kafka pattern (native, java) through nfsshim-fuse over NFS vers=$vers (real Linux client in UML, nfs-ganesha)"
