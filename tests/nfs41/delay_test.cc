// NFS4ERR_DELAY handling of the NFSv4.1 engine (libshim/src/nfs41/session.cc) against a
// scripted NFSv4.1 server on a loopback socket: ganesha does not send DELAY on demand.
// The fake speaks just enough (EXCHANGE_ID, CREATE_SESSION, SEQUENCE, RECLAIM_COMPLETE,
// PUTROOTFH/LOOKUP/GETFH/GETATTR(lease_time), DESTROY_*) for Engine::open and shutdown;
// a compound of exactly SEQUENCE + PUTROOTFH is the scripted one: answered with DELAY
// (at the PUTROOTFH or at the SEQUENCE) the first N times, then OK. Arrival times show
// the backoff between the retries. For the io_uring and the epoll loop.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "nfsshim/nfs4/compound.h"
#include "nfsshim/nfs4/constants.h"
#include "nfsshim/nfs4/nfsstat4.h"
#include "nfsshim/nfs4/ops_fh.h"
#include "nfsshim/nfs41/engine.h"
#include "nfsshim/rpc/record_marking.h"
#include "nfsshim/rpc/xdr_decoder.h"
#include "nfsshim/rpc/xdr_encoder.h"
#include "record_server.h"

using nfsshim::nfs::IoBackend;
using nfsshim::rpc::XdrDecoder;
using nfsshim::rpc::XdrEncoder;
using namespace nfsshim::nfs41;
using namespace nfsshim::nfs4;

namespace {

using Clock = std::chrono::steady_clock;

class FakeNfs41Server : public nfs41test::RecordServer {
 public:
  enum class DelayAt { kOp, kSequence };

  FakeNfs41Server()
      : RecordServer([this](int fd, const std::vector<uint8_t>& rec, int) { return reply(fd, rec); }) {}
  ~FakeNfs41Server() override { stop(); }

  // The next DELAYS scripted compounds get NFS4ERR_DELAY (at AT), the later ones OK.
  void script(int delays, DelayAt at) {
    std::lock_guard<std::mutex> g(mu_);
    delays_left_ = delays;
    at_ = at;
    arrivals_.clear();
  }
  std::vector<Clock::time_point> arrivals() {
    std::lock_guard<std::mutex> g(mu_);
    return arrivals_;
  }
  int delays_sent() {
    std::lock_guard<std::mutex> g(mu_);
    return delays_sent_;
  }

 private:
  bool reply(int fd, const std::vector<uint8_t>& rec) {
    std::vector<uint8_t> out;
    if (!answer(rec, &out)) {
      ADD_FAILURE() << "fake server: a request it does not know";
      ::shutdown(fd, SHUT_RDWR);
      return false;
    }
    return send_record(fd, out);
  }

  static void channel(XdrEncoder& e) {
    e.u32(0);                      // headerpadsize
    e.u32((1u << 20) + 8192);      // maxrequestsize
    e.u32((1u << 20) + 8192);      // maxresponsesize
    e.u32(8192);                   // maxresponsesize_cached
    e.u32(16);                     // maxoperations
    e.u32(kSlots);                 // maxrequests
    e.u32(0);                      // no rdma_ird
  }

  // One reply for one call: false for what this fake does not speak.
  bool answer(const std::vector<uint8_t>& rec, std::vector<uint8_t>* reply) {
    XdrDecoder d(rec);
    uint32_t xid, mtype, rpcvers, prog, vers, proc, flavor;
    const uint8_t* body;
    size_t blen;
    d.u32(&xid);
    d.u32(&mtype);
    d.u32(&rpcvers);
    d.u32(&prog);
    d.u32(&vers);
    d.u32(&proc);
    d.u32(&flavor);
    d.opaque_view(&body, &blen, 400);
    d.u32(&flavor);
    d.opaque_view(&body, &blen, 400);
    XdrEncoder e;
    e.u32(xid);
    e.u32(1);  // REPLY
    e.u32(0);  // MSG_ACCEPTED
    e.u32(0);  // verifier AUTH_NONE
    e.u32(0);
    e.u32(0);  // SUCCESS
    if (!d.ok() || mtype != 0 || prog != 100003 || vers != 4) return false;
    if (proc == 0) {  // NULL
      *reply = e.take();
      return true;
    }
    uint32_t minor, nops, op;
    d.opaque_view(&body, &blen, 1024);  // tag
    d.u32(&minor);
    d.u32(&nops);
    if (d.u32(&op) < 0 || nops == 0) return false;
    // Results go into R (count known at the end); STATUS is the last result's.
    XdrEncoder r;
    uint32_t count = 0, status = NFS4_OK;
    auto result = [&](uint32_t opnum, uint32_t st) {
      r.u32(opnum);
      r.u32(st);
      ++count;
      status = st;
    };
    if (op == OP_EXCHANGE_ID) {
      result(OP_EXCHANGE_ID, NFS4_OK);
      r.u64(0x1122334455667788ull);  // clientid
      r.u32(1);                       // sequenceid
      r.u32(EXCHGID4_FLAG_USE_NON_PNFS);
      r.u32(0);  // SP4_NONE
      r.u64(1);  // server_owner minor id
      r.string("fake-nfs41");
      r.string("fake-nfs41");
      r.u32(0);  // no impl id
    } else if (op == OP_CREATE_SESSION) {
      result(OP_CREATE_SESSION, NFS4_OK);
      std::array<uint8_t, 16> sid{};
      sid.fill(0x5a);
      r.fixed_opaque(sid.data(), sid.size());
      r.u32(1);  // sequence
      r.u32(0);  // flags
      channel(r);
      channel(r);
    } else if (op == OP_DESTROY_SESSION || op == OP_DESTROY_CLIENTID) {
      result(op, NFS4_OK);
    } else if (op == OP_SEQUENCE) {
      std::array<uint8_t, 16> sid{};
      uint32_t seqid, slotid, highest, cachethis;
      d.fixed_opaque(sid.data(), sid.size());
      d.u32(&seqid);
      d.u32(&slotid);
      d.u32(&highest);
      d.u32(&cachethis);
      uint32_t next = 0;
      if (nops > 1) d.u32(&next);
      if (!d.ok()) return false;
      const bool scripted = nops == 2 && next == OP_PUTROOTFH;
      bool delay = false;
      DelayAt at = DelayAt::kOp;
      if (scripted) {
        std::lock_guard<std::mutex> g(mu_);
        arrivals_.push_back(Clock::now());
        if (delays_left_ > 0) {
          --delays_left_;
          ++delays_sent_;
          delay = true;
          at = at_;
        }
      }
      if (delay && at == DelayAt::kSequence) {
        result(OP_SEQUENCE, NFS4ERR_DELAY);
      } else {
        result(OP_SEQUENCE, NFS4_OK);
        r.fixed_opaque(sid.data(), sid.size());
        r.u32(seqid);
        r.u32(slotid);
        r.u32(kSlots - 1);  // highest_slotid
        r.u32(kSlots - 1);  // target_highest_slotid
        r.u32(0);           // status flags
        // The rest: in the order sent; each op's args read only as far as needed.
        for (uint32_t i = 1; i < nops; ++i) {
          if (i > 1 && d.u32(&next) < 0) return false;
          if (next == OP_PUTROOTFH) {
            result(OP_PUTROOTFH, delay ? NFS4ERR_DELAY : NFS4_OK);
            if (delay) break;
          } else if (next == OP_RECLAIM_COMPLETE) {
            uint32_t one_fs;
            d.u32(&one_fs);
            result(OP_RECLAIM_COMPLETE, NFS4_OK);
          } else if (next == OP_LOOKUP) {
            d.opaque_view(&body, &blen, 1024);
            result(OP_LOOKUP, NFS4_OK);
          } else if (next == OP_GETFH) {
            result(OP_GETFH, NFS4_OK);
            r.string("fake-root-fh");
          } else if (next == OP_GETATTR) {
            uint32_t words, w;
            d.u32(&words);
            for (uint32_t k = 0; k < words && k < 8; ++k) d.u32(&w);
            result(OP_GETATTR, NFS4_OK);
            r.u32(1);                        // bitmap4: one word
            r.u32(1u << FATTR4_LEASE_TIME);  // lease_time only
            r.u32(4);                        // attrlist4 length
            r.u32(90);                       // lease_time: 90 s (no renewal in the test)
          } else {
            return false;
          }
        }
      }
    } else {
      return false;
    }
    e.u32(status);
    e.u32(0);  // tag
    e.u32(count);
    std::vector<uint8_t> head = e.take(), res = r.take();
    head.insert(head.end(), res.begin(), res.end());
    *reply = std::move(head);
    return true;
  }

  static constexpr uint32_t kSlots = 8;
  std::mutex mu_;
  int delays_left_ = 0, delays_sent_ = 0;
  DelayAt at_ = DelayAt::kOp;
  std::vector<Clock::time_point> arrivals_;
};

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// SEQUENCE + PUTROOTFH through Engine::run: the scripted compound.
int putrootfh(Engine& e) {
  return e.run(e.default_cred(), [](Compound& k) { return encode_putrootfh(k); },
               [](ReplyReader& r) {
                 uint32_t st;
                 return r.results_left() ? decode_status_only(r, OP_PUTROOTFH, &st) : 0;
               });
}

class Nfs41Delay : public ::testing::TestWithParam<IoBackend> {
 protected:
  Options options(int port) const {
    Options o;
    o.addr = "127.0.0.1";
    o.port = port;
    o.export_path = "/export";
    o.io = GetParam();
    o.timeout_ms = 5000;
    return o;
  }
};

// A hard mount retries every DELAY with a growing pause and succeeds once the server says OK.
void delays_then_ok(const Options& o, FakeNfs41Server& srv, FakeNfs41Server::DelayAt at) {
  std::unique_ptr<Engine> e;
  std::string why;
  ASSERT_EQ(Engine::open(o, &e, &why), 0) << why;
  const Stats before = e->stats();
  srv.script(4, at);
  auto t0 = Clock::now();
  EXPECT_EQ(putrootfh(*e), 0);
  double took = ms_between(t0, Clock::now());
  auto arr = srv.arrivals();
  ASSERT_EQ(arr.size(), 5u);  // 4 DELAYs, then the OK
  EXPECT_EQ(srv.delays_sent(), 4);
  const Stats s = e->stats();
  EXPECT_EQ(s.delays - before.delays, 4u);
  EXPECT_EQ(s.retries - before.retries, 4u);
  // Backoff: every retry waits (also the first), and the waits grow.
  std::vector<double> gaps;
  for (size_t i = 1; i < arr.size(); ++i) gaps.push_back(ms_between(arr[i - 1], arr[i]));
  // The engine sleeps 10 ms, doubling: each gap is at least that (load only adds to it).
  EXPECT_GE(gaps[0], 9.0) << "the first retry after DELAY went out without a pause";
  for (size_t i = 1; i < gaps.size(); ++i) EXPECT_GE(gaps[i], 9.0 * (1 << i)) << "gap " << i;
  std::printf("DELAY x4 then OK (%s): retry gaps %.1f %.1f %.1f %.1f ms, total %.0f ms\n",
              at == FakeNfs41Server::DelayAt::kOp ? "op" : "SEQUENCE", gaps[0], gaps[1], gaps[2],
              gaps[3], took);
  EXPECT_EQ(e->shutdown(), 0);
}

TEST_P(Nfs41Delay, OpDelayIsRetriedWithBackoffThenSucceeds) {
  FakeNfs41Server srv;
  delays_then_ok(options(srv.port()), srv, FakeNfs41Server::DelayAt::kOp);
}

TEST_P(Nfs41Delay, SequenceDelayIsRetriedWithBackoffThenSucceeds) {
  FakeNfs41Server srv;
  delays_then_ok(options(srv.port()), srv, FakeNfs41Server::DelayAt::kSequence);
}

// Soft: a server that answers DELAY forever makes the call fail with EIO after about
// timeout x (retrans + 1), with a bounded number of retries (no busy loop).
TEST_P(Nfs41Delay, SoftMountEndlessDelayEndsInEio) {
  FakeNfs41Server srv;
  Options o = options(srv.port());
  o.hard = false;
  o.timeout_ms = 400;
  o.retrans = 1;
  std::unique_ptr<Engine> e;
  std::string why;
  ASSERT_EQ(Engine::open(o, &e, &why), 0) << why;
  srv.script(1000000, FakeNfs41Server::DelayAt::kOp);
  auto t0 = Clock::now();
  EXPECT_EQ(putrootfh(*e), -EIO);
  double took = ms_between(t0, Clock::now());
  size_t n = srv.arrivals().size();
  std::printf("soft, DELAY forever: EIO after %.0f ms and %zu attempts\n", took, n);
  EXPECT_GE(took, 790.0);
  EXPECT_LT(took, 2000.0);  // the last pause is cut to the budget, not a whole backoff
  EXPECT_GE(n, 3u);
  EXPECT_LE(n, 15u);
  srv.script(0, FakeNfs41Server::DelayAt::kOp);
  EXPECT_EQ(putrootfh(*e), 0);  // the server answers again: so does the engine
  EXPECT_EQ(e->shutdown(), 0);
}

INSTANTIATE_TEST_SUITE_P(Backends, Nfs41Delay,
                         ::testing::Values(IoBackend::kUring, IoBackend::kEpoll),
                         [](const ::testing::TestParamInfo<IoBackend>& i) {
                           return std::string(i.param == IoBackend::kUring ? "uring" : "epoll");
                         });

}  // namespace
