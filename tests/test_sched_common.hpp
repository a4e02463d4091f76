#pragma once
// Helpers shared by the scheduler tests (issue 3).
#include <sinew/scheduler.hpp>
#include <sinew/topology.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <thread>

namespace sched_test {

#if defined(__SANITIZE_THREAD__)
inline constexpr bool tsan = true;
#else
inline constexpr bool tsan = false;
#endif
/// ThreadSanitizer runs ~10x slower: fewer tasks (the interleavings, not the
/// count, are what it checks).
constexpr std::size_t scaled(std::size_t normal, std::size_t under_tsan) {
  return tsan ? under_tsan : normal;
}

inline constexpr std::uint64_t MiB = std::uint64_t(1) << 20;

/// 4 nodes in a line: 0 - 1 - 2 - 3. LLC 4 MiB, so the size threshold of
/// Algorithm 1 is 4 MiB / 4 cores = 1 MiB; the steal thresholds of
/// Algorithm 2 are distance * 4: 80, 120, 160.
inline sinew::topology line4x4() {
  return sinew::topology::synthetic(4, 4,
                                    {{10, 20, 30, 40},  //
                                     {20, 10, 20, 30},
                                     {30, 20, 10, 20},
                                     {40, 30, 20, 10}},
                                    4 * MiB);
}

/// A task counts as run just after its function returns, so just after the
/// test saw its effect: waits (up to 5 s) until the counters caught up.
inline sinew::scheduler_stats settled_stats(const sinew::scheduler& s, std::uint64_t tasks_run) {
  auto t0 = std::chrono::steady_clock::now();
  while (s.stats().tasks_run < tasks_run &&
         std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5))
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return s.stats();
}

/// Polls until `c` reaches `target` or `timeout` passes; returns whether it did.
inline bool wait_for_count(const std::atomic<std::size_t>& c, std::size_t target,
                           std::chrono::seconds timeout = std::chrono::seconds(60)) {
  auto t0 = std::chrono::steady_clock::now();
  while (c.load() < target) {
    if (std::chrono::steady_clock::now() - t0 > timeout) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

}  // namespace sched_test
