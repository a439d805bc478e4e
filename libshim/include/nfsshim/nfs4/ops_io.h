// READ, WRITE and COMMIT.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "nfsshim/nfs4/compound.h"
#include "nfsshim/nfs4/types.h"

namespace nfsshim::nfs4 {

int encode_read(Compound& c, const Stateid4& s, uint64_t offset, uint32_t count);
struct ReadRes {
  uint32_t status = 0;
  bool eof = false;
  const uint8_t* data = nullptr;  // points into the reply buffer (no copy); null if placed
  size_t len = 0;
  bool placed = false;  // the data is not in the reply but where the transport put it
};
// `count` is what was asked: more data than that is refused. If the transport took the
// data out of the reply (ReplyReader::placed()), it must be all of it and only the XDR
// pad is left in the reply.
int decode_read(ReplyReader& r, uint32_t count, ReadRes* out);

// stable: UNSTABLE4, DATA_SYNC4 or FILE_SYNC4. -EINVAL over kMaxIoBytes. With an OWNER
// (which keeps DATA alive) the data is not copied but sent in place (Compound::opaque_tail):
// then WRITE must be the compound's last operation.
int encode_write(Compound& c, const Stateid4& s, uint64_t offset, uint32_t stable,
                 const uint8_t* data, size_t len, std::shared_ptr<const void> owner = nullptr);
struct WriteRes {
  uint32_t status = 0;
  uint32_t count = 0;
  uint32_t committed = 0;
  Verifier4 verifier{};
};
// `len` is what was sent: a count above it is refused.
int decode_write(ReplyReader& r, size_t len, WriteRes* out);

int encode_commit(Compound& c, uint64_t offset, uint32_t count);
struct CommitRes {
  uint32_t status = 0;
  Verifier4 verifier{};  // differs from the WRITE's: the server restarted, write again
};
int decode_commit(ReplyReader& r, CommitRes* out);

}  // namespace nfsshim::nfs4
