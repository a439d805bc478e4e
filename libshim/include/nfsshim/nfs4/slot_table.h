// The fore-channel slot table of one NFSv4.1 session (RFC 8881 section 2.10.6).
// Pure logic, no I/O and no locking: the engine holds its own lock around it.
//
// Each slot carries one request at a time. A new request on a slot uses the slot's
// sequence id + 1; a resend of the same request (after a connection loss) uses the
// same sequence id, so the server answers it from its reply cache instead of running
// it twice. The server steers how many slots we use through sr_highest_slotid (the
// highest it accepts) and sr_target_highest_slotid (the highest it wants used).
#pragma once

#include <cstdint>
#include <vector>

#include "nfsshim/nfs4/ops_session.h"

namespace nfsshim::nfs4 {

class SlotTable {
 public:
  static constexpr uint32_t kMaxSlots = 1024;

  // `granted`: the fore channel's ca_maxrequests from CREATE_SESSION (1..kMaxSlots;
  // more is clamped).
  explicit SlotTable(uint32_t granted) { reset(granted); }

  struct Ticket {
    uint32_t slotid = 0;
    uint32_t seqid = 0;
    uint32_t highest_slotid = 0;  // sa_highest_slotid: the highest slot now in use
  };

  // A new session (after BADSESSION/DEADSESSION): every slot starts over at
  // sequence id 1 and nothing is in flight.
  void reset(uint32_t granted);

  // Takes the lowest free usable slot. -EAGAIN if every usable slot is busy.
  int acquire(Ticket* t);
  // The SEQUENCE result was NFS4_OK: the sequence id is consumed and the slot freed;
  // the server's highest/target slot and status flags are taken in. -EPROTO if the
  // result names another slot or sequence id (the slot is freed, its sequence id
  // marked uncertain) and -EINVAL for a slot that was not in flight.
  int on_sequence_ok(uint32_t slotid, const SequenceRes& res);
  // SEQUENCE itself failed (status != NFS4_OK): the server did not run the request
  // and the sequence id is not consumed (except RETRY_UNCACHED_REP: the server ran the
  // original and kept no reply, and SEQ_FALSE_RETRY: it holds the reply of another
  // request with that sequence id; both use it up); the slot is freed. For SEQ_MISORDERED on a
  // slot whose last request was abandoned, the sequence id steps back (the server had
  // not seen that request). BADSLOT / BAD_HIGH_SLOT shrink the usable range below
  // the slot. Returns true if a retry on a fresh ticket can succeed.
  bool on_sequence_error(uint32_t slotid, uint32_t status);
  // The connection carrying the request was lost before a reply: the slot stays
  // taken until replay() resends it.
  int on_connection_lost(uint32_t slotid);
  // The ticket to resend a lost request: same slot, same sequence id.
  int replay(uint32_t slotid, Ticket* t);
  // The request was given up without a reply (interrupted, timed out): the server
  // may or may not have run it. Assumes it did (sequence id consumed) and remembers
  // the doubt for on_sequence_error(SEQ_MISORDERED).
  int abandon(uint32_t slotid);
  // A replay was given up while the server still ran the original (it answered the
  // replay DELAY): the sequence id is the server's, used, without doubt. Until the slot's
  // next success, SEQ_MISORDERED on it (the original still running) is worth a retry.
  int give_up_replay(uint32_t slotid);

  std::vector<uint32_t> lost_slots() const;
  uint32_t in_use() const { return in_use_; }
  uint32_t peak_in_use() const { return peak_; }
  uint32_t size() const { return static_cast<uint32_t>(slots_.size()); }
  // Slots [0, usable()) may be handed out.
  uint32_t usable() const;
  uint32_t target_highest_slotid() const { return target_highest_; }
  uint32_t server_highest_slotid() const { return server_highest_; }
  // SEQ4_STATUS_* flags seen since the last call, cleared by it.
  uint32_t take_status_flags();
  uint32_t seqid_of(uint32_t slotid) const { return slots_.at(slotid).seqid; }

 private:
  enum class State { kFree, kBusy, kLost };
  struct Slot {
    uint32_t seqid = 0;  // last sequence id used; the next new request uses + 1
    State state = State::kFree;
    bool uncertain = false;  // last request abandoned: seqid may be one too high
    bool given_up = false;   // a replay given up: the server may still run the original
  };
  void release(Slot& s);
  uint32_t highest_in_use() const;

  std::vector<Slot> slots_;
  uint32_t server_highest_ = 0;
  uint32_t target_highest_ = 0;
  uint32_t in_use_ = 0;
  uint32_t peak_ = 0;
  uint32_t status_flags_ = 0;
  // One past the highest slot acquire() ever took since reset(): every slot from here up
  // is free, so highest_in_use() starts here (it scanned all 64-180 slots per call).
  uint32_t touched_ = 0;
};

// Classes of SEQ4_STATUS flags the engine acts on.
bool seq4_reclaim_needed(uint32_t flags);   // RESTART_RECLAIM_NEEDED
bool seq4_state_revoked(uint32_t flags);    // EXPIRED_*/ADMIN/RECALLABLE_STATE_REVOKED
bool seq4_backchannel_down(uint32_t flags); // CB_PATH_DOWN(_SESSION), BACKCHANNEL_FAULT
bool seq4_lease_moved(uint32_t flags);      // LEASE_MOVED

}  // namespace nfsshim::nfs4
