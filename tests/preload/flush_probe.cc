// flush_probe DIR: how many NFS WRITEs an unlink of an open file sends while another file
// of this process has unwritten data. The plain unlink sends none (the client only renames);
// under the preload the reference scan looks at every descriptor, and must not make the
// client write that data back (an fstat does: nfs_getattr flushes to update mtime).
// Prints "writes N" (the WRITE count of this mount in /proc/self/mountstats, after - before).
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

static long nfs_writes() {
  // "WRITE: ops ..." lines of the per-op statistics; the guest has one NFS mount.
  std::ifstream in("/proc/self/mountstats");
  std::string line;
  long total = 0;
  while (std::getline(in, line)) {
    size_t at = line.find_first_not_of(" \t");
    if (at != std::string::npos && line.compare(at, 6, "WRITE:") == 0)
      total += std::strtol(line.c_str() + at + 6, nullptr, 10);
  }
  return total;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  std::string dir = argv[1];
  int dirty = open((dir + "/dirty").c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  int held = open((dir + "/held").c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (dirty < 0 || held < 0) return std::perror("open"), 1;
  if (write(held, "x", 1) != 1 || fsync(held) != 0) return std::perror("held"), 1;
  std::vector<char> buf(1 << 20, 'd');
  for (int i = 0; i < 4; ++i)  // 4 MiB, not written back yet (no fsync, no close)
    if (write(dirty, buf.data(), buf.size()) != static_cast<ssize_t>(buf.size())) return std::perror("write"), 1;
  long before = nfs_writes();
  if (unlink((dir + "/held").c_str()) != 0) return std::perror("unlink"), 1;
  long after = nfs_writes();
  std::printf("writes %ld\n", after - before);
  close(held);
  close(dirty);
  unlink((dir + "/dirty").c_str());
  return 0;
}
