#include "nfsshim/rpc/xdr_encoder.h"

#include <cstring>

namespace nfsshim::rpc {

void XdrEncoder::u32(uint32_t v) {
  uint8_t b[4] = {static_cast<uint8_t>(v >> 24), static_cast<uint8_t>(v >> 16),
                  static_cast<uint8_t>(v >> 8), static_cast<uint8_t>(v)};
  buf_.insert(buf_.end(), b, b + 4);
}

void XdrEncoder::u64(uint64_t v) {
  u32(static_cast<uint32_t>(v >> 32));
  u32(static_cast<uint32_t>(v));
}

void XdrEncoder::fixed_opaque(const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  if (n > 0) buf_.insert(buf_.end(), p, p + n);
  buf_.insert(buf_.end(), (4 - n % 4) % 4, uint8_t{0});
}

void XdrEncoder::opaque(const void* data, size_t n) {
  u32(static_cast<uint32_t>(n));
  fixed_opaque(data, n);
}

size_t XdrEncoder::reserve_u32() {
  size_t pos = buf_.size();
  u32(0);
  return pos;
}

void XdrEncoder::patch_u32(size_t pos, uint32_t v) {
  buf_.at(pos + 3);  // throws on a wrong position instead of writing out of bounds
  buf_[pos] = static_cast<uint8_t>(v >> 24);
  buf_[pos + 1] = static_cast<uint8_t>(v >> 16);
  buf_[pos + 2] = static_cast<uint8_t>(v >> 8);
  buf_[pos + 3] = static_cast<uint8_t>(v);
}

}  // namespace nfsshim::rpc
