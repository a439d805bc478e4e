// What ganesha_test.sh hands the tests against a real ganesha: NFS41_TEST_ADDR/PORT (and
// NFS41_EXPORT_DIR, NFS41_RESTART, NFS41_STOP), and engine options for that server.
#pragma once

#include <cstdlib>
#include <string>

#include "nfsshim/nfs41/engine.h"

namespace nfs41test {

inline std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// The test server's export with IO and NCONNECT; hard, 20 s per call.
inline nfsshim::nfs41::Options ganesha_options(nfsshim::nfs::IoBackend io, int nconnect) {
  nfsshim::nfs41::Options o;
  o.addr = env("NFS41_TEST_ADDR");
  o.port = std::stoi(env("NFS41_TEST_PORT"));
  o.export_path = "/export";
  o.nconnect = nconnect;
  o.io = io;
  o.timeout_ms = 20000;
  return o;
}

}  // namespace nfs41test
