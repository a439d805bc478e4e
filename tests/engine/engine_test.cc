// The engine against a real nfs-ganesha (started by engine_test.sh). Environment:
//   NFSSHIM_TEST_URL      nfs:// URL of the export (nconnect and io vary per CTest test)
//   NFSSHIM_TEST_EXPORT   the exported directory on this host (FSAL VFS), to check bytes
//                         on the server side independently of our own reads
#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netdb.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <set>
#include <thread>

#include <nfsc/libnfs-raw-nfs.h>

#include "nfsshim/nfs/engine.h"

// A server name only this test binary resolves, to 127.0.0.1, and slowly (3 s, a DNS
// outage) while g_slow_dns is set: getaddrinfo below takes libnfs's calls too.
static std::atomic<bool> g_slow_dns{false};
static const char* const kSlowName = "nfsshim-slow-dns.test";

extern "C" int getaddrinfo(const char* node, const char* service, const struct addrinfo* hints,
                           struct addrinfo** res) {
  using Fn = int (*)(const char*, const char*, const struct addrinfo*, struct addrinfo**);
  static Fn real = reinterpret_cast<Fn>(::dlsym(RTLD_NEXT, "getaddrinfo"));
  if (node && std::strcmp(node, kSlowName) == 0) {
    if (g_slow_dns) std::this_thread::sleep_for(std::chrono::seconds(3));
    node = "127.0.0.1";
  }
  return real(node, service, hints, res);
}

namespace nfsshim::nfs {
namespace {

std::string env(const char* k) {
  const char* v = std::getenv(k);
  return v ? v : "";
}

class EngineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string url = env("NFSSHIM_TEST_URL");
    ASSERT_FALSE(url.empty()) << "NFSSHIM_TEST_URL not set (run through engine_test.sh)";
    NfsUrl u;
    std::string why;
    ASSERT_EQ(parse_nfs_url(url, &u, &why), 0) << why;
    ASSERT_EQ(Engine::open(u, &engine_, &why), 0) << why;
  }
  static void TearDownTestSuite() { engine_.reset(); }
  void SetUp() override {
    ASSERT_TRUE(engine_);
    cred_ = engine_->default_cred();
    // A fresh directory per test.
    dir_name_ = std::string("t_") + ::testing::UnitTest::GetInstance()->current_test_info()->name() + "_" +
                std::to_string(::getpid());
    ASSERT_EQ(engine_->mkdir(cred_, engine_->root(), dir_name_, 0755, &dir_, nullptr), 0);
  }
  static std::unique_ptr<Engine> engine_;
  Cred cred_;
  std::string dir_name_;
  Fh dir_;
};
std::unique_ptr<Engine> EngineTest::engine_;

TEST_F(EngineTest, BackendIsTheOneAskedFor) {
  NfsUrl u = engine_->url();
  if (u.io != IoBackend::kAuto) {
    EXPECT_EQ(engine_->backend(), u.io);
  }
  EXPECT_EQ(engine_->null_call(), 0);
  EXPECT_GE(engine_->rsize(), 4096u);
  EXPECT_GE(engine_->wsize(), 4096u);
}

TEST_F(EngineTest, MetadataOps) {
  Engine& e = *engine_;
  Fh f;
  Attr a;
  ASSERT_EQ(e.create(cred_, dir_, "f", 0640, true, &f, &a), 0);
  EXPECT_EQ(a.type, NF3REG);
  EXPECT_EQ(a.mode, 0640u);
  EXPECT_EQ(e.create(cred_, dir_, "f", 0640, true, nullptr, nullptr), -EEXIST);
  Fh f2;
  Attr a2;
  ASSERT_EQ(e.lookup(cred_, dir_, "f", &f2, &a2), 0);
  EXPECT_EQ(f2, f);
  EXPECT_EQ(a2.fileid, a.fileid);
  EXPECT_EQ(e.lookup(cred_, dir_, "nope", nullptr, nullptr), -ENOENT);

  ASSERT_EQ(e.write(cred_, f, 0, 5, "hello", FILE_SYNC, nullptr), 5);
  char buf[16] = {0};
  ASSERT_EQ(e.read(cred_, f, 0, sizeof buf, buf), 5);
  EXPECT_EQ(std::string(buf, 5), "hello");

  SetAttr sa;
  sa.set_size = true;
  sa.size = 2;
  sa.set_mode = true;
  sa.mode = 0600;
  Attr post;
  ASSERT_EQ(e.setattr(cred_, f, sa, &post), 0);
  ASSERT_EQ(e.getattr(cred_, f, &a), 0);
  EXPECT_EQ(a.size, 2u);
  EXPECT_EQ(a.mode, 0600u);

  uint32_t granted = 0;
  ASSERT_EQ(e.access(cred_, f, ACCESS3_READ | ACCESS3_MODIFY, &granted), 0);
  EXPECT_TRUE(granted & ACCESS3_READ);

  ASSERT_EQ(e.link(cred_, f, dir_, "hard"), 0);
  ASSERT_EQ(e.getattr(cred_, f, &a), 0);
  EXPECT_EQ(a.nlink, 2u);
  Fh s;
  ASSERT_EQ(e.symlink(cred_, dir_, "sym", "f", &s, &a), 0);
  EXPECT_EQ(a.type, NF3LNK);
  std::string target;
  ASSERT_EQ(e.readlink(cred_, s, &target), 0);
  EXPECT_EQ(target, "f");

  Fh sub;
  ASSERT_EQ(e.mkdir(cred_, dir_, "sub", 0755, &sub, &a), 0);
  EXPECT_EQ(a.type, NF3DIR);
  ASSERT_EQ(e.rename(cred_, dir_, "hard", sub, "moved"), 0);
  EXPECT_EQ(e.rmdir(cred_, dir_, "sub"), -ENOTEMPTY);
  EXPECT_EQ(e.remove(cred_, dir_, "hard"), -ENOENT);
  EXPECT_EQ(e.lookup(cred_, sub, "moved", nullptr, nullptr), 0);

  std::vector<DirEntry> ents;
  ASSERT_EQ(e.readdirplus(cred_, dir_, &ents), 0);
  std::set<std::string> names;
  for (auto& d : ents) {
    names.insert(d.name);
    if (d.name == "f") {
      EXPECT_TRUE(d.has_fh);
      EXPECT_EQ(d.fh, f);
      EXPECT_TRUE(d.has_attr);
    }
  }
  EXPECT_TRUE(names.count("f") && names.count("sym") && names.count("sub")) << ents.size();

  FsStat fs;
  ASSERT_EQ(e.fsstat(cred_, e.root(), &fs), 0);
  EXPECT_GT(fs.tbytes, 0u);

  EXPECT_EQ(e.remove(cred_, sub, "moved"), 0);
  EXPECT_EQ(e.rmdir(cred_, dir_, "sub"), 0);
  EXPECT_EQ(e.remove(cred_, dir_, "f"), 0);
  EXPECT_EQ(e.getattr(cred_, f, &a), -ESTALE);
}

TEST_F(EngineTest, ManyEntriesInOneDirectory) {
  // Several READDIRPLUS replies (cookies) for one listing.
  const int n = 600;
  for (int i = 0; i < n; ++i)
    ASSERT_EQ(engine_->create(cred_, dir_, "entry_with_a_long_name_" + std::to_string(i), 0644, false,
                              nullptr, nullptr), 0);
  std::vector<DirEntry> ents;
  ASSERT_EQ(engine_->readdirplus(cred_, dir_, &ents), 0);
  std::set<std::string> names;
  for (auto& d : ents) names.insert(d.name);
  for (int i = 0; i < n; ++i) EXPECT_TRUE(names.count("entry_with_a_long_name_" + std::to_string(i))) << i;
}

TEST_F(EngineTest, CallerCredentialsReachTheServer) {
  SetAttr open_up;  // let anyone create in the test directory
  open_up.set_mode = true;
  open_up.mode = 0777;
  ASSERT_EQ(engine_->setattr(cred_, dir_, open_up, nullptr), 0);
  Cred c;
  c.uid = 4242;
  c.gid = 4343;
  Fh f;
  Attr a;
  ASSERT_EQ(engine_->create(c, dir_, "owned", 0644, true, &f, &a), 0);
  EXPECT_EQ(a.uid, 4242u);
  EXPECT_EQ(a.gid, 4343u);
  // Another user cannot write the 0644 file it does not own.
  Cred other;
  other.uid = 5000;
  other.gid = 5000;
  EXPECT_EQ(engine_->write(other, f, 0, 1, "x", FILE_SYNC, nullptr), -EACCES);
}

// Deterministic content: byte at OFF of file SEED.
char pattern(uint64_t seed, uint64_t off) {
  uint64_t x = (off / 8) * 0x9E3779B97F4A7C15ull ^ (seed * 0xD1B54A32D192ED03ull);
  x ^= x >> 29;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 32;
  return static_cast<char>(x >> ((off % 8) * 8));
}

uint64_t fnv(const char* p, size_t n, uint64_t h = 1469598103934665603ull) {
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<unsigned char>(p[i])) * 1099511628211ull;
  return h;
}

// A read split into rsize pieces whose later pieces fail (fail_reads_from_for_test, as a
// soft mount's server that went away in the middle of it) fails as a whole. It returned
// the first pieces' bytes alone, and a FUSE read answered short is end of file to the
// kernel: a soft mount's EIO became a silently truncated copy.
TEST_F(EngineTest, AReadWhoseLaterPieceFailsFailsWhole) {
  NfsUrl u = engine_->url();
  u.rsize = 65536;
  std::unique_ptr<Engine> e;
  std::string why;
  ASSERT_EQ(Engine::open(u, &e, &why), 0) << why;
  ASSERT_EQ(e->rsize(), 65536u);
  Fh f;
  ASSERT_EQ(e->create(cred_, dir_, "pieces", 0644, false, &f, nullptr), 0);
  std::string data(4 * 65536, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>('a' + i % 23);
  ASSERT_EQ(e->write(cred_, f, 0, data.size(), data.data(), FILE_SYNC, nullptr),
            static_cast<ssize_t>(data.size()));
  std::string buf(data.size(), '\0');
  for (uint64_t at : {uint64_t{65536}, uint64_t{3 * 65536}, uint64_t{0}}) {
    e->fail_reads_from_for_test(at, -EIO);
    EXPECT_EQ(e->read(cred_, f, 0, buf.size(), &buf[0]), -EIO) << "pieces from " << at << " failed";
  }
  e->fail_reads_from_for_test(UINT64_MAX, 0);
  ASSERT_EQ(e->read(cred_, f, 0, buf.size(), &buf[0]), static_cast<ssize_t>(data.size()));
  EXPECT_TRUE(buf == data);
}

// A READ answered with no bytes and no eof in the middle of the file (a broken server;
// empty_reads_from_for_test) is EIO, as in the kernel's nfs_readpage_retry. It was passed
// on as a short read, which FUSE takes for end of file: the kernel cut its cached size
// there, and cp copied a truncated file without an error.
TEST_F(EngineTest, AReadWithoutBytesOrEofMidFileIsEio) {
  NfsUrl u = engine_->url();
  u.rsize = 65536;
  std::unique_ptr<Engine> e;
  std::string why;
  ASSERT_EQ(Engine::open(u, &e, &why), 0) << why;
  Fh f;
  ASSERT_EQ(e->create(cred_, dir_, "empty_reads", 0644, false, &f, nullptr), 0);
  std::string data(2 * 65536, 'x');
  ASSERT_EQ(e->write(cred_, f, 0, data.size(), data.data(), FILE_SYNC, nullptr),
            static_cast<ssize_t>(data.size()));
  std::string buf(data.size(), '\0');
  for (uint64_t at : {uint64_t{65536}, uint64_t{0}}) {
    e->empty_reads_from_for_test(at);
    EXPECT_EQ(e->read(cred_, f, 0, buf.size(), &buf[0]), -EIO) << "READs from " << at << " empty";
  }
  e->empty_reads_from_for_test(UINT64_MAX);
  ASSERT_EQ(e->read(cred_, f, 0, buf.size(), &buf[0]), static_cast<ssize_t>(data.size()));
  EXPECT_EQ(e->read(cred_, f, data.size(), 10, &buf[0]), 0) << "end of file (eof) stays 0";
}

// Many threads write large files in chunks of random sizes (some spanning many wsize
// pieces) UNSTABLE + COMMIT, then read them back in random chunks (many rsize pieces in
// parallel); every byte is compared, and the server's copy is checked on its disk too.
TEST_F(EngineTest, ParallelLargeFileIntegrity) {
  const int threads = 6;
  // NFSSHIM_TEST_FILE_MIB: smaller files for the sanitizer builds.
  size_t mib = env("NFSSHIM_TEST_FILE_MIB").empty() ? 24 : std::stoul(env("NFSSHIM_TEST_FILE_MIB"));
  const size_t file_size = (mib << 20) + 12345;  // not a multiple of anything
  std::vector<Fh> fhs(threads);
  for (int t = 0; t < threads; ++t)
    ASSERT_EQ(engine_->create(cred_, dir_, "big" + std::to_string(t), 0644, true, &fhs[t], nullptr), 0);
  EngineStats before = engine_->stats();
  std::vector<std::string> errors(threads);
  std::vector<uint64_t> sums(threads);
  auto writer = [&](int t) {
    UnstableWriter w(*engine_, fhs[t], file_size / 3);  // small bound: several COMMITs on the way
    std::mt19937_64 rng(t);
    std::string chunk;
    uint64_t h = 1469598103934665603ull;
    for (size_t off = 0; off < file_size;) {
      size_t n = std::min<size_t>(file_size - off, 1 + rng() % std::min<size_t>(5u << 20, file_size / 3));
      chunk.resize(n);
      for (size_t i = 0; i < n; ++i) chunk[i] = pattern(t, off + i);
      h = fnv(chunk.data(), n, h);
      ssize_t rv = w.write(cred_, off, chunk.data(), n);
      if (rv != static_cast<ssize_t>(n)) {
        errors[t] = "write at " + std::to_string(off) + " returned " + std::to_string(rv);
        return;
      }
      off += n;
    }
    int rv = w.commit(cred_);
    if (rv != 0) errors[t] = "commit returned " + std::to_string(rv);
    if (w.retained_bytes() != 0) errors[t] = "data retained after commit";
    sums[t] = h;
  };
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) ts.emplace_back(writer, t);
  for (auto& th : ts) th.join();
  ts.clear();
  for (int t = 0; t < threads; ++t) ASSERT_EQ(errors[t], "") << "thread " << t;

  auto reader = [&](int t) {
    std::mt19937_64 rng(100 + t);
    std::vector<char> buf;
    uint64_t h = 1469598103934665603ull;
    for (size_t off = 0; off < file_size;) {
      size_t n = std::min<size_t>(file_size - off, 1 + rng() % (9u << 20));
      buf.assign(n, 0);
      ssize_t rv = engine_->read(cred_, fhs[t], off, n, buf.data());
      if (rv != static_cast<ssize_t>(n)) {
        errors[t] = "read at " + std::to_string(off) + " returned " + std::to_string(rv);
        return;
      }
      for (size_t i = 0; i < n; ++i)
        if (buf[i] != pattern(t, off + i)) {
          errors[t] = "byte " + std::to_string(off + i) + " differs";
          return;
        }
      h = fnv(buf.data(), n, h);
      off += n;
    }
    if (h != sums[t]) errors[t] = "checksum differs";
    // Past the end: a short read, then nothing.
    buf.assign(100, 0);
    ssize_t rv = engine_->read(cred_, fhs[t], file_size - 10, 100, buf.data());
    if (rv != 10) errors[t] = "read across eof returned " + std::to_string(rv);
    rv = engine_->read(cred_, fhs[t], file_size + 10, 100, buf.data());
    if (rv != 0) errors[t] = "read past eof returned " + std::to_string(rv);
  };
  for (int t = 0; t < threads; ++t) ts.emplace_back(reader, t);
  for (auto& th : ts) th.join();
  for (int t = 0; t < threads; ++t) EXPECT_EQ(errors[t], "") << "thread " << t;

  // The server's own copy (FSAL VFS writes to this directory).
  std::string exp = env("NFSSHIM_TEST_EXPORT");
  if (!exp.empty()) {
    for (int t = 0; t < threads; ++t) {
      std::string path = exp + "/" + dir_name_ + "/big" + std::to_string(t);
      int fd = ::open(path.c_str(), O_RDONLY);
      ASSERT_GE(fd, 0) << path;
      std::vector<char> all(file_size + 1);
      size_t got = 0;
      ssize_t n;
      while ((n = ::read(fd, all.data() + got, all.size() - got)) > 0) got += static_cast<size_t>(n);
      ::close(fd);
      EXPECT_EQ(got, file_size) << path;
      EXPECT_EQ(fnv(all.data(), got), sums[t]) << path;
    }
  }

  // Least-loaded scheduling spread the pieces over every connection.
  EngineStats after = engine_->stats();
  ASSERT_EQ(after.calls_per_conn.size(), static_cast<size_t>(engine_->url().nconnect));
  // Every connection carried at least a quarter of a fair share.
  const uint64_t total = after.calls - before.calls, fair = total / after.calls_per_conn.size();
  for (size_t i = 0; i < after.calls_per_conn.size(); ++i)
    EXPECT_GE(after.calls_per_conn[i] - before.calls_per_conn[i], fair / 4) << "connection " << i;
  std::printf("calls %llu, per connection:", static_cast<unsigned long long>(after.calls - before.calls));
  for (size_t i = 0; i < after.calls_per_conn.size(); ++i)
    std::printf(" %llu", static_cast<unsigned long long>(after.calls_per_conn[i] - before.calls_per_conn[i]));
  std::printf("; loop syscalls %llu\n", static_cast<unsigned long long>(after.loop_syscalls - before.loop_syscalls));
}

// NFS3ERR_JUKEBOX ("busy, ask later"): another client (NFSv4.1, nfs4_deny_holder) holds the
// file open with DENY_WRITE, so ganesha answers our WRITEs (and SETATTR of the size) with
// JUKEBOX. Hard mount: the call waits, asking again, and succeeds once the other client
// closes; soft mount: -EIO after timeo x (retrans + 1). Before, -EAGAIN reached the caller
// (through FUSE: a write error, or SIGBUS on a mapping).
TEST_F(EngineTest, JukeboxIsWaitedOutThenTheCallSucceeds) {
  char self[4096] = {0};
  ASSERT_GT(::readlink("/proc/self/exe", self, sizeof self - 1), 0);
  std::string holder = std::string(self).substr(0, std::string(self).rfind('/')) + "/nfs4_deny_holder";
  ASSERT_EQ(::access(holder.c_str(), X_OK), 0) << holder;
  const std::string name = "jukebox_" + std::to_string(::getpid());
  Fh f;
  ASSERT_EQ(engine_->create(cred_, engine_->root(), name, 0644, true, &f, nullptr), 0);
  ASSERT_EQ(engine_->write(cred_, f, 0, 4, "abcd", kFileSync, nullptr), 4);

  // The other client, with a pipe to its stdin (closing it makes the client CLOSE).
  NfsUrl u = engine_->url();
  auto start_holder = [&](int* to_holder, FILE** from_holder) {
    int in[2], out[2];
    ASSERT_EQ(::pipe(in), 0);
    ASSERT_EQ(::pipe(out), 0);
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::dup2(in[0], 0);
      ::dup2(out[1], 1);
      ::close(in[1]);
      ::close(out[0]);
      ::execl(holder.c_str(), holder.c_str(), u.host.c_str(), std::to_string(u.nfsport).c_str(), name.c_str(),
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(in[0]);
    ::close(out[1]);
    *to_holder = in[1];
    *from_holder = ::fdopen(out[0], "r");
    char line[64] = {0};
    ASSERT_NE(std::fgets(line, sizeof line, *from_holder), nullptr);
    ASSERT_STREQ(line, "held\n");
  };

  int to_holder = -1;
  FILE* from_holder = nullptr;
  start_holder(&to_holder, &from_holder);
  const uint64_t before = engine_->stats().jukebox;
  std::atomic<bool> done{false};
  ssize_t wrote = 0;
  std::thread writer([&] {
    wrote = engine_->write(cred_, f, 4, 4, "efgh", kFileSync, nullptr);
    done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_FALSE(done) << "the WRITE did not wait for the other client's DENY_WRITE open";
  EXPECT_GE(engine_->stats().jukebox, before + 2);  // asked again, and again
  ::close(to_holder);
  char line[64] = {0};
  ASSERT_NE(std::fgets(line, sizeof line, from_holder), nullptr);
  EXPECT_STREQ(line, "closed\n");
  std::fclose(from_holder);
  ::wait(nullptr);
  writer.join();
  EXPECT_EQ(wrote, 4);
  char back[9] = {0};
  EXPECT_EQ(engine_->read(cred_, f, 0, 8, back), 8);
  EXPECT_STREQ(back, "abcdefgh");

  // Soft, timeo 0.5 s x (retrans 1 + 1): EIO after about a second, not an endless wait.
  u.hard = false;
  u.timeo_ds = 5;
  u.retrans = 1;
  std::unique_ptr<Engine> soft;
  std::string why;
  ASSERT_EQ(Engine::open(u, &soft, &why), 0) << why;
  start_holder(&to_holder, &from_holder);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(soft->write(soft->default_cred(), f, 8, 1, "i", kFileSync, nullptr), -EIO);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(secs, 0.9);
  EXPECT_LT(secs, 5.0);
  EXPECT_GE(soft->stats().jukebox, 1u);
  ::close(to_holder);
  std::fclose(from_holder);
  ::wait(nullptr);
  EXPECT_EQ(engine_->remove(cred_, engine_->root(), name), 0);
}

// Non-idempotent calls under connection loss: 4 threads rename files back and forth and
// create+remove others while every engine connection is dropped (ss -K) every 40 ms. A
// call whose reply was lost is re-sent on a new connection, where ganesha's reply cache
// (per connection) does not know it: the RENAME/REMOVE runs again and answers ENOENT,
// though the first send did it. The engine counts that as done: the application never
// sees an error, and every file ends where it should. Runs until such a re-send happened
// (the case under test) or 30 s.
// An engine of its own on the test's export, NCONNECT connections (its connections are
// dropped under it; the fixture's engine_ stays untouched).
std::unique_ptr<Engine> open_own_engine(NfsUrl u, int nconnect) {
  u.nconnect = nconnect;
  std::unique_ptr<Engine> e;
  std::string why;
  EXPECT_EQ(Engine::open(u, &e, &why), 0) << why;
  return e;
}

// WORK(t, stop) on 4 threads while every connection to PORT is dropped (ss -K) every
// 40 ms until DONE() or 30 s; then STOP is set and the threads joined. The drops.
int run_while_dropping(int port, const std::function<void(int, const std::atomic<bool>&)>& work,
                       const std::function<bool()>& done) {
  std::atomic<bool> stop{false};
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t) ts.emplace_back([&, t] { work(t, stop); });
  const std::string kill = "ss -K -tn state established '( dport = :" + std::to_string(port) +
                           " )' > /dev/null 2>&1";
  auto t0 = std::chrono::steady_clock::now();
  int drops = 0;
  while (!done() && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(30)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(40));
    EXPECT_EQ(std::system(kill.c_str()), 0);
    ++drops;
  }
  stop = true;
  for (auto& th : ts) th.join();
  return drops;
}

// The server named by a host name; its connections dropped while DNS hangs: they come back
// at once, on the address resolved at open. Each reconnect resolved the name again, on its
// loop thread (libnfs's getaddrinfo), and every call waited out the resolver.
TEST_F(EngineTest, AReconnectDoesNotWaitOnDns) {
  NfsUrl u = engine_->url();
  u.host = kSlowName;
  std::unique_ptr<Engine> e = open_own_engine(u, 2);
  ASSERT_TRUE(e);
  ASSERT_EQ(e->null_call(), 0);
  g_slow_dns = true;
  const std::string kill = "ss -K -tn state established '( dport = :" + std::to_string(u.nfsport) +
                           " )' > /dev/null 2>&1";
  EXPECT_EQ(std::system(kill.c_str()), 0);
  auto t0 = std::chrono::steady_clock::now();
  int rv = e->null_call();
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  g_slow_dns = false;
  EXPECT_EQ(rv, 0);
  EXPECT_GE(e->stats().reconnects, 1u) << "the drop did not reach the engine: the case is not made";
  EXPECT_LT(ms, 2000) << "a call after a reconnect waited " << ms << " ms (DNS hangs 3 s)";
}

TEST_F(EngineTest, RenameAndRemoveReSentAfterALostReplyAreDone) {
  NfsUrl u = engine_->url();
  std::unique_ptr<Engine> e = open_own_engine(u, 2);
  ASSERT_TRUE(e);
  const Cred c = e->default_cred();
  std::atomic<int> errors{0};
  std::vector<int> flips(4, 0);
  auto work = [&](int t, const std::atomic<bool>& stop) {
    const std::string a = "r" + std::to_string(t) + "a", b = "r" + std::to_string(t) + "b";
    if (e->create(c, dir_, a, 0644, true, nullptr, nullptr) != 0) ++errors;
    for (int i = 0; !stop; ++i) {
      int rv = e->rename(c, dir_, i % 2 ? b : a, dir_, i % 2 ? a : b);
      if (rv != 0) {
        std::fprintf(stderr, "rename %d: %s\n", i, std::strerror(-rv));
        ++errors;
        break;
      }
      ++flips[t];
      const std::string tmp = "x" + std::to_string(t) + "_" + std::to_string(i);
      rv = e->create(c, dir_, tmp, 0644, false, nullptr, nullptr);
      if (rv == 0) rv = e->remove(c, dir_, tmp);
      if (rv != 0) {
        std::fprintf(stderr, "create/remove %s: %s\n", tmp.c_str(), std::strerror(-rv));
        ++errors;
        break;
      }
    }
  };
  const int drops =
      run_while_dropping(u.nfsport, work, [&] { return e->stats().resent_done >= 1 || errors > 0; });
  EngineStats s = e->stats();
  std::printf("%d drops, %llu retries, %llu reconnects, %llu re-sent calls answered ENOENT and counted done\n",
              drops, static_cast<unsigned long long>(s.retries), static_cast<unsigned long long>(s.reconnects),
              static_cast<unsigned long long>(s.resent_done));
  EXPECT_EQ(errors.load(), 0);
  EXPECT_GE(s.resent_done, 1u) << "no re-sent RENAME/REMOVE met its own first send in 30 s";
  // Every file where its flips say: r<t>a after an even count, r<t>b after an odd one.
  for (int t = 0; t < 4; ++t) {
    const std::string a = "r" + std::to_string(t) + "a", b = "r" + std::to_string(t) + "b";
    const bool at_b = flips[t] % 2 == 1;
    EXPECT_EQ(e->lookup(c, dir_, at_b ? b : a, nullptr, nullptr), 0) << t;
    EXPECT_EQ(e->lookup(c, dir_, at_b ? a : b, nullptr, nullptr), -ENOENT) << t;
  }
}

// MKDIR, SYMLINK and LINK re-sent after a lost reply: ganesha's reply cache is per
// connection, so the re-send runs again and answers EEXIST for what the first send made.
// That is success for the caller (checked by LOOKUP: a directory; a symlink to the same
// target; the same file), never EEXIST.
TEST_F(EngineTest, MkdirSymlinkLinkReSentAfterALostReplyAreDone) {
  NfsUrl u = engine_->url();
  std::unique_ptr<Engine> e = open_own_engine(u, 2);
  ASSERT_TRUE(e);
  const Cred c = e->default_cred();
  std::atomic<int> errors{0}, stale{0};
  // ESTALE is asked once more, as the kernel's VFS does for these calls (retry_estale in
  // do_mkdirat and its siblings, so a program on the mount never sees a passing one):
  // once in CI (TSan) a call in this storm of drops answered it; which one, and whether
  // it passes, is printed. Only a second ESTALE fails the test.
  auto twice = [&](const std::string& n, const char* step, const std::function<int()>& call) {
    int rv = call();
    if (rv != -ESTALE) return rv;
    rv = call();
    std::fprintf(stderr, "%s (%s): ESTALE, asked again: %s\n", n.c_str(), step, rv ? std::strerror(-rv) : "done");
    ++stale;
    return rv;
  };
  auto work = [&](int t, const std::atomic<bool>& stop) {
    const std::string p = "m" + std::to_string(t) + "_";
    Fh f;
    if (e->create(c, dir_, p + "file", 0644, true, &f, nullptr) != 0) ++errors;
    for (int i = 0; !stop && errors == 0; ++i) {
      const std::string n = p + std::to_string(i);
      Fh made;
      Attr a;
      const char* step = "mkdir";
      int rv = twice(n, step, [&] { return e->mkdir(c, dir_, n + "d", 0755, &made, &a); });
      if (rv == 0 && a.type != NF3DIR) rv = -EBADE;
      if (rv == 0)
        rv = twice(n, step = "symlink", [&] { return e->symlink(c, dir_, n + "s", "target-" + n, nullptr, nullptr); });
      if (rv == 0) rv = twice(n, step = "link", [&] { return e->link(c, f, dir_, n + "l"); });
      if (rv == 0) rv = twice(n, step = "rmdir", [&] { return e->rmdir(c, dir_, n + "d"); });
      if (rv == 0) rv = twice(n, step = "remove symlink", [&] { return e->remove(c, dir_, n + "s"); });
      if (rv == 0) rv = twice(n, step = "remove link", [&] { return e->remove(c, dir_, n + "l"); });
      if (rv != 0) {
        std::fprintf(stderr, "%s (%s): %s\n", n.c_str(), step, std::strerror(-rv));
        ++errors;
      }
    }
  };
  const int drops =
      run_while_dropping(u.nfsport, work, [&] { return e->stats().resent_exist >= 1 || errors > 0; });
  EngineStats s = e->stats();
  std::printf("%d drops, %llu retries, re-sent calls done: %llu ENOENT, %llu EEXIST; %d ESTALE asked again\n",
              drops, static_cast<unsigned long long>(s.retries), static_cast<unsigned long long>(s.resent_done),
              static_cast<unsigned long long>(s.resent_exist), stale.load());
  EXPECT_EQ(errors.load(), 0);
  EXPECT_GE(s.resent_exist, 1u) << "no re-sent MKDIR/SYMLINK/LINK met its own first send in 30 s";
}

// A re-send that reaches ganesha while its first send is still being carried out (the
// connection died under it; CI stop 17 met it in the test above): send_next_twice_for_test
// sends a call twice at once, the first reply dropped. The loser of a REMOVE, RMDIR or
// RENAME answers ENOENT, or ESTALE when it found the name in ganesha's cache and the object
// already gone (1 in 10 losers of 2000 REMOVEs raced from two libnfs clients here); of a
// MKDIR, SYMLINK, LINK or O_EXCL CREATE, EEXIST. The caller sees success every time, and
// every name ends where the calls put it. Runs until 3 such ESTALEs were met or 30 s.
TEST_F(EngineTest, ReSentCallsRacingTheirFirstSendAreDone) {
  std::unique_ptr<Engine> e = open_own_engine(engine_->url(), 2);
  ASSERT_TRUE(e);
  const Cred c = e->default_cred();
  Fh f;
  ASSERT_EQ(e->create(c, dir_, "race_file", 0644, true, &f, nullptr), 0);
  int errors = 0, rounds = 0;
  auto twice = [&](const std::string& n, const char* step, const std::function<int()>& call) {
    e->send_next_twice_for_test();
    int rv = call();
    if (rv != 0) {
      std::fprintf(stderr, "%s (%s): %s\n", n.c_str(), step, std::strerror(-rv));
      ++errors;
    }
    return rv == 0;
  };
  const auto t0 = std::chrono::steady_clock::now();
  while (errors == 0 && e->stats().resent_stale < 3 &&
         std::chrono::steady_clock::now() - t0 < std::chrono::seconds(30)) {
    const std::string n = "race" + std::to_string(rounds++);
    std::string target;
    Fh made;
    Attr a;
    const bool ok =
        twice(n, "create", [&] { return e->create(c, dir_, n + "f", 0640, true, nullptr, nullptr); }) &&
        twice(n, "mkdir", [&] { return e->mkdir(c, dir_, n + "d", 0755, &made, &a); }) &&
        twice(n, "symlink", [&] { return e->symlink(c, dir_, n + "s", "target-" + n, nullptr, nullptr); }) &&
        twice(n, "link", [&] { return e->link(c, f, dir_, n + "l"); }) &&
        twice(n, "rename", [&] { return e->rename(c, dir_, n + "s", dir_, n + "r"); }) &&
        twice(n, "rmdir", [&] { return e->rmdir(c, dir_, n + "d"); }) &&
        twice(n, "remove", [&] { return e->remove(c, dir_, n + "f"); }) &&
        twice(n, "remove renamed", [&] { return e->remove(c, dir_, n + "r"); }) &&
        twice(n, "remove link", [&] { return e->remove(c, dir_, n + "l"); });
    if (!ok) break;
    EXPECT_EQ(a.type, NF3DIR) << n;
    for (const char* suffix : {"f", "d", "s", "r", "l"})
      EXPECT_EQ(e->lookup(c, dir_, n + suffix, nullptr, nullptr), -ENOENT) << n + suffix;
  }
  EngineStats s = e->stats();
  std::printf("%d rounds; re-sent calls done: %llu ENOENT/ESTALE, %llu EEXIST/ESTALE; %llu of them ESTALE\n",
              rounds, static_cast<unsigned long long>(s.resent_done),
              static_cast<unsigned long long>(s.resent_exist), static_cast<unsigned long long>(s.resent_stale));
  EXPECT_EQ(errors, 0);
  EXPECT_GE(s.resent_stale, 1u) << "no re-send raced its first send into ESTALE in 30 s";
  EXPECT_GE(s.resent_done, 1u);
  EXPECT_GE(s.resent_exist, 1u);
}

// Work for run_while_dropping: O_EXCL creates of new names, each checked (a regular file,
// mode 0640), until stopped or one fails (*ERRORS); *MADE counts those that succeeded.
std::function<void(int, const std::atomic<bool>&)> exclusive_creates(Engine& e, const Fh& dir,
                                                                     std::atomic<int>* errors,
                                                                     std::atomic<int>* made) {
  return [&e, dir, errors, made](int t, const std::atomic<bool>& stop) {
    const Cred c = e.default_cred();
    for (int i = 0; !stop && *errors == 0; ++i) {
      const std::string n = "x" + std::to_string(t) + "_" + std::to_string(i);
      Attr a;
      int rv = e.create(c, dir, n, 0640, true, nullptr, &a);
      if (rv == 0 && (a.type != NF3REG || a.mode != 0640)) rv = -EBADE;
      if (rv != 0) {
        std::fprintf(stderr, "%s: %s\n", n.c_str(), std::strerror(-rv));
        ++*errors;
      } else {
        ++*made;
      }
    }
  };
}

// Every create that succeeded left its file: names in DIR starting with 'x'.
int files_left(Engine& e, const Fh& dir) {
  std::vector<DirEntry> ents;
  if (e.readdirplus(e.default_cred(), dir, &ents) != 0) return -1;
  int n = 0;
  for (const DirEntry& d : ents) n += d.name[0] == 'x';
  return n;
}

// O_EXCL creates (EXCLUSIVE with a verifier) re-sent after a lost reply: the re-send finds
// the verifier the first send stored and succeeds; none may answer EEXIST to the caller.
TEST_F(EngineTest, ExclusiveCreatesReSentAfterALostReplyAreDone) {
  NfsUrl u = engine_->url();
  std::unique_ptr<Engine> e = open_own_engine(u, 2);
  ASSERT_TRUE(e);
  std::atomic<int> errors{0}, made{0};
  const int drops = run_while_dropping(u.nfsport, exclusive_creates(*e, dir_, &errors, &made),
                                       [&] { return e->stats().retries >= 40 || errors > 0; });
  EngineStats s = e->stats();
  std::printf("%d drops, %d creates, %llu re-sent calls, %llu EEXIST of a re-send found its own file\n", drops,
              made.load(), static_cast<unsigned long long>(s.retries),
              static_cast<unsigned long long>(s.resent_exist));
  EXPECT_EQ(errors.load(), 0);
  EXPECT_GE(s.retries, 40u) << "fewer than 40 re-sent CREATEs in 30 s";
  EXPECT_EQ(files_left(*e, dir_), made.load()) << "a create that succeeded left no file";
}

// A re-sent O_EXCL create or MKDIR (count_next_as_resent_for_test) whose EEXIST meets a
// file or directory made before its first send: that is another's, an O_EXCL lock file or
// a mkdir lock of the same user, and the caller gets EEXIST. Both were taken as the first
// send's (an empty regular file of the caller's own; any directory): two holders of a lock.
TEST_F(EngineTest, AReSentCreateDoesNotTakeAnOlderFileAsItsOwn) {
  Fh f, d;
  ASSERT_EQ(engine_->create(cred_, dir_, "lock", 0644, true, &f, nullptr), 0);
  ASSERT_EQ(engine_->mkdir(cred_, dir_, "lockdir", 0755, &d, nullptr), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));  // older than the 1 s margin
  const uint64_t met_own = engine_->stats().resent_exist;
  engine_->count_next_as_resent_for_test();
  EXPECT_EQ(engine_->create(cred_, dir_, "lock", 0644, true, nullptr, nullptr), -EEXIST)
      << "a re-sent O_EXCL create took another's empty lock file as its own";
  engine_->count_next_as_resent_for_test();
  EXPECT_EQ(engine_->mkdir(cred_, dir_, "lockdir", 0755, nullptr, nullptr), -EEXIST)
      << "a re-sent MKDIR took an existing directory as its own";
  EXPECT_EQ(engine_->stats().resent_exist, met_own);
}

// A server that dies between making an O_EXCL file and storing the verifier in its times
// (ganesha's FSAL_VFS does the two in turn) answers the re-send EEXIST after its restart:
// the file is there, the verifier is not. Played here by a thread that overwrites the
// times of every file in the test's directory on the export as soon as they are set
// (inotify). A re-sent create that meets an empty regular file of the caller's own is
// done (stats resent_exist); before, EEXIST reached the caller (torture engine phase).
TEST_F(EngineTest, ExclusiveCreatesReSentToAServerThatLostTheVerifierAreDone) {
  const std::string exp = env("NFSSHIM_TEST_EXPORT");
  ASSERT_FALSE(exp.empty()) << "NFSSHIM_TEST_EXPORT not set (run through engine_test.sh)";
  NfsUrl u = engine_->url();
  std::unique_ptr<Engine> e = open_own_engine(u, 2);
  ASSERT_TRUE(e);
  const std::string where = exp + "/" + dir_name_;
  const int ino = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  ASSERT_GE(ino, 0);
  ASSERT_GE(::inotify_add_watch(ino, where.c_str(), IN_CREATE | IN_ATTRIB), 0) << where;
  std::atomic<bool> quit{false};
  std::atomic<int> erased{0};
  std::thread eraser([&] {
    alignas(inotify_event) char buf[64 * 1024];
    const timespec zero[2] = {{1, 0}, {1, 0}};
    while (!quit) {
      pollfd p{ino, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const ssize_t n = ::read(ino, buf, sizeof buf);
      for (ssize_t at = 0; at < n;) {
        const auto* ev = reinterpret_cast<const inotify_event*>(buf + at);
        at += static_cast<ssize_t>(sizeof *ev + ev->len);
        if (ev->len == 0) continue;
        const std::string f = where + "/" + ev->name;
        struct stat st;
        if (::stat(f.c_str(), &st) == 0 && (st.st_atim.tv_sec != 1 || st.st_mtim.tv_sec != 1) &&
            ::utimensat(AT_FDCWD, f.c_str(), zero, 0) == 0)
          ++erased;
      }
    }
  });
  std::atomic<int> errors{0}, made{0};
  const int drops = run_while_dropping(u.nfsport, exclusive_creates(*e, dir_, &errors, &made),
                                       [&] { return e->stats().resent_exist >= 3 || errors > 0; });
  quit = true;
  eraser.join();
  ::close(ino);
  EngineStats s = e->stats();
  std::printf("%d drops, %d creates, %d verifiers erased, %llu re-sent calls, %llu re-sent creates met their "
              "own file\n",
              drops, made.load(), erased.load(), static_cast<unsigned long long>(s.retries),
              static_cast<unsigned long long>(s.resent_exist));
  EXPECT_EQ(errors.load(), 0);
  EXPECT_GE(s.resent_exist, 3u) << "fewer than 3 re-sent creates met a file without their verifier in 30 s";
  EXPECT_EQ(files_left(*e, dir_), made.load()) << "a create that succeeded left no file";
}

// Many small concurrent requests from many threads: the slot limit holds them back
// (bounded in flight), nothing is lost or mixed up.
TEST_F(EngineTest, ManySmallConcurrentRequests) {
  Fh f;
  ASSERT_EQ(engine_->create(cred_, dir_, "small", 0644, true, &f, nullptr), 0);
  const int threads = 16, per = 200;
  std::vector<char> data(threads * per * 64);
  for (size_t i = 0; i < data.size(); ++i) data[i] = pattern(77, i);
  std::vector<int> bad(threads);
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&, t] {
      for (int i = 0; i < per; ++i) {
        size_t off = (static_cast<size_t>(i) * threads + t) * 64;
        if (engine_->write(cred_, f, off, 64, data.data() + off, FILE_SYNC, nullptr) != 64) ++bad[t];
      }
    });
  for (auto& th : ts) th.join();
  for (int t = 0; t < threads; ++t) EXPECT_EQ(bad[t], 0);
  std::vector<char> back(data.size());
  ASSERT_EQ(engine_->read(cred_, f, 0, back.size(), back.data()), static_cast<ssize_t>(back.size()));
  EXPECT_TRUE(back == data);
}

// Backpressure: with slots=2 and max_inflight_mb=1, 8 threads reading 8 MiB each never have
// more than 2 requests on a connection nor more than 1 MiB in flight; the data is intact.
TEST_F(EngineTest, InFlightLimitsHold) {
  Fh f;
  const size_t size = 8u << 20;
  std::vector<char> data(size);
  for (size_t i = 0; i < size; ++i) data[i] = pattern(5, i);
  ASSERT_EQ(engine_->create(cred_, dir_, "bounded", 0644, true, &f, nullptr), 0);
  ASSERT_EQ(engine_->write(cred_, f, 0, size, data.data(), kFileSync, nullptr), static_cast<ssize_t>(size));
  NfsUrl u = engine_->url();
  u.slots = 2;
  u.max_inflight_mb = 1;
  u.rsize = 256 << 10;
  std::unique_ptr<Engine> small;
  std::string why;
  ASSERT_EQ(Engine::open(u, &small, &why), 0) << why;
  std::vector<int> bad(8);
  std::vector<std::thread> ts;
  for (int t = 0; t < 8; ++t)
    ts.emplace_back([&, t] {
      std::vector<char> buf(size);
      if (small->read(cred_, f, 0, size, buf.data()) != static_cast<ssize_t>(size) || buf != data) ++bad[t];
    });
  for (auto& th : ts) th.join();
  for (int t = 0; t < 8; ++t) EXPECT_EQ(bad[t], 0) << t;
  EngineStats s = small->stats();
  EXPECT_LE(s.peak_conn_load, 2);
  EXPECT_GE(s.peak_conn_load, 1);
  EXPECT_LE(s.peak_inflight_bytes, 1u << 20);
  EXPECT_GE(s.peak_inflight_bytes, 256u << 10);
  std::printf("peak per-connection load %d, peak in-flight bytes %llu\n", s.peak_conn_load,
              static_cast<unsigned long long>(s.peak_inflight_bytes));
}

}  // namespace
}  // namespace nfsshim::nfs
