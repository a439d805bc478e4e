#include "nfsshim/mount_table.h"

#include <fcntl.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <sstream>

#include "nfsshim/sys.h"

namespace nfsshim {

// mountinfo escapes space, tab, newline and backslash as \ooo.
static std::string unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && s.size() - i >= 4 && s[i + 1] >= '0' && s[i + 1] <= '7' && s[i + 2] >= '0' && s[i + 2] <= '7' &&
        s[i + 3] >= '0' && s[i + 3] <= '7') {
      out.push_back(static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

std::vector<Mount> parse_mountinfo(const std::string& text) {
  std::vector<Mount> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    // id parent major:minor root point options [optional fields...] - fstype source superopts
    std::istringstream ls(line);
    std::vector<std::string> f;
    std::string w;
    while (ls >> w) f.push_back(w);
    size_t dash = 0;
    for (size_t i = 6; i < f.size(); ++i)
      if (f[i] == "-") {
        dash = i;
        break;
      }
    if (dash == 0 || f.size() < dash + 3) continue;
    Mount m;
    m.id = std::atoi(f[0].c_str());
    unsigned maj = 0, min = 0;
    if (std::sscanf(f[2].c_str(), "%u:%u", &maj, &min) != 2) continue;
    m.dev = makedev(maj, min);
    m.root = unescape(f[3]);
    m.point = unescape(f[4]);
    m.options = f[5];
    m.fstype = f[dash + 1];
    m.source = unescape(f[dash + 2]);
    if (dash + 3 < f.size()) m.super_options = f[dash + 3];
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<Mount> read_mountinfo(const char* path, bool* ok) {
  if (ok) *ok = false;
  // Read whole, however long (a host full of containers has more than 7000 mounts, 1 MiB),
  // in one pass. No exception leaves: the preload calls this from noexcept wrappers.
  try {
    sys::Fd fd(sys::openat(AT_FDCWD, path, O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) return {};
    std::string text;
    size_t used = 0;
    for (;;) {
      if (text.size() - used < (size_t{64} << 10)) text.resize(std::max(text.size() * 2, size_t{1} << 20));
      ssize_t n = sys::read(fd.get(), &text[used], text.size() - used);
      if (n == -EINTR) continue;
      if (n < 0) return {};
      if (n == 0) break;
      used += static_cast<size_t>(n);
    }
    if (used == 0) return {};
    text.resize(used);
    auto mounts = parse_mountinfo(text);
    if (ok) *ok = true;
    return mounts;
  } catch (const std::bad_alloc&) {
    return {};
  }
}

bool is_nfs_fstype(const std::string& fstype) { return fstype == "nfs" || fstype == "nfs4"; }

int fd_mount_id(int fd) {
  char rel[32];
  std::snprintf(rel, sizeof rel, "fdinfo/%d", fd);
  char buf[4096];
  ssize_t n = sys::with_proc_self(rel, [&](const char* path) {
    return sys::read_file(AT_FDCWD, path, buf, sizeof buf - 1);
  });
  if (n < 0) return static_cast<int>(n);
  buf[n] = '\0';
  for (char* p = buf; p && *p; ) {
    if (std::sscanf(p, "mnt_id: %d", &fd) == 1) return fd;
    p = std::strchr(p, '\n');
    if (p) ++p;
  }
  return -ENOENT;
}

std::string mount_option(const std::string& options, const std::string& key) {
  size_t pos = 0;
  while (pos <= options.size()) {
    size_t c = options.find(',', pos);
    std::string item = options.substr(pos, c == std::string::npos ? std::string::npos : c - pos);
    if (item.rfind(key + "=", 0) == 0) return item.substr(key.size() + 1);
    if (item == key) return key;
    if (c == std::string::npos) break;
    pos = c + 1;
  }
  return "";
}

}  // namespace nfsshim
