// Byte-range locks of the NFSv4.1 engine (RFC 8881 18.10-18.12): LOCK, LOCKU, LOCKT and
// the release of lock state before CLOSE, and LOCK reclaim after a server restart (RFC
// 8881 8.4.2). One lock-owner per caller owner id; the lock stateid of (file, owner) is
// kept in locks_ with the client id generation it was taken under and the ranges held.
// After a new client id, recovery reclaims those ranges (reclaim_locks) and moves the
// entry to the new generation; entries it could not reclaim keep the old one and turn
// the next lock op on that file into -EIO instead of a call with a dead stateid.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "internal.h"
#include "nfsshim/log.h"
#include "nfsshim/nfs4/constants.h"
#include "nfsshim/nfs4/nfsstat4.h"
#include "nfsshim/nfs4/ops_fh.h"
#include "nfsshim/nfs4/ops_lock.h"

namespace nfsshim::nfs41 {

using namespace nfs4;

namespace {

const char kOwnerPrefix[] = "nfsshim-lk:";

// The lock-owner of caller owner ID on a file, made from OPEN's stateid: its name also
// carries OPEN's open-owner. A server may tie a lock-owner to the open-owner it was first
// made from (ganesha does: open_to_lock_owner4 from another open-owner is refused,
// "Related ... doesn't match", NFS4ERR_RESOURCE for good), and each Open here has its own
// open-owner: one name for all the files a process locks hung its second file's LOCK.
std::vector<uint8_t> owner_bytes(uint64_t id, const std::vector<uint8_t>& open_owner) {
  std::string s = kOwnerPrefix + std::to_string(id) + "/";
  std::vector<uint8_t> out(s.begin(), s.end());
  out.insert(out.end(), open_owner.begin(), open_owner.end());
  return out;
}

uint64_t nfs_len(uint64_t len) { return len == 0 ? UINT64_MAX : len; }

uint32_t nfs_locktype(Engine::LockType t, bool wait) {
  if (t == Engine::LockType::kRead) return wait ? READW_LT : READ_LT;
  return wait ? WRITEW_LT : WRITE_LT;
}

// The range must fit: offset + length <= 2^64 unless length is "to the end".
bool valid_range(uint64_t off, uint64_t len) { return len == 0 || len <= UINT64_MAX - off; }

uint64_t range_end(uint64_t off, uint64_t len) { return len == 0 ? UINT64_MAX : off + len; }

struct HeldRange {
  uint64_t off, end;  // [off, end); end UINT64_MAX: to the end of the file
  Engine::LockType type;
};

// [OFF, END) taken out of HELD: ranges inside it go, ranges across its edges are cut
// (POSIX: a new lock of an owner replaces its own locks there, an unlock frees them).
void cut(std::vector<HeldRange>* held, uint64_t off, uint64_t end) {
  std::vector<HeldRange> out;
  for (const auto& r : *held) {
    if (r.end <= off || r.off >= end) {
      out.push_back(r);
      continue;
    }
    if (r.off < off) out.push_back({r.off, off, r.type});
    if (r.end > end) out.push_back({end, r.end, r.type});
  }
  held->swap(out);
}

void fill_conflict(const LockDenied& d, uint64_t clientid, Engine::LockConflict* out) {
  if (!out) return;
  *out = Engine::LockConflict{};
  out->off = d.offset;
  out->len = d.length == UINT64_MAX ? 0 : d.length;
  out->type = (d.locktype == READ_LT || d.locktype == READW_LT) ? Engine::LockType::kRead
                                                                 : Engine::LockType::kWrite;
  out->raw_owner = d.owner.owner;
  const size_t pn = sizeof kOwnerPrefix - 1;
  const auto& o = d.owner.owner;
  if (d.owner.clientid == clientid && o.size() > pn &&
      std::equal(o.begin(), o.begin() + pn, kOwnerPrefix)) {
    auto slash = std::find(o.begin() + pn, o.end(), '/');
    std::string digits(o.begin() + pn, slash);
    if (digits.empty() || digits.size() > 20) return;
    if (digits.find_first_not_of("0123456789") == std::string::npos) {
      out->ours = true;
      out->owner = std::stoull(digits);
    }
  }
}

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

}  // namespace

// Fields under lock_table_mu_.
struct Engine::LockEntry {
  Stateid4 stateid;            // the lock stateid (seqid 0 would also do in v4.1)
  // False after a recovery found nothing held: the next LOCK goes with open_to_lock_owner4.
  bool have_stateid = false;
  std::weak_ptr<OpenFile> parent;  // the Open whose stateid made it (open_to_lock_owner4)
  uint64_t client_gen = 0;     // client id it belongs to
  std::vector<HeldRange> held;  // granted and not unlocked since: what is reclaimed
  // Reclaimed under client id RECLAIMED_GEN, moved there by settle_locks() only after
  // RECLAIM_COMPLETE: a pass cut short by another restart leaves it to the next pass.
  uint64_t reclaimed_gen = 0;
  Stateid4 reclaimed_sid;
  bool reclaimed_have = false;
};

// Stale lock state of F's file (taken under an earlier client id): dropped, and -EIO so
// the caller learns its locks are gone. 0 when there is none.
int Engine::lock_state_lost(const Open& f) {
  uint64_t gen;
  {
    // A recovery under way may still reclaim them: its result, not its middle, counts.
    std::unique_lock<std::mutex> g(mu_);
    while (recovering_) slot_cv_.wait_for(g, std::chrono::milliseconds(500));
    gen = client_gen_;
  }
  int rv = 0;
  std::lock_guard<std::mutex> t(lock_table_mu_);
  for (auto it = locks_.begin(); it != locks_.end();) {
    if (it->first.first == f->fh.data && it->second->client_gen != gen) {
      SHIM_LOG_WARN("nfs41: locks of owner {} on '{}' were lost with the old client id",
                    it->first.second, log_name(*f));
      it = locks_.erase(it);
      rv = -EIO;
    } else {
      ++it;
    }
  }
  return rv;
}

// An owner that holds no range on the file starts a new lock-owner from F when its lock
// state was made from another Open: that Open's CLOSE frees the state made from it (a
// server refuses the CLOSE while it holds locks), and may come long after this LOCK (its
// RELEASE is asynchronous; a forked child or a mapping may keep it open), taking with it
// a lock the caller still holds by POSIX rules. The old state holds nothing: freed here.
void Engine::leave_idle_parent(const Cred& c, const Open& f, LockEntry& e) {
  Stateid4 sid;
  {
    std::lock_guard<std::mutex> t(lock_table_mu_);
    if (!e.have_stateid || !e.held.empty() || e.parent.lock() == f) return;
    sid = e.stateid;
    e.have_stateid = false;  // the next LOCK sends open_to_lock_owner4 from F
  }
  if (int rv = free_lock_state(c, f, sid); rv < 0)
    SHIM_LOG_WARN("nfs41: freeing the idle lock state of '{}' made through another open: {}",
                  log_name(*f), std::strerror(-rv));
}

int Engine::lock(const Cred& c, const Open& f, uint64_t owner, LockType type, uint64_t off,
                 uint64_t len, int wait_ms, LockConflict* conflict,
                 const std::atomic<bool>* cancel) {
  if (!f) return -EBADF;
  if (!valid_range(off, len)) return -EINVAL;
  {
    std::lock_guard<std::mutex> g(opens_mu_);
    if (std::find(open_files_.begin(), open_files_.end(), f) == open_files_.end()) return -EBADF;
  }
  const auto key = std::make_pair(f->fh.data, owner);
  const bool may_wait = wait_ms != 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  int backoff = 20;
  for (;;) {
    LockRes res;
    int rv;
    {
      std::lock_guard<std::mutex> lg(locks_mu_);
      if (int rc = lock_state_lost(f); rc < 0) return rc;
      auto it = locks_.find(key);
      std::shared_ptr<LockEntry> e = it == locks_.end() ? nullptr : it->second;
      if (e) {
        // The Open that made the lock stateid was closed: its lock state went with it.
        Open p = e->parent.lock();
        std::lock_guard<std::mutex> g(opens_mu_);
        if (!p || std::find(open_files_.begin(), open_files_.end(), p) == open_files_.end()) {
          std::lock_guard<std::mutex> t(lock_table_mu_);
          locks_.erase(it);
          e = nullptr;
        }
      }
      if (e) leave_idle_parent(c, f, *e);
      uint64_t gen = 0;
      bool made_owner = false;  // the last try sent open_to_lock_owner4 from F
      rv = run(c,
          [&](Compound& k) {
            LockArgs a;
            a.locktype = nfs_locktype(type, may_wait);
            a.offset = off;
            a.length = nfs_len(len);
            {
              std::lock_guard<std::mutex> g(mu_);
              gen = client_gen_;
              a.lock_owner.clientid = clientid_;
            }
            bool have = false;
            uint64_t egen = gen;
            if (e) {  // reclaimed by a recovery since the last try: its new stateid
              std::lock_guard<std::mutex> t(lock_table_mu_);
              have = e->have_stateid;
              egen = e->client_gen;
              a.lock_stateid = e->stateid;
            }
            // A retry after a new client id must not use a stateid of the old one.
            if (egen != gen) return -EIO;
            a.new_lock_owner = !have;
            made_owner = !have;
            if (!have) {
              a.open_stateid = f->stateid();
              a.lock_owner.owner = owner_bytes(owner, open_owner(*f));
            }
            if (int rc = encode_putfh(k, f->fh); rc < 0) return rc;
            return encode_lock(k, a);
          },
          [&](ReplyReader& r) {
            uint32_t st;
            NFS41_STEP(r, decode_status_only(r, OP_PUTFH, &st));
            NFS41_STEP(r, decode_lock(r, &res));
            return 0;
          });
      if (rv == 0) {
        std::lock_guard<std::mutex> t(lock_table_mu_);
        if (!e) {
          e = std::make_shared<LockEntry>();
          locks_[key] = e;
        }
        // The lock state is F's now (its lock-owner was made from F's open): LOCKT names
        // it so, and F's CLOSE frees it (an entry kept with no state across a restart may
        // have been made through another open of the file).
        if (made_owner) e->parent = f;
        e->stateid = res.stateid;
        e->have_stateid = true;
        e->client_gen = gen;
        cut(&e->held, off, range_end(off, len));
        e->held.push_back({off, range_end(off, len), type});
        return 0;
      }
      // A new client id came in the middle: the build gave -EIO; forget the dead state.
      if (int rc = lock_state_lost(f); rc < 0) return rc;
    }
    if (res.status != NFS4ERR_DENIED) return rv;
    if (!may_wait || (wait_ms > 0 && std::chrono::steady_clock::now() >= deadline)) {
      std::lock_guard<std::mutex> g(mu_);
      fill_conflict(res.denied, clientid_, conflict);
      return -EAGAIN;
    }
    // Blocking: poll with backoff (the server need not call back; v4.1 CB_NOTIFY_LOCK is
    // optional and this engine has no back channel), in slices so CANCEL is seen soon.
    lock_waits_.fetch_add(1);
    int64_t pause = backoff;
    if (wait_ms > 0) {  // not past the caller's deadline
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      pause = std::max<int64_t>(1, std::min<int64_t>(pause, left.count()));
    }
    for (int64_t slept = 0; slept < pause; slept += 20) {
      if (cancel && cancel->load()) return -EINTR;
      sleep_ms(static_cast<int>(std::min<int64_t>(20, pause - slept)));
    }
    if (cancel && cancel->load()) return -EINTR;
    backoff = std::min(backoff * 2, 1000);
  }
}

int Engine::unlock(const Cred& c, const Open& f, uint64_t owner, uint64_t off, uint64_t len) {
  if (!f) return -EBADF;
  if (!valid_range(off, len)) return -EINVAL;
  std::lock_guard<std::mutex> lg(locks_mu_);
  if (int rc = lock_state_lost(f); rc < 0) return rc;
  auto it = locks_.find(std::make_pair(f->fh.data, owner));
  if (it == locks_.end()) return 0;  // nothing held by this owner on the file
  std::shared_ptr<LockEntry> e = it->second;
  {
    std::lock_guard<std::mutex> t(lock_table_mu_);
    if (!e->have_stateid) return 0;  // nothing held since the recovery
  }
  LockuRes res;
  int rv = run(c,
      [&](Compound& k) {
        uint64_t egen;
        Stateid4 sid;
        {
          std::lock_guard<std::mutex> t(lock_table_mu_);
          egen = e->client_gen;
          sid = e->stateid;
        }
        {
          std::lock_guard<std::mutex> g(mu_);
          if (egen != client_gen_) return -EIO;
        }
        if (int rc = encode_putfh(k, f->fh); rc < 0) return rc;
        return encode_locku(k, WRITE_LT, sid, off, nfs_len(len));
      },
      [&](ReplyReader& r) {
        uint32_t st;
        NFS41_STEP(r, decode_status_only(r, OP_PUTFH, &st));
        NFS41_STEP(r, decode_locku(r, &res));
        return 0;
      });
  std::lock_guard<std::mutex> t(lock_table_mu_);
  if (rv == 0) {
    e->stateid = res.stateid;
    cut(&e->held, off, range_end(off, len));
  }
  if (rv == -EIO) locks_.erase(it);  // the lock state is unusable: forget it
  return rv;
}

int Engine::test_lock(const Cred& c, const Open& f, uint64_t owner, LockType type, uint64_t off,
                      uint64_t len, LockConflict* conflict) {
  if (!f) return -EBADF;
  if (!valid_range(off, len)) return -EINVAL;
  {
    std::lock_guard<std::mutex> lg(locks_mu_);
    if (int rc = lock_state_lost(f); rc < 0) return rc;
  }
  // The lock-owner OWNER holds the file's locks as (made from its entry's Open), so that
  // its own locks are no conflict; none held: any name of OWNER does.
  std::vector<uint8_t> lo;
  {
    std::lock_guard<std::mutex> t(lock_table_mu_);
    auto it = locks_.find(std::make_pair(f->fh.data, owner));
    Open p = it == locks_.end() ? nullptr : it->second->parent.lock();
    lo = owner_bytes(owner, open_owner(p ? *p : *f));
  }
  LocktRes res;
  uint64_t clientid = 0;
  int rv = run(c,
      [&](Compound& k) {
        StateOwner4 o;
        {
          std::lock_guard<std::mutex> g(mu_);
          o.clientid = clientid = clientid_;
        }
        o.owner = lo;
        if (int rc = encode_putfh(k, f->fh); rc < 0) return rc;
        return encode_lockt(k, nfs_locktype(type, false), off, nfs_len(len), o);
      },
      [&](ReplyReader& r) {
        uint32_t st;
        NFS41_STEP(r, decode_status_only(r, OP_PUTFH, &st));
        NFS41_STEP(r, decode_lockt(r, &res));
        return 0;
      });
  if (rv == -EAGAIN && res.status == NFS4ERR_DENIED) fill_conflict(res.denied, clientid, conflict);
  return rv;
}

int Engine::free_lock_state(const Cred& c, const Open& f, const Stateid4& sid) {
  LockuRes lu;
  int rv = run(c,
      [&](Compound& k) {
        if (int rc = encode_putfh(k, f->fh); rc < 0) return rc;
        return encode_locku(k, WRITE_LT, sid, 0, UINT64_MAX);
      },
      [&](ReplyReader& r) {
        uint32_t st;
        NFS41_STEP(r, decode_status_only(r, OP_PUTFH, &st));
        NFS41_STEP(r, decode_locku(r, &lu));
        return 0;
      });
  if (rv != 0) return rv;
  // No locks left on the stateid: FREE_STATEID ends it (v4.1 has no RELEASE_LOCKOWNER).
  uint32_t st = 0;
  return run(c, [&](Compound& k) { return encode_free_stateid(k, lu.stateid); },
             [&](ReplyReader& r) {
               NFS41_STEP(r, decode_status_only(r, OP_FREE_STATEID, &st));
               return 0;
             });
}

int Engine::release_locks(const Cred& c, const Open& f) {
  if (!f) return -EBADF;
  std::lock_guard<std::mutex> lg(locks_mu_);
  uint64_t gen;
  {
    std::unique_lock<std::mutex> g(mu_);
    while (recovering_) slot_cv_.wait_for(g, std::chrono::milliseconds(500));
    gen = client_gen_;
  }
  std::vector<std::pair<uint64_t, Stateid4>> live;  // (owner, lock stateid) to free
  {
    std::lock_guard<std::mutex> t(lock_table_mu_);
    for (auto it = locks_.begin(); it != locks_.end();) {
      const std::shared_ptr<LockEntry>& e = it->second;
      Open p = e->parent.lock();
      if (it->first.first != f->fh.data || (p && p != f)) {
        ++it;
        continue;
      }
      // Died with the old client id, with an Open closed before, or nothing was held
      // since a recovery: nothing left to free.
      if (e->client_gen == gen && p && e->have_stateid)
        live.emplace_back(it->first.second, e->stateid);
      it = locks_.erase(it);
    }
  }
  int first = 0;
  for (const auto& [owner, sid] : live) {
    int rv = free_lock_state(c, f, sid);
    if (rv != 0) {
      SHIM_LOG_WARN("nfs41: releasing the locks of owner {} on '{}': {}", owner, f->name,
                    std::strerror(-rv));
      if (first == 0) first = rv;
    }
  }
  return first;
}

void Engine::reclaim_locks(const std::vector<Open>& reclaimed, uint64_t from_gen) {
  struct Item {
    uint64_t owner;
    std::shared_ptr<LockEntry> e;
    Open parent;
    std::vector<HeldRange> held;
  };
  uint64_t gen, clientid;
  {
    std::lock_guard<std::mutex> g(mu_);
    gen = client_gen_;
    clientid = clientid_;
  }
  std::vector<Item> items;
  {
    std::lock_guard<std::mutex> t(lock_table_mu_);
    for (const auto& kv : locks_) {
      // Lost in an earlier recovery (the caller not told yet): someone may hold it now.
      if (kv.second->client_gen != from_gen) continue;
      items.push_back({kv.first.second, kv.second, kv.second->parent.lock(), kv.second->held});
    }
  }
  for (const Item& it : items) {
    if (recovery_lost()) return;  // the server restarted again: the next pass does them all
    const bool open_back = it.parent && std::find(reclaimed.begin(), reclaimed.end(),
                                                  it.parent) != reclaimed.end();
    if (!open_back) {  // its Open was closed, or re-opened without reclaim: lost
      if (!it.held.empty() && it.parent)
        SHIM_LOG_WARN("nfs41: locks of owner {} on '{}' not reclaimed: the open was not",
                      it.owner, log_name(*it.parent));
      continue;
    }
    const std::string name = log_name(*it.parent);
    Stateid4 sid;
    bool have = false;
    int rv = 0;
    uint32_t st = 0;
    for (const HeldRange& h : it.held) {
      LockRes res;
      rv = run(it.parent->cred_,
          [&](Compound& k) {
            LockArgs a;
            a.locktype = nfs_locktype(h.type, false);
            a.reclaim = true;
            a.offset = h.off;
            a.length = h.end == UINT64_MAX ? UINT64_MAX : h.end - h.off;
            a.lock_owner.clientid = clientid;
            a.new_lock_owner = !have;
            if (have) {
              a.lock_stateid = sid;
            } else {  // open_to_lock_owner4 from the reclaimed open stateid
              a.open_stateid = it.parent->stateid();
              a.lock_owner.owner = owner_bytes(it.owner, open_owner(*it.parent));
            }
            if (int rc = encode_putfh(k, it.parent->fh); rc < 0) return rc;
            return encode_lock(k, a);
          },
          [&](ReplyReader& r) {
            uint32_t pst;
            NFS41_STEP(r, decode_status_only(r, OP_PUTFH, &pst));
            NFS41_STEP(r, decode_lock(r, &res));
            return 0;
          });
      st = res.status;
      if (rv != 0) break;
      sid = res.stateid;
      have = true;
      reclaimed_locks_.fetch_add(1);
    }
    if (rv == 0) {
      std::lock_guard<std::mutex> t(lock_table_mu_);
      it.e->reclaimed_sid = sid;
      it.e->reclaimed_have = have;  // false: nothing was held, the next LOCK starts afresh
      it.e->reclaimed_gen = gen;
      continue;
    }
    if (recovery_lost()) return;  // not refused: the session went with another restart
    SHIM_LOG_WARN("nfs41: reclaim of the locks of owner {} on '{}' refused ({}): they are "
                  "lost, the next lock op on the file gives EIO", it.owner, name,
                  st ? nfs4_status_name(st) : std::strerror(-rv));
    // Half a reclaim is no lock the caller can count on: give back what was reclaimed.
    if (have) free_lock_state(it.parent->cred_, it.parent, sid);
  }
}

void Engine::settle_locks(uint64_t gen) {
  std::lock_guard<std::mutex> t(lock_table_mu_);
  for (auto& kv : locks_) {
    LockEntry& e = *kv.second;
    if (e.reclaimed_gen != gen) continue;
    e.stateid = e.reclaimed_sid;
    e.have_stateid = e.reclaimed_have;
    e.client_gen = gen;
    e.reclaimed_gen = 0;
  }
}

}  // namespace nfsshim::nfs41
