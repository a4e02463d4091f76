#pragma once
// The chunks of a parallel loop cut into one contiguous range per worker
// slot, as OpenMP's static schedule cuts a loop: the worker in slot s takes
// the chunks of range s first, in order, then, when its range is empty,
// chunks of the other ranges (work-conserving: a late or slow worker's
// chunks move to the others). Successive loops of the same shape thus give
// each slot the same slice of the data, which may still be in its core's
// cache, without a record of where blocks ran and at no cost to a first
// loop.
//
// A claim takes a run of what is left in the range over the number of
// slots, at most `max_run` chunks (guided self-scheduling,
// [Polychronopoulos87]): few claims while a range is long, single chunks
// at its end, and when every worker has come to the last range none takes
// more than its share, so that they finish within about a chunk of each
// other.
//
//   owned_ranges R(chunks, slots);                 // one per loop
//   on each participating thread:
//     for (std::size_t b, e; R.next(my_slot, b, e);) run chunks [b, e);
//   (my_slot >= slots: a thread that owns no range, e.g. one from outside)
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>

namespace sinew::detail::workers {

class owned_ranges {
 public:
  static constexpr unsigned local = 32;  // ranges kept in the object; more are allocated
  static constexpr std::size_t max_run = 16;  // chunks a claim takes at most

  owned_ranges(std::size_t chunks, unsigned slots) : n_(std::max(1u, slots)) {
    if (n_ > local) heap_.reset(new range[n_]);
    // Only the n_ ranges in use are constructed (a loop's set-up touches n_ lines).
    if (!heap_)
      for (unsigned s = 0; s < n_; ++s) ::new (static_cast<void*>(inline_ + s * sizeof(range))) range;
    range* r = ranges();
    using u128 = unsigned __int128;  // chunks * s cannot overflow
    for (unsigned s = 0; s < n_; ++s) {
      r[s].next.store(std::size_t(u128(chunks) * s / n_), std::memory_order_relaxed);
      r[s].end = std::size_t(u128(chunks) * (s + 1) / n_);
    }
  }
  owned_ranges(const owned_ranges&) = delete;
  owned_ranges& operator=(const owned_ranges&) = delete;

  unsigned slots() const noexcept { return n_; }

  // The next run of chunks for the thread of slot `own`: true and [begin,
  // end) set (not empty), or false when every range is empty. Relaxed:
  // each index is handed out once by the read-modify-write; what the chunks
  // write is ordered by the loop's join, not by these counters. The run's
  // length comes from a load that may be stale: a longer or shorter run,
  // never a chunk handed out twice.
  bool next(unsigned own, std::size_t& begin, std::size_t& end) noexcept {
    range* r = ranges();
    const unsigned first = own < n_ ? own : 0;
    for (unsigned k = 0; k < n_; ++k) {
      range& g = r[(first + k) % n_];
      const std::size_t at = g.next.load(std::memory_order_relaxed);
      if (at >= g.end) continue;  // no RMW on an empty range
      const std::size_t run = std::clamp<std::size_t>((g.end - at) / n_, 1, max_run);
      const std::size_t c = g.next.fetch_add(run, std::memory_order_relaxed);
      if (c < g.end) {
        begin = c;
        end = std::min(c + run, g.end);
        return true;
      }
    }
    return false;
  }

 private:
  struct alignas(64) range {  // one line each: owners do not share their counter
    std::atomic<std::size_t> next{0};
    std::size_t end = 0;
  };
  static_assert(std::is_trivially_destructible_v<range>);
  range* ranges() noexcept { return heap_ ? heap_.get() : std::launder(reinterpret_cast<range*>(inline_)); }

  unsigned n_;
  std::unique_ptr<range[]> heap_;
  alignas(range) unsigned char inline_[local * sizeof(range)];  // trivially destructible ranges
};

}  // namespace sinew::detail::workers
