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

std::string json_escape(const std::string& text) {
  std::string out;
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
