#pragma once
/// \file balancer.hpp
/// Load balancing of one map over several devices (seed 001, §3.3.2, the
/// "execution plans" of HPL; formulas in docs/balancing.md).
///
/// A unit's outermost dimension is split in proportion to per-device
/// *weights* (percentages summing to 100), each share a multiple of its
/// device's granularity (`split_shares`). A `balance_policy` says how the
/// weights are found:
/// - `balance::static_weights(w)`: given.
/// - `balance::single_step()`: one execution with equal shares, then
///   `u_i = max(t)/t_i`, `w_i = 100·u_i/Σu` (seed 001, Fig. 7); a device
///   whose estimated time `t_i·w_i/(100/N)` is below `threshold` gets nothing
///   and the others are renormalised.
/// - `balance::iterative()`: single-step, then while the slowest device takes
///   ≥ δ longer than the fastest: `t'_i = t_i/v_i·100/N`, `w = balance(t')`,
///   relaxed as `w = w_prev + (w − w_prev)/(iter − 1)` once iter > 2 (Fig. 8).
///   Beyond the seed (docs/balancing.md, "Fixed costs and dropped devices"):
///   from two executions at different shares each device's time is fitted
///   as `t_i = a_i + b_i·v_i` (a fixed cost `a_i` per execution: launch,
///   transfer latency); while every fit agrees with the device's measured
///   times, the next weights balance the fitted times, over the set of
///   devices whose predicted unit time is shortest (a device that would cut
///   it by less than `min_gain` gets 0%); a drop is undone only if the unit
///   without the device is slower than the fastest measured by more than δ;
///   before ending, sets of one device less that the fits see within
///   `verify_gain` (or that drop a share below it) are measured, and the
///   fastest measured set is kept, the search's own split measured once more
///   beside each probe (docs/balancing.md, "Verified device sets").
///   When the fits do not agree (work not uniform over the rows) and two
///   devices share the unit, measured splits on both sides of equal times
///   bracket the balance point: the next split is a safeguarded secant step
///   inside the bracket (bisection when the bracket stopped halving), and
///   the search ends when the bracket is narrower than half a percent or a
///   split granule, on the faster end. A device's time there is judged by its
///   envelope: at most its least time measured at a larger share of its own
///   (more rows never take less time; noise only adds), so that one slow
///   pair neither crosses the bracket nor picks its end (docs/balancing.md,
///   "Bracketing", "Envelope").
/// - `balance::exhaustive(step)`: every split at `step` (5% default; 1% is the
///   oracle the tests compare with), keeping the fastest.
///
/// The search is *online*: a `balance_tuner` proposes the weights of the next
/// execution (which processes a real unit: no work is wasted), is told the
/// measured `share_timing`s, and says when it is tuned. Tuned weights are
/// kept in a `balance_cache` per (node path, unit size, device set).
///
/// \code
/// sinew::balance_tuner tu(sinew::balance::iterative(), 2);
/// while (!tu.tuned()) {
///   auto shares = sinew::split_shares(rows, tu.weights(), {1, 64});
///   std::vector<sinew::share_timing> t = run_on_devices(shares);   // measured
///   tu.report(shares, t);
/// }
/// std::printf("cpu %.1f%%, gpu %.1f%% after %u executions\n", tu.weights()[0], tu.weights()[1],
///             tu.tuning_executions());
/// \endcode
#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <sinew/opencl/device_executor.hpp>

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
  /// on the devices between units and kernel time is what matters (seed 001
  /// lets the user choose); on a GPU fed from host memory, kernel-only times
  /// send nearly all the work to the GPU however long its transfers take.
  bool with_transfers = true;
  /// Executions per distribution tried; their times are averaged (noise).
  unsigned repeats = 1;
  /// `iterative`: most distributions tried; then the fastest one seen is kept.
  unsigned max_iterations = 10;
  /// `iterative`: relaxation on (seed 001: without it the search oscillated).
  bool relax = true;
  /// `iterative`: with two devices, once measured splits bracket equal share
  /// times and the fitted lines do not hold, step inside the bracket
  /// (secant, bisection when it stops halving) instead of seed 001's
  /// proportional step. false = the seed's step alone.
  bool bracket = true;
  /// `iterative`: fit each device's time as `a + b·v` (a fixed cost per
  /// execution plus a part proportional to its share) from two executions
  /// at different shares, balance the fitted times and drop devices that do
  /// not pay off (docs/balancing.md). false = seed 001's proportional model
  /// `t'_i = t_i/v_i·100/N` alone, no device ever dropped but by `threshold`.
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
  /// whatever the fits predict. (16-core saxpy: the GPU's 7.4% share slowed
  /// the host's by more than its own work, which the host's fit, taken
  /// while the GPU ran, cannot show; the host alone was 1.4x faster.)
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

/// seed 001 Fig. 7: weights (percent) from times `t` of an execution with
/// equal shares. `active[i] == false` devices get 0. At least one device
/// keeps work (the one with the largest weight) whatever the threshold.
std::vector<double> single_step_weights(const std::vector<double>& t, double threshold,
                                        const std::vector<bool>& active = {});
/// seed 001 Fig. 8: times `t` of an execution where device i ran `v[i]`
/// percent; `iter` counts model applications (1 = the single step);
/// relaxation towards `w_prev` once iter > 2 (when `relax`).
std::vector<double> adaptive_weights(const std::vector<double>& t, const std::vector<double>& v, unsigned iter,
                                     const std::vector<double>& w_prev, double threshold, bool relax = true);
/// max(t)/min(t) − 1 over devices with `v[i] > 0` (0 with fewer than two).
double imbalance(const std::vector<double>& t, const std::vector<double>& v);

/// A device's share time as a function of its share: `t(v) = fixed + per_percent·v`
/// (seconds; v in percent of the unit). The seed's model is `fixed == 0`.
struct share_time_fit {
  double fixed = 0;
  double per_percent = 0;
  double at(double v) const noexcept { return v > 0 ? fixed + per_percent * v : 0.0; }
};
/// Fits `points` (share percent, seconds; in the order measured) as in the
/// iterative search: through the last point and the most recent earlier one
/// whose share differs by at least a quarter of the larger share; `fixed`
/// is kept only when positive (else the seed's proportional fit through the
/// last point), `per_percent` is at least 1% of the last point's t/v. One
/// point (or none far enough): proportional. Empty: {0, 0}.
share_time_fit fit_share_time(const std::vector<std::pair<double, double>>& points);
/// Whether `f` agrees with every point within a factor 1 + `tolerance`.
bool fit_agrees(const share_time_fit& f, const std::vector<std::pair<double, double>>& points, double tolerance = 0.5);
/// The fitted unit time of devices `set` sharing a unit in balance: the T
/// with `Σ (T − fixed_i)/per_percent_i = 100`; nothing if a device of the
/// set would get no work (its fixed cost is not below T).
std::optional<double> balanced_time(const std::vector<share_time_fit>& f, const std::vector<bool>& set);
/// Weights (percent) balancing fitted times over the device set with the
/// shortest balanced time, among devices with `usable[i]`; `keep[i]`
/// devices are in every set considered. A smaller set is preferred when its
/// time is within `min_gain` (a fraction) of the best. Devices outside the
/// set get 0. `*predicted` (if given) receives the set's balanced time.
/// Empty if no device is usable.
std::vector<double> fitted_weights(const std::vector<share_time_fit>& f, const std::vector<bool>& usable,
                                   const std::vector<bool>& keep, double min_gain, double* predicted = nullptr);
/// Every split of 100% into `devices` parts that are multiples of `step`
/// (fraction), in lexicographic order (seed 001's EXHAUSTIVE candidates).
std::vector<std::vector<double>> exhaustive_candidates(std::size_t devices, double step);
}  // namespace balance

/// Splits outermost indices [0, n) into one contiguous share per device, in
/// device order, in proportion to `weights`. Every share but the last
/// non-empty one is a multiple of its device's `granularity`; the last
/// takes the remainder. A device with weight 0 gets an empty share; every
/// other device gets at least one granule when n ≥ 1 + the granularities of
/// the non-last weighted devices. Every index is covered exactly once.
/// Throws sinew::error on mismatched sizes, negative or all-zero weights, a
/// zero granularity.
std::vector<device_share> split_shares(std::size_t n, const std::vector<double>& weights,
                                       const std::vector<std::size_t>& granularity);

/// Percent of [0, n) each share holds (v of seed 001 Fig. 8).
std::vector<double> share_percent(const std::vector<device_share>& shares);

/// The online search of one policy for one (node, unit size, device set).
/// Not thread safe: the multi-device map serialises tuning executions.
class balance_tuner {
 public:
  /// Throws sinew::error for a bad policy (no devices, `fixed` weights of
  /// the wrong count or all zero, δ ≤ 0, a step that does not divide 1...).
  balance_tuner(balance_policy p, std::size_t devices);

  /// Weights (percent, sum 100) for the next execution.
  const std::vector<double>& weights() const noexcept { return w_; }
  bool tuned() const noexcept { return phase_ == phase::tuned; }
  /// Feeds the measured times of one execution that used `shares`.
  /// `unit_seconds` (optional, 0 = unknown): what the whole execution took
  /// as its caller saw it, from dispatching the shares to the last one
  /// joined; distributions are compared on max(it, the slowest share).
  void report(const std::vector<device_share>& shares, const std::vector<share_timing>& t,
              double unit_seconds = 0);
  /// Starts tuned with `w` (e.g. from a balance_cache).
  void set_tuned(std::vector<double> w);
  /// The devices' granularities (split_shares): the iterative search stops
  /// when its next distribution would give every device the rows it just
  /// ran (a fixed point). Default: 1 each.
  void set_granularity(std::vector<std::size_t> g);
  /// Each device's fitted share time in the current search (`iterative`;
  /// {0, 0} for a device not measured yet).
  std::vector<balance::share_time_fit> fits() const;
  /// Executions whose times the search used (the initial tuning and re-tunings).
  unsigned tuning_executions() const noexcept { return tuning_execs_; }
  /// Times tuning restarted because a stream's imbalance grew past δ.
  unsigned retunes() const noexcept { return retunes_; }
  /// Model applications of the iterative search so far (seed 001's `iter`).
  unsigned iterations() const noexcept { return iter_; }
  /// Imbalance (max/min − 1) of the last reported execution.
  double last_imbalance() const noexcept { return last_imb_; }
  const balance_policy& policy() const noexcept { return p_; }

 private:
  enum class phase { first, iterating, verifying, rechecking, exhaustive, tuned };
  void measured(const std::vector<double>& t, const std::vector<double>& v, double unit);
  /// The iterative search is done: with fits, checks smaller device sets by
  /// measurement first (verify_gain); `w`: the distribution it ended on.
  void conclude(std::vector<double> w, double imb);
  /// The next smaller set worth measuring (empty: none), from the best set measured.
  std::vector<double> next_probe();
  void record_set(const std::vector<double>& v, double unit, double imb);
  void finish(std::vector<double> w, std::optional<double> baseline);
  void restart(const std::vector<double>& t, const std::vector<double>& v);
  void record_points(const std::vector<double>& t, const std::vector<double>& v);
  /// The next weights of the iterative search (iter_ already counted).
  std::vector<double> next_weights(const std::vector<double>& t, const std::vector<double>& v, bool restarting);
  bool same_split(const std::vector<double>& w, const std::vector<double>& v) const;
  /// The bracketed step of two devices (see balance::iterative); nullopt
  /// when there is no bracket. Sets bracket_done_ when the bracket is
  /// narrow enough (the returned weights: its faster end).
  std::optional<std::vector<double>> bracket_step(const std::vector<double>& v);
  struct execution;
  /// The bracket of the two devices sharing `v` (nulls: none): the
  /// executions with f = t_a - t_b < 0 at the largest share of a and f > 0
  /// at the smallest.
  std::pair<const execution*, const execution*> bracket_ends(const std::vector<double>& v) const;
  /// Device i's time in `e` judged on every execution of e's device set:
  /// at most its least time measured at a share >= its share in `e`.
  double envelope_time(const execution& e, std::size_t i) const;
  /// The unit time of `e` from envelope_time (plus what the unit waited for
  /// beyond its slowest share).
  double envelope_unit(const execution& e) const;
  /// The faster end of a bracket by envelope_unit (the lower share of a on a tie).
  const execution& faster_end(const execution& lo, const execution& hi) const;

  balance_policy p_;
  std::size_t n_;
  phase phase_ = phase::first;
  std::vector<double> w_, w_prev_;
  unsigned iter_ = 0, tuning_execs_ = 0, retunes_ = 0;
  double last_imb_ = 0;
  std::optional<double> baseline_;
  unsigned over_ = 0;  // consecutive tuned units imbalanced past the trigger
  // repeats: times summed (and the fastest of each device, the fastest
  // unit) over the executions of one distribution
  std::vector<double> acc_t_, acc_min_;
  double acc_unit_ = 0;
  unsigned acc_n_ = 0;
  // iterative: the fastest distribution measured of each device set (by
  // unit time) in this search; sets whose smaller sets were probed
  struct set_best {
    std::vector<bool> set;
    double time;
    std::vector<double> w;
    double imb;
  };
  std::vector<set_best> sets_;
  const set_best* pick_set() const;
  std::vector<std::vector<bool>> probed_;
  std::vector<double> end_w_;  // the distribution the search ended on, and its imbalance
  double end_imb_ = 0;
  // the fastest distribution measured in this search (makespan, weights, imbalance)
  double best_time_ = 0;
  std::vector<double> best_w_;
  double best_imb_ = 0;
  // exhaustive
  std::vector<std::vector<double>> cand_;
  std::size_t next_ = 0;
  // iterative with fixed costs: each device's (share %, seconds) in this search
  std::vector<std::vector<std::pair<double, double>>> pts_;
  std::vector<bool> keep_;             // drop undone: in every set for the rest of the search
  std::vector<std::size_t> dropped_;   // dropped by the last step: kept only if the unit got faster
  std::vector<std::size_t> gran_;
  std::size_t rows_ = 0;               // rows of the last unit reported
  // iterative: every execution of this search (shares %, share times,
  // unit time, imbalance), for the bracketed step
  struct execution {
    std::vector<double> v, t;
    double unit, imb;
  };
  std::vector<execution> hist_;
  double bracket_width_ = 0;  // the bracket at the previous bracketed step (0: none)
  bool bracket_done_ = false;
  double bracket_imb_ = 0;
  // tuned: makespan baseline (slowest of the first retune_after + 1 tuned
  // units) for devices at 0%, whose imbalance cannot show
  double base_ms_ = 0;
  unsigned base_n_ = 0;
};

/// Tuned weights per (node path, unit size, device set); thread safe.
///
/// \code
/// sinew::balance_cache cache;
/// sinew::balance_key k{"pipeline[1]/multi_device_map", 4096, "host|sim:gpu"};
/// cache.store(k, {30, 70});
/// auto w = cache.find(k);   // {30, 70}
/// \endcode
struct balance_key {
  std::string path;
  std::size_t unit_size = 0;
  std::string devices;  ///< executor names joined by '|'
  friend bool operator<(const balance_key& a, const balance_key& b) {
    return std::tie(a.path, a.unit_size, a.devices) < std::tie(b.path, b.unit_size, b.devices);
  }
};

class balance_cache {
 public:
  /// The process-wide cache multi-device maps use unless given their own.
  static balance_cache& global();
  std::optional<std::vector<double>> find(const balance_key& k) const;
  void store(const balance_key& k, std::vector<double> weights);
  void erase(const balance_key& k);
  void clear();
  std::size_t size() const;

 private:
  mutable std::mutex m_;
  std::map<balance_key, std::vector<double>> w_;
};

}  // namespace sinew
