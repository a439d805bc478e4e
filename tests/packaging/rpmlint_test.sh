#!/bin/bash
# rpmlint on the spec, the SRPM and the binary RPMs: no errors (warnings are listed).
# Debian's rpmlint applies openSUSE's policy: rpmlintrc filters what does not apply to EL8.
. "$(dirname "$0")/lib.sh"
need rpmlint
top=$OUT/rpm
ls "$top"/SRPMS/*.src.rpm >/dev/null 2>&1 || fail "no SRPM in $top (packaging_rpm_build failed?)"
# Filters, each with its reason: rpmlintrc.
rpmlint -r "$HERE/rpmlintrc" "$SRC/packaging/rpm/nfsshim.spec" "$top"/SRPMS/*.src.rpm \
  "$top"/RPMS/*/nfsshim-[0-9]*.rpm "$top"/RPMS/*/nfsshim-fuse-[0-9]*.rpm >"$OUT/rpmlint.log" 2>&1
rc=$?
cat "$OUT/rpmlint.log"
summary=$(grep -E '[0-9]+ packages and [0-9]+ specfiles checked' "$OUT/rpmlint.log")
[ -n "$summary" ] || fail "rpmlint did not run (exit $rc)"
errors=$(sed -n 's/.* \([0-9][0-9]*\) errors.*/\1/p' <<<"$summary")
[ "$errors" = 0 ] || fail "rpmlint: $summary"
pass "rpmlint: $summary"
