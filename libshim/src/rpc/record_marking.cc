#include "nfsshim/rpc/record_marking.h"

#include <algorithm>
#include <cerrno>

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
      // Checked before buffering anything: a hostile length cannot make us allocate.
      if (frag_left_ > max_record_ - cur_.size()) {
        failed_ = true;
        cur_.clear();
        return -EMSGSIZE;
      }
      in_fragment_ = true;
      // Room for the whole fragment at once (bounded by the check above): a 1 MiB READ
      // reply grown from empty costs a dozen copies and fresh pages.
      cur_.reserve(cur_.size() + frag_left_);
    }
    size_t take = std::min(n, frag_left_);
    cur_.insert(cur_.end(), data, data + take);
    data += take;
    n -= take;
    frag_left_ -= take;
    if (frag_left_ == 0) {
      in_fragment_ = false;
      if (last_) {
        done_.push_back(std::move(cur_));
        cur_.clear();
      }
    }
  }
  return 0;
}

bool RecordFramer::next(std::vector<uint8_t>* record) {
  if (done_.empty()) return false;
  *record = std::move(done_.front());
  done_.pop_front();
  return true;
}

}  // namespace nfsshim::rpc
