#pragma once
// The unbalanced kernel of [Vinas17, §4.2.2] as a C++ leaf, shared by the
// benchmarks that run it (multidevice_unbalanced, cpp_vs_opencl_cpu): 1 flop
// on a zero, 1001 on a non-zero, no extra memory access; the same
// arithmetic as graphs/kernels/unbalanced.cl.
//
//   sinew::array<float, 2> m = unbalanced_matrix(rows, cols, 0.5);   // top half zeros
//   sinew::graph g(sinew::map<unbalanced>());
#include <cstddef>

#include <sinew/engine/array.hpp>
#include <sinew/opencl/simulated_device.hpp>  // unbalanced_first_nonzero_row

namespace sinew_bench {

struct unbalanced {
  void operator()(float x, float* y) const {
    if (x == 0) {
      *y = x + 1;
      return;
    }
    float v = x;
    for (int k = 0; k < 500; ++k) v = v * 0.999f + 0.001f;
    *y = v;
  }
};

/// Fills `m` with zeros in the top rows and non-zeros below, so that a
/// fraction `nonzero` of the rows are non-zero ([Vinas17]: zeros on top).
inline void fill_unbalanced(sinew::array<float, 2>& m, double nonzero) {
  const std::size_t rows = m.shape().ext[0], cols = m.shape().ext[1];
  const std::size_t first = sinew::unbalanced_first_nonzero_row(rows, nonzero);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) m(r, c) = r < first ? 0.0f : 0.5f + float((r + c) % 7) * 0.01f;
}

}  // namespace sinew_bench
