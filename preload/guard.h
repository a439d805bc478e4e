// Reentrancy guard. While a thread is inside the shim's own machinery (scanning /proc,
// logging, reading config), calls it makes into interposed functions - and calls from a
// signal handler that interrupted it - must go straight to libc.
#pragma once

namespace nfsshim::preload {

// initial-exec: an LD_PRELOAD library is loaded at startup, so its TLS is static and
// reading it never calls __tls_get_addr (which may allocate).
extern __thread int tls_depth __attribute__((tls_model("initial-exec")));

// True in a child that shares our memory without the fork handlers having run (vfork, as
// JDK 8 and 11 launch processes, whose child closes every descriptor; a raw clone): the
// shim's state there is its parent's, so the child must leave it alone (one getpid).
bool foreign_child();

class Guard {
 public:
  Guard() : outer_(tls_depth++ == 0 && !foreign_child()) {}
  ~Guard() { --tls_depth; }
  Guard(const Guard&) = delete;
  Guard& operator=(const Guard&) = delete;
  // False if this thread was already inside the shim.
  bool outermost() const { return outer_; }

 private:
  bool outer_;
};

// Saves errno on construction and restores it on destruction, so that internal calls
// never change what the application sees on success.
class ErrnoKeeper {
 public:
  ErrnoKeeper();
  ~ErrnoKeeper();
  void set(int e) { saved_ = e; }

 private:
  int saved_;
};

}  // namespace nfsshim::preload
