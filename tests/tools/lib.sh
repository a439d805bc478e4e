# Shared by the tools_*.sh tests: a private directory, settings that ignore
# /etc/nfsshim.conf, and holder processes stepped through fifos.
# Needs TOOLS_NFSSHIM and TOOLS_HOLDER (set by CTest). TOOLS_TMPDIR: where the
# private directory goes (default /tmp; the UML guest, whose /tmp is read-only, sets it).
set -u
: "${TOOLS_NFSSHIM:?set by CTest}" "${TOOLS_HOLDER:?set by CTest}"
nfsshim=$TOOLS_NFSSHIM
tmp=$(mktemp -d "${TOOLS_TMPDIR:-/tmp}/nfsshim-tools-test.XXXXXX") || exit 1
data=$tmp/data
stats=$tmp/stats
mkdir -p "$data"
export NFSSHIM_CONFIG=/dev/null NFSSHIM_WATCH=$data NFSSHIM_STATS_DIR=$stats NFSSHIM_LOG_LEVEL=warn
holder_pids=()
cleanup() {
  for p in "${holder_pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; }

# holder_start NAME: starts `nfsshim run -- holder` (under HOLDER_WRAP, a command and its
# options, if set); sets NAME_pid (as the holder sees it), NAME_in, NAME_out.
holder_start() {
  local n=$1
  mkfifo "$tmp/$n.in" "$tmp/$n.out"
  # shellcheck disable=SC2086  # HOLDER_WRAP is a command line
  ${HOLDER_WRAP:-} "$nfsshim" run -- "$TOOLS_HOLDER" <"$tmp/$n.in" >"$tmp/$n.out" 2>"$tmp/$n.err" &
  holder_pids+=($!)
  local fin fout
  exec {fin}>"$tmp/$n.in" {fout}<"$tmp/$n.out"
  eval "${n}_in=$fin ${n}_out=$fout"
  local line
  read -r -t 10 -u "$fout" line || fail "$n did not start: $(cat "$tmp/$n.err")"
  [[ $line == "ready "* ]] || fail "$n: unexpected '$line'"
  eval "${n}_pid=${line#ready }"
}

# holder_do NAME COMMAND: sends one command and prints the reply.
holder_do() {
  local in out line
  eval "in=\$${1}_in out=\$${1}_out"
  echo "$2" >&"$in"
  read -r -t 10 -u "$out" line || fail "$1: no reply to '$2'"
  echo "$line"
}

# The graveyard entries (names) of PID in $data.
entries_of() { ls -A "$data/.graveyard.nfsshim/u$(id -u)" 2>/dev/null | grep "~$1~" || true; }

# Everything in the data, stats and outside directories, to prove nothing changed.
snapshot() { (cd "$tmp" && find data stats outside -printf '%p %s %m %i\n' 2>/dev/null | sort); }
