#!/bin/bash
# test.sh: the whole test suite, as CI runs it (.ci/run calls exactly this).
# Installs what is missing, builds, starts the NFS lab (nfs-ganesha + user-mode-linux),
# runs every test, then the sanitizer builds (ASan+UBSan, TSan) on the tests that run
# our code in-process, and stops everything it started. Needs root.
#   NFSSHIM_SKIP_SANITIZERS=1  skip the two sanitizer builds (quick local runs)
#   NFSSHIM_SKIP_FUZZ=1        skip the fuzz smoke run (tools/dev/fuzz.sh 20: clang build, 20 s per target)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
jobs=$(nproc)

"$root/tools/dev/install-deps.sh"

export NFSSHIM_LAB=${NFSSHIM_LAB:-/tmp/nfsshim-lab}
cleanup() {
  set +e  # the exit status is the tests', whatever cleaning up finds
  "$root/tests/lab/lab.sh" down >/dev/null 2>&1
  # FUSE mounts a failed test may have left behind in our build trees.
  grep -o " $root/build-[^ ]*" /proc/mounts | while read -r m; do fusermount3 -u -z "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; done
  # Servers a failed test may have left running: anything still working in our build trees.
  local p cwd
  for p in /proc/[0-9]*; do
    cwd=$(readlink "$p/cwd" 2>/dev/null) || continue
    case $cwd in "$root"/build-*) kill -9 "${p#/proc/}" 2>/dev/null ;; esac
  done
  return 0
}
trap cleanup EXIT

build() {  # build DIR [cmake args...]
  local dir=$1; shift
  cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
  cmake --build "$dir" -j "$jobs"
}

status=0
summary=()
run() {  # run NAME DIR ctest-args...
  local name=$1 dir=$2; shift 2
  echo "=== $name"
  if (cd "$dir" && ctest --output-on-failure -j "$jobs" "$@"); then summary+=("$name: ok")
  else summary+=("$name: FAILED"); status=1; fi
}

build build-ci
run "all tests" build-ci

if [ "${NFSSHIM_SKIP_SANITIZERS:-0}" != 1 ]; then
  build build-asan -DNFSSHIM_SANITIZE=address,undefined
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 run "ASan+UBSan" build-asan -L _san
  build build-tsan -DNFSSHIM_SANITIZE=thread
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" run "TSan" build-tsan -L _san
fi

if [ "${NFSSHIM_SKIP_FUZZ:-0}" != 1 ]; then
  if "$root/tools/dev/fuzz.sh" 20; then summary+=("fuzz: ok"); else summary+=("fuzz: FAILED"); status=1; fi
fi

echo "=== summary"
printf '%s\n' "${summary[@]}"
exit $status
