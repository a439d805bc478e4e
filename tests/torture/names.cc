// Hostile names and shapes: delete-while-open of files with 255-byte names, non-UTF-8
// bytes, newlines and silly-rename look-alike names; a file at the bottom of a tree
// deeper than PATH_MAX; a directory of very many entries deleted while some are open.
// Every case must end with the directory removable and the data read back whole.
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "common.h"
#include "names.h"
#include "pattern.h"
#include "verify.h"

namespace torture {
namespace {

int failures = 0;
uint64_t checked = 0, ops = 0;

void fail(const std::string& what, int err) {
  ++failures;
  std::string shown;
  for (unsigned char c : what) shown += (c < 0x20 || c >= 0x7f) ? "\\x" + hex16(c).substr(14) : std::string(1, c);
  std::printf("names: FAIL %s: %s\n", shown.c_str(), err ? std::strerror(err) : "wrong result");
}

// Creates DIRFD/NAME with SIZE pattern bytes of ID; returns an open fd or -1.
int make_file(int dirfd, const std::string& name, uint64_t id, size_t size) {
  int fd = ::openat(dirfd, name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return fail("create " + name, errno), -1;
  std::vector<uint8_t> b(size);
  fill(id, 0, b.data(), size);
  if (::write(fd, b.data(), size) != static_cast<ssize_t>(size)) fail("write " + name, errno);
  ++ops;
  return fd;
}

void expect_whole(int fd, uint64_t id, size_t size, const std::string& what) {
  FileCheck c = verify_fd(fd, id, false);
  checked += c.good;
  if (c.bad || c.good != size) fail("content after delete of " + what, 0);
}

struct Held {
  int fd = -1;
  void* map = nullptr;
  uint64_t id = 0;
  size_t size = 0;
  std::string what;
};

// Reads a held file back whole (fd and mapping), after its name and directory are gone.
void release(Held& h) {
  expect_whole(h.fd, h.id, h.size, h.what);
  if (h.map) {
    size_t ok = good_prefix(h.id, 0, static_cast<uint8_t*>(h.map), h.size);
    checked += ok;
    if (ok != h.size) fail("mapping after delete of " + h.what, 0);
    ::munmap(h.map, h.size);
  }
  ::close(h.fd);
}

// Open (fd and mapping), unlink, re-create the name and delete it again. The file stays
// held (released after its directory is removed).
void delete_while_open(int dirfd, const std::string& name, uint64_t id, std::vector<Held>* held) {
  Held h;
  h.size = 65536;
  h.id = id;
  h.what = name;
  h.fd = make_file(dirfd, name, id, h.size);
  if (h.fd < 0) return;
  void* m = ::mmap(nullptr, h.size, PROT_READ, MAP_SHARED, h.fd, 0);
  if (m == MAP_FAILED) fail("mmap " + name, errno);
  else h.map = m;
  if (::unlinkat(dirfd, name.c_str(), 0) != 0) fail("unlink " + name, errno);
  struct stat st;
  if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT)
    fail("name still there after unlink: " + name, 0);
  int again = make_file(dirfd, name, id + 1, 100);  // the name is free at once
  if (again >= 0) {
    ::close(again);
    if (::unlinkat(dirfd, name.c_str(), 0) != 0) fail("unlink (again) " + name, errno);
  }
  held->push_back(h);
  ops += 3;
}

void hostile_names(const std::string& dir) {
  std::string base = dir + "/hostile";
  if (::mkdir(base.c_str(), 0755) != 0) return fail("mkdir " + base, errno);
  int dfd = ::open(base.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  std::vector<std::string> names = {
      std::string(255, 'L'),
      std::string(250, 'x') + "\xff\xfe\x80\xc3",
      "bad-utf8-\xff\xfe\x80\xc3\x28-\xed\xa0\x80",
      "new\nline\n",
      "\n",
      " leading and trailing space ",
      "-dash",
      "glob*?[x]",
      ".nfs0000000000abcdef00000001",
      ".fuse_hidden0000002a00000001",
      ".graveyard.nfsshim-lookalike",
      "tab\there",
      "\x01\x02\x1b[31mescape",
  };
  uint64_t id = 0x4e414d4500000000ull;
  std::vector<Held> held_files;
  for (auto& n : names) delete_while_open(dfd, n, id += 16, &held_files);
  // rename over an open target with a hostile name
  int held = make_file(dfd, names[0], 77, 4096), src = make_file(dfd, names[3], 78, 4096);
  if (held >= 0 && src >= 0) {
    if (::renameat(dfd, names[3].c_str(), dfd, names[0].c_str()) != 0) fail("rename over " + names[0], errno);
    expect_whole(held, 77, 4096, "renamed-over " + names[0]);
    if (::unlinkat(dfd, names[0].c_str(), 0) != 0) fail("unlink " + names[0], errno);
  }
  ::close(dfd);
  if (::rmdir(base.c_str()) != 0) fail("rmdir " + base + " while its deleted files are open", errno);
  for (auto& h : held_files) release(h);
  if (held >= 0) ::close(held);
  if (src >= 0) ::close(src);
  std::printf("names: %zu hostile names deleted while open\n", names.size() + 1);
}

// A chain of DEPTH directories with long names (the path is far beyond PATH_MAX),
// a held file at the bottom deleted while open, the top renamed meanwhile.
void deep_tree(const std::string& dir, int depth, size_t component_len) {
  std::string top = dir + "/deep";
  if (::mkdir(top.c_str(), 0755) != 0) return fail("mkdir " + top, errno);
  std::vector<int> fds = {::open(top.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  const std::string comp = "d" + std::string(component_len > 1 ? component_len - 1 : 0, '-');
  for (int i = 0; i < depth; ++i) {
    if (::mkdirat(fds.back(), comp.c_str(), 0755) != 0) return fail("mkdirat depth " + std::to_string(i), errno);
    int f = ::openat(fds.back(), comp.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (f < 0) return fail("openat depth " + std::to_string(i), errno);
    fds.push_back(f);
    ++ops;
  }
  const std::string name = std::string(200, 'D') + "\n\xff";
  int fd = make_file(fds.back(), name, 0xdee9, 1 << 16);
  std::string moved = dir + "/deep-moved";
  if (::rename(top.c_str(), moved.c_str()) != 0) fail("rename deep top", errno);
  if (fd >= 0 && ::unlinkat(fds.back(), name.c_str(), 0) != 0) fail("unlink at depth " + std::to_string(depth), errno);
  for (int i = depth; i > 0; --i) {  // the whole tree goes while the file is open
    ::close(fds[i]);
    if (::unlinkat(fds[i - 1], comp.c_str(), AT_REMOVEDIR) != 0) {
      fail("rmdir depth " + std::to_string(i), errno);
      for (int j = i - 1; j > 0; --j) ::close(fds[j]);
      break;
    }
    ++ops;
  }
  ::close(fds[0]);
  if (::rmdir(moved.c_str()) != 0) fail("rmdir " + moved, errno);
  if (fd >= 0) {
    expect_whole(fd, 0xdee9, 1 << 16, "deep file");
    ::close(fd);
  }
  std::printf("names: depth %d (path %zu bytes) deleted while open\n", depth, top.size() + depth * (comp.size() + 1) + name.size());
}

// COUNT entries, some held open, all deleted by a readdir walk, then rmdir.
void many_entries(const std::string& dir, long count) {
  std::string base = dir + "/many";
  if (::mkdir(base.c_str(), 0755) != 0) return fail("mkdir " + base, errno);
  int dfd = ::open(base.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  long every = std::max(1L, count / 64);
  std::vector<std::pair<int, uint64_t>> held;
  double t0 = now_s();
  for (long i = 0; i < count; ++i) {
    char n[32];
    std::snprintf(n, sizeof n, "e%09ld", i);
    int fd = make_file(dfd, n, 0x6d616e79000000ull + i, 32);
    if (fd < 0) break;
    if (i % every == 0) held.emplace_back(fd, 0x6d616e79000000ull + i);
    else ::close(fd);
  }
  double t1 = now_s();
  long deleted = 0;
  for (int pass = 0; pass < 3; ++pass) {  // a readdir walk, like Files.walk + delete
    DIR* d = ::opendir(base.c_str());
    if (!d) return fail("opendir " + base, errno);
    std::vector<std::string> names;
    while (dirent* e = ::readdir(d))
      if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, "..")) names.push_back(e->d_name);
    ::closedir(d);
    if (names.empty()) break;
    for (auto& n : names) {
      if (::unlinkat(dfd, n.c_str(), 0) != 0) fail("unlink many/" + n, errno);
      else ++deleted;
      ++ops;
    }
  }
  ::close(dfd);
  if (deleted != count) fail("deleted " + std::to_string(deleted) + " of " + std::to_string(count), 0);
  if (::rmdir(base.c_str()) != 0) fail("rmdir " + base + " while some of its files are open", errno);
  for (auto& h : held) {
    expect_whole(h.first, h.second, 32, "one of many");
    ::close(h.first);
  }
  std::printf("names: %ld entries (%zu held open) created in %.1f s, deleted in %.1f s\n", count, held.size(),
              t1 - t0, now_s() - t1);
}

}  // namespace

int run_names(const std::string& dir, int depth, size_t component_len, long entries) {
  hostile_names(dir);
  deep_tree(dir, depth, component_len);
  many_entries(dir, entries);
  std::printf("FIGURES names ops=%llu faults=0 survived=0 verified=%llu lost=0 rss=%ld daemon_rss=0 %s\n",
              static_cast<unsigned long long>(ops), static_cast<unsigned long long>(checked), rss_kib(getpid()),
              failures ? "FAIL" : "PASS");
  return failures ? 1 : 0;
}

}  // namespace torture
