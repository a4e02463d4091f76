// balance_tuner: the online search's phases (first execution, iterating,
// verifying smaller device sets, exhaustive sweep, tuned), the repeats of
// one distribution, and the tuned stream's watch that re-tunes it. The
// iterative search's steps are in iterative_search.cpp and verified_sets.cpp.
#include <sinew/opencl/balance_tuner.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include <sinew/engine/error.hpp>

#include "distribution.hpp"

namespace sinew {

using detail::active_set;

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
  if (phase_ == phase::tuned) return watch_tuned(tt, v);

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
  // undo a drop); the other balancers average them, as HPL does.
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

void balance_tuner::watch_tuned(const std::vector<double>& t, const std::vector<double>& v) {
  last_imb_ = balance::imbalance(t, v);
  const double ms = *std::max_element(t.begin(), t.end());
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
    restart(t, v);
  }
}

void balance_tuner::record_points(const std::vector<double>& t, const std::vector<double>& v) {
  for (std::size_t i = 0; i < n_; ++i)
    if (v[i] > 0) pts_[i].emplace_back(v[i], t[i]);
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
      // to it: its set's time may rest on one lucky pair (a bimodal GPU's
      // rare fast execution), which a probe of the same repeats cannot match.
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
        // A device at 0% with nothing to judge it by: HPL's start, equal shares.
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

}  // namespace sinew
