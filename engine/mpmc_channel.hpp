#pragma once
// Internal: the channel kind with several producers or consumers (farms).
#include <cstddef>
#include <cstdint>
#include <thread>

#include <sinew/detail/ring.hpp>
#include <sinew/engine/work_unit.hpp>

#include "channel_slots.hpp"

namespace sinew::detail {

/// A Vyukov ring (mpmc_ring) twice the capacity, with the slot count in
/// a channel_slots (see push for why twice).
///
/// \code
/// mpmc_channel q(cap_max);
/// std::size_t occ;
/// if (q.try_reserve(cap, occ)) q.push(u, consumer_concurrent);   // any producer
/// std::size_t before;
/// q.try_pop(u, ticket, false, before);                           // any consumer
/// \endcode
class mpmc_channel {
 public:
  explicit mpmc_channel(std::size_t cap_max) : ring_(2 * cap_max) {}
  /// Empty and numbered from 0 again (channel::restart).
  void restart() noexcept {
    ring_.restart();
    slots_.used.store(0, std::memory_order_relaxed);
  }

  bool try_reserve(std::size_t cap, std::size_t& occupied) noexcept { return slots_.try_reserve(cap, occupied); }
  void drop_reservation() noexcept { slots_.drop(); }
  /// Returns whether an idle consumer may be waiting for this unit: it is
  /// concurrent (it may start more activations), or the ring was empty.
  bool push(work_unit* u, bool concurrent_consumer) {
    // The slot count bounds how many units the ring holds, not where they
    // sit: a consumer that claimed a cell but has not yet released it (it is
    // between two instructions, or was preempted there) keeps that cell busy
    // while others move on, so the cell at the tail can be momentarily
    // taken. The ring is twice the capacity, which makes this rare; when it
    // happens the claimant is about to finish, so wait for it.
    put(u);
    return concurrent_consumer || ring_.size_approx() <= 1;
  }
  /// push() without the answer (which reads both ends of the ring).
  void put(work_unit* u) {
    while (!ring_.try_push(u)) std::this_thread::yield();
  }
  /// `ticket`: the unit's position in push order; `before`: units queued and
  /// reserved before the pop.
  bool try_pop(work_unit*& u, std::uint64_t& ticket, bool /*any_order*/, std::size_t& before) noexcept {
    if (!ring_.try_pop(u, &ticket)) return false;
    before = slots_.release();
    return true;
  }
  bool has_data(bool /*dropping*/) const noexcept { return !ring_.empty_approx(); }
  bool has_space(std::size_t cap) const noexcept { return slots_.has_space(cap); }
  /// Queued and reserved: the slot count a producer has just updated,
  /// rather than the ring's ends, one of which every pop writes.
  std::size_t size() const noexcept { return slots_.size(); }

 private:
  mpmc_ring<work_unit*> ring_;
  channel_slots slots_;
};

}  // namespace sinew::detail
