#pragma once
// Internal: NUMA placement of the buffers a stage writes.
#include <memory>

#include <sinew/engine/work_unit.hpp>
#include <sinew/schedulers/placement.hpp>

namespace sinew::detail {

/// The placers of a stage with a placement (graph_options::placement,
/// node::placement): its output buffers are placed as the stage writes
/// them. One placer per concrete policy, since `automatic` resolves per unit
/// [Muddukrishna15, Table 3].
///
/// \code
/// stage_placement p(topology::current(), placement::automatic);
/// p.place(unit.out(), sched.current_node(), /*split*/ true);   // Table 3 with many tasks
/// \endcode
struct stage_placement {
  stage_placement(const topology& t, sinew::placement p);
  sinew::placement policy;
  std::unique_ptr<placer> by_policy[3];  // standard, fine, coarse
  /// Places the pooled buffers of `out` (caller-owned ones are left
  /// alone); `split`: the stage has split its units into more than one
  /// chunk each on average so far.
  void place(layer& out, int toucher_node, bool split);
};

}  // namespace sinew::detail
