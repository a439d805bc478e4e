// Fuzz target: ONC RPC record marking (libshim rpc/record_marking.h RecordFramer), the
// first thing a server's bytes meet. Input byte 0 'R' (round trip): the rest makes up
// to 8 records, frames them with a random fragment size and feeds the stream in random
// pieces; anything else: raw stream bytes fed in pieces into a framer with a small limit.
// Each piece goes in by feed() or, as the NFSv4.1 transport does, the payload due straight
// into payload_span() (payload_written()), a fuzzed choice per step.
// Invariants: the records come out exactly as framed, in order, and only once complete;
// a raw stream never yields a record over the limit, and after -EMSGSIZE every feed fails.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz_check.h"
#include "nfsshim/rpc/record_marking.h"

using nfsshim::rpc::RecordFramer;

namespace {

// Gives the piece to F as a transport does: by feed(), or (a fuzzed choice per step) the
// payload due straight into payload_span() with payload_written(), headers by feed().
int give(FuzzedDataProvider& in, RecordFramer& f, const std::vector<uint8_t>& piece) {
  size_t at = 0;
  while (at < piece.size()) {
    RecordFramer::Span sp = f.payload_span();
    const size_t left = piece.size() - at;
    if (sp.len > 0 && in.ConsumeBool()) {
      size_t k = std::min(sp.len, left);
      if (in.ConsumeBool()) k = in.ConsumeIntegralInRange<size_t>(1, k);
      std::copy(piece.begin() + static_cast<long>(at), piece.begin() + static_cast<long>(at + k), sp.data);
      int rc = f.payload_written(k);
      FUZZ_CHECK(rc == 0, "payload_written(%zu) of a span of %zu returned %d", k, sp.len, rc);
      FUZZ_CHECK(f.payload_written(f.payload_span().len + 1) == -EINVAL || f.failed(),
                 "payload_written past the span was taken");
      at += k;
      continue;
    }
    // Headers (or everything, by choice) through feed(): one byte or the rest.
    size_t k = sp.len == 0 && in.ConsumeBool() ? 1 : left;
    int rc = f.feed(piece.data() + at, k);
    if (rc < 0) return rc;
    at += k;
  }
  return 0;
}

void feed_in_pieces(FuzzedDataProvider& in, RecordFramer& f, const std::vector<uint8_t>& stream,
                    std::vector<std::vector<uint8_t>>* got, bool* failed) {
  size_t pos = 0;
  while (pos < stream.size()) {
    size_t n = in.ConsumeIntegralInRange<size_t>(1, stream.size() - pos);
    // An exact-size copy of the piece: ASan sees any read outside it.
    std::vector<uint8_t> piece(stream.begin() + static_cast<long>(pos),
                               stream.begin() + static_cast<long>(pos + n));
    int rc = give(in, f, piece);
    FUZZ_CHECK(rc == 0 || rc == -EMSGSIZE, "feed returned %d", rc);
    if (*failed) FUZZ_CHECK(rc != 0, "feed succeeded after -EMSGSIZE");
    if (rc < 0) *failed = true;
    nfsshim::rpc::Record rec;
    while (f.next(&rec)) got->emplace_back(rec.begin(), rec.end());
    pos += n;
  }
}

void round_trip(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  size_t nrec = in.ConsumeIntegralInRange<size_t>(0, 8);
  size_t max_fragment = in.ConsumeIntegralInRange<size_t>(1, 64);
  std::vector<std::vector<uint8_t>> recs(nrec);
  std::vector<uint8_t> stream;
  size_t longest = 0;
  for (auto& r : recs) {
    r = in.ConsumeBytes<uint8_t>(in.ConsumeIntegralInRange<size_t>(0, 200));
    nfsshim::rpc::frame_record(&stream, r.data(), r.size(), max_fragment);
    longest = std::max(longest, r.size());
  }
  RecordFramer f(longest);
  std::vector<std::vector<uint8_t>> got;
  bool failed = false;
  feed_in_pieces(in, f, stream, &got, &failed);
  FUZZ_CHECK(!failed, "framed records refused");
  FUZZ_CHECK(got == recs, "%zu records framed (fragments of %zu), %zu came out different",
             recs.size(), max_fragment, got.size());
}

void raw(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  size_t limit = in.ConsumeIntegralInRange<size_t>(0, 256);
  std::vector<uint8_t> stream = in.ConsumeBytes<uint8_t>(in.remaining_bytes() / 2 + 1);
  RecordFramer f(limit);
  std::vector<std::vector<uint8_t>> got;
  bool failed = false;
  feed_in_pieces(in, f, stream, &got, &failed);
  for (const auto& r : got) FUZZ_CHECK(r.size() <= limit, "record of %zu > limit %zu", r.size(), limit);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size >= 1 && data[0] == 'R') round_trip(data + 1, size - 1);
  else raw(data, size);
  return 0;
}
