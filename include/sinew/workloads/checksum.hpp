#pragma once
/// \file workloads/checksum.hpp
/// A stable 64-bit checksum of raw bytes: FNV-1a 64 (Fowler/Noll/Vo, offset
/// basis 0xcbf29ce484222325, prime 0x100000001b3). It depends only on the
/// bytes, so it is the same on every run and every machine (for byte-typed
/// data such as images and volumes; multi-byte elements hash in the
/// machine's byte order). Used by `sinew demo` and the benchmarks to compare
/// a graph's outputs with the sequential references.
///
/// \code
/// std::uint64_t h = sinew::workloads::fnv1a_offset;
/// for (auto& img : outputs) h = sinew::workloads::checksum(img.data(), img.size() * sizeof(rgba8), h);
/// std::printf("%016llx\n", (unsigned long long)h);
/// \endcode
#include <cstddef>
#include <cstdint>

namespace sinew::workloads {

/// FNV-1a 64 offset basis: the checksum of zero bytes, and the start value
/// for chained checksums.
///
/// \code
/// std::uint64_t h = sinew::workloads::fnv1a_offset;   // then h = checksum(p, n, h) per buffer
/// \endcode
inline constexpr std::uint64_t fnv1a_offset = 0xcbf29ce484222325ULL;
/// FNV-1a 64 prime (per byte: `h = (h ^ byte) * fnv1a_prime`).
///
/// \code
/// std::uint64_t h = (sinew::workloads::fnv1a_offset ^ 'a') * sinew::workloads::fnv1a_prime;  // checksum("a", 1)
/// \endcode
inline constexpr std::uint64_t fnv1a_prime = 0x100000001b3ULL;

/// FNV-1a 64 of `bytes` bytes at `data`, continuing from `h` (pass a previous
/// result to checksum several buffers as if they were concatenated).
///
/// \code
/// auto h = sinew::workloads::checksum("abc", 3);                  // 0xe71fa2190541574b
/// auto h2 = sinew::workloads::checksum("c", 1, sinew::workloads::checksum("ab", 2));  // == h
/// \endcode
inline std::uint64_t checksum(const void* data, std::size_t bytes, std::uint64_t h = fnv1a_offset) noexcept {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; ++i) {
    h ^= p[i];
    h *= fnv1a_prime;
  }
  return h;
}

/// Checksum of the elements of a contiguous container (anything with
/// `data()` and `size()`: `std::vector`, `sinew::array`, `std::span`).
///
/// \code
/// std::uint64_t h = sinew::workloads::checksum_of(image);          // sinew::array<rgba8, 2>
/// h = sinew::workloads::checksum_of(next_image, h);                  // chained
/// \endcode
template <class C>
std::uint64_t checksum_of(const C& c, std::uint64_t h = fnv1a_offset) noexcept {
  return checksum(c.data(), c.size() * sizeof(*c.data()), h);
}

}  // namespace sinew::workloads
