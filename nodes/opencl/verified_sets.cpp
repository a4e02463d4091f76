// Verified device sets: before the iterative search ends, smaller device
// sets it cannot judge from its fits are measured, and the fastest measured
// set is kept (docs/balancing.md, "Verified device sets").
#include <sinew/opencl/balance_tuner.hpp>

#include <algorithm>
#include <limits>
#include <numeric>

#include "distribution.hpp"

namespace sinew {

using detail::active_set;
using detail::set_size;

void balance_tuner::record_set(const std::vector<double>& v, double unit, double imb) {
  std::vector<bool> set = active_set(v);
  for (auto& s : sets_)
    if (s.set == set) {
      if (unit < s.time) s.time = unit, s.w = w_, s.imb = imb;
      return;
    }
  sets_.push_back({std::move(set), unit, w_, imb});
}

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

}  // namespace sinew
