// Fuzz target: /proc/self/maps parsing (proc_refs.h parse_maps), which decides whether a
// buried file is still mapped. Input: byte 0 'M' makes well-formed maps text from the
// rest (FuzzedDataProvider) and checks that exactly the mappings of the wanted inodes are
// found; anything else: up to 4 keys, then raw text handed over in a buffer of exactly
// its length, followed by an inaccessible page (the (text, len) contract: nothing
// past LEN may be read).
// Invariants: no crash, no read past LEN, at most one range per line and key, and for
// well-formed text exactly the ranges of each key's lines, in order.
#include <fuzzer/FuzzedDataProvider.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cinttypes>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_check.h"
#include "nfsshim/proc_refs.h"

using nfsshim::InodeKey;
using nfsshim::Refs;

namespace {

// The text ends right before an inaccessible page, so reading past LEN faults. (ASan
// alone would not see it: glibc's strtoul family is not intercepted.)
constexpr size_t kArena = 1 << 20;
char* guarded_copy(const std::string& text) {
  static char* arena = [] {
    size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    void* p = ::mmap(nullptr, kArena + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED || ::mprotect(static_cast<char*>(p) + kArena, page, PROT_NONE) != 0) std::abort();
    return static_cast<char*>(p);
  }();
  char* dst = arena + kArena - text.size();
  std::memcpy(dst, text.data(), text.size());
  return dst;
}

std::vector<Refs> parse(const std::string& text, const std::vector<InodeKey>& keys) {
  std::vector<Refs> out(keys.size());
  if (text.size() >= kArena) return out;  // libFuzzer's inputs are far smaller
  nfsshim::parse_maps(guarded_copy(text), text.size(), keys, &out);
  return out;
}

void fuzz_raw(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  std::vector<InodeKey> keys(in.ConsumeIntegralInRange<size_t>(0, 4));
  for (auto& k : keys) {
    k.dev = makedev(in.ConsumeIntegralInRange<unsigned>(0, 300), in.ConsumeIntegralInRange<unsigned>(0, 300));
    k.ino = in.ConsumeIntegralInRange<ino_t>(0, 100000);
  }
  std::string text = in.ConsumeRemainingBytesAsString();
  std::vector<Refs> out = parse(text, keys);
  size_t lines = 1;
  for (char c : text) lines += c == '\n';
  for (size_t i = 0; i < keys.size(); ++i)
    FUZZ_CHECK(out[i].maps.size() <= lines, "key %zu: %zu ranges from %zu lines", i,
               out[i].maps.size(), lines);
}

void fuzz_made(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  std::vector<InodeKey> keys(in.ConsumeIntegralInRange<size_t>(1, 3));
  for (auto& k : keys) {
    k.dev = makedev(in.ConsumeIntegralInRange<unsigned>(0, 0xfff), in.ConsumeIntegralInRange<unsigned>(0, 0xfffff));
    k.ino = in.ConsumeIntegralInRange<ino_t>(1, UINT64_MAX);
  }
  std::vector<std::vector<nfsshim::MapRange>> want(keys.size());
  std::string text;
  while (in.remaining_bytes() > 0) {
    uintptr_t start = in.ConsumeIntegral<uintptr_t>(), end = in.ConsumeIntegral<uintptr_t>();
    bool is_key = in.ConsumeBool();
    size_t k = in.ConsumeIntegralInRange<size_t>(0, keys.size() - 1);
    unsigned maj = is_key ? major(keys[k].dev) : in.ConsumeIntegralInRange<unsigned>(0, 0xfff);
    unsigned min = is_key ? minor(keys[k].dev) : in.ConsumeIntegralInRange<unsigned>(0, 0xfffff);
    ino_t ino = is_key ? keys[k].ino : in.ConsumeIntegral<ino_t>();
    std::string path = in.ConsumeRandomLengthString(64);
    for (char& c : path)
      if (c == '\n') c = '_';  // the kernel escapes newlines in paths
    char line[256];
    std::snprintf(line, sizeof line, "%" PRIxPTR "-%" PRIxPTR " r-xp %08x %02x:%02x %" PRIu64 "    ",
                  start, end, in.ConsumeIntegral<unsigned>(), maj, min, static_cast<uint64_t>(ino));
    text += line + path + "\n";
    for (size_t i = 0; i < keys.size(); ++i)
      if (keys[i].dev == makedev(maj, min) && keys[i].ino == ino) want[i].push_back({start, end});
  }
  std::vector<Refs> out = parse(text, keys);
  for (size_t i = 0; i < keys.size(); ++i) {
    bool ok = out[i].maps.size() == want[i].size();
    for (size_t j = 0; ok && j < want[i].size(); ++j)
      ok = out[i].maps[j].start == want[i][j].start && out[i].maps[j].end == want[i][j].end;
    FUZZ_CHECK(ok, "key %zu: %zu ranges found, %zu in the text\n  text: %s", i,
               out[i].maps.size(), want[i].size(), fuzz_quote(text).c_str());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size >= 1 && data[0] == 'M') fuzz_made(data + 1, size - 1);
  else fuzz_raw(data, size);
  return 0;
}
