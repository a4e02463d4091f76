#pragma once
// Internal to the sinew::io sources and sinks (nodes/io_*.cpp): descriptors,
// reads that stop() can interrupt, buffered writes that name their target,
// records, in-order delivery and the deferred end-of-stream error.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <sinew/engine/error.hpp>
#include <sinew/io/record_layout.hpp>
#include <sinew/engine/sink.hpp>
#include <sinew/engine/source.hpp>

struct iovec;

namespace sinew::io::detail {

/// "No such file or directory" for errno `e`.
std::string errno_text(int e);

/// Owns a descriptor (closed on destruction).
class unique_fd {
 public:
  unique_fd() = default;
  explicit unique_fd(int fd) noexcept : fd_(fd) {}
  unique_fd(unique_fd&& o) noexcept : fd_(o.release()) {}
  unique_fd& operator=(unique_fd&& o) noexcept;
  ~unique_fd();
  int get() const noexcept { return fd_; }
  int release() noexcept {
    int f = fd_;
    fd_ = -1;
    return f;
  }
  void reset(int fd = -1) noexcept;
  explicit operator bool() const noexcept { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

/// An eventfd that stays signalled once signalled: a `poll` that includes it
/// returns at once. This is how `source_impl::interrupt` reaches a thread
/// blocked waiting for data (a plain blocking `read` could not be woken).
class wake_event {
 public:
  wake_event();
  void signal() noexcept;
  bool signalled() const noexcept { return set_.load(std::memory_order_acquire); }
  int fd() const noexcept { return fd_.get(); }

 private:
  unique_fd fd_;
  std::atomic<bool> set_{false};
};

/// Waits until `fd` is ready for `events` (POLLIN/POLLOUT) or `wake` fires
/// (false). Throws naming `who` on a poll error.
bool wait_ready(int fd, short events, const wake_event* wake, const std::string& who);

/// Buffered, interruptible reads from a descriptor. Reads of at least the
/// buffer's size go straight to the destination (no copy).
class fd_reader {
 public:
  enum class status { ok, eof, interrupted };
  /// `who` names the stream in errors ("read_file 'x.bin'").
  fd_reader(int fd, std::string who, const wake_event* wake, std::size_t buffer = std::size_t(1) << 16);
  /// Reads `n` bytes into `dst`; `got` = bytes read (< n unless ok).
  status read_exact(void* dst, std::size_t n, std::size_t& got);
  /// Reads up to '\n' into `line` (without it). eof: nothing was left.
  /// A last line without '\n' is returned as ok.
  status read_line(std::vector<std::uint8_t>& line);
  /// Bytes consumed so far (the stream offset of the next byte).
  std::uint64_t offset() const noexcept { return offset_; }
  const std::string& who() const noexcept { return who_; }

 private:
  // One read into [p, p+n): > 0 bytes, 0 at EOF, -1 when interrupted.
  long read_some(void* p, std::size_t n);
  int fd_;
  std::string who_;
  const wake_event* wake_;
  bool poll_first_;  // not for regular files: always readable
  std::vector<char> buf_;
  std::size_t pos_ = 0, end_ = 0;
  std::uint64_t offset_ = 0;
};

/// Buffered writes to a descriptor; small writes are gathered, large ones go
/// out with `writev` together with what is gathered. Errors throw
/// `sinew::error` naming `who`. A closed pipe or socket reports EPIPE instead
/// of killing the process (MSG_NOSIGNAL, or SIGPIPE blocked on this thread
/// while it writes and a pending one consumed). On a non-blocking descriptor
/// a write waiting for room throws "interrupted" once `wake` fires.
class fd_writer {
 public:
  fd_writer(int fd, std::string who, const wake_event* wake = nullptr, std::size_t buffer = std::size_t(256) << 10);
  void write(const void* p, std::size_t n);
  void flush();
  const std::string& who() const noexcept { return who_; }
  std::uint64_t written() const noexcept { return written_; }

 private:
  void write_all(::iovec* iov, int n);
  int fd_;
  std::string who_;
  const wake_event* wake_;
  bool socket_ = false, may_sigpipe_ = false;
  std::vector<char> buf_;
  std::size_t used_ = 0;
  std::uint64_t written_ = 0;
};

/// Outcome of reading one record.
struct record_read {
  fd_reader::status st;
  std::size_t got;  // bytes of the record read (== layout.bytes() when ok)
};

/// Reads one record of `l` into fresh pooled buffers added to `b`.
record_read read_record(fd_reader& r, const record_layout& l, unit_builder& b);
/// Bytes of a layer's data: `count()` elements per buffer.
std::size_t layer_bytes(const layer& l) noexcept;
/// Writes a layer's buffers back to back.
void write_layer(fd_writer& w, const layer& l);

/// Hands units to `f(seq, layer)` in sequence order, per source (a dag's
/// merge interleaves the streams of several). A unit that arrives early
/// (through an unordered farm) is kept until its turn: a copy of its layer 0,
/// which shares the buffers, so nothing is copied.
class in_order {
 public:
  template <class F>
  void deliver(const work_unit& u, F&& f) {
    stream& s = streams_[u.origin()];
    // A second unit of a sequence number already written: a dag's broadcast
    // merged back into one sink. It goes out as it comes.
    if (u.seq() < s.next) {
      f(u.seq(), u.in());
      return;
    }
    if (u.seq() != s.next) {
      s.held.emplace(u.seq(), u.in());
      return;
    }
    f(u.seq(), u.in());
    ++s.next;
    for (auto it = s.held.begin(); it != s.held.end() && it->first <= s.next; it = s.held.erase(it)) {
      f(it->first, it->second);
      if (it->first == s.next) ++s.next;
    }
  }
  /// End of stream: anything still held (only after a gap in the sequence,
  /// which a graph does not make) goes out in order.
  template <class F>
  void finish(F&& f) {
    for (auto& [origin, s] : streams_)
      for (auto& [seq, l] : s.held) f(seq, l);
    streams_.clear();
  }
  void reset() { streams_.clear(); }

 private:
  /// Sequence numbers count per source: a dag's merge of several sources
  /// interleaves streams that each start at 0.
  struct stream {
    std::uint64_t next = 0;
    std::multimap<std::uint64_t, layer> held;
  };
  std::map<std::uint32_t, stream> streams_;
};

/// Base of the sources that read from a descriptor. An error ends the stream
/// (`next` returns false) and is raised by `after_delivery`, so every unit
/// read before it reaches the sink first.
class io_source : public sinew::detail::source_impl {
 public:
  bool next(unit_builder& b) final;
  void interrupt() override { wake_.signal(); }
  void after_delivery() override {
    if (!failed_.empty()) throw sinew::error(failed_);
  }

 protected:
  /// Fills the next unit; false at the end. May throw: see above.
  virtual bool produce(unit_builder& b) = 0;
  wake_event wake_;

 private:
  std::string failed_;
};

}  // namespace sinew::io::detail
