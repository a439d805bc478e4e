// Decode "programs" for whole COMPOUND replies: the operation sequence of each
// recorded ganesha reply in replies/ (same names), shared by the recorded-reply tests
// and the fuzz target.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "nfsshim/nfs4/ops_attr.h"
#include "nfsshim/nfs4/ops_dir.h"
#include "nfsshim/nfs4/ops_fh.h"
#include "nfsshim/nfs4/ops_io.h"
#include "nfsshim/nfs4/ops_lock.h"
#include "nfsshim/nfs4/ops_open.h"
#include "nfsshim/nfs4/ops_session.h"

namespace nfs4test {

struct Decoded {
  nfsshim::nfs4::SequenceRes seq;
  nfsshim::nfs4::ExchangeIdRes exchange;
  nfsshim::nfs4::CreateSessionRes create_session;
  nfsshim::nfs4::BindConnRes bind;
  nfsshim::nfs4::GetfhRes fh;
  nfsshim::nfs4::GetattrRes attrs;
  nfsshim::nfs4::GetattrRes fs_attrs;
  nfsshim::nfs4::OpenRes open;
  nfsshim::nfs4::WriteRes write;
  nfsshim::nfs4::CommitRes commit;
  nfsshim::nfs4::ReadRes read;
  nfsshim::nfs4::RenameRes rename;
  nfsshim::nfs4::RemoveRes remove;
  nfsshim::nfs4::CreateRes create_dir, create_link;
  nfsshim::nfs4::ReadlinkRes readlink;
  nfsshim::nfs4::LinkRes link;
  nfsshim::nfs4::SetattrRes setattr;
  nfsshim::nfs4::AccessRes access;
  nfsshim::nfs4::ReaddirRes readdir;
  nfsshim::nfs4::LockRes lock;
  nfsshim::nfs4::LocktRes lockt;
  nfsshim::nfs4::TestStateidRes test_stateid;
  uint32_t status = 0;  // COMPOUND status
};

struct Program {
  const char* name;
  int (*run)(nfsshim::nfs4::ReplyReader& r, Decoded* out);
};

extern const Program kPrograms[];
extern const size_t kProgramCount;
const Program* find_program(const std::string& name);

// The whole reply: RPC header (xid taken from the bytes), COMPOUND4res, the program,
// nothing left over. 0 or a negative errno.
int decode_reply(const uint8_t* data, size_t n, const Program& p, Decoded* out);

}  // namespace nfs4test
