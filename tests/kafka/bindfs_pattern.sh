#!/bin/bash
# bindfs_pattern.sh native|java PRELOAD_LIB SCRATCH
# Mounts bindfs over SCRATCH/src at SCRATCH/mnt and runs the Kafka pattern there:
#   1. without the shim it must FAIL (proof that bindfs bites like NFS does),
#   2. with the shim watching the mount it must PASS, and leave the graveyard empty.
set -euo pipefail
kind=$1 lib=$2 scratch=$3
here=$(cd "$(dirname "$0")" && pwd)
command -v bindfs >/dev/null || { echo "FAIL: bindfs missing (apt-get install bindfs)"; exit 1; }
src=$scratch/src mnt=$scratch/mnt
cleanup() { mountpoint -q "$mnt" && { fusermount3 -u "$mnt" 2>/dev/null || umount -l "$mnt"; }; true; }
trap cleanup EXIT
cleanup
rm -rf "$scratch"; mkdir -p "$src" "$mnt"
bindfs "$src" "$mnt"

echo "== without the shim (must fail)"
"$here/run_pattern.sh" "$kind" "$mnt" expect-fail
# Let bindfs drop its .fuse_hidden files, then start clean.
for i in $(seq 50); do [ -z "$(ls -A "$src")" ] && break; sleep 0.1; done
rm -rf "${src:?}"/* "$src"/.[!.]* 2>/dev/null || true

echo "== with the shim (must pass)"
LD_PRELOAD=$lib NFSSHIM_WATCH=$mnt "$here/run_pattern.sh" "$kind" "$mnt" expect-pass
grave=$src/.graveyard.nfsshim/u$(id -u)
[ -d "$grave" ] || { echo "FAIL: the shim never used its graveyard"; exit 1; }
[ -z "$(ls -A "$grave")" ] || { echo "FAIL: graveyard not empty: $(ls -A "$grave")"; exit 1; }
[ -z "$(ls -A "$src" | grep -v '^.graveyard.nfsshim$')" ] || { echo "FAIL: leftovers: $(ls -A "$src")"; exit 1; }
echo "PASS: $kind fails on bindfs without the shim and passes with it"
