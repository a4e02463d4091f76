#pragma once
// Internal pieces shared by the steal and deal schedulers: futex sleeping,
// a per-thread cache of task objects, the state of a parallel_for, the
// counters behind `stats()` and the parts of parallel_for both run alike.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <new>
#include <span>
#include <vector>

#include <oneapi/tbb/scalable_allocator.h>
#include <sinew/schedulers/scheduler.hpp>

#include <sinew/detail/clock.hpp>
#include <sinew/detail/fence.hpp>
#include <sinew/detail/function_ref.hpp>
#include <sinew/detail/futex.hpp>

#include <sched.h>

namespace sinew::detail::workers {

using detail::cpu_relax;
using detail::futex_wait;
using detail::futex_wake;

// A lock for the short critical sections of the task queues (a deque push
// or pop): workers only try it (a worker that finds it taken looks
// elsewhere instead of queueing behind it: 16 workers polling one
// std::mutex held a submitting thread in futex convoys), submitters spin,
// then yield (the holder may have been preempted on an oversubscribed core).
class spin_lock {
 public:
  bool try_lock() noexcept {
    return !f_.load(std::memory_order_relaxed) && !f_.exchange(true, std::memory_order_acquire);
  }
  void lock() noexcept {
    for (unsigned i = 0; !try_lock(); ++i) {
      if (i < 64) {
        cpu_relax();
      } else {
        sched_yield();
      }
    }
  }
  void unlock() noexcept { f_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> f_{false};
};

// One shard of a sharded task queue (steal's injection queue, deal's node
// queues): a locked FIFO with its size mirrored for lock-free looks, so that
// a thread pushing a burst meets at most one worker on each lock and an
// empty shard is seen without it. Takers only try the lock.
//
//   task_shard<task> sh;
//   sh.push(t);                                   // a submitter
//   bool contended = false;
//   task* x = sh.try_take(&w.dq, contended);      // a worker: oldest + a share
template <class T>
struct alignas(64) task_shard {
  spin_lock m;
  std::deque<T*> q;  // push_back, take from the front
  alignas(64) std::atomic<std::size_t> size{0};

  void push(T* t) noexcept {
    m.lock();
    q.push_back(t);
    size.store(q.size(), std::memory_order_relaxed);
    m.unlock();
  }
  // The oldest task, and with `share` half the rest (at most 31) onto that
  // deque, where other workers may steal them: one lock for many tasks.
  // Null when the shard is empty, or its lock is taken (then `contended`).
  template <class Deque>
  T* try_take(Deque* share, bool& contended) noexcept {
    if (size.load(std::memory_order_relaxed) == 0) return nullptr;
    if (!m.try_lock()) {
      contended = true;
      return nullptr;
    }
    T* t = nullptr;
    if (!q.empty()) {
      t = q.front();
      q.pop_front();
      if (share)
        for (std::size_t k = std::min<std::size_t>(q.size() / 2, 31); k > 0; --k) {
          share->push(q.front());
          q.pop_front();
        }
      size.store(q.size(), std::memory_order_relaxed);
    }
    m.unlock();
    return t;
  }
  ~task_shard() {
    // Only a submit racing with its scheduler's destructor (undefined) can
    // leave tasks here.
    for (T* t : q) delete t;
  }
};

// Idle workers of one scheduler (steal) or one NUMA node (deal), after the
// Go runtime's scheduler (proc.go: "spinning" Ms, wakep, resetspinning) and
// oneTBB's private server (a semaphore per thread): a worker that runs out
// of work *searches* for a while (counted in `nsearching`), then *parks* on
// its own futex word, listed in `idle`. A push wakes a worker only when no
// one is searching, and the woken worker is counted as a searcher by its
// waker before it runs. So a burst of submits costs one system call, not one
// per task (16 workers sleeping and waking per 5 us task held a submitting
// thread to one task per 5 us on the 16-core host: sched_grain 0.06x
// oneTBB), and a dispatch of m chunks wakes exactly the workers it needs.
//
// Invariant: nsearching = workers with `searching` set + workers popped from
// `idle` that have not run yet (they set `searching` when they do).
//
// No lost wake-ups. A pusher: P1 push; P2 seq_cst fence; P3 read nidle and
// nsearching (seq_cst); wake one worker unless nidle == 0 or nsearching > 0.
//  * It skipped because nsearching > 0: a counted worker exists, and every
//    counted worker eventually decrements nsearching. The decrement that
//    brings it to 0 comes after P3 in nsearching's modification order, hence
//    after P2 in the seq_cst order; the worker that makes it fences and looks
//    at every queue (stop_searching's caller when it found work, the park
//    re-check below when it did not), so it sees P1's task: it runs it, or
//    wakes a worker for it. While nsearching never returns to 0, searchers
//    keep looking at every queue.
//  * It skipped because nidle == 0: a worker that parks later registers
//    (nidle store, seq_cst), fences and looks at every queue once more
//    before it sleeps (Dekker with P2/P3), so it sees P1's task.
//  * It woke a worker: that worker is counted and searches.
// Parking: prepare_park (leave searching, register in `idle`), fence,
// re-check every queue; found something or stopping: cancel_park (a waker
// may have popped it meanwhile: then it is counted, and searches); else
// park() sleeps until a waker pops it (word = 1, set under the lock so that
// a late store cannot outlive the next registration).
//
//   lot.start_searching(p);               // find_work failed
//   if (t) { if (lot.stop_searching(p) && visible()) lot.wake_one(); run(t); }
//   lot.prepare_park(p); seq_cst_fence(); t = find_work();
//   if (t || stopping) lot.cancel_park(p); else lot.park(p);
class parking_lot {
 public:
  struct alignas(64) parker {
    std::atomic<std::uint32_t> word{0};  // 1: popped by a waker (counted as a searcher)
    bool listed = false;                 // in `idle` (guarded by the lot's mutex)
    bool searching = false;              // owner only: counted in nsearching
  };

  std::uint32_t searching() const noexcept { return nsearching_.load(std::memory_order_seq_cst); }
  std::uint32_t idle() const noexcept { return nidle_.load(std::memory_order_seq_cst); }

  // P3..: after a push and a seq_cst fence, wakes one parked worker unless
  // someone is searching. Returns the number woken (0 or 1).
  int wake_one() noexcept {
    if (nidle_.load(std::memory_order_seq_cst) == 0) return 0;
    if (nsearching_.load(std::memory_order_seq_cst) != 0) return 0;
    return wake_upto(1);
  }

  // After pushing m tasks at once (map dispatch): wakes up to m parked
  // workers, less the ones already searching. Returns the number woken.
  int wake_n(std::size_t m) noexcept {
    if (nidle_.load(std::memory_order_seq_cst) == 0) return 0;
    return wake_upto(m);
  }

  // Every parked worker (shutdown). Each is counted as a searcher.
  void wake_all() noexcept {
    std::vector<parker*> woken;
    {
      std::lock_guard<std::mutex> lk(m_);
      woken.swap(idle_);
      for (parker* p : woken) pop_locked(*p);
      nidle_.store(0, std::memory_order_seq_cst);
    }
    for (parker* p : woken) futex_wake(p->word, 1);
  }

  // The owner found no work: it now searches (counted).
  void start_searching(parker& p) noexcept {
    if (p.searching) return;
    p.searching = true;
    nsearching_.fetch_add(1, std::memory_order_seq_cst);
  }

  // The owner found work while searching. True when it was the last
  // searcher: the caller then looks whether more work is visible and, if
  // so, calls wake_one() (the fence comes first, here).
  bool stop_searching(parker& p) noexcept {
    if (!p.searching) return false;
    p.searching = false;
    const bool last = nsearching_.fetch_sub(1, std::memory_order_seq_cst) == 1;
    if (last) seq_cst_fence();
    return last;
  }

  // Leaves searching and registers as idle; the caller then fences and
  // looks at every queue once more, then calls cancel_park or park.
  void prepare_park(parker& p) noexcept {
    if (p.searching) {
      p.searching = false;
      nsearching_.fetch_sub(1, std::memory_order_seq_cst);
    }
    std::lock_guard<std::mutex> lk(m_);
    p.word.store(0, std::memory_order_relaxed);
    p.listed = true;
    idle_.push_back(&p);
    nidle_.store(std::uint32_t(idle_.size()), std::memory_order_seq_cst);
  }

  // The re-check found work (or the scheduler stops): leave the idle list.
  // Returns true when a waker had popped the owner already (it is then
  // counted as a searcher: `searching` is set).
  bool cancel_park(parker& p) noexcept {
    {
      std::lock_guard<std::mutex> lk(m_);
      if (p.listed) {
        idle_.erase(std::find(idle_.begin(), idle_.end(), &p));
        p.listed = false;
        nidle_.store(std::uint32_t(idle_.size()), std::memory_order_seq_cst);
        return false;
      }
    }
    p.searching = true;
    return true;
  }

  // Sleeps until a waker pops the owner; it is then a counted searcher.
  void park(parker& p) noexcept {
    while (p.word.load(std::memory_order_acquire) == 0) futex_wait(p.word, 0);
    p.searching = true;
  }

 private:
  void pop_locked(parker& p) noexcept {
    p.listed = false;
    p.word.store(1, std::memory_order_release);
    nsearching_.fetch_add(1, std::memory_order_seq_cst);
  }

  int wake_upto(std::size_t m) noexcept {
    parker* woken[64];
    std::size_t k = 0;
    {
      std::lock_guard<std::mutex> lk(m_);
      const std::size_t s = nsearching_.load(std::memory_order_seq_cst);
      if (s >= m) return 0;
      k = std::min({m - s, idle_.size(), std::size_t(64)});
      for (std::size_t i = 0; i < k; ++i) {
        woken[i] = idle_.back();
        idle_.pop_back();
        pop_locked(*woken[i]);
      }
      nidle_.store(std::uint32_t(idle_.size()), std::memory_order_seq_cst);
    }
    for (std::size_t i = 0; i < k; ++i) futex_wake(woken[i]->word, 1);
    return int(k);
  }

  std::mutex m_;
  std::vector<parker*> idle_;
  alignas(64) std::atomic<std::uint32_t> nidle_{0};
  alignas(64) std::atomic<std::uint32_t> nsearching_{0};
};

// Map dispatch (seed 004, Section 3.3, MOCL's push-based work-group
// dispatch): a parallel_for's chunk count is known at its start, so its
// chunks are split into one contiguous segment per participant and pushed
// in one step, and only as many sleeping workers as there are segments
// besides the caller's are woken, with one system call. Segments are split
// in halves while longer than the grain as they run, so workers that finish
// early steal what is left. A loop whose chunks together cost less than
// waking a worker runs inline: the caller times its first chunk when there
// are many (so that the delay it adds to the dispatch is a small part of
// the loop), and runs the rest itself when all of them would take less
// than `inline_ns`.
inline constexpr std::uint64_t inline_ns = 10'000;  // about a futex wake-up and a steal
inline constexpr std::size_t probe_factor = 4;      // probe when chunks >= 4 x workers

// Chunks of a loop of n elements with this grain.
inline std::size_t chunk_count(std::size_t n, std::size_t grain) noexcept {
  return n / grain + (n % grain != 0);
}

// Start of segment i of [b, e) split evenly in `parts` (even splits keep
// every block at least grain/2 long once segments are halved to the grain).
inline std::size_t segment_begin(std::size_t b, std::size_t e, std::size_t parts, std::size_t i) noexcept {
  return b + (e - b) * i / parts;
}

// Base of the schedulers' task objects: oneTBB's scalable allocator.
// Outside threads allocate the tasks they submit and workers free them;
// glibc's arenas serialise that traffic on one lock (16 workers freeing a
// main thread's 5 us tasks). Sanitizer builds keep the default allocator:
// ThreadSanitizer cannot see the uninstrumented allocator's hand-over of
// reused memory, nor AddressSanitizer its frees.
struct scalable_new {
#if !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
  static void* operator new(std::size_t n) {
    if (void* p = scalable_malloc(n)) return p;
    throw std::bad_alloc();
  }
  static void operator delete(void* p) noexcept { scalable_free(p); }
#endif
};

// A per-thread cache of task objects, so that the steady state allocates
// nothing per task. A task is freed by the thread that ran it, which may not
// be the one that allocated it; caches are bounded, the excess is deleted.
// Task needs `Task* next_free` and `void recycle()` (clears per-use state).
template <class Task>
struct task_cache {
  static constexpr unsigned cap = 4096;
  Task* head = nullptr;
  unsigned n = 0;
  ~task_cache() {
    while (head) {
      Task* t = head;
      head = t->next_free;
      delete t;
    }
  }
  Task* get() {
    if (!head) return new Task;
    Task* t = head;
    head = t->next_free;
    --n;
    return t;
  }
  void put(Task* t) noexcept {
    if (n >= cap) {
      delete t;
      return;
    }
    t->recycle();
    t->next_free = head;
    head = t;
    ++n;
  }
};

// A parallel_for in progress; lives on the caller's stack. `remaining`
// counts the elements not yet processed: the block that brings it to zero
// finishes the loop, and nothing may touch the loop_ctx after that (the
// caller may already have returned), which is why finished loops are
// announced on scheduler-owned futex words rather than on the loop itself.
struct loop_ctx {
  loop_ctx(function_ref<void(std::size_t, std::size_t)> bd, std::size_t g, std::size_t n)
      : body(bd), grain(g), remaining(n), n(n) {}
  function_ref<void(std::size_t, std::size_t)> body;
  std::size_t grain;
  std::atomic<std::size_t> remaining;
  std::atomic<bool> failed{false};
  std::exception_ptr error;  // written once, by whoever set `failed`
  // D of the loop's locality hint (parallel_for_at; empty: none) and its
  // sum over the n elements: a block [b, e) reads (e - b) / n of it.
  std::span<const std::uint64_t> D{};
  std::uint64_t total = 0;
  std::size_t n = 0;

  // Runs body(b, e), keeping the first exception; does not count it done.
  void run_body(std::size_t b, std::size_t e) noexcept {
    try {
      body(b, e);
    } catch (...) {
      bool expected = false;
      if (failed.compare_exchange_strong(expected, true, std::memory_order_acq_rel))
        error = std::current_exception();
    }
  }
  // Counts `k` elements done. Returns true when they finished the loop
  // (nothing may touch the loop_ctx after that).
  bool finish(std::size_t k) noexcept { return remaining.fetch_sub(k, std::memory_order_acq_rel) == k; }
  // run_body then finish: one block counted on its own.
  bool run_leaf(std::size_t b, std::size_t e) noexcept {
    run_body(b, e);
    return finish(e - b);
  }
  // Runs [b, e) on this thread in the blocks the halving split would make.
  void run_inline(std::size_t b, std::size_t e) noexcept {
    while (e - b > grain) {
      const std::size_t mid = b + (e - b) / 2;
      run_inline(mid, e);
      e = mid;
    }
    run_leaf(b, e);
  }
};

// Runs a block task of a parallel_for on worker w (steal and deal alike):
// gives away right halves onto w's deque while longer than the grain, runs
// the leftmost part, then keeps taking the next block of the same loop from
// the bottom of its own deque (the half it pushed last) and runs it the same
// way. The elements done are counted on the loop once, at the end: one
// `remaining` update per run of blocks instead of one per block (100,000
// one-element blocks on 16 workers spent most of their time on that shared
// counter: 138 ns per chunk vs oneTBB's 5 on the 16-core host). Returns true
// when this run finished the loop (the caller announces it; nothing may
// touch the loop_ctx after that). `make_half(L, mid, e)` returns a task for
// [mid, e); `recycle(t)` gives a task back to the cache.
template <class Worker, class Task, class MakeHalf, class Recycle>
bool run_blocks(Worker& w, Task* t, MakeHalf&& make_half, Recycle&& recycle) noexcept {
  loop_ctx* L = t->loop;
  std::size_t b = t->b, e = t->e, done = 0;
  recycle(t);
  for (;;) {
    while (e - b > L->grain) {
      const std::size_t mid = b + (e - b) / 2;
      w.dq.push(make_half(L, mid, e));
      e = mid;
    }
    w.count_block(*L, b, e, w.node);
    L->run_body(b, e);
    done += e - b;
    Task* n = nullptr;
    if (!w.dq.pop(n)) break;
    if (n->loop != L) {  // another loop's block or a function: leave it where it was
      w.dq.push(n);
      break;
    }
    b = n->b;
    e = n->e;
    recycle(n);
    w.tasks.fetch_add(1, std::memory_order_relaxed);  // every block counts as a task
  }
  return L->finish(done);
}

// Map dispatch's inline test for a loop over `workers` workers: true when
// the caller should run it all itself. May run the first chunk (timed); `b`
// is then set past it.
inline bool dispatch_inline(loop_ctx& L, std::size_t n, std::size_t workers, std::size_t& b) noexcept {
  const std::size_t chunks = chunk_count(n, L.grain);
  b = 0;
  if (chunks == 1) return true;
  if (chunks < probe_factor * workers) return false;
  const std::uint64_t t0 = now_ns();
  L.run_leaf(0, L.grain);
  b = L.grain;
  return (now_ns() - t0) * (chunks - 1) < inline_ns;
}

// An outside thread waits for the loop it injected (steal and deal alike):
// a few looks, then it sleeps on `epoch` (announced by the loop's last
// finisher when `waiters` is non-zero). Watching `remaining` for 20 us
// with sched_yield between looks instead cost `steal` 2.3x at 1,000 empty
// chunks on the 16-core host (the caller, unpinned, took turns with the
// pinned worker of its core) and gained under 20% at 10 chunks, whose
// ~10 us a call are the workers' wake-ups, not the caller's
// (bench/results/2026-11-24-16core-deal-ab/outside-watch/).
//
//   workers::wait_outside(L, ext_waiters, ext_epoch);
inline void wait_outside(const loop_ctx& L, std::atomic<std::uint32_t>& waiters,
                         std::atomic<std::uint32_t>& epoch) noexcept {
  for (unsigned i = 0; i < 64 && L.remaining.load(std::memory_order_acquire) != 0; ++i) cpu_relax();
  while (L.remaining.load(std::memory_order_acquire) != 0) {
    waiters.fetch_add(1, std::memory_order_seq_cst);
    seq_cst_fence();
    const std::uint32_t e = epoch.load(std::memory_order_seq_cst);
    if (L.remaining.load(std::memory_order_seq_cst) != 0) futex_wait(epoch, e);
    waiters.fetch_sub(1, std::memory_order_seq_cst);
  }
}

// Counters of one worker: written by it, read and reset by anyone.
struct worker_counters {
  alignas(64) std::atomic<std::uint64_t> tasks{0}, busy{0}, steals_same{0}, steals_remote{0},
      steal_attempts{0}, hinted_bytes{0}, remote_bytes{0}, fn_run{0}, submitted{0};

  static void add(std::atomic<std::uint64_t>& c, std::uint64_t v) noexcept {
    c.fetch_add(v, std::memory_order_relaxed);
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
  scheduler_stats::worker read(int node) const noexcept {
    scheduler_stats::worker x;
    x.tasks = tasks.load(std::memory_order_relaxed);
    x.busy_ns = busy.load(std::memory_order_relaxed);
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
    for (const auto& w : ws) {
      s.tasks_submitted += w->submitted.load(std::memory_order_relaxed);
      s.tasks_run += w->fn_run.load(std::memory_order_acquire);
      s.workers.push_back(w->read(w->node));
    }
    return s;
  }
  template <class Workers>
  void reset(Workers& ws) noexcept {
    for (auto* a : {&ext_submitted, &pfors, &pfors_inline, &wakeups}) a->store(0, std::memory_order_relaxed);
    for (auto& w : ws) w->reset();
  }
};

// Runs task t on worker w: a parallel_for block through `block(w, t)`, or
// a submitted function (its hinted bytes counted on w's node), counting
// the task, and the busy time of the outermost task only (a task run while
// helping inside another task's parallel_for is that task's time).
template <class Worker, class Task, class Cache, class Block>
void run_task(Worker& w, Task* t, Cache& cache, Block&& block) noexcept {
  const bool outer = w.depth == 0;
  const std::uint64_t t0 = outer ? now_ns() : 0;
  ++w.depth;
  if (t->loop) {
    block(w, t);
    w.tasks.fetch_add(1, std::memory_order_relaxed);
  } else {
    if (t->total != 0) w.count_bytes(t->D, t->total, w.node);
    if (t->counter) {
      t->counter->run(t->fn);  // keeps its exception, releases captures, then counts it done
    } else {
      t->fn();          // noexcept context: a throwing submitted task terminates
      t->fn = nullptr;  // release captures now, not when the object is reused
    }
    cache.put(t);
    w.tasks.fetch_add(1, std::memory_order_relaxed);  // before fn_run: stats() sums fn_run
    w.fn_run.fetch_add(1, std::memory_order_release);
  }
  --w.depth;
  if (outer) w.busy.fetch_add(now_ns() - t0, std::memory_order_relaxed);
}

// The start of parallel_for in both policies: counts it and decides
// whether the caller runs the loop alone (map dispatch's inline test over
// `workers` workers); if so runs it, counting one task and its time for a
// calling worker `w` (null: an outside thread) on `node`, and returns true.
// Otherwise `b` is where the loop's segments start.
template <class Worker>
bool begin_loop(scheduler_counters& sc, loop_ctx& L, std::size_t n, std::size_t workers, Worker* w, int node,
                std::size_t& b, bool allow_inline = true) noexcept {
  sc.pfors.fetch_add(1, std::memory_order_relaxed);
  b = 0;
  if (!allow_inline) return false;
  const std::uint64_t t0 = w && w->depth == 0 ? now_ns() : 0;
  if (!dispatch_inline(L, n, workers, b)) {
    if (w && b) w->count_block(L, 0, b, node);  // the probed first chunk
    return false;
  }
  L.run_inline(b, n);
  sc.pfors_inline.fetch_add(1, std::memory_order_relaxed);
  if (w) {
    w->tasks.fetch_add(1, std::memory_order_relaxed);
    if (t0) w->busy.fetch_add(now_ns() - t0, std::memory_order_relaxed);
    w->count_block(L, 0, n, node);
  }
  return true;
}

}  // namespace sinew::detail::workers
