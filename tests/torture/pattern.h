// File contents as a function of (file id, offset): any reader can verify any byte it
// reads, in any process, without a shared manifest. Every file the driver writes starts
// with a 16-byte header (magic, id), so a file met by name alone identifies itself.
#pragma once

#include <cstddef>
#include <cstdint>

namespace torture {

inline constexpr uint64_t kMagic = 0x3145525554524f54ull;  // "TORTURE1" little-endian
inline constexpr size_t kHeaderSize = 16;

inline uint64_t mix64(uint64_t x) {  // splitmix64 finaliser
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// The 8-byte word at offset 8*W of file ID.
inline uint64_t word_at(uint64_t id, uint64_t w) {
  if (w == 0) return kMagic;
  if (w == 1) return id;
  return mix64(id * 0x100000001B3ull ^ w);
}

inline uint8_t byte_at(uint64_t id, uint64_t off) {
  return static_cast<uint8_t>(word_at(id, off / 8) >> (8 * (off % 8)));
}

// Writes the expected bytes [OFF, OFF+N) of file ID into BUF.
inline void fill(uint64_t id, uint64_t off, uint8_t* buf, size_t n) {
  size_t i = 0;
  while (i < n) {
    uint64_t o = off + i;
    uint64_t w = word_at(id, o / 8);
    for (unsigned b = o % 8; b < 8 && i < n; ++b, ++i) buf[i] = static_cast<uint8_t>(w >> (8 * b));
  }
}

// Number of leading bytes of BUF (holding [OFF, OFF+N) of file ID) that are right.
inline size_t good_prefix(uint64_t id, uint64_t off, const uint8_t* buf, size_t n) {
  size_t i = 0;
  while (i < n) {
    uint64_t o = off + i;
    uint64_t w = word_at(id, o / 8);
    for (unsigned b = o % 8; b < 8 && i < n; ++b, ++i)
      if (buf[i] != static_cast<uint8_t>(w >> (8 * b))) return i;
  }
  return n;
}

// The id in a header, or false if BUF (at least kHeaderSize bytes) is no header.
inline bool parse_header(const uint8_t* buf, uint64_t* id) {
  uint64_t magic = 0, v = 0;
  for (int i = 7; i >= 0; --i) magic = magic << 8 | buf[i];
  for (int i = 15; i >= 8; --i) v = v << 8 | buf[i];
  if (magic != kMagic) return false;
  *id = v;
  return true;
}

}  // namespace torture
