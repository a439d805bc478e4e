// A TCP server on 127.0.0.1 (an ephemeral port) for the transport tests: every connection
// gets a thread that reads RPC records and hands each to ON_RECORD with its number on the
// connection (1, 2, ...); ON_RECORD answers with send_record() and returns false to end
// the connection. stop() (also the destructor) shuts every connection down and joins:
// a derived server calls it first in its destructor, before its own members go.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "nfsshim/rpc/record_marking.h"

namespace nfs41test {

// A listening socket on 127.0.0.1, an ephemeral port (*PORT), BACKLOG as listen(2) takes it.
inline int listen_loopback(int backlog, int* port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  EXPECT_EQ(::listen(fd, backlog), 0);
  socklen_t len = sizeof sa;
  getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  *port = ntohs(sa.sin_port);
  return fd;
}

class RecordServer {
 public:
  using OnRecord = std::function<bool(int fd, const std::vector<uint8_t>& record, int n)>;

  explicit RecordServer(OnRecord on_record) : on_record_(std::move(on_record)) {
    lfd_ = listen_loopback(16, &port_);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  RecordServer(const RecordServer&) = delete;
  RecordServer& operator=(const RecordServer&) = delete;
  virtual ~RecordServer() { stop(); }

  void stop() {
    if (stop_.exchange(true)) return;
    ::shutdown(lfd_, SHUT_RDWR);
    acceptor_.join();
    {
      std::lock_guard<std::mutex> g(mu_);
      for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
    }
    for (auto& t : workers_) t.join();
    for (int fd : fds_) ::close(fd);
    ::close(lfd_);
  }
  int port() const { return port_; }
  std::atomic<int> connections{0};  // accepted so far

  // MSG as one record (record mark in front); false if the connection broke.
  static bool send_record(int fd, const std::vector<uint8_t>& msg) {
    std::vector<uint8_t> out;
    nfsshim::rpc::frame_record(&out, msg.data(), msg.size());
    for (size_t off = 0; off < out.size();) {
      ssize_t w = ::send(fd, out.data() + off, out.size() - off, MSG_NOSIGNAL);
      if (w <= 0) return false;
      off += static_cast<size_t>(w);
    }
    return true;
  }

 private:
  void accept_loop() {
    for (;;) {
      int fd = ::accept4(lfd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0 || stop_.load()) {
        if (fd >= 0) ::close(fd);
        return;
      }
      ++connections;
      std::lock_guard<std::mutex> g(mu_);
      fds_.push_back(fd);
      workers_.emplace_back([this, fd] { serve(fd); });
    }
  }
  void serve(int fd) {
    nfsshim::rpc::RecordFramer framer(16u << 20);
    std::vector<uint8_t> buf(65536);
    nfsshim::rpc::Record rec;
    int n = 0;
    for (;;) {
      ssize_t got = ::recv(fd, buf.data(), buf.size(), 0);
      if (got <= 0 || framer.feed(buf.data(), static_cast<size_t>(got)) < 0) return;
      while (framer.next(&rec)) {
        if (!on_record_(fd, std::vector<uint8_t>(rec.begin(), rec.end()), ++n)) return;
      }
    }
  }

  OnRecord on_record_;
  int lfd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<int> fds_;
  std::vector<std::thread> workers_;
};

}  // namespace nfs41test
