// Bounds-checked XDR (RFC 4506) decoder over a borrowed byte range. It never reads
// past the end: every length is checked against what remains and against a maximum
// given by the caller. The first failure is sticky: it records what was being decoded
// (error()) and every later call fails too, so a decode function may check once at
// the end or at every step. Failures return -EBADMSG.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace nfsshim::rpc {

class XdrDecoder {
 public:
  XdrDecoder(const uint8_t* data, size_t len) : p_(data), len_(len) {}
  template <class Alloc>
  explicit XdrDecoder(const std::vector<uint8_t, Alloc>& v) : p_(v.data()), len_(v.size()) {}

  int u32(uint32_t* v);
  int i32(int32_t* v);
  int u64(uint64_t* v);
  int i64(int64_t* v);
  int boolean(bool* v);  // only 0 and 1 are valid
  int fixed_opaque(void* dst, size_t n);
  // opaque<max>: copies out; fails if the length word exceeds max or what remains.
  int opaque(std::vector<uint8_t>* out, size_t max);
  int string(std::string* out, size_t max);
  // N raw bytes passed over (an XDR pad whose data was taken out of the buffer).
  int skip(size_t n);
  // opaque<max> without copying: *data points into the decoded buffer.
  int opaque_view(const uint8_t** data, size_t* n, size_t max);
  // An array length for elements of at least min_elem_bytes each: fails if over
  // max or if that many elements cannot fit into what remains.
  int array_count(uint32_t* n, uint32_t max, size_t min_elem_bytes, const char* what);

  // Records the first failure (what) and returns -EBADMSG.
  int fail(const char* what);
  // Fails unless every byte was consumed (trailing garbage).
  int expect_end(const char* what);

  bool ok() const { return error_ == nullptr; }
  const char* error() const { return error_ ? error_ : ""; }
  size_t pos() const { return pos_; }
  size_t remaining() const { return len_ - pos_; }
  const uint8_t* cursor() const { return p_ + pos_; }

 private:
  int need(size_t n, const char* what);

  const uint8_t* p_;
  size_t len_;
  size_t pos_ = 0;
  const char* error_ = nullptr;
};

// Length of n bytes padded to the XDR unit of 4.
inline size_t xdr_pad(size_t n) { return (n + 3) & ~size_t{3}; }

}  // namespace nfsshim::rpc
