#!/bin/bash
# A second process keeps a file open (and one mapped) while the first deletes the files and
# their directory: rmdir succeeds, the name can be re-created at once, the holder keeps
# reading the right bytes, and the graveyard empties at the last close.
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/back" "$T/mnt"
mount_shim "$T/back" "$T/mnt"
M=$T/mnt
mkdir "$M/part"
head -c 3000000 /dev/urandom > "$T/expected"
cp "$T/expected" "$M/part/seg.log"
cp "$T/expected" "$M/part/seg.index"
mkfifo "$T/go" "$T/done"
# Holder: its own process; opens the file, waits for the delete, then reads it all.
python3 - "$M/part/seg.log" "$M/part/seg.index" "$T/go" "$T/done" "$T/held.out" "$T/mapped.out" "$(dirname "$0")" <<'PY' &
import os, sys
log, idx, go, done, out, mout, here = sys.argv[1:]
sys.path.insert(0, here)
from rawmap import Mapping
fd = os.open(log, os.O_RDONLY)
m = Mapping(idx)               # only the mapping holds the index now
open(done, "w").write("ready\n")
open(go).read()                # wait until the deleter is done
with open(out, "wb") as f:
    os.lseek(fd, 0, os.SEEK_SET)
    while True:
        b = os.read(fd, 1 << 16)
        if not b: break
        f.write(b)
open(mout, "wb").write(m.read())
m.close()
os.close(fd)
PY
holder=$!
read -r _ < "$T/done"
# The deleter: other processes.
rm "$M/part/seg.log" "$M/part/seg.index" || fail "rm of held files"
rmdir "$M/part" || fail "rmdir with a file still held open: $(ls -A "$T/back/part" 2>&1)"
[ ! -e "$M/part" ] || fail "part still exists"
[ -z "$(ls -A "$T/back" | grep -vx "$GRAVEYARD")" ] || fail "leftovers in SOURCE: $(ls -A "$T/back")"
ls -A "$M" | grep -q "$GRAVEYARD" && fail "graveyard visible through the mount"
[ -n "$(ls -A "$T/back/$GRAVEYARD/u0")" ] || fail "graveyard should hold the open files"
mkdir "$M/part" && echo new > "$M/part/seg.log" || fail "re-create the names"
[ "$(cat "$M/part/seg.log")" = new ] || fail "re-created file content"
echo go > "$T/go"
wait "$holder" || fail "holder failed"
cmp "$T/expected" "$T/held.out" || fail "held fd read wrong bytes"
cmp "$T/expected" "$T/mapped.out" || fail "held mapping read wrong bytes"
wait_graveyard_empty "$T/back" || fail "graveyard not empty after the last close"
unmount_shim "$T/mnt"
pass "rmdir while held; holder reads the right bytes"
