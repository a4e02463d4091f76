#pragma once
// The counters behind `scheduler::stats()` of steal and deal: per worker
// and for the scheduler as a whole.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>

#include <sinew/schedulers/scheduler.hpp>

#include "loop_ctx.hpp"
#include "tick_clock.hpp"

namespace sinew::detail::workers {

// Counters of one worker: written by it, read and reset by anyone. Busy
// time is counted by spells: one starts when the worker runs a task while
// idle and ends when it next looks for work in vain, so a worker running
// task after task reads the clock (tick_clock.hpp) twice per spell, not
// per task.
//
//   struct worker : worker_counters { ... };
//   worker_counters::add(w.tasks, 1);         // on w's own thread
//   w.busy_begin(); run(t); ...; if (!find_work()) w.busy_end();
//   w.count_bytes(t->D, t->total, w.node);   // a hinted task ran on w
struct worker_counters {
  alignas(64) std::atomic<std::uint64_t> tasks{0}, busy{0}, steals_same{0}, steals_remote{0},
      steal_attempts{0}, hinted_bytes{0}, remote_bytes{0}, fn_run{0}, submitted{0};
  std::atomic<std::uint64_t> spell{0};  // ticks at the open spell's start; 0: idle

  // Adds v to a counter of the calling worker's: only it writes the counter,
  // so a load and a store do, without a locked instruction per task (a
  // reset_stats concurrent with running tasks may be undone by it).
  static void add(std::atomic<std::uint64_t>& c, std::uint64_t v,
                  std::memory_order mo = std::memory_order_relaxed) noexcept {
    c.store(c.load(std::memory_order_relaxed) + v, mo);
  }
  void busy_begin() noexcept {
    if (spell.load(std::memory_order_relaxed) == 0) spell.store(ticks() | 1, std::memory_order_relaxed);
  }
  void busy_end() noexcept {
    if (const std::uint64_t s = spell.load(std::memory_order_relaxed)) {
      add(busy, ticks() - s);
      spell.store(0, std::memory_order_relaxed);
    }
  }
  // A task with D (sum `total`) ran on `node`: what it read, and from afar.
  void count_bytes(std::span<const std::uint64_t> D, std::uint64_t total, int node) noexcept {
    add(hinted_bytes, total);
    add(remote_bytes, total - D[std::size_t(node)]);
  }
  // Block [b, e) of a hinted loop ran on `node`: its share of the loop's D.
  void count_block(const loop_ctx& L, std::size_t b, std::size_t e, int node) noexcept {
    if (L.total == 0) return;
    using u128 = unsigned __int128;
    const auto share = [&](std::uint64_t x) { return std::uint64_t(u128(x) * (e - b) / L.n); };
    const std::uint64_t h = share(L.total);
    add(hinted_bytes, h);
    add(remote_bytes, h - std::min(h, share(L.D[std::size_t(node)])));
  }
  scheduler_stats::worker read(int node, const tick_rate& rate) const noexcept {
    scheduler_stats::worker x;
    x.tasks = tasks.load(std::memory_order_relaxed);
    const std::uint64_t s = spell.load(std::memory_order_relaxed);  // an open spell counts so far
    x.busy_ns = rate.to_ns(busy.load(std::memory_order_relaxed) + (s && rate.at > s ? rate.at - s : 0));
    x.steals_same_node = steals_same.load(std::memory_order_relaxed);
    x.steals_remote = steals_remote.load(std::memory_order_relaxed);
    x.steals = x.steals_same_node + x.steals_remote;
    x.steal_attempts = steal_attempts.load(std::memory_order_relaxed);
    x.node = node;
    x.hinted_bytes = hinted_bytes.load(std::memory_order_relaxed);
    x.remote_bytes = remote_bytes.load(std::memory_order_relaxed);
    return x;
  }
  void reset() noexcept {
    for (auto* a : {&tasks, &busy, &steals_same, &steals_remote, &steal_attempts, &hinted_bytes, &remote_bytes,
                    &fn_run, &submitted})
      a->store(0, std::memory_order_relaxed);
  }
};

// Counts one on worker w's own counter `field` (owner-only, as `add`), or,
// for an outside thread (w null), on the counter they share.
//
//   count_one(w, &worker::submitted, sc.ext_submitted);
template <class W, class Field>
void count_one(W* w, Field field, std::atomic<std::uint64_t>& shared) noexcept {
  if (w) W::add(w->*field, 1);
  else shared.fetch_add(1, std::memory_order_relaxed);
}

// Counters of the scheduler as a whole.
struct scheduler_counters {
  alignas(64) std::atomic<std::uint64_t> ext_submitted{0}, pfors{0}, pfors_inline{0}, wakeups{0};

  void count_wakes(int k) noexcept {
    if (k > 0) wakeups.fetch_add(std::uint64_t(k), std::memory_order_relaxed);
  }
  // stats() of a scheduler whose workers (pointers to a type derived from
  // worker_counters, with a `node`) are `ws`.
  template <class Workers>
  scheduler_stats read(const Workers& ws) const {
    scheduler_stats s;
    s.tasks_submitted = ext_submitted.load(std::memory_order_relaxed);
    s.parallel_fors = pfors.load(std::memory_order_relaxed);
    s.parallel_fors_inline = pfors_inline.load(std::memory_order_relaxed);
    s.wakeups = wakeups.load(std::memory_order_relaxed);
    s.workers.reserve(ws.size());
    const tick_rate rate = tick_rate::now();
    for (const auto& w : ws) {
      s.tasks_submitted += w->submitted.load(std::memory_order_relaxed);
      s.tasks_run += w->fn_run.load(std::memory_order_acquire);
      s.workers.push_back(w->read(w->node, rate));
    }
    return s;
  }
  template <class Workers>
  void reset(Workers& ws) noexcept {
    for (auto* a : {&ext_submitted, &pfors, &pfors_inline, &wakeups}) a->store(0, std::memory_order_relaxed);
    for (auto& w : ws) w->reset();
  }
};

}  // namespace sinew::detail::workers
