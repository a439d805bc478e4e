#pragma once
#include <string>
namespace torture {
// Symlink-swap race against buries and reaps; see race.cc.
int run_race(const std::string& dir, const std::string& outside, const std::string& graveyard_user_dir,
             double seconds, const std::string& label, char* self);
// One short-lived shimmed process: holds DIR/NAME, deletes it, exits (a bury, then the
// next process's reap of what the dead left).
int run_reap_once(const std::string& path);
}  // namespace torture
