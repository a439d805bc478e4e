#!/bin/bash
# nfsshim doctor: on a local directory the probe sees no silly rename and leaves
# nothing behind (status 0); a broken graveyard is a problem (status 1); bad
# arguments and unreadable paths give status 2.
. "$(dirname "$0")/lib.sh"

unset NFSSHIM_WATCH
"$nfsshim" doctor "$data" >"$tmp/out" 2>&1; rc=$?
[[ $rc == 0 ]] || fail "doctor on a local dir exited $rc: $(cat "$tmp/out")"
grep -qE '^  silly_rename: +false$' "$tmp/out" || fail "no 'silly_rename: false': $(cat "$tmp/out")"
grep -q '^result: OK$' "$tmp/out" || fail "no 'result: OK'"
[[ -z $(ls -A "$data") ]] || fail "probe left something: $(ls -A "$data")"
"$nfsshim" doctor --json "$data" >"$tmp/json"; rc=$?
[[ $rc == 0 ]] || fail "--json exited $rc"
grep -q '"silly_rename": false' "$tmp/json" || fail "json: $(cat "$tmp/json")"
grep -q '"ok": true' "$tmp/json" || fail "json: $(cat "$tmp/json")"
grep -q '"watched": false' "$tmp/json" || fail "json: $(cat "$tmp/json")"
if command -v python3 >/dev/null; then
  python3 -m json.tool "$tmp/json" >/dev/null || fail "--json is not JSON"
fi
pass "local directory: no silly rename, status 0"

# Watched, with a graveyard someone made world-listable: a problem.
export NFSSHIM_WATCH=$data
mkdir -m 0755 "$data/.graveyard.nfsshim"
"$nfsshim" doctor "$data" >"$tmp/out" 2>&1; rc=$?
[[ $rc == 1 ]] || fail "bad graveyard mode: exited $rc: $(cat "$tmp/out")"
grep -q "has mode 0755, expected 1733" "$tmp/out" || fail "problem not named: $(cat "$tmp/out")"
chmod 1733 "$data/.graveyard.nfsshim"
"$nfsshim" doctor "$data" >"$tmp/out" 2>&1 || fail "fixed graveyard: exited $?: $(cat "$tmp/out")"
pass "graveyard problems: status 1, and 0 once fixed"

: >"$tmp/file"
for bad in "" "--bogus $data" "/nonexistent/dir" "$tmp/file" "$data $data"; do
  # shellcheck disable=SC2086
  "$nfsshim" doctor $bad >/dev/null 2>"$tmp/err"; rc=$?
  [[ $rc == 2 ]] || fail "doctor '$bad' exited $rc"
  [[ -s $tmp/err ]] || fail "doctor '$bad' said nothing"
done
"$nfsshim" doctor --help | grep -q "usage: nfsshim doctor" || fail "--help"
pass "bad arguments: status 2"
