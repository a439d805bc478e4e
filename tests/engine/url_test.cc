#include "nfsshim/nfs/url.h"

#include <gtest/gtest.h>

namespace nfsshim::nfs {
namespace {

NfsUrl ok(const std::string& s) {
  NfsUrl u;
  std::string why;
  EXPECT_EQ(parse_nfs_url(s, &u, &why), 0) << s << ": " << why;
  return u;
}

std::string err(const std::string& s) {
  NfsUrl u;
  std::string why;
  EXPECT_EQ(parse_nfs_url(s, &u, &why), -EINVAL) << s;
  return why;
}

TEST(NfsUrl, Defaults) {
  NfsUrl u = ok("nfs://server/export");
  EXPECT_EQ(u.host, "server");
  EXPECT_EQ(u.export_path, "/export");
  EXPECT_EQ(u.vers_major, 3);
  EXPECT_EQ(u.nconnect, 4);
  EXPECT_EQ(u.nfsport, 0);
  EXPECT_EQ(u.mountport, 0);
  EXPECT_EQ(u.uid, -1);
  EXPECT_TRUE(u.hard);
  EXPECT_EQ(u.io, IoBackend::kAuto);
  EXPECT_EQ(u.max_unstable_mb, 256);
  EXPECT_EQ(u.commit_secs, 30);
}

TEST(NfsUrl, AllKeys) {
  NfsUrl u = ok("nfs://10.0.0.1/a/b%20c/?vers=3&nconnect=8&nfsport=22049&mountport=22048"
                "&uid=1000&gid=100&timeo=50&retrans=5&soft&io=epoll&rsize=65536&wsize=131072"
                "&slots=16&max_inflight_mb=32&max_unstable_mb=16&commit_secs=2");
  EXPECT_EQ(u.host, "10.0.0.1");
  EXPECT_EQ(u.export_path, "/a/b c");
  EXPECT_EQ(u.nconnect, 8);
  EXPECT_EQ(u.nfsport, 22049);
  EXPECT_EQ(u.mountport, 22048);
  EXPECT_EQ(u.uid, 1000);
  EXPECT_EQ(u.gid, 100);
  EXPECT_EQ(u.timeo_ds, 50);
  EXPECT_EQ(u.retrans, 5);
  EXPECT_FALSE(u.hard);
  EXPECT_EQ(u.io, IoBackend::kEpoll);
  EXPECT_EQ(u.rsize, 65536u);
  EXPECT_EQ(u.wsize, 131072u);
  EXPECT_EQ(u.slots, 16);
  EXPECT_EQ(u.max_inflight_mb, 32);
  EXPECT_EQ(u.max_unstable_mb, 16);
  EXPECT_EQ(u.commit_secs, 2);
}

TEST(NfsUrl, VersionSpellingsAnd41) {
  EXPECT_EQ(ok("nfs://h/e?version=3").vers_major, 3);
  NfsUrl u = ok("nfs://h/e?vers=4.1");
  EXPECT_EQ(u.vers_major, 4);
  EXPECT_EQ(u.vers_minor, 1);
  EXPECT_NE(err("nfs://h/e?vers=4").find("'vers'"), std::string::npos);
  EXPECT_NE(err("nfs://h/e?vers=3&version=3").find("twice"), std::string::npos);
}

TEST(NfsUrl, IoBackends) {
  EXPECT_EQ(ok("nfs://h/e?io=uring").io, IoBackend::kUring);
  EXPECT_EQ(ok("nfs://h/e?io=auto").io, IoBackend::kAuto);
  EXPECT_NE(err("nfs://h/e?io=kqueue").find("'io'"), std::string::npos);
}

TEST(NfsUrl, PortInHostAndIpv6) {
  EXPECT_EQ(ok("nfs://h:2050/e").nfsport, 2050);
  EXPECT_EQ(ok("nfs://h:2050/e?nfsport=2050").nfsport, 2050);
  EXPECT_NE(err("nfs://h:2050/e?nfsport=2051").find("contradicts"), std::string::npos);
  NfsUrl u = ok("nfs://[::1]:2049/e");
  EXPECT_EQ(u.host, "::1");
  EXPECT_EQ(u.nfsport, 2049);
  EXPECT_NE(err("nfs://h:/e").find("empty port"), std::string::npos);
  EXPECT_NE(err("nfs://h:99999/e").find("bad port"), std::string::npos);
}

TEST(NfsUrl, UnknownKeyIsNamed) {
  std::string why = err("nfs://h/e?nconect=4");
  EXPECT_NE(why.find("unknown key 'nconect'"), std::string::npos) << why;
}

TEST(NfsUrl, NconnectRange) {
  EXPECT_EQ(ok("nfs://h/e?nconnect=1").nconnect, 1);
  EXPECT_EQ(ok("nfs://h/e?nconnect=16").nconnect, 16);
  EXPECT_NE(err("nfs://h/e?nconnect=0").find("1..16"), std::string::npos);
  EXPECT_NE(err("nfs://h/e?nconnect=99").find("1..16"), std::string::npos);
  EXPECT_NE(err("nfs://h/e?nconnect=-1").find("'nconnect'"), std::string::npos);
  EXPECT_NE(err("nfs://h/e?nconnect=4x").find("'nconnect'"), std::string::npos);
}

TEST(NfsUrl, BadShapes) {
  EXPECT_NE(err("/some/path").find("not an nfs:// URL"), std::string::npos);
  EXPECT_NE(err("nfs://host").find("no export"), std::string::npos);
  EXPECT_NE(err("nfs:///e").find("no host"), std::string::npos);
  EXPECT_NE(err("nfs://h/e?nconnect").find("needs a value"), std::string::npos);
  EXPECT_NE(err("nfs://h/e?hard=1").find("takes no value"), std::string::npos);
  EXPECT_NE(err("nfs://h/e?hard&soft").find("twice"), std::string::npos);
  EXPECT_NE(err("nfs://h/e%zz").find("percent"), std::string::npos);
  EXPECT_NE(err("nfs://h/e?=3").find("empty key"), std::string::npos);
  EXPECT_NE(err("nfs://u@h/e").find("user info"), std::string::npos);
  EXPECT_NE(err("nfs://h/e?rsize=100").find("'rsize'"), std::string::npos);
  EXPECT_NE(err("nfs://h/e?max_unstable_mb=0").find("1..65536"), std::string::npos);
  EXPECT_NE(err("nfs://h/e?commit_secs=0").find("1..3600"), std::string::npos);
}

TEST(NfsUrl, CanonicalStringRoundTrips) {
  NfsUrl a = ok("nfs://h/e?nconnect=8&nfsport=1&mountport=2&soft&io=uring&uid=5&gid=6");
  NfsUrl b = ok(to_string(a));
  EXPECT_EQ(to_string(a), to_string(b));
  EXPECT_EQ(b.nconnect, 8);
  EXPECT_FALSE(b.hard);
}

}  // namespace
}  // namespace nfsshim::nfs
