#pragma once
// Internal: the state of a `deal_scheduler` -- its node queues, workers and
// the parts of the policy they run -- shared by its files:
//   deal_scheduler.cpp  construction, statistics, the public queries;
//   deal_dealing.cpp    Algorithm 1: where submit and parallel_for put tasks;
//   deal_stealing.cpp   Algorithm 2: where an idle worker takes a task from;
//   deal_workers.cpp    the workers' loop, back-off, sleep and wake-ups.
// The policy and its paper are in include/sinew/schedulers/deal_scheduler.hpp.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <thread>
#include <vector>

#include <sinew/detail/chase_lev_deque.hpp>
#include <sinew/detail/futex.hpp>
#include <sinew/schedulers/deal_scheduler.hpp>

#include "workers/backup_timer.hpp"
#include "workers/loop_ctx.hpp"
#include "workers/map_dispatch.hpp"
#include "workers/parking_lot.hpp"
#include "workers/run_task.hpp"
#include "workers/task_cache.hpp"
#include "workers/task_shard.hpp"
#include "workers/worker_counters.hpp"

namespace sinew {

namespace detail::deal {

// A task: a submitted function, or a block [b, e) of a parallel_for.
struct task : workers::scalable_new {
  task* next_free = nullptr;
  workers::loop_ctx* loop = nullptr;  // null: a submitted function
  std::size_t b = 0, e = 0;
  int submitter = -1;            // index of the enqueuing worker, -1: outside thread
  std::uint64_t total = 0;       // sum(D); 0: no D
  std::vector<std::uint64_t> D;  // bytes on each node (when total > 0)
  task_function fn;
  task_counter* counter = nullptr;  // a task_group's task: counted there when it ends
  void recycle() noexcept {
    loop = nullptr;
    counter = nullptr;
    total = 0;
    D.clear();  // keeps the capacity for the next task with a D
  }
};

// This thread's free tasks (inline: one cache for every file of the policy).
inline thread_local workers::task_cache<task> tl_cache;

}  // namespace detail::deal

struct deal_scheduler::impl {
  using task = detail::deal::task;
  using shard = detail::workers::task_shard<task>;  // of a node's queue (see node_queue)
  using loop_ctx = detail::workers::loop_ctx;
  using deque = detail::chase_lev_deque<task*>;

  // One node: its queue and its workers' sleep words. The queue Algorithms
  // 1 and 2 speak of is one FIFO per node; it is kept as one locked shard
  // per worker of the node, so that a thread pushing a burst (an outside
  // thread's task_group, a map's segments) meets at most one worker on each
  // lock. Pushes go round-robin over the shards (a worker's own pushes to
  // its node: its own shard); a take starts at the taker's shard; each
  // shard is FIFO, the node's queue as a whole nearly so. Algorithm 2's
  // threshold reads the queue's length as the sum of the shards' sizes,
  // not from one shared counter, which every push would write while idle
  // workers read it.
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
    detail::workers::parking_lot lot;  // the node's searching and parked workers
    alignas(64) std::atomic<std::uint32_t> loop_waiters{0};  // workers sleeping in parallel_for
    alignas(64) std::atomic<std::uint32_t> loop_epoch{0};    // their futex word
    std::vector<int> steal_order;  // other nodes of the vicinity, nearest first
    std::vector<unsigned> members; // its workers
    std::vector<std::size_t> threshold;  // by victim node: distance(victim, this) * C
    // Counters of submits made on this node (outside threads: node 0's row),
    // by target node; deal_stats() sums the rows.
    std::unique_ptr<std::atomic<std::uint64_t>[]> dealt, directed;
  };

  struct alignas(64) worker : detail::workers::worker_counters {
    // The halves of the parallel_for blocks this worker splits, and on a
    // one-node topology the tasks it submits: a Chase-Lev deque
    // [ChaseLev05, Le13] as in `steal`, which only workers of its node take
    // from. The node queues hold what Algorithms 1 and 2 are about: dealt
    // tasks, and what other nodes may steal.
    deque dq;
    std::thread th;
    unsigned index = 0;
    unsigned rank = 0;  // position among its node's workers
    int node = 0;
    int cpu = -1;
    impl* owner = nullptr;
    unsigned depth = 0;  // owner only: tasks on this thread's stack (> 1: helping)
    detail::workers::parking_lot::parker park;  // in its node's lot
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
  detail::workers::affine_gate affine;  // static segment assignment of loops with an affinity
  alignas(64) std::atomic<std::uint64_t> rr{0};  // round-robin node of outside threads
  std::atomic<std::uint64_t> ext_kept_local{0};
  detail::workers::scheduler_counters sc;

  detail::workers::backup_timer backups;  // submit_backup from outside

  static inline thread_local worker* tl_worker = nullptr;

  worker* me() const noexcept {
    worker* w = tl_worker;
    return (w && w->owner == this) ? w : nullptr;
  }

  int outside_node() noexcept { return N == 1 ? 0 : int(rr.fetch_add(1, std::memory_order_relaxed) % N); }

  // ------------------------------------------------ Algorithm 1 (deal_dealing.cpp)

  // Both thresholds of Algorithm 1: sum(D) above the size threshold, and D
  // not evenly spread.
  bool deals(std::span<const std::uint64_t> D) const noexcept;
  // The node of least distance-weighted cost for D (detail::cheapest_node).
  int argmin_cost(std::span<const std::uint64_t> D, int local) const;
  // Algorithm 1's answer: argmin_cost when `deals`, else `local`.
  int choose(std::span<const std::uint64_t> D, int local) const {
    return deals(D) ? argmin_cost(D, local) : local;
  }

  // ------------------------------------------------ Algorithm 2 (deal_stealing.cpp)

  // May a worker of `thief` take one task from `victim`'s queue of `len`?
  bool may_steal(int thief, int victim, std::size_t len) const noexcept {
    if (thief == victim) return len > 0;
    if (group[std::size_t(thief)] != group[std::size_t(victim)]) return false;
    return len > nodes[std::size_t(thief)]->threshold[std::size_t(victim)];
  }
  // Enqueues t on q (w: the pushing worker, or null): w's own shard when q
  // is w's node, else the next shard of this thread's round-robin.
  void enqueue(int q, task* t, const worker* w);
  // Pushes tasks [first, last) to q, the i-th to shard i: each woken worker
  // of q finds one in its own shard.
  void push_all(int q, task* const* first, task* const* last);
  task* take(int v, std::size_t first, bool& contended, worker* share = nullptr);
  task* find_work(worker& w, bool& contended);
  bool work_visible(const worker& w) const noexcept;
  // What a waiter past workers::max_help_depth may run: its deque, then the
  // newest task of its own shard of its node's queue (where its own pushes
  // go when there are several nodes).
  task* find_own(worker& w, bool& contended) {
    task* t = nullptr;
    if (w.dq.pop(t)) return t;
    node_queue& Q = *nodes[std::size_t(w.node)];
    return Q.shards[w.rank % Q.shards.size()]->try_take_newest(contended);
  }
  bool own_visible(const worker& w) const noexcept {
    const node_queue& Q = *nodes[std::size_t(w.node)];
    return !w.dq.empty_approx() || Q.shards[w.rank % Q.shards.size()]->size.load(std::memory_order_relaxed) != 0;
  }
  bool all_empty() const noexcept;

  // ------------------------------------------------ workers (deal_workers.cpp)

  void push(int q, task* t, const worker* w) {
    enqueue(q, t, w);
    announce_work(q);
  }
  void announce_work(int q) noexcept;
  void announce_work_n(int q, std::size_t m) noexcept;
  void found_while_searching(worker& w) noexcept;
  void announce_loop_done() noexcept;
  void wake_all() noexcept;
  void run_task(worker& w, task* t) noexcept;
  void run_block(worker& w, task* t) noexcept;
  void backoff_wait(const worker& w, std::uint64_t d) const noexcept;
  std::uint64_t bmin() const noexcept { return std::uint64_t(std::max<std::int64_t>(1, opt.backoff_min.count())); }
  std::uint64_t bmax() const noexcept {
    return std::max(bmin(), std::uint64_t(std::max<std::int64_t>(1, opt.backoff_max.count())));
  }
  template <class Done>
  void help_until_done(worker& w, Done&& done);
  void worker_main(worker& w);
};

// A worker waits for its loop, its task group or a graph run (`done(mo)`
// reads their state with memory order mo): it runs whatever it can find
// meanwhile.
template <class Done>
void deal_scheduler::impl::help_until_done(worker& w, Done&& done) {
  node_queue& Q = *nodes[std::size_t(w.node)];
  std::uint64_t d = bmin();
  const bool deep = w.depth >= detail::workers::max_help_depth;  // its own newest tasks only
  while (!done(std::memory_order_acquire)) {
    bool contended = false;
    if (task* t = deep ? find_own(w, contended) : find_work(w, contended)) {
      run_task(w, t);
      d = bmin();
      continue;
    }
    if (contended) continue;
    if (d <= bmax()) {
      // Short waits only: the wait may end any moment (and no wake comes
      // during a timed back-off).
      if (d <= 2'000) backoff_wait(w, d);
      else std::this_thread::yield();
      d *= 2;
      continue;
    }
    Q.loop_waiters.fetch_add(1, std::memory_order_seq_cst);
    detail::seq_cst_fence();
    std::uint32_t e = Q.loop_epoch.load(std::memory_order_seq_cst);
    if (!done(std::memory_order_seq_cst) && !(deep ? own_visible(w) : work_visible(w)))
      detail::futex_wait(Q.loop_epoch, e);
    Q.loop_waiters.fetch_sub(1, std::memory_order_seq_cst);
    d = bmax() * 2;  // woken: look once, then sleep again
  }
}

}  // namespace sinew
