#include "nfsshim/config.h"

#include <gtest/gtest.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "temp_dir.h"

namespace nfsshim {
namespace {

TEST(Config, DefaultsAreSane) {
  Config c;
  EXPECT_TRUE(c.enabled);
  EXPECT_EQ(c.graveyard_name, ".graveyard.nfsshim");
  EXPECT_EQ(c.foreign_max_age_s, 7 * 86400);
}

TEST(Config, ParsesFileWithCommentsAndSpaces) {
  Config c;
  std::vector<ConfigError> errs;
  parse_config_text(&c,
                    "# comment\n"
                    "mode = referenced\n"
                    "  watch=/a:/b   # trailing\n"
                    "\n"
                    "foreign_max_age = 12h\n"
                    "graveyard = /mnt/k=/mnt/k/.g, /mnt/l=/mnt/l/x/.g\n"
                    "log = file:/var/log/nfsshim.log\n",
                    "test.conf", &errs);
  EXPECT_TRUE(errs.empty()) << errs[0].str();
  EXPECT_EQ(c.mode, BuryMode::referenced);
  EXPECT_EQ(c.watch, (std::vector<std::string>{"/a", "/b"}));
  EXPECT_EQ(c.foreign_max_age_s, 12 * 3600);
  ASSERT_EQ(c.graveyards.size(), 2u);
  EXPECT_EQ(c.graveyards[1].first, "/mnt/l");
  EXPECT_EQ(c.graveyards[1].second, "/mnt/l/x/.g");
  EXPECT_EQ(c.log_target, "file:/var/log/nfsshim.log");
}

TEST(Config, BadValuesNameTheKeyAndKeepTheDefault) {
  Config c;
  std::vector<ConfigError> errs;
  parse_config_text(&c,
                    "mode = sometimes\n"
                    "watch = relative/dir\n"
                    "graveyard_name = .nfsgrave\n"
                    "foreign_max_age = 3 weeks\n"
                    "no equals sign\n"
                    "colour = blue\n",
                    "x.conf", &errs);
  ASSERT_EQ(errs.size(), 6u);
  EXPECT_EQ(errs[0].where, "x.conf:1");
  EXPECT_EQ(errs[0].key, "mode");
  EXPECT_NE(errs[0].message.find("'all' or 'referenced'"), std::string::npos);
  EXPECT_NE(errs[0].message.find("sometimes"), std::string::npos);
  EXPECT_EQ(errs[1].key, "watch");
  EXPECT_NE(errs[2].message.find(".nfs"), std::string::npos);
  EXPECT_EQ(errs[3].key, "foreign_max_age");
  EXPECT_NE(errs[4].message.find("key = value"), std::string::npos);
  EXPECT_EQ(errs[5].message, "unknown setting");
  Config d;
  EXPECT_EQ(c.mode, d.mode);
  EXPECT_TRUE(c.watch.empty());
  EXPECT_EQ(c.graveyard_name, d.graveyard_name);
}

// graveyard = MOUNT=DIR: a trailing slash on MOUNT made it never equal the mount root
// (ignored without a word), one on DIR left an empty graveyard name (-EINVAL at first use);
// both sides are compared and split as written, so slashes are normalised.
TEST(Config, GraveyardPathsAreNormalised) {
  Config c;
  std::vector<ConfigError> errs;
  parse_config_text(&c,
                    "graveyard = /mnt/k/=/mnt/k//x/.g/, //mnt//l//=/mnt/l/.g/ /\n",
                    "g.conf", &errs);
  EXPECT_TRUE(errs.empty()) << errs[0].str();
  ASSERT_EQ(c.graveyards.size(), 2u);
  EXPECT_EQ(c.graveyards[0].first, "/mnt/k");
  EXPECT_EQ(c.graveyards[0].second, "/mnt/k/x/.g");
  EXPECT_EQ(c.graveyards[1].first, "/mnt/l");
  EXPECT_EQ(c.graveyards[1].second, "/mnt/l/.g");
}

// DIR's last component is the graveyard's name: the rules of graveyard_name apply to it.
TEST(Config, GraveyardDirNameIsChecked) {
  for (const char* value : {"/mnt/k=/mnt/k/.nfs0001", "/mnt/k=/mnt/k/x/.fuse_hidden01/",
                            "/mnt/k=//", "/mnt/k=/mnt/k/..", "/mnt/k=/mnt/k/."}) {
    Config c;
    std::vector<ConfigError> errs;
    parse_config_text(&c, std::string("graveyard = ") + value + "\n", "g.conf", &errs);
    ASSERT_EQ(errs.size(), 1u) << value;
    EXPECT_EQ(errs[0].where, "g.conf:1");
    EXPECT_EQ(errs[0].key, "graveyard") << value;
    EXPECT_NE(errs[0].message.find(value), std::string::npos) << errs[0].message;
    EXPECT_TRUE(c.graveyards.empty()) << value;
  }
  Config c;
  std::vector<ConfigError> errs;
  parse_config_text(&c, "graveyard = /mnt/k=/mnt/k/.nfsgrave\n", "g.conf", &errs);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_NE(errs[0].message.find("'.nfs'"), std::string::npos) << errs[0].message;
}

TEST(Config, EnvironmentOverridesFile) {
  Config c;
  std::vector<ConfigError> errs;
  parse_config_text(&c, "mode = all\n", "f", &errs);
  std::string a = "NFSSHIM_MODE=referenced", b = "NFSSHIM_LOG_LEVEL=debug", u = "NFSSHIM_BOGUS=1",
              d = "NFSSHIM_DISABLE=1", other = "PATH=/bin", lab = "NFSSHIM_LAB_NETNS=x",
              lib = "NFSSHIM_PRELOAD_LIB=/x.so";
  char* env[] = {&a[0], &b[0], &u[0], &d[0], &other[0], &lab[0], &lib[0], nullptr};
  apply_environment(&c, env, &errs);
  EXPECT_EQ(c.mode, BuryMode::referenced);
  EXPECT_EQ(c.log_level, "debug");
  EXPECT_FALSE(c.enabled);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].where, "environment NFSSHIM_BOGUS");
}

// Which keys the file or the environment set (with a valid value): nfsshim-fuse keeps its
// own log defaults for the others.
// NFSSHIM_GRAVEYARD replaced nothing: it was appended to the file's mappings, and gc took
// the first mapping of a MOUNT while the preload and doctor took the last.
TEST(Config, EnvironmentReplacesTheFilesGraveyardsAndTheLastMappingWins) {
  Config c;
  std::vector<ConfigError> errs;
  parse_config_text(&c, "graveyard = /m=/m/.g1, /n=/n/.g\ngraveyard = /m=/m/.g3\n", "f", &errs);
  EXPECT_EQ(mapped_graveyard(c, "/m"), "/m/.g3");  // the file's lines add up, the last wins
  EXPECT_EQ(mapped_graveyard(c, "/n"), "/n/.g");
  EXPECT_EQ(mapped_graveyard(c, "/o"), "");
  std::string bad = "NFSSHIM_GRAVEYARD=relative=x";
  char* env1[] = {&bad[0], nullptr};
  apply_environment(&c, env1, &errs);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(mapped_graveyard(c, "/m"), "/m/.g3");  // a bad value keeps the file's
  std::string e = "NFSSHIM_GRAVEYARD=/m=/m/.g2";
  char* env2[] = {&e[0], nullptr};
  apply_environment(&c, env2, &errs);
  EXPECT_EQ(errs.size(), 1u);
  ASSERT_EQ(c.graveyards.size(), 1u);
  EXPECT_EQ(mapped_graveyard(c, "/m"), "/m/.g2");
  EXPECT_EQ(mapped_graveyard(c, "/n"), "");
}

// A mapping's MOUNT is compared as written (resolving it would stat a mount point that may
// hang); resolved_mount (doctor's) resolves it.
TEST(Config, AMappingsMountIsComparedAsWritten) {
  TempDir t;
  std::string real = t.path() + "/d4", lnk = t.path() + "/lnk";
  ASSERT_EQ(mkdir(real.c_str(), 0755), 0);
  ASSERT_EQ(symlink(real.c_str(), lnk.c_str()), 0);
  Config c;
  std::vector<ConfigError> errs;
  parse_config_text(&c, "graveyard = " + lnk + "=" + lnk + "/.mygrave\n", "f", &errs);
  ASSERT_TRUE(errs.empty()) << errs[0].str();
  char buf[PATH_MAX];
  ASSERT_NE(realpath(real.c_str(), buf), nullptr);
  EXPECT_EQ(mapped_graveyard(c, buf), "");
  EXPECT_EQ(mapped_graveyard(c, lnk), lnk + "/.mygrave");
  EXPECT_EQ(resolved_mount(lnk), buf);
  EXPECT_EQ(resolved_mount("/nonexistent/m"), "/nonexistent/m");
}

TEST(Config, PathWithin) {
  EXPECT_TRUE(path_within("/a/b", "/a"));
  EXPECT_TRUE(path_within("/a", "/a"));
  EXPECT_TRUE(path_within("/a", "/"));
  EXPECT_FALSE(path_within("/ab", "/a"));
  EXPECT_FALSE(path_within("/", "/a"));
}

TEST(Config, RemembersTheKeysGiven) {
  Config c;
  std::vector<ConfigError> errs;
  parse_config_text(&c, "log_level = warn\nlog = bogus\n", "f", &errs);
  std::string e = "NFSSHIM_MODE=all";
  char* env[] = {&e[0], nullptr};
  apply_environment(&c, env, &errs);
  EXPECT_TRUE(c.is_given("log_level"));  // the default value, but written down
  EXPECT_TRUE(c.is_given("mode"));
  EXPECT_FALSE(c.is_given("log"));  // refused
  EXPECT_FALSE(c.is_given("stats_dir"));
  EXPECT_FALSE(Config().is_given("log_level"));
}

TEST(Config, MissingNamedFileIsAnError) {
  std::string a = "NFSSHIM_CONFIG=/nonexistent/nfsshim.conf";
  char* env[] = {&a[0], nullptr};
  std::vector<ConfigError> errs;
  load_config(env, &errs);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].where, "/nonexistent/nfsshim.conf");
}

// load_config read the first 64 KiB and parsed them without a word: a last line
// "foreign_max_age = 30d" at byte 65536 became "foreign_max_age = 3", and every component
// reaped other hosts' live entries after 3 s.
TEST(Config, AFileLargerThan64KiBIsReadWhole) {
  TempDir t;
  std::string path = t.path() + "/big.conf";
  std::string last = "foreign_max_age = 30d\n";
  std::string text;
  while (text.size() + 80 < 65539 - last.size()) text += "# " + std::string(77, 'x') + "\n";
  text += "#" + std::string(65539 - last.size() - text.size() - 2, 'y') + "\n";
  text += last;
  ASSERT_EQ(text.size(), 65539u);
  std::ofstream(path) << text;
  std::string a = "NFSSHIM_CONFIG=" + path;
  char* env[] = {&a[0], nullptr};
  std::vector<ConfigError> errs;
  Config c = load_config(env, &errs);
  EXPECT_TRUE(errs.empty()) << errs[0].str();
  EXPECT_EQ(c.foreign_max_age_s, 30 * 86400);
}

// Beyond 1 MiB the file is refused as a whole (naming it and its size), not cut.
TEST(Config, AFileLargerThan1MiBIsRefused) {
  TempDir t;
  std::string path = t.path() + "/huge.conf";
  std::string text = "mode = referenced\n" + std::string(1 << 20, '#') + "\n";
  std::ofstream(path) << text;
  std::string a = "NFSSHIM_CONFIG=" + path;
  char* env[] = {&a[0], nullptr};
  std::vector<ConfigError> errs;
  Config c = load_config(env, &errs);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].where, path);
  EXPECT_NE(errs[0].message.find(std::to_string(text.size()) + " bytes"), std::string::npos)
      << errs[0].message;
  EXPECT_EQ(c.mode, Config().mode);
}

// graveyard_name's reason lost its first word ("a directory name that not start with
// '.nfs'", "that be a file name", "that be at most 200 bytes").
TEST(Config, GraveyardNameMessagesAreWhole) {
  struct Case {
    std::string value;
    const char* says;
  } cases[] = {{".nfsgrave", "a directory name that must not start with '.nfs'"},
               {"..", "a directory name that must be a file name"},
               {"a/b", "a directory name that must be one path component, without '/'"},
               {std::string(201, 'g'), "that must be at most 200 bytes"}};
  for (const auto& k : cases) {
    Config c;
    std::vector<ConfigError> errs;
    parse_config_text(&c, "graveyard_name = " + k.value + "\n", "n.conf", &errs);
    ASSERT_EQ(errs.size(), 1u) << k.value;
    EXPECT_NE(errs[0].message.find(k.says), std::string::npos) << errs[0].message;
  }
}

// " = 5" gave "c1.conf:14: : unknown setting"; NFSSHIM_=5 the same from the environment.
TEST(Config, AnEmptyKeyIsNamedAsSuch) {
  Config c;
  std::vector<ConfigError> errs;
  parse_config_text(&c, "mode = all\n = 5\n", "c1.conf", &errs);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].str(), "c1.conf:2: (empty key): expected 'key = value', got '= 5'");
  std::string e = "NFSSHIM_=5";
  char* env[] = {&e[0], nullptr};
  apply_environment(&c, env, &errs);
  ASSERT_EQ(errs.size(), 2u);
  EXPECT_EQ(errs[1].str(), "environment NFSSHIM_: (empty key): expected NFSSHIM_<KEY>=VALUE, got 'NFSSHIM_=5'");
}

// A duration with a sign ("-0", "+5") was taken: strtoll reads signs and leading blanks.
TEST(Config, DurationsHaveNoSign) {
  int64_t v = 42;
  for (const char* s : {"-0", "+5", "-0d", " 5", "+0"}) {
    EXPECT_FALSE(parse_duration(s, &v)) << s;
    EXPECT_EQ(v, 42) << s;
  }
  Config c;
  std::vector<ConfigError> errs;
  parse_config_text(&c, "foreign_max_age = -0\n", "d.conf", &errs);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].key, "foreign_max_age");
  EXPECT_EQ(c.foreign_max_age_s, Config().foreign_max_age_s);
}

TEST(Config, Durations) {
  int64_t v = 0;
  EXPECT_TRUE(parse_duration("90", &v));
  EXPECT_EQ(v, 90);
  EXPECT_TRUE(parse_duration("15m", &v));
  EXPECT_EQ(v, 900);
  EXPECT_TRUE(parse_duration("7d", &v));
  EXPECT_EQ(v, 7 * 86400);
  EXPECT_FALSE(parse_duration("", &v));
  EXPECT_FALSE(parse_duration("-1", &v));
  EXPECT_FALSE(parse_duration("5y", &v));
  EXPECT_FALSE(parse_duration("99999999999999999999d", &v));
}

}  // namespace
}  // namespace nfsshim
