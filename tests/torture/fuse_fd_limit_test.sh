#!/bin/bash
# Regression test for a bug the torture suite found (CTest torture.*). Needs root, /dev/fuse.
# nfsshim-fuse keeps one O_PATH descriptor per inode the kernel knows (fusefs/fs.cc, the
# openat(..., O_PATH | O_NOFOLLOW) in lookup) and did not raise its soft RLIMIT_NOFILE
# (libfuse's passthrough_hp raises it to the hard limit). With the usual soft limit of 1024,
# creating the ~1010th file in the mount failed with EMFILE ("Too many open files") in the
# application. main.cc now takes the hard limit at start.
# usage: NFSSHIM_BUILD=DIR fuse_fd_limit_test.sh [COUNT]
set -u
BUILD=${NFSSHIM_BUILD:-/work/main/build}
n=${1:-3000}
d=$(mktemp -d /tmp/nfsshim-fdlimit.XXXXXX); mkdir "$d/b" "$d/m"
trap 'fusermount3 -u -z "$d/m" 2>/dev/null; rm -rf "$d"' EXIT
(ulimit -Sn 1024; exec env -u NFSSHIM_BUILD "$BUILD/fusefs/nfsshim-fuse" "$d/b" "$d/m" -f) &
for i in $(seq 100); do grep -q " $d/m " /proc/mounts && break; sleep 0.05; done
for i in $(seq "$n"); do
  if ! echo x > "$d/m/f$i"; then echo "FAIL: creating file $i of $n in the mount failed"; exit 1; fi
done
echo "PASS: $n files created through the mount with the daemon's soft fd limit at 1024"
