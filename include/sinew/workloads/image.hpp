#pragma once
/// \file workloads/image.hpp
/// RGBA8 pixels and a deterministic image generator for the image-filter
/// workloads (Solarize, Gaussian noise, Mirror: the image-filter pipeline of
/// the benchmark suite of [Marques14, §5.1.1]).
///
/// \code
/// sinew::array<sinew::workloads::rgba8, 2> img = sinew::workloads::make_image(480, 640, 1);
/// sinew::workloads::rgba8 p = img(10, 20);
/// \endcode
#include <cstddef>
#include <cstdint>

#include <sinew/engine/array.hpp>
#include <sinew/engine/shape.hpp>
#include <sinew/workloads/random.hpp>

namespace sinew::workloads {

/// One 8-bit RGBA pixel (4 bytes, no padding).
///
/// \code
/// sinew::workloads::rgba8 red{255, 0, 0, 255};
/// assert(red == (sinew::workloads::rgba8{255, 0, 0, 255}));
/// \endcode
struct rgba8 {
  std::uint8_t r = 0, g = 0, b = 0, a = 0;
  friend bool operator==(const rgba8&, const rgba8&) = default;
};
static_assert(sizeof(rgba8) == 4, "rgba8 must be 4 bytes");

/// An image of `rows` x `cols` pixels, deterministic from `seed` and the same
/// on every machine (integer arithmetic only): colour gradients plus hashed
/// noise, with a varying alpha channel (filters must leave alpha alone).
///
/// \code
/// std::vector<sinew::array<sinew::workloads::rgba8, 2>> images;
/// for (int k = 0; k < 20; ++k) images.push_back(sinew::workloads::make_image(256, 256, k));
/// \endcode
inline sinew::array<rgba8, 2> make_image(std::size_t rows, std::size_t cols, std::uint64_t seed) {
  sinew::array<rgba8, 2> img(sinew::shape::d2(rows, cols));
  const std::uint64_t s = splitmix64(seed);
  const unsigned phase = unsigned(s & 0xff);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) {
      std::uint64_t h = hash64(s, r * cols + c);
      unsigned gx = cols > 1 ? unsigned(c * 255 / (cols - 1)) : 128;
      unsigned gy = rows > 1 ? unsigned(r * 255 / (rows - 1)) : 128;
      rgba8 p;
      p.r = std::uint8_t(gx + (h & 63) - 32);
      p.g = std::uint8_t(gy + ((h >> 8) & 63) - 32);
      p.b = std::uint8_t(((gx + gy) / 2 + phase) + ((h >> 16) & 31));
      p.a = std::uint8_t(192 + ((h >> 24) & 63));
      img(r, c) = p;
    }
  return img;
}

}  // namespace sinew::workloads
