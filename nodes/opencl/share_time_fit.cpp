// The fixed-cost model of the iterative search (docs/balancing.md, "Fixed
// costs and dropped devices"): share times fitted as a + b·v, the balanced
// time of a device set, and the set worth running.
#include <sinew/opencl/share_time_fit.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

#include "distribution.hpp"

namespace sinew::balance {

using detail::min_time;

share_time_fit fit_share_time(const std::vector<std::pair<double, double>>& points) {
  if (points.empty()) return {};
  const auto [v, t0] = points.back();
  const double t = std::max(t0, min_time);
  share_time_fit f{0, t / v};  // HPL's: proportional through the last point
  // The most recent earlier point far enough from the last one that noise
  // in either does not make the slope: a quarter of the larger share.
  for (auto it = points.rbegin() + 1; it != points.rend(); ++it) {
    const auto [vq, tq] = *it;
    if (std::fabs(vq - v) < 0.25 * std::max(v, vq)) continue;
    // At least 1% of the time is proportional: a device whose time did not
    // grow with its share (noise, or all fixed cost) still gets a finite share.
    double b = std::max((t - tq) / (v - vq), 0.01 * t / v);
    double a = t - b * v;
    // A negative intercept (time growing faster than the share, e.g. the
    // unbalanced kernel's dear rows) is no fixed cost: keep HPL's model.
    if (a > 0) f = {a, b};
    break;
  }
  return f;
}

bool fit_agrees(const share_time_fit& f, const std::vector<std::pair<double, double>>& points, double tolerance) {
  for (auto [v, t] : points) {
    double p = f.at(v);
    if (p > t * (1 + tolerance) || p * (1 + tolerance) < t) return false;
  }
  return true;
}

std::optional<double> balanced_time(const std::vector<share_time_fit>& f, const std::vector<bool>& set) {
  // Σ (T − a_i)/b_i = 100  =>  T = (100 + Σ a_i/b_i) / Σ 1/b_i
  double num = 100, den = 0;
  for (std::size_t i = 0; i < f.size(); ++i)
    if (set[i]) {
      if (!(f[i].per_percent > 0)) return std::nullopt;
      num += f[i].fixed / f[i].per_percent;
      den += 1 / f[i].per_percent;
    }
  if (!(den > 0)) return std::nullopt;
  double T = num / den;
  for (std::size_t i = 0; i < f.size(); ++i)
    if (set[i] && f[i].fixed >= T) return std::nullopt;  // it would get no work: a smaller set
  return T;
}

std::vector<double> fitted_weights(const std::vector<share_time_fit>& f, const std::vector<bool>& usable,
                                   const std::vector<bool>& keep, double min_gain, double* predicted) {
  const std::size_t n = f.size();
  std::vector<std::size_t> u;
  for (std::size_t i = 0; i < n; ++i)
    if (usable[i] && f[i].per_percent > 0) u.push_back(i);
  if (u.empty()) return {};
  // Every set of usable devices (N is small: 2^N sets); with more than 12,
  // the sets of the k devices of smallest fixed cost (the best set is one
  // of them when no device is preferred: a device helps iff its fixed cost
  // is below the time of the others without it).
  struct cand {
    double T;
    std::size_t size;
    std::vector<bool> set;
  };
  std::vector<cand> cands;
  auto consider = [&](std::vector<bool> set) {
    for (std::size_t i = 0; i < n; ++i)
      if (keep.size() == n && keep[i] && usable[i] && !set[i]) return;
    if (auto T = balanced_time(f, set)) {
      std::size_t k = std::size_t(std::count(set.begin(), set.end(), true));
      cands.push_back({*T, k, std::move(set)});
    }
  };
  if (u.size() <= 12) {
    for (std::size_t mask = 1; mask < (std::size_t(1) << u.size()); ++mask) {
      std::vector<bool> set(n, false);
      for (std::size_t j = 0; j < u.size(); ++j)
        if (mask >> j & 1) set[u[j]] = true;
      consider(std::move(set));
    }
  } else {
    std::sort(u.begin(), u.end(), [&](std::size_t a, std::size_t b) { return f[a].fixed < f[b].fixed; });
    std::vector<bool> set(n, false);
    for (std::size_t i : u) set[i] = true, consider(set);
  }
  if (cands.empty()) return {};
  double best = std::numeric_limits<double>::infinity();
  for (auto& c : cands) best = std::min(best, c.T);
  // The smallest set whose time is within min_gain of the best (then the fastest).
  const cand* pick = nullptr;
  for (auto& c : cands)
    if (c.T * (1 - min_gain) <= best && (!pick || c.size < pick->size || (c.size == pick->size && c.T < pick->T)))
      pick = &c;
  std::vector<double> w(n, 0.0);
  double sum = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (pick->set[i]) sum += w[i] = (pick->T - f[i].fixed) / f[i].per_percent;
  for (double& x : w) x = pick->size == 1 && x > 0 ? 100.0 : x * 100 / sum;  // Σ is 100 up to rounding
  if (predicted) *predicted = pick->T;
  return w;
}

}  // namespace sinew::balance
