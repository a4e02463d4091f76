#pragma once
/// \file group_plan.hpp
/// The measured order policy of a group kernel: the first work-groups run
/// every loop of the kernel in each candidate order (work-item loop outside
/// the nest, between its levels, innermost) in turn, each candidate's
/// fastest group is kept, and from then on each loop runs in the order that
/// was fastest; near-ties go to depth-first, as in seed 002's static rule.
/// A loop is known by the type of its body (every lambda has its own type).
///
/// \code
/// sinew::detail::group_plan p;
/// p.record(key, 1, 0, 1200); p.record(key, 1, 1, 800);   // one group's loop times, ns
/// p.end_group();
/// p.decide();
/// unsigned pos = p.decided_position(key, 0);           // 1: breadth-first won
/// \endcode
#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <mutex>
#include <vector>

namespace sinew::detail {

class group_plan {
 public:
  static constexpr unsigned max_depth = 2;
  static constexpr unsigned candidates = max_depth + 1;
  /// Relative margin within which a lower position (more depth-first) wins.
  static constexpr double tie_margin = 0.03;

  struct site {
    const void* key = nullptr;
    unsigned depth = 1;
    std::array<std::uint64_t, candidates> group_ns{};  ///< this group so far
    std::array<std::uint64_t, candidates> best_ns{};   ///< fastest group per candidate
    std::array<unsigned, candidates> samples{};
    unsigned chosen = 0;
  };

  /// Adds `ns` to loop `key` run with the work-item loop at `pos`.
  void record(const void* key, unsigned depth, unsigned pos, std::uint64_t ns) {
    site& s = find_or_add(key, depth);
    s.group_ns[pos] += ns;
  }
  /// A calibration group ended: keep each loop's time if it is the fastest
  /// seen for that candidate.
  void end_group() {
    for (site& s : sites_)
      for (unsigned c = 0; c < candidates; ++c) {
        if (s.group_ns[c] == 0) continue;
        s.best_ns[c] = s.samples[c] ? std::min(s.best_ns[c], s.group_ns[c]) : s.group_ns[c];
        ++s.samples[c];
        s.group_ns[c] = 0;
      }
    ++groups_;
  }
  std::size_t groups() const noexcept { return groups_; }
  /// Picks each loop's position; loops not timed in some candidate keep
  /// their fallback (they get `fallback` in decided_position).
  void decide() {
    for (site& s : sites_) {
      unsigned best = candidates;
      for (unsigned c = 0; c <= s.depth; ++c)
        if (s.samples[c] && (best == candidates || s.best_ns[c] < s.best_ns[best])) best = c;
      if (best == candidates) continue;
      bool all = true;
      for (unsigned c = 0; c <= s.depth; ++c) all = all && s.samples[c];
      if (!all) continue;
      // Near-ties go to the lower position (seed 002: ties to depth-first).
      for (unsigned c = 0; c < best; ++c)
        if (double(s.best_ns[c]) <= double(s.best_ns[best]) * (1.0 + tie_margin)) {
          best = c;
          break;
        }
      s.chosen = best + 1;  // 0 = undecided
    }
    decided_.store(true, std::memory_order_release);
  }
  bool decided() const noexcept { return decided_.load(std::memory_order_acquire); }
  /// Position picked for loop `key`, or `fallback` if it was not measured.
  /// Only valid once decided() (the table is then read-only).
  unsigned decided_position(const void* key, unsigned fallback) const noexcept {
    for (const site& s : sites_)
      if (s.key == key) return s.chosen ? s.chosen - 1 : fallback;
    return fallback;
  }
  /// Positions chosen so far, in the order the loops were first met.
  std::vector<unsigned> positions() const {
    std::vector<unsigned> v;
    for (const site& s : sites_) v.push_back(s.chosen ? s.chosen - 1 : candidates);
    return v;
  }

  std::mutex calibration;  ///< held while calibration groups run

 private:
  site& find_or_add(const void* key, unsigned depth) {
    for (site& s : sites_)
      if (s.key == key) return s;
    sites_.push_back(site{key, depth, {}, {}, {}, 0});
    return sites_.back();
  }
  std::vector<site> sites_;
  std::size_t groups_ = 0;
  std::atomic<bool> decided_{false};
};

}  // namespace sinew::detail
