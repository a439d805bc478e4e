#!/bin/bash
# uml_pattern.sh native|java VERS PRELOAD_LIB
# Boots a user-mode-linux guest that mounts the lab's nfs-ganesha export with the real
# Linux NFS client (vers=VERS) and runs guest_pattern.sh there; then checks the
# server's side: no .nfs* file and no graveyard entry left in the export.
set -euo pipefail
kind=$1 vers=$2 lib=$3
here=$(cd "$(dirname "$0")" && pwd)
lab=$here/../lab
export NFSSHIM_LAB=${NFSSHIM_LAB:-/tmp/nfsshim-lab}
exp=$NFSSHIM_LAB/exp
find "$exp" -mindepth 1 -delete 2>/dev/null || true
"$lab/uml-run.sh" -o "vers=$vers" -e NFSSHIM_BUILD -- "$here/guest_pattern.sh" "$kind" "$lib"
silly=$(find "$exp" -name '.nfs*' -o -name '.fuse_hidden*' | grep -v '/.graveyard.nfsshim$' || true)
[ -z "$silly" ] || { echo "FAIL: server still holds silly-rename files: $silly"; exit 1; }
left=$(find "$exp/.graveyard.nfsshim" -mindepth 2 2>/dev/null || true)
[ -z "$left" ] || { echo "FAIL: graveyard entries left on the server: $left"; exit 1; }
echo "PASS: $kind over NFS vers=$vers (real Linux client in UML, nfs-ganesha)"
