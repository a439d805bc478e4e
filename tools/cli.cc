#include "cli.h"

#include <cstdio>

extern char** environ;

namespace nfsshim::tools {

int usage_error(const char* verb, const std::string& message) {
  std::fprintf(stderr, "nfsshim %s: %s\nTry 'nfsshim %s --help'.\n", verb, message.c_str(), verb);
  return kExitUsage;
}

bool is_help(const std::string& arg) { return arg == "--help" || arg == "-h"; }

Config load_tool_config() {
  std::vector<ConfigError> errors;
  Config cfg = load_config(environ, &errors);
  for (const auto& e : errors)
    std::fprintf(stderr, "nfsshim: bad setting ignored, default kept: %s\n", e.str().c_str());
  return cfg;
}

// Length of the valid UTF-8 sequence at S[I] (1..4), or 0 (RFC 3629: no overlong forms,
// no surrogates, nothing above U+10FFFF).
static size_t utf8_at(const std::string& s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  size_t n;
  unsigned char lo = 0x80, hi = 0xbf;  // bounds of the second byte
  if (c >= 0xc2 && c <= 0xdf) n = 2;
  else if (c >= 0xe0 && c <= 0xef) n = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
  else if (c >= 0xf0 && c <= 0xf4) n = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
  else return 0;
  if (i + n > s.size() || b(1) < lo || b(1) > hi) return 0;
  for (size_t k = 2; k < n; ++k)
    if (b(k) < 0x80 || b(k) > 0xbf) return 0;
  return n;
}

std::string valid_utf8(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    size_t n = utf8_at(text, i);
    if (n == 0) {
      out += "\xef\xbf\xbd";  // U+FFFD for each byte that starts no valid sequence
      ++i;
    } else {
      out.append(text, i, n);
      i += n;
    }
  }
  return out;
}

std::string terminal_safe(const std::string& raw) {
  const std::string text = valid_utf8(raw);
  std::string out;
  out.reserve(text.size());
  char buf[8];
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    const auto next = i + 1 < text.size() ? static_cast<unsigned char>(text[i + 1]) : 0;
    if (c < 0x20 || c == 0x7f) {
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else if (c == 0xc2 && next >= 0x80 && next <= 0x9f) {  // U+0080..U+009F
      std::snprintf(buf, sizeof buf, "\\u%04x", next);
      out += buf;
      ++i;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

std::string json_escape(const std::string& raw) {
  std::string out;
  const std::string text = valid_utf8(raw);
  for (unsigned char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  return out;
}

}  // namespace nfsshim::tools
