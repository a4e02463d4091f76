#pragma once
/// \file shape.hpp
/// Extents of a 1-, 2- or 3-D array in row-major order (`ext[0]` is outermost).
///
/// \code
/// auto s = sinew::shape::d2(1080, 1920);   // rows, columns
/// assert(s.count() == 1080 * 1920 && s.inner() == 1920);
/// \endcode
#include <array>
#include <cstddef>
#include <string>

namespace sinew {

struct shape {
  unsigned rank = 1;
  std::array<std::size_t, 3> ext{0, 1, 1};

  static constexpr shape d1(std::size_t n) { return {1, {n, 1, 1}}; }
  static constexpr shape d2(std::size_t rows, std::size_t cols) { return {2, {rows, cols, 1}}; }
  static constexpr shape d3(std::size_t planes, std::size_t rows, std::size_t cols) {
    return {3, {planes, rows, cols}};
  }
  /// Total number of elements.
  constexpr std::size_t count() const { return ext[0] * ext[1] * ext[2]; }
  /// Elements in one step of the outermost dimension (a row in 2-D, a plane in 3-D).
  constexpr std::size_t inner() const { return ext[1] * ext[2]; }
  /// Extent of dimension `d` (0 = outermost); 1 beyond the rank.
  constexpr std::size_t extent(unsigned d) const { return d < 3 ? ext[d] : 1; }
  friend constexpr bool operator==(const shape& a, const shape& b) {
    return a.count() == b.count() && a.ext == b.ext;
  }
  /// "[1080x1920]".
  std::string str() const;
};

}  // namespace sinew
