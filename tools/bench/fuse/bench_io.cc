// bench_io: the I/O patterns of tools/bench/fuse/bench.sh; prints seconds taken.
//   bench_io seqwrite FILE MIB     1 MiB writes, then fsync
//   bench_io seqread FILE          1 MiB reads to the end
//   bench_io randread FILE COUNT   COUNT 4 KiB preads at random 4 KiB-aligned offsets
//   bench_io meta DIR N            create+close N files, stat them, unlink them (3 times)
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

static double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

[[noreturn]] static void die(const char* what) {
  std::perror(what);
  std::exit(1);
}

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  std::string mode = argv[1], path = argv[2];
  std::vector<char> buf(1 << 20, 'x');
  if (mode == "seqwrite") {
    long mib = std::atol(argv[3]);
    double t = now();
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) die("open");
    for (long i = 0; i < mib; ++i)
      if (::write(fd, buf.data(), buf.size()) != static_cast<ssize_t>(buf.size())) die("write");
    if (::fsync(fd) != 0) die("fsync");
    ::close(fd);
    std::printf("%.4f\n", now() - t);
  } else if (mode == "seqread") {
    double t = now();
    int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) die("open");
    ssize_t n;
    while ((n = ::read(fd, buf.data(), buf.size())) > 0) {
    }
    if (n < 0) die("read");
    ::close(fd);
    std::printf("%.4f\n", now() - t);
  } else if (mode == "randread") {
    long count = std::atol(argv[3]);
    int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) die("open");
    struct stat st;
    ::fstat(fd, &st);
    std::mt19937_64 rng(42);
    long blocks = st.st_size / 4096;
    double t = now();
    for (long i = 0; i < count; ++i)
      if (::pread(fd, buf.data(), 4096, static_cast<off_t>(rng() % blocks) * 4096) != 4096) die("pread");
    ::close(fd);
    std::printf("%.4f\n", now() - t);
  } else if (mode == "meta") {
    long n = std::atol(argv[3]);
    double tc = 0, ts = 0, tu = 0;
    for (int round = 0; round < 3; ++round) {
      double t = now();
      for (long i = 0; i < n; ++i) {
        int fd = ::open((path + "/f" + std::to_string(i)).c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
        if (fd < 0) die("create");
        ::close(fd);
      }
      tc += now() - t;
      t = now();
      struct stat st;
      for (long i = 0; i < n; ++i)
        if (::stat((path + "/f" + std::to_string(i)).c_str(), &st) != 0) die("stat");
      ts += now() - t;
      t = now();
      for (long i = 0; i < n; ++i)
        if (::unlink((path + "/f" + std::to_string(i)).c_str()) != 0) die("unlink");
      tu += now() - t;
    }
    std::printf("%.4f %.4f %.4f\n", tc / 3, ts / 3, tu / 3);
  } else {
    return 2;
  }
  return 0;
}
