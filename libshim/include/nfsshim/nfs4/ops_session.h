// Session and client-id operations: EXCHANGE_ID, CREATE_SESSION, SEQUENCE,
// RECLAIM_COMPLETE, DESTROY_SESSION, DESTROY_CLIENTID, BIND_CONN_TO_SESSION.
// encode_*() append one operation (returning -errno for arguments out of limits);
// decode_*() read its result: <0 when malformed, else 0 with .status set and the
// rest filled only when status == NFS4_OK.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nfsshim/nfs4/compound.h"
#include "nfsshim/nfs4/fattr4.h"
#include "nfsshim/nfs4/types.h"
#include "nfsshim/rpc/rpc_message.h"

namespace nfsshim::nfs4 {

struct ImplId4 {  // nfs_impl_id4
  std::string domain;
  std::string name;
  Nfstime4 date;
};

struct ExchangeIdArgs {
  Verifier4 verifier{};               // changes on every client restart
  std::vector<uint8_t> owner_id;      // stable across restarts, <= 1024 bytes
  uint32_t flags = 0;
  bool send_impl_id = false;
  ImplId4 impl_id;
};
struct ExchangeIdRes {
  uint32_t status = 0;
  uint64_t clientid = 0;
  uint32_t sequenceid = 0;
  uint32_t flags = 0;
  uint32_t state_protect = 0;  // SP4_NONE or SP4_MACH_CRED (SP4_SSV is refused)
  uint64_t server_minor_id = 0;
  std::vector<uint8_t> server_major_id;
  std::vector<uint8_t> server_scope;
  bool has_impl_id = false;
  ImplId4 server_impl_id;
};
int encode_exchange_id(Compound& c, const ExchangeIdArgs& a);
int decode_exchange_id(ReplyReader& r, ExchangeIdRes* out);

struct ChannelAttrs4 {
  uint32_t headerpadsize = 0;
  uint32_t maxrequestsize = 0;
  uint32_t maxresponsesize = 0;
  uint32_t maxresponsesize_cached = 0;
  uint32_t maxoperations = 0;
  uint32_t maxrequests = 0;  // slots
  bool has_rdma_ird = false;
  uint32_t rdma_ird = 0;
};
struct CreateSessionArgs {
  uint64_t clientid = 0;
  uint32_t sequence = 0;  // EXCHANGE_ID's eir_sequenceid
  uint32_t flags = 0;
  ChannelAttrs4 fore;
  ChannelAttrs4 back;
  uint32_t cb_program = 0;
  rpc::Credential cb_sec;  // AUTH_NONE or AUTH_SYS
};
struct CreateSessionRes {
  uint32_t status = 0;
  SessionId sessionid{};
  uint32_t sequence = 0;
  uint32_t flags = 0;
  ChannelAttrs4 fore;
  ChannelAttrs4 back;
};
// Fore-channel attributes asking for `slots` slots and sizes fit for 1 MiB I/O.
ChannelAttrs4 default_fore_channel(uint32_t slots);
ChannelAttrs4 default_back_channel();
int encode_create_session(Compound& c, const CreateSessionArgs& a);
int decode_create_session(ReplyReader& r, CreateSessionRes* out);

struct SequenceArgs {
  SessionId sessionid{};
  uint32_t sequenceid = 0;
  uint32_t slotid = 0;
  uint32_t highest_slotid = 0;
  bool cachethis = false;
};
struct SequenceRes {
  uint32_t status = 0;
  SessionId sessionid{};
  uint32_t sequenceid = 0;
  uint32_t slotid = 0;
  uint32_t highest_slotid = 0;
  uint32_t target_highest_slotid = 0;
  uint32_t status_flags = 0;
};
int encode_sequence(Compound& c, const SequenceArgs& a);
int decode_sequence(ReplyReader& r, SequenceRes* out);

int encode_reclaim_complete(Compound& c, bool one_fs);
int encode_destroy_session(Compound& c, const SessionId& s);
int encode_destroy_clientid(Compound& c, uint64_t clientid);

struct BindConnRes {
  uint32_t status = 0;
  SessionId sessionid{};
  uint32_t dir = 0;  // CDFS4_*
  bool use_rdma = false;
};
int encode_bind_conn_to_session(Compound& c, const SessionId& s, uint32_t dir_from_client);
int decode_bind_conn_to_session(ReplyReader& r, BindConnRes* out);

}  // namespace nfsshim::nfs4
