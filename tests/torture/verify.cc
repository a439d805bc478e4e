#include "verify.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "common.h"
#include "pattern.h"

namespace torture {

static bool all_zero(const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (p[i]) return false;
  return true;
}

FileCheck verify_fd(int fd, uint64_t expect_id, bool zeros_ok) {
  FileCheck r;
  constexpr size_t kPage = 4096, kChunk = 256 * kPage;
  std::vector<uint8_t> buf(kChunk);
  uint64_t id = expect_id;
  uint64_t off = 0;
  for (;;) {
    ssize_t n = ::pread(fd, buf.data(), kChunk, static_cast<off_t>(off));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (off == 0 && id == 0) {
      uint64_t hid = 0;
      if (static_cast<size_t>(n) >= kHeaderSize && parse_header(buf.data(), &hid)) id = hid;
    }
    for (size_t p = 0; p < static_cast<size_t>(n); p += kPage) {
      size_t len = std::min(kPage, static_cast<size_t>(n) - p);
      size_t ok = id ? good_prefix(id, off + p, buf.data() + p, len) : 0;
      if (ok == len) {
        r.good += len;
      } else if (zeros_ok && all_zero(buf.data() + p + ok, len - ok)) {
        // written up to OK, never past it (the end of what a mapping or a crash left)
        r.good += ok;
        if (ok == 0) ++r.zero_pages;
      } else if (off + p == 0 && id == 0 && len < kHeaderSize) {
        r.good += len;  // a file cut short before its header was complete
      } else {
        r.good += ok;
        r.bad += len - ok;
      }
    }
    off += static_cast<uint64_t>(n);
  }
  return r;
}

bool is_index_name(const std::string& name) { return name.find(".index") != std::string::npos; }

uint64_t id_from_name(const std::string& name) {
  if (name.size() < 17 || name[16] != '.') return 0;
  uint64_t v = 0;
  for (int i = 0; i < 16; ++i) {
    char c = name[i];
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) return 0;
    v = v << 4 | static_cast<uint64_t>(d);
  }
  return is_index_name(name) ? v ^ kIndexBit : v;
}

static void walk(int dfd, const std::string& path, int depth, bool in_graveyard,
                 const std::string& graveyard_name, bool verify, bool zeros_ok, TreeCheck* t) {
  DIR* d = ::fdopendir(dfd);
  if (!d) {
    ::close(dfd);
    return;
  }
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    if (name_is_silly(name.c_str())) {
      ++t->silly;
      if (t->first_problem.empty()) t->first_problem = "silly-rename leftover " + path + "/" + name;
    }
    struct stat st;
    if (::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    bool is_grave = depth == 0 && name == graveyard_name;
    if (in_graveyard && depth == 2) ++t->graveyard_entries;
    if (S_ISDIR(st.st_mode)) {
      int sub = ::openat(::dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub >= 0)
        walk(sub, path + "/" + name, depth + 1, in_graveyard || is_grave, graveyard_name, verify,
             zeros_ok, t);
    } else if (S_ISREG(st.st_mode) && !in_graveyard && verify) {
      int fd = ::openat(::dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
      if (fd < 0) continue;
      FileCheck c = verify_fd(fd, id_from_name(name), zeros_ok || is_index_name(name));
      ::close(fd);
      ++t->files;
      t->good += c.good;
      t->bad += c.bad;
      t->zero_pages += c.zero_pages;
      if (c.bad && t->first_problem.empty())
        t->first_problem = std::to_string(c.bad) + " bad bytes in " + path + "/" + name;
    }
  }
  ::closedir(d);
}

TreeCheck check_tree(const std::string& root, const std::string& graveyard_name, bool verify,
                     bool zeros_ok) {
  TreeCheck t;
  int fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    t.first_problem = "cannot open " + root + ": " + std::strerror(errno);
    return t;
  }
  walk(fd, root, 0, false, graveyard_name, verify, zeros_ok, &t);
  return t;
}

}  // namespace torture
