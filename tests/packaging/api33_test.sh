#!/bin/bash
# api33_test.sh SRC CXX: every fusefs source compiles at the libfuse 3.3 API level (EL8):
# -DNFSSHIM_LIBFUSE_VERSION=303 makes fuse_api.h pick FUSE_USE_VERSION 32 and the code
# take its pre-3.4 branches. Only the installed headers (Debian 12: libfuse 3.14) are here,
# so this is a syntax check at API 32, not a build against libfuse 3.3 (see
# packaging/PORTABILITY.md).
set -uo pipefail
src=${1:?usage: api33_test.sh SRC CXX}
cxx=${2:-c++}
command -v pkg-config >/dev/null && pkg-config --exists fuse3 spdlog || { echo "SKIP: no fuse3/spdlog pkg-config"; exit 77; }
flags="-std=c++17 -fsyntax-only -Wall -Wextra -Wshadow -Wno-missing-field-initializers -Werror
  -DNFSSHIM_LIBFUSE_VERSION=303 -I$src/fusefs -I$src/libshim/include
  $(pkg-config --cflags fuse3 spdlog)"
files=$(cd "$src" && find fusefs -name '*.cc' | sort)
[ -n "$files" ] || { echo "FAIL: no fusefs sources"; exit 1; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# shellcheck disable=SC2086
if ! (cd "$src" && printf '%s\n' $files | xargs -P "$(nproc)" -I{} sh -c "$cxx $(echo $flags) {} || { echo 'in {}'; exit 255; }") >"$log" 2>&1; then
  cat "$log"
  echo "FAIL: fusefs does not compile at NFSSHIM_LIBFUSE_VERSION=303"
  exit 1
fi
grep -q 'define FUSE_USE_VERSION 32' "$src/fusefs/fuse_api.h" || { echo "FAIL: fuse_api.h no longer picks API 32 below 3.12"; exit 1; }
echo "PASS: $(echo $files | wc -w) fusefs sources compile at the libfuse 3.3 API level (FUSE_USE_VERSION 32, 3.14 headers)"
