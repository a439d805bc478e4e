// The three ways `nfsshim stat` prints counters: an aligned table, JSON, and the
// Prometheus text exposition format (for node_exporter's textfile collector).
#pragma once

#include <string>
#include <vector>

#include "nfsshim/stats_file.h"

namespace nfsshim::tools {

std::string format_table(const std::vector<StatsSnapshot>& procs);
std::string format_json(const std::vector<StatsSnapshot>& procs);
// Counters as nfsshim_<name>_total (counter), levels as nfsshim_<name> (gauge), each
// labelled pid, kind and comm; HELP and TYPE lines even when no process runs.
std::string format_prometheus(const std::vector<StatsSnapshot>& procs);

// The metric name of counter I (kCounterInfo order).
std::string prometheus_name(size_t i);
// A label value with \, " and newline escaped.
std::string prometheus_escape(const std::string& v);

}  // namespace nfsshim::tools
