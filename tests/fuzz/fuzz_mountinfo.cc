// Fuzz target: /proc/self/mountinfo parsing and mount option lookup (mount_table.h
// parse_mountinfo, mount_option). Input: byte 0 'O' fuzzes mount_option with
// "KEY\nOPTIONS"; anything else is mountinfo text.
// Invariants:
//   - at most one mount per line, each with a mount point and a filesystem type;
//   - round trip: the mounts written back as mountinfo lines (escaping whitespace and
//     '\' as \ooo, as the kernel does) parse to the same mounts;
//   - mount_option only returns what is in the option string (KEY=VALUE's VALUE, or KEY).
#include <sys/sysmacros.h>

#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "fuzz_check.h"
#include "nfsshim/mount_table.h"

using nfsshim::Mount;

namespace {

std::string escape(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isspace(c) || c == '\\' || c == '\0') {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\%03o", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::string to_line(const Mount& m) {
  std::string s = std::to_string(m.id) + " 1 " + std::to_string(major(m.dev)) + ":" +
                  std::to_string(minor(m.dev)) + " " + escape(m.root) + " " + escape(m.point) +
                  " " + m.options + " shared:1 - " + m.fstype + " " + escape(m.source);
  if (!m.super_options.empty()) s += " " + m.super_options;
  return s + "\n";
}

bool same(const Mount& a, const Mount& b) {
  return a.id == b.id && a.dev == b.dev && a.root == b.root && a.point == b.point &&
         a.fstype == b.fstype && a.source == b.source && a.options == b.options &&
         a.super_options == b.super_options;
}

void fuzz_mountinfo(const std::string& text) {
  std::vector<Mount> mounts = nfsshim::parse_mountinfo(text);
  size_t lines = 1;
  for (char c : text) lines += c == '\n';
  FUZZ_CHECK(mounts.size() <= lines, "%zu mounts from %zu lines", mounts.size(), lines);
  std::string again;
  for (const auto& m : mounts) {
    FUZZ_CHECK(!m.point.empty() && !m.fstype.empty(), "mount without point or type");
    again += to_line(m);
  }
  std::vector<Mount> back = nfsshim::parse_mountinfo(again);
  FUZZ_CHECK(back.size() == mounts.size(), "%zu mounts written back as %zu\n  text: %s",
             mounts.size(), back.size(), fuzz_quote(again).c_str());
  for (size_t i = 0; i < back.size(); ++i)
    FUZZ_CHECK(same(back[i], mounts[i]), "mount %zu differs after write-back\n  line: %s", i,
               fuzz_quote(to_line(mounts[i])).c_str());
}

void fuzz_option(const std::string& input) {
  size_t nl = input.find('\n');
  if (nl == std::string::npos) return;
  std::string key = input.substr(0, nl), options = input.substr(nl + 1);
  std::string v = nfsshim::mount_option(options, key);
  if (v.empty()) return;
  bool found = false;
  size_t pos = 0;
  for (;;) {  // the items of OPTIONS, independently of mount_option's own loop
    size_t c = options.find(',', pos);
    std::string item = options.substr(pos, c == std::string::npos ? std::string::npos : c - pos);
    found = found || item == key + "=" + v || (v == key && item == key);
    if (c == std::string::npos) break;
    pos = c + 1;
  }
  FUZZ_CHECK(found, "mount_option(%s, %s) = %s, not an item", fuzz_quote(options).c_str(),
             fuzz_quote(key).c_str(), fuzz_quote(v).c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size >= 1 && data[0] == 'O')
    fuzz_option(std::string(reinterpret_cast<const char*>(data) + 1, size - 1));
  else
    fuzz_mountinfo(std::string(reinterpret_cast<const char*>(data), size));
  return 0;
}
