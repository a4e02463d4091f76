// The `steal` policy: per-worker Chase-Lev deques [ChaseLev05, Le13], a
// sharded injection queue, round-robin stealing, futex sleep when idle. See
// steal_scheduler.hpp for the policy and the paper; this file's comments
// cover the concurrency protocols.
#include <algorithm>
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
#include "workers/loop_ctx.hpp"
#include "workers/map_dispatch.hpp"
#include "workers/parking_lot.hpp"
#include "workers/run_task.hpp"
#include "workers/task_cache.hpp"
#include "workers/task_shard.hpp"
#include "workers/worker_counters.hpp"
#include "workers/worker_thread.hpp"

#if defined(__linux__)
#include <sched.h>  // sched_getaffinity
#endif

namespace sinew {

namespace {

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

thread_local workers::task_cache<task> tl_cache;

}  // namespace

struct steal_scheduler::impl {
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
  workers::scheduler_counters sc;

  static thread_local worker* tl_worker;

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

  // Own deque, injection queue, then steals starting after `w`: from every
  // other worker (`all_victims`), else from the next one in turn.
  // `contended`: a steal lost a race (there may be more work).
  // `patient`: a deque holding one task is robbed only if the same task (the
  // same top index) was there at the previous look. Its owner pops it next
  // unless it is busy: a chain of tasks, each submitting the next, stays on
  // its worker instead of moving to a thief at every poll.
  task* find_work(worker& w, bool& contended, bool all_victims = true, bool patient = false) {
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

  // ------------------------------------------------------------ running

  void run_task(worker& w, task* t) noexcept {
    if (workers::run_task(w, t, tl_cache, [this](worker& x, task* y) { run_block(x, y); }))
      announce_loop_done();  // a group's last task: its waiter may sleep on loop_epoch
  }


  // A block of a parallel_for (workers::run_blocks). The halves wake no
  // one: the dispatch woke the workers the loop can use, and a worker looks
  // at every deque before it parks.
  void run_block(worker& w, task* t) noexcept {
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

  // One idle round of w after a failed look (`idle`: rounds since it last
  // ran a task): the back-off, preceded by a calm wait once w has seen
  // calm_after chains (see calm_after).
  void idle_round(worker& w, unsigned& idle) noexcept {
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

  void worker_main(worker& w) {
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
};

thread_local steal_scheduler::impl::worker* steal_scheduler::impl::tl_worker = nullptr;

namespace {

// CPUs this process may run on.
std::vector<int> usable_cpus() {
  std::vector<int> cpus;
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
#endif
  return cpus;
}

// The topology a thread-count scheduler reports: the process's when it is
// real and the workers are pinned (their CPUs tell their nodes), else one
// node (a synthetic topology's CPU ids are not this machine's).
topology placement_topology(bool pin) {
  if (pin) {
    topology t = topology::current();
    if (!t.synthetic()) return t;
  }
  return topology();
}

}  // namespace

steal_scheduler::steal_scheduler(unsigned threads, bool pin)
    : p_(std::make_unique<impl>(threads ? threads : std::max(1u, std::thread::hardware_concurrency()),
                                pin, placement_topology(pin))) {
  const std::vector<int> cpus = pin ? usable_cpus() : std::vector<int>{};
  for (unsigned i = 0; i < p_->threads; ++i) {
    auto w = std::make_unique<impl::worker>();
    w->index = i;
    w->owner = p_.get();
    if (!cpus.empty()) {
      w->cpu = cpus[i % cpus.size()];
      w->node = std::max(0, p_->topo.node_of_core(w->cpu));
    }
    p_->workers.push_back(std::move(w));
  }
  start();
}

steal_scheduler::steal_scheduler(const topology& t, bool pin)
    : p_(std::make_unique<impl>(unsigned(t.total_cores()), pin && !t.synthetic(), t)) {
  if (t.total_cores() == 0) throw error("steal_scheduler: topology has no cores");
  unsigned idx = 0;
  for (std::size_t n = 0; n < t.nodes(); ++n)
    for (int cpu : t.cores(n)) {
      auto w = std::make_unique<impl::worker>();
      w->index = idx++;
      w->node = int(n);
      w->cpu = p_->pin ? cpu : -1;
      w->owner = p_.get();
      p_->workers.push_back(std::move(w));
    }
  start();
}

void steal_scheduler::start() {
  for (unsigned i = 0; i < p_->threads; ++i) p_->shards.push_back(std::make_unique<impl::shard>());
  for (auto& w : p_->workers) w->lone_top.assign(p_->threads, -1);
  // Every worker exists before any starts (they steal from each other).
  try {
    for (auto& w : p_->workers) {
      impl::worker* wp = w.get();
      impl* p = p_.get();
      w->th = std::thread([p, wp] { p->worker_main(*wp); });
    }
  } catch (...) {
    p_->stopping.store(true, std::memory_order_seq_cst);
    p_->lot.wake_all();
    for (auto& w : p_->workers)
      if (w->th.joinable()) w->th.join();
    throw;
  }
}

steal_scheduler::~steal_scheduler() {
  // Workers leave once they see `stopping` and find no work; tasks still
  // queued (and the ones they spawn) run first.
  p_->stopping.store(true, std::memory_order_seq_cst);
  p_->lot.wake_all();
  for (auto& w : p_->workers) w->th.join();
  // A task left in the injection queue after every worker left can only come
  // from a submit that raced with the destructor (undefined): the shards
  // free it.
}

unsigned steal_scheduler::concurrency() const noexcept { return p_->threads; }

void steal_scheduler::submit(task_function fn, const locality_hint& hint) {
  submit_counted_impl(std::move(fn), nullptr, hint);
}

void steal_scheduler::submit_counted(task_function fn, detail::task_counter& c, const locality_hint& hint) {
  submit_counted_impl(std::move(fn), &c, hint);
}

void steal_scheduler::submit_counted_impl(task_function&& fn, detail::task_counter* c, const locality_hint& hint) {
  if (!fn) throw error("steal_scheduler::submit: empty function");
  impl::worker* w = p_->me();
  workers::count_one(w, &impl::worker::submitted, p_->sc.ext_submitted);
  task* t = tl_cache.get();
  t->loop = nullptr;
  if (detail::hint_has_data(hint)) {
    try {
      t->total = detail::hint_bytes(hint, p_->topo.nodes(), t->D, "steal_scheduler::submit");
    } catch (...) {
      tl_cache.put(t);
      throw;
    }
  }
  t->fn = std::move(fn);
  t->counter = c;
  p_->push(w, t);
}

void steal_scheduler::wait_counted(detail::task_counter& c) noexcept { workers::wait_counted(*p_, p_->me(), c); }

void steal_scheduler::help_until(detail::help_latch& l) { workers::help_until(*p_, p_->me(), l); }

void steal_scheduler::parallel_for(std::size_t n, std::size_t grain,
                                   detail::function_ref<void(std::size_t, std::size_t)> body) {
  parallel_for_at({}, n, grain, body);
}

void steal_scheduler::parallel_for_at(const locality_hint& hint, std::size_t n, std::size_t grain,
                                      detail::function_ref<void(std::size_t, std::size_t)> body) {
  if (n == 0) return;
  if (grain == 0) grain = 1;
  impl& p = *p_;
  impl::worker* w = p.me();
  loop_ctx L(body, grain, n);
  // The hint never moves the loop (this is the baseline): its D is only
  // counted, block by block, where the blocks run.
  std::vector<std::uint64_t> D;
  if (detail::hint_has_data(hint)) {
    L.total = detail::hint_bytes(hint, p.topo.nodes(), D, "steal_scheduler::parallel_for_at");
    L.D = D;
  }
  // Map dispatch (workers/map_dispatch.hpp).
  std::size_t b = 0;
  if (!workers::begin_loop(p.sc, L, n, p.threads, w, w ? w->node : 0, b)) {
    // One segment per participant (the calling worker keeps the first);
    // pushed in one step, then one wake for the others.
    const std::size_t parts = std::min<std::size_t>(workers::chunk_count(n - b, grain), p.threads);
    const std::size_t first_pushed = w ? 1 : 0;
    auto make = [&](std::size_t i) {
      task* t = tl_cache.get();
      t->loop = &L;
      t->b = workers::segment_begin(b, n, parts, i);
      t->e = workers::segment_begin(b, n, parts, i + 1);
      return t;
    };
    if (w) {
      for (std::size_t i = parts; i-- > first_pushed;) w->dq.push(make(i));  // thieves take segment 1 first
    } else {
      // Segment i to shard i: each worker finds one in its own shard.
      for (std::size_t i = first_pushed; i < parts; ++i) p.shards[i % p.shards.size()]->push(make(i));
    }
    if (parts > first_pushed) p.announce_work(parts - first_pushed);
    if (w) {
      p.run_task(*w, make(0));  // halves onto our deque, runs the leftmost block
      p.help_until_done(*w, workers::count_done(L.remaining));
    } else {
      workers::wait_outside(L, p.ext_waiters, p.ext_epoch);
    }
  }
  if (L.error) std::rethrow_exception(L.error);
}

scheduler_stats steal_scheduler::stats() const { return p_->sc.read(p_->workers); }

void steal_scheduler::reset_stats() { p_->sc.reset(p_->workers); }

const topology& steal_scheduler::topo() const noexcept { return p_->topo; }

int steal_scheduler::current_node() const noexcept {
  impl::worker* w = p_->me();
  return w ? w->node : -1;
}

int steal_scheduler::worker_node(unsigned w) const {
  if (w >= p_->workers.size())
    throw error("steal_scheduler::worker_node: no worker " + std::to_string(w));
  return p_->workers[w]->node;
}


// "steal": one worker per core of the topology, or `threads` workers.
static scheduler_registration steal_registration("steal", [](const scheduler_options& o) -> std::unique_ptr<scheduler> {
  if (auto t = o.numa_topology()) return std::make_unique<steal_scheduler>(*t, o.pin);
  return std::make_unique<steal_scheduler>(o.threads, o.pin);
});

}  // namespace sinew
