// Small NFSv4.1 value types shared by the operations, and their XDR.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "nfsshim/rpc/xdr_decoder.h"
#include "nfsshim/rpc/xdr_encoder.h"

namespace nfsshim::nfs4 {

using SessionId = std::array<uint8_t, 16>;  // sessionid4
using Verifier4 = std::array<uint8_t, 8>;   // verifier4
using Fh4 = std::vector<uint8_t>;           // nfs_fh4, at most kFhSize bytes

struct Stateid4 {
  uint32_t seqid = 0;
  std::array<uint8_t, 12> other{};
  bool operator==(const Stateid4& o) const { return seqid == o.seqid && other == o.other; }
};

struct ChangeInfo4 {
  bool atomic = false;
  uint64_t before = 0;
  uint64_t after = 0;
};

struct Nfstime4 {
  int64_t seconds = 0;
  uint32_t nseconds = 0;  // < 1e9
};

// state_owner4 (open_owner4, lock_owner4)
struct StateOwner4 {
  uint64_t clientid = 0;
  std::vector<uint8_t> owner;  // at most kOpaqueLimit bytes
};

void put_stateid(rpc::XdrEncoder& enc, const Stateid4& s);
int get_stateid(rpc::XdrDecoder& dec, Stateid4* s);
int get_change_info(rpc::XdrDecoder& dec, ChangeInfo4* c);
int get_nfstime(rpc::XdrDecoder& dec, Nfstime4* t);
void put_nfstime(rpc::XdrEncoder& enc, const Nfstime4& t);
// -EINVAL if the owner is longer than NFS4_OPAQUE_LIMIT.
int put_state_owner(rpc::XdrEncoder& enc, const StateOwner4& o);
int get_state_owner(rpc::XdrDecoder& dec, StateOwner4* o);

// A component4 we send: 1..255 bytes, no '/', no NUL, not "." or "..". -EINVAL or
// -ENAMETOOLONG otherwise.
int check_component(const std::string& name);

}  // namespace nfsshim::nfs4
