#pragma once
/// \file group_plan.hpp
/// The measured order policy of a group kernel. Calibration groups (run in
/// parallel, each on one worker, as the groups after them) run every
/// loop of the kernel in each candidate position of the work-item loop
/// (outside the nest, between its levels, innermost), the candidates taking
/// turns group by group, and each loop's time is recorded per group. Once
/// every candidate has enough samples whose spread is small, each loop keeps
/// the candidate with the lowest *median* time -- but only if it beats the
/// declared order (the stride rule of [Kim15, §3.2]) by more than the noise of the
/// samples; otherwise the declared order stays. A loop is known by the type
/// of its body (every lambda has its own type).
///
/// \code
/// sinew::detail::group_plan p;
/// for (int g = 0; g < 8; ++g) {                 // 8 calibration groups, candidates alternating
///   p.record(key, 1, 0, g % 2, g % 2 ? 800 : 1200);   // loop `key`: depth 1, declared position 0, ns
///   p.end_group();
/// }
/// p.decide();
/// unsigned pos = p.decided_position(key, 0);     // 1: breadth-first won by more than the noise
/// \endcode
#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace sinew::detail {

/// The loop times of one calibration group (each loop summed over its
/// calls in the group), filled while the group runs on some worker.
///
/// \code
/// sinew::detail::group_sample t;
/// t.add(key, 1, 0, 1, 800);   // loop `key`, depth 1, declared 0, run at position 1: 800 ns
/// plan.add_group(t);
/// \endcode
struct group_sample {
  struct entry {
    const void* key;
    unsigned depth, declared, pos;
    std::uint64_t ns;
  };
  std::vector<entry> loops;
  void add(const void* key, unsigned depth, unsigned declared, unsigned pos, std::uint64_t ns) {
    for (entry& e : loops)
      if (e.key == key && e.pos == pos) {
        e.ns += ns;
        return;
      }
    loops.push_back({key, depth, declared, pos, ns});
  }
};

class group_plan {
 public:
  static constexpr unsigned max_depth = 2;
  static constexpr unsigned candidates = max_depth + 1;
  /// Smallest relative gain of a candidate's median over the declared
  /// order's median that makes it leave the declared order.
  static constexpr double tie_margin = 0.03;
  /// Relative spread (median absolute deviation / median, which one
  /// outlying group does not move) of a candidate's samples above which
  /// they are too noisy to decide on: calibration goes on (up to
  /// `extend_factor` times the planned groups).
  static constexpr double noisy_spread = 0.25;
  static constexpr unsigned extend_factor = 4;
  /// Samples each candidate needs at least before a decision.
  static constexpr unsigned min_samples = 3;

  struct site {
    const void* key = nullptr;
    unsigned depth = 1;
    unsigned declared = 0;                                 ///< position the stride rule gives
    std::array<std::uint64_t, candidates> group_ns{};      ///< this group so far
    std::array<std::vector<std::uint64_t>, candidates> ns; ///< one sample per calibration group
    unsigned chosen = 0;                                   ///< position + 1; 0 = undecided
  };

  /// Adds `ns` to loop `key` (a nest of `depth` levels whose declared
  /// position is `declared`) run with the work-item loop at `pos`.
  void record(const void* key, unsigned depth, unsigned declared, unsigned pos, std::uint64_t ns) {
    site& s = find_or_add(key, depth, declared);
    s.group_ns[pos] += ns;
  }
  /// A calibration group ended: each loop's time in it becomes one sample of
  /// the candidate it ran in.
  void end_group() {
    for (site& s : sites_)
      for (unsigned c = 0; c < candidates; ++c) {
        if (s.group_ns[c] == 0) continue;
        s.ns[c].push_back(s.group_ns[c]);
        s.group_ns[c] = 0;
      }
    ++groups_;
  }
  std::size_t groups() const noexcept { return groups_; }
  /// One calibration group's times (thread-safe: groups calibrate in parallel).
  void add_group(const group_sample& t) {
    std::lock_guard<std::mutex> lk(add_);
    for (const group_sample::entry& e : t.loops) record(e.key, e.depth, e.declared, e.pos, e.ns);
    end_group();
  }

  /// Median of `v` (0 when empty).
  static double median(std::vector<std::uint64_t> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    std::size_t m = v.size() / 2;
    return v.size() % 2 ? double(v[m]) : (double(v[m - 1]) + double(v[m])) / 2;
  }
  /// Median absolute deviation / median of `v` (0 for fewer than 2 samples).
  static double spread(const std::vector<std::uint64_t>& v) {
    if (v.size() < 2) return 0;
    const double m = median(v);
    std::vector<std::uint64_t> dev;
    for (std::uint64_t x : v) dev.push_back(std::uint64_t(double(x) > m ? double(x) - m : m - double(x)));
    return m > 0 ? median(std::move(dev)) / m : 0;
  }
  /// True when every timed loop has `min_samples` in each of its candidates
  /// and none of them is noisier than `noisy_spread`.
  bool settled() const {
    for (const site& s : sites_)
      for (unsigned c = 0; c <= s.depth; ++c)
        if (s.ns[c].size() < min_samples || spread(s.ns[c]) > noisy_spread) return false;
    return true;
  }
  /// Picks each loop's position: the candidate with the lowest median, if it
  /// is faster than the declared position's median by more than the margin
  /// (`tie_margin`, or half the spread of either candidate's samples when
  /// that is larger); otherwise the declared position. Loops not timed in every
  /// candidate keep their fallback (see decided_position).
  void decide() {
    for (site& s : sites_) {
      bool all = true;
      for (unsigned c = 0; c <= s.depth; ++c) all = all && !s.ns[c].empty();
      if (!all) continue;
      std::array<double, candidates> med{};
      unsigned best = 0;
      for (unsigned c = 0; c <= s.depth; ++c) {
        med[c] = median(s.ns[c]);
        if (med[c] < med[best]) best = c;
      }
      const unsigned d = std::min(s.declared, s.depth);
      double margin = std::max({tie_margin, spread(s.ns[best]) / 2, spread(s.ns[d]) / 2});
      s.chosen = (med[best] < med[d] * (1.0 - margin) ? best : d) + 1;
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
  /// The timed loops, in the order first met (read-only once decided()).
  const std::vector<site>& sites() const noexcept { return sites_; }

  std::mutex calibration;  ///< held while calibration groups run

 private:
  site& find_or_add(const void* key, unsigned depth, unsigned declared) {
    for (site& s : sites_)
      if (s.key == key) return s;
    site s;
    s.key = key;
    s.depth = depth;
    s.declared = declared;
    sites_.push_back(std::move(s));
    return sites_.back();
  }
  std::vector<site> sites_;
  std::size_t groups_ = 0;
  std::mutex add_;
  std::atomic<bool> decided_{false};
};

}  // namespace sinew::detail
