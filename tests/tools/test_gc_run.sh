#!/bin/bash
# nfsshim-gc-run (packaging/systemd/nfsshim-gc-run.in: the daily `nfsshim gc` of
# nfsshim-gc.service), filled in with the nfsshim built here:
# 1. GC_OPTIONS=--silly and no path at all (no NFS mount, no watch directory, no
#    GC_PATHS): the --silly walk is left out and the stats files are still reaped,
#    status 0 (`nfsshim gc --silly --` would be a usage error, status 2).
# 2. As a user who may not open one of the paths (as root squashed on a 0750 directory),
#    that path is one failure, the other is still reaped, status 1 at the end.
. "$(dirname "$0")/lib.sh"
src=$(cd "$(dirname "$0")/../.." && pwd)
run=$tmp/nfsshim-gc-run
sed -e "s|@NFSSHIM_BIN@|$nfsshim|g" -e "s|@NFSSHIM_CONF@|$tmp/absent.conf|g" \
  "$src/packaging/systemd/nfsshim-gc-run.in" >"$run"
chmod 755 "$run" "$tmp"
mkdir -p "$stats"
unset NFSSHIM_CONFIG  # the script's default settings file: absent, so no watch directory

if grep -qE '^[^ ]+ [^ ]+ nfs4? ' /proc/self/mounts; then
  echo "skipped 1: this host has NFS mounts, so every run has a path"
else
  GC_PATHS='' GC_OPTIONS='--silly --max-age 0' "$run" >"$tmp/out" 2>&1; rc=$?
  [[ $rc == 0 ]] || fail "no path, GC_OPTIONS=--silly: status $rc: $(cat "$tmp/out")"
  grep -q "^nfsshim gc: 0 removed, 0 kept, 0 failed" "$tmp/out" || fail "no summary: $(cat "$tmp/out")"
  grep -q "no path: --silly left out" "$tmp/out" || fail "the skipped --silly is not said: $(cat "$tmp/out")"
  pass "no path and GC_OPTIONS=--silly: stats reaped, --silly left out, status 0"
fi

if [[ $(id -u) != 0 ]] || ! command -v setpriv >/dev/null; then
  echo "skipped 2: needs root and setpriv"
  exit 0
fi
nobody=65534
mkdir -p "$tmp/closed" "$tmp/open" "$tmp/ustats"
chmod 750 "$tmp/closed"
chown "$nobody" "$tmp/open" "$tmp/ustats"
setpriv --reuid=$nobody --regid=$nobody --clear-groups \
  env NFSSHIM_STATS_DIR="$tmp/ustats" GC_PATHS="$tmp/closed $tmp/open" GC_OPTIONS='--max-age 3d' \
  "$run" >"$tmp/out" 2>&1; rc=$?
[[ $rc == 1 ]] || fail "one path that cannot be opened: status $rc, want 1: $(cat "$tmp/out")"
grep -qF "failed: $tmp/closed (cannot open directory: Permission denied)" "$tmp/out" || fail "no failure line: $(cat "$tmp/out")"
grep -qF "nothing to do: no graveyard in $tmp/open" "$tmp/out" || fail "the other path was not reaped: $(cat "$tmp/out")"
grep -q "^nfsshim gc: .*, 1 failed" "$tmp/out" || fail "summary: $(cat "$tmp/out")"
pass "a path the user cannot open: reported as failed, the other reaped, status 1"
