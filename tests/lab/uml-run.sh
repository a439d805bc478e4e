#!/bin/bash
# uml-run.sh - run one command inside a user-mode-linux guest (Debian user-mode-linux, Linux
# 6.1) that has the lab's export mounted with the REAL Linux kernel NFS client.  The command is
# a host program: the guest's root is the host's / (hostfs, READ-ONLY), so e.g. binaries in
# /work/main/build/... run as they are.  Writable in the guest: $NFSSHIM_LAB (hostfs, so also
# the server's export dir $NFSSHIM_LAB/exp, i.e. the "server view") and the NFS mount.
# Start the server first: lab.sh up [--v3].
#
# Usage: uml-run.sh [options] -- CMD [ARGS...]
#   -o OPTS      NFS mount options (default vers=4.1).  v3: "vers=3" (needs lab.sh up --v3;
#                ",nolock" is appended as ganesha has no NLM; the lab's rpcbind gives the ports).  "none": no network, no mount
#                (cwd is then $NFSSHIM_LAB; no lab.sh up needed, and no tap lock is taken).
#   -e VAR       pass host env variable VAR into the command's environment (repeatable);
#   -e VAR=VAL   or set it to VAL.  Only the command gets these, not the guest's init/mount.
#                The host-side tools, linux.uml included, never run with the caller's
#                LD_PRELOAD (it is removed from this script's environment at start).
#   -M MEM       guest memory (default 1024M; a JVM's default heap is 1/4 of it)
#   -T SECS      overall timeout (default 300)
#   -k           keep the per-run dir ($NFSSHIM_LAB/uml/runs/run.*: console.log etc.)
#   -q           no "UML:" timing lines on stderr
#   --build-only just build the xstate fix (see below) and exit
#
# The command runs as root in the guest, cwd = the NFS mount ($NFSSHIM_LAB/mnt), stdin
# /dev/null, via bash; env: PATH, LANG=C.UTF-8, HOME=$NFSSHIM_LAB/guest-home,
# TMPDIR=$NFSSHIM_LAB/guest-tmp (host /tmp is read-only in the guest) plus the -e variables.
# Its stdout/stderr are printed on stdout/stderr after the guest powered off.
# Exit status: the command's; 124 timeout; 125 boot/mount failure (console log is shown).
# Timing on stderr: "UML: boot ...s, net+modprobe ...s, mount ...s, command ...s, wall ...s".
# The guest has 1 CPU; one guest at a time uses the tap (flock), others wait.
#
# Host-CPU fix: on CPUs with AMX (e.g. Sapphire Rapids) the host kernel's XSAVE regset is
# 11008 bytes, UML 6.1 writes only 2696 with PTRACE_SETREGSET(NT_X86_XSTATE), gets EFAULT
# and kills every guest process with SIGSEGV (init: "Attempted to kill init!
# exitcode=0x0000000b").  linux.uml is therefore started with LD_PRELOAD=uml-xstate-fix.so
# (source next to this script, built with cc into $NFSSHIM_LAB/uml/ on first use), which
# pads those calls to the host's size.  Harmless on hosts without the problem.
# NFSSHIM_UML_NO_FIX=1 starts linux.uml without it (negative control / other hosts).
#
# Second UML 6.1 limitation (measured, independent of the fix): a guest signal frame keeps
# only x87/SSE/AVX state; AVX-512 state (upper ZMM halves, ZMM16-31, k0-k7) is NOT restored
# by sigreturn, so whatever a signal handler leaves there leaks into the interrupted code.
# glibc's EVEX string functions (ymm16-31) then return wrong results when handlers also call
# them.  So the guest runs with GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX512F,-AVX512VL,-AVX512BW,
# -AVX512DQ,-AVX512CD (override: -e GLIBC_TUNABLES=...).  Other AVX-512 users need the same:
# JVMs in the guest should get -XX:UseAVX=2 (HotSpot 17 picks UseAVX=3 here), and code built
# with -march=native or using AVX-512 intrinsics is at risk if it takes signals.
#
# Requires: user-mode-linux kmod (modprobe), gcc, iproute2, util-linux, coreutils.
set -euo pipefail
CALLER_LD_PRELOAD=${LD_PRELOAD-}
CALLER_HAS_LD_PRELOAD=${LD_PRELOAD+1}
unset LD_PRELOAD

LAB=${NFSSHIM_LAB:-/tmp/nfsshim-lab}
LAB=$(mkdir -p "$LAB" && cd "$LAB" && pwd -P)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OPTS=vers=4.1; MEM=1024M; TMO=300; KEEP=0; QUIET=0
ENVS=()

usage() { sed -n '2,37p' "$0" >&2; exit 2; }

build_fix() {
  local so=$LAB/uml/uml-xstate-fix.so src=$HERE/uml-xstate-fix.c
  mkdir -p "$LAB/uml"
  if [ ! -s "$so" ] || [ "$src" -nt "$so" ]; then
    cc -O2 -Wall -shared -fPIC -o "$so.tmp.$$" "$src" -ldl
    mv -f "$so.tmp.$$" "$so"
  fi
  FIXSO=$so
}

while [ $# -gt 0 ]; do
  case $1 in
    -o) OPTS=$2; shift 2;;
    -e) ENVS+=("$2"); shift 2;;
    -M) MEM=$2; shift 2;;
    -T) TMO=$2; shift 2;;
    -k) KEEP=1; shift;;
    -q) QUIET=1; shift;;
    --build-only) build_fix; exit 0;;
    --) shift; break;;
    -h|--help) usage;;
    -*) echo "uml-run.sh: unknown option $1" >&2; usage;;
    *) break;;
  esac
done
[ $# -ge 1 ] || usage

command -v linux.uml >/dev/null || { echo "uml-run.sh: apt-get install user-mode-linux" >&2; exit 125; }
command -v modprobe >/dev/null || { echo "uml-run.sh: apt-get install kmod" >&2; exit 125; }
build_fix

NET=1; [ "$OPTS" = none ] && NET=0
# ganesha here has no NLM: NFSv3 mounts need nolock (else mount.nfs wants rpc.statd)
if [[ ,$OPTS, =~ ,(vers|nfsvers)=3, ]] && ! [[ ,$OPTS, =~ ,(no)?lock, ]]; then OPTS=$OPTS,nolock; fi
if [ $NET = 1 ]; then
  [ -s "$LAB/lab.env" ] || { echo "uml-run.sh: lab not up ($LAB/lab.env missing): run lab.sh up" >&2; exit 125; }
  # shellcheck disable=SC1091
  . "$LAB/lab.env"
  if [[ ,$OPTS, =~ ,(vers|nfsvers)=3, ]] && [[ $LAB_PROTOS != *3* ]]; then
    echo "uml-run.sh: -o $OPTS but the lab serves NFSv4 only: run lab.sh up --v3" >&2; exit 125
  fi
  ip netns exec "$LAB_NETNS" ip link show "$LAB_TAP" >/dev/null 2>&1 ||
    { echo "uml-run.sh: tap $LAB_TAP not in netns $LAB_NETNS: run lab.sh up" >&2; exit 125; }
  ip netns exec "$LAB_NETNS" bash -c "exec 3<>/dev/tcp/$LAB_SERVER/2049" 2>/dev/null ||
    { echo "uml-run.sh: no NFS server on $LAB_SERVER:2049 in netns $LAB_NETNS: run lab.sh up" >&2; exit 125; }
fi

KVER=$(ls /usr/lib/uml/modules | sort -V | tail -1)
MODROOT=$LAB/uml/modroot
MNT=$LAB/mnt
mkdir -p "$MODROOT/lib/modules" "$MNT" "$LAB/uml/umldir" "$LAB/uml/runs" "$LAB/guest-home" "$LAB/guest-tmp"
ln -sfn "/usr/lib/uml/modules/$KVER" "$MODROOT/lib/modules/$KVER"

RUN=$(mktemp -d "$LAB/uml/runs/run.XXXXXX")
ID=nfsshim-$(basename "$RUN" | tr -c 'a-zA-Z0-9\n' '-')

GUEST_TUNABLES=glibc.cpu.hwcaps=-AVX512F,-AVX512VL,-AVX512BW,-AVX512DQ,-AVX512CD

# NFSSHIM_UML_NO_FIX=1: start linux.uml without the xstate fix (to see whether a host needs it)
[ "${NFSSHIM_UML_NO_FIX:-0}" = 1 ] && FIXSO=

# the command script: exports for the command only, then cd + exec
{
  echo "# generated by uml-run.sh"
  for e in "${ENVS[@]}"; do
    if [[ $e == *=* ]]; then name=${e%%=*}; val=${e#*=}
    else
      name=$e
      if [ "$name" = LD_PRELOAD ]; then
        [ -n "$CALLER_HAS_LD_PRELOAD" ] || { echo "uml-run.sh: -e LD_PRELOAD: not set" >&2; exit 2; }
        val=$CALLER_LD_PRELOAD
      else
        [ -n "${!name+x}" ] || { echo "uml-run.sh: -e $name: not set in the environment" >&2; exit 2; }
        val=${!name}
      fi
    fi
    [[ $name =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || { echo "uml-run.sh: bad variable name '$name'" >&2; exit 2; }
    printf 'export %s=%q\n' "$name" "$val"
  done
  printf 'cd %q || exit 125\n' "$([ $NET = 1 ] && echo "$MNT" || echo "$LAB")"
  printf 'exec'; printf ' %q' "$@"; echo
} > "$RUN/cmd.sh"

# PID 1 of the guest (POSIX sh; runs with the host's /bin/sh from the read-only hostfs root)
cat > "$RUN/init.sh" <<EOF
#!/bin/sh
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8
export HOME=$LAB/guest-home TMPDIR=$LAB/guest-tmp
# UML 6.1 does not save AVX-512 state (ZMM hi halves, ZMM16-31, k0-7) in guest signal frames:
# keep glibc off its EVEX/AVX-512 string functions (see the header)
export GLIBC_TUNABLES=$GUEST_TUNABLES
R=$RUN
up() { cut -d' ' -f1 /proc/uptime; }
off() { cd /; sync; echo o > /proc/sysrq-trigger; sleep 30; }
fail() { echo "\$1" > \$R/fail; echo "UML-INIT FAILED: \$1"; off; }
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /dev/shm 2>/dev/null
mount -t hostfs -o $LAB hostfs $LAB || fail "hostfs $LAB"
up > \$R/t_init
hostname uml-nfsshim
if [ $NET = 1 ]; then
  ip link set lo up
  ip link set vec0 up || fail "no vec0"
  ip addr add ${LAB_GUEST:-} dev vec0
  modprobe -d $MODROOT nfsv4 || fail "modprobe nfsv4"
  modprobe -d $MODROOT nfsv3 || fail "modprobe nfsv3"
  up > \$R/t_modprobed
  ok=0
  for i in 1 2 3; do   # retry only what may be transient (server still starting)
    if timeout -k 2 30 mount -t nfs -o "$OPTS" "${LAB_SERVER:-}:${LAB_EXPORT:-}" "$MNT" 2>\$R/mount.err; then ok=1; break; fi
    grep -qiE 'refused|timed out|try again|temporar' \$R/mount.err || break
    sleep 0.5
  done
  [ \$ok = 1 ] || fail "mount -t nfs -o $OPTS ${LAB_SERVER:-}:${LAB_EXPORT:-} $MNT: \$(tail -1 \$R/mount.err)"
  echo \$i > \$R/mount_attempts
  grep " $MNT " /proc/mounts > \$R/mountinfo
fi
up > \$R/t_mounted
bash \$R/cmd.sh > \$R/out 2> \$R/err < /dev/null
echo \$? > \$R/rc
up > \$R/t_done
cd /
[ $NET = 1 ] && { umount "$MNT" || umount -l "$MNT"; }
off
EOF
chmod +x "$RUN/init.sh"

# linux.uml runs with a clean environment plus the xstate fix (never the caller's LD_PRELOAD)
# shellcheck disable=SC2054  # (the commas in con0=fd:0,fd:1 are intended)
UML=(env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin ${FIXSO:+"LD_PRELOAD=$FIXSO"}
     linux.uml "mem=$MEM" root=/dev/root rootfstype=hostfs rootflags=/ ro
     "init=$RUN/init.sh" con=null con0=fd:0,fd:1 ssl=null "umid=$ID" "uml_dir=$LAB/uml/umldir")
if [ $NET = 1 ]; then
  UML+=("vec0:transport=tap,ifname=$LAB_TAP,gro=1")   # gro=1: else large frames are dropped
  UML=(ip netns exec "$LAB_NETNS" "${UML[@]}")
fi

t0=$(date +%s.%N)
set +e
if [ $NET = 1 ]; then
  (
    flock -w "$TMO" 9 || exit 124            # one guest per tap at a time
    exec timeout -k 5 "$TMO" "${UML[@]}" </dev/null >"$RUN/console.log" 2>&1
  ) 9>"$LAB/uml/tap.lock"
else
  timeout -k 5 "$TMO" "${UML[@]}" </dev/null >"$RUN/console.log" 2>&1
fi
urc=$?
set -e
t1=$(date +%s.%N)
# no UML process of this run may survive (timeout kills its process group; this is the
# belt to those braces, by the PID UML recorded)
if [ -s "$LAB/uml/umldir/$ID/pid" ]; then
  p=$(cat "$LAB/uml/umldir/$ID/pid")
  [ "$(cat "/proc/$p/comm" 2>/dev/null)" = linux.uml ] && kill -9 "$p" 2>/dev/null
fi
rm -rf "$LAB/uml/umldir/$ID"

[ -f "$RUN/out" ] && cat "$RUN/out"
[ -f "$RUN/err" ] && cat "$RUN/err" >&2
dt() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", b-a}'; }
wall=$(dt "$t0" "$t1")
if [ -f "$RUN/rc" ] && [ -f "$RUN/t_done" ]; then
  rc=$(cat "$RUN/rc")
  ti=$(cat "$RUN/t_init"); tm=$(cat "$RUN/t_mounted"); td=$(cat "$RUN/t_done")
  if [ $NET = 1 ]; then
    tp=$(cat "$RUN/t_modprobed")
    nfs="net+modprobe $(dt "$ti" "$tp")s, mount $(dt "$tp" "$tm")s ($(cat "$RUN/mount_attempts") attempt(s))"
  else nfs="no NFS"; fi
  if [ $QUIET = 0 ]; then
    echo "UML: boot ${ti}s, $nfs, command $(dt "$tm" "$td")s, wall ${wall}s, rc=$rc" >&2
    [ -f "$RUN/mountinfo" ] && echo "UML: mount: $(cut -d' ' -f1-4 "$RUN/mountinfo")" >&2
  fi
  if [ $KEEP = 1 ]; then echo "UML: run dir kept: $RUN" >&2; else rm -rf "$RUN"; fi
  exit "$rc"
fi
if [ $urc = 124 ] || [ $urc = 137 ]; then
  echo "UML: TIMEOUT after ${wall}s; console log: $RUN/console.log" >&2
  tail -20 "$RUN/console.log" >&2
  exit 124
fi
echo "UML: guest failed ($(cat "$RUN/fail" 2>/dev/null || echo "linux.uml exit $urc")) after ${wall}s; console log: $RUN/console.log" >&2
grep -m3 -E 'Kernel panic|UML-INIT FAILED|mount\.nfs' "$RUN/console.log" >&2 || true
tail -12 "$RUN/console.log" >&2
exit 125
