#pragma once
/// \file share_time_fit.hpp
/// The fixed-cost model of the iterative search (docs/balancing.md, "Fixed
/// costs and dropped devices"): each device's share time fitted as
/// `t(v) = a + b·v` (a fixed cost per execution: launch, transfer latency,
/// waking its thread; plus a part proportional to its share), the unit time
/// of a device set balanced on those lines, and the set worth running.
/// HPL's proportional model [Vinas17, Fig. 8] is the case `a = 0`.
///
/// \code
/// // The GPU's share time is mostly fixed cost; the host's is proportional.
/// std::vector<sinew::balance::share_time_fit> f = {{0, 1e-3 / 100}, {0.8e-3, 0.1e-3 / 100}};
/// double T = *sinew::balance::balanced_time(f, {true, true});         // 0.818 ms
/// auto w = sinew::balance::fitted_weights(f, {true, true}, {}, 0.02);  // {81.8, 18.2}
/// auto g = sinew::balance::fit_share_time({{50, 0.9e-3}, {20, 0.82e-3}});  // a ≈ 0.77 ms
/// \endcode
#include <optional>
#include <utility>
#include <vector>

namespace sinew::balance {

/// A device's share time as a function of its share: `t(v) = fixed + per_percent·v`
/// (seconds; v in percent of the unit). HPL's model is `fixed == 0`.
struct share_time_fit {
  double fixed = 0;
  double per_percent = 0;
  double at(double v) const noexcept { return v > 0 ? fixed + per_percent * v : 0.0; }
};
/// Fits `points` (share percent, seconds; in the order measured) as in the
/// iterative search: through the last point and the most recent earlier one
/// whose share differs by at least a quarter of the larger share; `fixed`
/// is kept only when positive (else the proportional fit through the last
/// point), `per_percent` is at least 1% of the last point's t/v. One point
/// (or none far enough): proportional. Empty: {0, 0}.
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

}  // namespace sinew::balance
