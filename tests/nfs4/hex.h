// Expected wire bytes are written by hand as hex (spaces and newlines ignored), from
// the XDR in RFC 4506 / RFC 5531 / RFC 8881, never produced by the encoder under test.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace nfs4test {

inline std::vector<uint8_t> hex(const std::string& s) {
  std::vector<uint8_t> out;
  int hi = -1;
  for (char c : s) {
    int v;
    if (c >= '0' && c <= '9') v = c - '0';
    else if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') v = c - 'A' + 10;
    else if (c == ' ' || c == '\n' || c == '|') continue;
    else throw std::invalid_argument("bad hex character");
    if (hi < 0) {
      hi = v;
    } else {
      out.push_back(static_cast<uint8_t>(hi << 4 | v));
      hi = -1;
    }
  }
  if (hi >= 0) throw std::invalid_argument("odd number of hex digits");
  return out;
}

inline std::string to_hex(const std::vector<uint8_t>& v) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0 && i % 4 == 0) s += ' ';
    s += d[v[i] >> 4];
    s += d[v[i] & 15];
  }
  return s;
}

}  // namespace nfs4test
