#pragma once
// Internal: the channel kind after the last stage of an ordered farm.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include <sinew/detail/ring.hpp>
#include <sinew/engine/work_unit.hpp>

#include "ordered_region.hpp"

namespace sinew::detail {

/// Releases units in ticket order (docs/runtime.md, "Order"): a ring indexed
/// by ticket, lock-free in order. Cell i holds ticket t (t % size == i) when
/// its seq is t + 1, and is free for ticket t when its seq is t. The ordered
/// region bounds the tickets present to [next, next + window), window = cap
/// <= size / 2, so a producer always finds its cell free; a ticket that does
/// not (only once the run drops units, when `next` stops advancing) goes to
/// a locked overflow map.
///
/// \code
/// reorder_channel q(cap_max, depth);
/// q.push(u, false);                    // u->ticket(depth) says where it goes
/// std::size_t before;
/// q.try_pop(u, ticket, false, before); // only the unit whose turn it is
/// \endcode
class reorder_channel {
 public:
  /// `depth`: the ticket slot (ordered farm nesting depth) that orders units.
  reorder_channel(std::size_t cap_max, int depth);
  /// Empty, expecting ticket 0 again (channel::restart).
  void restart() noexcept;

  /// The region a pop lets a unit leave (set when the run is wired).
  region_rt* closes = nullptr;

  /// Always room: the region's window is this channel's capacity and every
  /// unit here is in the region, so the region's slot, taken when the unit
  /// entered, is its room here (docs/runtime.md, "Order"). No count of its
  /// own: one atomic less per unit on the producers' and the consumer's path.
  bool try_reserve(std::size_t /*cap*/, std::size_t& occupied) noexcept {
    occupied = size();
    return true;
  }
  void drop_reservation() noexcept {}
  /// Returns whether the unit is the one whose turn it is (an idle serial
  /// consumer may be waiting for it).
  bool push(work_unit* u, bool /*concurrent_consumer*/) {
    const std::uint64_t t = u->ticket(unsigned(depth_));  // before the consumer may take u
    put(u);
    return next_.load(std::memory_order_seq_cst) == t;
  }
  /// push() without the answer: the turn `next_` is the consumer's line,
  /// which every push would otherwise read.
  void put(work_unit* u) {
    const std::uint64_t t = u->ticket(unsigned(depth_));
    cell& c = cells_[t & mask_];
    if (c.seq.load(std::memory_order_acquire) == t) {
      c.u.store(u, std::memory_order_relaxed);
      c.seq.store(t + 1, std::memory_order_seq_cst);  // published: the consumer may take it
    } else {
      push_overflow(t, u);
    }
  }
  /// In ticket order; `any_order` (the run drops units): any unit will do.
  /// `ticket`: the unit's position in this channel's output order;
  /// `before`: units queued and reserved before the pop.
  bool try_pop(work_unit*& u, std::uint64_t& ticket, bool any_order, std::size_t& before) {
    // Take the cell of `next` once it is full. Several consumers (a farm
    // after the farm) agree through the CAS on `next`.
    bool ok = false;
    for (;;) {
      std::uint64_t n = next_.load(std::memory_order_seq_cst);
      cell& c = cells_[n & mask_];
      if (c.seq.load(std::memory_order_acquire) != n + 1) break;
      if (next_.compare_exchange_weak(n, n + 1, std::memory_order_seq_cst)) {
        u = c.u.load(std::memory_order_relaxed);
        c.seq.store(n + mask_ + 1, std::memory_order_release);  // free for ticket n + size
        ticket = n;  // units leave in ticket order: the n-th one out
        ok = true;
        break;
      }
    }
    // In any order, end of stream goes last: it was pushed after every other
    // unit of this channel, and the consumer stops reading once it has it.
    if (!ok)
      ok = pop_overflow(u, ticket, any_order, !any_order) ||
           (any_order && (pop_any_cell(u, ticket, false) || pop_overflow(u, ticket, true, true) ||
                          pop_any_cell(u, ticket, true)));
    // A producer waits for room only in the region, whose leave() wakes it.
    if (ok) before = 0;
    return ok;
  }
  /// A popped unit left the ordered region.
  void left_region() {
    if (closes) closes->leave();
  }
  /// `dropping`: the run drops units, so any queued one counts, not only
  /// the one whose turn it is (rare: a scan).
  bool has_data(bool dropping) const noexcept {
    if (dropping) return any_cell_full();
    const std::uint64_t n = next_.load(std::memory_order_seq_cst);
    return cells_[n & mask_].seq.load(std::memory_order_seq_cst) == n + 1 || overflow_has_next();
  }
  bool has_space(std::size_t /*cap*/) const noexcept { return true; }
  /// Units queued, reserved or still in the region before it: an upper
  /// bound, so that no counter of its own is shared by every push and pop.
  std::size_t size() const noexcept { return closes->occupied.load(std::memory_order_relaxed); }

 private:
  // A line each: consecutive tickets are pushed by different replicas.
  struct alignas(cache_line) cell {
    std::atomic<std::uint64_t> seq;
    std::atomic<work_unit*> u{nullptr};
  };
  void push_overflow(std::uint64_t t, work_unit* u);
  bool overflow_has_next() const noexcept;
  /// `eos`: end of stream may be taken (else it is skipped).
  bool pop_overflow(work_unit*& u, std::uint64_t& ticket, bool any_order, bool eos);
  bool pop_any_cell(work_unit*& u, std::uint64_t& ticket, bool eos);
  bool any_cell_full() const noexcept;

  const int depth_;
  std::uint64_t mask_;
  std::unique_ptr<cell[]> cells_;
  alignas(cache_line) std::atomic<std::uint64_t> next_{0};  // ticket whose turn it is
  mutable std::mutex om_;                                   // guards overflow_
  std::map<std::uint64_t, work_unit*> overflow_;
  std::atomic<std::size_t> overflow_n_{0};
};

}  // namespace sinew::detail
