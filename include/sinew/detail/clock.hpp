#pragma once
// Monotonic nanoseconds, for statistics.
#include <chrono>
#include <cstdint>

namespace sinew::detail {

inline std::uint64_t now_ns() noexcept {
  return std::uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::steady_clock::now().time_since_epoch())
                           .count());
}

}  // namespace sinew::detail
