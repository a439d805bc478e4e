#!/bin/bash
# Runs posix_suite on the backing directory and through the mount and compares the results.
# Every check whose observation differs must be listed (as `name`) in DIFFERENCES.md.
. "$(dirname "$0")/lib.sh"
suite=$BUILD/tests/fusefs/posix_suite
doc=$(dirname "$0")/DIFFERENCES.md
mkdir -p "$T/back" "$T/mnt"
chmod 755 "$T" "$T/back"
mount_shim "$T/back" "$T/mnt"
"$suite" "$T/back" > "$T/native.txt" || fail "suite on the backing directory"
"$suite" "$T/mnt" > "$T/fuse.txt" || fail "suite through the mount"
[ "$(wc -l < "$T/native.txt")" -gt 100 ] || fail "suite ran only $(wc -l < "$T/native.txt") checks"
[ "$(wc -l < "$T/native.txt")" = "$(wc -l < "$T/fuse.txt")" ] || fail "different number of checks"
bad=0
while read -r name; do
  n=$(grep "^CHECK $name " "$T/native.txt" | cut -d' ' -f3-)
  f=$(grep "^CHECK $name " "$T/fuse.txt" | cut -d' ' -f3-)
  if grep -q "\`$name\`" "$doc"; then
    echo "documented difference: $name: native '$n', nfsshim-fuse '$f'"
  else
    echo "UNDOCUMENTED difference: $name: native '$n', nfsshim-fuse '$f'"
    bad=1
  fi
done < <(diff <(cut -d' ' -f1-2 "$T/native.txt") <(cut -d' ' -f1-2 "$T/fuse.txt") >/dev/null;
         paste -d'|' "$T/native.txt" "$T/fuse.txt" | awk -F'|' '$1 != $2 {split($1, a, " "); print a[2]}')
echo "$(wc -l < "$T/native.txt") checks compared"
graveyard_empty "$T/back" || fail "graveyard not empty after the suite"
unmount_shim "$T/mnt"
[ $bad -eq 0 ] || fail "undocumented differences (add them to DIFFERENCES.md with a reason, or fix them)"
pass "posix suite: native and nfsshim-fuse agree except for documented differences"
