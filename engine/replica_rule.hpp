#pragma once
// Internal: when a concurrent stage (a farm) starts another activation
// (docs/runtime.md, "Activation").
#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace sinew::detail {

/// About what starting another activation of a concurrent stage costs: a
/// task and a worker's wake-up.
inline constexpr std::uint32_t replica_start_ns = 2000;

/// With `running` activations of a stage whose units took `cost_ns` each so
/// far (UINT32_MAX: not known yet) and `queued` units waiting: true when no
/// other activation is needed, because the queued units would wait for the
/// running ones (queued x cost / running) no longer than a new one takes to
/// start. A farm of fine-grained units then grows one replica at a time as
/// its queue grows, and only as far as its units need: every replica more
/// spreads the units over one core more, and the serial stages around the
/// farm then meet each unit's lines in more caches. When its source is
/// slower than its replicas, a few stay busy instead of one starting and
/// ending per unit; costly units get a replica each.
///
/// \code
/// enough_replicas(2, 5000, 5);        // true: 2 x 5 us / 5 running = 2 us
/// enough_replicas(3, 5000, 5);        // false: 3 us of waiting
/// enough_replicas(16, 500, 4);        // true: 16 x 0.5 us / 4 running = 2 us
/// enough_replicas(1, UINT32_MAX, 15); // false: unknown cost, start one
/// \endcode
constexpr bool enough_replicas(std::size_t queued, std::uint32_t cost_ns, unsigned running) noexcept {
  if (running == 0) return false;
  return std::uint64_t(queued) * cost_ns <= std::uint64_t(running) * replica_start_ns;
}

}  // namespace sinew::detail
