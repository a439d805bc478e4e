#include <cstdio>
#include <cstdlib>

#include "nfs/nfs_fs.h"
#include "nfsshim/log.h"

namespace nfsshim::fuse::nfsfs {

NodeTable::NodeTable(const nfs::Fh& root) {
  auto n = std::make_shared<Node>(FUSE_ROOT_ID, root);
  n->nlookup = 1;  // the kernel never forgets the root
  by_ino_[FUSE_ROOT_ID] = n;
  by_fh_[root.data] = FUSE_ROOT_ID;
}

std::shared_ptr<Node> NodeTable::get(uint64_t ino) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = by_ino_.find(ino);
  return it == by_ino_.end() ? nullptr : it->second;
}

std::shared_ptr<Node> NodeTable::find(const nfs::Fh& fh) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = by_fh_.find(fh.data);
  return it == by_fh_.end() ? nullptr : by_ino_[it->second];
}

std::shared_ptr<Node> NodeTable::find_or_add_locked(const nfs::Fh& fh) {
  auto it = by_fh_.find(fh.data);
  if (it != by_fh_.end()) return by_ino_[it->second];
  auto n = std::make_shared<Node>(next_++, fh);
  by_ino_[n->ino] = n;
  by_fh_[fh.data] = n->ino;
  return n;
}

std::shared_ptr<Node> NodeTable::remember(const nfs::Fh& fh) {
  std::lock_guard<std::mutex> g(mu_);
  std::shared_ptr<Node> n = find_or_add_locked(fh);
  std::lock_guard<std::mutex> ng(n->mu);
  ++n->nlookup;
  return n;
}

std::shared_ptr<Node> NodeTable::pin(const nfs::Fh& fh) {
  std::lock_guard<std::mutex> g(mu_);
  return find_or_add_locked(fh);
}

void NodeTable::forget(uint64_t ino, uint64_t count) {
  if (ino == FUSE_ROOT_ID) return;
  std::lock_guard<std::mutex> g(mu_);
  auto it = by_ino_.find(ino);
  if (it == by_ino_.end()) return;
  std::shared_ptr<Node> n = it->second;
  std::lock_guard<std::mutex> ng(n->mu);
  if (count > n->nlookup) {
    SHIM_LOG_ERROR("[ino {}] forget {} > lookup count {}", ino, count, n->nlookup);
#ifndef NDEBUG
    std::abort();
#endif
    count = n->nlookup;
  }
  n->nlookup -= count;
  if (n->nlookup == 0 && n->nopen == 0) {
    by_fh_.erase(n->fh.data);
    by_ino_.erase(it);
  }
}

void NodeTable::maybe_drop(const std::shared_ptr<Node>& n) {
  if (n->ino == FUSE_ROOT_ID) return;
  std::lock_guard<std::mutex> g(mu_);
  std::lock_guard<std::mutex> ng(n->mu);
  auto it = by_ino_.find(n->ino);
  if (it == by_ino_.end() || it->second != n) return;
  if (n->nlookup == 0 && n->nopen == 0) {
    by_fh_.erase(n->fh.data);
    by_ino_.erase(it);
  }
}

}  // namespace nfsshim::fuse::nfsfs
