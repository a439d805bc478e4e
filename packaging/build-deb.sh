#!/bin/bash
# build-deb.sh OUTDIR [SRCROOT]: builds the Debian packages nfsshim and nfsshim-fuse (and
# their -dbgsym) into OUTDIR. The tree is taken as make-tarball.sh takes it, unpacked in a
# temporary directory, packaging/debian copied to ./debian there, and built with
# `dpkg-buildpackage -b` (binary only, unsigned). Needs dpkg-dev, debhelper, fakeroot and
# the Build-Depends of packaging/debian/control. The version of debian/changelog must be
# the CMake project version (checked). Prints the paths of the .deb files.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: build-deb.sh OUTDIR [SRCROOT]}
src=${2:-$(cd "$here/.." && pwd)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d /tmp/nfsshim-deb.XXXXXX)
trap 'rm -rf "$work"' EXIT

tarball=$("$here/make-tarball.sh" "$work" "$src")
tar -xzf "$tarball" -C "$work"
tree=$(find "$work" -mindepth 1 -maxdepth 1 -type d -name 'nfsshim-*')
version=${tree##*/nfsshim-}
rm -rf "$tree/debian"
cp -r "$tree/packaging/debian" "$tree/debian"
deb_version=$(cd "$tree" && dpkg-parsechangelog -S Version)
if [ "${deb_version%-*}" != "$version" ]; then
  echo "build-deb: debian/changelog says $deb_version, CMakeLists.txt says $version" >&2
  exit 1
fi
# The orig tarball that a source upload would use (3.0 (quilt)); -b does not need it.
mv "$tarball" "$work/nfsshim_$version.orig.tar.gz"

(cd "$tree" && DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:-} parallel=$(nproc)" \
   dpkg-buildpackage -b -us -uc) >"$work/build.log" 2>&1 || {
  tail -60 "$work/build.log" >&2
  echo "build-deb: dpkg-buildpackage failed" >&2
  exit 1
}
cp "$work/build.log" "$out/build-deb.log"
for f in "$work"/*.deb "$work"/*.ddeb "$work"/*.changes "$work"/*.buildinfo; do
  [ -e "$f" ] && cp "$f" "$out/"
done
ls "$out"/*.deb
