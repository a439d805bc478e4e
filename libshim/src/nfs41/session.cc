// Session life of the NFSv4.1 engine: client id, session, connections bound to it,
// the SEQUENCE'd compound with its retries and recoveries, lease renewal, teardown.
//
// Recovery as run() does it (tests/nfs41 shows each): DELAY (at SEQUENCE or an op) is
// resent as a new request after 10 ms, doubling to 1 s; a soft mount gives -EIO when
// timeout x (retrans + 1) is used up (delay_test.cc). A new client id (server restart)
// first reclaims, before RECLAIM_COMPLETE: OPEN CLAIM_PREVIOUS of every open file, then
// LOCK reclaim of every held range (RFC 8881 8.4.2; grace_test.cc, reclaim_test.cc).
// What the server refuses to reclaim (NO_GRACE: a graceless server, or a client id lost
// without a restart) is re-opened with CLAIM_FH after RECLAIM_COMPLETE, and its locks are
// reported lost by lock.cc. Other new state in the grace period is answered GRACE, polled
// every 0.5 s until the period ends (grace_test.cc).
#include <arpa/inet.h>
#include <netdb.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <thread>
#include <utility>

#include "internal.h"
#include "nfsshim/log.h"
#include "nfsshim/nfs4/constants.h"
#include "nfsshim/nfs4/nfsstat4.h"
#include "nfsshim/nfs4/ops_attr.h"
#include "nfsshim/nfs4/ops_fh.h"
#include "nfsshim/nfs4/ops_session.h"
#include "nfsshim/rpc/record_marking.h"

namespace nfsshim::nfs41 {

using namespace nfs4;

namespace {
thread_local bool tls_in_recovery = false;
thread_local bool tls_recovery_lost = false;  // recovery_lost()
struct RecoveryScope {
  RecoveryScope() { tls_in_recovery = true; }
  ~RecoveryScope() { tls_in_recovery = false; }
};
std::atomic<uint64_t> g_instance{0};

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }
// Teardown waits this long at most for each reply (and one call of a dead server).
constexpr int kTeardownTimeoutMs = 5000;
// How soon a call already waiting sees a shutdown: it waits in slices of this.
constexpr int64_t kWaitSliceMs = 200;
}  // namespace

bool recovery_lost() { return tls_recovery_lost; }

struct Engine::Attempt {
  SlotTable::Ticket t;
  uint64_t session_gen = 0, client_gen = 0;
  CallPtr call;
  Conn* conn = nullptr;     // where CALL was sent
  int timeouts = 0;
  bool replayed = false;    // sent again on its slot after a lost connection
  bool reply_lost = false;  // sent, and its connection lost before the reply: maybe done
  int replay_delays = 0;    // DELAY answers to that replay
};

struct Engine::Step {
  bool retry = false;
  int rc = 0;
  bool delay = false;   // the server said DELAY: pause before the first resend too
  bool waited = false;  // finish() has paused already (GRACE polls at its own pace)
  uint32_t said = 0;    // with delay: the status that asked for it (for the log)
};

int options_from_url(const nfs::NfsUrl& u, Options* out, std::string* why) {
  if (u.vers_major != 4 || u.vers_minor != 1) {
    *why = "the NFSv4.1 engine needs vers=4.1";
    return -EINVAL;
  }
  Options o;
  o.addr = u.host;
  in_addr a4;
  if (inet_pton(AF_INET, u.host.c_str(), &a4) != 1) {
    // A name: its first IPv4 address (the transport speaks IPv4 only for now).
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    int rc = getaddrinfo(u.host.c_str(), nullptr, &hints, &res);
    if (rc != 0 || !res) {
      *why = "cannot resolve '" + u.host + "' to an IPv4 address: " + gai_strerror(rc);
      return -EHOSTUNREACH;
    }
    char buf[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr, buf, sizeof buf);
    freeaddrinfo(res);
    o.addr = buf;
  }
  o.port = u.nfsport > 0 ? u.nfsport : 2049;
  o.export_path = u.export_path;
  o.nconnect = u.nconnect;
  o.io = u.io;
  o.rsize = u.rsize;
  o.wsize = u.wsize;
  o.hard = u.hard;
  o.timeout_ms = u.timeo_ds * 100;
  o.retrans = u.retrans;
  if (u.uid >= 0) o.uid = static_cast<uint32_t>(u.uid);
  if (u.gid >= 0) o.gid = static_cast<uint32_t>(u.gid);
  *out = o;
  return 0;
}

nfs4::Stateid4 OpenFile::stateid() const {
  std::lock_guard<std::mutex> g(mu_);
  return stateid_;
}

int Engine::open(const Options& o, std::unique_ptr<Engine>* out, std::string* why) {
  if (o.nconnect < 1 || o.nconnect > 16) {
    *why = "nconnect must be 1..16, got " + std::to_string(o.nconnect);
    return -EINVAL;
  }
  if (o.slots < 1 || o.slots > SlotTable::kMaxSlots) {
    *why = "slots must be 1..1024";
    return -EINVAL;
  }
  std::unique_ptr<Engine> e(new Engine);
  e->o_ = o;
  if (int rv = e->start(why); rv < 0) return rv;
  *out = std::move(e);
  return 0;
}

Engine::~Engine() { shutdown(); }

int Engine::timeout_ms() const {
  return stopping_.load() ? std::min(o_.timeout_ms, kTeardownTimeoutMs) : o_.timeout_ms;
}

int Engine::wait_reply(Call& c) const {
  const int64_t t0 = now_ms();
  for (;;) {
    const int64_t left = t0 + timeout_ms() - now_ms();
    if (left <= 0) return -ETIMEDOUT;
    if (c.wait(static_cast<int>(std::min(left, kWaitSliceMs))) == 0) return 0;
  }
}

Cred Engine::default_cred() const {
  Cred c;
  c.uid = o_.uid;
  c.gid = o_.gid;
  return c;
}

uint64_t Engine::restart_generation() const {
  std::lock_guard<std::mutex> g(mu_);
  return client_gen_;
}

nfs::IoBackend Engine::backend() const {
  return conns_.empty() ? nfs::IoBackend::kAuto : conns_[0]->backend();
}

rpc::Credential Engine::rpc_cred(const Cred& c) const {
  rpc::Credential r;
  r.flavor = rpc::kAuthSys;
  r.sys.stamp = 0;
  r.sys.machinename = "nfsshim";
  r.sys.uid = c.uid;
  r.sys.gid = c.gid;
  for (size_t i = 0; i < c.groups.size() && i < rpc::kMaxAuthSysGids; ++i)
    r.sys.gids.push_back(c.groups[i]);
  return r;
}

int Engine::start(std::string* why) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  // Unique per engine instance: two mounts from one process are two clients.
  owner_id_ = std::string("nfsshim41:") + host + ":" + std::to_string(getpid()) + ":" +
              std::to_string(time(nullptr)) + ":" + std::to_string(g_instance.fetch_add(1));
  uint64_t boot = static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  std::memcpy(boot_verf_.data(), &boot, 8);
  xid_.store(static_cast<uint32_t>(boot ^ (boot >> 32)) | 1);

  Conn::Hooks hooks;
  hooks.make_bind = [this] { return make_bind(); };
  hooks.check_bind = [this](const rpc::Record& r) { return check_bind(r); };
  // Loop threads as the NFSv3 engine has them (transport.h, ConnLoop). Every socket is
  // connected before its thread starts serving it.
  const int nloops = nfs::loop_threads_for(o_.nconnect);
  for (int i = 0; i < nloops; ++i) {
    loops_.emplace_back(new ConnLoop());
    if (int rv = loops_.back()->create(o_.io, why); rv < 0) return rv;
  }
  for (int i = 0; i < o_.nconnect; ++i) {
    conns_.emplace_back(new Conn(i, o_.addr, o_.port, hooks));
    if (int rv = conns_.back()->attach(loops_[static_cast<size_t>(i % nloops)].get(), why); rv < 0)
      return rv;
  }
  for (auto& l : loops_) l->start();
  if (int rv = exchange_id(why); rv != 0) return rv < 0 ? rv : nfs4_errno(rv);
  if (int rv = create_session(why); rv != 0) return rv < 0 ? rv : nfs4_errno(rv);
  // The other sockets were connected before the session existed: bind them now.
  for (size_t i = 1; i < conns_.size(); ++i) conns_[i]->rebind();
  if (int rv = reclaim_complete(); rv < 0) {
    *why = "RECLAIM_COMPLETE failed";
    return rv;
  }
  {
    std::lock_guard<std::mutex> g(mu_);
    settled_gen_ = client_gen_;
  }
  if (int rv = read_lease_and_root(why); rv < 0) return rv;
  {
    std::lock_guard<std::mutex> g(mu_);
    uint32_t io_max = maxreq_ > 1024 ? maxreq_ - 1024 : maxreq_;  // room for the ops
    wsize_ = std::max<uint32_t>(4096, std::min(o_.wsize, io_max));
    uint32_t rd_max = maxresp_ > 1024 ? maxresp_ - 1024 : maxresp_;
    rsize_ = std::max<uint32_t>(4096, std::min(o_.rsize, rd_max));
  }
  last_ok_ms_.store(now_ms());
  renewer_ = std::thread([this] { renew_main(); });
  return 0;
}

int Engine::bare(size_t conn, const Build& build, const Decode& decode, std::string* why) {
  for (int attempt = 0;; ++attempt) {
    Compound comp(Compound::Framed{}, next_xid(), rpc_cred(Cred{}));
    if (int rc = build(comp); rc < 0) return rc;
    auto call = std::make_shared<Call>();
    call->xid = comp.xid();
    if (int rc = comp.finish_record(&call->wire); rc < 0) return rc;
    conns_[conn]->submit(call);
    if (call->wait(std::min(timeout_ms(), 10000)) < 0) {
      *why = "no reply from the server";
      return -ETIMEDOUT;
    }
    if (call->err == -ECONNRESET && attempt < 5) continue;
    if (call->err < 0) {
      *why = std::string("transport: ") + std::strerror(-call->err);
      return call->err;
    }
    rpc::XdrDecoder d(call->reply);
    rpc::ReplyHeader h;
    if (int rc = decode_compound_rpc(d, call->xid, &h); rc != 0) {
      *why = d.ok() ? "RPC error" : d.error();
      return rc < 0 ? rc : -EIO;
    }
    ReplyReader r(d);
    if (r.begin() < 0 || decode(r) < 0 || r.finish() < 0) {
      *why = std::string("malformed reply: ") + d.error();
      return -EIO;
    }
    if (r.status() != 0) *why = nfs4_status_name(r.status());
    return static_cast<int>(r.status());
  }
}

int Engine::exchange_id(std::string* why) {
  ExchangeIdRes ex;
  int st = bare(0,
      [&](Compound& c) {
        ExchangeIdArgs a;
        a.verifier = boot_verf_;
        a.owner_id.assign(owner_id_.begin(), owner_id_.end());
        a.flags = EXCHGID4_FLAG_SUPP_MOVED_REFER | EXCHGID4_FLAG_BIND_PRINC_STATEID;
        a.send_impl_id = true;
        a.impl_id.domain = "nfsshim.invalid";
        a.impl_id.name = "nfsshim nfs41 engine";
        return encode_exchange_id(c, a);
      },
      [&](ReplyReader& r) { return decode_exchange_id(r, &ex); }, why);
  if (st != 0) {
    *why = "EXCHANGE_ID: " + *why;
    return st;
  }
  std::lock_guard<std::mutex> g(mu_);
  clientid_ = ex.clientid;
  cs_seq_ = ex.sequenceid;
  ++client_gen_;
  return 0;
}

int Engine::create_session(std::string* why) {
  CreateSessionRes cs;
  uint64_t clientid;
  uint32_t seq;
  {
    std::lock_guard<std::mutex> g(mu_);
    clientid = clientid_;
    seq = cs_seq_;
  }
  int st = bare(0,
      [&](Compound& c) {
        CreateSessionArgs a;
        a.clientid = clientid;
        a.sequence = seq;
        a.fore = default_fore_channel(o_.slots);
        a.fore.maxrequestsize = a.fore.maxresponsesize = std::max(o_.rsize, o_.wsize) + 4096;
        a.back = default_back_channel();
        a.cb_program = 0x40000000;
        a.cb_sec = rpc_cred(Cred{});
        return encode_create_session(c, a);
      },
      [&](ReplyReader& r) { return decode_create_session(r, &cs); }, why);
  if (st != 0) {
    *why = "CREATE_SESSION: " + *why;
    return st;
  }
  std::lock_guard<std::mutex> g(mu_);
  cs_seq_ = seq + 1;
  sessionid_ = cs.sessionid;
  slots_.reset(cs.fore.maxrequests);
  slots_granted_ = cs.fore.maxrequests;
  maxops_ = cs.fore.maxoperations;
  maxreq_ = cs.fore.maxrequestsize;
  maxresp_ = cs.fore.maxresponsesize;
  have_session_ = true;
  ++session_gen_;
  slot_cv_.notify_all();
  SHIM_LOG_INFO("nfs41: session on {}:{}: {} slots, maxreq {}, maxresp {}", o_.addr, o_.port,
                slots_granted_, maxreq_, maxresp_);
  return 0;
}

int Engine::reclaim_complete() {
  int rv = run(default_cred(), [](Compound& c) { return encode_reclaim_complete(c, false); },
               [](ReplyReader& r) {
                 uint32_t st;
                 return r.results_left() ? decode_status_only(r, OP_RECLAIM_COMPLETE, &st) : 0;
               });
  return rv == -EEXIST ? 0 : rv;  // COMPLETE_ALREADY after a replay
}

int Engine::read_lease_and_root(std::string* why) {
  std::vector<std::string> comps;
  for (size_t i = 0; i < o_.export_path.size();) {
    size_t j = o_.export_path.find('/', i);
    if (j == std::string::npos) j = o_.export_path.size();
    if (j > i) comps.push_back(o_.export_path.substr(i, j - i));
    i = j + 1;
  }
  Bitmap4 want;
  want.set(FATTR4_LEASE_TIME);
  GetfhRes gf;
  GetattrRes ga;
  int rv = run(default_cred(),
      [&](Compound& c) {
        encode_putrootfh(c);
        for (auto& s : comps)
          if (int rc = encode_lookup(c, s); rc < 0) return rc;
        encode_getfh(c);
        return encode_getattr(c, want);
      },
      [&](ReplyReader& r) {
        uint32_t st;
        if (r.results_left() && decode_status_only(r, OP_PUTROOTFH, &st) < 0) return -EBADMSG;
        for (size_t i = 0; i < comps.size(); ++i)
          if (r.results_left() && decode_status_only(r, OP_LOOKUP, &st) < 0) return -EBADMSG;
        if (r.results_left() && decode_getfh(r, &gf) < 0) return -EBADMSG;
        if (r.results_left() && decode_getattr(r, want, &ga) < 0) return -EBADMSG;
        return 0;
      });
  if (rv < 0) {
    *why = "export '" + o_.export_path + "' on " + o_.addr + ": " + std::strerror(-rv);
    return rv;
  }
  root_.data.assign(gf.fh.begin(), gf.fh.end());
  std::lock_guard<std::mutex> g(mu_);
  if (ga.attrs.present.test(FATTR4_LEASE_TIME) && ga.attrs.lease_time > 0)
    lease_s_ = ga.attrs.lease_time;
  return 0;
}

CallPtr Engine::make_bind() {
  SessionId sid;
  {
    std::lock_guard<std::mutex> g(mu_);
    if (!have_session_) return nullptr;
    sid = sessionid_;
  }
  Compound comp(Compound::Framed{}, next_xid(), rpc_cred(Cred{}));
  encode_bind_conn_to_session(comp, sid, CDFC4_FORE);
  auto call = std::make_shared<Call>();
  call->xid = comp.xid();
  if (comp.finish_record(&call->wire) < 0) return nullptr;
  return call;
}

int Engine::check_bind(const rpc::Record& reply) {
  rpc::XdrDecoder d(reply);
  rpc::ReplyHeader h;
  uint32_t xid = reply.size() >= 4 ? (uint32_t{reply[0]} << 24) | (uint32_t{reply[1]} << 16) |
                                         (uint32_t{reply[2]} << 8) | reply[3]
                                   : 0;
  if (int rc = decode_compound_rpc(d, xid, &h); rc != 0) return rc < 0 ? rc : -EIO;
  ReplyReader r(d);
  BindConnRes bc;
  if (r.begin() < 0 || decode_bind_conn_to_session(r, &bc) < 0 || r.finish() < 0) return -EBADMSG;
  return static_cast<int>(r.status());
}

Conn* Engine::pick() {
  // Least loaded among connected sockets; any socket if none is up (the call waits there).
  Conn* best = nullptr;
  bool best_up = false;
  static std::atomic<size_t> rr{0};
  size_t start = rr.fetch_add(1);
  for (size_t k = 0; k < conns_.size(); ++k) {
    Conn* c = conns_[(start + k) % conns_.size()].get();
    bool up = c->up();
    if (!best || (up && !best_up) || (up == best_up && c->inflight() < best->inflight())) {
      best = c;
      best_up = up;
    }
  }
  return best;
}

int Engine::begin(const Cred& c, const Build& build, bool cachethis, Attempt* a, bool wait,
                  const std::shared_ptr<ReadSink>& sink) {
  SessionId sid;
  {
    std::unique_lock<std::mutex> g(mu_);
    for (;;) {
      if ((!recovering_ || tls_in_recovery) && slots_.acquire(&a->t) == 0) break;
      if (!wait) return -EAGAIN;
      slot_cv_.wait_for(g, std::chrono::milliseconds(500));
    }
    a->session_gen = session_gen_;
    a->client_gen = client_gen_;
    sid = sessionid_;
    peak_slots_ = std::max(peak_slots_, slots_.in_use());
  }
  Compound comp(Compound::Framed{}, next_xid(), rpc_cred(c));
  SequenceArgs seq;
  seq.sessionid = sid;
  seq.sequenceid = a->t.seqid;
  seq.slotid = a->t.slotid;
  seq.highest_slotid = a->t.highest_slotid;
  seq.cachethis = cachethis;
  encode_sequence(comp, seq);
  auto call = std::make_shared<Call>();
  call->xid = comp.xid();
  call->sink = sink;
  int rc = build(comp);
  if (rc >= 0) rc = comp.finish_record(&call->wire, &call->tail);
  if (rc < 0) {
    std::lock_guard<std::mutex> g(mu_);
    slots_.on_sequence_error(a->t.slotid, NFS4ERR_DELAY);  // never sent: seqid not used
    slot_cv_.notify_one();
    return rc;
  }
  a->call = std::move(call);
  calls_.fetch_add(1);
  a->conn = pick();
  a->conn->submit(a->call);
  return 0;
}

Engine::Step Engine::finish(Attempt* a, const Decode& decode) {
  // What SEQUENCE's errors and the ops' errors both call for: DELAY, a new session, a new
  // client id. False if STATUS calls for none of them.
  auto shared_recovery = [&](uint32_t status, Step* out) {
    switch (nfs4_recovery(status)) {
      case Recovery::kRetryLater:
        delays_.fetch_add(1);
        *out = {true, 0, true, false, status};
        return true;
      case Recovery::kNewSession:
        if (int rc = recover_session(a->session_gen); rc < 0) *out = {false, rc};
        else *out = {true, 0};
        return true;
      case Recovery::kNewClientId:
        if (int rc = recover_clientid(a->client_gen); rc < 0) *out = {false, rc};
        else *out = {true, 0};
        return true;
      default:
        return false;
    }
  };
  auto release_abandon = [&] {
    if (a->call->sink) a->call->sink->detach();  // a late reply must not write there
    std::lock_guard<std::mutex> g(mu_);
    if (a->session_gen == session_gen_) slots_.abandon(a->t.slotid);
    slot_cv_.notify_one();
  };
  for (;;) {
    if (wait_reply(*a->call) < 0) {
      timeouts_.fetch_add(1);
      if (!hard() && ++a->timeouts > retrans()) {
        not_responding_.store(true);  // for shutdown(): the next call need not wait too
        release_abandon();
        return {false, -EIO};
      }
      if (!not_responding_.exchange(true))
        SHIM_LOG_WARN("nfs41: server {}:{} not responding, still trying on a new connection", o_.addr, o_.port);
      // As the kernel client does: the connection may be dead without a reset (the server
      // lost power); dropping it fails the call as lost, and it is replayed below.
      if (a->conn) a->conn->drop();
      continue;
    }
    if (a->call->err == 0 && lose_next_reply_.load(std::memory_order_relaxed) &&
        lose_next_reply_.exchange(false)) {  // a plain load first: no atomic write per compound
      // Test hook: the server ran it, the reply is gone with the session.
      a->reply_lost = true;
      if (lost_reply_then_) std::exchange(lost_reply_then_, nullptr)();
      if (int rc = recover_session(a->session_gen); rc < 0) return {false, rc};
      return {true, 0};
    }
    if (a->call->err == 0) break;
    a->reply_lost = true;
    if (a->call->err == -ESHUTDOWN) {  // shutdown() stopped the connections: none to replay on
      release_abandon();
      return {false, -EIO};
    }
    // Connection lost: the same slot and seqid on another (or the reconnected) socket.
    if (!hard() && ++a->timeouts > retrans() + 3) {
      release_abandon();
      return {false, -EIO};
    }
    {
      std::lock_guard<std::mutex> g(mu_);
      if (a->session_gen != session_gen_) return {true, 0};  // new session: start over
      slots_.on_connection_lost(a->t.slotid);
      slots_.replay(a->t.slotid, &a->t);
    }
    replays_.fetch_add(1);
    a->replayed = true;
    a->call = a->call->again();
    a->conn = pick();
    a->conn->submit(a->call);
  }

  rpc::XdrDecoder d(a->call->reply);
  rpc::ReplyHeader h;
  if (int rc = decode_compound_rpc(d, a->call->xid, &h); rc != 0) {
    release_abandon();
    return {false, rc < 0 ? rc : -EIO};
  }
  ReplyReader r(d);
  if (a->call->sink) r.set_placed(a->call->sink->placed);  // written before the call completed
  SequenceRes sr;
  if (r.begin() < 0 || decode_sequence(r, &sr) < 0) {
    release_abandon();
    return {false, -EIO};
  }
  if (sr.status == NFS4ERR_DELAY && a->replayed && a->replay_delays < 50) {
    // The original is still running on the server, which holds this slot's seqid: send
    // the same replay again later. A new request would reuse the seqid and be taken for
    // a replay of the original.
    sleep_ms(std::min(10 << std::min(a->replay_delays, 6), 1000));
    ++a->replay_delays;
    delays_.fetch_add(1);
    a->call = a->call->again();
    a->conn = pick();
    a->conn->submit(a->call);
    return finish(a, decode);
  }
  if (sr.status != 0) {
    bool slot_retry = false;
    {
      std::lock_guard<std::mutex> g(mu_);
      if (a->session_gen == session_gen_) {
        if (sr.status == NFS4ERR_DELAY && a->replayed) {
          // Replays of a request the server still runs, given up (above): its seqid is
          // the server's. Stepping it back would give it to another request, which the
          // server answers with the original's reply once that finishes.
          slots_.give_up_replay(a->t.slotid);
          slot_retry = true;
          SHIM_LOG_WARN("nfs41: the server still runs a request replayed on slot {} after {} "
                        "DELAYs: sent anew; the slot is used last until it answers again",
                        a->t.slotid, a->replay_delays);
        } else {
          slot_retry = slots_.on_sequence_error(a->t.slotid, sr.status);
        }
      }
      slot_cv_.notify_one();
    }
    if (Step out; shared_recovery(sr.status, &out)) return out;
    switch (nfs4_recovery(sr.status)) {
      case Recovery::kSlotResync:
        if (slot_retry) return {true, 0};
        SHIM_LOG_WARN("nfs41: SEQUENCE {} on slot {}", nfs4_status_name(sr.status), a->t.slotid);
        return {false, -EIO};
      case Recovery::kRetryUncached:
        return {true, 0};
      case Recovery::kReconnect:
        for (auto& c : conns_) c->rebind();
        return {true, 0};
      default:
        return {false, nfs4_errno(sr.status)};
    }
  }
  {
    std::lock_guard<std::mutex> g(mu_);
    if (a->session_gen == session_gen_) {
      slots_.on_sequence_ok(a->t.slotid, sr);
      uint32_t flags = slots_.take_status_flags();
      if (seq4_state_revoked(flags))
        SHIM_LOG_WARN("nfs41: server revoked state (flags 0x{:x})", flags);
    }
    slot_cv_.notify_one();
  }
  last_ok_ms_.store(now_ms());
  if (not_responding_.load(std::memory_order_relaxed) && not_responding_.exchange(false))
    SHIM_LOG_WARN("nfs41: server {}:{} OK", o_.addr, o_.port);
  if (decode(r) < 0 || (r.status() == 0 && r.finish() < 0)) {
    SHIM_LOG_WARN("nfs41: malformed reply: {}", d.error());
    return {false, -EIO};
  }
  uint32_t st = r.status();
  if (st == 0) return {false, 0};
  if (Step out; shared_recovery(st, &out)) return out;
  switch (nfs4_recovery(st)) {
    case Recovery::kWaitGrace:
      // The server restarted and only takes reclaims until its grace period ends: new
      // state (and re-opens whose reclaim was refused) waits the period out.
      if (grace_waits_.fetch_add(1) % 20 == 0)
        SHIM_LOG_WARN("nfs41: server {}:{} is in its grace period, waiting", o_.addr, o_.port);
      sleep_ms(500);
      return {true, 0, false, true};
    case Recovery::kRecoverStateid: {
      bool unsettled;
      {
        std::lock_guard<std::mutex> g(mu_);
        if (a->client_gen != client_gen_) return {true, 0};  // re-opened since: new stateids
        unsettled = settled_gen_ != client_gen_;
      }
      // A recovery that got a new client id but stopped before the files were open again
      // (the server went quiet): finish it, or every open file fails for good. Not from the
      // recovery's own calls: a reclaim answered with a stateid error is refused (the
      // server did not restart again; starting over would get the same answer forever).
      if (unsettled && !tls_in_recovery) {
        if (int rc = recover_clientid(a->client_gen); rc < 0) return {false, rc};
        return {true, 0};
      }
      return {false, nfs4_errno(st)};
    }
    default:
      return {false, nfs4_errno(st)};
  }
}

int Engine::run(const Cred& c, const Build& build, const Decode& decode, bool cachethis,
                bool* rerun) {
  const int64_t t0 = now_ms();
  // Soft: the whole budget is timeout x (retrans + 1); read each time, as shutdown()
  // makes a hard call soft and shortens its budget.
  auto soft_left = [&] { return t0 + int64_t{timeout_ms()} * (retrans() + 1) - now_ms(); };
  int backoff = 10;
  bool told = false;
  for (int attempt = 0;; ++attempt) {
    Attempt a;
    if (int rc = begin(c, build, cachethis, &a, true); rc < 0) return rc;
    Step s = finish(&a, decode);
    if (!s.retry) {
      if (told) SHIM_LOG_WARN("nfs41: server {}:{} answered the call after {} ms", o_.addr, o_.port, now_ms() - t0);
      return s.rc;
    }
    // The next attempt is a new request (new slot or seqid): no reply cache covers it.
    if (a.reply_lost && rerun) *rerun = true;
    retries_.fetch_add(1);
    // A server may ask us to wait (DELAY) for as long as it likes, and a hard mount waits
    // as the kernel does, but not without a word: once per call past the timeout.
    if (s.delay && !told && now_ms() - t0 >= timeout_ms()) {
      told = true;
      SHIM_LOG_WARN("nfs41: server {}:{} has answered {} for {} ms; {}", o_.addr, o_.port,
                    nfs4_status_name(s.said), now_ms() - t0,
                    hard() ? "still trying (hard mount)" : "EIO at the soft timeout");
    }
    if (!hard() && soft_left() <= 0) return -EIO;
    // Backoff 10 ms doubling to 1 s. A DELAY is waited on from the first resend (the
    // server asked for it); other retries (new session, re-opened state) go at once the
    // first time.
    if (!s.waited && (attempt > 0 || s.delay)) {
      int64_t pause = backoff;
      if (!hard()) pause = std::min<int64_t>(pause, soft_left());
      if (pause > 0) sleep_ms(static_cast<int>(pause));
      backoff = std::min(backoff * 2, 1000);
      if (!hard() && soft_left() <= 0) return -EIO;
    }
  }
}

int Engine::run_parallel(const Cred& c, const std::vector<Piece>& pieces) {
  // Every piece starts at once while slots are free; with none free, the oldest piece is
  // finished first (waiting for a slot while holding unfinished ones could deadlock).
  // OPEN holds the started ones, oldest first from NEXT; one allocation for them all (an
  // op is often one piece: a deque and an Attempt each were 3 of its ~35 allocations).
  std::vector<std::pair<size_t, Attempt>> open;
  open.reserve(pieces.size());  // never reallocated: finish() works on an element
  size_t next = 0;
  int first_err = 0;
  auto finish_one = [&] {
    auto& [i, a] = open[next++];
    Step s = finish(&a, pieces[i].decode);
    if (s.retry && s.delay) sleep_ms(10);  // run()'s first resend would not wait
    int rc = s.retry ? run(c, pieces[i].build, pieces[i].decode, pieces[i].cachethis) : s.rc;
    if (rc != 0 && first_err == 0) first_err = rc;
  };
  for (size_t i = 0; i < pieces.size(); ++i) {
    Attempt a;
    int rc = begin(c, pieces[i].build, pieces[i].cachethis, &a, next == open.size(), pieces[i].sink);
    while (rc == -EAGAIN && next < open.size()) {
      finish_one();
      rc = begin(c, pieces[i].build, pieces[i].cachethis, &a, next == open.size(), pieces[i].sink);
    }
    if (rc < 0) {
      if (first_err == 0) first_err = rc;
      continue;
    }
    open.emplace_back(i, std::move(a));
  }
  while (next < open.size()) finish_one();
  return first_err;
}

int Engine::recover_session(uint64_t seen_gen) {
  if (tls_in_recovery) {  // the recovery's own call: new_client_locked starts over
    tls_recovery_lost = true;
    return -EIO;
  }
  std::lock_guard<std::mutex> rg(recovery_mu_);
  bool unsettled;
  {
    std::lock_guard<std::mutex> g(mu_);
    if (session_gen_ != seen_gen) return 0;  // another thread did it
    unsettled = settled_gen_ != client_gen_;
  }
  RecoveryScope scope;
  // The last client id recovery stopped after EXCHANGE_ID (no session, or no
  // RECLAIM_COMPLETE): a session alone would leave every open with its old stateid.
  if (unsettled) return new_client_locked();
  session_recoveries_.fetch_add(1);
  SHIM_LOG_WARN("nfs41: session lost, creating a new one");
  std::string why;
  int st;
  for (int tries = 0; (st = create_session(&why)) != 0 && wait_out(st, &tries, why);) {
  }
  if (st > 0 && nfs4_recovery(static_cast<uint32_t>(st)) == Recovery::kNewClientId)
    return new_client_locked();
  if (st != 0) {
    SHIM_LOG_ERROR("nfs41: {}", why);
    return st < 0 ? st : nfs4_errno(static_cast<uint32_t>(st));
  }
  for (size_t i = 1; i < conns_.size(); ++i) conns_[i]->rebind();
  return 0;
}

bool Engine::wait_out(int st, int* tries, const std::string& why) {
  // Recovery's calls are bare ones on connection 0 (a new session or client id comes
  // before any SEQUENCE'd call): a server that goes away again meanwhile must not turn a
  // hard mount's call into ETIMEDOUT. Nor must a DELAY (a server busy after its restart)
  // turn it into EAGAIN.
  const bool delay = st == static_cast<int>(NFS4ERR_DELAY);
  if (delay) {
    if (!hard() && *tries > retrans()) return false;  // soft: as often as a resend
  } else {
    switch (-st) {
      case ETIMEDOUT: case ECONNREFUSED: case ECONNRESET: case ECONNABORTED: case EPIPE:
      case ENOTCONN: case EHOSTUNREACH: case ENETUNREACH:
        break;
      default:
        return false;
    }
    if (!hard()) return false;
  }
  if (stopping_.load()) return false;  // unmounting: a server that is away must not hold it up
  // No reply: the connection may be dead without a reset (as in finish()); a new one.
  if (st == -ETIMEDOUT) conns_[0]->drop();
  if ((*tries)++ % 10 == 0) {
    if (delay)
      SHIM_LOG_WARN("nfs41: {} during recovery, waiting", why);
    else
      SHIM_LOG_WARN("nfs41: {}; server {}:{} not responding during recovery, still trying",
                    why, o_.addr, o_.port);
  }
  sleep_ms(std::min(100 << std::min(*tries, 5), 2000));
  return true;
}

int Engine::recover_clientid(uint64_t seen_gen) {
  if (tls_in_recovery) {
    tls_recovery_lost = true;
    return -EIO;
  }
  std::lock_guard<std::mutex> rg(recovery_mu_);
  {
    std::lock_guard<std::mutex> g(mu_);
    if (client_gen_ != seen_gen && settled_gen_ == client_gen_) return 0;  // done since
  }
  RecoveryScope scope;
  return new_client_locked();
}

int Engine::new_client_locked() {
  clientid_recoveries_.fetch_add(1);
  SHIM_LOG_WARN("nfs41: client id lost (server restart?): new client id, reclaiming files "
                "and locks");
  {
    std::lock_guard<std::mutex> g(mu_);
    recovering_ = true;  // others wait in begin() until the files are open again
  }
  const int64_t t0 = now_ms();
  const int64_t soft_ms = int64_t{o_.timeout_ms} * (o_.retrans + 1);  // as run()'s budget
  int st;
  for (int pass = 1;; ++pass) {
    bool again = false;
    st = new_client_pass(&again);
    if (!again) break;
    // The server restarted again before the recovery ended. A hard mount keeps going (the
    // call that ran into it may be a write-behind WRITE whose data is nowhere else); a soft
    // one within its budget.
    if (!hard() && now_ms() - t0 >= soft_ms) break;
    if (stopping_.load()) break;  // unmounting
    SHIM_LOG_WARN("nfs41: server {}:{} lost the new client id during recovery (restarted "
                  "again?): starting over (pass {})", o_.addr, o_.port, pass + 1);
    sleep_ms(std::min(10 << std::min(pass - 1, 7), 1000));
  }
  std::lock_guard<std::mutex> g(mu_);
  recovering_ = false;
  slot_cv_.notify_all();
  return st;
}

int Engine::new_client_pass(bool* again) {
  tls_recovery_lost = false;
  uint64_t from_gen;
  {
    std::lock_guard<std::mutex> g(mu_);
    from_gen = settled_gen_;
  }
  std::string why;
  int st;
  int tries = 0;
  while ((st = exchange_id(&why)) != 0 && wait_out(st, &tries, why)) {
  }
  if (st == 0) {
    while ((st = create_session(&why)) != 0 && wait_out(st, &tries, why)) {
    }
  }
  if (st != 0) {
    // STALE_CLIENTID at CREATE_SESSION: the server restarted again after EXCHANGE_ID.
    *again = st > 0 && nfs4_recovery(static_cast<uint32_t>(st)) == Recovery::kNewClientId;
    if (!*again) SHIM_LOG_ERROR("nfs41: {}", why);
    return st < 0 ? st : nfs4_errno(static_cast<uint32_t>(st));
  }
  for (size_t i = 1; i < conns_.size(); ++i) conns_[i]->rebind();
  // Reclaims only before RECLAIM_COMPLETE; everything else (CLAIM_FH) only after it.
  std::vector<Open> reclaimed, lost;
  reclaim_opens(&reclaimed, &lost);
  if (!recovery_lost()) reclaim_locks(reclaimed, from_gen);
  if (!recovery_lost()) st = reclaim_complete();
  if (recovery_lost()) {
    *again = true;
    return -EIO;
  }
  if (st != 0) return st;
  uint64_t gen;
  {
    std::lock_guard<std::mutex> g(mu_);
    settled_gen_ = gen = client_gen_;
  }
  settle_locks(gen);
  // The session is settled: a file that cannot be re-opened fails its own I/O, not the
  // unrelated call that ran into the restart.
  reopen(lost);
  // Lost again after RECLAIM_COMPLETE: the next pass reclaims under the new client id.
  if (recovery_lost()) {
    *again = true;
    return -EIO;
  }
  return 0;
}

void Engine::renew_main() {
  std::unique_lock<std::mutex> g(renew_mu_);
  while (!stopping_) {
    renew_cv_.wait_for(g, std::chrono::milliseconds(250));
    if (stopping_) break;
    uint32_t lease;
    {
      std::lock_guard<std::mutex> m(mu_);
      lease = lease_s_;
    }
    if (now_ms() - last_ok_ms_.load() < int64_t{lease} * 1000 / 3) continue;
    g.unlock();
    int rv = run(default_cred(), [](Compound&) { return 0; }, [](ReplyReader&) { return 0; });
    renewals_.fetch_add(1);
    if (rv < 0) SHIM_LOG_WARN("nfs41: lease renewal failed: {}", std::strerror(-rv));
    g.lock();
  }
}

int Engine::shutdown() {
  {
    std::lock_guard<std::mutex> g(renew_mu_);
    if (shut_down_) return 0;
    shut_down_ = true;
    stopping_.store(true);  // calls soft and short from now on, those waiting too
  }
  renew_cv_.notify_all();
  if (renewer_.joinable()) renewer_.join();  // its renewal ends within timeout_ms()
  bool have;
  {
    std::lock_guard<std::mutex> g(mu_);
    have = have_session_;
  }
  int first = 0;
  if (have && !conns_.empty()) first = release_server_state();
  for (auto& c : conns_) c->stop();
  return first;
}

int Engine::release_server_state() {
  int first = 0;
  auto note = [&](int rv) {
    if (rv != 0 && first == 0) first = rv < 0 ? rv : nfs4_errno(static_cast<uint32_t>(rv));
  };
  // The last call got no reply (the renewal's, a CLOSE's): the server is gone, and each
  // call left would wait a timeout for nothing. It drops our state when the lease ends.
  auto gone = [&] {
    if (!not_responding_.load()) return false;
    note(-ETIMEDOUT);
    return true;
  };
  if (gone()) return first;
  std::vector<Open> left;
  {
    std::lock_guard<std::mutex> g(opens_mu_);
    left.assign(open_files_.begin(), open_files_.end());
  }
  for (auto& f : left) {
    release_locks(f->cred_, f);  // CLOSE fails with NFS4ERR_LOCKS_HELD otherwise
    if (!gone()) note(close(f->cred_, f));
    if (gone()) return first;
  }
  std::string why;
  SessionId sid;
  uint64_t cid;
  {
    std::lock_guard<std::mutex> g(mu_);
    sid = sessionid_;
    cid = clientid_;
  }
  uint32_t st;
  int rv = bare(0, [&](Compound& c) { return encode_destroy_session(c, sid); },
                [&](ReplyReader& r) { return decode_status_only(r, OP_DESTROY_SESSION, &st); },
                &why);
  if (rv != 0) SHIM_LOG_WARN("nfs41: DESTROY_SESSION: {}", why);
  note(rv);
  if (rv == -ETIMEDOUT) return first;  // no reply (bare() leaves not_responding_ alone)
  rv = bare(0, [&](Compound& c) { return encode_destroy_clientid(c, cid); },
            [&](ReplyReader& r) { return decode_status_only(r, OP_DESTROY_CLIENTID, &st); },
            &why);
  if (rv != 0) SHIM_LOG_WARN("nfs41: DESTROY_CLIENTID: {}", why);
  note(rv);
  return first;
}

Stats Engine::stats() const {
  Stats s;
  s.calls = calls_.load();
  s.retries = retries_.load();
  s.delays = delays_.load();
  s.replays = replays_.load();
  s.timeouts = timeouts_.load();
  s.session_recoveries = session_recoveries_.load();
  s.clientid_recoveries = clientid_recoveries_.load();
  s.reopens = reopens_.load();
  s.reclaimed_opens = reclaimed_opens_.load();
  s.reclaimed_locks = reclaimed_locks_.load();
  s.renewals = renewals_.load();
  s.resent_bytes = resent_bytes_.load();
  s.resent_done = resent_done_.load();
  s.resent_exist = resent_exist_.load();
  for (auto& c : conns_) {
    s.calls_per_conn.push_back(c->calls());
    s.reconnects += c->reconnects();
    s.binds_ok += c->binds_ok();
    s.binds_failed += c->binds_failed();
    s.read_placed_bytes += c->placed_bytes();
    s.read_ring_recvs += c->ring_recvs();
  }
  for (auto& l : loops_) {
    nfs::LoopStats ls = l->stats();
    s.loop_syscalls += ls.syscalls;
    s.loop_iterations += ls.iterations;
  }
  std::lock_guard<std::mutex> g(mu_);
  s.slots_granted = slots_granted_;
  s.peak_slots = std::max(peak_slots_, slots_.peak_in_use());
  s.lease_s = lease_s_;
  s.maxrequest = maxreq_;
  s.maxresponse = maxresp_;
  return s;
}

void Engine::drop_connection_for_test(size_t i, bool on_next_call) {
  if (i < conns_.size()) conns_[i]->drop_for_test(on_next_call);
}

int Engine::conn_local_port(size_t i) const {
  return i < conns_.size() ? conns_[i]->local_port() : 0;
}

}  // namespace nfsshim::nfs41
