// The steps of the iterative search: HPL's proportional step [Vinas17,
// Fig. 8], the fixed-cost step over the best device set, and the bracketed
// step of two devices on work not uniform over the rows (docs/balancing.md).
#include <sinew/opencl/balance_tuner.hpp>

#include <algorithm>
#include <cmath>

#include "distribution.hpp"

namespace sinew {

using detail::same_devices;
using detail::two_devices;

bool balance_tuner::same_split(const std::vector<double>& w, const std::vector<double>& v) const {
  if (rows_ == 0) return false;
  auto next = split_shares(rows_, w, gran_);
  auto now = share_percent(next);
  for (std::size_t i = 0; i < n_; ++i)
    if (std::fabs(now[i] - v[i]) > 1e-9) return false;
  return true;
}

std::vector<double> balance_tuner::next_weights(const std::vector<double>& t, const std::vector<double>& v,
                                                bool restarting) {
  dropped_.clear();
  if (p_.fixed_costs) {
    // The fitted model is used only while every device's fit agrees with
    // all its times in this search; otherwise (work not uniform over the
    // rows, e.g. the unbalanced kernel) HPL's proportional step is the safer one.
    std::vector<balance::share_time_fit> f(n_);
    std::vector<bool> usable(n_, false);
    bool agree = true;
    for (std::size_t i = 0; i < n_; ++i) {
      if (pts_[i].empty()) continue;
      f[i] = balance::fit_share_time(pts_[i]);
      usable[i] = true;
      // A device idle in this execution is judged on the fit from its last
      // search (restarting: all there is to reconsider it by).
      if (!(restarting && v[i] == 0) && !balance::fit_agrees(f[i], pts_[i])) agree = false;
    }
    double T = 0;
    std::vector<double> w;
    if (agree) w = balance::fitted_weights(f, usable, keep_, p_.min_gain, &T);
    if (!w.empty()) {
      // Fig. 7's threshold on the estimated share times (all T once balanced).
      if (p_.threshold > 0 && T < p_.threshold) {
        std::size_t top = std::size_t(std::max_element(w.begin(), w.end()) - w.begin());
        for (std::size_t i = 0; i < n_; ++i) w[i] = i == top ? 100.0 : 0.0;
      }
      // Fig. 8's relaxation over the devices kept; a device the model
      // drops is dropped at once (and kept out only if the unit gets faster).
      if (p_.relax && iter_ > 2 && w_prev_.size() == n_) {
        double sum = 0;
        for (std::size_t i = 0; i < n_; ++i) {
          if (w[i] > 0) w[i] = w_prev_[i] + (w[i] - w_prev_[i]) / double(iter_ - 1);
          sum += w[i];
        }
        for (double& x : w) x = x * 100 / sum;
      }
      for (std::size_t i = 0; i < n_; ++i)
        if (v[i] > 0 && w[i] == 0) dropped_.push_back(i);
      return w;
    }
  }
  if (p_.bracket && !restarting)
    if (auto w = bracket_step(v)) return *std::move(w);
  return balance::adaptive_weights(t, v, iter_, w_prev_, p_.threshold, p_.relax);
}

std::pair<const balance_tuner::execution*, const balance_tuner::execution*> balance_tuner::bracket_ends(
    const std::vector<double>& v) const {
  std::size_t a = n_, b = n_;
  if (!two_devices(v, a, b)) return {nullptr, nullptr};
  const execution* lo = nullptr;  // f < 0, largest x
  const execution* hi = nullptr;  // f > 0, smallest x
  for (const auto& e : hist_) {
    if (e.v[a] <= 0 || e.v[b] <= 0 || e.v[a] + e.v[b] < 100 - 1e-6) continue;  // another device set
    const double f = envelope_time(e, a) - envelope_time(e, b);
    if (f < 0 && (!lo || e.v[a] > lo->v[a])) lo = &e;
    if (f > 0 && (!hi || e.v[a] < hi->v[a])) hi = &e;
  }
  if (!lo || !hi || !(lo->v[a] < hi->v[a])) return {nullptr, nullptr};  // no bracket (or noise crossed it)
  return {lo, hi};
}

double balance_tuner::envelope_time(const execution& e, std::size_t i) const {
  // A device's rows at a larger share include its rows at a smaller one, so
  // its time does not shrink as its share grows, and noise only adds: its
  // time at e's share is at most the least measured at any larger share.
  // (One slow pair -- a GPU that spiked in both repeats -- must neither
  // cross the bracket nor pick its end.)
  double t = e.t[i];
  for (const auto& p : hist_)
    if (same_devices(p.v, e.v) && p.v[i] >= e.v[i] - 1e-9) t = std::min(t, p.t[i]);
  return t;
}

double balance_tuner::envelope_unit(const execution& e) const {
  double slowest = 0, env = 0;
  for (std::size_t i = 0; i < n_; ++i)
    if (e.v[i] > 0) slowest = std::max(slowest, e.t[i]), env = std::max(env, envelope_time(e, i));
  return env + std::max(0.0, e.unit - slowest);
}

const balance_tuner::execution& balance_tuner::faster_end(const execution& lo, const execution& hi) const {
  return envelope_unit(lo) <= envelope_unit(hi) ? lo : hi;
}

std::optional<std::vector<double>> balance_tuner::bracket_step(const std::vector<double>& v) {
  // Two devices a < b with shares: f(x) = t_a - t_b over a's share x grows
  // with x (more rows for a, fewer for b), so the splits measured with
  // f < 0 and f > 0 nearest each other bracket the balance point -- also
  // when a device's time has a kink there (the unbalanced kernel: zeros
  // above, work below), where HPL's proportional step overshoots back
  // and forth and the fitted line does not hold.
  const auto [lo, hi] = bracket_ends(v);
  if (!lo) return std::nullopt;
  std::size_t a = n_, b = n_;
  two_devices(v, a, b);  // true: bracket_ends found a bracket, so v has exactly two
  const double x0 = lo->v[a], x1 = hi->v[a], width = x1 - x0;
  double res = 0.5;  // a share percent; at least one granule of either device
  if (rows_ > 0)
    for (std::size_t i : {a, b}) res = std::max(res, 100.0 * double(gran_[i]) / double(rows_));
  std::vector<double> w(n_, 0.0);
  if (width <= res) {
    // The faster end, each judged on all the search measured: at a step in
    // a device's time (the unbalanced kernel's first dear rows) one noisy
    // pair at the end below it must not send the unit past it.
    const execution& best = faster_end(*lo, *hi);
    bracket_done_ = true;
    bracket_imb_ = best.imb;
    w[a] = best.v[a];
    w[b] = best.v[b];
    return w;
  }
  // Secant step, kept a tenth of the bracket away from its ends; bisection
  // when the last step did not halve the bracket (a secant that keeps
  // landing beside the same end: a kink).
  const double f0 = envelope_time(*lo, a) - envelope_time(*lo, b);
  const double f1 = envelope_time(*hi, a) - envelope_time(*hi, b);
  double x = x0 + width * (-f0) / (f1 - f0);
  if (bracket_width_ > 0 && width > bracket_width_ / 2) x = x0 + width / 2;
  x = std::clamp(x, x0 + width / 10, x1 - width / 10);
  bracket_width_ = width;
  w[a] = x;
  w[b] = 100 - x;
  return w;
}

}  // namespace sinew
