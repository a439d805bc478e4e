#!/bin/bash
# install-deps.sh: every Debian 12 package the build, the tests and the lab need.
# Idempotent; run as root (CI runs as root).
set -euo pipefail
pkgs=(
  build-essential cmake pkg-config git
  libspdlog-dev libfmt-dev libgtest-dev libgmock-dev libbenchmark-dev
  libfuse3-dev fuse3 liburing-dev libnfs-dev libnfs-utils
  bindfs openjdk-17-jdk-headless
  nfs-ganesha nfs-ganesha-vfs nfs-ganesha-mem rpcbind
  user-mode-linux kmod iproute2 procps psmisc
  strace   # tests/preload/failed_restore.sh injects syscall failures
  prometheus   # promtool, to check `nfsshim stat --prometheus`
  rpm rpm2cpio cpio rpmlint   # tests/packaging: rpmbuild of the EL8 spec, rpmlint
  debhelper dpkg-dev fakeroot lintian systemd   # tests/packaging: .deb build, lintian, systemd-analyze
  clang libclang-rt-14-dev gnuplot-nox   # tests/fuzz (libFuzzer, tools/dev/fuzz.sh), tools/bench/report.sh plots
)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# ganesha's packaged service must not hold port 2049: the lab runs its own.
systemctl disable --now nfs-ganesha 2>/dev/null || true
echo "install-deps: all ${#pkgs[@]} packages present"
