#include "channel.hpp"

#include <algorithm>

#include "compiled_graph.hpp"
#include "stage.hpp"
#include "wake_rule.hpp"

namespace sinew::detail {

channel::queue channel::make_queue(kind k, std::size_t cap_max, int ticket_depth) {
  switch (k) {
    case kind::spsc: return queue(std::in_place_type<spsc_channel>, cap_max);
    case kind::mpmc: return queue(std::in_place_type<mpmc_channel>, cap_max);
    case kind::reorder: break;
  }
  return queue(std::in_place_type<reorder_channel>, cap_max, ticket_depth);
}

channel::channel(kind k, std::size_t cap_, int ticket_depth, std::size_t cap_max_)
    : cap(cap_ ? cap_ : 1),
      cap_built(cap.load(std::memory_order_relaxed)),
      cap_max(std::max(cap_max_, cap_built)),
      q_(make_queue(k, cap_max, ticket_depth)) {}

void channel::restart() noexcept {
  cap.store(cap_built, std::memory_order_relaxed);
  high_water.store(0, std::memory_order_relaxed);
  waiters.store(0, std::memory_order_relaxed);
  visit(q_, [](auto& q) { q.restart(); });
}

void channel::grow(std::size_t want) noexcept {
  if (want > capacity()) cap.store(std::min(want, cap_max), std::memory_order_relaxed);
}

void channel::connect(stage_rt* from, stage_rt* to) {
  producer = from;
  consumer = to;
  consumer_concurrent_ = to->max_active > 1;
  producer_concurrent_ = from && from->max_active > 1;
}

void channel::pushed(bool head) {
  // An idle serial consumer is waiting for input only if the channel was
  // empty (reorder: for the unit whose turn it is); otherwise it is waiting
  // for room downstream. A concurrent one may take more units at once.
  // (Stale views are covered by the full wake every activation does when it
  // ends.)
  if (consumer->max_active > 1 || head) consumer->hint();
}

bool channel::consumer_paced() const noexcept {
  return producer_concurrent_ && consumer_sets_pace(producer->cheap(), !consumer_concurrent_, capacity(),
                                                    std::holds_alternative<reorder_channel>(q_));
}

void channel::pushed_to_farm() {
  // A farm whose output is more than half full is left to its consumer's pop
  // at half empty: woken at every push, it would start an activation for
  // each slot of room as the consumer makes it.
  if (const channel* o = consumer->out; o && o->consumer_paced() && o->size_now() * 2 > o->capacity()) return;
  // The queue's length is read only when the costs alone would leave the
  // farm to the producer's leave().
  if (wake_farm_on_push(producer->unit_cost_ns.load(std::memory_order_relaxed),
                        consumer->unit_cost_ns.load(std::memory_order_relaxed), false, stage_rt::defer_below_ns) ||
      size_now() * 2 >= capacity())
    consumer->hint();
}

void channel::deliver(work_unit* u, bool wake_serial) {
  if (consumer->max_active > 1) {
    put(u);
    pushed_to_farm();
  } else if (wake_serial) {
    pushed(push(u));
  } else {
    put(u);
  }
}

void channel::freed() {
  if (producer) {
    producer->hint();
    return;
  }
  seq_cst_fence();  // pairs with the waiter's registration
  if (waiters.load(std::memory_order_seq_cst) > 0) {
    space_epoch.fetch_add(1, std::memory_order_seq_cst);
    space_epoch.notify_all();
  }
}

void channel::room_made(room_wake at) {
  if (wake_producer_on_room(producer->max_active == 1, producer->cheap(), !consumer_concurrent_, capacity()) == at)
    freed();
}

channel_spec channel_for(const compiled_graph& g, std::size_t i) {
  const channel_plan& p = g.channels[i];
  const unsigned pc = g.concurrency(p.from), cc = g.concurrency(p.to);
  const std::size_t given = p.to.k == vertex_ref::stage ? g.stages[p.to.i].capacity : 0;
  std::size_t cap = given ? given : g.opts.capacity ? g.opts.capacity : std::max<std::size_t>(2, 2 * std::max(pc, cc));
  cap = cap ? cap : 1;  // as channel's constructor
  channel_spec c{channel::kind::mpmc, cap, -1, (given || g.opts.capacity) ? cap : std::max(cap, small_unit_capacity)};
  if (p.from.k == vertex_ref::stage && g.stages[p.from.i].exit_region >= 0) {
    c.k = channel::kind::reorder;
    c.depth = g.stages[p.from.i].exit_region;
  } else if (pc == 1 && cc == 1) {
    c.k = channel::kind::spsc;
  }
  return c;
}

const char* kind_name(channel::kind k) noexcept {
  switch (k) {
    case channel::kind::spsc: return "spsc";
    case channel::kind::mpmc: return "mpmc";
    case channel::kind::reorder: return "reorder";
  }
  return "?";
}

}  // namespace sinew::detail
