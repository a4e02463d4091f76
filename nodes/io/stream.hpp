#pragma once
// Internal to the sinew::io sources and sinks (nodes/io_*.cpp): descriptors,
// reads that stop() can interrupt, buffered writes that name their target,
// records, in-order delivery and the deferred end-of-stream error.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <sinew/detail/clock.hpp>
#include <sinew/engine/buffer_pool.hpp>
#include <sinew/engine/error.hpp>
#include <sinew/io/batching.hpp>
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

/// Bytes a short copy may read and write past the end of what it copies.
inline constexpr std::size_t copy_slack = 16;
/// Copies `n` bytes; up to copy_slack as one fixed 16-byte move (no call),
/// which reads and writes up to 16 - n bytes past both ends: the caller
/// leaves that much room (a line's copy costs a call's worth less).
inline void copy_short(char* d, const char* s, std::size_t n) noexcept {
  if (n <= copy_slack) std::memcpy(d, s, copy_slack);
  else std::memcpy(d, s, n);
}

class followed_file;

/// Buffered, interruptible reads from a descriptor or a followed file
/// (followed_file.hpp). Reads of at least the buffer's size go straight to
/// the destination (no copy).
class fd_reader {
 public:
  enum class status { ok, eof, interrupted };
  /// `who` names the stream in errors ("read_file 'x.bin'").
  fd_reader(int fd, std::string who, const wake_event* wake, std::size_t buffer = std::size_t(1) << 18);
  /// Reads `f` (which outlives the reader): eof only at its idle timeout.
  fd_reader(followed_file& f, std::string who, const wake_event* wake, std::size_t buffer = std::size_t(1) << 18);
  /// Reads `n` bytes into `dst`; `got` = bytes read (< n unless ok).
  status read_exact(void* dst, std::size_t n, std::size_t& got);
  /// The next line (up to '\n', without it), left unread until take_line():
  /// a view into the read buffer, or into a buffer of its own when the line
  /// spans reads. eof: nothing was left; a last line without '\n' is ok.
  status peek_line(std::string_view& line);
  /// Consumes the line peek_line returned.
  void take_line() noexcept;
  /// Nothing is buffered: reads of `bytes` or more are better done by
  /// read_records.
  bool empty() const noexcept { return pos_ == end_ && !peeked_; }
  std::size_t capacity() const noexcept { return cap_; }
  /// With nothing buffered: one read straight into `dst` of up to `max`
  /// records of `size` <= capacity() bytes (waiting for the first byte, not
  /// for all); returns the whole records read, and keeps the start of a
  /// partial one buffered. `st`: eof or interrupted when it returns 0 with
  /// nothing buffered.
  std::size_t read_records(char* dst, std::size_t size, std::size_t max, status& st);
  /// Copies the whole records of `size` bytes in the read buffer (no read),
  /// at most `max`, to `dst`; returns how many.
  std::size_t take_buffered(char* dst, std::size_t size, std::size_t max) noexcept {
    const std::size_t k = std::min(max, (end_ - pos_) / size);
    std::memcpy(dst, buf_.data() + pos_, k * size);
    pos_ += k * size;
    offset_ += k * size;
    return k;
  }
  /// Consumes the lines wholly in the read buffer (no read, nothing peeked):
  /// at most `max`, each copied without its '\n' to `dst + used` while it
  /// fits below `dst + cap`, `used` advanced and appended to `ends`.
  /// Returns how many; stops at a partial line or one that does not fit.
  std::size_t take_buffered_lines(char* dst, std::size_t cap, std::size_t& used, std::uint64_t* ends, std::size_t max) noexcept;
  /// Whether a batch may take more data: false from `deadline_ns` (steady
  /// clock) on, or when no byte is buffered and none arrives before it; true
  /// at once for regular files (never waiting) and when the stream is being
  /// stopped (the next read says so).
  bool data_within(std::uint64_t deadline_ns) const;
  /// Bytes consumed so far (the stream offset of the next byte).
  std::uint64_t offset() const noexcept { return offset_; }
  const std::string& who() const noexcept { return who_; }

 private:
  // One read into [p, p+n): > 0 bytes, 0 at EOF, -1 when interrupted.
  long read_some(void* p, std::size_t n);
  int fd_;
  followed_file* follow_ = nullptr;
  std::string who_;
  const wake_event* wake_;
  bool poll_first_;  // not for regular files: always readable
  std::vector<char> buf_;  // cap_ bytes, then copy_slack
  std::size_t cap_;
  std::size_t pos_ = 0, end_ = 0;
  std::uint64_t offset_ = 0;
  // The peeked line: in buf_ at pos_ (consuming `peek_bytes_`, '\n'
  // included) or, when it spans reads, in `spill_`.
  bool peeked_ = false, in_spill_ = false;
  std::size_t peek_bytes_ = 0;
  std::vector<char> spill_;
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
  /// Writes lines [base + off[i], base + off[i + 1]) for i < n, each
  /// followed by '\n'; `readable`: bytes from `base` that may be read
  /// (short lines are copied with copy_short where it stays inside).
  void write_lines(const char* base, const std::uint64_t* off, std::size_t n, std::size_t readable);
  void flush();
  const std::string& who() const noexcept { return who_; }
  std::uint64_t written() const noexcept { return written_; }

 private:
  void write_all(::iovec* iov, int n);
  int fd_;
  std::string who_;
  const wake_event* wake_;
  bool socket_ = false, may_sigpipe_ = false;
  std::vector<char> buf_;  // cap_ bytes, then copy_slack
  std::size_t cap_;
  std::size_t used_ = 0;
  std::uint64_t written_ = 0;
};

/// Outcome of reading one record.
struct record_read {
  fd_reader::status st;
  std::size_t got;  // bytes of the record read (== layout.bytes() when ok)
};

/// Reads one record of `l` into `dst[i]` (buffer i's elements of the record).
record_read read_record(fd_reader& r, const record_layout& l, char* const* dst);
/// Bytes of a layer's data: the elements of each buffer's shape.
std::size_t layer_bytes(const layer& l) noexcept;
/// Calls `f(p, n, b)` for the bytes `[p, p + n)` of buffer `b` of `l` as
/// records are written: record by record, each its buffers back to back (a
/// unit that is not a batch, or whose index no longer fits, or whose buffers
/// have shapes of their own, is one record).
template <class F>
void for_each_record_bytes(const layer& l, const record_index& r, F&& f) {
  if (!r.fits(l.count()) || !l.uniform()) {
    for (unsigned b = 0; b < l.size(); ++b) f(l[b]->data(), l.bytes_of(b), b);
    return;
  }
  for (std::size_t i = 0; i < r.size(); ++i)
    for (unsigned b = 0; b < l.size(); ++b) {
      const std::size_t sz = l[b]->type().size;
      f(static_cast<const char*>(l[b]->data()) + r.begin(i) * sz, (r.end(i) - r.begin(i)) * sz, b);
    }
}
/// Writes a unit's records, as for_each_record_bytes.
void write_records(fd_writer& w, const layer& l, const record_index& r);

/// Hands units to `f(seq, layer, records)` in sequence order, per source (a dag's
/// merge interleaves the streams of several). A unit that arrives early
/// (through an unordered farm) is kept until its turn: a copy of its layer 0,
/// which shares the buffers, so nothing is copied. It takes the units'
/// delivery notes (delivery.hpp): those of the units handed to `f` wait in
/// `unwritten()` until the sink says their bytes are out of its hands
/// (`written()`); a sink that uses it returns true from `takes_notes`.
class in_order {
 public:
  template <class F>
  void deliver(work_unit& u, F&& f) {
    stream& s = streams_[u.origin()];
    // A second unit of a sequence number already written: a dag's broadcast
    // merged back into one sink. It goes out as it comes.
    if (u.seq() < s.next) {
      f(u.seq(), u.in(), u.records());
      keep(std::move(u.note()));
      return;
    }
    if (u.seq() != s.next) {
      s.held.emplace(u.seq(), held_unit{u.in(), u.records(), std::move(u.note())});
      return;
    }
    f(u.seq(), u.in(), u.records());
    keep(std::move(u.note()));
    ++s.next;
    for (auto it = s.held.begin(); it != s.held.end() && it->first <= s.next; it = s.held.erase(it)) {
      f(it->first, it->second.l, it->second.r);
      keep(std::move(it->second.note));
      if (it->first == s.next) ++s.next;
    }
  }
  /// End of stream: anything still held (only after a gap in the sequence,
  /// which a graph does not make) goes out in order.
  template <class F>
  void finish(F&& f) {
    for (auto& [origin, s] : streams_)
      for (auto& [seq, h] : s.held) {
        f(seq, h.l, h.r);
        keep(std::move(h.note));
      }
    streams_.clear();
  }
  /// Units handed to `f` whose notes wait for `written()`.
  bool unwritten() const noexcept { return !unwritten_.empty(); }
  /// The units handed to `f` so far are written: their notes are released.
  void written() noexcept {
    for (note_ref& n : unwritten_) n.written();
    unwritten_.clear();
  }
  /// When notes wait (an at-least-once source), calls `flush()` to put
  /// their units' bytes out of the sink's hands, then releases them.
  template <class Flush>
  void flush_written(Flush&& flush) {
    if (unwritten_.empty()) return;
    flush();
    written();
  }
  /// Hands the waiting notes to `f(note_ref)` (a sink that learns later
  /// that they are written: MQTT's acknowledgements).
  template <class F>
  void take_unwritten(F&& f) {
    for (note_ref& n : unwritten_) f(std::move(n));
    unwritten_.clear();
  }
  void reset() {
    streams_.clear();
    unwritten_.clear();  // a new run: the last one's notes are lost
  }

 private:
  /// Sequence numbers count per source: a dag's merge of several sources
  /// interleaves streams that each start at 0.
  struct held_unit {
    layer l;
    record_index r;
    note_ref note;
  };
  struct stream {
    std::uint64_t next = 0;
    std::multimap<std::uint64_t, held_unit> held;
  };
  void keep(note_ref n) {
    if (n) unwritten_.push_back(std::move(n));
  }
  std::map<std::uint32_t, stream> streams_;
  std::vector<note_ref> unwritten_;
};

/// Base of the sinks that write units, in sequence order, to a descriptor
/// they borrow or to a file they create (truncated) in prepare(): buffered,
/// written out when the sink runs dry on a live stream and at the end.
class output_sink : public sinew::detail::sink_impl {
 public:
  /// `path` empty: write to `fd`; `who` names the target in errors.
  output_sink(std::string path, int fd, std::string who) : path_(std::move(path)), fd_(fd), who_(std::move(who)) {}
  void prepare(const sinew::detail::type_list& out, std::optional<std::uint64_t> units) override;
  void consume(work_unit& u) override {
    order_.deliver(u, [&](std::uint64_t s, const layer& l, const record_index& r) { write_unit(s, l, r); });
    order_.flush_written([&] { w_->flush(); });
  }
  void finish() override;
  void idle() override {
    if (w_) w_->flush();
  }
  bool writes_records() const override { return true; }
  bool takes_notes() const override { return true; }
  std::string label() const override { return "sink(" + who_ + ")"; }

 protected:
  /// Checks what the graph writes (prepare), before the target is opened.
  virtual void check_types(const sinew::detail::type_list& out) { (void)out; }
  /// Writes unit `seq`'s layer 0, record by record when it is a batch.
  virtual void write_unit(std::uint64_t seq, const layer& l, const record_index& r) = 0;
  fd_writer& out() { return *w_; }
  const std::string& who() const noexcept { return who_; }

 private:
  std::string path_;
  int fd_;
  std::string who_;
  unique_fd owned_;
  std::optional<fd_writer> w_;
  in_order order_;
};

/// Base of the sources that read from a descriptor. An error ends the stream
/// (`next` returns false) and is raised by `after_delivery`, so every unit
/// read before it reaches the sink first.
class io_source : public sinew::detail::source_impl {
 public:
  explicit io_source(batching b = {}) : batch_(b) {}
  bool next(unit_builder& b) final;
  void interrupt() override { wake_.signal(); }
  void after_delivery() override {
    if (!failed_.empty()) throw sinew::error(failed_);
  }
  void batch_for(const std::string& whole_unit_at) override;

 protected:
  /// Fills the next unit; false at the end. May throw: see above.
  virtual bool produce(unit_builder& b) = 0;
  /// Whether this run's units are record batches (set by batch_for).
  bool batching_on() const noexcept { return on_; }
  const batching& batch() const noexcept { return batch_; }
  /// Fills `b` with up to per_unit(l.bytes()) records of `l`, read by
  /// `more(dst, room)`: it reads the next records (at least one, at most
  /// `room`, blocking for the first) into `dst[i]` for buffer i and returns
  /// how many: 0 at the end of the stream (or when stopped); it throws when
  /// the stream is broken. Several records a unit make a record batch,
  /// closed at the latency bound after its first record even while bytes
  /// keep coming; an error after some records delivers them first (the
  /// stream ends with it at the next unit). False: no record.
  template <class F>
  bool fill_records(unit_builder& b, const record_layout& l, const fd_reader& r, F&& more) {
    const std::size_t per = per_unit(l.bytes());
    const std::size_t n = l.shape.count();
    std::vector<buffer_ref> bufs;
    char* dst[layer::max_buffers];
    for (const elem_type* t : l.buffers) bufs.push_back(buffer_pool::global().acquire(n * per, *t));
    std::uint64_t deadline = 0;
    std::size_t k = 0;
    while (k < per) {
      if (k > 0 && !r.data_within(deadline)) break;
      for (std::size_t i = 0; i < bufs.size(); ++i) dst[i] = static_cast<char*>(bufs[i]->data()) + k * n * l.buffers[i]->size;
      std::size_t got = 0;
      try {
        got = more(static_cast<char* const*>(dst), per - k);
      } catch (const std::exception& e) {
        if (k == 0) throw;
        fail_later(e.what());
        break;
      }
      if (got == 0) break;
      if (k == 0) deadline = sinew::detail::now_ns() + std::uint64_t(batch_.latency.count()) * 1000;
      k += got;
    }
    if (k == 0) return false;
    shape s = l.shape;
    s.ext[0] *= k;
    b.set_shape(s);
    for (buffer_ref& x : bufs) {
      x->shrink(n * k);
      b.add(std::move(x));
    }
    if (per > 1) b.set_records(record_index::fixed(k, l.shape));
    return true;
  }
  /// Records a unit: batch().records and bytes for a layout of `bytes`, or
  /// 1 when not batching.
  std::size_t per_unit(std::size_t bytes) const noexcept {
    return on_ ? std::max<std::size_t>(1, std::min(batch_.records, batch_.bytes / bytes)) : 1;
  }
  /// An error found after some records of a batch were read: the batch is
  /// delivered, and the stream ends with the error at the next unit.
  void fail_later(std::string what) { later_ = std::move(what); }
  wake_event wake_;

 private:
  batching batch_;
  bool on_ = false;
  std::string failed_, later_;
};

}  // namespace sinew::io::detail
