#pragma once
// Internal to the message sources and sinks (ZeroMQ, MQTT): records in and
// out of messages (include/sinew/io/message_format.hpp).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <sinew/engine/buffer_pool.hpp>
#include <sinew/engine/source.hpp>
#include <sinew/io/message_format.hpp>

namespace sinew::io::detail {

/// One frame of a message: bytes the message system owns.
struct frame {
  const void* data;
  std::size_t size;
};

/// Fills one unit with the records of consecutive messages: up to
/// `records` records and `bytes` bytes (a larger text record is a unit of
/// its own). Reused from unit to unit.
class message_batch {
 public:
  enum class added { ok, full, malformed };
  message_batch(message_format f, std::size_t records, std::size_t bytes);
  /// Appends the record carried by `frames[0, n)`. `full`: it does not fit
  /// in this unit (nothing added; add it to the next). `malformed`: it is
  /// not a record of the format; why() says why.
  added add(const frame* frames, std::size_t n);
  const std::string& why() const noexcept { return why_; }
  std::size_t size() const noexcept { return n_; }
  bool full() const noexcept { return n_ == max_records_; }
  /// Records this unit can still take.
  std::size_t room() const noexcept { return max_records_ - n_; }
  /// Moves the records into `b` (a record batch when `batch`; one record
  /// otherwise) and starts an empty unit. Requires size() > 0.
  void finish(unit_builder& b, bool batch);

  /// Binary records of this many bytes or more are not copied: see adopt().
  static constexpr std::size_t adopt_from = 16384;
  /// True when `frames[0, n)` are a well-formed binary record of at least
  /// `adopt_from` bytes.
  bool adoptable(const frame* frames, std::size_t n) const { return adopts_ && frames_fit(frames, n); }
  /// Makes `b` a unit of that one record whose buffers are the frames'
  /// memory, kept alive by `message` until the last buffer goes.
  void adopt(const frame* frames, std::size_t n, std::shared_ptr<void> message, unit_builder& b, bool batch) const;

 private:
  void start();
  bool frames_fit(const frame* frames, std::size_t n) const;
  message_format f_;
  std::size_t record_bytes_ = 0;  // binary: the layout's bytes(), read once per record
  bool adopts_ = false;           // binary records of adopt_from bytes or more
  std::size_t max_records_, max_bytes_;
  std::size_t n_ = 0, used_ = 0;  // records, and bytes of text
  std::vector<buffer_ref> bufs_;  // binary: one per buffer of the layout; text: the bytes
  buffer_ref offs_;               // text: n_ + 1 offsets
  std::string why_;
};

/// Calls `f(frames, n, buffers)` once per record of a unit's layer 0 (a unit
/// that is not a batch, or whose buffers have shapes of their own, is one
/// record, each buffer its shape's elements): the frames of its message, one per
/// buffer when `multipart`, else one of the buffers back to back (gathered
/// into `scratch` when there are several); `buffers` are the record's
/// buffers, one frame each.
template <class F>
void for_each_message(const layer& l, const record_index& r, bool multipart, std::vector<char>& scratch, F&& f) {
  const bool whole = !r.fits(l.count()) || !l.uniform();
  const std::size_t n = whole ? 1 : r.size();
  frame fr[layer::max_buffers];
  for (std::size_t i = 0; i < n; ++i) {
    for (unsigned b = 0; b < l.size(); ++b) {
      const std::size_t b0 = whole ? 0 : r.begin(i), e0 = whole ? l.shape_of(b).count() : r.end(i);
      const std::size_t sz = l[b]->type().size;
      fr[b] = {static_cast<const char*>(l[b]->data()) + b0 * sz, (e0 - b0) * sz};
    }
    if (l.size() == 0) fr[0] = {nullptr, 0};  // a unit of no buffers: an empty message
    const frame* bufs = fr;
    if (multipart || l.size() <= 1) {
      f(bufs, std::max<std::size_t>(l.size(), 1), bufs);
      continue;
    }
    scratch.clear();
    for (unsigned b = 0; b < l.size(); ++b)
      scratch.insert(scratch.end(), static_cast<const char*>(fr[b].data), static_cast<const char*>(fr[b].data) + fr[b].size);
    const frame one{scratch.data(), scratch.size()};
    f(&one, std::size_t(1), bufs);
  }
}

}  // namespace sinew::io::detail
