#pragma once
// The counters of one arena slot of the `tbb` policy (what `stats()`
// reports, and what its destructor and lingering workers read). `Home` is
// the policy's arena type.
//
//   slot_counters<arena>& c = ...;           // the running task's slot
//   slot_counters<arena>::add(c.submits, 1); // before queueing a function
#include <atomic>
#include <cstdint>

#include "worker_counters.hpp"

namespace sinew::detail::workers {

// Per arena slot, so that no counter is shared by every task. A slot has
// one thread at a time (oneTBB hands it over with synchronisation), which
// updates them with `add` (no locked instruction); the entry of threads
// outside the arenas is shared, and updated with fetch_add.
// What every task touches comes first, in one cache line.
template <class Home>
struct alignas(64) slot_counters {
  Home* home = nullptr;  // the arena of this slot (null: threads outside the arenas)
  // Never reset (stats subtract a baseline): functions submitted by this
  // slot's threads, counted before they are queued, and functions whose
  // run has ended here, counted last. Their sums are equal only when no
  // submitted function is queued or running (~tbb_scheduler waits so).
  // `retired` is also the count of functions run: `retired_base` is its
  // value at the last reset_stats.
  std::atomic<std::uint64_t> submits{0}, retired{0}, retired_base{0};
  std::atomic<std::uint64_t> started{0};  // functions begun here (lingering workers' starved())

  // Busy time of submitted functions: each of a slot's first
  // `exact_tasks` since reset_stats is timed (into `busy`), then about one
  // in 16 (into `sampled`, `sampled_n`), and the others are
  // counted at the sampled mean. Reading the clock costs about as much as
  // a spawn, so most functions are not timed.
  static constexpr std::uint64_t exact_tasks = 64;
  std::atomic<std::uint64_t> sampled{0}, sampled_n{0}, busy{0};
  // Loop chunks run by this slot's threads (with the functions run, the
  // worker's `tasks`; their time goes to `busy`), hinted bytes.
  std::atomic<std::uint64_t> chunks{0}, hinted{0}, remote{0};

  static void add(std::atomic<std::uint64_t>& c, std::uint64_t v,
                  std::memory_order mo = std::memory_order_relaxed) noexcept {
    worker_counters::add(c, v, mo);
  }
  // The base first: it is a past value of `retired`, which only grows, so
  // a reset_stats meanwhile cannot make the difference negative.
  std::uint64_t functions_run() const noexcept {
    const std::uint64_t base = retired_base.load(std::memory_order_acquire);
    return retired.load(std::memory_order_relaxed) - base;
  }
  // Where the next function's time goes: `busy`, `sampled`, or nowhere
  // (null: not timed). The k-th function is sampled when the top four
  // bits of k times 2^64/phi are zero (a Weyl sequence: one in 16, spread
  // evenly, with no period a workload could follow), read from the
  // count the slot keeps anyway.
  std::atomic<std::uint64_t>* time_into() noexcept {
    const std::uint64_t k = retired.load(std::memory_order_relaxed);
    if (k - retired_base.load(std::memory_order_relaxed) < exact_tasks) return &busy;
    if ((k * 0x9e3779b97f4a7c15ull) >> 60 != 0) return nullptr;
    add(sampled_n, 1);
    return &sampled;
  }
  // Busy ticks: the timed part, and the sampled mean for the rest.
  std::uint64_t busy_ticks() const noexcept {
    const std::uint64_t n = functions_run(), k = sampled_n.load(std::memory_order_relaxed);
    const std::uint64_t rest = n > exact_tasks ? n - exact_tasks : 0;
    const std::uint64_t s = sampled.load(std::memory_order_relaxed);
    return busy.load(std::memory_order_relaxed) + (k ? std::uint64_t((unsigned __int128)s * rest / k) : 0);
  }
};

}  // namespace sinew::detail::workers
