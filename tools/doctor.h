// `nfsshim doctor`: what it found (facts, grouped in sections) and what it thinks of
// it (problems make the exit status 1; notes are advice).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "nfsshim/config.h"
#include "nfsshim/mount_table.h"

namespace nfsshim::tools {

struct Fact {
  std::string key;
  std::string value;
  bool raw = false;  // a JSON number, true/false or null rather than a string
};

struct Section {
  std::string name;
  std::vector<Fact> facts;
  void add(const std::string& k, const std::string& v) { facts.push_back({k, v, false}); }
  void add_bool(const std::string& k, bool v) { facts.push_back({k, v ? "true" : "false", true}); }
  void add_num(const std::string& k, long long v) { facts.push_back({k, std::to_string(v), true}); }
};

struct Doctor {
  std::string path;  // as given
  std::string real;  // resolved
  int dirfd = -1;    // PATH, opened
  dev_t dev = 0;
  Config cfg;
  std::vector<Section> sections;
  std::vector<std::string> problems;
  std::vector<std::string> notes;
  // Filled by check_filesystem, used by the later checks.
  bool nfs = false;
  Mount mount;

  Section& section(const std::string& name) {
    sections.push_back({name, {}});
    return sections.back();
  }
};

// Each check adds one section (and problems/notes). doctor_fs.cc:
void check_filesystem(Doctor* d);
void check_graveyard(Doctor* d);
// doctor_probe.cc:
void check_silly_rename(Doctor* d);
// doctor_host.cc:
void check_host(Doctor* d);

// The statfs magic's filesystem name ("nfs", "ext4", ...) or "".
const char* fs_magic_name(long magic);

}  // namespace nfsshim::tools
