#pragma once
/// \file simulated_device.hpp
/// `simulated_device`: a device model with a known speed, for balancer tests
/// and benchmarks that must not depend on the machine. It computes the real
/// result through another executor (so a graph using it is correct) but
/// returns *modeled* times:
///
///   compute = launch_overhead + Σ_{r in share} row_cost(r) / speed
///   total   = compute + rows · bytes_per_row · seconds_per_byte
///
/// `row_cost` models work that is not uniform over the rows, e.g. HPL's
/// unbalanced kernel [Vinas17, §4.2.2] (1 flop on a zero, 1001 on a non-zero, zeros
/// in the top rows): `unbalanced_rows(n, nonzero_fraction, cols)`.
///
/// \code
/// auto real = sinew::host<Saxpy>({2.0f});
/// auto gpu = sinew::simulate(real, {.name = "sim:gpu", .speed = 4e6});   // 4M rows/s
/// auto cpu = sinew::simulate(real, {.name = "sim:cpu", .speed = 1e6, .launch_overhead = 1e-4});
/// sinew::graph g(sinew::multi_device_map({cpu, gpu}, sinew::balance::iterative()));
/// gpu->set_speed(2e6);   // the device slows down: a stream re-tunes
/// \endcode
#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include <sinew/opencl/device_executor.hpp>

namespace sinew {

struct simulated_model {
  std::string name = "sim";
  /// Cost units per second (with the default row_cost: rows per second).
  double speed = 1e6;
  /// Cost of outermost index r in cost units; null = 1 per row.
  std::function<double(std::size_t r)> row_cost;
  /// Seconds added to every non-empty share (kernel launch, queue round
  /// trip, transfer latency): the fixed per-execution cost the iterative
  /// balancer fits (docs/balancing.md, "Fixed costs and dropped devices").
  double launch_overhead = 0;
  /// Transfer model: bytes moved per row of a share and seconds per byte.
  double bytes_per_row = 0;
  double seconds_per_byte = 0;
  /// Shares are multiples of this (the modeled work-group size).
  std::size_t granularity = 1;
};

class simulated_device final : public device_executor {
 public:
  /// `real` computes the results (any executor of the same leaf); throws
  /// sinew::error if it is null or the model's speed is not positive.
  simulated_device(std::shared_ptr<device_executor> real, simulated_model m);

  std::string name() const override { return m_.name; }
  std::size_t granularity() const override { return m_.granularity; }
  detail::type_list input_types() const override { return real_->input_types(); }
  detail::type_list output_types() const override { return real_->output_types(); }
  bool in_place() const override { return real_->in_place(); }
  /// Runs the share on `real` (serially when called without a scheduler)
  /// and returns the modeled time.
  share_timing execute(const device_share& s, detail::exec_args& a) override;

  /// The modeled time of share `s`, without running anything.
  share_timing model(const device_share& s) const;
  /// Changes the speed from now on (thread safe): the device got slower or faster.
  void set_speed(double cost_units_per_second);
  double speed() const noexcept { return speed_.load(std::memory_order_relaxed); }
  /// Shares executed so far.
  std::size_t executions() const noexcept { return runs_.load(std::memory_order_relaxed); }

 private:
  std::shared_ptr<device_executor> real_;
  simulated_model m_;
  std::atomic<double> speed_;
  std::atomic<std::size_t> runs_{0};
};

/// A simulated device computing through `real`.
std::shared_ptr<simulated_device> simulate(std::shared_ptr<device_executor> real, simulated_model m);

/// Row cost of HPL's unbalanced kernel [Vinas17, §4.2.2] on an `rows` x `cols` matrix
/// whose top (1 - nonzero_fraction) rows are zeros: `cols` flops per zero
/// row, 1001·cols per non-zero row.
std::function<double(std::size_t)> unbalanced_rows(std::size_t rows, double nonzero_fraction, std::size_t cols = 1);
/// The first non-zero row of that matrix (rows before it are all zeros).
std::size_t unbalanced_first_nonzero_row(std::size_t rows, double nonzero_fraction);

}  // namespace sinew
