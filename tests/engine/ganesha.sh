#!/bin/bash
# ganesha.sh: start/stop a private nfs-ganesha (NFSv3 + v4) for the engine tests.
# Adapted from the nfs-lab recipe; sourced by the test scripts:
#   ganesha_start STATE EXPORT_DIR PORT MNT_PORT [VFS|MEM]   sets GANESHA_PID
#     GANESHA_EXPORT_EXTRA: more lines for the EXPORT block (e.g. "NFS_Commit = true;")
#     GANESHA_ID_MAPPING=1: owners go out as "name@domain" (ganesha's default; numeric only
#       for ids without a name) instead of always numeric; GANESHA_IDMAP_CONF: the
#       idmapd.conf it takes its domain from (default /etc/idmapd.conf)
#   ganesha_stop STATE
#   ganesha_crash STATE   SIGKILL ganesha (a server crash) and stop its rpcbind, so that
#                         ganesha_start can start both again
# ganesha and its private rpcbind run in their own mount namespace with a private /run;
# rpcbind also gets an empty network namespace, so clients must name nfsport/mountport.
# Everything started is recorded in STATE/*.pid and stopped by PID.

ganesha_start() {
  local state=$1 export_dir=$2 port=$3 mnt_port=$4 fsal=${5:-VFS}
  command -v ganesha.nfsd >/dev/null || { echo "ganesha.nfsd missing: apt-get install nfs-ganesha nfs-ganesha-vfs nfs-ganesha-mem" >&2; return 1; }
  mkdir -p "$state/recovery"
  state=$(readlink -f "$state")
  if [ "$fsal" = VFS ]; then mkdir -p "$export_dir"; export_dir=$(readlink -f "$export_dir"); fi
  local conf=$state/ganesha.conf
  local owners="Only_Numeric_Owners = true;"
  if [ "${GANESHA_ID_MAPPING:-0}" = 1 ]; then
    owners="Only_Numeric_Owners = false;${GANESHA_IDMAP_CONF:+ IdmapConf = \"$GANESHA_IDMAP_CONF\";}"
  fi
  cat > "$conf" <<CONF
NFS_CORE_PARAM {
    Bind_addr = ${GANESHA_BIND_ADDR:-127.0.0.1};
    NFS_Port = $port;
    MNT_Port = $mnt_port;
    Protocols = 3, 4;
    Enable_NLM = false;
    Enable_RQUOTA = false;
    Enable_UDP = false;
    mount_path_pseudo = true;
}
NFSV4 { Graceless = true; RecoveryBackend = fs; RecoveryRoot = "$state/recovery"; Allow_Numeric_Owners = true; $owners }
NFS_KRB5 { Active_krb5 = false; }
EXPORT {
    Export_Id = 1;
    Path = "$export_dir";
    Pseudo = /export;
    Protocols = 3, 4;
    Transports = TCP;
    Access_Type = RW;
    Squash = No_Root_Squash;
    SecType = sys;
    Attr_Expiration_Time = 0;
    ${GANESHA_EXPORT_EXTRA:-}
    FSAL { Name = $fsal; }
}
LOG { Default_Log_Level = EVENT; }
CONF
  # FSAL MEM keeps at most Inode_Size bytes of data per file (2 MiB is its maximum).
  [ "$fsal" = MEM ] && printf 'MEM {\n    Inode_Size = 2097152;\n}\n' >> "$conf"
  cat > "$state/inner.sh" <<INNER
#!/bin/bash
set -e
mount -t tmpfs -o mode=0755 nfsshim-engine-run /run
mkdir -p /run/ganesha /run/rpcbind
chown _rpc /run/rpcbind 2>/dev/null || true
unshare --net rpcbind -f </dev/null >"$state/rpcbind.out" 2>&1 &
echo \$! > "$state/rpcbind.pid"
for i in \$(seq 100); do [ -S /run/rpcbind.sock ] && break; sleep 0.05; done
exec ganesha.nfsd -F -f "$conf" -L "$state/ganesha.log" -p "$state/ganesha.pidfile" -N NIV_EVENT
INNER
  chmod +x "$state/inner.sh"
  # A server still on PORT (one being stopped, another lab's) would answer the readiness
  # probe below while ours fails to bind and exits: a test would then run against the old
  # one, or hang on a hard mount once it is gone. Wait for the port to be free, and count
  # only a listener that is ours as ready.
  local i holder=
  for i in $(seq 100); do
    holder=$(ss -Hltnp "sport = :$port" 2>/dev/null) || holder=
    [ -z "$holder" ] && break
    sleep 0.1
  done
  if [ -n "$holder" ]; then
    echo "ganesha: port $port is still in use after 10 s, not starting: $holder" >&2
    return 1
  fi
  : > "$state/ganesha.log"
  unshare --mount --propagation private "$state/inner.sh" </dev/null >"$state/ganesha.stdout" 2>&1 &
  GANESHA_PID=$!
  echo "$GANESHA_PID" > "$state/ganesha.pid"
  for i in $(seq 300); do
    if ! kill -0 "$GANESHA_PID" 2>/dev/null; then break; fi
    if ss -Hltnp "sport = :$port" 2>/dev/null | grep -q "pid=$GANESHA_PID," &&
      bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null; then return 0; fi
    sleep 0.05
  done
  echo "ganesha did not come up on 127.0.0.1:$port; log:" >&2
  cat "$state/ganesha.stdout" "$state/ganesha.log" >&2
  ganesha_stop "$state"
  return 1
}

# Stops ganesha (SIGTERM, then SIGKILL) and its rpcbind, by the recorded PIDs.
ganesha_stop() {
  local state=$1 f pid i
  for f in ganesha.pid rpcbind.pid; do
    [ -s "$state/$f" ] || continue
    pid=$(cat "$state/$f")
    kill "$pid" 2>/dev/null || true
    for i in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    for i in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done  # its port freed
    rm -f "$state/$f"
  done
}

# A server crash: ganesha gets SIGKILL; its rpcbind is stopped too (a restart starts a new
# one, and the old one must not outlive the test).
ganesha_crash() {
  local state=$1 pid i
  [ -s "$state/ganesha.pid" ] && kill -9 "$(cat "$state/ganesha.pid")" 2>/dev/null
  if [ -s "$state/rpcbind.pid" ]; then
    pid=$(cat "$state/rpcbind.pid")
    kill "$pid" 2>/dev/null || true
    for i in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$state/rpcbind.pid"
  fi
  return 0
}
