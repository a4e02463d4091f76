// The source's side of a run: a thread of its own for sources that may block
// (source_loop), a stage on the scheduler for the others (source_activation);
// making units, growing the channels for small ones, and end of stream.
#include "run_state.hpp"

#include <algorithm>
#include <optional>

#include <sinew/detail/clock.hpp>

#include "channel.hpp"
#include "counters.hpp"
#include "stage.hpp"

namespace sinew::detail {

bool run_state::producing(const source_rt& s) const {
  int st = state.load();
  return st == running || (st == stopping && s.src.impl().drains_on_stop());
}

bool run_state::reserve_blocking(channel& c, bool give_up_when_stopping, const source_rt& s) {
  for (;;) {
    if (c.try_reserve()) return true;
    if (give_up_when_stopping && !producing(s)) return false;
    c.waiters.fetch_add(1, std::memory_order_seq_cst);
    std::uint32_t e = c.space_epoch.load(std::memory_order_seq_cst);
    bool ok = c.try_reserve();
    bool quit = !ok && give_up_when_stopping && !producing(s);
    if (!ok && !quit) c.space_epoch.wait(e, std::memory_order_seq_cst);
    c.waiters.fetch_sub(1, std::memory_order_seq_cst);
    if (ok) return true;
    if (quit) return false;
  }
}

work_unit* run_state::make_unit(source_rt& s, std::uint64_t seq) {
  work_unit* u = acquire_unit();
  bool more = false;
  const std::uint64_t ts = tr ? now_ns() : 0;
  source_impl& src = s.src.impl();
  try {
    layer in;
    unit_builder b(in, seq, &stop_flag);
    more = src.next(b);
    if (more) {
      if (tr) [[unlikely]]
        tr->complete("source", src.label(), ts, now_ns() - ts, {{"seq", seq}});
      u->set_seq(seq);
      u->set_origin(s.index);
      u->set_grain(b.grain());
      // A tree's result layer comes with the unit when the sink may supply
      // the caller's memory; otherwise (and in a dag) the tree's first stage
      // adds it, off the source's serial path.
      if (result_provider) {
        const node_impl* root = g->root.impl().get();
        sink_impl& snk = *result_provider;
        shape os = root->output_shape(in.shape());
        layer out(os);
        bool provided = false;
        try {
          provided = snk.provide(seq, os, out);
        } catch (...) {
          fail(snk.label(), std::current_exception());
          more = false;
        }
        if (more && !provided) add_pool_buffers(out, g->sinks[0].types);
        if (more && provided) {
          try {
            check_layer(out, g->sinks[0].types, "output");
          } catch (...) {
            fail(snk.label(), std::current_exception());
            more = false;
          }
        }
        u->push_layer(std::move(out));
      }
      // Units enter here with caller-made buffers; every later layer is made
      // by the graph with the types the tree declares, so this is the one
      // place buffer types need checking.
      if (more) {
        try {
          check_layer(in, s.types, "input");
        } catch (...) {
          fail(s.first_path, std::current_exception());
          more = false;
        }
      }
      if (more && b.records().batch() && !b.records().fits(in.count()))
        throw sinew::error("a record batch of " + std::to_string(b.records().size()) + " records covers " +
                           std::to_string(b.records().elements()) + " elements, the unit holds " +
                           std::to_string(in.count()));
      if (more) {  // one producer: the source
        bump(s.bytes, in.bytes(), false);
        bump(s.records, b.records().records(), false);
      }
      if (more && seq == 0 && growable && !grown.exchange(true, std::memory_order_relaxed))
        grow_capacities(in.bytes() + (u->depth() ? u->in().bytes() : result_bytes(in.shape())));
      u->push_layer(std::move(in));
      u->set_records(b.records());
      if (b.note()) u->set_note(std::move(b.note()));
    }
  } catch (...) {
    fail(src.label(), std::current_exception());
    more = false;
  }
  if (!more || dropping()) {
    release_unit(u);
    return nullptr;
  }
  bump(s.units, 1, false);
  // Timed from here (accepted) to the sink; sampled: two clock reads.
  if (time_latency && (seq & latency_mask) == 0) u->set_accepted_ns(now_ns());
  return u;
}

std::size_t run_state::result_bytes(const shape& in) const {
  if (!g->root || g->result.empty()) return 0;
  const std::size_t n = g->root.impl()->output_shape(in).count();
  std::size_t b = 0;
  for (const elem_type* e : g->sinks[0].types.types) b += n * e->size;
  return b;
}

void run_state::grow_capacities(std::size_t bytes) {
  // Called while a source makes its first unit, before it is pushed: every
  // stage that will see a unit of that source sees the new capacities (the
  // push publishes them). Small units with the default capacities (twice
  // the concurrency) would make every activation handle a couple of units
  // and hand over to a new task, whose cost then dominates; memory is no
  // concern for them. In a dag the first source to make a unit decides
  // (capacities only grow, within what every queue was sized for).
  const std::size_t want = std::min(small_unit_capacity, small_unit_budget / std::max<std::size_t>(bytes, 1));
  for (auto& c : channels) c->grow(want);
  // Windows after their channels: a window never exceeds its channel.
  for (std::size_t j = 0; j < regions.size(); ++j)
    regions[j]->window.store(channels[g->stage_out[g->regions[j].exit]]->capacity(), std::memory_order_seq_cst);
}

void run_state::push_eos(source_rt& s, std::uint64_t seq, bool wake) {
  work_unit* e = acquire_unit();
  e->set_end_of_stream(true);
  e->set_seq(seq);
  e->set_origin(s.index);
  s.out->put(e);
  if (wake) s.out->consumer->notify();
}

void run_state::source_loop(source_rt& s) {
  std::optional<trace::scope> traced;
  if (tr) {
    traced.emplace(tr);
    tr->name_thread(sources.size() == 1 ? std::string("source") : "source " + g->sources[s.index].name);
  }
  channel& c0 = *s.out;
  std::uint64_t seq = 0;
  while (producing(s)) {
    if (!reserve_blocking(c0, true, s)) break;
    work_unit* u = make_unit(s, seq);
    if (!u) {
      c0.unreserve();
      break;
    }
    ++seq;
    c0.put(u);  // the consumer is notified below whatever push() would answer
    c0.consumer->notify();
  }
  // End of stream is always delivered: stages drain (or drop) what is ahead.
  reserve_blocking(c0, false, s);
  push_eos(s, seq, true);
}

stage_rt* run_state::source_activation(source_rt& s) {
  stage_rt& st = *s.stage;
  channel& c0 = *s.out;
  const std::uint64_t t0 = now_ns();
  std::optional<trace::scope> traced;
  if (tr) [[unlikely]] traced.emplace(tr);
  const unsigned batch = g->opts.batch ? g->opts.batch : 1;
  unsigned budget = batch;
  while (!s.done.load(std::memory_order_relaxed) && c0.try_reserve()) {
    // Until an activation has measured the source's cost per unit, the
    // first unit is timed: whether the source is cheap decides how it wakes
    // its consumer (below).
    const bool timing = st.unit_cost_ns.load(std::memory_order_relaxed) == UINT32_MAX;
    const std::uint64_t tm = timing ? now_ns() : 0;
    work_unit* u = state.load() == running ? make_unit(s, s.next_seq) : nullptr;
    if (timing && u)
      st.unit_cost_ns.store(std::uint32_t(std::min<std::uint64_t>(now_ns() - tm, UINT32_MAX - 1)),
                            std::memory_order_relaxed);
    if (!u) {
      s.done.store(true, std::memory_order_seq_cst);
      push_eos(s, s.next_seq, false);  // uses the slot just reserved; leave() wakes the consumer
      break;
    }
    ++s.next_seq;
    bump(st.units, 1, false);
    // A costly source wakes its consumer at once (it goes on making the next
    // unit meanwhile), unless this was its last unit: then it ends its
    // stream and its leave() runs the consumer on this thread.
    const bool last = s.size && s.next_seq >= *s.size;
    c0.deliver(u, !st.cheap() && !last);
    if (--budget == 0) {
      st.account(t0, batch);
      st.spawn();
      c0.consumer->notify();
      return nullptr;
    }
  }
  st.account(t0, batch - budget);
  st.active.fetch_sub(1, std::memory_order_seq_cst);
  st.notify();
  return st.leave();
}

}  // namespace sinew::detail
