// balance_policy: its name and the makers of each kind.
#include <sinew/opencl/balance_policy.hpp>

#include <cmath>
#include <cstdio>

namespace sinew {

namespace {

std::string percent(double f) {
  double p = f * 100;
  char b[32];
  std::snprintf(b, sizeof b, p == std::floor(p) ? "%.0f%%" : "%.2g%%", p);
  return b;
}

balance_policy of_kind(balance_kind k) {
  balance_policy p;
  p.kind = k;
  return p;
}

}  // namespace

std::string balance_policy::name() const {
  switch (kind) {
    case balance_kind::fixed: return "static";
    case balance_kind::single_step: return "single-step";
    case balance_kind::iterative: return "iterative";
    case balance_kind::exhaustive: return "exhaustive(" + percent(step) + ")";
  }
  return "?";
}

namespace balance {

balance_policy static_weights(std::vector<double> weights) {
  balance_policy p = of_kind(balance_kind::fixed);
  p.weights = std::move(weights);
  return p;
}
balance_policy single_step(double threshold) {
  balance_policy p = of_kind(balance_kind::single_step);
  p.threshold = threshold;
  return p;
}
balance_policy iterative(double delta, double threshold) {
  balance_policy p = of_kind(balance_kind::iterative);
  p.delta = delta;
  p.threshold = threshold;
  return p;
}
balance_policy exhaustive(double step) {
  balance_policy p = of_kind(balance_kind::exhaustive);
  p.step = step;
  return p;
}

}  // namespace balance

}  // namespace sinew
