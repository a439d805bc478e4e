// kafka_pattern DIR - do on DIR exactly what an Apache Kafka broker does when it deletes a
// partition (LogManager.asyncDelete + UnifiedLog.delete), with plain libc calls, and report
// every step as "OK <step>" or "FAIL <step>: <what> (<errno>)", then "RESULT PASS|FAIL".
// Exit status: 0 pass, 1 fail, 2 bad usage. KafkaPattern.java is the same test in Java.
//
// Why: on NFS (and libfuse filesystems) a file unlinked while an fd or a mapping still holds it
// is silly-renamed (.nfsXXXX / .fuse_hiddenXXXX), so the final rmdir fails with ENOTEMPTY
// and the broker takes the whole log dir offline. A local filesystem passes.
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace {

constexpr size_t kLogSize = 1 << 20;    // first segment: 1 MiB
constexpr size_t kLog2Size = 64 << 10;  // second segment
constexpr size_t kIdxSize = 64 << 10;   // index files (Kafka preallocates them, then maps)
constexpr int kEntries = 1000;          // index entries written through the mapping
const char* const kSeg0 = "00000000000000000000";
const char* const kSeg1 = "00000000000000001000";
const char* const kGraveyard = ".graveyard.nfsshim";  // the shim's own directory: not ours

struct Err {
  std::string what;
  int err;
};
[[noreturn]] void die(const std::string& what, int err = errno) { throw Err{what, err}; }

bool g_failed = false;

std::string errname(int e) {
  static const struct { int e; const char* n; } names[] = {
      {ENOENT, "ENOENT"}, {EEXIST, "EEXIST"},   {EBUSY, "EBUSY"},   {ENOTEMPTY, "ENOTEMPTY"},
      {EACCES, "EACCES"}, {EPERM, "EPERM"},     {EIO, "EIO"},       {ESTALE, "ESTALE"},
      {EXDEV, "EXDEV"},   {EINVAL, "EINVAL"},   {ENOTDIR, "ENOTDIR"}, {EISDIR, "EISDIR"},
      {EROFS, "EROFS"},   {ENOSPC, "ENOSPC"},   {EBADF, "EBADF"},   {ENOMEM, "ENOMEM"},
      {ENOSYS, "ENOSYS"}, {EAGAIN, "EAGAIN"},   {EINTR, "EINTR"},   {ENAMETOOLONG, "ENAMETOOLONG"}};
  for (const auto& n : names)
    if (n.e == e) return std::string(n.n) + ": " + std::strerror(e);
  return "errno " + std::to_string(e) + ": " + std::strerror(e);
}

void fail(const std::string& step, const std::string& what, int err) {
  g_failed = true;
  std::printf("FAIL %s: %s%s\n", step.c_str(), what.c_str(), err ? (" (" + errname(err) + ")").c_str() : "");
  std::fflush(stdout);
}

// Runs one step; an Err thrown inside becomes its FAIL line.
template <class F>
bool step(const char* name, F body) {
  try {
    body();
  } catch (const Err& e) {
    fail(name, e.what, e.err);
    return false;
  }
  std::printf("OK %s\n", name);
  std::fflush(stdout);
  return true;
}

// Deterministic, position-dependent content (same formula in KafkaPattern.java).
uint8_t pat(uint32_t pos, uint32_t seed) {
  uint32_t x = pos * 2654435761u + seed;
  return uint8_t(x ^ (x >> 15));
}

// Expected image of an index file: Kafka's big-endian entries, zeros after them.
// offset index: (relOffset int32, position int32); time index: (timestamp int64, relOffset int32).
std::vector<uint8_t> index_image(bool time_index) {
  std::vector<uint8_t> img(kIdxSize, 0);
  size_t at = 0;
  auto put = [&](uint64_t v, int bytes) {
    for (int b = bytes - 1; b >= 0; --b) img[at++] = uint8_t(v >> (8 * b));
  };
  for (int i = 0; i < kEntries; ++i) {
    if (time_index) put(1700000000000ull + 1000ull * i, 8);
    put(uint32_t(i * 10), 4);
    if (!time_index) put(uint32_t(i * 1024), 4);
  }
  return img;
}

void write_all(int fd, const void* buf, size_t n, const std::string& what) {
  const char* p = static_cast<const char*>(buf);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) die("write " + what);
    p += w;
    n -= size_t(w);
  }
}

std::string pread_all(int fd, size_t n, const std::string& what) {
  std::string out(n, '\0');
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::pread(fd, &out[got], n - got, off_t(got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) die("pread " + what);
    if (r == 0) die(what + ": short read, " + std::to_string(got) + " of " + std::to_string(n) + " bytes", 0);
    got += size_t(r);
  }
  return out;
}

// Like Kafka's checkpoint writers: write, fsync, close.
void write_file(const std::string& path, const std::string& data) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) die("create " + path);
  write_all(fd, data.data(), data.size(), path);
  if (::fsync(fd) != 0) die("fsync " + path);
  if (::close(fd) != 0) die("close " + path);
}

std::string read_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) die("open " + path);
  struct stat st{};
  if (::fstat(fd, &st) != 0) die("fstat " + path);
  std::string s = pread_all(fd, size_t(st.st_size), path);
  ::close(fd);
  return s;
}

// Kafka's Utils.flushDir after every atomic move.
void fsync_dir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) die("open dir " + dir);
  if (::fsync(fd) != 0) die("fsync dir " + dir);
  ::close(fd);
}

void verify_log(int fd, size_t size, uint32_t seed, const std::string& what) {
  // Drop cached pages first so the bytes come from the file, not from the page cache (Java has
  // no fadvise: KafkaPattern may be served from the cache here).
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  std::string data = pread_all(fd, size, what);
  for (size_t i = 0; i < size; ++i)
    if (uint8_t(data[i]) != pat(uint32_t(i), seed)) die(what + ": wrong byte at offset " + std::to_string(i), 0);
}

// Entries of a directory, "." and ".." excluded; empty if it cannot be read.
std::set<std::string> list_dir(const std::string& dir) {
  std::set<std::string> out;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d))
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) out.insert(e->d_name);
    ::closedir(d);
  }
  return out;
}

std::string join(const std::set<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

bool exists(const std::string& path) {
  struct stat st{};
  return ::lstat(path.c_str(), &st) == 0;
}

// Cleanup only: delete a directory's entries and the directory, retrying while hidden files
// (.nfs* / .fuse_hidden*) go away after their last close. Returns the errno of the last try.
int remove_tree(const std::string& dir) {
  int err = 0;
  for (int attempt = 0; attempt < 50; ++attempt) {
    for (const auto& n : list_dir(dir)) ::unlink((dir + "/" + n).c_str());
    if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) return 0;
    err = errno;
    ::usleep(100 * 1000);
  }
  return err;
}

std::string uuid32() {
  std::random_device rd;
  char buf[33];
  for (int i = 0; i < 4; ++i) std::snprintf(buf + 8 * i, 9, "%08x", unsigned(rd()));
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  struct stat st{};
  if (argc != 2 || ::stat(argv[1], &st) != 0 || !S_ISDIR(st.st_mode)) {
    std::fprintf(stderr, "usage: kafka_pattern DIR   (DIR: an existing directory on the filesystem under test)\n");
    return 2;
  }
  const std::string base = argv[1];
  const std::set<std::string> before = list_dir(base);
  const std::string part = base + "/orders-7";
  const std::string ckpt = base + "/replication-offset-checkpoint";
  std::string cur = part;  // where the partition directory lives now
  bool made_part = false, made_ckpt = false;
  int writer = -1, reader = -1, log2 = -1;
  struct Map { std::string name; bool time; void* p; };
  std::vector<Map> maps = {{std::string(kSeg0) + ".index", false, MAP_FAILED},
                           {std::string(kSeg0) + ".timeindex", true, MAP_FAILED},
                           {std::string(kSeg1) + ".index", false, MAP_FAILED}};
  std::vector<std::string> seg_files = {std::string(kSeg0) + ".log", maps[0].name, maps[1].name,
                                        std::string(kSeg1) + ".log", maps[2].name};

  // a. A partition as a broker leaves it: segments open, indexes held by their mapping only.
  bool setup_ok = step("setup", [&] {
    if (::mkdir(part.c_str(), 0755) != 0) die("mkdir " + part);
    made_part = true;
    auto make_log = [&](const std::string& name, size_t size, uint32_t seed) {
      int fd = ::open((part + "/" + name).c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      if (fd < 0) die("create " + name);
      std::vector<uint8_t> chunk(64 << 10);  // appended in batches, like produce requests
      for (size_t off = 0; off < size; off += chunk.size()) {
        for (size_t i = 0; i < chunk.size(); ++i) chunk[i] = pat(uint32_t(off + i), seed);
        write_all(fd, chunk.data(), chunk.size(), name);
      }
      if (::fdatasync(fd) != 0) die("fdatasync " + name);
      return fd;
    };
    writer = make_log(seg_files[0], kLogSize, 1);
    log2 = make_log(seg_files[3], kLog2Size, 2);
    for (auto& m : maps) {  // AbstractIndex: open, set length, map, close the file
      std::string path = part + "/" + m.name;
      int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      if (fd < 0) die("create " + m.name);
      if (::ftruncate(fd, off_t(kIdxSize)) != 0) die("ftruncate " + m.name);
      m.p = ::mmap(nullptr, kIdxSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (m.p == MAP_FAILED) die("mmap " + m.name);
      std::vector<uint8_t> img = index_image(m.time);
      std::memcpy(m.p, img.data(), kIdxSize);
      if (::msync(m.p, kIdxSize, MS_SYNC) != 0) die("msync " + m.name);
      if (::close(fd) != 0) die("close " + m.name);
    }
    write_file(part + "/leader-epoch-checkpoint", "0\n1\n0 0\n");
    write_file(part + "/partition.metadata", "version: 0\ntopic_id: q1ZVw8ZkR3OAHk5dlRXzhg\n");
    reader = ::open((part + "/" + seg_files[0]).c_str(), O_RDONLY | O_CLOEXEC);  // a fetch session
    if (reader < 0) die("open reader " + seg_files[0]);
  });

  if (setup_ok) {
    // b. Checkpoint replace (Utils.atomicMoveWithFallback) while a reader holds the old file.
    step("checkpoint-replace", [&] {
      const std::string oldc = "0\n1\norders 7 0\n", newc = "0\n1\norders 7 1000\n";
      write_file(ckpt, oldc);
      made_ckpt = true;
      int held = ::open(ckpt.c_str(), O_RDONLY | O_CLOEXEC);
      if (held < 0) die("open " + ckpt);
      struct Closer { int fd; ~Closer() { ::close(fd); } } closer{held};
      write_file(ckpt + ".tmp", newc);
      if (::rename((ckpt + ".tmp").c_str(), ckpt.c_str()) != 0) die("rename .tmp over checkpoint");
      fsync_dir(base);
      if (pread_all(held, oldc.size(), "held checkpoint fd") != oldc) die("held fd does not read the old content", 0);
      if (read_file(ckpt) != newc) die("checkpoint name does not have the new content", 0);
    });

    // c. Step 1 (LogManager.asyncDelete): rename the directory with everything still open.
    step("rename-dir", [&] {
      std::string del = part + "." + uuid32() + "-delete";
      if (::rename(part.c_str(), del.c_str()) != 0) die("rename " + part + " -> " + del);
      cur = del;
      fsync_dir(base);
    });

    // d. Step 2 (LocalLog.deleteSegmentFiles): segment files become *.deleted, still open/mapped.
    step("rename-segments", [&] {
      for (const auto& n : seg_files)
        if (::rename((cur + "/" + n).c_str(), (cur + "/" + n + ".deleted").c_str()) != 0) die("rename " + n);
      fsync_dir(cur);
    });

    // e. Step 3: an in-flight fetch still reads the whole segment through its own fd.
    step("fetch-read", [&] { verify_log(reader, kLogSize, 1, "reader fd"); });

    // f. Step 4 (Utils.delete): walk and unlink every entry (remove() for some, as File.delete
    // does), then rmdir. Like Files.walkFileTree the walk reads the directory while deleting.
    Err first{"", 0};
    step("delete-entries", [&] {
      DIR* d = ::opendir(cur.c_str());
      if (!d) die("opendir " + cur);
      int visited = 0;  // bound: on libfuse an unlinked hidden file is hidden again under a new name
      while (dirent* e = ::readdir(d)) {
        std::string n = e->d_name;
        if (n == "." || n == ".." || ++visited > 100) continue;
        bool use_remove = n == "partition.metadata" || n.find(".timeindex") != std::string::npos;
        int rc = use_remove ? ::remove((cur + "/" + n).c_str()) : ::unlink((cur + "/" + n).c_str());
        if (rc != 0 && first.what.empty()) first = Err{(use_remove ? "remove " : "unlink ") + n, errno};
      }
      ::closedir(d);
      if (!first.what.empty()) throw first;
    });
    bool rmdir_ok = step("rmdir", [&] {
      if (::rmdir(cur.c_str()) != 0) die("rmdir " + cur);
      if (exists(cur)) die(cur + " still exists after rmdir", 0);
    });
    if (!rmdir_ok) {
      std::set<std::string> left = list_dir(cur);
      fail("leftovers", "after rmdir " + cur + " holds: " + (left.empty() ? "(nothing listed)" : join(left)), 0);
    }

    // g. The holders are unaffected by the deletes, and the names are free for reuse at once.
    step("reread-after-delete", [&] {
      verify_log(reader, kLogSize, 1, "reader fd");
      verify_log(log2, kLog2Size, 2, "second segment fd");
    });
    step("index-mappings", [&] {
      for (const auto& m : maps)
        if (std::memcmp(m.p, index_image(m.time).data(), kIdxSize) != 0) die(m.name + ": mapping changed", 0);
    });
    step("recreate-name", [&] {
      if (::mkdir(part.c_str(), 0755) != 0) die("mkdir " + part + " again");
      made_part = true;
      std::string path = part + "/" + seg_files[0], data(4096, '\0');
      for (size_t i = 0; i < data.size(); ++i) data[i] = char(pat(uint32_t(i), 3));
      write_file(path, data);
      if (read_file(path) != data) die("re-created " + path + " reads wrong data", 0);
      if (::unlink(path.c_str()) != 0) die("unlink re-created " + path);
      if (::rmdir(part.c_str()) != 0) die("rmdir re-created " + part);
      made_part = false;
    });
  }

  step("close-all", [&] {
    Err err{"", 0};
    for (int* fd : {&writer, &reader, &log2})
      if (*fd >= 0 && ::close(*fd) != 0 && err.what.empty()) err = Err{"close", errno};
    for (auto& m : maps)
      if (m.p != MAP_FAILED && ::munmap(m.p, kIdxSize) != 0 && err.what.empty()) err = Err{"munmap " + m.name, errno};
    writer = reader = log2 = -1;
    if (!err.what.empty()) throw err;
  });

  // Leave DIR as it was: remove what is still there, then compare with the listing at start.
  step("cleanup", [&] {
    std::string what;
    std::vector<std::string> dirs;  // only directories this run created
    if (cur != part) dirs.push_back(cur);
    if (made_part) dirs.push_back(part);
    for (const auto& d : dirs)
      if (exists(d))
        if (int e = remove_tree(d)) what += "cannot remove " + d + " (" + errname(e) + "); ";
    if (made_ckpt && ::unlink(ckpt.c_str()) != 0 && errno != ENOENT) what += "unlink " + ckpt + "; ";
    if (!before.count("replication-offset-checkpoint.tmp")) ::unlink((ckpt + ".tmp").c_str());
    std::set<std::string> extra;
    for (int attempt = 0; attempt < 50; ++attempt) {  // hidden files vanish after the last close
      extra.clear();
      for (const auto& n : list_dir(base))
        if (!before.count(n) && n != kGraveyard) extra.insert(n);
      if (extra.empty()) break;
      ::usleep(100 * 1000);
    }
    if (!extra.empty()) what += "left in " + base + ": " + join(extra);
    if (!what.empty()) die(what, 0);
  });

  std::printf("RESULT %s\n", g_failed ? "FAIL" : "PASS");
  return g_failed ? 1 : 0;
}
