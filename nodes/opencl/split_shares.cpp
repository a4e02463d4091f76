// split_shares: a unit's outermost dimension cut into one contiguous share
// per device, in proportion to weights, on the devices' granules.
#include <sinew/opencl/split_shares.hpp>

#include <cmath>
#include <string>

#include <sinew/engine/error.hpp>

namespace sinew {

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

}  // namespace sinew
