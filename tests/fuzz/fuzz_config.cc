// Fuzz target: the settings parser (nfsshim.conf text, NFSSHIM_* environment values,
// durations). The first byte picks the input kind ('e': environment, one variable per
// line; 'd': a duration; anything else: file text); the rest is the input.
// Invariants:
//   - every setting that was accepted satisfies its own validation rule (a bad value
//     never gets into the Config);
//   - every rejected line or variable yields an error with a place and a message;
//   - file text round-trips: the Config written back as text parses to the same Config
//     without errors;
//   - an accepted duration is >= 0 and reads back from its number of seconds.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_check.h"
#include "nfsshim/config.h"
#include "nfsshim/graveyard.h"

using nfsshim::Config;
using nfsshim::ConfigError;

namespace {

bool absolute(const std::string& p) { return !p.empty() && p[0] == '/'; }

void check_valid(const Config& c) {
  for (const auto& w : c.watch) FUZZ_CHECK(absolute(w), "watch entry %s", fuzz_quote(w).c_str());
  std::string why;
  FUZZ_CHECK(nfsshim::valid_graveyard_name(c.graveyard_name, &why), "graveyard_name %s",
             fuzz_quote(c.graveyard_name).c_str());
  // Both sides normalised (no "//", no trailing '/'), DIR's last component a valid name.
  auto normal = [](const std::string& p) {
    return absolute(p) && p.find("//") == std::string::npos && (p == "/" || p.back() != '/');
  };
  for (const auto& g : c.graveyards)
    FUZZ_CHECK(normal(g.first) && normal(g.second) && g.second != "/" &&
                   nfsshim::valid_graveyard_name(g.second.substr(g.second.rfind('/') + 1), &why),
               "graveyard %s=%s", fuzz_quote(g.first).c_str(), fuzz_quote(g.second).c_str());
  FUZZ_CHECK(c.foreign_max_age_s >= 0, "foreign_max_age %lld",
             static_cast<long long>(c.foreign_max_age_s));
  static const char* const levels[] = {"trace", "debug", "info", "warn", "error", "off"};
  bool ok = false;
  for (const char* l : levels) ok = ok || c.log_level == l;
  FUZZ_CHECK(ok, "log_level %s", fuzz_quote(c.log_level).c_str());
  FUZZ_CHECK(c.log_target == "stderr" || c.log_target == "syslog" ||
                 (c.log_target.rfind("file:", 0) == 0 && absolute(c.log_target.substr(5))),
             "log %s", fuzz_quote(c.log_target).c_str());
  FUZZ_CHECK(absolute(c.stats_dir), "stats_dir %s", fuzz_quote(c.stats_dir).c_str());
}

void check_errors(const std::vector<ConfigError>& errors) {
  for (const auto& e : errors) {
    FUZZ_CHECK(!e.where.empty(), "error without a place: %s", fuzz_quote(e.str()).c_str());
    FUZZ_CHECK(!e.message.empty(), "error without a message: %s", fuzz_quote(e.str()).c_str());
  }
}

// The Config as nfsshim.conf text (every setting, one line each).
std::string to_text(const Config& c) {
  std::string t;
  t += std::string("enabled = ") + (c.enabled ? "true" : "false") + "\n";
  t += std::string("mode = ") + nfsshim::to_string(c.mode) + "\n";
  t += "watch = ";
  for (size_t i = 0; i < c.watch.size(); ++i) t += (i ? ":" : "") + c.watch[i];
  t += "\ngraveyard_name = " + c.graveyard_name + "\n";
  if (!c.graveyards.empty()) {
    t += "graveyard = ";
    for (size_t i = 0; i < c.graveyards.size(); ++i)
      t += (i ? "," : "") + c.graveyards[i].first + "=" + c.graveyards[i].second;
    t += "\n";
  }
  t += "foreign_max_age = " + std::to_string(c.foreign_max_age_s) + "\n";
  t += std::string("sweep_silly = ") + (c.sweep_silly ? "true" : "false") + "\n";
  t += "log_level = " + c.log_level + "\nlog = " + c.log_target + "\n";
  t += "stats_dir = " + c.stats_dir + "\n";
  return t;
}

bool same(const Config& a, const Config& b) {
  return a.enabled == b.enabled && a.mode == b.mode && a.watch == b.watch &&
         a.graveyard_name == b.graveyard_name && a.graveyards == b.graveyards &&
         a.foreign_max_age_s == b.foreign_max_age_s && a.sweep_silly == b.sweep_silly &&
         a.log_level == b.log_level && a.log_target == b.log_target && a.stats_dir == b.stats_dir;
}

void fuzz_text(const std::string& text) {
  Config c;
  std::vector<ConfigError> errors;
  nfsshim::parse_config_text(&c, text, "fuzz.conf", &errors);
  check_valid(c);
  check_errors(errors);
  size_t lines = 1;
  for (char ch : text) lines += ch == '\n';
  FUZZ_CHECK(errors.size() <= lines, "%zu errors for %zu lines", errors.size(), lines);

  std::string again = to_text(c);
  Config c2;
  std::vector<ConfigError> errors2;
  nfsshim::parse_config_text(&c2, again, "again.conf", &errors2);
  FUZZ_CHECK(errors2.empty(), "written-back config rejected: %s\n  text: %s",
             errors2[0].str().c_str(), fuzz_quote(again).c_str());
  FUZZ_CHECK(same(c, c2), "written-back config differs\n  text: %s", fuzz_quote(again).c_str());
}

// Each line of the input is one variable, NFSSHIM_ prepended.
void fuzz_env(const std::string& text) {
  std::vector<std::string> vars;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    vars.push_back("NFSSHIM_" + text.substr(pos, nl - pos));
    pos = nl + 1;
  }
  std::vector<char*> envp;
  for (auto& v : vars) envp.push_back(&v[0]);  // strings may hold NULs: C sees a prefix
  envp.push_back(nullptr);
  Config c;
  std::vector<ConfigError> errors;
  nfsshim::apply_environment(&c, envp.data(), &errors);
  check_valid(c);
  check_errors(errors);
  FUZZ_CHECK(errors.size() <= vars.size(), "%zu errors for %zu variables", errors.size(),
             vars.size());
}

void fuzz_duration(const std::string& s) {
  int64_t v = -1;
  if (!nfsshim::parse_duration(s, &v)) return;
  FUZZ_CHECK(v >= 0, "%s -> %lld", fuzz_quote(s).c_str(), static_cast<long long>(v));
  int64_t back = -1;
  FUZZ_CHECK(nfsshim::parse_duration(std::to_string(v), &back) && back == v,
             "%s -> %lld does not read back", fuzz_quote(s).c_str(), static_cast<long long>(v));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  std::string input(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] == 'e') fuzz_env(input);
  else if (data[0] == 'd') fuzz_duration(input);
  else fuzz_text(input);
  return 0;
}
