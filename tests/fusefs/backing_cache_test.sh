#!/bin/bash
# -o drop_backing_cache (fusefs/backing_cache.h): on the classic path the data read or
# written through the mount is cached once, in the mount's page cache, not a second time in
# the backing file's. fincore(1) counts the pages each file has cached. A mount without the
# option is the control: there the backing file keeps every page.
. "$(dirname "$0")/lib.sh"
command -v fincore >/dev/null || fail "fincore (util-linux) is missing"
# tmpfs keeps no droppable cache (its pages are the file): back the mount with a disk.
B=$T/back
if [ "$(stat -f -c %T "$T")" = tmpfs ]; then B=$(mktemp -d "$BUILD/backing-cache.XXXXXX"); trap 'cleanup; rm -rf "$B"' EXIT; fi
M=$T/mnt
mkdir -p "$B" "$M"
mib() { fincore -b -n -o RES "$1" | awk '{print int($1 / 1048576)}'; }  # MiB cached
head -c $((64 << 20)) /dev/urandom >"$T/data"

# keep_cache on both mounts, so that fincore's open through the mount keeps what the
# mount's page cache holds (without it every open drops it).
for opt in nodrop_backing_cache drop_backing_cache; do
  mount_shim "$B" "$M" -o nopassthrough,keep_cache,$opt
  grep -q "mounted $B on $M .*drop_backing_cache $([ $opt = drop_backing_cache ] && echo on || echo off)," "$T/shim.log" ||
    fail "the mount log line does not show $opt: $(grep "mounted $B" "$T/shim.log")"

  # Reads: the backing file cached first, then read through the mount, which has not cached
  # it yet. Cached as the NFS client holds data it read: clean (DONTNEED drops only clean
  # pages: right after cp, 39 to 52 MiB of 64 stayed) and by readahead from the disk, whose
  # folios grow to 2 MiB (drop_read's reason: exact READ ranges left 34 to 51 MiB here).
  rm -f "$B/r" "$B/w"
  cp "$T/data" "$B/r" && sync "$B/r" && dd if="$B/r" iflag=nocache count=0 status=none &&
    [ "$(mib "$B/r")" -eq 0 ] || fail "$opt: could not write the backing file and drop its pages"
  cat "$B/r" >/dev/null
  [ "$(mib "$B/r")" -ge 60 ] || fail "$opt: the backing file is not cached to begin with ($(mib "$B/r") MiB)"
  cmp "$M/r" "$T/data" || fail "$opt: wrong bytes read through the mount"
  read_mount=$(mib "$M/r") read_back=$(mib "$B/r")

  # Writes: 64 MiB through the mount, the backing file synced beside it (its pages clean
  # now), 16 MiB more; then an fsync through the mount.
  dd if="$T/data" of="$M/w" bs=1M status=none || fail "$opt: write through the mount"
  sync "$B/w"
  dd if="$T/data" of="$M/w" bs=1M count=16 seek=64 conv=notrunc status=none || fail "$opt: second write"
  write_back=$(mib "$B/w")
  sync "$M/w" || fail "$opt: fsync through the mount"
  synced_back=$(mib "$B/w")
  cmp <(cat "$T/data"; head -c $((16 << 20)) "$T/data") "$M/w" || fail "$opt: wrong bytes in the written file (mount)"
  cmp <(cat "$T/data"; head -c $((16 << 20)) "$T/data") "$B/w" || fail "$opt: wrong bytes in the written file (backing)"
  unmount_shim "$M"
  echo "$opt: read 64 MiB: mount $read_mount MiB cached, backing $read_back; wrote 80 MiB: backing $write_back; after fsync: backing $synced_back"

  [ "$read_mount" -ge 60 ] || fail "$opt: the mount's page cache holds $read_mount MiB of the 64 read"
  if [ $opt = nodrop_backing_cache ]; then
    # The control: every page twice.
    [ "$read_back" -ge 60 ] && [ "$write_back" -ge 76 ] && [ "$synced_back" -ge 76 ] ||
      fail "control (no option): the backing file did not keep its pages, so this test could not tell"
  else
    [ "$read_back" -le 2 ] || fail "read through the mount: the backing file still caches $read_back MiB (want the 64 dropped)"
    # Dropped up to 8 MiB behind the writer, once its pages are clean: [0, 64) (synced) goes,
    # [64, 80) may still be dirty.
    [ "$write_back" -le 18 ] || fail "written through the mount: the backing file caches $write_back MiB (want at most the last 16 of 80)"
    [ "$synced_back" -le 1 ] || fail "after an fsync through the mount the backing file caches $synced_back MiB (want none)"
  fi
done
pass "drop_backing_cache: data read or written through a classic mount is cached once (the control mount caches it twice)"
