// Byte-range locks (LOCK, LOCKU, LOCKT) and stateid recovery (TEST_STATEID,
// FREE_STATEID).
#pragma once

#include <cstdint>
#include <vector>

#include "nfsshim/nfs4/compound.h"
#include "nfsshim/nfs4/types.h"

namespace nfsshim::nfs4 {

struct LockArgs {
  uint32_t locktype = 0;  // READ_LT, WRITE_LT, READW_LT, WRITEW_LT
  bool reclaim = false;
  uint64_t offset = 0;
  uint64_t length = 0;    // UINT64_MAX: to the end of the file
  bool new_lock_owner = true;
  // new_lock_owner: open_to_lock_owner4
  Stateid4 open_stateid;
  StateOwner4 lock_owner;
  // !new_lock_owner: exist_lock_owner4
  Stateid4 lock_stateid;
};
struct LockDenied {  // LOCK4denied
  uint64_t offset = 0;
  uint64_t length = 0;
  uint32_t locktype = 0;
  StateOwner4 owner;
};
struct LockRes {
  uint32_t status = 0;
  Stateid4 stateid;   // NFS4_OK
  LockDenied denied;  // NFS4ERR_DENIED
};
int encode_lock(Compound& c, const LockArgs& a);
int decode_lock(ReplyReader& r, LockRes* out);

int encode_locku(Compound& c, uint32_t locktype, const Stateid4& lock_stateid, uint64_t offset,
                 uint64_t length);
struct LockuRes {
  uint32_t status = 0;
  Stateid4 stateid;
};
int decode_locku(ReplyReader& r, LockuRes* out);

int encode_lockt(Compound& c, uint32_t locktype, uint64_t offset, uint64_t length,
                 const StateOwner4& owner);
struct LocktRes {
  uint32_t status = 0;  // NFS4_OK: no conflict
  LockDenied denied;    // NFS4ERR_DENIED
};
int decode_lockt(ReplyReader& r, LocktRes* out);

int encode_test_stateid(Compound& c, const std::vector<Stateid4>& ids);  // 1..64 ids
struct TestStateidRes {
  uint32_t status = 0;
  std::vector<uint32_t> codes;  // one nfsstat4 per stateid sent
};
int decode_test_stateid(ReplyReader& r, size_t sent, TestStateidRes* out);

int encode_free_stateid(Compound& c, const Stateid4& s);

}  // namespace nfsshim::nfs4
