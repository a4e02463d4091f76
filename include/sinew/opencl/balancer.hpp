#pragma once
/// \file balancer.hpp
/// Load balancing of one map over several devices: HPL's execution plans
/// and load-balancing models [Vinas17, §3.3, §3.3.2]; formulas and when to
/// use which policy in docs/balancing.md. This header gathers the pieces:
///
/// | header | what |
/// | --- | --- |
/// | balance_policy.hpp | `balance_policy` and `balance::static_weights`, `single_step`, `iterative`, `exhaustive` |
/// | split_shares.hpp | `split_shares`, `share_percent`: a unit cut in proportion to weights, on granules |
/// | balance_models.hpp | the paper's models as functions: Figs. 7 and 8, imbalance, exhaustive candidates |
/// | share_time_fit.hpp | the iterative search's fixed-cost model: fits, balanced time, the device set |
/// | balance_tuner.hpp | `balance_tuner`: the online search and the re-tuning of a stream |
/// | balance_cache.hpp | `balance_cache`: tuned weights per (node path, unit size, device set) |
///
/// \code
/// #include <sinew/opencl/balancer.hpp>
/// sinew::balance_tuner tu(sinew::balance::iterative(), 2);
/// while (!tu.tuned()) {
///   auto shares = sinew::split_shares(rows, tu.weights(), {1, 64});
///   tu.report(shares, run_on_devices(shares));   // measured share_timings
/// }
/// \endcode
#include <sinew/opencl/balance_cache.hpp>
#include <sinew/opencl/balance_models.hpp>
#include <sinew/opencl/balance_policy.hpp>
#include <sinew/opencl/balance_tuner.hpp>
#include <sinew/opencl/share_time_fit.hpp>
#include <sinew/opencl/split_shares.hpp>
