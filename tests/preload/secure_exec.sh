#!/bin/bash
# secure_exec.sh HELPER PRELOAD_LIB (as root)
# A set-user-ID root program with the preload (through /etc/ld.so.preload) run by another
# user: the caller's NFSSHIM_* environment must not make it read or write files as root.
# NFSSHIM_CONFIG naming a root-only file put its lines into the error messages on the
# caller's terminal; NFSSHIM_LOG=file:PATH created and appended to any file, mode 0666.
# Control: the same program run by root without the set-user-ID bit reads the environment.
set -uo pipefail
helper=$1 lib=$2
fail() { echo "FAIL: $*"; exit 1; }
[ "$(id -u)" = 0 ] || fail "run as root (makes a set-user-ID root program)"
# /tmp: a directory that user nobody can reach (the build tree may be under /root).
dir=$(mktemp -d /tmp/nfsshim-secure.XXXXXX) || fail "mktemp"
trap 'rm -rf "$dir"' EXIT
chmod 755 "$dir"
install -m 4755 -o root "$helper" "$dir/helper"
install -m 0644 "$lib" "$dir/lib.so"
printf 'SECRET-LINE-4711 of a root-only file\n' > "$dir/secret"
chmod 600 "$dir/secret"
run_env=(NFSSHIM_CONFIG="$dir/secret" NFSSHIM_LOG="file:$dir/made-by-root.log" NFSSHIM_LOG_LEVEL=debug)

# Control: not secure-execution (root, no set-user-ID bit): the environment is read.
install -m 0755 "$helper" "$dir/plain"
out=$(env "${run_env[@]}" "$dir/plain" "$dir/lib.so" 2>&1)
echo "control: $out"
grep -q '^secure=0$' <<<"$out" || fail "control: the helper says it is in secure-execution mode"
grep -q '^loaded$' <<<"$out" || fail "control: the preload did not load"
[ -f "$dir/made-by-root.log" ] || fail "control: NFSSHIM_LOG=file: made no log file (the test shows nothing)"
grep -q 'SECRET-LINE-4711' "$dir/made-by-root.log" ||
  fail "control: the config file's bad line is not in the log (the test shows nothing)"
rm -f "$dir/made-by-root.log"

# Set-user-ID root, run by nobody.
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups env "${run_env[@]}" "$dir/helper" "$dir/lib.so" 2>&1)
echo "set-user-ID: $out"
grep -q '^secure=1$' <<<"$out" ||
  fail "the set-user-ID helper is not in secure-execution mode (is /tmp mounted nosuid?)"
grep -q '^loaded$' <<<"$out" || fail "the preload did not load into the set-user-ID program"
grep -q 'SECRET-LINE-4711' <<<"$out" && fail "a line of the root-only NFSSHIM_CONFIG file reached the caller"
[ -e "$dir/made-by-root.log" ] && fail "NFSSHIM_LOG=file: made root create $dir/made-by-root.log"
grep -q 'NFSSHIM_\* environment ignored' <<<"$out" || fail "no warning that the environment was ignored"
# Without a log file the messages go to the caller's stderr.
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups env NFSSHIM_CONFIG="$dir/secret" "$dir/helper" "$dir/lib.so" 2>&1)
echo "set-user-ID, log to stderr: $out"
grep -q '^loaded$' <<<"$out" || fail "the preload did not load into the set-user-ID program"
grep -q 'SECRET-LINE-4711' <<<"$out" && fail "a line of the root-only NFSSHIM_CONFIG file reached the caller"
echo "PASS: a set-user-ID program ignores the caller's NFSSHIM_* environment"
