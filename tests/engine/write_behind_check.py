#!/usr/bin/env python3
"""What an application sees of nfsshim-fuse's write-behind (fuse_nfs_test.sh write-behind).

  write_behind_check.py sizes PATH READYFILE STOPFILE
      creates READYFILE, then stat()s PATH until STOPFILE exists; fails (exit 1) if its size
      ever went down: a GETATTR answered before an answered write landed would set it back.
  write_behind_check.py nospc PATH MIB
      writes MIB MiB into PATH (1 MiB writes, then fsync, close) on a filesystem with less
      room; prints where ENOSPC came; fails if every call succeeded (a lost write error)
      or another error came.
  write_behind_check.py two-fds PATH KIB
      opens PATH twice, for writing (W) and for reading (R), writes KIB KiB through W (one
      write, answered before the server has it), waits 1 s, closes R, then fsyncs and closes
      W. On a filesystem with less room the write fails on the server meanwhile: its error
      belongs to W (the kernel's errseq: every descriptor open at the failure sees it once,
      at fsync, or at close if it can write), not to whoever closes first. Fails unless W's
      fsync reports ENOSPC; R's close must succeed (it wrote nothing).
  write_behind_check.py keep-open SRC DIR FILES MIB SECS
      writes the first MIB MiB of SRC into FILES files DIR/open<k> (1 MiB writes, no fsync),
      keeps all of them open for SECS seconds more, then closes them (as a broker keeps the
      active segment of each partition open).
"""
import errno
import os
import sys
import time


def sizes(path, readyfile, stopfile):
    last, seen, drops = -1, 0, []
    open(readyfile, "w").close()
    while not os.path.exists(stopfile):
        try:
            size = os.stat(path).st_size
        except FileNotFoundError:
            time.sleep(0.001)
            continue
        seen += 1
        if size < last:
            drops.append((last, size))
        last = max(last, size)
    print(f"sizes: {seen} stats, last size {last}, {len(drops)} drops {drops[:5]}")
    return 1 if drops or seen < 10 else 0


def nospc(path, mib):
    chunk = os.urandom(1 << 20)
    where = []
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for i in range(mib):
        try:
            os.write(fd, chunk)
        except OSError as e:
            where.append(f"write {i}: {errno.errorcode.get(e.errno, e.errno)}")
            if e.errno != errno.ENOSPC:
                break
    for name, call in (("fsync", os.fsync), ("close", os.close)):
        try:
            call(fd)
        except OSError as e:
            where.append(f"{name}: {errno.errorcode.get(e.errno, e.errno)}")
    print("nospc: " + ("; ".join(where) if where else "no error"))
    if not where:
        return 1  # MIB MiB cannot fit: an error was lost
    return 0 if all(w.endswith("ENOSPC") for w in where) else 1


def two_fds(path, kib):
    w = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    r = os.open(path, os.O_RDONLY)
    got = os.write(w, os.urandom(kib << 10))
    time.sleep(1)
    said = {}
    for name, call in (("R close", lambda: os.close(r)), ("W fsync", lambda: os.fsync(w)),
                       ("W close", lambda: os.close(w))):
        try:
            call()
            said[name] = "ok"
        except OSError as e:
            said[name] = errno.errorcode.get(e.errno, str(e.errno))
    print(f"two-fds: W wrote {got} bytes; " + ", ".join(f"{k}: {v}" for k, v in said.items()))
    return 0 if said["W fsync"] == "ENOSPC" and said["R close"] == "ok" else 1


def keep_open(src, d, files, mib, secs):
    with open(src, "rb") as f:
        data = f.read(mib << 20)
    fds = [os.open(os.path.join(d, f"open{k}"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
           for k in range(files)]
    for fd in fds:
        for i in range(mib):
            os.write(fd, data[i << 20:(i + 1) << 20])
    time.sleep(secs)
    for fd in fds:
        os.close(fd)
    print(f"keep-open: {files} files of {mib} MiB written, kept open {secs} s more")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 7 and sys.argv[1] == "keep-open":
        sys.exit(keep_open(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])))
    if len(sys.argv) == 5 and sys.argv[1] == "sizes":
        sys.exit(sizes(sys.argv[2], sys.argv[3], sys.argv[4]))
    if len(sys.argv) == 4 and sys.argv[1] == "two-fds":
        sys.exit(two_fds(sys.argv[2], int(sys.argv[3])))
    if len(sys.argv) == 4 and sys.argv[1] == "nospc":
        sys.exit(nospc(sys.argv[2], int(sys.argv[3])))
    sys.exit(__doc__)
