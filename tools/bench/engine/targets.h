// The engine under test behind one interface, so that engine_bench runs the same phases
// on the NFSv3 engine (nfs/engine.h) and the NFSv4.1 session engine (nfs41/engine.h).
// Both write UNSTABLE and COMMIT when 16 MiB are retained (and at the end), keeping a copy
// of what is not yet committed and re-sending it FILE_SYNC if the verifier changed.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

class Target {
 public:
  virtual ~Target() = default;
  virtual const char* vers() const = 0;  // "3" or "4.1"
  virtual const char* io() const = 0;    // "io_uring" or "epoll"
  virtual int nconnect() const = 0;
  virtual uint32_t rsize() const = 0;
  virtual uint32_t wsize() const = 0;
  // The write phase's file: removed if there, created empty, kept open. 0 or -errno.
  virtual int create(const std::string& name) = 0;
  // The read phases' file when there was no write phase. 0 or -errno.
  virtual int open_existing(const std::string& name) = 0;
  // UNSTABLE; a COMMIT once 16 MiB are retained. Bytes written or -errno.
  virtual ssize_t write(uint64_t off, const char* buf, size_t n) = 0;
  virtual int commit() = 0;
  virtual ssize_t read(uint64_t off, size_t n, char* buf) = 0;

  struct Counters {
    uint64_t calls = 0;  // RPCs (v3) or compounds (v4.1) completed
    uint64_t loop_syscalls = 0;
    std::vector<uint64_t> per_conn;
  };
  virtual Counters counters() const = 0;
  // Figures only this engine has, as " key=value" pairs (v4.1: slots, retries).
  virtual std::string extra() const { return ""; }
};

// URL with vers=3 (default) or vers=4.1 -> the matching engine, connected. 0 or -errno.
int open_target(const std::string& url, std::unique_ptr<Target>* out, std::string* why);
