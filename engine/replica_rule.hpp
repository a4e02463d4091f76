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

/// Units below this cost are fine-grained: a replica more than the producer
/// feeds costs them more in hand-offs than it gains. Costlier units keep a
/// replica per queued unit, so that a burst is taken at once.
inline constexpr std::uint32_t fine_grain_ns = 25 * replica_start_ns;

/// With `running` activations of a concurrent stage whose fine-grained units
/// take `cost_ns` each, fed by one serial stage that makes a unit every
/// `producer_ns` (UINT32_MAX: not known yet): true when they take units at
/// least as fast as it makes them, with one to spare (running >= cost /
/// producer + 1). More would only wait for input, each of their starts and
/// ends a task, and each unit's lines would meet more cores: behind a source
/// that feeds three, a 16-replica farm is slower than a 3-replica one.
///
/// \code
/// replicas_keep_up(1500, 750, 3);          // true: 2 replicas keep up, one spare
/// replicas_keep_up(1500, 750, 2);          // false
/// replicas_keep_up(6000, 750, 9);          // true: 5 us units behind a 750 ns source
/// replicas_keep_up(1500, UINT32_MAX, 15);  // false: the producer's rate is not known
/// replicas_keep_up(80000, 40000, 15);      // false: costly units, a replica per queued one
/// \endcode
constexpr bool replicas_keep_up(std::uint32_t cost_ns, std::uint32_t producer_ns, unsigned running) noexcept {
  if (cost_ns >= fine_grain_ns || producer_ns == UINT32_MAX || producer_ns == 0) return false;
  return std::uint64_t(running) * producer_ns >= std::uint64_t(cost_ns) + producer_ns;
}

}  // namespace sinew::detail
