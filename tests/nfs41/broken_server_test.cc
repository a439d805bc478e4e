// The NFSv4.1 engine against a broken server (fake_server.h) whose READDIR never says eof
// and repeats its last cookie: the listing ends in EIO after the first reply that makes no
// progress, instead of asking again and again and growing its entry list (the fake gives
// eof after 1000 replies, so that a client without the check ends too, with 1000 entries).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "fake_server.h"
#include "nfsshim/nfs41/engine.h"

using nfsshim::nfs::IoBackend;
using namespace nfsshim::nfs41;

namespace {

TEST(Nfs41BrokenServer, ReaddirThatNeverAdvancesEndsInEio) {
  nfs41test::FakeNfs41Server srv;
  Options o;
  o.addr = "127.0.0.1";
  o.port = srv.port();
  o.export_path = "/export";
  o.io = IoBackend::kEpoll;
  o.timeout_ms = 5000;
  std::unique_ptr<Engine> e;
  std::string why;
  ASSERT_EQ(Engine::open(o, &e, &why), 0) << why;
  std::vector<nfsshim::nfs::DirEntry> ents;
  EXPECT_EQ(e->readdir(e->default_cred(), e->root(), &ents), -EIO);
  EXPECT_EQ(srv.readdirs(), 2) << "asked again after a reply that made no progress";
  EXPECT_EQ(e->shutdown(), 0);
}

}  // namespace
