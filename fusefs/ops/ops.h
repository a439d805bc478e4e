// One function per FUSE low-level operation (ops_table.cc wires them).
#pragma once

#include "fuse_api.h"

namespace nfsshim::fuse::ops {

void init(void* userdata, fuse_conn_info* conn);
void lookup(fuse_req_t req, fuse_ino_t parent, const char* name);
void forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup);
void forget_multi(fuse_req_t req, size_t count, fuse_forget_data* forgets);
void getattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
void setattr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int valid, fuse_file_info* fi);
void readlink(fuse_req_t req, fuse_ino_t ino);
void mknod(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, dev_t rdev);
void mkdir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode);
void symlink(fuse_req_t req, const char* link, fuse_ino_t parent, const char* name);
void unlink(fuse_req_t req, fuse_ino_t parent, const char* name);
void rmdir(fuse_req_t req, fuse_ino_t parent, const char* name);
void rename(fuse_req_t req, fuse_ino_t parent, const char* name, fuse_ino_t newparent,
            const char* newname, unsigned int flags);
void link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char* newname);
void create(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, fuse_file_info* fi);
void open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
void read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi);
void write_buf(fuse_req_t req, fuse_ino_t ino, fuse_bufvec* in, off_t off, fuse_file_info* fi);
void flush(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
void fsync(fuse_req_t req, fuse_ino_t ino, int datasync, fuse_file_info* fi);
void release(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
void fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len, fuse_file_info* fi);
#if NFSSHIM_HAVE_COPY_FILE_RANGE
void copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in, fuse_file_info* fi_in,
                     fuse_ino_t ino_out, off_t off_out, fuse_file_info* fi_out, size_t len,
                     int flags);
#endif
#if NFSSHIM_HAVE_LSEEK
void lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, fuse_file_info* fi);
#endif
void opendir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
void readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi);
void readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi);
void releasedir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
void fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, fuse_file_info* fi);
void statfs(fuse_req_t req, fuse_ino_t ino);
void setxattr(fuse_req_t req, fuse_ino_t ino, const char* name, const char* value, size_t size,
              int flags);
void getxattr(fuse_req_t req, fuse_ino_t ino, const char* name, size_t size);
void listxattr(fuse_req_t req, fuse_ino_t ino, size_t size);
void removexattr(fuse_req_t req, fuse_ino_t ino, const char* name);

}  // namespace nfsshim::fuse::ops
