// The FUSE backend over a direct NFS engine (SOURCE = nfs://..., vers=3 or 4.1, client.h):
// inodes are file handles, every operation is an NFS call made with the FUSE caller's
// identity, and a file unlinked (or renamed over) while open through the mount is renamed
// into the graveyard on the export (/.graveyard.nfsshim/u<uid>, hidden from the mount) and
// removed at its last release, unless the server keeps unlinked open files itself (NFSv4.1
// OPEN4_RESULT_PRESERVE_UNLINKED): then it is a plain REMOVE.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>

#include "fuse_api.h"
#include "nfs/client.h"
#include "nfs/gather_flusher.h"
#include "nfs/lock_waits.h"
#include "nfs/write_behind.h"
#include "nfsshim/nfs/engine.h"
#include "options.h"

namespace nfsshim::fuse::nfsfs {

// One file or directory the kernel knows (nlookup) or has open (nopen).
struct Node {
  explicit Node(uint64_t i, nfs::Fh f) : ino(i), fh(std::move(f)) {}
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  const uint64_t ino;
  const nfs::Fh fh;
  // node_removal_mu_0: exclusive while a name of the file is being removed (unlink, rename
  // over, the graveyard REMOVE at the last release or FORGET), shared while an open counts
  // itself.
  // Taken before mu and before the table's lock; never held by a waiter on the kernel.
  std::shared_mutex removal_mu;
  std::mutex mu;                               // node_mu_1: the fields below
  uint64_t nlookup = 0;
  int nopen = 0;
  std::string buried;          // graveyard entry name while buried
  // The entry also stays while the kernel knows the file (nlookup > 0): a file replaced by
  // rename may still be opened by a path walk that found it before the rename.
  bool keep_while_known = false;
  std::shared_ptr<FileIo> io;  // while open: open state, UNSTABLE data since the last COMMIT
  // Each open's AUTH_SYS identity, supplementary groups included, taken at OPEN/CREATE:
  // its READs, WRITEs and COMMITs go as the opener, like the kernel client's open context.
  // Shared, not copied: READ and WRITE look theirs up per request.
  std::map<uint64_t, std::shared_ptr<const nfs::Cred>> open_creds;  // by handle
  WriteBehind wb;              // WRITEs answered but not done yet (write_behind.h)
  // Size, mtime and ctime of the last open's GETATTR (close-to-open, op_open): when the
  // next open finds them changed, the kernel's cached attributes are dropped.
  bool opened_before = false;
  uint64_t open_size = 0;
  struct timespec open_mtime {}, open_ctime{};
};

// ino <-> file handle. Node ids are our own counter (never reused), st_ino is the fileid.
class NodeTable {
 public:
  explicit NodeTable(const nfs::Fh& root);
  std::shared_ptr<Node> get(uint64_t ino);
  // The one lookup-count entry point: the node for FH (created if new), nlookup += 1.
  std::shared_ptr<Node> remember(const nfs::Fh& fh);
  std::shared_ptr<Node> find(const nfs::Fh& fh);  // no count change; null if unknown
  // The node for FH, created (lookup count 0) if unknown; the caller ends with maybe_drop.
  std::shared_ptr<Node> pin(const nfs::Fh& fh);
  void forget(uint64_t ino, uint64_t n);  // through forget_node (nfs_ops.cc): graveyard entries
  void maybe_drop(const std::shared_ptr<Node>& n);  // after nopen reached 0

 private:
  std::shared_ptr<Node> find_or_add_locked(const nfs::Fh& fh);
  std::mutex mu_;  // table_mu_0: taken before no other lock; Node::mu after it
  std::unordered_map<uint64_t, std::shared_ptr<Node>> by_ino_;
  std::unordered_map<std::string, uint64_t> by_fh_;
  uint64_t next_ = FUSE_ROOT_ID + 1;
};

struct NfsFs {
  Options opts;
  fuse_session* se = nullptr;  // for notifications to the kernel (set before it serves)
  std::unique_ptr<Client> client;
  // The bound on UNSTABLE data kept for COMMIT, all open files together (URL
  // max_unstable_mb, commit_secs). Set once the daemon serves; it commits through CLIENT
  // and every FileIo in NODES uses it, hence between the two.
  std::unique_ptr<nfs::UnstableLimit> unstable;
  std::unique_ptr<NodeTable> nodes;
  std::string graveyard_name;  // in the export root
  // .../u<uid>. Made again when found removed (an operator's rm -rf on the export) by a
  // bury (regrave, nfs_graveyard.cc), so every thread reads it through graveyard_fh().
  nfs::Fh graveyard_fh() const {
    std::lock_guard<std::mutex> g(graveyard_mu);
    return graveyard_;
  }
  void set_graveyard(const nfs::Fh& fh) {
    std::lock_guard<std::mutex> g(graveyard_mu);
    graveyard_ = fh;
  }
  mutable std::mutex graveyard_mu;  // graveyard_mu_3: graveyard_ only, taken under no call
  nfs::Fh graveyard_;  // through the two above
  std::mutex regrave_mu;  // one re-making at a time; held over its NFS calls
  int64_t foreign_max_age_s = 7 * 24 * 3600;  // nfsshim.conf foreign_max_age: reaping at start
  std::mutex bury_mu;          // bury_mu_2: sequence numbers
  uint64_t bury_seq = 0;
  // Write-behind: bytes in flight per file (opts.write_behind_kb; 0: every WRITE waits for
  // its NFS WRITE), writes in flight per mount (half the request threads: the others stay
  // free for reads and metadata).
  uint64_t wb_budget = 0;
  std::unique_ptr<WriteBehindLimit> wb_limit;
  // Gathering of small answered writes (write_behind.h): batches of at most gather_max
  // bytes (0: off), each sent at the latest by the flusher.
  size_t gather_max = 0;
  std::unique_ptr<GatherFlusher> gather;
  std::atomic<uint64_t> piped_writes{0};  // WRITEs whose data came through a pipe (splice)
  // F_SETLKW waits, each on a thread of its own (lock_waits.h). A waiter is a process
  // blocked in fcntl, so they are few; each costs a thread that wakes every 20 ms and asks
  // the server up to once a second. 256 bounds what a runaway program can make the daemon
  // start; the next waiter gets ENOLCK. Stopped (waits end with ENOLCK, threads joined) by
  // run_nfs_mount as soon as the loop ends: their replies must not race the unmount, which
  // closes /dev/fuse. Declared last: stopped again, at worst, before the client goes.
  LockWaits lock_waits{256};
};

bool is_nfs_source(const std::string& source);
// Runs nfsshim-fuse for an nfs:// SOURCE: opens the engine (errors before anything is
// mounted), mounts, serves. Returns the process exit status.
// FOREIGN_MAX_AGE_S: nfsshim.conf's foreign_max_age, for the graveyard's reaping at start.
int run_nfs_mount(const Options& opts, int64_t foreign_max_age_s, fuse_args* args, const char* prog);
// The flusher's deadline: sends N's gathered batch if it is still TICKET's (nfs_ops.cc).
void send_gathered(NfsFs& fs, const std::shared_ptr<Node>& n, int64_t ticket);
// SERVER_LOCKS: getlk/setlk go to the server (Client::server_locks()).
fuse_lowlevel_ops make_nfs_ops(bool server_locks);
// Graveyard (nfs_graveyard.cc).
int open_graveyard(NfsFs& fs, std::string* why);
int bury(NfsFs& fs, const nfs::Fh& dir, const std::string& name, std::string* entry);
int bury_link(NfsFs& fs, const nfs::Fh& file, std::string* entry);

}  // namespace nfsshim::fuse::nfsfs
