#!/bin/bash
# lintian on the .changes of the Debian build (the binary packages): no errors.
. "$(dirname "$0")/lib.sh"
need lintian
deb=$OUT/deb
changes=$(ls "$deb"/*.changes 2>/dev/null | head -1)
[ -n "$changes" ] || fail "no .changes in $deb (packaging_deb_build failed?)"
lintian --fail-on error --tag-display-limit 0 --info "$changes" >"$OUT/lintian.log" 2>&1
rc=$?
cat "$OUT/lintian.log"
grep -q '^E: ' "$OUT/lintian.log" && fail "lintian reports errors"
[ $rc = 0 ] || fail "lintian exited $rc"
pass "lintian: no errors ($(grep -c '^W: ' "$OUT/lintian.log") warnings, $(grep -c '^I: ' "$OUT/lintian.log") infos)"
