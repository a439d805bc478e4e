#include "stat_format.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "cli.h"

namespace nfsshim::tools {

std::string format_table(const std::vector<StatsSnapshot>& procs) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> head{"PID", "KIND", "NAME"};
  for (const auto& c : kCounterInfo) head.push_back(c.name);
  rows.push_back(head);
  for (const auto& s : procs) {
    std::vector<std::string> row{std::to_string(s.pid), to_string(s.kind), terminal_safe(s.name)};
    for (uint64_t v : s.values) row.push_back(std::to_string(v));
    rows.push_back(row);
  }
  std::vector<size_t> width(head.size(), 0);
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      // Text columns left-aligned, numbers right-aligned.
      std::string pad(width[i] - row[i].size(), ' ');
      line += (i == 1 || i == 2) ? row[i] + pad : pad + row[i];
      if (i + 1 < row.size()) line += "  ";
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string format_json(const std::vector<StatsSnapshot>& procs) {
  std::string out = "{\"processes\": [";
  for (size_t p = 0; p < procs.size(); ++p) {
    const auto& s = procs[p];
    out += p ? ",\n  " : "\n  ";
    out += "{\"pid\": " + std::to_string(s.pid) + ", \"kind\": \"" + to_string(s.kind) +
           "\", \"name\": \"" + json_escape(s.name) + "\", \"start\": " + std::to_string(s.start) +
           ", \"counters\": {";
    for (size_t i = 0; i < kCounterCount; ++i)
      out += std::string(i ? ", " : "") + "\"" + kCounterInfo[i].name + "\": " + std::to_string(s.values[i]);
    out += "}}";
  }
  out += procs.empty() ? "]}\n" : "\n]}\n";
  return out;
}

std::string prometheus_name(size_t i) {
  const CounterInfo& c = kCounterInfo[i];
  return std::string("nfsshim_") + c.name + (c.gauge ? "" : "_total");
}

std::string prometheus_escape(const std::string& raw) {
  std::string out;
  for (char c : valid_utf8(raw)) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out.push_back(c);
  }
  return out;
}

std::string format_prometheus(const std::vector<StatsSnapshot>& procs) {
  std::string out;
  for (size_t i = 0; i < kCounterCount; ++i) {
    const CounterInfo& c = kCounterInfo[i];
    std::string name = prometheus_name(i);
    out += "# HELP " + name + " " + c.help + "\n";
    out += "# TYPE " + name + (c.gauge ? " gauge\n" : " counter\n");
    for (const auto& s : procs)
      out += name + "{pid=\"" + std::to_string(s.pid) + "\",kind=\"" + to_string(s.kind) +
             "\",comm=\"" + prometheus_escape(s.name) + "\"} " + std::to_string(s.values[i]) + "\n";
  }
  return out;
}

}  // namespace nfsshim::tools
