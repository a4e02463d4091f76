#pragma once
// Internal pieces shared by the steal and deal schedulers: futex sleeping,
// a per-thread cache of task objects, the state of a parallel_for, the
// counters behind `stats()` and the parts of parallel_for both run alike.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <span>
#include <vector>

#include <sinew/scheduler.hpp>

#include <sinew/detail/clock.hpp>
#include <sinew/detail/function_ref.hpp>

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace sinew::detail::workers {

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// Futex on a 32-bit atomic: sleep while *a == expected; wake n sleepers.
// Spurious returns are allowed: every caller re-checks its condition.
inline void futex_wait(std::atomic<std::uint32_t>& a, std::uint32_t expected) noexcept {
#if defined(__linux__)
  static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t));
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&a), FUTEX_WAIT_PRIVATE, expected, nullptr,
          nullptr, 0);
#else
  a.wait(expected, std::memory_order_seq_cst);
#endif
}
// Returns how many sleepers were woken (as far as the OS tells; the
// fallback reports n).
inline int futex_wake(std::atomic<std::uint32_t>& a, int n) noexcept {
#if defined(__linux__)
  long r = syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&a), FUTEX_WAKE_PRIVATE, n, nullptr,
                   nullptr, 0);
  return r > 0 ? int(r) : 0;
#else
  if (n == 1) a.notify_one();
  else a.notify_all();
  return n;
#endif
}

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

  // Runs body(b, e), keeping the first exception. Returns true when this
  // block finished the loop (nothing may touch the loop_ctx after that).
  bool run_leaf(std::size_t b, std::size_t e) noexcept {
    try {
      body(b, e);
    } catch (...) {
      bool expected = false;
      if (failed.compare_exchange_strong(expected, true, std::memory_order_acq_rel))
        error = std::current_exception();
    }
    return remaining.fetch_sub(e - b, std::memory_order_acq_rel) == e - b;
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
    t->fn();          // noexcept context: a throwing submitted task terminates
    t->fn = nullptr;  // release captures now, not when the object is reused
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
