#pragma once
/// \file split_shares.hpp
/// Cutting a unit's outermost dimension into one contiguous share per
/// device, in proportion to weights, on the devices' granules (the
/// subarrays of HPL's execution plans [Vinas17, §3.3]).
///
/// \code
/// // 1000 rows, 30% / 70%, the second device in work-groups of 64 rows:
/// auto s = sinew::split_shares(1000, {30, 70}, {1, 64});   // [0, 300), [300, 1000)
/// auto v = sinew::share_percent(s);                        // {30, 70}
/// \endcode
#include <cstddef>
#include <vector>

#include <sinew/opencl/device_executor.hpp>

namespace sinew {

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

/// Percent of [0, n) each share holds (v of [Vinas17, Fig. 8]).
std::vector<double> share_percent(const std::vector<device_share>& shares);

}  // namespace sinew
