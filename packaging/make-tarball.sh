#!/bin/bash
# make-tarball.sh OUTDIR [SRCROOT]: writes OUTDIR/nfsshim-VERSION.tar.gz (top directory
# nfsshim-VERSION/), the Source0 of packaging/rpm/nfsshim.spec and the tree that
# packaging/build-deb.sh builds. VERSION is project(... VERSION) of the top CMakeLists.txt.
# From a git work tree: every tracked file plus untracked files that are not ignored, as they
# are in the work tree (NFSSHIM_TARBALL_FROM=HEAD: `git archive HEAD` instead). Elsewhere:
# every file but build*/ and .git. Prints the path of the tarball.
set -euo pipefail
out=${1:?usage: make-tarball.sh OUTDIR [SRCROOT]}
src=${2:-$(cd "$(dirname "$0")/.." && pwd)}
src=$(cd "$src" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
version=$(sed -n 's/^project(nfsshim VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
[ -n "$version" ] || { echo "make-tarball: no project(nfsshim VERSION x.y.z) in $src/CMakeLists.txt" >&2; exit 1; }
name=nfsshim-$version
tarball=$out/$name.tar.gz
if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1 && \
   [ "$(git -C "$src" rev-parse --show-toplevel)" = "$src" ]; then
  if [ "${NFSSHIM_TARBALL_FROM:-}" = HEAD ]; then
    git -C "$src" archive --format=tar.gz --prefix="$name/" -o "$tarball" HEAD
  else
    # Tracked and untracked-but-not-ignored files that exist (deleted ones are skipped).
    (cd "$src" && git ls-files -z -co --exclude-standard | \
       while IFS= read -r -d '' f; do [ -e "$f" ] || [ -L "$f" ] && printf '%s\0' "$f"; done | \
       LC_ALL=C sort -z | \
       tar --null --no-recursion -T - --owner=0 --group=0 --numeric-owner \
           --transform "s,^,$name/," -czf "$tarball")
  fi
else
  (cd "$src" && find . -mindepth 1 \( -path './build*' -o -path './.git' -o -path './debian' \) -prune -o -print0 | \
     LC_ALL=C sort -z | \
     tar --null --no-recursion -T - --owner=0 --group=0 --numeric-owner \
         --transform "s,^\./,$name/," -czf "$tarball")
fi
echo "$tarball"
