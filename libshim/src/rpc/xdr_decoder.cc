#include "nfsshim/rpc/xdr_decoder.h"

#include <cerrno>
#include <cstring>

namespace nfsshim::rpc {

int XdrDecoder::fail(const char* what) {
  if (error_ == nullptr) error_ = what;
  return -EBADMSG;
}

int XdrDecoder::need(size_t n, const char* what) {
  if (error_ != nullptr) return -EBADMSG;
  if (n > len_ - pos_) return fail(what);
  return 0;
}

int XdrDecoder::u32(uint32_t* v) {
  if (int rc = need(4, "truncated: 32-bit word"); rc < 0) return rc;
  const uint8_t* b = p_ + pos_;
  *v = (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
  pos_ += 4;
  return 0;
}

int XdrDecoder::i32(int32_t* v) {
  uint32_t u;
  if (int rc = u32(&u); rc < 0) return rc;
  *v = static_cast<int32_t>(u);
  return 0;
}

int XdrDecoder::u64(uint64_t* v) {
  if (int rc = need(8, "truncated: 64-bit word"); rc < 0) return rc;
  uint32_t hi, lo;
  u32(&hi);
  u32(&lo);
  *v = (uint64_t{hi} << 32) | lo;
  return 0;
}

int XdrDecoder::i64(int64_t* v) {
  uint64_t u;
  if (int rc = u64(&u); rc < 0) return rc;
  *v = static_cast<int64_t>(u);
  return 0;
}

int XdrDecoder::boolean(bool* v) {
  uint32_t u;
  if (int rc = u32(&u); rc < 0) return rc;
  if (u > 1) return fail("bool is neither 0 nor 1");
  *v = u == 1;
  return 0;
}

int XdrDecoder::fixed_opaque(void* dst, size_t n) {
  // n is checked before padding it, so that a huge n cannot wrap around.
  if (int rc = need(n, "truncated: fixed opaque"); rc < 0) return rc;
  if (int rc = need(xdr_pad(n), "truncated: fixed opaque"); rc < 0) return rc;
  if (n > 0) std::memcpy(dst, p_ + pos_, n);
  pos_ += xdr_pad(n);
  return 0;
}

int XdrDecoder::skip(size_t n) {
  if (int rc = need(n, "truncated: bytes to skip"); rc < 0) return rc;
  pos_ += n;
  return 0;
}

int XdrDecoder::opaque_view(const uint8_t** data, size_t* n, size_t max) {
  uint32_t len;
  if (int rc = u32(&len); rc < 0) return rc;
  if (len > max) return fail("opaque longer than its limit");
  if (int rc = need(xdr_pad(len), "truncated: opaque data"); rc < 0) return rc;
  *data = p_ + pos_;
  *n = len;
  pos_ += xdr_pad(len);
  return 0;
}

int XdrDecoder::opaque(std::vector<uint8_t>* out, size_t max) {
  const uint8_t* d;
  size_t n;
  if (int rc = opaque_view(&d, &n, max); rc < 0) return rc;
  out->assign(d, d + n);
  return 0;
}

int XdrDecoder::string(std::string* out, size_t max) {
  const uint8_t* d;
  size_t n;
  if (int rc = opaque_view(&d, &n, max); rc < 0) return rc;
  out->assign(reinterpret_cast<const char*>(d), n);
  return 0;
}

int XdrDecoder::array_count(uint32_t* n, uint32_t max, size_t min_elem_bytes, const char* what) {
  if (int rc = u32(n); rc < 0) return rc;
  if (*n > max) return fail(what);
  if (min_elem_bytes > 0 && *n > remaining() / min_elem_bytes) return fail(what);
  return 0;
}

int XdrDecoder::expect_end(const char* what) {
  if (error_ != nullptr) return -EBADMSG;
  if (pos_ != len_) return fail(what);
  return 0;
}

}  // namespace nfsshim::rpc
