#pragma once
/// \file balance_policy.hpp
/// How a multi-device map finds the weights (percent of a unit per device)
/// it splits units by: HPL's load-balancing models [Vinas17, §3.3.2];
/// formulas in docs/balancing.md.
///
/// - `balance::static_weights(w)`: given.
/// - `balance::single_step()`: one execution with equal shares, then
///   `u_i = max(t)/t_i`, `w_i = 100·u_i/Σu` [Vinas17, Fig. 7]; a device whose
///   estimated time `t_i·w_i/(100/N)` is below `threshold` gets nothing and
///   the others are renormalised.
/// - `balance::iterative()`: single-step, then while the slowest device takes
///   ≥ δ longer than the fastest: `t'_i = t_i/v_i·100/N`, `w = balance(t')`,
///   relaxed as `w = w_prev + (w − w_prev)/(iter − 1)` once iter > 2
///   [Vinas17, Fig. 8]. On top of the paper (`fixed_costs`, `bracket`,
///   `verify_gain`; docs/balancing.md): each device's time is fitted as
///   `a_i + b_i·v_i` (a fixed cost per execution) and devices that do not
///   pay off get 0%; smaller device sets are measured before the search
///   ends; on work not uniform over the rows, two devices step inside a
///   bracket of measured splits around the balance point.
/// - `balance::exhaustive(step)`: every split at `step` (5% default; 1% is
///   the oracle tests and benchmarks compare with), keeping the fastest.
///
/// \code
/// sinew::balance_policy p = sinew::balance::iterative(0.05);   // δ = 5%
/// p.repeats = 2;                 // time each distribution on two units
/// p.retune = false;              // keep the split found, whatever the stream does
/// sinew::node m = sinew::multi_device_map({cpu, gpu}, p);
/// std::puts(p.name().c_str());   // "iterative"
/// \endcode
#include <string>
#include <vector>

namespace sinew {

enum class balance_kind { fixed, single_step, iterative, exhaustive };

struct balance_policy {
  balance_kind kind = balance_kind::iterative;
  /// `fixed`: the weights (any non-negative scale; normalised to 100).
  std::vector<double> weights;
  /// `iterative`: tuned once the slowest device is less than δ (a fraction:
  /// 0.05 = 5%) slower than the fastest; also the re-tuning trigger.
  double delta = 0.05;
  /// Seconds: a device whose estimated time for its share is below this gets
  /// no work (the fixed cost of using it does not pay off). 0 = never.
  double threshold = 0;
  /// `exhaustive`: step of the splits tried, as a fraction of the unit (1/step integral).
  double step = 0.05;
  /// Balance on `share_timing::total` (with transfers: what the unit waits
  /// for) rather than `compute` (kernel only). Set false when the data stays
  /// on the devices between units and kernel time is what matters (HPL lets
  /// the user choose); on a GPU fed from host memory, kernel-only times
  /// send nearly all the work to the GPU however long its transfers take.
  bool with_transfers = true;
  /// Executions per distribution tried; their times are averaged (noise).
  unsigned repeats = 1;
  /// `iterative`: most distributions tried; then the fastest one seen is kept.
  unsigned max_iterations = 10;
  /// `iterative`: relaxation on (without it the model oscillates [Vinas17, §3.3.2]).
  bool relax = true;
  /// `iterative`: with two devices, once measured splits bracket equal share
  /// times and the fitted lines do not hold, step inside the bracket
  /// (secant, bisection when it stops halving) instead of the paper's
  /// proportional step. false = the paper's step alone.
  bool bracket = true;
  /// `iterative`: fit each device's time as `a + b·v` (a fixed cost per
  /// execution plus a part proportional to its share) from two executions
  /// at different shares, balance the fitted times and drop devices that do
  /// not pay off (docs/balancing.md). false = the paper's proportional
  /// model `t'_i = t_i/v_i·100/N` alone, no device ever dropped but by `threshold`.
  bool fixed_costs = true;
  /// `iterative` with `fixed_costs`: a device is used only if the fitted
  /// times predict that it cuts the unit's time by at least this fraction
  /// (0.02 = 2%); below that, running one more device is not worth its
  /// unmodelled costs (a device thread to wake, a core less for the host).
  double min_gain = 0.02;
  /// `iterative` with `fixed_costs`: before the search ends on a set of
  /// devices, every smaller set (one device less) that the fits predict
  /// within this fraction of it (0.05 = 5%), or that loses a device holding
  /// less than `verify_share` of the unit, is *measured* (unless it already
  /// was), and the fastest measured set is kept, the smaller one when within
  /// `min_gain`. Fits come from executions that ran every device at once
  /// and miss what a second device costs the unit (dispatch, waking the
  /// worker, memory bandwidth the transfers take from the host's share).
  /// 0 = off.
  double verify_gain = 0.05;
  /// `iterative` with `verify_gain` on: a device holding less than this
  /// fraction of the unit (0.10 = 10%) has the set without it measured,
  /// whatever the fits predict: a small GPU share can slow the host's share
  /// by more than its own work (its transfers take the host's memory
  /// bandwidth), which fits taken while both devices ran cannot show.
  double verify_share = 0.10;
  /// In a stream, re-tune when the measured imbalance exceeds δ (and has
  /// grown by δ since tuning ended; single-step and exhaustive splits may be
  /// imbalanced by design).
  bool retune = true;
  /// Consecutive imbalanced units before re-tuning (one noisy measurement
  /// of a real device must not restart the search).
  unsigned retune_after = 2;
  /// "static", "single-step", "iterative", "exhaustive(5%)".
  std::string name() const;
};

namespace balance {
balance_policy static_weights(std::vector<double> weights);
balance_policy single_step(double threshold = 0);
balance_policy iterative(double delta = 0.05, double threshold = 0);
balance_policy exhaustive(double step = 0.05);
}  // namespace balance

}  // namespace sinew
