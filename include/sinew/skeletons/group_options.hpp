#pragma once
/// \file group_options.hpp
/// How a group kernel (skeletons/group_kernel.hpp) orders its work-items and
/// deals its work-groups to the scheduler.
#include <cstddef>

namespace sinew {

/// How a group kernel orders work-items around the loops of its regions.
enum class order_policy {
  declared,       ///< from the access strides each `loop` declares [Kim15, Table 1]
  measured,       ///< time every order on the first groups; keep the fastest if it beats the declared order by more than noise
  depth_first,    ///< always depth-first (what most OpenCL CPU compilers do)
  breadth_first,  ///< always breadth-first
};

/// \code
/// auto leaf = sinew::group_kernel<Stencil>(sinew::range2d{16, 16}, Stencil{},
///                                          {.order = sinew::order_policy::measured, .groups_per_task = 4});
/// \endcode
struct group_options {
  order_policy order = order_policy::declared;
  /// measured: calibration groups per candidate order (at least
  /// `3 * calibration_rounds` groups run serially while being timed; up to
  /// 4 times as many while the samples stay noisy).
  unsigned calibration_rounds = 8;
  /// Work-groups per scheduler task at least; 0 = 1.
  std::size_t groups_per_task = 0;
  /// declared: a loop level of at most this many iterations runs depth-first
  /// whatever its strides -- Kim15's compiler unrolls such loops, so they
  /// are never scheduled [Kim15, §4.2]. 0 = every loop follows Table 1.
  std::size_t unroll_limit = 4;
};

}  // namespace sinew
