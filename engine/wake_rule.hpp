#pragma once
// Internal: when making room in a full channel wakes the producer, when a
// consumer sets a farm's pace, when a push wakes a farm, and when a serial
// chain runs on one worker (docs/runtime.md, "Activation"); pure functions
// of the stages' kinds and measured costs, used by channel.cpp and
// serial_chain.cpp.

#include <cstddef>
#include <cstdint>

namespace sinew::detail {

/// When a consumer's pops from a full channel wake the producer.
enum class room_wake {
  first_pop,       ///< the first pop from full
  half_empty,      ///< the pop that leaves the queue half full
  consumer_leave,  ///< only the end of the consumer's activation (leave() always wakes it)
};

/// Below this capacity a cheap farm is woken at the first pop from full: half
/// the queue is then too few units to pay for waking it later.
inline constexpr std::size_t half_empty_min_capacity = 8;

/// When a consumer's pops from a full channel of capacity `cap` wake its
/// producer. A cheap serial stage feeding a serial one waits for the
/// consumer's activation to end, so that it makes its next units after the
/// consumer has taken these, often on the same core, and a batch of units
/// goes through the stages where it was made. Woken at every room made, it
/// would run on another core beside the consumer, and the two would trade
/// every unit between cores. A cheap farm feeding a serial consumer is woken
/// once the queue is half empty: it then refills half the queue in one
/// activation while the consumer works on the other half (woken at every
/// pop, it would start a replica for each unit of room; woken only by the
/// consumer's leave(), the consumer would wait for its replicas to start).
/// A costly producer is woken at once (pipeline parallelism pays for it),
/// and so is any producer of a farm (its replicas may run long).
///
/// \code
/// wake_producer_on_room(true, true, true, 32);    // consumer_leave: cheap serial -> serial
/// wake_producer_on_room(false, true, true, 32);   // half_empty: a cheap farm -> serial
/// wake_producer_on_room(false, true, true, 4);    // first_pop: a half of two units
/// wake_producer_on_room(true, false, true, 32);   // first_pop: a costly producer works meanwhile
/// wake_producer_on_room(true, true, false, 32);   // first_pop: a farm consumer
/// \endcode
constexpr room_wake wake_producer_on_room(bool producer_serial, bool producer_cheap, bool consumer_serial,
                                          std::size_t cap) noexcept {
  if (!producer_cheap || !consumer_serial) return room_wake::first_pop;
  if (producer_serial) return room_wake::consumer_leave;
  return cap >= half_empty_min_capacity ? room_wake::half_empty : room_wake::first_pop;
}

/// Whether the serial consumer of a farm's output queue sets the farm's pace
/// while the queue is half full or fuller: the farm is cheap and is woken
/// by the pop that leaves the queue half full (wake_producer_on_room), so
/// no push needs to wake it while the queue is fuller, and it needs only as
/// many replicas as keep up with the consumer. Not on a reorder queue (an
/// ordered farm's), whose count includes the units its replicas are still
/// making and those waiting for their turn.
///
/// \code
/// consumer_sets_pace(true, true, 32, false);    // true
/// consumer_sets_pace(true, true, 32, true);     // false: an ordered farm
/// consumer_sets_pace(true, true, 4, false);     // false: woken at the first pop
/// consumer_sets_pace(false, true, 32, false);   // false: a costly farm
/// \endcode
constexpr bool consumer_sets_pace(bool farm_cheap, bool consumer_serial, std::size_t cap, bool reorder) noexcept {
  return !reorder && wake_producer_on_room(false, farm_cheap, consumer_serial, cap) == room_wake::half_empty;
}

/// Whether a push into a farm's queue wakes the farm at once (it may start
/// another replica), given the measured cost per unit of the producer and
/// of the farm (UINT32_MAX: not known yet). Not when the producer is cheap
/// (below `cheap_ns`), the farm takes a unit no longer than the producer
/// makes one, and the queue is less than half full: one replica then keeps
/// up, and the producer's leave() runs it on its worker, or the push that
/// fills half the queue wakes it. Woken at every push, such a farm empties
/// its queue at once and starts a task per unit.
///
/// \code
/// wake_farm_on_push(300, 200, false, 2000);   // false: left to the producer's leave()
/// wake_farm_on_push(300, 200, true, 2000);    // true: half full, replicas may be needed
/// wake_farm_on_push(300, 1500, false, 2000);  // true: the farm needs replicas to keep up
/// wake_farm_on_push(5000, 200, false, 2000);  // true: a costly producer, the farm runs meanwhile
/// \endcode
constexpr bool wake_farm_on_push(std::uint32_t producer_ns, std::uint32_t farm_ns, bool half_full,
                                 std::uint32_t cheap_ns) noexcept {
  return half_full || producer_ns >= cheap_ns || farm_ns > producer_ns;
}

/// What a unit costs the slowest stage of a serial chain when its stages run
/// on different cores, its lines moving to another core at every stage:
/// about what a 16-worker pipeline of 1-float stages pays per unit over one
/// worker (docs/performance.md, "Runtime overhead").
inline constexpr std::uint32_t chain_hop_ns = 400;

/// Whether a serial chain runs on one worker: it then takes the sum of its
/// stages' costs per unit, spread over cores about its slowest stage's
/// cost plus a hop. Once together it stays so up to twice the hop, so that
/// a cost measured during a preemption does not split it (split, each
/// stage's cost includes the hops and would keep it split).
///
/// \code
/// chain_runs_together(200, 60, false);     // true: 140 ns more than the slowest stage
/// chain_runs_together(2000, 200, true);    // false: ten 200 ns stages gain from ten cores
/// chain_runs_together(800, 200, true);     // true: within twice the hop once together
/// chain_runs_together(800, 200, false);    // false
/// \endcode
constexpr bool chain_runs_together(std::uint64_t sum_ns, std::uint64_t slowest_ns, bool together,
                                   std::uint32_t hop_ns = chain_hop_ns) noexcept {
  return sum_ns - slowest_ns < (together ? 2 * std::uint64_t(hop_ns) : hop_ns);
}

}  // namespace sinew::detail
