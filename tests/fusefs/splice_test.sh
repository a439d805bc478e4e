#!/bin/bash
# Requests through a pipe on the classic path (-o nopassthrough; RHEL 8's libfuse 3.3 and
# kernel 4.18 have no other): where a pipe holds the largest request (2 MiB for a 1 MiB
# max_write: CAP_SYS_RESOURCE or fs.pipe-max-size >= 2 MiB, which a root daemon from systemd
# has), libfuse splices WRITE requests and write_buf moves their data from the pipe into the
# backing file (splice). Our test containers lack CAP_SYS_RESOURCE, so without this test that
# path never ran here. fs.pipe-max-size is raised for the test if lower and restored at exit.
# Every file is compared on the backing directory; the unmount log counts the spliced writes.
# Controls: -o nosplice, and a daemon without CAP_SYS_RESOURCE under 1 MiB pipes: off, with
# the reason logged, no write through a pipe, data intact. Those two are also the path where
# O_DIRECT writes failed with EINVAL until 2026-12-03 (the data lies unaligned in libfuse's
# buffer, and the backing file is O_DIRECT too): write_buf retries from an aligned copy.
. "$(dirname "$0")/lib.sh"
pipe_file=/proc/sys/fs/pipe-max-size
pipe_max=$(cat "$pipe_file")
trap 'echo "$pipe_max" > "$pipe_file"; cleanup' EXIT
[ "$pipe_max" -ge 2097152 ] || echo 2097152 > "$pipe_file" || fail "cannot raise $pipe_file to 2 MiB"
mkdir -p "$T/src" "$T/mnt"
head -c $(((8 << 20) + 12345)) /dev/urandom > "$T/odd"
head -c $((8 << 20)) /dev/urandom > "$T/even"
piped() { sed -n 's/.*writes with their data through a pipe (splice): \([0-9]*\).*/\1/p' "$T/shim.log" | tail -1; }
write_all() {  # TAG [mount args]: every size through the mount, compared on SOURCE
  local tag=$1
  shift
  : > "$T/shim.log"
  mount_shim "$T/src" "$T/mnt" -o nopassthrough "$@"
  dd if="$T/odd" of="$T/mnt/$tag.1m" bs=1M conv=fsync status=none || fail "$tag: dd bs=1M"
  dd if="$T/odd" of="$T/mnt/$tag.64k" bs=64k conv=fsync status=none || fail "$tag: dd bs=64k"
  dd if="$T/odd" of="$T/mnt/$tag.3000" bs=3000 count=600 conv=fsync status=none || fail "$tag: dd bs=3000"
  dd if="$T/even" of="$T/mnt/$tag.direct" bs=1M oflag=direct status=none || fail "$tag: dd oflag=direct"
  # O_APPEND: the two halves of EVEN, each 4 MiB in 256 KiB writes at the file's end.
  dd if="$T/even" of="$T/mnt/$tag.append" bs=256k count=16 oflag=append conv=notrunc status=none || fail "$tag: append 1"
  dd if="$T/even" of="$T/mnt/$tag.append" bs=256k skip=16 oflag=append conv=notrunc status=none || fail "$tag: append 2"
  cmp "$T/odd" "$T/mnt/$tag.1m" || fail "$tag: 1 MiB writes read back differ"
  unmount_shim "$T/mnt"
  cmp "$T/odd" "$T/src/$tag.1m" || fail "$tag: 1 MiB writes differ on SOURCE"
  cmp "$T/odd" "$T/src/$tag.64k" || fail "$tag: 64 KiB writes differ on SOURCE"
  cmp -n $((3000 * 600)) "$T/odd" "$T/src/$tag.3000" || fail "$tag: 3000-byte writes differ on SOURCE"
  cmp "$T/even" "$T/src/$tag.direct" || fail "$tag: O_DIRECT writes differ on SOURCE"
  cmp "$T/even" "$T/src/$tag.append" || fail "$tag: O_APPEND writes differ on SOURCE"
  echo "ok: $tag: all files intact; $(grep -o 'splice of replies .*, of requests [^,]*' "$T/shim.log" | tail -1); $(piped) writes through a pipe"
}
write_all spliced
grep -q "of requests on," "$T/shim.log" || fail "requests are not spliced: $(grep 'connection:' "$T/shim.log")"
# At least the 9 + 129 + 8 + 32 writes of 1 MiB, 64 KiB, O_DIRECT and 256 KiB appends.
[ "$(piped)" -ge 178 ] || fail "only $(piped) writes came through a pipe, 178 expected"
write_all nosplice -o nosplice
grep -q "of requests off," "$T/shim.log" || fail "-o nosplice: requests still spliced"
[ "$(piped)" = 0 ] || fail "-o nosplice: $(piped) writes through a pipe"
echo 1048576 > "$pipe_file" || fail "cannot set $pipe_file"
SHIM="setpriv --bounding-set=-sys_resource --inh-caps=-sys_resource $SHIM"
write_all small-pipes
grep -q "of requests off (a pipe cannot hold a request of" "$T/shim.log" ||
  fail "1 MiB pipes: not logged as off with its reason: $(grep 'connection:' "$T/shim.log")"
[ "$(piped)" = 0 ] || fail "1 MiB pipes: $(piped) writes through a pipe"
pass "classic path: WRITE requests through a pipe where a pipe holds one, every size intact; off with -o nosplice and with 1 MiB pipes"
