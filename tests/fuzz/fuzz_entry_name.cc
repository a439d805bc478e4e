// Fuzz target: graveyard entry names (libshim entry_name.h, identity.h sanitize_host).
// Input starting with 'S': the rest drives a structured EntryName (FuzzedDataProvider);
// anything else is a directory entry name as found in a graveyard.
// Invariants:
//   - a parsed name has the documented shape (kind b|n|s, HOST without '~', hex BOOT,
//     PID > 0) and format(parse(x)) parses back to the same entry;
//   - a name with canonical numbers (no leading zeros) formats back to itself;
//   - every entry we can make (sanitized host, hex boot, pid > 0) parses back to itself.
#include <fuzzer/FuzzedDataProvider.h>

#include <cctype>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_check.h"
#include "nfsshim/entry_name.h"
#include "nfsshim/identity.h"

using nfsshim::EntryName;

namespace {

bool same(const EntryName& a, const EntryName& b) {
  return a.kind == b.kind && a.owner.host == b.owner.host && a.owner.boot == b.owner.boot &&
         a.owner.pidns == b.owner.pidns &&
         a.owner.pid == b.owner.pid && a.owner.start == b.owner.start && a.seq == b.seq;
}

// True if every numeric field (PID, START, SEQ: the last three) is written without
// leading zeros or signs, i.e. the way format() writes numbers.
bool canonical_numbers(const std::string& name) {
  size_t pos = name.size();
  for (int field = 0; field < 3; ++field) {
    if (pos == 0) return false;
    size_t t = name.rfind('~', pos - 1);
    if (t == std::string::npos) return false;
    std::string num = name.substr(t + 1, pos - t - 1);
    if (num.empty() || (num.size() > 1 && num[0] == '0')) return false;
    for (char c : num)
      if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    pos = t;
  }
  return true;
}

void fuzz_parse(const std::string& name) {
  auto e = EntryName::parse(name);
  if (!e) return;
  FUZZ_CHECK(e->kind == 'b' || e->kind == 'n' || e->kind == 's', "kind %c", e->kind);
  FUZZ_CHECK(!e->owner.host.empty() && e->owner.host.find('~') == std::string::npos,
             "host %s", fuzz_quote(e->owner.host).c_str());
  FUZZ_CHECK(!e->owner.boot.empty(), "empty boot");
  for (char c : e->owner.boot)
    FUZZ_CHECK(std::isxdigit(static_cast<unsigned char>(c)), "boot %s",
               fuzz_quote(e->owner.boot).c_str());
  for (char c : e->owner.pidns)
    FUZZ_CHECK(std::isxdigit(static_cast<unsigned char>(c)), "pidns %s",
               fuzz_quote(e->owner.pidns).c_str());
  FUZZ_CHECK(e->owner.pid > 0, "pid %d", static_cast<int>(e->owner.pid));
  std::string formatted = e->format();
  auto again = EntryName::parse(formatted);
  FUZZ_CHECK(again && same(*again, *e), "%s -> %s does not parse back", fuzz_quote(name).c_str(),
             fuzz_quote(formatted).c_str());
  if (canonical_numbers(name))
    FUZZ_CHECK(formatted == name, "%s parsed as %s (a different owner or sequence)",
               fuzz_quote(name).c_str(), fuzz_quote(formatted).c_str());
}

void fuzz_make(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  std::string raw_host = in.ConsumeRandomLengthString(300);
  EntryName e;
  e.kind = "bns"[in.ConsumeIntegralInRange<int>(0, 2)];
  e.owner.host = nfsshim::sanitize_host(raw_host);
  FUZZ_CHECK(raw_host.empty() ? e.owner.host == "unknown" : e.owner.host.size() == raw_host.size(),
             "sanitize_host(%s) = %s", fuzz_quote(raw_host).c_str(),
             fuzz_quote(e.owner.host).c_str());
  for (unsigned char c : e.owner.host)
    FUZZ_CHECK(c > 0x20 && c < 0x7f && c != '~' && c != '/', "sanitize_host(%s) = %s",
               fuzz_quote(raw_host).c_str(), fuzz_quote(e.owner.host).c_str());
  static const char kHex[] = "0123456789abcdefABCDEF";
  size_t boot_len = in.ConsumeIntegralInRange<size_t>(1, 32);
  for (size_t i = 0; i < boot_len; ++i) e.owner.boot += kHex[in.ConsumeIntegralInRange(0, 21)];
  size_t pidns_len = in.ConsumeIntegralInRange<size_t>(0, 16);  // 0: a name of before
  for (size_t i = 0; i < pidns_len; ++i) e.owner.pidns += kHex[in.ConsumeIntegralInRange(0, 21)];
  e.owner.pid = in.ConsumeIntegralInRange<pid_t>(1, INT_MAX);
  e.owner.start = in.ConsumeIntegral<uint64_t>();
  e.seq = in.ConsumeIntegral<uint64_t>();
  std::string name = e.format();
  auto back = EntryName::parse(name);
  FUZZ_CHECK(back && same(*back, e), "made entry %s does not parse back",
             fuzz_quote(name).c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size >= 1 && data[0] == 'S') fuzz_make(data + 1, size - 1);
  else fuzz_parse(std::string(reinterpret_cast<const char*>(data), size));
  return 0;
}
