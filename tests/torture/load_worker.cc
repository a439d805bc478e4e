// One worker process of the Kafka-like load. Threads: appenders (segment appends and
// rolls, index written through a mapping whose fd is closed), fetchers (pread on the
// segment fd, mmap by path, reads of other workers' partitions), retention (rename to
// .deleted, then unlink, while readers still hold the segment), partition admin
// (rename the whole dir to *-delete, unlink everything, rmdir, while fds and mappings
// are open; or move it by renaming the dir) and checkpoints (write tmp + rename over a
// target another thread holds open).
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "common.h"
#include "load.h"
#include "pattern.h"
#include "sigbus_report.h"
#include "verify.h"

namespace torture {
namespace {

constexpr size_t kCheckpointSize = 8192;
constexpr size_t kMaxChunk = 64 * 1024;

const WorkerOptions* opt;
std::atomic<uint64_t> id_counter{1};

uint64_t next_id() {
  return (static_cast<uint64_t>(opt->slot & 0x7fff) << 48) |
         (static_cast<uint64_t>(opt->gen & 0xfff) << 36) | (id_counter++ & 0xfffffffffull);
}

double wall() { return static_cast<double>(std::time(nullptr)); }
bool running() { return !g_stop && wall() < opt->end_time; }
void pause_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

// Counts a verification of [OFF, OFF+N) of ID read into BUF.
void tally(uint64_t id, uint64_t off, const uint8_t* buf, size_t n, const std::string& what) {
  size_t ok = good_prefix(id, off, buf, n);
  g_count.bytes_verified += ok;
  if (ok != n) {
    g_count.bytes_lost += n - ok;
    std::fprintf(stderr, "torture[%d]: DATA MISMATCH in %s at offset %llu (+%zu of %zu)\n", getpid(),
                 what.c_str(), static_cast<unsigned long long>(off), ok, n);
  }
}

struct Segment {
  uint64_t id = 0;
  int fd = -1;
  std::atomic<uint64_t> size{0};
  uint8_t* idx = nullptr;  // the index mapping (its fd is closed, as Kafka does)
  size_t idx_cap = 0;
  std::atomic<size_t> idx_written{0};
  std::string log_name() const { return hex16(id) + ".log"; }
  std::string idx_name() const { return hex16(id) + ".index"; }
  ~Segment() {
    if (fd >= 0) ::close(fd);
    if (idx) ::munmap(idx, idx_cap);
  }
};
using SegPtr = std::shared_ptr<Segment>;

struct Partition {
  std::mutex m;
  std::string dir;
  int number = 0, moves = 0;
  std::deque<SegPtr> segs;
  std::deque<std::pair<double, std::string>> pending;  // *.deleted names, when to unlink
};
std::vector<std::unique_ptr<Partition>> parts;

size_t index_capacity() {
  return std::max<size_t>(16384, std::min<size_t>(1 << 20, opt->roll_bytes / 8));
}

// Creates a segment (log + preallocated, mapped index) in DIR, or nullptr.
SegPtr new_segment(const std::string& dir) {
  auto s = std::make_shared<Segment>();
  s->id = next_id();
  std::string log = dir + "/" + s->log_name();
  s->fd = ::open(log.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (s->fd < 0) return note_error("create", log, errno, false), nullptr;
  uint8_t hdr[kHeaderSize];
  fill(s->id, 0, hdr, sizeof hdr);
  if (::pwrite(s->fd, hdr, sizeof hdr, 0) != static_cast<ssize_t>(sizeof hdr)) {
    note_error("write header", log, errno, false);
    ::unlink(log.c_str());
    return nullptr;
  }
  s->size = sizeof hdr;
  g_count.bytes_written += sizeof hdr;
  std::string ip = dir + "/" + s->idx_name();
  int ifd = ::open(ip.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (ifd < 0) return note_error("create index", ip, errno, false), s;
  size_t cap = index_capacity();
  // Allocated, not sparse: a full filesystem must fail here, not SIGBUS in the mapping.
  int rc = ::posix_fallocate(ifd, 0, static_cast<off_t>(cap));
  if (rc == EOPNOTSUPP && !g_policy.enospc_ok) rc = ::ftruncate(ifd, static_cast<off_t>(cap)) ? errno : 0;
  if (rc != 0) {
    note_error("fallocate index", ip, rc, false);
    ::close(ifd);
    ::unlink(ip.c_str());
    return s;
  }
  void* m = ::mmap(nullptr, cap, PROT_READ | PROT_WRITE, MAP_SHARED, ifd, 0);
  ::close(ifd);
  if (m == MAP_FAILED) return note_error("mmap index", ip, errno, false), s;
  s->idx = static_cast<uint8_t*>(m);
  s->idx_cap = cap;
  fill(s->id ^ kIndexBit, 0, s->idx, kHeaderSize);
  s->idx_written = kHeaderSize;
  return s;
}

std::string partition_dir(int n, int moves) {
  std::string d = opt->dir + "/p" + std::to_string(opt->slot) + "-g" + std::to_string(opt->gen) +
                  "-" + std::to_string(n);
  return moves ? d + "-m" + std::to_string(moves) : d;
}

std::atomic<int> partition_seq{0};

// A fresh partition: a new directory and its first segment.
void open_partition(Partition* p) {
  p->number = partition_seq++;
  p->moves = 0;
  p->dir = partition_dir(p->number, p->moves);
  if (::mkdir(p->dir.c_str(), 0755) != 0) note_error("mkdir", p->dir, errno, false);
  if (SegPtr s = new_segment(p->dir)) p->segs.push_back(s);
}

// Unlinks every entry of DIR and removes it (Kafka's partition delete). Returns
// false if the directory stayed.
bool delete_dir(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return note_error("opendir", dir, errno, true), false;
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d))
    if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, "..")) names.push_back(e->d_name);
  ::closedir(d);
  for (auto& n : names) {
    std::string p = dir + "/" + n;
    if (::unlink(p.c_str()) != 0) note_error("unlink", p, errno, true);
    ++g_count.ops;
  }
  if (::rmdir(dir.c_str()) != 0) return note_error("rmdir", dir, errno, false), false;
  return true;
}

void appender(unsigned seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> buf(kMaxChunk);
  while (running()) {
    Partition& p = *parts[rng() % parts.size()];
    std::lock_guard<std::mutex> lk(p.m);
    if (p.segs.empty()) {
      if (SegPtr s = new_segment(p.dir)) p.segs.push_back(s);
      continue;
    }
    Segment& s = *p.segs.back();
    size_t n = 4096 + rng() % (kMaxChunk - 4096);
    uint64_t off = s.size;
    fill(s.id, off, buf.data(), n);
    ssize_t w = ::pwrite(s.fd, buf.data(), n, static_cast<off_t>(off));
    if (w < 0) {
      note_error("append", p.dir + "/" + s.log_name(), errno, false);
      continue;
    }
    s.size += static_cast<uint64_t>(w);
    g_count.bytes_written += static_cast<uint64_t>(w);
    ++g_count.ops;
    size_t iw = s.idx_written, m = std::max<size_t>(8, static_cast<size_t>(w) / 64);
    if (s.idx && iw + m <= s.idx_cap) {
      fill(s.id ^ kIndexBit, iw, s.idx + iw, m);
      s.idx_written = iw + m;
    }
    if (s.size >= opt->roll_bytes) {
      if (SegPtr ns = new_segment(p.dir)) {
        p.segs.push_back(ns);
        ++g_count.rolls;
      }
    }
  }
}

// A reference to a random segment of a random partition, and the size it had then.
SegPtr pick(std::mt19937_64& rng, std::string* path, uint64_t* size) {
  Partition& p = *parts[rng() % parts.size()];
  std::lock_guard<std::mutex> lk(p.m);
  if (p.segs.empty()) return nullptr;
  SegPtr s = p.segs[rng() % p.segs.size()];
  *path = p.dir + "/" + s->log_name();
  *size = s->size;
  return s;
}

void fetch_pread(std::mt19937_64& rng, std::vector<uint8_t>& buf) {
  std::string path;
  uint64_t size = 0;
  SegPtr s = pick(rng, &path, &size);
  if (!s) return;
  for (int i = 0; i < 3 && running(); ++i) {  // held while retention may delete it
    uint64_t off = rng() % size;
    size_t n = static_cast<size_t>(std::min<uint64_t>(size - off, 1 + rng() % kMaxChunk));
    ssize_t r = ::pread(s->fd, buf.data(), n, static_cast<off_t>(off));
    if (r < 0) {
      note_error("pread", path, errno, false);
      return;
    }
    tally(s->id, off, buf.data(), static_cast<size_t>(r), path);
    size_t iw = s->idx_written;
    if (s->idx) tally(s->id ^ kIndexBit, 0, s->idx, iw, path + " (index mapping)");
    ++g_count.fetches;
    ++g_count.ops;
    pause_ms(1);
  }
}

void fetch_mmap(std::mt19937_64& rng) {
  std::string path;
  uint64_t size = 0;
  SegPtr s = pick(rng, &path, &size);
  if (!s) return;
  uint64_t id = s->id;
  s.reset();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return note_error("open", path, errno, true);
  void* m = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  int err = errno;
  ::close(fd);
  if (m == MAP_FAILED) return note_error("mmap", path, err, false);
  pause_ms(2);  // the mapping alone holds the file now
  tally(id, 0, static_cast<uint8_t*>(m), size, path + " (mmap)");
  ::munmap(m, size);
  ++g_count.fetches;
  ++g_count.ops;
}

// Reads a segment of another worker, which may delete or move it meanwhile.
void fetch_cross(std::mt19937_64& rng, std::vector<uint8_t>& buf) {
  std::string mine = "p" + std::to_string(opt->slot) + "-";
  std::vector<std::string> dirs;
  if (DIR* d = ::opendir(opt->dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n[0] == 'p' && n.compare(0, mine.size(), mine) != 0 && n.find("-delete") == std::string::npos)
        dirs.push_back(n);
    }
    ::closedir(d);
  }
  if (dirs.empty()) return;
  std::string dir = opt->dir + "/" + dirs[rng() % dirs.size()];
  std::vector<std::string> logs;
  DIR* d = ::opendir(dir.c_str());
  // The NFS client may answer ESTALE for a directory another process just removed: the
  // shim covers regular files, not directories, so this is counted apart, not failed.
  if (!d && errno == ESTALE) return void(++g_count.stale_dirs);
  if (!d) return note_error("opendir", dir, errno, true);
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n.size() == 20 && n.compare(16, 4, ".log") == 0) logs.push_back(n);
  }
  ::closedir(d);
  if (logs.empty()) return;
  std::string name = logs[rng() % logs.size()], path = dir + "/" + name;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return note_error("open", path, errno, true);
  pause_ms(5);
  struct stat st;
  if (::fstat(fd, &st) == 0 && st.st_size > 0) {
    uint64_t off = rng() % static_cast<uint64_t>(st.st_size);
    size_t n = static_cast<size_t>(std::min<uint64_t>(st.st_size - off, kMaxChunk));
    ssize_t r = ::pread(fd, buf.data(), n, static_cast<off_t>(off));
    if (r < 0) note_error("pread", path, errno, false);
    else tally(id_from_name(name), off, buf.data(), static_cast<size_t>(r), path + " (cross)");
  }
  ::close(fd);
  ++g_count.cross_reads;
  ++g_count.ops;
}

void fetcher(unsigned seed, int kind) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> buf(kMaxChunk);
  while (running()) {
    if (kind == 0) fetch_pread(rng, buf);
    else if (kind == 1) fetch_mmap(rng);
    else fetch_cross(rng, buf);
    if (kind != 0) pause_ms(1);
  }
}

// Kafka: rename to .deleted at once, unlink after file.delete.delay.ms (here 30 ms).
void retention() {
  while (running()) {
    pause_ms(5);
    for (auto& pp : parts) {
      Partition& p = *pp;
      SegPtr old;
      {
        std::lock_guard<std::mutex> lk(p.m);
        while (!p.pending.empty() && p.pending.front().first < now_s()) {
          std::string path = p.dir + "/" + p.pending.front().second;
          if (::unlink(path.c_str()) != 0) note_error("unlink", path, errno, false);
          p.pending.pop_front();
          ++g_count.ops;
        }
        if (static_cast<int>(p.segs.size()) <= opt->keep_segments) continue;
        old = p.segs.front();
        p.segs.pop_front();
        for (const std::string& n : {old->log_name(), old->idx_name()}) {
          std::string from = p.dir + "/" + n, to = from + ".deleted";
          if (::rename(from.c_str(), to.c_str()) != 0) {
            if (!(errno == ENOENT && n == old->idx_name())) note_error("rename", from, errno, false);
            continue;
          }
          p.pending.emplace_back(now_s() + 0.03, n + ".deleted");
          ++g_count.ops;
        }
        ++g_count.retention_deletes;
      }
      // OLD (fd and index mapping) goes when the last fetcher drops it.
    }
  }
}

void admin(unsigned seed) {
  std::mt19937_64 rng(seed);
  while (running()) {
    pause_ms(100 + static_cast<int>(rng() % 300));
    if (!running()) break;
    Partition& p = *parts[rng() % parts.size()];
    std::deque<SegPtr> dropped;
    std::lock_guard<std::mutex> lk(p.m);
    if (rng() % 2) {  // delete: the segments stay open and mapped until after rmdir
      std::string del = p.dir + "." + hex16(rng()) + "-delete";
      if (::rename(p.dir.c_str(), del.c_str()) != 0) {
        note_error("rename", p.dir, errno, false);
        continue;
      }
      if (delete_dir(del)) ++g_count.partition_deletes;
      dropped.swap(p.segs);
      p.pending.clear();
      open_partition(&p);
    } else {  // move: appends continue on the open fds
      std::string to = partition_dir(p.number, p.moves + 1);
      if (::rename(p.dir.c_str(), to.c_str()) != 0) {
        note_error("rename", p.dir, errno, false);
        continue;
      }
      p.dir = to;
      ++p.moves;
      ++g_count.partition_moves;
    }
    ++g_count.ops;
  }
}

std::string checkpoint_dir() { return opt->dir + "/cp" + std::to_string(opt->slot); }
std::atomic<uint64_t> last_checkpoint{0};

void checkpoint_writer() {
  std::vector<uint8_t> buf(kCheckpointSize);
  std::string tmp = checkpoint_dir() + "/ckpt.tmp", dst = checkpoint_dir() + "/ckpt";
  for (unsigned i = 0; running(); ++i) {
    uint64_t id = next_id();
    fill(id, 0, buf.data(), buf.size());
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
      note_error("open", tmp, errno, false);
      pause_ms(5);
      continue;
    }
    ssize_t w = ::write(fd, buf.data(), buf.size());
    int err = errno;
    if (w == static_cast<ssize_t>(buf.size()) && i % 8 == 0 && ::fdatasync(fd) != 0) w = -1, err = errno;
    ::close(fd);
    if (w != static_cast<ssize_t>(buf.size())) {
      note_error("write", tmp, w < 0 ? err : ENOSPC, false);
      ::unlink(tmp.c_str());
    } else if (::rename(tmp.c_str(), dst.c_str()) != 0) {
      note_error("rename", tmp, errno, false);
    } else {
      last_checkpoint = id;
      g_count.bytes_written += buf.size();
      ++g_count.checkpoints;
    }
    ++g_count.ops;
    pause_ms(3);
  }
}

// Holds the checkpoint open across the writer's rename over it, then reads it all.
void checkpoint_reader() {
  std::vector<uint8_t> buf(kCheckpointSize + 1);
  std::string dst = checkpoint_dir() + "/ckpt";
  while (running()) {
    int fd = ::open(dst.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      note_error("open", dst, errno, true);
      pause_ms(2);
      continue;
    }
    pause_ms(4);
    ssize_t r = ::pread(fd, buf.data(), buf.size(), 0);
    ::close(fd);
    uint64_t id = 0;
    if (r < 0) {
      note_error("pread", dst, errno, false);
    } else if (r != static_cast<ssize_t>(kCheckpointSize) || !parse_header(buf.data(), &id)) {
      g_count.bytes_lost += kCheckpointSize;
      std::fprintf(stderr, "torture[%d]: DATA MISMATCH: checkpoint read %zd bytes\n", getpid(), r);
    } else {
      tally(id, 0, buf.data(), kCheckpointSize, dst);
    }
    ++g_count.ops;
  }
}

// Verifies and removes what earlier generations of this slot left (a SIGKILLed worker's
// partitions), the way a restarted broker recovers its log dir.
void recover() {
  std::string mine = "p" + std::to_string(opt->slot) + "-", cp = "cp" + std::to_string(opt->slot);
  std::vector<std::string> dirs;
  if (DIR* d = ::opendir(opt->dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n.compare(0, mine.size(), mine) == 0 || n == cp) dirs.push_back(opt->dir + "/" + n);
    }
    ::closedir(d);
  }
  for (auto& dir : dirs) {
    TreeCheck t = check_tree(dir, "", true, false);
    g_count.recovered_files += t.files;
    g_count.bytes_verified += t.good;
    g_count.bytes_lost += t.bad;
    g_count.zero_pages += t.zero_pages;
    if (t.bad) std::fprintf(stderr, "torture[%d]: DATA MISMATCH in recovery: %s\n", getpid(), t.first_problem.c_str());
    if (dir.compare(dir.size() - cp.size(), cp.size(), cp) == 0) {
      // keep the checkpoint dir, drop its files
      for (const char* n : {"/ckpt", "/ckpt.tmp"})
        if (::unlink((dir + n).c_str()) != 0) note_error("unlink", dir + n, errno, true);
    } else if (delete_dir(dir)) {
      ++g_count.partition_deletes;
    }
  }
}

// At the end: every segment this worker still has must be there, whole, by name.
void final_check() {
  for (auto& pp : parts) {
    Partition& p = *pp;
    std::lock_guard<std::mutex> lk(p.m);
    for (auto& s : p.segs) {
      std::string path = p.dir + "/" + s->log_name();
      int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) {
        note_error("final open", path, errno, false);
        g_count.bytes_lost += s->size;
        continue;
      }
      struct stat st;
      ::fstat(fd, &st);
      FileCheck c = verify_fd(fd, s->id, false);
      ::close(fd);
      g_count.bytes_verified += c.good;
      uint64_t missing = s->size > c.good ? s->size - c.good : 0;
      if (c.bad || missing || static_cast<uint64_t>(st.st_size) != s->size) {
        g_count.bytes_lost += std::max<uint64_t>(c.bad, missing);
        std::fprintf(stderr, "torture[%d]: DATA MISMATCH at the end: %s has %lld bytes (%llu written), %llu bad\n",
                     getpid(), path.c_str(), static_cast<long long>(st.st_size),
                     static_cast<unsigned long long>(s->size.load()), static_cast<unsigned long long>(c.bad));
      }
      if (s->idx) tally(s->id ^ kIndexBit, 0, s->idx, s->idx_written, path + " (index at end)");
    }
  }
  uint64_t id = last_checkpoint;
  if (!id) return;
  std::string dst = checkpoint_dir() + "/ckpt";
  int fd = ::open(dst.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return note_error("final open", dst, errno, false);
  FileCheck c = verify_fd(fd, id, false);
  ::close(fd);
  g_count.bytes_verified += c.good;
  if (c.bad || c.good != kCheckpointSize) {
    g_count.bytes_lost += kCheckpointSize;
    std::fprintf(stderr, "torture[%d]: DATA MISMATCH: last checkpoint not in place\n", getpid());
  }
}

void report(char kind) {
  std::string l = std::string(1, kind) + " " + g_count.line() + "\n";
  if (::write(3, l.data(), l.size()) < 0) {
  }  // the supervisor may be gone; nothing to do
}

}  // namespace

int run_worker(const WorkerOptions& o) {
  opt = &o;
  install_sigbus_report();
  recover();
  std::string cp = checkpoint_dir();
  if (::mkdir(cp.c_str(), 0755) != 0 && errno != EEXIST) note_error("mkdir", cp, errno, false);
  for (int i = 0; i < o.partitions; ++i) {
    parts.push_back(std::make_unique<Partition>());
    open_partition(parts.back().get());
  }
  std::vector<std::thread> th;
  unsigned seed = o.seed * 7919u + static_cast<unsigned>(o.slot) * 131u + static_cast<unsigned>(o.gen);
  int appenders = std::max(1, o.threads / 2);
  for (int i = 0; i < appenders; ++i) th.emplace_back(appender, seed + i);
  for (int i = appenders; i < o.threads; ++i) th.emplace_back(fetcher, seed + i, i % 3);
  th.emplace_back(retention);
  th.emplace_back(admin, seed + 1000);
  th.emplace_back(checkpoint_writer);
  th.emplace_back(checkpoint_reader);
  while (running()) {
    report('S');
    pause_ms(200);
  }
  for (auto& t : th) t.join();
  if (!g_stop) final_check();
  parts.clear();  // close every fd, drop every mapping
  report('F');
  bool ok = g_count.forbidden == 0 && g_count.unexpected == 0 && g_count.bytes_lost == 0;
  return ok ? 0 : 1;
}

}  // namespace torture
