#!/bin/bash
# uml_xattr_test.sh: nfsshim-fuse (root, allow_other) must not let another user set or remove
# POSIX ACLs on files it does not own. Needs a kernel before 6.2 (there the ACL xattrs of a
# FUSE mount without FUSE_POSIX_ACL reach the daemon unchecked): boots one user-mode-linux
# guest (tests/lab/uml-run.sh -o none: Linux 6.1, no network, no lab) that runs
# guest_xattr.sh over a tmpfs SOURCE. Needs NFSSHIM_BUILD (set by CTest).
set -euo pipefail
: "${NFSSHIM_BUILD:?}"
here=$(cd "$(dirname "$0")" && pwd)
export NFSSHIM_LAB=${NFSSHIM_LAB:-/tmp/nfsshim-lab}
labdir=$(mkdir -p "$NFSSHIM_LAB" && cd "$NFSSHIM_LAB" && pwd -P)
rc=0
"$here/../lab/uml-run.sh" -o none -T 200 -e NFSSHIM_BUILD -e NFSSHIM_CONFIG=/dev/null \
  -e "MODROOT=$labdir/uml/modroot" -- "$here/guest_xattr.sh" || rc=$?
[ $rc = 0 ] || { echo "FAIL: guest exit status $rc"; exit 1; }
echo "PASS: POSIX ACL xattrs through nfsshim-fuse are set and removed as the caller (Linux 6.1 guest)"
