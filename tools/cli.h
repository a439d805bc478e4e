// What every `nfsshim` command shares: exit statuses, argument errors, the config.
#pragma once

#include <string>
#include <vector>

#include "nfsshim/config.h"

namespace nfsshim::tools {

inline constexpr int kExitOk = 0;        // done, nothing wrong
inline constexpr int kExitProblems = 1;  // done, but problems found (doctor) or actions failed (gc)
inline constexpr int kExitUsage = 2;     // bad arguments or unreadable path: nothing was changed
                                         // (gc: a PATH it cannot open is a failure, 1)

// Prints "nfsshim VERB: MESSAGE" and a pointer to --help; returns kExitUsage.
int usage_error(const char* verb, const std::string& message);

bool is_help(const std::string& arg);

// The settings every tool uses (file, then NFSSHIM_* variables). Bad settings are
// reported on stderr and their defaults kept, as the preload does.
Config load_tool_config();

// TEXT with each byte that starts no valid UTF-8 sequence replaced by U+FFFD (program
// names and paths are bytes; JSON and Prometheus output must be UTF-8).
std::string valid_utf8(const std::string& text);
// TEXT as valid UTF-8 with its control characters (C0, DEL, C1) written as \xNN or
// \u00NN: names and paths other users chose (graveyard entries, directories, a process's
// name) must not move the terminal's cursor or start a forged line in root's output.
std::string terminal_safe(const std::string& text);
// "text" with JSON string escapes, without the surrounding quotes; valid UTF-8.
std::string json_escape(const std::string& text);

// The commands, one per cmd_<verb>.cc. ARGS excludes the verb itself.
int cmd_run(const std::vector<std::string>& args);
int cmd_gc(const std::vector<std::string>& args);
int cmd_doctor(const std::vector<std::string>& args);
int cmd_stat(const std::vector<std::string>& args);

}  // namespace nfsshim::tools
