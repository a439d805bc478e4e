#!/bin/bash
# lab.sh - a private NFS lab for nfsshim tests: a real NFS server (nfs-ganesha, userspace)
# inside an isolated network namespace, to be mounted by a real Linux kernel NFS client
# running in user-mode-linux (see uml-run.sh).  Needs root.
#
# Usage:
#   lab.sh up [--v3]   create netns + tap, start ganesha exporting $NFSSHIM_LAB/exp.
#                      Default NFSv4.x only; --v3 adds NFSv3 (ganesha then needs a private
#                      rpcbind, which is started too).  Idempotent: a running lab with the
#                      same protocols is left alone; with other protocols ganesha is restarted.
#   lab.sh down        stop everything `up` started (ganesha, rpcbind, leftover UML guests;
#                      by PID, after checking the PID still is that program) and delete the netns.
#   lab.sh status      print what is running.
#   lab.sh check       self-test that proves the lab bites: in a UML guest with the real NFS
#                      client, for vers=3 and vers=4.1: open a file, unlink it while open, list
#                      the dir (expect a .nfsXXXX entry), rmdir (expect ENOTEMPTY), close.
#                      Prints the observations; exit 0 only if silly rename was seen on both.
#                      If the lab is down, check brings it up (--v3) and takes it down after;
#                      if it runs without v3, ganesha is restarted with v3 (and left so).
#
# Environment:
#   NFSSHIM_LAB          state dir (default /tmp/nfsshim-lab); the export is $NFSSHIM_LAB/exp,
#                        the guest mounts it on $NFSSHIM_LAB/mnt (see uml-run.sh)
#   NFSSHIM_LAB_NETNS    netns name          (default nfsshim)
#   NFSSHIM_LAB_TAP      tap device name     (default nfsshimtap0)
#   NFSSHIM_LAB_NET      /24 prefix          (default 10.78.0: host/server .1, UML guest .2)
#
# Server: ganesha.nfsd (FSAL VFS, TCP only, NFS port 2049, MOUNT port 20048, no NLM, so v3
# clients need -o nolock), NFSv4 Graceless, export Attr_Expiration_Time 0 (changes made
# directly in $NFSSHIM_LAB/exp are seen by clients at once), pseudo path = v3 path = /export.
# ganesha and rpcbind run in the netns and in a private mount namespace with their own /run,
# so nothing touches the host's rpcbind.  Nothing in the netns is routed anywhere.
#
# Files under $NFSSHIM_LAB: lab.env (settings for uml-run.sh), netns.created (we own the netns),
# ganesha/{ganesha.conf,ganesha.log,ganesha.pid,rpcbind.pid,protos}, exp/, mnt/, uml/.
#
# Requires: apt-get install nfs-ganesha nfs-ganesha-vfs rpcbind user-mode-linux kmod gcc iproute2
set -euo pipefail

LAB=${NFSSHIM_LAB:-/tmp/nfsshim-lab}
NS=${NFSSHIM_LAB_NETNS:-nfsshim}
TAP=${NFSSHIM_LAB_TAP:-nfsshimtap0}
NET=${NFSSHIM_LAB_NET:-10.78.0}
HOST_IP=$NET.1
GUEST_IP=$NET.2
NFS_PORT=2049
MNT_PORT=20048
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
G=$LAB/ganesha

usage() { sed -n '2,40p' "$0"; exit 2; }
log() { echo "lab: $*" >&2; }

# pid_is PIDFILE COMM: the pid in PIDFILE is alive, not a zombie, and runs COMM
pid_is() {
  local f=$1 comm=$2 p st
  [ -s "$f" ] || return 1
  p=$(cat "$f")
  [ -r "/proc/$p/comm" ] && [ "$(cat "/proc/$p/comm" 2>/dev/null)" = "$comm" ] || return 1
  st=$(ps -o stat= -p "$p" 2>/dev/null) || return 1
  [ "${st#Z}" = "$st" ]
}

# stop_pid PIDFILE COMM: SIGTERM, wait up to 10 s, then SIGKILL; removes PIDFILE
stop_pid() {
  local f=$1 comm=$2 p
  if pid_is "$f" "$comm"; then
    p=$(cat "$f")
    kill "$p" 2>/dev/null || true
    for _ in $(seq 100); do pid_is "$f" "$comm" || break; sleep 0.1; done
    if pid_is "$f" "$comm"; then log "$comm ($p) ignores SIGTERM, SIGKILL"; kill -9 "$p" 2>/dev/null || true; fi
    log "stopped $comm (pid $p)"
  fi
  rm -f "$f"
}

netns_exists() { ip netns list 2>/dev/null | awk '{print $1}' | grep -qx "$NS"; }

netns_up() {
  if ! netns_exists; then
    ip netns add "$NS"
    touch "$LAB/netns.created"
    log "created netns $NS"
  fi
  ip -n "$NS" link set lo up
  ip -n "$NS" link show "$TAP" >/dev/null 2>&1 || ip -n "$NS" tuntap add dev "$TAP" mode tap
  # the address also matters to ganesha: without a non-loopback address getaddrinfo
  # (AI_ADDRCONFIG) fails to resolve even numeric addresses
  ip -n "$NS" addr replace "$HOST_IP/24" dev "$TAP"
  ip -n "$NS" link set "$TAP" up
}

tcp_open() { ip netns exec "$NS" bash -c "exec 3<>/dev/tcp/$HOST_IP/$1" 2>/dev/null; }

ganesha_running() { pid_is "$G/ganesha.pid" ganesha.nfsd; }

ganesha_stop() {
  stop_pid "$G/ganesha.pid" ganesha.nfsd
  stop_pid "$G/rpcbind.pid" rpcbind
}

ganesha_start() {   # $1 = protocols: "4" or "3, 4"
  local protos=$1 rpcb=0 ok=0 t0 t1 pid
  case "$protos" in *3*) rpcb=1;; esac
  command -v ganesha.nfsd >/dev/null || { log "ganesha.nfsd missing: apt-get install nfs-ganesha nfs-ganesha-vfs"; exit 1; }
  [ $rpcb = 0 ] || command -v rpcbind >/dev/null || { log "rpcbind missing: apt-get install rpcbind"; exit 1; }
  mkdir -p "$G/recovery" "$LAB/exp"
  rm -f "$G/ganesha.pid" "$G/rpcbind.pid"
  cat > "$G/ganesha.conf" <<EOF
# generated by tests/lab/lab.sh
NFS_CORE_PARAM {
    Bind_addr = $HOST_IP;
    NFS_Port = $NFS_PORT;
    MNT_Port = $MNT_PORT;
    Protocols = $protos;
    Enable_NLM = false;           # v3 clients: -o nolock
    Enable_RQUOTA = false;
    Enable_UDP = false;
    mount_path_pseudo = true;     # v3 MOUNT path == v4 pseudo path
}
NFSV4 {
    Graceless = true;
    Minor_Versions = 0, 1, 2;
    RecoveryBackend = fs;
    RecoveryRoot = "$G/recovery";
    Allow_Numeric_Owners = true;
    Only_Numeric_Owners = true;
}
NFS_KRB5 { Active_krb5 = false; }
EXPORT {
    Export_Id = 1;
    Path = "$LAB/exp";
    Pseudo = "/export";
    Protocols = $protos;
    Transports = TCP;
    Access_Type = RW;
    Squash = No_Root_Squash;
    SecType = sys;
    Attr_Expiration_Time = 0;
    FSAL { Name = VFS; }
}
LOG { Default_Log_Level = EVENT; }
EOF
  # runs inside the netns and a private mount namespace; execs ganesha (so $! below is
  # ganesha's PID: ip netns exec and unshare exec too)
  cat > "$G/inner.sh" <<EOF
#!/bin/bash
set -e
mount -t tmpfs -o mode=0755 nfsshim-lab-run /run
mkdir -p /run/ganesha /run/rpcbind
chown _rpc /run/rpcbind 2>/dev/null || true
if [ $rpcb = 1 ]; then
  rpcbind -f </dev/null >"$G/rpcbind.out" 2>&1 &
  echo \$! > "$G/rpcbind.pid"
  for i in \$(seq 100); do [ -S /run/rpcbind.sock ] && break; sleep 0.05; done
fi
exec ganesha.nfsd -F -f "$G/ganesha.conf" -L "$G/ganesha.log" -p "$G/ganesha.nfsd.pid" -N NIV_EVENT
EOF
  chmod +x "$G/inner.sh"
  : > "$G/ganesha.log"
  t0=$(date +%s.%N)
  ip netns exec "$NS" unshare --mount --propagation private "$G/inner.sh" </dev/null >"$G/ganesha.stdout" 2>&1 &
  pid=$!
  echo "$pid" > "$G/ganesha.pid"
  for _ in $(seq 300); do
    [ -d "/proc/$pid" ] || break
    if tcp_open $NFS_PORT && { [ $rpcb = 0 ] || tcp_open $MNT_PORT; }; then ok=1; break; fi
    sleep 0.05
  done
  if [ $ok != 1 ] || ! ganesha_running; then
    log "ganesha did not come up on $HOST_IP:$NFS_PORT; output and log:"
    cat "$G/ganesha.stdout" "$G/ganesha.log" >&2 || true
    ganesha_stop
    exit 1
  fi
  t1=$(date +%s.%N)
  echo "$protos" > "$G/protos"
  log "ganesha up: pid $pid$( [ -s "$G/rpcbind.pid" ] && echo ", rpcbind pid $(cat "$G/rpcbind.pid")"), protocols $protos, $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b-a}')s"
}

write_env() {
  cat > "$LAB/lab.env" <<EOF
# written by lab.sh up; read by uml-run.sh
LAB_NETNS=$NS
LAB_TAP=$TAP
LAB_SERVER=$HOST_IP
LAB_GUEST=$GUEST_IP/24
LAB_EXPORT=/export
LAB_PROTOS="$(cat "$G/protos")"
EOF
}

cmd_up() {
  local want="4"
  while [ $# -gt 0 ]; do
    case $1 in --v3) want="3, 4";; *) usage;; esac; shift
  done
  [ "$(id -u)" = 0 ] || { log "needs root"; exit 1; }
  mkdir -p "$LAB/exp" "$LAB/mnt" "$G"
  netns_up
  if ganesha_running && [ "$(cat "$G/protos" 2>/dev/null)" = "$want" ] && tcp_open $NFS_PORT; then
    log "ganesha already running (pid $(cat "$G/ganesha.pid"), protocols $want)"
  else
    ganesha_running && log "restarting ganesha for protocols '$want'"
    ganesha_stop
    ganesha_start "$want"
  fi
  write_env
  # build the UML xstate fix now, so the first uml-run.sh does not pay for it
  "$HERE/uml-run.sh" --build-only
  log "lab up: netns $NS, tap $TAP, server $HOST_IP:/export = $LAB/exp"
}

cmd_down() {
  local f others
  # UML guests still running (uml-run.sh records their pid under uml/umldir/UMID/pid)
  for f in "$LAB"/uml/umldir/*/pid; do
    [ -e "$f" ] || continue
    stop_pid "$f" linux.uml || true
    rm -rf "$(dirname "$f")"
  done
  ganesha_stop
  rm -f "$G/protos" "$LAB/lab.env"
  if netns_exists; then
    if [ -e "$LAB/netns.created" ]; then
      others=$(ip netns pids "$NS" 2>/dev/null | tr '\n' ' ')
      if [ -n "$others" ]; then
        log "processes not started by lab.sh still in netns $NS: $others- netns kept"; exit 1
      fi
      ip netns del "$NS"
      log "deleted netns $NS"
    else
      log "netns $NS was not created by lab.sh: kept"
    fi
  fi
  rm -f "$LAB/netns.created"
}

cmd_status() {
  netns_exists && echo "netns $NS: present" || echo "netns $NS: absent"
  netns_exists && ip -n "$NS" -br addr show "$TAP" 2>/dev/null || true
  if ganesha_running; then echo "ganesha: pid $(cat "$G/ganesha.pid"), protocols $(cat "$G/protos" 2>/dev/null)"
  else echo "ganesha: not running"; fi
  pid_is "$G/rpcbind.pid" rpcbind && echo "rpcbind: pid $(cat "$G/rpcbind.pid")" || true
  ganesha_running
}

cmd_check() {
  local started=0 rc=0 v opts out fails=""
  if ! ganesha_running || ! netns_exists; then started=1; fi
  cmd_up --v3
  mkdir -p "$LAB/check"
  # the probe runs in the guest with cwd = NFS mount; $1 = server-side path of the export
  cat > "$LAB/check/probe.sh" <<'EOF'
#!/bin/bash
# silly-rename probe (generated by lab.sh check)
set -u
srv=$1
d=probe.$$.$RANDOM
mkdir "$d" && echo payload > "$d/victim"
exec 3< "$d/victim"
rm "$d/victim" && echo "unlink while open: ok"
echo "client view: [$(ls -A "$d" | tr '\n' ' ')]"
echo "server view: [$(ls -A "$srv/$d" | tr '\n' ' ')]"
ls -A "$d" | grep -q '^\.nfs' && echo "SILLY_ENTRY=$(ls -A "$d" | grep '^\.nfs' | head -1)"
if msg=$(rmdir "$d" 2>&1); then echo "RMDIR_WHILE_OPEN=ok"; else echo "RMDIR_WHILE_OPEN=failed: ${msg##*: }"; fi
echo "read via open fd: $(cat <&3)"
exec 3<&-
for i in $(seq 20); do [ -z "$(ls -A "$d")" ] && break; sleep 0.1; done
echo "after close: [$(ls -A "$d" | tr '\n' ' ')]"
if rmdir "$d" 2>/dev/null; then echo "RMDIR_AFTER_CLOSE=ok"; else echo "RMDIR_AFTER_CLOSE=failed"; fi
EOF
  chmod +x "$LAB/check/probe.sh"
  for v in 3 4.1; do
    case $v in 3) opts="vers=3,nolock";; *) opts="vers=$v";; esac
    echo "=== vers=$v (mount -o $opts)"
    set +e
    out=$("$HERE/uml-run.sh" -o "$opts" -- "$LAB/check/probe.sh" "$LAB/exp" 2>"$LAB/check/stderr.$v")
    rc=$?
    set -e
    echo "$out" | sed 's/^/  /'
    sed 's/^/  /' "$LAB/check/stderr.$v"
    if [ $rc = 0 ] && grep -q '^SILLY_ENTRY=\.nfs' <<<"$out" &&
       grep -q '^RMDIR_WHILE_OPEN=failed: Directory not empty' <<<"$out"; then
      echo "  => vers=$v: silly rename OBSERVED (.nfs entry, rmdir ENOTEMPTY)"
    else
      echo "  => vers=$v: silly rename NOT observed (uml-run rc=$rc)"
      fails="$fails $v"
    fi
  done
  [ $started = 1 ] && cmd_down
  if [ -n "$fails" ]; then echo "lab check: FAILED for vers=$fails"; return 1; fi
  echo "lab check: OK (silly rename seen on vers=3 and vers=4.1)"
}

[ $# -ge 1 ] || usage
sub=$1; shift
case $sub in
  up) cmd_up "$@";;
  down) cmd_down;;
  status) cmd_status;;
  check) cmd_check;;
  *) usage;;
esac
