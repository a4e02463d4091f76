// Record streams over TCP: u64 little-endian length, then the payload.
#include <sinew/io/tcp.hpp>

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "stream.hpp"

namespace sinew::io {

namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the frame header is written in native (little-endian) order");

std::string endpoint(const std::string& host, std::uint16_t port) {
  return (host.empty() ? std::string("*") : host) + ":" + std::to_string(port);
}

struct addr_list {
  addrinfo* head = nullptr;
  ~addr_list() {
    if (head) freeaddrinfo(head);
  }
};

void resolve(addr_list& out, const std::string& host, std::uint16_t port, bool passive, const std::string& who) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  const char* h = (host.empty() || host == "*") ? nullptr : host.c_str();
  std::string p = std::to_string(port);
  int r = getaddrinfo(h, p.c_str(), &hints, &out.head);
  if (r != 0) throw error(who + ": cannot resolve the host: " + gai_strerror(r));
}

// A listening socket, bound at construction so errors and the port are known at once.
detail::unique_fd listen_on(const std::string& host, std::uint16_t port, const std::string& who, int& bound) {
  addr_list a;
  resolve(a, host, port, true, who);
  int last = 0;
  for (addrinfo* ai = a.head; ai; ai = ai->ai_next) {
    detail::unique_fd s(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol));
    if (!s) {
      last = errno;
      continue;
    }
    int one = 1;
    ::setsockopt(s.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(s.get(), ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(s.get(), 4) != 0) {
      last = errno;
      continue;
    }
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    ::getsockname(s.get(), reinterpret_cast<sockaddr*>(&ss), &len);
    bound = ss.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port)
                                     : ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
    return s;
  }
  throw error(who + ": cannot listen: " + detail::errno_text(last ? last : EADDRNOTAVAIL));
}

void tune(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // frames are written whole; no Nagle wait at the end
}

// Accepts one peer; false if `wake` fired first.
bool accept_one(detail::unique_fd& listener, detail::unique_fd& conn, const detail::wake_event* wake,
                const std::string& who) {
  for (;;) {
    if (!detail::wait_ready(listener.get(), POLLIN, wake, who)) return false;
    int c = ::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC);
    if (c >= 0) {
      conn.reset(c);
      tune(c);
      listener.reset();  // one connection per run
      return true;
    }
    if (errno == EINTR || errno == EAGAIN || errno == ECONNABORTED) continue;
    throw error(who + ": accept failed: " + detail::errno_text(errno));
  }
}

// Connects to the first address that accepts; waiting is interruptible
// when `wake` is given. False if interrupted.
bool connect_to(const std::string& host, std::uint16_t port, detail::unique_fd& conn, const detail::wake_event* wake,
                const std::string& who) {
  addr_list a;
  resolve(a, host, port, false, who);
  int last = 0;
  for (addrinfo* ai = a.head; ai; ai = ai->ai_next) {
    detail::unique_fd s(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol));
    if (!s) {
      last = errno;
      continue;
    }
    if (::connect(s.get(), ai->ai_addr, ai->ai_addrlen) != 0) {
      if (errno != EINPROGRESS) {
        last = errno;
        continue;
      }
      if (!detail::wait_ready(s.get(), POLLOUT, wake, who)) return false;
      int err = 0;
      socklen_t len = sizeof err;
      ::getsockopt(s.get(), SOL_SOCKET, SO_ERROR, &err, &len);
      if (err) {
        last = err;
        continue;
      }
    }
    ::fcntl(s.get(), F_SETFL, ::fcntl(s.get(), F_GETFL) & ~O_NONBLOCK);
    tune(s.get());
    conn = std::move(s);
    return true;
  }
  throw error(who + ": cannot connect: " + detail::errno_text(last ? last : EHOSTUNREACH));
}

// Where a TCP source or sink talks: host, port, its name in errors, and
// the listening socket when it listens (bound at once: errors surface when
// the source or sink is made, and a port of 0 is resolved to the one picked).
struct tcp_end {
  std::string host;
  std::uint16_t port;
  std::string who;
  detail::unique_fd listener;
  tcp_end(const std::string& what, std::string h, std::uint16_t p, bool listen,
          const std::shared_ptr<std::atomic<int>>& bound)
      : host(std::move(h)), port(p), who(what + endpoint(host, port)) {
    if (!listen) return;
    int picked = 0;
    listener = listen_on(host, port, who, picked);
    port = std::uint16_t(picked);
    who = what + endpoint(host, port);
    if (bound) bound->store(picked);
  }
};

class tcp_source final : public detail::io_source {
 public:
  tcp_source(std::string host, std::uint16_t port, record_layout l, bool listen,
             const std::shared_ptr<std::atomic<int>>& bound, batching b)
      : io_source(b), l_(std::move(l)), e_(listen ? "tcp_listen " : "tcp_connect ", std::move(host), port, listen, bound) {
    l_.check(e_.who);
  }
  bool produce(unit_builder& b) override {
    if (!conn_) {
      bool ok = e_.listener ? accept_one(e_.listener, conn_, &wake_, e_.who) : connect_to(e_.host, e_.port, conn_, &wake_, e_.who);
      if (!ok) return false;
      r_.emplace(conn_.get(), e_.who, &wake_);
    }
    return fill_records(b, l_, *r_, [&](char* const* dst, std::size_t) { return std::size_t(frame(dst)); });
  }
  std::string label() const override { return "source(" + e_.who + ")"; }
  bool blocking() const override { return true; }

 private:
  // One frame into `dst`: false when the peer closed at a frame boundary or
  // the run stops.
  bool frame(char* const* dst) {
    std::uint64_t len = 0;
    std::size_t got = 0;
    auto st = r_->read_exact(&len, sizeof len, got);
    if (st == detail::fd_reader::status::interrupted) return false;
    if (st == detail::fd_reader::status::eof) {
      if (got == 0) return false;  // closed at a record boundary: end of stream
      throw error(e_.who + ": the peer disconnected inside the length of record " + std::to_string(frames_) + " (" +
                  std::to_string(got) + " of 8 bytes)");
    }
    if (len != l_.bytes())
      throw error(e_.who + ": record " + std::to_string(frames_) + " announces " + std::to_string(len) +
                  " bytes, the layout " + l_.str() + " has " + std::to_string(l_.bytes()));
    detail::record_read rr = detail::read_record(*r_, l_, dst);
    if (rr.st == detail::fd_reader::status::ok) return ++frames_, true;
    if (rr.st == detail::fd_reader::status::interrupted) return false;
    throw error(e_.who + ": the peer disconnected inside record " + std::to_string(frames_) + " (" +
                std::to_string(rr.got) + " of " + std::to_string(l_.bytes()) + " bytes)");
  }

  std::uint64_t frames_ = 0;  // records read
  record_layout l_;
  tcp_end e_;
  detail::unique_fd conn_;
  std::optional<detail::fd_reader> r_;
};

// Waiting for a peer and writing to a peer that does not read both poll the
// run's wake event, so a failed or cancelled run is never held up by the sink.
class tcp_sink final : public sinew::detail::sink_impl {
 public:
  tcp_sink(std::string host, std::uint16_t port, bool listen, const std::shared_ptr<std::atomic<int>>& bound)
      : e_(listen ? "tcp_listen_sink " : "tcp_connect_sink ", std::move(host), port, listen, bound),
        listens_(listen) {}
  void prepare(const sinew::detail::type_list&, std::optional<std::uint64_t>) override {
    order_.reset();
    if (listens_ && !e_.listener)
      throw error(e_.who + ": a listening sink serves one run (one connection); make a new sink for the next run");
    w_.reset();  // a new run gets a new connection (a failed run may have left one half written)
    conn_.reset();
    wake_ = std::make_unique<detail::wake_event>();  // a fresh one per run: the last run's stays signalled
    if (!listens_) {
      connect_to(e_.host, e_.port, conn_, nullptr, e_.who);
      connected();
    }
  }
  void interrupt() override {
    if (auto* w = wake_.get()) w->signal();
  }
  void consume(work_unit& u) override {
    order_.deliver(u, [&](std::uint64_t, const layer& l, const record_index& r) { send(l, r); });
    order_.flush_written([&] { w_->flush(); });
  }
  bool takes_notes() const override { return true; }
  void finish() override {
    order_.finish([&](std::uint64_t, const layer& l, const record_index& r) { send(l, r); });
    if (!w_) open();
    w_->flush();
    ::shutdown(conn_.get(), SHUT_WR);  // the reader sees end of stream
    w_.reset();
    conn_.reset();
    order_.written();
  }
  std::string label() const override { return "sink(" + e_.who + ")"; }
  bool writes_records() const override { return true; }
  void idle() override {
    if (w_) w_->flush();
  }

 private:
  void open() {
    if (e_.listener && !conn_) {  // waits for a peer
      if (!accept_one(e_.listener, conn_, wake_.get(), e_.who))
        throw error(e_.who + ": no peer connected before the run failed or was cancelled");
    }
    if (!w_) connected();
  }
  // Non-blocking from here on: a write waiting for room can be interrupted.
  void connected() {
    ::fcntl(conn_.get(), F_SETFL, ::fcntl(conn_.get(), F_GETFL) | O_NONBLOCK);
    w_.emplace(conn_.get(), e_.who, wake_.get());
  }
  // One frame per record: its length, then its buffers.
  void send(const layer& l, const record_index& r) {
    if (!w_) open();
    if (l.empty()) {
      const std::uint64_t zero = 0;
      w_->write(&zero, sizeof zero);
      return;
    }
    std::size_t elem_bytes = 0;  // of all buffers, per element
    for (unsigned b = 0; b < l.size(); ++b) elem_bytes += l[b]->type().size;
    detail::for_each_record_bytes(l, r, [&](const void* p, std::size_t n, unsigned b) {
      if (b == 0) {
        const std::uint64_t len = n / l[0]->type().size * elem_bytes;
        w_->write(&len, sizeof len);
      }
      w_->write(p, n);
    });
  }
  tcp_end e_;
  bool listens_;
  std::unique_ptr<detail::wake_event> wake_;
  detail::unique_fd conn_;
  std::optional<detail::fd_writer> w_;
  detail::in_order order_;
};

}  // namespace

sinew::source tcp_listen(std::string host, std::uint16_t port, record_layout layout,
                         std::shared_ptr<std::atomic<int>> bound_port, batching b) {
  return sinew::source(std::make_shared<tcp_source>(std::move(host), port, std::move(layout), true, bound_port, b));
}
sinew::source tcp_connect(std::string host, std::uint16_t port, record_layout layout, batching b) {
  return sinew::source(std::make_shared<tcp_source>(std::move(host), port, std::move(layout), false, nullptr, b));
}
sinew::sink tcp_connect_sink(std::string host, std::uint16_t port) {
  return sinew::sink(std::make_shared<tcp_sink>(std::move(host), port, false, nullptr));
}
sinew::sink tcp_listen_sink(std::string host, std::uint16_t port, std::shared_ptr<std::atomic<int>> bound_port) {
  return sinew::sink(std::make_shared<tcp_sink>(std::move(host), port, true, bound_port));
}

}  // namespace sinew::io
