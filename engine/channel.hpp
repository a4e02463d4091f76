#pragma once
// Internal: a bounded edge between two stages (docs/runtime.md, "Back
// pressure" and "Activation").
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <variant>

#include <sinew/detail/fence.hpp>
#include <sinew/detail/ring.hpp>
#include <sinew/detail/scalable_new.hpp>
#include <sinew/engine/work_unit.hpp>

#include "counters.hpp"
#include "mpmc_channel.hpp"
#include "reorder_channel.hpp"
#include "spsc_channel.hpp"
#include "wake_rule.hpp"

namespace sinew::detail {

struct stage_rt;
struct compiled_graph;

/// What every channel kind shares: the capacity, the high-water mark, the
/// stages on either side and the source thread's wait; the kind's own queue
/// (spsc_channel, mpmc_channel or reorder_channel, one file each) is chosen
/// when the run is built and reached through a switch on it, so a push or a
/// pop is a direct, inlined call. Queued plus reserved units never exceed
/// the capacity: producers reserve before they take their own input.
///
/// \code
/// channel c(channel::kind::mpmc, 4, -1);
/// if (c.try_reserve()) {              // producer: a slot first
///   c.pushed(c.push(u));              // then the unit; wake the consumer if it may be idle
/// }
/// work_unit* v; std::uint64_t t;
/// if (c.try_pop(v, t, false)) { /* consumer */ }
/// \endcode
class channel : public scalable_new {
  using queue = std::variant<spsc_channel, mpmc_channel, reorder_channel>;
  // What each operation compiles to: a switch on the kind, then the kind's
  // inlined code (std::get_if cannot fail there: the index was just read).
  template <class Q, class F>  // Q: queue or const queue
  static decltype(auto) visit(Q& q, F&& f) {
    switch (q.index()) {
      case 0: return f(*std::get_if<0>(&q));
      case 1: return f(*std::get_if<1>(&q));
      default: return f(*std::get_if<2>(&q));
    }
  }

 public:
  /// In the order of `queue`'s alternatives.
  enum class kind { spsc, mpmc, reorder };
  /// `cap_max` > `cap`: the capacity was not given, and may grow to
  /// `cap_max` once units are known to be small (run_state::grow_capacities).
  /// `ticket_depth`: reorder only, the ticket slot that orders units.
  channel(kind k, std::size_t cap, int ticket_depth, std::size_t cap_max = 0);
  /// As built, for the graph's next run: empty, the capacity not grown, the
  /// pushes numbered from 0 (run_state::arm, after a run that ended holding
  /// no unit; no other thread uses the channel meanwhile).
  void restart() noexcept;

  // Producer side.
  bool try_reserve() noexcept {
    std::size_t occupied = 0;
    const std::size_t c = capacity();
    if (!visit(q_, [&](auto& q) { return q.try_reserve(c, occupied); })) return false;
    if (occupied > high_water.load(std::memory_order_relaxed)) raise_max(high_water, occupied);
    return true;
  }
  /// Gives a reservation back without waking anyone (the caller rechecks).
  void drop_reservation() noexcept {
    visit(q_, [](auto& q) { q.drop_reservation(); });
  }
  /// Gives a reservation back and wakes the producer side.
  void unreserve() noexcept {
    drop_reservation();
    freed();
  }
  /// Fills a reserved slot. Returns whether an idle serial consumer may have
  /// been waiting for this unit: the channel was empty, or (reorder) the
  /// unit is the one whose turn it is.
  bool push(work_unit* u) {
    return visit(q_, [&](auto& q) { return q.push(u, consumer_concurrent_); });
  }
  /// Fills a reserved slot, for a producer that does not need push()'s
  /// answer: computing it reads the consumer's side of the queue, a line
  /// the consumer writes at every pop.
  void put(work_unit* u) {
    visit(q_, [&](auto& q) { q.put(u); });
  }

  // Consumer side. Takes a unit; `ticket` = its position in this channel's
  // output order; `any_order`: the run drops units (reorder: any will do).
  bool try_pop(work_unit*& u, std::uint64_t& ticket, bool any_order) {
    std::size_t before = 0;
    if (!visit(q_, [&](auto& q) { return q.try_pop(u, ticket, any_order, before); })) return false;
    // A producer can only be waiting on us if the channel was full: the first
    // pop from full, or the one that leaves it half full, wakes it
    // (wake_rule.hpp; a farm's replicas that found no room left: the one
    // this starts, and pushes upstream, bring the others back), or the
    // source thread, which counts its waiters.
    if (!producer) freed();
    else if (before >= capacity()) room_made(room_wake::first_pop);
    else if (producer_concurrent_ && before == capacity() / 2 + 1) room_made(room_wake::half_empty);
    if (reorder_channel* r = std::get_if<reorder_channel>(&q_)) r->left_region();
    return true;
  }

  // Anyone. `dropping`: the run drops units (a reorder channel then has
  // data when it holds any unit, not only the one whose turn it is).
  bool has_data(bool dropping) const noexcept {
    seq_cst_fence();
    return visit(q_, [&](const auto& q) { return q.has_data(dropping); });
  }
  /// Units queued (mpmc and reorder: queued and reserved, an upper bound).
  std::size_t size_now() const noexcept {
    return visit(q_, [](const auto& q) { return q.size(); });
  }
  bool has_space() const noexcept {
    const std::size_t c = capacity();
    return visit(q_, [&](const auto& q) { return q.has_space(c); });
  }
  /// Current capacity. It grows at most once, before the first unit is
  /// pushed, so every reader that has seen a unit sees the final value.
  std::size_t capacity() const noexcept { return cap.load(std::memory_order_relaxed); }
  /// Raises the capacity towards `want` (at most cap_max); see capacity().
  void grow(std::size_t want) noexcept;
  /// The reorder queue (null for the other kinds), to wire its region.
  reorder_channel* reorder() noexcept { return std::get_if<reorder_channel>(&q_); }

  /// Wires the stages on either side (`producer` null: the source thread).
  void connect(stage_rt* from, stage_rt* to);
  /// A slot became free: wake the producer.
  void freed();
  /// A pop made room at point `at` (from full, or down to half full): wakes
  /// the producer if wake_producer_on_room says so for this channel.
  void room_made(room_wake at);
  /// A unit arrived: wake the consumer if it may be waiting for one (`head`:
  /// what push returned).
  void pushed(bool head);
  /// The producer is a farm whose pace the consumer sets while the queue is
  /// half full or fuller (consumer_sets_pace, wake_rule.hpp).
  bool consumer_paced() const noexcept;
  /// After put(), by the producer stage of a farm consumer that may need
  /// another replica now, from both stages' costs (wake_rule.hpp).
  void pushed_to_farm();
  /// Pushes `u` from a producer that is not a stage's pass_on (a source, a
  /// junction) and wakes the consumer: a farm from both stages' costs, a
  /// serial one, if `wake_serial`, when it may be waiting for this unit.
  void deliver(work_unit* u, bool wake_serial);

  std::atomic<std::size_t> cap;
  const std::size_t cap_built;  // the capacity before it grew
  const std::size_t cap_max;  // what the queue was sized for
  alignas(cache_line) std::atomic<std::size_t> high_water{0};
  stage_rt* consumer = nullptr;
  stage_rt* producer = nullptr;  // null: the source thread
  // The source thread sleeps here when the channel is full.
  std::atomic<int> waiters{0};
  std::atomic<std::uint32_t> space_epoch{0};

 private:
  static queue make_queue(kind k, std::size_t cap_max, int ticket_depth);

  bool consumer_concurrent_ = false;  // the consumer may run several activations
  bool producer_concurrent_ = false;  // the producer may: only a farm is woken at half empty
  queue q_;
};

/// Kind and capacity of channel `i` of `g` (compiled_graph::channels).
struct channel_spec {
  channel::kind k;
  std::size_t cap;
  int depth;  // reorder: ticket slot
  /// Most the capacity may grow to for small units (= cap when it was given
  /// by node::capacity or graph_options::capacity).
  std::size_t cap_max;
};
/// Capacity a channel of default capacity grows to when units are small.
inline constexpr std::size_t small_unit_capacity = 64;
/// Bytes of units one grown channel may hold (capacity = this / unit bytes,
/// at most small_unit_capacity).
inline constexpr std::size_t small_unit_budget = std::size_t(256) << 10;
channel_spec channel_for(const compiled_graph& g, std::size_t i);
const char* kind_name(channel::kind k) noexcept;

}  // namespace sinew::detail
