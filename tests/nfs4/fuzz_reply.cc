// libFuzzer target for the NFSv4.1 reply decoders: every input is run through every
// COMPOUND decode program of reply_programs.cc (the recorded ganesha replies in
// replies/ are the seeds: each matches one program), the record-marking framer, the
// RPC reply header decoder and the fattr4 decoder. Built only with clang and
// -DNFSSHIM_FUZZ=ON (see tests/fuzz/). Sanitizers catch memory errors; the checks
// below catch decoders that "succeed" on bytes they did not have.
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "nfsshim/nfs4/fattr4.h"
#include "nfsshim/rpc/record_marking.h"
#include "nfsshim/rpc/rpc_message.h"
#include "reply_programs.h"

#define NFS4_FUZZ_CHECK(cond)                                                   \
  do {                                                                          \
    if (!(cond)) {                                                              \
      std::fprintf(stderr, "NFS4_FUZZ_CHECK failed at %s:%d: %s\n", __FILE__, \
                   __LINE__, #cond);                                            \
      std::abort();                                                             \
    }                                                                           \
  } while (0)

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  for (size_t i = 0; i < nfs4test::kProgramCount; ++i) {
    nfs4test::Decoded d;
    if (nfs4test::decode_reply(data, size, nfs4test::kPrograms[i], &d) == 0 && d.read.data) {
      // READ data is a view into the input: it must lie inside it.
      NFS4_FUZZ_CHECK(d.read.data >= data && d.read.len <= size &&
                      d.read.data + d.read.len <= data + size);
    }
  }

  nfsshim::rpc::RecordFramer framer(4096);
  size_t total = 0;
  if (framer.feed(data, size) == 0) {
    nfsshim::rpc::Record rec;
    while (framer.next(&rec)) {
      NFS4_FUZZ_CHECK(rec.size() <= 4096);
      total += rec.size();
    }
    NFS4_FUZZ_CHECK(total <= size);  // records are never longer than the stream
  }

  nfsshim::rpc::XdrDecoder hd(data, size);
  nfsshim::rpc::ReplyHeader h;
  if (nfsshim::rpc::decode_reply_header(hd, &h) == 0) NFS4_FUZZ_CHECK(hd.pos() <= size);

  nfsshim::rpc::XdrDecoder fd(data, size);
  nfsshim::nfs4::Fattr4 a;
  nfsshim::nfs4::Bitmap4 all = nfsshim::nfs4::getattr_bitmap();
  all.set(nfsshim::nfs4::FATTR4_SUPPORTED_ATTRS).set(nfsshim::nfs4::FATTR4_LEASE_TIME);
  if (nfsshim::nfs4::get_fattr4(fd, all, &a) == 0) {
    NFS4_FUZZ_CHECK(a.present.subset_of(all));
    NFS4_FUZZ_CHECK(a.mode <= 07777);
  }
  return 0;
}
