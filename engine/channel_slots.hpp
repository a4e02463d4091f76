#pragma once
// Internal: the slot count of a channel with several producers or consumers.
#include <atomic>
#include <cstddef>

#include <sinew/detail/ring.hpp>

namespace sinew::detail {

/// Units queued plus slots reserved (`used`), kept at most the capacity:
/// producers reserve before they take their own input, and a pop frees the
/// slot. The MPMC and reorder channels count here; an SPSC channel reads its
/// ring instead (one producer holding at most one reservation).
///
/// \code
/// channel_slots s;
/// std::size_t occ;
/// if (s.try_reserve(cap, occ)) { /* push a unit */ }
/// bool was_full = s.release() >= cap;   // after a pop: wake the producer if it was full
/// \endcode
struct channel_slots {
  alignas(cache_line) std::atomic<std::size_t> used{0};

  /// Takes a slot if fewer than `cap` are used; `occupied`: the count with it.
  bool try_reserve(std::size_t cap, std::size_t& occupied) noexcept {
    std::size_t u = used.load(std::memory_order_seq_cst);
    while (u < cap)
      if (used.compare_exchange_weak(u, u + 1, std::memory_order_seq_cst)) {
        occupied = u + 1;
        return true;
      }
    return false;
  }
  /// Gives back a reservation.
  void drop() noexcept { used.fetch_sub(1, std::memory_order_seq_cst); }
  /// Frees the slot of a unit popped; returns the count before.
  std::size_t release() noexcept { return used.fetch_sub(1, std::memory_order_seq_cst); }
  bool has_space(std::size_t cap) const noexcept { return used.load(std::memory_order_seq_cst) < cap; }
  std::size_t size() const noexcept { return used.load(std::memory_order_relaxed); }
};

}  // namespace sinew::detail
