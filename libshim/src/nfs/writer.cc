// UNSTABLE writes + COMMIT with the verifier check (close-to-open, as the kernel client).
#include "internal.h"
#include "nfsshim/log.h"

namespace nfsshim::nfs {

UnstableWriter::UnstableWriter(Engine& e, Fh fh, size_t max_retained)
    : UnstableWriter(
          [&e, fh](const Cred& c, uint64_t off, size_t len, const char* buf, int stable,
                   std::vector<Engine::PieceVerf>* verfs) {
            return e.write(c, fh, off, len, buf, stable, verfs);
          },
          [&e, fh](const Cred& c, WriteVerf* verf) { return e.commit(c, fh, verf); },
          max_retained) {}

UnstableWriter::UnstableWriter(WriteFn write, CommitFn commit, size_t max_retained)
    : write_(std::move(write)), commit_(std::move(commit)), max_retained_(max_retained) {}

size_t UnstableWriter::retained_bytes() {
  std::lock_guard<std::mutex> g(mu_);
  return retained_bytes_;
}

// Keeps [OFF, OFF+len) as the newest bytes of that range: older pieces are cut back.
void UnstableWriter::retain_locked(uint64_t off, std::string data, WriteVerf verf) {
  const uint64_t end = off + data.size();
  auto it = retained_.lower_bound(off);
  if (it != retained_.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second.data.size() > off) it = prev;
  }
  while (it != retained_.end() && it->first < end) {
    const uint64_t poff = it->first, pend = poff + it->second.data.size();
    Piece old = std::move(it->second);
    it = retained_.erase(it);
    retained_bytes_ -= old.data.size();
    if (poff < off) {
      retained_bytes_ += off - poff;
      retained_.emplace(poff, Piece{old.data.substr(0, off - poff), old.verf});
    }
    if (pend > end) {
      retained_bytes_ += pend - end;
      retained_.emplace(end, Piece{old.data.substr(end - poff), old.verf});
    }
  }
  retained_bytes_ += data.size();
  retained_.emplace(off, Piece{std::move(data), verf});
}

ssize_t UnstableWriter::write(const Cred& c, uint64_t off, const char* buf, size_t len) {
  bool full;
  ssize_t n;
  {
    std::shared_lock<std::shared_mutex> wl(commit_mu_);
    std::vector<Engine::PieceVerf> verfs;
    n = write_(c, off, len, buf, UNSTABLE, &verfs);
    if (n <= 0) return n;
    std::lock_guard<std::mutex> g(mu_);
    for (const auto& v : verfs) retain_locked(v.off, std::string(buf + (v.off - off), v.len), v.verf);
    full = retained_bytes_ > max_retained_;
  }
  if (full) {
    // Bounded memory: commit now, as the kernel does under writeback pressure.
    int rv = commit(c);
    if (rv < 0) return rv;
  }
  return n;
}

int UnstableWriter::commit(const Cred& c) {
  std::unique_lock<std::shared_mutex> cl(commit_mu_);
  return commit_locked(c);
}

int UnstableWriter::commit_locked(const Cred& c) {
  std::map<uint64_t, Piece> pieces;
  {
    std::lock_guard<std::mutex> g(mu_);
    pieces.swap(retained_);
    retained_bytes_ = 0;
  }
  if (pieces.empty()) return 0;
  WriteVerf verf = 0;
  int rv = commit_(c, &verf);
  if (rv < 0) {
    // Keep the data: a later commit (fsync again, close) tries once more.
    std::lock_guard<std::mutex> g(mu_);
    for (auto& p : pieces) retain_locked(p.first, std::move(p.second.data), p.second.verf);
    return rv;
  }
  size_t bytes = 0, count = 0;
  for (auto& p : pieces)
    if (p.second.verf != verf) {
      bytes += p.second.data.size();
      ++count;
    }
  if (count == 0) return 0;
  // The server restarted since these were written: its unstable data may be gone.
  SHIM_LOG_WARN("write verifier changed (server restarted): re-sending {} bytes in {} pieces", bytes, count);
  for (auto& p : pieces) {
    if (p.second.verf == verf) continue;
    const std::string& d = p.second.data;
    ssize_t n = write_(c, p.first, d.size(), d.data(), FILE_SYNC, nullptr);
    if (n < 0) return static_cast<int>(n);
    if (static_cast<size_t>(n) != d.size()) return -EIO;
    resent_bytes_.fetch_add(d.size());
  }
  return 0;  // FILE_SYNC data is stable: nothing of it is left to check
}

}  // namespace nfsshim::nfs
