#pragma once
/// \file balance_models.hpp
/// The load-balancing models of HPL [Vinas17, §3.3.2] as plain functions
/// over measured times: the single step (Fig. 7), the iterative step with
/// relaxation (Fig. 8), the imbalance that stops the search, and the
/// candidates of the exhaustive search. The balance_tuner applies them
/// online; tests check them on their own.
///
/// \code
/// // Equal shares took 2 ms on the CPU and 6 ms on the GPU:
/// auto w = sinew::balance::single_step_weights({2e-3, 6e-3}, 0);             // {75, 25}
/// // Then 75% / 25% took 3.3 and 1.5 ms (iteration 2, no relaxation yet):
/// auto w2 = sinew::balance::adaptive_weights({3.3e-3, 1.5e-3}, w, 2, w, 0);
/// double imb = sinew::balance::imbalance({3.3e-3, 1.5e-3}, w);               // 1.2: 120% apart
/// auto splits = sinew::balance::exhaustive_candidates(2, 0.25);              // 0/100, 25/75, ..., 100/0
/// \endcode
#include <cstddef>
#include <vector>

namespace sinew::balance {

/// [Vinas17, Fig. 7]: weights (percent) from times `t` of an execution with
/// equal shares. `active[i] == false` devices get 0. At least one device
/// keeps work (the one with the largest weight) whatever the threshold.
std::vector<double> single_step_weights(const std::vector<double>& t, double threshold,
                                        const std::vector<bool>& active = {});
/// [Vinas17, Fig. 8]: times `t` of an execution where device i ran `v[i]`
/// percent; `iter` counts model applications (1 = the single step);
/// relaxation towards `w_prev` once iter > 2 (when `relax`).
std::vector<double> adaptive_weights(const std::vector<double>& t, const std::vector<double>& v, unsigned iter,
                                     const std::vector<double>& w_prev, double threshold, bool relax = true);
/// max(t)/min(t) − 1 over devices with `v[i] > 0` (0 with fewer than two).
double imbalance(const std::vector<double>& t, const std::vector<double>& v);
/// Every split of 100% into `devices` parts that are multiples of `step`
/// (fraction), in lexicographic order: the candidates of HPL's exhaustive
/// search. Throws sinew::error if there is no device or `step` does not
/// divide the unit into whole steps.
std::vector<std::vector<double>> exhaustive_candidates(std::size_t devices, double step);

}  // namespace sinew::balance
