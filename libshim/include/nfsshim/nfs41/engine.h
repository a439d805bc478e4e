// The NFSv4.1 session engine: nconnect TCP connections (transport.h; on min(nconnect,
// CPUs, 4) event-loop threads) bound to one session; SEQUENCE on every compound through one slot table
// shared by all connections; least-loaded connection per call; lease renewal when idle;
// recovery from DELAY/GRACE, lost connections (same slot and seqid replayed), dead
// sessions and expired client ids (new session / client id; after a server restart open
// files and byte-range locks reclaimed in its grace period, else files re-opened).
// Types and blocking calls mirror the NFSv3 engine (nfs/engine.h) so a front end can use
// either; what differs is that I/O goes through an Open (the v4 stateid).
//
// Threading: every public member may be called from any thread and blocks until the
// reply or a final error. Errors are -errno (nfs4/nfsstat4.h's table; a transport failure
// on a soft mount or a soft timeout gives -EIO).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "nfsshim/nfs/engine.h"
#include "nfsshim/nfs/url.h"
#include "nfsshim/nfs4/compound.h"
#include "nfsshim/nfs4/constants.h"
#include "nfsshim/nfs4/fattr4.h"
#include "nfsshim/nfs4/slot_table.h"
#include "nfsshim/nfs4/types.h"
#include "nfsshim/nfs41/transport.h"

namespace nfsshim::nfs41 {

using nfs::Attr;
using nfs::Cred;
using nfs::DirEntry;
using nfs::Fh;
using nfs::SetAttr;
using nfs::WriteVerf;

struct Options {
  std::string addr = "127.0.0.1";  // IPv4 address
  int port = 2049;
  std::string export_path = "/";   // path in the server's pseudo fs
  int nconnect = 1;                // 1..16 connections bound to the one session
  nfs::IoBackend io = nfs::IoBackend::kAuto;
  uint32_t slots = 180;            // fore-channel slots asked for; the grant is used
  uint32_t rsize = 1u << 20, wsize = 1u << 20;  // upper bounds; maxrequestsize lowers them
  bool hard = true;
  int timeout_ms = 60000;          // per request; soft: -EIO after (retrans + 1) of them
  int retrans = 2;
  uint32_t uid = 0, gid = 0;       // AUTH_SYS identity when the caller passes none
};
// vers=4.1 URL -> Options (host must be an IPv4 literal; port 2049 unless given).
int options_from_url(const nfs::NfsUrl& u, Options* out, std::string* why);

// An open file: the OPEN stateid, and what re-opening it after a lost client id needs.
struct OpenFile {
  Fh fh;
  Fh dir;            // CLAIM_NULL opens: where and by which name (empty for open_fh)
  std::string name;
  uint32_t access = 0;  // OPEN4_SHARE_ACCESS_READ / WRITE / BOTH
  uint32_t rflags = 0;
  bool preserve_unlinked = false;  // OPEN4_RESULT_PRESERVE_UNLINKED
  nfs4::Stateid4 stateid() const;

 private:
  friend class Engine;
  mutable std::mutex mu_;  // open_mu_2: leaf
  nfs4::Stateid4 stateid_;
  std::vector<uint8_t> owner_;
  // Who opened it: a reclaim or re-open (and its locks' reclaim) goes as the opener, who
  // may open it; the mount's identity may not (a 0600 file, root squashed by the server).
  Cred cred_;
};
using Open = std::shared_ptr<OpenFile>;

struct Stats {
  uint64_t calls = 0, retries = 0, delays = 0, replays = 0, timeouts = 0;
  uint64_t session_recoveries = 0, clientid_recoveries = 0, reopens = 0, renewals = 0;
  uint64_t reclaimed_opens = 0, reclaimed_locks = 0;  // CLAIM_PREVIOUS OPENs, LOCK ranges
  uint64_t reconnects = 0, binds_ok = 0, binds_failed = 0;
  uint32_t slots_granted = 0, peak_slots = 0, lease_s = 0;
  uint32_t maxrequest = 0, maxresponse = 0;
  uint64_t resent_bytes = 0;  // FILE_SYNC re-sends after a COMMIT verifier change
  uint64_t resent_done = 0;   // REMOVE/RENAME re-run in a new session answered ENOENT: done
  uint64_t resent_exist = 0;  // CREATE (dir, symlink)/LINK re-run answered EXIST for its own
  uint64_t loop_syscalls = 0, loop_iterations = 0;
  uint64_t read_placed_bytes = 0;  // READ data received straight into callers' buffers
  uint64_t read_ring_recvs = 0;    // of it, by io_uring recvs (one per READ reply's data)
  std::vector<uint64_t> calls_per_conn;
};

class Engine {
 public:
  static int open(const Options& o, std::unique_ptr<Engine>* out, std::string* why);
  ~Engine();  // shutdown() if not done yet
  // CLOSE of what is still open, DESTROY_SESSION, DESTROY_CLIENTID, connections closed.
  // 0, or the first error (-errno). Only the destructor may follow. Bounded on a dead
  // server: from its start every call (the renewal's, other threads' in flight) is soft
  // and ends at its next timeout (at most 5 s); after one that got no reply the rest are
  // not sent (-ETIMEDOUT).
  int shutdown();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  const Fh& root() const { return root_; }
  Cred default_cred() const;
  nfs::IoBackend backend() const;
  uint32_t rsize() const { return rsize_; }
  uint32_t wsize() const { return wsize_; }
  Stats stats() const;
  // Bumped at every new client id (a server restart, or a lost lease): UNSTABLE data
  // written before it may be lost on the server (nfs::UnstableWriter::GenFn).
  uint64_t restart_generation() const;

  int getattr(const Cred& c, const Fh& fh, Attr* out);
  int setattr(const Cred& c, const Fh& fh, const SetAttr& sa, Attr* post);
  int lookup(const Cred& c, const Fh& dir, const std::string& name, Fh* out, Attr* attr);
  // "a/b/c" from the export root.
  int lookup_path(const Cred& c, const std::string& path, Fh* out, Attr* attr);
  int access(const Cred& c, const Fh& fh, uint32_t want, uint32_t* granted);
  // OPEN (share ACCESS, deny none, no delegation). CREATE: UNCHECKED, or
  // create_exclusive() when EXCLUSIVE (access both). TRUNCATE (O_TRUNC): size 0 in an
  // UNCHECKED create's attributes, so that a file of that name made meanwhile is
  // truncated. Fills *attr if given.
  int open(const Cred& c, const Fh& dir, const std::string& name, bool create, bool exclusive,
           uint32_t mode, Open* out, Attr* attr,
           uint32_t access = nfs4::OPEN4_SHARE_ACCESS_BOTH, bool truncate = false);
  // An exclusive create (EXCLUSIVE4_1) of NAME with the caller's VERIFIER. Sent again with
  // the same verifier (a retry, also in a new session after a server restart) it opens the
  // file that call made; for a file made any other way it gives -EEXIST. open() with
  // EXCLUSIVE uses it with a verifier of its own; a server without EXCLUSIVE4_1 gets GUARDED.
  int create_exclusive(const Cred& c, const Fh& dir, const std::string& name, uint32_t mode,
                       uint64_t verifier, Open* out, Attr* attr);
  // OPEN of an existing file by handle (CLAIM_FH) with ACCESS = OPEN4_SHARE_ACCESS_READ,
  // WRITE or BOTH: what a FUSE open (which knows only the inode) needs.
  int open_fh(const Cred& c, const Fh& fh, uint32_t access, Open* out);
  int close(const Cred& c, const Open& f);
  bool preserves_unlinked(const Open& f) const { return f && f->preserve_unlinked; }

  ssize_t read(const Cred& c, const Open& f, uint64_t off, size_t len, char* buf);
  using PieceVerf = nfs::Engine::PieceVerf;
  // STABLE: 0 UNSTABLE, 1 DATA_SYNC, 2 FILE_SYNC. With an OWNER that keeps BUF alive (and
  // unchanged) the data goes to the socket from BUF itself, not copied into each request:
  // a call given up on (soft timeout) may still be sending it after write() returned.
  ssize_t write(const Cred& c, const Open& f, uint64_t off, size_t len, const char* buf,
                int stable, std::vector<PieceVerf>* verfs,
                const std::shared_ptr<const void>& owner = nullptr);
  int commit(const Cred& c, const Fh& fh, WriteVerf* verf);
  // UNSTABLE pieces, COMMIT, and FILE_SYNC re-send of every piece written under another
  // verifier than the COMMIT's (the server restarted in between).
  ssize_t write_committed(const Cred& c, const Open& f, uint64_t off, size_t len,
                          const char* buf);

  int mkdir(const Cred& c, const Fh& dir, const std::string& name, uint32_t mode, Fh* out,
            Attr* attr);
  int symlink(const Cred& c, const Fh& dir, const std::string& name, const std::string& target,
              Fh* out, Attr* attr);
  int readlink(const Cred& c, const Fh& fh, std::string* target);
  int link(const Cred& c, const Fh& fh, const Fh& dir, const std::string& name);
  // REMOVE and RENAME are not idempotent. A reply lost with its session (server restart)
  // means the call is run again as a new request, which answers NFS4ERR_NOENT if the
  // first run did it: then the call counts as done (Stats::resent_done), as the NFSv3
  // engine does for a re-sent REMOVE/RENAME. RENAME checks that TO exists first. Likewise
  // an EXIST from a re-run mkdir/symlink/link whose name is what the first run made
  // (Stats::resent_exist). Within one session the server's reply cache answers a replay correctly.
  int remove(const Cred& c, const Fh& dir, const std::string& name);
  int rmdir(const Cred& c, const Fh& dir, const std::string& name) { return remove(c, dir, name); }
  int rename(const Cred& c, const Fh& from_dir, const std::string& from, const Fh& to_dir,
             const std::string& to);
  // Entries with attributes and file handles (READDIR asks for both).
  int readdir(const Cred& c, const Fh& dir, std::vector<DirEntry>* out);
  int fsstat(const Cred& c, const Fh& fh, nfs::FsStat* out);

  // Test hooks.
  size_t conn_count() const { return conns_.size(); }
  void drop_connection_for_test(size_t i, bool on_next_call = false);
  // The next compound's reply is thrown away and a new session made, as if the server
  // had restarted after running it: the compound is run again in the new session. THEN
  // (if given) runs between the two, as a server's restart would come between.
  void lose_next_reply_for_test(std::function<void()> then = {}) {
    lost_reply_then_ = std::move(then);  // published by the store below
    lose_next_reply_.store(true);
  }
  int conn_local_port(size_t i) const;
  size_t conn_inflight(size_t i) const { return i < conns_.size() ? conns_[i]->inflight() : 0; }

  // A compound on the session: SEQUENCE, then BUILD's ops; DECODE reads their results
  // (after SEQUENCE). Retries and recovers as the header says; 0 or -errno. CACHETHIS
  // (the server keeps the reply for a replay after a lost connection) is off only for
  // READ/READDIR, whose replies are big and which are safe to re-run as new requests.
  // *RERUN (if given) is set when an attempt whose reply was lost was followed by a new
  // request (new session, or an uncached replay): the server may have run it twice.
  using Build = std::function<int(nfs4::Compound&)>;
  using Decode = std::function<int(nfs4::ReplyReader&)>;
  int run(const Cred& c, const Build& build, const Decode& decode, bool cachethis = true,
          bool* rerun = nullptr);

  // ---- Byte-range locks (lock.cc; RFC 8881 18.10-18.12) and recovery counters --------
  // OWNER is the caller's lock owner (FUSE's lock_owner): one NFSv4 lock-owner per owner
  // id on this engine, so one owner's locks never conflict with each other across Opens
  // of a file (POSIX). The first LOCK of an owner on a file goes with open_to_lock_owner4
  // from the Open's stateid, later ones with the lock stateid. LEN 0 means "to the end of
  // the file" (fcntl's l_len), here and in LockConflict. The engine keeps each owner's held
  // ranges; after a server restart (new client id) it reclaims them in the grace period
  // (RFC 8881 8.4.2: OPEN CLAIM_PREVIOUS, then LOCK reclaim, then RECLAIM_COMPLETE), and
  // they stay held. A lock the server refuses to reclaim (NFS4ERR_NO_GRACE: grace over or
  // a graceless server; RECLAIM_BAD/CONFLICT) or a client id lost without a restart
  // leaves the lock lost: the next lock op on that file gives -EIO once (logged with the
  // file's name), later ones start afresh.
  enum class LockType { kRead, kWrite };
  struct LockConflict {  // the holder's range (LOCK4denied)
    uint64_t off = 0, len = 0;
    LockType type = LockType::kWrite;
    bool ours = false;   // held by a lock-owner of this engine: OWNER is its id
    uint64_t owner = 0;
    std::vector<uint8_t> raw_owner;  // the server's lock_owner4 bytes
  };
  // WAIT_MS 0: a conflict fails at once with -EAGAIN (F_SETLK); > 0: retried with
  // backoff (20 ms doubling to 1 s) for up to that long, then -EAGAIN; < 0: until granted
  // (F_SETLKW). CANCEL (may be null) set by another thread ends the wait with -EINTR.
  int lock(const Cred& c, const Open& f, uint64_t owner, LockType type, uint64_t off,
           uint64_t len, int wait_ms, LockConflict* conflict = nullptr,
           const std::atomic<bool>* cancel = nullptr);
  // LOCKU; 0 when OWNER holds nothing on the file.
  int unlock(const Cred& c, const Open& f, uint64_t owner, uint64_t off, uint64_t len);
  // LOCKT: 0 (no conflict) or -EAGAIN with *CONFLICT filled (F_GETLK).
  int test_lock(const Cred& c, const Open& f, uint64_t owner, LockType type, uint64_t off,
                uint64_t len, LockConflict* conflict);
  // For each lock stateid taken through F (any owner): LOCKU of the whole file, then
  // FREE_STATEID (v4.1 has no RELEASE_LOCKOWNER). CLOSE fails with NFS4ERR_LOCKS_HELD
  // (-EBUSY) while lock state exists, so this comes first (shutdown() does it).
  int release_locks(const Cred& c, const Open& f);
  uint64_t grace_waits() const { return grace_waits_.load(); }  // NFS4ERR_GRACE answers
  uint64_t lock_waits() const { return lock_waits_.load(); }    // DENIED, retried later

 private:
  struct LockEntry;
  // The open-owner F was opened under (set once, at its OPEN).
  static const std::vector<uint8_t>& open_owner(const OpenFile& f) { return f.owner_; }
  int lock_state_lost(const Open& f);  // locks_mu_ held
  // Recovery (recovery_mu_ held, before RECLAIM_COMPLETE): LOCK reclaim of every range
  // held under client id generation FROM_GEN (the one the server knew before its restart)
  // whose Open is in RECLAIMED (re-opened with CLAIM_PREVIOUS); the others stay lost.
  // The reclaimed ones move to the new client id only in settle_locks() (after
  // RECLAIM_COMPLETE): a pass that the server's next restart cuts short leaves them for the
  // next pass to reclaim again.
  void reclaim_locks(const std::vector<Open>& reclaimed, uint64_t from_gen);
  void settle_locks(uint64_t gen);
  // E's lock state, if it holds nothing and was made through another Open than F, is
  // freed: the next LOCK makes a new lock-owner from F. locks_mu_ held.
  void leave_idle_parent(const Cred& c, const Open& f, LockEntry& e);
  // LOCKU of the whole file on lock stateid SID, then FREE_STATEID.
  int free_lock_state(const Cred& c, const Open& f, const nfs4::Stateid4& sid);
  // engine41_locks_mu_00: before recovery_mu_, opens_mu_ and mu_; held over one lock
  // compound (which may run a recovery), never over a blocking lock's pause.
  std::mutex locks_mu_;
  // engine41_lock_table_mu_3: leaf. Changes to locks_ and to an entry hold it (and
  // locks_mu_, except recovery's, which cannot take locks_mu_: a lock op holding it may be
  // waiting for the recovery); recovery reads and updates entries under it alone.
  mutable std::mutex lock_table_mu_;
  std::map<std::pair<std::string, uint64_t>, std::shared_ptr<LockEntry>> locks_;  // (fh, owner)
  std::atomic<uint64_t> grace_waits_{0}, lock_waits_{0}, reclaimed_locks_{0};
  // ---- end of byte-range locks ------------------------------------------------------

 private:
  struct Attempt;
  struct Step;
  Engine() = default;
  int start(std::string* why);
  int exchange_id(std::string* why);
  int create_session(std::string* why);
  int reclaim_complete();
  int read_lease_and_root(std::string* why);
  int bare(size_t conn, const Build& build, const Decode& decode, std::string* why);
  uint32_t next_xid() { return xid_.fetch_add(1); }
  rpc::Credential rpc_cred(const Cred& c) const;
  Conn* pick();
  CallPtr make_bind();
  int check_bind(const rpc::Record& reply);

  int begin(const Cred& c, const Build& build, bool cachethis, Attempt* a, bool wait,
            const std::shared_ptr<ReadSink>& sink = nullptr);
  // RC of a REMOVE/RENAME: -ENOENT after a re-run (RERUN) is the lost first run's success.
  int rerun_done(int rc, bool rerun, const char* what, const std::string& name);
  // A CREATE/LINK re-run answered EXIST: 0 (OUT, ATTR filled) if what NAME is now is what
  // the lost first run made (MADE: a directory; a symlink to the same target; the same
  // file), else -EEXIST.
  int exist_after_rerun(const Cred& c, const char* what, const Fh& dir, const std::string& name,
                        const std::function<bool(const Fh&, const Attr&)>& made, Fh* out,
                        Attr* attr);
  struct Piece {
    Build build;
    Decode decode;
    bool cachethis = true;
    std::shared_ptr<ReadSink> sink;  // a READ's: its data straight into the caller's buffer
  };
  // The pieces' compounds in parallel across slots and connections; the first error.
  int run_parallel(const Cred& c, const std::vector<Piece>& pieces);
  Step finish(Attempt* a, const Decode& decode);
  int recover_session(uint64_t seen_gen);
  int recover_clientid(uint64_t seen_gen);
  int new_client_locked();  // recovery_mu_ held
  // One pass of new_client_locked: EXCHANGE_ID to the reclaims' end. *AGAIN: the server
  // lost the new client id or session before the pass ended (it restarted again): start
  // over from EXCHANGE_ID.
  int new_client_pass(bool* again);
  // After a recovery step failed with ST (WHY): on a hard mount, a transport failure (no
  // reply, no connection) is waited out like any call's, and so is NFS4ERR_DELAY (on a soft
  // mount up to retrans times): sleeps and returns true (try again). Otherwise false: the
  // step's result is the call's.
  bool wait_out(int st, int* tries, const std::string& why);
  // OPEN CLAIM_PREVIOUS of every open file (recovery, in the grace period): those reclaimed
  // go to *RECLAIMED, the others (refused, or no grace) to *LOST for reopen().
  void reclaim_opens(std::vector<Open>* reclaimed, std::vector<Open>* lost);
  int reclaim_open(OpenFile* f, uint32_t* status);
  // CLAIM_FH, after RECLAIM_COMPLETE. A file that fails (removed on the server meanwhile)
  // is logged and keeps its dead stateid: its own I/O fails, not the recovering call.
  void reopen(const std::vector<Open>& files);
  void renew_main();
  // shutdown()'s calls: CLOSE of what is open, DESTROY_SESSION, DESTROY_CLIENTID; none
  // after one that got no reply. 0 or the first error.
  int release_server_state();
  // What calls go by: o_'s, until shutdown() sets stopping_; from then on every call,
  // those already waiting too, is soft, tried once, for at most kTeardownTimeoutMs, so
  // that teardown never hangs on a dead server. o_ itself is never written after start().
  bool hard() const { return o_.hard && !stopping_.load(); }
  int retrans() const { return stopping_.load() ? 0 : o_.retrans; }
  int timeout_ms() const;
  // 0 once C is done; -ETIMEDOUT after timeout_ms() (read again every slice: a shutdown
  // shortens the wait of a call already waiting).
  int wait_reply(Call& c) const;

  int getattr4(const Cred& c, const Fh& fh, const nfs4::Bitmap4& want, nfs4::Fattr4* out);
  Open new_open_file(const Cred& c, uint32_t access);
  void remember_open(const Open& f);
  // EXCL_VERF: null for UNCHECKED4 (or no create), else the EXCLUSIVE4_1 verifier;
  // *ATTRSET (if given): the attributes the create set. TRUNCATE: size 0 with UNCHECKED4.
  int open_once(const Cred& c, const Fh& dir, const std::string& name, bool create,
                const uint64_t* excl_verf, uint32_t mode, OpenFile* f, Attr* attr,
                nfs4::Bitmap4* attrset = nullptr, bool* rerun = nullptr, bool truncate = false);
  int finish_exclusive(const Cred& c, const nfs4::Bitmap4& attrset, uint32_t mode, OpenFile* f,
                       Attr* attr);
  ssize_t read_pieces(const Cred& c, const Open& f, uint64_t off, size_t len, char* buf,
                      bool* eof);
  ssize_t write_pieces(const Cred& c, const Open& f, uint64_t off, size_t len, const char* buf,
                       uint32_t stable, std::vector<PieceVerf>* verfs,
                       const std::shared_ptr<const void>& owner);
  int create_obj(const Cred& c, const Fh& dir, uint32_t type, const std::string& name,
                 const std::string& target, uint32_t mode, Fh* out, Attr* attr);

  Options o_;
  Fh root_;
  uint32_t rsize_ = 0, wsize_ = 0;
  std::vector<std::unique_ptr<ConnLoop>> loops_;  // before conns_: they stop on them
  std::vector<std::unique_ptr<Conn>> conns_;
  std::atomic<uint32_t> xid_{1};
  std::string owner_id_;  // co_ownerid: host + pid + start time + counter
  nfs4::Verifier4 boot_verf_{};

  mutable std::mutex mu_;  // engine41_mu_1: session, slots; never held across a call
  std::condition_variable slot_cv_;
  uint64_t clientid_ = 0;
  uint32_t cs_seq_ = 0;  // CREATE_SESSION sequence (EXCHANGE_ID's eir_sequenceid)
  nfs4::SessionId sessionid_{};
  bool have_session_ = false;
  bool recovering_ = false;   // a new client id is being set up: new calls wait
  uint64_t session_gen_ = 0;  // bumped for every new session
  uint64_t client_gen_ = 0;   // bumped for every new client id
  // The last client id whose RECLAIM_COMPLETE went through: state of it may be reclaimed
  // (not that of an older one, lost in an earlier recovery, nor of a half-made one).
  uint64_t settled_gen_ = 0;
  nfs4::SlotTable slots_{1};
  uint32_t slots_granted_ = 0, peak_slots_ = 0, maxops_ = 8;
  uint32_t maxreq_ = 0, maxresp_ = 0;
  uint32_t lease_s_ = 90;
  std::atomic<int64_t> last_ok_ms_{0};
  // "Not responding" was logged and no reply came since: logged once, as the kernel's
  // client does, not once per call that timed out (150 lines in a 12 s outage).
  std::atomic<bool> not_responding_{false};

  std::mutex recovery_mu_;  // engine41_recovery_mu_0: one recovery at a time
  std::mutex opens_mu_;     // engine41_opens_mu_1: open_files_ only
  std::list<Open> open_files_;
  std::atomic<uint64_t> owner_counter_{0};
  std::atomic<uint64_t> create_counter_{0};      // exclusive create verifiers
  std::atomic<bool> no_exclusive4_1_{false};     // the server refused EXCLUSIVE4_1: GUARDED

  std::thread renewer_;
  std::mutex renew_mu_;  // after recovery_mu_ (wait_out), before mu_ (renew_main); never held across a call
  std::condition_variable renew_cv_;
  // Set under renew_mu_ (for renew_cv_); read without it by calls on any thread.
  std::atomic<bool> stopping_{false};
  bool shut_down_ = false;

  std::atomic<uint64_t> calls_{0}, retries_{0}, delays_{0}, replays_{0}, timeouts_{0},
      session_recoveries_{0}, clientid_recoveries_{0}, reopens_{0}, renewals_{0},
      resent_bytes_{0}, reclaimed_opens_{0}, resent_done_{0}, resent_exist_{0};
  std::atomic<bool> lose_next_reply_{false};
  std::function<void()> lost_reply_then_;  // read only after lose_next_reply_ is taken
};

}  // namespace nfsshim::nfs41
