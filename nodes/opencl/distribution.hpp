#pragma once
// Internal: what the balancer's files ask of a distribution (weights or
// share percents, one per device): which devices it gives work to.
#include <algorithm>
#include <cstddef>
#include <vector>

namespace sinew::detail {

// Times of zero (an empty kernel, a coarse clock) would divide by zero; a
// device that took no measurable time is simply very fast.
inline constexpr double min_time = 1e-12;

// The devices a distribution gives work to.
inline std::vector<bool> active_set(const std::vector<double>& w) {
  std::vector<bool> set(w.size());
  for (std::size_t i = 0; i < w.size(); ++i) set[i] = w[i] > 0;
  return set;
}

inline std::size_t set_size(const std::vector<bool>& s) { return std::size_t(std::count(s.begin(), s.end(), true)); }

// The two devices a < b a distribution gives work to; false unless exactly two.
inline bool two_devices(const std::vector<double>& v, std::size_t& a, std::size_t& b) {
  std::size_t active = 0;
  for (std::size_t i = 0; i < v.size(); ++i)
    if (v[i] > 0) (active++ == 0 ? a : b) = i;
  return active == 2;
}

// Whether two distributions give work to the same devices.
inline bool same_devices(const std::vector<double>& a, const std::vector<double>& b) {
  for (std::size_t i = 0; i < a.size(); ++i)
    if ((a[i] > 0) != (b[i] > 0)) return false;
  return true;
}

}  // namespace sinew::detail
