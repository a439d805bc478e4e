// UNSTABLE writes + COMMIT with the verifier check (close-to-open, as the kernel client).
#include <algorithm>

#include "internal.h"
#include "nfsshim/log.h"

namespace nfsshim::nfs {

UnstableWriter::UnstableWriter(Engine& e, Fh fh, size_t max_retained, UnstableLimit* limit)
    : UnstableWriter(
          [&e, fh](const Cred& c, uint64_t off, size_t len, const char* buf, int stable,
                   std::vector<Engine::PieceVerf>* verfs, const std::shared_ptr<const void>&) {
            return e.write(c, fh, off, len, buf, stable, verfs);  // libnfs copies it anyway
          },
          [&e, fh](const Cred& c, WriteVerf* verf) { return e.commit(c, fh, verf); },
          max_retained, limit, [&e] { return e.restart_generation(); }) {}

UnstableWriter::UnstableWriter(WriteFn write, CommitFn commit, size_t max_retained, UnstableLimit* limit,
                               GenFn generation)
    : write_(std::move(write)),
      commit_(std::move(commit)),
      max_retained_(max_retained),
      limit_(limit),
      generation_(std::move(generation)) {
  if (limit_) limit_->add(this);
}

UnstableWriter::~UnstableWriter() {
  if (limit_) limit_->remove(this);  // after a COMMIT the limit makes of it
}

size_t UnstableWriter::retained_bytes() {
  std::lock_guard<std::mutex> g(mu_);
  return retained_bytes_ + committing_bytes_;
}

bool UnstableWriter::count_locked(bool committed) {
  return limit_ && limit_->set(this, retained_bytes_ + committing_bytes_, committed);
}

// Bytes [FROM, FROM+N) of this piece. A piece keeping less than half of its buffer gets a
// copy of its own, so the retained pieces never hold more than twice what they count.
UnstableWriter::Piece UnstableWriter::Piece::slice(size_t from, size_t n) const {
  if (2 * n >= buf->size()) return Piece{buf, at + from, n, verf, gen};
  return Piece{std::make_shared<const std::string>(data() + from, n), 0, n, verf, gen};
}

// Takes [OFF, END) out of the pieces of M, cutting those that reach into it.
void UnstableWriter::cut(std::map<uint64_t, Piece>* m, size_t* bytes, uint64_t off, uint64_t end) {
  auto it = m->lower_bound(off);
  if (it != m->begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second.len > off) it = prev;
  }
  while (it != m->end() && it->first < end) {
    const uint64_t poff = it->first, pend = poff + it->second.len;
    Piece old = std::move(it->second);
    it = m->erase(it);
    *bytes -= old.len;
    if (poff < off) {
      *bytes += off - poff;
      m->emplace(poff, old.slice(0, off - poff));
    }
    if (pend > end) {
      *bytes += pend - end;
      m->emplace(end, old.slice(end - poff, pend - end));
    }
  }
}

// Nothing older than what was just written to [OFF, END) is kept any more, nor re-sent by
// the COMMIT in progress.
void UnstableWriter::forget_locked(uint64_t off, uint64_t end) {
  cut(&retained_, &retained_bytes_, off, end);
  cut(&committing_, &committing_bytes_, off, end);
}

// Keeps P as the newest bytes of [OFF, OFF+P.len).
void UnstableWriter::retain_locked(uint64_t off, Piece p) {
  forget_locked(off, off + p.len);
  retained_bytes_ += p.len;
  retained_gen_ = std::min(retained_gen_, p.gen);
  publish_gen_locked();
  retained_.emplace(off, std::move(p));
}

ssize_t UnstableWriter::write(const Cred& c, uint64_t off, const char* buf, size_t len) {
  // The copy kept until COMMIT is made first and the WRITEs are sent from it: an engine
  // that sends in place (v4.1) copies nothing more; libnfs (v3) copies into its requests.
  return write(c, off, std::make_shared<const std::string>(buf, len));
}

ssize_t UnstableWriter::write(const Cred& c, uint64_t off, std::shared_ptr<const std::string> data,
                              int stable) {
  const size_t len = data->size();
  bool full, over;
  ssize_t n;
  // Read before the WRITEs go: a restart noticed after this may have lost them.
  const uint64_t gen = generation_ ? generation_() : 0;
  {
    std::shared_lock<std::shared_mutex> wl(commit_mu_);
    std::vector<Engine::PieceVerf> verfs;
    n = write_(c, off, len, data->data(), stable, &verfs, data);
    if (n <= 0) return n;
    std::lock_guard<std::mutex> g(mu_);
    // One piece per run of WRITEs under the same verifier: the whole copy, unless the
    // server restarted in the middle or wrote less. A run the server wrote stably is not
    // kept, and no older bytes of its range either: a re-send of those would undo it.
    for (size_t i = 0, j; i < verfs.size(); i = j) {
      size_t run = verfs[i].len;
      for (j = i + 1; j < verfs.size() && verfs[j].verf == verfs[i].verf &&
                      verfs[j].stable == verfs[i].stable &&
                      verfs[j].off == verfs[j - 1].off + verfs[j - 1].len;
           ++j)
        run += verfs[j].len;
      if (run == 0) continue;
      if (verfs[i].stable) {
        forget_locked(verfs[i].off, verfs[i].off + run);
        stable_bytes_.fetch_add(run, std::memory_order_relaxed);
        if (limit_) limit_->add_stable(run);
      } else {
        retain_locked(verfs[i].off, Piece{data, verfs[i].off - off, run, verfs[i].verf, gen}.slice(0, run));
      }
    }
    if (last_cred_ != c) last_cred_ = c;
    full = retained_bytes_ > max_retained_;
    over = count_locked();
  }
  if (full) {
    // Bounded memory: commit now, as the kernel does under writeback pressure.
    int rv = commit(c);
    if (rv < 0) return rv;
  } else if (over) {
    limit_->relieve();  // its COMMITs' errors are theirs: this write succeeded
  }
  return n;
}

bool UnstableWriter::kept_before_restart() {
  if (!generation_) return false;
  const uint64_t now = generation_();
  // The usual answer without the lock: nothing kept from before the last restart.
  if (oldest_gen_.load(std::memory_order_acquire) >= now) return false;
  std::lock_guard<std::mutex> g(mu_);
  return (!retained_.empty() && retained_gen_ < now) || (!committing_.empty() && committing_gen_ < now);
}

int UnstableWriter::commit_if_restarted() {
  if (!kept_before_restart()) return 0;
  int rv = commit_kept();  // waits for a COMMIT in progress, then commits the rest
  return rv < 0 ? rv : 1;
}

int UnstableWriter::commit_kept() {
  Cred c;
  {
    std::lock_guard<std::mutex> g(mu_);
    c = last_cred_;
  }
  return commit(c);
}

// Writes go on meanwhile (each takes what it overwrites out of committing_), except while
// a re-send runs. One COMMIT at a time: a write that finds the file full waits for the one
// in progress, so a file keeps at most about twice max_retained.
int UnstableWriter::commit(const Cred& c) {
  std::lock_guard<std::mutex> one(serial_mu_);
  {
    std::lock_guard<std::mutex> g(mu_);
    committing_.swap(retained_);  // empty before: the last COMMIT emptied it
    committing_bytes_ = retained_bytes_;
    retained_bytes_ = 0;
    committing_gen_ = retained_gen_;
    retained_gen_ = UINT64_MAX;
    if (committing_.empty()) {
      committing_gen_ = UINT64_MAX;
      publish_gen_locked();
      return 0;
    }
  }
  if (limit_) limit_->add_commit();
  WriteVerf verf = 0;
  int rv = commit_(c, &verf);
  if (rv == 0) {
    bool all = true;
    {
      std::lock_guard<std::mutex> g(mu_);
      for (auto it = committing_.begin(); it != committing_.end();) {
        if (it->second.verf != verf) {
          all = false;
          ++it;
          continue;
        }
        committing_bytes_ -= it->second.len;
        it = committing_.erase(it);
      }
    }
    if (!all) rv = resend(c);
  }
  std::lock_guard<std::mutex> g(mu_);
  // What is left failed: a later commit (fsync again, close, the limit) tries once more.
  // It overlaps nothing kept: every write since took its range out of committing_.
  retained_.insert(std::make_move_iterator(committing_.begin()), std::make_move_iterator(committing_.end()));
  retained_bytes_ += committing_bytes_;
  if (!committing_.empty()) retained_gen_ = std::min(retained_gen_, committing_gen_);
  committing_gen_ = UINT64_MAX;
  publish_gen_locked();
  committing_.clear();
  committing_bytes_ = 0;
  // Left over from a failed COMMIT: as old as before (the age thread retries it).
  count_locked(rv == 0);
  return rv;
}

// FILE_SYNC re-sends of what the server may have lost (its verifier changed: it
// restarted). No write runs meanwhile: each one done has taken what it overwrote out of
// committing_, and none can land under a re-send of older bytes. Leaves in committing_
// what is not stable yet.
int UnstableWriter::resend(const Cred& c) {
  std::unique_lock<std::shared_mutex> no_writes(commit_mu_);
  size_t bytes = 0, count = 0;
  {
    std::lock_guard<std::mutex> g(mu_);
    for (auto& p : committing_) {
      bytes += p.second.len;
      ++count;
    }
  }
  if (count == 0) return 0;  // all of it written again since
  SHIM_LOG_WARN("write verifier changed (server restarted): re-sending {} bytes in {} pieces", bytes, count);
  for (;;) {
    uint64_t off;
    Piece d;
    {
      std::lock_guard<std::mutex> g(mu_);
      if (committing_.empty()) return 0;
      off = committing_.begin()->first;
      d = committing_.begin()->second;
    }
    ssize_t n = write_(c, off, d.len, d.data(), FILE_SYNC, nullptr, d.buf);
    if (n < 0) return static_cast<int>(n);
    if (static_cast<size_t>(n) != d.len) return -EIO;
    resent_bytes_.fetch_add(d.len);
    std::lock_guard<std::mutex> g(mu_);
    committing_bytes_ -= d.len;
    committing_.erase(off);  // FILE_SYNC data is stable: nothing of it is left to check
  }
}

}  // namespace nfsshim::nfs
