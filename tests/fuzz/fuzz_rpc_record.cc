// Fuzz target: ONC RPC record marking (libshim rpc/record_marking.h RecordFramer), the
// first thing a server's bytes meet. Input byte 0 'R' (round trip): the rest makes up
// to 8 records, frames them with a random fragment size and feeds the stream in random
// pieces; anything else: raw stream bytes fed in pieces into a framer with a small limit.
// Each piece goes in by feed() or, as the NFSv4.1 transport does, the payload due straight
// into payload_span() (payload_written()) or taken elsewhere (payload_elsewhere(), a READ's
// data into its caller's buffer), and after a feed some of it may be taken back
// (take_back()), fuzzed choices per step.
// Invariants: the records come out exactly as framed less the bytes taken elsewhere or
// back, in order, and only once complete; take_back() refuses exactly what is not of the
// current fragment; a raw stream never yields a record over the limit, and after
// -EMSGSIZE every feed fails.
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

// Where each byte of a framed stream belongs: a payload byte's record, offset and
// fragment; a record mark's byte has record -1 (and its fragment). Null in raw mode.
struct StreamMap {
  struct Byte {
    int record;
    size_t offset;
    size_t fragment;
  };
  std::vector<Byte> bytes;
  std::vector<bool> removed;    // taken elsewhere or back: not in the record that comes out
  std::vector<size_t> frag_len;  // payload bytes of each fragment
};

StreamMap map_stream(const std::vector<uint8_t>& stream) {
  StreamMap m;
  int record = 0;
  size_t offset = 0, pos = 0;
  while (pos + 4 <= stream.size()) {
    uint32_t word = (uint32_t{stream[pos]} << 24) | (uint32_t{stream[pos + 1]} << 16) |
                    (uint32_t{stream[pos + 2]} << 8) | stream[pos + 3];
    size_t len = word & 0x7fffffffu, frag = m.frag_len.size();
    m.frag_len.push_back(len);
    for (int i = 0; i < 4; ++i) m.bytes.push_back({-1, 0, frag});
    for (size_t i = 0; i < len; ++i) m.bytes.push_back({record, offset++, frag});
    pos += 4 + len;
    if (word & 0x80000000u) {
      ++record;
      offset = 0;
    }
  }
  m.removed.assign(m.bytes.size(), false);
  return m;
}

// take_back(J) after the first CUR stream bytes went in: the stream positions it removes
// (the last J kept payload bytes of the fragment being received), or false if the framer
// must refuse (no fragment being received, or fewer kept bytes in it).
bool model_take_back(const StreamMap& m, size_t cur, size_t j, std::vector<size_t>* out) {
  if (cur == 0) return false;
  const StreamMap::Byte& last = m.bytes[cur - 1];
  size_t frag = last.fragment, len = m.frag_len[frag];
  const bool next_is_payload = cur < m.bytes.size() && m.bytes[cur].record >= 0;
  // Not receiving a fragment: it is empty, complete (a mark comes next), or its mark is
  // not all in yet (a mark byte that payload does not follow).
  if (len == 0 || !next_is_payload) return false;
  for (size_t p = cur; p-- > 0 && out->size() < j;) {
    if (m.bytes[p].fragment != frag || m.bytes[p].record < 0) break;
    if (!m.removed[p]) out->push_back(p);
  }
  return out->size() == j;
}

// Gives the piece at stream position BASE to F as a transport does: by feed(), or (fuzzed
// choices per step) the payload due straight into payload_span() with payload_written() or
// taken elsewhere with payload_elsewhere(), headers by feed(); after a feed, some bytes
// may be taken back. M (round trip only) records what was taken.
int give(FuzzedDataProvider& in, RecordFramer& f, const std::vector<uint8_t>& piece, size_t base,
         StreamMap* m) {
  size_t at = 0;
  while (at < piece.size()) {
    RecordFramer::Span sp = f.payload_span();
    const size_t left = piece.size() - at;
    if (sp.len > 0 && in.ConsumeBool()) {
      size_t k = std::min(sp.len, left);
      if (in.ConsumeBool()) k = in.ConsumeIntegralInRange<size_t>(1, k);
      if (m && in.ConsumeBool()) {
        int rc = f.payload_elsewhere(k);
        FUZZ_CHECK(rc == 0, "payload_elsewhere(%zu) of a span of %zu returned %d", k, sp.len, rc);
        for (size_t i = 0; i < k; ++i) m->removed[base + at + i] = true;
      } else {
        std::copy(piece.begin() + static_cast<long>(at), piece.begin() + static_cast<long>(at + k), sp.data);
        int rc = f.payload_written(k);
        FUZZ_CHECK(rc == 0, "payload_written(%zu) of a span of %zu returned %d", k, sp.len, rc);
      }
      FUZZ_CHECK(f.payload_written(f.payload_span().len + 1) == -EINVAL || f.failed(),
                 "payload_written past the span was taken");
      FUZZ_CHECK(f.payload_elsewhere(f.payload_span().len + 1) == -EINVAL || f.failed(),
                 "payload_elsewhere past the span was taken");
      at += k;
      continue;
    }
    // Headers (or everything, by choice) through feed(): one byte or the rest.
    size_t k = sp.len == 0 && in.ConsumeBool() ? 1 : left;
    int rc = f.feed(piece.data() + at, k);
    if (rc < 0) return rc;
    at += k;
    if (m && in.ConsumeBool()) {
      size_t j = in.ConsumeIntegralInRange<size_t>(0, 8);
      std::vector<size_t> gone;
      bool ok = model_take_back(*m, base + at, j, &gone);
      int trc = f.take_back(j);
      FUZZ_CHECK((trc == 0) == ok, "take_back(%zu) at stream byte %zu returned %d, the model says %s",
                 j, base + at, trc, ok ? "take" : "refuse");
      if (trc == 0)
        for (size_t p : gone) m->removed[p] = true;
    }
  }
  return 0;
}

void feed_in_pieces(FuzzedDataProvider& in, RecordFramer& f, const std::vector<uint8_t>& stream,
                    std::vector<std::vector<uint8_t>>* got, bool* failed, StreamMap* m) {
  size_t pos = 0;
  while (pos < stream.size()) {
    size_t n = in.ConsumeIntegralInRange<size_t>(1, stream.size() - pos);
    // An exact-size copy of the piece: ASan sees any read outside it.
    std::vector<uint8_t> piece(stream.begin() + static_cast<long>(pos),
                               stream.begin() + static_cast<long>(pos + n));
    int rc = give(in, f, piece, pos, m);
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
  StreamMap m = map_stream(stream);
  RecordFramer f(longest);
  std::vector<std::vector<uint8_t>> got;
  bool failed = false;
  feed_in_pieces(in, f, stream, &got, &failed, &m);
  FUZZ_CHECK(!failed, "framed records refused");
  // What must come out: each record less the bytes taken elsewhere or back.
  std::vector<std::vector<uint8_t>> want(recs.size());
  for (size_t p = 0; p < m.bytes.size(); ++p)
    if (m.bytes[p].record >= 0 && !m.removed[p])
      want[static_cast<size_t>(m.bytes[p].record)].push_back(recs[static_cast<size_t>(m.bytes[p].record)][m.bytes[p].offset]);
  FUZZ_CHECK(got == want, "%zu records framed (fragments of %zu), %zu came out different",
             recs.size(), max_fragment, got.size());
}

void raw(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  size_t limit = in.ConsumeIntegralInRange<size_t>(0, 256);
  std::vector<uint8_t> stream = in.ConsumeBytes<uint8_t>(in.remaining_bytes() / 2 + 1);
  RecordFramer f(limit);
  std::vector<std::vector<uint8_t>> got;
  bool failed = false;
  feed_in_pieces(in, f, stream, &got, &failed, nullptr);
  for (const auto& r : got) FUZZ_CHECK(r.size() <= limit, "record of %zu > limit %zu", r.size(), limit);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size >= 1 && data[0] == 'R') round_trip(data + 1, size - 1);
  else raw(data, size);
  return 0;
}
