#!/bin/bash
# nfsshim run: the preload goes in front of LD_PRELOAD, --config sets NFSSHIM_CONFIG,
# and a library that is no shared object for this machine is refused (status 2).
. "$(dirname "$0")/lib.sh"

out=$("$nfsshim" run -- sh -c 'printf %s "$LD_PRELOAD"') || fail "run sh: $?"
lib=${out%%:*}
[[ $lib == /*libnfsshim-preload.so && -f $lib ]] || fail "LD_PRELOAD starts with '$lib'"
[[ $lib -ef ${TOOLS_PRELOAD:-$lib} ]] || fail "build tree library not used: $lib vs $TOOLS_PRELOAD"
pass "library from the build tree: $lib"

other=$tmp/other.so
cp "$lib" "$other"
out=$(LD_PRELOAD="$other" "$nfsshim" run -- sh -c 'printf %s "$LD_PRELOAD"') || fail "run with LD_PRELOAD: $?"
[[ $out == "$lib:$other" ]] || fail "existing LD_PRELOAD not kept after ours: '$out'"
out=$(LD_PRELOAD="$lib" "$nfsshim" run -- sh -c 'printf %s "$LD_PRELOAD"')
[[ $out == "$lib" ]] || fail "library listed twice: '$out'"
pass "LD_PRELOAD prepended, kept, not repeated"

"$nfsshim" run -- grep -q libnfsshim-preload.so /proc/self/maps || fail "the command does not have the preload mapped"
pass "command runs with the preload loaded"

# A relative $NFSSHIM_PRELOAD_LIB is made absolute: the command may change directory
# before it runs another program, which must still find the library.
n=$(cd "$(dirname "$lib")" && NFSSHIM_PRELOAD_LIB=./$(basename "$lib") "$nfsshim" run -- sh -c 'cd / && exec grep -c nfsshim /proc/self/maps' 2>&1)
[[ $n =~ ^[1-9][0-9]*$ ]] || fail "relative NFSSHIM_PRELOAD_LIB: the shim is not loaded after a cd: '$n'"
out=$(cd "$(dirname "$lib")" && NFSSHIM_PRELOAD_LIB=./$(basename "$lib") "$nfsshim" run -- sh -c 'printf %s "$LD_PRELOAD"')
[[ $out == "$lib" ]] || fail "relative NFSSHIM_PRELOAD_LIB: LD_PRELOAD='$out', expected '$lib'"
pass "a relative NFSSHIM_PRELOAD_LIB is made absolute"

echo "log_level = warn" >"$tmp/my.conf"
out=$(cd "$tmp" && "$nfsshim" run --config my.conf -- sh -c 'printf %s "$NFSSHIM_CONFIG"')
[[ $out == "$tmp/my.conf" ]] || fail "NFSSHIM_CONFIG='$out'"
pass "--config sets NFSSHIM_CONFIG (absolute)"

expect_status() {  # expect_status STATUS MESSAGE-PATTERN CMD...
  local want=$1 pat=$2; shift 2
  local err rc
  err=$("$@" 2>&1 >/dev/null); rc=$?
  [[ $rc == "$want" ]] || fail "'$*' exited $rc, expected $want ($err)"
  [[ $err == *$pat* ]] || fail "'$*' said '$err', expected '$pat'"
}
expect_status 2 "no command" "$nfsshim" run
expect_status 2 "no command" "$nfsshim" run --
expect_status 2 "unknown option" "$nfsshim" run --frob -- true
expect_status 2 "cannot read config file" "$nfsshim" run --config "$tmp/missing.conf" -- true
# An empty FILE was taken as no --config at all: the command ran without NFSSHIM_CONFIG.
expect_status 2 "--config needs a FILE, got an empty one" "$nfsshim" run --config= -- true
expect_status 2 "--config needs a FILE, got an empty one" "$nfsshim" run --config "" -- true
expect_status 2 "not an ELF file" env NFSSHIM_PRELOAD_LIB=/etc/hostname "$nfsshim" run -- true
expect_status 2 "cannot open" env NFSSHIM_PRELOAD_LIB="$tmp/none.so" "$nfsshim" run -- true
expect_status 2 "NFSSHIM_PRELOAD_LIB" env NFSSHIM_PRELOAD_LIB=none.so "$nfsshim" run -- true
# An ELF header for another machine: ARM (40) if we are not, else x86-64 (62).
machine=$(od -An -tu2 -j18 -N2 "$lib" | tr -d ' ')
[[ $machine == 40 ]] && other_machine='\x3e\x00' || other_machine='\x28\x00'
printf "\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x03\x00${other_machine}\x01\x00\x00\x00" >"$tmp/arm.so"
head -c 64 /dev/zero >>"$tmp/arm.so"
expect_status 2 "another architecture" env NFSSHIM_PRELOAD_LIB="$tmp/arm.so" "$nfsshim" run -- true
expect_status 127 "cannot execute" "$nfsshim" run -- "$tmp/no-such-command"
"$nfsshim" run --help | grep -q "usage: nfsshim run" || fail "run --help"
pass "bad arguments and libraries refused"
