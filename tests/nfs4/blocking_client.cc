#include "blocking_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>

namespace nfs4test {

using namespace nfsshim;

BlockingConn::~BlockingConn() { close(); }

void BlockingConn::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

int BlockingConn::connect(const std::string& addr, int port) {
  close();
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return -errno;
  timeval tv{10, 0};  // a hung server fails the test instead of hanging it
  setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, addr.c_str(), &sa.sin_addr) != 1) return -EINVAL;
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) < 0) {
    int e = errno;
    close();
    return -e;
  }
  framer_ = rpc::RecordFramer(4u << 20);
  return 0;
}

int BlockingConn::call(uint32_t xid, const std::vector<uint8_t>& msg, std::vector<uint8_t>* reply) {
  if (fd_ < 0) return -ENOTCONN;
  std::vector<uint8_t> wire;
  rpc::frame_record(&wire, msg.data(), msg.size());
  for (size_t off = 0; off < wire.size();) {
    ssize_t n = ::send(fd_, wire.data() + off, wire.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -errno;
    off += static_cast<size_t>(n);
  }
  for (;;) {
    rpc::Record rec;
    while (framer_.next(&rec)) {
      reply->assign(rec.begin(), rec.end());
      if (reply->size() >= 4) {
        uint32_t got = (uint32_t{(*reply)[0]} << 24) | (uint32_t{(*reply)[1]} << 16) |
                       (uint32_t{(*reply)[2]} << 8) | (*reply)[3];
        if (got == xid) return 0;
      }
    }
    uint8_t buf[65536];
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno == EAGAIN ? -ETIMEDOUT : -errno;
    if (n == 0) return -ECONNRESET;
    if (int rc = framer_.feed(buf, static_cast<size_t>(n)); rc < 0) return rc;
  }
}

void record_reply(const std::string& name, const std::vector<uint8_t>& bytes) {
  const char* dir = std::getenv("NFS4_RECORD_DIR");
  if (dir == nullptr || *dir == '\0') return;
  std::ofstream f(std::string(dir) + "/" + name + ".bin", std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

static int exchange(BlockingConn& conn, nfs4::Compound& c, std::vector<uint8_t>* reply,
                    std::string* err) {
  std::vector<uint8_t> msg;
  if (int rc = c.finish(&msg); rc < 0) {
    *err = "encode failed";
    return rc;
  }
  if (int rc = conn.call(c.xid(), msg, reply); rc < 0) {
    *err = "transport failed";
    return rc;
  }
  return 0;
}

int Session::run_bare(BlockingConn& conn, const Build& build, const Decode& decode,
                      const char* record) {
  nfs4::Compound c(++xid, cred);
  build(c);
  std::vector<uint8_t> reply;
  if (int rc = exchange(conn, c, &reply, &last_error); rc < 0) return rc;
  if (record) record_reply(record, reply);
  rpc::XdrDecoder d(reply);
  rpc::ReplyHeader h;
  if (int rc = nfs4::decode_compound_rpc(d, c.xid(), &h); rc != 0) {
    last_error = d.ok() ? "RPC error" : d.error();
    return rc;
  }
  nfs4::ReplyReader r(d);
  if (r.begin() < 0 || decode(r) < 0 || r.finish() < 0) {
    last_error = d.error();
    return -EBADMSG;
  }
  return static_cast<int>(r.status());
}

int Session::run(BlockingConn& conn, const Build& build, const Decode& decode, const char* record) {
  nfs4::SlotTable::Ticket t;
  if (int rc = slots.acquire(&t); rc < 0) return rc;
  nfs4::Compound c(++xid, cred);
  nfs4::SequenceArgs seq;
  seq.sessionid = sessionid;
  seq.sequenceid = t.seqid;
  seq.slotid = t.slotid;
  seq.highest_slotid = t.highest_slotid;
  nfs4::encode_sequence(c, seq);
  build(c);
  std::vector<uint8_t> reply;
  if (int rc = exchange(conn, c, &reply, &last_error); rc < 0) {
    slots.on_connection_lost(t.slotid);
    return rc;
  }
  if (record) record_reply(record, reply);
  rpc::XdrDecoder d(reply);
  rpc::ReplyHeader h;
  if (int rc = nfs4::decode_compound_rpc(d, c.xid(), &h); rc != 0) {
    slots.abandon(t.slotid);
    last_error = d.ok() ? "RPC error" : d.error();
    return rc;
  }
  nfs4::ReplyReader r(d);
  nfs4::SequenceRes sr;
  if (r.begin() < 0 || nfs4::decode_sequence(r, &sr) < 0) {
    slots.abandon(t.slotid);
    last_error = d.error();
    return -EBADMSG;
  }
  if (sr.status != 0) {
    slots.on_sequence_error(t.slotid, sr.status);
    if (r.finish() < 0) return -EBADMSG;
    return static_cast<int>(sr.status);
  }
  if (int rc = slots.on_sequence_ok(t.slotid, sr); rc < 0) {
    last_error = "SEQUENCE reply for another slot/seqid";
    return rc;
  }
  if (decode(r) < 0 || r.finish() < 0) {
    last_error = d.error();
    return -EBADMSG;
  }
  return static_cast<int>(r.status());
}

}  // namespace nfs4test
