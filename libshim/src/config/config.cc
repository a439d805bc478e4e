#include "nfsshim/config.h"

#include <sys/stat.h>

#include <climits>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "nfsshim/graveyard.h"
#include "nfsshim/sys.h"

namespace nfsshim {

const char* to_string(BuryMode m) { return m == BuryMode::all ? "all" : "referenced"; }

bool Config::is_given(const std::string& key) const {
  for (const auto& k : given)
    if (k == key) return true;
  return false;
}

static std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

static std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t pos = 0;
  for (;;) {
    size_t t = s.find(sep, pos);
    std::string part = trim(s.substr(pos, t == std::string::npos ? std::string::npos : t - pos));
    if (!part.empty()) out.push_back(part);
    if (t == std::string::npos) break;
    pos = t + 1;
  }
  return out;
}

bool parse_duration(const std::string& s, int64_t* out) {
  // Digits first: strtoll would also take a sign ("-0", "+5") or leading blanks.
  if (s.empty() || s.size() > 20 || !std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || end == s.c_str() || v < 0) return false;
  int64_t mul = 1;
  std::string unit(end);
  if (unit.empty() || unit == "s") mul = 1;
  else if (unit == "m") mul = 60;
  else if (unit == "h") mul = 3600;
  else if (unit == "d") mul = 86400;
  else return false;
  if (v > INT64_MAX / mul) return false;
  *out = v * mul;
  return true;
}

static bool parse_bool(const std::string& v, bool* out) {
  if (v == "1" || v == "true" || v == "yes" || v == "on") return *out = true, true;
  if (v == "0" || v == "false" || v == "no" || v == "off") return *out = false, true;
  return false;
}

static bool absolute_path(const std::string& p) { return !p.empty() && p[0] == '/'; }

// "//a//b/" -> "/a/b": mount points are compared and graveyard paths split as strings.
// Blanks at the end go too, as around every value ("/a/ /" -> "/a", not "/a/ ").
static std::string squeeze_slashes(const std::string& p) {
  std::string out;
  for (char c : p)
    if (c != '/' || out.empty() || out.back() != '/') out.push_back(c);
  auto trailing = [](char c) { return c == '/' || c == ' ' || c == '\t' || c == '\r'; };
  while (out.size() > 1 && trailing(out.back())) out.pop_back();
  return out;
}

bool apply_setting(Config* cfg, const std::string& key, const std::string& value,
                   ConfigError* err) {
  auto bad = [&](const std::string& expected) {
    err->key = key;
    err->message = "expected " + expected + ", got '" + value + "'";
    return false;
  };
  if (key == "enabled") {
    if (!parse_bool(value, &cfg->enabled)) return bad("true or false");
  } else if (key == "mode") {
    if (value == "all") cfg->mode = BuryMode::all;
    else if (value == "referenced") cfg->mode = BuryMode::referenced;
    else return bad("'all' or 'referenced'");
  } else if (key == "watch") {
    std::vector<std::string> dirs = split(value, ':');
    for (const auto& d : dirs)
      if (!absolute_path(d)) return bad("a ':'-separated list of absolute directories");
    cfg->watch = dirs;
  } else if (key == "graveyard_name") {
    std::string why;
    if (!valid_graveyard_name(value, &why)) return bad("a directory name that " + why);
    cfg->graveyard_name = value;
  } else if (key == "graveyard") {
    // MOUNT=DIR[,MOUNT=DIR...]; DIR must be on the same mount as MOUNT.
    std::vector<std::pair<std::string, std::string>> list;
    for (const auto& item : split(value, ',')) {
      size_t eq = item.find('=');
      if (eq == std::string::npos) return bad("MOUNTPOINT=DIRECTORY[,MOUNTPOINT=DIRECTORY...]");
      std::string m = trim(item.substr(0, eq)), d = trim(item.substr(eq + 1));
      if (!absolute_path(m) || !absolute_path(d)) return bad("absolute paths in MOUNTPOINT=DIRECTORY");
      m = squeeze_slashes(m);
      d = squeeze_slashes(d);
      // DIR's last component is the graveyard's name: the rules of graveyard_name.
      std::string why;
      if (d == "/") return bad("a DIRECTORY other than '/' in MOUNTPOINT=DIRECTORY");
      if (!valid_graveyard_name(d.substr(d.rfind('/') + 1), &why))
        return bad("MOUNTPOINT=DIRECTORY where DIRECTORY's last component, the graveyard's name, " + why);
      list.emplace_back(m, d);
    }
    cfg->graveyards.insert(cfg->graveyards.end(), list.begin(), list.end());
  } else if (key == "foreign_max_age") {
    if (!parse_duration(value, &cfg->foreign_max_age_s))
      return bad("a duration such as 3600, 90m, 12h or 7d");
  } else if (key == "sweep_silly") {
    if (!parse_bool(value, &cfg->sweep_silly)) return bad("true or false");
  } else if (key == "log_level") {
    static const char* levels[] = {"trace", "debug", "info", "warn", "error", "off"};
    bool ok = false;
    for (const char* l : levels) ok = ok || value == l;
    if (!ok) return bad("one of trace, debug, info, warn, error, off");
    cfg->log_level = value;
  } else if (key == "log") {
    if (value != "stderr" && value != "syslog" &&
        !(value.rfind("file:", 0) == 0 && absolute_path(value.substr(5))))
      return bad("'stderr', 'syslog' or 'file:/absolute/path'");
    cfg->log_target = value;
  } else if (key == "stats_dir") {
    if (!absolute_path(value)) return bad("an absolute directory");
    cfg->stats_dir = value;
  } else {
    err->key = key;
    err->message = "unknown setting";
    return false;
  }
  if (!cfg->is_given(key)) cfg->given.push_back(key);
  return true;
}

void parse_config_text(Config* cfg, const std::string& text, const std::string& where,
                       std::vector<ConfigError>* errors) {
  size_t pos = 0;
  int lineno = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    std::string line = text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? text.size() + 1 : nl + 1;
    ++lineno;
    size_t hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    line = trim(line);
    if (line.empty()) continue;
    ConfigError err;
    err.where = where + ":" + std::to_string(lineno);
    size_t eq = line.find('=');
    if (eq == std::string::npos) {
      err.key = line;
      err.message = "expected 'key = value'";
      errors->push_back(err);
      continue;
    }
    if (trim(line.substr(0, eq)).empty()) {
      err.key = "(empty key)";
      err.message = "expected 'key = value', got '" + line + "'";
      errors->push_back(err);
      continue;
    }
    if (!apply_setting(cfg, trim(line.substr(0, eq)), trim(line.substr(eq + 1)), &err))
      errors->push_back(err);
  }
}

// Variables of the nfsshim tools, packaging and test harness that share the prefix but
// are not settings (so that a typo in a setting's name can still be reported).
static bool tool_variable(const std::string& name) {
  static const char* const names[] = {"PRELOAD_LIB", "FUSE_BIN", "BIN", "GC_RUN", "BUILD",
                                      "UML_NO_FIX", "SKIP_SANITIZERS", "SKIP_FUZZ", "DEMO_VERS", "TARBALL_FROM"};
  for (const char* n : names)
    if (name == n) return true;
  return name == "LAB" || name.rfind("LAB_", 0) == 0;
}

// NFSSHIM_<KEY> for every setting key; NFSSHIM_CONFIG names the file and
// NFSSHIM_DISABLE=1 is a short form of NFSSHIM_ENABLED=false.
void apply_environment(Config* cfg, char* const* envp, std::vector<ConfigError>* errors) {
  static const char* keys[] = {"enabled",   "mode",           "watch",       "graveyard_name",
                               "graveyard", "foreign_max_age", "sweep_silly", "log_level",
                               "log",       "stats_dir"};
  for (char* const* e = envp; e && *e; ++e) {
    if (std::strncmp(*e, "NFSSHIM_", 8) != 0) continue;
    const char* eq = std::strchr(*e, '=');
    if (!eq) continue;
    std::string name(static_cast<const char*>(*e) + 8, eq);
    std::string value(eq + 1);
    std::string key;
    for (char c : name) key.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    if (key == "config" || tool_variable(name)) continue;
    ConfigError err;
    err.where = "environment NFSSHIM_" + name;
    if (key.empty()) {
      err.key = "(empty key)";
      err.message = "expected NFSSHIM_<KEY>=VALUE, got '" + std::string(*e) + "'";
      errors->push_back(err);
      continue;
    }
    if (key == "disable") {
      bool off = false;
      if (!parse_bool(value, &off)) {
        err.key = "disable";
        err.message = "expected 1 or 0, got '" + value + "'";
        errors->push_back(err);
      } else if (off) {
        cfg->enabled = false;
      }
      continue;
    }
    bool known = false;
    for (const char* k : keys) known = known || key == k;
    if (!known) {
      err.key = key;
      err.message = "unknown setting (see nfsshim.conf(5))";
      errors->push_back(err);
      continue;
    }
    // NFSSHIM_GRAVEYARD replaces the file's mappings (the file's lines add up), as every
    // variable replaces its key; a bad value keeps them.
    std::vector<std::pair<std::string, std::string>> file_graveyards;
    if (key == "graveyard") file_graveyards.swap(cfg->graveyards);
    if (!apply_setting(cfg, key, value, &err)) {
      if (key == "graveyard") cfg->graveyards.swap(file_graveyards);
      errors->push_back(err);
    }
  }
}

std::string resolved_mount(const std::string& mount) {
  char buf[PATH_MAX];
  return ::realpath(mount.c_str(), buf) ? buf : mount;
}

std::string mapped_graveyard(const Config& cfg, const std::string& root) {
  std::string dir;
  for (const auto& g : cfg.graveyards)
    if (g.first == root) dir = g.second;
  return dir;
}

bool path_within(const std::string& path, const std::string& dir) {
  if (dir == "/") return !path.empty() && path[0] == '/';
  return path.compare(0, dir.size(), dir) == 0 && (path.size() == dir.size() || path[dir.size()] == '/');
}

static const char* env_lookup(char* const* envp, const char* name) {
  size_t n = std::strlen(name);
  for (char* const* e = envp; e && *e; ++e)
    if (std::strncmp(*e, name, n) == 0 && (*e)[n] == '=') return *e + n + 1;
  return nullptr;
}

Config load_config(char* const* envp, std::vector<ConfigError>* errors) {
  Config cfg;
  const char* named = env_lookup(envp, "NFSSHIM_CONFIG");
  std::string path = named && *named ? named : "/etc/nfsshim.conf";
  // The whole file or none of it: a cut one parses its last line wrong without a word
  // ("foreign_max_age = 30d" read as "= 3"). A usual file fits the first read.
  std::string text(64 * 1024, '\0');
  ssize_t n = sys::read_file(AT_FDCWD, path.c_str(), &text[0], text.size());
  if (n == static_cast<ssize_t>(text.size())) {
    text.assign(kMaxConfigBytes + 1, '\0');
    n = sys::read_file(AT_FDCWD, path.c_str(), &text[0], text.size());
  }
  if (n > static_cast<ssize_t>(kMaxConfigBytes)) {
    struct stat st;
    std::string size = sys::fstatat(AT_FDCWD, path.c_str(), &st, 0) == 0
                           ? std::to_string(st.st_size) + " bytes"
                           : "more than " + std::to_string(kMaxConfigBytes) + " bytes";
    errors->push_back({path, "config", "file too large (" + size + ", at most " +
                                           std::to_string(kMaxConfigBytes) + "): not read, defaults kept"});
  } else if (n >= 0) {
    text.resize(static_cast<size_t>(n));
    cfg.source = path;
    parse_config_text(&cfg, text, path, errors);
  } else if (named || n != -ENOENT) {
    errors->push_back({path, "config", std::string("cannot read: ") + std::strerror(static_cast<int>(-n))});
  }
  apply_environment(&cfg, envp, errors);
  return cfg;
}

}  // namespace nfsshim
