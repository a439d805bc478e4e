#!/bin/bash
# kafka_test.sh native|java local|bindfs
# The Kafka partition-delete pattern through the mount, without any preload, over a local
# directory or over bindfs as SOURCE; afterwards the graveyard in SOURCE must be empty.
. "$(dirname "$0")/lib.sh"
kind=$1 backing=$2
mkdir -p "$T/back" "$T/bind" "$T/mnt"
src=$T/back
if [ "$backing" = bindfs ]; then
  mount_bindfs "$T/back" "$T/bind"
  src=$T/bind
fi
mount_shim "$src" "$T/mnt"
env -u LD_PRELOAD bash "$(dirname "$0")/../kafka/run_pattern.sh" "$kind" "$T/mnt" expect-pass ||
  fail "Kafka pattern ($kind) through nfsshim-fuse over $backing"
# The last release comes asynchronously after the program exits.
wait_graveyard_empty "$T/back" || fail "graveyard not empty: $(ls -A "$T/back/$GRAVEYARD/u0")"
extra=$(ls -A "$T/back" | grep -vx "$GRAVEYARD")
[ -z "$extra" ] || fail "left in SOURCE: $extra"
unmount_shim "$T/mnt"
pass "Kafka pattern ($kind) over $backing"
