#pragma once
/// \file group_range.hpp
/// The index spaces of group kernels (skeletons/group_kernel.hpp): the
/// global range of work-items and the size of a work-group.
#include <array>
#include <cstddef>
#include <string>

namespace sinew {

/// A 1-, 2- or 3-D index space; dimension 0 is the outermost.
///
/// \code
/// sinew::range r = sinew::range2d{1080, 1920};   // rows, columns
/// assert(r.rank == 2 && r.count() == 1080 * 1920 && r[2] == 1);
/// \endcode
struct range {
  unsigned rank = 1;
  std::array<std::size_t, 3> ext{1, 1, 1};
  constexpr std::size_t operator[](unsigned d) const noexcept { return d < 3 ? ext[d] : 1; }
  constexpr std::size_t count() const noexcept { return ext[0] * ext[1] * ext[2]; }
  /// "[64x64]".
  std::string str() const {
    std::string s = "[";
    for (unsigned d = 0; d < rank; ++d) s += (d ? "x" : "") + std::to_string(ext[d]);
    return s + "]";
  }
  friend constexpr bool operator==(const range&, const range&) = default;
};
struct range1d : range {
  constexpr range1d(std::size_t n) : range{1, {n, 1, 1}} {}
};
struct range2d : range {
  constexpr range2d(std::size_t rows, std::size_t cols) : range{2, {rows, cols, 1}} {}
};
struct range3d : range {
  constexpr range3d(std::size_t planes, std::size_t rows, std::size_t cols) : range{3, {planes, rows, cols}} {}
};

}  // namespace sinew
