#!/bin/bash
# guest_flush.sh PROBE PRELOAD_LIB  (inside the UML guest, cwd = the NFS mount)
# An unlink of an open file under the preload sends no more WRITEs than the plain unlink:
# the reference scan must not flush the process's other files (4 MiB unwritten here).
set -uo pipefail
probe=$1 lib=$2
fail() { echo "GUEST FAIL: $*"; exit 1; }
mkdir -p plain shim
plain=$("$probe" plain) || fail "probe without the preload"
shim=$(LD_PRELOAD=$lib NFSSHIM_WATCH=$PWD/shim "$probe" shim) || fail "probe under the preload"
echo "plain unlink: $plain; under the preload: $shim"
[ "$plain" = "writes 0" ] || fail "the plain unlink sent WRITEs ($plain): the case is not made"
[ "$shim" = "writes 0" ] || fail "the preload's unlink made the client write back another file ($shim)"
[ -z "$(ls -A shim/.graveyard.nfsshim/u0 2>/dev/null)" ] || fail "graveyard not empty"
ls -A shim/.graveyard.nfsshim >/dev/null 2>&1 || fail "the preload never used its graveyard: did it act?"
echo "GUEST PASS"
