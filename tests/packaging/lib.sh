# Shared by the packaging tests (sourced). Environment from CMakeLists.txt:
#   PKG_SRC   the source tree (packaged from its git work tree, see make-tarball.sh)
#   PKG_OUT   where the build tests leave the packages for the others (per build dir)
set -uo pipefail
SRC=${PKG_SRC:?}
OUT=${PKG_OUT:?}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
VERSION=$(sed -n 's/^project(nfsshim VERSION \([0-9.]*\).*/\1/p' "$SRC/CMakeLists.txt")

fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "PASS: $*"; }
skip() { echo "SKIP: $*"; exit 77; }
need() { local c; for c in "$@"; do command -v "$c" >/dev/null || skip "$c not installed (tools/dev/install-deps.sh)"; done; }

# Compare the sorted lines of two files; show the difference on failure.
same_lines() {  # EXPECTED ACTUAL WHAT
  if ! diff -u <(LC_ALL=C sort -u "$1") <(LC_ALL=C sort -u "$2") >"$OUT/diff.$$"; then
    cat "$OUT/diff.$$" >&2
    rm -f "$OUT/diff.$$"
    fail "$3: file list differs from the expected one (- expected, + actual)"
  fi
  rm -f "$OUT/diff.$$"
}
