#include <sinew/opencl/simulated_device.hpp>

#include <cmath>

namespace sinew {

simulated_device::simulated_device(std::shared_ptr<device_executor> real, simulated_model m)
    : real_(std::move(real)), m_(std::move(m)), speed_(m_.speed) {
  if (!real_) throw error("simulated device '" + m_.name + "': needs an executor computing the results");
  if (!(m_.speed > 0)) throw error("simulated device '" + m_.name + "': speed must be positive");
  if (m_.granularity == 0) throw error("simulated device '" + m_.name + "': granularity must be at least 1");
  if (m_.launch_overhead < 0 || m_.bytes_per_row < 0 || m_.seconds_per_byte < 0)
    throw error("simulated device '" + m_.name + "': overhead and transfer costs must not be negative");
}

share_timing simulated_device::model(const device_share& s) const {
  if (s.size() == 0) return {};
  double cost = 0;
  if (m_.row_cost)
    for (std::size_t r = s.begin; r < s.end; ++r) cost += m_.row_cost(r);
  else
    cost = double(s.size());
  share_timing t;
  t.compute = m_.launch_overhead + cost / speed();
  t.total = t.compute + double(s.size()) * m_.bytes_per_row * m_.seconds_per_byte;
  return t;
}

share_timing simulated_device::execute(const device_share& s, detail::exec_args& a) {
  real_->execute(s, a);
  runs_.fetch_add(1, std::memory_order_relaxed);
  return model(s);
}

void simulated_device::set_speed(double v) {
  if (!(v > 0)) throw error("simulated device '" + m_.name + "': speed must be positive");
  speed_.store(v, std::memory_order_relaxed);
}

std::shared_ptr<simulated_device> simulate(std::shared_ptr<device_executor> real, simulated_model m) {
  return std::make_shared<simulated_device>(std::move(real), std::move(m));
}

std::size_t unbalanced_first_nonzero_row(std::size_t rows, double nonzero_fraction) {
  if (!(nonzero_fraction >= 0 && nonzero_fraction <= 1))
    throw error("unbalanced kernel: the non-zero fraction must be in [0, 1]");
  return rows - std::size_t(std::llround(double(rows) * nonzero_fraction));
}

std::function<double(std::size_t)> unbalanced_rows(std::size_t rows, double nonzero_fraction, std::size_t cols) {
  std::size_t first = unbalanced_first_nonzero_row(rows, nonzero_fraction);
  double c = double(cols);
  return [first, c](std::size_t r) { return r < first ? c : 1001.0 * c; };
}

}  // namespace sinew
