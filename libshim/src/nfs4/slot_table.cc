#include "nfsshim/nfs4/slot_table.h"

#include <algorithm>
#include <cerrno>

#include "nfsshim/nfs4/constants.h"
#include "nfsshim/nfs4/nfsstat4.h"

namespace nfsshim::nfs4 {

void SlotTable::reset(uint32_t granted) {
  granted = std::min(std::max<uint32_t>(granted, 1), kMaxSlots);
  slots_.assign(granted, Slot{});
  server_highest_ = granted - 1;
  target_highest_ = granted - 1;
  in_use_ = 0;
  status_flags_ = 0;
  touched_ = 0;
}

uint32_t SlotTable::usable() const {
  uint32_t n = std::min(server_highest_, target_highest_) + 1;
  return std::min(n, size());
}

uint32_t SlotTable::highest_in_use() const {
  for (uint32_t i = std::min(touched_, size()); i > 0; --i) {
    if (slots_[i - 1].state != State::kFree) return i - 1;
  }
  return 0;
}

int SlotTable::acquire(Ticket* t) {
  uint32_t n = usable();
  // The lowest free slot; one whose replay was given up (the server may still run the
  // original: it answers MISORDERED) only when no other is free.
  uint32_t pick = n;
  for (uint32_t i = 0; i < n; ++i) {
    if (slots_[i].state != State::kFree) continue;
    if (!slots_[i].given_up) {
      pick = i;
      break;
    }
    if (pick == n) pick = i;
  }
  if (pick == n) return -EAGAIN;
  Slot& s = slots_[pick];
  s.state = State::kBusy;
  s.seqid += 1;
  ++in_use_;
  peak_ = std::max(peak_, in_use_);
  touched_ = std::max(touched_, pick + 1);
  t->slotid = pick;
  t->seqid = s.seqid;
  t->highest_slotid = highest_in_use();
  return 0;
}

void SlotTable::release(Slot& s) {
  s.state = State::kFree;
  --in_use_;
}

int SlotTable::on_sequence_ok(uint32_t slotid, const SequenceRes& res) {
  if (slotid >= size() || slots_[slotid].state == State::kFree) return -EINVAL;
  Slot& s = slots_[slotid];
  release(s);
  if (res.slotid != slotid || res.sequenceid != s.seqid) {
    s.uncertain = true;
    return -EPROTO;
  }
  s.uncertain = false;
  s.given_up = false;
  status_flags_ |= res.status_flags;
  server_highest_ = std::min(res.highest_slotid, kMaxSlots - 1);
  target_highest_ = std::min(res.target_highest_slotid, kMaxSlots - 1);
  // The server may offer more slots than it granted at first: grow into them.
  uint32_t want = std::min(server_highest_, target_highest_) + 1;
  if (want > size()) slots_.resize(want);
  return 0;
}

bool SlotTable::on_sequence_error(uint32_t slotid, uint32_t status) {
  if (slotid >= size() || slots_[slotid].state == State::kFree) return false;
  Slot& s = slots_[slotid];
  release(s);
  // RETRY_UNCACHED_REP answers a resent request the server did run (it kept no reply),
  // SEQ_FALSE_RETRY one whose seqid it holds the reply of another request for: that
  // seqid is used up (sent again it gets the same answer, for good). Any other SEQUENCE error means the request was not run and the
  // next request reuses the seqid.
  if (status == NFS4ERR_RETRY_UNCACHED_REP || status == NFS4ERR_SEQ_FALSE_RETRY) return true;
  s.seqid -= 1;
  switch (status) {
    case NFS4ERR_SEQ_MISORDERED:
      if (s.uncertain) {  // the abandoned request never reached the server
        s.seqid -= 1;
        s.uncertain = false;
        return true;
      }
      return s.given_up;  // the original still runs there: the next seqid, later
    case NFS4ERR_BADSLOT:
    case NFS4ERR_BAD_HIGH_SLOT:
      if (slotid == 0) return false;
      server_highest_ = std::min(server_highest_, slotid - 1);
      return true;
    case NFS4ERR_DELAY:
      return true;
    default:
      return false;
  }
}

int SlotTable::on_connection_lost(uint32_t slotid) {
  if (slotid >= size() || slots_[slotid].state != State::kBusy) return -EINVAL;
  slots_[slotid].state = State::kLost;
  return 0;
}

int SlotTable::replay(uint32_t slotid, Ticket* t) {
  if (slotid >= size() || slots_[slotid].state != State::kLost) return -EINVAL;
  Slot& s = slots_[slotid];
  s.state = State::kBusy;
  t->slotid = slotid;
  t->seqid = s.seqid;
  t->highest_slotid = highest_in_use();
  return 0;
}

int SlotTable::abandon(uint32_t slotid) {
  if (slotid >= size() || slots_[slotid].state == State::kFree) return -EINVAL;
  Slot& s = slots_[slotid];
  release(s);
  s.uncertain = true;
  return 0;
}

int SlotTable::give_up_replay(uint32_t slotid) {
  if (slotid >= size() || slots_[slotid].state == State::kFree) return -EINVAL;
  Slot& s = slots_[slotid];
  release(s);
  s.uncertain = false;
  s.given_up = true;
  return 0;
}

std::vector<uint32_t> SlotTable::lost_slots() const {
  std::vector<uint32_t> out;
  for (uint32_t i = 0; i < size(); ++i) {
    if (slots_[i].state == State::kLost) out.push_back(i);
  }
  return out;
}

uint32_t SlotTable::take_status_flags() {
  uint32_t f = status_flags_;
  status_flags_ = 0;
  return f;
}

bool seq4_reclaim_needed(uint32_t flags) { return flags & SEQ4_STATUS_RESTART_RECLAIM_NEEDED; }

bool seq4_state_revoked(uint32_t flags) {
  return flags & (SEQ4_STATUS_EXPIRED_ALL_STATE_REVOKED | SEQ4_STATUS_EXPIRED_SOME_STATE_REVOKED |
                  SEQ4_STATUS_ADMIN_STATE_REVOKED | SEQ4_STATUS_RECALLABLE_STATE_REVOKED);
}

bool seq4_backchannel_down(uint32_t flags) {
  return flags & (SEQ4_STATUS_CB_PATH_DOWN | SEQ4_STATUS_CB_PATH_DOWN_SESSION |
                  SEQ4_STATUS_BACKCHANNEL_FAULT);
}

bool seq4_lease_moved(uint32_t flags) { return flags & SEQ4_STATUS_LEASE_MOVED; }

}  // namespace nfsshim::nfs4
