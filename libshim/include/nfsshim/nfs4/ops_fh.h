// Filehandle operations: PUTROOTFH, PUTFH, LOOKUP, GETFH, SAVEFH, RESTOREFH.
// Their results other than GETFH's are a status only: decode_status_only().
#pragma once

#include <string>

#include "nfsshim/nfs4/compound.h"
#include "nfsshim/nfs4/types.h"

namespace nfsshim::nfs4 {

int encode_putrootfh(Compound& c);
int encode_putfh(Compound& c, const Fh4& fh);  // -EINVAL if empty or over 128 bytes
int encode_putfh(Compound& c, const void* fh, size_t len);  // the same from where it lies
int encode_lookup(Compound& c, const std::string& name);
int encode_getfh(Compound& c);
int encode_savefh(Compound& c);
int encode_restorefh(Compound& c);

struct GetfhRes {
  uint32_t status = 0;
  Fh4 fh;
};
int decode_getfh(ReplyReader& r, GetfhRes* out);

}  // namespace nfsshim::nfs4
