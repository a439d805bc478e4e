#!/bin/bash
# `graveyard = MOUNT=DIR` mappings as gc, doctor and the preload see them: a mapped
# graveyard nobody has made yet is nothing to do for gc (as a missing default one is).
. "$(dirname "$0")/lib.sh"

# A mapped graveyard that does not exist yet (nobody deleted a held file): gc said
# "failed: $data/.g (cannot list: ...)" with status 1, every day.
NFSSHIM_GRAVEYARD=$data=$data/.g "$nfsshim" gc "$data" >"$tmp/gc" 2>&1; rc=$?
[[ $rc == 0 ]] || fail "gc of a missing mapped graveyard exited $rc: $(cat "$tmp/gc")"
grep -qF "nothing to do: no graveyard in $data ($data/.g)" "$tmp/gc" || fail "gc output: $(cat "$tmp/gc")"
[[ ! -e $data/.g ]] || fail "gc made the graveyard"
pass "a mapped graveyard that does not exist yet: nothing to do, status 0"
