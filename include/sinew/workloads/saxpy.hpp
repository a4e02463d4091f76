#pragma once
/// \file workloads/saxpy.hpp
/// **Saxpy** ([Marques14, §5.1.1]; BLAS level 1): `z = a*x + y` over float32
/// vectors, one map over one unit holding x and y.
///
/// \code
/// auto in = sinew::workloads::make_saxpy_inputs(1 << 20, 7);
/// std::vector<float> z;
/// sinew::graph g(sinew::map<sinew::workloads::saxpy>({2.5f}));
/// g.run(sinew::from_arrays(in.x, in.y), sinew::into_arrays(z)).get();
/// assert(z == sinew::workloads::saxpy_reference(2.5f, in.x, in.y));
/// \endcode
#include <cstddef>
#include <cstdint>
#include <vector>

#include <sinew/skeletons/leaf.hpp>
#include <sinew/workloads/random.hpp>

namespace sinew::workloads {

/// Per-element leaf: `*z = a * x + y` (the Saxpy functor of [Marques14, Listing 4.2]).
///
/// \code
/// auto node = sinew::map<sinew::workloads::saxpy>({2.5f});
/// \endcode
struct saxpy {
  float a = 2.0f;
  void operator()(float x, float y, float* z) const { *z = a * x + y; }
};

/// Sequential reference: `z[i] = a * x[i] + y[i]` (same expression as the
/// leaf, so the results are bit-identical).
///
/// \code
/// std::vector<float> z = sinew::workloads::saxpy_reference(2.5f, x, y);
/// \endcode
inline std::vector<float> saxpy_reference(float a, const std::vector<float>& x, const std::vector<float>& y) {
  std::vector<float> z(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) z[i] = a * x[i] + y[i];
  return z;
}

/// Inputs of one saxpy unit (two vectors of the same length).
///
/// \code
/// sinew::workloads::saxpy_inputs in = sinew::workloads::make_saxpy_inputs(1024, 3);
/// auto src = sinew::from_arrays(in.x, in.y);
/// \endcode
struct saxpy_inputs {
  std::vector<float> x, y;
};

/// `n` pairs of values in [-1, 1), deterministic from `seed`.
///
/// \code
/// auto in = sinew::workloads::make_saxpy_inputs(1000, 1);   // in.x.size() == in.y.size() == 1000
/// \endcode
inline saxpy_inputs make_saxpy_inputs(std::size_t n, std::uint64_t seed) {
  saxpy_inputs in{std::vector<float>(n), std::vector<float>(n)};
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t h = hash64(seed, i);
    in.x[i] = 2.0f * unit_float(h) - 1.0f;
    in.y[i] = 2.0f * unit_float(h << 24) - 1.0f;
  }
  return in;
}

}  // namespace sinew::workloads
