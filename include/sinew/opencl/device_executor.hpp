#pragma once
/// \file device_executor.hpp
/// `sinew::device_executor`: the interface shared by everything that can run
/// a leaf on *part* of a unit (the host running a C++ functor, an OpenCL
/// device running a kernel, a simulated device model). A multi-device map
/// (multi_device_map.hpp) splits the outermost dimension of each unit into
/// one `device_share` per executor, in proportion to a balancer's weights,
/// runs the shares concurrently and feeds the returned `share_timing`s back
/// to the balancer (the "execution plan" of [Vinas17, §3.3]).
///
/// \code
/// // A device that doubles every row of its share of a 1-D float unit.
/// class doubler final : public sinew::device_executor {
///  public:
///   std::string name() const override { return "sim:doubler"; }
///   sinew::detail::type_list input_types() const override  { return {false, {&sinew::elem_type_of<float>()}}; }
///   sinew::detail::type_list output_types() const override { return {false, {&sinew::elem_type_of<float>()}}; }
///   sinew::share_timing execute(const sinew::device_share& s, sinew::detail::exec_args& a) override {
///     auto t0 = std::chrono::steady_clock::now();
///     const float* x = (*a.in)[0].data<float>();
///     float* y = (*a.out)[0].data<float>();
///     for (std::size_t i = s.begin; i < s.end; ++i) y[i] = 2 * x[i];
///     double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
///     return {sec, sec};  // no transfers on the host: compute == total
///   }
/// };
/// \endcode
#include <cstddef>
#include <string>

#include <sinew/engine/node.hpp>  // detail::type_list, detail::exec_args

namespace sinew {

/// Outermost-dimension indices [begin, end) of a unit given to one device.
struct device_share {
  std::size_t begin = 0, end = 0;
  std::size_t size() const noexcept { return end - begin; }
};

/// Seconds one share took: `compute` = kernel only; `total` = with transfers.
struct share_timing {
  double compute = 0;
  double total = 0;
};

/// One device able to run a leaf on part of a unit (the host running a C++
/// leaf, an OpenCL device running a kernel, or a simulated device model).
class device_executor {
 public:
  virtual ~device_executor() = default;
  /// e.g. "host", "pocl:0 (cpu)", "cuda:0 (gpu)", "sim:fast".
  virtual std::string name() const = 0;
  /// Shares are rounded to multiples of this (the work-group size along the
  /// outermost dimension); the last share takes the remainder.
  virtual std::size_t granularity() const { return 1; }
  virtual detail::type_list input_types() const = 0;
  virtual detail::type_list output_types() const = 0;
  virtual bool in_place() const { return false; }
  /// Runs outermost indices [s.begin, s.end) of the unit: reads `a.in`,
  /// writes `a.out` (whole-unit layers; only the share is written). Several
  /// executors run concurrently on disjoint shares of one unit. Returns the
  /// time to attribute to this share: measured for real devices, modeled for
  /// simulated ones. Throws on failure (the caller adds the node path).
  virtual share_timing execute(const device_share& s, detail::exec_args& a) = 0;
};

}  // namespace sinew
