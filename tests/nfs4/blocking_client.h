// Test-only transport: one blocking TCP connection that sends a COMPOUND with record
// marking and waits for the reply with the same xid. Also a tiny session driver (slot
// table + SEQUENCE) so tests can run compounds the way the engine will. Not the engine.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "nfsshim/nfs4/compound.h"
#include "nfsshim/nfs4/ops_session.h"
#include "nfsshim/nfs4/slot_table.h"
#include "nfsshim/rpc/record_marking.h"

namespace nfs4test {

class BlockingConn {
 public:
  BlockingConn() = default;
  ~BlockingConn();
  BlockingConn(const BlockingConn&) = delete;
  BlockingConn& operator=(const BlockingConn&) = delete;

  int connect(const std::string& addr, int port);  // 0 or -errno
  // Sends the message and returns the reply record for its xid (0 or -errno).
  int call(uint32_t xid, const std::vector<uint8_t>& msg, std::vector<uint8_t>* reply);
  void close();

 private:
  int fd_ = -1;
  nfsshim::rpc::RecordFramer framer_{4u << 20};
};

// Writes `bytes` to $NFS4_RECORD_DIR/<name>.bin when that variable is set.
void record_reply(const std::string& name, const std::vector<uint8_t>& bytes);

struct Session {
  nfsshim::rpc::Credential cred;
  uint64_t clientid = 0;
  nfsshim::nfs4::SessionId sessionid{};
  nfsshim::nfs4::SlotTable slots{1};
  uint32_t xid = 0x4e460000;

  // SEQUENCE + whatever `build` appends, on `conn`; decodes SEQUENCE, updates the
  // slot table, then lets `decode` read the other results. Returns <0 on transport
  // or decode errors, else the COMPOUND status (0 = NFS4_OK). If record is set, the
  // reply bytes are saved under that name.
  using Build = std::function<void(nfsshim::nfs4::Compound&)>;
  using Decode = std::function<int(nfsshim::nfs4::ReplyReader&)>;
  int run(BlockingConn& conn, const Build& build, const Decode& decode,
          const char* record = nullptr);
  // A compound without SEQUENCE (EXCHANGE_ID, CREATE_SESSION, BIND_CONN_TO_SESSION,
  // DESTROY_*): same contract.
  int run_bare(BlockingConn& conn, const Build& build, const Decode& decode,
               const char* record = nullptr);
  std::string last_error;
};

}  // namespace nfs4test
