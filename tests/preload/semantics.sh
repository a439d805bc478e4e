#!/bin/bash
# semantics.sh PROBE PRELOAD_LIB SCRATCH
# Runs the semantics probe on a local directory without and with the preload (which
# then watches that directory) and fails on any difference. It also checks that the
# preload really acted: the graveyard must exist after the shimmed run, and be empty.
set -euo pipefail
probe=$1 lib=$2 scratch=$3
rm -rf "$scratch"; mkdir -p "$scratch/plain" "$scratch/shim"
chmod 755 "$scratch" "$scratch/plain" "$scratch/shim"
"$probe" "$scratch/plain" > "$scratch/plain.out"
LD_PRELOAD="$lib" NFSSHIM_WATCH="$scratch/shim" "$probe" "$scratch/shim" > "$scratch/shim.out" 2> "$scratch/shim.err"
echo "shim log (fallbacks are expected where the graveyard cannot be used):"; cat "$scratch/shim.err"
sed -i "s|$scratch/plain|DIR|g" "$scratch/plain.out"
sed -i "s|$scratch/shim|DIR|g" "$scratch/shim.out"
if ! diff -u "$scratch/plain.out" "$scratch/shim.out"; then
  echo "FAIL: intercepted calls differ from the plain calls (see diff above)"; exit 1
fi
grave="$scratch/shim/.graveyard.nfsshim/u$(id -u)"
[ -d "$grave" ] || { echo "FAIL: the preload never used its graveyard: was it loaded?"; exit 1; }
left=$(ls -A "$grave")
[ -z "$left" ] || { echo "FAIL: graveyard not empty after the run: $left"; exit 1; }
echo "PASS: $(grep -c -- '->' "$scratch/plain.out") calls return the same value and errno with and without the shim"
