#!/bin/bash
# fuse_nfs_test.sh BUILD_DIR MODE PORT MNT_PORT
# nfsshim-fuse with an nfs:// SOURCE (the direct engines) against a private nfs-ganesha
# (NFSv3 + v4.1) on 127.0.0.1:PORT/MNT_PORT. MODE:
#   kafka-native | kafka-java  the Kafka partition-delete pattern through the mount; the
#                              graveyard on the export is empty afterwards; with -v41
#                              (kafka-native-v41, kafka-java-v41) over vers=4.1
#   mem-reader                 FSAL MEM (a removed file vanishes for every holder): a reader
#                              keeps reading a file another process unlinked through the mount;
#                              control: the same removal by another client (no graveyard) breaks it
#   bad-urls                   bad URLs/options/servers: clear error, non-zero exit, nothing mounted
#   read-ahead                 the mount's readahead is raised after INIT (default 4096 KiB), so
#                              sequential reads arrive as 1 MiB READs; control read_ahead_kb=0
#   parallel-lookups           LOOKUPs in one directory reach the daemon several at a time;
#                              control -o nopassthrough (libfuse's io): one at a time
#   preserve-v41               vers=4.1: where the server keeps unlinked open files (OPEN4_RESULT_
#                              PRESERVE_UNLINKED; simulated by a test hook, no server here sets
#                              it) unlink of an open file is a plain REMOVE, no graveyard entry,
#                              and the holder reads on; control: without it, the graveyard
#   locks-wait-v41             F_SETLKW waits do not take the request threads: through a
#                              mount with max_threads=2, 3 processes wait for a lock held
#                              through a second mount, and meanwhile stat and ls of the mount
#                              answer, a signal ends each wait with EINTR, SIGTERM stops the
#                              daemon (after its unmount work) within seconds; after the
#                              release a new waiter is granted; then the holder is a process
#                              of the same mount, and its close still comes through past 3
#                              waiters, which all get the lock in turn (vers=4.1 only: vers=3
#                              locks are the kernel's, no request waits)
#   locks-v41                  POSIX locks through two vers=4.1 mounts of one export (two
#                              "hosts"): a lock held through one is seen and refused through
#                              the other, F_SETLKW waits for its release or ends on a signal,
#                              close(2) releases; control: two vers=3 mounts (kernel-local
#                              locks) do not see each other's locks
#   write-behind               WRITEs answered before the server's reply (write_behind_kb):
#                              16 KiB appends land intact while another process's stat never
#                              sees the size go down; several were in flight at once;
#                              O_SYNC writes and write_behind_kb=0 are never answered early;
#                              on a full export (8 MiB tmpfs) the failed write's ENOSPC
#                              reaches the application, and the next writes work again;
#                              it reaches the descriptor that wrote, even after another
#                              one (a reader) was closed first; with -v41;
#                              UNSTABLE data kept for COMMIT is bounded (max_unstable_mb,
#                              commit_secs), and none is kept for a server that answers
#                              FILE_SYNC (ganesha's NFS_Commit = true): no COMMIT at all
#   o-trunc                    open(O_TRUNC) of an existing file truncates it: a shorter
#                              rewrite leaves no old tail (the mount and the export), also
#                              while another descriptor's answered writes are in flight;
#                              with -v41
#   groups                     a file writable only through a supplementary group of the
#                              caller (0660 root:4242, uid 65534 with group 4242): writes,
#                              fsync, close and reads through the mount work and land on the
#                              export (the open's READ/WRITE/COMMIT carry the caller's
#                              groups); control: without the group, open is refused; with -v41
#   squash-unlink              under root_squash (the daemon is the anonymous uid 4242 on the
#                              server) a user unlinks its own file in its own 0755 directory
#                              while holding it open: the unlink works, the holder reads on,
#                              the graveyard is empty after the close (the server refuses
#                              the daemon's RENAME into the graveyard: it links the file
#                              there and the user's REMOVE takes the name);
#                              another user's unlink there is refused; a held file with a
#                              second name, the graveyard made 0500: a plain unlink, the
#                              other name keeps the data; with -v41
#   two-writers                two descriptors write one file; the first (whose open the
#                              engine's writes use: the oldest) closes while the second
#                              writes: no write, fsync or close fails (v4.1: a WRITE with the
#                              stateid of an open being closed got BAD_STATEID, EIO); data
#                              intact; with -v41
#   graveyard-owner            the graveyard's u<uid> level on the export must be ours alone:
#                              another user's, or open to group/others, is refused before
#                              mounting with the reason named; ours (0700) mounts, also under
#                              root_squash (owned by the anonymous uid, with a warning at
#                              each mount: its other principals own it too); with -v41
#   graveyard-reap             reaping at mount by the rule of gc and a local SOURCE
#                              (classify_entry): an entry planted for this host's name but
#                              another boot (a pod or a cloned VM with our hostname) is kept
#                              until foreign_max_age; one of this boot whose owner's pid is
#                              gone is reaped at once; with foreign_max_age = 0 in the
#                              settings file the other boot's goes too; with -v41
#   graveyard-removed          the graveyard removed on the export under the mount (rm -rf,
#                              with a held file buried there; then its u<uid> level): the next unlink and
#                              the next rename over a held file make it again (checked as at
#                              mount, one warning each), the holders read on, the entries go at
#                              the last close, the old entry's REMOVE finds nothing and says so
#                              (before 2026-12-06 both failed with ESTALE until a remount); with -v41
#   held-hardlink              a held file with two names: unlink of one through the mount, or a
#                              rename over it, buries it (the graveyard has an entry while held),
#                              another client removing the other name does not take it from the
#                              holder, the entry goes at the last close and the other name, if
#                              left, keeps the data (before 2026-12-06 such a file was not
#                              buried: a plain REMOVE); with -v41
#   splice-writes              WRITE data through a pipe (write_buf, FUSE_CAP_SPLICE_READ) where
#                              a pipe holds the largest request: every path of op_write_buf
#                              lands the right bytes on the export; controls -o nosplice and a
#                              daemon without CAP_SYS_RESOURCE under a 1 MiB fs.pipe-max-size:
#                              off, the reason logged, no write through a pipe
#   create-trunc               open(O_CREAT|O_TRUNC) of a name another client creates (1 MiB)
#                              after the kernel's LOOKUP saw none (the test hook
#                              NFSSHIM_TEST_CREATE_GATE holds our CREATE until it exists):
#                              the file is truncated, a 10-byte write leaves exactly those
#                              10 bytes (the CREATE carries size 0, as the kernel's does;
#                              before 2026-12-05 the old tail stayed); control: without
#                              O_TRUNC the other client's bytes stay; with -v41 also another
#                              user's O_RDONLY|O_CREAT meeting a file it may only read opens
#                              it and reads (the OPEN asked for read and write: EACCES)
#   hole-read                  a 4 KiB write at 1 MiB into an empty file is answered at once
#                              (write-behind) and mapped right away: the page faults at 0 and
#                              at 1 MiB read zeros and the written bytes (a READ below the
#                              answered write reached the server first, got end of file, and
#                              the kernel cut the file's size: SIGBUS); with -v41
#   open-size                  close-to-open for the size: a file read through one mount
#                              (attr_timeout=30) and appended to through another reads whole
#                              at its next open (the kernel's cached size used to cut it off
#                              until attr_timeout ran out); with -v41
#   rename-flags               renameat2 with RENAME_NOREPLACE or RENAME_EXCHANGE fails with
#                              EINVAL and changes nothing, as on the kernel's NFS client (a
#                              LOOKUP then RENAME was not atomic: another client's file made in
#                              between was replaced); both engines share this code: vers=3
#   squash-restart-v41         under root_squash, a user holds its own 0600 file open for
#                              writing while ganesha restarts (Graceless: no reclaim, so the
#                              engine re-opens every open file): the re-open goes as the
#                              opener, not as the mount's squashed root, so the next writes,
#                              fsync and close work and land (vers=4.1 only)
#   restart-unstable           the server restarts and loses written data still kept for
#                              COMMIT (ganesha answers WRITEs UNSTABLE; SIGKILL, the export
#                              files cut to 0 bytes as a lost page cache would leave them,
#                              restart): stat through the mount still shows the written
#                              size, a read through the writer's other descriptor gets the
#                              written bytes, an O_APPEND write goes after them, and the
#                              export ends up with all of it (before 2026-12-05 stat showed 0,
#                              the append landed at offset 0 and the file was "new" + 97 of
#                              the 100 bytes); then, with the restarted server's disk full
#                              (1 MiB tmpfs), the re-send fails: close(2) says ENOSPC and
#                              the daemon logs the bytes it drops at ERROR; a file written
#                              and then given a 2001 mtime (futimens) before the restart
#                              keeps that mtime (its SETATTR commits the kept data first, as
#                              the kernel's nfs_setattr does; before 2026-12-05 the data was
#                              re-sent after the restart and moved the mtime); with -v41
#   idmap-v41                  vers=4.1 against a ganesha with ID mapping (owners sent as
#                              "name@domain", ganesha's default): root's new file is
#                              0:0; uid 1 (daemon) creates in its own 0755 directory and its
#                              file is 1:1 (-o default_permissions: the kernel checks the
#                              owner the daemon reports); an id with no name is shown as the
#                              number ganesha sends; chown through the mount (numeric owner
#                              strings) lands; a server in another NFSv4 domain: nobody
#                              (65534) and a log line naming the owner, once. Also: ls -f lists
#                              "." and ".." first, once each (a v4 server never sends them),
#                              in a small directory and in one of 1500 entries (several
#                              READDIR and FUSE readdir calls), the graveyard still hidden
#   unlock-commit              data written under a POSIX lock is committed before the lock
#                              is released: through mount A a process writes 100 bytes under
#                              a lock and releases it (f1: F_UNLCK; f2: the close of another,
#                              read-only descriptor of the file, which drops the process's
#                              locks) but keeps the files open; ganesha restarts (a new write
#                              verifier); through mount B another "host" locks, writes 100
#                              other bytes over them, fsyncs and unlocks; then A closes: the
#                              export must keep B's bytes and A's daemon re-sends nothing
#                              (before 2026-12-05 the unlock only waited for the writes to
#                              land, UNSTABLE, and A's close re-sent them FILE_SYNC over B's);
#                              vers=4.1 (server locks, the daemon sees the unlock); vers=3 is
#                              the control: its locks are the kernel's, local to the host,
#                              the daemon never sees the unlock and A's close does re-send
#   readdir-churn              listings of a directory (3000 stable names) through the mount
#                              while a loop on the export creates and removes churn_N files in
#                              it: every listing succeeds and has every stable name (ganesha
#                              failed a READDIR whose entry vanished mid-scan, ESTALE, and the
#                              listing was not restarted); with -v41
#   lock-two-opens             one process, several opens: each case runs in a fresh python
#                              process under timeout 20 and must be granted (or refused the
#                              kernel's way) promptly, never poll forever: write lock on f2
#                              (open O_RDWR, plus or minus a second O_RDONLY descriptor), with
#                              or without first lock/write/F_UNLCK on f1 by the same process,
#                              by F_SETLK and by F_SETLKW; a write lock through the O_RDONLY
#                              descriptor is EBADF; with -v41 (server locks; vers=3: the kernel's)
#   lock-late-release          one process locks through descriptor a, forks (the child keeps
#                              a open), closes a (its locks go, POSIX), locks again through
#                              descriptor b of the same file; the child exits, which releases
#                              a's open: another process must still be refused the range
#                              before and after that; with -v41 (server locks; vers=3: the
#                              kernel's)
#   held-unlink-perm           uid 65534 unlinks its own files in a directory the kernel cached
#                              as 0777 (attr_timeout=30) that is root's 0755 on the export now:
#                              a plain file and one it holds open both fail EACCES (the server
#                              judges both), the holder reads on, both names stay; and root's
#                              files in a directory made sticky (1777): the same errno for both;
#                              its own held file there: unlinked, the holder reads on
#   term-dead-server-v41       the server dies for good (kill -9) under a hard mount while it
#                              is idle; once the lease renewal waits for its reply (timeo=10:
#                              "not responding" after 1 s), SIGTERM ends the daemon within 10 s
#                              (its teardown hung on the renewer's endless retries before)
# Stops everything it started (trap), by PID.
set -uo pipefail
build=$1 mode=$2 port=$3 mnt_port=$4
here=$(cd "$(dirname "$0")" && pwd)
. "$here/ganesha.sh"
shim=$build/fusefs/nfsshim-fuse
work=$(mktemp -d /tmp/nfsshim-fuse-nfs.XXXXXX)
mnt=$work/mnt
mkdir -p "$mnt"
shim_pid=
shim_opts=  # more -o options for the daemon
pipe_max_was=  # fs.pipe-max-size to restore (splice-writes)
shim_wrap=  # a command (and its options) the daemon runs under
cleanup() {
  set +e
  grep -q " $mnt " /proc/self/mountinfo && fusermount3 -u -z "$mnt"
  [ -n "$shim_pid" ] && kill "$shim_pid" 2>/dev/null && wait "$shim_pid" 2>/dev/null
  ganesha_stop "$work/state"
  grep -q " $work/small " /proc/self/mountinfo && umount "$work/small"
  [ -n "$pipe_max_was" ] && echo "$pipe_max_was" > /proc/sys/fs/pipe-max-size
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [ -f "$work/shim.log" ] && tail -20 "$work/shim.log" >&2; exit 1; }
pass() { echo "PASS: $*"; }
vers=3 engine="direct NFSv3 engine"
case $mode in *-v41) mode=${mode%-v41} vers=4.1 engine="direct NFSv4.1 engine" ;; esac
url="nfs://127.0.0.1/export?vers=$vers&nfsport=$port&mountport=$mnt_port"

start_mount() {  # SOURCE MOUNTPOINT LOG: the daemon in the background, its PID in started
  $shim_wrap "$shim" "$1" "$2" -f -o log=file:"$3"${shim_opts:+,$shim_opts} &
  started=$!
  for i in $(seq 100); do
    grep -q " $2 .* fuse.nfsshim-fuse " /proc/self/mountinfo && return 0
    kill -0 "$started" 2>/dev/null || fail "nfsshim-fuse exited before mounting $2"
    sleep 0.05
  done
  fail "$2 did not become a mount"
}
stop_mount() {  # MOUNTPOINT PID
  fusermount3 -u "$1" || fail "fusermount3 -u $1"
  # A process that copied our mount namespace meanwhile (unshare -m, e.g. a ganesha started by
  # a parallel test) keeps the FUSE connection alive after the unmount: then stop the daemon.
  for i in $(seq 50); do kill -0 "$2" 2>/dev/null || break; sleep 0.1; done
  kill "$2" 2>/dev/null
  wait "$2"
}
# mount_debug OPTS: the daemon with -d (its trace in $work/debug.txt, a fresh log), its PID in
# debug_pid, once it logged "mounted ...": that comes after INIT is served and the readahead
# set, later than the mount shows in mountinfo (a slow build, TSan, was seen checking before).
mount_debug() {
  : > "$work/shim.log"
  "$shim" "$url" "$mnt" -f -d -o log=file:"$work/shim.log"${1:+,$1} 2>"$work/debug.txt" &
  debug_pid=$!
  for i in $(seq 200); do grep -q "info: mounted " "$work/shim.log" 2>/dev/null && return 0; sleep 0.05; done
  fail "no 'mounted' line in the daemon's log"
}
mount_nfs() {  # extra query
  start_mount "$url$1" "$mnt" "$work/shim.log"
  shim_pid=$started
}
unmount_nfs() {
  stop_mount "$mnt" "$shim_pid"
  shim_pid=
}

case $mode in
kafka-native|kafka-java)
  ganesha_start "$work/state" "$work/export" "$port" "$mnt_port" VFS || fail "ganesha"
  mount_nfs "&nconnect=4"
  NFSSHIM_BUILD=$build bash "$here/../kafka/run_pattern.sh" "${mode#kafka-}" "$mnt" expect-pass ||
    fail "Kafka pattern (${mode#kafka-}) through an nfs:// mount"
  unmount_nfs
  g=$work/export/.graveyard.nfsshim/u$(id -u)
  [ -d "$g" ] || fail "no graveyard on the export"
  [ -z "$(ls -A "$g")" ] || fail "graveyard not empty: $(ls -A "$g")"
  grep -q "$engine" "$work/shim.log" || fail "not served by the $engine"
  pass "Kafka pattern (${mode#kafka-}) through nfs:// vers=$vers (nconnect=4)"
  ;;
mem-reader)
  ganesha_start "$work/state" "$work/export" "$port" "$mnt_port" MEM || fail "ganesha"
  mount_nfs "&nconnect=2"
  head -c 2000000 /dev/urandom > "$work/data"
  reader=$build/tests/engine/mem_reader
  # The reference hash: the same program over the local copy.
  touch "$work/go0"
  want=$("$reader" "$work/data" "$work/ready0" "$work/go0") || fail "mem_reader on the local copy"
  for f in kept control; do cp "$work/data" "$mnt/$f" || fail "cp into the mount"; done
  # 1. Unlinked through our mount while held open: the reader reads on.
  "$reader" "$mnt/kept" "$work/ready1" "$work/go1" > "$work/out1" &
  r=$!
  for i in $(seq 200); do [ -e "$work/ready1" ] && break; sleep 0.05; done
  rm "$mnt/kept" || fail "rm through the mount"
  [ ! -e "$mnt/kept" ] || fail "name still visible after unlink"
  touch "$work/go1"
  wait $r || fail "reader failed after unlink through the mount: $(cat "$work/out1")"
  [ "$(cat "$work/out1")" = "$want" ] || fail "reader got other bytes: $(cat "$work/out1")"
  [ "$(ls -A "$mnt")" = control ] || fail "the mount lists: $(ls -A "$mnt")"
  # 2. Control: the same removal by another NFS client (no graveyard): FSAL MEM drops the
  #    data at once and the holder fails. Shows that step 1 can fail.
  "$reader" "$mnt/control" "$work/ready2" "$work/go2" > "$work/out2" &
  r=$!
  for i in $(seq 200); do [ -e "$work/ready2" ] && break; sleep 0.05; done
  "$build/tests/engine/nfs_rm" "$url&nconnect=1" control || fail "nfs_rm"
  touch "$work/go2"
  if wait $r && [ "$(cat "$work/out2")" = "$want" ]; then
    fail "control: the reader survived a removal by another client (test has no teeth)"
  fi
  echo "control: reader after a foreign REMOVE: $(cat "$work/out2")"
  unmount_nfs
  pass "FSAL MEM: reader keeps reading a file unlinked through the mount"
  ;;
preserve)
  ganesha_start "$work/state" "$work/export" "$port" "$mnt_port" VFS || fail "ganesha"
  head -c 3000000 /dev/urandom > "$work/data"
  reader=$build/tests/engine/mem_reader
  touch "$work/go0"
  want=$("$reader" "$work/data" "$work/ready0" "$work/go0") || fail "mem_reader on the local copy"
  g=$work/export/.graveyard.nfsshim/u$(id -u)
  for round in preserved control; do
    if [ $round = preserved ]; then
      NFSSHIM_TEST_ASSUME_PRESERVE_UNLINKED=1 mount_nfs "&nconnect=2"
    else
      mount_nfs "&nconnect=2"
    fi
    cp "$work/data" "$mnt/f" || fail "cp into the mount"
    rm -f "$work/ready" "$work/go"
    "$reader" "$mnt/f" "$work/ready" "$work/go" > "$work/out" &
    r=$!
    for i in $(seq 200); do [ -e "$work/ready" ] && break; sleep 0.05; done
    rm "$mnt/f" || fail "$round: rm through the mount"
    [ ! -e "$mnt/f" ] && [ ! -e "$work/export/f" ] || fail "$round: name still there after unlink"
    buried=$(ls -A "$g" | wc -l)
    touch "$work/go"
    wait $r || fail "$round: reader failed after the unlink: $(cat "$work/out")"
    [ "$(cat "$work/out")" = "$want" ] || fail "$round: reader got other bytes"
    if [ $round = preserved ]; then
      [ "$buried" = 0 ] || fail "preserved: the server keeps the file, yet it was buried ($(ls -A "$g"))"
      grep -q "PRESERVE_UNLINKED" "$work/shim.log" || fail "test hook not active"
    else
      [ "$buried" = 1 ] || fail "control: not buried while held open ($buried entries)"
    fi
    unmount_nfs
    [ -z "$(ls -A "$g")" ] || fail "$round: graveyard not empty after close: $(ls -A "$g")"
    echo "$round: graveyard entries while held: $buried; reader read the right bytes"
  done
  pass "vers=4.1: plain REMOVE where the server preserves unlinked files, the graveyard elsewhere"
  ;;
locks)
  ganesha_start "$work/state" "$work/export" "$port" "$mnt_port" VFS || fail "ganesha"
  probe=$build/tests/engine/lock_probe
  mnt2=$work/mnt2
  mkdir -p "$mnt2"
  shim2_pid=
  second_mount() {  # URL
    start_mount "$1" "$mnt2" "$work/shim2.log"
    shim2_pid=$started
  }
  second_unmount() {
    stop_mount "$mnt2" "$shim2_pid"
    shim2_pid=
  }
  trap 'grep -q " $mnt2 " /proc/self/mountinfo && fusermount3 -u -z "$mnt2"; [ -n "$shim2_pid" ] && kill $shim2_pid; cleanup' EXIT
  hold() {  # MOUNT: starts a holder of [0,100) through MOUNT; sets holder
    rm -f "$work/ready" "$work/release"
    "$probe" hold "$1/lockfile" "$work/ready" "$work/release" > "$work/holder.out" &
    holder=$!
    for i in $(seq 200); do [ -e "$work/ready" ] && break; sleep 0.05; done
    [ -e "$work/ready" ] || fail "holder did not get its lock: $(cat "$work/holder.out")"
  }
  release() { touch "$work/release"; wait $holder || fail "holder: $(cat "$work/holder.out")"; }
  mount_nfs "&nconnect=2"
  second_mount "$url&nconnect=1"
  echo data > "$mnt/lockfile" || fail "create lockfile"
  hold "$mnt"
  out=$("$probe" try "$mnt2/lockfile"); [ "$out" = busy ] || fail "other mount: lock not refused ($out)"
  out=$("$probe" try "$mnt/lockfile"); [ "$out" = busy ] || fail "same mount, other process: lock not refused ($out)"
  out=$("$probe" getlk "$mnt2/lockfile"); [ "$out" = "locked W 0 100" ] || fail "F_GETLK through the other mount: $out"
  "$probe" wait "$mnt2/lockfile" 30 > "$work/wait.out" &
  waiter=$!
  sleep 1
  kill -0 $waiter 2>/dev/null || fail "F_SETLKW did not wait: $(cat "$work/wait.out")"
  release
  wait $waiter || fail "waiter: $(cat "$work/wait.out")"
  case $(cat "$work/wait.out") in granted*) ;; *) fail "waiter: $(cat "$work/wait.out")" ;; esac
  echo "F_SETLKW through the other mount: $(cat "$work/wait.out") ms (holder released after ~1000 ms)"
  hold "$mnt"
  out=$("$probe" wait "$mnt2/lockfile" 2)
  case $out in interrupted*) ;; *) fail "F_SETLKW under a 2 s alarm: $out" ;; esac
  echo "F_SETLKW interrupted by a signal: $out"
  release  # the holder closes without F_UNLCK: the close releases the lock on the server
  out=$("$probe" try "$mnt2/lockfile"); [ "$out" = granted ] || fail "lock not released by close ($out)"
  grep -qi "error" "$work/shim.log" "$work/shim2.log" && fail "errors logged: $(grep -i error "$work/shim.log" "$work/shim2.log")"
  second_unmount
  unmount_nfs
  # Control: NFSv3 mounts keep POSIX locks in each host's kernel: the other mount grants.
  url3="nfs://127.0.0.1/export?vers=3&nfsport=$port&mountport=$mnt_port"
  url=$url3 mount_nfs "&nconnect=1"
  second_mount "$url3&nconnect=1"
  hold "$mnt"
  out=$("$probe" try "$mnt2/lockfile")
  release
  [ "$out" = granted ] || fail "control: two vers=3 mounts shared a lock ($out): the test cannot tell server locks"
  echo "control: vers=3 (kernel-local locks): the other mount was granted the held range"
  second_unmount
  unmount_nfs
  pass "vers=4.1: POSIX locks are the server's, seen through every mount"
  ;;
locks-wait)
  ganesha_start "$work/state" "$work/export" "$port" "$mnt_port" VFS || fail "ganesha"
  probe=$build/tests/engine/lock_probe
  mnt2=$work/mnt2
  mkdir -p "$mnt2"
  shim2_pid=
  waiters=()
  # The old daemon could hang on SIGTERM and its waiters in fcntl: end them all by force.
  locks_wait_cleanup() {
    for m in "$mnt" "$mnt2"; do grep -q " $m " /proc/self/mountinfo && fusermount3 -u -z "$m"; done
    for p in $shim_pid $shim2_pid; do kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
    shim_pid= shim2_pid=
    for p in "${waiters[@]}" ${holder:-}; do kill -9 "$p" 2>/dev/null; done
    cleanup
  }
  trap locks_wait_cleanup EXIT
  errors=()
  check() { echo "FAILED: $*" >&2; errors+=("$*"); }
  hold() {  # MOUNT: a holder of [0,100) through MOUNT; sets holder
    rm -f "$work/ready" "$work/release"
    "$probe" hold "$1/lockfile" "$work/ready" "$work/release" > "$work/holder.out" &
    holder=$!
    for i in $(seq 200); do [ -e "$work/ready" ] && break; sleep 0.05; done
    [ -e "$work/ready" ] || fail "holder did not get its lock: $(cat "$work/holder.out")"
  }
  start_waiters() {  # N: N processes in F_SETLKW on $mnt/lockfile (alarm in 120 s)
    waiters=()
    for i in $(seq "$1"); do
      "$probe" wait "$mnt/lockfile" 120 > "$work/w$i.out" 2>&1 &
      waiters+=($!)
    done
    sleep 1
    for i in $(seq "$1"); do
      kill -0 "${waiters[i-1]}" 2>/dev/null || check "waiter $i did not wait: $(cat "$work/w$i.out")"
    done
  }
  ended_within() {  # SECONDS PID...: 0 if every PID exited within SECONDS
    local until=$((SECONDS + $1)) p
    shift
    for p in "$@"; do
      while kill -0 "$p" 2>/dev/null; do [ $SECONDS -ge $until ] && return 1; sleep 0.1; done
    done
  }
  shim_opts=max_threads=2 mount_nfs "&nconnect=1"
  start_mount "$url&nconnect=1" "$mnt2" "$work/shim2.log"
  shim2_pid=$started
  echo data > "$mnt2/lockfile" || fail "create lockfile"
  hold "$mnt2"
  start_waiters 3
  # Names the kernel has not seen through the mount: LOOKUP and READDIR must be served.
  echo x > "$mnt2/fresh" || fail "create fresh"
  timeout 5 stat "$mnt/fresh" > /dev/null || check "stat through the mount with 3 F_SETLKW waiters: $?"
  timeout 5 ls "$mnt" > /dev/null || check "ls of the mount with 3 F_SETLKW waiters: $?"
  kill -ALRM "${waiters[@]}"
  ended_within 5 "${waiters[@]}" || check "F_SETLKW waiters still waiting 5 s after a signal"
  for i in 1 2 3; do
    case $(cat "$work/w$i.out") in interrupted*) ;; *) check "waiter $i after a signal: $(cat "$work/w$i.out")" ;; esac
  done
  [ ${#errors[@]} = 0 ] && echo "3 waiters on 2 request threads: stat, ls answered; a signal ended each wait"
  # SIGTERM while a process waits: the daemon does its unmount work and exits.
  start_waiters 1
  kill -TERM "$shim_pid"
  if ended_within 10 "$shim_pid"; then
    wait "$shim_pid" || check "daemon exit status $? after SIGTERM"
    shim_pid=
    grep -q "unstable data: " "$work/shim.log" || check "no unmount work logged after SIGTERM"
    ended_within 5 "${waiters[0]}" || check "waiter still in fcntl after the daemon stopped"
    echo "SIGTERM with a waiter: daemon exited; the waiter got: $(cat "$work/w1.out")"
  else
    check "daemon still running 10 s after SIGTERM with a process in F_SETLKW"
  fi
  if [ ${#errors[@]} = 0 ]; then
    grep -q " $mnt " /proc/self/mountinfo && fusermount3 -u -z "$mnt"
    shim_opts=max_threads=2 mount_nfs "&nconnect=1"
    start_waiters 1
    touch "$work/release"
    wait $holder || check "holder: $(cat "$work/holder.out")"
    holder=
    ended_within 10 "${waiters[0]}" || check "waiter not granted 10 s after the release"
    case $(cat "$work/w1.out") in granted*) ;; *) check "waiter after the release: $(cat "$work/w1.out")" ;; esac
    echo "after the release: $(cat "$work/w1.out") ms"
    # The holder on the same mount: its close must come through past 3 waiters (before,
    # the waiters held every request thread and nobody read it: a deadlock).
    hold "$mnt"
    start_waiters 3
    touch "$work/release"
    ended_within 10 $holder || check "holder's close not served with 3 waiters on 2 threads"
    ended_within 20 "${waiters[@]}" || check "waiters not all granted in turn within 20 s"
    for i in 1 2 3; do
      case $(cat "$work/w$i.out") in granted*) ;; *) check "waiter $i behind a holder of the same mount: $(cat "$work/w$i.out")" ;; esac
    done
    echo "holder on the same mount, 3 waiters: $(cat "$work/w1.out" "$work/w2.out" "$work/w3.out" | tr '\n' ' ')"
    out=$("$probe" try "$mnt2/lockfile"); [ "$out" = granted ] || check "lock still held after all waiters closed ($out)"
    grep -qi "error" "$work/shim.log" "$work/shim2.log" && check "errors logged: $(grep -i error "$work/shim.log" "$work/shim2.log")"
  fi
  [ ${#errors[@]} = 0 ] || fail "${#errors[@]} checks failed: ${errors[*]}"
  pass "vers=4.1: F_SETLKW waiters leave the request threads free"
  ;;
write-behind)
  check="python3 $here/write_behind_check.py"
  commits_sent() {  # COMMITs the files sent in all, and KiB the server wrote stably
    sed -n 's/.*; \([0-9]*\) COMMITs in all; \([0-9]*\) KiB written stably.*/\1 \2/p' "$work/shim.log" | tail -1
  }
  expect_committed() {  # MSG: the last mount's writes went UNSTABLE and were committed
    read -r sent stable_kib < <(commits_sent)
    [ "${sent:-0}" -ge 1 ] && [ "${stable_kib:-1}" = 0 ] ||
      fail "$1: $(grep "unstable data:" "$work/shim.log" | tail -1)"
  }
  expect_file_sync() {  # MSG KIB: the last mount's writes went FILE_SYNC (at least KIB), no COMMIT
    read -r sent stable_kib < <(commits_sent)
    [ "${sent:-1}" = 0 ] && [ "${stable_kib:-0}" -ge "$2" ] ||
      fail "$1: $(grep "unstable data:" "$work/shim.log" | tail -1)"
  }
  early() {  # the number of writes the last mount answered early (logged at unmount)
    sed -n "s/.*write-behind: \([0-9]*\) writes answered.*/\1/p" "$work/shim.log" | tail -1
  }
  ganesha_start "$work/state" "$work/export" "$port" "$mnt_port" VFS || fail "ganesha"
  head -c $((48 << 20)) /dev/urandom > "$work/data"
  mount_nfs "&nconnect=4"
  $check sizes "$mnt/log" "$work/ready" "$work/stop" > "$work/sizes.out" &
  checker=$!
  for i in $(seq 200); do [ -e "$work/ready" ] && break; sleep 0.05; done
  [ -e "$work/ready" ] || fail "the stat checker did not start"
  dd if="$work/data" of="$mnt/log" bs=16k conv=fsync status=none || fail "dd through the mount"
  touch "$work/stop"
  wait $checker || fail "a stat saw the size go down while writes were answered early: $(cat "$work/sizes.out")"
  cat "$work/sizes.out"
  cmp "$work/data" "$mnt/log" || fail "data read through the mount differs"
  unmount_nfs
  cmp "$work/data" "$work/export/log" || fail "data on the export differs"
  line=$(grep "write-behind:" "$work/shim.log" | tail -1)
  echo "$line"
  [ "$(early)" -ge 3072 ] || fail "the 3072 writes were not answered early: $line"
  # Gathering: 16 KiB appends with nothing else asking for the file go out as a few large
  # WRITEs (1 MiB batches, or what 10 ms gathered on a slow run), not 1024 small ones.
  # 1 MiB writes are not gathered: several are in flight at once (4 writers, so that a slow
  # sanitizer build, where one writer's next WRITE may come after its last one landed,
  # still shows it).
  mount_nfs "&nconnect=4"
  dd if="$work/data" of="$mnt/gathered" bs=16k count=1024 conv=fsync status=none || fail "dd of 16 MiB"
  dds=()
  for k in 1 2 3 4; do dd if="$work/data" of="$mnt/large$k" bs=1M count=8 conv=fsync status=none & dds+=($!); done
  for p in "${dds[@]}"; do wait "$p" || fail "dd of 4 x 8 MiB"; done
  unmount_nfs
  cmp -n $((16 << 20)) "$work/data" "$work/export/gathered" || fail "gathered data on the export differs"
  for k in 1 2 3 4; do cmp -n $((8 << 20)) "$work/data" "$work/export/large$k" || fail "1 MiB writes on the export differ"; done
  line=$(grep "write-behind:" "$work/shim.log" | tail -1)
  echo "$line"
  peak=$(echo "$line" | sed -n 's/.*at most \([0-9]*\) NFS WRITEs in flight.*/\1/p')
  [ "${peak:-0}" -ge 2 ] || fail "never two writes in flight at once: $line"
  read -r gathered batches < <(echo "$line" | sed -n 's/.*(\([0-9]*\) small ones gathered into \([0-9]*\) batches).*/\1 \2/p')
  [ "${gathered:-0}" -eq 1024 ] && [ "${batches:-1024}" -le 256 ] ||
    fail "1024 appends of 16 KiB were not gathered into at most 256 WRITEs: $line"
  # A lone small write reaches the server within the gathering delay (10 ms), with its file
  # still open and nothing asking for it.
  mount_nfs "&nconnect=4"
  python3 -c 'import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
os.write(fd, b"x" * 16384)
for i in range(100):
    time.sleep(0.02)
    if os.path.getsize(sys.argv[2]) == 16384: break
print("lone write on the export after %.2f s, file still open" % ((i + 1) * 0.02))
ok = os.path.getsize(sys.argv[2]) == 16384
os.close(fd)
sys.exit(0 if ok else 1)' "$mnt/lone" "$work/export/lone" || fail "a lone 16 KiB write was not on the export after 2 s"
  unmount_nfs
  # O_SYNC writes wait for the server; so does every write with write_behind_kb=0.
  mount_nfs "&nconnect=4"
  dd if="$work/data" of="$mnt/sync" bs=1M count=8 oflag=sync status=none || fail "O_SYNC dd"
  unmount_nfs
  [ "$(early)" = 0 ] || fail "O_SYNC writes were answered early: $(grep write-behind: "$work/shim.log" | tail -1)"
  # ... and go FILE_SYNC: the FSYNC after each one finds nothing to COMMIT.
  expect_file_sync "O_SYNC writes were not sent FILE_SYNC" $((8 << 10))
  # O_DIRECT writes too (no FSYNC follows them; the kernel's NFS client has them stable
  # before write(2) returns), else they stayed UNSTABLE until close.
  mount_nfs "&nconnect=4"
  dd if="$work/data" of="$mnt/direct" bs=1M count=8 oflag=direct status=none || fail "O_DIRECT dd"
  unmount_nfs
  [ "$(early)" = 0 ] || fail "O_DIRECT writes were answered early"
  expect_file_sync "O_DIRECT writes were not sent FILE_SYNC" $((8 << 10))
  shim_opts=write_behind_kb=0 mount_nfs "&nconnect=4"
  dd if="$work/data" of="$mnt/plain" bs=1M count=8 status=none || fail "dd with write_behind_kb=0"
  unmount_nfs
  [ "$(early)" = 0 ] || fail "write_behind_kb=0: writes answered early"
  expect_committed "plain writes were not UNSTABLE and committed at close"
  for f in sync direct plain; do
    cmp -n $((8 << 20)) "$work/data" "$work/export/$f" || fail "O_SYNC, O_DIRECT or write_behind_kb=0 data differs ($f)"
  done
  # A full export: the error of a write answered early reaches the application.
  ganesha_stop "$work/state"
  mkdir -p "$work/small"
  mount -t tmpfs -o size=8m nfsshim-wb-nospc "$work/small" || fail "tmpfs"
  ganesha_start "$work/state" "$work/small" "$port" "$mnt_port" VFS || fail "ganesha on the tmpfs"
  mount_nfs "&nconnect=2"
  $check nospc "$mnt/big" 16 || fail "16 MiB into 8 MiB"
  rm "$mnt/big" || fail "rm"
  dd if="$work/data" of="$mnt/after" bs=16k count=128 conv=fsync status=none || fail "a write after the ENOSPC was reported"
  cmp -n $((2 << 20)) "$work/data" "$mnt/after" || fail "data after the ENOSPC differs"
  # The error belongs to the descriptor that wrote: another one's close (here a reader's,
  # before the writer's fsync) neither reports nor takes it. The tmpfs is filled up to 128
  # KiB of room, then 1 MiB is written in one write(2).
  rm "$mnt/after" || fail "rm"
  dd if=/dev/zero of="$work/small/room" bs=128k count=1 status=none || fail "room"
  dd if=/dev/zero of="$work/small/fill" bs=64k status=none 2>/dev/null
  rm "$work/small/room"
  $check two-fds "$mnt/two" 1024 || fail "a failed write's error went to another descriptor"
  unmount_nfs
  grep "write-behind:" "$work/shim.log" | tail -1
  # The mount-wide bound on UNSTABLE data kept for COMMIT (URL max_unstable_mb, commit_secs):
  # 6 files of 4 MiB written and kept open (no fsync, no close) keep all 24 MiB by default;
  # with max_unstable_mb=8 the writes commit on the way, and data kept longer than
  # commit_secs=1 is committed while the files stay open.
  ganesha_stop "$work/state"
  umount "$work/small"
  ganesha_start "$work/state" "$work/export" "$port" "$mnt_port" VFS || fail "ganesha"
  unstable() {  # peak KiB, COMMITs for the bound, COMMITs for age (logged at unmount)
    sed -n 's/.*unstable data: at most \([0-9]*\) KiB kept.*, \([0-9]*\) COMMITs to stay under it, \([0-9]*\) of data older.*/\1 \2 \3/p' \
      "$work/shim.log" | tail -1
  }
  mkdir -p "$work/export/bound" "$work/export/nobound"
  # (the control's writes wait for the server, so all have landed before the first close)
  shim_opts=write_behind_kb=0 mount_nfs "&nconnect=4"
  $check keep-open "$work/data" "$mnt/nobound" 6 4 0 || fail "keep-open without a bound"
  unmount_nfs
  read -r peak pressure aged < <(unstable)
  echo "$(grep "unstable data:" "$work/shim.log" | tail -1)"
  [ "${peak:-0}" -ge $((24 << 10)) ] || fail "control: 24 MiB in open files were not all kept (peak ${peak:-?} KiB)"
  expect_committed "control: no COMMIT sent for 24 MiB of UNSTABLE data, or UNSTABLE replies counted as stable"
  mount_nfs "&nconnect=4&max_unstable_mb=8&commit_secs=1"
  $check keep-open "$work/data" "$mnt/bound" 6 4 3 || fail "keep-open with max_unstable_mb=8"
  unmount_nfs
  line=$(grep "unstable data:" "$work/shim.log" | tail -1)
  echo "$line"
  read -r peak pressure aged < <(unstable)
  # 8 MiB, plus at most one 1 MiB write per request thread that lands meanwhile.
  [ "${peak:-99999}" -le $((16 << 10)) ] || fail "more than 16 MiB kept with max_unstable_mb=8: $line"
  [ "${pressure:-0}" -ge 1 ] || fail "no COMMIT to stay under max_unstable_mb=8: $line"
  [ "${aged:-0}" -ge 1 ] || fail "data kept 3 s in open files was not committed (commit_secs=1): $line"
  for k in 0 1 2 3 4 5; do
    cmp -n $((4 << 20)) "$work/data" "$work/export/bound/open$k" || fail "bound/open$k on the export differs"
    cmp -n $((4 << 20)) "$work/data" "$work/export/nobound/open$k" || fail "nobound/open$k on the export differs"
  done
  # A server that writes every WRITE to stable storage and says so (FILE_SYNC replies; here
  # ganesha's NFS_Commit = true, which fsyncs each WRITE): nothing is kept for COMMIT and no
  # COMMIT is sent, the control's 24 MiB kept open included; the data is on the export.
  ganesha_stop "$work/state"
  GANESHA_EXPORT_EXTRA="NFS_Commit = true;" ganesha_start "$work/state" "$work/export" "$port" "$mnt_port" VFS ||
    fail "ganesha with NFS_Commit = true"
  mkdir -p "$work/export/stable"
  shim_opts=write_behind_kb=0 mount_nfs "&nconnect=4"
  $check keep-open "$work/data" "$mnt/stable" 6 4 0 || fail "keep-open on a FILE_SYNC server"
  dd if="$work/data" of="$mnt/stable/fsynced" bs=1M count=8 conv=fsync status=none || fail "dd on a FILE_SYNC server"
  unmount_nfs
  line=$(grep "unstable data:" "$work/shim.log" | tail -1)
  echo "$line"
  read -r peak pressure aged < <(unstable)
  read -r sent stable_kib < <(commits_sent)
  [ "${peak:-1}" = 0 ] || fail "FILE_SYNC replies: data was kept for COMMIT: $line"
  [ "${sent:-1}" = 0 ] || fail "FILE_SYNC replies: COMMITs were sent: $line"
  [ "${stable_kib:-0}" -ge $((32 << 10)) ] || fail "FILE_SYNC replies not counted as stable (32 MiB written): $line"
  for k in 0 1 2 3 4 5; do
    cmp -n $((4 << 20)) "$work/data" "$work/export/stable/open$k" || fail "stable/open$k on the export differs"
  done
  cmp -n $((8 << 20)) "$work/data" "$work/export/stable/fsynced" || fail "stable/fsynced on the export differs"
  pass "write-behind through vers=$vers: data intact, size never set back, sync writes wait, ENOSPC reported, unstable data bounded, nothing kept or committed for FILE_SYNC replies"
  ;;
read-ahead)
  # The kernel sets the mount's readahead from the INIT reply (128 KiB); nfsshim-fuse raises
  # it afterwards (4096 KiB by default for nfs://), so a sequential read reaches the engine
  # as 1 MiB READs. Seen from both sides: the mount's bdi setting, and the largest READ
  # reply in the daemon's -d trace. Control: read_ahead_kb=0 keeps the kernel's 128 KiB.
  ganesha_start "$work/state" "$work/export" "$port" "$mnt_port" VFS || fail "ganesha"
  mount_nfs ""
  dd if=/dev/urandom of="$mnt/ra.dat" bs=1M count=16 conv=fsync status=none || fail "write"
  unmount_nfs
  read_through() {  # OPTS: sets ra_kb (the mount's readahead) and largest (READ reply bytes)
    mount_debug "$1"
    ra_kb=$(cat "/sys/class/bdi/$(mountpoint -d "$mnt")/read_ahead_kb")
    cmp "$mnt/ra.dat" "$work/export/ra.dat" || fail "read through the mount ($1) differs from the export"
    stop_mount "$mnt" "$debug_pid"
    largest=$(awk '/opcode: READ \(/ { split($2, a, ","); r[a[1]] = 1 }
                   /success, outsize:/ { split($2, a, ","); if ((a[1] in r) && $NF > m) m = $NF }
                   END { print m - 16 }' "$work/debug.txt")  # 16: the reply header
    echo "ok: ${1:-defaults}: readahead $ra_kb KiB, largest READ $largest bytes"
  }
  read_through ""
  [ "$ra_kb" = 4096 ] || fail "default readahead of an nfs:// mount is $ra_kb KiB, not 4096"
  [ "$largest" = 1048576 ] || fail "sequential READs by default at most $largest bytes, not 1 MiB"
  read_through "read_ahead_kb=512"
  [ "$ra_kb" = 512 ] || fail "read_ahead_kb=512 gave $ra_kb KiB"
  [ "$largest" -le 524288 ] || fail "read_ahead_kb=512: a READ of $largest bytes"
  read_through "read_ahead_kb=0"
  [ "$largest" -le 131072 ] || fail "control read_ahead_kb=0 (kernel's $ra_kb KiB): a READ of $largest bytes"
  pass "nfs:// readahead raised after INIT: 1 MiB READs by default, data intact"
  ;;
parallel-lookups)
  # Our /dev/fuse io asks for FUSE_PARALLEL_DIROPS, so the kernel sends LOOKUPs of one
  # directory at once and one waiting for the server holds up no other; with libfuse's io
  # (-o nopassthrough, the control) it sends them one at a time. Seen in the daemon's -d
  # trace: a LOOKUP received while another one in the same directory is unanswered.
  ganesha_start "$work/state" "$work/export" "$port" "$mnt_port" VFS || fail "ganesha"
  mount_nfs ""
  mkdir "$mnt/d" || fail "mkdir"
  unmount_nfs
  lookups() {  # OPTS ON|OFF: sets overlaps and total (LOOKUPs in the trace)
    mount_debug "$1"
    grep -q "parallel lookups $2)" "$work/shim.log" || fail "${1:-defaults}: the log does not say 'parallel lookups $2'"
    # 8 threads stat names that do not exist (no negative caching: every stat is a LOOKUP).
    # Counted in d only: the kernel revalidates d itself (entry_timeout 1 s, a slow run
    # outlasts it) by LOOKUPs in the root that are never serialized, with either io.
    python3 -c 'import os, sys, threading
def w(k):
    for i in range(300):
        try: os.stat("%s/nx%d.%d" % (sys.argv[1], k, i))
        except FileNotFoundError: pass
ts = [threading.Thread(target=w, args=(k,)) for k in range(8)]
[t.start() for t in ts]; [t.join() for t in ts]' "$mnt/d" || fail "the lookups failed"
    stop_mount "$mnt" "$debug_pid"
    read -r overlaps total < <(awk '
      /opcode: LOOKUP \(/ { split($2, u, ","); split($7, n, ","); node[u[1]] = n[1]
                            total[n[1]]++; if (++open[n[1]] > 1) over[n[1]]++ }
      /unique: [0-9]+, (success|error)/ { split($2, u, ","); if (u[1] in node) { open[node[u[1]]]--; delete node[u[1]] } }
      END { for (d in total) if (total[d] > total[best] + 0) best = d  # d: most LOOKUPs
            print over[best] + 0, total[best] + 0 }' "$work/debug.txt")
    echo "ok: ${1:-defaults}: $total LOOKUPs in d, $overlaps received while another there was open"
  }
  lookups "" on
  [ "$total" -ge 2400 ] || fail "only $total LOOKUPs in d in the trace"
  [ "$overlaps" -gt 0 ] || fail "no LOOKUP ran beside another in the same directory"
  lookups "nopassthrough" off
  [ "$total" -ge 2400 ] || fail "control: only $total LOOKUPs in d in the trace"
  [ "$overlaps" -eq 0 ] || fail "control (libfuse's io): $overlaps LOOKUPs ran beside another in the same directory"
  pass "nfs:// lookups in one directory run in parallel (control: one at a time)"
  ;;
bad-urls)
  ganesha_start "$work/state" "$work/export" "$port" "$mnt_port" VFS || fail "ganesha"
  closed=$((port + 7))  # nothing listens there
  expect_refused() {  # SOURCE EXPECTED-TEXT
    local out rc
    out=$(timeout 60 "$shim" "$1" "$mnt" -f 2>&1); rc=$?
    [ $rc -ne 0 ] || fail "'$1' was accepted"
    [ $rc -ne 124 ] || fail "'$1' hung"
    printf '%s\n' "$out" | grep -qF -- "$2" || fail "'$1': message lacks '$2': $out"
    grep -q " $mnt " /proc/self/mountinfo && fail "'$1' left a mount"
    echo "ok: exit $rc: $(printf '%s\n' "$out" | head -1)"
  }
  expect_refused "$url&bogus=1" "unknown key 'bogus'"
  expect_refused "$url&nconnect=0" "'nconnect'"
  expect_refused "$url&nconnect=99" "'nconnect'"
  expect_refused "$url&io=kqueue" "'io'"
  expect_refused "${url/vers=3/vers=4.2}" "'vers'"
  expect_refused "nfs://127.0.0.1/export?vers=4.1&nfsport=$closed" "connect 127.0.0.1:$closed"
  expect_refused "nfs://127.0.0.1/no_such_export?vers=4.1&nfsport=$port" "no_such_export"
  expect_refused "nfs://127.0.0.1/export?vers=3&nfsport=$closed&mountport=$closed" "cannot reach the MOUNT service"
  expect_refused "nfs://127.0.0.1/export?vers=3&nfsport=$closed&mountport=$mnt_port" "cannot connect to the NFS service"
  expect_refused "nfs://127.0.0.1/no_such_export?vers=3&nfsport=$port&mountport=$mnt_port" "no_such_export"
  # Options only a local SOURCE uses: mounted all the same, and named in a warning.
  mount_debug "writeback,keep_cache,drop_backing_cache,negative_timeout=5,entry_timeout=2"
  stop_mount "$mnt" "$debug_pid"
  grep -q "warning: -o writeback, keep_cache, drop_backing_cache, negative_timeout: no effect with an nfs:// SOURCE" "$work/shim.log" ||
    fail "no warning naming writeback, keep_cache, drop_backing_cache and negative_timeout: $(grep -E 'warn|mounted' "$work/shim.log")"
  echo "ok: $(grep -o 'warning: -o .*' "$work/shim.log")"
  pass "bad URLs and servers refused before mounting; local-only options named"
  ;;
o-trunc)
  ganesha_start "$work/state" "$work/export" "$port" "$mnt_port" VFS || fail "ganesha"
  mount_nfs "&nconnect=2"
  # 1. A shell rewrite: open(O_WRONLY|O_CREAT|O_TRUNC) of the existing file, 2 bytes.
  printf 0123456789 > "$mnt/f" || fail "write through the mount"
  printf ab > "$mnt/f" || fail "rewrite through the mount"
  got=$(cat "$mnt/f") && [ "$got" = ab ] || fail "a rewrite with O_TRUNC kept the old tail: '$got' through the mount"
  # 2. O_TRUNC while another descriptor's writes were answered and are still in flight.
  python3 - "$mnt/g" <<'PY' || fail "O_TRUNC amid answered writes through vers=$vers"
import os, sys
path = sys.argv[1]
for rnd in range(20):
    a = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    for i in range(16):  # 4 MiB answered early, most of it still in flight below
        os.pwrite(a, bytes([65 + i]) * (256 << 10), i * (256 << 10))
    b = os.open(path, os.O_RDWR | os.O_TRUNC)
    os.write(b, b"yz")
    os.close(b)
    os.close(a)
    data = open(path, "rb").read()
    if data != b"yz":
        sys.exit(f"round {rnd}: {len(data)} bytes after O_TRUNC and a 2-byte write, "
                 f"starting {data[:8]!r}")
print("20 rounds: O_TRUNC after 4 MiB of answered writes leaves just the 2 new bytes")
PY
  unmount_nfs
  for f in f g; do
    want=ab; [ $f = g ] && want=yz
    got=$(cat "$work/export/$f") && [ "$got" = $want ] || fail "the export's $f is '$got', not '$want'"
  done
  pass "open(O_TRUNC) truncates an existing file, also amid answered writes ($engine)"
  ;;
create-trunc)
  ganesha_start "$work/state" "$work/export" "$port" "$mnt_port" VFS || fail "ganesha"
  mkdir -m 1777 "$work/export/pub" && chmod 755 "$work"  # the mount point is reached by uid 65534
  export NFSSHIM_TEST_CREATE_GATE=$work/gate
  mount_nfs "&nconnect=2"
  # raced NAME FILL CMD...: CMD (an open with O_CREAT through the mount) in the background; once
  # our CREATE of NAME waits at the gate, another client makes NAME with FILL (the export's
  # side), then the CREATE goes on. CMD's output in $work/raced.out; its status returned.
  raced() {
    local name=$1 fill=$2 gates
    shift 2
    rm -f "$work/gate"
    gates=$(grep -c "the create of '$name' waits" "$work/shim.log")
    "$@" > "$work/raced.out" 2>&1 &
    local app=$!
    for _ in $(seq 200); do
      [ "$(grep -c "the create of '$name' waits" "$work/shim.log")" -gt "$gates" ] && break
      sleep 0.05
    done
    [ "$(grep -c "the create of '$name' waits" "$work/shim.log")" -gt "$gates" ] ||
      { kill $app 2>/dev/null; fail "no create of $name reached the daemon: the case is not made ($(cat "$work/raced.out"))"; }
    head -c "$fill" /dev/zero | tr '\0' o > "$work/export/pub/$name" && chmod 644 "$work/export/pub/$name"
    touch "$work/gate"
    wait $app
  }
  # 1. O_CREAT|O_TRUNC|O_WRONLY, 10 bytes written: the 1 MiB made meanwhile is gone.
  raced big $((1 << 20)) python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
os.write(fd, b"0123456789")
os.close(fd)' "$mnt/pub/big" || { cat "$work/raced.out"; fail "open(O_CREAT|O_TRUNC) through vers=$vers"; }
  size=$(stat -c %s "$work/export/pub/big")
  [ "$size" = 10 ] || fail "O_CREAT|O_TRUNC met a file made after the lookup: the export's file is $size bytes, not 10 (its old tail kept)"
  [ "$(head -c 10 "$work/export/pub/big")" = 0123456789 ] || fail "the export's file does not start with the written bytes"
  # 2. Control: O_CREAT without O_TRUNC keeps the other client's bytes past the write.
  raced keep 100 python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
os.write(fd, b"0123456789")
os.close(fd)' "$mnt/pub/keep" || { cat "$work/raced.out"; fail "open(O_CREAT) through vers=$vers"; }
  size=$(stat -c %s "$work/export/pub/keep")
  [ "$size" = 100 ] || fail "O_CREAT without O_TRUNC: the export's file is $size bytes, not 100"
  # 3. v4.1: another user's O_RDONLY|O_CREAT meets root's 0644 file: opened for reading.
  #    (Not vers=3: ganesha answers ACCES to a CREATE UNCHECKED that meets a file the caller
  #    may not write; the kernel's v3 client sends the same CREATE.)
  if [ $vers = 4.1 ]; then
    raced ro 7 setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_CREAT, 0o644)
print("read", len(os.read(fd, 100)), "bytes")
os.close(fd)' "$mnt/pub/ro" || { cat "$work/raced.out"; fail "O_RDONLY|O_CREAT of another user's read-only file through vers=$vers"; }
    grep -q "read 7 bytes" "$work/raced.out" || fail "O_RDONLY|O_CREAT read: $(cat "$work/raced.out")"
    [ "$(stat -c %s "$work/export/pub/ro")" = 7 ] || fail "O_RDONLY|O_CREAT changed the file"
  fi
  unmount_nfs
  pass "open(O_CREAT|O_TRUNC) truncates a file another client made after the lookup ($engine)"
  ;;
hole-read)
  ganesha_start "$work/state" "$work/export" "$port" "$mnt_port" VFS || fail "ganesha"
  mount_nfs "&nconnect=2"
  # ctypes, not the mmap module: its fstat sends a GETATTR, which waits for the write.
  python3 -X faulthandler - "$mnt" <<'PY' || fail "a page fault below an answered write through vers=$vers"
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
PROT_READ, MAP_SHARED, M = 1, 1, 1 << 20
for rnd in range(100):
    path = os.path.join(sys.argv[1], f"hole{rnd}")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    os.pwrite(fd, b"x" * 4096, M)
    p = libc.mmap(None, M + 4096, PROT_READ, MAP_SHARED, fd, 0)
    if p in (None, ctypes.c_void_p(-1).value):
        sys.exit(f"mmap: {os.strerror(ctypes.get_errno())}")
    head, tail = ctypes.string_at(p, 1), ctypes.string_at(p + M, 1)  # SIGBUS here
    if head != b"\0" or tail != b"x":
        sys.exit(f"round {rnd}: read {head!r} at 0 and {tail!r} at 1 MiB")
    libc.munmap(ctypes.c_void_p(p), M + 4096)
    os.close(fd)
print("100 rounds: the pages below and at an answered write read zeros and its bytes")
PY
  unmount_nfs
  pass "a read below an answered write waits for it instead of ending the file ($engine)"
  ;;
open-size)
  ganesha_start "$work/state" "$work/export" "$port" "$mnt_port" VFS || fail "ganesha"
  mnt2=$work/mnt2
  mkdir -p "$mnt2"
  shim_opts=attr_timeout=30,entry_timeout=30
  mount_nfs "&nconnect=2"
  shim_opts=
  start_mount "$url&nconnect=1" "$mnt2" "$work/shim2.log"
  shim2_pid=$started
  trap 'grep -q " $mnt2 " /proc/self/mountinfo && fusermount3 -u -z "$mnt2"; kill $shim2_pid 2>/dev/null; cleanup' EXIT
  # open and read, no fstat (cat's fstat makes the kernel ask for attributes itself).
  read_raw() { /usr/bin/python3 -c 'import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
sys.stdout.write(os.read(fd, 100).decode())' "$1"; }
  for round in 1 2 3; do
    printf abc > "$mnt/f$round" || fail "write through the first mount"
    [ "$(read_raw "$mnt/f$round")" = abc ] || fail "round $round: first read"
    printf defgh >> "$mnt2/f$round" || fail "append through the second mount"
    got=$(read_raw "$mnt/f$round")
    [ "$got" = abcdefgh ] || fail "round $round: read at the next open through the first mount: '$got' (the size it cached)"
    printf ij >> "$mnt2/f$round"
    got=$(read_raw "$mnt/f$round")
    [ "$got" = abcdefghij ] || fail "round $round: read after a second append: '$got'"
  done
  stop_mount "$mnt2" "$shim2_pid"
  unmount_nfs
  pass "another client's appends are read whole at the next open, inside attr_timeout ($engine)"
  ;;
rename-flags)
  ganesha_start "$work/state" "$work/export" "$port" "$mnt_port" VFS || fail "ganesha"
  mount_nfs "&nconnect=1"
  echo a > "$mnt/a" && echo b > "$mnt/b" || fail "setup"
  out=$(/usr/bin/python3 - "$mnt" <<'PY'
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
SYS_renameat2, AT_FDCWD = 316, -100  # x86_64
d = sys.argv[1]
for name, flag, target in (("noreplace", 1, "new"), ("noreplace-over", 1, "b"), ("exchange", 2, "b")):
    rv = libc.syscall(SYS_renameat2, AT_FDCWD, os.path.join(d, "a").encode(), AT_FDCWD,
                      os.path.join(d, target).encode(), flag)
    print(name, "ok" if rv == 0 else os.strerror(ctypes.get_errno()))
PY
)
  echo "$out"
  # Over an existing name the VFS answers EEXIST itself, as above any filesystem.
  [ "$out" = "noreplace Invalid argument
noreplace-over File exists
exchange Invalid argument" ] || fail "renameat2 with flags through nfs://: $out"
  [ "$(cat "$mnt/a")" = a ] && [ "$(cat "$mnt/b")" = b ] && [ ! -e "$mnt/new" ] || fail "a failed renameat2 changed the files"
  unmount_nfs
  pass "renameat2 with flags: EINVAL and nothing changed, as on the kernel's NFS client ($engine)"
  ;;
squash-restart)
  [ "$vers" = 4.1 ] || fail "squash-restart is for vers=4.1 (NFSv3 has no opens to re-open)"
  mkdir -p "$work/export"
  chmod 1777 "$work/export"  # the squashed root makes the graveyard here
  mkdir "$work/export/kafka" && chown 1000:1000 "$work/export/kafka" && chmod 0700 "$work/export/kafka"
  squash='CLIENT { Clients = 127.0.0.1; Squash = Root_Squash; Anonymous_Uid = 4242; Anonymous_Gid = 4242; }'
  GANESHA_EXPORT_EXTRA=$squash ganesha_start "$work/state" "$work/export" "$port" "$mnt_port" VFS ||
    fail "ganesha (root_squash)"
  chmod 755 "$work"  # the mount point is reached by uid 1000
  mount_nfs "&nconnect=2"
  mkdir "$work/sync" && chmod 777 "$work/sync" && mkfifo "$work/sync/restarted" && chmod 666 "$work/sync/restarted"
  setpriv --reuid=1000 --regid=1000 --clear-groups /usr/bin/python3 - "$mnt/kafka/seg" "$work" \
    > "$work/user.out" 2>&1 <<'PY' &
import os, sys
path, work = sys.argv[1], sys.argv[2]
fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
os.write(fd, b"before-restart;")
os.fsync(fd)
open(os.path.join(work, "sync/ready"), "w").close()
open(os.path.join(work, "sync/restarted")).read()  # the fifo: until ganesha is back
try:
    os.write(fd, b"after-restart")
    os.fsync(fd)
    os.close(fd)
except OSError as e:
    sys.exit(f"after the restart: {e}")
print("uid 1000 wrote, fsynced and closed its 0600 file after the server restarted")
PY
  user=$!
  for _ in $(seq 100); do [ -e "$work/sync/ready" ] && break; sleep 0.1; done
  [ -e "$work/sync/ready" ] || { kill "$user"; cat "$work/user.out"; fail "the user's writer did not start"; }
  ganesha_stop "$work/state"
  GANESHA_EXPORT_EXTRA=$squash ganesha_start "$work/state" "$work/export" "$port" "$mnt_port" VFS ||
    { kill "$user"; fail "ganesha (root_squash) again"; }
  echo > "$work/sync/restarted"
  wait "$user" || { cat "$work/user.out"; grep -E "re-open|reclaim" "$work/shim.log" | tail -3; fail "the open file is unusable after the restart"; }
  cat "$work/user.out"
  unmount_nfs
  grep -q "client id lost" "$work/shim.log" || fail "no client id recovery: the case is not made"
  got=$(cat "$work/export/kafka/seg")
  [ "$got" = "before-restart;after-restart" ] || fail "the export has '$got'"
  pass "a squashed mount re-opens a user's 0600 file as the user after a restart ($engine)"
  ;;
restart-unstable)
  # ganesha's default (NFS_Commit = false) answers WRITEs UNSTABLE: the daemon keeps their
  # data until COMMIT. commit_secs=600: no age COMMIT during the test; attr_timeout=0: every
  # stat asks the daemon, which then asks the server.
  ganesha_start "$work/state" "$work/export" "$port" "$mnt_port" VFS || fail "ganesha"
  shim_opts="attr_timeout=0"
  mount_nfs "&nconnect=2&commit_secs=600"
  mkfifo "$work/restarted"
  python3 - "$mnt" "$work" > "$work/app.out" 2>&1 <<'PY' &
import os, sys
mnt, work = sys.argv[1], sys.argv[2]
log = os.open(os.path.join(mnt, "log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
os.write(log, b"A" * 100)
data = os.open(os.path.join(mnt, "data"), os.O_RDWR | os.O_CREAT, 0o644)
os.write(data, b"B" * 100)
# Written, then its mtime set (tar, cp -p): the SETATTR commits first, so nothing is
# re-sent after the restart to move the mtime again.
stamped = os.open(os.path.join(mnt, "stamped"), os.O_WRONLY | os.O_CREAT, 0o644)
os.write(stamped, b"S" * 100)
os.utime(stamped, (978307200, 978307200))  # 2001-01-01
open(os.path.join(work, "ready"), "w").close()
open(os.path.join(work, "restarted")).read()  # the fifo: until ganesha is back
print("stat size after the restart:", os.stat(os.path.join(mnt, "log")).st_size)
got = os.pread(data, 200, 0)
print("read after the restart:", len(got), "bytes,", "all B" if got == b"B" * 100 else repr(got[:16]))
os.write(log, b"new")
os.fsync(log)
os.close(log)
os.fsync(data)
os.close(data)
os.close(stamped)
print("append, fsync and close returned")
PY
  app=$!
  for _ in $(seq 100); do [ -e "$work/ready" ] && break; sleep 0.1; done
  [ -e "$work/ready" ] || { kill "$app"; cat "$work/app.out"; fail "the writer did not start"; }
  # Both writes landed (answered UNSTABLE, so kept for COMMIT) before the crash.
  sizes() { stat -c %s "$work/export/log" "$work/export/data" 2>/dev/null | tr '\n' ' '; }
  for _ in $(seq 100); do [ "$(sizes)" = "100 100 " ] && break; sleep 0.05; done
  [ "$(sizes)" = "100 100 " ] || { kill "$app"; fail "the writes did not reach the export: $(sizes)"; }
  grep -q "verifier changed" "$work/shim.log" && { kill "$app"; fail "a re-send before the restart: not the case to test"; }
  ganesha_crash "$work/state"
  # A server crash loses what it had not written to stable storage: here all of it.
  truncate -s 0 "$work/export/log" "$work/export/data"
  sleep 1.1  # ganesha's write verifier is its start time in seconds: a new one
  ganesha_start "$work/state" "$work/export" "$port" "$mnt_port" VFS || { kill "$app"; fail "ganesha again"; }
  echo > "$work/restarted"
  wait "$app" || { cat "$work/app.out"; fail "the application failed after the restart"; }
  cat "$work/app.out"
  unmount_nfs
  grep -E "verifier changed|reconnected|client id lost|never committed" "$work/shim.log" | sed 's/^/  daemon: /'
  want=$(printf 'A%.0s' $(seq 100))new
  got=$(cat "$work/export/log")
  echo "export's log file: $(echo "$got" | head -c 12)... ($(echo -n "$got" | wc -c) bytes)"
  grep -q "stat size after the restart: 100$" "$work/app.out" ||
    fail "stat through the mount showed the size the restarted server had, not what was written"
  grep -q "read after the restart: 100 bytes, all B$" "$work/app.out" ||
    fail "a read through the mount returned what the restarted server had, not what was written"
  [ "$got" = "$want" ] || fail "O_APPEND after the restart: the export has '$got' (want 100 A + new)"
  [ "$(cat "$work/export/data")" = "$(printf 'B%.0s' $(seq 100))" ] ||
    fail "the export's data file: '$(cat "$work/export/data")'"
  grep -q "verifier changed" "$work/shim.log" || fail "no re-send under the new verifier: the case is not made"
  [ "$(cat "$work/export/stamped")" = "$(printf 'S%.0s' $(seq 100))" ] || fail "the export's stamped file: '$(cat "$work/export/stamped")'"
  mtime=$(stat -c %Y "$work/export/stamped")
  [ "$mtime" = 978307200 ] ||
    fail "futimens after a write: the mtime is $(date -u -d @"$mtime" +%FT%TZ), not 2001-01-01 (the write re-sent after the restart, not committed before the SETATTR)"
  # 2. The re-send cannot land (the restarted server's disk is full) and the file's last
  #    close comes: close(2) reports ENOSPC, and the daemon, which drops the kept data with
  #    the file's last open, says so at ERROR with the bytes lost (before 2026-12-05: nothing).
  ganesha_stop "$work/state"
  mkdir -p "$work/small"
  mount -t tmpfs -o size=1m nfsshim-restart-nospc "$work/small" || fail "tmpfs"
  ganesha_start "$work/state" "$work/small" "$port" "$mnt_port" VFS || fail "ganesha on the tmpfs"
  : > "$work/shim.log"
  mount_nfs "&nconnect=2&commit_secs=600"
  rm -f "$work/ready" "$work/restarted" && mkfifo "$work/restarted"
  python3 - "$mnt" "$work" > "$work/app.out" 2>&1 <<'PY' &
import errno, os, sys
mnt, work = sys.argv[1], sys.argv[2]
fd = os.open(os.path.join(mnt, "seg"), os.O_WRONLY | os.O_CREAT, 0o644)
os.write(fd, b"C" * 100)
open(os.path.join(work, "ready"), "w").close()
open(os.path.join(work, "restarted")).read()
try:
    os.close(fd)
    print("close: ok")
except OSError as e:
    print("close:", errno.errorcode[e.errno])
PY
  app=$!
  for _ in $(seq 100); do [ -e "$work/ready" ] && [ "$(stat -c %s "$work/small/seg" 2>/dev/null)" = 100 ] && break; sleep 0.05; done
  [ "$(stat -c %s "$work/small/seg" 2>/dev/null)" = 100 ] || { kill "$app"; fail "the write did not reach the tmpfs export"; }
  ganesha_crash "$work/state"
  truncate -s 0 "$work/small/seg"
  dd if=/dev/zero of="$work/small/fill" bs=4k status=none 2>/dev/null  # until ENOSPC
  sleep 1.1
  ganesha_start "$work/state" "$work/small" "$port" "$mnt_port" VFS || { kill "$app"; fail "ganesha on the tmpfs again"; }
  echo > "$work/restarted"
  wait "$app"
  cat "$work/app.out"
  unmount_nfs
  grep -E "COMMIT at release|never committed" "$work/shim.log" | sed 's/^/  daemon: /'
  grep -q "close: ENOSPC" "$work/app.out" || fail "close(2) did not report the failed re-send"
  grep -q "error: .*last close: 100 bytes written through the mount were never committed (No space left on device)" \
    "$work/shim.log" || fail "data dropped at the last close without an ERROR naming it"
  ganesha_stop "$work/state"
  umount "$work/small"
  pass "data a restarted server lost is put back before its size or bytes are used; what cannot be is logged at the last close ($engine)"
  ;;
groups)
  ganesha_start "$work/state" "$work/export" "$port" "$mnt_port" VFS || fail "ganesha"
  mkdir "$work/export/shared" && chown 0:4242 "$work/export/shared" && chmod 2770 "$work/export/shared"
  printf 'root wrote this\n' > "$work/export/shared/log" && chown 0:4242 "$work/export/shared/log" &&
    chmod 0660 "$work/export/shared/log" || fail "cannot prepare the export"
  chmod 755 "$work"  # the mount point is reached by uid 65534
  mount_nfs "&nconnect=2"
  as_member() { setpriv --reuid=65534 --regid=65534 --groups=4242 "$@"; }
  # Appends of 64 KiB answered early, then fsync and close: every one lands, as the group member.
  as_member /usr/bin/python3 - "$mnt/shared/log" <<'PY' || fail "writes through a supplementary group (vers=$vers)"
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
for i in range(32):
    os.write(fd, bytes([97 + i % 26]) * 65536)
os.fsync(fd)
os.close(fd)
with open(sys.argv[1], "rb") as f:
    data = f.read()
want = b"root wrote this\n" + b"".join(bytes([97 + i % 26]) * 65536 for i in range(32))
if data != want:
    sys.exit(f"read back {len(data)} bytes, {len(want)} expected")
print("32 appends of 64 KiB, fsync, close and the read back: all as a member of group 4242")
PY
  out=$(setpriv --reuid=65534 --regid=65534 --clear-groups cat "$mnt/shared/log" 2>&1) &&
    fail "control: read without the group worked"
  grep -q "Permission denied" <<<"$out" || fail "control: without the group: $out"
  unmount_nfs
  [ "$(stat -c %s "$work/export/shared/log")" = $((16 + 32 * 65536)) ] ||
    fail "the export's file has $(stat -c %s "$work/export/shared/log") bytes"
  pass "I/O through a supplementary group of the caller lands on the export ($engine)"
  ;;
squash-unlink)
  mkdir -p "$work/export"
  chmod 1777 "$work/export"  # the squashed root makes the graveyard here
  mkdir "$work/export/kafka" && chown 1000:1000 "$work/export/kafka" && chmod 0755 "$work/export/kafka"
  # 0666: this server (Linux, fs.protected_hardlinks) lets the anonymous uid LINK a file it
  # may read and write; ONTAP has no such rule, and Kafka's 0644 files link there as well.
  head -c 300000 /dev/urandom > "$work/data"
  cp "$work/data" "$work/export/kafka/seg" && chown 1000:1000 "$work/export/kafka/seg" && chmod 0666 "$work/export/kafka/seg"
  GANESHA_EXPORT_EXTRA='CLIENT { Clients = 127.0.0.1; Squash = Root_Squash; Anonymous_Uid = 4242; Anonymous_Gid = 4242; }' \
    ganesha_start "$work/state" "$work/export" "$port" "$mnt_port" VFS || fail "ganesha (root_squash)"
  chmod 755 "$work"  # the mount point is reached by uid 1000
  mount_nfs "&nconnect=2"
  as_user() { setpriv --reuid=1000 --regid=1000 --clear-groups "$@"; }
  out=$(setpriv --reuid=1001 --regid=1001 --clear-groups rm -f "$mnt/kafka/seg" 2>&1) &&
    fail "uid 1001 removed uid 1000's file"
  as_user /usr/bin/python3 - "$mnt/kafka/seg" "$work/data" <<'PY' || fail "unlink of a held file under root_squash (vers=$vers)"
import os, sys
path, want = sys.argv[1], open(sys.argv[2], "rb").read()
fd = os.open(path, os.O_RDONLY)
head = os.read(fd, 1000)
os.unlink(path)  # as the owner, in its own directory
if os.path.exists(path):
    sys.exit("the name is still there after unlink")
rest = os.read(fd, len(want))
os.close(fd)
if head + rest != want:
    sys.exit(f"the holder read {len(head + rest)} bytes, not the file's {len(want)}")
print("uid 1000 unlinked its held file; the holder read it whole")
PY
  sleep 0.2  # the RELEASE comes after close(2) returns
  unmount_nfs
  grep -q "linked there instead, and the name removed as the caller" "$work/shim.log" ||
    fail "the link-then-remove path was not taken"
  [ ! -e "$work/export/kafka/seg" ] || fail "the file is still on the export"
  left=$(ls -A "$work/export/.graveyard.nfsshim/u$(id -u)")
  [ -z "$left" ] || fail "graveyard not empty: $left"
  [ -z "$(ls -A "$work/export/kafka")" ] || fail "left in the user's directory: $(ls -A "$work/export/kafka")"
  # A held file with a second name, and a graveyard the mount may not write (0500 on the
  # export; ganesha lets the anonymous uid LINK even a 0600 file, so this stands in for a
  # server that refuses the LINK, as Linux's fs.protected_hardlinks does): the other name
  # keeps the file, and the owner's plain unlink must succeed (it gave EACCES once every
  # held file was buried, whatever its link count).
  echo two > "$work/export/kafka/two" && ln "$work/export/kafka/two" "$work/export/kafka/two.b"
  chown 1000:1000 "$work/export/kafka/two" && chmod 0644 "$work/export/kafka/two"
  chmod 0500 "$work/export/.graveyard.nfsshim/u$(id -u)"
  mount_nfs "&nconnect=2"
  as_user /usr/bin/python3 - "$mnt/kafka/two" <<'PY' || fail "unlink of a held file with two names under root_squash (vers=$vers)"
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.unlink(sys.argv[1])
assert os.pread(fd, 3, 0) == b"two", "the holder lost the data"
os.close(fd)
PY
  sleep 0.2
  unmount_nfs
  [ "$(ls "$work/export/kafka" | tr '\n' ' ')" = "two.b " ] || fail "names left: $(ls "$work/export/kafka")"
  grep -q "plain remove, the other names keep it" "$work/shim.log" || fail "the graveyard was not refused: the case is not made"
  pass "unlink of a held file by its owner under root_squash (one name, two names); another user refused ($engine)"
  ;;
two-writers)
  ganesha_start "$work/state" "$work/export" "$port" "$mnt_port" VFS || fail "ganesha"
  mount_nfs "&nconnect=4"
  python3 - "$mnt/f" <<'PY' || fail "two writers through vers=$vers"
import os, sys, threading, time
path = sys.argv[1]
chunk = 1 << 16
for rnd in range(30):
    a = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)  # the oldest open
    b = os.open(path, os.O_WRONLY)
    err, stop = [], threading.Event()
    def writer():
        off = 0
        try:
            while not stop.is_set():
                os.pwrite(b, bytes([off // chunk % 251]) * chunk, off)
                off += chunk
        except OSError as e:
            err.append(f"write at {off}: {e}")
    t = threading.Thread(target=writer)
    t.start()
    time.sleep(0.02)
    os.close(a)  # while b writes
    time.sleep(0.02)
    stop.set()
    t.join()
    try:
        os.fsync(b)
        os.close(b)
    except OSError as e:
        err.append(f"fsync/close: {e}")
    if err:
        sys.exit(f"round {rnd}: {err[0]}")
    data = open(path, "rb").read()
    bad = [i for i in range(len(data) // chunk) if data[i * chunk:(i + 1) * chunk] != bytes([i % 251]) * chunk]
    if bad:
        sys.exit(f"round {rnd}: chunk {bad[0]} of {len(data) // chunk} wrong")
print(f"30 rounds: the first writer's close amid the second's writes, no error, data intact")
PY
  unmount_nfs
  pass "two writers of one file, the first closing amid the second's writes ($engine)"
  ;;
graveyard-owner)
  ganesha_start "$work/state" "$work/export" "$port" "$mnt_port" VFS || fail "ganesha"
  g=$work/export/.graveyard.nfsshim
  mkdir -p "$g"
  chmod 711 "$g"
  # Each case under its own identity (uid= in the URL: the graveyard is u<uid>), made beside
  # ganesha before it looks the name up: it caches what it saw (a directory replaced by a
  # file under it reads as a stale handle).
  refused() {  # UID EXPECTED-TEXT: the mount is refused, saying so, and leaves nothing mounted
    local out rc
    out=$(timeout 60 "$shim" "$url&uid=$1&gid=$1" "$mnt" -f 2>&1); rc=$?
    [ $rc -ne 0 ] || fail "mounted over a graveyard u$1 $(stat -c 'owned by %u, mode %a' "$g/u$1")"
    [ $rc -ne 124 ] || fail "the mount hung"
    printf '%s\n' "$out" | grep -qF -- "$2" || fail "message lacks '$2': $out"
    grep -q " $mnt " /proc/self/mountinfo && fail "a refused mount is mounted"
    echo "ok: refused: $(printf '%s\n' "$out" | grep -F -- "$2" | head -1)"
  }
  touch "$g/u1001"
  refused 1001 "'.graveyard.nfsshim/u1001' on the export is not a directory"
  # Planted by another user before our first mount: it could read, link out or remove what
  # we bury there.
  mkdir "$g/u1002"; chown 65534:65534 "$g/u1002"; chmod 777 "$g/u1002"
  refused 1002 "is owned by uid 65534 with mode 777"
  mkdir "$g/u1003"; chown 65534:65534 "$g/u1003"; chmod 700 "$g/u1003"
  refused 1003 "is owned by uid 65534 with mode 700"
  # Ours but open to others.
  mkdir "$g/u1004"; chown 1004:1004 "$g/u1004"; chmod 755 "$g/u1004"
  refused 1004 "is owned by uid 1004 with mode 755"
  # mounted_and_used OWNER LABEL: mounted, the level u<uid> (U) is OWNER's with mode 700,
  # and a file held open while removed through the mount waits there; then unmounted.
  mounted_and_used() {
    mount_nfs ""
    [ "$(stat -c '%u %a' "$u")" = "$1 700" ] || fail "$2: $u is $(stat -c '%u %a' "$u")"
    echo data > "$mnt/f"
    exec 7<"$mnt/f"
    rm "$mnt/f"
    [ "$(ls -A "$u" | wc -l)" = 1 ] || fail "$2: the unlinked open file is not in the graveyard: $(ls -A "$u")"
    exec 7<&-
    unmount_nfs
  }
  # Ours alone (made by the mount itself): mounted, and used.
  u=$g/u$(id -u)
  mounted_and_used "$(id -u)" "made by the mount"
  [ -z "$(ls -A "$u")" ] || fail "graveyard not empty: $(ls -A "$u")"
  # Under root_squash the server owns what we make as its anonymous uid, not ours: the
  # level it made for us is ours all the same (learnt from a probe directory), at every mount.
  ganesha_stop "$work/state"
  mkdir -p "$work/export2"
  chmod 1777 "$work/export2"  # the squashed root may make the graveyard here
  GANESHA_EXPORT_EXTRA='CLIENT { Clients = 127.0.0.1; Squash = Root_Squash; Anonymous_Uid = 4242; Anonymous_Gid = 4242; }' \
    ganesha_start "$work/state" "$work/export2" "$port" "$mnt_port" VFS || fail "ganesha (root_squash)"
  u=$work/export2/.graveyard.nfsshim/u$(id -u)
  squash_warning="graveyard .graveyard.nfsshim/u$(id -u) on the export is owned by uid 4242, not this mount's uid $(id -u)"
  grep -qF "$squash_warning" "$work/shim.log" && fail "warned of a squashed graveyard without root_squash"
  mounted_and_used 4242 "root_squash, first mount"
  mounted_and_used 4242 "root_squash, mounted again"
  # Once per mount, naming what is exposed and the remedy.
  [ "$(grep -cF "$squash_warning" "$work/shim.log")" = 2 ] ||
    fail "expected the squashed-graveyard warning once per mount (2): $(grep -F "owned by uid" "$work/shim.log")"
  grep -F "$squash_warning" "$work/shim.log" | grep -q "can list, read, link out and remove.*uid= in the URL" ||
    fail "the warning names neither the exposure nor the remedy: $(grep -F "$squash_warning" "$work/shim.log" | head -1)"
  echo "ok: root_squash: warned at each mount: $(grep -F "$squash_warning" "$work/shim.log" | head -1 | sed 's/.*warning: //')"
  [ -z "$(ls -A "$u")" ] || fail "graveyard not empty: $(ls -A "$u")"
  [ -z "$(ls -A "$work/export2/.graveyard.nfsshim" | grep -v '^u')" ] || fail "a probe was left: $(ls -A "$work/export2/.graveyard.nfsshim")"
  echo "ok: root_squash: u0 owned by the anonymous uid 4242 is ours, at the first mount and again"
  pass "the graveyard's u<uid> level must be ours alone ($engine)"
  ;;
graveyard-reap)
  ganesha_start "$work/state" "$work/export" "$port" "$mnt_port" VFS || fail "ganesha"
  g=$work/export/.graveyard.nfsshim
  u=$g/u$(id -u)
  mkdir -p "$u" && chmod 711 "$g" && chmod 700 "$u"
  # This host's identity as entry names carry it (identity.cc, entry_name.cc): the hostname
  # with unsafe characters as _, 8 hex digits of the boot id, the pid namespace's inode in hex.
  host=$(uname -n | LC_ALL=C sed 's/[^!-}]/_/g; s|/|_|g')
  boot=$(tr -cd '0-9a-fA-F' </proc/sys/kernel/random/boot_id | cut -c1-8)
  pidns=$(printf '%x' "$(stat -L -c %i /proc/self/ns/pid)")
  other=deadbeef; [ "$boot" = deadbeef ] && other=feedface
  true & dead=$!; wait $dead  # a pid that is gone (and start time 1: never a live one's)
  twin="b~$host~$other.$pidns~1~1~1"
  # An entry an nfs:// daemon made ('n') whose owner is gone: nothing else on this host
  # could hold it. One buried through a kernel mount ('b', the preload's kind) may still
  # be held through that mount by another process here, which only the kernel's unlink
  # (silly rename) would spare: the daemon's REMOVE must not take it.
  gone="n~$host~$boot.$pidns~$dead~1~1"
  kernel="b~$host~$boot.$pidns~$dead~1~2"
  echo held > "$u/$twin" && echo left > "$u/$gone" && echo held > "$u/$kernel" || fail "cannot plant entries in $u"
  mount_nfs ""
  [ -e "$u/$twin" ] || fail "the fresh entry of another boot under this host's name was reaped at mount: $(grep graveyard "$work/shim.log")"
  [ -e "$u/$gone" ] && fail "the entry of this boot whose owner $dead is gone was not reaped: $(ls -A "$u")"
  [ -e "$u/$kernel" ] || fail "the entry buried through a kernel mount (owner gone, other holders on this host possible) was removed by the daemon: $(grep graveyard "$work/shim.log")"
  grep -q "reaped 1 entries of dead owners, kept 2" "$work/shim.log" || fail "log: $(grep graveyard "$work/shim.log")"
  unmount_nfs
  echo "ok: kept $twin (another boot, younger than foreign_max_age) and $kernel (buried through a kernel mount), reaped $gone"
  # foreign_max_age from the settings file: 0 makes the other boot's entry old enough,
  # and the kernel-mount entry too.
  echo "foreign_max_age = 0" > "$work/nfsshim.conf"
  NFSSHIM_CONFIG=$work/nfsshim.conf mount_nfs ""
  [ -e "$u/$twin" ] && fail "foreign_max_age = 0: the entry of another boot was kept: $(grep graveyard "$work/shim.log")"
  [ -e "$u/$kernel" ] && fail "foreign_max_age = 0: the kernel-mount entry of a gone owner was kept: $(grep graveyard "$work/shim.log")"
  unmount_nfs
  echo "ok: foreign_max_age = 0: the entries of another boot and of a kernel mount are reaped"
  pass "graveyard reaping at mount follows classify_entry ($engine)"
  ;;
graveyard-removed)
  ganesha_start "$work/state" "$work/export" "$port" "$mnt_port" VFS || fail "ganesha"
  mount_nfs ""
  g=$work/export/.graveyard.nfsshim
  u=$g/u$(id -u)
  [ -d "$u" ] || fail "no graveyard on the export"
  head -c 100000 /dev/urandom > "$work/data"
  for f in old a b; do cp "$work/data" "$mnt/$f" || fail "write $f"; done
  echo new > "$mnt/t"
  made_again() { grep -c "was removed under the mount .*made again" "$work/shim.log"; }
  # The graveyard removed on the export while the mount is up (an operator's rm -rf), first
  # with an entry in it (OLD, held), then empty: each next unlink or rename over a held file
  # must make it again (one warning each) and keep the file for its holder.
  python3 - "$mnt" "$u" "$g" "$work/data" "$work/shim.log" <<'PY' || fail "after the graveyard was removed ($engine)"
import os, shutil, sys, time
mnt, u, g, want, log = sys.argv[1], sys.argv[2], sys.argv[3], open(sys.argv[4], "rb").read(), sys.argv[5]
def warnings():
    return sum("made again" in l for l in open(log))
def read_all(fd):
    return os.pread(fd, len(want) + 1, 0)
old = os.open(f"{mnt}/old", os.O_RDONLY)
os.unlink(f"{mnt}/old")
assert len(os.listdir(u)) == 1, f"the held OLD is not buried: {os.listdir(u)}"
shutil.rmtree(g)
a = os.open(f"{mnt}/a", os.O_RDONLY)
try:
    os.unlink(f"{mnt}/a")
except OSError as e:
    sys.exit(f"unlink of a held file after the graveyard was removed: {e}")
assert not os.path.exists(f"{mnt}/a"), "the unlinked name is still there"
assert os.path.isdir(u), "the graveyard was not made again"
assert len(os.listdir(u)) == 1, f"the held A is not in the new graveyard: {os.listdir(u)}"
assert read_all(a) == want, "the holder of A reads other bytes"
assert ".graveyard.nfsshim" not in os.listdir(mnt), "the new graveyard shows in the mount's listing"
assert warnings() == 1, f"{warnings()} warnings after the first re-making, not 1"
os.close(old)  # its entry went with the old graveyard: its REMOVE finds nothing
os.close(a)
time.sleep(0.5)  # the RELEASE comes after close(2) returns
assert os.listdir(u) == [], f"graveyard not empty after the last close: {os.listdir(u)}"
print("ok: unlink of a held file: graveyard made again, the holder read on, the entry gone at close")
shutil.rmtree(u)  # again, its u<uid> level only, now for a rename over a held file (a LINK)
b = os.open(f"{mnt}/b", os.O_RDONLY)
try:
    os.rename(f"{mnt}/t", f"{mnt}/b")
except OSError as e:
    sys.exit(f"rename over a held target after the graveyard was removed: {e}")
assert open(f"{mnt}/b", "rb").read() == b"new\n", "the renamed file is not at the target name"
assert len(os.listdir(u)) == 1, f"the held target is not in the new graveyard: {os.listdir(u)}"
assert read_all(b) == want, "the holder of the replaced target reads other bytes"
assert warnings() == 2, f"{warnings()} warnings after the second re-making, not 2"
os.close(b)
time.sleep(0.5)
assert os.listdir(u) == [], f"graveyard not empty after the last close: {os.listdir(u)}"
print("ok: rename over a held file: graveyard made again, the holder read on, the entry gone at close")
PY
  unmount_nfs
  grep -q "graveyard entry .* already gone" "$work/shim.log" || fail "the old entry's REMOVE was not logged"
  [ "$(stat -c '%u %a' "$u")" = "$(id -u) 700" ] || fail "the graveyard made again is $(stat -c '%u %a' "$u")"
  echo "ok: $(grep -m1 'made again' "$work/shim.log" | sed 's/.*warning: //')"
  pass "a graveyard removed under the mount is made again at the next unlink or rename over ($engine)"
  ;;
held-hardlink)
  ganesha_start "$work/state" "$work/export" "$port" "$mnt_port" VFS || fail "ganesha"
  mount_nfs ""
  u=$work/export/.graveyard.nfsshim/u$(id -u)
  head -c 100000 /dev/urandom > "$work/data"
  for f in x p; do cp "$work/data" "$mnt/$f" || fail "write $f"; done
  ln "$mnt/x" "$mnt/y" && ln "$mnt/p" "$mnt/q" || fail "ln through the mount"
  echo new > "$mnt/t"
  # A held file with two names loses one through the mount: it is buried all the same, so
  # another client removing the other name (Y, on the export) does not take it from the
  # holder; the same for a rename over a held file with another name (P; Q stays).
  python3 - "$mnt" "$u" "$work/export" "$work/data" <<'PY' || fail "held file with two names ($engine)"
import os, sys, time
mnt, u, exp, want = sys.argv[1], sys.argv[2], sys.argv[3], open(sys.argv[4], "rb").read()
x = os.open(f"{mnt}/x", os.O_RDONLY)
os.unlink(f"{mnt}/x")
assert not os.path.exists(f"{mnt}/x"), "the unlinked name is still there"
assert len(os.listdir(u)) == 1, f"the held file with another name is not in the graveyard: {os.listdir(u)}"
os.unlink(f"{exp}/y")  # another client removes the other name
assert os.pread(x, len(want) + 1, 0) == want, "the holder reads other bytes"
os.close(x)
time.sleep(0.5)  # the RELEASE comes after close(2) returns
assert os.listdir(u) == [], f"graveyard not empty after the last close: {os.listdir(u)}"
print("ok: unlink of one name of a held file with two: buried, the holder read on after the other went")
p = os.open(f"{mnt}/p", os.O_RDONLY)
os.rename(f"{mnt}/t", f"{mnt}/p")
assert len(os.listdir(u)) == 1, f"the held target with another name is not in the graveyard: {os.listdir(u)}"
assert os.pread(p, len(want) + 1, 0) == want, "the holder of the replaced target reads other bytes"
os.close(p)
time.sleep(0.5)
assert os.listdir(u) == [], f"graveyard not empty after the last close: {os.listdir(u)}"
assert open(f"{exp}/q", "rb").read() == want, "the other name lost its data"
assert open(f"{mnt}/q", "rb").read() == want, "the other name lost its data (through the mount)"
assert os.stat(f"{exp}/q").st_nlink == 1, f"the other name has {os.stat(f'{exp}/q').st_nlink} links, not 1"
print("ok: rename over a held file with two names: buried, gone at close, the other name keeps the data")
PY
  unmount_nfs
  pass "a held file with two names is buried at unlink and rename over ($engine)"
  ;;
splice-writes)
  # libfuse splices a request into a pipe only if one holds the largest (1 MiB max_write: a
  # 2 MiB pipe), which needs CAP_SYS_RESOURCE or fs.pipe-max-size >= 2 MiB; raised here for
  # the test if lower (restored at exit). Sizes chosen for op_write_buf's paths: 1 MiB
  # writes (read into their own copy, sent from it), 64 KiB ones (read into the scratch
  # buffer, gathered), 3000-byte ones (under a page: libfuse reads them itself), 4097-byte
  # ones (the kernel cuts the unaligned ones at page ends: pieces either way), O_DIRECT
  # 1 MiB ones (FILE_SYNC from their own copy).
  pipe_file=/proc/sys/fs/pipe-max-size
  pipe_max=$(cat "$pipe_file")
  if [ "$pipe_max" -lt 2097152 ]; then
    echo 2097152 > "$pipe_file" || fail "cannot raise $pipe_file to 2 MiB for the test"
    pipe_max_was=$pipe_max
  fi
  ganesha_start "$work/state" "$work/export" "$port" "$mnt_port" VFS || fail "ganesha"
  head -c $(((8 << 20) + 12345)) /dev/urandom > "$work/odd"
  head -c $((8 << 20)) /dev/urandom > "$work/even"
  piped() { sed -n 's/.*writes with their data through a pipe (splice): \([0-9]*\).*/\1/p' "$work/shim.log" | tail -1; }
  write_all() {  # TAG: every size through the mount, each file compared on the export
    dd if="$work/odd" of="$mnt/$1.1m" bs=1M conv=fsync status=none || fail "$1: dd bs=1M"
    dd if="$work/odd" of="$mnt/$1.64k" bs=64k conv=fsync status=none || fail "$1: dd bs=64k"
    dd if="$work/odd" of="$mnt/$1.4097" bs=4097 count=600 conv=fsync status=none || fail "$1: dd bs=4097"
    dd if="$work/odd" of="$mnt/$1.3000" bs=3000 count=600 conv=fsync status=none || fail "$1: dd bs=3000"
    dd if="$work/even" of="$mnt/$1.direct" bs=1M oflag=direct status=none || fail "$1: dd oflag=direct"
    unmount_nfs
    cmp "$work/odd" "$work/export/$1.1m" || fail "$1: 1 MiB writes differ on the export"
    cmp "$work/odd" "$work/export/$1.64k" || fail "$1: 64 KiB writes differ on the export"
    cmp -n $((4097 * 600)) "$work/odd" "$work/export/$1.4097" || fail "$1: 4097-byte writes differ"
    [ "$(stat -c %s "$work/export/$1.4097")" = $((4097 * 600)) ] || fail "$1: 4097-byte writes: wrong size"
    cmp -n $((3000 * 600)) "$work/odd" "$work/export/$1.3000" || fail "$1: 3000-byte writes differ"
    cmp "$work/even" "$work/export/$1.direct" || fail "$1: O_DIRECT writes differ on the export"
    echo "ok: $1: all files intact; $(grep -o 'written data through a pipe (splice): .*' "$work/shim.log" | tail -1); $(piped) through a pipe"
  }
  mount_nfs "&nconnect=4"
  write_all spliced
  grep -q "written data through a pipe (splice): on" "$work/shim.log" || fail "splice of written data is not on"
  # At least the 9 + 129 + 8 requests of the 1 MiB, 64 KiB and O_DIRECT writes.
  [ "$(piped)" -ge 146 ] || fail "only $(piped) writes came through a pipe, 146 expected"
  shim_opts=nosplice
  mount_nfs "&nconnect=4"
  write_all nosplice
  grep -q "through a pipe (splice): off, -o nosplice" "$work/shim.log" || fail "-o nosplice: not logged as off"
  [ "$(piped)" = 0 ] || fail "-o nosplice: $(piped) writes through a pipe"
  shim_opts=
  # The daemon as an unprivileged one would be: no CAP_SYS_RESOURCE, pipes of 1 MiB at most.
  echo 1048576 > "$pipe_file" || fail "cannot set $pipe_file"
  [ -n "$pipe_max_was" ] || pipe_max_was=$pipe_max
  shim_wrap="setpriv --bounding-set=-sys_resource --inh-caps=-sys_resource"
  mount_nfs "&nconnect=4"
  write_all small-pipes
  grep -q "through a pipe (splice): off, a pipe cannot hold a request of" "$work/shim.log" ||
    fail "1 MiB pipes: splice not logged as off with its reason"
  [ "$(piped)" = 0 ] || fail "1 MiB pipes: $(piped) writes through a pipe"
  pass "WRITE data through a pipe where a pipe holds a request: all sizes intact; off with -o nosplice and with 1 MiB pipes"
  ;;
unlock-commit)
  # commit_secs=600: no age COMMIT during the test; only an unlock or a close commits.
  ganesha_start "$work/state" "$work/export" "$port" "$mnt_port" VFS || fail "ganesha"
  mnt2=$work/mnt2
  mkdir -p "$mnt2"
  shim2_pid=
  trap 'grep -q " $mnt2 " /proc/self/mountinfo && fusermount3 -u -z "$mnt2"; [ -n "$shim2_pid" ] && kill $shim2_pid; cleanup' EXIT
  mount_nfs "&nconnect=2&commit_secs=600"
  # Host A: two processes (a lock owner each) write under their lock, release it, and keep
  # the file open until told to close: f1 by F_UNLCK, f2 by closing another (read-only)
  # descriptor of the file, which drops the process's locks on it.
  python3 - "$mnt" "$work" > "$work/a.out" 2>&1 <<'PY' &
import fcntl, os, sys, time
mnt, work = sys.argv[1], sys.argv[2]
def wait_go():
    while not os.path.exists(os.path.join(work, "go")):
        time.sleep(0.05)
if os.fork() == 0:
    w = os.open(os.path.join(mnt, "f2"), os.O_RDWR | os.O_CREAT, 0o644)
    r = os.open(os.path.join(mnt, "f2"), os.O_RDONLY)
    fcntl.lockf(w, fcntl.LOCK_EX)
    os.pwrite(w, b"A" * 100, 0)
    # close(2) of any descriptor of the file drops the process's locks on it. A duplicate
    # keeps the read-only open: this FLUSH has no RELEASE behind it (whose COMMIT would
    # hide a flush that does not commit).
    r2 = os.dup(r)
    os.close(r)
    open(os.path.join(work, "ready2"), "w").close()
    wait_go()  # until host B has written
    os.close(w)
    os.close(r2)
    print("A closed f2")
    os._exit(0)
f1 = os.open(os.path.join(mnt, "f1"), os.O_RDWR | os.O_CREAT, 0o644)
fcntl.lockf(f1, fcntl.LOCK_EX)
os.pwrite(f1, b"A" * 100, 0)
fcntl.lockf(f1, fcntl.LOCK_UN)  # F_UNLCK
open(os.path.join(work, "ready1"), "w").close()
wait_go()
os.close(f1)
_, status = os.wait()
print("A closed f1")
sys.exit(1 if status else 0)
PY
  app=$!
  for _ in $(seq 100); do [ -e "$work/ready1" ] && [ -e "$work/ready2" ] && break; sleep 0.1; done
  [ -e "$work/ready1" ] && [ -e "$work/ready2" ] || { kill "$app"; cat "$work/a.out"; fail "host A did not get through its writes and unlocks"; }
  # vers=4.1: the unlocks waited for A's answered writes; vers=3 (the kernel's locks): they
  # land on their own.
  sizes() { stat -c %s "$work/export/f1" "$work/export/f2" 2>/dev/null | tr '\n' ' '; }
  for _ in $(seq 100); do [ "$(sizes)" = "100 100 " ] && break; [ "$vers" = 3 ] || break; sleep 0.05; done
  [ "$(sizes)" = "100 100 " ] || { kill "$app"; fail "A's writes were not on the export after its unlocks: $(sizes)"; }
  grep -q "verifier changed" "$work/shim.log" && { kill "$app"; fail "a re-send before the restart: not the case to test"; }
  ganesha_crash "$work/state"
  sleep 1.1  # ganesha's write verifier is its start time in seconds: a new one
  ganesha_start "$work/state" "$work/export" "$port" "$mnt_port" VFS || { kill "$app"; fail "ganesha again"; }
  # Host B: another mount of the export; takes the lock, reads, writes its bytes, commits.
  start_mount "$url&nconnect=1" "$mnt2" "$work/shim2.log"
  shim2_pid=$started
  python3 - "$mnt2" > "$work/b.out" 2>&1 <<'PY' || { kill "$app"; cat "$work/b.out"; fail "host B"; }
import fcntl, os, sys
for name in ("f1", "f2"):
    fd = os.open(os.path.join(sys.argv[1], name), os.O_RDWR)
    fcntl.lockf(fd, fcntl.LOCK_EX)
    got = os.pread(fd, 200, 0)
    print("B read", name + ":", len(got), "bytes,", "all A" if got == b"A" * 100 else repr(got[:16]))
    os.pwrite(fd, b"B" * 100, 0)
    os.fsync(fd)
    fcntl.lockf(fd, fcntl.LOCK_UN)
    os.close(fd)
PY
  stop_mount "$mnt2" "$shim2_pid"
  shim2_pid=
  touch "$work/go"
  wait "$app" || { cat "$work/a.out"; fail "host A failed after the restart"; }
  cat "$work/b.out" "$work/a.out"
  unmount_nfs
  grep -E "verifier changed|COMMIT before releasing" "$work/shim.log" | sed 's/^/  daemon A: /'
  want=$(printf 'B%.0s' $(seq 100))
  got1=$(cat "$work/export/f1") got2=$(cat "$work/export/f2")
  echo "export: f1 ${got1:0:8}... f2 ${got2:0:8}... (B's bytes are B, A's are A)"
  if [ "$vers" = 3 ]; then
    # Control: vers=3 locks stay in the host's kernel (no NLM), the daemon never sees the
    # unlock, so nothing commits there and A's close re-sends its bytes over B's. Shows the
    # sequence makes the re-send happen; for vers=3 the lock never excluded B anyway.
    grep -q "verifier changed" "$work/shim.log" || fail "control: no re-send at A's close: the case is not made"
    [ "$got1" != "$want" ] || fail "control: f1 kept B's bytes though A's close re-sent"
    ganesha_stop "$work/state"
    pass "control: vers=3 (kernel-local locks): nothing committed at unlock, A's close re-sent over B's bytes"
  else
    [ "$got1" = "$want" ] || fail "f1 (F_UNLCK): the export has '${got1:0:16}...', not B's bytes: A's unlock did not COMMIT and its close re-sent its data over B's"
    # (f2 passed on the old code too: the RELEASE that follows that FLUSH commits; only the
    # short window between the two was open, which this sequence does not hit.)
    [ "$got2" = "$want" ] || fail "f2 (locks dropped by closing a read-only descriptor): the export has '${got2:0:16}...', not B's bytes: that unlock did not COMMIT"
    grep -q "verifier changed" "$work/shim.log" && fail "A's daemon re-sent data after the restart: it was not committed at the unlock"
    ganesha_stop "$work/state"
    pass "data written under a lock is committed at the unlock: another client's later write stays ($engine)"
  fi
  ;;
idmap)
  ghost=4321  # an id with no passwd or group entry here
  getent passwd $ghost >/dev/null || getent group $ghost >/dev/null && fail "uid/gid $ghost has a name here"
  mkdir -p "$work/export/d" "$work/export/big"
  chown 1:1 "$work/export/d" && chmod 0755 "$work/export/d"
  touch "$work/export/ghost" && chown $ghost:$ghost "$work/export/ghost"
  for i in $(seq 1500); do : > "$work/export/big/entry-$i"; done
  GANESHA_ID_MAPPING=1 ganesha_start "$work/state" "$work/export" "$port" "$mnt_port" VFS || fail "ganesha"
  chmod 755 "$work"  # the mount point is reached by uid 1
  mount_nfs "&nconnect=2"
  owner() { stat -c %u:%g "$1"; }
  touch "$mnt/r" || fail "touch as root"
  [ "$(owner "$mnt/r")" = 0:0 ] || fail "root's new file shows as $(owner "$mnt/r")"
  [ "$(owner "$mnt/d")" = 1:1 ] || fail "uid 1's directory shows as $(owner "$mnt/d")"
  out=$(setpriv --reuid=1 --regid=1 --clear-groups touch "$mnt/d/x" 2>&1) ||
    fail "uid 1 cannot create in its own directory: $out"
  [ "$(owner "$mnt/d/x")" = 1:1 ] || fail "uid 1's new file shows as $(owner "$mnt/d/x")"
  [ "$(owner "$work/export/d/x")" = 1:1 ] || fail "uid 1's new file is $(owner "$work/export/d/x") on the export"
  # ganesha sends the number for an id without a name; the kernel client shows that number.
  [ "$(owner "$mnt/ghost")" = $ghost:$ghost ] || fail "a nameless id shows as $(owner "$mnt/ghost")"
  # SETATTR carries numeric owner strings; a server with ID mapping takes them
  # (Allow_Numeric_Owners, RFC 7530 5.9 for sec=sys).
  chown 1:1 "$mnt/r" || fail "chown through the mount"
  [ "$(owner "$work/export/r")" = 1:1 ] || fail "chown: the export has $(owner "$work/export/r")"
  [ "$(owner "$mnt/r")" = 1:1 ] || fail "chown: the mount shows $(owner "$mnt/r")"
  domain=$(sed -n 's/.*owners "name@\([^"]*\)" map to local users.*/\1/p' "$work/shim.log" | head -1)
  [ -n "$domain" ] || fail "no name@domain owner came from the server (is ID mapping on?)"
  # Our NFSv4 domain is nfsidmap's (the kernel client's and ganesha's here).
  if command -v nfsidmap >/dev/null; then
    [ "$domain" = "$(nfsidmap -d)" ] || fail "our NFSv4 domain '$domain', nfsidmap's '$(nfsidmap -d)'"
  fi
  echo "ok: owners: root 0:0, uid 1 creates in its 0755 directory (1:1), nameless $ghost:$ghost, chown lands"
  # "." and ".." first, once each.
  dots() {  # DIR COUNT: ls -f (directory order, all names) of DIR, COUNT names besides the dots
    local got
    got=$(ls -f "$1") || fail "ls -f $1"
    [ "$(head -2 <<<"$got" | tr '\n' ' ')" = ". .. " ] || fail "$1: does not start with . and ..: $(head -3 <<<"$got" | tr '\n' ' ')"
    [ "$(grep -cx '\.' <<<"$got")" = 1 ] && [ "$(grep -cx '\.\.' <<<"$got")" = 1 ] || fail "$1: dots more than once"
    [ "$(wc -l <<<"$got")" = $(($2 + 2)) ] || fail "$1: $(wc -l <<<"$got") names, $(($2 + 2)) expected"
    [ -z "$(sort <<<"$got" | uniq -d)" ] || fail "$1: repeated: $(sort <<<"$got" | uniq -d | head -3)"
    [ "$(ls -fi "$1" | head -1 | awk '{print $1}')" = "$(stat -c %i "$1")" ] || fail "$1: '.' has another inode"
  }
  dots "$mnt/d" 1
  dots "$mnt/big" 1500
  ls -f "$mnt" | grep -q graveyard && fail "the graveyard is listed"
  ls -a "$mnt" | grep -qx '\.\.' || fail "the root lists no .."
  echo "ok: ls -f lists . and .. first, once each (1 entry, 1500 entries, the root without the graveyard)"
  unmount_nfs
  # A server in another NFSv4 domain: its names are no local users here.
  printf '[General]\nDomain = elsewhere.test\n' > "$work/idmapd-elsewhere.conf"
  ganesha_stop "$work/state"
  GANESHA_ID_MAPPING=1 GANESHA_IDMAP_CONF=$work/idmapd-elsewhere.conf \
    ganesha_start "$work/state" "$work/export" "$port" "$mnt_port" VFS || fail "ganesha (other domain)"
  mount_nfs "&nconnect=1"
  [ "$(owner "$mnt/d")" = 65534:65534 ] || fail "other domain: uid 1's directory shows as $(owner "$mnt/d")"
  [ "$(owner "$mnt/ghost")" = $ghost:$ghost ] || fail "other domain: a nameless id shows as $(owner "$mnt/ghost")"
  ls -ln "$mnt" "$mnt/d" >/dev/null || fail "other domain: ls"
  unmount_nfs
  n=$(grep -c "owner 'daemon@elsewhere.test' from the server is no local user" "$work/shim.log")
  [ "$n" = 1 ] || fail "the unmapped owner is named $n times in the log, once expected"
  echo "ok: another domain: nobody, logged: $(grep -o "owner 'daemon@elsewhere.test'.*" "$work/shim.log" | head -1)"
  pass "owners name@domain map to local ids; . and .. listed ($engine)"
  ;;
readdir-churn)
  stable=3000 rounds=40
  mkdir -p "$work/export/d"
  for i in $(seq $stable); do : > "$work/export/d/stable-$i"; done
  ganesha_start "$work/state" "$work/export" "$port" "$mnt_port" VFS || fail "ganesha"
  mount_nfs "&nconnect=2"
  # Churn on the export side (ganesha sees it through its VFS FSAL): names come and go
  # while READDIR walks the directory.
  python3 - "$work/export/d" "$work/stop-churn" <<'PY' &
import os, sys, time
d, stop = sys.argv[1], sys.argv[2]
n = 0
while not os.path.exists(stop):
    open(os.path.join(d, "churn_%d" % (n % 400)), "w").close()
    if n >= 200:
        try: os.unlink(os.path.join(d, "churn_%d" % ((n - 200) % 400)))
        except FileNotFoundError: pass
    n += 1
    time.sleep(0.001)  # about 1000 changes a second: steady, not a flood ganesha drowns in
PY
  churn=$!
  bad=0
  for r in $(seq $rounds); do
    if ! ls -f "$mnt/d" > "$work/ls.out" 2> "$work/ls.err"; then
      bad=$((bad + 1)); echo "round $r: $(head -1 "$work/ls.err")"; continue
    fi
    got=$(grep -c '^stable-' "$work/ls.out")
    [ "$got" = $stable ] ||
      { bad=$((bad + 1)); echo "round $r: $got of $stable stable names: $(head -4 "$work/ls.out" | tr '\n' ' ')"; }
    [ -z "$(sort "$work/ls.out" | uniq -d)" ] || { bad=$((bad + 1)); echo "round $r: names repeated"; }
  done
  touch "$work/stop-churn"
  wait $churn
  [ $bad = 0 ] || fail "$bad of $rounds listings under churn failed or missed names ($engine)"
  grep -q "$engine" "$work/shim.log" || fail "not served by the $engine"
  unmount_nfs
  pass "$rounds listings of $stable names under churn on the export, all whole ($engine)"
  ;;
lock-two-opens)
  ganesha_start "$work/state" "$work/export" "$port" "$mnt_port" VFS || fail "ganesha"
  bad=0
  n=0
  # Each case on a mount of its own; a case with no answer in 20 s is recorded and its
  # daemon killed (a process in a FUSE lock call may not even die of SIGKILL until then).
  # CASE: f1 (lock/write/unlock f1 first) or -, rdonly (a second O_RDONLY fd of f2) or -,
  # setlk or setlkw; via-ro: the write lock through the O_RDONLY descriptor (EBADF).
  for f1 in f1 -; do for ro in rdonly -; do for cmd in setlk setlkw; do
    n=$((n + 1))
    case_=" $f1 $ro $cmd"
    start=$SECONDS
    mount_nfs "&nconnect=1"
    python3 - "$mnt" "$n" $f1 $ro $cmd > "$work/case.out" 2>&1 <<'PY' &
import errno, fcntl, os, struct, sys
mnt, n, f1, ro, cmd = sys.argv[1:]
op = fcntl.F_SETLKW if cmd == "setlkw" else fcntl.F_SETLK
def lk(fd, t):
    fcntl.fcntl(fd, op, struct.pack("hhqqi", t, 0, 0, 0, 0))
if f1 == "f1":
    a = os.open(os.path.join(mnt, "a%s" % n), os.O_RDWR | os.O_CREAT, 0o644)
    lk(a, fcntl.F_WRLCK)
    os.pwrite(a, b"x" * 10, 0)
    lk(a, fcntl.F_UNLCK)
path = os.path.join(mnt, "b%s" % n)
w = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
r = os.open(path, os.O_RDONLY) if ro == "rdonly" else None
try:
    lk(w, fcntl.F_WRLCK)
except OSError as e:
    print("refused", errno.errorcode[e.errno]); sys.exit(1)
os.pwrite(w, b"y" * 10, 0)
lk(w, fcntl.F_UNLCK)
if r is not None:
    try:
        lk(r, fcntl.F_WRLCK)
        print("granted through O_RDONLY"); sys.exit(1)
    except OSError as e:
        if e.errno != errno.EBADF: print("O_RDONLY:", errno.errorcode[e.errno]); sys.exit(1)
print("granted")
PY
    app=$!
    for _ in $(seq 200); do kill -0 $app 2>/dev/null || break; sleep 0.1; done
    if kill -0 $app 2>/dev/null; then
      fusermount3 -u -z "$mnt"; kill -9 "$shim_pid"; wait "$shim_pid" 2>/dev/null; shim_pid=
      wait $app
      out="no answer in 20 s"
    else
      wait $app
      out=$(cat "$work/case.out")
      unmount_nfs
    fi
    echo "case$case_: $out ($((SECONDS - start)) s)"
    [ "$out" = granted ] || bad=$((bad + 1))
  done; done; done
  [ $bad = 0 ] || fail "$bad of $n cases of one process with two opens not granted ($engine)"
  grep -q "$engine" "$work/shim.log" || fail "not served by the $engine"
  pass "$n cases of one process locking through two opens: granted, EBADF through O_RDONLY ($engine)"
  ;;
lock-late-release)
  ganesha_start "$work/state" "$work/export" "$port" "$mnt_port" VFS || fail "ganesha"
  mount_nfs "&nconnect=1"
  timeout 60 python3 - "$mnt/f" "$build/tests/engine/lock_probe" > "$work/case.out" 2>&1 <<'PY'
import fcntl, os, struct, subprocess, sys, time
path, probe = sys.argv[1:]
def lk(fd, t):
    fcntl.fcntl(fd, fcntl.F_SETLK, struct.pack("hhqqi", t, 0, 0, 100, 0))
def other():  # another process's F_SETLK of [0, 100): "busy" while this one holds it
    return subprocess.run([probe, "try", path], capture_output=True, text=True).stdout.strip()
a = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
b = os.open(path, os.O_RDWR)
lk(a, fcntl.F_WRLCK)
r, w = os.pipe()
child = os.fork()
if child == 0:  # keeps a open until the pipe closes
    os.close(w); os.read(r, 1); os._exit(0)
os.close(r)
os.close(a)  # the process's locks on the file go; a stays open in the child: no RELEASE
lk(b, fcntl.F_WRLCK)
before = other()
os.close(w); os.waitpid(child, 0)  # the child's exit releases a's open
time.sleep(1)  # the RELEASE is asynchronous
print(before, other())
PY
  out=$(cat "$work/case.out")
  echo "another process's F_SETLK before and after a's release: $out"
  [ "$out" = "busy busy" ] || fail "the lock held through b was not kept: $out ($engine)"
  grep -q "$engine" "$work/shim.log" || fail "not served by the $engine"
  unmount_nfs
  pass "a lock taken again through a second descriptor outlives the late release of the first ($engine)"
  ;;
held-unlink-perm)
  # The server judges an unlink of a held file as it judges a plain one: the kernel checks
  # only the modes it cached (default_permissions; 30 s here), the server its own, newer ones
  # (or ACLs).
  ganesha_start "$work/state" "$work/export" "$port" "$mnt_port" VFS || fail "ganesha"
  mkdir "$work/export/d" "$work/export/s" && chmod 0777 "$work/export/d" "$work/export/s"
  for f in held plain; do echo secret > "$work/export/d/$f"; chown 65534 "$work/export/d/$f"; done
  for f in held plain; do echo secret > "$work/export/s/$f"; done  # root's, in s
  echo secret > "$work/export/s/mine" && chown 65534 "$work/export/s/mine"
  chmod 755 "$work"  # the mount point is reached by uid 65534
  shim_opts="attr_timeout=30,entry_timeout=30" mount_nfs "&nconnect=1"
  ls -l "$mnt/d" "$mnt/s" > /dev/null || fail "ls of the mount"
  chmod 0755 "$work/export/d"  # root's directory now: the server refuses uid 65534's removes
  chmod 1777 "$work/export/s"  # sticky now: only the owner (root) may remove root's files
  cases() {  # DIR: uid 65534's unlink of plain, of held (open), the holder's read
    setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 - "$1" <<'PY'
import errno, os, sys
d = sys.argv[1]
def unlink(name):
    try:
        os.unlink(os.path.join(d, name))
        return "ok"
    except OSError as e:
        return errno.errorcode[e.errno]
fd = os.open(os.path.join(d, "held"), os.O_RDONLY)
print(unlink("plain"), unlink("held"), os.pread(fd, 6, 0).decode())
os.close(fd)
PY
  }
  out=$(cases "$mnt/d" 2>&1)
  echo "uid 65534's unlink of a plain file, of a held file, the holder's read: $out"
  [ "$out" = "EACCES EACCES secret" ] || fail "the held file's unlink is not judged as the plain one's: $out ($engine)"
  out=$(cases "$mnt/s" 2>&1)
  echo "the same in a directory made sticky: $out"
  set -- $out
  [ "$1" != ok ] && [ "$2" = "$1" ] && [ "$3" = secret ] ||
    fail "in a sticky directory the held file's unlink is not judged as the plain one's: $out ($engine)"
  # Its own file there: the unlink works and the holder reads on.
  setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 - "$mnt/s/mine" <<'PY' ||
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.unlink(sys.argv[1])
assert not os.path.exists(sys.argv[1]), "the name is still there"
assert os.pread(fd, 6, 0) == b"secret", "the holder lost the data"
os.close(fd)
PY
    fail "uid 65534's unlink of its own held file in the sticky directory ($engine)"
  sleep 0.2  # the RELEASE comes after close(2) returns
  unmount_nfs
  [ "$(ls "$work/export/d" | tr '\n' ' ')" = "held plain " ] || fail "names on the export: $(ls "$work/export/d")"
  [ "$(ls "$work/export/s" | tr '\n' ' ')" = "held plain " ] || fail "names on the export: $(ls "$work/export/s")"
  left=$(ls -A "$work/export/.graveyard.nfsshim/u$(id -u)" 2>/dev/null)
  [ -z "$left" ] || fail "graveyard not empty: $left"
  grep -q "$engine" "$work/shim.log" || fail "not served by the $engine"
  pass "an unlink of a held file the server forbids fails EACCES, as the plain one ($engine)"
  ;;
term-dead-server)
  [ "$vers" = 4.1 ] || fail "term-dead-server is for vers=4.1 (the v4.1 engine's lease renewal)"
  ganesha_start "$work/state" "$work/export" "$port" "$mnt_port" VFS || fail "ganesha"
  mount_nfs "&timeo=10"
  ls "$mnt" > /dev/null || fail "ls of the mount"
  ganesha_crash "$work/state"
  # ganesha's lease is 60 s: the renewal is due after 20 s idle, then times out after 1 s.
  for _ in $(seq 400); do grep -q "not responding" "$work/shim.log" && break; sleep 0.1; done
  grep -q "not responding" "$work/shim.log" || fail "no call waited for the dead server: the case is not made"
  kill -TERM "$shim_pid"
  start=$SECONDS
  for _ in $(seq 100); do kill -0 "$shim_pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$shim_pid" 2>/dev/null; then
    fusermount3 -u -z "$mnt"; kill -9 "$shim_pid"; wait "$shim_pid" 2>/dev/null; shim_pid=
    fail "the daemon still runs 10 s after SIGTERM, its server dead ($engine)"
  fi
  wait "$shim_pid" || fail "daemon exit status $? after SIGTERM"
  shim_pid=
  grep -q "$engine" "$work/shim.log" || fail "not served by the $engine"
  pass "SIGTERM with the server dead: the daemon ended after $((SECONDS - start)) s ($engine)"
  ;;
*) echo "unknown mode $mode" >&2; exit 2 ;;
esac
