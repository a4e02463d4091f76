// Broadcast, split and merge at run time, and the junction's activation: a
// serial stage with several inputs or outputs (zip and join matching in
// junction_match.cpp). See docs/runtime.md, "Dags".
#include "junction.hpp"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>

#include <sinew/detail/clock.hpp>
#include <sinew/engine/buffer_pool.hpp>
#include <sinew/engine/graph.hpp>
#include <sinew/engine/trace.hpp>

#include "channel.hpp"
#include "counters.hpp"
#include "run_state.hpp"
#include "stage.hpp"
#include "stage_context.hpp"

namespace sinew::detail {

namespace {
/// Asks for the lines of [p, p + n) in a state this core may write, so that
/// a later store needs no second transfer after the load that shared the
/// line. On x86 that is PREFETCHW (older cores take it as a no-op), which
/// GCC emits for a write prefetch only with -mprfchw.
void prefetch_for_write(const void* p, std::size_t n) noexcept {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  for (std::uintptr_t l = a & ~std::uintptr_t(cache_line - 1); l < a + n; l += cache_line) {
#if defined(__x86_64__) || defined(__i386__)
    asm volatile("prefetchw %0" : : "m"(*reinterpret_cast<const char*>(l)));
#else
    __builtin_prefetch(reinterpret_cast<const void*>(l), 1);
#endif
  }
}
}  // namespace

void own_buffers(layer& l) {
  for (unsigned i = 0; i < l.size(); ++i) {
    // One holder of a pooled buffer: no other unit can reach it (a new
    // reference only comes from a copy of this unit). Two or more: a
    // broadcast shares it. The caller's memory (a source's wrapped input)
    // is copied whoever holds it, so that whether it is written never
    // depends on how fast the other branches were.
    if (l[i]->unique() && !l[i]->external()) continue;
    buffer_ref c = buffer_pool::global().acquire(l[i]->count(), l[i]->type());
    std::memcpy(c->data(), l[i]->data(), l[i]->bytes());
    l[i] = std::move(c);
  }
}

junction_rt::junction_rt(stage_rt& s, const junction_spec& j) : st(s), spec(j) {
  s.junction = this;
  joining.resize(j.k == junction_spec::join ? j.ins.size() : 0);
  // Joined units are a stream of their own: an origin no source has.
  join_origin = std::uint32_t(s.run->g->sources.size() + std::size_t(&j - s.run->g->junctions.data()));
  restart();
}

void junction_rt::restart() {
  assert(pending.empty() && joining_by_key.empty());
  held.assign(spec.outs.size(), nullptr);
  sent.assign(spec.outs.size(), 0);
  ended.assign(spec.ins.size(), false);
  pending_in.assign(spec.ins.size(), 0);
  ended_n = 0;
  emitted = 0;
  next_in = next_out = 0;
  held_mask.store(0, std::memory_order_relaxed);
  held_eos.store(false, std::memory_order_relaxed);
  readable.store(spec.ins.size() >= 64 ? ~std::uint64_t(0) : (std::uint64_t(1) << spec.ins.size()) - 1,
                 std::memory_order_relaxed);
  eos_out.store(false, std::memory_order_relaxed);
}

void junction_rt::wire(const std::vector<std::unique_ptr<channel>>& channels) {
  for (std::uint32_t c : spec.ins) ins.push_back(channels[c].get());
  for (std::uint32_t c : spec.outs) outs.push_back(channels[c].get());
  // A zip waits for the parts of a seq while its other inputs run ahead. Out
  // of a common broadcast, a branch can be ahead by at most the units the
  // other branches' queues hold, so the sum of every capacity is a window
  // that never binds there; between independent sources it keeps the faster
  // one from filling memory (its source then waits).
  for (const auto& c : channels) window += c->cap_max;
  window += 64;
}

std::string junction_rt::branch(std::size_t i) const {
  return st.run->g->vertex_path(st.run->g->channels[spec.ins[i]].from);
}

void junction_rt::set_readable(std::size_t i, bool yes) {
  if (i >= 64) return;  // inputs past 64 are always tried
  const std::uint64_t bit = std::uint64_t(1) << i;
  const std::uint64_t r = readable.load(std::memory_order_relaxed);
  readable.store(yes ? r | bit : r & ~bit, std::memory_order_seq_cst);
}

bool junction_rt::has_work() const noexcept {
  const bool drop = st.run->dropping();
  if (const std::uint64_t h = held_mask.load(std::memory_order_seq_cst)) {
    if (drop && !held_eos.load(std::memory_order_relaxed)) return true;  // released, not pushed
    for (std::size_t k = 0; k < outs.size(); ++k)
      if ((k >= 64 || (h >> k) & 1) && outs[k]->has_space()) return true;
    return false;
  }
  if (eos_out.load(std::memory_order_seq_cst)) return false;
  switch (spec.k) {
    case junction_spec::broadcast:
    case junction_spec::by_key: return ins[0]->has_data(drop);
    case junction_spec::round_robin:
    case junction_spec::least_loaded:
      if (!ins[0]->has_data(drop)) return false;
      for (channel* o : outs)
        if (o->has_space()) return true;
      return false;
    case junction_spec::merge:
    case junction_spec::zip:
    case junction_spec::join: break;
  }
  if (spec.k == junction_spec::merge && !outs[0]->has_space()) return false;
  const std::uint64_t r = readable.load(std::memory_order_seq_cst);
  for (std::size_t i = 0; i < ins.size(); ++i)
    if ((i >= 64 || (r >> i) & 1) && ins[i]->has_data(drop)) return true;
  return false;
}

stage_rt* junction_rt::activation() {
  st.activations.fetch_add(1, std::memory_order_relaxed);
  const std::uint64_t t0 = now_ns();
  st.end_wait(t0);
  stage_scope in_stage(&st);
  std::optional<trace::scope> traced;
  if (st.run->tr) [[unlikely]] traced.emplace(st.run->tr);
  const unsigned batch = st.run->g->opts.batch ? st.run->g->opts.batch : 1;
  unsigned budget = batch;
  std::uint64_t why = wait_input;
  for (;;) {
    if (held_mask.load(std::memory_order_relaxed) && !deliver()) {
      why = wait_output;
      break;
    }
    if (eos_out.load(std::memory_order_relaxed)) break;
    const progress p = take();
    if (p != took) {
      why = p == no_room ? wait_output : wait_input;
      break;
    }
    if (--budget == 0) {
      st.account(t0, batch);
      st.spawn();  // yield the worker, keep the slot
      for (channel* o : outs) o->consumer->notify();
      return nullptr;
    }
  }
  const std::uint64_t t1 = st.account(t0, batch - budget);
  if (!st.eos_seen.load(std::memory_order_relaxed)) st.idle_since.store(t1 | why, std::memory_order_relaxed);
  st.active.fetch_sub(1, std::memory_order_seq_cst);
  st.notify();  // work that arrived while we were leaving
  return leave();
}

stage_rt* junction_rt::leave() {
  for (channel* c : ins) {
    if (c->producer) c->producer->notify();
    else c->freed();  // a source thread, if it sleeps
  }
  stage_rt* next = nullptr;
  for (channel* c : outs) {
    if (!next && c->consumer->claim()) next = c->consumer;  // run it here, next
    else c->consumer->notify();
  }
  return next;
}

void junction_rt::push(std::size_t k, work_unit* u) {
  if (!u->end_of_stream()) ++sent[k];
  // As a stage's pass_on: a cheap junction leaves a serial consumer to its
  // leave(), which runs one of them on this worker and wakes the others.
  outs[k]->deliver(u, !st.cheap());
}

void junction_rt::hold(std::size_t k, work_unit* u) {
  held[k] = u;
  held_eos.store(u->end_of_stream(), std::memory_order_relaxed);
  held_mask.fetch_or(held_bit(k), std::memory_order_seq_cst);
}

bool junction_rt::deliver() {
  const bool drop = st.run->dropping();
  bool left = false;
  for (std::size_t k = 0; k < outs.size(); ++k) {
    work_unit* u = held[k];
    if (!u) continue;
    if (drop && !u->end_of_stream()) {
      st.run->release_unit(u);
    } else if (outs[k]->try_reserve()) {
      push(k, u);
    } else {
      left = true;
      continue;
    }
    held[k] = nullptr;
  }
  if (!left) held_mask.store(0, std::memory_order_seq_cst);
  else {
    std::uint64_t m = 0;
    for (std::size_t k = 0; k < outs.size(); ++k)
      if (held[k]) m |= held_bit(k);
    held_mask.store(m, std::memory_order_seq_cst);
  }
  return !left;
}

void junction_rt::end_outputs(work_unit* e) {
  st.eos_seen.store(true, std::memory_order_relaxed);
  for (std::size_t k = 0; k < outs.size(); ++k) {
    work_unit* c = k + 1 == outs.size() ? e : st.run->acquire_unit();
    if (c != e) *c = *e;
    c->set_seq(sent[k]);  // the data units that output got
    hold(k, c);
  }
  eos_out.store(true, std::memory_order_seq_cst);
}

void junction_rt::taken(const work_unit& u) {
  // Units only: their bytes would read every buffer's header, a line the
  // stage before wrote on another core, which nothing here needs.
  bump(st.units, 1, false);
  if (trace* tr = st.run->tr) [[unlikely]]
    tr->instant("junction", spec.path, now_ns(), {{"seq", u.seq()}, {"origin", u.origin()}});
}

bool junction_rt::drop_data(work_unit* u) {
  // A data unit taken while the run drops: released, not passed on.
  if (!st.run->dropping()) return false;
  st.run->release_unit(u);
  return true;
}

std::size_t junction_rt::pick_output() {
  const std::size_t n = outs.size();
  if (spec.k == junction_spec::least_loaded) {
    std::size_t best = n, best_size = std::numeric_limits<std::size_t>::max();
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t s = outs[k]->size_now();
      if (s < best_size && outs[k]->has_space()) best = k, best_size = s;
    }
    if (best < n && outs[best]->try_reserve()) return best;
  }
  for (std::size_t t = 0; t < n; ++t) {
    const std::size_t k = (next_out + t) % n;
    if (outs[k]->try_reserve()) {
      next_out = k + 1;
      return k;
    }
  }
  return n;
}

work_unit* junction_rt::pop_any(std::size_t& i) {
  const std::size_t n = ins.size();
  const bool drop = st.run->dropping();
  for (std::size_t t = 0; t < n; ++t) {
    i = (next_in + t) % n;
    if (ended[i] || (spec.k == junction_spec::zip && pending_in[i] >= window)) continue;
    work_unit* u;
    std::uint64_t ticket;
    if (ins[i]->try_pop(u, ticket, drop)) {
      next_in = i + 1;
      return u;
    }
  }
  return nullptr;
}

junction_rt::progress junction_rt::take() {
  run_state& run = *st.run;
  const bool drop = run.dropping();
  work_unit* u = nullptr;
  std::uint64_t ticket;
  switch (spec.k) {
    case junction_spec::broadcast:
    case junction_spec::by_key: {
      if (!ins[0]->try_pop(u, ticket, drop)) return no_input;
      if (u->end_of_stream()) {
        end_outputs(u);
        return took;
      }
      taken(*u);
      if (drop_data(u)) return took;
      if (spec.k == junction_spec::broadcast) {
        // Every output but the last gets a copy: the layers are copied, the
        // buffers shared (reference counts), never their data. The copies'
        // lines, which other cores wrote last, are all asked for before any
        // is written. Nothing is held (take() runs only then), and all are
        // published by one store: a locked update of held_mask per copy
        // would each wait for that copy's stores.
        assert(held_mask.load(std::memory_order_relaxed) == 0);
        const std::size_t n = outs.size();
        std::uint64_t m = held_bit(n - 1);
        for (std::size_t k = 0; k + 1 < n; ++k) {
          held[k] = run.acquire_unit();
          prefetch_for_write(held[k], sizeof(work_unit));
        }
        for (std::size_t k = 0; k + 1 < n; ++k) {
          *held[k] = *u;
          m |= held_bit(k);
        }
        held[n - 1] = u;
        held_eos.store(false, std::memory_order_relaxed);
        held_mask.store(m, std::memory_order_seq_cst);
        return took;
      }
      std::size_t k;
      try {
        k = std::size_t(spec.key(*u) % outs.size());
      } catch (...) {
        run.fail(spec.path, std::current_exception());
        run.release_unit(u);
        return took;
      }
      hold(k, u);
      return took;
    }
    case junction_spec::round_robin:
    case junction_spec::least_loaded: {
      const std::size_t k = pick_output();
      if (k == outs.size()) return no_room;
      if (!ins[0]->try_pop(u, ticket, drop)) {
        outs[k]->drop_reservation();
        return no_input;
      }
      if (u->end_of_stream()) {
        outs[k]->drop_reservation();
        end_outputs(u);
        return took;
      }
      taken(*u);
      if (drop_data(u)) {
        outs[k]->unreserve();
        return took;
      }
      push(k, u);
      return took;
    }
    case junction_spec::merge:
    case junction_spec::zip:
    case junction_spec::join: break;
  }
  if (drop && (!pending.empty() || !joining_by_key.empty())) release_pending();
  // A merge passes on every unit it takes: it reserves first, like a stage.
  // A zip or join passes on one unit for several: it reserves for the unit a
  // part completes, and holds that unit while the output is full.
  const bool merge = spec.k == junction_spec::merge;
  if (merge && !outs[0]->try_reserve()) return no_room;
  std::size_t i = 0;
  u = pop_any(i);
  // A zip fetches every line of a part that combine() will write while the
  // other parts arrive, each last written on the producer's core: the whole
  // of a part from inputs 1..n-1, which is cleared and released, and the
  // layer of input 0's, which receives their buffers (below: an end of
  // stream has none).
  if (u && i != 0 && spec.k == junction_spec::zip) prefetch_for_write(u, sizeof(work_unit));
  if (!u || u->end_of_stream()) {
    if (merge) outs[0]->drop_reservation();
    if (!u) return no_input;
    input_ended(i, u);
    return took;
  }
  taken(*u);
  if (drop_data(u)) {
    if (merge) outs[0]->unreserve();
    return took;
  }
  if (spec.k == junction_spec::zip) {
    if (i == 0) prefetch_for_write(&u->in(), sizeof(layer));
    u = add_part(i, u);
  } else if (spec.k == junction_spec::join) {
    u = join_part(i, u);
  }
  if (!u) return took;  // waits for its other parts (never a merge's)
  if (spec.k == junction_spec::join) {
    u->set_seq(emitted);
    u->set_origin(join_origin);
  }
  ++emitted;
  if (merge || outs[0]->try_reserve()) push(0, u);
  else hold(0, u);
  return took;
}

void junction_rt::input_ended(std::size_t i, work_unit* e) {
  ended[i] = true;
  ++ended_n;
  set_readable(i, false);
  if (spec.k == junction_spec::zip && !st.run->dropping()) {
    // What waits for a part of the input that ended can never be matched.
    for (auto& [seq, m] : pending)
      if (!m.parts[i]) {
        std::size_t j = 0;
        while (!m.parts[j]) ++j;
        st.run->fail(spec.path, std::make_exception_ptr(std::runtime_error(
                                    "unit " + std::to_string(seq) + " from input " + std::to_string(j) + " ('" +
                                    branch(j) + "') has no match: input " + std::to_string(i) + " ('" + branch(i) +
                                    "') ended after " + std::to_string(e->seq()) + " unit(s)")));
        break;
      }
  }
  if (spec.k == junction_spec::join && !st.run->dropping()) join_input_ended(i);
  if (ended_n < ins.size()) {
    st.run->release_unit(e);
    return;
  }
  release_pending();
  end_outputs(e);
}

}  // namespace sinew::detail
