// The `deal` policy's workers: their loop, Algorithm 2's exponential
// back-off [Muddukrishna15, Algorithm 2], parking per node, and the
// wake-ups a push sends.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <thread>

#include <sinew/detail/clock.hpp>
#include <sinew/detail/fence.hpp>
#include <sinew/detail/futex.hpp>

#include "deal_impl.hpp"
#include "workers/map_dispatch.hpp"
#include "workers/run_task.hpp"
#include "workers/worker_thread.hpp"

namespace sinew {

namespace {
using detail::now_ns;
using detail::futex_wait;
using detail::futex_wake;
using detail::deal::tl_cache;
using task = deal_scheduler::impl::task;
using loop_ctx = detail::workers::loop_ctx;
}  // namespace

// ------------------------------------------------------------ sleep protocol
//
// The protocol of workers::parking_lot (workers/parking_lot.hpp), per node:
// a worker of node n that finds no work searches (counted in nodes[n].lot)
// through Algorithm 2's exponential back-off, then registers as parked,
// fences, looks once more (own queue, the deques of its node, the steals
// Algorithm 2 allows) and parks on its own word only if it found nothing.
// A push to node q (P1, under q's lock, size updated) fences (P2) and wakes
// one parked worker of q unless one of q's workers is searching (P3). The
// parking lot's argument applies per node: a task pushed to q is seen by a
// searcher of q, by a worker of q that parks later, or is followed by a
// wake of a parked worker of q, and every worker of q may take it. So a
// task is never stranded while q has an idle worker; when q has none, q's
// workers are running tasks and look at q's queue again before they park.
//
// Load balance on top of that: when q has neither a parked nor a searching
// worker, the push wakes one parked worker of the nearest node whose
// workers Algorithm 2 now lets steal from q (queue length above their
// threshold). That wake is only an optimisation: liveness does not depend
// on it.
//
// Shutdown: `stopping` is set, every node's parked workers are woken.
// While stopping, a worker may take from any queue (no threshold, no
// vicinity), never parks, and leaves only when it sees every queue empty,
// so the last worker running drains whatever the running tasks still push.
//
// Workers waiting inside parallel_for or task_group::wait sleep on their
// node's loop_epoch, registered in loop_waiters; a finished loop or group
// wakes all loop waiters of every node; a push to q that finds no parked
// and no searching worker of q wakes one loop waiter of q so it can help.
// Outside threads waiting for an injected parallel_for use ext_waiters /
// ext_epoch.

void deal_scheduler::impl::announce_work(int q) noexcept {
  node_queue& Q = *nodes[std::size_t(q)];
  detail::seq_cst_fence();  // P2
  if (const int k = Q.lot.wake_one()) {  // P3
    sc.count_wakes(k);
    return;
  }
  if (Q.lot.searching() != 0) return;
  if (Q.loop_waiters.load(std::memory_order_relaxed) != 0) {
    Q.loop_epoch.fetch_add(1, std::memory_order_seq_cst);
    futex_wake(Q.loop_epoch, 1);
    return;
  }
  // Nearest node (in q's vicinity) whose workers may steal from q now.
  const std::size_t len = Q.steal_order.empty() ? 0 : Q.length();
  for (int n : Q.steal_order) {
    if (!may_steal(n, q, len)) continue;
    if (const int k = nodes[std::size_t(n)]->lot.wake_one()) {
      sc.count_wakes(k);
      return;
    }
  }
}

// Map dispatch: `m` tasks were pushed to q at once. Up to m parked workers
// of q are woken, less those of q searching; with none parked there, the
// single-push rule applies (a loop waiter of q, or a near node the
// threshold lets steal).
void deal_scheduler::impl::announce_work_n(int q, std::size_t m) noexcept {
  node_queue& Q = *nodes[std::size_t(q)];
  detail::seq_cst_fence();  // P2
  if (const int k = Q.lot.wake_n(m)) {
    sc.count_wakes(k);
    return;
  }
  announce_work(q);
}

// W found work while searching: if it was its node's last searcher and
// more work is visible to the node, another worker is woken for it.
void deal_scheduler::impl::found_while_searching(worker& w) noexcept {
  node_queue& Q = *nodes[std::size_t(w.node)];
  if (Q.lot.stop_searching(w.park) && work_visible(w)) announce_work(w.node);
}

void deal_scheduler::impl::announce_loop_done() noexcept {
  detail::seq_cst_fence();
  for (auto& Q : nodes)
    if (Q->loop_waiters.load(std::memory_order_relaxed) != 0) {
      Q->loop_epoch.fetch_add(1, std::memory_order_seq_cst);
      futex_wake(Q->loop_epoch, INT_MAX);
    }
  if (ext_waiters.load(std::memory_order_relaxed) != 0) {
    ext_epoch.fetch_add(1, std::memory_order_seq_cst);
    futex_wake(ext_epoch, INT_MAX);
  }
}

void deal_scheduler::impl::wake_all() noexcept {
  for (auto& Q : nodes) {
    Q->lot.wake_all();
    Q->loop_epoch.fetch_add(1, std::memory_order_seq_cst);
    futex_wake(Q->loop_epoch, INT_MAX);
  }
}

// ------------------------------------------------------------ running

void deal_scheduler::impl::run_task(worker& w, task* t) noexcept {
  if (detail::workers::run_task(w, t, tl_cache, [this](worker& x, task* y) { run_block(x, y); }))
    announce_loop_done();  // a group's last task: its waiter may sleep on loop_epoch
}

// A block of a parallel_for (workers::run_blocks): halves go to this
// worker's deque, where its node's other workers may steal them. As in
// `steal`, the halves wake no one: the dispatch woke the workers the loop
// can use, and a worker looks at its queue before it parks.
void deal_scheduler::impl::run_block(worker& w, task* t) noexcept {
  const int me = int(w.index);
  const bool last = detail::workers::run_blocks(
      w, t,
      [me](loop_ctx* L, std::size_t b, std::size_t e) {
        task* r = tl_cache.get();
        r->loop = L;
        r->b = b;
        r->e = e;
        r->submitter = me;
        return r;
      },
      [](task* x) { tl_cache.put(x); });
  if (last) announce_loop_done();  // the loop may be gone now
}

// ------------------------------------------------------------ waiting

// Back-off step `d` (ns) of worker w: up to 2 us it spins, longer it yields
// the core between looks, at most one look per backoff_poll (a look reads
// every shard's size, which each push writes); either way it ends once a
// look finds a task in w's node queue. It waits awake because a push wakes
// only futex sleepers, and watches only the node queue, not the node's
// deques, so idle workers do not race a deque's owner for each task it
// pushes.
void deal_scheduler::impl::backoff_wait(const worker& w, std::uint64_t d) const noexcept {
  const node_queue& Q = *nodes[std::size_t(w.node)];
  const std::uint64_t start = now_ns(), end = start + d;
  const bool spin = d <= 2'000;
  // Yielding, look at most every backoff_poll (the first look at once).
  const std::uint64_t gap = spin ? 0 : std::uint64_t(opt.backoff_poll.count());
  std::uint64_t now = start, next_look = start;
  do {
    if (now >= next_look) {
      if (Q.has_work()) return;
      next_look = now + gap;
    }
    if (spin) {
      for (int i = 0; i < 8; ++i) detail::cpu_relax();
    } else {
      std::this_thread::yield();
    }
    now = now_ns();
  } while (now < end);
}

void deal_scheduler::impl::worker_main(worker& w) {
  tl_worker = &w;
  detail::workers::setup_thread("deal", w.index, opt.pin && !topo.synthetic() ? w.cpu : -1);
  node_queue& Q = *nodes[std::size_t(w.node)];
  std::uint64_t d = bmin();
  for (;;) {
    bool contended = false;
    if (task* t = find_work(w, contended)) {
      found_while_searching(w);
      run_task(w, t);
      d = bmin();
      continue;
    }
    if (contended) continue;
    w.busy_end();
    Q.lot.start_searching(w.park);
    if (d <= bmax() && !stopping.load(std::memory_order_relaxed)) {
      backoff_wait(w, d);  // exponential back-off of Algorithm 2
      d *= 2;
      continue;
    }
    // Park (protocol above).
    Q.lot.prepare_park(w.park);
    detail::seq_cst_fence();
    task* t = find_work(w, contended);
    const bool stopping_now = stopping.load(std::memory_order_seq_cst);
    if (t || contended || stopping_now) {
      const bool popped = Q.lot.cancel_park(w.park);  // popped meanwhile: a counted searcher
      if (t) {
        // Leaving searching in prepare_park may have made W its node's
        // last searcher: more visible work gets a worker of its own.
        if (popped) found_while_searching(w);
        else if (work_visible(w)) announce_work(w.node);
        run_task(w, t);
        d = bmin();
        continue;
      }
      if (contended) continue;
      // Stopping: never park (the destructor's wake came once); leave
      // when every queue is empty, else look again.
      if (all_empty()) {
        Q.lot.stop_searching(w.park);
        break;
      }
      std::this_thread::yield();
      continue;
    }
    Q.lot.park(w.park);
    d = bmin();  // woken: a counted searcher
  }
  tl_worker = nullptr;
}

}  // namespace sinew
