#pragma once
/// \file item_cost.hpp
/// The learned cost of one item of a data-parallel leaf (an element, an
/// outermost index or a record), which sizes the tasks a map splits a unit
/// into: each task should take about `task_ns`. A unit whose whole work fits
/// in two tasks then runs inline on the stage's worker, and a larger one
/// wakes only as many workers as it keeps busy, instead of spreading a few
/// microseconds of work over every core (whose wake-ups and idle spinning
/// then slow the threads that do work).
///
/// \code
/// sinew::detail::item_cost cost;
/// std::size_t per_task = cost.task_items(2048);     // 2048 until measured
/// per_task = cost.steady(per_task);                 // the last count unless 2x off
/// cost.timed(body, 0, n);                           // body(0, n), timed
/// \endcode
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include <sinew/detail/clock.hpp>

namespace sinew::detail {

class item_cost {
 public:
  /// The time a task should take: well above a task's start (about 1 µs) and a
  /// sleeping worker's wake-up, short enough that units of a millisecond or
  /// more still split over every core.
  static constexpr std::uint64_t task_ns = 10000;

  /// Items per task: at least `min_items`, and as many as take `task_ns`
  /// once the cost is known.
  std::size_t task_items(std::size_t min_items) const noexcept {
    const std::uint32_t ps = ps_.load(std::memory_order_relaxed);
    return ps ? std::max<std::size_t>(min_items, std::size_t(task_ns * 1000 / ps)) : min_items;
  }

  /// `want` items per task, or the count this returned last when `want` is
  /// within a factor 2 of it: the blocks of successive loops over the same
  /// range then stay the same, which a `loop_affinity` needs to give each
  /// worker its blocks of the last loop again.
  std::size_t steady(std::size_t want) noexcept {
    const std::size_t last = steady_.load(std::memory_order_relaxed);
    if (last && want / 2 <= last && last / 2 <= want) return last;
    steady_.store(want, std::memory_order_relaxed);  // relaxed: a hint, as ps_
    return want;
  }

  /// Runs `body(b, e)` and records its time per item.
  template <class Body>
  void timed(Body& body, std::size_t b, std::size_t e) {
    const std::uint64_t t0 = now_ns();
    body(b, e);
    const std::uint64_t ps = (now_ns() - t0) * 1000 / std::max<std::size_t>(e - b, 1);
    // Relaxed: a hint read by the next units; a stale value sizes one split differently.
    ps_.store(std::uint32_t(std::clamp<std::uint64_t>(ps, 1, UINT32_MAX)), std::memory_order_relaxed);
  }

 private:
  std::atomic<std::uint32_t> ps_{0};  // picoseconds per item; 0: not measured yet
  std::atomic<std::size_t> steady_{0};  // the last result of steady(); 0: none
};

}  // namespace sinew::detail
