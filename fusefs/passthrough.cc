// Kernel passthrough through our own io on /dev/fuse (passthrough.h says why and how).
#include "passthrough.h"

#include <errno.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

#include "nfsshim/log.h"

namespace nfsshim::fuse::passthrough {
namespace {

// From the kernel's include/uapi/linux/fuse.h (protocol 7.40, Linux 6.9); libfuse 3.14's
// copy of that header is 7.38 and not installed.
constexpr uint32_t kOpOpen = 14, kOpInit = 26, kOpCreate = 35;
constexpr uint32_t kParallelDirops = 1u << 18;  // FUSE_PARALLEL_DIROPS
constexpr uint32_t kInitExt = 1u << 30;      // FUSE_INIT_EXT: flags2 is there
constexpr uint32_t kPassthrough2 = 1u << 5;  // FUSE_PASSTHROUGH (1ULL << 37), in flags2
constexpr uint32_t kOpenPassthrough = 1u << 7;  // FOPEN_PASSTHROUGH
// The backing file may not itself be on a stacked filesystem (overlayfs, another
// passthrough FUSE mount): ours is one level above it.
constexpr uint32_t kMaxStackDepth = 1;

struct InHeader {
  uint32_t len, opcode;
  uint64_t unique, nodeid;
  uint32_t uid, gid, pid;
  uint16_t total_extlen, padding;
};
struct InitIn {
  uint32_t major, minor, max_readahead, flags, flags2;
};
struct OutHeader {
  uint32_t len;
  int32_t error;
  uint64_t unique;
};
constexpr size_t kInitOutFlags = 12, kInitOutFlags2 = 32, kInitOutStackDepth = 36, kInitOutMin = 40;
struct OpenOut {
  uint64_t fh;
  uint32_t open_flags;
  int32_t backing_id;
};
struct BackingMap {
  int32_t fd;
  uint32_t flags;
  uint64_t padding;
};
static_assert(sizeof(InHeader) == 40 && sizeof(OutHeader) == 16 && sizeof(OpenOut) == 16 &&
                  sizeof(BackingMap) == 16,
              "FUSE protocol structs");
constexpr unsigned long kIocBackingOpen = _IOW(229, 1, BackingMap);
constexpr unsigned long kIocBackingClose = _IOW(229, 2, uint32_t);

std::atomic<int> g_fd{-1};
std::atomic<bool> g_wanted{false};  // install() was asked for passthrough
std::atomic<bool> g_offered{false};
std::atomic<bool> g_active{false};
// FUSE_PARALLEL_DIROPS offered by the kernel, and asked for in our INIT reply: lookups and
// readdirs in one directory run at once instead of one after another on the directory's
// lock. libfuse wants it by default (FUSE_CAP_PARALLEL_DIROPS) but its do_init never puts
// it into the reply (3.14; fusefs/README.md), so a lookup stuck on a slow NFS server held
// up every other lookup in that directory.
std::atomic<bool> g_dirops_offered{false};
std::atomic<bool> g_parallel_dirops{false};

// The request this thread read last, and so serves now (every loop serves what it read).
thread_local uint64_t t_unique = 0;
thread_local uint32_t t_opcode = 0;
thread_local int t_backing_id = 0;  // mark_reply
thread_local bool t_carried = false;

[[maybe_unused]] ssize_t io_read(int fd, void* buf, size_t len, void*) {
  ssize_t n = ::read(fd, buf, len);
  if (n >= static_cast<ssize_t>(sizeof(InHeader))) {
    InHeader h;
    std::memcpy(&h, buf, sizeof h);
    t_unique = h.unique;
    t_opcode = h.opcode;
    if (h.opcode == kOpInit && static_cast<size_t>(n) >= sizeof h + sizeof(InitIn)) {
      InitIn in;
      std::memcpy(&in, static_cast<char*>(buf) + sizeof h, sizeof in);
      // flags2 exists from protocol 7.36 on, and counts only with FUSE_INIT_EXT.
      g_offered = g_wanted && in.minor >= 36 && (in.flags & kInitExt) && (in.flags2 & kPassthrough2);
      g_dirops_offered = (in.flags & kParallelDirops) != 0;
    }
  }
  return n;
}

// The reply in IOV (header, then one payload iovec, as libfuse sends a reply) with its
// payload copied and changed by EDIT.
template <typename Edit>
ssize_t write_edited(int fd, struct iovec* iov, int count, size_t min_len, Edit edit) {
  char payload[256];
  if (count != 2 || iov[1].iov_len < min_len || iov[1].iov_len > sizeof payload) return -2;
  std::memcpy(payload, iov[1].iov_base, iov[1].iov_len);
  edit(payload, iov[1].iov_len);
  struct iovec out[2] = {iov[0], {payload, iov[1].iov_len}};
  return ::writev(fd, out, 2);
}

[[maybe_unused]] ssize_t io_writev(int fd, struct iovec* iov, int count, void*) {
  OutHeader h{};
  if (count >= 1 && iov[0].iov_len == sizeof h) std::memcpy(&h, iov[0].iov_base, sizeof h);
  const bool ours = t_unique != 0 && h.unique == t_unique && h.error == 0;
  ssize_t n = -2;
  if (ours && t_opcode == kOpInit && (g_offered || g_dirops_offered)) {
    const bool pt = g_offered, dirops = g_dirops_offered;
    n = write_edited(fd, iov, count, pt ? kInitOutMin : kInitOutFlags + 4, [pt, dirops](char* p, size_t) {
      uint32_t v;
      std::memcpy(&v, p + kInitOutFlags, 4);
      if (dirops) v |= kParallelDirops;
      if (pt) v |= kInitExt;
      std::memcpy(p + kInitOutFlags, &v, 4);
      if (!pt) return;
      std::memcpy(&v, p + kInitOutFlags2, 4);
      v |= kPassthrough2;
      std::memcpy(p + kInitOutFlags2, &v, 4);
      std::memcpy(p + kInitOutStackDepth, &kMaxStackDepth, 4);
    });
    if (n >= 0) {
      g_active = pt;
      g_parallel_dirops = dirops;
    }
  } else if (ours && (t_opcode == kOpOpen || t_opcode == kOpCreate) && t_backing_id > 0) {
    const int id = t_backing_id;
    // fuse_open_out ends the payload (CREATE: after fuse_entry_out).
    n = write_edited(fd, iov, count, sizeof(OpenOut), [id](char* p, size_t len) {
      OpenOut o;
      std::memcpy(&o, p + len - sizeof o, sizeof o);
      o.open_flags |= kOpenPassthrough;
      o.backing_id = id;
      std::memcpy(p + len - sizeof o, &o, sizeof o);
    });
    t_carried = n >= 0;
  }
  if (n == -2) n = ::writev(fd, iov, count);  // not ours to change
  return n;
}

[[maybe_unused]] ssize_t io_splice(int fdin, off_t* offin, int fdout, off_t* offout, size_t len, unsigned flags,
                                    void*) {
  return ::splice(fdin, offin, fdout, offout, len, flags);
}

}  // namespace

bool install(fuse_session* se, bool passthrough, std::string* why) {
#if NFSSHIM_HAVE_PASSTHROUGH
  // With passthrough, requests are read, not spliced (no splice_receive): io_read sees each
  // request's header, which the OPEN and CREATE replies need. Without, only INIT's reply is
  // edited, and INIT is always read (splice is agreed in it), so WRITE requests may come
  // through a pipe (FUSE_CAP_SPLICE_READ; nfs:// mounts). Replies are spliced either way.
  static const fuse_custom_io io_pt = {io_writev, io_read, nullptr, io_splice};
  static const fuse_custom_io io_plain = {io_writev, io_read, io_splice, io_splice};
  g_wanted = passthrough;  // before INIT is read
  const int fd = fuse_session_fd(se);
  if (int rc = fuse_session_custom_io(se, passthrough ? &io_pt : &io_plain, fd); rc != 0) {
    *why = std::string("fuse_session_custom_io failed: ") + std::strerror(rc < 0 ? -rc : rc);
    return false;
  }
  g_fd = fd;
  return true;
#else
  (void)se;
  (void)passthrough;
  *why = "built against libfuse " + std::to_string(NFSSHIM_LIBFUSE_VERSION / 100) + "." +
         std::to_string(NFSSHIM_LIBFUSE_VERSION % 100) + ", which has no fuse_session_custom_io (3.14)";
  return false;
#endif
}

void say_off(bool asked, const std::string& msg) {
  if (asked)
    SHIM_LOG_WARN("passthrough: off, {}", msg);
  else
    SHIM_LOG_INFO("passthrough: off, {}", msg);
}

bool kernel_offers() { return g_offered.load(); }
bool active() { return g_active.load(); }
bool parallel_dirops() { return g_parallel_dirops.load(); }

int backing_open(int fd) {
  BackingMap map{};
  map.fd = fd;
  int id = ::ioctl(g_fd.load(), kIocBackingOpen, &map);
  if (id >= 0) return id;
  int err = errno;
  if (err == EPERM || err == ELOOP) g_active = false;  // no other file would do better
  return -err;
}

void backing_close(int id) {
  uint32_t v = static_cast<uint32_t>(id);
  if (::ioctl(g_fd.load(), kIocBackingClose, &v) != 0)
    SHIM_LOG_WARN("passthrough: closing backing id {} failed: {}", id, std::strerror(errno));
}

// Sends a reply (SEND) that io_writev gives backing id ID; whether it did, in *CARRIED.
template <typename Send>
static int reply_with(int id, bool* carried, Send send) {
  t_backing_id = id;
  t_carried = false;
  int rv = send();
  *carried = t_carried;
  t_backing_id = 0;
  return rv;
}

int reply_open(fuse_req_t req, const fuse_file_info* fi, int id, bool* carried) {
  return reply_with(id, carried, [&] { return fuse_reply_open(req, fi); });
}

int reply_create(fuse_req_t req, const fuse_entry_param* e, const fuse_file_info* fi, int id,
                 bool* carried) {
  return reply_with(id, carried, [&] { return fuse_reply_create(req, e, fi); });
}

}  // namespace nfsshim::fuse::passthrough
