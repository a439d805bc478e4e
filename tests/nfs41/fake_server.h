// A scripted NFSv4.1 server on a loopback socket (record_server.h) for what ganesha does
// not do on demand: NFS4ERR_DELAY (delay_test.cc) and a refused reclaim after a restart
// (reclaim_refused_test.cc). It speaks just enough for the engine: EXCHANGE_ID,
// CREATE_SESSION, SEQUENCE, RECLAIM_COMPLETE, PUTROOTFH/LOOKUP/PUTFH/GETFH, GETATTR
// (lease_time, type, size), OPEN (CLAIM_NULL, CLAIM_FH, CLAIM_PREVIOUS), CLOSE,
// WRITE/READ (data kept per file), LOCK/LOCKU/FREE_STATEID (no conflicts: one client),
// DESTROY_*. Stateful ops check the stateid they carry (BAD/STALE/OLD_STATEID otherwise).
//
// DELAY: a compound of exactly SEQUENCE + PUTROOTFH is the scripted one, answered with
// DELAY (at the PUTROOTFH or at the SEQUENCE) the first N times, then OK. Another status
// can stand in for DELAY (RESOURCE).
//
// mute_next(): the connection of the next request goes silent (no reply to it or to any
// later request on it; the socket stays open, no reset), as a server that lost power; new
// connections are answered (BIND_CONN_TO_SESSION too).
//
// swallow_create_sessions(N): the next N CREATE_SESSIONs get no reply (their connection
// goes on answering the rest), as a server that went away again in the middle of recovery;
// optionally only those with the new client id (after EXCHANGE_ID).
// mute_at_create_session(): the connection of the next CREATE_SESSION goes silent for good
// (as mute_next()); new connections are answered.
// mute_all(): no request gets a reply from now on, on any connection, new ones too (a
// server gone for good without a reset). set_lease(): the lease_time the root lookup gets.
//
// READDIR (of the root), as script_readdir() says: by default a broken server that never
// says eof, one entry per reply whose cookie is the same every time, up to READDIR_LIMIT
// replies; then eof. kEmptyNoEof: no entries and no eof, every time. kChurn: the names a,
// gone, b, c (cookies 3..6; "gone" was removed mid-scan: its entry carries only
// rdattr_error NOENT if RDATTR_ERROR was asked for, else the whole READDIR fails NOENT as
// ganesha's does); replies [a, gone] and [b, c] + eof, but the first READDIR past cookie 0
// gets CHURN_STATUS (the directory changed under the listing).
//
// restart(): as a server that lost its state. The old session gets BADSESSION at
// SEQUENCE, CREATE_SESSION with the old client id STALE_CLIENTID, EXCHANGE_ID a new
// client id; stateids of before are STALE_STATEID. Until the client's RECLAIM_COMPLETE,
// OPEN CLAIM_PREVIOUS gets the scripted status (a new open stateid if NFS4_OK) and
// LOCK reclaim is granted; after it both get NO_GRACE. log() lists the stateful ops (and
// DESTROY_*) in the order they came, with what they carried and got, for the test to check.
// restart_after(): the server restarts again in the middle of the client's recovery
// (after an EXCHANGE_ID, or after a granted reclaim); delay_create_sessions(): the next
// CREATE_SESSIONs get NFS4ERR_DELAY.
#pragma once

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "nfsshim/nfs4/constants.h"
#include "nfsshim/nfs4/fattr4.h"
#include "nfsshim/nfs4/nfsstat4.h"
#include "nfsshim/nfs4/ops_open.h"
#include "nfsshim/nfs4/types.h"
#include "nfsshim/rpc/xdr_decoder.h"
#include "nfsshim/rpc/xdr_encoder.h"
#include "record_server.h"

namespace nfs41test {

class FakeNfs41Server : public RecordServer {
 public:
  using Clock = std::chrono::steady_clock;
  using Stateid4 = nfsshim::nfs4::Stateid4;
  enum class DelayAt { kOp, kSequence };

  // One stateful op (or a refused SEQUENCE / CREATE_SESSION) as the server saw it.
  struct Logged {
    uint32_t op = 0;
    int epoch = 0;             // restarts before it
    uint32_t status = 0;       // what it was answered
    std::string fh;            // the current fh (OPEN: the file opened)
    uint32_t claim = 0;        // OPEN
    bool reclaim = false;      // LOCK
    bool new_lock_owner = false;  // LOCK: open_to_lock_owner4 (SENT is the open stateid)
    Stateid4 sent;             // the stateid it carried (CLOSE, WRITE, READ, LOCK, LOCKU, FREE)
    Stateid4 given;            // the stateid it got (OPEN, LOCK, LOCKU, CLOSE)
  };

  FakeNfs41Server()
      : RecordServer([this](int fd, const std::vector<uint8_t>& rec, int) { return reply(fd, rec); }) {}
  ~FakeNfs41Server() override { stop(); }

  // The next DELAYS scripted compounds get STATUS (at AT), the later ones OK.
  void script(int delays, DelayAt at, uint32_t status = nfsshim::nfs4::NFS4ERR_DELAY) {
    std::lock_guard<std::mutex> g(mu_);
    delays_left_ = delays;
    at_ = at;
    delay_status_ = status;
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

  // Every session, client id and stateid is gone (files and their data stay); OPEN
  // CLAIM_PREVIOUS is answered RECLAIM_STATUS (for a file in BY_FH: its status there)
  // until the client's RECLAIM_COMPLETE.
  void restart(uint32_t reclaim_status, std::map<std::string, uint32_t> by_fh = {}) {
    std::lock_guard<std::mutex> g(mu_);
    restart_locked(reclaim_status, std::move(by_fh));
  }
  // Once the NTH answer of kind WHAT from now on is made, the server restarts as restart()
  // (same reclaim statuses) right after it: that reply still goes out.
  enum class Step { kExchangeId, kReclaimOpen, kReclaimLock };
  void restart_after(Step what, int nth) {
    std::lock_guard<std::mutex> g(mu_);
    restart_step_ = what;
    restart_countdown_ = nth;
  }
  void delay_create_sessions(int n) {
    std::lock_guard<std::mutex> g(mu_);
    cs_delays_ = n;
  }
  int epoch() {
    std::lock_guard<std::mutex> g(mu_);
    return epoch_;
  }

 private:
  void restart_locked(uint32_t reclaim_status, std::map<std::string, uint32_t> by_fh) {
    ++epoch_;
    clientid_ = kClientId + static_cast<uint64_t>(epoch_);
    sessions_.clear();
    live_.clear();
    in_reclaim_ = true;
    reclaim_status_ = reclaim_status;
    reclaim_by_fh_ = std::move(by_fh);
  }
  void step_done(Step what) {
    if (restart_countdown_ > 0 && what == restart_step_ && --restart_countdown_ == 0)
      restart_pending_ = true;
  }

 public:
  std::vector<Logged> log() {
    std::lock_guard<std::mutex> g(mu_);
    return log_;
  }
  int readdirs() {
    std::lock_guard<std::mutex> g(mu_);
    return readdirs_;
  }
  enum class Readdir { kNeverEnds, kEmptyNoEof, kChurn };
  void script_readdir(Readdir how, uint32_t churn_status = nfsshim::nfs4::NFS4ERR_NOT_SAME) {
    std::lock_guard<std::mutex> g(mu_);
    readdir_how_ = how;
    churn_status_ = churn_status;
  }
  // The cookie of each READDIR, in order.
  std::vector<uint64_t> readdir_cookies() {
    std::lock_guard<std::mutex> g(mu_);
    return readdir_cookies_;
  }
  void mute_next() {
    std::lock_guard<std::mutex> g(mu_);
    mute_next_ = true;
  }
  // NEW_CLIENT_ONLY: only CREATE_SESSIONs with the current client id count (not one
  // with the client id of before a restart, which gets STALE_CLIENTID).
  void swallow_create_sessions(int n, bool new_client_only = false) {
    std::lock_guard<std::mutex> g(mu_);
    swallow_cs_ = n;
    swallow_new_only_ = new_client_only;
  }
  void mute_at_create_session() {
    std::lock_guard<std::mutex> g(mu_);
    mute_at_cs_ = true;
  }
  void mute_all() {
    std::lock_guard<std::mutex> g(mu_);
    mute_all_ = true;
  }
  // Seconds; read by the engine at open (its renewals come after a third of it).
  void set_lease(uint32_t s) {
    std::lock_guard<std::mutex> g(mu_);
    lease_s_ = s;
  }
  int create_sessions_swallowed() {
    std::lock_guard<std::mutex> g(mu_);
    return cs_swallowed_;
  }
  int swallowed() {
    std::lock_guard<std::mutex> g(mu_);
    return swallowed_;
  }
  std::string data(const std::string& fh) {
    std::lock_guard<std::mutex> g(mu_);
    auto it = files_.find(fh);
    return it == files_.end() ? std::string() : std::string(it->second.begin(), it->second.end());
  }
  static std::string file_fh(const std::string& name) { return "fake-file:" + name; }
  // FH is gone from the server (another client removed it): stale from now on.
  void remove_file(const std::string& fh) {
    std::lock_guard<std::mutex> g(mu_);
    files_.erase(fh);
  }
  // READs answer bytes below AT only, and from AT on none, without eof (a broken server:
  // its file seems to end at AT although it is longer). Their count: empty_reads().
  void stall_reads_at(uint64_t at) {
    std::lock_guard<std::mutex> g(mu_);
    stall_at_ = at;
  }
  int empty_reads() {
    std::lock_guard<std::mutex> g(mu_);
    return empty_reads_;
  }

 private:
  using XdrDecoder = nfsshim::rpc::XdrDecoder;
  using XdrEncoder = nfsshim::rpc::XdrEncoder;
  enum class Kind { kOpen, kLock };
  struct Live {
    std::string fh;
    Kind kind;
    uint32_t seqid;
  };

  bool reply(int fd, const std::vector<uint8_t>& rec) {
    std::vector<uint8_t> out;
    bool ok;
    {
      std::lock_guard<std::mutex> g(mu_);  // one compound at a time: the state is simple
      if (std::exchange(mute_next_, false)) muted_.insert(fd);
      if (mute_all_ || muted_.count(fd)) {
        ++swallowed_;
        return true;  // no reply, the connection kept
      }
      ok = answer(rec, &out);
      if (std::exchange(restart_pending_, false)) restart_locked(reclaim_status_, reclaim_by_fh_);
      if (std::exchange(mute_this_, false)) {
        muted_.insert(fd);
        ++swallowed_;
        return true;
      }
      if (std::exchange(no_reply_, false)) return true;
    }
    if (!ok) {
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

  // A new stateid of this epoch for FH: other = epoch, counter, "FAKE".
  Stateid4 grant(const std::string& fh, Kind kind) {
    Stateid4 s;
    s.seqid = 1;
    uint32_t ep = static_cast<uint32_t>(epoch_), n = ++stateids_made_;
    std::memcpy(s.other.data(), &ep, 4);
    std::memcpy(s.other.data() + 4, &n, 4);
    std::memcpy(s.other.data() + 8, "FAKE", 4);
    live_[s.other] = Live{fh, kind, s.seqid};
    return s;
  }
  // NFS4_OK if S is a live stateid of KIND for FH (seqid 0: the current one).
  uint32_t check(const Stateid4& s, const std::string& fh, Kind kind) const {
    using namespace nfsshim::nfs4;
    auto it = live_.find(s.other);
    if (it == live_.end()) {
      uint32_t ep;
      std::memcpy(&ep, s.other.data(), 4);
      return ep != static_cast<uint32_t>(epoch_) ? NFS4ERR_STALE_STATEID : NFS4ERR_BAD_STATEID;
    }
    if (it->second.fh != fh || it->second.kind != kind) return NFS4ERR_BAD_STATEID;
    if (s.seqid != 0 && s.seqid != it->second.seqid) return NFS4ERR_OLD_STATEID;
    return NFS4_OK;
  }
  Stateid4 bump(const Stateid4& s) {
    Stateid4 out = s;
    out.seqid = ++live_[s.other].seqid;
    return out;
  }

  // One reply for one call: false for what this fake does not speak.
  bool answer(const std::vector<uint8_t>& rec, std::vector<uint8_t>* reply) {
    using namespace nfsshim::nfs4;
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
    cur_.clear();  // the current fh lives for one compound
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
      step_done(Step::kExchangeId);
      result(OP_EXCHANGE_ID, NFS4_OK);
      r.u64(clientid_);
      r.u32(1);  // sequenceid
      r.u32(EXCHGID4_FLAG_USE_NON_PNFS);
      r.u32(0);  // SP4_NONE
      r.u64(1);  // server_owner minor id
      r.string("fake-nfs41");
      r.string("fake-nfs41");
      r.u32(0);  // no impl id
    } else if (op == OP_CREATE_SESSION) {
      uint64_t clientid = 0;
      if (d.u64(&clientid) < 0) return false;
      if (std::exchange(mute_at_cs_, false)) {
        ++cs_swallowed_;
        mute_this_ = true;
        return true;
      }
      if (swallow_cs_ > 0 && (!swallow_new_only_ || clientid == clientid_)) {
        --swallow_cs_;
        ++cs_swallowed_;
        no_reply_ = true;
        return true;
      }
      if (cs_delays_ > 0) {
        --cs_delays_;
        result(OP_CREATE_SESSION, NFS4ERR_DELAY);
        log_.push_back(entry(OP_CREATE_SESSION, NFS4ERR_DELAY));
      } else if (clientid != clientid_) {
        result(OP_CREATE_SESSION, NFS4ERR_STALE_CLIENTID);
        log_.push_back(entry(OP_CREATE_SESSION, NFS4ERR_STALE_CLIENTID));
      } else {
        result(OP_CREATE_SESSION, NFS4_OK);
        std::array<uint8_t, 16> sid{};
        sid.fill(0x5a);
        sid[0] = static_cast<uint8_t>(epoch_);
        sid[1] = static_cast<uint8_t>(++sessions_made_);
        sessions_.insert(sid);
        r.fixed_opaque(sid.data(), sid.size());
        r.u32(1);  // sequence
        r.u32(0);  // flags
        channel(r);
        channel(r);
      }
    } else if (op == OP_BIND_CONN_TO_SESSION) {
      std::array<uint8_t, 16> sid{};
      uint32_t dir;
      bool rdma;
      d.fixed_opaque(sid.data(), sid.size());
      d.u32(&dir);
      if (d.boolean(&rdma) < 0) return false;
      ++binds_;
      if (!sessions_.count(sid)) {
        result(OP_BIND_CONN_TO_SESSION, NFS4ERR_BADSESSION);
      } else {
        result(OP_BIND_CONN_TO_SESSION, NFS4_OK);
        r.fixed_opaque(sid.data(), sid.size());
        r.u32(CDFS4_FORE);
        r.boolean(false);
      }
    } else if (op == OP_DESTROY_SESSION || op == OP_DESTROY_CLIENTID) {
      result(op, NFS4_OK);
      log_.push_back(entry(op, NFS4_OK));
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
        arrivals_.push_back(Clock::now());
        if (delays_left_ > 0) {
          --delays_left_;
          ++delays_sent_;
          delay = true;
          at = at_;
        }
      }
      if (!sessions_.count(sid)) {  // a session of before a restart
        result(OP_SEQUENCE, NFS4ERR_BADSESSION);
        log_.push_back(entry(OP_SEQUENCE, NFS4ERR_BADSESSION));
      } else if (delay && at == DelayAt::kSequence) {
        result(OP_SEQUENCE, delay_status_);
      } else {
        result(OP_SEQUENCE, NFS4_OK);
        r.fixed_opaque(sid.data(), sid.size());
        r.u32(seqid);
        r.u32(slotid);
        r.u32(kSlots - 1);  // highest_slotid
        r.u32(kSlots - 1);  // target_highest_slotid
        r.u32(0);           // status flags
        // The rest: in the order sent, up to the first that fails.
        for (uint32_t i = 1; i < nops && status == NFS4_OK; ++i) {
          if (i > 1 && d.u32(&next) < 0) return false;
          if (next == OP_PUTROOTFH) {
            result(OP_PUTROOTFH, delay ? delay_status_ : NFS4_OK);
            cur_ = kRootFh;
          } else if (!one_op(next, d, r, result)) {
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

  Logged entry(uint32_t op, uint32_t status) const {
    Logged l;
    l.op = op;
    l.epoch = epoch_;
    l.status = status;
    l.fh = cur_;
    return l;
  }

  // One op after SEQUENCE (but PUTROOTFH): its args read from D, its result into R
  // through RESULT. False for an op this fake does not speak or malformed args.
  template <typename Result>
  bool one_op(uint32_t op, XdrDecoder& d, XdrEncoder& r, Result& result) {
    using namespace nfsshim::nfs4;
    switch (op) {
      case OP_RECLAIM_COMPLETE: {
        bool one_fs;
        if (d.boolean(&one_fs) < 0) return false;
        result(OP_RECLAIM_COMPLETE, NFS4_OK);
        in_reclaim_ = false;
        log_.push_back(entry(op, NFS4_OK));
        return true;
      }
      case OP_LOOKUP: {  // only the export's path: the root fh stands for it
        const uint8_t* name;
        size_t n;
        if (d.opaque_view(&name, &n, 1024) < 0) return false;
        result(OP_LOOKUP, NFS4_OK);
        cur_ = kRootFh;
        return true;
      }
      case OP_PUTFH: {
        std::string fh;
        if (d.string(&fh, 128) < 0) return false;
        const bool known = fh == kRootFh || files_.count(fh);
        result(OP_PUTFH, known ? NFS4_OK : NFS4ERR_STALE);
        cur_ = fh;
        return true;
      }
      case OP_GETFH:
        result(OP_GETFH, NFS4_OK);
        r.string(cur_);
        return true;
      case OP_GETATTR: {
        Bitmap4 asked;
        if (get_bitmap(d, &asked) < 0) return false;
        // lease_time for the root lookup; type and size of a file for OPEN.
        Bitmap4 have;
        XdrEncoder vals;
        if (asked.test(FATTR4_TYPE)) {
          have.set(FATTR4_TYPE);
          vals.u32(cur_ == kRootFh ? NF4DIR : NF4REG);
        }
        if (asked.test(FATTR4_SIZE)) {
          have.set(FATTR4_SIZE);
          vals.u64(files_.count(cur_) ? files_[cur_].size() : 0);
        }
        if (asked.test(FATTR4_LEASE_TIME)) {
          have.set(FATTR4_LEASE_TIME);
          vals.u32(lease_s_);  // 90 s unless set_lease(): no renewal in most tests
        }
        result(OP_GETATTR, NFS4_OK);
        put_bitmap(r, have);
        r.opaque(vals.data(), vals.size());
        return true;
      }
      case OP_OPEN:
        return open(d, r, result);
      case OP_CLOSE: {
        uint32_t seqid;
        Stateid4 s;
        d.u32(&seqid);
        if (get_stateid(d, &s) < 0) return false;
        Logged l = entry(op, check(s, cur_, Kind::kOpen));
        l.sent = s;
        result(OP_CLOSE, l.status);
        if (l.status == NFS4_OK) {
          l.given = bump(s);
          live_.erase(s.other);
          put_stateid(r, l.given);
        }
        log_.push_back(l);
        return true;
      }
      case OP_WRITE: {
        Stateid4 s;
        uint64_t off;
        uint32_t stable;
        const uint8_t* data;
        size_t n;
        get_stateid(d, &s);
        d.u64(&off);
        d.u32(&stable);
        if (d.opaque_view(&data, &n, 2u << 20) < 0) return false;
        Logged l = entry(op, check(s, cur_, Kind::kOpen));
        l.sent = s;
        result(OP_WRITE, l.status);
        if (l.status == NFS4_OK) {
          std::vector<uint8_t>& f = files_[cur_];
          if (f.size() < off + n) f.resize(off + n);
          std::memcpy(f.data() + off, data, n);
          r.u32(static_cast<uint32_t>(n));
          r.u32(FILE_SYNC4);
          r.u64(0x5ee5ee5ee5ee5ee5ull);  // write verifier
        }
        log_.push_back(l);
        return true;
      }
      case OP_READ: {
        Stateid4 s;
        uint64_t off;
        uint32_t want;
        get_stateid(d, &s);
        d.u64(&off);
        if (d.u32(&want) < 0) return false;
        Logged l = entry(op, check(s, cur_, Kind::kOpen));
        l.sent = s;
        result(OP_READ, l.status);
        if (l.status == NFS4_OK) {
          const std::vector<uint8_t>& f = files_[cur_];
          const size_t end = std::min<uint64_t>(f.size(), stall_at_);
          size_t at = std::min<size_t>(off, end);
          size_t n = std::min<size_t>(want, end - at);
          if (n == 0 && end < f.size()) ++empty_reads_;
          r.boolean(at + n == f.size());
          r.opaque(f.data() + at, n);
        }
        log_.push_back(l);
        return true;
      }
      case OP_LOCK: {
        uint32_t locktype, seq;
        uint64_t off, len;
        Logged l = entry(op, NFS4_OK);
        d.u32(&locktype);
        d.boolean(&l.reclaim);
        d.u64(&off);
        d.u64(&len);
        d.boolean(&l.new_lock_owner);
        StateOwner4 owner;
        if (l.new_lock_owner) {
          d.u32(&seq);
          get_stateid(d, &l.sent);
          d.u32(&seq);
          get_state_owner(d, &owner);
        } else {
          get_stateid(d, &l.sent);
          d.u32(&seq);
        }
        if (!d.ok()) return false;
        if (l.reclaim && !in_reclaim_) l.status = NFS4ERR_NO_GRACE;
        else if (l.new_lock_owner && owner.clientid != clientid_) l.status = NFS4ERR_STALE_CLIENTID;
        else l.status = check(l.sent, cur_, l.new_lock_owner ? Kind::kOpen : Kind::kLock);
        result(OP_LOCK, l.status);
        if (l.status == NFS4_OK) {
          if (l.reclaim) step_done(Step::kReclaimLock);
          l.given = l.new_lock_owner ? grant(cur_, Kind::kLock) : bump(l.sent);
          put_stateid(r, l.given);
        }
        log_.push_back(l);
        return true;
      }
      case OP_LOCKU: {
        uint32_t locktype, seq;
        uint64_t off, len;
        Logged l = entry(op, NFS4_OK);
        d.u32(&locktype);
        d.u32(&seq);
        get_stateid(d, &l.sent);
        d.u64(&off);
        if (d.u64(&len) < 0) return false;
        l.status = check(l.sent, cur_, Kind::kLock);
        result(OP_LOCKU, l.status);
        if (l.status == NFS4_OK) {
          l.given = bump(l.sent);
          put_stateid(r, l.given);
        }
        log_.push_back(l);
        return true;
      }
      case OP_READDIR: {
        uint64_t cookie;
        std::array<uint8_t, 8> verf;
        uint32_t dircount, maxcount;
        Bitmap4 asked;
        d.u64(&cookie);
        d.fixed_opaque(verf.data(), verf.size());
        d.u32(&dircount);
        d.u32(&maxcount);
        if (get_bitmap(d, &asked) < 0) return false;
        ++readdirs_;
        readdir_cookies_.push_back(cookie);
        if (readdir_how_ == Readdir::kEmptyNoEof) {
          result(OP_READDIR, NFS4_OK);
          r.fixed_opaque(verf.data(), verf.size());
          r.boolean(false);  // no entry
          r.boolean(false);  // and no eof
          return true;
        }
        if (readdir_how_ == Readdir::kChurn) return churn_readdir(cookie, asked, r, result);
        result(OP_READDIR, NFS4_OK);
        r.fixed_opaque(verf.data(), verf.size());  // cookieverf
        r.boolean(true);                            // an entry follows
        r.u64(7);                                   // always the same cookie
        r.string("again");
        put_bitmap(r, Bitmap4());                   // no attributes
        r.opaque(nullptr, 0);
        r.boolean(false);                           // no next entry
        r.boolean(readdirs_ >= kReaddirLimit);      // eof only after the limit
        return true;
      }
      case OP_FREE_STATEID: {
        Logged l = entry(op, NFS4_OK);
        if (get_stateid(d, &l.sent) < 0) return false;
        auto it = live_.find(l.sent.other);
        l.status = it != live_.end() && it->second.kind == Kind::kLock ? NFS4_OK
                                                                        : NFS4ERR_BAD_STATEID;
        if (l.status == NFS4_OK) live_.erase(it);
        result(OP_FREE_STATEID, l.status);
        log_.push_back(l);
        return true;
      }
      default:
        return false;
    }
  }

  // OPEN4args: the claim decides; CLAIM_NULL may create. The result: stateid, change
  // info, rflags, attrset, no delegation.
  template <typename Result>
  bool open(XdrDecoder& d, XdrEncoder& r, Result& result) {
    using namespace nfsshim::nfs4;
    uint32_t seqid, access, deny, opentype, claim;
    StateOwner4 owner;
    d.u32(&seqid);
    d.u32(&access);
    d.u32(&deny);
    get_state_owner(d, &owner);
    if (d.u32(&opentype) < 0) return false;
    if (opentype == OPEN4_CREATE) {
      uint32_t mode;
      if (d.u32(&mode) < 0) return false;
      if (mode == EXCLUSIVE4 || mode == EXCLUSIVE4_1) {
        std::array<uint8_t, 8> verf;
        d.fixed_opaque(verf.data(), verf.size());
      }
      if (mode != EXCLUSIVE4) {  // createattrs: fattr4
        Bitmap4 bits;
        const uint8_t* vals;
        size_t n;
        get_bitmap(d, &bits);
        d.opaque_view(&vals, &n, 4096);
      }
    }
    if (d.u32(&claim) < 0) return false;
    std::string fh = cur_;
    if (claim == CLAIM_NULL) {
      std::string name;
      if (d.string(&name, 255) < 0) return false;
      fh = file_fh(name);
    } else if (claim == CLAIM_PREVIOUS) {
      uint32_t deleg;
      if (d.u32(&deleg) < 0) return false;
    } else if (claim != CLAIM_FH) {
      return false;
    }
    Logged l = entry(OP_OPEN, NFS4_OK);
    l.fh = fh;
    l.claim = claim;
    if (owner.clientid != clientid_) {
      l.status = NFS4ERR_STALE_CLIENTID;
    } else if (claim == CLAIM_PREVIOUS) {
      auto scripted = reclaim_by_fh_.find(fh);
      l.status = !in_reclaim_                     ? NFS4ERR_NO_GRACE
                 : !files_.count(fh)              ? NFS4ERR_STALE
                 : scripted != reclaim_by_fh_.end() ? scripted->second
                                                    : reclaim_status_;
    } else if (claim == CLAIM_FH) {
      l.status = files_.count(fh) ? NFS4_OK : NFS4ERR_STALE;
    } else if (!files_.count(fh)) {
      if (opentype == OPEN4_CREATE) files_[fh];
      else l.status = NFS4ERR_NOENT;
    }
    result(OP_OPEN, l.status);
    if (l.status == NFS4_OK) {
      if (claim == CLAIM_PREVIOUS) step_done(Step::kReclaimOpen);
      l.given = grant(fh, Kind::kOpen);
      cur_ = fh;
      put_stateid(r, l.given);
      r.boolean(true);  // change_info4
      r.u64(1);
      r.u64(opentype == OPEN4_CREATE ? 2 : 1);
      r.u32(0);  // rflags
      put_bitmap(r, Bitmap4());  // attrset
      r.u32(OPEN_DELEGATE_NONE);
    }
    log_.push_back(l);
    return true;
  }

  template <typename Result>
  bool churn_readdir(uint64_t cookie, const nfsshim::nfs4::Bitmap4& asked, XdrEncoder& r, Result& result) {
    using namespace nfsshim::nfs4;
    if (cookie != 0 && !churned_) {
      churned_ = true;
      result(OP_READDIR, churn_status_);
      return true;
    }
    const bool rdattr_error = asked.test(FATTR4_RDATTR_ERROR);
    if (cookie == 0 && !rdattr_error) {
      result(OP_READDIR, NFS4ERR_NOENT);  // "gone"'s attributes: ganesha fails the READDIR
      return true;
    }
    result(OP_READDIR, NFS4_OK);
    r.fixed_opaque(std::array<uint8_t, 8>{}.data(), 8);  // cookieverf
    auto entry = [&](uint64_t c, const char* name, bool gone) {
      r.boolean(true);
      r.u64(c);
      r.string(name);
      Bitmap4 have;
      XdrEncoder vals;
      if (gone) {
        have.set(FATTR4_RDATTR_ERROR);
        vals.u32(NFS4ERR_NOENT);
      } else {
        have.set(FATTR4_FILEID);
        vals.u64(100 + c);
      }
      put_bitmap(r, have);
      r.opaque(vals.data(), vals.size());
    };
    if (cookie == 0) {
      entry(3, "a", false);
      entry(4, "gone", true);
    } else {
      entry(5, "b", false);
      entry(6, "c", false);
    }
    r.boolean(false);        // no next entry
    r.boolean(cookie != 0);  // eof after b, c
    return true;
  }

  static constexpr uint32_t kSlots = 8;
  static constexpr int kReaddirLimit = 1000;
  int readdirs_ = 0;
  uint64_t stall_at_ = UINT64_MAX;
  int empty_reads_ = 0;
  Readdir readdir_how_ = Readdir::kNeverEnds;
  uint32_t churn_status_ = 0;
  bool churned_ = false;
  std::vector<uint64_t> readdir_cookies_;
  bool mute_next_ = false;
  bool no_reply_ = false;  // answer() decided: this request gets no reply
  bool mute_this_ = false;  // answer() decided: nor any other on its connection
  bool mute_at_cs_ = false;
  bool mute_all_ = false;
  uint32_t lease_s_ = 90;
  int swallow_cs_ = 0, cs_swallowed_ = 0;
  bool swallow_new_only_ = false;
  std::set<int> muted_;
  int swallowed_ = 0, binds_ = 0;
  static constexpr uint64_t kClientId = 0x1122334455667788ull;
  static constexpr const char* kRootFh = "fake-root-fh";
  std::mutex mu_;
  int delays_left_ = 0, delays_sent_ = 0;
  DelayAt at_ = DelayAt::kOp;
  uint32_t delay_status_ = nfsshim::nfs4::NFS4ERR_DELAY;
  std::vector<Clock::time_point> arrivals_;

  int epoch_ = 0;
  uint64_t clientid_ = kClientId;
  uint32_t sessions_made_ = 0, stateids_made_ = 0;
  std::set<std::array<uint8_t, 16>> sessions_;
  bool in_reclaim_ = false;  // restarted, and no RECLAIM_COMPLETE since
  uint32_t reclaim_status_ = 0;
  std::map<std::string, uint32_t> reclaim_by_fh_;
  Step restart_step_ = Step::kExchangeId;
  int restart_countdown_ = 0, cs_delays_ = 0;
  bool restart_pending_ = false;  // answer() decided: restart once this reply is made
  std::string cur_;  // the current fh of the compound being answered
  std::map<std::array<uint8_t, 12>, Live> live_;
  std::map<std::string, std::vector<uint8_t>> files_;
  std::vector<Logged> log_;
};

}  // namespace nfs41test
