// The direct NFSv3 engine: a pool of nconnect libnfs contexts (one TCP connection each),
// driven by loop threads (event_loop.h). Requests go to the least-loaded connection; big
// reads and writes are split into rsize/wsize pieces issued in parallel; a lost connection
// is re-established and its requests re-sent; in-flight requests and bytes are bounded.
//
// Threading: every public member may be called from any thread; calls block the caller
// until the reply (or a final error). Errors are -errno (nfs3_errno.h for NFS statuses;
// transport failures and soft timeouts give -EIO).
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "nfsshim/nfs/unstable_limit.h"
#include "nfsshim/nfs/url.h"

struct rpc_context;

namespace nfsshim::nfs {

// AUTH_SYS identity of one request (the FUSE caller's, or fixed by uid=/gid= in the URL).
struct Cred {
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::vector<uint32_t> groups;  // at most 16 are sent (AUTH_SYS limit)
  bool operator==(const Cred& o) const { return uid == o.uid && gid == o.gid && groups == o.groups; }
  bool operator!=(const Cred& o) const { return !(*this == o); }
};

// An NFSv3 file handle (opaque, up to 64 bytes).
struct Fh {
  std::string data;
  bool operator==(const Fh& o) const { return data == o.data; }
  bool empty() const { return data.empty(); }
};

struct Attr {
  int type = 0;  // NF3REG.. (ftype3)
  uint32_t mode = 0;  // permission bits only (type is separate)
  uint32_t nlink = 0, uid = 0, gid = 0;
  uint64_t size = 0, used = 0, fsid = 0, fileid = 0;
  uint32_t rdev_major = 0, rdev_minor = 0;
  struct timespec atime {}, mtime{}, ctime{};
  mode_t st_mode() const;  // type | permission bits, as stat(2)
  // An empty regular file owned by UID: what an O_EXCL create leaves when the server died
  // after making the file and before storing the create's verifier (both engines).
  bool lost_exclusive_create_of(uint32_t uid) const;
  // Its ctime is not before SINCE (less a second for the server's clock): made or changed
  // after a call sent at SINCE, not an object of before that the re-send's EEXIST met.
  bool changed_since(const struct timespec& since) const;
  static struct timespec now();  // the wall clock, for changed_since
};

struct SetAttr {
  bool set_mode = false, set_uid = false, set_gid = false, set_size = false;
  uint32_t mode = 0, uid = 0, gid = 0;
  uint64_t size = 0;
  enum class Time { kKeep, kServerNow, kClient } atime = Time::kKeep, mtime = Time::kKeep;
  struct timespec atime_val {}, mtime_val{};
};

struct DirEntry {
  std::string name;
  uint64_t fileid = 0;
  uint64_t cookie = 0;
  bool has_attr = false, has_fh = false;
  Attr attr;
  Fh fh;
};

// A listing longer than this is a server that never says eof (about 400 MiB of entries; a
// Kafka log directory holds thousands): EIO, not all of the daemon's memory. A reply whose
// last cookie is the one asked for makes no progress and is EIO too.
constexpr size_t kMaxDirEntries = size_t{1} << 22;

// A listing the server fails part-way because the directory changed under it goes on
// instead of failing getdents, as the kernel's client does. A cookie the server no longer
// takes (BAD_COOKIE, NOT_SAME, a stale cookie's INVAL: -EINVAL past cookie 0) starts it
// again from cookie 0, the new listing replacing the partial one. An entry removed mid-scan
// (ganesha fails the whole READDIR with ESTALE/ENOENT) while the directory itself is still
// there asks again at the same cookie (ganesha drops the stale entry meanwhile; from 0,
// every chunk would have to come through in one pass while names keep going: under steady
// churn that never happened); a second failure there starts from 0. This goes on for
// kReaddirRestartMs after the first READDIR (at least kReaddirMinRestarts times, for a
// directory one pass over which takes longer).
constexpr int kReaddirRestartMs = 5000;
constexpr int kReaddirMinRestarts = 3;
class ReaddirRestarts {
 public:
  enum Next { kFail, kSameCookie, kFromStart };
  ReaddirRestarts();
  // What follows a READDIR at COOKIE that failed with *ERR; DIR_STATUS (a GETATTR of the
  // directory: 0 or -errno) is asked only for ESTALE/ENOENT. On kFail *ERR is what the
  // listing ends with: ENOENT or ESTALE only if the directory itself is gone, EIO when the
  // entries kept vanishing (glibc's readdir takes ENOENT for the end of the directory, and
  // `ls` would print nothing and exit 0). WHAT names the listing in the log.
  Next after(int* err, uint64_t cookie, const std::function<int()>& dir_status, const char* what);

 private:
  int64_t start_ms_;
  int n_ = 0;
  bool again_at_ = false;  // the last failure was answered by asking again at its cookie
  uint64_t again_cookie_ = 0;
};

struct FsStat {
  uint64_t tbytes = 0, fbytes = 0, abytes = 0, tfiles = 0, ffiles = 0, afiles = 0;
};

using WriteVerf = uint64_t;
// stable_how of WRITE (RFC 1813), without including libnfs's headers here.
constexpr int kUnstable = 0;
constexpr int kFileSync = 2;

struct EngineStats {
  uint64_t calls = 0;         // RPCs completed (any result)
  uint64_t retries = 0;       // RPCs re-sent after a lost connection or a timeout
  uint64_t reconnects = 0;    // connections re-established
  uint64_t timeouts = 0;      // requests that passed timeo
  uint64_t jukebox = 0;       // NFS3ERR_JUKEBOX answers waited out and asked again
  uint64_t resent_done = 0;   // re-sent REMOVE/RMDIR/RENAME answered ENOENT or ESTALE: done by the first send
  uint64_t resent_stale = 0;  // of those (and of resent_exist), answered ESTALE: raced their first send
  uint64_t resent_exist = 0;  // re-sent MKDIR/SYMLINK/LINK answered EEXIST for what its first send made
  uint64_t loop_syscalls = 0; // syscalls made by the event loops themselves
  uint64_t loop_iterations = 0;
  std::vector<uint64_t> calls_per_conn;
  int peak_conn_load = 0;          // most requests queued+in flight on one connection (submits)
  uint64_t peak_inflight_bytes = 0;  // most payload bytes in flight at once
};

class Connection;
class LoopThread;
struct Call;

class Engine {
 public:
  // Mounts URL's export (MOUNT3), connects nconnect connections and reads FSINFO. On
  // failure returns -errno with *why naming the problem (server, port, export, version).
  static int open(const NfsUrl& url, std::unique_ptr<Engine>* out, std::string* why);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  const Fh& root() const { return root_; }
  const NfsUrl& url() const { return url_; }
  uint32_t rsize() const { return rsize_; }
  uint32_t wsize() const { return wsize_; }
  IoBackend backend() const { return backend_; }
  // The identity used when the caller has none (URL uid/gid, else our own).
  Cred default_cred() const;
  EngineStats stats() const;
  // Bumped at every reconnect of a connection (before any request goes out on it): a server
  // that restarted (and may have lost UNSTABLE writes) is only reached again that way, so
  // data written before the last bump may be gone until a COMMIT has checked it
  // (UnstableWriter::kept_before_restart). A mere dropped connection bumps it too.
  uint64_t restart_generation() const { return restart_gen_.load(); }

  int null_call();
  int getattr(const Cred& c, const Fh& fh, Attr* out);
  int setattr(const Cred& c, const Fh& fh, const SetAttr& sa, Attr* post);
  int lookup(const Cred& c, const Fh& dir, const std::string& name, Fh* out, Attr* attr);
  int access(const Cred& c, const Fh& fh, uint32_t want, uint32_t* granted);
  // Reads up to LEN bytes at OFF into BUF (split into rsize pieces in parallel). Returns the
  // bytes read (short only at end of file) or -errno. A piece that fails fails the whole
  // read: a FUSE read answered short is taken for end of file (the kernel cuts the file's
  // size there), so bytes before the failure are not returned alone.
  ssize_t read(const Cred& c, const Fh& fh, uint64_t off, size_t len, char* buf);
  // Writes LEN bytes (split into wsize pieces in parallel) with STABLE (0 UNSTABLE,
  // 2 FILE_SYNC). VERFS, if given, receives each piece's (offset, length, verifier).
  struct PieceVerf {
    uint64_t off;
    uint32_t len;
    WriteVerf verf;
    // The reply said FILE_SYNC: data and metadata are on stable storage already, nothing to
    // COMMIT or keep for a re-send. DATA_SYNC still needs a COMMIT (the size may not be
    // stable), as in the kernel client's nfs_write_need_commit() without pNFS.
    bool stable = false;
  };
  ssize_t write(const Cred& c, const Fh& fh, uint64_t off, size_t len, const char* buf, int stable,
                std::vector<PieceVerf>* verfs);
  int commit(const Cred& c, const Fh& fh, WriteVerf* verf);
  // EXCLUSIVE is O_EXCL (GUARDED create). TRUNCATE (O_TRUNC): size 0 goes with an
  // UNCHECKED create, so that a file of that name made meanwhile is truncated.
  int create(const Cred& c, const Fh& dir, const std::string& name, uint32_t mode, bool exclusive,
             Fh* out, Attr* attr, bool truncate = false);
  int mkdir(const Cred& c, const Fh& dir, const std::string& name, uint32_t mode, Fh* out, Attr* attr);
  int symlink(const Cred& c, const Fh& dir, const std::string& name, const std::string& target,
              Fh* out, Attr* attr);
  int readlink(const Cred& c, const Fh& fh, std::string* target);
  int link(const Cred& c, const Fh& fh, const Fh& dir, const std::string& name);
  int remove(const Cred& c, const Fh& dir, const std::string& name);
  int rmdir(const Cred& c, const Fh& dir, const std::string& name);
  int rename(const Cred& c, const Fh& from_dir, const std::string& from, const Fh& to_dir,
             const std::string& to);
  // Test hook: the next non-idempotent call goes to the server twice at once, as a lost
  // connection can make it (the first send still running when the re-send arrives): a twin
  // whose reply is dropped, then the call, which counts as re-sent.
  void send_next_twice_for_test() { twice_next_.store(true); }
  // Test hook: the next call counts as re-sent after a lost connection (its first send
  // may have run), without a second send.
  void count_next_as_resent_for_test() { resent_next_.store(true); }
  // Test hook: every READ piece from OFF on fails with ERR (as a server that went away
  // in the middle of a read on a soft mount) until called with OFF = UINT64_MAX.
  void fail_reads_from_for_test(uint64_t off, int err) {
    fail_read_err_.store(err);
    fail_read_at_.store(off);
  }
  // Test hook: every READ piece from OFF on is taken as answered with no bytes and no eof
  // (a broken server) until called with OFF = UINT64_MAX.
  void empty_reads_from_for_test(uint64_t off) { empty_read_at_.store(off); }
  // The whole directory (READDIRPLUS until eof), "." and ".." included as the server sends them.
  int readdirplus(const Cred& c, const Fh& dir, std::vector<DirEntry>* out);
  int fsstat(const Cred& c, const Fh& fh, FsStat* out);

  // Core (used by the ops above and by tests): queues CALL on the least-loaded connection,
  // blocking while the in-flight limits are reached. CALL->done runs on a loop thread.
  void submit(Call* call);

 private:
  friend class Connection;
  friend class LoopThread;
  Engine() = default;
  int start(std::string* why);
  int mount(std::string* why);
  // Runs one RPC synchronously: ISSUE queues it on a context, ON_REPLY decodes the reply
  // (on the loop thread) and returns 0 or -errno.
  // NFS3ERR_JUKEBOX (the server is busy with the file: a conflicting NFSv4 share or lock,
  // its grace period, too many open files) is waited out and asked again, as the kernel
  // client does; a soft mount gives -EIO once timeo x (retrans + 1) has passed.
  // *RESENT (if given): the call was sent more than once (its first reply was lost; a
  // restarted server, or ganesha on a new connection, has no reply cache to answer the
  // re-send, which then runs again: see resent_noent and exist_after_resend).
  int run(const Cred& c, const char* what, size_t bytes, bool idempotent,
          const std::function<int(rpc_context*, void (*)(rpc_context*, int, void*, void*), void*)>& issue,
          const std::function<int(void*)>& on_reply, bool* resent = nullptr);
  // RV of a REMOVE/RMDIR/RENAME of NAME in DIR: from a re-sent call (RESENT), -ENOENT is its
  // first send's success: 0. So is -ESTALE when NAME is now gone from DIR: ganesha answers a
  // re-send that reaches it while the first send is still being carried out (the connection
  // died under it) ESTALE, having found NAME in its cache and its object removed.
  int resent_noent(const Cred& c, int rv, bool resent, const char* what, const Fh& dir,
                   const std::string& name);
  // RV of a MKDIR/SYMLINK/LINK/O_EXCL CREATE of NAME: re-sent after a lost reply (RESENT) it
  // answers EEXIST (or ESTALE, racing the first send) when its first send made NAME. MADE
  // says whether what NAME is now is that (a directory; a symlink to the same target; the
  // same file; an empty file of the caller's): then 0 (OUT and ATTR filled), else RV.
  int exist_after_resend(const Cred& c, int rv, bool resent, const char* what, const Fh& dir,
                         const std::string& name, const std::function<bool(const Fh&, const Attr&)>& made,
                         Fh* out, Attr* attr);
  // NFS3ERR_JUKEBOX: pauses (backoff) before the call is asked again; false when a soft
  // mount's time is up (the caller returns -EIO).
  struct Jukebox {
    std::chrono::steady_clock::time_point since = std::chrono::steady_clock::now();
    int pause_ms = 50;
  };
  bool jukebox_wait(const char* what, Jukebox* jb);
  // One round of run(): -EAGAIN is NFS3ERR_JUKEBOX. *RESENT in: an earlier round was sent
  // more than once; out: so was this one, or an earlier one.
  int run_once(const Cred& c, const char* what, size_t bytes, bool idempotent,
               const std::function<int(rpc_context*, void (*)(rpc_context*, int, void*, void*), void*)>& issue,
               const std::function<int(void*)>& on_reply, bool* resent);
  // Loop side: a call finished (ERR 0 and RES the decoded reply, or -errno final).
  void finish(Call* call, int err, void* res);
  // Loop side: CALL's connection failed; send it again elsewhere (or fail it, soft mounts).
  void resend(Call* call, Connection* from, const char* why);
  Connection* pick_locked();
  ssize_t read_pieces(const Cred& c, const Fh& fh, uint64_t off, size_t len, char* buf, bool* eof);

  NfsUrl url_;
  // url_.host resolved once at open (numeric): every connect and reconnect uses it, so
  // none waits on DNS on a loop thread that serves other connections too.
  std::string addr_;
  Fh root_;
  uint32_t rsize_ = 0, wsize_ = 0;
  IoBackend backend_ = IoBackend::kEpoll;
  std::vector<std::unique_ptr<LoopThread>> loops_;
  std::vector<std::unique_ptr<Connection>> conns_;

  std::mutex mu_;  // engine_mu_0: guards load, inflight bytes; leaf (never held while calling out)
  std::condition_variable cv_;  // slots or bytes freed
  size_t inflight_bytes_ = 0;
  size_t rr_ = 0;  // round-robin start among equally loaded connections
  int peak_conn_load_ = 0;
  size_t peak_inflight_bytes_ = 0;
  size_t max_bytes_ = 0;
  int slots_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> calls_{0}, retries_{0}, timeouts_{0}, jukebox_{0}, resent_done_{0},
      resent_exist_{0}, resent_stale_{0};
  std::atomic<uint64_t> restart_gen_{0};  // restart_generation()
  std::atomic<bool> twice_next_{false};  // send_next_twice_for_test
  std::atomic<bool> resent_next_{false};  // count_next_as_resent_for_test
  std::atomic<uint64_t> fail_read_at_{UINT64_MAX};  // fail_reads_from_for_test
  std::atomic<int> fail_read_err_{0};
  std::atomic<uint64_t> empty_read_at_{UINT64_MAX};  // empty_reads_from_for_test
};

// UNSTABLE writes of one file with COMMIT on demand (fsync/close) or when the retained data
// passes MAX_RETAINED. Like the kernel's page cache, the latest bytes of every range written
// since the last good COMMIT are kept (a newer write replaces the older bytes it overlaps);
// a COMMIT whose verifier differs from the one a range was written under (the server
// restarted) re-sends that range FILE_SYNC. Writes go on while a COMMIT is in flight (the
// server's flush of one batch overlaps the next batch's WRITEs), each taking the bytes it
// overwrites out of the batch being committed. A WRITE the server answers FILE_SYNC (it
// writes everything to stable storage at once, as NVRAM-backed filers can) is not kept, so
// such a server gets no COMMIT at all. Writes wait while a COMMIT re-sends, so a re-sent
// range is never older than what a caller wrote after it.
// The NFSv4.1 engine uses it too, through the two calls (same stable_how values).
class UnstableWriter {
 public:
  // One WRITE of [off, off+len) with stable_how STABLE; fills per-piece verifiers if asked.
  // OWNER keeps BUF alive and unchanged while it lives: an engine that can send the data
  // from BUF itself (v4.1) need not copy it.
  using WriteFn = std::function<ssize_t(const Cred&, uint64_t off, size_t len, const char* buf,
                                        int stable, std::vector<Engine::PieceVerf>* verfs,
                                        const std::shared_ptr<const void>& owner)>;
  using CommitFn = std::function<int(const Cred&, WriteVerf* verf)>;
  // The engine's restart generation (Engine::restart_generation; the NFSv4.1 engine's
  // client id generation): data written before it last changed may be lost on the server.
  using GenFn = std::function<uint64_t()>;
  // Per file. 16 MiB, not 64: the kept copies stay within the heap's reused memory
  // (heap_tuning.h); engine alone, 1 GiB, nconnect=4: client CPU 1.01-1.09 -> 0.78-0.86 s/GiB,
  // 1035-1148 -> 1180-1306 MiB/s, page faults 39k -> 25k (v3 and v4.1; 8 MiB gained little more).
  static constexpr size_t kMaxRetained = 16u << 20;
  // LIMIT (optional, outlives the writer): the mount-wide bound (unstable_limit.h).
  UnstableWriter(Engine& e, Fh fh, size_t max_retained = kMaxRetained, UnstableLimit* limit = nullptr);
  // GENERATION (optional): for kept_before_restart(); without it, never true.
  UnstableWriter(WriteFn write, CommitFn commit, size_t max_retained = kMaxRetained,
                 UnstableLimit* limit = nullptr, GenFn generation = nullptr);
  ~UnstableWriter();
  UnstableWriter(const UnstableWriter&) = delete;
  UnstableWriter& operator=(const UnstableWriter&) = delete;
  ssize_t write(const Cred& c, uint64_t off, const char* buf, size_t len);
  // The same with the copy already made (kept until COMMIT, WRITEs sent from it), and
  // STABLE kFileSync for a caller that wants it on stable storage now (O_SYNC): kept only
  // if the server answered less.
  ssize_t write(const Cred& c, uint64_t off, std::shared_ptr<const std::string> data,
                int stable = kUnstable);
  int commit(const Cred& c);
  // The same with the credentials of the last write (the limit's COMMITs: no caller).
  int commit_kept();
  uint64_t resent_bytes() const { return resent_bytes_.load(); }
  // Written and answered FILE_SYNC (never kept, never committed).
  uint64_t stable_bytes() const { return stable_bytes_.load(); }
  size_t retained_bytes();  // kept now, a COMMIT's in progress included
  // True if some of the data kept for COMMIT was written before the server's last restart
  // as the engine saw it (GenFn): the server may have lost it, and its size and data may
  // be older than what we wrote, until a COMMIT (which re-sends it) is done.
  bool kept_before_restart();
  // If kept_before_restart(), commits now with the last write's credentials: 1 committed
  // (the server has the data again), 0 nothing such kept, -errno (still kept).
  int commit_if_restarted();

 private:
  // LEN bytes at AT in BUF, written under VERF. BUF is one write()'s copy of its data,
  // shared by the pieces cut from it; the WRITEs were sent from it too.
  struct Piece {
    std::shared_ptr<const std::string> buf;
    size_t at;
    size_t len;
    WriteVerf verf;
    uint64_t gen = 0;  // the restart generation before its WRITE was sent
    const char* data() const { return buf->data() + at; }
    Piece slice(size_t from, size_t n) const;
  };
  static void cut(std::map<uint64_t, Piece>* m, size_t* bytes, uint64_t off, uint64_t end);
  void retain_locked(uint64_t off, Piece p);
  void forget_locked(uint64_t off, uint64_t end);
  int resend(const Cred& c);
  // Tells the limit what is kept (COMMITTED: after a COMMIT); true if the mount is over it.
  bool count_locked(bool committed = false);
  WriteFn write_;
  CommitFn commit_;
  size_t max_retained_;
  UnstableLimit* const limit_;
  std::mutex serial_mu_;         // writer_serial_mu_0: one COMMIT at a time
  std::shared_mutex commit_mu_;  // writer_commit_mu_1: writes shared, a re-send exclusive
  std::mutex mu_;                // writer_mu_2: the maps only; never held across an RPC
  std::map<uint64_t, Piece> retained_;  // by offset, non-overlapping
  size_t retained_bytes_ = 0;
  std::map<uint64_t, Piece> committing_;  // taken from retained_ by the COMMIT in progress;
                                          // the two never overlap
  size_t committing_bytes_ = 0;
  GenFn generation_;
  // The lowest Piece::gen in retained_ and in committing_ (UINT64_MAX: none); pieces cut
  // away since may have set it (errs towards one COMMIT more).
  uint64_t retained_gen_ = UINT64_MAX, committing_gen_ = UINT64_MAX;
  // Their minimum, for kept_before_restart()'s lock-free answer (every READ and GETATTR of
  // an open file asks); publish_gen_locked() keeps it.
  std::atomic<uint64_t> oldest_gen_{UINT64_MAX};
  void publish_gen_locked() { oldest_gen_.store(std::min(retained_gen_, committing_gen_), std::memory_order_release); }
  Cred last_cred_;               // of the last write, for commit_kept()
  std::atomic<uint64_t> resent_bytes_{0};
  std::atomic<uint64_t> stable_bytes_{0};
};

}  // namespace nfsshim::nfs
