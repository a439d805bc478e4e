#!/bin/bash
# conf_keys_test.sh SRC NFSSHIM: packaging/nfsshim.conf lists every setting key of
# libshim/src/config/config.cc, commented out, with the default of nfsshim.conf(5); and
# with every line switched on the file is accepted without a complaint.
set -uo pipefail
src=${1:?usage: conf_keys_test.sh SRC NFSSHIM}
bin=${2:?}
conf=$src/packaging/nfsshim.conf
man=$src/tools/man/nfsshim.conf.5
fail() { echo "FAIL: $*" >&2; exit 1; }
# The keys[] array of apply_environment().
keys=$(sed -n '/static const char\* keys\[\] = {/,/};/p' "$src/libshim/src/config/config.cc" |
       grep -o '"[a-z_]*"' | tr -d '"' | sort)
[ "$(wc -w <<<"$keys")" -ge 10 ] || fail "cannot read the keys from config.cc: $keys"
listed=$(sed -n 's/^#\([a-z_]*\) =.*/\1/p' "$conf" | sort)
[ "$keys" = "$listed" ] || fail "keys in config.cc and nfsshim.conf differ: $(diff <(echo "$keys") <(echo "$listed") | grep '^[<>]' | tr '\n' ' ')"
for k in $keys; do
  value=$(sed -n "s/^#$k = *//p" "$conf")
  up=$(tr a-z A-Z <<<"$k")
  mandef=$(grep -o "(NFSSHIM_$up; default [^)]*)" "$man" | sed 's/.*; default //; s/)$//')
  [ "$mandef" = none ] && mandef=
  if grep -q "(NFSSHIM_$up; default" "$man"; then
    [ "$value" = "$mandef" ] || fail "$k: nfsshim.conf says '$value', nfsshim.conf(5) says '$mandef'"
  fi
done
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
sed 's/^#\([a-z_]* =\)/\1/' "$conf" >"$tmp"
out=$(cd / && NFSSHIM_CONFIG=$tmp "$bin" stat 2>&1 >/dev/null)
[ -z "$out" ] || fail "nfsshim.conf with every line switched on: $out"
echo "PASS: nfsshim.conf lists the $(wc -w <<<"$keys") keys with the defaults of nfsshim.conf(5); all accepted"
