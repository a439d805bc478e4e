#!/bin/bash
# demo.sh: set everything up and run the main job on a fresh Debian 12 machine (root).
# Installs the packages, builds, starts the NFS lab (nfs-ganesha in a network namespace,
# the real Linux NFS client in user-mode-linux), and runs a Kafka broker's
# partition-delete pattern (a JVM program, then a native one) on the NFS mount
# (vers=4.1, the NetApp guidance for Kafka): first without the shim (it fails the way a
# broker does: DirectoryNotEmptyException, .nfsXXXX files), then with it (it passes,
# and the graveyard is empty afterwards). Stops everything it started.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
"$root/tools/dev/install-deps.sh"
cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$root/build" -j "$(nproc)"
export NFSSHIM_LAB=${NFSSHIM_LAB:-/tmp/nfsshim-lab} NFSSHIM_BUILD=$root/build
trap '"$root/tests/lab/lab.sh" down >/dev/null 2>&1 || true' EXIT
"$root/tests/lab/lab.sh" up --v3
for kind in java native; do
  "$root/tests/kafka/uml_pattern.sh" "$kind" "${NFSSHIM_DEMO_VERS:-4.1}" "$root/build/preload/libnfsshim-preload.so"
done
echo "demo: the broker's delete pattern fails on NFS without nfsshim and passes with it."
