#pragma once
// Internal: what every policy needs from a `locality_hint` -- D of
// [Muddukrishna15, Algorithm 1] (bytes of the task's inputs on each NUMA
// node) and the node where those bytes are cheapest to read -- so that
// `tbb`, `steal` and `deal` count remote bytes the same way.
#include <cstdint>
#include <span>
#include <vector>

#include <sinew/schedulers/scheduler.hpp>
#include <sinew/schedulers/topology.hpp>

namespace sinew::detail {

/// Whether `hint` names data at all (bytes per node or buffers): only then
/// is there a D to compute (and, for a fresh task, a vector to allocate).
inline bool hint_has_data(const locality_hint& hint) noexcept {
  return !hint.bytes_on_node.empty() || !hint.reads.empty();
}

/// Fills `D` (resized to `nodes`) from `hint.bytes_on_node` if given, else
/// from `hint.reads` (each buffer's `numa_node()` and `bytes()`; unknown -1
/// is not counted), and returns sum(D). Throws `sinew::error` naming `who`
/// if `bytes_on_node` has a size other than `nodes`.
std::uint64_t hint_bytes(const locality_hint& hint, std::size_t nodes, std::vector<std::uint64_t>& D,
                         const char* who);

/// The node `i` with the least `sum_j D[j] * distance(i, j)`; ties go to
/// the node holding the most of D, then to `prefer`, then to the lowest index.
int cheapest_node(const topology& t, std::span<const std::uint64_t> D, int prefer);

}  // namespace sinew::detail
