#!/bin/bash
# rpmbuild from a tarball of the work tree (packaging/make-tarball.sh): the SRPM and the
# binary RPMs nfsshim and nfsshim-fuse, with %check (ctest -L unit) run by rpmbuild.
# --nodeps: EL8's build dependencies (fuse3-devel, spdlog-devel...) are Debian packages
# here. EL8's systemd macros come from el8.macros (Debian's rpm lacks them).
. "$(dirname "$0")/lib.sh"
need rpmbuild git
top=$OUT/rpm
rm -rf "$top"
mkdir -p "$top/SOURCES"
spec_version=$(sed -n 's/^Version:[[:space:]]*//p' "$SRC/packaging/rpm/nfsshim.spec")
[ "$spec_version" = "$VERSION" ] || fail "nfsshim.spec Version $spec_version, CMakeLists.txt $VERSION"
"$SRC/packaging/make-tarball.sh" "$top/SOURCES" "$SRC" >/dev/null || fail "make-tarball.sh"
start=$SECONDS
if ! rpmbuild --define "_topdir $top" --load "$HERE/el8.macros" \
       --define "_smp_mflags -j$(nproc)" --nodeps -ba "$SRC/packaging/rpm/nfsshim.spec" \
       >"$top/rpmbuild.log" 2>&1; then
  tail -40 "$top/rpmbuild.log" >&2
  fail "rpmbuild -ba (log: $top/rpmbuild.log)"
fi
echo "rpmbuild took $((SECONDS - start)) s"
grep -q "100% tests passed" "$top/rpmbuild.log" || fail "%check did not report '100% tests passed'"
grep -E "tests passed|Test #" "$top/rpmbuild.log" | tail -2
arch=$(rpm --eval '%{_arch}')
for f in "SRPMS/nfsshim-$VERSION-1.src.rpm" "RPMS/$arch/nfsshim-$VERSION-1.$arch.rpm" \
         "RPMS/$arch/nfsshim-fuse-$VERSION-1.$arch.rpm"; do
  [ -s "$top/$f" ] || fail "no $f (have: $(cd "$top" && find SRPMS RPMS -name '*.rpm' | tr '\n' ' '))"
  pass "$f"
done
