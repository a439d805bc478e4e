// Attribute operations: GETATTR, SETATTR, ACCESS.
#pragma once

#include "nfsshim/nfs4/compound.h"
#include "nfsshim/nfs4/fattr4.h"
#include "nfsshim/nfs4/types.h"

namespace nfsshim::nfs4 {

// -EINVAL for a bitmap with attributes get_fattr4 cannot decode.
int encode_getattr(Compound& c, const Bitmap4& attrs);
struct GetattrRes {
  uint32_t status = 0;
  Fattr4 attrs;
};
// `asked` is the bitmap sent with encode_getattr.
int decode_getattr(ReplyReader& r, const Bitmap4& asked, GetattrRes* out);

// The stateid is the open/lock stateid when the size changes, else the anonymous one.
int encode_setattr(Compound& c, const Stateid4& stateid, const SetAttrs& attrs);
struct SetattrRes {
  uint32_t status = 0;
  Bitmap4 attrsset;  // present for every status
};
// `sent` is the SetAttrs passed to encode_setattr: attrsset must be a subset of it.
int decode_setattr(ReplyReader& r, const SetAttrs& sent, SetattrRes* out);

int encode_access(Compound& c, uint32_t access);  // ACCESS4_* bits
struct AccessRes {
  uint32_t status = 0;
  uint32_t supported = 0;
  uint32_t access = 0;
};
int decode_access(ReplyReader& r, AccessRes* out);

}  // namespace nfsshim::nfs4
