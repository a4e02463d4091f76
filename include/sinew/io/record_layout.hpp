#pragma once
/// \file io/record_layout.hpp
/// What one unit's input layer looks like when it is read from (or written
/// to) a byte stream: the element type of each buffer, in order, and the
/// shape they share. A *record* is one unit's buffers back to back
/// (buffer 0, then buffer 1, ...), each `shape.count()` elements in the
/// machine's byte order (little-endian on every platform Sinew targets).
///
/// \code
/// // Two float buffers of 1024 elements per unit: 8192-byte records.
/// auto l = sinew::io::record_layout::of<float, float>(sinew::shape::d1(1024));
/// assert(l.bytes() == 8192);
/// sinew::io::record_layout img{{&sinew::elem_type_of<sinew::workloads::rgba8>()}, sinew::shape::d2(480, 640)};
/// \endcode
#include <cstddef>
#include <string>
#include <vector>

#include <sinew/engine/elem_type.hpp>
#include <sinew/engine/shape.hpp>

namespace sinew::io {

struct record_layout {
  /// One entry per buffer of layer 0, in order (at most 8: a layer's limit).
  std::vector<const sinew::elem_type*> buffers;
  /// Elements per buffer per unit (1-3 D).
  sinew::shape shape;

  /// Bytes of one record: sum over buffers of `shape.count() * size`.
  std::size_t bytes() const;
  /// "f32,i32 [1024]" (for messages).
  std::string str() const;
  /// Throws `sinew::error` starting with `who` if the layout cannot describe
  /// a unit: no buffers, more than 8, a null type, or a zero-byte record.
  void check(const std::string& who) const;

  /// Layout of buffers of types `T...` sharing shape `s`.
  template <class... T>
  static record_layout of(const sinew::shape& s) {
    return record_layout{{&elem_type_of<T>()...}, s};
  }
};

}  // namespace sinew::io
