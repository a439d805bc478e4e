#!/bin/bash
# guest_load.sh SECONDS  (runs inside the UML guest, cwd = the NFS mount; see torture.sh's
# uml phase): the load with its workers under the preload, on the real Linux NFS client.
# The shim finds the mount by its statfs magic (no NFSSHIM_WATCH). The supervisor runs
# without the preload so that it sees the graveyard at the mount root.
# TORTURE_NO_SHIM=1: the workers run without the preload (the load must then fail).
set -u
secs=$1
b=$NFSSHIM_BUILD
mkdir -p torture
pre=(--worker-preload "$b/preload/libnfsshim-preload.so")
[ "${TORTURE_NO_SHIM:-0}" = 1 ] && pre=()
"$b/tests/torture/torture_driver" load --dir "$PWD/torture" --backing "$PWD" --procs 2 --threads 4 \
  --partitions 3 --seconds "$secs" --kill-every 15 --gc "$b/tools/nfsshim" --quiesce 30 \
  "${pre[@]}" --label uml-nfs-v${NFS_VERS:-4.1}
