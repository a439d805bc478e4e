#!/bin/bash
# nfsshim gc run by root that cannot list a graveyard (root squashed by the server, or
# without CAP_DAC_READ_SEARCH; here its bounding set drops CAP_DAC_OVERRIDE and
# CAP_DAC_READ_SEARCH): the top directory a user made (1733: nobody else lists it) and a
# user's u<UID> (0700) are failures, named, and the status is 1. gc said nothing and
# exited 0 with "0 removed, 0 kept, 0 failed", so the daily run never showed it.
. "$(dirname "$0")/lib.sh"
[[ $(id -u) == 0 ]] || { echo "skip: needs root (chown, setpriv)"; exit 77; }
chmod 711 "$tmp"
nodac=(setpriv --bounding-set=-dac_override,-dac_read_search)
"${nodac[@]}" true || { echo "skip: setpriv cannot drop capabilities here"; exit 77; }
g=$data/.graveyard.nfsshim

# 1. The top directory, made by uid 1000.
mkdir "$g" && chown 1000:1000 "$g" && chmod 1733 "$g"
install -d -o 1000 -g 1000 -m 0700 "$g/u1000"
: >"$g/u1000/b~host~0~1~1~0" && chown 1000:1000 "$g/u1000/b~host~0~1~1~0"
st=0; "${nodac[@]}" "$nfsshim" gc "$data" >"$tmp/out" 2>&1 || st=$?
cat "$tmp/out"
[[ $st == 1 ]] || fail "status $st, want 1"
grep -qF "failed: $g (cannot list: Permission denied)" "$tmp/out" || fail "no failure for the unlistable graveyard"
pass "a graveyard root cannot list is a failure"

# 2. The top directory is root's (listable), uid 1000's u1000 is not.
chown 0:0 "$g"
st=0; "${nodac[@]}" "$nfsshim" gc "$data" >"$tmp/out" 2>&1 || st=$?
cat "$tmp/out"
[[ $st == 1 ]] || fail "status $st, want 1"
grep -qF "failed: $g/u1000 (cannot list: Permission denied)" "$tmp/out" || fail "no failure for the unlistable u1000"
[[ -e "$g/u1000/b~host~0~1~1~0" ]] || fail "the entry is gone"
pass "a user's graveyard root cannot list is a failure"

# Control: with its capabilities, root lists and reaps (the owner is gone: another boot).
"$nfsshim" gc "$data" >"$tmp/out" 2>&1 || fail "gc with capabilities: $(cat "$tmp/out")"
grep -qF "u1000/b~host~0~1~1~0" "$tmp/out" || fail "root with capabilities did not see the entry: $(cat "$tmp/out")"
pass "root with its capabilities lists both"
