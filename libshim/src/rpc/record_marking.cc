#include "nfsshim/rpc/record_marking.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace nfsshim::rpc {

void frame_record(std::vector<uint8_t>* out, const uint8_t* data, size_t n, size_t max_fragment) {
  max_fragment = std::min(std::max<size_t>(max_fragment, 1), kMaxFragment);
  size_t off = 0;
  do {  // an empty record is still one (empty, last) fragment
    size_t len = std::min(n - off, max_fragment);
    uint32_t word = static_cast<uint32_t>(len) | (off + len == n ? kLastFragment : 0);
    uint8_t hdr[4] = {static_cast<uint8_t>(word >> 24), static_cast<uint8_t>(word >> 16),
                      static_cast<uint8_t>(word >> 8), static_cast<uint8_t>(word)};
    out->insert(out->end(), hdr, hdr + 4);
    out->insert(out->end(), data + off, data + off + len);
    off += len;
  } while (off < n);
}

int RecordFramer::feed(const uint8_t* data, size_t n) {
  if (failed_) return -EMSGSIZE;
  while (n > 0) {
    if (!in_fragment_) {
      size_t take = std::min(n, size_t{4} - hdr_have_);
      std::copy(data, data + take, hdr_ + hdr_have_);
      hdr_have_ += take;
      data += take;
      n -= take;
      if (hdr_have_ < 4) break;
      uint32_t word = (uint32_t{hdr_[0]} << 24) | (uint32_t{hdr_[1]} << 16) |
                      (uint32_t{hdr_[2]} << 8) | hdr_[3];
      hdr_have_ = 0;
      last_ = (word & kLastFragment) != 0;
      frag_left_ = word & ~kLastFragment;
      // Checked before allocating anything: a hostile length cannot make us allocate.
      if (frag_left_ > max_record_ - len_) {
        failed_ = true;
        cur_ = Record();
        len_ = 0;
        return -EMSGSIZE;
      }
      in_fragment_ = true;
      frag_start_ = len_;
      // Room for the whole fragment at once (bounded by the check above), so that
      // payload_span() can hand it out and a 1 MiB reply is not regrown piecewise.
      cur_.resize(len_ + frag_left_);
    }
    size_t take = std::min(n, frag_left_);
    if (take > 0) std::memcpy(cur_.data() + len_, data, take);
    data += take;
    n -= take;
    len_ += take;
    frag_left_ -= take;
    if (frag_left_ == 0) fragment_done();
  }
  return 0;
}

RecordFramer::Span RecordFramer::payload_span() {
  if (failed_ || !in_fragment_) return Span{nullptr, 0};
  return Span{cur_.data() + len_, frag_left_};
}

int RecordFramer::payload_written(size_t n) {
  if (failed_) return -EMSGSIZE;
  if (n > (in_fragment_ ? frag_left_ : 0)) return -EINVAL;
  len_ += n;
  frag_left_ -= n;
  if (in_fragment_ && frag_left_ == 0) fragment_done();
  return 0;
}

int RecordFramer::payload_elsewhere(size_t n) {
  if (failed_) return -EMSGSIZE;
  if (n > (in_fragment_ ? frag_left_ : 0)) return -EINVAL;
  frag_left_ -= n;
  cur_.resize(len_ + frag_left_);  // smaller: no reallocation, the bytes so far stay
  if (in_fragment_ && frag_left_ == 0) fragment_done();
  return 0;
}

int RecordFramer::take_back(size_t n) {
  if (failed_) return -EMSGSIZE;
  if (!in_fragment_ || n > len_ - frag_start_) return -EINVAL;
  len_ -= n;
  cur_.resize(len_ + frag_left_);
  return 0;
}

void RecordFramer::fragment_done() {
  in_fragment_ = false;
  if (!last_) return;
  done_.push_back(std::move(cur_));
  cur_ = Record();
  len_ = 0;
}

bool RecordFramer::next(Record* record) {
  if (done_.empty()) return false;
  *record = std::move(done_.front());
  done_.pop_front();
  return true;
}

}  // namespace nfsshim::rpc
