#include "inode_table.h"

#include <cassert>
#include <cstdlib>

#include "nfsshim/log.h"

namespace nfsshim::fuse {

InodeTable::InodeTable(sys::Fd root_fd, const struct stat& st) {
  // Slot 0 is never used (ino 0 means "no inode" to the kernel); slot 1 with generation 0
  // is FUSE_ROOT_ID.
  slots_.resize(2);
  slots_[1].inode = std::make_shared<Inode>(std::move(root_fd), key_of(st), st.st_mode & S_IFMT);
  slots_[1].nlookup = 1;
  by_key_[key_of(st)] = 1;
  static_assert(FUSE_ROOT_ID == 1, "root is slot 1, generation 0");
}

std::shared_ptr<Inode> InodeTable::get(fuse_ino_t ino) const {
  uint64_t slot = ino & 0xffffffffu;
  uint32_t gen = static_cast<uint32_t>(ino >> 32);
  std::lock_guard<std::mutex> lock(mu_);
  if (slot == 0 || slot >= slots_.size()) return nullptr;
  const Slot& s = slots_[slot];
  if (!s.inode || s.gen != gen) return nullptr;
  return s.inode;
}

std::shared_ptr<Inode> InodeTable::find(const InodeKey& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_key_.find(key);
  return it == by_key_.end() ? nullptr : slots_[it->second].inode;
}

fuse_ino_t InodeTable::add_lookup(sys::Fd fd, const struct stat& st, uint64_t* generation) {
  InodeKey key = key_of(st);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_key_.find(key);
  if (it != by_key_.end()) {
    Slot& s = slots_[it->second];
    ++s.nlookup;
    *generation = s.gen;
    return make_ino(it->second, s.gen);  // FD closes here: the inode has one already
  }
  uint32_t slot;
  if (!free_.empty()) {
    slot = free_.back();
    free_.pop_back();
  } else {
    slots_.emplace_back();
    slot = static_cast<uint32_t>(slots_.size() - 1);
  }
  Slot& s = slots_[slot];
  s.inode = std::make_shared<Inode>(std::move(fd), key, st.st_mode & S_IFMT);
  s.nlookup = 1;
  s.made = made_.load(std::memory_order_relaxed) + 1;
  made_.store(s.made, std::memory_order_release);
  by_key_[key] = slot;
  *generation = s.gen;
  return make_ino(slot, s.gen);
}

fuse_ino_t InodeTable::add_known_lookup(const InodeKey& key, uint64_t made, uint64_t* generation) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_key_.find(key);
  if (it == by_key_.end()) return 0;
  Slot& s = slots_[it->second];
  if (s.made > made) return 0;
  ++s.nlookup;
  *generation = s.gen;
  return make_ino(it->second, s.gen);
}

void InodeTable::forget(fuse_ino_t ino, uint64_t n) {
  uint64_t slot = ino & 0xffffffffu;
  uint32_t gen = static_cast<uint32_t>(ino >> 32);
  std::shared_ptr<Inode> dropped;  // released after the lock: closing may be slow (NFS)
  std::lock_guard<std::mutex> lock(mu_);
  if (slot <= 1 || slot >= slots_.size()) return;  // root stays; unknown: nothing to do
  Slot& s = slots_[slot];
  if (!s.inode || s.gen != gen) {
    SHIM_LOG_ERROR("[ino {:#x}] forget of an unknown inode", ino);
    return;
  }
  if (n > s.nlookup) {
    // The kernel never forgets more than it looked up: our count is wrong.
    SHIM_LOG_ERROR("[ino {:#x}] negative lookup count ({} - {})", ino, s.nlookup, n);
    assert(!"negative lookup count");
    n = s.nlookup;
  }
  s.nlookup -= n;
  if (s.nlookup > 0) return;
  auto it = by_key_.find(s.inode->key);
  if (it != by_key_.end() && it->second == slot) by_key_.erase(it);  // unless retired
  dropped = std::move(s.inode);
  ++s.gen;  // the old number is stale from now on
  free_.push_back(static_cast<uint32_t>(slot));
}

void InodeTable::retire(const Inode& inode) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_key_.find(inode.key);
  if (it != by_key_.end() && slots_[it->second].inode.get() == &inode) by_key_.erase(it);
}

std::vector<std::shared_ptr<Inode>> InodeTable::all() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<Inode>> out;
  for (const Slot& s : slots_)
    if (s.inode) out.push_back(s.inode);
  return out;
}

size_t InodeTable::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return by_key_.size();
}

}  // namespace nfsshim::fuse
