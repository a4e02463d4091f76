#pragma once
/// \file workloads/gaussian_noise.hpp
/// **Gaussian noise** ([Marques14, §5.1.1] image filters): adds N(0, sigma²)
/// noise to the R, G and B channels of every pixel (alpha untouched), rounds
/// and clamps to [0, 255]. The noise of pixel i depends only on (seed, i):
/// a counter-based hash (SplitMix64) gives the uniforms, Box–Muller turns
/// them into normals. So a parallel run is bit-identical to a sequential
/// one, whatever the split. Every image of a stream gets the same noise
/// field (the leaf does not see the unit's position).
///
/// \code
/// sinew::graph g(sinew::map<sinew::workloads::gaussian_noise>({42, 20.0f}));
/// g.run(images, noisy).get();
/// assert(noisy[0] == sinew::workloads::gaussian_noise_reference(images[0], 42, 20.0f));
/// \endcode
#include <cmath>
#include <cstddef>
#include <cstdint>

#include <sinew/engine/array.hpp>
#include <sinew/skeletons/leaf.hpp>
#include <sinew/workloads/image.hpp>
#include <sinew/workloads/random.hpp>
#include <sinew/workloads/unspecialised.hpp>

namespace sinew::workloads {

/// Three standard normal deviates for pixel `i` of noise field `seed`
/// (two Box–Muller pairs from two SplitMix64 outputs; the fourth is unused).
///
/// \code
/// float z[3];
/// sinew::workloads::pixel_normals(42, 1000, z);
/// \endcode
inline void pixel_normals(std::uint64_t seed, std::uint64_t i, float z[3]) {
  constexpr float two_pi = 6.28318530717958647692f;
  std::uint64_t h1 = hash64(seed, i);
  std::uint64_t h2 = splitmix64(h1);
  // u1 in (0, 1] so the log is finite; u2 in [0, 1).
  float u1 = float((h1 >> 40) + 1) * 0x1p-24f, u2 = float((h1 >> 8) & 0xffffff) * 0x1p-24f;
  float u3 = float((h2 >> 40) + 1) * 0x1p-24f, u4 = float((h2 >> 8) & 0xffffff) * 0x1p-24f;
  float r1 = std::sqrt(-2.0f * std::log(u1)), r2 = std::sqrt(-2.0f * std::log(u3));
  z[0] = r1 * std::cos(two_pi * u2);
  z[1] = r1 * std::sin(two_pi * u2);
  z[2] = r2 * std::cos(two_pi * u4);
}

/// `c + sigma * z` clamped to [0, 255] and rounded to nearest.
///
/// \code
/// std::uint8_t v = sinew::workloads::add_noise(250, 20.0f, 1.0f);   // 255 (clamped)
/// \endcode
inline std::uint8_t add_noise(std::uint8_t c, float sigma, float z) {
  float v = float(c) + sigma * z;
  v = v < 0.0f ? 0.0f : (v > 255.0f ? 255.0f : v);
  return std::uint8_t(v + 0.5f);
}

/// Pixel `i` of a noisy image: `p` plus noise field `seed` with deviation `sigma`.
///
/// One machine code for the leaf, the reference and the peers
/// (unspecialised.hpp): they agree bit for bit.
///
/// \code
/// sinew::workloads::rgba8 q = sinew::workloads::noisy_pixel(p, 42, 20.0f, 7);
/// \endcode
SINEW_UNSPECIALISED inline rgba8 noisy_pixel(rgba8 p, std::uint64_t seed, float sigma, std::uint64_t i) {
  float z[3];
  pixel_normals(seed, i, z);
  return rgba8{add_noise(p.r, sigma, z[0]), add_noise(p.g, sigma, z[1]), add_noise(p.b, sigma, z[2]), p.a};
}

/// Per-element leaf with `sinew::index` first: pixel i gets noise (seed, i).
///
/// \code
/// auto node = sinew::map<sinew::workloads::gaussian_noise>({/*seed*/ 42, /*sigma*/ 20.0f});
/// \endcode
struct gaussian_noise {
  std::uint64_t seed = 1;
  float sigma = 16.0f;  ///< standard deviation in 8-bit levels
  void operator()(sinew::index i, rgba8 p, rgba8* o) const { *o = noisy_pixel(p, seed, sigma, i.linear); }
};

/// Sequential reference: pixel by pixel in row-major order.
///
/// \code
/// auto ref = sinew::workloads::gaussian_noise_reference(img, 42, 20.0f);
/// \endcode
inline sinew::array<rgba8, 2> gaussian_noise_reference(const sinew::array<rgba8, 2>& in, std::uint64_t seed,
                                                        float sigma) {
  sinew::array<rgba8, 2> out(in.shape());
  for (std::size_t i = 0; i < in.size(); ++i) out[i] = noisy_pixel(in[i], seed, sigma, i);
  return out;
}

}  // namespace sinew::workloads
