// The NFSv4.1 protocol layer against a real nfs-ganesha (started by ganesha_test.sh,
// which exports NFS4_TEST_ADDR, NFS4_TEST_PORT and NFS4_EXPORT_DIR, the directory the
// server exports, so results can be checked on disk too). The tests share one client
// id and session and run in order: Session first, Teardown last.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

#include "blocking_client.h"
#include "nfsshim/nfs4/constants.h"
#include "nfsshim/nfs4/nfsstat4.h"
#include "nfsshim/nfs4/ops_attr.h"
#include "nfsshim/nfs4/ops_dir.h"
#include "nfsshim/nfs4/ops_fh.h"
#include "nfsshim/nfs4/ops_io.h"
#include "nfsshim/nfs4/ops_lock.h"
#include "nfsshim/nfs4/ops_open.h"
#include "nfsshim/nfs4/ops_session.h"

using namespace nfsshim::nfs4;
using nfs4test::BlockingConn;
using nfs4test::Session;

// In a decode lambda: stop quietly once the server stopped (an op failed), fail on
// malformed results.
#define STEP(expr)                          \
  do {                                      \
    if (r.results_left() == 0) return 0;    \
    if ((expr) < 0) return -EBADMSG;        \
  } while (0)

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

struct World {
  BlockingConn conn;
  Session s;
  Fh4 export_fh;
  std::string export_dir;
  bool session_ok = false;
  std::string prefix;  // unique names per run
};
World* w = nullptr;

std::vector<uint8_t> read_local(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

StateOwner4 owner(const char* tag) {
  StateOwner4 o;
  o.clientid = w->s.clientid;
  std::string s = w->prefix + tag;
  o.owner.assign(s.begin(), s.end());
  return o;
}

// OPEN (create or not) in the export dir; returns the status, fills stateid and fh.
int open_file(const std::string& name, bool create, uint32_t access, Stateid4* sid, Fh4* fh,
              OpenRes* res_out = nullptr, const char* record = nullptr,
              uint32_t createmode = UNCHECKED4, uint32_t deny = OPEN4_SHARE_DENY_NONE,
              const char* owner_tag = "open") {
  OpenRes res;
  GetfhRes gf;
  int st = w->s.run(w->conn,
      [&](Compound& c) {
        encode_putfh(c, w->export_fh);
        OpenArgs a;
        a.share_access = access;
        a.share_deny = deny;
        a.owner = owner(owner_tag);
        a.create = create;
        a.createmode = createmode;
        a.createattrs.set_mode = true;
        a.createattrs.mode = 0644;
        a.name = name;
        encode_open(c, a);
        encode_getfh(c);
      },
      [&](ReplyReader& r) {
        uint32_t st2;
        STEP(decode_status_only(r, OP_PUTFH, &st2));
        STEP(decode_open(r, &res));
        STEP(decode_getfh(r, &gf));
        return 0;
      },
      record);
  *sid = res.stateid;
  *fh = gf.fh;
  if (res_out) *res_out = res;
  return st;
}

int close_file(const Fh4& fh, const Stateid4& sid) {
  CloseRes cr;
  return w->s.run(w->conn,
      [&](Compound& c) {
        encode_putfh(c, fh);
        encode_close(c, sid);
      },
      [&](ReplyReader& r) {
        uint32_t st;
        STEP(decode_status_only(r, OP_PUTFH, &st));
        STEP(decode_close(r, &cr));
        return 0;
      });
}

int remove_status(const std::string& name) {
  return w->s.run(w->conn,
      [&](Compound& c) {
        encode_putfh(c, w->export_fh);
        encode_remove(c, name);
      },
      [&](ReplyReader& r) {
        uint32_t x;
        RemoveRes rm;
        STEP(decode_status_only(r, OP_PUTFH, &x));
        STEP(decode_remove(r, &rm));
        return 0;
      });
}

int lookup_status(const std::string& name) {
  return w->s.run(w->conn,
      [&](Compound& c) {
        encode_putfh(c, w->export_fh);
        encode_lookup(c, name);
      },
      [&](ReplyReader& r) {
        uint32_t st;
        STEP(decode_status_only(r, OP_PUTFH, &st));
        STEP(decode_status_only(r, OP_LOOKUP, &st));
        return 0;
      });
}

}  // namespace

class Ganesha : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    w = new World;
    w->export_dir = env("NFS4_EXPORT_DIR");
    w->prefix = "t" + std::to_string(getpid()) + "-";
    w->s.cred.flavor = nfsshim::rpc::kAuthSys;
    w->s.cred.sys.machinename = "nfsshim-nfs4-test";
    w->s.cred.sys.stamp = static_cast<uint32_t>(time(nullptr));
  }
  static void TearDownTestSuite() {
    delete w;
    w = nullptr;
  }
  void SetUp() override {
    ASSERT_FALSE(env("NFS4_TEST_PORT").empty()) << "run through ganesha_test.sh";
  }
};

TEST_F(Ganesha, A_ExchangeIdCreateSessionReclaimComplete) {
  ASSERT_EQ(w->conn.connect(env("NFS4_TEST_ADDR"), std::stoi(env("NFS4_TEST_PORT"))), 0);
  ExchangeIdRes ex;
  int st = w->s.run_bare(w->conn,
      [&](Compound& c) {
        ExchangeIdArgs a;
        uint64_t now = static_cast<uint64_t>(time(nullptr));
        for (int i = 0; i < 8; ++i) a.verifier[i] = static_cast<uint8_t>(now >> (8 * i));
        std::string id = "nfsshim-nfs4-test-" + std::to_string(getpid());
        a.owner_id.assign(id.begin(), id.end());
        a.flags = EXCHGID4_FLAG_SUPP_MOVED_REFER | EXCHGID4_FLAG_BIND_PRINC_STATEID;
        a.send_impl_id = true;
        a.impl_id.domain = "nfsshim.invalid";
        a.impl_id.name = "nfsshim nfs4 test";
        encode_exchange_id(c, a);
      },
      [&](ReplyReader& r) { return decode_exchange_id(r, &ex); }, "exchange_id");
  ASSERT_EQ(st, 0) << w->s.last_error << " " << nfs4_status_name(static_cast<uint32_t>(st));
  EXPECT_NE(ex.clientid, 0u);
  EXPECT_EQ(ex.flags & EXCHGID4_FLAG_CONFIRMED_R, 0u);  // a new client
  EXPECT_EQ(ex.state_protect, SP4_NONE);
  std::printf("EXCHANGE_ID: clientid=%016llx seq=%u flags=0x%08x impl=%s/%s\n",
              static_cast<unsigned long long>(ex.clientid), ex.sequenceid, ex.flags,
              ex.server_impl_id.domain.c_str(), ex.server_impl_id.name.c_str());
  w->s.clientid = ex.clientid;

  CreateSessionRes cs;
  st = w->s.run_bare(w->conn,
      [&](Compound& c) {
        CreateSessionArgs a;
        a.clientid = ex.clientid;
        a.sequence = ex.sequenceid;
        a.fore = default_fore_channel(180);
        a.back = default_back_channel();
        a.cb_program = 0x40000000;
        a.cb_sec = w->s.cred;
        encode_create_session(c, a);
      },
      [&](ReplyReader& r) { return decode_create_session(r, &cs); }, "create_session");
  ASSERT_EQ(st, 0) << w->s.last_error << " " << nfs4_status_name(static_cast<uint32_t>(st));
  std::printf("CREATE_SESSION: fore slots=%u maxreq=%u maxresp=%u cached=%u maxops=%u; "
              "back slots=%u flags=0x%x\n",
              cs.fore.maxrequests, cs.fore.maxrequestsize, cs.fore.maxresponsesize,
              cs.fore.maxresponsesize_cached, cs.fore.maxoperations, cs.back.maxrequests, cs.flags);
  EXPECT_EQ(cs.fore.maxrequests, 180u);  // Slot_Table_Size = 180 in ganesha_test.sh
  w->s.sessionid = cs.sessionid;
  w->s.slots.reset(cs.fore.maxrequests);

  uint32_t rc_st;
  st = w->s.run(w->conn, [&](Compound& c) { encode_reclaim_complete(c, false); },
                [&](ReplyReader& r) {
                  STEP(decode_status_only(r, OP_RECLAIM_COMPLETE, &rc_st));
                  return 0;
                });
  ASSERT_EQ(st, 0) << w->s.last_error << " " << nfs4_status_name(static_cast<uint32_t>(st));
  w->session_ok = true;
}

// A second client asks for more than the server gives: 1024 slots and 16 MiB
// requests. The grant is what counts (the engine sizes its slot table from it).
TEST_F(Ganesha, A2_GrantIsWhatTheServerAllows) {
  BlockingConn conn;
  ASSERT_EQ(conn.connect(env("NFS4_TEST_ADDR"), std::stoi(env("NFS4_TEST_PORT"))), 0);
  Session s;
  s.cred = w->s.cred;
  ExchangeIdRes ex;
  ASSERT_EQ(s.run_bare(conn,
      [&](Compound& c) {
        ExchangeIdArgs a;
        std::string id = "nfsshim-nfs4-test-big-" + std::to_string(getpid());
        a.owner_id.assign(id.begin(), id.end());
        encode_exchange_id(c, a);
      },
      [&](ReplyReader& r) { return decode_exchange_id(r, &ex); }), 0) << s.last_error;
  CreateSessionRes cs;
  ASSERT_EQ(s.run_bare(conn,
      [&](Compound& c) {
        CreateSessionArgs a;
        a.clientid = ex.clientid;
        a.sequence = ex.sequenceid;
        a.fore = default_fore_channel(1024);
        a.fore.maxrequestsize = a.fore.maxresponsesize = 16u << 20;
        a.fore.maxresponsesize_cached = 1u << 20;
        a.fore.maxoperations = 64;
        a.back = default_back_channel();
        encode_create_session(c, a);
      },
      [&](ReplyReader& r) { return decode_create_session(r, &cs); }), 0) << s.last_error;
  std::printf("asked 1024 slots/16 MiB/64 ops: granted slots=%u maxreq=%u maxresp=%u "
              "cached=%u maxops=%u\n", cs.fore.maxrequests, cs.fore.maxrequestsize,
              cs.fore.maxresponsesize, cs.fore.maxresponsesize_cached, cs.fore.maxoperations);
  EXPECT_EQ(cs.fore.maxrequests, 180u);  // min(Slot_Table_Size, asked)
  EXPECT_LE(cs.fore.maxrequestsize, 16u << 20);
  uint32_t x;
  EXPECT_EQ(s.run_bare(conn, [&](Compound& c) { encode_destroy_session(c, cs.sessionid); },
                       [&](ReplyReader& r) { return decode_status_only(r, OP_DESTROY_SESSION, &x); }),
            0);
  EXPECT_EQ(s.run_bare(conn, [&](Compound& c) { encode_destroy_clientid(c, ex.clientid); },
                       [&](ReplyReader& r) { return decode_status_only(r, OP_DESTROY_CLIENTID, &x); }),
            0);
}

TEST_F(Ganesha, B_RootAndExportAttributes) {
  ASSERT_TRUE(w->session_ok);
  GetfhRes gf;
  GetattrRes ga, fs;
  Bitmap4 fsbits = Bitmap4().set(FATTR4_SUPPORTED_ATTRS).set(FATTR4_LEASE_TIME);
  int st = w->s.run(w->conn,
      [&](Compound& c) {
        encode_putrootfh(c);
        encode_getattr(c, getattr_bitmap());
        encode_lookup(c, "export");
        encode_getfh(c);
        encode_getattr(c, getattr_bitmap());
        encode_getattr(c, fsbits);
      },
      [&](ReplyReader& r) {
        uint32_t x;
        GetattrRes root;
        STEP(decode_status_only(r, OP_PUTROOTFH, &x));
        STEP(decode_getattr(r, getattr_bitmap(), &root));
        STEP(decode_status_only(r, OP_LOOKUP, &x));
        STEP(decode_getfh(r, &gf));
        STEP(decode_getattr(r, getattr_bitmap(), &ga));
        STEP(decode_getattr(r, fsbits, &fs));
        return 0;
      },
      "getattr_export");
  ASSERT_EQ(st, 0) << w->s.last_error << " " << nfs4_status_name(static_cast<uint32_t>(st));
  w->export_fh = gf.fh;
  EXPECT_EQ(ga.attrs.type, NF4DIR);
  struct stat sb;
  ASSERT_EQ(stat(w->export_dir.c_str(), &sb), 0);
  EXPECT_EQ(ga.attrs.mode, sb.st_mode & 07777);
  EXPECT_EQ(ga.attrs.fileid, sb.st_ino);
  uint32_t uid = 99;
  EXPECT_TRUE(numeric_id(ga.attrs.owner, &uid)) << ga.attrs.owner;  // Only_Numeric_Owners
  EXPECT_EQ(uid, sb.st_uid);
  EXPECT_EQ(ga.attrs.time_modify.seconds, sb.st_mtim.tv_sec);
  EXPECT_TRUE(fs.attrs.supported_attrs.test(FATTR4_TIME_MODIFY));
  std::printf("export: fh %zu bytes, lease_time=%u s\n", gf.fh.size(), fs.attrs.lease_time);
  EXPECT_EQ(fs.attrs.lease_time, 20u);  // Lease_Lifetime in ganesha_test.sh
}

TEST_F(Ganesha, C_OpenWriteCommitCloseReadBack) {
  ASSERT_TRUE(w->session_ok && !w->export_fh.empty());
  const std::string name = w->prefix + "data";
  Stateid4 sid;
  Fh4 fh;
  OpenRes open;
  ASSERT_EQ(open_file(name, true, OPEN4_SHARE_ACCESS_BOTH, &sid, &fh, &open, "open_create"), 0)
      << w->s.last_error;
  std::printf("OPEN: rflags=0x%x delegation=%u\n", open.rflags, open.delegation.type);
  EXPECT_EQ(open.rflags & OPEN4_RESULT_PRESERVE_UNLINKED, 0u);  // ganesha never sets it

  std::vector<uint8_t> data(200000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>((i * 131) ^ (i >> 8));
  WriteRes wr;
  CommitRes cm;
  int st = w->s.run(w->conn,
      [&](Compound& c) {
        encode_putfh(c, fh);
        encode_write(c, sid, 0, UNSTABLE4, data.data(), data.size());
        encode_commit(c, 0, 0);
      },
      [&](ReplyReader& r) {
        uint32_t x;
        STEP(decode_status_only(r, OP_PUTFH, &x));
        STEP(decode_write(r, data.size(), &wr));
        STEP(decode_commit(r, &cm));
        return 0;
      },
      "write_commit");
  ASSERT_EQ(st, 0) << w->s.last_error << " " << nfs4_status_name(static_cast<uint32_t>(st));
  EXPECT_EQ(wr.count, data.size());
  EXPECT_EQ(wr.verifier, cm.verifier);  // no server restart in between
  ASSERT_EQ(close_file(fh, sid), 0) << w->s.last_error;
  EXPECT_EQ(read_local(w->export_dir + "/" + name), data);

  Stateid4 rsid;
  Fh4 rfh;
  ASSERT_EQ(open_file(name, false, OPEN4_SHARE_ACCESS_READ, &rsid, &rfh), 0) << w->s.last_error;
  EXPECT_EQ(rfh, fh);
  std::vector<uint8_t> back;
  bool eof = false;
  while (!eof) {
    ReadRes rd;
    std::vector<uint8_t> keep;
    st = w->s.run(w->conn,
        [&](Compound& c) {
          encode_putfh(c, rfh);
          encode_read(c, rsid, back.size(), back.empty() ? 100 : 65536);
        },
        [&](ReplyReader& r) {
          uint32_t x;
          STEP(decode_status_only(r, OP_PUTFH, &x));
          STEP(decode_read(r, 65536, &rd));
          keep.assign(rd.data, rd.data + rd.len);  // rd.data points into the reply
          return 0;
        },
        back.empty() ? "read" : nullptr);
    ASSERT_EQ(st, 0) << w->s.last_error;
    back.insert(back.end(), keep.begin(), keep.end());
    eof = rd.eof || keep.empty();
  }
  EXPECT_EQ(back, data);
  ASSERT_EQ(close_file(rfh, rsid), 0) << w->s.last_error;
}

TEST_F(Ganesha, C2_GuardedCreateAndShareDeny) {
  ASSERT_TRUE(w->session_ok && !w->export_fh.empty());
  const std::string name = w->prefix + "guarded";
  Stateid4 sid, other;
  Fh4 fh, ofh;
  ASSERT_EQ(open_file(name, true, OPEN4_SHARE_ACCESS_BOTH, &sid, &fh, nullptr, nullptr, GUARDED4,
                      OPEN4_SHARE_DENY_WRITE), 0) << w->s.last_error;
  // GUARDED on an existing name fails with EXIST (UNCHECKED would just open it).
  EXPECT_EQ(open_file(name, true, OPEN4_SHARE_ACCESS_READ, &other, &ofh, nullptr, nullptr,
                      GUARDED4, OPEN4_SHARE_DENY_NONE, "other"),
            static_cast<int>(NFS4ERR_EXIST));
  // Another open-owner asking for write access is refused by our DENY_WRITE...
  EXPECT_EQ(open_file(name, false, OPEN4_SHARE_ACCESS_WRITE, &other, &ofh, nullptr, nullptr,
                      UNCHECKED4, OPEN4_SHARE_DENY_NONE, "other"),
            static_cast<int>(NFS4ERR_SHARE_DENIED));
  // ... while read access is fine.
  ASSERT_EQ(open_file(name, false, OPEN4_SHARE_ACCESS_READ, &other, &ofh, nullptr, nullptr,
                      UNCHECKED4, OPEN4_SHARE_DENY_NONE, "other"), 0) << w->s.last_error;
  EXPECT_EQ(close_file(ofh, other), 0);
  EXPECT_EQ(close_file(fh, sid), 0);
  int st = remove_status(name);
  EXPECT_EQ(st, 0);
}

// EXCLUSIVE4_1 (RFC 8881 18.16.3): the server keeps the verifier with the file, so the
// same create sent again (what a retry after a lost reply, or after a server restart in a
// new session, is) opens the file it made; another verifier is NFS4ERR_EXIST.
TEST_F(Ganesha, C3_Exclusive41CreateSentAgainOpensItsFile) {
  ASSERT_TRUE(w->session_ok && !w->export_fh.empty());
  const std::string name = w->prefix + "excl";
  auto create = [&](uint64_t verf, const char* tag, OpenRes* res, Fh4* fh) {
    GetfhRes gf;
    int st = w->s.run(w->conn,
        [&](Compound& c) {
          encode_putfh(c, w->export_fh);
          OpenArgs a;
          a.share_access = OPEN4_SHARE_ACCESS_BOTH;
          a.owner = owner(tag);
          a.create = true;
          a.createmode = EXCLUSIVE4_1;
          std::memcpy(a.createverf.data(), &verf, sizeof verf);
          a.createattrs.set_mode = true;
          a.createattrs.mode = 0640;
          a.name = name;
          encode_open(c, a);
          encode_getfh(c);
        },
        [&](ReplyReader& r) {
          uint32_t st2;
          STEP(decode_status_only(r, OP_PUTFH, &st2));
          STEP(decode_open(r, res));
          STEP(decode_getfh(r, &gf));
          return 0;
        });
    *fh = gf.fh;
    return st;
  };
  OpenRes first, again, other;
  Fh4 fh, fh_again, fh_other;
  ASSERT_EQ(create(0x0123456789abcdefull, "excl1", &first, &fh), 0) << w->s.last_error;
  std::printf("EXCLUSIVE4_1 attrset: %08x %08x %08x\n", first.attrset.w[0], first.attrset.w[1],
              first.attrset.w[2]);
  EXPECT_TRUE(first.attrset.test(FATTR4_MODE));  // the mode went with the create
  struct stat st;
  ASSERT_EQ(::stat((w->export_dir + "/" + name).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  // The same create again (another open-owner: a retry in a new session has one): opened.
  ASSERT_EQ(create(0x0123456789abcdefull, "excl2", &again, &fh_again), 0) << w->s.last_error;
  EXPECT_EQ(fh_again, fh);
  // Another verifier: the file exists and is not ours.
  EXPECT_EQ(create(0x0123456789abcdeeull, "excl3", &other, &fh_other), static_cast<int>(NFS4ERR_EXIST));
  EXPECT_EQ(close_file(fh_again, again.stateid), 0);
  EXPECT_EQ(close_file(fh, first.stateid), 0);
  int rm = remove_status(name);
  EXPECT_EQ(rm, 0);
}

TEST_F(Ganesha, D_RenameRemove) {
  ASSERT_TRUE(w->session_ok && !w->export_fh.empty());
  const std::string from = w->prefix + "data", to = w->prefix + "renamed";
  RenameRes rn;
  int st = w->s.run(w->conn,
      [&](Compound& c) {
        encode_putfh(c, w->export_fh);
        encode_savefh(c);
        encode_putfh(c, w->export_fh);
        encode_rename(c, from, to);
      },
      [&](ReplyReader& r) {
        uint32_t x;
        STEP(decode_status_only(r, OP_PUTFH, &x));
        STEP(decode_status_only(r, OP_SAVEFH, &x));
        STEP(decode_status_only(r, OP_PUTFH, &x));
        STEP(decode_rename(r, &rn));
        return 0;
      },
      "rename");
  ASSERT_EQ(st, 0) << w->s.last_error << " " << nfs4_status_name(static_cast<uint32_t>(st));
  EXPECT_NE(rn.target_cinfo.before, rn.target_cinfo.after);
  EXPECT_EQ(lookup_status(from), static_cast<int>(NFS4ERR_NOENT));
  EXPECT_EQ(lookup_status(to), 0);
  struct stat sb;
  EXPECT_EQ(stat((w->export_dir + "/" + to).c_str(), &sb), 0);

  RemoveRes rm;
  st = w->s.run(w->conn,
      [&](Compound& c) {
        encode_putfh(c, w->export_fh);
        encode_remove(c, to);
      },
      [&](ReplyReader& r) {
        uint32_t x;
        STEP(decode_status_only(r, OP_PUTFH, &x));
        STEP(decode_remove(r, &rm));
        return 0;
      });
  ASSERT_EQ(st, 0) << w->s.last_error;
  EXPECT_EQ(lookup_status(to), static_cast<int>(NFS4ERR_NOENT));
  EXPECT_NE(stat((w->export_dir + "/" + to).c_str(), &sb), 0);
  // A second REMOVE reports NOENT as a status, not as a decode error.
  st = w->s.run(w->conn,
      [&](Compound& c) {
        encode_putfh(c, w->export_fh);
        encode_remove(c, to);
      },
      [&](ReplyReader& r) {
        uint32_t x;
        STEP(decode_status_only(r, OP_PUTFH, &x));
        STEP(decode_remove(r, &rm));
        return 0;
      },
      "remove_noent");
  EXPECT_EQ(st, static_cast<int>(NFS4ERR_NOENT));
  EXPECT_EQ(nfs4_errno(static_cast<uint32_t>(st)), -ENOENT);
}

TEST_F(Ganesha, E_DirectorySymlinkLinkReaddirSetattrAccess) {
  ASSERT_TRUE(w->session_ok && !w->export_fh.empty());
  const std::string dir = w->prefix + "dir", lnk = w->prefix + "sym", file = w->prefix + "f",
                    hard = w->prefix + "hard";
  CreateArgs d;
  d.type = NF4DIR;
  d.name = dir;
  d.attrs.set_mode = true;
  d.attrs.mode = 0750;
  CreateArgs l;
  l.type = NF4LNK;
  l.name = lnk;
  l.link_target = "some/target";
  CreateRes cd, cl;
  ReadlinkRes rl;
  int st = w->s.run(w->conn,
      [&](Compound& c) {
        encode_putfh(c, w->export_fh);
        encode_create(c, d);
        encode_putfh(c, w->export_fh);
        encode_create(c, l);
        encode_readlink(c);
      },
      [&](ReplyReader& r) {
        uint32_t x;
        STEP(decode_status_only(r, OP_PUTFH, &x));
        STEP(decode_create(r, d, &cd));
        STEP(decode_status_only(r, OP_PUTFH, &x));
        STEP(decode_create(r, l, &cl));
        STEP(decode_readlink(r, &rl));
        return 0;
      },
      "create_readlink");
  ASSERT_EQ(st, 0) << w->s.last_error << " " << nfs4_status_name(static_cast<uint32_t>(st));
  EXPECT_EQ(rl.target, "some/target");
  struct stat sb;
  ASSERT_EQ(stat((w->export_dir + "/" + dir).c_str(), &sb), 0);
  EXPECT_TRUE(S_ISDIR(sb.st_mode));
  EXPECT_EQ(sb.st_mode & 07777, 0750u);

  // A file, a hard link to it (SAVEFH file; PUTFH dir; LINK), SETATTR and ACCESS.
  Stateid4 sid;
  Fh4 fh;
  ASSERT_EQ(open_file(file, true, OPEN4_SHARE_ACCESS_BOTH, &sid, &fh), 0) << w->s.last_error;
  LinkRes lk;
  SetattrRes sa;
  AccessRes ac;
  SetAttrs set;
  set.set_size = true;
  set.size = 12345;
  set.set_mode = true;
  set.mode = 0600;
  st = w->s.run(w->conn,
      [&](Compound& c) {
        encode_putfh(c, fh);
        encode_savefh(c);
        encode_putfh(c, w->export_fh);
        encode_link(c, hard);
        encode_putfh(c, fh);
        encode_setattr(c, sid, set);
        encode_access(c, ACCESS4_READ | ACCESS4_MODIFY | ACCESS4_EXECUTE);
      },
      [&](ReplyReader& r) {
        uint32_t x;
        STEP(decode_status_only(r, OP_PUTFH, &x));
        STEP(decode_status_only(r, OP_SAVEFH, &x));
        STEP(decode_status_only(r, OP_PUTFH, &x));
        STEP(decode_link(r, &lk));
        STEP(decode_status_only(r, OP_PUTFH, &x));
        STEP(decode_setattr(r, set, &sa));
        STEP(decode_access(r, &ac));
        return 0;
      },
      "link_setattr_access");
  ASSERT_EQ(st, 0) << w->s.last_error << " " << nfs4_status_name(static_cast<uint32_t>(st));
  EXPECT_EQ(sa.attrsset, setattrs_bitmap(set));
  EXPECT_EQ(ac.access & (ACCESS4_READ | ACCESS4_MODIFY), ACCESS4_READ | ACCESS4_MODIFY);
  ASSERT_EQ(stat((w->export_dir + "/" + hard).c_str(), &sb), 0);
  EXPECT_EQ(sb.st_size, 12345);
  EXPECT_EQ(sb.st_mode & 07777, 0600u);
  EXPECT_EQ(sb.st_nlink, 2u);
  ASSERT_EQ(close_file(fh, sid), 0) << w->s.last_error;

  // READDIR until eof; our four names must be there with the right types.
  ReaddirArgs ra;
  ra.dircount = 4096;
  ra.maxcount = 8192;
  ra.attrs.set(FATTR4_TYPE).set(FATTR4_FILEID);
  std::map<std::string, uint32_t> seen;
  for (int round = 0; round < 100; ++round) {
    ReaddirRes rd;
    st = w->s.run(w->conn,
        [&](Compound& c) {
          encode_putfh(c, w->export_fh);
          encode_readdir(c, ra);
        },
        [&](ReplyReader& r) {
          uint32_t x;
          STEP(decode_status_only(r, OP_PUTFH, &x));
          STEP(decode_readdir(r, ra, &rd));
          return 0;
        },
        round == 0 ? "readdir" : nullptr);
    ASSERT_EQ(st, 0) << w->s.last_error;
    for (const DirEntry& e : rd.entries) seen[e.name] = e.attrs.type;
    if (rd.eof || rd.entries.empty()) break;
    ra.cookie = rd.entries.back().cookie;
    ra.cookieverf = rd.cookieverf;
  }
  EXPECT_EQ(seen[dir], NF4DIR);
  EXPECT_EQ(seen[lnk], NF4LNK);
  EXPECT_EQ(seen[file], NF4REG);
  EXPECT_EQ(seen[hard], NF4REG);

  for (const std::string& n : {lnk, file, hard, dir}) {
    RemoveRes rm;
    st = w->s.run(w->conn,
        [&](Compound& c) {
          encode_putfh(c, w->export_fh);
          encode_remove(c, n);
        },
        [&](ReplyReader& r) {
          uint32_t x;
          STEP(decode_status_only(r, OP_PUTFH, &x));
          STEP(decode_remove(r, &rm));
          return 0;
        });
    EXPECT_EQ(st, 0) << n << " " << w->s.last_error;
  }
}

TEST_F(Ganesha, F_LocksAndStateids) {
  ASSERT_TRUE(w->session_ok && !w->export_fh.empty());
  const std::string name = w->prefix + "locked";
  Stateid4 sid;
  Fh4 fh;
  ASSERT_EQ(open_file(name, true, OPEN4_SHARE_ACCESS_BOTH, &sid, &fh), 0) << w->s.last_error;
  LockRes lk;
  LockArgs la;
  la.locktype = WRITE_LT;
  la.offset = 0;
  la.length = 100;
  la.open_stateid = sid;
  la.lock_owner = owner("lockA");
  int st = w->s.run(w->conn,
      [&](Compound& c) {
        encode_putfh(c, fh);
        encode_lock(c, la);
      },
      [&](ReplyReader& r) {
        uint32_t x;
        STEP(decode_status_only(r, OP_PUTFH, &x));
        STEP(decode_lock(r, &lk));
        return 0;
      },
      "lock");
  ASSERT_EQ(st, 0) << w->s.last_error << " " << nfs4_status_name(static_cast<uint32_t>(st));

  LocktRes lt;
  st = w->s.run(w->conn,
      [&](Compound& c) {
        encode_putfh(c, fh);
        encode_lockt(c, WRITE_LT, 50, 10, owner("lockB"));
      },
      [&](ReplyReader& r) {
        uint32_t x;
        STEP(decode_status_only(r, OP_PUTFH, &x));
        STEP(decode_lockt(r, &lt));
        return 0;
      },
      "lockt_denied");
  ASSERT_EQ(st, static_cast<int>(NFS4ERR_DENIED)) << w->s.last_error;
  EXPECT_EQ(lt.denied.offset, 0u);
  EXPECT_EQ(lt.denied.length, 100u);
  EXPECT_EQ(lt.denied.locktype, WRITE_LT);
  EXPECT_EQ(lt.denied.owner.owner, owner("lockA").owner);

  TestStateidRes ts;
  st = w->s.run(w->conn,
      [&](Compound& c) { encode_test_stateid(c, {sid, lk.stateid, Stateid4{}}); },
      [&](ReplyReader& r) {
        STEP(decode_test_stateid(r, 3, &ts));
        return 0;
      },
      "test_stateid");
  ASSERT_EQ(st, 0) << w->s.last_error;
  EXPECT_EQ(ts.codes[0], static_cast<uint32_t>(NFS4_OK));
  EXPECT_EQ(ts.codes[1], static_cast<uint32_t>(NFS4_OK));
  EXPECT_NE(ts.codes[2], static_cast<uint32_t>(NFS4_OK));

  LockuRes lu;
  uint32_t fs_st = 1;
  st = w->s.run(w->conn,
      [&](Compound& c) {
        encode_putfh(c, fh);
        encode_locku(c, WRITE_LT, lk.stateid, 0, 100);
      },
      [&](ReplyReader& r) {
        uint32_t x;
        STEP(decode_status_only(r, OP_PUTFH, &x));
        STEP(decode_locku(r, &lu));
        return 0;
      });
  ASSERT_EQ(st, 0) << w->s.last_error;
  st = w->s.run(w->conn, [&](Compound& c) { encode_free_stateid(c, lu.stateid); },
                [&](ReplyReader& r) {
                  STEP(decode_status_only(r, OP_FREE_STATEID, &fs_st));
                  return 0;
                });
  EXPECT_EQ(st, 0) << nfs4_status_name(static_cast<uint32_t>(st));
  ASSERT_EQ(close_file(fh, sid), 0) << w->s.last_error;
  st = remove_status(name);
  EXPECT_EQ(st, 0);
}

TEST_F(Ganesha, G_SecondConnectionBindsToTheSession) {
  ASSERT_TRUE(w->session_ok);
  BlockingConn conn2;
  ASSERT_EQ(conn2.connect(env("NFS4_TEST_ADDR"), std::stoi(env("NFS4_TEST_PORT"))), 0);
  BindConnRes bc;
  int st = w->s.run_bare(conn2,
      [&](Compound& c) { encode_bind_conn_to_session(c, w->s.sessionid, CDFC4_FORE_OR_BOTH); },
      [&](ReplyReader& r) { return decode_bind_conn_to_session(r, &bc); }, "bind_conn");
  ASSERT_EQ(st, 0) << w->s.last_error << " " << nfs4_status_name(static_cast<uint32_t>(st));
  EXPECT_EQ(bc.sessionid, w->s.sessionid);
  std::printf("BIND_CONN_TO_SESSION: dir=%u\n", bc.dir);
  GetattrRes ga;
  st = w->s.run(conn2,
      [&](Compound& c) {
        encode_putrootfh(c);
        encode_getattr(c, getattr_bitmap());
      },
      [&](ReplyReader& r) {
        uint32_t x;
        STEP(decode_status_only(r, OP_PUTROOTFH, &x));
        STEP(decode_getattr(r, getattr_bitmap(), &ga));
        return 0;
      });
  ASSERT_EQ(st, 0) << w->s.last_error << " " << nfs4_status_name(static_cast<uint32_t>(st));
  EXPECT_EQ(ga.attrs.type, NF4DIR);
  // Both connections now carry the session: one more compound on the first.
  GetattrRes again;
  st = w->s.run(w->conn,
      [&](Compound& c) {
        encode_putfh(c, w->export_fh);
        encode_getattr(c, getattr_bitmap());
      },
      [&](ReplyReader& r) {
        uint32_t x;
        STEP(decode_status_only(r, OP_PUTFH, &x));
        STEP(decode_getattr(r, getattr_bitmap(), &again));
        return 0;
      });
  EXPECT_EQ(st, 0) << w->s.last_error;
  EXPECT_EQ(again.attrs.type, NF4DIR);
  std::printf("slots in use at peak: %u\n", w->s.slots.peak_in_use());
}

// Connection loss with a request in flight: the engine resends it on another
// connection of the session with the same slot and sequence id, and the server must
// answer from its reply cache instead of running it again. A non-idempotent CREATE
// shows which happened (a second run would fail with NFS4ERR_EXIST).
TEST_F(Ganesha, G2_ReplayOnAnotherConnectionHitsTheReplyCache) {
  ASSERT_TRUE(w->session_ok && !w->export_fh.empty());
  BlockingConn conn2;
  ASSERT_EQ(conn2.connect(env("NFS4_TEST_ADDR"), std::stoi(env("NFS4_TEST_PORT"))), 0);
  BindConnRes bc;
  ASSERT_EQ(w->s.run_bare(conn2,
      [&](Compound& c) { encode_bind_conn_to_session(c, w->s.sessionid, CDFC4_FORE_OR_BOTH); },
      [&](ReplyReader& r) { return decode_bind_conn_to_session(r, &bc); }), 0);

  CreateArgs d;
  d.type = NF4DIR;
  d.name = w->prefix + "replayed";
  auto build = [&](const SlotTable::Ticket& t, uint32_t seqid, uint32_t xid) {
    Compound c(xid, w->s.cred);
    SequenceArgs seq;
    seq.sessionid = w->s.sessionid;
    seq.sequenceid = seqid;
    seq.slotid = t.slotid;
    seq.highest_slotid = t.highest_slotid;
    seq.cachethis = true;
    encode_sequence(c, seq);
    encode_putfh(c, w->export_fh);
    encode_create(c, d);
    std::vector<uint8_t> msg;
    EXPECT_EQ(c.finish(&msg), 0);
    return msg;
  };
  auto decode = [&](const std::vector<uint8_t>& reply, uint32_t xid, SequenceRes* seq,
                    CreateRes* cr) {
    nfsshim::rpc::XdrDecoder dec(reply);
    nfsshim::rpc::ReplyHeader h;
    if (decode_compound_rpc(dec, xid, &h) != 0) return -EBADMSG;
    ReplyReader r(dec);
    uint32_t x;
    if (r.begin() < 0 || decode_sequence(r, seq) < 0) return -EBADMSG;
    if (r.results_left() > 0 && (decode_status_only(r, OP_PUTFH, &x) < 0 ||
                                 (r.results_left() > 0 && decode_create(r, d, cr) < 0))) {
      return -EBADMSG;
    }
    if (r.finish() < 0) return -EBADMSG;
    return static_cast<int>(r.status());
  };

  SlotTable::Ticket t;
  ASSERT_EQ(w->s.slots.acquire(&t), 0);
  uint32_t xid1 = ++w->s.xid;
  std::vector<uint8_t> reply1, reply2;
  ASSERT_EQ(w->conn.call(xid1, build(t, t.seqid, xid1), &reply1), 0);
  SequenceRes seq1, seq2;
  CreateRes cr1, cr2;
  ASSERT_EQ(decode(reply1, xid1, &seq1, &cr1), 0);
  // The reply "never arrived": the connection is gone, the slot keeps its request.
  ASSERT_EQ(w->s.slots.on_connection_lost(t.slotid), 0);
  SlotTable::Ticket rt;
  ASSERT_EQ(w->s.slots.replay(t.slotid, &rt), 0);
  ASSERT_EQ(rt.seqid, t.seqid);
  uint32_t xid2 = ++w->s.xid;
  ASSERT_EQ(conn2.call(xid2, build(rt, rt.seqid, xid2), &reply2), 0);
  ASSERT_EQ(decode(reply2, xid2, &seq2, &cr2), 0) << "the CREATE ran twice";
  EXPECT_EQ(cr2.cinfo.after, cr1.cinfo.after);
  // Apart from the xid, the cached reply is the original one.
  ASSERT_EQ(reply1.size(), reply2.size());
  EXPECT_TRUE(std::equal(reply1.begin() + 4, reply1.end(), reply2.begin() + 4));
  ASSERT_EQ(w->s.slots.on_sequence_ok(rt.slotid, seq2), 0);

  // A sequence id that skips one is refused by the server as SEQ_MISORDERED, a
  // slot-level status: the slot table gives the id back and the next request works.
  SlotTable::Ticket m;
  ASSERT_EQ(w->s.slots.acquire(&m), 0);
  uint32_t xid3 = ++w->s.xid;
  std::vector<uint8_t> reply3;
  SequenceRes seq3;
  CreateRes cr3;
  ASSERT_EQ(w->conn.call(xid3, build(m, m.seqid + 1, xid3), &reply3), 0);
  EXPECT_EQ(decode(reply3, xid3, &seq3, &cr3), static_cast<int>(NFS4ERR_SEQ_MISORDERED));
  EXPECT_EQ(nfs4_recovery(NFS4ERR_SEQ_MISORDERED), Recovery::kSlotResync);
  w->s.slots.on_sequence_error(m.slotid, NFS4ERR_SEQ_MISORDERED);

  RemoveRes rm;
  int st = w->s.run(w->conn,
      [&](Compound& c) {
        encode_putfh(c, w->export_fh);
        encode_remove(c, d.name);
      },
      [&](ReplyReader& r) {
        uint32_t x;
        STEP(decode_status_only(r, OP_PUTFH, &x));
        STEP(decode_remove(r, &rm));
        return 0;
      });
  EXPECT_EQ(st, 0) << w->s.last_error;
}

TEST_F(Ganesha, H_Teardown) {
  ASSERT_TRUE(w->session_ok);
  uint32_t x;
  int st = w->s.run_bare(w->conn, [&](Compound& c) { encode_destroy_session(c, w->s.sessionid); },
                         [&](ReplyReader& r) { return decode_status_only(r, OP_DESTROY_SESSION, &x); },
                         "destroy_session");
  ASSERT_EQ(st, 0) << w->s.last_error << " " << nfs4_status_name(static_cast<uint32_t>(st));
  // The session is gone: SEQUENCE on it fails with BADSESSION, a recovery status.
  st = w->s.run(w->conn, [&](Compound&) {}, [&](ReplyReader&) { return 0; }, "sequence_badsession");
  EXPECT_EQ(st, static_cast<int>(NFS4ERR_BADSESSION));
  EXPECT_EQ(nfs4_recovery(static_cast<uint32_t>(st)), Recovery::kNewSession);
  st = w->s.run_bare(w->conn, [&](Compound& c) { encode_destroy_clientid(c, w->s.clientid); },
                     [&](ReplyReader& r) { return decode_status_only(r, OP_DESTROY_CLIENTID, &x); });
  ASSERT_EQ(st, 0) << w->s.last_error << " " << nfs4_status_name(static_cast<uint32_t>(st));
  w->session_ok = false;
}
