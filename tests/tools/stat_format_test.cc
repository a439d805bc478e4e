// `nfsshim stat` output: the Prometheus text format checked by a small parser of the
// exposition grammar (promtool, where installed, checks it again in tools_stat).
#include "stat_format.h"

#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace nfsshim::tools {
namespace {

std::vector<StatsSnapshot> sample() {
  StatsSnapshot a;
  a.pid = 100;
  a.kind = StatsKind::preload;
  a.name = "java";
  for (size_t i = 0; i < kCounterCount; ++i) a.values[i] = i * 10;
  StatsSnapshot b = a;
  b.pid = 200;
  b.kind = StatsKind::fuse;
  b.name = "we\"ird\\na\nme";
  return {a, b};
}

// Parses the text exposition format strictly enough to catch what breaks a scrape:
// HELP/TYPE before samples, one TYPE per family, valid names, label syntax and
// escapes, numeric values, no duplicate series. Returns "" or the first error.
std::string check_exposition(const std::string& text, std::map<std::string, std::string>* series) {
  static const std::regex help(R"(^# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) .*$)");
  static const std::regex type(R"(^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge)$)");
  static const std::regex sample_re(
      R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\["\\n])*",?)*)\} ([0-9]+)$)");
  std::map<std::string, std::string> types;
  std::set<std::string> helped;
  if (text.empty() || text.back() != '\n') return "must end with a newline";
  size_t pos = 0;
  int lineno = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++lineno;
    std::smatch m;
    std::string where = "line " + std::to_string(lineno) + " '" + line + "': ";
    if (std::regex_match(line, m, help)) {
      if (!helped.insert(m[1]).second) return where + "second HELP";
    } else if (std::regex_match(line, m, type)) {
      if (types.count(m[1])) return where + "second TYPE";
      if (m[2] == "counter" && m[1].str().size() > 6 &&
          m[1].str().compare(m[1].str().size() - 6, 6, "_total") != 0)
        return where + "counter without _total";
      types[m[1]] = m[2];
    } else if (std::regex_match(line, m, sample_re)) {
      if (!types.count(m[1])) return where + "sample before its TYPE";
      std::string key = m[1].str() + "{" + m[2].str() + "}";
      if (series->count(key)) return where + "duplicate series";
      (*series)[key] = m[3];
    } else {
      return where + "not a HELP, TYPE or sample line";
    }
  }
  return "";
}

TEST(StatFormat, PrometheusIsValidExposition) {
  std::map<std::string, std::string> series;
  std::string text = format_prometheus(sample());
  ASSERT_EQ(check_exposition(text, &series), "") << text;
  EXPECT_EQ(series.size(), 2 * kCounterCount);
  EXPECT_EQ(series["nfsshim_buried_total{pid=\"100\",kind=\"preload\",comm=\"java\"}"], "0");
  EXPECT_EQ(series["nfsshim_removed_last_ref_total{pid=\"100\",kind=\"preload\",comm=\"java\"}"], "10");
  EXPECT_EQ(series["nfsshim_tracked_fds{pid=\"200\",kind=\"fuse\",comm=\"we\\\"ird\\\\na\\nme\"}"], "70");
  EXPECT_NE(text.find("# TYPE nfsshim_live_entries gauge\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE nfsshim_errors_total counter\n"), std::string::npos);
}

TEST(StatFormat, PrometheusWithoutProcessesStillDeclaresEveryMetric) {
  std::map<std::string, std::string> series;
  std::string text = format_prometheus({});
  ASSERT_EQ(check_exposition(text, &series), "") << text;
  EXPECT_TRUE(series.empty());
  for (size_t i = 0; i < kCounterCount; ++i)
    EXPECT_NE(text.find("# TYPE " + prometheus_name(i) + " "), std::string::npos) << prometheus_name(i);
}

TEST(StatFormat, TheCheckerRejectsBrokenExposition) {
  // The parser must be able to fail, or the tests above prove nothing.
  std::map<std::string, std::string> s1, s2, s3, s4;
  EXPECT_NE(check_exposition("nfsshim_x_total{pid=\"1\"} 1\n", &s1), "");
  EXPECT_NE(check_exposition("# TYPE nfsshim_x_total counter\nnfsshim_x_total{comm=\"a\"b\"} 1\n", &s2), "");
  EXPECT_NE(check_exposition("# TYPE nfsshim_x counter\n", &s3), "");
  EXPECT_NE(check_exposition("# TYPE a_total counter\na_total{p=\"1\"} 1\na_total{p=\"1\"} 2\n", &s4), "");
}

TEST(StatFormat, JsonAndTableCarryEveryCounter) {
  std::string json = format_json(sample());
  EXPECT_NE(json.find("\"pid\": 100, \"kind\": \"preload\", \"name\": \"java\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"name\": \"we\\\"ird\\\\na\\nme\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"errors\": 100"), std::string::npos) << json;
  EXPECT_EQ(format_json({}), "{\"processes\": []}\n");
  std::string table = format_table(sample());
  for (const auto& c : kCounterInfo) EXPECT_NE(table.find(c.name), std::string::npos) << c.name;
  EXPECT_NE(table.find("100  preload  java"), std::string::npos) << table;
}

// A program name that is not UTF-8 (a binary named with Latin-1, or a UTF-8 name cut in
// the middle of a character at the stats file's 31 bytes) must not make the output
// invalid: node_exporter's textfile collector drops a whole .prom file whose label value
// is not UTF-8, and a JSON parser refuses it. Each bad byte becomes U+FFFD.
TEST(StatFormat, ANameThatIsNotUtf8BecomesValidUtf8) {
  std::vector<StatsSnapshot> procs = sample();
  procs[0].name = "caf\xe9-\xff";  // Latin-1 e-acute, a byte never in UTF-8
  procs[1].name = "gr\xc3\xbcn-\xe2\x82";  // ü, then a euro sign cut after 2 of its 3 bytes
  const std::string fffd = "\xef\xbf\xbd";
  const std::string json = format_json(procs), prom = format_prometheus(procs);
  EXPECT_NE(json.find("\"name\": \"caf" + fffd + "-" + fffd + "\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"name\": \"gr\xc3\xbcn-" + fffd + fffd + "\""), std::string::npos) << json;
  EXPECT_NE(prom.find("comm=\"caf" + fffd + "-" + fffd + "\""), std::string::npos) << prom;
  EXPECT_EQ(json.find("\xe9"), std::string::npos);
  EXPECT_EQ(prom.find("\xff"), std::string::npos);
}

}  // namespace
}  // namespace nfsshim::tools
