// posix_suite DIR - POSIX checks of pjdfstest's scope (open, create, chmod, chown, link,
// mkdir, mkfifo, rename, rmdir, symlink, truncate, unlink, utimensat, xattrs, locks, mmap,
// open-after-unlink) run in a fresh subdirectory of DIR. Prints one line per check,
// "CHECK <name> <observation>", where the observation is what the filesystem did (an errno
// name, a value, "ok"), never a path or an inode number: the output of two runs on two
// filesystems can be compared with diff. Needs root (some checks switch to uid 65534).
// Exit status: 0 if all ran, 2 on bad usage.
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <grp.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

namespace {

std::string g_dir;

std::string P(const std::string& name) { return g_dir + "/" + name; }

std::string errname(int e) {
  switch (e) {
#define E(x) case x: return #x;
    E(EPERM) E(ENOENT) E(EIO) E(EBADF) E(EAGAIN) E(EACCES) E(EEXIST) E(EXDEV) E(ENOTDIR)
    E(EISDIR) E(EINVAL) E(ENOSPC) E(EROFS) E(EMLINK) E(ENAMETOOLONG) E(ENOTEMPTY) E(ELOOP)
    E(ENODATA) E(EOPNOTSUPP) E(ENOSYS) E(ETXTBSY) E(EFBIG) E(ESTALE) E(ENXIO) E(ERANGE)
#undef E
    default: return "errno" + std::to_string(e);
  }
}

// "0" on success, else the errno's name.
std::string rc(long r) { return r < 0 ? errname(errno) : "0"; }

// Joins observations with ','. A braced list is evaluated left to right, so the calls
// inside happen in the order written (operands of + are not sequenced).
std::string join(std::initializer_list<std::string> parts) {
  std::string s;
  for (const auto& p : parts) s += (s.empty() ? "" : ",") + p;
  return s;
}

void check(const std::string& name, const std::string& observed) {
  std::printf("CHECK %s %s\n", name.c_str(), observed.c_str());
  std::fflush(stdout);
}

std::string mode_of(const std::string& p) {
  struct stat st;
  if (::lstat(p.c_str(), &st) != 0) return errname(errno);
  char b[16];
  std::snprintf(b, sizeof b, "%o", st.st_mode);
  return b;
}

struct stat st_of(const std::string& p) {
  struct stat st{};
  ::lstat(p.c_str(), &st);
  return st;
}

std::string make_file(const std::string& name, const std::string& data, mode_t mode = 0644) {
  int fd = ::open(P(name).c_str(), O_WRONLY | O_CREAT | O_TRUNC, mode);
  if (fd < 0) return errname(errno);
  ssize_t n = ::write(fd, data.data(), data.size());
  ::close(fd);
  return n == static_cast<ssize_t>(data.size()) ? "0" : "short";
}

std::string read_all(const std::string& p) {
  int fd = ::open(p.c_str(), O_RDONLY);
  if (fd < 0) return "<" + errname(errno) + ">";
  std::string s;
  char b[4096];
  ssize_t n;
  while ((n = ::read(fd, b, sizeof b)) > 0) s.append(b, static_cast<size_t>(n));
  ::close(fd);
  return s;
}

std::string read_fd(int fd) {
  std::string s;
  char b[4096];
  ssize_t n;
  off_t off = 0;
  while ((n = ::pread(fd, b, sizeof b, off)) > 0) {
    s.append(b, static_cast<size_t>(n));
    off += n;
  }
  return n < 0 ? "<" + errname(errno) + ">" : s;
}

// Runs F in a child; its string result comes back through a pipe.
std::string in_child(const std::function<std::string()>& f) {
  int p[2];
  if (::pipe(p) != 0) return "pipe";
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(p[0]);
    std::string r = f();
    (void)!::write(p[1], r.data(), r.size());
    ::_exit(0);
  }
  ::close(p[1]);
  std::string out;
  char b[256];
  ssize_t n;
  while ((n = ::read(p[0], b, sizeof b)) > 0) out.append(b, static_cast<size_t>(n));
  ::close(p[0]);
  ::waitpid(pid, nullptr, 0);
  return out;
}

// Runs F as uid/gid 65534 in a child.
std::string as_nobody(const std::function<std::string()>& f) {
  return in_child([&] {
    return (::setgroups(0, nullptr) == 0 && ::setgid(65534) == 0 && ::setuid(65534) == 0) ? f() : "setuid";
  });
}

// Runs F as root without capability CAP (dropped from the effective set) in a child.
std::string as_root_without(int cap, const std::function<std::string()>& f) {
  return in_child([&]() -> std::string {
    __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2]{};
    if (::syscall(SYS_capget, &hdr, data) != 0) return "capset";
    data[cap / 32].effective &= ~(1u << (cap % 32));
    return ::syscall(SYS_capset, &hdr, data) == 0 ? f() : "capset";
  });
}

std::string list_dir(const std::string& p) {
  std::vector<std::string> names;
  DIR* d = ::opendir(p.c_str());
  if (!d) return errname(errno);
  while (dirent* e = ::readdir(d)) names.push_back(e->d_name);
  ::closedir(d);
  std::sort(names.begin(), names.end());
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ",") + n;
  return s;
}

void run_all() {
  // --- open / create
  check("create_excl", rc(::open(P("f").c_str(), O_RDWR | O_CREAT | O_EXCL, 0640)));
  check("create_mode", mode_of(P("f")));
  check("create_nlink_size", join({std::to_string(st_of(P("f")).st_nlink), std::to_string(st_of(P("f")).st_size)}));
  check("create_excl_existing", rc(::open(P("f").c_str(), O_RDWR | O_CREAT | O_EXCL, 0640)));
  check("open_missing", rc(::open(P("nope").c_str(), O_RDONLY)));
  check("open_missing_parent", rc(::open(P("nope/x").c_str(), O_RDWR | O_CREAT, 0644)));
  check("open_file_as_dir", rc(::open(P("f/x").c_str(), O_RDONLY)));
  check("open_directory_flag_on_file", rc(::open(P("f").c_str(), O_RDONLY | O_DIRECTORY)));
  ::mkdir(P("d").c_str(), 0755);
  check("open_dir_wronly", rc(::open(P("d").c_str(), O_WRONLY)));
  check("open_dir_rdonly", rc(::open(P("d").c_str(), O_RDONLY)) );
  check("open_name_too_long", rc(::open(P(std::string(256, 'n')).c_str(), O_RDWR | O_CREAT, 0644)));
  check("open_name_255", rc(::open(P(std::string(255, 'n')).c_str(), O_RDWR | O_CREAT, 0644)));
  ::unlink(P(std::string(255, 'n')).c_str());
  ::symlink("f", P("lnk").c_str());
  check("open_nofollow_symlink", rc(::open(P("lnk").c_str(), O_RDONLY | O_NOFOLLOW)));
  check("open_through_symlink", rc(::open(P("lnk").c_str(), O_RDONLY)));
  check("open_tmpfile", rc(::open(g_dir.c_str(), O_TMPFILE | O_RDWR, 0600)));

  // --- read / write
  make_file("rw", "hello world");
  check("read_back", read_all(P("rw")));
  {
    int fd = ::open(P("rw").c_str(), O_WRONLY | O_APPEND);
    (void)!::write(fd, "!!", 2);
    (void)!::pwrite(fd, "H", 1, 0);  // with O_APPEND Linux appends anyway
    ::close(fd);
  }
  check("append", read_all(P("rw")));
  {
    int fd = ::open(P("rw").c_str(), O_RDWR);
    (void)!::pwrite(fd, "W", 1, 6);
    (void)!::pwrite(fd, "Z", 1, 20);  // hole from 14 to 20
    ::close(fd);
  }
  std::string s = read_all(P("rw"));
  check("pwrite_hole", join({std::to_string(s.size()), std::to_string(std::count(s.begin(), s.end(), '\0'))}));
  {
    int fd = ::open(P("rw").c_str(), O_RDWR | O_TRUNC);
    check("open_trunc_size", std::to_string(st_of(P("rw")).st_size));
    ::close(fd);
  }

  // --- truncate
  make_file("t", "0123456789");
  check("truncate_shrink", join({rc(::truncate(P("t").c_str(), 4)), read_all(P("t"))}));
  check("truncate_grow", join({rc(::truncate(P("t").c_str(), 8)), std::to_string(st_of(P("t")).st_size)}));
  check("truncate_dir", rc(::truncate(P("d").c_str(), 0)));
  check("truncate_missing", rc(::truncate(P("nope").c_str(), 0)));
  {
    int fd = ::open(P("t").c_str(), O_RDONLY);
    check("ftruncate_rdonly", rc(::ftruncate(fd, 0)));
    ::close(fd);
  }

  // --- chmod / chown
  check("chmod", join({rc(::chmod(P("f").c_str(), 0604)), mode_of(P("f"))}));
  check("chmod_setuid", join({rc(::chmod(P("f").c_str(), 04755)), mode_of(P("f"))}));
  check("chmod_missing", rc(::chmod(P("nope").c_str(), 0644)));
  check("chown", join({rc(::chown(P("f").c_str(), 65534, 65534)), std::to_string(st_of(P("f")).st_uid) + ":" + std::to_string(st_of(P("f")).st_gid)}));
  check("chown_clears_setuid", mode_of(P("f")));
  check("lchown_symlink", join({rc(::lchown(P("lnk").c_str(), 65534, 65534)), std::to_string(st_of(P("lnk")).st_uid)}));
  ::chown(P("f").c_str(), 0, 0);

  // --- permissions as another user (kernel checks through default_permissions)
  make_file("secret", "s", 0600);
  ::chmod(P("secret").c_str(), 0600);
  ::chmod(g_dir.c_str(), 0755);
  check("nobody_open_0600", as_nobody([] { return rc(::open(P("secret").c_str(), O_RDONLY)); }));
  check("nobody_chmod", as_nobody([] { return rc(::chmod(P("secret").c_str(), 0777)); }));
  check("nobody_unlink_in_0755", as_nobody([] { return rc(::unlink(P("secret").c_str())); }));
  check("nobody_create_in_0755", as_nobody([] { return rc(::open(P("nb").c_str(), O_CREAT | O_RDWR, 0644)); }));
  ::mkdir(P("pub").c_str(), 0777);
  ::chmod(P("pub").c_str(), 01777);
  make_file("pub/root_file", "r");
  check("nobody_create_in_1777", as_nobody([] {
    int fd = ::open(P("pub/nb").c_str(), O_CREAT | O_RDWR, 0644);
    if (fd < 0) return errname(errno);
    ::close(fd);
    struct stat st = st_of(P("pub/nb"));
    return std::to_string(st.st_uid) + ":" + std::to_string(st.st_gid);
  }));
  check("nobody_unlink_sticky_other", as_nobody([] { return rc(::unlink(P("pub/root_file").c_str())); }));
  check("nobody_mkdir_owner", as_nobody([] {
    if (::mkdir(P("pub/nbdir").c_str(), 0755) != 0) return errname(errno);
    return std::to_string(st_of(P("pub/nbdir")).st_uid);
  }));
  check("nobody_truncate_other", as_nobody([] { return rc(::truncate(P("rw").c_str(), 0)); }));
  check("nobody_utimes_other", as_nobody([] { return rc(::utimensat(AT_FDCWD, P("rw").c_str(), nullptr, 0)); }));
  ::mkdir(P("sgid").c_str(), 0777);
  ::chown(P("sgid").c_str(), 0, 123);
  ::chmod(P("sgid").c_str(), 02777);
  check("nobody_create_in_setgid_dir", as_nobody([] {
    int fd = ::open(P("sgid/x").c_str(), O_CREAT | O_RDWR, 0644);
    if (fd < 0) return errname(errno);
    ::close(fd);
    struct stat st = st_of(P("sgid/x"));
    return std::to_string(st.st_uid) + ":" + std::to_string(st.st_gid);
  }));

  // O_APPEND cleared by fcntl(F_SETFL): writes go where asked again.
  make_file("ap", "0123456789");
  {
    int fd = ::open(P("ap").c_str(), O_WRONLY | O_APPEND);
    check("append_cleared_by_fcntl",
          join({rc(::fcntl(fd, F_SETFL, 0)), rc(::pwrite(fd, "X", 1, 0)), read_all(P("ap"))}));
    ::close(fd);
  }

  // A truncating open by the owner (no CAP_FSETID) clears set-user-ID, and set-group-ID of a
  // group-executable file, as truncate(2) does.
  make_file("sid", "x");
  (void)!::chown(P("sid").c_str(), 65534, 65534);
  ::chmod(P("sid").c_str(), 06775);
  check("nobody_otrunc_clears_setuid", as_nobody([] {
    int fd = ::open(P("sid").c_str(), O_WRONLY | O_TRUNC);
    if (fd < 0) return errname(errno);
    ::close(fd);
    return mode_of(P("sid"));
  }));
  // Root without CAP_FSETID as well: the capability counts, not uid 0.
  ::chmod(P("sid").c_str(), 06775);
  check("root_no_fsetid_otrunc_clears_setuid", as_root_without(CAP_FSETID, [] {
    int fd = ::open(P("sid").c_str(), O_WRONLY | O_TRUNC);
    if (fd < 0) return errname(errno);
    ::close(fd);
    return mode_of(P("sid"));
  }));

  // A plain write (no truncate) by such a caller clears them too (the kernel's
  // file_remove_privs at each write), and so does one through a second descriptor of a
  // file another descriptor already has open.
  ::chmod(P("sid").c_str(), 06775);
  check("nobody_write_clears_setuid", as_nobody([] {
    int fd = ::open(P("sid").c_str(), O_WRONLY);
    if (fd < 0) return errname(errno);
    std::string r = rc(::pwrite(fd, "Z", 1, 0));
    ::close(fd);
    return r + " " + mode_of(P("sid"));
  }));
  ::chmod(P("sid").c_str(), 06775);
  check("nobody_write_beside_reader_clears_setuid", as_nobody([] {
    int rd = ::open(P("sid").c_str(), O_RDONLY);
    int fd = ::open(P("sid").c_str(), O_WRONLY);
    if (rd < 0 || fd < 0) return errname(errno);
    std::string r = rc(::pwrite(fd, "Y", 1, 0));
    ::close(fd);
    ::close(rd);
    return r + " " + mode_of(P("sid"));
  }));

  // --- mkdir / rmdir
  nlink_t before = st_of(g_dir).st_nlink;
  check("mkdir", join({rc(::mkdir(P("m").c_str(), 0750)), mode_of(P("m"))}));
  check("mkdir_parent_nlink", std::to_string(st_of(g_dir).st_nlink - before));
  check("mkdir_existing", rc(::mkdir(P("m").c_str(), 0755)));
  check("mkdir_missing_parent", rc(::mkdir(P("nope/m").c_str(), 0755)));
  check("mkdir_over_file", rc(::mkdir(P("f").c_str(), 0755)));
  make_file("m/inner", "x");
  check("rmdir_nonempty", rc(::rmdir(P("m").c_str())));
  check("rmdir_file", rc(::rmdir(P("f").c_str())));
  check("rmdir_missing", rc(::rmdir(P("nope").c_str())));
  check("rmdir_dot", rc(::rmdir(P("m/.").c_str())));
  ::unlink(P("m/inner").c_str());
  check("rmdir", join({rc(::rmdir(P("m").c_str())), rc(::access(P("m").c_str(), F_OK))}));

  // --- unlink / link
  check("unlink_dir", rc(::unlink(P("d").c_str())));
  check("unlink_missing", rc(::unlink(P("nope").c_str())));
  make_file("l1", "link");
  check("link", join({rc(::link(P("l1").c_str(), P("l2").c_str())), std::to_string(st_of(P("l1")).st_nlink)}));
  check("link_same_ino", st_of(P("l1")).st_ino == st_of(P("l2")).st_ino ? "same" : "different");
  check("link_existing", rc(::link(P("l1").c_str(), P("l2").c_str())));
  check("link_dir", rc(::link(P("d").c_str(), P("d2").c_str())));
  check("link_missing", rc(::link(P("nope").c_str(), P("l3").c_str())));
  check("unlink_one_link", join({rc(::unlink(P("l1").c_str())), std::to_string(st_of(P("l2")).st_nlink), read_all(P("l2"))}));
  {
    // One name of an open file removed (the overlay buries it: a link in its graveyard that
    // must not count), then a new link: every way of asking says 2 names.
    make_file("h1", "held");
    ::link(P("h1").c_str(), P("h2").c_str());
    int fd = ::open(P("h1").c_str(), O_RDONLY);
    ::unlink(P("h1").c_str());
    struct stat held {};
    ::fstat(fd, &held);
    check("link_after_unlink_of_open_name",
          join({rc(::link(P("h2").c_str(), P("h3").c_str())), std::to_string(st_of(P("h3")).st_nlink),
                std::to_string(st_of(P("h2")).st_nlink), std::to_string(held.st_nlink)}));
    ::close(fd);
  }

  // --- symlink / readlink
  char buf[256];
  ssize_t n = ::readlink(P("lnk").c_str(), buf, sizeof buf);
  check("readlink", n < 0 ? errname(errno) : std::string(buf, static_cast<size_t>(n)));
  check("symlink_mode_type", S_ISLNK(st_of(P("lnk")).st_mode) ? "link" : "other");
  check("symlink_existing", rc(::symlink("x", P("lnk").c_str())));
  check("readlink_file", rc(::readlink(P("f").c_str(), buf, sizeof buf)));
  check("symlink_dangling", join({rc(::symlink("nowhere", P("dang").c_str())), rc(::open(P("dang").c_str(), O_RDONLY))}));
  check("symlink_long_target", rc(::symlink(std::string(1000, 'x').c_str(), P("longlnk").c_str())));

  // --- rename
  make_file("r1", "one");
  make_file("r2", "two");
  ino_t ino1 = st_of(P("r1")).st_ino;
  check("rename_replace", join({rc(::rename(P("r1").c_str(), P("r2").c_str())), read_all(P("r2")), rc(::access(P("r1").c_str(), F_OK))}));
  check("rename_keeps_ino", st_of(P("r2")).st_ino == ino1 ? "same" : "different");
  check("rename_missing", rc(::rename(P("nope").c_str(), P("r3").c_str())));
  {
    // RENAME_WHITEOUT (root: CAP_MKNOD) leaves a 0:0 character device at the old name.
    make_file("w1", "w");
    make_file("w2", "old");
    long r = ::syscall(SYS_renameat2, AT_FDCWD, P("w1").c_str(), AT_FDCWD, P("w2").c_str(), 1u << 2);
    struct stat st {};
    check("rename_whiteout", join({rc(r), r == 0 && ::lstat(P("w1").c_str(), &st) == 0 && S_ISCHR(st.st_mode) ? "whiteout" : "none",
                                   read_all(P("w2"))}));
  }
  check("rename_file_over_dir", rc(::rename(P("r2").c_str(), P("d").c_str())));
  check("rename_dir_over_file", rc(::rename(P("d").c_str(), P("r2").c_str())));
  ::mkdir(P("e1").c_str(), 0755);
  ::mkdir(P("e2").c_str(), 0755);
  make_file("e2/x", "x");
  check("rename_dir_over_nonempty", rc(::rename(P("e1").c_str(), P("e2").c_str())));
  ::unlink(P("e2/x").c_str());
  check("rename_dir_over_empty", rc(::rename(P("e1").c_str(), P("e2").c_str())));
  check("rename_into_own_subdir", rc(::rename(P("e2").c_str(), P("e2/sub").c_str())));
  ::link(P("r2").c_str(), P("r2b").c_str());
  check("rename_hardlinks_noop", join({rc(::rename(P("r2").c_str(), P("r2b").c_str())), rc(::access(P("r2").c_str(), F_OK))}));
  make_file("x1", "a");
  make_file("x2", "b");
  check("rename_noreplace", rc(::syscall(SYS_renameat2, AT_FDCWD, P("x1").c_str(), AT_FDCWD, P("x2").c_str(), 1)));
  check("rename_exchange", join({rc(::syscall(SYS_renameat2, AT_FDCWD, P("x1").c_str(), AT_FDCWD, P("x2").c_str(), 2)), read_all(P("x1")) + read_all(P("x2"))}));
  check("rename_dir_then_list", join({rc(::rename(P("d").c_str(), P("d_moved").c_str())), list_dir(P("d_moved"))}));

  // --- times
  struct timespec ts[2] = {{1000000000, 123456789}, {1200000000, 987654321}};
  check("utimensat", join({rc(::utimensat(AT_FDCWD, P("f").c_str(), ts, 0)), std::to_string(st_of(P("f")).st_atim.tv_sec) + "." + std::to_string(st_of(P("f")).st_atim.tv_nsec), std::to_string(st_of(P("f")).st_mtim.tv_sec) + "." + std::to_string(st_of(P("f")).st_mtim.tv_nsec)}));
  struct timespec omit[2] = {{0, UTIME_OMIT}, {5, 0}};
  check("utimensat_omit", join({rc(::utimensat(AT_FDCWD, P("f").c_str(), omit, 0)), std::to_string(st_of(P("f")).st_atim.tv_sec), std::to_string(st_of(P("f")).st_mtim.tv_sec)}));
  check("utimensat_symlink_nofollow", join({rc(::utimensat(AT_FDCWD, P("lnk").c_str(), ts, AT_SYMLINK_NOFOLLOW)), std::to_string(st_of(P("lnk")).st_mtim.tv_sec)}));
  {
    struct stat a = st_of(P("rw"));
    ::usleep(20000);
    make_file("rw", "changed");
    struct stat b = st_of(P("rw"));
    check("write_updates_mtime", (b.st_mtim.tv_sec > a.st_mtim.tv_sec ||
                                  (b.st_mtim.tv_sec == a.st_mtim.tv_sec && b.st_mtim.tv_nsec > a.st_mtim.tv_nsec)) ? "newer" : "same");
  }

  // --- special files
  check("mkfifo", join({rc(::mkfifo(P("fifo").c_str(), 0600)), mode_of(P("fifo"))}));
  check("mknod_socket", join({rc(::mknod(P("sock").c_str(), S_IFSOCK | 0600, 0)), mode_of(P("sock"))}));
  check("mknod_chardev", join({rc(::mknod(P("null").c_str(), S_IFCHR | 0600, makedev(1, 3))), mode_of(P("null"))}));

  // --- open files outlive their names
  make_file("held", "held data");
  {
    int fd = ::open(P("held").c_str(), O_RDWR);
    check("unlink_open", join({rc(::unlink(P("held").c_str())), rc(::access(P("held").c_str(), F_OK))}));
    struct stat st{};
    ::fstat(fd, &st);
    check("fstat_after_unlink_nlink", std::to_string(st.st_nlink));
    check("read_after_unlink", read_fd(fd));
    check("write_after_unlink", join({rc(::pwrite(fd, "H", 1, 0)), read_fd(fd)}));
    check("fchmod_after_unlink", rc(::fchmod(fd, 0600)));
    check("recreate_name_while_open", join({make_file("held", "new"), read_all(P("held")), read_fd(fd)}));
    ::close(fd);
  }
  make_file("over_target", "old");
  make_file("over_src", "new");
  {
    int fd = ::open(P("over_target").c_str(), O_RDONLY);
    check("rename_over_open", join({rc(::rename(P("over_src").c_str(), P("over_target").c_str())), read_fd(fd), read_all(P("over_target"))}));
    ::close(fd);
  }
  ::mkdir(P("gone").c_str(), 0755);
  make_file("gone/seg", "segment");
  {
    int fd = ::open(P("gone/seg").c_str(), O_RDONLY);
    check("rmdir_after_unlink_open", join({rc(::unlink(P("gone/seg").c_str())), rc(::rmdir(P("gone").c_str())), read_fd(fd)}));
    ::close(fd);
  }

  // --- mmap
  make_file("map", std::string(8192, 'a'));
  {
    int fd = ::open(P("map").c_str(), O_RDWR);
    void* p = ::mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      check("mmap_shared_write", errname(errno));
    } else {
      std::memcpy(static_cast<char*>(p) + 4096, "mapped", 6);
      ::msync(p, 8192, MS_SYNC);
      ::close(fd);
      check("mmap_shared_write", read_all(P("map")).substr(4096, 6));
      ::unlink(P("map").c_str());
      check("mmap_after_unlink", std::string(static_cast<char*>(p) + 4096, 6));
      ::munmap(p, 8192);
    }
  }

  // --- fallocate, copy_file_range, lseek
  {
    int fd = ::open(P("fa").c_str(), O_RDWR | O_CREAT, 0644);
    check("posix_fallocate", join({std::to_string(::posix_fallocate(fd, 0, 65536)), std::to_string(st_of(P("fa")).st_size)}));
    check("fallocate_keep_size", join({rc(::fallocate(fd, FALLOC_FL_KEEP_SIZE, 65536, 65536)), std::to_string(st_of(P("fa")).st_size)}));
    check("fallocate_punch_hole", rc(::fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096)));
    ::close(fd);
  }
  make_file("cs", "copy this text");
  {
    int in = ::open(P("cs").c_str(), O_RDONLY);
    int out = ::open(P("cd").c_str(), O_WRONLY | O_CREAT, 0644);
    ssize_t c = ::copy_file_range(in, nullptr, out, nullptr, 1 << 20, 0);
    ::close(in);
    ::close(out);
    check("copy_file_range", join({(c < 0 ? errname(errno) : std::to_string(c)), read_all(P("cd"))}));
  }
  {
    int fd = ::open(P("sparse").c_str(), O_RDWR | O_CREAT, 0644);
    (void)!::pwrite(fd, "x", 1, 1 << 20);
    check("lseek_data", std::to_string(::lseek(fd, 0, SEEK_DATA) >= 0 ? 1 : -errno));
    check("lseek_hole", std::to_string(::lseek(fd, 0, SEEK_HOLE)));
    ::close(fd);
  }

  // --- xattrs
  check("setxattr", rc(::setxattr(P("f").c_str(), "user.k", "v1", 2, 0)));
  n = ::getxattr(P("f").c_str(), "user.k", buf, sizeof buf);
  check("getxattr", n < 0 ? errname(errno) : std::string(buf, static_cast<size_t>(n)));
  check("getxattr_size", std::to_string(::getxattr(P("f").c_str(), "user.k", nullptr, 0)));
  check("getxattr_missing", rc(::getxattr(P("f").c_str(), "user.none", buf, sizeof buf)));
  check("setxattr_create_existing", rc(::setxattr(P("f").c_str(), "user.k", "v", 1, XATTR_CREATE)));
  check("setxattr_replace_missing", rc(::setxattr(P("f").c_str(), "user.z", "v", 1, XATTR_REPLACE)));
  n = ::listxattr(P("f").c_str(), buf, sizeof buf);
  {
    std::string names;
    for (ssize_t i = 0; i < n; i += static_cast<ssize_t>(std::strlen(buf + i)) + 1)
      if (std::strncmp(buf + i, "user.", 5) == 0) names += std::string(buf + i) + ";";
    check("listxattr_user", n < 0 ? errname(errno) : names);
  }
  check("getxattr_small_buffer", rc(::getxattr(P("f").c_str(), "user.k", buf, 1)));
  check("removexattr", join({rc(::removexattr(P("f").c_str(), "user.k")), rc(::removexattr(P("f").c_str(), "user.k"))}));
  check("setxattr_dir", rc(::setxattr(P("d_moved").c_str(), "user.d", "1", 1, 0)));
  // trusted.* names are listed only to a caller with CAP_SYS_ADMIN (the overlay lists as root).
  make_file("tx", "t");
  ::chmod(P("tx").c_str(), 0644);
  (void)::setxattr(P("tx").c_str(), "trusted.nfsshim_t", "1", 1, 0);
  (void)::setxattr(P("tx").c_str(), "user.pub", "1", 1, 0);
  auto list_tx = [] {
    char names[1024];
    ssize_t size = ::listxattr(P("tx").c_str(), nullptr, 0);
    ssize_t len = ::listxattr(P("tx").c_str(), names, sizeof names);
    if (size < 0 || len < 0) return errname(errno);
    std::string seen;
    for (ssize_t i = 0; i < len; i += static_cast<ssize_t>(std::strlen(names + i)) + 1)
      if (std::strncmp(names + i, "trusted.", 8) == 0 || std::strncmp(names + i, "user.", 5) == 0)
        seen += std::string(names + i) + ";";
    return seen + (size == len ? "size_ok" : "size_differs");
  };
  check("nobody_listxattr_trusted", as_nobody(list_tx));
  // Capabilities, not uid 0: root without CAP_SYS_ADMIN (a container's) is not shown them.
  check("root_no_sys_admin_listxattr_trusted", as_root_without(CAP_SYS_ADMIN, list_tx));

  // --- locks (kept by the kernel through the mount: same answers on one host)
  make_file("lock", "l");
  {
    int a = ::open(P("lock").c_str(), O_RDWR), b = ::open(P("lock").c_str(), O_RDWR);
    check("flock_conflict", join({rc(::flock(a, LOCK_EX | LOCK_NB)), rc(::flock(b, LOCK_EX | LOCK_NB))}));
    struct flock fl{};
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    check("posix_lock", rc(::fcntl(a, F_SETLK, &fl)));
    pid_t pid = ::fork();
    if (pid == 0) {
      int c = ::open(P("lock").c_str(), O_RDWR);
      struct flock g{};
      g.l_type = F_WRLCK;
      g.l_whence = SEEK_SET;
      ::_exit(::fcntl(c, F_SETLK, &g) == 0 ? 0 : (errno == EAGAIN || errno == EACCES) ? 1 : 2);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    check("posix_lock_conflict_other_process", std::to_string(WEXITSTATUS(status)));
    ::close(a);
    ::close(b);
  }

  // --- directories
  ::mkdir(P("ls").c_str(), 0755);
  for (const char* nm : {"a", "b", "c"}) make_file(std::string("ls/") + nm, nm);
  check("readdir", list_dir(P("ls")));
  ::unlink(P("ls/b").c_str());
  check("readdir_after_unlink", list_dir(P("ls")));
  {
    int fd = ::open(P("ls").c_str(), O_RDONLY | O_DIRECTORY);
    check("fsync_dir", rc(::fsync(fd)));
    ::close(fd);
  }
  {
    int fd = ::open(P("ls/a").c_str(), O_RDWR);
    check("fsync_fdatasync", join({rc(::fsync(fd)), rc(::fdatasync(fd))}));
    ::close(fd);
  }
  struct statvfs sv;
  check("statvfs", join({rc(::statvfs(g_dir.c_str(), &sv)), (sv.f_bsize > 0 ? "bsize" : "zero")}));
  check("dir_nlink", std::to_string(st_of(P("ls")).st_nlink));
}

void remove_tree(const std::string& p) {
  struct stat st;
  if (::lstat(p.c_str(), &st) != 0) return;
  if (S_ISDIR(st.st_mode)) {
    ::chmod(p.c_str(), 0755);
    if (DIR* d = ::opendir(p.c_str())) {
      std::vector<std::string> names;
      while (dirent* e = ::readdir(d))
        if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, "..")) names.push_back(e->d_name);
      ::closedir(d);
      for (const auto& n : names) remove_tree(p + "/" + n);
    }
    ::rmdir(p.c_str());
  } else {
    ::unlink(p.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: posix_suite DIR\n");
    return 2;
  }
  ::umask(022);
  g_dir = std::string(argv[1]) + "/posix_suite." + std::to_string(::getpid());
  if (::mkdir(g_dir.c_str(), 0755) != 0) {
    std::perror("mkdir");
    return 2;
  }
  run_all();
  remove_tree(g_dir);
  return 0;
}
