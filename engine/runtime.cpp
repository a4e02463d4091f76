// Graph runtime: channels, stage activation, source thread, end of stream,
// failure and cancellation. See docs/runtime.md for the invariants.
#include "runtime.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <chrono>
#include <optional>

#include <sinew/detail/clock.hpp>
#include <thread>

#include <sinew/engine/buffer_pool.hpp>
#include <sinew/detail/fence.hpp>
#include <sinew/skeletons/pipeline.hpp>

namespace sinew::detail {

namespace {
template <class T>
void raise_max(std::atomic<T>& m, T v) {
  T cur = m.load(std::memory_order_relaxed);
  while (v > cur && !m.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {}
}

// Counters of serial stages have one writer at a time (activations of a
// serial stage are ordered by `active`), so a plain load and store does:
// no locked instruction on the per-unit path. Concurrent stages add.
inline void bump(std::atomic<std::uint64_t>& c, std::uint64_t v, bool concurrent) noexcept {
  if (concurrent) c.fetch_add(v, std::memory_order_relaxed);
  else c.store(c.load(std::memory_order_relaxed) + v, std::memory_order_relaxed);
}

// The stage this thread is running (for add_stage_counter).
thread_local stage_rt* tl_stage = nullptr;
// Traced runs only: the unit this thread is processing (for chunk events).
thread_local std::uint64_t tl_seq = 0;
// The input layer of the unit this thread's stage is processing: a map's
// parallel_for passes its buffers' placement to the scheduler.
thread_local const layer* tl_in = nullptr;

struct input_scope {
  const layer* prev;
  explicit input_scope(const layer* l) noexcept : prev(tl_in) { tl_in = l; }
  ~input_scope() { tl_in = prev; }
};

// The placement hint of a layer: its buffers, if any of them was placed.
bool placed(const layer* l) noexcept {
  if (!l) return false;
  for (unsigned i = 0; i < l->size(); ++i)
    if ((*l)[i] && (*l)[i]->placed_nodes()) return true;
  return false;
}

struct stage_scope {
  stage_rt* prev;
  explicit stage_scope(stage_rt* s) noexcept : prev(tl_stage) { tl_stage = s; }
  ~stage_scope() { tl_stage = prev; }
};
}  // namespace

// ---------------------------------------------------------------- latency

unsigned latency_histogram::bucket(std::uint64_t v) noexcept {
  if (v < (2u << sub_bits)) return unsigned(v);  // exact below 16
  unsigned e = unsigned(std::bit_width(v)) - 1 - sub_bits;  // v >> e is in [8, 16)
  return ((e + 1) << sub_bits) | unsigned((v >> e) & ((1u << sub_bits) - 1));
}

std::uint64_t latency_histogram::upper(unsigned b) noexcept {
  if (b < (2u << sub_bits)) return b;
  unsigned e = (b >> sub_bits) - 1;
  std::uint64_t m = (1u << sub_bits) | (b & ((1u << sub_bits) - 1));
  return ((m + 1) << e) - 1;
}

void latency_histogram::add(std::uint64_t v) noexcept {
  count[bucket(v)].fetch_add(1, std::memory_order_relaxed);
  raise_max(max, v);
}

latency_stats latency_histogram::read() const {
  std::uint64_t c[buckets], n = 0;
  for (unsigned b = 0; b < buckets; ++b) n += c[b] = count[b].load(std::memory_order_relaxed);
  latency_stats r;
  r.samples = n;
  r.max_ns = max.load(std::memory_order_relaxed);
  if (n == 0) return r;
  // Smallest bucket bound with at least p of the samples at or below it.
  auto pct = [&](double p) {
    std::uint64_t want = std::max<std::uint64_t>(1, std::uint64_t(std::ceil(p * double(n)))), seen = 0;
    for (unsigned b = 0; b < buckets; ++b)
      if ((seen += c[b]) >= want) return std::min(upper(b), r.max_ns);
    return r.max_ns;
  };
  r.p50_ns = pct(0.50);
  r.p90_ns = pct(0.90);
  r.p99_ns = pct(0.99);
  return r;
}

// ---------------------------------------------------------------- stage scheduler

void stage_scheduler::parallel_for(std::size_t n, std::size_t grain,
                                   detail::function_ref<void(std::size_t, std::size_t)> body) {
  stage_rt* st = &st_;
  trace* tr = st->run->tr;
  // Over placed buffers the scheduler learns where they are (`deal` runs
  // the chunks on their node).
  locality_hint hint;
  if (const layer* in = tl_in; placed(in)) hint.reads = std::span<const buffer_ref>(&(*in)[0], in->size());
  if (!tr) {
    real_.parallel_for_at(hint, n, grain, [&](std::size_t b, std::size_t e) {
      stage_scope in_stage(st);
      body(b, e);
      st->chunks.fetch_add(1, std::memory_order_relaxed);
    });
    return;
  }
  const std::uint64_t seq = tl_seq;  // the unit the caller is processing
  real_.parallel_for_at(hint, n, grain, [&](std::size_t b, std::size_t e) {
    stage_scope in_stage(st);
    trace::scope ts(tr);
    const std::uint64_t t0 = now_ns();
    body(b, e);
    tr->complete("chunk", st->spec ? std::string_view(st->spec->path) : std::string_view("chunk"), t0, now_ns() - t0,
                 {{"seq", seq}, {"begin", b}, {"end", e}});
    st->chunks.fetch_add(1, std::memory_order_relaxed);
  });
}

// ---------------------------------------------------------------- placement

stage_placement::stage_placement(const topology& t, sinew::placement p) : policy(p) {
  const sinew::placement concrete[3] = {sinew::placement::standard, sinew::placement::fine,
                                        sinew::placement::coarse};
  for (int i = 0; i < 3; ++i)
    if (p == sinew::placement::automatic || p == concrete[i])
      by_policy[i] = std::make_unique<placer>(t, concrete[i]);
}

void stage_placement::place(layer& out, int toucher_node, bool split) {
  sinew::placement p = policy;
  // Table 3 per unit: the stage's output buffers are the allocations, its
  // chunks the tasks operating on them.
  if (p == sinew::placement::automatic) p = choose_placement(std::max(1u, out.size()), split ? 2 : 1);
  placer& pl = *by_policy[p == sinew::placement::standard ? 0 : p == sinew::placement::fine ? 1 : 2];
  if (toucher_node >= 0 && std::size_t(toucher_node) >= pl.topo().nodes()) toucher_node = -1;
  for (unsigned i = 0; i < out.size(); ++i)
    if (out[i] && !out[i]->external()) pl.place_buffer(*out[i], toucher_node);
}

// ---------------------------------------------------------------- regions

bool region_rt::try_enter() noexcept {
  std::size_t o = occupied.load(std::memory_order_seq_cst);
  const std::size_t w = window.load(std::memory_order_relaxed);
  while (o < w)
    if (occupied.compare_exchange_weak(o, o + 1, std::memory_order_seq_cst)) return true;
  return false;
}

void region_rt::leave() {
  // Admission can only have been refused while the region was full, and
  // then the next change of `occupied` is a decrement from full (entries
  // fail meanwhile): only that one wakes the entry stage, not every unit
  // that leaves (a full notify per unit on the serial consumer's path).
  if (occupied.fetch_sub(1, std::memory_order_seq_cst) >= window.load(std::memory_order_relaxed)) entry->notify();
}

// ---------------------------------------------------------------- channel

channel::channel(kind k_, std::size_t cap_, int depth_, std::size_t cap_max_)
    : k(k_), cap(cap_ ? cap_ : 1), cap_max(std::max(cap_max_, cap_ ? cap_ : 1)), depth(depth_) {
  if (k == kind::spsc) sr = std::make_unique<spsc_ring<work_unit*>>(cap_max);
  else if (k == kind::mpmc) mr = std::make_unique<mpmc_ring<work_unit*>>(2 * cap_max);  // see push()
  else {
    const std::size_t n = ring_size_for(2 * cap_max);  // slack: see reorder_cell
    rmask = n - 1;
    rcells.reset(new reorder_cell[n]);
    for (std::size_t i = 0; i < n; ++i) rcells[i].seq.store(i, std::memory_order_relaxed);
  }
}

bool channel::try_reserve() noexcept {
  const std::size_t cap = capacity();
  if (sr) {
    if (!sr->producer_has_room(cap)) return false;
    std::size_t occ = sr->producer_size() + 1;
    if (occ > high_water.load(std::memory_order_relaxed)) raise_max(high_water, occ);
    return true;
  }
  std::size_t u = used.load(std::memory_order_seq_cst);
  while (u < cap)
    if (used.compare_exchange_weak(u, u + 1, std::memory_order_seq_cst)) {
      raise_max(high_water, u + 1);
      return true;
    }
  return false;
}

void channel::drop_reservation() noexcept {
  if (!sr) used.fetch_sub(1, std::memory_order_seq_cst);
}

void channel::unreserve() noexcept {
  drop_reservation();
  freed();
}

void channel::pushed(bool head) {
  // An idle serial consumer is waiting for input only if the channel was
  // empty (reorder: for the unit whose turn it is); otherwise it is waiting
  // for room downstream. A concurrent one may take more units at once.
  // (Stale views are covered by the full wake every activation does when it
  // ends.)
  if (consumer->max_active > 1 || head) consumer->hint();
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

bool channel::push(work_unit* u) {
  if (k == kind::reorder) {
    const std::uint64_t t = u->ticket(unsigned(depth));
    reorder_cell& c = rcells[t & rmask];
    if (c.seq.load(std::memory_order_acquire) == t) {
      c.u.store(u, std::memory_order_relaxed);
      c.seq.store(t + 1, std::memory_order_seq_cst);  // published: the consumer may take it
    } else {
      std::lock_guard<std::mutex> lk(om);  // out of the window: only while dropping
      overflow.emplace(t, u);
      overflow_n.fetch_add(1, std::memory_order_seq_cst);
    }
    return next.load(std::memory_order_seq_cst) == t;
  }
  // `used` <= cap bounds how many units the ring holds, not where they sit: a
  // consumer that claimed a cell but has not yet released it (it is between
  // two instructions, or was preempted there) keeps that cell busy while
  // others move on, so the cell at the tail can be momentarily taken. The
  // ring is twice the capacity, which makes this rare; when it happens the
  // claimant is about to finish, so wait for it.
  if (sr) {
    sr->try_push(u);  // single producer and consumer: the reservation guarantees room
    return sr->size_approx() <= 1;
  }
  while (!mr->try_push(u)) std::this_thread::yield();
  return consumer->max_active > 1 || mr->size_approx() <= 1;
}

bool channel::overflow_has_next() const noexcept {
  if (overflow_n.load(std::memory_order_seq_cst) == 0) return false;
  std::lock_guard<std::mutex> lk(om);
  return !overflow.empty() && overflow.begin()->first == next.load(std::memory_order_seq_cst);
}

bool channel::pop_overflow(work_unit*& u, std::uint64_t& ticket, bool any_order) {
  if (overflow_n.load(std::memory_order_seq_cst) == 0) return false;
  std::lock_guard<std::mutex> lk(om);
  if (overflow.empty()) return false;
  auto it = overflow.begin();
  std::uint64_t n = next.load(std::memory_order_seq_cst);
  if (it->first != n && !any_order) return false;
  // In order: `next` moves only with the cell of ticket n, which is not in
  // the ring (it is here), so no one else takes n meanwhile.
  if (it->first == n && !next.compare_exchange_strong(n, n + 1, std::memory_order_seq_cst)) return false;
  u = it->second;
  ticket = it->first;
  overflow.erase(it);
  overflow_n.fetch_sub(1, std::memory_order_seq_cst);
  return true;
}

bool channel::any_cell_full() const noexcept {
  for (std::uint64_t i = 0; i <= rmask; ++i)
    if (((rcells[i].seq.load(std::memory_order_seq_cst) - 1) & rmask) == i) return true;
  return overflow_n.load(std::memory_order_seq_cst) > 0;
}

bool channel::pop_any_cell(work_unit*& u, std::uint64_t& ticket) {
  // Dropping: any unit will do. A cell is full when seq - 1 is its index
  // modulo the size; taking it frees it for the ticket one lap later.
  for (std::uint64_t i = 0; i <= rmask; ++i) {
    reorder_cell& c = rcells[i];
    std::uint64_t s = c.seq.load(std::memory_order_acquire);
    if (((s - 1) & rmask) != i) continue;
    work_unit* x = c.u.load(std::memory_order_relaxed);
    if (c.seq.compare_exchange_strong(s, s - 1 + rmask + 1, std::memory_order_seq_cst)) {
      u = x;
      ticket = s - 1;
      return true;
    }
  }
  return false;
}

bool channel::try_pop(work_unit*& u, std::uint64_t& ticket, bool any_order) {
  bool ok = false;
  if (k == kind::reorder) {
    // In ticket order: take the cell of `next` once it is full. Several
    // consumers (a farm after the farm) agree through the CAS on `next`.
    for (;;) {
      std::uint64_t n = next.load(std::memory_order_seq_cst);
      reorder_cell& c = rcells[n & rmask];
      if (c.seq.load(std::memory_order_acquire) != n + 1) break;
      if (next.compare_exchange_weak(n, n + 1, std::memory_order_seq_cst)) {
        u = c.u.load(std::memory_order_relaxed);
        c.seq.store(n + rmask + 1, std::memory_order_release);  // free for ticket n + size
        ticket = n;  // units leave in ticket order: the n-th one out
        ok = true;
        break;
      }
    }
    if (!ok) ok = pop_overflow(u, ticket, any_order) || (any_order && pop_any_cell(u, ticket));
  } else {
    ok = sr ? sr->try_pop(u, &ticket) : mr->try_pop(u, &ticket);
  }
  if (!ok) return false;
  // A producer can only be waiting on us if the channel was full: the first
  // pop from full wakes it (a farm's replicas that found no room left; the
  // one this starts, and pushes upstream, bring the others back), or the
  // source thread, which counts its waiters.
  bool was_full = sr ? sr->size_approx() + 1 >= capacity() : used.fetch_sub(1, std::memory_order_seq_cst) >= capacity();
  if (was_full || !producer) freed();
  if (closes) closes->leave();
  return true;
}

bool channel::has_data() const noexcept {
  seq_cst_fence();
  if (k == kind::reorder) {
    if (consumer && consumer->run->dropping()) return any_cell_full();  // rare: a scan
    const std::uint64_t n = next.load(std::memory_order_seq_cst);
    return rcells[n & rmask].seq.load(std::memory_order_seq_cst) == n + 1 || overflow_has_next();
  }
  return sr ? !sr->empty_approx() : !mr->empty_approx();
}

// ---------------------------------------------------------------- stage

void stage_rt::hint() {
  // Cheap path for every push and pop: skip the fence when the stage is
  // running (it retries on its own). A stale "running" can hide a stage that
  // is just leaving; the caller's activation then wakes it for certain when
  // it ends (leave), so a unit waits at most that long.
  const unsigned a = active.load(std::memory_order_relaxed);
  if (a < max_active && !enough_running(a)) notify();
}

bool stage_rt::enough_running(unsigned a) const noexcept {
  // A cheap concurrent stage (a farm of fine-grained units) adds a replica
  // only when more units wait than replicas run: the running ones loop and
  // take them, and one more would cost a task and a worker's wake-up for a
  // unit that is done sooner than that. Its queue then grows while the
  // replicas cannot keep up, which adds them one by one. Costly stages (and
  // stages whose cost is not known yet) start one per unit at once.
  return a > 0 && max_active > 1 && in && cheap() && in->size_now() <= a;
}

stage_rt* stage_rt::leave() {
  if (in) {
    if (in->producer) in->producer->notify();
    else in->freed();  // the source thread, if it sleeps
  }
  if (out && out->consumer->claim()) return out->consumer;  // run it here, next
  return nullptr;
}

bool stage_rt::has_work() const noexcept {
  if (!in) return !run->source_done.load(std::memory_order_seq_cst) && out->has_space();  // source
  if (!in->has_data() || (out && !out->has_space())) return false;
  for (region_rt* r : admits)
    if (r->occupied.load(std::memory_order_seq_cst) >= r->window.load(std::memory_order_relaxed)) return false;
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
  while (s) s = s->in ? s->activation() : s->run->source_activation();
}

std::uint64_t stage_rt::account(std::uint64_t t0, unsigned n) {
  const std::uint64_t t1 = now_ns();
  std::uint64_t dt = t1 - t0;
  busy_ns.fetch_add(dt, std::memory_order_relaxed);
  if (n == 0) return t1;
  std::uint64_t c = dt / n, old = unit_cost_ns.load(std::memory_order_relaxed);
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

stage_rt* stage_rt::activation() {
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
  return leave();
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
  // Only slots this activation took and never used: no one waits on them
  // that our own exit recheck would not cover.
  for (std::size_t i = 0; i < n; ++i) admits[i]->occupied.fetch_sub(1, std::memory_order_seq_cst);
}

void stage_rt::finish_one(bool wake) {
  if (inflight.fetch_sub(1, std::memory_order_seq_cst) == 1) {
    if (work_unit* e = eos.exchange(nullptr, std::memory_order_seq_cst)) forward_eos(e, wake);
  }
}

void stage_rt::forward_eos(work_unit* e, bool wake) {
  if (!out) {  // the sink
    run->release_unit(e);
    if (!run->dropping()) {
      try {
        run->snk.impl().finish();
      } catch (...) {
        run->fail(run->snk.impl().label(), std::current_exception());
      }
      if (!run->dropping()) {  // a source's deferred error (source_impl::after_delivery)
        try {
          run->src.impl().after_delivery();
        } catch (...) {
          run->fail(run->src.impl().label(), std::current_exception());
        }
      }
    }
    run->complete();
    return;
  }
  out->push(e);  // its slot was reserved when it was taken
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
  if (!out) {  // sink (serial)
    if (!run->dropping()) {
      try {
        const std::uint64_t b = u->depth() ? u->in().bytes() : 0;
        trace* tr = run->tr;
        const std::uint64_t ts = tr ? now_ns() : 0;
        run->snk.impl().consume(*u);
        const std::uint64_t t1 = tr || u->accepted_ns() ? now_ns() : 0;
        if (u->accepted_ns()) run->latency.add(t1 > u->accepted_ns() ? t1 - u->accepted_ns() : 0);
        if (tr) [[unlikely]]
          tr->complete("sink", run->snk.impl().label(), ts, t1 - ts, {{"seq", u->seq()}});
        bump(units, 1, false);
        bump(bytes, b, false);
        bump(run->units_out, 1, false);
      } catch (...) {
        run->fail(run->snk.impl().label(), std::current_exception());
      }
    }
    run->release_unit(u);
    return;
  }
  if (!run->dropping()) {
    try {
      const std::uint64_t b = u->in().bytes();
      for (const auto& p : spec->entry_pipelines) insert_pipeline_layers(*p, u->in(), *u);
      exec_args a{&u->in(), spec->in_place ? &u->in() : &u->out(), u->grain(), u->seq(), sched.get()};
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
      if (!spec->in_place) u->pop_layer();
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
    const bool head = out->push(u);
    // A cheap stage leaves its serial consumer to the end of this activation
    // (which then runs it on this worker, on units still in this core's
    // cache): waking it now would hand each unit to another core for less
    // work than the hand-off costs. A costly stage wakes it as soon as it
    // takes another data unit (tally::deferred), for parallelism; if it takes
    // none, its leave() runs the consumer here, with no task and no wake-up
    // (a one-unit graph runs start to end on one thread). A farm is woken at
    // once: it may start more replicas.
    if (out->consumer->max_active > 1) out->pushed(head);
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
      if (!spec->in_place) u->pop_layer();
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

// ---------------------------------------------------------------- run state

namespace {
// Units alive never exceed the sum of capacities + 2 (see docs/runtime.md).
std::size_t unit_bound(const compiled_graph& g) {
  std::size_t n = 8;
  for (std::size_t i = 0; i <= g.stages.size(); ++i) n += channel_for(g, i).cap_max;
  return n;
}
}  // namespace

channel_spec channel_for(const compiled_graph& g, std::size_t i) {
  const auto& specs = g.stages;
  const std::size_t n = specs.size();
  unsigned pc = i == 0 ? 1 : specs[i - 1].concurrency;
  unsigned cc = i < n ? specs[i].concurrency : 1;
  std::size_t cap = (i < n && specs[i].capacity) ? specs[i].capacity
                    : g.opts.capacity           ? g.opts.capacity
                                                : std::max<std::size_t>(2, 2 * std::max(pc, cc));
  const bool given = (i < n && specs[i].capacity) || g.opts.capacity;
  cap = cap ? cap : 1;  // as channel's constructor
  channel_spec c{channel::kind::mpmc, cap, -1, given ? cap : std::max(cap, small_unit_capacity)};
  if (i > 0 && specs[i - 1].exit_region >= 0) {
    c.k = channel::kind::reorder;
    c.depth = specs[i - 1].exit_region;
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

run_state::run_state(std::shared_ptr<const compiled_graph> graph, source s, sink k)
    : g(std::move(graph)), src(std::move(s)), snk(std::move(k)), tr(g->opts.trace), free_units(unit_bound(*g)) {
  sched = g->opts.scheduler ? g->opts.scheduler : &default_scheduler();
  if (unsigned every = g->opts.latency_every) {
    time_latency = true;
    latency_mask = std::bit_ceil(every) - 1;
  }
  const auto& specs = g->stages;
  std::size_t n = specs.size();
  std::optional<topology> tp;  // read once, only when a stage places its buffers
  auto topo = [&]() -> const topology& {
    if (!tp) tp = sched->numa_topology() ? *sched->numa_topology() : topology::current();
    return *tp;
  };
  for (std::size_t i = 0; i <= n; ++i) {
    channel_spec c = channel_for(*g, i);
    channels.push_back(std::make_unique<channel>(c.k, c.cap, c.depth, c.cap_max));
    if (c.cap_max > c.cap) growable = true;
  }
  for (std::size_t i = 0; i <= n; ++i) {
    auto st = std::make_unique<stage_rt>();
    st->run = this;
    st->spec = i < n ? &specs[i] : nullptr;
    st->in = channels[i].get();
    st->out = i < n ? channels[i + 1].get() : nullptr;
    st->max_active = i < n ? specs[i].concurrency : 1;
    st->sched = std::make_unique<stage_scheduler>(*sched, *st);
    if (i < n) {
      auto pl = specs[i].placement ? specs[i].placement : g->opts.placement;
      if (pl) {
        st->place = std::make_unique<stage_placement>(topo(), *pl);
        caller_may_run = false;
      }
    }
    channels[i]->consumer = st.get();
    if (i < n) channels[i + 1]->producer = st.get();
    stages.push_back(std::move(st));
  }
  for (const region_spec& rs : g->regions) {
    auto r = std::make_unique<region_rt>();
    r->entry = stages[rs.entry].get();
    r->window.store(channels[rs.exit + 1]->capacity(), std::memory_order_relaxed);
    channels[rs.exit + 1]->closes = r.get();
    r->entry->admits.push_back(r.get());
    for (std::size_t i = rs.entry; i <= rs.exit; ++i) stages[i]->inside.push_back(r.get());
    regions.push_back(std::move(r));
  }
  out_types = g->root.impl()->output_types();
  in_types = g->root.impl()->input_types();
}

run_state::~run_state() {
  {
    std::lock_guard<std::mutex> lk(err_m);  // after any run_future::get() copied the error (graph.cpp)
    error = nullptr;
  }
  if (trace_live.exchange(false)) tr->run_ended();
  if (source_thread.joinable()) {
    if (source_thread.get_id() == std::this_thread::get_id()) source_thread.detach();
    else source_thread.join();
  }
  for (auto& u : all_units) u->clear();
}

void run_state::start() {
  src_size = src.impl().size_hint();
  snk.impl().prepare(out_types, src_size);
  sched_start = sched->stats();
  if (tr) {
    tr->run_started();
    trace_live.store(true);
  }
  t0 = std::chrono::steady_clock::now();
  // Every stage waits for input from the start (stored before anything can
  // activate a stage).
  const std::uint64_t start_ns = now_ns();
  for (auto& st : stages) st->idle_since.store(start_ns | wait_input, std::memory_order_relaxed);
  if (src.impl().blocking()) {
    source_thread = std::thread([self = shared_from_this()] { self->source_loop(); });
  } else {
    source_stage = std::make_unique<stage_rt>();
    source_stage->run = this;
    source_stage->spec = nullptr;
    source_stage->in = nullptr;
    source_stage->out = channels[0].get();
    source_stage->max_active = 1;
    channels[0]->producer = source_stage.get();
    if (source_stage->claim()) {
      start_pending.store(true, std::memory_order_release);
      sched->submit([self = shared_from_this()] { self->run_start(); });
    }
  }
}

void run_state::run_start() {
  if (start_pending.load(std::memory_order_acquire) && start_pending.exchange(false, std::memory_order_acq_rel))
    stage_rt::run_chain(source_stage.get());
}

work_unit* run_state::acquire_unit() {
  work_unit* u = nullptr;
  if (!free_units.try_pop(u)) {
    std::lock_guard<std::mutex> lk(pool_m);
    if (!spare_units.empty()) {
      u = spare_units.back();
      spare_units.pop_back();
    } else {
      all_units.push_back(std::make_unique<work_unit>());
      u = all_units.back().get();
    }
  }
  raise_max(alive_max, alive.fetch_add(1, std::memory_order_relaxed) + 1);
  return u;
}

void run_state::release_unit(work_unit* u) {
  u->clear();
  alive.fetch_sub(1, std::memory_order_relaxed);
  if (free_units.try_push(u)) return;
  std::lock_guard<std::mutex> lk(pool_m);  // ring full (or a cell still in use): rare
  spare_units.push_back(u);
}

bool run_state::producing() const {
  int s = state.load();
  return s == running || (s == stopping && src.impl().drains_on_stop());
}

bool run_state::reserve_blocking(channel& c, bool give_up_when_stopping) {
  for (;;) {
    if (c.try_reserve()) return true;
    if (give_up_when_stopping && !producing()) return false;
    c.waiters.fetch_add(1, std::memory_order_seq_cst);
    std::uint32_t e = c.space_epoch.load(std::memory_order_seq_cst);
    bool ok = c.try_reserve();
    bool quit = !ok && give_up_when_stopping && !producing();
    if (!ok && !quit) c.space_epoch.wait(e, std::memory_order_seq_cst);
    c.waiters.fetch_sub(1, std::memory_order_seq_cst);
    if (ok) return true;
    if (quit) return false;
  }
}

work_unit* run_state::make_unit(std::uint64_t seq) {
  const node_impl& root = *g->root.impl();
  work_unit* u = acquire_unit();
  bool more = false;
  const std::uint64_t ts = tr ? now_ns() : 0;
  try {
    layer in;
    unit_builder b(in, seq, &stop_flag);
    more = src.impl().next(b);
    if (more) {
      if (tr) [[unlikely]]
        tr->complete("source", src.impl().label(), ts, now_ns() - ts, {{"seq", seq}});
      u->set_seq(seq);
      u->set_grain(b.grain());
      if (!root.in_place()) {
        shape os = root.output_shape(in.shape());
        layer out(os);
        bool provided = false;
        try {
          provided = snk.impl().provide(seq, os, out);
        } catch (...) {
          fail(snk.impl().label(), std::current_exception());
          more = false;
        }
        if (more && !provided)
          for (const elem_type* t : out_types.types) out.add(buffer_pool::global().acquire(os.count(), *t));
        if (more && provided) {
          try {
            check_layer(out, out_types, "output");
          } catch (...) {
            fail(snk.impl().label(), std::current_exception());
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
          check_layer(in, in_types, "input");
        } catch (...) {
          fail(g->stages.front().path, std::current_exception());
          more = false;
        }
      }
      if (more) bump(bytes_in, in.bytes(), false);  // one producer: the source
      if (more && seq == 0 && growable) grow_capacities(in.bytes() + (u->depth() ? u->in().bytes() : 0));
      u->push_layer(std::move(in));
    }
  } catch (...) {
    fail(src.impl().label(), std::current_exception());
    more = false;
  }
  if (!more || dropping()) {
    release_unit(u);
    return nullptr;
  }
  bump(units_in, 1, false);
  // Timed from here (accepted) to the sink; sampled: two clock reads.
  if (time_latency && (seq & latency_mask) == 0) u->set_accepted_ns(now_ns());
  return u;
}

void run_state::grow_capacities(std::size_t bytes) {
  // Called while making the first unit, before it is pushed: every stage
  // that will see a unit sees the new capacities (the push publishes them).
  // Small units with the default capacities (twice the concurrency) would
  // make every activation handle a couple of units and hand over to a new
  // task, whose cost then dominates; memory is no concern for them.
  const std::size_t want = std::min(small_unit_capacity, small_unit_budget / std::max<std::size_t>(bytes, 1));
  for (auto& c : channels)
    if (want > c->capacity()) c->cap.store(std::min(want, c->cap_max), std::memory_order_relaxed);
  // Windows after their channels: a window never exceeds its channel.
  for (auto& r : regions) {
    for (auto& c : channels)
      if (c->closes == r.get()) r->window.store(c->capacity(), std::memory_order_seq_cst);
  }
}

void run_state::push_eos(std::uint64_t seq, bool wake) {
  work_unit* e = acquire_unit();
  e->set_end_of_stream(true);
  e->set_seq(seq);
  channels[0]->push(e);
  if (wake) stages[0]->notify();
}

void run_state::source_loop() {
  std::optional<trace::scope> traced;
  if (tr) {
    traced.emplace(tr);
    tr->name_thread("source");
  }
  channel& c0 = *channels[0];
  std::uint64_t seq = 0;
  while (producing()) {
    if (!reserve_blocking(c0, true)) break;
    work_unit* u = make_unit(seq);
    if (!u) {
      c0.unreserve();
      break;
    }
    ++seq;
    c0.push(u);
    stages[0]->notify();
  }
  // End of stream is always delivered: stages drain (or drop) what is ahead.
  reserve_blocking(c0, false);
  push_eos(seq, true);
}

stage_rt* run_state::source_activation() {
  stage_rt& st = *source_stage;
  channel& c0 = *channels[0];
  const std::uint64_t t0 = now_ns();
  std::optional<trace::scope> traced;
  if (tr) [[unlikely]] traced.emplace(tr);
  const unsigned batch = g->opts.batch ? g->opts.batch : 1;
  unsigned budget = batch;
  while (!source_done.load(std::memory_order_relaxed) && c0.try_reserve()) {
    // Until an activation has measured the source's cost per unit, the
    // first unit is timed: whether the source is cheap decides how it wakes
    // the first stage (below).
    const bool timing = st.unit_cost_ns.load(std::memory_order_relaxed) == UINT32_MAX;
    const std::uint64_t tm = timing ? now_ns() : 0;
    work_unit* u = state.load() == running ? make_unit(next_seq) : nullptr;
    if (timing && u)
      st.unit_cost_ns.store(std::uint32_t(std::min<std::uint64_t>(now_ns() - tm, UINT32_MAX - 1)),
                            std::memory_order_relaxed);
    if (!u) {
      source_done.store(true, std::memory_order_seq_cst);
      push_eos(next_seq, false);  // uses the slot just reserved; leave() wakes the first stage
      break;
    }
    ++next_seq;
    bump(st.units, 1, false);
    const bool head = c0.push(u);
    // A costly source wakes its consumer at once (it goes on making the next
    // unit meanwhile), unless this was its last unit: then it ends its
    // stream and its leave() runs the consumer on this thread.
    const bool last = src_size && next_seq >= *src_size;
    if ((!st.cheap() && !last) || stages[0]->max_active > 1) c0.pushed(head);
    if (--budget == 0) {
      st.account(t0, batch);
      st.spawn();
      stages[0]->notify();
      return nullptr;
    }
  }
  st.account(t0, batch - budget);
  st.active.fetch_sub(1, std::memory_order_seq_cst);
  st.notify();
  return st.leave();
}

void run_state::fail(const std::string& path, std::exception_ptr e) {
  std::string what = "unknown exception";
  try {
    std::rethrow_exception(e);
  } catch (const node_error& ne) {
    what = ne.what();
  } catch (const std::exception& ex) {
    what = ex.what();
  } catch (...) {
  }
  {
    std::lock_guard<std::mutex> lk(err_m);
    if (!error && state.load() < failed) error = std::make_exception_ptr(node_error(path, what, e));
  }
  int s = state.load();
  while (s < failed && !state.compare_exchange_weak(s, failed)) {}
  stop_flag.store(true, std::memory_order_release);
  wake_all();
  snk.impl().interrupt();  // a sink blocked on a peer must not hold up the failure
}

void run_state::request(int how) {
  if (how == cancelled) {
    {
      std::lock_guard<std::mutex> lk(err_m);
      if (!error && state.load() < failed) error = std::make_exception_ptr(sinew::cancelled());
    }
    int s = state.load();
    while (s < failed && !state.compare_exchange_weak(s, cancelled)) {}
  } else {
    int s = running;
    state.compare_exchange_strong(s, stopping);
  }
  stop_flag.store(true, std::memory_order_release);
  wake_all();
  if (how == cancelled) snk.impl().interrupt();  // stop drains into the sink: no interrupt
}

void run_state::wake_all() {
  src.impl().interrupt();
  if (source_stage) source_stage->notify();
  channel& c0 = *channels[0];
  c0.space_epoch.fetch_add(1, std::memory_order_seq_cst);
  c0.space_epoch.notify_all();
  for (auto& s : stages) s->notify();
}

void run_state::complete() {
  t1 = std::chrono::steady_clock::now();
  scheduler_stats end = sched->stats();
  if (trace_live.exchange(false)) tr->run_ended();
  {
    std::lock_guard<std::mutex> lk(done_m);
    sched_end = std::move(end);
    done = true;
  }
  done_cv.notify_all();
  done_latch.open();  // a caller helping in the scheduler (run_future::wait) returns
}

}  // namespace sinew::detail

namespace sinew {

void add_stage_counter(std::string_view name, double v) {
  detail::stage_rt* st = detail::tl_stage;
  if (!st) return;
  std::lock_guard<std::mutex> lk(st->counters_m);
  auto it = st->counters.find(name);
  if (it == st->counters.end()) st->counters.emplace(std::string(name), v);
  else it->second += v;
}

}  // namespace sinew
