// A stage's activations: reserve, take, process, push; waking neighbours;
// end of stream through concurrent stages. See docs/runtime.md.
#include "stage.hpp"

#include <algorithm>
#include <optional>
#include <utility>

#include <sinew/detail/clock.hpp>
#include <sinew/detail/fence.hpp>
#include <sinew/engine/run_id.hpp>
#include <sinew/engine/trace.hpp>

#include "channel.hpp"
#include "counters.hpp"
#include "junction.hpp"
#include "ordered_region.hpp"
#include "replica_rule.hpp"
#include "run_state.hpp"
#include "serial_chain.hpp"
#include "stage_context.hpp"

namespace sinew::detail {

namespace {
/// Drops the layer a stage read. A leaf that changed the unit's size (a
/// reduction) ends a record batch: what it made is one record.
void pop_input(work_unit& u) {
  u.pop_layer();
  if (u.records().batch() && !u.records().fits(u.in().count())) [[unlikely]]
    u.set_records({});
}
}  // namespace

void stage_rt::restart() {
  for (auto* a : {&units, &busy_ns, &activations, &bytes, &records, &idle_since, &wait_in_ns, &wait_out_ns, &chunks})
    a->store(0, std::memory_order_relaxed);
  active.store(0, std::memory_order_relaxed);
  inflight.store(0, std::memory_order_relaxed);
  eos.store(nullptr, std::memory_order_relaxed);
  eos_seen.store(false, std::memory_order_relaxed);
  unit_cost_ns.store(UINT32_MAX, std::memory_order_relaxed);
  last_cost_ns.store(UINT32_MAX, std::memory_order_relaxed);
  counters.clear();
  result = nullptr;
}

void stage_rt::hint() {
  // Cheap path for every push and pop: skip the fence when the stage is
  // running (it retries on its own). A stale "running" can hide a stage that
  // is just leaving; the caller's activation then wakes it for certain when
  // it ends (leave), so a unit waits at most that long.
  const unsigned a = active.load(std::memory_order_relaxed);
  if (a < max_active && !enough_running(a)) notify();
}

bool stage_rt::enough_running(unsigned a) const noexcept {
  if (max_active == 1 || !in) return false;
  const std::size_t queued = in->size_now();
  const std::uint32_t cost = unit_cost_ns.load(std::memory_order_relaxed);
  if (enough_replicas(queued, cost, a)) return true;
  // Behind one serial stage or source (not a junction, whose units spread
  // over its outputs), as many as keep up with it, while its queue is less
  // than half full (fuller, they do not keep up after all).
  const stage_rt* p = in->producer;
  if (p && p->max_active == 1 && !p->junction && queued * 2 < in->capacity() &&
      replicas_keep_up(cost, p->unit_cost_ns.load(std::memory_order_relaxed), a))
    return true;
  // Before a serial consumer that sets its pace (its queue half full or
  // fuller), as many as keep up with the rate it takes units at.
  return out && out->consumer_paced() && out->size_now() * 2 >= out->capacity() &&
         replicas_keep_up(cost, out->consumer->take_interval_ns(), a);
}

std::uint32_t stage_rt::take_interval_ns() const noexcept {
  const std::uint64_t c = unit_cost_ns.load(std::memory_order_relaxed);
  if (c == UINT32_MAX) return UINT32_MAX;
  return std::uint32_t(std::min<std::uint64_t>(c * (junction ? junction->parts_per_unit() : 1), UINT32_MAX - 1));
}

stage_rt* stage_rt::leave(stage_rt** later) {
  if (junction) return junction->leave();
  stage_rt* next = out && out->consumer->claim() ? out->consumer : nullptr;  // run it here, next
  if (in) {
    stage_rt* p = in->producer;
    // A chain that runs together goes on with the producer once its next
    // stage has run here (a consumer outside the chain would delay it).
    if (!p) in->freed();  // the source thread, if it sleeps
    else if (later && !*later && chain && p->chain == chain && (!next || next->chain == chain) && chain->together())
      *later = p;
    else p->notify();
  }
  return next;
}

bool stage_rt::has_work() const noexcept {
  if (!in) return !src->done.load(std::memory_order_seq_cst) && out->has_space();  // source
  if (junction) return junction->has_work();
  if (!in->has_data(run->dropping()) || (out && !out->has_space())) return false;
  for (region_rt* r : admits)
    if (r->full()) return false;
  return true;
}

bool stage_rt::claim() {
  seq_cst_fence();
  unsigned a = active.load(std::memory_order_seq_cst);
  if (a >= max_active || !has_work()) return false;
  // With `a` activations running, each of them notifies again when it
  // leaves (after its decrement): the last one to leave sees a == 0.
  while (a < max_active && !enough_running(a))
    if (active.compare_exchange_weak(a, a + 1, std::memory_order_seq_cst)) return true;
  return false;
}

void stage_rt::notify() {
  if (claim()) spawn();
}

void stage_rt::spawn() {
  // The task holds the run (an aliasing pointer: one shared_ptr, 16 bytes,
  // which std::function stores without allocating).
  run->sched->submit([self = std::shared_ptr<stage_rt>(run->shared_from_this(), this)] { run_chain(self.get()); });
}

void stage_rt::run_chain(stage_rt* s) {
  // An activation that ends may hand its worker to the stage it fed (which
  // then reads units still hot in this core's cache) instead of queueing a
  // task for it: a trampoline, so chains do not grow the stack.
  stage_rt* later = nullptr;  // a producer of a serial chain, claimed when the stages before it are done
  for (;;) {
    while (s) s = s->junction ? s->junction->activation() : s->in ? s->activation(later) : s->run->source_activation(*s->src);
    if (!later) return;
    s = std::exchange(later, nullptr);
    if (!s->claim()) return;  // nothing to do, or running elsewhere (it rechecks when it leaves)
  }
}

std::uint64_t stage_rt::account(std::uint64_t t0, unsigned n) {
  const std::uint64_t t1 = now_ns();
  std::uint64_t dt = t1 - t0;
  busy_ns.fetch_add(dt, std::memory_order_relaxed);
  if (n == 0) return t1;
  std::uint64_t c = dt / n, old = unit_cost_ns.load(std::memory_order_relaxed);
  last_cost_ns.store(std::uint32_t(std::min<std::uint64_t>(c, UINT32_MAX - 1)), std::memory_order_relaxed);
  c = old == UINT32_MAX ? c : (3 * old + c) / 4;
  unit_cost_ns.store(std::uint32_t(std::min<std::uint64_t>(c, UINT32_MAX - 1)), std::memory_order_relaxed);
  return t1;
}

void stage_rt::end_wait(std::uint64_t t0) noexcept {
  // One load per activation when nothing is pending; the exchange makes one
  // activation of a farm account a wait, not several.
  if (idle_since.load(std::memory_order_relaxed) == 0) return;
  std::uint64_t s = idle_since.exchange(0, std::memory_order_relaxed);
  if (s == 0 || t0 <= s) return;
  ((s & 1) == wait_output ? wait_out_ns : wait_in_ns).fetch_add(t0 - (s & ~std::uint64_t(1)), std::memory_order_relaxed);
}

stage_rt* stage_rt::activation(stage_rt*& later) {
  activations.fetch_add(1, std::memory_order_relaxed);
  const std::uint64_t t0 = now_ns();
  end_wait(t0);
  stage_scope in_stage(this);
  std::optional<trace::scope> traced;
  if (run->tr) [[unlikely]] traced.emplace(run->tr);
  const bool concurrent = max_active > 1;
  const unsigned batch = run->g->opts.batch ? run->g->opts.batch : 1;
  unsigned budget = batch;
  std::uint64_t why = wait_input;
  tally counts;
  // A concurrent stage's activation counts itself in `inflight` from before
  // its first pop to after its last unit is passed on, so end of stream
  // leaves after every unit taken before it (see finish_one) at the cost of
  // two atomic operations per activation instead of two per unit.
  if (concurrent) inflight.fetch_add(1, std::memory_order_seq_cst);
  for (;;) {
    if (out && !out->try_reserve()) {
      why = wait_output;
      break;
    }
    if (!enter_regions()) {
      out->drop_reservation();  // our own slot: we recheck below
      why = wait_output;        // the ordered window is full: back pressure
      break;
    }
    work_unit* u;
    std::uint64_t ticket;
    if (!in->try_pop(u, ticket, run->dropping())) {
      if (out) out->drop_reservation();
      leave_regions(admits.size());
      break;
    }
    if (counts.deferred && !u->end_of_stream()) {  // busy again: the consumer runs elsewhere
      counts.deferred = false;
      out->consumer->hint();
    }
    process(u, ticket, counts);
    if (--budget == 0) {
      account(t0, batch);
      flush(counts);
      if (concurrent) finish_one();  // the fresh task counts itself again
      // Yield the worker but keep our activation slot: a fresh task goes on.
      spawn();
      if (out) out->consumer->notify();  // deferred wakes (see process)
      return nullptr;
    }
  }
  // A sink that has taken everything queued from a stream that may wait for
  // data writes what it buffers: a slow stream's output is not held back
  // until more arrives.
  if (snk && run->live_sources && why == wait_input && !eos_seen.load(std::memory_order_relaxed) && !run->dropping()) {
    try {
      snk->idle();
    } catch (...) {
      run->fail(snk->label(), std::current_exception());
    }
  }
  const std::uint64_t t1 = account(t0, batch - budget);
  flush(counts);
  if (concurrent) finish_one();
  // The stage now waits (for input or room) until its next activation; a
  // farm waits only once its last activation has left.
  const bool live = !eos_seen.load(std::memory_order_relaxed);
  if (live && !concurrent) idle_since.store(t1 | why, std::memory_order_relaxed);
  if (active.fetch_sub(1, std::memory_order_seq_cst) == 1 && live && concurrent)
    idle_since.store(t1 | why, std::memory_order_relaxed);
  notify();  // work that arrived while we were leaving
  return leave(&later);
}

bool stage_rt::enter_regions() {
  for (std::size_t i = 0; i < admits.size(); ++i)
    if (!admits[i]->try_enter()) {
      leave_regions(i);
      return false;
    }
  return true;
}

void stage_rt::leave_regions(std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) admits[i]->cancel_enter();
}

void stage_rt::finish_one(bool wake) {
  if (inflight.fetch_sub(1, std::memory_order_seq_cst) == 1) {
    if (work_unit* e = eos.exchange(nullptr, std::memory_order_seq_cst)) forward_eos(e, wake);
  }
}

void stage_rt::forward_eos(work_unit* e, bool wake) {
  if (!out) {  // a sink
    run->release_unit(e);
    if (!run->dropping()) {
      try {
        snk->finish();
      } catch (...) {
        run->fail(snk->label(), std::current_exception());
      }
    }
    run->sink_finished();
    return;
  }
  out->put(e);  // its slot was reserved when it was taken
  if (wake) out->consumer->notify();
}

void stage_rt::flush(tally& t) noexcept {
  if (t.units == 0) return;
  units.fetch_add(t.units, std::memory_order_relaxed);
  bytes.fetch_add(t.bytes, std::memory_order_relaxed);
  t = tally{};
}

void stage_rt::process(work_unit* u, std::uint64_t ticket, tally& t) {
  const bool concurrent = max_active > 1;
  if (spec)
    for (unsigned d : spec->enter_regions) u->set_ticket(d, ticket);
  if (u->end_of_stream()) {
    eos_seen.store(true, std::memory_order_relaxed);
    if (!concurrent) {
      forward_eos(u, false);  // a serial stage has passed on everything taken before it; leave() wakes
      return;
    }
    // Leaves after every unit taken before it: the last activation out
    // forwards it (this one's own count goes when it ends).
    eos.store(u, std::memory_order_seq_cst);
    return;
  }
  if (!out) {  // a sink (serial)
    if (!run->dropping()) {
      try {
        const std::uint64_t b = u->depth() ? u->in().bytes() : 0;
        trace* tr = run->tr;
        const std::uint64_t ts = tr ? now_ns() : 0;
        snk->consume(*u);
        if (u->note() && !snk->takes_notes()) u->note().written();
        const std::uint64_t t1 = tr || u->accepted_ns() ? now_ns() : 0;
        if (u->accepted_ns()) run->latency.add(t1 > u->accepted_ns() ? t1 - u->accepted_ns() : 0);
        if (tr) [[unlikely]]
          tr->complete("sink", snk->label(), ts, t1 - ts, {{"seq", u->seq()}});
        bump(units, 1, false);
        bump(bytes, b, false);
        bump(records, u->records().records(), false);
      } catch (...) {
        run->fail(snk->label(), std::current_exception());
      }
    }
    run->release_unit(u);
    return;
  }
  if (!run->dropping()) {
    try {
      const std::uint64_t b = u->in().bytes();
      if (copy_shared) [[unlikely]] own_buffers(u->in());
      if (result) result->insert(*u);  // below the layers the stage's pipelines add
      for (const layer_plan& p : spec->entry_layers) p.insert(*u);
      exec_args a{&u->in(), spec->in_place ? &u->in() : &u->out(), u->grain(), u->seq(), sched.get(), &u->records()};
      if (place && !spec->in_place)
        place->place(u->out(), run->sched->current_node(),
                     chunks.load(std::memory_order_relaxed) > units.load(std::memory_order_relaxed));
      input_scope placed_input(&u->in());
      // An async stage's unit may leave later from another thread (a
      // distributed farm's unit on another process): the slot reserved in
      // `out` and an inflight count of its own stay taken until finish_async.
      if (spec->async) {
        inflight.fetch_add(1, std::memory_order_seq_cst);
        if (spec->exec->start(a, [keep = run->shared_from_this(), this, u, b](std::exception_ptr e) {
              finish_async(u, b, e);
            }))
          return;
        inflight.fetch_sub(1, std::memory_order_seq_cst);  // ran here after all
      }
      if (trace* tr = run->tr) [[unlikely]] {
        tl_seq = u->seq();
        const std::uint64_t ts = now_ns();
        spec->exec->execute(a);
        tr->complete("leaf", spec->path, ts, now_ns() - ts, {{"seq", u->seq()}});
      } else {
        spec->exec->execute(a);
      }
      if (!spec->in_place) pop_input(*u);
      if (concurrent) {
        ++t.units;
        t.bytes += b;
      } else {
        bump(units, 1, false);
        bump(bytes, b, false);
      }
    } catch (...) {
      run->fail(spec->path, std::current_exception());
    }
  }
  pass_on(u, t);
}

void stage_rt::pass_on(work_unit* u, tally& t) {
  if (run->dropping()) {
    run->release_unit(u);
    out->unreserve();
    for (region_rt* r : inside) r->leave();
  } else {
    out->put(u);  // its consumer is woken below or when this activation ends
    // A cheap stage leaves its serial consumer to the end of this activation
    // (which then runs it on this worker, on units still in this core's
    // cache): waking it now would hand each unit to another core for less
    // work than the hand-off costs. A costly stage wakes it as soon as it
    // takes another data unit (tally::deferred), for parallelism; if it takes
    // none, its leave() runs the consumer here, with no task and no wake-up
    // (a one-unit graph runs start to end on one thread). A farm is woken at
    // once (it may start more replicas) unless one replica keeps up with a
    // cheap producer (wake_rule.hpp).
    if (out->consumer->max_active > 1)
      out->pushed_to_farm();
    else if (!cheap()) t.deferred = true;
    // A concurrent cheap stage may run for long (its replicas keep finding
    // input): its serial consumer is woken once the channel is half full,
    // not only when an activation ends, so that it drains concurrently.
    else if (max_active > 1 && out->size_now() * 2 >= out->capacity()) out->consumer->hint();
  }
}

void stage_rt::finish_async(work_unit* u, std::uint64_t b, std::exception_ptr e) {
  if (e) {
    run->fail(spec->path, e);
  } else if (!run->dropping()) {
    try {
      if (!spec->in_place) pop_input(*u);
      bump(units, 1, true);
      bump(bytes, b, true);
    } catch (...) {
      run->fail(spec->path, std::current_exception());
    }
  }
  tally t;
  pass_on(u, t);
  if (!run->dropping()) out->consumer->notify();  // no activation of ours ends to wake it
  finish_one(true);
  notify();  // input may wait for the slot this unit held
}

}  // namespace sinew::detail

namespace sinew {

std::uint64_t current_run_id() noexcept {
  const detail::stage_rt* st = detail::tl_stage;
  return st ? st->run->id : 0;
}

void add_stage_counter(std::string_view name, double v) {
  detail::stage_rt* st = detail::tl_stage;
  if (!st) return;
  std::lock_guard<std::mutex> lk(st->counters_m);
  auto it = st->counters.find(name);
  if (it == st->counters.end()) st->counters.emplace(std::string(name), v);
  else it->second += v;
}

}  // namespace sinew
