// read, write_buf, fallocate, copy_file_range, lseek: data goes straight between the
// kernel and the backing descriptor (splice where libfuse can).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "backing_cache.h"
#include "fs.h"
#include "ops/ops.h"

namespace nfsshim::fuse::ops {

namespace {

// LEN bytes of DATA at OFF into FD from a page-aligned copy: a backing file opened with
// O_DIRECT takes only aligned buffers, and the data of a request libfuse read (not spliced)
// lies a header's length into its buffer.
ssize_t pwrite_aligned(int fd, const char* data, size_t len, off_t off) {
  struct Aligned {
    char* p = nullptr;
    size_t cap = 0;
    ~Aligned() { std::free(p); }
  };
  thread_local Aligned a;
  if (a.cap < len) {
    void* p = nullptr;
    if (posix_memalign(&p, 4096, len) != 0) return -ENOMEM;
    std::free(a.p);
    a.p = static_cast<char*>(p);
    a.cap = len;
  }
  std::memcpy(a.p, data, len);
  ssize_t n = ::pwrite(fd, a.p, len, off);
  return n < 0 ? -errno : n;
}

// -o drop_backing_cache: the data is copied out first and the backing pages dropped before
// the reply, while FD is surely ours: once the reply is out the file may be released and
// its descriptor number reused. Spliced, the pages would still be in the pipe (in use, so
// not dropped) until the reply.
void read_then_drop(fuse_req_t req, int fd, size_t size, off_t off) {
  thread_local std::vector<char> buf;
  if (buf.size() < size) buf.resize(size);
  ssize_t n = ::pread(fd, buf.data(), size, off);
  if (n < 0) return (void)fuse_reply_err(req, errno);
  drop_read(fd, off, static_cast<size_t>(n));
  fuse_reply_buf(req, buf.data(), static_cast<size_t>(n));
}

}  // namespace

void read(fuse_req_t req, fuse_ino_t, size_t size, off_t off, fuse_file_info* fi) {
  const int fd = static_cast<int>(fi->fh);
  if (fs_of(req).opts.drop_backing_cache && !(fi->flags & O_DIRECT))
    return read_then_drop(req, fd, size, off);
  fuse_bufvec buf = FUSE_BUFVEC_INIT(size);
  buf.buf[0].flags = static_cast<fuse_buf_flags>(FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK);
  buf.buf[0].fd = fd;
  buf.buf[0].pos = off;
  fuse_reply_data(req, &buf, FUSE_BUF_SPLICE_MOVE);
}

void write_buf(fuse_req_t req, fuse_ino_t, fuse_bufvec* in, off_t off, fuse_file_info* fi) {
  Fs& fs = fs_of(req);
  const bool piped = in->buf[0].flags & FUSE_BUF_IS_FD;
  if (piped) fs.piped_writes.fetch_add(1, std::memory_order_relaxed);
  const int fd = static_cast<int>(fi->fh);
  fuse_bufvec out = FUSE_BUFVEC_INIT(fuse_buf_size(in));
  out.buf[0].flags = static_cast<fuse_buf_flags>(FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK);
  out.buf[0].fd = fd;
  out.buf[0].pos = off;
  ssize_t n = fuse_buf_copy(&out, in, static_cast<fuse_buf_copy_flags>(0));
  // EINVAL from memory: maybe O_DIRECT's alignment (the backing file's flags decide, which
  // fi->flags need not show after fcntl). The aligned copy fails the same way otherwise.
  if (n == -EINVAL && !piped && in->count == 1)
    n = pwrite_aligned(fd, static_cast<const char*>(in->buf[0].mem) + in->off, fuse_buf_size(in), off);
  if (n < 0) return (void)fuse_reply_err(req, static_cast<int>(-n));
  if (fs.opts.drop_backing_cache) drop_written(fd, off, static_cast<size_t>(n));
  fuse_reply_write(req, static_cast<size_t>(n));
}

void fallocate(fuse_req_t req, fuse_ino_t, int mode, off_t off, off_t len, fuse_file_info* fi) {
  reply_status(req, neg(::fallocate(static_cast<int>(fi->fh), mode, off, len)));
}

#if NFSSHIM_HAVE_COPY_FILE_RANGE
void copy_file_range(fuse_req_t req, fuse_ino_t, off_t off_in, fuse_file_info* fi_in, fuse_ino_t,
                     off_t off_out, fuse_file_info* fi_out, size_t len, int flags) {
  loff_t in = off_in, out = off_out;
  ssize_t n = ::copy_file_range(static_cast<int>(fi_in->fh), &in, static_cast<int>(fi_out->fh),
                                &out, len, static_cast<unsigned>(flags));
  if (n < 0) return (void)fuse_reply_err(req, errno);
  fuse_reply_write(req, static_cast<size_t>(n));
}
#endif

#if NFSSHIM_HAVE_LSEEK
void lseek(fuse_req_t req, fuse_ino_t, off_t off, int whence, fuse_file_info* fi) {
  off_t res = ::lseek(static_cast<int>(fi->fh), off, whence);
  if (res == -1) return (void)fuse_reply_err(req, errno);
  fuse_reply_lseek(req, res);
}
#endif

}  // namespace nfsshim::fuse::ops
