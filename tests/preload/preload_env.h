// Helpers for tests that run under LD_PRELOAD=libnfsshim-preload.so with
// NFSSHIM_WATCH naming a scratch directory (set by CTest).
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "nfsshim/entry_name.h"

namespace shimtest {

inline std::string watch_root() {
  const char* w = std::getenv("NFSSHIM_WATCH");
  return w ? w : "";
}

inline std::string graveyard_dir() {
  return watch_root() + "/.graveyard.nfsshim/u" + std::to_string(geteuid());
}

// Entries owned by PID (default: this process) in the watch root's graveyard. Uses
// getdents-free listing through the shim's own readdir, which only hides the
// graveyard directory itself, not what is inside.
inline std::vector<std::string> entries_of(pid_t pid = getpid()) {
  std::vector<std::string> out;
  DIR* d = opendir(graveyard_dir().c_str());
  if (!d) return out;
  while (struct dirent* e = readdir(d)) {
    auto n = nfsshim::EntryName::parse(e->d_name);
    if (n && n->owner.pid == pid) out.push_back(e->d_name);
  }
  closedir(d);
  return out;
}

inline bool exists(const std::string& p) {
  struct stat st;
  return lstat(p.c_str(), &st) == 0;
}

inline void write_file(const std::string& p, const std::string& data) {
  int fd = open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) std::abort();
  if (write(fd, data.data(), data.size()) != static_cast<ssize_t>(data.size())) std::abort();
  close(fd);
}

inline std::string read_fd(int fd) {
  std::string s(65536, '\0');
  ssize_t n = pread(fd, &s[0], s.size(), 0);
  s.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return s;
}

inline std::string read_file(const std::string& p) {
  int fd = open(p.c_str(), O_RDONLY);
  if (fd < 0) return "<missing>";
  std::string s = read_fd(fd);
  close(fd);
  return s;
}

// Removes PATH and everything below it (in-process: no shell, no rm under the preload).
inline void remove_tree(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return;
  if (S_ISDIR(st.st_mode)) {
    if (DIR* d = opendir(path.c_str())) {
      std::vector<std::string> names;
      while (struct dirent* e = readdir(d))
        if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") names.push_back(e->d_name);
      closedir(d);
      for (const auto& n : names) remove_tree(path + "/" + n);
    }
    rmdir(path.c_str());
  } else {
    unlink(path.c_str());
  }
}

// A fresh directory below the watch root for one test.
inline std::string fresh_dir(const std::string& name) {
  std::string d = watch_root() + "/" + name + "." + std::to_string(getpid());
  remove_tree(d);
  if (mkdir(d.c_str(), 0755) != 0) std::abort();
  return d;
}

}  // namespace shimtest
