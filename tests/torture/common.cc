#include "common.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <unistd.h>
#include <fstream>
#include <sstream>

namespace torture {

Counters g_count;
Policy g_policy;
std::atomic<bool> g_stop{false};

std::string Counters::line() const {
  std::string s;
#define TORTURE_PRINT(n) s += #n "=" + std::to_string(n.load()) + " ";
  TORTURE_COUNTERS(TORTURE_PRINT)
#undef TORTURE_PRINT
  return s;
}

void parse_counters(const std::string& line, Totals* out) {
  std::istringstream in(line);
  std::string kv;
  while (in >> kv) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos) continue;
    (*out)[kv.substr(0, eq)] = std::strtoull(kv.c_str() + eq + 1, nullptr, 10);
  }
}

void note_error(const char* op, const std::string& path, int err, bool enoent_ok) {
  const char* kind = "unexpected";
  if (err == ENOENT && enoent_ok) {
    ++g_count.enoent;
    return;
  }
  if ((err == ENOTCONN || err == ECONNABORTED || err == EIO) && g_policy.disconnect_ok) {
    ++g_count.disconnects;
    g_stop = true;
    return;
  }
  if ((err == ENOSPC || err == EDQUOT) && g_policy.enospc_ok) {
    ++g_count.enospc;
    return;
  }
  if (err == EBUSY || err == ENOTEMPTY || err == ESTALE) {
    if (g_policy.plain_ok && err != ESTALE) {
      ++g_count.plain_errors;
      kind = "plain";
    } else {
      ++g_count.forbidden;
      kind = "FORBIDDEN";
    }
  } else {
    ++g_count.unexpected;
  }
  // Shown per kind: a flood of one kind must not hide the first of another.
  static std::atomic<int> shown_forbidden{0}, shown_other{0};
  std::atomic<int>& shown = kind[0] == 'F' ? shown_forbidden : shown_other;
  if (shown++ >= 20) return;
  // A forbidden one also says when (UTC wall clock), to be matched with the daemon's log.
  char when[64] = "";
  if (kind[0] == 'F') {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    tm t;
    gmtime_r(&ts.tv_sec, &t);
    std::snprintf(when, sizeof when, " (at %02d:%02d:%02d.%03ld UTC)", t.tm_hour, t.tm_min, t.tm_sec,
                  ts.tv_nsec / 1000000);
  }
  std::fprintf(stderr, "torture[%d]: %s error: %s %s: %s%s\n", getpid(), kind, op, path.c_str(),
               std::strerror(err), when);
}

std::string hex16(uint64_t v) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
  return b;
}

double now_s() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

long rss_kib(int pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line))
    if (line.compare(0, 6, "VmRSS:") == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  return -1;
}

bool name_is_silly(const char* name) {
  return std::strncmp(name, ".nfs", 4) == 0 || std::strncmp(name, ".fuse_hidden", 12) == 0;
}

}  // namespace torture
