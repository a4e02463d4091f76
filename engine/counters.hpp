#pragma once
// Internal: relaxed counter updates shared by the run-time objects.
#include <atomic>
#include <cstdint>

namespace sinew::detail {

/// Raises `m` to `v` if `v` is larger (a high-water mark; relaxed).
template <class T>
inline void raise_max(std::atomic<T>& m, T v) noexcept {
  T cur = m.load(std::memory_order_relaxed);
  while (v > cur && !m.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {}
}

/// Lowers `m` to `v` if `v` is smaller (a low-water mark; relaxed).
template <class T>
inline void lower_min(std::atomic<T>& m, T v) noexcept {
  T cur = m.load(std::memory_order_relaxed);
  while (v < cur && !m.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {}
}

/// Adds `v` to `c`. Counters of serial stages have one writer at a time
/// (activations of a serial stage are ordered by `active`), so a plain load
/// and store does: no locked instruction on the per-unit path. Concurrent
/// stages add.
inline void bump(std::atomic<std::uint64_t>& c, std::uint64_t v, bool concurrent) noexcept {
  if (concurrent) c.fetch_add(v, std::memory_order_relaxed);
  else c.store(c.load(std::memory_order_relaxed) + v, std::memory_order_relaxed);
}

}  // namespace sinew::detail
