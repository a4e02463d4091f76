#pragma once
/// \file records.hpp
/// A unit that carries many small records (a *record batch*): layer 0's
/// buffers hold the records back to back, and the unit's `record_index`
/// says where each one starts. Fixed-size records (binary streams) are `n`
/// records of one shape, stacked along the outermost dimension; records of
/// varying size (text lines) are 1-D element ranges given by `n + 1`
/// offsets. A leaf that works per element sees the whole batch at once and
/// needs nothing else; a per-record leaf (`sinew::record`, leaf.hpp) sees one
/// record at a time; sinks write records.
///
/// \code
/// auto ix = sinew::record_index::fixed(100, sinew::shape::d1(16));   // 100 records of 16 elements
/// assert(ix.size() == 100 && ix.begin(3) == 48 && ix.elements() == 1600);
/// assert(ix.shape_of(3, sinew::shape::d1(1600)) == sinew::shape::d1(16));
/// // Lines "ab", "", "cde": bytes "abcde", offsets {0, 2, 2, 5}.
/// auto off = sinew::buffer_pool::global().acquire<std::uint64_t>(4);
/// auto ln = sinew::record_index::varying(off, 3);
/// \endcode
#include <cstddef>
#include <cstdint>

#include <sinew/engine/buffer.hpp>
#include <sinew/engine/shape.hpp>

namespace sinew {

class record_index {
 public:
  /// Not a batch: the unit is one record.
  record_index() = default;
  /// `n` records of shape `record` each; layer 0 has shape `record` with its
  /// outermost extent multiplied by `n`.
  static record_index fixed(std::size_t n, const shape& record) {
    record_index r;
    r.n_ = n;
    r.stride_ = record.count();
    return r;
  }
  /// `n` 1-D records; `offsets` holds `n + 1` element offsets (u64), the
  /// first 0, the last the batch's element count. Shared, never copied.
  static record_index varying(buffer_ref offsets, std::size_t n) {
    record_index r;
    r.n_ = n;
    r.off_ = std::move(offsets);
    return r;
  }

  /// True when the unit is a batch (even of one record).
  bool batch() const noexcept { return n_ != 0; }
  /// Records in the batch (0: not a batch).
  std::size_t size() const noexcept { return n_; }
  /// Records the unit counts as: the batch's, or 1.
  std::size_t records() const noexcept { return n_ ? n_ : 1; }
  /// First element of record `i` in layer 0 (row-major across the whole
  /// layer), and one past its last.
  std::size_t begin(std::size_t i) const noexcept { return off_ ? off_.data<std::uint64_t>()[i] : i * stride_; }
  std::size_t end(std::size_t i) const noexcept { return begin(i + 1); }
  /// Elements of all records (what layer 0 must hold for the index to apply).
  std::size_t elements() const noexcept { return begin(n_); }
  /// Shape of record `i` of a batch whose layer 0 has shape `whole`: 1-D
  /// for varying records, else `whole` with its outermost extent / size().
  shape shape_of(std::size_t i, const shape& whole) const noexcept {
    if (off_) return shape::d1(end(i) - begin(i));
    shape s = whole;
    s.ext[0] /= n_;
    return s;
  }
  /// The offsets buffer of varying records (null for fixed ones).
  const buffer_ref& offsets() const noexcept { return off_; }
  /// Whether the index describes a layer of `count` elements: a leaf that
  /// changed the unit's size (a reduction, a resize) leaves an index that
  /// no longer applies, and the unit is then one record.
  bool fits(std::size_t count) const noexcept { return n_ && elements() == count; }

 private:
  // Small (it travels in every unit): fixed records keep their size, and
  // their shape follows from the layer's.
  std::size_t n_ = 0;
  std::size_t stride_ = 0;  // fixed: elements of one record
  buffer_ref off_;
};

}  // namespace sinew
