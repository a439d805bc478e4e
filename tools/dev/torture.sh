#!/bin/bash
# torture.sh [--minutes N] [other tests/torture/torture.sh options]
# The full torture run (tests/torture/README.md): builds what it needs in $NFSSHIM_BUILD
# (default build-torture next to the sources), then runs every phase with N minutes of
# load in all (default 30) and a directory of 1e6 entries, and prints the table of
# figures. Needs root. Exit status: 0 every check passed, 1 a check failed, 2 setup.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${NFSSHIM_BUILD:-$root/build-torture}
args=("$@")
[[ " ${args[*]-} " == *" --minutes "* ]] || args=(--minutes 30 "${args[@]}")
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$(nproc)" --target torture_driver nfsshim-preload nfsshim-fuse nfsshim crash_helper
NFSSHIM_BUILD=$build exec "$root/tests/torture/torture.sh" "${args[@]}"
