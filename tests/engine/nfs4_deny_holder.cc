// nfs4_deny_holder ADDR PORT NAME: another NFS client that opens /export/NAME over NFSv4.1
// with OPEN4_SHARE_DENY_WRITE and holds it until its stdin closes. ganesha answers an NFSv3
// WRITE to that file with NFS3ERR_JUKEBOX meanwhile (a share conflict), which is how the
// engine test makes a server say "busy". Prints "held" once the OPEN is granted, "closed"
// after the CLOSE. Exit status 0, or 1 with the failing step on stderr.
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <string>

#include "../nfs4/blocking_client.h"
#include "nfsshim/nfs4/constants.h"
#include "nfsshim/nfs4/ops_fh.h"
#include "nfsshim/nfs4/ops_open.h"
#include "nfsshim/nfs4/ops_session.h"

using namespace nfsshim::nfs4;

namespace {

int fail(const char* step, int st, const nfs4test::Session& s) {
  std::fprintf(stderr, "nfs4_deny_holder: %s failed: %d %s\n", step, st, s.last_error.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s ADDR PORT NAME\n", argv[0]);
    return 2;
  }
  nfs4test::BlockingConn conn;
  if (conn.connect(argv[1], std::stoi(argv[2])) != 0) {
    std::fprintf(stderr, "nfs4_deny_holder: cannot connect to %s:%s\n", argv[1], argv[2]);
    return 1;
  }
  nfs4test::Session s;
  s.cred.flavor = nfsshim::rpc::kAuthSys;
  s.cred.sys.machinename = "nfs4-deny-holder";
  s.cred.sys.stamp = static_cast<uint32_t>(time(nullptr));
  ExchangeIdRes ex;
  int st = s.run_bare(conn,
      [&](Compound& c) {
        ExchangeIdArgs a;
        std::string id = "nfs4-deny-holder-" + std::to_string(getpid());
        a.owner_id.assign(id.begin(), id.end());
        encode_exchange_id(c, a);
      },
      [&](ReplyReader& r) { return decode_exchange_id(r, &ex); });
  if (st != 0) return fail("EXCHANGE_ID", st, s);
  s.clientid = ex.clientid;
  CreateSessionRes cs;
  st = s.run_bare(conn,
      [&](Compound& c) {
        CreateSessionArgs a;
        a.clientid = ex.clientid;
        a.sequence = ex.sequenceid;
        a.fore = default_fore_channel(4);
        a.back = default_back_channel();
        a.cb_sec = s.cred;
        encode_create_session(c, a);
      },
      [&](ReplyReader& r) { return decode_create_session(r, &cs); });
  if (st != 0) return fail("CREATE_SESSION", st, s);
  s.sessionid = cs.sessionid;
  s.slots.reset(cs.fore.maxrequests);
  uint32_t x;
  st = s.run(conn, [&](Compound& c) { encode_reclaim_complete(c, false); },
             [&](ReplyReader& r) { return r.results_left() ? decode_status_only(r, OP_RECLAIM_COMPLETE, &x) : 0; });
  if (st != 0) return fail("RECLAIM_COMPLETE", st, s);

  OpenRes res;
  GetfhRes gf;
  st = s.run(conn,
      [&](Compound& c) {
        encode_putrootfh(c);
        encode_lookup(c, "export");
        OpenArgs a;
        a.share_access = OPEN4_SHARE_ACCESS_READ | OPEN4_SHARE_ACCESS_WANT_NO_DELEG;
        a.share_deny = OPEN4_SHARE_DENY_WRITE;
        a.owner.clientid = ex.clientid;
        a.owner.owner = {'h'};
        a.name = argv[3];
        encode_open(c, a);
        encode_getfh(c);
      },
      [&](ReplyReader& r) {
        uint32_t y;
        if (decode_status_only(r, OP_PUTROOTFH, &y) < 0 || !r.results_left()) return 0;
        if (decode_status_only(r, OP_LOOKUP, &y) < 0 || !r.results_left()) return 0;
        if (decode_open(r, &res) < 0 || !r.results_left()) return 0;
        return decode_getfh(r, &gf);
      });
  if (st != 0) return fail("OPEN with DENY_WRITE", st, s);
  std::printf("held\n");
  std::fflush(stdout);
  char buf[64];
  while (::read(0, buf, sizeof buf) > 0) {
  }
  CloseRes cr;
  st = s.run(conn,
      [&](Compound& c) {
        encode_putfh(c, gf.fh);
        encode_close(c, res.stateid);
      },
      [&](ReplyReader& r) {
        uint32_t y;
        if (decode_status_only(r, OP_PUTFH, &y) < 0 || !r.results_left()) return 0;
        return decode_close(r, &cr);
      });
  if (st != 0) return fail("CLOSE", st, s);
  std::printf("closed\n");
  return 0;
}
