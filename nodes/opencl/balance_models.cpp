// HPL's load-balancing models [Vinas17, §3.3.2]: the single step (Fig. 7),
// the iterative step with relaxation (Fig. 8), the imbalance, and the
// candidates of the exhaustive search.
#include <sinew/opencl/balance_models.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include <sinew/engine/error.hpp>

#include "distribution.hpp"

namespace sinew::balance {

using detail::min_time;

namespace {

std::size_t step_count(double step) {
  if (!(step > 0 && step <= 1)) throw error("exhaustive balancer: step must be in (0, 1], got " + std::to_string(step));
  double k = std::round(1 / step);
  if (std::fabs(k * step - 1) > 1e-9)
    throw error("exhaustive balancer: step " + std::to_string(step) + " does not divide the unit into whole steps");
  return std::size_t(k);
}

}  // namespace

std::vector<double> single_step_weights(const std::vector<double>& t, double threshold,
                                        const std::vector<bool>& active) {
  const std::size_t n = t.size();
  if (n == 0) throw error("balancer: no device times");
  if (!active.empty() && active.size() != n) throw error("balancer: active flags do not match the device count");
  auto on = [&](std::size_t i) { return active.empty() || active[i]; };
  double max_t = 0;
  bool any = false;
  for (std::size_t i = 0; i < n; ++i)
    if (on(i)) max_t = std::max(max_t, std::max(t[i], min_time)), any = true;
  if (!any) throw error("balancer: no device has work to time");
  // Fig. 7 lines 1-5: work proportional to the speedup over the slowest.
  std::vector<double> u(n, 0.0), w(n, 0.0);
  for (std::size_t i = 0; i < n; ++i)
    if (on(i)) u[i] = max_t / std::max(t[i], min_time);
  double U = std::accumulate(u.begin(), u.end(), 0.0);
  for (std::size_t i = 0; i < n; ++i) w[i] = u[i] * 100 / U;
  // Lines 6-13: a device whose estimated time for its share (t_i was
  // measured on 100/N percent) is below the threshold gets nothing and the
  // rest is renormalised. After line 5 these estimates are all equal (that
  // is the balance), so in the single step a threshold means "this unit is
  // too small to be worth splitting": every device but the fastest (the
  // one with the most work, which always keeps its share) is dropped. After
  // an iterative relaxation they differ, and the test is per device.
  if (threshold > 0) {
    std::size_t keep = std::size_t(std::max_element(w.begin(), w.end()) - w.begin());
    double adjust = 0;
    for (std::size_t i = 0; i < n; ++i)
      if (i != keep && w[i] > 0 && t[i] * w[i] / (100.0 / double(n)) < threshold) adjust += w[i], w[i] = 0;
    if (adjust > 0) {  // Σ of the kept weights is 100 − adjust (summed again: exact when one is left)
      double kept = std::accumulate(w.begin(), w.end(), 0.0);
      for (double& x : w) x = x * 100 / kept;
    }
  }
  return w;
}

std::vector<double> adaptive_weights(const std::vector<double>& t, const std::vector<double>& v, unsigned iter,
                                     const std::vector<double>& w_prev, double threshold, bool relax) {
  const std::size_t n = t.size();
  if (v.size() != n) throw error("balancer: times and shares differ in count");
  // Fig. 8 line 1: the time each device would have taken on 100/N percent.
  std::vector<double> tn(n, 0.0);
  std::vector<bool> active(n, false);
  for (std::size_t i = 0; i < n; ++i)
    if (v[i] > 0) tn[i] = t[i] / v[i] * 100.0 / double(n), active[i] = true;
  std::vector<double> w = single_step_weights(tn, threshold, active);
  // Lines 3-5: relaxation, shorter moves each iteration, so it cannot oscillate.
  if (relax && iter > 2 && w_prev.size() == n)
    for (std::size_t i = 0; i < n; ++i) w[i] = w_prev[i] + (w[i] - w_prev[i]) / double(iter - 1);
  return w;
}

double imbalance(const std::vector<double>& t, const std::vector<double>& v) {
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  std::size_t k = 0;
  for (std::size_t i = 0; i < t.size() && i < v.size(); ++i)
    if (v[i] > 0) lo = std::min(lo, std::max(t[i], min_time)), hi = std::max(hi, t[i]), ++k;
  return k < 2 ? 0.0 : hi / lo - 1;
}

std::vector<std::vector<double>> exhaustive_candidates(std::size_t devices, double step) {
  if (devices == 0) throw error("exhaustive balancer: no devices");
  const std::size_t k = step_count(step);
  std::vector<std::vector<double>> out;
  std::vector<std::size_t> parts(devices, 0);
  // Compositions of k into `devices` parts, first part ascending.
  auto rec = [&](auto& self, std::size_t i, std::size_t left) -> void {
    if (i + 1 == devices) {
      parts[i] = left;
      std::vector<double> w(devices);
      for (std::size_t j = 0; j < devices; ++j) w[j] = double(parts[j]) * 100.0 / double(k);
      out.push_back(std::move(w));
      return;
    }
    for (std::size_t p = 0; p <= left; ++p) parts[i] = p, self(self, i + 1, left - p);
  };
  rec(rec, 0, k);
  return out;
}


}  // namespace sinew::balance
