#pragma once
// Helpers shared by the scheduler tests (issue 3).
#include <sinew/schedulers/scheduler.hpp>
#include <sinew/schedulers/topology.hpp>

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

/// Makes a steal certain instead of likely, whatever the OS does with the
/// threads: the first thread to run a block of the held range [lo, hi) waits
/// in every such block until another thread has run a block of that range too.
/// Hold one dispatched segment: its remaining blocks sit on the first thread's
/// deque, so the other thread can only get one by stealing it. Leave out the
/// chunk map dispatch probes on the caller (the first grain when the loop has
/// >= 4 chunks per worker), which runs before any worker. Gives up after
/// `timeout` (the test then fails on `stolen()`), so a broken scheduler cannot
/// hang the suite.
///   sched_test::steal_witness w(1, 100);
///   s.parallel_for(200, 1, [&](std::size_t b, std::size_t) { w.block(b); spin(); });
///   CHECK(w.stolen());
class steal_witness {
 public:
  steal_witness(std::size_t lo, std::size_t hi, std::chrono::seconds timeout = std::chrono::seconds(30))
      : lo_(lo), hi_(hi), timeout_(timeout) {}

  void block(std::size_t begin) {
    if (begin < lo_ || begin >= hi_) return;
    const auto me = std::this_thread::get_id();
    std::thread::id none{};
    first_.compare_exchange_strong(none, me);
    if (first_.load() != me) {
      other_.store(true);
      return;
    }
    const auto t0 = std::chrono::steady_clock::now();
    while (!other_.load() && std::chrono::steady_clock::now() - t0 < timeout_)
      std::this_thread::sleep_for(std::chrono::microseconds(100));
  }

  bool stolen() const { return other_.load(); }

 private:
  std::size_t lo_, hi_;
  std::chrono::seconds timeout_;
  std::atomic<std::thread::id> first_{};
  std::atomic<bool> other_{false};
};

}  // namespace sched_test
