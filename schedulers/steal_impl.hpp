#pragma once
// Internal: the state of a `steal_scheduler` -- its workers, deques and
// injection shards, and the protocols they follow -- shared by its files:
//   steal_scheduler.cpp  construction, submit, parallel_for, statistics;
//   steal_workers.cpp    the workers' loop: finding work, stealing, idling.
// The policy and its paper are in include/sinew/schedulers/steal_scheduler.hpp.
#include <chrono>
#include <climits>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include <sinew/detail/chase_lev_deque.hpp>
#include <sinew/detail/clock.hpp>
#include <sinew/detail/fence.hpp>
#include <sinew/detail/futex.hpp>
#include <sinew/engine/error.hpp>
#include <sinew/engine/trace.hpp>
#include <sinew/schedulers/scheduler_registry.hpp>
#include <sinew/schedulers/steal_scheduler.hpp>

#include "locality.hpp"
#include "workers/backup_timer.hpp"
#include "workers/loop_ctx.hpp"
#include "workers/map_dispatch.hpp"
#include "workers/parking_lot.hpp"
#include "workers/run_task.hpp"
#include "workers/task_cache.hpp"
#include "workers/task_shard.hpp"
#include "workers/worker_counters.hpp"
#include "workers/worker_thread.hpp"

namespace sinew {

namespace detail::steal {

using detail::now_ns;
namespace workers = detail::workers;
using detail::cpu_relax;
using detail::futex_wait;
using detail::futex_wake;
using workers::loop_ctx;

// Idle phases before sleeping: `pause_rounds` looks for work separated by a
// few pause instructions, then `yield_rounds` separated by sched_yield. A
// few tens of microseconds in all.
constexpr unsigned pause_rounds = 64;
constexpr unsigned yield_rounds = 16;
constexpr unsigned spin_rounds = pause_rounds + yield_rounds;
inline void idle_backoff(unsigned round) noexcept {
  if (round < pause_rounds)
    for (int i = 0; i < 16; ++i) cpu_relax();
  else
    std::this_thread::yield();
}

// A searcher that has seen chains (find_work's `patient` looks: a lone
// task its owner popped and replaced) calm_after times since it last ran a
// task waits between looks, from calm_min_ns doubling up to calm_max_ns,
// watching only the injection shards and, every calm_poll_ns, whether a
// deque holds more than one task. Why: a look reads the lines of the
// owner's deque, which the owner writes twice per task, so a thief looking
// every round slows the chain it cannot help.
constexpr unsigned calm_after = 8;
constexpr std::uint64_t calm_min_ns = 1'000;
constexpr std::uint64_t calm_max_ns = 32'000;
constexpr std::uint64_t calm_poll_ns = 2'000;

constexpr unsigned inject_check_period = 61;  // as in Go's scheduler: a prime

// Idle rounds that look at every other worker's deque; later rounds try one
// victim each, in turn (as oneTBB's thieves do), until the check before
// parking, which looks at all. Searchers that scan every deque each round
// keep reading the lines a busy owner writes with each push and pop, which
// slows it and lets them steal the task it was about to run (a chain of
// tasks on 16 cores: docs/schedulers.md).
constexpr unsigned full_scan_rounds = 2;

// A task: a submitted function, or a block [b, e) of a parallel_for.
struct task : workers::scalable_new {
  task* next_free = nullptr;
  loop_ctx* loop = nullptr;  // null: a submitted function
  std::size_t b = 0, e = 0;
  std::uint64_t total = 0;         // sum(D) of the task's locality hint; 0: none
  std::vector<std::uint64_t> D;    // bytes on each node (when total > 0)
  task_function fn;
  detail::task_counter* counter = nullptr;  // a task_group's task: counted there when it ends
  void recycle() noexcept {
    loop = nullptr;
    counter = nullptr;
    total = 0;
  }
};

// This thread's free tasks (inline: one cache for every file of the policy).
inline thread_local workers::task_cache<task> tl_cache;

}  // namespace detail::steal

// The policy's two files see its helpers unqualified (this header is theirs alone).
using namespace detail::steal;

struct steal_scheduler::impl {
  using task = detail::steal::task;
  using loop_ctx = detail::workers::loop_ctx;
  struct alignas(64) worker : workers::worker_counters {
    detail::chase_lev_deque<task*> dq;
    std::thread th;
    unsigned index = 0;
    int node = 0;   // NUMA node of the worker
    int cpu = -1;   // CPU to pin to (-1: none)
    impl* owner = nullptr;
    workers::parking_lot::parker park;  // idle protocol (workers/parking_lot.hpp)
    // Owner-only bookkeeping.
    unsigned depth = 0;  // tasks being run on this thread's stack (> 1: helping)
    unsigned tick = 0;
    unsigned victim = 0;  // offset from `index` of the next one-victim round's victim
    std::vector<std::int64_t> lone_top;  // per victim: top of the lone task seen last (-1: none)
    bool chain_seen = false;   // the last look found a lone task replaced by its owner
    unsigned chain_looks = 0;  // looks that did since this worker last ran a task
    std::uint64_t calm_ns = calm_min_ns;  // the next calm wait (idle_round)
  };

  impl(unsigned n, bool pin, topology t) : threads(n), pin(pin), topo(std::move(t)) {}

  unsigned threads;
  bool pin;
  topology topo;
  std::vector<std::unique_ptr<worker>> workers;

  // Injection queues for tasks from outside threads: one shard per worker,
  // filled round-robin by each outside thread and drained first by the
  // shard's own worker (workers::task_shard).
  using shard = workers::task_shard<task>;
  std::vector<std::unique_ptr<shard>> shards;
  alignas(64) std::atomic<unsigned> next_shard{0};  // an outside thread's first shard

  // Searching and parked workers (see "Sleep protocol" below).
  workers::parking_lot lot;
  alignas(64) std::atomic<std::uint32_t> loop_waiters{0};   // workers sleeping in parallel_for
  alignas(64) std::atomic<std::uint32_t> loop_epoch{0};     // their futex word
  alignas(64) std::atomic<std::uint32_t> ext_waiters{0};    // outside threads in parallel_for
  alignas(64) std::atomic<std::uint32_t> ext_epoch{0};      // their futex word
  alignas(64) std::atomic<bool> stopping{false};
  workers::affine_gate affine;  // static segment assignment of loops with an affinity
  workers::scheduler_counters sc;

  detail::workers::backup_timer backups;  // submit_backup from outside

  static inline thread_local worker* tl_worker = nullptr;

  worker* me() const noexcept {
    worker* w = tl_worker;
    return (w && w->owner == this) ? w : nullptr;
  }

  // ------------------------------------------------------------ sleep protocol
  //
  // Idle workers follow workers::parking_lot (workers/parking_lot.hpp: searching
  // workers, parking on a word of their own, the no-lost-wake-up argument):
  //
  //   worker W                               submitter (any thread)
  //   find_work fails: start searching       P1 push the task (deque bottom or
  //   spin/yield rounds, each a find_work       injection shard + its size)
  //   found: stop searching; if it was the   P2 fence(seq_cst)
  //     last searcher and more work is       P3 lot.wake_one(): nothing when a
  //     visible, wake one more                  worker searches or none is
  //   none: prepare_park, fence, find_work      parked; else pop one parked
  //     once more; found: cancel_park           worker, count it searching,
  //     (popped meanwhile: searching), run      wake it
  //   else park until popped: searching
  //
  // When every worker is busy a submit costs one fence and two loads; a
  // burst of submits while a worker searches makes no system call, and the
  // searcher that finds work wakes the next one only when more is visible
  // (so a map of m chunks wakes m workers, no more). Stealing that loses a
  // race means another thread took something and the deque may hold more:
  // W looks again rather than park.
  //
  // Shutdown: `stopping` is set, then every parked worker is popped and
  // woken; a worker that registers later reads `stopping` after the lock
  // the destructor released, so it never parks; a worker leaves when its
  // re-check finds nothing while stopping.
  //
  // Workers waiting inside parallel_for for the last blocks of their loop,
  // or inside task_group::wait for the last tasks of their group (which
  // other workers are running), sleep on loop_epoch, registered in
  // loop_waiters; they are woken (all of them: the word is shared) when any
  // loop or group finishes -- finisher: remaining.fetch_sub to 0, fence, if
  // loop_waiters > 0 bump loop_epoch and wake all; waiter: loop_waiters++,
  // fence, read loop_epoch, re-check remaining and the queues, futex_wait --
  // the same fence argument. A push that finds no parked worker and no
  // searcher wakes one loop waiter so it can help. Outside threads waiting
  // for an injected parallel_for use ext_waiters / ext_epoch likewise (kept
  // apart so that they never absorb a wake meant for a helper).

  void announce_work() noexcept {
    detail::seq_cst_fence();  // P2
    const int k = lot.wake_one();  // P3
    sc.count_wakes(k);
    if (k == 0 && lot.searching() == 0 && loop_waiters.load(std::memory_order_relaxed) != 0) {
      loop_epoch.fetch_add(1, std::memory_order_seq_cst);
      futex_wake(loop_epoch, 1);
    }
  }

  // After pushing `m` tasks at once (map dispatch): up to m parked workers
  // are woken, less those already searching; a task no one was woken for is
  // found by a searcher, or by the loop's caller, who helps.
  void announce_work(std::size_t m) noexcept {
    detail::seq_cst_fence();  // P2
    const int k = lot.wake_n(m);
    sc.count_wakes(k);
    if (k == 0 && lot.searching() == 0 && loop_waiters.load(std::memory_order_relaxed) != 0) {
      loop_epoch.fetch_add(1, std::memory_order_seq_cst);
      futex_wake(loop_epoch, int(std::min<std::size_t>(m, INT_MAX)));
    }
  }

  // W found task t while searching: if it was the last searcher and more
  // work is visible, another worker is woken for it (the parking_lot duty).
  void found_while_searching(worker& w) noexcept {
    if (lot.stop_searching(w.park) && work_visible(w)) announce_work();
  }

  void announce_loop_done() noexcept {
    detail::seq_cst_fence();
    if (loop_waiters.load(std::memory_order_relaxed) != 0) {
      loop_epoch.fetch_add(1, std::memory_order_seq_cst);
      futex_wake(loop_epoch, INT_MAX);
    }
    if (ext_waiters.load(std::memory_order_relaxed) != 0) {
      ext_epoch.fetch_add(1, std::memory_order_seq_cst);
      futex_wake(ext_epoch, INT_MAX);
    }
  }

  // ------------------------------------------------------------ queues

  // The shard an outside thread pushes to next: round-robin from a start
  // that differs between threads.
  shard& outside_shard() noexcept {
    thread_local const impl* owner = nullptr;
    thread_local unsigned k = 0;
    if (owner != this) {
      owner = this;
      k = next_shard.fetch_add(1, std::memory_order_relaxed);
    }
    return *shards[k++ % shards.size()];
  }

  // A worker's push onto its own deque announces only a first task
  // (workers::push_own); an outside thread's always does.
  void push(worker* w, task* t) {
    if (w) {
      if (!workers::push_own(w->dq, t)) return;
    } else {
      outside_shard().push(t);
    }
    announce_work();
  }

  // Takes the oldest task of one shard, starting with w's own, and a share
  // of the rest of that shard (half, at most 31) onto w's deque, where
  // other workers may steal them: one lock for many tasks. A shard whose
  // lock is taken is skipped (`contended`: look again).
  task* pop_injected(worker& w, bool& contended) {
    const std::size_t S = shards.size();
    for (std::size_t j = 0; j < S; ++j)
      if (task* t = shards[(w.index + j) % S]->try_take(&w.dq, contended)) return t;
    return nullptr;
  }

  bool injected_visible() const noexcept {
    for (const auto& sh : shards)
      if (sh->size.load(std::memory_order_relaxed) != 0) return true;
    return false;
  }

  // Whether any queue looks non-empty (for a loop waiter's re-check; it does
  // not take anything).
  bool work_visible(const worker& w) const noexcept {
    if (injected_visible()) return true;
    if (!w.dq.empty_approx()) return true;
    for (const auto& v : workers)
      if (!v->dq.empty_approx()) return true;
    return false;
  }

  // Whether another worker's deque holds more than one task.
  bool queued_visible(const worker& w) const noexcept {
    for (const auto& v : workers)
      if (v.get() != &w && v->dq.size_approx() > 1) return true;
    return false;
  }

  // Own deque, injection queue, then steals starting after `w`: from every
  // other worker (`all_victims`), else from the next one in turn.
  // `contended`: a steal lost a race (there may be more work).
  // `patient`: a deque holding one task is robbed only if the same task (the
  // same top index) was there at the previous look. Its owner pops it next
  // unless it is busy: a chain of tasks, each submitting the next, stays on
  // its worker instead of moving to a thief at every poll.
  task* find_work(worker& w, bool& contended, bool all_victims = true, bool patient = false);

  // ------------------------------------------------------------ running

  // Runs t; a task group's last task wakes the group's waiters.
  void run_task(worker& w, task* t) noexcept;

  // A block of a parallel_for (workers::run_blocks). The halves wake no
  // one: the dispatch woke the workers the loop can use, and a worker looks
  // at every deque before it parks.
  void run_block(worker& w, task* t) noexcept;

  // One idle round of w after a failed look (`idle`: rounds since it last
  // ran a task): the back-off, preceded by a calm wait once w has seen
  // calm_after chains (see calm_after).
  void idle_round(worker& w, unsigned& idle) noexcept;

  // A worker's thread: find work, run it, search, spin, then park.
  void worker_main(worker& w);

  // A worker waits for its loop, its task group or a graph run (`done(mo)`
  // reads their state with memory order mo): it runs whatever it can find
  // meanwhile.
  template <class Done>
  void help_until_done(worker& w, Done&& done) {
    unsigned idle = 0, scans = 0;  // scans: failed rounds since a task or a wake-up
    const bool deep = w.depth >= workers::max_help_depth;  // own deque only
    while (!done(std::memory_order_acquire)) {
      bool contended = false;
      task* t = nullptr;
      if (deep ? w.dq.pop(t) : (t = find_work(w, contended, scans < full_scan_rounds, true)) != nullptr) {
        run_task(w, t);
        idle = scans = 0;
        continue;
      }
      if (contended) continue;
      ++scans;
      if (idle < spin_rounds) {
        idle_round(w, idle);
        continue;
      }
      loop_waiters.fetch_add(1, std::memory_order_seq_cst);
      detail::seq_cst_fence();
      std::uint32_t e = loop_epoch.load(std::memory_order_seq_cst);
      if (!done(std::memory_order_seq_cst) && (deep ? w.dq.empty_approx() : !work_visible(w)))
        futex_wait(loop_epoch, e);
      loop_waiters.fetch_sub(1, std::memory_order_seq_cst);
      idle = pause_rounds;  // woken: look around a little, then sleep again
      scans = 0;
    }
  }

};

}  // namespace sinew
