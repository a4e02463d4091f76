// Descriptor plumbing shared by the sinew::io sources and sinks.
#include "stream.hpp"

#include "followed_file.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <cstring>
#include <optional>

#include <sinew/detail/clock.hpp>
#include <sinew/engine/buffer_pool.hpp>

namespace sinew::io::detail {

std::string errno_text(int e) {
  char buf[256];
  // GNU strerror_r returns the message (possibly not in buf).
  return std::string(strerror_r(e, buf, sizeof buf));
}

unique_fd& unique_fd::operator=(unique_fd&& o) noexcept {
  if (this != &o) reset(o.release());
  return *this;
}
unique_fd::~unique_fd() { reset(); }
void unique_fd::reset(int fd) noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

wake_event::wake_event() : fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  if (!fd_) throw sinew::error("cannot create an eventfd: " + errno_text(errno));
}

void wake_event::signal() noexcept {
  set_.store(true, std::memory_order_release);
  std::uint64_t one = 1;
  // The counter is never read, so it stays readable: every later poll wakes.
  [[maybe_unused]] ssize_t r = ::write(fd_.get(), &one, sizeof one);
}

bool wait_ready(int fd, short events, const wake_event* wake, const std::string& who) {
  pollfd p[2] = {{fd, events, 0}, {wake ? wake->fd() : -1, POLLIN, 0}};
  for (;;) {
    if (wake && wake->signalled()) return false;
    int r = ::poll(p, wake ? 2 : 1, -1);
    if (r < 0) {
      if (errno == EINTR) continue;
      throw sinew::error(who + ": poll failed: " + errno_text(errno));
    }
    if (wake && p[1].revents) return false;
    if (p[0].revents) return true;  // ready, or an error/hang-up the next call reports
  }
}

fd_reader::fd_reader(int fd, std::string who, const wake_event* wake, std::size_t buffer)
    : fd_(fd), who_(std::move(who)), wake_(wake), buf_(buffer + copy_slack), cap_(buffer) {
  struct stat st {};
  const bool ok = ::fstat(fd, &st) == 0;
  poll_first_ = !(ok && S_ISREG(st.st_mode));
  // A pipe of the default 64 KiB makes its writer and this reader take
  // turns every 64 KiB; a larger one (where the system allows) lets both
  // run. Failure is harmless.
  if (ok && S_ISFIFO(st.st_mode)) ::fcntl(fd, F_SETPIPE_SZ, int(std::size_t(1) << 20));
}

fd_reader::fd_reader(followed_file& f, std::string who, const wake_event* wake, std::size_t buffer)
    : fd_(-1), follow_(&f), who_(std::move(who)), wake_(wake), poll_first_(false), buf_(buffer + copy_slack), cap_(buffer) {}

long fd_reader::read_some(void* p, std::size_t n) {
  if (follow_) return follow_->read(p, n);
  for (;;) {
    if (poll_first_ && !wait_ready(fd_, POLLIN, wake_, who_)) return -1;
    if (wake_ && wake_->signalled()) return -1;
    ssize_t r = ::read(fd_, p, n);
    if (r >= 0) return long(r);
    if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
    throw sinew::error(who_ + ": read failed at byte " + std::to_string(offset_) + ": " + errno_text(errno));
  }
}

fd_reader::status fd_reader::read_exact(void* dst, std::size_t n, std::size_t& got) {
  char* d = static_cast<char*>(dst);
  got = 0;
  std::size_t have = end_ - pos_;
  if (have) {
    std::size_t k = have < n ? have : n;
    std::memcpy(d, buf_.data() + pos_, k);
    pos_ += k;
    got = k;
    offset_ += k;
  }
  while (got < n) {
    std::size_t want = n - got;
    long r;
    if (want >= cap_) {  // large: straight into the destination
      r = read_some(d + got, want);
      if (r > 0) {
        got += std::size_t(r);
        offset_ += std::uint64_t(r);
      }
    } else {
      r = read_some(buf_.data(), cap_);
      if (r > 0) {
        pos_ = 0;
        end_ = std::size_t(r);
        std::size_t k = end_ < want ? end_ : want;
        std::memcpy(d + got, buf_.data(), k);
        pos_ = k;
        got += k;
        offset_ += k;
      }
    }
    if (r == 0) return status::eof;
    if (r < 0) return status::interrupted;
  }
  return status::ok;
}

fd_reader::status fd_reader::peek_line(std::string_view& line) {
  if (peeked_) {
    line = in_spill_ ? std::string_view(spill_.data(), spill_.size()) : std::string_view(buf_.data() + pos_, peek_bytes_ - 1);
    return status::ok;
  }
  spill_.clear();
  bool any = false;
  for (;;) {
    if (pos_ < end_) {
      any = true;
      const char* b = buf_.data() + pos_;
      const void* nl = std::memchr(b, '\n', end_ - pos_);
      if (nl && spill_.empty()) {  // the whole line is buffered: no copy
        peek_bytes_ = std::size_t(static_cast<const char*>(nl) - b) + 1;
        peeked_ = true;
        in_spill_ = false;
        line = std::string_view(b, peek_bytes_ - 1);
        return status::ok;
      }
      const std::size_t k = nl ? std::size_t(static_cast<const char*>(nl) - b) : end_ - pos_;
      spill_.insert(spill_.end(), b, b + k);
      pos_ += k + (nl ? 1 : 0);
      if (nl) {
        peek_bytes_ = spill_.size() + 1;
        break;
      }
    }
    long r = read_some(buf_.data(), cap_);
    if (r < 0) return status::interrupted;
    if (r == 0) {
      if (!any) return status::eof;
      peek_bytes_ = spill_.size();  // a last line without '\n'
      break;
    }
    pos_ = 0;
    end_ = std::size_t(r);
  }
  peeked_ = in_spill_ = true;
  line = std::string_view(spill_.data(), spill_.size());
  return status::ok;
}

void fd_reader::take_line() noexcept {
  if (!peeked_) return;
  if (!in_spill_) pos_ += peek_bytes_;  // a spilled line left the buffer while it was peeked
  offset_ += peek_bytes_;
  peeked_ = false;
}

namespace {
/// The first '\n' in [p, e), or null. Lines are short: 16 bytes a step
/// (reading up to 15 bytes past `e`, inside the read buffer's slack) beats
/// a memchr call per line.
const char* find_newline(const char* p, const char* e) noexcept {
#if defined(__SSE2__)
  const __m128i nl = _mm_set1_epi8('\n');
  for (; p < e; p += 16) {
    const unsigned m = unsigned(_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)), nl)));
    if (m) {
      const char* q = p + __builtin_ctz(m);
      return q < e ? q : nullptr;
    }
  }
  return nullptr;
#else
  return static_cast<const char*>(std::memchr(p, '\n', std::size_t(e - p)));
#endif
}
}  // namespace

std::size_t fd_reader::read_records(char* dst, std::size_t size, std::size_t max, status& st) {
  const long r = read_some(dst, max * size);
  if (r <= 0) {
    st = r == 0 ? status::eof : status::interrupted;
    return 0;
  }
  st = status::ok;
  const std::size_t whole = std::size_t(r) / size, rem = std::size_t(r) % size;
  if (rem) {  // the start of the next record waits in the read buffer
    std::memcpy(buf_.data(), dst + whole * size, rem);
    pos_ = 0;
    end_ = rem;
  }
  offset_ += whole * size;
  return whole;
}

std::size_t fd_reader::take_buffered_lines(char* dst, std::size_t cap, std::size_t& used, std::uint64_t* ends,
                                           std::size_t max) noexcept {
  const char* const start = buf_.data() + pos_;
  const char *p = start, *const e = buf_.data() + end_;
  std::size_t k = 0;
  while (k < max && p < e) {
    const char* nl = find_newline(p, e);
    if (!nl) break;
    const std::size_t len = std::size_t(nl - p);
    if (len > cap - used) break;
    copy_short(dst + used, p, len);  // dst has copy_slack bytes past cap, buf_ past its data
    used += len;
    ends[k++] = used;
    p = nl + 1;
  }
  pos_ += std::size_t(p - start);
  offset_ += std::uint64_t(p - start);
  return k;
}

bool fd_reader::data_within(std::uint64_t deadline_ns) const {
  if (!poll_first_ && !follow_) return true;  // a regular file never waits
  // Past the deadline a batch closes even while data keeps coming: a slow
  // graph does not hold its first record back beyond the latency.
  if (sinew::detail::now_ns() >= deadline_ns) return false;
  if (pos_ < end_ || peeked_) return true;
  if (follow_) return follow_->data_within(deadline_ns);
  for (;;) {
    if (wake_ && wake_->signalled()) return true;
    const std::uint64_t now = sinew::detail::now_ns();
    if (now >= deadline_ns) return false;
    const std::uint64_t left = deadline_ns - now;
    timespec ts{time_t(left / 1000000000u), long(left % 1000000000u)};
    pollfd p[2] = {{fd_, POLLIN, 0}, {wake_ ? wake_->fd() : -1, POLLIN, 0}};
    int r = ::ppoll(p, wake_ ? 2 : 1, &ts, nullptr);
    if (r < 0 && errno != EINTR) throw sinew::error(who_ + ": poll failed: " + errno_text(errno));
    if (r > 0) return true;  // data, an error or hang-up the read reports, or the wake event
  }
}

fd_writer::fd_writer(int fd, std::string who, const wake_event* wake, std::size_t buffer)
    : fd_(fd), who_(std::move(who)), wake_(wake), buf_(buffer + copy_slack), cap_(buffer) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw sinew::error(who_ + ": not an open descriptor: " + errno_text(errno));
  socket_ = S_ISSOCK(st.st_mode);
  may_sigpipe_ = !socket_ && !S_ISREG(st.st_mode);
}

void fd_writer::write(const void* p, std::size_t n) {
  if (n == 0) return;
  // Small writes are gathered; a quarter of the buffer or more goes out at
  // once with what is gathered (no copy).
  if (used_ + n <= cap_ && n < cap_ / 4) {
    std::memcpy(buf_.data() + used_, p, n);
    used_ += n;
    return;
  }
  ::iovec iov[2] = {{buf_.data(), used_}, {const_cast<void*>(p), n}};
  write_all(used_ ? iov : iov + 1, used_ ? 2 : 1);
  used_ = 0;
}

void fd_writer::write_lines(const char* base, const std::uint64_t* off, std::size_t n, std::size_t readable) {
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t len = std::size_t(off[i + 1] - off[i]);
    if (used_ + len + 1 > cap_) {
      flush();
      if (len + 1 > cap_) {  // longer than the buffer: straight out
        write(base + off[i], len);
        write("\n", 1);
        continue;
      }
    }
    if (off[i] + copy_slack <= readable) copy_short(buf_.data() + used_, base + off[i], len);  // buf_ has the slack
    else std::memcpy(buf_.data() + used_, base + off[i], len);
    buf_[used_ + len] = '\n';
    used_ += len + 1;
  }
}

void fd_writer::flush() {
  if (!used_) return;
  ::iovec iov{buf_.data(), used_};
  used_ = 0;
  write_all(&iov, 1);
}

namespace {
// Blocks SIGPIPE on this thread while alive; a SIGPIPE raised meanwhile by
// a write is consumed, so a closed pipe is an EPIPE error, not process death.
class sigpipe_guard {
 public:
  sigpipe_guard() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &set_, &old_);
  }
  void consume() {
    if (was_pending_) return;
    timespec zero{0, 0};
    while (sigtimedwait(&set_, nullptr, &zero) < 0 && errno == EINTR) {}
  }
  ~sigpipe_guard() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }

 private:
  sigset_t set_, old_;
  bool was_pending_ = false;
};
}  // namespace

void fd_writer::write_all(::iovec* iov, int n) {
  std::size_t total = 0;
  for (int i = 0; i < n; ++i) total += iov[i].iov_len;
  std::optional<sigpipe_guard> guard;
  if (may_sigpipe_) guard.emplace();
  std::size_t done = 0;
  while (n > 0) {
    ssize_t r;
    if (socket_) {
      msghdr m{};
      m.msg_iov = iov;
      m.msg_iovlen = std::size_t(n);
      r = ::sendmsg(fd_, &m, MSG_NOSIGNAL);
    } else {
      r = ::writev(fd_, iov, n);
    }
    if (r < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {  // a non-blocking descriptor: wait for room
        if (!wait_ready(fd_, POLLOUT, wake_, who_))
          throw sinew::error(who_ + ": interrupted after " + std::to_string(written_ + done) +
                             " bytes while the peer was not reading (the run failed or was cancelled)");
        continue;
      }
      int e = errno;
      if (e == EPIPE && guard) guard->consume();
      throw sinew::error(who_ + ": write failed after " + std::to_string(written_ + done) + " bytes: " +
                         errno_text(e));
    }
    done += std::size_t(r);
    std::size_t k = std::size_t(r);
    while (n > 0 && k >= iov->iov_len) {
      k -= iov->iov_len;
      ++iov;
      --n;
    }
    if (n > 0) {
      iov->iov_base = static_cast<char*>(iov->iov_base) + k;
      iov->iov_len -= k;
    }
  }
  written_ += total;
}

record_read read_record(fd_reader& r, const record_layout& l, char* const* dst) {
  const std::size_t n = l.shape.count();
  std::size_t got = 0;
  for (std::size_t i = 0; i < l.buffers.size(); ++i) {
    std::size_t g = 0;
    const fd_reader::status st = r.read_exact(dst[i], n * l.buffers[i]->size, g);
    got += g;
    if (st != fd_reader::status::ok) return {st, got};
  }
  return {fd_reader::status::ok, got};
}

std::size_t layer_bytes(const layer& l) noexcept {
  std::size_t s = 0;
  for (unsigned i = 0; i < l.size(); ++i) s += l.bytes_of(i);
  return s;
}

void write_records(fd_writer& w, const layer& l, const record_index& r) {
  if (l.size() == 1) {  // the records back to back are the buffer
    w.write(l[0]->data(), l.bytes_of(0));
    return;
  }
  for_each_record_bytes(l, r, [&](const void* p, std::size_t n, unsigned) { w.write(p, n); });
}

void output_sink::prepare(const sinew::detail::type_list& out, std::optional<std::uint64_t>) {
  check_types(out);
  order_.reset();
  int fd = fd_;
  if (!path_.empty()) {
    owned_.reset(::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (!owned_) throw sinew::error(who_ + ": cannot open for writing: " + errno_text(errno));
    fd = owned_.get();
  }
  w_.emplace(fd, who_);
}

void output_sink::finish() {
  order_.finish([&](std::uint64_t s, const layer& l, const record_index& r) { write_unit(s, l, r); });
  w_->flush();
  if (owned_ && ::close(owned_.release()) != 0)  // NFS and friends report late errors here
    throw sinew::error(who_ + ": close failed: " + errno_text(errno));
  order_.written();
}

void io_source::batch_for(const std::string& whole_unit_at) {
  on_ = batch_.mode == batching::when::always || (batch_.mode == batching::when::automatic && whole_unit_at.empty());
  if (batch_.mode == batching::when::always && !whole_unit_at.empty())
    throw graph_error(whole_unit_at, label() + " is told to make record batches, but this place needs one unit per "
                                               "record (a batch would not give the results of its records one by one)");
  if (on_ && (batch_.records == 0 || batch_.bytes == 0))
    throw graph_error(label(), "a record batch needs at least one record and one byte");
}

bool io_source::next(unit_builder& b) {
  if (!failed_.empty()) return false;
  if (!later_.empty()) {
    failed_ = std::move(later_);
    return false;
  }
  try {
    return produce(b);
  } catch (const std::exception& e) {
    failed_ = e.what();
    if (failed_.empty()) failed_ = label() + ": failed";
    return false;
  }
}

}  // namespace sinew::io::detail
