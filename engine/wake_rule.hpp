#pragma once
// Internal: when a consumer that makes room in a full channel wakes its
// producer (docs/runtime.md, "Activation").

namespace sinew::detail {

/// Whether a consumer's first pop from a full channel wakes the producer at
/// once. Not when a cheap serial stage feeds a serial one: the consumer's
/// activation wakes it when it ends (leave() always does), so the producer
/// then makes its next units after the consumer has taken these, often on
/// the same core, and a batch of units goes through the stages where it
/// was made. Woken at once, it would run on another core beside the
/// consumer, and the two would trade every unit between cores. A costly
/// producer is woken at once (pipeline parallelism pays for it), and so is
/// a farm on either side (its replicas may wait for room or for input).
///
/// \code
/// wake_producer_on_room(true, true, true);    // false: cheap serial -> serial, after the activation
/// wake_producer_on_room(true, false, true);   // true: a costly producer works meanwhile
/// wake_producer_on_room(false, true, true);   // true: a farm's replicas wait for room
/// \endcode
constexpr bool wake_producer_on_room(bool producer_serial, bool producer_cheap, bool consumer_serial) noexcept {
  return !(producer_serial && producer_cheap && consumer_serial);
}

}  // namespace sinew::detail
