// XDR (RFC 4506) encoder into a growable buffer. Encoding cannot fail except by
// running out of memory; limits on what may be encoded are checked by the callers
// (the protocol layers know the limits, the encoder does not).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace nfsshim::rpc {

class XdrEncoder {
 public:
  XdrEncoder() = default;
  // Room for N bytes at once: a buffer grown word by word is reallocated ~8 times for a
  // 200-byte call.
  void reserve(size_t n) { buf_.reserve(n); }

  void u32(uint32_t v);
  void i32(int32_t v) { u32(static_cast<uint32_t>(v)); }
  void u64(uint64_t v);
  void i64(int64_t v) { u64(static_cast<uint64_t>(v)); }
  void boolean(bool v) { u32(v ? 1 : 0); }
  // opaque[n]: the bytes, then zero padding to a multiple of 4.
  void fixed_opaque(const void* data, size_t n);
  // opaque<>: a length word, the bytes, zero padding.
  void opaque(const void* data, size_t n);
  void string(const std::string& s) { opaque(s.data(), s.size()); }

  // Reserves a word to be filled in later (counts known only at the end).
  size_t reserve_u32();
  void patch_u32(size_t pos, uint32_t v);

  size_t size() const { return buf_.size(); }
  const uint8_t* data() const { return buf_.data(); }
  const std::vector<uint8_t>& bytes() const { return buf_; }
  std::vector<uint8_t> take() { return std::move(buf_); }

 private:
  std::vector<uint8_t> buf_;
};

}  // namespace nfsshim::rpc
