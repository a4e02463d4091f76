#pragma once
/// \file workloads/segmentation.hpp
/// **Segmentation** ([Marques14, §5.1.1]): a 3-D grey-scale volume (e.g.
/// 100³ uint8 voxels) is split into three classes by two thresholds: a voxel
/// becomes 255 (white) if v > hi, 0 (black) if v < lo, and 128 (grey)
/// otherwise.
///
/// \code
/// sinew::array<std::uint8_t, 3> vol = sinew::workloads::make_volume(100, 100, 100, 3), seg;
/// sinew::graph g(sinew::map<sinew::workloads::segmentation>({85, 170}));
/// g.run(sinew::from_arrays(vol), sinew::into_arrays(seg)).get();
/// assert(seg == sinew::workloads::segmentation_reference(vol, 85, 170));
/// \endcode
#include <cstddef>
#include <cstdint>

#include <sinew/engine/array.hpp>
#include <sinew/engine/shape.hpp>
#include <sinew/workloads/random.hpp>

namespace sinew::workloads {

/// Per-element leaf: classifies one voxel.
///
/// \code
/// auto node = sinew::map<sinew::workloads::segmentation>({/*lo*/ 85, /*hi*/ 170});
/// \endcode
struct segmentation {
  std::uint8_t lo = 85;   ///< below: black (0)
  std::uint8_t hi = 170;  ///< above: white (255)
  void operator()(std::uint8_t v, std::uint8_t* o) const {
    *o = v > hi ? std::uint8_t(255) : (v < lo ? std::uint8_t(0) : std::uint8_t(128));
  }
};

/// Sequential reference (a plain loop, independent of the leaf).
///
/// \code
/// auto ref = sinew::workloads::segmentation_reference(vol, 85, 170);
/// \endcode
inline sinew::array<std::uint8_t, 3> segmentation_reference(const sinew::array<std::uint8_t, 3>& in,
                                                             std::uint8_t lo, std::uint8_t hi) {
  sinew::array<std::uint8_t, 3> out(in.shape());
  for (std::size_t i = 0; i < in.size(); ++i) {
    std::uint8_t v = in[i];
    if (v > hi) out[i] = 255;
    else if (v < lo) out[i] = 0;
    else out[i] = 128;
  }
  return out;
}

/// A smooth-ish random volume of `planes` x `rows` x `cols` voxels,
/// deterministic from `seed` and identical on every machine: value noise
/// (random lattice values every 8 voxels, trilinearly interpolated in
/// integer arithmetic) plus a little per-voxel noise, spanning all three
/// classes of the default thresholds.
///
/// \code
/// auto vol = sinew::workloads::make_volume(100, 100, 100, 3);   // shape d3(100, 100, 100)
/// \endcode
inline sinew::array<std::uint8_t, 3> make_volume(std::size_t planes, std::size_t rows, std::size_t cols,
                                                  std::uint64_t seed) {
  constexpr std::size_t L = 8;  // lattice spacing
  sinew::array<std::uint8_t, 3> vol(sinew::shape::d3(planes, rows, cols));
  const std::uint64_t s = splitmix64(seed);
  auto lattice = [&](std::size_t p, std::size_t r, std::size_t c) -> int {
    std::uint64_t key = (std::uint64_t(p) * 0x9E3779B97F4A7C15ULL) ^ (std::uint64_t(r) * 0xC2B2AE3D27D4EB4FULL) ^
                        (std::uint64_t(c) * 0x165667B19E3779F9ULL);
    return int(hash64(s, key) >> 56);  // 0..255
  };
  for (std::size_t p = 0; p < planes; ++p)
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t c = 0; c < cols; ++c) {
        const std::size_t p0 = p / L, r0 = r / L, c0 = c / L;
        const int wp = int(p % L), wr = int(r % L), wc = int(c % L), L_ = int(L);
        int acc = 0;  // sum of corner values times weights (total weight L^3)
        for (int dp = 0; dp < 2; ++dp)
          for (int dr = 0; dr < 2; ++dr)
            for (int dc = 0; dc < 2; ++dc) {
              int w = (dp ? wp : L_ - wp) * (dr ? wr : L_ - wr) * (dc ? wc : L_ - wc);
              acc += w * lattice(p0 + std::size_t(dp), r0 + std::size_t(dr), c0 + std::size_t(dc));
            }
        int v = acc / (L_ * L_ * L_);
        v += int(hash64(s ^ 0x5eed, (p * rows + r) * cols + c) >> 59) - 16;  // +-16
        vol(p, r, c) = std::uint8_t(v < 0 ? 0 : (v > 255 ? 255 : v));
      }
  return vol;
}

}  // namespace sinew::workloads
