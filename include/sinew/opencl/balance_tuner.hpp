#pragma once
/// \file balance_tuner.hpp
/// The online search of one balance_policy for one (node, unit size, device
/// set). It proposes the weights of the next execution (which processes a
/// real unit: no work is wasted), is told the measured `share_timing`s, and
/// says when it is tuned; once tuned it watches the imbalance of a stream
/// and re-tunes when it grows past δ. docs/balancing.md gives the rules.
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
#include <optional>
#include <utility>
#include <vector>

#include <sinew/opencl/balance_models.hpp>
#include <sinew/opencl/balance_policy.hpp>
#include <sinew/opencl/device_executor.hpp>
#include <sinew/opencl/share_time_fit.hpp>
#include <sinew/opencl/split_shares.hpp>

namespace sinew {

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
  /// Times tuning restarted because a stream's imbalance grew past δ. The
  /// weights of a tuned tuner change only then.
  unsigned retunes() const noexcept { return retunes_; }
  /// Model applications of the iterative search so far ([Vinas17, Fig. 8]'s `iter`).
  unsigned iterations() const noexcept { return iter_; }
  /// Imbalance (max/min − 1) of the last reported execution.
  double last_imbalance() const noexcept { return last_imb_; }
  const balance_policy& policy() const noexcept { return p_; }

 private:
  enum class phase { first, iterating, verifying, rechecking, exhaustive, tuned };
  // balance_tuner.cpp: the phases, repeats, the tuned stream's watch.
  void measured(const std::vector<double>& t, const std::vector<double>& v, double unit);
  void watch_tuned(const std::vector<double>& t, const std::vector<double>& v);
  void finish(std::vector<double> w, std::optional<double> baseline);
  void restart(const std::vector<double>& t, const std::vector<double>& v);
  void record_points(const std::vector<double>& t, const std::vector<double>& v);

  // iterative_search.cpp: the steps of the iterative search.
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

  // verified_sets.cpp: measuring smaller device sets before the search ends.
  /// The iterative search is done: with fits, checks smaller device sets by
  /// measurement first (verify_gain); `w`: the distribution it ended on.
  void conclude(std::vector<double> w, double imb);
  /// The next smaller set worth measuring (empty: none), from the best set measured.
  std::vector<double> next_probe();
  void record_set(const std::vector<double>& v, double unit, double imb);
  struct set_best;
  const set_best* pick_set() const;

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

}  // namespace sinew
