// ONC RPC record marking over TCP (RFC 5531 section 11): each record is sent as
// fragments, each preceded by a 4-byte header whose top bit marks the last fragment
// and whose other 31 bits give the fragment's length. Pure byte logic, no sockets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <new>
#include <utility>
#include <vector>

namespace nfsshim::rpc {

// An allocator whose value-less construct() leaves the byte uninitialised: a record is
// sized for a whole fragment and then filled by recv(), so zeroing it first is waste
// (16% of a v4.1 engine's CPU per GiB read, measured with perf).
template <class T>
struct UninitAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = UninitAllocator<U>;
  };
  UninitAllocator() = default;
  template <class U>
  UninitAllocator(const UninitAllocator<U>&) noexcept {}
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... A>
  void construct(U* p, A&&... a) {
    ::new (static_cast<void*>(p)) U(std::forward<A>(a)...);
  }
};

// One deframed record (resize() does not zero what it adds).
using Record = std::vector<uint8_t, UninitAllocator<uint8_t>>;

// The end of a record that is sent from where it lies instead of being copied into the
// record's buffer (a WRITE's data): LEN bytes at DATA, then PAD zero bytes (XDR padding).
// OWNER keeps DATA alive for as long as the record may still be sent.
struct Tail {
  const uint8_t* data = nullptr;
  size_t len = 0;
  uint32_t pad = 0;
  std::shared_ptr<const void> owner;
  size_t size() const { return len + pad; }
};

constexpr uint32_t kLastFragment = 0x80000000u;
constexpr size_t kMaxFragment = 0x7fffffffu;

// Appends data to *out as one record of fragments of at most max_fragment bytes
// (max_fragment >= 1, at most kMaxFragment).
void frame_record(std::vector<uint8_t>* out, const uint8_t* data, size_t n,
                  size_t max_fragment = kMaxFragment);

// Incremental deframer: feed it whatever the socket gave, take whole records out.
// Big payloads need not pass through feed(): once a fragment's header is in,
// payload_span() is the record's own memory for the rest of that fragment, so a
// transport can recv() into it (no copy) and report the bytes with payload_written().
class RecordFramer {
 public:
  struct Span {
    uint8_t* data;
    size_t len;
  };

  // Records (the sum of their fragments) longer than max_record are refused.
  explicit RecordFramer(size_t max_record) : max_record_(max_record) {}

  // Consumes all n bytes. -EMSGSIZE if a record exceeds max_record; the stream is
  // then unusable (the caller closes the connection) and later feeds fail too.
  int feed(const uint8_t* data, size_t n);
  // Where the current fragment's remaining payload goes: {nullptr, 0} unless a
  // fragment header has been fed and payload is still due (the next bytes are a
  // header then: feed() them). Valid until the next call that changes the framer.
  Span payload_span();
  // N bytes were written at payload_span().data. -EINVAL if N exceeds payload_span().len
  // (nothing is taken), -EMSGSIZE if the stream failed before.
  int payload_written(size_t n);
  // Moves the oldest complete record into *record; false if there is none.
  bool next(Record* record);

  // For a transport that puts part of a record elsewhere (a READ reply's data straight
  // into the caller's buffer): the record assembled so far (*n bytes), how many bytes of
  // the current fragment are still due (0 between fragments), how many record-mark bytes
  // are due before the next fragment, and whether no byte of a record has come yet.
  const uint8_t* partial(size_t* n) const {
    *n = len_;
    return cur_.data();
  }
  size_t fragment_left() const { return in_fragment_ && !failed_ ? frag_left_ : 0; }
  bool in_last_fragment() const { return in_fragment_ && last_; }
  size_t mark_bytes_due() const { return 4 - hdr_have_; }
  bool at_record_start() const { return !in_fragment_ && len_ == 0; }
  // The next N payload bytes of the current fragment were taken elsewhere: the record
  // leaves them out (it is N bytes shorter). Same errors as payload_written().
  int payload_elsewhere(size_t n);
  // The last N bytes fed of the current fragment were taken elsewhere too: the record
  // leaves them out. -EINVAL if fewer than N of them came in this fragment.
  int take_back(size_t n);

  size_t pending_records() const { return done_.size(); }
  bool failed() const { return failed_; }

 private:
  void fragment_done();

  size_t max_record_;
  uint8_t hdr_[4] = {};
  size_t hdr_have_ = 0;       // header bytes collected for the current fragment
  size_t frag_left_ = 0;      // payload bytes still due in the current fragment
  bool in_fragment_ = false;  // header read, payload pending
  bool last_ = false;         // current fragment is the record's last
  size_t frag_start_ = 0;     // where the current fragment's payload starts in the record
  bool failed_ = false;
  // The record being assembled: its first len_ bytes are valid; cur_ is sized for the
  // whole current fragment as soon as its header is in.
  Record cur_;
  size_t len_ = 0;
  std::deque<Record> done_;
};

}  // namespace nfsshim::rpc
