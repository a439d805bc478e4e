// Fuzz target: NFSv4.1 reply decoding (libshim rpc/ and nfs4/: the RPC reply header,
// COMPOUND4res and every operation's result decoder), i.e. what a server, or anybody
// on the path to it, sends us. Input: FuzzedDataProvider takes from the end the
// operations to decode (up to 6) and the attribute bitmap asked for; the front is the
// RPC reply as it comes off the record marking. The xid expected is the reply's own.
// Invariants: no read outside the reply (exact-size buffer under ASan), no crash or UB;
// every decoder returns 0 or a negative errno; a malformed reply (-EBADMSG) names what
// was malformed (XdrDecoder::error()).
#include <fuzzer/FuzzedDataProvider.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

#include "fuzz_check.h"
#include "nfsshim/nfs4/compound.h"
#include "nfsshim/nfs4/constants.h"
#include "nfsshim/nfs4/fattr4.h"
#include "nfsshim/nfs4/ops_attr.h"
#include "nfsshim/nfs4/ops_dir.h"
#include "nfsshim/nfs4/ops_fh.h"
#include "nfsshim/nfs4/ops_io.h"
#include "nfsshim/nfs4/ops_lock.h"
#include "nfsshim/nfs4/ops_open.h"
#include "nfsshim/nfs4/ops_session.h"

using namespace nfsshim::nfs4;
namespace rpc = nfsshim::rpc;

namespace {

struct Sent {  // what "we asked", which some decoders check the reply against
  Bitmap4 asked;
  SetAttrs setattrs;
  CreateArgs create;
  ReaddirArgs readdir;
  uint32_t read_count = 0;
  size_t write_len = 0;
  size_t test_stateids = 0;
};

using Decoder = std::function<int(ReplyReader&, const Sent&)>;

const std::vector<Decoder>& decoders() {
  static const std::vector<Decoder> d = {
      [](ReplyReader& r, const Sent&) { ExchangeIdRes o; return decode_exchange_id(r, &o); },
      [](ReplyReader& r, const Sent&) { CreateSessionRes o; return decode_create_session(r, &o); },
      [](ReplyReader& r, const Sent&) { SequenceRes o; return decode_sequence(r, &o); },
      [](ReplyReader& r, const Sent&) { BindConnRes o; return decode_bind_conn_to_session(r, &o); },
      [](ReplyReader& r, const Sent&) { GetfhRes o; return decode_getfh(r, &o); },
      [](ReplyReader& r, const Sent& s) { GetattrRes o; return decode_getattr(r, s.asked, &o); },
      [](ReplyReader& r, const Sent& s) { SetattrRes o; return decode_setattr(r, s.setattrs, &o); },
      [](ReplyReader& r, const Sent&) { AccessRes o; return decode_access(r, &o); },
      [](ReplyReader& r, const Sent&) { RemoveRes o; return decode_remove(r, &o); },
      [](ReplyReader& r, const Sent&) { RenameRes o; return decode_rename(r, &o); },
      [](ReplyReader& r, const Sent&) { LinkRes o; return decode_link(r, &o); },
      [](ReplyReader& r, const Sent& s) { CreateRes o; return decode_create(r, s.create, &o); },
      [](ReplyReader& r, const Sent&) { ReadlinkRes o; return decode_readlink(r, &o); },
      [](ReplyReader& r, const Sent& s) { ReaddirRes o; return decode_readdir(r, s.readdir, &o); },
      [](ReplyReader& r, const Sent& s) { ReadRes o; return decode_read(r, s.read_count, &o); },
      [](ReplyReader& r, const Sent& s) { WriteRes o; return decode_write(r, s.write_len, &o); },
      [](ReplyReader& r, const Sent&) { CommitRes o; return decode_commit(r, &o); },
      [](ReplyReader& r, const Sent&) { OpenRes o; return decode_open(r, &o); },
      [](ReplyReader& r, const Sent&) { CloseRes o; return decode_close(r, &o); },
      [](ReplyReader& r, const Sent&) { LockRes o; return decode_lock(r, &o); },
      [](ReplyReader& r, const Sent&) { LockuRes o; return decode_locku(r, &o); },
      [](ReplyReader& r, const Sent&) { LocktRes o; return decode_lockt(r, &o); },
      [](ReplyReader& r, const Sent& s) { TestStateidRes o; return decode_test_stateid(r, s.test_stateids, &o); },
      [](ReplyReader& r, const Sent&) { uint32_t st = 0; return decode_status_only(r, OP_PUTFH, &st); },
  };
  return d;
}

void check_rc(int rc, const rpc::XdrDecoder& d, const char* step) {
  static const bool verbose = std::getenv("FUZZ_VERBOSE") != nullptr;  // to check seeds
  if (verbose) std::fprintf(stderr, "%s: %d %s\n", step, rc, d.error());
  FUZZ_CHECK(rc <= 0, "%s returned %d", step, rc);
  if (rc == -EBADMSG)
    FUZZ_CHECK(!d.ok() && std::strlen(d.error()) > 0, "%s: malformed reply without a reason",
               step);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  std::vector<size_t> ops(in.ConsumeIntegralInRange<size_t>(0, 6));
  for (auto& op : ops) op = in.ConsumeIntegralInRange<size_t>(0, decoders().size() - 1);
  Sent sent;
  Bitmap4 random;
  for (auto& w : random.w) w = in.ConsumeIntegral<uint32_t>();
  sent.asked = bitmap_decodable(random) && !random.empty() ? random : getattr_bitmap();
  sent.readdir.attrs = sent.asked;
  sent.readdir.maxcount = in.ConsumeIntegral<uint32_t>();
  sent.read_count = in.ConsumeIntegral<uint32_t>();
  sent.write_len = in.ConsumeIntegralInRange<size_t>(0, 1 << 20);
  sent.test_stateids = in.ConsumeIntegralInRange<size_t>(0, 64);
  sent.setattrs.set_size = in.ConsumeBool();
  sent.setattrs.set_mode = in.ConsumeBool();
  sent.create.type = in.ConsumeIntegralInRange<uint32_t>(1, 9);
  std::vector<uint8_t> reply = in.ConsumeRemainingBytes<uint8_t>();  // exact size

  uint32_t xid = 0;
  if (reply.size() >= 4)
    xid = uint32_t{reply[0]} << 24 | uint32_t{reply[1]} << 16 | uint32_t{reply[2]} << 8 | reply[3];
  rpc::XdrDecoder d(reply.data(), reply.size());
  rpc::ReplyHeader h;
  int rc = decode_compound_rpc(d, xid, &h);
  check_rc(rc, d, "decode_compound_rpc");
  if (rc < 0) return 0;
  ReplyReader r(d);
  rc = r.begin();
  check_rc(rc, d, "ReplyReader::begin");
  if (rc < 0) return 0;
  for (size_t op : ops) {
    rc = decoders()[op](r, sent);
    check_rc(rc, d, "an operation decoder");
    if (rc < 0) return 0;
  }
  check_rc(r.finish(), d, "ReplyReader::finish");
  return 0;
}
