// Write-behind for an nfs:// mount. A WRITE is answered as soon as its data is copied and
// before the NFS WRITE is done (the kernel's NFS client answers write(2) from its page cache
// the same way), so one writer keeps several WRITEs in flight instead of one: without it a
// writer waits out each NFS round trip. Bounded per file (bytes) and per mount (writes: each
// in-flight write holds a request thread). A write that then fails keeps its error, and
// later writes fail until someone has been told. Like the kernel's errseq, every open of
// the file at the failure (and any opened before it was reported) is told once: at its
// fsync, or at its flush (close) if it may write. Not only whoever closes first: a reader's
// close would otherwise take the error of a writer, whose fsync then said its data was safe.
//
// Whatever could see the file on the server before such a write lands waits for it:
// overlapping reads and writes, and every fetch of attributes that the kernel would take
// (their size would set the file back). The kernel itself ignores attributes from a request
// sent before a WRITE reply that came later (fuse_change_attributes' attr_version), so only
// writes begun before the request matter; now() marks that point.
//
// Gathering: small answered writes that continue each other (a log's appends) wait in one
// pending batch of the file, sent as one NFS WRITE when it is full, when something needs it
// (any wait below hands it to its caller to send first), or after a short delay (the
// mount's GatherFlusher). 16 KiB appends were one NFS round trip each.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "nfsshim/nfs/engine.h"

namespace nfsshim::fuse::nfsfs {

// Per mount: at most MAX_WRITES writes in flight across all files.
class WriteBehindLimit {
 public:
  explicit WriteBehindLimit(unsigned max_writes) : max_(max_writes) {}
  void acquire();
  void release(bool failed);
  // For the log at unmount: writes answered early, most in flight at once, failed ones.
  void counts(uint64_t* writes, unsigned* peak, uint64_t* failed);

 private:
  const unsigned max_;
  std::mutex mu_;  // wb_limit_mu_3
  std::condition_variable cv_;
  unsigned writes_ = 0;
  unsigned peak_ = 0;
  uint64_t total_ = 0;
  uint64_t failed_ = 0;
};

// Gathered writes to send as one: registered in flight under TICKET (end it after sending).
struct Batch {
  int64_t ticket = 0;
  uint64_t off = 0;
  std::shared_ptr<std::string> data;  // null: none
  nfs::Cred cred;                     // of the first write in it
};

class WriteBehind {
 public:
  // A point in the order of all writes begun on the mount.
  static uint64_t now();

  // Each wait below that a pending batch holds up (or, for begin, any wait while one is
  // pending) returns it in *SEND instead of waiting, when SEND is given: the caller sends it,
  // ends its ticket, and calls again. Without SEND, nothing may be gathered.

  // Starts a write of [OFF, OFF+LEN): waits until no write in flight overlaps it and the
  // file's writes in flight hold at most BUDGET bytes with it (one alone may be larger).
  // Returns its ticket (> 0), 0 if *SEND must go first, or the kept error of a failed
  // write (-errno, not cleared).
  int64_t begin(uint64_t off, uint64_t len, uint64_t budget, Batch* send = nullptr);
  // Ends the write TICKET; ERR < 0 is kept for the next flush/fsync.
  void end(int64_t ticket, int err);

  // An answered write of LEN bytes at OFF from BUF by C, gathered: appended to the pending
  // batch if it continues it (same C, at most MAX bytes with it, within BUDGET, not onto
  // another write in flight), else a new pending batch if START and nothing is pending
  // (else as begin: *SEND first).
  enum Gather { kSendFirst = 0, kAppended = 1, kStarted = 2, kNotGathered = 3 };
  // Returns a Gather or the kept error (-errno). kAppended with *SEND set: the batch became
  // full, send it now. kStarted: *TICKET is the new batch's (for the flusher).
  int gather(uint64_t off, const char* buf, size_t len, const nfs::Cred& c, size_t max,
             uint64_t budget, bool start, Batch* send, int64_t* ticket);
  // The pending batch, if it is still the one of TICKET (for the flusher's deadline).
  bool take_pending(int64_t ticket, Batch* send);

  // Waits until every write begun before POINT has ended. True if *SEND must go first.
  bool wait_before(uint64_t point, Batch* send = nullptr);
  // Waits until no write overlapping [OFF, OFF+LEN) is in flight. True if *SEND must go first.
  bool wait_overlapping(uint64_t off, uint64_t len, Batch* send = nullptr);
  // True if a write begun before POINT may have landed during a call started at POINT (it
  // is in flight, or a write ended after POINT): attributes that call fetched may be stale.
  bool raced(uint64_t point);
  // The opens of the file, by their FileIo handle (unique among the file's opens); WRITES:
  // opened for writing.
  void opened(uint64_t handle, bool writes);
  void closed(uint64_t handle);
  bool writes(uint64_t handle);  // false for an unknown handle
  // The kept error if open HANDLE has not been told of it yet (it is now), or 0. Later
  // writes fail until the first open is told.
  int take_error(uint64_t handle);

  uint64_t peak_bytes();  // most bytes in flight at once

 private:
  struct Range {
    uint64_t off, end;
  };
  bool overlaps_locked(uint64_t off, uint64_t end) const;
  // No write in flight overlaps [OFF, OFF+LEN) and the file's bytes in flight stay within
  // BUDGET with it (or nothing is in flight).
  bool fits_locked(uint64_t off, uint64_t len, uint64_t budget) const;
  bool take_locked(Batch* send);  // the pending batch, if any and SEND given
  uint64_t register_locked(uint64_t off, uint64_t len);
  std::mutex mu_;  // wb_mu_2: never held across an RPC
  std::condition_variable cv_;
  std::map<uint64_t, Range> inflight_;  // by ticket (= its begin point)
  uint64_t bytes_ = 0;
  uint64_t peak_ = 0;
  uint64_t last_end_ = 0;  // now() after the latest end
  int error_ = 0;       // failed write no open was told of yet (fails later writes)
  int last_error_ = 0;  // the latest failure, for opens not yet told
  uint64_t errors_ = 0;  // failures so far (one while error_ is untold): errseq's counter
  struct Open {
    uint64_t told;  // errors_ it has been told of
    bool writes;
  };
  std::map<uint64_t, Open> opens_;  // by handle
  Batch pending_;  // data null: none pending; else also in inflight_ under its ticket
};

}  // namespace nfsshim::fuse::nfsfs
