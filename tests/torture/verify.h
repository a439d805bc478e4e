// Whole-file and whole-tree verification against the content pattern (pattern.h).
#pragma once

#include <cstdint>
#include <string>

namespace torture {

inline constexpr uint64_t kIndexBit = 1ull << 63;  // index file id = segment id ^ kIndexBit

struct FileCheck {
  uint64_t good = 0;        // bytes that match
  uint64_t bad = 0;         // bytes that do not (lost or corrupted)
  uint64_t zero_pages = 0;  // all-zero 4 KiB pages accepted (preallocated index, crash)
};

// Verifies the open file FD from offset 0 to its end. EXPECT_ID (0: take the header's)
// is the id its name promises. ZEROS_OK accepts all-zero pages (index files are
// preallocated; after a crash unflushed pages may read as holes).
FileCheck verify_fd(int fd, uint64_t expect_id, bool zeros_ok);

// The id a file name promises ("<16 hex>.log[...]", "<16 hex>.index[...]"), or 0.
uint64_t id_from_name(const std::string& name);
bool is_index_name(const std::string& name);

struct TreeCheck {
  uint64_t files = 0, good = 0, bad = 0, zero_pages = 0;
  uint64_t silly = 0;            // .nfs* / .fuse_hidden* anywhere (graveyard included)
  uint64_t graveyard_entries = 0;  // entries in <root>/<graveyard>/u*/
  std::string first_problem;
};

// Walks ROOT (no symlinks followed), verifying every regular file outside the
// graveyard GRAVEYARD_NAME (counted, not verified). VERIFY=false only counts.
TreeCheck check_tree(const std::string& root, const std::string& graveyard_name, bool verify,
                     bool zeros_ok);

}  // namespace torture
