// Engine options from a vers=4.1 URL, and Engine::open's errors for bad options and an
// unreachable server (no server needed: nothing listens on 127.0.0.1:1).
#include <gtest/gtest.h>

#include <cerrno>

#include "nfsshim/nfs41/engine.h"

using namespace nfsshim;

TEST(Nfs41Options, FromUrl) {
  nfs::NfsUrl u;
  std::string why;
  ASSERT_EQ(nfs::parse_nfs_url("nfs://127.0.0.1:42049/export?vers=4.1&nconnect=8", &u, &why), 0)
      << why;
  nfs41::Options o;
  ASSERT_EQ(nfs41::options_from_url(u, &o, &why), 0) << why;
  EXPECT_EQ(o.addr, "127.0.0.1");
  EXPECT_EQ(o.port, 42049);
  EXPECT_EQ(o.export_path, "/export");
  EXPECT_EQ(o.nconnect, 8);
  EXPECT_EQ(o.slots, 180u);
}

TEST(Nfs41Options, Version3UrlIsRefused) {
  nfs::NfsUrl u;
  std::string why;
  ASSERT_EQ(nfs::parse_nfs_url("nfs://127.0.0.1/export", &u, &why), 0) << why;
  nfs41::Options o;
  EXPECT_EQ(nfs41::options_from_url(u, &o, &why), -EINVAL);
  EXPECT_NE(why.find("vers=4.1"), std::string::npos) << why;
}

TEST(Nfs41Options, BadNconnectIsNamed) {
  nfs41::Options o;
  o.nconnect = 17;
  std::unique_ptr<nfs41::Engine> e;
  std::string why;
  EXPECT_EQ(nfs41::Engine::open(o, &e, &why), -EINVAL);
  EXPECT_NE(why.find("nconnect"), std::string::npos) << why;
  EXPECT_FALSE(e);
}

TEST(Nfs41Options, UnreachableServerIsNamed) {
  nfs41::Options o;
  o.addr = "127.0.0.1";
  o.port = 1;
  std::unique_ptr<nfs41::Engine> e;
  std::string why;
  EXPECT_EQ(nfs41::Engine::open(o, &e, &why), -ECONNREFUSED);
  EXPECT_NE(why.find("127.0.0.1:1"), std::string::npos) << why;
  o.addr = "server.example";
  EXPECT_EQ(nfs41::Engine::open(o, &e, &why), -EINVAL);
  EXPECT_NE(why.find("IPv4"), std::string::npos) << why;
}

TEST(Nfs41Options, NamesAreResolved) {
  nfs::NfsUrl u;
  std::string why;
  ASSERT_EQ(nfs::parse_nfs_url("nfs://localhost/export?vers=4.1", &u, &why), 0) << why;
  nfs41::Options o;
  ASSERT_EQ(nfs41::options_from_url(u, &o, &why), 0) << why;
  EXPECT_EQ(o.addr, "127.0.0.1");
  EXPECT_EQ(o.port, 2049);
}
