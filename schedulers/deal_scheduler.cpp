// The `deal` policy: one FIFO queue per NUMA node, Algorithm 1 (deal-work)
// at submit, Algorithm 2 (find-work) with its distance threshold and an
// exponential back-off, futex sleep per node when idle. See
// deal_scheduler.hpp for the policy and the paper; this file's comments
// cover the concurrency protocols (which follow steal_scheduler.cpp's).
#include <sinew/schedulers/scheduler_registry.hpp>
#include <sinew/schedulers/deal_scheduler.hpp>
#include <sinew/engine/trace.hpp>

#include "locality.hpp"
#include "worker_common.hpp"
#include <sinew/detail/chase_lev_deque.hpp>
#include <sinew/detail/clock.hpp>
#include <sinew/detail/fence.hpp>
#include <sinew/engine/error.hpp>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdio>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace sinew {

namespace {

using detail::now_ns;
namespace workers = detail::workers;
using workers::cpu_relax;
using workers::futex_wait;
using workers::futex_wake;
using workers::loop_ctx;


// A task: a submitted function, or a block [b, e) of a parallel_for.
struct task : workers::scalable_new {
  task* next_free = nullptr;
  loop_ctx* loop = nullptr;  // null: a submitted function
  std::size_t b = 0, e = 0;
  int submitter = -1;          // index of the enqueuing worker, -1: outside thread
  std::uint64_t total = 0;     // sum(D); 0: no D
  std::vector<std::uint64_t> D;  // bytes on each node (when total > 0)
  std::function<void()> fn;
  detail::task_counter* counter = nullptr;  // a task_group's task: counted there when it ends
  void recycle() noexcept {
    loop = nullptr;
    counter = nullptr;
    total = 0;
    D.clear();  // keeps the capacity for the next task with a D
  }
};

thread_local workers::task_cache<task> tl_cache;

using u128 = unsigned __int128;

}  // namespace

struct deal_scheduler::impl {
  using shard = workers::task_shard<task>;  // of a node's queue (see node_queue)

  // One node: its queue and its workers' sleep words. The queue Algorithms
  // 1 and 2 speak of is one FIFO per node; it is kept as one locked shard per
  // worker of the node, so that a thread pushing a burst (an outside
  // thread's task_group, a map's segments) meets at most one worker on each
  // lock instead of all of them on one. (One lock per node cost the one-node
  // 16-core machine ~5% on mir_suite's Reduction, whose 2,047 tasks an
  // outside thread submits one by one; a shared length counter that every
  // push incremented, ~9%: idle workers read it in their back-off, so each
  // push waited for its cache line.) Pushes go round-robin over the shards
  // (a worker's own pushes to its node: its own shard); a take starts at the
  // taker's shard; each shard is FIFO, the node's queue as a whole nearly so.
  // Algorithm 2's threshold reads the queue's length as the sum of the
  // shards' sizes.
  struct alignas(64) node_queue {
    std::vector<std::unique_ptr<shard>> shards;  // one per worker of the node (at least one)
    // The queue's length: the sum of the shards' (no lock; exact when no
    // push or take runs meanwhile).
    std::size_t length(std::memory_order o = std::memory_order_relaxed) const noexcept {
      std::size_t n = 0;
      for (const auto& sh : shards) n += sh->size.load(o);
      return n;
    }
    // Whether a shard holds a task (stops at the first that does).
    bool has_work(std::memory_order o = std::memory_order_relaxed) const noexcept {
      for (const auto& sh : shards)
        if (sh->size.load(o) != 0) return true;
      return false;
    }
    workers::parking_lot lot;  // the node's searching and parked workers
    alignas(64) std::atomic<std::uint32_t> loop_waiters{0};  // workers sleeping in parallel_for
    alignas(64) std::atomic<std::uint32_t> loop_epoch{0};    // their futex word
    std::vector<int> steal_order;  // other nodes of the vicinity, nearest first
    std::vector<unsigned> members; // its workers
    std::vector<std::size_t> threshold;  // by victim node: distance(victim, this) * C
    // Counters of submits made on this node (outside threads: node 0's row),
    // by target node; deal_stats() sums the rows.
    std::unique_ptr<std::atomic<std::uint64_t>[]> dealt, directed;
  };

  struct alignas(64) worker : workers::worker_counters {
    // The halves of the parallel_for blocks this worker splits, and on a
    // one-node topology the tasks it submits: a Chase-Lev deque as in
    // `steal`, which only workers of its node take from. (The node queue
    // for every task cost the 16-core one-node machine 10x on map_dispatch
    // and spawn trees; the node queues keep what Algorithms 1 and 2 are
    // about: dealt tasks and what other nodes may steal.)
    detail::chase_lev_deque<task*> dq;
    std::thread th;
    unsigned index = 0;
    unsigned rank = 0;  // position among its node's workers
    int node = 0;
    int cpu = -1;
    impl* owner = nullptr;
    unsigned depth = 0;  // owner only: tasks on this thread's stack (> 1: helping)
    workers::parking_lot::parker park;  // in its node's lot
    alignas(64) std::atomic<std::uint64_t> refused{0}, kept_local{0};
  };

  impl(const topology& t, deal_options o) : topo(t), opt(std::move(o)) {}

  topology topo;
  deal_options opt;
  std::size_t N = 0, C = 0;
  std::uint64_t size_threshold = 0;
  std::vector<int> group;  // vicinity id of each node
  std::vector<std::unique_ptr<node_queue>> nodes;
  std::vector<std::unique_ptr<worker>> workers;

  alignas(64) std::atomic<std::uint32_t> ext_waiters{0};  // outside threads in parallel_for
  alignas(64) std::atomic<std::uint32_t> ext_epoch{0};
  alignas(64) std::atomic<bool> stopping{false};
  alignas(64) std::atomic<std::uint64_t> rr{0};  // round-robin node of outside threads
  std::atomic<std::uint64_t> ext_kept_local{0};
  workers::scheduler_counters sc;

  static thread_local worker* tl_worker;

  worker* me() const noexcept {
    worker* w = tl_worker;
    return (w && w->owner == this) ? w : nullptr;
  }

  int outside_node() noexcept { return N == 1 ? 0 : int(rr.fetch_add(1, std::memory_order_relaxed) % N); }

  // ------------------------------------------------------------ decisions

  bool deals(std::span<const std::uint64_t> D) const noexcept {
    u128 sum = 0;
    std::uint64_t lo = UINT64_MAX, hi = 0;
    for (auto d : D) {
      sum += d;
      lo = std::min(lo, d);
      hi = std::max(hi, d);
    }
    if (sum <= u128(size_threshold)) return false;  // Sum(D) > sizeof(LLC)/C fails
    // Evenly spread: max - min <= tolerance * sum (tolerance 0: all equal,
    // i.e. Standard_Deviation(D) == 0).
    if (opt.spread_tolerance <= 0.0) return hi != lo;
    return double(hi - lo) > opt.spread_tolerance * double(sum);
  }

  int argmin_cost(std::span<const std::uint64_t> D, int local) const {
    return detail::cheapest_node(topo, D, local);
  }

  int choose(std::span<const std::uint64_t> D, int local) const {
    return deals(D) ? argmin_cost(D, local) : local;
  }

  bool may_steal(int thief, int victim, std::size_t len) const noexcept {
    if (thief == victim) return len > 0;
    if (group[std::size_t(thief)] != group[std::size_t(victim)]) return false;
    return len > nodes[std::size_t(thief)]->threshold[std::size_t(victim)];
  }

  // ------------------------------------------------------------ sleep protocol
  //
  // The protocol of steal_scheduler.cpp (workers::parking_lot), per node: a
  // worker of node n that finds no work searches (counted in nodes[n].lot)
  // through Algorithm 2's exponential back-off, then registers as parked,
  // fences, looks once more (own queue, the deques of its node, the steals
  // Algorithm 2 allows) and parks on its own word only if it found nothing.
  // A push to node q (P1, under q's lock, size updated) fences (P2) and
  // wakes one parked worker of q unless one of q's workers is searching
  // (P3). The argument of worker_common.hpp applies per node: a task pushed
  // to q is seen by a searcher of q, by a worker of q that parks later, or
  // is followed by a wake of a parked worker of q, and every worker of q may
  // take it. So a task is never stranded while q has an idle worker; when q
  // has none, q's workers are running tasks and look at q's queue again
  // before they park.
  //
  // Load balance on top of that: when q has neither a parked nor a
  // searching worker, the push wakes one parked worker of the nearest node
  // whose workers Algorithm 2 now lets steal from q (queue length above
  // their threshold). That wake is only an optimisation: liveness does not
  // depend on it.
  //
  // Shutdown: `stopping` is set, every node's parked workers are woken.
  // While stopping, a worker may take from any queue (no threshold, no
  // vicinity), never parks, and leaves only when it sees every queue empty,
  // so the last worker running drains whatever the running tasks still push.
  //
  // Workers waiting inside parallel_for sleep on their node's loop_epoch,
  // registered in loop_waiters; a finished loop wakes all loop waiters of
  // every node; a push to q that finds no parked and no searching worker of
  // q wakes one loop waiter of q so it can help. Outside threads waiting
  // for an injected parallel_for use ext_waiters / ext_epoch.

  void announce_work(int q) noexcept {
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

  // Map dispatch: `m` tasks were pushed to q at once (queue length `len`).
  // Up to m parked workers of q are woken, less those of q searching; with
  // none parked there, the single-push rule applies (a loop waiter of q, or
  // a near node the threshold lets steal).
  void announce_work_n(int q, std::size_t m) noexcept {
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
  void found_while_searching(worker& w) noexcept {
    node_queue& Q = *nodes[std::size_t(w.node)];
    if (Q.lot.stop_searching(w.park) && work_visible(w))
      announce_work(w.node);
  }

  // Pushes tasks [first, last) to q, the i-th to shard i: each woken worker
  // of q finds one in its own shard.
  void push_all(int q, task* const* first, task* const* last) {
    node_queue& Q = *nodes[std::size_t(q)];
    const std::size_t S = Q.shards.size();
    for (std::size_t i = 0; first != last; ++first, ++i) Q.shards[i % S]->push(*first);
  }

  void announce_loop_done() noexcept {
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

  void wake_all() noexcept {
    for (auto& Q : nodes) {
      Q->lot.wake_all();
      Q->loop_epoch.fetch_add(1, std::memory_order_seq_cst);
      futex_wake(Q->loop_epoch, INT_MAX);
    }
  }

  // ------------------------------------------------------------ queues

  // Enqueues t on q (w: the pushing worker, or null): w's own shard when q
  // is w's node, else the next shard of this thread's round-robin.
  void enqueue(int q, task* t, const worker* w) {
    node_queue& Q = *nodes[std::size_t(q)];
    thread_local unsigned next = unsigned(std::hash<std::thread::id>{}(std::this_thread::get_id()));
    const std::size_t k = w && w->node == q ? w->rank : next++;
    Q.shards[k % Q.shards.size()]->push(t);
  }

  void push(int q, task* t, const worker* w) {
    enqueue(q, t, w);
    announce_work(q);
  }

  // Takes the oldest task of a shard of node v's queue, the shards looked at
  // from `first` on; with `share`, also half the rest of that shard onto
  // share's deque, where the node's other workers may steal them
  // (workers::task_shard::try_take). A worker never waits for a lock: a
  // shard whose lock is taken is skipped and reported as `contended`.
  // (Algorithm 2's threshold is the caller's, on the length it read.)
  task* take(int v, std::size_t first, bool& contended, worker* share = nullptr) {
    node_queue& Q = *nodes[std::size_t(v)];
    const std::size_t S = Q.shards.size();
    auto* dq = share ? &share->dq : nullptr;
    for (std::size_t j = 0; j < S; ++j) {
      shard& sh = *Q.shards[(first + j) % S];
      if (sh.size.load(std::memory_order_relaxed) == 0) continue;
      if (task* t = sh.try_take(dq, contended)) return t;
    }
    return nullptr;
  }

  // Algorithm 2 for worker w. `contended`: a queue that looked stealable
  // was not any more when locked (someone else took from it: look again).
  task* find_work(worker& w, bool& contended) {
    const int n = w.node;
    node_queue& own = *nodes[std::size_t(n)];
    task* t = nullptr;
    if (w.dq.pop(t)) return t;
    if (own.has_work())
      // One node: with a share onto w's deque (nothing to deal or steal
      // across nodes); else one task, the rest stays where other nodes'
      // workers may steal it.
      if (task* x = take(n, w.rank, contended, N == 1 ? &w : nullptr)) {
        if (x->submitter >= 0 && x->submitter != int(w.index) &&
            workers[std::size_t(x->submitter)]->node == n)
          w.steals_same.fetch_add(1, std::memory_order_relaxed);
        return x;
      }
    // The deques of the node's other workers, round-robin after w.
    const std::size_t m = own.members.size();
    for (std::size_t k = 1; k < m; ++k) {
      worker& v = *workers[own.members[(w.rank + k) % m]];
      if (v.dq.empty_approx()) continue;
      auto r = v.dq.steal(t);
      if (r == detail::chase_lev_deque<task*>::steal_result::success) {
        w.steals_same.fetch_add(1, std::memory_order_relaxed);
        return t;
      }
      if (r == detail::chase_lev_deque<task*>::steal_result::lost_race) contended = true;
    }
    const bool drain = stopping.load(std::memory_order_relaxed);
    if (drain) {
      for (std::size_t v = 0; v < N; ++v)
        if (nodes[v]->has_work())
          if (task* x = take(int(v), w.index, contended)) return x;
      for (auto& v : workers)
        if (!v->dq.empty_approx() && v->dq.steal(t) == detail::chase_lev_deque<task*>::steal_result::success)
          return t;
      return nullptr;
    }
    for (int v : own.steal_order) {
      std::size_t len = nodes[std::size_t(v)]->length();
      if (len == 0) continue;
      w.steal_attempts.fetch_add(1, std::memory_order_relaxed);
      if (!may_steal(n, v, len)) {
        w.refused.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      if (task* x = take(v, w.index, contended)) {
        w.steals_remote.fetch_add(1, std::memory_order_relaxed);
        if (trace::active()) [[unlikely]]  // a traced run is live (docs/observability.md)
          trace::emit_instant("steal", "steal", trace::now_ns(), {{"from_node", v}, {"to", w.index}});
        return x;  // ONE task, then back to the own queue
      }
      contended = true;
    }
    return nullptr;
  }

  // Whether any queue w may take from looks non-empty (a loop waiter's
  // re-check; takes nothing).
  bool work_visible(const worker& w) const noexcept {
    const int n = w.node;
    if (nodes[std::size_t(n)]->has_work()) return true;
    for (unsigned k : nodes[std::size_t(n)]->members)
      if (!workers[k]->dq.empty_approx()) return true;
    const bool drain = stopping.load(std::memory_order_relaxed);
    for (std::size_t v = 0; v < N; ++v) {
      std::size_t len = nodes[v]->length();
      if (len != 0 && (drain || may_steal(n, int(v), len))) return true;
    }
    return false;
  }

  // ------------------------------------------------------------ running

  void run_task(worker& w, task* t) noexcept {
    workers::run_task(w, t, tl_cache, [this](worker& x, task* y) { run_block(x, y); });
  }


  // A block of a parallel_for (workers::run_blocks): halves go to this
  // worker's deque, where its node's other workers may steal them. As in
  // `steal`, the halves wake no one: the dispatch woke the workers the loop
  // can use, and a worker looks at its queue before it parks.
  void run_block(worker& w, task* t) noexcept {
    const int me = int(w.index);
    const bool last = workers::run_blocks(
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

  // Exponential back-off step `d` (ns) of worker w: up to 2 us it spins,
  // longer it yields the core between looks, at most one look per
  // backoff_poll (a look reads every shard's size, which each push writes:
  // looking after every yield slowed a submitting thread's pushes, 16-core
  // Reduction 0.95 against 0.97-0.99); either way it ends once a look finds
  // a task in a shard of w's node queue. (A timed sleep here cost the
  // one-node 16-core machine a quarter of mir_suite's map: sleep_for(4 us)
  // sleeps ~60 us, and a push wakes only futex sleepers. Also ending it
  // when a deque of the node holds a task, and retrying a step cut short
  // rather than doubling it, cost sched_spawn's chain 3-5x there: idle
  // workers raced the owner for each task of the chain;
  // bench/results/2026-11-24-16core-deal-ab/.)
  void backoff_wait(const worker& w, std::uint64_t d) const noexcept {
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
        for (int i = 0; i < 8; ++i) cpu_relax();
      } else {
        std::this_thread::yield();
      }
      now = now_ns();
    } while (now < end);
  }

  std::uint64_t bmin() const noexcept { return std::uint64_t(std::max<std::int64_t>(1, opt.backoff_min.count())); }
  std::uint64_t bmax() const noexcept {
    return std::max(bmin(), std::uint64_t(std::max<std::int64_t>(1, opt.backoff_max.count())));
  }

  // A worker waits for its loop: it runs whatever it can find meanwhile.
  void help_until_done(worker& w, loop_ctx& L) {
    node_queue& Q = *nodes[std::size_t(w.node)];
    std::uint64_t d = bmin();
    while (L.remaining.load(std::memory_order_acquire) != 0) {
      bool contended = false;
      if (task* t = find_work(w, contended)) {
        run_task(w, t);
        d = bmin();
        continue;
      }
      if (contended) continue;
      if (d <= bmax()) {
        // Short waits only: the loop may end any moment (and no wake comes
        // during a timed back-off).
        if (d <= 2'000) backoff_wait(w, d);
        else std::this_thread::yield();
        d *= 2;
        continue;
      }
      Q.loop_waiters.fetch_add(1, std::memory_order_seq_cst);
      detail::seq_cst_fence();
      std::uint32_t e = Q.loop_epoch.load(std::memory_order_seq_cst);
      if (L.remaining.load(std::memory_order_seq_cst) != 0 && !work_visible(w))
        futex_wait(Q.loop_epoch, e);
      Q.loop_waiters.fetch_sub(1, std::memory_order_seq_cst);
      d = bmax() * 2;  // woken: look once, then sleep again
    }
  }

  void worker_main(worker& w) {
    tl_worker = &w;
#if defined(__linux__)
    if (opt.pin && !topo.synthetic() && w.cpu >= 0 && w.cpu < CPU_SETSIZE) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(w.cpu, &set);
      (void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);  // failures ignored
    }
    char name[16];
    std::snprintf(name, sizeof name, "sinew-deal-%u", w.index);
    (void)pthread_setname_np(pthread_self(), name);
#endif
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

  bool all_empty() const noexcept {
    for (const auto& Q : nodes)
      if (Q->has_work(std::memory_order_seq_cst)) return false;
    for (const auto& w : workers)
      if (!w->dq.empty_approx()) return false;
    return true;
  }
};

thread_local deal_scheduler::impl::worker* deal_scheduler::impl::tl_worker = nullptr;

deal_scheduler::deal_scheduler(const topology& t, deal_options o)
    : p_(std::make_unique<impl>(t, std::move(o))) {
  impl& p = *p_;
  p.N = p.topo.nodes();
  p.C = std::max<std::size_t>(1, p.topo.cores_per_node());
  if (p.N == 0 || p.topo.total_cores() == 0) throw error("deal_scheduler: topology has no cores");
  if (!(p.opt.spread_tolerance >= 0.0))
    throw error("deal_scheduler: spread_tolerance must be >= 0 (got " +
                std::to_string(p.opt.spread_tolerance) + ")");
  if (p.opt.backoff_min.count() <= 0 || p.opt.backoff_max < p.opt.backoff_min)
    throw error("deal_scheduler: need 0 < backoff_min <= backoff_max");
  if (p.opt.backoff_poll.count() < 0) throw error("deal_scheduler: backoff_poll must be >= 0");
  p.size_threshold = p.opt.size_threshold ? *p.opt.size_threshold
                                          : std::uint64_t(p.topo.llc_bytes() / p.C);
  // Vicinities: group id per node; unlisted nodes are singleton groups.
  p.group.assign(p.N, -1);
  int g = 0;
  for (const auto& grp : p.opt.vicinities) {
    for (int n : grp) {
      if (n < 0 || std::size_t(n) >= p.N)
        throw error("deal_scheduler: vicinity names node " + std::to_string(n) + ", topology has " +
                    std::to_string(p.N) + " nodes");
      if (p.group[std::size_t(n)] != -1)
        throw error("deal_scheduler: node " + std::to_string(n) + " is in two vicinities");
      p.group[std::size_t(n)] = g;
    }
    ++g;
  }
  if (p.opt.vicinities.empty()) std::fill(p.group.begin(), p.group.end(), g++);
  for (auto& x : p.group)
    if (x == -1) x = g++;
  for (std::size_t n = 0; n < p.N; ++n) {
    auto q = std::make_unique<impl::node_queue>();
    q->dealt = std::make_unique<std::atomic<std::uint64_t>[]>(p.N);
    q->directed = std::make_unique<std::atomic<std::uint64_t>[]>(p.N);
    for (std::size_t j = 0; j < p.N; ++j) {
      q->dealt[j].store(0, std::memory_order_relaxed);
      q->directed[j].store(0, std::memory_order_relaxed);
    }
    q->threshold.resize(p.N);
    // Algorithm 2 line (4): sizeof(Q_i) > distance(i, n) * C, i = victim, n = thief.
    for (std::size_t v = 0; v < p.N; ++v) q->threshold[v] = std::size_t(p.topo.distance(v, n)) * p.C;
    for (std::size_t v : p.topo.nodes_by_distance(n))
      if (p.group[v] == p.group[n]) q->steal_order.push_back(int(v));
    p.nodes.push_back(std::move(q));
  }
  // One worker per core, on the node of its core.
  unsigned idx = 0;
  for (std::size_t n = 0; n < p.N; ++n)
    for (int cpu : p.topo.cores(n)) {
      auto w = std::make_unique<impl::worker>();
      w->index = idx++;
      w->node = int(n);
      w->cpu = cpu;
      w->owner = &p;
      w->rank = unsigned(p.nodes[n]->members.size());
      p.nodes[n]->members.push_back(w->index);
      p.workers.push_back(std::move(w));
    }
  for (auto& q : p.nodes)
    for (std::size_t k = 0; k < std::max<std::size_t>(1, q->members.size()); ++k)
      q->shards.push_back(std::make_unique<impl::shard>());
  try {
    for (auto& w : p.workers) {
      impl::worker* wp = w.get();
      impl* pp = &p;
      w->th = std::thread([pp, wp] { pp->worker_main(*wp); });
    }
  } catch (...) {
    p.stopping.store(true, std::memory_order_seq_cst);
    p.wake_all();
    for (auto& w : p.workers)
      if (w->th.joinable()) w->th.join();
    throw;
  }
}

deal_scheduler::~deal_scheduler() {
  p_->stopping.store(true, std::memory_order_seq_cst);
  p_->wake_all();
  for (auto& w : p_->workers) w->th.join();
  // Only a submit racing with the destructor (undefined) can leave tasks;
  // the shards free them.
}

unsigned deal_scheduler::concurrency() const noexcept { return unsigned(p_->workers.size()); }
const topology& deal_scheduler::topo() const noexcept { return p_->topo; }

int deal_scheduler::worker_node(unsigned w) const {
  if (w >= p_->workers.size())
    throw error("deal_scheduler::worker_node: no worker " + std::to_string(w));
  return p_->workers[w]->node;
}

int deal_scheduler::current_node() const noexcept {
  impl::worker* w = p_->me();
  return w ? w->node : -1;
}

int deal_scheduler::choose_node(std::span<const std::uint64_t> D, int local_node) const {
  if (D.size() != p_->N)
    throw error("deal_scheduler::choose_node: D has " + std::to_string(D.size()) +
                " entries, topology has " + std::to_string(p_->N) + " nodes");
  if (local_node < 0 || std::size_t(local_node) >= p_->N)
    throw error("deal_scheduler::choose_node: local node " + std::to_string(local_node) +
                " is not a node");
  return p_->choose(D, local_node);
}

bool deal_scheduler::may_steal(int thief_node, int victim_node, std::size_t victim_queue_len) const {
  if (thief_node < 0 || std::size_t(thief_node) >= p_->N || victim_node < 0 ||
      std::size_t(victim_node) >= p_->N)
    throw error("deal_scheduler::may_steal: node out of range");
  return p_->may_steal(thief_node, victim_node, victim_queue_len);
}

int deal_scheduler::find_victim(int thief_node, std::span<const std::size_t> queue_lens) const {
  const impl& p = *p_;
  if (thief_node < 0 || std::size_t(thief_node) >= p.N)
    throw error("deal_scheduler::find_victim: node " + std::to_string(thief_node) + " is not a node");
  if (queue_lens.size() != p.N)
    throw error("deal_scheduler::find_victim: " + std::to_string(queue_lens.size()) + " queue lengths, topology has " +
                std::to_string(p.N) + " nodes");
  if (queue_lens[std::size_t(thief_node)] != 0) return thief_node;
  // The order and test of impl::find_work.
  for (int v : p.nodes[std::size_t(thief_node)]->steal_order)
    if (p.may_steal(thief_node, v, queue_lens[std::size_t(v)])) return v;
  return -1;
}

void deal_scheduler::submit(std::function<void()> fn, const locality_hint& hint) {
  submit_counted_impl(std::move(fn), nullptr, hint);
}

void deal_scheduler::submit_counted(std::function<void()> fn, detail::task_counter& c, const locality_hint& hint) {
  submit_counted_impl(std::move(fn), &c, hint);
}

void deal_scheduler::submit_counted_impl(std::function<void()> fn, detail::task_counter* c, const locality_hint& hint) {
  if (!fn) throw error("deal_scheduler::submit: empty function");
  impl& p = *p_;
  impl::worker* w = p.me();
  task* t = tl_cache.get();
  // D of Algorithm 1 (line 2). A task without one leaves t->D empty: a
  // fresh task's D would be a heap allocation per submit (an outside
  // thread's tasks are always fresh: the workers that run them keep them).
  std::uint64_t total = 0;
  if (detail::hint_has_data(hint)) {
    try {
      total = detail::hint_bytes(hint, p.N, t->D, "deal_scheduler::submit");
    } catch (...) {
      tl_cache.put(t);
      throw;
    }
  }
  t->loop = nullptr;
  t->submitter = w ? int(w->index) : -1;
  t->total = total;
  int node;
  if (total != 0) {
    const int local = w ? w->node : p.outside_node();
    if (p.deals(t->D)) {
      node = p.argmin_cost(t->D, local);
      (w ? p.nodes[std::size_t(w->node)] : p.nodes[0])->dealt[std::size_t(node)].fetch_add(
          1, std::memory_order_relaxed);
    } else {
      node = local;
      (w ? w->kept_local : p.ext_kept_local).fetch_add(1, std::memory_order_relaxed);
    }
  } else {
    t->D.clear();
    if (hint.numa_node >= 0 && std::size_t(hint.numa_node) < p.N) {
      node = hint.numa_node;
      (w ? p.nodes[std::size_t(w->node)] : p.nodes[0])->directed[std::size_t(node)].fetch_add(
          1, std::memory_order_relaxed);
    } else {
      node = w ? w->node : p.outside_node();
      (w ? w->kept_local : p.ext_kept_local).fetch_add(1, std::memory_order_relaxed);
    }
  }
  (w ? w->submitted : p.sc.ext_submitted).fetch_add(1, std::memory_order_relaxed);
  t->fn = std::move(fn);
  t->counter = c;
  // One node: nothing to deal or steal across nodes, so a worker's task goes
  // to its own deque (the fast path of `steal`); else the node's FIFO.
  if (w && p.N == 1) {
    w->dq.push(t);
    p.announce_work(node);
  } else {
    p.push(node, t, w);
  }
}

void deal_scheduler::parallel_for(std::size_t n, std::size_t grain,
                                  detail::function_ref<void(std::size_t, std::size_t)> body) {
  parallel_for_at({}, n, grain, body);
}

void deal_scheduler::parallel_for_at(const locality_hint& hint, std::size_t n, std::size_t grain,
                                     detail::function_ref<void(std::size_t, std::size_t)> body) {
  if (n == 0) return;
  if (grain == 0) grain = 1;
  impl& p = *p_;
  impl::worker* w = p.me();
  loop_ctx L(body, grain, n);
  // Map dispatch (worker_common.hpp, seed 004 Section 3.3), over the
  // workers of one node: the blocks go to the caller's node queue (an
  // outside caller's: round-robin), where Algorithm 2 lets other nodes
  // steal only past its threshold -- or, when the hint's data passes
  // Algorithm 1's thresholds, to the node Algorithm 1 chooses for it.
  const int local = w ? w->node : p.outside_node();
  int q = local;
  std::vector<std::uint64_t> D;
  if (detail::hint_has_data(hint)) {
    L.total = detail::hint_bytes(hint, p.N, D, "deal_scheduler::parallel_for_at");
    L.D = D;
    if (L.total != 0 && p.deals(D)) q = p.argmin_cost(D, local);
  }
  // Dealt elsewhere: every block goes to q (the caller only helps with
  // what Algorithm 2 lets it take); the data is big (past the size
  // threshold), so moving the work costs less than reading it from afar.
  const bool away = q != local || !w;
  const std::size_t node_workers = std::max<std::size_t>(1, p.topo.cores(std::size_t(q)).size());
  std::size_t b = 0;
  if (!workers::begin_loop(p.sc, L, n, node_workers, w, local, b, q == local)) {
    const std::size_t parts = std::min(workers::chunk_count(n - b, grain), node_workers);
    const std::size_t first_pushed = away ? 0 : 1;
    std::vector<task*> segs;
    segs.reserve(parts);
    for (std::size_t i = 0; i < parts; ++i) {
      task* t = tl_cache.get();
      t->loop = &L;
      t->b = workers::segment_begin(b, n, parts, i);
      t->e = workers::segment_begin(b, n, parts, i + 1);
      t->submitter = w ? int(w->index) : -1;
      segs.push_back(t);
    }
    if (parts > first_pushed) {
      p.push_all(q, segs.data() + first_pushed, segs.data() + parts);
      p.announce_work_n(q, parts - first_pushed);
    }
    if (w) {
      if (!away) p.run_task(*w, segs[0]);  // halves onto our node's queue, runs the leftmost block
      p.help_until_done(*w, L);
    } else {
      workers::wait_outside(L, p.ext_waiters, p.ext_epoch);
    }
  }
  if (L.error) std::rethrow_exception(L.error);
}

scheduler_stats deal_scheduler::stats() const { return p_->sc.read(p_->workers); }

sinew::deal_stats deal_scheduler::deal_stats() const {
  sinew::deal_stats s;
  const std::size_t N = p_->N;
  s.dealt.assign(N, 0);
  s.directed.assign(N, 0);
  for (const auto& Q : p_->nodes)
    for (std::size_t j = 0; j < N; ++j) {
      s.dealt[j] += Q->dealt[j].load(std::memory_order_relaxed);
      s.directed[j] += Q->directed[j].load(std::memory_order_relaxed);
    }
  s.kept_local = p_->ext_kept_local.load(std::memory_order_relaxed);
  for (const auto& w : p_->workers) {
    s.kept_local += w->kept_local.load(std::memory_order_relaxed);
    s.steals_same_node += w->steals_same.load(std::memory_order_relaxed);
    s.steals_remote += w->steals_remote.load(std::memory_order_relaxed);
    s.steals_refused += w->refused.load(std::memory_order_relaxed);
    s.remote_bytes += w->remote_bytes.load(std::memory_order_relaxed);
  }
  return s;
}

void deal_scheduler::reset_stats() {
  p_->ext_kept_local.store(0, std::memory_order_relaxed);
  p_->sc.reset(p_->workers);
  for (auto& Q : p_->nodes)
    for (std::size_t j = 0; j < p_->N; ++j) {
      Q->dealt[j].store(0, std::memory_order_relaxed);
      Q->directed[j].store(0, std::memory_order_relaxed);
    }
  for (auto& w : p_->workers) {
    w->refused.store(0, std::memory_order_relaxed);
    w->kept_local.store(0, std::memory_order_relaxed);
  }
}


// "deal": one worker per core of the topology; `threads` alone gives one node
// of that many cores (the machine's own when it has exactly those, else a
// synthetic node with the machine's last-level cache).
static scheduler_registration deal_registration("deal", [](const scheduler_options& o) -> std::unique_ptr<scheduler> {
  if (auto t = o.numa_topology()) return std::make_unique<deal_scheduler>(*t, o.deal);
  topology here = topology::current();
  if (o.threads && (here.nodes() != 1 || here.total_cores() != o.threads))
    here = topology::synthetic(1, o.threads, {}, here.llc_bytes());
  return std::make_unique<deal_scheduler>(here, o.deal);
});

}  // namespace sinew
