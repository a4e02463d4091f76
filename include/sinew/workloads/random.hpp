#pragma once
/// \file workloads/random.hpp
/// Counter-based pseudo-random numbers for the workload generators and the
/// Gaussian-noise leaf. Everything is a pure function of (seed, counter), so
/// a value never depends on which worker computed it or in which order, and
/// the integer generators give the same data on every machine.
///
/// \code
/// std::uint64_t h = sinew::workloads::hash64(seed, i);     // i-th value of stream `seed`
/// float u = sinew::workloads::unit_float(h);               // in [0, 1)
/// \endcode
#include <cstdint>

namespace sinew::workloads {

/// SplitMix64 (Steele, Lea, Flood: "Fast splittable pseudorandom number
/// generators", OOPSLA 2014): the output for generator state `x`, i.e. the
/// golden-ratio increment followed by the 64-bit finaliser.
///
/// \code
/// std::uint64_t s = seed;
/// for (int i = 0; i < 4; ++i) use(sinew::workloads::splitmix64(s + i * 0x9E3779B97F4A7C15ULL));
/// \endcode
constexpr std::uint64_t splitmix64(std::uint64_t x) noexcept {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

/// A well-mixed 64-bit value that depends only on `(seed, i)`.
///
/// \code
/// std::uint8_t noise = std::uint8_t(sinew::workloads::hash64(42, pixel) >> 56);
/// \endcode
constexpr std::uint64_t hash64(std::uint64_t seed, std::uint64_t i) noexcept {
  return splitmix64(splitmix64(seed) ^ i);
}

/// Top 24 bits of `h` as a float in [0, 1) (exact: every value is k / 2^24).
///
/// \code
/// float x = 2.0f * sinew::workloads::unit_float(sinew::workloads::hash64(seed, i)) - 1.0f;  // [-1, 1)
/// \endcode
constexpr float unit_float(std::uint64_t h) noexcept { return float(h >> 40) * 0x1p-24f; }

}  // namespace sinew::workloads
