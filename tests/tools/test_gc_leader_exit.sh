#!/bin/bash
# nfsshim gc --silly and a process whose main thread called pthread_exit: its leader is
# a zombie whose /proc/PID/fd and maps read empty, while another thread still holds the
# silly file open (or mapped). The file must be kept, as held by that process. Runs in
# a pid namespace of its own (unshare --mount-proc) so that the scan sees only the test's
# processes and can be complete. Needs root and TOOLS_LEADER_EXIT.
. "$(dirname "$0")/lib.sh"
: "${TOOLS_LEADER_EXIT:?set by CTest}"
[[ $(id -u) == 0 ]] || { echo "skip: needs root (unshare --pid)"; exit 77; }

for how in open map; do
  d=$tmp/$how
  mkdir "$d"
  f=$d/.nfs0000000000000001000000a${#how}
  echo data >"$f"
  : >"$tmp/helper.out"
  unshare --pid --fork --kill-child --mount-proc bash -c '
    "$1" "$2" "$3" >"$4/helper.out" &
    for ((i = 0; i < 100; i++)); do
      read -r word pid <"$4/helper.out" && [[ $word == ready ]] && break
      sleep 0.1
    done
    [[ $word == ready ]] || { echo "the helper did not start"; exit 1; }
    for ((i = 0; i < 100; i++)); do  # until the main thread is gone
      [[ $(cut -d" " -f3 "/proc/$pid/stat") == Z ]] && break
      sleep 0.1
    done
    echo "helper $pid: leader $(cut -d" " -f3 "/proc/$pid/stat"), threads $(ls "/proc/$pid/task" | tr "\n" " ")"
    "$5" gc --silly --max-age 0 "$6"' \
    _ "$TOOLS_LEADER_EXIT" "$f" "$how" "$tmp" "$nfsshim" "$d" >"$tmp/out" 2>&1 ||
    fail "gc ($how): $? $(cat "$tmp/out")"
  cat "$tmp/out"
  [[ -e $f ]] || fail "a silly file that a live thread holds ($how) was removed: $(cat "$tmp/out")"
  grep -qE "^kept: $f \(held by process [0-9]+\)" "$tmp/out" || fail "gc output ($how): $(cat "$tmp/out")"
  pass "kept while a thread of a process whose main thread exited holds it ($how)"
done
