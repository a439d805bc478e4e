#!/bin/bash
# uml_tools.sh: `nfsshim doctor`, `gc` and `stat` on the lab's real NFS mount. Boots one
# user-mode-linux guest whose real Linux NFS client mounts the lab's nfs-ganesha export
# with vers=4.1,nconnect=4 and runs guest_tools.sh there (see it for the checks). Then,
# on the host: promtool accepts the `stat --prometheus` output taken during the Kafka
# pattern, and the server's side holds no .nfs* file, no graveyard entry and no stats file.
# Needs a running lab (lab.sh up; CTest: fixture nfslab) and TOOLS_NFSSHIM, TOOLS_HOLDER,
# TOOLS_PAUSE_AT, TOOLS_KAFKA_PATTERN (set by CTest).
set -uo pipefail
: "${TOOLS_NFSSHIM:?}" "${TOOLS_HOLDER:?}" "${TOOLS_PAUSE_AT:?}" "${TOOLS_KAFKA_PATTERN:?}"
here=$(cd "$(dirname "$0")" && pwd)
lab=$here/../lab
export NFSSHIM_LAB=${NFSSHIM_LAB:-/tmp/nfsshim-lab}
fail() { echo "FAIL: $*" >&2; exit 1; }
exp=$NFSSHIM_LAB/exp
export TOOLS_OUT=$NFSSHIM_LAB/tools-out
export NFSSHIM_STATS_DIR=$TOOLS_OUT/stats
find "$exp" -mindepth 1 -delete 2>/dev/null
rm -rf "$TOOLS_OUT"
mkdir -p "$TOOLS_OUT" || fail "cannot make $TOOLS_OUT"

"$lab/uml-run.sh" -T 120 -o vers=4.1,nconnect=4 -e TOOLS_NFSSHIM -e TOOLS_HOLDER -e TOOLS_PAUSE_AT \
  -e TOOLS_KAFKA_PATTERN -e TOOLS_OUT -e NFSSHIM_STATS_DIR -e NFSSHIM_CONFIG=/dev/null \
  -e NFSSHIM_LOG_LEVEL=warn -- "$here/guest_tools.sh"
rc=$?
[[ $rc == 0 ]] || fail "guest: status $rc"

for p in p1 p2; do
  f=$TOOLS_OUT/$p.prom
  grep -q '^nfsshim_buried_total{pid="[0-9]*",kind="preload",comm="kafka_pattern"} [1-9]' "$f" ||
    fail "$p.prom has no kafka_pattern counters: $(cat "$f")"
  /usr/bin/promtool check metrics <"$f" || fail "promtool check metrics rejects $p.prom: $(cat "$f")"
done
echo "ok: promtool check metrics accepts 'nfsshim stat --prometheus' taken during the Kafka pattern"

silly=$(find "$exp" -name '.nfs*')
[[ -z $silly ]] || fail "server still holds silly-rename files: $silly"
left=$(find "$exp/.graveyard.nfsshim" -mindepth 2 2>/dev/null)
[[ -z $left ]] || fail "graveyard entries left on the server: $left"
[[ -z $(ls -A "$NFSSHIM_STATS_DIR") ]] || fail "stats files left: $(ls -A "$NFSSHIM_STATS_DIR")"
echo "PASS: nfsshim doctor/gc/stat on NFS vers=4.1 (real Linux client in UML, nfs-ganesha)"
