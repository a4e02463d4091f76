// Load balancers of a multi-device map: seed 001 (HPL execution plans),
// §3.3.2, Figures 7 (SINGLE_STEP_MODEL) and 8 (ITERATIVE_MODEL), and the
// EXHAUSTIVE search. See include/sinew/balancer.hpp and docs/balancing.md.
#include <sinew/balancer.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace sinew {

namespace {

// Times of zero (an empty kernel, a coarse clock) would divide by zero; a
// device that took no measurable time is simply very fast.
constexpr double min_time = 1e-12;

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
  if (p_.repeats == 0) throw error(who + "repeats must be at least 1");
  if (p_.max_iterations == 0) throw error(who + "max_iterations must be at least 1");
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

void balance_tuner::finish(std::vector<double> w, std::optional<double> baseline) {
  w_ = std::move(w);
  phase_ = phase::tuned;
  baseline_ = baseline;
  over_ = 0;
  acc_t_.clear();
  acc_n_ = 0;
}

void balance_tuner::report(const std::vector<device_share>& shares, const std::vector<share_timing>& t) {
  if (shares.size() != n_ || t.size() != n_)
    throw error("balancer " + p_.name() + ": " + std::to_string(t.size()) + " timings / " +
                std::to_string(shares.size()) + " shares for " + std::to_string(n_) + " devices");
  std::vector<double> tt(n_);
  for (std::size_t i = 0; i < n_; ++i) tt[i] = p_.with_transfers ? t[i].total : t[i].compute;
  const std::vector<double> v = share_percent(shares);

  if (phase_ == phase::tuned) {
    last_imb_ = balance::imbalance(tt, v);
    if (!baseline_) {
      baseline_ = last_imb_;  // what these weights give when nothing changed
      return;
    }
    bool over = last_imb_ > p_.delta && last_imb_ > *baseline_ + p_.delta;
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
  if (acc_t_.empty()) acc_t_.assign(n_, 0.0);
  for (std::size_t i = 0; i < n_; ++i) acc_t_[i] += tt[i];
  if (++acc_n_ < p_.repeats) return;  // same distribution again (noise)
  for (std::size_t i = 0; i < n_; ++i) tt[i] = acc_t_[i] / double(acc_n_);
  acc_t_.clear();
  acc_n_ = 0;
  measured(tt, v);
}

void balance_tuner::measured(const std::vector<double>& t, const std::vector<double>& v) {
  last_imb_ = balance::imbalance(t, v);
  double makespan = *std::max_element(t.begin(), t.end());
  if (best_w_.empty() || makespan < best_time_) best_time_ = makespan, best_w_ = w_, best_imb_ = last_imb_;

  switch (phase_) {
    case phase::first: {
      iter_ = 1;
      std::vector<double> w = balance::adaptive_weights(t, v, iter_, {}, p_.threshold, p_.relax);
      if (p_.kind == balance_kind::single_step) {
        finish(std::move(w), std::nullopt);
      } else {
        w_prev_ = w;
        w_ = std::move(w);
        phase_ = phase::iterating;
      }
      break;
    }
    case phase::iterating:
      if (last_imb_ < p_.delta) {
        finish(w_, last_imb_);
      } else if (iter_ >= p_.max_iterations) {
        finish(best_w_, best_imb_);  // did not converge: keep the fastest seen
      } else {
        ++iter_;
        w_ = balance::adaptive_weights(t, v, iter_, w_prev_, p_.threshold, p_.relax);
        w_prev_ = w_;
      }
      break;
    case phase::exhaustive:
      if (++next_ == cand_.size()) finish(best_w_, best_imb_);
      else w_ = cand_[next_];
      break;
    case phase::tuned: break;
  }
}

void balance_tuner::restart(const std::vector<double>& t, const std::vector<double>& v) {
  best_w_.clear();
  switch (p_.kind) {
    case balance_kind::exhaustive:
      next_ = 0;
      w_ = cand_[0];
      phase_ = phase::exhaustive;
      break;
    default:
      // The execution that showed the imbalance is the first measurement:
      // single-step on its times normalised to equal shares (no equal-share
      // execution wasted).
      phase_ = phase::first;
      measured(t, v);
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
