// Runs every intercepted call through its error and edge cases in DIR and prints what
// each returned (value and errno) and what the filesystem looked like afterwards.
// semantics.sh runs it once plainly and once under the preload and compares: the
// shim must be invisible except where the README lists a difference.
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <string>

static std::string g_dir;
static std::string P(const std::string& n) { return g_dir + "/" + n; }

// strerrorname_np is glibc 2.32+; RHEL 8 has 2.28.
static const char* errname(int e) {
  switch (e) {
#define E(x) \
  case x:    \
    return #x;
    E(EPERM) E(ENOENT) E(EINTR) E(EIO) E(EBADF) E(EACCES) E(EFAULT) E(EBUSY) E(EEXIST) E(EXDEV)
    E(ENOTDIR) E(EISDIR) E(EINVAL) E(ENOSPC) E(EROFS) E(EMLINK) E(ENAMETOOLONG) E(ENOTEMPTY)
    E(ELOOP) E(EOPNOTSUPP) E(ENOSYS) E(ESTALE)
#undef E
    default:
      return "E?";
  }
}

static void show(const char* what, long rv) {
  int e = errno;
  std::printf("  %-44s -> %ld", what, rv);
  if (rv < 0) std::printf(" %s", errname(e));
  std::printf("\n");
}
#define CALL(expr)          \
  do {                      \
    errno = 0;              \
    long rv_ = (expr);      \
    show(#expr, rv_);       \
  } while (0)

static void state(const std::string& name) {
  struct stat st;
  if (lstat(P(name).c_str(), &st) != 0) {
    std::printf("  [%s: absent]\n", name.c_str());
    return;
  }
  std::string content;
  if (S_ISREG(st.st_mode)) {
    char buf[64] = {};
    int fd = open(P(name).c_str(), O_RDONLY);
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    content = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  }
  std::printf("  [%s: %s nlink=%lu '%s']\n", name.c_str(),
              S_ISDIR(st.st_mode) ? "dir" : S_ISLNK(st.st_mode) ? "symlink" : "file",
              static_cast<unsigned long>(S_ISDIR(st.st_mode) ? 0 : st.st_nlink), content.c_str());
}

static std::string fdread(int fd) {
  char buf[64] = {};
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  return n >= 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("ERR ") + errname(errno);
}

static void put(const std::string& name, const char* data) {
  int fd = open(P(name).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    if (write(fd, data, std::strlen(data)) < 0) std::perror("write");
    close(fd);
  }
}

static void clean() {
  std::string cmd = "cd '" + g_dir + "' && rm -rf -- * 2>/dev/null; true";
  if (std::system(cmd.c_str()) != 0) std::printf("cleanup failed\n");
}

static void section(const char* name, const std::function<void()>& body) {
  std::printf("%s\n", name);
  body();
  clean();
}

// Runs BODY in a child with uid/gid 65534 (only meaningful when we are root).
static void as_nobody(const std::function<void()>& body) {
  std::fflush(stdout);
  pid_t c = fork();
  if (c == 0) {
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(3);
    body();
    std::fflush(stdout);
    _exit(0);
  }
  int st;
  waitpid(c, &st, 0);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  g_dir = argv[1];
  clean();

  section("unlink: plain errors", [] {
    CALL(unlink(P("missing").c_str()));
    CALL(unlink(""));
    CALL(unlink(P(std::string(300, 'n')).c_str()));
    mkdir(P("d").c_str(), 0755);
    CALL(unlink(P("d").c_str()));
    put("f", "x");
    CALL(unlink(P("f/x").c_str()));
    CALL(unlinkat(AT_FDCWD, P("f").c_str(), 0x4242));
    CALL(unlinkat(12345, "f", 0));
    CALL(unlinkat(AT_FDCWD, P("f").c_str(), AT_REMOVEDIR));
    state("f");
  });

  section("unlink: open file, then same name again", [] {
    put("seg", "old");
    int fd = open(P("seg").c_str(), O_RDWR);
    CALL(unlink(P("seg").c_str()));
    state("seg");
    std::printf("  fd reads '%s'\n", fdread(fd).c_str());
    put("seg", "new");
    state("seg");
    std::printf("  fd reads '%s'\n", fdread(fd).c_str());
    CALL(close(fd));
    CALL(unlink(P("seg").c_str()));
  });

  section("unlink: mapped only", [] {
    int fd = open(P("idx").c_str(), O_RDWR | O_CREAT, 0644);
    if (ftruncate(fd, 4096) != 0) std::perror("ftruncate");
    auto* m = static_cast<char*>(mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    std::strcpy(m, "mapped");
    close(fd);
    CALL(unlink(P("idx").c_str()));
    state("idx");
    std::printf("  mapping holds '%s'\n", m);
    CALL(munmap(m, 4096));
  });

  section("symlinks", [] {
    put("target", "t");
    int fd = open(P("target").c_str(), O_RDONLY);
    CALL(symlink("target", P("link").c_str()));
    CALL(unlink(P("link").c_str()));
    CALL(symlink("nowhere", P("dangling").c_str()));
    CALL(unlink(P("dangling").c_str()));
    CALL(symlink("target", P("link2").c_str()));
    CALL(rename(P("link2").c_str(), P("target").c_str()));  // link replaces the open file
    state("target");
    std::printf("  fd reads '%s'\n", fdread(fd).c_str());
    close(fd);
  });

  section("hard links", [] {
    // States are printed after the close: while a buried name is held, the other
    // names show one link more (the graveyard's), a difference the README lists.
    put("a", "shared");
    CALL(link(P("a").c_str(), P("b").c_str()));
    int fd = open(P("b").c_str(), O_RDONLY);
    CALL(unlink(P("a").c_str()));
    CALL(rename(P("b").c_str(), P("b").c_str()));
    CALL(link(P("b").c_str(), P("c").c_str()));
    CALL(rename(P("b").c_str(), P("c").c_str()));
    std::printf("  fd reads '%s'\n", fdread(fd).c_str());
    close(fd);
    state("a");
    state("b");
    state("c");
  });

  section("dirfd-relative", [] {
    int dfd = open(g_dir.c_str(), O_RDONLY | O_DIRECTORY);
    int fd = openat(dfd, "r", O_RDWR | O_CREAT, 0644);
    if (write(fd, "rel", 3) != 3) std::perror("write");
    CALL(unlinkat(dfd, "r", 0));
    std::printf("  fd reads '%s'\n", fdread(fd).c_str());
    CALL(mkdirat(dfd, "sub", 0755));
    CALL(unlinkat(dfd, "sub", 0));
    CALL(unlinkat(dfd, "sub", AT_REMOVEDIR));
    put("r2", "x");
    CALL(renameat(dfd, "r2", dfd, "r3"));
    CALL(renameat(dfd, "missing", dfd, "r3"));
    state("r3");
    close(fd);
    close(dfd);
  });

  section("O_PATH and O_TMPFILE", [] {
    put("p", "path");
    int pfd = open(P("p").c_str(), O_PATH);
    CALL(unlink(P("p").c_str()));
    CALL(close(pfd));
    int t = open(g_dir.c_str(), O_TMPFILE | O_RDWR, 0600);
    if (t >= 0) {
      if (write(t, "tmp", 3) != 3) std::perror("write");
      std::string proc = "/proc/self/fd/" + std::to_string(t);
      CALL(linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, P("t").c_str(), AT_SYMLINK_FOLLOW));
      CALL(unlink(P("t").c_str()));
      std::printf("  tmpfile reads '%s'\n", fdread(t).c_str());
      close(t);
    }
  });

  section("rename: errors and replace", [] {
    put("f", "F");
    mkdir(P("d").c_str(), 0755);
    mkdir(P("e").c_str(), 0755);
    put("e/x", "x");
    CALL(rename(P("missing").c_str(), P("f").c_str()));
    CALL(rename(P("f").c_str(), P("d").c_str()));
    CALL(rename(P("d").c_str(), P("f").c_str()));
    CALL(rename(P("d").c_str(), P("e").c_str()));
    CALL(rename(P("d").c_str(), P("d/inside").c_str()));
    CALL(rename(P("f").c_str(), P("nodir/f").c_str()));
    CALL(rename(P("f").c_str(), P("e/x/y").c_str()));
    put("ckpt", "old");
    int fd = open(P("ckpt").c_str(), O_RDONLY);
    put("ckpt.tmp", "new");
    CALL(rename(P("ckpt.tmp").c_str(), P("ckpt").c_str()));
    state("ckpt");
    state("ckpt.tmp");
    std::printf("  fd reads '%s'\n", fdread(fd).c_str());
    close(fd);
    put("g", "G");
    CALL(renameat2(AT_FDCWD, P("g").c_str(), AT_FDCWD, P("ckpt").c_str(), RENAME_NOREPLACE));
    CALL(renameat2(AT_FDCWD, P("g").c_str(), AT_FDCWD, P("ckpt").c_str(), RENAME_EXCHANGE));
    CALL(renameat2(AT_FDCWD, P("g").c_str(), AT_FDCWD, P("ckpt").c_str(), 0));
    CALL(renameat2(AT_FDCWD, P("ckpt").c_str(), AT_FDCWD, P("g").c_str(), 0x4000));
    state("g");
    state("ckpt");
  });

  section("rmdir and remove", [] {
    mkdir(P("d").c_str(), 0755);
    put("d/f", "x");
    CALL(rmdir(P("d").c_str()));
    CALL(rmdir(P("d/f").c_str()));
    CALL(rmdir(P("missing").c_str()));
    CALL(rmdir(P("d/.").c_str()));
    CALL(remove(P("d").c_str()));
    int fd = open(P("d/f").c_str(), O_RDONLY);
    CALL(remove(P("d/f").c_str()));
    CALL(remove(P("d").c_str()));
    CALL(remove(P("d").c_str()));
    close(fd);
  });

  if (geteuid() == 0) {
    section("permissions (as uid 65534)", [] {
      mkdir(P("ro").c_str(), 0755);
      put("ro/f", "x");
      mkdir(P("sticky").c_str(), 01777);
      put("sticky/rootfile", "r");
      mkdir(P("ro/sub").c_str(), 0755);
      as_nobody([] {
        int fd = open(P("ro/f").c_str(), O_RDONLY);
        CALL(unlink(P("ro/f").c_str()));
        CALL(rename(P("ro/f").c_str(), P("ro/g").c_str()));
        CALL(rmdir(P("ro/sub").c_str()));
        CALL(remove(P("ro/f").c_str()));
        int s = open(P("sticky/rootfile").c_str(), O_RDONLY);
        CALL(unlink(P("sticky/rootfile").c_str()));
        int m = open(P("sticky/mine").c_str(), O_RDWR | O_CREAT, 0600);
        CALL(rename(P("sticky/mine").c_str(), P("sticky/rootfile").c_str()));
        CALL(unlink(P("sticky/mine").c_str()));
        close(fd);
        close(s);
        close(m);
      });
      state("ro/f");
      state("sticky/rootfile");
    });

    section("busy and read-only mounts", [] {
      mkdir(P("mnt").c_str(), 0755);
      if (mount("none", P("mnt").c_str(), "tmpfs", 0, "size=1m") == 0) {
        CALL(rmdir(P("mnt").c_str()));
        CALL(rename(P("mnt").c_str(), P("mnt2").c_str()));
        umount(P("mnt").c_str());
      }
      mkdir(P("rosrc").c_str(), 0755);
      put("rosrc/f", "x");
      mkdir(P("romnt").c_str(), 0755);
      if (mount(P("rosrc").c_str(), P("romnt").c_str(), nullptr, MS_BIND, nullptr) == 0 &&
          mount(nullptr, P("romnt").c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr) == 0) {
        int fd = open(P("romnt/f").c_str(), O_RDONLY);
        CALL(unlink(P("romnt/f").c_str()));
        CALL(rename(P("romnt/f").c_str(), P("romnt/g").c_str()));
        close(fd);
        umount(P("romnt").c_str());
      }
      // The bind mount is another mount of the same filesystem: a rename into a
      // graveyard outside it would be EXDEV; the shim must then fall back.
      if (mount(P("rosrc").c_str(), P("romnt").c_str(), nullptr, MS_BIND, nullptr) == 0) {
        int fd = open(P("romnt/f").c_str(), O_RDONLY);
        CALL(unlink(P("romnt/f").c_str()));
        std::printf("  fd reads '%s'\n", fdread(fd).c_str());
        close(fd);
        umount(P("romnt").c_str());
      }
      state("rosrc/f");
    });
  }

  section("listing", [] {
    put("visible", "v");
    DIR* d = opendir(g_dir.c_str());
    int n = 0;
    while (struct dirent* e = readdir(d)) n += e->d_name[0] != '.' || std::strlen(e->d_name) > 2;
    closedir(d);
    std::printf("  entries besides . and ..: %d\n", n);
  });
  return 0;
}
