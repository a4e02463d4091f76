#pragma once
// Internal: the channel kind between a serial producer and a serial consumer.
#include <cstddef>
#include <cstdint>

#include <sinew/detail/ring.hpp>
#include <sinew/engine/work_unit.hpp>

namespace sinew::detail {

/// A Lamport ring (spsc_ring). Its one producer holds at most one
/// reservation, so reserving is a local check of the ring: no counter
/// shared by the two threads.
///
/// \code
/// spsc_channel q(cap_max);
/// std::size_t occ;
/// if (q.try_reserve(cap, occ)) q.push(u, false);   // producer
/// std::size_t before;
/// q.try_pop(u, ticket, false, before);              // consumer
/// \endcode
class spsc_channel {
 public:
  explicit spsc_channel(std::size_t cap_max) : ring_(cap_max) {}
  /// Empty and numbered from 0 again (channel::restart).
  void restart() noexcept { ring_.restart(); }

  bool try_reserve(std::size_t cap, std::size_t& occupied) noexcept {
    if (!ring_.producer_has_room(cap)) return false;
    occupied = ring_.producer_size() + 1;
    return true;
  }
  void drop_reservation() noexcept {}
  /// Returns whether the ring was empty (the consumer may be idle waiting);
  /// its one consumer is serial.
  bool push(work_unit* u, bool /*concurrent_consumer*/) noexcept {
    put(u);
    return ring_.size_approx() <= 1;
  }
  /// push() without the answer (which reads the consumer's index).
  void put(work_unit* u) noexcept {
    ring_.try_push(u);  // single producer and consumer: the reservation guarantees room
  }
  /// `ticket`: the unit's position in push order; `before`: units queued
  /// before the pop (the producer may wait for room if that was the capacity).
  bool try_pop(work_unit*& u, std::uint64_t& ticket, bool /*any_order*/, std::size_t& before) noexcept {
    if (!ring_.try_pop(u, &ticket)) return false;
    before = ring_.size_approx() + 1;
    return true;
  }
  bool has_data(bool /*dropping*/) const noexcept { return !ring_.empty_approx(); }
  bool has_space(std::size_t cap) const noexcept { return ring_.size_approx() < cap; }
  std::size_t size() const noexcept { return ring_.size_approx(); }

 private:
  spsc_ring<work_unit*> ring_;
};

}  // namespace sinew::detail
