#pragma once
// Internal: the run-time state of an ordered farm (docs/runtime.md, "Order").
#include <atomic>
#include <cstddef>

namespace sinew::detail {

struct stage_rt;

/// Slots taken by units inside an ordered region: its entry stage admits a
/// unit only with a free slot, and the unit gives it back when it leaves the
/// reorder channel, so the unit whose turn it is always fits in that channel.
///
/// \code
/// if (r.try_enter()) { /* take a unit */ }
/// // ... the unit leaves the reorder channel:
/// r.leave();                        // wakes the entry stage if the region was full
/// \endcode
struct region_rt {
  std::atomic<std::size_t> occupied{0};
  /// The reorder channel's capacity (raised with it, after it: see
  /// run_state::grow_capacities).
  std::atomic<std::size_t> window{0};
  stage_rt* entry = nullptr;

  bool full() const noexcept {
    return occupied.load(std::memory_order_seq_cst) >= window.load(std::memory_order_relaxed);
  }
  bool try_enter() noexcept {
    std::size_t o = occupied.load(std::memory_order_seq_cst);
    const std::size_t w = window.load(std::memory_order_relaxed);
    while (o < w)
      if (occupied.compare_exchange_weak(o, o + 1, std::memory_order_seq_cst)) return true;
    return false;
  }
  /// Gives back a slot that was never used (the activation that took it
  /// found no unit): no one waits on it that the activation's own exit
  /// recheck would not cover.
  void cancel_enter() noexcept { occupied.fetch_sub(1, std::memory_order_seq_cst); }
  /// A unit left the region. Admission can only have been refused while the
  /// region was full, and then the next change of `occupied` is a decrement
  /// from full (entries fail meanwhile): only that one wakes the entry stage,
  /// not every unit that leaves (a full notify per unit on the serial
  /// consumer's path).
  void leave() {
    if (occupied.fetch_sub(1, std::memory_order_seq_cst) >= window.load(std::memory_order_relaxed)) wake_entry();
  }

 private:
  void wake_entry();
};

}  // namespace sinew::detail
