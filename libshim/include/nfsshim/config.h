// Settings, from /etc/nfsshim.conf (or $NFSSHIM_CONFIG) and then NFSSHIM_* environment
// variables, which win. A bad value never aborts the host process: it is reported
// once, naming the key and what was expected, and the default is kept.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace nfsshim {

enum class BuryMode {
  referenced,  // bury only files this process still references; others are plain unlinks
  all,         // bury every unlinked/renamed-over watched file; drop at once if unreferenced
};

struct Config {
  bool enabled = true;
  BuryMode mode = BuryMode::all;
  std::vector<std::string> watch;  // extra watched directories (beyond NFS mounts)
  std::string graveyard_name = ".graveyard.nfsshim";
  // Per-mount overrides: mount point (or watched directory) -> graveyard directory.
  std::vector<std::pair<std::string, std::string>> graveyards;
  int64_t foreign_max_age_s = 7 * 24 * 3600;
  bool sweep_silly = true;   // on rmdir ENOTEMPTY, move .nfs*/.fuse_hidden* leftovers aside
  std::string log_level = "warn";
  std::string log_target = "stderr";  // stderr | syslog | file:PATH
  std::string stats_dir = "/run/nfsshim";  // where processes publish their counters
  std::string source;  // the file read, for messages
  // Keys given a valid value by the file or the environment: for a program whose own
  // default differs from the one above (nfsshim-fuse logs at info, to syslog once detached).
  std::vector<std::string> given;
  bool is_given(const std::string& key) const;
};

struct ConfigError {
  std::string where;  // "file:line" or the environment variable
  std::string key;
  std::string message;
  std::string str() const { return where + ": " + key + ": " + message; }
};

// Applies one "key = value" setting. Returns false and fills ERR on a bad key or value.
bool apply_setting(Config* cfg, const std::string& key, const std::string& value,
                   ConfigError* err);

// Parses config file TEXT (named WHERE in messages) into CFG; errors are appended.
void parse_config_text(Config* cfg, const std::string& text, const std::string& where,
                       std::vector<ConfigError>* errors);

// Applies NFSSHIM_* variables from ENVP (a NULL-terminated environ-style array).
void apply_environment(Config* cfg, char* const* envp, std::vector<ConfigError>* errors);

// Larger settings files are refused (reported, defaults kept), never parsed in part.
constexpr size_t kMaxConfigBytes = 1024 * 1024;

// The whole thing: defaults, then the file ($NFSSHIM_CONFIG or /etc/nfsshim.conf; a
// missing default file is fine, a missing named file is an error), then the environment.
Config load_config(char* const* envp, std::vector<ConfigError>* errors);

// The graveyard directory the `graveyard` setting gives ROOT (a watched directory or NFS
// mount point, canonical), or "" if none (then it is ROOT/<graveyard_name>). For a MOUNT
// mapped more than once the last mapping wins. The one lookup of the preload, doctor and gc.
// MOUNT is compared as written: resolving it (realpath) would stat every mapped mount
// point, and one whose NFS server is gone would hang the preload's deletes and fork()
// (under the Watcher lock) and the daily gc. `nfsshim doctor` names a MOUNT that is not
// its own real path.
std::string mapped_graveyard(const Config& cfg, const std::string& root);

// A mapping's MOUNT as realpath() resolves it now; as written if it cannot be resolved.
// For doctor only (it may wait on a hung mount; an operator runs it).
std::string resolved_mount(const std::string& mount);

// Whether canonical PATH is DIR or below it. Of nested watched directories the deepest
// that holds a file is its root (the preload, doctor and gc agree on it).
bool path_within(const std::string& path, const std::string& dir);

// "30", "30s", "15m", "12h", "7d" -> seconds; false on anything else (a sign too).
bool parse_duration(const std::string& s, int64_t* out);

const char* to_string(BuryMode m);

}  // namespace nfsshim
