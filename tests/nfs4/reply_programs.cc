#include "reply_programs.h"

#include <cerrno>
#include <cstring>

#include "nfsshim/nfs4/constants.h"

namespace nfs4test {

using namespace nfsshim::nfs4;

// Stop quietly after a failed operation (the server sends nothing after it).
#define STEP(expr)                       \
  do {                                   \
    if (r.results_left() == 0) return 0; \
    if ((expr) < 0) return -EBADMSG;     \
  } while (0)

namespace {

uint32_t x;  // statuses of status-only results

Bitmap4 fs_bits() { return Bitmap4().set(FATTR4_SUPPORTED_ATTRS).set(FATTR4_LEASE_TIME); }

// The arguments ganesha_test.cc sent where a decoder needs them.
CreateArgs dir_args() {
  CreateArgs a;
  a.type = NF4DIR;
  a.attrs.set_mode = true;
  return a;
}
CreateArgs link_args() {
  CreateArgs a;
  a.type = NF4LNK;
  return a;
}
SetAttrs size_mode() {
  SetAttrs s;
  s.set_size = true;
  s.set_mode = true;
  return s;
}
ReaddirArgs type_fileid() {
  ReaddirArgs a;
  a.attrs.set(FATTR4_TYPE).set(FATTR4_FILEID);
  return a;
}

int exchange_id(ReplyReader& r, Decoded* o) { return decode_exchange_id(r, &o->exchange); }
int create_session(ReplyReader& r, Decoded* o) { return decode_create_session(r, &o->create_session); }
int bind_conn(ReplyReader& r, Decoded* o) { return decode_bind_conn_to_session(r, &o->bind); }
int destroy_session(ReplyReader& r, Decoded*) { return decode_status_only(r, OP_DESTROY_SESSION, &x); }

int sequence_only(ReplyReader& r, Decoded* o) {
  STEP(decode_sequence(r, &o->seq));
  return 0;
}
int getattr_export(ReplyReader& r, Decoded* o) {
  STEP(decode_sequence(r, &o->seq));
  STEP(decode_status_only(r, OP_PUTROOTFH, &x));
  STEP(decode_getattr(r, getattr_bitmap(), &o->attrs));
  STEP(decode_status_only(r, OP_LOOKUP, &x));
  STEP(decode_getfh(r, &o->fh));
  STEP(decode_getattr(r, getattr_bitmap(), &o->attrs));
  STEP(decode_getattr(r, fs_bits(), &o->fs_attrs));
  return 0;
}
int open_create(ReplyReader& r, Decoded* o) {
  STEP(decode_sequence(r, &o->seq));
  STEP(decode_status_only(r, OP_PUTFH, &x));
  STEP(decode_open(r, &o->open));
  STEP(decode_getfh(r, &o->fh));
  return 0;
}
int write_commit(ReplyReader& r, Decoded* o) {
  STEP(decode_sequence(r, &o->seq));
  STEP(decode_status_only(r, OP_PUTFH, &x));
  STEP(decode_write(r, kMaxIoBytes, &o->write));
  STEP(decode_commit(r, &o->commit));
  return 0;
}
int read(ReplyReader& r, Decoded* o) {
  STEP(decode_sequence(r, &o->seq));
  STEP(decode_status_only(r, OP_PUTFH, &x));
  STEP(decode_read(r, 65536, &o->read));
  return 0;
}
int rename(ReplyReader& r, Decoded* o) {
  STEP(decode_sequence(r, &o->seq));
  STEP(decode_status_only(r, OP_PUTFH, &x));
  STEP(decode_status_only(r, OP_SAVEFH, &x));
  STEP(decode_status_only(r, OP_PUTFH, &x));
  STEP(decode_rename(r, &o->rename));
  return 0;
}
int remove_noent(ReplyReader& r, Decoded* o) {
  STEP(decode_sequence(r, &o->seq));
  STEP(decode_status_only(r, OP_PUTFH, &x));
  STEP(decode_remove(r, &o->remove));
  return 0;
}
int create_readlink(ReplyReader& r, Decoded* o) {
  STEP(decode_sequence(r, &o->seq));
  STEP(decode_status_only(r, OP_PUTFH, &x));
  STEP(decode_create(r, dir_args(), &o->create_dir));
  STEP(decode_status_only(r, OP_PUTFH, &x));
  STEP(decode_create(r, link_args(), &o->create_link));
  STEP(decode_readlink(r, &o->readlink));
  return 0;
}
int link_setattr_access(ReplyReader& r, Decoded* o) {
  STEP(decode_sequence(r, &o->seq));
  STEP(decode_status_only(r, OP_PUTFH, &x));
  STEP(decode_status_only(r, OP_SAVEFH, &x));
  STEP(decode_status_only(r, OP_PUTFH, &x));
  STEP(decode_link(r, &o->link));
  STEP(decode_status_only(r, OP_PUTFH, &x));
  STEP(decode_setattr(r, size_mode(), &o->setattr));
  STEP(decode_access(r, &o->access));
  return 0;
}
int readdir(ReplyReader& r, Decoded* o) {
  STEP(decode_sequence(r, &o->seq));
  STEP(decode_status_only(r, OP_PUTFH, &x));
  STEP(decode_readdir(r, type_fileid(), &o->readdir));
  return 0;
}
int lock(ReplyReader& r, Decoded* o) {
  STEP(decode_sequence(r, &o->seq));
  STEP(decode_status_only(r, OP_PUTFH, &x));
  STEP(decode_lock(r, &o->lock));
  return 0;
}
int lockt_denied(ReplyReader& r, Decoded* o) {
  STEP(decode_sequence(r, &o->seq));
  STEP(decode_status_only(r, OP_PUTFH, &x));
  STEP(decode_lockt(r, &o->lockt));
  return 0;
}
int test_stateid(ReplyReader& r, Decoded* o) {
  STEP(decode_sequence(r, &o->seq));
  STEP(decode_test_stateid(r, 3, &o->test_stateid));
  return 0;
}

}  // namespace

const Program kPrograms[] = {
    {"exchange_id", exchange_id},
    {"create_session", create_session},
    {"bind_conn", bind_conn},
    {"destroy_session", destroy_session},
    {"sequence_badsession", sequence_only},
    {"getattr_export", getattr_export},
    {"open_create", open_create},
    {"write_commit", write_commit},
    {"read", read},
    {"rename", rename},
    {"remove_noent", remove_noent},
    {"create_readlink", create_readlink},
    {"link_setattr_access", link_setattr_access},
    {"readdir", readdir},
    {"lock", lock},
    {"lockt_denied", lockt_denied},
    {"test_stateid", test_stateid},
};
const size_t kProgramCount = sizeof kPrograms / sizeof kPrograms[0];

const Program* find_program(const std::string& name) {
  for (size_t i = 0; i < kProgramCount; ++i) {
    if (name == kPrograms[i].name) return &kPrograms[i];
  }
  return nullptr;
}

int decode_reply(const uint8_t* data, size_t n, const Program& p, Decoded* out) {
  if (n < 4) return -EBADMSG;
  uint32_t xid = (uint32_t{data[0]} << 24) | (uint32_t{data[1]} << 16) |
                 (uint32_t{data[2]} << 8) | data[3];
  nfsshim::rpc::XdrDecoder d(data, n);
  nfsshim::rpc::ReplyHeader h;
  if (int rc = decode_compound_rpc(d, xid, &h); rc != 0) return rc;
  ReplyReader r(d);
  if (r.begin() < 0) return -EBADMSG;
  if (p.run(r, out) < 0) return -EBADMSG;
  if (r.finish() < 0) return -EBADMSG;
  out->status = r.status();
  return 0;
}

}  // namespace nfs4test
