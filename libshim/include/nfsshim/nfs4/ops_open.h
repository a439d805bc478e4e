// OPEN (CLAIM_NULL: create UNCHECKED/GUARDED/EXCLUSIVE4_1 or no create; CLAIM_FH: the current
// fh; CLAIM_PREVIOUS: reclaim of the current fh's open after a server restart, RFC 8881
// 18.16.3 / 8.4.2) and CLOSE.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "nfsshim/nfs4/compound.h"
#include "nfsshim/nfs4/fattr4.h"
#include "nfsshim/nfs4/types.h"

namespace nfsshim::nfs4 {

// open_claim_type4 (RFC 8881 18.16.1); CLAIM_NULL and CLAIM_FH are in constants.h.
constexpr uint32_t CLAIM_PREVIOUS = 1;

struct OpenArgs {
  uint32_t seqid = 0;         // ignored by v4.1 servers; sent as 0
  uint32_t share_access = 0;  // OPEN4_SHARE_ACCESS_* (plus WANT_* flags)
  uint32_t share_deny = 0;    // OPEN4_SHARE_DENY_*
  StateOwner4 owner;
  bool create = false;
  uint32_t createmode = 0;    // UNCHECKED4, GUARDED4 or EXCLUSIVE4_1 when create
  SetAttrs createattrs;
  // EXCLUSIVE4_1: the create verifier. The server keeps it with the file: the same OPEN
  // sent again (a retry, even in a new session after a restart) opens the file it made,
  // another verifier gets NFS4ERR_EXIST (RFC 8881 18.16.3).
  std::array<uint8_t, 8> createverf{};
  uint32_t claim = 0;         // CLAIM_NULL, CLAIM_FH or CLAIM_PREVIOUS (the last two: no create)
  std::string name;           // CLAIM_NULL: the file in the current (directory) fh
  // CLAIM_PREVIOUS: the delegation held before the restart (OPEN_DELEGATE_NONE: none).
  uint32_t delegate_type = 0;
};

struct Nfsace4 {
  uint32_t type = 0, flag = 0, access_mask = 0;
  std::string who;
};

struct OpenDelegation {
  uint32_t type = 0;  // OPEN_DELEGATE_NONE / READ / WRITE / NONE_EXT
  Stateid4 stateid;   // READ, WRITE
  bool recall = false;
  uint32_t limitby = 0;  // WRITE: NFS_LIMIT_SIZE or NFS_LIMIT_BLOCKS
  uint64_t filesize = 0;
  uint32_t num_blocks = 0, bytes_per_block = 0;
  Nfsace4 permissions;
  uint32_t why_none = 0;          // NONE_EXT
  bool server_will_act = false;   // NONE_EXT with WND4_CONTENTION / WND4_RESOURCE
};

struct OpenRes {
  uint32_t status = 0;
  Stateid4 stateid;
  ChangeInfo4 cinfo;
  uint32_t rflags = 0;  // OPEN4_RESULT_*: PRESERVE_UNLINKED (0x8) matters to us
  Bitmap4 attrset;
  OpenDelegation delegation;
};

// The server keeps this file's data after an unlink until our CLOSE (RFC 8881
// 18.16.3): unlinking it while open may then be a plain REMOVE, no graveyard.
bool preserves_unlinked(const OpenRes& r);

int encode_open(Compound& c, const OpenArgs& a);
int decode_open(ReplyReader& r, OpenRes* out);

int encode_close(Compound& c, const Stateid4& open_stateid);
struct CloseRes {
  uint32_t status = 0;
  Stateid4 stateid;
};
int decode_close(ReplyReader& r, CloseRes* out);

}  // namespace nfsshim::nfs4
