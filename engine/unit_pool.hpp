#pragma once
// Internal: the working units of one run, recycled.
#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include <sinew/detail/ring.hpp>
#include <sinew/engine/work_unit.hpp>

#include "counters.hpp"

namespace sinew::detail {

/// Units a run hands out and takes back: a lock-free ring of free units
/// sized for every unit the run can have alive (docs/runtime.md: at most the
/// sum of the capacities + 2), with a locked list behind it for the rare
/// push that finds the ring full.
///
/// \code
/// unit_pool p(bound);
/// work_unit* u = p.acquire();   // recycled, or new
/// p.release(u);                 // cleared and kept
/// \endcode
class unit_pool {
 public:
  explicit unit_pool(std::size_t bound) : free_(bound) {}
  work_unit* acquire() {
    work_unit* u = nullptr;
    if (!free_.try_pop(u)) u = acquire_slow();
    acquired_.fetch_add(1, std::memory_order_seq_cst);  // a locked add on x86 whatever the order
    return u;
  }
  void release(work_unit* u) {
    u->clear();
    // Acquirers and releasers (a source and a sink, on different cores)
    // count on lines of their own; the high-water mark is sampled at every
    // sample_every-th release (it may miss a peak between samples).
    if (released_.fetch_add(1, std::memory_order_seq_cst) % sample_every == 0) raise_max(alive_max_, alive());
    if (!free_.try_push(u)) release_slow(u);
  }
  /// After a run that gave every unit back (alive() == 0), with no other
  /// thread using the pool: the counts zero, as a new pool that keeps the
  /// units it made (all free, and cleared by release()).
  void restart() noexcept {
    acquired_.store(0, std::memory_order_relaxed);
    released_.store(0, std::memory_order_relaxed);
    alive_max_.store(0, std::memory_order_relaxed);
  }
  /// Exact once the run has ended. While it runs, never more than were
  /// alive when `released_` was read: `acquired_` is read first, and all
  /// four operations are sequentially consistent (plain loads on x86).
  std::size_t alive() const noexcept {
    const std::size_t a = acquired_.load(std::memory_order_seq_cst), r = released_.load(std::memory_order_seq_cst);
    return a > r ? a - r : 0;
  }
  /// The most units alive at once, as sampled (see release()).
  std::size_t alive_max() const noexcept { return alive_max_.load(std::memory_order_relaxed); }
  static constexpr std::size_t sample_every = 16;

 private:
  work_unit* acquire_slow();
  void release_slow(work_unit* u);

  mpmc_ring<work_unit*> free_;  // recycled units, lock-free
  std::mutex m_;                // guards the two below (slow path)
  std::vector<work_unit*> spare_;
  std::vector<std::unique_ptr<work_unit>> all_;
  alignas(cache_line) std::atomic<std::size_t> acquired_{0};
  alignas(cache_line) std::atomic<std::size_t> released_{0};
  std::atomic<std::size_t> alive_max_{0};
};

}  // namespace sinew::detail
