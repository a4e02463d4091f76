// Load balancers of a multi-device map: seed 001 (HPL execution plans),
// §3.3.2, Figures 7 (SINGLE_STEP_MODEL) and 8 (ITERATIVE_MODEL), and the
// EXHAUSTIVE search. See include/sinew/opencl/balancer.hpp and docs/balancing.md.
#include <sinew/opencl/balancer.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace sinew {

namespace {

// Times of zero (an empty kernel, a coarse clock) would divide by zero; a
// device that took no measurable time is simply very fast.
constexpr double min_time = 1e-12;

// The devices a distribution (weights or share percents) gives work to.
std::vector<bool> active_set(const std::vector<double>& w) {
  std::vector<bool> set(w.size());
  for (std::size_t i = 0; i < w.size(); ++i) set[i] = w[i] > 0;
  return set;
}

// The two devices a < b a distribution gives work to; false unless exactly two.
bool two_devices(const std::vector<double>& v, std::size_t& a, std::size_t& b) {
  std::size_t active = 0;
  for (std::size_t i = 0; i < v.size(); ++i)
    if (v[i] > 0) (active++ == 0 ? a : b) = i;
  return active == 2;
}

// Whether two distributions give work to the same devices.
bool same_devices(const std::vector<double>& a, const std::vector<double>& b) {
  for (std::size_t i = 0; i < a.size(); ++i)
    if ((a[i] > 0) != (b[i] > 0)) return false;
  return true;
}

std::string percent(double f) {
  double p = f * 100;
  char b[32];
  std::snprintf(b, sizeof b, p == std::floor(p) ? "%.0f%%" : "%.2g%%", p);
  return b;
}

std::size_t step_count(double step) {
  if (!(step > 0 && step <= 1)) throw error("exhaustive balancer: step must be in (0, 1], got " + std::to_string(step));
  double k = std::round(1 / step);
  if (std::fabs(k * step - 1) > 1e-9)
    throw error("exhaustive balancer: step " + std::to_string(step) + " does not divide the unit into whole steps");
  return std::size_t(k);
}

}  // namespace

std::string balance_policy::name() const {
  switch (kind) {
    case balance_kind::fixed: return "static";
    case balance_kind::single_step: return "single-step";
    case balance_kind::iterative: return "iterative";
    case balance_kind::exhaustive: return "exhaustive(" + percent(step) + ")";
  }
  return "?";
}

namespace balance {

namespace {
balance_policy of_kind(balance_kind k) {
  balance_policy p;
  p.kind = k;
  return p;
}
}  // namespace

balance_policy static_weights(std::vector<double> weights) {
  balance_policy p = of_kind(balance_kind::fixed);
  p.weights = std::move(weights);
  return p;
}
balance_policy single_step(double threshold) {
  balance_policy p = of_kind(balance_kind::single_step);
  p.threshold = threshold;
  return p;
}
balance_policy iterative(double delta, double threshold) {
  balance_policy p = of_kind(balance_kind::iterative);
  p.delta = delta;
  p.threshold = threshold;
  return p;
}
balance_policy exhaustive(double step) {
  balance_policy p = of_kind(balance_kind::exhaustive);
  p.step = step;
  return p;
}

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

share_time_fit fit_share_time(const std::vector<std::pair<double, double>>& points) {
  if (points.empty()) return {};
  const auto [v, t0] = points.back();
  const double t = std::max(t0, min_time);
  share_time_fit f{0, t / v};  // the seed's: proportional through the last point
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
    // unbalanced kernel's dear rows) is no fixed cost: keep the seed's model.
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

}  // namespace balance

std::vector<device_share> split_shares(std::size_t n, const std::vector<double>& weights,
                                       const std::vector<std::size_t>& granularity) {
  const std::size_t d = weights.size();
  if (d == 0) throw error("split_shares: no devices");
  if (granularity.size() != d)
    throw error("split_shares: " + std::to_string(d) + " weights but " + std::to_string(granularity.size()) +
                " granularities");
  double total = 0;
  for (std::size_t i = 0; i < d; ++i) {
    if (!(weights[i] >= 0) || !std::isfinite(weights[i]))
      throw error("split_shares: weight " + std::to_string(i) + " is negative or not a number");
    if (granularity[i] == 0) throw error("split_shares: granularity " + std::to_string(i) + " is 0");
    total += weights[i];
  }
  if (!(total > 0)) throw error("split_shares: every weight is 0");
  std::vector<std::size_t> act;
  for (std::size_t i = 0; i < d; ++i)
    if (weights[i] > 0) act.push_back(i);
  // reserve[j]: rows the weighted devices after act[j] need at least (one
  // granule each, the last one row), so that none is starved by rounding.
  std::vector<std::size_t> reserve(act.size(), 0);
  for (std::size_t j = act.size() - 1; j-- > 0;)
    reserve[j] = reserve[j + 1] + (j + 1 == act.size() - 1 ? 1 : granularity[act[j + 1]]);

  std::vector<device_share> s(d);
  std::size_t begin = 0;
  double cum = 0;
  for (std::size_t j = 0; j < act.size(); ++j) {
    std::size_t i = act[j];
    cum += weights[i];
    std::size_t len;
    if (j + 1 == act.size()) {
      len = n - begin;  // the last share takes the remainder
    } else {
      const std::size_t g = granularity[i];
      // Aim at the cumulative target (no drift), rounded to a multiple of g.
      double target = double(n) * cum / total;
      double want = std::max(0.0, target - double(begin));
      len = std::size_t(std::llround(want / double(g))) * g;
      if (len == 0) len = g;
      std::size_t room = n - begin > reserve[j] ? n - begin - reserve[j] : 0;
      if (len > room) len = room / g * g;
    }
    s[i] = {begin, begin + len};
    begin += len;
  }
  // Unweighted devices: empty shares placed where their neighbours meet, so
  // the shares stay in device order.
  std::size_t at = 0;
  for (std::size_t i = 0; i < d; ++i) {
    if (weights[i] > 0) at = s[i].end;
    else s[i] = {at, at};
  }
  return s;
}

std::vector<double> share_percent(const std::vector<device_share>& shares) {
  std::size_t total = 0;
  for (auto& s : shares) total += s.size();
  std::vector<double> v(shares.size(), 0.0);
  if (total)
    for (std::size_t i = 0; i < shares.size(); ++i) v[i] = 100.0 * double(shares[i].size()) / double(total);
  return v;
}

// ------------------------------------------------------------------ tuner

balance_tuner::balance_tuner(balance_policy p, std::size_t devices) : p_(std::move(p)), n_(devices) {
  const std::string who = "balancer " + p_.name() + ": ";
  if (n_ == 0) throw error(who + "no devices");
  if (!(p_.delta > 0)) throw error(who + "delta must be positive");
  if (!(p_.threshold >= 0)) throw error(who + "threshold must not be negative");
  if (!(p_.min_gain >= 0 && p_.min_gain < 1)) throw error(who + "min_gain must be in [0, 1)");
  if (!(p_.verify_share >= 0 && p_.verify_share <= 1)) throw error(who + "verify_share must be in [0, 1]");
  if (p_.repeats == 0) throw error(who + "repeats must be at least 1");
  if (p_.max_iterations == 0) throw error(who + "max_iterations must be at least 1");
  pts_.assign(n_, {});
  keep_.assign(n_, false);
  gran_.assign(n_, 1);
  switch (p_.kind) {
    case balance_kind::fixed: {
      if (p_.weights.size() != n_)
        throw error(who + std::to_string(p_.weights.size()) + " weights for " + std::to_string(n_) + " devices");
      double sum = 0;
      for (double x : p_.weights) {
        if (!(x >= 0) || !std::isfinite(x)) throw error(who + "weights must be non-negative numbers");
        sum += x;
      }
      if (!(sum > 0)) throw error(who + "every weight is 0");
      std::vector<double> w(n_);
      for (std::size_t i = 0; i < n_; ++i) w[i] = p_.weights[i] * 100 / sum;
      finish(std::move(w), std::nullopt);
      return;
    }
    case balance_kind::exhaustive:
      cand_ = balance::exhaustive_candidates(n_, p_.step);
      w_ = cand_[0];
      phase_ = phase::exhaustive;
      break;
    default:
      w_.assign(n_, 100.0 / double(n_));  // both models start with equal shares
      break;
  }
  if (n_ == 1) finish({100.0}, std::nullopt);  // nothing to balance
}

void balance_tuner::set_tuned(std::vector<double> w) {
  if (w.size() != n_) throw error("balancer " + p_.name() + ": cached weights are for another device count");
  finish(std::move(w), std::nullopt);
}

void balance_tuner::set_granularity(std::vector<std::size_t> g) {
  if (g.size() != n_) throw error("balancer " + p_.name() + ": granularities for another device count");
  for (auto& x : g) x = std::max<std::size_t>(x, 1);
  gran_ = std::move(g);
}

std::vector<balance::share_time_fit> balance_tuner::fits() const {
  std::vector<balance::share_time_fit> f(n_);
  for (std::size_t i = 0; i < n_; ++i) f[i] = balance::fit_share_time(pts_[i]);
  return f;
}

void balance_tuner::finish(std::vector<double> w, std::optional<double> baseline) {
  w_ = std::move(w);
  phase_ = phase::tuned;
  baseline_ = baseline;
  base_ms_ = 0;
  base_n_ = 0;
  over_ = 0;
  acc_t_.clear();
  acc_n_ = 0;
  dropped_.clear();
}

void balance_tuner::report(const std::vector<device_share>& shares, const std::vector<share_timing>& t,
                           double unit_seconds) {
  if (shares.size() != n_ || t.size() != n_)
    throw error("balancer " + p_.name() + ": " + std::to_string(t.size()) + " timings / " +
                std::to_string(shares.size()) + " shares for " + std::to_string(n_) + " devices");
  std::vector<double> tt(n_);
  for (std::size_t i = 0; i < n_; ++i) tt[i] = p_.with_transfers ? t[i].total : t[i].compute;
  const std::vector<double> v = share_percent(shares);
  rows_ = 0;
  for (auto& s : shares) rows_ += s.size();

  if (phase_ == phase::tuned) {
    last_imb_ = balance::imbalance(tt, v);
    const double ms = *std::max_element(tt.begin(), tt.end());
    // A device at 0% shows in no imbalance: the unit's time is watched too
    // (baseline: the slowest of the first retune_after + 1 tuned units, so
    // that one lucky unit does not set the bar).
    const bool ms_ready = base_n_ > std::max(1u, p_.retune_after);
    if (!ms_ready) base_ms_ = std::max(base_ms_, ms), ++base_n_;
    if (!baseline_) {
      baseline_ = last_imb_;  // what these weights give when nothing changed
      return;
    }
    // Only the iterative search drops devices by its model, and re-tunes
    // cheaply; an exhaustive sweep restarted by noise would cost every split.
    bool idle = false;
    for (double x : v) idle |= x == 0;
    idle = idle && p_.kind == balance_kind::iterative && p_.fixed_costs;
    bool over = (last_imb_ > p_.delta && last_imb_ > *baseline_ + p_.delta) ||
                (idle && ms_ready && ms > base_ms_ * (1 + p_.delta));
    over_ = over ? over_ + 1 : 0;
    if (p_.retune && p_.kind != balance_kind::fixed && over_ >= std::max(1u, p_.retune_after)) {
      over_ = 0;
      ++retunes_;
      ++tuning_execs_;
      restart(tt, v);
    }
    return;
  }
  ++tuning_execs_;
  if (acc_t_.empty()) {
    acc_t_.assign(n_, 0.0);
    acc_min_.assign(n_, std::numeric_limits<double>::infinity());
    acc_unit_ = 0;
  }
  const double unit = std::max(*std::max_element(tt.begin(), tt.end()), std::isfinite(unit_seconds) ? unit_seconds : 0.0);
  for (std::size_t i = 0; i < n_; ++i) acc_t_[i] += tt[i], acc_min_[i] = std::min(acc_min_[i], tt[i]);
  // The iterative search keeps the fastest of the repeats (a device's time
  // only grows by interference: one slow sample must neither bend a fit nor
  // undo a drop); the other balancers average them (seed 001).
  const bool fastest = p_.kind == balance_kind::iterative;
  acc_unit_ = acc_n_ == 0 ? unit : fastest ? std::min(acc_unit_, unit) : acc_unit_ + unit;
  if (++acc_n_ < p_.repeats) return;  // same distribution again (noise)
  for (std::size_t i = 0; i < n_; ++i) tt[i] = fastest ? acc_min_[i] : acc_t_[i] / double(acc_n_);
  const double u = fastest ? acc_unit_ : acc_unit_ / double(acc_n_);
  acc_t_.clear();
  acc_min_.clear();
  acc_n_ = 0;
  measured(tt, v, std::max(u, *std::max_element(tt.begin(), tt.end())));
}

void balance_tuner::record_points(const std::vector<double>& t, const std::vector<double>& v) {
  for (std::size_t i = 0; i < n_; ++i)
    if (v[i] > 0) pts_[i].emplace_back(v[i], t[i]);
}

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
    // rows, e.g. the unbalanced kernel) the seed's step is the safer one.
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
  // above, work below), where the seed's proportional step overshoots back
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

void balance_tuner::record_set(const std::vector<double>& v, double unit, double imb) {
  std::vector<bool> set = active_set(v);
  for (auto& s : sets_)
    if (s.set == set) {
      if (unit < s.time) s.time = unit, s.w = w_, s.imb = imb;
      return;
    }
  sets_.push_back({std::move(set), unit, w_, imb});
}

void balance_tuner::measured(const std::vector<double>& t, const std::vector<double>& v, double unit) {
  last_imb_ = balance::imbalance(t, v);
  // What the unit waited for: the slowest share, or more when the caller
  // measured the whole execution (dispatch and join included).
  const double makespan = unit;
  const double best_before = best_w_.empty() ? std::numeric_limits<double>::infinity() : best_time_;
  if (best_w_.empty() || makespan < best_time_) best_time_ = makespan, best_w_ = w_, best_imb_ = last_imb_;
  if (p_.kind == balance_kind::iterative) {
    record_points(t, v), record_set(v, makespan, last_imb_);
    hist_.push_back({v, t, makespan, last_imb_});
  }

  switch (phase_) {
    case phase::first: {
      iter_ = 1;
      bool idle = false;
      for (double x : v) idle |= x == 0;
      std::vector<double> w;
      if (p_.kind == balance_kind::iterative && idle) w = next_weights(t, v, true);  // re-tuning with devices at 0%
      else w = balance::adaptive_weights(t, v, iter_, {}, p_.threshold, p_.relax);
      if (p_.kind == balance_kind::single_step) {
        finish(std::move(w), std::nullopt);
      } else {
        w_prev_ = w;
        w_ = std::move(w);
        phase_ = phase::iterating;
      }
      break;
    }
    case phase::iterating: {
      if (!dropped_.empty()) {
        // The last step dropped devices: kept out unless the unit is now
        // slower than the fastest measured by more than δ (noise of a few
        // percent on real devices must not undo a drop; a device less also
        // saves costs no share time shows); else they come back, for the
        // rest of this search, from the fastest distribution seen.
        bool undo = makespan > best_before * (1 + p_.delta);
        for (std::size_t i : dropped_) keep_[i] = keep_[i] || undo;
        dropped_.clear();
        if (undo) {
          if (iter_ >= p_.max_iterations) {
            conclude(best_w_, best_imb_);
          } else {
            ++iter_;
            w_ = best_w_;
            w_prev_ = w_;
          }
          break;
        }
      }
      if (last_imb_ < p_.delta && makespan <= best_time_ * (1 + p_.delta)) {
        conclude(w_, last_imb_);
      } else if (iter_ >= p_.max_iterations) {
        // Did not converge: the faster end of a bracket (the fastest unit
        // seen may be a lucky sample far from the balance point), else the
        // fastest seen.
        const auto [lo, hi] = p_.bracket ? bracket_ends(v) : std::pair<const execution*, const execution*>{};
        if (lo) {
          const execution& e = faster_end(*lo, *hi);
          conclude(e.v, e.imb);
        } else {
          conclude(best_w_, best_imb_);
        }
      } else {
        ++iter_;
        std::vector<double> w = next_weights(t, v, false);
        if (bracket_done_) {
          conclude(std::move(w), bracket_imb_);  // the faster end of a narrow bracket
        } else if (same_split(w, v)) {
          conclude(best_w_, best_imb_);  // a fixed point: the next distribution is the one just run
        } else {
          w_ = std::move(w);
          w_prev_ = w_;
        }
      }
      break;
    }
    case phase::verifying:
      // The probe is in sets_. The search's own distribution once more, next
      // to it: its set's time may rest on one lucky pair (series on the
      // 16-core GPU: 4.0 ms in one execution, 5.5 ms in most), which a probe
      // of the same repeats cannot match.
      w_ = end_w_;
      phase_ = phase::rechecking;
      break;
    case phase::rechecking: {
      const std::vector<bool> end_set = active_set(end_w_);
      for (auto& s : sets_)
        if (s.set == end_set) s.time = makespan, s.w = end_w_, s.imb = last_imb_;
      conclude(end_w_, end_imb_);  // compare, or probe the next smaller set
      break;
    }
    case phase::exhaustive:
      if (++next_ == cand_.size()) finish(best_w_, best_imb_);
      else w_ = cand_[next_];
      break;
    case phase::tuned: break;
  }
}

namespace {
std::size_t set_size(const std::vector<bool>& s) { return std::size_t(std::count(s.begin(), s.end(), true)); }
}  // namespace

const balance_tuner::set_best* balance_tuner::pick_set() const {
  // The fastest measured set, or one of fewer devices within min_gain of it (then the faster).
  double best = std::numeric_limits<double>::infinity();
  for (auto& s : sets_) best = std::min(best, s.time);
  const set_best* pick = nullptr;
  for (auto& s : sets_)
    if (s.time <= best * (1 + p_.min_gain) &&
        (!pick || set_size(s.set) < set_size(pick->set) || (set_size(s.set) == set_size(pick->set) && s.time < pick->time)))
      pick = &s;
  return pick;
}

std::vector<double> balance_tuner::next_probe() {
  if (sets_.empty()) return {};
  const set_best* pick = pick_set();
  if (set_size(pick->set) < 2) return {};
  // Fits of the devices of the picked set, if they all agree with their times.
  std::vector<balance::share_time_fit> f(n_);
  bool agree = true;
  for (std::size_t i = 0; i < n_; ++i) {
    if (!pick->set[i]) continue;
    f[i] = balance::fit_share_time(pts_[i]);
    agree = agree && !pts_[i].empty() && balance::fit_agrees(f[i], pts_[i]);
  }
  const std::optional<double> T = agree ? balance::balanced_time(f, pick->set) : std::nullopt;
  // Devices in the order of their share, smallest first.
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < n_; ++i)
    if (pick->set[i]) order.push_back(i);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return pick->w[a] < pick->w[b]; });
  for (std::size_t i : order) {
    std::vector<bool> smaller = pick->set;
    smaller[i] = false;
    bool known = std::find(probed_.begin(), probed_.end(), smaller) != probed_.end();
    for (auto& s : sets_) known = known || s.set == smaller;
    if (known) continue;
    // Worth measuring: the device holds a small share (verify_share), or by
    // the fits the others alone are within verify_gain (or it would get no
    // work at all).
    bool worth = pick->w[i] < 100 * p_.verify_share;
    std::optional<double> Ts;
    if (agree) {
      Ts = balance::balanced_time(f, smaller);
      worth = worth || !T || (Ts && *Ts <= *T * (1 + p_.verify_gain));
    }
    if (!worth) continue;
    probed_.push_back(smaller);
    std::vector<double> w(n_, 0.0);
    if (agree && Ts) w = balance::fitted_weights(f, smaller, {}, 0.0);
    if (w.empty() || std::accumulate(w.begin(), w.end(), 0.0) <= 0) {
      // The others' shares of the picked distribution, renormalised.
      w.assign(n_, 0.0);
      double sum = 0;
      for (std::size_t j = 0; j < n_; ++j)
        if (smaller[j]) sum += w[j] = pick->w[j];
      if (!(sum > 0)) {
        for (std::size_t j = 0; j < n_; ++j) w[j] = smaller[j] ? 1.0 : 0.0;
        sum = double(set_size(smaller));
      }
      for (double& x : w) x = x * 100 / sum;
    }
    return w;
  }
  return {};
}

void balance_tuner::conclude(std::vector<double> w, double imb) {
  if (!(p_.kind == balance_kind::iterative && p_.fixed_costs && p_.verify_gain > 0) || sets_.empty())
    return finish(std::move(w), imb);
  if (phase_ != phase::verifying && phase_ != phase::rechecking) end_w_ = std::move(w), end_imb_ = imb;
  std::vector<double> probe = next_probe();
  if (!probe.empty()) {
    w_ = std::move(probe);
    phase_ = phase::verifying;
    return;
  }
  // Keep the fastest measured set (fewer devices within min_gain); the
  // search's own distribution when that is its set.
  const set_best* pick = pick_set();
  if (pick->set == active_set(end_w_)) finish(end_w_, end_imb_);
  else finish(pick->w, pick->imb);
}

void balance_tuner::restart(const std::vector<double>& t, const std::vector<double>& v) {
  best_w_.clear();
  hist_.clear();
  bracket_width_ = 0;
  bracket_done_ = false;
  dropped_.clear();
  sets_.clear();
  probed_.clear();
  keep_.assign(n_, false);
  bool idle = false, unknown = false;
  for (std::size_t i = 0; i < n_; ++i) {
    if (v[i] > 0) pts_[i].clear();  // its times changed: a fresh fit
    else idle = true, unknown |= pts_[i].empty();
  }
  switch (p_.kind) {
    case balance_kind::exhaustive:
      next_ = 0;
      w_ = cand_[0];
      phase_ = phase::exhaustive;
      break;
    default:
      if (idle && (p_.kind != balance_kind::iterative || !p_.fixed_costs || unknown)) {
        // A device at 0% with nothing to judge it by: seed 001's start, equal shares.
        for (auto& p : pts_) p.clear();
        w_.assign(n_, 100.0 / double(n_));
        phase_ = phase::first;
        break;
      }
      // The execution that showed the imbalance is the first measurement:
      // single-step on its times normalised to equal shares (no equal-share
      // execution wasted); devices at 0% are reconsidered on their last fits.
      phase_ = phase::first;
      measured(t, v, *std::max_element(t.begin(), t.end()));
      break;
  }
}

// ------------------------------------------------------------------ cache

balance_cache& balance_cache::global() {
  static balance_cache c;
  return c;
}

std::optional<std::vector<double>> balance_cache::find(const balance_key& k) const {
  std::lock_guard<std::mutex> l(m_);
  auto it = w_.find(k);
  if (it == w_.end()) return std::nullopt;
  return it->second;
}

void balance_cache::store(const balance_key& k, std::vector<double> weights) {
  std::lock_guard<std::mutex> l(m_);
  w_[k] = std::move(weights);
}

void balance_cache::erase(const balance_key& k) {
  std::lock_guard<std::mutex> l(m_);
  w_.erase(k);
}

void balance_cache::clear() {
  std::lock_guard<std::mutex> l(m_);
  w_.clear();
}

std::size_t balance_cache::size() const {
  std::lock_guard<std::mutex> l(m_);
  return w_.size();
}

}  // namespace sinew
