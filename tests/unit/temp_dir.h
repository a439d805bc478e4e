// A fresh directory under $TMPDIR (or /tmp), removed with everything in it.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <string>

class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/nfsshim-test.XXXXXX";
    path_ = mkdtemp(&tmpl[0]) ? tmpl : "";
  }
  ~TempDir() {
    if (!path_.empty()) {
      std::string cmd = "rm -rf '" + path_ + "'";
      if (std::system(cmd.c_str()) != 0) {
      }
    }
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};
