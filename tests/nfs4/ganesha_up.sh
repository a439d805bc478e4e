#!/bin/bash
# ganesha_up.sh STATE_DIR EXPORT_DIR ADDR PORT: start nfs-ganesha 4.3 (FSAL VFS, NFSv4
# only, minor versions 0-2) for the nfs4 and nfs41 tests, in the background, in a private
# mount namespace with its own /run (so it never touches the host's /run/ganesha). Adapted
# from the nfs-lab recipe: graceless (no 90 s grace period at start), a lease of
# $GANESHA_LEASE seconds (default 20), 180 fore-channel session slots as on ONTAP. Prints GANESHA_PID=...; the caller stops
# it with `kill PID` (ganesha_test.sh does, in its EXIT trap). GANESHA_GRACE=SECONDS
# (optional, >= the lease) turns the grace period on: Graceless = false, Grace_Period.
set -euo pipefail
[ $# -eq 4 ] || { echo "usage: $0 STATE_DIR EXPORT_DIR ADDR PORT" >&2; exit 2; }
STATE=$1 EXPORT_DIR=$2 ADDR=$3 PORT=$4

command -v ganesha.nfsd >/dev/null || {
  echo "ganesha.nfsd missing: apt-get install nfs-ganesha nfs-ganesha-vfs" >&2; exit 1; }
mkdir -p "$STATE/recovery" "$EXPORT_DIR"
STATE=$(readlink -f "$STATE")
EXPORT_DIR=$(readlink -f "$EXPORT_DIR")
CONF=$STATE/ganesha.conf LOG=$STATE/ganesha.log PIDF=$STATE/ganesha.pid
LEASE=${GANESHA_LEASE:-20}
GRACE_CONF="Graceless = true;"
if [ -n "${GANESHA_GRACE:-}" ]; then
  [[ $GANESHA_GRACE =~ ^[0-9]+$ && $GANESHA_GRACE -ge $LEASE ]] || {
    echo "GANESHA_GRACE must be whole seconds >= the lease ($LEASE), got '$GANESHA_GRACE'" >&2
    exit 2; }
  GRACE_CONF="Graceless = false; Grace_Period = $GANESHA_GRACE;"
fi

cat > "$CONF" <<CONF
NFS_CORE_PARAM {
    Bind_addr = $ADDR;
    NFS_Port = $PORT;
    Protocols = 4;
    Enable_NLM = false;
    Enable_RQUOTA = false;
    Enable_UDP = false;
}
NFSV4 {
    $GRACE_CONF
    Lease_Lifetime = $LEASE;
    Slot_Table_Size = 180;
    Minor_Versions = 0, 1, 2;
    RecoveryBackend = fs;
    RecoveryRoot = "$STATE/recovery";
    Allow_Numeric_Owners = true;
    Only_Numeric_Owners = true;
}
NFS_KRB5 { Active_krb5 = false; }
EXPORT {
    Export_Id = 1;
    Path = "$EXPORT_DIR";
    Pseudo = "/export";
    Protocols = 4;
    Transports = TCP;
    Access_Type = RW;
    Squash = No_Root_Squash;
    SecType = sys;
    Attr_Expiration_Time = 0;
    FSAL { Name = VFS; }
}
LOG { Default_Log_Level = EVENT; }
CONF

INNER=$STATE/inner.sh
cat > "$INNER" <<INNER
#!/bin/bash
set -e
mount -t tmpfs -o mode=0755 nfs4test-run /run
mkdir -p /run/ganesha
exec ganesha.nfsd -F -f "$CONF" -L "$LOG" -p "$PIDF" -N NIV_EVENT
INNER
chmod +x "$INNER"

: > "$LOG"
unshare --mount --propagation private "$INNER" </dev/null >"$STATE/ganesha.stdout" 2>&1 &
PID=$!  # unshare and inner.sh exec: this is ganesha.nfsd's PID
alive() { local st; st=$(ps -o stat= -p "$1" 2>/dev/null) && [ "${st#Z}" = "$st" ]; }
for _ in $(seq 200); do
  alive $PID || break
  if bash -c "exec 3<>/dev/tcp/$ADDR/$PORT" 2>/dev/null; then
    echo "GANESHA_PID=$PID"
    exit 0
  fi
  sleep 0.05
done
echo "ganesha did not come up on $ADDR:$PORT; log:" >&2
cat "$STATE/ganesha.stdout" "$LOG" >&2
kill $PID 2>/dev/null || true
exit 1
