// The `steal` policy's workers: where an idle worker finds a task (its own
// deque, the injection shards, other workers' deques), how it waits before
// parking, and its loop (steal_impl.hpp has the protocols).
#include "steal_impl.hpp"

namespace sinew {

steal_scheduler::impl::task* steal_scheduler::impl::find_work(worker& w, bool& contended, bool all_victims,
                                                            bool patient) {
  task* t = nullptr;
  if (++w.tick == inject_check_period) {
    w.tick = 0;
    if ((t = pop_injected(w, contended))) return t;
  }
  if (w.dq.pop(t)) return t;
  if ((t = pop_injected(w, contended))) return t;
  const unsigned n = threads;
  unsigned first = 1, last = n;
  if (!all_victims && n > 2) {
    if (++w.victim >= n) w.victim = 1;
    first = w.victim;
    last = first + 1;
  }
  for (unsigned k = first; k < last; ++k) {
    const unsigned vi = (w.index + k) % n;
    worker& v = *workers[vi];
    const std::size_t size = v.dq.size_approx();
    if (size == 0) continue;
    if (patient && size == 1) {
      const std::int64_t top = v.dq.top_approx();
      if (std::exchange(w.lone_top[vi], top) != top) {
        w.chain_seen = true;
        continue;
      }
    }
    w.steal_attempts.fetch_add(1, std::memory_order_relaxed);
    auto r = v.dq.steal(t);
    if (r == detail::chase_lev_deque<task*>::steal_result::success) {
      (v.node != w.node ? w.steals_remote : w.steals_same).fetch_add(1, std::memory_order_relaxed);
      if (trace::active()) [[unlikely]]  // a traced run is live (docs/observability.md)
        trace::emit_instant("steal", "steal", trace::now_ns(), {{"from", v.index}, {"to", w.index}});
      return t;
    }
    if (r == detail::chase_lev_deque<task*>::steal_result::lost_race) contended = true;
  }
  return nullptr;
}

void steal_scheduler::impl::run_task(worker& w, task* t) noexcept {
  if (workers::run_task(w, t, tl_cache, [this](worker& x, task* y) { run_block(x, y); }))
    announce_loop_done();  // a group's last task: its waiter may sleep on loop_epoch
}

void steal_scheduler::impl::run_block(worker& w, task* t) noexcept {
  const bool last = workers::run_blocks(
      w, t,
      [](loop_ctx* L, std::size_t b, std::size_t e) {
        task* r = tl_cache.get();
        r->loop = L;
        r->b = b;
        r->e = e;
        return r;
      },
      [](task* x) { tl_cache.put(x); });
  if (last) announce_loop_done();  // the loop may be gone now
}

void steal_scheduler::impl::idle_round(worker& w, unsigned& idle) noexcept {
  if (idle == 0) w.chain_looks = 0;
  if (std::exchange(w.chain_seen, false)) ++w.chain_looks;
  if (w.chain_looks < calm_after) {
    w.calm_ns = calm_min_ns;
  } else {
    std::uint64_t now = now_ns();
    const std::uint64_t end = now + w.calm_ns;
    std::uint64_t next_look = now + calm_poll_ns;
    while (now < end && !injected_visible()) {
      if (now >= next_look) {
        if (queued_visible(w)) break;
        next_look = now + calm_poll_ns;
      }
      for (int i = 0; i < 8; ++i) cpu_relax();
      now = now_ns();
    }
    w.calm_ns = std::min(2 * w.calm_ns, calm_max_ns);
  }
  idle_backoff(idle++);
}

void steal_scheduler::impl::worker_main(worker& w) {
  tl_worker = &w;
  workers::setup_thread("steal", w.index, pin ? w.cpu : -1);
  unsigned idle = 0;
  for (;;) {
    bool contended = false;
    if (task* t = find_work(w, contended, idle < full_scan_rounds, true)) {
      found_while_searching(w);
      run_task(w, t);
      idle = 0;
      continue;
    }
    if (contended) continue;
    w.busy_end();
    lot.start_searching(w.park);
    if (idle < spin_rounds) {
      idle_round(w, idle);
      continue;
    }
    // Park (protocol above).
    lot.prepare_park(w.park);
    detail::seq_cst_fence();
    task* t = find_work(w, contended);
    if (t || contended || stopping.load(std::memory_order_seq_cst)) {
      const bool popped = lot.cancel_park(w.park);  // popped meanwhile: a counted searcher
      if (t) {
        // Leaving searching in prepare_park may have made W the last
        // searcher: more visible work gets a worker of its own.
        if (popped) found_while_searching(w);
        else if (work_visible(w)) announce_work();
        run_task(w, t);
        idle = 0;
        continue;
      }
      if (contended) continue;
      lot.stop_searching(w.park);
      break;  // stopping, and nothing left anywhere this worker could see
    }
    lot.park(w.park);
    idle = 0;  // woken: a counted searcher
  }
  tl_worker = nullptr;
}

}  // namespace sinew
