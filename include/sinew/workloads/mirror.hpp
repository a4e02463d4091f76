#pragma once
/// \file workloads/mirror.hpp
/// **Mirror** ([Marques14, §5.1.1] image filters): horizontal mirror,
/// out(r, c) = in(r, cols - 1 - c). An output pixel needs another input
/// pixel, so the leaf is per chunk: it gets a range of rows and views of the
/// whole input and output images.
///
/// \code
/// sinew::graph g(sinew::map<sinew::workloads::mirror>());
/// g.run(images, mirrored).get();
/// assert(mirrored[0] == sinew::workloads::mirror_reference(images[0]));
/// \endcode
#include <cstddef>

#include <sinew/engine/array.hpp>
#include <sinew/skeletons/leaf.hpp>
#include <sinew/workloads/image.hpp>

namespace sinew::workloads {

/// Per-chunk leaf over rows: writes rows [c.begin, c.end) of `dst`.
///
/// \code
/// auto node = sinew::map<sinew::workloads::mirror>();
/// \endcode
struct mirror {
  void operator()(sinew::chunk c, sinew::in<rgba8, 2> src, sinew::out<rgba8, 2> dst) const {
    const std::size_t cols = src.cols();
    for (std::size_t r = c.begin; r < c.end; ++r) {
      const rgba8* s = &src(r, 0);
      rgba8* d = &dst(r, 0);
      for (std::size_t x = 0; x < cols; ++x) d[x] = s[cols - 1 - x];
    }
  }
};

/// Sequential reference.
///
/// \code
/// auto ref = sinew::workloads::mirror_reference(img);
/// \endcode
inline sinew::array<rgba8, 2> mirror_reference(const sinew::array<rgba8, 2>& in) {
  sinew::array<rgba8, 2> out(in.shape());
  const std::size_t rows = in.shape().ext[0], cols = in.shape().ext[1];
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) out(r, c) = in(r, cols - 1 - c);
  return out;
}

}  // namespace sinew::workloads
