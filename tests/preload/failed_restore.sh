#!/bin/bash
# failed_restore.sh PRELOAD_LIB NFSSHIM SCRATCH
# A rename over a file this process holds buries the target first; when the rename then
# fails and putting the target back fails too (a soft NFS mount in a server hiccup), the
# application is told its file stayed, so the file must survive in the graveyard under a
# name no reaper takes. It kept its b~ name and `nfsshim gc` removed it once the process
# was gone ("owner process N is gone"). The failures are injected with strace: the second
# renameat (the rename itself; the first is the bury), every linkat and renameat2 (the
# two ways back). (LeakSanitizer cannot run under ptrace: off in the ASan tree.)
set -euo pipefail
lib=$1 nfsshim=$2 scratch=$3
fail() { echo "FAIL: $*"; exit 1; }
command -v strace >/dev/null || fail "strace is not installed (tools/dev/install-deps.sh)"
rm -rf "$scratch"; mkdir -p "$scratch/d" "$scratch/stats"
export NFSSHIM_CONFIG=/dev/null NFSSHIM_STATS_DIR=$scratch/stats  # not the host's
echo "the target's data" > "$scratch/d/target"
echo "source" > "$scratch/d/source"
out=$(strace -f -qq -o /dev/null -e trace=renameat,renameat2,linkat \
  -e inject=renameat:error=EIO:when=2 -e inject=linkat:error=EIO -e inject=renameat2:error=EIO \
  env LD_PRELOAD="$lib" NFSSHIM_WATCH="$scratch" NFSSHIM_MODE=all \
  ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" \
  python3 -c 'import os, sys
fd = os.open(sys.argv[2], os.O_RDONLY)
try:
    os.rename(sys.argv[1], sys.argv[2])
    print("rename: ok")
except OSError as e:
    print("rename:", os.strerror(e.errno))' "$scratch/d/source" "$scratch/d/target" 2>&1) || true
echo "$out"
grep -q '^rename: Input/output error$' <<<"$out" || fail "the injected failure did not reach the rename"
grep -q 'could not be put back' <<<"$out" || fail "the put-back did not fail: the case is not made"
grave=$scratch/.graveyard.nfsshim/u$(id -u)
[ ! -e "$scratch/d/target" ] || fail "the target is back: the case is not made"
ls -A "$grave"
"$nfsshim" gc "$scratch"
kept=$(grep -l "the target's data" "$grave"/* 2>/dev/null || true)
[ -n "$kept" ] || fail "the target of the failed rename was removed (the application was told it stayed)"
echo "PASS: kept as $(basename "$kept")"
